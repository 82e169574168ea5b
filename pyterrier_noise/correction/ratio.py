"""nDCG@k under the pair design: a ratio estimator with a linearised (Taylor) variance.

Per topic ``t``, nDCG@k is ``DCG_rt / IDCG_t``.  ``DCG_rt`` is linear in the per-document gains, so
the rectifier of the linear measures estimates it: ``lam DCG_rt(cheap) + HT_t(w (g(gold) - lam
g(cheap)))``.  ``IDCG_t`` depends on the topic's number of judged documents of each grade, ``N_tg``;
the same difference estimator gives ``lam N_tg(cheap) + HT_t(1[gold = g] - lam 1[cheap = g])``, and
the ideal DCG of those (non-negative) counts is plugged in.  The per-topic ratio is a ratio
estimator in the sense of Sarndal, Swensson and Wretman (1992, Ch 5 and 7): consistent, with a bias
of order ``1 / n``.  The system's estimate is the mean over topics of the per-topic ratios.

Its variance comes from the linearisation: a sampled pair ``i`` of topic ``t`` contributes
``(w_ri e_i - nDCG_rt u_i) / (T IDCG_t)`` to the estimate, with ``e_i = g(gold) - lam g(cheap)``
and ``u_i = c_t(gold) - lam c_t(cheap)``, where ``c_t(g) = dIDCG_t / dN_tg`` (piecewise constant in
the counts, 0 once the topic has ``k`` documents of the higher grades).  These contributions go
through the machinery of the linear measures: the Horvitz-Thompson variance of the design
(:func:`~pyterrier_noise.correction.design.ht_covariance`), or, where it rests on few terms, the
pooled model of the stratified design (residuals independent of the known weights within a
stratum), generalised to a vector of residuals: the gain and the indicator of each grade.

The ideal DCG of fractional counts interpolates linearly between ranks (the discount of rank
``floor(x) + 1`` for the part of a document at position ``x``), so it equals trec_eval's ideal DCG at
integer counts and its derivative is the discount of the next free rank.  A topic whose estimated
counts show any relevant document gets an ideal DCG of at least one document of the lowest grade
(without it, counts estimated near 0 made the ratio explode).  The grade counts' cheap prediction is
``P(gold grade | cheap grade)`` fitted on the gold sample (weighted by ``1 / pi``), so the count
estimator is a model-assisted difference estimator (Sarndal, Swensson and Wretman 1992, Ch 6).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from .._validation import InputError
from ..engine import MeasureSpec
from ._common import measure_gains
from ._pooled import MIN_DESIGN_DF, _quad_argmin, _quad_value
from .design import GoldSample, ht_covariance, ht_df

if TYPE_CHECKING:  # pragma: no cover
    from .estimators import CheapStudy

__all__ = ["ideal_from_counts", "ndcg_pair_design", "linearised_methods", "RATIO_FAMILIES"]

#: measures estimated under the pair design by this module
RATIO_FAMILIES = ("nDCG",)


def _cumulative_discount(x: np.ndarray, cutoff: int) -> tuple[np.ndarray, np.ndarray]:
    """``D(x)``, the discount summed over the first ``x`` ranks (linear between ranks, constant after
    ``cutoff``), and its derivative ``d_{floor(x) + 1}`` (0 at and beyond ``cutoff``)."""
    x = np.clip(x, 0.0, float(cutoff))
    disc = 1.0 / np.log2(np.arange(cutoff + 1, dtype=np.float64) + 2.0)     # d_1 .. d_{k+1}
    csum = np.concatenate([[0.0], np.cumsum(disc)])
    fl = np.floor(x).astype(np.int64)
    nxt = np.where(fl < cutoff, disc[np.minimum(fl, cutoff)], 0.0)
    return csum[fl] + (x - fl) * nxt, nxt


def ideal_from_counts(counts: Any, gains_desc: Any, cutoff: int) -> tuple[np.ndarray, np.ndarray]:
    """Ideal DCG@cutoff (Jarvelin and Kekalainen 2002) of a topic with ``counts[..., g]`` documents of
    gain ``gains_desc[g]`` (positive, decreasing), and its derivative with respect to each count.

    ``IDCG = sum_g (v_g - v_{g+1}) D(C_g)`` with ``C_g`` the number of documents of gain ``v_g`` or
    more and ``D`` the cumulative discount; negative counts count as 0.  Returns ``(idcg, grad)``
    shaped ``(...)`` and ``(..., G)``.
    """
    v = np.asarray(gains_desc, dtype=np.float64)
    n = np.maximum(np.asarray(counts, dtype=np.float64), 0.0)
    if v.ndim != 1 or n.shape[-1:] != v.shape:
        raise InputError(f"counts must end with one count per gain ({len(v)}), got shape {n.shape}")
    if v.size and ((v <= 0).any() or (np.diff(v) >= 0).any()):
        raise InputError(f"gains must be positive and decreasing, got {v}")
    step = v - np.r_[v[1:], 0.0]                               # v_g - v_{g+1}
    C = np.cumsum(n, axis=-1)
    D, dD = _cumulative_discount(C, int(cutoff))
    idcg = (step * D).sum(axis=-1)
    # dIDCG / dN_h = sum_{g >= h} step_g D'(C_g), zero for a count clipped at 0 from below
    grad = np.flip(np.cumsum(np.flip(step * dD, axis=-1), axis=-1), axis=-1)
    grad = np.where(np.asarray(counts) < 0, 0.0, grad)
    if v.size:    # a topic with any relevant document has at least one: its ideal DCG is at least v_min
        floor = (C[..., -1] > 0) & (idcg < v[-1])
        idcg = np.where(floor, v[-1], idcg)
        grad = np.where(floor[..., None], 0.0, grad)
    return idcg, grad


class _Parts:
    """What every method shares: the cheap values, the Horvitz-Thompson totals, the linearisation's
    building blocks."""

    def __init__(self, study: "CheapStudy", spec: MeasureSpec, cheap: np.ndarray, gold: np.ndarray,
                 sample: GoldSample, calibrate: bool = True) -> None:
        R, T = study.n_runs, study.n_topics
        rows, pi = sample.rows, sample.pi
        if gold.shape != rows.shape:
            raise InputError(f"gold labels must be one per sampled pair ({len(rows)}), got shape {gold.shape}")
        W = study.W_ratio[spec]                                  # (runs x topics, table rows)
        g_all = measure_gains(cheap, spec)
        gy, gh = measure_gains(gold, spec), g_all[rows]
        self.v = v = np.unique(np.concatenate([g_all[g_all > 0], gy[gy > 0]]))[::-1]
        G = len(v)
        self.cutoff = spec.cutoff if spec.cutoff is not None else int(np.diff(study.aligned.table.topic_start).max())
        topic = study.row_topic
        t_s = topic[rows]

        def grade(g: np.ndarray) -> np.ndarray:        # index into v, G for gain 0
            idx = np.searchsorted(-v, -g)
            return np.where(g > 0, idx, G)

        self.iy, self.ih = grade(gy), grade(gh)
        ia = grade(g_all)
        # the cheap judge's prediction of each grade's indicator: P(gold grade g | cheap grade), fitted on
        # the gold sample (weighted by 1 / pi), the identity for a cheap grade the sample does not hold
        fit = np.zeros((G + 1, G + 1))
        np.add.at(fit, (self.ih, self.iy), 1 / pi)
        tot = fit.sum(axis=1, keepdims=True)
        self.m = np.where(tot > 0, fit / np.where(tot > 0, tot, 1.0), np.eye(G + 1))[:, :G] if calibrate \
            else np.eye(G + 1)[:, :G]
        self.mh = self.m[self.ih]                                             # (n, G)
        ones = sparse.csr_matrix((np.ones(len(topic)), (topic, np.arange(len(topic)))), shape=(T, len(topic)))
        self.Nc = np.asarray(ones @ self.m[ia])
        self.Ey = np.bincount(t_s * (G + 1) + self.iy, weights=1 / pi, minlength=T * (G + 1)).reshape(T, G + 1)[:, :G]
        self.Eh = np.asarray(ones[:, rows] @ (self.mh / pi[:, None]))
        self.DCGc = (W @ g_all).reshape(R, T)
        Ws = W[:, rows]
        self.HTy = (Ws @ (gy / pi)).reshape(R, T)
        self.HTh = (Ws @ (gh / pi)).reshape(R, T)
        # weight of each sampled pair in each run's ranking of its topic: (runs, n)
        self.w = np.asarray(Ws.toarray().reshape(R, T, len(rows)).sum(axis=1))
        self.gy, self.gh, self.t_s = gy, gh, t_s
        self.R, self.T, self.G = R, T, G

    def values(self, lam: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-topic nDCG estimates of ``runs`` ``(X, T)`` at ``lam`` ``(X,)``, with each topic's ideal
        ``(X, T)`` and its gradient ``(X, T, G)``."""
        lam = np.asarray(lam, dtype=np.float64)[:, None]
        dcg = lam * (self.DCGc[runs] - self.HTh[runs]) + self.HTy[runs]
        counts = lam[:, :, None] * (self.Nc - self.Eh)[None] + self.Ey[None]
        ideal, grad = ideal_from_counts(counts, self.v, self.cutoff)
        with np.errstate(divide="ignore", invalid="ignore"):
            nd = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)
        return nd, ideal, grad

    def per_topic(self, lam: np.ndarray, runs: np.ndarray) -> np.ndarray:
        """Per-topic nDCG estimates of ``runs`` ``(X, T)`` at ``lam`` ``(X,)``."""
        return self.values(lam, runs)[0]

    def influence(self, lam: float) -> tuple[np.ndarray, np.ndarray, dict]:
        """The linearised contributions ``Zy, Zh`` ``(n, runs)`` of the sampled pairs' gold and cheap
        labels, at the estimate with ``lam`` (one for every run), and the point's ``alpha, beta, c``."""
        nd, ideal, grad = self.values(np.full(self.R, lam), np.arange(self.R))
        ideal, grad = ideal[0], grad[0]                   # the ideal does not depend on the run
        with np.errstate(divide="ignore"):
            alpha = np.where(ideal > 0, 1.0 / (self.T * np.where(ideal > 0, ideal, 1.0)), 0.0)   # (T,)
        beta = nd * alpha                                                                      # (R, T)
        cpad = np.concatenate([grad, np.zeros((self.T, 1))], axis=1)                           # grade G: gain 0
        a = self.w * alpha[self.t_s]                                                           # (R, n)
        b = beta[:, self.t_s]
        Zy = (a * self.gy - b * cpad[self.t_s, self.iy]).T
        Zh = (a * self.gh - b * (grad[self.t_s] * self.mh).sum(axis=1)).T
        return Zy, Zh, dict(alpha=alpha, beta=beta, c=grad, nd=nd)


