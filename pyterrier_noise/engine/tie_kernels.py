"""Tie-aware kernels of the evaluation engine: exact expected values and optimistic / pessimistic
orderings of groups of tied scores.

Yang (2019), *Improving the Reliability and Robustness of IR Evaluation*, PhD thesis, Sec. 3.1
("averaging across permutations"; optimistic and pessimistic limits), with McSherry & Najork
(ECIR 2008) for the exact expected AP.

:class:`~pyterrier_noise.engine.AlignedRuns` built with ``ties="expected"``, ``"optimistic"`` or
``"pessimistic"`` orders every ranking by score (docno descending within ties) and records the
tie group ``[group_start, group_end)`` of every position; :meth:`AlignedRuns.evaluate` then calls
:func:`evaluate_tied` for the measures the linear engine cannot do alone.  Every kernel works on
all (run, topic, version) at once: per-group sums with ``reduceat``, harmonic-number tables,
and one sort of the judged positions per ordering -- no Python loop per group, segment or version
(the INST enumeration loops only over blocks of rows and over the positions inside a group).

``"expected"`` -- every ordering of every tied group equally likely:

* AP (McSherry & Najork, exact): a relevant document in the group ``[b, b+l)`` (0-based
  positions) with ``r`` relevant documents in the group and ``c`` before it has, averaged over
  the group's orderings, the precision contribution
  ``(r/l) * sum_{j<m} (c + 1 + j (r-1)/(l-1)) / (b + j + 1)``
  ``= (r/l) * [(c + 1) (H_{b+m} - H_b) + a (m - (b + 1) (H_{b+m} - H_b))]``, ``a = (r-1)/(l-1)``,
  with ``m = l`` (or only the ``m = k - b`` positions above a cutoff ``k``) and ``H`` the
  harmonic numbers; ``E[AP] = sum over groups / R``.  (The thesis's eq. 3.3 is an approximation:
  0.4887 on its Table 3.1, where the exact value is 0.5363; :func:`expected_ap` gives both.)
* RR: the first relevant document lies in the first group ``v`` holding one; its offset ``J`` in
  that group is negative-hypergeometric, ``P(J = j) = C(l-j-1, r-1) / C(l, r)`` (the thesis's
  ``notr`` / ``firstr`` recursion), and ``E[RR] = sum_j P(J = j) / (b + j + 1)`` over the
  positions above the cutoff.
* INST has no closed form: its value is a ratio of two sums whose terms depend on the gain
  accumulated so far, so the expectation does not factor over groups.  It is computed exactly by
  enumerating the distinct arrangements of every tied group whose documents have different gains
  (all other positions are fixed), vectorised over the arrangements; a ranking (for one version
  of the judgments) with more than :data:`INST_MAX_ORDERINGS` distinct arrangements is refused
  with an :class:`~pyterrier_noise._validation.InputError` (use the optimistic and pessimistic bounds
  there).
* The linear measures (RBP, P, DCG, nDCG, INSQ) are exact with the mean weight of each group's
  positions; the engine does that itself, and :func:`evaluate_tied` gives the same numbers.

``"optimistic"`` / ``"pessimistic"`` -- the best and the worst ordering of every group (thesis
Sec. 3.1, item 3):

* the *value* (unjudged documents gain 0, as in trec_eval) uses the ordering with the judged
  documents of higher gain first (optimistic) or last (pessimistic); unjudged documents count as
  non-relevant here for every measure (R and the ideal DCG come
  from the qrels), so without ties every mode gives exactly the trec_eval value;
* the *upper* bound of RBP, INSQ and INST (unjudged documents gain 1: the thesis's "unjudged
  count as relevant for the optimistic bound") uses the ordering with unjudged documents placed as
  if relevant (optimistic: before every judged document of lower gain; pessimistic: after every
  judged document),
  and the *residual* is upper minus value.  With binary gains one ordering attains both extremes
  (optimistic: relevant, unjudged, non-relevant; pessimistic: non-relevant, unjudged, relevant),
  so the residual is the weight of the unjudged positions under that ordering;
* RBP's *projected* value is value / judged weight under the value's ordering.

For RBP, P, DCG, nDCG, INSQ, AP and RR these orderings are the exact extremes over all orderings
(rearrangement).  For INST they are the gain-sorted orderings; brute force finds them extreme for
``T >= 0.5`` but not always for ``T`` near 0.25 with graded gains (for adaptive
measures a heuristic, not a proven extreme).
"""
from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .._validation import InputError
from .kernels import gains, ideal_dcg, inst_utility, position_weights, segment_chunks, segment_sum, topic_sum
from .spec import CWL_DEPTH, MeasureSpec

