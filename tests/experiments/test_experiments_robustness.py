"""Tests of the robustness experiment (pyterrier_noise.experiments.robustness).

Reference values come from independent computations: the engine on the replicate's label matrix,
ir_measures (pytrec_eval / cwl_eval) on one replicate's qrels, pt.Experiment on the unperturbed
qrels, scipy.stats.ttest_rel + statsmodels.multipletests per replicate (pair conclusions),
scipy.stats.kendalltau, and brute-force loops for tau_AP, RBO, the rank and p-value tables.
"""
from __future__ import annotations

import itertools
import json
import math

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pyterrier as pt
from scipy import stats
from statsmodels.stats.multitest import multipletests

from pyterrier_noise import AlignedRuns, MeasureSpec
from pyterrier_noise.engine import JudgmentTable
from pyterrier_noise.cli import main
from pyterrier_noise import InputError
from pyterrier_noise.experiments import CONCLUSIONS, RobustnessResult, robustness_experiment

MEASURES = ["RBP(rel=1,p=0.8)", "AP", "nDCG@10"]
SPECS = [MeasureSpec("RBP", p=0.8), MeasureSpec("AP"), MeasureSpec("nDCG", cutoff=10)]


class BinaryFlips:
    """A tiny perturbation model with the package's interface: a relevant judgment (label >= 1)
    keeps its label with probability tpr, else becomes 0; a non-relevant one becomes 1 with
    probability fpr."""

    def __init__(self, tpr: float, fpr: float) -> None:
        self.tpr, self.fpr = tpr, fpr

    def sample_labels(self, table: JudgmentTable, n: int, seed=None) -> np.ndarray:
        y = table.labels[:, None]
        u = np.random.default_rng(seed).random((len(table), n))
        rel = y >= 1
        return np.where(rel, np.where(u < self.tpr, y, 0.0), np.where(u < self.fpr, 1.0, y))


@pytest.fixture(autouse=True)
def _fast_statsmodels_holm(monkeypatch):
    """statsmodels' Holm calls gc.collect() on every call (seconds in a big test process); the
    references below call it per replicate, so skip the collection (the numbers do not change)."""
    import gc
    monkeypatch.setattr(gc, "collect", lambda *a: 0)


@pytest.fixture(scope="module")
def small(coll):
    """8 runs of the synthetic collection (30 topics)."""
    names = list(coll.runs)[:8]
    return {n: coll.runs[n] for n in names}, coll.qrels, coll.topics


@pytest.fixture(scope="module")
def noisy(small):
    runs, qrels, topics = small
    # perquery=True keeps the per-topic replicate values that the brute-force checks below use
    return robustness_experiment(runs, topics, qrels, MEASURES, BinaryFlips(0.8, 0.1), n_replicates=24,
                                 seed=7, baseline=2, correction="holm", perquery=True)


def test_identical_runs_say_that_kendall_tau_is_undefined_without_a_numpy_warning(small):
    runs, qrels, topics = small
    first = next(iter(runs.values()))
    import warnings
    from pyterrier_noise import NoiseWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = robustness_experiment({"a": first, "b": first.copy()}, topics, qrels, ["AP"], BinaryFlips(0.8, 0.1),
                                    n_replicates=4, seed=3)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    said = [str(w.message) for w in caught if issubclass(w.category, NoiseWarning)]
    assert any("AP: Kendall's tau is undefined (NaN) in every replicate" in m for m in said), said
    assert math.isnan(res.summary.set_index("measure").loc["AP", "kendall_tau"])


# ------------------------------------------------------------------------------------------------
# zero noise


def test_zero_noise_every_replicate_is_the_unperturbed_result(small):
    runs, qrels, topics = small
    res = robustness_experiment(runs, topics, qrels, MEASURES, BinaryFlips(1.0, 0.0), n_replicates=6,
                                seed=1, baseline="run01", correction="holm", perquery=True)
    for m in res.measures:
        np.testing.assert_array_equal(res.values[m], np.repeat(res.true[m][:, :, None], 6, axis=2))
    assert (res.rankings[["kendall_tau", "tau_ap", "rbo"]] == 1.0).all().all()
    assert (res.pairs["kept"] == 1.0).all()
    assert (res.pairs[["lost", "gained", "reversed"]] == 0.0).all().all()
    assert (res.baseline["kept"] == 1.0).all()
    assert np.allclose(res.systems["sd"], 0, atol=1e-15) and np.allclose(res.systems["mean"], res.systems["true"])
    assert (res.rank_given_observed["same"] == 1.0).all()
    assert (res.summary["accuracy"] == 1.0).all() and (res.summary["kept_significant"] == 1.0).all()
    assert res.summary["significant_pairs"].gt(0).all()  # there were conclusions to keep
    assert (res.labels["n_changed"] == 0).all() and (res.labels["tpr"] == 1).all() and (res.labels["fpr"] == 0).all()
    # the truth confirms every observed winner: mapped p = one-sided p in the observed direction
    pg = res.p_given_observed
    assert np.allclose(pg.loc[pg["count"] > 0, "same_direction"], 1.0)


