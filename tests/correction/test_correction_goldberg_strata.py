"""Goldberg et al.'s correction within rank strata (``CheapStudy(goldberg_rank_bins=...)``).

Where each expected number comes from:
* one stratum: today's single-matrix correction, written out here from its formulas (Goldberg et
  al. 2017, Eq 14/18 for the value, Eq 7 graded for the calibration variance, the judge-noise sum
  ``sum_d a_d^2 u_{c_d}`` with a loop over documents);
* unbiasedness: exact expectation over every cheap labelling of the evaluated documents
  (probability ``prod_d J_s(d)[g_d, c_d]``, brute force) on a tiny collection whose cheap judge has a
  known confusion per rank stratum, the calibration pairs holding exactly those confusions;
  the single-matrix bias is also computed in closed form, ``sum_d a_d (J_s(d) J_pool^-1 v)[g_d] - truth``;
* merging: a stratum without a grade (or with a singular matrix) merged into its neighbour gives
  exactly the estimate of the coarser binning;
* the seed-001 eBay numbers (Goldberg et al. 2017, Sec 6: 0.8047 and 0.8284) stay in
  tests/correction/test_correction_cheap.py (``test_goldberg_ebay_numbers_through_the_engine``), which runs
  with the default rank strata.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise.correction import CorrectionWarning
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.correction import CheapStudy, GoldSample, cheap_experiment, corrected_from_mass
from pyterrier_noise.correction.design import post_stratify
from pyterrier_noise.correction.estimates import (calibration_bootstrap_var, corrected_from_strata,
                                                  calibration_terms)
from pyterrier_noise.correction.estimators import goldberg_strata_fit, measure_gains
from pyterrier_noise.correction.judge_fit import rank_strata
from pyterrier_noise.engine import AlignedRuns, MeasureSpec

P3 = MeasureSpec("P", cutoff=3)
RBP = MeasureSpec("RBP", p=0.8)
GRADES = np.array([0.0, 1.0, 2.0])

#: the cheap judge's confusion P(cheap | gold) on documents some run ranks 1-2, and on the others
J_TOP = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]])
J_DEEP = np.array([[0.9, 0.1, 0.0], [0.3, 0.6, 0.1], [0.1, 0.3, 0.6]])


def uniform_sample(rows: np.ndarray, N: int) -> GoldSample:
    rows = np.sort(rows)
    n = len(rows)
    return GoldSample(rows, np.full(n, n / N), np.full(n, N ** 2 * (1 - n / N) / (n * (n - 1))),
                      np.zeros(n, dtype=np.int64), np.full(N, n / N), "uniform", N, np.zeros(N, dtype=np.int64))


def top_calibration():
    """(gold, cheap) of the 30 top-stratum calibration pairs: 10 per gold grade, cheap labels by J_TOP."""
    return [(g, c) for g in range(3) for c in range(3) for _ in range(int(round(10 * J_TOP[g, c])))]


def known_runs() -> dict:
    """Runs A and B rank the 5 evaluated documents of topic "e"; run C ranks the top-stratum calibration
    documents 1-2 in each of 15 topics."""
    run_c = [(f"t{k // 2:02d}", f"c{k}", 10.0 - k % 2) for k in range(len(top_calibration()))]
    return {"A": pd.DataFrame({"qid": "e", "docno": ["e0", "e1", "e2", "e3", "e4"], "score": [5., 4, 3, 2, 1]}),
            "B": pd.DataFrame({"qid": "e", "docno": ["e3", "e4", "e0", "e2", "e1"], "score": [5., 4, 3, 2, 1]}),
            "C": pd.DataFrame(run_c, columns=["qid", "docno", "score"])}


def known_collection(bins=(2,)):
    """Topic "e": 5 evaluated documents ranked by runs A and B (ranks 1-5).  Calibration pairs with
    exactly the confusions above: 10 per gold grade in the top stratum (15 topics "t*" of 2
    documents that run C ranks 1-2) and 10 per grade in the deep stratum (unretrieved documents of
    topic "d").  Returns the study, gold labels of the table, the gold sample (the calibration pairs)
    and the table's cheap labels with the evaluated documents' labels left to be set."""
    gold_e = {"e0": 2, "e1": 0, "e2": 1, "e3": 0, "e4": 2}
    rows = [("e", d, g, g) for d, g in gold_e.items()]
    top = top_calibration()
    deep = [(g, c) for g in range(3) for c in range(3) for _ in range(int(round(10 * J_DEEP[g, c])))]
    for k, (g, c) in enumerate(top):
        rows.append((f"t{k // 2:02d}", f"c{k}", g, c))
    for k, (g, c) in enumerate(deep):
        rows.append(("d", f"u{k}", g, c))
    table = pd.DataFrame(rows, columns=["qid", "docno", "gold", "cheap"])
    runs = known_runs()
    # runs A and B answer only topic "e", C only the "t*" topics: said, and intended
    with pytest.warns(CoercionWarning, match="have no ranking and score 0"):
        aligned = AlignedRuns.build(runs, table.rename(columns={"cheap": "label"})[["qid", "docno", "label"]])
    st = CheapStudy(aligned, [P3, RBP], goldberg_rank_bins=bins)
    t = aligned.table.frame[["qid", "docno"]].merge(table, on=["qid", "docno"], how="left")
    cal = np.flatnonzero(t["qid"].to_numpy() != "e")
    return st, t["gold"].to_numpy(dtype=float), t["cheap"].to_numpy(dtype=float), cal


def test_known_collection_strata_hold_the_known_confusions():
    st, gold, cheap, cal = known_collection()
    frame = st.aligned.table.frame
    ev = np.flatnonzero(frame["qid"].to_numpy() == "e")
    # A ranks e0, e1 first, B ranks e3, e4 first: those four are "1-2"; e2 is ranked 3rd by A, 4th by B
    assert dict(zip(frame["docno"].iloc[ev], st.best_rank[ev])) == {"e0": 1, "e1": 2, "e2": 3, "e3": 1, "e4": 2}
    s = st._rank_stratum[cal]
    fit = goldberg_strata_fit(s, gold[cal].astype(int), cheap[cal].astype(int), np.ones(len(cal)), 3, ["1-2", "3+"])
    group, counts = fit
    np.testing.assert_allclose(counts / counts.sum(axis=-1, keepdims=True), np.stack([J_TOP, J_DEEP]))


def test_one_stratum_equals_the_single_matrix_correction_exactly():
    """``goldberg_rank_bins=None``: the value, the topics-scope SE and the collection-scope SE are those of
    one confusion matrix over every pair (the formulas written out here)."""
    st, gold, cheap_base, cal = known_collection(bins=None)
    rng = np.random.default_rng(0)
    cheap = cheap_base.copy()
    ev = np.flatnonzero(np.isnan(cheap) | (st.aligned.table.frame["qid"].to_numpy() == "e"))
    cheap[ev] = rng.integers(0, 3, len(ev))
    smp = uniform_sample(cal, len(cheap))
    coll = st.estimate(cheap, gold[cal], smp, methods=("goldberg",), grades=GRADES)
    tops = st.estimate(cheap, gold[cal], smp, methods=("goldberg",), grades=GRADES, scope="topics")
    counts = np.zeros((3, 3))
    np.add.at(counts, (gold[cal].astype(int), cheap[cal].astype(int)), 1.0)
    for spec in st.specs:
        v = measure_gains(GRADES, spec)
        A = st._dense(spec)                                             # (runs, pairs): weights in each mean
        W = st._W[spec].toarray()                                       # (segments, pairs)
        onehot = (cheap.astype(int)[:, None] == np.arange(3)).astype(float)
        mass = (W @ onehot).reshape(st.n_runs, st.n_topics, 3)
        ref = corrected_from_mass(mass, counts, v)
        J = counts / counts.sum(axis=1, keepdims=True)
        w = np.linalg.solve(J, v)
        np.testing.assert_allclose(coll[spec].systems["goldberg"][0], A @ w[cheap.astype(int)], atol=1e-12)
        np.testing.assert_allclose(coll[spec].systems["goldberg"][0], ref.value, atol=1e-12)
        np.testing.assert_allclose(tops[spec].systems["goldberg"][1], ref.se, rtol=1e-12)
        u = np.linalg.solve(J, J @ w ** 2 - v ** 2)
        noise = np.zeros(st.n_runs)
        for d in range(len(cheap)):                                     # brute force over documents
            noise += A[:, d] ** 2 * u[int(cheap[d])]
        np.testing.assert_allclose(coll[spec].systems["goldberg"][1] ** 2,
                                   ref.calibration_var.sum(axis=-1) + noise, rtol=1e-10)
        # and corrected_from_strata with one stratum is corrected_from_mass
        one = corrected_from_strata(mass[:, None], counts[None], v)
        np.testing.assert_allclose(one.value, ref.value, atol=1e-15)
        np.testing.assert_allclose(one.se, ref.se, atol=1e-15)
        np.testing.assert_allclose(one.per_query, ref.per_query, atol=1e-15)


@pytest.mark.slow      # 3^5 labellings, two studies each (about 7 s)
def test_stratified_is_unbiased_and_the_single_matrix_is_not_by_exact_expectation():
    """Every cheap labelling of the 5 evaluated documents (3^5), with probability prod_d J_s(d)[g_d, c_d]:
    the stratified estimate's expectation is the gold value exactly; one matrix fitted over both strata
    (the pooled confusion, J_pool = (J_TOP + J_DEEP) / 2 here: 10 pairs per grade in each) is biased by
    ``sum_d a_d (J_s(d) J_pool^-1 v)[g_d] - truth``.  The stratified collection-scope noise term's
    expectation is the exact variance of the estimate over labellings."""
    st, gold, cheap_base, cal = known_collection(bins=(2,))
    flat = CheapStudy(st.aligned, st.specs, goldberg_rank_bins=None)
    frame = st.aligned.table.frame
    ev = np.flatnonzero(frame["qid"].to_numpy() == "e")
    g = gold[ev].astype(int)
    Js = np.where((st.best_rank[ev] <= 2)[:, None, None], J_TOP, J_DEEP)       # each document's confusion
    smp = uniform_sample(cal, len(gold))
    J_pool = (J_TOP + J_DEEP) / 2
    acc = {s: dict(e=0.0, e2=0.0, flat=0.0, noise=0.0) for s in st.specs}
    total = 0.0
    for c in itertools.product(range(3), repeat=len(ev)):
        prob = float(np.prod(Js[np.arange(len(ev)), g, np.array(c)]))
        total += prob
        cheap = cheap_base.copy()
        cheap[ev] = c
        with warnings.catch_warnings():
            warnings.simplefilter("error")                                    # no stratum is merged here
            # 10 pairs per grade and stratum do not identify the matrices (|det J| / sd(det J) < 2)
            warnings.filterwarnings("ignore", message=".*is not identified by the gold sample", category=CorrectionWarning)
            est = st.estimate(cheap, gold[cal], smp, methods=("goldberg",), grades=GRADES)
            est_flat = flat.estimate(cheap, gold[cal], smp, methods=("goldberg",), grades=GRADES)
        for s in st.specs:
            x = est[s].systems["goldberg"][0]
            a = acc[s]
            a["e"], a["e2"] = a["e"] + prob * x, a["e2"] + prob * x ** 2
            a["flat"] = a["flat"] + prob * est_flat[s].systems["goldberg"][0]
            counts = np.stack([J_TOP, J_DEEP]) * 10.0
            group = (st.best_rank > 2).astype(np.int64)
            ns, _ = st._judge_noise(s, counts, measure_gains(GRADES, s), cheap.astype(int), frame["qid"].to_numpy() == "e",
                                    group)
            a["noise"] = a["noise"] + prob * ns
    assert total == pytest.approx(1.0, abs=1e-12)
    ab = [st.aligned.run_names.index("A"), st.aligned.run_names.index("B")]   # C scores the fixed calibration pairs
    for s in st.specs:
        v = measure_gains(GRADES, s)
        A = st._dense(s)[np.ix_(ab, ev)]
        truth = A @ v[g]
        a = {k: x[ab] for k, x in acc[s].items()}
        np.testing.assert_allclose(a["e"], truth, atol=1e-12)                # stratified: unbiased
        bias = A @ np.einsum("dgl,l->dg", Js, np.linalg.solve(J_pool, v))[np.arange(len(ev)), g] - truth
        np.testing.assert_allclose(a["flat"] - truth, bias, atol=1e-12)      # single matrix: this bias
        assert np.abs(bias).max() * st.n_topics > 0.05      # ... material: over 0.05 on topic "e"'s own score
        np.testing.assert_allclose(a["noise"], a["e2"] - a["e"] ** 2, rtol=1e-9, atol=1e-14)


def test_a_stratum_without_a_grade_is_merged_into_its_neighbour_with_a_warning():
    """Bins [1, 2]: stratum "1-1" keeps its pairs, but the gold pairs of grade 2 ranked 2nd are all
    removed, so "2-2" has no grade-2 row: it is merged into "1-1", which gives exactly bins [2]."""
    st, gold, cheap_base, cal = known_collection(bins=(2,))
    rng = np.random.default_rng(4)
    cheap = cheap_base.copy()
    ev = np.flatnonzero(st.aligned.table.frame["qid"].to_numpy() == "e")
    cheap[ev] = rng.integers(0, 3, len(ev))
    keep = cal[~((st.best_rank[cal] == 2) & (gold[cal] == 2))]
    smp = uniform_sample(keep, len(gold))
    fine = CheapStudy(st.aligned, st.specs, goldberg_rank_bins=[1, 2])
    with pytest.warns(CorrectionWarning, match="is not identified by the gold sample"), \
            pytest.warns(CorrectionWarning, match=r"1 rank stratum/strata \(2-2\) had a gold grade without gold pairs"):
        merged = fine.estimate(cheap, gold[keep], smp, methods=("goldberg",), grades=GRADES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no merge here; 10, 10 and 5 pairs per grade do not identify the matrix
        warnings.filterwarnings("ignore", message=".*is not identified by the gold sample", category=CorrectionWarning)
        coarse = st.estimate(cheap, gold[keep], smp, methods=("goldberg",), grades=GRADES)
    for s in st.specs:
        for kind in ("systems", "pairs"):
            for k in range(2):
                np.testing.assert_allclose(getattr(merged[s], kind)["goldberg"][k], getattr(coarse[s], kind)["goldberg"][k],
                                           rtol=1e-12, atol=1e-15)


def test_a_singular_stratum_is_merged_and_a_hopeless_fit_is_nan():
    """A top stratum whose cheap judge says 0 to every pair has a singular confusion: merged into the deep
    one (one matrix for all, as bins=None).  When even the merged matrix misses a grade, NaN."""
    st, gold, cheap_base, cal = known_collection(bins=(2,))
    flat = CheapStudy(st.aligned, st.specs, goldberg_rank_bins=None)
    cheap = cheap_base.copy()
    ev = np.flatnonzero(st.aligned.table.frame["qid"].to_numpy() == "e")
    cheap[ev] = [0, 1, 2, 1, 0]
    top_cal = cal[st.best_rank[cal] <= 2]
    cheap[top_cal] = 0
    smp = uniform_sample(cal, len(gold))
    with pytest.warns(CorrectionWarning, match="is not identified by the gold sample"), \
            pytest.warns(CorrectionWarning, match=r"1 rank stratum/strata \(1-2\) .* singular confusion matrix"):
        merged = st.estimate(cheap, gold[cal], smp, methods=("goldberg",), grades=GRADES)
    with pytest.warns(CorrectionWarning, match="is not identified by the gold sample"):
        ref = flat.estimate(cheap, gold[cal], smp, methods=("goldberg",), grades=GRADES)
    for s in st.specs:
        np.testing.assert_allclose(merged[s].systems["goldberg"][0], ref[s].systems["goldberg"][0], atol=1e-12)
        np.testing.assert_allclose(merged[s].systems["goldberg"][1], ref[s].systems["goldberg"][1], rtol=1e-12)
    no2 = cal[gold[cal] != 2]
    with pytest.warns(CorrectionWarning, match=r"after merging 1 rank stratum.*undefined \(NaN\)"):
        est = st.estimate(cheap_base, gold[no2], uniform_sample(no2, len(gold)), methods=("goldberg",), grades=GRADES)
    assert np.isnan(est[P3].systems["goldberg"][0]).all()


def test_rank_strata_bins_and_refusals():
    b, names = rank_strata([1, 10, 11, 100, np.inf], [10, 100])
    assert names == ["1-10", "11-100", "101+"] and b.tolist() == [0, 0, 1, 1, 2]
    b, names = rank_strata([3, np.inf], [])
    assert names == ["1+"] and b.tolist() == [0, 0]
    from pyterrier_noise import InputError
    with pytest.raises(InputError, match="increasing"):
        rank_strata([1], [10, 5])


def test_cheap_experiment_passes_the_rank_bins():
    """cheap_experiment(goldberg_rank_bins=...) gives the study's stratified estimate; None the single matrix."""
    st, gold, cheap_base, cal = known_collection(bins=(2,))
    frame = st.aligned.table.frame
    cheap_labels = cheap_base.copy()
    ev = np.flatnonzero(frame["qid"].to_numpy() == "e")
    cheap_labels[ev] = [2, 1, 0, 1, 2]
    runs = known_runs()
    rows = np.sort(np.r_[cal, ev[:1]])          # not whole topics only: a (uniform) sample of pairs
    cheap = frame[["qid", "docno"]].assign(label=cheap_labels)
    goldq = frame[["qid", "docno"]].iloc[rows].assign(label=gold[rows])
    smp = post_stratify(cheap_labels, rows, st.importance())   # no design given: SRS, post-stratified
    flat = CheapStudy(st.aligned, st.specs, goldberg_rank_bins=None)
    with pytest.warns(CoercionWarning, match="have no ranking and score 0"), \
            pytest.warns(CorrectionWarning, match="is not identified by the gold sample"):
        res = cheap_experiment(runs, cheap, goldq, ["P@3"], methods=("goldberg",), goldberg_rank_bins=[2])
    with pytest.warns(CoercionWarning, match="have no ranking and score 0"):
        res0 = cheap_experiment(runs, cheap, goldq, ["P@3"], methods=("goldberg",), goldberg_rank_bins=None)
    for r, study in ((res, st), (res0, flat)):
        with pytest.warns(CorrectionWarning, match="is not identified by the gold sample") if study is st else contextlib.nullcontext():
            est = study.estimate(cheap_labels, gold[rows], smp, methods=("goldberg",), grades=GRADES)[P3]
        value = pd.Series(est.systems["goldberg"][0], index=st.aligned.run_names)
        np.testing.assert_allclose(r.systems.set_index("name")["P@3"][value.index], value, atol=1e-12)
    assert not np.allclose(res.systems["P@3"], res0.systems["P@3"])


