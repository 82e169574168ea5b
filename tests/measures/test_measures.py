"""The package's measures inside ir_measures and pt.Experiment, and the evaluate() API."""
from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
import pyterrier_noise.measures  # noqa: F401  (registers the measures with ir_measures)
from pyterrier_noise import MeasureSpec
from collection_helpers import random_collection



def irm(qrels):
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return q.assign(relevance=q["relevance"].astype(int))


def test_parse_measure_and_repr():
    m = ir_measures.parse_measure("RBPResidual(p=0.5,max_rel=2)")
    assert m == pn.RBPResidual(p=0.5, max_rel=2)
    assert str(pn.RBPBase(p=0.95) @ 10) == "RBPBase(p=0.95)@10"
    assert str(pn.INSTResidual(T=3, max_rel=2)) == "INSTResidual(T=3,max_rel=2)"
    assert pn.measures.with_residuals(pn.RBPBase(p=0.8), ir_measures.AP) == [pn.RBPBase(p=0.8), pn.RBPResidual(p=0.8), ir_measures.AP]


def test_calc_aggregate_and_iter_calc_match_the_engine():
    runs, qrels = random_collection(11, n_runs=1, n_topics=5)
    run = runs["run0"]
    measures = [pn.RBPBase(p=0.8), pn.RBPResidual(p=0.8), pn.RBPUpper(p=0.8), pn.RBPProjected(p=0.8),
                pn.INSTBase(T=2), pn.INSTResidual(T=2), pn.INSQResidual(T=1, max_rel=2), ir_measures.AP]
    irm_run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    agg = ir_measures.calc_aggregate(measures, irm(qrels), irm_run)
    a = pn.AlignedRuns.build(runs, qrels)
    for m in measures[:-1]:
        s = m.spec()
        assert agg[m] == pytest.approx(np.nanmean(a.evaluate([s])[s][0, :, 0]), abs=1e-12)
    # an ir_measures measure in the same call still goes to its own provider
    assert agg[ir_measures.AP] == pytest.approx(a.evaluate([MeasureSpec("AP")])[MeasureSpec("AP")][0, :, 0].mean())
    perq = {(x.query_id, str(x.measure)): x.value for x in ir_measures.iter_calc(measures, irm(qrels), irm_run)}
    assert len(perq) == 5 * len(measures)


def test_rbp_base_equals_ir_measures_rbp_with_unjudged_as_nonrelevant():
    """seed002 Sec. 4: RBPBase must equal ir_measures' RBP(rel=1) (cwl_eval) on the judged part."""
    runs, qrels = random_collection(5, n_runs=1, n_topics=4)
    run = runs["run0"].sort_values(["qid", "score"], ascending=[True, False])
    run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    ours = ir_measures.calc_aggregate([pn.RBPBase(p=0.8)], irm(qrels), run)
    theirs = ir_measures.calc_aggregate([ir_measures.RBP(p=0.8, rel=1)], irm(qrels), run)
    assert list(ours.values())[0] == pytest.approx(list(theirs.values())[0], abs=1e-12)


def test_topics_without_results_get_the_measure_default():
    runs, qrels = random_collection(4, n_runs=1, n_topics=3)
    run = runs["run0"][runs["run0"]["qid"] != "3"]
    perq = {(x.query_id, str(x.measure)): x.value for x in
            ir_measures.iter_calc([pn.RBPBase(), pn.RBPResidual(), pn.RBPProjected()], irm(qrels),
                                  run.rename(columns={"qid": "query_id", "docno": "doc_id"}))}
    assert perq[("3", "RBPBase(p=0.8)")] == 0.0 and perq[("3", "RBPResidual(p=0.8)")] == 1.0
    assert perq[("3", "RBPProjected(p=0.8)")] == 0.5


def test_pt_experiment_with_residual_columns_baseline_and_correction():
    import pyterrier as pt
    runs, qrels = random_collection(21, n_runs=3, n_topics=8, depth=20)
    systems = [pt.Transformer.from_df(r.assign(query=""), uniform=True) for r in runs.values()]
    topics = pd.DataFrame({"qid": sorted(qrels["qid"].unique()), "query": "q"})
    measures = [pn.RBPBase(p=0.8), pn.RBPResidual(p=0.8), pn.INSTResidual(T=2), ir_measures.AP]
    res = pt.Experiment(systems, topics, qrels.astype({"label": int}), eval_metrics=measures,
                        names=list(runs), baseline=0, correction="holm")
    assert {"RBPBase(p=0.8)", "RBPResidual(p=0.8)", "INSTResidual(T=2)", "AP",
            "RBPResidual(p=0.8) p-value", "RBPResidual(p=0.8) p-value corrected"} <= set(res.columns)
    evaluated = pn.evaluate(runs, qrels, measures)
    for name, row in res.set_index("name").iterrows():
        got = evaluated[evaluated["name"] == name].set_index("measure")["value"]
        assert row["RBPBase(p=0.8)"] == pytest.approx(got["RBPBase(p=0.8)"], abs=1e-12)
        assert row["RBPResidual(p=0.8)"] == pytest.approx(got["RBPResidual(p=0.8)"], abs=1e-12)
        assert row["AP"] == pytest.approx(got["AP"], abs=1e-12)
    perq = pt.Experiment(systems, topics, qrels.astype({"label": int}), eval_metrics=measures[:2],
                         names=list(runs), perquery=True)
    assert set(perq["measure"]) == {"RBPBase(p=0.8)", "RBPResidual(p=0.8)"}
    assert len(perq) == 3 * 8 * 2


