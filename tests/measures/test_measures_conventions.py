"""The measures' conventions: one measure vocabulary, stable topic sets,
relevant-only qrels, tie-aware standard measures, one RBPProjected convention, strict parsing."""
from __future__ import annotations

import itertools
import subprocess
import sys
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
import pyterrier_noise.measures  # noqa: F401  (registers the measures)
from pyterrier_noise import InputError
from pyterrier_noise.judges import PoolDepthReduction
from pyterrier_noise.measures import APTies, PTies, RRTies, nDCGTies, to_spec
from pyterrier_noise.synthetic import default_collection


@pytest.mark.parametrize("text, param", [("RBP(p=0.8,max_rell=2)", "max_rell"), ("nDCG(cutof=5)", "cutof"),
                                         ("RBP(p=0.8,foo=1)", "foo"), ("RBPResidual(p='x')", "p"),
                                         ("APTies(ties='best')", "ties"), ("INSTBase(T=3,tail=1)", "tail")])
def test_strict_parsing_names_measure_parameter_and_accepted_ones(text, param):
    name = text.split("(")[0]
    with pytest.raises(InputError, match=rf"measure {name}: .*{param}.*{name} accepts: "):
        to_spec(text)
    c = default_collection()
    with pytest.raises(InputError, match=param):
        pn.evaluate({"run01": c.runs["run01"]}, c.qrels, [text])


def test_strict_parsing_in_the_cli_exits_2(tmp_path):
    c = default_collection()
    q, r = tmp_path / "q.txt", tmp_path / "run01"
    c.qrels.assign(it=0)[["qid", "it", "docno", "label"]].to_csv(q, sep=" ", header=False, index=False)
    c.runs["run01"].assign(Q0="Q0", tag="t")[["qid", "Q0", "docno", "rank", "score", "tag"]].to_csv(
        r, sep=" ", header=False, index=False)
    out = subprocess.run([sys.executable, "-m", "pyterrier_noise", "eval", str(q), str(r), "-m",
                          "RBP(p=0.8,max_rell=2)"], capture_output=True, text=True)
    assert out.returncode == 2 and "max_rell" in out.stderr and "Traceback" not in out.stderr


def _reduced():
    c = default_collection()
    with pytest.warns(pn.NoiseWarning, match="27 topics|of 30 topics keep no judgment"):
        reduced = PoolDepthReduction({"run13": c.runs["run13"]}, 1)(c.qrels)
    assert reduced["qid"].nunique() == 27 and len(reduced.attrs["topics"]) == 30
    return c, reduced


def test_reduced_qrels_keep_their_topics_in_evaluate():
    c, reduced = _reduced()
    runs = {k: c.runs[k] for k in ("run01", "run12")}
    full = pn.evaluate(runs, c.qrels, ["RBP(p=0.8)"], perquery=True)
    with pytest.warns(pn.NoiseWarning, match="3 of 30 topics have no judgment.*means are over all 30"):
        red = pn.evaluate(runs, reduced, ["RBP(p=0.8)"], perquery=True)
    assert len(red) == len(full) == 60
    # every topic's residual grew (judgments were only removed) ...
    assert (red["residual"].to_numpy() >= full["residual"].to_numpy() - 1e-12).all()
    # ... so the mean residual cannot fall: it is over the same 30 topics
    with pytest.warns(pn.NoiseWarning):
        agg = pn.evaluate(runs, reduced, ["RBP(p=0.8)"]).set_index("name")
    agg_full = pn.evaluate(runs, c.qrels, ["RBP(p=0.8)"]).set_index("name")
    assert (agg["residual"] >= agg_full["residual"]).all()
    # topics without judgments: base 0, residual 1 (trec_eval -c)
    empty = sorted(set(reduced.attrs["topics"]) - set(reduced["qid"]))
    e = red[red["qid"].isin(empty)]
    assert (e["value"] == 0).all() and np.allclose(e["residual"], 1.0)
    # an explicit topics= gives the same
    with pytest.warns(pn.NoiseWarning):
        again = pn.evaluate(runs, reduced.copy().drop_attrs() if hasattr(reduced, "drop_attrs") else reduced,
                            ["RBP(p=0.8)"], topics=reduced.attrs["topics"]).set_index("name")
    assert np.allclose(again["residual"], agg["residual"])


