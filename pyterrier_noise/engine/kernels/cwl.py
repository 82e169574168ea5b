"""The C/W/L measures INST (Moffat et al. 2015) and INSQ (Moffat et al. 2012), with residuals
(Azzopardi et al. 2019's cwl_eval; the exact infinite tail of Yang 2019, Sec. 2.3), and the
exact expected INST over the orderings of tied scores (by enumeration: INST has no closed form)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import InputError, check_choice
from ..._vocab import CWL_TAILS
from ..registry import Kernel, register_kernel
from ..spec import CWL_DEPTH
from .common import Labels, gains
from .linear import LinearKernel
from .ties import BUDGET, arranged_positions, group_sum, groups, value_key

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["CWL_DEPTH", "INST_MAX_ORDERINGS", "INST_CHUNK_ELEMENTS", "inst_utility", "inst_bounds",
           "segment_chunks", "INSTKernel", "INSQKernel"]

#: ``ties="expected"`` INST enumerates the distinct arrangements of the tied groups of a ranking;
#: a ranking (for one version of the judgments) with more arrangements than this is refused.
INST_MAX_ORDERINGS = 10_000


def zeta(s, q):
    """Hurwitz zeta (``scipy.special.zeta``), imported on first use: importing scipy.special takes
    about 0.2 s, and only the exact (infinite) tails of INSQ and INST need it."""
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
#: A million (8 MB arrays) rather than four: on TREC-COVID W1 the bounds take about a quarter less
#: time and the process about 70 MB less memory (new pages are slow to fault in), same values
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
            res[bound] = cache[key] = _inst_expected(aligned, spec, grp, grow, lab, fill, bound, n_run)
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


def _inst_expected(aligned: "AlignedRuns", spec: "MeasureSpec", grp: dict, grow: np.ndarray, lab: np.ndarray,
                   fill: float, bound: str, n_run: np.ndarray) -> np.ndarray:
    """Exact expected INST bound by enumerating the distinct arrangements of the mixed tied groups.

    A group is *mixed* in a version when its documents (labelled gains and unjudged slots with
    gain ``fill``) do not all have the same gain; only mixed groups have more than one distinct
    arrangement.  Each ranking-version gets one row per combination of arrangements (every
    distinct arrangement of a multiset is equally likely), rows are evaluated together on a dense
    (depth, rows) array, and averaged.
    """
    j = aligned.judged_positions()
    n_seg, R = aligned.n_segments, lab.shape[1]
    depth = _inst_depth(aligned, spec)
    pos_all = np.repeat(j["pos"][:, None], R, axis=1)

    # --- the multiset of gains of every (multi-document group, version) -------------------------
    gl, gb = grp["gl"], grp["gb"]
    cand = np.flatnonzero((gl > 1) & (gb < depth))          # groups that can move a gain
    mr = grp["multi_rows"]
    keep = np.isin(grp["gid"][mr], cand) if len(cand) else np.zeros(len(mr), dtype=bool)
    rows = mr[keep]
    # entries (version, group, value, weight): labelled rows weigh 1, the free slots of a group
    # are one entry of weight (l - #labelled) with value fill
    n_lab = group_sum(grp, lab.astype(np.float64)).astype(np.int64)
    rr, vv = np.nonzero(lab[rows])
    e_ver = np.concatenate([vv, np.repeat(np.arange(R), len(cand))])
    e_grp = np.concatenate([grp["gid"][rows][rr], np.tile(cand, R)])
    e_val = np.concatenate([grow[rows][rr, vv], np.full(len(cand) * R, fill)])
    e_w = np.concatenate([np.ones(len(rr), dtype=np.int64),
                          (gl[cand][None, :] - n_lab[cand].T).ravel()])
    nz = e_w > 0
    e_ver, e_grp, e_val, e_w = e_ver[nz], e_grp[nz], e_val[nz], e_w[nz]
    order = np.lexsort((e_val, e_grp, e_ver))
    e_ver, e_grp, e_val, e_w = e_ver[order], e_grp[order], e_val[order], e_w[order]
    if len(e_ver):
        new_item = np.r_[True, (e_ver[1:] != e_ver[:-1]) | (e_grp[1:] != e_grp[:-1])]
        new_val = new_item | np.r_[True, e_val[1:] != e_val[:-1]]
    else:
        new_item = new_val = np.zeros(0, dtype=bool)
    vstart = np.flatnonzero(new_val)                          # distinct (version, group, value)
    v_count = np.add.reduceat(e_w, vstart) if len(vstart) else np.zeros(0, dtype=np.int64)
    v_val = e_val[vstart]
    v_item = np.cumsum(new_item)[vstart] - 1
    istart = np.flatnonzero(new_item)
    i_ver, i_grp = e_ver[istart], e_grp[istart]
    n_items = len(istart)
    i_nval = np.bincount(v_item, minlength=n_items)
    mixed = i_nval > 1
    # number of distinct arrangements: l! / prod(count!)
    from scipy.special import gammaln
    log_arr = gammaln(gl[i_grp] + 1.0) - np.bincount(v_item, weights=gammaln(v_count + 1.0), minlength=n_items)
    log_arr = np.where(mixed, log_arr, 0.0)

    # --- arrangements per (segment, version) ------------------------------------------------
    i_seg = grp["gseg"][i_grp]
    unit_of_item = i_seg * R + i_ver                          # unit = (segment, version)
    log_unit = np.bincount(unit_of_item, weights=log_arr, minlength=n_seg * R)
    too_many = log_unit > math.log(INST_MAX_ORDERINGS) + 1e-9
    if too_many.any():
        u = int(np.argmax(log_unit))
        s_, v_ = divmod(u, R)
        run, t = divmod(s_, aligned.n_topics)
        raise InputError(
            f"ties='expected' for INST: run {aligned.run_names[run]!r}, qid {aligned.topics[t]!r} (label version "
            f"{v_}) has about {math.exp(log_unit[u]):.3g} distinct orderings of its tied groups, more than "
            f"INST_MAX_ORDERINGS = {INST_MAX_ORDERINGS:,} ({int(too_many.sum())} ranking-version(s) in all); INST "
            f"has no closed form, so its expectation is enumerated -- use ties='optimistic' / 'pessimistic' for "
            f"bounds, or break the ties")
    n_arr_item = np.where(mixed, np.rint(np.exp(log_arr)), 1).astype(np.int64)
    mixed_items = np.flatnonzero(mixed)
    n_arr_unit = np.ones(n_seg * R, dtype=np.int64)
    np.multiply.at(n_arr_unit, unit_of_item[mixed_items], n_arr_item[mixed_items])

    # mixed items ordered by unit; their position within the unit gives the mixed-radix stride
    mi = mixed_items[np.argsort(unit_of_item[mixed_items], kind="stable")]
    mi_unit = unit_of_item[mi]
    mi_first = np.r_[True, mi_unit[1:] != mi_unit[:-1]] if len(mi) else np.zeros(0, dtype=bool)
    mi_k = np.arange(len(mi)) - np.maximum.accumulate(np.where(mi_first, np.arange(len(mi)), 0)) if len(mi) else mi
    stride = np.ones(len(mi), dtype=np.int64)
    for t in range(1, int(mi_k.max()) + 1 if len(mi) else 0):   # at most log2(INST_MAX_ORDERINGS) items
        at = np.flatnonzero(mi_k == t)
        stride[at] = stride[at - 1] * n_arr_item[mi[at - 1]]
    # padded multisets of the mixed items: values and counts (n_mi, V)
    V = int(i_nval[mi].max()) if len(mi) else 1
    vptr = np.r_[0, np.cumsum(i_nval)]
    col = np.arange(V)
    vidx = vptr[mi][:, None] + col[None, :]
    valid = col[None, :] < i_nval[mi][:, None]
    vidx = np.where(valid, vidx, 0)
    mvals = np.where(valid, v_val[vidx] if len(v_val) else 0.0, 0.0)
    mcnts = np.where(valid, v_count[vidx] if len(v_count) else 0, 0).astype(np.int64)
    # items of each unit as a CSR over units
    uptr = np.zeros(n_seg * R + 1, dtype=np.int64)
    np.cumsum(np.bincount(mi_unit, minlength=n_seg * R), out=uptr[1:])

    # --- evaluate the rows in chunks of units ---------------------------------------------------
    out = np.empty(n_seg * R)
    rows_per_chunk = max(1, BUDGET // depth)
    cum_rows = np.cumsum(n_arr_unit)
    lo = 0
    n_units = n_seg * R
    while lo < n_units:
        base = cum_rows[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(cum_rows, base + rows_per_chunk, side="right")), lo + 1)
        units = np.arange(lo, hi)
        n_rows_u = n_arr_unit[units]
        row_unit = np.repeat(units, n_rows_u)
        q = np.arange(len(row_unit)) - np.repeat(np.cumsum(n_rows_u) - n_rows_u, n_rows_u)
        useg, uver = np.divmod(row_unit, R)
        s0 = int(useg[0])
        Grows = _dense_gains(aligned, spec, pos_all, grow, lab, fill, s0, int(useg[-1]) + 1)[:, useg - s0, uver]
        # (row, mixed item) pairs
        n_it = uptr[row_unit + 1] - uptr[row_unit]
        prow = np.repeat(np.arange(len(row_unit)), n_it)
        pitem = uptr[row_unit][prow] + (np.arange(len(prow)) - np.repeat(np.cumsum(n_it) - n_it, n_it))
        if len(prow):
            kk = (q[prow] // stride[pitem]) % n_arr_item[mi[pitem]]
            cnt = mcnts[pitem].copy()
            vals = mvals[pitem]
            lgrp = gl[i_grp[mi[pitem]]]
            bgrp = gb[i_grp[mi[pitem]]]
            M = n_arr_item[mi[pitem]].copy()
            # unrank each arrangement (multiset permutation), one position of the groups at a time
            for step in range(int(lgrp.max())):
                act = np.flatnonzero(lgrp > step)
                n_rem = (lgrp[act] - step)[:, None]
                blocks = M[act][:, None] * cnt[act] // n_rem
                cum = np.cumsum(blocks, axis=1)
                choice = np.argmax(cum > kk[act][:, None], axis=1)
                before = np.take_along_axis(cum - blocks, choice[:, None], axis=1)[:, 0]
                kk[act] -= before
                M[act] = blocks[np.arange(len(act)), choice]
                cnt[act, choice] -= 1
                p = bgrp[act] + step
                inside = p < depth
                Grows[p[inside], prow[act][inside]] = vals[act[inside], choice[inside]]
        eu = inst_utility(Grows[:, :, None], spec, n_run[useg], bound)[:, 0]
        starts = np.r_[0, np.cumsum(n_rows_u)[:-1]]
        out[lo:hi] = np.add.reduceat(eu, starts) / n_rows_u
        lo = hi
    return out.reshape(n_seg, R)


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
