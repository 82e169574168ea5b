"""The package's warnings: every one is a :class:`NoiseWarning`, so that one filter covers them all.

>>> import warnings, pyterrier_noise as pn
>>> warnings.simplefilter("error", pn.NoiseWarning)   # make every package warning an error
"""
from __future__ import annotations

import inspect
import os
import re
import warnings


class NoiseWarning(UserWarning):
    """Base of every warning that pyterrier-noise raises."""


class CoercionWarning(NoiseWarning):
    """The package changed some input to make it usable; the message counts the changes."""


class PerturbationWarning(NoiseWarning):
    """A judge-error model cannot act as asked on these judgments (e.g. nothing to flip)."""


class CorrectionWarning(NoiseWarning):
    """A noisy-judge correction is numerically weak (a near-random judge, a value out of range)."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# the standard library's thread and process runners, through which package code can be called
_RUNNERS = tuple(os.sep + os.path.join(*p) for p in (("concurrent", "futures"), ("multiprocessing",),
                                                      ("threading.py",)))


def _internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE) or any(r in filename for r in _RUNNERS)


def warn(message: str, category: type[Warning] = NoiseWarning) -> None:
    """Emit ``message`` blamed on the user's line: the first frame outside the package (and outside the
    standard library's thread and process runners), so that ``warnings``' location and its
    once-per-location filters name the user's call, not a worker of the package."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and _internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)


def warning_kind(message: str) -> str:
    """What makes two warnings the same kind: the message without a leading file name, quoted values
    and numbers (``'runs/a.gz: ranks start at 0 in 3 ranking(s)'`` and ``'runs/b.gz: ranks start at 0
    in 30 ranking(s)'`` are one kind)."""
    text = re.sub(r"^\S*[/\\.]\S*?: ", "", message.strip())
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", text)
    return re.sub(r"\d+(?:[.,]\d+)*", "#", text)
