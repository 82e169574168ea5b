"""Cheap judges: the label reader (errors name the file and line), the ``calibrate`` command, and the
pooled variance of the pair design against brute force.

Expected values: the reader's rows are the file's own; the pooled variance is the formula
``sum_h N_h^2 (1 - f_h) / n_h * (E[w^2] E[r^2] - E[w]^2 E[r]^2) * N_h / (N_h - 1)`` (``E[r]^2``
estimated unbiasedly) written out with loops over strata (brute force); where the rank weights are
constant, it is Cochran (1977)'s Eq 5.8 and unbiased, checked by exact enumeration of the samples."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_helpers import run_cli
from pyterrier_noise import InputError
from pyterrier_noise.correction import CorrectionWarning
from pyterrier_noise.correction import CheapStudy, GoldSample, sample_pairs
from pyterrier_noise.engine import AlignedRuns, MeasureSpec
from pyterrier_noise.io import read_cheap_qrels, write_trec_qrels, write_trec_run
from pyterrier_noise.correction.estimators import MIN_DESIGN_DF
from test_correction_cheap import all_samples, labels_on_table, study_of, tiny


def test_read_umbrela_jsonl_csv_and_trec(tmp_path):
    f = tmp_path / "llm.jsonl"
    f.write_text('{"qid": "1", "docid": "d1", "grade": 3, "probability": 0.9}\n\n'
                 '{"query_id": 2, "doc_id": "d2", "grade": 0, "probability": 0.2}\n')
    # the second record names its columns differently: both spellings are read
    df = read_cheap_qrels(f)
    assert df.to_dict("list") == {"qid": ["1", "2"], "docno": ["d1", "d2"], "label": [3, 0],
                                  "probability": [0.9, 0.2]}
    c = tmp_path / "llm.csv"
    c.write_text("topic,docno,relevance\n1,d1,2\n1,d2,0\n")
    assert read_cheap_qrels(c)["label"].tolist() == [2, 0]
    q = tmp_path / "qrels.txt"
    q.write_text("1 0 d1 1\n1 0 d2 0\n")
    assert read_cheap_qrels(q)["label"].tolist() == [1, 0]


@pytest.mark.parametrize("text, message", [
    ('{"qid": "1", "docid": "d1", "grade": 1}\n{"qid": "1", "docid": "d2", "grade": "high"}\n',
     r"llm.jsonl, line 2: column 'grade' must be a number, got 'high'"),
    ('{"qid": "1", "docid": "d1", "grade": 1}\nnot json\n', r"llm.jsonl, line 2: not valid JSON"),
    ('{"qid": "1", "docid": "d1", "grade": 1.5}\n', r"llm.jsonl, line 1: grade 1.5 is not a whole number"),
    ('{"qid": "1", "docid": "d1", "grade": 1}\n{"qid": "1", "docid": "d1", "grade": 2}\n',
     r"line 2: pair qid='1' docno='d1' is labelled twice"),
    ('{"qid": "1", "docid": "d1", "grade": 1, "prob": 1.5}\n', r"line 1: column 'probability' is a probability in \[0, 1\], got 1.5"),
    ('{"qid": "1", "grade": 1}\n', r"llm.jsonl, line 1: no docno"),
])
def test_reader_errors_name_file_and_line(tmp_path, text, message):
    f = tmp_path / "llm.jsonl"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        read_cheap_qrels(f)


def test_csv_error_names_the_line(tmp_path):
    c = tmp_path / "llm.csv"
    c.write_text("qid,docid,grade\n1,d1,2\n1,d2,x\n")
    with pytest.raises(InputError, match=r"llm.csv, line 3: column 'grade'"):
        read_cheap_qrels(c)


def _pooled_brute(W, r, smp, k):
    """The pooled variance of run k's Horvitz-Thompson total of ``W[k] * r``, written with loops:
    Cochran (1977) Eq 5.6 with each stratum's population variance of ``w r`` taken as
    ``E[w^2] E[r^2] - E[w]^2 E[r]^2`` (``E[r]^2`` estimated unbiasedly)."""
    v = 0.0
    for h in np.unique(smp.stratum_all):
        pop = smp.stratum_all == h
        rh = r[smp.rows[smp.stratum == h]]
        Nh, nh = pop.sum(), len(rh)
        Ew, Ew2 = W[k, pop].mean(), (W[k, pop] ** 2).mean()
        Er2 = (rh ** 2).mean()
        Er_sq = rh.mean() ** 2 - ((1 - nh / Nh) * rh.var(ddof=1) / nh if nh > 1 else 0.0)
        v += Nh ** 2 * (1 - nh / Nh) / nh * Nh / (Nh - 1) * (Ew2 * Er2 - Ew ** 2 * Er_sq)
    return max(v, 0.0)


def test_pooled_variance_brute_force():
    runs, truth, cheap = tiny(seed=11, n_topics=3, n_docs=8)
    aligned = AlignedRuns.build(runs, cheap, ties="trec_eval")
    spec = MeasureSpec("RBP", p=0.8)
    pooled = CheapStudy(aligned, [spec], variance="pooled")
    design = CheapStudy(aligned, [spec], variance="design")
    c = aligned.table.labels
    g = labels_on_table(pooled, truth)
    smp = sample_pairs(c, 10, design="stratified", importance=pooled.importance(), n_bins=1, seed=2)
    ep = pooled.estimate(c, g[smp.rows], smp, methods=("ppi", "ppi++"))[spec]
    ed = design.estimate(c, g[smp.rows], smp, methods=("ppi",))[spec]
    N = len(c)
    W = np.zeros((pooled.n_runs, N))
    for j in range(N):
        lab = np.zeros(N)
        lab[j] = 1.0
        W[:, j] = pooled.per_topic(lab)[spec].mean(axis=1)
    y, h = (g >= 1).astype(float), (c >= 1).astype(float)     # binary gains
    grid = np.linspace(0, 1, 1001)
    for k in range(pooled.n_runs):
        v = _pooled_brute(W, y - h, smp, k)       # PPI's residual (lam = 1)
        se_p, se_d, df = ep.systems["ppi"][1][k], ed.systems["ppi"][1][k], ed.df["ppi"][0][k]
        if df < MIN_DESIGN_DF:      # the pooled variance replaces a design one resting on few terms
            assert se_p ** 2 == pytest.approx(v, rel=1e-10, abs=1e-15)
            # PPI++: lam minimises the pooled variance (grid search, brute force)
            vg = [_pooled_brute(W, y - lam * h, smp, k) for lam in grid]
            assert ep.systems["ppi++"][1][k] ** 2 == pytest.approx(min(vg), rel=1e-5, abs=1e-12)
        else:
            assert se_p == pytest.approx(se_d, rel=1e-12)
    assert (ep.systems["ppi"][1] != ed.systems["ppi"][1]).any()     # the case above really happened


def test_pooled_variance_is_the_design_variance_when_weights_are_constant_by_stratum():
    """P@5 over runs that rank all 5 documents of every topic: every pair has the same rank weight, so the
    independence model holds exactly; the pooled variance then equals the stratified design variance
    (Cochran 1977, Eq 5.8) on every sample, and its expectation over every possible sample (exact
    enumeration) equals the estimator's true variance."""
    runs, truth, cheap = tiny(seed=5, n_topics=2, n_docs=5)
    spec = MeasureSpec("P", cutoff=5)
    st = study_of(runs, cheap, [spec])
    c = st.aligned.table.labels
    g = labels_on_table(st, truth)
    true = st.per_topic(g)[spec].mean(axis=1)
    smp = sample_pairs(c, 6, design="stratified", importance=st.importance(), n_bins=1, seed=1)
    mean_var, mean_est, mean_sq = 0.0, 0.0, 0.0
    for s_, prob in all_samples(smp):
        est = st.estimate(c, g[s_.rows], s_, methods=("ppi",))[spec]
        v, se = est.systems["ppi"]
        z = (g[s_.rows] >= 1).astype(float) - (c[s_.rows] >= 1).astype(float)
        w = 1.0 / (5 * 2)
        strat = 0.0
        for h in np.unique(s_.stratum):
            m = s_.stratum == h
            Nh, nh = (s_.stratum_all == h).sum(), m.sum()
            if nh > 1:
                strat += Nh ** 2 * (1 - nh / Nh) * np.var(w * z[m], ddof=1) / nh
        np.testing.assert_allclose(se ** 2, strat, rtol=1e-10, atol=1e-15)
        mean_var = mean_var + prob * se ** 2
        mean_est = mean_est + prob * v
        mean_sq = mean_sq + prob * v ** 2
    np.testing.assert_allclose(mean_est, true, atol=1e-12)
    np.testing.assert_allclose(mean_var, mean_sq - mean_est ** 2, rtol=1e-9, atol=1e-15)


