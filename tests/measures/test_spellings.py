"""People's spellings of the measures of issue 27 in ``pyterrier_noise.evaluate`` and in
``pyterrier-noise eval -m`` (the same tables).

* every ir_measures string in SPELLINGS works, labelled with the string as given, with the value
  of the oracle (tests/measures/oracle.py, proven in test_oracle.py);
* every ir_measures object works, labelled ``str(object)`` (ir_measures' own spelling);
* every misspelling in MISSPELLINGS (trec_eval names, wrong case) either raises an InputError
  whose message says "did you mean" and names the ir_measures spelling, or is accepted as that
  measure (trec_eval names that are unambiguous), labelled as given, with that measure's values.
"""
from __future__ import annotations

import ir_measures
import pytest
from collection_helpers import random_collection
from oracle import evaluate as oracle_evaluate
from refs import engine_values

from pyterrier_noise import evaluate
from pyterrier_noise import InputError

# ir_measures strings (each must parse with ir_measures.parse_measure)
SPELLINGS = [
    "P@10", "R@100", "Recall@100", "AP", "AP@100", "nDCG", "nDCG@10", "NDCG@10", "RR", "RR@10", "Rprec",
    "Bpref", "NumRet", "NumRel", "NumRelRet", "Success@10", "Judged@10", "IPrec@0.5", "IPrec@0.50", "ERR@10",
    "AP(rel=2)", "P(rel=2)@10", "R(rel=2)@100", "Recall(rel=2)@100", "RR(rel=2)", "NumRet(rel=2)",
    "AP(judged_only=True)", "nDCG(judged_only=True)@10", "P(judged_only=True)@10", "RR(judged_only=True)",
    "nDCG(gains={0:0,1:1,2:3})@10", "nDCG(gains={0:0,1:1,2:3})",
]

# ir_measures objects
OBJECTS = [
    ir_measures.P @ 10, ir_measures.R @ 100, ir_measures.Recall @ 100, ir_measures.AP, ir_measures.AP @ 100,
    ir_measures.nDCG, ir_measures.nDCG @ 10, ir_measures.RR, ir_measures.RR @ 10, ir_measures.Rprec,
    ir_measures.Bpref, ir_measures.NumRet, ir_measures.NumRel, ir_measures.NumRelRet, ir_measures.Success @ 10,
    ir_measures.Judged @ 10, ir_measures.IPrec @ 0.5, ir_measures.ERR @ 10, ir_measures.AP(rel=2),
    ir_measures.P(rel=2) @ 10, ir_measures.R(rel=2) @ 100, ir_measures.AP(judged_only=True),
    ir_measures.nDCG(judged_only=True) @ 10, ir_measures.P(judged_only=True) @ 10,
    ir_measures.RR(judged_only=True), ir_measures.nDCG(gains={0: 0, 1: 1, 2: 3}) @ 10,
]

# misspelling -> the ir_measures spellings a "did you mean" may name (the first is canonical)
MISSPELLINGS = {
    "ndcg@10": ("nDCG@10",),
    "map": ("AP",),
    "P_10": ("P@10",),
    "recall_100": ("R@100",),
    "ndcg_cut_10": ("nDCG@10",),
    "recip_rank": ("RR",),
    "bpref": ("Bpref",),
    "iprec_at_recall_0.50": ("IPrec@0.5",),
    "num_rel_ret": ("NumRelRet", "NumRet(rel=1)"),
    "success_10": ("Success@10",),
    # trec_eval -m forms and other trec_eval names
    "P.10": ("P@10",),
    "ndcg_cut.10": ("nDCG@10",),
    "map_cut_100": ("AP@100",),
    "ndcg": ("nDCG",),
    "num_ret": ("NumRet",),
    "num_rel": ("NumRel",),
    "rprec": ("Rprec",),
}


@pytest.fixture(scope="module")
def collection():
    return random_collection(11, n_runs=2, n_topics=3, grades=3, tie_decimals=1)


def test_the_tables_are_ir_measures_spellings():
    for s in SPELLINGS:
        ir_measures.parse_measure(s)
    for s, names in MISSPELLINGS.items():
        with pytest.raises((NameError, ValueError)):
            ir_measures.parse_measure(s)
        for n in names:
            ir_measures.parse_measure(n)
    # ir_measures' own trec_eval parser agrees with the canonical names where it knows them
    for s in ("ndcg_cut_10", "map", "P_10", "recall_100", "recip_rank", "iprec_at_recall_0.50", "num_rel_ret",
              "success_10", "bpref", "map_cut_100", "num_ret", "num_rel", "ndcg"):
        (m,) = ir_measures.parse_trec_measure(s)
        assert m == ir_measures.parse_measure(MISSPELLINGS[s][0]), s


def values_of(got, label):
    return {(n, q): v for (n, q, m), v in got.items() if m == label}


