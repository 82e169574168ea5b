"""Every ```python block of README.md runs as written (blocks share one namespace, repo root as cwd)."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# README blocks may sit indented inside a list item: the fence's indentation is stripped.
BLOCK = re.compile(r"^([ \t]*)```python\n(.*?)^\1```", re.S | re.M)


def readme_blocks() -> list[str]:
    return [textwrap.dedent(code) for _, code in BLOCK.findall((ROOT / "README.md").read_text())]


def test_readme_has_python_blocks():
    assert readme_blocks(), "README.md should show a runnable python example"


def test_readme_python_blocks_run(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "readme"}
    for i, code in enumerate(readme_blocks()):
        try:
            exec(compile(code, f"README.md[block {i + 1}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"README.md, python block {i + 1} failed: {type(exc).__name__}: {exc}")
    assert "run12" in capsys.readouterr().out   # the snippet prints its table
