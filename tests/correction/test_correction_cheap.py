"""Cheap judges: sampling designs, the naive / Goldberg / PPI / PPI++ / gold-only estimators.

Where each expected number comes from:
* unbiasedness of the designs and estimators: exact enumeration of every possible sample of a tiny
  collection (each sample weighted by its probability under the design);
* the pair-design estimators: brute force (per-pair weights from one engine evaluation per pair,
  the stratified-sampling variance of Cochran 1977, Eq 5.8, written out with loops);
* the topic design: ppi_py (Angelopoulos et al. 2023; Angelopoulos, Duchi and Zrnic 2023);
* Goldberg et al. (2017), Sec 6 eBay example: corrected P@3 0.804698 / 0.828442 and the calibration
  variance terms 7.8273e-3 + 2.6449e-4 (a) and 8.29605e-3 + 2.04089e-4 (b), as recomputed in the
  paper's reproduction (the paper prints 0.805 / 0.828).
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.correction import CorrectionWarning
from pyterrier_noise.correction import (CheapStudy, GoldSample, cheap_experiment, fit_confusion, fit_judge,
                                        ht_covariance, sample_pairs, sample_topics)
from pyterrier_noise.correction.estimators import measure_gains
from pyterrier_noise.engine import AlignedRuns, MeasureSpec
from pyterrier_noise.judges import ConfusionJudge

P3 = MeasureSpec("P", cutoff=3)
RBP = MeasureSpec("RBP", p=0.8)
DCG = MeasureSpec("DCG", cutoff=3)
NDCG = MeasureSpec("nDCG", cutoff=3)
AP = MeasureSpec("AP")


def tiny(seed: int = 0, n_topics: int = 2, n_docs: int = 5, n_runs: int = 3):
    """A tiny collection: every run ranks every judged document of every topic; graded truth 0-2 and
    a cheap judge that errs on some of them."""
    rng = np.random.default_rng(seed)
    qrels, runs = [], {f"r{i}": [] for i in range(n_runs)}
    for t in range(n_topics):
        for d in range(n_docs):
            qrels.append((str(t + 1), f"d{d}", int(rng.integers(0, 3))))
        for name in runs:
            scores = rng.permutation(n_docs).astype(float)
            runs[name] += [(str(t + 1), f"d{d}", scores[d]) for d in range(n_docs)]
    truth = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    runs = {k: pd.DataFrame(v, columns=["qid", "docno", "score"]) for k, v in runs.items()}
    flip = rng.random(len(truth)) < 0.4
    cheap = truth.assign(label=np.where(flip, (truth["label"] + rng.integers(1, 3, len(truth))) % 3,
                                        truth["label"]))
    return runs, truth, cheap


def study_of(runs, cheap, specs, variance="pooled"):
    aligned = AlignedRuns.build(runs, cheap, ties="trec_eval")
    return CheapStudy(aligned, specs, variance=variance)


def labels_on_table(study, frame):
    t = study.aligned.table.frame[["qid", "docno"]]
    return t.merge(frame, on=["qid", "docno"], how="left")["label"].to_numpy(dtype=np.float64)


def all_samples(sample: GoldSample):
    """Every possible sample of the design with its probability (exact enumeration)."""
    N = sample.n_rows
    if sample.stratum_all is None:       # Poisson: every subset
        pi = sample.pi_all
        for bits in itertools.product([0, 1], repeat=N):
            b = np.array(bits, dtype=bool)
            prob = float(np.prod(np.where(b, pi, 1 - pi)))
            if prob > 0:
                yield sample.with_rows(np.flatnonzero(b)), prob
        return
    s_all = sample.stratum_all
    taken = np.bincount(s_all[sample.rows], minlength=s_all.max() + 1)
    per = [list(itertools.combinations(np.flatnonzero(s_all == h), taken[h])) for h in range(len(taken))]
    combos = list(itertools.product(*per))
    for combo in combos:
        rows = np.sort(np.concatenate([np.asarray(c, dtype=np.int64) for c in combo]))
        yield sample.with_rows(rows), 1.0 / len(combos)


# ------------------------------------------------------------------------------------------------
# designs: inclusion probabilities and unbiasedness by exact enumeration

@pytest.mark.parametrize("design", ["uniform", "stratified", "active"])
def test_fixed_size_designs_inclusion_probabilities_and_unbiased_ht(design):
    rng = np.random.default_rng(3)
    N = 9
    cheap = rng.integers(0, 3, N).astype(float)
    imp = rng.random(N)
    z = rng.normal(size=(N, 2))                       # two totals at once
    prob = rng.random(N) if design == "active" else None
    smp = sample_pairs(cheap, 5, design=design, importance=imp, probability=prob, n_bins=2, seed=1)
    assert len(smp) == 5
    incl = np.zeros(N)
    mean = np.zeros(2)
    second = np.zeros((2, 2))
    mean_var_hat = np.zeros((2, 2))
    for s, prob in all_samples(smp):
        incl[s.rows] += prob
        est = (z[s.rows] / s.pi[:, None]).sum(axis=0)
        mean += prob * est
        second += prob * np.outer(est, est)
        mean_var_hat += prob * ht_covariance(z[s.rows], s)
    np.testing.assert_allclose(incl, smp.pi_all, atol=1e-12)          # the stated probabilities are right
    np.testing.assert_allclose(mean, z.sum(axis=0), atol=1e-12)       # HT is unbiased under the design
    true_cov = second - np.outer(mean, mean)
    np.testing.assert_allclose(mean_var_hat, true_cov, atol=1e-10)       # and so is its covariance estimator
    if design != "uniform":
        assert smp.stratum_all.max() >= 1                                 # the test really had several strata


def test_active_design_favours_uncertain_important_pairs_and_keeps_half_uniform():
    """The active design (stratified, Neyman's allocation by importance x uncertainty mixed half and half
    with proportional allocation): more pairs where the judge is unsure and the pair weighs, and every
    stratum at least about half its proportional share, however over-confident the judge."""
    rng = np.random.default_rng(5)
    N = 400
    cheap = rng.integers(0, 2, N).astype(float)
    imp = rng.random(N)
    sure = rng.random(N) < 0.8
    prob = np.where(sure, np.where(cheap > 0, 0.999, 0.001), 0.5)       # an over-confident judge
    smp = sample_pairs(cheap, 60, design="active", importance=imp, probability=prob, seed=0)
    assert len(smp) == 60 and smp.stratum_all is not None and (smp.stratum >= 0).all()
    assert smp.pi_all[~sure].mean() > 2 * smp.pi_all[sure].mean()
    sizes = np.bincount(smp.stratum_all)
    taken = np.bincount(smp.stratum, minlength=len(sizes))
    assert (taken >= np.minimum(np.floor(0.5 * 60 * sizes / N), sizes)).all()
    assert (taken >= np.minimum(sizes, 2)).all()


def test_sample_pairs_refuses_bad_input():
    with pytest.raises(InputError, match="at least 10"):
        sample_pairs(np.zeros(5), 10)
    with pytest.raises(InputError, match="design"):
        sample_pairs(np.zeros(5), 2, design="lara")
    with pytest.raises(InputError, match="importance"):
        sample_pairs(np.zeros(5), 2, importance=[1, 2])
    assert list(sample_topics(10, 3, seed=0)) == sorted(sample_topics(10, 3, seed=0))


# ------------------------------------------------------------------------------------------------
# pair-design estimators: unbiased by exact enumeration, equal to brute force

@pytest.mark.slow      # every one of the design's samples (a few hundred estimates)
def test_pair_design_gold_and_ppi_unbiased_by_enumeration():
    runs, truth, cheap = tiny(seed=2)
    st = study_of(runs, cheap, [P3, RBP, DCG])
    c = st.aligned.table.labels
    g = labels_on_table(st, truth)
    true_vals = {s: v.mean(axis=1) for s, v in st.per_topic(g).items()}
    smp = sample_pairs(c, 5, design="stratified", importance=st.importance(), n_bins=2, seed=0)
    acc = {(s, m): 0.0 for s in st.specs for m in ("gold", "ppi")}
    acc_pairs = {s: 0.0 for s in st.specs}
    for s_, prob in all_samples(smp):
        est = st.estimate(c, g[s_.rows], s_, methods=("gold", "ppi"))
        for s in st.specs:
            for m in ("gold", "ppi"):
                acc[(s, m)] = acc[(s, m)] + prob * est[s].systems[m][0]
            acc_pairs[s] = acc_pairs[s] + prob * est[s].pairs["ppi"][0]
    for s in st.specs:
        for m in ("gold", "ppi"):
            np.testing.assert_allclose(acc[(s, m)], true_vals[s], atol=1e-12)
        np.testing.assert_allclose(acc_pairs[s], true_vals[s][st.i] - true_vals[s][st.j], atol=1e-12)


def test_pair_design_matches_brute_force():
    runs, truth, cheap = tiny(seed=4, n_topics=3, n_docs=6)
    st = study_of(runs, cheap, [RBP, P3], variance="design")
    c = st.aligned.table.labels
    g = labels_on_table(st, truth)
    N = len(c)
    smp = sample_pairs(c, 8, design="stratified", importance=st.importance(), n_bins=2, seed=3)
    est = st.estimate(c, g[smp.rows], smp, methods=("gold", "ppi", "ppi++"))
    for spec in st.specs:
        # per-pair weight of every run, by brute force: one engine evaluation per pair with only that pair relevant
        W = np.zeros((st.n_runs, N))
        for j in range(N):
            lab = np.zeros(N)
            lab[j] = 1.0
            W[:, j] = st.per_topic(lab)[spec].mean(axis=1)
        gain = lambda x: (x >= 1).astype(float)     # binary gain (rel=1) of P and RBP
        rows, pi = smp.rows, smp.pi
        zy, zh = W[:, rows] * gain(g[rows]), W[:, rows] * gain(c[rows])
        cheap_total = W @ gain(c)

        def strat_var(z):        # Cochran (1977) Eq 5.8, written with loops
            v = 0.0
            for h in np.unique(smp.stratum):
                m = smp.stratum == h
                Nh = (smp.stratum_all == h).sum()
                nh = m.sum()
                if nh > 1:
                    v += Nh ** 2 * (1 - nh / Nh) * np.var(z[m], ddof=1) / nh
            return v

        for r in range(st.n_runs):
            val, se = est[spec].systems["ppi"][0][r], est[spec].systems["ppi"][1][r]
            assert val == pytest.approx(cheap_total[r] + ((zy[r] - zh[r]) / pi).sum(), abs=1e-12)
            assert se ** 2 == pytest.approx(strat_var(zy[r] - zh[r]), abs=1e-12)
            gv, gse = est[spec].systems["gold"][0][r], est[spec].systems["gold"][1][r]
            assert gv == pytest.approx((zy[r] / pi).sum(), abs=1e-12)
            assert gse ** 2 == pytest.approx(strat_var(zy[r]), abs=1e-12)
            # PPI++: lam minimises the variance of lam * cheap + HT(y - lam * cheap) over [0, 1]
            grid = np.linspace(0, 1, 2001)
            vgrid = [strat_var(zy[r] - lam * zh[r]) for lam in grid]
            sp = est[spec].systems["ppi++"][1][r]
            assert sp ** 2 == pytest.approx(min(vgrid), abs=1e-6)
        # a pair's difference is the difference of the estimates; its variance by brute force
        a, b = st.i[0], st.j[0]
        dv, dse = est[spec].pairs["ppi"][0][0], est[spec].pairs["ppi"][1][0]
        sa, sb = est[spec].systems["ppi"][0][a], est[spec].systems["ppi"][0][b]
        assert dv == pytest.approx(sa - sb, abs=1e-12)
        assert dse ** 2 == pytest.approx(strat_var((zy[a] - zh[a]) - (zy[b] - zh[b])), abs=1e-12)


def test_naive_is_the_engine_mean_with_the_t_standard_error():
    runs, truth, cheap = tiny(seed=6, n_topics=4)
    st = study_of(runs, cheap, [P3, NDCG])
    c = st.aligned.table.labels
    smp = sample_pairs(c, 6, design="uniform", seed=0)
    est = st.estimate(c, labels_on_table(st, truth)[smp.rows], smp, methods=("naive",))
    from pyterrier_noise.measures import evaluate
    ref = evaluate(runs, cheap, ["P@3", "nDCG@3"], perquery=True)
    for spec, name in ((P3, "P@3"), (NDCG, "nDCG@3")):
        pq = ref[ref["measure"] == name].pivot(index="name", columns="qid", values="value").loc[st.aligned.run_names]
        np.testing.assert_allclose(est[spec].systems["naive"][0], pq.mean(axis=1), atol=1e-12)
        np.testing.assert_allclose(est[spec].systems["naive"][1], pq.std(axis=1, ddof=1) / 2, atol=1e-12)


def test_nonlinear_measures_have_no_goldberg_pair_design_estimate():
    # nDCG and AP have ratio estimators (tests/correction/test_correction_pair_ndcg.py, tests/correction/test_correction_pair_ap.py)
    # but not Goldberg et al.'s correction
    runs, truth, cheap = tiny(seed=1)
    st = study_of(runs, cheap, [NDCG, AP])
    st.ap_min_relevant = 0.0     # 4 gold pairs: far below AP's minimum (tests/correction/test_correction_pair_ap.py); the machinery here
    c = st.aligned.table.labels
    smp = sample_pairs(c, 4, design="uniform", seed=0)
    est = st.estimate(c, labels_on_table(st, truth)[smp.rows], smp)
    assert np.isnan(est[AP].systems["goldberg"][0]).all()
    assert np.isnan(est[NDCG].systems["goldberg"][0]).all()
    for m in ("naive", "gold", "ppi", "ppi++"):
        assert np.isfinite(est[NDCG].systems[m][0]).all()
        assert np.isfinite(est[AP].systems[m][0]).all()
    assert np.isfinite(est[AP].systems["naive"][0]).all()


# ------------------------------------------------------------------------------------------------
# topic design against ppi_py

@pytest.mark.parametrize("spec", [NDCG, AP, P3])
def test_topic_design_equals_ppi_py(spec):
    ppi_py = pytest.importorskip("ppi_py")
    runs, truth, cheap = tiny(seed=7, n_topics=12, n_docs=6)
    st = study_of(runs, cheap, [spec])
    c = st.aligned.table.labels
    g = labels_on_table(st, truth)
    topics = sample_topics(12, 6, seed=2)
    est = st.estimate(c, g, topics, methods=("gold", "ppi", "ppi++"), scope="topics", ddof=0)[spec]
    Yall = st.per_topic(c)[spec]
    Y = st.per_topic(np.where(np.isin(st.row_topic, topics), g, np.nan))[spec][:, topics]
    for r in range(st.n_runs):
        y, yh = Y[r], Yall[r, topics]
        for m, lam in (("ppi", 1.0), ("gold", 0.0)):
            lo, hi = ppi_py.ppi_mean_ci(y, yh, Yall[r], alpha=0.05, lam=lam)
            val, se = est.systems[m][0][r], est.systems[m][1][r]
            assert val == pytest.approx(ppi_py.ppi_mean_pointestimate(y, yh, Yall[r], lam=lam)[0], abs=1e-12)
            assert val - 1.959963985 * se == pytest.approx(lo[0], abs=1e-8)
            assert val + 1.959963985 * se == pytest.approx(hi[0], abs=1e-8)
        lo, hi = ppi_py.ppi_mean_ci(y, yh, Yall[r], alpha=0.05)              # power-tuned lam (PPI++)
        val, se = est.systems["ppi++"][0][r], est.systems["ppi++"][1][r]
        assert (lo[0] + hi[0]) / 2 == pytest.approx(val, abs=1e-10)
        assert (hi[0] - lo[0]) / 2 == pytest.approx(1.959963985 * se, abs=1e-8)


def test_topic_design_ppi_plus_plus_is_a_regression_estimator():
    """PPI++ over topics tunes lam on the gold topics, so (ddof=1) its residual variance has n - 2 degrees
    of freedom, as the regression estimator's (Cochran 1977, Sec 7.3, Eq 7.29, with the finite-population
    correction): written out by hand, lam = Cov(Y, Yhat) / Var(Yhat) on the gold topics."""
    runs, truth, cheap = tiny(seed=9, n_topics=10, n_docs=6)
    st = study_of(runs, cheap, [NDCG])
    c = st.aligned.table.labels
    g = labels_on_table(st, truth)
    topics = sample_topics(10, 5, seed=4)
    est = st.estimate(c, g, topics, methods=("ppi++",))[NDCG]
    Yall = st.per_topic(c)[NDCG]
    Y = st.per_topic(np.where(np.isin(st.row_topic, topics), g, np.nan))[NDCG][:, topics]
    n, N = 5, 10
    for r in range(st.n_runs):
        y, yh = Y[r], Yall[r, topics]
        lam = min(max(np.cov(y, yh)[0, 1] / np.var(yh, ddof=1), 0.0), 1.0) if np.var(yh) > 0 else 0.0
        res = y - lam * yh
        assert est.systems["ppi++"][0][r] == pytest.approx(lam * Yall[r].mean() + res.mean(), abs=1e-12)
        var = (1 - n / N) * ((res - res.mean()) ** 2).sum() / (n - 2) / n
        assert est.systems["ppi++"][1][r] ** 2 == pytest.approx(var, abs=1e-14)
    assert (est.df["ppi++"][0] == n - 2).all() and (est.df["ppi++"][1] == n - 2).all()


def test_topic_design_collection_scope_is_unbiased_by_enumeration():
    runs, truth, cheap = tiny(seed=8, n_topics=5, n_docs=4)
    st = study_of(runs, cheap, [NDCG, AP])
    c = st.aligned.table.labels
    g = labels_on_table(st, truth)
    true_vals = {s: v.mean(axis=1) for s, v in st.per_topic(g).items()}
    combos = list(itertools.combinations(range(5), 3))
    acc = {s: 0.0 for s in st.specs}
    for tp in combos:
        est = st.estimate(c, g, np.array(tp), methods=("ppi",))
        for s in st.specs:
            acc[s] = acc[s] + est[s].systems["ppi"][0] / len(combos)
    for s in st.specs:
        np.testing.assert_allclose(acc[s], true_vals[s], atol=1e-12)


def test_goldberg_judge_noise_variance_is_unbiased_by_enumeration():
    """Goldberg et al.'s corrected value on a fixed collection still carries the cheap judge's own noise:
    with a known confusion J, enumerate every cheap labelling of 5 documents (probability
    prod_d J[g_d, c_d]); the corrected value is unbiased for the gold value, and the noise-variance
    estimate (collection scope) has the corrected value's exact variance as its expectation, per system
    and per pair (brute force)."""
    runs, truth, cheap = tiny(seed=3, n_topics=1, n_docs=5)
    st = study_of(runs, cheap, [RBP, P3])
    g = labels_on_table(st, truth).astype(int)
    J = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]])
    grades = np.array([0.0, 1.0, 2.0])
    N = len(g)
    for spec in st.specs:
        v = measure_gains(grades, spec)
        A = st._dense(spec)                       # (runs, pairs): each pair's weight in each run's mean
        w = np.linalg.solve(J, v)
        truth_val = A @ v[g]
        e1, e2, en = 0.0, 0.0, 0.0
        ep1, ep2, epn = 0.0, 0.0, 0.0
        for c in itertools.product(range(3), repeat=N):
            c = np.array(c)
            prob = float(np.prod(J[g, c]))
            x = A @ w[c]
            ns, npair = st._judge_noise(spec, J * 1000.0, v, c, np.ones(N, dtype=bool))
            d = x[st.i] - x[st.j]
            e1, e2, en = e1 + prob * x, e2 + prob * x ** 2, en + prob * ns
            ep1, ep2, epn = ep1 + prob * d, ep2 + prob * d ** 2, epn + prob * npair
        np.testing.assert_allclose(e1, truth_val, atol=1e-12)
        np.testing.assert_allclose(en, e2 - e1 ** 2, rtol=1e-9, atol=1e-14)
        np.testing.assert_allclose(epn, ep2 - ep1 ** 2, rtol=1e-9, atol=1e-14)


# ------------------------------------------------------------------------------------------------
# Goldberg et al. (2017) through the new path: the eBay numbers

def ebay_study(n_topics: int, n_relevant: int):
    """``n_topics`` topics of 3 ranked documents whose cheap labels give mean P@3 ``n_relevant / (3 n)``,
    plus 143 calibration pairs that no run retrieves (Goldberg et al. 2017, footnote 1): 59 gold-relevant
    of which the cheap judge agreed on 43, 84 gold-non-relevant of which it agreed on 67 (Sec 6)."""
    cheap_labels = np.zeros(3 * n_topics, dtype=int)
    cheap_labels[:n_relevant] = 1
    qid = np.repeat([str(t) for t in range(n_topics)], 3)
    docno = np.tile(["a", "b", "c"], n_topics)
    run = pd.DataFrame({"qid": qid, "docno": docno, "score": np.tile([3.0, 2.0, 1.0], n_topics)})
    cal_gold = np.array([1] * 59 + [0] * 84)
    cal_cheap = np.array([1] * 43 + [0] * 16 + [0] * 67 + [1] * 17)
    cal = pd.DataFrame({"qid": "0", "docno": [f"cal{i:03d}" for i in range(143)], "label": cal_cheap})
    cheap = pd.concat([pd.DataFrame({"qid": qid, "docno": docno, "label": cheap_labels}), cal], ignore_index=True)
    st = study_of({"a": run}, cheap, [P3])
    t = st.aligned.table.frame
    rows = np.flatnonzero(t["docno"].str.startswith("cal").to_numpy())
    gold = pd.Series(cal_gold, index=[f"cal{i:03d}" for i in range(143)])[t["docno"].iloc[rows]].to_numpy()
    N, n = len(t), 143
    smp = GoldSample(rows, np.full(n, n / N), np.full(n, N ** 2 * (1 - n / N) / (n * (n - 1))),
                     np.zeros(n, dtype=np.int64), np.full(N, n / N), "uniform", N, np.zeros(N, dtype=np.int64))
    return st, st.aligned.table.labels, gold.astype(float), smp


@pytest.mark.parametrize("n_topics, n_relevant, value, calibration_var", [
    (500, 939, 0.804698, 7.8273e-3 + 2.6449e-4),      # system a: mean P@3 = 0.6260
    (2000, 3831, 0.828442, 8.29605e-3 + 2.04089e-4),  # system b: mean P@3 = 0.6385
])
def test_goldberg_ebay_numbers_through_the_engine(n_topics, n_relevant, value, calibration_var):
    st, c, gold, smp = ebay_study(n_topics, n_relevant)
    with pytest.warns(CorrectionWarning, match=r"1 rank stratum/strata \(1-10\) had a gold grade without gold pairs"):
        est = st.estimate(c, gold, smp, methods=("naive", "goldberg"))[P3]
    assert est.systems["naive"][0][0] == pytest.approx(n_relevant / (3 * n_topics), abs=1e-12)
    assert est.systems["goldberg"][0][0] == pytest.approx(value, abs=1e-6)
    # the calibration terms of Eq 7: the topics-scope variance minus its query-sampling term
    with pytest.warns(CorrectionWarning, match=r"1 rank stratum/strata \(1-10\) had a gold grade without gold pairs"):
        top = st.estimate(c, gold, smp, methods=("goldberg",), scope="topics")[P3]
    calib = top.systems["goldberg"][1][0] ** 2 - top.topic_var["goldberg"][0][0]
    assert calib == pytest.approx(calibration_var, rel=1e-4)
    # the collection scope adds the judge's own noise on these documents (a non-negative term here)
    assert est.systems["goldberg"][1][0] ** 2 >= calib


# ------------------------------------------------------------------------------------------------
# judge fit

def test_fit_confusion_weighted_counts_brute_force():
    cheap = np.array([0, 0, 1, 1, 1, 0, 1])
    gold = np.array([0, 0, 0, 1, 1, 1, 1])
    w = np.array([1.0, 3.0, 2.0, 1.0, 1.0, 2.0, 4.0])
    M = fit_confusion(cheap, gold, weights=w)
    # gold 0: cheap 0 weight 1+3, cheap 1 weight 2 -> 4/6, 2/6; gold 1: cheap 0 weight 2, cheap 1 weight 6
    np.testing.assert_allclose(M.to_numpy(), [[4 / 6, 2 / 6], [2 / 8, 6 / 8]])
    judge = fit_judge(cheap, gold, weights=w)
    assert isinstance(judge, ConfusionJudge)
    np.testing.assert_allclose(judge.matrix, M.to_numpy())
    by_rank = fit_confusion(cheap, gold, rank=[1, 5, 20, 3, 50, 200, 8], rank_bins=[10, 100])
    assert list(by_rank.index.get_level_values("ranks").unique()) == ["1-10", "11-100", "101+"]
    np.testing.assert_allclose(by_rank.loc["1-10"].to_numpy(), [[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(InputError, match="no gold-judged pair has gold label"):
        fit_judge(cheap, gold, labels=[0, 1, 2])


# ------------------------------------------------------------------------------------------------
# the pt.Experiment-shaped entry point

def test_cheap_experiment_frames_and_warning():
    runs, truth, cheap = tiny(seed=9, n_topics=4, n_docs=6)
    gold = truth.sample(10, random_state=1)
    with pytest.warns(CorrectionWarning, match="is not identified by the gold sample"), pytest.warns(CorrectionWarning, match=r"1 rank stratum/strata \(11\+\) had a gold grade without gold pairs"), \
            pytest.warns(UserWarning, match="not estimated"):
        res = cheap_experiment(runs, cheap, gold, ["P@3", "nDCG@3"])
    assert res.design == "post-stratified"   # a simple random sample, post-stratified
    assert list(res.systems.columns[:6]) == ["name", "method", "P@3", "P@3 se", "P@3 lo", "P@3 hi"]
    assert len(res.systems) == 3 * 5 and len(res.pairs) == 3 * 5
    assert {"name", "baseline", "method", "P@3 p-value"} <= set(res.pairs.columns)
    ppi = res.systems[res.systems["method"] == "ppi"]
    assert (ppi["P@3 lo"] <= ppi["P@3"]).all() and ppi["nDCG@3"].notna().all()
    assert res.systems.loc[res.systems["method"] == "goldberg", "nDCG@3"].isna().all()   # the warning's subject
    # whole topics judged -> topic design, every measure estimated
    gold_topics = truth[truth["qid"].isin(["1", "2", "3"])]
    with pytest.warns(CorrectionWarning, match="the gold qrels judge every cheap-judged pair of 3 topics"):
        res2 = cheap_experiment(runs, cheap, gold_topics, ["nDCG@3"], methods=("naive", "ppi++", "gold"))
    assert res2.design == "topics" and res2.systems["nDCG@3"].notna().all()
    fig = res2.plot()
    assert fig.axes


def test_cheap_experiment_refuses_gold_pairs_without_cheap_labels():
    runs, truth, cheap = tiny(seed=9)
    gold = pd.concat([truth.head(3), pd.DataFrame({"qid": ["1"], "docno": ["zz"], "label": [1]})])
    with pytest.raises(InputError, match="qid='1' docno='zz' has no cheap label"):
        cheap_experiment(runs, cheap, gold, ["P@3"])
