"""Issue 13's study, end to end on live PyTerrier pipelines: Vaswani indexed with pyterrier-pisa,
four retrieval models in ``pt.Experiment`` with the package's measures, a baseline and Holm's
correction, a depth-10 pool, a noisy judge and banded ties.

Three numbers are checked independently of the package: RBP by hand from the pipelines' result
frames and the qrels, AP against pytrec_eval itself, and Holm-corrected p-values against
scipy.stats.ttest_rel + statsmodels' multipletests.  Then one test per numbered item of issue 13
("the README's own study works on real pipelines, with no surprises").
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn

pytestmark = pytest.mark.slow      # live PISA pipelines, subprocesses: the integration suite
# Vaswani's qrels judge relevant documents only, and every evaluation on them says so: asserted in
# test_item5_relevant_only_qrels_are_mentioned_when_evaluating, not the other tests' subject; and
# pt.Experiment's advice on pipelines sharing a component (plan='tree') is about its speed only.
pytestmark = [pytestmark,
              pytest.mark.filterwarnings(r"ignore:every one of the \d+ judged labels is relevant:pyterrier_noise.NoiseWarning"),
              pytest.mark.filterwarnings("ignore:There are shared pipeline components:UserWarning")]
ROOT = Path(__file__).resolve().parents[2]
P = 0.8
NAMES = ["BM25", "DPH", "PL2", "QLD"]


# ---------------------------------------------------------------------------------------------
# the study: index once, four pipelines, their result frames


@pytest.fixture(scope="module")
def study(vaswani, vaswani_pisa):
    import pyterrier as pt
    index = vaswani_pisa                            # conftest: Vaswani indexed once per session
    topics = pn.selection.read_topics_file(vaswani / "topics.trec")
    qrels = pn.read_qrels(vaswani / "qrels")
    assert len(topics) == 93 and len(qrels) == 2083
    pipelines = {"BM25": index.bm25(num_results=100), "DPH": index.dph(num_results=100),
                 "PL2": index.pl2(num_results=100), "QLD": index.qld(num_results=100)}
    runs = {name: pipe(topics) for name, pipe in pipelines.items()}
    return {"pt": pt, "topics": topics, "qrels": qrels, "iqrels": qrels.astype({"label": int}),
            "pipelines": pipelines, "runs": runs, "dir": vaswani}


def rbp_by_hand(run: pd.DataFrame, qrels: pd.DataFrame, p: float = P) -> pd.DataFrame:
    """RBP base and residual per query, written from Moffat & Zobel (2008) without the package.

    Order: trec_eval's (score descending, then docno descending).  base = (1-p) sum_i p^i rel_i
    over judged relevant documents at 0-based position i; residual = (1-p) sum over unjudged
    positions p^i plus p^d, the weight beyond the ranking's depth d.
    """
    labels = {(q, d): lab for q, d, lab in qrels[["qid", "docno", "label"]].itertuples(index=False)}
    rows = []
    for qid, g in run.groupby("qid", sort=False):
        g = g.sort_values(["score", "docno"], ascending=[False, False], kind="stable")
        base = residual = 0.0
        for i, docno in enumerate(g["docno"]):
            w = (1 - p) * p ** i
            lab = labels.get((qid, docno))
            if lab is None:
                residual += w
            elif lab > 0:
                base += w
        rows.append({"qid": qid, "base": base, "residual": residual + p ** len(g)})
    return pd.DataFrame(rows).set_index("qid")


def pytrec_ap(run: pd.DataFrame, qrels: pd.DataFrame) -> pd.Series:
    """Per-query AP from pytrec_eval itself (trec_eval's ordering and tie-breaking)."""
    import pytrec_eval
    q: dict = {}
    for qid, docno, lab in qrels[["qid", "docno", "label"]].itertuples(index=False):
        q.setdefault(qid, {})[docno] = int(lab)
    r: dict = {}
    for qid, docno, score in run[["qid", "docno", "score"]].itertuples(index=False):
        r.setdefault(qid, {})[docno] = float(score)
    res = pytrec_eval.RelevanceEvaluator(q, {"map"}).evaluate(r)
    return pd.Series({qid: v["map"] for qid, v in res.items()}, name="AP")


def perquery(frame: pd.DataFrame, name: str, measure: str) -> pd.Series:
    sel = frame[(frame["name"] == name) & (frame["measure"] == measure)]
    return sel.set_index("qid")["value"].astype(float)


# ---------------------------------------------------------------------------------------------
# three numbers checked independently of the package


def test_rbp_by_hand_for_one_query(study):
    pt = study["pt"]
    bm25, qrels = study["runs"]["BM25"], study["qrels"]
    # a query with no tied scores in its top 100, so every tie policy agrees with the hand order
    tied = bm25.groupby("qid")["score"].apply(lambda s: s.duplicated().any())
    judged = bm25.merge(qrels, on=["qid", "docno"]).groupby("qid").size()
    qid = next(q for q in tied.index[~tied] if judged.get(q, 0) >= 3)
    one = bm25[bm25["qid"] == qid].sort_values("rank")
    rel = one["docno"].isin(qrels.loc[qrels["qid"] == qid, "docno"]).to_numpy().astype(float)
    i = np.arange(len(one))
    base = (1 - P) * np.sum(P ** i * rel)                       # (1-p) sum_i p^i rel_i
    residual = 1 - base            # Vaswani's qrels are relevant-only: every judged document is relevant
    res = pt.Experiment([study["pipelines"]["BM25"]], study["topics"][study["topics"]["qid"] == qid],
                        study["iqrels"], eval_metrics=[pn.RBPBase(p=P), pn.RBPResidual(p=P)],
                        names=["BM25"], perquery=True)
    assert perquery(res, "BM25", f"RBPBase(p={P})")[qid] == pytest.approx(base, abs=1e-12)
    assert perquery(res, "BM25", f"RBPResidual(p={P})")[qid] == pytest.approx(residual, abs=1e-12)
    assert 0 < base < 1


def test_rbp_by_hand_for_every_query_and_pipeline(study):
    pt = study["pt"]
    res = pt.Experiment(list(study["pipelines"].values()), study["topics"], study["iqrels"],
                        eval_metrics=[pn.RBPBase(p=P), pn.RBPResidual(p=P)], names=NAMES, perquery=True)
    for name in NAMES:
        hand = rbp_by_hand(study["runs"][name], study["qrels"])
        ours_b = perquery(res, name, f"RBPBase(p={P})").reindex(hand.index)
        ours_r = perquery(res, name, f"RBPResidual(p={P})").reindex(hand.index)
        np.testing.assert_allclose(ours_b.to_numpy(), hand["base"].to_numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours_r.to_numpy(), hand["residual"].to_numpy(), rtol=0, atol=1e-12)


def test_ap_equals_pytrec_eval(study):
    ours = pn.evaluate(study["runs"], study["qrels"], ["AP"], perquery=True)
    for name in NAMES:
        ref = pytrec_ap(study["runs"][name], study["qrels"])
        mine = perquery(ours, name, "AP").reindex(ref.index)
        assert len(ref) == 93
        np.testing.assert_allclose(mine.to_numpy(), ref.to_numpy(), rtol=0, atol=1e-12)


def test_holm_corrected_pvalues_equal_scipy_and_statsmodels(study):
    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests
    pt = study["pt"]
    table = pt.Experiment(list(study["pipelines"].values()), study["topics"], study["iqrels"],
                          eval_metrics=[pn.RBPBase(p=P), pt.measures.AP], names=NAMES,
                          baseline=0, correction="holm").set_index("name")
    # per-query values from outside the package: pytrec_eval for AP, the hand-written RBP
    per = {"AP": {n: pytrec_ap(study["runs"][n], study["qrels"]) for n in NAMES},
           f"RBPBase(p={P})": {n: rbp_by_hand(study["runs"][n], study["qrels"])["base"] for n in NAMES}}
    for measure, values in per.items():
        qids = values["BM25"].index
        raw = [ttest_rel(values["BM25"].to_numpy(), values[n].reindex(qids).to_numpy()).pvalue for n in NAMES[1:]]
        holm = multipletests(raw, method="holm")[1]
        np.testing.assert_allclose(table.loc[NAMES[1:], f"{measure} p-value"].to_numpy(float), raw, rtol=1e-9)
        np.testing.assert_allclose(table.loc[NAMES[1:], f"{measure} p-value corrected"].to_numpy(float), holm,
                                   rtol=1e-9)
    # the study's conclusion: BM25 beats each of the three on AP (Holm, alpha 0.05)
    assert table.loc[NAMES[1:], "AP reject"].all()


def test_the_study_runs_as_the_quickstart_shows(study):
    pt = study["pt"]
    banded = study["pipelines"]["BM25"] >> pn.ties.TieBanding(2)
    bounds = [pn.RBPBase(p=P, ties=t) for t in ("pessimistic", "expected", "optimistic")]
    tied = pt.Experiment([study["pipelines"]["BM25"], banded], study["topics"], study["iqrels"],
                         eval_metrics=bounds, names=["BM25", "banded"]).set_index("name")
    lo, mid, hi = (tied.loc["banded", str(m)] for m in bounds)
    assert lo < mid < hi                                    # banding creates ties, so the bounds open
    b = tied.loc["BM25", [str(m) for m in bounds]].to_numpy(float)
    assert np.ptp(b) < 1e-3      # unbanded BM25: few ties (float32 scores), bounds nearly closed
    with pytest.warns(pn.judges.PerturbationWarning, match="relevant-only"):
        robust = pn.experiments.robustness_experiment(study["runs"], study["topics"], study["qrels"],
                                                      ["RBP(p=0.8)", "AP"], pn.judges.RandomFlips(tpr=0.9, fpr=0.05),
                                                      n_replicates=10, seed=0, baseline="BM25", correction="holm")
    s = robust.summary.set_index("measure")
    assert (s["n_topics"] == 93).all() and (s["n_systems"] == 4).all()


# ---------------------------------------------------------------------------------------------
# issue 13, item by item


def test_item1_read_qrels_labels_work_in_pt_experiment_with_pytrec_measures(study):
    pt = study["pt"]
    qrels = pn.read_qrels(study["dir"] / "qrels")                  # as read, no cast
    assert pd.api.types.is_integer_dtype(qrels["label"])
    res = pt.Experiment([study["pipelines"]["BM25"]], study["topics"], qrels,
                        eval_metrics=[pn.RBPBase(p=P), pt.measures.AP], names=["BM25"])
    assert res["AP"].iloc[0] == pytest.approx(pytrec_ap(study["runs"]["BM25"], study["qrels"]).mean(), abs=1e-12)


def test_item2_capabilities_resolve_at_pt_noise():
    import pyterrier as pt
    # the subpackages of the layout, and a name inside each, are the same objects as the package's
    assert pt.noise.judges.RandomFlips is pn.RandomFlips is pn.judges.RandomFlips
    assert pt.noise.judges.PoolDepthReduction is pn.PoolDepthReduction
    assert pt.noise.ties.TieBanding is pn.TieBanding
    assert pt.noise.experiments.robustness_experiment is pn.robustness_experiment
    assert pt.noise.measures.RBPResidual is pn.RBPResidual
    assert pt.noise.selection.JudgmentSelector is pn.JudgmentSelector
    assert pt.noise.report.Report is pn.Report
    assert pt.noise.stats.paired_test is pn.stats.paired_test


COLUMNS_SCRIPT = r"""
import json, warnings
warnings.simplefilter("ignore")   # a child process printing JSON: its stderr is captured, not asserted
import pyterrier as pt
import pyterrier_noise as pn
from pyterrier_noise.synthetic import default_collection
c = default_collection()
systems = [pt.Transformer.from_df(c.runs[n].assign(query=""), uniform=True) for n in ("run07", "run12")]
metrics = [pn.RBPResidual(p=0.8), pn.INSTBase(T=3), pn.RBPBase(p=0.8), pn.RBPUpper(p=0.8),
           pn.INSQResidual(T=3), pn.RBPProjected(p=0.95)]
res = pt.Experiment(systems, c.topics, c.qrels, eval_metrics=metrics, names=["a", "b"])
ev = pn.evaluate({n: c.runs[n] for n in ("run07", "run12")}, c.qrels, metrics)
print(json.dumps({"experiment": list(res.columns), "evaluate": list(dict.fromkeys(ev["measure"])),
                  "metrics": [str(m) for m in metrics]}))
"""


@pytest.fixture(scope="module")
def column_orders():
    out = {}
    for seed in ("1", "2", "3"):
        proc = subprocess.run([sys.executable, "-c", COLUMNS_SCRIPT], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out[seed] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_item3_column_order_is_the_same_under_every_hash_seed(column_orders):
    orders = {json.dumps(o) for o in column_orders.values()}
    assert len(orders) == 1, column_orders


def test_item3_columns_follow_eval_metrics(column_orders):
    """evaluate and robustness_experiment keep the order asked; in pt.Experiment, ir_measures hands the
    providers a set (ir_measures.providers.FallbackProvider), so the package's measures come in one fixed
    order there (the order of pyterrier_noise.measures.ALL_MEASURES, then by name), the same every run."""
    import pyterrier_noise.measures as measures
    rank = {m.NAME: i for i, m in enumerate(measures.ALL_MEASURES)}
    for seed, o in column_orders.items():
        assert o["evaluate"] == o["metrics"], (seed, o["evaluate"])
        got = o["experiment"][1:]
        assert sorted(got) == sorted(o["metrics"])
        assert got == sorted(got, key=lambda s: (rank[s.split("(")[0]], s)), (seed, got)


def test_item4_reduced_qrels_keep_every_topic(study):
    pt = study["pt"]
    runs, qrels, topics = study["runs"], study["iqrels"], study["topics"]
    with pytest.warns(pn.judges.PerturbationWarning):
        shallow = pn.judges.PoolDepthReduction(runs, 10)(qrels)
    assert shallow["qid"].nunique() == 87                  # 6 of 93 topics keep no judgment at depth 10
    measures = [pn.RBPBase(p=P), pn.RBPResidual(p=P)]
    full = pt.Experiment([study["pipelines"]["BM25"]], topics, qrels, eval_metrics=measures, names=["BM25"],
                         perquery=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        red = pt.Experiment([study["pipelines"]["BM25"]], topics, shallow, eval_metrics=measures, names=["BM25"],
                            perquery=True)
    res_full, res_red = perquery(full, "BM25", f"RBPResidual(p={P})"), perquery(red, "BM25", f"RBPResidual(p={P})")
    assert len(res_red) == 93                              # every topic of the experiment, as trec_eval -c
    assert (res_red.reindex(res_full.index) >= res_full - 1e-12).all()   # every topic's residual grew ...
    assert res_red.mean() >= res_full.mean()                             # ... so the mean grows too
    # the removed topics: base 0 and the whole ranking unjudged (residual 1 - p^100 + p^100 = 1)
    gone = sorted(set(topics["qid"]) - set(shallow["qid"]))
    assert (perquery(red, "BM25", f"RBPBase(p={P})")[gone] == 0).all()
    np.testing.assert_allclose(res_red[gone].to_numpy(), 1.0, atol=1e-12)
    # evaluate keeps the same 93 topics, and AP of a topic with no judgment is 0 (trec_eval -c)
    with warnings.catch_warnings(record=True) as caught_ev:
        warnings.simplefilter("always")
        ev = pn.evaluate({"BM25": runs["BM25"]}, shallow, measures + ["AP"], topics=topics, perquery=True)
    assert perquery(ev, "BM25", "AP").index.nunique() == 93
    assert (perquery(ev, "BM25", "AP")[gone] == 0).all()
    np.testing.assert_allclose(perquery(ev, "BM25", f"RBPResidual(p={P})").reindex(res_red.index), res_red,
                               atol=1e-12)
    # the warning says how many topics and that means are over all of them
    for record in (caught, caught_ev):
        text = " ".join(str(w.message) for w in record)
        assert "6 of 93 topics" in text and "means are over all 93 topics" in text, text


def test_item5_relevant_only_qrels_are_mentioned_when_evaluating(study):
    qrels = study["qrels"]
    assert set(qrels["label"].unique()) == {1}               # Vaswani: relevant-only judgments
    with pytest.warns(pn.NoiseWarning, match="every one of the 2083 judged labels is relevant"):
        res = pn.evaluate(study["runs"], qrels, [pn.RBPBase(p=P), pn.RBPResidual(p=P)])
    wide = res.pivot(index="name", columns="measure", values="value")
    np.testing.assert_allclose(wide.sum(axis=1).to_numpy(), 1.0, atol=1e-12)   # base + residual == 1


def test_item5_false_positive_flips_on_relevant_only_qrels_say_they_cannot_act(study):
    with pytest.warns(pn.judges.PerturbationWarning, match="relevant-only"):
        pn.judges.RandomFlips(tpr=1.0, fpr=0.2)(study["qrels"])


def test_item6_zero_based_ranks_from_pt_io_write_results(tmp_path):
    import pyterrier as pt
    run = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "rank": [0, 1, 2]})
    path = tmp_path / "run.trec"
    pt.io.write_results(run, str(path), format="trec")          # PyTerrier writes its 0-based ranks
    assert path.read_text().splitlines()[0].split()[3] == "0"
    try:
        with pytest.warns(pn.NoiseWarning, match=r"ranks start at 0 in 1 ranking"):   # read as 0-based, counted
            back = pn.read_run(path)
    except pn.InputError as exc:                                  # or refused, naming the file and line
        assert "run.trec" in str(exc) and "line 1" in str(exc)
    else:
        assert back["rank"].min() >= 0
        assert back.sort_values("rank")["docno"].tolist() == ["a", "b", "c"]


def test_item7_robustness_experiment_speaks_pt_experiment(study):
    res = pn.experiments.robustness_experiment(
        study["runs"], study["topics"], study["qrels"], ["RBP(p=0.8)", "AP"],
        pn.judges.RandomFlips(tpr=0.9, fpr=0.0), n_replicates=5, seed=0,
        baseline=0, correction="holm", correction_alpha=0.01)
    frame = res.frame                                        # a frame shaped like pt.Experiment's
    assert isinstance(frame, pd.DataFrame) and "<table" in res._repr_html_()
    assert list(frame["name"]) == NAMES
    assert list(frame.columns[1:3]) == ["RBP(p=0.8)", "AP"]  # the measures in the order asked
    assert {"AP p-value", "AP p-value corrected"} <= set(frame.columns)
    assert hasattr(res, "summary")                          # the richer tables stay as attributes


def test_item7_one_measure_vocabulary(study, tmp_path, capsys):
    """The package's measure strings give the same labels in evaluate, robustness_experiment and the
    command line, and its measure objects the same labels in pt.Experiment (whose strings are trec_eval
    names, so objects are how ir_measures syntax reaches it)."""
    from pyterrier_noise.cli import main
    pt = study["pt"]
    names = ["RBPBase(p=0.8)", "RBPResidual(p=0.8)"]
    ev = pn.evaluate(study["runs"], study["qrels"], names)
    robust = pn.experiments.robustness_experiment(study["runs"], study["topics"], study["qrels"], names,
                                                  pn.judges.RandomFlips(tpr=0.9, fpr=0.0), n_replicates=3, seed=0)
    labels = list(dict.fromkeys(ev["measure"]))
    pn.write_trec_run(study["runs"]["BM25"], tmp_path / "BM25")
    capsys.readouterr()
    assert main(["eval", str(study["dir"] / "qrels"), str(tmp_path / "BM25"), "-m", names[0], "-m", names[1],
                 "--format", "tsv"]) == 0
    cli = [line.split("\t")[2] for line in capsys.readouterr().out.splitlines()[1:]]
    assert cli == labels
    table = pt.Experiment(list(study["pipelines"].values()), study["topics"], study["iqrels"],
                          eval_metrics=[pn.RBPBase(p=0.8), pn.RBPResidual(p=0.8)], names=NAMES).set_index("name")
    assert [c for c in table.columns if c in labels] == labels
    assert set(labels) <= set(robust.frame.columns)
    # "RBP(p=0.8)" means the base in every API
    base = perquery(ev, "BM25", labels[0])["all"]
    assert table.loc["BM25", labels[0]] == pytest.approx(base, abs=1e-12)
    plain = pn.evaluate(study["runs"], study["qrels"], ["RBP(p=0.8)"])
    assert perquery(plain, "BM25", "RBP(p=0.8)")["all"] == pytest.approx(base, abs=1e-12)
    assert base == pytest.approx(rbp_by_hand(study["runs"]["BM25"], study["qrels"])["base"].mean(), abs=1e-12)


TIE_POLICIES = ("pessimistic", "expected", "optimistic")


def test_item8_tie_aware_standard_measures_in_pt_experiment(study):
    pt = study["pt"]
    from pyterrier_noise.measures import APTies as AP, PTies as P, RRTies as RR, nDCGTies as nDCG
    banded = study["pipelines"]["BM25"] >> pn.ties.TieBanding(2)
    families = {"AP": lambda t: AP(ties=t), "nDCG@10": lambda t: nDCG(ties=t) @ 10,
                "P@10": lambda t: P(ties=t) @ 10, "RR": lambda t: RR(ties=t)}
    metrics = [make(t) for make in families.values() for t in (*TIE_POLICIES, "trec_eval")]
    table = pt.Experiment([study["pipelines"]["BM25"], banded], study["topics"], study["iqrels"],
                          eval_metrics=metrics, names=["BM25", "banded"]).set_index("name")
    for family, make in families.items():
        lo, mid, hi = (table.loc["banded", str(make(t))] for t in TIE_POLICIES)
        assert lo <= mid <= hi, family
    # ties="trec_eval" is trec_eval's own AP
    assert table.loc["BM25", str(AP(ties="trec_eval"))] == pytest.approx(
        pytrec_ap(study["runs"]["BM25"], study["qrels"]).mean(), abs=1e-12)


def test_item8_tie_policies_are_documented():
    measures_page = (ROOT / "docs" / "measures.md").read_text()
    assert "optimistic" in measures_page and "pessimistic" in measures_page
    synopsis = next(line for line in (ROOT / "README.md").read_text().splitlines() if "--ties" in line)
    for policy in ("trec_eval", "given", "expected", "optimistic", "pessimistic"):
        assert policy in synopsis, policy


def test_item8_too_many_orderings_says_where_and_what_to_do(study):
    # the provider no longer reads pt.Experiment's stack for the system's name (no internals)
    pt = study["pt"]
    banded = study["pipelines"]["BM25"] >> pn.ties.TieBanding(2)
    with pytest.raises(pn.InputError, match="the run given to ir_measures .in pt.Experiment.*optimistic"):
        pt.Experiment([banded], study["topics"], study["iqrels"], names=["BM25 banded"],
                      eval_metrics=[pn.INSTBase(T=3, ties="expected")])


def test_item9_rbp_projected_has_one_convention():
    import ir_measures
    import pyterrier as pt
    # topic 1: a relevant document on top; topic 2: judged, but nothing the run retrieved is judged
    run = pd.DataFrame({"qid": ["1", "1", "1", "2", "2"], "docno": ["a", "b", "c", "y", "z"],
                        "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["1", "2"], "docno": ["a", "x"], "label": [1, 0]})
    m = pn.RBPProjected(p=P)
    ours = pn.evaluate({"r": run}, qrels, [m])["value"].iloc[0]
    irm = ir_measures.calc_aggregate([m], qrels.rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                "label": "relevance"}),
                                     run.rename(columns={"qid": "query_id", "docno": "doc_id"}))[m]
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["", ""]})
    exp = pt.Experiment([pt.Transformer.from_df(run.assign(query=""))], topics, qrels, eval_metrics=[m],
                        names=["r"])[str(m)].iloc[0]
    assert ours == pytest.approx(irm, abs=1e-12) and ours == pytest.approx(exp, abs=1e-12)


