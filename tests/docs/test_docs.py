"""Every ```python block of every docs page runs as-is (blocks of a page share one namespace).

Pages run in a scratch working directory beside a link to the repository's ``../shared``, so
``../shared/data`` paths resolve as they do from the repository root, while a page that writes
relative paths (evidence/selection.md regenerates ``docs/img/*.png``) writes into the scratch
directory, never into the repository.  Blocks that use the real data guard themselves with
``if path.exists()``.
"""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs" / "evidence").glob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


# The pages show users the package's warnings (every one a NoiseWarning) and PyTerrier's notes as a
# reader meets them; what this test checks is that every example runs as written.
@pytest.mark.filterwarnings("ignore::pyterrier_noise.NoiseWarning")
@pytest.mark.filterwarnings("ignore:text_field not specified:UserWarning")          # PyTerrier's indexer
@pytest.mark.filterwarnings("ignore:There are shared pipeline components:UserWarning")   # pt.Experiment
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "docs")) for p in PAGES])
def test_docs_examples_run(page, tmp_path, monkeypatch, capsys):
    blocks = BLOCK.findall(page.read_text())
    if not blocks:
        pytest.skip(f"{page.name} has no python examples")
    work = tmp_path / "repo"
    work.mkdir()
    (tmp_path / "shared").symlink_to(ROOT.parent / "shared", target_is_directory=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTERRIER_NOISE_DOCS_TMP", str(tmp_path))
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{page.name}[block {i + 1}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"{page.name}, python block {i + 1} failed: {type(exc).__name__}: {exc}")
