"""Integer codes of a pairwise-judgment table shared by the estimators (private to :mod:`pyterrier_noise.crowd`).

Documents are ``(qid, docno)`` pairs coded in sorted order; every estimator works on these codes
with ``np.bincount`` instead of per-document Python loops.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._validation import InputError
from ..io import read_qrels
from .read import read_pairwise


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


def _qrels(q: Any, what: str) -> pd.DataFrame:
    if q is None:
        raise InputError(f"{what}: expected qrels (a frame qid, docno, label or a file), got None")
    return read_qrels(q, fractional="keep")   # crowd scores are graded by design (magnitudes in [0, 1])
