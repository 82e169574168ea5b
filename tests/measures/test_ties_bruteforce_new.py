"""Tie policies by brute force: for every measure of issue 27 and each of ``expected``,
``optimistic`` and ``pessimistic``, ``evaluate(..., ties=policy)`` equals the mean, maximum and
minimum of the measure over every ordering of every group of tied scores (oracle.tie_values,
itertools.permutations inside each group), to 1e-12, on small runs with many ties, unjudged
documents and graded labels.  Cutoffs are chosen to split tied groups.  The engine refuses
no (measure, policy) pair here.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
from oracle import judged_labels, measure, n_orderings, tie_groups, tie_values, topic_rankings
from refs import engine_values

POLICIES = ("expected", "optimistic", "pessimistic")

MEASURES = [
    "P@5", "P@10", "R@5", "R@100", "AP", "AP@5", "nDCG", "nDCG@5", "nDCG@10", "RR", "RR@3", "Rprec", "Bpref",
    "NumRet", "NumRel", "NumRelRet", "Success@3", "Judged@5", "Judged@10", "IPrec@0.5", "ERR@5", "ERR@10",
    "AP(rel=2)", "P(rel=2)@5", "R(rel=2)@5", "RR(rel=2)", "Rprec(rel=2)", "Bpref(rel=2)", "Success(rel=2)@3",
    "AP(judged_only=True)", "nDCG(judged_only=True)@5", "P(judged_only=True)@5", "RR(judged_only=True)",
    "nDCG(gains={0:0,1:1,2:3})@5", "IPrec(judged_only=True)@0.5", "IPrec(rel=2)@0.2", "ERR@3",
]

MAX_ORDERINGS = 20_000    # per ranking, to keep the enumeration small


def tied_collection(seed: int, n_runs: int = 2, n_topics: int = 3, depth: int = 12, n_docs: int = 18,
                    n_scores: int = 4):
    """Runs whose scores take n_scores integer values (groups of about depth / n_scores documents),
    qrels judging about 70% of the documents with labels 0, 1, 2."""
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        parts = []
        for t in range(n_topics):
            docs = rng.choice(n_docs, size=depth, replace=False)
            parts.append(pd.DataFrame({"qid": str(t + 1), "docno": [f"d{d:02d}" for d in docs],
                                       "score": rng.integers(0, n_scores, size=depth).astype(float)}))
        run = pd.concat(parts, ignore_index=True)
        run["rank"] = run.groupby("qid")["score"].rank(method="first", ascending=False).astype(int) - 1
        runs[f"run{r}"] = run
    q = []
    for t in range(n_topics):
        judged = np.flatnonzero(rng.random(n_docs) < 0.7)
        q.append(pd.DataFrame({"qid": str(t + 1), "docno": [f"d{d:02d}" for d in judged],
                               "label": rng.integers(0, 3, size=len(judged)).astype(float)}))
    return runs, pd.concat(q, ignore_index=True)


def brute_force(runs, qrels, texts) -> dict:
    """{(policy, run, qid, text): value} by enumeration."""
    judged = judged_labels(qrels)
    ms = {t: measure(t) for t in texts}
    out = {}
    for name, run in runs.items():
        for qid, (labels, scores) in topic_rankings(run, qrels).items():
            groups = tie_groups(scores)
            assert n_orderings(labels, groups) <= MAX_ORDERINGS
            for t, m in ms.items():
                for policy, v in tie_values(m, labels, groups, judged[qid]).items():
                    out[policy, name, qid, t] = v
    return out


@functools.cache
def seeded_brute_force(seed: int) -> tuple:
    """(runs, qrels, brute_force(...)) of ``tied_collection(seed)``, enumerated once for both tests below."""
    runs, qrels = tied_collection(seed)
    return runs, qrels, brute_force(runs, qrels, MEASURES)


@pytest.fixture(scope="module", params=[0, 1, 2], ids=lambda s: f"seed{s}")
def case(request):
    runs, qrels, ref = seeded_brute_force(request.param)
    got = {p: engine_values(runs, qrels, MEASURES, ties=p) for p in POLICIES}
    return ref, got


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("text", MEASURES)
def test_policy_equals_brute_force(case, text, policy):
    ref, got = case
    values, errors = got[policy]
    if text in errors:
        raise AssertionError(f"evaluate refused {text} with ties={policy!r}: {errors[text]!r}")
    n = 0
    for (p, name, qid, t), want in ref.items():
        if p == policy and t == text:
            assert values[name, qid, t] == pytest.approx(want, abs=1e-12, rel=0), (name, qid)
            n += 1
    assert n == 2 * 3


def test_the_collections_have_ties_that_matter():
    """The brute force is not vacuous: on these collections most measures change with the
    ordering of tied documents (optimistic > pessimistic somewhere)."""
    ref = {}
    for seed in range(3):
        ref.update({(seed, *k): v for k, v in seeded_brute_force(seed)[2].items()})
    spread = {t: 0.0 for t in MEASURES}
    for (seed, p, name, qid, t), v in ref.items():
        if p == "optimistic":
            spread[t] = max(spread[t], v - ref[seed, "pessimistic", name, qid, t])
    invariant = {t for t, s in spread.items() if s == 0}
    assert invariant <= {"NumRet", "NumRel", "NumRelRet", "R@100"}, invariant
