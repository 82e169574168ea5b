"""Pairwise crowd judgments: read them, simulate them, turn them into qrels, and check the crowd.

Yang (2019) PhD thesis, ch. 5 (Yang, Moffat & Turpin, "Pairwise Crowd Judgments: Preference,
Absolute, and Ratio", ADCS 2018; equations and corrections in seed note 004b, Sec. 3).  Workers see
two documents of a topic side by side and answer three questions:

* **preference** (QUESTION1, forced choice): which document is more relevant (``left``/``right``);
* **absolute** (QUESTION2): ``both`` relevant, only the ``selected`` one (the one chosen in Q1),
  or ``none``;
* **ratio** (QUESTION3): a non-negative number for each document (0 = not relevant).

Each question gives a score in [0, 1] per document (:func:`document_scores`, :func:`aggregate`):
preference and absolute *frequencies*, and the ratio method's completion of the incomplete
pairwise-comparison matrix, solved directly as the logarithmic least-squares problem the thesis's
geometric-mean iteration converges to.  The scores are ordinary qrels (``qid, docno, label``);
:func:`to_categories` maps them to graded categories by matching each topic's category proportions.
Worker quality (:func:`worker_quality`): transitivity and absolute-relevance inconsistency, accuracy
on gold pairs, left-side rate; :func:`position_bias` estimates the left bias the aggregation can
weight out.  Agreement with other qrels: :func:`document_agreement`, :func:`document_tau`,
:func:`judgment_alpha` (Krippendorff), :func:`system_agreement` (Kendall tau of system orderings).
:func:`simulate_crowd` makes a seeded crowd with known ground truth in the thesis's design.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, NamedTuple, Sequence, Union

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats as _st
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import spsolve

from .._validation import InputError, announce, check_number

__all__ = [
    "COLUMNS",
    "read_pairwise",
    "simulate_crowd",
    "design_partitions",
    "document_scores",
    "aggregate",
    "ratio_matrix_scores",
    "to_categories",
    "transitivity_inconsistency",
    "absolute_inconsistency",
    "gold_accuracy",
    "position_bias",
    "PositionBias",
    "worker_quality",
    "document_agreement",
    "document_tau",
    "judgment_alpha",
    "system_agreement",
    "SystemAgreement",
    "workers_path",
    
]

PathLike = Union[str, os.PathLike]

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

METHODS = ("preference", "absolute", "ratio", "combined")
_MAX_PAIRS_PER_CHUNK = 1 << 22
#: share of a simulated worker's perception noise that is drawn afresh for each presentation of a
#: document (the rest is drawn once per document and group: the worker reads it once)
_PRESENTATION_NOISE_SHARE = 0.25
#: a simulated ratio answer grows by this factor per grade of perceived relevance
_RATIO_GROWTH = 3.0


# ------------------------------------------------------------------------------------------------
# reading

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
    if isinstance(source, pd.DataFrame):
        df = source.copy()
        name = str(source.attrs.get("source", "judgments frame"))
        is_file = False
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise InputError(f"{path}: no such file (expected a CSV of pairwise judgments)")
        sep = "\t" if path.name.lower().endswith((".tsv", ".tsv.gz")) else ","
        try:
            df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise InputError(f"{path}: cannot be read as {'TSV' if sep == chr(9) else 'CSV'} ({exc})") from None
        name = str(path)
        is_file = True
    else:
        raise InputError(f"cannot read pairwise judgments from {type(source).__name__}; expected a CSV path "
                         f"or a DataFrame")
    df = _rename_columns(df, name)
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
    df = df.reset_index(drop=True)
    out = pd.DataFrame(index=df.index)
    for col in ("qid", "worker", "left", "right"):
        out[col] = _id_column(df, col, name, is_file)
    left, right = out["left"].to_numpy(), out["right"].to_numpy()
    same = left == right
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise InputError(f"{_loc(name, is_file, i, 'right')}: the pair shows document {left[i]!r} on both sides "
                         f"({int(same.sum())} such row(s)); a pair needs two different documents")
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
        unreadable = (mapped == "selected") & pd.isna(out["preferred"].to_numpy())
        if unreadable.any():
            announce(f"{name}: {int(unreadable.sum())} 'absolute' answer(s) 'selected' have no 'preferred' "
                     f"answer to say which document was selected; made missing")
            mapped[unreadable] = np.nan
        out["absolute"] = mapped
    else:
        out["absolute"] = np.full(len(df), np.nan, dtype=object)
    if all(has_ratio):
        rl = _ratio_column(df, "ratio_left", name, is_file)
        rr = _ratio_column(df, "ratio_right", name, is_file)
        half = np.isnan(rl) != np.isnan(rr)
        if half.any():
            announce(f"{name}: {int(half.sum())} row(s) give a ratio number for only one of the two documents; "
                     f"made missing")
            rl[half] = np.nan
            rr[half] = np.nan
        out["ratio_left"], out["ratio_right"] = rl, rr
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


def _judgments(judgments: Any) -> pd.DataFrame:
    if isinstance(judgments, pd.DataFrame) and judgments.attrs.get("pyterrier_noise_pairwise"):
        return judgments
    return read_pairwise(judgments)


class _Index(NamedTuple):
    """Integer codes of a judgment table: documents are (qid, docno), sorted."""

    doc_qid: np.ndarray     # (n_docs,) qid of each document
    docno: np.ndarray       # (n_docs,) docno of each document
    doc_topic: np.ndarray   # (n_docs,) topic index
    topics: np.ndarray      # (n_topics,) qids
    li: np.ndarray          # (rows,) document code of the left document
    ri: np.ndarray          # (rows,) ... of the right document
    left_chosen: np.ndarray  # (rows,) bool
    has_pref: np.ndarray    # (rows,) bool


def _codes(*cols: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Codes of the distinct tuples of several equal-length columns, sorted lexicographically.

    Returns ``(code of each row, [values of each column for each distinct tuple])``.  Each column
    is factorized on its own and the codes combined by mixed radix (pandas' MultiIndex
    factorization builds Python tuples and is several times slower).
    """
    code = np.zeros(len(cols[0]), dtype=np.int64)
    levels = []
    for col in cols:
        c, u = pd.factorize(np.asarray(col, dtype=object), sort=True)
        code = code * len(u) + c
        levels.append(np.asarray(u, dtype=object))
    keys, inv = np.unique(code, return_inverse=True)
    out = []
    rem = keys
    for u in reversed(levels):
        out.append(u[rem % len(u)])
        rem = rem // len(u)
    return inv.astype(np.int64), out[::-1]


def _lookup_labels(q: pd.DataFrame, qid: np.ndarray, docno: np.ndarray) -> np.ndarray:
    """Label in qrels ``q`` of each (qid, docno), NaN where not judged."""
    nq = len(q)
    inv, _ = _codes(np.concatenate([q["qid"].to_numpy(dtype=object), qid]),
                    np.concatenate([q["docno"].to_numpy(dtype=object), docno]))
    table = np.full(int(inv.max()) + 1, np.nan)
    table[inv[:nq]] = q["label"].to_numpy(dtype=float)
    return table[inv[nq:]]


def _index(j: pd.DataFrame) -> _Index:
    n = len(j)
    qid = j["qid"].to_numpy(dtype=object)
    codes, (doc_qid, docno) = _codes(np.concatenate([qid, qid]),
                                     np.concatenate([j["left"].to_numpy(dtype=object),
                                                     j["right"].to_numpy(dtype=object)]))
    tcodes, topics = pd.factorize(doc_qid, sort=True)
    pref = j["preferred"].to_numpy(dtype=object)
    return _Index(doc_qid, docno, tcodes.astype(np.int64), np.asarray(topics, dtype=object),
                  codes[:n], codes[n:], pref == "left", pd.notna(pref))


# ------------------------------------------------------------------------------------------------
# aggregation

def _check_eps(eps: Any) -> float:
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise InputError(f"eps must be a positive number, got {eps!r}") from None
    if not (np.isfinite(e) and e > 0):
        raise InputError(f"eps must be a positive number, got {eps!r}")
    return e


def _bias_weights(left_bias: Any, weighting: str) -> tuple[float, float]:
    """(w_L, w_R): credit given to the *other* document when the left / right one is chosen."""
    try:
        b = float(left_bias)
    except (TypeError, ValueError):
        raise InputError(f"left_bias must be a number in (-1, 1), got {left_bias!r}") from None
    if not -1.0 < b < 1.0:
        raise InputError(f"left_bias must be in (-1, 1) (the left-choice rate minus the right-choice rate "
                         f"on equally relevant pairs), got {left_bias!r}")
    if weighting == "symmetric":
        if abs(b) >= 0.5:
            raise InputError(f"bias_weighting='symmetric' needs |left_bias| < 0.5, got {left_bias!r}")
        return abs(b), abs(b)
    if weighting != "position":
        raise InputError(f"bias_weighting must be 'position' or 'symmetric', got {weighting!r}")
    w = abs(b) / (1.0 + abs(b))
    return (w, 0.0) if b >= 0 else (0.0, w)


