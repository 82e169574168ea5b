"""Inter-rater agreement and the reliability of significance conclusions.

* Inter-rater agreement: :func:`krippendorff_alpha` (nominal, ordinal, interval, ratio) from a
  units x raters matrix with missing values, and :func:`pairwise_preference_units`, which turns
  graded scores into left/right/tie preference units (Yang 2019, Ch. 2.4.3, Tables 2.10-2.13).
* Discrimination (Yang 2019, Ch. 4.6-4.8): :func:`discrimination_ratio`, the share of system
  pairs a paired test separates; :func:`consistent_discrimination`, how each pair's p-value
  moves across versions of the judgments; :func:`discrimination_agreement`, whether each
  pair's decision under a version matches a reference ("consistently consistent
  discrimination", TP/FP/FN/TN).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice
from .._vocab import ALPHA_LEVELS, PAIR_TIES, AlphaLevel, Alternative, Correction, PairTie, Test
from ._checks import _alpha, _float_array
from .agreement import is_numeric, pair_counts
from .multiple import significant
from .perquery import quadrant_codes
from .tests import all_pairs

__all__ = [
    "krippendorff_alpha",
    "PreferenceUnits",
    "pairwise_preference_units",
    "discrimination_ratio",
    "consistent_discrimination",
    "discrimination_agreement",
]


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha

def _alpha_codes(arr: np.ndarray, missing: np.ndarray, level: str,
                 categories: Sequence | None) -> tuple[np.ndarray, int, np.ndarray | None]:
    """The values' category codes (flat, -1 where missing), the number of categories, and the
    categories as numbers for interval and ratio alpha; InputError on values the level cannot use."""
    flat = arr.ravel()
    try:
        if categories is None:
            cat = pd.Categorical(flat)
        else:   # values outside the categories get code -1 (pandas deprecates passing them in)
            known = pd.Index(list(categories))
            if not known.is_unique:
                raise ValueError("categories must be unique")
            cat = pd.Categorical.from_codes(known.get_indexer(pd.Index(flat, dtype=object)), categories=known)
    except (TypeError, ValueError) as err:
        raise InputError(f"data values cannot be ordered as one set of categories ({err}); "
                         "use one type of value (numbers or labels)") from None
    codes = np.asarray(cat.codes, dtype=np.int64)
    outside = (codes < 0) & ~missing
    if outside.any():
        r, c = divmod(int(np.flatnonzero(outside)[0]), arr.shape[1])
        raise InputError(f"data row {r}, column {c}: value {arr[r, c]!r} is not in categories "
                         f"{list(categories or [])!r}")
    values = None
    if level in ("interval", "ratio"):
        try:
            values = np.asarray(cat.categories, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{level} alpha needs numeric values; found labels such as "
                             f"{list(cat.categories[:3])!r}") from None
        if level == "ratio" and (values < 0).any():
            raise InputError(f"ratio alpha needs non-negative values; found {values.min()!r}")
    if level == "ordinal" and categories is None and not is_numeric(np.asarray(cat.categories)):
        raise InputError("ordinal alpha on labels needs categories= giving their order "
                         f"(found {list(cat.categories)!r})")
    return codes, len(cat.categories), values


def _alpha_delta(level: str, n_c: np.ndarray, values: np.ndarray | None) -> np.ndarray:
    """The difference function ``delta_ck`` of the level (Krippendorff 2011), categories x categories."""
    if level == "nominal":
        return 1.0 - np.eye(len(n_c))
    if level == "ordinal":
        mid = np.cumsum(n_c) - n_c / 2.0                       # mid-rank of each category
        return (mid[:, None] - mid[None, :]) ** 2
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    tot = values[:, None] + values[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tot > 0, ((values[:, None] - values[None, :]) / tot) ** 2, 0.0)


def krippendorff_alpha(data: object,
                       level: AlphaLevel = "nominal",
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
    check_choice("level", level, ALPHA_LEVELS)
    arr = np.asarray(data.to_numpy() if isinstance(data, pd.DataFrame) else data, dtype=object)
    if arr.ndim != 2:
        raise InputError(f"data must be a 2-D units x raters matrix, got shape {arr.shape}")
    n_units = arr.shape[0]
    missing = pd.isna(arr.ravel())
    codes, n_cat, values = _alpha_codes(arr, missing, level, categories)
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
    delta = _alpha_delta(level, n_c, values)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected == 0:
        return float("nan")
    return float(1.0 - (n - 1) * (o * delta).sum() / expected)


class PreferenceUnits(NamedTuple):
    """Pairwise preference units and the share of tied votes."""

    units: pd.DataFrame
    tie_rate: float


def pairwise_preference_units(scores: object, tie: PairTie = "T",
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
    check_choice("tie", tie, PAIR_TIES)
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
    s, _, tied_p, n0 = pair_counts(order, p)
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
    codes = quadrant_codes(p_ref_b, p_test, alpha, inclusive,
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
