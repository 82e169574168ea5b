"""A plain-Python oracle for the measures IR researchers run, one ranking at a time.

Every function takes ``ranking``, the labels of the retrieved documents in rank order (``None``
for a document absent from the qrels, i.e. unjudged), and ``judged``, the labels of every judged
document of the topic (what sets R, the ideal DCG and bpref's number of judged non-relevant
documents).  Nothing here is vectorised or clever: each definition is written as the reference
code writes it, with its source file named in the docstring.  ``tests/measures/test_oracle.py``
proves the oracle against pytrec_eval, ir_measures' judged / msmarco providers and gdeval.

Sources (installed versions: pytrec_eval-terrier 0.5.11 = trec_eval 9.0.x, ir_measures 0.4.3):

* trec_eval ``m_*.c`` (https://github.com/usnistgov/trec_eval), as compiled into pytrec_eval;
  ``relevance_level`` = ir_measures' ``rel`` (default 1); ``-J`` (``judged_docs_only_flag``) =
  ``judged_only=True``: unjudged documents are removed from the ranking first (condensed lists,
  Sakai 2007);
* ir_measures/providers/judged_provider.py (Judged@k), msmarco_provider.py + bin/msmarco_eval.py
  (RR@k), gdeval_provider.py + bin/gdeval.pl (ERR@k), pytrec_eval_provider.py (how ir_measures
  maps its spellings and ``gains=`` onto trec_eval).

The ranking is trec_eval's (:func:`trec_eval_order`) unless a test gives another one.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

Label = Optional[float]

GDEVAL_MAX_JUDGMENT = 4   # gdeval.pl's $MAX_JUDGMENT: ERR's r = (2^g - 1) / 2^4 whatever the collection's grades


# ---------------------------------------------------------------------------------------------
# orderings

def trec_eval_order(docnos: Sequence[str], scores: Sequence[float]) -> list[int]:
    """Indices in trec_eval's order: score descending, then docno descending (trec_eval
    ``form_res_rels.c`` ``comp_sim_docno``; the score is stored as a C ``float`` there, so scores
    are compared after rounding to float32)."""
    s32 = np.asarray(scores, dtype=np.float64).astype(np.float32).tolist()   # each float(np.float32(s))
    return sorted(range(len(docnos)), key=lambda i: (s32[i], docnos[i]), reverse=True)


def double_order(docnos: Sequence[str], scores: Sequence[float]) -> list[int]:
    """Indices in gdeval.pl's order (``runOrder``): score descending compared as Perl numbers
    (float64), then docno descending.  Differs from trec_eval's where two scores are equal in
    float32 only (e.g. BERT's scores -0.4820356555 and -0.4820356809 on TREC-COVID topic 30)."""
    return sorted(range(len(docnos)), key=lambda i: (float(scores[i]), docnos[i]), reverse=True)


def score_docno_asc_order(docnos: Sequence[str], scores: Sequence[float]) -> list[int]:
    """Indices in the order of ir_measures' judged and msmarco providers: ``sorted(key=(-score,
    docno))``, i.e. score descending (float64) then docno *ascending*."""
    return sorted(range(len(docnos)), key=lambda i: (-float(scores[i]), docnos[i]))


def tie_groups(scores_in_order: Sequence[float]) -> list[int]:
    """Group id of each position: consecutive positions with equal float32 score share a group."""
    out, g = [], -1
    prev = None
    for s in scores_in_order:
        s = float(np.float32(s))
        if prev is None or s != prev:
            g += 1
        out.append(g)
        prev = s
    return out


# ---------------------------------------------------------------------------------------------
# helpers

def is_judged(label: Label) -> bool:
    return label is not None and label == label      # NaN is the one number unequal to itself


def is_rel(label: Label, rel: int) -> bool:
    return label is not None and label >= rel        # NaN >= rel is False: unjudged


def num_rel(judged: Sequence[float], rel: int = 1) -> int:
    """R: judged documents of the topic with label >= rel (trec_eval ``res_rels.num_rel``)."""
    return sum(1 for x in judged if x >= rel)


def condensed(ranking: Sequence[Label]) -> list[Label]:
    """The ranking without its unjudged documents (trec_eval ``-J``; Sakai 2007)."""
    return [x for x in ranking if is_judged(x)]


def _prep(ranking, judged_only):
    return condensed(ranking) if judged_only else list(ranking)


# ---------------------------------------------------------------------------------------------
# trec_eval measures

def precision(ranking, judged, cutoff: int, rel: int = 1, judged_only: bool = False) -> float:
    """P@k (trec_eval m_P.c): relevant documents in the top k / k, always divided by k even when
    fewer than k documents are retrieved.  Empty ranking: 0."""
    r = _prep(ranking, judged_only)
    return sum(1 for x in r[:cutoff] if is_rel(x, rel)) / cutoff


def recall(ranking, judged, cutoff: int, rel: int = 1, judged_only: bool = False) -> float:
    """R@k (trec_eval m_recall.c): relevant documents in the top k / R; R = 0 gives 0."""
    R = num_rel(judged, rel)
    if R == 0:
        return 0.0
    r = _prep(ranking, judged_only)
    return sum(1 for x in r[:cutoff] if is_rel(x, rel)) / R


def average_precision(ranking, judged, cutoff: Optional[int] = None, rel: int = 1,
                      judged_only: bool = False) -> float:
    """AP (trec_eval m_map.c) and AP@k (m_map_cut.c): the sum, over the relevant documents at
    rank i <= k, of precision at i, divided by R (not by min(R, k)); R = 0 gives 0."""
    R = num_rel(judged, rel)
    if R == 0:
        return 0.0
    r = _prep(ranking, judged_only)
    if cutoff is not None:
        r = r[:cutoff]
    hits, total = 0, 0.0
    for i, x in enumerate(r, start=1):
        if is_rel(x, rel):
            hits += 1
            total += hits / i
    return total / R


def _gain(label: Label, gains: Optional[dict]) -> float:
    """trec_eval's nDCG gain: the label itself (a level without a gain counts 0 only when absent);
    ir_measures' ``gains=`` maps the qrels' labels first (``gains.get(label, label)``,
    pytrec_eval_provider.py), unjudged documents gain 0."""
    if not is_judged(label):
        return 0.0
    if gains is not None:
        label = gains.get(int(label), label)
    return float(label)


def ndcg(ranking, judged, cutoff: Optional[int] = None, gains: Optional[dict] = None,
         judged_only: bool = False) -> float:
    """nDCG (trec_eval m_ndcg.c) and nDCG@k (m_ndcg_cut.c): DCG = sum_i gain_i / log2(i + 1) over
    ranks i (<= k), gain = label (negative labels give negative gain in the run's DCG); IDCG =
    the same over the topic's judged positive gains sorted descending (all of them for nDCG, the
    top k for nDCG@k); IDCG = 0 gives 0.  ``rel`` plays no part.  ``judged_only``: the condensed
    ranking, the same ideal."""
    r = _prep(ranking, judged_only)
    if cutoff is not None:
        r = r[:cutoff]
    dcg = sum(_gain(x, gains) / math.log2(i + 1) for i, x in enumerate(r, start=1))
    idcg = _ideal_dcg(tuple(judged), tuple(sorted(gains.items())) if gains is not None else None, cutoff)
    return dcg / idcg if idcg > 0 else 0.0


@functools.lru_cache(maxsize=4096)
def _ideal_dcg(judged: tuple, gains: Optional[tuple], cutoff: Optional[int]) -> float:
    """IDCG of :func:`ndcg`: the same for every run of a topic, so computed once for each."""
    gains = dict(gains) if gains is not None else None
    ideal = sorted((g for g in (_gain(x, gains) for x in judged) if g > 0), reverse=True)
    if cutoff is not None:
        ideal = ideal[:cutoff]
    return sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))


