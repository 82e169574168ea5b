"""Integer keys of the alignment: one document vocabulary over runs and judgments (numbered in docno
order, or in the runs' order with the docno order of tied rows alone), lookups of (topic, document) keys in the judgment table, and the table grown by the
unjudged documents the runs retrieve.  Only integer operations once the vocabulary is built."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .._arrow import int64_array, numbers
from .table import JudgmentTable


#: keys per block where a pass over sorted keys would otherwise make temporaries of every key
_BLOCK = 1 << 20


def _dense_keys(key_range: int, n: int) -> bool:
    """Whether integer keys below ``key_range`` are better served by a dense table than by a sort,
    for ``n`` keys: when the range is not much larger than the keys (or small anyway)."""
    return key_range <= max(4 * n, 1 << 20)


def lookup(keys: np.ndarray, queries: np.ndarray, key_range: int | None = None) -> np.ndarray:
    """Row of each query key in ``keys`` (unique), or -1; binary search over sorted keys, or, for
    non-negative keys below a ``key_range`` that is small next to the number of queries, one
    dense table of rows (no search at all)."""
    if key_range is not None and _dense_keys(key_range, len(queries)):
        row_at = np.full(key_range, -1, dtype=np.int64)
        row_at[keys] = np.arange(len(keys))
        return row_at[queries]
    order = None
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
    if len(keys) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    loc = np.minimum(np.searchsorted(keys, queries), len(keys) - 1)
    hit = keys[loc] == queries
    if order is not None:
        loc = order[loc]
    return np.where(hit, loc, -1)


def doc_vocabulary(duniq, jdoc: np.ndarray) -> tuple[np.ndarray, np.ndarray, "Callable[[], np.ndarray]"]:
    """One vocabulary over the runs' distinct docnos ``duniq`` (an object array, or a pyarrow
    string array straight from the reader) and the judged docnos ``jdoc``, numbered in docno
    order so that trec_eval's tie-break (docno descending) is a comparison of integer codes.

    Returns (code of each vocabulary entry, ``duniq``'s first; code of each ``jdoc`` entry; a
    function giving the vocabulary in code order as an object array, built only when a message
    or the docnos need it; ``arrow=True``: as the Arrow string array, when the docnos are one,
    with no Python string per docno).
    Arrow sorts its strings by UTF-8 bytes, which is code-point order, numpy's order for ``str``."""
    if isinstance(duniq, np.ndarray):   # docnos of frames: pandas is imported already
        import pandas as pd
        jdoc = jdoc if isinstance(jdoc, np.ndarray) else np.asarray(jdoc.to_pylist(), dtype=object)
        extra = pd.Index(jdoc).difference(pd.Index(duniq))
        vocab = np.concatenate([np.asarray(duniq, dtype=object), np.asarray(extra, dtype=object)])
        order = np.argsort(vocab.astype(str), kind="stable")
        rank_of = np.empty(len(vocab), dtype=np.int64)
        rank_of[order] = np.arange(len(vocab))
        return rank_of, rank_of[pd.Index(vocab).get_indexer(pd.Index(jdoc))], lambda arrow=False: vocab[order]
    import pyarrow as pa
    import pyarrow.compute as pc
    judged = _arrow_judged(duniq, jdoc)
    if judged is None:   # docnos that are not all str: compare as numpy does
        return doc_vocabulary(np.asarray(duniq.to_pylist(), dtype=object), jdoc)
    extra = pc.unique(judged.filter(pc.invert(pc.is_in(judged, value_set=duniq))))
    vocab = pa.concat_arrays([duniq.cast(pa.string()), extra])
    order = numbers(pc.sort_indices(vocab))
    rank_of = np.empty(len(vocab), dtype=np.int64)
    rank_of[order] = np.arange(len(vocab))
    jdoc_code = rank_of[numbers(pc.index_in(judged, value_set=vocab))]   # every judged docno is in vocab

    def sorted_docnos(arrow: bool = False):
        in_order = vocab.take(int64_array(order))
        return in_order if arrow else np.asarray(in_order.to_pylist(), dtype=object)
    return rank_of, jdoc_code, sorted_docnos


