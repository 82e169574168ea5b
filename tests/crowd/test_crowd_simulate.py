"""The simulated crowd: pyterrier_noise.crowd.simulate (Yang 2019 Sec. 5.1; seed note 004b Sec. 3.1)."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.crowd import (
    METHODS,
    design_partitions,
    document_agreement,
    document_scores,
    document_tau,
    simulate_crowd,
)


def test_design_partitions_reproduce_table_5_1():
    num_docs = [285, 120, 216, 225, 192, 184, 176, 208, 270]        # topics 402 ... 440
    X = design_partitions(np.array(num_docs))
    assert X.tolist() == [14, 6, 11, 11, 10, 9, 9, 10, 13]
    assert (3 * X * 3).tolist() == [126, 54, 99, 99, 90, 81, 81, 90, 117]   # JudgPerDoc = K X Y
    assert design_partitions(216) == 11


def test_simulated_design_follows_the_thesis():
    qrels = pd.DataFrame({"qid": "405", "docno": [f"d{k:03d}" for k in range(216)],
                          "label": np.r_[np.full(20, 2), np.full(30, 1), np.zeros(166)]})
    j = simulate_crowd(qrels, seed=5)
    assert j.group.nunique() == 27 * 11 and j.worker.groupby(j.group).nunique().eq(3).all()
    # every document presented K X Y = 99 times (Sec. 5.3.1)
    pres = pd.concat([j.left, j.right]).value_counts()
    assert len(pres) == 216 and (pres == 99).all()
    one = j[j.worker == j.groupby("group").worker.transform("first")]
    for _, g in itertools.islice(one.groupby("group"), 40):
        pairs = list(zip(g.left, g.right))
        assert len(pairs) == 12 and len({frozenset(p) for p in pairs}) == 12
        assert (pd.Series([d for p in pairs for d in p]).value_counts() == 3).all()
        for (l0, r0), (l1, r1) in zip(pairs, pairs[1:]):
            assert len({l0, r0} & {l1, r1}) == 1
            assert l1 == l0 or r1 == r0                # the stayed document keeps its side
    gold = j[j.gold.notna()]
    lab = qrels.set_index("docno").label
    good = np.where(gold.gold == "left", gold.left, gold.right)
    bad = np.where(gold.gold == "left", gold.right, gold.left)
    assert (lab[good].to_numpy() >= 1).all() and (lab[bad].to_numpy() == 0).all()
    assert gold.groupby("group").pair.nunique().eq(1).all()


def test_simulation_is_seeded_and_missing_rates_hold(coll):
    q = coll.qrels[coll.qrels.qid.isin(["1", "2", "3"])]
    a = simulate_crowd(q, seed=7, missing=(0.1, 0.2, 0.3))
    b = simulate_crowd(q, seed=7, missing=(0.1, 0.2, 0.3))
    c = simulate_crowd(q, seed=8, missing=(0.1, 0.2, 0.3))
    pd.testing.assert_frame_equal(a, b)
    assert not a.preferred.equals(c.preferred)
    rates = [a.preferred.isna().mean(), a.absolute.isna().mean(), a.ratio_left.isna().mean()]
    np.testing.assert_allclose(rates, [0.1, 0.2, 0.3], atol=0.03)
    # the embedded validation: the preferred document always has the larger ratio number
    full = a.dropna(subset=["preferred", "ratio_left"])
    assert ((full.ratio_left > full.ratio_right) == (full.preferred == "left")).all()
    with pytest.raises(InputError, match="accuracy"):
        simulate_crowd(q, accuracy=0.4)
    with pytest.raises(InputError, match="n_workers"):
        simulate_crowd(q, workers_per_group=5, n_workers=4)


def test_aggregation_recovers_the_truth_as_workers_grow(coll):
    agree, tau = {}, {}
    for Y in (1, 3, 9):
        s = document_scores(simulate_crowd(coll.qrels, workers_per_group=Y, seed=1))
        for m in METHODS:
            q = s[["qid", "docno", m]].rename(columns={m: "label"})
            # pairs the true labels order: the share the crowd orders the same way (Table 5.5)
            agree[m, Y] = document_agreement(q, coll.qrels, among="b_ordered").agree.iloc[-1]
            tau[m, Y] = document_tau(q, coll.qrels).tau.iloc[-1]
    for m in METHODS:
        assert agree[m, 1] + 0.02 < agree[m, 3] < agree[m, 9] + 1e-12, m
        assert agree[m, 9] > 0.99, m
        assert agree[m, 1] > 0.85, m
        # Kendall's tau_b with the true grades (bounded well below 1 by their ties) grows too
        assert tau[m, 1] + 0.01 < tau[m, 9], m
        assert tau[m, 1] < tau[m, 3] + 1e-12, m
