"""Pairwise crowd judgments (Yang 2019 thesis ch. 5; seed note 004b Sec. 3, 7.4, 8, 9)."""
from __future__ import annotations

import argparse
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pyterrier_noise as pn
from pyterrier_noise.crowd import pairwise as pw
from pyterrier_noise._validation import CoercionWarning, InputError
from pyterrier_noise.synthetic import default_collection


@pytest.fixture(scope="module")
def coll():
    return default_collection()


@pytest.fixture(scope="module")
def crowd(coll):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        return pw.simulate_crowd(coll.qrels, seed=11)


def rows(*items, **const):
    """Judgment frame from (left, right, preferred, absolute, ratio_left, ratio_right) tuples."""
    cols = ["left", "right", "preferred", "absolute", "ratio_left", "ratio_right"]
    f = pd.DataFrame([dict(zip(cols, it)) for it in items])
    for c in cols:
        if c not in f:
            f[c] = np.nan
    f.insert(0, "qid", const.get("qid", "1"))
    f.insert(1, "worker", const.get("worker", "w1"))
    return f


def scores_of(frame, method, **kw):
    q = pw.aggregate(frame, method, **kw)
    return dict(zip(q["docno"], q["label"]))


# ------------------------------------------------------------------------------------------------
# reading

def test_read_roundtrip_through_csv(tmp_path, coll):
    j = pw.simulate_crowd(coll.qrels[coll.qrels.qid.isin(["1", "2"])], missing=0.1, seed=3)
    path = tmp_path / "crowd.csv"
    j.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        back = pw.read_pairwise(path)
    # the only coercion: 'selected' whose preference answer is missing cannot be read
    unreadable = int(((j.absolute == "selected") & j.preferred.isna()).sum())
    assert unreadable > 0
    assert [str(w.message) for w in rec if issubclass(w.category, CoercionWarning)] == [
        f"{path}: {unreadable} 'absolute' answer(s) 'selected' have no 'preferred' answer to say which "
        f"document was selected; made missing"]
    assert list(back.columns) == pw.COLUMNS
    for c in ("qid", "worker", "group", "left", "right", "preferred", "gold"):
        assert back[c].fillna("NA").tolist() == j[c].fillna("NA").tolist(), c
    expect_abs = j.absolute.where(~((j.absolute == "selected") & j.preferred.isna()))
    assert back.absolute.fillna("NA").tolist() == expect_abs.fillna("NA").tolist()
    np.testing.assert_array_equal(back.ratio_left.to_numpy(), j.ratio_left.to_numpy())
    np.testing.assert_array_equal(back.ratio_right.to_numpy(), j.ratio_right.to_numpy())


def test_read_aliases_spellings_and_extra_columns():
    f = pd.DataFrame({
        "Topic": [401, 401, 401, 401], "_worker_id": ["a", "a", "b", "b"], "doc_left": ["d1", "d2", "d1", "d3"],
        "doc_right": ["d2", "d3", "d3", "d2"], "Q1": ["L", "d3", "right", "Left"],
        "Q2": ["Option1", "option3", "2", "both"], "q3_left": [5, 1, 0, 4], "q3_right": [2, 3, 9, 1],
        "note": ["x", "y", "z", "w"]})
    with pytest.warns(CoercionWarning) as rec:
        j = pw.read_pairwise(f)
    msgs = [str(w.message) for w in rec]
    assert any("column 'preferred': 3 value(s)" in m for m in msgs)     # L, d3 (a docno), Left
    assert any("column 'absolute': 3 value(s)" in m for m in msgs)      # Option1, option3, 2
    assert j.qid.tolist() == ["401"] * 4 and j.worker.tolist() == ["a", "a", "b", "b"]
    assert j.preferred.tolist() == ["left", "right", "right", "left"]
    assert j.absolute.tolist() == ["both", "none", "selected", "both"]
    assert j.ratio_left.tolist() == [5.0, 1.0, 0.0, 4.0]
    assert j.group.tolist() == [""] * 4          # no group column: one group per (worker, topic)
    assert j.note.tolist() == ["x", "y", "z", "w"]
    assert j.gold.isna().all()


