"""Paired significance tests over topics, vectorised over system pairs and replicates.

* :func:`paired_test` -- paired t, Wilcoxon signed-rank, sign, randomisation (permutation) and
  bootstrap tests over topics, two-sided or one-sided, broadcasting over any leading axes.
* :func:`all_pairs` -- every system pair of a ``systems x topics [x replicates]`` array; the
  two-sided t-test takes a Gram-matrix fast path (no ``pairs x replicates x topics`` array).

The resampling designs (sign flips, bootstrap multiplicities) are drawn once per call, seeded, and
shared by every pair and replicate, so there is no Python loop per pair or per replicate.
Corrections are in :mod:`.multiple`, Tukey's HSD in :mod:`.tukey`, intervals in :mod:`.intervals`
and the frame-level and thesis procedures in :mod:`.perquery`.

References: Yang (2019), PhD thesis, Ch. 2.4.2 and 3.3.4; Smucker, Allan & Carterette (CIKM 2007);
Sakai (SIGIR 2006).
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy import special as _special

from .._validation import InputError
from .._vocab import ALTERNATIVES, CORRECTIONS, TESTS, Alternative, Correction, Test
from ._checks import _block, _choice, _float_array, _n_resamples, _system_topic_array
from .multiple import correct_pvalues

__all__ = ["TESTS", "ALTERNATIVES", "PairwiseResult", "paired_test", "all_pairs", "PairwiseCodes",
           "all_pairs_t_codes", "p_codes"]

# pairs per block of the Gram-matrix t-test: temporaries of (versions x block) floats stay small
_PAIR_BLOCK_ELEMENTS = 1 << 22
# below this share of sum(x_a^2) + sum(x_b^2), a pair's sum of squared deviations is recomputed
# from the differences themselves (the Gram form would lose digits to cancellation)
_GRAM_RTOL = 1e-6


class PairwiseResult(NamedTuple):
    """Pairs ``(i[k], j[k])`` with ``i < j`` and their p-values ``pvalue[k, ...]``."""

    i: np.ndarray
    j: np.ndarray
    pvalue: np.ndarray



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


# ---------------------------------------------------------------------------------------------
# the tests, on differences d with topics on the last axis

def _p_t(d: np.ndarray, alternative: str) -> np.ndarray:
    # ttest_rel(a, b) is ttest_1samp(a - b, 0): scipy computes it exactly this way.
    from scipy import stats as _st   # on first use: scipy.stats is slow to import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(_st.ttest_1samp(d, 0.0, axis=-1, alternative=alternative).pvalue)


def _wilcoxon_method(d: np.ndarray) -> str:
    """scipy's ``method="auto"`` choice for a batch of differences, without its permutation test.

    scipy (>= 1.13) uses the exact null distribution when the batch has no zero difference and no
    tie among the absolute differences (and at most 50 topics), else the normal approximation with
    the tie and continuity corrections -- except that with ties or zeros and at most 13 topics it
    runs an exact permutation test (2^n evaluations of the statistic per element: tens of seconds
    for a few hundred pairs).  We take the normal approximation there too, as scipy itself does
    from 14 topics on; every other case is scipy's own choice, so larger samples are unchanged.
    (With at most 13 topics, all-zero differences keep the permutation test's p-value, 1.0.)
    """
    n = d.shape[-1]
    if n > 50:
        return "asymptotic"
    if (d == 0).any():
        return "asymptotic"
    a = np.sort(np.abs(d), axis=-1)
    return "asymptotic" if (a[..., 1:] == a[..., :-1]).any() else "exact"


def _p_wilcoxon(d: np.ndarray, alternative: str, zero_method: str) -> np.ndarray:
    from scipy import stats as _st   # on first use: scipy.stats is slow to import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        p = np.asarray(_st.wilcoxon(d, axis=-1, alternative=alternative, zero_method=zero_method,
                                    method=_wilcoxon_method(d)).pvalue)
    if d.shape[-1] <= 13:   # where scipy's permutation test would give 1.0 to all-zero differences
        p = np.where((d == 0).all(axis=-1), 1.0, p)
    return p


def _p_sign(d: np.ndarray, alternative: str) -> np.ndarray:
    # The sign test is scipy.stats.binomtest(n_pos, n_pos + n_neg, 0.5), which is scalar-only;
    # with p = 0.5 its tails are the binomial cdf/sf, which scipy.stats.binom evaluates for
    # every pair and replicate at once. Zero differences are dropped, as binomtest users do.
    from scipy import stats as _st   # on first use: scipy.stats is slow to import
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
    * ``"wilcoxon"``: Wilcoxon signed-rank test (``scipy.stats.wilcoxon``): the exact null
      distribution when no difference is zero and no two absolute differences tie (up to 50
      topics), otherwise the normal approximation with scipy's tie and continuity corrections --
      also below 14 topics, where scipy would run a slow permutation test; ``zero_method`` as in
      scipy.  The choice is made for the whole batch, as scipy makes it.
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


def all_pairs(scores: object, test: Test = "t", alternative: Alternative = "two-sided",
              correction: Correction | None = None, n_resamples: int = 10_000,
              seed: int | np.random.Generator | None = 0,
              zero_method: str = "wilcox") -> PairwiseResult:
    """Paired test for every pair of systems, vectorised over pairs and replicates.

    The all-pairs comparison behind the discrimination ratio (Yang 2019, Ch. 4.6, Table 4.5)
    and the p-value grids of Ch. 3.3.4. For pair ``(i, j)`` with ``i < j`` the test is
    ``paired_test(scores[i], scores[j])``, so ``alternative="greater"`` means system ``i`` is
    better. One seeded resampling design is shared by all pairs and replicates.

    The two-sided t-test (the default) is computed from per-replicate Gram matrices instead of
    the differences of every pair (see :func:`_all_pairs_t_gram`); its p-values agree with
    ``scipy.stats.ttest_rel`` to about 1e-9 relative.  Every other test and alternative is
    computed from the differences, a block of pairs at a time.

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
    if test == "t" and alternative == "two-sided":
        out = _all_pairs_t_gram(x.reshape(x.shape[0], x.shape[1], -1)).reshape((-1,) + x.shape[2:])
        i, j = np.triu_indices(x.shape[0], 1)
        if correction is not None:
            out = correct_pvalues(out, correction, axis=0)
        return PairwiseResult(i, j, out)
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


def _gram_t_blocks(x: np.ndarray):
    """The Gram-matrix paired t statistics of every system pair, a block of pairs at a time:
    ``(S, T, K)`` scores -> yields ``(b0, b1, t, k, q, p_exact)`` with ``t`` of shape
    ``(K, b1 - b0)`` for pairs ``b0 .. b1 - 1`` (``numpy.triu_indices`` order) and the entries
    ``(k, q)`` whose t the Gram form would get wrong (nearly identical systems), with their
    p-values ``p_exact`` computed from the differences as scipy does.

    ``sum_t (a_t - b_t)^2 = sum a^2 + sum b^2 - 2 sum ab`` (one batched matrix product), so no
    ``pairs x K x T`` array of differences is built."""
    S, T, K = x.shape
    A = np.ascontiguousarray(np.moveaxis(x, 2, 0))           # (K, S, T)
    mean = A.mean(axis=2)                                    # (K, S)
    sq = np.einsum("kst,kst->ks", A, A)                      # (K, S)
    # a contiguous transpose keeps the batched product on BLAS (a transposed view does not)
    gram = A @ np.ascontiguousarray(A.transpose(0, 2, 1))   # (K, S, S)
    gram = gram.reshape(K, S * S)
    i, j = np.triu_indices(S, 1)
    step = max(1, _PAIR_BLOCK_ELEMENTS // max(K, 1))
    for b0 in range(0, len(i), step):                        # blocks of pairs, not single pairs
        bi, bj = i[b0:b0 + step], j[b0:b0 + step]
        # in place, in the order of ss = scale - 2 gram - T dm dm and t = dm / sqrt(max(ss, 0) / ((T - 1) T))
        # (the same operations, so the same values, with fewer temporaries of size K x block)
        dm = mean[:, bi]
        dm -= mean[:, bj]                                     # (K, block)
        scale = sq[:, bi]
        scale += sq[:, bj]
        ss = gram[:, bi * S + bj]
        ss *= 2.0
        np.subtract(scale, ss, out=ss)
        tmp = T * dm
        tmp *= dm
        ss -= tmp                                             # sum of squared deviations of a - b
        with np.errstate(divide="ignore", invalid="ignore"):
            np.maximum(ss, 0.0, out=tmp)
            tmp /= (T - 1) * T
            np.sqrt(tmp, out=tmp)
            t = np.divide(dm, tmp, out=tmp)
        scale *= _GRAM_RTOL
        exact = ss <= scale
        k = q = p_exact = None
        if exact.any():
            k, q = np.nonzero(exact)
            d = A[k, bi[q]] - A[k, bj[q]]                     # (n, T) differences of those only
            p_exact = _p_t(d, "two-sided")
        yield b0, b0 + len(bi), t, k, q, p_exact


def _p_two_sided(df: int, t: np.ndarray) -> np.ndarray:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom: ``2 F(-|t|)``, the one
    expression every path of the Gram t-test uses (so they agree bit for bit)."""
    with np.errstate(invalid="ignore"):
        return 2.0 * _special.stdtr(df, -np.abs(t))


def _all_pairs_t_gram(x: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test p-values of every system pair (``numpy.triu_indices`` order) in
    every version: ``(S, T, K)`` scores -> ``(pairs, K)``.

    Student's paired t-test (``scipy.stats.ttest_rel``) computed from per-version Gram matrices
    (:func:`_gram_t_blocks`), so an all-pairs test over many replicates costs little next to the
    evaluation kernels.  Where the Gram subtraction would cancel -- pairs of nearly identical
    systems -- the p-value is computed from the differences as scipy does, so every p-value
    agrees with scipy to about 1e-9 relative, and identical systems get NaN as scipy gives.
    """
    S, T, K = x.shape
    out = np.empty((S * (S - 1) // 2, K))
    for b0, b1, t, k, q, p_exact in _gram_t_blocks(x):
        p = _p_two_sided(T - 1, t)
        if k is not None:
            p[k, q] = p_exact
        out[b0:b1] = p.T
    return out


class PairwiseCodes(NamedTuple):
    """Pairs ``(i[k], j[k])`` with ``i < j`` and where each p-value falls among the cuts:
    ``code[k, ...]`` (see :func:`all_pairs_t_codes`)."""

    i: np.ndarray
    j: np.ndarray
    code: np.ndarray


def p_codes(p: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Where p-values fall among sorted ``cuts``: ``2 k`` when exactly ``k`` cuts are below ``p``
    and none equals it, ``2 k + 1`` when ``p`` equals ``cuts[k]``, -1 for NaN (int16)."""
    p = np.asarray(p, dtype=np.float64)
    code = np.searchsorted(cuts, p, side="left") + np.searchsorted(cuts, p, side="right")
    return np.where(np.isnan(p), -1, code).astype(np.int16)


#: relative margin around each critical |t| within which the p-value itself is computed
_T_MARGIN = 1e-9
#: |t| at or below this may give p == 1 exactly; such entries take the p-value path
_T_SMALL = 1e-6


def _critical_t(df: int, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Critical |t| of every cut strictly inside (0, 1) (``p > c`` exactly when ``|t| < t_c``),
    the relative margin around each, and the |t| above which p may underflow to 0.

    Each critical value comes from the inverse CDF (``scipy.special.stdtrit``) and is checked
    with the CDF itself: the p-value at ``t_c (1 + margin)`` must lie below the cut and at
    ``t_c (1 - margin)`` above it, else the margin widens (it stays about 1e-9 in practice)."""
    inner = cuts[(cuts > 0.0) & (cuts < 1.0)]
    with np.errstate(invalid="ignore"):
        tc = -_special.stdtrit(df, inner / 2.0)
    margin = np.full(len(inner), _T_MARGIN)
    for n, (c, t0) in enumerate(zip(inner, tc)):
        while not (_p_two_sided(df, t0 * (1 + margin[n])) < c < _p_two_sided(df, t0 * (1 - margin[n]))):
            margin[n] = max(margin[n] * 10.0, 1e-15)
            if margin[n] > 0.5:
                raise AssertionError(f"no critical t for cut {c} at {df} degrees of freedom")
    big = -float(_special.stdtrit(df, 1e-250))            # p(|t|) >= 2e-250 > 0 below this
    if not _p_two_sided(df, big) > 0.0:
        raise AssertionError(f"no safe upper |t| at {df} degrees of freedom")
    return tc, margin, big


def all_pairs_t_codes(scores: object, cuts: object) -> PairwiseCodes:
    """Where the two-sided paired t-test p-value of every system pair falls among ``cuts``,
    without computing most p-values.

    The decisions a robustness analysis needs -- is ``p < alpha``, which p band holds ``p`` --
    depend only on where ``p`` falls among a few cuts.  The p-value of Student's t-test falls
    as ``|t|`` grows, so it is compared with the critical value ``t_c`` of each cut (``p > c``
    exactly when ``|t| < t_c``), computed once, instead of evaluating the t CDF for every pair
    and replicate.  Entries whose ``|t|`` lies within a relative 1e-9 of a critical value (the
    boundary), at most 1e-6 (p may be exactly 1), beyond the |t| where p could underflow to 0,
    or not finite, and the pairs the Gram form computes from the differences, take the p-value
    of :func:`all_pairs` itself: every code is the one :func:`p_codes` gives for
    ``all_pairs(scores).pvalue``, ties at a cut included (``p == cut`` is its own code).

    Args:
        scores: array ``systems x topics`` or ``systems x topics x replicates [x ...]``.
        cuts: increasing p-value cuts (e.g. the significance level and the edges of p bands).

    Returns:
        ``PairwiseCodes(i, j, code)``: pairs as :func:`all_pairs` orders them and ``code`` of
        shape ``(pairs, *replicates)`` (int16): ``2 k`` when exactly ``k`` cuts are below ``p``
        and none equals it, ``2 k + 1`` when ``p == cuts[k]``, -1 when the test is undefined
        (identical systems: NaN p-value).  ``(code + 1) // 2`` cuts are at or below ``p``;
        ``code // 2`` are strictly below it.
    """
    x = _system_topic_array(scores)
    c = np.asarray(cuts, dtype=np.float64).ravel()
    if len(c) == 0 or not np.isfinite(c).all() or (np.diff(c) <= 0).any():
        raise InputError(f"cuts must be finite and strictly increasing, got {c.tolist()}")
    S, T = x.shape[0], x.shape[1]
    xs = x.reshape(S, T, -1)
    df = T - 1
    tc, margin, big = _critical_t(df, c)
    n_low = int((c <= 0.0).sum())                        # cuts every p in (0, 1) is above
    out = np.empty((S * (S - 1) // 2, xs.shape[2]), dtype=np.int16)
    for b0, b1, t, k, q, p_exact in _gram_t_blocks(xs):
        a = np.abs(t)
        with np.errstate(invalid="ignore"):
            slow = ~(a > _T_SMALL) | ~(a < big)          # NaN, inf, tiny, or possibly p == 0
            above = np.full(a.shape, n_low, dtype=np.int16)
            for t0, m in zip(tc, margin):
                above += a < t0                          # p > cut  <=>  |t| < t_c
                slow |= np.abs(a - t0) <= m * t0
        code = 2 * above
        if k is not None:
            slow[k, q] = False
            code[k, q] = p_codes(p_exact, c)
        if slow.any():
            kk, qq = np.nonzero(slow)
            code[kk, qq] = p_codes(_p_two_sided(df, t[kk, qq]), c)
        out[b0:b1] = code.T
    i, j = np.triu_indices(S, 1)
    return PairwiseCodes(i, j, out.reshape((-1,) + x.shape[2:]))
