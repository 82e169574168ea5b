"""Measure kernels of the engine: gains, rank weights, INST's C/W/L recurrence and the kernels of the
non-linear measures (AP, RR, nDCG's ideal DCG, INST bounds) over aligned runs and a label matrix.

Every kernel works on all (run, topic, version) at once.  The functions taking ``aligned`` read
only its public shape attributes and :meth:`AlignedRuns.judged_positions`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .spec import CWL_DEPTH, MeasureSpec


def zeta(s, q):
    """Hurwitz zeta (``scipy.special.zeta``), imported on first use: importing scipy.special takes
    about 0.2 s, and only the exact (infinite) tails of INSQ and INST need it."""
    from scipy.special import zeta as hurwitz
    return hurwitz(s, q)


if TYPE_CHECKING:  # pragma: no cover
    from .align import AlignedRuns
    from .table import JudgmentTable


def gains(labels: np.ndarray, spec: MeasureSpec) -> np.ndarray:
    """Gain in [0, 1] (binary or scaled graded) for RBP / INST / INSQ / P / RR / AP; 0 when unjudged."""
    with np.errstate(invalid="ignore"):
        if spec.max_rel is not None:
            g = np.clip(labels, 0.0, spec.max_rel) / spec.max_rel
        else:
            g = (labels >= spec.rel).astype(np.float64)
    return np.where(np.isnan(labels), 0.0, g)


def rbp_weights(p: float, length: int) -> np.ndarray:
    """RBP's weight of each 0-based rank, ``(1 - p) p^i`` (Moffat and Zobel 2008, Eq 2): the one
    place the package computes them."""
    return (1.0 - p) * p ** np.arange(length, dtype=np.float64)


def position_weights(spec: MeasureSpec, length: int) -> np.ndarray:
    """Weight of each 0-based position (0 beyond the cutoff) for linear measures."""
    i = np.arange(length, dtype=np.float64)
    if spec.family == "RBP":
        w = rbp_weights(spec.p, length)
    elif spec.family == "P":
        w = np.full(length, 1.0 / spec.cutoff)
    elif spec.family in ("DCG", "nDCG"):
        w = 1.0 / np.log2(i + 2.0)
    elif spec.family == "INSQ":
        # P(i) = (2T / (i + 2T - 1))^2 for 1-based i (C(i) = ((i+2T-1)/(i+2T))^2), normalised
        # over cwl_eval's 1,000 ranks, or over all ranks (Hurwitz zeta) for the exact tail
        two_t = 2.0 * spec.T
        w = 1.0 / (i + two_t) ** 2
        if spec.tail == "cwl":
            w = np.where(i < CWL_DEPTH, w, 0.0) / (1.0 / (np.arange(CWL_DEPTH) + two_t) ** 2).sum()
        else:
            w = w / zeta(2.0, two_t)
    else:
        raise AssertionError(spec.family)
    if spec.cutoff is not None:
        w = np.where(i < spec.cutoff, w, 0.0)
    return w


def inst_utility(G: np.ndarray, spec: MeasureSpec, n_run: np.ndarray, bound: str) -> np.ndarray:
    """INST expected utility per document (Moffat et al. 2015; C/W/L) from a dense gain array
    ``(depth, units, R)`` whose unjudged in-run positions hold the bound's fill (0 lower, 1 upper).

    C(i) = ((i + 2T - S_i - 1) / (i + 2T - S_i))^2; ``tail="cwl"`` normalises over the array's ranks
    (cwl_eval's 1,000), ``tail="exact"`` adds the closed-form infinite tail after each run's ``n_run``
    ranks (Yang 2019, Sec. 2.3).  Ranks are the first axis, so running sums add whole rows."""
    depth = G.shape[0]
    rank_col = np.arange(depth, dtype=np.float64)[:, None, None]
    S = np.cumsum(G, axis=0)
    # x = i + 2T - S_i and C = ((x - 1) / x)^2, with as few full-size temporaries as the same
    # operations allow (in place; x overwrites S where the tail does not need S)
    x = np.subtract(rank_col + 1.0 + 2.0 * spec.T, S, out=S if spec.tail == "cwl" else None)
    C = x - 1.0
    C /= x
    np.square(C, out=C)   # what ** 2 computes
    del x
    P = np.empty_like(G)
    P[0] = 1.0
    np.cumprod(C[:-1], axis=0, out=P[1:])
    if spec.tail == "cwl":
        return np.einsum("ksr,ksr->sr", P, G) / P.sum(axis=0)
    n_units = G.shape[1]
    in_run = np.arange(depth)[:, None] < n_run[None, :]
    P *= in_run[:, :, None]
    n = n_run.astype(np.float64)[:, None]
    idx = np.maximum(n_run - 1, 0)
    ix = np.arange(n_units)
    has = n_run[:, None] > 0
    S_n = np.where(has, S[idx, ix], 0.0)
    C_n = np.where(has, C[idx, ix], 1.0)
    P_n = np.where(has, P[idx, ix], 1.0)
    P_next = P_n * C_n
    if bound == "lower":
        c = 2.0 * spec.T - S_n
        tail_mass = P_next * (n + c) ** 2 * zeta(2.0, n + c)
        tail_gain = 0.0
    else:
        kappa = n + 2.0 * spec.T - S_n
        tail_mass = P_next / (1.0 - ((kappa - 1.0) / kappa) ** 2)
        tail_gain = tail_mass
    return (np.einsum("ksr,ksr->sr", P, G) + tail_gain) / (P.sum(axis=0) + tail_mass)


# ----------------------------------------------------------------------------------------------
# sums over topics and segments


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


def _cumulative_in_segment(aligned: "AlignedRuns", rel: np.ndarray) -> np.ndarray:
    """Running count of relevant judged positions within each segment, inclusive (int32: exact)."""
    j = aligned.judged_positions()
    cs = np.cumsum(rel, axis=0, dtype=np.int32)
    ne = j["nonempty"]
    first = j["indptr"][ne]
    before = cs[first] - rel[first]
    return cs - np.repeat(before, np.diff(j["indptr"])[ne], axis=0)


def _topic_of_segment(aligned: "AlignedRuns") -> np.ndarray:
    return np.tile(np.arange(aligned.n_topics), aligned.n_runs)


# ----------------------------------------------------------------------------------------------
# non-linear measures


def ideal_dcg(aligned: "AlignedRuns", spec: MeasureSpec, g: np.ndarray) -> np.ndarray:
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


def ndcg(aligned: "AlignedRuns", spec: MeasureSpec, dcg: np.ndarray, g: np.ndarray) -> np.ndarray:
    """nDCG (Jarvelin & Kekalainen 2002, trec_eval's ndcg): DCG over the topic's ideal DCG, 0 without relevance."""
    ideal = ideal_dcg(aligned, spec, g)[_topic_of_segment(aligned)]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


def average_precision(aligned: "AlignedRuns", spec: MeasureSpec, g: np.ndarray) -> np.ndarray:
    """Average precision as trec_eval computes it (map / map_cut): sum of precision at each
    relevant retrieved rank over the number of relevant judgments R of the topic.

    Versions are rows here (``(R, judged positions)``, each version's positions contiguous), so the
    running counts and the per-segment sums stream through memory; every value is the one of the
    position-major layout bit for bit (the same integer counts, divisions and sums in order)."""
    j = aligned.judged_positions()
    R = g.shape[1]
    # np.take keeps the result C-ordered (fancy indexing along axis 1 would not)
    rel = np.take(np.ascontiguousarray(g.T) > 0, j["jidx"], axis=1)    # (R, judged positions)
    if spec.cutoff is not None:
        rel[:, j["pos"] >= spec.cutoff] = False
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
        contrib /= aligned.cached("rank1", lambda: j["pos"] + 1.0)   # precision at relevant ranks
        out[ne] = np.add.reduceat(contrib, first, axis=1).T
    n_rel = topic_sum(aligned.table, (g > 0).astype(np.float64))
    denom = n_rel[_topic_of_segment(aligned)]
    return np.where(denom > 0, out / np.where(denom > 0, denom, 1.0), 0.0)


def reciprocal_rank(aligned: "AlignedRuns", spec: MeasureSpec, g: np.ndarray) -> np.ndarray:
    """Reciprocal rank of the first relevant document (trec_eval recip_rank)."""
    j = aligned.judged_positions()
    rel = g[j["jidx"]] > 0
    inv = np.where(rel, 1.0 / (j["pos"][:, None] + 1.0), 0.0)
    if spec.cutoff is not None:
        inv[j["pos"] >= spec.cutoff] = 0.0
    out = np.zeros((aligned.n_segments, g.shape[1]))
    ne = j["nonempty"]
    if len(ne):
        out[ne] = np.maximum.reduceat(inv, j["indptr"][ne], axis=0)
    return out


#: elements (depth x segments x versions) of one chunk of INST's dense C/W/L arrays: the recurrence
#: runs over a thousand segments at a time, so its memory does not grow with the number of rankings.
#: A million (8 MB arrays) rather than four: on TREC-COVID W1 the bounds take about a quarter less
#: time and the process about 70 MB less memory (new pages are slow to fault in), same values
INST_CHUNK_ELEMENTS = 1_000_000


def segment_chunks(n_segments: int, depth: int, R: int, budget: int = INST_CHUNK_ELEMENTS):
    """Consecutive segment ranges ``(a, b)`` whose dense ``(depth, b - a, R)`` array holds at most
    ``budget`` elements (at least one segment per range)."""
    step = max(1, budget // max(depth * R, 1))
    for a in range(0, n_segments, step):
        yield a, min(a + step, n_segments)


def inst_bounds(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray,
                need_upper: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """INST (Moffat et al. 2015) in the C/W/L framework (Azzopardi et al. 2019): (lower, upper or None).

    C(i) = ((i + 2T - S_i - 1) / (i + 2T - S_i))^2 with S_i the gain accumulated to rank i
    inclusive.  Lower bound: unjudged and padded ranks gain 0; upper: they gain 1.
    ``tail="cwl"``: exactly cwl_eval (1,000 ranks, weights normalised over them).
    ``tail="exact"``: the run's own ranks plus the closed-form infinite tail (Yang 2019, Sec. 2.3).
    The dense arrays are built a chunk of segments at a time (:data:`INST_CHUNK_ELEMENTS`); each
    segment's value is computed by the same operations as on the whole array.
    """
    j = aligned.judged_positions()
    R = L.shape[1]
    depth = CWL_DEPTH if spec.tail == "cwl" else max(aligned.max_len, 1)
    g = gains(L, spec)
    judged = ~np.isnan(L)
    ptr = j["indptr"]
    n_run = np.minimum(aligned.seg_len, depth)
    ranks = np.arange(depth)
    results = {}
    for bound in ("lower", "upper") if need_upper else ("lower",):
        fill = 0.0 if bound == "lower" else 1.0
        out = np.empty((aligned.n_segments, R))
        for a, b in segment_chunks(aligned.n_segments, depth, R):
            sl = slice(ptr[a], ptr[b])
            pos = j["pos"][sl]
            ok = pos < depth
            rows_pos, rows_seg, rows_j = pos[ok], j["seg"][sl][ok] - a, j["jidx"][sl][ok]
            G = np.full((depth, b - a, R), fill)
            if spec.tail == "exact":
                G[ranks[:, None] >= n_run[None, a:b]] = 0.0  # beyond the run: handled by the closed-form tail
            G[rows_pos, rows_seg] = np.where(judged[rows_j], g[rows_j], fill)
            out[a:b] = inst_utility(G, spec, n_run[a:b], bound)
            del G
        results[bound] = out
    return results["lower"], results.get("upper")
