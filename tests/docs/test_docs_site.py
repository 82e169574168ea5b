"""The documentation builds into a site with warnings as errors (mkdocs --strict)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]')")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").exists()
    # every page on disk is in the navigation (a new page must be listed in mkdocs.yml)
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")
               if str(p.relative_to(ROOT / "docs")) not in nav]
    assert not missing, f"docs pages missing from mkdocs.yml nav: {missing}"
