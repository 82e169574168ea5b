"""Bronze labels of the ranked documents, as positions among a calibration's labels.

A run is ranked by the engine (:class:`~pyterrier_noise.engine.AlignedRuns` with trec_eval's
order: scores compared in single precision, ties by docno descending), so that a corrected metric
scores exactly the ranking that :func:`pyterrier_noise.measures.evaluate` and trec_eval score.
A (topics x ranks) label matrix is taken as given.  Either way the result is an integer matrix
``(topics, cutoff)`` of label positions (``-1``: no document, or one that contributes nothing),
the input of :func:`~pyterrier_noise.correction.label_mass` (Goldberg et al. 2017, Eq 18).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int
from .._vocab import UNJUDGED
from ..engine import AlignedRuns
from ..io import read_qrels, read_run
from ._common import _announce, _py
from .calibration import JudgeCalibration



def _labels_from_matrix(matrix: Any, calibration: JudgeCalibration, cutoff: int | None
                        ) -> tuple[np.ndarray, pd.Index]:
    if isinstance(matrix, pd.DataFrame):
        qids = pd.Index(matrix.index.astype(str), name="qid")
        values = matrix.to_numpy()
    else:
        values = np.asarray(matrix)
        qids = pd.Index([str(i) for i in range(values.shape[0])] if values.ndim == 2 else [], name="qid")
    if values.ndim != 2 or values.shape[0] == 0:
        raise InputError(f"a label matrix must be 2-d (topics x ranks) with at least one topic, got shape "
                         f"{values.shape}")
    missing = pd.isna(values)
    idx = calibration.label_index(np.where(missing, calibration.labels[0], values))
    bad = (idx < 0) & ~missing
    if bad.any():
        q, r = np.argwhere(bad)[0]
        raise InputError(f"label matrix row {q} (qid {qids[q]!r}), rank {r}: label {_py(values[q, r])!r} is not a "
                         f"calibration label {calibration.labels} ({int(bad.sum())} such cell(s)); the "
                         f"calibration must cover every label the bronze judge used")
    idx = np.where(missing, -1, idx).astype(np.int64)
    if cutoff is not None:
        if cutoff <= idx.shape[1]:
            idx = idx[:, :cutoff]
        else:
            idx = np.pad(idx, ((0, 0), (0, cutoff - idx.shape[1])), constant_values=-1)
    return idx, qids


def _labels_from_run(run: Any, qrels: Any, calibration: JudgeCalibration, cutoff: int | None,
                     unjudged: str) -> tuple[np.ndarray, pd.Index]:
    """Top-``cutoff`` bronze label positions per topic, ranked and judged by the engine.

    Topics are those of the run that have bronze judgments, in sorted qid order."""
    run = read_run(run)
    qrels = read_qrels(qrels)
    dup = run.duplicated(["qid", "docno"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"run column 'docno', row {i}: document {run['docno'].iloc[i]!r} appears twice in "
                         f"the ranking of qid {run['qid'].iloc[i]!r} ({int(dup.sum())} duplicate row(s))")
    in_qrels = run["qid"].isin(pd.Index(qrels["qid"].unique())).to_numpy()
    if not in_qrels.all():
        dropped = run.loc[~in_qrels, "qid"].unique()
        _announce(f"{len(dropped)} topic(s) of the run have no bronze judgments and were left out "
                  f"(as trec_eval does), e.g. qid={dropped[0]!r}")
        run = run[in_qrels]
        if run.empty:
            raise InputError("no topic of the run has bronze judgments: check that the qids match the qrels")
    topics = sorted(pd.unique(run["qid"]))
    aligned = AlignedRuns.build({"run": run}, qrels, ties="trec_eval", topics=topics, on_topic_mismatch="ignore",
                                keep_docnos=True, n_jobs=1)
    if cutoff is None:
        cutoff = aligned.max_len
    # one run: segment s is topic s; positions are in ranked order within each segment
    seg = np.repeat(np.arange(aligned.n_segments), aligned.seg_len)
    keep = aligned.pos < cutoff
    seg, pos, jidx = seg[keep], aligned.pos[keep].astype(np.int64), aligned.jidx[keep]
    docno = aligned.docno[keep]
    qid = np.asarray(aligned.topics, dtype=object)[seg]
    unj = jidx < 0
    row_index = calibration.label_index(aligned.table.labels)       # label position of every judgment row
    idx = np.where(unj, -1, row_index[np.where(unj, 0, jidx)])
    bad = (idx < 0) & ~unj
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"qrels column 'label': label {_py(aligned.table.labels[jidx[i]])!r} (qid={qid[i]!r}, "
                         f"docno={docno[i]!r}) is not a calibration label {calibration.labels} "
                         f"({int(bad.sum())} such judgment(s) in the top {cutoff}); the calibration must cover "
                         f"every label the bronze judge used")
    if unj.any():
        i = int(np.flatnonzero(unj)[0])
        where = f"e.g. qid={qid[i]!r} docno={docno[i]!r}"
        if unjudged == "error":
            raise InputError(f"{int(unj.sum())} of the top-{cutoff} documents have no bronze judgment ({where}); "
                             f"judge them or pass unjudged='zero' / 'lowest'")
        if unjudged == "zero":
            _announce(f"{int(unj.sum())} of {len(unj)} top-{cutoff} documents have no bronze judgment and count "
                      f"as certainly non-relevant (gain 0, not corrected), {where}")
        else:  # "lowest"
            _announce(f"{int(unj.sum())} of {len(unj)} top-{cutoff} documents have no bronze judgment and count "
                      f"as if the bronze judge gave them label {calibration.labels[0]!r}, {where}")
            idx = np.where(unj, 0, idx)
    matrix = np.full((aligned.n_topics, cutoff), -1, dtype=np.int64)
    matrix[seg, pos] = idx
    return matrix, pd.Index(aligned.topics, name="qid")


def label_positions(run: Any, qrels: Any, calibration: JudgeCalibration, cutoff: int | None,
                    unjudged: str) -> tuple[np.ndarray, pd.Index]:
    """Label positions ``(topics, cutoff)`` and the qids: a run (frame or TREC file) with qrels, ranked
    by the engine, or a label matrix alone.  ``cutoff=None``: the longest ranking."""
    check_choice("unjudged", unjudged, UNJUDGED)
    if cutoff is not None:
        cutoff = check_int("k", cutoff, 1)
    is_run_frame = isinstance(run, pd.DataFrame) and {"qid", "docno"}.issubset(run.columns)
    if is_run_frame or isinstance(run, (str, os.PathLike)):
        if qrels is None:
            raise InputError("a run needs the bronze qrels (a qid, docno, label frame or qrels file)")
        return _labels_from_run(run, qrels, calibration, cutoff, unjudged)
    if isinstance(run, pd.DataFrame) and ({"qid", "docno", "score"} & set(map(str, run.columns))):
        missing = [c for c in ("qid", "docno", "score") if c not in run.columns]
        raise InputError(f"run frame is missing column(s) {missing}; expected qid, docno, score (found "
                         f"{list(run.columns)})")
    if qrels is not None:
        raise InputError("qrels were given but run is not a results frame (qid, docno, score) or a run file: "
                         "pass either a run with qrels, or a (topics x ranks) label matrix alone")
    return _labels_from_matrix(run, calibration, cutoff)
