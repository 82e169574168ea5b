"""The one seeded random scheme of the judge-error models.

Every stochastic model draws exactly one uniform number per (judged row, replicate) from numpy's
PCG64 stream seeded by ``numpy.random.SeedSequence(seed)``, in replicate-major order: replicate
``i`` uses stream positions ``i*m .. (i+1)*m - 1`` (``m`` judged rows of the table, in the
table's order: topic, then docno), which the generator reaches with ``PCG64.advance`` without
drawing the earlier ones.  ``ConfusionJudge(sample_matrix=True)`` draws its matrices from a
second stream, child 0 of the seed (``SeedSequence(seed, spawn_key=(0,))``); stage ``k`` of a
``Chain`` uses child ``k``.

What replicate ``i`` depends on, and nothing else: the model (its parameters, fitted state and,
for rank-biased models, the runs), the ``seed``, the replicate index ``i``, and the judged rows
of the table -- their number ``m``, their order and their labels (row ``r`` of replicate ``i`` uses
stream position ``i*m + r``).  It does not depend on how many replicates are drawn with it
(``n_replicates``), on ``start`` (``start=i, n_replicates=1`` gives replicate ``i`` alone) or on
unjudged (``NaN``) rows of the table.  Hence the same model and seed give the same replicates on
any machine; an oracle that wants replicate ``i``'s label of a document must draw on the same
table (all its judged rows), not on a table of that document alone.  Two models with the same
seed share these uniforms (common random numbers), so their replicates differ only where the
models do.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..engine import JudgmentTable


@dataclass(frozen=True)
class Stream:
    """Uniforms for ``n`` replicates starting at replicate ``start``, ``m`` per replicate."""

    seed: np.random.SeedSequence
    m: int
    start: int
    n: int

    def uniforms(self) -> np.ndarray:
        """(m, n) C-contiguous: column i is replicate start + i (stream positions (start+i)*m ...)."""
        bits = np.random.PCG64(self.seed)
        if self.start:
            bits.advance(self.start * self.m)
        u = np.random.Generator(bits).random((self.n, self.m))
        return np.ascontiguousarray(u.T)

    def child(self, k: int) -> "Stream":
        s = self.seed
        return replace(self, seed=np.random.SeedSequence(s.entropy, spawn_key=tuple(s.spawn_key) + (k,),
                                                         pool_size=s.pool_size))

    def generator(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.seed))


class Rows:
    """The judged rows of a table (those a model perturbs), with per-topic reductions."""

    def __init__(self, table: JudgmentTable) -> None:
        self.table = table
        self.rows = np.flatnonzero(~np.isnan(table.labels))
        self.labels = table.labels[self.rows]
        self.topic_index = table.topic_index[self.rows]
        self.n_topics = len(table.topics)
        self.topic_start = np.searchsorted(self.topic_index, np.arange(self.n_topics + 1))

    def __len__(self) -> int:
        return len(self.rows)

    def topic_sum(self, x: np.ndarray) -> np.ndarray:
        """Sum an (m, k) array over the rows of each topic -> (n_topics, k)."""
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros((self.n_topics, x.shape[1]))
        sizes = np.diff(self.topic_start)
        ne = np.flatnonzero(sizes > 0)
        if len(ne):
            out[ne] = np.add.reduceat(x, self.topic_start[ne], axis=0)
        return out
