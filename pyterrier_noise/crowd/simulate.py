"""A seeded simulated crowd in the thesis's design (Yang 2019 Sec. 5.1, Algorithm 1).

Documents of each topic are partitioned into groups, each group gets a chained pair list, and
Thurstonian workers with a known accuracy, left bias and number scale answer the three questions.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, announce, check_int, check_number, check_positive
from ._table import _qrels

__all__ = ["design_partitions", "simulate_crowd"]

#: share of a simulated worker's perception noise that is drawn afresh for each presentation of a
#: document (the rest is drawn once per document and group: the worker reads it once)
_PRESENTATION_NOISE_SHARE = 0.25
#: a simulated ratio answer grows by this factor per grade of perceived relevance
_RATIO_GROWTH = 3.0


def design_partitions(num_docs: Any, partners: int = 3, pair_fraction: float = 0.15) -> Any:
    """Number of partitionings X so each document meets ``pair_fraction`` of the others (Yang 2019 Sec. 5.1.1).

    ``X = round(pair_fraction * (num_docs - 1) / partners)`` (half up, at least 1); with K = 3 and
    15 % it reproduces every X of Table 5.1 (e.g. 216 documents -> 11).
    Accepts a number or an array of numbers.
    """
    n = np.asarray(num_docs)
    if n.dtype.kind not in "iuf" or (n < 2).any():
        raise InputError(f"num_docs must be numbers of documents >= 2, got {num_docs!r}")
    check_int("partners", partners)
    if not 0 < float(pair_fraction) <= 1:
        raise InputError(f"pair_fraction must be in (0, 1], got {pair_fraction!r}")
    x = np.maximum(1, np.floor(float(pair_fraction) * (n - 1) / partners + 0.5)).astype(np.int64)
    return int(x) if x.ndim == 0 else x


def _pair_chain(n: int, k: int, rng: np.random.Generator, budget: int = 200_000) -> np.ndarray | None:
    """A random pair list for a group of n documents (Yang 2019 Algorithm 1, corrected).

    Every document is in exactly k pairs, no pair repeats, consecutive pairs share one document
    (the "stayed" one, chosen at random), which keeps its side; the first pair's sides are
    (left, right).  Randomised backtracking; ``None`` if the budget of steps runs out.
    """
    total = n * k // 2
    deg = np.full(n, k)
    used: set[tuple[int, int]] = set()
    pairs: list[tuple[int, int]] = []
    steps = [0]

    def extend(stay: Sequence[int]) -> bool:
        if len(pairs) == total:
            return True
        steps[0] += 1
        if steps[0] > budget:
            return False
        for s in rng.permutation(np.asarray(stay)):
            s = int(s)
            if deg[s] == 0:
                continue
            for d in rng.permutation(n):
                d = int(d)
                if d == s or deg[d] == 0 or (min(s, d), max(s, d)) in used:
                    continue
                pairs.append((s, d))
                used.add((min(s, d), max(s, d)))
                deg[s] -= 1
                deg[d] -= 1
                if extend((s, d)):
                    return True
                pairs.pop()
                used.discard((min(s, d), max(s, d)))
                deg[s] += 1
                deg[d] += 1
                if steps[0] > budget:
                    return False
        return False

    if not extend(range(n)):
        return None
    # sides: the first pair as found; afterwards the stayed document keeps its side
    out = np.empty((total, 2), dtype=np.int64)
    out[0] = pairs[0]
    for t in range(1, total):
        s, d = pairs[t]
        out[t] = (s, d) if out[t - 1, 0] == s else (d, s)
    return out


def _chain_templates(n: int, k: int, rng: np.random.Generator, count: int = 32) -> np.ndarray:
    found = []
    for _ in range(count * 4):
        c = _pair_chain(n, k, rng)
        if c is not None:
            found.append(c)
        if len(found) == count:
            break
    if not found:
        raise InputError(f"could not build a pair list with {k} partners per document in groups of {n}")
    return np.stack(found)



def simulate_crowd(qrels: Any, *, workers_per_group: int = 3, n_workers: int = 60,
                   partitions: int | None = None, docs_per_group: int = 8, partners: int = 3,
                   pair_fraction: float = 0.15, accuracy: float | tuple[float, float] = (0.75, 0.95),
                   left_bias: float = 0.04, missing: float | tuple[float, float, float] = 0.0,
                   relevant_from: float = 1.0, ratio_scale: float = 10.0, gold: bool = True,
                   seed: int | None = 0, return_workers: bool = False) -> Any:
    """A seeded crowd answering the thesis's three questions about pairs of documents (Yang 2019 Sec. 5.1).

    *Design* (Sec. 5.1.1).  Each topic's documents (the rows of ``qrels``; their labels are the
    ground truth) are randomly partitioned ``partitions`` times (default :func:`design_partitions`,
    about 15 % of the other documents as partners) into groups of ``docs_per_group``; a topic
    whose size is not a multiple fills its last group with documents of its first group.  Each
    group gets a pair list in which every document meets ``partners`` others, no pair repeats and
    consecutive pairs share a document, which stays on its side (a random relabelling of one of 32
    chains from the thesis's Algorithm 1).  With ``gold=True`` a group holding a document with
    label >= ``relevant_from`` and one below pairs its most relevant document with a non-relevant
    one: the gold pair (``gold`` column).  Unlike the thesis, groups are not built around known
    HR/NR documents, so groups without both kinds have no gold pair.  ``workers_per_group`` (Y)
    distinct workers of a crowd of ``n_workers`` judge each group.

    *Workers.*  Worker w perceives document d as ``u = label_d + sigma_w z`` (Thurstone), with
    ``z`` drawn once per (worker, group, document) for 75 % of the variance (the worker reads the
    document once) and afresh per presentation for the rest.  ``sigma_w`` follows from the
    worker's ``accuracy`` (a number, or a (low, high) range drawn uniformly per worker): the
    chance of preferring the better of two documents one grade apart,
    ``accuracy = Phi(1 / (sigma_w sqrt 2))``.  With probability ``|left_bias|`` an answer to
    QUESTION1 simply takes the left (right, if negative) document, so on equally relevant pairs
    the left-choice rate minus the right-choice rate is ``left_bias`` (the thesis measured 0.04).
    Otherwise the worker prefers the higher perception.  QUESTION2 calls a document relevant when
    ``u > relevant_from - 1/2`` (``both`` / ``selected`` / ``none``); QUESTION3 gives
    ``c_w 3^(u - relevant_from + 1/2)`` rounded to 2 decimals, larger for the preferred document
    (the thesis's embedded validation), with a per-worker number scale ``c_w = ratio_scale *
    lognormal(0, 1)``.  Each answer is missing with probability ``missing`` (one number, or one
    per question).

    Returns:
        the judgments (columns :data:`COLUMNS`, ready for :func:`document_scores`), sorted by
        group, worker, pair; with ``return_workers=True`` also a frame ``worker, accuracy, sigma,
        ratio_scale``.
    """
    rng = np.random.default_rng(seed)
    Y, nw, D, K, partitions = _check_design(workers_per_group, n_workers, docs_per_group, partners, partitions)
    acc_w, sigma_w, scale_w, b, miss, theta = _draw_workers(rng, nw, accuracy, left_bias, missing, ratio_scale,
                                                            relevant_from)
    topics, n_t, doc_start, label, docno = _topic_documents(qrels, D)
    X_t = np.full(len(n_t), partitions) if partitions is not None else design_partitions(n_t, K, pair_fraction)
    X_t = np.atleast_1d(X_t).astype(np.int64)
    group_docs, group_topic, group_part, group_no = _partition_groups(rng, n_t, doc_start, X_t, D)
    lab = label[group_docs]
    lslot, rslot, gold_side = _pair_lists(rng, lab, D, K, gold, relevant_from)
    wk, answers = _answers(rng, lab, lslot, rslot, sigma_w, scale_w, Y, b, theta, miss)
    names = np.array([f"w{i + 1:0{len(str(nw))}d}" for i in range(nw)], dtype=object)
    out = _judgment_frame(topics[group_topic], group_part, group_no, group_docs, docno, lslot, rslot, gold_side,
                          names[wk], answers)
    out.attrs["source"] = f"simulate_crowd(seed={seed})"
    out.attrs["pyterrier_noise_pairwise"] = True
    if return_workers:
        return out, pd.DataFrame({"worker": names, "accuracy": acc_w, "sigma": sigma_w, "ratio_scale": scale_w})
    return out


def _check_design(workers_per_group: Any, n_workers: Any, docs_per_group: Any, partners: Any,
                  partitions: Any) -> tuple[int, int, int, int, int | None]:
    """The design's counts, checked: Y workers per group of a crowd of nw, D documents per group, K partners."""
    Y = check_int("workers_per_group", workers_per_group, 1)
    nw = check_int("n_workers", n_workers, Y)
    D = check_int("docs_per_group", docs_per_group, 3)
    K = check_int("partners", partners, 1)
    if K >= D or (D * K) % 2:
        raise InputError(f"partners={K} and docs_per_group={D}: need partners < docs_per_group and an even "
                         f"docs_per_group * partners (every document in exactly `partners` pairs)")
    if partitions is not None:
        partitions = check_int("partitions", partitions, 1)
    return Y, nw, D, K, partitions


def _draw_workers(rng: np.random.Generator, nw: int, accuracy: Any, left_bias: Any, missing: Any,
                  ratio_scale: Any, relevant_from: Any) -> tuple:
    """The workers' accuracy, noise ``sigma_w`` and number scale ``c_w``, and the answer options, checked."""
    from scipy.special import ndtri
    acc = np.asarray(accuracy, dtype=float)
    if acc.shape == ():
        acc_w = np.full(nw, float(acc))
    elif acc.shape == (2,) and acc[0] <= acc[1]:
        acc_w = rng.uniform(acc[0], acc[1], nw)
    else:
        raise InputError(f"accuracy must be a number or a (low, high) range, got {accuracy!r}")
    if not (np.all(acc_w > 0.5) and np.all(acc_w <= 1.0)):
        raise InputError(f"accuracy must be in (0.5, 1] (the chance of preferring the better of two documents "
                         f"one grade apart), got {accuracy!r}")
    b = check_number("left_bias", left_bias)
    if not -1 < b < 1:
        raise InputError(f"left_bias must be in (-1, 1), got {left_bias!r}")
    try:
        miss = np.asarray(missing, dtype=float)
    except (TypeError, ValueError):
        miss = np.array([np.nan])
    if miss.shape not in ((), (3,)) or not np.all((miss >= 0) & (miss < 1)):
        raise InputError(f"missing must be a probability in [0, 1) or three of them (one per question), "
                         f"got {missing!r}")
    miss = np.broadcast_to(miss, (3,))
    scale = check_positive("ratio_scale", ratio_scale)
    theta = check_number("relevant_from", relevant_from) - 0.5
    sigma_w = 1.0 / (np.sqrt(2.0) * ndtri(acc_w))
    scale_w = scale * np.exp(rng.normal(0.0, 1.0, nw))
    return acc_w, sigma_w, scale_w, b, miss, theta


def _topic_documents(qrels: Any, D: int) -> tuple:
    """The topics with at least D documents (the others announced and left out), their sizes, the
    first row of each, and the rows' labels and docnos."""
    q = _qrels(qrels, "qrels").sort_values(["qid", "docno"], kind="stable").reset_index(drop=True)
    sizes = q.groupby("qid", sort=True).size()
    small = sizes[sizes < D]
    if len(small):
        announce(f"simulate_crowd: {len(small)} topic(s) with fewer than docs_per_group={D} documents "
                 f"(e.g. qid {small.index[0]!r}) were left out")
        q = q[~q["qid"].isin(small.index)].reset_index(drop=True)
    if len(q) == 0:
        raise InputError(f"no topic has at least docs_per_group={D} documents")
    topics = np.asarray(sizes[sizes >= D].index, dtype=object)
    n_t = sizes[sizes >= D].to_numpy(dtype=np.int64)
    doc_start = np.concatenate([[0], np.cumsum(n_t)])
    return topics, n_t, doc_start, q["label"].to_numpy(dtype=float), q["docno"].to_numpy(dtype=object)


def _partition_groups(rng: np.random.Generator, n_t: np.ndarray, doc_start: np.ndarray, X_t: np.ndarray,
                      D: int) -> tuple:
    """Groups of D documents (rows of the qrels): X_t random partitionings of each topic, the last
    group of each filled with documents of its first; with each group's topic, partitioning and number."""
    # blocks = (topic, partitioning); a random permutation of the topic's documents in each
    block_topic = np.repeat(np.arange(len(n_t)), X_t)
    block_part = np.arange(len(block_topic)) - np.repeat(np.concatenate([[0], np.cumsum(X_t)[:-1]]), X_t)
    B = len(block_topic)
    nb = n_t[block_topic]
    pstart = np.concatenate([[0], np.cumsum(nb)])
    eb = np.repeat(np.arange(B), nb)
    edoc = doc_start[block_topic[eb]] + np.arange(len(eb)) - pstart[eb]
    perm_doc = edoc[np.lexsort((rng.random(len(eb)), eb))]
    G_b = -(-nb // D)
    S_b = D * G_b
    sstart = np.concatenate([[0], np.cumsum(S_b)])
    sb = np.repeat(np.arange(B), S_b)
    s = np.arange(len(sb)) - sstart[sb]
    src = np.where(s < nb[sb], s, s - D * (G_b[sb] - 1))
    group_docs = perm_doc[pstart[sb] + src].reshape(-1, D)
    NG = len(group_docs)
    group_block = np.repeat(np.arange(B), G_b)
    group_no = np.arange(NG) - np.repeat(np.concatenate([[0], np.cumsum(G_b)[:-1]]), G_b)
    return group_docs, block_topic[group_block], block_part[group_block], group_no


def _pair_lists(rng: np.random.Generator, lab: np.ndarray, D: int, K: int, gold: bool,
                relevant_from: float) -> tuple:
    """Each group's pair list (left and right slots, (groups, pairs)): relabelled templates, the
    gold pair on a random edge; and the gold side of each pair (NaN on pairs that are not gold)."""
    lib = _chain_templates(D, K, rng)
    NG, P = len(lab), lib.shape[1]
    tau = rng.integers(len(lib), size=NG)
    edge = rng.integers(P, size=NG)
    jitter = rng.random((NG, D)) * 1e-3
    hr = np.argmax(lab + jitter, axis=1)
    nr = np.argmin(lab + jitter, axis=1)
    rows = np.arange(NG)
    has_gold = bool(gold) & (lab[rows, hr] >= relevant_from) & (lab[rows, nr] < relevant_from)
    k_slot = rng.random((NG, D))
    k_pos = rng.random((NG, D))
    eu, ev = lib[tau, edge, 0], lib[tau, edge, 1]
    g = np.flatnonzero(has_gold)
    k_slot[g, hr[g]], k_slot[g, nr[g]] = -2.0, -1.0
    k_pos[g, eu[g]], k_pos[g, ev[g]] = -2.0, -1.0
    pi = np.empty((NG, D), dtype=np.int64)
    np.put_along_axis(pi, np.argsort(k_pos, axis=1), np.argsort(k_slot, axis=1), axis=1)
    pair_slots = np.take_along_axis(pi, lib[tau].reshape(NG, -1), axis=1).reshape(NG, P, 2)
    flip = rng.random(NG) < 0.5
    pair_slots[flip] = pair_slots[flip][:, :, ::-1]
    lslot, rslot = pair_slots[:, :, 0], pair_slots[:, :, 1]
    is_gold = has_gold[:, None] & (np.arange(P)[None, :] == edge[:, None])
    gold_side = np.where(lslot == hr[:, None], "left", "right").astype(object)
    gold_side[~is_gold] = np.nan
    return lslot, rslot, gold_side


def _answers(rng: np.random.Generator, lab: np.ndarray, lslot: np.ndarray, rslot: np.ndarray,
             sigma_w: np.ndarray, scale_w: np.ndarray, Y: int, b: float, theta: float, miss: np.ndarray) -> tuple:
    """The Y workers of each group (indices, (groups, Y)) and their answers, arrays (groups, Y, pairs):
    preferred side, absolute answer, and the two ratio numbers."""
    NG, D = lab.shape
    P = lslot.shape[1]
    wk = np.argsort(rng.random((NG, len(sigma_w))), axis=1)[:, :Y]
    sig = sigma_w[wk][:, :, None]
    share = _PRESENTATION_NOISE_SHARE
    read = lab[:, None, :] + sigma_w[wk][:, :, None] * math.sqrt(1 - share) * rng.standard_normal((NG, Y, D))
    uL = np.take_along_axis(read, np.broadcast_to(lslot[:, None, :], (NG, Y, P)), axis=2)
    uR = np.take_along_axis(read, np.broadcast_to(rslot[:, None, :], (NG, Y, P)), axis=2)
    uL = uL + sig * math.sqrt(share) * rng.standard_normal((NG, Y, P))
    uR = uR + sig * math.sqrt(share) * rng.standard_normal((NG, Y, P))
    lazy = rng.random((NG, Y, P)) < abs(b)
    left = np.where(lazy, b >= 0, uL > uR)
    relL, relR = uL > theta, uR > theta
    absolute = np.where(relL & relR, "both", np.where(relL | relR, "selected", "none")).astype(object)
    c = scale_w[wk][:, :, None]
    sL = np.round(c * _RATIO_GROWTH ** (uL - theta), 2)
    sR = np.round(c * _RATIO_GROWTH ** (uR - theta), 2)
    hi, lo = np.maximum(sL, sR), np.minimum(sL, sR)
    hi = np.where(hi == lo, hi + 0.01, hi)
    ratio_l, ratio_r = np.where(left, hi, lo), np.where(left, lo, hi)
    preferred = np.where(left, "left", "right").astype(object)
    m1, m2, m3 = (rng.random((3, NG, Y, P)) < miss[:, None, None, None])
    preferred[m1] = np.nan
    absolute[m2] = np.nan
    ratio_l, ratio_r = np.where(m3, np.nan, ratio_l), np.where(m3, np.nan, ratio_r)
    return wk, (preferred, absolute, ratio_l, ratio_r)


def _judgment_frame(gq: np.ndarray, group_part: np.ndarray, group_no: np.ndarray, group_docs: np.ndarray,
                    docno: np.ndarray, lslot: np.ndarray, rslot: np.ndarray, gold_side: np.ndarray,
                    workers: np.ndarray, answers: tuple) -> pd.DataFrame:
    """The judgments frame, one row per (group, worker, pair); ``workers``: the names, (groups, Y)."""
    preferred, absolute, ratio_l, ratio_r = answers
    NG, Y = workers.shape
    P = lslot.shape[1]
    gid = (pd.Series(gq, dtype=object).astype(str) + "-p" + pd.Series(group_part + 1).astype(str)
           + "-g" + pd.Series(group_no + 1).astype(str)).to_numpy(dtype=object)
    shape = (NG, Y, P)
    gi = np.broadcast_to(np.arange(NG)[:, None, None], shape).ravel()
    ldoc = group_docs[np.arange(NG)[:, None], lslot]
    rdoc = group_docs[np.arange(NG)[:, None], rslot]
    out = pd.DataFrame({
        "qid": gq[gi], "worker": np.broadcast_to(workers[:, :, None], shape).ravel(), "group": gid[gi],
        "pair": np.broadcast_to(np.arange(P)[None, None, :], shape).ravel(),
        "left": docno[np.broadcast_to(ldoc[:, None, :], shape).ravel()],
        "right": docno[np.broadcast_to(rdoc[:, None, :], shape).ravel()],
        "preferred": preferred.ravel(), "absolute": absolute.ravel(),
        "ratio_left": ratio_l.ravel(), "ratio_right": ratio_r.ravel(),
        "gold": np.broadcast_to(gold_side[:, None, :], shape).ravel(),
    })
    return out
