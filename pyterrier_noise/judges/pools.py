"""Judgments that become unjudged: pool-depth reduction (Yang 2019) and random removal (Buettcher et al. 2007)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_int, check_rate, check_ties
from .._vocab import RunOrder
from ..engine import AlignedRuns, JudgmentTable, declare_topics, qrels_topics
from ..io import read_runs
from ._common import _as_table, _warn
from .base import JudgmentPerturbation
from ..engine.pools import judged_in_top
from .metaap import RUN_ORDERS, aligned_for
from .stream import Rows, Stream


class _KeepsTopics:
    """Mixin: a reduced qrels frame keeps the topic set of its input in ``attrs["topics"]``
    (:func:`~pyterrier_noise.engine.declare_topics`), so that a topic left without judgments
    still counts in every mean (``evaluate``, the measures in ``pt.Experiment``)."""

    def transform(self, qrels: pd.DataFrame) -> pd.DataFrame:
        out = super().transform(qrels)  # type: ignore[misc]
        if isinstance(qrels, pd.DataFrame):
            col = "qid" if "qid" in qrels.columns else "query_id"
            topics = qrels_topics(qrels) or sorted(qrels[col].astype(str).unique())
            declare_topics(out, topics)
        return out


class PoolDepthReduction(_KeepsTopics, JudgmentPerturbation):
    """Keep only the judgments of documents in the depth-``depth`` pool of ``runs``; the rest become unjudged.

    Yang (2019), thesis Sec. 4.6 ("Depth@k reduction"): ``Pool_t(k)`` is the
    union of the top ``k`` documents of every run for topic ``t`` (trec_eval order by default);
    ``qrels_k`` keeps the judgments of documents in it and makes the others unjudged (``NaN``), so
    R is recomputed from the reduced judgments and RBP residuals grow.  Deterministic: every
    replicate is the same (use ``n_replicates=1``).  The thesis pools and scores only *deeply judged* runs
    (:func:`deeply_judged_runs`).
    """

    stochastic = False

    def __init__(self, runs: Any, depth: int, *, ties: RunOrder = "trec_eval") -> None:
        super().__init__(0)   # deterministic: the seed is not used
        self.depth = check_int("depth", depth, 1)
        self.ties = check_ties(ties, RUN_ORDERS)
        if runs is None:
            raise InputError("PoolDepthReduction needs the runs that form the pool")
        self.runs = runs if isinstance(runs, AlignedRuns) else read_runs(runs)
        self._cache: tuple[JudgmentTable, np.ndarray] | None = None

    def _params(self) -> dict[str, Any]:
        n = self.runs.n_runs if isinstance(self.runs, AlignedRuns) else len(self.runs)
        return {"depth": self.depth, "runs": n}

    def __repr__(self) -> str:
        p = self._params()
        return f"PoolDepthReduction(depth={p['depth']}, {p['runs']} runs)"

    def in_pool(self, table: JudgmentTable) -> np.ndarray:
        """Boolean per row of ``table``: is the document in some run's top ``depth``?"""
        table = _as_table(table)
        if self._cache is not None and self._cache[0] is table:
            return self._cache[1]
        aligned = aligned_for(self.runs, table, self.ties)
        rows, _ = judged_in_top(aligned, self.depth, "PoolDepthReduction")
        mask = np.zeros(len(table), dtype=bool)
        mask[rows] = True
        judged = ~np.isnan(table.labels)
        empty = np.flatnonzero(np.bincount(table.topic_index[mask & judged], minlength=len(table.topics)) == 0)
        if len(empty):
            _warn(f"{len(empty)} of {len(table.topics)} topics keep no judgment in the depth-{self.depth} pool "
                  f"(e.g. qid {table.topics[empty[0]]!r}): every document of theirs is unjudged; the reduced "
                  f"qrels keep all {len(table.topics)} topics (attrs['topics']) and means are over all of them "
                  f"(such a topic scores base 0 with the residual of the run, as trec_eval -c would)")
        self._cache = (table, mask)
        return mask

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        keep = self.in_pool(rows.table)[rows.rows]
        return np.where(keep[:, None], L, np.nan)


class RandomRemoval(_KeepsTopics, JudgmentPerturbation):
    """Each judgment becomes unjudged with probability ``fraction`` (Buettcher et al. 2007; Sakai &
    Kando 2008; listed in Yang 2019, Sec. 4.6).

    ``exact=True`` removes exactly ``round(fraction * n_t)`` judgments of each topic ``t`` (a
    uniformly random subset) instead of independent Bernoulli trials.
    """

    def __init__(self, fraction: float, *, exact: bool = False, seed: int | None = 0) -> None:
        super().__init__(seed)
        self.fraction = check_rate("fraction", fraction)
        self.exact = bool(exact)

    def _params(self) -> dict[str, Any]:
        return {"fraction": self.fraction, "exact": self.exact}

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        U = stream.uniforms()
        judged = np.broadcast_to(~np.isnan(L), U.shape)
        if not self.exact:
            return np.where(U < self.fraction, np.nan, L)
        # rank of each judged row's uniform within its topic (unjudged rows sort last), per replicate
        key = rows.topic_index[:, None] + np.where(judged, U, 1.5) / 2.0
        order = np.argsort(key, axis=0, kind="stable")
        rank = np.empty_like(order)
        # sorted position p holds a row of topic topic_index[p] (topics are contiguous and sorted)
        np.put_along_axis(rank, order, (np.arange(len(rows)) - rows.topic_start[rows.topic_index])[:, None], axis=0)
        quota = np.floor(self.fraction * rows.topic_sum(judged) + 0.5)      # (T, n)
        remove = judged & (rank < quota[rows.topic_index[:, None], np.arange(U.shape[1])[None, :]])
        return np.where(remove, np.nan, L)


def deeply_judged_runs(runs: Any, qrels: Any, depth: int = 50, ties: RunOrder = "trec_eval") -> list[str]:
    """Runs whose ranking for every topic of the qrels has at least ``depth`` documents, all judged.

    Yang (2019), Sec. 4.2: the systems the thesis pools and scores in its
    pool-depth experiments, so that every pooled document already has an official judgment.
    """
    depth = check_int("depth", depth, 1)
    table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
    aligned = aligned_for(runs, table, check_ties(ties, RUN_ORDERS))
    seg = np.repeat(np.arange(aligned.n_segments), aligned.seg_len)
    top_judged = (aligned.pos < depth) & (aligned.jidx >= 0)
    judged = np.bincount(seg[top_judged], minlength=aligned.n_segments).reshape(aligned.n_runs, aligned.n_topics)
    ok = (judged >= depth).all(axis=1)
    return [name for name, good in zip(aligned.run_names, ok) if good]
