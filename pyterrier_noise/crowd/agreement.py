"""Agreement of crowd qrels with other qrels (Yang 2019 Sec. 5.3.4, 5.3.6, Tables 5.5-5.8, Fig. 5.17).

Within-topic document pairs (agree / disagree / tied shares, Kendall's tau_b), Krippendorff's
alpha over pair orders, and the agreement of the system orderings two qrels induce.
"""
from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, announce, check_choice
from .._vocab import AGREEMENT_PAIRS, PAIR_TIES, AgreementPairs, PairTie
from ._table import _qrels

__all__ = ["document_agreement", "document_tau", "judgment_alpha", "SystemAgreement", "system_agreement"]

#: within-topic document pairs built per chunk (bounds memory on large topics)
_MAX_PAIRS_PER_CHUNK = 1 << 22


def _score_matrix(qrels_list: Sequence[Any], how: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels of several qrels over their common (``how="inner"``) or all documents, sorted by
    topic: ``(values (J, R) with NaN, topic_start (T+1,), topics)``."""
    frames = [_qrels(q, f"qrels #{k + 1}") for k, q in enumerate(qrels_list)]
    idx = [pd.MultiIndex.from_arrays([f["qid"].to_numpy(dtype=object), f["docno"].to_numpy(dtype=object)])
           for f in frames]
    docs = idx[0]
    for other in idx[1:]:
        docs = docs.intersection(other) if how == "inner" else docs.union(other)
    docs = docs.sort_values()
    vals = np.column_stack([pd.Series(f["label"].to_numpy(), index=i).reindex(docs).to_numpy(dtype=float)
                            for f, i in zip(frames, idx)])
    tcodes, topics = pd.factorize(docs.get_level_values(0), sort=True)
    start = np.concatenate([[0], np.cumsum(np.bincount(tcodes, minlength=len(topics)))])
    return vals, start, np.asarray(topics, dtype=object)


def _within_topic_pairs(start: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """All pairs (i < j) of rows of the same topic, in chunks: ``(i, j, topic)``."""
    J = int(start[-1])
    if J == 0:
        return
    sizes = np.diff(start)
    topic_of = np.repeat(np.arange(len(sizes)), sizes)
    c = start[topic_of + 1] - np.arange(J) - 1
    cum = np.concatenate([[0], np.cumsum(c)])
    r0 = 0
    while r0 < J:
        r1 = int(np.searchsorted(cum, cum[r0] + _MAX_PAIRS_PER_CHUNK, side="right")) - 1
        r1 = min(max(r1, r0 + 1), J)
        cc = c[r0:r1]
        i = np.repeat(np.arange(r0, r1), cc)
        off = np.arange(len(i)) - np.repeat(cum[r0:r1] - cum[r0], cc)
        yield i, i + 1 + off, topic_of[i]
        r0 = r1


def document_agreement(qrels_a: Any, qrels_b: Any,
                       among: AgreementPairs = "all") -> pd.DataFrame:
    """How two qrels order pairs of documents of the same topic (Yang 2019 Tables 5.5-5.7).

    Over the documents both judge: ``agree`` = both order the pair the same way strictly,
    ``disagree`` = strictly opposite, ``tied`` = equal labels in either (Table 5.7's A/D/U),
    ``separated`` = ``qrels_a`` orders the pair strictly.  ``among="b_ordered"`` counts only the
    pairs ``qrels_b`` orders strictly (Table 5.5 with b = NIST binary: ``tied`` is then a tie in
    ``qrels_a``); ``"b_tied"`` only the pairs it ties (Table 5.6: ``separated``).

    Returns:
        ``qid, pairs, agree, disagree, tied, separated`` (shares), one row per topic and a final
        row ``qid="all"`` pooled over topics.
    """
    check_choice("among", among, AGREEMENT_PAIRS)
    vals, start, topics = _score_matrix([qrels_a, qrels_b], "inner")
    T = len(topics)
    cnt = np.zeros((4, T))
    for i, j, t in _within_topic_pairs(start):
        sa = np.sign(vals[i, 0] - vals[j, 0])
        sb = np.sign(vals[i, 1] - vals[j, 1])
        keep = slice(None) if among == "all" else (sb != 0) if among == "b_ordered" else (sb == 0)
        sa, sb, t = sa[keep], sb[keep], t[keep]
        prod = sa * sb
        cnt[0] += np.bincount(t, minlength=T)
        cnt[1] += np.bincount(t, prod > 0, T)
        cnt[2] += np.bincount(t, prod < 0, T)
        cnt[3] += np.bincount(t, sa != 0, T)
    pairs = np.append(cnt[0], cnt[0].sum())
    tot = np.column_stack([cnt, cnt.sum(axis=1)])
    with np.errstate(invalid="ignore", divide="ignore"):
        agree, disagree, sep = tot[1] / pairs, tot[2] / pairs, tot[3] / pairs
        tied = (pairs - tot[1] - tot[2]) / pairs
    return pd.DataFrame({"qid": np.append(topics, "all"), "pairs": pairs.astype(np.int64), "agree": agree,
                         "disagree": disagree, "tied": tied, "separated": sep})


def document_tau(qrels_a: Any, qrels_b: Any) -> pd.DataFrame:
    """Kendall's tau_b between two qrels' labels of each topic's common documents (Yang 2019 Fig. 5.17).

    ``tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2))`` (scipy.stats.kendalltau's default; counted over
    within-topic pairs for all topics at once).  Returns ``qid, docs, tau`` per topic and a final
    row ``qid="all"`` with the mean over topics (NaN topics, e.g. one constant label, skipped).
    """
    vals, start, topics = _score_matrix([qrels_a, qrels_b], "inner")
    T = len(topics)
    s = np.zeros(T)
    n0 = np.zeros(T)
    t1 = np.zeros(T)
    t2 = np.zeros(T)
    for i, j, t in _within_topic_pairs(start):
        sa = np.sign(vals[i, 0] - vals[j, 0])
        sb = np.sign(vals[i, 1] - vals[j, 1])
        s += np.bincount(t, sa * sb, T)
        n0 += np.bincount(t, minlength=T)
        t1 += np.bincount(t, sa == 0, T)
        t2 += np.bincount(t, sb == 0, T)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((n0 - t1) * (n0 - t2))
    mean = float(np.nanmean(tau)) if np.isfinite(tau).any() else float("nan")
    return pd.DataFrame({"qid": np.append(topics, "all"), "docs": np.append(np.diff(start), start[-1]),
                         "tau": np.append(tau, mean)})


def judgment_alpha(qrels_list: Sequence[Any], tie: PairTie = "T") -> float:
    """Krippendorff's alpha of several qrels over within-topic document pairs (Yang 2019 Sec. 5.3.6).

    Each pair of documents of a topic is a unit; each qrels is a rater whose value is the pair's
    order ``L`` (first document higher), ``R`` or ``T`` (equal), or missing when it lacks one of
    the two documents; nominal alpha (:func:`pyterrier_noise.stats.krippendorff_alpha`).
    ``tie="missing"`` drops ties (Table 2.12: 0.353 with ties, 0.500 without).
    """
    from ..stats import krippendorff_alpha
    qrels_list = list(qrels_list)
    if len(qrels_list) < 2:
        raise InputError(f"judgment_alpha needs at least two qrels, got {len(qrels_list)}")
    check_choice("tie", tie, PAIR_TIES)
    vals, start, _ = _score_matrix(qrels_list, "outer")
    parts = []
    for i, j, _t in _within_topic_pairs(start):
        d = np.sign(vals[i] - vals[j])
        if tie == "missing":
            d[d == 0] = np.nan
        parts.append(d)
    if not parts:
        raise InputError("no topic has two documents: no document pairs to agree on")
    return krippendorff_alpha(np.concatenate(parts), level="nominal")


class SystemAgreement(NamedTuple):
    """How two qrels order the systems (Yang 2019 Sec. 5.3.4, Table 5.8)."""

    tau: float            #: Kendall tau_b of the two orderings of systems
    agree: float          #: share of system pairs ordered the same way strictly
    disagree: float       #: share ordered strictly opposite
    tied: float           #: share tied under either
    scores: pd.DataFrame  #: ``name, a, b``: each system's mean score under each qrels


def system_agreement(runs: Any, qrels_a: Any, qrels_b: Any, measure: str = "RBP(p=0.9,max_rel=1)"
                     ) -> SystemAgreement:
    """Agreement of the system orderings two qrels induce (Yang 2019 Sec. 5.3.4, Table 5.8, Fig. 5.9).

    Each system's mean ``measure`` over the topics both qrels judge, by
    :func:`pyterrier_noise.evaluate`; Kendall's tau_b by
    :func:`pyterrier_noise.stats.kendall_tau`; system-pair A/D/U shares as in Table 5.8.
    The default measure, RBP(0.9) with gain = label (``max_rel=1``), is the thesis's for scores
    in [0, 1]; for categories use the highest label as ``max_rel``.
    """
    from ..measures import evaluate      # imported when used: ir_measures is slow to load
    from ..stats import kendall_tau
    a, b = _qrels(qrels_a, "qrels_a"), _qrels(qrels_b, "qrels_b")
    common = sorted(set(a["qid"]) & set(b["qid"]))
    if not common:
        raise InputError("qrels_a and qrels_b share no topic")
    dropped = len(set(a["qid"]) | set(b["qid"])) - len(common)
    if dropped:
        announce(f"system_agreement: {dropped} topic(s) judged by only one of the two qrels are left out")
    a, b = a[a["qid"].isin(common)], b[b["qid"].isin(common)]
    ea = evaluate(runs, a, [measure], on_topic_mismatch="ignore").set_index("name")["value"]
    eb = evaluate(runs, b, [measure], on_topic_mismatch="ignore").set_index("name")["value"]
    scores = pd.DataFrame({"name": ea.index, "a": ea.to_numpy(), "b": eb.reindex(ea.index).to_numpy()})
    if len(scores) < 2:
        raise InputError("system_agreement needs at least two runs")
    tau = float(kendall_tau(scores["a"].to_numpy(), scores["b"].to_numpy()))
    i, k = np.triu_indices(len(scores), 1)
    prod = np.sign(scores["a"].to_numpy()[i] - scores["a"].to_numpy()[k]) * \
        np.sign(scores["b"].to_numpy()[i] - scores["b"].to_numpy()[k])
    return SystemAgreement(tau, float(np.mean(prod > 0)), float(np.mean(prod < 0)), float(np.mean(prod == 0)),
                           scores)
