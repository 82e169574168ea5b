"""Noisy-judge metric correction (Goldberg et al. 2017, "Drawing Sound Conclusions from Noisy Judgments").

* :mod:`.calibration` -- :class:`JudgeCalibration`, the bronze judge's confusion matrix against a gold judge;
* :mod:`.estimates` -- label mass (engine rank weights x label matrix), :func:`corrected_from_mass` and
  the corrected P@k, DCG@k, RBP and any linear metric (:class:`CorrectedEstimate`);
* :mod:`.experiment` -- the same correction from per-query values, summaries or ``pt.Experiment`` output;
* :mod:`.compare` -- the corrected (and naive) comparison of two systems;
* cheap judges (LLM or crowd labels plus a small gold sample): :mod:`.design` (which pairs the
  humans judge, with inclusion probabilities), :mod:`.estimators` (naive, Goldberg et al., PPI,
  PPI++, gold-only), :mod:`.ratio` (nDCG@k under the pair design: a ratio estimator), :mod:`.cheap` (:func:`cheap_experiment`) and :mod:`.judge_fit` (the judge's
  confusion fitted from the gold sample).
"""
from .._warnings import CorrectionWarning
from .calibration import JudgeCalibration
from .compare import Comparison, compare
from .estimates import (CorrectedEstimate, MassCorrection, corrected_dcg, corrected_from_mass, corrected_metric,
                        corrected_precision, corrected_rbp, label_mass)
from .experiment import correct_experiment, correct_per_query, correct_summary
from .design import DESIGNS, GoldSample, PlannedSelector, ht_covariance, planned_selector, sample_pairs, sample_topics
from .estimators import METHODS, CheapStudy, Estimates
from .cheap import CheapResult, cheap_experiment, plan_gold_sample
from .judge_fit import fit_confusion, fit_judge

__all__ = ['CorrectionWarning', 'JudgeCalibration', 'CorrectedEstimate', 'Comparison', 'MassCorrection',
           'corrected_precision', 'corrected_dcg', 'corrected_rbp', 'corrected_metric', 'correct_per_query',
           'correct_summary', 'correct_experiment', 'compare', 'label_mass', 'corrected_from_mass',
           'DESIGNS', 'GoldSample', 'PlannedSelector', 'planned_selector', 'ht_covariance', 'sample_pairs', 'sample_topics', 'METHODS', 'CheapStudy',
           'Estimates', 'CheapResult', 'cheap_experiment', 'plan_gold_sample', 'fit_confusion', 'fit_judge']