def test_reduced_qrels_keep_their_topics_in_pt_experiment():
    import pyterrier as pt
    c, reduced = _reduced()
    names = ["run01", "run12"]
    systems = [pt.Transformer.from_df(c.runs[n].assign(query=""), uniform=True) for n in names]
    measures = [pn.RBPResidual(p=0.8), APTies(ties="trec_eval")]
    with pytest.warns(pn.NoiseWarning, match="3 of 30 topics have no judgment"):   # the reduced qrels' subject
        res = pt.Experiment(systems, c.topics, reduced, eval_metrics=measures, names=names).set_index("name")
    with pytest.warns(pn.NoiseWarning, match="3 of 30 topics have no judgment"):
        ev = pn.evaluate({n: c.runs[n] for n in names}, reduced, measures).pivot(
            index="name", columns="measure", values="value")
    for m in measures:   # the same 30 topics although pt.Experiment's merge drops attrs
        assert np.allclose(res[str(m)], ev.loc[names, str(m)], atol=1e-12)


def test_relevant_only_qrels_warn_once():
    c = default_collection()
    rel_only = c.qrels[c.qrels["label"] > 0]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = pn.evaluate({"run01": c.runs["run01"]}, rel_only, ["RBP(p=0.8)"], perquery=True)
    hits = [x for x in w if "every one of the" in str(x.message)]
    assert len(hits) == 1 and "base + residual = 1" in str(hits[0].message)
    assert np.allclose(res["value"] + res["residual"], 1.0)   # the invariant the warning states


def test_one_vocabulary_rbp_string_in_pt_experiment_is_the_base():
    import pyterrier as pt
    c = default_collection()
    names = ["run01", "run12"]
    systems = [pt.Transformer.from_df(c.runs[n].assign(query=""), uniform=True) for n in names]
    # pt.Experiment reads strings as trec_eval names (map, ndcg_cut_10): ir_measures syntax goes in as objects
    metrics = [ir_measures.parse_measure("RBP(p=0.8)"), ir_measures.parse_measure("RBPResidual(p=0.8)")]
    res = pt.Experiment(systems, c.topics, c.qrels, eval_metrics=metrics, names=names).set_index("name")
    # ir_measures' repr leaves out default parameters: its RBP(p=0.8) is labelled "RBP" (the
    # package's classes always show p / T); both columns come from the package's provider
    assert list(res.columns) == ["RBP", "RBPResidual(p=0.8)"]
    ev = pn.evaluate({n: c.runs[n] for n in names}, c.qrels, ["RBP(p=0.8)", "RBPBase(p=0.8)"])
    ev = ev.set_index(["name", "measure"])
    for n in names:
        assert res.loc[n, "RBP"] == pytest.approx(ev.loc[(n, "RBP(p=0.8)"), "value"], abs=1e-12)
        assert res.loc[n, "RBP"] == pytest.approx(ev.loc[(n, "RBPBase(p=0.8)"), "value"], abs=1e-12)
        assert res.loc[n, "RBPResidual(p=0.8)"] == pytest.approx(ev.loc[(n, "RBP(p=0.8)"), "residual"], abs=1e-12)


def _tiny():
    # one topic, six documents, scores with two tied groups; labels graded
    qrels = pd.DataFrame({"qid": "1", "docno": list("abcdef"), "label": [1, 0, 2, 0, 1, 0]})
    run = pd.DataFrame({"qid": "1", "docno": list("abcdef"), "score": [3.0, 2.0, 2.0, 2.0, 1.0, 1.0]})
    return qrels, run.assign(rank=np.arange(6))


def _brute(qrels, run, measure):
    """Every ordering of the tied groups, scored by pytrec_eval-compatible trec order via `given`."""
    groups = [list(g["docno"]) for _, g in run.groupby("score", sort=False)]
    groups.sort(key=lambda g: -run.set_index("docno").loc[g[0], "score"])
    vals = []
    for perm in itertools.product(*[list(itertools.permutations(g)) for g in groups]):
        order = [d for g in perm for d in g]
        r = pd.DataFrame({"qid": "1", "docno": order, "score": np.arange(len(order), 0, -1.0),
                          "rank": np.arange(len(order))})
        vals.append(pn.evaluate({"r": r}, qrels, [measure], ties="given")["value"].iloc[0])
    return np.mean(vals), np.max(vals), np.min(vals)