# ------------------------------------------------------------------------------------------------
# values: the engine on the replicate's labels, and ir_measures on one replicate's qrels


def test_values_equal_engine_on_the_replicate_labels(small, noisy):
    runs, qrels, _ = small
    aligned = AlignedRuns.build(runs, qrels)
    assert noisy.topics == aligned.topics and noisy.names == aligned.run_names
    L = BinaryFlips(0.8, 0.1).sample_labels(aligned.table, 24, seed=7)  # one call: what the experiment drew
    out = aligned.evaluate(SPECS, L)
    for lab, spec in zip(MEASURES, SPECS):
        np.testing.assert_array_equal(noisy.values[lab], out[spec])
    np.testing.assert_array_equal(noisy.true["AP"], aligned.evaluate([SPECS[1]])[SPECS[1]][:, :, 0])
    # realised rates of the replicates, counted directly
    y = aligned.table.labels
    tpr = ((L >= 1) & (y[:, None] >= 1)).sum(axis=0) / (y >= 1).sum()
    np.testing.assert_allclose(noisy.labels["tpr"], tpr)
    assert (noisy.labels["n_changed"] == (L != y[:, None]).sum(axis=0)).all()


def test_one_replicate_equals_ir_measures_on_its_qrels(small, noisy):
    runs, qrels, _ = small
    table = JudgmentTable.from_qrels(qrels)
    k = 5
    lab = BinaryFlips(0.8, 0.1).sample_labels(table, 24, seed=7)[:, k]
    rep = table.frame.assign(label=lab).dropna(subset=["label"])
    irm_qrels = pd.DataFrame({"query_id": rep["qid"], "doc_id": rep["docno"],
                              "relevance": rep["label"].astype(int)})
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    for s, name in enumerate(noisy.names):
        run = runs[name]
        irm_run = pd.DataFrame({"query_id": run["qid"], "doc_id": run["docno"], "score": run["score"]})
        ref = {(str(mm.measure), mm.query_id): mm.value for mm in ir_measures.iter_calc(measures, irm_qrels, irm_run)}
        for lab_name, mobj in zip(MEASURES, measures):
            ours = noisy.values[lab_name][s, :, k]
            theirs = np.array([ref[(str(mobj), q)] for q in noisy.topics])
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


# ------------------------------------------------------------------------------------------------
# pair conclusions


def _brute_pairs(X0, X, alpha, method):
    """Per (pair, replicate) category by scipy.stats.ttest_rel + statsmodels, looping over replicates."""
    S = X0.shape[0]
    i, j = np.triu_indices(S, 1)
    p0 = stats.ttest_rel(X0[i], X0[j], axis=1).pvalue
    p0 = multipletests(p0, method=method)[1]
    d0 = np.sign(X0[i].mean(1) - X0[j].mean(1))
    sig0 = (p0 < alpha) & (d0 != 0)
    codes, swapped = [], []
    for k in range(X.shape[2]):
        pk = multipletests(stats.ttest_rel(X[i, :, k], X[j, :, k], axis=1).pvalue, method=method)[1]
        dk = np.sign(X[i, :, k].mean(1) - X[j, :, k].mean(1))
        sk = (pk < alpha) & (dk != 0)
        code = np.where(sig0, np.where(sk, np.where(dk == d0, "kept", "reversed"), "lost"),
                        np.where(sk, "gained", "kept"))
        codes.append(code)
        swapped.append(dk * d0 < 0)
    return np.stack(codes, axis=1), p0, sig0, np.stack(swapped, axis=1)


def test_pair_conclusions_partition_and_match_scipy_statsmodels(noisy):
    for m in noisy.measures:
        pairs = noisy.pairs[noisy.pairs["measure"] == m]
        shares = pairs[list(CONCLUSIONS)].to_numpy()
        np.testing.assert_allclose(shares.sum(axis=1), 1.0)
        sig = pairs["significant"].to_numpy()
        assert (pairs.loc[sig, "gained"] == 0).all()
        assert (pairs.loc[~sig, ["lost", "reversed"]] == 0).all().all()
        codes, p0, sig0, swapped = _brute_pairs(noisy.true[m], noisy.values[m], 0.05, "holm")
        np.testing.assert_allclose(pairs["swapped"], swapped.mean(axis=1))
        np.testing.assert_allclose(pairs["p_corrected"], p0, rtol=1e-10)
        assert (sig == sig0).all()
        for c in CONCLUSIONS:
            np.testing.assert_allclose(pairs[c], (codes == c).mean(axis=1), err_msg=f"{m} {c}")
        # the summary's rates are the same counts
        row = noisy.summary.set_index("measure").loc[m]
        st = np.broadcast_to(sig0[:, None], codes.shape)
        assert math.isclose(row["reversed"], (codes == "reversed").sum() / st.sum())
        assert math.isclose(row["gained"], (codes == "gained").sum() / (~st).sum())
    assert noisy.summary["lost"].gt(0).any()  # the noise did change conclusions


