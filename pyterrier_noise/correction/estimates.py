"""Corrected metrics for a noisy ("bronze") judge (Goldberg et al. 2017, Eq 5/7/14/18).

Every metric here is linear in per-document gains with label-independent rank weights,
``M_q = sum_s d_s * v[label_qs]``.  Its corrected value relabels each bronze grade with a
"corrected gain" ``w = J^-1 v``, so the whole computation is one product of a
(topics x labels) label mass -- the engine's rank weights times the one-hot label matrix -- with
``w``.  Standard errors by the delta method (Eq 7 and its graded form) or a
bootstrap that resamples topics and redraws the calibration from its multinomial counts.
nDCG, AP, RR and other non-linear metrics are not covered by the paper and are not offered.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int, check_probability
from .._vocab import SE_METHODS, SEMethod, Unjudged
from ..engine import MeasureSpec, position_weights, rbp_weights
from ._common import _BOOT_CELLS, _SINGULAR_DET, SeedLike, _check_ddof, _n_replicates, _warn, _z
from .calibration import JudgeCalibration, calibration_arg
from .ranked import label_positions

__all__ = ["label_mass", "MassCorrection", "corrected_from_mass", "corrected_from_strata", "CorrectedEstimate",
           "corrected_metric", "corrected_precision", "corrected_dcg", "corrected_rbp"]



# ------------------------------------------------------------------------------------------------
# array kernels (batched over leading axes: systems, simulations, bootstrap replicates)

def calibration_terms(J: np.ndarray, n_gold: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``Var_{b ~ J[j]}(g[j, b]) / n_j`` for each gold row ``j`` (multinomial row covariance).

    ``g[..., j, b]`` is the gradient of the estimate with respect to ``J[j, b]`` up to sign.
    """
    mean = (J * g).sum(axis=-1)
    var = (J * g ** 2).sum(axis=-1) - mean ** 2
    return np.maximum(var, 0.0) / n_gold


def gold_mass(J: np.ndarray, mass_mean: np.ndarray) -> np.ndarray:
    """``mu = J^-T cbar``: the estimated gold-label mass (Eq 17 applied to the mean label mass)."""
    return np.linalg.solve(np.swapaxes(J, -1, -2), mass_mean[..., None])[..., 0]


def corrected_weights(J: np.ndarray, v: np.ndarray) -> np.ndarray:
    vb = np.broadcast_to(v, J.shape[:-1])
    return np.linalg.solve(J, vb[..., None])[..., 0]


def label_mass(label_index: Any, discount: Any, n_labels: int) -> np.ndarray:
    """Discounted label mass ``c[..., q, l] = sum_s d_s [label_qs == l]`` (Goldberg et al. 2017, Eq 18).

    Args:
        label_index: integer array ``(..., topics, ranks)`` of label positions in the calibration
            (``-1`` = no document or a document that contributes nothing).
        discount: rank weights ``d_s``, one per rank (P@k: 1/k; DCG: 1/log2(s+1); RBP:
            (1-p) p^(s-1)).
        n_labels: number of calibration labels ``L``.

    Returns an array ``(..., topics, L)``; ``mass @ v`` is the per-topic bronze metric.
    """
    idx = np.asarray(label_index)
    if idx.ndim < 2 or not np.issubdtype(idx.dtype, np.integer):
        raise InputError(f"label_index must be an integer array (..., topics, ranks), got dtype {idx.dtype} "
                         f"and shape {idx.shape}")
    d = np.asarray(discount, dtype=np.float64)
    if d.shape != idx.shape[-1:]:
        raise InputError(f"discount must have one weight per rank ({idx.shape[-1]}), got shape {d.shape}")
    n_labels = check_int("n_labels", n_labels, 1)
    if (idx >= n_labels).any() or (idx < -1).any():
        raise InputError(f"label_index values must be in -1..{n_labels - 1}")
    onehot = idx[..., None] == np.arange(n_labels)
    return np.einsum("...skl,k->...sl", onehot, d)


class MassCorrection(NamedTuple):
    """Result of :func:`corrected_from_mass` (arrays over the leading batch axes)."""

    value: np.ndarray        #: corrected mean over topics
    se: np.ndarray           #: delta-method standard error
    per_query: np.ndarray    #: corrected per-topic values (..., topics)
    query_var: np.ndarray    #: query-sampling variance term
    calibration_var: np.ndarray  #: calibration variance term per gold label (..., L)


