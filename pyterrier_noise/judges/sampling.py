"""Weighted random subsets of Rashidi, Zobel & Moffat (2023), Fig. 3, in closed form."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import InputError, check_number, check_seed


def inclusion(w: np.ndarray, wbar: np.ndarray, rho: float | np.ndarray) -> np.ndarray:
    """Closed form of the paper's weighted_subset, broadcast over arrays.

    ``pi = w rho / wbar`` if ``wbar >= rho`` (proportional branch), else
    ``pi = 1 - (1 - w)(1 - rho)/(1 - wbar)`` (complement branch); uniform ``rho`` when the mean
    weight is 0 (proportional) or 1 (complement).  ``sum(pi) = n rho`` in every case.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        prop = wbar >= rho
        pi = np.where(prop, w * rho / wbar, 1.0 - (1.0 - w) * (1.0 - rho) / (1.0 - wbar))
        degenerate = (prop & (wbar <= 0)) | (~prop & (wbar >= 1))
    pi = np.where(degenerate, rho, pi)
    return np.clip(pi, 0.0, 1.0)


def _weights_arg(weights: Any) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise InputError(f"weights must be a 1-d array, got shape {w.shape}")
    bad = ~np.isfinite(w) | (w < 0) | (w > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"weights, row {i}: expected a relative propensity in [0, 1], got {w[i]!r}")
    return w


def inclusion_probabilities(weights: Any, n_target: float) -> np.ndarray:
    """Inclusion probability of each item in the paper's ``weighted_subset(S, wgts, n')``.

    Rashidi, Zobel & Moffat (2023), Fig. 3, in closed form: with ``rho = n'/n``
    and mean weight ``wbar``, ``pi_d = w_d rho / wbar`` when ``wbar >= rho``, otherwise
    ``pi_d = 1 - (1 - w_d)(1 - rho) / (1 - wbar)``; ``sum(pi) = n'`` (the expected subset size).
    ``n' <= 0`` gives zeros and ``n' >= n`` ones.
    """
    w = _weights_arg(weights)
    target = check_number("n_target", n_target)
    n = len(w)
    if n == 0 or target <= 0:
        return np.zeros(n)
    if target >= n:
        return np.ones(n)
    return inclusion(w, w.mean(), target / n)


def weighted_subset(weights: Any, n_target: float, seed: int | None = 0) -> np.ndarray:
    """A random subset (boolean mask) with expected size ``n_target`` (Rashidi et al. 2023, Fig. 3).

    Items are drawn by independent Bernoulli trials with :func:`inclusion_probabilities`, so the
    size is Poisson-binomial with mean ``n_target``.
    """
    pi = inclusion_probabilities(weights, n_target)
    return np.random.default_rng(check_seed(seed)).random(len(pi)) < pi