def test_read_tsv_and_missing_answer_columns(tmp_path):
    path = tmp_path / "j.tsv"
    path.write_text("qid\tworker\tleft\tright\tpreferred\n1\tw\ta\tb\tleft\n1\tw\tb\tc\t\n")
    j = pw.read_pairwise(path)
    assert j.preferred.tolist()[0] == "left" and pd.isna(j.preferred.iloc[1])
    assert j.absolute.isna().all() and j.ratio_left.isna().all()


@pytest.mark.parametrize("content, message", [
    ("qid,worker,left,preferred\n1,w,a,left\n", "missing column(s) ['right']"),
    ("qid,worker,left,right,preferred\n1,w,a,b,left\n1,w,c,c,left\n", "line 3 (data row 1), column 'right'"),
    ("qid,worker,left,right,preferred\n1,w,a,b,left\n1,w,a,b,maybe\n", "line 3 (data row 1), column 'preferred'"),
    ("qid,worker,left,right,absolute\n1,w,a,b,sometimes\n", "line 2 (data row 0), column 'absolute'"),
    ("qid,worker,left,right,ratio_left,ratio_right\n1,w,a,b,-1,2\n", "column 'ratio_left': ratio answers must be >= 0"),
    ("qid,worker,left,right,ratio_left,ratio_right\n1,w,a,b,x,2\n", "column 'ratio_left': expected a non-negative"),
    ("qid,worker,left,right,ratio_left\n1,w,a,b,2\n", "needs its partner 'ratio_right'"),
    ("qid,worker,left,right\n1,w,a,b\n", "no answer column"),
    ("qid,worker,left,right,preferred\n1,,a,b,left\n", "line 2 (data row 0), column 'worker': expected an identifier"),
    ("topic,qid,worker,left,right,preferred\n1,1,w,a,b,left\n", "both name the 'qid' column"),
])
def test_read_errors_name_line_and_column(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=None) as err:
        pw.read_pairwise(path)
    assert message in str(err.value)


def test_read_frame_errors_name_row():
    f = rows(("a", "b", "left"), ("a", "b", "up"))
    with pytest.raises(InputError, match=r"row 1, column 'preferred'"):
        pw.read_pairwise(f)


def test_read_coercions_are_counted():
    f = rows(("a", "b", np.nan, "selected", 1, np.nan), ("a", "c", "left", "selected", np.nan, 2),
             ("b", "c", "right", "both", 3, 4))
    with pytest.warns(CoercionWarning) as rec:
        j = pw.read_pairwise(f)
    msgs = " | ".join(str(w.message) for w in rec)
    assert "1 'absolute' answer(s) 'selected' have no 'preferred'" in msgs
    assert "2 row(s) give a ratio number for only one of the two documents" in msgs
    assert pd.isna(j.absolute.iloc[0]) and j.absolute.iloc[1] == "selected"
    assert j.ratio_left.isna().tolist() == [True, True, False]


# ------------------------------------------------------------------------------------------------
# aggregation

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
        pw.document_scores(f, left_bias=1.5)
    with pytest.raises(InputError, match="bias_weighting"):
        pw.document_scores(f, left_bias=0.1, bias_weighting="both")


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
    np.testing.assert_allclose(pw.ratio_matrix_scores(M), w / w.max(), rtol=1e-10)
    # the same through judgments: numbers s_i = c w_i - eps make (s_i + eps)/(s_j + eps) = w_i / w_j
    iu, ju = np.nonzero(np.triu(~np.isnan(M), 1))
    s = 100 * w - 1
    f = rows(*[(f"d{i:02d}", f"d{j:02d}", "left" if w[i] > w[j] else "right", np.nan, s[i], s[j])
               for i, j in zip(iu, ju)])
    got = pw.aggregate(f, "ratio")
    np.testing.assert_allclose(got["label"].to_numpy(), w / w.max(), rtol=1e-10)


