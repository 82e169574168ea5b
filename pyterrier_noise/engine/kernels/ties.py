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
(the enumeration of arrangements loops only over blocks of rows and over the positions inside a
group).

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
* INST, ERR and IPrec have no closed form: INST's value is a ratio of two sums whose terms depend
  on the gain accumulated so far, ERR's cascade (Chapelle et al. 2009) multiplies the chances of
  going on past every earlier rank, IPrec is a maximum over ranks; the expectation does not
  factor over groups.  :func:`expected_over_arrangements` computes it exactly by enumerating the
  distinct arrangements of every tied group whose documents have different gains (all other
  positions are fixed), vectorised over the arrangements, with the measure's dense evaluator; a
  ranking (for one version of the judgments) with more than :data:`MAX_ARRANGEMENTS` distinct
  arrangements is refused with an :class:`~pyterrier_noise._validation.InputError` (use the
  optimistic and pessimistic bounds there).
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

import math
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..._validation import InputError
from ..._vocab import GROUPED_POLICIES
from .common import Labels, condensed_positions, segment_sum, suffix_sums

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["MODES", "BUDGET", "groups", "group_sum", "segment_total", "before_in_segment", "harmonic",
           "arranged_positions", "in_arranged_order", "condensed_groups", "condensed_arranged_positions",
           "value_key", "log_comb", "MAX_ARRANGEMENTS", "dense_rows", "expected_over_arrangements", "linear_tied",
           "expected_ap"]

#: the grouped tie policies (the kernels' ``tied`` modes)
MODES = GROUPED_POLICIES

# temporaries of the enumeration and expansion steps are kept near this many float64 values
BUDGET = 4_000_000

#: ``ties="expected"`` of a measure without a closed form (INST, ERR, IPrec) enumerates the distinct
#: arrangements of the tied groups of a ranking; a ranking (for one version of the judgments) with
#: more arrangements than this is refused
MAX_ARRANGEMENTS = 10_000


# ------------------------------------------------------------------------------------------------
# group structure (depends only on the aligned runs; cached on them)

def groups(aligned: "AlignedRuns") -> dict:
    """Tie groups holding at least one judged position, in (segment, position) order.

    ``gid[i]``: group of judged row i; ``gfirst``: first judged row of each group; ``gseg``,
    ``gb``, ``gl``: segment, start position and length (all positions, judged or not) of each
    group; ``gptr``: CSR pointer from segments to groups; ``multi_rows``: the judged rows in groups
    of two or more positions; ``first_in_multi``: index, among ``multi_rows``, of each such group's
    first row (-1 for single-position groups).
    """
    return aligned.cached("tie_groups", lambda: _make_groups(aligned))


def _make_groups(aligned: "AlignedRuns") -> dict:
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
    return dict(gid=gid, gfirst=gfirst, gseg=gseg, gb=gb, gl=gl, gptr=gptr, multi_rows=multi_rows,
                first_in_multi=first_in_multi, n_groups=len(gfirst))


def group_sum(grp: dict, x: np.ndarray) -> np.ndarray:
    """Sum rows (judged positions) of ``x`` (n_rows, R) over each group -> (n_groups, R)."""
    if grp["n_groups"] == 0:
        return np.zeros((0, x.shape[1]))
    return np.add.reduceat(x, grp["gfirst"], axis=0)


def segment_total(aligned: "AlignedRuns", grp: dict, per_group: np.ndarray) -> np.ndarray:
    """Sum a (n_groups, R) array over the groups of each segment -> (n_segments, R)."""
    out = np.zeros((aligned.n_segments, per_group.shape[1]))
    ne = np.flatnonzero(np.diff(grp["gptr"]) > 0)
    if len(ne):
        out[ne] = np.add.reduceat(per_group, grp["gptr"][ne], axis=0)
    return out


def before_in_segment(grp: dict, per_group: np.ndarray) -> np.ndarray:
    """Exclusive running sum of a (n_groups, R) array over the earlier groups of the same segment."""
    if grp["n_groups"] == 0:
        return per_group.copy()
    cs = np.cumsum(per_group, axis=0) - per_group
    return cs - cs[grp["gptr"][grp["gseg"]]]


