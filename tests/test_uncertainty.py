"""Tests for pyterrier_noise.experiments.uncertainty: Yang (2019) thesis Ch. 4 -- matched RBP residuals,
exact AP bounds, Depth@k reduction and the pool-depth experiment.

Reference values: the worked AP example of thesis Sec. 4.1 (seed004b Sec. 1.2), checked against
brute force; phi matching is checked by a planted RBP reference (tau = 1 at the planted phi) and
against scipy's Kendall tau topic by topic; reduced-qrels scores against pytrec_eval (through
ir_measures); the Depth@k pools against perturbation.PoolDepthReduction; Table 4.5 = (TP+FP)/N.
"""
from __future__ import annotations

import argparse
import io
import itertools
from contextlib import redirect_stdout
from fractions import Fraction

import ir_measures
import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hst

from pyterrier_noise import AlignedRuns, MeasureSpec, evaluate
from pyterrier_noise._validation import InputError
from pyterrier_noise.judges.models import PoolDepthReduction
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.experiments import (DEPTH_GRID, MAX_UNJUDGED, add_residual_columns, ap_bounds,
                                   depth_experiment, depth_labels, match_phi, match_phi_many,
                                   multiplicity_table, plot_phi_match, pool_entry_depth,
                                   pool_multiplicity, scores_with_residuals)
from pyterrier_noise.cli.phi_match import register_cli


@pytest.fixture(scope="module")
def coll():
    return make_collection(n_topics=12, n_systems=14, n_docs_per_topic=200, depth=60, pool_depth=8, seed=7)


@pytest.fixture(scope="module")
def aligned(coll):
    return AlignedRuns.build(coll.runs, coll.qrels)


# ---------------------------------------------------------------------------------------------
# exact AP bounds

def _ap(rels, R):
    """AP of a fully judged binary ranking with R relevant documents in the collection (trec_eval)."""
    hits, total = 0, Fraction(0)
    for i, r in enumerate(rels, start=1):
        if r:
            hits += 1
            total += Fraction(hits, i)
    return total / R if R else Fraction(0)


def test_ap_bounds_thesis_example():
    # Yang (2019) Sec. 4.1: ranking 1, 0, ?, 1, ?; only these five documents; R = 2 known
    b = ap_bounds([1, 0, None, 1, None])
    assert b.current == pytest.approx(0.75)
    # completion i: bit j = j-th unjudged document (ranks 3, 5) relevant
    assert b.values[0] == pytest.approx(0.75)
    assert b.values[1] == pytest.approx(float(Fraction(29, 36)))      # (1 + 2/3 + 3/4)/3 = 0.8056
    assert b.values[2] == pytest.approx(0.70)                         # (1 + 2/4 + 3/5)/3
    assert b.values[3] == pytest.approx(float(Fraction(193, 240)))    # (1 + 2/3 + 3/4 + 4/5)/4 = 0.8042
    assert [round(v, 2) for v in b.values[1:]] == [0.81, 0.70, 0.80]  # as the issue quotes them
    assert b.low == pytest.approx(0.70) and b.high == pytest.approx(float(Fraction(29, 36)))
    assert b.low_completion.tolist() == [False, True]
    assert b.high_completion.tolist() == [True, False]
    assert b.unjudged_ranks.tolist() == [3, 5]
    # NaN marks unjudged as well as None
    assert ap_bounds([1, 0, np.nan, 1, np.nan]).values == pytest.approx(b.values)


def test_ap_bounds_outside_documents_only_lower_the_minimum():
    b = ap_bounds([1, 0, None, 1, None], n_unjudged_outside=3)
    assert b.high == pytest.approx(float(Fraction(29, 36)))
    # minimum: every unjudged document relevant, in and outside the ranking
    brute = min(float(_ap([1, 0, a, 1, c], 2 + a + c + 3)) for a in (0, 1) for c in (0, 1))
    assert b.low == pytest.approx(brute)


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.sampled_from([0, 1, 2, None]), min_size=1, max_size=12),
       hst.integers(0, 3), hst.integers(0, 2))
