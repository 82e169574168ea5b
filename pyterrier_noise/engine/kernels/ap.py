"""Average precision (trec_eval's map / map_cut) and Bpref (Buckley and Voorhees 2004; trec_eval's
bpref), each under every tie policy by closed form (McSherry and Najork 2008 for the expected AP)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..registry import Kernel, register_kernel
from .common import (Labels, condensed_positions, cumulative_in_segment, divide, n_relevant, segment_sum,
                     topic_of_segment, topic_sum)
from .ties import before_in_segment, condensed_groups, group_sum, groups, harmonic, segment_total

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["average_precision", "APKernel", "BprefKernel"]


def average_precision(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels) -> np.ndarray:
    """Average precision as trec_eval computes it (map / map_cut): sum of precision at each
    relevant retrieved rank over the number of relevant judgments R of the topic; with
    ``judged_only`` the ranks are those of the condensed list.

    Versions are rows here (``(R, judged positions)``, each version's positions contiguous), so the
    running counts and the per-segment sums stream through memory; every value is the one of the
    position-major layout bit for bit (the same integer counts, divisions and sums in order)."""
    g = labels.binary(spec)
    j = aligned.judged_positions()
    R = g.shape[1]
    # np.take keeps the result C-ordered (fancy indexing along axis 1 would not)
    rel = np.take(np.ascontiguousarray(g.T) > 0, j["jidx"], axis=1)    # (R, judged positions)
    if spec.judged_only:
        rank1 = np.maximum(condensed_positions(aligned, labels).T + 1.0, 1.0)   # unlabelled: not relevant
    else:
        rank1 = aligned.cached("rank1", lambda: j["pos"] + 1.0)
    if spec.cutoff is not None:
        rel &= rank1 <= spec.cutoff
    out = np.zeros((aligned.n_segments, R))
    ne = j["nonempty"]
    if len(ne):
        first = j["indptr"][ne]
        within = np.cumsum(rel, axis=1, dtype=np.int32)               # running count of relevant
        before = within[:, first] - rel[:, first]
        within -= np.repeat(before, np.diff(j["indptr"])[ne], axis=1)  # ... within each segment
        within *= rel
        contrib = within.astype(np.float64)
        del within
        contrib /= rank1                                              # precision at relevant ranks
        out[ne] = np.add.reduceat(contrib, first, axis=1).T
    return divide(out, n_relevant(aligned, g))


def _relevance(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels):
    g = labels.binary(spec)
    j = aligned.judged_positions()
    grp = groups(aligned)
    rel = (g[j["jidx"]] > 0).astype(np.float64)
    return g, grp, group_sum(grp, rel)                # relevant documents in each group


def _ap_tied(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, mode: str) -> np.ndarray:
    """AP -- expected (McSherry and Najork 2008), best or worst ordering of every tied group."""
    g, grp, r = _relevance(aligned, spec, labels)
    if spec.judged_only:   # the groups of the condensed list
        b, l = condensed_groups(aligned, labels)  # noqa: E741
    else:
        b = grp["gb"][:, None].astype(np.float64)
        l = grp["gl"][:, None].astype(np.float64)  # noqa: E741
    c = before_in_segment(grp, r)                   # relevant documents before the group
    k = np.inf if spec.cutoff is None else float(spec.cutoff)
    if mode == "expected":
        m = np.clip(np.minimum(l, k - b), 0.0, None)
        dH = harmonic(b + m) - harmonic(b)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(l > 1, (r - 1.0) / np.where(l > 1, l - 1.0, 1.0), 0.0)
            contrib = (r / l) * ((c + 1.0) * dH + a * (m - (b + 1.0) * dH))
    else:
        # the r relevant documents take the first (optimistic) or last (pessimistic) r places:
        # sum_{t<m} (c + t + 1) / (p0 + t + 1) = m + (c - p0) (H_{p0+m} - H_{p0})
        p0 = b if mode == "optimistic" else b + l - r
        m = np.clip(np.minimum(r, k - p0), 0.0, None)
        contrib = m + (c - p0) * (harmonic(p0 + m) - harmonic(p0))
    contrib = np.where(r > 0, np.nan_to_num(contrib), 0.0)
    return divide(segment_total(aligned, grp, contrib), n_relevant(aligned, g))


class APKernel(Kernel):
    """AP and AP@k (trec_eval), ``rel``, ``judged_only``; every tie policy."""

    family = "AP"
    uses = frozenset({"rel", "cutoff", "judged_only"})

    def cost(self, aligned: "AlignedRuns", spec: "MeasureSpec") -> int:
        return max(len(aligned.table), aligned.n_segments, len(aligned.judged_positions()["rows"]))

    def compute(self, aligned, spec, labels):
        return average_precision(aligned, spec, labels)

    def tied(self, aligned, spec, labels, mode):
        return _ap_tied(aligned, spec, labels, mode)


# ------------------------------------------------------------------------------------------------
# Bpref

def _min_sum(lo: np.ndarray, hi: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``sum_{n=lo}^{hi} min(n, cap)`` for integer arrays with ``0 <= lo <= hi + 1``."""
    def upto(m):   # sum_{n=0}^{m} min(n, cap), m >= -1
        m = np.maximum(m, -1.0)
        return np.where(m <= cap, m * (m + 1.0) / 2.0, cap * (cap + 1.0) / 2.0 + (m - cap) * cap)
    return upto(hi) - upto(lo - 1.0)


class BprefKernel(Kernel):
    """Bpref as trec_eval computes it: for each relevant retrieved document,
    ``1 - min(n, R) / min(N, R)`` with ``n`` the judged non-relevant documents ranked above it,
    ``R`` and ``N`` the topic's relevant and judged non-relevant judgments; summed over ``R``.

    Tied scores: a relevant document of a group with ``s`` judged non-relevant documents has,
    over the group's orderings, a uniform number 0..s of them before it (optimistic: 0,
    pessimistic: s); the documents before the group are fixed, so every policy is a closed form."""

    family = "Bpref"
    uses = frozenset({"rel"})

    def _parts(self, aligned, spec, labels):
        g = labels.binary(spec)
        j = aligned.judged_positions()
        lab = labels.judged()[j["jidx"]] > 0
        rel = g[j["jidx"]] > 0
        nonrel = lab & ~rel
        R = n_relevant(aligned, g)
        N = topic_sum(aligned.table, (labels.judged() > 0) & ~(g > 0))[topic_of_segment(aligned)]
        return j, rel, nonrel, R, np.minimum(N, R)

    def compute(self, aligned, spec, labels):
        j, rel, nonrel, R, cap = self._parts(aligned, spec, labels)
        before = (cumulative_in_segment(aligned, nonrel.astype(np.int32)) - nonrel).astype(np.float64)
        seg = j["seg"]
        Rs, caps = R[seg], cap[seg]
        term = 1.0 - divide(np.minimum(before, Rs), caps)
        return divide(segment_sum(aligned, np.where(rel, term, 0.0)), R)

    def tied(self, aligned, spec, labels, mode):
        j, rel, nonrel, R, cap = self._parts(aligned, spec, labels)
        grp = groups(aligned)
        r = group_sum(grp, rel.astype(np.float64))
        s = group_sum(grp, nonrel.astype(np.float64))
        c = before_in_segment(grp, s)                   # judged non-relevant before the group
        gseg = grp["gseg"]
        Rg, capg = R[gseg], cap[gseg]
        if mode == "expected":
            total = _min_sum(c, c + s, Rg)               # sum over x = 0..s of min(c + x, R)
            mean_min = total / (s + 1.0)
        else:
            mean_min = np.minimum(c if mode == "optimistic" else c + s, Rg)
        contrib = np.where(r > 0, r * (1.0 - divide(mean_min, capg)), 0.0)
        return divide(segment_total(aligned, grp, contrib), R)


register_kernel(APKernel())
register_kernel(BprefKernel())
