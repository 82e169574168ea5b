"""Significance tests, multiple-comparison corrections, intervals, rank agreement and reliability."""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "agreement": "kendall_tau tau_ap spearman rbo",
    "reliability": "krippendorff_alpha PreferenceUnits pairwise_preference_units discrimination_ratio "
                   "consistent_discrimination discrimination_agreement",
    "tests": "TESTS ALTERNATIVES PairwiseResult paired_test all_pairs PairwiseCodes all_pairs_t_codes p_codes",
    "multiple": "CORRECTIONS correct_pvalues significant",
    "tukey": "tukey_hsd",
    "intervals": "ConfidenceInterval mean_ci",
    "perquery": "pairwise_significance degradation_test pvalue_quadrants",
})
