"""Tests for pyterrier_noise.correction (Goldberg et al. 2017, metric correction for noisy judges).

Reference values are the seed notes' (shared/spec/seed001-metric-correction.md, Sec 9, 10, 13),
recomputed there with numpy/scipy; the paper's unreproducible p = 0.841 is replaced by 0.854.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pyterrier_noise.correction import (
    CorrectionWarning, JudgeCalibration, compare, correct_experiment, correct_per_query, correct_summary,
    corrected_dcg, corrected_from_mass, corrected_metric, corrected_precision, corrected_rbp, label_mass,
)
from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning

# the calibration counts printed in Goldberg et al. (2017), Sec 6 (the eBay example)
EBAY = dict(n_relevant=59, agree_relevant=43, n_nonrelevant=84, agree_nonrelevant=67)


@pytest.fixture()
def ebay_paper_sec6():
    """The eBay inputs as the paper prints them (Sec 6): calibration counts, P@3 means, SDs and query
    counts.  Expected values in the tests are the paper's where it prints them, else exact
    arithmetic of its equations (written out in eq7 below)."""
    cal = JudgeCalibration.binary(**EBAY)
    a = correct_summary(0.6260, 0.414, 10278, cal, measure="P@3")
    b = correct_summary(0.6385, 0.402, 20604, cal, measure="P@3")
    return cal, a, b


def eq7(jbar: float, var_j: float, tpr: float, n_r: int, tnr: float, n_n: int) -> tuple[float, float]:
    """The paper's Eq 5/14 and Eq 7 written out literally (independent of the library's graded form)."""
    d = tpr + tnr - 1
    value = (jbar - 1 + tnr) / d
    var = (var_j / d ** 2 + tpr * (1 - tpr) / n_r * (jbar - 1 + tnr) ** 2 / d ** 4
           + tnr * (1 - tnr) / n_n * (jbar - tpr) ** 2 / d ** 4)
    return value, float(np.sqrt(var))


# ------------------------------------------------------------------------------------------------
# eBay example (Sec 6; notes Sec 9 / T1)

def test_ebay_corrected_values_and_ses(ebay_paper_sec6):
    cal, a, b = ebay_paper_sec6
    assert cal.tpr == pytest.approx(0.728814, abs=1e-6)
    assert cal.tnr == pytest.approx(0.797619, abs=1e-6)
    assert cal.D == pytest.approx(0.526433, abs=1e-6)
    # paper: 0.805 / 0.828, SEs 0.0903 / 0.0923; notes: 0.804698 / 0.828442, 0.090288 / 0.092350
    assert a.value == pytest.approx(0.8047, abs=1e-4)
    assert b.value == pytest.approx(0.8284, abs=1e-4)
    assert a.value == pytest.approx(0.804698, abs=1e-6)
    assert b.value == pytest.approx(0.828442, abs=1e-6)
    assert a.se == pytest.approx(0.0903, abs=1e-4)
    assert b.se == pytest.approx(0.0923, abs=1e-4)
    assert a.se == pytest.approx(0.090288, abs=1e-6)
    assert b.se == pytest.approx(0.092350, abs=1e-6)
    # variance terms of Eq 7: query, V[J_R] term (gold 1), V[J_N] term (gold 0)
    assert a.var_terms["query"] == pytest.approx(6.0174e-5, rel=1e-4)
    assert a.var_terms["calibration[gold=1]"] == pytest.approx(7.8273e-3, rel=1e-4)
    assert a.var_terms["calibration[gold=0]"] == pytest.approx(2.6449e-4, rel=1e-4)
    assert b.var_terms["calibration[gold=1]"] == pytest.approx(8.29605e-3, rel=1e-5)
    assert sum(b.var_terms.values()) == pytest.approx(8.52844e-3, rel=1e-5)
    assert (a.ci_low, a.ci_high) == pytest.approx((0.6277, 0.9817), abs=1e-4)
    assert (b.ci_low, b.ci_high) == pytest.approx((0.6474, 1.0094), abs=1e-4)
    # and the paper's Eq 7 written out by hand
    for est, (m, s, n) in ((a, (0.6260, 0.414, 10278)), (b, (0.6385, 0.402, 20604))):
        value, se = eq7(m, s ** 2 / n, cal.tpr, 59, cal.tnr, 84)
        assert est.value == pytest.approx(value, rel=1e-12)
        assert est.se == pytest.approx(se, rel=1e-12)


def test_ebay_comparisons(ebay_paper_sec6):
    _, a, b = ebay_paper_sec6
    paper = compare(b, a, calibration="independent")           # Eq 10 / 11
    assert paper.diff == pytest.approx(0.023745, abs=1e-6)
    assert paper.z == pytest.approx(0.18385, abs=1e-5)
    assert paper.p_value == pytest.approx(0.854, abs=1e-3)     # the paper prints 0.841 (notes A2)
    assert paper.calibration == "independent" and not paper.paired
    # naive Welch test (Eq 9 with the correct Welch-Satterthwaite df)
    assert paper.naive_statistic == pytest.approx(2.52439, abs=1e-5)
    assert paper.naive_p_value == pytest.approx(0.0116, abs=1e-4)
    assert paper.naive_df == pytest.approx(20009.75, abs=0.01)
    assert paper.naive_se == pytest.approx(np.hypot(0.0040836, 0.0028006), abs=1e-6)
    # one calibration for both systems: its error cancels in the difference (notes Sec 12.3)
    shared = compare(b, a)
    assert shared.calibration == "shared"
    assert shared.se == pytest.approx(0.009960, abs=1e-6)
    assert shared.z == pytest.approx(2.384, abs=1e-3)
    assert shared.p_value == pytest.approx(0.0171, abs=1e-4)
    # binary closed form of the shared variance
    d = 0.526433
    var = (0.0040836 ** 2 + 0.0028006 ** 2) / d ** 2 + ((0.6385 - 0.6260) / d ** 2) ** 2 * (
        43 / 59 * 16 / 59 / 59 + 67 / 84 * 17 / 84 / 84)
    assert shared.se == pytest.approx(np.sqrt(var), rel=1e-4)
    # direction of the test
    assert compare(b, a, alternative="greater").p_value == pytest.approx(shared.p_value / 2, rel=1e-12)
    assert compare(a, b).diff == pytest.approx(-shared.diff)


def test_ebay_bootstrap(ebay_paper_sec6):
    cal, _, _ = ebay_paper_sec6
    boot = correct_summary(0.6260, 0.414, 10278, cal, se="bootstrap", n_replicates=40_000, seed=7)
    # notes Sec 9: Alg 1 SE ~ 0.0975 (200k draws); larger than Eq 7's 0.0903 because 1/D is convex
    assert boot.se == pytest.approx(0.0975, abs=0.003)
    assert boot.se > boot.delta_se
    assert boot.replicates.shape == (40_000,)
    again = correct_summary(0.6260, 0.414, 10278, cal, se="bootstrap", n_replicates=40_000, seed=7)
    np.testing.assert_array_equal(boot.replicates, again.replicates)
    other = correct_summary(0.6260, 0.414, 10278, cal, se="bootstrap", n_replicates=40_000, seed=8)
    assert not np.array_equal(boot.replicates, other.replicates)


def test_ebay_self_consistency():
    """Correcting the calibration sample's own bronze labels gives its gold prevalence (notes Sec 3, T8)."""
    cal = JudgeCalibration.binary(**EBAY)
    bronze = np.r_[np.ones(43 + 17), np.zeros(16 + 67)][:, None]          # 60 bronze-relevant of 143
    est = corrected_precision(bronze, calibration=cal, k=1)
    assert est.naive_value == pytest.approx(60 / 143)
    assert est.value == pytest.approx(59 / 143, abs=1e-12)


