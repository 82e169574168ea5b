"""The command line contract: `pyterrier-noise eval QRELS RUN... -m MEASURE... [--per-query] [--ties] [--format]`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import pyterrier_noise as pn
from pyterrier_noise.cli import main
from collection_helpers import random_collection


@pytest.fixture()
def files(tmp_path):
    runs, qrels = random_collection(17, n_runs=2, n_topics=3)
    runs["run1"] = runs["run1"][runs["run1"]["qid"] != "3"]  # topic 3 unanswered: scores 0, residual 1
    d = tmp_path / "runs"
    pn.write_trec_run(runs["run0"], d / "run0.gz")
    pn.write_trec_run(runs["run1"], d / "run1")
    pn.write_trec_qrels(qrels, tmp_path / "qrels.txt")
    return tmp_path, runs, qrels


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tsv_per_query_contract(files, capsys):
    tmp, runs, qrels = files
    with pytest.warns(pn.io.CoercionWarning, match=r"have no ranking and score 0 .* run 'run1' does not answer qid '3'"):
        code, out, _ = run_cli(["eval", tmp / "qrels.txt", tmp / "runs", "-m", "RBP(p=0.8)", "-m", "AP",
                                "--per-query", "--format", "tsv"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "run\tqid\tmeasure\tvalue\tresidual"
    rows = [l.split("\t") for l in lines[1:]]
    assert len(rows) == 2 * 3 * 2  # (run, topic, measure)
    rbp = {(r[0], r[1]): (float(r[3]), float(r[4])) for r in rows if r[2] == "RBP(p=0.8)"}
    assert rbp[("run1", "3")] == (0.0, 1.0)
    assert all(r[4] == "" for r in rows if r[2] == "AP")
    with pytest.warns(pn.io.CoercionWarning, match=r"have no ranking and score 0 .* run 'run1' does not answer qid '3'"):
        ref = pn.evaluate(runs, qrels, ["RBP(p=0.8)"], perquery=True)
    for r in ref.itertuples():
        assert rbp[(r.name, r.qid)] == (r.value, r.residual)  # full precision round trip


def test_tsv_means_over_every_qrels_topic(files, capsys):
    tmp, runs, qrels = files
    with pytest.warns(pn.io.CoercionWarning, match=r"have no ranking and score 0 .* run 'run1' does not answer qid '3'"):
        code, out, _ = run_cli(["eval", tmp / "qrels.txt", tmp / "runs" / "run1", "-m", "RBP(p=0.8)",
                                "--format", "tsv"], capsys)
    rows = [l.split("\t") for l in out.splitlines()[1:]]
    assert [r[:3] for r in rows] == [["run1", "all", "RBP(p=0.8)"]]
    with pytest.warns(pn.io.CoercionWarning, match=r"have no ranking and score 0 .* run 'run1' does not answer qid '3'"):
        perq = pn.evaluate({"run1": runs["run1"]}, qrels, ["RBP(p=0.8)"], perquery=True)
    assert len(perq) == 3
    assert float(rows[0][3]) == pytest.approx(perq["value"].mean())
    assert float(rows[0][4]) == pytest.approx(perq["residual"].mean())  # includes the unanswered topic's 1


def test_text_format_mimics_rbp_eval(files, capsys):
    tmp, *_ = files
    code, out, _ = run_cli(["eval", tmp / "qrels.txt", tmp / "runs" / "run0.gz", "-m", "RBP(p=0.5)", "-m", "P@5"], capsys)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["run0", "all", "RBP(p=0.5)"]
    assert lines[0].split()[3].count(".") == 1 and lines[0].split()[4].startswith("+0.")
    assert len(lines[1].split()) == 4  # no residual for P@5


def test_json_format_and_ties(files, capsys):
    tmp, runs, qrels = files
    with pytest.warns(pn.io.CoercionWarning, match=r"have no ranking and score 0 .* run 'run1' does not answer qid '3'"):
        code, out, _ = run_cli(["eval", tmp / "qrels.txt", tmp / "runs", "-m", "INST(T=2,max_rel=2)",
                                "--ties", "given", "--format", "json"], capsys)
    recs = json.loads(out)
    assert {r["run"] for r in recs} == {"run0", "run1"}
    assert all(0 <= r["value"] <= 1 and 0 <= r["residual"] <= 1 for r in recs)


@pytest.mark.parametrize("args, message", [
    (["-m", "NoSuchMeasure"], "unknown measure 'NoSuchMeasure'"),
    (["-m", "RBP(p=1.5)"], "strictly between 0 and 1"),
    (["-m", "INST(T=0)"], "T > 0"),
])
def test_errors_are_sentences_not_tracebacks(files, capsys, args, message):
    tmp, *_ = files
    code, out, err = run_cli(["eval", tmp / "qrels.txt", tmp / "runs"] + args, capsys)
    assert code == 2 and err.startswith("pyterrier-noise: error: ") and message in err
    assert "Traceback" not in err


def test_bad_run_file_names_line(files, capsys):
    tmp, *_ = files
    bad = tmp / "bad.txt"
    bad.write_text("1 Q0 a 1 0.5 x\n1 Q0 b 2 oops x\n")
    code, _, err = run_cli(["eval", tmp / "qrels.txt", bad, "-m", "AP"], capsys)
    assert code == 2 and "bad.txt line 2: score 'oops' is not a number" in err


def test_installed_command_and_help():
    out = subprocess.run([sys.executable, "-m", "pyterrier_noise.cli", "eval", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "examples:" in out and "RBP(p=0.8)" in out


def test_each_command_is_registered_by_the_module_the_cli_names(capsys):
    """The command line imports only the module of the command it runs: the map from command to
    module must name, for every command, the module that registers it."""
    import argparse
    from pyterrier_noise import cli
    full = cli._parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(cli.COMMANDS)
    for command in cli.COMMANDS:
        one = cli._parser(command)
        sub1 = next(a for a in one._actions if isinstance(a, argparse._SubParsersAction))
        assert command in sub1.choices


def test_select_command_starts_without_unrelated_modules():
    import subprocess
    import sys
    code = ("import sys; from pyterrier_noise.cli import _parser; _parser('select'); "
            "print(sorted(m for m in ('pyterrier_noise.judges', 'pyterrier_noise.ties', "
            "'pyterrier_noise.crowd', 'pyterrier_noise.selection.selector') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the unrelated modules stay out; since the handlers import the library, even the selector does
    assert out.strip() in ("['pyterrier_noise.selection.selector']", "[]")