if TYPE_CHECKING:  # pragma: no cover
    from .align import AlignedRuns

__all__ = ["evaluate_tied", "expected_ap", "INST_MAX_ORDERINGS", "MODES"]

#: the tie modes :func:`evaluate_tied` implements
MODES = ("expected", "optimistic", "pessimistic")

#: ``ties="expected"`` INST enumerates the distinct arrangements of the tied groups of a ranking;
#: a ranking (for one version of the judgments) with more arrangements than this is refused.
INST_MAX_ORDERINGS = 10_000

# temporaries of the enumeration and expansion steps are kept near this many float64 values
_BUDGET = 4_000_000


# ------------------------------------------------------------------------------------------------
# group structure (depends only on the aligned runs; cached on them)

def _groups(aligned: "AlignedRuns") -> dict:
    """Tie groups holding at least one judged position, in (segment, position) order.

    ``gid[i]``: group of judged row i; ``gfirst``: first judged row of each group; ``gseg``,
    ``gb``, ``gl``: segment, start position and length (all positions, judged or not) of each
    group; ``gptr``: CSR pointer from segments to groups; ``multi_rows``: the judged rows in groups
    of two or more positions; ``first_in_multi``: index, among ``multi_rows``, of each such group's
    first row (-1 for single-position groups).
    """
    c = aligned._cache.get("tie_groups")
    if c is None:
        j = aligned.judged_positions()
        seg, gs, ge = j["seg"], j["gstart"], j["gend"]
        n = len(seg)
        new = np.ones(n, dtype=bool)
        if n:
            new[1:] = (seg[1:] != seg[:-1]) | (gs[1:] != gs[:-1])
        gfirst = np.flatnonzero(new)
        gid = np.cumsum(new) - 1
        gseg = seg[gfirst]
        gb = gs[gfirst].astype(np.int64)
        gl = (ge - gs)[gfirst].astype(np.int64)
        gptr = np.zeros(aligned.n_segments + 1, dtype=np.int64)
        np.cumsum(np.bincount(gseg, minlength=aligned.n_segments), out=gptr[1:])
        multi_rows = np.flatnonzero(gl[gid] > 1)
        # index (among multi_rows) of the first row of each multi-document group
        first_in_multi = np.full(len(gfirst), -1, dtype=np.int64)
        if len(multi_rows):
            mg = gid[multi_rows]
            starts = np.flatnonzero(np.r_[True, mg[1:] != mg[:-1]])
            first_in_multi[mg[starts]] = starts
        c = dict(gid=gid, gfirst=gfirst, gseg=gseg, gb=gb, gl=gl, gptr=gptr, multi_rows=multi_rows,
                 first_in_multi=first_in_multi, n_groups=len(gfirst))
        aligned._cache["tie_groups"] = c
    return c


def _group_sum(grp: dict, x: np.ndarray) -> np.ndarray:
    """Sum rows (judged positions) of ``x`` (n_rows, R) over each group -> (n_groups, R)."""
    if grp["n_groups"] == 0:
        return np.zeros((0, x.shape[1]))
    return np.add.reduceat(x, grp["gfirst"], axis=0)


def _segment_total(aligned: "AlignedRuns", grp: dict, per_group: np.ndarray) -> np.ndarray:
    """Sum a (n_groups, R) array over the groups of each segment -> (n_segments, R)."""
    out = np.zeros((aligned.n_segments, per_group.shape[1]))
    ne = np.flatnonzero(np.diff(grp["gptr"]) > 0)
    if len(ne):
        out[ne] = np.add.reduceat(per_group, grp["gptr"][ne], axis=0)
    return out


def _before_in_segment(grp: dict, per_group: np.ndarray) -> np.ndarray:
    """Exclusive running sum of a (n_groups, R) array over the earlier groups of the same segment."""
    if grp["n_groups"] == 0:
        return per_group.copy()
    cs = np.cumsum(per_group, axis=0) - per_group
    return cs - cs[grp["gptr"][grp["gseg"]]]


def _harmonic(n: np.ndarray) -> np.ndarray:
    """Harmonic numbers H_n = psi(n + 1) + gamma (H_0 = 0), accurate for any n >= 0."""
    from scipy.special import digamma   # on first use: scipy.special takes about 0.1 s to import
    return digamma(np.asarray(n, dtype=np.float64) + 1.0) + np.euler_gamma