def test_ap_bounds_match_brute_force(labels, extra_R, outside):
    labels = labels[:]
    unj = [i for i, v in enumerate(labels) if v is None]
    if len(unj) > 8:
        return
    known = sum(1 for v in labels if v is not None and v >= 1)
    R = known + extra_R
    b = ap_bounds(labels, n_relevant=R, n_unjudged_outside=outside)
    values, lows = [], []
    for bits in itertools.product([0, 1], repeat=len(unj)):          # loop over completions (reference)
        rels = [(v is not None and v >= 1) for v in labels]
        for pos, bit in zip(unj, reversed(bits)):                     # itertools: last bit varies fastest
            rels[pos] = bool(bit)
        k = sum(bits)
        values.append(float(_ap(rels, R + k)))
        lows.append(float(_ap(rels, R + k + outside)))
    # (the order of completions is checked in test_ap_bounds_completion_order)
    assert np.sort(b.values) == pytest.approx(np.sort(values))
    assert b.high == pytest.approx(max(values))
    assert b.low == pytest.approx(min(lows))
    assert b.current == pytest.approx(float(_ap([(v is not None and v >= 1) for v in labels], R)))
    assert b.values[0] == pytest.approx(b.current)           # completion 0: every unjudged non-relevant
    if outside == 0:
        assert b.low - 1e-12 <= b.current <= b.high + 1e-12


def test_ap_bounds_completion_order():
    b = ap_bounds([None, 1, None, None])
    for i in range(8):
        rels = [bool(i & 1), True, bool(i & 2), bool(i & 4)]
        assert b.values[i] == pytest.approx(float(_ap(rels, sum(rels))))


def test_ap_bounds_refuses_too_many_unjudged():
    with pytest.raises(InputError, match=r"2\^21 completions"):
        ap_bounds([None] * (MAX_UNJUDGED + 1) + [1])
    with pytest.raises(InputError, match="more than the limit of 3"):
        ap_bounds([1, None, None, None, None], max_unjudged=3)
    assert ap_bounds([1, None, None, None], max_unjudged=3).high == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(labels=["x", 1]), r"labels\[0\]"),
    (dict(labels=[]), "non-empty"),
    (dict(labels=[1, np.inf]), r"labels\[1\] is infinite"),
    (dict(labels=[1, 1, 0], n_relevant=1), "n_relevant must be an integer >= 2"),
    (dict(labels=[1, None], n_unjudged_outside=-1), "n_unjudged_outside"),
    (dict(labels=[1, None], max_unjudged=0), "max_unjudged"),
])
def test_ap_bounds_bad_input(kwargs, message):
    labels = kwargs.pop("labels")
    with pytest.raises(InputError, match=message):
        ap_bounds(labels, **kwargs)


def test_ap_bounds_nothing_relevant():
    b = ap_bounds([0, None, 0])
    assert b.current == 0.0 and b.low == 0.0 and b.high == pytest.approx(0.5)


# ---------------------------------------------------------------------------------------------
# phi matching

@pytest.mark.parametrize("planted", [0.8, 0.95])
def test_match_phi_recovers_planted_phi(aligned, planted):
    m = match_phi(aligned, measure=MeasureSpec("RBP", p=planted), grid=DEPTH_GRID)
    assert m.phi == planted and m.corr == pytest.approx(1.0)
    others = m.curve[m.curve["phi"] != planted]["tau"]
    assert (others < 1.0).all()                       # the planted phi is the only perfect match
    assert m.depth == pytest.approx(1 / (1 - planted))
    # the same with ir_measures syntax, and with RBO (identical orderings: RBO = 1)
    assert match_phi(aligned, measure=f"RBP(p={planted})", grid=DEPTH_GRID).phi == planted
    r = match_phi(aligned, measure=f"RBP(p={planted})", grid=DEPTH_GRID, correlation="rbo")
    assert r.phi == planted and r.corr == pytest.approx(1.0) and "rbo" in r.curve


