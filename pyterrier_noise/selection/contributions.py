"""The contribution structure of judgment selection: c[s,d] = (1-p) p^(rank-1) as sparse rows.

Moffat, Webber & Zobel (SIGIR 2007), Sec. 3: document ``d`` at 1-based rank ``b``
of run ``s`` carries its share ``(1-p) p^(b-1)`` of the run's RBP residual.  The weights are the
engine's :func:`~pyterrier_noise.engine.rbp_weights`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .._validation import InputError
from ..engine import AlignedRuns, JudgmentTable, are_run_paths, rbp_weights
from ..io.reader import RunFileReader

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def _empty_table(topics: Sequence[str]) -> JudgmentTable:
    empty = np.zeros(0, dtype=object)
    return JudgmentTable.from_arrays(empty, empty, np.zeros(0), list(topics))


def _aligned_for(runs: Any, qrels: pd.DataFrame | JudgmentTable | None, topics: Sequence[str] | None = None,
                 ties: str = "trec_eval") -> AlignedRuns:
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
    return AlignedRuns.build(runs, table, **args)




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
        prod = np.take(x, self.indices)
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


def _stable_row_order(jidx: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The stable argsort of ``jidx`` (values in ``[0, n_rows)``) and the start of each value's run
    in it (``n_rows + 1`` offsets), in O(n): pandas' counting sort (the one its groupby uses) when
    pandas is imported already, else a radix sort of numpy's stable sorts of 16-bit digits (a
    counting sort each; about twice the time, but no pandas to import).  numpy's stable argsort
    of wider integers is a merge sort, several times slower on 10^6+ keys."""
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(jidx, minlength=n_rows), out=ptr[1:])
    if "pandas" in sys.modules:
        try:
            from pandas._libs.algos import groupsort_indexer
        except ImportError:   # a pandas without it
            pass
        else:
            return groupsort_indexer(np.asarray(jidx, dtype=np.intp), int(n_rows))[0], ptr
    order = None
    bits = max(int(n_rows - 1).bit_length(), 1)
    for shift in range(0, bits, 16):   # least significant digit first
        # the digit as the narrowest unsigned type that holds it (numpy's stable sort of 8- and 16-bit
        # integers is a counting sort of their bytes)
        digit = (jidx >> shift).astype(np.uint8 if bits - shift <= 8 else np.uint16)
        step = np.argsort(digit if order is None else digit[order], kind="stable")
        order = step if order is None else order[step]
    return order, ptr


@dataclass
class _Contributions:
    """Contributions c[s,d] = (1-p) p^(rank-1) of every (run, topic, position) as sparse rows.

    Rows are the aligned judgment table's rows (one per (topic, document)), columns the segments
    ``run * n_topics + topic``.  ``all_*`` covers every run (for the state updates that evaluate
    all runs), ``pool_*`` only the runs that feed the pool (for the weights).
    """

    all_ptr: np.ndarray
    all_seg: np.ndarray
    all_run: np.ndarray
    all_c: np.ndarray
    all_pos: np.ndarray
    pool: _Rows
    pool_run: np.ndarray
    pool_pos: np.ndarray    # 0-based rank of each pool entry
    candidate: np.ndarray   # (J,) bool: retrieved by at least one pool run


def _contributions(aligned: AlignedRuns, p: float, pool_mask: np.ndarray) -> _Contributions:
    """Built once per (alignment, p, pool runs) and kept in the alignment's cache, so that several
    selectors (methods) on one alignment share it."""
    key = ("selection-contributions", float(p), pool_mask.tobytes())
    hit = aligned._cache.get(key)
    if hit is None:
        hit = aligned._cache[key] = _build_contributions(aligned, p, pool_mask)
    return hit


def _by_row(aligned: AlignedRuns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions of ``aligned`` grouped by table row: ``(ptr, seg, pos)`` with row ``j``'s entries
    at ``ptr[j]:ptr[j+1]``, segments ascending within a row (i.e. run order, the topic being fixed),
    and each entry's segment and 0-based rank.  Independent of ``p`` and of the pool runs; kept in the
    alignment's cache (a judging session stores it, so that reopening needs no sort)."""
    hit = aligned._cache.get("selection-by-row")
    if hit is not None:
        return hit
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
    seg = np.repeat(np.arange(n_seg, dtype=it), aligned.seg_len)
    # Grouping the positions by table row is the stable argsort of jidx (a radix sort); as a document
    # appears at most once per ranking, the entries of a row come in segment order.
    order, ptr = _stable_row_order(jidx, J)
    segs = seg[order]
    del seg
    pos = aligned.pos[order].astype(it, copy=False)
    hit = aligned._cache["selection-by-row"] = (ptr, segs, pos)
    return hit


def _build_contributions(aligned: AlignedRuns, p: float, pool_mask: np.ndarray) -> _Contributions:
    n_seg = aligned.n_segments
    J = len(aligned.table)
    ptr, segs, pos = _by_row(aligned)
    # c = (1-p) p^(rank-1) from the engine's table over ranks: one power per rank, not per position
    vals = rbp_weights(p, int(pos.max(initial=0)) + 1)[pos]
    # the run of each entry from a table over segments (a lookup is cheaper than 10^6+ divisions)
    run = (np.arange(n_seg, dtype=segs.dtype) // segs.dtype.type(aligned.n_topics))[segs]
    keep = None if pool_mask.all() else pool_mask[run]
    if keep is None or keep.all():
        pool = _Rows(ptr, segs, vals, (J, n_seg))
        pool_run, pool_pos = run, pos
    else:
        rows = np.repeat(np.arange(J, dtype=np.int64), np.diff(ptr))
        pptr = np.zeros(J + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[keep], minlength=J), out=pptr[1:])
        pool = _Rows(pptr, segs[keep], vals[keep], (J, n_seg))
        pool_run, pool_pos = run[keep], pos[keep]
    candidate = np.diff(pool.indptr) > 0
    return _Contributions(ptr, segs, run, vals, pos, pool, pool_run, pool_pos, candidate)
