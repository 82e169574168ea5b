"""The ``reproduce`` harness: records, the command, and the papers' exact numbers.

Exact numbers are asserted here with their source: the eBay example (Goldberg et al. 2017, Sec. 6),
Table 3.3 (Yang 2019 thesis), the RBP worked example (Moffat, Webber and Zobel 2007, Sec. 2).  The
data experiments run quickly on the synthetic collection; on TREC-COVID they are slow tests.
"""
from __future__ import annotations

import json

import pytest

from cli_helpers import run_cli
from pyterrier_noise import InputError
from pyterrier_noise.reproduce import (FAILS, HOLDS, PAPERS, REPRODUCED, VERDICTS, Reproduction, Row, default_data_dir,
                                       resolve_data, run)
from pyterrier_noise.reproduce.page import render_evidence, render_page

#: every paper; a whole paper's reproduction on the synthetic collection is a slow test, except goldberg2017
#: (the paper's own numbers, which the quick run keeps)
EACH_PAPER = [p if p == "goldberg2017" else pytest.param(p, marks=pytest.mark.slow) for p in PAPERS]


def _row(rec: Reproduction, quantity: str) -> Row:
    return next(r for r in rec.rows if r.quantity == quantity)


def test_ebay_numbers_are_the_papers(reproduced):
    rec = reproduced("goldberg2017")
    # Goldberg et al. 2017, Sec. 6: corrected P@3 0.805 (SE 0.0903) and 0.828 (SE 0.0923); ours unrounded
    assert _row(rec, "corrected P@3, data set a").ours == pytest.approx(0.804698, abs=1e-6)
    assert _row(rec, "SE of corrected P@3, a").ours == pytest.approx(0.090288, abs=1e-6)
    assert _row(rec, "corrected P@3, data set b").ours == pytest.approx(0.828442, abs=1e-6)
    assert _row(rec, "SE of corrected P@3, b").ours == pytest.approx(0.092350, abs=1e-6)
    # Eq 10/11 with independent calibrations: 0.854 by exact arithmetic; the paper prints 0.841
    p = _row(rec, "corrected p-value of a vs b, Eq 10-11 (the calibrations treated as independent)")
    assert p.ours == pytest.approx(0.85413, abs=1e-4) and p.paper == 0.841 and p.verdict != REPRODUCED
    # Algorithm 2 (Sec. 5): the naive mean is 0.4 * 0.7 + 0.2 = 0.48, the corrected interval covers ~95%
    assert _row(rec, "naive P@10, mean over experiments").ours == pytest.approx(0.48, abs=0.003)
    assert _row(rec, "coverage of the corrected 95% interval (Eq 7)").ours == pytest.approx(0.95, abs=0.02)


def test_table_3_3_and_the_rbp_worked_example():
    from pyterrier_noise.reproduce.moffat2007 import worked_example_rows
    from pyterrier_noise.reproduce.yang2019 import TABLE_3_3, table33_rows
    rows = table33_rows()
    assert len(rows) == 15 and all(r.verdict == REPRODUCED for r in rows)
    # Yang 2019 thesis, Table 3.3, rho = 2: delta RR 0.0833, delta RBP(0.5) 0.1016, delta RBP(0.85) 0.0971
    assert [round(r.ours, 4) for r in rows[-3:]] == list(TABLE_3_3[2.0])
    # Moffat, Webber and Zobel 2007, Sec. 2: 0.2 (0.8 + 0.8^2 + 0.8^5 + 0.8^9) and 0.2 * 0.8^6 + 0.8^10
    base, residual, upper = (r.ours for r in worked_example_rows())
    assert base == pytest.approx(0.2 * (0.8 + 0.8 ** 2 + 0.8 ** 5 + 0.8 ** 9), abs=1e-12)
    assert residual == pytest.approx(0.2 * 0.8 ** 6 + 0.8 ** 10, abs=1e-12)
    assert upper == pytest.approx(base + residual, abs=1e-12)