def _write_runs(runs, rdir):
    """Write a tiny collection's runs as TREC files in ``rdir`` (ranks from the scores); returns ``rdir``."""
    rdir.mkdir()
    for name, frame in runs.items():
        write_trec_run(frame.assign(rank=frame.groupby("qid")["score"].rank(ascending=False, method="first")),
                       rdir / name)
    return rdir


def _calibrate_files(tmp_path):
    """Run files, cheap qrels and a 12-pair gold sample of a tiny collection, written to ``tmp_path``
    (``runs/``, ``cheap.txt``, ``gold.txt``); returns the runs' directory."""
    runs, truth, cheap = tiny(seed=12, n_topics=4, n_docs=8)
    rdir = _write_runs(runs, tmp_path / "runs")
    write_trec_qrels(cheap, tmp_path / "cheap.txt")
    write_trec_qrels(truth.sample(12, random_state=0), tmp_path / "gold.txt")
    return rdir


def test_cli_calibrate_writes_tables_and_figures(tmp_path):
    rdir = _calibrate_files(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt",
                                   rdir, "-m", "P@3", "-m", "RBP(p=0.8)", "--method", "naive,ppi++,gold",
                                   "--out", out)
    assert code == 0, stderr
    systems = pd.read_csv(out / "systems.tsv", sep="\t")
    assert list(systems.columns[:4]) == ["name", "method", "P@3", "P@3 se"]
    assert sorted(systems["method"].unique()) == ["gold", "naive", "ppi++"]
    pairs = pd.read_csv(out / "pairs.tsv", sep="\t")
    assert len(pairs) == 3 * 3 and "RBP(p=0.8) p-value" in pairs.columns
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"systems.tsv", "pairs.tsv", "intervals-P@3.png", "experiment.json"} <= set(manifest["files"])
    code, _, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt",
                              rdir, "-m", "P@3", "--method", "ppi,magic", "--out", tmp_path / "o2")
    assert code == 2 and "unknown method(s) ['magic']" in stderr


