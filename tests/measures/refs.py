"""The reference tools, called directly: pytrec_eval with trec_eval's measure names, and
ir_measures' judged, msmarco and gdeval providers.  Shared by the oracle's proof
(test_oracle.py) and the engine's reference tests (test_reference_new.py)."""
from __future__ import annotations

from collections import defaultdict

import pandas as pd

from oracle import measure as oracle_measure

# what each family is served by, and the precision the tool reports
GDEVAL_TOL = 5.000001e-6     # gdeval.pl prints "%.5f"
TOL = 1e-9

# the measures of issue 27, as ir_measures spells them
MEASURES = [
    "P@10", "R@100", "Recall@100", "AP", "AP@100", "nDCG", "nDCG@10", "RR", "RR@10", "Rprec", "Bpref",
    "NumRet", "NumRel", "NumRelRet", "Success@10", "Judged@10", "IPrec@0.5", "ERR@10",
    "AP(rel=2)", "P(rel=2)@10", "R(rel=2)@100", "RR(rel=2)", "Rprec(rel=2)", "Bpref(rel=2)",
    "Success(rel=2)@10", "NumRel(rel=2)", "NumRet(rel=2)", "IPrec(rel=2)@0.5", "RR(rel=2)@10",
    "AP(judged_only=True)", "AP(judged_only=True)@100", "nDCG(judged_only=True)", "nDCG(judged_only=True)@10",
    "P(judged_only=True)@10", "RR(judged_only=True)",
    "nDCG(gains={0:0,1:1,2:3})@10", "nDCG(gains={0:0,1:1,2:3})",
]
# synthetic runs are 15 deep: cutoffs beyond the ranking
MEASURES_SHORT = ["P@20", "R@20", "AP@20", "nDCG@20", "RR@20", "Success@20", "Judged@20", "ERR@20", "Judged",
                  "IPrec@0.0", "IPrec@0.3", "IPrec@1.0"]


def provider_of(text: str) -> str:
    """Which reference serves the measure: ``pytrec_eval`` (called directly), or ir_measures'
    ``judged`` / ``msmarco`` (RR@k) / ``gdeval`` (ERR@k) provider."""
    m = oracle_measure(text)
    if m.name == "Judged":
        return "judged"
    if m.name == "ERR":
        return "gdeval"
    if m.name == "RR" and m.param("cutoff") is not None:
        return "msmarco"
    return "pytrec_eval"


def trec_name(text: str) -> tuple[str, str, int, bool, dict | None]:
    """(measure to ask pytrec_eval for, key of its answer, relevance_level, judged_docs_only_flag,
    gains mapping of the qrels)."""
    m = oracle_measure(text)
    n, c = m.name, m.param("cutoff")
    rel, jo, gains = m.param("rel", 1), bool(m.param("judged_only", False)), m.param("gains")
    if n == "P":
        ask, key = f"P.{c}", f"P_{c}"
    elif n == "R":
        ask, key = f"recall.{c}", f"recall_{c}"
    elif n == "AP":
        ask, key = ("map", "map") if c is None else (f"map_cut.{c}", f"map_cut_{c}")
    elif n == "nDCG":
        ask, key = ("ndcg", "ndcg") if c is None else (f"ndcg_cut.{c}", f"ndcg_cut_{c}")
    elif n == "RR" and c is None:
        ask = key = "recip_rank"
    elif n == "Rprec":
        ask = key = "Rprec"
    elif n == "Bpref":
        ask = key = "bpref"
    elif n == "NumRet":
        ask = key = "num_ret" if m.param("rel") is None else "num_rel_ret"
    elif n == "NumRel":
        ask = key = "num_rel"
    elif n == "Success":
        ask, key = f"success.{c}", f"success_{c}"
    elif n == "IPrec":
        r = m.param("recall")
        ask, key = f"iprec_at_recall.{r}", f"iprec_at_recall_{r:.2f}"
    else:
        raise ValueError(f"{text} is not a trec_eval measure")
    return ask, key, rel, jo, gains


def qrels_dict(qrels: pd.DataFrame, gains: dict | None = None) -> dict:
    out: dict = defaultdict(dict)
    for q, d, v in zip(qrels["qid"].astype(str).tolist(), qrels["docno"].astype(str).tolist(),
                       qrels["label"].tolist()):
        v = int(v)
        out[q][d] = gains.get(v, v) if gains else v
    return dict(out)


def run_dict(run: pd.DataFrame) -> dict:
    out: dict = defaultdict(dict)
    for q, d, s in zip(run["qid"].astype(str).tolist(), run["docno"].astype(str).tolist(),
                       run["score"].astype(float).tolist()):
        out[q][d] = float(s)
    return dict(out)


