"""Agreement with the independent reference tools on TREC-COVID round 1 (all 143 runs).

* RBP base and residual equal rbp-eval (its library API) at p = 0.5, 0.8, 0.95, binary and graded,
  with ties='expected' (rbp_eval's treatment of tied scores), to 1e-9;
* INST (T = 1, 2, 3) and INSQ with residuals equal cwl_eval (run in the runs' given order) to 1e-9;
* AP, nDCG, nDCG@10, P@10 and RR equal pytrec_eval through ir_measures, to 1e-9.
"""
from __future__ import annotations

import gzip
import logging

import numpy as np
import pytest

from pyterrier_noise import AlignedRuns, MeasureSpec
from pyterrier_noise.io import CoercionWarning

TOL = 1e-9


@pytest.fixture(scope="module")
def data(covid, covid_collection):
    qrels, runs = covid_collection
    return covid, qrels, runs


PS = [0.5, 0.8, 0.95]


@pytest.fixture(scope="module")
def rbp_eval_results(data):
    """rbp-eval's results for every run file, binary and graded: each file is parsed once by
    rbp_eval.load_run and evaluated against both readings of the qrels (evaluate does not change
    the run)."""
    from rbp_eval import Ordering, RelType, evaluate, load_qrels, load_run
    covid, _, runs = data
    ref_qrels = {}
    for graded in (False, True):
        with open(covid / "qrels-rnd1.txt") as fh:
            q = ref_qrels[graded] = load_qrels(fh)
        q.set_reltype(RelType.FRACT, 0.5) if graded else q.set_reltype(RelType.BINARY, 1.0)
    out: dict = {False: {}, True: {}}
    for name in runs:
        with gzip.open(covid / "runs" / f"{name}.gz", "rt") as fh:
            run = load_run(fh)
        for graded, q in ref_qrels.items():
            out[graded][name] = evaluate(q, run, Ordering.SCORE, PS, [float("inf")])
    return out


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_rbp_equals_rbp_eval_all_runs(data, rbp_eval_results, graded):
    covid, qrels, runs = data
    ps = PS
    aligned = AlignedRuns.build(runs, qrels, ties="expected")
    kw = dict(max_rel=2.0) if graded else {}
    base = [MeasureSpec("RBP", p=p, **kw) for p in ps]
    resid = [MeasureSpec("RBP", "residual", p=p, **kw) for p in ps]
    ours = aligned.evaluate(base + resid)
    compared = 0
    for ri, name in enumerate(aligned.run_names):
        ref = rbp_eval_results[graded][name]
        for qres in ref.qid_res:
            t = aligned.topics.index(qres.qid)
            for k in range(len(ps)):
                pr = qres.depth_res[0].persist_res[k]
                assert ours[base[k]][ri, t, 0] == pytest.approx(pr.sum, abs=TOL), (name, qres.qid, ps[k])
                assert ours[resid[k]][ri, t, 0] == pytest.approx(pr.err, abs=TOL), (name, qres.qid, ps[k])
                compared += 1
    assert compared >= 143 * 29 * 3


def _c_vector_once(metric_class):
    """cwl_eval's metric, its C vector kept for the ranking measured: ``measure`` asks for it four times
    (the W and the L vectors, worst and best case), each time the same pure function of the ranking and
    the case, so the second call of each case returns the first one's array (cwl_eval's own numbers).
    ``measure`` also formats the first entries of the C, L and W vectors into debug messages before the
    (disabled) logger drops them, six array prints a call; they print each entry as ``.`` here, a third
    of numpy's cost (the values are untouched: only the dropped messages' text changes)."""
    class Metric(metric_class):
        def measure(self, ranking):
            with np.printoptions(formatter={"all": lambda x: "."}):
                return super().measure(ranking)

        def c_vector(self, ranking, worse_case=True):
            kept = self.__dict__.setdefault("kept_c", {})
            if (id(ranking), worse_case) not in kept:
                kept[id(ranking), worse_case] = (ranking, super().c_vector(ranking, worse_case))
            return kept[id(ranking), worse_case][1]
    return Metric


