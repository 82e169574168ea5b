"""Correlation between system orderings: Kendall's tau, tau_ap, Spearman's rho and RBO.

* Rank correlation of two system orderings: :func:`kendall_tau` (tau_a, tau_b),
  :func:`tau_ap` (Yilmaz, Aslam & Robertson 2008), :func:`spearman`, and :func:`rbo`
  (rank-biased overlap, Webber, Moffat & Zobel 2010) with its truncated, lower-bound (min),
  residual and extrapolated forms.

Inter-rater agreement (Krippendorff's alpha) and discrimination are in :mod:`.reliability`.

Orderings are given either as score vectors (higher is better; arrays are matched by
position, pandas Series by index label) or as ranked lists of item ids (best first). Score
vectors may carry leading batch axes (e.g. one ordering per replicate), which are computed in
one vectorised call.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int, check_probability, finite_array
from .._vocab import (CORRELATION_INPUTS, KENDALL_VARIANTS, RANK_TIES, RBO_VARIANTS, SPEARMAN_METHODS, CorrelationInput,
                      KendallVariant, RankTies, RboVariant, SpearmanMethod)

__all__ = [
    "kendall_tau",
    "tau_ap",
    "spearman",
    "rbo",
]

Kind = CorrelationInput

_BLOCK_ELEMENTS = 1 << 22


# ---------------------------------------------------------------------------------------------
# input handling for orderings

def is_numeric(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "biuf"


def _finite_scores(name: str, arr: np.ndarray) -> np.ndarray:
    return finite_array(name, arr, what="numeric scores or a ranked list of item ids")


def _ranked_list(name: str, x: object) -> list:
    items = list(x)  # type: ignore[call-overload]
    if not items:
        raise InputError(f"{name} is an empty ranking")
    index = pd.Index(items)
    if index.has_duplicates:
        dup = index[index.duplicated()][0]
        raise InputError(f"{name} lists item {dup!r} more than once; a ranking holds each item once")
    return items


def _kind_of(x: object, kind: str) -> str:
    if kind != "auto":
        return kind
    if isinstance(x, pd.Series):
        return "scores"
    return "scores" if is_numeric(np.asarray(x)) else "ranking"


def _aligned_scores(x: object, y: object, kind: str, xname: str = "x",
                    yname: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Two orderings of the same items as aligned score arrays (..., n), higher = better."""
    check_choice("kind", kind, CORRELATION_INPUTS)
    kx, ky = _kind_of(x, kind), _kind_of(y, kind)
    if kx != ky:
        raise InputError(f"{xname} looks like {kx} but {yname} like {ky}; give both as score "
                         "vectors or both as ranked lists (or set kind=)")
    if kx == "ranking":
        lx, ly = _ranked_list(xname, x), _ranked_list(yname, y)
        pos = pd.Index(ly).get_indexer(lx)
        if len(lx) != len(ly) or (pos < 0).any():
            in_x = set(lx)
            missing = [v for v, p in zip(lx, pos) if p < 0] or [v for v in ly if v not in in_x]
            raise InputError(f"{xname} and {yname} must rank the same items; e.g. "
                             f"{missing[:3]!r} is in only one of them")
        n = len(lx)
        xs = np.arange(n, 0, -1, dtype=float)
        ys = (n - pos).astype(float)
        out = xs, ys
    elif isinstance(x, pd.Series) or isinstance(y, pd.Series):
        if not (isinstance(x, pd.Series) and isinstance(y, pd.Series)):
            raise InputError(f"{xname} and {yname}: give both as pandas Series (aligned by index) "
                             "or both as arrays (aligned by position)")
        for nm, s in ((xname, x), (yname, y)):
            if s.index.has_duplicates:
                raise InputError(f"{nm} has duplicate index label {s.index[s.index.duplicated()][0]!r}")
        if set(x.index) != set(y.index):
            only = list(x.index.symmetric_difference(y.index))
            raise InputError(f"{xname} and {yname} must score the same items; e.g. {only[:3]!r} "
                             "is in only one index")
        out = (_finite_scores(xname, x.to_numpy()),
               _finite_scores(yname, y.reindex(x.index).to_numpy()))
    else:
        xs, ys = _finite_scores(xname, x), _finite_scores(yname, y)
        if xs.ndim == 0 or ys.ndim == 0:
            raise InputError(f"{xname} and {yname} must be vectors of scores, not scalars")
        try:
            out = np.broadcast_arrays(xs, ys)
        except ValueError:
            raise InputError(f"{xname} (shape {xs.shape}) and {yname} (shape {ys.shape}) do not "
                             "broadcast; the last axis must index the same items") from None
    if out[0].shape[-1] < 2:
        raise InputError(f"need at least 2 items to correlate, got {out[0].shape[-1]}")
    return np.asarray(out[0], dtype=float), np.asarray(out[1], dtype=float)


