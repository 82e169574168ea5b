"""Argument checks and blocking shared by the statistics modules (private to :mod:`pyterrier_noise.stats`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .._validation import InputError, check_choice, check_int, check_probability, finite_array

# Resampling work is done in blocks so that (batch x block) temporaries stay around this many
# float64 values (~32 MB); the loop is over blocks, never over pairs or replicates.
_BLOCK_ELEMENTS = 1 << 22


def _choice(name: str, value: object, choices: Sequence) -> object:
    return check_choice(name, value, choices)


def _float_array(name: str, x: object) -> np.ndarray:
    """Convert to a float array; non-numeric or non-finite values raise naming the position."""
    return finite_array(name, x)


def _n_resamples(n: object) -> int:
    return check_int("n_resamples", n)


def _alpha(alpha: object) -> float:
    return check_probability("alpha", alpha)


def _block(batch: int, total: int) -> int:
    return max(1, min(total, _BLOCK_ELEMENTS // max(1, batch)))


def _system_topic_array(scores: object, name: str = "scores") -> np.ndarray:
    arr = _float_array(name, scores)
    if arr.ndim < 2:
        raise InputError(f"{name} must be a systems x topics [x replicates ...] array, "
                         f"got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise InputError(f"{name} needs at least 2 systems (axis 0), got {arr.shape[0]}")
    if arr.shape[1] < 2:
        raise InputError(f"{name} needs at least 2 topics (axis 1), got {arr.shape[1]}")
    return arr


