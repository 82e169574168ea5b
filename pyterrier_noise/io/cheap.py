"""Labels of a cheap judge (an LLM grader such as UMBRELA, Upadhyay et al. 2024, or a crowd).

:func:`read_cheap_qrels` reads JSON lines, CSV / TSV with a header, TREC qrels files and frames
into a ``qid, docno, label[, probability]`` frame.  Column names are matched loosely (``qid`` /
``query_id`` / ``topic``; ``docno`` / ``docid`` / ``doc_id``; ``label`` / ``grade`` /
``relevance`` / ``judgment``; ``probability`` / ``prob`` / ``confidence`` / ``score``).  Every
error names the file and line (JSON lines) or the column and row.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError
from .read import read_qrels

__all__ = ["read_cheap_qrels", "check_grades", "CHEAP_COLUMNS", "GRADES"]

#: the grades a cheap or gold label may take: UMBRELA's 0-3 scale (Upadhyay et al. 2024)
GRADES = (0, 1, 2, 3)

#: accepted names of each column, in order of preference
CHEAP_COLUMNS = {
    "qid": ("qid", "query_id", "topic", "topic_id", "query"),
    "docno": ("docno", "docid", "doc_id", "document", "pid"),
    "label": ("label", "grade", "relevance", "judgment", "rel"),
    "probability": ("probability", "prob", "confidence", "score"),
}


def _pick(columns: list[str], role: str) -> str | None:
    low = {str(c).lower(): c for c in columns}
    return next((low[c] for c in CHEAP_COLUMNS[role] if c in low), None)


def _normalise(frame: pd.DataFrame, where: str, line_of: Any = None) -> pd.DataFrame:
    cols = list(frame.columns)
    found = {role: _pick(cols, role) for role in CHEAP_COLUMNS}
    missing = [r for r in ("qid", "docno", "label") if found[r] is None]
    if missing:
        raise InputError(f"{where}: no column for {missing}; expected one of "
                         f"{[CHEAP_COLUMNS[r] for r in missing]} (found {cols})")
    out = pd.DataFrame({"qid": frame[found["qid"]].astype(str), "docno": frame[found["docno"]].astype(str)})

    def line(i: int) -> str:
        return f"line {line_of[i]}" if line_of is not None else f"row {i}"

    for role in ("label", "probability"):
        c = found[role]
        if c is None:
            continue
        vals = pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(vals)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{where}, {line(i)}: column {c!r} must be a number, got {frame[c].iloc[i]!r} "
                             f"({int(bad.sum())} such value(s))")
        if role == "probability" and ((vals < 0) | (vals > 1)).any() and c != "score":
            i = int(np.flatnonzero((vals < 0) | (vals > 1))[0])
            raise InputError(f"{where}, {line(i)}: column {c!r} is a probability in [0, 1], got {float(vals[i]):g}")
        out[role] = vals
    check_grades(out, where, line_of)
    out["label"] = out["label"].to_numpy().astype(np.int64)
    dup = out.duplicated(["qid", "docno"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{where}, {line(i)}: pair qid={out['qid'].iloc[i]!r} docno={out['docno'].iloc[i]!r} "
                         f"is labelled twice ({int(dup.sum())} duplicate(s)); aggregate the labels first")
    return out


def _file_line(path: Path, qid: str, docno: str) -> str:
    """The line of a TREC qrels file that labels ``qid, docno`` (for messages), or ``""``."""
    try:
        opener = __import__("gzip").open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for n, text in enumerate(f, start=1):
                fields = text.split()
                if len(fields) >= 4 and fields[0] == qid and fields[2] == docno:
                    return f"line {n}"
    except OSError:
        pass
    return ""


def check_grades(frame: pd.DataFrame, where: str, line_of: Any = None, path: Path | None = None) -> None:
    """Refuse a label that is not one of :data:`GRADES` (a fraction, a 7 on the 0-3 scale, a -1),
    naming ``where``, the line (``line_of[i]``, or found in the TREC file ``path``) or row, and the
    allowed grades."""
    lab = pd.to_numeric(frame["label"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isin(lab, GRADES)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    if line_of is not None:
        at = f"line {line_of[i]}"
    else:
        at = (_file_line(path, str(frame["qid"].iloc[i]), str(frame["docno"].iloc[i])) if path is not None
              else "") or f"row {i}"
    kind = "not a whole number" if np.isfinite(lab[i]) and lab[i] != np.round(lab[i]) else "not on the scale"
    raise InputError(f"{where}, {at}: grade {float(lab[i]):g} is {kind} (qid {frame['qid'].iloc[i]!r}, docno "
                     f"{frame['docno'].iloc[i]!r}); the grades are {', '.join(map(str, GRADES))} "
                     f"({int(bad.sum())} such label(s))")


def _read_jsonl(path: Path) -> pd.DataFrame:
    records, lines = [], []
    opener = __import__("gzip").open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}, line {n}: not valid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise InputError(f"{path}, line {n}: expected a JSON object with qid, docid and grade, got "
                                 f"{type(rec).__name__}")
            row = {}
            for role in CHEAP_COLUMNS:     # each record may spell its keys its own way
                key = _pick(list(rec), role)
                if key is None or rec[key] is None:
                    if role != "probability":
                        raise InputError(f"{path}, line {n}: no {role} (expected a key among "
                                         f"{CHEAP_COLUMNS[role]}, found {list(rec)})")
                    continue
                row[role if role != "label" else "grade"] = rec[key]
            records.append(row)
            lines.append(n)
    if not records:
        raise InputError(f"{path}: no labels (the file is empty)")
    frame = pd.DataFrame.from_records(records)
    return _normalise(frame, str(path), lines)


def read_cheap_qrels(source: Any) -> pd.DataFrame:
    """Read a cheap judge's labels into ``qid, docno, label[, probability]``.

    ``source``: a ``.jsonl`` / ``.json`` file (one object per line, UMBRELA-style:
    ``{"qid": ..., "docid": ..., "grade": 0-3, "probability": ...}``), a ``.csv`` / ``.tsv`` file
    with a header, a TREC qrels file (anything else; read by
    :func:`~pyterrier_noise.io.read_qrels`), or a frame with such columns.
    """
    if isinstance(source, pd.DataFrame):
        if {"qid", "docno", "label"} <= set(source.columns) and "probability" not in source.columns:
            out = read_qrels(source)
            check_grades(out, "cheap labels frame")
            return out
        return _normalise(source, "cheap labels frame")
    if not isinstance(source, (str, os.PathLike)):
        out = read_qrels(source)
        check_grades(out, "cheap labels")
        return out
    path = Path(source)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return _read_jsonl(path)
    if name.endswith((".csv", ".tsv")):
        sep = "\t" if name.endswith(".tsv") else ","
        try:
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read as {'TSV' if sep == chr(9) else 'CSV'} ({exc})") from None
        # data rows start at line 2 (line 1 is the header)
        return _normalise(frame, str(path), np.arange(2, len(frame) + 2))
    out = read_qrels(path)
    check_grades(out, str(path), path=path)
    return out
