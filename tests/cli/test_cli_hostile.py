"""Every command over the hostile corpus (tests/hostile/make_corpus.py): no traceback; each bad input
refused with exit status 2 and a sentence naming the file and line (the column and row, the option,
the path); each odd input trec_eval accepts accepted, with values equal to pytrec_eval's on the files
as trec_eval parses them (labels by atol, scores by atof)."""
from __future__ import annotations

import atexit
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("make_corpus", Path(__file__).resolve().parents[1] / "hostile" / "make_corpus.py")
corpus = importlib.util.module_from_spec(_spec)
sys.modules["make_corpus"] = corpus   # dataclasses look their module up
_spec.loader.exec_module(corpus)

_ROOT = Path(tempfile.mkdtemp(prefix="pyterrier-noise-hostile-"))
atexit.register(shutil.rmtree, _ROOT, True)
INVOCATIONS = corpus.make_corpus(_ROOT)
WANTED = {"bad": {"clear"}, "odd": {"equal"}, "either": {"clear", "equal"}}


def _param(inv):
    marks = [pytest.mark.xfail(strict=False, reason=inv.pending)] if inv.pending else []
    return pytest.param(inv, id=f"{inv.family}-{inv.case}-{inv.argv[0]}", marks=marks)


@pytest.mark.parametrize("inv", [_param(i) for i in INVOCATIONS])
def test_hostile_input(inv):
    what, detail = corpus.outcome(inv)
    assert what in WANTED[inv.kind], f"{' '.join(map(str, inv.argv))}\n-> {what}: {detail}"


def test_corpus_covers_every_command_and_family():
    commands = {i.argv[0] for i in INVOCATIONS}
    assert commands >= {"eval", "perturb", "robustness", "select", "judge", "band", "round", "ties", "phi-match",
                        "pairwise", "report", "demo"}
    assert {i.family for i in INVOCATIONS} == {"runs", "qrels", "odd", "sessions", "measures", "numbers", "outputs"}
    # every command with an output is tried under a file and in a directory nobody can write
    outs = [i for i in INVOCATIONS if i.family == "outputs"]
    assert len({i.argv[0] for i in outs}) == 10 and len(outs) == 22


def test_corpus_is_deterministic(tmp_path):
    a = corpus.make_corpus(tmp_path / "a")
    b = corpus.make_corpus(tmp_path / "b")
    assert [i.case for i in a] == [i.case for i in b]
    for f in sorted((tmp_path / "a").rglob("*")):
        if f.is_file():
            assert f.read_bytes() == (tmp_path / "b" / f.relative_to(tmp_path / "a")).read_bytes()


def test_trec_eval_parse_is_trec_evals():
    # C's atol / atof, as trec_eval reads labels and scores
    assert [corpus._atol(x) for x in ("1.5", "2", "-1", "1e1", "x")] == [1, 2, -1, 1, 0]
    assert [corpus._atof(x) for x in ("1e-3", "2.5E+2", "1_000", "abc", ".5")] == [1e-3, 250.0, 1.0, 0.0, 0.5]
