"""Relevance scores from pairwise judgments (Yang 2019 Sec. 5.3.1, 5.3.5, 5.3.7).

Each question gives a score in [0, 1] per document: preference and absolute *frequencies*, and the
ratio method's completion of the incomplete pairwise-comparison matrix, solved directly as the
logarithmic least-squares problem the thesis's geometric-mean iteration converges to (Bozoki,
Fulop & Ronyai 2010).  :func:`aggregate` turns a method's scores into ordinary qrels;
:func:`to_categories` maps them to graded categories by matching each topic's category
proportions (Fig. 5.10).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import spsolve

from .._validation import InputError, announce, check_choice, check_int, check_positive
from .._vocab import CROWD_METHODS as METHODS
from .._vocab import BIAS_WEIGHTINGS, RATIO_METHODS, BiasWeighting, CrowdMethod, RatioMethod
from ._table import _Index, _index, _judgments, _qrels

__all__ = ["METHODS", "document_scores", "aggregate", "ratio_matrix_scores", "to_categories"]



def _bias_weights(left_bias: Any, weighting: str) -> tuple[float, float]:
    """(w_L, w_R): credit given to the *other* document when the left / right one is chosen."""
    try:
        b = float(left_bias)
    except (TypeError, ValueError):
        raise InputError(f"left_bias must be a number in (-1, 1), got {left_bias!r}") from None
    if not -1.0 < b < 1.0:
        raise InputError(f"left_bias must be in (-1, 1) (the left-choice rate minus the right-choice rate "
                         f"on equally relevant pairs), got {left_bias!r}")
    if weighting == "symmetric":
        if abs(b) >= 0.5:
            raise InputError(f"bias_weighting='symmetric' needs |left_bias| < 0.5, got {left_bias!r}")
        return abs(b), abs(b)
    check_choice("bias_weighting", weighting, BIAS_WEIGHTINGS)
    w = abs(b) / (1.0 + abs(b))
    return (w, 0.0) if b >= 0 else (0.0, w)


def _normalizer(normalizer: Any, what: str) -> float | None:
    if isinstance(normalizer, str):
        if normalizer != "observed":
            raise InputError(f"normalizer must be 'observed' or a positive number (K*X*Y presentations per "
                             f"document), got {normalizer!r}")
        return None
    try:
        v = float(normalizer)
    except (TypeError, ValueError):
        raise InputError(f"normalizer must be 'observed' or a positive number, got {normalizer!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(f"normalizer must be 'observed' or a positive number, got {normalizer!r}")
    return v


def _frequency(credit: np.ndarray, presentations: np.ndarray, norm: float | None, what: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        score = credit / (presentations if norm is None else norm)
    score[presentations == 0] = np.nan
    if norm is not None and np.nanmax(score, initial=0.0) > 1.0 + 1e-12:
        over = int(np.sum(presentations > norm))
        announce(f"{what} frequencies: {over} document(s) were presented more than normalizer={norm:g} times; "
                 f"their scores exceed 1 (use normalizer='observed')")
    return score


def _preference(j: pd.DataFrame, ix: _Index, n: int, left_bias: float, weighting: str,
                norm: float | None) -> tuple[np.ndarray, np.ndarray]:
    wl, wr = _bias_weights(left_bias, weighting)
    v = ix.has_pref
    lc = ix.left_chosen[v]
    credit_l = np.where(lc, 1.0 - wl, wr)
    credit_r = np.where(lc, wl, 1.0 - wr)
    li, ri = ix.li[v], ix.ri[v]
    credit = np.bincount(li, credit_l, n) + np.bincount(ri, credit_r, n)
    pres = np.bincount(li, minlength=n) + np.bincount(ri, minlength=n)
    return _frequency(credit, pres.astype(float), norm, "preference"), pres


def _absolute(j: pd.DataFrame, ix: _Index, n: int, norm: float | None) -> tuple[np.ndarray, np.ndarray]:
    a = j["absolute"].to_numpy(dtype=object)
    v = pd.notna(a)
    both, sel = (a == "both")[v], (a == "selected")[v]
    lc = ix.left_chosen[v]
    rel_l = (both | (sel & lc)).astype(float)
    rel_r = (both | (sel & ~lc)).astype(float)
    li, ri = ix.li[v], ix.ri[v]
    credit = np.bincount(li, rel_l, n) + np.bincount(ri, rel_r, n)
    pres = np.bincount(li, minlength=n) + np.bincount(ri, minlength=n)
    return _frequency(credit, pres.astype(float), norm, "absolute"), pres


def _pair_log_ratios(li: np.ndarray, ri: np.ndarray, log_ratio: np.ndarray, n: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique pairs (a < b) and log M[a, b] = mean log ratio (geometric mean of the ratios)."""
    a, b = np.minimum(li, ri), np.maximum(li, ri)
    m = np.where(li < ri, log_ratio, -log_ratio)
    keys, inv = np.unique(a * n + b, return_inverse=True)
    mean = np.bincount(inv, m) / np.bincount(inv)
    return keys // n, keys % n, mean


