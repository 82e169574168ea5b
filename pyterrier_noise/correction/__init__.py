"""Noisy-judge metric correction (Goldberg et al. 2017)."""
from .estimates import (CorrectionWarning, JudgeCalibration, CorrectedEstimate, Comparison, MassCorrection, corrected_precision, corrected_dcg, corrected_rbp, corrected_metric, correct_per_query, correct_summary, correct_experiment, compare, label_mass, corrected_from_mass)

__all__ = ['CorrectionWarning', 'JudgeCalibration', 'CorrectedEstimate', 'Comparison', 'MassCorrection', 'corrected_precision', 'corrected_dcg', 'corrected_rbp', 'corrected_metric', 'correct_per_query', 'correct_summary', 'correct_experiment', 'compare', 'label_mass', 'corrected_from_mass']
