"""Correlation between system orderings, inter-rater agreement, and discrimination.

* Rank correlation of two system orderings: :func:`kendall_tau` (tau_a, tau_b),
  :func:`tau_ap` (Yilmaz, Aslam & Robertson 2008), :func:`spearman`, and :func:`rbo`
  (rank-biased overlap, Webber, Moffat & Zobel 2010) with its truncated, lower-bound (min),
  residual and extrapolated forms.
* Inter-rater agreement: :func:`krippendorff_alpha` (nominal, ordinal, interval, ratio) from a
  units x raters matrix with missing values, and :func:`pairwise_preference_units`, which turns
  graded scores into left/right/tie preference units (Yang 2019, Ch. 2.4.3, Tables 2.10-2.13).
* Discrimination (Yang 2019, Ch. 4.6-4.8): :func:`discrimination_ratio`, the share of system
  pairs a paired test separates; :func:`consistent_discrimination`, how each pair's p-value
  moves across versions of the judgments; :func:`discrimination_agreement`, whether each
  pair's decision under a version matches a reference ("consistently consistent
  discrimination", TP/FP/FN/TN).

Orderings are given either as score vectors (higher is better; arrays are matched by
position, pandas Series by index label) or as ranked lists of item ids (best first). Score
vectors may carry leading batch axes (e.g. one ordering per replicate), which are computed in
one vectorised call.
"""
from __future__ import annotations

import math
import warnings
from typing import Literal, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from .._validation import InputError, check_probability, finite_array
from ..stats.tests import (Alternative, Correction, Test, _alpha, _float_array, _quadrant_codes,
                    all_pairs, significant)

__all__ = [
    "kendall_tau",
    "tau_ap",
    "spearman",
    "rbo",
    "krippendorff_alpha",
    "PreferenceUnits",
    "pairwise_preference_units",
    "discrimination_ratio",
    "consistent_discrimination",
    "discrimination_agreement",
]

Kind = Literal["auto", "scores", "ranking"]

_BLOCK_ELEMENTS = 1 << 22


# ---------------------------------------------------------------------------------------------
# input handling for orderings

def _is_numeric(arr: np.ndarray) -> bool:
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
    return "scores" if _is_numeric(np.asarray(x)) else "ranking"


