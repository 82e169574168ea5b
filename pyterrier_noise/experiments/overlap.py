"""How much two judgment sets share: Moffat, Webber and Zobel (2007), Table 3.

The paper selects 10,000 judgments by its Method C at persistence p = 0.5, 0.8 and 0.95 and
counts the (topic, document) pairs each two selections have in common (9,215 between p = 0.5 and
0.8, 6,972 between 0.5 and 0.95): up to about 30% of the judgments change with p.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError

__all__ = ["judgment_overlap"]


def _keys(name: str, frame: Any) -> pd.MultiIndex:
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"selection {name!r} must be a frame with columns qid and docno, got {type(frame).__name__}")
    f = frame.rename(columns={"query_id": "qid", "doc_id": "docno"})
    if not {"qid", "docno"} <= set(f.columns):
        raise InputError(f"selection {name!r} must have columns qid and docno, got {list(frame.columns)}")
    return pd.MultiIndex.from_arrays([f["qid"].astype(str).to_numpy(), f["docno"].astype(str).to_numpy()]).unique()


def judgment_overlap(selections: Mapping[Any, Any], *, share: bool = False) -> pd.DataFrame:
    """Pairs ``(qid, docno)`` that each two judgment sets share (Moffat, Webber and Zobel 2007, Table 3).

    Args:
        selections: ``{label: frame}`` with columns ``qid, docno`` (e.g. the judgments chosen by
            :func:`pyterrier_noise.selection.rbp_pool` at several ``p``, or qrels); repeated pairs
            count once.
        share: divide each count by the size of the row's set (so the diagonal is 1).

    Returns:
        A square frame indexed and labelled by the selections' labels: ``|A & B|`` (the diagonal
        holds each set's size).
    """
    if not isinstance(selections, Mapping) or len(selections) < 1:
        raise InputError("selections must be a non-empty mapping {label: frame with qid, docno}")
    labels = list(selections)
    keys = [_keys(str(k), selections[k]) for k in labels]
    n = len(labels)
    out = np.zeros((n, n), dtype=np.int64)
    for a in range(n):
        for b in range(a, n):                      # pairs of sets (a handful), each one vectorised
            out[a, b] = out[b, a] = len(keys[a].intersection(keys[b]))
    frame = pd.DataFrame(out, index=pd.Index(labels, name="selection"), columns=pd.Index(labels, name="selection"))
    if share:
        sizes = np.diag(out).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            frame = frame.astype(np.float64).div(sizes, axis=0)
    return frame
