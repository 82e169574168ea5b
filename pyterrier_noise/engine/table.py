"""The judgment table: every (topic, docno) judgment as one row, sorted by (topic, docno)."""
from __future__ import annotations

from collections import OrderedDict
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


#: the frame attribute that carries a qrels frame's topic set (topics may have no judgment left)
TOPICS_ATTR = "topics"


#: topic sets of recent reduced qrels, by a fingerprint of their (qid, docno) pairs, so that a
#: copy that lost ``attrs`` (pt.Experiment merges the qrels with its topics) keeps its topics
_DECLARED: "OrderedDict[tuple[int, int], list[str]]" = OrderedDict()
_DECLARED_MAX = 64


def _fingerprint(qrels) -> tuple[int, int]:
    cols = ["qid", "docno"] if "qid" in qrels.columns else ["query_id", "doc_id"]
    h = pd.util.hash_pandas_object(qrels[cols].astype(str), index=False).to_numpy()
    return len(qrels), int(h.sum(dtype=np.uint64))   # order-free: a merge may reorder rows


def declare_topics(qrels: pd.DataFrame, topics: Sequence[str]) -> pd.DataFrame:
    """Mark ``qrels`` (in place, and returned) as covering ``topics``, including topics left
    without any judgment: ``attrs["topics"]``, also remembered for copies that lose ``attrs``."""
    topics = [str(t) for t in topics]
    qrels.attrs[TOPICS_ATTR] = topics
    _DECLARED[_fingerprint(qrels)] = topics
    while len(_DECLARED) > _DECLARED_MAX:
        _DECLARED.popitem(last=False)
    return qrels


def qrels_topics(qrels) -> list[str] | None:
    """The topic set a qrels frame carries in ``attrs["topics"]`` joined with the topics of its
    rows (numeric qids in numeric order), or None when it carries none.

    Reductions (:class:`~pyterrier_noise.judges.PoolDepthReduction`,
    :class:`~pyterrier_noise.judges.RandomRemoval`) set it so that a topic left without
    judgments stays in every mean (base 0, residual from the run, as ``trec_eval -c``)."""
    attrs = getattr(qrels, "attrs", None)
    declared = attrs.get(TOPICS_ATTR) if isinstance(attrs, dict) else None
    if declared is None and _DECLARED and isinstance(qrels, pd.DataFrame):
        declared = _DECLARED.get(_fingerprint(qrels))
    if declared is None:
        return None
    col = "qid" if "qid" in qrels.columns else "query_id"
    return _natural_sort(set(str(t) for t in declared) | set(qrels[col].astype(str).unique()))


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
        qids in numeric order, with the topics named in ``qrels.attrs["topics"]``, which a
        reduction that leaves a topic without judgments sets: :func:`qrels_topics`); judgments of
        other topics are dropped."""
        if topics is None:
            topics = qrels_topics(qrels)
        return cls.from_frame(read_qrels(qrels), topics)

    @classmethod
    def from_frame(cls, q: pd.DataFrame, topics: Sequence[str] | None = None) -> "JudgmentTable":
        """From an already validated ``qid, docno, label`` frame (labels may be NaN: unjudged rows),
        without :func:`~pyterrier_noise.io.read_qrels`'s checks; ``topics`` as in :meth:`from_qrels`."""
        if topics is None:
            topics = qrels_topics(q)
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
