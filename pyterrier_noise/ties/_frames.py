"""Frame helpers shared by the tie transformers and tie statistics: validation, integer codes,
positions within rankings (private to :mod:`pyterrier_noise.ties`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyterrier as pt

from .._validation import InputError, announce, where


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
                 f"({int(s.notna().sum())} values changed)")
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
    if by == "given":
        return [rowpos, _numeric(inp, "rank", context)]
    if by == "trec_eval":
        return [-_docno_codes(inp["docno"]), -_numeric(inp, "score", context)]
    return [rowpos]

