"""Tests for pyterrier_noise.ties: banding, rounding, tie-breaking, tie statistics, bounds, brute force.

Reference values are those of Yang (2019) thesis Ch. 3 as corrected in seed note 004a (Sec. 3, 7).
"""
from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.ties import (
    MAX_ORDERINGS,
    ScoreRounding,
    TieBanding,
    TieBreaker,
    TieRange,
    band_boundaries,
    expected_by_enumeration,
    first_multi_doc_band,
    round_scores,
    tie_stats,
    worst_case_delta_rbp,
    worst_case_delta_rr,
    worst_case_table,
)

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

# ---------------------------------------------------------------------------------------------
# thesis Table 3.1

T31_DOCS = list("DHACMSWBEJ")
T31_GAINS = np.array([0, 0, 1, 1, 0, 1, 1, 0, 0, 1], dtype=float)
T31_SIM = [9.8, 9.3, 9.3, 9.3, 8.4, 8.4, 8.2, 8.0, 8.0, 8.0]
T31_REL = dict(zip(T31_DOCS, T31_GAINS))


def t31_frame() -> pd.DataFrame:
    return pd.DataFrame({"qid": "351", "docno": T31_DOCS, "score": T31_SIM, "note": range(10)})


def rbp(g: np.ndarray, phi: float = 0.9) -> float:
    return float((1 - phi) * np.sum(g * phi ** np.arange(len(g))))


def p_at(k: int):
    return lambda g: float(np.sum(g[:k]) / k)


def rr(g: np.ndarray) -> float:
    hits = np.flatnonzero(g > 0)
    return 1.0 / (hits[0] + 1) if len(hits) else 0.0


def ap(g: np.ndarray, R: int = 5) -> float:
    prec = np.cumsum(g) / np.arange(1, len(g) + 1)
    return float(np.sum(prec * g) / R)


def bands_as_list(rho, depth):
    return [tuple(int(v) for v in row) for row in band_boundaries(rho, depth)]


# ---------------------------------------------------------------------------------------------
# band boundaries

BAND_FIXTURES = {  # seed note 004a Sec. 3.6 (exact recurrence)
    "1.1": [(i, i) for i in range(1, 11)] + [(11, 12), (13, 14), (15, 16), (17, 18)],
    "1.2": [(i, i) for i in range(1, 6)] + [(6, 7), (8, 9), (10, 11), (12, 14), (15, 17), (18, 21), (22, 26),
                                           (27, 32), (33, 39)],
    "1.4": [(1, 1), (2, 2), (3, 4), (5, 6), (7, 9), (10, 13), (14, 19), (20, 27), (28, 39), (40, 55), (56, 78)],
    "1.5": [(1, 1), (2, 2), (3, 4), (5, 7), (8, 11), (12, 17), (18, 26), (27, 40), (41, 61)],
    "1.62": [(1, 1), (2, 3), (4, 6), (7, 11), (12, 19), (20, 32), (33, 53), (54, 87)],
    "1.7": [(1, 1), (2, 3), (4, 6), (7, 11), (12, 20), (21, 35), (36, 61)],
    "2": [(1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 63)],
    "3": [(1, 2), (3, 8), (9, 26), (27, 80)],
}


@pytest.mark.parametrize("rho", sorted(BAND_FIXTURES))
def test_band_fixtures(rho):
    expected = BAND_FIXTURES[rho]
    assert bands_as_list(float(rho), expected[-1][1]) == expected


def test_band_rho_forms_agree_and_float_pitfall():
    ref = bands_as_list(1.1, 400)
    for same in ("1.1", Fraction(11, 10), Decimal("1.1")):
        assert bands_as_list(same, 400) == ref
    starts = [b for b, _ in ref]
    # binary 1.1 * 170 = 187.00000000000003 would start the next band at 188 (seed note 004a, Sec. 3.6)
    assert math.ceil(1.1 * 170) == 188
    i = starts.index(170)
    assert starts[i + 1] == 187 and 188 not in starts


def test_band_last_band_is_cut_and_rho_one_is_singletons():
    assert bands_as_list(2, 10) == [(1, 1), (2, 3), (4, 7), (8, 10)]
    assert bands_as_list(1, 5) == [(i, i) for i in range(1, 6)]
    assert first_multi_doc_band(1) is None


@settings(max_examples=150, deadline=None)
@given(num=st.integers(1, 400), den=st.integers(1, 200), depth=st.integers(1, 300))
def test_band_recurrence_and_first_multi_band_closed_form(num, den, depth):
    rho = 1 + Fraction(num % (3 * den) + 1, den)  # a rational in (1, 4]
    bands = band_boundaries(rho, depth)
    b, e = bands[:, 0], bands[:, 1]
    assert b[0] == 1 and e[-1] == depth and np.all(b[1:] == e[:-1] + 1)
    # every full band obeys b_{g+1} = ceil(rho * b_g), checked in exact arithmetic
    assert all(b[i + 1] == math.ceil(rho * int(b[i])) for i in range(len(b) - 1))
    # the corrected closed form 1 + floor(1/(rho-1)) gives the first band with two or more ranks
    bv, ev = first_multi_doc_band(rho)
    full = band_boundaries(rho, ev + 5)
    lengths = full[:, 1] - full[:, 0] + 1
    g = int(np.argmax(lengths > 1))
    assert (bv, ev) == (full[g, 0], full[g, 1])


