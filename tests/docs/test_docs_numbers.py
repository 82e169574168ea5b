"""Numbers in docs/ that cannot drift: every marked table shows exactly the values stored in its JSON.

A table is marked by an HTML comment on the line(s) before it::

    <!-- numbers: docs/data/reproduce_moffat2007.json#table5 -->
    | pool fed by | judgments | ... |

The JSON file holds ``tables: {name: {"columns": [...], "rows": [[...], ...]}}`` in the page's
layout.  Each stored number must be shown as the page rounds it (the decimals the page prints;
``**bold**``, thousands separators and ``%`` are ignored); a list is a cell such as ``440 : 1,337``, ``0.882 (0.021)`` (a value and its SD) or ``(3.0, 0.0)``;
a string must be the cell's text.  Every other table of docs/ that shows numbers must be on
UNBACKED below, with the reason it is not backed yet, and an entry there that no longer matches a
table fails, so the list only shrinks.  The slow test at the end reruns the cheap stored
reproductions and checks that they give the stored values again.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs" / "evidence").glob("*.md"))
MARKER = re.compile(r"<!--\s*numbers:\s*(\S+?)#(\S+)\s*-->")
SEPARATOR = re.compile(r"^\|[-| :]+\|$")
NUMBER = re.compile(r"^[-+]?(\d[\d,]*)?\.?\d+$")

#: numeric tables not backed by stored JSON yet: (page, start of the header row) -> why
UNBACKED = {
    ("benchmarks.md", "| workload | ours | peer | ratio | target | measured |"): "current figures quoted from the "
                                                                          "measurement log (evidence/benchmarks-2026-11.md); "
                                                                          "benchmarks/results/ is not committed",
    ("benchmarks-2026-11.md", "| workload | ours | peer | peer time |"): "W1 timings; benchmarks/results/ is not committed",
    ("benchmarks-2026-11.md", "| ours | peer | ours (median wall) |"): "W1 process timings; benchmarks/results/ is not committed",
    ("benchmarks-2026-11.md", "| replicates | before (2026-11-22) |"): "W2 timings; benchmarks/results/ is not committed",
    ("benchmarks-2026-11.md", "| workload | ours | peer | ratio | target |"): "W3/W4 timings; benchmarks/results/ is not committed",
    ("benchmarks-2026-11.md", "| side | peak without INST |"): "INST memory; benchmarks/results/ is not committed",
    ("selection.md", "| workload | ours (s) | minavgerr (s) |"): "W3 timings; benchmarks/results/ is not committed",
    ("benchmarks-2026-11.md", "| replicates | before (2026-11-24, morning, idle) |"): "W2 timings; benchmarks/results/ is not "
                                                                            "committed",
    ("benchmarks-2026-11.md", "| replicates | before (`8483363`), wall / CPU |"): "W2 timings (second pass); benchmarks/results/ "
                                                                         "is not committed",
    ("benchmarks-2026-11.md", "| run (UTC) | ours | peer | ratio |"): "W3 timings of five runs; benchmarks/results/"
                                                                 "w3_selection.json keeps the last run only",
    ("serve.md", "| request | answer | cases tested |"): "counts of the refusal cases in tests/web/test_web.py",
    ("serve.md", "| run | judgments | wall clock |"): "serve load timings (benchmarks/serve_load.py); "
                                                     "benchmarks/results/ is not committed",
    ("cheap-judges.md", "| measure | gold pairs | method | coverage, systems |"): "cheap-judge study (benchmarks/"
                                                                                 "cheap_judges.py), not marked yet",
    ("cheap-judges.md", "| judge | gold pairs | method | coverage, systems |"): "cheap-judge study, nDCG@10 under "
                                                                               "the pair design (benchmarks/"
                                                                               "cheap_judges.py), not marked yet",
    ("benchmarks-2026-11.md", "| replicates | before (`8768cd9`), wall / CPU |"): "W2 timings (third pass); benchmarks/results/ "
                                                                         "is not committed",
    ("uncertainty.md", "| | ours | peer (pandas pools"): "depth experiment timings (benchmarks/depth_experiment.py; "
                                                             "timings are measured under load, marked with the "
                                                             "benchmarks)",
}


def split_row(line: str) -> list[str]:
    """The cells of a markdown table row (``\\|`` is a literal bar inside a cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]]