# ------------------------------------------------------------------------------------------------
# orderings

def _arranged_positions(aligned: "AlignedRuns", grp: dict, key: np.ndarray, labelled: np.ndarray,
                        free_key: float, descending: bool) -> np.ndarray:
    """Position of every labelled judged row when each tied group is sorted by ``key``.

    Within a group the labelled rows are sorted by ``key`` (descending or ascending) and the
    group's free slots (positions without a label in that version: unjudged documents) form one
    block with key ``free_key``, placed before a labelled row only when ``free_key`` sorts
    strictly before the row's key.  Rows in single-document groups keep their position.
    Returns (n_rows, R) int64; unlabelled rows get -1.
    """
    j = aligned.judged_positions()
    n, R = labelled.shape
    newpos = np.repeat(j["pos"][:, None], R, axis=1)
    mr = grp["multi_rows"]
    if len(mr):
        m = len(mr)
        gid = grp["gid"][mr]
        s = np.where(labelled[mr], -key[mr] if descending else key[mr], np.inf)  # unlabelled last
        comb = (np.arange(R, dtype=np.int64)[:, None] * grp["n_groups"] + gid[None, :]).ravel()
        order = np.lexsort((s.T.ravel(), comb))
        rank = np.empty(m * R, dtype=np.int64)
        rank[order] = np.arange(m * R, dtype=np.int64)
        block = (np.arange(R, dtype=np.int64)[:, None] * m + grp["first_in_multi"][gid][None, :]).ravel()
        rank = (rank - block).reshape(R, m).T                              # rank within (group, version)
        n_lab = _group_sum(grp, labelled.astype(np.float64)).astype(np.int64)[gid]   # (m, R)
        free = grp["gl"][gid][:, None] - n_lab
        free_first = (free_key > key[mr]) if descending else (free_key < key[mr])
        newpos[mr] = grp["gb"][gid][:, None] + rank + np.where(free_first, free, 0)
    return np.where(labelled, newpos, -1)


def _value_key(gain: np.ndarray) -> np.ndarray:
    """Sort key of the value ordering: positive gains by size, then unjudged (key 0.5), then zeros."""
    return np.where(gain > 0, 1.0 + gain, 0.0)


# ------------------------------------------------------------------------------------------------
# labels -> gains