def test_parametric_bootstrap_matches_the_delta_method_with_large_calibrations():
    """Goldberg et al.'s Alg 1 and their Eq 7 agree to first order: with 20,000 pairs per grade the
    bootstrap calibration variance (4,000 draws, seed 0) is within 5% of the delta-method terms
    (computed here by ``calibration_terms``, the graded Eq 7) for two strata."""
    counts = np.stack([J_TOP, J_DEEP]) * 20_000.0
    v = np.array([0.0, 1.0, 2.0])
    mass_mean = np.array([[[0.3, 0.4, 0.3], [0.5, 0.3, 0.2]], [[0.1, 0.2, 0.1], [0.2, 0.1, 0.0]]])   # (2 runs, 2 strata, L)
    boot = calibration_bootstrap_var(mass_mean, counts, v, n_replicates=4000, seed=0)
    J = counts / counts.sum(axis=-1, keepdims=True)
    w = np.linalg.solve(J, v[None, :, None].repeat(2, 0))[..., 0]                    # (S, L)
    mu = np.linalg.solve(np.swapaxes(J, -1, -2), mass_mean[..., None])[..., 0]          # (runs, S, L)
    delta = calibration_terms(J, counts.sum(axis=-1), mu[..., :, None] * w[:, None, :]).sum(axis=(-2, -1))
    np.testing.assert_allclose(boot, delta, rtol=0.05)


