"""Worker and judgment quality of a pairwise crowd (Yang 2019 Sec. 5.3.5, Fig. 5.11, Tables 5.11-5.12).

Transitivity inconsistency of QUESTION1 (a minimum feedback arc set per worker and group, seed
note A13), absolute-relevance inconsistency of QUESTION2, accuracy on gold pairs, and the
left-side position bias that :func:`pyterrier_noise.crowd.document_scores` can weight out.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats as _st
from scipy.sparse.csgraph import connected_components

from .._validation import InputError, announce, check_number
from ..io import PathLike
from ._table import _codes, _index, _judgments, _lookup_labels, _qrels

__all__ = ["transitivity_inconsistency", "absolute_inconsistency", "gold_accuracy", "PositionBias",
           "position_bias", "worker_quality", "workers_path"]


def _units(j: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Code of each row's (qid, worker, group) unit and the units' (qid, worker) frame."""
    codes, (q, w, _) = _codes(j["qid"].to_numpy(dtype=object), j["worker"].to_numpy(dtype=object),
                              j["group"].to_numpy(dtype=object))
    return codes, pd.DataFrame({"qid": q, "worker": w})


def _per_worker(units: pd.DataFrame, **cols: np.ndarray) -> pd.DataFrame:
    f = units.assign(**cols)
    return f.groupby(["qid", "worker"], sort=True, as_index=False).sum(numeric_only=True)


_PERMS: dict[int, np.ndarray] = {}
_BEFORE: dict[int, np.ndarray] = {}


def _permutations(s: int) -> np.ndarray:
    """All s! permutations of range(s) as an (s!, s) int8 array (cached).

    Built by inserting item k at every position of the permutations of range(k), one vectorised
    step per (k, position) -- ``itertools.permutations`` materialises s! Python tuples.
    """
    if s not in _PERMS:
        perms = np.zeros((1, 1), dtype=np.int8)
        for k in range(1, s):
            perms = np.concatenate([np.insert(perms, i, k, axis=1) for i in range(k + 1)])
        _PERMS[s] = perms
    return _PERMS[s]


