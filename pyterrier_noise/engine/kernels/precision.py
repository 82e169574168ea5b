"""Set and count measures of trec_eval: P@k, R@k (recall), Rprec, IPrec@r (interpolated
precision), NumRet, NumRel, NumRelRet, and ir_measures' Judged@k (judgment rate)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import InputError
from ..registry import Kernel, register_kernel
from .common import Labels, condensed_positions, cumulative_in_segment, divide, n_relevant, segment_sum
from .linear import LinearKernel
from .ties import (arranged_positions, condensed_arranged_positions, condensed_groups, expected_over_arrangements,
                   groups, in_arranged_order, value_key)

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["PKernel", "RKernel", "RprecKernel", "IPrecKernel", "JudgedKernel", "NumRetKernel", "NumRelKernel",
           "NumRelRetKernel"]


def _top_k(spec: "MeasureSpec", length: int, weight: float = 1.0) -> np.ndarray:
    w = np.full(length, weight)
    w[int(spec.cutoff):] = 0.0
    return w


class PKernel(LinearKernel):
    """P@k: relevant documents in the top k over k (trec_eval's P)."""

    family = "P"
    uses = frozenset({"rel", "max_rel", "cutoff", "judged_only"})
    cutoff_required = True

    def weights(self, spec, length):
        return _top_k(spec, length, 1.0 / spec.cutoff)


class RKernel(LinearKernel):
    """R@k (recall): relevant documents in the top k over the topic's relevant judgments
    (trec_eval's recall; 0 for a topic without relevant judgments)."""

    family = "R"
    uses = frozenset({"rel", "cutoff", "judged_only"})
    cutoff_required = True

    def weights(self, spec, length):
        return _top_k(spec, length)

    def finish(self, aligned, spec, labels, value):
        return divide(value, n_relevant(aligned, labels.binary(spec)))


class JudgedKernel(LinearKernel):
    """Judged@k (ir_measures' judgment rate): the share of the top ``min(k, ranking length)``
    documents that have a judgment; without a cutoff, of the whole ranking."""

    family = "Judged"
    uses = frozenset({"cutoff"})

    def weights(self, spec, length):
        return np.ones(length) if spec.cutoff is None else _top_k(spec, length)

    def gain(self, spec, labels):
        return labels.judged()

    def finish(self, aligned, spec, labels, value):
        n = aligned.seg_len.astype(np.float64)
        if spec.cutoff is not None:
            n = np.minimum(n, spec.cutoff)
        return divide(value, n[:, None])


def _arranged(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, mode: str) -> np.ndarray:
    """Ranks of the judged rows (-1 unlabelled) with every tied group's relevant documents first
    (optimistic) or last (pessimistic); in the condensed list with ``judged_only``."""
    j = aligned.judged_positions()
    grow = labels.binary(spec)[j["jidx"]]
    if spec.judged_only:
        return condensed_arranged_positions(aligned, labels, grow, mode == "optimistic")
    lab = labels.judged()[j["jidx"]] > 0
    return arranged_positions(aligned, groups(aligned), value_key(grow), lab, 0.5, mode == "optimistic")


class RprecKernel(Kernel):
    """Rprec: relevant documents in the top R over R, R the topic's relevant judgments (trec_eval).

    Tied scores: it is P at a per-topic cutoff, so the expected value gives each relevant document
    the share of its group's positions above R, and optimistic / pessimistic arrange the groups."""

    family = "Rprec"
    uses = frozenset({"rel", "judged_only"})

    def _count(self, aligned, spec, labels, above):
        j = aligned.judged_positions()
        g = labels.binary(spec)
        R = n_relevant(aligned, g)
        rel = g[j["jidx"]] > 0
        return divide(segment_sum(aligned, np.where(rel, above(j, R[j["seg"]]), 0.0)), R)

    def compute(self, aligned, spec, labels):
        if spec.judged_only:
            cpos = condensed_positions(aligned, labels)
            return self._count(aligned, spec, labels, lambda j, R: (cpos >= 0) & (cpos < R))
        return self._count(aligned, spec, labels, lambda j, R: j["pos"][:, None] < R)

    def tied(self, aligned, spec, labels, mode):
        jp = aligned.judged_positions()
        if mode == "expected":
            if spec.judged_only:   # the groups of the condensed list
                cb, lj = condensed_groups(aligned, labels)
                gid = groups(aligned)["gid"]
                gs, ge = cb[gid], cb[gid] + lj[gid]
            else:
                gs, ge = jp["gstart"][:, None], jp["gend"][:, None]
            with np.errstate(invalid="ignore", divide="ignore"):
                share = lambda j, R: np.where(ge > gs, np.clip(np.minimum(ge, R) - gs, 0, None) / (ge - gs), 0.0)  # noqa: E731
            return self._count(aligned, spec, labels, share)
        pos = _arranged(aligned, spec, labels, mode)
        return self._count(aligned, spec, labels, lambda j, R: (pos >= 0) & (pos < R))


def _iprec(aligned: "AlignedRuns", spec: "MeasureSpec", rel: np.ndarray, pos: np.ndarray,
           R: np.ndarray) -> np.ndarray:
    """IPrec of every (segment, version) from the relevance ``rel`` and 0-based ranks ``pos`` of the
    judged rows in rank order within segments, ``R`` the relevant judgments of each row's topic."""
    j = aligned.judged_positions()
    found = cumulative_in_segment(aligned, rel.astype(np.int32)).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = rel & (R > 0) & (found / np.where(R > 0, R, 1.0) >= spec.recall)
        prec = np.where(ok, found / (np.maximum(pos, 0) + 1.0), 0.0)
    out = np.zeros((aligned.n_segments, rel.shape[1]))
    ne = j["nonempty"]
    if len(ne):
        out[ne] = np.maximum.reduceat(prec, j["indptr"][ne], axis=0)
    return out


def _iprec_dense(spec: "MeasureSpec", G: np.ndarray, R: np.ndarray) -> np.ndarray:
    """IPrec of rankings given as dense binary gains ``G`` (ranks x rankings), ``R`` the relevant
    judgments of each ranking's topic."""
    found = np.cumsum(G, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (G > 0) & (R > 0) & (found / np.where(R > 0, R, 1.0) >= spec.recall)
        prec = np.where(ok, found / np.arange(1.0, len(G) + 1.0)[:, None], 0.0)
    return prec.max(axis=0, initial=0.0)


class IPrecKernel(Kernel):
    """IPrec@r (trec_eval's iprec_at_recall): the highest precision at any rank whose recall is at
    least r (precision peaks at relevant ranks, so over those), 0 when no rank reaches r.

    Tied scores: optimistic / pessimistic put each group's relevant documents first / last; the
    expected value (of a maximum over ranks: no closed form over the orderings) is the mean over
    the distinct arrangements of the tied groups, enumerated
    (:func:`~.ties.expected_over_arrangements`, at most :data:`~.ties.MAX_ARRANGEMENTS` per ranking)."""

    family = "IPrec"
    uses = frozenset({"rel", "recall", "judged_only"})

    def check_params(self, spec):
        if spec.recall is None or not 0.0 <= spec.recall <= 1.0:
            raise InputError(f"IPrec needs a recall level in [0, 1], e.g. IPrec@0.5; got {spec.recall!r}")

    def compute(self, aligned, spec, labels):
        j = aligned.judged_positions()
        g = labels.binary(spec)
        rel = g[j["jidx"]] > 0
        pos = condensed_positions(aligned, labels) if spec.judged_only else np.broadcast_to(j["pos"][:, None], rel.shape)
        return _iprec(aligned, spec, rel, pos, n_relevant(aligned, g)[j["seg"]])

    def tied(self, aligned, spec, labels, mode):
        j = aligned.judged_positions()
        g = labels.binary(spec)
        grow = g[j["jidx"]]
        if mode == "expected":
            R = n_relevant(aligned, g)

            def evaluate(G, seg, ver):
                return _iprec_dense(spec, G, R[seg, ver])
            return expected_over_arrangements(aligned, (grow > 0).astype(np.float64), labels.judged()[j["jidx"]] > 0,
                                              evaluate, family="IPrec", depth=max(aligned.max_len, 1),
                                              condensed=labels if spec.judged_only else None,
                                              fixed=self.compute(aligned, spec, labels))
        pos = _arranged(aligned, spec, labels, mode)
        pos, rel = in_arranged_order(aligned, pos, grow > 0)
        return _iprec(aligned, spec, rel, pos, n_relevant(aligned, g)[j["seg"]])


class _CountKernel(Kernel):
    """A count per (run, topic); trec_eval reports the sum over topics, not the mean."""

    aggregate = "sum"

    def tied(self, aligned, spec, labels, mode):
        return self.compute(aligned, spec, labels)   # a count does not depend on the order


class NumRetKernel(_CountKernel):
    """NumRet: the documents ranked (trec_eval's num_ret)."""

    family = "NumRet"

    def compute(self, aligned, spec, labels):
        return np.repeat(aligned.seg_len.astype(np.float64)[:, None], labels.R, axis=1)


class NumRelKernel(_CountKernel):
    """NumRel: the topic's relevant judgments, ``label >= rel`` (trec_eval's num_rel)."""

    family = "NumRel"
    uses = frozenset({"rel"})

    def compute(self, aligned, spec, labels):
        return n_relevant(aligned, labels.binary(spec))


class NumRelRetKernel(_CountKernel):
    """NumRelRet: the relevant documents ranked (trec_eval's num_rel_ret; ir_measures' NumRet(rel=...))."""

    family = "NumRelRet"
    uses = frozenset({"rel"})

    def compute(self, aligned, spec, labels):
        j = aligned.judged_positions()
        return segment_sum(aligned, (labels.binary(spec)[j["jidx"]] > 0).astype(np.float64))


for _kernel in (PKernel(), RKernel(), JudgedKernel(), RprecKernel(), IPrecKernel(), NumRetKernel(), NumRelKernel(),
                NumRelRetKernel()):
    register_kernel(_kernel)
