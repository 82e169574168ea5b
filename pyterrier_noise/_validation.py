"""Errors and warnings shared by every part of the package, and the one check of each kind of argument.

Bad input raises :class:`InputError`, whose message names where the problem is (file and line,
or column and row) and what was expected.  The ``check_*`` functions are the only checks of their
kind of argument (a seed, a rate, a probability, a count, a choice, a tie policy, a confusion
matrix); each says ``NAME must be EXPECTED, got VALUE``.  Where the package must change input (drop a duplicate
judgment, clip a negative label), it says so with a :class:`CoercionWarning` that counts what it
changed: nothing is silently dropped.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ._vocab import TIE_POLICIES
from ._warnings import CoercionWarning, warn

if TYPE_CHECKING:
    import numpy as np


class InputError(ValueError):
    """A run, qrels file, frame or parameter that cannot be used as given.

    The message says where (``file:line`` or ``column 'x', row n``) and what was expected.
    ``param``: the parameter a ``check_*`` function refused (its message starts with that name),
    so that the command line can name the option the user typed instead.
    """

    param: str | None = None


def _refused(name: str, message: str) -> InputError:
    """An InputError about parameter ``name`` (see :attr:`InputError.param`)."""
    exc = InputError(message)
    exc.param = name
    return exc


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
        raise _refused(name, f"{name} must be {what} (array-like of numbers)") from None
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = tuple(int(v) for v in np.argwhere(bad)[0])
        raise _refused(name, f"{name} has a non-finite value ({arr[pos]!r}) at index {pos}; "
                         "every value must be a finite number")
    return arr


def _is_bool(x: Any) -> bool:
    """Whether ``x`` is a bool or a numpy bool (numpy is not imported for the question)."""
    np = sys.modules.get("numpy")
    return isinstance(x, bool) or (np is not None and isinstance(x, np.bool_))


def check_number(name: str, value) -> float:
    """A finite number (not a bool), or an InputError naming the argument."""
    import math
    if _is_bool(value):
        raise _refused(name, f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise _refused(name, f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise _refused(name, f"{name} must be a finite number, got {value!r}")
    return v


def check_positive(name: str, value, what: str = "a positive number") -> float:
    """A finite number above 0 (not a bool), or an InputError saying ``NAME must be WHAT``."""
    import math
    message = f"{name} must be {what}, got {value!r}"
    if _is_bool(value):
        raise _refused(name, message)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise _refused(name, message) from None
    if not (math.isfinite(v) and v > 0):
        raise _refused(name, message)
    return v


def _one_of(choices) -> str:
    return f"one of {', '.join(map(repr, choices))}"


def check_choice(name: str, value, choices, *, allow_none: bool = False):
    """``value`` if it is one of ``choices`` (or None, with ``allow_none``), else an InputError listing them."""
    if value is None and allow_none:
        return None
    if value not in choices:
        raise _refused(name, f"{name} must be {'None or ' if allow_none else ''}{_one_of(choices)}, got {value!r}")
    return value


def check_ties(ties, choices=TIE_POLICIES, *, allow_none: bool = False, name: str = "ties"):
    """A tie policy among ``choices`` (default :data:`~pyterrier_noise._vocab.TIE_POLICIES`); with
    ``allow_none``, None too (each measure's own policy)."""
    if ties is None and allow_none:
        return None
    if not isinstance(ties, str) or ties not in choices:
        also = " (or None for each measure's own)" if allow_none else ""
        raise _refused(name, f"{name} must be {_one_of(choices)}{also}, got {ties!r}")
    return ties


def check_seed(seed, name: str = "seed", *, allow_none: bool = True) -> int | None:
    """A seed: a non-negative integer (not a bool), or None (fresh entropy) when ``allow_none``."""
    import numbers
    if seed is None and allow_none:
        return None
    if _is_bool(seed) or not isinstance(seed, numbers.Integral) or seed < 0:
        also = " (or None for fresh entropy)" if allow_none else ""
        raise _refused(name, f"{name} must be a non-negative integer{also}, got {seed!r}")
    return int(seed)


def check_rate(name: str, value) -> float:
    """A probability in the closed interval [0, 1] (a rate of 0 or 1 is a valid judge)."""
    v = check_number(name, value)
    if not 0.0 <= v <= 1.0:
        raise _refused(name, f"{name} must be a probability in [0, 1], got {value!r}")
    return v


def check_int(name: str, value, minimum: int | None = None) -> int:
    """An integer (not a bool) >= ``minimum`` (default: a positive integer), else an InputError."""
    import numbers
    low = 1 if minimum is None else minimum
    if _is_bool(value) or not isinstance(value, numbers.Integral) or value < low:
        expected = "a positive integer" if minimum is None else f"an integer >= {minimum}"
        raise _refused(name, f"{name} must be {expected}, got {value!r}")
    return int(value)


def check_probability(name: str, value: float) -> float:
    """Validate a persistence-like parameter strictly inside (0, 1)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise _refused(name, f"{name} must be a number strictly between 0 and 1, got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise _refused(name, f"{name} must be strictly between 0 and 1, got {value!r}")
    return v


def check_confusion(name: str, matrix, labels=None, *, counts: bool = False, numeric: bool = True,
                    minimum: int = 2) -> tuple[list, "np.ndarray"]:
    """A confusion matrix (rows = true label, columns = observed label) and its labels.

    ``matrix``: a square array, or a frame whose columns are the same labels, in the same order, as
    its index.  Probabilities (every cell >= 0, every row summing to 1: ``P(observed | true)``), or
    with ``counts`` non-negative integer counts.  ``labels``: one per row (default: the frame's
    index, else ``0 .. L-1``), distinct, and with ``numeric`` finite numbers.  Returns ``(labels,
    matrix)``: the labels as a list (floats when ``numeric``) in the given order, the matrix as floats.
    """
    import numpy as np
    what = "non-negative integer counts" if counts else "probabilities"
    if is_frame(matrix):
        if labels is None:
            labels = list(matrix.index)
        try:
            same = [float(c) for c in matrix.columns] == [float(i) for i in matrix.index]
        except (TypeError, ValueError):
            same = list(matrix.columns) == list(matrix.index)
        if not same:
            raise _refused(name, f"{name} frame's columns (observed labels) must be the same labels in the same order "
                             f"as its index (true labels), got index {list(matrix.index)} and columns "
                             f"{list(matrix.columns)}")
        matrix = matrix.to_numpy()
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise _refused(name, f"{name} must be a square matrix of {what}, got {matrix!r}") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < minimum:
        raise _refused(name, f"{name} must be a square L x L matrix with L >= {minimum} (rows = true labels, columns = "
                         f"observed labels), got shape {m.shape}")
    bad = ~np.isfinite(m) | (m < 0)
    if counts:
        bad |= m != np.round(m)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        cell = "a non-negative integer count" if counts else "a probability >= 0"
        raise _refused(name, f"{name} row {i}, column {j} must be {cell}, got {m[i, j].item()!r}")
    if not counts:
        sums = m.sum(axis=1)
        off = np.flatnonzero(np.abs(sums - 1.0) > 1e-9)
        if off.size:
            raise _refused(
                name, f"{name} row {off[0]} sums to {sums[off[0]].item()!r}; every row (a true label) must sum "
                             f"to 1: P(observed | true)")
    n = m.shape[0]
    labels = list(range(n)) if labels is None else [x.item() if hasattr(x, "item") else x for x in labels]
    if numeric:
        try:
            values = [float(x) for x in labels]
        except (TypeError, ValueError):
            raise InputError(f"labels must be numbers (relevance grades), got {labels}") from None
        if not all(np.isfinite(values)):
            raise InputError(f"labels must be finite numbers, got {labels}")
        labels = values
    if len(labels) != n:
        raise InputError(f"labels must be {n} distinct labels, one per row of {name}, got {len(labels)} labels: "
                         f"{labels}")
    if len(set(labels)) != n:
        raise InputError(f"labels must be distinct, got {labels}")
    return labels, m


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


def byte_size(nbytes: float) -> str:
    """``nbytes`` for people: ``"512 bytes"``, ``"4.9 KiB"``, ``"3.4 GiB"``."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return ""


def check_budget(memory: float | None) -> None:
    """A memory budget (``memory=``, in bytes): a positive number, or None for no budget."""
    if memory is not None and not memory > 0:
        raise InputError(f"memory must be a positive number of bytes, got {memory!r}")


def check_memory(what: str, nbytes: float, how: str, available: int | None = None) -> None:
    """Refuse (InputError) a request whose arrays alone (``nbytes``, estimated as ``how`` says) would
    take more than the memory available, before allocating them."""
    free = available_memory() if available is None else available
    if free is not None and nbytes > free:
        raise InputError(f"{what} needs about {byte_size(nbytes)} of memory ({how}) and {byte_size(free)} is available; "
                         "ask for less")