def test_all_pairs_t_test_equals_paired_test_on_hard_cases():
    # the experiment's all-pairs t-test is stats.all_pairs(test="t"); the reference is each pair's
    # stats.paired_test (scipy.stats.ttest_rel), on the cases where a Gram-matrix form would cancel
    from pyterrier_noise.stats import all_pairs, paired_test
    rng = np.random.default_rng(3)
    X = rng.random((10, 25, 6))
    X[1] = X[0]                                   # identical systems: NaN, as scipy
    X[2] = X[0] + 0.01                            # constant difference: p = 0
    X[3] = X[0] + 1e-9 * rng.random((25, 6))      # nearly identical: cancellation in the Gram form
    X[4] = 0.0
    X[5] = 0.0                                    # identical zero systems
    X[6] = X[0] * (1 + 1e-7)
    i, j = np.triu_indices(10, 1)
    ours, ref = all_pairs(X, test="t").pvalue, paired_test(X[i], X[j], test="t", axis=1)
    assert np.array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=0)
    assert np.isnan(ours[0]).all() and (ours[1] == 0).all()        # pairs (0, 1) and (0, 2)


def test_baseline_shares_match_brute_force(noisy):
    b = noisy.names.index(noisy.params["baseline"])
    base = noisy.baseline[noisy.baseline["measure"] == "AP"]
    X0, X = noisy.true["AP"], noisy.values["AP"]
    others = [s for s in range(len(noisy.names)) if s != b]
    p0 = stats.ttest_rel(X0[others], X0[[b]], axis=1).pvalue
    np.testing.assert_allclose(base["p_value"], p0, rtol=1e-10)
    np.testing.assert_allclose(base["p_corrected"], multipletests(p0, method="holm")[1], rtol=1e-10)
    better = np.zeros(len(others))
    worse = np.zeros(len(others))
    for k in range(X.shape[2]):
        pk = multipletests(stats.ttest_rel(X[others, :, k], X[[b], :, k], axis=1).pvalue, method="holm")[1]
        d = X[others, :, k].mean(1) - X[b, :, k].mean()
        better += (pk < 0.05) & (d > 0)
        worse += (pk < 0.05) & (d < 0)
    np.testing.assert_allclose(base["better_share"], better / X.shape[2])
    np.testing.assert_allclose(base["worse_share"], worse / X.shape[2])
    np.testing.assert_allclose(base[["better_share", "worse_share", "n.s._share"]].sum(axis=1), 1.0)
    np.testing.assert_allclose(base[list(CONCLUSIONS)].sum(axis=1), 1.0)


# ------------------------------------------------------------------------------------------------
# rankings and the "true given observed" tables


def _tau_ap_brute(est, truth):
    """Yilmaz et al. (2008) from its definition, on rankings given as lists of item indices."""
    n = len(est)
    pos = {item: r for r, item in enumerate(truth)}
    total = sum(sum(pos[est[k]] < pos[est[i]] for k in range(i)) / i for i in range(1, n))
    return 2.0 / (n - 1) * total - 1.0


def _rbo_ext_brute(a, b, p):
    """Webber et al. (2010) eq. 32 for two full rankings of the same k items."""
    k = len(a)
    A = [len(set(a[:d]) & set(b[:d])) / d for d in range(1, k + 1)]
    return (1 - p) / p * sum(p ** d * A[d - 1] for d in range(1, k + 1)) + p ** k * A[-1]