# ------------------------------------------------------------------------------------------------
# other test vectors of the notes (Sec 13)

def test_p_at_1_vector_t4():
    cal = JudgeCalibration.binary(250, 225, 250, 200)
    est = correct_summary(0.6, np.sqrt(0.6 * 0.4), 1000, cal)
    assert est.value == pytest.approx(0.571429, abs=1e-6)
    assert est.se == pytest.approx(0.031138, abs=1e-6)
    assert est.var_terms["query"] == pytest.approx(4.89796e-4, rel=1e-5)
    assert est.var_terms["calibration[gold=1]"] == pytest.approx(2.39900e-4, rel=1e-5)
    assert est.var_terms["calibration[gold=0]"] == pytest.approx(2.39900e-4, rel=1e-5)
    assert est.naive_se == pytest.approx(0.015492, abs=1e-6)
    # the same from 1000 per-query P@1 values; ddof=0 is Eq 8's j(1-j)/n
    values = np.r_[np.ones(600), np.zeros(400)]
    per_query = correct_per_query(values, cal, ddof=0)
    assert per_query.se == pytest.approx(0.031138, abs=1e-6)
    # topic-resampling + calibration-redraw bootstrap: notes give Alg 1 SE ~ 0.0313
    boot = correct_per_query(values, cal, ddof=0, se="bootstrap", n_replicates=4000, seed=1)
    assert boot.se == pytest.approx(0.0313, abs=0.0015)
    assert boot.ci_low < 0.571429 < boot.ci_high


