"""Scores, qrels and categories from pairwise judgments:
pyterrier_noise.crowd.aggregate (Yang 2019 Sec. 5.3.1, 5.3.7, Fig. 5.10; seed note 004b Sec. 3).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from crowd_helpers import rows, scores_of
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pyterrier_noise as pn
from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.crowd import (
    METHODS,
    aggregate,
    document_scores,
    ratio_matrix_scores,
    simulate_crowd,
    to_categories,
)


@pytest.fixture(scope="module")
def crowd(coll):
    return simulate_crowd(coll.qrels, seed=11)


def test_preference_frequency_thesis_example():
    # Sec. 5.3.1, topic 405: K*X*Y = 3*11*3 = 99 presentations, preferred 6 times -> 0.061
    others = [f"o{k}" for k in range(99)]
    f = rows(*[("x", o, "left" if k < 6 else "right") for k, o in enumerate(others)])
    s = scores_of(f, "preference", normalizer=99)
    assert s["x"] == pytest.approx(6 / 99)
    assert round(s["x"], 3) == 0.061
    assert scores_of(f, "preference")["x"] == pytest.approx(6 / 99)   # observed = 99 here too
    assert s["o0"] == 0 and s["o10"] == pytest.approx(1 / 99)


def test_position_bias_weighting_balances_equal_documents():
    # A always shown left, B right; equally relevant; left chosen at the biased rate (1 + b)/2
    b = 0.2
    f = rows(*[("A", "B", "left" if k < 60 else "right") for k in range(100)])
    plain = scores_of(f, "preference")
    assert (plain["A"], plain["B"]) == (pytest.approx(0.6), pytest.approx(0.4))
    fixed = scores_of(f, "preference", left_bias=b)
    assert fixed["A"] == pytest.approx(0.5) and fixed["B"] == pytest.approx(0.5)
    # right bias mirrors it
    g = rows(*[("A", "B", "right" if k < 60 else "left") for k in range(100)])
    fixed = scores_of(g, "preference", left_bias=-b)
    assert fixed["A"] == pytest.approx(0.5) and fixed["B"] == pytest.approx(0.5)
    # the thesis's literal proposal: every choice 1 - b / b (0.96 / 0.04), affine in the frequency
    sym = scores_of(f, "preference", left_bias=0.04, bias_weighting="symmetric")
    assert sym["A"] == pytest.approx(0.04 + 0.92 * 0.6) and sym["B"] == pytest.approx(0.04 + 0.92 * 0.4)
    with pytest.raises(InputError, match="left_bias"):
        document_scores(f, left_bias=1.5)
    with pytest.raises(InputError, match="bias_weighting"):
        document_scores(f, left_bias=0.1, bias_weighting="both")


def test_absolute_frequency_by_hand():
    f = rows(("a", "b", "left", "both"), ("a", "c", "left", "selected"), ("b", "c", "right", "none"),
             ("c", "a", "right", "selected"), ("b", "a", np.nan, "both"))
    s = scores_of(f, "absolute")
    # a: both, selected(a), selected(a, on the right), both -> 4/4; b: both, none, both -> 2/3; c: 0/3
    assert s == {"a": 1.0, "b": pytest.approx(2 / 3), "c": 0.0}


def test_ratio_two_documents_eps_and_geometric_mean():
    # (s_l + 1)/(s_r + 1) = 1/4: the right document is 4 times as relevant
    s = scores_of(rows(("a", "b", "right", np.nan, 0, 3)), "ratio")
    assert s == {"a": pytest.approx(0.25), "b": 1.0}
    # a second assessment, shown the other way round, ratio 1: M[a, b] = sqrt(1/4 * 1) = 1/2
    s = scores_of(rows(("a", "b", "right", np.nan, 0, 3), ("b", "a", "left", np.nan, 1, 1)), "ratio")
    assert s == {"a": pytest.approx(0.5), "b": 1.0}
    # eps changes the ratio: (0 + 0.5)/(3 + 0.5) = 1/7
    assert scores_of(rows(("a", "b", "right", np.nan, 0, 3)), "ratio", eps=0.5)["a"] == pytest.approx(1 / 7)


def random_matrix(n, p, rng, noise=0.3, chain=True):
    w = rng.lognormal(size=n)
    M = np.full((n, n), np.nan)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(len(iu)) < p
    if chain:
        keep |= ju == iu + 1
    r = w[iu] / w[ju] * np.exp(rng.normal(0, noise, len(iu)))
    M[iu[keep], ju[keep]] = r[keep]
    M[ju[keep], iu[keep]] = 1 / r[keep]
    return M, w


def test_ratio_consistent_incomplete_matrix_is_recovered_exactly():
    rng = np.random.default_rng(1)
    M, w = random_matrix(15, 0.2, rng, noise=0.0)
    np.testing.assert_allclose(ratio_matrix_scores(M), w / w.max(), rtol=1e-10)
    # the same through judgments: numbers s_i = c w_i - eps make (s_i + eps)/(s_j + eps) = w_i / w_j
    iu, ju = np.nonzero(np.triu(~np.isnan(M), 1))
    s = 100 * w - 1
    f = rows(*[(f"d{i:02d}", f"d{j:02d}", "left" if w[i] > w[j] else "right", np.nan, s[i], s[j])
               for i, j in zip(iu, ju)])
    got = aggregate(f, "ratio")
    np.testing.assert_allclose(got["label"].to_numpy(), w / w.max(), rtol=1e-10)


def test_ratio_complete_matrix_is_row_geometric_mean():
    rng = np.random.default_rng(2)
    M, _ = random_matrix(9, 1.0, rng, noise=0.8)
    g = np.exp(np.log(np.where(np.isnan(M), 1.0, M)).sum(axis=1) / 9)     # diagonal 1 included
    np.testing.assert_allclose(ratio_matrix_scores(M), g / g.max(), rtol=1e-12)
    # a complete matrix has no cell to fill: one iteration is the fixed point
    np.testing.assert_allclose(ratio_matrix_scores(M, "iterative", iterations=1), g / g.max(), rtol=1e-12)


def test_ratio_llsm_is_the_fixed_point_of_the_thesis_iteration():
    rng = np.random.default_rng(3)
    M, _ = random_matrix(20, 0.25, rng, noise=0.6)
    llsm = ratio_matrix_scores(M)
    it = ratio_matrix_scores(M, "iterative", iterations=3000)
    np.testing.assert_allclose(np.log(it), np.log(llsm), atol=1e-9)
    # one more step of the iteration (Sec. 5.3.1 steps 2-3, rows, diagonal included) leaves it unchanged
    y = np.log(llsm)
    full = np.where(np.isnan(M), y[:, None] - y[None, :], np.log(M))
    np.fill_diagonal(full, 0.0)
    step = full.mean(axis=1)
    np.testing.assert_allclose(step - step.max(), y, atol=1e-10)
    # brute force: minimum-norm least squares on the incidence matrix (numpy lstsq)
    iu, ju = np.nonzero(np.triu(~np.isnan(M), 1))
    A = np.zeros((len(iu), 20))
    A[np.arange(len(iu)), iu] = 1
    A[np.arange(len(iu)), ju] = -1
    sol = np.linalg.lstsq(A, np.log(M[iu, ju]), rcond=None)[0]
    np.testing.assert_allclose(sol - sol.max(), y, atol=1e-10)
    # the thesis's "column" geometric mean (seed note A5) is the reciprocal of the row's: with
    # M[i, j] = (s_i + eps)/(s_j + eps) it would rank the documents upside down
    np.testing.assert_allclose(full.mean(axis=0), -full.mean(axis=1), atol=1e-12)
    assert stats.kendalltau(np.exp(full.mean(axis=0)), llsm).statistic == pytest.approx(-1.0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 9), p=st.floats(0, 1), seed=st.integers(0, 2**31 - 1))
def test_ratio_llsm_equals_minimum_norm_least_squares(n, p, seed):
    rng = np.random.default_rng(seed)
    M, _ = random_matrix(n, p, rng, noise=1.0)
    iu, ju = np.nonzero(np.triu(~np.isnan(M), 1))
    A = np.zeros((len(iu), n))
    A[np.arange(len(iu)), iu] = 1
    A[np.arange(len(iu)), ju] = -1
    sol = np.linalg.lstsq(A, np.log(M[iu, ju]), rcond=None)[0]
    y = np.log(ratio_matrix_scores(M))
    np.testing.assert_allclose(y, sol - sol.max(), atol=1e-9)
    assert y.max() == 0.0


def test_ratio_judgments_iterative_matches_llsm_and_topics_are_independent(crowd):
    sub = crowd[crowd.qid.isin(["1", "2", "3"])]
    both = document_scores(sub)
    it = document_scores(sub, ratio_method="iterative", iterations=2000)
    one = pd.concat([document_scores(sub[sub.qid == q]) for q in ["1", "2", "3"]], ignore_index=True)
    np.testing.assert_allclose(np.log(it.ratio), np.log(both.ratio), atol=1e-8)
    np.testing.assert_allclose(one.ratio.to_numpy(), both.ratio.to_numpy(), rtol=1e-12)
    assert both.groupby("qid").ratio.max().tolist() == [1.0, 1.0, 1.0]


def test_ratio_disconnected_topic_is_scaled_per_part():
    f = rows(("a", "b", "left", np.nan, 3, 1), ("c", "d", "right", np.nan, 0, 1))
    with pytest.warns(CoercionWarning, match="not connected"):
        s = scores_of(f, "ratio")
    assert s == {"a": 1.0, "b": 0.5, "c": 0.5, "d": 1.0}


def test_ratio_matrix_input_errors():
    M = np.array([[1, 2, np.nan], [0.5, 1, 3], [np.nan, 1 / 3, 1]])
    assert ratio_matrix_scores(M).shape == (3,)
    bad = M.copy()
    bad[1, 0] = 0.4
    with pytest.raises(InputError, match="not reciprocal"):
        ratio_matrix_scores(bad)
    bad = M.copy()
    bad[0, 1] = -2
    with pytest.raises(InputError, match="row 0, column 1"):
        ratio_matrix_scores(bad)
    with pytest.raises(InputError, match="not connected"):
        ratio_matrix_scores(np.array([[1, np.nan], [np.nan, 1]]))


def test_combined_adjusted_geometric_mean():
    f = rows(("a", "b", "left", "selected", 3, 1), ("a", "c", "right", "both", 1, 4), ("b", "c", "left", "none", 2, 1))
    s = document_scores(f).set_index("docno")
    for d in "abc":
        p, a, r = s.loc[d, ["preference", "absolute", "ratio"]]
        assert s.loc[d, "combined"] == pytest.approx(((p + 1) * (a + 1) * (r + 1)) ** (1 / 3) - 1)
    two = document_scores(f, combine=("preference", "ratio")).set_index("docno")
    assert two.loc["a", "combined"] == pytest.approx(math.sqrt((s.loc["a", "preference"] + 1)
                                                                * (s.loc["a", "ratio"] + 1)) - 1)
    # a document without ratio answers is combined over the other two (announced)
    g = pd.concat([f, rows(("a", "e", "left", "none"))], ignore_index=True)
    with pytest.warns(CoercionWarning, match="1 document"):
        e = document_scores(g).set_index("docno").loc["e"]
    assert e.combined == pytest.approx(math.sqrt((e.preference + 1) * (e.absolute + 1)) - 1)


def test_aggregate_is_a_qrels_frame_and_drops_unanswered(crowd):
    q = aggregate(crowd, "ratio")
    assert list(q.columns) == ["qid", "docno", "label"]
    assert ((q.label > 0) & (q.label <= 1)).all()
    f = rows(("a", "b", "left", np.nan, 1, 2), ("a", "c", "left"))
    with pytest.warns(CoercionWarning, match="1 document"):
        r = aggregate(f, "ratio")
    assert r.docno.tolist() == ["a", "b"]
    with pytest.raises(InputError, match="method"):
        aggregate(f, "vote")


# ------------------------------------------------------------------------------------------------
# categories

def test_to_categories_matches_reference_proportions():
    scores = pd.DataFrame({"qid": ["1"] * 10 + ["2"] * 7, "docno": [f"d{k}" for k in range(17)],
                           "label": list(np.linspace(1, 0.1, 10)) + [0.9, 0.8, 0.8, 0.5, 0.4, 0.3, 0.2]})
    ref = pd.DataFrame({"qid": ["1"] * 10 + ["2"] * 4, "docno": [f"r{k}" for k in range(14)],
                        "label": [3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0]})
    out = to_categories(scores, reference=ref)
    # topic 1 (H .1, R .2, M .3, N .4): 1, 2, 3, 4 documents; topic 2 (.5/.5 of 7): round(3.5) = 4 on top
    assert out.label.tolist()[:10] == [3, 2, 2, 1, 1, 1, 0, 0, 0, 0]
    assert out.label.tolist()[10:] == [1, 1, 1, 1, 0, 0, 0]
    # equal scores at a boundary: broken by docno
    tie = pd.DataFrame({"qid": "1", "docno": ["b", "a", "c"], "label": [0.5, 0.5, 0.1]})
    assert to_categories(tie, proportions=[2 / 3, 1 / 3]).label.tolist() == [0, 1, 0]
    assert to_categories(tie, proportions={0: 0.0, 2: 1.0}).label.tolist() == [2, 2, 2]
    with pytest.raises(InputError, match="exactly one"):
        to_categories(tie)
    with pytest.raises(InputError, match="sum to 1"):
        to_categories(tie, proportions=[0.5, 0.6])
    with pytest.raises(InputError, match="topic '2'"):
        to_categories(scores, reference=ref[ref.qid == "1"])


def test_to_categories_is_monotone_and_counts_follow_cumulative_rounding():
    rng = np.random.default_rng(4)
    for n in (5, 13, 40):
        sc = pd.DataFrame({"qid": "q", "docno": [f"d{k:03d}" for k in range(n)], "label": rng.random(n)})
        p = rng.dirichlet(np.ones(4))
        out = to_categories(sc, proportions=p)
        order = np.argsort(-sc.label.to_numpy())
        assert np.all(np.diff(out.label.to_numpy()[order]) <= 0)
        cum = np.floor(n * np.cumsum(p[::-1]) + 0.5)
        cum[-1] = n
        counts = np.array([(out.label == g).sum() for g in (3, 2, 1, 0)])
        np.testing.assert_array_equal(np.cumsum(counts), cum)


# ------------------------------------------------------------------------------------------------
# the aggregated qrels are ordinary qrels

ALL_MEASURES = ["RBP(p=0.8,max_rel=1)", "RBPResidual(p=0.8)", "INST(T=3,max_rel=1)", "INSQ(T=2)", "AP",
                "nDCG@10", "P@10", "RR", "RBPUpper(p=0.5)"]


def test_aggregated_qrels_flow_into_the_engine(coll):
    runs = {k: coll.runs[k] for k in list(coll.runs)[:5]}
    s = document_scores(simulate_crowd(coll.qrels[coll.qrels.qid.astype(int) <= 6], seed=4))
    versions = {m: s[["qid", "docno", m]].rename(columns={m: "label"}).dropna() for m in METHODS}
    versions["categories"] = to_categories(versions["ratio"], reference=coll.qrels)
    # every version through evaluate(), every measure
    with pytest.warns(pn.NoiseWarning, match="judged labels is relevant"):   # the scores: every one above 0
        single = {k: pn.evaluate(runs, q, ALL_MEASURES, perquery=True, on_topic_mismatch="ignore")
                  for k, q in versions.items()}
    for k, res in single.items():
        assert np.isfinite(res.value).all(), k
    # ... and all versions at once as a label matrix of one alignment (the robustness use)
    union = s[["qid", "docno"]].assign(label=0.0)
    aligned = pn.AlignedRuns.build(runs, union, on_topic_mismatch="ignore")
    table = aligned.table.frame
    L = np.column_stack([table.merge(q, on=["qid", "docno"], how="left", suffixes=("_", ""))["label"].to_numpy()
                         for q in versions.values()])
    specs = {m: pn.measures.to_spec(m)[0] for m in ALL_MEASURES}
    out = aligned.evaluate(list(specs.values()), L)
    for r, k in enumerate(versions):
        ref = single[k]
        for m, spec in specs.items():
            got = out[spec][:, :, r]
            want = ref[ref.measure == m].pivot(index="name", columns="qid", values="value")
            want = want.loc[aligned.run_names, aligned.topics].to_numpy()
            np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{k} {m}")