def _normalizer(normalizer: Any, what: str) -> float | None:
    if isinstance(normalizer, str):
        if normalizer != "observed":
            raise InputError(f"normalizer must be 'observed' or a positive number (K*X*Y presentations per "
                             f"document), got {normalizer!r}")
        return None
    try:
        v = float(normalizer)
    except (TypeError, ValueError):
        raise InputError(f"normalizer must be 'observed' or a positive number, got {normalizer!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(f"normalizer must be 'observed' or a positive number, got {normalizer!r}")
    return v


def _frequency(credit: np.ndarray, presentations: np.ndarray, norm: float | None, what: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        score = credit / (presentations if norm is None else norm)
    score[presentations == 0] = np.nan
    if norm is not None and np.nanmax(score, initial=0.0) > 1.0 + 1e-12:
        over = int(np.sum(presentations > norm))
        announce(f"{what} frequencies: {over} document(s) were presented more than normalizer={norm:g} times; "
                 f"their scores exceed 1 (use normalizer='observed')")
    return score


def _preference(j: pd.DataFrame, ix: _Index, n: int, left_bias: float, weighting: str,
                norm: float | None) -> tuple[np.ndarray, np.ndarray]:
    wl, wr = _bias_weights(left_bias, weighting)
    v = ix.has_pref
    lc = ix.left_chosen[v]
    credit_l = np.where(lc, 1.0 - wl, wr)
    credit_r = np.where(lc, wl, 1.0 - wr)
    li, ri = ix.li[v], ix.ri[v]
    credit = np.bincount(li, credit_l, n) + np.bincount(ri, credit_r, n)
    pres = np.bincount(li, minlength=n) + np.bincount(ri, minlength=n)
    return _frequency(credit, pres.astype(float), norm, "preference"), pres


def _absolute(j: pd.DataFrame, ix: _Index, n: int, norm: float | None) -> tuple[np.ndarray, np.ndarray]:
    a = j["absolute"].to_numpy(dtype=object)
    v = pd.notna(a)
    both, sel = (a == "both")[v], (a == "selected")[v]
    lc = ix.left_chosen[v]
    rel_l = (both | (sel & lc)).astype(float)
    rel_r = (both | (sel & ~lc)).astype(float)
    li, ri = ix.li[v], ix.ri[v]
    credit = np.bincount(li, rel_l, n) + np.bincount(ri, rel_r, n)
    pres = np.bincount(li, minlength=n) + np.bincount(ri, minlength=n)
    return _frequency(credit, pres.astype(float), norm, "absolute"), pres


def _pair_log_ratios(li: np.ndarray, ri: np.ndarray, log_ratio: np.ndarray, n: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique pairs (a < b) and log M[a, b] = mean log ratio (geometric mean of the ratios)."""
    a, b = np.minimum(li, ri), np.maximum(li, ri)
    m = np.where(li < ri, log_ratio, -log_ratio)
    keys, inv = np.unique(a * n + b, return_inverse=True)
    mean = np.bincount(inv, m) / np.bincount(inv)
    return keys // n, keys % n, mean


def _llsm(a: np.ndarray, b: np.ndarray, logm: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Logarithmic least squares: minimise sum over known pairs (y_a - y_b - log M_ab)^2.

    Bozoki, Fulop & Ronyai (2010): the optimum solves the Laplacian system ``L y = r`` with
    ``L_ii`` = number of known partners of i, ``L_ij = -1`` for a known pair, ``r_i = sum_j log
    M_ij``; it is unique per connected component of the comparison graph up to a constant.  One
    node per component is grounded (y = 0) and the rest is one sparse direct solve over every
    topic at once (the system is block diagonal by topic).  Returns ``(y, component)``; ``y`` is
    NaN for documents without any comparison.
    """
    adj = sp.coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)).tocsr()
    adj = adj + adj.T
    n_comp, comp = connected_components(adj, directed=False)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    lap = sp.diags(deg) - adj
    r = np.bincount(a, logm, n) - np.bincount(b, logm, n)
    _, ground = np.unique(comp, return_index=True)
    keep = np.ones(n, dtype=bool)
    keep[ground] = False
    y = np.zeros(n)
    if keep.any():
        sub = lap[keep][:, keep].tocsc()
        sol = spsolve(sub, r[keep])
        y[keep] = np.atleast_1d(sol)
    y[deg == 0] = np.nan
    return y, comp


def _iterative(a: np.ndarray, b: np.ndarray, logm: np.ndarray, doc_topic: np.ndarray, n: int,
               iterations: int) -> np.ndarray:
    """The thesis's completion (Yang 2019 Sec. 5.3.1 steps 2-4, with rows as in seed note A5).

    ``S_i`` = geometric mean of all N entries of row i (diagonal 1 included); unknown cells are
    filled with ``S_u / S_v``; repeated ``iterations`` times from ``S = 1`` (unknown cells 1 in the
    first pass).  Dense per topic (padded to the largest topic, all topics in one array): a
    reference and compatibility mode, O(n_topics x N^2) memory.
    """
    has = np.zeros(n, dtype=bool)
    has[a] = True
    has[b] = True
    docs = np.flatnonzero(has)
    top = doc_topic[docs]
    t_codes, t_inv = np.unique(top, return_inverse=True)
    counts = np.bincount(t_inv)
    start = np.concatenate([[0], np.cumsum(counts)])
    order = np.argsort(t_inv, kind="stable")
    local = np.empty(len(docs), dtype=np.int64)
    local[order] = np.arange(len(docs)) - start[t_inv[order]]
    pos = np.full(n, -1, dtype=np.int64)
    pos[docs] = local
    tpos = np.full(n, -1, dtype=np.int64)
    tpos[docs] = t_inv
    T, N = len(t_codes), int(counts.max())
    logM = np.zeros((T, N, N))
    known = np.zeros((T, N, N), dtype=bool)
    t = tpos[a]
    logM[t, pos[a], pos[b]] = logm
    logM[t, pos[b], pos[a]] = -logm
    known[t, pos[a], pos[b]] = True
    known[t, pos[b], pos[a]] = True
    valid = np.arange(N)[None, :] < counts[:, None]
    y = np.zeros((T, N))
    for _ in range(iterations):
        full = np.where(known, logM, y[:, :, None] - y[:, None, :])
        y = np.where(valid, (full * valid[:, None, :]).sum(axis=2) / counts[:, None], 0.0)
    out = np.full(n, np.nan)
    out[docs] = y[t_inv, local]
    return out


def _ratio(j: pd.DataFrame, ix: _Index, n: int, eps: float, method: str, iterations: int
           ) -> np.ndarray:
    rl = j["ratio_left"].to_numpy(dtype=float)
    rr = j["ratio_right"].to_numpy(dtype=float)
    v = ~(np.isnan(rl) | np.isnan(rr))
    score = np.full(n, np.nan)
    if not v.any():
        return score
    a, b, logm = _pair_log_ratios(ix.li[v], ix.ri[v], np.log(rl[v] + eps) - np.log(rr[v] + eps), n)
    if method == "llsm":
        y, comp = _llsm(a, b, logm, n)
        ok = ~np.isnan(y)
        # normalise by the largest score of each component (S_i / S_max, Sec. 5.3.1 step 5)
        cmax = np.full(comp.max() + 1, -np.inf)
        np.maximum.at(cmax, comp[ok], y[ok])
        score[ok] = np.exp(y[ok] - cmax[comp[ok]])
        # several components in one topic: their scales are not comparable (seed note A6)
        comps = pd.DataFrame({"t": ix.doc_topic[ok], "c": comp[ok]}).drop_duplicates()
        per_topic = comps.groupby("t").size()
        split = per_topic[per_topic > 1]
        if len(split):
            announce(f"ratio method: the comparison graph of {len(split)} topic(s) (e.g. qid "
                     f"{ix.topics[split.index[0]]!r}) is not connected; each of its {int(split.max())} or fewer "
                     f"parts was scaled separately (scores are comparable within a part only)")
    elif method == "iterative":
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise InputError(f"iterations must be a positive integer, got {iterations!r}")
        y = _iterative(a, b, logm, ix.doc_topic, n, int(iterations))
        ok = ~np.isnan(y)
        tmax = np.full(len(ix.topics), -np.inf)
        np.maximum.at(tmax, ix.doc_topic[ok], y[ok])
        score[ok] = np.exp(y[ok] - tmax[ix.doc_topic[ok]])
    else:
        raise InputError(f"ratio_method must be 'llsm' or 'iterative', got {method!r}")
    return score


def _combine(cols: list[np.ndarray], eps: float) -> tuple[np.ndarray, np.ndarray]:
    logs = np.log(np.stack(cols, axis=1) + eps)
    avail = (~np.isnan(logs)).sum(axis=1)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(np.where(avail[:, None] > 0, logs, 0.0), axis=1)
    out = np.exp(mean) - eps
    out[avail == 0] = np.nan
    return out, avail


def document_scores(judgments: Any, *, eps: float = 1.0, left_bias: float = 0.0,
                    bias_weighting: Literal["position", "symmetric"] = "position",
                    normalizer: str | float = "observed", ratio_method: Literal["llsm", "iterative"] = "llsm",
                    iterations: int = 100,
                    combine: Sequence[str] = ("preference", "absolute", "ratio")) -> pd.DataFrame:
    """Every document's relevance score under each method (Yang 2019 Sec. 5.3.1, 5.3.5, 5.3.7).

    * ``preference`` (QUESTION1 frequency): credit / presentations.  A choice gives the chosen
      document 1 and the other 0 (Sec. 5.3.1: e.g. 6 wins in 99 presentations = 0.061).  With a
      left bias ``b`` (left-choice rate minus right-choice rate on equally relevant pairs, see
      :func:`position_bias`) and ``bias_weighting="position"``, a *left* choice gives the left
      document ``1 - w`` and the right one ``w`` with ``w = b / (1 + b)`` (right choices keep 1/0;
      mirrored for ``b < 0``), which makes the expected credit of two equally relevant documents
      equal.  ``"symmetric"`` is the thesis's literal proposal (Sec. 5.3.5): every choice gives
      ``1 - b`` and ``b`` (0.96 / 0.04), an affine map of the frequency that keeps the order.
    * ``absolute`` (QUESTION2 frequency): presentations whose answer implies the document is
      relevant (``both``; ``selected`` for the chosen one) / presentations.
    * ``ratio`` (QUESTION3): the incomplete pairwise matrix ``M[i, j]`` = geometric mean over
      assessments of ``(s_i + eps) / (s_j + eps)`` is completed by logarithmic least squares
      (``ratio_method="llsm"``, the fixed point of the thesis's iteration: Bozoki et al. 2010,
      seed note Sec. 3.3) or by ``iterations`` rounds of the iteration itself
      (``"iterative"``, row geometric means including the diagonal; the thesis's "column" is
      wrong, seed note A5).  Scores are ``S_i / max S`` per topic (per connected part of a
      topic's comparison graph, announced, when it is not connected).  ``eps = 1`` makes the
      ratio depend on each worker's number scale.
    * ``combined``: ``(prod_k (Rel_k + eps))^(1/m) - eps`` over the ``combine`` methods
      (Sec. 5.3.7); a document missing some of them is combined over the others (announced).

    Args:
        judgments: a frame or path (anything :func:`read_pairwise` reads).
        eps: the epsilon of the ratio and the combination (thesis: 1).
        left_bias, bias_weighting: position-bias weighting of preference answers.
        normalizer: ``"observed"`` (each document's own number of answered presentations; seed
            note A7) or a number, the design's ``K * X * Y`` presentations per document.
        ratio_method, iterations: see above.
        combine: the methods combined into ``combined``.

    Returns:
        ``qid, docno, presentations, workers, preference, absolute, ratio, combined``: one row per
        document shown (sorted by qid, docno); a score is NaN when the method has no answer for it.
    """
    return _document_scores(judgments, set(METHODS), eps=eps, left_bias=left_bias,
                            bias_weighting=bias_weighting, normalizer=normalizer, ratio_method=ratio_method,
                            iterations=iterations, combine=combine)


def _document_scores(judgments: Any, want: set, *, eps: float = 1.0, left_bias: float = 0.0,
                     bias_weighting: str = "position", normalizer: str | float = "observed",
                     ratio_method: str = "llsm", iterations: int = 100,
                     combine: Sequence[str] = ("preference", "absolute", "ratio")) -> pd.DataFrame:
    """:func:`document_scores` computing only the methods in ``want`` (others NaN)."""
    j = _judgments(judgments)
    e = _check_eps(eps)
    norm = _normalizer(normalizer, "normalizer")
    if isinstance(combine, str):
        combine = [combine]
    combine = list(combine)
    if not combine or any(m not in METHODS[:3] for m in combine):
        raise InputError(f"combine must name some of {list(METHODS[:3])}, got {combine!r}")
    need = set(want) | (set(combine) if "combined" in want else set())
    ix = _index(j)
    n = len(ix.docno)
    nan = np.full(n, np.nan)
    cols = {"preference": nan, "absolute": nan, "ratio": nan}
    if "preference" in need:
        cols["preference"] = _preference(j, ix, n, left_bias, bias_weighting, norm)[0]
    else:
        _bias_weights(left_bias, bias_weighting)         # validate anyway
    if "absolute" in need:
        cols["absolute"] = _absolute(j, ix, n, norm)[0]
    if "ratio" in need:
        cols["ratio"] = _ratio(j, ix, n, e, ratio_method, iterations)
    pres = np.bincount(ix.li, minlength=n) + np.bincount(ix.ri, minlength=n)
    w = pd.factorize(j["worker"].to_numpy(dtype=object))[0].astype(np.int64)
    nw = int(w.max()) + 1
    dw = np.unique(np.concatenate([ix.li * nw + w, ix.ri * nw + w]))
    workers = np.bincount(dw // nw, minlength=n)
    comb = nan
    if "combined" in want:
        present = [m for m in combine if not np.isnan(cols[m]).all()]
        absent = [m for m in combine if m not in present]
        if absent and present:
            announce(f"combined scores: the judgments have no {' or '.join(absent)} answers; combined over "
                     f"{present}")
        if present:
            comb, avail = _combine([cols[m] for m in present], e)
            partial = (avail > 0) & (avail < len(present))
            if partial.any():
                announce(f"combined scores: {int(partial.sum())} document(s) lack some of {present} and were "
                         f"combined over the methods they have")
    return pd.DataFrame({"qid": ix.doc_qid, "docno": ix.docno, "presentations": pres, "workers": workers,
                         "preference": cols["preference"], "absolute": cols["absolute"], "ratio": cols["ratio"],
                         "combined": comb})


def aggregate(judgments: Any, method: Literal["ratio", "preference", "absolute", "combined"] = "ratio",
              **options: Any) -> pd.DataFrame:
    """Qrels from pairwise judgments: ``qid, docno, label`` with ``label`` the method's score in [0, 1].

    Yang 2019 Sec. 5.3.1 / 5.3.7; ``method`` is ``"preference"``, ``"absolute"``, ``"ratio"`` or
    ``"combined"`` and ``options`` are those of :func:`document_scores`.  Documents without an
    answer for the method are left out (announced): they are unjudged in these qrels.  The result
    is an ordinary qrels frame for :func:`pyterrier_noise.evaluate`, ``AlignedRuns`` and anything
    that takes qrels; use a graded gain such as ``RBP(p=0.9,max_rel=1)`` (gain = score), or map to
    categories with :func:`to_categories` first.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {list(METHODS)}, got {method!r}")
    scores = _document_scores(judgments, {method}, **options)
    lab = scores[method].to_numpy()
    keep = ~np.isnan(lab)
    if not keep.all():
        announce(f"{method} qrels: {int((~keep).sum())} document(s) have no {method} answer and are left out "
                 f"(unjudged)")
    if not keep.any():
        raise InputError(f"no document has a {method} answer; nothing to aggregate")
    return pd.DataFrame({"qid": scores["qid"].to_numpy()[keep], "docno": scores["docno"].to_numpy()[keep],
                         "label": lab[keep]})


def ratio_matrix_scores(matrix: Any, method: Literal["llsm", "iterative"] = "llsm",
                        iterations: int = 100) -> np.ndarray:
    """Complete one incomplete pairwise ratio matrix and return ``S / max S`` (Yang 2019 Sec. 5.3.1).

    ``matrix[i, j]`` is the ratio of document i's relevance to document j's (``> 0``), NaN where
    the pair was not compared; a pair given in both cells must be reciprocal (``M[j, i] =
    1 / M[i, j]``); the diagonal is ignored.  ``method="llsm"`` solves the logarithmic least
    squares problem directly (Bozoki, Fulop & Ronyai 2010); ``"iterative"`` runs the thesis's
    row-geometric-mean iteration ``iterations`` times.  For a complete matrix both equal the row
    geometric means.  The comparison graph must be connected.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise InputError(f"matrix must be square with at least 2 rows, got shape {m.shape}")
    n = m.shape[0]
    off = ~np.eye(n, dtype=bool)
    given = off & ~np.isnan(m)
    if (m[given] <= 0).any() or np.isinf(m[given]).any():
        i, k = np.argwhere(given & ~((m > 0) & np.isfinite(m)))[0]
        raise InputError(f"matrix row {i}, column {k}: ratios must be positive and finite, got {m[i, k]!r}")
    both = given & given.T
    with np.errstate(divide="ignore", invalid="ignore"):
        bad = both & ~np.isclose(m * m.T, 1.0, rtol=1e-9, atol=0)
    if bad.any():
        i, k = np.argwhere(bad)[0]
        raise InputError(f"matrix cells ({i}, {k}) and ({k}, {i}) are not reciprocal: {m[i, k]!r} x {m[k, i]!r} != 1")
    upper = given | given.T
    a, b = np.nonzero(np.triu(upper, 1))
    logm = np.where(given[a, b], np.log(np.where(given[a, b], m[a, b], 1.0)),
                    -np.log(np.where(given[b, a], m[b, a], 1.0)))
    if method == "llsm":
        y, comp = _llsm(a, b, logm, n)
        if np.isnan(y).any() or comp.max() > 0:
            raise InputError("the comparison graph of matrix is not connected: the completion is not unique")
    elif method == "iterative":
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise InputError(f"iterations must be a positive integer, got {iterations!r}")
        y = _iterative(a, b, logm, np.zeros(n, dtype=np.int64), n, int(iterations))
    else:
        raise InputError(f"method must be 'llsm' or 'iterative', got {method!r}")
    return np.exp(y - np.max(y))


# ------------------------------------------------------------------------------------------------
# graded categories

def _qrels(q: Any, what: str) -> pd.DataFrame:
    from ..io.trec import read_qrels
    if q is None:
        raise InputError(f"{what}: expected qrels (a frame qid, docno, label or a file), got None")
    return read_qrels(q)


def to_categories(scores: Any, reference: Any = None,
                  proportions: Sequence[float] | Mapping[float, float] | None = None) -> pd.DataFrame:
    """Map numeric relevance scores to graded categories by matching proportions (Yang 2019 Fig. 5.10).

    For each topic, documents are sorted by score (descending; ties by docno, seed note A14) and
    the top ``round(N * P_top)`` get the highest category, the next the second, and so on, with
    cumulative rounding of the boundaries (``round(N * (P_top + ... + P_c))``).  Proportions come
    from ``reference`` qrels (per topic: the share of the topic's judged documents with each
    label; the thesis used Sormunen's categories) or from ``proportions`` (for every topic:
    a sequence for labels 0, 1, 2, ... lowest first, or a mapping label -> proportion).  The
    labels are the reference's (or the given) label values, so a linear gain over categories is
    ``max_rel`` = the highest label (e.g. ``nDCG@10``, ``RBP(p=0.9,max_rel=3)``).

    Args:
        scores: qrels whose label is a numeric score (e.g. from :func:`aggregate`).
        reference: qrels giving each topic's category proportions.
        proportions: proportions for every topic (alternative to ``reference``); must sum to 1.

    Returns:
        ``scores`` with ``label`` replaced by the category (other columns kept), rows in the input order.
    """
    if (reference is None) == (proportions is None):
        raise InputError("give exactly one of reference= (qrels) or proportions= (per label)")
    s = scores.copy() if isinstance(scores, pd.DataFrame) else _qrels(scores, "scores")
    base = _qrels(s, "scores")
    if len(base) != len(s):            # duplicates dropped (announced): keep the validated rows only
        s = base.copy()
    qid = base["qid"].to_numpy(dtype=object)
    tcodes, topics = pd.factorize(qid, sort=True)
    T = len(topics)
    if reference is not None:
        ref = _qrels(reference, "reference")
        labels = np.unique(ref["label"].to_numpy())
        rt = pd.Index(topics).get_indexer(ref["qid"].to_numpy(dtype=object))
        lab_code = np.searchsorted(labels, ref["label"].to_numpy())
        inside = rt >= 0
        counts = np.zeros((T, len(labels)))
        np.add.at(counts, (rt[inside], lab_code[inside]), 1.0)
        tot = counts.sum(axis=1)
        if (tot == 0).any():
            miss = topics[int(np.flatnonzero(tot == 0)[0])]
            raise InputError(f"reference: topic {miss!r} of scores has no reference judgments to take "
                             f"category proportions from ({int((tot == 0).sum())} such topic(s))")
        props = counts / tot[:, None]
    else:
        if isinstance(proportions, Mapping):
            labels = np.array(sorted(float(k) for k in proportions), dtype=float)
            p = np.array([float(proportions[k]) for k in sorted(proportions, key=float)])
        else:
            p = np.asarray(list(proportions), dtype=float)
            labels = np.arange(len(p), dtype=float)
        if p.ndim != 1 or len(p) < 2 or not np.isfinite(p).all() or (p < 0).any():
            raise InputError(f"proportions must be at least two non-negative numbers, got {proportions!r}")
        if not math.isclose(p.sum(), 1.0, abs_tol=1e-6):
            raise InputError(f"proportions must sum to 1, got {p.tolist()!r} (sum {p.sum():g})")
        props = np.broadcast_to(p, (T, len(p)))
    # boundaries from the top category down: cumulative shares, rounded half up
    cum = np.cumsum(props[:, ::-1], axis=1)
    n_t = np.bincount(tcodes, minlength=T)
    bounds = np.floor(n_t[:, None] * cum + 0.5)
    bounds[:, -1] = n_t
    order = np.lexsort((base["docno"].to_numpy(dtype=object).astype(str), -base["label"].to_numpy(), tcodes))
    rank = np.empty(len(order), dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(n_t)])
    rank[order] = np.arange(len(order)) - start[tcodes[order]]
    cat_from_top = (rank[:, None] >= bounds[tcodes]).sum(axis=1)
    s["label"] = labels[::-1][np.minimum(cat_from_top, len(labels) - 1)]
    return s


# ------------------------------------------------------------------------------------------------
# worker and judgment quality

def _units(j: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Code of each row's (qid, worker, group) unit and the units' (qid, worker) frame."""
    codes, (q, w, _) = _codes(j["qid"].to_numpy(dtype=object), j["worker"].to_numpy(dtype=object),
                              j["group"].to_numpy(dtype=object))
    return codes, pd.DataFrame({"qid": q, "worker": w})


def _per_worker(units: pd.DataFrame, **cols: np.ndarray) -> pd.DataFrame:
    f = units.assign(**cols)
    return f.groupby(["qid", "worker"], sort=True, as_index=False).sum(numeric_only=True)


_PERMS: dict[int, np.ndarray] = {}
_BEFORE: dict[int, np.ndarray] = {}


def _permutations(s: int) -> np.ndarray:
    """All s! permutations of range(s) as an (s!, s) int8 array (cached).

    Built by inserting item k at every position of the permutations of range(k), one vectorised
    step per (k, position) -- ``itertools.permutations`` materialises s! Python tuples.
    """
    if s not in _PERMS:
        perms = np.zeros((1, 1), dtype=np.int8)
        for k in range(1, s):
            perms = np.concatenate([np.insert(perms, i, k, axis=1) for i in range(k + 1)])
        _PERMS[s] = perms
    return _PERMS[s]


def _min_affected(weights: np.ndarray) -> np.ndarray:
    """Fewest items touched by violated preferences over the optimal orderings (seed note A13).

    ``weights``: (C, s, s), ``weights[c, a, b]`` = how often a was preferred to b in component c.
    Exhaustive over the s! orderings (the position vectors of all permutations are all
    permutations): with ``before[p, a, b] = pos_p(a) > pos_p(b)`` (a placed below b, so a > b is
    violated), every ordering's violated weight is one matrix product ``before (P, s^2) @ (s^2,
    C)``; the items touched are then counted for the optimal orderings only.
    """
    C, s, _ = weights.shape
    pos = _permutations(s)
    P = len(pos)
    wf = weights.reshape(C, s * s).T.astype(np.float32)                              # (s^2, C)
    eye = np.eye(s, dtype=bool)
    touch = (weights > 0)[:, :, :, None] & (eye[None, :, None, :] | eye[None, None, :, :])
    touch = touch.reshape(C, s * s, s).astype(np.float32)                            # (C, s^2, s)
    cached = _BEFORE.get(s)
    if cached is None and P * s * s <= 1 << 22:
        cached = _BEFORE[s] = (pos[:, :, None] > pos[:, None, :]).reshape(P, s * s).astype(np.float32)
    step = max(1, min(P, (1 << 22) // max(1, s * s + C)))

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        for p0 in range(0, P, step):
            if cached is not None:
                yield p0, cached[p0:p0 + step]
            else:
                pp = pos[p0:p0 + step]
                yield p0, (pp[:, :, None] > pp[:, None, :]).reshape(len(pp), s * s).astype(np.float32)

    best = np.full(C, np.inf, dtype=np.float32)
    for _, before in blocks():
        best = np.minimum(best, (before @ wf).min(axis=0))
    fewest = np.full(C, s + 1, dtype=np.int64)
    for _, before in blocks():
        p, c = np.nonzero(before @ wf <= best + 0.5)
        n_touched = (np.einsum("nk,nkd->nd", before[p], touch[c]) > 0.5).sum(axis=1)
        np.minimum.at(fewest, c, n_touched)
    return fewest


def transitivity_inconsistency(judgments: Any, max_component: int = 9) -> pd.DataFrame:
    """QUESTION1 (in)transitivity of each worker on each topic (Yang 2019 Sec. 5.3.5, Fig. 5.11).

    Within each (worker, group), find the orderings of the judged documents that violate the
    fewest of the worker's preferences (a minimum feedback arc set); the documents involved in a
    violated preference are *affected*.  Where several orderings are optimal, the one affecting
    the fewest documents counts (seed note A13).  The worker's inconsistency on a topic is
    ``sum affected / sum judged documents`` over their groups.  Example (Sec. 5.3.5):
    d1>d2, d2>d3, d3>d4, d4>d1 -> 2 of 4 documents affected, 0.5.

    Optimal orderings violate only preferences inside a strongly connected component of the
    preference graph (scipy), so only cyclic components are searched, exhaustively up to
    ``max_component`` documents; a worker-group with a larger cyclic component gets NaN
    (announced).  Without a ``group`` column a worker's whole topic is one group.

    Returns:
        ``qid, worker, docs, affected, inconsistency`` (docs = judged documents summed over groups).
    """
    j = _judgments(judgments)
    if isinstance(max_component, bool) or not isinstance(max_component, (int, np.integer)) \
            or not 2 <= max_component <= 10:
        raise InputError(f"max_component must be an integer from 2 to 10, got {max_component!r}")
    unit, units = _units(j)
    ix = _index(j)
    v = ix.has_pref
    n_docs = len(ix.docno)
    win = np.where(ix.left_chosen, ix.li, ix.ri)[v]
    lose = np.where(ix.left_chosen, ix.ri, ix.li)[v]
    u = unit[v]
    # nodes: (unit, document)
    node_keys, inv = np.unique(np.concatenate([u * n_docs + win, u * n_docs + lose]), return_inverse=True)
    m = len(win)
    nw, nl = inv[:m], inv[m:]
    node_unit = node_keys // n_docs
    U = len(units)
    judged = np.bincount(node_unit, minlength=U)
    affected = np.zeros(U, dtype=float)
    if m:
        g = sp.coo_matrix((np.ones(m), (nw, nl)), shape=(len(node_keys),) * 2).tocsr()
        _, scc = connected_components(g, directed=True, connection="strong")
        size = np.bincount(scc)
        inside = scc[nw] == scc[nl]
        # edges inside cyclic components, merged by (winner, loser) with their multiplicity
        ek, ecount = np.unique(nw[inside] * len(node_keys) + nl[inside], return_counts=True)
        ew, el = ek // len(node_keys), ek % len(node_keys)
        ecomp = scc[ew]
        cyc = np.flatnonzero(size >= 2)
        too_big = cyc[size[cyc] > max_component]
        if len(too_big):
            bad_units = np.unique(node_unit[np.isin(scc, too_big)])
            affected[bad_units] = np.nan
            announce(f"transitivity: {len(bad_units)} worker-group(s) have a cycle of preferences over more than "
                     f"{max_component} documents; their inconsistency is NaN (give a 'group' column, or raise "
                     f"max_component)")
        # local item numbers inside each component
        node_order = np.argsort(scc, kind="stable")
        cstart = np.concatenate([[0], np.cumsum(size)])
        local = np.empty(len(scc), dtype=np.int64)
        local[node_order] = np.arange(len(scc)) - cstart[scc[node_order]]
        for s in np.unique(size[cyc]):
            if s > max_component:
                continue
            comps = cyc[size[cyc] == s]
            sel = np.isin(ecomp, comps)
            cidx = np.searchsorted(comps, ecomp[sel])
            W = np.zeros((len(comps), int(s), int(s)))
            np.add.at(W, (cidx, local[ew[sel]], local[el[sel]]), ecount[sel])
            aff = _min_affected(W)
            comp_unit = node_unit[node_order[cstart[comps]]]
            np.add.at(affected, comp_unit, aff.astype(float))
    out = _per_worker(units, docs=judged.astype(np.int64), affected=affected)
    # a NaN in any group makes the worker's sum NaN (pandas sums skip NaN: restore it)
    nan_units = pd.Series(np.isnan(affected)).groupby([units["qid"], units["worker"]]).any().to_numpy()
    out.loc[nan_units, "affected"] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        out["inconsistency"] = out["affected"] / out["docs"].where(out["docs"] > 0)
    return out[["qid", "worker", "docs", "affected", "inconsistency"]]


def absolute_inconsistency(judgments: Any) -> pd.DataFrame:
    """QUESTION2 inconsistency of each worker on each topic (Yang 2019 Sec. 5.3.5, Fig. 5.11).

    Each answer implies a label for both documents (``both`` -> 1, 1; ``none`` -> 0, 0;
    ``selected`` -> 1 for the document chosen in QUESTION1, 0 for the other).  A document is
    inconsistent in a (worker, group) when its implied labels there differ; the worker's
    inconsistency on a topic is ``sum inconsistent / sum judged documents`` over their groups.

    Returns:
        ``qid, worker, docs, inconsistent, inconsistency``.
    """
    j = _judgments(judgments)
    unit, units = _units(j)
    ix = _index(j)
    a = j["absolute"].to_numpy(dtype=object)
    v = pd.notna(a)
    both, sel = a == "both", a == "selected"
    rel_l = (both | (sel & ix.left_chosen))[v]
    rel_r = (both | (sel & ~ix.left_chosen))[v]
    n_docs = len(ix.docno)
    u = unit[v]
    keys, inv = np.unique(np.concatenate([u * n_docs + ix.li[v], u * n_docs + ix.ri[v]]), return_inverse=True)
    ones = np.bincount(inv, np.concatenate([rel_l, rel_r]).astype(float), len(keys))
    cnt = np.bincount(inv, minlength=len(keys))
    incons = (ones > 0) & (ones < cnt)
    ku = keys // n_docs
    U = len(units)
    out = _per_worker(units, docs=np.bincount(ku, minlength=U),
                      inconsistent=np.bincount(ku, incons.astype(float), U).astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        out["inconsistency"] = out["inconsistent"] / out["docs"].where(out["docs"] > 0)
    return out[["qid", "worker", "docs", "inconsistent", "inconsistency"]]


def _gold_side(j: pd.DataFrame, gold_qrels: Any) -> np.ndarray:
    if gold_qrels is None:
        return j["gold"].to_numpy(dtype=object)
    g = _qrels(gold_qrels, "gold_qrels")
    q = j["qid"].to_numpy(dtype=object)
    ll = _lookup_labels(g, q, j["left"].to_numpy(dtype=object))
    lr = _lookup_labels(g, q, j["right"].to_numpy(dtype=object))
    side = np.full(len(j), np.nan, dtype=object)
    side[ll > lr] = "left"
    side[lr > ll] = "right"
    return side


def gold_accuracy(judgments: Any, gold_qrels: Any = None) -> pd.DataFrame:
    """Accuracy on gold pairs: the share where the worker preferred the gold document (Sec. 5.3.5).

    Gold pairs are the rows with a ``gold`` side, or, with ``gold_qrels``, every pair whose two
    documents both have labels there and differ (the more relevant is the gold side).  Groups
    failing the gold pair are not excluded elsewhere (as in the thesis).

    Returns:
        ``qid, worker, gold_pairs, gold_correct, gold_accuracy`` (NaN without gold pairs).
    """
    j = _judgments(judgments)
    unit, units = _units(j)
    side = _gold_side(j, gold_qrels)
    pref = j["preferred"].to_numpy(dtype=object)
    v = pd.notna(side) & pd.notna(pref)
    U = len(units)
    out = _per_worker(units, gold_pairs=np.bincount(unit[v], minlength=U),
                      gold_correct=np.bincount(unit[v], (pref[v] == side[v]).astype(float), U).astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        out["gold_accuracy"] = out["gold_correct"] / out["gold_pairs"].where(out["gold_pairs"] > 0)
    return out[["qid", "worker", "gold_pairs", "gold_correct", "gold_accuracy"]]


class PositionBias(NamedTuple):
    """Left-side bias of QUESTION1 answers (Yang 2019 Tables 5.11, 5.12)."""

    bias: float          #: left-choice rate minus right-choice rate (the thesis's "4 %")
    left_rate: float     #: share of answers choosing the left document
    pairs: int           #: answers counted
    p_value: float       #: two-sided binomial test of left_rate = 0.5 (scipy.stats.binomtest)
    per_topic: pd.DataFrame  #: ``qid, pairs, left_rate, bias``


def position_bias(judgments: Any, qrels: Any = None, rel: float = 1.0) -> PositionBias:
    """Left/right position bias of the preference answers (Yang 2019 Sec. 5.3.5, Tables 5.11-5.12).

    Counts the answers choosing the left document.  With ``qrels``, only pairs whose two documents
    are both judged there and equally relevant at ``label >= rel`` count (the thesis's [0,0] and
    [1,1] pairs under NIST binary judgments), where an unbiased worker picks either side half the
    time; without, every answered pair counts.  ``bias = 2 * left_rate - 1`` is what
    :func:`document_scores` takes as ``left_bias``.
    """
    j = _judgments(judgments)
    pref = j["preferred"].to_numpy(dtype=object)
    v = pd.notna(pref)
    if qrels is not None:
        try:
            rel = float(rel)
        except (TypeError, ValueError):
            raise InputError(f"rel must be a number, got {rel!r}") from None
        q = _qrels(qrels, "qrels")
        qq = j["qid"].to_numpy(dtype=object)
        ll = _lookup_labels(q, qq, j["left"].to_numpy(dtype=object))
        lr = _lookup_labels(q, qq, j["right"].to_numpy(dtype=object))
        v &= ~np.isnan(ll) & ~np.isnan(lr) & ((ll >= rel) == (lr >= rel))
    k = int((pref[v] == "left").sum())
    n = int(v.sum())
    f = pd.DataFrame({"qid": j["qid"].to_numpy(dtype=object)[v], "left": (pref[v] == "left").astype(float)})
    per = f.groupby("qid", sort=True).agg(pairs=("left", "size"), left_rate=("left", "mean")).reset_index()
    per["bias"] = 2 * per["left_rate"] - 1
    if n == 0:
        return PositionBias(float("nan"), float("nan"), 0, float("nan"), per)
    rate = k / n
    p = float(_st.binomtest(k, n, 0.5).pvalue)
    return PositionBias(2 * rate - 1, rate, n, p, per)


def worker_quality(judgments: Any, gold_qrels: Any = None, max_component: int = 9) -> pd.DataFrame:
    """One row per (topic, worker): workload and the quality measures of Yang 2019 Sec. 5.3.5.

    Columns: ``qid, worker, groups, pairs, docs`` (distinct documents shown),
    ``transitivity_inconsistency`` (:func:`transitivity_inconsistency`),
    ``absolute_inconsistency`` (:func:`absolute_inconsistency`), ``gold_pairs, gold_accuracy``
    (:func:`gold_accuracy`) and ``left_rate`` (share of preference answers choosing the left side).
    """
    j = _judgments(judgments)
    ix = _index(j)
    f = pd.DataFrame({"qid": j["qid"].to_numpy(dtype=object), "worker": j["worker"].to_numpy(dtype=object),
                      "group": j["group"].to_numpy(dtype=object),
                      "left": np.where(ix.has_pref, ix.left_chosen.astype(float), np.nan)})
    g = f.groupby(["qid", "worker"], sort=True)
    base = g.agg(groups=("group", "nunique"), pairs=("group", "size"), left_rate=("left", "mean")).reset_index()
    docs = pd.DataFrame({"qid": np.concatenate([f["qid"], f["qid"]]), "worker": np.concatenate([f["worker"]] * 2),
                         "d": np.concatenate([ix.li, ix.ri])}).drop_duplicates()
    base = base.merge(docs.groupby(["qid", "worker"]).size().rename("docs").reset_index(), on=["qid", "worker"])
    t = transitivity_inconsistency(j, max_component=max_component)
    a = absolute_inconsistency(j)
    gold = gold_accuracy(j, gold_qrels)
    out = (base.merge(t[["qid", "worker", "inconsistency"]].rename(columns={"inconsistency": "transitivity_inconsistency"}),
                      on=["qid", "worker"], how="left")
               .merge(a[["qid", "worker", "inconsistency"]].rename(columns={"inconsistency": "absolute_inconsistency"}),
                      on=["qid", "worker"], how="left")
               .merge(gold[["qid", "worker", "gold_pairs", "gold_accuracy"]], on=["qid", "worker"], how="left"))
    return out[["qid", "worker", "groups", "pairs", "docs", "transitivity_inconsistency", "absolute_inconsistency",
                "gold_pairs", "gold_accuracy", "left_rate"]]


# ------------------------------------------------------------------------------------------------
# agreement with other qrels

def _score_matrix(qrels_list: Sequence[Any], how: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels of several qrels over their common (``how="inner"``) or all documents, sorted by
    topic: ``(values (J, R) with NaN, topic_start (T+1,), topics)``."""
    frames = [_qrels(q, f"qrels #{k + 1}") for k, q in enumerate(qrels_list)]
    idx = [pd.MultiIndex.from_arrays([f["qid"].to_numpy(dtype=object), f["docno"].to_numpy(dtype=object)])
           for f in frames]
    docs = idx[0]
    for other in idx[1:]:
        docs = docs.intersection(other) if how == "inner" else docs.union(other)
    docs = docs.sort_values()
    vals = np.column_stack([pd.Series(f["label"].to_numpy(), index=i).reindex(docs).to_numpy(dtype=float)
                            for f, i in zip(frames, idx)])
    tcodes, topics = pd.factorize(docs.get_level_values(0), sort=True)
    start = np.concatenate([[0], np.cumsum(np.bincount(tcodes, minlength=len(topics)))])
    return vals, start, np.asarray(topics, dtype=object)


def _within_topic_pairs(start: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """All pairs (i < j) of rows of the same topic, in chunks: ``(i, j, topic)``."""
    J = int(start[-1])
    if J == 0:
        return
    sizes = np.diff(start)
    topic_of = np.repeat(np.arange(len(sizes)), sizes)
    c = start[topic_of + 1] - np.arange(J) - 1
    cum = np.concatenate([[0], np.cumsum(c)])
    r0 = 0
    while r0 < J:
        r1 = int(np.searchsorted(cum, cum[r0] + _MAX_PAIRS_PER_CHUNK, side="right")) - 1
        r1 = min(max(r1, r0 + 1), J)
        cc = c[r0:r1]
        i = np.repeat(np.arange(r0, r1), cc)
        off = np.arange(len(i)) - np.repeat(cum[r0:r1] - cum[r0], cc)
        yield i, i + 1 + off, topic_of[i]
        r0 = r1


def document_agreement(qrels_a: Any, qrels_b: Any,
                       among: Literal["all", "b_ordered", "b_tied"] = "all") -> pd.DataFrame:
    """How two qrels order pairs of documents of the same topic (Yang 2019 Tables 5.5-5.7).

    Over the documents both judge: ``agree`` = both order the pair the same way strictly,
    ``disagree`` = strictly opposite, ``tied`` = equal labels in either (Table 5.7's A/D/U),
    ``separated`` = ``qrels_a`` orders the pair strictly.  ``among="b_ordered"`` counts only the
    pairs ``qrels_b`` orders strictly (Table 5.5 with b = NIST binary: ``tied`` is then a tie in
    ``qrels_a``); ``"b_tied"`` only the pairs it ties (Table 5.6: ``separated``).

    Returns:
        ``qid, pairs, agree, disagree, tied, separated`` (shares), one row per topic and a final
        row ``qid="all"`` pooled over topics.
    """
    if among not in ("all", "b_ordered", "b_tied"):
        raise InputError(f"among must be 'all', 'b_ordered' or 'b_tied', got {among!r}")
    vals, start, topics = _score_matrix([qrels_a, qrels_b], "inner")
    T = len(topics)
    cnt = np.zeros((4, T))
    for i, j, t in _within_topic_pairs(start):
        sa = np.sign(vals[i, 0] - vals[j, 0])
        sb = np.sign(vals[i, 1] - vals[j, 1])
        keep = slice(None) if among == "all" else (sb != 0) if among == "b_ordered" else (sb == 0)
        sa, sb, t = sa[keep], sb[keep], t[keep]
        prod = sa * sb
        cnt[0] += np.bincount(t, minlength=T)
        cnt[1] += np.bincount(t, prod > 0, T)
        cnt[2] += np.bincount(t, prod < 0, T)
        cnt[3] += np.bincount(t, sa != 0, T)
    pairs = np.append(cnt[0], cnt[0].sum())
    tot = np.column_stack([cnt, cnt.sum(axis=1)])
    with np.errstate(invalid="ignore", divide="ignore"):
        agree, disagree, sep = tot[1] / pairs, tot[2] / pairs, tot[3] / pairs
        tied = (pairs - tot[1] - tot[2]) / pairs
    return pd.DataFrame({"qid": np.append(topics, "all"), "pairs": pairs.astype(np.int64), "agree": agree,
                         "disagree": disagree, "tied": tied, "separated": sep})


def document_tau(qrels_a: Any, qrels_b: Any) -> pd.DataFrame:
    """Kendall's tau_b between two qrels' labels of each topic's common documents (Yang 2019 Fig. 5.17).

    ``tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2))`` (scipy.stats.kendalltau's default; counted over
    within-topic pairs for all topics at once).  Returns ``qid, docs, tau`` per topic and a final
    row ``qid="all"`` with the mean over topics (NaN topics, e.g. one constant label, skipped).
    """
    vals, start, topics = _score_matrix([qrels_a, qrels_b], "inner")
    T = len(topics)
    s = np.zeros(T)
    n0 = np.zeros(T)
    t1 = np.zeros(T)
    t2 = np.zeros(T)
    for i, j, t in _within_topic_pairs(start):
        sa = np.sign(vals[i, 0] - vals[j, 0])
        sb = np.sign(vals[i, 1] - vals[j, 1])
        s += np.bincount(t, sa * sb, T)
        n0 += np.bincount(t, minlength=T)
        t1 += np.bincount(t, sa == 0, T)
        t2 += np.bincount(t, sb == 0, T)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((n0 - t1) * (n0 - t2))
    mean = float(np.nanmean(tau)) if np.isfinite(tau).any() else float("nan")
    return pd.DataFrame({"qid": np.append(topics, "all"), "docs": np.append(np.diff(start), start[-1]),
                         "tau": np.append(tau, mean)})


def judgment_alpha(qrels_list: Sequence[Any], tie: Literal["T", "missing"] = "T") -> float:
    """Krippendorff's alpha of several qrels over within-topic document pairs (Yang 2019 Sec. 5.3.6).

    Each pair of documents of a topic is a unit; each qrels is a rater whose value is the pair's
    order ``L`` (first document higher), ``R`` or ``T`` (equal), or missing when it lacks one of
    the two documents; nominal alpha (:func:`pyterrier_noise.agreement.krippendorff_alpha`).
    ``tie="missing"`` drops ties (Table 2.12: 0.353 with ties, 0.500 without).
    """
    from ..stats.agreement import krippendorff_alpha
    qrels_list = list(qrels_list)
    if len(qrels_list) < 2:
        raise InputError(f"judgment_alpha needs at least two qrels, got {len(qrels_list)}")
    if tie not in ("T", "missing"):
        raise InputError(f"tie must be 'T' or 'missing', got {tie!r}")
    vals, start, _ = _score_matrix(qrels_list, "outer")
    parts = []
    for i, j, _t in _within_topic_pairs(start):
        d = np.sign(vals[i] - vals[j])
        if tie == "missing":
            d[d == 0] = np.nan
        parts.append(d)
    if not parts:
        raise InputError("no topic has two documents: no document pairs to agree on")
    return krippendorff_alpha(np.concatenate(parts), level="nominal")


class SystemAgreement(NamedTuple):
    """How two qrels order the systems (Yang 2019 Sec. 5.3.4, Table 5.8)."""

    tau: float            #: Kendall tau_b of the two orderings of systems
    agree: float          #: share of system pairs ordered the same way strictly
    disagree: float       #: share ordered strictly opposite
    tied: float           #: share tied under either
    scores: pd.DataFrame  #: ``name, a, b``: each system's mean score under each qrels


def system_agreement(runs: Any, qrels_a: Any, qrels_b: Any, measure: str = "RBP(p=0.9,max_rel=1)"
                     ) -> SystemAgreement:
    """Agreement of the system orderings two qrels induce (Yang 2019 Sec. 5.3.4, Table 5.8, Fig. 5.9).

    Each system's mean ``measure`` over the topics both qrels judge, by
    :func:`pyterrier_noise.evaluate`; Kendall's tau_b by
    :func:`pyterrier_noise.agreement.kendall_tau`; system-pair A/D/U shares as in Table 5.8.
    The default measure, RBP(0.9) with gain = label (``max_rel=1``), is the thesis's for scores
    in [0, 1]; for categories use the highest label as ``max_rel``.
    """
    from ..stats.agreement import kendall_tau
    from ..measures.classes import evaluate
    a, b = _qrels(qrels_a, "qrels_a"), _qrels(qrels_b, "qrels_b")
    common = sorted(set(a["qid"]) & set(b["qid"]))
    if not common:
        raise InputError("qrels_a and qrels_b share no topic")
    dropped = len(set(a["qid"]) | set(b["qid"])) - len(common)
    if dropped:
        announce(f"system_agreement: {dropped} topic(s) judged by only one of the two qrels are left out")
    a, b = a[a["qid"].isin(common)], b[b["qid"].isin(common)]
    ea = evaluate(runs, a, [measure], on_topic_mismatch="ignore").set_index("name")["value"]
    eb = evaluate(runs, b, [measure], on_topic_mismatch="ignore").set_index("name")["value"]
    scores = pd.DataFrame({"name": ea.index, "a": ea.to_numpy(), "b": eb.reindex(ea.index).to_numpy()})
    if len(scores) < 2:
        raise InputError("system_agreement needs at least two runs")
    tau = float(kendall_tau(scores["a"].to_numpy(), scores["b"].to_numpy()))
    i, k = np.triu_indices(len(scores), 1)
    prod = np.sign(scores["a"].to_numpy()[i] - scores["a"].to_numpy()[k]) * \
        np.sign(scores["b"].to_numpy()[i] - scores["b"].to_numpy()[k])
    return SystemAgreement(tau, float(np.mean(prod > 0)), float(np.mean(prod < 0)), float(np.mean(prod == 0)),
                           scores)


# ------------------------------------------------------------------------------------------------
# simulation

def design_partitions(num_docs: Any, partners: int = 3, pair_fraction: float = 0.15) -> Any:
    """Number of partitionings X so each document meets ``pair_fraction`` of the others (Yang 2019 Sec. 5.1.1).

    ``X = round(pair_fraction * (num_docs - 1) / partners)`` (half up, at least 1); with K = 3 and
    15 % it reproduces every X of Table 5.1 (e.g. 216 documents -> 11, seed note Sec. 3.1).
    Accepts a number or an array of numbers.
    """
    n = np.asarray(num_docs)
    if n.dtype.kind not in "iuf" or (n < 2).any():
        raise InputError(f"num_docs must be numbers of documents >= 2, got {num_docs!r}")
    if isinstance(partners, bool) or not isinstance(partners, (int, np.integer)) or partners < 1:
        raise InputError(f"partners must be a positive integer, got {partners!r}")
    if not 0 < float(pair_fraction) <= 1:
        raise InputError(f"pair_fraction must be in (0, 1], got {pair_fraction!r}")
    x = np.maximum(1, np.floor(float(pair_fraction) * (n - 1) / partners + 0.5)).astype(np.int64)
    return int(x) if x.ndim == 0 else x


def _pair_chain(n: int, k: int, rng: np.random.Generator, budget: int = 200_000) -> np.ndarray | None:
    """A random pair list for a group of n documents (Yang 2019 Algorithm 1, corrected).

    Every document is in exactly k pairs, no pair repeats, consecutive pairs share one document
    (the "stayed" one, chosen at random), which keeps its side; the first pair's sides are
    (left, right).  Randomised backtracking; ``None`` if the budget of steps runs out.
    """
    total = n * k // 2
    deg = np.full(n, k)
    used: set[tuple[int, int]] = set()
    pairs: list[tuple[int, int]] = []
    steps = [0]

    def extend(stay: Sequence[int]) -> bool:
        if len(pairs) == total:
            return True
        steps[0] += 1
        if steps[0] > budget:
            return False
        for s in rng.permutation(np.asarray(stay)):
            s = int(s)
            if deg[s] == 0:
                continue
            for d in rng.permutation(n):
                d = int(d)
                if d == s or deg[d] == 0 or (min(s, d), max(s, d)) in used:
                    continue
                pairs.append((s, d))
                used.add((min(s, d), max(s, d)))
                deg[s] -= 1
                deg[d] -= 1
                if extend((s, d)):
                    return True
                pairs.pop()
                used.discard((min(s, d), max(s, d)))
                deg[s] += 1
                deg[d] += 1
                if steps[0] > budget:
                    return False
        return False

    if not extend(range(n)):
        return None
    # sides: the first pair as found; afterwards the stayed document keeps its side
    out = np.empty((total, 2), dtype=np.int64)
    out[0] = pairs[0]
    for t in range(1, total):
        s, d = pairs[t]
        out[t] = (s, d) if out[t - 1, 0] == s else (d, s)
    return out


def _chain_templates(n: int, k: int, rng: np.random.Generator, count: int = 32) -> np.ndarray:
    found = []
    for _ in range(count * 4):
        c = _pair_chain(n, k, rng)
        if c is not None:
            found.append(c)
        if len(found) == count:
            break
    if not found:
        raise InputError(f"could not build a pair list with {k} partners per document in groups of {n}")
    return np.stack(found)


def _number(name: str, value: Any) -> float:
    return check_number(name, value)


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def simulate_crowd(qrels: Any, *, workers_per_group: int = 3, n_workers: int = 60,
                   partitions: int | None = None, docs_per_group: int = 8, partners: int = 3,
                   pair_fraction: float = 0.15, accuracy: float | tuple[float, float] = (0.75, 0.95),
                   left_bias: float = 0.04, missing: float | tuple[float, float, float] = 0.0,
                   relevant_from: float = 1.0, ratio_scale: float = 10.0, gold: bool = True,
                   seed: int | None = 0, return_workers: bool = False) -> Any:
    """A seeded crowd answering the thesis's three questions about pairs of documents (Yang 2019 Sec. 5.1).

    *Design* (Sec. 5.1.1).  Each topic's documents (the rows of ``qrels``; their labels are the
    ground truth) are randomly partitioned ``partitions`` times (default :func:`design_partitions`,
    about 15 % of the other documents as partners) into groups of ``docs_per_group``; a topic
    whose size is not a multiple fills its last group with documents of its first group.  Each
    group gets a pair list in which every document meets ``partners`` others, no pair repeats and
    consecutive pairs share a document, which stays on its side (a random relabelling of one of 32
    chains from the thesis's Algorithm 1).  With ``gold=True`` a group holding a document with
    label >= ``relevant_from`` and one below pairs its most relevant document with a non-relevant
    one: the gold pair (``gold`` column).  Unlike the thesis, groups are not built around known
    HR/NR documents, so groups without both kinds have no gold pair.  ``workers_per_group`` (Y)
    distinct workers of a crowd of ``n_workers`` judge each group.

    *Workers.*  Worker w perceives document d as ``u = label_d + sigma_w z`` (Thurstone), with
    ``z`` drawn once per (worker, group, document) for 75 % of the variance (the worker reads the
    document once) and afresh per presentation for the rest.  ``sigma_w`` follows from the
    worker's ``accuracy`` (a number, or a (low, high) range drawn uniformly per worker): the
    chance of preferring the better of two documents one grade apart,
    ``accuracy = Phi(1 / (sigma_w sqrt 2))``.  With probability ``|left_bias|`` an answer to
    QUESTION1 simply takes the left (right, if negative) document, so on equally relevant pairs
    the left-choice rate minus the right-choice rate is ``left_bias`` (the thesis measured 0.04).
    Otherwise the worker prefers the higher perception.  QUESTION2 calls a document relevant when
    ``u > relevant_from - 1/2`` (``both`` / ``selected`` / ``none``); QUESTION3 gives
    ``c_w 3^(u - relevant_from + 1/2)`` rounded to 2 decimals, larger for the preferred document
    (the thesis's embedded validation), with a per-worker number scale ``c_w = ratio_scale *
    lognormal(0, 1)``.  Each answer is missing with probability ``missing`` (one number, or one
    per question).

    Returns:
        the judgments (columns :data:`COLUMNS`, ready for :func:`document_scores`), sorted by
        group, worker, pair; with ``return_workers=True`` also a frame ``worker, accuracy, sigma,
        ratio_scale``.
    """
    from scipy.special import ndtri
    rng = np.random.default_rng(seed)
    Y = _int_arg("workers_per_group", workers_per_group, 1)
    nw = _int_arg("n_workers", n_workers, Y)
    D = _int_arg("docs_per_group", docs_per_group, 3)
    K = _int_arg("partners", partners, 1)
    if K >= D or (D * K) % 2:
        raise InputError(f"partners={K} and docs_per_group={D}: need partners < docs_per_group and an even "
                         f"docs_per_group * partners (every document in exactly `partners` pairs)")
    if partitions is not None:
        partitions = _int_arg("partitions", partitions, 1)
    acc = np.asarray(accuracy, dtype=float)
    if acc.shape == ():
        acc_w = np.full(nw, float(acc))
    elif acc.shape == (2,) and acc[0] <= acc[1]:
        acc_w = rng.uniform(acc[0], acc[1], nw)
    else:
        raise InputError(f"accuracy must be a number or a (low, high) range, got {accuracy!r}")
    if not (np.all(acc_w > 0.5) and np.all(acc_w <= 1.0)):
        raise InputError(f"accuracy must be in (0.5, 1] (the chance of preferring the better of two documents "
                         f"one grade apart), got {accuracy!r}")
    b = _number("left_bias", left_bias)
    if not -1 < b < 1:
        raise InputError(f"left_bias must be in (-1, 1), got {left_bias!r}")
    try:
        miss = np.asarray(missing, dtype=float)
    except (TypeError, ValueError):
        miss = np.array([np.nan])
    if miss.shape not in ((), (3,)) or not np.all((miss >= 0) & (miss < 1)):
        raise InputError(f"missing must be a probability in [0, 1) or three of them (one per question), "
                         f"got {missing!r}")
    miss = np.broadcast_to(miss, (3,))
    scale = _number("ratio_scale", ratio_scale)
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(f"ratio_scale must be a positive number, got {ratio_scale!r}")
    theta = _number("relevant_from", relevant_from) - 0.5
    sigma_w = 1.0 / (np.sqrt(2.0) * ndtri(acc_w))
    scale_w = scale * np.exp(rng.normal(0.0, 1.0, nw))

    q = _qrels(qrels, "qrels").sort_values(["qid", "docno"], kind="stable").reset_index(drop=True)
    sizes = q.groupby("qid", sort=True).size()
    small = sizes[sizes < D]
    if len(small):
        announce(f"simulate_crowd: {len(small)} topic(s) with fewer than docs_per_group={D} documents "
                 f"(e.g. qid {small.index[0]!r}) were left out")
        q = q[~q["qid"].isin(small.index)].reset_index(drop=True)
    if len(q) == 0:
        raise InputError(f"no topic has at least docs_per_group={D} documents")
    topics = np.asarray(sizes[sizes >= D].index, dtype=object)
    n_t = sizes[sizes >= D].to_numpy(dtype=np.int64)
    doc_start = np.concatenate([[0], np.cumsum(n_t)])
    label = q["label"].to_numpy(dtype=float)
    docno = q["docno"].to_numpy(dtype=object)
    X_t = np.full(len(n_t), partitions) if partitions is not None else design_partitions(n_t, K, pair_fraction)
    X_t = np.atleast_1d(X_t).astype(np.int64)

    # blocks = (topic, partitioning); a random permutation of the topic's documents in each
    block_topic = np.repeat(np.arange(len(n_t)), X_t)
    block_part = np.arange(len(block_topic)) - np.repeat(np.concatenate([[0], np.cumsum(X_t)[:-1]]), X_t)
    B = len(block_topic)
    nb = n_t[block_topic]
    pstart = np.concatenate([[0], np.cumsum(nb)])
    eb = np.repeat(np.arange(B), nb)
    edoc = doc_start[block_topic[eb]] + np.arange(len(eb)) - pstart[eb]
    perm_doc = edoc[np.lexsort((rng.random(len(eb)), eb))]
    G_b = -(-nb // D)
    S_b = D * G_b
    sstart = np.concatenate([[0], np.cumsum(S_b)])
    sb = np.repeat(np.arange(B), S_b)
    s = np.arange(len(sb)) - sstart[sb]
    src = np.where(s < nb[sb], s, s - D * (G_b[sb] - 1))
    group_docs = perm_doc[pstart[sb] + src].reshape(-1, D)
    NG = len(group_docs)
    group_block = np.repeat(np.arange(B), G_b)
    group_no = np.arange(NG) - np.repeat(np.concatenate([[0], np.cumsum(G_b)[:-1]]), G_b)

    # pair lists: relabelled templates; the gold pair on a random edge
    lib = _chain_templates(D, K, rng)
    P = lib.shape[1]
    tau = rng.integers(len(lib), size=NG)
    edge = rng.integers(P, size=NG)
    lab = label[group_docs]
    jitter = rng.random((NG, D)) * 1e-3
    hr = np.argmax(lab + jitter, axis=1)
    nr = np.argmin(lab + jitter, axis=1)
    rows = np.arange(NG)
    has_gold = bool(gold) & (lab[rows, hr] >= relevant_from) & (lab[rows, nr] < relevant_from)
    k_slot = rng.random((NG, D))
    k_pos = rng.random((NG, D))
    eu, ev = lib[tau, edge, 0], lib[tau, edge, 1]
    g = np.flatnonzero(has_gold)
    k_slot[g, hr[g]], k_slot[g, nr[g]] = -2.0, -1.0
    k_pos[g, eu[g]], k_pos[g, ev[g]] = -2.0, -1.0
    pi = np.empty((NG, D), dtype=np.int64)
    np.put_along_axis(pi, np.argsort(k_pos, axis=1), np.argsort(k_slot, axis=1), axis=1)
    pair_slots = np.take_along_axis(pi, lib[tau].reshape(NG, -1), axis=1).reshape(NG, P, 2)
    flip = rng.random(NG) < 0.5
    pair_slots[flip] = pair_slots[flip][:, :, ::-1]
    lslot, rslot = pair_slots[:, :, 0], pair_slots[:, :, 1]
    is_gold = has_gold[:, None] & (np.arange(P)[None, :] == edge[:, None])
    gold_side = np.where(lslot == hr[:, None], "left", "right").astype(object)
    gold_side[~is_gold] = np.nan

    # workers and their answers: arrays (groups, Y, P)
    wk = np.argsort(rng.random((NG, nw)), axis=1)[:, :Y]
    sig = sigma_w[wk][:, :, None]
    share = _PRESENTATION_NOISE_SHARE
    read = lab[:, None, :] + sigma_w[wk][:, :, None] * math.sqrt(1 - share) * rng.standard_normal((NG, Y, D))
    uL = np.take_along_axis(read, np.broadcast_to(lslot[:, None, :], (NG, Y, P)), axis=2)
    uR = np.take_along_axis(read, np.broadcast_to(rslot[:, None, :], (NG, Y, P)), axis=2)
    uL = uL + sig * math.sqrt(share) * rng.standard_normal((NG, Y, P))
    uR = uR + sig * math.sqrt(share) * rng.standard_normal((NG, Y, P))
    lazy = rng.random((NG, Y, P)) < abs(b)
    left = np.where(lazy, b >= 0, uL > uR)
    relL, relR = uL > theta, uR > theta
    absolute = np.where(relL & relR, "both", np.where(relL | relR, "selected", "none")).astype(object)
    c = scale_w[wk][:, :, None]
    sL = np.round(c * _RATIO_GROWTH ** (uL - theta), 2)
    sR = np.round(c * _RATIO_GROWTH ** (uR - theta), 2)
    hi, lo = np.maximum(sL, sR), np.minimum(sL, sR)
    hi = np.where(hi == lo, hi + 0.01, hi)
    ratio_l, ratio_r = np.where(left, hi, lo), np.where(left, lo, hi)
    preferred = np.where(left, "left", "right").astype(object)
    m1, m2, m3 = (rng.random((3, NG, Y, P)) < miss[:, None, None, None])
    preferred[m1] = np.nan
    absolute[m2] = np.nan
    ratio_l, ratio_r = np.where(m3, np.nan, ratio_l), np.where(m3, np.nan, ratio_r)

    gq = topics[block_topic[group_block]]
    gid = (pd.Series(gq, dtype=object).astype(str) + "-p" + pd.Series(block_part[group_block] + 1).astype(str)
           + "-g" + pd.Series(group_no + 1).astype(str)).to_numpy(dtype=object)
    width = len(str(nw))
    names = np.array([f"w{i + 1:0{width}d}" for i in range(nw)], dtype=object)
    shape = (NG, Y, P)
    gi = np.broadcast_to(np.arange(NG)[:, None, None], shape).ravel()
    ldoc = group_docs[np.arange(NG)[:, None], lslot]
    rdoc = group_docs[np.arange(NG)[:, None], rslot]
    out = pd.DataFrame({
        "qid": gq[gi], "worker": names[np.broadcast_to(wk[:, :, None], shape).ravel()], "group": gid[gi],
        "pair": np.broadcast_to(np.arange(P)[None, None, :], shape).ravel(),
        "left": docno[np.broadcast_to(ldoc[:, None, :], shape).ravel()],
        "right": docno[np.broadcast_to(rdoc[:, None, :], shape).ravel()],
        "preferred": preferred.ravel(), "absolute": absolute.ravel(),
        "ratio_left": ratio_l.ravel(), "ratio_right": ratio_r.ravel(),
        "gold": np.broadcast_to(gold_side[:, None, :], shape).ravel(),
    })
    out.attrs["source"] = f"simulate_crowd(seed={seed})"
    out.attrs["pyterrier_noise_pairwise"] = True
    if return_workers:
        return out, pd.DataFrame({"worker": names, "accuracy": acc_w, "sigma": sigma_w, "ratio_scale": scale_w})
    return out


def workers_path(qrels_path: PathLike) -> Path:
    """Where ``pairwise aggregate`` writes the worker-quality table: ``QRELS.workers.tsv`` (``.gz`` dropped)."""
    p = Path(qrels_path)
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    return p.with_name(name + ".workers.tsv")