def test_small_p_at_3_vector_t5():
    a_labels = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    b_labels = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 0], [0, 1, 0]])
    cal = JudgeCalibration.binary(20, 18, 30, 24)
    a = corrected_precision(a_labels, calibration=cal, k=3)
    b = corrected_precision(b_labels, calibration=cal, k=3)
    assert a.naive_value == pytest.approx(0.5)
    assert a.naive_se * 2 == pytest.approx(0.430331, abs=1e-6)                 # s / sqrt(4)
    assert a.value == pytest.approx(0.428571, abs=1e-6)
    assert a.se == pytest.approx(0.315790, abs=1e-6)
    assert [a.var_terms[k] for k in ("query", "calibration[gold=1]", "calibration[gold=0]")] == \
        pytest.approx([0.094482, 0.001687, 0.003554], abs=1e-6)
    np.testing.assert_allclose(a.per_query.to_numpy(), [0.666667, 0.190476, 1.142857, -0.285714], atol=1e-6)
    assert a.per_query.mean() == pytest.approx(a.value)
    assert b.naive_value == pytest.approx(1 / 3)
    assert b.value == pytest.approx(0.190476, abs=1e-6)
    assert b.se == pytest.approx(0.212741, abs=1e-6)
    c = compare(a, b, calibration="independent", paired=False)
    assert c.z == pytest.approx(0.625307, abs=1e-6)
    assert c.p_value == pytest.approx(0.531769, abs=1e-6)
    assert c.naive_statistic == pytest.approx(0.654654, abs=1e-6)
    assert c.naive_df == pytest.approx(5.069, abs=1e-3)
    assert c.naive_p_value == pytest.approx(0.5412, abs=1e-4)
    welch = stats.ttest_ind(a.naive_per_query, b.naive_per_query, equal_var=False)
    assert c.naive_df == pytest.approx(welch.df) and c.naive_p_value == pytest.approx(welch.pvalue)
    # same topics -> paired by default; paired query term is the variance of the differences
    p = compare(a, b, calibration="independent")
    assert p.paired and p.naive_test == "paired t"
    diff = a.per_query.to_numpy() - b.per_query.to_numpy()
    calib = sum(v for k, v in {**a.var_terms}.items() if k != "query") + \
        sum(v for k, v in {**b.var_terms}.items() if k != "query")
    assert p.se == pytest.approx(np.sqrt(diff.var(ddof=1) / 4 + calib))
    assert p.naive_p_value == pytest.approx(stats.ttest_rel(a.naive_per_query, b.naive_per_query).pvalue)


FIG1 = np.array([[14, 4, 2], [3, 12, 5], [1, 3, 16]])        # rows gold (HR, PR, NR), cols bronze


def test_graded_dcg_figure_1_t6_t7():
    # labels 0 = NR, 1 = PR, 2 = HR (the notes order them HR, PR, NR)
    cal = JudgeCalibration(FIG1[::-1, ::-1], labels=[0, 1, 2])
    gains = {0: 0.0, 1: 0.5, 2: 1.0}
    ranked = np.array([[0, 2], [1, 0]])                      # q1: NR, HR; q2: PR, NR
    est = corrected_dcg(ranked, calibration=cal, gains=gains)
    np.testing.assert_allclose(cal.corrected_gains(gains).to_numpy(), [-0.191304, 0.591304, 1.286957], atol=1e-6)
    assert est.value == pytest.approx(0.545640, abs=1e-6)
    np.testing.assert_allclose(est.per_query.to_numpy(), [0.620675, 0.470605], atol=1e-6)
    assert est.se == pytest.approx(0.123073, abs=1e-6)
    assert est.var_terms["query"] == pytest.approx(0.0056303, abs=1e-7)
    assert sum(v for k, v in est.var_terms.items() if k != "query") == pytest.approx(0.0095168, abs=1e-7)
    # T6: a perfect judge gives the naive DCG
    perfect = JudgeCalibration(np.diag([20, 20, 20]), labels=[0, 1, 2])
    naive = corrected_dcg(ranked, calibration=perfect, gains=gains)
    assert naive.value == pytest.approx(0.565465, abs=1e-6) == naive.naive_value


def test_trec_2007_out_of_range_and_near_random():
    """Per-run calibrations of the TREC 2007 Enterprise track (Table 2; notes Sec 10, T10)."""
    doc = JudgeCalibration.binary(38, 17, 262, 216)
    york = JudgeCalibration.binary(50, 14, 285, 230)
    assert doc.D / doc.sd_D == pytest.approx(3.24, abs=0.01)
    assert york.D / york.sd_D == pytest.approx(1.29, abs=0.01)
    with pytest.warns(CorrectionWarning, match="outside the metric's range") as record:
        e1 = correct_summary(0.527, 0.45, 33, doc, measure="P@20")
    assert not any("bronze judge is close to random" in str(w.message) for w in record)
    assert e1.value == pytest.approx(1.292983, abs=1e-6)
    assert e1.var_terms["calibration[gold=1]"] == pytest.approx(0.147237, abs=1e-6)
    assert e1.var_terms["calibration[gold=0]"] == pytest.approx(0.000642, abs=1e-6)
    with pytest.warns(CorrectionWarning) as record:
        e2 = correct_summary(0.513, 0.45, 33, york, measure="P@20")
    messages = " ".join(str(w.message) for w in record)
    assert "bronze judge is close to random" in messages and "outside the metric's range" in messages
    assert e2.value == pytest.approx(3.677621, abs=1e-6)
    assert e2.var_terms["calibration[gold=1]"] == pytest.approx(7.201796, abs=1e-6)
    assert e2.var_terms["calibration[gold=0]"] == pytest.approx(0.517417, abs=1e-6)
    # different calibrations -> compared as independent
    assert compare(e1, e2).calibration == "independent"


