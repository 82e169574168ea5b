"""Errors and warnings shared by every part of the package.

Bad input raises :class:`InputError`, whose message names where the problem is (file and line,
or column and row) and what was expected.  Where the package must change input (drop a duplicate
judgment, clip a negative label), it says so with a :class:`CoercionWarning` that counts what it
changed: nothing is silently dropped.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ._warnings import CoercionWarning, warn

if TYPE_CHECKING:
    import numpy as np


class InputError(ValueError):
    """A run, qrels file, frame or parameter that cannot be used as given.

    The message says where (``file:line`` or ``column 'x', row n``) and what was expected.
    """


def where(source: str | None, line: int | None = None, column: str | None = None,
          row: Any = None) -> str:
    """Format a location for an error message: ``file.txt line 12`` or ``column 'score', row 3``."""
    parts = []
    if source:
        parts.append(str(source))
    if line is not None:
        parts.append(f"line {line}")
    if column is not None:
        parts.append(f"column {column!r}")
    if row is not None:
        parts.append(f"row {row}")
    return ", ".join(parts) if parts else "input"


def is_frame(x: Any) -> bool:
    """Whether ``x`` is a pandas DataFrame, without importing pandas (a frame means it is imported)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(x, pd.DataFrame)


def announce(message: str) -> None:
    """Emit a :class:`CoercionWarning` (used whenever input is changed rather than rejected), blamed on
    the user's line."""
    warn(message, CoercionWarning)


def finite_array(name: str, x, what: str = "numeric scores") -> "np.ndarray":
    """``x`` as a float array; non-numeric or non-finite values raise naming their index."""
    import numpy as np
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {what} (array-like of numbers)") from None
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = tuple(int(v) for v in np.argwhere(bad)[0])
        raise InputError(f"{name} has a non-finite value ({arr[pos]!r}) at index {pos}; "
                         "every value must be a finite number")
    return arr


def check_number(name: str, value) -> float:
    """A finite number (not a bool), or an InputError naming the argument."""
    import math
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return v


def check_choice(name: str, value, choices):
    """``value`` if it is one of ``choices``, else an InputError listing them."""
    if value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_int(name: str, value, minimum: int | None = None) -> int:
    """An integer (not a bool) >= ``minimum`` (default: a positive integer), else an InputError."""
    import numbers
    low = 1 if minimum is None else minimum
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        expected = "a positive integer" if minimum is None else f"an integer >= {minimum}"
        raise InputError(f"{name} must be {expected}, got {value!r}")
    return int(value)


def check_probability(name: str, value: float) -> float:
    """Validate a persistence-like parameter strictly inside (0, 1)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number strictly between 0 and 1, got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise InputError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return v


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import os
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _size(nbytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return ""


def check_memory(what: str, nbytes: float, how: str, available: int | None = None) -> None:
    """Refuse (InputError) a request whose arrays alone (``nbytes``, estimated as ``how`` says) would
    take more than the memory available, before allocating them."""
    free = available_memory() if available is None else available
    if free is not None and nbytes > free:
        raise InputError(f"{what} needs about {_size(nbytes)} of memory ({how}) and {_size(free)} is available; "
                         "ask for less")
