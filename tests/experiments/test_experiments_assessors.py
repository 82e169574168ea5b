"""Fidelity of simulated assessors (Webber, Chandar and Carterette 2012, Tables 5-7).

References: every replicate's qrels written out and scored by pytrec_eval (through ir_measures);
RMSE and Kendall's tau_b by hand / scipy; paired t-tests by scipy, topic by topic of each
replicate's bootstrap sample (brute force)."""
from __future__ import annotations


import ir_measures
import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from pyterrier_noise.judges import PerturbationWarning
from pyterrier_noise import AlignedRuns, InputError
from pyterrier_noise.engine import JudgmentTable
from pyterrier_noise.experiments import assessor_significance, simulation_fidelity
from pyterrier_noise.judges import FlipRateModel, MetarankLogisticModel, RandomFlips
from pyterrier_noise.synthetic import make_collection


@pytest.fixture(scope="module")
def setup():
    c = make_collection(n_topics=8, n_systems=6, n_docs_per_topic=120, depth=40, pool_depth=20, seed=11)
    # the "alternative assessor": random flips of the original labels (a known, different judge)
    alt = RandomFlips(0.7, 0.05, seed=3)(c.qrels)
    with pytest.warns(PerturbationWarning, match=r"logistic model\(s\) are improper"):   # labels that all agree
        model = MetarankLogisticModel(c.runs, depth=40).fit(c.qrels, alt)
    return c, alt, model


def _map(runs, qrels, names):
    """Per-topic AP of each run with pytrec_eval: dict name -> Series over qid (unscored topics 0)."""
    qr = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    qr = qr.assign(relevance=qr["relevance"].astype(int))
    out = {}
    for n in names:
        run = runs[n].rename(columns={"qid": "query_id", "docno": "doc_id"})
        out[n] = pd.Series({x.query_id: x.value for x in ir_measures.iter_calc([ir_measures.AP], qr, run)})
    return out


def _replicate_qrels(model, qrels, n, seed):
    table = JudgmentTable.from_qrels(qrels)
    L = model.sample_labels(table, n, seed=seed)
    f = table.frame[["qid", "docno"]]
    return [f.assign(label=L[:, r])[~np.isnan(L[:, r])] for r in range(n)], table.topics


def test_simulation_fidelity_brute_force(setup):
    c, alt, model = setup
    R = 4
    fid = simulation_fidelity(c.runs, c.qrels, alt, model, "AP", n_replicates=R, seed=9)
    names = list(fid.systems["name"])
    reps, topics = _replicate_qrels(model, c.qrels, R, 9)
    alt_map = _map(c.runs, alt, names)
    a = np.array([alt_map[n].reindex(topics, fill_value=0.0).mean() for n in names])
    sims = np.array([[v.reindex(topics, fill_value=0.0).mean() for v in _map(c.runs, q, names).values()]
                     for q in reps]).T                                   # (S, R)
    assert fid.systems["alternative"].to_numpy() == pytest.approx(a, abs=1e-9)
    assert fid.replicates == pytest.approx(sims, abs=1e-9)
    assert fid.rmse == pytest.approx(np.sqrt(((sims - a[:, None]) ** 2).mean()), abs=1e-9)
    taus = [st.kendalltau(sims[:, r], a).statistic for r in range(R)]
    assert fid.mean_tau == pytest.approx(np.mean(taus), abs=1e-12)
    orig = np.array([v.reindex(topics, fill_value=0.0).mean() for v in _map(c.runs, c.qrels, names).values()])
    assert fid.rmse_original == pytest.approx(np.sqrt(((sims - orig[:, None]) ** 2).mean()), abs=1e-9)
    assert fid.systems["q025"].to_numpy() == pytest.approx(np.quantile(sims, 0.025, axis=1))


def test_simulation_fidelity_on_given_alignments_equals_the_runs(setup):
    c, alt, model = setup
    fid = simulation_fidelity(c.runs, c.qrels, alt, model, "AP", n_replicates=3, seed=9)
    again = simulation_fidelity(AlignedRuns.build(c.runs, c.qrels), None, AlignedRuns.build(c.runs, alt), model, "AP",
                                n_replicates=3, seed=9)
    pd.testing.assert_frame_equal(again.systems, fid.systems)
    assert (again.rmse, again.mean_tau) == (fid.rmse, fid.mean_tau)
    with pytest.raises(InputError, match="both as AlignedRuns"):
        simulation_fidelity(AlignedRuns.build(c.runs, c.qrels), None, alt, model)
    other = AlignedRuns.build({n: c.runs[n] for n in list(c.runs)[:3]}, alt)
    with pytest.raises(InputError, match="aligns other runs than runs"):
        simulation_fidelity(AlignedRuns.build(c.runs, c.qrels), None, other, model, n_replicates=2)


