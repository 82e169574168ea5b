"""Depth-k pools over aligned runs, in one place: which judged positions the pooling runs rank,
the depth at which each judgment enters the pool, and the judgments inside a depth-``depth``
pool (Yang 2019 thesis, Sec. 4.6, "Depth@k reduction"; ``Pool_t(k)`` is the union of the top k
documents of the pooling runs for topic t).  The word is ``depth`` everywhere (LAYOUT.md)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from .._validation import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .align import AlignedRuns

__all__ = ["pool_positions", "pool_entry_depth", "judged_in_top"]


def pool_positions(aligned: "AlignedRuns", pool_runs: Sequence[str] | None = None) -> np.ndarray:
    """Boolean over the aligned positions: a judged table row ranked by one of ``pool_runs``
    (default: every aligned run)."""
    if pool_runs is None:
        in_pool = np.ones(aligned.n_runs, dtype=bool)
    else:
        names = [str(n) for n in ([pool_runs] if isinstance(pool_runs, str) else pool_runs)]
        if not names:
            raise InputError("pool_runs is empty: give the runs whose top documents form the pool (or None for all)")
        where = {n: i for i, n in enumerate(aligned.run_names)}
        missing = [n for n in names if n not in where]
        if missing:
            raise InputError(f"pool_runs: run {missing[0]!r} is not among the aligned runs "
                             f"({list(aligned.run_names[:5])} ...)")
        in_pool = np.zeros(aligned.n_runs, dtype=bool)
        in_pool[[where[n] for n in names]] = True
    run_of_pos = np.repeat(np.arange(aligned.n_segments) // max(aligned.n_topics, 1), aligned.seg_len)
    return (aligned.jidx >= 0) & in_pool[run_of_pos]


def pool_entry_depth(aligned: "AlignedRuns", pool_runs: Sequence[str] | None = None) -> np.ndarray:
    """Depth at which each judgment enters the depth-k pool of ``pool_runs``: for row ``j`` of
    ``aligned.table`` (topic t, document d) the smallest 1-based rank at which a pooling run
    retrieves d for t, so d is in ``Pool_t(k)`` iff ``entry[j] <= k``; ``inf`` when no pooling run
    retrieves it.  One pass over the positions serves every depth.  Float array ``(len(table),)``."""
    ok = pool_positions(aligned, pool_runs)
    entry = np.full(len(aligned.table), np.inf)
    np.minimum.at(entry, aligned.jidx[ok], aligned.pos[ok].astype(np.float64) + 1.0)
    return entry


def judged_in_top(aligned: "AlignedRuns", depth: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(table row, 0-based rank) of every judged position ranked above ``depth`` by any run; an
    error naming ``what`` when there is none (the runs and the qrels do not overlap there)."""
    ok = (aligned.jidx >= 0) & (aligned.pos < depth)
    if not ok.any():
        raise InputError(
            f"{what}: none of the {len(aligned.table)} judged documents is retrieved in the top {depth} by any "
            f"of the {aligned.n_runs} run(s); the runs and the qrels have no overlap (qrels topics: "
            f"{aligned.topics[:5]}{' ...' if aligned.n_topics > 5 else ''})")
    return aligned.jidx[ok], aligned.pos[ok]
