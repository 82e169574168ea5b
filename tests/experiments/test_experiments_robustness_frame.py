"""The robustness experiment's pt.Experiment interface: result.frame, correction_alpha, round,
highlight, measure labels and the topic-mismatch policy.

References: pt.Experiment (its own evaluation through ir_measures / pytrec_eval) on the unperturbed
qrels, scipy.stats.ttest_rel (pt.Experiment's test) and statsmodels' multipletests (its correction),
and evaluate() of this package for the labels and the means over the qrels' topics.
"""
from __future__ import annotations

import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pyterrier as pt
from scipy import stats
from statsmodels.stats.multitest import multipletests

from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.experiments import RobustnessResult, robustness_experiment
from pyterrier_noise.judges import RandomFlips
from pyterrier_noise.measures import RBPBase, evaluate
from pyterrier_noise.synthetic import default_collection

MEASURES = [RBPBase(p=0.8), ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P @ 10, ir_measures.RR]


@pytest.fixture(scope="module")
def small():
    c = default_collection()
    names = list(c.runs)[:6]
    return {n: c.runs[n] for n in names}, c.qrels, c.topics


@pytest.fixture(scope="module")
def both(small):
    """The same experiment through pt.Experiment and through robustness_experiment."""
    runs, qrels, topics = small
    names = list(runs)
    systems = [pt.Transformer.from_df(runs[n]) for n in names]
    exp = pt.Experiment(systems, topics, qrels, MEASURES, names=names, baseline=1, correction="holm")
    res = robustness_experiment(systems, topics, qrels, MEASURES, RandomFlips(0.9, 0.05), n_replicates=8,
                                seed=2, names=names, baseline=1, correction="holm", correction_alpha=0.05)
    return exp, res


def test_frame_has_pt_experiments_columns_and_values(both):
    exp, res = both
    frame = res.frame
    labels = [str(m) for m in MEASURES]
    # pt.Experiment's columns come first, laid out as it lays them out (name, the measures, then per
    # measure +, -, p-value, reject, p-value corrected) but in the order asked (pt.Experiment
    # orders the measures as ir_measures returns them: AP, RR, P@10, nDCG@10 here); the
    # robustness columns follow
    assert res.measures == labels == list(frame.columns[1:1 + len(labels)])
    groups = [f"{m} {k}" for m in labels for k in ("+", "-", "p-value", "reject", "p-value corrected")]
    assert list(frame.columns[:len(exp.columns)]) == ["name", *labels, *groups]
    assert set(frame.columns[:len(exp.columns)]) == set(exp.columns)
    assert list(frame["name"]) == list(exp["name"])
    for m in labels:
        np.testing.assert_allclose(frame[m], exp[m], rtol=0, atol=1e-12)   # pt.Experiment's means
        np.testing.assert_array_equal(frame[f"{m} +"], exp[f"{m} +"])
        np.testing.assert_array_equal(frame[f"{m} -"], exp[f"{m} -"])
        np.testing.assert_allclose(frame[f"{m} p-value"], exp[f"{m} p-value"], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(frame[f"{m} p-value corrected"], exp[f"{m} p-value corrected"],
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(frame[f"{m} reject"], exp[f"{m} reject"])
    extra = [c for c in frame.columns if c not in exp.columns]
    assert extra == [f"{m} {k}" for m in labels for k in ("sd", "rank", "rank held", "kept")]


def test_baseline_p_values_equal_scipy_and_statsmodels(both):
    _, res = both
    frame, b = res.frame, 1
    others = [s for s in range(len(res.names)) if s != b]
    for m in res.measures:
        X = res.true[m]                                    # per-topic values under the unperturbed qrels
        p = np.array([stats.ttest_rel(X[s], X[b]).pvalue for s in others])   # pt.Experiment's test
        np.testing.assert_allclose(frame[f"{m} p-value"].to_numpy()[others], p, rtol=1e-12, atol=1e-15)
        reject, corrected, _, _ = multipletests(p, alpha=0.05, method="holm")
        np.testing.assert_allclose(frame[f"{m} p-value corrected"].to_numpy()[others], corrected,
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(frame[f"{m} reject"].to_numpy()[others], reject)
        assert np.isnan(frame[f"{m} p-value"][b]) and not frame[f"{m} reject"][b]


def test_robustness_columns_are_the_richer_tables(both):
    _, res = both
    frame = res.frame
    for m in res.measures:
        sysf = res.systems[res.systems["measure"] == m].set_index("name").loc[res.names]
        np.testing.assert_array_equal(frame[f"{m} sd"], sysf["sd"])
        np.testing.assert_array_equal(frame[f"{m} rank"], sysf["true_rank"])
        # brute force: the share of replicates whose rank of the system equals its unperturbed rank
        held = [np.mean([res.observed_ranks[m][r, s] == sysf["true_rank"].iloc[s]
                         for r in range(res.params["n_replicates"])]) for s in range(len(res.names))]
        np.testing.assert_allclose(frame[f"{m} rank held"], held)
        base = res.baseline[res.baseline["measure"] == m].set_index("name")
        kept = frame.set_index("name")[f"{m} kept"]
        np.testing.assert_array_equal(kept.loc[base.index], base["kept"])
        assert np.isnan(kept.loc[res.names[1]])


def test_labels_equal_evaluate_and_strings_as_given(small):
    runs, qrels, topics = small
    given = ["RBP(p=0.8)", ir_measures.AP, "nDCG@10", "map"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoercionWarning)   # matching topics: nothing to announce
        res = robustness_experiment(runs, topics, qrels, given, RandomFlips(0.9, 0.05), n_replicates=3)
    assert res.measures == ["RBP(p=0.8)", "AP", "nDCG@10", "map"] == list(res.frame.columns[1:5])
    ev = evaluate(runs, qrels, given[:3])
    assert list(pd.unique(ev["measure"])) == res.measures[:3]
    for m in res.measures[:3]:
        np.testing.assert_allclose(res.frame[m], ev[ev["measure"] == m]["value"], atol=1e-12)
    np.testing.assert_array_equal(res.frame["map"], res.frame["AP"])   # pt.Experiment's trec_eval name


def test_correction_alpha(small):
    runs, qrels, topics = small
    kw = dict(n_replicates=4, seed=3, baseline=0, correction="bonferroni")
    new = robustness_experiment(runs, topics, qrels, ["AP"], RandomFlips(0.9, 0.05), correction_alpha=0.01,
                                perquery=True, **kw)   # perquery keeps the values from_arrays needs below
    assert new.params["alpha"] == 0.01
    with pytest.raises(TypeError, match="alpha"):     # the old name, renamed before any release
        robustness_experiment(runs, topics, qrels, ["AP"], RandomFlips(0.9, 0.05), alpha=0.01, **kw)
    with pytest.raises(InputError, match="correction_alpha"):
        robustness_experiment(runs, topics, qrels, ["AP"], RandomFlips(0.9, 0.05), correction_alpha=2, **kw)
    again = RobustnessResult.from_arrays(new.true, new.values, new.names, new.topics, baseline=0,
                                         correction="bonferroni", correction_alpha=0.01, seed=3)
    pd.testing.assert_frame_equal(again.pairs, new.pairs)


def test_round_and_highlight(small):
    runs, qrels, topics = small
    kw = dict(n_replicates=3, seed=1, baseline=0)
    plain = robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.9, 0.05), **kw)
    r3 = robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.9, 0.05), round=3,
                               highlight="bold", **kw)
    # pt.Experiment rounds each mean with Python's round()
    assert list(r3.frame["AP"]) == [round(float(v), 3) for v in plain.frame["AP"]]
    np.testing.assert_array_equal(r3.frame["AP p-value"], plain.frame["AP p-value"])   # p-values are not rounded
    per = robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.9, 0.05), round={"AP": 2}, **kw)
    assert list(per.frame["AP"]) == [round(float(v), 2) for v in plain.frame["AP"]]
    np.testing.assert_array_equal(per.frame["P@10"], plain.frame["P@10"])
    html = r3._repr_html_()
    assert "font-weight: bold" in html and "AP rank held" in html
    assert "background-color" in plain.style("color").to_html()
    assert "AP rank held" in repr(plain) and "run01" in repr(plain)
    for bad, match in [({"round": -1}, "round must be"), ({"round": {"nDCG": 2}}, "round names measure 'nDCG'"),
                       ({"highlight": "italic"}, "highlight must be")]:
        with pytest.raises(InputError, match=match):
            robustness_experiment(runs, topics, qrels, ["AP", "P@10"], RandomFlips(0.9, 0.05), **kw, **bad)