def _llsm(a: np.ndarray, b: np.ndarray, logm: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Logarithmic least squares: minimise sum over known pairs (y_a - y_b - log M_ab)^2.

    Bozoki, Fulop & Ronyai (2010): the optimum solves the Laplacian system ``L y = r`` with
    ``L_ii`` = number of known partners of i, ``L_ij = -1`` for a known pair, ``r_i = sum_j log
    M_ij``; it is unique per connected component of the comparison graph up to a constant.  One
    node per component is grounded (y = 0) and the rest is one sparse direct solve over every
    topic at once (the system is block diagonal by topic).  Returns ``(y, component)``; ``y`` is
    NaN for documents without any comparison.
    """
    adj = sp.coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)).tocsr()
    adj = adj + adj.T
    n_comp, comp = connected_components(adj, directed=False)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    lap = sp.diags(deg) - adj
    r = np.bincount(a, logm, n) - np.bincount(b, logm, n)
    _, ground = np.unique(comp, return_index=True)
    keep = np.ones(n, dtype=bool)
    keep[ground] = False
    y = np.zeros(n)
    if keep.any():
        sub = lap[keep][:, keep].tocsc()
        sol = spsolve(sub, r[keep])
        y[keep] = np.atleast_1d(sol)
    y[deg == 0] = np.nan
    return y, comp


def _iterative(a: np.ndarray, b: np.ndarray, logm: np.ndarray, doc_topic: np.ndarray, n: int,
               iterations: int) -> np.ndarray:
    """The thesis's completion (Yang 2019 Sec. 5.3.1 steps 2-4, with row means: see ``scores``).

    ``S_i`` = geometric mean of all N entries of row i (diagonal 1 included); unknown cells are
    filled with ``S_u / S_v``; repeated ``iterations`` times from ``S = 1`` (unknown cells 1 in the
    first pass).  Dense per topic (padded to the largest topic, all topics in one array): a
    reference and compatibility mode, O(n_topics x N^2) memory.
    """
    has = np.zeros(n, dtype=bool)
    has[a] = True
    has[b] = True
    docs = np.flatnonzero(has)
    top = doc_topic[docs]
    t_codes, t_inv = np.unique(top, return_inverse=True)
    counts = np.bincount(t_inv)
    start = np.concatenate([[0], np.cumsum(counts)])
    order = np.argsort(t_inv, kind="stable")
    local = np.empty(len(docs), dtype=np.int64)
    local[order] = np.arange(len(docs)) - start[t_inv[order]]
    pos = np.full(n, -1, dtype=np.int64)
    pos[docs] = local
    tpos = np.full(n, -1, dtype=np.int64)
    tpos[docs] = t_inv
    T, N = len(t_codes), int(counts.max())
    logM = np.zeros((T, N, N))
    known = np.zeros((T, N, N), dtype=bool)
    t = tpos[a]
    logM[t, pos[a], pos[b]] = logm
    logM[t, pos[b], pos[a]] = -logm
    known[t, pos[a], pos[b]] = True
    known[t, pos[b], pos[a]] = True
    valid = np.arange(N)[None, :] < counts[:, None]
    y = np.zeros((T, N))
    for _ in range(iterations):
        full = np.where(known, logM, y[:, :, None] - y[:, None, :])
        y = np.where(valid, (full * valid[:, None, :]).sum(axis=2) / counts[:, None], 0.0)
    out = np.full(n, np.nan)
    out[docs] = y[t_inv, local]
    return out


def _ratio(j: pd.DataFrame, ix: _Index, n: int, eps: float, method: str, iterations: int
           ) -> np.ndarray:
    rl = j["ratio_left"].to_numpy(dtype=float)
    rr = j["ratio_right"].to_numpy(dtype=float)
    v = ~(np.isnan(rl) | np.isnan(rr))
    score = np.full(n, np.nan)
    if not v.any():
        return score
    a, b, logm = _pair_log_ratios(ix.li[v], ix.ri[v], np.log(rl[v] + eps) - np.log(rr[v] + eps), n)
    if method == "llsm":
        y, comp = _llsm(a, b, logm, n)
        ok = ~np.isnan(y)
        # normalise by the largest score of each component (S_i / S_max, Sec. 5.3.1 step 5)
        cmax = np.full(comp.max() + 1, -np.inf)
        np.maximum.at(cmax, comp[ok], y[ok])
        score[ok] = np.exp(y[ok] - cmax[comp[ok]])
        # several components in one topic: their scales are not comparable
        comps = pd.DataFrame({"t": ix.doc_topic[ok], "c": comp[ok]}).drop_duplicates()
        per_topic = comps.groupby("t").size()
        split = per_topic[per_topic > 1]
        if len(split):
            announce(f"ratio method: the comparison graph of {len(split)} topic(s) (e.g. qid "
                     f"{ix.topics[split.index[0]]!r}) is not connected; each of its {int(split.max())} or fewer "
                     f"parts was scaled separately (scores are comparable within a part only)")
    elif method == "iterative":
        iterations = check_int("iterations", iterations)
        y = _iterative(a, b, logm, ix.doc_topic, n, iterations)
        ok = ~np.isnan(y)
        tmax = np.full(len(ix.topics), -np.inf)
        np.maximum.at(tmax, ix.doc_topic[ok], y[ok])
        score[ok] = np.exp(y[ok] - tmax[ix.doc_topic[ok]])
    else:
        check_choice("ratio_method", method, RATIO_METHODS)
    return score


def _combine(cols: list[np.ndarray], eps: float) -> tuple[np.ndarray, np.ndarray]:
    logs = np.log(np.stack(cols, axis=1) + eps)
    avail = (~np.isnan(logs)).sum(axis=1)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(np.where(avail[:, None] > 0, logs, 0.0), axis=1)
    out = np.exp(mean) - eps
    out[avail == 0] = np.nan
    return out, avail


def document_scores(judgments: Any, *, eps: float = 1.0, left_bias: float = 0.0,
                    bias_weighting: BiasWeighting = "position",
                    normalizer: str | float = "observed", ratio_method: RatioMethod = "llsm",
                    iterations: int = 100,
                    combine: Sequence[str] = ("preference", "absolute", "ratio")) -> pd.DataFrame:
    """Every document's relevance score under each method (Yang 2019 Sec. 5.3.1, 5.3.5, 5.3.7).

    * ``preference`` (QUESTION1 frequency): credit / presentations.  A choice gives the chosen
      document 1 and the other 0 (Sec. 5.3.1: e.g. 6 wins in 99 presentations = 0.061).  With a
      left bias ``b`` (left-choice rate minus right-choice rate on equally relevant pairs, see
      :func:`position_bias`) and ``bias_weighting="position"``, a *left* choice gives the left
      document ``1 - w`` and the right one ``w`` with ``w = b / (1 + b)`` (right choices keep 1/0;
      mirrored for ``b < 0``), which makes the expected credit of two equally relevant documents
      equal.  ``"symmetric"`` is the thesis's literal proposal (Sec. 5.3.5): every choice gives
      ``1 - b`` and ``b`` (0.96 / 0.04), an affine map of the frequency that keeps the order.
    * ``absolute`` (QUESTION2 frequency): presentations whose answer implies the document is
      relevant (``both``; ``selected`` for the chosen one) / presentations.
    * ``ratio`` (QUESTION3): the incomplete pairwise matrix ``M[i, j]`` = geometric mean over
      assessments of ``(s_i + eps) / (s_j + eps)`` is completed by logarithmic least squares
      (``ratio_method="llsm"``, the fixed point of the thesis's iteration: Bozoki et al. 2010) or by ``iterations`` rounds of the iteration itself
      (``"iterative"``, row geometric means including the diagonal; the thesis's "column" is
      wrong: it ranks the documents upside down).  Scores are ``S_i / max S`` per topic (per connected part of a
      topic's comparison graph, announced, when it is not connected).  ``eps = 1`` makes the
      ratio depend on each worker's number scale.
    * ``combined``: ``(prod_k (Rel_k + eps))^(1/m) - eps`` over the ``combine`` methods
      (Sec. 5.3.7); a document missing some of them is combined over the others (announced).

    Args:
        judgments: a frame or path (anything :func:`read_pairwise` reads).
        eps: the epsilon of the ratio and the combination (thesis: 1).
        left_bias, bias_weighting: position-bias weighting of preference answers.
        normalizer: ``"observed"`` (each document's own number of answered presentations; seed
            note A7) or a number, the design's ``K * X * Y`` presentations per document.
        ratio_method, iterations: see above.
        combine: the methods combined into ``combined``.

    Returns:
        ``qid, docno, presentations, workers, preference, absolute, ratio, combined``: one row per
        document shown (sorted by qid, docno); a score is NaN when the method has no answer for it.
    """
    out = _document_scores(judgments, set(METHODS), eps=eps, left_bias=left_bias,
                           bias_weighting=bias_weighting, normalizer=normalizer, ratio_method=ratio_method,
                           iterations=iterations, combine=combine)
    out.attrs["fractional"] = "keep"      # graded scores: readers keep them as gains (read_qrels)
    return out


def _document_scores(judgments: Any, want: set, *, eps: float = 1.0, left_bias: float = 0.0,
                     bias_weighting: BiasWeighting = "position", normalizer: str | float = "observed",
                     ratio_method: RatioMethod = "llsm", iterations: int = 100,
                     combine: Sequence[str] = ("preference", "absolute", "ratio")) -> pd.DataFrame:
    """:func:`document_scores` computing only the methods in ``want`` (others NaN)."""
    j = _judgments(judgments)
    e = check_positive("eps", eps)
    norm = _normalizer(normalizer, "normalizer")
    if isinstance(combine, str):
        combine = [combine]
    combine = list(combine)
    if not combine or any(m not in METHODS[:3] for m in combine):
        raise InputError(f"combine must name some of {list(METHODS[:3])}, got {combine!r}")
    need = set(want) | (set(combine) if "combined" in want else set())
    ix = _index(j)
    n = len(ix.docno)
    nan = np.full(n, np.nan)
    cols = {"preference": nan, "absolute": nan, "ratio": nan}
    if "preference" in need:
        cols["preference"] = _preference(j, ix, n, left_bias, bias_weighting, norm)[0]
    else:
        _bias_weights(left_bias, bias_weighting)         # validate anyway
    if "absolute" in need:
        cols["absolute"] = _absolute(j, ix, n, norm)[0]
    if "ratio" in need:
        cols["ratio"] = _ratio(j, ix, n, e, ratio_method, iterations)
    pres = np.bincount(ix.li, minlength=n) + np.bincount(ix.ri, minlength=n)
    w = pd.factorize(j["worker"].to_numpy(dtype=object))[0].astype(np.int64)
    nw = int(w.max()) + 1
    dw = np.unique(np.concatenate([ix.li * nw + w, ix.ri * nw + w]))
    workers = np.bincount(dw // nw, minlength=n)
    comb = nan
    if "combined" in want:
        present = [m for m in combine if not np.isnan(cols[m]).all()]
        absent = [m for m in combine if m not in present]
        if absent and present:
            announce(f"combined scores: the judgments have no {' or '.join(absent)} answers; combined over "
                     f"{present}")
        if present:
            comb, avail = _combine([cols[m] for m in present], e)
            partial = (avail > 0) & (avail < len(present))
            if partial.any():
                announce(f"combined scores: {int(partial.sum())} document(s) lack some of {present} and were "
                         f"combined over the methods they have")
    return pd.DataFrame({"qid": ix.doc_qid, "docno": ix.docno, "presentations": pres, "workers": workers,
                         "preference": cols["preference"], "absolute": cols["absolute"], "ratio": cols["ratio"],
                         "combined": comb})


def aggregate(judgments: Any, method: CrowdMethod = "ratio",
              **options: Any) -> pd.DataFrame:
    """Qrels from pairwise judgments: ``qid, docno, label`` with ``label`` the method's score in [0, 1].

    Yang 2019 Sec. 5.3.1 / 5.3.7; ``method`` is ``"preference"``, ``"absolute"``, ``"ratio"`` or
    ``"combined"`` and ``options`` are those of :func:`document_scores`.  Documents without an
    answer for the method are left out (announced): they are unjudged in these qrels.  The result
    is an ordinary qrels frame for :func:`pyterrier_noise.evaluate`, ``AlignedRuns`` and anything
    that takes qrels; use a graded gain such as ``RBP(p=0.9,max_rel=1)`` (gain = score), or map to
    categories with :func:`to_categories` first.
    """
    check_choice("method", method, METHODS)
    scores = _document_scores(judgments, {method}, **options)
    lab = scores[method].to_numpy()
    keep = ~np.isnan(lab)
    if not keep.all():
        announce(f"{method} qrels: {int((~keep).sum())} document(s) have no {method} answer and are left out "
                 f"(unjudged)")
    if not keep.any():
        raise InputError(f"no document has a {method} answer; nothing to aggregate")
    out = pd.DataFrame({"qid": scores["qid"].to_numpy()[keep], "docno": scores["docno"].to_numpy()[keep],
                        "label": lab[keep]})
    out.attrs["fractional"] = "keep"      # graded scores: readers keep them as gains (read_qrels)
    return out


def ratio_matrix_scores(matrix: Any, method: RatioMethod = "llsm",
                        iterations: int = 100) -> np.ndarray:
    """Complete one incomplete pairwise ratio matrix and return ``S / max S`` (Yang 2019 Sec. 5.3.1).

    ``matrix[i, j]`` is the ratio of document i's relevance to document j's (``> 0``), NaN where
    the pair was not compared; a pair given in both cells must be reciprocal (``M[j, i] =
    1 / M[i, j]``); the diagonal is ignored.  ``method="llsm"`` solves the logarithmic least
    squares problem directly (Bozoki, Fulop & Ronyai 2010); ``"iterative"`` runs the thesis's
    row-geometric-mean iteration ``iterations`` times.  For a complete matrix both equal the row
    geometric means.  The comparison graph must be connected.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise InputError(f"matrix must be square with at least 2 rows, got shape {m.shape}")
    n = m.shape[0]
    off = ~np.eye(n, dtype=bool)
    given = off & ~np.isnan(m)
    if (m[given] <= 0).any() or np.isinf(m[given]).any():
        i, k = np.argwhere(given & ~((m > 0) & np.isfinite(m)))[0]
        raise InputError(f"matrix row {i}, column {k}: ratios must be positive and finite, got {m[i, k]!r}")
    both = given & given.T
    with np.errstate(divide="ignore", invalid="ignore"):
        bad = both & ~np.isclose(m * m.T, 1.0, rtol=1e-9, atol=0)
    if bad.any():
        i, k = np.argwhere(bad)[0]
        raise InputError(f"matrix cells ({i}, {k}) and ({k}, {i}) are not reciprocal: {m[i, k]!r} x {m[k, i]!r} != 1")
    upper = given | given.T
    a, b = np.nonzero(np.triu(upper, 1))
    logm = np.where(given[a, b], np.log(np.where(given[a, b], m[a, b], 1.0)),
                    -np.log(np.where(given[b, a], m[b, a], 1.0)))
    if method == "llsm":
        y, comp = _llsm(a, b, logm, n)
        if np.isnan(y).any() or comp.max() > 0:
            raise InputError("the comparison graph of matrix is not connected: the completion is not unique")
    elif method == "iterative":
        iterations = check_int("iterations", iterations)
        y = _iterative(a, b, logm, np.zeros(n, dtype=np.int64), n, iterations)
    else:
        raise InputError(f"method must be 'llsm' or 'iterative', got {method!r}")
    return np.exp(y - np.max(y))


# graded categories

def to_categories(scores: Any, reference: Any = None,
                  proportions: Sequence[float] | Mapping[float, float] | None = None) -> pd.DataFrame:
    """Map numeric relevance scores to graded categories by matching proportions (Yang 2019 Fig. 5.10).

    For each topic, documents are sorted by score (descending; ties by docno) and
    the top ``round(N * P_top)`` get the highest category, the next the second, and so on, with
    cumulative rounding of the boundaries (``round(N * (P_top + ... + P_c))``).  Proportions come
    from ``reference`` qrels (per topic: the share of the topic's judged documents with each
    label; the thesis used Sormunen's categories) or from ``proportions`` (for every topic:
    a sequence for labels 0, 1, 2, ... lowest first, or a mapping label -> proportion).  The
    labels are the reference's (or the given) label values, so a linear gain over categories is
    ``max_rel`` = the highest label (e.g. ``nDCG@10``, ``RBP(p=0.9,max_rel=3)``).

    Args:
        scores: qrels whose label is a numeric score (e.g. from :func:`aggregate`).
        reference: qrels giving each topic's category proportions.
        proportions: proportions for every topic (alternative to ``reference``); must sum to 1.

    Returns:
        ``scores`` with ``label`` replaced by the category (other columns kept), rows in the input order.
    """
    if (reference is None) == (proportions is None):
        raise InputError("give exactly one of reference= (qrels) or proportions= (per label)")
    s = scores.copy() if isinstance(scores, pd.DataFrame) else _qrels(scores, "scores")
    base = _qrels(s, "scores")
    if len(base) != len(s):            # duplicates dropped (announced): keep the validated rows only
        s = base.copy()
    qid = base["qid"].to_numpy(dtype=object)
    tcodes, topics = pd.factorize(qid, sort=True)
    T = len(topics)
    if reference is not None:
        ref = _qrels(reference, "reference")
        labels = np.unique(ref["label"].to_numpy())
        rt = pd.Index(topics).get_indexer(ref["qid"].to_numpy(dtype=object))
        lab_code = np.searchsorted(labels, ref["label"].to_numpy())
        inside = rt >= 0
        counts = np.zeros((T, len(labels)))
        np.add.at(counts, (rt[inside], lab_code[inside]), 1.0)
        tot = counts.sum(axis=1)
        if (tot == 0).any():
            miss = topics[int(np.flatnonzero(tot == 0)[0])]
            raise InputError(f"reference: topic {miss!r} of scores has no reference judgments to take "
                             f"category proportions from ({int((tot == 0).sum())} such topic(s))")
        props = counts / tot[:, None]
    else:
        if isinstance(proportions, Mapping):
            labels = np.array(sorted(float(k) for k in proportions), dtype=float)
            p = np.array([float(proportions[k]) for k in sorted(proportions, key=float)])
        else:
            p = np.asarray(list(proportions), dtype=float)
            labels = np.arange(len(p), dtype=float)
        if p.ndim != 1 or len(p) < 2 or not np.isfinite(p).all() or (p < 0).any():
            raise InputError(f"proportions must be at least two non-negative numbers, got {proportions!r}")
        if not math.isclose(p.sum(), 1.0, abs_tol=1e-6):
            raise InputError(f"proportions must sum to 1, got {p.tolist()!r} (sum {p.sum():g})")
        props = np.broadcast_to(p, (T, len(p)))
    # boundaries from the top category down: cumulative shares, rounded half up
    cum = np.cumsum(props[:, ::-1], axis=1)
    n_t = np.bincount(tcodes, minlength=T)
    bounds = np.floor(n_t[:, None] * cum + 0.5)
    bounds[:, -1] = n_t
    order = np.lexsort((base["docno"].to_numpy(dtype=object).astype(str), -base["label"].to_numpy(), tcodes))
    rank = np.empty(len(order), dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(n_t)])
    rank[order] = np.arange(len(order)) - start[tcodes[order]]
    cat_from_top = (rank[:, None] >= bounds[tcodes]).sum(axis=1)
    s["label"] = labels[::-1][np.minimum(cat_from_top, len(labels) - 1)]
    return s
