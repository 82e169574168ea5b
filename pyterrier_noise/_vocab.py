"""The package's vocabulary: every set of option words, as a tuple and as a ``typing.Literal`` type.

This is the one place these words are written.  The engine, the capabilities and the command line
(``cli/options.py``) import them from here, so that a word added or renamed here changes every
``choices=``, every check and every type hint together.  Standard library only: the command line
builds its parsers from these tuples without importing numpy or pandas.

Each set is a ``Literal`` type (``TiePolicy``) for the signatures that take one of its words and a
tuple of the same words (``TIE_POLICIES``, in the documented order) for the checks and the CLI's
``choices``; ``typing.get_args`` of the type gives the tuple.
"""
from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "PAPERS",
    "TiePolicy", "TIE_POLICIES", "GroupedPolicy", "GROUPED_POLICIES", "RunOrder", "RUN_ORDERS", "BandOrder",
    "BAND_ORDERS", "TieBreakStrategy", "TIE_BREAK_STRATEGIES", "Precision",
    "PRECISIONS", "RangeColumn", "RANGE_COLUMNS", "CwlTail", "CWL_TAILS", "TieStatsLevel", "TIE_STATS_LEVELS",
    "JudgeModel", "JUDGE_MODELS", "JudgeName", "JUDGE_NAMES", "Weighting", "WEIGHTINGS", "Improper",
    "IMPROPER_FITS", "FitScope", "FIT_SCOPES", "PredictorImproper", "PREDICTOR_IMPROPER", "BinStrategy",
    "BIN_STRATEGIES", "META_AP_DEPTH", "Test", "TESTS", "Alternative", "ALTERNATIVES", "Correction",
    "CORRECTIONS", "Conclusion", "CONCLUSIONS", "Correlation", "CORRELATIONS", "KendallVariant",
    "KENDALL_VARIANTS", "RboVariant", "RBO_VARIANTS", "RboScore", "RBO_SCORES", "CorrelationInput",
    "CORRELATION_INPUTS", "RankTies", "RANK_TIES", "SpearmanMethod", "SPEARMAN_METHODS", "AlphaLevel",
    "ALPHA_LEVELS", "IntervalMethod", "INTERVAL_METHODS", "TukeyMethod", "TUKEY_METHODS", "PerqueryMissing",
    "PERQUERY_MISSING", "DistributionKind", "DISTRIBUTION_KINDS", "UnjudgedPolicy", "UNJUDGED_POLICIES",
    "Draw", "DRAWS", "TopicMismatch", "TOPIC_MISMATCH", "Highlight", "HIGHLIGHTS", "Fractional", "FRACTIONAL",
    "SelectionMethod", "SELECTION_METHODS", "SelectionTieBreak", "SELECTION_TIE_BREAKS", "Missing", "MISSING",
    "SelectionScope", "SELECTION_SCOPES", "UnknownTopics", "UNKNOWN_TOPICS", "CurveKind", "CURVE_KINDS",
    "StopLeader", "STOP_LEADERS", "Design", "DESIGNS", "CheapMethod", "CHEAP_METHODS", "SEMethod",
    "SE_METHODS", "Unjudged", "UNJUDGED", "Variance", "VARIANCES", "CalibrationSharing",
    "CALIBRATION_SHARING", "Scope", "SCOPES", "CrowdMethod", "CROWD_METHODS", "AgreementPairs",
    "AGREEMENT_PAIRS", "BiasWeighting", "BIAS_WEIGHTINGS", "RatioMethod", "RATIO_METHODS", "PairTie",
    "PAIR_TIES", "WebRole", "WEB_ROLES",
]

# ---------------------------------------------------------------------------------------------
# ties and run order (engine, measures, ties)

