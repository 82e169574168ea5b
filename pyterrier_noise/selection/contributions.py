"""The contribution structure of judgment selection: c[s,d] = (1-p) p^(rank-1) as sparse rows.

Moffat, Webber & Zobel (SIGIR 2007), Sec. 3: document ``d`` at 1-based rank ``b``
of run ``s`` carries its share ``(1-p) p^(b-1)`` of the run's RBP residual.  The weights are the
engine's :func:`~pyterrier_noise.engine.rbp_weights`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .._validation import InputError
from .._vocab import RunOrder
from ..engine import AlignedRuns, JudgmentTable, are_run_paths, rbp_weights
from ..io.reader import RunFileReader

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def _empty_table(topics: Sequence[str]) -> JudgmentTable:
    empty = np.zeros(0, dtype=object)
    return JudgmentTable.from_arrays(empty, empty, np.zeros(0), list(topics))


def aligned_for(runs: Any, qrels: pd.DataFrame | JudgmentTable | None, topics: Sequence[str] | None = None,
                ties: RunOrder = "trec_eval") -> AlignedRuns:
    """Align runs to qrels (or to nothing; or a :class:`JudgmentTable`, which needs no pandas) with a
    table row for every retrieved document; the topics are those the runs answer unless given.  Run files (a directory, a file or a list of them) go
    straight to the engine's Arrow reader; ``(names, columns)``, files already read into the columns
    of :func:`~pyterrier_noise.io.run_file_columns`, are aligned without reading them again; a
    :class:`~pyterrier_noise.io.RunFileReader` already reading run files is aligned as they come."""
    if isinstance(runs, AlignedRuns):
        return runs
    columns = isinstance(runs, tuple) and len(runs) == 2 and isinstance(runs[1], tuple)
    if not columns and not isinstance(runs, (Mapping, RunFileReader)) and not are_run_paths(runs):
        from ..io import read_runs
        runs = read_runs(runs)
    if not runs or (columns and not runs[0]):   # (a RunFileReader's length is its number of files)
        raise InputError("argument 'runs': expected at least one run, got none")
    if qrels is None or len(qrels) == 0:
        table = _empty_table(topics if topics is not None else [])
    elif isinstance(qrels, JudgmentTable):
        table = qrels if topics is None else qrels.with_topics(topics)
    else:
        from ..io import read_qrels
        table = JudgmentTable.from_qrels(read_qrels(qrels), topics)
    args = dict(ties=ties, topics="runs" if topics is None else list(topics), on_topic_mismatch="ignore",
                include_unjudged=True, keep_docnos=False)
    if columns:
        return AlignedRuns.from_columns(runs[0], runs[1], table, **args)
    aligned = AlignedRuns.build(runs, table, **args)
    if isinstance(runs, RunFileReader) or are_run_paths(runs):   # the files' text and columns are freed
        from .._arrow import release_unused
        release_unused()
    return aligned




@dataclass
class _Rows:
    """A sparse matrix by rows (the CSR layout: row ``i``'s entries at ``indptr[i]:indptr[i+1]``),
    with the two operations the selector needs; numpy only, so that selecting does not import
    scipy (a tenth of a second of every ``select`` process)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """The product with a vector: each row's sum of ``data * x[indices]``, in entry order."""
        return self.row_sums(np.take(x, self.indices))

    def row_sums(self, values: np.ndarray) -> np.ndarray:
        """Each row's sum of ``data * values`` (``values``: one per entry, overwritten), in entry
        order: the product with a vector whose entries at ``indices`` are ``values``."""
        prod = values
        prod *= self.data
        lens = np.diff(self.indptr)
        if len(lens) and lens.min() > 0:   # no empty row: one segmented sum
            return np.add.reduceat(prod, self.indptr[:-1]) if len(prod) else np.zeros(self.shape[0])
        out = np.zeros(self.shape[0])
        nz = np.flatnonzero(lens > 0)
        if len(nz):
            out[nz] = np.add.reduceat(prod, self.indptr[nz])
        return out

    def take_rows(self, rows: np.ndarray) -> "_Rows":
        """The matrix of the given rows, in the given order (column indices as ``intp``: a product
        with a vector gathers without converting them first)."""
        lens = self.indptr[rows + 1] - self.indptr[rows]
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        idx = np.repeat(self.indptr[rows] - ptr[:-1], lens) + np.arange(int(ptr[-1]))
        return _Rows(ptr, self.indices[idx].astype(np.intp), self.data[idx], (len(rows), self.shape[1]))

    def append(self, other: "_Rows") -> "_Rows":
        """This matrix with the rows of ``other`` below."""
        ptr = np.concatenate([self.indptr, other.indptr[1:] + self.indptr[-1]])
        return _Rows(ptr, np.concatenate([self.indices, other.indices]), np.concatenate([self.data, other.data]),
                     (self.shape[0] + other.shape[0], self.shape[1]))

    def head(self, m: int) -> "_Rows":
        """The first ``m`` rows (views, no copy)."""
        end = int(self.indptr[m])
        return _Rows(self.indptr[:m + 1], self.indices[:end], self.data[:end], (m, self.shape[1]))


class _RunOf:
    """The run of each entry of a contribution structure, ``segment // n_topics``, computed for the
    entries asked for (``run_of[idx]``, an array of the segments' type): an array of every entry's
    run would be 4 bytes a ranked position more, held for as long as the selector."""

    def __init__(self, seg: np.ndarray, n_topics: int) -> None:
        self.seg, self.n_topics = seg, seg.dtype.type(n_topics)

    def __getitem__(self, idx: Any) -> np.ndarray:
        return self.seg[idx] // self.n_topics

    def __len__(self) -> int:
        return len(self.seg)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        run = self.seg // self.n_topics
        return run if dtype is None else run.astype(dtype)


@dataclass
class _Contributions:
    """Contributions c[s,d] = (1-p) p^(rank-1) of every (run, topic, position) as sparse rows.

    Rows are the aligned judgment table's rows (one per (topic, document)), columns the segments
    ``run * n_topics + topic``.  ``all_*`` covers every run (for the state updates that evaluate
    all runs), ``pool_*`` only the runs that feed the pool (for the weights).
    """

    all_ptr: np.ndarray
    all_seg: np.ndarray
    all_run: _RunOf
    all_c: np.ndarray
    all_pos: np.ndarray
    pool: _Rows
    pool_run: _RunOf
    pool_pos: np.ndarray    # 0-based rank of each pool entry
    candidate: np.ndarray   # (J,) bool: retrieved by at least one pool run


def cached_contributions(aligned: AlignedRuns, p: float, pool_mask: np.ndarray) -> _Contributions:
    """Built once per (alignment, p, pool runs) and kept in the alignment's cache, so that several
    selectors (methods) on one alignment share it."""
    key = ("selection-contributions", float(p), pool_mask.tobytes())
    return aligned.cached(key, lambda: _build_contributions(aligned, p, pool_mask))


def positions_by_row(aligned: AlignedRuns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions of ``aligned`` grouped by table row: ``(ptr, seg, pos)`` with row ``j``'s entries
    at ``ptr[j]:ptr[j+1]``, segments ascending within a row (i.e. run order, the topic being fixed),
    and each entry's segment and 0-based rank.  Independent of ``p`` and of the pool runs; kept in the
    alignment's cache (a judging session stores it, so that reopening needs no sort)."""
    return aligned.cached("selection-by-row", lambda: _group_by_row(aligned))


def _group_by_row(aligned: AlignedRuns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_seg = aligned.n_segments
    J = len(aligned.table)
    jidx = aligned.jidx
    if (jidx < 0).any():
        raise InputError("argument 'runs': an AlignedRuns given to the selector must be built with "
                         "include_unjudged=True (every retrieved document needs a table row)")
    # Integer arrays are int32 where the counts allow (segments, positions, table rows: always
    # for TREC-size inputs), which halves the memory of the structure and of its construction.
    n_pos = len(jidx)
    it = np.int32 if max(n_pos + 1, n_seg, J) < 2 ** 31 else np.int64
    ptr = np.zeros(J + 1, dtype=it)   # (row offsets are at most n_pos)
    np.cumsum(np.bincount(jidx, minlength=J), out=ptr[1:], dtype=it)
    segs = np.empty(n_pos, dtype=it)
    pos = np.empty(n_pos, dtype=it)
    fill = _RowGrouping(aligned, ptr, segs, pos, it)
    # Grouping the positions by row is the stable argsort of jidx.  A topic's rows are a block of
    # the table and its positions are its segments (one per run), so the sort is done per chunk of
    # consecutive topics (at most 65,536 rows, one topic if larger), on the row within the chunk
    # (16 bits: numpy's stable argsort of 16-bit keys is a counting sort): the chunks' positions are
    # gathered without sorting, a loop over chunks rather than topics (100,000 short topics are a few
    # dozen chunks), and half the chunks are grouped in a second thread (numpy's sorts and gathers
    # release the GIL); the result is that of a sort of jidx.
    chunks = _topic_chunks(np.asarray(aligned.table.topic_start, dtype=np.int64))
    if len(chunks) >= 2 and n_pos >= 100_000:
        from concurrent.futures import ThreadPoolExecutor
        half = len(chunks) // 2
        with ThreadPoolExecutor(1) as pool:
            other = pool.submit(fill, chunks[half:])
            fill(chunks[:half])
            other.result()
    else:
        fill(chunks)
    return ptr, segs, pos


class _RowGrouping:
    """Writes the by-row grouping of the given topics' positions into ``segs`` and ``pos``."""

    def __init__(self, aligned: AlignedRuns, ptr: np.ndarray, segs: np.ndarray, pos: np.ndarray,
                 it: type) -> None:
        self.a, self.ptr, self.segs, self.pos, self.it = aligned, ptr, segs, pos, it
        self.seg_len = np.asarray(aligned.seg_len, dtype=np.int64)
        self.seg_start = np.zeros(len(self.seg_len), dtype=np.int64)
        np.cumsum(self.seg_len[:-1], out=self.seg_start[1:])

    def __call__(self, chunks: list[tuple[int, int]]) -> None:
        a, ptr = self.a, self.ptr
        T, start = a.n_topics, a.table.topic_start
        S = a.n_runs
        for t0, t1 in chunks:   # topics [t0, t1) at once (a loop over chunks of topics, not documents)
            lo, hi = int(ptr[start[t0]]), int(ptr[start[t1]])
            if hi == lo:
                continue
            # the chunk's segments run r * T + t for t in [t0, t1): one contiguous range of segments,
            # hence of positions, per run; concatenated in run order, each row's entries come in
            # segment order (the topic being fixed), each segment's in rank order
            first = np.arange(S, dtype=np.int64) * T + t0
            seg_lo = self.seg_start[first]
            seg_hi = self.seg_start[first + (t1 - t0) - 1] + self.seg_len[first + (t1 - t0) - 1]
            lens = seg_hi - seg_lo
            idx = np.arange(hi - lo, dtype=np.int64) + np.repeat(seg_lo - (np.cumsum(lens) - lens), lens)
            seg = np.repeat(np.arange(S * T, dtype=np.int64).reshape(S, T)[:, t0:t1].ravel(),
                            self.seg_len.reshape(S, T)[:, t0:t1].ravel())
            rows = int(start[t1] - start[t0])
            key = (a.jidx[idx] - start[t0]).astype(np.uint16 if rows <= 1 << 16 else np.uint32)
            order = np.argsort(key, kind="stable")
            np.take(seg.astype(self.it), order, out=self.segs[lo:hi])
            self.pos[lo:hi] = a.pos[idx[order]]


def _topic_chunks(start: np.ndarray, rows: int = 1 << 16) -> list[tuple[int, int]]:
    """Consecutive topics ``[t0, t1)`` grouped so that a group holds at most ``rows`` table rows
    (``start``: each topic's first row, and the end); a larger topic is a group alone."""
    T = len(start) - 1
    out, t0 = [], 0
    while t0 < T:
        t1 = int(np.searchsorted(start, start[t0] + rows, side="right")) - 1
        t1 = min(T, max(t0 + 1, t1))
        out.append((t0, t1))
        t0 = t1
    return out


def _build_contributions(aligned: AlignedRuns, p: float, pool_mask: np.ndarray) -> _Contributions:
    n_seg = aligned.n_segments
    J = len(aligned.table)
    ptr, segs, pos = positions_by_row(aligned)
    # c = (1-p) p^(rank-1) from the engine's table over ranks: one power per rank, not per position
    vals = rbp_weights(p, int(pos.max(initial=0)) + 1)[pos]
    # the run of each entry, computed for the entries asked for (_RunOf)
    run = _RunOf(segs, aligned.n_topics)
    keep = None if pool_mask.all() else pool_mask[np.asarray(run)]
    if keep is None or keep.all():
        pool = _Rows(ptr, segs, vals, (J, n_seg))
        pool_run, pool_pos = run, pos
    else:
        rows = np.repeat(np.arange(J, dtype=np.int64), np.diff(ptr))
        pptr = np.zeros(J + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[keep], minlength=J), out=pptr[1:])
        pool = _Rows(pptr, segs[keep], vals[keep], (J, n_seg))
        pool_run, pool_pos = _RunOf(pool.indices, aligned.n_topics), pos[keep]
    candidate = np.diff(pool.indptr) > 0
    return _Contributions(ptr, segs, run, vals, pos, pool, pool_run, pool_pos, candidate)