def test_cli_calibrate_of_one_run_ranks_it_first(tmp_path):
    """One run: no pair to compare, its rank is 1 with the set of ranks {1} (the ranking's pair counts
    used to fail on the empty pairs)."""
    rdir = _calibrate_files(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt",
                                   rdir / "r0", "-m", "P@3", "--method", "naive,ppi++,gold", "--no-plots", "--out", out)
    assert code == 0, stderr
    assert "1 run, 12 gold labels" in stdout
    ranking = pd.read_csv(out / "ranking.tsv", sep="\t")
    assert ranking[["name", "rank", "rank lo", "rank hi"]].drop_duplicates().values.tolist() == [["r0", 1, 1, 1]]
    assert pd.read_csv(out / "pairs.tsv", sep="\t").empty
    systems = pd.read_csv(out / "systems.tsv", sep="\t")
    assert set(systems["name"]) == {"r0"}


def test_cli_calibrate_gives_ndcg_under_the_pair_design(tmp_path):
    # nDCG@k and AP by the ratio estimators (tests/correction/test_correction_pair_ndcg.py and
    # tests/correction/test_correction_pair_ap.py check their values); RR stays NaN
    rdir = _calibrate_files(tmp_path)
    args = ("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt", rdir,
            "-m", "nDCG@5", "-m", "AP", "-m", "RR", "--method", "ppi,ppi++,gold", "--no-plots")   # figures: above
    # the small gold sample holds fewer relevant pairs per topic than AP's minimum (10): with the
    # check off, AP is estimated; by default it is NaN, and the warning gives the counts
    with pytest.warns(CorrectionWarning, match=r"not estimated \(NaN\): ppi for RR, ppi\+\+ for RR, gold for RR"):
        code, _, stderr = run_cli(*args, "--ap-min-relevant", "0", "--out", tmp_path / "out")
    assert code == 0, stderr
    systems = pd.read_csv(tmp_path / "out" / "systems.tsv", sep="\t")
    for m in ("nDCG@5", "AP"):
        assert np.isfinite(systems[[m, f"{m} se", f"{m} lo", f"{m} hi"]].to_numpy()).all()
    assert systems["RR"].isna().all()
    with pytest.warns(CorrectionWarning, match=r"not estimated \(NaN\): ppi for RR, ppi\+\+ for RR, gold for RR"), \
            pytest.warns(CorrectionWarning, match="AP under the pair design is not estimated .* the minimum is 10"):
        code, _, stderr = run_cli(*args, "--out", tmp_path / "default")
    assert code == 0, stderr
    default = pd.read_csv(tmp_path / "default" / "systems.tsv", sep="\t")
    assert default["AP"].isna().all() and np.isfinite(default["nDCG@5"]).all()


