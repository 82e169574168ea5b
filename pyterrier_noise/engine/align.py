"""The aligned evaluation engine: align runs to a judgment table once, evaluate many label versions.

This module builds :class:`AlignedRuns` (reading, ordering, judgment lookup) and dispatches every
measure to its kernel (:mod:`.kernels`, a registry keyed by family); :class:`MeasureSpec` and the constants
live in :mod:`.spec`, :class:`JudgmentTable` in :mod:`.table`.

DESIGN.md, "align once, evaluate many times".  :class:`AlignedRuns` holds every ranked position of
every (run, topic) *segment* as flat arrays ordered by (segment, position), with, for each position,
the index of its judgment in a judgment table (or -1).  A *version* of the judgments is a label
vector over that table (``NaN`` = unjudged in that version); R versions are a label matrix
``(n_judgments, R)``.  Every measure is a kernel over (aligned runs, label matrix) returning values
for all (run, topic, version) at once:

* linear measures (RBP base / residual, P@k, DCG, INSQ) are a weighted sum over judged positions,
  i.e. one sparse (segments x judgments) times dense (judgments x R) product;
* AP, RR, nDCG and INST add per-topic quantities (number of relevant documents, ideal DCG) or
  running sums computed from the same label matrix.

Tie policies (``ties=``):

``"trec_eval"`` (default)
    score descending, then docno descending (trec_eval's ``comp_sim_docno``);
``"given"``
    the run's ``rank`` column (input order where ranks are equal or absent);
``"expected"``
    the exact expected value over all orderings of each group of tied scores (linear measures here;
    AP and RR by closed form and INST by bounded enumeration in :mod:`pyterrier_noise.engine.kernels`);
``"optimistic"`` / ``"pessimistic"``
    the best and worst orderings of every tied group (:mod:`pyterrier_noise.engine.kernels`);  For linear
    measures every tied document gets the mean weight of the positions its group spans (with a
    cutoff, only the positions above the cutoff count), which is rbp_eval's treatment when no
    cutoff splits a group (Moffat & Webber's rbp_eval; Yang 2019 thesis, Sec. 3.3).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

from .._arrow import release_unused
from .._pool import fork_available, worker_pool, worker_state
from .._validation import InputError, announce, check_choice, check_ties
from ..io import RunFileReader, list_run_files, run_name
from ..io.reader import unified_docnos
from .kernels import Labels
from .kernels.common import suffix_sums
from .registry import kernel_for
from .._vocab import GROUPED_POLICIES, TOPIC_MISMATCH, TiePolicy, TopicMismatch
from .spec import MeasureSpec
from .keys import doc_vocabulary, docno_order_keys, lookup, run_doc_codes, with_unjudged_rows
from .table import JudgmentTable, natural_order

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import scipy.sparse as sp

__all__ = ["are_run_paths", "AlignedRuns"]

#: how many bytes of per-measure position weights an alignment keeps (AlignedRuns.effective_weights)
WEIGHTS_CACHE_BYTES = 256 * 2 ** 20


def are_run_paths(runs) -> bool:
    """Whether ``runs`` names run files: a path, or a non-empty list of paths."""
    return isinstance(runs, (str, os.PathLike)) or (
        isinstance(runs, (list, tuple)) and bool(runs) and all(isinstance(x, (str, os.PathLike)) for x in runs))


# ----------------------------------------------------------------------------------------------
# alignment of a chunk of runs (runs are independent, so chunks can go to separate processes)

def _run_chunks(jobs: list, table: "JudgmentTable", ties: str, keep_docnos: bool, include_unjudged: bool,
                n_threads: int = 1, topics_from_runs: bool = False) -> list:
    """Align each job (names, frames or files) and return the parts in order; this process takes
    the first, forked workers the others, sharing the inputs copy-on-write and sending back only
    integer arrays.  A single job reads its files ``n_threads`` at a time."""
    if len(jobs) == 1:
        return [_align_chunk(*jobs[0], table, ties, keep_docnos, include_unjudged, n_threads, topics_from_runs)]
    # this process aligns the first chunk itself while the workers align the others: one fork and
    # one transfer fewer than a worker per chunk.  The workers are given the jobs, the table and
    # the tie policy as they start (forked: inherited, not sent), the tasks only a job's number
    with worker_pool(len(jobs) - 1, state=(jobs, table, ties)) as pool:   # workers die with this process
        pending = pool.map_async(_align_job, range(1, len(jobs)), chunksize=1)
        first = _align_chunk(*jobs[0], table, ties, False, False)
        parts = [first, *pending.get()]
    first["table"] = None
    for part in parts[1:]:   # what _align_job left out of the transfer
        part["jidx"] = part["jidx"].astype(_row_type(len(table)), copy=False)
        if part["gstart"] is None:
            part["gstart"], part["gend"] = part["pos"], part["pos"] + 1
    return parts


def _align_job(i: int) -> dict:
    """One chunk in a worker; only what the parent cannot rebuild is sent back through the pipe:
    judgment rows as int32 (the table has fewer than 2**31 rows) and no tie groups when every
    position is its own group (then they are ``pos`` and ``pos + 1``)."""
    jobs, table, ties = worker_state()   # what _run_chunks opened the pool with
    names, items, are_files = jobs[i]
    part = _align_chunk(names, items, are_files, table, ties, False, False)
    part["table"] = None  # unchanged without include_unjudged: the parent has it
    part["jidx"] = part["jidx"].astype(_row_type(len(table)), copy=False)
    if ties not in GROUPED_POLICIES:
        part["gstart"] = part["gend"] = None
    return part


def _columns_from_frames(frames: list["pd.DataFrame"]):
    """(run index, qid codes, qid uniques, docno codes, docno uniques, score, rank) of frames: the
    columns :func:`~pyterrier_noise.io.run_file_columns` reads from files.  The qid and docno columns
    are joined as they are (Arrow-backed strings stay in Arrow) and factorized there, without a
    Python string per line."""
    import pandas as pd   # frames: pandas is imported already
    lengths = np.array([len(f) for f in frames], dtype=np.int64)
    run_idx = np.repeat(np.arange(len(frames), dtype=np.int64), lengths)
    qcodes, quniq = pd.factorize(pd.concat([f["qid"] for f in frames], ignore_index=True))
    dcodes, duniq = pd.factorize(pd.concat([f["docno"] for f in frames], ignore_index=True))
    score = np.concatenate([f["score"].to_numpy(dtype=np.float64) for f in frames])
    rank = np.concatenate([f["rank"].to_numpy(dtype=np.int64) for f in frames])
    return run_idx, qcodes, np.asarray(quniq, dtype=object), dcodes, np.asarray(duniq, dtype=object), score, rank


def _align_chunk(names: list[str], items: list | tuple, are_files: bool, table: "JudgmentTable", ties: str,
                 keep_docnos: bool, include_unjudged: bool, n_threads: int = 1,
                 topics_from_runs: bool = False, columns: bool = False) -> dict:
    """Position arrays of some runs: their segments are numbered from 0 within the chunk.

    ``topics_from_runs``: the topics are those the runs answer (natural order), not the table's.
    ``columns``: ``items`` is the tuple :func:`~pyterrier_noise.io.run_file_columns` returns.
    The steps: the runs' columns, the segment of every line, document codes, the order of the
    positions, duplicates and judgments, tie groups."""
    cols = items if columns else _chunk_columns(items, are_files, n_threads, local=not include_unjudged)
    run_idx, qcodes, quniq, dcodes, duniq, score, rank = cols
    del cols   # the caller's columns stay; this chunk's own are freed as soon as they are used
    qmap = None
    if topics_from_runs:   # the topics in natural order, and each distinct qid's place in it
        qnames = [str(q) for q in quniq]
        by_rank = natural_order(qnames)
        table = table.with_topics([qnames[i] for i in by_rank.tolist()])
        qmap = np.empty(len(qnames), dtype=np.int64)
        qmap[by_rank] = np.arange(len(qnames))
    n_topics = len(table.topics)
    seg, keep, unknown, answered = _segments(names, table.topics, run_idx, qcodes, quniq, qmap)
    del run_idx, qcodes
    if include_unjudged:   # what reading and encoding freed (see release_unused before the judgments)
        release_unused()
    if keep is not None:
        dcodes, score, rank = dcodes[keep], score[keep], rank[keep]
    del keep
    n_rows = len(seg)
    row_t = np.int32 if n_rows < 2 ** 31 else np.int64
    doc, docs = _doc_codes(duniq, dcodes, table, include_unjudged)
    del dcodes

    # order positions within segments
    if ties == "given":
        perm = np.lexsort((np.arange(len(seg)), rank, seg))
    else:
        if ties == "trec_eval":
            # trec_eval holds scores as C floats: scores equal in single precision are tied and
            # ordered by docno descending (comp_sim_docno); this matches pytrec_eval exactly.  Compared
            # as float32 (the order of their float64 values: half the bytes, no second copy)
            score = score.astype(np.float32)
        perm = AlignedRuns._score_order(seg, score, doc, docs.order_keys)
    del rank
    if ties not in GROUPED_POLICIES:
        del score   # only tie groups need the scores again
    if perm is not None:
        seg, doc = seg[perm], doc[perm]
        if ties in GROUPED_POLICIES:
            score = score[perm]
    del perm

    counts = np.bincount(seg, minlength=len(names) * n_topics)
    if answered is None:
        answered = (counts > 0).reshape(len(names), n_topics)
    seg_start = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=seg_start[1:])
    pos = np.arange(n_rows, dtype=row_t)
    pos -= np.repeat(seg_start[:-1].astype(row_t), counts)
    if include_unjudged:
        # the table grows by a row a retrieved document: its keys and their sort are the largest
        # arrays of the alignment, made in fresh pages rather than on top of what reading, encoding
        # and ordering freed and the process (a command: cli/_process.py) would keep
        release_unused()
    jidx, table = _checked_judgments(names, table, seg, doc, seg_start, docs, include_unjudged)
    if include_unjudged and not keep_docnos:
        del doc

    if ties in GROUPED_POLICIES:
        gstart, gend = _tie_groups(seg, score, pos)
    pos = pos.astype(np.int32, copy=False)
    if ties not in GROUPED_POLICIES:
        gstart, gend = pos, pos + 1   # every position is its own group (shared with pos, as workers send it)
    return {"counts": counts, "pos": pos, "jidx": jidx.astype(_row_type(len(table)), copy=False),
            "gstart": gstart, "gend": gend.astype(np.int32, copy=False),
            "docno": docs.docnos()[doc] if keep_docnos else None,
            "unknown": unknown, "answered": answered, "table": table}


def _chunk_columns(items: list, are_files: bool, n_threads: int, local: bool) -> tuple:
    """The columns of :func:`~pyterrier_noise.io.run_file_columns` of a chunk's runs: files (or a
    :class:`~pyterrier_noise.io.RunFileReader` reading them) by Arrow's reader, or else by the
    validating reader (which names an offending line), and frames."""
    if isinstance(items, RunFileReader):   # files already being read: their columns are
        cols = items.columns(arrow_docnos=True, keep=items.keep_columns, local_docnos=local)   # freed as used
        items = items.paths
    else:
        cols = RunFileReader(items, n_threads).columns(True, local_docnos=local) if are_files else None
    if cols is not None:
        return cols
    if are_files:   # not plain TREC files: the validating reader names the offending line
        from ..io import read_trec_run
        return _columns_from_frames([read_trec_run(p) for p in items])
    return _columns_from_frames(items)


def _segments(names: list[str], topics: list[str], run_idx: np.ndarray, qcodes: np.ndarray, quniq,
              qmap: np.ndarray | None = None) -> tuple:
    """(segment of every line kept, the lines kept (None: all), the (run, qid) pairs of topics not
    in the table, which (run, topic) pairs have a ranking (None when every qid is a topic: the
    segments that hold a line)), through the (few) distinct qids (``qmap``: the topic index of
    each, when known; -1: not a topic).
    Segment numbers are int32 whenever they fit (always, for TREC-size inputs): half the bytes."""
    n_topics = len(topics)
    seg_t = np.int32 if len(names) * n_topics < 2 ** 31 else np.int64
    if qmap is None:
        order = {t: i for i, t in enumerate(topics)}
        qmap = np.array([order.get(q, -1) for q in quniq.tolist()], dtype=np.int64)   # per distinct qid
    if (qmap >= 0).all():   # every qid a topic: the pairs with a ranking are the segments counted later
        unknown, answered = [], None
    else:
        pair = run_idx.astype(np.int64)   # run numbers may be int32: the pair number may not fit
        pair *= len(quniq)
        pair += qcodes
        pairs = np.flatnonzero(np.bincount(pair, minlength=len(names) * len(quniq)))
        del pair
        r_of, q_of = np.divmod(pairs, len(quniq))
        known = qmap[q_of] >= 0
        unknown = [(names[r], str(quniq[q])) for r, q in zip(r_of[~known], q_of[~known])]
        answered = np.zeros((len(names), n_topics), dtype=bool)
        answered[r_of[known], qmap[q_of[known]]] = True
    tix = qmap.astype(seg_t)[qcodes]
    keep = None
    if answered is None:
        seg = run_idx.astype(seg_t)
    else:
        keep = tix >= 0
        tix = tix[keep]
        seg = run_idx[keep].astype(seg_t)
    seg *= n_topics
    seg += tix
    return seg, keep, unknown, answered


@dataclass
class _Docs:
    """The documents of a chunk's positions (:func:`_doc_codes`): codes below ``n``, and judgment
    keys below ``n_keys``: ``judged_key`` of every table row, ``key_of`` of every code (-1: not
    judged; None: a code is its key); ``docnos()``: the docno of every code (an object array;
    ``arrow=True``: an Arrow string array where the docnos were read as one);
    ``order_keys(codes)``: integers in docno order (None: the codes are in docno order)."""

    n: int
    judged_key: np.ndarray
    n_keys: int
    key_of: np.ndarray | None
    docnos: Callable[..., np.ndarray]
    order_keys: Callable[[np.ndarray], np.ndarray] | None


def _doc_codes(duniq, dcodes: np.ndarray, table: "JudgmentTable", ordered: bool) -> tuple[np.ndarray, _Docs]:
    """(code of every line's document, :class:`_Docs`).

    Runs read with Arrow keep their docnos' codes, looked up among the judged docnos
    (:func:`~.keys.run_doc_codes`), and only tied rows are put in docno order; frames, and
    ``ordered`` (the table grown by unjudged rows is in (topic, docno) order), number one
    vocabulary over the runs and the judgments in docno order, so that trec_eval's tie-break
    (docno descending) is a comparison of integer codes."""
    jdoc = table.docno_arrow if table.docno_arrow is not None else table.docno
    keys = None if ordered or isinstance(duniq, np.ndarray) else run_doc_codes(duniq, jdoc)
    if keys is not None:
        key_of, judged_key, n_keys = keys
        doc = dcodes.astype(np.int32 if len(duniq) < 2 ** 31 else np.int64, copy=False)
        return doc, _Docs(len(duniq), judged_key, n_keys, key_of, lambda arrow=False: np.asarray(duniq.to_pylist(), dtype=object),
                          lambda c: docno_order_keys(duniq, c))
    if hasattr(duniq, "num_chunks"):   # separate dictionaries (RunFileReader.columns): one for all
        _, _, _, dcodes, duniq, _, _ = unified_docnos((None, None, None, dcodes, duniq, None, None))
    rank_of, jdoc_code, sorted_docnos = doc_vocabulary(duniq, jdoc)
    doc = rank_of.astype(np.int32 if len(rank_of) < 2 ** 31 else np.int64)[dcodes]
    return doc, _Docs(len(rank_of), jdoc_code, len(rank_of), None, sorted_docnos, None)


def _checked_judgments(names: list[str], table: "JudgmentTable", seg: np.ndarray, doc: np.ndarray,
                       seg_start: np.ndarray, docs: _Docs, include_unjudged: bool) -> tuple:
    """:func:`_judgments_of_positions`, while threads check that no ranking holds a document twice
    (an error, as in trec_eval)."""
    n_topics, n_vocab = len(table.topics), docs.n
    # rankings all of one length are checked a ranking at a time, where the document codes are the
    # keys; otherwise a key is (segment, document)
    lengths = np.diff(seg_start)
    lengths = lengths[lengths > 0]
    key = doc if len(lengths) and (lengths == lengths[0]).all() else _position_keys(seg, doc, len(seg_start) - 1, n_vocab)
    del lengths
    # sort-based (cheaper than hashing 10^6+ keys); the keys rise from segment to segment, so
    # the stable sort (a merge of runs) does far less work than a quicksort.  Duplicates lie
    # within a segment, so the keys are sorted in pieces cut at segment boundaries, in threads
    # (numpy's sort releases the GIL), while this thread looks up the judgments
    checking = _duplicate_check(key, seg_start, os.cpu_count() or 1)
    try:
        jidx, table = _judgments_of_positions(table, seg, doc, docs, include_unjudged)
    finally:
        n_dup = checking()
    if n_dup:
        key = _position_keys(seg, doc, len(seg_start) - 1, n_vocab)
        skey = np.sort(key, kind="stable")
        i = int(np.flatnonzero(key == skey[1:][skey[1:] == skey[:-1]][0])[0])
        r, t = divmod(int(seg[i]), n_topics)
        raise InputError(f"run {names[r]!r}, qid {table.topics[t]!r}: document {docs.docnos()[doc[i]]!r} "
                         f"appears more than once in the ranking ({n_dup} duplicate(s) in all); "
                         f"expected each document at most once per topic")
    return jidx, table


def _position_keys(seg: np.ndarray, doc: np.ndarray, n_segments: int, n_vocab: int) -> np.ndarray:
    """The (segment, document) key of every position: equal keys are a document twice in a ranking."""
    if n_segments * n_vocab < 2 ** 31:
        key = seg.astype(np.int32)   # a narrower sort moves half the bytes
        key *= n_vocab
        key += doc
        return key
    return seg.astype(np.int64) * n_vocab + doc


def _tie_groups(seg: np.ndarray, score: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first position, one past the last position) of every position's group of equal scores."""
    new_group = np.ones(len(seg), dtype=bool)
    new_group[1:] = (seg[1:] != seg[:-1]) | (score[1:] != score[:-1])
    gid = np.cumsum(new_group) - 1
    gfirst = np.flatnonzero(new_group)
    glast = np.append(gfirst[1:], len(seg))
    gstart = pos[gfirst][gid].astype(np.int32)
    return gstart, gstart + (glast - gfirst)[gid].astype(np.int32)


def _row_type(n_rows: int) -> type:
    """The integer type of judgment rows: int32 below 2**31 - 1 rows (always, for TREC tables),
    half the bytes of every aligned position's row."""
    return np.int32 if n_rows < 2 ** 31 - 1 else np.int64


def _judgments_of_positions(table: "JudgmentTable", seg: np.ndarray, doc: np.ndarray, docs: _Docs,
                            include_unjudged: bool) -> tuple:
    """(judgment row of every position or -1, the table: grown by the unjudged documents with
    ``include_unjudged``), by (topic, document key) keys; without include_unjudged only documents
    judged for some topic can match, so the lookup runs over those positions alone."""
    n_topics, n_keys = len(table.topics), docs.n_keys
    key_t = np.int32 if n_topics * n_keys < 2 ** 31 else np.int64
    jkey = (table.topic_index * n_keys + docs.judged_key).astype(key_t)
    if include_unjudged:   # every position gets a row: the table grows by the unjudged ones
        # the table's keys and then the positions', made in one array (no copy joins them)
        keys = np.empty(len(jkey) + len(seg), dtype=key_t)
        keys[:len(jkey)] = jkey
        pkey = keys[len(jkey):]
        np.remainder(seg, n_topics, out=pkey)
        pkey *= n_keys
        pkey += doc
        del jkey, pkey
        table, jidx = with_unjudged_rows(table, keys, None, n_keys, docs.docnos(arrow=True))
        return jidx, table
    if docs.key_of is None:
        judged_doc = np.zeros(docs.n, dtype=bool)
        judged_doc[docs.judged_key] = True
        cand = np.flatnonzero(judged_doc[doc])
        dkey = doc[cand]
    else:
        dkey = docs.key_of[doc]
        cand = np.flatnonzero(dkey >= 0)
        dkey = dkey[cand]
    pkey = (seg[cand] % n_topics).astype(key_t)
    pkey *= n_keys
    pkey += dkey
    jidx = np.full(len(seg), -1, dtype=_row_type(len(table)))
    jidx[cand] = lookup(jkey, pkey, n_topics * n_keys)
    return jidx, table


def _duplicate_check(key: np.ndarray, seg_start: np.ndarray, n_threads: int):
    """Start counting repeated keys (a document twice in one ranking: keys equal only within a
    segment) in up to ``n_threads`` pieces cut at segment boundaries; returns a function that
    waits and gives the count."""
    n = len(key)
    pieces = min(n_threads, 4) if n >= 200_000 else 1
    cuts = np.searchsorted(seg_start, np.linspace(0, n, pieces + 1)[1:-1]).tolist()
    bounds = [0, *[int(seg_start[c]) for c in cuts], n]
    # rankings all of one length (depth 10, depth 1000): each is a row of a matrix, sorted alone
    lengths = np.diff(seg_start)
    lengths = lengths[lengths > 0]
    width = int(lengths[0]) if len(lengths) and (lengths == lengths[0]).all() else 0

    def count(a: int, b: int) -> int:
        if width:   # a piece is whole rankings
            s = np.sort(key[a:b].reshape(-1, width), axis=1)
            return int(np.count_nonzero(s[:, 1:] == s[:, :-1]))
        s = np.sort(key[a:b], kind="stable")
        return int(np.count_nonzero(s[1:] == s[:-1]))

    if pieces == 1:
        n_dup = count(0, n)
        return lambda: n_dup
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(pieces)
    futures = [pool.submit(count, a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    pool.shutdown(wait=False)

    def wait() -> int:
        return sum(f.result() for f in futures)
    return wait


@dataclass
class AlignedRuns:
    """Runs aligned to a judgment table (DESIGN.md: "align once, evaluate many times").

    Build with :meth:`build`; evaluate with :meth:`evaluate`.  Arrays are over ranked positions
    ordered by (segment, position); ``segment = run_index * n_topics + topic_index``.
    """

    run_names: list[str]
    table: JudgmentTable
    ties: str
    seg_len: np.ndarray           # (n_segments,) ranking length of each segment
    seg_start: np.ndarray         # (n_segments + 1,) offsets into the position arrays
    pos: np.ndarray               # (n_positions,) 0-based position in its ranking
    jidx: np.ndarray              # (n_positions,) judgment row or -1 (int32 below 2**31 - 1 rows)
    group_start: np.ndarray       # (n_positions,) first position of its tie group
    group_end: np.ndarray         # (n_positions,) one past the last position of its tie group
    docno: np.ndarray | None = None   # (n_positions,) docnos, kept for selection / export
    _cache: dict = field(default_factory=dict, repr=False)

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def build(cls, runs: "Mapping[str, pd.DataFrame] | pd.DataFrame | str", qrels,
              ties: TiePolicy = "trec_eval", topics: Sequence[str] | str | None = None,
              on_topic_mismatch: TopicMismatch = "warn", keep_docnos: bool = False,
              include_unjudged: bool = False, n_jobs: int | None = None) -> "AlignedRuns":
        """Align runs to qrels.

        ``runs``: ``{name: results frame}`` or anything :func:`~pyterrier_noise.io.read_runs`
        takes, or a :class:`~pyterrier_noise.io.RunFileReader` already reading run files.  Run
        files are parsed by Arrow's CSV reader, several at a time in threads, while the qrels
        are read, and aligned in one piece; a large input of frames is aligned in parallel
        processes by chunks of runs.
        ``qrels``: anything :func:`~pyterrier_noise.io.read_qrels` takes, or a
        :class:`JudgmentTable`.  ``topics``: the topics to evaluate (default: those of the qrels;
        ``"runs"``: those the runs answer, in natural order); a topic a run does not answer scores
        0 with residual 1, as ``trec_eval -c`` does.
        ``on_topic_mismatch``: ``"warn"`` (default), ``"error"`` or ``"ignore"`` for run topics
        missing from the qrels (they are not evaluated) and qrels topics missing from a run.
        ``include_unjudged``: add a table row (label NaN) for every retrieved document without a
        judgment, so that label versions can judge documents the qrels never did (judgment
        selection, pooling simulations).  ``keep_docnos``: keep the docno of every position.
        ``n_jobs``: threads reading run files, or processes aligning a large input of frames
        (default: the machine's cores; 1 = neither).
        """
        topics_from_runs = _check_options(ties, on_topic_mismatch, topics)
        n_jobs = (os.cpu_count() or 1) if n_jobs is None else max(1, int(n_jobs))
        serial = keep_docnos or include_unjudged or topics_from_runs
        files = reader = None
        if are_run_paths(runs) or isinstance(runs, RunFileReader):
            if isinstance(runs, RunFileReader):
                reader, files = runs, list(runs.paths)
            else:
                paths = [Path(runs)] if isinstance(runs, (str, os.PathLike)) else [Path(x) for x in runs]
                files = [f for p in paths for f in (list_run_files(p) if p.is_dir() else [p])]
            names = [run_name(f) for f in files]
            if len(set(names)) != len(names):
                raise InputError("two run files share a name (a run's name is its file name without .gz)")
            if reader is None:   # read the files in threads while the qrels are read
                reader = RunFileReader(files, n_jobs)
        try:
            table = qrels if isinstance(qrels, JudgmentTable) else \
                JudgmentTable.from_qrels(qrels, None if topics_from_runs else topics)
        except BaseException:
            if reader is not None and reader is not runs:
                reader.forget()
            raise
        if files is None:
            import pandas as pd   # runs as frames (or anything read_runs takes)
            from ..io import read_runs
            if not isinstance(runs, Mapping) or not all(
                    isinstance(v, pd.DataFrame) and {"qid", "docno", "score", "rank"} <= set(v.columns)
                    and v.attrs.get("source") for v in runs.values()):
                runs = read_runs(runs)
            if not runs:
                raise InputError("no runs to evaluate")
            names, items = list(runs.keys()), list(runs.values())
            # a large input of frames is aligned in forked chunks of runs
            by_process = (not serial and sum(len(f) for f in items) >= 400_000 and len(names) >= 2
                          and fork_available())
            n_chunks = min(n_jobs, len(names)) if by_process else 1
            bounds = np.linspace(0, len(names), n_chunks + 1).astype(int)
            parts = _run_chunks([(names[a:b], items[a:b], False) for a, b in zip(bounds[:-1], bounds[1:])],
                                table, ties, keep_docnos, include_unjudged, n_jobs, topics_from_runs)
        else:
            # Run files are read by threads of this process (decompression and Arrow's parser
            # release the GIL) while the qrels are read, then aligned in one piece: faster than
            # forked chunks, which each parsed their files and sent their arrays back through a
            # pipe.  (Aligning chunks of runs in threads too took more CPU time and more memory,
            # for no gain in wall time on a loaded machine.)
            try:
                parts = _run_chunks([(names, reader, True)], table, ties, keep_docnos, include_unjudged,
                                    n_jobs, topics_from_runs)
            finally:
                if reader is not runs:
                    reader.forget()   # a caller's own reader keeps its columns for other alignments
        return cls._assemble(names, table, ties, parts, include_unjudged or topics_from_runs, on_topic_mismatch,
                             keep_docnos)

    @classmethod
    def from_columns(cls, names: Sequence[str], columns: tuple, qrels, ties: TiePolicy = "trec_eval",
                     topics: Sequence[str] | str | None = None, on_topic_mismatch: TopicMismatch = "warn",
                     keep_docnos: bool = False, include_unjudged: bool = False) -> "AlignedRuns":
        """Align runs already read into flat columns: the tuple
        :func:`~pyterrier_noise.io.run_file_columns` returns for files whose run names are ``names``
        (the run index of each line counts into ``names``).  The same alignment as :meth:`build`
        over those files, without parsing them again: a caller that needs the rows themselves too
        (a judging session stores and fingerprints them) reads the files once.  Other arguments as
        in :meth:`build`; the columns are not changed."""
        topics_from_runs = _check_options(ties, on_topic_mismatch, topics)
        if not isinstance(columns, tuple) or len(columns) != 7:
            raise InputError("argument 'columns': expected the 7 columns run_file_columns returns "
                             "(run index, qid codes, qids, docno codes, docnos, score, rank)")
        names = [str(n) for n in names]
        if not names:
            raise InputError("no runs to evaluate")
        table = qrels if isinstance(qrels, JudgmentTable) else \
            JudgmentTable.from_qrels(qrels, None if topics_from_runs else topics)
        part = _align_chunk(names, columns, False, table, ties, keep_docnos, include_unjudged,
                            topics_from_runs=topics_from_runs, columns=True)
        return cls._assemble(names, table, ties, [part], include_unjudged or topics_from_runs, on_topic_mismatch,
                             keep_docnos)

    @classmethod
    def _assemble(cls, names: list[str], table: JudgmentTable, ties: str, parts: list, new_table: bool,
                  on_topic_mismatch: str, keep_docnos: bool) -> "AlignedRuns":
        """The aligned runs of the chunks' parts, in order (``new_table``: the single part's table
        replaces the given one: it grew, or took the runs' topics)."""
        if new_table:
            table = parts[0]["table"]
        cls._report_topic_mismatch(names, [u for p in parts for u in p["unknown"]],
                                   np.concatenate([p["answered"] for p in parts]), table.topics, on_topic_mismatch)
        counts = np.concatenate([p["counts"] for p in parts])
        seg_start = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=seg_start[1:])
        cat = lambda k: parts[0][k] if len(parts) == 1 else np.concatenate([p[k] for p in parts])  # noqa: E731
        return cls(names, table, ties, counts, seg_start, cat("pos"), cat("jidx"), cat("gstart"), cat("gend"),
                   cat("docno") if keep_docnos else None)

    @staticmethod
    def _score_order(seg: np.ndarray, score: np.ndarray, doc: np.ndarray, order_keys=None) -> np.ndarray | None:
        """Permutation to (segment, score descending, docno descending), or None if already so.

        Run files are nearly always sorted by score within each topic, so this groups rows by
        segment with a stable sort, fully sorts only segments whose scores are out of order, and
        then orders each group of tied scores by docno with one integer sort over tied rows only.
        ``order_keys(codes)``: integers in docno order for some document codes (None: the codes
        are in docno order).
        """
        n = len(seg)
        if n < 2:
            return None
        keys = (lambda c: c) if order_keys is None else order_keys
        perm = None   # built only when something moves: sorted input costs no gathers
        if (seg[1:] < seg[:-1]).any():
            perm = np.argsort(seg, kind="stable")
            s, sc, d = seg[perm], score[perm], doc[perm]
        else:
            s, sc, d = seg, score, doc
        same = s[1:] == s[:-1]
        rising = same & (sc[1:] > sc[:-1])
        if rising.any():
            perm = np.arange(n) if perm is None else perm
            bad = np.unique(s[1:][rising])
            rows = np.flatnonzero(np.isin(s, bad))
            perm[rows] = perm[rows[np.lexsort((-keys(d[rows]), -sc[rows], s[rows]))]]
            s, sc, d = seg[perm], score[perm], doc[perm]
            same = s[1:] == s[:-1]
        tied = same & (sc[1:] == sc[:-1])
        if tied.any():
            in_tie = np.zeros(n, dtype=bool)
            in_tie[1:] |= tied
            in_tie[:-1] |= tied
            rows = np.flatnonzero(in_tie)
            dk = keys(d[rows])
            after = np.searchsorted(rows, np.flatnonzero(tied))   # the first row of each tied pair, in rows
            if (dk[after + 1] > dk[after]).any():
                perm = np.arange(n) if perm is None else perm
                first = in_tie.copy()
                first[1:] &= ~tied                      # the first row of each tie group
                gid = np.searchsorted(np.flatnonzero(first), rows, side="right")   # group of each tied row
                d_max = int(dk.max())
                key = gid * (d_max + 1) + (d_max - dk)
                perm[rows] = perm[rows[np.argsort(key, kind="stable")]]
        if perm is None or (perm == np.arange(n)).all():
            return None
        return perm

    @staticmethod
    def _report_topic_mismatch(names: list[str], unknown: list[tuple[str, str]], answered: np.ndarray,
                               topics: list[str], mode: str) -> None:
        if mode == "ignore":
            return
        messages = []
        if unknown:
            bad = sorted({q for _, q in unknown})
            runs_bad = sorted({r for r, _ in unknown})
            messages.append(f"{len(bad)} topic(s) in the runs are not in the qrels and are not evaluated "
                            f"(e.g. qid {bad[0]!r} in run {runs_bad[0]!r}; {len(runs_bad)} run(s) affected)")
        missing = ~answered
        if missing.any():
            r, t = np.argwhere(missing)[0]
            messages.append(f"{int(missing.sum())} (run, topic) pair(s) of the qrels have no ranking and score 0 "
                            f"with residual 1 (e.g. run {names[r]!r} does not answer qid {topics[t]!r})")
        if messages:
            if mode == "error":
                raise InputError("; ".join(messages))
            announce("; ".join(messages))

    # -- basic properties ---------------------------------------------------------------------

    @property
    def n_runs(self) -> int:
        return len(self.run_names)

    @property
    def topics(self) -> list[str]:
        return self.table.topics

    @property
    def n_topics(self) -> int:
        return len(self.table.topics)

    @property
    def n_segments(self) -> int:
        return self.n_runs * self.n_topics

    @property
    def max_len(self) -> int:
        return int(self.seg_len.max()) if len(self.seg_len) else 0

    def judged_positions(self) -> dict:
        """The positions that have a row in the judgment table, computed once and cached.

        A dict of arrays over those positions in (segment, position) order: ``rows`` (index into
        the position arrays), ``seg``, ``pos``, ``jidx``, ``gstart``, ``gend``; ``indptr`` (CSR
        pointer from segments to them) and ``nonempty`` (segments holding at least one)."""
        c = self._cache.get("judged")
        if c is None:
            judged = self.jidx >= 0
            jp = np.flatnonzero(judged)
            # the judged positions before each segment's first: a running count read at the segment
            # starts, not a segment number for every position (millions) gathered at the judged ones
            count_t = np.int64 if len(judged) >= 2 ** 31 else np.int32
            before = np.zeros(len(judged) + 1, dtype=count_t)
            np.cumsum(judged, dtype=count_t, out=before[1:])
            indptr = before[self.seg_start].astype(np.int64)
            counts = np.diff(indptr)
            seg_j = np.repeat(np.arange(self.n_segments), counts)
            c = dict(rows=jp, seg=seg_j, pos=self.pos[jp].astype(np.int64), jidx=self.jidx[jp],
                     gstart=self.group_start[jp].astype(np.int64), gend=self.group_end[jp].astype(np.int64),
                     indptr=indptr, nonempty=np.flatnonzero(counts > 0))
            self._cache["judged"] = c
        return c

    def cached(self, key, make):
        """``make()`` computed once per key and kept with these aligned runs (derived arrays that
        depend only on the alignment, e.g. a capability's contribution matrices)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _sparse(self, data: np.ndarray) -> "sp.csr_matrix":
        import scipy.sparse as sp   # on first use: scipy is slow to import
        j = self.judged_positions()
        return sp.csr_matrix((data, j["jidx"], j["indptr"]), shape=(self.n_segments, len(self.table)))

    # -- labels -------------------------------------------------------------------------------

    def label_matrix(self, labels: np.ndarray | None = None) -> np.ndarray:
        """Labels as a (n_judgments, R) float matrix; default: the table's own labels (R = 1)."""
        if labels is None:
            labels = self.table.labels
        labels = np.asarray(labels, dtype=np.float64)
        if labels.ndim == 1:
            labels = labels[:, None]
        if labels.ndim != 2 or labels.shape[0] != len(self.table):
            raise InputError(f"label matrix must have shape (n_judgments={len(self.table)}, R), got {labels.shape}")
        return labels

    # -- weights for linear measures ------------------------------------------------------------

    def effective_weights(self, spec: MeasureSpec, weights) -> np.ndarray:
        """Weight of each judged position for a linear measure whose position weights are
        ``weights(spec, length)``: its own weight, or under ``expected`` ties the mean weight of the
        positions its tie group spans (positions past the cutoff weigh 0); cached per spec, the
        least recently made going first once the cached weights pass :data:`WEIGHTS_CACHE_BYTES`
        (a fine grid of persistences would otherwise keep one array per persistence)."""
        key = ("w", spec.family, spec.p, spec.T, spec.cutoff, spec.tail)
        w_eff = self._cache.get(key)
        if w_eff is None:
            j = self.judged_positions()
            length = max(self.max_len, 1)
            w = weights(spec, length)
            if self.ties == "expected":
                tail = suffix_sums(w)
                glen = j["gend"] - j["gstart"]
                w_eff = np.where(glen == 1, w[j["pos"]], (tail[j["gstart"]] - tail[j["gend"]]) / glen)
            else:
                w_eff = w[j["pos"]]
            self._cache[key] = w_eff
            held = [k for k in self._cache if isinstance(k, tuple) and k[0] == "w"]
            total = sum(self._cache[k].nbytes for k in held)
            for k in held[:-1]:
                if total <= WEIGHTS_CACHE_BYTES:
                    break
                total -= self._cache.pop(k).nbytes
        return w_eff

    def weighted_sum(self, data: np.ndarray, G: np.ndarray) -> np.ndarray:
        """``(segments x judgments) @ G`` for the judged positions' weights ``data``: per segment
        the sum over its judged positions, in position order, of weight x G[row].  One version is
        a weighted bincount, which adds in the same order as scipy's CSR product (bit-identical
        values) without importing scipy; several versions use the CSR product."""
        if G.shape[1] != 1:
            return self._sparse(data) @ G
        j = self.judged_positions()
        return np.bincount(j["seg"], weights=data * G[j["jidx"], 0], minlength=self.n_segments)[:, None]

    # -- evaluation ---------------------------------------------------------------------------

    def evaluate(self, measures: Iterable[MeasureSpec], labels: np.ndarray | None = None,
                 chunk_elements: int = 4_000_000) -> dict[MeasureSpec, np.ndarray]:
        """Evaluate measures for every (run, topic, version), each by its family's kernel.

        ``labels``: (n_judgments,) or (n_judgments, R) over :attr:`table` rows, NaN = unjudged in
        that version; default the qrels' own labels.  Returns ``{spec: array (n_runs, n_topics, R)}``.
        """
        L = self.label_matrix(labels)
        specs = [m.validate() for m in measures]
        kernels = {s: kernel_for(s.family) for s in specs}
        for s, k in kernels.items():
            k.check_ties(s, self.ties)
        R = L.shape[1]
        out = {s: np.empty((self.n_segments, R)) for s in specs}
        # versions are processed in chunks so that the largest temporary stays near chunk_elements
        cost = max([len(self.table), self.n_segments, *(k.cost(self, s) for s, k in kernels.items())])
        per = max(1, chunk_elements // cost)
        grouped = self.ties in GROUPED_POLICIES
        for c0 in range(0, R, per):
            chunk = Labels(L[:, c0:c0 + per], specs)
            for s, k in kernels.items():
                # grouped policies: the kernel's tie-aware form, except that a linear measure's
                # expected value is its own form with the group-mean weights
                use_tied = grouped and not (self.ties == "expected" and k.linear and not s.judged_only)
                out[s][:, c0:c0 + per] = k.tied(self, s, chunk, self.ties) if use_tied else k.compute(self, s, chunk)
        return {s: v.reshape(self.n_runs, self.n_topics, R) for s, v in out.items()}


def _check_options(ties: str, on_topic_mismatch: str, topics: object) -> bool:
    """Validate the options :meth:`AlignedRuns.build` and :meth:`AlignedRuns.from_columns` share;
    returns whether the topics come from the runs (``topics="runs"``)."""
    check_ties(ties)
    check_choice("on_topic_mismatch", on_topic_mismatch, TOPIC_MISMATCH)
    topics_from_runs = isinstance(topics, str)
    if topics_from_runs and topics != "runs":
        raise InputError(f"topics must be a list of qids or 'runs', got {topics!r}")
    return topics_from_runs
