"""Every example script runs offline in its quick mode (as CI does), and prints no PISA log: the
Vaswani study indexes with PISA, whose ``[info]`` lines (stdout) and progress counters (stderr)
must not reach the terminal (test_quiet_pisa.py checks the quickstart's blocks the same way)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_quiet_pisa import assert_no_pisa_log

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))
VASWANI = ROOT.parent / "shared" / "data" / "vaswani"   # the examples' default --data


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_example_runs_quick(script, tmp_path):
    out = subprocess.run([sys.executable, str(script), "--quick"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env={"MPLBACKEND": "Agg", **__import__("os").environ})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip(), "an example should print what it found"
    assert_no_pisa_log(out)
    if script.name == "vaswani_study.py" and VASWANI.exists():
        pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is not installed")
        assert "pt.Experiment, BM25 as the baseline" in out.stdout   # the study ran, with PISA
