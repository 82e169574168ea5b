"""The pooled model of the rectifier's variance under a stratified gold sample, shared by the
estimators of the linear measures, nDCG and AP: within a stratum each pair's residual is independent
of its known rank weight, so the variance of the Horvitz-Thompson total follows from the stratum's
moments (Cochran 1977, Eq 5.6), as a quadratic in PPI++'s ``lam``."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .design import GoldSample

#: below this many effective degrees of freedom the design-based variance is replaced by the pooled one
MIN_DESIGN_DF = 30.0


def _stratum_cross_moments(A: np.ndarray, s_all: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``x[k, h]``: the mean over stratum ``h`` of the product of the weights of runs ``i[k]`` and ``j[k]``
    (``A`` dense, runs x table rows), from one Gram matrix of the runs' weights per stratum."""
    H = int(s_all.max()) + 1
    sizes = np.bincount(s_all, minlength=H)
    x = np.zeros((len(i), H))
    order = np.argsort(s_all, kind="stable")
    As = A[:, order]
    bounds = np.r_[0, np.cumsum(sizes)]
    for h in np.flatnonzero(sizes):
        Ah = As[:, bounds[h]:bounds[h + 1]]
        x[:, h] = (Ah @ Ah.T)[i, j] / sizes[h]
    return x


def _residual_moments(sample: GoldSample, gy: np.ndarray, gh: np.ndarray) -> dict:
    """Per stratum of a stratified sample: the gold and cheap residuals' moments pooled over the stratum's
    sampled pairs (``mom``), the variance factor ``N_h^2 (1 - f_h) / n_h * N_h / (N_h - 1)`` (``c``), the
    sampling fraction ``f``, the sample sizes ``n`` and the pooled model's degrees of freedom ``df``."""
    s_all, s = sample.stratum_all, sample.stratum
    H = int(s_all.max()) + 1
    Nh = np.bincount(s_all, minlength=H).astype(np.float64)
    nh = np.bincount(s, minlength=H).astype(np.float64)
    cnt = np.maximum(nh, 1.0)
    mom = {k: np.bincount(s, weights=v, minlength=H) / cnt
           for k, v in (("y", gy), ("h", gh), ("yy", gy * gy), ("yh", gy * gh), ("hh", gh * gh))}
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(nh > 0, Nh ** 2 * (1 - nh / Nh) / nh * np.where(Nh > 1, Nh / (Nh - 1), 1.0), 0.0)
        f = np.where(Nh > 0, nh / Nh, 1.0)
    return dict(mom=mom, c=c, f=f, n=nh, df=max(float(nh.sum() - (nh > 0).sum()), 1.0))


def _unbiased_mean_products(pooled: dict) -> dict:
    """Per stratum, unbiased estimates of the products of the population means of the gold and cheap
    residuals (``yy``, ``yh``, ``hh``): ``xbar ybar - (1 - f_h) s_xy / n_h`` from the moments of
    :func:`_residual_moments`."""
    m, f, n = pooled["mom"], pooled["f"], pooled["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(n > 1, (1.0 - f) / (n - 1.0), 0.0)        # s^2 / n = (E[x^2] - xbar^2) / (n - 1)
    return {key: m[u] * m[v] - k * (m[uv] - m[u] * m[v])
            for key, u, v, uv in (("yy", "y", "y", "yy"), ("yh", "y", "h", "yh"), ("hh", "h", "h", "hh"))}


def _pooled_quadratics(pooled: dict) -> tuple[np.ndarray, np.ndarray]:
    """The pooled variance of the rectifier as a quadratic in ``lam``, ``a - 2 lam b + lam^2 c`` (columns
    ``a, b, c``), for every system and every pair.

    The model: within a stratum, each pair's residual ``g(gold) - lam g(cheap)`` is independent of its
    rank weight ``w`` (known for every pair), so the stratum's population variance of ``w r`` is
    ``E[w^2] E[r^2] - E[w]^2 E[r]^2`` and the variance of the Horvitz-Thompson total is
    ``sum_h N_h^2 (1 - f_h) / n_h * N_h / (N_h - 1) * (E[w^2] E[r^2] - E[w]^2 E[r]^2)`` (Cochran 1977,
    Eq 5.6).  ``E[r^2]`` is the stratum's sample mean of ``r^2`` and ``E[r]^2`` the unbiased estimate of
    the squared population mean, ``rbar^2 - (1 - f_h) s_r^2 / n_h``; so where the rank weights are
    constant within each stratum the estimate is the design-based (unbiased) one exactly."""
    m, sq = pooled["mom"], _unbiased_mean_products(pooled)
    out = []
    for w1, w2 in ((pooled["w1"], pooled["w2"]), (pooled["d1"], pooled["d2"])):
        coef = [((w2 * m[key] - w1 ** 2 * sq[key]) * pooled["c"]).sum(axis=1) for key in ("yy", "yh", "hh")]
        out.append(np.stack(coef, axis=1))
    return out[0], out[1]


def _quad_value(q: np.ndarray, lam: np.ndarray) -> np.ndarray:
    return np.maximum(q[:, 0] - 2 * lam * q[:, 1] + lam ** 2 * q[:, 2], 0.0)


def _quad_argmin(q: np.ndarray) -> np.ndarray:
    """The ``lam`` in [0, 1] that minimises ``a - 2 lam b + lam^2 c``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(q[:, 2] > 0, q[:, 1] / q[:, 2], 0.0), 0.0, 1.0)
