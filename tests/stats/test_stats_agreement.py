"""Tests for pyterrier_noise.stats.agreement: the worked examples of Yang (2019) Ch. 2.4.3 (values the
thesis prints, and where it errs, brute-force counts or scipy), brute-force checks, and the
discrimination analyses of Ch. 4."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hst

from pyterrier_noise.stats import (kendall_tau, rbo, spearman, tau_ap)
from pyterrier_noise import InputError

# Table 2.4 / 2.5 mean scores of five systems s1..s5
M0 = [9.0, 8.0, 7.0, 6.0, 5.0]
M1 = [8.5, 9.3, 8.0, 7.5, 7.0]
M2 = [9.7, 8.1, 5.5, 6.0, 6.9]
M3 = [8.3, 7.8, 6.5, 6.5, 5.0]
M4 = [9.1, 8.2, 7.4, 6.5, 6.5]


def test_kendall_and_spearman_printed_in_the_thesis():
    # values printed in Yang (2019), Sec. 2.4.3 (tau eq. 2.20 and the rho shortcut formula)
    assert kendall_tau(M0, M1) == pytest.approx(0.8)
    assert kendall_tau(M1, M4) == pytest.approx(0.738, abs=5e-4)
    assert kendall_tau(M3, M4) == pytest.approx(0.889, abs=5e-4)
    assert spearman(M0, M1) == pytest.approx(0.9)
    assert spearman(M0, M2) == pytest.approx(0.6)
    assert spearman(M3, M4, method="shortcut") == pytest.approx(0.925)
    # the thesis prints 0.8 for tau(M0, M2) but counts one discordant pair where there are three
    # (s3-s4, s3-s5, s4-s5): 0.4 by brute-force counting, as scipy gives
    assert kendall_tau(M0, M2) == pytest.approx(0.4)
    assert kendall_tau(M0, M2) == pytest.approx(st.kendalltau(M0, M2).statistic)


def test_spearman_with_ties_not_printed_in_the_thesis():
    # the thesis prints no Pearson-on-fractional-ranks values for these pairs: scipy is the reference
    assert spearman(M1, M4) == pytest.approx(st.spearmanr(M1, M4).statistic, abs=1e-12)
    assert spearman(M3, M4) == pytest.approx(st.spearmanr(M3, M4).statistic, abs=1e-12)


@pytest.mark.parametrize("other, tau, rho", [
    ([5, 5, 4, 3, 3, 3, 2, 2, 1, 0], 0.775, 0.869),
    ([5, 5, 5, 3, 3, 3, 2, 2, 1, 0], 0.795, 0.877),     # MF1
    ([5, 5, 4, 3, 3, 3, 3, 3, 1, 0], 0.630, 0.685),     # MF2
    ([5, 5, 5, 3, 3, 3, 3, 3, 1, 1], 0.660, 0.694),     # MF3
    ([4, 4, 4, 4, 4, 4, 1, 1, 1, 1], 1.000, 1.000),     # MF4
    ([1, 1, 1, 1, 1, 1, 1, 1, 1, 0], 0.408, 0.408),     # MF5
])
def test_tables_2_7_and_2_8(other, tau, rho):
    binary = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    assert kendall_tau(binary, other) == pytest.approx(tau, abs=5e-4)
    assert spearman(binary, other) == pytest.approx(rho, abs=5e-4)
    # invariant to monotone transformations of the scores (2^score)
    assert kendall_tau(binary, 2.0 ** np.array(other)) == pytest.approx(kendall_tau(binary, other))


def _tau_by_counting(x, y):
    conc = disc = tx = ty = 0
    for a, b in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[a] - x[b]), np.sign(y[a] - y[b])
        if sx == 0 and sy == 0:
            continue
        if sx == 0:
            tx += 1
        elif sy == 0:
            ty += 1
        elif sx == sy:
            conc += 1
        else:
            disc += 1
    n0 = len(x) * (len(x) - 1) / 2
    tau_b = (conc - disc) / math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / n0, tau_b


def test_kendall_brute_force_and_batched_path():
    rng = np.random.default_rng(0)
    xs = rng.integers(0, 4, size=(30, 9)).astype(float)
    ys = rng.integers(0, 4, size=(30, 9)).astype(float)
    batched_a = kendall_tau(xs, ys, variant="a")
    batched_b = kendall_tau(xs, ys)
    for k in range(30):
        tau_a, tau_b = _tau_by_counting(xs[k], ys[k])
        assert kendall_tau(xs[k], ys[k], variant="a") == pytest.approx(tau_a)
        assert kendall_tau(xs[k], ys[k]) == pytest.approx(tau_b)
        assert batched_a[k] == pytest.approx(tau_a)
        assert batched_b[k] == pytest.approx(st.kendalltau(xs[k], ys[k]).statistic)


def test_kendall_null_distribution_for_five_versions():
    # 120 orderings of 5 items: tau = 1, 0.8, ..., -1 occur 1,4,9,15,20,22,20,15,9,4,1 times
    perms = np.array(list(itertools.permutations(range(5))), dtype=float)
    tau = kendall_tau(np.arange(5.0), perms)
    values, counts = np.unique(np.round(tau, 6), return_counts=True)
    np.testing.assert_allclose(values, np.linspace(-1, 1, 11), atol=1e-9)
    assert counts[::-1].tolist() == [1, 4, 9, 15, 20, 22, 20, 15, 9, 4, 1]


def test_orderings_as_ranked_lists_and_series():
    names = ["s1", "s2", "s3", "s4", "s5"]
    ranked_m0 = ["s1", "s2", "s3", "s4", "s5"]
    ranked_m2 = ["s1", "s2", "s5", "s4", "s3"]
    assert kendall_tau(ranked_m0, ranked_m2) == pytest.approx(0.4)
    s0 = pd.Series(M0, index=names)
    s2 = pd.Series(M2, index=names).iloc[::-1]            # aligned by label, not position
    assert spearman(s0, s2) == pytest.approx(0.6)
    assert kendall_tau([3, 1, 2], [1, 2, 3], kind="ranking") == pytest.approx(
        kendall_tau([3, 2, 1], [1, 3, 2]))
    with pytest.raises(InputError, match="same items"):
        kendall_tau(["a", "b", "c"], ["a", "b", "d"])
    with pytest.raises(InputError, match="more than once"):
        kendall_tau(["a", "a", "c"], ["a", "b", "c"])
    with pytest.raises(InputError, match="non-finite"):
        kendall_tau([1.0, np.nan, 2.0], [1, 2, 3])


def _tau_ap_loop(est, truth):
    order = sorted(range(len(est)), key=lambda k: -est[k])
    rank_truth = {item: r for r, item in enumerate(sorted(range(len(truth)), key=lambda k: -truth[k]))}
    total = 0.0
    for i in range(1, len(order)):
        c = sum(rank_truth[order[j]] < rank_truth[order[i]] for j in range(i))
        total += c / i
    return 2.0 / (len(order) - 1) * total - 1.0


def test_tau_ap_hand_examples_and_brute_force():
    truth = list("abcde")
    assert tau_ap(list("bacde"), truth) == pytest.approx(0.5)      # swap at the top
    assert tau_ap(list("abced"), truth) == pytest.approx(0.875)    # swap at the bottom
    assert tau_ap(truth, truth) == pytest.approx(1.0)
    assert tau_ap(truth[::-1], truth) == pytest.approx(-1.0)
    rng = np.random.default_rng(1)
    est, ref = rng.random((20, 7)), rng.random((20, 7))
    batched = tau_ap(est, ref)
    sym = tau_ap(est, ref, symmetric=True)
    for k in range(20):
        assert batched[k] == pytest.approx(_tau_ap_loop(est[k], ref[k]))
        assert sym[k] == pytest.approx((_tau_ap_loop(est[k], ref[k]) +
                                        _tau_ap_loop(ref[k], est[k])) / 2)
    with pytest.raises(InputError, match="tied"):
        tau_ap(M3, M4)
    assert tau_ap(M3, M0, ties="first") == pytest.approx(1.0)


def test_rbo_thesis_examples():
    assert rbo(M0, M1, p=0.8) == pytest.approx(0.8)                    # printed in the thesis (eq. 2.28)
    # the thesis prints 0.846; its eq. 2.28 on these orderings gives 0.931733 (brute force: _rbo_sum below)
    assert rbo(M0, M2, p=0.8) == pytest.approx(0.931733, abs=1e-6)
    assert rbo(list("abcde"), list("bacde"), p=0.8) == pytest.approx(0.8)
    x = np.random.default_rng(0).random(50)
    assert rbo(x, x, p=0.9, variant="trunc") == pytest.approx(1 - 0.9 ** 50)
    assert rbo(x, x, p=0.9) == pytest.approx(1.0)
    with pytest.raises(InputError, match="tied"):
        rbo(M3, M4, p=0.8)
    # ties broken by input position: both become s1 > s2 > s3 > s4 > s5
    assert rbo(M3, M4, p=0.8, ties="first") == pytest.approx(1.0)
    with pytest.raises(InputError, match="p must be"):
        rbo(M0, M1, p=1.0)


def _rbo_sum(a, b, p, depth):
    """(1-p) sum_{d<=depth} p^(d-1) |a[:d] & b[:d]| / d, by sets."""
    return (1 - p) * sum(p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d
                         for d in range(1, depth + 1))


def _best_continuation(short, long_):
    """Continue both lists so that every prefix overlaps as much as possible."""
    s_more = [v for v in long_ if v not in set(short)]          # short takes long's items
    l_more = [v for v in short if v not in set(long_)]          # long takes short's items
    fresh = [f"new{k}" for k in range(400)]
    return short + s_more + fresh, long_ + l_more + fresh


@pytest.mark.parametrize("short, long_", [
    (list("abcde"), list("cxaby")),
    (list("abc"), list("bqcrsatu")),
    (list("abcd"), list("wxyzab")),
    (list("ab"), list("ab")),
])
def test_rbo_bounds_brute_force(short, long_):
    p, depth = 0.7, 300
    fresh_s = short + [f"s{k}" for k in range(depth)]
    fresh_l = long_ + [f"l{k}" for k in range(depth)]
    worst = _rbo_sum(fresh_s, fresh_l, p, depth)
    best = _rbo_sum(*_best_continuation(short, long_), p, depth)
    assert rbo(short, long_, p, "min") == pytest.approx(worst, abs=1e-9)
    assert rbo(long_, short, p, "min") == pytest.approx(worst, abs=1e-9)
    assert rbo(short, long_, p, "min") + rbo(short, long_, p, "res") == pytest.approx(best, abs=1e-9)
    # Webber et al. 2010, eq. 32, written out literally
    s, l = len(short), len(long_)
    x = [len(set(short[:d]) & set(long_[:d])) for d in range(1, l + 1)]
    x_s, x_l = x[s - 1], x[l - 1]
    ext = (1 - p) / p * (sum(x[d - 1] * p ** d / d for d in range(1, l + 1)) +
                         sum(x_s * (d - s) * p ** d / (s * d) for d in range(s + 1, l + 1))) \
        + ((x_l - x_s) / l + x_s / s) * p ** l
    assert rbo(short, long_, p) == pytest.approx(ext)
    assert rbo(short, long_, p, "trunc") == pytest.approx(_rbo_sum(short, long_, p, l))


@settings(max_examples=60, deadline=None)
@given(hst.permutations(list(range(12))), hst.integers(1, 12), hst.integers(1, 12),
       hst.floats(0.05, 0.95))
def test_rbo_ext_between_bounds(perm, ls, ll, p):
    a, b = list(range(12))[:ls], list(perm)[:ll]
    lo = rbo(a, b, p, "min", kind="ranking")
    hi = lo + rbo(a, b, p, "res", kind="ranking")
    ext = rbo(a, b, p, "ext", kind="ranking")
    assert -1e-12 <= lo <= ext + 1e-12
    assert ext <= hi + 1e-12 <= 1 + 2e-12


def test_rbo_batched_scores_match_lists_and_random_baseline():
    rng = np.random.default_rng(3)
    x = rng.random((5, 8))
    y = rng.random((5, 8))
    items = np.array(list("abcdefgh"))
    for variant in ("ext", "min", "res", "trunc"):
        batched = rbo(x, y, 0.85, variant)
        for k in range(5):
            lx = list(items[np.argsort(-x[k])])
            ly = list(items[np.argsort(-y[k])])
            assert batched[k] == pytest.approx(rbo(lx, ly, 0.85, variant))
    assert rbo(x, y, 0.85, depth=3)[0] == pytest.approx(
        rbo(list(items[np.argsort(-x[0])]), list(items[np.argsort(-y[0])]), 0.85, depth=3))
    # Rashidi et al. 2023: random orderings of 50 systems give RBO@50 (p=0.9) 0.193 +- 0.072
    perms = np.argsort(rng.random((8000, 2, 50)), axis=-1).astype(float)
    values = rbo(perms[:, 0], perms[:, 1], 0.9, "trunc")
    assert values.mean() == pytest.approx(0.193, abs=0.004)
    assert values.std() == pytest.approx(0.072, abs=0.004)


def test_rbo_ext_exceeds_trunc_by_p_to_the_k_for_two_orderings_of_the_same_items():
    # Webber, Moffat & Zobel (2010) Eq. 32 minus the truncated sum is (X_k / k) p^k, and X_k = k when
    # both orderings hold the same k items: 0.9^50 = 0.0052 for Rashidi, Zobel and Moffat's 50 systems
    rng = np.random.default_rng(0)
    x = rng.random((20, 50))
    y = rng.random((20, 50))
    diff = rbo(x, y, p=0.9, variant="ext") - rbo(x, y, p=0.9, variant="trunc")
    np.testing.assert_allclose(diff, 0.9 ** 50, atol=1e-12)
    assert rbo(x[0], x[0], p=0.9, variant="trunc") == pytest.approx(1 - 0.9 ** 50)
    # the paper's random-ordering reference: truncated RBO of random orderings of 50 items ~ 0.194 +- 0.072
    many = rbo(rng.random((4000, 50)), rng.random((4000, 50)), p=0.9, variant="trunc")
    assert many.mean() == pytest.approx(0.194, abs=0.005)
    assert many.std() == pytest.approx(0.072, abs=0.005)