def test_first_multi_band_thesis_ceil_formula_is_wrong_for_1_4():
    # thesis: b_v = 1 + ceil(1/(rho-1)) = 4 for rho = 1.4; the bands are [1], [2], [3,4], ...
    assert 1 + math.ceil(1 / Fraction("0.4")) == 4
    assert first_multi_doc_band(1.4) == (3, 4)
    assert first_multi_doc_band(1.7) == (2, 3)


@pytest.mark.parametrize("bad", [0.9, -1, "abc", float("nan"), float("inf"), None, True, [1.5]])
def test_rho_validation(bad):
    with pytest.raises(InputError, match="rho"):
        band_boundaries(bad, 10)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True])
def test_depth_validation(bad):
    with pytest.raises(InputError, match="depth"):
        band_boundaries(1.5, bad)


# ---------------------------------------------------------------------------------------------
# worst-case bounds (thesis Table 3.3)

TABLE_3_3 = [  # rho, delta RR, delta RBP(0.5), delta RBP(0.85), first multi-doc band
    (1.1, 0.0038, 0.0002, 0.0087, (11, 12)),
    (1.2, 0.0119, 0.0052, 0.0231, (6, 7)),
    (1.4, 0.0417, 0.0429, 0.0482, (3, 4)),
    (1.7, 0.0833, 0.0945, 0.0777, (2, 3)),
    (2.0, 0.0833, 0.1016, 0.0971, (2, 3)),
]


@pytest.mark.parametrize("rho, d_rr, d_rbp5, d_rbp85, band", TABLE_3_3)
def test_table_3_3(rho, d_rr, d_rbp5, d_rbp85, band):
    assert round(worst_case_delta_rr(rho), 4) == d_rr
    assert round(worst_case_delta_rbp(rho, 0.5), 4) == d_rbp5
    assert round(worst_case_delta_rbp(rho, 0.85), 4) == d_rbp85
    assert first_multi_doc_band(rho) == band
    # depth past ~100 does not change the four decimals
    assert round(worst_case_delta_rbp(rho, 0.85, depth=150), 4) == d_rbp85


def test_table_3_3_frame():
    t = worst_case_table()
    assert list(t["rho"]) == ["1.1", "1.2", "1.4", "1.7", "2"]
    got = t[["delta_rr", "delta_rbp(p=0.5)", "delta_rbp(p=0.85)"]].round(4).to_numpy()
    np.testing.assert_array_equal(got, np.array([row[1:4] for row in TABLE_3_3]))
    assert list(zip(t["first_multi_band_start"], t["first_multi_band_end"])) == [row[4] for row in TABLE_3_3]
    one = worst_case_table(rhos=[1])
    assert one["delta_rr"].iloc[0] == 0 and one["delta_rbp(p=0.5)"].iloc[0] == 0
    assert one["first_multi_band_start"].isna().all()


def test_rbp_persistence_is_p():
    assert worst_case_delta_rbp(2, 0.85) == worst_case_delta_rbp(2, p=0.85)
    assert worst_case_table(rhos=[2], ps=[0.5])["delta_rbp(p=0.5)"].iloc[0] == worst_case_delta_rbp(2, 0.5)
    with pytest.raises(TypeError):          # phi= was its name before the first release
        worst_case_delta_rbp(2, phi=0.85)



def test_delta_rr_exact_fractions():
    assert worst_case_delta_rr(1.1) == pytest.approx(float(Fraction(1, 264)), rel=1e-12)
    assert worst_case_delta_rr(2) == pytest.approx(1 / 12, rel=1e-12)
    assert worst_case_delta_rr(1.4) == pytest.approx(1 / 24, rel=1e-12)
    assert worst_case_delta_rr(1) == 0.0
    # rho = 3: first band [1, 2]
    assert worst_case_delta_rr(3) == pytest.approx(1 - (1 + 1 / 2) / 2, rel=1e-12)


@pytest.mark.parametrize("rho", [1.1, 1.25, 1.5, 1.62, 1.9, 2.5, 3, 4.5])
def test_delta_rr_is_the_worst_band(rho):
    # a single relevant document at the top of any band loses at most what the first multi band loses
    losses = [Fraction(1, b) - sum(Fraction(1, k) for k in range(b, e + 1)) / (e - b + 1)
              for b, e in bands_as_list(rho, 300)]
    assert worst_case_delta_rr(rho) == pytest.approx(float(max(losses)), rel=1e-12)


