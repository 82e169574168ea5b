"""Tests for pyterrier_noise.stats.reliability: Krippendorff's alpha and preference units on the worked
examples of Yang (2019) Ch. 2.4.3 (corrected values from the seed notes), and the discrimination analyses
of Ch. 4."""
from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from pyterrier_noise import InputError
from pyterrier_noise.stats import (consistent_discrimination, discrimination_agreement, discrimination_ratio,
                                   kendall_tau, krippendorff_alpha, pairwise_preference_units)


TABLE_2_10 = np.array([list("RNHR"), list("RNRH"), list("HNHR")]).T     # units x raters
TABLE_2_12 = np.array([[0.5, 0.1, 0.7, 0.5], [0.4, 0.2, 0.5, 0.7], [0.9, 0.5, 0.9, 0.7]]).T


def test_krippendorff_thesis_examples():
    assert krippendorff_alpha(TABLE_2_10) == pytest.approx(0.297872, abs=1e-6)
    assert krippendorff_alpha(TABLE_2_10, "ordinal", categories=["N", "R", "H"]) == \
        pytest.approx(0.558036, abs=1e-6)
    numeric = np.vectorize({"N": 0, "R": 1, "H": 2}.get)(TABLE_2_10)
    assert krippendorff_alpha(numeric, "interval") == pytest.approx(0.602410, abs=1e-6)
    assert krippendorff_alpha(numeric, "ordinal") == pytest.approx(0.558036, abs=1e-6)
    assert krippendorff_alpha(TABLE_2_12) == pytest.approx(-0.080357, abs=1e-6)
    assert krippendorff_alpha(pd.DataFrame(TABLE_2_12), "interval") == \
        pytest.approx(0.3159, abs=5e-5)


def test_pairwise_preference_units_table_2_12():
    units, tie_rate = pairwise_preference_units(TABLE_2_12)
    expected = ["LLL", "RRT", "TRL", "RRR", "RRR", "LRL"]
    assert ["".join(row) for row in units.to_numpy()] == expected
    assert units.index.tolist() == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert tie_rate == pytest.approx(2 / 18)
    assert krippendorff_alpha(units) == pytest.approx(0.353261, abs=1e-6)
    as_missing = pairwise_preference_units(TABLE_2_12, tie="missing")
    assert as_missing.units.isna().sum().sum() == 2
    assert krippendorff_alpha(as_missing.units) == pytest.approx(0.5)
    with_gap = TABLE_2_12.copy()
    with_gap[1, 0] = np.nan
    gap_units = pairwise_preference_units(with_gap).units
    assert gap_units.iloc[:, 0].isna().sum() == 3          # every pair with item 1, rater 0


def _alpha_loop(data, level):
    """Krippendorff's alpha straight from the definitions, one unit and one pair at a time."""
    o = defaultdict(float)
    for row in data:
        vals = [v for v in row if not np.isnan(v)]
        m = len(vals)
        if m < 2:
            continue
        for a in range(m):
            for b in range(m):
                if a != b:
                    o[(vals[a], vals[b])] += 1.0 / (m - 1)
    cats = sorted({c for c, _ in o})
    n_c = {c: sum(o[(c, k)] for k in cats) for c in cats}
    n = sum(n_c.values())

    def delta(c, k):
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return (c - k) ** 2
        if level == "ratio":
            return ((c - k) / (c + k)) ** 2 if c + k else 0.0
        lo, hi = min(c, k), max(c, k)
        return (sum(n_c[g] for g in cats if lo <= g <= hi) - (n_c[c] + n_c[k]) / 2) ** 2

    d_o = sum(o[(c, k)] * delta(c, k) for c in cats for k in cats) / n
    d_e = sum(n_c[c] * n_c[k] * delta(c, k) for c in cats for k in cats) / (n * (n - 1))
    return 1 - d_o / d_e


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_matches_direct_loop(level):
    rng = np.random.default_rng(5)
    for _ in range(10):
        data = rng.integers(0, 5, size=(9, 4)).astype(float)
        data[rng.random(data.shape) < 0.3] = np.nan
        assert krippendorff_alpha(data, level) == pytest.approx(_alpha_loop(data, level))


