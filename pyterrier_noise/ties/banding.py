"""Geometric score bands and the worst case they cost (Yang 2019 thesis, Sec. 3.3.1-3.3.2, Table 3.3).

* :func:`band_boundaries`, :func:`first_multi_doc_band` -- the bands ``b_1 = 1``,
  ``b_{g+1} = ceil(rho * b_g)``, computed with exact rational arithmetic;
* :func:`worst_case_delta_rr`, :func:`worst_case_delta_rbp`, :func:`worst_case_table` -- the
  worst-case loss of RR and RBP from banding (thesis Sec. 3.3.2, Table 3.3, as corrected in seed
  note 004a, Sec. 3);
* :func:`rho_label` -- an exact, short rendering of rho; :data:`BAND_ORDERS` -- the orders a
  ranking can be banded in (:class:`~pyterrier_noise.ties.TieBanding`'s ``by=``).
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from numbers import Integral, Real
from typing import Sequence, Union

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int, check_probability
from .._vocab import BAND_ORDERS

__all__ = ["BAND_ORDERS", "band_boundaries", "first_multi_doc_band", "worst_case_delta_rr",
           "worst_case_delta_rbp", "worst_case_table", "rho_label"]

RhoLike = Union[int, float, str, Fraction, Decimal]


# ------------------------------------------------------------------------------------------------
# parameters

def exact_rho(rho: RhoLike) -> Fraction:
    """``rho`` as an exact fraction: ``1.1`` -> 11/10 (via its shortest decimal string, not its
    binary value 1.100000000000000088...), ``"3/2"`` -> 3/2."""
    try:
        if isinstance(rho, bool):
            raise TypeError
        if isinstance(rho, Fraction):
            r = rho
        elif isinstance(rho, Integral):
            r = Fraction(int(rho))
        elif isinstance(rho, Decimal):
            r = Fraction(rho)
        elif isinstance(rho, Real):
            r = Fraction(repr(float(rho)))
        elif isinstance(rho, str):
            r = Fraction(rho.strip())
        else:
            raise TypeError
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        raise InputError(f"rho must be a finite number >= 1 (an int, float, decimal string such as '1.1', "
                         f"Fraction or Decimal), got {rho!r}") from None
    if r < 1:
        raise InputError(f"rho must be >= 1 (rho = 1 means no banding), got {rho!r}")
    return r


def _check_depth(depth: int, name: str = "depth") -> int:
    return check_int(name, depth)


def band_order(by: str) -> str:
    """``by`` checked against :data:`BAND_ORDERS`."""
    return check_choice("by", by, BAND_ORDERS)


def rho_label(r: Fraction) -> str:
    """A short, exact rendering of rho for reprs and tables: 11/10 -> '1.1', 1/3-ish -> '4/3'."""
    d = r.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:  # a terminating decimal
        return format(Decimal(r.numerator) / Decimal(r.denominator), "f")
    return str(r)


# ------------------------------------------------------------------------------------------------
# bands

@lru_cache(maxsize=128)
def band_starts(r: Fraction, depth: int) -> np.ndarray:
    """1-based start ranks of the bands that begin at or before ``depth`` (read-only array)."""
    if r == 1:
        starts = np.arange(1, depth + 1, dtype=np.int64)
    else:
        # rho*b <= b+1 exactly when b <= 1/(rho-1): ranks 1..floor(1/(rho-1)) are singleton bands,
        # so jump straight to the first multi-document band and run the recurrence from there.
        # The recurrence is a genuine loop over bands (each start depends on the previous one);
        # it runs once per (rho, depth) and is cached.
        b = min(1 + math.floor(1 / (r - 1)), depth + 1)
        out = list(range(1, b))
        num, den = r.numerator, r.denominator
        while b <= depth:
            out.append(b)
            b = -((-num * b) // den)  # ceil(rho * b) in exact integer arithmetic
        starts = np.asarray(out, dtype=np.int64)
    starts.setflags(write=False)
    return starts


def band_boundaries(rho: RhoLike, depth: int) -> np.ndarray:
    """The bands of a ranking of ``depth`` documents under geometric banding with parameter ``rho``.

    Yang (2019) thesis, Sec. 3.3.1: ``b_1 = 1``, ``b_{g+1} = ceil(rho * b_g)``, band
    ``g = [b_g, b_{g+1} - 1]``.  The recurrence is evaluated exactly (``rho`` is taken as the
    fraction its decimal string denotes); binary floating point goes wrong, e.g. for
    ``rho = 1.1`` ``1.1 * 170`` is 187.00000000000003 and a float recurrence starts a band at 188
    instead of 187.  (The thesis's other statement, ``l_g = ceil(rho^(g-1))``, disagrees with the
    recurrence; the recurrence is the one that reproduces its Table 3.3.)

    Args:
        rho: growth factor, >= 1 (1 gives one band per rank).
        depth: length of the ranking; the last band is cut at ``depth``.

    Returns:
        Integer array of shape ``(n_bands, 2)``: the first and last rank (1-based, inclusive) of
        each band covering ranks ``1..depth``.

    Raises:
        InputError: if ``rho < 1`` or is not a number, or ``depth`` is not a positive integer.
    """
    r = exact_rho(rho)
    depth = _check_depth(depth)
    starts = band_starts(r, depth)
    ends = np.append(starts[1:] - 1, depth)
    return np.column_stack([starts, ends])


def first_multi_doc_band(rho: RhoLike) -> tuple[int, int] | None:
    """First and last rank (1-based) of the first band holding more than one document.

    Yang (2019) thesis, Sec. 3.3.2, corrected: the band starts at ``b_v = 1 + floor(1/(rho - 1))``
    (the thesis prints ``1 + ceil(...)``, which is wrong whenever ``1/(rho-1)`` is not an integer,
    e.g. it gives 4 instead of 3 for ``rho = 1.4``) and ends at ``ceil(rho * b_v) - 1``.  Banding
    is rank-safe to depth ``b_v - 1``.  Returns ``None`` for ``rho = 1`` (no band ever has two
    documents).
    """
    r = exact_rho(rho)
    if r == 1:
        return None
    b = 1 + math.floor(1 / (r - 1))
    return b, math.ceil(r * b) - 1


def worst_case_delta_rr(rho: RhoLike) -> float:
    """Largest loss of RR caused by banding: original order vs expected value over the band.

    Yang (2019) thesis, Sec. 3.3.2, Table 3.3: with the only relevant document at the top of the
    first multi-document band ``[b_v, e_v]``,
    ``Delta RR = 1/b_v - (1/(e_v - b_v + 1)) * sum_{k=b_v}^{e_v} 1/k``.  (A relevant document in a
    later band, or more than one relevant document in the band, loses less.)  0 for ``rho = 1``.
    """
    band = first_multi_doc_band(rho)
    if band is None:
        return 0.0
    b, e = band
    return float(1.0 / b - np.mean(1.0 / np.arange(b, e + 1, dtype=np.float64)))


def worst_case_delta_rbp(rho: RhoLike, p: float, depth: int = 1000) -> float:
    """Largest loss of RBP(p) caused by banding: optimistic order minus expected value.

    Yang (2019) thesis, Sec. 3.3.2, Table 3.3:
    ``Delta RBP_g = sum_{i=b_g}^{b_g+R_g-1} (1-p) p^(i-1) - R_g * w_g / l_g`` with
    ``w_g = sum_{i=b_g}^{e_g} (1-p) p^(i-1)``, and ``Delta RBP = sum_g Delta RBP_g``.  The
    thesis does not say how ``R_g`` (the number of relevant documents in band ``g``) is chosen;
    maximising each band independently over ``R_g in 0..l_g`` and summing the bands down to
    ``depth`` reproduces all of Table 3.3.  Any depth past ~100 gives
    the same four decimals; the last band is cut at ``depth``.

    Args:
        rho: growth factor >= 1.
        p: RBP persistence in (0, 1) (the thesis's ``phi``).
        depth: length of the ranking.
    """
    r = exact_rho(rho)
    p = check_probability("p", p)
    depth = _check_depth(depth)
    starts = band_starts(r, depth)
    lengths = np.diff(np.append(starts, depth + 1))
    band = np.repeat(np.arange(len(starts)), lengths)            # band of each position
    pos = np.arange(depth, dtype=np.float64)                       # 0-based positions
    w = (1.0 - p) * p ** pos
    cw = np.cumsum(w)
    before = np.concatenate(([0.0], cw))[starts - 1]               # weight above each band
    top_k = cw - before[band]                                      # weight of the band's first k ranks
    k = np.arange(depth) - (starts - 1)[band] + 1
    mean_w = np.add.reduceat(w, starts - 1) / lengths
    loss = top_k - k * mean_w[band]                                # Delta RBP_g with R_g = k
    loss[k == lengths[band]] = 0.0                                 # R_g = l_g: exactly 0 (no rounding residue)
    best = np.maximum(np.maximum.reduceat(loss, starts - 1), 0.0)  # R_g = 0 gives 0
    return float(best.sum())


def worst_case_table(rhos: Sequence[RhoLike] = (1.1, 1.2, 1.4, 1.7, 2.0),
                     ps: Sequence[float] = (0.5, 0.85), depth: int = 1000) -> pd.DataFrame:
    """Thesis Table 3.3 for any ``rhos`` and RBP persistences ``ps`` (Yang 2019, Sec. 3.3.2).

    Returns one row per rho with columns ``rho`` (exact, as text), ``delta_rr``,
    ``delta_rbp(p=...)`` for each p, and ``first_multi_band_start`` / ``first_multi_band_end``
    (``<NA>`` for rho = 1).
    """
    rows = []
    for rho in rhos:  # a handful of table rows
        r = exact_rho(rho)
        row: dict = {"rho": rho_label(r), "delta_rr": worst_case_delta_rr(r)}
        for p in ps:
            row[f"delta_rbp(p={p})"] = worst_case_delta_rbp(r, p, depth)
        band = first_multi_doc_band(r)
        row["first_multi_band_start"] = band[0] if band else pd.NA
        row["first_multi_band_end"] = band[1] if band else pd.NA
        rows.append(row)
    out = pd.DataFrame(rows)
    for c in ("first_multi_band_start", "first_multi_band_end"):
        out[c] = out[c].astype("Int64")
    return out