# ------------------------------------------------------------------------------------------------
# simulation (Sec 5, Alg 2; notes Sec 8 / T9), vectorised over simulated experiments

def test_simulated_coverage_of_eq7_intervals():
    rng = np.random.default_rng(20170403)
    n_sim, n, k = 400, 50, 10
    m_g = np.linspace(0.49, 0.31, k)                           # per-rank gold precision, mean 0.4
    gold = rng.random((n_sim, n, k)) < m_g
    u = rng.random((n_sim, n, k))
    bronze = np.where(gold, u < 0.9, u < 1 - 0.8).astype(np.int64)
    agree_r = rng.binomial(250, 0.9, n_sim)
    agree_n = rng.binomial(250, 0.8, n_sim)
    counts = np.stack([np.stack([agree_n, 250 - agree_n], -1), np.stack([250 - agree_r, agree_r], -1)], axis=1)
    mass = label_mass(bronze, np.full(k, 1 / k), 2)
    res = corrected_from_mass(mass, counts, [0.0, 1.0])
    naive = bronze.mean(axis=(1, 2))
    naive_se = bronze.mean(axis=2).std(axis=1, ddof=1) / np.sqrt(n)
    covered = np.abs(res.value - 0.4) <= 1.96 * res.se
    naive_covered = np.abs(naive - 0.4) <= 1.96 * naive_se
    lo, hi = stats.binom.interval(0.999, n_sim, 0.95)
    assert lo / n_sim <= covered.mean() <= hi / n_sim          # ~ [0.92, 0.98]
    assert naive_covered.mean() < 0.15                          # notes: ~5%
    assert naive.mean() == pytest.approx(0.48, abs=0.005)       # 0.4 * 0.7 + 0.2
    assert res.value.mean() == pytest.approx(0.40, abs=3 * res.value.std() / np.sqrt(n_sim))
    # the delta SE matches the spread of the corrected values over simulations
    assert res.se.mean() == pytest.approx(res.value.std(ddof=1), rel=0.15)
    # the batched kernel agrees with the estimator one experiment at a time (Eq 7 by hand)
    one = corrected_precision(bronze[0], calibration=JudgeCalibration(counts[0]), k=k)
    assert one.value == pytest.approx(res.value[0]) and one.se == pytest.approx(res.se[0])
    tpr, tnr = agree_r[0] / 250, agree_n[0] / 250
    pq = bronze[0].mean(axis=1)
    assert eq7(pq.mean(), pq.var(ddof=1) / n, tpr, 250, tnr, 250) == pytest.approx((one.value, one.se))


# ------------------------------------------------------------------------------------------------
# brute force and invariants

def _random_graded(rng, n_labels, n, k):
    counts = rng.integers(1, 8, size=(n_labels, n_labels)) + np.diag(rng.integers(15, 40, n_labels))
    labels = rng.integers(0, n_labels, size=(n, k))
    return counts, labels


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dcg_matches_eq18_and_numerical_delta_method(seed):
    rng = np.random.default_rng(seed)
    n_labels, n, k = 3, 7, 4
    counts, labels = _random_graded(rng, n_labels, n, k)
    v = np.array([0.0, 1.0, 3.0])
    cal = JudgeCalibration(counts)
    est = corrected_dcg(labels, calibration=cal, gains=v)
    J = counts / counts.sum(1, keepdims=True)

    def eq18(jm):                                              # sum_s E[J^(s)]^T J^-1 v / log2(s+1)
        total = 0.0
        for s in range(k):
            share = np.array([(labels[:, s] == lab).mean() for lab in range(n_labels)])
            total += share @ np.linalg.solve(jm, v) / np.log2(s + 2)
        return total

    assert est.value == pytest.approx(eq18(J), rel=1e-12)
    # delta method by finite differences over the confusion-matrix entries
    grad = np.zeros_like(J)
    h = 1e-6
    for i in range(n_labels):
        for j in range(n_labels):
            up, down = J.copy(), J.copy()
            up[i, j] += h
            down[i, j] -= h
            grad[i, j] = (eq18(up) - eq18(down)) / (2 * h)
    n_gold = counts.sum(1)
    calib_var = sum(grad[r] @ (np.diag(J[r]) - np.outer(J[r], J[r])) @ grad[r] / n_gold[r] for r in range(n_labels))
    per_query = np.array([sum(np.linalg.solve(J, v)[labels[q, s]] / np.log2(s + 2) for s in range(k))
                          for q in range(n)])
    assert est.se ** 2 == pytest.approx(per_query.var(ddof=1) / n + calib_var, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(2, 4))
