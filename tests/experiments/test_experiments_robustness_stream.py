"""The robustness analysis streamed over chunks of replicates (issue 19, "W2 at scale").

Every table must be the same whatever the chunking, the pair p-value arrays and per-topic values
are optional, and the replicate labels keep the first-k-of-n property that makes chunking exact.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise.engine import JudgmentTable
from pyterrier_noise.experiments import RobustnessResult, robustness_experiment
from pyterrier_noise.experiments import robustness as robustness_module
from pyterrier_noise.judges import RandomFlips

MEASURES = ["RBP(p=0.8)", "AP", "nDCG@10"]


@pytest.fixture(scope="module")
def full(coll):
    """Every value kept: the reference for the streamed results."""
    return robustness_experiment(coll.runs, coll.topics, coll.qrels, MEASURES, RandomFlips(0.93, 0.07),
                                 n_replicates=17, seed=4, baseline=1, correction="holm", perquery=True,
                                 keep_pvalues=True)


def _same_frames(a: RobustnessResult, b: RobustnessResult) -> None:
    assert a.frames().keys() == b.frames().keys()
    for name, frame in a.frames().items():
        pd.testing.assert_frame_equal(frame, b.frames()[name], check_exact=True, obj=name)
    pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)


@pytest.mark.parametrize("chunk_size", [1, 3, 17, 100])
def test_tables_do_not_depend_on_chunking_nor_on_what_is_kept(coll, full, chunk_size):
    lean = robustness_experiment(coll.runs, coll.topics, coll.qrels, MEASURES, RandomFlips(0.93, 0.07),
                                 n_replicates=17, seed=4, baseline=1, correction="holm", chunk_size=chunk_size,
                                 keep_pvalues=False)
    _same_frames(full, lean)
    assert lean.values == {} and lean.p_observed == {} and lean.p_true_mapped == {}
    for m in MEASURES:
        # the per-replicate means are those of the kept per-topic values
        np.testing.assert_array_equal(lean.means[m], full.values[m].mean(axis=1))
        np.testing.assert_array_equal(lean.true_rank_at[m], full.true_rank_at[m])
    with pytest.raises(Exception, match="keep_pvalues=False"):
        lean.true_p_given_observed("AP")
    with pytest.raises(Exception, match="perquery=True"):
        lean.perquery_frame()


def test_from_arrays_equals_the_experiment(full):
    again = RobustnessResult.from_arrays(full.true, full.values, full.names, full.topics, baseline=1,
                                         correction="holm", seed=4, labels=full.labels)
    _same_frames(full, again)
    for m in MEASURES:
        np.testing.assert_array_equal(again.p_observed[m], full.p_observed[m])
        np.testing.assert_array_equal(again.p_true_mapped[m], full.p_true_mapped[m], strict=True)


def test_band_table_equals_pandas_on_every_pair_and_replicate(full):
    """p_given_observed from counts and band codes = pandas' groupby over the (pair, replicate)
    values, as the table was computed before the analysis was streamed."""
    edges = np.asarray(full.params["p_bands"])
    alpha = full.params["alpha"]
    for m in MEASURES:
        po, mp = full.p_observed[m], full.p_true_mapped[m]
        with np.errstate(invalid="ignore"):
            ok = ~np.isnan(mp) & ~np.isnan(po) & (po >= edges[0]) & (po <= edges[-1])
        band = np.clip(np.searchsorted(edges, po[ok], side="right") - 1, 0, len(edges) - 2)
        g = pd.DataFrame({"band": band, "mapped": mp[ok]}).groupby("band")["mapped"]
        idx = pd.RangeIndex(len(edges) - 1)
        ours = full.p_given_observed[full.p_given_observed["measure"] == m].reset_index(drop=True)
        np.testing.assert_array_equal(ours["count"], g.size().reindex(idx, fill_value=0))
        np.testing.assert_array_equal(ours["mean"], g.mean().reindex(idx))
        np.testing.assert_array_equal(ours["sd"], g.std(ddof=1).reindex(idx))
        qs = g.quantile([0.025, 0.25, 0.5, 0.75, 0.975]).unstack().reindex(idx)
        for col, q in zip(["q2.5", "q25", "median", "q75", "q97.5"], [0.025, 0.25, 0.5, 0.75, 0.975]):
            np.testing.assert_array_equal(ours[col], qs[q], err_msg=col)
        c = g.size().reindex(idx, fill_value=0).to_numpy().astype(float)
        conf = np.bincount(band[mp[ok] < alpha], minlength=len(idx)) / np.where(c > 0, c, np.nan)
        np.testing.assert_array_equal(ours["confirmed"], conf)


def test_keep_pvalues_default_follows_the_size(coll, monkeypatch):
    kw = dict(n_replicates=4, seed=2)
    kept = robustness_experiment(coll.runs, coll.topics, coll.qrels, ["AP"], RandomFlips(0.9, 0.1), **kw)
    assert kept.p_observed["AP"].shape == (len(coll.runs) * (len(coll.runs) - 1) // 2, 4)
    monkeypatch.setattr(robustness_module, "KEEP_PVALUES_MAX", 10)
    lean = robustness_experiment(coll.runs, coll.topics, coll.qrels, ["AP"], RandomFlips(0.9, 0.1), **kw)
    assert lean.p_observed == {}
    _same_frames(kept, lean)


def test_replicate_labels_are_first_k_of_n_and_chunks_concatenate(coll):
    table = JudgmentTable.from_qrels(coll.qrels)
    model = RandomFlips(0.93, 0.07)
    whole = model.sample_labels(table, 10, seed=9)
    np.testing.assert_array_equal(model.sample_labels(table, 4, seed=9), whole[:, :4])   # first k of n
    parts = [model.sample_labels(table, c1 - c0, seed=9, start=c0) for c0, c1 in ((0, 3), (3, 7), (7, 10))]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole)


def test_progress_is_quiet_when_stderr_is_not_a_terminal(coll, capsys, tmp_path):
    # pytest captures stderr, so it is not a terminal: progress=True prints nothing
    res = robustness_experiment(coll.runs, coll.topics, coll.qrels, ["AP"], RandomFlips(0.9, 0.1),
                                n_replicates=3, seed=1, progress=True)
    res.save(tmp_path, plots=False, progress=None)
    assert capsys.readouterr().err == ""


def test_ranking_agreement_in_blocks_of_replicates(coll, full, monkeypatch):
    from pyterrier_noise.experiments import _analysis   # private: its block size is patched to test blocks
    monkeypatch.setattr(_analysis, "_ROWS", 3)   # 17 replicates in six blocks
    again = RobustnessResult.from_arrays(full.true, full.values, full.names, full.topics, baseline=1,
                                         correction="holm", seed=4, labels=full.labels)
    _same_frames(full, again)


@pytest.mark.parametrize("chunk_size", [1, 5, 100])
def test_uncorrected_t_tests_by_critical_values_reach_the_p_value_conclusions(coll, chunk_size):
    """Without a correction the streamed analysis locates each replicate's t-test p-value among
    alpha and the band edges from critical t values (stats.all_pairs_t_codes) instead of computing
    it; with keep_pvalues=True it computes every p-value.  Every table must be identical (pair
    conclusions, p bands, summaries), for alpha = 0.05 and for an alpha that is not a band edge."""
    for alpha in (0.05, 0.07):
        kw = dict(n_replicates=13, seed=4, baseline=1, correction=None, correction_alpha=alpha)
        by_p = robustness_experiment(coll.runs, coll.topics, coll.qrels, MEASURES, RandomFlips(0.93, 0.07),
                                     keep_pvalues=True, **kw)
        by_codes = robustness_experiment(coll.runs, coll.topics, coll.qrels, MEASURES, RandomFlips(0.93, 0.07),
                                         keep_pvalues=False, chunk_size=chunk_size, **kw)
        _same_frames(by_p, by_codes)
        # the test is not vacuous: some replicate conclusions differ from the truth's
        assert (by_p.pairs[["lost", "gained"]].to_numpy() > 0).any()


def test_run_files_give_the_tables_of_the_frames(coll, tmp_path):
    """Run files handed to robustness_experiment go to the engine's Arrow reader (as the command
    line does); the result must equal the one from the same runs as frames (TREC files are 1-based,
    the frames 0-based: write_trec_run and the reader convert)."""
    from pyterrier_noise.io import write_trec_run
    paths = []
    for name, run in coll.runs.items():
        path = tmp_path / f"{name}.gz"
        write_trec_run(run, path, tag=name)
        paths.append(path)
    kw = dict(n_replicates=7, seed=2, baseline=1, correction=None)
    by_frames = robustness_experiment(coll.runs, None, coll.qrels, MEASURES, RandomFlips(0.9, 0.1), **kw)
    by_files = robustness_experiment(paths, None, coll.qrels, MEASURES, RandomFlips(0.9, 0.1), **kw)
    assert by_files.names == list(coll.runs)
    _same_frames(by_frames, by_files)
    by_dir = robustness_experiment(tmp_path, None, coll.qrels, ["AP"], RandomFlips(0.9, 0.1), **kw)
    assert sorted(by_dir.names) == sorted(coll.runs)


@pytest.mark.slow
def test_critical_value_path_on_trec_covid(covid):
    """The same check on real data (TREC-COVID round 1, 143 runs, 30 topics, 10,153 pairs, the
    run files read by the engine): uncorrected t-tests by critical values (keep_pvalues=False)
    against every p-value computed (keep_pvalues=True), 40 replicates in chunks of 15."""
    runs = covid / "runs"
    kw = dict(n_replicates=40, seed=1, correction=None, chunk_size=15)
    by_p = robustness_experiment(runs, None, covid / "qrels-rnd1.txt", ["RBP(p=0.8)", "AP"],
                                 RandomFlips(0.93, 0.07), keep_pvalues=True, **kw)
    by_codes = robustness_experiment(runs, None, covid / "qrels-rnd1.txt", ["RBP(p=0.8)", "AP"],
                                     RandomFlips(0.93, 0.07), keep_pvalues=False, **kw)
    _same_frames(by_p, by_codes)
    assert len(by_p.names) == 143 and (by_p.pairs["lost"] > 0).any()


def test_band_budget_keeps_large_bands_apart():
    """The measures' threads build band tables within a shared budget of entries: a taker that
    would exceed it waits until the others are done; one taker larger than the budget runs alone."""
    import threading

    from pyterrier_noise.experiments._analysis import _Budget   # private: the budget under test
    budget = _Budget(10)
    with budget.take(25):            # larger than the budget, alone: no wait
        assert budget.used == 25
    entered = threading.Event()

    def second() -> None:
        with budget.take(5):
            entered.set()
    with budget.take(8):
        worker = threading.Thread(target=second)
        worker.start()
        assert not entered.wait(0.3)  # 8 + 5 > 10: it cannot enter while the first holds 8
        with budget.take(2):          # 8 + 2 <= 10 fits beside the first
            assert budget.used == 10
    assert entered.wait(30)           # the first released: the second entered
    worker.join(30)
    assert budget.used == 0


@pytest.mark.slow
def test_robustness_imports_neither_scipy_stats_nor_the_other_experiments():
    """The robustness experiment imports what it uses (issue 19, start-up): not scipy.stats (its
    t-test is the Gram form over scipy.special), statsmodels, PyTerrier, nor the depth and phi
    matching experiments, which ``pyterrier_noise.experiments`` loads on first use."""
    import subprocess
    import sys
    code = ("import sys, pyterrier_noise.experiments.robustness as r, pyterrier_noise.experiments as e; "
            "print(sorted(m for m in ('scipy.stats', 'statsmodels', 'pyterrier', 'matplotlib', "
            "'pyterrier_noise.experiments.depth', 'pyterrier_noise.experiments.phi_match', "
            "'pyterrier_noise.judges') if m in sys.modules)); "
            "import pyterrier_noise.experiments.depth; print(callable(e.ap_bounds), e.depth_experiment.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True pyterrier_noise.experiments.depth"
