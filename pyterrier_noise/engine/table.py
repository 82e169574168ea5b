"""The judgment table: every (topic, docno) judgment as one row, sorted by (topic, docno)."""
from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .._validation import is_frame

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa


def natural_sort(values: Sequence[str]) -> list[str]:
    """Numeric order for numeric qids (as trec_eval and rbp_eval print them), else lexicographic."""
    vals = list(values)
    return [vals[i] for i in natural_order(vals).tolist()]


def natural_order(values: Sequence[str]) -> np.ndarray:
    """The indices that put ``values`` in :func:`natural_sort`'s order (``[values[i] for i in
    natural_order(values)] == natural_sort(values)``; equal values in their given order), so that
    the rank of each value is had without a lookup of each in a dict of them."""
    vals = list(values)
    keys = list(map(int, vals)) if all(v.isdigit() for v in vals) else vals
    return np.fromiter(sorted(range(len(vals)), key=keys.__getitem__), dtype=np.int64, count=len(vals))


#: the frame attribute that carries a qrels frame's topic set (topics may have no judgment left)
TOPICS_ATTR = "topics"


#: topic sets of recent reduced qrels, by a fingerprint of their (qid, docno) pairs, so that a
#: copy that lost ``attrs`` (pt.Experiment merges the qrels with its topics) keeps its topics
_DECLARED: "OrderedDict[tuple[int, int], list[str]]" = OrderedDict()
_DECLARED_MAX = 64


def _fingerprint(qrels) -> tuple[int, int]:
    import pandas as pd
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
    if declared is None and _DECLARED and is_frame(qrels):
        declared = _DECLARED.get(_fingerprint(qrels))
    if declared is None:
        return None
    col = "qid" if "qid" in qrels.columns else "query_id"
    return natural_sort(set(str(t) for t in declared) | set(qrels[col].astype(str).unique()))