def reciprocal_rank(ranking, judged, cutoff: Optional[int] = None, rel: int = 1,
                    judged_only: bool = False) -> float:
    """RR (trec_eval m_recip_rank.c): 1 / rank of the first relevant document, 0 if none.
    RR@k (ir_measures' msmarco provider, bin/msmarco_eval.py ``compute_metrics``): the same when
    that rank is <= k, else 0."""
    r = _prep(ranking, judged_only)
    if cutoff is not None:
        r = r[:cutoff]
    for i, x in enumerate(r, start=1):
        if is_rel(x, rel):
            return 1.0 / i
    return 0.0


def r_precision(ranking, judged, rel: int = 1, judged_only: bool = False) -> float:
    """Rprec (trec_eval m_Rprec.c): relevant documents in the top R / R; R = 0 gives 0."""
    R = num_rel(judged, rel)
    if R == 0:
        return 0.0
    r = _prep(ranking, judged_only)
    return sum(1 for x in r[:R] if is_rel(x, rel)) / R


def bpref(ranking, judged, rel: int = 1) -> float:
    """Bpref (trec_eval m_bpref.c; Buckley & Voorhees 2004): unjudged documents are skipped; each
    judged relevant document adds 1 - min(n, R) / min(N, R), n = judged non-relevant documents
    (0 <= label < rel) ranked above it, N = all judged non-relevant documents of the topic (adds 1
    when n = 0); the sum is divided by R; R = 0 gives 0."""
    R = num_rel(judged, rel)
    N = sum(1 for x in judged if 0 <= x < rel)
    total, nonrel = 0.0, 0
    for x in ranking:
        if not is_judged(x):
            continue
        if 0 <= x < rel:
            nonrel += 1
        elif x >= rel:
            total += 1.0 - min(nonrel, R) / min(N, R) if nonrel > 0 else 1.0
    return total / R if R else 0.0