def _aligned_scores(x: object, y: object, kind: str, xname: str = "x",
                    yname: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Two orderings of the same items as aligned score arrays (..., n), higher = better."""
    if kind not in ("auto", "scores", "ranking"):
        raise InputError(f"kind must be 'auto', 'scores' or 'ranking'; got {kind!r}")
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
    if ties not in ("error", "first"):
        raise InputError(f"ties must be 'error' or 'first'; got {ties!r}")
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


def _pair_counts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
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

def kendall_tau(x: object, y: object, variant: Literal["a", "b"] = "b",
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
    if variant not in ("a", "b"):
        raise InputError(f"variant must be 'a' or 'b'; got {variant!r}")
    xs, ys = _aligned_scores(x, y, kind)
    if xs.ndim == 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # constant input: scipy warns, returns NaN
            tau_b = float(_st.kendalltau(xs, ys, variant="b").statistic)
        if variant == "b":
            return tau_b
        n = len(xs)
        n0 = n * (n - 1) // 2
        den = (n0 - _tied_pairs(xs)) * (n0 - _tied_pairs(ys))
        return 0.0 if den == 0 else tau_b * math.sqrt(den) / n0
    s, t1, t2, n0 = _pair_counts(xs, ys)
    if variant == "a":
        return s / n0
    with np.errstate(divide="ignore", invalid="ignore"):
        return s / np.sqrt((n0 - t1) * (n0 - t2))


def tau_ap(x: object, truth: object, symmetric: bool = False, kind: Kind = "auto",
           ties: Literal["error", "first"] = "error") -> float | np.ndarray:
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


def spearman(x: object, y: object, method: Literal["pearson", "shortcut"] = "pearson",
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
    if method not in ("pearson", "shortcut"):
        raise InputError(f"method must be 'pearson' or 'shortcut'; got {method!r}")
    xs, ys = _aligned_scores(x, y, kind)
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
        variant: Literal["ext", "min", "res", "trunc"] = "ext", depth: int | None = None,
        kind: Kind = "auto", ties: Literal["error", "first"] = "error") -> float | np.ndarray:
    """Rank-biased overlap of two orderings (Webber, Moffat & Zobel, TOIS 2010).

    With ``X_d`` the overlap of the two depth-``d`` prefixes and ``A_d = X_d / d``:

    * ``"trunc"``: ``(1-p) sum_{d<=k} p^(d-1) A_d``, the prefix sum alone (no tail); identical
      lists of length k give ``1 - p^k`` (the form of Rashidi et al. 2023).
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
    if variant not in ("ext", "min", "res", "trunc"):
        raise InputError(f"variant must be 'ext', 'min', 'res' or 'trunc'; got {variant!r}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer))
                              or depth < 1):
        raise InputError(f"depth must be a positive integer or None, got {depth!r}")
    if kind not in ("auto", "scores", "ranking"):
        raise InputError(f"kind must be 'auto', 'scores' or 'ranking'; got {kind!r}")
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


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha

def krippendorff_alpha(data: object,
                       level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
                       categories: Sequence | None = None) -> float:
    """Krippendorff's alpha from a units x raters matrix with missing values.

    ``alpha = 1 - D_o / D_e`` (Yang 2019, eq. 2.29-2.33). Values of unit ``u`` (``m_u`` of
    them) contribute ``1/(m_u - 1)`` per ordered pair of values from different raters to the
    coincidence matrix ``o_ck``; ``n_c = sum_k o_ck``, ``n = sum_c n_c``, and
    ``alpha = 1 - (n - 1) sum o_ck delta_ck / sum n_c n_k delta_ck``. Units with fewer than two
    values are not pairable and are ignored. The coincidence matrix is one matrix product over
    all units (no loop per unit).

    Difference functions ``delta_ck`` (Krippendorff 2011): nominal ``[c != k]``; ordinal
    ``(sum_{g=c..k} n_g - (n_c + n_k)/2)^2`` with categories in the order given (or sorted);
    interval ``(c - k)^2``; ratio ``((c - k)/(c + k))^2`` (non-negative values).

    Args:
        data: array-like or DataFrame, rows = units (items judged), columns = raters;
            missing values are NaN/None. Values are numbers or labels (labels only for nominal
            and ordinal).
        level: ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``.
        categories: the possible values in order (required for ordinal string labels;
            values outside it raise).

    Returns:
        alpha (<= 1; NaN when all pairable values are equal, so disagreement is undefined).

    Raises:
        InputError: no unit has two values, non-numeric values for interval/ratio, negative
            values for ratio, values outside ``categories``.
    """
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise InputError(f"level must be 'nominal', 'ordinal', 'interval' or 'ratio'; got {level!r}")
    arr = np.asarray(data.to_numpy() if isinstance(data, pd.DataFrame) else data, dtype=object)
    if arr.ndim != 2:
        raise InputError(f"data must be a 2-D units x raters matrix, got shape {arr.shape}")
    n_units = arr.shape[0]
    flat = arr.ravel()
    missing = pd.isna(flat)
    try:
        cat = pd.Categorical(flat, categories=None if categories is None else list(categories))
    except (TypeError, ValueError) as err:
        raise InputError(f"data values cannot be ordered as one set of categories ({err}); "
                         "use one type of value (numbers or labels)") from None
    codes = np.asarray(cat.codes, dtype=np.int64)
    outside = (codes < 0) & ~missing
    if outside.any():
        r, c = divmod(int(np.flatnonzero(outside)[0]), arr.shape[1])
        raise InputError(f"data row {r}, column {c}: value {arr[r, c]!r} is not in categories "
                         f"{list(categories or [])!r}")
    n_cat = len(cat.categories)
    if level in ("interval", "ratio"):
        try:
            values = np.asarray(cat.categories, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{level} alpha needs numeric values; found labels such as "
                             f"{list(cat.categories[:3])!r}") from None
        if level == "ratio" and (values < 0).any():
            raise InputError(f"ratio alpha needs non-negative values; found {values.min()!r}")
    if level == "ordinal" and categories is None and not _is_numeric(np.asarray(cat.categories)):
        raise InputError("ordinal alpha on labels needs categories= giving their order "
                         f"(found {list(cat.categories)!r})")
    unit = np.repeat(np.arange(n_units), arr.shape[1])[~missing]
    counts = np.bincount(unit * n_cat + codes[~missing], minlength=n_units * n_cat) \
        .reshape(n_units, n_cat).astype(float)
    m = counts.sum(axis=1)
    pairable = m >= 2
    if not pairable.any():
        raise InputError("no unit (row) has values from two or more raters; data must be "
                         "units x raters (transpose a raters x units matrix)")
    counts, m = counts[pairable], m[pairable]
    weighted = counts / (m - 1)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))    # coincidence matrix
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(n_cat)
    elif level == "ordinal":
        mid = np.cumsum(n_c) - n_c / 2.0                       # mid-rank of each category
        delta = (mid[:, None] - mid[None, :]) ** 2
    elif level == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    else:
        tot = values[:, None] + values[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = np.where(tot > 0, ((values[:, None] - values[None, :]) / tot) ** 2, 0.0)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected == 0:
        return float("nan")
    return float(1.0 - (n - 1) * (o * delta).sum() / expected)


class PreferenceUnits(NamedTuple):
    """Pairwise preference units and the share of tied votes."""

    units: pd.DataFrame
    tie_rate: float


def pairwise_preference_units(scores: object, tie: Literal["T", "missing"] = "T",
                              atol: float = 0.0) -> PreferenceUnits:
    """Turn graded scores into pairwise preference units (Yang 2019, Table 2.12).

    For every pair of items ``(a, b)`` (``a`` before ``b``) each rater votes ``"L"`` if it
    scored ``a`` higher, ``"R"`` if lower and ``"T"`` if equal (within ``atol``); the pairs
    are the units for :func:`krippendorff_alpha` at the nominal level. With ``tie="missing"``
    ties become missing values (the thesis's second variant: alpha 0.353 -> 0.5).

    Args:
        scores: items x raters matrix (array or DataFrame) of numeric scores; NaN = not judged
            (the rater's vote on every pair with that item is missing).
        tie: ``"T"`` keeps ties as a category; ``"missing"`` drops them.
        atol: scores within ``atol`` count as tied.

    Returns:
        ``PreferenceUnits(units, tie_rate)``: ``units`` is a (pairs x raters) DataFrame of
        ``"L"/"R"/"T"`` (or NaN) indexed by ``(item_a, item_b)``; ``tie_rate`` is the share of
        non-missing votes that were ties (computed before ``tie="missing"`` is applied).
    """
    if tie not in ("T", "missing"):
        raise InputError(f"tie must be 'T' or 'missing'; got {tie!r}")
    if not (isinstance(atol, (int, float)) and atol >= 0):
        raise InputError(f"atol must be a non-negative number, got {atol!r}")
    frame = scores if isinstance(scores, pd.DataFrame) else pd.DataFrame(np.asarray(scores))
    try:
        x = frame.to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise InputError("scores must be numeric (NaN for missing)") from None
    if x.ndim != 2 or x.shape[0] < 2:
        raise InputError(f"scores must be an items x raters matrix with at least 2 items, "
                         f"got shape {x.shape}")
    if np.isinf(x).any():
        r, c = np.argwhere(np.isinf(x))[0]
        raise InputError(f"scores row {r}, column {c} is infinite")
    i, j = np.triu_indices(x.shape[0], 1)
    diff = x[i] - x[j]
    present = ~np.isnan(diff)
    is_tie = present & (np.abs(diff) <= atol)
    votes = np.where(diff > atol, "L", np.where(diff < -atol, "R", "T")).astype(object)
    votes[~present] = np.nan
    n_votes = int(present.sum())
    tie_rate = float(is_tie.sum() / n_votes) if n_votes else float("nan")
    if tie == "missing":
        votes[is_tie] = np.nan
    labels = frame.index.to_numpy()
    index = pd.MultiIndex.from_arrays([labels[i], labels[j]], names=["item_a", "item_b"])
    units = pd.DataFrame(votes, index=index, columns=frame.columns, dtype=object)
    return PreferenceUnits(units, tie_rate)


# ---------------------------------------------------------------------------------------------
# discrimination

def discrimination_ratio(scores: object, alpha: float = 0.05, test: Test = "t",
                         alternative: Alternative = "two-sided",
                         correction: Correction | None = None, inclusive: bool = False,
                         n_resamples: int = 10_000,
                         seed: int | np.random.Generator | None = 0) -> float | np.ndarray:
    """Share of system pairs a paired test separates (Yang 2019, Ch. 4.6, Table 4.5).

    The thesis's discrimination ratio is the fraction of all ``S(S-1)/2`` system pairs whose
    two-tailed paired t-test over topics gives ``p < 0.05``, without correction.

    Args:
        scores: ``systems x topics`` or ``systems x topics x replicates [x ...]`` array.
        alpha: significance level.
        test: paired test (see :func:`pyterrier_noise.stats.paired_test`).
        alternative: test sidedness.
        correction: optional correction over the pairs of each replicate.
        inclusive: significant iff ``p <= alpha`` (default ``p < alpha``).
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        The ratio in [0, 1] (a float, or one per replicate).
    """
    _alpha(alpha)
    res = all_pairs(scores, test=test, alternative=alternative, correction=correction,
                    n_resamples=n_resamples, seed=seed)
    out = np.asarray(significant(res.pvalue, alpha, inclusive)).mean(axis=0)
    return float(out) if np.ndim(out) == 0 else out


def _names(names: Sequence | None, n: int, what: str) -> np.ndarray:
    if names is None:
        return np.arange(n)
    out = np.asarray(list(names), dtype=object)
    if len(out) != n:
        raise InputError(f"{what} has {len(out)} labels but the scores have {n}")
    return out


def consistent_discrimination(scores: object, versions: Sequence | None = None,
                              names: Sequence | None = None, alpha: float = 0.05,
                              test: Test = "t", inclusive: bool = False,
                              n_resamples: int = 10_000,
                              seed: int | np.random.Generator | None = 0) -> pd.DataFrame:
    """How each system pair's p-value moves across ordered versions of the judgments.

    Yang (2019), Ch. 4.7 (Fig. 4.7): for every pair, a two-tailed paired test per version
    (e.g. qrels pooled to depth 5, 10, 15, 20, 25) gives a p-vector; ``tau`` is Kendall's tau
    between the version order and the p-values (tau = -1: p falls steadily as judging grows;
    under the null every ordering is equally likely, so for 5 versions P(|tau| = 1) = 2/120).
    Each pair is also classed ``"all_significant"`` (significant under every version),
    ``"all_not_significant"``, or ``"straddle"`` (the conclusion depends on the version).

    Args:
        scores: ``systems x topics x versions`` array; the version axis must be in order
            (e.g. increasing pool depth).
        versions: labels of the versions (default 0..V-1), used in the ``p[...]`` column names.
        names: system labels (default 0..S-1).
        alpha: significance level.
        test: paired test (``"t"`` in the thesis).
        inclusive: significant iff ``p <= alpha`` (default ``p < alpha``).
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        One row per pair: ``sys_a, sys_b, p[v]`` for each version, ``tau`` (tau_b; NaN if all
        p-values are equal), ``n_significant`` and ``consistency``.
    """
    arr = _float_array("scores", scores)
    if arr.ndim != 3 or arr.shape[2] < 2:
        raise InputError(f"scores must be a systems x topics x versions array with at least 2 "
                         f"versions, got shape {np.shape(arr)}")
    n_sys, _, n_ver = arr.shape
    labels = _names(versions, n_ver, "versions")
    sys_names = _names(names, n_sys, "names")
    i, j, p = all_pairs(arr, test=test, n_resamples=n_resamples, seed=seed)
    order = np.broadcast_to(np.arange(n_ver, dtype=float), p.shape)
    s, _, tied_p, n0 = _pair_counts(order, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = s / np.sqrt(n0 * (n0 - tied_p))
    sig = np.asarray(significant(p, alpha, inclusive))
    n_sig = sig.sum(axis=1)
    consistency = np.where(n_sig == n_ver, "all_significant",
                           np.where(n_sig == 0, "all_not_significant", "straddle"))
    frame = pd.DataFrame({"sys_a": sys_names[i], "sys_b": sys_names[j]})
    for k, v in enumerate(labels):
        frame[f"p[{v}]"] = p[:, k]
    frame["tau"] = tau
    frame["n_significant"] = n_sig
    frame["consistency"] = pd.Categorical(consistency, categories=["all_significant",
                                                                   "straddle",
                                                                   "all_not_significant"])
    return frame


def discrimination_agreement(test_scores: object, reference_scores: object,
                             versions: Sequence | None = None, names: Sequence | None = None,
                             alpha: float = 0.05, test: Test = "t", check_direction: bool = True,
                             inclusive: bool = False, n_resamples: int = 10_000,
                             seed: int | np.random.Generator | None = 0) -> pd.DataFrame:
    """Whether each pair's significance decision matches a reference (Yang 2019, Ch. 4.8).

    "Consistently consistent discrimination" (Table 4.6): for every system pair, the decision
    under a test version of the judgments is compared with the decision under the reference
    (e.g. the full qrels) at ``alpha``:

    * ``TP``: significant under both, and (with ``check_direction``) the same system wins;
    * ``FP``: significant under the test version only -- and also significant under both
      with opposite winners (flagged in ``reversed``);
    * ``FN``: significant under the reference only; ``TN``: under neither.

    A decision is consistent iff TP or TN. The test version's discrimination ratio is
    ``(TP + FP) / N``. Ch. 5 (Table 5.13) uses the same table without the direction check
    (``check_direction=False``).

    Args:
        test_scores: ``systems x topics`` or ``systems x topics x versions`` array.
        reference_scores: ``systems x topics`` array, same systems and topics.
        versions: labels of the test versions (default 0..V-1).
        names: system labels (default 0..S-1).
        alpha: significance level.
        test: paired test (``"t"`` in the thesis).
        check_direction: count opposite winners as FP (Ch. 4) or not (Ch. 5).
        inclusive: significant iff ``p <= alpha`` (default ``p < alpha``).
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        Long frame, one row per (version, pair): ``version, sys_a, sys_b, p_test,
        p_reference, diff_test, diff_reference, outcome`` (TP/FP/FN/TN) and ``reversed``.
    """
    t_arr = _float_array("test_scores", test_scores)
    r_arr = _float_array("reference_scores", reference_scores)
    if t_arr.ndim == 2:
        t_arr = t_arr[..., None]
    if t_arr.ndim != 3 or r_arr.ndim != 2 or t_arr.shape[:2] != r_arr.shape:
        raise InputError(f"test_scores must be systems x topics [x versions] and "
                         f"reference_scores systems x topics with the same systems and topics; "
                         f"got {np.shape(test_scores)} and {np.shape(reference_scores)}")
    n_sys, _, n_ver = t_arr.shape
    labels = _names(versions, n_ver, "versions")
    sys_names = _names(names, n_sys, "names")
    i, j, p_test = all_pairs(t_arr, test=test, n_resamples=n_resamples, seed=seed)
    p_ref = all_pairs(r_arr, test=test, n_resamples=n_resamples, seed=seed).pvalue
    means_t = t_arr.mean(axis=1)
    means_r = r_arr.mean(axis=1)
    diff_t = means_t[i] - means_t[j]                                   # pairs x versions
    diff_r = np.broadcast_to((means_r[i] - means_r[j])[:, None], diff_t.shape)
    p_ref_b = np.broadcast_to(p_ref[:, None], p_test.shape)
    codes = _quadrant_codes(p_ref_b, p_test, alpha, inclusive,
                            diff_r if check_direction else None,
                            diff_t if check_direction else None)
    outcome = np.array(["TP", "TN", "FP", "FN", "FP"], dtype=object)[codes]
    n_pairs = len(i)
    return pd.DataFrame({
        "version": np.tile(labels, n_pairs),
        "sys_a": np.repeat(sys_names[i], n_ver),
        "sys_b": np.repeat(sys_names[j], n_ver),
        "p_test": p_test.ravel(),
        "p_reference": p_ref_b.ravel(),
        "diff_test": diff_t.ravel(),
        "diff_reference": diff_r.ravel(),
        "outcome": pd.Categorical(outcome.ravel(), categories=["TP", "FP", "FN", "TN"]),
        "reversed": (codes == 4).ravel(),
    })
