"""Helpers shared by the correction modules: warnings that point at the user's call, the normal
quantiles of the intervals and tests, and the gain
of each label for a measure."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from scipy import special, stats

from .._validation import announce, check_choice, check_int
from .._warnings import CorrectionWarning, warn
from ..engine import gains

if TYPE_CHECKING:  # pragma: no cover
    from ..engine import MeasureSpec

SeedLike = Union[int, np.random.Generator, None]

_SINGULAR_DET = 1e-9        # |det J| below this: the judge carries no usable information
_MAX_COND = 1e12            # condition number above this: the correction is numerically meaningless
_NEAR_RANDOM_Z = 2.0        # warn when D / sd(D) < 2
_BOOT_CELLS = 2_000_000     # topic-resampling weights per chunk (replicates x topics)



def _det_sd(J: np.ndarray, n_rows: np.ndarray, det: float, J_inv: np.ndarray) -> float:
    """Delta-method SD of ``det J`` when each row of the confusion matrix ``J`` is a multinomial
    over ``n_rows`` pairs (Goldberg et al. 2017, Eq 7-8, graded), by Jacobi's formula
    ``d det J / d J[g, b] = det J * (J^-1)[b, g]`` (binary: ``sqrt(V[J_R] + V[J_N])``)."""
    grad = det * J_inv.T                                 # grad[g, b]
    mean = (J * grad).sum(axis=1)
    var = ((J * grad ** 2).sum(axis=1) - mean ** 2) / n_rows
    return float(np.sqrt(np.maximum(var, 0.0).sum()))


def _warn(message: str) -> None:
    warn(message, CorrectionWarning)


def _announce(message: str) -> None:
    announce(message)


def _py(x: Any) -> Any:
    """A numpy scalar as the plain Python value (for labels and messages)."""
    return x.item() if isinstance(x, np.generic) else x


def _check_ddof(ddof: Any) -> int:
    return check_choice("ddof", ddof, (0, 1))


def _n_replicates(n_replicates: int, minimum: int = 2) -> int:
    """The bootstrap replicate count."""
    return check_int("n_replicates", n_replicates, minimum)


@functools.lru_cache(maxsize=64)
def _z(alpha: float) -> float:
    """The two-sided normal quantile of ``alpha`` (the same few levels over and over: computed once each)."""
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def _p_value(z: float, alternative: str) -> float:
    """The normal p-value of ``z``: ``scipy.special.ndtr``, the function ``stats.norm.sf`` and
    ``stats.norm.cdf`` evaluate (``sf(z) = ndtr(-z)``), without the distribution's argument checks."""
    if alternative == "two-sided":
        return float(2.0 * special.ndtr(-abs(z)))
    if alternative == "greater":
        return float(special.ndtr(-z))
    return float(special.ndtr(z))


def measure_gains(labels: np.ndarray, spec: MeasureSpec) -> np.ndarray:
    """The engine's gain of each label for a measure (graded for DCG / nDCG, else ``label >= rel``)."""
    labels = np.asarray(labels, dtype=np.float64)
    if spec.family in ("DCG", "nDCG"):
        return np.where(np.isnan(labels), 0.0, np.maximum(labels, 0.0))
    return gains(labels, spec)
