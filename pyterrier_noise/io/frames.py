"""Normalising and validating run and qrels frames (PyTerrier and ir_measures column names, dicts,
namedtuples) into the package's ``qid, docno, score, rank`` and ``qid, docno, label`` frames.

Bad input raises :class:`~pyterrier_noise._validation.InputError` naming the column and row and what
was expected; coercions (duplicate judgments, negative labels) are announced with counts.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from .._validation import InputError, announce

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
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{source}: column {col!r}, row {i} (qid={df['qid'].iloc[i]!r}, docno={df['docno'].iloc[i]!r}): "
            f"expected a finite number, got {df[col].iloc[i]!r} ({int(bad.sum())} such row(s))")
    return values



def _as_str(series: pd.Series) -> pd.Series:
    return series.astype(str)


def _clean_qrels(df: pd.DataFrame, source: str) -> pd.DataFrame:
    df = _rename(df, _QRELS_ALIASES)
    _require(df, QRELS_COLUMNS, source, "qrels")
    out = pd.DataFrame({"qid": _as_str(df["qid"]).to_numpy(), "docno": _as_str(df["docno"]).to_numpy(),
                        "label": _numeric_column(df, "label", source)})
    if len(out) == 0:
        raise InputError(f"{source}: the qrels are empty (expected at least one judgment)")
    dup = out.duplicated(["qid", "docno"], keep="last")
    if dup.any():
        first = out[dup].iloc[0]
        announce(f"{source}: {int(dup.sum())} duplicate judgment(s) for the same (qid, docno), e.g. "
                 f"qid={first.qid!r} docno={first.docno!r}; kept the last of each, as pytrec_eval does")
        out = out[~dup].reset_index(drop=True)
    neg = out["label"].to_numpy() < 0
    if neg.any():
        announce(f"{source}: {int(neg.sum())} negative label(s) clipped to 0 (judged non-relevant), "
                 f"as trec_eval treats them")
        out.loc[neg, "label"] = 0.0
    out.attrs["source"] = source
    return out


def _clean_run(df: pd.DataFrame, source: str) -> pd.DataFrame:
    df = _rename(df, _RUN_ALIASES)
    _require(df, ["qid", "docno", "score"], source, "run")
    out = pd.DataFrame({"qid": _as_str(df["qid"]).to_numpy(), "docno": _as_str(df["docno"]).to_numpy(),
                        "score": _numeric_column(df, "score", source)})
    if "rank" in df.columns:
        rank = pd.to_numeric(df["rank"], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(rank).all():
            i = int(np.flatnonzero(~np.isfinite(rank))[0])
            raise InputError(f"{source}: column 'rank', row {i}: expected an integer, got {df['rank'].iloc[i]!r}")
        out["rank"] = rank.astype(np.int64)
    else:
        out["rank"] = np.arange(len(out), dtype=np.int64)  # input order
    if len(out) == 0:
        raise InputError(f"{source}: the run is empty (expected at least one ranked document)")
    out.attrs["source"] = source
    return out


def _namedtuples_to_frame(items: Iterable, kind: str) -> pd.DataFrame:
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


def _dict_of_dicts(d: Mapping, value_col: str) -> pd.DataFrame:
    records = [(str(q), str(doc), v) for q, docs in d.items() for doc, v in docs.items()]
    return pd.DataFrame.from_records(records, columns=["qid", "docno", value_col])