def _row_gains(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gains over the table (J, R), over the judged rows (n_rows, R), and the labelled mask of the rows."""
    j = aligned.judged_positions()
    if spec.family in ("nDCG", "DCG"):
        g = np.where(np.isnan(L), 0.0, np.maximum(L, 0.0))     # trec_eval's linear gains
    else:
        g = gains(L, spec)
    labelled = ~np.isnan(L[j["jidx"]])
    return g, g[j["jidx"]], labelled


# ------------------------------------------------------------------------------------------------
# the entry point

def evaluate_tied(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray, mode: str) -> np.ndarray:
    """Tie-aware value of one measure for every (run, topic, version) of aligned runs.

    Yang (2019) thesis Sec. 3.1 (expected value over all orderings of the tied groups; the
    optimistic and pessimistic orderings), McSherry & Najork (2008) for the exact expected AP;
    the module docstring gives the formulas and how unjudged documents are placed.

    Args:
        aligned: runs aligned with tie groups (``AlignedRuns.build(..., ties="expected" |
            "optimistic" | "pessimistic")``; with another policy every group is a single
            position and every mode gives that policy's value).
        spec: the measure (any family and component the engine accepts).
        L: label matrix ``(n_judgments, R)`` over ``aligned.table`` (NaN = unjudged).
        mode: ``"expected"``, ``"optimistic"`` or ``"pessimistic"``.

    Returns:
        Array ``(aligned.n_segments, R)`` (segment = run_index * n_topics + topic_index).

    Raises:
        InputError: unknown mode, a label matrix of the wrong shape, or (INST, ``"expected"``) a
            ranking with more than :data:`INST_MAX_ORDERINGS` distinct arrangements.
    """
    if mode not in MODES:
        raise InputError(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(spec, MeasureSpec):
        raise InputError(f"spec must be a MeasureSpec, got {type(spec).__name__}")
    spec = spec.validate()
    L = np.asarray(L, dtype=np.float64)
    if L.ndim != 2 or L.shape[0] != len(aligned.table):
        raise InputError(f"L must be a label matrix of shape (n_judgments={len(aligned.table)}, R), got {L.shape}")
    fam = spec.family
    if fam == "AP":
        return _ap(aligned, spec, L, mode)
    if fam == "RR":
        return _rr(aligned, spec, L, mode)
    if fam == "INST":
        return _inst(aligned, spec, L, mode)
    return _linear(aligned, spec, L, mode)


# ------------------------------------------------------------------------------------------------
# AP and RR (binary relevance: gain > 0, as trec_eval's relevance level)

def _relevance(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray):
    g = gains(L, spec)
    j = aligned.judged_positions()
    grp = _groups(aligned)
    rel = (g[j["jidx"]] > 0).astype(np.float64)
    r = _group_sum(grp, rel)                       # relevant documents in each group
    return g, grp, r


def _ap(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray, mode: str) -> np.ndarray:
    """AP (trec_eval map / map_cut semantics) -- expected (McSherry & Najork), best or worst ordering."""
    g, grp, r = _relevance(aligned, spec, L)
    b = grp["gb"][:, None].astype(np.float64)
    l = grp["gl"][:, None].astype(np.float64)
    c = _before_in_segment(grp, r)                  # relevant documents before the group
    k = np.inf if spec.cutoff is None else float(spec.cutoff)
    if mode == "expected":
        m = np.clip(np.minimum(l, k - b), 0.0, None)
        dH = _harmonic(b + m) - _harmonic(b)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(l > 1, (r - 1.0) / np.where(l > 1, l - 1.0, 1.0), 0.0)
        contrib = (r / l) * ((c + 1.0) * dH + a * (m - (b + 1.0) * dH))
    else:
        # the r relevant documents take the first (optimistic) or last (pessimistic) r places:
        # sum_{t<m} (c + t + 1) / (p0 + t + 1) = m + (c - p0) (H_{p0+m} - H_{p0})
        p0 = b if mode == "optimistic" else b + l - r
        m = np.clip(np.minimum(r, k - p0), 0.0, None)
        contrib = m + (c - p0) * (_harmonic(p0 + m) - _harmonic(p0))
    contrib = np.where(r > 0, contrib, 0.0)
    num = _segment_total(aligned, grp, contrib)
    n_rel = topic_sum(aligned.table, (g > 0).astype(np.float64))
    denom = n_rel[np.tile(np.arange(aligned.n_topics), aligned.n_runs)]
    return np.where(denom > 0, num / np.where(denom > 0, denom, 1.0), 0.0)


def _rr(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray, mode: str) -> np.ndarray:
    """Reciprocal rank (trec_eval recip_rank) -- expected over the first group holding a relevant
    document (thesis Sec. 3.3, notr / firstr), best or worst ordering."""
    _, grp, r = _relevance(aligned, spec, L)
    n_seg, R = aligned.n_segments, L.shape[1]
    out = np.zeros((n_seg, R))
    G = grp["n_groups"]
    if G == 0:
        return out
    idx = np.where(r > 0, np.arange(G)[:, None], G)
    ne = np.flatnonzero(np.diff(grp["gptr"]) > 0)
    first = np.full((n_seg, R), G, dtype=np.int64)
    first[ne] = np.minimum.reduceat(idx, grp["gptr"][ne], axis=0)
    s, v = np.nonzero(first < G)                    # (segment, version) with a relevant document
    fg = first[s, v]
    b, l, rv = grp["gb"][fg], grp["gl"][fg], r[fg, v].astype(np.int64)
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
        hi = max(int(np.searchsorted(cum, (cum[lo - 1] if lo else 0) + _BUDGET, side="right")), lo + 1)
        cnt = n_off[lo:hi]
        unit = np.repeat(np.arange(lo, hi), cnt)
        if len(unit):
            start = np.repeat(np.cumsum(cnt) - cnt, cnt)
            off = np.arange(len(unit)) - start
            lu, ru, bu = l[unit].astype(np.float64), rv[unit].astype(np.float64), b[unit]
            # P(J = j) = C(l - j - 1, r - 1) / C(l, r)
            logp = (_log_comb(lu - off - 1.0, ru - 1.0) - _log_comb(lu, ru))
            term = np.exp(logp) / (bu + off + 1.0)
            vals[lo:hi] = np.bincount(unit - lo, weights=term, minlength=hi - lo)
        lo = hi
    out[s, v] = vals
    return out


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


# ------------------------------------------------------------------------------------------------
# linear measures: RBP, P, DCG, nDCG, INSQ

def _linear(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray, mode: str) -> np.ndarray:
    j = aligned.judged_positions()
    grp = _groups(aligned)
    length = max(aligned.max_len, 1)
    w = position_weights(spec, length)
    g, grow, lab = _row_gains(aligned, spec, L)
    labf = lab.astype(np.float64)

    if mode == "expected":
        tail = np.zeros(length + 1)
        tail[:-1] = np.cumsum(w[::-1])[::-1]
        glen = j["gend"] - j["gstart"]
        w_row = np.where(glen == 1, w[j["pos"]], (tail[j["gstart"]] - tail[j["gend"]]) / glen)[:, None]
        w_val = w_up = w_row
        g_up = grow
    else:
        desc = mode == "optimistic"
        pos_v = _arranged_positions(aligned, grp, _value_key(grow), lab, 0.5, desc)
        w_val = np.where(lab, w[np.maximum(pos_v, 0)], 0.0)
        w_up = None
        if spec.component in ("residual", "upper"):
            pos_u = _arranged_positions(aligned, grp, grow, lab, 1.0, desc)
            w_up = np.where(lab, w[np.maximum(pos_u, 0)], 0.0)
        g_up = grow

    def seg_sum(x):
        return segment_sum(aligned, x)

    value = seg_sum(w_val * grow * labf)
    if spec.component == "value":
        if spec.family == "nDCG":
            ideal = ideal_dcg(aligned, spec, g)[np.tile(np.arange(aligned.n_topics), aligned.n_runs)]
            return np.where(ideal > 0, value / np.where(ideal > 0, ideal, 1.0), 0.0)
        return value
    if spec.component == "projected":
        mass = seg_sum(w_val * labf)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mass > 0, value / np.where(mass > 0, mass, 1.0), np.nan)
    mass_u = seg_sum(w_up * labf)
    upper = seg_sum(w_up * g_up * labf) + np.maximum(1.0 - mass_u, 0.0)
    if spec.component == "upper":
        return upper
    return np.maximum(upper - value, 0.0)   # residual


# ------------------------------------------------------------------------------------------------
# INST (C/W/L, Moffat et al. 2015; Azzopardi et al. 2019) -- mirrors kernels.inst_bounds

def _inst_depth(aligned: "AlignedRuns", spec: MeasureSpec) -> int:
    return CWL_DEPTH if spec.tail == "cwl" else max(aligned.max_len, 1)


def _inst_eu(G: np.ndarray, spec: MeasureSpec, n_run: np.ndarray, bound: str) -> np.ndarray:
    """INST expected utility from a dense gain array: the engine's recurrence (one implementation)."""
    return inst_utility(G, spec, n_run, bound)


def _dense_gains(aligned: "AlignedRuns", spec: MeasureSpec, positions: np.ndarray, values: np.ndarray,
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


def _inst(aligned: "AlignedRuns", spec: MeasureSpec, L: np.ndarray, mode: str) -> np.ndarray:
    grp = _groups(aligned)
    g, grow, lab = _row_gains(aligned, spec, L)
    n_run = np.minimum(aligned.seg_len, _inst_depth(aligned, spec))
    bounds = ("lower",) if spec.component == "value" else ("lower", "upper")
    # the value, residual and upper columns of one INST share their bounds: keep the bounds of the
    # latest label matrix, recognised by a digest of its contents (cheap next to INST itself)
    digest = (L.shape, hashlib.blake2b(np.ascontiguousarray(L).data, digest_size=16).digest())
    cache = aligned._cache.get("tie_inst")
    if cache is None or cache["digest"] != digest:
        cache = aligned._cache["tie_inst"] = {"digest": digest}
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
            pos = _arranged_positions(aligned, grp, _value_key(grow), lab, 0.5, desc)
        else:
            pos = _arranged_positions(aligned, grp, grow, lab, 1.0, desc)
        out = np.empty((aligned.n_segments, lab.shape[1]))
        for a, b in segment_chunks(aligned.n_segments, _inst_depth(aligned, spec), lab.shape[1]):
            G = _dense_gains(aligned, spec, pos, grow, lab, fill, a, b)
            out[a:b] = _inst_eu(G, spec, n_run[a:b], bound)
            del G
        res[bound] = cache[key] = out
    if spec.component == "value":
        return res["lower"]
    if spec.component == "upper":
        return res["upper"]
    return res["upper"] - res["lower"]


def _inst_expected(aligned: "AlignedRuns", spec: MeasureSpec, grp: dict, grow: np.ndarray, lab: np.ndarray,
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
    n_lab = _group_sum(grp, lab.astype(np.float64)).astype(np.int64)
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
    rows_per_chunk = max(1, _BUDGET // depth)
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
        eu = _inst_eu(Grows[:, :, None], spec, n_run[useg], bound)[:, 0]
        starts = np.r_[0, np.cumsum(n_rows_u)[:-1]]
        out[lo:hi] = np.add.reduceat(eu, starts) / n_rows_u
        lo = hi
    return out.reshape(n_seg, R)


# ------------------------------------------------------------------------------------------------
# a single ranking: expected AP by the exact form or the thesis's approximation

def expected_ap(gains_in_ranked_order: Sequence[float] | np.ndarray, group_ids: Sequence[object] | np.ndarray,
                n_relevant: int, cutoff: int | None = None, formula: str = "exact") -> float:
    """Expected AP of one ranking over all orderings of its tied groups.

    ``formula="exact"``: McSherry & Najork (2008), the closed form in the module docstring (equal
    to :func:`~pyterrier_noise.ties.expected_by_enumeration`: 0.536323 on Yang's Table 3.1).
    ``formula="thesis"``: Yang (2019) thesis eq. 3.3, ``(1/R) sum_{i<=k} (enr(i)/i)(R_g/l_g)``, an
    approximation that ignores that rank ``i`` is itself relevant (0.488668 on Table 3.1, against
    the exact 0.5363); kept only to reproduce the thesis.

    Args:
        gains_in_ranked_order: gain of each rank, rank 1 first (relevant iff > 0).
        group_ids: tie-group label of each rank; equal labels must be contiguous.
        n_relevant: R, the number of relevant documents of the topic (> 0).
        cutoff: evaluate AP@cutoff (positions past it do not count).
        formula: ``"exact"`` or ``"thesis"``.
    """
    gains = np.asarray(gains_in_ranked_order, dtype=np.float64)
    ids = np.asarray(group_ids, dtype=object)
    if gains.ndim != 1 or ids.shape != gains.shape or len(gains) == 0:
        raise InputError("gains_in_ranked_order and group_ids must be non-empty one-dimensional sequences of the "
                         f"same length (got {gains.shape} and {ids.shape})")
    if not np.isfinite(gains).all():
        raise InputError("gains_in_ranked_order must be finite")
    if isinstance(n_relevant, bool) or not isinstance(n_relevant, (int, np.integer)) or n_relevant <= 0:
        raise InputError(f"n_relevant must be a positive integer, got {n_relevant!r}")
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, (int, np.integer)) or cutoff <= 0):
        raise InputError(f"cutoff must be a positive integer or None, got {cutoff!r}")
    if formula not in ("exact", "thesis"):
        raise InputError(f"formula must be 'exact' or 'thesis', got {formula!r}")
    import pandas as pd
    codes = pd.factorize(pd.Series(ids))[0]
    new = np.r_[True, codes[1:] != codes[:-1]]
    starts = np.flatnonzero(new)
    if len(starts) != codes.max() + 1:
        raise InputError("group_ids: each tied group must occupy consecutive ranks")
    lengths = np.diff(np.r_[starts, len(gains)])
    rel = (gains > 0).astype(np.float64)
    r = np.add.reduceat(rel, starts)
    c = np.cumsum(r) - r
    b, l = starts.astype(np.float64), lengths.astype(np.float64)
    k = np.inf if cutoff is None else float(cutoff)
    if formula == "exact":
        m = np.clip(np.minimum(l, k - b), 0.0, None)
        dH = _harmonic(b + m) - _harmonic(b)
        a = np.where(l > 1, (r - 1.0) / np.maximum(l - 1.0, 1.0), 0.0)
        total = np.sum(np.where(r > 0, (r / l) * ((c + 1.0) * dH + a * (m - (b + 1.0) * dH)), 0.0))
    else:
        gid = np.repeat(np.arange(len(starts)), lengths)
        i = np.arange(1, len(gains) + 1, dtype=np.float64)
        frac = (r / l)[gid]
        enr = c[gid] + frac * (i - b[gid])            # thesis eq. 3.1
        total = np.sum(np.where(i <= k, enr / i * frac, 0.0))
    return float(total / n_relevant)
