"""Multiple-comparison corrections and significance decisions: Bonferroni, Holm (1979) step-down
and Benjamini & Hochberg (1995) step-up, as ``statsmodels.stats.multitest.multipletests``."""
from __future__ import annotations

import numpy as np

from .._validation import InputError
from .._vocab import CORRECTIONS, Correction
from ._checks import _alpha, _choice

__all__ = ["CORRECTIONS", "correct_pvalues", "significant"]


def significant(pvalues: np.ndarray | float, alpha: float = 0.05,
                inclusive: bool = False) -> np.ndarray | bool:
    """Significance decisions ``p < alpha`` (or ``p <= alpha`` with ``inclusive=True``).

    Yang (2019) uses ``p <= alpha`` in Ch. 2-3 and ``p < alpha`` in Ch. 4-5; the default here is
    ``<``. NaN p-values (undefined tests, e.g. identical systems) are never significant.

    Args:
        pvalues: p-values of any shape.
        alpha: significance level in (0, 1).
        inclusive: count ``p == alpha`` as significant.

    Returns:
        Boolean array (or bool) of the same shape.
    """
    a = _alpha(alpha)
    p = np.asarray(pvalues, dtype=float)
    with np.errstate(invalid="ignore"):
        out = (p <= a) if inclusive else (p < a)
    return out[()] if out.ndim == 0 else out


def _adjust_sorted(p_sorted: np.ndarray, m: np.ndarray, method: str) -> np.ndarray:
    """Adjust p-values sorted ascending along the last axis (NaN last); m = finite count."""
    k = np.arange(1, p_sorted.shape[-1] + 1, dtype=float)
    m = m[..., None].astype(float)
    if method == "bonferroni":
        adj = p_sorted * m
    elif method == "holm":
        # step-down: max_{j<=k} (m - j + 1) p_(j); fmax ignores the trailing NaNs
        adj = np.fmax.accumulate(p_sorted * (m - k + 1.0), axis=-1)
    else:
        # Benjamini-Hochberg step-up: min_{j>=k} m p_(j) / j
        raw = p_sorted * m / k
        adj = np.flip(np.fmin.accumulate(np.flip(raw, axis=-1), axis=-1), axis=-1)
    adj = np.minimum(adj, 1.0)
    return np.where(np.isnan(p_sorted), np.nan, adj)


def correct_pvalues(pvalues: object, method: Correction = "holm", axis: int = 0) -> np.ndarray:
    """Multiple-comparison adjusted p-values, one family per slice along ``axis``.

    Bonferroni, Holm (1979) step-down and Benjamini-Hochberg (1995) step-up adjustments, as
    ``statsmodels.stats.multitest.multipletests`` computes them. A 1-D input goes through
    statsmodels itself for ``fdr_bh``. statsmodels is one-dimensional, so for batches (e.g. the
    pairs of each of 100 replicates) and for Bonferroni and Holm (whose statsmodels code runs a
    full garbage collection on every call) the same sort-and-cumulate formulas, with the same
    floating-point operations, are applied along ``axis`` in numpy; the tests check every slice
    against statsmodels. NaN p-values are left out of their family (m counts finite values) and stay NaN.

    Args:
        pvalues: raw p-values, any shape.
        method: ``"bonferroni"``, ``"holm"`` or ``"fdr_bh"`` (statsmodels' names, as in
            ``pt.Experiment(correction=...)``).
        axis: the axis holding one family of tests (default 0: the pairs axis of
            :func:`all_pairs`).

    Returns:
        Adjusted p-values (same shape), capped at 1.
    """
    _choice("method", method, CORRECTIONS)
    p = np.asarray(pvalues, dtype=float)
    if p.ndim == 0:
        raise InputError("pvalues must be an array with at least one axis")
    if not -p.ndim <= axis < p.ndim:
        raise InputError(f"axis {axis} is out of range for pvalues with {p.ndim} dimension(s)")
    finite = ~np.isnan(p)
    if ((p[finite] < 0) | (p[finite] > 1)).any():
        bad = tuple(int(v) for v in np.argwhere(finite & ((p < 0) | (p > 1)))[0])
        raise InputError(f"pvalues must lie in [0, 1]; found {p[bad]!r} at index {bad}")
    if p.ndim == 1 and method == "fdr_bh":
        from statsmodels.stats.multitest import multipletests
        out = np.full_like(p, np.nan)
        if finite.any():
            out[finite] = multipletests(p[finite], method=method)[1]
        return out
    moved = np.moveaxis(p, axis, -1)
    order = np.argsort(moved, axis=-1, kind="stable")   # NaN sorts last
    p_sorted = np.take_along_axis(moved, order, axis=-1)
    adj_sorted = _adjust_sorted(p_sorted, (~np.isnan(moved)).sum(axis=-1), method)
    adj = np.empty_like(moved)
    np.put_along_axis(adj, order, adj_sorted, axis=-1)
    return np.moveaxis(adj, -1, axis)


