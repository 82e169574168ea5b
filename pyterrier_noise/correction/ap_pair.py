"""AP under the pair design: a quadratic form over a count, with a linearised variance.

Average precision (binary relevance ``r``, trec_eval's AP at relevance level ``rel``) of a run on a
topic is ``N / R``: ``N = sum_k (r_k / k) (1 + S_k)`` over the run's ranks ``k`` (``S_k``: the relevant
documents ranked before ``k``; ``r_k^2 = r_k`` makes the diagonal term linear) and ``R`` the topic's
number of relevant judged documents.

gold-only: every sampled pair's gold relevance ``y_d`` weighted by ``1 / pi_d`` (``v_d = I_d y_d / pi_d``,
0 for unsampled pairs; the Horvitz-Thompson weight) is plugged into ``N`` and ``R`` and the ratio
taken per topic, ``G(v)``; numerator and denominator move together with the number of pairs sampled
in the topic, so the ratio is far steadier than either part.  PPI and PPI++ apply prediction-powered
inference (Angelopoulos et al. 2023) to the metric: ``G(I y / pi) + lam (AP(f) - G(I f / pi))`` with
``f_d = P(gold relevant | cheap grade of d)`` fitted on the gold sample (weighted by ``1 / pi``) and
``AP(f)`` the predictions' AP over every pair; ``lam = 1`` is PPI, PPI++ tunes ``lam``.  (Plugging a
per-document difference estimator ``lam f_d + I_d (y_d - lam f_d) / pi_d`` into ``N`` and ``R`` instead
loses that steadiness: on TREC-COVID with 300 gold pairs its standard deviation was 2.8 times
gold-only's, because each topic's ``R`` rests on about 10 sampled pairs.)  A system's estimate is
the mean over topics.

The plug-in of the cross terms ``v_j v_k`` is nearly unbiased: two documents of one stratum of a
stratified sample (without replacement) are drawn together with probability
``n (n - 1) / (N (N - 1))``, not ``(n / N)^2``, so the expected product of their weighted labels is
``(n - 1) N / (n (N - 1))`` times the product of their labels (documents of different strata, or of
a Poisson sample, are independent: no bias).  The ratio adds the usual ``O(1 / n)`` bias of a ratio
estimator (Sarndal, Swensson and Wretman 1992, Sec 5.6), ``(AP V(R) - C(N, R)) / R^2`` to first order.
So under a simple random sample (:data:`BEALE_DESIGNS`: ``uniform``, or ``post-stratified`` as
``calibrate`` analyses a gold file given without a design) each topic's ratio is Beale's (1962)
estimator of reduced bias (Cochran 1977, Sec 6.9),
``(N R + C(N, R)) / (R^2 + V(R))``, with ``V(R)`` the design-based variance of the topic's estimated
count of relevant documents and ``C(N, R)`` its covariance with the numerator (linearised,
``dN/dr_d`` times the label), estimated from the sample as the variance below is; its bias is of
order ``1 / n^2``.  On TREC-COVID round 1 with a simple random sample of 1,500 gold pairs,
post-stratified (13.5 sampled relevant pairs per topic), the plain ratio's bias was 0.38-0.42
standard deviations of the estimate (median over systems, 100 studies) and the systems' intervals
covered 0.922-0.926 (500 studies); with Beale's ratio the bias was 0.09 standard deviations and the
coverage 0.942-0.945 (0.934-0.937 at 2,000 pairs).  The stratified and active designs keep the plain
ratio: under the stratified plan of 1,000 pairs, where the plain ratio's bias was -0.0011 to +0.0005,
Beale's ratio left the coverage where it was (0.959-0.963, 500 studies), over-corrected (bias
+0.0024 to +0.0033) and its own estimated terms raised the RMSE by 7-10%.  The variance is the plain
ratio's
linearisation (the correction moves the estimate by ``O(1 / n)``).  The tests measure the bias of
both ratios and of the cross terms by exact enumeration on a tiny collection.

A topic whose estimated ``R`` is at most 0 gets AP 0, as trec_eval scores a topic without relevant
documents; one whose estimate is in (0, 1) is given ``R = 1`` (a topic with any relevant document
has at least one), which keeps the ratio from exploding when the count is estimated near 0 (the
nDCG code's floor on the ideal DCG, for the same reason).

Variance by linearisation (Woodruff 1971; Deville 1999): a sampled document ``d`` of topic ``t``
moves a run's ratio ``G`` by ``(dN/dr_d - AP) / R`` times its weighted label (``y_d / pi_d`` or
``f_d / pi_d``, each at its own ratio's point), with
``dN/dr_d = (1 + S_k) / k + sum_{i > k} r_i / i`` at its rank ``k`` in the run (0 if the run does not
retrieve it; segment-wise cumulative sums over every run at once).  These contributions go through
the machinery of the linear measures and nDCG (:func:`~pyterrier_noise.correction.ratio.linearised_methods`):
the design-based Horvitz-Thompson variance, or the pooled model of the stratified design where that
rests on few terms, paired for differences of runs, PPI++'s ``lam`` tuned on this variance.

Where it is not valid: with few relevant documents in a topic's sample, the per-topic ratio is
biased downwards (a topic whose sample holds none gets AP 0) and the linearised variance is not
calibrated.  On TREC-COVID round 1 the bias was 0.46-0.66 standard deviations of the estimate with
4.6 sampled relevant documents per topic on average (300 gold pairs), 0.24-0.40 with 7.8 and
0.11-0.22 with 10.8 (700 gold pairs), where the intervals covered 0.957-0.972.  So below
:data:`MIN_RELEVANT_PER_TOPIC` sampled relevant documents per topic on average (over the topics not
judged in full), or with a topic whose sample holds no relevant document, gold-only, PPI and PPI++
give NaN for AP, with a :class:`~pyterrier_noise._warnings.CorrectionWarning` that names the topics.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from .._validation import InputError
from ..engine import MeasureSpec
from ._common import _warn, measure_gains
from ._pooled import _residual_moments, _stratum_cross_moments, _unbiased_mean_products
from .design import GoldSample
from .ratio import linearised_methods

if TYPE_CHECKING:  # pragma: no cover
    from .estimators import CheapStudy

__all__ = ["ap_pair_design", "AP_FAMILIES", "segment_exclusive_cumsum", "MIN_RELEVANT_PER_TOPIC",
           "sampled_relevant", "BEALE_DESIGNS"]

#: measures estimated under the pair design by this module
AP_FAMILIES = ("AP",)
#: the fewest gold-relevant sampled pairs per topic (mean over the topics not judged in full) for which
#: AP is estimated under the pair design (see the module doc for the evidence); the default of
#: ``CheapStudy(ap_min_relevant=None)``, which can set another (0 turns the check off)
MIN_RELEVANT_PER_TOPIC = 10.0
#: the designs whose per-topic ratio is Beale's (simple random samples; see the module doc)
BEALE_DESIGNS = ("uniform", "post-stratified")


def segment_exclusive_cumsum(x: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For values ``x`` laid out segment after segment, the sum of the values before each one in its
    own segment (``first[p]``: the index of the first value of ``p``'s segment)."""
    cs = np.cumsum(x)
    return cs - x - (cs[first] - x[first])