#: how equal scores are ordered: trec_eval's (score descending, docno descending), the run's own
#: ranks (given), or the tie group as an unordered set (its expected value, best and worst case)
TiePolicy = Literal["trec_eval", "given", "expected", "optimistic", "pessimistic"]
TIE_POLICIES: tuple[TiePolicy, ...] = get_args(TiePolicy)
#: the tie policies that treat a group of equal scores as unordered (they keep the group boundaries)
GroupedPolicy = Literal["expected", "optimistic", "pessimistic"]
GROUPED_POLICIES: tuple[GroupedPolicy, ...] = get_args(GroupedPolicy)
#: how runs are ordered for meta-AP and pools: trec_eval's order (score, then docno descending) or
#: the runs' own ``rank`` column
RunOrder = Literal["trec_eval", "given"]
RUN_ORDERS: tuple[RunOrder, ...] = get_args(RunOrder)
#: the existing order a ranking is banded in: ``"given"`` (the ``rank`` column), ``"trec_eval"``
#: (score descending, then docno descending) or ``"input"`` (row order)
BandOrder = Literal["given", "trec_eval", "input"]
BAND_ORDERS: tuple[BandOrder, ...] = get_args(BandOrder)
#: the ``band --by`` words (the command's pinned contract) for two of those orders
#: TieBreaker's strategies: trec_eval's order, the given order (``rank`` column), row order, seeded random
TieBreakStrategy = Literal["trec_eval", "given", "input", "random"]
TIE_BREAK_STRATEGIES: tuple[TieBreakStrategy, ...] = get_args(TieBreakStrategy)
#: score precisions in which equal scores are ties: float64 (exact) or float32 (trec_eval's)
Precision = Literal["float64", "float32"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
#: the RBP range columns: the judged-only lower bound and the unjudged residual (Moffat and Zobel
#: 2008), their sum, and the base divided by the judged weight
RangeColumn = Literal["base", "residual", "upper", "projected"]
RANGE_COLUMNS: tuple[RangeColumn, ...] = get_args(RangeColumn)

#: C/W/L measures' tail: cwl_eval's 1,000 ranks, or the closed-form infinite tail (Yang 2019, Sec. 2.3)
CwlTail = Literal["cwl", "exact"]
CWL_TAILS: tuple[CwlTail, ...] = get_args(CwlTail)
#: what ``pyterrier-noise ties --level`` prints: the summary, per run, per topic, or tie-group sizes
TieStatsLevel = Literal["summary", "runs", "topics", "sizes"]
TIE_STATS_LEVELS: tuple[TieStatsLevel, ...] = get_args(TieStatsLevel)

# ---------------------------------------------------------------------------------------------
# judges

#: the perturbation models of ``perturb`` and ``robustness --model``
JudgeModel = Literal["random", "rank-biased", "flip-rate", "metarank", "confusion", "pool-depth", "removal"]
JUDGE_MODELS: tuple[JudgeModel, ...] = get_args(JudgeModel)
#: the named judges of Rashidi, Zobel and Moffat (2023) (``judges.JUDGES`` gives their d' and bias)
JudgeName = Literal["smart_neutral", "nist_primary", "crowd_secondary", "extreme"]
JUDGE_NAMES: tuple[JudgeName, ...] = get_args(JudgeName)
#: how ``RankBiasedFlips`` uses the rank weights: keeping the rates' expected counts, or as probabilities
Weighting = Literal["relative", "absolute"]
WEIGHTINGS: tuple[Weighting, ...] = get_args(Weighting)
#: what the metarank model uses for a topic whose logistic fit is improper (separated): a step, 0/1
#: by metarank (Webber, Chandar and Carterette 2012), the topic's empirical flip rate, or the pooled fit
Improper = Literal["step", "rate", "universal"]
IMPROPER_FITS: tuple[Improper, ...] = get_args(Improper)
#: the disagreement models' fit: per topic, or one pooled over the topics
FitScope = Literal["per_topic", "universal"]
FIT_SCOPES: tuple[FitScope, ...] = get_args(FitScope)
#: what the metarank predictors do with an improper (separated) fit: leave the topic out, or a step
PredictorImproper = Literal["exclude", "step"]
PREDICTOR_IMPROPER: tuple[PredictorImproper, ...] = get_args(PredictorImproper)
#: how documents are drawn across metarank bins: uniformly, or evenly per bin
BinStrategy = Literal["uniform", "even"]
BIN_STRATEGIES: tuple[BinStrategy, ...] = get_args(BinStrategy)
#: evaluation depth N of meta-AP (Aslam, Pavlu and Yilmaz 2005): "N = 1000, the maximum run length"
META_AP_DEPTH = 1000

# ---------------------------------------------------------------------------------------------
# statistics and experiments

#: paired significance tests over topics
Test = Literal["t", "wilcoxon", "sign", "randomisation", "bootstrap"]
TESTS: tuple[Test, ...] = get_args(Test)
Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES: tuple[Alternative, ...] = get_args(Alternative)
#: p-value adjustments for multiple comparisons (``correction=`` as pt.Experiment)
Correction = Literal["bonferroni", "holm", "fdr_bh"]
CORRECTIONS: tuple[Correction, ...] = get_args(Correction)
#: what happens to a pair's significance conclusion in a replicate (or under another qrels version)
Conclusion = Literal["kept", "lost", "gained", "reversed"]
CONCLUSIONS: tuple[Conclusion, ...] = get_args(Conclusion)
#: what phi matching maximises: Kendall's tau_b or rank-biased overlap
Correlation = Literal["kendall", "rbo"]
CORRELATIONS: tuple[Correlation, ...] = get_args(Correlation)
#: Kendall's tau: tau_a (no correction for ties) or tau_b (corrected for ties)
KendallVariant = Literal["a", "b"]
KENDALL_VARIANTS: tuple[KendallVariant, ...] = get_args(KendallVariant)
#: rank-biased overlap (Webber, Moffat and Zobel 2010): extrapolated, minimum, residual, truncated
RboVariant = Literal["ext", "min", "res", "trunc"]
RBO_VARIANTS: tuple[RboVariant, ...] = get_args(RboVariant)
#: the RBO variants that are a similarity value (not the residual)
RboScore = Literal["ext", "min", "trunc"]
RBO_SCORES: tuple[RboScore, ...] = get_args(RboScore)
#: what a correlation's inputs are: scores, rankings, or decided from them
CorrelationInput = Literal["auto", "scores", "ranking"]
CORRELATION_INPUTS: tuple[CorrelationInput, ...] = get_args(CorrelationInput)
#: what a ranking correlation does with tied items: refuse them, or keep the first
RankTies = Literal["error", "first"]
RANK_TIES: tuple[RankTies, ...] = get_args(RankTies)
#: Spearman's rho: Pearson's r of the ranks, or the ``1 - 6 sum d^2 / (n (n^2 - 1))`` shortcut
SpearmanMethod = Literal["pearson", "shortcut"]
SPEARMAN_METHODS: tuple[SpearmanMethod, ...] = get_args(SpearmanMethod)
#: Krippendorff's alpha measurement levels
AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]
ALPHA_LEVELS: tuple[AlphaLevel, ...] = get_args(AlphaLevel)
#: a confidence interval of a mean: Student's t or the bootstrap
IntervalMethod = Literal["t", "bootstrap"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = get_args(IntervalMethod)
#: Tukey's HSD: two-way (topics as blocks), one-way, or by randomisation
TukeyMethod = Literal["blocked", "oneway", "randomised"]
TUKEY_METHODS: tuple[TukeyMethod, ...] = get_args(TukeyMethod)
#: what a per-query significance test does with a missing value: refuse it, or drop the topic
PerqueryMissing = Literal["error", "drop"]
PERQUERY_MISSING: tuple[PerqueryMissing, ...] = get_args(PerqueryMissing)
#: how a distribution plot draws the replicates
DistributionKind = Literal["box", "violin"]
DISTRIBUTION_KINDS: tuple[DistributionKind, ...] = get_args(DistributionKind)
#: how a versions experiment treats documents judged in one qrels version only
UnjudgedPolicy = Literal["trec_eval", "common"]
UNJUDGED_POLICIES: tuple[UnjudgedPolicy, ...] = get_args(UnjudgedPolicy)
#: how label versions are drawn in each resample of ``experiments.judgment_noise``
Draw = Literal["topic", "whole"]
DRAWS: tuple[Draw, ...] = get_args(Draw)
#: what to do when the runs and the qrels answer different topics
TopicMismatch = Literal["warn", "error", "ignore"]
TOPIC_MISMATCH: tuple[TopicMismatch, ...] = get_args(TopicMismatch)
#: highlight words of pt.Experiment (``"color"`` and ``"colour"`` are the same)
Highlight = Literal["bold", "color", "colour"]
HIGHLIGHTS: tuple[Highlight, ...] = get_args(Highlight)
#: how ``io.read_qrels`` treats fractional labels: truncated as trec_eval reads them, or kept
Fractional = Literal["truncate", "keep"]
FRACTIONAL: tuple[Fractional, ...] = get_args(Fractional)

# ---------------------------------------------------------------------------------------------
# judgment selection

#: selection methods of Moffat, Webber and Zobel (2007): the depth pool and methods A, B and C
SelectionMethod = Literal["pool", "A", "B", "C"]
SELECTION_METHODS: tuple[SelectionMethod, ...] = get_args(SelectionMethod)
#: how the selector orders documents of equal weight
SelectionTieBreak = Literal["deterministic", "random"]
SELECTION_TIE_BREAKS: tuple[SelectionTieBreak, ...] = get_args(SelectionTieBreak)
#: what a simulation does with a selected document the qrels do not judge
Missing = Literal["nonrel", "bypass"]
MISSING: tuple[Missing, ...] = get_args(Missing)
#: which residuals (or scores) the selector's weights are over: each query's, or the whole system's
SelectionScope = Literal["query", "system"]
SELECTION_SCOPES: tuple[SelectionScope, ...] = get_args(SelectionScope)
#: what a simulation does with a topic the qrels do not judge: skip it, or judge it as non-relevant
UnknownTopics = Literal["skip", "judge"]
UNKNOWN_TOPICS: tuple[UnknownTopics, ...] = get_args(UnknownTopics)
#: a selection curve: the full range, or the projected value
CurveKind = Literal["full", "projected"]
CURVE_KINDS: tuple[CurveKind, ...] = get_args(CurveKind)
#: the value the leading run must be separated by for a stopping rule to stop
StopLeader = Literal["upper", "projected"]
STOP_LEADERS: tuple[StopLeader, ...] = get_args(StopLeader)

# ---------------------------------------------------------------------------------------------
# correction with cheap judges

#: how the gold sample is drawn
Design = Literal["uniform", "stratified", "active"]
DESIGNS: tuple[Design, ...] = get_args(Design)
#: the estimators of a measure from cheap labels and a gold sample
CheapMethod = Literal["naive", "goldberg", "gold", "ppi", "ppi++"]
CHEAP_METHODS: tuple[CheapMethod, ...] = get_args(CheapMethod)
#: standard errors of a corrected estimate
SEMethod = Literal["delta", "bootstrap"]
SE_METHODS: tuple[SEMethod, ...] = get_args(SEMethod)
#: a ranked run's unjudged documents in a corrected metric: gain zero, the lowest label's, or an error
Unjudged = Literal["zero", "lowest", "error"]
UNJUDGED: tuple[Unjudged, ...] = get_args(Unjudged)
#: the cheap-judge estimators' variance: the design-based one, or the pooled one
Variance = Literal["design", "pooled"]
VARIANCES: tuple[Variance, ...] = get_args(Variance)
#: whether two corrected estimates share one calibration (decided from the data with ``auto``)
CalibrationSharing = Literal["auto", "shared", "independent"]
CALIBRATION_SHARING: tuple[CalibrationSharing, ...] = get_args(CalibrationSharing)
#: what one estimate is over: the collection's mean, or each topic
Scope = Literal["collection", "topics"]
SCOPES: tuple[Scope, ...] = get_args(Scope)

# ---------------------------------------------------------------------------------------------
# crowd

#: the scoring methods of ``crowd.document_scores``, in column order
CrowdMethod = Literal["preference", "absolute", "ratio", "combined"]
CROWD_METHODS: tuple[CrowdMethod, ...] = get_args(CrowdMethod)
#: which pairs two assessors' agreement is over: all, those the second orders, or those it ties
AgreementPairs = Literal["all", "b_ordered", "b_tied"]
AGREEMENT_PAIRS: tuple[AgreementPairs, ...] = get_args(AgreementPairs)
#: how a left-choice bias weights preference answers: by position, or the same for both sides
BiasWeighting = Literal["position", "symmetric"]
BIAS_WEIGHTINGS: tuple[BiasWeighting, ...] = get_args(BiasWeighting)
#: how magnitude ratios become scores: log least squares, or rounds of the thesis's iteration
RatioMethod = Literal["llsm", "iterative"]
RATIO_METHODS: tuple[RatioMethod, ...] = get_args(RatioMethod)
#: what a tied pairwise vote is for Krippendorff's alpha: a third category ``T``, or missing
PairTie = Literal["T", "missing"]
PAIR_TIES: tuple[PairTie, ...] = get_args(PairTie)

# ---------------------------------------------------------------------------------------------
# the judging server

#: who a judging-server account is
WebRole = Literal["assessor", "organiser"]
WEB_ROLES: tuple[WebRole, ...] = get_args(WebRole)


# ---------------------------------------------------------------------------------------------
# reproductions

#: the source papers that ``reproduce`` runs, by short name, with authors and year
PAPERS = {
    "rashidi2023": "Rashidi, Zobel and Moffat (2023): stability of RBP vs AP under judgment flips",
    "goldberg2017": "Goldberg et al. (2017): the eBay correction and Algorithm 2",
    "moffat2007": "Moffat, Webber and Zobel (2007): RBP worked example; Methods A, B, C vs pooling",
    "webber2012": "Webber, Chandar and Carterette (2012): flip-rate vs metarank disagreement models",
    "yang2019": "Yang (2019) thesis: banding bounds, ties at rho = 2, phi matching, pool depth",
}
