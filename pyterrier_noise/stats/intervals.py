"""Confidence intervals for mean scores over topics: t and percentile bootstrap (Sakai 2014,
"Statistical reform in information retrieval?")."""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from .._validation import InputError
from .._vocab import IntervalMethod
from ._checks import _alpha, _choice, _float_array, _n_resamples

__all__ = ["ConfidenceInterval", "mean_ci"]


class ConfidenceInterval(NamedTuple):
    """Lower and upper limits of a confidence interval (arrays of the batch shape)."""

    low: np.ndarray | float
    high: np.ndarray | float



def mean_ci(scores: object, confidence: float = 0.95, method: IntervalMethod = "t",
            axis: int = -1, n_resamples: int = 10_000,
            seed: int | np.random.Generator | None = 0) -> ConfidenceInterval:
    """Confidence interval for a mean score over topics (vectorised over other axes).

    * ``"t"``: ``mean +- t_{(1+c)/2, n-1} * sd / sqrt(n)`` (``scipy.stats.ttest_1samp``).
    * ``"bootstrap"``: percentile bootstrap of the mean (``scipy.stats.bootstrap``,
      ``method="percentile"``), seeded; the same bootstrap samples serve every batch element.

    For a paired comparison pass the per-topic differences ``a - b``. Reporting intervals with
    p-values follows Sakai (2014, "Statistical reform in information retrieval?").

    Args:
        scores: per-topic scores; ``axis`` is the topic axis.
        confidence: confidence level in (0, 1).
        method: ``"t"`` or ``"bootstrap"``.
        axis: topic axis.
        n_resamples: bootstrap samples.
        seed: bootstrap seed.

    Returns:
        ``ConfidenceInterval(low, high)``.
    """
    _choice("method", method, ("t", "bootstrap"))
    conf = _alpha(confidence)
    n_res = _n_resamples(n_resamples)
    x = _float_array("scores", scores)
    if x.ndim == 0:
        raise InputError("scores must have a topic axis (got a scalar)")
    if not -x.ndim <= axis < x.ndim:
        raise InputError(f"axis {axis} is out of range for scores with {x.ndim} dimension(s)")
    if x.shape[axis] < 2:
        raise InputError(f"a confidence interval needs at least 2 topics, got {x.shape[axis]}")
    from scipy import stats as _st   # on first use: scipy.stats is slow to import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if method == "t":
            ci = _st.ttest_1samp(x, 0.0, axis=axis).confidence_interval(conf)
        else:
            ci = _st.bootstrap((x,), np.mean, axis=axis, vectorized=True, n_resamples=n_res,
                               confidence_level=conf, method="percentile",
                               rng=np.random.default_rng(seed)).confidence_interval
    low, high = np.asarray(ci.low, dtype=float), np.asarray(ci.high, dtype=float)
    return ConfidenceInterval(low[()] if low.ndim == 0 else low,
                              high[()] if high.ndim == 0 else high)