class JudgmentTable:
    """Judgments sorted by (topic, docno): row j is one (qid, docno) with its label.

    ``topic_index[j]`` is the topic of row j; rows of a topic are contiguous, starting at
    ``topic_start[t]``; ``docno[j]`` and ``labels[j]`` are its docno and label.  :attr:`frame`
    is the same table as a ``qid, docno, label`` frame (built on first use for a table made
    from arrays, which never imports pandas).
    """

    def __init__(self, frame: "pd.DataFrame | None", topics: list[str], topic_index: np.ndarray,
                 topic_start: np.ndarray, labels: np.ndarray, docno: "np.ndarray | pa.Array | None" = None):
        if frame is None and docno is None:
            raise ValueError("JudgmentTable: give the frame or the docno of every row")
        arrow = docno is not None and not isinstance(docno, np.ndarray)
        self._frame = frame
        self._docno = None if arrow else docno
        #: the docnos as an Arrow string array, when the table was made from one (else None)
        self.docno_arrow = docno if arrow else None
        self.topics = topics
        self.topic_index = topic_index
        self.topic_start = topic_start
        self.labels = labels

    @property
    def frame(self) -> "pd.DataFrame":
        """The judgments as a ``qid, docno, label`` frame in row order."""
        if self._frame is None:
            import pandas as pd
            self._frame = pd.DataFrame({"qid": np.asarray(self.topics, dtype=object)[self.topic_index],
                                        "docno": self.docno, "label": self.labels})
        return self._frame

    @property
    def docno(self) -> np.ndarray:
        """The docno of every row (an object array)."""
        if self._docno is None:
            self._docno = self._frame["docno"].to_numpy(dtype=object) if self._frame is not None else \
                np.asarray(self.docno_arrow.to_pylist(), dtype=object)
        return self._docno

    def docnos_of(self, rows: "int | np.ndarray") -> "str | np.ndarray":
        """The docno of the given rows (an int: a str; an array of ints or a mask: an object
        array), taken from the Arrow docnos when the table holds them (about 12 bytes a row)
        without making a Python string of every row's docno (about 60)."""
        if self.docno_arrow is None:
            return self.docno[rows]
        if np.ndim(rows) == 0:
            return self.docno_arrow[int(rows)].as_py()
        from .._arrow import int64_array
        idx = np.asarray(rows)
        idx = np.flatnonzero(idx) if idx.dtype == bool else idx.astype(np.int64, copy=False)
        return np.asarray(self.docno_arrow.take(int64_array(idx)).to_pylist(), dtype=object)

    def __repr__(self) -> str:
        return f"JudgmentTable({len(self)} judgments, {len(self.topics)} topics)"

    def with_labels(self, labels: np.ndarray) -> "JudgmentTable":
        """The same rows with other labels (one per row)."""
        labels = np.asarray(labels, dtype=np.float64)
        if labels.shape != self.labels.shape:
            raise ValueError(f"with_labels: expected {len(self)} labels, got shape {labels.shape}")
        # a table without a frame has its docnos (the constructor requires one or the other)
        docno = self.docno_arrow if self.docno_arrow is not None else self._docno
        frame = None if self._frame is None else self._frame.assign(label=labels)
        return JudgmentTable(frame, self.topics, self.topic_index, self.topic_start, labels, docno=docno)

    def with_topics(self, topics: Sequence[str]) -> "JudgmentTable":
        """The same judgments over other topics, in this order: the rows of topics not named are
        dropped, a named topic without rows has none (the table :meth:`from_frame` makes of this
        table's rows with these topics, without a frame: no pandas)."""
        topics = [str(t) for t in topics]
        if topics == self.topics:   # the same topics in the same order (the runs' topics are the qrels'): the same rows
            frame = None if self._frame is None else self._frame.reset_index(drop=True)
            docno = self.docno_arrow if self.docno_arrow is not None else self._docno
            return JudgmentTable(frame, topics, self.topic_index, self.topic_start, self.labels, docno=docno)
        new_of_old = {t: i for i, t in enumerate(topics)}
        remap = np.array([new_of_old.get(t, -1) for t in self.topics], dtype=np.int64)
        tix = remap[self.topic_index] if len(self.topic_index) else np.zeros(0, dtype=np.int64)
        # rows are sorted by (topic, docno): a stable sort by the new topic keeps each topic's docno order
        rows = np.flatnonzero(tix >= 0)
        rows = rows[np.argsort(tix[rows], kind="stable")]
        tix = tix[rows]
        start = np.searchsorted(tix, np.arange(len(topics) + 1))
        frame = None if self._frame is None else self._frame.iloc[rows].reset_index(drop=True)
        if self.docno_arrow is not None:
            from .._arrow import int64_array
            docno = self.docno_arrow.take(int64_array(rows))
        else:
            docno = None if self._docno is None else self._docno[rows]   # else the frame has them
        return JudgmentTable(frame, topics, tix, start, self.labels[rows], docno=docno)

    @classmethod
    def from_qrels(cls, qrels, topics: Sequence[str] | None = None) -> "JudgmentTable":
        """From anything :func:`~pyterrier_noise.io.read_qrels` reads (validated there).

        ``topics``: the topics of the table, in this order (default: those of the qrels, numeric
        qids in numeric order, with the topics named in ``qrels.attrs["topics"]``, which a
        reduction that leaves a topic without judgments sets: :func:`qrels_topics`); judgments of
        other topics are dropped."""
        from ..io import read_qrels
        if topics is None:
            topics = qrels_topics(qrels)
        return cls.from_frame(read_qrels(qrels), topics)

    @classmethod
    def from_frame(cls, q: "pd.DataFrame", topics: Sequence[str] | None = None) -> "JudgmentTable":
        """From an already validated ``qid, docno, label`` frame (labels may be NaN: unjudged rows),
        without :func:`~pyterrier_noise.io.read_qrels`'s checks; ``topics`` as in :meth:`from_qrels`."""
        if topics is None:
            topics = qrels_topics(q)
        keep, perm, topics, tix, start = _order(q["qid"].to_numpy(dtype=object), q["docno"].to_numpy(dtype=object),
                                                topics)
        q = q[keep].iloc[perm].reset_index(drop=True)
        return cls(q, topics, tix, start, q["label"].to_numpy(dtype=np.float64))

    @classmethod
    def from_arrays(cls, qid, docno, labels, topics: Sequence[str] | None = None) -> "JudgmentTable":
        """From validated judgments as three arrays, without pandas: the same table as
        :meth:`from_frame` of the same rows.  ``qid`` and ``docno``: str object arrays or Arrow
        string arrays (as :func:`~pyterrier_noise.io.read_arrow_qrels` gives them, which the
        alignment then uses without converting them); ``labels``: numbers.  ``topics`` as in
        :meth:`from_qrels` (default: the qids of the rows, numeric qids in numeric order)."""
        import pyarrow as pa
        arrow = isinstance(docno, pa.Array)
        if arrow:   # order by (topic, docno) through integer codes: no Python string per row
            import pyarrow.compute as pc
            from .._arrow import int64_array, numbers
            encoded = pc.dictionary_encode(qid)
            qids = np.asarray(encoded.dictionary.to_pylist(), dtype=object)   # distinct, as they first appear
            codes = numbers(encoded.indices)
            # the docnos' order: a rank per row (equal docnos: in row order), or a rank per distinct
            # docno when they repeat (the same topic order, as the sort is stable): fewer strings sorted
            docs = pc.dictionary_encode(docno)
            distinct = docs.dictionary if 2 * len(docs.dictionary) <= len(docno) else docno
            by_docno = numbers(pc.sort_indices(distinct))
            doc_key = np.empty(len(by_docno), dtype=np.int64)
            doc_key[by_docno] = np.arange(len(by_docno))
            if distinct is not docno:
                doc_key = doc_key[numbers(docs.indices)]
        else:
            qids, doc_key = np.asarray(qid, dtype=object), np.asarray(docno, dtype=object)
            codes = None
        keep, perm, topics, tix, start = _order(qids, doc_key, topics, codes)
        rows = np.flatnonzero(keep)[perm]
        labels = np.asarray(labels, dtype=np.float64)[rows]
        return cls(None, topics, tix, start, labels,
                   docno=docno.take(int64_array(rows)) if arrow else doc_key[rows])

    def __len__(self) -> int:
        return len(self.labels)


