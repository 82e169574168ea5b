"""nDCG@k under the pair design: the ratio estimator of ``pyterrier_noise.correction.ratio``.

Where each expected number comes from:
* the ideal DCG of grade counts: brute force (the gains sorted in decreasing order, discounted by
  1 / log2(rank + 1), as trec_eval's ndcg_cut), and its derivative by finite differences;
* with every pair in the gold sample (pi = 1) the estimate is the engine's nDCG@k on the gold labels;
* bias and variance: exact enumeration of every sample of a stratified design (one stratum per
  topic, 6 or 7 of its 8 pairs) on a tiny collection.  The design-based variance estimator is
  unbiased for the variance of the *linearised* estimator (Horvitz and Thompson 1952; Cochran 1977,
  Eq 5.8); for the ratio itself it is off by the second-order terms of the Taylor expansion
  (Sarndal, Swensson and Wretman 1992, Sec 5.5).  With 12 of 16 pairs sampled we measured them
  within 15% for gold-only and PPI, so the tests allow a factor in [0.75, 1.35].
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.correction import CheapStudy, GoldSample, cheap_experiment, sample_pairs
from pyterrier_noise.correction.ratio import ideal_from_counts
from pyterrier_noise.engine import AlignedRuns, MeasureSpec
from test_correction_cheap import tiny

NDCG3 = MeasureSpec("nDCG", cutoff=3)
NDCG = MeasureSpec("nDCG")


def setup(seed: int, specs=(NDCG3,), variance: str = "design"):
    runs, truth, cheap = tiny(seed, n_docs=8)
    study = CheapStudy(AlignedRuns.build(runs, cheap, ties="trec_eval"), list(specs), variance=variance)
    t = study.aligned.table.frame[["qid", "docno"]]
    gold = t.merge(truth, on=["qid", "docno"], how="left")["label"].to_numpy(dtype=np.float64)
    return study, study.aligned.table.labels, gold, runs, truth, cheap


@pytest.mark.parametrize("counts,cutoff", [((3, 0, 2), 3), ((1, 2, 0), 5), ((0, 0, 4), 2), ((0, 0, 0), 4),
                                           ((12, 7, 3), 10), ((2, 1, 1), 10)])
def test_ideal_from_counts_is_trec_evals_ideal_at_integer_counts(counts, cutoff):
    gains = np.array([3.0, 2.0, 1.0])
    # brute force: the topic's gains sorted in decreasing order, the first `cutoff` discounted
    ranked = np.repeat(gains, counts)[:cutoff]
    expected = (ranked / np.log2(np.arange(len(ranked)) + 2.0)).sum()
    idcg, _ = ideal_from_counts(np.array(counts, dtype=float), gains, cutoff)
    assert idcg == pytest.approx(expected, abs=1e-12)


def test_ideal_gradient_matches_finite_differences():
    gains = np.array([2.0, 1.0])
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = rng.uniform(1.0, 8.0, 2)                          # away from the floor at one document
        _, grad = ideal_from_counts(n, gains, 5)
        for g in range(2):
            e = np.zeros(2)
            e[g] = 1e-6
            fd = (ideal_from_counts(n + e, gains, 5)[0] - ideal_from_counts(n - e, gains, 5)[0]) / 2e-6
            if np.all(np.abs(np.cumsum(n) - np.round(np.cumsum(n))) > 1e-4):    # not on a kink
                assert grad[g] == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_ideal_floor_and_negative_counts():
    gains = np.array([2.0, 1.0])
    # a fraction of a document: the ideal is at least one document of the lowest grade (gain 1)
    idcg, grad = ideal_from_counts(np.array([0.1, 0.0]), gains, 3)
    assert idcg == 1.0 and (grad == 0).all()
    # negative counts count as 0 and have no influence
    idcg, grad = ideal_from_counts(np.array([-2.0, 1.5]), gains, 3)
    assert idcg == pytest.approx(1.0 + 0.5 / np.log2(3.0)) and grad[0] == 0.0
    assert ideal_from_counts(np.zeros(2), gains, 3)[0] == 0.0


@pytest.mark.parametrize("design", ["uniform", "stratified"])
@pytest.mark.parametrize("spec", [NDCG3, NDCG])
def test_census_equals_the_engines_ndcg_on_gold_labels(design, spec):
    study, cheap, gold, *_ = setup(1, specs=(spec,))
    full = sample_pairs(cheap, len(cheap), design=design)
    assert (full.pi_all == 1).all()
    est = study.estimate(cheap, gold[full.rows], full, methods=("gold", "ppi", "ppi++"))[spec]
    per = study.per_topic(gold)[spec]                       # the engine's nDCG on the gold labels
    for m in ("gold", "ppi", "ppi++"):
        v, se = est.systems[m]
        np.testing.assert_allclose(v, per.mean(axis=1), rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.pairs[m][0], per.mean(axis=1)[est.i] - per.mean(axis=1)[est.j], atol=1e-12)
        assert (se == 0).all()


def _enumerate(study, cheap, gold, take):
    """Every sample of ``take`` of the 8 pairs of each of the two topics (one stratum per topic)."""
    s_all = study.row_topic.copy()
    base = GoldSample(np.arange(1), np.ones(1), np.ones(1), np.zeros(1, dtype=np.int64),
                      np.full(len(cheap), take / 8), "stratified", len(cheap), s_all)
    out = {m: ([], [], [], []) for m in ("gold", "ppi", "ppi++")}
    for a in itertools.combinations(np.flatnonzero(s_all == 0), take):
        for b in itertools.combinations(np.flatnonzero(s_all == 1), take):
            s = base.with_rows(np.r_[a, b])
            est = study.estimate(cheap, gold[s.rows], s, methods=tuple(out))[NDCG3]
            for m, acc in out.items():
                for k, x in enumerate((est.systems[m][0], est.systems[m][1] ** 2, est.pairs[m][0],
                                       est.pairs[m][1] ** 2)):
                    acc[k].append(x)
    return {m: [np.array(x) for x in acc] for m, acc in out.items()}


@pytest.mark.slow   # every sample enumerated (~2 CPU-s); the quick run keeps test_correction_pair_ap.py's seed 1
@pytest.mark.parametrize("seed", [1, 3])
def test_linearised_variance_and_bias_by_enumeration(seed):
    study, cheap, gold, *_ = setup(seed)
    truth = study.per_topic(gold)[NDCG3].mean(axis=1)
    tdiff = truth[study.i] - truth[study.j]
    res = {take: _enumerate(study, cheap, gold, take) for take in (6, 7)}
    for m in ("gold", "ppi"):
        v, var, d, dvar = res[6][m]
        # (i) the linearised design-based variance against the variance over every sample
        assert 0.75 <= (var.mean(axis=0) / v.var(axis=0)).min() and (var.mean(axis=0) / v.var(axis=0)).max() <= 1.35
        assert 0.75 <= (dvar.mean(axis=0) / d.var(axis=0)).min() and (dvar.mean(axis=0) / d.var(axis=0)).max() <= 1.35
        # (ii) the ratio's bias is small against its standard deviation, and shrinks with the sample
        bias6 = np.abs(v.mean(axis=0) - truth)
        bias7 = np.abs(res[7][m][0].mean(axis=0) - truth)
        assert (bias6 < 0.25 * v.std(axis=0)).all()
        assert bias7.max() < bias6.max()
        assert np.abs(d.mean(axis=0) - tdiff).max() < 0.25 * d.std(axis=0).min()
    # PPI++ tunes lam on the sample: in [0, 1], and its estimate is finite
    assert np.isfinite(res[6]["ppi++"][0]).all()


def test_pooled_variance_replaces_a_design_variance_with_few_terms():
    study, cheap, gold, *_ = setup(1, variance="pooled")
    smp = sample_pairs(cheap, 8, design="stratified", seed=2)
    est = study.estimate(cheap, gold[smp.rows], smp, methods=("gold", "ppi", "ppi++"))[NDCG3]
    design = CheapStudy(study.aligned, [NDCG3], variance="design").estimate(
        cheap, gold[smp.rows], smp, methods=("gold", "ppi"))[NDCG3]
    for m in ("gold", "ppi"):
        np.testing.assert_allclose(est.systems[m][0], design.systems[m][0])      # same estimate
        assert np.isfinite(est.systems[m][1]).all() and (est.systems[m][1] > 0).all()
        # 8 pairs in a few strata: the pooled model's degrees of freedom (pairs minus strata)
        assert (est.df[m][0] == len(smp) - len(np.unique(smp.stratum))).all()
    lam_s, lam_p = est.lam
    assert ((lam_s >= 0) & (lam_s <= 1)).all() and ((lam_p >= 0) & (lam_p <= 1)).all()


def test_bad_input_is_refused():
    study, cheap, gold, *_ = setup(1)
    smp = sample_pairs(cheap, 6, design="uniform")
    with pytest.raises(InputError, match="one per sampled pair"):
        study.estimate(cheap, gold[smp.rows][:-1], smp, methods=("ppi",))
    with pytest.raises(InputError, match="positive and decreasing"):
        ideal_from_counts(np.ones(2), np.array([1.0, 2.0]), 3)
    with pytest.raises(InputError, match="one count per gain"):
        ideal_from_counts(np.ones(3), np.array([2.0, 1.0]), 3)


def test_cheap_experiment_gives_ndcg_under_the_pair_design():
    study, cheap, gold, runs, truth, cheap_frame = setup(1)
    smp = sample_pairs(cheap, 10, design="stratified", seed=0)
    gold_frame = study.aligned.table.frame.iloc[smp.rows][["qid", "docno"]].merge(truth, on=["qid", "docno"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = cheap_experiment(runs, cheap_frame, gold_frame, ["nDCG@3", "AP", "RR"],
                               methods=("naive", "ppi", "gold"), sample=smp,
                               ap_min_relevant=0)   # 10 gold pairs: below AP's minimum, which is tested elsewhere
    rows = res.systems.set_index(["name", "method"])
    assert np.isfinite(rows.loc[(slice(None), ["ppi", "gold"]), "nDCG@3"]).all()
    assert np.isfinite(rows.loc[(slice(None), ["ppi", "gold"]), "AP"]).all()   # tests/correction/test_correction_pair_ap.py
    assert rows.loc[(slice(None), "ppi"), "RR"].isna().all()               # RR: topic design only
    text = " ".join(str(w.message) for w in caught)
    assert "ppi for RR" in text and "ppi for nDCG@3" not in text and "gold for nDCG@3" not in text
    assert "for AP" not in text


def test_pooled_variance_brute_force():
    """The pooled model written with loops: per stratum, Cochran (1977) Eq 5.6 with the population
    variance of ``a . r`` taken as ``sum_kl E[a_k a_l] E[r_k r_l] - E[a_k] E[a_l] E[r_k] E[r_l]`` (the
    product of the means estimated unbiasedly), where ``a`` is a pair's known weight vector in the
    linearisation (``alpha_t w``, then ``-beta_rt c_tg`` per grade) and ``r`` its residual vector
    (the gain's, then each grade indicator's)."""
    from pyterrier_noise.correction.ratio import _Parts   # private: the ratio estimator's parts under test
    study, cheap, gold, *_ = setup(1, variance="pooled")
    smp = sample_pairs(cheap, 8, design="stratified", seed=2)
    est = study.estimate(cheap, gold[smp.rows], smp, methods=("ppi",))[NDCG3]
    parts = _Parts(study, NDCG3, cheap, gold[smp.rows], smp)
    _, _, point = parts.influence(1.0)
    D = study.D_ratio[NDCG3].toarray()
    topic = study.row_topic
    G = parts.G
    r = np.zeros((len(smp), G + 1))
    for n in range(len(smp)):
        r[n, 0] = parts.gy[n] - parts.gh[n]
        for g in range(G):
            r[n, 1 + g] = float(parts.iy[n] == g) - parts.mh[n, g]
    for k in range(study.n_runs):
        a = np.zeros((len(cheap), G + 1))
        for i in range(len(cheap)):
            t = topic[i]
            a[i, 0] = point["alpha"][t] * D[k, i]
            for g in range(G):
                a[i, 1 + g] = -point["beta"][k, t] * point["c"][t, g]
        v = 0.0
        for h in np.unique(smp.stratum_all):
            pop = smp.stratum_all == h
            rh = r[smp.stratum == h]
            Nh, nh = pop.sum(), len(rh)
            Eaa = a[pop].T @ a[pop] / Nh
            Ea = a[pop].mean(axis=0)
            Err = rh.T @ rh / nh
            mr = rh.mean(axis=0)
            ErEr = np.outer(mr, mr) - ((1 - nh / Nh) * np.cov(rh.T, ddof=1) / nh if nh > 1 else 0.0)
            v += Nh ** 2 * (1 - nh / Nh) / nh * Nh / (Nh - 1) * ((Eaa * Err).sum() - (np.outer(Ea, Ea) * ErEr).sum())
        assert est.systems["ppi"][1][k] ** 2 == pytest.approx(max(v, 0.0), rel=1e-9, abs=1e-15)