def tables(text: str) -> list[tuple[int, str | None, list[str], list[list[str]]]]:
    """(line number, marker or None, header cells, body rows) of every table of a page."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and SEPARATOR.match(lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            marker = lines[k].strip() if k >= 0 and MARKER.search(lines[k]) else None
            out.append((i + 1, marker, split_row(lines[i]), [split_row(r) for r in lines[i + 2:j]]))
            i = j
        else:
            i += 1
    return out


def clean(cell: str) -> str:
    return cell.replace("**", "").replace("`", "").strip()


def shows_number(cell: str) -> bool:
    c = clean(cell).replace("%", "").replace(" ", "").rstrip("x")
    return bool(NUMBER.match(c))


def matches(stored: object, cell: str) -> bool:
    """Whether the page cell shows the stored value, rounded as the page rounds it."""
    text = clean(cell)
    if stored is None:
        return text in ("", "(none)", "(not printed)")
    if isinstance(stored, list):
        pair = re.fullmatch(r"\((.+)\)", text) or re.fullmatch(r"(.+?)\s*\((.+)\)", text)
        if ":" in text or pair is None:
            parts = [p.strip() for p in text.split(":")]
        elif text.startswith("("):
            parts = [p.strip() for p in pair.group(1).split(",")]
        else:
            parts = [pair.group(1).strip(), pair.group(2).strip()]
        return len(parts) == len(stored) and all(matches(s, p) for s, p in zip(stored, parts))
    if isinstance(stored, str):
        return text == stored
    num = text.replace(",", "").replace("%", "").strip()
    if not NUMBER.match(num):
        return False
    decimals = len(num.split(".")[1]) if "." in num else 0
    return math.isclose(float(num), float(stored), abs_tol=0.5 * 10 ** -decimals + 1e-9)


# the checker itself, on made-up cells (brute force over the formats the pages use)
@pytest.mark.parametrize("stored, cell, ok", [
    (0.3312, "**0.331**", True), (0.3318, "0.331", False), (1021, "1,021", True), (1021, "1,022", False),
    ([440, 1337], "440 : 1,337", True), ([440, 1337], "440 : 1,338", False), ("pool", "pool", True),
    ("pool", "A", False), (98.62, "98.6", True), (0.0019, "**0.0019**", True), (None, "", True), (0.5, "", False),
    ([0.8821, 0.0214], "**0.882** (0.021)", True), ([0.8821, 0.0214], "0.882 (0.022)", False),
    ([3.0, 0.0], "(3.0, 0.0)", True), ([3.0, 0.37], "(3.0, 0.3)", False), ([3.0, 0.0], "(3.0)", False),
])
def test_matches(stored, cell, ok):
    assert matches(stored, cell) is ok


def marked_tables():
    for page in PAGES:
        for line, marker, header, body in tables(page.read_text()):
            if marker:
                yield page, line, marker, header, body


MARKED = list(marked_tables())


def test_some_tables_are_marked():
    names = {p.name for p, *_ in MARKED}
    assert {"reproductions.md", "selection.md"} <= names, names


@pytest.mark.parametrize("page, line, marker, header, body", MARKED,
                         ids=[f"{p.name}:{line}" for p, line, *_ in MARKED])
def test_marked_table_shows_the_stored_values(page, line, marker, header, body):
    path, name = MARKER.search(marker).groups()
    stored = json.loads((ROOT / path).read_text())["tables"][name]
    assert header == stored["columns"], f"{page.name}:{line}: header differs from {path}#{name}"
    assert len(body) == len(stored["rows"]), f"{page.name}:{line}: {len(body)} rows, {path}#{name} has {len(stored['rows'])}"
    for r, (cells, values) in enumerate(zip(body, stored["rows"])):
        assert len(cells) == len(values), f"{page.name}:{line}: row {r + 1} has {len(cells)} cells"
        for c, (cell, value) in enumerate(zip(cells, values)):
            assert matches(value, cell), (f"{page.name}:{line}: row {r + 1}, column {header[c]!r} shows {cell!r}; "
                                          f"{path}#{name} stores {value!r}")


def test_numeric_tables_are_marked_or_listed():
    unmarked, seen = [], set()
    for page in PAGES:
        for line, marker, header, body in tables(page.read_text()):
            if marker or not any(shows_number(c) for row in body for c in row):
                continue
            head = re.sub(r"\s+", " ", "| " + " | ".join(header) + " |")
            key = next((k for k in UNBACKED if k[0] == page.name and head.startswith(k[1])), None)
            if key is None:
                unmarked.append(f"{page.name}:{line}: {head[:80]}")
            else:
                seen.add(key)
    assert not unmarked, "numeric tables without a <!-- numbers: FILE.json#TABLE --> marker:\n" + "\n".join(unmarked)
    stale = set(UNBACKED) - seen
    assert not stale, f"UNBACKED entries that match no unmarked numeric table (remove them): {sorted(stale)}"


STORED = sorted((ROOT / "docs" / "data").glob("reproduce_*.json"))
#: a stored reproduction is rerun by the slow test when it took at most this long
CHEAP_SECONDS = 60


@pytest.mark.slow
@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
def test_cheap_reproductions_give_the_stored_values(path):
    from pyterrier_noise.reproduce import Reproduction, default_data_dir, run
    rec = Reproduction.load(path)
    if rec.seconds > CHEAP_SECONDS:
        pytest.skip(f"{path.name} took {rec.seconds:.0f} s (> {CHEAP_SECONDS} s): not rerun here")
    data = "synthetic" if "--data synthetic" in rec.command else None
    if data is None and not (default_data_dir() / "trec-covid-round1").is_dir() and "goldberg2017" not in path.name:
        pytest.skip(f"real data not available: {default_data_dir()} is absent")
    again = run(rec.paper, data=data, quick=rec.quick)
    assert [r.quantity for r in again.rows] == [r.quantity for r in rec.rows]
    for old, new in zip(rec.rows, again.rows):
        assert (old.ours is None) == (new.ours is None), old.quantity
        if old.ours is not None:
            assert new.ours == pytest.approx(old.ours, rel=1e-9, abs=1e-12), old.quantity
        assert new.verdict == old.verdict, old.quantity


@pytest.mark.slow
def test_tie_statistics_table_is_reproduced(covid):
    """benchmarks/render_docs.py recomputes the stored tie-statistics table of ties.md exactly."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stored = json.loads((ROOT / "docs" / "data" / "tie_stats.json").read_text())["tables"]["table32"]
    assert module.tie_stats_table() == stored


def _render_docs():
    import importlib.util
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stored(name: str) -> dict:
    return json.loads((ROOT / "docs" / "data" / f"{name}.json").read_text())["tables"]


def test_named_judges_and_table_3_1_are_reproduced():
    """benchmarks/render_docs.py recomputes perturbation.md's named judges (judges.JUDGES through sdt_rates)
    and tied-evaluation.md's Table 3.1 (the engine's tie modes; Yang 2019 thesis, Table 3.1, brute force in test_ties.py)."""
    module = _render_docs()
    assert module.judges_table() == _stored("perturbation_judges")["judges"]
    assert module.table31() == _stored("ties_table31")["table31"]


@pytest.mark.slow
def test_uncertainty_tables_are_reproduced(covid):
    """benchmarks/render_docs.py recomputes uncertainty.md's phi-matching and pool-depth tables exactly."""
    assert _render_docs().uncertainty_tables() == _stored("uncertainty_study")


@pytest.mark.slow
def test_robustness_tables_are_reproduced(covid):
    """benchmarks/render_docs.py recomputes robustness.md's study tables exactly (300 replicates, seed 1)."""
    assert _render_docs().robustness_tables() == _stored("robustness_study")