def test_topic_mismatch_is_announced_like_evaluate(small):
    runs, qrels, topics = small
    names = list(runs)[:3]
    extra = runs[names[0]].head(5).assign(qid="999")     # a topic the qrels do not have
    short = runs[names[1]][runs[names[1]]["qid"] != "3"]  # does not answer a qrels topic
    mixed = {names[0]: pd.concat([runs[names[0]], extra], ignore_index=True), names[1]: short,
             names[2]: runs[names[2]]}
    with pytest.warns(CoercionWarning) as record:
        res = robustness_experiment(mixed, None, qrels, ["AP"], RandomFlips(0.9, 0.05), n_replicates=3)
    text = " ".join(str(w.message) for w in record)
    assert "1 topic(s) in the runs are not in the qrels and are not evaluated (e.g. qid '999'" in text
    assert "1 (run, topic) pair(s) of the qrels have no ranking and score 0" in text
    # means over every qrels topic, as evaluate gives them (the unanswered topic scores 0)
    ev = evaluate(mixed, qrels, ["AP"], on_topic_mismatch="ignore")
    np.testing.assert_allclose(res.frame["AP"], ev["value"], atol=1e-12)
    assert len(res.topics) == qrels["qid"].nunique()
    with pytest.raises(InputError, match="not in the qrels"):
        robustness_experiment(mixed, None, qrels, ["AP"], RandomFlips(0.9, 0.05), n_replicates=3,
                              on_topic_mismatch="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoercionWarning)
        robustness_experiment(mixed, None, qrels, ["AP"], RandomFlips(0.9, 0.05), n_replicates=3,
                              on_topic_mismatch="ignore")
    # results frames with a topics frame: rows outside it are announced, not dropped silently
    sub = topics.iloc[:10]
    with pytest.warns(CoercionWarning, match=r"20 topic\(s\) answered by the systems are not in the topics frame "
                                             r"and are not evaluated .*3 system\(s\) affected"):
        res = robustness_experiment({n: runs[n] for n in names}, sub, qrels, ["AP"], RandomFlips(0.9, 0.05),
                                    n_replicates=2)
    assert res.topics == list(sub["qid"])
    # topics of the topics frame without qrels
    more = pd.concat([sub, pd.DataFrame({"qid": ["998"], "query": ["nothing"]})], ignore_index=True)
    sysd = {n: pt.Transformer.from_df(runs[n]) for n in names}
    with pytest.warns(CoercionWarning, match=r"1 of the 11 topic\(s\) of the topics frame have no qrels and are not "
                                             r"evaluated \(e.g. qid '998'\); means are over the 10 topic\(s\)"):
        robustness_experiment(sysd, more, qrels, ["AP"], RandomFlips(0.9, 0.05), n_replicates=2)
