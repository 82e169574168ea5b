"""The label-versions experiment on small synthetic collections.

References: pt.Experiment run once per version (its own evaluation through ir_measures /
pytrec_eval, scipy's ttest_rel, statsmodels' multipletests), and every agreement statistic
recomputed by a plain loop over versions, pairs and topics with scipy, statsmodels and sklearn.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from collection_helpers import random_collection
from pyterrier_noise import InputError
from pyterrier_noise.experiments import versions_experiment
from pyterrier_noise.experiments.version_agreement import alpha_from_confusion, cohen_kappa
from pyterrier_noise.stats import krippendorff_alpha, rbo, tau_ap

from ir_measures import AP, P, nDCG  # noqa: E402

MEASURES = [AP, nDCG @ 10, P @ 5]    # objects: pt.Experiment takes these (not the strings)
LABELS = ["AP", "nDCG@10", "P@5"]


def _versions(seed: int = 3, n_runs: int = 5, n_topics: int = 6, **kw):
    """Runs and three label versions of the same topics: the qrels, a regraded copy, a sparser copy
    with a few extra judgments."""
    runs, q = random_collection(seed, n_runs=n_runs, n_topics=n_topics, n_docs=30, depth=15, **kw)
    q["label"] = q["label"].astype(int)
    rng = np.random.default_rng(seed + 100)
    b = q.copy()
    flip = rng.random(len(b)) < 0.3
    b.loc[flip, "label"] = rng.integers(0, 3, flip.sum())
    c = q.sample(frac=0.7, random_state=seed).copy()
    extra = pd.DataFrame({"qid": q["qid"].unique(), "docno": "d29", "label": 2})
    c = pd.concat([c[~c.set_index(["qid", "docno"]).index.isin(extra.set_index(["qid", "docno"]).index)], extra])
    return runs, {"nist": q, "llm": b.reset_index(drop=True), "second": c.reset_index(drop=True)}


@pytest.fixture(scope="module")
def setup():
    runs, versions = _versions()
    res = versions_experiment(runs, None, versions, MEASURES, baseline="run1", correction="holm", perquery=True)
    return runs, versions, res


def test_each_version_block_is_pt_experiment_on_that_version(setup):
    pt = pytest.importorskip("pyterrier")
    runs, versions, res = setup
    systems = [pt.Transformer.from_df(r) for r in runs.values()]
    topics = pd.DataFrame({"qid": sorted({q for r in runs.values() for q in r["qid"]}), "query": "x"})
    for ver, q in versions.items():
        exp = pt.Experiment(systems, topics, q, MEASURES, names=list(runs), baseline=1, correction="holm")
        block = res.frame[res.frame["version"] == ver].reset_index(drop=True)
        # pt.Experiment's columns, laid out as it lays them out but in the order the measures were asked
        assert sorted(block.columns[1:]) == sorted(exp.columns)
        assert list(block.columns[1:5]) == ["name", *LABELS]
        for m in LABELS:
            np.testing.assert_allclose(block[m], exp[m], rtol=0, atol=1e-12)
            np.testing.assert_array_equal(block[f"{m} +"].fillna(-1), exp[f"{m} +"].fillna(-1))
            np.testing.assert_array_equal(block[f"{m} -"].fillna(-1), exp[f"{m} -"].fillna(-1))
            for col in (f"{m} p-value", f"{m} p-value corrected"):
                np.testing.assert_allclose(block[col].to_numpy(float), exp[col].to_numpy(float), rtol=1e-12)
            np.testing.assert_array_equal(block[f"{m} reject"], exp[f"{m} reject"])


def test_perquery_is_pt_experiment_perquery(setup):
    pt = pytest.importorskip("pyterrier")
    runs, versions, res = setup
    systems = [pt.Transformer.from_df(r) for r in runs.values()]
    topics = pd.DataFrame({"qid": sorted({q for r in runs.values() for q in r["qid"]}), "query": "x"})
    exp = pt.Experiment(systems, topics, versions["llm"], MEASURES, names=list(runs), perquery=True)
    mine = res.perquery[res.perquery["version"] == "llm"].drop(columns="version")
    both = exp.merge(mine, on=["name", "qid", "measure"], suffixes=("_pt", ""))
    assert len(both) == len(exp) == len(mine)
    np.testing.assert_allclose(both["value"], both["value_pt"], rtol=0, atol=1e-12)


def test_common_pool_policy_is_each_version_cut_to_the_common_pairs():
    pt = pytest.importorskip("pyterrier")
    runs, versions = _versions(seed=5)
    res = versions_experiment(runs, None, versions, MEASURES, unjudged="common")
    keys = [set(zip(q["qid"], q["docno"])) for q in versions.values()]
    common = set.intersection(*keys)
    systems = [pt.Transformer.from_df(r) for r in runs.values()]
    topics = pd.DataFrame({"qid": sorted(versions["nist"]["qid"].unique()), "query": "x"})
    for ver, q in versions.items():
        cut = q[[k in common for k in zip(q["qid"], q["docno"])]]
        exp = pt.Experiment(systems, topics, cut, MEASURES, names=list(runs))
        block = res.frame[res.frame["version"] == ver].reset_index(drop=True)
        for m in LABELS:
            np.testing.assert_allclose(block[m], exp[m], rtol=0, atol=1e-12)
    assert "common pool" in res.policy and "common pool" in repr(res)


def test_several_baselines_share_one_correction(setup):
    runs, versions, _ = setup
    res = versions_experiment(runs, None, versions, ["AP"], baseline=["run0", "run2"], correction="bonferroni")
    t = res.baseline_tests
    for ver in versions:
        X = res.values["AP"][:, :, res.versions.index(ver)]
        raw = []
        for b in (0, 2):
            for s in range(len(runs)):
                if s != b:
                    raw.append(stats.ttest_rel(X[s], X[b]).pvalue)
        expected = multipletests(raw, method="bonferroni")[1]
        np.testing.assert_allclose(t.loc[t["version"] == ver, "p_corrected"], expected, rtol=1e-12)
    assert {"AP p-value [run0]", "AP p-value corrected [run2]"} <= set(res.frame.columns)


def test_leaderboards_by_brute_force(setup):
    _, _, res = setup
    k = 3
    lb = versions_experiment(setup[0], None, setup[1], MEASURES, top_k=3).leaderboards
    for m in LABELS:
        means = res.values[m].mean(axis=1)
        for a, va in enumerate(res.versions):
            for b, vb in enumerate(res.versions):
                if a == b:
                    continue
                row = lb[(lb["measure"] == m) & (lb["version_a"] == va) & (lb["version_b"] == vb)].iloc[0]
                x, y = means[:, a], means[:, b]
                assert row["kendall_tau"] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
                assert row["tau_ap"] == pytest.approx(_tau_ap_loop(y, x), abs=1e-12)
                assert row["rbo"] == pytest.approx(rbo(x, y, p=0.9, ties="first"), abs=1e-12)
                top_a = list(np.argsort(-x, kind="stable")[:k])
                top_b = list(np.argsort(-y, kind="stable")[:k])
                assert row["top_k_overlap"] == len(set(top_a) & set(top_b)) / k
                assert row["tau_at_k"] == pytest.approx(stats.kendalltau(x[top_a], y[top_a]).statistic, abs=1e-12)
                ra, rb = stats.rankdata(-x, method="min"), stats.rankdata(-y, method="min")
                change = [abs(int(p) - int(q)) for p, q in zip(ra, rb)]
                assert row["max_rank_change"] == max(change)
                moved = [n for n, c in zip(res.names, change) if c == max(change) and c > 0]
                assert row["moved"] == ", ".join(moved)


def _tau_ap_loop(x, truth):
    """tau_AP (Yilmaz, Aslam & Robertson 2008) by its definition, one item at a time."""
    order = np.argsort(-x, kind="stable")
    truth_rank = {s: r for r, s in enumerate(np.argsort(-truth, kind="stable"))}
    n = len(x)
    total = 0.0
    for i in range(1, n):
        c = sum(truth_rank[order[j]] < truth_rank[order[i]] for j in range(i))
        total += c / i
    return 2.0 / (n - 1) * total - 1.0


def test_tau_ap_loop_matches_the_package():
    rng = np.random.default_rng(0)
    x, y = rng.random(9), rng.random(9)
    assert _tau_ap_loop(x, y) == pytest.approx(tau_ap(x, y), abs=1e-12)


def test_pair_conclusions_by_brute_force(setup):
    _, _, res = setup
    pairs = res.pairs
    ref = res.versions.index(res.reference)
    for m in LABELS:
        X = res.values[m]
        S = X.shape[0]
        concl = {}
        for v, ver in enumerate(res.versions):
            raw, keys = [], []
            for i in range(S):
                for j in range(i + 1, S):
                    raw.append(stats.ttest_rel(X[i, :, v], X[j, :, v]).pvalue)
                    keys.append((i, j))
            corr = multipletests(raw, method="holm")[1]
            for (i, j), p, pc in zip(keys, raw, corr):
                d = X[i, :, v].mean() - X[j, :, v].mean()
                c = ("a>b" if d > 0 else "b>a") if pc < 0.05 else "ns"
                concl[(ver, i, j)] = c
                row = pairs[(pairs["measure"] == m) & (pairs["version"] == ver)
                            & (pairs["system_a"] == res.names[i]) & (pairs["system_b"] == res.names[j])].iloc[0]
                # all_pairs' Gram-matrix t-test: within 1e-9 relative of scipy (its documented accuracy)
                assert row["p_value"] == pytest.approx(p, rel=1e-9)
                assert row["p_corrected"] == pytest.approx(pc, rel=1e-9)
                assert row["diff"] == pytest.approx(d, abs=1e-12)
                assert row["conclusion"] == c
        for (ver, i, j), c in concl.items():
            c0 = concl[(res.versions[ref], i, j)]
            status = ("kept" if c == c0 else "gained" if c0 == "ns" else "lost" if c == "ns" else "reversed")
            row = pairs[(pairs["measure"] == m) & (pairs["version"] == ver)
                        & (pairs["system_a"] == res.names[i]) & (pairs["system_b"] == res.names[j])].iloc[0]
            assert row["status"] == status
        counts = res.significance[res.significance["measure"] == m].set_index("version")
        for ver in res.versions:
            sub = pairs[(pairs["measure"] == m) & (pairs["version"] == ver)]
            assert counts.loc[ver, "significant"] == (sub["conclusion"] != "ns").sum()
            for s in ("kept", "lost", "gained", "reversed"):
                assert counts.loc[ver, s] == (sub["status"] == s).sum()


def test_significance_statuses_are_reached():
    """A version that swaps two systems' labels reverses conclusions the reference draws."""
    runs, versions = _versions(seed=11, n_runs=4, n_topics=12)
    q = versions["nist"]
    # a version in which only the documents of run0's top 5 are relevant: run0 wins everywhere
    top = pd.concat([r[r["rank"] < 5] for n, r in runs.items() if n == "run0"])[["qid", "docno"]]
    keys = set(zip(top["qid"], top["docno"]))
    fav = q.assign(label=[2 if k in keys else 0 for k in zip(q["qid"], q["docno"])])
    res = versions_experiment(runs, None, {"nist": q, "fav": fav}, ["P@5"])
    sig = res.significance.set_index("version")
    assert sig.loc["fav", "significant"] > sig.loc["nist", "significant"]
    assert sig.loc["fav", "gained"] + sig.loc["fav", "reversed"] > 0


