"""Score rounding, the realistic way ties arise (Yang 2019 thesis, Sec. 3.3 and its future work:
"non-geometric bands from real score rounding")."""
from __future__ import annotations

from fractions import Fraction
from numbers import Integral, Real
from typing import Callable, Sequence

import numpy as np

from .._validation import InputError, check_int

__all__ = ["round_scores"]

#: the largest |decimals| (and 1e-MAX_DECIMALS the finest quantum) float64 arithmetic can use: 10**309 overflows
MAX_DECIMALS = 308


def round_scores(scores: np.ndarray | Sequence[float], *, decimals: int | None = None,
                 sig_digits: int | None = None, quantum: float | str | None = None) -> np.ndarray:
    """Round scores to ``decimals`` places, ``sig_digits`` significant digits, or a multiple of
    ``quantum`` (exactly one of them).

    Score rounding is the realistic way ties arise (Yang 2019 thesis, Sec. 3.3 and its future
    work: "non-geometric bands from real score rounding").  Halves round to even, as in
    :func:`numpy.round`; rounding is monotone, so it can create ties but never swap two documents.
    ``quantum`` is taken as the exact fraction its decimal string denotes, so ``quantum=0.1``
    gives the scores 0.3, not 0.30000000000000004.
    """
    n_set = sum(p is not None for p in (decimals, sig_digits, quantum))
    if n_set != 1:
        raise InputError("give exactly one of decimals=, sig_digits= or quantum= "
                         f"(got decimals={decimals!r}, sig_digits={sig_digits!r}, quantum={quantum!r})")
    x = np.asarray(scores, dtype=np.float64)
    if decimals is not None:
        if isinstance(decimals, bool) or not isinstance(decimals, Integral):
            raise InputError(f"decimals must be an integer (may be negative), got {decimals!r}")
        d = int(decimals)
        if abs(d) > MAX_DECIMALS:
            raise InputError(f"decimals={d} is beyond what float64 scores can hold: 10**{abs(d)} overflows, so "
                             f"every score would become NaN; the largest usable value is {MAX_DECIMALS} "
                             f"(and the smallest -{MAX_DECIMALS})")
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.round(x, d)
        return _fallback(out, x, lambda v: float(round(Fraction(v), d)))
    if sig_digits is not None:
        return _round_significant(x, check_int("sig_digits", sig_digits))
    try:
        q = Fraction(repr(float(quantum))) if isinstance(quantum, Real) and not isinstance(quantum, bool) \
            else Fraction(str(quantum).strip())
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        raise InputError(f"quantum must be a positive finite number, got {quantum!r}") from None
    if q <= 0:
        raise InputError(f"quantum must be a positive finite number, got {quantum!r}")
    try:
        num, den = float(q.numerator), float(q.denominator)
    except OverflowError:
        raise InputError(f"quantum={quantum!r} is beyond what float64 scores can hold (its exact fraction needs "
                         f"integers above 1.8e308); usable quanta lie between 1e-{MAX_DECIMALS} and "
                         f"1e{MAX_DECIMALS}") from None
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.round(x * den / num)  # number of quanta
        out = m * num / den          # m/10^k is correctly rounded for q = 10^-k
    return _fallback(out, x, lambda v: float(Fraction(round(Fraction(v) / q)) * q))


def _round_significant(x: np.ndarray, s: int) -> np.ndarray:
    ax = np.abs(x)
    nz = ax > 0
    mag = np.zeros(x.shape, dtype=np.int64)
    with np.errstate(divide="ignore"):
        mag[nz] = np.floor(np.log10(ax[nz])).astype(np.int64)
    # log10 can be off by one next to powers of ten
    with np.errstate(over="ignore"):
        mag += (nz & (ax >= 10.0 ** (mag + 1))).astype(np.int64)
        mag -= (nz & (ax < 10.0 ** mag)).astype(np.int64)
    k = s - 1 - mag  # decimals to keep
    out = x.copy()
    up = nz & (k >= 0)
    down = nz & (k < 0)
    with np.errstate(over="ignore", invalid="ignore"):
        p = 10.0 ** k[up]
        out[up] = np.round(x[up] * p) / p
        p = 10.0 ** (-k[down])
        out[down] = np.round(x[down] / p) * p
    return _fallback(out, x, lambda v: float(f"{v:.{s}g}"))


def _fallback(out: np.ndarray, x: np.ndarray, exact: Callable[[float], float]) -> np.ndarray:
    """Redo, exactly, the few values where the vectorised arithmetic over- or underflowed
    (|score| beyond ~1e290 or below ~1e-290)."""
    bad = ~np.isfinite(out) & np.isfinite(x)
    for i in np.flatnonzero(bad):
        out[i] = exact(float(x[i]))
    return out

