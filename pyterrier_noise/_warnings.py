"""The package's warnings: every one is a :class:`NoiseWarning`, so that one filter covers them all.

>>> import warnings, pyterrier_noise as pn
>>> warnings.simplefilter("error", pn.NoiseWarning)   # make every package warning an error
"""
from __future__ import annotations

import warnings


class NoiseWarning(UserWarning):
    """Base of every warning that pyterrier-noise raises."""


class CoercionWarning(NoiseWarning):
    """The package changed some input to make it usable; the message counts the changes."""


class PerturbationWarning(NoiseWarning):
    """A judge-error model cannot act as asked on these judgments (e.g. nothing to flip)."""


class CorrectionWarning(NoiseWarning):
    """A noisy-judge correction is numerically weak (a near-random judge, a value out of range)."""


def deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` is a deprecated alias of ``new`` (kept for one release)."""
    warnings.warn(f"{old} is deprecated; use {new} (the old name goes in the next release)",
                  DeprecationWarning, stacklevel=stacklevel)