def test_match_phi_curve_and_per_topic_against_scipy(coll, aligned):
    grid = [0.5, 0.7, 0.9, 0.95, 0.99]
    m = match_phi(aligned, measure="AP", grid=grid, per_topic=True)
    specs = [MeasureSpec("AP")] + [MeasureSpec("RBP", p=p) for p in grid] + \
        [MeasureSpec("RBP", "residual", p=p) for p in grid]
    out = aligned.evaluate(specs)
    ap = out[specs[0]][:, :, 0]
    rbp = [out[s][:, :, 0] for s in specs[1:6]]
    res = [out[s][:, :, 0] for s in specs[6:]]
    taus = [st.kendalltau(ap.mean(1), r.mean(1)).statistic for r in rbp]
    assert m.curve["tau"].to_numpy() == pytest.approx(taus)
    assert m.curve["mean_residual"].to_numpy() == pytest.approx([r.mean() for r in res])
    first_best = grid[int(np.argmax(taus))]
    assert m.phi == first_best and m.corr == pytest.approx(max(taus))
    # per topic: a loop over topics and phi with scipy (the reference)
    for t, qid in enumerate(aligned.topics):
        ts = np.array([st.kendalltau(ap[:, t], r[:, t]).statistic for r in rbp])
        row = m.per_topic.iloc[t]
        assert row["qid"] == qid
        if np.isnan(ts).all():
            assert np.isnan(row["phi"])
            continue
        k = int(np.nanargmax(ts))
        assert row["phi"] == grid[k] and row["corr"] == pytest.approx(ts[k])
        assert row["mean_residual"] == pytest.approx(res[k][:, t].mean())
    R = coll.qrels.assign(rel=coll.qrels["label"] >= 1).groupby("qid")["rel"].sum()
    assert m.per_topic["R"].tolist() == [int(R[q]) for q in aligned.topics]
    s = m.summary
    ok = m.per_topic.dropna(subset=["phi"])
    assert s["mean_phi"] == pytest.approx(ok["phi"].mean())
    assert s["tau_R_phi"] == pytest.approx(st.kendalltau(ok["R"], ok["phi"]).statistic)
    assert s["below_0.8"] + s["0.8_to_0.9"] + s["at_least_0.9"] + s["n_undefined"] == len(aligned.topics)


def test_match_phi_many_one_alignment_and_reference_frames(coll, aligned):
    ms = match_phi_many(aligned, measures=["AP", "nDCG", "RR"], grid=DEPTH_GRID)
    assert list(ms) == ["AP", "nDCG", "RR"]
    # a reference given as a pt.Experiment(perquery=True)-style frame gives the same match
    pq = evaluate(coll.runs, coll.qrels, ["AP"], perquery=True)
    m = match_phi(aligned, measure=pq[["name", "qid", "measure", "value"]], grid=DEPTH_GRID)
    assert m.measure == "AP" and m.phi == ms["AP"].phi and m.corr == pytest.approx(ms["AP"].corr)
    assert "matched phi" in m.to_text()


def test_match_phi_is_deterministic(coll):
    a = match_phi(coll.runs, coll.qrels, "nDCG", per_topic=True, correlation="rbo")
    b = match_phi(coll.runs, coll.qrels, "nDCG", per_topic=True, correlation="rbo")
    pd.testing.assert_frame_equal(a.curve, b.curve)
    pd.testing.assert_frame_equal(a.per_topic, b.per_topic)
    assert a.phi == b.phi


@pytest.mark.parametrize("grid, message", [
    ([], "grid is empty"),
    ([0.5, 1.0], "index 1"),
    ([0.0, 0.5], "index 0"),
    ([0.5, float("nan")], "strictly between 0 and 1"),
    ([0.9, 0.9], "more than once"),
])
def test_match_phi_bad_grid(aligned, grid, message):
    with pytest.raises(InputError, match=message):
        match_phi(aligned, measure="AP", grid=grid)