def test_inst_insq_equal_cwl_eval_all_runs(data):
    from cwl.ruler.cwl_ruler import INSQCWLMetric, INSTCWLMetric
    INSTCWLMetric, INSQCWLMetric = _c_vector_once(INSTCWLMetric), _c_vector_once(INSQCWLMetric)  # noqa: N806
    from cwl.ruler.ranking import RankingMaker
    from ir_measures.providers.cwl_eval import IrmQrelHandler
    logging.getLogger("cwl").disabled = True
    covid, qrels, runs = data
    cases = [("INST", 1.0, None), ("INST", 2.0, None), ("INST", 3.0, None), ("INSQ", 2.0, None),
             ("INST", 3.0, 2.0)]
    aligned = AlignedRuns.build(runs, qrels, ties="given")  # cwl_eval keeps the input order
    specs = {c: (MeasureSpec(c[0], T=c[1], max_rel=c[2]), MeasureSpec(c[0], "residual", T=c[1], max_rel=c[2]))
             for c in cases}
    ours = aligned.evaluate([s for pair in specs.values() for s in pair])
    handlers = {}
    for max_rel in {c[2] for c in cases}:
        h = IrmQrelHandler(1 if max_rel is None else None, None if max_rel is None else 0, max_rel)
        for r in qrels.itertuples():
            h.put_value(r.qid, r.docno, max(r.label, 0))
        handlers[max_rel] = h
    compared = 0
    for ri, name in enumerate(aligned.run_names):
        run = runs[name]
        order = np.lexsort((np.arange(len(run)), run["rank"].to_numpy(), run["qid"].to_numpy()))
        run = run.iloc[order]
        for qid, docs in run.groupby("qid", sort=False)["docno"]:
            t, docs = aligned.topics.index(qid), docs.tolist()
            rankings = {}
            for max_rel, h in handlers.items():
                maker = RankingMaker(qid, h, min_gain=0.0, max_gain=1.0, cost_dict=None, max_n=1000)
                for d in docs:
                    maker.add(d, "_")
                rankings[max_rel] = maker.get_ranking()
            for c, (sv, sr) in specs.items():
                metric = (INSTCWLMetric if c[0] == "INST" else INSQCWLMetric)(c[1])
                metric.residuals = True
                val = metric.measure(rankings[c[2]])
                assert ours[sv][ri, t, 0] == pytest.approx(val, abs=TOL), (name, qid, c)
                assert ours[sr][ri, t, 0] == pytest.approx(metric.residual_expected_utility, abs=TOL), (name, qid, c)
                compared += 1
    assert compared >= 143 * 29 * len(cases)


def test_trec_measures_equal_pytrec_eval_all_runs(data):
    import ir_measures
    from ir_measures import AP, RR, P, nDCG
    covid, qrels, runs = data
    aligned = AlignedRuns.build(runs, qrels)  # trec_eval's tie policy
    pairs = [(AP, MeasureSpec("AP")), (nDCG, MeasureSpec("nDCG")), (nDCG @ 10, MeasureSpec("nDCG", cutoff=10)),
             (P @ 10, MeasureSpec("P", cutoff=10)), (RR, MeasureSpec("RR"))]
    ours = aligned.evaluate([s for _, s in pairs])
    irm_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    irm_qrels["relevance"] = irm_qrels["relevance"].astype(int)
    evaluator = ir_measures.evaluator([m for m, _ in pairs], irm_qrels)
    lookup = {str(m): s for m, s in pairs}
    compared = 0
    for ri, name in enumerate(aligned.run_names):
        # the frame's rows as ir_measures.ScoredDoc tuples (what it makes of a frame, without
        # iterating Arrow-backed columns row by row)
        run = runs[name]
        run = [ir_measures.ScoredDoc(*row) for row in zip(run["qid"].tolist(), run["docno"].tolist(),
                                                           run["score"].tolist())]
        for metric in evaluator.iter_calc(run):
            t = aligned.topics.index(metric.query_id)
            assert ours[lookup[str(metric.measure)]][ri, t, 0] == pytest.approx(metric.value, abs=TOL), \
                (name, metric.query_id, str(metric.measure))
            compared += 1
    assert compared == 143 * 30 * len(pairs)


@pytest.mark.parametrize("ties", ["trec_eval", "expected"])
def test_aligning_the_run_directory_equals_aligning_frames(data, ties):
    """The Arrow file path (read and aligned in parallel workers) gives exactly the frame path's arrays."""
    covid, qrels, runs = data
    with pytest.warns(CoercionWarning, match="ranks start at 0"):     # said once, for every file ranked from 0
        direct = AlignedRuns.build(covid / "runs", qrels, ties=ties)
    framed = AlignedRuns.build(runs, qrels, ties=ties, n_jobs=1)
    assert direct.run_names == framed.run_names
    for attr in ("seg_len", "pos", "jidx", "group_start", "group_end"):
        np.testing.assert_array_equal(getattr(direct, attr), getattr(framed, attr))
