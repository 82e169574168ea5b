"""The label-versions experiment on TREC-COVID round 1 (slow; skipped without ../shared/data).

Reference: NIST's qrels.  Versions made by the package's judge models -- random flips at Rashidi,
Zobel & Moffat's (2023) rates (TPR 0.93 / FPR 0.07, their main setting, and TPR 0.31 / FPR 0.07,
their extreme one), rank-biased flips at 0.93 / 0.07, and a confusion-matrix judge from Goldberg et
al.'s (2017, Table 2) TREC 2007 Enterprise counts (gold N: 216 N, 46 R; gold R: 21 N, 17 R) on the
binarised NIST labels -- plus one version made outside the package, the fixed file
tests/data/covid-rnd1-second-assessor.qrels (a partial re-judging: tests/data/make_covid_second_assessor.py).
Checked against pt.Experiment run once per version and against plain loops.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pyterrier_noise.experiments import versions_experiment
from pyterrier_noise.io import read_qrels, read_runs
from pyterrier_noise.judges import ConfusionJudge, RandomFlips, RankBiasedFlips

SECOND = Path(__file__).resolve().parents[1] / "data" / "covid-rnd1-second-assessor.qrels"
GOLDBERG_TREC2007 = np.array([[216, 46], [21, 17]], dtype=float)   # Goldberg et al. 2017, Table 2, judge 1
N_RUNS = 10


@pytest.fixture(scope="module")
def study(covid):
    runs = read_runs(sorted((covid / "runs").glob("*.gz"))[:N_RUNS])
    nist = read_qrels(covid / "qrels-rnd1.txt")
    binary = nist.assign(label=(nist["label"] >= 1).astype(int))
    matrix = GOLDBERG_TREC2007 / GOLDBERG_TREC2007.sum(axis=1, keepdims=True)
    versions = {
        "nist": nist,
        "flips93": RandomFlips(0.93, 0.07, seed=1).transform(nist),
        "flips31": RandomFlips(0.31, 0.07, seed=2).transform(nist),
        "rankbiased": RankBiasedFlips(0.93, 0.07, runs=runs, seed=3).transform(nist),
        "goldberg": ConfusionJudge(matrix, [0, 1], seed=4).transform(binary),
        "second": read_qrels(SECOND),
    }
    from ir_measures import AP, P, nDCG
    measures = [AP, nDCG @ 10, P @ 10]
    res = versions_experiment(runs, None, versions, measures, baseline=0, correction="holm")
    return runs, versions, measures, res


def test_covid_blocks_equal_pt_experiment_per_version(study):
    pt = pytest.importorskip("pyterrier")
    runs, versions, measures, res = study
    assert len(res.topics) == 30 and res.versions == list(versions)
    # the same rows with plain-object text columns: ir_measures reads every row of them one by one, which
    # costs less than reading an Arrow-backed column element by element
    text = {"qid": object, "docno": object}
    systems = [pt.Transformer.from_df(r.astype(text)) for r in runs.values()]
    topics = pd.DataFrame({"qid": res.topics, "query": "x"})
    for ver, q in versions.items():
        exp = pt.Experiment(systems, topics, q.astype(text), measures, names=list(runs), baseline=0, correction="holm")
        block = res.frame[res.frame["version"] == ver].reset_index(drop=True)
        for m in ("AP", "nDCG@10", "P@10"):
            np.testing.assert_allclose(block[m], exp[m], rtol=0, atol=1e-12)
            for col in (f"{m} p-value", f"{m} p-value corrected"):
                np.testing.assert_allclose(block[col].to_numpy(float), exp[col].to_numpy(float), rtol=1e-12)


def test_covid_agreement_tables_by_loops(study):
    from sklearn.metrics import cohen_kappa_score   # imported where used: not at every worker's collection
    runs, versions, _, res = study
    lb = res.leaderboards
    for m in ("AP", "P@10"):
        means = res.values[m].mean(axis=1)
        for b, ver in enumerate(res.versions[1:], 1):
            row = lb[(lb["measure"] == m) & (lb["version_a"] == "nist") & (lb["version_b"] == ver)].iloc[0]
            assert row["kendall_tau"] == pytest.approx(stats.kendalltau(means[:, 0], means[:, b]).statistic, abs=1e-12)
    la = res.label_agreement
    nist = versions["nist"].set_index(["qid", "docno"])["label"]
    for ver in ("flips31", "second"):
        other = versions[ver].set_index(["qid", "docno"])["label"]
        common = nist.index.intersection(other.index)
        row = la[(la["version_a"] == "nist") & (la["version_b"] == ver) & (la["qid"] == "all")].iloc[0]
        assert row["common"] == len(common)
        assert row["kappa"] == pytest.approx(cohen_kappa_score(nist[common] >= 1, other[common] >= 1), abs=1e-12)
        assert row["kappa_weighted"] == pytest.approx(
            cohen_kappa_score(nist[common], other[common], labels=[0, 1, 2], weights="linear"), abs=1e-12)
        rel_other = set(other.index[other >= 1])
        assert row["b_relevant_unjudged_by_a"] == pytest.approx(len(rel_other - set(nist.index)) / len(rel_other))
    # the judges' realised agreement follows their error rates: the 0.93 / 0.07 flips agree with NIST more
    # than the 0.31 / 0.07 ones, which keep under a third of the relevant documents
    overall = la[(la["version_a"] == "nist") & (la["qid"] == "all")].set_index("version_b")
    assert overall.loc["flips93", "kappa"] > overall.loc["flips31", "kappa"]
    # the second assessor judged documents NIST never saw: some of its relevant ones are unjudged in NIST
    assert overall.loc["second", "b_relevant_unjudged_by_a"] > 0


def test_covid_common_pool_and_noise(study):
    runs, versions, _, res = study
    small = {k: versions[k] for k in ("nist", "flips93", "second")}
    common = versions_experiment(runs, None, small, ["AP"], unjudged="common", baseline=0)
    assert "common pool" in common.policy
    # under the common pool, NIST and the second assessor are scored on the same (at most 748) pairs
    n_common = common.label_agreement.query("qid == 'all' and version_a == 'nist' and version_b == 'second'")
    assert int(n_common["common"].iloc[0]) == int((~np.isnan(common.labels).any(axis=1)).sum())
    noise = res.judgment_noise(n_resamples=200)
    assert len(noise) == N_RUNS - 1
    # judgment noise alone (topics fixed, a version drawn per topic) moves some conclusion: the versions differ
    assert (noise["AP P(flip | topics)"] > 0).any()
    assert (noise["AP diff low"] < noise["AP diff high"]).all()
    floor = res.noise_floor(n_resamples=200)
    assert len(floor) == 3 * N_RUNS * (N_RUNS - 1) // 2
    assert floor["below_any"].any()
