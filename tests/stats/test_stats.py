"""Tests for pyterrier_noise.stats (tests, multiple, tukey, intervals, perquery): vectorised tests against scipy/statsmodels one at a time,
brute-force resampling checks, and the thesis procedures (Yang 2019, Table 3.4, Fig. 3.8)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hst
from hypothesis.extra.numpy import arrays
from statsmodels.stats.multitest import multipletests

from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.stats import _checks, tukey   # _checks: its block size is patched to test the blocked path
from pyterrier_noise.stats import tests as stats_tests
from pyterrier_noise.stats import (ALTERNATIVES, all_pairs, correct_pvalues, degradation_test,
                                   mean_ci, paired_test, pairwise_significance, pvalue_quadrants,
                                   significant, tukey_hsd)


@pytest.fixture
def scores():
    """Batch of score pairs (4 x 3 batch, 15 topics) with ties and zero differences."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 6, size=(4, 3, 15)) / 5
    b = rng.integers(0, 6, size=(4, 3, 15)) / 5
    return a, b


def _loop(fn, a, b):
    out = np.empty(a.shape[:-1])
    for idx in np.ndindex(*a.shape[:-1]):
        out[idx] = fn(a[idx], b[idx])
    return out


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_t_matches_ttest_rel(scores, alternative):
    a, b = scores
    expected = _loop(lambda x, y: st.ttest_rel(x, y, alternative=alternative).pvalue, a, b)
    np.testing.assert_allclose(paired_test(a, b, "t", alternative), expected, rtol=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_wilcoxon_matches_scipy(scores, alternative):
    a, b = scores
    expected = _loop(lambda x, y: st.wilcoxon(x, y, alternative=alternative).pvalue, a, b)
    np.testing.assert_allclose(paired_test(a, b, "wilcoxon", alternative), expected, rtol=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sign_matches_binomtest(scores, alternative):
    a, b = scores

    def one(x, y):
        return st.binomtest(int((x > y).sum()), int((x != y).sum()), 0.5,
                            alternative=alternative).pvalue

    np.testing.assert_allclose(paired_test(a, b, "sign", alternative), _loop(one, a, b),
                               rtol=1e-10)


def test_sign_with_no_differences_is_one():
    x = np.arange(5.0)
    assert paired_test(x, x, "sign") == 1.0


def test_topic_axis_can_be_anywhere(scores):
    a, b = scores
    np.testing.assert_allclose(paired_test(np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0), axis=0),
                               paired_test(a, b))


def test_broadcasting_one_baseline_against_many(scores):
    a, _ = scores
    base = a[0, 0]
    p = paired_test(a, base)
    assert p.shape == (4, 3)
    assert np.isnan(p[0, 0])                       # identical to itself: t undefined
    np.testing.assert_allclose(p[1, 2], st.ttest_rel(a[1, 2], base).pvalue)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_randomisation_exact_matches_permutation_test(alternative):
    rng = np.random.default_rng(3)
    a, b = rng.random((5, 9)), rng.random((5, 9))     # 2**9 = 512 <= n_resamples: exact
    p = paired_test(a, b, "randomisation", alternative, n_resamples=1000)
    for k in range(5):
        ref = st.permutation_test((a[k], b[k]), lambda x, y, axis: np.mean(x - y, axis=axis),
                                  permutation_type="samples", vectorized=True,
                                  n_resamples=np.inf, alternative=alternative).pvalue
        assert p[k] == pytest.approx(ref, abs=1e-12)


def test_randomisation_monte_carlo_equals_brute_force_loop():
    rng = np.random.default_rng(11)
    a, b = rng.random((3, 20)), rng.random((3, 20))
    n_res, seed = 500, 42
    p = paired_test(a, b, "randomisation", n_resamples=n_res, seed=seed)
    signs = np.random.default_rng(seed).integers(0, 2, size=(n_res, 20), dtype=np.int8) * 2 - 1
    for k in range(3):
        d = a[k] - b[k]
        obs = abs(d.mean())
        hits = sum(abs((s * d).mean()) >= obs - 1e-12 for s in signs)
        assert p[k] == pytest.approx((hits + 1) / (n_res + 1))


def test_randomisation_monte_carlo_close_to_exact():
    rng = np.random.default_rng(5)
    a, b = rng.random(14), rng.random(14) + 0.1
    exact = paired_test(a, b, "randomisation", n_resamples=2 ** 14)
    mc = paired_test(a, b, "randomisation", n_resamples=4000, seed=1)
    assert abs(mc - exact) < 4 * np.sqrt(exact * (1 - exact) / 4000) + 1e-3


def test_bootstrap_equals_brute_force_loop():
    rng = np.random.default_rng(2)
    a, b = rng.random((3, 12)), rng.random((3, 12))
    n_res, seed = 400, 9
    idx = np.random.default_rng(seed).integers(0, 12, size=(n_res, 12))
    for alternative in ALTERNATIVES:
        p = paired_test(a, b, "bootstrap", alternative, n_resamples=n_res, seed=seed)
        for k in range(3):
            d = a[k] - b[k]
            t_obs = d.mean() / (d.std(ddof=1) / np.sqrt(12))
            w = d - d.mean()
            t_star = np.array([w[r].mean() / (w[r].std(ddof=1) / np.sqrt(12)) for r in idx])
            hits = {"two-sided": np.abs(t_star) >= abs(t_obs), "greater": t_star >= t_obs,
                    "less": t_star <= t_obs}[alternative].sum()
            assert p[k] == pytest.approx((hits + 1) / (n_res + 1))


@pytest.mark.parametrize("test", ["randomisation", "bootstrap"])
def test_resampling_shared_across_batch_and_seeded(test):
    rng = np.random.default_rng(4)
    a, b = rng.random((6, 25)), rng.random((6, 25))
    batch = paired_test(a, b, test, n_resamples=300, seed=5)
    alone = paired_test(a[3], b[3], test, n_resamples=300, seed=5)
    assert batch[3] == alone
    np.testing.assert_array_equal(batch, paired_test(a, b, test, n_resamples=300, seed=5))
    assert not np.array_equal(batch, paired_test(a, b, test, n_resamples=300, seed=6))


def test_clear_difference_gets_smallest_resampling_pvalue():
    x = np.linspace(0.1, 0.5, 30)
    assert paired_test(x + 0.3, x, "randomisation", n_resamples=999) == pytest.approx(1 / 1000)
    assert paired_test(x + np.linspace(0.2, 0.4, 30), x, "bootstrap",
                       n_resamples=999) == pytest.approx(1 / 1000)


def test_all_pairs_matches_loop_over_pairs_and_replicates():
    rng = np.random.default_rng(8)
    x = rng.random((5, 12, 3))
    i, j, p = all_pairs(x)
    assert list(zip(i, j)) == list(zip(*np.triu_indices(5, 1)))
    assert p.shape == (10, 3)
    for k in range(10):
        for r in range(3):
            assert p[k, r] == pytest.approx(st.ttest_rel(x[i[k], :, r], x[j[k], :, r]).pvalue)
    corrected = all_pairs(x, correction="holm").pvalue
    for r in range(3):
        np.testing.assert_allclose(corrected[:, r], multipletests(p[:, r], method="holm")[1])


def test_all_pairs_resampling_matches_paired_test():
    rng = np.random.default_rng(12)
    x = rng.random((4, 18))
    i, j, p = all_pairs(x, "bootstrap", alternative="greater", n_resamples=200, seed=3)
    for k in range(len(i)):
        assert p[k] == paired_test(x[i[k]], x[j[k]], "bootstrap", "greater", n_resamples=200,
                                   seed=3)


@pytest.mark.parametrize("method", ["bonferroni", "holm", "fdr_bh"])
def test_corrections_along_axis_match_statsmodels(method):
    rng = np.random.default_rng(6)
    p = rng.random((12, 4)) ** 3
    p[[2, 7], 1] = np.nan
    p[5, 3] = p[6, 3]                                # a tie
    adj = correct_pvalues(p, method, axis=0)
    for r in range(4):
        ok = ~np.isnan(p[:, r])
        np.testing.assert_allclose(adj[ok, r], multipletests(p[ok, r], method=method)[1])
        assert np.isnan(adj[~ok, r]).all()
    np.testing.assert_allclose(correct_pvalues(p.T, method, axis=1), adj.T)
    np.testing.assert_allclose(correct_pvalues(p[:, 0], method),
                               multipletests(p[:, 0], method=method)[1])


def test_correct_pvalues_rejects_bad_values():
    with pytest.raises(InputError, match="index"):
        correct_pvalues([0.1, 1.5])
    with pytest.raises(InputError, match="method"):
        correct_pvalues([0.1, 0.2], method="sidak")


def test_tukey_oneway_matches_scipy():
    rng = np.random.default_rng(1)
    x = rng.random((5, 8)) + np.arange(5)[:, None] * 0.15
    i, j, p = tukey_hsd(x, method="oneway")
    ref = st.tukey_hsd(*x).pvalue
    np.testing.assert_allclose(p, ref[i, j], rtol=1e-6, atol=1e-9)


def test_tukey_blocked_uses_two_way_anova_residual():
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm
    rng = np.random.default_rng(2)
    x = rng.random((4, 10)) + rng.random(10)[None, :] + np.arange(4)[:, None] * 0.1
    frame = pd.DataFrame({"value": x.ravel(), "system": np.repeat(np.arange(4), 10),
                          "topic": np.tile(np.arange(10), 4)})
    table = anova_lm(smf.ols("value ~ C(system) + C(topic)", frame).fit())
    mse, df = table.loc["Residual", "mean_sq"], table.loc["Residual", "df"]
    i, j, p = tukey_hsd(x)
    means = x.mean(axis=1)
    q = np.abs(means[i] - means[j]) / np.sqrt(mse / 10)
    np.testing.assert_allclose(p, st.studentized_range.sf(q, 4, df), rtol=1e-6)
    # topic difficulty is a block effect: adding per-topic constants changes nothing
    shifted = x + rng.normal(size=10)[None, :] * 5
    np.testing.assert_allclose(tukey_hsd(shifted).pvalue, p, rtol=1e-6)
    # ... whereas the one-way test loses power to it
    assert tukey_hsd(shifted, method="oneway").pvalue.min() > p.min()


def test_tukey_replicates_and_interpolated_sf():
    rng = np.random.default_rng(3)
    x = rng.random((4, 9, 2))
    reps = tukey_hsd(x).pvalue
    for r in range(2):
        np.testing.assert_allclose(reps[:, r], tukey_hsd(x[:, :, r]).pvalue)
    # more than 128 q values: sf interpolated from an exact grid (large df keeps scipy fast)
    q = np.linspace(0.05, 7.0, 200)
    approx = tukey._studentized_range_sf(q, 6, 50_000)
    exact = st.studentized_range.sf(q[::17], 6, 50_000)
    np.testing.assert_allclose(approx[::17], exact, atol=5e-5)


def test_randomised_tukey_equals_brute_force_loop():
    rng = np.random.default_rng(4)
    x = rng.random((4, 6)) + np.arange(4)[:, None] * 0.2
    n_res, seed = 300, 1
    i, j, p = tukey_hsd(x, method="randomised", n_resamples=n_res, seed=seed)
    draws = np.random.default_rng(seed).random((n_res, 4, 6))
    spreads = []
    for u in draws:
        perm = np.argsort(u, axis=0)
        means = np.array([[x[perm[s, t], t] for t in range(6)] for s in range(4)]).mean(axis=1)
        spreads.append(means.max() - means.min())
    spreads = np.array(spreads)
    diff = np.abs(x.mean(axis=1)[i] - x.mean(axis=1)[j])
    expected = [((spreads >= dd - 1e-12).sum() + 1) / (n_res + 1) for dd in diff]
    np.testing.assert_allclose(p, expected)


def test_mean_ci_t_and_bootstrap():
    rng = np.random.default_rng(5)
    x = rng.random((3, 40))
    low, high = mean_ci(x, confidence=0.9)
    for k in range(3):
        ref = st.t.interval(0.9, 39, loc=x[k].mean(), scale=st.sem(x[k]))
        assert (low[k], high[k]) == pytest.approx(ref)
    blow, bhigh = mean_ci(x, method="bootstrap", n_resamples=2000, seed=3)
    single = mean_ci(x[1], method="bootstrap", n_resamples=2000, seed=3)
    assert (blow[1], bhigh[1]) == pytest.approx(tuple(single))
    assert np.all((blow < x.mean(axis=1)) & (x.mean(axis=1) < bhigh))
    # for 40 roughly uniform values the percentile interval is close to the t interval
    np.testing.assert_allclose(bhigh - blow, high - low, rtol=0.2)


def _perquery(x, names, measure="AP"):
    qids = [f"q{t}" for t in range(x.shape[1])]
    return pd.DataFrame({"name": np.repeat(names, x.shape[1]), "qid": qids * len(names),
                         "measure": measure, "value": x.ravel()})


def test_pairwise_significance_from_perquery_frame():
    import ir_measures
    rng = np.random.default_rng(9)
    x = rng.random((3, 10)) + np.array([[0.0], [0.25], [0.05]])
    frame = pd.concat([_perquery(x, ["A", "B", "C"]),
                       _perquery(x[::-1], ["A", "B", "C"], measure="P@10")])
    frame = frame.sample(frac=1.0, random_state=0)          # row order must not matter
    out = pairwise_significance(frame, ir_measures.AP, systems=["A", "B", "C"])
    assert list(out.columns) == ["measure", "sys_a", "sys_b", "n_topics", "mean_a", "mean_b",
                                 "mean_diff", "effect_size", "p_value", "p_corrected",
                                 "significant"]
    assert list(zip(out.sys_a, out.sys_b)) == [("A", "B"), ("A", "C"), ("B", "C")]
    raw = [st.ttest_rel(x[a], x[b]).pvalue for a, b in [(0, 1), (0, 2), (1, 2)]]
    np.testing.assert_allclose(out.p_value, raw)
    np.testing.assert_allclose(out.p_corrected, multipletests(raw, method="holm")[1])
    d = x[0] - x[1]
    assert out.effect_size[0] == pytest.approx(d.mean() / d.std(ddof=1))
    assert (out.n_topics == 10).all()
    both = pairwise_significance(frame, correction=None)
    assert set(both.measure) == {"AP", "P@10"} and len(both) == 6
    assert (both.p_value == both.p_corrected).all()


def test_pairwise_significance_missing_topics():
    x = np.random.default_rng(1).random((3, 6))
    frame = _perquery(x, ["A", "B", "C"]).drop(index=4)
    with pytest.raises(InputError, match="'A'.*'q4'"):
        pairwise_significance(frame)
    with pytest.warns(CoercionWarning, match=r"1 topic.*\(2 values changed\)"):
        out = pairwise_significance(frame, missing="drop")
    assert (out.n_topics == 5).all()
    with pytest.raises(InputError, match="missing column"):
        pairwise_significance(frame.drop(columns="qid"))
    with pytest.raises(InputError, match="duplicate"):
        pairwise_significance(pd.concat([frame, frame.iloc[[0]]]))
    with pytest.raises(InputError, match="not found"):
        pairwise_significance(frame, "nDCG")


def test_degradation_test_is_one_tailed_t_on_scaled_original():
    rng = np.random.default_rng(10)
    orig = rng.random((4, 50))
    banded = orig - rng.random((4, 50)) * 0.02
    p = degradation_test(orig, banded, delta=0.01)
    for k in range(4):
        ref = st.ttest_rel(banded[k], 0.99 * orig[k], alternative="greater").pvalue
        assert p[k] == pytest.approx(ref)
    # a larger tolerated loss can only make passing easier
    assert np.all(degradation_test(orig, banded, delta=0.03) <= p)
    with pytest.raises(InputError, match="delta"):
        degradation_test(orig, banded, delta=1.0)


def test_pvalue_quadrants_counts():
    p_orig = np.array([0.01, 0.01, 0.20, 0.20, 0.04, 0.05])
    p_new = np.array([0.02, 0.30, 0.01, 0.50, 0.03, 0.05])
    grid = pvalue_quadrants(p_orig, p_new)
    assert grid["count"].to_dict() == {"both": 2, "neither": 2, "gained": 1, "lost": 1}
    assert grid["fraction"].sum() == pytest.approx(1.0)
    inclusive = pvalue_quadrants(p_orig, p_new, inclusive=True)
    assert inclusive.loc["both", "count"] == 3         # p == alpha counts with inclusive=True
    with_dir = pvalue_quadrants(p_orig, p_new, diff_orig=[1, 1, 1, 1, 1, 1],
                                diff_new=[-1, 1, 1, 1, 1, 1])
    assert with_dir["count"].to_dict() == {"both": 1, "neither": 2, "gained": 1, "lost": 1,
                                           "reversed": 1}


def test_significant_comparator_and_nan():
    np.testing.assert_array_equal(significant([0.04, 0.05, np.nan]), [True, False, False])
    np.testing.assert_array_equal(significant([0.04, 0.05], inclusive=True), [True, True])


def test_input_validation_messages():
    with pytest.raises(InputError, match=r"non-finite.*index \(1,\)"):
        paired_test([0.1, np.nan, 0.3], [0.2, 0.2, 0.2])
    with pytest.raises(InputError, match="test must be one of"):
        paired_test([1, 2], [2, 3], test="z")
    with pytest.raises(InputError, match="broadcast"):
        paired_test(np.ones(3), np.ones(4))
    with pytest.raises(InputError, match="at least 2 topics"):
        paired_test([1.0], [2.0])
    with pytest.raises(InputError, match="n_resamples"):
        paired_test([1, 2], [2, 3], test="bootstrap", n_resamples=0)
    with pytest.raises(InputError, match="at least 2 systems"):
        all_pairs(np.ones((1, 5)))


@settings(max_examples=40, deadline=None)
@given(arrays(float, (2, 8), elements=hst.floats(0, 1)),
       hst.sampled_from(["t", "wilcoxon", "sign", "randomisation", "bootstrap"]))
def test_pvalue_properties(x, test):
    a, b = x
    two = paired_test(a, b, test, n_resamples=200)
    swapped = paired_test(b, a, test, n_resamples=200)
    greater = paired_test(a, b, test, "greater", n_resamples=200)
    less_swapped = paired_test(b, a, test, "less", n_resamples=200)
    if np.isnan(two):
        assert test in ("t", "bootstrap")
        return
    assert 0.0 <= two <= 1.0
    assert two == pytest.approx(swapped)
    assert greater == pytest.approx(less_swapped)


def test_results_do_not_depend_on_block_size(monkeypatch):
    rng = np.random.default_rng(13)
    x = rng.random((5, 16, 3))
    calls = {
        "t": lambda: all_pairs(x).pvalue,
        "randomisation": lambda: all_pairs(x, "randomisation", n_resamples=300).pvalue,
        "bootstrap": lambda: all_pairs(x, "bootstrap", "less", n_resamples=300).pvalue,
        "tukey": lambda: tukey_hsd(x, "randomised", n_resamples=300).pvalue,
    }
    default = {k: f() for k, f in calls.items()}
    monkeypatch.setattr(_checks, "_BLOCK_ELEMENTS", 50)    # forces many small blocks
    monkeypatch.setattr(stats_tests, "_PAIR_BLOCK_ELEMENTS", 2)  # and many blocks of the Gram t-test
    for k, f in calls.items():
        np.testing.assert_array_equal(f(), default[k], err_msg=k)


def test_all_pairs_t_fast_path_equals_scipy_with_near_identical_and_identical_pairs():
    """The Gram-matrix two-sided t-test against scipy.stats.ttest_rel, pair by pair, on data where
    some pairs are identical (NaN, as scipy) and some differ by 1e-9 (where the Gram subtraction
    would cancel and the differences are used instead)."""
    rng = np.random.default_rng(21)
    x = rng.normal(0.4, 0.2, size=(7, 25, 4))
    x[3] = x[1]                                           # identical systems
    x[4] = x[0] + 1e-9 * rng.normal(size=(25, 4))         # near-identical systems
    x[5] = x[2] + 1e-3                                    # a constant shift: zero variance of the differences
    x[6] = x[2] * (1 + 1e-12)
    i, j, p = all_pairs(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # scipy's own cancellation warning
        want = np.array([[st.ttest_rel(x[a, :, r], x[b, :, r]).pvalue for r in range(4)] for a, b in zip(i, j)])
    np.testing.assert_array_equal(np.isnan(p), np.isnan(want))
    assert np.isnan(p[list(zip(i, j)).index((1, 3))]).all()
    np.testing.assert_allclose(p, want, rtol=1e-9, atol=0, equal_nan=True)
    # one replicate axis or none: same numbers; other alternatives stay on the exact path
    np.testing.assert_array_equal(all_pairs(x[..., 2]).pvalue, p[:, 2])
    np.testing.assert_array_equal(all_pairs(x[..., None]).pvalue[..., 0], p)
    less = all_pairs(x, alternative="less").pvalue
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_less = np.array([[st.ttest_rel(x[a, :, r], x[b, :, r], alternative="less").pvalue for r in range(4)]
                              for a, b in zip(i, j)])
    np.testing.assert_allclose(less, want_less, rtol=1e-12, equal_nan=True)


def test_wilcoxon_small_samples_with_ties_use_the_normal_approximation():
    """Up to 13 topics with ties or zeros, scipy's method="auto" runs a permutation test (slow);
    paired_test takes scipy's normal approximation (tie and continuity corrections) instead, and
    keeps scipy's own choice everywhere else: the exact distribution without ties or zeros, and
    "auto" from 14 topics on (reference: scipy.stats.wilcoxon with the method named)."""
    rng = np.random.default_rng(11)
    tied = rng.integers(0, 5, size=(6, 10)) / 4 - rng.integers(0, 5, size=(6, 10)) / 4
    tied[0] = 0.0   # all zero: 1.0, as the permutation test gives
    approx = st.wilcoxon(tied[1:], alternative="greater", method="asymptotic", axis=-1).pvalue
    with pytest.warns(RuntimeWarning, match="invalid value encountered in divide"):   # scipy: all differences 0
        perm = st.wilcoxon(tied[:1] + 0.0, alternative="greater", axis=-1).pvalue
    p = paired_test(tied, 0.0, "wilcoxon", "greater")
    np.testing.assert_allclose(p[1:], approx, rtol=1e-12)
    assert p[0] == 1.0 == pytest.approx(float(perm[0]) if np.ndim(perm) else float(perm))
    distinct = rng.permutation(np.arange(1, 11))[None, :] * rng.choice([-1.0, 1.0], size=(5, 10))
    np.testing.assert_allclose(paired_test(distinct, 0.0, "wilcoxon"),
                               st.wilcoxon(distinct, method="exact", axis=-1).pvalue, rtol=1e-12)
    many = rng.integers(0, 5, size=(4, 20)) / 4 - 0.5
    np.testing.assert_allclose(paired_test(many, 0.0, "wilcoxon", "less"),
                               st.wilcoxon(many, alternative="less", axis=-1).pvalue, rtol=1e-12)


def test_all_pairs_t_codes_equal_the_p_value_codes_at_and_near_the_critical_values():
    """all_pairs_t_codes locates each two-sided t-test p-value among cuts from critical |t| values;
    it must give p_codes(all_pairs(x).pvalue) exactly (brute force over every pair and version).

    Pairs are built with |t| at each cut's critical value (scipy.special.stdtrit) and a few ulps
    either side, where the comparison of |t| with the critical value cannot decide: there the
    p-value itself is computed and compared with the cut (p == cut is its own, odd, code).  Also
    identical systems (NaN: -1), a constant shift (|t| infinite, p = 0: equal to the cut 0), equal
    means (t = 0, p = 1: equal to the cut 1), nearly identical systems (the Gram form falls back to
    the differences) and random pairs."""
    from scipy import special
    from pyterrier_noise.stats.tests import _T_MARGIN, all_pairs_t_codes, p_codes   # the margin under test

    rng = np.random.default_rng(5)
    T, K = 30, 6
    cuts = np.array([0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0])
    tc = -special.stdtrit(T - 1, cuts[1:-1] / 2)
    z = rng.normal(size=(T, K))
    z = (z - z.mean(axis=0)) / z.std(axis=0, ddof=1)          # mean 0, sd 1 in every version
    base = rng.normal(0.4, 0.1, size=(T, K))
    systems = [base]
    for t0 in tc:
        for ulps in (-3, -1, 0, 1, 3):                        # |t| a few ulps from the critical value
            shift = np.nextafter(t0, np.inf if ulps > 0 else -np.inf) if ulps else t0
            for _ in range(abs(ulps) - 1):
                shift = np.nextafter(shift, np.inf if ulps > 0 else -np.inf)
            systems.append(base + 0.05 * z + 0.05 * shift / np.sqrt(T))
    systems += [base.copy(), base + 1e-3, base + 0.05 * z, base + 1e-9 * rng.normal(size=(T, K))]
    systems += [rng.normal(0.4, 0.15, size=(T, K)) for _ in range(6)]
    x = np.stack(systems)
    i, j, p = all_pairs(x)
    codes = all_pairs_t_codes(x, cuts)
    np.testing.assert_array_equal(codes.i, i)
    np.testing.assert_array_equal(codes.j, j)
    np.testing.assert_array_equal(codes.code, p_codes(p, cuts))
    # the boundary was really exercised: pairs (base, shifted) within the margin of a critical value
    first = i == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        d = x[j[first]] - x[0][None]
        t = np.abs(d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(T)))
    near = (np.abs(t[..., None] - tc) <= _T_MARGIN * tc).any(axis=-1)
    assert near.sum() >= 5 * len(tc)
    # every kind of code appears: undefined, equal to 0 and to 1, and strictly between cuts
    found = set(np.unique(codes.code).tolist())
    assert {-1, 1, 2 * len(cuts) - 1} <= found and {2, 4, 6, 8, 10, 12, 14} <= found
    # one version at a time gives the same codes
    np.testing.assert_array_equal(all_pairs_t_codes(x[..., 2], cuts).code, codes.code[:, 2])
    with pytest.raises(InputError, match="strictly increasing"):
        all_pairs_t_codes(x, [0.05, 0.01])


def test_p_codes_by_hand():
    """The code of a p-value among cuts [0.01, 0.05]: 0 below, 1 equal to 0.01, 2 between,
    3 equal to 0.05, 4 above, -1 for NaN (definition)."""
    from pyterrier_noise.stats.tests import p_codes
    got = p_codes(np.array([0.001, 0.01, 0.03, 0.05, 0.5, np.nan]), np.array([0.01, 0.05]))
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, -1])