def test_label_agreement_by_brute_force(setup):
    from sklearn.metrics import cohen_kappa_score   # imported where used: not at every worker's collection
    _, versions, res = setup
    la = res.label_agreement
    names = list(versions)
    topics = res.topics
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            qa = versions[names[a]].set_index(["qid", "docno"])["label"]
            qb = versions[names[b]].set_index(["qid", "docno"])["label"]
            for qid in [*topics, "all"]:
                sa = qa if qid == "all" else qa[qa.index.get_level_values(0) == qid]
                sb = qb if qid == "all" else qb[qb.index.get_level_values(0) == qid]
                common = sa.index.intersection(sb.index)
                ya, yb = sa.loc[common].to_numpy(), sb.loc[common].to_numpy()
                row = la[(la["version_a"] == names[a]) & (la["version_b"] == names[b]) & (la["qid"] == qid)].iloc[0]
                assert row["common"] == len(common)
                assert row["judged_a"] == len(sa) and row["judged_b"] == len(sb)
                assert row["agreement"] == pytest.approx(np.mean(ya == yb), abs=1e-12)
                assert row["kappa"] == pytest.approx(cohen_kappa_score(ya >= 1, yb >= 1), abs=1e-12, nan_ok=True)
                grades = [0, 1, 2]
                assert row["kappa_weighted"] == pytest.approx(
                    cohen_kappa_score(ya, yb, labels=grades, weights="linear"), abs=1e-12, nan_ok=True)
                units = np.column_stack([ya, yb]).astype(float)
                assert row["alpha"] == pytest.approx(krippendorff_alpha(units, "ordinal"), abs=1e-12)
                rel_a = set(sa.index[sa >= 1])
                rel_b = set(sb.index[sb >= 1])
                assert row["a_relevant_unjudged_by_b"] == pytest.approx(len(rel_a - set(sb.index)) / len(rel_a))
                assert row["b_relevant_unjudged_by_a"] == pytest.approx(len(rel_b - set(sa.index)) / len(rel_b))


