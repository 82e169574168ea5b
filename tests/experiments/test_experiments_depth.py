"""Tests for pyterrier_noise.experiments.depth: Depth@k reduction and the pool-depth experiment
(Yang 2019 thesis Sec. 4.6-4.9).

Reference values: reduced-qrels scores against pytrec_eval (through ir_measures); the Depth@k pools
against judges.PoolDepthReduction; Table 4.5 = (TP+FP)/N.
"""
from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from pyterrier_noise import AlignedRuns, MeasureSpec
from pyterrier_noise import InputError
from pyterrier_noise.judges import PoolDepthReduction
from pyterrier_noise.experiments import (depth_experiment, depth_labels, multiplicity_table, pool_entry_depth,
                                       pool_multiplicity)


pytestmark = pytest.mark.collection(n_topics=12, n_systems=14, n_docs_per_topic=200, depth=60, pool_depth=8, seed=7)


@pytest.fixture(scope="module")
def aligned(coll):
    return AlignedRuns.build(coll.runs, coll.qrels)




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
    fig = experiment.plot_movement(tmp_path / "movement.png")
    assert (tmp_path / "movement.png").exists()
    # what the figure shows: one panel per measure, one scatter per depth, labelled axes, tau in the title
    assert len(fig.axes) == len(experiment.measures)
    for ax, m in zip(fig.axes, experiment.measures):
        assert len(ax.collections) == len(experiment.depths)
        assert ax.get_xlabel() == "RBP residual (p=0.98) at depth k"
        assert ax.get_ylabel() == "score(k) - score(full)"
        tau = experiment.movement.set_index(["measure", "depth"]).loc[(m, "all"), "tau_diff"]
        assert ax.get_title() == f"{m}: tau_b = {tau:.2f}"
        pts = np.concatenate([c.get_offsets() for c in ax.collections])
        assert len(pts) == len(experiment.run_names) * len(experiment.topics) * len(experiment.depths)
    disc = experiment.plot_discrimination()
    assert len(disc.axes) == 2
    assert len(disc.axes[0].get_lines()) == 2 * len(experiment.measures)     # a curve and its reference line
    np.testing.assert_allclose(disc.axes[0].get_lines()[0].get_ydata(),
                               100 * experiment.discrimination.iloc[0, :-1].to_numpy(dtype=float))
    assert len(experiment.plot_consistency().axes) == len(experiment.measures)
    with pytest.raises(InputError, match="p must be"):
        depth_experiment(aligned, depths=(1, 2), p=1.0)
    with pytest.raises(InputError, match="depths is empty"):
        depth_experiment(aligned, depths=())
    with pytest.raises(InputError, match="distinct"):
        depth_experiment(aligned, depths=(2, 2), measures=("AP", "AP"))




def test_depth_experiment_residual_persistence_is_p(aligned):
    kw = dict(depths=(2, 8), measures=("AP",))
    assert depth_experiment(aligned, p=0.9, **kw).residual_p == 0.9
    assert depth_experiment(aligned, **kw).residual_p == 0.98      # the thesis's default
    with pytest.raises(TypeError):          # residual_p= was its name before the first release
        depth_experiment(aligned, residual_p=0.9, **kw)


# ---------------------------------------------------------------------------------------------
# the thesis's reference: runs judged to depth 50 and their depth-50 qrels (Yang 2019, Tables 4.5-4.8)

def test_reference_depth_brute_force(coll):
    """reference_depth=R scores only the runs judged to depth R on every topic, pools them and
    compares with the qrels reduced to their depth-R pool; checked by brute force: pools built by
    looping over runs and topics, scores from pytrec_eval (through ir_measures), the reference
    discrimination ratio from scipy's paired t-test."""
    R, depths = 6, (2, 4)
    qrels = coll.qrels.copy()
    # drop the judgment of one document at rank 4 of one run: that run (and any run ranking that
    # document in its top 6) is no longer judged to depth 6 on every topic
    first = list(coll.runs)[0]
    r0 = coll.runs[first].sort_values(["qid", "score", "docno"], ascending=[True, False, False])
    q0 = sorted(r0["qid"].unique())[0]
    d0 = r0[r0["qid"] == q0]["docno"].iloc[3]
    qrels = qrels[~((qrels["qid"] == q0) & (qrels["docno"] == d0))]
    judged = set(zip(qrels["qid"], qrels["docno"]))

    ranked = {n: r.sort_values(["qid", "score", "docno"], ascending=[True, False, False])
              for n, r in coll.runs.items()}
    topics = sorted(qrels["qid"].unique())
    deep = [n for n, r in ranked.items()
            if all(len(g) >= R and all((q, d) in judged for d in g["docno"].iloc[:R])
                   for q, g in ((q, r[r["qid"] == q]) for q in topics))]
    assert first not in deep and len(deep) >= 2

    def reduced(k):
        pool = {(q, d) for n in deep for q, g in ranked[n].groupby("qid") for d in g["docno"].iloc[:k]}
        keep = [(q, d) in pool for q, d in zip(qrels["qid"], qrels["docno"])]
        return qrels[keep]

    with pytest.warns(UserWarning, match=r"runs are not judged to depth 6 on every topic and are left out"):
        e = depth_experiment(coll.runs, qrels, depths=depths, measures=("AP", "nDCG"), reference_depth=R)
    assert e.versions == ["k=2", "k=4", "k=6"] and e.reference_depth == R
    assert sorted(e.run_names) == sorted(deep)
    for v, k in enumerate(list(depths) + [R]):
        qr = reduced(k).rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        assert e.pool["judged"].iloc[v] == len(qr)
        for i, name in enumerate(e.run_names):
            run = coll.runs[name].rename(columns={"qid": "query_id", "docno": "doc_id"})
            ref = {(str(x.measure), x.query_id): x.value
                   for x in ir_measures.iter_calc([ir_measures.AP, ir_measures.nDCG], qr, run)}
            for t, q in enumerate(e.topics):
                assert e.scores["AP"][i, t, v] == pytest.approx(ref.get(("AP", q), 0.0), abs=1e-9)
                assert e.scores["nDCG"][i, t, v] == pytest.approx(ref.get(("nDCG", q), 0.0), abs=1e-9)
    # reference column of Table 4.5: share of deep-run pairs with paired t-test p < 0.05 on qrels_R
    s = e.scores["AP"][:, :, -1]
    n = len(deep)
    sig = [st.ttest_rel(s[i], s[j]).pvalue < 0.05 for i in range(n) for j in range(i + 1, n)]
    assert e.discrimination.loc["AP", "k=6"] == pytest.approx(np.mean(sig))
    a = e.agreement[e.agreement["measure"] == "AP"]
    assert (a[["TP", "FP", "FN", "TN"]].sum(axis=1) == n * (n - 1) // 2).all()
    with pytest.raises(InputError, match="below reference_depth"):
        depth_experiment(coll.runs, qrels, depths=(2, 6), reference_depth=R)
