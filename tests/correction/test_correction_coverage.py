"""The coverage study behind compare()'s default (benchmarks/compare_coverage.py) and its table in
docs/evidence/correction.md.

The simulated truth is Goldberg et al. (2017)'s eBay setting (Sec 6); the check is that the interval
of the variance that matches the design holds the true difference about 95% of the time, and that
the page shows the stored table."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("compare_coverage", ROOT / "benchmarks" / "compare_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(result):
    return {(r["design"], r["interval"], r["calibration"]): r for r in result["rows"]}


def test_shared_reaches_nominal_coverage_and_independent_over_covers():
    rows = _rows(_load().simulate(n_experiments=300, seed=3))
    # 300 experiments: Monte Carlo SE of a 95% coverage is 0.013, so 0.91..0.99 is +-3 SE
    shared = rows[("one sample", "difference a - b", "shared")]
    assert 0.91 <= shared["coverage"] <= 0.99
    # one calibration for both: its error cancels in the difference, the paper's Eq 10 counts it twice
    indep = rows[("one sample", "difference a - b", "independent")]
    assert indep["coverage"] > 0.995
    assert indep["mean_se"] > 10 * indep["sd_of_difference"]
    assert shared["mean_se"] == pytest.approx(shared["sd_of_difference"], rel=0.15)
    # own calibration samples: the independent variance is the right one
    own = rows[("own samples", "difference a - b", "independent")]
    assert 0.91 <= own["coverage"] <= 0.995
    assert own["mean_se"] == pytest.approx(own["sd_of_difference"], rel=0.15)
    assert ("own samples", "difference a - b", "shared") not in rows


def test_ebay_both_ways():
    e = _load().ebay()
    # Goldberg et al. (2017), Sec 6: exact arithmetic of Eq 7/10/11 gives 0.854; the paper prints 0.841
    assert e["independent"]["p_value"] == pytest.approx(0.8541, abs=1e-4)
    assert e["shared"]["p_value"] == pytest.approx(0.0171, abs=1e-4)
    assert e["paper_p_value"] == 0.841


def test_docs_table_shows_the_stored_results():
    stored = json.loads((ROOT / "benchmarks" / "results" / "compare_coverage.json").read_text())
    page = (ROOT / "docs" / "evidence" / "correction.md").read_text()
    assert f"simulates\n{stored['n_experiments']:,} experiments" in page or \
        f"{stored['n_experiments']:,} experiments" in page
    names = {"one sample": "one calibration sample for both", "one sample, no difference": "one sample, equal true P@3",
             "own samples": "each system its own sample"}
    table = [[c.strip() for c in line.strip().strip("|").split("|")] for line in page.splitlines()
             if line.startswith("| ")]
    shown = 0
    for r in stored["rows"]:
        if r["design"] == "one sample, no difference" and r["interval"] == "system a":
            continue
        if r["design"] == "own samples" and r["interval"] == "system a":
            continue
        interval = "system a" if r["interval"] == "system a" else "difference"
        calib = "" if r["calibration"] == "-" else f"`{r['calibration']}`"
        cells = [names[r["design"]], interval, calib, f"{r['coverage']:.3f}"]
        if "mean_se" in r:
            cells += [f"{r['mean_se']:.4f}", f"{r['sd_of_difference']:.4f}"]
        else:
            cells += ["", ""]
        assert cells in table, cells
        shown += 1
    assert shown == 6
    e = stored["ebay"]
    assert f"| {e['independent']['p_value']:.4f} |" in page and f"| {e['shared']['p_value']:.4f} |" in page
