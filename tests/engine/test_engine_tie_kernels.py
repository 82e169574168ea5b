"""Tie-aware kernels: exact expected values and optimistic / pessimistic orderings.

Every closed form and bound is checked against brute force over all orderings of the tied groups
(``ties.expected_by_enumeration``) through the real ``AlignedRuns.build(..., ties=mode).evaluate``
path; the reference metrics below are written independently of the engine, on a vector of labels.
Reference values: Yang (2019) thesis Table 3.1 as corrected in seed note 004a, Sec. 3.3.
"""
from __future__ import annotations

import io
import math
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collection_helpers import random_collection
from pyterrier_noise import AlignedRuns, InputError, MeasureSpec, write_trec_qrels, write_trec_run
from pyterrier_noise.measures import evaluate
from pyterrier_noise.engine import INST_MAX_ORDERINGS, evaluate_tied, expected_ap
from pyterrier_noise.ties import expected_by_enumeration

MODES = ("expected", "optimistic", "pessimistic")

# ---------------------------------------------------------------------------------------------
# thesis Table 3.1

T31_DOCS = list("DHACMSWBEJ")
T31_GAINS = [0, 0, 1, 1, 0, 1, 1, 0, 0, 1]
T31_SIM = [9.8, 9.3, 9.3, 9.3, 8.4, 8.4, 8.2, 8.0, 8.0, 8.0]


def t31():
    run = pd.DataFrame({"qid": "351", "docno": T31_DOCS, "score": T31_SIM})
    qrels = pd.DataFrame({"qid": "351", "docno": T31_DOCS, "label": np.array(T31_GAINS, dtype=float)})
    return {"r": run}, qrels


def one(runs, qrels, spec, ties):
    return float(AlignedRuns.build(runs, qrels, ties=ties).evaluate([spec])[spec][0, 0, 0])


# seed note 004a Sec. 3.3, summary fixture (binary gains, R = 5)
T31_TABLE = {
    MeasureSpec("RBP", p=0.9): {"expected": 0.321280, "optimistic": 0.337584, "pessimistic": 0.304835},
    MeasureSpec("P", cutoff=5): {"expected": 0.5, "optimistic": 0.6, "pessimistic": 0.4},
    MeasureSpec("RR"): {"expected": 4 / 9, "optimistic": 1 / 2, "pessimistic": 1 / 3},
    MeasureSpec("AP"): {"expected": 0.536323, "optimistic": 0.592619, "pessimistic": 0.480952},
}


@pytest.mark.parametrize("spec", list(T31_TABLE))
@pytest.mark.parametrize("mode", MODES)
def test_table_3_1(spec, mode):
    runs, qrels = t31()
    assert one(runs, qrels, spec, mode) == pytest.approx(T31_TABLE[spec][mode], abs=5e-7)


def test_table_3_1_expected_ap_exact_and_thesis_approximation():
    assert expected_ap(T31_GAINS, T31_SIM, 5) == pytest.approx(0.536323, abs=5e-7)
    assert expected_ap(T31_GAINS, T31_SIM, 5, formula="thesis") == pytest.approx(0.488668, abs=5e-7)
    # thesis eq. 3.3 at depth 2: 2/(9R)
    assert expected_ap(T31_GAINS, T31_SIM, 5, cutoff=2, formula="thesis") == pytest.approx(2 / 45, abs=1e-15)
    # toy case of the seed note: one group {relevant, non-relevant}: exact 0.75, thesis 0.5
    assert expected_ap([1, 0], [1, 1], 1) == pytest.approx(0.75)
    assert expected_ap([1, 0], [1, 1], 1, formula="thesis") == pytest.approx(0.5)