def test_match_phi_bad_input(coll, aligned):
    with pytest.raises(InputError, match="correlation"):
        match_phi(aligned, measure="AP", correlation="pearson")
    with pytest.raises(InputError, match="rbo_p"):
        match_phi(aligned, measure="AP", rbo_p=1.0)
    with pytest.raises(InputError, match="at least 2 runs"):
        match_phi({"only": coll.runs["run01"]}, coll.qrels, "AP")
    with pytest.raises(InputError, match="qrels are required"):
        match_phi(coll.runs, None, "AP")
    with pytest.raises(InputError, match="unknown measure"):
        match_phi(aligned, measure="NoSuchMeasure")
    with pytest.raises(InputError, match="one measure"):
        match_phi(aligned, measure=["AP", "nDCG"])
    frame = pd.DataFrame({"name": ["run01"], "qid": ["1"], "value": [0.5]})
    with pytest.raises(InputError, match="no value for name="):
        match_phi(aligned, measure=frame)


def test_plot_phi_match_writes_png(aligned, tmp_path):
    ms = match_phi_many(aligned, measures=["AP", "nDCG"], grid=DEPTH_GRID, per_topic=True)
    fig = plot_phi_match(ms, tmp_path / "phi.png")
    assert (tmp_path / "phi.png").stat().st_size > 1000
    assert len(fig.axes) >= 3
    with pytest.raises(InputError, match="does not exist"):
        ms["AP"].plot(tmp_path / "missing" / "phi.png")


# ---------------------------------------------------------------------------------------------
# scores with the matched residual

def test_scores_with_residuals_matches_engine_measures(coll, aligned):
    tab = scores_with_residuals(aligned, measures=["AP", "nDCG"], p=0.98, perquery=True)
    ref = evaluate(coll.runs, coll.qrels, ["AP", "nDCG", "RBPResidual(p=0.98)", "RBP(p=0.98)"], perquery=True)
    ref = ref.pivot_table(index=["name", "qid"], columns="measure", values="value")
    for m in ("AP", "nDCG"):
        sub = tab[tab["measure"] == m].set_index(["name", "qid"])
        r = ref.reindex(sub.index)
        assert sub["value"].to_numpy() == pytest.approx(r[m].to_numpy())
        assert sub["residual"].to_numpy() == pytest.approx(r["RBPResidual(p=0.98)"].to_numpy())
        assert sub["base"].to_numpy() == pytest.approx(r["RBP(p=0.98)"].to_numpy())
    agg = scores_with_residuals(aligned, measures=["AP"], p=0.98)
    per = tab[tab["measure"] == "AP"].groupby("name", sort=False)["residual"].mean()
    assert agg.set_index("name")["residual"].to_numpy() == pytest.approx(per.to_numpy())


def test_scores_with_residuals_uses_matched_phi(aligned):
    tab = scores_with_residuals(aligned, measures=["AP", "RR"], grid=DEPTH_GRID)
    ms = match_phi_many(aligned, measures=["AP", "RR"], grid=DEPTH_GRID)
    assert tab.attrs["phi"] == {"AP": ms["AP"].phi, "RR": ms["RR"].phi}
    for m in ("AP", "RR"):
        assert (tab[tab["measure"] == m]["phi"] == ms[m].phi).all()
    both = scores_with_residuals(aligned, measures=["AP", "RR"], p={"AP": 0.9, "RR": 0.5})
    assert both.attrs["phi"] == {"AP": 0.9, "RR": 0.5}
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        scores_with_residuals(aligned, measures=["AP"], p=1.5)
    with pytest.raises(InputError, match="no persistence for measure"):
        scores_with_residuals(aligned, measures=["AP", "RR"], p={"AP": 0.9})


