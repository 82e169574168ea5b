"""Judge-error models (pyterrier_noise.judges): the seed notes' reference values, binomial bands on realised error
rates, the weighted-subset expected-count property, recovery of known logistic coefficients,
agreement of replicate evaluation with ir_measures / pytrec_eval, seeding guarantees, bad input, CLI."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit

import pyterrier_noise as pn
from pyterrier_noise import AlignedRuns, InputError, MeasureSpec
from pyterrier_noise.engine import JudgmentTable
from pyterrier_noise.cli import main
from pyterrier_noise.correction import JudgeCalibration
from pyterrier_noise.judges import (
    JUDGES, Chain, ConfusionJudge, FlipRateModel, MetarankLogisticModel, PerturbationWarning,
    PoolDepthReduction, RandomFlips, RandomRemoval, RankBiasedFlips, ReplicateSet, deeply_judged_runs,
    inclusion_probabilities, meta_ap, meta_ap_weight, sample_for_dual_assessment, sdt_params, sdt_rates,
    weighted_subset)
from pyterrier_noise.synthetic import make_collection

COVID = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "trec-covid-round1"
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "perturbation.md"


def same(a, b) -> bool:
    return np.array_equal(a, b, equal_nan=True)


def band(n: int, p: float, level: float = 0.999) -> tuple[float, float]:
    lo, hi = stats.binom.interval(level, n, p)
    return lo, hi


@pytest.fixture(scope="module")
def table(coll):
    return JudgmentTable.from_qrels(coll.qrels)


@pytest.fixture(scope="module")
def aligned(coll):
    return AlignedRuns.build(coll.runs, coll.qrels)


# ------------------------------------------------------------------------------------------------
# seed000 Sec. 2.1: signal detection


def test_sdt_reference_values_seed000():
    assert sdt_rates(3.0, 0.0) == pytest.approx((0.9332, 0.0668), abs=1e-4)
    assert sdt_rates(1.0, 1.0) == pytest.approx((0.3085, 0.0668), abs=1e-4)
    assert sdt_rates(2.3, 0.37) == pytest.approx((0.7823, 0.0643), abs=1e-4)
    assert sdt_rates(1.9, 0.14) == pytest.approx((0.7910, 0.1379), abs=1e-4)
    # the Table-3 grid inverse mapping
    assert sdt_params(0.93, 0.01) == pytest.approx((3.802, 0.425), abs=1e-3)
    assert sdt_params(0.70, 0.05) == pytest.approx((2.169, 0.560), abs=1e-3)
    assert sdt_params(0.31, 0.07) == pytest.approx((0.980, 0.986), abs=1e-3)
    # presets are those judges
    flips = RandomFlips.from_judge("smart_neutral")
    assert (flips.tpr, flips.fpr) == pytest.approx((0.9332, 0.0668), abs=1e-4)
    assert (flips.disc, flips.bias) == pytest.approx(JUDGES["smart_neutral"])
    assert RandomFlips.from_judge("extreme").tpr == pytest.approx(0.3085, abs=1e-4)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_sdt_round_trip(tpr, fpr):
    assert sdt_rates(*sdt_params(tpr, fpr)) == pytest.approx((tpr, fpr), abs=1e-12)


# ------------------------------------------------------------------------------------------------
# seed000 Sec. 2.2 / seed003 Sec. 2: meta-AP


def test_meta_ap_weights_seed003():
    w = meta_ap_weight([1, 2, 3, 10, 100, 1000, 1001])
    assert w == pytest.approx([7.4855, 6.9855, 6.6521, 5.5565, 3.2981, 1.0, 0.0], abs=1e-4)


def test_meta_ap_examples_seed000():
    # four runs of one topic: "a" at rank 1 in all, "b" at rank 2 in all, "c" at rank 10 in two of them
    runs = {}
    for r in range(4):
        docs = ["a", "b"] + [f"x{r}-{i}" for i in range(7)] + (["c"] if r < 2 else [f"y{r}"])
        runs[f"r{r}"] = pd.DataFrame({"qid": "1", "docno": docs, "score": np.arange(10, 0, -1.0)})
    docs = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c", "never"]})
    m = meta_ap(runs, docs).set_index("docno")["meta_ap"]
    assert m["a"] == pytest.approx(7.4855, abs=1e-4)
    assert m["b"] == pytest.approx(6.9855, abs=1e-4)
    assert m["c"] == pytest.approx(2.7783, abs=1e-4)
    assert m["never"] == 0.0
    assert meta_ap(runs, docs, depth=5).set_index("docno")["meta_ap"]["c"] == 0.0


def test_meta_ap_brute_force(coll):
    docs = coll.true_qrels[coll.true_qrels["qid"].isin(["1", "2", "3"])]   # retrieved or not, above 50 or not
    got = meta_ap(coll.runs, docs, depth=50)
    assert len(got) == len(docs)
    rows = []
    for run in coll.runs.values():
        top = run[run["rank"] < 50]   # synthetic runs are in trec_eval order, rank 0-based
        rows.append(pd.DataFrame({"qid": top["qid"], "docno": top["docno"],
                                  "w": meta_ap_weight(top["rank"].to_numpy() + 1, depth=50)}))
    brute = pd.concat(rows).groupby(["qid", "docno"])["w"].sum() / len(coll.runs)
    want = got.set_index(["qid", "docno"]).join(brute.rename("w"))["w"].fillna(0.0)
    assert got["meta_ap"].to_numpy() == pytest.approx(want.to_numpy(), abs=1e-12)
    assert (got["meta_ap"] == 0).any() and (got["meta_ap"] > 0).any()


# ------------------------------------------------------------------------------------------------
# seed000 Sec. 2.5: weighted subsets


def test_inclusion_probabilities_test_vector_seed000():
    w = np.arange(1, 10) / 10
    assert inclusion_probabilities(w, 2) == pytest.approx(
        [0.0444, 0.0889, 0.1333, 0.1778, 0.2222, 0.2667, 0.3111, 0.3556, 0.4000], abs=1e-4)
    assert inclusion_probabilities(w, 7) == pytest.approx(
        [0.6000, 0.6444, 0.6889, 0.7333, 0.7778, 0.8222, 0.8667, 0.9111, 0.9556], abs=1e-4)
    assert inclusion_probabilities(w, 4.5) == pytest.approx(w, abs=1e-12)
    assert inclusion_probabilities(w, 0).sum() == 0 and inclusion_probabilities(w, 12).sum() == 9
    assert inclusion_probabilities(np.zeros(4), 1) == pytest.approx([0.25] * 4)   # fallback: uniform
    assert inclusion_probabilities(np.ones(4), 3) == pytest.approx([0.75] * 4)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.floats(0.0, 1.0))
def test_inclusion_keeps_the_expected_count(weights, frac):
    w = np.asarray(weights)
    target = frac * len(w)
    pi = inclusion_probabilities(w, target)
    assert pi.sum() == pytest.approx(target, abs=1e-9)
    assert ((pi >= 0) & (pi <= 1)).all()
    order = np.argsort(w, kind="stable")
    assert (np.diff(pi[order]) >= -1e-12).all()    # more weight, more likely chosen


def test_weighted_subset_mean_size():
    w = np.arange(1, 10) / 10
    sizes = np.array([weighted_subset(w, 2, seed=s).sum() for s in range(4000)])
    pi = inclusion_probabilities(w, 2)
    se = np.sqrt((pi * (1 - pi)).sum() / len(sizes))
    assert abs(sizes.mean() - 2) < 3.3 * se


# ------------------------------------------------------------------------------------------------
# random flips


def test_random_flips_rates_within_binomial_band(table):
    n = 400
    labels = RandomFlips(tpr=0.93, fpr=0.07, seed=11).sample_labels(table, n)
    rel = table.labels >= 1
    kept = int((labels[rel] >= 1).sum())
    on = int((labels[~rel] >= 1).sum())
    lo, hi = band(int(rel.sum()) * n, 0.93)
    assert lo <= kept <= hi
    lo, hi = band(int((~rel).sum()) * n, 0.07)
    assert lo <= on <= hi


def test_graded_labels_and_flip_labels(table):
    labels = RandomFlips(tpr=0.6, fpr=0.4, seed=3).sample_labels(table, 20)
    orig = np.broadcast_to(table.labels[:, None], labels.shape)
    changed = labels != orig
    # relevant (1 or 2) flips to 0; non-relevant flips to rel = 1; others keep their grade
    assert set(np.unique(labels[changed & (orig >= 1)])) == {0.0}
    assert set(np.unique(labels[changed & (orig < 1)])) == {1.0}
    assert (labels[~changed] == orig[~changed]).all() and (orig[~changed] == 2).any()
    custom = RandomFlips(tpr=0.6, fpr=0.4, rel=2, off_label=1, on_label=3, seed=3).sample_labels(table, 5)
    o5 = np.broadcast_to(table.labels[:, None], custom.shape)
    ch = custom != o5
    assert set(np.unique(custom[ch & (o5 >= 2)])) == {1.0} and set(np.unique(custom[ch & (o5 < 2)])) == {3.0}


def test_perfect_judge_changes_nothing(table):
    labels = RandomFlips(tpr=1.0, fpr=0.0).sample_labels(table, 3)
    assert (labels == table.labels[:, None]).all()


# ------------------------------------------------------------------------------------------------
# rank-biased flips


def test_rank_biased_with_flat_weights_is_random_flips(coll, table):
    # equal weights make weighted_subset Bernoulli(rho) (seed000 Sec. 2.5); same seed, same uniforms
    flat = RankBiasedFlips(0.9, 0.05, runs=coll.runs, betas={"tpr": (0.3, 0.0), "fpr": (-1.0, 0.0)}, seed=5)
    assert same(flat.sample_labels(table, 30), RandomFlips(0.9, 0.05, seed=5).sample_labels(table, 30))


def test_rank_biased_keeps_expected_error_counts(coll, table):
    model = RankBiasedFlips(0.93, 0.07, runs=coll.runs, seed=2)
    p = model.probabilities(table)
    rel = table.labels >= 1
    t = table.topic_index
    n_t = len(table.topics)
    # exact: per topic, sum of keep probabilities = |rel| TPR, of flip-on probabilities = |nonrel| FPR
    assert np.bincount(t[rel], p[rel], n_t) == pytest.approx(0.93 * np.bincount(t[rel], minlength=n_t), abs=1e-9)
    assert np.bincount(t[~rel], p[~rel], n_t) == pytest.approx(0.07 * np.bincount(t[~rel], minlength=n_t),
                                                               abs=1e-9)
    # the probabilities are not flat: they follow the weights
    assert p[rel].std() > 0.02 and p[~rel].std() > 0.02
    # Monte Carlo: realised totals over replicates agree with the expected counts
    n = 300
    labels = model.sample_labels(table, n)
    for mask, pr, says in ((rel, p, labels >= 1), (~rel, p, labels >= 1)):
        total = says[mask].sum()
        mean = n * pr[mask].sum()
        sd = np.sqrt(n * (pr[mask] * (1 - pr[mask])).sum())
        assert abs(total - mean) < 3.3 * sd


def test_rank_biased_places_errors_by_popularity(coll, table):
    model = RankBiasedFlips(0.93, 0.07, runs=coll.runs, seed=4)
    w = model.weights(table)
    labels = model.sample_labels(table, 200)
    freq_rel = (labels >= 1).mean(axis=1)
    rel = table.labels >= 1
    m = w["meta_ap"].to_numpy()
    # relevant documents: the rarer, the more often dropped; non-relevant: the more popular, the more flipped on
    assert stats.spearmanr(m[rel], freq_rel[rel])[0] > 0.5
    assert stats.spearmanr(m[~rel], freq_rel[~rel])[0] > 0.5
    assert w["w_relevant"].to_numpy() == pytest.approx(expit(-0.62 + 0.53 * m))
    assert w["w_nonrelevant"].to_numpy() == pytest.approx(expit(-3.90 + 1.20 * m))


def test_rank_biased_absolute_weighting(coll, table):
    model = RankBiasedFlips(None, None, runs=coll.runs, weighting="absolute")
    w = model.weights(table)
    p = model.probabilities(table)
    rel = table.labels >= 1
    assert p[rel] == pytest.approx(w["w_relevant"].to_numpy()[rel])
    assert p[~rel] == pytest.approx(w["w_nonrelevant"].to_numpy()[~rel])


def test_rank_biased_accepts_aligned_runs_and_meta_ap_frame(coll, aligned):
    a = RankBiasedFlips(0.9, 0.1, runs=aligned, seed=1).sample_labels(aligned.table, 4)
    b = RankBiasedFlips(0.9, 0.1, runs=coll.runs, seed=1).sample_labels(aligned.table, 4)
    frame = meta_ap(coll.runs, coll.qrels)
    c = RankBiasedFlips(0.9, 0.1, meta_ap=frame, seed=1).sample_labels(aligned.table, 4)
    assert same(a, b) and same(a, c)


# ------------------------------------------------------------------------------------------------
# seeding guarantees


@pytest.mark.parametrize("make", [
    lambda c: RandomFlips(0.9, 0.1),
    lambda c: RankBiasedFlips(0.9, 0.1, runs=c.runs),
    lambda c: RandomRemoval(0.3, exact=True),
    lambda c: ConfusionJudge(JudgeCalibration([[30, 3, 1], [4, 20, 6], [1, 3, 25]], labels=[0, 1, 2]),
                             sample_matrix=True),
    lambda c: PoolDepthReduction(c.runs, 5) >> RandomFlips(0.8, 0.2),
])
def test_seeds_prefixes_and_offsets(coll, table, make):
    model = make(coll)
    ten = model.sample_labels(table, 10, seed=7)
    assert same(ten, model.sample_labels(table, 10, seed=7))            # same seed, same replicates
    assert not same(ten, model.sample_labels(table, 10, seed=8))        # another seed differs
    assert same(ten[:, :3], model.sample_labels(table, 3, seed=7))      # replicate i independent of n
    assert same(ten[:, 4:9], model.sample_labels(table, 5, seed=7, start=4))
    assert not same(ten[:, 0], ten[:, 1])                               # replicates differ


def test_unjudged_table_rows_stay_unjudged(coll):
    wide = AlignedRuns.build(coll.runs, coll.qrels, include_unjudged=True)
    unjudged = np.isnan(wide.table.labels)
    assert unjudged.any()
    labels = RandomFlips(0.6, 0.4, seed=1).sample_labels(wide, 6)
    assert np.isnan(labels[unjudged]).all() and not np.isnan(labels[~unjudged]).any()
    # the replicates of the judged rows do not depend on the extra unjudged rows
    plain = RandomFlips(0.6, 0.4, seed=1).replicates(coll.qrels, 6)
    key = pd.MultiIndex.from_frame(wide.table.frame[["qid", "docno"]])
    pos = key.get_indexer(pd.MultiIndex.from_frame(plain.table.frame[["qid", "docno"]]))
    assert same(labels[pos], plain.labels)


# ------------------------------------------------------------------------------------------------
# replicate values equal ir_measures / pytrec_eval on each replicate's qrels


def ir_measures_values(runs, qrels, measures):
    import ir_measures
    # plain-object text columns: ir_measures reads every row, and an Arrow-backed column element by element
    text = {"query_id": object, "doc_id": object}
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}).astype(text)
    q["relevance"] = q["relevance"].astype(int)
    ev = ir_measures.evaluator(measures, q)
    out = {}
    for name, run in runs.items():
        r = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]].astype(text)
        for m in ev.iter_calc(r):
            out[(name, m.query_id, str(m.measure))] = m.value
    return out


def check_against_ir_measures(aligned, runs, reps, columns, pairs):
    ours = aligned.evaluate([s for _, s in pairs], reps.labels)
    lookup = {str(m): s for m, s in pairs}
    compared = 0
    for i in columns:
        ref = ir_measures_values(runs, reps.qrels(i), [m for m, _ in pairs])
        for (name, qid, measure), value in ref.items():
            r, t = aligned.run_names.index(name), aligned.topics.index(qid)
            assert ours[lookup[measure]][r, t, i] == pytest.approx(value, abs=1e-9), (name, qid, measure, i)
            compared += 1
    return compared


@pytest.mark.parametrize("make", [
    lambda c: RandomFlips(0.8, 0.1, seed=3),
    lambda c: RankBiasedFlips.from_judge("nist_primary", runs=c.runs, seed=3),
    lambda c: ConfusionJudge(np.array([[0.8, 0.15, 0.05], [0.2, 0.6, 0.2], [0.05, 0.25, 0.7]]), [0, 1, 2], seed=3),
    lambda c: RandomRemoval(0.4, seed=3) >> RandomFlips(0.9, 0.05),
])
def test_replicates_evaluate_like_ir_measures(coll, aligned, make):
    from ir_measures import AP, RBP, RR, P, nDCG
    pairs = [(AP, MeasureSpec("AP")), (nDCG @ 10, MeasureSpec("nDCG", cutoff=10)), (nDCG, MeasureSpec("nDCG")),
             (P @ 10, MeasureSpec("P", cutoff=10)), (RR, MeasureSpec("RR")),
             (RBP(rel=1, p=0.8), MeasureSpec("RBP", p=0.8))]
    runs = {k: coll.runs[k] for k in list(coll.runs)[:6]}
    sub = AlignedRuns.build(runs, coll.qrels)
    reps = make(coll).replicates(coll.qrels, 8)
    assert sub.table.frame[["qid", "docno"]].equals(reps.table.frame[["qid", "docno"]])
    assert check_against_ir_measures(sub, runs, reps, [0, 5], pairs) >= 2 * 6 * 25 * len(pairs)


@pytest.mark.slow   # real data; the quick run checks the same against ir_measures on the synthetic collection above
def test_replicates_evaluate_like_ir_measures_trec_covid():
    if not COVID.exists():
        pytest.skip(f"real data not available: {COVID} is absent (../shared/data is not beside the repo)")
    from ir_measures import AP, RR, P, nDCG
    files = sorted((COVID / "runs").iterdir())[::40]   # 4 of the 143 runs
    with pytest.warns(pn.io.CoercionWarning, match="ranks start at 0"):   # bm25_baseline.gz is written 0-based
        runs = pn.read_runs([str(f) for f in files])
    qrels = pn.read_qrels(COVID / "qrels-rnd1.txt")
    aligned = AlignedRuns.build(runs, qrels)
    pairs = [(AP, MeasureSpec("AP")), (nDCG @ 10, MeasureSpec("nDCG", cutoff=10)),
             (P @ 10, MeasureSpec("P", cutoff=10)), (RR, MeasureSpec("RR")), (nDCG, MeasureSpec("nDCG"))]
    reps = RandomFlips.from_judge("smart_neutral", seed=1).replicates(qrels, 3)
    assert check_against_ir_measures(aligned, runs, reps, [0, 2], pairs) == 2 * 4 * 30 * len(pairs)
    pooled = PoolDepthReduction(runs, 10).replicates(qrels, 1)
    assert check_against_ir_measures(aligned, runs, pooled, [0], pairs) == 4 * 30 * len(pairs)


# ------------------------------------------------------------------------------------------------
# the transformer form


def test_transformer_form_and_pt_experiment(coll):
    import pyterrier as pt
    model = RandomFlips(tpr=0.9, fpr=0.1, seed=1)
    out = model(coll.qrels)
    assert list(out.columns) == list(coll.qrels.columns) and out["label"].dtype == coll.qrels["label"].dtype
    rep0 = model.replicates(coll.qrels, 1).qrels(0)
    merged = out.merge(rep0, on=["qid", "docno"], suffixes=("", "_rep"))
    assert len(merged) == len(coll.qrels) and (merged["label"] == merged["label_rep"]).all()
    third = model.transformer(seed=1, replicate=2)(coll.qrels)
    rep2 = third.merge(model.replicates(coll.qrels, 3).qrels(2), on=["qid", "docno"], suffixes=("", "_rep"))
    assert len(rep2) == len(coll.qrels) and (rep2["label"] == rep2["label_rep"]).all()
    assert not (rep2["label"] == merged["label"]).all()
    # ir_measures column names and extra columns are kept
    irm = coll.qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}).assign(it="0")
    assert list(model(irm).columns) == ["query_id", "doc_id", "relevance", "it"]
    # pool reduction drops rows
    assert len(PoolDepthReduction(coll.runs, 3)(coll.qrels)) < len(coll.qrels)
    systems = [pt.Transformer.from_df(coll.runs[n]) for n in ("run01", "run02")]
    res = pt.Experiment(systems, coll.topics, model(coll.qrels), eval_metrics=["map", "ndcg_cut_10"],
                        names=["run01", "run02"])
    aligned = AlignedRuns.build({n: coll.runs[n] for n in ("run01", "run02")}, coll.qrels)
    ap = aligned.evaluate([MeasureSpec("AP")], model.sample_labels(aligned.table, 1))[MeasureSpec("AP")]
    assert res["map"].to_numpy() == pytest.approx(ap[:, :, 0].mean(axis=1), abs=1e-9)


# ------------------------------------------------------------------------------------------------
# disagreement models (seed003)


@pytest.fixture(scope="module")
def dual():
    """Dual assessments simulated from known universal logistic models over real meta-AP values."""
    c = make_collection(n_topics=40, n_systems=20, pool_depth=40, seed=2)
    m = meta_ap(c.runs, c.qrels)
    orig = m.merge(c.qrels, on=["qid", "docno"])[["qid", "docno", "label"]]
    A = orig["label"].to_numpy() >= 1
    beta = {1: (-0.5, 0.9), 0: (-3.0, 0.8)}
    p = np.where(A, expit(beta[1][0] + beta[1][1] * m["meta_ap"]), expit(beta[0][0] + beta[0][1] * m["meta_ap"]))
    B = np.random.default_rng(0).random(len(p)) < p
    alt = orig[["qid", "docno"]].assign(label=B.astype(np.int64))
    return c, m, orig, alt, beta


def test_metarank_logistic_recovers_coefficients(dual):
    c, m, orig, alt, beta = dual
    model = MetarankLogisticModel(c.runs, scope="universal").fit(orig, alt)
    coef = model.coefficients_.set_index("original")
    for a in (0, 1):
        row = coef.loc[a]
        assert abs(row["beta0"] - beta[a][0]) < 3.3 * row["se_beta0"], (a, row)
        assert abs(row["beta1"] - beta[a][1]) < 3.3 * row["se_beta1"], (a, row)
        assert row["status"] == "pos_sig"
    # the same fit as statsmodels' Logit on one class
    import statsmodels.api as sm
    d = m.assign(A=orig["label"].to_numpy() >= 1, B=alt["label"].to_numpy())
    one = d[d["A"]]
    ref = sm.Logit(one["B"].astype(float), sm.add_constant(one["meta_ap"])).fit(disp=0)
    assert [coef.loc[1, "beta0"], coef.loc[1, "beta1"]] == pytest.approx(ref.params.to_list(), abs=1e-6)
    assert [coef.loc[1, "se_beta0"], coef.loc[1, "se_beta1"]] == pytest.approx(ref.bse.to_list(), rel=1e-5)
    # replicates call documents relevant at the model's probabilities
    p = model.probabilities(orig)
    labels = model.sample_labels(JudgmentTable.from_qrels(orig), 200)
    says = (labels >= 1).sum()
    pr = p["p_relevant"].to_numpy()
    assert abs(says - 200 * pr.sum()) < 3.3 * np.sqrt(200 * (pr * (1 - pr)).sum())


def test_per_topic_fits_equal_separate_statsmodels_fits(dual):
    import statsmodels.api as sm
    c, m, orig, alt, _ = dual
    with pytest.warns(PerturbationWarning, match=r"logistic model\(s\) are improper"):   # topics whose labels all agree
        model = MetarankLogisticModel(metarank=m, scope="per_topic").fit(orig, alt)
    coef = model.coefficients_
    d = m.assign(A=(orig["label"].to_numpy() >= 1).astype(int), B=alt["label"].to_numpy())
    proper = coef[coef["status"] != "improper"]
    assert len(proper) >= 60
    classes: dict[str, int] = {}
    for row in proper.itertuples():
        g = d[(d["qid"] == row.qid) & (d["A"] == row.original)]
        ref = sm.Logit(g["B"].astype(float), sm.add_constant(g["meta_ap"])).fit(disp=0)
        assert [row.beta0, row.beta1] == pytest.approx(ref.params.to_list(), abs=1e-5), row.qid
        assert [row.se_beta0, row.se_beta1] == pytest.approx(ref.bse.to_list(), rel=1e-4), row.qid
        # Table 4's slope classes from statsmodels' two-sided Wald test of the slope (p < 0.05)
        p_ref = float(ref.pvalues.iloc[1])
        assert row.p_slope == pytest.approx(p_ref, rel=1e-4, abs=1e-12), row.qid
        want = ("pos" if ref.params.iloc[1] > 0 else "neg") + ("_sig" if p_ref < 0.05 else "_nonsig")
        classes[want] = classes.get(want, 0) + 1
        assert row.status == want, row.qid
    table4 = model.slope_table()
    assert table4.to_numpy().sum() == len(coef)
    assert {k: int(table4[k].sum()) for k in classes} == classes
    assert table4.loc["p(.|0)", "pos_sig"] > table4.loc["p(.|0)", "neg_sig"]


def test_improper_fits_are_detected_and_fall_back():
    # topic 1 relevant: alternative labels separated by metarank; topic 2 relevant: all agree
    m = pd.DataFrame({"qid": ["1"] * 8 + ["2"] * 8, "docno": [f"d{i}" for i in range(16)],
                      "meta_ap": [0.5, 1, 1.5, 2, 3, 3.5, 4, 5] * 2})
    orig = m[["qid", "docno"]].assign(label=[1, 1, 1, 1, 0, 0, 0, 0] * 2)
    alt = m[["qid", "docno"]].assign(label=[0, 0, 1, 1, 1, 0, 1, 0] + [1, 1, 1, 1, 0, 1, 0, 1])
    # the warning names the separable topics and what they use
    with pytest.warns(PerturbationWarning, match=r"improper .*qid '1' \(A=1\), '2' \(A=1\).*0/1 probabilities"):
        model = MetarankLogisticModel(metarank=m, scope="per_topic").fit(orig, alt)
    coef = model.coefficients_.set_index(["qid", "original"])
    assert coef.loc[("1", 1), "status"] == "improper" and coef.loc[("2", 1), "status"] == "improper"
    assert coef.loc[("1", 0), "status"] != "improper"
    p = model.probabilities(orig).set_index("docno")["p_relevant"]
    # Webber et al. (2012), Sec. 3.2.2: "0 or 1 probabilities can be assigned to scores": topic 1's
    # B = 1 documents (metarank 1.5, 2) lie above its B = 0 ones (0.5, 1), so 0 below the gap, 1 above
    assert p[["d0", "d1", "d2", "d3"]].to_numpy() == pytest.approx([0.0, 0.0, 1.0, 1.0])
    assert p[["d8", "d9", "d10", "d11"]].to_numpy() == pytest.approx([1.0] * 4)    # all agree
    # Eq. 2 (residual sum of squares): 0 for a perfectly separated step; brute force for a proper fit
    assert coef.loc[("1", 1), "rss"] == pytest.approx(0.0)
    row = coef.loc[("1", 0)]
    mm = np.array([3, 3.5, 4, 5.0]); yy = np.array([1, 0, 1, 0.0])
    assert row["rss"] == pytest.approx(((yy - expit(row["beta0"] + row["beta1"] * mm)) ** 2).sum())
    # a new metarank between the classes: the step's middle (1.25) decides
    new = pd.DataFrame({"qid": ["1"], "docno": ["x"], "label": [1]})
    mx = pd.concat([m, pd.DataFrame({"qid": ["1"], "docno": ["x"], "meta_ap": [1.3]})], ignore_index=True)
    with pytest.warns(PerturbationWarning, match=r"logistic model\(s\) are improper"):
        m2 = MetarankLogisticModel(metarank=mx, scope="per_topic").fit(orig, alt)
    assert m2.probabilities(new)["p_relevant"].iloc[0] == 1.0
    # the earlier behaviour: the rank-insensitive empirical rate
    with pytest.warns(PerturbationWarning, match="empirical rate"):
        rate = MetarankLogisticModel(metarank=m, scope="per_topic", improper="rate").fit(orig, alt)
    p = rate.probabilities(orig).set_index("docno")["p_relevant"]
    assert p[["d0", "d1", "d2", "d3"]].to_numpy() == pytest.approx([0.5] * 4)      # empirical rate 2 / 4
    assert rate.coefficients_.set_index(["qid", "original"]).loc[("1", 1), "rss"] == pytest.approx(4 * 0.25)
    with pytest.warns(PerturbationWarning, match="universal model"):
        uni = MetarankLogisticModel(metarank=m, scope="per_topic", improper="universal").fit(orig, alt)
    u = uni.universal_.set_index("original")
    want = expit(u.loc[1, "beta0"] + u.loc[1, "beta1"] * 0.5)
    assert uni.probabilities(orig).set_index("docno")["p_relevant"]["d0"] == pytest.approx(want)


def test_quasi_separated_fit_steps_with_the_boundary_rate():
    # B = 1 at metarank (2, 3, 3), B = 0 at (1, 2): classes touch at 2 (quasi-complete separation);
    # below 2 -> 0, above -> 1, at 2 the documents there (one B = 1, one B = 0) get 1/2
    m = pd.DataFrame({"qid": ["1"] * 7, "docno": [f"d{i}" for i in range(7)],
                      "meta_ap": [1.0, 2.0, 2.0, 3.0, 3.0, 0.5, 4.0]})
    orig = m[["qid", "docno"]].assign(label=[1, 1, 1, 1, 1, 0, 0])
    alt = m[["qid", "docno"]].assign(label=[0, 0, 1, 1, 1, 0, 1])
    with pytest.warns(PerturbationWarning, match="improper"):
        model = MetarankLogisticModel(metarank=m, scope="per_topic").fit(orig, alt)
    p = model.probabilities(orig).set_index("docno")["p_relevant"]
    assert p[["d0", "d1", "d2", "d3", "d4"]].to_numpy() == pytest.approx([0.0, 0.5, 0.5, 1.0, 1.0])
    assert model.coefficients_.set_index(["qid", "original"]).loc[("1", 1), "rss"] == pytest.approx(0.5)


def test_flip_rate_model(dual):
    c, m, orig, alt, _ = dual
    model = FlipRateModel(scope="per_topic").fit(orig, alt)
    d = orig.assign(A=orig["label"] >= 1, B=alt["label"].to_numpy() >= 1)
    t1 = d[d["qid"] == "1"]
    r = model.rates_.set_index("qid").loc["1"]
    assert r["fnr"] == pytest.approx((t1["A"] & ~t1["B"]).sum() / t1["A"].sum())
    assert r["fpr"] == pytest.approx((~t1["A"] & t1["B"]).sum() / (~t1["A"]).sum())
    uni = FlipRateModel(scope="universal").fit(orig, alt)
    assert uni.universal_rates_["fpr"] == pytest.approx((~d["A"] & d["B"]).sum() / (~d["A"]).sum())
    p = uni.probabilities(orig)["p_relevant"].to_numpy()
    assert set(np.round(p, 12)) == {round(1 - uni.universal_rates_["fnr"], 12), round(uni.universal_rates_["fpr"], 12)}
    # fixed rates: the flip-rate model is random flips at TPR = 1 - FNR (same seed, same uniforms)
    table = JudgmentTable.from_qrels(orig)
    assert same(FlipRateModel(fnr=0.2, fpr=0.05, seed=4).sample_labels(table, 5),
                          RandomFlips(0.8, 0.05, seed=4).sample_labels(table, 5))


def test_sample_for_dual_assessment(dual):
    c, m, orig, _, _ = dual
    uni = sample_for_dual_assessment(orig, 20, "uniform", seed=1)
    assert not uni.duplicated(["qid", "docno"]).any()
    per = uni.groupby(["qid", "original_relevant"]).size()
    avail = orig.assign(r=orig["label"] >= 1).groupby(["qid", "r"]).size()
    assert (per.to_numpy() == np.minimum(20, avail.loc[per.index].to_numpy())).all()
    even = sample_for_dual_assessment(orig, 20, "even", metarank=m, seed=1)
    counts = even.groupby(["qid", "original_relevant", "bin"]).size()
    sizes = m.merge(orig).assign(r=lambda f: f["label"] >= 1).groupby(["qid", "r"]).size()
    big = sizes[sizes >= 5 * 4 + 5].index                     # every quintile holds at least 4 documents
    assert len(big) > 20
    for key in big:
        assert (counts.loc[key].to_numpy() == 4).all() and len(counts.loc[key]) == 5
    # the bins are metarank quintiles: bin medians increase
    med = even[even["original_relevant"] == False].groupby("bin")["meta_ap"].median()  # noqa: E712
    assert med.is_monotonic_increasing
    assert not uni.equals(sample_for_dual_assessment(orig, 20, "uniform", seed=2))


# ------------------------------------------------------------------------------------------------
# confusion-matrix judges (seed001)


def test_confusion_judge_frequencies(table):
    J = np.array([[0.85, 0.1, 0.05], [0.2, 0.6, 0.2], [0.05, 0.25, 0.7]])
    n = 200
    labels = ConfusionJudge(J, [0, 1, 2], seed=9).sample_labels(table, n)
    for g in range(3):
        rows = table.labels == g
        total = int(rows.sum()) * n
        for b in range(3):
            lo, hi = band(total, J[g, b])
            assert lo <= (labels[rows] == b).sum() <= hi, (g, b)


def test_confusion_judge_from_calibration(table):
    cal = JudgeCalibration([[40, 8, 2], [5, 30, 5], [1, 4, 25]], labels=[0, 1, 2])
    judge = ConfusionJudge(cal, seed=2)
    assert judge.matrix == pytest.approx(cal.matrix.to_numpy())
    assert same(ConfusionJudge(np.eye(3), [0, 1, 2]).sample_labels(table, 3), np.repeat(
        table.labels[:, None], 3, axis=1))
    # binary judge from rates matches random flips' rates
    b = ConfusionJudge.from_rates(0.9, 0.1)
    assert b.matrix == pytest.approx(np.array([[0.9, 0.1], [0.1, 0.9]]))
    # redrawn matrices: replicates have different realised matrices, centred on the estimate
    drawn = ConfusionJudge(cal, sample_matrix=True, seed=2).sample_labels(table, 300)
    rows = table.labels == 0
    share = (drawn[rows] == 0).mean()
    lo, hi = band(int(rows.sum()) * 300, cal.matrix.to_numpy()[0, 0])
    assert lo / (rows.sum() * 300) - 0.03 <= share <= hi / (rows.sum() * 300) + 0.03
    per_rep = (drawn[rows] == 0).mean(axis=0)
    fixed = (ConfusionJudge(cal, seed=2).sample_labels(table, 300)[rows] == 0).mean(axis=0)
    assert per_rep.std() > fixed.std()       # calibration uncertainty widens the spread


def test_confusion_judge_rejects_unknown_labels(table):
    judge = ConfusionJudge(np.array([[0.9, 0.1], [0.2, 0.8]]), [0, 1])
    with pytest.raises(InputError, match="has label 2, which is not one of"):
        judge.sample_labels(table, 2)


# ------------------------------------------------------------------------------------------------
# pool-depth reduction and removal (seed004b Sec. 2.5)


def test_pool_depth_reduction_brute_force(coll, table):
    keep = PoolDepthReduction(coll.runs, 7).in_pool(table)
    pooled = pd.concat([r[r["rank"] < 7][["qid", "docno"]] for r in coll.runs.values()]).drop_duplicates()
    want = pd.MultiIndex.from_frame(pooled).get_indexer(pd.MultiIndex.from_frame(table.frame[["qid", "docno"]])) >= 0
    assert same(keep, want)
    labels = PoolDepthReduction(coll.runs, 7).sample_labels(table, 2)
    assert np.isnan(labels[~keep]).all() and (labels[keep] == table.labels[keep, None]).all()


def test_rbp_residuals_grow_under_pool_depth_reduction(coll, aligned):
    depths = [50, 20, 10, 5, 2]
    L = np.column_stack([PoolDepthReduction(coll.runs, d).sample_labels(aligned.table, 1)[:, 0] for d in depths])
    base, resid = MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8)
    out = aligned.evaluate([base, resid], L)
    r, b = out[resid], out[base]
    assert (np.diff(r, axis=2) >= -1e-12).all()           # shallower pools: residuals never shrink
    assert (np.diff(b, axis=2) <= 1e-12).all()            # and RBP base never grows (thesis Fig. 4.6)
    assert (r[:, :, -1].mean() > r[:, :, 0].mean() + 0.05)


def test_random_removal(table):
    n = 300
    labels = RandomRemoval(0.2, seed=1).sample_labels(table, n)
    lo, hi = band(len(table) * n, 0.2)
    assert lo <= np.isnan(labels).sum() <= hi
    assert (labels[~np.isnan(labels)] == np.broadcast_to(table.labels[:, None], labels.shape)[~np.isnan(labels)]).all()
    exact = RandomRemoval(0.3, exact=True, seed=1).sample_labels(table, 5)
    removed = np.stack([np.bincount(table.topic_index[np.isnan(exact[:, i])], minlength=len(table.topics))
                        for i in range(5)], axis=1)
    want = np.floor(0.3 * np.diff(table.topic_start) + 0.5)
    assert (removed == want[:, None]).all()


def test_deeply_judged_runs(coll):
    deep = deeply_judged_runs(coll.runs, coll.qrels, depth=10)
    assert set(deep) >= set(coll.contributing)            # the pooled runs are judged to depth 10
    top = {n: r[r["rank"] < 10] for n, r in coll.runs.items()}
    keys = set(zip(coll.qrels["qid"], coll.qrels["docno"]))
    brute = [n for n, t in top.items() if all(k in keys for k in zip(t["qid"], t["docno"]))
             and t.groupby("qid").size().reindex(coll.topics["qid"]).fillna(0).min() >= 10]
    assert deep == brute


def test_chain_composes_models(coll, table):
    chain = PoolDepthReduction(coll.runs, 5) >> RandomFlips(0.6, 0.4)
    assert isinstance(chain, Chain) and len(chain.stages) == 2
    labels = chain.sample_labels(table, 20)
    keep = PoolDepthReduction(coll.runs, 5).in_pool(table)
    assert np.isnan(labels[~keep]).all() and not np.isnan(labels[keep]).any()
    rel = table.labels[keep] >= 1
    says = labels[keep] >= 1
    lo, hi = band(int(rel.sum()) * 20, 0.6)
    assert lo <= says[rel].sum() <= hi
    lo, hi = band(int((~rel).sum()) * 20, 0.4)
    assert lo <= says[~rel].sum() <= hi


# ------------------------------------------------------------------------------------------------
# replicate sets


def test_replicate_set_frames_files_and_rates(coll, tmp_path):
    reps = RandomFlips(0.9, 0.1, seed=5).replicates(coll.qrels, 3)
    assert isinstance(reps, ReplicateSet) and len(reps) == 3 and reps.seed == 5
    paths = reps.write_trec(tmp_path / "a")
    assert [p.name for p in paths] == ["replicate-0001.qrels", "replicate-0002.qrels", "replicate-0003.qrels"]
    back = pn.read_qrels(paths[1])
    assert back.equals(pn.read_qrels(reps.qrels(1)))
    first = paths[0].read_text().splitlines()[0].split()
    assert first[1] == "0" and re.fullmatch(r"\d+", first[3])
    rates = reps.realised_rates()
    L = reps.labels[:, 0]
    rel = reps.table.labels >= 1
    assert rates["tpr"].iloc[0] == pytest.approx((L[rel] >= 1).mean())
    assert rates["fpr"].iloc[0] == pytest.approx((L[~rel] >= 1).mean())
    by_topic = reps.realised_rates(by_topic=True)
    assert len(by_topic) == 3 * 30 and by_topic["n_judged"].sum() == 3 * len(coll.qrels)
    later = RandomFlips(0.9, 0.1, seed=5).replicates(coll.qrels, 2, start=9)
    assert later.file_names() == ["replicate-0010.qrels", "replicate-0011.qrels"]


# ------------------------------------------------------------------------------------------------
# bad input


def test_bad_input(coll, table):
    with pytest.raises(InputError, match="tpr must be a probability"):
        RandomFlips(tpr=1.2, fpr=0.1)
    with pytest.raises(InputError, match="fpr must be a probability"):
        RandomFlips(tpr=0.9, fpr=-0.1)
    with pytest.warns(PerturbationWarning, match="no better than chance"):
        RandomFlips(tpr=0.4, fpr=0.6)
    with pytest.warns(PerturbationWarning, match="no better than chance"):
        RandomFlips.from_discriminability(-1.0, 0.0)
    with pytest.raises(InputError, match="n \\(number of replicates\\) must be an integer >= 1"):
        RandomFlips(0.9, 0.1).sample_labels(table, 0)
    with pytest.raises(InputError, match="must be an integer >= 1"):
        RandomFlips(0.9, 0.1).replicates(coll.qrels, -3)
    with pytest.raises(InputError, match="seed must be a non-negative integer"):
        RandomFlips(0.9, 0.1, seed=-1)
    with pytest.raises(InputError, match="name must be one of 'smart_neutral', 'nist_primary', 'crowd_secondary', "
                                         "'extreme', got 'oracle'"):
        RandomFlips.from_judge("oracle")
    with pytest.raises(InputError, match="on_label must be >= rel"):
        RandomFlips(0.9, 0.1, on_label=0)
    with pytest.raises(InputError, match="fraction must be a probability"):
        RandomRemoval(1.5)
    with pytest.raises(InputError, match="depth must be an integer >= 1"):
        PoolDepthReduction(coll.runs, 0)
    with pytest.raises(InputError, match="sums to"):
        ConfusionJudge(np.array([[0.9, 0.2], [0.1, 0.9]]))
    with pytest.warns(PerturbationWarning, match="no better than chance"):
        ConfusionJudge(np.array([[0.5, 0.5], [0.6, 0.4]]))
    with pytest.raises(InputError, match="expected a JudgmentTable"):
        RandomFlips(0.9, 0.1).sample_labels(coll.qrels, 2)
    # runs and qrels with no overlap
    elsewhere = {n: r.assign(qid="x" + r["qid"]) for n, r in list(coll.runs.items())[:2]}
    with pytest.raises(InputError, match="no overlap"):
        RankBiasedFlips(0.9, 0.1, runs=elsewhere).sample_labels(table, 2)
    with pytest.raises(InputError, match="no overlap"):
        PoolDepthReduction(elsewhere, 10).sample_labels(table, 1)
    with pytest.raises(InputError, match="runs .*or metarank"):
        RankBiasedFlips(0.9, 0.1)
    with pytest.raises(InputError, match="needs tpr and fpr"):
        RankBiasedFlips(None, 0.1, runs=coll.runs)
    with pytest.raises(InputError, match="has not been fitted"):
        MetarankLogisticModel(coll.runs).sample_labels(table, 2)
    with pytest.raises(InputError, match="dual assessments"):
        FlipRateModel().fit(coll.qrels, coll.qrels.assign(docno="zz" + coll.qrels["docno"]))
    with pytest.raises(InputError, match="index must be in"):
        RandomFlips(0.9, 0.1).replicates(coll.qrels, 2).qrels(2)


def test_topics_without_relevant_documents_are_announced(coll):
    q = coll.qrels.copy()
    q.loc[q["qid"] == "3", "label"] = 0
    with pytest.warns(PerturbationWarning, match="no relevant document to sample"):
        s = sample_for_dual_assessment(q, 5, seed=0)
    assert not s[(s["qid"] == "3")]["original_relevant"].any()
    alt = q[["qid", "docno"]].assign(label=(q["label"] >= 1).astype(int))
    with pytest.warns(PerturbationWarning, match="no dual-assessed relevant document"):
        FlipRateModel().fit(q, alt)


# ------------------------------------------------------------------------------------------------
# command line


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory, coll):
    d = tmp_path_factory.mktemp("perturb")
    pn.write_trec_qrels(coll.qrels, d / "qrels.txt")
    for name in list(coll.runs)[:5]:
        pn.write_trec_run(coll.runs[name], d / "runs" / f"{name}.gz")
    return d


def test_cli_random_writes_byte_identical_replicates(cli_files, capsys, coll):
    d = cli_files
    args = ["perturb", d / "qrels.txt", "--model", "random", "--tpr", "0.93", "--fpr", "0.07", "--replicates", "4",
            "--seed", "3"]
    code, out, err = run_cli(args + ["--out", d / "a"], capsys)
    assert code == 0 and "wrote 4 replicate(s)" in out and "TPR" in out
    assert run_cli(args + ["--out", d / "b"], capsys)[0] == 0
    names = sorted(p.name for p in (d / "a").glob("*.qrels"))
    assert names == [f"replicate-000{i}.qrels" for i in range(1, 5)]
    for n in names + ["manifest.json"]:
        assert (d / "a" / n).read_bytes() == (d / "b" / n).read_bytes()
    reps = RandomFlips(0.93, 0.07, seed=3).replicates(coll.qrels, 4)
    assert pn.read_qrels(d / "a" / names[2]).equals(pn.read_qrels(reps.qrels(2)))
    run_cli(args[:-1] + ["4", "--out", d / "c"], capsys)
    assert (d / "c" / names[0]).read_bytes() != (d / "a" / names[0]).read_bytes()


def test_cli_binarise_writes_what_the_model_draws(cli_files, capsys, coll):
    # --binarise is RandomFlips(binarise=True) (Rashidi, Zobel and Moffat 2023 flipped binarised qrels)
    d = cli_files
    assert coll.qrels["label"].max() > 1          # graded, so binarising changes the files
    args = ["perturb", d / "qrels.txt", "--model", "random", "--tpr", "0.93", "--fpr", "0.07", "--replicates", "2",
            "--seed", "3"]
    assert run_cli(args + ["--binarise", "--out", d / "bin"], capsys)[0] == 0
    assert run_cli(args + ["--out", d / "graded"], capsys)[0] == 0
    binary = pn.read_qrels(d / "bin" / "replicate-0002.qrels")
    graded = pn.read_qrels(d / "graded" / "replicate-0002.qrels")
    assert set(binary["label"].unique()) <= {0, 1} and graded["label"].max() > 1
    reps = RandomFlips(0.93, 0.07, binarise=True, seed=3).replicates(coll.qrels, 2)
    assert binary.equals(pn.read_qrels(reps.qrels(1)))
    assert ((binary["label"] > 0) == (graded["label"] > 0)).all()   # same flips, only the grades differ


@pytest.mark.parametrize("extra", [
    ["--model", "random", "--judge", "smart_neutral"],
    ["--model", "random", "--disc", "3", "--bias", "0"],
    ["--model", "rank-biased", "--tpr", "0.9", "--fpr", "0.05", "--model-runs", "{runs}"],
    ["--model", "pool-depth", "--depth", "5", "--model-runs", "{runs}"],
    ["--model", "removal", "--fraction", "0.2", "--exact"],
    ["--model", "confusion", "--matrix", "{matrix}"],
    ["--model", "confusion", "--matrix", "{counts}", "--sample-matrix"],
    ["--model", "flip-rate", "--alt-qrels", "{alt}"],
    ["--model", "metarank", "--alt-qrels", "{alt}", "--model-runs", "{runs}", "--scope", "universal"],
])
def test_cli_models(cli_files, capsys, coll, extra):
    d = cli_files
    (d / "matrix.csv").write_text("true,0,1,2\n0,0.9,0.08,0.02\n1,0.2,0.6,0.2\n2,0.05,0.15,0.8\n")
    (d / "counts.tsv").write_text("true\t0\t1\t2\n0\t45\t4\t1\n1\t10\t30\t10\n2\t1\t3\t16\n")
    alt = coll.qrels.assign(label=np.where(np.arange(len(coll.qrels)) % 7 == 0, 1 - coll.qrels["label"].clip(0, 1),
                                           coll.qrels["label"]))
    pn.write_trec_qrels(alt, d / "alt.txt")
    fill = {"runs": d / "runs", "matrix": d / "matrix.csv", "counts": d / "counts.tsv", "alt": d / "alt.txt"}
    extra = [e.format(**fill) for e in extra]
    out_dir = d / ("out-" + "-".join(e for e in extra if not e.startswith(str(d))).replace(".", ""))
    code, out, err = run_cli(["perturb", d / "qrels.txt", *extra, "--replicates", "2", "--out", out_dir], capsys)
    assert code == 0, err
    assert (out_dir / "replicate-0002.qrels").exists()
    rep = pn.read_qrels(out_dir / "replicate-0001.qrels")
    assert 0 < len(rep) <= len(coll.qrels)


def test_cli_help_and_errors(cli_files, capsys):
    with pytest.raises(SystemExit):
        main(["perturb", "--help"])
    text = capsys.readouterr().out
    for name in ("random", "rank-biased", "flip-rate", "metarank", "confusion", "pool-depth", "removal", "examples:"):
        assert name in text
    d = cli_files
    code, _, err = run_cli(["perturb", d / "qrels.txt", "--model", "random", "--tpr", "1.5", "--fpr", "0.1",
                            "--out", d / "bad"], capsys)
    assert code == 2 and "tpr must be a probability" in err
    code, _, err = run_cli(["perturb", d / "qrels.txt", "--model", "random", "--tpr", "0.9", "--out", d / "bad"],
                           capsys)
    assert code == 2 and "needs --tpr and --fpr" in err
    code, _, err = run_cli(["perturb", d / "qrels.txt", "--model", "pool-depth", "--depth", "3", "--out", d / "bad"],
                           capsys)
    assert code == 2 and "needs --model-runs" in err
    code, _, err = run_cli(["perturb", d / "qrels.txt", "--model", "random", "--judge", "smart_neutral",
                            "--replicates", "0", "--out", d / "bad"], capsys)
    assert code == 2 and "--replicates must be an integer >= 1" in err


# ------------------------------------------------------------------------------------------------
# the docs page


@pytest.mark.slow   # a whole docs page, as tests/docs/test_docs.py runs every page; the unit tests above are quick
def test_docs_examples_run(tmp_path, monkeypatch):
    if not DOCS_PAGE.exists():
        pytest.skip("docs/perturbation.md is absent")
    # the page and its companion on rank-biased and fitted judges
    blocks = [(page, block) for page in (DOCS_PAGE, DOCS_PAGE.with_name("rank-biased-judges.md"))
              for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)]
    assert len(blocks) >= 8
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerturbationWarning)   # the pages show their improper-fit warning to readers
        for page, block in blocks:
            exec(compile(block, str(page), "exec"), namespace)


# ------------------------------------------------------------------------------------------------
# the one random scheme: replicate i alone equals replicate i of a larger draw


@pytest.mark.parametrize("make", [
    lambda c: RandomFlips(0.9, 0.1),
    lambda c: RankBiasedFlips(0.9, 0.1, runs=c.runs),
    lambda c: RandomRemoval(0.3),
    lambda c: RandomRemoval(0.3, exact=True),
    lambda c: ConfusionJudge(JudgeCalibration([[30, 3, 1], [4, 20, 6], [1, 3, 25]], labels=[0, 1, 2]),
                             sample_matrix=True),
    lambda c: PoolDepthReduction(c.runs, 5) >> RandomFlips(0.8, 0.2),
])
def test_replicate_drawn_alone_equals_replicate_of_a_larger_draw(coll, table, make):
    model = make(coll)
    many = model.sample_labels(table, 6, seed=4)
    for i in range(6):
        assert same(many[:, i:i + 1], model.sample_labels(table, 1, seed=4, start=i)), i
    assert same(model.replicates(coll.qrels, 1, seed=4, start=5).labels[:, 0], many[:, 5])
    # the transformer form (one replicate) is the same replicate
    one = model.transformer(seed=4, replicate=3).transform(coll.qrels)
    want = model.replicates(coll.qrels, 1, seed=4, start=3).qrels(0)
    assert one[["qid", "docno", "label"]].reset_index(drop=True).equals(want)


def test_replicates_depend_on_the_judged_rows_of_the_table(coll, table):
    # a table of fewer judged rows places the stream differently: an oracle must draw on the same table
    model = RandomFlips(0.6, 0.4, seed=2)
    sub = JudgmentTable.from_qrels(coll.qrels[coll.qrels["qid"] != "1"])
    full = model.sample_labels(table, 3)
    part = model.sample_labels(sub, 3)
    keep = table.frame["qid"].to_numpy() != "1"
    assert not same(full[keep], part)


# ------------------------------------------------------------------------------------------------
# a perturbation that cannot act says so


def test_false_positives_on_relevant_only_qrels_are_announced(coll):
    relevant_only = coll.qrels[coll.qrels["label"] >= 1]
    t = JudgmentTable.from_qrels(relevant_only)
    with pytest.warns(PerturbationWarning, match=r"no non-relevant judgment: fpr=0\.07 cannot act; relevant-only"):
        reps = RandomFlips(0.93, 0.07).replicates(t, 3)
    with pytest.warns(PerturbationWarning, match="realised fpr has no denominator"):
        rates = reps.realised_rates()
    assert rates["fpr"].isna().all()
    with pytest.warns(PerturbationWarning, match="no non-relevant judgment"):
        RankBiasedFlips(0.9, 0.1, runs=coll.runs).sample_labels(t, 2)
    with pytest.warns(PerturbationWarning, match="no non-relevant judgment"):
        RandomFlips(0.9, 0.1).transform(relevant_only)
    # nothing asked of the missing class: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerturbationWarning)
        RandomFlips(0.9, 0.0).sample_labels(t, 2)
        RandomFlips(0.9, 0.1).sample_labels(JudgmentTable.from_qrels(coll.qrels), 2)
    non_relevant_only = JudgmentTable.from_qrels(coll.qrels[coll.qrels["label"] < 1])
    with pytest.warns(PerturbationWarning, match=r"no relevant judgment: tpr=0\.9 cannot act"):
        RandomFlips(0.9, 0.1).sample_labels(non_relevant_only, 2)
    alt = coll.qrels.assign(label=np.where(np.arange(len(coll.qrels)) % 7 == 0, 1 - coll.qrels["label"].clip(0, 1),
                                           coll.qrels["label"]))
    fitted = FlipRateModel(scope="universal").fit(coll.qrels, alt)
    with pytest.warns(PerturbationWarning, match="no non-relevant judgment: its false positives"):
        fitted.sample_labels(t, 2)


# ------------------------------------------------------------------------------------------------
# vocabulary: n_replicates, progress, seed 0; the package's public names


def test_the_number_of_replicates_is_n_replicates(coll, table):
    model = RandomFlips(0.9, 0.1, seed=3)
    want = model.sample_labels(table, 4)
    assert same(model.sample_labels(table, n_replicates=4), want)
    reps = model.replicates(coll.qrels, n_replicates=4)
    assert same(reps.labels, want) and reps.n_replicates == 4
    with pytest.raises(TypeError, match="n_replicates"):
        model.sample_labels(table)
    with pytest.raises(TypeError):          # n= was its name before the first release
        model.sample_labels(table, n=4)


def test_seed_defaults_to_zero(coll, table):
    assert same(RandomFlips(0.9, 0.1).sample_labels(table, 2), RandomFlips(0.9, 0.1, seed=0).sample_labels(table, 2))
    assert same(weighted_subset(np.linspace(0, 1, 40), 10), weighted_subset(np.linspace(0, 1, 40), 10, seed=0))
    assert sample_for_dual_assessment(coll.qrels, 3).equals(sample_for_dual_assessment(coll.qrels, 3, seed=0))


def test_write_trec_progress_bar(coll, tmp_path):
    reps = RandomFlips(0.9, 0.1).replicates(coll.qrels, 2)
    a = reps.write_trec(tmp_path / "a", progress=True)
    b = reps.write_trec(tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_public_names():
    import pyterrier_noise.judges as judges
    assert len(set(judges.__all__)) == len(judges.__all__)
    for name in judges.__all__:
        assert getattr(pn.judges, name) is getattr(judges, name)
    assert issubclass(judges.PerturbationWarning, pn.NoiseWarning)


# ------------------------------------------------------------------------------------------------
# binarised flips (Rashidi, Zobel and Moffat 2023 binarise the qrels before flipping)

@pytest.mark.parametrize("make", ["random", "rank_biased"])
def test_binarise_makes_labels_binary_and_leaves_binary_measures_alone(make):
    c = make_collection(n_topics=6, n_systems=5, n_docs_per_topic=100, depth=40, pool_depth=15, seed=8)
    graded = c.qrels.assign(label=np.where(c.qrels["label"] >= 1,
                                           1 + (np.arange(len(c.qrels)) % 2), 0))    # grades 0, 1, 2
    table = JudgmentTable.from_qrels(graded)

    def model(binarise):
        if make == "random":
            return RandomFlips(0.8, 0.1, seed=4, binarise=binarise)
        return RankBiasedFlips(0.8, 0.1, runs=c.runs, seed=4, binarise=binarise)

    keep = model(False).sample_labels(table, 3)
    binary = model(True).sample_labels(table, 3)
    # brute force: the binarised replicate is the graded one thresholded at rel = 1 (same flips)
    want = np.where(keep >= 1, 1.0, 0.0)
    np.testing.assert_array_equal(binary, want)
    assert set(np.unique(keep)) == {0.0, 1.0, 2.0} and set(np.unique(binary)) == {0.0, 1.0}
    aligned = AlignedRuns.build(c.runs, table)
    ap, ndcg = MeasureSpec("AP"), MeasureSpec("nDCG")
    a = aligned.evaluate([ap, ndcg], keep)
    b = aligned.evaluate([ap, ndcg], binary)
    np.testing.assert_allclose(a[ap], b[ap], atol=1e-12)            # binary measure: the same
    assert np.abs(a[ndcg] - b[ndcg]).max() > 1e-3                    # graded gains: not the same
    with pytest.raises(InputError, match="binarise"):
        RandomFlips(0.8, 0.1, binarise="yes")


# --- perturb interrupted (issue 30): Ctrl-C is one line and exit 130, SIGKILL leaves only what the
# next run removes; a rerun succeeds without --force (nothing was written) ----------------------

def _perturb_argv(qrels, out, n):
    return ["perturb", qrels, "--model", "random", "--tpr", "0.9", "--fpr", "0.1", "--replicates", n, "--quiet", "--out", out]


def _staged(out: Path) -> int:
    """Replicate files in the stage of a running perturb (0 while there is none)."""
    from pyterrier_noise._output import TMP_PREFIX   # private: the stage's name is what this test looks for
    return sum(1 for s in out.glob(TMP_PREFIX + "*") for f in s.glob("replicate-*"))


@pytest.mark.slow
@pytest.mark.parametrize("sig, status_word", [("SIGINT", (130, "interrupted")), ("SIGTERM", (143, "terminated"))])
def test_perturb_ctrl_c_mid_write_keeps_nothing(tmp_path, sig, status_word):
    import signal

    from cli_helpers import group_alive, signal_when, start_program, write_collection
    qrels = write_collection(tmp_path, runs=0)["qrels"]
    out = tmp_path / "reps"
    proc = start_program(*_perturb_argv(qrels, out, 3000))
    status, err = signal_when(proc, lambda: _staged(out) >= 3, getattr(signal, sig))
    assert (status, err) == (status_word[0], f"pyterrier-noise: {status_word[1]}; nothing written\n")
    assert not group_alive(proc)
    assert not out.exists()          # no replicate, no manifest, no temporary folder: the new folder is gone
    assert main([str(a) for a in _perturb_argv(qrels, out, 4)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"] + [f"replicate-000{i}.qrels" for i in range(1, 5)]


@pytest.mark.slow
def test_perturb_sigkill_leftover_is_removed_by_the_next_run(tmp_path):
    import signal

    from cli_helpers import signal_when, start_program, temporaries, write_collection
    qrels = write_collection(tmp_path, runs=0)["qrels"]
    out = tmp_path / "reps"
    proc = start_program(*_perturb_argv(qrels, out, 3000))
    status, _ = signal_when(proc, lambda: _staged(out) >= 5, signal.SIGKILL)
    assert status == -signal.SIGKILL
    assert _staged(out) >= 5 and not list(out.glob("replicate-*"))   # partial files only in the stage
    assert main([str(a) for a in _perturb_argv(qrels, out, 2)]) == 0
    assert temporaries(out) == [] and len(list(out.glob("replicate-*"))) == 2


def test_perturb_replicates_beyond_memory_are_refused_with_the_size(tmp_path):
    from cli_helpers import run_cli
    (tmp_path / "q").write_text("".join(f"1 0 d{d} {d % 2}\n" for d in range(1, 11)))
    status, _, err = run_cli("perturb", tmp_path / "q", "--model", "random", "--tpr", "0.9", "--fpr", "0.1",
                             "--replicates", 10 ** 12, "--out", tmp_path / "o")
    # 10 judgments x 1e12 replicates x 16 bytes = 1.6e14 bytes = 145.5 TiB
    assert status == 2 and "--replicates 1,000,000,000,000 needs about 145.5 TiB" in err, err
    assert not (tmp_path / "o").exists()


def _model_option_cases():
    """From the perturb parser: (model, option argv) for every model option the model does not use."""
    # private: the cases are generated from perturb's own option tables, which these tests check
    from pyterrier_noise.cli import _parser
    from pyterrier_noise.cli._outputs import command_actions
    from pyterrier_noise.cli.perturb import _DEFAULTS, _USES
    cases = []
    for a in command_actions(_parser("perturb"), ["perturb"]):
        if a.dest not in _DEFAULTS:
            continue
        opt = next(o for o in a.option_strings if o.startswith("--"))
        if a.nargs == 0:
            argv = [opt]
        elif a.choices:
            argv = [opt, next(c for c in a.choices if c != a.default)]
        else:
            argv = [opt, "7" if a.type is int else "0.5" if a.type is float else "some-file"]
        cases += [(model, argv) for model, uses in _USES.items() if a.dest not in uses]
    return cases


def test_every_model_option_is_covered():
    from pyterrier_noise.cli.perturb import _DEFAULTS   # private: the option table under test
    covered = {argv[0] for _, argv in _model_option_cases()}
    assert len(covered) == len(_DEFAULTS)     # every option is unused by some model
    assert len(_model_option_cases()) > 60


@pytest.mark.parametrize("model, argv", _model_option_cases())
def test_perturb_refuses_an_option_its_model_ignores(tmp_path, model, argv):
    # issue 30: `--model removal --tpr 0.5 --fpr 0.5` ignored the rates, `confusion --binarise` the binarise
    from cli_helpers import run_cli
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d2 0\n")
    status, _, err = run_cli("perturb", tmp_path / "q", "--model", model, *argv, "--out", tmp_path / "o")
    assert status == 2 and f"--model {model} does not use {argv[0]} (used by " in err, err
    assert not (tmp_path / "o").exists()


def test_perturb_rank_biased_absolute_refuses_rates(tmp_path):
    from cli_helpers import run_cli
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d2 0\n")
    status, _, err = run_cli("perturb", tmp_path / "q", "--model", "rank-biased", "--weighting", "absolute",
                             "--tpr", "0.9", "--fpr", "0.1", "--model-runs", tmp_path / "q", "--out", tmp_path / "o")
    assert status == 2 and "--weighting absolute does not use --tpr" in err, err


def test_perturb_removal_with_its_own_options_runs(tmp_path):
    from cli_helpers import run_cli
    (tmp_path / "q").write_text("".join(f"1 0 d{d} {d % 2}\n" for d in range(10)))
    status, _, err = run_cli("perturb", tmp_path / "q", "--model", "removal", "--fraction", "0.3", "--exact",
                             "--replicates", "2", "--quiet", "--out", tmp_path / "o")
    assert status == 0, err
    assert [len(read_qrels_lines(p)) for p in sorted((tmp_path / "o").glob("replicate-*"))] == [7, 7]


def read_qrels_lines(path):
    return [line for line in Path(path).read_text().splitlines() if line.strip()]