def _aggregates(study: "CheapStudy", spec: MeasureSpec, s_all: np.ndarray) -> dict:
    """Population sums of the runs' rank weights per (topic, stratum): ``W1, W2`` ``(R, T, H)``, the pairs'
    cross products ``X`` ``(P, T, H)`` and the counts ``n`` ``(T, H)`` (kept per design)."""
    key = (spec, s_all.tobytes())
    cache = study.ratio_cache
    if key in cache:
        return cache[key]
    R, T = study.n_runs, study.n_topics
    H = int(s_all.max()) + 1
    N = len(s_all)
    cell = study.row_topic * H + s_all
    onehot = sparse.csr_matrix((np.ones(N), (np.arange(N), cell)), shape=(N, T * H))
    D = study.D_ratio[spec]                                          # (R, N) sparse rank weights
    W1 = np.asarray((D @ onehot).todense()).reshape(R, T, H)
    W2 = np.asarray((D.multiply(D) @ onehot).todense()).reshape(R, T, H)
    P = len(study.i)
    X = np.empty((P, T * H))
    for lo in range(0, P, 2000):     # chunks of pairs of runs: sparse products of their rank weights
        i, j = study.i[lo:lo + 2000], study.j[lo:lo + 2000]
        X[lo:lo + 2000] = np.asarray((D[i].multiply(D[j]) @ onehot).todense())
    out = dict(W1=W1, W2=W2, X=X.reshape(P, T, H), n=np.bincount(cell, minlength=T * H).reshape(T, H).astype(float))
    if len(cache) > 8:
        cache.clear()
    cache[key] = out
    return out