@pytest.mark.parametrize("paper", EACH_PAPER)
def test_every_paper_runs_quickly_on_the_synthetic_collection(reproduced, paper):
    rec = reproduced(paper, "synthetic")
    assert rec.paper == paper and rec.rows and rec.quick
    assert all(r.verdict in VERDICTS for r in rec.rows)
    assert "--quick" in rec.command
    if paper != "goldberg2017":
        assert "--data synthetic" in rec.command and "synthetic" in rec.data
    frame = rec.frame
    assert len(frame) == len(rec.rows) + len(rec.not_yet)
    assert all(v == "not yet reproduced" for v in frame["verdict"].iloc[len(rec.rows):])
    again = Reproduction.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert again.rows == rec.rows and again.not_yet == rec.not_yet and again.claims == rec.claims


@pytest.mark.slow   # whole papers on the synthetic collection
def test_synthetic_shapes_that_must_hold(reproduced):
    # Yang 2019, Sec. 3.3.4: banding at rho = 2 keeps the conclusion of at least 96% of the pairs;
    # on the synthetic collection every measure does (brute force over its 190 pairs)
    rec = reproduced("yang2019", "synthetic")
    kept = [r for r in rec.rows if r.quantity.startswith("pairs keeping")]
    assert len(kept) == 4 and all(0.96 <= r.ours <= 1 for r in kept)
    # Rashidi et al. 2023, Figs. 7-8: RBO of identical orderings is 1 - 0.9^20 at most for 20 systems
    rec = reproduced("rashidi2023", "synthetic")
    rbo = [r.ours for r in rec.rows if r.quantity.startswith("RBO (p = 0.9")]
    assert all(0 < v <= 1 - 0.9 ** 20 + 1e-12 for v in rbo)


def test_missing_data_is_a_clear_error(tmp_path, monkeypatch, reproduced):
    monkeypatch.setenv("PYTERRIER_NOISE_DATA", str(tmp_path / "nowhere"))
    assert default_data_dir() == tmp_path / "nowhere"
    with pytest.raises(InputError, match="nowhere/trec-covid-round1: no such directory.*PYTERRIER_NOISE_DATA"):
        run("rashidi2023", quick=True)
    # the paper's own numbers need no data folder: the shared record was computed with none (conftest.py)
    assert reproduced("goldberg2017").rows
    with pytest.raises(InputError, match="trec-covid-round1.*--data synthetic"):
        resolve_data(tmp_path)
    status, out, err = run_cli("reproduce", "moffat2007", "--data", tmp_path, "--quick")
    assert status == 2 and "no such directory" in err and "trec-covid-round1" in err
    with pytest.raises(InputError, match="unknown paper 'smith2020'"):
        run("smith2020")


@pytest.mark.slow   # every paper through the command
def test_command_writes_records_and_a_page(tmp_path):
    status, out, err = run_cli("reproduce", "goldberg2017", "--quick", "--out", tmp_path / "o", "--quiet")
    assert status == 0, err
    assert "0.8047" in out and "Headline claims:" in out and "Not yet reproduced:" in out and "569,154" in out
    rec = Reproduction.load(tmp_path / "o" / "reproduce_goldberg2017.json")
    assert _row(rec, "corrected P@3, data set b").ours == pytest.approx(0.828442, abs=1e-6)
    page = render_evidence([rec])
    assert "<!-- numbers: docs/data/reproduce_goldberg2017.json#summary -->" in page
    assert ("| corrected P@3, data set a | 0.805 | Sec. 6 (Eq 5) | 0.8047 | 0.0005 | the paper's eBay summary "
            "statistics and calibration (Sec. 6) | reproduced |") in page
    assert "<!-- numbers: docs/data/reproduce_goldberg2017.json#checks -->" in page
    status, out, err = run_cli("reproduce", "--help")
    assert status == 0 and all(p in out for p in PAPERS)


def test_quick_on_trec_covid(covid):
    rec = run("moffat2007", data=covid.parent, quick=True)
    assert "TREC-COVID round 1 (143 submitted runs" in rec.data