def test_self_consistency_graded(seed, n_labels):
    """Correcting the calibration's own bronze labels returns its gold label distribution exactly."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, size=(n_labels, n_labels)) + np.diag(rng.integers(10, 30, n_labels))
    bronze = np.repeat(np.arange(n_labels), counts.sum(axis=0))[:, None]
    cal = JudgeCalibration(counts)
    for lab in range(n_labels):
        onehot = np.eye(n_labels)[lab]
        est = corrected_metric(bronze, calibration=cal, discount=[1.0], gains=onehot)
        assert est.value == pytest.approx(counts[lab].sum() / counts.sum(), abs=1e-9)


@pytest.mark.filterwarnings("ignore::pyterrier_noise.correction.CorrectionWarning")   # random data: out of range
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6))
def test_binary_graded_form_equals_eq7(seed, k):
    rng = np.random.default_rng(seed)
    n_r, n_n = rng.integers(5, 300, 2)
    a_r, a_n = rng.integers(int(0.7 * n_r), n_r + 1), rng.integers(int(0.7 * n_n), n_n + 1)
    cal = JudgeCalibration.binary(int(n_r), int(a_r), int(n_n), int(a_n))
    labels = (rng.random((12, k)) < rng.random()).astype(int)
    est = corrected_precision(labels, calibration=cal, k=k)
    pq = labels.mean(axis=1)
    assert (est.value, est.se) == pytest.approx(eq7(pq.mean(), pq.var(ddof=1) / 12, a_r / n_r, n_r, a_n / n_n, n_n))
    # per-query values give the same estimate, and the affine map of Eq 14 per topic
    pqe = correct_per_query(pq, cal)
    assert (pqe.value, pqe.se) == pytest.approx((est.value, est.se))
    # a per-query value that is exactly 0 comes out of the affine map as a rounding residue of a few
    # ulps of 1/D (|1/D| <= 1/0.4 here), so compare with an absolute tolerance of many such ulps
    np.testing.assert_allclose(est.per_query, (pq - 1 + cal.tnr) / cal.D, rtol=1e-12, atol=1e-12)


def test_perfect_judge_changes_nothing():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, size=(30, 5))
    cal = JudgeCalibration(np.diag([40, 25, 10]))
    for est in (corrected_dcg(labels, calibration=cal), corrected_precision(labels, calibration=cal, k=5),
                corrected_rbp(labels, calibration=cal, p=0.7)):
        np.testing.assert_allclose(est.per_query, est.naive_per_query)
        assert all(v == 0 for k, v in est.var_terms.items() if k != "query")
        assert est.se == pytest.approx(est.naive_se)
    boot = corrected_dcg(labels, calibration=cal, se="bootstrap", n_replicates=3000, seed=2)
    idx = np.random.default_rng(3).integers(0, 30, size=(3000, 30))       # plain topic bootstrap
    plain = boot.naive_per_query.to_numpy()[idx].mean(axis=1).std(ddof=1)
    assert boot.se == pytest.approx(plain, rel=0.08)


def test_rbp_and_short_rankings():
    cal = JudgeCalibration.binary(100, 90, 100, 80)
    labels = np.array([[1, 0, 1, np.nan], [0, 1, np.nan, np.nan], [1, 1, 1, 1]])
    est = corrected_rbp(labels, calibration=cal, p=0.5)
    w = cal.corrected_gains([0, 1]).to_numpy()
    d = 0.5 * 0.5 ** np.arange(4)
    expected = [d[0] * w[1] + d[1] * w[0] + d[2] * w[1], d[0] * w[0] + d[1] * w[1], d.sum() * w[1]]
    np.testing.assert_allclose(est.per_query, expected)                  # missing ranks contribute 0
    np.testing.assert_allclose(est.naive_per_query, [d[0] + d[2], d[1], d.sum()])
    assert est.measure == "RBP(p=0.5)"
    p2 = corrected_precision(labels, calibration=cal, k=6)               # padded past the matrix: 0
    np.testing.assert_allclose(p2.naive_per_query, [2 / 6, 1 / 6, 4 / 6])


# ------------------------------------------------------------------------------------------------
# runs and qrels frames

def _toy_collection(seed=0, n_topics=12):
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_topics):
        docs = rng.choice(40, size=rng.integers(3, 12), replace=False)
        rows.append(pd.DataFrame({"qid": f"q{t}", "docno": [f"d{d:02d}" for d in docs],
                                  "score": rng.integers(0, 4, len(docs)).astype(float)}))   # many ties
    run = pd.concat(rows, ignore_index=True)
    qrels = run[["qid", "docno"]].sample(frac=0.75, random_state=seed).reset_index(drop=True)
    qrels["label"] = rng.integers(0, 2, len(qrels))
    return run, qrels


def test_run_frame_uses_trec_eval_order_and_matches_ir_measures():
    import ir_measures
    run, qrels = _toy_collection()
    cal = JudgeCalibration.binary(80, 70, 90, 75)
    with pytest.warns(CoercionWarning, match="no bronze judgment"):
        est = corrected_precision(run, qrels, calibration=cal, k=5)
    ref = ir_measures.iter_calc([ir_measures.P @ 5], qrels.rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                            "label": "relevance"}),
                                run.rename(columns={"qid": "query_id", "docno": "doc_id"}))
    ref = pd.Series({m.query_id: m.value for m in ref})
    np.testing.assert_allclose(est.naive_per_query.to_numpy(), ref.reindex(est.naive_per_query.index), atol=1e-12)
    # explicit trec_eval order: score descending, then docno descending
    q0 = run[run.qid == "q0"].sort_values(["score", "docno"], ascending=False).head(5)
    lab = q0.merge(qrels, on=["qid", "docno"], how="left")["label"].fillna(0).to_numpy()
    w = cal.corrected_gains([0, 1]).to_numpy()
    judged = q0.merge(qrels, on=["qid", "docno"], how="left")["label"].notna().to_numpy()
    assert est.per_query["q0"] == pytest.approx(np.sum(np.where(judged, w[lab.astype(int)], 0.0)) / 5)


def test_run_is_ranked_by_the_engine_with_float32_ties():
    """Scores equal in single precision are tied and ordered by docno descending, as trec_eval, pytrec_eval
    and the engine do: a perfect judge then gives exactly evaluate()'s P@1 (a float64 sort gave 0.0)."""
    from pyterrier_noise.measures import evaluate
    run = pd.DataFrame({"qid": ["1", "1", "2", "2"], "docno": ["a", "b", "a", "b"],
                        "score": [1 + 2 ** -30, 1.0, 1 + 2 ** -30, 1.0]})
    qrels = pd.DataFrame({"qid": ["1", "1", "2", "2"], "docno": ["a", "b", "a", "b"], "label": [0, 1, 0, 1]})
    perfect = JudgeCalibration(np.diag([10, 10]))
    est = corrected_precision(run, qrels, calibration=perfect, k=1)
    ev = evaluate({"run": run}, qrels, ["P@1"], perquery=True).set_index("qid")["value"]
    assert ev.tolist() == [1.0, 1.0]
    assert est.value == 1.0 == est.naive_value
    np.testing.assert_array_equal(est.per_query.to_numpy(), ev.reindex(est.per_query.index).to_numpy())
    # DCG and RBP rank the same way: b (relevant) first
    assert corrected_dcg(run, qrels, calibration=perfect, k=2).value == pytest.approx(1.0)
    assert corrected_rbp(run, qrels, calibration=perfect, p=0.5, k=2).value == pytest.approx(0.5)