@pytest.mark.parametrize("rho, depth", [(2, 7), (1.5, 7), (1.4, 6), (3, 8)])
@pytest.mark.parametrize("phi", [0.5, 0.85])
def test_delta_rbp_equals_brute_force(rho, depth, phi):
    """max over all relevance layouts of (best ordering - expected), by enumeration."""
    bands = bands_as_list(rho, depth)
    gids = np.repeat(np.arange(len(bands)), [e - b + 1 for b, e in bands])
    best = 0.0
    for layout in itertools.product(*[range(e - b + 2) for b, e in bands]):
        gains = np.concatenate([[1.0] * r + [0.0] * (e - b + 1 - r) for r, (b, e) in zip(layout, bands)])
        res = expected_by_enumeration(gains, gids, lambda g: rbp(g, phi))
        best = max(best, res.maximum - res.expected)
    assert worst_case_delta_rbp(rho, phi, depth=depth) == pytest.approx(best, abs=1e-12)


def test_delta_rr_equals_brute_force_over_all_gain_vectors():
    """rho = 2, depth 7: worst (original RR - expected RR) over all 128 binary gain vectors is 1/12."""
    gids = np.repeat(np.arange(3), [1, 2, 4])
    worst = max(rr(g) - expected_by_enumeration(g, gids, rr).expected
                for g in (np.array(v, dtype=float) for v in itertools.product([0, 1], repeat=7)))
    assert worst == pytest.approx(worst_case_delta_rr(2), abs=1e-12)


def test_bound_validation():
    with pytest.raises(InputError, match=r"\bp must"):
        worst_case_delta_rbp(1.5, 1.0)
    with pytest.raises(InputError, match="depth"):
        worst_case_delta_rbp(1.5, 0.5, depth=0)
    with pytest.raises(InputError, match="rho"):
        worst_case_delta_rr(0.5)


# ---------------------------------------------------------------------------------------------
# brute-force enumeration on thesis Table 3.1

T31_GROUPS = T31_SIM  # the scores themselves are the group labels


@pytest.mark.parametrize("fn, expected, lo, hi", [
    (rbp, 0.321280, 0.304835, 0.337584),
    (p_at(5), 0.5, 0.4, 0.6),
    (rr, 4 / 9, 1 / 3, 1 / 2),
    (ap, 0.536323, 0.480952, 0.592619),
])
def test_enumeration_table_3_1(fn, expected, lo, hi):
    res = expected_by_enumeration(T31_GAINS, T31_GROUPS, fn)
    assert isinstance(res, TieRange)
    assert res.expected == pytest.approx(expected, abs=5e-7)
    assert (res.minimum, res.maximum) == (pytest.approx(lo, abs=5e-7), pytest.approx(hi, abs=5e-7))
    e, mn, mx = res  # unpacks as (expected, min, max)
    assert mn <= e <= mx


def test_enumeration_enr_values():
    # seed note 004a Sec. 7: enr(1..10) = 0, 2/3, 4/3, 2, 5/2, 3, 4, 13/3, 14/3, 5
    enr = [Fraction(0), Fraction(2, 3), Fraction(4, 3), Fraction(2), Fraction(5, 2), Fraction(3), Fraction(4),
           Fraction(13, 3), Fraction(14, 3), Fraction(5)]
    for k, want in enumerate(enr, start=1):
        got = expected_by_enumeration(T31_GAINS, T31_GROUPS, lambda g: g[:k].sum()).expected
        assert got == pytest.approx(float(want), abs=1e-12)


def test_enumeration_vectorized_and_toy_ap():
    res = expected_by_enumeration(T31_GAINS, T31_GROUPS, lambda m: (m * 0.1 * 0.9 ** np.arange(10)).sum(axis=1),
                                  vectorized=True)
    assert res.expected == pytest.approx(0.321280, abs=5e-7)
    # one group {rel, nonrel}: exact expected AP (R = 1) is 0.75; the thesis eq. 3.3 gives 0.5
    toy = expected_by_enumeration([1, 0], ["g", "g"], lambda g: ap(g, R=1))
    assert toy == (pytest.approx(0.75), 0.5, 1.0)