def test_ranking_agreement_matches_definitions(noisy):
    S = len(noisy.names)
    for m in ("AP", "RBP(rel=1,p=0.8)"):
        M0 = noisy.true[m].mean(axis=1)
        M = noisy.values[m].mean(axis=1)
        rows = noisy.rankings[noisy.rankings["measure"] == m].reset_index(drop=True)
        truth = list(np.argsort(-M0, kind="stable"))   # the synthetic systems have no tied means
        for k in range(0, M.shape[1], 5):
            est = list(np.argsort(-M[:, k], kind="stable"))
            assert math.isclose(rows.loc[k, "kendall_tau"], stats.kendalltau(M[:, k], M0).statistic, abs_tol=1e-12)
            assert math.isclose(rows.loc[k, "tau_ap"], _tau_ap_brute(est, truth), abs_tol=1e-12)
            assert math.isclose(rows.loc[k, "rbo"], _rbo_ext_brute(est, truth, 0.9), abs_tol=1e-12)
        # true rank of the system at each observed rank, collected by loops
        rgo = noisy.rank_given_observed[noisy.rank_given_observed["measure"] == m].reset_index(drop=True)
        true_rank = {s: r + 1 for r, s in enumerate(truth)}
        at = np.array([[true_rank[s] for s in np.argsort(-M[:, k], kind="stable")] for k in range(M.shape[1])])
        np.testing.assert_allclose(rgo["mean"], at.mean(axis=0))
        np.testing.assert_allclose(rgo["median"], np.median(at, axis=0))
        np.testing.assert_allclose(rgo["same"], (at == np.arange(1, S + 1)).mean(axis=0))
        sysf = noisy.systems[noisy.systems["measure"] == m]
        np.testing.assert_allclose(sysf["q97.5"], np.percentile(M, 97.5, axis=1))
        np.testing.assert_allclose(sysf["sd"], M.std(axis=1, ddof=1))


def test_true_p_given_observed_band_table(noisy):
    m = "AP"
    X0, X = noisy.true[m], noisy.values[m]
    S = X0.shape[0]
    mapped, observed = [], []
    for a, b in itertools.combinations(range(S), 2):
        for k in range(X.shape[2]):
            d = X[a, :, k].mean() - X[b, :, k].mean()
            if d == 0:
                continue
            win, lose = (a, b) if d > 0 else (b, a)
            observed.append(stats.ttest_rel(X[a, :, k], X[b, :, k]).pvalue)
            mapped.append(stats.ttest_rel(X0[win], X0[lose], alternative="greater").pvalue)
    mapped, observed = np.array(mapped), np.array(observed)
    band = noisy.p_given_observed[noisy.p_given_observed["measure"] == m].reset_index(drop=True)
    assert band["count"].sum() == len(mapped)
    for r in band.itertuples():
        sel = (observed >= r.p_low) & ((observed < r.p_high) | ((r.p_high == 1.0) & (observed <= 1.0)))
        assert r.count == sel.sum()
        if sel.any():
            assert math.isclose(r.mean, mapped[sel].mean(), rel_tol=1e-9)
            assert math.isclose(r.confirmed, (mapped[sel] < 0.05).mean())
            assert math.isclose(r.confirmed + r.unsubstantiated + r.reversed + r.significantly_reversed, 1.0)
    window = noisy.true_p_given_observed(m, 0.0, 0.05)
    np.testing.assert_allclose(np.sort(window), np.sort(mapped[observed <= 0.05]), rtol=1e-9)


# ------------------------------------------------------------------------------------------------
# determinism, chunking, systems as transformers, pt.Experiment


def test_same_seed_same_result_and_chunking_does_not_matter(small):
    from pyterrier_noise.judges import RandomFlips
    runs, qrels, topics = small
    kw = dict(n_replicates=23, baseline=0, correction="bonferroni", perquery=True)
    a = robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.93, 0.07), seed=5, **kw)
    b = robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.93, 0.07), seed=5,
                              chunk_size=4, **kw)
    c = robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.93, 0.07), seed=6, **kw)
    for name, frame in a.frames().items():
        pd.testing.assert_frame_equal(frame, b.frames()[name], check_exact=True, obj=name)
    assert not np.array_equal(a.values["AP"], c.values["AP"])
    # replicate i is RandomFlips' replicate i of the seed (as `pyterrier-noise perturb` writes it)
    aligned = AlignedRuns.build(runs, qrels)
    L = RandomFlips(0.93, 0.07).sample_labels(aligned.table, 23, seed=5)
    np.testing.assert_array_equal(a.values["AP"], aligned.evaluate([MeasureSpec("AP")], L)[MeasureSpec("AP")])