@pytest.mark.slow
@pytest.mark.parametrize("T", [1.0, 3.0])
def test_table_3_1_inst_exact_tail_against_every_ordering(T):
    """INST (infinite tail) expected / best / worst: the engine on each of the 72 orderings."""
    import itertools
    runs, qrels = t31()
    spec = MeasureSpec("INST", T=T, tail="exact")
    groups = pd.Series(T31_DOCS).groupby(pd.Series(T31_SIM), sort=False)
    blocks = [list(g) for _, g in groups]
    vals = []
    for perms in itertools.product(*[itertools.permutations(b) for b in blocks]):
        order = [d for p in perms for d in p]
        r = pd.DataFrame({"qid": "351", "docno": order, "score": np.arange(10, 0, -1.0)})
        vals.append(one({"r": r}, qrels, spec, "given"))
    assert len(vals) == 72
    assert one(runs, qrels, spec, "expected") == pytest.approx(np.mean(vals), abs=1e-12)
    assert one(runs, qrels, spec, "optimistic") == pytest.approx(max(vals), abs=1e-12)
    assert one(runs, qrels, spec, "pessimistic") == pytest.approx(min(vals), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# reference metrics on label vectors (rows = orderings; label -1 = unjudged)

def ref_gain(spec, X):
    judged = X >= 0
    if spec.family in ("nDCG", "DCG"):
        g = np.maximum(X, 0.0)
    elif spec.max_rel is not None:
        g = np.clip(X, 0.0, spec.max_rel) / spec.max_rel
    else:
        g = (X >= spec.rel).astype(float)
    return np.where(judged, g, 0.0), judged


def ref_inst(G, T):
    out = np.empty(len(G))
    i = np.arange(1, G.shape[1] + 1)
    for a in range(0, len(G), 2000):   # blocks of orderings, to bound memory
        g = G[a:a + 2000]
        x = i + 2 * T - np.cumsum(g, axis=1)
        C = ((x - 1) / x) ** 2
        P = np.concatenate([np.ones((len(g), 1)), np.cumprod(C[:, :-1], axis=1)], axis=1)
        out[a:a + 2000] = (P * g).sum(axis=1) / P.sum(axis=1)
    return out


def ref_metric(spec, topic_labels):
    """metric_fn(X) for expected_by_enumeration(vectorized=True); topic_labels: the topic's labels
    in this version (NaN = unjudged), which set R and the ideal DCG."""
    def fn(X):
        g, judged = ref_gain(spec, X)
        n = X.shape[1]
        i = np.arange(n)
        k = spec.cutoff if spec.cutoff is not None else n + 1
        fam, comp = spec.family, spec.component
        if fam in ("RBP", "P", "DCG", "nDCG", "INSQ"):
            if fam == "RBP":
                w = (1 - spec.p) * spec.p ** i
            elif fam == "P":
                w = np.full(n, 1.0 / spec.cutoff)
            elif fam == "INSQ":
                w = 1.0 / (i + 2 * spec.T) ** 2 / (1.0 / (np.arange(1000) + 2 * spec.T) ** 2).sum()
            else:
                w = 1.0 / np.log2(i + 2)
            w = np.where(i < k, w, 0.0)
            value = (g * w).sum(axis=1)
            mass = (judged * w).sum(axis=1)
            if fam == "nDCG":
                tg = np.maximum(topic_labels[~np.isnan(topic_labels)], 0.0)
                ideal = np.sort(tg)[::-1][: spec.cutoff]
                idcg = (ideal / np.log2(np.arange(len(ideal)) + 2)).sum()
                return value / idcg if idcg > 0 else 0 * value
            residual = np.maximum(1 - mass, 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                projected = np.where(mass > 0, value / mass, np.nan)
            return {"value": value, "residual": residual, "upper": value + residual, "projected": projected}[comp]
        if fam == "AP":
            rel = (g > 0) & (i < k)
            R = (ref_gain(spec, np.nan_to_num(topic_labels, nan=-1.0)[None, :])[0] > 0).sum()
            return (rel * np.cumsum(rel, axis=1) / (i + 1)).sum(axis=1) / R if R else 0 * g[:, 0]
        if fam == "RR":
            rel = (g > 0) & (i < k)
            first = np.argmax(rel, axis=1)
            return np.where(rel.any(axis=1), 1.0 / (first + 1), 0.0)
        if fam in ("ERR", "IPrec"):   # read in rank order: the condensed list puts unjudged last
            if spec.judged_only:
                order = np.argsort(~judged, axis=1, kind="stable")
                X, g = np.take_along_axis(X, order, axis=1), np.take_along_axis(g, order, axis=1)
            if fam == "ERR":   # gdeval: stopping probability (2^label - 1) / 16
                r = np.where((X > 0) & (i < k), (2.0 ** np.maximum(X, 0.0) - 1.0) / 16.0, 0.0)
                reach = np.concatenate([np.ones((len(X), 1)), np.cumprod(1.0 - r[:, :-1], axis=1)], axis=1)
                return (r * reach / (i + 1)).sum(axis=1)
            R = (ref_gain(spec, np.nan_to_num(topic_labels, nan=-1.0)[None, :])[0] > 0).sum()
            found = np.cumsum(g > 0, axis=1)
            ok = (g > 0) & (found / max(R, 1) >= spec.recall) if R else np.zeros_like(g, dtype=bool)
            return np.where(ok, found / (i + 1), 0.0).max(axis=1)
        if fam == "INST":   # cwl_eval: 1,000 ranks, unjudged and padding gain 0 (lower) or 1 (upper)
            lower = np.zeros((len(X), 1000))
            lower[:, :n] = g
            upper = np.ones((len(X), 1000))
            upper[:, :n] = np.where(judged, g, 1.0)
            lo, up = ref_inst(lower, spec.T), ref_inst(upper, spec.T)
            return {"value": lo, "residual": up - lo, "upper": up}[comp]
        raise AssertionError(fam)
    return fn


def make_collection(seed: int, n_runs: int = 2, n_topics: int = 2, depth: int = 7, n_docs: int = 12,
                    n_scores: int = 3, grades: int = 3):
    """Runs with many ties, qrels with unjudged documents, and a second label version."""
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        parts = []
        for t in range(n_topics):
            docs = rng.choice(n_docs, size=depth, replace=False)
            parts.append(pd.DataFrame({"qid": str(t + 1), "docno": [f"d{d:02d}" for d in docs],
                                       "score": rng.integers(0, n_scores, size=depth).astype(float)}))
        runs[f"run{r}"] = pd.concat(parts, ignore_index=True)
    q = []
    for t in range(n_topics):
        judged = np.flatnonzero(rng.random(n_docs) < 0.7)
        q.append(pd.DataFrame({"qid": str(t + 1), "docno": [f"d{d:02d}" for d in judged],
                               "label": rng.integers(0, grades, size=len(judged)).astype(float)}))
    qrels = pd.concat(q, ignore_index=True)
    return runs, qrels, rng


def label_versions(aligned: AlignedRuns, rng) -> np.ndarray:
    base = aligned.table.labels
    other = rng.integers(0, 3, size=len(base)).astype(float)
    other[rng.random(len(base)) < 0.25] = np.nan        # unjudged in this version
    return np.column_stack([base, other])


def brute_force(runs, aligned: AlignedRuns, L: np.ndarray, spec: MeasureSpec) -> np.ndarray:
    """(n_segments, R, 3): expected, minimum, maximum by enumeration, per ranking and version."""
    table = aligned.table.frame
    out = np.empty((aligned.n_segments, L.shape[1], 3))
    for ri, name in enumerate(aligned.run_names):
        run = runs[name]
        for ti, qid in enumerate(aligned.topics):
            r = run[run["qid"] == qid].sort_values(["score", "docno"], ascending=False)
            rows = table.index[table["qid"] == qid]
            row_of = dict(zip(table.loc[rows, "docno"], rows))
            for v in range(L.shape[1]):
                lab = np.array([L[row_of[d], v] if d in row_of else np.nan for d in r["docno"]])
                codes = np.nan_to_num(lab, nan=-1.0)
                res = expected_by_enumeration(codes, r["score"].to_numpy(), ref_metric(spec, L[rows, v]),
                                              vectorized=True)
                out[ri * aligned.n_topics + ti, v] = res
    return out


SPECS_BINARY = [
    MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8), MeasureSpec("RBP", "upper", p=0.5, cutoff=4),
    MeasureSpec("RBP", "projected", p=0.8), MeasureSpec("P", cutoff=3), MeasureSpec("RR"), MeasureSpec("RR", cutoff=3),
    MeasureSpec("AP"), MeasureSpec("AP", cutoff=4), MeasureSpec("AP", rel=2), MeasureSpec("INST", T=1.0),
    MeasureSpec("INST", "residual", T=2.0), MeasureSpec("INST", "upper", T=1.0), MeasureSpec("INSQ", T=1.0),
    MeasureSpec("INSQ", "residual", T=2.0),
]
SPECS_GRADED = [
    MeasureSpec("RBP", p=0.7, max_rel=2), MeasureSpec("RBP", "upper", p=0.7, max_rel=2),
    MeasureSpec("RBP", "residual", p=0.9, max_rel=2, cutoff=5), MeasureSpec("nDCG"), MeasureSpec("nDCG", cutoff=3),
    MeasureSpec("DCG", cutoff=5), MeasureSpec("P", cutoff=4, max_rel=2), MeasureSpec("INST", T=2.0, max_rel=2),
    MeasureSpec("INST", "upper", T=3.0, max_rel=2), MeasureSpec("INSQ", "upper", T=1.0, max_rel=2),
]


def component_extremes(spec: MeasureSpec, runs, aligned, L):
    """Brute-force expected / min / max of the spec; a residual's bounds are upper minus value of
    the same extreme (each component is the extreme of its own bound)."""
    if spec.component != "residual":
        return brute_force(runs, aligned, L, spec)
    from dataclasses import replace
    up = brute_force(runs, aligned, L, replace(spec, component="upper"))
    lo = brute_force(runs, aligned, L, replace(spec, component="value"))
    return up - lo


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 100_000))
def test_every_mode_equals_brute_force(seed):
    runs, qrels, rng = make_collection(seed)
    specs = SPECS_BINARY + SPECS_GRADED
    aligned = {m: AlignedRuns.build(runs, qrels, ties=m) for m in MODES}
    L = label_versions(aligned["expected"], rng)      # the judgment table is the same for every mode
    out = {m: aligned[m].evaluate(specs, L) for m in MODES}
    for spec in specs:
        ref = component_extremes(spec, runs, aligned["expected"], L)
        for mode, col in (("expected", 0), ("pessimistic", 1), ("optimistic", 2)):
            if spec.component == "projected" and mode == "expected":
                continue  # the engine's expected projected value is E[base] / E[judged weight]
            got = out[mode][spec].reshape(aligned[mode].n_segments, -1)
            np.testing.assert_allclose(got, ref[:, :, col], atol=1e-10, rtol=0, err_msg=f"{mode} {spec}")


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 100_000), st.sampled_from(["AP", "RR", "INST"]))
def test_expected_nonlinear_with_longer_groups(seed, family):
    """Fewer, longer tied groups (up to 8 documents) and cutoffs that split them."""
    runs, qrels, rng = make_collection(seed, n_runs=1, n_topics=2, depth=8, n_docs=14, n_scores=2)
    aligned = AlignedRuns.build(runs, qrels, ties="expected")
    L = label_versions(aligned, rng)
    specs = {"AP": [MeasureSpec("AP"), MeasureSpec("AP", cutoff=5)],
             "RR": [MeasureSpec("RR"), MeasureSpec("RR", cutoff=4)],
             "INST": [MeasureSpec("INST", T=2.0), MeasureSpec("INST", "upper", T=1.0, max_rel=2)]}[family]
    for spec in specs:
        # at most 8! orderings per ranking: the vectorised brute force handles it
        ref = brute_force(runs, aligned, L, spec)[:, :, 0]
        got = aligned.evaluate([spec], L)[spec].reshape(aligned.n_segments, -1)
        np.testing.assert_allclose(got, ref, atol=1e-10, rtol=0, err_msg=str(spec))


