"""The C/W/L measures INST (Moffat et al. 2015) and INSQ (Moffat et al. 2012), with residuals
(Azzopardi et al. 2019's cwl_eval; the exact infinite tail of Yang 2019, Sec. 2.3), and the
exact expected INST over the orderings of tied scores (by enumeration: INST has no closed form)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import InputError, check_choice
from ..._vocab import CWL_TAILS
from ..registry import Kernel, register_kernel
from ..spec import CWL_DEPTH
from .common import Labels, gains
from .linear import LinearKernel
from .ties import MAX_ARRANGEMENTS, arranged_positions, expected_over_arrangements, groups, value_key

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["CWL_DEPTH", "INST_MAX_ORDERINGS", "INST_CHUNK_ELEMENTS", "inst_utility", "inst_bounds",
           "segment_chunks", "INSTKernel", "INSQKernel"]

#: ``ties="expected"`` INST enumerates the distinct arrangements of the tied groups of a ranking;
#: a ranking (for one version of the judgments) with more arrangements than this is refused
#: (the limit of every measure enumerated so, :data:`~.ties.MAX_ARRANGEMENTS`).
INST_MAX_ORDERINGS = MAX_ARRANGEMENTS


def zeta(s, q):
    """Hurwitz zeta (``scipy.special.zeta``), imported on first use: scipy.special is slow to
    import, and only the exact (infinite) tails of INSQ and INST need it."""
    from scipy.special import zeta as hurwitz
    return hurwitz(s, q)


def inst_utility(G: np.ndarray, spec: "MeasureSpec", n_run: np.ndarray, bound: str) -> np.ndarray:
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



#: elements (depth x segments x versions) of one chunk of INST's dense C/W/L arrays: the recurrence
#: runs over a thousand segments at a time, so its memory does not grow with the number of rankings.
#: A million (8 MB arrays) rather than more: smaller arrays reuse the pages already faulted in
#: (new pages are slow to fault in), with the same values
INST_CHUNK_ELEMENTS = 1_000_000


def segment_chunks(n_segments: int, depth: int, R: int, budget: int = INST_CHUNK_ELEMENTS):
    """Consecutive segment ranges ``(a, b)`` whose dense ``(depth, b - a, R)`` array holds at most
    ``budget`` elements (at least one segment per range)."""
    step = max(1, budget // max(depth * R, 1))
    for a in range(0, n_segments, step):
        yield a, min(a + step, n_segments)


def inst_bounds(aligned: "AlignedRuns", spec: "MeasureSpec", L: np.ndarray,
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


def _inst_depth(aligned: "AlignedRuns", spec: "MeasureSpec") -> int:
    return CWL_DEPTH if spec.tail == "cwl" else max(aligned.max_len, 1)


def _dense_gains(aligned: "AlignedRuns", spec: "MeasureSpec", positions: np.ndarray, values: np.ndarray,
                 labelled: np.ndarray, fill: float, a: int = 0, b: int | None = None) -> np.ndarray:
    """Dense (depth, b - a, R) gains of segments a..b-1: labelled rows at ``positions``, free in-run
    positions = fill (rows are in segment order, so the segments' rows are one slice)."""
    j = aligned.judged_positions()
    b = aligned.n_segments if b is None else b
    depth = _inst_depth(aligned, spec)
    R = labelled.shape[1]
    G = np.full((depth, b - a, R), fill)
    if spec.tail == "exact":
        G[np.arange(depth)[:, None] >= aligned.seg_len[None, a:b]] = 0.0
    sl = slice(j["indptr"][a], j["indptr"][b])
    positions, values, labelled = positions[sl], values[sl], labelled[sl]
    ok = labelled & (positions < depth) & (positions >= 0)
    rr, cc = np.nonzero(ok)
    G[positions[rr, cc], j["seg"][sl][rr] - a, cc] = values[rr, cc]
    return G


def _inst_tied(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, mode: str) -> np.ndarray:
    grp = groups(aligned)
    j = aligned.judged_positions()
    grow = labels.binary(spec)[j["jidx"]]
    lab = ~np.isnan(labels.L[j["jidx"]])
    n_run = np.minimum(aligned.seg_len, _inst_depth(aligned, spec))
    bounds = ("lower",) if spec.component == "value" else ("lower", "upper")
    # the value, residual and upper columns of one INST share their bounds within a chunk of versions
    cache = labels.memo("tie_inst", dict)
    res = {}
    for bound in bounds:
        key = (mode, bound, spec.T, spec.rel, spec.max_rel, spec.tail)
        if key in cache:
            res[bound] = cache[key]
            continue
        fill = 0.0 if bound == "lower" else 1.0
        if mode == "expected":
            res[bound] = cache[key] = _inst_expected(aligned, spec, grow, lab, fill, bound, n_run)
            continue
        desc = mode == "optimistic"
        if bound == "lower":
            pos = arranged_positions(aligned, grp, value_key(grow), lab, 0.5, desc)
        else:
            pos = arranged_positions(aligned, grp, grow, lab, 1.0, desc)
        out = np.empty((aligned.n_segments, lab.shape[1]))
        for a, b in segment_chunks(aligned.n_segments, _inst_depth(aligned, spec), lab.shape[1]):
            G = _dense_gains(aligned, spec, pos, grow, lab, fill, a, b)
            out[a:b] = inst_utility(G, spec, n_run[a:b], bound)
            del G
        res[bound] = cache[key] = out
    if spec.component == "value":
        return res["lower"]
    if spec.component == "upper":
        return res["upper"]
    return res["upper"] - res["lower"]


def _inst_expected(aligned: "AlignedRuns", spec: "MeasureSpec", grow: np.ndarray, lab: np.ndarray, fill: float,
                   bound: str, n_run: np.ndarray) -> np.ndarray:
    """Exact expected INST bound: the mean over the distinct arrangements of the mixed tied groups
    (:func:`~.ties.expected_over_arrangements`), each evaluated on a dense gain array."""
    def evaluate(G, seg, ver):
        return inst_utility(G[:, :, None], spec, n_run[seg], bound)[:, 0]
    return expected_over_arrangements(aligned, grow, lab, evaluate, family="INST", depth=_inst_depth(aligned, spec),
                                      fill=fill, beyond=0.0 if spec.tail == "exact" else None,
                                      limit=INST_MAX_ORDERINGS, limit_name="INST_MAX_ORDERINGS")


def _check_T(spec: "MeasureSpec") -> None:
    if spec.T is None or not np.isfinite(spec.T) or spec.T <= 0:
        raise InputError(f"{spec.family} needs T > 0, got T={spec.T!r}")
    if spec.family == "INST" and spec.T < 0.25:
        raise InputError(f"INST needs T >= 0.25 for its continuation probabilities to be valid, got {spec.T}")
    check_choice("tail", spec.tail, CWL_TAILS)


class INSQKernel(LinearKernel):
    """INSQ: weights ``P(i) = (2T / (i + 2T - 1))^2`` (1-based i), normalised over cwl_eval's
    1,000 ranks or over all ranks (Hurwitz zeta) for the exact tail; residual = weight not judged."""

    family = "INSQ"
    components = ("value", "residual", "upper")
    uses = frozenset({"T", "rel", "max_rel", "tail"})
    check_params = staticmethod(_check_T)

    def weights(self, spec: "MeasureSpec", length: int) -> np.ndarray:
        i = np.arange(length, dtype=np.float64)
        two_t = 2.0 * spec.T
        w = 1.0 / (i + two_t) ** 2
        if spec.tail == "cwl":
            return np.where(i < CWL_DEPTH, w, 0.0) / (1.0 / (np.arange(CWL_DEPTH) + two_t) ** 2).sum()
        return w / zeta(2.0, two_t)


class INSTKernel(Kernel):
    """INST lower bound (value), upper bound and residual (upper - lower), cwl_eval's or exact tail."""

    family = "INST"
    components = ("value", "residual", "upper")
    uses = frozenset({"T", "rel", "max_rel", "tail"})
    check_params = staticmethod(_check_T)

    def cost(self, aligned: "AlignedRuns", spec: "MeasureSpec") -> int:
        return aligned.n_segments * max(CWL_DEPTH, aligned.max_len)

    def compute(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels) -> np.ndarray:
        key = (spec.T, spec.rel, spec.max_rel, spec.tail)
        # the value, residual and upper columns of one INST share one computation of its bounds
        need_upper = any(s.family == "INST" and (s.T, s.rel, s.max_rel, s.tail) == key and s.component != "value"
                         for s in labels.specs)
        lower, upper = labels.memo(("inst", key), lambda: inst_bounds(aligned, spec, labels.L, need_upper))
        if spec.component == "value":
            return lower
        if upper is None:   # asked outside a full evaluation: compute both
            lower, upper = inst_bounds(aligned, spec, labels.L, True)
        return upper if spec.component == "upper" else upper - lower

    def tied(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, mode: str) -> np.ndarray:
        return _inst_tied(aligned, spec, labels, mode)


register_kernel(INSQKernel())
register_kernel(INSTKernel())