def test_cli_calibrate_goldberg_rank_bins(tmp_path):
    """``calibrate --goldberg-rank-bins`` gives cheap_experiment's values for those bins; a bad value is refused."""
    from cli_helpers import run_cli
    from pyterrier_noise.io import write_trec_qrels, write_trec_run
    st, gold, cheap_base, cal = known_collection(bins=(2,))
    frame = st.aligned.table.frame
    cheap_labels = cheap_base.copy()
    ev = np.flatnonzero(frame["qid"].to_numpy() == "e")
    cheap_labels[ev] = [2, 1, 0, 1, 2]
    rows = np.sort(np.r_[cal, ev[:1]])
    rdir = tmp_path / "runs"
    rdir.mkdir()
    for name, run in known_runs().items():
        write_trec_run(run.assign(rank=run.groupby("qid")["score"].rank(ascending=False, method="first")), rdir / name)
    cheap = frame[["qid", "docno"]].assign(label=cheap_labels.astype(int))
    goldq = frame[["qid", "docno"]].iloc[rows].assign(label=gold[rows].astype(int))
    write_trec_qrels(cheap, tmp_path / "cheap.txt")
    write_trec_qrels(goldq, tmp_path / "gold.txt")
    for arg, bins in (("2", [2]), ("none", None)):
        out = tmp_path / f"out-{arg}"
        with pytest.warns(CoercionWarning, match="have no ranking and score 0"), \
                pytest.warns(CorrectionWarning, match="is not identified by the gold sample") if bins else \
                contextlib.nullcontext():
            code, _, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt",
                                      rdir, "-m", "P@3", "--method", "goldberg", "--goldberg-rank-bins", arg,
                                      "--no-plots", "--out", out)
        assert code == 0, stderr
        got = pd.read_csv(out / "systems.tsv", sep="\t").set_index("name")["P@3"]
        with pytest.warns(CoercionWarning, match="have no ranking and score 0"), \
                pytest.warns(CorrectionWarning, match="is not identified by the gold sample") if bins else \
                contextlib.nullcontext():
            want = cheap_experiment(known_runs(), cheap, goldq, ["P@3"], methods=("goldberg",),
                                    goldberg_rank_bins=bins).systems.set_index("name")["P@3"]
        np.testing.assert_allclose(got[want.index], want, rtol=1e-5)
        assert json.loads((out / "experiment.json").read_text())["goldberg_rank_bins"] == bins
    code, _, stderr = run_cli("calibrate", "--cheap", tmp_path / "cheap.txt", "--gold", tmp_path / "gold.txt", rdir,
                              "-m", "P@3", "--goldberg-rank-bins", "10,5", "--out", tmp_path / "bad")
    assert code == 2 and "--goldberg-rank-bins '10,5'" in stderr