def test_residual_columns_on_pt_experiment(coll):
    pt = pytest.importorskip("pyterrier")
    from ir_measures import AP, nDCG
    names = list(coll.runs)[:5]
    runs = {n: coll.runs[n] for n in names}
    topics = coll.get_topics()
    m = match_phi(runs, coll.qrels, "AP", grid=DEPTH_GRID)
    exp = pt.Experiment([runs[n] for n in names], topics, coll.qrels, names=names,
                        eval_metrics=[AP, nDCG, m.residual_measure()])
    out = add_residual_columns(exp, runs, coll.qrels, p=m.phi)
    col = f"AP RBPResidual(p={m.phi:g})"
    assert list(out.columns).index(col) == list(out.columns).index("AP") + 1
    # the residual pt.Experiment computed with RBPResidual(p=phi) is the added column
    assert out[col].to_numpy() == pytest.approx(out[str(m.residual_measure())].to_numpy())
    pq = pt.Experiment([runs[n] for n in names], topics, coll.qrels, names=names, eval_metrics=[AP, nDCG],
                       perquery=True)
    out = add_residual_columns(pq, runs, coll.qrels, p=0.9)
    assert len(out) == len(pq) and (out["phi"] == 0.9).all()
    ref = scores_with_residuals(runs, coll.qrels, ["AP"], p=0.9, perquery=True).set_index(["name", "qid"])
    ap = out[out["measure"] == "AP"].set_index(["name", "qid"])
    assert ap["rbp_residual"].to_numpy() == pytest.approx(ref.reindex(ap.index)["residual"].to_numpy())
    with pytest.raises(InputError, match="is not among the runs"):
        add_residual_columns(exp, {n: runs[n] for n in names[:2]}, coll.qrels, p=0.9)


# ---------------------------------------------------------------------------------------------
# Depth@k reduction

def test_pool_entry_depth_brute_force(coll, aligned):
    entry = pool_entry_depth(aligned)
    frame = aligned.table.frame
    expected = {}
    for run in coll.runs.values():                      # reference: loop over runs and their rows
        r = run.sort_values(["qid", "score", "docno"], ascending=[True, False, False])
        r = r.assign(pos=r.groupby("qid").cumcount() + 1)
        for q, d, p in zip(r["qid"], r["docno"], r["pos"]):
            expected[(q, d)] = min(p, expected.get((q, d), np.inf))
    ref = np.array([expected.get((q, d), np.inf) for q, d in zip(frame["qid"], frame["docno"])])
    assert np.array_equal(entry, ref)


@pytest.mark.parametrize("k", [1, 3, 8, 20])
def test_depth_labels_match_pool_depth_reduction(coll, aligned, k):
    L = depth_labels(aligned, [k, 2 * k])
    for col, depth in enumerate([k, 2 * k]):
        model = PoolDepthReduction(aligned, depth).sample_labels(aligned.table, 1)[:, 0]
        assert np.array_equal(np.isnan(L[:, col]), np.isnan(model))
        assert np.array_equal(L[~np.isnan(model), col], model[~np.isnan(model)])


def test_depth_labels_with_pool_subset_and_multiplicity(coll, aligned):
    pool = list(coll.runs)[:3]
    sub = AlignedRuns.build({n: coll.runs[n] for n in pool}, aligned.table)
    assert np.array_equal(pool_entry_depth(aligned, pool), pool_entry_depth(sub))
    mult = pool_multiplicity(aligned, 5, pool)
    assert mult.max() <= 3 and np.array_equal(mult > 0, pool_entry_depth(aligned, pool) <= 5)
    table = multiplicity_table(aligned, 5)
    n_in_pool = int(((pool_multiplicity(aligned, 5) > 0) & ~np.isnan(aligned.table.labels)).sum())
    assert table.iloc[-1]["count"] == n_in_pool == table["count"].iloc[:-1].sum()
    with pytest.raises(InputError, match="not among the aligned runs"):
        pool_entry_depth(aligned, ["nope"])
    with pytest.raises(InputError, match="depths is empty"):
        depth_labels(aligned, [])
    with pytest.raises(InputError, match="positive integer"):
        depth_labels(aligned, [0, 5])
    with pytest.raises(InputError, match="distinct"):
        depth_labels(aligned, [5, 5])


