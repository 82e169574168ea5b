"""Worker quality and position bias:
pyterrier_noise.crowd.quality (Yang 2019 Sec. 5.3.5; seed note 004b A13).
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from crowd_helpers import rows
from scipy import stats

from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.crowd import (
    absolute_inconsistency,
    gold_accuracy,
    position_bias,
    simulate_crowd,
    transitivity_inconsistency,
    worker_quality,
)


def test_transitivity_thesis_example_and_consistent_worker():
    # d1 > d2, d2 > d3, d3 > d4, d4 > d1: the order d1 d2 d3 d4 violates d4 > d1, 2 of 4 affected
    cyc = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d3", "d4", "left"), ("d4", "d1", "left"), worker="x")
    ok = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d3", "d4", "left"), ("d1", "d4", "left"), worker="y")
    t = transitivity_inconsistency(pd.concat([cyc, ok], ignore_index=True)).set_index("worker")
    assert t.loc["x", "inconsistency"] == 0.5 and t.loc["x", "affected"] == 2 and t.loc["x", "docs"] == 4
    assert t.loc["y", "inconsistency"] == 0.0


def brute_force_affected(prefs):
    docs = sorted({d for p in prefs for d in p})
    best = None
    for perm in itertools.permutations(docs):
        pos = {d: k for k, d in enumerate(perm)}
        viol = [(w, l) for w, l in prefs if pos[w] > pos[l]]
        key = (len(viol), len({d for v in viol for d in v}))
        best = key if best is None or key < best else best
    return best[1], len(docs)


def test_transitivity_against_brute_force_over_orderings():
    rng = np.random.default_rng(5)
    frames, expect = [], {}
    for w in range(30):
        n = int(rng.integers(3, 7))
        docs = [f"d{k}" for k in range(n)]
        pairs = [(a, b) for a, b in itertools.combinations(docs, 2) if rng.random() < 0.7]
        pairs += [pairs[0]] if w % 5 == 0 else []          # a pair judged twice (weights count)
        prefs = [(a, b) if rng.random() < 0.5 else (b, a) for a, b in pairs]
        frames.append(rows(*[(a, b, "left") for a, b in prefs], worker=f"w{w:02d}"))
        aff, judged = brute_force_affected(prefs)
        expect[f"w{w:02d}"] = (aff, judged)
    got = transitivity_inconsistency(pd.concat(frames, ignore_index=True)).set_index("worker")
    assert sum(a > 0 for a, _ in expect.values()) >= 10       # the case is not trivial
    for w, (aff, judged) in expect.items():
        assert (got.loc[w, "affected"], got.loc[w, "docs"]) == (aff, judged), w


def test_transitivity_groups_and_large_cycles():
    # two groups of one worker: summed (2 + 0) / (4 + 3)
    g1 = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d3", "d4", "left"), ("d4", "d1", "left"))
    g2 = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d1", "d3", "left"))
    f = pd.concat([g1.assign(group="g1"), g2.assign(group="g2")], ignore_index=True)
    t = transitivity_inconsistency(f)
    assert t.inconsistency.tolist() == [pytest.approx(2 / 7)]
    with pytest.warns(CoercionWarning, match="more than 3 documents"):
        t = transitivity_inconsistency(f, max_component=3)
    assert np.isnan(t.inconsistency.iloc[0])


def test_absolute_inconsistency_by_hand():
    # a: both, selected(a) -> 1, 1; b: both, none -> inconsistent; c: selected(a) -> 0, none -> 0
    f = rows(("a", "b", "left", "both"), ("a", "c", "left", "selected"), ("b", "c", "right", "none"))
    t = absolute_inconsistency(f)
    assert (t.docs.iloc[0], t.inconsistent.iloc[0]) == (3, 1)
    assert t.inconsistency.iloc[0] == pytest.approx(1 / 3)


def test_gold_accuracy_from_column_and_from_qrels():
    f = rows(("h", "n", "left"), ("n", "h", "left"), ("h", "x", "left"), worker="w")
    f["gold"] = ["left", "right", ""]
    g = gold_accuracy(f)
    assert (g.gold_pairs.iloc[0], g.gold_correct.iloc[0], g.gold_accuracy.iloc[0]) == (2, 1, 0.5)
    known = pd.DataFrame({"qid": "1", "docno": ["h", "n", "x"], "label": [2, 0, 2]})
    g = gold_accuracy(f, gold_qrels=known)       # (h, x) is equally relevant: not gold
    assert (g.gold_pairs.iloc[0], g.gold_correct.iloc[0]) == (2, 1)


def test_position_bias_by_hand():
    eq = [("a", "b", "left" if k < 7 else "right") for k in range(10)]
    f = rows(*eq, ("r", "n", "left"), ("n", "r", "left"))
    q = pd.DataFrame({"qid": "1", "docno": ["a", "b", "r", "n"], "label": [1, 2, 1, 0]})
    pb = position_bias(f, q)               # (r, n) pairs differ in binary relevance: left out
    assert (pb.pairs, pb.left_rate, pb.bias) == (10, 0.7, pytest.approx(0.4))
    assert pb.p_value == pytest.approx(stats.binomtest(7, 10).pvalue)
    assert position_bias(f).pairs == 12
    assert pb.per_topic.to_dict("records") == [{"qid": "1", "pairs": 10, "left_rate": 0.7, "bias": pytest.approx(0.4)}]


def test_position_bias_of_a_simulated_crowd(coll):
    biased = simulate_crowd(coll.qrels, left_bias=0.1, seed=0)
    fair = simulate_crowd(coll.qrels, left_bias=0.0, seed=0)
    pb = position_bias(biased, coll.qrels)
    assert abs(pb.bias - 0.1) < 0.02 and pb.p_value < 1e-6
    assert abs(position_bias(fair, coll.qrels).bias) < 0.02


def test_worker_quality_tracks_simulated_accuracy(coll):
    j, workers = simulate_crowd(coll.qrels, n_workers=20, accuracy=(0.55, 0.99), seed=0, return_workers=True)
    wq = worker_quality(j)
    assert list(wq.columns) == ["qid", "worker", "groups", "pairs", "docs", "transitivity_inconsistency",
                                "absolute_inconsistency", "gold_pairs", "gold_accuracy", "left_rate"]
    # the columns are the component functions' values
    t = transitivity_inconsistency(j)
    np.testing.assert_array_equal(wq.transitivity_inconsistency.to_numpy(), t.inconsistency.to_numpy())
    assert (wq.pairs == 12 * wq.groups).all() and (wq.docs <= 8 * wq.groups).all()
    per = wq.groupby("worker")[["gold_accuracy", "transitivity_inconsistency", "absolute_inconsistency"]].mean()
    per = per.join(workers.set_index("worker"))
    assert stats.kendalltau(per.accuracy, per.gold_accuracy).statistic > 0.5
    assert stats.kendalltau(per.accuracy, per.transitivity_inconsistency).statistic < -0.2
    assert stats.kendalltau(per.accuracy, per.absolute_inconsistency).statistic < -0.5