def _arrow_judged(duniq, jdoc):
    """The judged docnos as an Arrow string array, or None when they are not all strings."""
    import pyarrow as pa
    if isinstance(jdoc, pa.Array):   # judgments read with Arrow too (pa.array would import pandas)
        return jdoc.cast(pa.string())
    if len(jdoc) == 0:   # no judgments (a selection's table before any): nothing to convert
        return duniq.slice(0, 0).cast(pa.string())
    try:
        return pa.array(jdoc, type=pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return None


def run_doc_codes(duniq, jdoc) -> "tuple[np.ndarray, np.ndarray, int] | None":
    """Judgment keys of document codes without an order, for runs read with Arrow: ``duniq`` holds
    the docno of every code (an Arrow string array, or a chunked one whose chunks are separate
    dictionaries: a docno may then have several codes).  Returns (key of every code: the index of
    its docno among the distinct judged docnos, or -1; the key of every ``jdoc`` entry; the
    number of keys), or None when the judged docnos are not all strings.

    The one hash table is over the distinct judged docnos (thousands), probed by the runs'
    docnos (millions): :func:`doc_vocabulary`'s order by docno costs a sort of every distinct
    docno and a hash table over them, most of an alignment's time on one MS MARCO-size run
    (docs/engine.md, "Speed"), and trec_eval's tie-break needs that order only between tied
    scores (:func:`docno_order_keys`)."""
    import pyarrow.compute as pc
    judged = _arrow_judged(duniq, jdoc)
    if judged is None:
        return None
    judged_uniq = pc.unique(judged)
    key_of = numbers(pc.index_in(duniq, value_set=judged_uniq), null=-1)
    return key_of, numbers(pc.index_in(judged, value_set=judged_uniq)), len(judged_uniq)


def docno_order_keys(vocab, codes: np.ndarray) -> np.ndarray:
    """Integers that compare as the docnos of ``codes`` compare (codes into the Arrow vocabulary
    ``vocab`` of :func:`run_doc_codes`): only the distinct docnos among ``codes`` are sorted."""
    import pyarrow.compute as pc
    uniq, inverse = np.unique(codes, return_inverse=True)
    order = numbers(pc.sort_indices(vocab.take(int64_array(uniq))))
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse.reshape(-1)]


def unique_inverse(keys: np.ndarray, key_range: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for non-negative integer keys below ``key_range``.

    Where the range is small next to the number of keys (aligned positions: topics x vocabulary
    against millions of positions) a dense mark-and-rank pass replaces the sort, several times
    faster; otherwise numpy's sort-based unique."""
    if _dense_keys(key_range, len(keys)):
        seen = np.zeros(key_range, dtype=bool)
        seen[keys] = True
        uniq = np.flatnonzero(seen)
        rank = np.zeros(key_range, dtype=np.int64 if len(uniq) >= 2 ** 31 else np.int32)
        rank[uniq] = np.arange(len(uniq), dtype=rank.dtype)
        return uniq, rank[keys]   # int32 where the distinct keys allow: the caller widens what it keeps
    # sorted, as np.unique sorts them (the same distinct keys and inverse), then read a block of
    # the sorted order at a time: no sorted copy of every key, nor an int64 rank of every key
    n = len(keys)
    order = np.argsort(keys)
    first = np.ones(n, dtype=bool)   # the first of its key in sorted order
    for a in range(0, n, _BLOCK):
        b = min(a + _BLOCK, n)
        s = keys[order[max(a - 1, 0):b]]
        np.not_equal(s[1:], s[:-1], out=first[max(a, 1):b])
    n_uniq = int(np.count_nonzero(first))
    rank_t = np.int64 if n_uniq >= 2 ** 31 else np.int32
    uniq = np.empty(n_uniq, dtype=keys.dtype)
    inverse = np.empty(n, dtype=rank_t)
    done = 0
    for a in range(0, n, _BLOCK):
        b = min(a + _BLOCK, n)
        rank = np.cumsum(first[a:b], dtype=rank_t)
        got = int(rank[-1])
        rank += done - 1
        inverse[order[a:b]] = rank
        uniq[done:done + got] = keys[order[a:b][first[a:b]]]
        done += got
    return uniq, inverse


def with_unjudged_rows(table: "JudgmentTable", jkey: np.ndarray, pkey: np.ndarray | None, n_vocab: int,
                        docnos: np.ndarray) -> tuple["JudgmentTable", np.ndarray]:
    """The table grown by a row (label NaN) for every retrieved (topic, document) it lacks, and the
    row of every position in it.

    Keys are ``topic * n_vocab + document code`` (``jkey`` of the table's rows, ``pkey`` of the
    positions) with codes in docno order, so the sorted distinct keys are the grown table's rows in
    (topic, docno) order, as :meth:`JudgmentTable.from_frame` orders them, found with integer
    operations only (no string sort or hashing); ``docnos`` is the vocabulary in code order (an
    object array, or an Arrow string array: the table then holds its docnos as one, about 12
    bytes a row instead of a Python string's 60).  ``pkey`` None: ``jkey`` holds the table rows'
    keys followed by the positions' (one array, not copied again)."""
    n_judged = len(table.labels)
    keys, inverse = unique_inverse(jkey if pkey is None else np.concatenate([jkey, pkey]), len(table.topics) * n_vocab)
    labels = np.full(len(keys), np.nan)
    labels[inverse[:n_judged]] = table.labels
    topic_index = keys // n_vocab
    doc = np.remainder(keys, n_vocab, out=keys)   # (the distinct keys are not needed again)
    del keys
    start = np.searchsorted(topic_index, np.arange(len(table.topics) + 1))
    if isinstance(docnos, np.ndarray):
        docno = docnos[doc]
    else:
        import pyarrow as pa
        try:
            docno = docnos.take(int64_array(doc))
        except pa.ArrowInvalid:   # more than 2 GiB of docno text: 64-bit offsets
            docno = docnos.cast(pa.large_string()).take(int64_array(doc))
    return JudgmentTable(None, list(table.topics), topic_index, start, labels, docno=docno), inverse[n_judged:]
