"""The judge-error model base class (a ``pt.Transformer`` on qrels) and Chain (models in turn)."""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
import pyterrier as pt

from .._validation import InputError, check_int, check_seed
from ..engine import JudgmentTable
from ._common import _as_table, _is_integral, _label_column
from .replicates import ReplicateSet
from .stream import Rows, Stream


class JudgmentPerturbation(pt.Transformer):
    """A model of judging that turns one set of judgments into seeded replicates.

    Every model offers the same three forms:

    * ``sample_labels(table, n_replicates, seed=None, start=0)`` -- the ``(len(table), n_replicates)`` label matrix
      over a :class:`~pyterrier_noise.engine.JudgmentTable` (``AlignedRuns.table``), ready for
      ``AlignedRuns.evaluate``; rows unjudged in the table stay ``NaN``;
    * ``replicates(qrels, n_replicates, seed=None)`` -- a :class:`ReplicateSet` (frames, TREC files);
    * a ``pt.Transformer`` on qrels frames: ``model(qrels)`` (or ``model.transform(qrels)``) is
      one perturbed qrels frame -- replicate ``model.replicate`` (default 0) of ``model.seed`` --
      with the input's columns, so ``pt.Experiment(systems, topics, model(qrels), ...)`` works;
      ``model.transformer(seed=..., replicate=...)`` is a copy with another seed or replicate.

    ``seed=None`` in a call means the model's own ``seed``; a model built with ``seed=None``
    draws fresh entropy each time (the entropy is recorded in :attr:`ReplicateSet.seed`).
    ``a >> b`` of two models is a :class:`Chain` (``b`` perturbs ``a``'s replicates).
    """

    #: False for deterministic models (every replicate is the same)
    stochastic: bool = True

    def __init__(self, seed: int | None = 0, replicate: int = 0) -> None:
        self.seed = check_seed(seed)
        self.replicate = check_int("replicate", replicate, 0)

    # -- what subclasses implement ------------------------------------------------------------

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        """Labels of the judged rows (m, 1) or (m, n) -> replicate labels, broadcastable to (m, n)."""
        raise NotImplementedError

    def _params(self) -> dict[str, Any]:
        return {}

    # -- public API ---------------------------------------------------------------------------

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in {**self._params(), "seed": self.seed}.items())
        return f"{type(self).__name__}({args})"

    def _seed_sequence(self, seed: Any) -> np.random.SeedSequence:
        s = self.seed if seed is None else check_seed(seed)
        return np.random.SeedSequence(s)

    def sample_labels(self, table: JudgmentTable, n_replicates: int, seed: int | None = None, *,
                      start: int = 0) -> np.ndarray:
        """Labels of ``n_replicates`` replicates: a ``(len(table), n_replicates)`` float matrix, ``NaN`` = unjudged.

        Rows are aligned with ``table.frame``.  Column ``i`` is replicate ``start + i``.  Replicate
        ``i`` depends only on the model, the seed (``None``: the model's own), ``i`` and the judged
        rows of ``table`` (their number, order and labels; :mod:`pyterrier_noise.judges.stream`):
        not on ``n_replicates`` nor ``start``, so ``sample_labels(table, 1, seed=s, start=i)`` is
        column ``i`` of ``sample_labels(table, k, seed=s)`` for any ``k > i``.  An oracle judging
        one document at a time gets replicate ``i``'s labels only by drawing on the same table.
        Vectorised over judgments and replicates.
        """
        return self._sample(_as_table(table), n_replicates, self._seed_sequence(seed), start)

    def _sample(self, table: JudgmentTable, n: Any, ss: np.random.SeedSequence, start: Any) -> np.ndarray:
        n = check_int("n (number of replicates)", n, 1)
        start = check_int("start", start, 0)
        rows = Rows(table)
        stream = Stream(ss, len(rows), start, n)
        sub = self._perturb(rows, rows.labels[:, None], stream)
        if len(rows) == len(table):
            if sub.shape == (len(table), n):
                return np.ascontiguousarray(sub, dtype=np.float64)
            return np.broadcast_to(sub, (len(table), n)).astype(np.float64)   # a C-contiguous copy
        out = np.full((len(table), n), np.nan)
        out[rows.rows] = sub
        return out

    def replicates(self, qrels: Any, n_replicates: int, seed: int | None = None, *, start: int = 0) -> ReplicateSet:
        """``n_replicates`` replicates of ``qrels`` (a frame, TREC file, ir_datasets qrels or a JudgmentTable).

        The table is ``JudgmentTable.from_qrels(qrels)``: the same rows as
        ``AlignedRuns.build(runs, qrels).table``, so ``.labels`` can be evaluated directly.
        Replicate ``i`` equals column ``i - start`` of :meth:`sample_labels` on that table.
        """
        table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
        ss = self._seed_sequence(seed)
        labels = self._sample(table, n_replicates, ss, start)
        return ReplicateSet(table, labels, int(ss.entropy), int(start), repr(self))

    def transform(self, qrels: pd.DataFrame) -> pd.DataFrame:
        """One perturbed qrels frame: replicate ``self.replicate`` of ``self.seed``.

        Keeps every input column and row order; rows that the model makes unjudged are dropped;
        the label column (``label`` or ir_measures' ``relevance``) holds the new labels.
        """
        if not isinstance(qrels, pd.DataFrame):
            raise InputError(f"{type(self).__name__} transforms a qrels frame (qid, docno, label), got "
                             f"{type(qrels).__name__}")
        names = ("qid", "docno", "label") if "qid" in qrels.columns else ("query_id", "doc_id", "relevance")
        table = JudgmentTable.from_qrels(qrels)
        lab = self.sample_labels(table, 1, start=self.replicate)[:, 0]
        keys = pd.MultiIndex.from_arrays([qrels[names[0]].astype(str).to_numpy(),
                                          qrels[names[1]].astype(str).to_numpy()])
        where = pd.MultiIndex.from_arrays([table.frame["qid"].to_numpy(),
                                           table.frame["docno"].to_numpy()]).get_indexer(keys)
        new = lab[where]
        keep = ~np.isnan(new)
        out = qrels.loc[keep].copy()
        values = new[keep]
        if np.issubdtype(qrels[names[2]].dtype, np.integer) and _is_integral(values):
            out[names[2]] = values.astype(qrels[names[2]].dtype)
        else:
            out[names[2]] = _label_column(values)
        return out

    def transformer(self, seed: int | None = None, replicate: int = 0) -> "JudgmentPerturbation":
        """A copy of the model as a ``pt.Transformer`` giving replicate ``replicate`` of ``seed``."""
        other = copy.copy(self)
        other.seed = self.seed if seed is None else check_seed(seed)
        other.replicate = check_int("replicate", replicate, 0)
        return other

    def __rshift__(self, other: Any) -> Any:
        if isinstance(other, JudgmentPerturbation):
            return Chain(self, other, seed=self.seed)
        return super().__rshift__(other)


class Chain(JudgmentPerturbation):
    """Models applied in turn: each perturbs the previous one's replicates (``a >> b``).

    Stage ``k`` draws its random numbers from child ``k`` of the chain's seed
    (``SeedSequence(seed, spawn_key=(k,))``), so the stages are independent; the stages' own seeds
    are not used.  Replicate ``i`` of the chain applies every stage's replicate ``i``.
    """

    def __init__(self, *models: JudgmentPerturbation, seed: int | None = 0) -> None:
        super().__init__(seed)
        stages: list[JudgmentPerturbation] = []
        for mdl in models:
            if not isinstance(mdl, JudgmentPerturbation):
                raise InputError(f"Chain stages must be judgment perturbation models, got {type(mdl).__name__}")
            stages.extend(mdl.stages if isinstance(mdl, Chain) else [mdl])
        if not stages:
            raise InputError("Chain needs at least one model")
        self.stages = stages
        self.stochastic = any(s.stochastic for s in stages)

    def __repr__(self) -> str:
        return " >> ".join(repr(s) for s in self.stages) + f" (chain seed={self.seed})"

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        for k, stage in enumerate(self.stages):
            L = stage._perturb(rows, L, stream.child(k))
        return L