def test_systems_given_aligned_give_the_frames_of_the_runs(small):
    """An AlignedRuns built on the qrels is used as it is: every frame equals the one of the runs
    themselves (several experiments on one alignment); other judgments, topics or tie policies are refused."""
    from pyterrier_noise.judges import RandomFlips, RankBiasedFlips
    runs, qrels, topics = small
    aligned = AlignedRuns.build(runs, qrels)
    kw = dict(n_replicates=17, baseline=1, seed=3, perquery=True, chunk_size=5)
    for model in (RandomFlips(0.9, 0.1), RankBiasedFlips(0.9, 0.1, runs=runs)):
        a = robustness_experiment(runs, None, qrels, ["AP", "RBP(p=0.8)", "RR"], model, **kw)
        b = robustness_experiment(aligned, None, qrels, ["AP", "RBP(p=0.8)", "RR"], model, **kw)
        for name, frame in a.frames().items():
            pd.testing.assert_frame_equal(frame, b.frames()[name], check_exact=True, obj=name)
        np.testing.assert_array_equal(a.values["AP"], b.values["AP"])
    binary = qrels.assign(label=(qrels["label"] >= 1).astype(float))
    with pytest.raises(InputError, match="other judgments"):
        robustness_experiment(aligned, None, binary, ["AP"], RandomFlips(0.9, 0.1), n_replicates=3)
    with pytest.raises(InputError, match="topics=None"):
        robustness_experiment(aligned, topics, qrels, ["AP"], RandomFlips(0.9, 0.1), n_replicates=3)
    with pytest.raises(InputError, match="orders tied scores"):
        robustness_experiment(aligned, None, qrels, ["AP"], RandomFlips(0.9, 0.1), n_replicates=3, ties="expected")


def test_transformers_match_pt_experiment(small):
    runs, qrels, topics = small
    names = list(runs)
    systems = [pt.Transformer.from_df(runs[n]) for n in names]
    res = robustness_experiment(systems, topics, qrels, [ir_measures.AP, ir_measures.nDCG @ 10, "map"],
                                BinaryFlips(0.9, 0.05), n_replicates=5, names=names, baseline=0,
                                correction="holm", seed=3, perquery=True)
    exp = pt.Experiment(systems, topics, qrels, [ir_measures.AP, ir_measures.nDCG @ 10], names=names,
                        baseline=0, correction="holm")
    sysf = res.systems.set_index(["measure", "name"])["true"]
    for m in ("AP", "nDCG@10"):
        np.testing.assert_allclose(sysf.loc[m].loc[names], exp[m], atol=1e-12)
        base = res.baseline[res.baseline["measure"] == m]
        np.testing.assert_allclose(base["p_value"], exp[f"{m} p-value"].iloc[1:], rtol=1e-10)
        np.testing.assert_allclose(base["p_corrected"], exp[f"{m} p-value corrected"].iloc[1:], rtol=1e-10)
    np.testing.assert_allclose(sysf.loc["map"].loc[names], exp["AP"], atol=1e-12)  # pt.Experiment's trec name
    # the same experiment from the result frames themselves
    direct = robustness_experiment(runs, topics, qrels, ["AP"], BinaryFlips(0.9, 0.05), n_replicates=5, seed=3,
                                   perquery=True)
    np.testing.assert_array_equal(direct.values["AP"], res.values["AP"])


def test_topics_subset_and_perquery(small):
    runs, qrels, topics = small
    sub = topics.iloc[:10]
    res = robustness_experiment({n: pt.Transformer.from_df(r) for n, r in runs.items()}, sub, qrels, ["AP"],
                                BinaryFlips(0.9, 0.05), n_replicates=3, perquery=True)
    assert res.topics == list(sub["qid"])
    pq = res.perquery
    assert len(pq) == len(runs) * 10 * 3 and list(pq.columns) == ["name", "qid", "measure", "replicate", "value", "true"]
    row = pq[(pq["name"] == "run03") & (pq["qid"] == "4") & (pq["replicate"] == 2)].iloc[0]
    s, t = res.names.index("run03"), res.topics.index("4")
    assert row["value"] == res.values["AP"][s, t, 2] and row["true"] == res.true["AP"][s, t]