def reference(texts, runs: dict, qrels: pd.DataFrame) -> dict:
    """{(run, qid, text): value} from the reference of each measure, on the topics it reports
    (pytrec_eval: topics the run answers and the qrels hold; judged: the same; msmarco: those with
    a relevant document; gdeval: those with a positive judgment)."""
    import ir_measures
    import pytrec_eval
    out = {}
    by_call = defaultdict(list)
    for t in texts:
        if provider_of(t) == "pytrec_eval":
            ask, key, rel, jo, gains = trec_name(t)
            gk = tuple(sorted(gains.items())) if gains else None
            by_call[rel, jo, gk].append((t, ask, key))
    evaluators = {}
    for (rel, jo, gk), items in by_call.items():
        evaluators[rel, jo, gk] = (pytrec_eval.RelevanceEvaluator(
            qrels_dict(qrels, dict(gk) if gk else None), {ask for _, ask, _ in items},
            relevance_level=rel, judged_docs_only_flag=jo), items)
    # ir_measures' providers: each builds its evaluator (the qrels) once and scores every run;
    # rows go in as plain tuples (iterating Arrow-backed frame columns costs more than the tools)
    others = [t for t in texts if provider_of(t) != "pytrec_eval"]
    irm_qrels = [ir_measures.Qrel(q, d, int(v)) for q, d, v in zip(
        qrels["qid"].astype(str).tolist(), qrels["docno"].astype(str).tolist(), qrels["label"].tolist())]
    providers = []
    for prov in dict.fromkeys(provider_of(t) for t in others):
        ms = {ir_measures.parse_measure(t): t for t in others if provider_of(t) == prov}
        providers.append((getattr(ir_measures, prov).evaluator(list(ms), irm_qrels), ms))
    for name, run in runs.items():
        rd = run_dict(run)
        for ev, items in evaluators.values():
            res = ev.evaluate(rd)
            for qid, vals in res.items():
                for t, _, key in items:
                    out[name, qid, t] = vals[key]
        if providers:
            irm_run = [ir_measures.ScoredDoc(q, d, s) for q, d, s in zip(
                run["qid"].astype(str).tolist(), run["docno"].astype(str).tolist(),
                run["score"].astype(float).tolist())]
            for ev, ms in providers:
                for metric in ev.iter_calc(irm_run):
                    out[name, metric.query_id, ms[metric.measure]] = metric.value
    return out


def trec_ranked_copy(run: pd.DataFrame, depth: int | None = None) -> pd.DataFrame:
    """The run with its scores replaced by strictly decreasing numbers in trec_eval's order, so
    that a tool breaking ties another way (judged, msmarco: docno ascending; gdeval: float64
    scores) ranks it exactly as trec_eval does.  ``depth``: keep each topic's first ``depth``
    documents only; a tool then gives a measure cut at ``depth`` or less (Judged@k, RR@k, ERR@k)
    exactly the value it gives on the whole copy, which it ranks the same way."""
    from oracle import trec_eval_order
    docnos, scores = run["docno"].astype(str).tolist(), run["score"].astype(float).tolist()
    rows: dict = defaultdict(list)                      # topics in order of first appearance
    for i, q in enumerate(run["qid"].astype(str).tolist()):
        rows[q].append(i)
    order, new_scores = [], []
    for part in rows.values():
        idx = trec_eval_order([docnos[i] for i in part], [scores[i] for i in part])[:depth]
        order.extend(part[i] for i in idx)
        new_scores.extend(float(-k) for k in range(len(idx)))
    out = run.iloc[order].reset_index(drop=True)
    out["score"] = new_scores
    return out


def cutoff_of(text: str) -> int | None:
    """The rank cutoff of a measure string (None for a whole-ranking measure)."""
    return oracle_measure(text).param("cutoff")


def engine_values(runs, qrels, texts, ties=None) -> tuple[dict, dict]:
    """({(run, qid, text): value}, {text: exception}) of ``pyterrier_noise.evaluate``; when the whole
    list is refused, measure by measure, so one refused measure does not hide the others."""
    from pyterrier_noise import evaluate

    def frame_to_dict(df):
        return {(n, str(q), m): v for n, q, m, v in zip(*(df[c].tolist() for c in ("name", "qid", "measure", "value")))}
    try:
        return frame_to_dict(evaluate(runs, qrels, list(texts), ties=ties, perquery=True)), {}
    except Exception:
        out, errors = {}, {}
        for t in texts:
            try:
                out.update(frame_to_dict(evaluate(runs, qrels, [t], ties=ties, perquery=True)))
            except Exception as e:   # noqa: BLE001 - reported per measure by the tests
                errors[t] = e
        return out, errors
