"""The oracle (tests/measures/oracle.py) is proven: equal to pytrec_eval and ir_measures' judged,
msmarco and gdeval providers on every per-query value, on graded synthetic collections (fast)
and on all 143 TREC-COVID round-1 runs (slow), each tool given its own tie-breaking.

Its brute-force tie enumeration is checked on a hand case and against itertools directly."""
from __future__ import annotations

import itertools
import math

import pytest
from collection_helpers import random_collection
from oracle import (
    err_at,
    judged_at,
    measure,
    n_orderings,
    orderings,
    tie_groups,
    tie_values,
    topic_rankings,
)
from refs import GDEVAL_TOL, MEASURES, MEASURES_SHORT, TOL, provider_of, reference

# the order each reference ranks a run in: trec_eval compares float32 scores, gdeval float64 ones,
# judged and msmarco break ties by docno ascending
ORDER_OF = {"pytrec_eval": "trec_eval", "gdeval": "double", "judged": "docno_asc", "msmarco": "docno_asc"}


def oracle_like_references(texts, runs, qrels):
    """{(run, qid, text): oracle value} with each reference's own ordering of the run."""
    from oracle import judged_labels, qrels_labels
    judged, lab = judged_labels(qrels), qrels_labels(qrels)
    out = {}
    for name, run in runs.items():
        ranks = {o: topic_rankings(run, lab, o) for o in {ORDER_OF[provider_of(t)] for t in texts}}
        for t in texts:
            m = measure(t)
            rk = ranks[ORDER_OF[provider_of(t)]]
            for qid, (labels, _) in rk.items():
                if qid in judged:
                    out[name, qid, t] = m(labels, judged[qid])
    return out


def compare(texts, runs, qrels):
    ref = reference(texts, runs, qrels)
    ours = oracle_like_references(texts, runs, qrels)
    counts = dict.fromkeys(texts, 0)
    for key, want in ref.items():
        tol = GDEVAL_TOL if provider_of(key[2]) == "gdeval" else TOL
        assert ours[key] == pytest.approx(want, abs=tol, rel=0), key
        counts[key[2]] += 1
    return counts


@pytest.mark.parametrize("seed", range(6))
def test_oracle_equals_the_references_on_graded_synthetic_runs(seed):
    runs, qrels = random_collection(seed, n_runs=3, n_topics=5, grades=3, tie_decimals=1)
    counts = compare(MEASURES + MEASURES_SHORT, runs, qrels)
    for t, n in counts.items():
        # every measure compared on every (run, topic); msmarco / gdeval skip topics without relevant documents
        assert n >= (1 if provider_of(t) in ("msmarco", "gdeval") else 15), (t, n)


def test_oracle_equals_the_references_on_all_covid_runs(covid_collection):
    """The measures whose references break ties their own way (judged, msmarco: docno ascending;
    gdeval: float64 scores).  The pytrec_eval measures need no case here: test_reference_new.py
    holds the engine equal to pytrec_eval and to the oracle on the same 143 runs, value by value."""
    qrels, runs = covid_collection
    texts = [t for t in MEASURES if provider_of(t) != "pytrec_eval"]
    assert sorted(texts) == ["ERR@10", "Judged@10", "RR(rel=2)@10", "RR@10"]
    # every tool ranks by score first, so its first 10 documents are among those with fewer than 10
    # documents scored strictly higher (the tied group at rank 10 kept whole): on these rows every
    # tool, and the oracle, gives each @10 measure the value it gives on the whole run
    top = {name: run[run["score"].astype(float).groupby(run["qid"]).rank(method="min", ascending=False) <= 10]
           for name, run in runs.items()}
    for name, run in top.items():
        kept, size = run.groupby("qid").size(), runs[name].groupby("qid").size()
        assert (kept >= size.clip(upper=10)).all() and (kept <= size).all(), name
    counts = compare(texts, top, qrels)
    for t, n in counts.items():
        assert n == 143 * 30, (t, n)     # every run answers every topic; every topic has relevant documents


# ---------------------------------------------------------------------------------------------
# edge cases written out by hand from the sources

def test_judged_and_err_edges():
    assert judged_at([None, 0.0, 2.0], [0.0, 2.0], 10) == pytest.approx(2 / 3)   # min(k, len) denominator
    assert judged_at([], [1.0], 10) == 0.0
    assert err_at([4.0], [4.0], 10) == pytest.approx(15 / 16)                      # (2^4 - 1) / 2^4
    r1, r2 = 3 / 16, 7 / 16
    assert err_at([2.0, None, 3.0], [2.0, 3.0], 3) == pytest.approx(r1 + (1 - r1) * r2 / 3)
    assert err_at([2.0, None, 3.0], [2.0, 3.0], 2) == pytest.approx(r1)


# ---------------------------------------------------------------------------------------------
# the brute force

def test_orderings_are_every_permutation_inside_groups():
    labels = [1.0, None, 0.0, 2.0, 2.0, None]
    groups = [0, 0, 0, 1, 2, 2]
    got = sorted(map(repr, orderings(labels, groups)))
    want = set()
    for a in itertools.permutations(labels[:3]):
        for b in itertools.permutations(labels[4:]):
            want.add(repr(list(a) + [2.0] + list(b)))
    assert got == sorted(want)
    assert n_orderings(labels, groups) == 6 * 2


def test_tie_values_on_a_hand_case():
    # one relevant and two non-relevant documents tied at the top: RR = 1, 1/2 or 1/3, each 1/3 of the time
    m = measure("RR")
    vals = tie_values(m, [0.0, 1.0, 0.0], tie_groups([5.0, 5.0, 5.0]), [1.0, 0.0, 0.0])
    assert vals["expected"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert vals["optimistic"] == 1.0 and vals["pessimistic"] == pytest.approx(1 / 3)


def test_mean_over_distinct_orderings_is_the_mean_over_all():
    labels = [1.0, 1.0, 0.0, None, 2.0]
    m = measure("nDCG@3")
    judged = [1.0, 1.0, 0.0, 2.0]
    every = [m([labels[i] for i in p], judged) for p in itertools.permutations(range(5))]
    vals = tie_values(m, labels, [0] * 5, judged)
    assert vals["expected"] == pytest.approx(math.fsum(every) / len(every), abs=1e-15)
    assert vals["optimistic"] == max(every) and vals["pessimistic"] == min(every)


def test_tie_groups_compare_in_float32():
    assert tie_groups([1.0, 1.0 + 1e-12, 0.5, 0.5]) == [0, 0, 1, 1]
