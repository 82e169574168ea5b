"""Tukey's honestly significant difference test over all systems: topic-blocked ANOVA, one-way,
or Carterette's (TOIS 2012) randomised version."""
from __future__ import annotations

import warnings

import numpy as np

from .._vocab import TukeyMethod
from ._checks import _block, _choice, _n_resamples, _system_topic_array
from .tests import PairwiseResult

__all__ = ["tukey_hsd"]

_SR_EXACT_MAX = 128   # up to this many q values, scipy's exact (slow) sf for each
_SR_GRID = 129        # otherwise exact on this many grid points, then interpolated

def _studentized_range_sf(q: np.ndarray, k: int, df: float) -> np.ndarray:
    """Survival function of the studentized range, fast for many q values.

    ``scipy.stats.studentized_range.sf`` integrates numerically for every value, so
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
    from scipy import stats as _st   # on first use: scipy.stats is slow to import
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


def tukey_hsd(scores: object, method: TukeyMethod = "blocked",
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


