"""Stability of system orderings as Rashidi, Zobel and Moffat (2023) measure it (Sec. 5.4, Table 3).

References: RBO from its definition written out by brute force over ranked lists (Webber, Moffat
and Zobel 2010: the truncated sum and Eq. 32); Kendall's tau_b and the paired t-test from scipy;
meta-AP consensus rankings and run-to-consensus overlaps by loops over documents."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pyterrier_noise import InputError
from pyterrier_noise.experiments import (PAPER_RBO, RobustnessResult, compare_stability, consensus_run,
                                       consensus_similarity, ordering_agreement)
from pyterrier_noise.judges import meta_ap


def _rbo_trunc_brute(a, b, p, depth):
    """(1 - p) sum_{d <= depth} p^(d-1) |a[:d] & b[:d]| / d (prefixes of shorter lists stop growing)."""
    return (1 - p) * sum(p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d for d in range(1, depth + 1))


def _rbo_ext_brute(a, b, p):
    k = len(a)
    A = [len(set(a[:d]) & set(b[:d])) / d for d in range(1, k + 1)]
    return (1 - p) / p * sum(p ** d * A[d - 1] for d in range(1, k + 1)) + p ** k * A[-1]


@pytest.fixture(scope="module")
def fifty():
    """50 systems (the paper's number), 6 topics, 12 replicates of noisy per-topic values (seeded)."""
    rng = np.random.default_rng(5)
    S, T, R = 50, 6, 12
    true = {"AP": rng.random((S, T)), "RBP": rng.random((S, T))}
    values = {m: true[m][:, :, None] + rng.normal(0, 0.15 if m == "AP" else 0.05, (S, T, R)) for m in true}
    names = [f"s{i:02d}" for i in range(S)]
    return RobustnessResult.from_arrays(true, values, names, [f"q{t}" for t in range(T)])


def test_paper_rbo_is_the_truncated_sum_at_depth_50(fifty):
    agree = ordering_agreement(fifty, **PAPER_RBO)
    for m in ("AP", "RBP"):
        M0 = fifty.true[m].mean(axis=1)
        M = fifty.means[m]
        truth = list(np.argsort(-M0, kind="stable"))
        rows = agree[agree["measure"] == m].reset_index(drop=True)
        ext = fifty.rankings[fifty.rankings["measure"] == m].reset_index(drop=True)
        for k in range(M.shape[1]):
            est = list(np.argsort(-M[:, k], kind="stable"))
            assert rows.loc[k, "rbo"] == pytest.approx(_rbo_trunc_brute(est, truth, 0.9, 50), abs=1e-12)
            assert rows.loc[k, "kendall_tau"] == pytest.approx(stats.kendalltau(M[:, k], M0).statistic, abs=1e-12)
            # the experiment's default (extrapolated) form is exactly 0.9^50 = 0.0052 higher for 50 systems
            assert ext.loc[k, "rbo"] == pytest.approx(_rbo_ext_brute(est, truth, 0.9), abs=1e-12)
            assert ext.loc[k, "rbo"] - rows.loc[k, "rbo"] == pytest.approx(0.9 ** 50, abs=1e-12)
    assert 0.9 ** 50 == pytest.approx(0.0052, abs=5e-5)


def test_compare_stability_is_scipys_paired_t_test(fifty):
    agree = ordering_agreement(fifty)
    out = compare_stability(agree, "RBP", "AP")
    x = agree[agree["measure"] == "RBP"]["rbo"].to_numpy()
    y = agree[agree["measure"] == "AP"]["rbo"].to_numpy()
    assert out["p_value"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)
    assert out["mean_diff"] == pytest.approx((x - y).mean())
    assert out["n"] == 12 and out["more_stable"] == "RBP"          # less noise on RBP in the fixture
    tau = compare_stability(fifty.rankings, "RBP", "AP", statistic="kendall_tau")
    assert tau["p_value"] == pytest.approx(stats.ttest_rel(
        fifty.rankings.query("measure == 'RBP'")["kendall_tau"], fifty.rankings.query("measure == 'AP'")["kendall_tau"]).pvalue)
    with pytest.raises(InputError, match="not in the agreement"):
        compare_stability(agree, "RBP", "nDCG")


pytestmark = pytest.mark.collection(n_topics=4, n_systems=6, n_docs_per_topic=80, depth=30, pool_depth=10, seed=6)


def test_consensus_run_orders_by_mean_meta_ap(coll):
    cons = consensus_run(coll.runs, depth=30)
    m = meta_ap(coll.runs, depth=30).set_index(["qid", "docno"])["meta_ap"]
    for q, g in cons.groupby("qid"):
        assert list(g["rank"]) == list(range(1, len(g) + 1))
        assert (np.diff(g["score"].to_numpy()) <= 0).all()
        assert g["score"].to_numpy() == pytest.approx(m.loc[q].reindex(g["docno"]).to_numpy())


def test_consensus_similarity_brute_force(coll):
    depth, p = 20, 0.98
    sim = consensus_similarity(coll.runs, depth=depth, p=p)
    cons = consensus_run(coll.runs, depth=depth)
    for name in list(coll.runs)[:3]:
        r = coll.runs[name].sort_values(["qid", "score", "docno"], ascending=[True, False, False])
        vals = []
        for q, g in r.groupby("qid"):
            c = cons[cons["qid"] == q]["docno"].tolist()[:depth]
            vals.append(_rbo_trunc_brute(g["docno"].tolist()[:depth], c, p, depth))
        assert sim.set_index("name").loc[name, "rbo"] == pytest.approx(np.mean(vals), abs=1e-12)
    scores = pd.Series({n: i for i, n in enumerate(sorted(coll.runs))}, dtype=float)
    grouped = consensus_similarity(coll.runs, scores, top=2, depth=depth, p=p)
    assert sorted(grouped[grouped["group"] == "top"]["name"]) == sorted(coll.runs)[-2:]
    with pytest.raises(InputError, match="no score"):
        consensus_similarity(coll.runs, scores.iloc[:2], depth=depth)
