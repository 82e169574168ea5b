"""Reading pairwise crowd judgments (Yang 2019 Sec. 5.1.2) into one canonical table.

Workers see two documents of a topic side by side and answer three questions: QUESTION1
(preference, ``left``/``right``), QUESTION2 (absolute: ``both``, ``selected`` or ``none``) and
QUESTION3 (a non-negative ratio number per document).  :func:`read_pairwise` validates a CSV/TSV
file or a frame (errors name the line or row and the column) and announces every coercion.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, announce
from ..io import PathLike

__all__ = ["COLUMNS", "COLUMN_ALIASES", "read_pairwise"]

#: Canonical columns of a pairwise-judgment table, in order.  ``qid, worker, left, right`` are
#: required; ``group`` (the page of pairs a worker judged together, Yang 2019 Sec. 5.1.1) and
#: ``pair`` (position in the group) are optional; at least one answer column must be present
#: (``preferred``; ``absolute``; or both of ``ratio_left`` and ``ratio_right``); ``gold`` marks
#: gold pairs by the side of the document that should be preferred.
COLUMNS = ["qid", "worker", "group", "pair", "left", "right", "preferred", "absolute",
           "ratio_left", "ratio_right", "gold"]

#: Accepted spellings of each column name (compared case-insensitively, with spaces and dashes
#: read as underscores).  ``_worker_id`` / ``_unit_id`` are Figure Eight's export names.
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "qid": ("qid", "topic", "topic_id", "query_id", "query", "topicid"),
    "worker": ("worker", "worker_id", "_worker_id", "workerid", "assessor", "annotator", "judge", "user"),
    "group": ("group", "group_id", "groupid", "unit", "unit_id", "_unit_id", "page", "hit", "hit_id"),
    "pair": ("pair", "pair_idx", "pair_index", "pair_id", "position"),
    "left": ("left", "left_docno", "docno_left", "left_doc", "doc_left", "doc1", "docno1", "left_document"),
    "right": ("right", "right_docno", "docno_right", "right_doc", "doc_right", "doc2", "docno2", "right_document"),
    "preferred": ("preferred", "preference", "q1", "question1", "q1_choice", "choice", "winner", "more_relevant"),
    "absolute": ("absolute", "q2", "question2", "absolute_relevance", "relevance", "q2_answer"),
    "ratio_left": ("ratio_left", "q3_left", "question3_left", "score_left", "left_score", "ratio1", "left_ratio"),
    "ratio_right": ("ratio_right", "q3_right", "question3_right", "score_right", "right_score", "ratio2", "right_ratio"),
    "gold": ("gold", "gold_side", "gold_answer", "expected"),
}

_PREFERRED_VALUES = {"left": "left", "l": "left", "right": "right", "r": "right"}
#: Answers to QUESTION2 (Yang 2019 Sec. 5.1.2): OPTION1 both relevant, OPTION2 only the document
#: selected in QUESTION1 relevant, OPTION3 both non-relevant.
_ABSOLUTE_VALUES = {
    "both": "both", "option1": "both", "opt1": "both", "1": "both", "both_relevant": "both",
    "selected": "selected", "option2": "selected", "opt2": "selected", "2": "selected",
    "only_selected": "selected", "selected_only": "selected", "one": "selected",
    "none": "none", "option3": "none", "opt3": "none", "3": "none", "neither": "none",
    "both_nonrelevant": "none", "neither_relevant": "none",
}


def _norm_name(name: Any) -> str:
    return str(name).strip().lower().replace(" ", "_").replace("-", "_")


def _loc(source: str, is_file: bool, row: int, column: str) -> str:
    if is_file:
        return f"{source}, line {row + 2} (data row {row}), column {column!r}"
    return f"{source}, row {row}, column {column!r}"


def _id_column(df: pd.DataFrame, col: str, source: str, is_file: bool) -> np.ndarray:
    s = df[col]
    missing = s.isna().to_numpy(copy=True)
    if pd.api.types.is_float_dtype(s.dtype):
        vals = s.to_numpy(dtype=float)
        ok = ~missing
        if np.all(vals[ok] == np.round(vals[ok])):       # ids read as floats because of a gap
            s = s.astype("Int64")
    out = s.astype(object).where(~missing, "").astype(str).str.strip().to_numpy(dtype=object, copy=True)
    blank = missing | (out == "")
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise InputError(f"{_loc(source, is_file, i, col)}: expected an identifier, found an empty value "
                         f"({int(blank.sum())} such row(s))")
    return out


def _answer_text(df: pd.DataFrame, col: str) -> tuple[np.ndarray, np.ndarray]:
    """(stripped text, missing) of an answer column; missing = NaN or empty."""
    s = df[col]
    na = s.isna().to_numpy(copy=True)
    text = s.astype(object).where(~na, "").astype(str).str.strip()
    return text.to_numpy(dtype=object, copy=True), na | (text == "").to_numpy()


def _side_column(df: pd.DataFrame, col: str, left: np.ndarray, right: np.ndarray, source: str,
                 is_file: bool, what: str) -> np.ndarray:
    """left / right / NaN from left|l|right|r (any case) or the docno of either document."""
    text, missing = _answer_text(df, col)
    low = pd.Series(text, dtype=object).str.lower()
    mapped = low.map(_PREFERRED_VALUES).to_numpy(dtype=object, copy=True)
    low = low.to_numpy(dtype=object)
    out = np.full(len(df), np.nan, dtype=object)
    known = ~missing & pd.notna(mapped)
    out[known] = mapped[known]
    by_doc_l = ~missing & ~known & (text == left)
    by_doc_r = ~missing & ~known & (text == right)
    out[by_doc_l] = "left"
    out[by_doc_r] = "right"
    bad = ~missing & ~known & ~by_doc_l & ~by_doc_r
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{_loc(source, is_file, i, col)}: expected {what} as 'left' or 'right' (or L/R, or "
                         f"the docno of one of the two documents), got {text[i]!r} ({int(bad.sum())} such row(s))")
    spelled = (known & (mapped != text)) | by_doc_l | by_doc_r
    if spelled.any():
        announce(f"{source}: column {col!r}: {int(spelled.sum())} value(s) given as L/R, in another case or "
                 f"as a docno were read as 'left'/'right'")
    return out


def _ratio_column(df: pd.DataFrame, col: str, source: str, is_file: bool) -> np.ndarray:
    text, missing = _answer_text(df, col)
    vals = pd.to_numeric(pd.Series(np.where(missing, np.nan, text)), errors="coerce").to_numpy(dtype=float, copy=True)
    bad = ~missing & ~np.isfinite(vals)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{_loc(source, is_file, i, col)}: expected a non-negative number (the ratio answer), "
                         f"got {text[i]!r} ({int(bad.sum())} such row(s))")
    neg = ~missing & (vals < 0)
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise InputError(f"{_loc(source, is_file, i, col)}: ratio answers must be >= 0 (0 = not relevant), "
                         f"got {vals[i]!r} ({int(neg.sum())} such row(s))")
    vals[missing] = np.nan
    return vals


def _rename_columns(df: pd.DataFrame, source: str) -> pd.DataFrame:
    lookup = {alias: canon for canon, aliases in COLUMN_ALIASES.items() for alias in aliases}
    ren: dict[str, str] = {}
    seen: dict[str, str] = {}
    for col in df.columns:
        canon = lookup.get(_norm_name(col))
        if canon is None:
            continue
        if canon in seen:
            raise InputError(f"{source}: columns {seen[canon]!r} and {col!r} both name the {canon!r} column; "
                             f"keep one of them")
        seen[canon] = col
        ren[col] = canon
    return df.rename(columns=ren)


def _read_table(source: PathLike | pd.DataFrame) -> tuple[pd.DataFrame, str, bool]:
    """The judgments as read (strings), the source's name and whether it is a file."""
    if isinstance(source, pd.DataFrame):
        return source.copy(), str(source.attrs.get("source", "judgments frame")), False
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise InputError(f"{path}: no such file (expected a CSV of pairwise judgments)")
        sep = "\t" if path.name.lower().endswith((".tsv", ".tsv.gz")) else ","
        try:
            df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise InputError(f"{path}: cannot be read as {'TSV' if sep == chr(9) else 'CSV'} ({exc})") from None
        return df, str(path), True
    raise InputError(f"cannot read pairwise judgments from {type(source).__name__}; expected a CSV path "
                     f"or a DataFrame")