def test_reduced_scores_equal_pytrec_eval(coll, aligned):
    k = 3
    L = depth_labels(aligned, [k])[:, 0]
    keep = ~np.isnan(L)
    qrels_k = aligned.table.frame.loc[keep, ["qid", "docno"]].assign(label=L[keep].astype(int))
    out = aligned.evaluate([MeasureSpec("AP"), MeasureSpec("nDCG")], L)
    qr = qrels_k.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    for r, name in enumerate(aligned.run_names[:4]):
        run = coll.runs[name].rename(columns={"qid": "query_id", "docno": "doc_id"})
        ref = {(str(x.measure), x.query_id): x.value
               for x in ir_measures.iter_calc([ir_measures.AP, ir_measures.nDCG], qr, run)}
        for t, q in enumerate(aligned.topics):
            assert out[MeasureSpec("AP")][r, t, 0] == pytest.approx(ref[("AP", q)], abs=1e-9)
            assert out[MeasureSpec("nDCG")][r, t, 0] == pytest.approx(ref[("nDCG", q)], abs=1e-9)


# ---------------------------------------------------------------------------------------------
# the depth experiment

@pytest.fixture(scope="module")
def experiment(aligned):
    return depth_experiment(aligned, depths=(1, 2, 4, 8, 16), measures=("AP", "nDCG", "RBP(p=0.98)"))


def test_depth_experiment_rbp_invariants(experiment):
    rbp = experiment.scores["RBP(p=0.98)"]
    res = experiment.residual
    # more judgments: RBP never falls, its residual never grows (thesis Table 4.7, '> 0' column)
    assert (np.diff(rbp, axis=2) >= -1e-12).all()
    assert (np.diff(res, axis=2) <= 1e-12).all()
    # and the rise is bounded by the residual at the shallower depth
    assert (rbp[:, :, -1:] - rbp[:, :, :-1] <= res[:, :, :-1] + 1e-12).all()
    mv = experiment.movement.set_index(["measure", "depth"])
    assert (mv.loc["RBP(p=0.98)", "pct_fall"] == 0).all()
    assert (mv.loc["RBP(p=0.98)", "covered"] == 1.0).all()
    total = mv["pct_rise"] + mv["pct_same"] + mv["pct_fall"]
    assert total.to_numpy() == pytest.approx(100.0)