SPECS_RANK_ORDER = [
    MeasureSpec("ERR"), MeasureSpec("ERR", cutoff=3), MeasureSpec("ERR", cutoff=4, judged_only=True),
    MeasureSpec("IPrec", recall=0.5), MeasureSpec("IPrec", recall=0.2, rel=2),
    MeasureSpec("IPrec", recall=0.7, judged_only=True), MeasureSpec("IPrec", recall=0.0),
]


@pytest.mark.slow   # every ordering of every tie group, as its siblings above (the hand case below stays quick)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 100_000))
def test_err_and_iprec_every_mode_equals_brute_force(seed):
    """ERR and IPrec (expected by enumeration) on the small collections and on fewer, longer tied
    groups (up to 8 documents), with a second label version and condensed lists."""
    for kw in ({}, dict(n_runs=1, depth=8, n_docs=14, n_scores=2)):
        runs, qrels, rng = make_collection(seed, **kw)
        aligned = {m: AlignedRuns.build(runs, qrels, ties=m) for m in MODES}
        L = label_versions(aligned["expected"], rng)
        out = {m: aligned[m].evaluate(SPECS_RANK_ORDER, L) for m in MODES}
        for spec in SPECS_RANK_ORDER:
            ref = brute_force(runs, aligned["expected"], L, spec)
            for mode, col in (("expected", 0), ("pessimistic", 1), ("optimistic", 2)):
                got = out[mode][spec].reshape(aligned[mode].n_segments, -1)
                np.testing.assert_allclose(got, ref[:, :, col], atol=1e-12, rtol=0, err_msg=f"{mode} {spec} {kw}")


