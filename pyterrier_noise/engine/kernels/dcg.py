"""DCG and nDCG (Jarvelin and Kekalainen 2002, as trec_eval's ndcg / ndcg_cut: log2 discount,
the label as gain or a ``gains`` mapping as ir_measures spells it) and ERR (Chapelle et al. 2009,
as gdeval computes it for ir_measures)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import InputError
from ..registry import Kernel, register_kernel
from .common import Labels, condensed_positions, divide, segment_sum, topic_of_segment
from .linear import LinearKernel
from .ties import (arranged_positions, condensed_arranged_positions, expected_over_arrangements, groups,
                   in_arranged_order, value_key)

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["ideal_dcg", "DCGKernel", "NDCGKernel", "ERRKernel", "ERR_MAX_GRADE"]

#: gdeval's maximum grade (``$MAX_JUDGMENT``): ERR's stopping probability is ``(2^g - 1) / 2^4``
ERR_MAX_GRADE = 4


def ideal_dcg(aligned: "AlignedRuns", spec: "MeasureSpec", g: np.ndarray) -> np.ndarray:
    """Ideal DCG per (topic, version): judged gains of the topic sorted descending
    (trec_eval's ndcg / ndcg_cut), vectorised through a padded (topics, max_judged, R) array."""
    table = aligned.table
    st = table.topic_start
    sizes = np.diff(st)
    width = int(sizes.max()) if len(sizes) else 0
    width_out = min(width, spec.cutoff) if spec.cutoff is not None else width
    pad = np.zeros((aligned.n_topics, max(width, 1), g.shape[1]))
    within = np.arange(len(g)) - st[table.topic_index]
    pad[table.topic_index, within] = g
    pad = -np.sort(-pad, axis=1)[:, :width_out]
    disc = 1.0 / np.log2(np.arange(width_out) + 2.0)
    return np.einsum("tkr,k->tr", pad, disc)


class DCGKernel(LinearKernel):
    """DCG: sum of gain / log2(rank + 1) (trec_eval's gains: the label; negative labels gain 0)."""

    family = "DCG"
    uses = frozenset({"cutoff", "judged_only", "gains"})

    def weights(self, spec: "MeasureSpec", length: int) -> np.ndarray:
        w = 1.0 / np.log2(np.arange(length, dtype=np.float64) + 2.0)
        if spec.cutoff is not None:
            w[int(spec.cutoff):] = 0.0
        return w

    def gain(self, spec: "MeasureSpec", labels: Labels) -> np.ndarray:
        return labels.graded(spec.gains)


class NDCGKernel(DCGKernel):
    """nDCG: DCG over the topic's ideal DCG (0 for a topic without a positive gain)."""

    family = "nDCG"

    def finish(self, aligned, spec, labels, value):
        ideal = ideal_dcg(aligned, spec, self.gain(spec, labels))[topic_of_segment(aligned)]
        return divide(value, ideal)


def _err(aligned: "AlignedRuns", spec: "MeasureSpec", r: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """ERR of every (segment, version) from the stopping probabilities ``r`` and 0-based ranks
    ``pos`` (-1: not ranked in that version) of the judged rows, in rank order within segments."""
    j = aligned.judged_positions()
    r = np.where(pos >= 0, r, 0.0)
    if spec.cutoff is not None:
        r = np.where(pos < spec.cutoff, r, 0.0)
    # prod_{j<i} (1 - R_j) within the segment: unjudged positions have R = 0 and factor 1
    logq = np.log1p(-r)
    cs = np.cumsum(logq, axis=0)
    ne = j["nonempty"]
    if len(ne):
        first = j["indptr"][ne]
        start = cs[first] - logq[first]
        cs -= np.repeat(start, np.diff(j["indptr"])[ne], axis=0)
    reach = np.exp(cs - logq)
    return segment_sum(aligned, np.where(r > 0, r * reach / (np.maximum(pos, 0) + 1.0), 0.0))


def _err_dense(G: np.ndarray, seg: np.ndarray, ver: np.ndarray) -> np.ndarray:
    """ERR of rankings given as dense stopping probabilities ``G`` (ranks x rankings)."""
    reach = np.empty_like(G)
    reach[0] = 1.0
    np.cumprod(1.0 - G[:-1], axis=0, out=reach[1:])
    reach *= G
    reach /= np.arange(1.0, len(G) + 1.0)[:, None]
    return reach.sum(axis=0)


class ERRKernel(Kernel):
    """ERR@k as gdeval computes it (the definition ir_measures serves): a user stops at rank i
    with probability ``R_i = (2^g_i - 1) / 2^4`` (g the label, 0 for unjudged or non-positive
    labels), ``ERR = sum_i R_i / i * prod_{j<i} (1 - R_j)`` over the top k.  Labels above 4
    are refused, as gdeval refuses them.

    Tied scores: optimistic / pessimistic order every tied group by stopping probability,
    highest / lowest first (the extremes, by an exchange argument; tests check them against every
    ordering); the expected value (the cascade has no closed form over the orderings) is the mean
    over the distinct arrangements of the tied groups above the cutoff, enumerated
    (:func:`~.ties.expected_over_arrangements`, at most :data:`~.ties.MAX_ARRANGEMENTS` per ranking)."""

    family = "ERR"
    uses = frozenset({"cutoff", "judged_only"})

    def _stop(self, labels: Labels) -> np.ndarray:
        L = labels.L
        top = np.nanmax(L, initial=0.0)
        if top > ERR_MAX_GRADE:
            raise InputError(f"ERR: labels above {ERR_MAX_GRADE} are not defined (gdeval's maximum grade is "
                             f"{ERR_MAX_GRADE}); got a label {top:g}")
        g = np.where(np.isnan(L), 0.0, np.maximum(L, 0.0))
        return (np.exp2(g) - 1.0) / 2.0 ** ERR_MAX_GRADE

    def compute(self, aligned, spec, labels):
        j = aligned.judged_positions()
        r = self._stop(labels)[j["jidx"]]
        pos = condensed_positions(aligned, labels) if spec.judged_only else np.broadcast_to(j["pos"][:, None], r.shape)
        return _err(aligned, spec, r, pos)

    def tied(self, aligned, spec, labels, mode):
        j = aligned.judged_positions()
        r = self._stop(labels)[j["jidx"]]
        if mode == "expected":
            depth = max(min(aligned.max_len, spec.cutoff or aligned.max_len), 1)
            return expected_over_arrangements(aligned, r, labels.judged()[j["jidx"]] > 0, _err_dense, family="ERR",
                                              depth=depth, condensed=labels if spec.judged_only else None,
                                              fixed=self.compute(aligned, spec, labels))
        if spec.judged_only:
            pos = condensed_arranged_positions(aligned, labels, r, mode == "optimistic")
        else:
            lab = labels.judged()[j["jidx"]] > 0
            pos = arranged_positions(aligned, groups(aligned), value_key(r), lab, 0.5, mode == "optimistic")
        pos, r = in_arranged_order(aligned, pos, r)
        return _err(aligned, spec, r, pos)


register_kernel(DCGKernel())
register_kernel(NDCGKernel())
register_kernel(ERRKernel())
