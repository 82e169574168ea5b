"""Exact AP bounds over every completion of a few unjudged documents (Yang 2019, PhD thesis, Sec. 4.1).

Recall-based metrics have no residual: judging an unjudged document can move AP up (a new
relevant document near the top) *or down* (R grows).  :func:`ap_bounds` enumerates the ``2^u``
completions of the ``u`` unjudged documents of one ranking as matrix operations.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._validation import InputError, check_int

__all__ = ["MAX_UNJUDGED", "APBounds", "ap_bounds"]

#: :func:`ap_bounds` refuses more unjudged documents than this unless ``max_unjudged`` is raised.
MAX_UNJUDGED = 20
_ENUM_BLOCK = 1 << 16          # completions evaluated per block in ap_bounds (memory ~ block x u)


class APBounds(NamedTuple):
    """Exact range of AP over every completion of the unjudged documents (see :func:`ap_bounds`)."""

    current: float                 # unjudged documents non-relevant, R as given
    low: float
    high: float
    low_completion: np.ndarray     # (u,) bool: which unjudged documents are relevant at the minimum
    high_completion: np.ndarray    # (u,) bool: ... at the maximum
    values: np.ndarray             # (2^u,) AP of completion i (bit j of i: j-th unjudged document relevant)
    unjudged_ranks: np.ndarray     # (u,) 1-based ranks of the unjudged documents


def ap_bounds(labels: Sequence[Any], n_relevant: int | None = None, *, n_unjudged_outside: int = 0,
              rel: float = 1.0, max_unjudged: int = MAX_UNJUDGED) -> APBounds:
    """Exact minimum and maximum of AP over all relevance completions of the unjudged documents.

    Yang (2019), Sec. 4.1: judging an unjudged document relevant can raise AP (a new relevant
    document near the top) or lower it (R grows), so AP has no residual and its range needs
    enumeration over the ``2^u`` completions of the ``u`` unjudged documents.  AP is trec_eval's
    ``(1/R) sum_{relevant i} P@i`` with R the known relevant documents plus those of the
    completion.  Documents unjudged *outside* the ranking (``n_unjudged_outside``) can only add to
    R, so the minimum takes them all relevant and the maximum none.  All completions are
    evaluated as matrix operations in blocks (memory ~ 65,536 x u): with ``b`` the completion,
    ``K(i)`` the known relevant documents at ranks <= i, ``P`` the ranks of known relevant
    documents and ``u_j`` the unjudged ranks,
    ``AP = [sum_{p in P} (K(p) + #{j: u_j < p, b_j}) / p + sum_j b_j (K(u_j) + sum_{l <= j} b_l) / u_j]
    / (R + |b| + c)``.

    Args:
        labels: the ranking's labels, best first: numbers (relevant iff ``>= rel``) and
            ``None`` / NaN for unjudged documents.
        n_relevant: R, the known relevant documents of the topic (default: those in the ranking;
            must be at least that many).
        n_unjudged_outside: unjudged documents of the collection that are not in the ranking
            (the thesis's example assumes 0: "only these five documents").
        rel: relevance threshold.
        max_unjudged: refuse more unjudged documents than this (default 20, i.e. 1,048,576
            completions; the cost doubles with each one).

    Returns:
        :class:`APBounds` (``current`` counts the unjudged documents non-relevant with R as given).

    Example (the thesis's ranking ``1, 0, ?, 1, ?`` with R = 2): current 0.75; completions
    0.8056 (third relevant), 0.70 (fifth relevant), 0.8042 (both); low 0.70, high 0.8056.
    """
    try:
        lab = np.array([np.nan if v is None else v for v in labels], dtype=float)
    except (TypeError, ValueError):
        bad = next(i for i, v in enumerate(labels) if v is not None and not _is_number(v))
        raise InputError(f"labels[{bad}] is {labels[bad]!r}; expected a number or None/NaN for unjudged") from None
    if lab.ndim != 1 or lab.size == 0:
        raise InputError("labels must be a non-empty sequence (the ranking's labels, best first)")
    if np.isinf(lab).any():
        i = int(np.flatnonzero(np.isinf(lab))[0])
        raise InputError(f"labels[{i}] is infinite; expected a finite label or None/NaN for unjudged")
    try:
        rel = float(rel)
    except (TypeError, ValueError):
        raise InputError(f"rel must be a number, got {rel!r}") from None
    max_unjudged = check_int("max_unjudged", max_unjudged)
    n_unjudged_outside = check_int("n_unjudged_outside", n_unjudged_outside, 0)
    unjudged = np.isnan(lab)
    known = ~unjudged & (np.nan_to_num(lab, nan=-np.inf) >= rel)
    n_known = int(known.sum())
    if n_relevant is None:
        n_relevant = n_known
    n_relevant = check_int("n_relevant", n_relevant, n_known)   # at least the relevant documents ranked
    u = int(unjudged.sum())
    if u > max_unjudged:
        raise InputError(f"the ranking has {u} unjudged documents: exact AP bounds enumerate 2^{u} completions, "
                         f"more than the limit of {max_unjudged} (2^{max_unjudged}); judge some of them, or "
                         "truncate the ranking, or raise max_unjudged if you have the time")
    rank = np.arange(1, lab.size + 1, dtype=float)
    k_before = np.cumsum(known)                                   # K(i), inclusive
    const = float((k_before[known] / rank[known]).sum())
    uj = rank[unjudged]
    # w_j: a relevant unjudged document at u_j adds 1/p to every known relevant document below it
    inv_known = np.where(known, 1.0 / rank, 0.0)
    below = np.cumsum(inv_known[::-1])[::-1]                      # sum over p >= i of 1/p (known)
    w = below[unjudged] + k_before[unjudged] / uj                 # (u,)  (u_j itself is not known)
    R0 = float(n_relevant)
    m = float(n_unjudged_outside)
    current = const / R0 if R0 > 0 else 0.0
    values, lows = _completions(const, w, uj, R0, m)
    shifts = np.arange(u)
    i_lo, i_hi = int(np.argmin(lows)), int(np.argmax(values))
    bits = lambda i: ((i >> shifts) & 1).astype(bool)  # noqa: E731
    return APBounds(current=float(current), low=float(lows[i_lo]), high=float(values[i_hi]),
                    low_completion=bits(i_lo), high_completion=bits(i_hi), values=values,
                    unjudged_ranks=rank[unjudged].astype(np.int64))


def _completions(const: float, w: np.ndarray, uj: np.ndarray, R0: float, m: float) -> tuple[np.ndarray, np.ndarray]:
    """AP of every completion ``b`` of the ``u = len(uj)`` unjudged documents (completion ``i``:
    bit ``j`` of ``i`` says whether the document at rank ``uj[j]`` is relevant), with R the known
    relevant ``R0`` (``values``) and with the ``m`` unjudged documents outside the ranking relevant
    too (``lows``); the completions are evaluated in blocks, as matrix operations."""
    n_comp = 1 << len(uj)
    values = np.empty(n_comp)
    lows = np.empty(n_comp)
    shifts = np.arange(len(uj))
    for start in range(0, n_comp, _ENUM_BLOCK):                   # blocks of completions, not one by one
        idx = np.arange(start, min(n_comp, start + _ENUM_BLOCK))
        B = ((idx[:, None] >> shifts[None, :]) & 1).astype(float)  # (block, u)
        num = const + B @ w + (B * np.cumsum(B, axis=1)) @ (1.0 / uj)
        size = B.sum(axis=1)
        den = R0 + size
        values[idx] = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        den_low = den + m
        lows[idx] = np.where(den_low > 0, num / np.where(den_low > 0, den_low, 1.0), 0.0)
    return values, lows


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False

