"""Meta-AP popularity of documents over a set of runs (Aslam, Pavlu & Yilmaz 2005), and the run
alignment helpers the rank-aware models share."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, announce, check_choice, check_int, check_ties
from .._vocab import META_AP_DEPTH, RUN_ORDERS, RunOrder
from ..engine import AlignedRuns, JudgmentTable
from ..engine.pools import judged_in_top
from ..io import read_qrels, read_runs
from ._common import _same_rows

#: The metarank predictors of Webber, Chandar and Carterette (2012, Sec. 3.2.1, Table 3):
#: (per-run weight scheme, aggregate over runs).
PREDICTORS = {"meta_ap": ("meta_ap", "mean"), "mean_inverse_rank": ("inverse_rank", "mean"),
              "max_inverse_rank": ("inverse_rank", "max")}


def meta_ap_weight(rank: Any, depth: int = META_AP_DEPTH) -> np.ndarray:
    """Meta-AP weight of a document at 1-based ``rank``: ``1 + H_N - H_k`` for ``k <= N``, else 0.

    Aslam, Pavlu & Yilmaz (2005)  ``H_k`` is the k-th harmonic
    number and ``N = depth``; rank 1 weighs ``H_1000 = 7.4855``, rank 1000 weighs 1.
    """
    depth = check_int("depth", depth, 1)
    k = np.asarray(rank)
    if not np.issubdtype(k.dtype, np.integer):
        kf = np.asarray(k, dtype=np.float64)
        if not (np.isfinite(kf).all() and (kf == np.round(kf)).all()):
            raise InputError(f"rank must hold 1-based integer ranks, got {rank!r}")
        k = kf.astype(np.int64)
    if (k < 1).any():
        raise InputError(f"rank must hold 1-based ranks (>= 1), got {rank!r}")
    return _meta_ap_table(depth)[np.minimum(k, depth + 1) - 1]


def _meta_ap_table(depth: int) -> np.ndarray:
    """Weight of each 0-based position 0 .. depth (the last entry, beyond N, is 0)."""
    harmonic = np.cumsum(1.0 / np.arange(1, depth + 1))
    return np.append(1.0 + harmonic[-1] - harmonic, 0.0)


def _inverse_rank_table(depth: int) -> np.ndarray:
    """Inverse-rank weight ``N - k`` of each 0-based position (rank k = position + 1); 0 beyond N."""
    return np.append(depth - np.arange(1, depth + 1, dtype=np.float64), 0.0)


def aligned_for(runs: Any, table: JudgmentTable, ties: str) -> AlignedRuns:
    """The runs aligned to ``table`` (an AlignedRuns on the same rows is used as it is)."""
    if isinstance(runs, AlignedRuns):
        if _same_rows(runs.table, table):
            return runs
        raise InputError("runs: an AlignedRuns is only usable when it was built on these judgments (the same "
                         "(qid, docno) rows); pass the runs themselves ({name: frame} or a directory) instead")
    return AlignedRuns.build(runs, table, ties=ties, on_topic_mismatch="ignore")


class MetaAP:
    """Mean meta-AP of every row of a judgment table, from runs or from a given frame (cached)."""

    def __init__(self, runs: Any, metarank: Any, depth: int, ties: str, what: str,
                 predictor: str = "meta_ap") -> None:
        self.predictor = check_choice("predictor", predictor, tuple(PREDICTORS))
        if (runs is None) == (metarank is None):
            raise InputError(f"{what}: give either runs (to compute meta-AP) or metarank (a qid, docno, meta_ap "
                             f"frame), not {'both' if runs is not None else 'neither'}")
        self.depth = check_int("depth", depth, 1)
        self.ties = check_ties(ties, RUN_ORDERS)
        self.what = what
        self.runs = runs if runs is None or isinstance(runs, AlignedRuns) else read_runs(runs)
        self.frame = None if metarank is None else self._check_frame(metarank)
        self._cache: tuple[JudgmentTable, np.ndarray] | None = None

    @staticmethod
    def _check_frame(frame: Any) -> pd.Series:
        if isinstance(frame, pd.DataFrame) and "meta_ap" not in frame.columns and "metarank" in frame.columns:
            frame = frame.rename(columns={"metarank": "meta_ap"})      # as metarank() returns it
        if not isinstance(frame, pd.DataFrame) or not {"qid", "docno", "meta_ap"} <= set(frame.columns):
            raise InputError(f"metarank must be a frame with columns qid, docno, meta_ap (as meta_ap() returns) "
                             f"or metarank (as metarank() returns), got {type(frame).__name__}"
                             + (f" with columns {list(frame.columns)}" if isinstance(frame, pd.DataFrame) else ""))
        values = pd.to_numeric(frame["meta_ap"], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"metarank: column 'meta_ap', row {i}: expected a finite number >= 0, got "
                             f"{frame['meta_ap'].iloc[i]!r}")
        index = pd.MultiIndex.from_arrays([frame["qid"].astype(str).to_numpy(), frame["docno"].astype(str).to_numpy()])
        if index.has_duplicates:
            i = int(np.flatnonzero(index.duplicated())[0])
            raise InputError(f"metarank: row {i} repeats (qid, docno) = {index[i]!r}; expected one value per document")
        return pd.Series(values, index=index)

    def for_table(self, table: JudgmentTable) -> np.ndarray:
        if self._cache is not None and self._cache[0] is table:
            return self._cache[1]
        if self.frame is not None:
            keys = pd.MultiIndex.from_arrays([table.frame["qid"].to_numpy(), table.frame["docno"].to_numpy()])
            loc = self.frame.index.get_indexer(keys)
            missing = loc < 0
            if missing.all():
                raise InputError(f"{self.what}: the metarank frame has a value for none of the {len(table)} judged "
                                 f"documents; the metarank frame and the qrels have no overlap")
            if missing.any():
                announce(f"{self.what}: {int(missing.sum())} judged document(s) have no meta-AP value in the "
                         f"metarank frame and count as retrieved by no run (meta-AP 0)")
            values = np.where(missing, 0.0, self.frame.to_numpy()[np.maximum(loc, 0)])
        else:
            aligned = aligned_for(self.runs, table, self.ties)
            rows, pos = judged_in_top(aligned, self.depth, self.what)
            scheme, agg = PREDICTORS[self.predictor]
            weights = (_meta_ap_table if scheme == "meta_ap" else _inverse_rank_table)(self.depth)[pos]
            if agg == "mean":
                # mean over ALL runs of the set, zeros included (Aslam et al. 2005)
                values = np.bincount(rows, weights=weights, minlength=len(table)) / aligned.n_runs
            else:
                values = np.zeros(len(table))
                np.maximum.at(values, rows, weights)
        self._cache = (table, values)
        return values


def meta_ap(runs: Any, docs: Any = None, depth: int = META_AP_DEPTH, ties: RunOrder = "trec_eval") -> pd.DataFrame:
    """Mean meta-AP ("metarank") of documents over a set of runs.

    ``meta_ap(d) = (1/M) sum_runs (1 + H_N - H_k)`` with ``k`` the 1-based rank of ``d`` in a run
    (0 when the run does not rank it in its top ``N = depth``), averaged over all ``M`` runs
    (Aslam, Pavlu & Yilmaz 2005; Rashidi et al. 2023, Sec. 3.2; Webber et al. 2012, Sec. 3.2.1).

    Args:
        runs: ``{name: results frame}``, a run directory, or anything ``read_runs`` reads.
        docs: the documents to score (a ``qid, docno[, label]`` frame such as the qrels); default:
            every document some run ranks in its top ``depth``.
        depth: ``N``.
        ties: how runs are ordered (``trec_eval``: score, then docno descending; ``given``: the
            run's ``rank`` column).

    Returns:
        a ``qid, docno, meta_ap`` frame sorted by topic, then docno.
    """
    if not isinstance(runs, AlignedRuns):
        runs = read_runs(runs)
    if docs is None:
        if isinstance(runs, AlignedRuns):
            raise InputError("meta_ap(AlignedRuns) needs docs (the aligned runs keep no docnos of unjudged documents)")
        docs = pd.concat([f[["qid", "docno"]] for f in runs.values()], ignore_index=True).drop_duplicates()
        keep_positive = True
    else:
        keep_positive = False
    if isinstance(docs, pd.DataFrame):
        frame = docs.rename(columns={"query_id": "qid", "doc_id": "docno"})
        if {"qid", "docno"} <= set(frame.columns):
            frame = pd.DataFrame({"qid": frame["qid"].astype(str).to_numpy(),
                                  "docno": frame["docno"].astype(str).to_numpy(), "label": 0.0})
        table = JudgmentTable.from_qrels(frame)
    else:
        table = JudgmentTable.from_qrels(read_qrels(docs))
    values = MetaAP(runs, None, depth, ties, "meta_ap").for_table(table)
    out = table.frame[["qid", "docno"]].copy()
    out["meta_ap"] = values
    if keep_positive:
        out = out[values > 0].reset_index(drop=True)
    return out


def metarank(runs: Any, docs: Any = None, predictor: str = "meta_ap", depth: int = META_AP_DEPTH,
             ties: RunOrder = "trec_eval") -> pd.DataFrame:
    """A metarank score of documents over a set of runs (Webber, Chandar and Carterette 2012, Sec. 3.2.1).

    ``predictor`` is one of the paper's three (compared in its Table 3):

    * ``"meta_ap"``: mean over the runs of the meta-AP weight ``1 + H_N - H_k`` (:func:`meta_ap`);
    * ``"mean_inverse_rank"``: mean over the runs of ``N - k``;
    * ``"max_inverse_rank"``: the largest ``N - k`` over the runs;

    with ``k`` the document's 1-based rank in a run and weight 0 when the run does not rank it in
    its top ``N = depth`` (so rank ``N`` and "not retrieved" both give ``N - k = 0``, as the paper
    writes it).  ``docs`` and ``ties`` as in :func:`meta_ap`.

    Returns:
        a ``qid, docno, metarank`` frame sorted by topic, then docno; pass it as
        ``MetarankLogisticModel(metarank=...)``.
    """
    predictor = check_choice("predictor", predictor, tuple(PREDICTORS))
    if predictor == "meta_ap":
        return meta_ap(runs, docs, depth, ties).rename(columns={"meta_ap": "metarank"})
    if not isinstance(runs, AlignedRuns):
        runs = read_runs(runs)
    if docs is None:
        if isinstance(runs, AlignedRuns):
            raise InputError("metarank(AlignedRuns) needs docs (the aligned runs keep no docnos of unjudged documents)")
        frame = pd.concat([f[["qid", "docno"]] for f in runs.values()], ignore_index=True).drop_duplicates()
        keep_positive = True
    else:
        frame = docs.rename(columns={"query_id": "qid", "doc_id": "docno"}) if isinstance(docs, pd.DataFrame) \
            else read_qrels(docs)
        keep_positive = False
    frame = pd.DataFrame({"qid": frame["qid"].astype(str).to_numpy(), "docno": frame["docno"].astype(str).to_numpy(),
                          "label": 0.0})
    table = JudgmentTable.from_qrels(frame)
    values = MetaAP(runs, None, depth, ties, "metarank", predictor).for_table(table)
    out = table.frame[["qid", "docno"]].copy()
    out["metarank"] = values
    if keep_positive:
        out = out[values > 0].reset_index(drop=True)
    return out