def test_enumeration_refusals():
    with pytest.raises(InputError, match="orderings"):
        expected_by_enumeration(np.zeros(9), np.zeros(9), rr)  # 9! = 362,880 > MAX_ORDERINGS
    assert math.factorial(9) > MAX_ORDERINGS >= math.factorial(8)
    with pytest.raises(InputError, match="limit=23"):
        expected_by_enumeration([1, 0, 0, 0], list("gggg"), rr, limit=23)  # 4! = 24 orderings
    assert expected_by_enumeration([1, 0, 0, 0], list("gggg"), rr, limit=24).expected == pytest.approx(
        (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    with pytest.raises(InputError, match="consecutive"):
        expected_by_enumeration([1, 0, 1], ["a", "b", "a"], rr)
    with pytest.raises(InputError, match="one group id per rank"):
        expected_by_enumeration([1, 0, 1], ["a", "a"], rr)
    with pytest.raises(InputError, match="finite"):
        expected_by_enumeration([1, np.nan], ["a", "a"], rr)
    with pytest.raises(InputError, match="empty"):
        expected_by_enumeration([], [], rr)


# ---------------------------------------------------------------------------------------------
# TieBreaker

def test_trec_eval_order_table_3_1():
    out = TieBreaker("trec_eval")(t31_frame())
    assert list(out["docno"]) == list("DHCASMWJEB")
    assert list(out["rank"]) == list(range(10))
    assert list(out["note"]) == [T31_DOCS.index(d) for d in "DHCASMWJEB"]  # other columns travel with rows
    gains = out["docno"].map(T31_REL).to_numpy()
    assert rbp(gains) == pytest.approx(0.320484, abs=5e-7)
    assert p_at(5)(gains) == pytest.approx(0.6) and ap(gains) == pytest.approx(0.525952, abs=5e-7)


def test_input_order_is_run_order_and_shuffle():
    df = t31_frame()
    out = TieBreaker("input")(df)
    assert list(out["docno"]) == T31_DOCS
    assert rbp(out["docno"].map(T31_REL).to_numpy()) == pytest.approx(0.304835, abs=5e-7)
    shuffled = df.sample(frac=1, random_state=4)
    # trec_eval order does not depend on row order; input order follows it among ties
    assert list(TieBreaker("trec_eval")(shuffled)["docno"]) == list("DHCASMWJEB")
    got = TieBreaker("input")(shuffled)
    assert list(got["score"]) == sorted(T31_SIM, reverse=True)
    sim = dict(zip(T31_DOCS, T31_SIM))
    for s, grp in got.groupby("score"):
        assert list(grp["docno"]) == [d for d in shuffled["docno"] if sim[d] == s]


def test_rank_is_not_a_strategy():
    with pytest.raises(InputError, match="given"):     # "rank" was the name of "given" before the first release
        TieBreaker("rank")


def test_given_strategy_is_the_rank_column_then_row_order():
    df = t31_frame().assign(rank=[0, 3, 2, 1, 5, 4, 6, 9, 8, 7])
    assert repr(TieBreaker("given")) == "TieBreaker('given')"
    assert list(TieBreaker("given")(df)["docno"]) == list("DCAHSMWJEB")
    # without a rank column the given order is row order, as the engine's ties="given"
    assert TieBreaker("given")(t31_frame()).equals(TieBreaker("input")(t31_frame()))


def test_random_strategy_is_seeded_and_uniform():
    df = t31_frame()
    a = TieBreaker("random", seed=7)(df)
    assert a.equals(TieBreaker("random", seed=7)(df))
    assert a.equals(TieBreaker("random", seed=7)(df.sample(frac=1, random_state=1)))  # row order irrelevant
    assert list(a["score"]) == sorted(T31_SIM, reverse=True)
    # over many seeds every ordering of the group {H, A, C} appears about equally often
    counts: dict[tuple, int] = {}
    for seed in range(600):
        out = TieBreaker("random", seed=seed)(df)
        key = tuple(out["docno"].iloc[1:4])
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6
    assert stats.chisquare(list(counts.values())).pvalue > 1e-3


def test_rescore_and_precision():
    df = pd.DataFrame({"qid": ["1"] * 3 + ["2"] * 2, "docno": ["a", "b", "c", "x", "y"],
                       "score": [1.0, 1.0 + 1e-9, 0.5, 2.0, 2.0]})
    exact = TieBreaker("trec_eval")(df)
    assert list(exact["docno"]) == ["b", "a", "c", "y", "x"]
    f32 = TieBreaker("trec_eval", precision="float32")(df)
    assert list(f32["docno"]) == ["b", "a", "c", "y", "x"]  # tie in float32 -> docno descending: b before a
    df2 = df.assign(docno=["b", "a", "c", "x", "y"])
    assert list(TieBreaker("trec_eval")(df2)["docno"]) == ["a", "b", "c", "y", "x"]
    assert list(TieBreaker("trec_eval", precision="float32")(df2)["docno"]) == ["b", "a", "c", "y", "x"]
    assert list(TieBreaker("trec_eval", precision="float32")(df2)["score"])[:2] == [1.0, 1.0 + 1e-9]
    strict = TieBreaker("trec_eval", rescore=True)(df)
    assert list(strict["score"]) == [3.0, 2.0, 1.0, 2.0, 1.0]


def test_tiebreaker_validation():
    with pytest.raises(InputError, match="seed"):
        TieBreaker("random")
    with pytest.raises(InputError, match="seed"):
        TieBreaker("trec_eval", seed=3)
    with pytest.raises(InputError, match="strategy"):
        TieBreaker("docno")
    with pytest.raises(InputError, match="precision"):
        TieBreaker(precision="float16")
    with pytest.raises(InputError, match="docno"):
        TieBreaker()(pd.DataFrame({"qid": ["1"], "score": [1.0]}))
    bad = t31_frame()
    bad.loc[3, "score"] = np.nan
    with pytest.raises(InputError, match=r"column 'score', row 3"):
        TieBreaker()(bad)
    dup = pd.concat([t31_frame(), t31_frame().iloc[[2]]])
    with pytest.raises(InputError, match="'A'"):
        TieBreaker()(dup)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("make", [lambda: TieBanding(2), lambda: TieBanding(2, by="input"),
                                  lambda: TieBanding(2, by="given"), lambda: TieBanding(2, by="trec_eval"),
                                  lambda: TieBreaker("input"), lambda: TieBreaker("given"),
                                  lambda: ScoreRounding(decimals=1)])
@pytest.mark.parametrize("with_rank", [False, True])
def test_every_tie_transformer_refuses_a_non_finite_score_naming_the_row(make, value, with_rank):
    bad = t31_frame()
    if with_rank:
        bad = bad.assign(rank=np.arange(len(bad)))
    bad.loc[3, "score"] = value
    with pytest.raises(InputError, match=r"column 'score', row 3 \(qid .*\): expected a finite number"):
        make()(bad)


def test_text_scores_are_converted_with_a_warning():
    df = t31_frame().assign(score=[str(s) for s in T31_SIM])
    with pytest.warns(CoercionWarning, match="10 values changed"):
        out = TieBreaker()(df)
    assert list(out["docno"]) == list("DHCASMWJEB")
    with pytest.raises(InputError, match="row 1"):
        TieBreaker()(df.assign(score=["1", "x"] + ["1"] * 8))


# ---------------------------------------------------------------------------------------------
# TieBanding

def test_banding_table_3_1_rho_2():
    out = TieBanding(2)(t31_frame())
    assert list(out["docno"]) == list("DHCASMWJEB")  # no rank column: score desc, docno desc
    assert list(out["band"]) == [1, 2, 2, 3, 3, 3, 3, 4, 4, 4]
    np.testing.assert_allclose(out["score"], 1 / out["band"])
    assert list(out["rank"]) == list(range(10))
    assert list(out.columns) == ["qid", "docno", "score", "note", "band", "rank"]


def test_banding_orders():
    df = t31_frame()
    by_input = TieBanding(1.5, by="input")(df)
    assert list(by_input["docno"]) == T31_DOCS
    # a rank column is followed even where it contradicts the scores (LIAClass-like labels)
    labelled = df.assign(rank=[0, 1, 2, 9, 3, 8, 4, 5, 6, 7])
    by_rank = TieBanding(1.5)(labelled)
    assert list(by_rank["docno"]) == list("DHAMWBEJSC")
    by_score = TieBanding(1.5, by="trec_eval")(labelled)
    assert list(by_score["docno"]) == list("DHCASMWJEB")
    assert list(by_score["band"]) == [1, 2, 3, 3, 4, 4, 4, 5, 5, 5]


def test_band_orders_before_the_first_release_are_refused():
    for old in ("rank", "score"):       # the names of "given" and "trec_eval" before the first release
        with pytest.raises(InputError, match="trec_eval"):
            TieBanding(1.5, by=old)
    assert TieBanding(1.5).by == "given"


def test_banding_rho_one_keeps_order_and_removes_ties():
    df = t31_frame().assign(rank=range(10))
    out = TieBanding(1)(df)
    assert list(out["docno"]) == T31_DOCS and list(out["band"]) == list(range(1, 11))
    assert out["score"].is_monotonic_decreasing and out["score"].is_unique


frames = st.lists(
    st.tuples(st.sampled_from(["q1", "q2", "q3", "10"]), st.integers(0, 40), st.integers(0, 5)),
    min_size=0, max_size=120).map(
    lambda rows: pd.DataFrame({"qid": [r[0] for r in rows], "docno": [f"d{r[1]}" for r in rows],
                               "score": [float(r[2]) for r in rows]}).drop_duplicates(["qid", "docno"])
    .reset_index(drop=True))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=frames, rho=st.sampled_from([1, 1.1, 1.3, 1.62, 2, 3.5]))
def test_banding_matches_per_query_bands(df, rho):
    out = TieBanding(rho, by="trec_eval")(df)
    ref = TieBreaker("trec_eval")(df)
    assert len(out) == len(df)
    assert list(out["docno"]) == list(ref["docno"]) and list(out["qid"]) == list(ref["qid"])
    for qid, grp in out.groupby("qid", sort=False):
        bands = band_boundaries(rho, len(grp))
        want = np.repeat(np.arange(1, len(bands) + 1), bands[:, 1] - bands[:, 0] + 1)
        np.testing.assert_array_equal(grp["band"].to_numpy(), want)
        np.testing.assert_array_equal(grp["rank"].to_numpy(), np.arange(len(grp)))
    np.testing.assert_allclose(out["score"], 1.0 / out["band"])


def test_banding_then_tie_stats_sees_the_bands():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"qid": np.repeat(["a", "b"], [100, 40]), "docno": [f"d{i}" for i in range(140)],
                       "score": rng.normal(size=140)})
    out = TieBanding(1.4)(df)
    s = tie_stats(out).topics.set_index("qid")
    assert (s["first_tie_rank"] == 3).all()  # first multi-doc band for rho = 1.4 is [3, 4]
    for qid, n in [("a", 100), ("b", 40)]:
        bands = band_boundaries(1.4, n)
        lengths = bands[:, 1] - bands[:, 0] + 1
        assert s.loc[qid, "n_tied_groups"] == (lengths > 1).sum()
        assert s.loc[qid, "n_tied_docs"] == lengths[lengths > 1].sum()