def num_ret(ranking, judged) -> float:
    """NumRet (trec_eval m_num_ret.c): the number of retrieved documents."""
    return float(len(ranking))


def num_rel_measure(ranking, judged, rel: int = 1) -> float:
    """NumRel (trec_eval m_num_rel.c): R, the judged documents with label >= rel (whatever the
    run); ir_measures' pytrec_eval provider only serves rel = 1."""
    return float(num_rel(judged, rel))


def num_rel_ret(ranking, judged, rel: int = 1) -> float:
    """NumRelRet = ir_measures' NumRet(rel=...) (trec_eval m_num_rel_ret.c): retrieved documents
    with label >= rel."""
    return float(sum(1 for x in ranking if is_rel(x, rel)))


def success(ranking, judged, cutoff: int, rel: int = 1, judged_only: bool = False) -> float:
    """Success@k (trec_eval m_success.c): 1 when a relevant document is in the top k, else 0."""
    r = _prep(ranking, judged_only)
    return 1.0 if any(is_rel(x, rel) for x in r[:cutoff]) else 0.0


def iprec_at_recall(ranking, judged, recall_level: float, rel: int = 1, judged_only: bool = False) -> float:
    """IPrec@r (trec_eval m_iprec_at_recall.c): the largest precision at any rank whose recall
    (relevant so far / R) is >= r; 0 when no rank reaches recall r, or R = 0.  (The maximum is
    reached at a relevant document's rank, where precision jumps up.)  Levels 0.0, 0.1, ..., 1.0
    agree with pytrec_eval on 30 synthetic collections (recall compared in double precision)."""
    R = num_rel(judged, rel)
    if R == 0:
        return 0.0
    r = _prep(ranking, judged_only)
    best, hits = 0.0, 0
    for i, x in enumerate(r, start=1):
        if is_rel(x, rel):
            hits += 1
            if hits / R >= recall_level:
                best = max(best, hits / i)
    return best


# ---------------------------------------------------------------------------------------------
# ir_measures' own providers

def judged_at(ranking, judged, cutoff: Optional[int] = None) -> float:
    """Judged@k (ir_measures providers/judged_provider.py, from OpenNIR): documents of the top k
    that appear in the qrels with any label (0 and negative included) / min(k, number retrieved);
    no cutoff: the whole ranking.  ir_measures emits nothing for an empty ranking; here 0."""
    top = list(ranking)[:cutoff] if cutoff is not None else list(ranking)
    if not top:
        return 0.0
    return sum(1 for x in top if is_judged(x)) / len(top)