@pytest.mark.parametrize("text", SPELLINGS)
def test_ir_measures_strings_work_with_their_label(collection, text):
    runs, qrels = collection
    got, errors = engine_values(runs, qrels, [text])
    assert text not in errors, f"evaluate refused {text}: {errors.get(text)!r}"
    assert {m for _, _, m in got} == {text}
    want = oracle_evaluate(runs, qrels, [text])
    assert len(want) == 2 * 3
    for key, v in want.items():
        assert got[key] == pytest.approx(v, abs=1e-9, rel=0), key


@pytest.mark.parametrize("obj", OBJECTS, ids=str)
def test_ir_measures_objects_work_with_their_label(collection, obj):
    runs, qrels = collection
    df = evaluate(runs, qrels, [obj], perquery=True)
    assert set(df["measure"]) == {str(obj)}
    want = oracle_evaluate(runs, qrels, [obj])
    got = {(n, str(q)): v for n, q, v in zip(df["name"], df["qid"], df["value"])}
    assert len(got) == len(want) == 2 * 3
    for (n, q, _), v in want.items():
        assert got[n, q] == pytest.approx(v, abs=1e-9, rel=0), (n, q)


@pytest.mark.parametrize("text", list(MISSPELLINGS))
def test_misspellings_say_did_you_mean_or_are_that_measure(collection, text):
    runs, qrels = collection
    names = MISSPELLINGS[text]
    try:
        df = evaluate(runs, qrels, [text], perquery=True)
    except InputError as e:
        msg = str(e)
        assert "did you mean" in msg.lower(), msg
        assert any(n in msg for n in names), (msg, names)
        return
    # accepted (trec_eval's own names): labelled as written, as pt.Experiment labels them, with the
    # values of the measure it names (docs/measures.md, "Spellings")
    assert set(df["measure"]) == {text}
    want = oracle_evaluate(runs, qrels, [names[0]])
    got = {(n, str(q)): v for n, q, v in zip(df["name"], df["qid"], df["value"])}
    assert len(got) == 2 * 3
    for (n, q, _), v in want.items():
        assert got[n, q] == pytest.approx(v, abs=1e-9, rel=0), (n, q)


@pytest.mark.parametrize("text", ["nothing@10", "P@ten", "AP(rel=)"])
def test_nonsense_is_an_input_error(collection, text):
    runs, qrels = collection
    with pytest.raises(InputError, match="measure"):
        evaluate(runs, qrels, [text], perquery=True)


# ---------------------------------------------------------------------------------------------
# the same spellings on the command line: pyterrier-noise eval QRELS RUNS -m SPELLING --per-query

@pytest.fixture(scope="module")
def files(collection, tmp_path_factory):
    import pyterrier_noise as pn
    runs, qrels = collection
    d = tmp_path_factory.mktemp("spellings")
    for name, run in runs.items():
        pn.write_trec_run(run, d / "runs" / name)
    pn.write_trec_qrels(qrels, d / "qrels.txt")
    return d


def cli_eval(files, text):
    from cli_helpers import run_cli
    return run_cli("eval", files / "qrels.txt", files / "runs", "-m", text, "--per-query", "--format", "tsv")


def cli_rows(out):
    lines = out.splitlines()
    assert lines[0].split("\t")[:4] == ["run", "qid", "measure", "value"]
    return [line.split("\t") for line in lines[1:]]


@pytest.mark.parametrize("text", SPELLINGS)
def test_cli_takes_ir_measures_strings(collection, files, text):
    runs, qrels = collection
    status, out, err = cli_eval(files, text)
    assert status == 0, err
    rows = cli_rows(out)
    assert {r[2] for r in rows} == {text}
    want = oracle_evaluate(runs, qrels, [text])
    got = {(r[0], r[1]): float(r[3]) for r in rows}
    assert len(got) == len(want) == 2 * 3
    for (n, q, _), v in want.items():
        assert got[n, q] == pytest.approx(v, abs=1e-9, rel=0), (n, q)


@pytest.mark.parametrize("text", list(MISSPELLINGS))
def test_cli_misspellings_say_did_you_mean_or_are_that_measure(collection, files, text):
    runs, qrels = collection
    names = MISSPELLINGS[text]
    status, out, err = cli_eval(files, text)
    if status != 0:
        assert status == 2 and err.startswith("pyterrier-noise: error: "), err
        assert "did you mean" in err.lower() and any(n in err for n in names), err
        return
    rows = cli_rows(out)
    assert {r[2] for r in rows} == {text}          # labelled as written
    want = oracle_evaluate(runs, qrels, [names[0]])
    got = {(r[0], r[1]): float(r[3]) for r in rows}
    for (n, q, _), v in want.items():
        assert got[n, q] == pytest.approx(v, abs=1e-9, rel=0), (n, q)