def test_evaluate_frame_layout_and_means_over_all_qrels_topics():
    runs, qrels = random_collection(9, n_runs=2, n_topics=4)
    runs["run1"] = runs["run1"][runs["run1"]["qid"] != "4"]
    with pytest.warns(pn.io.CoercionWarning, match="1 \\(run, topic\\) pair"):
        res = pn.evaluate(runs, qrels, ["RBP(p=0.8)", "AP", pn.RBPUpper(p=0.8)], perquery=True)
    assert list(res.columns) == ["name", "qid", "measure", "value", "residual"]
    row = res[(res["name"] == "run1") & (res["qid"] == "4") & (res["measure"] == "RBP(p=0.8)")].iloc[0]
    assert (row["value"], row["residual"]) == (0.0, 1.0)
    assert res[res["measure"] == "AP"]["residual"].isna().all()
    with pytest.warns(pn.io.CoercionWarning):
        means = pn.evaluate(runs, qrels, ["RBP(p=0.8)"])
    m = means[means["name"] == "run1"].iloc[0]
    assert m["qid"] == "all"
    perq = res[(res["name"] == "run1") & (res["measure"] == "RBP(p=0.8)")]
    assert m["value"] == pytest.approx(perq["value"].mean()) and m["residual"] == pytest.approx(perq["residual"].mean())
    upper = res[(res["name"] == "run0") & (res["measure"] == "RBPUpper(p=0.8)")]["value"].to_numpy()
    rbp = res[(res["name"] == "run0") & (res["measure"] == "RBP(p=0.8)")]
    np.testing.assert_allclose(upper, rbp["value"] + rbp["residual"])


def test_ties_option_applies_to_every_measure():
    runs, qrels = random_collection(13, n_runs=1, tie_decimals=0)
    a = pn.evaluate(runs, qrels, ["RBP(p=0.8)"], ties="expected", perquery=True)
    b = pn.AlignedRuns.build(runs, qrels, ties="expected")
    s = MeasureSpec("RBP", p=0.8)
    np.testing.assert_allclose(a["value"], b.evaluate([s])[s][0, :, 0])
    assert pn.measures.to_spec(pn.RBPBase(p=0.8, ties="expected"))[1] == "expected"


_ORDER_SCRIPT = r"""
import json, warnings
warnings.simplefilter("ignore")   # a child process printing JSON: its stderr is captured, not asserted
import ir_measures, pandas as pd
import pyterrier_noise as pn
import pyterrier_noise.measures
qrels = pd.DataFrame({"query_id": ["1", "1", "1", "2", "2"], "doc_id": ["a", "b", "c", "a", "d"],
                      "relevance": [1, 0, 2, 1, 0]})
run = pd.DataFrame({"query_id": ["1", "1", "1", "2", "2", "2"], "doc_id": ["a", "b", "x", "d", "a", "y"],
                    "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0]})
measures = [pn.INSQUpper(T=2), pn.RBPBase(p=0.8), pn.INSTResidual(T=1), pn.RBPProjected(p=0.5),
            pn.RBPResidual(p=0.8), pn.INSTBase(T=1), pn.RBPUpper(p=0.95, ties="given"), ir_measures.AP]
seen = []
for m in ir_measures.iter_calc(measures, qrels, run):
    if str(m.measure) not in seen:
        seen.append(str(m.measure))
# only package measures: with measures of several providers ir_measures' FallbackEvaluator keys
# the aggregate dict by its own set of the measures, which no provider can order
agg = [str(m) for m in ir_measures.calc_aggregate(measures[:-1], qrels, run)]
qr = qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
rn = run.rename(columns={"query_id": "qid", "doc_id": "docno"})
ev = list(pn.evaluate({"r": rn}, qr, measures[:-1])["measure"])
print(json.dumps([seen, agg, ev]))
"""


@pytest.mark.slow
def test_measure_order_does_not_depend_on_the_hash_seed():
    """ir_measures hands providers a set of measures: the order of iter_calc / calc_aggregate (and so
    of pt.Experiment's per-query columns) must not follow the hash order, which changes with
    PYTHONHASHSEED; evaluate() keeps the order asked."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    outs = []
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        res = subprocess.run([sys.executable, "-c", _ORDER_SCRIPT], env=env, capture_output=True, text=True,
                             check=True, timeout=300)
        outs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert outs[0] == outs[1] == outs[2]
    seen, agg, ev = outs[0]
    assert len(seen) == 8 and len(agg) == 7
    assert ev == [str(m) for m in [pn.INSQUpper(T=2), pn.RBPBase(p=0.8), pn.INSTResidual(T=1),
                                   pn.RBPProjected(p=0.5), pn.RBPResidual(p=0.8), pn.INSTBase(T=1),
                                   pn.RBPUpper(p=0.95, ties="given")]]


def test_provider_keeps_the_order_asked_and_sorts_a_set_canonically():
    from pyterrier_noise.measures import NoiseProvider
    qrels = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    asked = [pn.INSQUpper(T=2), pn.RBPBase(p=0.8), pn.RBPBase(p=0.5)]
    assert list(NoiseProvider().evaluator(asked, qrels).measures) == asked
    assert list(NoiseProvider().evaluator(set(asked), qrels).measures) == [pn.RBPBase(p=0.5), pn.RBPBase(p=0.8),
                                                                           pn.INSQUpper(T=2)]
