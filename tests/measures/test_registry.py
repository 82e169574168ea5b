"""The measure registry: adding a measure is one kernel and one declaration (docs/engine.md,
"Adding a measure"), every kernel declares and validates its parameters, and the capability
table agrees with the kernels, the parser and the docs."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
from pyterrier_noise import InputError
from pyterrier_noise.engine import KERNELS, AlignedRuns, Kernel, MeasureSpec, register_kernel
from pyterrier_noise.engine.kernels.common import segment_sum
from pyterrier_noise.measures import CAPABILITIES, NoiseMeasure, parse_measure, to_spec
from pyterrier_noise.measures.base import Param
from pyterrier_noise.synthetic import default_collection

DOCS = Path(__file__).resolve().parents[2] / "docs"


class _HitsKernel(Kernel):
    """A throwaway family: relevant documents in the top k (NumRelRet cut at k)."""

    family = "Hits"
    uses = frozenset({"rel", "cutoff"})
    cutoff_required = True
    tie_modes = ()

    def compute(self, aligned, spec, labels):
        j = aligned.judged_positions()
        rel = (labels.binary(spec)[j["jidx"]] > 0) & (j["pos"][:, None] < spec.cutoff)
        return segment_sum(aligned, rel.astype(np.float64))


class _Hits(NoiseMeasure):
    """Relevant documents in the top k."""
    FAMILY, DEFAULT, CITATION = "Hits", 0.0, "a test"
    PARAMS = {"cutoff": Param(int, required=True, desc="rank cutoff"), "rel": Param(int, 1),
              "ties": Param(str, "trec_eval", ("trec_eval", "given"))}


@pytest.fixture
def hits_registered():
    register_kernel(_HitsKernel())
    yield _Hits()
    del KERNELS["Hits"]


def test_a_new_measure_is_one_kernel_and_one_declaration(hits_registered):
    c = default_collection()
    hits = hits_registered
    label = str(hits @ 10)
    got = pn.evaluate(c.runs, c.qrels, [hits @ 10, "P@10"], perquery=True)
    wide = got.pivot_table(index=["name", "qid"], columns="measure", values="value")
    # Hits@10 = 10 x P@10 on every (run, topic): the new kernel went through the whole engine
    assert np.allclose(wide[label], 10 * wide["P@10"], atol=1e-12)
    # ... and through ir_measures (the package's provider serves every NoiseMeasure)
    import ir_measures
    run = c.runs["run01"].rename(columns={"qid": "query_id", "docno": "doc_id"})
    qrels = c.qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    via = {m.query_id: m.value for m in ir_measures.iter_calc([hits @ 10], qrels, run)}
    mine = got[(got.name == "run01") & (got.measure == label)].set_index("qid").value
    assert all(via[q] == pytest.approx(mine[q], abs=1e-12) for q in via)
    # the kernel's declarations are enforced: a grouped tie policy it has no kernel for is refused
    with pytest.raises(InputError, match="Hits under ties='expected' is not computed"):
        pn.evaluate(c.runs, c.qrels, [hits @ 10], ties="expected")
    with pytest.raises(InputError, match="Hits takes no 'p' parameter"):
        MeasureSpec("Hits", p=0.5, cutoff=3).validate()
    with pytest.raises(InputError, match="Hits needs a cutoff"):
        MeasureSpec("Hits").validate()


def test_unknown_family_says_what_is_known():
    with pytest.raises(InputError, match=r"unknown measure family 'nDGC' \(did you mean nDCG"):
        MeasureSpec("nDGC").validate()


@pytest.mark.parametrize("family", sorted(KERNELS))
def test_every_kernel_refuses_what_it_does_not_read(family):
    kernel = KERNELS[family]
    for field, value in [("p", 0.5), ("T", 2.0), ("tail", "exact"), ("recall", 0.5), ("judged_only", True)]:
        spec = MeasureSpec(family, **{field: value}, cutoff=10 if kernel.cutoff_required else None)
        if field in kernel.uses:
            continue
        with pytest.raises(InputError, match=f"takes no '{field}' parameter"):
            spec.validate()


def test_capability_table_matches_the_kernels_and_parses():
    for cap in CAPABILITIES.values():
        assert cap.family in KERNELS, cap
        spec, ties = to_spec(cap.example)
        assert ties == "trec_eval"
        assert spec.family in (cap.family, "NumRelRet")
        assert str(parse_measure(cap.example)).replace(" ", "")  # an ir_measures object
        for te in cap.trec_eval:
            name = te + "10" if te.endswith("_") else te
            if te == "iprec_at_recall_":
                name = "iprec_at_recall_0.50"
            assert to_spec(name)[0].family in (cap.family, "NumRelRet"), name


def test_docs_measure_table_lists_every_capability():
    text = (DOCS / "measures.md").read_text()
    table = re.search(r"<!-- measure table -->(.*?)<!-- /measure table -->", text, re.S).group(1)
    listed = re.findall(r"^\| `([^`]+)` \|", table, re.M)
    assert listed == [c.example for c in CAPABILITIES.values()]


def test_counts_are_summed_over_topics_as_trec_eval_reports_them():
    c = default_collection()
    per = pn.evaluate(c.runs, c.qrels, ["NumRet", "NumRelRet", "P@10"], perquery=True)
    agg = pn.evaluate(c.runs, c.qrels, ["NumRet", "NumRelRet", "P@10"])
    for m, how in (("NumRet", "sum"), ("NumRelRet", "sum"), ("P@10", "mean")):
        want = per[per.measure == m].groupby("name", sort=False).value.agg(how)
        got = agg[agg.measure == m].set_index("name").value
        assert np.allclose(got[want.index], want, atol=1e-12)


def test_one_measure_given_as_a_string_is_not_split_into_characters():
    c = default_collection()
    a = pn.evaluate(c.runs, c.qrels, "AP")
    b = pn.evaluate(c.runs, c.qrels, ["AP"])
    pd.testing.assert_frame_equal(a, b)


def test_aligned_runs_evaluate_dispatches_by_family():
    # the engine itself names no family: a spec of each registered family evaluates
    c = default_collection()
    aligned = AlignedRuns.build(c.runs, c.qrels)
    for family, kernel in KERNELS.items():
        kw = {"cutoff": 10} if kernel.cutoff_required else {}
        kw.update({"p": 0.8} if "p" in kernel.uses else {}, **({"T": 2.0} if "T" in kernel.uses else {}))
        kw.update({"recall": 0.5} if family == "IPrec" else {})
        out = aligned.evaluate([MeasureSpec(family, **kw)])
        (v,) = out.values()
        assert v.shape == (aligned.n_runs, aligned.n_topics, 1) and np.isfinite(v).all(), family
