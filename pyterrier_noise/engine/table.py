"""The judgment table: every (topic, docno) judgment as one row, sorted by (topic, docno)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..io import read_qrels


def _natural_sort(values: Sequence[str]) -> list[str]:
    """Numeric order for numeric qids (as trec_eval and rbp_eval print them), else lexicographic."""
    vals = list(values)
    if all(v.isdigit() for v in vals):
        return sorted(vals, key=int)
    return sorted(vals)


@dataclass
class JudgmentTable:
    """Judgments sorted by (topic, docno): row j is one (qid, docno) with its label.

    ``topic_index[j]`` is the topic of row j; rows of a topic are contiguous, starting at
    ``topic_start[t]``.
    """

    frame: pd.DataFrame
    topics: list[str]
    topic_index: np.ndarray
    topic_start: np.ndarray
    labels: np.ndarray

    @classmethod
    def from_qrels(cls, qrels, topics: Sequence[str] | None = None) -> "JudgmentTable":
        """From anything :func:`~pyterrier_noise.io.read_qrels` reads (validated there).

        ``topics``: the topics of the table, in this order (default: those of the qrels, numeric
        qids in numeric order); judgments of other topics are dropped."""
        return cls.from_frame(read_qrels(qrels), topics)

    @classmethod
    def from_frame(cls, q: pd.DataFrame, topics: Sequence[str] | None = None) -> "JudgmentTable":
        """From an already validated ``qid, docno, label`` frame (labels may be NaN: unjudged rows),
        without :func:`~pyterrier_noise.io.read_qrels`'s checks; ``topics`` as in :meth:`from_qrels`."""
        topics = _natural_sort(pd.unique(q["qid"])) if topics is None else list(topics)
        order = {t: i for i, t in enumerate(topics)}
        tix = q["qid"].map(order)
        keep = tix.notna().to_numpy()
        q = q[keep]
        tix = tix[keep].to_numpy(dtype=np.int64)
        perm = np.lexsort((q["docno"].to_numpy(), tix))
        q = q.iloc[perm].reset_index(drop=True)
        tix = tix[perm]
        start = np.searchsorted(tix, np.arange(len(topics) + 1))
        return cls(q, topics, tix, start, q["label"].to_numpy(dtype=np.float64))

    def __len__(self) -> int:
        return len(self.frame)

    #: the former private name of :meth:`from_frame`, still used by other subpackages
    _from_frame = from_frame