def test_from_arrays_and_plots(noisy, tmp_path):
    again = RobustnessResult.from_arrays(noisy.true, noisy.values, noisy.names, noisy.topics, baseline=2,
                                         correction="holm", seed=7)
    pd.testing.assert_frame_equal(again.pairs, noisy.pairs)
    from matplotlib.figure import Figure
    from pyterrier_noise import _plot   # private: a figure as the package makes them, drawn on
    S = len(noisy.names)
    fig = noisy.plot_distributions("AP")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    # what the plot shows: one box per system, systems named in order of their unperturbed mean, which
    # is drawn as the red dots (plotted by hand from noisy.true, not from the plot's code)
    order = np.argsort(-noisy.true["AP"].mean(axis=1), kind="stable")
    assert [t.get_text() for t in ax.get_xticklabels()] == [noisy.names[i] for i in order]
    dots = [ln for ln in ax.lines if ln.get_label() == "unperturbed qrels"]
    assert len(dots) == 1 and list(dots[0].get_xdata()) == list(range(1, S + 1))
    np.testing.assert_allclose(dots[0].get_ydata(), noisy.true["AP"].mean(axis=1)[order])
    # the boxes: one box per system (a PolyCollection), two whiskers and two caps per system, one median each;
    # each median lies between its box's edges (the box statistics themselves: tests/experiments/test_experiments_plots_boxes.py)
    from matplotlib.collections import LineCollection, PolyCollection
    boxes = [c for c in ax.collections if isinstance(c, PolyCollection)]
    whiskers, medians = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(boxes) == 1 and len(boxes[0].get_paths()) == S
    assert len(whiskers.get_segments()) == 4 * S and len(medians.get_segments()) == S
    for path, med in zip(boxes[0].get_paths(), medians.get_segments()):
        lo, hi = path.vertices[:, 1].min(), path.vertices[:, 1].max()
        assert lo <= med[0, 1] <= hi
    n = noisy.params["n_replicates"]
    assert ax.get_ylabel() == "mean AP" and f"over {n} perturbed" in fig.get_suptitle()   # the figure's title
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["unperturbed qrels", f"{n} perturbed qrels (box)"]
    fig = _plot.figure(8, 4)
    axes = fig.subplots(1, 2)
    assert noisy.plot_distributions("AP", ax=axes[0], kind="violin") is fig
    assert len(axes[0].collections) == S            # one violin body per system
    assert noisy.plot_ranks(ir_measures.nDCG @ 10, ax=axes[1], save=tmp_path / "two.png") is fig
    assert axes[1].get_xlabel() == "observed rank (nDCG@10, perturbed qrels)"
    assert axes[1].get_ylabel() == "true rank (unperturbed qrels)"
    step = max(1, S // 10)
    assert [t.get_text() for t in axes[1].get_xticklabels()] == [str(k) for k in range(1, S + 1, step)]
    identity = [ln for ln in axes[1].lines if list(ln.get_xdata()) == [1, S]]
    assert len(identity) == 1 and list(identity[0].get_ydata()) == [1, S]
    from matplotlib.image import imread
    h, w = imread(tmp_path / "two.png").shape[:2]
    assert w == 2 * h                               # the saved file is this 8 x 4 inch figure
    written = noisy.save(tmp_path)
    assert (tmp_path / "pairs.tsv").exists() and imread(tmp_path / "ranks-AP.png").ndim == 3
    assert len(written) == 8 + 2 * 3
    back = pd.read_csv(tmp_path / "summary.tsv", sep="\t")
    np.testing.assert_allclose(back["rbo"], noisy.summary["rbo"])


def test_save_only_some_files_writes_the_same_bytes(noisy, tmp_path):
    """save(only=...) (the command shares the files among processes) writes each named file with
    the bytes of a whole save, and file_names() lists what a whole save writes, in its order."""
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    written = noisy.save(whole)
    names = noisy.file_names()
    assert [p.name for p in written] == names
    assert noisy.file_names(plots=False) == [n for n in names if n.endswith(".tsv")]
    for name in reversed(names):     # any order, one file per call
        assert [p.name for p in noisy.save(parts, only=[name])] == [name]
    assert sorted(p.name for p in parts.iterdir()) == sorted(names)
    for name in names:
        assert (parts / name).read_bytes() == (whole / name).read_bytes(), name
    with pytest.raises(InputError, match="names no file of this result"):
        noisy.save(parts, only=["nope.tsv"])


# ------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("kwargs, match", [
    ({"n_replicates": 0}, "n_replicates must be a positive integer"),
    ({"n_replicates": -3}, "n_replicates must be a positive integer"),
    ({"n_replicates": 2.5}, "n_replicates must be a positive integer"),
    ({"eval_metrics": ["NoSuchMeasure@3"]}, "NoSuchMeasure"),
    ({"eval_metrics": []}, "eval_metrics is empty"),
    ({"baseline": "nope"}, "baseline 'nope' is not one of the systems"),
    ({"baseline": 99}, "baseline index 99 is out of range"),
    ({"test": "ztest"}, "test must be one of"),
    ({"correction": "sidak"}, "correction must be None or one of"),
    ({"correction_alpha": 1.5}, "correction_alpha"),
    ({"ties": "random"}, "ties must be one of"),
    ({"perturbation": object()}, "sample_labels"),
])
def test_bad_input(small, kwargs, match):
    runs, qrels, topics = small
    args = dict(retr_systems=runs, topics=topics, qrels=qrels, eval_metrics=["AP"],
                perturbation=BinaryFlips(0.9, 0.1), n_replicates=2)
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        robustness_experiment(**args)