def test_item10_ir_measures_treats_every_measure_alike(study):
    """Inside ir_measures the package's measures accept exactly what ir_measures accepts: PyTerrier's
    column names are refused for both with ir_measures' own error, and pt.model.to_ir_measures frames
    work for both (pt.Experiment converts for you)."""
    import ir_measures
    pt = study["pt"]
    qrels = pn.read_qrels(study["dir"] / "qrels")
    run = study["runs"]["BM25"][["qid", "docno", "score"]]
    for measures in ([pn.RBPBase(p=P)], [ir_measures.AP], [pn.RBPBase(p=P), ir_measures.AP]):
        with pytest.raises(ValueError, match="unknown qrels format"):
            ir_measures.calc_aggregate(measures, qrels, run)
    res = ir_measures.calc_aggregate([pn.RBPBase(p=P), ir_measures.AP], pt.model.to_ir_measures(qrels),
                                     pt.model.to_ir_measures(run))
    assert res[ir_measures.AP] == pytest.approx(pytrec_ap(study["runs"]["BM25"], study["qrels"]).mean(), abs=1e-12)
    assert res[pn.RBPBase(p=P)] == pytest.approx(rbp_by_hand(study["runs"]["BM25"], study["qrels"])["base"].mean(),
                                                 abs=1e-12)


def _register_local_irds(qrels_path: Path) -> str:
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util import LocalDownload
    name = "pyterrier-noise-test/vaswani-local"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, Dataset(TrecQrels(LocalDownload(qrels_path), {1: "relevant"})))
    return name


def test_item11_read_qrels_from_a_local_ir_datasets_dataset(vaswani):
    import ir_datasets
    name = _register_local_irds(vaswani / "qrels")
    expected = pn.read_qrels(vaswani / "qrels")
    for source in (f"irds:{name}", ir_datasets.load(name)):
        got = pn.read_qrels(source)
        pd.testing.assert_frame_equal(got[["qid", "docno", "label"]].reset_index(drop=True),
                                      expected[["qid", "docno", "label"]].reset_index(drop=True), check_dtype=False)


def test_item11_unavailable_dataset_says_what_it_needs(tmp_path):
    missing = tmp_path / "nowhere" / "qrels.txt"
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util import LocalDownload
    name = "pyterrier-noise-test/missing-local"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, Dataset(TrecQrels(LocalDownload(missing), {1: "relevant"})))
    with pytest.raises(pn.InputError, match="qrels.txt"):
        pn.read_qrels(f"irds:{name}")