def _order(qid: np.ndarray, docno: np.ndarray, topics: Sequence[str] | None, codes: np.ndarray | None = None) -> tuple:
    """(rows kept: of the topics; their order by (topic, docno); the topics; topic of each row in
    that order; first row of each topic) of judgments given as qid and docno object arrays; with
    ``codes``, ``qid`` holds the distinct qids in order of first appearance and ``codes`` each
    row's index into them (a lookup per distinct qid, not per row)."""
    qids = qid.tolist()
    if topics is None and codes is not None:   # distinct qids: each one's topic is its rank in natural order
        by_rank = natural_order(qids)
        topics = [qids[i] for i in by_rank.tolist()]
        tix = np.empty(len(qids), dtype=np.int64)
        tix[by_rank] = np.arange(len(qids))
        tix = tix[codes]
    else:
        if topics is None:
            topics = natural_sort(list(dict.fromkeys(qids)))
        topics = list(topics)
        order = {t: i for i, t in enumerate(topics)}
        # one dict lookup per row, iterated in C (map over a builtin), not in Python bytecode
        tix = np.array(list(map(order.get, qids, itertools.repeat(-1, len(qids)))), dtype=np.int64)
        if codes is not None:
            tix = tix[codes]
    keep = tix >= 0
    tix = tix[keep]
    perm = np.lexsort((docno[keep], tix))
    tix = tix[perm]
    start = np.searchsorted(tix, np.arange(len(topics) + 1))
    return keep, perm, topics, tix, start

