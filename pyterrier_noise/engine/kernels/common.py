"""What every kernel shares: gains, sums over topics and segments, condensed ranks, the label
versions of one chunk (:class:`Labels`) and the linear kernel (:class:`LinearKernel`).

Every function works on all (run, topic, version) at once and reads only the public shape
attributes of :class:`~pyterrier_noise.engine.AlignedRuns` and its
:meth:`~pyterrier_noise.engine.AlignedRuns.judged_positions`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np


if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec
    from ..table import JudgmentTable

__all__ = ["gains", "topic_sum", "segment_sum", "topic_of_segment", "cumulative_in_segment",
           "condensed_positions", "n_relevant", "divide", "suffix_sums", "Labels"]


def gains(labels: np.ndarray, spec: "MeasureSpec") -> np.ndarray:
    """Gain in [0, 1] (binary ``label >= rel``, or graded ``clip(label, 0, max_rel) / max_rel``);
    0 when unjudged."""
    with np.errstate(invalid="ignore"):
        if spec.max_rel is not None:
            g = np.clip(labels, 0.0, spec.max_rel) / spec.max_rel
        else:
            g = (labels >= spec.rel).astype(np.float64)
    return np.where(np.isnan(labels), 0.0, g)


def topic_sum(table: "JudgmentTable", values: np.ndarray) -> np.ndarray:
    """Sum a (n_judgments, R) matrix over the rows of each topic -> (n_topics, R)."""
    csum = np.zeros((len(values) + 1, values.shape[1]))
    np.cumsum(values, axis=0, out=csum[1:])
    st = table.topic_start
    return csum[st[1:]] - csum[st[:-1]]


def segment_sum(aligned: "AlignedRuns", values: np.ndarray) -> np.ndarray:
    """Sum a (n_judged_positions, R) matrix over the judged positions of each segment -> (n_segments, R)."""
    j = aligned.judged_positions()
    out = np.zeros((aligned.n_segments, values.shape[1]))
    ne = j["nonempty"]
    if len(ne):
        out[ne] = np.add.reduceat(values, j["indptr"][ne], axis=0)
    return out


def topic_of_segment(aligned: "AlignedRuns") -> np.ndarray:
    """Topic index of every segment (segments are run-major)."""
    return np.tile(np.arange(aligned.n_topics), aligned.n_runs)


def cumulative_in_segment(aligned: "AlignedRuns", x: np.ndarray) -> np.ndarray:
    """Running count of ``x`` (n_judged_positions, R) within each segment, inclusive (int32: exact)."""
    j = aligned.judged_positions()
    cs = np.cumsum(x, axis=0, dtype=np.int32)
    ne = j["nonempty"]
    if not len(ne):
        return cs
    first = j["indptr"][ne]
    before = cs[first] - x[first]
    return cs - np.repeat(before, np.diff(j["indptr"])[ne], axis=0)


def condensed_positions(aligned: "AlignedRuns", labels: "Labels") -> np.ndarray:
    """0-based rank of every judged position in its ranking with the documents unjudged in each
    version removed (Sakai 2007's condensed list; trec_eval ``-J``): (n_judged_positions, R),
    -1 where the position is unjudged in that version.  Removing documents keeps the order, so
    running sums in position order stay valid."""
    def make():
        lab = labels.judged()[aligned.judged_positions()["jidx"]].astype(np.int32)
        return np.where(lab > 0, cumulative_in_segment(aligned, lab) - 1, -1)
    return labels.memo("condensed", make)


def n_relevant(aligned: "AlignedRuns", g: np.ndarray) -> np.ndarray:
    """Relevant judgments (gain > 0) of each segment's topic: (n_segments, R) (trec_eval's num_rel)."""
    return topic_sum(aligned.table, (g > 0).astype(np.float64))[topic_of_segment(aligned)]


def suffix_sums(w: np.ndarray) -> np.ndarray:
    """``tail[i] = sum(w[i:])`` with ``tail[len(w)] = 0``: the weight of the positions ``[a, b)`` is
    ``tail[a] - tail[b]`` (accurate for rapidly decaying weights, RBP deep in a ranking)."""
    tail = np.zeros(len(w) + 1)
    tail[:-1] = np.cumsum(w[::-1])[::-1]
    return tail


def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, else 0 (trec_eval's value for a topic without relevant documents)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


class Labels:
    """One chunk of label versions ``L`` (n_judgments, R; NaN = unjudged in that version) and the
    arrays the kernels of one evaluation share over it (gains, judged masks, INST bounds)."""

    def __init__(self, L: np.ndarray, specs: tuple = ()) -> None:
        self.L = L
        #: every measure of this evaluation (kernels that share work between columns look here)
        self.specs = tuple(specs)
        self._memo: dict = {}

    @property
    def R(self) -> int:
        return self.L.shape[1]

    def memo(self, key, make: Callable[[], object]):
        """``make()`` once per key for this chunk of versions."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def judged(self) -> np.ndarray:
        """1.0 where a judgment row is labelled in a version, else 0.0."""
        return self.memo("judged", lambda: (~np.isnan(self.L)).astype(np.float64))

    def binary(self, spec: "MeasureSpec") -> np.ndarray:
        """:func:`gains` of the versions (binary ``label >= rel`` or scaled ``max_rel`` gains)."""
        return self.memo(("gain", spec.rel, spec.max_rel), lambda: gains(self.L, spec))

    def graded(self, mapping: tuple | None = None) -> np.ndarray:
        """trec_eval's graded gains: the label itself (negative labels gain 0), or ``mapping``'s gain
        of the label (labels the mapping does not name keep their own value, as ir_measures does)."""
        def make():
            L = self.L
            if mapping:
                mapped = L.copy()
                for label, gain in mapping:
                    mapped[L == label] = gain
                L = mapped
            return np.where(np.isnan(L), 0.0, np.maximum(L, 0.0))
        return self.memo(("graded", mapping), make)