def test_banding_parameters_and_errors():
    t = TieBanding(1.1)
    assert t.rho == Fraction(11, 10) and repr(t) == "TieBanding(rho=1.1)"
    t.rho = "3/2"
    assert repr(t) == "TieBanding(rho=1.5)"
    with pytest.raises(InputError, match="rho"):
        TieBanding(0.5)
    with pytest.raises(InputError, match="by"):
        TieBanding(2, by="docno")
    with pytest.raises(InputError, match="score"):
        TieBanding(2)(pd.DataFrame({"qid": ["1"], "docno": ["a"]}))
    assert list(TieBanding(2, by="input")(pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"]}))["band"]) == [1, 2]


# ---------------------------------------------------------------------------------------------
# ScoreRounding

def test_rounding_creates_ties_and_keeps_previous_order():
    df = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c", "d"], "score": [1.04, 1.01, 0.96, 0.5],
                       "rank": [1, 0, 2, 3]})
    out = ScoreRounding(decimals=1)(df)
    assert list(out["score"]) == [1.0, 1.0, 1.0, 0.5]
    assert list(out["docno"]) == ["b", "a", "c", "d"]  # tied by rounding: previous ranks decide
    assert list(out["rank"]) == [0, 1, 2, 3]
    no_rank = ScoreRounding(decimals=1)(df.drop(columns="rank"))
    assert list(no_rank["docno"]) == ["a", "b", "c", "d"]  # row order decides