def test_confusion_is_the_crosstab_of_common_pairs(setup):
    _, versions, res = setup
    conf = res.confusion
    both = versions["nist"].merge(versions["second"], on=["qid", "docno"], suffixes=("_a", "_b"))
    ct = pd.crosstab(both["label_a"], both["label_b"]).reindex(index=[0, 1, 2], columns=[0, 1, 2], fill_value=0)
    mine = conf[(conf["version_a"] == "nist") & (conf["version_b"] == "second") & (conf["qid"] == "all")]
    np.testing.assert_array_equal(mine["count"].to_numpy().reshape(3, 3), ct.to_numpy())


def test_kappa_and_alpha_kernels_against_references():
    rng = np.random.default_rng(1)
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa
    for _ in range(20):
        ya, yb = rng.integers(0, 4, 40), rng.integers(0, 4, 40)
        yb[:20] = ya[:20]
        C = pd.crosstab(ya, yb).reindex(index=range(4), columns=range(4), fill_value=0).to_numpy()
        for w, sk in ((None, None), ("linear", "linear"), ("quadratic", "quadratic")):
            assert cohen_kappa(C, w) == pytest.approx(cohen_kappa_score(ya, yb, labels=range(4), weights=sk), abs=1e-12)
        assert cohen_kappa(C, "linear") == pytest.approx(cohens_kappa(C, wt="linear").kappa, abs=1e-12)
        for level in ("nominal", "ordinal", "interval"):
            ref = krippendorff_alpha(np.column_stack([ya, yb]).astype(float), level)
            assert alpha_from_confusion(C, np.arange(4.0), level) == pytest.approx(ref, abs=1e-12)