@pytest.mark.parametrize("measure, plain", [(APTies, "AP"), (nDCGTies @ 3, "nDCG@3"), (PTies @ 2, "P@2"),
                                            (RRTies, "RR")])
def test_tie_aware_standard_measures_in_pt_experiment(measure, plain):
    import pyterrier as pt
    qrels, run = _tiny()
    mean, best, worst = _brute(qrels, run, plain)   # brute force over the 3! * 2! orderings
    system = pt.Transformer.from_df(run.assign(query=""), uniform=True)
    topics = pd.DataFrame({"qid": ["1"], "query": ["q"]})
    for ties, want in (("expected", mean), ("optimistic", best), ("pessimistic", worst)):
        m = measure(ties=ties)
        got = pt.Experiment([system], topics, qrels, eval_metrics=[m], names=["sys"])[str(m)].iloc[0]
        ev = pn.evaluate({"sys": run}, qrels, [plain], ties=ties)["value"].iloc[0]
        assert got == pytest.approx(want, abs=1e-12) and ev == pytest.approx(want, abs=1e-12)


def test_inst_too_many_orderings_in_pt_experiment_says_what_to_do():
    # the provider does not walk pt.Experiment's stack for the system's name (issue 27: no
    # internals); the message says the run came through ir_measures and what to use instead
    import pyterrier as pt
    n = 40
    qrels = pd.DataFrame({"qid": "1", "docno": [f"d{i}" for i in range(n)], "label": [i % 2 for i in range(n)]})
    run = pd.DataFrame({"qid": "1", "docno": [f"d{i}" for i in range(n)], "score": 1.0, "rank": range(n)})
    system = pt.Transformer.from_df(run.assign(query=""), uniform=True)
    with pytest.raises(InputError, match="the run given to ir_measures .in pt.Experiment.*optimistic"):
        pt.Experiment([system], pd.DataFrame({"qid": ["1"], "query": ["q"]}), qrels,
                      eval_metrics=[pn.INSTBase(T=3, ties="expected")], names=["BM25 pipeline"])


def test_projected_is_the_midpoint_where_nothing_is_judged_in_every_api():
    c = default_collection()
    run = c.runs["run01"]
    q = c.qrels[c.qrels["qid"] != "3"]
    topics = sorted(c.qrels["qid"].unique())
    with pytest.warns(pn.NoiseWarning, match="1 of 30 topics have no judgment"):
        pq = pn.evaluate({"r": run}, q, ["RBPProjected(p=0.8)"], perquery=True, topics=topics).set_index("qid")
        agg = pn.evaluate({"r": run}, q, ["RBPProjected(p=0.8)"], topics=topics)["value"].iloc[0]
    assert pq.loc["3", "value"] == 0.5 and len(pq) == 30
    assert agg == pytest.approx(pq["value"].mean(), abs=1e-15)
    # the ir_measures path gives the same per-topic values (0.5 for the topic with nothing judged)
    irq = c.qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    irq = irq[irq["query_id"] != "3"]
    irr = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    per = {x.query_id: x.value for x in ir_measures.iter_calc([pn.RBPProjected(p=0.8)], irq, irr)}
    assert all(per[t] == pytest.approx(pq.loc[t, "value"], abs=1e-15) for t in per)


def test_ir_measures_leniency_is_ir_measures_own():
    c = default_collection()
    run = c.runs["run01"]
    for measures in ([pn.RBPBase(p=0.8)], [pn.RBPBase(p=0.8), ir_measures.AP]):
        with pytest.raises(ValueError, match="unknown qrels format"):
            ir_measures.calc_aggregate(measures, c.qrels, run.rename(columns={"qid": "query_id", "docno": "doc_id"}))
    irq = c.qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    out = ir_measures.calc_aggregate([pn.RBPBase(p=0.8), ir_measures.AP], irq,
                                     run.rename(columns={"qid": "query_id", "docno": "doc_id"}))
    assert set(out) == {pn.RBPBase(p=0.8), ir_measures.AP}