def test_round_scores_modes():
    x = np.array([123456.0, 0.00123456, -98.76, 0.0, 9.996, 1e-305])
    np.testing.assert_array_equal(round_scores(x, sig_digits=3), [123000.0, 0.00123, -98.8, 0.0, 10.0, 1e-305])
    np.testing.assert_array_equal(round_scores([0.31, 0.26, 0.24, -0.05], quantum=0.1), [0.3, 0.3, 0.2, -0.0])
    np.testing.assert_array_equal(round_scores([17.0, 12.5, 7.4], quantum=5), [15.0, 10.0, 5.0])
    np.testing.assert_array_equal(round_scores([1234.5, 1250.0], decimals=-2), [1200.0, 1200.0])
    for kwargs in ({}, {"decimals": 1, "sig_digits": 2}, {"sig_digits": 0}, {"quantum": -1}, {"quantum": "x"},
                   {"decimals": 1.5}):
        with pytest.raises(InputError):
            ScoreRounding(**kwargs)
    assert repr(ScoreRounding(sig_digits=4)) == "ScoreRounding(sig_digits=4)"


@settings(max_examples=200, deadline=None)
@given(xs=st.lists(st.floats(-1e12, 1e12, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-12),
                   min_size=1, max_size=30), s=st.integers(1, 8))
def test_sig_digits_properties(xs, s):
    x = np.array(xs)
    r = round_scores(x, sig_digits=s)
    for v, w in zip(x, r):
        if v == 0:
            assert w == 0
            continue
        mag = math.floor(math.log10(abs(v)))
        assert abs(w - v) <= 0.5 * 10.0 ** (mag - s + 1) * (1 + 1e-9) + 1e-300
        assert float(f"{w:.{s}g}") == w  # at most s significant digits
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(r[order]) >= 0)  # monotone: rounding never swaps two scores


# ---------------------------------------------------------------------------------------------
# pyterrier integration

def test_transformers_compose_and_inspect():
    pipe = TieBanding(1.5) >> TieBreaker("random", seed=1) >> ScoreRounding(decimals=2)
    assert isinstance(pipe, pt.Transformer)
    out = pipe(t31_frame())
    assert sorted(out["docno"]) == sorted(T31_DOCS) and list(out["rank"]) == list(range(10))
    assert out["score"].is_monotonic_decreasing
    cols = ["qid", "docno", "score", "rank"]
    for t in (TieBanding(2), ScoreRounding(sig_digits=2), TieBreaker(), TieBreaker("random", seed=0, rescore=True)):
        assert set(pt.inspect.transformer_outputs(t, cols)) >= set(cols)
        empty = t(pd.DataFrame(columns=cols + ["extra"]))
        assert len(empty) == 0 and set(empty.columns) >= set(cols + ["extra"])
        assert empty["rank"].dtype == np.int64


# ---------------------------------------------------------------------------------------------
# tie statistics