def _check_columns(df: pd.DataFrame, name: str) -> list[bool]:
    """InputError unless the required columns, an answer column and both ratio columns or none are
    there and there are rows; whether each ratio column is there."""
    missing = [c for c in ("qid", "worker", "left", "right") if c not in df.columns]
    if missing:
        raise InputError(f"{name}: missing column(s) {missing}; found {list(df.columns)} (expected "
                         f"{COLUMNS[:1] + COLUMNS[1:2] + COLUMNS[4:6]} and answer columns {COLUMNS[6:10]})")
    has_ratio = [c in df.columns for c in ("ratio_left", "ratio_right")]
    if any(has_ratio) and not all(has_ratio):
        have = "ratio_left" if has_ratio[0] else "ratio_right"
        raise InputError(f"{name}: column {have!r} needs its partner "
                         f"{'ratio_right' if has_ratio[0] else 'ratio_left'!r} (one ratio number per document)")
    if not ("preferred" in df.columns or "absolute" in df.columns or all(has_ratio)):
        raise InputError(f"{name}: no answer column; expected at least one of 'preferred' (QUESTION1), "
                         f"'absolute' (QUESTION2) or 'ratio_left' + 'ratio_right' (QUESTION3)")
    if len(df) == 0:
        raise InputError(f"{name}: no judgments (the table is empty)")
    return has_ratio