def corrected_from_mass(mass: Any, counts: Any, gains: Any, *, ddof: int = 1) -> MassCorrection:
    """Corrected metric and delta-method SE from label masses, batched.

    Estimate ``theta = mean_q(c_q) . w`` with ``w = J^-1 v`` (Goldberg et al. 2017, Eq 14/18) and

        ``Var = Var_q(c_q . w) / n + sum_j mu_j^2 Var_{b ~ J[j]}(w_b) / n_j``,  ``mu = J^-T mean_q(c_q)``,

    which for binary P@k is exactly the paper's Eq 7 (with ``V[J] = s^2 / n``, Sec 3.5).
    ``mass`` is ``(..., topics, L)`` (see :func:`label_mass`), ``counts`` is ``(..., L, L)``
    calibration counts (rows gold, columns bronze) and ``gains`` the ``L`` gains in label order.
    Leading axes broadcast, so thousands of simulated experiments are corrected in one call.
    """
    ddof = _check_ddof(ddof)
    c = np.asarray(mass, dtype=np.float64)
    cnt = np.asarray(counts, dtype=np.float64)
    v = np.asarray(gains, dtype=np.float64)
    if c.ndim < 2:
        raise InputError(f"mass must be an array (..., topics, L), got shape {c.shape}")
    n_labels = c.shape[-1]
    if cnt.shape[-2:] != (n_labels, n_labels):
        raise InputError(f"counts must end in ({n_labels}, {n_labels}) to match mass, got shape {cnt.shape}")
    if v.shape != (n_labels,):
        raise InputError(f"gains must have shape ({n_labels},), got {v.shape}")
    n = c.shape[-2]
    if n <= ddof:
        raise InputError(f"need more than {ddof} topic(s) for a query-sampling variance, got {n}")
    n_gold = cnt.sum(axis=-1)
    if (n_gold <= 0).any():
        raise InputError("every gold label needs at least one calibration pair (a row of counts sums to 0)")
    J = cnt / n_gold[..., None]
    try:
        w = corrected_weights(J, v)
        mu = gold_mass(J, c.mean(axis=-2))
    except np.linalg.LinAlgError:
        raise InputError("a calibration matrix in counts is singular: the corrected metric is undefined") from None
    per_query = np.einsum("...ql,...l->...q", c, w)
    value = per_query.mean(axis=-1)
    query_var = per_query.var(axis=-1, ddof=ddof) / n
    calib = calibration_terms(J, n_gold, mu[..., :, None] * w[..., None, :])
    se = np.sqrt(query_var + calib.sum(axis=-1))
    return MassCorrection(value, se, per_query, query_var, calib)


def corrected_from_strata(mass: Any, counts: Any, gains: Any, *, ddof: int = 1) -> MassCorrection:
    """Goldberg et al.'s corrected metric within strata of documents (e.g. bands of rank), batched.

    ``mass`` is ``(..., strata, topics, L)``: the label mass of each stratum's documents; ``counts``
    ``(strata, L, L)``: one calibration per stratum, fitted from its own gold pairs.  The estimate is
    ``sum_s mean_q(c_qs) . J_s^-1 v`` (Eq 14/18 in each stratum), the query-sampling variance that of
    the per-topic sums over strata, and the calibration variance the strata's delta-method terms
    (Eq 7, graded form), which add because the strata's fits are independent.  ``calibration_var`` is
    ``(..., strata, L)``; with one stratum this is :func:`corrected_from_mass` exactly.
    """
    ddof = _check_ddof(ddof)
    c = np.asarray(mass, dtype=np.float64)
    if c.ndim < 3:
        raise InputError(f"mass must be an array (..., strata, topics, L), got shape {c.shape}")
    cnt = np.asarray(counts, dtype=np.float64)
    if cnt.ndim != 3 or cnt.shape[0] != c.shape[-3]:
        raise InputError(f"counts must be (strata, L, L) with one calibration per stratum ({c.shape[-3]}), "
                         f"got shape {cnt.shape}")
    res = corrected_from_mass(c, cnt, gains, ddof=ddof)
    per_query = res.per_query.sum(axis=-2)
    n = per_query.shape[-1]
    query_var = per_query.var(axis=-1, ddof=ddof) / n
    calib = res.calibration_var
    return MassCorrection(res.value.sum(axis=-1), np.sqrt(query_var + calib.sum(axis=(-2, -1))), per_query,
                          query_var, calib)