def test_two_tied_documents_one_relevant_err_and_iprec():
    """Two tied documents, one of label 1: ERR is 1/16 with it first and 1/32 second (expected
    3/64; ERR@1: 1/16 or 0), IPrec@0.5 (R = 1) is 1 or 1/2 (expected 3/4).  A third tied document,
    unjudged, puts the relevant one at rank 1, 2 or 3 with chance 1/3 each; the condensed list
    drops it again."""
    run = pd.DataFrame({"qid": "1", "docno": ["a", "b"], "score": 1.0})
    qrels = pd.DataFrame({"qid": "1", "docno": ["a", "b"], "label": [1.0, 0.0]})
    want = {MeasureSpec("ERR"): (3 / 64, 1 / 16, 1 / 32), MeasureSpec("ERR", cutoff=1): (1 / 32, 1 / 16, 0.0),
            MeasureSpec("IPrec", recall=0.5): (3 / 4, 1.0, 1 / 2)}
    for spec, values in want.items():
        for mode, v in zip(MODES, values):
            assert one({"r": run}, qrels, spec, mode) == pytest.approx(v, abs=1e-15), (spec, mode)
    run3 = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "score": 1.0})
    h3 = 1 + 1 / 2 + 1 / 3
    for spec, v in ((MeasureSpec("ERR"), h3 / 3 / 16), (MeasureSpec("ERR", judged_only=True), 3 / 64),
                    (MeasureSpec("IPrec", recall=0.5), h3 / 3),
                    (MeasureSpec("IPrec", recall=0.5, judged_only=True), 3 / 4)):
        assert one({"r": run3}, qrels, spec, "expected") == pytest.approx(v, abs=1e-15), spec