@pytest.mark.parametrize("vary_topics", [False, True])
def test_assessor_significance_brute_force(setup, vary_topics):
    c, _, model = setup
    R = 5
    res = assessor_significance(c.runs, c.qrels, model, "AP", n_replicates=R, vary_topics=vary_topics, seed=2)
    names = sorted(c.runs)
    reps, topics = _replicate_qrels(model, c.qrels, R, 2)
    X0 = _map(c.runs, c.qrels, names)
    Xr = [_map(c.runs, q, names) for q in reps]
    sim, ref = [], []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            x = X0[names[a]].reindex(topics, fill_value=0.0).to_numpy()
            y = X0[names[b]].reindex(topics, fill_value=0.0).to_numpy()
            ref.append(st.ttest_rel(x, y).pvalue < 0.05)
            row = []
            for r in range(R):
                idx = res.topic_samples[r] if vary_topics else np.arange(len(topics))
                x = Xr[r][names[a]].reindex(topics, fill_value=0.0).to_numpy()[idx]
                y = Xr[r][names[b]].reindex(topics, fill_value=0.0).to_numpy()[idx]
                row.append(st.ttest_rel(x, y).pvalue < 0.05)
            sim.append(row)
    sim, ref = np.array(sim), np.array(ref)
    assert list(res.pairs["significant"]) == list(ref)
    s = res.summary
    assert s["accuracy"] == pytest.approx((sim == ref[:, None]).mean())
    if sim.sum():
        assert s["precision"] == pytest.approx((sim & ref[:, None]).sum() / sim.sum())
    if ref.sum():
        assert s["recall"] == pytest.approx((sim & ref[:, None]).sum() / (ref.sum() * R))
    assert res.pairs["share_significant"].to_numpy() == pytest.approx(sim.mean(axis=1))
    assert (res.topic_samples is not None) == vary_topics
    assert 0 < ref.sum() < len(ref) and 0 < sim.sum() < sim.size      # both decisions occur: not vacuous


def test_topic_resampling_adds_variance_and_is_seeded(setup):
    c, _, model = setup
    flip = FlipRateModel(fnr=0.0, fpr=0.0)                   # a perfect "assessor": only topic variance left
    only = assessor_significance(c.runs, c.qrels, flip, n_replicates=50, vary_topics=False)
    assert only.summary["accuracy"] == 1.0 and only.summary["recall"] == 1.0
    both = assessor_significance(c.runs, c.qrels, flip, n_replicates=50, vary_topics=True, seed=4)
    assert both.summary["accuracy"] < 1.0
    again = assessor_significance(c.runs, c.qrels, flip, n_replicates=50, vary_topics=True, seed=4)
    np.testing.assert_array_equal(both.topic_samples, again.topic_samples)
    assert both.summary == again.summary
    with pytest.raises(InputError, match="sample_labels"):
        assessor_significance(c.runs, c.qrels, object())


def test_both_blocks_from_one_call_equal_two_calls(setup):
    """vary_topics=(False, True) gives the two results of two calls with the same seed (one set of
    simulated qrels); a flag that is not a bool is refused."""
    c, _, model = setup
    kw = dict(n_replicates=40, seed=3)
    blocks = assessor_significance(c.runs, c.qrels, model, "AP", vary_topics=(False, True), **kw)
    for vary, res in zip((False, True), blocks):
        one = assessor_significance(c.runs, c.qrels, model, "AP", vary_topics=vary, **kw)
        assert res.summary == one.summary
        pd.testing.assert_frame_equal(res.pairs, one.pairs, check_exact=True)
        assert (res.topic_samples is None) == (one.topic_samples is None)
        if vary:
            np.testing.assert_array_equal(res.topic_samples, one.topic_samples)
    assert blocks[0].summary != blocks[1].summary
    with pytest.raises(InputError, match="vary_topics"):
        assessor_significance(c.runs, c.qrels, model, "AP", vary_topics="yes", **kw)