def test_tie_stats_hand_example():
    df = pd.DataFrame({
        "name": ["A"] * 7 + ["B"] * 7,
        "qid": ["1"] * 4 + ["2"] * 3 + ["1"] * 3 + ["2"] * 4,
        "docno": list("abcdefg") + list("hijklmn"),
        "score": [3, 2, 2, 1, 5, 4, 3, 1, 1, 1, 4, 3, 2, 2],
    })
    ts = tie_stats(df)
    topics = ts.topics.set_index(["name", "qid"])
    assert topics["first_tie_rank"].to_dict() == pytest.approx(
        {("A", "1"): 2, ("A", "2"): np.nan, ("B", "1"): 1, ("B", "2"): 3}, nan_ok=True)
    assert topics["n_tied_docs"].tolist() == [2, 0, 3, 2]
    assert topics["largest_group"].tolist() == [2, 1, 3, 2]
    runs = ts.runs.set_index("name")
    assert runs.loc["A", "share_topics_with_ties"] == 0.5 and runs.loc["B", "share_topics_with_ties"] == 1
    assert runs.loc["A", "gm_first_tie_rank"] == pytest.approx(2)
    assert runs.loc["B", "gm_first_tie_rank"] == pytest.approx(math.sqrt(3))
    assert runs.loc["B", "mean_group_size"] == pytest.approx(2.5)
    row = ts.summary.loc["tied scores"]
    assert row["share_runs"] == 1 and row["share_topics"] == 0.75 and row["share_docs"] == 0.5
    assert row["gm_first_tie_rank"] == pytest.approx(stats.gmean([2, 1, 3]))
    assert "rank/score contradictions" not in ts.summary.index
    assert ts.group_sizes.to_dict("list") == {"name": ["A", "B", "B"], "size": [2, 2, 3], "n_groups": [1, 1, 1]}
    # a named run column, or the whole frame as one run
    assert tie_stats(df.rename(columns={"name": "system"}), run_column="system").runs["system"].tolist() == ["A", "B"]
    single = tie_stats(df[df["name"] == "A"].drop(columns="name"))
    assert single.runs["name"].tolist() == ["run"] and single.summary.loc["tied scores", "share_topics"] == 0.5


def test_tie_stats_contradictions_liaclass():
    # thesis Fig. 3.2: LIAClass topic 351 sorted by score has rank labels 1, 2, 3, 536, 4, 537, 5
    df = pd.DataFrame({"qid": "351", "docno": [f"FT{i}" for i in range(7)],
                       "score": [20.18, 19.72, 19.57, 19.55, 19.35, 19.09, 17.60],
                       "rank": [1, 2, 3, 536, 4, 537, 5]})
    ts = tie_stats(df)
    t = ts.topics.iloc[0]
    assert (t["n_contradictions"], t["n_contradicted_docs"], bool(t["has_ties"])) == (2, 4, False)
    assert ts.summary.loc["rank/score contradictions", "share_docs"] == pytest.approx(4 / 7)


def test_tie_stats_precision_and_errors():
    df = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "score": [1.0, 1.0 + 1e-9, 0.5]})
    assert tie_stats(df).topics["n_tied_docs"].iloc[0] == 0
    assert tie_stats(df, precision="float32").topics["n_tied_docs"].iloc[0] == 2
    with pytest.raises(InputError, match="empty"):
        tie_stats(df.iloc[:0])
    with pytest.raises(InputError, match="score"):
        tie_stats(df.drop(columns="score"))
    with pytest.raises(InputError, match="precision"):
        tie_stats(df, precision="half")


TREC_COVID_RUNS = ["BITEM_BL", "PL2c1.0", "BM25R2", "ir_covid19_cle_ib", "10x10.prf.unipd.it"]


