"""Significance tests, multiple-comparison corrections, intervals, rank agreement and reliability."""
from .agreement import kendall_tau, rbo, spearman, tau_ap
from .intervals import ConfidenceInterval, mean_ci
from .multiple import CORRECTIONS, correct_pvalues, significant
from .perquery import degradation_test, pairwise_significance, pvalue_quadrants
from .reliability import (PreferenceUnits, consistent_discrimination, discrimination_agreement,
                          discrimination_ratio, krippendorff_alpha, pairwise_preference_units)
from .tests import ALTERNATIVES, TESTS, PairwiseResult, all_pairs, paired_test
from .tests import PairwiseCodes, all_pairs_t_codes, p_codes
from .tukey import tukey_hsd

__all__ = [
    "kendall_tau", "tau_ap", "spearman", "rbo",
    "krippendorff_alpha", "PreferenceUnits", "pairwise_preference_units", "discrimination_ratio",
    "consistent_discrimination", "discrimination_agreement",
    "TESTS", "ALTERNATIVES", "PairwiseResult", "paired_test", "all_pairs",
    "PairwiseCodes", "all_pairs_t_codes", "p_codes",
    "CORRECTIONS", "correct_pvalues", "significant",
    "tukey_hsd",
    "ConfidenceInterval", "mean_ci",
    "pairwise_significance", "degradation_test", "pvalue_quadrants",
]
