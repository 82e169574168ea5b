"""Metarank predictors and their goodness of fit (Webber, Chandar and Carterette 2012, Sec. 3.2.1,
Eq. 2, Table 3).

References: the per-run weights written out by brute force over each run's ranking; the logistic
fits and their residual sums of squares from statsmodels' ``Logit`` fitted topic by topic; the
paired t-test from scipy."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from scipy.special import expit

from pyterrier_noise import InputError
from pyterrier_noise.judges import MetarankLogisticModel, compare_predictors, meta_ap, metarank
from pyterrier_noise.synthetic import make_collection

DEPTH = 60


@pytest.fixture(scope="module")
def dual():
    """Dual assessments simulated from a known logistic model of meta-AP (brute-force reference data)."""
    c = make_collection(n_topics=12, n_systems=10, n_docs_per_topic=150, depth=60, pool_depth=30, seed=4)
    m = meta_ap(c.runs, c.qrels, depth=DEPTH)
    orig = m.merge(c.qrels, on=["qid", "docno"])[["qid", "docno", "label"]]
    A = orig["label"].to_numpy() >= 1
    p = np.where(A, expit(-0.5 + 0.9 * m["meta_ap"]), expit(-3.0 + 0.8 * m["meta_ap"]))
    B = np.random.default_rng(1).random(len(p)) < p
    return c, orig, orig[["qid", "docno"]].assign(label=B.astype(np.int64))


def _brute_metarank(runs, qrels, predictor, depth):
    """Per-run weights from each run's 1-based rank (score, then docno descending), then mean or max."""
    keys = list(zip(qrels["qid"], qrels["docno"]))
    per_run = []
    for run in runs.values():
        r = run.sort_values(["qid", "score", "docno"], ascending=[True, False, False])
        rank = dict(zip(zip(r["qid"], r["docno"]), r.groupby("qid").cumcount() + 1))
        w = []
        for key in keys:
            k = rank.get(key, np.inf)
            if k > depth:
                w.append(0.0)
            elif predictor == "meta_ap":
                w.append(1.0 + sum(1.0 / i for i in range(1, depth + 1)) - sum(1.0 / i for i in range(1, int(k) + 1)))
            else:
                w.append(float(depth - k))
        per_run.append(w)
    per_run = np.array(per_run)
    return per_run.max(axis=0) if predictor == "max_inverse_rank" else per_run.mean(axis=0)


@pytest.mark.parametrize("predictor", ["meta_ap", "mean_inverse_rank", "max_inverse_rank"])
def test_metarank_brute_force(dual, predictor):
    c, orig, _ = dual
    q = orig[orig["qid"].isin(sorted(orig["qid"].unique())[:3])]
    got = metarank(c.runs, q, predictor, depth=DEPTH).set_index(["qid", "docno"])["metarank"]
    want = _brute_metarank(c.runs, q, predictor, DEPTH)
    assert got.loc[list(zip(q["qid"], q["docno"]))].to_numpy() == pytest.approx(want, abs=1e-9)


def test_compare_predictors_equals_statsmodels_and_scipy(dual):
    import statsmodels.api as sm
    c, orig, alt = dual
    table = compare_predictors(orig, alt, c.runs, ("meta_ap", "max_inverse_rank"), depth=DEPTH)
    A = (orig["label"].to_numpy() >= 1).astype(int)
    B = alt["label"].to_numpy().astype(float)
    rss, proper = {}, {}
    for pred in ("meta_ap", "max_inverse_rank"):
        x = metarank(c.runs, orig, pred, depth=DEPTH)["metarank"].to_numpy()
        for q in orig["qid"].unique():
            for a in (0, 1):
                sel = (orig["qid"].to_numpy() == q) & (A == a)
                y, xx = B[sel], x[sel]
                ok = 0 < y.sum() < len(y) and xx[y == 1].max() > xx[y == 0].min() and xx[y == 0].max() > xx[y == 1].min()
                proper[(pred, q, a)] = ok
                if ok:
                    fit = sm.Logit(y, sm.add_constant(xx)).fit(disp=0)
                    rss[(pred, q, a)] = float(((y - fit.predict(sm.add_constant(xx))) ** 2).sum())   # Eq. 2
    for a, cond in ((1, "p(.|1)"), (0, "p(.|0)")):
        qs = [q for q in orig["qid"].unique() if proper[("meta_ap", q, a)] and proper[("max_inverse_rank", q, a)]]
        x1 = np.array([rss[("meta_ap", q, a)] for q in qs])
        x2 = np.array([rss[("max_inverse_rank", q, a)] for q in qs])
        row = table[table["condition"] == cond].iloc[0]
        assert row["n_models"] == len(qs) >= 5
        assert row["mean_diff"] == pytest.approx((x1 - x2).mean(), abs=1e-6)
        assert row["p_value"] == pytest.approx(st.ttest_rel(x1, x2).pvalue, rel=1e-4)
        assert row["statistic"] == pytest.approx(st.ttest_rel(x1, x2).statistic, rel=1e-4)


def test_compare_predictors_pools_assessors_and_rejects_bad_input(dual):
    c, orig, alt = dual
    one = compare_predictors(orig, alt, c.runs, ("meta_ap", "mean_inverse_rank"), depth=DEPTH)
    two = compare_predictors(orig, {"alt1": alt, "alt2": alt}, c.runs, ("meta_ap", "mean_inverse_rank"), depth=DEPTH)
    assert (two["n_models"] == 2 * one["n_models"]).all()
    assert two["mean_diff"].to_numpy() == pytest.approx(one["mean_diff"].to_numpy())
    with pytest.raises(InputError, match="two or more distinct"):
        compare_predictors(orig, alt, c.runs, ("meta_ap",))
    with pytest.raises(InputError, match="predictors"):
        compare_predictors(orig, alt, c.runs, ("meta_ap", "rbp"))


def test_model_predictor_option_uses_that_metarank(dual):
    c, orig, alt = dual
    m = metarank(c.runs, orig, "mean_inverse_rank", depth=DEPTH)
    a = MetarankLogisticModel(c.runs, predictor="mean_inverse_rank", depth=DEPTH, scope="universal").fit(orig, alt)
    b = MetarankLogisticModel(metarank=m, scope="universal").fit(orig, alt)
    pd.testing.assert_frame_equal(a.coefficients_, b.coefficients_)