@pytest.mark.parametrize("spec", [MeasureSpec("ERR", cutoff=20), MeasureSpec("IPrec", recall=0.5)])
def test_expected_err_and_iprec_refuse_too_many_orderings(spec):
    docs = [f"d{i:02d}" for i in range(30)]
    run = pd.DataFrame({"qid": "1", "docno": docs, "score": 1.0})
    qrels = pd.DataFrame({"qid": "1", "docno": docs, "label": np.arange(30) % 2.0})   # C(30, 15) orderings
    with pytest.raises(InputError, match="MAX_ARRANGEMENTS = 10,000") as exc:
        one({"sys": run}, qrels, spec, "expected")
    assert f"for {spec.family}:" in str(exc.value) and "'sys'" in str(exc.value) and "qid '1'" in str(exc.value)
    # the bounds have no such limit
    assert one({"sys": run}, qrels, spec, "optimistic") > one({"sys": run}, qrels, spec, "pessimistic")


ALL_SPECS = SPECS_BINARY + SPECS_GRADED + [MeasureSpec("RBP", "projected", p=0.5, max_rel=2),
                                           MeasureSpec("INST", T=3.0, tail="exact"),
                                           MeasureSpec("INST", "upper", T=1.0, max_rel=2, tail="exact"),
                                           *SPECS_RANK_ORDER]


def test_without_ties_every_mode_gives_the_trec_eval_value():
    runs, qrels = random_collection(3, n_runs=3, n_topics=4, depth=15)   # continuous scores: no ties
    base = AlignedRuns.build(runs, qrels, ties="trec_eval")
    L = np.column_stack([base.table.labels, np.where(np.arange(len(base.table)) % 3 == 0, np.nan, base.table.labels)])
    ref = base.evaluate(ALL_SPECS, L)
    for mode in MODES:
        a = AlignedRuns.build(runs, qrels, ties=mode)
        assert (a.group_end - a.group_start == 1).all()
        got = a.evaluate(ALL_SPECS, L)
        for spec in ALL_SPECS:
            np.testing.assert_allclose(got[spec], ref[spec], atol=1e-12, rtol=0, err_msg=f"{mode} {spec}")