def test_seed_defaults_to_0_and_the_count_is_n_replicates():
    cal = JudgeCalibration.binary(**EBAY)
    a = correct_summary(0.6, 0.3, 50, cal, se="bootstrap", n_replicates=500)
    again = correct_summary(0.6, 0.3, 50, cal, se="bootstrap", n_replicates=500, seed=0)
    np.testing.assert_array_equal(a.replicates, again.replicates)
    fresh = correct_summary(0.6, 0.3, 50, cal, se="bootstrap", n_replicates=500, seed=None)
    assert not np.array_equal(a.replicates, fresh.replicates)
    with pytest.raises(TypeError, match="n_boot"):       # its name before the first release
        correct_summary(0.6, 0.3, 50, cal, se="bootstrap", n_boot=500)
    labels = np.array([[1, 0], [0, 0], [1, 1]])
    est = corrected_precision(labels, calibration=cal, k=2)
    other = corrected_precision(1 - labels, calibration=cal, k=2)
    assert compare(est, other, se="bootstrap", n_replicates=200) == compare(est, other, se="bootstrap",
                                                                             n_replicates=200)
    with pytest.raises(TypeError, match="n_boot"):
        compare(est, other, se="bootstrap", n_boot=200)
    with pytest.raises(TypeError, match="n_boot"):
        corrected_dcg(labels, calibration=cal, se="bootstrap", n_boot=200)
    with pytest.raises(TypeError, match="n_bootstrap"):
        corrected_precision(labels, calibration=cal, k=2, n_bootstrap=10)
    with pytest.raises(InputError, match="n_replicates must be an integer >= 2"):
        correct_per_query([0.5, 0.2], cal, n_replicates=1)


def test_unjudged_policies_and_label_errors():
    run = pd.DataFrame({"qid": ["1"] * 3 + ["2"] * 3, "docno": list("abcdef"), "score": [3.0, 2, 1, 3, 2, 1]})
    qrels = pd.DataFrame({"qid": ["1", "1", "2", "2"], "docno": list("abde"), "label": [1, 0, 0, 1]})
    cal = JudgeCalibration.binary(50, 45, 50, 40)
    w = cal.corrected_gains([0, 1]).to_numpy()
    with pytest.raises(InputError, match="no bronze judgment"):
        corrected_precision(run, qrels, calibration=cal, k=3, unjudged="error")
    with pytest.warns(CoercionWarning, match="certainly non-relevant"):
        zero = corrected_precision(run, qrels, calibration=cal, k=3)
    np.testing.assert_allclose(zero.per_query, [(w[1] + w[0]) / 3, (w[0] + w[1]) / 3])
    with pytest.warns(CoercionWarning, match="as if the bronze judge gave them label 0"):
        low = corrected_precision(run, qrels, calibration=cal, k=3, unjudged="lowest")
    np.testing.assert_allclose(low.per_query, [(w[1] + 2 * w[0]) / 3, (2 * w[0] + w[1]) / 3])
    graded = qrels.assign(label=[2, 0, 0, 1])
    with pytest.raises(InputError, match=r"label 2\.0 \(qid='1', docno='a'\) is not a calibration label"):
        corrected_precision(run, graded, calibration=cal, k=2)
    with pytest.raises(InputError, match=r"row 1 \(qid '1'\), rank 0: label 3"):
        corrected_precision(np.array([[1, 0], [3, 1]]), calibration=cal, k=2)
    dup = pd.concat([run, run.iloc[[0]]], ignore_index=True)
    with pytest.raises(InputError, match="appears twice"):
        corrected_precision(dup, qrels, calibration=cal, k=2)