def test_judging_session_serves_the_planned_pairs_durably(tmp_path):
    from pyterrier_noise.correction import cheap_experiment, planned_selector
    from pyterrier_noise.selection import JudgingSession, QrelsOracle
    runs, truth, cheap = tiny(seed=13, n_topics=3, n_docs=8)
    study = CheapStudy(AlignedRuns.build(runs, cheap), [MeasureSpec("P", cutoff=3)])
    plan = sample_pairs(study.aligned.table.labels, 9, importance=study.importance(), n_bins=1, seed=4)
    frame = plan.to_frame(study.aligned.table)
    path = tmp_path / "gold.sqlite"
    session = JudgingSession(path, runs, selector_factory=planned_selector(frame))
    session.run(QrelsOracle(truth), budget=4)
    session.close()
    again = JudgingSession(path, selector_factory=planned_selector(frame))     # reopened: resumes the plan
    again.run(QrelsOracle(truth), budget=len(frame))
    judged = again.judged_qrels()
    again.close()
    # exactly the planned pairs, in the plan's order, with the oracle's labels
    assert list(zip(judged["qid"], judged["docno"])) == list(zip(frame["qid"], frame["docno"]))
    expected = frame.merge(truth, on=["qid", "docno"])["label"].to_numpy(dtype=float)
    np.testing.assert_array_equal(judged["label"].to_numpy(dtype=float), expected)
    res = cheap_experiment(runs, cheap, judged[["qid", "docno", "label"]], ["P@3"], methods=("ppi",), sample=plan)
    assert res.design == "stratified" and res.systems["P@3"].notna().all()
    with pytest.raises(InputError, match="was not retrieved by any run"):
        planned_selector(pd.DataFrame({"qid": ["1"], "docno": ["nowhere"]}))(runs)


def test_cli_plan_judge_calibrate_three_commands(tmp_path):
    """plan -> judge (a scripted session; --qrels stands in for the people) -> calibrate: the command's
    estimates equal the library's on the same stratified sample, whose probabilities the design file
    carries (so they differ from the simple-random-sample reading of the same gold labels)."""
    from pyterrier_noise.correction import cheap_experiment
    runs, truth, cheap = tiny(seed=14, n_topics=4, n_docs=8)
    rdir = _write_runs(runs, tmp_path / "runs")
    write_trec_qrels(cheap, tmp_path / "cheap.txt")
    write_trec_qrels(truth, tmp_path / "truth.txt")
    plan = tmp_path / "plan"
    code, _, stderr = run_cli("calibrate", "--plan", "14", "--design", "stratified", "--cheap", tmp_path / "cheap.txt",
                              rdir, "-m", "RBP(p=0.8)", "--out", plan)
    assert code == 0, stderr
    design = pd.read_csv(plan / "design.tsv", sep="\t", dtype={"qid": str, "docno": str})
    planned = pd.read_csv(plan / "plan.tsv", sep="\t", dtype={"qid": str, "docno": str})
    assert len(design) == len(truth) and design["planned"].sum() == 14 == len(planned)
    assert design["pi"].sum() == pytest.approx(14)            # fixed-size design: sum of pi is n
    session = tmp_path / "gold.sqlite"
    code, _, stderr = run_cli("judge", plan / "plan.run", "--session", session, "--method", "pool",
                              "--qrels", tmp_path / "truth.txt", "--labels", "0,1,2")
    assert code == 0, stderr
    out = tmp_path / "out"
    code, _, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", session, "--sample",
                              plan / "design.tsv", rdir, "-m", "RBP(p=0.8)", "--method", "ppi,gold",
                              "--no-plots", "--out", out)
    assert code == 0, stderr
    got = pd.read_csv(out / "systems.tsv", sep="\t")
    gold = planned.merge(truth, on=["qid", "docno"])[["qid", "docno", "label"]]
    assert len(gold) == 14
    lib = cheap_experiment(runs, cheap, gold, ["RBP(p=0.8)"], methods=("ppi", "gold"), sample=design).systems
    np.testing.assert_allclose(got["RBP(p=0.8)"], lib["RBP(p=0.8)"], rtol=1e-5)
    np.testing.assert_allclose(got["RBP(p=0.8) se"], lib["RBP(p=0.8) se"], rtol=1e-5)
    srs = cheap_experiment(runs, cheap, gold, ["RBP(p=0.8)"], methods=("ppi", "gold"), sample=None).systems
    assert not np.allclose(srs["RBP(p=0.8)"], lib["RBP(p=0.8)"])
    assert json.loads((out / "experiment.json").read_text())["design"] == "stratified"