def err_at(ranking, judged, cutoff: int) -> float:
    """ERR@k as ir_measures serves it (providers/gdeval_provider.py running bin/gdeval.pl, TREC
    2010 Web track; Chapelle et al. 2009): r_i = (2^g_i - 1) / 2^4 with g_i the label (0 for
    unjudged and non-positive labels; gdeval's fixed $MAX_JUDGMENT = 4, not the collection's top
    grade); ERR@k = sum_{i<=k} r_i / i * prod_{j<i} (1 - r_j).  A shorter ranking sums what there
    is.  gdeval reports only topics with a positive judgment, to 5 decimals, and refuses labels
    above 4."""
    total, decay = 0.0, 1.0
    for i, x in enumerate(list(ranking)[:cutoff], start=1):
        g = x if is_judged(x) and x > 0 else 0.0
        r = (2.0 ** g - 1.0) / 2.0 ** GDEVAL_MAX_JUDGMENT
        total += r * decay / i
        decay *= 1.0 - r
    return total


# ---------------------------------------------------------------------------------------------
# measure strings

@dataclass(frozen=True)
class OracleMeasure:
    """One measure, parsed with ir_measures' own parser; :meth:`__call__` scores one ranking."""

    text: str
    name: str
    params: tuple

    def param(self, key, default=None):
        return dict(self.params).get(key, default)

    def __call__(self, ranking: Sequence[Label], judged: Sequence[float]) -> float:
        n, p = self.name, self.param
        rel = p("rel", 1)
        jo = bool(p("judged_only", False))
        cutoff = p("cutoff")
        if n == "P":
            return precision(ranking, judged, cutoff, rel, jo)
        if n == "R":
            return recall(ranking, judged, cutoff, rel, jo)
        if n == "AP":
            return average_precision(ranking, judged, cutoff, rel, jo)
        if n == "nDCG":
            return ndcg(ranking, judged, cutoff, p("gains"), jo)
        if n == "RR":
            return reciprocal_rank(ranking, judged, cutoff, rel, jo)
        if n == "Rprec":
            return r_precision(ranking, judged, rel, jo)
        if n == "Bpref":
            return bpref(ranking, judged, rel)
        if n == "NumRet":
            return num_ret(ranking, judged) if p("rel") is None else num_rel_ret(ranking, judged, rel)
        if n == "NumRel":
            return num_rel_measure(ranking, judged, rel)
        if n == "Success":
            return success(ranking, judged, cutoff, rel, jo)
        if n == "IPrec":
            return iprec_at_recall(ranking, judged, p("recall"), rel, jo)
        if n == "Judged":
            return judged_at(ranking, judged, cutoff)
        if n == "ERR":
            return err_at(ranking, judged, cutoff)
        raise ValueError(f"the oracle has no {self.text}")


def measure(text) -> OracleMeasure:
    """Parse an ir_measures string or object (``"nDCG(gains={0:0,1:1,2:3})@10"``)."""
    import ir_measures
    m = ir_measures.parse_measure(text) if isinstance(text, str) else text
    params = tuple(sorted((k, v) for k, v in m.params.items()))
    return OracleMeasure(str(text), m.NAME, params)


# ---------------------------------------------------------------------------------------------
# ties, by brute force

def orderings(ranking: Sequence[Label], groups: Sequence[int]):
    """Every distinct ranking obtained by permuting the labels inside each tie group (groups are
    runs of equal ids).  Each distinct label sequence occurs equally often among all orderings of
    the documents (the same product of factorials of repeated labels), so the mean over the
    distinct ones is the mean over every ordering."""
    blocks = [list(g) for _, g in itertools.groupby(range(len(ranking)), key=lambda i: groups[i])]
    per_block = []
    for b in blocks:
        labels = [("u" if not is_judged(ranking[i]) else ranking[i]) for i in b]
        per_block.append(sorted(set(itertools.permutations(labels)), key=repr))
    for combo in itertools.product(*per_block):
        yield [None if x == "u" else x for block in combo for x in block]