def test_pt_experiment_perquery_output():
    pt = pytest.importorskip("pyterrier")
    import ir_measures
    run, qrels = _toy_collection(seed=3, n_topics=10)
    run = run[run.groupby("qid")["docno"].transform("size") >= 3]
    full_qrels = run[["qid", "docno"]].merge(qrels, how="left").fillna({"label": 0})   # every doc judged
    full_qrels["label"] = full_qrels["label"].astype(int)
    other = run.assign(score=-run["score"])
    topics = pd.DataFrame({"qid": run["qid"].unique(), "query": "x"})
    pq = pt.Experiment([pt.Transformer.from_df(run), pt.Transformer.from_df(other)], topics, full_qrels,
                       [ir_measures.P @ 3], names=["A", "B"], perquery=True)
    cal = JudgeCalibration.binary(60, 50, 70, 60)
    table = correct_experiment(pq, cal)
    direct = corrected_precision(run, full_qrels, calibration=cal, k=3)
    row = table.set_index("name").loc["A"]
    assert row["corrected"] == pytest.approx(direct.value) and row["se"] == pytest.approx(direct.se)
    assert row["naive"] == pytest.approx(direct.naive_value) and row["n_queries"] == direct.n_queries
    values = correct_experiment(pq, cal, per_query_values=True)
    assert list(values.columns) == list(pq.columns) + ["corrected"]
    a_vals = values[values.name == "A"].set_index("qid")["corrected"]
    np.testing.assert_allclose(a_vals.reindex(direct.per_query.index), direct.per_query)
    # per-system calibrations
    cal_b = JudgeCalibration.binary(40, 30, 40, 35)
    per_run = correct_experiment(pq, {"A": cal, "B": cal_b}).set_index("name")
    series_b = pq[pq.name == "B"].set_index("qid")["value"]
    est_b = correct_per_query(series_b, cal_b, measure="P@3")
    assert per_run.loc["B", "corrected"] == pytest.approx(est_b.value)
    assert per_run.loc["B", "se"] == pytest.approx(est_b.se)
    with pytest.raises(InputError, match="nDCG"):
        correct_experiment(pq.assign(measure="nDCG@10"), cal)


# ------------------------------------------------------------------------------------------------
# calibration object

def test_calibration_constructors_and_rates():
    bronze = np.r_[np.ones(43), np.zeros(16), np.ones(17), np.zeros(67)]
    gold = np.r_[np.ones(59), np.zeros(84)]
    from_arrays = JudgeCalibration.from_pairs(bronze, gold)
    frame = pd.DataFrame({"label_bronze": bronze, "label_gold": gold, "qid": "1"})
    from_frame = JudgeCalibration.from_pairs(frame)
    ref = JudgeCalibration.binary(**EBAY)
    for cal in (from_arrays, from_frame):
        np.testing.assert_array_equal(cal.counts.to_numpy(), ref.counts.to_numpy())
        assert cal.same_sample(ref)
    assert ref.counts.loc[1, 1] == 43 and ref.n_gold.tolist() == [84, 59]
    rates = ref.rates().set_index(["gold", "bronze"])
    assert rates.loc[(1, 1), "rate"] == pytest.approx(43 / 59)
    assert rates.loc[(1, 1), "se"] == pytest.approx(ref.tpr_se) == pytest.approx(np.sqrt(43 / 59 * 16 / 59 / 59))
    assert rates.loc[(0, 0), "rate"] == pytest.approx(67 / 84)
    assert rates.loc[(1, 1), "ci_low"] < 43 / 59 < rates.loc[(1, 1), "ci_high"]
    post = ref.rates(given="bronze").set_index(["gold", "bronze"])
    assert post.loc[(1, 1), "rate"] == pytest.approx(43 / 60)               # P(gold R | bronze R)
    assert post.loc[(1, 1), "n"] == 60
    assert ref.sd_D == pytest.approx(np.hypot(ref.tpr_se, ref.tnr_se))
    draws = ref.sample_matrices(5000, seed=1)
    assert draws.shape == (5000, 2, 2)
    np.testing.assert_allclose(draws.sum(axis=2), 1.0)
    assert draws[:, 1, 1].std() == pytest.approx(ref.tpr_se, rel=0.05)
    np.testing.assert_array_equal(draws, ref.sample_matrices(5000, seed=1))
    diag = ref.diagnostics()
    assert diag["bronze_share"][1] == pytest.approx(60 / 143) and not diag["near_random"]