def test_design_frame_round_trip_and_errors():
    runs, truth, cheap = tiny(seed=15, n_topics=3, n_docs=6)
    study = CheapStudy(AlignedRuns.build(runs, cheap), [MeasureSpec("P", cutoff=3)])
    table = study.aligned.table
    smp = sample_pairs(table.labels, 8, importance=study.importance(), n_bins=1, seed=3)
    frame = smp.design_frame(table)
    back = GoldSample.from_design_frame(table, frame)
    for a in ("rows", "pi", "factor", "stratum", "pi_all", "stratum_all"):
        np.testing.assert_array_equal(getattr(back, a), getattr(smp, a))
    # a planned pair left unjudged: its stratum is taken as the simple random sample of those judged
    with pytest.warns(UserWarning, match="1 planned pair"):
        fewer = GoldSample.from_design_frame(table, frame, smp.rows[1:])
    h = smp.stratum[0]
    assert fewer.pi_all[smp.stratum_all == h][0] == pytest.approx(
        ((smp.stratum[1:] == h).sum()) / (smp.stratum_all == h).sum())
    with pytest.raises(InputError, match="not planned"):
        GoldSample.from_design_frame(table, frame, np.setdiff1d(np.arange(len(table)), smp.rows)[:1])
    bad = frame.assign(pi=frame["pi"].where(frame.index != 2, 0.0))
    with pytest.raises(InputError, match="row 3: column 'pi'"):
        GoldSample.from_design_frame(table, bad)
    with pytest.raises(InputError, match="missing column"):
        GoldSample.from_design_frame(table, frame.drop(columns="stratum"))


@pytest.mark.parametrize("which, text, where", [
    ("cheap.jsonl", '{"qid": "1", "docid": "d0", "grade": 7}\n', "cheap.jsonl, line 1"),
    ("cheap.csv", "qid,docid,grade\n1,d0,2\n1,d1,-1\n", "cheap.csv, line 3"),
    ("cheap.txt", "1 0 d0 1\n1 0 d1 7\n", "cheap.txt, line 2"),
])
def test_cheap_grades_off_the_scale_are_refused_with_file_and_line(tmp_path, which, text, where):
    f = tmp_path / which
    f.write_text(text)
    with pytest.raises(InputError, match=rf"{where}: grade -?\d+ is not on the scale .*; the grades are 0, 1, 2, 3"):
        read_cheap_qrels(f)


def test_calibrate_refuses_a_gold_grade_off_the_scale(tmp_path):
    rdir = _calibrate_files(tmp_path)
    gold = (tmp_path / "gold.txt").read_text().splitlines()
    q, it, d, _ = gold[3].split()
    gold[3] = f"{q} {it} {d} 7"
    (tmp_path / "gold.txt").write_text("\n".join(gold) + "\n")
    code, _, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt",
                              rdir, "-m", "P@5", "--out", tmp_path / "out")
    assert code == 2
    assert "gold.txt, line 4" in stderr and "grade 7 is not on the scale" in stderr


@pytest.mark.parametrize("option, value, message", [
    ("--plan", "0", "--plan must be an integer >= 1, got 0"),
    ("--correction-alpha", "2", "--correction-alpha must be strictly between 0 and 1, got 2.0"),
])
def test_calibrate_errors_name_the_option_typed(tmp_path, option, value, message):
    rdir = _calibrate_files(tmp_path)
    more = () if option == "--plan" else ("--gold", tmp_path / "gold.txt")
    code, _, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", *more, rdir, "-m", "P@5",
                              option, value, "--out", tmp_path / "out")
    assert code == 2
    assert f"error: {message}" in stderr