def test_ratio_complete_matrix_is_row_geometric_mean():
    rng = np.random.default_rng(2)
    M, _ = random_matrix(9, 1.0, rng, noise=0.8)
    g = np.exp(np.log(np.where(np.isnan(M), 1.0, M)).sum(axis=1) / 9)     # diagonal 1 included
    np.testing.assert_allclose(pw.ratio_matrix_scores(M), g / g.max(), rtol=1e-12)
    # a complete matrix has no cell to fill: one iteration is the fixed point
    np.testing.assert_allclose(pw.ratio_matrix_scores(M, "iterative", iterations=1), g / g.max(), rtol=1e-12)


def test_ratio_llsm_is_the_fixed_point_of_the_thesis_iteration():
    rng = np.random.default_rng(3)
    M, _ = random_matrix(20, 0.25, rng, noise=0.6)
    llsm = pw.ratio_matrix_scores(M)
    it = pw.ratio_matrix_scores(M, "iterative", iterations=3000)
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
    y = np.log(pw.ratio_matrix_scores(M))
    np.testing.assert_allclose(y, sol - sol.max(), atol=1e-9)
    assert y.max() == 0.0


def test_ratio_judgments_iterative_matches_llsm_and_topics_are_independent(crowd):
    sub = crowd[crowd.qid.isin(["1", "2", "3"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        both = pw.document_scores(sub)
        it = pw.document_scores(sub, ratio_method="iterative", iterations=2000)
        one = pd.concat([pw.document_scores(sub[sub.qid == q]) for q in ["1", "2", "3"]], ignore_index=True)
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
    assert pw.ratio_matrix_scores(M).shape == (3,)
    bad = M.copy()
    bad[1, 0] = 0.4
    with pytest.raises(InputError, match="not reciprocal"):
        pw.ratio_matrix_scores(bad)
    bad = M.copy()
    bad[0, 1] = -2
    with pytest.raises(InputError, match="row 0, column 1"):
        pw.ratio_matrix_scores(bad)
    with pytest.raises(InputError, match="not connected"):
        pw.ratio_matrix_scores(np.array([[1, np.nan], [np.nan, 1]]))


def test_combined_adjusted_geometric_mean():
    f = rows(("a", "b", "left", "selected", 3, 1), ("a", "c", "right", "both", 1, 4), ("b", "c", "left", "none", 2, 1))
    s = pw.document_scores(f).set_index("docno")
    for d in "abc":
        p, a, r = s.loc[d, ["preference", "absolute", "ratio"]]
        assert s.loc[d, "combined"] == pytest.approx(((p + 1) * (a + 1) * (r + 1)) ** (1 / 3) - 1)
    two = pw.document_scores(f, combine=("preference", "ratio")).set_index("docno")
    assert two.loc["a", "combined"] == pytest.approx(math.sqrt((s.loc["a", "preference"] + 1)
                                                                * (s.loc["a", "ratio"] + 1)) - 1)
    # a document without ratio answers is combined over the other two (announced)
    g = pd.concat([f, rows(("a", "e", "left", "none"))], ignore_index=True)
    with pytest.warns(CoercionWarning, match="1 document"):
        e = pw.document_scores(g).set_index("docno").loc["e"]
    assert e.combined == pytest.approx(math.sqrt((e.preference + 1) * (e.absolute + 1)) - 1)


def test_aggregate_is_a_qrels_frame_and_drops_unanswered(crowd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        q = pw.aggregate(crowd, "ratio")
    assert list(q.columns) == ["qid", "docno", "label"]
    assert ((q.label > 0) & (q.label <= 1)).all()
    f = rows(("a", "b", "left", np.nan, 1, 2), ("a", "c", "left"))
    with pytest.warns(CoercionWarning, match="1 document"):
        r = pw.aggregate(f, "ratio")
    assert r.docno.tolist() == ["a", "b"]
    with pytest.raises(InputError, match="method"):
        pw.aggregate(f, "vote")


# ------------------------------------------------------------------------------------------------
# categories

def test_to_categories_matches_reference_proportions():
    scores = pd.DataFrame({"qid": ["1"] * 10 + ["2"] * 7, "docno": [f"d{k}" for k in range(17)],
                           "label": list(np.linspace(1, 0.1, 10)) + [0.9, 0.8, 0.8, 0.5, 0.4, 0.3, 0.2]})
    ref = pd.DataFrame({"qid": ["1"] * 10 + ["2"] * 4, "docno": [f"r{k}" for k in range(14)],
                        "label": [3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0]})
    out = pw.to_categories(scores, reference=ref)
    # topic 1 (H .1, R .2, M .3, N .4): 1, 2, 3, 4 documents; topic 2 (.5/.5 of 7): round(3.5) = 4 on top
    assert out.label.tolist()[:10] == [3, 2, 2, 1, 1, 1, 0, 0, 0, 0]
    assert out.label.tolist()[10:] == [1, 1, 1, 1, 0, 0, 0]
    # equal scores at a boundary: broken by docno
    tie = pd.DataFrame({"qid": "1", "docno": ["b", "a", "c"], "label": [0.5, 0.5, 0.1]})
    assert pw.to_categories(tie, proportions=[2 / 3, 1 / 3]).label.tolist() == [0, 1, 0]
    assert pw.to_categories(tie, proportions={0: 0.0, 2: 1.0}).label.tolist() == [2, 2, 2]
    with pytest.raises(InputError, match="exactly one"):
        pw.to_categories(tie)
    with pytest.raises(InputError, match="sum to 1"):
        pw.to_categories(tie, proportions=[0.5, 0.6])
    with pytest.raises(InputError, match="topic '2'"):
        pw.to_categories(scores, reference=ref[ref.qid == "1"])


def test_to_categories_is_monotone_and_counts_follow_cumulative_rounding():
    rng = np.random.default_rng(4)
    for n in (5, 13, 40):
        sc = pd.DataFrame({"qid": "q", "docno": [f"d{k:03d}" for k in range(n)], "label": rng.random(n)})
        p = rng.dirichlet(np.ones(4))
        out = pw.to_categories(sc, proportions=p)
        order = np.argsort(-sc.label.to_numpy())
        assert np.all(np.diff(out.label.to_numpy()[order]) <= 0)
        cum = np.floor(n * np.cumsum(p[::-1]) + 0.5)
        cum[-1] = n
        counts = np.array([(out.label == g).sum() for g in (3, 2, 1, 0)])
        np.testing.assert_array_equal(np.cumsum(counts), cum)


# ------------------------------------------------------------------------------------------------
# worker quality

def test_transitivity_thesis_example_and_consistent_worker():
    # d1 > d2, d2 > d3, d3 > d4, d4 > d1: the order d1 d2 d3 d4 violates d4 > d1, 2 of 4 affected
    cyc = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d3", "d4", "left"), ("d4", "d1", "left"), worker="x")
    ok = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d3", "d4", "left"), ("d1", "d4", "left"), worker="y")
    t = pw.transitivity_inconsistency(pd.concat([cyc, ok], ignore_index=True)).set_index("worker")
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
    got = pw.transitivity_inconsistency(pd.concat(frames, ignore_index=True)).set_index("worker")
    assert sum(a > 0 for a, _ in expect.values()) >= 10       # the case is not trivial
    for w, (aff, judged) in expect.items():
        assert (got.loc[w, "affected"], got.loc[w, "docs"]) == (aff, judged), w


def test_transitivity_groups_and_large_cycles():
    # two groups of one worker: summed (2 + 0) / (4 + 3)
    g1 = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d3", "d4", "left"), ("d4", "d1", "left"))
    g2 = rows(("d1", "d2", "left"), ("d2", "d3", "left"), ("d1", "d3", "left"))
    f = pd.concat([g1.assign(group="g1"), g2.assign(group="g2")], ignore_index=True)
    t = pw.transitivity_inconsistency(f)
    assert t.inconsistency.tolist() == [pytest.approx(2 / 7)]
    with pytest.warns(CoercionWarning, match="more than 3 documents"):
        t = pw.transitivity_inconsistency(f, max_component=3)
    assert np.isnan(t.inconsistency.iloc[0])


def test_absolute_inconsistency_by_hand():
    # a: both, selected(a) -> 1, 1; b: both, none -> inconsistent; c: selected(a) -> 0, none -> 0
    f = rows(("a", "b", "left", "both"), ("a", "c", "left", "selected"), ("b", "c", "right", "none"))
    t = pw.absolute_inconsistency(f)
    assert (t.docs.iloc[0], t.inconsistent.iloc[0]) == (3, 1)
    assert t.inconsistency.iloc[0] == pytest.approx(1 / 3)


def test_gold_accuracy_from_column_and_from_qrels():
    f = rows(("h", "n", "left"), ("n", "h", "left"), ("h", "x", "left"), worker="w")
    f["gold"] = ["left", "right", ""]
    g = pw.gold_accuracy(f)
    assert (g.gold_pairs.iloc[0], g.gold_correct.iloc[0], g.gold_accuracy.iloc[0]) == (2, 1, 0.5)
    known = pd.DataFrame({"qid": "1", "docno": ["h", "n", "x"], "label": [2, 0, 2]})
    g = pw.gold_accuracy(f, gold_qrels=known)       # (h, x) is equally relevant: not gold
    assert (g.gold_pairs.iloc[0], g.gold_correct.iloc[0]) == (2, 1)


def test_position_bias_by_hand():
    eq = [("a", "b", "left" if k < 7 else "right") for k in range(10)]
    f = rows(*eq, ("r", "n", "left"), ("n", "r", "left"))
    q = pd.DataFrame({"qid": "1", "docno": ["a", "b", "r", "n"], "label": [1, 2, 1, 0]})
    pb = pw.position_bias(f, q)               # (r, n) pairs differ in binary relevance: left out
    assert (pb.pairs, pb.left_rate, pb.bias) == (10, 0.7, pytest.approx(0.4))
    assert pb.p_value == pytest.approx(stats.binomtest(7, 10).pvalue)
    assert pw.position_bias(f).pairs == 12
    assert pb.per_topic.to_dict("records") == [{"qid": "1", "pairs": 10, "left_rate": 0.7, "bias": pytest.approx(0.4)}]


def test_position_bias_of_a_simulated_crowd(coll):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        biased = pw.simulate_crowd(coll.qrels, left_bias=0.1, seed=0)
        fair = pw.simulate_crowd(coll.qrels, left_bias=0.0, seed=0)
    pb = pw.position_bias(biased, coll.qrels)
    assert abs(pb.bias - 0.1) < 0.02 and pb.p_value < 1e-6
    assert abs(pw.position_bias(fair, coll.qrels).bias) < 0.02


def test_worker_quality_tracks_simulated_accuracy(coll):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        j, workers = pw.simulate_crowd(coll.qrels, n_workers=20, accuracy=(0.55, 0.99), seed=0, return_workers=True)
    wq = pw.worker_quality(j)
    assert list(wq.columns) == ["qid", "worker", "groups", "pairs", "docs", "transitivity_inconsistency",
                                "absolute_inconsistency", "gold_pairs", "gold_accuracy", "left_rate"]
    # the columns are the component functions' values
    t = pw.transitivity_inconsistency(j)
    np.testing.assert_array_equal(wq.transitivity_inconsistency.to_numpy(), t.inconsistency.to_numpy())
    assert (wq.pairs == 12 * wq.groups).all() and (wq.docs <= 8 * wq.groups).all()
    per = wq.groupby("worker")[["gold_accuracy", "transitivity_inconsistency", "absolute_inconsistency"]].mean()
    per = per.join(workers.set_index("worker"))
    assert stats.kendalltau(per.accuracy, per.gold_accuracy).statistic > 0.5
    assert stats.kendalltau(per.accuracy, per.transitivity_inconsistency).statistic < -0.2
    assert stats.kendalltau(per.accuracy, per.absolute_inconsistency).statistic < -0.5


# ------------------------------------------------------------------------------------------------
# simulation

def test_design_partitions_reproduce_table_5_1():
    num_docs = [285, 120, 216, 225, 192, 184, 176, 208, 270]        # topics 402 ... 440
    X = pw.design_partitions(np.array(num_docs))
    assert X.tolist() == [14, 6, 11, 11, 10, 9, 9, 10, 13]
    assert (3 * X * 3).tolist() == [126, 54, 99, 99, 90, 81, 81, 90, 117]   # JudgPerDoc = K X Y
    assert pw.design_partitions(216) == 11


def test_simulated_design_follows_the_thesis():
    qrels = pd.DataFrame({"qid": "405", "docno": [f"d{k:03d}" for k in range(216)],
                          "label": np.r_[np.full(20, 2), np.full(30, 1), np.zeros(166)]})
    j = pw.simulate_crowd(qrels, seed=5)
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
    a = pw.simulate_crowd(q, seed=7, missing=(0.1, 0.2, 0.3))
    b = pw.simulate_crowd(q, seed=7, missing=(0.1, 0.2, 0.3))
    c = pw.simulate_crowd(q, seed=8, missing=(0.1, 0.2, 0.3))
    pd.testing.assert_frame_equal(a, b)
    assert not a.preferred.equals(c.preferred)
    rates = [a.preferred.isna().mean(), a.absolute.isna().mean(), a.ratio_left.isna().mean()]
    np.testing.assert_allclose(rates, [0.1, 0.2, 0.3], atol=0.03)
    # the embedded validation: the preferred document always has the larger ratio number
    full = a.dropna(subset=["preferred", "ratio_left"])
    assert ((full.ratio_left > full.ratio_right) == (full.preferred == "left")).all()
    with pytest.raises(InputError, match="accuracy"):
        pw.simulate_crowd(q, accuracy=0.4)
    with pytest.raises(InputError, match="n_workers"):
        pw.simulate_crowd(q, workers_per_group=5, n_workers=4)


def test_aggregation_recovers_the_truth_as_workers_grow(coll):
    agree, tau = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        for Y in (1, 3, 9):
            s = pw.document_scores(pw.simulate_crowd(coll.qrels, workers_per_group=Y, seed=1))
            for m in pw.METHODS:
                q = s[["qid", "docno", m]].rename(columns={m: "label"})
                # pairs the true labels order: the share the crowd orders the same way (Table 5.5)
                agree[m, Y] = pw.document_agreement(q, coll.qrels, among="b_ordered").agree.iloc[-1]
                tau[m, Y] = pw.document_tau(q, coll.qrels).tau.iloc[-1]
    for m in pw.METHODS:
        assert agree[m, 1] + 0.02 < agree[m, 3] < agree[m, 9] + 1e-12, m
        assert agree[m, 9] > 0.99, m
        assert agree[m, 1] > 0.85, m
        # Kendall's tau_b with the true grades (bounded well below 1 by their ties) grows too
        assert tau[m, 1] + 0.01 < tau[m, 9], m
        assert tau[m, 1] < tau[m, 3] + 1e-12, m


# ------------------------------------------------------------------------------------------------
# agreement with other qrels

def test_judgment_alpha_thesis_table_2_12():
    # three raters' scores of four documents (Table 2.12); pairwise L/R/T units: 0.353, ties missing: 0.5
    raters = [(0.5, 0.1, 0.7, 0.5), (0.4, 0.2, 0.5, 0.7), (0.9, 0.5, 0.9, 0.7)]
    qs = [pd.DataFrame({"qid": "1", "docno": ["a", "b", "c", "d"], "label": r}) for r in raters]
    assert round(pw.judgment_alpha(qs), 3) == 0.353
    assert pw.judgment_alpha(qs, tie="missing") == pytest.approx(0.5)
    # a second topic is just more units: same as building them by hand with agreement's helper
    from pyterrier_noise.stats.agreement import krippendorff_alpha, pairwise_preference_units
    qs2 = [pd.concat([q, q.assign(qid="2", label=q.label[::-1].to_numpy())]) for q in qs]
    units = pd.concat([pairwise_preference_units(np.array(raters).T).units,
                       pairwise_preference_units(np.array(raters)[:, ::-1].T).units])
    assert pw.judgment_alpha(qs2) == pytest.approx(krippendorff_alpha(units))
    with pytest.raises(InputError, match="at least two"):
        pw.judgment_alpha(qs[:1])


def test_document_tau_and_agreement_against_scipy():
    rng = np.random.default_rng(6)
    a = pd.DataFrame({"qid": np.repeat(["1", "2"], 12), "docno": [f"d{k}" for k in range(24)],
                      "label": rng.integers(0, 3, 24)})
    b = a.assign(label=a.label + rng.integers(0, 2, 24)).iloc[1:]          # one document only in a
    t = pw.document_tau(a, b).set_index("qid")
    for q in ("1", "2"):
        m = a[a.qid == q].merge(b, on=["qid", "docno"])
        assert t.loc[q, "tau"] == pytest.approx(stats.kendalltau(m.label_x, m.label_y).statistic)
        assert t.loc[q, "docs"] == len(m)
    assert t.loc["all", "tau"] == pytest.approx(t.loc[["1", "2"], "tau"].mean())
    d = pw.document_agreement(a, b).set_index("qid")
    m = a.merge(b, on=["qid", "docno"])
    sa, sb, n = 0, 0, 0
    for q, g in m.groupby("qid"):
        i, k = np.triu_indices(len(g), 1)
        x = np.sign(g.label_x.to_numpy()[i] - g.label_x.to_numpy()[k])
        y = np.sign(g.label_y.to_numpy()[i] - g.label_y.to_numpy()[k])
        sa, sb, n = sa + np.sum(x * y > 0), sb + np.sum(x * y < 0), n + len(i)
    assert d.loc["all", "pairs"] == n
    assert (d.loc["all", "agree"], d.loc["all", "disagree"]) == (pytest.approx(sa / n), pytest.approx(sb / n))
    same = pw.document_agreement(a, a).set_index("qid").loc["all"]
    assert same.disagree == 0 and same.agree == pytest.approx(same.separated)


def test_system_agreement_uses_the_engine(coll):
    runs = {k: coll.runs[k] for k in list(coll.runs)[:8]}
    ten = coll.qrels[coll.qrels.qid.astype(int) <= 10]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crowd_q = pw.aggregate(pw.simulate_crowd(ten, seed=2), "ratio")
        res = pw.system_agreement(runs, crowd_q, ten, measure="RBP(p=0.9,max_rel=1)")
        ea = pn.evaluate(runs, crowd_q, ["RBP(p=0.9,max_rel=1)"]).set_index("name").value
        eb = pn.evaluate(runs, ten, ["RBP(p=0.9,max_rel=1)"]).set_index("name").value
    np.testing.assert_allclose(res.scores.a, ea.to_numpy())
    np.testing.assert_allclose(res.scores.b, eb.to_numpy())
    assert res.tau == pytest.approx(stats.kendalltau(ea, eb).statistic)
    assert res.agree + res.disagree + res.tied == pytest.approx(1.0)
    assert res.agree == pytest.approx((1 + res.tau) / 2)                  # no ties among 8 systems
    with pytest.warns(CoercionWarning, match="20 topic"):
        same = pw.system_agreement(runs, coll.qrels, ten, measure="AP")
    assert same.tau == pytest.approx(1.0) and same.disagree == 0


# ------------------------------------------------------------------------------------------------
# the aggregated qrels are ordinary qrels

ALL_MEASURES = ["RBP(p=0.8,max_rel=1)", "RBPResidual(p=0.8)", "INST(T=3,max_rel=1)", "INSQ(T=2)", "AP",
                "nDCG@10", "P@10", "RR", "RBPUpper(p=0.5)"]


def test_aggregated_qrels_flow_into_the_engine(coll):
    runs = {k: coll.runs[k] for k in list(coll.runs)[:5]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        s = pw.document_scores(pw.simulate_crowd(coll.qrels[coll.qrels.qid.astype(int) <= 6], seed=4))
    versions = {m: s[["qid", "docno", m]].rename(columns={m: "label"}).dropna() for m in pw.METHODS}
    versions["categories"] = pw.to_categories(versions["ratio"], reference=coll.qrels)
    # every version through evaluate(), every measure
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
    specs = {m: pn.to_spec(m)[0] for m in ALL_MEASURES}
    out = aligned.evaluate(list(specs.values()), L)
    for r, k in enumerate(versions):
        ref = single[k]
        for m, spec in specs.items():
            got = out[spec][:, :, r]
            want = ref[ref.measure == m].pivot(index="name", columns="qid", values="value")
            want = want.loc[aligned.run_names, aligned.topics].to_numpy()
            np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{k} {m}")


# ------------------------------------------------------------------------------------------------
# command line

def parser():
    p = argparse.ArgumentParser(prog="pyterrier-noise")
    sub = p.add_subparsers(dest="command")
    from pyterrier_noise.cli.pairwise import register_cli
    register_cli(sub)
    return p


def run(argv):
    args = parser().parse_args(argv)
    return args.handler(args)


def test_cli_simulate_and_aggregate(tmp_path, coll, capsys):
    qpath = tmp_path / "true.qrels"
    pn.write_trec_qrels(coll.qrels[coll.qrels.qid.isin(["1", "2"])], qpath)
    crowd_csv = tmp_path / "crowd.csv"
    assert run(["pairwise", "simulate", str(qpath), "--out", str(crowd_csv), "--seed", "3", "--missing", "0.05"]) == 0
    expected_crowd = pw.simulate_crowd(pn.read_qrels(qpath), seed=3, missing=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        back = pw.read_pairwise(crowd_csv)
        assert back.left.tolist() == expected_crowd.left.tolist()
        out = tmp_path / "crowd.qrels"
        assert run(["pairwise", "aggregate", str(crowd_csv), "--method", "combined", "--out", str(out),
                    "--left-bias", "0.04"]) == 0
        want = pw.aggregate(back, "combined", left_bias=0.04)
    got = pn.read_qrels(out)
    np.testing.assert_allclose(got.label.to_numpy(), want.label.to_numpy(), rtol=1e-15)
    assert got.docno.tolist() == want.docno.tolist()
    wq = pd.read_csv(pw.workers_path(out), sep="\t", dtype={"qid": str})
    assert pw.workers_path(out).name == "crowd.qrels.workers.tsv"
    assert list(wq.columns) == ["qid", "worker", "groups", "pairs", "docs", "transitivity_inconsistency",
                                "absolute_inconsistency", "gold_pairs", "gold_accuracy", "left_rate"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        graded = tmp_path / "graded.qrels.gz"
        assert run(["pairwise", "aggregate", str(crowd_csv), "--reference", str(qpath), "--left-bias", "auto",
                    "--out", str(graded)]) == 0
    g = pn.read_qrels(graded)
    assert set(g.label) <= set(coll.qrels.label)
    assert (tmp_path / "graded.qrels.workers.tsv").exists()
    assert "left bias:" in capsys.readouterr().out


def test_cli_help_has_examples_and_errors_are_input_errors(tmp_path, capsys):
    for argv in (["pairwise", "--help"], ["pairwise", "aggregate", "--help"], ["pairwise", "simulate", "--help"]):
        with pytest.raises(SystemExit):
            parser().parse_args(argv)
        assert "examples:" in capsys.readouterr().out
    with pytest.raises(InputError, match="no such file"):
        run(["pairwise", "aggregate", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "q")])
    with pytest.raises(InputError, match="--accuracy"):
        run(["pairwise", "simulate", "--accuracy", "0.6,0.7,0.8", "--out", str(tmp_path / "c.csv")])