def _min_affected(weights: np.ndarray) -> np.ndarray:
    """Fewest items touched by violated preferences over the optimal orderings.

    ``weights``: (C, s, s), ``weights[c, a, b]`` = how often a was preferred to b in component c.
    Exhaustive over the s! orderings (the position vectors of all permutations are all
    permutations): with ``before[p, a, b] = pos_p(a) > pos_p(b)`` (a placed below b, so a > b is
    violated), every ordering's violated weight is one matrix product ``before (P, s^2) @ (s^2,
    C)``; the items touched are then counted for the optimal orderings only.
    """
    C, s, _ = weights.shape
    pos = _permutations(s)
    P = len(pos)
    wf = weights.reshape(C, s * s).T.astype(np.float32)                              # (s^2, C)
    eye = np.eye(s, dtype=bool)
    touch = (weights > 0)[:, :, :, None] & (eye[None, :, None, :] | eye[None, None, :, :])
    touch = touch.reshape(C, s * s, s).astype(np.float32)                            # (C, s^2, s)
    cached = _BEFORE.get(s)
    if cached is None and P * s * s <= 1 << 22:
        cached = _BEFORE[s] = (pos[:, :, None] > pos[:, None, :]).reshape(P, s * s).astype(np.float32)
    step = max(1, min(P, (1 << 22) // max(1, s * s + C)))

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        for p0 in range(0, P, step):
            if cached is not None:
                yield p0, cached[p0:p0 + step]
            else:
                pp = pos[p0:p0 + step]
                yield p0, (pp[:, :, None] > pp[:, None, :]).reshape(len(pp), s * s).astype(np.float32)

    best = np.full(C, np.inf, dtype=np.float32)
    for _, before in blocks():
        best = np.minimum(best, (before @ wf).min(axis=0))
    fewest = np.full(C, s + 1, dtype=np.int64)
    for _, before in blocks():
        p, c = np.nonzero(before @ wf <= best + 0.5)
        n_touched = (np.einsum("nk,nkd->nd", before[p], touch[c]) > 0.5).sum(axis=1)
        np.minimum.at(fewest, c, n_touched)
    return fewest


def transitivity_inconsistency(judgments: Any, max_component: int = 9) -> pd.DataFrame:
    """QUESTION1 (in)transitivity of each worker on each topic (Yang 2019 Sec. 5.3.5, Fig. 5.11).

    Within each (worker, group), find the orderings of the judged documents that violate the
    fewest of the worker's preferences (a minimum feedback arc set); the documents involved in a
    violated preference are *affected*.  Where several orderings are optimal, the one affecting
    the fewest documents counts.  The worker's inconsistency on a topic is
    ``sum affected / sum judged documents`` over their groups.  Example (Sec. 5.3.5):
    d1>d2, d2>d3, d3>d4, d4>d1 -> 2 of 4 documents affected, 0.5.

    Optimal orderings violate only preferences inside a strongly connected component of the
    preference graph (scipy), so only cyclic components are searched, exhaustively up to
    ``max_component`` documents; a worker-group with a larger cyclic component gets NaN
    (announced).  Without a ``group`` column a worker's whole topic is one group.

    Returns:
        ``qid, worker, docs, affected, inconsistency`` (docs = judged documents summed over groups).
    """
    j = _judgments(judgments)
    if isinstance(max_component, bool) or not isinstance(max_component, (int, np.integer)) \
            or not 2 <= max_component <= 10:
        raise InputError(f"max_component must be an integer from 2 to 10, got {max_component!r}")
    unit, units = _units(j)
    ix = _index(j)
    v = ix.has_pref
    n_docs = len(ix.docno)
    win = np.where(ix.left_chosen, ix.li, ix.ri)[v]
    lose = np.where(ix.left_chosen, ix.ri, ix.li)[v]
    u = unit[v]
    # nodes: (unit, document)
    node_keys, inv = np.unique(np.concatenate([u * n_docs + win, u * n_docs + lose]), return_inverse=True)
    m = len(win)
    nw, nl = inv[:m], inv[m:]
    node_unit = node_keys // n_docs
    U = len(units)
    judged = np.bincount(node_unit, minlength=U)
    affected = np.zeros(U, dtype=float)
    if m:
        g = sp.coo_matrix((np.ones(m), (nw, nl)), shape=(len(node_keys),) * 2).tocsr()
        _, scc = connected_components(g, directed=True, connection="strong")
        size = np.bincount(scc)
        inside = scc[nw] == scc[nl]
        # edges inside cyclic components, merged by (winner, loser) with their multiplicity
        ek, ecount = np.unique(nw[inside] * len(node_keys) + nl[inside], return_counts=True)
        ew, el = ek // len(node_keys), ek % len(node_keys)
        ecomp = scc[ew]
        cyc = np.flatnonzero(size >= 2)
        too_big = cyc[size[cyc] > max_component]
        if len(too_big):
            bad_units = np.unique(node_unit[np.isin(scc, too_big)])
            affected[bad_units] = np.nan
            announce(f"transitivity: {len(bad_units)} worker-group(s) have a cycle of preferences over more than "
                     f"{max_component} documents; their inconsistency is NaN (give a 'group' column, or raise "
                     f"max_component)")
        # local item numbers inside each component
        node_order = np.argsort(scc, kind="stable")
        cstart = np.concatenate([[0], np.cumsum(size)])
        local = np.empty(len(scc), dtype=np.int64)
        local[node_order] = np.arange(len(scc)) - cstart[scc[node_order]]
        for s in np.unique(size[cyc]):
            if s > max_component:
                continue
            comps = cyc[size[cyc] == s]
            sel = np.isin(ecomp, comps)
            cidx = np.searchsorted(comps, ecomp[sel])
            W = np.zeros((len(comps), int(s), int(s)))
            np.add.at(W, (cidx, local[ew[sel]], local[el[sel]]), ecount[sel])
            aff = _min_affected(W)
            comp_unit = node_unit[node_order[cstart[comps]]]
            np.add.at(affected, comp_unit, aff.astype(float))
    out = _per_worker(units, docs=judged.astype(np.int64), affected=affected)
    # a NaN in any group makes the worker's sum NaN (pandas sums skip NaN: restore it)
    nan_units = pd.Series(np.isnan(affected)).groupby([units["qid"], units["worker"]]).any().to_numpy()
    out.loc[nan_units, "affected"] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        out["inconsistency"] = out["affected"] / out["docs"].where(out["docs"] > 0)
    return out[["qid", "worker", "docs", "affected", "inconsistency"]]


def absolute_inconsistency(judgments: Any) -> pd.DataFrame:
    """QUESTION2 inconsistency of each worker on each topic (Yang 2019 Sec. 5.3.5, Fig. 5.11).

    Each answer implies a label for both documents (``both`` -> 1, 1; ``none`` -> 0, 0;
    ``selected`` -> 1 for the document chosen in QUESTION1, 0 for the other).  A document is
    inconsistent in a (worker, group) when its implied labels there differ; the worker's
    inconsistency on a topic is ``sum inconsistent / sum judged documents`` over their groups.

    Returns:
        ``qid, worker, docs, inconsistent, inconsistency``.
    """
    j = _judgments(judgments)
    unit, units = _units(j)
    ix = _index(j)
    a = j["absolute"].to_numpy(dtype=object)
    v = pd.notna(a)
    both, sel = a == "both", a == "selected"
    rel_l = (both | (sel & ix.left_chosen))[v]
    rel_r = (both | (sel & ~ix.left_chosen))[v]
    n_docs = len(ix.docno)
    u = unit[v]
    keys, inv = np.unique(np.concatenate([u * n_docs + ix.li[v], u * n_docs + ix.ri[v]]), return_inverse=True)
    ones = np.bincount(inv, np.concatenate([rel_l, rel_r]).astype(float), len(keys))
    cnt = np.bincount(inv, minlength=len(keys))
    incons = (ones > 0) & (ones < cnt)
    ku = keys // n_docs
    U = len(units)
    out = _per_worker(units, docs=np.bincount(ku, minlength=U),
                      inconsistent=np.bincount(ku, incons.astype(float), U).astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        out["inconsistency"] = out["inconsistent"] / out["docs"].where(out["docs"] > 0)
    return out[["qid", "worker", "docs", "inconsistent", "inconsistency"]]


def _gold_side(j: pd.DataFrame, gold_qrels: Any) -> np.ndarray:
    if gold_qrels is None:
        return j["gold"].to_numpy(dtype=object)
    g = _qrels(gold_qrels, "gold_qrels")
    q = j["qid"].to_numpy(dtype=object)
    ll = _lookup_labels(g, q, j["left"].to_numpy(dtype=object))
    lr = _lookup_labels(g, q, j["right"].to_numpy(dtype=object))
    side = np.full(len(j), np.nan, dtype=object)
    side[ll > lr] = "left"
    side[lr > ll] = "right"
    return side


def gold_accuracy(judgments: Any, gold_qrels: Any = None) -> pd.DataFrame:
    """Accuracy on gold pairs: the share where the worker preferred the gold document (Sec. 5.3.5).

    Gold pairs are the rows with a ``gold`` side, or, with ``gold_qrels``, every pair whose two
    documents both have labels there and differ (the more relevant is the gold side).  Groups
    failing the gold pair are not excluded elsewhere (as in the thesis).

    Returns:
        ``qid, worker, gold_pairs, gold_correct, gold_accuracy`` (NaN without gold pairs).
    """
    j = _judgments(judgments)
    unit, units = _units(j)
    side = _gold_side(j, gold_qrels)
    pref = j["preferred"].to_numpy(dtype=object)
    v = pd.notna(side) & pd.notna(pref)
    U = len(units)
    out = _per_worker(units, gold_pairs=np.bincount(unit[v], minlength=U),
                      gold_correct=np.bincount(unit[v], (pref[v] == side[v]).astype(float), U).astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        out["gold_accuracy"] = out["gold_correct"] / out["gold_pairs"].where(out["gold_pairs"] > 0)
    return out[["qid", "worker", "gold_pairs", "gold_correct", "gold_accuracy"]]


class PositionBias(NamedTuple):
    """Left-side bias of QUESTION1 answers (Yang 2019 Tables 5.11, 5.12)."""

    bias: float          #: left-choice rate minus right-choice rate (the thesis's "4 %")
    left_rate: float     #: share of answers choosing the left document
    pairs: int           #: answers counted
    p_value: float       #: two-sided binomial test of left_rate = 0.5 (scipy.stats.binomtest)
    per_topic: pd.DataFrame  #: ``qid, pairs, left_rate, bias``


def position_bias(judgments: Any, qrels: Any = None, rel: float = 1.0) -> PositionBias:
    """Left/right position bias of the preference answers (Yang 2019 Sec. 5.3.5, Tables 5.11-5.12).

    Counts the answers choosing the left document.  With ``qrels``, only pairs whose two documents
    are both judged there and equally relevant at ``label >= rel`` count (the thesis's [0,0] and
    [1,1] pairs under NIST binary judgments), where an unbiased worker picks either side half the
    time; without, every answered pair counts.  ``bias = 2 * left_rate - 1`` is what
    :func:`document_scores` takes as ``left_bias``.
    """
    j = _judgments(judgments)
    pref = j["preferred"].to_numpy(dtype=object)
    v = pd.notna(pref)
    if qrels is not None:
        rel = check_number("rel", rel)
        q = _qrels(qrels, "qrels")
        qq = j["qid"].to_numpy(dtype=object)
        ll = _lookup_labels(q, qq, j["left"].to_numpy(dtype=object))
        lr = _lookup_labels(q, qq, j["right"].to_numpy(dtype=object))
        v &= ~np.isnan(ll) & ~np.isnan(lr) & ((ll >= rel) == (lr >= rel))
    k = int((pref[v] == "left").sum())
    n = int(v.sum())
    f = pd.DataFrame({"qid": j["qid"].to_numpy(dtype=object)[v], "left": (pref[v] == "left").astype(float)})
    per = f.groupby("qid", sort=True).agg(pairs=("left", "size"), left_rate=("left", "mean")).reset_index()
    per["bias"] = 2 * per["left_rate"] - 1
    if n == 0:
        return PositionBias(float("nan"), float("nan"), 0, float("nan"), per)
    rate = k / n
    p = float(_st.binomtest(k, n, 0.5).pvalue)
    return PositionBias(2 * rate - 1, rate, n, p, per)


def worker_quality(judgments: Any, gold_qrels: Any = None, max_component: int = 9) -> pd.DataFrame:
    """One row per (topic, worker): workload and the quality measures of Yang 2019 Sec. 5.3.5.

    Columns: ``qid, worker, groups, pairs, docs`` (distinct documents shown),
    ``transitivity_inconsistency`` (:func:`transitivity_inconsistency`),
    ``absolute_inconsistency`` (:func:`absolute_inconsistency`), ``gold_pairs, gold_accuracy``
    (:func:`gold_accuracy`) and ``left_rate`` (share of preference answers choosing the left side).
    """
    j = _judgments(judgments)
    ix = _index(j)
    f = pd.DataFrame({"qid": j["qid"].to_numpy(dtype=object), "worker": j["worker"].to_numpy(dtype=object),
                      "group": j["group"].to_numpy(dtype=object),
                      "left": np.where(ix.has_pref, ix.left_chosen.astype(float), np.nan)})
    g = f.groupby(["qid", "worker"], sort=True)
    base = g.agg(groups=("group", "nunique"), pairs=("group", "size"), left_rate=("left", "mean")).reset_index()
    docs = pd.DataFrame({"qid": np.concatenate([f["qid"], f["qid"]]), "worker": np.concatenate([f["worker"]] * 2),
                         "d": np.concatenate([ix.li, ix.ri])}).drop_duplicates()
    base = base.merge(docs.groupby(["qid", "worker"]).size().rename("docs").reset_index(), on=["qid", "worker"])
    t = transitivity_inconsistency(j, max_component=max_component)
    a = absolute_inconsistency(j)
    gold = gold_accuracy(j, gold_qrels)
    out = (base.merge(t[["qid", "worker", "inconsistency"]].rename(columns={"inconsistency": "transitivity_inconsistency"}),
                      on=["qid", "worker"], how="left")
               .merge(a[["qid", "worker", "inconsistency"]].rename(columns={"inconsistency": "absolute_inconsistency"}),
                      on=["qid", "worker"], how="left")
               .merge(gold[["qid", "worker", "gold_pairs", "gold_accuracy"]], on=["qid", "worker"], how="left"))
    return out[["qid", "worker", "groups", "pairs", "docs", "transitivity_inconsistency", "absolute_inconsistency",
                "gold_pairs", "gold_accuracy", "left_rate"]]


def workers_path(qrels_path: PathLike) -> Path:
    """Where ``pairwise aggregate`` writes the worker-quality table: ``QRELS.workers.tsv`` (``.gz`` dropped)."""
    p = Path(qrels_path)
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    return p.with_name(name + ".workers.tsv")