def test_calibration_from_qrels_and_named_labels():
    bronze = pd.DataFrame({"qid": ["1"] * 6, "docno": list("abcdef"), "label": [2, 1, 0, 2, 0, 1]})
    gold = pd.DataFrame({"qid": ["1"] * 7, "docno": list("abcdefg"), "label": [2, 1, 0, 1, 0, 1, 2]})
    with pytest.warns(CoercionWarning, match="1 gold judgment"):
        cal = JudgeCalibration.from_qrels(bronze, gold)
    assert cal.counts.to_numpy().tolist() == [[2, 0, 0], [0, 2, 1], [0, 0, 1]]
    named = JudgeCalibration.from_pairs(["R", "N", "N", "R"], ["R", "N", "R", "R"], labels=["N", "R"])
    assert named.labels == ["N", "R"] and named.tpr == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="pass gains"):
        corrected_dcg(np.array([["R", "N"], ["N", "N"]]), calibration=named)
    est = corrected_dcg(np.array([["R", "N"], ["N", "R"]], dtype=object), calibration=named, gains={"N": 0, "R": 1})
    assert est.naive_value == pytest.approx((1 + 1 / np.log2(3)) / 2)


def test_calibration_validation():
    with pytest.raises(InputError, match="gold label 2 has no calibration pairs"):
        JudgeCalibration.from_pairs([0, 1, 1], [0, 1, 1], labels=[0, 1, 2])
    with pytest.raises(InputError, match="never used label 1"):
        JudgeCalibration([[10, 0], [5, 0]])
    with pytest.raises(InputError, match="coin-toss"):
        JudgeCalibration.binary(100, 50, 100, 50)                            # D = 0 (notes T3)
    with pytest.raises(InputError, match=r"column 'gold', row 2: label 5"):
        JudgeCalibration.from_pairs([0, 1, 1], [0, 1, 5], labels=[0, 1])
    with pytest.raises(InputError, match=r"column 'bronze', row 1: missing"):
        JudgeCalibration.from_pairs(pd.DataFrame({"bronze": [0, None], "gold": [0, 1]}))
    with pytest.raises(InputError, match="expected columns 'bronze' and 'gold'"):
        JudgeCalibration.from_pairs(pd.DataFrame({"b": [0], "g": [0]}))
    with pytest.raises(InputError, match="row 0, column 1"):
        JudgeCalibration([[3, -1], [1, 3]])
    with pytest.raises(InputError, match="agree_relevant"):
        JudgeCalibration.binary(10, 11, 10, 5)
    cal = JudgeCalibration.binary(**EBAY)
    with pytest.raises(InputError, match="k must be an integer >= 1"):
        corrected_precision(np.ones((3, 2)), calibration=cal, k=0)
    with pytest.raises(InputError, match="se must be one of"):
        corrected_precision(np.ones((3, 2)), calibration=cal, k=2, se="jackknife")
    with pytest.raises(InputError, match=r"run frame is missing column\(s\) \['docno'\]"):
        corrected_precision(pd.DataFrame({"qid": ["1"], "score": [1.0]}), pd.DataFrame(), calibration=cal, k=2)
    with pytest.raises(InputError, match="qrels were given"):
        corrected_precision(np.ones((3, 2)), pd.DataFrame(), calibration=cal, k=2)
    with pytest.raises(InputError, match="calibration must be a JudgeCalibration"):
        corrected_precision(np.ones((3, 2)), calibration="x", k=2)
    with pytest.raises(InputError, match=r"values row 1 \(qid '1'\)"):
        correct_per_query([0.5, 1.5], cal)
    with pytest.raises(InputError, match="shared"):
        compare(correct_summary(0.5, 0.3, 10, cal),
                correct_summary(0.5, 0.3, 10, JudgeCalibration.binary(50, 40, 50, 40)), calibration="shared")


def test_compare_bootstrap_agrees_with_delta_when_calibration_is_large():
    rng = np.random.default_rng(11)
    cal = JudgeCalibration.binary(2000, 1800, 2000, 1700)
    a = corrected_precision((rng.random((200, 5)) < 0.6).astype(int), calibration=cal, k=5)
    b = corrected_precision((rng.random((200, 5)) < 0.5).astype(int), calibration=cal, k=5)
    for mode in ("shared", "independent"):
        delta = compare(a, b, calibration=mode)
        boot = compare(a, b, calibration=mode, se="bootstrap", n_replicates=3000, seed=4)
        assert boot.paired and boot.se_method == "bootstrap"
        assert boot.se == pytest.approx(delta.se, rel=0.1)
        assert boot == compare(a, b, calibration=mode, se="bootstrap", n_replicates=3000, seed=4)
    assert compare(a, b, calibration="shared").se < compare(a, b, calibration="independent").se
