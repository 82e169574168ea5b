"""Significance testing for IR experiments: paired tests over topics, corrections, intervals.

Everything here works on per-topic scores held as arrays, and is vectorised so that many system
pairs and many replicates (for example many perturbed versions of the qrels) are tested in one
call without a Python loop per pair or per replicate:

* :func:`paired_test` -- paired t, Wilcoxon signed-rank, sign, randomisation (permutation) and
  bootstrap tests over topics, two-sided or one-sided, broadcasting over any leading axes.
* :func:`all_pairs` -- every system pair of a ``systems x topics [x replicates]`` array.
* :func:`correct_pvalues` -- Bonferroni, Holm and Benjamini-Hochberg along an axis.
* :func:`tukey_hsd` -- Tukey's HSD over all systems (topic-blocked ANOVA, one-way, or
  Carterette's randomised version).
* :func:`mean_ci` -- t and percentile-bootstrap confidence intervals for mean scores.
* :func:`pairwise_significance` -- a tidy frame of pairwise p-values from
  ``pt.Experiment(perquery=True)`` output.
* :func:`degradation_test` and :func:`pvalue_quadrants` -- the non-inferiority test of Yang
  (2019) Table 3.4 and the p-value agreement grid of Fig. 3.8.

References: Yang (2019), PhD thesis, Ch. 2.4.2 and 3.3.4; Smucker, Allan & Carterette (CIKM 2007);
Sakai (SIGIR 2006); Carterette (TOIS 2012); Holm (1979); Benjamini & Hochberg (1995).
"""
from __future__ import annotations

import math
import warnings
from typing import Literal, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from .._validation import InputError, announce, check_choice, finite_array

__all__ = [
    "TESTS",
    "ALTERNATIVES",
    "CORRECTIONS",
    "PairwiseResult",
    "ConfidenceInterval",
    "paired_test",
    "all_pairs",
    "correct_pvalues",
    "tukey_hsd",
    "mean_ci",
    "pairwise_significance",
    "degradation_test",
    "pvalue_quadrants",
    "significant",
]

Test = Literal["t", "wilcoxon", "sign", "randomisation", "bootstrap"]
Alternative = Literal["two-sided", "greater", "less"]
Correction = Literal["bonferroni", "holm", "fdr_bh"]

TESTS: tuple[str, ...] = ("t", "wilcoxon", "sign", "randomisation", "bootstrap")
ALTERNATIVES: tuple[str, ...] = ("two-sided", "greater", "less")
CORRECTIONS: tuple[str, ...] = ("bonferroni", "holm", "fdr_bh")

# Resampling work is done in blocks so that (batch x block) temporaries stay around this many
# float64 values (~32 MB); the loop is over blocks, never over pairs or replicates.
_BLOCK_ELEMENTS = 1 << 22


class PairwiseResult(NamedTuple):
    """Pairs ``(i[k], j[k])`` with ``i < j`` and their p-values ``pvalue[k, ...]``."""

    i: np.ndarray
    j: np.ndarray
    pvalue: np.ndarray


class ConfidenceInterval(NamedTuple):
    """Lower and upper limits of a confidence interval (arrays of the batch shape)."""

    low: np.ndarray | float
    high: np.ndarray | float


# ---------------------------------------------------------------------------------------------
# validation helpers

def _choice(name: str, value: object, choices: Sequence) -> object:
    return check_choice(name, value, choices)


def _float_array(name: str, x: object) -> np.ndarray:
    """Convert to a float array; non-numeric or non-finite values raise naming the position."""
    return finite_array(name, x)


def _n_resamples(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"n_resamples must be a positive integer, got {n!r}")
    return int(n)


def _alpha(alpha: object) -> float:
    try:
        a = float(alpha)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"alpha must be a number in (0, 1), got {alpha!r}") from None
    if not 0.0 < a < 1.0:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    return a


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


# ---------------------------------------------------------------------------------------------
# resampling designs, drawn once and shared by every pair and replicate of a call