def n_orderings(ranking, groups) -> int:
    """How many distinct orderings :func:`orderings` enumerates."""
    n = 1
    for _, g in itertools.groupby(range(len(ranking)), key=lambda i: groups[i]):
        labels = ["u" if not is_judged(ranking[i]) else ranking[i] for i in g]
        n *= len(set(itertools.permutations(labels)))
    return n


def tie_values(fn: Callable, ranking, groups, judged) -> dict[str, float]:
    """``{"expected": mean, "optimistic": max, "pessimistic": min}`` of ``fn(ranking, judged)``
    over every ordering of every tie group."""
    vals = [fn(r, judged) for r in orderings(ranking, groups)]
    return {"expected": math.fsum(vals) / len(vals), "optimistic": max(vals), "pessimistic": min(vals)}


# ---------------------------------------------------------------------------------------------
# whole collections

def topic_rankings(run, qrels, order: str = "trec_eval"):
    """{qid: (labels in order, float32 scores in order)} of one run frame (qid, docno, score[,
    rank]) against a qrels frame (qid, docno, label) or its :func:`qrels_labels`.  ``order``: ``trec_eval``, ``double``
    (gdeval), ``docno_asc`` (ir_measures' judged / msmarco providers) or ``given`` (the rank column)."""
    lab = qrels if isinstance(qrels, dict) else qrels_labels(qrels)
    rows: dict = {}    # qid -> row numbers, topics in the order they first appear
    for i, q in enumerate(run["qid"].astype(str).tolist()):
        rows.setdefault(q, []).append(i)
    all_docnos = run["docno"].astype(str).tolist()
    all_scores = run["score"].astype(float).tolist()
    all_ranks = run["rank"].tolist() if order == "given" else None
    out = {}
    for qid, at in rows.items():
        docnos = [all_docnos[i] for i in at]
        scores = [all_scores[i] for i in at]
        if order == "trec_eval":
            idx = trec_eval_order(docnos, scores)
        elif order == "double":
            idx = double_order(docnos, scores)
        elif order == "docno_asc":
            idx = score_docno_asc_order(docnos, scores)
        elif order == "given":
            ranks = [all_ranks[i] for i in at]
            idx = sorted(range(len(docnos)), key=lambda i: ranks[i])
        else:
            raise ValueError(order)
        out[qid] = ([lab.get((qid, docnos[i])) for i in idx], [scores[i] for i in idx])
    return out


def qrels_labels(qrels) -> dict:
    """{(qid, docno): label} of a qrels frame."""
    return {(q, d): float(v) for q, d, v in zip(qrels["qid"].astype(str).tolist(),
                                                qrels["docno"].astype(str).tolist(), qrels["label"].tolist())}


def judged_labels(qrels) -> dict[str, list[float]]:
    """{qid: labels of every judged document of the topic}."""
    return {q: [float(x) for x in g] for q, g in qrels.groupby(qrels["qid"].astype(str))["label"]}


def evaluate(runs: dict, qrels, measures: Sequence, ties: str = "trec_eval") -> dict:
    """{(run, qid, measure text): value} for every run and every topic of the qrels.  A topic a
    run does not answer scores on an empty ranking (trec_eval ``-c``: 0, except NumRel = R).
    ``ties``: ``trec_eval`` / ``given`` orderings, or ``expected`` / ``optimistic`` /
    ``pessimistic`` by brute force over the tie groups of trec_eval's ordering."""
    judged = judged_labels(qrels)
    lab = qrels_labels(qrels)
    ms = [(m if isinstance(m, str) else str(m), measure(m)) for m in measures]
    out = {}
    for name, run in runs.items():
        ranks = topic_rankings(run, lab, "given" if ties == "given" else "trec_eval")
        for qid, jl in judged.items():
            labels, scores = ranks.get(qid, ([], []))
            for text, m in ms:
                if ties in ("trec_eval", "given"):
                    out[name, qid, text] = m(labels, jl)
                else:
                    out[name, qid, text] = tie_values(m, labels, tie_groups(scores), jl)[ties]
    return out