def test_krippendorff_validation():
    with pytest.raises(InputError, match="two or more raters"):
        krippendorff_alpha([[1.0], [2.0], [1.0]])
    with pytest.raises(InputError, match="numeric"):
        krippendorff_alpha(TABLE_2_10, "interval")
    with pytest.raises(InputError, match="categories"):
        krippendorff_alpha(TABLE_2_10, "ordinal")
    with pytest.raises(InputError, match="row 0, column 0"):
        krippendorff_alpha(TABLE_2_10, categories=["N", "H"])
    with pytest.raises(InputError, match="non-negative"):
        krippendorff_alpha([[-1.0, 1.0], [2.0, 2.0]], "ratio")
    assert np.isnan(krippendorff_alpha([[1, 1], [1, 1]]))


def _systems(seed=0, n_sys=6, n_topics=20, versions=None):
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.2, 0.6, n_sys)[:, None]
    base = quality + rng.normal(0, 0.15, size=(n_sys, n_topics))
    if versions is None:
        return base
    return base[..., None] + rng.normal(0, 0.05, size=(n_sys, n_topics, versions))


def test_discrimination_ratio_counts_significant_pairs():
    x = _systems()
    expected = np.mean([st.ttest_rel(x[a], x[b]).pvalue < 0.05
                        for a, b in itertools.combinations(range(6), 2)])
    assert discrimination_ratio(x) == pytest.approx(expected)
    assert 0 < expected < 1
    reps = _systems(versions=3)
    per_rep = discrimination_ratio(reps)
    assert per_rep.shape == (3,)
    assert per_rep[1] == pytest.approx(discrimination_ratio(reps[:, :, 1]))


def test_consistent_discrimination_matches_loop():
    x = _systems(seed=1, versions=5)
    frame = consistent_discrimination(x, versions=[5, 10, 15, 20, 25], names=list("ABCDEF"))
    assert list(frame.columns[:7]) == ["sys_a", "sys_b", "p[5]", "p[10]", "p[15]", "p[20]",
                                       "p[25]"]
    for row, (a, b) in zip(frame.itertuples(index=False), itertools.combinations(range(6), 2)):
        p = np.array([st.ttest_rel(x[a, :, v], x[b, :, v]).pvalue for v in range(5)])
        np.testing.assert_allclose(row[2:7], p)
        assert row.tau == pytest.approx(st.kendalltau(np.arange(5), p).statistic)
        sig = (p < 0.05).sum()
        assert row.n_significant == sig
        assert row.consistency == ("all_significant" if sig == 5 else
                                   "all_not_significant" if sig == 0 else "straddle")
    assert set(frame.consistency) >= {"all_significant", "all_not_significant"}


def test_thesis_p_value_trends():
    # Yang 2019 §4.7 examples: CLARIT98CLUS vs INQ501 (AP), bbn1 vs mds98t
    depths = [5, 10, 15, 20, 25]
    assert kendall_tau(depths, [0.0836, 0.0128, 0.0076, 0.0070, 0.0067]) == pytest.approx(-1.0)
    assert kendall_tau(depths, [0.0044, 0.0080, 0.0071, 0.0083, 0.0095]) == pytest.approx(0.8)


def test_discrimination_agreement_outcomes_and_ratios():
    test_scores = _systems(seed=2, versions=4)
    reference = _systems(seed=2)
    frame = discrimination_agreement(test_scores, reference)
    assert len(frame) == 15 * 4
    for v in range(4):
        sub = frame[frame.version == v]
        counts = sub.outcome.value_counts()
        # Table 4.5 = (TP + FP) / N for the test version
        assert (counts["TP"] + counts["FP"]) / 15 == pytest.approx(
            discrimination_ratio(test_scores[:, :, v]))
    loose = discrimination_agreement(test_scores, reference, check_direction=False)
    for v in range(4):
        counts = loose[loose.version == v].outcome.value_counts()
        assert (counts["TP"] + counts["FN"]) / 15 == pytest.approx(discrimination_ratio(reference))
    # a pair significant under both versions but with opposite winners
    rng = np.random.default_rng(0)
    ref = np.stack([rng.random(30) + 0.5, rng.random(30)])
    flipped = ref[::-1]
    strict = discrimination_agreement(flipped, ref)
    assert strict.outcome.tolist() == ["FP"] and strict.reversed.tolist() == [True]
    assert discrimination_agreement(flipped, ref, check_direction=False).outcome.tolist() == ["TP"]
    with pytest.raises(InputError, match="same systems and topics"):
        discrimination_agreement(test_scores, reference[:, :10])
