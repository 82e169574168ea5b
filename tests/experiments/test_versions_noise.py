"""Judgment noise inside the significance test and the noise floor, recomputed by plain loops.

Each resample, comparison and system is recomputed one at a time with scipy's ttest_1samp and
statsmodels' multipletests; the unjudged and tie ranges with the package's ``evaluate`` on qrels
completed by hand and with its optimistic / pessimistic tie policies.
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
from pyterrier_noise.experiments.version_noise import resample_design
from pyterrier_noise.measures import evaluate


def _setup(seed: int = 2, tie_decimals=None, baseline=None, correction=None):
    runs, q = random_collection(seed, n_runs=4, n_topics=6, n_docs=30, depth=15, tie_decimals=tie_decimals)
    q["label"] = q["label"].astype(int)
    rng = np.random.default_rng(seed)
    b = q.copy()
    flip = rng.random(len(b)) < 0.4
    b.loc[flip, "label"] = rng.integers(0, 3, flip.sum())
    c = q.sample(frac=0.6, random_state=seed).reset_index(drop=True)
    versions = {"ref": q, "b": b, "c": c}
    return runs, versions, versions_experiment(runs, None, versions, ["AP", "P@5"], baseline=baseline,
                                               correction=correction)


@pytest.mark.parametrize("baseline, correction, draw", [("run0", None, "topic"), (["run0", "run3"], "holm", "topic"),
                                                        (None, "bonferroni", "whole")])
def test_judgment_noise_by_brute_force(baseline, correction, draw):
    _, _, res = _setup(baseline=baseline, correction=correction)
    B = 60
    out = res.judgment_noise(n_resamples=B, seed=4, draw=draw, confidence=0.9)
    T, V = len(res.topics), len(res.versions)
    rows, cols, fixed = resample_design(T, V, B, seed=4, draw=draw)
    S = len(res.names)
    if baseline is None:
        comps = [(i, j) for i in range(S) for j in range(i + 1, S)]
    else:
        bl = [baseline] if isinstance(baseline, str) else baseline
        comps = [(res.names.index(b), s) for b in bl for s in range(S) if s != res.names.index(b)]
    assert list(zip(out["baseline"], out["name"])) == [(res.names[b], res.names[s]) for b, s in comps]

    def conclusions(d_list):
        p = [stats.ttest_1samp(d, 0.0).pvalue for d in d_list]
        pc = p if correction is None else multipletests(p, method=correction)[1]
        return p, [np.sign(np.mean(d)) if q < 0.05 else 0.0 for d, q in zip(d_list, pc)]

    for m in res.measures:
        X = res.values[m]
        ref = 0
        d0 = [X[s, :, ref] - X[b, :, ref] for b, s in comps]
        p0, c0 = conclusions(d0)
        np.testing.assert_allclose(out[f"{m} p-value"], p0, rtol=1e-12)
        if correction:
            np.testing.assert_allclose(out[f"{m} p-value corrected"], multipletests(p0, method=correction)[1], rtol=1e-12)
        means = np.empty((len(comps), B))
        flips = np.zeros(len(comps))
        flips_fixed = np.zeros(len(comps))
        for r in range(B):
            dr = [np.array([X[s, rows[r, t], cols[r, t]] - X[b, rows[r, t], cols[r, t]] for t in range(T)])
                  for b, s in comps]
            means[:, r] = [d.mean() for d in dr]
            flips += np.array(conclusions(dr)[1]) != np.array(c0)
            df = [np.array([X[s, t, fixed[r, t]] - X[b, t, fixed[r, t]] for t in range(T)]) for b, s in comps]
            flips_fixed += np.array(conclusions(df)[1]) != np.array(c0)
        np.testing.assert_allclose(out[f"{m} P(>baseline)"], (means > 0).mean(1) + 0.5 * (means == 0).mean(1))
        np.testing.assert_allclose(out[f"{m} diff low"], np.quantile(means, 0.05, axis=1), atol=1e-12)
        np.testing.assert_allclose(out[f"{m} diff high"], np.quantile(means, 0.95, axis=1), atol=1e-12)
        np.testing.assert_allclose(out[f"{m} P(flip)"], flips / B)
        np.testing.assert_allclose(out[f"{m} P(flip | topics)"], flips_fixed / B)


def test_resample_design_draws_versions_per_topic_or_whole():
    rows, cols, fixed = resample_design(5, 3, 200, seed=0, draw="whole")
    assert (cols == cols[:, :1]).all() and (fixed == fixed[:, :1]).all()
    rows, cols, _ = resample_design(5, 3, 200, seed=0, draw="topic")
    assert rows.min() == 0 and rows.max() == 4 and set(np.unique(cols)) == {0, 1, 2}
    assert not (cols == cols[:, :1]).all()
    with pytest.raises(InputError, match="draw must be one of"):
        resample_design(5, 3, 10, draw="assessor")


def test_identical_versions_never_flip_with_topics_fixed():
    runs, versions, _ = _setup()
    res = versions_experiment(runs, None, {"a": versions["ref"], "a2": versions["ref"].copy()}, ["AP"], baseline="run0")
    out = res.judgment_noise(n_resamples=50)
    assert (out["AP P(flip | topics)"] == 0).all()


def test_noise_floor_by_brute_force():
    runs, versions, res = _setup(tie_decimals=1)
    nf = res.noise_floor(n_resamples=80, seed=3, confidence=0.9)
    T = len(res.topics)
    counts = np.random.default_rng(3).multinomial(T, np.full(T, 1.0 / T), size=80)
    q = versions["ref"]
    # every retrieved unjudged document of the reference completed by hand: non-relevant, top grade
    retrieved = pd.concat(runs.values())[["qid", "docno"]].drop_duplicates()
    missing = retrieved.merge(q, on=["qid", "docno"], how="left")
    missing = missing[missing["label"].isna()][["qid", "docno"]]
    completions = [pd.concat([q, missing.assign(label=g)], ignore_index=True) for g in (0, 2)]
    for m in res.measures:
        X = res.values[m]
        means = X.mean(axis=1)
        comp = [evaluate(runs, c, [m]).set_index("name")["value"] for c in completions]
        tie = [evaluate(runs, q, [m], ties=pol).set_index("name")["value"] for pol in ("pessimistic", "optimistic")]
        for i, a in enumerate(res.names):
            for j in range(i + 1, len(res.names)):
                b = res.names[j]
                row = nf[(nf["measure"] == m) & (nf["system_a"] == a) & (nf["system_b"] == b)].iloc[0]
                assert row["diff"] == pytest.approx(means[i, 0] - means[j, 0], abs=1e-12)
                boot = [(c @ X[i, :, 0] - c @ X[j, :, 0]) / T for c in counts]
                assert row["topics_low"] == pytest.approx(np.quantile(boot, 0.05), abs=1e-12)
                assert row["topics_high"] == pytest.approx(np.quantile(boot, 0.95), abs=1e-12)
                lo = {s: min(c[s] for c in comp) for s in res.names}
                hi = {s: max(c[s] for c in comp) for s in res.names}
                assert row["unjudged_low"] == pytest.approx(lo[a] - hi[b], abs=1e-12)
                assert row["unjudged_high"] == pytest.approx(hi[a] - lo[b], abs=1e-12)
                tlo = {s: min(c[s] for c in tie) for s in res.names}
                thi = {s: max(c[s] for c in tie) for s in res.names}
                assert row["ties_low"] == pytest.approx(tlo[a] - thi[b], abs=1e-12)
                assert row["ties_high"] == pytest.approx(thi[a] - tlo[b], abs=1e-12)
                dv = [means[i, v] - means[j, v] for v in range(len(res.versions))]
                assert row["judges_low"] == pytest.approx(min(dv)) and row["judges_high"] == pytest.approx(max(dv))
                for src in ("topics", "unjudged", "ties", "judges"):
                    below = (row[f"{src}_low"] <= 0) if row["diff"] > 0 else (row[f"{src}_high"] >= 0)
                    assert row[f"below_{src}"] == below
    assert (nf["ties_high"] > nf["ties_low"]).any()     # the ties of tie_decimals=1 do move scores


def test_judge_model_replicates_are_versions_drawn_like_real_ones():
    """judgment_noise(model=...) equals judgment_noise over an experiment whose versions are those
    replicates (the reference first, so its conclusions are the observed ones)."""
    from pyterrier_noise.judges import RandomFlips
    runs, versions, _ = _setup()
    q = versions["ref"]
    res = versions_experiment(runs, None, {"ref": q, "b": versions["b"]}, ["AP", "P@5"], baseline="run1")
    model = RandomFlips(0.8, 0.1)
    got = res.judgment_noise(n_resamples=40, seed=5, model=model, n_replicates=4)
    # the same replicates as qrels frames, one per version (the model draws over the table's rows;
    # RandomFlips leaves unjudged rows unjudged)
    L = model.sample_labels(res.table, 4, seed=5)
    frame = res.table.frame
    reps = {f"r{k}": frame.assign(label=L[:, k])[~np.isnan(L[:, k])].reset_index(drop=True) for k in range(4)}
    as_versions = versions_experiment(runs, None, {"ref": q, **reps}, ["AP", "P@5"], baseline="run1")
    # the versions axis of as_versions has the reference first; compare with its draws over versions 1..4
    from pyterrier_noise.experiments.version_noise import model_values
    drawn = model_values(res, model, 4, seed=5)
    for m in ("AP", "P@5"):
        np.testing.assert_allclose(drawn[m], as_versions.values[m][:, :, 1:], atol=1e-12)
    T = len(res.topics)
    rows, cols, fixed = resample_design(T, 4, 40, seed=5)
    X = drawn["AP"]
    b = res.names.index("run1")
    for c, s in enumerate([s for s in range(len(res.names)) if s != b]):
        means = [np.mean([X[s, rows[r, t], cols[r, t]] - X[b, rows[r, t], cols[r, t]] for t in range(T)])
                 for r in range(40)]
        assert got["AP P(>baseline)"].iloc[c] == pytest.approx(np.mean(np.array(means) > 0) + 0.5 * np.mean(np.array(means) == 0))
    with pytest.raises(InputError, match="sample_labels"):
        res.judgment_noise(model="flips")
