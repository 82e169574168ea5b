"""Helpers shared by the judge-error models (private to :mod:`pyterrier_noise.judges`)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._validation import InputError, check_number
from .._warnings import PerturbationWarning
from ..engine import AlignedRuns, JudgmentTable


def _warn(message: str, stacklevel: int = 3) -> None:
    """Emit a :class:`~pyterrier_noise.judges.PerturbationWarning` (a model cannot act as asked)."""
    warnings.warn(message, PerturbationWarning, stacklevel=stacklevel)




def _binary_labels(rel: Any, off_label: Any, on_label: Any) -> tuple[float, float, float]:
    """Validate the binary threshold and the labels a flipped judgment receives."""
    rel = check_number("rel", rel)
    if rel <= 0:
        raise InputError(f"rel must be > 0 (label >= rel is relevant; 0 would make every judgment relevant), "
                         f"got {rel!r}")
    off = check_number("off_label", off_label)
    on = rel if on_label is None else check_number("on_label", on_label)
    if not 0 <= off < rel:
        raise InputError(f"off_label must be in [0, rel={rel:g}) so that a flipped relevant judgment becomes "
                         f"non-relevant, got {off_label!r}")
    if on < rel:
        raise InputError(f"on_label must be >= rel={rel:g} so that a flipped non-relevant judgment becomes "
                         f"relevant, got {on_label!r}")
    return rel, off, on


def _as_table(table: Any) -> JudgmentTable:
    if isinstance(table, AlignedRuns):
        return table.table
    if isinstance(table, JudgmentTable):
        return table
    raise InputError(f"expected a JudgmentTable (e.g. AlignedRuns.table or JudgmentTable.from_qrels(qrels)), got "
                     f"{type(table).__name__}; use model.replicates(qrels, n_replicates) to start from a qrels frame or file")


def _same_rows(a: JudgmentTable, b: JudgmentTable) -> bool:
    return a is b or (len(a) == len(b) and a.topics == b.topics
                      and np.array_equal(a.frame["qid"].to_numpy(), b.frame["qid"].to_numpy())
                      and np.array_equal(a.frame["docno"].to_numpy(), b.frame["docno"].to_numpy()))


def _relabel(L: np.ndarray, rel: float, says_relevant: np.ndarray, off: float, on: float) -> np.ndarray:
    """Binary flips at threshold ``rel``: relevant judgments the replicate calls non-relevant get
    ``off``, non-relevant ones it calls relevant get ``on``; the rest keep their (graded) label."""
    with np.errstate(invalid="ignore"):
        relevant = L >= rel
        nonrel = L < rel
    return np.where(relevant & ~says_relevant, off, np.where(nonrel & says_relevant, on, L))


def _binarise(L: np.ndarray, rel: float, off: float, on: float) -> np.ndarray:
    """Every judgment as ``on`` (label >= rel) or ``off``; unjudged (NaN) stays NaN."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(L), np.nan, np.where(L >= rel, on, off))


def _is_integral(values: np.ndarray) -> bool:
    v = values[~np.isnan(values)]
    return bool(np.all(v == np.round(v)))


def _label_column(values: np.ndarray) -> np.ndarray:
    """Labels as int64 when integral (pytrec_eval needs integer relevance), else float."""
    return values.astype(np.int64) if _is_integral(values) else values


def _check_can_act(L: np.ndarray, rel: float, model: str, tpr: str | None, fpr: str | None) -> None:
    """Warn when a binary flip model has nothing to act on: ``fpr`` (a text such as ``"fpr=0.07"``,
    None when the model makes no false positives) on judgments of which none is non-relevant, or
    ``tpr`` (None when every relevant judgment stays relevant) on judgments of which none is relevant."""
    with np.errstate(invalid="ignore"):
        judged = ~np.isnan(L)
        if not judged.any():
            return
        any_relevant = bool((L >= rel).any())
        any_nonrelevant = bool((L < rel).any())
    if fpr is not None and not any_nonrelevant:
        _warn(f"{model}: the qrels hold no non-relevant judgment: {fpr} cannot act; relevant-only qrels (every "
              f"label >= rel={rel:g}) leave no judgment for a false positive to turn relevant, so the replicates "
              f"differ from the qrels only by missed relevant documents and their realised FPR is undefined (NaN)",
              stacklevel=6)
    if tpr is not None and not any_relevant:
        _warn(f"{model}: the qrels hold no relevant judgment: {tpr} cannot act; with no label >= rel={rel:g} "
              f"there is no relevant judgment for a false negative to turn non-relevant, so the replicates differ "
              f"from the qrels only by false positives and their realised TPR is undefined (NaN)", stacklevel=6)