def test_yang2019_on_trec_covid():
    """On the stored record of yang2019 on TREC-COVID: tests/docs/test_docs_numbers.py reruns it and holds the
    code's rows equal to it (yang2019's ``--quick`` changes none of its rows), so it is not computed twice."""
    from pyterrier_noise.reproduce.page import json_path
    rec = Reproduction.load(json_path("yang2019"))
    assert "TREC-COVID round 1 (143 submitted runs" in rec.data
    # Yang 2019 Sec. 3.3.4 reproduces on TREC-COVID (docs/ties.md: >= 96.8% at rho = 2)
    kept = [r for r in rec.rows if r.quantity.startswith("pairs keeping")]
    assert len(kept) == 4 and all(r.ours >= 0.96 for r in kept)
    # TREC-COVID round 1 judged 60 runs to depth 5 and none to depth 10: the deepest reference is depth 5
    assert any(r.quantity == "AP discrimination ratio (%), depth-5 pool" for r in rec.rows)


def test_command_line_copy_of_the_papers_agrees_with_the_library():
    from pyterrier_noise.cli import reproduce as cli_reproduce
    assert cli_reproduce.PAPERS == PAPERS


def test_reproductions_page_is_generated_from_the_stored_records():
    """docs/reproductions.md and docs/evidence/reproductions.md are exactly what ``reproduce all --write-docs``
    renders from docs/data/."""
    from pyterrier_noise.reproduce.page import DOCS, json_path
    stored = [Reproduction.load(json_path(p)) for p in PAPERS]
    assert (DOCS / "reproductions.md").read_text() == render_page(stored)
    assert (DOCS / "evidence" / "reproductions.md").read_text() == render_evidence(stored)
    assert [r.paper for r in stored] == list(PAPERS) and not any(r.quick for r in stored)


def test_compare_coverage_in_the_ebay_setting(reproduced):
    """The coverage study of benchmarks/compare_coverage.py, quick: with one calibration sample for both
    systems the shared-calibration interval of the difference covers about 95% (500 experiments: 3 Monte
    Carlo SEs = 0.029), while Goldberg et al.'s Eq 10-11 (independent calibrations) always covers."""
    rows = {r.quantity: r for r in reproduced("goldberg2017").rows}
    what = "coverage of compare()'s 95% interval of the difference, one calibration sample for both systems, "
    shared, indep = rows[what + 'calibration="shared"'], rows[what + 'calibration="independent"']
    assert abs(shared.ours - 0.95) <= 0.03 and shared.verdict == HOLDS
    assert indep.ours >= 0.99 and indep.verdict == FAILS


@pytest.mark.slow   # whole papers on the synthetic collection
def test_new_analyses_on_the_synthetic_collection(reproduced):
    from pyterrier_noise.reproduce.data import load_collection
    from pyterrier_noise.reproduce.moffat2007 import overlap_rows
    from pyterrier_noise.selection import simulate
    rec = reproduced("webber2012", "synthetic")
    # every proper per-topic fit's slope class equals statsmodels' Logit's (Webber et al. 2012, Table 4)
    assert _row(rec, "slope classes agreeing with statsmodels' Logit (share of proper models)").ours == 1.0
    assert sum(r.source == "Table 7" for r in rec.rows) == 25   # both blocks + the spread
    rec = reproduced("rashidi2023", "synthetic")
    # RBO truncated at depth 50 over the 20 synthetic systems: at most (1 - 0.9) sum_{d<=20} 0.9^(d-1) = 1 - 0.9^20
    rbo = [r.ours for r in rec.rows if r.quantity.startswith("RBO (p = 0.9, truncated")]
    assert len(rbo) == 2 and all(0 < v <= 1 - 0.9 ** 20 + 1e-12 for v in rbo)
    coll = load_collection("synthetic")
    rows, table = overlap_rows(coll.runs, coll.qrels, 120, "synthetic")
    sel = {p: simulate(coll.runs, coll.qrels, method="C", checkpoints=[120], p_select=p, p_eval=[p],
                       significance=False).judgments.iloc[:120] for p in (0.5, 0.8, 0.95)}
    sets = {p: set(zip(s["qid"].astype(str), s["docno"].astype(str))) for p, s in sel.items()}
    # brute force: Python set intersections of the three selections (Moffat, Webber and Zobel 2007, Table 3 layout)
    assert table["rows"] == [[f"{a:g}", *[len(sets[a] & sets[b]) for b in (0.5, 0.8, 0.95)]] for a in (0.5, 0.8, 0.95)]
    assert rows[0].ours == len(sets[0.5] & sets[0.8]) / 120
