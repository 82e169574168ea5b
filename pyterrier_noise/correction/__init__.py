"""Noisy-judge metric correction (Goldberg et al. 2017, "Drawing Sound Conclusions from Noisy Judgments").

* :mod:`.calibration` -- :class:`JudgeCalibration`, the bronze judge's confusion matrix against a gold judge;
* :mod:`.estimates` -- label mass (engine rank weights x label matrix), :func:`corrected_from_mass` and
  the corrected P@k, DCG@k, RBP and any linear metric (:class:`CorrectedEstimate`);
* :mod:`.experiment` -- the same correction from per-query values, summaries or ``pt.Experiment`` output;
* :mod:`.comparison` -- the corrected (and naive) comparison of two systems;
* cheap judges (LLM or crowd labels plus a small gold sample): :mod:`.design` (which pairs the
  humans judge, with inclusion probabilities), :mod:`.estimators` (naive, Goldberg et al., PPI,
  PPI++, gold-only), :mod:`.ratio` (nDCG@k under the pair design: a ratio estimator), :mod:`.cheap` (:func:`cheap_experiment`) and :mod:`.judge_fit` (the judge's
  confusion fitted from the gold sample).
"""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".._warnings": "CorrectionWarning",
    "calibration": "JudgeCalibration",
    "estimates": "CorrectedEstimate MassCorrection corrected_precision corrected_dcg corrected_rbp corrected_metric "
                 "label_mass corrected_from_mass",
    "experiment": "correct_per_query correct_summary correct_experiment",
    "comparison": "Comparison compare",
    "design": "DESIGNS GoldSample PlannedSelector planned_selector ht_covariance sample_pairs sample_topics",
    "estimators": "METHODS CheapStudy Estimates",
    "cheap": "CheapResult cheap_experiment plan_gold_sample",
    "judge_fit": "fit_confusion fit_judge",
})
