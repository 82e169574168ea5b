"""A gold file given without a design: a simple random sample, post-stratified (correction.design.post_stratify),
checked for plausibility (srs_plausibility), and estimates kept in the measure's range."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.correction import CheapStudy, cheap_experiment
from pyterrier_noise.correction.cheap import measure_range
from pyterrier_noise.correction.design import MIN_POST_STRATUM, post_stratify, srs_plausibility
from pyterrier_noise.engine import AlignedRuns
from pyterrier_noise.measures import to_spec

K = 5


def collection(seed: int = 0, n_runs: int = 4, n_topics: int = 6, n_docs: int = 40):
    """Every run ranks every judged document (distinct scores); graded truth 0-2 that favours the runs' top
    ranks, and a cheap judge that errs on 40% of the pairs."""
    rng = np.random.default_rng(seed)
    quality = rng.random((n_topics, n_docs))
    truth = pd.DataFrame([(str(t), f"d{d}", int(min(2, np.floor(3 * quality[t, d] ** 2))))
                          for t in range(n_topics) for d in range(n_docs)], columns=["qid", "docno", "label"])
    runs = {}
    for r in range(n_runs):
        score = quality + rng.normal(0, 0.3, quality.shape)
        runs[f"r{r}"] = pd.DataFrame({"qid": truth["qid"], "docno": truth["docno"], "score": score.ravel()})
    flip = rng.random(len(truth)) < 0.4
    cheap = truth.assign(label=np.where(flip, (truth["label"] + rng.integers(1, 3, len(truth))) % 3, truth["label"]))
    return runs, truth, cheap


def top_k_weights(runs: dict, frame: pd.DataFrame) -> np.ndarray:
    """``w[r, i]``: 1/K if run r ranks pair i (a row of ``frame``) in its top K, else 0 (by hand)."""
    w = np.zeros((len(runs), len(frame)))
    where = {(q, d): i for i, (q, d) in enumerate(zip(frame["qid"], frame["docno"]))}
    for r, run in enumerate(runs.values()):
        for _, g in run.groupby("qid"):
            for q, d in zip(g.sort_values("score", ascending=False)["qid"][:K],
                            g.sort_values("score", ascending=False)["docno"][:K]):
                w[r, where[(q, d)]] = 1.0 / K
    return w


def setting(seed: int = 0, n: int = 120):
    runs, truth, cheap = collection(seed)
    aligned = AlignedRuns.build(runs, cheap, ties="trec_eval")
    spec = to_spec(f"P@{K}")[0]
    study = CheapStudy(aligned, [spec], variance="design")
    frame = aligned.table.frame
    gold_all = frame[["qid", "docno"]].merge(truth, on=["qid", "docno"])["label"].to_numpy(dtype=float)
    rows = np.sort(np.random.default_rng(seed + 1).choice(len(frame), n, replace=False))
    return runs, truth, cheap, aligned, spec, study, gold_all, rows


def test_post_strata_are_unions_of_the_design_strata_with_enough_gold_pairs():
    _, _, _, aligned, _, study, _, rows = setting()
    cheap = aligned.table.labels
    imp = study.importance()
    smp = post_stratify(cheap, rows, imp)
    counts = np.bincount(smp.stratum)
    assert len(counts) >= 3 and counts.min() >= MIN_POST_STRATUM and counts.sum() == len(rows)
    # a cell (cheap label x importance tercile) never straddles two post-strata
    edges = np.quantile(imp, [1 / 3, 2 / 3])
    cell = cheap * 10 + np.searchsorted(np.unique(edges), imp, side="right")
    for c in np.unique(cell):
        assert len(np.unique(smp.stratum_all[cell == c])) == 1
    # pi = n_h / N_h, the same for every pair of a post-stratum
    Nh = np.bincount(smp.stratum_all)
    np.testing.assert_allclose(smp.pi_all, counts[smp.stratum_all] / Nh[smp.stratum_all])
    # with fewer gold pairs than the minimum: one stratum, the plain simple random sample
    one = post_stratify(cheap, rows[:MIN_POST_STRATUM - 1], imp)
    assert (one.stratum_all == 0).all() and np.allclose(one.pi_all, (MIN_POST_STRATUM - 1) / len(cheap))


def test_post_stratified_estimates_equal_the_brute_force_sums():
    runs, truth, cheap_q, aligned, spec, study, gold_all, rows = setting()
    frame = aligned.table.frame
    cheap = aligned.table.labels
    smp = post_stratify(cheap, rows, study.importance())
    est = study.estimate(cheap, gold_all[rows], smp, methods=("gold", "ppi"))[spec]
    w = top_k_weights(runs, frame)
    T = aligned.n_topics
    y, c = (gold_all >= 1).astype(float), (cheap >= 1).astype(float)
    for method, z_of in (("gold", lambda r: w[r] * y), ("ppi", lambda r: w[r] * (y - c))):
        value, se = est.systems[method]
        for r in range(len(runs)):
            z = z_of(r)
            total, var = 0.0, 0.0
            for h in np.unique(smp.stratum_all):
                members = np.flatnonzero(smp.stratum_all == h)
                picked = np.intersect1d(members, rows)
                Nh, nh = len(members), len(picked)
                total += Nh / nh * z[picked].sum()
                var += Nh ** 2 * (1 - nh / Nh) * np.var(z[picked], ddof=1) / nh
            if method == "ppi":
                total += (w[r] * c).sum()
            assert value[r] == pytest.approx(total / T, abs=1e-12)
            assert se[r] == pytest.approx(np.sqrt(var) / T, abs=1e-12)
    # cheap_experiment takes a gold file without a design so, and says so
    gold = frame[["qid", "docno"]].iloc[rows].assign(label=gold_all[rows])
    res = cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=("gold", "ppi"))
    assert res.design == "post-stratified"
    got = res.systems[res.systems["method"] == "ppi"].set_index("name")[f"P@{K}"]
    np.testing.assert_allclose(got[aligned.run_names].to_numpy(), np.clip(est.systems["ppi"][0], 0, 1), atol=1e-12)


def test_a_random_sample_passes_the_plausibility_check_and_a_biased_one_does_not():
    _, _, _, aligned, _, study, _, _ = setting()
    table = aligned.table
    imp = study.importance()
    N = len(table)
    ps = [srs_plausibility(np.random.default_rng(k).choice(N, 100, replace=False), table.labels, imp,
                           table.topic_index)["p"] for k in range(40)]
    assert min(ps) > 1e-3
    top = np.argsort(-imp)[:100]                  # the pairs the runs rank highest
    assert srs_plausibility(top, table.labels, imp, table.topic_index)["importance"] < 1e-9
    whole = np.flatnonzero(table.topic_index < 2)[::2]      # half of two topics
    assert srs_plausibility(whole, table.labels, imp, table.topic_index)["topic"] < 1e-9
    rng = np.random.default_rng(0)     # 70 of 90 gold pairs from the 34% the cheap judge calls 2
    high, rest = np.flatnonzero(table.labels == 2), np.flatnonzero(table.labels != 2)
    by_label = np.r_[rng.choice(high, 70, replace=False), rng.choice(rest, 20, replace=False)]
    assert 70 / 90 > 2 * (table.labels == 2).mean()
    assert srs_plausibility(by_label, table.labels, imp, table.topic_index)["cheap label"] < 1e-3


def test_an_undeclared_implausible_gold_file_is_refused_with_what_to_pass():
    runs, truth, cheap_q, aligned, _, study, gold_all, _ = setting()
    frame = aligned.table.frame
    top = np.sort(np.argsort(-study.importance())[:100])
    gold = frame[["qid", "docno"]].iloc[top].assign(label=gold_all[top])
    with pytest.raises(InputError, match=r"concentrated in some ranks.*--sample design\.tsv.*--sample srs"):
        cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=("gold",))
    # declared: taken as it is (the user's word)
    res = cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=("gold",), sample="srs")
    assert res.design == "post-stratified"
    whole = truth[truth["qid"].isin(["0", "1"])]
    with pytest.warns(UserWarning, match="every cheap-judged pair of 2 topics.*topic design.*--sample srs"):
        res = cheap_experiment(runs, cheap_q, whole, [f"P@{K}"], methods=("gold",))
    assert res.design == "topics"


def test_estimates_and_interval_ends_are_kept_in_the_measure_range():
    assert measure_range(to_spec("P@10")[0]) == (0.0, 1.0) and measure_range(to_spec("nDCG@10")[0]) == (0.0, 1.0)
    assert measure_range(SimpleNamespace(family="DCG")) == (0.0, np.inf)
    # a tiny declared random sample whose raw PPI estimate leaves [0, 1]: reported clipped, the SE kept
    for seed in range(200):
        runs, truth, cheap_q, aligned, spec, _, gold_all, rows = setting(seed, n=4)
        study = CheapStudy(aligned, [spec])
        smp = post_stratify(aligned.table.labels, rows, study.importance())
        raw = study.estimate(aligned.table.labels, gold_all[rows], smp, methods=("ppi",))[spec]
        v, se = raw.systems["ppi"]
        if ((v < 0) | (v > 1)).any():
            break
    else:
        pytest.fail("no seed gave an estimate out of range")
    gold = aligned.table.frame[["qid", "docno"]].iloc[rows].assign(label=gold_all[rows])
    res = cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=("ppi",), sample="srs")
    got = res.systems.set_index("name").loc[aligned.run_names]
    q = raw.quantile("ppi")
    np.testing.assert_allclose(got[f"P@{K}"], np.clip(v, 0, 1), atol=1e-12)
    np.testing.assert_allclose(got[f"P@{K} se"], se, atol=1e-12)
    np.testing.assert_allclose(got[f"P@{K} lo"], np.clip(v - q * se, 0, 1), atol=1e-12)
    np.testing.assert_allclose(got[f"P@{K} hi"], np.clip(v + q * se, 0, 1), atol=1e-12)
    assert ((got[[f"P@{K}", f"P@{K} lo", f"P@{K} hi"]] >= 0) & (got[[f"P@{K}", f"P@{K} lo", f"P@{K} hi"]] <= 1)).all(
        axis=None)


def test_pair_p_values_are_paired_over_topics_by_default_and_corrected_as_pt_experiment():
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    from pyterrier_noise.correction.estimators import p_value
    runs, truth, cheap_q, aligned, spec, _, gold_all, rows = setting()
    study = CheapStudy(aligned, [spec])
    smp = post_stratify(aligned.table.labels, rows, study.importance())
    gold = aligned.table.frame[["qid", "docno"]].iloc[rows].assign(label=gold_all[rows])
    methods = ("naive", "ppi++", "gold")
    res = cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=methods, correction="holm")
    coll = cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=methods, test="collection")
    est = {sc: study.estimate(aligned.table.labels, gold_all[rows], smp, methods=methods, scope=sc)[spec]
           for sc in ("topics", "collection")}
    name = f"P@{K}"
    for m in methods:
        for frame, sc in ((res, "topics"), (coll, "collection")):
            got = frame.pairs[frame.pairs["method"] == m]
            dv, dse = est[sc].pairs[m]
            np.testing.assert_allclose(got[f"{name} p-value"], p_value(dv, dse, est[sc].df[m][1]), atol=1e-12)
            # the intervals follow scope (collection, the default), whatever the test
            np.testing.assert_allclose(got[f"{name} se"], est["collection"].pairs[m][1], atol=1e-12)
        got = res.pairs[res.pairs["method"] == m]
        ref = multipletests(got[f"{name} p-value"].to_numpy(), method="holm")[1]
        np.testing.assert_allclose(got[f"{name} p-value corrected"], ref, atol=1e-12)
        assert (got[f"{name} reject"] == (ref <= 0.05)).all()
    assert (res.pairs.query("method == 'gold'")[f"{name} p-value"] >
            coll.pairs.query("method == 'gold'")[f"{name} p-value"] - 1e-12).all()   # topic sampling adds variance
    # the naive p-value is the paired t-test over topics on the cheap labels
    naive = study.per_topic(aligned.table.labels)[spec]
    row = res.pairs.query("method == 'naive'").iloc[0]
    i, j = list(aligned.run_names).index(row["name"]), list(aligned.run_names).index(row["baseline"])
    assert row[f"{name} p-value"] == pytest.approx(stats.ttest_rel(naive[i], naive[j]).pvalue, abs=1e-12)
    with pytest.raises(InputError, match="correction"):
        cheap_experiment(runs, cheap_q, gold, [name], methods=("gold",), correction="sidak")


def test_calibrate_help_says_the_test_default_and_writes_corrected_p_values(tmp_path, capsys):
    from pyterrier_noise.cli import main
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--test {topics,collection}" in text and "topics (default): paired over topics" in text
    runs, truth, cheap_q, aligned, spec, _, gold_all, rows = setting()
    d = tmp_path / "runs"
    d.mkdir()
    for name, run in runs.items():
        r = run.sort_values(["qid", "score"], ascending=[True, False])
        r.assign(q0="Q0", rank=r.groupby("qid").cumcount() + 1, tag=name)[
            ["qid", "q0", "docno", "rank", "score", "tag"]].to_csv(d / name, sep=" ", header=False, index=False)
    cheap_q.to_csv(tmp_path / "cheap.tsv", sep="\t", index=False)
    gold = aligned.table.frame[["qid", "docno"]].iloc[rows].assign(iter=0, label=gold_all[rows].astype(int))
    gold[["qid", "iter", "docno", "label"]].to_csv(tmp_path / "gold.txt", sep=" ", header=False, index=False)
    code = main(["calibrate", "--cheap", str(tmp_path / "cheap.tsv"), "--gold", str(tmp_path / "gold.txt"), str(d),
                 "-m", f"P@{K}", "--method", "ppi++,gold", "--correction", "fdr_bh", "--no-plots",
                 "--out", str(tmp_path / "out")])
    assert code == 0
    pairs = pd.read_csv(tmp_path / "out" / "pairs.tsv", sep="\t")
    assert {f"P@{K} p-value corrected", f"P@{K} reject"} <= set(pairs.columns)


def test_soft_labels_are_the_prediction_of_ppi():
    runs, truth, cheap_q, aligned, spec, study, gold_all, rows = setting()
    cheap = aligned.table.labels
    smp = post_stratify(cheap, rows, study.importance())
    hard = study.estimate(cheap, gold_all[rows], smp, methods=("ppi", "ppi++"))[spec]
    same = study.estimate(cheap, gold_all[rows], smp, methods=("ppi", "ppi++"), soft=(cheap >= 1).astype(float))[spec]
    for m in ("ppi", "ppi++"):       # the hard labels' gains given as soft labels: the same estimates
        np.testing.assert_allclose(same.systems[m][0], hard.systems[m][0], atol=1e-12)
        np.testing.assert_allclose(same.systems[m][1], hard.systems[m][1], atol=1e-12)
    q = np.clip(np.where(cheap >= 1, 0.8, 0.25) + np.random.default_rng(0).normal(0, 0.05, len(cheap)), 0, 1)
    est = study.estimate(cheap, gold_all[rows], smp, methods=("ppi",), soft=q)[spec]
    w = top_k_weights(runs, aligned.table.frame)
    y = (gold_all >= 1).astype(float)
    for r in range(len(runs)):         # sum_i w q + sum_h N_h / n_h sum_{i in S_h} w (y - q), by hand
        total = (w[r] * q).sum()
        for h in np.unique(smp.stratum_all):
            members = np.flatnonzero(smp.stratum_all == h)
            picked = np.intersect1d(members, rows)
            total += len(members) / len(picked) * (w[r, picked] * (y[picked] - q[picked])).sum()
        assert est.systems["ppi"][0][r] == pytest.approx(total / aligned.n_topics, abs=1e-12)
    # through cheap_experiment: the probability column of the cheap labels
    frame = aligned.table.frame
    cheap_p = frame[["qid", "docno"]].assign(label=cheap.astype(int), probability=q)
    gold = frame[["qid", "docno"]].iloc[rows].assign(label=gold_all[rows])
    res = cheap_experiment(runs, cheap_p, gold, [f"P@{K}"], methods=("ppi",), soft=True)
    with pytest.raises(InputError, match="probability column"):
        cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=("ppi",), soft=True)
    got = res.systems.set_index("name").loc[aligned.run_names, f"P@{K}"].to_numpy()
    np.testing.assert_allclose(got, np.clip(est.systems["ppi"][0], 0, 1), atol=1e-12)


def test_ranking_sets_come_from_the_holm_adjusted_pairwise_tests():
    from statsmodels.stats.multitest import multipletests

    from pyterrier_noise.correction.cheap import rankings
    runs, truth, cheap_q, aligned, spec, _, gold_all, rows = setting(n=200)
    gold = aligned.table.frame[["qid", "docno"]].iloc[rows].assign(label=gold_all[rows])
    res = cheap_experiment(runs, cheap_q, gold, [f"P@{K}"], methods=("naive", "ppi++"))
    for method in ("naive", "ppi++"):
        rk = res.ranking(f"P@{K}", method).set_index("name")
        pr = res.pairs[res.pairs["method"] == method]
        adj = multipletests(pr[f"P@{K} p-value"].to_numpy(), method="holm")[1]
        est = res.systems[res.systems["method"] == method].set_index("name")[f"P@{K}"]
        for name in est.index:         # by hand: who is significantly above / below this run
            above = below = 0
            for (a, b, d), p in zip(pr[["name", "baseline", f"P@{K}"]].itertuples(index=False), adj):
                if p > 0.05 or name not in (a, b):
                    continue
                other_better = (d < 0) if name == a else (d > 0)
                above += other_better
                below += not other_better
            assert (rk.loc[name, "rank lo"], rk.loc[name, "rank hi"]) == (1 + above, len(est) - below)
            assert rk.loc[name, "rank lo"] <= rk.loc[name, "rank"] <= rk.loc[name, "rank hi"] or above + below == 0
        assert rk["rank"].tolist() == sorted(rk["rank"].tolist())
    both = rankings(res)
    assert set(both["method"]) == {"naive", "ppi++"} and len(both) == 2 * len(runs)
