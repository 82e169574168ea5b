"""Significance tests, multiple-comparison corrections, intervals and rank agreement."""
from .agreement import (kendall_tau, tau_ap, spearman, rbo, krippendorff_alpha, PreferenceUnits, pairwise_preference_units, discrimination_ratio, consistent_discrimination, discrimination_agreement)
from .tests import (TESTS, ALTERNATIVES, CORRECTIONS, PairwiseResult, ConfidenceInterval, paired_test, all_pairs, correct_pvalues, tukey_hsd, mean_ci, pairwise_significance, degradation_test, pvalue_quadrants, significant)

__all__ = ['kendall_tau', 'tau_ap', 'spearman', 'rbo', 'krippendorff_alpha', 'PreferenceUnits', 'pairwise_preference_units', 'discrimination_ratio', 'consistent_discrimination', 'discrimination_agreement', 'TESTS', 'ALTERNATIVES', 'CORRECTIONS', 'PairwiseResult', 'ConfidenceInterval', 'paired_test', 'all_pairs', 'correct_pvalues', 'tukey_hsd', 'mean_ci', 'pairwise_significance', 'degradation_test', 'pvalue_quadrants', 'significant']
