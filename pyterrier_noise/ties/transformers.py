"""Ties on purpose and ties by accident: banding, rounding, tie-breaking and tie statistics.

Yang (2019), *Improving the Reliability and Robustness of IR Evaluation*, PhD thesis, Ch. 3
(seed note 004a, Sec. 3; the thesis's errors are corrected there and here).

Transformers (``pt.Transformer``; each keeps every input column it does not change, recomputes a
0-based ``rank`` and returns its rows ordered by query, in order of first appearance, then rank):

* :class:`TieBanding` -- geometric score bands, ``b_1 = 1``, ``b_{g+1} = ceil(rho * b_g)``
  (thesis Sec. 3.3.1), computed with exact rational arithmetic; every document of band ``g`` gets
  the score ``1/g`` and a ``band`` column.
* :class:`ScoreRounding` -- round scores to ``decimals``, ``sig_digits`` or a ``quantum``: the
  realistic way ties arise (low-precision scoring, printed scores).
* :class:`TieBreaker` -- order tied documents by a fixed rule: ``"trec_eval"`` (score descending,
  docno descending), ``"input"`` (row order), ``"rank"`` (the ``rank`` column) or ``"random"``
  (seeded).

Functions:

* :func:`band_boundaries`, :func:`first_multi_doc_band` -- the bands themselves;
* :func:`worst_case_delta_rr`, :func:`worst_case_delta_rbp`, :func:`worst_case_table` -- the
  worst-case loss of RR and RBP from banding (thesis Sec. 3.3.2, Table 3.3);
* :func:`round_scores` -- the rounding behind :class:`ScoreRounding`, on arrays;
* :func:`tie_stats` -- tie statistics of runs in the style of thesis Table 3.2;
* :func:`expected_by_enumeration` -- brute-force expected / minimum / maximum of any metric over
  all orderings of tied groups (the reference for the closed forms of the evaluation engine).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from numbers import Integral, Real
from typing import Callable, Literal, NamedTuple, Sequence, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from .._validation import InputError, announce, check_choice, check_int, check_probability, where

__all__ = [
    "TieBanding",
    "ScoreRounding",
    "TieBreaker",
    "band_boundaries",
    "first_multi_doc_band",
    "worst_case_delta_rr",
    "worst_case_delta_rbp",
    "worst_case_table",
    "round_scores",
    "tie_stats",
    "TieStats",
    "expected_by_enumeration",
    "TieRange",
    "MAX_ORDERINGS", "tie_stats_in_chunks",
    
]

RhoLike = Union[int, float, str, Fraction, Decimal]

#: :func:`expected_by_enumeration` refuses inputs with more orderings than this by default
#: (8! = 40,320 fits; a run with two tied groups of 6 has 518,400 and does not).
MAX_ORDERINGS = 100_000

_TIE_BREAK_STRATEGIES = ("trec_eval", "input", "rank", "random")
BAND_ORDERS = ("rank", "score", "input")
PRECISIONS = ("float64", "float32")


# ------------------------------------------------------------------------------------------------
# parameters

def _exact_rho(rho: RhoLike) -> Fraction:
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


def _choice(name: str, value: object, choices: Sequence) -> object:
    return check_choice(name, value, choices)


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
def _band_starts(r: Fraction, depth: int) -> np.ndarray:
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
    r = _exact_rho(rho)
    depth = _check_depth(depth)
    starts = _band_starts(r, depth)
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
    r = _exact_rho(rho)
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


def worst_case_delta_rbp(rho: RhoLike, phi: float, depth: int = 1000) -> float:
    """Largest loss of RBP(phi) caused by banding: optimistic order minus expected value.

    Yang (2019) thesis, Sec. 3.3.2, Table 3.3:
    ``Delta RBP_g = sum_{i=b_g}^{b_g+R_g-1} (1-phi) phi^(i-1) - R_g * w_g / l_g`` with
    ``w_g = sum_{i=b_g}^{e_g} (1-phi) phi^(i-1)``, and ``Delta RBP = sum_g Delta RBP_g``.  The
    thesis does not say how ``R_g`` (the number of relevant documents in band ``g``) is chosen;
    maximising each band independently over ``R_g in 0..l_g`` and summing the bands down to
    ``depth`` reproduces all of Table 3.3 (seed note 004a, Sec. 3.7).  Any depth past ~100 gives
    the same four decimals; the last band is cut at ``depth``.
    """
    r = _exact_rho(rho)
    phi = check_probability("phi", phi)
    depth = _check_depth(depth)
    starts = _band_starts(r, depth)
    lengths = np.diff(np.append(starts, depth + 1))
    band = np.repeat(np.arange(len(starts)), lengths)            # band of each position
    pos = np.arange(depth, dtype=np.float64)                       # 0-based positions
    w = (1.0 - phi) * phi ** pos
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
                     phis: Sequence[float] = (0.5, 0.85), depth: int = 1000) -> pd.DataFrame:
    """Thesis Table 3.3 for any ``rhos`` and ``phis`` (Yang 2019, Sec. 3.3.2).

    Returns one row per rho with columns ``rho`` (exact, as text), ``delta_rr``,
    ``delta_rbp(phi=...)`` for each phi, and ``first_multi_band_start`` / ``first_multi_band_end``
    (``<NA>`` for rho = 1).
    """
    rows = []
    for rho in rhos:  # a handful of table rows
        r = _exact_rho(rho)
        row: dict = {"rho": rho_label(r), "delta_rr": worst_case_delta_rr(r)}
        for phi in phis:
            row[f"delta_rbp(phi={phi})"] = worst_case_delta_rbp(r, phi, depth)
        band = first_multi_doc_band(r)
        row["first_multi_band_start"] = band[0] if band else pd.NA
        row["first_multi_band_end"] = band[1] if band else pd.NA
        rows.append(row)
    out = pd.DataFrame(rows)
    for c in ("first_multi_band_start", "first_multi_band_end"):
        out[c] = out[c].astype("Int64")
    return out


# ------------------------------------------------------------------------------------------------
# rounding

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
        return np.round(x, int(decimals))
    if sig_digits is not None:
        if isinstance(sig_digits, bool) or not isinstance(sig_digits, Integral) or sig_digits < 1:
            raise InputError(f"sig_digits must be a positive integer, got {sig_digits!r}")
        return _round_significant(x, int(sig_digits))
    try:
        q = Fraction(repr(float(quantum))) if isinstance(quantum, Real) and not isinstance(quantum, bool) \
            else Fraction(str(quantum).strip())
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        raise InputError(f"quantum must be a positive finite number, got {quantum!r}") from None
    if q <= 0:
        raise InputError(f"quantum must be a positive finite number, got {quantum!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.round(x * q.denominator / q.numerator)  # number of quanta
        out = m * q.numerator / q.denominator          # m/10^k is correctly rounded for q = 10^-k
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


# ------------------------------------------------------------------------------------------------
# frame helpers

def _label(context: object) -> str:
    return context if isinstance(context, str) else repr(context)


def _validate(inp: pd.DataFrame, context: object, extra: Sequence[str] = ()) -> None:
    if not isinstance(inp, pd.DataFrame):
        raise InputError(f"{_label(context)}: expected a pandas DataFrame of results, got {type(inp).__name__}")
    try:
        pt.validate.result_frame(inp, extra_columns=list(extra),
                                 context=context if isinstance(context, pt.Transformer) else None)
    except pt.validate.InputValidationError:
        missing = [c for c in ("qid", "docno", *extra) if c not in inp.columns]
        raise InputError(f"{_label(context)}: the input frame lacks column(s) {missing}; expected a PyTerrier results "
                         f"frame with columns {['qid', 'docno', *extra]} (found {list(inp.columns)})") from None


def _numeric(inp: pd.DataFrame, col: str, context: object) -> np.ndarray:
    """Column ``col`` as finite float64, or InputError naming the first bad row."""
    s = inp[col]
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        conv = pd.to_numeric(s, errors="coerce")
        bad = conv.isna().to_numpy() & s.notna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{_label(context)}: {where(None, column=col, row=inp.index[i])} (qid "
                             f"{inp['qid'].iloc[i]!r}): expected a number, got {s.iloc[i]!r}")
        announce(f"{_label(context)}: column {col!r} held text; converted it to numbers "
                 f"({int(s.notna().sum())} values changed)", stacklevel=4)
        s = conv
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{_label(context)}: {where(None, column=col, row=inp.index[i])} "
                         f"(qid {inp['qid'].iloc[i]!r}): expected a finite number, got {v[i]} "
                         f"({int(bad.sum())} such value(s) in all)")
    return v


def _check_unique(inp: pd.DataFrame, keys: list[str], context: object) -> None:
    dup = inp.duplicated(keys).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        what = ", ".join(f"{k} {inp[k].iloc[i]!r}" for k in keys)
        raise InputError(f"{_label(context)}: {where(None, row=inp.index[i])} repeats {what} "
                         f"({int(dup.sum())} duplicate(s) in all); expected each document at most once per ranking")


def _codes(values: pd.Series | np.ndarray, sort: bool = False) -> np.ndarray:
    return pd.factorize(values, sort=sort)[0].astype(np.int64)


def _docno_codes(docno: pd.Series) -> np.ndarray:
    """Integer codes in byte order of the docno text (trec_eval's ``strcmp``: for UTF-8 text,
    byte order is code-point order, which is how Python and pandas compare strings)."""
    return _codes(docno.astype(str), sort=True)


def _positions(q_sorted: np.ndarray) -> np.ndarray:
    """0-based position of every row within its (contiguous) query block."""
    n = len(q_sorted)
    new = np.ones(n, dtype=bool)
    new[1:] = q_sorted[1:] != q_sorted[:-1]
    first = np.flatnonzero(new)
    return np.arange(n) - np.repeat(first, np.diff(np.append(first, n)))


def _finish(inp: pd.DataFrame, perm: np.ndarray, pos: np.ndarray, **cols: np.ndarray) -> pd.DataFrame:
    out = inp.take(perm).reset_index(drop=True)
    for name, values in cols.items():
        out[name] = values
    out["rank"] = pos.astype(np.int64)
    return out


def _empty(inp: pd.DataFrame, **dtypes: str) -> pd.DataFrame:
    out = inp.copy()
    for name, dtype in {**dtypes, "rank": "int64"}.items():
        out[name] = pd.Series(index=out.index, dtype=dtype)
    return out.reset_index(drop=True)


def _order_keys(inp: pd.DataFrame, by: str, context: object) -> list[np.ndarray]:
    """Sort keys, least significant first, for the existing order of each ranking."""
    rowpos = np.arange(len(inp))
    if by == "rank":
        return [rowpos, _numeric(inp, "rank", context)]
    if by == "score":
        return [-_docno_codes(inp["docno"]), -_numeric(inp, "score", context)]
    return [rowpos]


# ------------------------------------------------------------------------------------------------
# transformers

class TieBanding(pt.Transformer):
    """Group each ranking into geometrically growing bands of tied scores.

    Yang (2019) thesis, Sec. 3.3.1 ("deliberate score grouping"): ``b_1 = 1``,
    ``b_{g+1} = ceil(rho * b_g)``, band ``g = [b_g, b_{g+1} - 1]``, computed exactly (see
    :func:`band_boundaries`).  Band membership comes from each ranking's existing order, the
    original scores are discarded, and every document of band ``g`` gets the score ``1/g``
    (strictly decreasing across bands, as in the thesis) and ``band = g`` (1-based).  ``rank`` is
    the 0-based position in the existing order, so within a band the rows stay in their old order;
    a tie-aware measure should treat that order as arbitrary.

    ``rho = 1`` gives every document its own band: the order is unchanged and no ties remain (the
    thesis's reference point, "original run order").  The thesis recommends ``rho <= 3`` (first
    band at most 3 documents) when RR is used, and finds system comparisons barely change up to
    ``rho = 2`` with binary judgments.

    Args:
        rho: growth factor >= 1; a float is read through its decimal string (1.1 means 11/10),
            or pass a string, :class:`~fractions.Fraction` or :class:`~decimal.Decimal`.
        by: the existing order of each ranking.  ``"rank"`` (default): the ``rank`` column
            ascending (row order among equal ranks); without a ``rank`` column, as ``"score"``.
            ``"score"``: score descending, then docno descending (trec_eval's order).
            ``"input"``: row order.
    """

    def __init__(self, rho: RhoLike, by: Literal["rank", "score", "input"] = "rank") -> None:
        super().__init__()
        self.rho = rho
        self.by = _choice("by", by, BAND_ORDERS)

    @property
    def rho(self) -> Fraction:
        """The growth factor, as the exact fraction used by the recurrence (settable)."""
        return self._rho

    @rho.setter
    def rho(self, value: RhoLike) -> None:
        self._rho = _exact_rho(value)

    def __repr__(self) -> str:
        return f"TieBanding(rho={rho_label(self._rho)}" + ("" if self.by == "rank" else f", by={self.by!r}") + ")"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Band every ranking of ``inp`` (columns ``qid, docno`` plus ``score`` and/or ``rank``)."""
        by = self.by
        if by == "rank" and isinstance(inp, pd.DataFrame) and "rank" not in inp.columns:
            by = "score"
        _validate(inp, self, [by] if by != "input" else [])
        if len(inp) == 0:
            return _empty(inp, score="float64", band="int64")
        _check_unique(inp, ["qid", "docno"], self)
        keys = _order_keys(inp, by, self)
        perm = np.lexsort((*keys, _codes(inp["qid"])))
        pos = _positions(_codes(inp["qid"])[perm])
        n_max = int(pos.max()) + 1
        # position -> band map, built once up to the longest ranking (bands depend only on position)
        starts = _band_starts(self._rho, n_max)
        band_of = np.repeat(np.arange(1, len(starts) + 1, dtype=np.int64), np.diff(np.append(starts, n_max + 1)))
        band = band_of[pos]
        return _finish(inp, perm, pos, score=1.0 / band, band=band)


class ScoreRounding(pt.Transformer):
    """Round scores to ``decimals`` places, ``sig_digits`` significant digits or a ``quantum``.

    The realistic way ties arise (Yang 2019 thesis, Sec. 3.3: reduced-precision scoring; the thesis
    leaves "non-geometric bands from real score rounding" as future work).  Give exactly one of
    the three.  Rounding is monotone (see :func:`round_scores`), so no two documents swap; the
    documents it ties keep their previous relative order -- the ``rank`` column if present,
    otherwise row order -- and ``rank`` is recomputed by rounded score descending.

    Args:
        decimals: decimal places (negative rounds to tens, hundreds, ...).
        sig_digits: significant digits (>= 1).
        quantum: round to the nearest multiple of this positive step.
    """

    def __init__(self, *, decimals: int | None = None, sig_digits: int | None = None,
                 quantum: float | str | None = None) -> None:
        super().__init__()
        round_scores(np.zeros(0), decimals=decimals, sig_digits=sig_digits, quantum=quantum)  # validates
        self.decimals = decimals
        self.sig_digits = sig_digits
        self.quantum = quantum

    def __repr__(self) -> str:
        for name in ("decimals", "sig_digits", "quantum"):
            if getattr(self, name) is not None:
                return f"ScoreRounding({name}={getattr(self, name)!r})"
        return "ScoreRounding()"  # pragma: no cover - __init__ forbids it

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Round the ``score`` column of ``inp`` and re-rank."""
        _validate(inp, self, ["score"])
        if len(inp) == 0:
            return _empty(inp, score="float64")
        score = round_scores(_numeric(inp, "score", self), decimals=self.decimals,
                             sig_digits=self.sig_digits, quantum=self.quantum)
        keys = _order_keys(inp, "rank" if "rank" in inp.columns else "input", self)
        qcode = _codes(inp["qid"])
        perm = np.lexsort((*keys, -score, qcode))
        return _finish(inp, perm, _positions(qcode[perm]), score=score[perm])


class TieBreaker(pt.Transformer):
    """Put the documents of every ranking in score order with a fixed rule for ties, and re-rank.

    Yang (2019) thesis, Sec. 3.1 (tie-handling strategies):

    * ``"trec_eval"``: score descending, then docno descending -- trec_eval's ``comp_sim_docno``
      (a byte-wise ``strcmp``, reversed).  Table 3.1's run D, H, A, C, M, S, W, B, E, J becomes
      D, H, C, A, S, M, W, J, E, B.  Numeric docnos are compared as text, as trec_eval does
      ("9" > "10").
    * ``"input"``: score descending, ties in row order (what ``pt.model.add_ranks`` and cwl_eval do).
    * ``"rank"``: score descending, ties by the ``rank`` column (the thesis's canonical TREC order:
      ``sort -k4gr -k3,3``; the thesis calls trusting the system's own order "run order").
    * ``"random"``: score descending, ties in a random order drawn from ``seed``.  The draw depends
      only on the seed and the set of (qid, docno) pairs, not on the input row order, so the same
      seed gives the same output on a shuffled frame.

    Args:
        strategy: one of the four above.
        seed: an int, required for ``"random"`` (``numpy.random.default_rng(seed)``).
        precision: ``"float64"`` (default) compares scores exactly; ``"float32"`` first rounds
            them to 32-bit floats, as trec_eval and pytrec_eval store them, so that scores equal
            in float32 are ties.  Output scores are not changed by this.
        rescore: if True, replace ``score`` by ``n - rank`` (``n`` = length of the ranking), which
            is strictly decreasing, so that later components cannot re-break the ties.
    """

    def __init__(self, strategy: Literal["trec_eval", "input", "rank", "random"] = "trec_eval", *,
                 seed: int | None = None, precision: Literal["float64", "float32"] = "float64",
                 rescore: bool = False) -> None:
        super().__init__()
        self.strategy = _choice("strategy", strategy, _TIE_BREAK_STRATEGIES)
        self.precision = _choice("precision", precision, PRECISIONS)
        if strategy == "random":
            if seed is None or isinstance(seed, bool) or not isinstance(seed, Integral):
                raise InputError(f"TieBreaker('random') needs an integer seed so that its order can be reproduced, "
                                 f"got seed={seed!r}")
        elif seed is not None:
            raise InputError(f"seed is only used by strategy='random', not {strategy!r}")
        if not isinstance(rescore, bool):
            raise InputError(f"rescore must be True or False, got {rescore!r}")
        self.seed = seed
        self.rescore = rescore

    def __repr__(self) -> str:
        args = [repr(self.strategy)]
        if self.seed is not None:
            args.append(f"seed={self.seed}")
        if self.precision != "float64":
            args.append(f"precision={self.precision!r}")
        if self.rescore:
            args.append("rescore=True")
        return f"TieBreaker({', '.join(args)})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Reorder every ranking of ``inp`` (``qid, docno, score``) and recompute ``rank``."""
        _validate(inp, self, ["score", "rank"] if self.strategy == "rank" else ["score"])
        if len(inp) == 0:
            return _empty(inp, score="float64") if self.rescore else _empty(inp)
        _check_unique(inp, ["qid", "docno"], self)
        score = _numeric(inp, "score", self)
        key = score.astype(np.float32) if self.precision == "float32" else score
        if self.strategy == "trec_eval":
            tie_key = -_docno_codes(inp["docno"])
        elif self.strategy == "input":
            tie_key = np.arange(len(inp))
        elif self.strategy == "rank":
            tie_key = _numeric(inp, "rank", self)
        else:
            # draw in a canonical (qid, docno) order so that row order does not matter
            canon = np.lexsort((_docno_codes(inp["docno"]), _codes(inp["qid"].astype(str), sort=True)))
            tie_key = np.empty(len(inp))
            tie_key[canon] = np.random.default_rng(self.seed).random(len(inp))
        qcode = _codes(inp["qid"])
        perm = np.lexsort((np.arange(len(inp)), tie_key, -key, qcode))
        pos = _positions(qcode[perm])
        if not self.rescore:
            return _finish(inp, perm, pos)
        n = np.bincount(qcode)[qcode[perm]]
        return _finish(inp, perm, pos, score=(n - pos).astype(np.float64))


# ------------------------------------------------------------------------------------------------
# tie statistics

@dataclass
class TieStats:
    """Tie statistics of one or more runs (Yang 2019 thesis, Sec. 3.2.1, Table 3.2).

    Attributes:
        topics: one row per (run, qid): ``n_docs``, ``n_tied_docs`` (documents whose score equals
            another document's in the same ranking), ``n_tied_groups`` (groups of >= 2 equal
            scores), ``largest_group``, ``first_tie_rank`` (1-based rank, in score order, where
            the first tied group starts; NaN without ties) and ``has_ties``; with a ``rank``
            column also ``n_contradictions`` (adjacent pairs, in score-then-rank order, whose
            scores and rank labels imply opposite orders) and ``n_contradicted_docs`` (documents
            in such a pair).
        runs: one row per run: the same counts summed, ``n_topics``, ``n_topics_with_ties``,
            ``share_topics_with_ties``, ``share_docs_tied``, ``mean_group_size`` (of tied
            groups), ``largest_group``, ``gm_first_tie_rank`` (geometric mean over its topics
            with ties) and ``has_ties`` (and the contradiction counterparts).
        group_sizes: the histogram of tied-group sizes per run: ``size``, ``n_groups``.
        summary: Table 3.2: rows ``"tied scores"`` (and ``"rank/score contradictions"`` with a
            ``rank`` column); columns ``share_runs``, ``share_topics`` (run-topic pairs),
            ``share_docs`` (fractions in [0, 1]) and ``gm_first_tie_rank`` (over all run-topic
            pairs with ties).
    """

    topics: pd.DataFrame
    runs: pd.DataFrame
    group_sizes: pd.DataFrame
    summary: pd.DataFrame


def _gmean_by(values: pd.Series, keys: list) -> pd.Series:
    """Geometric mean per group, ignoring NaN (scipy.stats.gmean has no groupby form)."""
    return np.exp(np.log(values).groupby(keys, sort=False).mean())


def tie_stats(results: pd.DataFrame, run_column: str | None = "name",
              precision: Literal["float64", "float32"] = "float64") -> TieStats:
    """Tie statistics of runs in the style of Yang (2019) thesis Table 3.2.

    Ties are documents of the same ranking (run, qid) with equal scores -- in float64, or in
    float32 with ``precision="float32"`` (trec_eval's precision).  Group sizes and the rank of the
    first tie do not depend on how ties are ordered: a tied group starts at rank
    ``1 + #(documents with a higher score)``.  If the frame has a ``rank`` column, rank/score
    contradictions are counted too: after sorting by score descending then ``rank`` ascending (the
    thesis's canonical order), an adjacent pair with a strictly higher score but a larger rank
    label (e.g. LIAClass, topic 351, rank labels 1, 2, 3, 536, 4, 537, 5).

    Args:
        results: a results frame (``qid, docno, score`` [, ``rank``]); many runs may be stacked
            with a run column.
        run_column: the column naming the run.  If it is absent from the frame (the default
            ``"name"`` often is), the whole frame is one run called ``"run"``; pass None to force
            that.
        precision: ``"float64"`` or ``"float32"``.

    Returns:
        A :class:`TieStats` with per-topic, per-run, group-size and summary frames.
    """
    _validate(results, "tie_stats", ["score"])
    if len(results) == 0:
        raise InputError("tie_stats: the results frame is empty; expected at least one ranked document")
    precision = _choice("precision", precision, PRECISIONS)
    if run_column is not None and run_column in results.columns:
        run = results[run_column]
        rc = run_column
    else:
        run = pd.Series("run", index=results.index)
        rc = run_column if run_column is not None else "name"
    score = _numeric(results, "score", "tie_stats")
    if precision == "float32":
        score = score.astype(np.float32).astype(np.float64)
    has_rank = "rank" in results.columns
    df = pd.DataFrame({rc: run.to_numpy(), "qid": results["qid"].to_numpy(), "score": score,
                       "docno": results["docno"].to_numpy()})
    if has_rank:
        df["rank"] = _numeric(results, "rank", "tie_stats")
    _check_unique(df.set_axis(results.index), [rc, "qid", "docno"], "tie_stats")

    topic_keys = [rc, "qid"]
    g = df.groupby(topic_keys + ["score"], sort=False)
    size = g["docno"].transform("size").to_numpy()
    tied = size >= 2
    # 1-based rank where each document's score group starts (competition rank, score descending)
    start = df.groupby(topic_keys, sort=False)["score"].rank(method="min", ascending=False).to_numpy()
    df["_tied"] = tied
    df["_first_tie"] = np.where(tied, start, np.nan)
    groups = g.size().rename("size").reset_index()
    groups = groups[groups["size"] >= 2]
    per_group = groups.groupby(topic_keys, sort=False)["size"].agg(["count", "max"])

    t = df.groupby(topic_keys, sort=False).agg(n_docs=("docno", "size"), n_tied_docs=("_tied", "sum"),
                                               first_tie_rank=("_first_tie", "min"))
    t["n_tied_groups"] = per_group["count"].reindex(t.index, fill_value=0).astype(np.int64)
    t["largest_group"] = per_group["max"].reindex(t.index, fill_value=1).astype(np.int64)
    t["has_ties"] = t["n_tied_docs"] > 0
    t["n_tied_docs"] = t["n_tied_docs"].astype(np.int64)

    if has_rank:
        order = np.lexsort((df["rank"].to_numpy(), -df["score"].to_numpy(), _codes(df["qid"]), _codes(df[rc])))
        s = df.iloc[order]
        same = (s[rc].to_numpy()[1:] == s[rc].to_numpy()[:-1]) & (s["qid"].to_numpy()[1:] == s["qid"].to_numpy()[:-1])
        sc, rk = s["score"].to_numpy(), s["rank"].to_numpy()
        contra = same & (sc[:-1] > sc[1:]) & (rk[:-1] > rk[1:])
        in_pair = np.zeros(len(s), dtype=bool)
        in_pair[:-1] |= contra
        in_pair[1:] |= contra
        pair_flag = np.append(contra, False)  # counted on the pair's first document
        flags = pd.DataFrame({rc: s[rc].to_numpy(), "qid": s["qid"].to_numpy(),
                              "n_contradictions": pair_flag, "n_contradicted_docs": in_pair})
        c = flags.groupby(topic_keys, sort=False).sum()
        t["n_contradictions"] = c["n_contradictions"].reindex(t.index, fill_value=0).astype(np.int64)
        t["n_contradicted_docs"] = c["n_contradicted_docs"].reindex(t.index, fill_value=0).astype(np.int64)
        t["has_contradictions"] = t["n_contradictions"] > 0
    topics = t.reset_index()
    cols = [rc, "qid", "n_docs", "n_tied_docs", "n_tied_groups", "largest_group", "first_tie_rank", "has_ties"]
    if has_rank:
        cols += ["n_contradictions", "n_contradicted_docs", "has_contradictions"]
    topics = topics[cols]

    by_run = topics.groupby(rc, sort=False)
    runs = by_run.agg(n_topics=("qid", "size"), n_topics_with_ties=("has_ties", "sum"), n_docs=("n_docs", "sum"),
                      n_tied_docs=("n_tied_docs", "sum"), n_tied_groups=("n_tied_groups", "sum"),
                      largest_group=("largest_group", "max"))
    runs["share_topics_with_ties"] = runs["n_topics_with_ties"] / runs["n_topics"]
    runs["share_docs_tied"] = runs["n_tied_docs"] / runs["n_docs"]
    tied_in_groups = groups.groupby(rc, sort=False)["size"].sum().reindex(runs.index, fill_value=0)
    runs["mean_group_size"] = (tied_in_groups / runs["n_tied_groups"]).where(runs["n_tied_groups"] > 0)
    runs["gm_first_tie_rank"] = _gmean_by(topics["first_tie_rank"], [topics[rc]]).reindex(runs.index)
    runs["has_ties"] = runs["n_topics_with_ties"] > 0
    if has_rank:
        extra = by_run.agg(n_topics_with_contradictions=("has_contradictions", "sum"),
                           n_contradictions=("n_contradictions", "sum"),
                           n_contradicted_docs=("n_contradicted_docs", "sum"))
        runs = runs.join(extra)
        runs["share_topics_with_contradictions"] = runs["n_topics_with_contradictions"] / runs["n_topics"]
        runs["share_docs_contradicted"] = runs["n_contradicted_docs"] / runs["n_docs"]
        runs["has_contradictions"] = runs["n_topics_with_contradictions"] > 0
    runs = runs.reset_index()

    group_sizes = groups.groupby([rc, "size"], sort=True).size().rename("n_groups").reset_index()

    def _share(num: float, den: float) -> float:
        return float(num / den) if den else float("nan")

    n_runs, n_topics, n_docs = len(runs), len(topics), float(topics["n_docs"].sum())
    first = topics["first_tie_rank"].dropna()
    rows = {"tied scores": {
        "share_runs": _share(runs["has_ties"].sum(), n_runs),
        "share_topics": _share(topics["has_ties"].sum(), n_topics),
        "share_docs": _share(topics["n_tied_docs"].sum(), n_docs),
        "gm_first_tie_rank": float(np.exp(np.log(first).mean())) if len(first) else float("nan")}}
    if has_rank:
        rows["rank/score contradictions"] = {
            "share_runs": _share(runs["has_contradictions"].sum(), n_runs),
            "share_topics": _share(topics["has_contradictions"].sum(), n_topics),
            "share_docs": _share(topics["n_contradicted_docs"].sum(), n_docs),
            "gm_first_tie_rank": float("nan")}
    summary = pd.DataFrame.from_dict(rows, orient="index")
    return TieStats(topics=topics, runs=runs, group_sizes=group_sizes, summary=summary)


# ------------------------------------------------------------------------------------------------
# brute-force reference

class TieRange(NamedTuple):
    """Expected value (uniform over orderings), minimum and maximum of a metric over the orderings
    of tied groups (Yang 2019 thesis, Sec. 3.1: averaging across permutations; optimistic and
    pessimistic limits)."""

    expected: float
    minimum: float
    maximum: float


def expected_by_enumeration(gains_in_ranked_order: Sequence[float] | np.ndarray,
                            group_ids: Sequence[object] | np.ndarray,
                            metric_fn: Callable[[np.ndarray], float], *,
                            limit: int = MAX_ORDERINGS, vectorized: bool = False) -> TieRange:
    """Expected, minimum and maximum of a metric over every ordering within tied groups, by brute force.

    Yang (2019) thesis, Sec. 3.1 ("averaging across permutations": every ordering of every tied
    group equally likely; ``prod_g l_g!`` orderings).  This is the slow, obviously correct
    reference for closed forms such as McSherry & Najork's (exact expected AP 0.536323 on thesis
    Table 3.1, where the thesis's eq. 3.3 gives 0.488668).

    Args:
        gains_in_ranked_order: gain of the document at each rank, rank 1 first.
        group_ids: tie-group label of each rank; equal labels must be contiguous (a group of
            tied scores occupies consecutive ranks).  The scores themselves work as labels.
        metric_fn: maps one ordering's gain vector (rank 1 first) to a number; with
            ``vectorized=True`` it maps an ``(n_orderings, n)`` matrix to ``n_orderings`` numbers.
        limit: refuse (InputError) inputs with more than this many orderings (default
            :data:`MAX_ORDERINGS` = 100,000).

    Returns:
        ``TieRange(expected, minimum, maximum)``.
    """
    gains = np.asarray(gains_in_ranked_order, dtype=np.float64)
    ids = np.asarray(group_ids, dtype=object) if not isinstance(group_ids, np.ndarray) else group_ids
    if gains.ndim != 1 or ids.ndim != 1:
        raise InputError("gains_in_ranked_order and group_ids must be one-dimensional")
    if len(gains) != len(ids):
        raise InputError(f"gains_in_ranked_order has {len(gains)} values but group_ids has {len(ids)}; "
                         f"expected one group id per rank")
    if len(gains) == 0:
        raise InputError("gains_in_ranked_order is empty; expected at least one ranked document")
    if not np.isfinite(gains).all():
        i = int(np.flatnonzero(~np.isfinite(gains))[0])
        raise InputError(f"gains_in_ranked_order[{i}] is {gains[i]}; expected finite gains")
    if not callable(metric_fn):
        raise InputError(f"metric_fn must be callable, got {metric_fn!r}")
    codes = _codes(pd.Series(ids))
    new = np.ones(len(codes), dtype=bool)
    new[1:] = codes[1:] != codes[:-1]
    starts = np.flatnonzero(new)
    if len(starts) != codes.max() + 1:
        seen = pd.Series(codes[starts]).duplicated().to_numpy()
        bad = starts[int(np.flatnonzero(seen)[0])]
        raise InputError(f"group_ids[{bad}] = {ids[bad]!r} starts a second run of ranks for the same group; "
                         f"expected each tied group to occupy consecutive ranks")
    lengths = np.diff(np.append(starts, len(codes)))
    n_orderings = math.prod(math.factorial(int(n)) for n in lengths)
    if n_orderings > limit:
        raise InputError(f"{n_orderings:,} orderings (group sizes {sorted(lengths.tolist(), reverse=True)[:5]}...) "
                         f"exceed limit={limit:,}; brute force is meant for small examples -- use the closed forms "
                         f"or raise limit")
    # all orderings as a matrix of position indices: the Cartesian product of each group's
    # permutations (itertools over one group at a time; this is the brute force by design)
    index = np.zeros((1, 0), dtype=np.int64)
    for b, n in zip(starts, lengths):
        perms = np.asarray(list(itertools.permutations(range(b, b + n))), dtype=np.int64)
        index = np.hstack([np.repeat(index, len(perms), axis=0), np.tile(perms, (len(index), 1))])
    matrix = gains[index]
    if vectorized:
        values = np.asarray(metric_fn(matrix), dtype=np.float64).reshape(-1)
        if len(values) != n_orderings:
            raise InputError(f"metric_fn returned {len(values)} values for {n_orderings} orderings")
    else:
        values = np.fromiter((metric_fn(row) for row in matrix), dtype=np.float64, count=n_orderings)
    return TieRange(math.fsum(values) / n_orderings, float(values.min()), float(values.max()))


def tie_stats_in_chunks(runs: dict, precision: str, chunk: int = 8) -> TieStats:
    """:func:`tie_stats` of many runs, a few runs at a time behind a progress bar; the per-topic,
    per-run and group-size frames are concatenated and the Table 3.2 summary recomputed from them."""
    names = list(runs)
    parts = []
    for a in pt.tqdm(range(0, len(names), chunk), desc="tie statistics", unit="chunk",
                     disable=len(names) <= chunk):
        frame = pd.concat([runs[n].assign(name=n) for n in names[a:a + chunk]], ignore_index=True)
        parts.append(tie_stats(frame, run_column="name", precision=precision))
    if len(parts) == 1:
        return parts[0]
    topics = pd.concat([p.topics for p in parts], ignore_index=True)
    per_run = pd.concat([p.runs for p in parts], ignore_index=True)
    sizes = pd.concat([p.group_sizes for p in parts], ignore_index=True)
    first = topics["first_tie_rank"].dropna()
    n_docs = float(topics["n_docs"].sum())
    rows = {"tied scores": {"share_runs": per_run["has_ties"].mean(), "share_topics": topics["has_ties"].mean(),
                            "share_docs": topics["n_tied_docs"].sum() / n_docs,
                            "gm_first_tie_rank": float(np.exp(np.log(first).mean())) if len(first) else np.nan}}
    if "has_contradictions" in topics.columns:
        rows["rank/score contradictions"] = {
            "share_runs": per_run["has_contradictions"].mean(), "share_topics": topics["has_contradictions"].mean(),
            "share_docs": topics["n_contradicted_docs"].sum() / n_docs, "gm_first_tie_rank": np.nan}
    summary = pd.DataFrame.from_dict(rows, orient="index").astype(float)
    return TieStats(topics=topics, runs=per_run, group_sizes=sizes, summary=summary)