def _id_columns(df: pd.DataFrame, name: str, is_file: bool) -> pd.DataFrame:
    """``qid, worker, left, right`` as strings; InputError on a pair showing one document twice."""
    out = pd.DataFrame(index=df.index)
    for col in ("qid", "worker", "left", "right"):
        out[col] = _id_column(df, col, name, is_file)
    left, right = out["left"].to_numpy(), out["right"].to_numpy()
    same = left == right
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise InputError(f"{_loc(name, is_file, i, 'right')}: the pair shows document {left[i]!r} on both sides "
                         f"({int(same.sum())} such row(s)); a pair needs two different documents")
    return out


def _absolute_column(df: pd.DataFrame, preferred: np.ndarray, name: str, is_file: bool) -> np.ndarray:
    """QUESTION2's answers as ``both``/``selected``/``none`` or NaN; spellings and unreadable
    ``selected`` answers (no QUESTION1 answer) announced."""
    text, miss = _answer_text(df, "absolute")
    low = pd.Series(text, dtype=object).str.lower().str.replace(" ", "_").str.replace("-", "_")
    mapped = low.map(_ABSOLUTE_VALUES).to_numpy(dtype=object, copy=True)
    bad = ~miss & pd.isna(mapped)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{_loc(name, is_file, i, 'absolute')}: expected 'both', 'selected' or 'none' "
                         f"(or option1/option2/option3), got {text[i]!r} ({int(bad.sum())} such row(s))")
    spelled = ~miss & (mapped != text)
    if spelled.any():
        announce(f"{name}: column 'absolute': {int(spelled.sum())} value(s) in another spelling were read "
                 f"as 'both'/'selected'/'none'")
    mapped[miss] = np.nan
    unreadable = (mapped == "selected") & pd.isna(preferred)
    if unreadable.any():
        announce(f"{name}: {int(unreadable.sum())} 'absolute' answer(s) 'selected' have no 'preferred' "
                 f"answer to say which document was selected; made missing")
        mapped[unreadable] = np.nan
    return mapped


def _ratio_columns(df: pd.DataFrame, name: str, is_file: bool) -> tuple[np.ndarray, np.ndarray]:
    """QUESTION3's two numbers; a row with only one of them is announced and made missing."""
    rl = _ratio_column(df, "ratio_left", name, is_file)
    rr = _ratio_column(df, "ratio_right", name, is_file)
    half = np.isnan(rl) != np.isnan(rr)
    if half.any():
        announce(f"{name}: {int(half.sum())} row(s) give a ratio number for only one of the two documents; "
                 f"made missing")
        rl[half] = np.nan
        rr[half] = np.nan
    return rl, rr