def test_bad_systems_and_models(small):
    runs, qrels, topics = small
    one = {"run01": runs["run01"]}
    with pytest.raises(InputError, match="at least 2 systems"):
        robustness_experiment(one, topics, qrels, ["AP"], BinaryFlips(0.9, 0.1), n_replicates=2)
    with pytest.raises(InputError, match="names must be unique"):
        robustness_experiment([runs["run01"], runs["run02"]], topics, qrels, ["AP"], BinaryFlips(0.9, 0.1),
                              names=["a", "a"])
    with pytest.raises(InputError, match="topics are needed"):
        robustness_experiment({"a": pt.Transformer.from_df(runs["run01"]), "b": runs["run02"]}, None, qrels,
                              ["AP"], BinaryFlips(0.9, 0.1))

    class Wrong:
        def sample_labels(self, table, n, seed=None):
            return np.zeros((len(table) - 1, n))

    with pytest.raises(InputError, match=r"returned shape .* expected \(2004, 2\)"):
        robustness_experiment(runs, topics, qrels, ["AP"], Wrong(), n_replicates=2)
    bad = runs["run02"].copy()
    bad.loc[5, "score"] = np.nan
    with pytest.raises(InputError, match="column 'score', row 5"):
        robustness_experiment({"a": runs["run01"], "b": bad}, topics, qrels, ["AP"], BinaryFlips(0.9, 0.1))
    with pytest.raises(InputError, match="must have shape"):
        RobustnessResult.from_arrays({"AP": np.zeros((3, 4))}, {"AP": np.zeros((3, 5, 2))}, list("abc"),
                                     list("1234"))


# ------------------------------------------------------------------------------------------------
# command line


