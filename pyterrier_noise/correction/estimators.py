"""Estimators of a system's mean score, and of a pair's difference, from cheap labels plus a gold sample.

The runs are aligned once (:class:`~pyterrier_noise.engine.AlignedRuns`); a version of the
judgments is a label vector over the judgment table (the cheap judge's labels, the gold labels).
:class:`CheapStudy` computes, for every system and every pair of systems (``i < j`` in
``numpy.triu_indices`` order), estimate and standard error by each method:

``naive``
    the mean over topics of the engine's per-topic values on the cheap labels (today's practice),
    with the t interval over topics whatever the scope.
``goldberg``
    Goldberg et al. (2017, Eq 14/18) corrected gains ``w = J^-1 v`` from the confusion of the
    gold sample (weighted by ``1 / pi``), SE by their delta method (Eq 7, graded form), the
    calibration shared by both systems of a pair; in the collection scope plus the cheap judge's own
    noise on these documents (``CheapStudy._judge_noise``).  Linear measures only (P@k, DCG@k, RBP).
``gold``
    the gold labels alone: Horvitz-Thompson over the sampled pairs (pair design) or the mean over
    the gold-judged topics (topic design).
``ppi`` / ``ppi++``
    prediction-powered inference (Angelopoulos et al. 2023) and its power-tuned form PPI++
    (Angelopoulos, Duchi and Zrnic 2023): ``lam * cheap + (gold - lam * cheap on the sample)``
    with ``lam = 1`` or the variance-minimising ``lam`` in [0, 1] (per system and per pair).

Which estimator is valid where.  Under the *pair design* (a gold sample of (query, document)
pairs with known inclusion probabilities) the rectifier is per document, which is unbiased only
for measures linear in per-document gains with label-independent rank weights: P@k, DCG@k, RBP.
nDCG@k (its ideal normaliser depends on every label of the topic) gets a ratio estimator
(:mod:`.ratio`: rectified DCG over the ideal DCG of rectified grade counts, consistent with a small
bias, linearised variance) by gold, PPI and PPI++, not by Goldberg et al.'s correction; so does AP
(:mod:`.ap_pair`: the pseudo-relevance of every document, a difference estimator, plugged into AP's
numerator and its number of relevant documents, linearised variance).  RR is not linear and has no
pair-design estimator here; for it (and for nDCG and AP) the *topic design* is valid: the gold
judge labels every cheap-judged pair of a simple random sample of topics, and PPI runs over topics, the per-topic measure being the unit.  Methods that are not valid for a
measure under the design give NaN (the frame entry point says so).

``scope="collection"`` (default) targets the mean over the evaluated topics as the gold judge
would score them (the uncertainty is the gold sample's); ``scope="topics"`` targets the population
of topics the collection samples and adds the topic-sampling variance (conservatively: the
per-topic estimates' variance over topics, which already holds some of the sampling noise).
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
from scipy import sparse, stats

from .._validation import InputError, check_choice, check_int
from .._vocab import CHEAP_METHODS as METHODS
from .._vocab import SE_METHODS, VARIANCES, Variance
from .._vocab import SEMethod
from .._vocab import RUN_ORDERS, SCOPES, CheapMethod, Scope
from ..engine import AlignedRuns, MeasureSpec, position_weights
from .design import GoldSample, ht_covariance, ht_df
from ._common import _NEAR_RANDOM_Z, _det_sd, _warn, measure_gains
from ._pooled import (MIN_DESIGN_DF, _pooled_quadratics, _quad_argmin, _quad_value, _residual_moments,
                      _stratum_cross_moments)
from .estimates import calibration_bootstrap_var, corrected_from_strata
from .judge_fit import rank_strata
from .ratio import RATIO_FAMILIES, ndcg_pair_design
from .ap_pair import AP_FAMILIES, ap_pair_design

__all__ = ["CheapStudy", "Estimates", "METHODS", "LINEAR_FAMILIES", "confusion_determinant_z"]

_CACHED_PAIRS = 2000     # up to this many pairs of runs, their rank-weight products are kept (sparse)
LINEAR_FAMILIES = ("P", "DCG", "RBP")
#: Goldberg et al.'s correction fitted within these rank bins by default (``[10]``: best rank 1-10, 11+)
GOLDBERG_RANK_BINS: tuple[int, ...] = (10,)


class Estimates(NamedTuple):
    """Estimates and standard errors by method: ``{method: (value, se)}`` for systems ``(R,)`` and pairs
    ``(P,)`` (pair ``k`` is ``i[k]`` minus ``j[k]``); ``lam``: PPI++'s tuned ``lam`` per system and pair;
    ``df``: ``{method: (systems, pairs)}`` degrees of freedom of the t intervals and tests (``inf``:
    normal); ``topic_var``: (pair design) the topic-sampling variance term that ``scope="topics"``
    adds to ``se ** 2`` (given whatever the scope, so both scopes come from one call)."""

    systems: dict[str, tuple[np.ndarray, np.ndarray]]
    pairs: dict[str, tuple[np.ndarray, np.ndarray]]
    i: np.ndarray
    j: np.ndarray
    lam: tuple[np.ndarray, np.ndarray] | None = None
    df: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
    topic_var: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def quantile(self, method: str, kind: str = "systems", alpha: float = 0.05) -> np.ndarray:
        """``t_{1 - alpha/2, df}`` per system or pair (the normal quantile where ``df`` is infinite)."""
        n = len(self.i) if kind == "pairs" else len(self.systems[method][0])
        df = np.full(n, np.inf) if self.df is None or method not in self.df else \
            np.broadcast_to(self.df[method][0 if kind == "systems" else 1], (n,))
        df = np.maximum(df, 1.0)        # 0: a variance estimate of 0, nothing to go on (the interval is a point)
        return np.where(np.isfinite(df), stats.t.ppf(1 - alpha / 2, np.where(np.isfinite(df), df, 1.0)),
                        stats.norm.ppf(1 - alpha / 2))


def _nan(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full(n, np.nan), np.full(n, np.nan)


def confusion_determinant_z(counts: Any) -> float:
    """``|det J| / sd(det J)`` of a confusion count matrix (rows gold, columns cheap), the graded form of
    the binary ``D / sd(D)`` (``D = det J`` for two labels; Goldberg et al. 2017, Sec 3.2).

    ``sd(det J)`` is the delta method's, as :attr:`JudgeCalibration.sd_D
    <pyterrier_noise.correction.JudgeCalibration.sd_D>` computes it: the rows independent multinomials
    at the fitted rates (Goldberg et al.'s Eq 7-8; a row whose pairs all have one cheap grade counts as
    known exactly there, and here).
    Below 2 the matrix cannot be told apart from a singular one: the correction is not identified, the
    estimate can be far off, and the delta method's interval covers almost whatever the error (as the
    error grows, its t statistic tends to a bound of about this ratio; in the binary case exactly
    ``D / sd(D)``).  Fieller's (1954) interval for such a ratio is then unbounded.  0 for a matrix
    with a gold row without pairs."""
    c = np.asarray(counts, dtype=np.float64)
    n = c.sum(axis=-1)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.isfinite(c).all() or (n <= 0).any():
        return 0.0
    J = c / n[:, None]
    det = float(np.linalg.det(J))
    if abs(det) < 1e-12:
        return 0.0
    sd = _det_sd(J, n, det, np.linalg.inv(J))
    return float("inf") if sd == 0 else abs(det) / sd


def _binary_linear(spec: MeasureSpec) -> bool:
    """P@k and RBP with binary gains: the measures whose prediction a probability of relevance gives."""
    return spec.family in ("P", "RBP") and spec.component == "value" and spec.max_rel is None


def _spec_name(spec: MeasureSpec) -> str:
    """``P@10``, ``RBP(p=0.8)``, ``DCG@10``: a linear measure's name for messages."""
    if spec.family == "RBP":
        return f"RBP(p={spec.p:g})"
    return f"{spec.family}@{spec.cutoff}" if spec.cutoff else spec.family


def goldberg_strata_fit(stratum: np.ndarray, gi: np.ndarray, ci: np.ndarray, weight: np.ndarray, n_labels: int,
                        names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """One confusion count matrix per rank stratum from the gold pairs (Goldberg et al. 2017, Sec 3.1),
    merging a stratum whose matrix is singular or has a gold grade without pairs into its neighbour
    (the previous stratum, or the next for the first), with a warning that counts the merges.

    ``stratum``, ``gi``, ``ci``, ``weight``: each gold pair's rank stratum (0..len(names)-1), gold and
    cheap label positions and ``1 / pi``.  Counts are weighted by ``1 / pi`` and scaled back to each
    gold row's real number of pairs (the effective sizes of the multinomial rows).  Returns the merged
    group of every stratum ``(len(names),)`` and the counts per group ``(groups, L, L)``; ``None`` when
    even one matrix over all strata is singular or misses a grade (the correction is undefined)."""
    S = max(len(names), 1)
    group = np.arange(S)

    def counts_of(mask: np.ndarray) -> np.ndarray:
        c = np.zeros((n_labels, n_labels))
        np.add.at(c, (gi[mask], ci[mask]), weight[mask])
        n_row = np.bincount(gi[mask], minlength=n_labels).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return c * (n_row / c.sum(axis=1))[:, None]

    def usable(c: np.ndarray) -> bool:
        return bool(np.isfinite(c).all() and (c.sum(axis=1) > 0).all() and abs(np.linalg.det(c)) >= 1e-12)

    merged: list[str] = []
    while True:
        ids = np.unique(group)
        counts = [counts_of(np.isin(stratum, np.flatnonzero(group == k))) for k in ids]
        bad = [k for k, c in zip(ids, counts) if not usable(c)]
        if not bad:
            break
        if len(ids) == 1:
            if merged:
                _warn(f"Goldberg et al.'s correction: after merging {len(merged)} rank stratum/strata "
                      f"({'; '.join(merged)}), one confusion matrix over every stratum still has a gold grade "
                      f"without gold pairs or is singular: the correction is undefined (NaN)")
            return None
        k = bad[0]
        pos = int(np.searchsorted(ids, k))
        into = ids[pos - 1] if pos > 0 else ids[pos + 1]
        merged.append(" and ".join(names[i] for i in np.flatnonzero(group == k)))
        group[group == k] = into
    if merged:
        _warn(f"Goldberg et al.'s correction: {len(merged)} rank stratum/strata ({'; '.join(merged)}) had a gold "
              f"grade without gold pairs or a singular confusion matrix and were merged into the neighbouring "
              f"stratum")
    _, group = np.unique(group, return_inverse=True)
    return group.astype(np.int64), np.stack(counts)


class CheapStudy:
    """Runs aligned once to the cheap-judged pairs, ready to estimate from any labels and gold sample.

    Args:
        aligned: :class:`~pyterrier_noise.engine.AlignedRuns` over the judgment table of the cheap
            qrels (ties ``"trec_eval"`` or ``"given"``).
        specs: the measures (engine :class:`~pyterrier_noise.engine.MeasureSpec`).
        pairs: ``(i, j)`` index arrays of the pairs of runs to compare (default every pair ``i < j``).
        variance: of the pair-design rectifier: ``"design"``, the Horvitz-Thompson variance estimate
            alone; ``"pooled"`` (default, stratified designs): where the design-based estimate rests
            on fewer than :data:`MIN_DESIGN_DF` effective terms and is smaller, the variance under a
            model where residuals are independent of rank weights within a stratum, with the
            residuals' moments pooled over the stratum's sampled pairs and the rank weights' moments
            known for every pair.  A run's top ranks hold few sampled pairs, so with a small gold
            sample its design-based estimate is often 0 or tiny; the pooled one is not.
        goldberg_rank_bins: Goldberg et al.'s correction within rank strata: a judged pair's stratum is
            its best (1-based) rank over the runs, binned by these upper edges (default
            :data:`GOLDBERG_RANK_BINS`, ``[10]``: ranks 1-10 and 11+, pairs no run retrieves in the
            last bin); one confusion matrix per stratum, so that their assumption (the judge's errors
            depend on the true grade only) need hold only within a stratum.  ``None`` or ``[]``: one
            confusion matrix for every pair, as in the paper.
        goldberg_se: the calibration part of Goldberg et al.'s standard error: ``"delta"`` (default;
            their Eq 7, graded form, per stratum) or ``"bootstrap"`` (their parametric bootstrap,
            Alg 1: each stratum's confusion rows redrawn from their multinomial counts
            ``n_replicates`` times, ``seed`` default 0).
        ap_min_relevant: the fewest gold-relevant sampled pairs per topic (on average, over the topics
            not judged in full) for AP under the pair design; below it, or with a topic whose sample
            holds none, AP's gold/PPI/PPI++ estimates are NaN with a warning.  ``None`` (default):
            :data:`~pyterrier_noise.correction.ap_pair.MIN_RELEVANT_PER_TOPIC` (10, from the
            evidence in docs/evidence/cheap-judges.md); 0 turns the check off.
    """

    def __init__(self, aligned: AlignedRuns, specs: list[MeasureSpec], pairs: Any = None,
                 variance: Variance = "pooled",
                 goldberg_rank_bins: Sequence[int] | None = GOLDBERG_RANK_BINS,
                 goldberg_se: SEMethod = "delta", n_replicates: int = 1000,
                 seed: int | None = 0, ap_min_relevant: float | None = None) -> None:
        if aligned.ties not in RUN_ORDERS:
            raise InputError(f"cheap-judge estimators need one order per ranking (ties 'trec_eval' or 'given'), "
                             f"got {aligned.ties!r}")
        self.aligned = aligned
        self.specs = [s.validate() for s in specs]
        self.n_runs, self.n_topics = aligned.n_runs, aligned.n_topics
        self.variance = check_choice("variance", variance, VARIANCES)
        self.i, self.j = np.triu_indices(self.n_runs, 1) if pairs is None else (
            np.asarray(pairs[0], dtype=np.int64), np.asarray(pairs[1], dtype=np.int64))
        if self.i.shape != self.j.shape or (self.i.size and (min(self.i.min(), self.j.min()) < 0 or
                                                             max(self.i.max(), self.j.max()) >= self.n_runs)):
            raise InputError(f"pairs must be two index arrays of one length over runs 0..{self.n_runs - 1}")
        table = aligned.table
        self.row_topic = table.topic_index
        j = aligned.judged_positions()
        #: best (1-based) rank of each judged pair over the runs (inf: no run retrieves it)
        self.best_rank = np.full(len(table), np.inf)
        np.minimum.at(self.best_rank, j["jidx"], j["pos"] + 1.0)
        self.goldberg_rank_bins = () if goldberg_rank_bins is None else tuple(int(e) for e in goldberg_rank_bins)
        self._rank_stratum, self._rank_names = rank_strata(self.best_rank, self.goldberg_rank_bins)
        self.goldberg_se = check_choice("goldberg_se", goldberg_se, SE_METHODS)
        #: after an estimate by ``goldberg``: one row per measure and confusion matrix (``strata``), its gold
        #: pairs per gold grade, ``det_z`` (:func:`confusion_determinant_z`), ``weight`` (its share of the
        #: measure's weight over every run) and ``identified`` (``det_z >= 2``); None before
        self.goldberg_diagnostics: Any = None
        self.n_replicates = check_int("n_replicates", n_replicates, 2)
        self.seed = seed
        if ap_min_relevant is not None and not (isinstance(ap_min_relevant, (int, float, np.integer, np.floating))
                                                and not isinstance(ap_min_relevant, bool)
                                                and np.isfinite(ap_min_relevant) and ap_min_relevant >= 0):
            raise InputError(f"argument 'ap_min_relevant': expected a number >= 0 or None, got {ap_min_relevant!r}")
        self.ap_min_relevant = None if ap_min_relevant is None else float(ap_min_relevant)
        self._W: dict[MeasureSpec, sparse.csr_matrix] = {}
        self._A: dict[MeasureSpec, sparse.csc_matrix] = {}
        self._A_rows: dict[MeasureSpec, sparse.csr_matrix] = {}
        self._A_dense: dict[MeasureSpec, np.ndarray] = {}
        self._pair_products: dict[MeasureSpec, sparse.csr_matrix] = {}
        self.W_ratio: dict[MeasureSpec, sparse.csr_matrix] = {}     # nDCG: DCG's weights, per segment
        self.D_ratio: dict[MeasureSpec, sparse.csr_matrix] = {}     # ... and per run
        self.ratio_cache: dict = {}
        for spec in self.specs:
            if spec.component != "value" or spec.family not in LINEAR_FAMILIES + RATIO_FAMILIES:
                continue
            w = position_weights(spec, max(aligned.max_len, 1))[j["pos"]]
            W = sparse.csr_matrix((w, (j["seg"], j["jidx"])), shape=(aligned.n_segments, len(table)))
            if spec.family in RATIO_FAMILIES:
                run_of_seg = np.repeat(np.arange(self.n_runs), self.n_topics)
                self.W_ratio[spec] = W.tocsc()
                self.D_ratio[spec] = (sparse.csr_matrix((np.ones(aligned.n_segments), (
                    run_of_seg, np.arange(aligned.n_segments)))) @ W).tocsr()
                continue
            self._W[spec] = W.tocsc()
            run_of_seg = np.repeat(np.arange(self.n_runs), self.n_topics)
            S = sparse.csr_matrix((np.full(aligned.n_segments, 1.0 / self.n_topics),
                                   (run_of_seg, np.arange(aligned.n_segments))))
            self._A_rows[spec] = (S @ W).tocsr()
            self._A[spec] = self._A_rows[spec].tocsc()

    # -- helpers ------------------------------------------------------------------------------------

    def per_topic(self, labels: np.ndarray) -> dict[MeasureSpec, np.ndarray]:
        """The engine's per-topic values ``(runs, topics)`` of every measure on one label vector."""
        res = self.aligned.evaluate(self.specs, labels)
        return {s: v[:, :, 0] for s, v in res.items()}

    def importance(self, spec: MeasureSpec | None = None) -> np.ndarray:
        """Total rank weight of each cheap-judged pair over the runs (for the sampling designs)."""
        specs = [spec] if spec is not None else list(self._A) + list(self.D_ratio)
        if not specs:
            return np.ones(len(self.aligned.table))
        return sum(np.asarray(self._A[s].sum(axis=0)).ravel() if s in self._A else
                   np.asarray(self.D_ratio[s].sum(axis=0)).ravel() / self.n_topics for s in specs)

    def _pairs(self, x: np.ndarray) -> np.ndarray:
        return x[self.i] - x[self.j]

    def _t(self, per_topic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return per_topic.mean(axis=-1), per_topic.std(axis=-1, ddof=1) / np.sqrt(per_topic.shape[-1])

    # -- the estimators -----------------------------------------------------------------------------

    def estimate(self, cheap: np.ndarray, gold: np.ndarray, sample: GoldSample | np.ndarray, *,
                 methods: tuple[CheapMethod, ...] = METHODS, scope: Scope = "collection",
                 grades: np.ndarray | None = None, ddof: int = 1,
                 soft: Any = None) -> dict[MeasureSpec, Estimates]:
        """Estimates of every measure by every method.

        Args:
            cheap: the cheap label of every table row (NaN: unjudged).
            gold: the gold labels of the sampled rows (pair design: in ``sample.rows`` order) or of
                every table row (topic design; rows of other topics are ignored).
            sample: a :class:`GoldSample` (pair design) or an array of gold-judged topic numbers
                (topic design).
            methods: any of :data:`METHODS`.
            scope: ``"collection"`` or ``"topics"`` (see the module doc).
            grades: the label set of the confusion matrix (``goldberg``; default the labels seen).
            ddof: of the variances over topics in the topic design (``ddof=0`` matches ppi_py).
            soft: soft labels: the cheap judge's probability that each table row is relevant (e.g. from
                an LLM's label distribution), used by ``ppi`` and ``ppi++`` under the pair design as
                the prediction of the binary gain of P@k and RBP (their expectation, as Oosterhuis
                et al. 2024 use the judge's distribution) instead of the hard label's gain; the other
                measures and methods, and ``naive``, keep the hard labels.
        """
        for m in methods:
            check_choice("method", m, METHODS)
        check_choice("scope", scope, SCOPES)
        cheap = np.asarray(cheap, dtype=np.float64)
        if cheap.shape != (len(self.aligned.table),):
            raise InputError(f"cheap labels must be one per judgment ({len(self.aligned.table)}), got {cheap.shape}")
        naive = self.per_topic(cheap)
        if soft is not None:
            soft = np.asarray(soft, dtype=np.float64)
            if soft.shape != cheap.shape or not np.isfinite(soft).all() or ((soft < 0) | (soft > 1)).any():
                raise InputError(f"soft labels must be one probability in [0, 1] per judgment ({len(cheap)}), "
                                 f"got shape {soft.shape}")
        if "goldberg" in methods:
            self.goldberg_diagnostics = None
        if isinstance(sample, GoldSample):
            return {s: self._pair_design(s, naive[s], cheap, np.asarray(gold, dtype=np.float64), sample, methods,
                                         scope, grades, soft if _binary_linear(s) else None) for s in self.specs}
        return self._topic_design(naive, cheap, np.asarray(gold, dtype=np.float64), np.asarray(sample), methods,
                                  scope, ddof)

    def _naive(self, per_topic: np.ndarray) -> tuple[tuple, tuple]:
        return self._t(per_topic), self._t(self._pairs(per_topic))

    def _pair_design(self, spec: MeasureSpec, naive: np.ndarray, cheap: np.ndarray, gold: np.ndarray,
                     sample: GoldSample, methods: tuple[str, ...], scope: str,
                     grades: np.ndarray | None, soft: np.ndarray | None = None) -> Estimates:
        R, P = self.n_runs, len(self.i)
        systems: dict = {}
        pairs: dict = {}
        df: dict = {}
        tv: dict = {}
        if "naive" in methods:
            systems["naive"], pairs["naive"] = self._naive(naive)
            df["naive"] = (np.full(R, self.n_topics - 1.0), np.full(P, self.n_topics - 1.0))
        linear = spec in self._A
        lam_out = None
        if linear and any(m in methods for m in ("gold", "ppi", "ppi++")):
            lam_out = self._rectified(spec, naive, cheap, gold, sample, methods, scope, systems, pairs, df, tv,
                                      soft)
        if spec in self.W_ratio and any(m in methods for m in ("gold", "ppi", "ppi++")):
            lam_out = ndcg_pair_design(self, spec, cheap, gold, sample, methods, scope, systems, pairs, df, tv)
        if spec.family in AP_FAMILIES and any(m in methods for m in ("gold", "ppi", "ppi++")):
            lam_out = ap_pair_design(self, spec, cheap, gold, sample, methods, scope, systems, pairs, df, tv)
        if linear and "goldberg" in methods:
            systems["goldberg"], pairs["goldberg"], tv["goldberg"] = self._goldberg(spec, cheap, gold, sample, scope,
                                                                                  grades)
        for m in methods:
            if m not in systems:
                systems[m], pairs[m] = _nan(R), _nan(P)
        return Estimates(systems, pairs, self.i, self.j, lam_out, df, tv)

    def _rectified(self, spec: MeasureSpec, naive: np.ndarray, cheap: np.ndarray, gold: np.ndarray,
                   sample: GoldSample, methods: tuple[str, ...], scope: str, systems: dict, pairs: dict,
                   df: dict, tv: dict, soft: np.ndarray | None = None) -> tuple:
        """Horvitz-Thompson rectifier ``lam * cheap + HT(w (g(gold) - lam g(cheap)))`` (pair design); with
        ``soft``, ``g(cheap)`` is the soft gain of every pair."""
        A = self._A[spec]
        R = self.n_runs
        rows, pi = sample.rows, sample.pi
        if gold.shape != rows.shape:
            raise InputError(f"gold labels must be one per sampled pair ({len(rows)}), got shape {gold.shape}")
        gy = measure_gains(gold, spec)
        gh = measure_gains(cheap[rows], spec) if soft is None else soft[rows]
        if soft is not None:     # the predictions' per-topic values: the engine's weights times the soft gains
            naive = (self._W[spec] @ soft).reshape(self.n_runs, self.n_topics)
        As = A[:, rows].toarray().T                      # (n, runs): weight of each sampled pair per run
        Zy, Zh = As * gy[:, None], As * gh[:, None]
        t_cheap = naive.mean(axis=1)                     # = A @ g(cheap), the engine's values
        hy, hh = (Zy / pi[:, None]).sum(axis=0), (Zh / pi[:, None]).sum(axis=0)
        C = ht_covariance(np.concatenate([Zy, Zh], axis=1), sample)
        Cyy, Cyh, Chh = C[:R, :R], 0.5 * (C[:R, R:] + C[R:, :R].T), C[R:, R:]

        def contrast(M: np.ndarray) -> np.ndarray:
            return M[self.i, self.i] + M[self.j, self.j] - M[self.i, self.j] - M[self.j, self.i]

        dyy, dyh, dhh = np.diag(Cyy), np.diag(Cyh), np.diag(Chh)
        pyy, pyh, phh = contrast(Cyy), contrast(Cyh), contrast(Chh)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_s = np.clip(np.where(dhh > 0, dyh / dhh, 0.0), 0.0, 1.0)
            lam_p = np.clip(np.where(phh > 0, pyh / phh, 0.0), 0.0, 1.0)
        Ws = self._W[spec][:, rows]
        per_y = (Ws @ (gy / pi)).reshape(self.n_runs, self.n_topics)
        per_h = (Ws @ (gh / pi)).reshape(self.n_runs, self.n_topics)
        pooled = self._pooled_moments(spec, sample, gy, gh) if self.variance == "pooled" else None
        quad = _pooled_quadratics(pooled) if pooled is not None else None
        for m, ls, lp in (("gold", 0.0, 0.0), ("ppi", 1.0, 1.0), ("ppi++", lam_s, lam_p)):
            if m not in methods:
                continue
            ls = np.broadcast_to(np.asarray(ls, dtype=np.float64), (R,))
            lp = np.broadcast_to(np.asarray(lp, dtype=np.float64), (len(self.i),))
            Zm = Zy - ls * Zh
            Zp = (Zy[:, self.i] - Zy[:, self.j]) - lp * (Zh[:, self.i] - Zh[:, self.j])
            dfs, dfp = ht_df(Zm, sample), ht_df(Zp, sample)
            use_s = use_p = None
            if quad is not None:
                # where the design-based variance rests on few terms, the pooled model gives the variance
                # (and, for PPI++, the lam that minimises it)
                use_s, use_p = dfs < MIN_DESIGN_DF, dfp < MIN_DESIGN_DF
                if m == "ppi++":
                    ls = np.where(use_s, _quad_argmin(quad[0]), ls)
                    lp = np.where(use_p, _quad_argmin(quad[1]), lp)
                    lam_s, lam_p = ls, lp
                    Zm = Zy - ls * Zh
                    Zp = (Zy[:, self.i] - Zy[:, self.j]) - lp * (Zh[:, self.i] - Zh[:, self.j])
                    dfs, dfp = np.where(use_s, dfs, ht_df(Zm, sample)), np.where(use_p, dfp, ht_df(Zp, sample))
            val = ls * t_cheap + hy - ls * hh
            var = dyy - 2 * ls * dyh + ls ** 2 * dhh
            dval = self._pairs(t_cheap) * lp + self._pairs(hy) - lp * self._pairs(hh)
            dvar = pyy - 2 * lp * pyh + lp ** 2 * phh
            if quad is not None:
                vs, vp = _quad_value(quad[0], ls), _quad_value(quad[1], lp)
                var, dvar = np.where(use_s, vs, var), np.where(use_p, vp, dvar)
                dfs, dfp = np.where(use_s, pooled["df"], dfs), np.where(use_p, pooled["df"], dfp)
            lsv = np.broadcast_to(ls, (self.n_runs,))[:, None]
            lpv = np.broadcast_to(lp, (len(self.i),))[:, None]
            tv[m] = ((lsv * naive + per_y - lsv * per_h).var(axis=1, ddof=1) / self.n_topics,
                     (lpv * self._pairs(naive) + self._pairs(per_y) - lpv * self._pairs(per_h)).var(
                         axis=1, ddof=1) / self.n_topics)
            if scope == "topics":
                var, dvar = var + tv[m][0], dvar + tv[m][1]
            systems[m] = (val, np.sqrt(np.maximum(var, 0.0)))
            pairs[m] = (dval, np.sqrt(np.maximum(dvar, 0.0)))
            df[m] = (dfs, dfp)
        return lam_s, lam_p

    def _dense(self, spec: MeasureSpec) -> np.ndarray:
        if spec not in self._A_dense:
            self._A_dense[spec] = self._A_rows[spec].toarray()
        return self._A_dense[spec]

    def _pooled_moments(self, spec: MeasureSpec, sample: GoldSample, gy: np.ndarray, gh: np.ndarray) -> dict | None:
        """Per stratum: the population moments of every run's (and pair's) rank weights, known for every
        pair, and the gains' moments pooled over the stratum's sampled pairs (see ``variance``)."""
        if sample.stratum_all is None:
            return None
        s_all = sample.stratum_all
        H = int(s_all.max()) + 1
        Nh = np.bincount(s_all, minlength=H).astype(np.float64)
        onehot = sparse.csr_matrix((np.ones(len(s_all)), (np.arange(len(s_all)), s_all)), shape=(len(s_all), H))
        A = self._A_rows[spec]                                   # (runs, pairs of the table)
        w1 = np.asarray((A @ onehot).todense()) / Nh
        w2 = np.asarray((A.multiply(A) @ onehot).todense()) / Nh
        if len(self.i) <= _CACHED_PAIRS:   # the pairs' weight products, kept: one sparse product per call
            if spec not in self._pair_products:
                D = self._dense(spec)
                self._pair_products[spec] = sparse.csr_matrix(D[self.i] * D[self.j])
            x = np.asarray((self._pair_products[spec] @ onehot).todense()) / Nh
        else:                               # one Gram matrix of the runs' weights per stratum
            x = _stratum_cross_moments(self._dense(spec), s_all, self.i, self.j)
        d1 = w1[self.i] - w1[self.j]
        d2 = w2[self.i] + w2[self.j] - 2 * x
        return dict(w1=w1, w2=w2, d1=d1, d2=d2, **_residual_moments(sample, gy, gh))

    def _goldberg(self, spec: MeasureSpec, cheap: np.ndarray, gold: np.ndarray, sample: GoldSample, scope: str,
                  grades: np.ndarray | None) -> tuple[tuple, tuple]:
        """Goldberg et al. (2017) with the gold sample's confusion (weighted by ``1 / pi``), fitted within
        each rank stratum (``goldberg_rank_bins``): ``theta = sum_s mean_q(c_qs) . J_s^-1 v``, where
        ``c_qs`` is the discounted label mass of the stratum's documents (Eq 14/18 per stratum); the
        strata's calibrations are fitted from disjoint gold pairs, so their delta-method variances add."""
        R, P = self.n_runs, len(self.i)
        rows = sample.rows
        ch = cheap[rows]
        ok = ~np.isnan(ch) & ~np.isnan(gold)
        if grades is None:
            grades = np.unique(np.concatenate([cheap[~np.isnan(cheap)], gold[ok]]))
        L = len(grades)
        fit = goldberg_strata_fit(self._rank_stratum[rows][ok], np.searchsorted(grades, gold[ok]),
                                  np.searchsorted(grades, ch[ok]), 1.0 / sample.pi[ok], L, self._rank_names)
        if fit is None:
            return _nan(R), _nan(P), (np.full(R, np.nan), np.full(P, np.nan))
        group, counts = fit
        G = len(counts)
        row_group = group[self._rank_stratum]
        judged = ~np.isnan(cheap)
        cidx = np.searchsorted(grades, np.nan_to_num(cheap, nan=grades[0]))
        onehot = sparse.csr_matrix((judged.astype(np.float64), (np.arange(len(cheap)), row_group * L + cidx)),
                                   shape=(len(cheap), G * L))
        mass = np.asarray((self._W[spec] @ onehot).todense()).reshape(self.n_runs, self.n_topics, G, L)
        mass = mass.transpose(0, 2, 1, 3)                            # (runs, strata, topics, labels)
        self._goldberg_identification(spec, group, counts, mass)
        v = measure_gains(grades, spec)
        noise = self._judge_noise(spec, counts, v, cidx, judged, row_group) if scope == "collection" else (0.0, 0.0)
        out, qv = [], []
        for m, nv in zip((mass, mass[self.i] - mass[self.j]), noise):
            res = corrected_from_strata(m, counts, v)
            calib = res.calibration_var.sum(axis=(-2, -1)) if self.goldberg_se == "delta" else \
                calibration_bootstrap_var(m.mean(axis=-2), counts, v, n_replicates=self.n_replicates, seed=self.seed)
            var = calib + (res.query_var if scope == "topics" else nv)
            out.append((res.value, np.sqrt(np.maximum(var, 0.0))))
            qv.append(res.query_var)
        return out[0], out[1], (qv[0], qv[1])

    def _goldberg_identification(self, spec: MeasureSpec, group: np.ndarray, counts: np.ndarray,
                                 mass: np.ndarray) -> None:
        """Record, per confusion matrix of Goldberg et al.'s fit, its gold pairs, ``|det J| / sd(det J)``
        (:func:`confusion_determinant_z`) and its share of the measure's weight over every run, in
        :attr:`goldberg_diagnostics`; warn for a matrix that carries weight and is not identified."""
        import pandas as pd
        total = mass.sum()
        rows = []
        for k, c in enumerate(counts):
            strata = " and ".join(self._rank_names[i] for i in np.flatnonzero(group == k)) or "all"
            z = confusion_determinant_z(c)
            share = float(mass[:, k].sum() / total) if total > 0 else 0.0
            rows.append({"measure": _spec_name(spec), "strata": strata,
                         "gold_pairs": tuple(int(round(x)) for x in c.sum(axis=1)), "det_z": z,
                         "weight": share, "identified": bool(z >= _NEAR_RANDOM_Z)})
            if share > 0 and z < _NEAR_RANDOM_Z:
                _warn(f"Goldberg et al.'s correction of {_spec_name(spec)}: the confusion matrix of rank stratum "
                      f"{strata} ({share:.0%} of the measure's weight; gold pairs per gold grade "
                      f"{', '.join(str(x) for x in rows[-1]['gold_pairs'])}) is not identified by the gold sample: "
                      f"|det J| / sd(det J) = {z:.3g} < {_NEAR_RANDOM_Z:g}. The estimate can be far off, and its "
                      f"interval then covers almost whatever the error (conservative); more gold pairs of the "
                      f"thin grades are needed")
        frame = pd.DataFrame(rows, columns=["measure", "strata", "gold_pairs", "det_z", "weight", "identified"])
        old = self.goldberg_diagnostics
        keep = old[old["measure"] != _spec_name(spec)] if old is not None else None
        self.goldberg_diagnostics = frame if keep is None or keep.empty else pd.concat([keep, frame],
                                                                                         ignore_index=True)

    def _judge_noise(self, spec: MeasureSpec, counts: np.ndarray, v: np.ndarray, cidx: np.ndarray,
                     judged: np.ndarray, group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The cheap judge's own noise on these documents, for Goldberg et al.'s estimate in the collection
        scope: ``sum_d a_d^2 Var(w_{c_d} | g_d)``, with ``Var(w_c | g) = sum_b J[g, b] w_b^2 - v_g^2``
        estimated without bias from the cheap label alone by ``u = J^-1 Var(w_c | .)`` (so that
        ``E[u_c | g] = Var(w_c | g)``).  Per system, and per pair with the difference of the weights.
        ``counts`` is one ``(L, L)`` calibration or one per rank stratum ``(S, L, L)``, with ``group`` the
        stratum of each judged pair (the documents' noises are independent, so the strata's terms add)."""
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim == 2:
            counts, group = counts[None], np.zeros(len(cidx), dtype=np.int64)
        J = counts / counts.sum(axis=-1, keepdims=True)
        w = np.linalg.solve(J, np.broadcast_to(v, J.shape[:-1])[..., None])[..., 0]          # (S, L)
        u = np.linalg.solve(J, (J @ (w ** 2)[..., None]) - (v ** 2)[:, None])[..., 0]        # (S, L)
        uc = np.where(judged, u[group, cidx], 0.0)
        D = self._dense(spec)
        G = (D * uc) @ D.T
        d = np.diag(G)
        return d, d[self.i] + d[self.j] - 2 * G[self.i, self.j]

    def _topic_design(self, naive: dict, cheap: np.ndarray, gold: np.ndarray, topics: np.ndarray,
                      methods: tuple[str, ...], scope: str, ddof: int = 1) -> dict[MeasureSpec, Estimates]:
        """PPI over topics: the gold judge labelled every pair of the sampled ``topics``."""
        if gold.shape != cheap.shape:
            raise InputError(f"topic design: gold labels must be one per judgment ({len(cheap)}), got {gold.shape}")
        n, T = len(topics), self.n_topics
        if n < 2 or len(np.unique(topics)) != n or topics.min() < 0 or topics.max() >= T:
            raise InputError(f"topic design needs at least two distinct topic numbers in 0..{T - 1}, got {topics}")
        in_sample = np.isin(self.row_topic, topics)
        gold_vec = np.where(in_sample, gold, np.nan)
        truth = self.per_topic(gold_vec)
        out = {}
        for spec in self.specs:
            Yh_all = naive[spec]
            Y, Yh = truth[spec][:, topics], Yh_all[:, topics]
            systems: dict = {}
            pairs: dict = {}
            df = {m: (np.full(self.n_runs, n - 1.0), np.full(len(self.i), n - 1.0)) for m in ("gold", "ppi", "ppi++")}
            if ddof >= 1:       # PPI++ is a regression estimator: lam is one more estimated parameter
                df["ppi++"] = (np.full(self.n_runs, max(n - 2.0, 1.0)), np.full(len(self.i), max(n - 2.0, 1.0)))
            df["naive"] = (np.full(self.n_runs, T - 1.0), np.full(len(self.i), T - 1.0))
            lam_out = None
            for kind, (y, yh, yall) in (("systems", (Y, Yh, Yh_all)),
                                        ("pairs", (self._pairs(Y), self._pairs(Yh), self._pairs(Yh_all)))):
                target = systems if kind == "systems" else pairs
                if "naive" in methods:
                    target["naive"] = self._t(yall)
                lam = _ppi_lambda(y, yh, yall, scope)
                if kind == "systems":
                    lam_s = lam
                else:
                    lam_out = (lam_s, lam)
                for m, lv in (("gold", 0.0), ("ppi", 1.0), ("ppi++", lam)):
                    if m in methods:
                        target[m] = _ppi_topics(y, yh, yall, lv, scope,
                                                ddof + 1 if m == "ppi++" and ddof >= 1 and n > 2 else ddof)
                if "goldberg" in methods:
                    target["goldberg"] = _nan(y.shape[0])
            out[spec] = Estimates(systems, pairs, self.i, self.j, lam_out, df)
        return out


def _ppi_lambda(y: np.ndarray, yh: np.ndarray, yall: np.ndarray, scope: str = "topics") -> np.ndarray:
    """PPI++'s ``lam`` for a mean, per row, clipped to [0, 1].

    ``scope="topics"``: ``Cov(Y, Yhat) / ((1 + n / N) Var(Yhat))`` (Angelopoulos, Duchi and Zrnic 2023,
    Example 6.1, as ppi_py computes it); ``"collection"``: ``Cov(Y, Yhat) / Var(Yhat)`` on the gold
    topics, which minimises the finite-population variance ``(1 - n / N) Var(Y - lam Yhat) / n``."""
    n, N = y.shape[1], yall.shape[1]
    yc, hc = y - y.mean(axis=1, keepdims=True), yh - yh.mean(axis=1, keepdims=True)
    if scope == "collection":
        cov, var = (yc * hc).sum(axis=1), (hc * hc).sum(axis=1)
    else:
        cov = (yc * hc).sum(axis=1) / n
        var = (1 + n / N) * np.concatenate([yh, yall], axis=1).var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var > 0, cov / var, 0.0)
    return np.clip(lam, 0.0, 1.0)


def _ppi_topics(y: np.ndarray, yh: np.ndarray, yall: np.ndarray, lam: Any, scope: str, ddof: int = 1) -> tuple:
    """PPI mean over topics ``lam * mean_N(Yhat) + mean_n(Y - lam Yhat)`` and its SE.

    ``scope="topics"``: the superpopulation variance ``Var(Y - lam Yhat) / n + lam^2 Var(Yhat) / N``
    (as ppi_py's ``ppi_mean_ci``); ``"collection"``: the finite-population variance of a simple random
    sample of ``n`` of the ``N`` topics, ``(1 - n / N) Var(Y - lam Yhat) / n``."""
    n, N = y.shape[1], yall.shape[1]
    lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), (y.shape[0],))[:, None]
    r = y - lam * yh
    val = lam[:, 0] * yall.mean(axis=1) + r.mean(axis=1)
    if scope == "topics":
        var = r.var(axis=1, ddof=ddof) / n + lam[:, 0] ** 2 * yall.var(axis=1, ddof=ddof) / N
    else:
        var = (1.0 - n / N) * r.var(axis=1, ddof=ddof) / n
    return val, np.sqrt(var)


def interval(value: np.ndarray, se: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Normal interval ``value -+ z_{1 - alpha/2} se``."""
    z = stats.norm.ppf(1 - alpha / 2)
    return value - z * se, value + z * se


def p_value(value: np.ndarray, se: np.ndarray, df: Any = None) -> np.ndarray:
    """Two-sided p-value of ``value / se`` under a t distribution with ``df`` degrees of freedom (normal
    where ``df`` is None or infinite; NaN where ``se`` is 0 or NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(np.where(se > 0, value / se, np.nan))
    if df is None:
        return 2 * stats.norm.sf(z)
    df = np.maximum(np.broadcast_to(np.asarray(df, dtype=np.float64), z.shape), 1.0)
    finite = np.isfinite(df)
    return 2 * np.where(finite, stats.t.sf(z, np.where(finite, df, 1.0)), stats.norm.sf(z))