def test_singleton_groups_give_the_policy_value_even_with_ties():
    """Built with ties='trec_eval' every group is one position: every mode is trec_eval's value."""
    runs, qrels = random_collection(5, tie_decimals=0)
    a = AlignedRuns.build(runs, qrels, ties="trec_eval")
    L = a.label_matrix()
    ref = a.evaluate(ALL_SPECS, L)
    for mode in MODES:
        for spec in ALL_SPECS:
            got = evaluate_tied(a, spec, L, mode).reshape(ref[spec].shape)
            np.testing.assert_allclose(got, ref[spec], atol=1e-12, rtol=0, err_msg=f"{mode} {spec}")


def test_linear_expected_equals_the_engine_mean_weights():
    runs, qrels = random_collection(7, tie_decimals=0)
    a = AlignedRuns.build(runs, qrels, ties="expected")
    L = a.label_matrix()
    for spec in [MeasureSpec("RBP", c, p=0.8) for c in ("value", "residual", "upper", "projected")] + [
            MeasureSpec("nDCG", cutoff=5), MeasureSpec("P", cutoff=3), MeasureSpec("INSQ", "residual", T=2.0)]:
        ref = a.evaluate([spec], L)[spec].reshape(a.n_segments, -1)
        np.testing.assert_allclose(evaluate_tied(a, spec, L, "expected"), ref, atol=1e-13, rtol=0)


@pytest.mark.parametrize("seed", [11, 12])
def test_pessimistic_expected_optimistic_are_ordered(seed):
    runs, qrels = random_collection(seed, n_runs=4, n_topics=5, depth=12, tie_decimals=0)
    res = {m: AlignedRuns.build(runs, qrels, ties=m).evaluate(ALL_SPECS) for m in MODES}
    n_wide = 0
    for spec in ALL_SPECS:
        if spec.component in ("residual", "projected"):
            continue   # a difference or ratio of bounds need not be ordered
        if spec.component == "upper" and spec.max_rel is not None:
            continue
        lo, ex, hi = res["pessimistic"][spec], res["expected"][spec], res["optimistic"][spec]
        assert (lo <= ex + 1e-12).all() and (ex <= hi + 1e-12).all(), spec
        n_wide += int((hi - lo > 1e-9).sum())
    assert n_wide > 0  # the ties matter somewhere


def test_expected_inst_refuses_too_many_orderings():
    docs = [f"d{i:02d}" for i in range(30)]
    run = pd.DataFrame({"qid": "1", "docno": docs, "score": 1.0})
    qrels = pd.DataFrame({"qid": "1", "docno": docs, "label": np.arange(30) % 2.0})   # C(30, 15) orderings
    a = AlignedRuns.build({"sys": run}, qrels, ties="expected")
    with pytest.raises(InputError, match="INST_MAX_ORDERINGS") as exc:
        a.evaluate([MeasureSpec("INST", T=2.0)])
    assert "'sys'" in str(exc.value) and "qid '1'" in str(exc.value)
    assert math.comb(30, 15) > INST_MAX_ORDERINGS
    # the bounds and the closed forms have no such limit
    out = AlignedRuns.build({"sys": run}, qrels, ties="optimistic").evaluate([MeasureSpec("INST", T=2.0)])
    assert out[MeasureSpec("INST", T=2.0)][0, 0, 0] > 0
    ap = a.evaluate([MeasureSpec("AP")])[MeasureSpec("AP")][0, 0, 0]
    assert ap == pytest.approx(expected_ap(np.arange(30) % 2, [1] * 30, 15))


def test_one_group_ap_has_the_closed_form_value():
    """A single group of l documents, r relevant, R = r: E[AP] = (1/l) sum_j (1 + j (r-1)/(l-1)) / (j+1)."""
    l, r = 200, 37
    docs = [f"d{i:03d}" for i in range(l)]
    run = pd.DataFrame({"qid": "1", "docno": docs, "score": 0.5})
    qrels = pd.DataFrame({"qid": "1", "docno": docs[:r], "label": 1.0})
    got = one({"s": run}, qrels, MeasureSpec("AP"), "expected")
    j = np.arange(l)
    assert got == pytest.approx(np.sum((1 + j * (r - 1) / (l - 1)) / (j + 1)) / l, rel=1e-12)
    # E[RR] for the same group: sum_j C(l-j-1, r-1)/C(l, r) / (j+1), in exact rationals
    from fractions import Fraction
    rr = sum(Fraction(math.comb(l - jj - 1, r - 1), math.comb(l, r)) / (jj + 1) for jj in range(l - r + 1))
    assert one({"s": run}, qrels, MeasureSpec("RR"), "expected") == pytest.approx(float(rr), rel=1e-11)