def _sign_flip_design(n_topics: int, n_resamples: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign vectors (B x topics) for the randomisation test, and whether they are exhaustive.

    When all 2**n_topics sign vectors fit in ``n_resamples`` the test is exact (complete
    enumeration, as scipy.stats.permutation_test does); otherwise they are drawn at random.
    """
    if n_topics < 31 and 2 ** n_topics <= n_resamples:
        codes = np.arange(2 ** n_topics)[:, None] >> np.arange(n_topics)[None, :]
        return ((codes & 1) * 2 - 1).astype(np.float64), True
    signs = rng.integers(0, 2, size=(n_resamples, n_topics), dtype=np.int8)
    return (signs * 2 - 1).astype(np.float64), False


def _bootstrap_design(n_topics: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each topic appears in each bootstrap sample (B x topics multiplicities)."""
    idx = rng.integers(0, n_topics, size=(n_resamples, n_topics))
    flat = (np.arange(n_resamples)[:, None] * n_topics + idx).ravel()
    return np.bincount(flat, minlength=n_resamples * n_topics).reshape(n_resamples, n_topics) \
        .astype(np.float64)


def _make_design(test: str, n_topics: int, n_resamples: int,
                 seed: int | np.random.Generator | None) -> object:
    if test == "randomisation":
        return _sign_flip_design(n_topics, n_resamples, np.random.default_rng(seed))
    if test == "bootstrap":
        return _bootstrap_design(n_topics, n_resamples, np.random.default_rng(seed))
    return None


def _block(batch: int, total: int) -> int:
    return max(1, min(total, _BLOCK_ELEMENTS // max(1, batch)))


# ---------------------------------------------------------------------------------------------
# the tests, on differences d with topics on the last axis

def _p_t(d: np.ndarray, alternative: str) -> np.ndarray:
    # ttest_rel(a, b) is ttest_1samp(a - b, 0): scipy computes it exactly this way.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(_st.ttest_1samp(d, 0.0, axis=-1, alternative=alternative).pvalue)


def _p_wilcoxon(d: np.ndarray, alternative: str, zero_method: str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        return np.asarray(_st.wilcoxon(d, axis=-1, alternative=alternative,
                                       zero_method=zero_method).pvalue)


def _p_sign(d: np.ndarray, alternative: str) -> np.ndarray:
    # The sign test is scipy.stats.binomtest(n_pos, n_pos + n_neg, 0.5), which is scalar-only;
    # with p = 0.5 its tails are the binomial cdf/sf, which scipy.stats.binom evaluates for
    # every pair and replicate at once. Zero differences are dropped, as binomtest users do.
    n_pos = (d > 0).sum(axis=-1)
    n = n_pos + (d < 0).sum(axis=-1)
    lower = _st.binom.cdf(n_pos, n, 0.5)     # P(X <= n_pos)
    upper = _st.binom.sf(n_pos - 1, n, 0.5)  # P(X >= n_pos)
    if alternative == "greater":
        return np.asarray(upper)
    if alternative == "less":
        return np.asarray(lower)
    return np.minimum(1.0, 2.0 * np.minimum(lower, upper))


def _p_randomisation(d: np.ndarray, alternative: str, design: tuple[np.ndarray, bool]) -> np.ndarray:
    # Written by hand rather than with scipy.stats.permutation_test: scipy materialises a
    # (batch x resamples x topics) array of permuted data and draws its permutations inside each
    # call, whereas here one seeded set of sign flips is shared by every pair and replicate and
    # the null statistics are a single matrix product per block (memory batch x block).
    signs, exact = design
    n_resamples, n_topics = signs.shape
    obs = d.mean(axis=-1)
    # tolerance for "null >= observed" so that equal statistics computed in a different
    # summation order still count (as scipy.stats.permutation_test does)
    gamma = 1e-10 * np.abs(d).mean(axis=-1)
    count = np.zeros(obs.shape)
    step = _block(obs.size, n_resamples)
    for start in range(0, n_resamples, step):
        null = d @ (signs[start:start + step].T / n_topics)
        if alternative == "two-sided":
            hit = np.abs(null) >= (np.abs(obs) - gamma)[..., None]
        elif alternative == "greater":
            hit = null >= (obs - gamma)[..., None]
        else:
            hit = null <= (obs + gamma)[..., None]
        count += hit.sum(axis=-1)
    if exact:
        return count / n_resamples
    return (count + 1.0) / (n_resamples + 1.0)


def _p_bootstrap(d: np.ndarray, alternative: str, counts: np.ndarray) -> np.ndarray:
    # Paired studentised bootstrap test with the null imposed by shifting the differences to
    # mean zero (Sakai 2006). Written by hand: scipy.stats.bootstrap gives intervals, not tests.
    # Each bootstrap sample is a vector of topic multiplicities shared by every pair and
    # replicate, so resampled means and sums of squares are matrix products (memory batch x block).
    n_resamples, n_topics = counts.shape
    mean = d.mean(axis=-1)
    sd = d.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_obs = mean / (sd / math.sqrt(n_topics))
    w = d - mean[..., None]
    w2 = w * w
    count = np.zeros(mean.shape)
    step = _block(mean.size, n_resamples)
    for start in range(0, n_resamples, step):
        c = counts[start:start + step].T
        m = (w @ c) / n_topics
        var = np.maximum(((w2 @ c) - n_topics * m * m) / (n_topics - 1), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = m / np.sqrt(var / n_topics)
        t = np.where(np.isnan(t), 0.0, t)
        if alternative == "two-sided":
            hit = np.abs(t) >= np.abs(t_obs)[..., None]
        elif alternative == "greater":
            hit = t >= t_obs[..., None]
        else:
            hit = t <= t_obs[..., None]
        count += hit.sum(axis=-1)
    p = (count + 1.0) / (n_resamples + 1.0)
    return np.where(np.isnan(t_obs), np.nan, p)


def _pvalues(d: np.ndarray, test: str, alternative: str, design: object,
             zero_method: str = "wilcox") -> np.ndarray:
    if test == "t":
        return _p_t(d, alternative)
    if test == "wilcoxon":
        return _p_wilcoxon(d, alternative, zero_method)
    if test == "sign":
        return _p_sign(d, alternative)
    if test == "randomisation":
        return _p_randomisation(d, alternative, design)  # type: ignore[arg-type]
    return _p_bootstrap(d, alternative, design)  # type: ignore[arg-type]


def _check_test_args(test: str, alternative: str, n_resamples: int, zero_method: str) -> None:
    _choice("test", test, TESTS)
    _choice("alternative", alternative, ALTERNATIVES)
    _n_resamples(n_resamples)
    _choice("zero_method", zero_method, ("wilcox", "pratt", "zsplit"))


def paired_test(a: object, b: object, test: Test = "t", alternative: Alternative = "two-sided",
                axis: int = -1, n_resamples: int = 10_000,
                seed: int | np.random.Generator | None = 0,
                zero_method: str = "wilcox") -> np.ndarray:
    """Paired significance test of ``a`` against ``b`` over topics, vectorised.

    ``a`` and ``b`` hold per-topic scores; they broadcast against each other, ``axis`` is the
    topic axis, and every other axis is a batch (system pairs, replicates, ...). The null
    hypothesis is that the paired differences ``a - b`` are centred on zero; ``alternative``
    "greater" means H1: ``a`` > ``b``.

    Tests (Yang 2019, Ch. 2.4.2; Smucker, Allan & Carterette 2007):

    * ``"t"``: paired Student t-test (``scipy.stats.ttest_rel``).
    * ``"wilcoxon"``: Wilcoxon signed-rank test (``scipy.stats.wilcoxon``; exact for small
      samples without ties, normal approximation otherwise; ``zero_method`` as in scipy).
    * ``"sign"``: sign test, ``binomtest(#(a>b), #(a!=b), 0.5)``; ties are dropped.
    * ``"randomisation"``: Fisher's paired randomisation test on the mean difference, with
      random sign flips of the per-topic differences; exact enumeration when
      ``2**n_topics <= n_resamples``, otherwise p = (hits + 1) / (n_resamples + 1).
    * ``"bootstrap"``: Sakai's (2006) paired bootstrap test: studentised mean difference,
      differences shifted to mean 0, topics resampled with replacement;
      p = (hits + 1) / (n_resamples + 1).

    The random sign flips and bootstrap samples are drawn once (seeded) and shared by every
    element of the batch, so a pair gets the same p-value alone or inside a batch.

    When every difference is zero the t and bootstrap tests return NaN, the others 1.0; NaN is
    never counted as significant by :func:`significant`.

    Args:
        a: per-topic scores of the first system(s).
        b: per-topic scores of the second system(s); broadcast against ``a``.
        test: one of ``"t", "wilcoxon", "sign", "randomisation", "bootstrap"``.
        alternative: ``"two-sided"``, ``"greater"`` (a > b) or ``"less"`` (a < b).
        axis: the topic axis (of the broadcast shape).
        n_resamples: resamples for the randomisation and bootstrap tests.
        seed: seed (or Generator) for the randomisation and bootstrap tests.
        zero_method: Wilcoxon's treatment of zero differences (``"wilcox"``, ``"pratt"``,
            ``"zsplit"``).

    Returns:
        p-values with the broadcast shape minus the topic axis (a numpy scalar for 1-D input).

    Raises:
        InputError: non-numeric or non-finite scores, shapes that do not broadcast, fewer than
            two topics, or an unknown option.
    """
    _check_test_args(test, alternative, n_resamples, zero_method)
    a_arr = _float_array("a", a)
    b_arr = _float_array("b", b)
    try:
        a_arr, b_arr = np.broadcast_arrays(a_arr, b_arr)
    except ValueError:
        raise InputError(f"a (shape {a_arr.shape}) and b (shape {b_arr.shape}) do not broadcast "
                         "against each other") from None
    if a_arr.ndim == 0:
        raise InputError("a and b must have a topic axis (got scalars)")
    if not -a_arr.ndim <= axis < a_arr.ndim:
        raise InputError(f"axis {axis} is out of range for scores with {a_arr.ndim} dimension(s)")
    d = np.moveaxis(a_arr - b_arr, axis, -1)
    if d.shape[-1] < 2:
        raise InputError(f"a paired test needs at least 2 topics along axis {axis}, "
                         f"got {d.shape[-1]}")
    design = _make_design(test, d.shape[-1], n_resamples, seed)
    p = np.asarray(_pvalues(d, test, alternative, design, zero_method), dtype=float)
    return p[()] if p.ndim == 0 else p


def _system_topic_array(scores: object, name: str = "scores") -> np.ndarray:
    arr = _float_array(name, scores)
    if arr.ndim < 2:
        raise InputError(f"{name} must be a systems x topics [x replicates ...] array, "
                         f"got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise InputError(f"{name} needs at least 2 systems (axis 0), got {arr.shape[0]}")
    if arr.shape[1] < 2:
        raise InputError(f"{name} needs at least 2 topics (axis 1), got {arr.shape[1]}")
    return arr


def all_pairs(scores: object, test: Test = "t", alternative: Alternative = "two-sided",
              correction: Correction | None = None, n_resamples: int = 10_000,
              seed: int | np.random.Generator | None = 0,
              zero_method: str = "wilcox") -> PairwiseResult:
    """Paired test for every pair of systems, vectorised over pairs and replicates.

    The all-pairs comparison behind the discrimination ratio (Yang 2019, Ch. 4.6, Table 4.5)
    and the p-value grids of Ch. 3.3.4. For pair ``(i, j)`` with ``i < j`` the test is
    ``paired_test(scores[i], scores[j])``, so ``alternative="greater"`` means system ``i`` is
    better. One seeded resampling design is shared by all pairs and replicates.

    Args:
        scores: array ``systems x topics`` or ``systems x topics x replicates [x ...]``.
        test: see :func:`paired_test`.
        alternative: see :func:`paired_test`.
        correction: optional multiple-comparison correction over the pairs of each replicate
            (``"bonferroni"``, ``"holm"`` or ``"fdr_bh"``; see :func:`correct_pvalues`).
        n_resamples: resamples for the randomisation and bootstrap tests.
        seed: seed for the randomisation and bootstrap tests.
        zero_method: Wilcoxon's treatment of zero differences.

    Returns:
        ``PairwiseResult(i, j, pvalue)``: index arrays of length ``S*(S-1)/2`` (the order of
        ``numpy.triu_indices(S, 1)``) and p-values of shape ``(pairs, *replicates)``.
    """
    _check_test_args(test, alternative, n_resamples, zero_method)
    if correction is not None:
        _choice("correction", correction, CORRECTIONS)
    x = _system_topic_array(scores)
    x = np.moveaxis(x, 1, -1)                       # systems x replicates... x topics
    n_sys, n_topics = x.shape[0], x.shape[-1]
    batch_shape = x.shape[1:-1]
    i, j = np.triu_indices(n_sys, 1)
    design = _make_design(test, n_topics, n_resamples, seed)
    out = np.empty((len(i),) + batch_shape)
    per_pair = n_topics * int(np.prod(batch_shape, dtype=np.int64))
    step = _block(per_pair, len(i))
    for start in range(0, len(i), step):
        sl = slice(start, start + step)
        out[sl] = _pvalues(x[i[sl]] - x[j[sl]], test, alternative, design, zero_method)
    if correction is not None:
        out = correct_pvalues(out, correction, axis=0)
    return PairwiseResult(i, j, out)


# ---------------------------------------------------------------------------------------------
# multiple comparisons

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
    statsmodels itself. statsmodels is one-dimensional, so for batches (e.g. the pairs of
    each of 100 replicates) the same sort-and-cumulate formulas are applied along ``axis`` in
    numpy instead of calling statsmodels once per replicate; the tests check every slice against
    statsmodels. NaN p-values are left out of their family (m counts finite values) and stay NaN.

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
    if p.ndim == 1:
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


# ---------------------------------------------------------------------------------------------
# Tukey HSD

_SR_EXACT_MAX = 128   # up to this many q values, scipy's exact (slow) sf for each
_SR_GRID = 129        # otherwise exact on this many grid points, then interpolated

def _studentized_range_sf(q: np.ndarray, k: int, df: float) -> np.ndarray:
    """Survival function of the studentized range, fast for many q values.

    ``scipy.stats.studentized_range.sf`` integrates numerically (about 10 ms per value), so
    for more than 128 values it is evaluated exactly on a 129-point grid over [0, max q] and
    interpolated monotonically (PCHIP) in log space (absolute error about 1e-5).
    """
    q = np.asarray(q, dtype=float)
    out = np.full(q.shape, np.nan)
    ok = np.isfinite(q)
    out[np.isposinf(q)] = 0.0
    if not ok.any():
        return out
    qv = q[ok]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if qv.size <= _SR_EXACT_MAX:
            out[ok] = _st.studentized_range.sf(qv, k, df)
            return out
        from scipy.interpolate import PchipInterpolator
        grid = np.linspace(0.0, max(float(qv.max()), 1e-6), _SR_GRID)
        sf = np.clip(_st.studentized_range.sf(grid, k, df), 1e-300, 1.0)
    out[ok] = np.minimum(1.0, np.exp(PchipInterpolator(grid, np.log(sf))(qv)))
    return out


def tukey_hsd(scores: object, method: Literal["blocked", "oneway", "randomised"] = "blocked",
              n_resamples: int = 10_000,
              seed: int | np.random.Generator | None = 0) -> PairwiseResult:
    """Tukey's honestly significant difference test over all systems.

    Controls the family-wise error over all ``S*(S-1)/2`` system pairs at once.

    * ``"blocked"`` (default, for per-topic IR scores): topics are blocks. The error variance
      is the residual mean square of the two-way ANOVA ``score ~ system + topic`` (no
      interaction), with ``(S-1)(T-1)`` degrees of freedom, and
      ``q = |mean_i - mean_j| / sqrt(MSE / T)`` is referred to the studentized range
      distribution with ``S`` groups (``scipy.stats.studentized_range``). This is what R's
      ``TukeyHSD(aov(score ~ system + topic))`` reports, and is the paired analogue of the t-test.
    * ``"oneway"``: ignores topics (one-way ANOVA, ``S(T-1)`` df), identical to
      ``scipy.stats.tukey_hsd(*scores)`` and statsmodels' ``pairwise_tukeyhsd``; usually far
      less powerful on IR data because topic difficulty is left in the error term.
    * ``"randomised"``: Carterette's (2012) randomised Tukey HSD: scores are permuted across
      systems within each topic, and ``p_ij`` is the share of permutations whose largest
      difference of system means is at least ``|mean_i - mean_j|``;
      p = (hits + 1) / (n_resamples + 1). Distribution-free; seeded.

    Args:
        scores: ``systems x topics`` or ``systems x topics x replicates [x ...]`` array.
        method: ``"blocked"``, ``"oneway"`` or ``"randomised"``.
        n_resamples: permutations for ``"randomised"``.
        seed: seed for ``"randomised"``.

    Returns:
        ``PairwiseResult(i, j, pvalue)`` in the pair order of :func:`all_pairs`.
    """
    _choice("method", method, ("blocked", "oneway", "randomised"))
    n_res = _n_resamples(n_resamples)
    x = _system_topic_array(scores)
    n_sys, n_topics = x.shape[:2]
    i, j = np.triu_indices(n_sys, 1)
    means = x.mean(axis=1)                                   # systems x batch
    diff = np.abs(means[i] - means[j])                       # pairs x batch
    if method in ("blocked", "oneway"):
        if method == "blocked":
            resid = x - means[:, None] - x.mean(axis=0)[None] + x.mean(axis=(0, 1))[None, None]
            df = (n_sys - 1) * (n_topics - 1)
        else:
            resid = x - means[:, None]
            df = n_sys * (n_topics - 1)
        mse = (resid ** 2).sum(axis=(0, 1)) / df
        with np.errstate(divide="ignore", invalid="ignore"):
            q = diff / np.sqrt(mse / n_topics)
        q = np.where(np.isnan(q), 0.0, q)        # no spread and no difference: p = 1
        return PairwiseResult(i, j, _studentized_range_sf(q, n_sys, df))
    # randomised: the permutations are drawn in blocks from one seeded stream (a block of
    # uniform draws is the same numbers whatever the block size), shared by all replicates.
    rng = np.random.default_rng(seed)
    batch = int(np.prod(x.shape[2:], dtype=np.int64))
    gamma = 1e-10 * (np.abs(x).max() + 1.0)
    count = np.zeros(diff.shape)
    topic_idx = np.arange(n_topics)[None, None, :]
    step = _block(n_sys * n_topics * batch, n_res)
    for start in range(0, n_res, step):
        b = min(step, n_res - start)
        perm = np.argsort(rng.random((b, n_sys, n_topics)), axis=1)
        perm_means = x[perm, topic_idx].mean(axis=2)         # b x systems x batch
        spread = perm_means.max(axis=1) - perm_means.min(axis=1)
        count += (spread[:, None] >= diff[None] - gamma).sum(axis=0)
    return PairwiseResult(i, j, (count + 1.0) / (n_res + 1.0))


# ---------------------------------------------------------------------------------------------
# confidence intervals

def mean_ci(scores: object, confidence: float = 0.95, method: Literal["t", "bootstrap"] = "t",
            axis: int = -1, n_resamples: int = 10_000,
            seed: int | np.random.Generator | None = 0) -> ConfidenceInterval:
    """Confidence interval for a mean score over topics (vectorised over other axes).

    * ``"t"``: ``mean +- t_{(1+c)/2, n-1} * sd / sqrt(n)`` (``scipy.stats.ttest_1samp``).
    * ``"bootstrap"``: percentile bootstrap of the mean (``scipy.stats.bootstrap``,
      ``method="percentile"``), seeded; the same bootstrap samples serve every batch element.

    For a paired comparison pass the per-topic differences ``a - b``. Reporting intervals with
    p-values follows Sakai (2014, "Statistical reform in information retrieval?").

    Args:
        scores: per-topic scores; ``axis`` is the topic axis.
        confidence: confidence level in (0, 1).
        method: ``"t"`` or ``"bootstrap"``.
        axis: topic axis.
        n_resamples: bootstrap samples.
        seed: bootstrap seed.

    Returns:
        ``ConfidenceInterval(low, high)``.
    """
    _choice("method", method, ("t", "bootstrap"))
    conf = _alpha(confidence)
    n_res = _n_resamples(n_resamples)
    x = _float_array("scores", scores)
    if x.ndim == 0:
        raise InputError("scores must have a topic axis (got a scalar)")
    if not -x.ndim <= axis < x.ndim:
        raise InputError(f"axis {axis} is out of range for scores with {x.ndim} dimension(s)")
    if x.shape[axis] < 2:
        raise InputError(f"a confidence interval needs at least 2 topics, got {x.shape[axis]}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if method == "t":
            ci = _st.ttest_1samp(x, 0.0, axis=axis).confidence_interval(conf)
        else:
            ci = _st.bootstrap((x,), np.mean, axis=axis, vectorized=True, n_resamples=n_res,
                               confidence_level=conf, method="percentile",
                               rng=np.random.default_rng(seed)).confidence_interval
    low, high = np.asarray(ci.low, dtype=float), np.asarray(ci.high, dtype=float)
    return ConfidenceInterval(low[()] if low.ndim == 0 else low,
                              high[()] if high.ndim == 0 else high)


# ---------------------------------------------------------------------------------------------
# frames

_PERQUERY_COLUMNS = ("name", "qid", "measure", "value")


def _perquery_arrays(perquery: pd.DataFrame, measures: list[str], systems: list[str] | None,
                     missing: str) -> tuple[list[str], list[str], np.ndarray]:
    """Pivot a perquery frame to a systems x topics x measures array."""
    sub = perquery[perquery["measure"].astype(str).isin(measures)]
    sub = sub.assign(measure=sub["measure"].astype(str))
    names = list(pd.unique(sub["name"])) if systems is None else list(systems)
    if systems is not None:
        unknown = [s for s in names if s not in set(sub["name"])]
        if unknown:
            raise InputError(f"systems {unknown[:5]} do not appear in column 'name' for "
                             f"measure(s) {measures}")
        sub = sub[sub["name"].isin(names)]
    if len(names) < 2:
        raise InputError(f"column 'name' must hold at least 2 systems for measure(s) {measures}, "
                         f"found {names}")
    values = pd.to_numeric(sub["value"], errors="coerce")
    bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    n_bad = int(bad.sum())
    if n_bad:
        row = bad[bad].index[0]
        if missing == "error":
            raise InputError(f"column 'value', row {row}: {sub.loc[row, 'value']!r} is not a finite "
                             "number (pass missing='drop' to drop such topics)")
        sub = sub[~bad]
        values = values[~bad]
    sub = sub.assign(value=values.astype(float))
    dup = sub.duplicated(["name", "qid", "measure"])
    if dup.any():
        row = dup[dup].index[0]
        raise InputError(f"row {row}: duplicate value for name={sub.loc[row, 'name']!r}, "
                         f"qid={sub.loc[row, 'qid']!r}, measure={sub.loc[row, 'measure']!r}")
    wide = sub.pivot(index=["name", "measure"], columns="qid", values="value")
    full = pd.MultiIndex.from_product([names, measures], names=["name", "measure"])
    wide = wide.reindex(full)
    holes = wide.isna()
    if holes.to_numpy().any():
        if missing == "error":
            stacked = holes.stack()
            name, meas, qid = stacked[stacked].index[0]
            raise InputError(f"system {name!r} has no finite value for qid {qid!r}, measure "
                             f"{meas!r}; paired tests need every system on every topic "
                             "(pass missing='drop' to keep only topics common to all systems)")
        keep = ~holes.any(axis=0)
        dropped = int((~keep).sum())
        removed = int(wide.loc[:, ~keep].notna().to_numpy().sum()) + n_bad
        announce(f"pairwise_significance: dropped {dropped} topic(s) not scored with a finite "
                 f"value for every system and measure ({removed} values changed)")
        wide = wide.loc[:, keep]
    qids = [str(q) for q in wide.columns]
    arr = wide.to_numpy(dtype=float).reshape(len(names), len(measures), len(qids))
    return names, qids, np.moveaxis(arr, 1, 2)            # systems x topics x measures


def pairwise_significance(perquery: pd.DataFrame, measure: object = None, test: Test = "t",
                          alternative: Alternative = "two-sided",
                          correction: Correction | None = "holm", alpha: float = 0.05,
                          inclusive: bool = False, systems: Sequence[str] | None = None,
                          missing: Literal["error", "drop"] = "error", n_resamples: int = 10_000,
                          seed: int | np.random.Generator | None = 0) -> pd.DataFrame:
    """Pairwise p-values for every system pair from ``pt.Experiment(..., perquery=True)`` output.

    Runs :func:`all_pairs` for each measure and corrects within each measure's family of pairs.
    Each row also reports the number of topics and the standardised effect size
    ``mean(a - b) / sd(a - b)`` (Sakai's advice to report effect and sample sizes with p).

    Args:
        perquery: frame with columns ``name, qid, measure, value``.
        measure: a measure (ir_measures object or its string form), a list of them, or None
            for every measure in the frame.
        test: see :func:`paired_test`.
        alternative: see :func:`paired_test`; "greater" means ``sys_a`` > ``sys_b``.
        correction: ``"bonferroni"``, ``"holm"``, ``"fdr_bh"`` or None (then
            ``p_corrected == p_value``).
        alpha: significance level for the ``significant`` column (on ``p_corrected``).
        inclusive: significant iff ``p <= alpha`` instead of ``p < alpha``.
        systems: systems to compare, in this order (default: order of first appearance).
        missing: ``"error"`` (default) if a system lacks a topic, or ``"drop"`` to keep only
            topics scored for every system (announced).
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        Frame with columns ``measure, sys_a, sys_b, n_topics, mean_a, mean_b, mean_diff,
        effect_size, p_value, p_corrected, significant``.
    """
    if not isinstance(perquery, pd.DataFrame):
        raise InputError("perquery must be a pandas DataFrame in pt.Experiment(perquery=True) layout")
    absent = [c for c in _PERQUERY_COLUMNS if c not in perquery.columns]
    if absent:
        raise InputError(f"perquery frame is missing column(s) {absent}; expected the "
                         "pt.Experiment(perquery=True) layout with columns name, qid, measure, value")
    _choice("missing", missing, ("error", "drop"))
    if correction is not None:
        _choice("correction", correction, CORRECTIONS)
    _alpha(alpha)
    available = list(pd.unique(perquery["measure"].astype(str)))
    if measure is None:
        measures = available
    else:
        measures = [str(m) for m in (measure if isinstance(measure, (list, tuple)) else [measure])]
        unknown = [m for m in measures if m not in available]
        if unknown:
            raise InputError(f"measure(s) {unknown} not found in column 'measure'; "
                             f"available: {available}")
    if not measures:
        raise InputError("perquery frame has no rows")
    names, qids, x = _perquery_arrays(perquery, measures, None if systems is None else
                                      list(systems), missing)
    if len(qids) < 2:
        raise InputError(f"need at least 2 topics common to all systems, found {len(qids)}")
    i, j, p = all_pairs(x, test=test, alternative=alternative, n_resamples=n_resamples, seed=seed)
    p_corr = p if correction is None else correct_pvalues(p, correction, axis=0)
    d = x[i] - x[j]                                        # pairs x topics x measures
    mean_diff = d.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = mean_diff / d.std(axis=1, ddof=1)
    means = x.mean(axis=1)                                 # systems x measures
    n_pairs, n_meas = len(i), len(measures)
    frame = pd.DataFrame({
        "measure": np.tile(np.asarray(measures, dtype=object), n_pairs),
        "sys_a": np.repeat(np.asarray(names, dtype=object)[i], n_meas),
        "sys_b": np.repeat(np.asarray(names, dtype=object)[j], n_meas),
        "n_topics": len(qids),
        "mean_a": means[i].ravel(),
        "mean_b": means[j].ravel(),
        "mean_diff": mean_diff.ravel(),
        "effect_size": effect.ravel(),
        "p_value": p.ravel(),
        "p_corrected": p_corr.ravel(),
    })
    frame["significant"] = significant(frame["p_corrected"].to_numpy(), alpha, inclusive)
    order = {m: k for k, m in enumerate(measures)}
    return frame.sort_values("measure", key=lambda s: s.map(order), kind="stable") \
        .reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Yang (2019) Ch. 3 procedures

def degradation_test(orig: object, changed: object, delta: float = 0.01, test: Test = "t",
                     axis: int = -1, n_resamples: int = 10_000,
                     seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """One-tailed non-inferiority test: is ``changed`` better than ``(1 - delta) * orig``?

    Yang (2019), Ch. 3.3.4, Table 3.4: for each system, a paired t-test over topics with
    H1: changed > (1 - delta) * original; the system "passes" (no notable degradation) when
    p <= 0.05. Equivalent to ``ttest_rel(changed, (1 - delta) * orig, alternative="greater")``.

    Args:
        orig: per-topic scores before the change (e.g. original runs).
        changed: per-topic scores after it (e.g. banded runs); broadcast against ``orig``.
        delta: tolerated relative loss in [0, 1) (0.01 and 0.03 in Table 3.4).
        test: paired test, ``"t"`` in the thesis.
        axis: topic axis.
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        One-sided p-values (batch shape); count passes with ``(p <= 0.05).sum()``.
    """
    try:
        dl = float(delta)
    except (TypeError, ValueError):
        raise InputError(f"delta must be a number in [0, 1), got {delta!r}") from None
    if not 0.0 <= dl < 1.0:
        raise InputError(f"delta must be in [0, 1), got {delta!r}")
    orig_arr = _float_array("orig", orig)
    return paired_test(changed, (1.0 - dl) * orig_arr, test=test, alternative="greater",
                       axis=axis, n_resamples=n_resamples, seed=seed)


_QUADRANTS = ("both", "neither", "gained", "lost", "reversed")


def _quadrant_codes(p_orig: object, p_new: object, alpha: float, inclusive: bool,
                    diff_orig: object = None, diff_new: object = None) -> np.ndarray:
    """Per-element code 0..4 into ``_QUADRANTS`` (4 only when directions are given)."""
    po = np.asarray(p_orig, dtype=float)
    pn = np.asarray(p_new, dtype=float)
    if po.shape != pn.shape:
        raise InputError(f"p_orig (shape {po.shape}) and p_new (shape {pn.shape}) must have "
                         "the same shape")
    so = np.asarray(significant(po, alpha, inclusive))
    sn = np.asarray(significant(pn, alpha, inclusive))
    codes = np.where(so & sn, 0, np.where(~so & ~sn, 1, np.where(sn, 2, 3)))
    if (diff_orig is None) != (diff_new is None):
        raise InputError("give both diff_orig and diff_new (directions of the differences) or neither")
    if diff_orig is not None:
        do = np.asarray(diff_orig, dtype=float)
        dn = np.asarray(diff_new, dtype=float)
        if do.shape != po.shape or dn.shape != po.shape:
            raise InputError(f"diff_orig {do.shape} and diff_new {dn.shape} must have the "
                             f"p-values' shape {po.shape}")
        codes = np.where((codes == 0) & (np.sign(do) != np.sign(dn)), 4, codes)
    return codes


def pvalue_quadrants(p_orig: object, p_new: object, alpha: float = 0.05, inclusive: bool = False,
                     diff_orig: object = None, diff_new: object = None) -> pd.DataFrame:
    """How significance decisions change between two conditions (Yang 2019, Fig. 3.8 grid).

    Each element (a system pair, possibly per replicate) falls in one quadrant of the
    (p_orig, p_new) scatter at ``alpha``: significant under both (``"both"``, true positives in
    the thesis), under neither (``"neither"``), only under the new condition (``"gained"``) or
    only under the original (``"lost"``). If the signed mean differences are given, pairs
    significant under both but with opposite winners are counted as ``"reversed"``
    (Yang 2019, Ch. 4.8).

    Args:
        p_orig: p-values under the original condition (e.g. original runs or full qrels).
        p_new: p-values under the new condition, same shape.
        alpha: significance level.
        inclusive: significant iff ``p <= alpha`` (default ``p < alpha``).
        diff_orig: optional signed mean differences under the original condition.
        diff_new: optional signed mean differences under the new condition.

    Returns:
        Frame indexed by quadrant with columns ``count`` and ``fraction``.
    """
    codes = _quadrant_codes(p_orig, p_new, alpha, inclusive, diff_orig, diff_new)
    labels = _QUADRANTS if diff_orig is not None else _QUADRANTS[:4]
    counts = np.bincount(codes.ravel(), minlength=len(_QUADRANTS))[:len(labels)]
    total = max(int(codes.size), 1)
    return pd.DataFrame({"count": counts, "fraction": counts / total},
                        index=pd.Index(labels, name="quadrant"))
