"""The Vaswani study of the quickstart prints no PISA log: neither its ``[info]`` lines (stdout) nor
its progress counters (stderr) reach the terminal.  The same study in examples/vaswani_study.py is
checked where test_examples.py runs it (one run of the script, not two)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow   # each run indexes Vaswani with PISA


def assert_no_pisa_log(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0, out.stderr[-3000:]
    for name, text in (("stdout", out.stdout), ("stderr", out.stderr)):
        assert "[info]" not in text, f"a PISA [info] line on {name}: {text[:500]}"
        assert not re.search(r"(Create index|Storing terms statistics): \d+%", text), f"PISA progress on {name}"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def test_quickstart_vaswani_blocks_print_no_pisa_log(vaswani, tmp_path):
    pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is not installed")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "quickstart.md").read_text(), re.S)
    assert any("PisaIndex" in b for b in blocks)
    script = tmp_path / "quickstart.py"
    script.write_text("\n".join(blocks))
    out = _run([str(script)], ROOT)   # the page's paths are relative to the repository root
    assert_no_pisa_log(out)
    assert "AP p-value corrected" in out.stdout   # the Vaswani blocks ran
