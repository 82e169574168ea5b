"""pt.Experiment over live PISA pipelines on Vaswani, with RBP residual columns and a baseline."""
from __future__ import annotations

import re

import pandas as pd
import pytest

import pyterrier_noise as pn


@pytest.fixture(scope="module")
def pisa_index(vaswani_pisa):
    return vaswani_pisa          # conftest: indexed once per session


def test_pt_experiment_bm25_vs_dph_with_residuals(vaswani, pisa_index):
    import pyterrier as pt
    text = (vaswani / "topics.trec").read_text()
    topics = pd.DataFrame(re.findall(r"<num>\s*(\S+)\s*</num>\s*<title>(.*?)</title>", text, flags=re.S),
                          columns=["qid", "query"])
    topics["query"] = topics["query"].str.strip().str.replace(r"[^\w ]", " ", regex=True)
    qrels = pn.read_qrels(vaswani / "qrels")
    assert len(topics) == 93 and len(qrels) == 2083
    bm25, dph = pisa_index.bm25(num_results=100), pisa_index.dph(num_results=100)
    measures = [pn.RBPBase(p=0.8), pn.RBPResidual(p=0.8), pn.RBPResidual(p=0.95), pt.measures.AP]
    res = pt.Experiment([bm25, dph], topics, qrels.astype({"label": int}), eval_metrics=measures,
                        names=["BM25", "DPH"], baseline=0, correction="holm")
    assert {"RBPBase(p=0.8)", "RBPResidual(p=0.8)", "RBPResidual(p=0.95) p-value corrected"} <= set(res.columns)
    row = res.set_index("name")
    # real retrieval: sensible effectiveness, residuals in [0, 1] and deeper users less certain
    assert 0.1 < row.loc["BM25", "RBPBase(p=0.8)"] < 0.9
    assert (row["RBPResidual(p=0.95)"] > row["RBPResidual(p=0.8)"]).all()
    # the same numbers from the package's own evaluate() on the pipelines' results
    runs = {"BM25": bm25(topics), "DPH": dph(topics)}
    ours = pn.evaluate(runs, qrels, measures[:3]).set_index(["name", "measure"])["value"]
    for name in ("BM25", "DPH"):
        assert row.loc[name, "RBPResidual(p=0.8)"] == pytest.approx(ours[(name, "RBPResidual(p=0.8)")], abs=1e-12)
