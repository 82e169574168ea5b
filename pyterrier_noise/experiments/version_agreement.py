"""Agreement between label versions: leaderboards, significance conclusions and the labels themselves.

The tables of :class:`~pyterrier_noise.experiments.VersionsResult`, as functions of arrays:

* :func:`leaderboard_agreement`: Kendall's tau (tau_b), tau_AP (Yilmaz, Aslam & Robertson 2008),
  tau@k, RBO (Webber, Moffat & Zobel 2010), top-k overlap and the largest rank change, for every
  ordered pair of versions;
* :func:`pair_conclusions` and :func:`conclusion_counts`: the conclusion on every system pair under
  each version and whether it is kept, lost, gained or reversed against the reference (the
  categories of Rashidi, Zobel & Moffat 2023 and of Voorhees 2000's assessor study);
* :func:`label_agreement` and :func:`confusion`: Cohen's kappa (1960; weighted: Cohen 1968),
  Krippendorff's alpha (2011) and the confusion of grades on the pairs both versions judged, and the
  share of each version's relevant documents the other did not judge -- per topic and overall.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .._validation import InputError
from .._vocab import CONCLUSIONS, Correction, Test
from ..engine import JudgmentTable
from ..stats import all_pairs, correct_pvalues, kendall_tau, rbo, tau_ap
from ._analysis import conclusion_codes

__all__ = ["rankings", "leaderboard_agreement", "pair_conclusions", "conclusion_counts",
           "cohen_kappa", "alpha_from_confusion", "label_agreement", "confusion"]


def _ranks(means: np.ndarray) -> np.ndarray:
    """Competition ranks (1 = best, ties share the best rank) along the last axis: 1 + the number of
    strictly better systems (``scipy.stats.rankdata(-x, method="min")``, without importing scipy.stats)."""
    return 1 + (means[..., None, :] > means[..., :, None]).sum(axis=-1)


def rankings(means: pd.DataFrame) -> pd.DataFrame:
    """``measure, version, name, mean, rank`` from a ``version, name, measure, mean`` frame."""
    out = means[["measure", "version", "name", "mean"]].copy()
    out["rank"] = out.groupby(["measure", "version"], sort=False)["mean"].rank(method="min", ascending=False) \
        .astype(np.int64)
    return out.reset_index(drop=True)


def leaderboard_agreement(means: np.ndarray, versions: Sequence[str], names: Sequence[str], top_k: int = 10,
                          rbo_p: float = 0.9) -> pd.DataFrame:
    """Agreement of the system orderings of every ordered pair of versions ``(a, b)``, ``a != b``.

    ``means``: ``(systems, versions)`` mean scores.  Columns: ``kendall_tau`` (tau_b), ``tau_ap``
    (tau_AP of b's ordering with a's as the truth), ``tau_at_k`` (tau_b on the systems in a's top
    ``top_k``), ``rbo`` (extrapolated, persistence ``rbo_p``), ``top_k_overlap`` (share of a's top k
    in b's top k), ``max_rank_change`` (largest |rank in a - rank in b|, competition ranks) and
    ``moved`` (the systems that move that far).  tau_AP, RBO and the top k need strict orderings:
    tied means are ordered by system position (``ties="first"``); tau_b counts ties as ties.
    """
    X = np.asarray(means, dtype=np.float64)
    S, V = X.shape
    if V != len(versions) or S != len(names):
        raise InputError(f"means has shape {X.shape}; expected ({len(names)} systems, {len(versions)} versions)")
    k = min(int(top_k), S)
    a, b = np.nonzero(~np.eye(V, dtype=bool))
    xa, xb = X.T[a], X.T[b]                                   # (pairs, S)
    tau = np.atleast_1d(kendall_tau(xa, xb))
    tap = np.atleast_1d(tau_ap(xb, xa, ties="first"))
    r = np.atleast_1d(rbo(xa, xb, p=rbo_p, ties="first"))
    order_a = np.argsort(-xa, axis=1, kind="stable")[:, :k]
    order_b = np.argsort(-xb, axis=1, kind="stable")[:, :k]
    top_a = np.take_along_axis(xa, order_a, axis=1)
    top_b = np.take_along_axis(xb, order_a, axis=1)
    tau_k = np.atleast_1d(kendall_tau(top_a, top_b)) if k >= 2 else np.full(len(a), np.nan)
    in_b = np.zeros((len(a), S), dtype=bool)
    np.put_along_axis(in_b, order_b, True, axis=1)
    overlap = np.take_along_axis(in_b, order_a, axis=1).sum(axis=1) / k
    ra, rb = _ranks(xa), _ranks(xb)
    change = np.abs(ra - rb)
    biggest = change.max(axis=1)
    names_arr = np.asarray(names, dtype=object)
    moved = [", ".join(names_arr[row == m]) if m > 0 else "" for row, m in zip(change, biggest)]
    return pd.DataFrame({"version_a": np.asarray(versions, dtype=object)[a],
                         "version_b": np.asarray(versions, dtype=object)[b], "kendall_tau": tau,
                         "tau_ap": tap, "tau_at_k": tau_k, "rbo": r, "top_k_overlap": overlap,
                         "max_rank_change": biggest, "moved": moved})


def pair_conclusions(values: np.ndarray, versions: Sequence[str], names: Sequence[str], reference: str,
                     test: Test = "t", correction: Correction | None = None, alpha: float = 0.05,
                     n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """The conclusion on every system pair ``(i < j)`` under every version.

    ``values``: ``(systems, topics, versions)`` per-topic scores.  Columns: ``version``,
    ``system_a``, ``system_b``, ``diff`` (mean of a - b), ``p_value`` (the paired test,
    :func:`~pyterrier_noise.stats.all_pairs`: the two-sided t-test from Gram matrices, within about
    1e-9 relative of ``scipy.stats.ttest_rel``), ``p_corrected``
    (over the pairs of that version; equal to ``p_value`` without a correction), ``conclusion``
    (``"a>b"``, ``"b>a"`` or ``"ns"``: significant when the corrected p < ``alpha``) and ``status``
    against the reference: ``kept`` (same conclusion), ``lost`` (significant under the reference,
    not under this version), ``gained`` (the reverse) or ``reversed`` (significant under both,
    other winner)."""
    X = np.asarray(values, dtype=np.float64)
    S, T, V = X.shape
    if reference not in versions:
        raise InputError(f"reference {reference!r} is not one of the versions {list(versions)}")
    i, j, p = all_pairs(X, test=test, n_resamples=n_resamples, seed=seed)    # p: (pairs, V)
    pc = p if correction is None else correct_pvalues(p, correction, axis=0)
    mean = X.mean(axis=1)
    diff = mean[i] - mean[j]
    with np.errstate(invalid="ignore"):
        sig = pc < alpha
    direction = np.sign(diff)
    ref = list(versions).index(reference)
    codes = conclusion_codes(sig[:, ref], direction[:, ref], sig, direction)   # (pairs, V)
    concl = np.where(sig, np.where(diff > 0, "a>b", "b>a"), "ns")
    names_arr = np.asarray(names, dtype=object)
    return pd.DataFrame({"version": np.repeat(np.asarray(versions, dtype=object), len(i)),
                         "system_a": np.tile(names_arr[i], V), "system_b": np.tile(names_arr[j], V),
                         "diff": diff.T.ravel(), "p_value": p.T.ravel(), "p_corrected": pc.T.ravel(),
                         "conclusion": concl.T.ravel(),
                         "status": np.asarray(CONCLUSIONS, dtype=object)[codes.T.ravel()]})


def conclusion_counts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per ``measure`` (if present) and ``version``: ``significant`` pairs, and the counts ``kept``
    (same conclusion as the reference, significant or not), ``lost``, ``gained``, ``reversed``."""
    keys = [c for c in ("measure", "version") if c in pairs.columns]
    sig = (pairs["conclusion"] != "ns").rename("significant")
    counts = pd.crosstab([pairs[k] for k in keys], pairs["status"]).reindex(columns=list(CONCLUSIONS), fill_value=0)
    out = sig.groupby([pairs[k] for k in keys], sort=False).sum().to_frame().join(counts)
    order = pairs[keys].drop_duplicates()
    return order.merge(out.reset_index(), on=keys, how="left").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# label agreement

def cohen_kappa(counts: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa of ``(..., K, K)`` confusion counts (rows rater a, columns rater b).

    ``weights``: None (Cohen 1960), ``"linear"`` or ``"quadratic"`` (Cohen 1968: disagreement
    weights ``|i - j|`` or ``(i - j)^2`` over the category positions, as
    ``statsmodels.stats.inter_rater.cohens_kappa``).  NaN where the expected disagreement is 0."""
    C = np.asarray(counts, dtype=np.float64)
    K = C.shape[-1]
    pos = np.arange(K, dtype=np.float64)
    if weights is None:
        w = 1.0 - np.eye(K)
    elif weights == "linear":
        w = np.abs(pos[:, None] - pos[None, :])
    elif weights == "quadratic":
        w = (pos[:, None] - pos[None, :]) ** 2
    else:
        raise InputError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    n = C.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = C.sum(axis=-1)[..., :, None] * C.sum(axis=-2)[..., None, :] / n[..., None, None]
        return 1.0 - (C * w).sum(axis=(-2, -1)) / (expected * w).sum(axis=(-2, -1))


def alpha_from_confusion(counts: np.ndarray, values: np.ndarray, level: str = "ordinal") -> np.ndarray:
    """Krippendorff's alpha of two raters who both rated every unit, from their ``(..., K, K)``
    confusion counts (each unit adds one to ``o[a, b]`` and one to ``o[b, a]``: the coincidence
    matrix is ``C + C^T``); the same value as :func:`~pyterrier_noise.stats.krippendorff_alpha` on
    the units x 2 matrix.  ``values``: the K category values (ordered); ``level``: ``"nominal"``,
    ``"ordinal"`` or ``"interval"``."""
    C = np.asarray(counts, dtype=np.float64)
    o = C + np.swapaxes(C, -1, -2)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    vals = np.asarray(values, dtype=np.float64)
    K = C.shape[-1]
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(K), o.shape)
    elif level == "ordinal":
        mid = np.cumsum(n_c, axis=-1) - n_c / 2.0
        delta = (mid[..., :, None] - mid[..., None, :]) ** 2
    elif level == "interval":
        delta = np.broadcast_to((vals[:, None] - vals[None, :]) ** 2, o.shape)
    else:
        raise InputError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
    expected = (n_c[..., :, None] * n_c[..., None, :] * delta).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - (n - 1) * (o * delta).sum(axis=(-2, -1)) / expected
    return np.where(expected > 0, out, np.nan)


def _pair_confusion(table: JudgmentTable, L: np.ndarray, a: int, b: int, codes: np.ndarray, K: int) -> np.ndarray:
    """``(topics + 1, K, K)`` confusion of versions a and b on their common judgments (last: all)."""
    both = ~np.isnan(L[:, a]) & ~np.isnan(L[:, b])
    T = len(table.topics)
    flat = (table.topic_index[both] * K + codes[both, a]) * K + codes[both, b]
    C = np.bincount(flat, minlength=T * K * K).reshape(T, K, K)
    return np.concatenate([C, C.sum(axis=0, keepdims=True)])


def _grades(L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.unique(L[~np.isnan(L)])
    if len(values) == 0:
        raise InputError("no version has any judgment on the evaluated topics")
    codes = np.searchsorted(values, np.where(np.isnan(L), values[0], L))
    return values, codes


def label_agreement(table: JudgmentTable, L: np.ndarray, versions: Sequence[str], rel: float = 1,
                    alpha_level: str = "ordinal", weights: str = "linear") -> pd.DataFrame:
    """Agreement of every pair of versions ``(a, b)``, ``a`` before ``b``, per topic and overall
    (``qid`` ``"all"``).

    ``L``: ``(judgments, versions)`` labels over ``table`` rows (NaN = not judged).  Columns:
    ``judged_a``, ``judged_b``, ``common`` (pairs both judged), ``agreement`` (share of common pairs
    with the same grade), ``kappa`` (Cohen's kappa on binary labels, relevant at ``label >= rel``),
    ``kappa_weighted`` (on the grades, ``weights``), ``alpha`` (Krippendorff's alpha on the grades
    at ``alpha_level``), ``relevant_a``, ``relevant_b``, and ``a_relevant_unjudged_by_b`` (share of
    a's relevant documents that b did not judge) and ``b_relevant_unjudged_by_a``.  Kappa and alpha
    are on the common pairs only; NaN where they are undefined (no pair, or no variation)."""
    L = np.asarray(L, dtype=np.float64)
    values, codes = _grades(L)
    K = len(values)
    relv = values >= rel
    qids = np.asarray([*table.topics, "all"], dtype=object)
    T = len(table.topics)
    judged = ~np.isnan(L)
    with np.errstate(invalid="ignore"):
        relevant = L >= rel

    def per_topic(mask: np.ndarray) -> np.ndarray:
        c = np.bincount(table.topic_index[mask], minlength=T)
        return np.append(c, c.sum()).astype(np.float64)

    rows = []
    for a in range(L.shape[1]):           # one vectorised pass per pair of versions (a handful)
        for b in range(a + 1, L.shape[1]):
            C = _pair_confusion(table, L, a, b, codes, K)
            binary = np.stack([np.stack([C[:, ~relv][:, :, ~relv].sum(axis=(1, 2)),
                                         C[:, ~relv][:, :, relv].sum(axis=(1, 2))], axis=-1),
                               np.stack([C[:, relv][:, :, ~relv].sum(axis=(1, 2)),
                                         C[:, relv][:, :, relv].sum(axis=(1, 2))], axis=-1)], axis=-2)
            common = C.sum(axis=(1, 2)).astype(np.float64)
            rel_a, rel_b = per_topic(relevant[:, a]), per_topic(relevant[:, b])
            with np.errstate(invalid="ignore", divide="ignore"):
                rows.append(pd.DataFrame({
                    "version_a": versions[a], "version_b": versions[b], "qid": qids,
                    "judged_a": per_topic(judged[:, a]), "judged_b": per_topic(judged[:, b]), "common": common,
                    "agreement": np.trace(C, axis1=1, axis2=2) / common,
                    "kappa": cohen_kappa(binary), "kappa_weighted": cohen_kappa(C, weights),
                    "alpha": alpha_from_confusion(C, values, alpha_level),
                    "relevant_a": rel_a, "relevant_b": rel_b,
                    "a_relevant_unjudged_by_b": per_topic(relevant[:, a] & ~judged[:, b]) / rel_a,
                    "b_relevant_unjudged_by_a": per_topic(relevant[:, b] & ~judged[:, a]) / rel_b}))
    out = pd.concat(rows, ignore_index=True)
    for c in ("judged_a", "judged_b", "common", "relevant_a", "relevant_b"):
        out[c] = out[c].astype(np.int64)
    return out


def confusion(table: JudgmentTable, L: np.ndarray, versions: Sequence[str]) -> pd.DataFrame:
    """``version_a, version_b, qid, label_a, label_b, count``: the confusion of grades of every pair
    of versions on the pairs both judged, per topic and overall (``qid`` ``"all"``), zero counts
    included."""
    L = np.asarray(L, dtype=np.float64)
    values, codes = _grades(L)
    K = len(values)
    qids = np.asarray([*table.topics, "all"], dtype=object)
    rows = []
    for a in range(L.shape[1]):
        for b in range(a + 1, L.shape[1]):
            C = _pair_confusion(table, L, a, b, codes, K)
            t, ga, gb = np.indices(C.shape).reshape(3, -1)
            rows.append(pd.DataFrame({"version_a": versions[a], "version_b": versions[b], "qid": qids[t],
                                      "label_a": values[ga], "label_b": values[gb], "count": C.ravel()}))
    return pd.concat(rows, ignore_index=True)
