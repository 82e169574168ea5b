"""Normalising and validating run and qrels frames (PyTerrier and ir_measures column names, dicts,
namedtuples) into the package's ``qid, docno, score, rank`` and ``qid, docno, label`` frames.

Bad input raises :class:`~pyterrier_noise._validation.InputError` naming the column and row and what
was expected; coercions (duplicate judgments, negative labels, fractional labels) are announced
with counts.  Frames are validated every time (vectorised, one pass per column): a frame is never
trusted because of its ``attrs``, which copies inherit.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from .._validation import InputError, announce, check_choice
from .._vocab import FRACTIONAL

RUN_COLUMNS = ["qid", "docno", "score", "rank"]
QRELS_COLUMNS = ["qid", "docno", "label"]

_RUN_ALIASES = {"query_id": "qid", "doc_id": "docno"}
_QRELS_ALIASES = {"query_id": "qid", "doc_id": "docno", "relevance": "label"}


def _rename(df: pd.DataFrame, aliases: dict[str, str]) -> pd.DataFrame:
    ren = {a: b for a, b in aliases.items() if a in df.columns and b not in df.columns}
    return df.rename(columns=ren) if ren else df


def _require(df: pd.DataFrame, cols: list[str], source: str, kind: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputError(
            f"{source}: {kind} frame is missing column(s) {missing}; found {list(df.columns)} "
            f"(expected {cols}, or ir_measures' names)")


def _numeric_column(df: pd.DataFrame, col: str, source: str) -> np.ndarray:
    raw = df[col]
    if raw.dtype.kind in "fiu":   # already numbers: no conversion pass
        values = raw.to_numpy(dtype=np.float64)
    else:
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{source}: column {col!r}, row {i} (qid={df['qid'].iloc[i]!r}, docno={df['docno'].iloc[i]!r}): "
            f"expected a finite number, got {_plain(df[col].iloc[i])!r} ({int(bad.sum())} such row(s))")
    return values


def _plain(value):
    """A numpy scalar as the Python value it holds (``nan``, not ``np.float64(nan)``) for messages."""
    return value.item() if isinstance(value, np.generic) else value


def _as_str(series: pd.Series, col: str, source: str):
    """A qid or docno column as an object array of str; a missing value (None, NaN) is an error
    naming the column and row, never the string ``'nan'``."""
    if isinstance(series.dtype, pd.StringDtype):   # pandas' string dtype: no conversion, no copy
        missing = series.isna().to_numpy()
        if not missing.any():
            return series.array
        values = series.to_numpy()
    else:
        values = series.to_numpy()
        if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string":
            return values                  # already strings: one C pass
    missing = pd.isna(values) if values.dtype.kind in "Ofc" else np.zeros(len(values), dtype=bool)
    if np.ndim(missing) and missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"{source}: column {col!r}, row {i}: expected a {col}, got {_plain(values[i])!r} "
                         f"({int(missing.sum())} missing value(s) in {col!r})")
    return series.astype(str).to_numpy()


#: labels beyond this magnitude are not exact integers in float64
_LABEL_LIMIT = 2.0 ** 53


def _fractional_labels(labels: np.ndarray, fractional: str, source: str, locate) -> np.ndarray:
    """Fractional labels (1.5): truncated toward zero as trec_eval reads them (``atol`` on the label
    text, get_qrels.c), with a CoercionWarning that counts them, or kept (``fractional="keep"``)."""
    check_choice("fractional", fractional, FRACTIONAL)
    frac = labels != np.trunc(labels)
    if frac.any() and fractional == "truncate":
        i = int(np.flatnonzero(frac)[0])
        announce(f"{source}: {int(frac.sum())} fractional label(s) truncated toward zero as trec_eval "
                 f"reads them (first at {locate(i)}: {float(labels[i])!r} -> {np.trunc(labels[i]):g}); "
                 f"read_qrels(..., fractional='keep') keeps them as graded gains")
        labels = np.trunc(labels)
    return labels


def clean_qrels(df: pd.DataFrame, source: str, fractional: str = "truncate", locate=None) -> pd.DataFrame:
    """``qid, docno, label`` with labels as int64 when every label is a whole number (as pytrec_eval
    and ``pt.Experiment`` need), float64 only when fractional labels are kept.

    ``locate(i)`` names input row ``i`` in messages (default ``row i``; files say ``line n``)."""
    df = _rename(df, _QRELS_ALIASES)
    _require(df, QRELS_COLUMNS, source, "qrels")
    locate = locate or (lambda i: f"row {i}")
    qid = _as_str(df["qid"], "qid", source)
    docno = _as_str(df["docno"], "docno", source)
    labels = _numeric_column(df, "label", source)
    if len(labels) == 0:
        raise InputError(f"{source}: the qrels are empty (expected at least one judgment)")
    big = np.abs(labels) >= _LABEL_LIMIT
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise InputError(f"{source}: column 'label', {locate(i)}: label {labels[i]!r} is too large "
                         f"(expected a relevance grade below 2**53)")
    labels = _fractional_labels(labels, fractional, source, locate)
    out = pd.DataFrame({"qid": qid, "docno": docno, "label": labels})
    dup = out.duplicated(["qid", "docno"], keep="last")
    if dup.any():
        first = out[dup].iloc[0]
        announce(f"{source}: {int(dup.sum())} duplicate judgment(s) for the same (qid, docno), e.g. "
                 f"qid={first.qid!r} docno={first.docno!r}; kept the last of each, as pytrec_eval does")
        out = out[~dup].reset_index(drop=True)
    labels = out["label"].to_numpy()
    neg = labels < 0
    if neg.any():
        announce(f"{source}: {int(neg.sum())} negative label(s) clipped to 0 (judged non-relevant), "
                 f"as trec_eval treats them")
        labels = np.where(neg, 0.0, labels)
    if (labels == np.trunc(labels)).all():
        labels = labels.astype(np.int64)   # whole numbers stay integers: pytrec_eval refuses floats
    out["label"] = labels
    out.attrs["source"] = source
    if fractional == "keep":
        out.attrs["fractional"] = "keep"     # passed on: a later read keeps the graded labels too
    return out


#: the attrs key naming where a run frame came from (for messages only: never a mark of validation)
SOURCE_KEY = "pyterrier_noise_source"


def frame_source(df: pd.DataFrame, default: str) -> str:
    return str(df.attrs.get(SOURCE_KEY) or df.attrs.get("source") or default)


def clean_run(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Validate a run frame (always: the checks are vectorised and cost one pass per column, so a
    frame is never trusted because of where it came from)."""
    df = _rename(df, _RUN_ALIASES)
    _require(df, ["qid", "docno", "score"], source, "run")
    out = pd.DataFrame({"qid": _as_str(df["qid"], "qid", source),
                        "docno": _as_str(df["docno"], "docno", source),
                        "score": _numeric_column(df, "score", source)})
    if "rank" in df.columns:
        raw = df["rank"]
        rank = raw.to_numpy(dtype=np.float64) if raw.dtype.kind in "fiu" else \
            pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(rank) | (np.abs(rank) >= _LABEL_LIMIT)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{source}: column 'rank', row {i}: expected an integer, got {df['rank'].iloc[i]!r}")
        out["rank"] = rank.astype(np.int64)
    else:
        out["rank"] = np.arange(len(out), dtype=np.int64)  # input order
    if len(out) == 0:
        raise InputError(f"{source}: the run is empty (expected at least one ranked document)")
    out.attrs[SOURCE_KEY] = source
    return out


def namedtuples_to_frame(items: Iterable, kind: str) -> pd.DataFrame:
    rows = list(items)
    if not rows:
        return pd.DataFrame(columns=QRELS_COLUMNS if kind == "qrels" else RUN_COLUMNS)
    first = rows[0]
    if hasattr(first, "_fields"):
        fields = list(first._fields)
        df = pd.DataFrame.from_records(rows, columns=fields)
    elif isinstance(first, Mapping):
        df = pd.DataFrame.from_records(rows)
    else:
        raise InputError(f"cannot read {kind} from an iterable of {type(first).__name__}; "
                         f"expected namedtuples with query_id/doc_id fields")
    return df


def dict_of_dicts(d: Mapping, value_col: str) -> pd.DataFrame:
    records = [(str(q), str(doc), v) for q, docs in d.items() for doc, v in docs.items()]
    return pd.DataFrame.from_records(records, columns=["qid", "docno", value_col])