def read_pairwise(source: PathLike | pd.DataFrame) -> pd.DataFrame:
    """Read pairwise crowd judgments (Yang 2019 Sec. 5.1.2) from a CSV/TSV file or a frame.

    One row per answer sheet: a worker's answers about one pair of documents of one topic.
    Columns (:data:`COLUMNS`; accepted aliases in :data:`COLUMN_ALIASES`):

    ``qid``, ``worker``, ``left``, ``right`` (required)
        topic, worker id, and the docnos shown on the left and on the right.
    ``group`` (optional)
        the page (group of pairs) the worker judged together; transitivity and absolute
        inconsistency are computed within (worker, group).  Absent: one group per (worker, topic).
    ``pair`` (optional)
        the position of the pair in its group (kept as given).
    ``preferred``
        QUESTION1: ``left`` or ``right`` (also ``L``/``R`` or the chosen docno).
    ``absolute``
        QUESTION2: ``both``, ``selected`` (only the document chosen in QUESTION1) or ``none``
        (also ``option1``/``option2``/``option3`` or ``1``/``2``/``3``).
    ``ratio_left``, ``ratio_right``
        QUESTION3: the non-negative numbers given to the two documents.
    ``gold`` (optional)
        on gold pairs, the side (``left``/``right`` or the docno) of the document that should be
        preferred; empty on other pairs.

    At least one answer column must be present; empty cells are missing answers.  A file is read
    as TSV when its name ends in ``.tsv`` (or ``.tsv.gz``), else as CSV.  Coercions are announced
    with counts: non-canonical spellings of answers, ``selected`` without a QUESTION1 answer (made
    missing: it cannot be read), and a ratio answer for only one of the two documents (made
    missing).  Other columns are kept unchanged.

    Returns:
        a frame with the canonical columns first (absent answer columns are added, all missing;
        an absent ``group`` is added as ``""``), ``qid, worker, group, left, right`` as strings,
        answers as ``left``/``right``/``both``/``selected``/``none`` or NaN, ratios as floats.

    Raises:
        InputError: naming the line (file) or row (frame) and column of the first bad value.
    """
    df, name, is_file = _read_table(source)
    df = _rename_columns(df, name)
    has_ratio = _check_columns(df, name)
    df = df.reset_index(drop=True)
    out = _id_columns(df, name, is_file)
    left, right = out["left"].to_numpy(), out["right"].to_numpy()
    if "group" in df.columns:
        g = df["group"]
        out["group"] = np.where(g.isna(), "", g.astype(str).str.strip()).astype(object)
    else:
        out["group"] = ""
    if "pair" in df.columns:
        out["pair"] = df["pair"]
    if "preferred" in df.columns:
        out["preferred"] = _side_column(df, "preferred", left, right, name, is_file, "the preferred document")
    else:
        out["preferred"] = np.full(len(df), np.nan, dtype=object)
    if "absolute" in df.columns:
        out["absolute"] = _absolute_column(df, out["preferred"].to_numpy(), name, is_file)
    else:
        out["absolute"] = np.full(len(df), np.nan, dtype=object)
    if all(has_ratio):
        out["ratio_left"], out["ratio_right"] = _ratio_columns(df, name, is_file)
    else:
        out["ratio_left"] = np.nan
        out["ratio_right"] = np.nan
    if "gold" in df.columns:
        out["gold"] = _side_column(df, "gold", left, right, name, is_file, "the gold (more relevant) side")
    else:
        out["gold"] = np.full(len(df), np.nan, dtype=object)
    extra = [c for c in df.columns if c not in out.columns]
    for c in extra:
        out[c] = df[c]
    cols = [c for c in COLUMNS if c in out.columns] + extra
    out = out[cols]
    out.attrs["source"] = name
    out.attrs["pyterrier_noise_pairwise"] = True
    return out