def harmonic(n: np.ndarray) -> np.ndarray:
    """Harmonic numbers H_n = psi(n + 1) + gamma (H_0 = 0), accurate for any n >= 0."""
    from scipy.special import digamma   # on first use: scipy.special is slow to import
    return digamma(np.asarray(n, dtype=np.float64) + 1.0) + np.euler_gamma


# ------------------------------------------------------------------------------------------------
# orderings

def arranged_positions(aligned: "AlignedRuns", grp: dict, key: np.ndarray, labelled: np.ndarray,
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
        n_lab = group_sum(grp, labelled.astype(np.float64)).astype(np.int64)[gid]   # (m, R)
        free = grp["gl"][gid][:, None] - n_lab
        free_first = (free_key > key[mr]) if descending else (free_key < key[mr])
        newpos[mr] = grp["gb"][gid][:, None] + rank + np.where(free_first, free, 0)
    return np.where(labelled, newpos, -1)


def in_arranged_order(aligned: "AlignedRuns", pos: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """``pos`` and ``arrays`` (each (n_rows, R)) with every version's judged rows re-ordered by their
    arranged positions ``pos`` within each segment (rows unlabelled in a version, ``pos`` -1, go
    last in their segment): for measures read in rank order (ERR, IPrec) under an arrangement.
    The segments keep their rows, so per-segment pointers stay valid."""
    j = aligned.judged_positions()
    top = int(aligned.max_len) + 1
    key = j["seg"][:, None].astype(np.int64) * (top + 1) + np.where(pos >= 0, pos, top)
    order = np.argsort(key, axis=0, kind="stable")
    return [np.take_along_axis(np.broadcast_to(a, order.shape), order, axis=0) for a in (pos, *arrays)]


def condensed_groups(aligned: "AlignedRuns", labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    """Each tied group in the condensed list of every version (Sakai 2007: the documents unjudged
    in that version removed): its start ``b`` (labelled documents before it in the segment) and
    length ``l`` (its labelled documents), both (n_groups, R).  Removing documents keeps the order
    of the rest, so a tied group of the ranking is a tied group of the condensed list."""
    def make():
        grp = groups(aligned)
        lab = labels.judged()[aligned.judged_positions()["jidx"]]
        lj = group_sum(grp, lab)
        return before_in_segment(grp, lj), lj
    return labels.memo("condensed_groups", make)


def condensed_arranged_positions(aligned: "AlignedRuns", labels: Labels, key: np.ndarray,
                                 descending: bool) -> np.ndarray:
    """0-based rank of every labelled judged row in the condensed list when each tied group is
    sorted by ``key`` (descending: optimistic); -1 where unlabelled.  (n_rows, R)."""
    grp = groups(aligned)
    lab = labels.judged()[aligned.judged_positions()["jidx"]] > 0
    newpos = arranged_positions(aligned, grp, key, lab, -np.inf if descending else np.inf, descending)
    cb, _ = condensed_groups(aligned, labels)
    gid = grp["gid"]
    rank = newpos - grp["gb"][gid][:, None] + cb[gid].astype(np.int64)
    return np.where(lab, rank, -1)


def value_key(gain: np.ndarray) -> np.ndarray:
    """Sort key of the value ordering: positive gains by size, then unjudged (key 0.5), then zeros."""
    return np.where(gain > 0, 1.0 + gain, 0.0)


def log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


# ------------------------------------------------------------------------------------------------
# measures without a closed form (INST, ERR, IPrec): the mean over the distinct arrangements

def dense_rows(aligned: "AlignedRuns", depth: int, positions: np.ndarray, values: np.ndarray,
               labelled: np.ndarray, fill: float, seg: np.ndarray, ver: np.ndarray,
               beyond: float | None = None) -> np.ndarray:
    """Dense gains ``(depth, n)`` of n rankings, ranking i being segment ``seg[i]`` under label
    version ``ver[i]``: each labelled judged row's ``values`` at its 0-based rank ``positions``
    (-1: none), every other rank ``fill``, and the ranks at or past the ranking's length ``beyond``
    (default ``fill``).  Only the judged rows of the n segments are read.  Column-major: each
    ranking's ranks are contiguous."""
    j = aligned.judged_positions()
    n = len(seg)
    G = np.full((depth, n), fill, order="F")
    if beyond is not None and beyond != fill:
        G[np.arange(depth)[:, None] >= aligned.seg_len[seg][None, :]] = beyond
    ptr = j["indptr"]
    cnt = ptr[seg + 1] - ptr[seg]
    row = np.repeat(np.arange(n), cnt)
    jr = np.arange(int(cnt.sum())) + np.repeat(ptr[seg] - (np.cumsum(cnt) - cnt), cnt)
    vr = ver[row]
    p = positions[jr, vr]
    ok = labelled[jr, vr] & (p >= 0) & (p < depth)
    G[p[ok], row[ok]] = values[jr[ok], vr[ok]]
    return G


def expected_over_arrangements(aligned: "AlignedRuns", values: np.ndarray, labelled: np.ndarray,
                               evaluate: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], *,
                               family: str, depth: int, fill: float = 0.0, beyond: float | None = None,
                               condensed: Labels | None = None, fixed: np.ndarray | None = None,
                               limit: int | None = None, limit_name: str = "MAX_ARRANGEMENTS") -> np.ndarray:
    """Exact expected value, over the orderings of the tied groups, of a measure given by a dense
    evaluator: ``(n_segments, R)``.

    ``values`` / ``labelled`` ``(n_rows, R)``: the gain of every judged row (position) and whether
    it is labelled in each version; a group's other documents (unjudged) gain ``fill``.
    ``evaluate(G, seg, ver)`` gives the measure of n rankings from their gains ``G`` ``(depth, n)``
    in rank order (ranking i is segment ``seg[i]``, version ``ver[i]``); ranks from ``depth`` on
    do not count, and ranks past a ranking's length gain ``beyond`` (default ``fill``).  With
    ``condensed`` (the label versions) the groups and ranks are those of the condensed lists
    (Sakai 2007: unjudged documents removed).

    A group is *mixed* in a version when its documents do not all have the same gain; only the
    mixed groups starting above rank ``depth`` are arranged.  Every distinct arrangement of a
    multiset of gains comes from the same number of orderings of the documents (the product of
    the factorials of the repeated gains), so the mean over the distinct arrangements is the mean
    over all orderings.  Each ranking-version gets one row per combination of arrangements of its
    mixed groups; the rows are evaluated together, a chunk of about :data:`BUDGET` values at a
    time, and averaged.  A ranking-version with more than ``limit`` (:data:`MAX_ARRANGEMENTS`)
    combinations is refused, naming the run, the topic and the count.  With ``fixed`` (its values
    for every ranking-version), the ranking-versions with a single arrangement take their value
    from it and are not evaluated densely.
    """
    j = aligned.judged_positions()
    n_seg, R = aligned.n_segments, labelled.shape[1]
    limit = MAX_ARRANGEMENTS if limit is None else limit
    if condensed is None:
        positions = np.broadcast_to(j["pos"][:, None], labelled.shape)
        grp = groups(aligned)
        gb = np.broadcast_to(grp["gb"][:, None], (grp["n_groups"], R))
        gl = np.broadcast_to(grp["gl"][:, None], (grp["n_groups"], R))
    else:
        positions = condensed_positions(aligned, condensed)
        cb, lj = condensed_groups(aligned, condensed)
        gb, gl = cb.astype(np.int64), lj.astype(np.int64)
    it = _group_multisets(aligned, values, labelled, gb, gl, depth, fill)
    _check_arrangements(aligned, np.bincount(it["unit"], weights=it["log_arr"], minlength=n_seg * R), R,
                        family, limit, limit_name)
    mx = _mixed_radix(it, n_seg * R)
    n_arr_item, n_arr_unit, mi, uptr = it["n_arr"], mx["n_arr_unit"], mx["mi"], mx["uptr"]

    # --- evaluate the rows in chunks of units (unit = (segment, version)) -----------------------
    out = np.empty(n_seg * R)
    if fixed is None:
        todo = np.arange(n_seg * R)
    else:
        out[:] = np.asarray(fixed, dtype=np.float64).ravel()
        todo = np.flatnonzero(n_arr_unit > 1)
    rows_per_chunk = max(1, BUDGET // depth)
    cum_rows = np.cumsum(n_arr_unit[todo])
    lo = 0
    while lo < len(todo):
        base = cum_rows[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(cum_rows, base + rows_per_chunk, side="right")), lo + 1)
        units = todo[lo:hi]
        n_rows_u = n_arr_unit[units]
        row_unit = np.repeat(units, n_rows_u)
        q = np.arange(len(row_unit)) - np.repeat(np.cumsum(n_rows_u) - n_rows_u, n_rows_u)
        useg, uver = np.divmod(row_unit, R)
        Grows = dense_rows(aligned, depth, positions, values, labelled, fill, useg, uver, beyond)
        # (row, mixed item) pairs
        n_it = uptr[row_unit + 1] - uptr[row_unit]
        prow = np.repeat(np.arange(len(row_unit)), n_it)
        pitem = uptr[row_unit][prow] + (np.arange(len(prow)) - np.repeat(np.cumsum(n_it) - n_it, n_it))
        if len(prow):
            _unrank(Grows, q[prow] // mx["stride"][pitem], prow, mi[pitem], n_arr_item, mx["vals"][pitem],
                    mx["cnts"][pitem].copy(), it["l"], it["b"], depth)
        eu = evaluate(Grows, useg, uver)
        starts = np.r_[0, np.cumsum(n_rows_u)[:-1]]
        out[units] = np.add.reduceat(eu, starts) / n_rows_u
        lo = hi
    return out.reshape(n_seg, R)


def _check_arrangements(aligned: "AlignedRuns", log_unit: np.ndarray, R: int, family: str, limit: int,
                        limit_name: str) -> None:
    """InputError naming the run, topic and count if a ranking-version has more than ``limit``
    combinations of arrangements (``log_unit``: their logarithm per (segment, version))."""
    too_many = log_unit > math.log(limit) + 1e-9
    if too_many.any():
        u = int(np.argmax(log_unit))
        s_, v_ = divmod(u, R)
        run, t = divmod(s_, aligned.n_topics)
        raise InputError(
            f"ties='expected' for {family}: run {aligned.run_names[run]!r}, qid {aligned.topics[t]!r} (label "
            f"version {v_}) has about {math.exp(log_unit[u]):.3g} distinct orderings of its tied groups, more than "
            f"{limit_name} = {limit:,} ({int(too_many.sum())} ranking-version(s) in all); {family} has no closed "
            f"form, so its expectation is enumerated -- use ties='optimistic' / 'pessimistic' for bounds, or "
            f"break the ties")


def _group_multisets(aligned: "AlignedRuns", values: np.ndarray, labelled: np.ndarray, gb: np.ndarray,
                     gl: np.ndarray, depth: int, fill: float) -> dict:
    """The multiset of gains of every (tied group, version) *item* that can move a gain above
    ``depth``: the distinct values ``v_val`` with counts ``v_count`` (item after item), and of each
    item its start ``b``, length ``l``, ``unit`` (segment * R + version), number ``nval`` of
    distinct values, whether it is ``mixed``, and the log ``log_arr`` and number ``n_arr`` of its
    distinct arrangements (``l! / prod(count!)``; 0 and 1 when not mixed)."""
    grp = groups(aligned)
    R = labelled.shape[1]
    cand = np.flatnonzero(((gl > 1) & (gb < depth)).any(axis=1))   # groups that can move a gain
    mr = grp["multi_rows"]
    keep = np.isin(grp["gid"][mr], cand) if len(cand) else np.zeros(len(mr), dtype=bool)
    rows = mr[keep]
    # entries (version, group, value, weight): labelled rows weigh 1, the free slots of a group
    # are one entry of weight (l - #labelled) with value fill
    n_lab = group_sum(grp, labelled.astype(np.float64)).astype(np.int64)
    rr, vv = np.nonzero(labelled[rows])
    e_ver = np.concatenate([vv, np.repeat(np.arange(R), len(cand))])
    e_grp = np.concatenate([grp["gid"][rows][rr], np.tile(cand, R)])
    e_val = np.concatenate([values[rows][rr, vv], np.full(len(cand) * R, fill)])
    e_w = np.concatenate([np.ones(len(rr), dtype=np.int64), (gl[cand] - n_lab[cand]).T.ravel()])
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
    v_item = np.cumsum(new_item)[vstart] - 1
    istart = np.flatnonzero(new_item)
    i_ver, i_grp = e_ver[istart], e_grp[istart]
    n_items = len(istart)
    i_nval = np.bincount(v_item, minlength=n_items)
    i_l, i_b = gl[i_grp, i_ver], gb[i_grp, i_ver]
    mixed = (i_nval > 1) & (i_b < depth)
    from scipy.special import gammaln
    log_arr = gammaln(i_l + 1.0) - np.bincount(v_item, weights=gammaln(v_count + 1.0), minlength=n_items)
    log_arr = np.where(mixed, log_arr, 0.0)
    return dict(v_val=e_val[vstart], v_count=v_count, l=i_l, b=i_b, unit=grp["gseg"][i_grp] * R + i_ver,
                nval=i_nval, mixed=mixed, log_arr=log_arr, n_arr=np.where(mixed, np.rint(np.exp(log_arr)), 1).astype(np.int64))


def _mixed_radix(it: dict, n_units: int) -> dict:
    """Number every combination of arrangements of a unit's mixed items: the units' numbers of
    combinations ``n_arr_unit``, the mixed items ``mi`` ordered by unit with their mixed-radix
    ``stride``, padded multisets ``vals`` / ``cnts`` (n_mi, V), and ``uptr``, a CSR from units to
    their items in ``mi``."""
    mixed_items = np.flatnonzero(it["mixed"])
    unit, n_arr, i_nval = it["unit"], it["n_arr"], it["nval"]
    n_arr_unit = np.ones(n_units, dtype=np.int64)
    np.multiply.at(n_arr_unit, unit[mixed_items], n_arr[mixed_items])
    mi = mixed_items[np.argsort(unit[mixed_items], kind="stable")]
    mi_unit = unit[mi]
    mi_first = np.r_[True, mi_unit[1:] != mi_unit[:-1]] if len(mi) else np.zeros(0, dtype=bool)
    mi_k = np.arange(len(mi)) - np.maximum.accumulate(np.where(mi_first, np.arange(len(mi)), 0)) if len(mi) else mi
    stride = np.ones(len(mi), dtype=np.int64)
    for t in range(1, int(mi_k.max()) + 1 if len(mi) else 0):   # at most log2(limit) items
        at = np.flatnonzero(mi_k == t)
        stride[at] = stride[at - 1] * n_arr[mi[at - 1]]
    V = int(i_nval[mi].max()) if len(mi) else 1
    vptr = np.r_[0, np.cumsum(i_nval)]
    col = np.arange(V)
    vidx = vptr[mi][:, None] + col[None, :]
    valid = col[None, :] < i_nval[mi][:, None]
    vidx = np.where(valid, vidx, 0)
    v_val, v_count = it["v_val"], it["v_count"]
    vals = np.where(valid, v_val[vidx] if len(v_val) else 0.0, 0.0)
    cnts = np.where(valid, v_count[vidx] if len(v_count) else 0, 0).astype(np.int64)
    uptr = np.zeros(n_units + 1, dtype=np.int64)
    np.cumsum(np.bincount(mi_unit, minlength=n_units), out=uptr[1:])
    return dict(n_arr_unit=n_arr_unit, mi=mi, stride=stride, vals=vals, cnts=cnts, uptr=uptr)


def _unrank(G: np.ndarray, code: np.ndarray, prow: np.ndarray, item: np.ndarray, n_arr_item: np.ndarray,
            vals: np.ndarray, cnt: np.ndarray, i_l: np.ndarray, i_b: np.ndarray, depth: int) -> None:
    """Write into the rows ``prow`` of ``G`` the arrangement number ``code`` (mod the item's
    number of arrangements) of each pair's mixed item (a multiset permutation with values
    ``vals`` and counts ``cnt``), one position of the groups at a time."""
    kk = code % n_arr_item[item]
    lgrp, bgrp = i_l[item], i_b[item]
    M = n_arr_item[item].copy()
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
        G[p[inside], prow[act][inside]] = vals[act[inside], choice[inside]]


# ------------------------------------------------------------------------------------------------
# linear measures: RBP, P, DCG, nDCG, INSQ

def linear_tied(aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, mode: str, w: np.ndarray,
                g: np.ndarray) -> np.ndarray:
    """A linear measure (weights ``w`` of the 0-based positions, gains ``g`` over the table) under a
    grouped tie policy: every component of RBP, P, R, DCG, INSQ, Judged (the caller finishes
    nDCG's and R's value)."""
    j = aligned.judged_positions()
    grp = groups(aligned)
    length = len(w)
    grow = g[j["jidx"]]
    lab = ~np.isnan(labels.L[j["jidx"]])
    labf = lab.astype(np.float64)
    if spec.judged_only:   # the value only: a condensed list has no residual
        tail = suffix_sums(w)
        if mode == "expected":   # each labelled document equally likely at every rank of its group
            cb, lj = condensed_groups(aligned, labels)
            b, n = cb[grp["gid"]].astype(np.int64), lj[grp["gid"]].astype(np.int64)
            with np.errstate(invalid="ignore", divide="ignore"):
                w_row = np.where(n > 0, (tail[np.minimum(b, length)] - tail[np.minimum(b + n, length)])
                                 / np.maximum(n, 1), 0.0)
        else:
            cpos = condensed_arranged_positions(aligned, labels, grow, mode == "optimistic")
            w_row = np.where(cpos >= 0, w[np.clip(cpos, 0, length - 1)], 0.0)
        return segment_sum(aligned, w_row * grow * labf)

    if mode == "expected":
        tail = suffix_sums(w)
        glen = j["gend"] - j["gstart"]
        w_row = np.where(glen == 1, w[j["pos"]], (tail[j["gstart"]] - tail[j["gend"]]) / glen)[:, None]
        w_val = w_up = w_row
    else:
        desc = mode == "optimistic"
        pos_v = arranged_positions(aligned, grp, value_key(grow), lab, 0.5, desc)
        w_val = np.where(lab, w[np.maximum(pos_v, 0)], 0.0)
        w_up = None
        if spec.component in ("residual", "upper"):
            pos_u = arranged_positions(aligned, grp, grow, lab, 1.0, desc)
            w_up = np.where(lab, w[np.maximum(pos_u, 0)], 0.0)

    value = segment_sum(aligned, w_val * grow * labf)
    if spec.component == "value":
        return value
    if spec.component == "projected":
        mass = segment_sum(aligned, w_val * labf)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mass > 0, value / np.where(mass > 0, mass, 1.0), np.nan)
    mass_u = segment_sum(aligned, w_up * labf)
    upper = segment_sum(aligned, w_up * grow * labf) + np.maximum(1.0 - mass_u, 0.0)
    if spec.component == "upper":
        return upper
    return np.maximum(upper - value, 0.0)   # residual


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
        dH = harmonic(b + m) - harmonic(b)
        a = np.where(l > 1, (r - 1.0) / np.maximum(l - 1.0, 1.0), 0.0)
        total = np.sum(np.where(r > 0, (r / l) * ((c + 1.0) * dH + a * (m - (b + 1.0) * dH)), 0.0))
    else:
        gid = np.repeat(np.arange(len(starts)), lengths)
        i = np.arange(1, len(gains) + 1, dtype=np.float64)
        frac = (r / l)[gid]
        enr = c[gid] + frac * (i - b[gid])            # thesis eq. 3.1
        total = np.sum(np.where(i <= k, enr / i * frac, 0.0))
    return float(total / n_relevant)