def _pooled_quadratics(parts: _Parts, agg: dict, point: dict, sample: GoldSample, study: "CheapStudy") -> tuple:
    """The pooled variance of the linearised estimate as a quadratic in ``lam``, ``a - 2 lam b + lam^2 c``
    (columns), for systems and pairs: within a stratum the residual vector (gain, grade indicators)
    is independent of the known weight vector (``alpha_t w``, ``-beta_rt c_tg``), so the stratum's
    population variance is ``sum_kl E[a_k a_l] E[r_k r_l] - E[a_k] E[a_l] E[r_k] E[r_l]`` (Cochran
    1977, Eq 5.6, as for the linear measures)."""
    s_all, s = sample.stratum_all, sample.stratum
    H = agg["n"].shape[1]
    Nh = np.bincount(s_all, minlength=H).astype(np.float64)
    nh = np.bincount(s, minlength=H).astype(np.float64)
    G, K = parts.G, parts.G + 1
    alpha, beta, c = point["alpha"], point["beta"], point["c"]
    W1, W2, X, nth = agg["W1"], agg["W2"], agg["X"], agg["n"]

    def weight_moments(bt: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``M`` ``(X, H, K, K)`` and ``m`` ``(X, H, K)``: sums over the stratum of the weight products."""
        X_ = bt.shape[0]
        M = np.empty((X_, H, K, K))
        m = np.empty((X_, H, K))
        M[:, :, 0, 0] = np.einsum("t,xth->xh", alpha ** 2, w2)
        cross = -np.einsum("t,xt,tg,xth->xhg", alpha, bt, c, w1)
        M[:, :, 0, 1:] = cross
        M[:, :, 1:, 0] = cross
        M[:, :, 1:, 1:] = np.einsum("xt,tg,tk,th->xhgk", bt ** 2, c, c, nth)
        m[:, :, 0] = np.einsum("t,xth->xh", alpha, w1)
        m[:, :, 1:] = -np.einsum("xt,tg,th->xhg", bt, c, nth)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(Nh > 0, 1.0 / Nh, 0.0)
        return M * inv[None, :, None, None], m * inv[None, :, None]

    sysM = weight_moments(beta, W1, W2)
    i, j = study.i, study.j
    pairM = weight_moments(beta[i] - beta[j], W1[i] - W1[j], W2[i] + W2[j] - 2 * X)

    def features(g: np.ndarray, idx: np.ndarray) -> np.ndarray:
        f = np.zeros((len(g), K))
        f[:, 0] = g
        ok = idx < G
        f[np.flatnonzero(ok), 1 + idx[ok]] = 1.0
        return f

    fy, fh = features(parts.gy, parts.iy), np.concatenate([parts.gh[:, None], parts.mh], axis=1)
    S = sparse.csr_matrix((np.ones(len(s)), (s, np.arange(len(s)))), shape=(H, len(s)))
    cnt = np.maximum(nh, 1.0)
    mean = {"y": (S @ fy) / cnt[:, None], "h": (S @ fh) / cnt[:, None]}
    second = {k: np.einsum("hn,nk,nl->hkl", S.toarray(), a, b) / cnt[:, None, None]
              for k, (a, b) in {"yy": (fy, fy), "yh": (fy, fh), "hh": (fh, fh)}.items()}
    second["yh"] = 0.5 * (second["yh"] + np.swapaxes(second["yh"], 1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        k_ = np.where(nh > 1, (1.0 - nh / Nh) / (nh - 1.0), 0.0)
        ch = np.where(nh > 0, Nh ** 2 * (1 - nh / Nh) / nh * np.where(Nh > 1, Nh / (Nh - 1), 1.0), 0.0)
    prod = {}
    for key, u, w in (("yy", "y", "y"), ("yh", "y", "h"), ("hh", "h", "h")):
        mm = np.einsum("hk,hl->hkl", mean[u], mean[w])
        if key == "yh":
            mm = 0.5 * (mm + np.swapaxes(mm, 1, 2))
        prod[key] = mm - k_[:, None, None] * (second[key] - mm)      # unbiased products of the means
    out = []
    for M, m in (sysM, pairM):
        coef = [(ch * (np.einsum("xhkl,hkl->xh", M, second[key])
                       - np.einsum("xhk,xhl,hkl->xh", m, m, prod[key]))).sum(axis=1) for key in ("yy", "yh", "hh")]
        out.append(np.stack(coef, axis=1))
    return out[0], out[1], max(float(nh.sum() - (nh > 0).sum()), 1.0)


def ndcg_pair_design(study: "CheapStudy", spec: MeasureSpec, cheap: np.ndarray, gold: np.ndarray,
                     sample: GoldSample, methods: tuple[str, ...], scope: str, systems: dict, pairs: dict,
                     df: dict, tv: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """gold-only, PPI and PPI++ estimates of nDCG@k under the pair design (see the module doc), written
    into ``systems``, ``pairs``, ``df`` and ``tv`` as the linear measures' are; returns PPI++'s ``lam``.

    ``gold``: lam = 0 (the ratio of Horvitz-Thompson estimates); ``ppi``: lam = 1; ``ppi++``: the
    ``lam`` in [0, 1] that minimises the linearised variance at the PPI estimate."""
    parts = _Parts(study, spec, cheap, gold, sample)
    pooled = study.variance == "pooled" and sample.stratum_all is not None
    agg = _aggregates(study, spec, sample.stratum_all) if pooled else None
    quadratics = (lambda point: _pooled_quadratics(parts, agg, point, sample, study)) if pooled else None
    return linearised_methods(study, parts, sample, methods, scope, systems, pairs, df, tv, quadratics)


def linearised_methods(study: "CheapStudy", parts: Any, sample: GoldSample, methods: tuple[str, ...], scope: str,
                       systems: dict, pairs: dict, df: dict, tv: dict,
                       quadratics: Any = None) -> tuple[np.ndarray, np.ndarray] | None:
    """gold-only (lam = 0), PPI (lam = 1) and PPI++ estimates of a measure that is a smooth function of
    Horvitz-Thompson totals, with the variance of its linearisation (Woodruff 1971; Deville 1999).

    ``parts`` gives ``influence(lam) -> (Zy, Zh, point)``, the linearised contributions ``(n, runs)`` of
    the sampled pairs' gold labels and of the cheap prediction at the estimate with ``lam`` (the
    estimate moves by ``HT(Zy - lam Zh)``), and ``per_topic(lam, runs) -> (X, topics)``, the per-topic
    estimates of ``runs`` at one ``lam`` each.  ``quadratics(point)`` (or None) gives the pooled
    model's variance as quadratics in ``lam`` for systems and pairs, and its degrees of freedom; it
    replaces the design-based variance where that rests on fewer than ``MIN_DESIGN_DF`` effective
    terms.  PPI++'s ``lam`` minimises the linearised variance at the PPI point, per system and pair.
    Writes ``systems``, ``pairs``, ``df`` and ``tv`` as the linear measures' are; returns PPI++'s ``lam``."""
    R, P, T = study.n_runs, len(study.i), study.n_topics
    i, j = study.i, study.j
    lam_out = None
    for m, lam0 in (("gold", 0.0), ("ppi", 1.0), ("ppi++", 1.0)):
        if m not in methods:
            continue
        Zy, Zh, point = parts.influence(lam0)
        C = ht_covariance(np.concatenate([Zy, Zh], axis=1), sample)
        Cyy, Cyh, Chh = C[:R, :R], 0.5 * (C[:R, R:] + C[R:, :R].T), C[R:, R:]

        def contrast(M: np.ndarray) -> np.ndarray:
            return M[i, i] + M[j, j] - M[i, j] - M[j, i]

        dyy, dyh, dhh = np.diag(Cyy), np.diag(Cyh), np.diag(Chh)
        pyy, pyh, phh = contrast(Cyy), contrast(Cyh), contrast(Chh)
        if m == "ppi++":
            with np.errstate(divide="ignore", invalid="ignore"):
                ls = np.clip(np.where(dhh > 0, dyh / dhh, 0.0), 0.0, 1.0)
                lp = np.clip(np.where(phh > 0, pyh / phh, 0.0), 0.0, 1.0)
        else:
            ls, lp = np.full(R, lam0), np.full(P, lam0)
        quad = quadratics(point) if quadratics is not None else None
        dfs = ht_df(Zy - ls * Zh, sample)
        dfp = ht_df((Zy[:, i] - Zy[:, j]) - lp * (Zh[:, i] - Zh[:, j]), sample)
        if quad is not None:
            use_s, use_p = dfs < MIN_DESIGN_DF, dfp < MIN_DESIGN_DF
            if m == "ppi++":
                ls, lp = np.where(use_s, _quad_argmin(quad[0]), ls), np.where(use_p, _quad_argmin(quad[1]), lp)
                dfs = np.where(use_s, dfs, ht_df(Zy - ls * Zh, sample))
                dfp = np.where(use_p, dfp, ht_df((Zy[:, i] - Zy[:, j]) - lp * (Zh[:, i] - Zh[:, j]), sample))
        var = dyy - 2 * ls * dyh + ls ** 2 * dhh
        dvar = pyy - 2 * lp * pyh + lp ** 2 * phh
        if quad is not None:
            var = np.where(use_s, _quad_value(quad[0], ls), var)
            dvar = np.where(use_p, _quad_value(quad[1], lp), dvar)
            dfs, dfp = np.where(use_s, quad[2], dfs), np.where(use_p, quad[2], dfp)
        per_s = parts.per_topic(ls, np.arange(R))
        per_p = parts.per_topic(lp, i) - parts.per_topic(lp, j)
        tv[m] = (per_s.var(axis=1, ddof=1) / T, per_p.var(axis=1, ddof=1) / T)
        if scope == "topics":
            var, dvar = var + tv[m][0], dvar + tv[m][1]
        systems[m] = (per_s.mean(axis=1), np.sqrt(np.maximum(var, 0.0)))
        pairs[m] = (per_p.mean(axis=1), np.sqrt(np.maximum(dvar, 0.0)))
        df[m] = (dfs, dfp)
        if m == "ppi++":
            lam_out = (ls, lp)
    return lam_out