def _check_no_ties(name: str, scores: np.ndarray, ties: str) -> None:
    check_choice("ties", ties, RANK_TIES)
    if ties == "error":
        s = np.sort(scores, axis=-1)
        tied = s[..., 1:] == s[..., :-1]
        if tied.any():
            where = tuple(int(v) for v in np.argwhere(tied)[0])
            raise InputError(f"{name} has tied scores (value {s[where]!r}); this measure is "
                             "defined for strict orderings. Break the ties first, or pass "
                             "ties='first' to order tied items by their position in the input")


def _positions(scores: np.ndarray) -> np.ndarray:
    """0-based position of each item in the descending ordering (ties by input position)."""
    order = np.argsort(-scores, axis=-1, kind="stable")
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(scores.shape[-1]), order.shape),
                      axis=-1)
    return pos


def pair_counts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(C - D, pairs tied in x, pairs tied in y, n0) along the last axis, for any batch.

    O(n^2) pair signs, processed in row blocks; used where scipy.stats.kendalltau (1-D only)
    would need a Python loop per replicate.
    """
    n = x.shape[-1]
    iu, ju = np.triu_indices(n, 1)
    n0 = len(iu)
    batch = x.shape[:-1]
    xf, yf = x.reshape(-1, n), y.reshape(-1, n)
    s = np.empty(xf.shape[0])
    t1 = np.empty(xf.shape[0])
    t2 = np.empty(xf.shape[0])
    step = max(1, _BLOCK_ELEMENTS // max(1, n0))
    for start in range(0, xf.shape[0], step):
        sl = slice(start, start + step)
        sx = np.sign(xf[sl, iu] - xf[sl, ju])
        sy = np.sign(yf[sl, iu] - yf[sl, ju])
        s[sl] = (sx * sy).sum(axis=-1)
        t1[sl] = (sx == 0).sum(axis=-1)
        t2[sl] = (sy == 0).sum(axis=-1)
    return s.reshape(batch), t1.reshape(batch), t2.reshape(batch), n0


def _tied_pairs(v: np.ndarray) -> int:
    _, counts = np.unique(v, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


# ---------------------------------------------------------------------------------------------
# rank correlations

def kendall_tau(x: object, y: object, variant: KendallVariant = "b",
                kind: Kind = "auto") -> float | np.ndarray:
    """Kendall's rank correlation between two orderings of the same items.

    ``tau_a = (C - D) / (n(n-1)/2)`` and ``tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2))`` with
    ``n1``, ``n2`` the pairs tied in x and in y (Yang 2019, eq. 2.20; the denominator of eq. 2.21
    is wrong). Without ties both equal ``(C - D)/(C + D)``. 1-D inputs use
    ``scipy.stats.kendalltau``; batched score vectors (``(..., n)``) are computed by vectorised
    pair counting, which the tests check against scipy row by row. tau_b is NaN when one
    ordering is constant.

    Args:
        x: scores (array ``(..., n)`` or Series) or a ranked list of item ids.
        y: the other ordering, same items.
        variant: ``"a"`` or ``"b"``.
        kind: ``"auto"`` (numbers/Series are scores, anything else a ranked list), ``"scores"``
            or ``"ranking"`` (needed for ranked lists of integer ids).

    Returns:
        tau (float for 1-D input, else an array of the batch shape).
    """
    check_choice("variant", variant, KENDALL_VARIANTS)
    xs, ys = _aligned_scores(x, y, kind)
    if xs.ndim == 1:
        from scipy import stats as _st   # on first use: scipy.stats is slow to import
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # constant input: scipy warns, returns NaN
            tau_b = float(_st.kendalltau(xs, ys, variant="b").statistic)
        if variant == "b":
            return tau_b
        n = len(xs)
        n0 = n * (n - 1) // 2
        den = (n0 - _tied_pairs(xs)) * (n0 - _tied_pairs(ys))
        return 0.0 if den == 0 else tau_b * math.sqrt(den) / n0
    s, t1, t2, n0 = pair_counts(xs, ys)
    if variant == "a":
        return s / n0
    with np.errstate(divide="ignore", invalid="ignore"):
        return s / np.sqrt((n0 - t1) * (n0 - t2))


def tau_ap(x: object, truth: object, symmetric: bool = False, kind: Kind = "auto",
           ties: RankTies = "error") -> float | np.ndarray:
    """AP rank correlation, top-weighted (Yilmaz, Aslam & Robertson, SIGIR 2008).

    ``tau_AP(x, truth) = 2/(n-1) * sum_{i=2..n} C(i)/(i-1) - 1``, where ``C(i)`` counts the
    items above position ``i`` in ``x`` that ``truth`` also ranks above that item. It is 1 for
    identical and -1 for reversed orderings, and penalises swaps near the top more. It is not
    symmetric; ``symmetric=True`` averages ``tau_AP(x, truth)`` and ``tau_AP(truth, x)``.
    Not in Yang (2019); ties are not defined for tau_AP, so they are rejected unless
    ``ties="first"`` (tied items ordered by input position). Memory is O(n^2) per ordering.

    Args:
        x: the evaluated ordering (scores or ranked list).
        truth: the reference ordering, same items.
        symmetric: average both directions.
        kind: see :func:`kendall_tau`.
        ties: ``"error"`` or ``"first"``.

    Returns:
        tau_AP (float for 1-D input, else an array of the batch shape).
    """
    xs, ts = _aligned_scores(x, truth, kind, "x", "truth")
    _check_no_ties("x", xs, ties)
    _check_no_ties("truth", ts, ties)

    def one_way(est: np.ndarray, ref: np.ndarray) -> np.ndarray:
        n = est.shape[-1]
        order = np.argsort(-est, axis=-1, kind="stable")
        ref_rank = np.take_along_axis(_positions(ref), order, axis=-1)   # ref rank, est order
        above = (ref_rank[..., None, :] < ref_rank[..., :, None]) & np.tri(n, k=-1, dtype=bool)
        c = above.sum(axis=-1)[..., 1:]
        return 2.0 / (n - 1) * (c / np.arange(1, n)).sum(axis=-1) - 1.0

    out = one_way(xs, ts)
    if symmetric:
        out = (out + one_way(ts, xs)) / 2.0
    return float(out) if np.ndim(out) == 0 else out


def spearman(x: object, y: object, method: SpearmanMethod = "pearson",
             kind: Kind = "auto") -> float | np.ndarray:
    """Spearman's rank correlation on mid-ranks (Yang 2019, Ch. 2.4.3).

    ``method="pearson"`` (default) is Pearson's correlation of the average ranks, which is
    ``scipy.stats.spearmanr`` and what the thesis's Tables 2.7/2.8 report.
    ``method="shortcut"`` is ``1 - 6 sum d^2 / (n(n^2-1))`` on the same mid-ranks, exact only
    without ties; the thesis uses it for its worked example (0.925 for M3/M4, where Pearson gives
    0.9211).

    Args:
        x: scores (array ``(..., n)`` or Series) or a ranked list.
        y: the other ordering, same items.
        method: ``"pearson"`` or ``"shortcut"``.
        kind: see :func:`kendall_tau`.

    Returns:
        rho (float for 1-D input, else an array of the batch shape); NaN for a constant ordering
        with ``"pearson"``.
    """
    check_choice("method", method, SPEARMAN_METHODS)
    xs, ys = _aligned_scores(x, y, kind)
    from scipy import stats as _st   # on first use: scipy.stats is slow to import
    rx = _st.rankdata(xs, axis=-1)
    ry = _st.rankdata(ys, axis=-1)
    if method == "shortcut":
        n = xs.shape[-1]
        out = 1.0 - 6.0 * ((rx - ry) ** 2).sum(axis=-1) / (n * (n * n - 1))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _st.pearsonr(rx, ry, axis=-1).statistic
    out = np.asarray(out, dtype=float)
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------------------------
# RBO

def _rbo_core(overlap: np.ndarray, s: int, l: int, p: float, variant: str) -> np.ndarray:
    """RBO from overlaps X_1..X_l (last axis) of a list seen to depth s and one seen to l >= s.

    Webber, Moffat & Zobel (2010): X_d = |S_{:min(d,s)} & L_{:d}|; A_d = X_d / d.
    """
    d = np.arange(1, l + 1, dtype=float)
    w = p ** d / d
    c = (1.0 - p) / p
    x_l = overlap[..., -1]
    if variant == "trunc":
        return c * (overlap * w).sum(axis=-1)
    x_s = overlap[..., s - 1]
    if variant == "ext":
        # eq. 32: beyond depth s the short list is assumed to agree at its rate X_s / s
        x_ext = overlap + np.where(d > s, d - s, 0.0) * (x_s / s)[..., None]
        return c * (x_ext * w).sum(axis=-1) + x_ext[..., -1] / l * p ** l
    # lower bound: nothing unseen ever overlaps, so X_d = X_l for every d > l
    tail = -math.log1p(-p) - w.sum()                      # sum_{d>l} p^d / d
    rbo_min = c * ((overlap * w).sum(axis=-1) + x_l * tail)
    if variant == "min":
        return rbo_min
    # upper bound: unseen positions first match the other list's unmatched seen items, then
    # each other.  X_d <= X_d + (d - s) for s < d <= l;  X_d <= min(d, 2d - s - l + X_l) beyond l,
    # reaching full agreement at f = s + l - X_l.
    x_max = overlap + np.where(d > s, d - s, 0.0)
    f = s + l - x_l
    e = np.arange(l + 1, s + l + 1, dtype=float)
    mid = np.where(e <= f[..., None], (2 * e - s - l + x_l[..., None]) * p ** e / e, 0.0)
    rbo_max = c * ((x_max * w).sum(axis=-1) + mid.sum(axis=-1)) + p ** f
    return rbo_max - rbo_min


def rbo(x: object, y: object, p: float = 0.9,
        variant: RboVariant = "ext", depth: int | None = None,
        kind: Kind = "auto", ties: RankTies = "error") -> float | np.ndarray:
    """Rank-biased overlap of two orderings (Webber, Moffat & Zobel, TOIS 2010).

    With ``X_d`` the overlap of the two depth-``d`` prefixes and ``A_d = X_d / d``:

    * ``"trunc"``: ``(1-p) sum_{d<=k} p^(d-1) A_d``, the prefix sum alone (no tail); identical
      lists of length k give ``1 - p^k`` (the form of Rashidi, Zobel and Moffat 2023, at
      ``p=0.9, depth=50``).  For two orderings of the same k items ``"ext"`` is exactly ``p^k``
      higher (``0.9^50 = 0.0052`` for the paper's 50 systems).
    * ``"min"``: lower bound, assuming nothing unseen ever overlaps (Webber eq. 11/30).
    * ``"res"``: residual, the most the unseen tail could add; the full RBO lies in
      ``[min, min + res]``.
    * ``"ext"`` (default): extrapolated, assuming agreement continues at the last seen rate
      (Webber eq. 32; Yang 2019 eq. 2.28 for equal lengths:
      ``(1-p)/p sum_{d<=k} p^d A_d + p^k A_k``).

    Ranked lists may have different lengths and items (the uneven-length forms are used).
    Score vectors are turned into rankings (highest first) of the same items, with leading
    batch axes allowed. Ties have no standard RBO treatment in the thesis: they raise unless
    ``ties="first"`` (tied items ordered by input position, which is arbitrary).

    Args:
        x: scores (array ``(..., n)`` or Series) or a ranked list of item ids (best first).
        y: the other ordering.
        p: persistence in (0, 1).
        variant: ``"ext"``, ``"min"``, ``"res"`` or ``"trunc"``.
        depth: evaluate only the top ``depth`` of each ordering (default: all of it).
        kind: see :func:`kendall_tau`.
        ties: ``"error"`` or ``"first"`` (score vectors only).

    Returns:
        RBO (float for one pair of orderings, else an array of the batch shape).
    """
    p = check_probability("p", p)
    check_choice("variant", variant, RBO_VARIANTS)
    if depth is not None:
        check_int("depth", depth)
    check_choice("kind", kind, CORRELATION_INPUTS)
    kx, ky = _kind_of(x, kind), _kind_of(y, kind)
    if kx == "ranking" and ky == "ranking":
        lx, ly = _ranked_list("x", x), _ranked_list("y", y)
        if depth is not None:
            lx, ly = lx[:depth], ly[:depth]
        short, long_ = (lx, ly) if len(lx) <= len(ly) else (ly, lx)
        s, l = len(short), len(long_)
        pos_short = pd.Index(short).get_indexer(long_)
        common = pos_short >= 0
        enter = np.maximum(pos_short[common], np.arange(l)[common]) + 1
        overlap = np.cumsum(np.bincount(enter, minlength=l + 1)[1:]).astype(float)
        return float(_rbo_core(overlap, s, l, p, variant))
    xs, ys = _aligned_scores(x, y, kind)
    _check_no_ties("x", xs, ties)
    _check_no_ties("y", ys, ties)
    n = xs.shape[-1]
    k = n if depth is None else min(depth, n)
    enter = np.maximum(_positions(xs), _positions(ys)) + 1          # depth at which it overlaps
    rows = enter.reshape(-1, n)
    flat = (np.arange(rows.shape[0])[:, None] * (n + 1) + rows).ravel()
    counts = np.bincount(flat, minlength=rows.shape[0] * (n + 1)).reshape(rows.shape[0], n + 1)
    overlap = np.cumsum(counts[:, 1:k + 1], axis=-1).astype(float).reshape(xs.shape[:-1] + (k,))
    out = _rbo_core(overlap, k, k, p, variant)
    return float(out) if np.ndim(out) == 0 else out
