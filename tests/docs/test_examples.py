"""Every example script runs offline in its quick mode (as CI does)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_example_runs_quick(script, tmp_path):
    out = subprocess.run([sys.executable, str(script), "--quick"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env={"MPLBACKEND": "Agg", **__import__("os").environ})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip(), "an example should print what it found"