def test_depth_experiment_tables_are_consistent(experiment, aligned):
    e = experiment
    assert e.versions == ["k=1", "k=2", "k=4", "k=8", "k=16", "full"]
    full = aligned.evaluate([MeasureSpec("AP")])[MeasureSpec("AP")][:, :, 0]
    assert e.scores["AP"][:, :, -1] == pytest.approx(full)
    for m in e.measures:
        a = e.agreement[e.agreement["measure"] == m]
        n = a[["TP", "FP", "FN", "TN"]].sum(axis=1)
        assert (n == aligned.n_runs * (aligned.n_runs - 1) // 2).all()
        # Table 4.5 is (TP + FP) / N of Table 4.6; the reference column is (TP + FN) / N
        disc = e.discrimination.loc[m]
        assert a["ratio"].to_numpy() == pytest.approx(disc.iloc[:-1].to_numpy())
        assert ((a["TP"] + a["FN"]) / n).to_numpy() == pytest.approx(disc.iloc[-1])
        c = e.consistency[e.consistency["measure"] == m]
        assert c["count"].sum() == aligned.n_runs * (aligned.n_runs - 1) // 2
    pool = e.pool
    assert (np.diff(pool["judged"]) >= 0).all() and pool["judged"].iloc[-1] == int((~np.isnan(aligned.table.labels)).sum())
    pts = e.points("AP")
    assert len(pts) == aligned.n_runs * aligned.n_topics * len(e.depths)
    assert pts["diff"].to_numpy() == pytest.approx((pts["score"] - pts["full"]).to_numpy())
    row = e.movement[(e.movement["measure"] == "AP") & (e.movement["depth"] == "all")].iloc[0]
    assert row["tau_diff"] == pytest.approx(st.kendalltau(pts["residual"], pts["diff"]).statistic)
    with pytest.raises(InputError, match="not in this experiment"):
        e.points("P@10")


def test_depth_experiment_seeded(aligned):
    kw = dict(depths=(2, 8), measures=("AP",), test="randomisation", n_resamples=500)
    a = depth_experiment(aligned, seed=5, **kw)
    b = depth_experiment(aligned, seed=5, **kw)
    pd.testing.assert_frame_equal(a.discrimination, b.discrimination)
    pd.testing.assert_frame_equal(a.agreement, b.agreement)


def test_depth_experiment_plots_and_bad_input(experiment, aligned, tmp_path):
    experiment.plot_movement(tmp_path / "movement.png")
    assert (tmp_path / "movement.png").stat().st_size > 1000
    assert len(experiment.plot_discrimination().axes) == 2
    assert len(experiment.plot_consistency().axes) == len(experiment.measures)
    with pytest.raises(InputError, match="residual_p"):
        depth_experiment(aligned, depths=(1, 2), residual_p=1.0)
    with pytest.raises(InputError, match="depths is empty"):
        depth_experiment(aligned, depths=())
    with pytest.raises(InputError, match="distinct"):
        depth_experiment(aligned, depths=(2, 2), measures=("AP", "AP"))


# ---------------------------------------------------------------------------------------------
# command line

def _write(coll, tmp_path):
    root = coll.write_trec(tmp_path / "coll")
    return str(root / "qrels.txt"), str(root / "runs")


def test_cli_phi_match(coll, tmp_path):
    from pyterrier_noise.cli import main
    qrels, runs = _write(coll, tmp_path)
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["phi-match", qrels, runs, "-m", "AP", "-m", "nDCG", "--grid", "depths", "--format", "tsv",
                     "--plot", str(tmp_path / "phi.png")]) == 0
    tsv = pd.read_csv(io.StringIO(buf.getvalue()), sep="\t", dtype={"measure": str})
    ms = match_phi_many(coll.runs, coll.qrels, ["AP", "nDCG"], grid=DEPTH_GRID)
    for m in ("AP", "nDCG"):
        rows = tsv[tsv["measure"] == m]
        assert rows["tau"].to_numpy() == pytest.approx(ms[m].curve["tau"].to_numpy())
        assert rows.loc[rows["matched"] == 1, "phi"].tolist() == [ms[m].phi]
    assert (tmp_path / "phi.png").exists()
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["phi-match", qrels, runs, "-m", "AP", "--per-topic", "--grid", "0.5:0.9:0.1"]) == 0
    text = buf.getvalue()
    assert "matched phi" in text and "per topic" in text and "tau_b(R, phi)" in text


def test_cli_phi_match_errors_and_help(coll, tmp_path, capsys):
    from pyterrier_noise.cli import main
    qrels, runs = _write(coll, tmp_path)
    assert main(["phi-match", qrels, runs, "-m", "AP", "--grid", "0.5,1.2"]) == 2
    assert "strictly between 0 and 1" in capsys.readouterr().err
    assert main(["phi-match", qrels, runs, "-m", "AP", "--grid", "abc"]) == 2
    assert "--grid" in capsys.readouterr().err
    # register_cli on a parser of our own
    parser = argparse.ArgumentParser(prog="x")
    register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["phi-match", qrels, runs, "-m", "AP", "--per-topic", "--format", "tsv"])
    assert args.per_topic and args.measures == ["AP"] and callable(args.handler)
    with pytest.raises(SystemExit):
        parser.parse_args(["phi-match", "--help"])
    assert "examples:" in capsys.readouterr().out
