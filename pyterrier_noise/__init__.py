"""pyterrier-noise: honest IR evaluation for PyTerrier.

How far can incomplete judgments, noisy judges and tied scores move your scores and your
conclusions, and which documents should you judge next?  One subpackage per capability:

=============== ===============================================================================
``io``          readers and writers of runs and qrels
``engine``      runs aligned to the judgments once; every measure value is computed here
``measures``    RBP / INST / INSQ with residuals as ir_measures measures; ``evaluate``
``judges``      judge-error models that draw seeded replicate qrels
``experiments`` robustness of conclusions, phi matching, depth experiments, AP bounds
``selection``   which documents to judge next, oracles and durable judging sessions
``correction``  noisy-judge metric correction (Goldberg et al. 2017)
``ties``        tie banding, rounding and breaking; tie statistics
``stats``       significance tests, corrections, intervals, rank agreement
``crowd``       pairwise crowd judgments
``report``      the HTML report and its figures
``web``         judging in the browser: several assessors over one durable session
=============== ===============================================================================

Every public name is also at the top (``pyterrier_noise.RandomFlips``) and, after ``import
pyterrier as pt``, at ``pt.noise``.  Subpackages are imported on first use (PEP 562), so
``import pyterrier_noise`` stays quick.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

__version__ = "0.1.0"

SUBPACKAGES = ("io", "engine", "measures", "judges", "experiments", "selection", "correction", "ties",
               "stats", "crowd", "report", "synthetic", "cli")
SUBPACKAGES += ("web",)         # judging in the browser (needs the 'web' extra to serve)
SUBPACKAGES += ("reproduce",)   # each source paper's headline experiment, beside its printed numbers

# public name -> the subpackage that defines it: the user-facing names of every capability (a test keeps
# this table in step with the subpackages' __all__; names that two subpackages share, and constants and
# helpers for the package's own use, are reached through their subpackage only)
_NAMES: dict[str, str] = {}


def _register(sub: str, names: str) -> None:
    for n in names.split():
        _NAMES[n] = sub


_register("_validation", "InputError")
_register("_warnings", "NoiseWarning CoercionWarning PerturbationWarning CorrectionWarning")
_register("io", "read_arrow_run read_qrels read_run read_runs read_trec_qrels read_trec_run run_file_columns "
                "TREC_RUN_FIELDS write_trec_qrels write_trec_run")
_register("engine", "AlignedRuns evaluate_tied JudgmentTable MeasureSpec TIE_POLICIES")
_register("measures", "evaluate INSQBase INSQResidual INSQUpper INSTBase INSTResidual INSTUpper RBPBase "
                      "RBPProjected RBPResidual RBPUpper to_spec with_residuals APTies nDCGTies PTies RRTies")
_register("judges", "Chain ConfusionJudge deeply_judged_runs FlipRateModel inclusion_probabilities JUDGES "
                    "JudgmentPerturbation meta_ap meta_ap_weight MetarankLogisticModel PoolDepthReduction "
                    "RandomFlips RandomRemoval RankBiasedFlips ReplicateSet sample_for_dual_assessment "
                    "sdt_params sdt_rates WEBBER_TREC6 weighted_subset")
_register("judges", "compare_predictors metarank")
_register("experiments", "assessor_significance AssessorSignificance simulation_fidelity SimulationFidelity")
_register("experiments", "compare_stability consensus_run consensus_similarity ordering_agreement")
_register("experiments", "depth_ancova judgment_overlap unjudged_depth")
_register("experiments", "versions_experiment VersionsExperiment VersionsResult")
_register("experiments", "add_residual_columns ap_bounds APBounds DEFAULT_GRID depth_experiment DEPTH_GRID "
                         "depth_labels DepthExperiment FINE_GRID match_phi match_phi_many multiplicity_table "
                         "PerturbationModel PhiMatch plot_distributions plot_phi_match plot_ranks "
                         "pool_entry_depth pool_multiplicity robustness_experiment RobustnessExperiment "
                         "RobustnessResult scores_with_residuals")
_register("selection", "CallableOracle compare_methods depth_pool JudgingEvent JudgingSession "
                       "JudgmentSelector NoisyOracle Oracle plot_curves plot_ranges qrels_oracle QrelsOracle "
                       "QuitJudging rbp_pool read_docs_file read_topics_file RunReport separation "
                       "SessionError SessionLockedError simulate SimulationResult StopRule TerminalOracle")
_register("correction", "compare Comparison correct_experiment correct_per_query correct_summary "
                        "corrected_dcg corrected_from_mass corrected_metric corrected_precision corrected_rbp "
                        "CorrectedEstimate JudgeCalibration label_mass MassCorrection")
_register("correction", "cheap_experiment CheapResult CheapStudy fit_confusion fit_judge GoldSample sample_pairs "
                        "sample_topics planned_selector")
_register("correction", "plan_gold_sample")
_register("io", "read_cheap_qrels")
_register("ties", "band_boundaries expected_by_enumeration first_multi_doc_band rho_label round_scores "
                  "ScoreRounding tie_stats tie_stats_in_chunks TieBanding TieBreaker TieRange TieStats "
                  "worst_case_delta_rbp worst_case_delta_rr worst_case_table")
_register("stats", "all_pairs ALTERNATIVES ConfidenceInterval consistent_discrimination correct_pvalues "
                   "CORRECTIONS degradation_test discrimination_agreement discrimination_ratio kendall_tau "
                   "krippendorff_alpha mean_ci paired_test pairwise_preference_units pairwise_significance "
                   "PairwiseResult PreferenceUnits pvalue_quadrants rbo significant spearman tau_ap TESTS "
                   "tukey_hsd")
_register("crowd", "absolute_inconsistency aggregate design_partitions document_agreement document_scores "
                   "document_tau gold_accuracy judgment_alpha position_bias PositionBias ratio_matrix_scores "
                   "read_pairwise simulate_crowd system_agreement SystemAgreement to_categories "
                   "transitivity_inconsistency worker_quality workers_path")
_register("report", "plot_rbp_ranges Report write_report")
_register("report", "build_report")
_register("synthetic", "default_collection make_collection SyntheticCollection")
_register("web", "create_app open_collection ServeConfig")

# old flat module names -> where they live now (deprecated aliases, one release)
_OLD_MODULES = {"perturbation": "judges", "robustness": "experiments", "uncertainty": "experiments",
                "session": "selection", "tie_kernels": "engine", "pairwise": "crowd", "agreement": "stats",
                "errors": "_validation"}

__all__ = sorted(_NAMES)  # noqa: PLE0605 (built from the table above)


def __getattr__(name: str) -> Any:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
        globals()[name] = value
        return value
    if name in _OLD_MODULES:
        from ._warnings import deprecated
        deprecated(f"pyterrier_noise.{name}", f"pyterrier_noise.{_OLD_MODULES[name]}")
        return importlib.import_module(f"{__name__}.{_OLD_MODULES[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if "ir_measures" in sys.modules:
    # ir_measures is in use (PyTerrier imports it): make the package's measure names known to
    # ir_measures.parse_measure and pt.Experiment, as importing pyterrier_noise.measures does
    importlib.import_module(f"{__name__}.measures")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(SUBPACKAGES))