def test_versions_on_other_topics_are_announced_and_cut():
    runs, versions = _versions(seed=7)
    v = dict(versions)
    v["second"] = v["second"][v["second"]["qid"] != "2"]
    with pytest.warns(Warning, match="1 topic\\(s\\) are judged in some label versions.*qid '2'.*'second'"):
        res = versions_experiment(runs, None, v, ["AP"])
    assert "2" not in res.topics and len(res.topics) == 5
    with pytest.raises(InputError, match="judged in some label versions"):
        versions_experiment(runs, None, v, ["AP"], on_topic_mismatch="error")


@pytest.mark.parametrize("kwargs, match", [
    ({"qrels": "one"}, "dict"),
    ({"reference": "nope"}, "reference 'nope'"),
    ({"unjudged": "pool"}, "unjudged must be one of"),
    ({"baseline": "run9"}, "baseline 'run9'"),
    ({"correction": "sidak"}, "correction must be"),
])
def test_bad_input_names_the_option(kwargs, match):
    runs, versions = _versions()
    args = dict(qrels=versions)
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        versions_experiment(runs, None, eval_metrics=["AP"], **args)
    with pytest.raises(InputError, match="at least 2 versions"):
        versions_experiment(runs, None, {"only": versions["nist"]}, ["AP"])


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")   # scipy, inside pt.Experiment
def test_transformers_on_a_topics_frame_as_pt_experiment():
    """Systems as pt.Transformers run once on a topics frame that holds some of the judged topics."""
    pt = pytest.importorskip("pyterrier")
    runs, versions = _versions(seed=9)
    systems = [pt.Transformer.from_df(r) for r in runs.values()]
    topics = pd.DataFrame({"qid": ["2", "3", "5"], "query": "x"})
    res = versions_experiment(systems, topics, versions, MEASURES, names=list(runs), baseline=0)
    assert res.topics == ["2", "3", "5"]
    for ver, q in versions.items():
        exp = pt.Experiment(systems, topics, q, MEASURES, names=list(runs), baseline=0)
        block = res.frame[res.frame["version"] == ver].reset_index(drop=True)
        for m in LABELS:
            np.testing.assert_allclose(block[m], exp[m], rtol=0, atol=1e-12)
            np.testing.assert_allclose(block[f"{m} p-value"].to_numpy(float), exp[f"{m} p-value"].to_numpy(float),
                                       rtol=1e-12)
