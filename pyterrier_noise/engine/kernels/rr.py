"""Reciprocal rank (trec_eval's recip_rank) and Success@k (trec_eval's success): both read the
first relevant document, so both share its tie kernel (Yang 2019 thesis, Sec. 3.3)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..registry import Kernel, register_kernel
from .common import Labels, condensed_positions
from .ties import BUDGET, condensed_groups, group_sum, groups, log_comb

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["RRKernel", "SuccessKernel"]


def _first_relevant_rank(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels) -> np.ndarray:
    """0-based rank of the first relevant document of every (segment, version) within the cutoff
    (condensed with ``judged_only``), or -1 when there is none."""
    j = aligned.judged_positions()
    rel = labels.binary(spec)[j["jidx"]] > 0
    pos = (condensed_positions(aligned, labels) if spec.judged_only else j["pos"][:, None]).astype(np.int64)
    big = np.iinfo(np.int64).max
    rank = np.where(rel, pos, big)
    if spec.cutoff is not None:
        rank = np.where(rank < spec.cutoff, rank, big)
    out = np.full((aligned.n_segments, rel.shape[1]), big, dtype=np.int64)
    ne = j["nonempty"]
    if len(ne):
        out[ne] = np.minimum.reduceat(rank, j["indptr"][ne], axis=0)
    return np.where(out == big, -1, out)


def _first_group(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels):
    """For every (segment, version) whose ranking holds a relevant document: the segment, the
    version, and the start ``b``, length ``l`` and relevant count ``r`` of the first tied group
    holding one."""
    j = aligned.judged_positions()
    grp = groups(aligned)
    rel = (labels.binary(spec)[j["jidx"]] > 0).astype(np.float64)
    r = group_sum(grp, rel)
    n_seg, R = aligned.n_segments, r.shape[1]
    G = grp["n_groups"]
    first = np.full((n_seg, R), G, dtype=np.int64)
    if G:
        idx = np.where(r > 0, np.arange(G)[:, None], G)
        ne = np.flatnonzero(np.diff(grp["gptr"]) > 0)
        first[ne] = np.minimum.reduceat(idx, grp["gptr"][ne], axis=0)
    s, v = np.nonzero(first < G)
    fg = first[s, v]
    rv = r[fg, v].astype(np.int64) if G else np.zeros(0, np.int64)
    if spec.judged_only:   # the group's place and length in the condensed list
        cb, lj = condensed_groups(aligned, labels)
        return s, v, cb[fg, v].astype(np.int64), lj[fg, v].astype(np.int64), rv
    return s, v, grp["gb"][fg], grp["gl"][fg], rv


class RRKernel(Kernel):
    """RR and RR@k: 1 / rank of the first relevant document (0 without one)."""

    family = "RR"
    uses = frozenset({"rel", "cutoff", "judged_only"})

    def compute(self, aligned, spec, labels):
        first = _first_relevant_rank(aligned, spec, labels)
        return np.where(first >= 0, 1.0 / (np.maximum(first, 0) + 1.0), 0.0)

    def tied(self, aligned, spec, labels, mode):
        """Expected: the offset ``J`` of the first relevant document in its group is
        negative-hypergeometric, ``P(J = j) = C(l-j-1, r-1) / C(l, r)`` (the thesis's ``notr`` /
        ``firstr``), ``E[RR] = sum_j P(J = j) / (b + j + 1)`` above the cutoff."""
        out = np.zeros((aligned.n_segments, labels.R))
        s, v, b, l, rv = _first_group(aligned, spec, labels)
        k = np.iinfo(np.int64).max if spec.cutoff is None else int(spec.cutoff)
        if mode != "expected":
            p = b if mode == "optimistic" else b + l - rv
            out[s, v] = np.where(p < k, 1.0 / (p + 1.0), 0.0)
            return out
        # offsets j = 0 .. min(l - r, k - 1 - b) of the first relevant document in its group
        n_off = np.clip(np.minimum(l - rv, k - 1 - b) + 1, 0, None)
        vals = np.zeros(len(s))
        cum = np.cumsum(n_off)
        lo = 0
        while lo < len(s):   # chunks of units, so that the expansion stays within the budget
            hi = max(int(np.searchsorted(cum, (cum[lo - 1] if lo else 0) + BUDGET, side="right")), lo + 1)
            cnt = n_off[lo:hi]
            unit = np.repeat(np.arange(lo, hi), cnt)
            if len(unit):
                start = np.repeat(np.cumsum(cnt) - cnt, cnt)
                off = np.arange(len(unit)) - start
                lu, ru, bu = l[unit].astype(np.float64), rv[unit].astype(np.float64), b[unit]
                logp = (log_comb(lu - off - 1.0, ru - 1.0) - log_comb(lu, ru))
                term = np.exp(logp) / (bu + off + 1.0)
                vals[lo:hi] = np.bincount(unit - lo, weights=term, minlength=hi - lo)
            lo = hi
        out[s, v] = vals
        return out


class SuccessKernel(Kernel):
    """Success@k: 1 when a relevant document is ranked within the top k, else 0.

    Tied scores: only the first group holding a relevant document can decide it; with ``m`` of its
    ``l`` positions above the cutoff and ``r`` relevant documents, the expected value is
    ``1 - C(l - m, r) / C(l, r)``; optimistic and pessimistic place them first or last."""

    family = "Success"
    uses = frozenset({"rel", "cutoff", "judged_only"})
    cutoff_required = True

    def compute(self, aligned, spec, labels):
        return (_first_relevant_rank(aligned, spec, labels) >= 0).astype(np.float64)

    def tied(self, aligned, spec, labels, mode):
        out = np.zeros((aligned.n_segments, labels.R))
        s, v, b, l, rv = _first_group(aligned, spec, labels)
        k = int(spec.cutoff)
        if mode == "optimistic":
            out[s, v] = (b < k).astype(np.float64)
        elif mode == "pessimistic":
            out[s, v] = (b + l - rv < k).astype(np.float64)
        else:
            m = np.clip(k - b, 0, l).astype(np.float64)
            lf, rf = l.astype(np.float64), rv.astype(np.float64)
            # P(no relevant document in the m places above the cutoff) = C(l - m, r) / C(l, r)
            none = np.where(lf - m >= rf, np.exp(log_comb(lf - m, rf) - log_comb(lf, rf)), 0.0)
            out[s, v] = 1.0 - none
        return out


register_kernel(RRKernel())
register_kernel(SuccessKernel())