@pytest.mark.slow   # real data; the brute-force and hand-example tie_stats tests above are quick
def test_tie_stats_trec_covid_runs():
    run_dir = DATA / "trec-covid-round1" / "runs"
    paths = [run_dir / f"{name}.gz" for name in TREC_COVID_RUNS]
    if not all(p.exists() for p in paths):
        pytest.skip("TREC-COVID round 1 runs not found under shared/data")
    frames = [pd.read_csv(p, sep=r"\s+", header=None, names=["qid", "Q0", "docno", "rank", "score", "name"],
                          dtype={"qid": str, "docno": str}) for p in paths]
    runs = pd.concat(frames, ignore_index=True)
    ts = tie_stats(runs)
    assert set(ts.runs["name"]) == {f["name"].iloc[0] for f in frames}
    for col in ("share_runs", "share_topics", "share_docs"):
        assert ts.summary[col].between(0, 1).all()
    assert ts.runs["share_topics_with_ties"].between(0, 1).all() and ts.runs["share_docs_tied"].between(0, 1).all()
    assert ts.topics["n_docs"].sum() == len(runs)

    # direct counts: documents sharing their score with another document of the same ranking
    size = runs.groupby(["name", "qid", "score"])["docno"].transform("size")
    direct = (size >= 2).groupby([runs["name"], runs["qid"]]).sum()
    got = ts.topics.set_index(["name", "qid"])["n_tied_docs"]
    pd.testing.assert_series_equal(got.sort_index(), direct.sort_index().astype(np.int64), check_names=False)
    # first tie rank: 1-based position, in score order, of the first document that has a twin
    srt = runs.sort_values(["name", "qid", "score"], ascending=[True, True, False])
    position = srt.groupby(["name", "qid"]).cumcount() + 1
    first = position[srt.duplicated(["name", "qid", "score"], keep=False)].groupby(
        [srt["name"], srt["qid"]]).min()
    pd.testing.assert_series_equal(ts.topics.set_index(["name", "qid"])["first_tie_rank"].dropna().sort_index(),
                                   first.sort_index().astype(float), check_names=False)
    # BM25R2 has no ties at all; the others do
    by_run = ts.runs.set_index("name")
    assert not by_run.loc["BM25R2", "has_ties"] and math.isnan(by_run.loc["BM25R2", "gm_first_tie_rank"])
    assert by_run.drop("BM25R2")["has_ties"].all()
    assert ts.summary.loc["tied scores", "share_runs"] == pytest.approx(by_run["has_ties"].mean())
    # group-size histogram accounts for every tied document
    assert (ts.group_sizes["size"] * ts.group_sizes["n_groups"]).sum() == ts.topics["n_tied_docs"].sum()
    # contradictions exist only where rank labels disagree with scores; a pair has two documents
    t = ts.topics
    assert (t["n_contradicted_docs"] <= 2 * t["n_contradictions"]).all()
    assert ((t["n_contradictions"] == 0) | (t["n_contradicted_docs"] > t["n_contradictions"])).all()
    # coarser (float32) equality can only merge score groups
    f32 = tie_stats(runs, precision="float32").topics.set_index(["name", "qid"])["n_tied_docs"]
    assert (f32.sort_index() >= got.sort_index()).all()


def test_tie_stats_in_chunks_equals_one_call():
    from pyterrier_noise.ties import tie_stats_in_chunks
    rng = np.random.default_rng(3)
    runs = {f"r{k}": pd.DataFrame({"qid": np.repeat(["a", "b"], 20), "docno": [f"d{i}" for i in range(40)],
                                   "score": rng.integers(0, 6, 40).astype(float)}) for k in range(5)}
    whole = tie_stats(pd.concat([f.assign(name=n) for n, f in runs.items()], ignore_index=True))
    chunked = tie_stats_in_chunks(runs, "float64", chunk=2, progress=False)
    pd.testing.assert_frame_equal(chunked.topics, whole.topics)
    pd.testing.assert_frame_equal(chunked.summary, whole.summary, check_dtype=False)


@pytest.mark.parametrize("shuffle", [False, True])
def test_tie_stats_against_brute_force(shuffle):
    """Per-ranking counts against a direct Python count (sort each ranking by score descending
    then rank label, compare neighbours), both for rows in rank order (the path that sorts only
    rankings listed out of score order) and shuffled rows (one sort of everything)."""
    rng = np.random.default_rng(3)
    parts = []
    for run in ("a", "b", "c"):
        for q in ("1", "2", "3", "4"):
            n = int(rng.integers(1, 25))
            score = rng.integers(0, 6, n).astype(float)
            rank = np.argsort(-score, kind="stable") if q != "4" else rng.permutation(n)
            parts.append(pd.DataFrame({"name": run, "qid": q, "docno": [f"d{i}" for i in range(n)],
                                       "score": score[rank] if run != "c" else score, "rank": np.arange(n)}))
    frame = pd.concat(parts, ignore_index=True)
    if shuffle:
        frame = frame.sample(frac=1.0, random_state=4)
    got = tie_stats(frame).topics.set_index(["name", "qid"])
    for (run, q), r in frame.groupby(["name", "qid"]):
        s = sorted(zip(r["score"], r["rank"]), key=lambda x: (-x[0], x[1]))
        sizes = pd.Series([x[0] for x in s]).value_counts()
        contra = [i for i in range(len(s) - 1) if s[i][0] > s[i + 1][0] and s[i][1] > s[i + 1][1]]
        docs = {i for c in contra for i in (c, c + 1)}
        first = next((i + 1 for i, x in enumerate(s) if sizes[x[0]] >= 2), np.nan)
        row = got.loc[(run, q)]
        assert row["n_docs"] == len(s) and row["n_tied_docs"] == sizes[sizes >= 2].sum()
        assert row["n_tied_groups"] == (sizes >= 2).sum()
        assert row["largest_group"] == max(1, sizes[sizes >= 2].max() if (sizes >= 2).any() else 1)
        assert row["first_tie_rank"] == first or (np.isnan(first) and np.isnan(row["first_tie_rank"]))
        assert row["n_contradictions"] == len(contra) and row["n_contradicted_docs"] == len(docs)