def test_bad_arguments():
    runs, qrels = t31()
    a = AlignedRuns.build(runs, qrels, ties="expected")
    with pytest.raises(InputError, match="mode"):
        evaluate_tied(a, MeasureSpec("AP"), a.label_matrix(), "average")
    with pytest.raises(InputError, match="shape"):
        evaluate_tied(a, MeasureSpec("AP"), np.zeros((3, 1)), "expected")
    with pytest.raises(InputError, match="n_relevant"):
        expected_ap([1, 0], [1, 1], 0)
    with pytest.raises(InputError, match="consecutive"):
        expected_ap([1, 0, 1], [1, 2, 1], 2)


# ---------------------------------------------------------------------------------------------
# the command line: pyterrier-noise eval --ties expected | optimistic | pessimistic

CLI_MEASURES = ["AP", "RR", "RBP(p=0.8)", "nDCG@10", "P@5", "INST(T=2)", "INSQ(T=2)", "AP@5"]


@pytest.mark.parametrize("mode", MODES)
def test_cli_eval_with_tie_modes(tmp_path, mode):
    from pyterrier_noise.cli import main
    runs, qrels = random_collection(21, n_runs=2, n_topics=3, depth=12, tie_decimals=0, grades=2)
    write_trec_qrels(qrels, tmp_path / "qrels.txt")
    for name, run in runs.items():
        write_trec_run(run, tmp_path / f"{name}.run")
    buf = io.StringIO()
    with redirect_stdout(buf):
        status = main(["eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run0.run"), str(tmp_path / "run1.run"),
                       *[x for m in CLI_MEASURES for x in ("-m", m)], "--ties", mode, "--format", "tsv",
                       "--per-query"])
    assert status == 0
    got = pd.read_csv(io.StringIO(buf.getvalue()), sep="\t", dtype={"qid": str})
    ref = evaluate({f"{n}.run": r for n, r in runs.items()}, qrels, CLI_MEASURES, ties=mode, perquery=True)
    assert len(got) == len(ref) == 2 * 3 * len(CLI_MEASURES)
    merged = got.merge(ref, left_on=["run", "qid", "measure"], right_on=["name", "qid", "measure"])
    assert len(merged) == len(got)
    np.testing.assert_allclose(merged["value_x"], merged["value_y"], atol=1e-12)


def test_cli_modes_bracket_the_expected_value(tmp_path):
    from pyterrier_noise.cli import main
    runs, qrels = random_collection(22, n_runs=1, n_topics=4, depth=20, tie_decimals=0, grades=2)
    write_trec_qrels(qrels, tmp_path / "q.txt")
    write_trec_run(runs["run0"], tmp_path / "r.run")
    means = {}
    for mode in MODES:
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert main(["eval", str(tmp_path / "q.txt"), str(tmp_path / "r.run"), "-m", "AP", "--ties", mode,
                         "--format", "json"]) == 0
        import json
        means[mode] = json.loads(buf.getvalue())[0]["value"]
    assert means["pessimistic"] < means["expected"] < means["optimistic"]


def test_inst_components_share_bounds_and_follow_label_changes():
    runs, qrels, rng = make_collection(4, n_runs=2, n_topics=2, depth=7)
    a = AlignedRuns.build(runs, qrels, ties="expected")
    L = label_versions(a, rng)
    comps = {c: MeasureSpec("INST", c, T=2.0) for c in ("value", "residual", "upper")}
    for mode in MODES:
        v = {c: evaluate_tied(a, s, L, mode) for c, s in comps.items()}
        np.testing.assert_allclose(v["upper"] - v["value"], v["residual"], atol=1e-15)
    before = evaluate_tied(a, comps["value"], L, "expected")
    L[:, 0] = np.where(np.isnan(L[:, 0]), np.nan, 1.0)        # the same array, changed in place
    after = evaluate_tied(a, comps["value"], L, "expected")
    ref = brute_force(runs, a, L, comps["value"])[:, :, 0]
    np.testing.assert_allclose(after, ref, atol=1e-10)
    assert not np.allclose(before, after)