def sampled_relevant(study: "CheapStudy", sample: GoldSample, relevant: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per topic: the number of sampled pairs whose gold label is relevant (``relevant``: one 0/1 value per
    sampled pair) and whether the topic is judged in full (every pair sampled with certainty, so its AP
    is exact)."""
    T = study.n_topics
    count = np.bincount(study.row_topic[sample.rows], weights=relevant, minlength=T)
    uncertain = np.bincount(study.row_topic, weights=(np.asarray(sample.pi_all) < 1).astype(np.float64), minlength=T)
    return count, uncertain == 0


def _too_few_relevant(study: "CheapStudy", sample: GoldSample, relevant: np.ndarray, methods: tuple[str, ...],
                      spec: MeasureSpec) -> bool:
    """Whether AP's pair-design estimate is below its documented minimum; if so, say why in a warning."""
    minimum = MIN_RELEVANT_PER_TOPIC if study.ap_min_relevant is None else study.ap_min_relevant
    if minimum <= 0:
        return False
    count, full = sampled_relevant(study, sample, relevant)
    if full.all():
        return False
    mean = float(count[~full].mean())
    low = np.flatnonzero(~full & (count < minimum))
    none = np.flatnonzero(~full & (count == 0))
    if mean >= minimum and not len(none):
        return False
    topics = study.aligned.topics
    named = ", ".join(f"qid {topics[t]}: {int(count[t])}" for t in low[:12]) + (", ..." if len(low) > 12 else "")
    which = ", ".join(m for m in ("gold", "ppi", "ppi++") if m in methods)
    # the budget that would reach the minimum at this sample's rate of relevant pairs (a planning guide)
    needed = int(np.ceil(len(sample.rows) * minimum / mean)) if 0 < mean < minimum else 0
    name = "AP" + (f"@{spec.cutoff}" if spec.cutoff is not None else "") + \
        (f"(rel={spec.rel:g})" if spec.rel is not None and float(spec.rel) != 1.0 else "")
    _warn(f"{name} under the pair design is not estimated (NaN for {which}): the gold sample holds "
          f"{mean:.1f} relevant pairs per topic on average, and the minimum is {minimum:g}"
          + (f", with none in {len(none)} topic(s)" if len(none) else "")
          + f"; relevant pairs sampled in the topics below the minimum: {named}. With fewer, AP's ratio estimator "
          "is biased downwards and its intervals are not calibrated. Sample more pairs"
          + (f" (at this sample's rate of relevant pairs, about {needed:,} gold pairs)" if needed else "") + ".")
    return True


class _APParts:
    """The gold-only ratio on the gold labels and on the predictions, the predictions' AP on every pair,
    and the influence of each sampled pair on the two ratios."""

    def __init__(self, study: "CheapStudy", spec: MeasureSpec, cheap: np.ndarray, gold: np.ndarray,
                 sample: GoldSample, calibrate: bool = True) -> None:
        R, T = study.n_runs, study.n_topics
        rows, pi = sample.rows, np.asarray(sample.pi, dtype=np.float64)
        if gold.shape != rows.shape:
            raise InputError(f"gold labels must be one per sampled pair ({len(rows)}), got shape {gold.shape}")
        if np.isnan(gold).any():
            k = int(np.flatnonzero(np.isnan(gold))[0])
            raise InputError(f"gold label of sampled pair {k} (table row {rows[k]}) is missing (NaN); every "
                             f"sampled pair needs a gold label ({int(np.isnan(gold).sum())} missing)")
        if not ((pi > 0) & (pi <= 1)).all():
            k = int(np.flatnonzero(~((pi > 0) & (pi <= 1)))[0])
            raise InputError(f"inclusion probability of sampled pair {k} (table row {rows[k]}) must be in (0, 1], "
                             f"got {pi[k]!r}")
        y = (measure_gains(gold, spec) > 0).astype(np.float64)
        # the cheap judge's prediction P(gold relevant | cheap grade), fitted on the gold sample (1 / pi
        # weights); a cheap grade the sample does not hold predicts the cheap judge's own relevance
        key = np.where(np.isnan(cheap), -np.inf, cheap)
        grades, first, cls = np.unique(key, return_index=True, return_inverse=True)
        own = (measure_gains(cheap[first], spec) > 0).astype(np.float64)
        hit = np.bincount(cls[rows], weights=y / pi, minlength=len(grades))
        tot = np.bincount(cls[rows], weights=1.0 / pi, minlength=len(grades))
        fit = np.where(tot > 0, hit / np.where(tot > 0, tot, 1.0), own) if calibrate else own
        f_all = fit[cls]
        self.y, self.fs, self.rows = y, f_all[rows], rows
        j = study.aligned.judged_positions()
        keep = j["pos"] < spec.cutoff if spec.cutoff is not None else np.ones(len(j["pos"]), dtype=bool)
        self.seg, self.jidx = j["seg"][keep], j["jidx"][keep]
        self.k = j["pos"][keep] + 1.0
        starts = np.flatnonzero(np.r_[True, self.seg[1:] != self.seg[:-1]]) if len(self.seg) else np.zeros(0, int)
        self.first = np.repeat(starts, np.diff(np.r_[starts, len(self.seg)]))
        self.run_of, self.topic_of = self.seg // T, self.seg % T
        self.row_topic = study.row_topic
        self.R, self.T = R, T
        vy, vf = np.zeros(len(cheap)), np.zeros(len(cheap))
        vy[rows], vf[rows] = y / pi, f_all[rows] / pi
        self.Gy, self.Ay = self.point(vy)              # the Horvitz-Thompson ratio on the gold labels
        self.Gf, self.Af = self.point(vf)              # ... on the predictions of the sampled pairs
        self.F = self.point(f_all, weights=False)[0]   # the predictions' AP, every pair
        if sample.design in BEALE_DESIGNS:       # a simple random sample: Beale's ratio (see the module doc)
            self.Gy, self.Gf = self.beale(vy, y, sample), self.beale(vf, self.fs, sample)

    def _before(self, x: np.ndarray) -> np.ndarray:
        return segment_exclusive_cumsum(x, self.first) if len(x) else x

    def _per_segment(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.seg, weights=x, minlength=self.R * self.T).reshape(self.R, self.T)

    def numerator(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """AP's numerator ``N = sum_k (r_k / k) (1 + S_k)`` per (run, topic) for relevances ``r`` of every
        table row, and its derivative ``dN/dr = (1 + S_k) / k + sum_{i > k} r_i / i`` at every judged
        position (segment-wise cumulative sums)."""
        rp = r[self.jidx]
        S = self._before(rp)
        q = rp / self.k
        after = np.bincount(self.seg, weights=q, minlength=self.R * self.T)[self.seg] - self._before(q) - q
        return self._per_segment(q * (1.0 + S)), (1.0 + S) / self.k + after

    def point(self, r: np.ndarray, weights: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Per-topic AP ``N(r) / R(r)`` ``(runs, T)`` (``R = sum_t r``; 0 where ``R <= 0``, ``R`` floored at 1)
        and, if ``weights``, every pair's weight ``(dN/dr - AP dR/dr) / (T R)`` in each run's mean over
        topics (runs x table rows)."""
        N, dN = self.numerator(r)
        Rh = np.bincount(self.row_topic, weights=r, minlength=self.T)
        inv = np.where(Rh > 0, 1.0 / np.maximum(Rh, 1.0), 0.0)
        ap = N * inv
        if not weights:
            return ap, None
        alpha = inv / self.T
        beta = ap * (alpha * (Rh >= 1.0))[None, :]              # on the floor AP does not move with R
        A = -beta[:, self.row_topic]
        A[self.run_of, self.jidx] += alpha[self.topic_of] * dN    # one position per (run, pair)
        return ap, A

    def beale(self, r: np.ndarray, lab: np.ndarray, sample: GoldSample) -> np.ndarray:
        """Per-topic AP ``(runs, T)`` by Beale's (1962) ratio estimator of reduced bias,
        ``(N R + C(N, R)) / (R^2 + V(R))``, from the Horvitz-Thompson values ``r`` of every table row and
        the sampled pairs' labels ``lab``: ``V(R)`` and ``C(N, R)`` are the design-based variance of the
        topic's estimated count and its covariance with the numerator (linearised at its point,
        ``dN/dr_d`` times the label), as :func:`~pyterrier_noise.correction.design.ht_covariance`
        computes them (Cochran 1977, Sec 6.9).  Where ``R`` is on its floor the plain ratio is kept."""
        N, dN = self.numerator(r)
        Rh = np.bincount(self.row_topic, weights=r, minlength=self.T)
        plain = N * np.where(Rh > 0, 1.0 / np.maximum(Rh, 1.0), 0.0)
        at = np.full(len(r), -1, dtype=np.int64)
        at[self.rows] = np.arange(len(self.rows))
        keep = at[self.jidx] >= 0                       # judged positions of sampled pairs
        n = len(self.rows)
        u = sparse.csr_matrix((dN[keep] * lab[at[self.jidx[keep]]], (self.run_of[keep], at[self.jidx[keep]])),
                              shape=(self.R, n))            # the numerator's linear value of each sampled pair
        # per (topic, stratum) cell: the sum of factor * a * b over its units, minus, where the sample is
        # stratified (units centred in their stratum; the other topics' units are 0 there),
        # factor_h (sum a) (sum b) / n_h; Poisson samples are not centred (one cell per topic)
        stratified = bool((sample.stratum >= 0).any())
        H = int(sample.stratum.max()) + 1 if stratified else 1
        cell = self.row_topic[self.rows] * H + (sample.stratum if stratified else 0)
        cells = sparse.csr_matrix((np.ones(n), (np.arange(n), cell)), shape=(n, self.T * H))
        f = np.asarray(sample.factor, dtype=np.float64)
        Szz = cells.T @ (f * lab * lab)
        Suz = np.asarray((u.multiply((f * lab)[None, :]) @ cells).todense())
        if stratified:
            nh = np.bincount(sample.stratum, minlength=H).astype(np.float64)
            fh = np.zeros(H)
            fh[sample.stratum] = f
            kh = np.tile(fh / np.maximum(nh, 1.0), self.T)
            Sz = cells.T @ lab
            Szz = Szz - kh * Sz * Sz
            Suz = Suz - kh[None, :] * np.asarray((u @ cells).todense()) * Sz[None, :]
        V = Szz.reshape(self.T, H).sum(axis=1)                    # V(R) per topic
        C = Suz.reshape(self.R, self.T, H).sum(axis=2)            # C(N, R) per (run, topic)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(Rh >= 1.0, (N * Rh + C) / (Rh * Rh + np.maximum(V, 0.0)), plain)
        return out

    def per_topic(self, lam: np.ndarray, runs: np.ndarray) -> np.ndarray:
        """Per-topic AP estimates of ``runs`` ``(X, T)`` at ``lam`` ``(X,)``."""
        lam = np.asarray(lam, dtype=np.float64)[:, None]
        return self.Gy[runs] + lam * (self.F[runs] - self.Gf[runs])

    def influence(self, lam: float) -> tuple[np.ndarray, np.ndarray, dict]:
        """The linearised contributions ``Zy = a_y y``, ``Zh = a_f f`` ``(n, runs)`` of the sampled pairs
        (the estimate moves by ``HT(Zy) - lam HT(Zh)``); the same for every ``lam``."""
        return (self.Ay[:, self.rows].T * self.y[:, None], self.Af[:, self.rows].T * self.fs[:, None],
                dict(Ay=self.Ay, Af=self.Af))


def _pooled_ap_quadratics(parts: _APParts, point: dict, sample: GoldSample, study: "CheapStudy") -> tuple:
    """The pooled model's variance of the linearised AP as quadratics in ``lam`` (systems, pairs) and its
    degrees of freedom: the linear measures' model (Cochran 1977, Eq 5.6) with two known weights per
    pair, ``a_y`` for its gold label and ``a_f`` for its prediction, independent within a stratum of the
    (gold, prediction) pair, whose moments are pooled over the stratum's sampled pairs."""
    Ay, Af, s_all = point["Ay"], point["Af"], sample.stratum_all
    R, i, j = parts.R, study.i, study.j
    H = int(s_all.max()) + 1
    Nh = np.maximum(np.bincount(s_all, minlength=H), 1).astype(np.float64)
    onehot = sparse.csr_matrix((np.ones(len(s_all)), (np.arange(len(s_all)), s_all)), shape=(len(s_all), H))
    mean_y, mean_f = np.asarray(onehot.T @ Ay.T).T / Nh, np.asarray(onehot.T @ Af.T).T / Nh
    r = np.arange(R)
    # second moments from one Gram matrix of the stacked weights per stratum: yy, yf, ff of each run and
    # of each pair's contrast
    idx_i = np.concatenate([r, r, R + r, i, i, j, R + i])
    idx_j = np.concatenate([r, R + r, R + r, j, R + j, R + i, R + j])
    X = _stratum_cross_moments(np.concatenate([Ay, Af]), s_all, idx_i, idx_j)
    sy, syf, sf, xyy, xyf, xfy, xff = np.split(X, np.cumsum([R, R, R] + [len(i)] * 3))
    second_sys = {"yy": sy, "yh": syf, "hh": sf}
    second_pair = {"yy": sy[i] + sy[j] - 2 * xyy, "yh": syf[i] + syf[j] - xyf - xfy, "hh": sf[i] + sf[j] - 2 * xff}
    first_sys = (mean_y, mean_f)
    first_pair = (mean_y[i] - mean_y[j], mean_f[i] - mean_f[j])
    res = _residual_moments(sample, parts.y, parts.fs)
    m, sq = res["mom"], _unbiased_mean_products(res)
    out = []
    for second, (wy, wf) in ((second_sys, first_sys), (second_pair, first_pair)):
        firsts = {"yy": wy * wy, "yh": wy * wf, "hh": wf * wf}
        coef = [((second[k] * m[k] - firsts[k] * sq[k]) * res["c"]).sum(axis=1) for k in ("yy", "yh", "hh")]
        out.append(np.stack(coef, axis=1))
    return out[0], out[1], res["df"]


def ap_pair_design(study: "CheapStudy", spec: MeasureSpec, cheap: np.ndarray, gold: np.ndarray,
                   sample: GoldSample, methods: tuple[str, ...], scope: str, systems: dict, pairs: dict,
                   df: dict, tv: dict, calibrate: bool = True) -> Any:
    """gold-only, PPI and PPI++ estimates of AP under the pair design (see the module doc), written into
    ``systems``, ``pairs``, ``df`` and ``tv`` as the linear measures' are; returns PPI++'s ``lam``.

    ``calibrate=False``: the prediction is the cheap judge's own relevance instead of
    ``P(gold relevant | cheap grade)``.  Below :data:`MIN_RELEVANT_PER_TOPIC` sampled relevant pairs per
    topic (or with a topic that has none) nothing is written (the rows are NaN) and a warning says why."""
    parts = _APParts(study, spec, np.asarray(cheap, dtype=np.float64), gold, sample, calibrate)
    if _too_few_relevant(study, sample, parts.y, methods, spec):
        return None                      # the methods' rows stay NaN (filled in by the caller)
    pooled = study.variance == "pooled" and sample.stratum_all is not None
    kept: dict = {}

    def quadratics(point: dict) -> tuple:    # the influence does not depend on lam: one pooled model for all
        if "q" not in kept:
            kept["q"] = _pooled_ap_quadratics(parts, point, sample, study)
        return kept["q"]

    return linearised_methods(study, parts, sample, methods, scope, systems, pairs, df, tv,
                              quadratics if pooled else None)