def calibration_bootstrap_var(mass_mean: Any, counts: Any, gains: Any, *, n_replicates: int = 1000,
                              seed: SeedLike = 0) -> np.ndarray:
    """The calibration variance of ``sum_s mass_mean_s . J_s^-1 v`` by Goldberg et al.'s parametric
    bootstrap (2017, Alg 1): each stratum's rows redrawn ``J*_s[g] ~ Multinomial(n_sg, J_s[g]) / n_sg``
    (``n_sg``: the row's pairs, rounded), the estimate recomputed; draws with a singular matrix or
    whose determinant changes sign are left out.  ``mass_mean`` is ``(..., strata, L)``, ``counts``
    ``(strata, L, L)``; returns the variance over replicates ``(...)``."""
    n_replicates = check_int("n_replicates", n_replicates, 2)
    m = np.asarray(mass_mean, dtype=np.float64)
    cnt = np.asarray(counts, dtype=np.float64)
    v = np.asarray(gains, dtype=np.float64)
    rng = np.random.default_rng(seed)
    n_row = np.maximum(np.rint(cnt.sum(axis=-1)), 1).astype(np.int64)                # (S, L)
    J = cnt / cnt.sum(axis=-1, keepdims=True)
    draws = rng.multinomial(n_row, J, size=(n_replicates,) + n_row.shape) / n_row[..., None]   # (B, S, L, L)
    det_hat = np.sign(np.linalg.det(J))
    det = np.linalg.det(draws)
    valid = ((np.sign(det) == det_hat) & (np.abs(det) > _SINGULAR_DET)).all(axis=-1)          # (B,)
    w = corrected_weights(np.where(valid[:, None, None, None], draws, np.eye(J.shape[-1])), v)          # (B, S, L)
    theta = np.einsum("...sl,bsl->...b", m, w[valid])
    return theta.var(axis=-1, ddof=1)


# ------------------------------------------------------------------------------------------------
# results

@dataclass(eq=False)
class CorrectedEstimate:
    """A corrected metric with its uncertainty (Goldberg et al. 2017, Eq 5/7/14/18).

    ``value`` is the corrected mean over topics and ``se`` its standard error by ``se_method``;
    ``naive_value`` / ``naive_se`` are the uncorrected (bronze) mean and ``s / sqrt(n)``.
    ``var_terms`` splits the delta-method variance into the query-sampling term and one
    calibration term per gold label.  ``per_query`` holds corrected per-topic values; they average
    to ``value`` but individually are not confined to the metric's range.  ``mass`` (topics x
    labels, or None for a binary summary) and ``mass_mean`` are the bronze-label masses the
    estimate comes from, ``naive_sd`` the standard deviation of the naive per-topic values and
    ``ddof`` the degrees of freedom removed from the query variance: what
    :func:`~pyterrier_noise.correction.compare` needs to compare two estimates.
    """

    measure: str
    value: float
    se: float
    ci_low: float
    ci_high: float
    se_method: str
    naive_value: float
    naive_se: float
    n_queries: int
    delta_se: float
    var_terms: dict[str, float]
    calibration: JudgeCalibration = field(repr=False)
    per_query: pd.Series | None = field(default=None, repr=False)
    naive_per_query: pd.Series | None = field(default=None, repr=False)
    replicates: np.ndarray | None = field(default=None, repr=False)
    n_invalid_replicates: int = 0
    alpha: float = 0.05
    gains: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    mass: np.ndarray | None = field(default=None, repr=False)
    mass_mean: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    naive_sd: float = field(default=float("nan"), repr=False)
    ddof: int = field(default=1, repr=False)

    @property
    def corrected_gains(self) -> np.ndarray:
        """``w = J^-1 v`` used for this estimate."""
        return self.calibration.J_inv @ self.gains

    def to_series(self) -> pd.Series:
        """The scalar fields as a Series (handy for building tables)."""
        return pd.Series({"measure": self.measure, "n_queries": self.n_queries, "naive": self.naive_value,
                          "naive_se": self.naive_se, "corrected": self.value, "se": self.se,
                          "ci_low": self.ci_low, "ci_high": self.ci_high, "se_method": self.se_method,
                          "D": self.calibration.D})