def test_cli_writes_byte_identical_tables(coll, tmp_path, capsys):
    d = coll.write_trec(tmp_path / "coll")
    run_files = [str(f) for f in sorted((d / "runs").iterdir())[:6]]
    args = ["robustness", str(d / "qrels.txt"), *run_files, "--model", "random", "--tpr", "0.93",
            "--fpr", "0.07", "--replicates", "12", "--seed", "4", "-m", "RBP(p=0.8)", "-m", "AP",
            "--baseline", "run05", "--correction", "holm"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert main(args + ["--out", str(tmp_path / "b"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "RBP(p=0.8)" in out and "kendall_tau" in out
    tsvs = sorted(p.name for p in (tmp_path / "a").glob("*.tsv"))
    assert tsvs == ["baseline.tsv", "labels.tsv", "p_given_observed.tsv", "pairs.tsv", "rank_given_observed.tsv",
                    "rankings.tsv", "summary.tsv", "systems.tsv"]
    for name in tsvs + ["experiment.json"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "distributions-AP.png").exists() and not list((tmp_path / "b").glob("*.png"))
    summary = pd.read_csv(tmp_path / "a" / "summary.tsv", sep="\t")
    assert list(summary["measure"]) == ["RBP(p=0.8)", "AP"] and summary["n_systems"].eq(6).all()
    assert main(args + ["--out", str(tmp_path / "c"), "--baseline", "nope"]) == 2
    assert "--baseline 'nope' is not one of the runs" in capsys.readouterr().err
    assert main(["robustness", str(d / "qrels.txt"), str(d / "runs"), "--model", "random", "--fpr", "0.1", "-m", "AP",
                 "--out", str(tmp_path / "d")]) == 2
    assert "needs --tpr and --fpr" in capsys.readouterr().err


def test_cli_rank_biased_uses_the_evaluated_runs(coll, tmp_path, capsys):
    d = coll.write_trec(tmp_path / "coll")
    run_files = [str(f) for f in sorted((d / "runs").iterdir())[:5]]
    assert main(["robustness", str(d / "qrels.txt"), *run_files, "--model", "rank-biased", "--judge",
                 "smart_neutral", "--replicates", "6", "-m", "AP", "--no-plots", "--out", str(tmp_path / "rb")]) == 0
    info = (tmp_path / "rb" / "experiment.json").read_text()
    assert "RankBiasedFlips" in info
    labels = pd.read_csv(tmp_path / "rb" / "labels.tsv", sep="\t")
    assert len(labels) == 6 and labels["n_changed"].gt(0).all()


def test_old_keywords_are_gone(small, noisy):
    """``verbose=`` and ``alpha=`` were renamed ``progress=`` and ``correction_alpha=`` before any
    release: the old names are not taken."""
    runs, qrels, topics = small
    with pytest.raises(TypeError, match="verbose"):
        robustness_experiment(runs, topics, qrels, ["AP"], BinaryFlips(0.8, 0.1), n_replicates=4, verbose=False)
    with pytest.raises(TypeError, match="verbose"):
        RobustnessResult.from_arrays(noisy.true, noisy.values, noisy.names, noisy.topics, verbose=False)
    assert noisy.params["rbo_p"] == 0.9                          # the package's RBO persistence


def test_kendall_tau_is_tau_b_when_system_means_tie():
    """Synthetic means with ties (two identical systems; a tie that appears in some replicates only):
    the experiment's Kendall tau is scipy's tau_b, which here differs from tau_a, so a tau_a
    implementation would fail (brute-force reference: scipy.stats.kendalltau)."""
    rng = np.random.default_rng(3)
    S, T, R = 6, 5, 8
    true = rng.random((S, T))
    true[1] = true[0]                                           # systems 0 and 1 tie under the true qrels
    values = true[:, :, None] + rng.normal(0, 0.05, (S, T, R))
    values[1] = values[0]                                       # ... and in every replicate
    values[3, :, ::2] = values[2, :, ::2]                       # systems 2 and 3 tie in half the replicates
    res = RobustnessResult.from_arrays({"AP": true}, {"AP": values}, [f"s{i}" for i in range(S)],
                                       [f"q{t}" for t in range(T)])
    M0, M = true.mean(axis=1), values.mean(axis=1)
    got = res.rankings[res.rankings["measure"] == "AP"]["kendall_tau"].to_numpy()
    want = np.array([stats.kendalltau(M[:, r], M0).statistic for r in range(R)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    conc = np.array([sum(np.sign(M[a, r] - M[b, r]) * np.sign(M0[a] - M0[b])
                         for a, b in itertools.combinations(range(S), 2)) for r in range(R)]) / (S * (S - 1) / 2)
    assert np.abs(got - conc).min() > 1e-3                      # tau_a (brute-force count) is different


# --- robustness interrupted (issue 30) -------------------------------------------------------------

def _robustness_argv(paths, out, n):
    return ["robustness", paths["qrels"], *[paths[f"run{r}"] for r in range(5)], "-m", "AP", "--model", "random",
            "--tpr", "0.9", "--fpr", "0.1", "--replicates", n, "--quiet", "--no-plots", "--out", out]


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_robustness_interrupted_mid_run_then_a_rerun_succeeds(tmp_path, sig):
    import signal

    from cli_helpers import group_alive, signal_when, start_program, temporaries, write_collection
    paths = write_collection(tmp_path)
    out = tmp_path / "robust"
    proc = start_program(*_robustness_argv(paths, out, 20000))
    status, err = signal_when(proc, out.exists, getattr(signal, sig))   # the handler has started
    if sig == "SIGINT":
        assert status == 130 and err == "pyterrier-noise: interrupted; nothing written\n"
        assert not out.exists()
    elif sig == "SIGTERM":      # as Ctrl-C: one line, nothing written, exit 128 + SIGTERM
        assert status == 143 and err == "pyterrier-noise: terminated; nothing written\n"
        assert not out.exists()
    else:
        assert status == -signal.SIGKILL
    assert not group_alive(proc)         # no worker outlives the command
    assert main([str(a) for a in _robustness_argv(paths, out, 3)]) == 0
    assert temporaries(out) == [] and "summary.tsv" in json.loads((out / "manifest.json").read_text())["files"]


def test_robustness_removes_the_stage_a_killed_run_left(tmp_path):
    # what SIGKILL during the saving leaves (the issue saw 9 partial files): the stage of a dead process
    from cli_helpers import dead_pid, temporaries, write_collection

    from pyterrier_noise._output import TMP_PREFIX
    paths = write_collection(tmp_path, topics=5, docs=30)
    out = tmp_path / "robust"
    stage = out / f"{TMP_PREFIX}{dead_pid()}"
    stage.mkdir(parents=True)
    for name in ("summary.tsv", "replicates.tsv", "experiment.json"):
        (stage / name).write_text("partial")
    assert main([str(a) for a in _robustness_argv(paths, out, 3)]) == 0
    assert temporaries(out) == [] and (out / "summary.tsv").read_text() != "partial"


def test_robustness_replicates_beyond_memory_are_refused_with_the_size(tmp_path):
    from cli_helpers import run_cli, write_collection
    paths = write_collection(tmp_path, topics=4, docs=20, runs=2)
    status, _, err = run_cli("robustness", paths["qrels"], paths["run0"], paths["run1"], "-m", "AP", "-m", "nDCG",
                             "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", 10 ** 12, "--out", tmp_path / "o")
    # 2 runs x 4 topics x 1e12 replicates x 2 measures x 8 bytes = 1.28e14 bytes = 116.4 TiB
    assert status == 2 and "needs about 116.4 TiB" in err and "2 runs x 4 topics" in err, err
    assert not (tmp_path / "o").exists()


def test_robustness_refuses_an_option_its_model_ignores(tmp_path):
    from cli_helpers import run_cli, write_collection
    paths = write_collection(tmp_path, topics=3, docs=10, runs=2)
    status, _, err = run_cli("robustness", paths["qrels"], paths["run0"], paths["run1"], "-m", "AP", "--model",
                             "removal", "--fraction", "0.2", "--tpr", "0.5", "--fpr", "0.5", "--out", tmp_path / "o")
    assert status == 2 and "--model removal does not use --tpr (used by random, rank-biased)" in err, err
