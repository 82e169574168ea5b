"""Warnings are quiet and say where: each kind once per command with a count, blamed on the user's line."""
from __future__ import annotations

import sys
import warnings

import pytest

from pyterrier_noise.io import CoercionWarning
from pyterrier_noise._warnings import warning_kind
from pyterrier_noise.cli import main, once_per_kind
from pyterrier_noise.io import read_runs


def _display(message, category, filename, lineno, file=None, line=None):
    """What Python does with a warning outside a test (pytest records them instead): format and print."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _runs(tmp_path, n_runs=4, first_rank=0, sep=" "):
    """Qrels and a directory of ``n_runs`` runs on two topics: ranks from ``first_rank`` (0: the
    0-based ranks warning, once per file) and ``sep`` between the Q0 and docno fields (a tab: lines
    that mix tabs and spaces, one warning of one kind per file)."""
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"{q} 0 d{d} {d % 2}\n" for q in (1, 2) for d in range(5)))
    runs = tmp_path / "runs"
    runs.mkdir()
    for r in range(n_runs):
        (runs / f"run{r}").write_text("".join(f"{q} Q0{sep}d{d} {d + first_rank} {10 - d - r * 0.1} run{r}\n"
                                              for q in (1, 2) for d in range(5)))
    return qrels, runs


def test_warning_kind_ignores_file_names_numbers_and_quoted_values():
    a = "runs/a.gz: ranks start at 0 in 3 ranking(s) (e.g. qid '1'): read as 0-based ranks"
    b = "/x/runs/b.txt: ranks start at 0 in 30 ranking(s) (e.g. qid '907'): read as 0-based ranks"
    assert warning_kind(a) == warning_kind(b)
    assert warning_kind(a) != warning_kind("runs/a.gz: 2 duplicate judgment(s) for the same (qid, docno)")


def test_eval_on_zero_based_runs_warns_once(tmp_path, capsys, monkeypatch):
    qrels, runs = _runs(tmp_path)
    monkeypatch.setattr(warnings, "showwarning", _display)
    assert main(["eval", str(qrels), str(runs), "-m", "AP"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1, err
    assert "ranks start at 0 in 4 run files" in err[0] and "8 rankings" in err[0]


def test_cli_prints_a_repeated_kind_once_with_its_count(capsys):
    """The same kind five times: one line when it first comes, one count at the end; another kind once."""
    with warnings.catch_warnings(), once_per_kind():
        warnings.simplefilter("always")
        warnings.showwarning = _display
        for k in range(5):
            warnings.warn(f"file{k}.txt: {k} odd line(s) skipped", CoercionWarning)
        warnings.warn("something else entirely", CoercionWarning)
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["pyterrier-noise: warning: file0.txt: 0 odd line(s) skipped",
                       "pyterrier-noise: warning: something else entirely"]
    assert len(err) == 3 and err[2].startswith("pyterrier-noise: warning: 5 warnings like") and "file0.txt" in err[2]


@pytest.mark.parametrize("n_runs", [3, 9])   # 9: read in worker processes
def test_a_reader_warning_is_blamed_on_the_callers_line(tmp_path, n_runs):
    _, runs = _runs(tmp_path, n_runs=n_runs)
    with pytest.warns(CoercionWarning, match="ranks start at 0") as record:
        read_runs(runs)
    assert [w.filename for w in record] == [__file__]
    assert f"ranks start at 0 in {n_runs} run files ({2 * n_runs} rankings" in str(record[0].message)


@pytest.mark.parametrize("n_runs", [3, 9])   # 9: read in worker processes
def test_a_repeated_kind_is_one_line_and_a_count_by_default_and_every_line_under_verbose(
        tmp_path, capsys, monkeypatch, n_runs):
    qrels, runs = _runs(tmp_path, n_runs, first_rank=1, sep="\t")
    monkeypatch.setattr(warnings, "showwarning", _display)
    assert main(["eval", str(qrels), str(runs), "-m", "AP"]) == 0
    quiet = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(quiet) == 2, quiet
    assert quiet[0].startswith(f"pyterrier-noise: warning: {runs / 'run0'}: 10 line(s) mix tabs and spaces")
    head = f"pyterrier-noise: warning: {n_runs} warnings like \""
    assert quiet[1].startswith(head)
    example = quiet[1][len(head):].split('"')[0].removesuffix("...")   # the first warning, shortened
    assert len(example) >= 20 and quiet[0][len("pyterrier-noise: warning: "):].startswith(example)
    assert quiet[1].endswith("in all (--verbose lists every one)")

    assert main(["eval", str(qrels), str(runs), "-m", "AP", "--verbose"]) == 0
    loud = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert loud == [f"pyterrier-noise: warning: {runs / f'run{r}'}: 10 line(s) mix tabs and spaces (e.g. line 1): "
                    "read as trec_eval reads them, every run of spaces and tabs separating two fields (so an "
                    "identifier with a leading or trailing space or tab loses it)" for r in range(n_runs)]


def test_verbose_prints_every_warning_of_a_kind_in_full(capsys):
    with warnings.catch_warnings(), once_per_kind(verbose=True):
        warnings.simplefilter("always")
        warnings.showwarning = _display
        for k in range(5):
            warnings.warn(f"file{k}.txt: {k} odd line(s) skipped", CoercionWarning)
    assert capsys.readouterr().err.splitlines() == [f"pyterrier-noise: warning: file{k}.txt: {k} odd line(s) skipped"
                                                    for k in range(5)]