def _topic_means(masses: list[np.ndarray], n_replicates: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Bootstrap means of per-topic masses; all masses share the same resampled topics (paired)."""
    n = masses[0].shape[0]
    out = [np.empty((n_replicates, m.shape[1])) for m in masses]
    step = max(1, _BOOT_CELLS // n)
    p = np.full(n, 1.0 / n)
    for start in range(0, n_replicates, step):  # chunks bound memory; each chunk is one vectorised draw
        stop = min(n_replicates, start + step)
        weights = rng.multinomial(n, p, size=stop - start) / n      # (chunk, topics)
        for o, m in zip(out, masses):
            o[start:stop] = weights @ m
    return out


def _summary_means(est: CorrectedEstimate, n_replicates: int, rng: np.random.Generator) -> np.ndarray:
    """Topic-sampling draws for an estimate known only by its summary (binary; notes A11)."""
    total = est.mass_mean.sum()
    m = rng.normal(est.naive_value, est.naive_sd / np.sqrt(est.n_queries), size=n_replicates)
    return np.stack([total - m, m], axis=1)


def _valid_draws(J: np.ndarray, det_hat: float) -> tuple[np.ndarray, np.ndarray]:
    """Replace singular or sign-flipped draws by the identity; return (safe matrices, valid mask)."""
    det = np.linalg.det(J)
    valid = (np.sign(det) == np.sign(det_hat)) & (np.abs(det) > _SINGULAR_DET)
    safe = np.where(valid[:, None, None], J, np.eye(J.shape[-1]))
    return safe, valid


def draw_thetas(ests: list[CorrectedEstimate], n_replicates: int, rng: np.random.Generator,
                 shared: bool, paired: bool) -> tuple[list[np.ndarray], np.ndarray]:
    """Bootstrap replicates of each estimate: topics resampled, calibration redrawn (notes A5)."""
    cal_draws = []
    for i, est in enumerate(ests):
        if shared and i > 0:
            cal_draws.append(cal_draws[0])
        else:
            cal_draws.append(_valid_draws(est.calibration.sample_matrices(n_replicates, rng), est.calibration.D))
    if paired:
        means = _topic_means([e.mass for e in ests], n_replicates, rng)
    else:
        means = [(_topic_means([e.mass], n_replicates, rng)[0] if e.mass is not None
                  else _summary_means(e, n_replicates, rng))
                 for e in ests]
    valid = np.ones(n_replicates, dtype=bool)
    thetas = []
    for est, (J, ok), cbar in zip(ests, cal_draws, means):
        w = corrected_weights(J, est.gains)
        thetas.append((cbar * w).sum(axis=1))
        valid &= ok
    return thetas, valid


def finish_estimate(measure: str, calibration: JudgeCalibration, v: np.ndarray, mass: np.ndarray | None,
            qids: pd.Index | None, *, mass_mean: np.ndarray | None = None, naive_mean: float | None = None,
            naive_sd: float | None = None, n: int | None = None, se: str, n_replicates: int, seed: SeedLike,
            ddof: int, alpha: float) -> CorrectedEstimate:
    """Assemble a CorrectedEstimate from per-topic masses (or a binary summary) and warn where needed."""
    check_choice("se", se, SE_METHODS)
    ddof = _check_ddof(ddof)
    alpha = check_probability("alpha", alpha)
    calibration.check_usable()
    J, n_gold = calibration.J, calibration.n_gold.to_numpy(np.float64)
    w = calibration.J_inv @ v
    per_query = naive_pq = None
    if mass is not None:
        n = mass.shape[0]
        if n <= ddof:
            raise InputError(f"need more than {ddof} topic(s) to estimate a query-sampling variance, got {n}")
        corr = mass @ w
        naive = mass @ v
        mass_mean = mass.mean(axis=0)
        naive_mean = float(naive.mean())
        naive_sd = float(naive.std(ddof=ddof))
        query_var = float(corr.var(ddof=ddof) / n)
        per_query = pd.Series(corr, index=qids, name=measure)
        naive_pq = pd.Series(naive, index=qids, name=measure)
    else:
        # binary summary: c_q = (S - M_q, M_q), so c_q . w = S w0 + M_q (w1 - w0)
        query_var = float((w[1] - w[0]) ** 2 * naive_sd ** 2 / n)
    mu = calibration.J_inv.T @ mass_mean
    calib = calibration_terms(J, n_gold, mu[:, None] * w[None, :])
    value = float(mass_mean @ w)
    delta_se = float(np.sqrt(query_var + calib.sum()))
    var_terms = {"query": query_var}
    var_terms.update({f"calibration[gold={g}]": float(t) for g, t in zip(calibration.labels, calib)})
    est = CorrectedEstimate(
        measure=measure, value=value, se=delta_se, ci_low=np.nan, ci_high=np.nan, se_method=se,
        naive_value=float(naive_mean), naive_se=float(naive_sd / np.sqrt(n)), n_queries=int(n),
        delta_se=delta_se, var_terms=var_terms, calibration=calibration, per_query=per_query,
        naive_per_query=naive_pq, alpha=alpha, gains=v, mass=mass, mass_mean=mass_mean,
        naive_sd=float(naive_sd), ddof=ddof)
    z = _z(alpha)
    if se == "bootstrap":
        rng = np.random.default_rng(seed)
        (theta,), valid = draw_thetas([est], n_replicates, rng, shared=False, paired=False)
        est.n_invalid_replicates = int((~valid).sum())
        if est.n_invalid_replicates:
            _warn(f"{est.n_invalid_replicates} of {n_replicates} bootstrap draws of the calibration were singular or "
                  f"flipped the sign of D and were left out (the judge is close to random)")
        theta = theta[valid]
        if theta.size < 2:
            raise InputError("fewer than 2 usable bootstrap replicates: the calibration is too close to random")
        est.replicates = theta
        est.se = float(theta.std(ddof=1))
        est.ci_low, est.ci_high = (float(x) for x in np.quantile(theta, [alpha / 2, 1 - alpha / 2]))
    else:
        est.ci_low, est.ci_high = value - z * delta_se, value + z * delta_se
    lo, hi = v.min() * mass_mean.sum(), v.max() * mass_mean.sum()
    if not (lo - 1e-12 <= value <= hi + 1e-12):
        _warn(f"corrected {measure} = {value:.4f} lies outside the metric's range [{lo:.4g}, {hi:.4g}]: the "
              f"calibration does not fit these judgments (too few calibration pairs, a judge close to random, "
              f"or a calibration sample unlike the evaluated pool)")
    return est


# ------------------------------------------------------------------------------------------------
# corrected metrics of runs or label matrices

SE = SEMethod


def _estimate(measure: str, calibration: JudgeCalibration, idx: np.ndarray, qids: pd.Index, discount: np.ndarray,
              gains: Any, **options: Any) -> CorrectedEstimate:
    """Label mass = rank weights x one-hot label matrix, then the corrected estimate."""
    v = calibration.gain_vector(gains)
    mass = label_mass(idx, discount, calibration.n_labels)
    return finish_estimate(measure, calibration, v, mass, qids, **options)


def corrected_metric(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, discount: Any,
                     gains: Any = None, measure: str = "metric", se: SE = "delta", n_replicates: int = 10_000,
                     seed: SeedLike = 0, ddof: int = 1, alpha: float = 0.05, unjudged: Unjudged = "zero") -> CorrectedEstimate:
    """Corrected value of any metric linear in gains, ``M_q = sum_s d_s v[label_qs]``.

    Generalises Goldberg et al. 2017, Eq 14 (P@k) and Eq 18 (DCG); SE by the delta method
    (Eq 7; graded form) or by bootstrap (topics resampled with replacement and the
    calibration redrawn from its multinomial counts, ``n_replicates`` replicates; ``seed``
    defaults to 0, ``seed=None`` draws fresh entropy).

    Args:
        run: a PyTerrier results frame ``qid, docno, score[, rank]`` or a TREC run file, used with
            ``qrels`` and ranked by the engine as trec_eval ranks it (scores compared in single
            precision, then docno descending; ``rank`` is ignored); or a (topics x ranks) matrix of
            bronze labels (array or frame indexed by qid; NaN = no document at that rank), used alone.
        qrels: bronze qrels ``qid, docno, label`` for a run.
        calibration: the judge's :class:`JudgeCalibration`.
        discount: rank weights ``d_1..d_cutoff``; ranks beyond it do not count.
        gains: gain per calibration label (mapping, sequence or callable; default: label values).
        unjudged: top-ranked documents without a bronze label count as certainly non-relevant
            (``"zero"``, trec_eval's convention; they are not corrected), as bronze label
            ``labels[0]`` (``"lowest"``), or raise (``"error"``).  Ranks past the end of a ranking
            always contribute 0.
    """
    n_replicates = _n_replicates(n_replicates)
    calibration = calibration_arg(calibration)
    d = np.asarray(discount, dtype=np.float64)
    if d.ndim != 1 or d.size == 0 or not np.isfinite(d).all():
        raise InputError(f"discount must be a non-empty 1-d array of finite rank weights, got shape {d.shape}")
    idx, qids = label_positions(run, qrels, calibration, d.size, unjudged)
    return _estimate(measure, calibration, idx, qids, d, gains, se=se, n_replicates=n_replicates, seed=seed,
                     ddof=ddof, alpha=alpha)


def _threshold_gains(calibration: JudgeCalibration, gains: Any, rel: Any) -> Any:
    if gains is not None:
        return gains
    if not calibration.numeric:
        raise InputError(f"labels {calibration.labels} are not numbers: pass gains (a mapping label -> gain)")
    try:
        r = float(rel)
    except (TypeError, ValueError):
        raise InputError(f"rel must be a number (minimum label counted as relevant), got {rel!r}") from None
    return (np.asarray(calibration.labels, dtype=np.float64) >= r).astype(np.float64)


def corrected_precision(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, k: int, rel: float = 1,
                        gains: Any = None, se: SE = "delta", n_replicates: int = 10_000, seed: SeedLike = 0,
                        ddof: int = 1, alpha: float = 0.05, unjudged: Unjudged = "zero") -> CorrectedEstimate:
    """Corrected P@k (Goldberg et al. 2017, Eq 14) with SE by Eq 7 (Sec 3.5) or bootstrap.

    ``k`` is the rank cutoff (the ``@k`` of ``P@k``).  A document counts as relevant when its label
    is ``>= rel`` (as in ir_measures' ``P(rel=..)@k``); ``gains`` overrides that.  The denominator
    is always ``k`` (trec_eval); the rank weights are the engine's.  See :func:`corrected_metric`
    for ``run``, ``qrels``, ``se``, ``seed`` and ``unjudged``.
    """
    n_replicates = _n_replicates(n_replicates)
    cutoff = check_int("k", k, 1)
    calibration = calibration_arg(calibration)
    idx, qids = label_positions(run, qrels, calibration, cutoff, unjudged)
    d = position_weights(MeasureSpec("P", cutoff=cutoff), cutoff)
    return _estimate(f"P@{cutoff}", calibration, idx, qids, d, _threshold_gains(calibration, gains, rel), se=se,
                     n_replicates=n_replicates, seed=seed, ddof=ddof, alpha=alpha)


def corrected_dcg(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, k: int | None = None,
                  gains: Any = None, se: SE = "delta", n_replicates: int = 10_000, seed: SeedLike = 0,
                  ddof: int = 1, alpha: float = 0.05, unjudged: Unjudged = "zero") -> CorrectedEstimate:
    """Corrected DCG@k (Goldberg et al. 2017, Eq 18): ``sum_s v[label] / log2(s + 1)``, linear gain, no
    normalisation (nDCG is not linear and not corrected).  ``k=None``: the whole ranking.

    Gains default to the label values.  SE by the graded delta method or bootstrap.
    """
    n_replicates = _n_replicates(n_replicates)
    calibration = calibration_arg(calibration)
    idx, qids = label_positions(run, qrels, calibration, k, unjudged)
    cutoff = idx.shape[1]
    d = position_weights(MeasureSpec("DCG"), cutoff)
    name = f"DCG@{cutoff}" if k is not None else "DCG"
    return _estimate(name, calibration, idx, qids, d, gains, se=se, n_replicates=n_replicates, seed=seed,
                     ddof=ddof, alpha=alpha)


def corrected_rbp(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, p: float = 0.8,
                  k: int | None = None, rel: float = 1, gains: Any = None, se: SE = "delta",
                  n_replicates: int = 10_000, seed: SeedLike = 0, ddof: int = 1, alpha: float = 0.05,
                  unjudged: Unjudged = "zero") -> CorrectedEstimate:
    """Corrected rank-biased precision, weights ``(1 - p) p^(s-1)`` (Moffat & Zobel 2008).

    Binary gain ``label >= rel`` unless ``gains`` is given; ``k=None`` scores the whole ranking
    (the RBP *base*: unretrieved ranks contribute 0).
    """
    n_replicates = _n_replicates(n_replicates)
    p = check_probability("p", p)
    calibration = calibration_arg(calibration)
    idx, qids = label_positions(run, qrels, calibration, k, unjudged)
    cutoff = idx.shape[1]
    d = rbp_weights(p, cutoff)
    name = f"RBP(p={p:g})" + (f"@{cutoff}" if k is not None else "")
    return _estimate(name, calibration, idx, qids, d, _threshold_gains(calibration, gains, rel), se=se,
                     n_replicates=n_replicates, seed=seed, ddof=ddof, alpha=alpha)
