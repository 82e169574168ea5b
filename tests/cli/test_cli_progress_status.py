"""The one-line status of long phases without steps to count: shown after
the delay only when stderr is a terminal, never with --quiet, never in pytest's captured stderr."""
from __future__ import annotations

import argparse

import pytest

from pyterrier_noise import _progress
from pyterrier_noise._progress import status


def test_status_line_after_the_delay_when_stderr_is_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    with status("reading and aligning 3 runs", True, delay=0.0) as s:
        s._timer.join()                      # the timer has fired: deterministic, no sleep
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "reading and aligning 3 runs ..."
    assert lines[1].startswith("reading and aligning 3 runs: done in ") and lines[1].endswith(" s")
    assert len(lines) == 2


def test_status_is_silent_for_short_phases_when_quiet_and_when_not_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    with status("short", True, delay=60.0):
        pass                                 # ends long before the delay
    with status("quiet", False, delay=0.0) as s:
        assert not s.enabled
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: False)
    with status("not a terminal", True, delay=0.0) as s:
        assert not s.enabled
    assert capsys.readouterr().err == ""


def test_eval_has_quiet_and_evaluate_is_silent_when_stderr_is_captured(capsys, tmp_path):
    from pyterrier_noise.cli import _parser
    from pyterrier_noise.measures import evaluate
    import pandas as pd
    p = _parser("eval")
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices["eval"]
    assert sub.parse_args(["q", "r", "-m", "AP"]).progress is True
    assert sub.parse_args(["q", "r", "-m", "AP", "--quiet"]).progress is False
    run = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "score": [2.0, 1.0], "rank": [0, 1]})
    qrels = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "c"], "label": [1, 0]})
    res = evaluate({"r": run}, qrels, ["AP"], progress=True)
    assert res["value"].tolist() == [1.0]    # AP of a ranking with its one relevant document first
    assert capsys.readouterr().err == ""


def _band_with_a_slow_banding(tmp_path, capsys, monkeypatch, seconds: float) -> None:
    """``band`` with its banding made to take ``seconds``: under --progress the status line says the
    phase began and when it ended; under --quiet nothing is said."""
    import time

    from pyterrier_noise.cli import main
    from pyterrier_noise.ties import TieBanding
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    slow = TieBanding.transform

    def transform(self, frame):
        time.sleep(seconds)
        return slow(self, frame)

    monkeypatch.setattr(TieBanding, "transform", transform)
    run = tmp_path / "run"
    run.write_text("".join(f"1 Q0 d{d} {d + 1} {10 - d} r\n" for d in range(5)))
    for flag, shown in (("--progress", True), ("--quiet", False)):
        assert main(["band", str(run), "--rho", "2", "--out", str(tmp_path / f"out{flag}"), flag]) == 0
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("banding ")]
        if shown:
            assert err[0] == f"banding {run} ..." and err[1].startswith(f"banding {run}: done in "), err
        else:
            assert err == []


@pytest.mark.slow   # waits 2 x 2.5 s; the quick run has the same command path with the delay at 0 s below
def test_a_slow_phase_of_a_command_shows_its_status_line_within_about_two_seconds(tmp_path, capsys, monkeypatch):
    """``band`` with a banding made slow (2.5 s): the status line comes after the 2 s delay."""
    _band_with_a_slow_banding(tmp_path, capsys, monkeypatch, 2.5)


def test_a_phase_of_a_command_outlasting_the_delay_shows_its_status_line_unless_quiet(tmp_path, capsys, monkeypatch):
    """As above with the delay at 0 s and a banding made to take 0.5 s (the quick run's copy)."""
    monkeypatch.setattr(status.__init__, "__defaults__", (True, 0.0))     # enabled=True, delay=0.0
    _band_with_a_slow_banding(tmp_path, capsys, monkeypatch, 0.5)
