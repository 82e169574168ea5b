"""The band, round and ties subcommands of pyterrier-noise (pyterrier_noise.cli.ties).

Reference values: Yang (2019) thesis Table 3.1 and Sec. 3.3.1 bands (seed note 004a, Sec. 3)."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise import read_run, write_trec_run

from cli_helpers import run_cli
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.ties import tie_stats, tie_stats_in_chunks

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

T31 = pd.DataFrame({"qid": "351", "docno": list("DHACMSWBEJ"),
                    "score": [9.8, 9.3, 9.3, 9.3, 8.4, 8.4, 8.2, 8.0, 8.0, 8.0]})




@pytest.fixture
def t31_file(tmp_path) -> Path:
    path = tmp_path / "t31.run"
    write_trec_run(T31.assign(rank=np.arange(10)), path, tag="t31")
    return path


def test_band_writes_geometric_bands_in_trec_eval_order(t31_file, tmp_path):
    out = tmp_path / "banded.gz"
    status, text, _ = run_cli("band", "--rho", "2", t31_file, "--out", out)
    assert status == 0 and "4 bands" in text
    banded = read_run(out)
    # trec_eval's order (score, then docno descending), then bands [1], [2,3], [4..7], [8..10]
    assert list(banded["docno"]) == list("DHCASMWJEB")
    assert list(banded["score"]) == pytest.approx([1, 1 / 2, 1 / 2, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 1 / 4, 1 / 4, 1 / 4])
    assert list(banded["rank"]) == list(range(10))
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # .gz compresses
    first = out.with_suffix("").with_suffix(".txt")
    assert run_cli("band", "--rho", "3/2", t31_file, "--out", first, "--tag", "mine")[0] == 0
    line = first.read_text().splitlines()[2].split()
    assert line[5] == "mine" and float(line[4]) == pytest.approx(1 / 3)   # rho 1.5: [1], [2], [3,4], ...


def test_band_by_given_uses_the_files_rank_column(tmp_path):
    run = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c", "d"], "score": [4.0, 3.0, 2.0, 1.0],
                        "rank": [3, 2, 1, 0]})
    write_trec_run(run, tmp_path / "r.run")
    assert run_cli("band", "--rho", "2", tmp_path / "r.run", "--out", tmp_path / "o.run", "--by", "given")[0] == 0
    out = read_run(tmp_path / "o.run")
    assert list(out["docno"]) == ["d", "c", "b", "a"] and list(out["score"]) == [1.0, 0.5, 0.5, 1 / 3]


def test_band_bad_rho_is_a_sentence(t31_file, tmp_path):
    status, _, err = run_cli("band", "--rho", "0.5", t31_file, "--out", tmp_path / "x")
    assert status == 2 and "pyterrier-noise: error: rho must be >= 1" in err
    status, _, err = run_cli("band", "--rho", "2", tmp_path / "missing.run", "--out", tmp_path / "x")
    assert status == 2 and "no such file" in err


def test_round_decimals_sig_digits_quantum(t31_file, tmp_path):
    status, text, _ = run_cli("round", "--decimals", "0", t31_file, "--out", tmp_path / "r0")
    assert status == 0 and "9 now share their score" in text   # 10 | 9, 9, 9 | 8 x 6
    out = read_run(tmp_path / "r0")
    assert list(out["score"]) == [10.0, 9.0, 9.0, 9.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    assert list(out["docno"]) == list("DHACMSWBEJ")       # ties keep the file's rank order
    assert run_cli("round", "--sig-digits", "1", t31_file, "--out", tmp_path / "r1")[0] == 0
    assert sorted(set(read_run(tmp_path / "r1")["score"])) == [8.0, 9.0, 10.0]
    assert run_cli("round", "--quantum", "0.5", t31_file, "--out", tmp_path / "r2")[0] == 0
    assert list(read_run(tmp_path / "r2")["score"]) == [10.0, 9.5, 9.5, 9.5, 8.5, 8.5, 8.0, 8.0, 8.0, 8.0]


def test_round_needs_exactly_one_rule(t31_file, tmp_path):
    assert run_cli("round", t31_file, "--out", tmp_path / "x")[0] == 2
    assert run_cli("round", "--decimals", "1", "--sig-digits", "2", t31_file, "--out", tmp_path / "x")[0] == 2
    status, _, err = run_cli("round", "--sig-digits", "0", t31_file, "--out", tmp_path / "x")
    assert status == 2 and "--sig-digits must be a positive integer, got 0" in err


def two_runs(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    d = tmp_path / "runs"
    a = pd.DataFrame({"qid": ["1"] * 4 + ["2"] * 3, "docno": list("abcdefg"),
                      "score": [3.0, 2.0, 2.0, 1.0, 5.0, 4.0, 3.0], "rank": [0, 1, 2, 3, 0, 1, 2]})
    b = pd.DataFrame({"qid": ["1"] * 3 + ["2"] * 4, "docno": list("hijklmn"),
                      "score": [1.0, 1.0, 1.0, 4.0, 3.0, 2.0, 2.0], "rank": [0, 1, 2, 0, 1, 3, 2]})
    write_trec_run(a, d / "A")
    write_trec_run(b, d / "B.gz")
    return d, pd.concat([a.assign(name="A"), b.assign(name="B")], ignore_index=True)


def test_ties_summary_matches_tie_stats(tmp_path):
    d, frame = two_runs(tmp_path)
    status, text, _ = run_cli("ties", d)
    assert status == 0
    assert "2 runs, 4 run-topic rankings, 14 documents" in text
    # 3 of 4 rankings have ties; 7 of 14 documents are tied; first ties at ranks 2, 1, 3: gm = 6^(1/3)
    tied = next(line for line in text.splitlines() if line.startswith("tied scores")).split()
    assert tied[2:] == ["100.0", "75.0", "50.0", f"{6 ** (1 / 3):.1f}"]
    status, tsv, _ = run_cli("ties", d / "A", d / "B.gz", "--format", "tsv", "--level", "runs")
    got = pd.read_csv(io.StringIO(tsv), sep="\t")
    ref = tie_stats(frame).runs
    assert list(got["name"]) == ["A", "B"]
    np.testing.assert_allclose(got["share_docs_tied"], ref["share_docs_tied"])
    assert list(got["n_tied_groups"]) == [1, 2]


def test_ties_in_chunks_equals_one_call(tmp_path):
    rng = np.random.default_rng(0)
    runs = {f"r{i}": pd.DataFrame({"qid": np.repeat(["1", "2", "3"], 20), "docno": [f"d{j}" for j in range(60)],
                                   "score": rng.integers(0, 8, 60).astype(float), "rank": np.tile(np.arange(20), 3)})
            for i in range(5)}
    whole = tie_stats(pd.concat([r.assign(name=n) for n, r in runs.items()], ignore_index=True))
    parts = tie_stats_in_chunks(runs, "float64", chunk=2)
    pd.testing.assert_frame_equal(parts.summary, whole.summary, check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(parts.runs.reset_index(drop=True), whole.runs, check_exact=False, rtol=1e-12)


def test_ties_within_a_small_budget_prints_the_same_tables(tmp_path):
    # --memory 1e-9: a chunk of one run file at a time, read and counted alone, then joined
    rng = np.random.default_rng(3)
    for i in range(5):
        write_trec_run(pd.DataFrame({"qid": np.repeat(["1", "2", "3"], 20), "docno": [f"d{j}" for j in range(60)],
                                     "score": rng.integers(0, 6, 60) / 4, "rank": np.tile(np.arange(20), 3)}),
                       tmp_path / "runs" / f"r{i}.gz")
    for level in ("summary", "runs", "topics", "sizes"):
        for fmt in ("text", "tsv"):
            args = ["ties", tmp_path / "runs", "--level", level, "--format", fmt]
            whole = run_cli(*args)
            with pytest.warns(UserWarning, match=r"^5 run file\(s\) need more than the memory budget"):
                small = run_cli(*args, "--memory", "1e-9")
            assert whole[0] == small[0] == 0 and whole[1] == small[1], (level, fmt)
            assert len(whole[1].splitlines()) >= 3
    status, _, err = run_cli("ties", tmp_path / "runs", "--memory", "0")
    assert status == 2 and "--memory: expected a positive number of GiB, got '0'" in err


def test_ties_float32_precision_finds_more_ties(tmp_path):
    run = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "score": [1.0 + 1e-12, 1.0, 0.5]})
    write_trec_run(run, tmp_path / "r")
    _, t64, _ = run_cli("ties", tmp_path / "r", "--level", "runs", "--format", "tsv")
    _, t32, _ = run_cli("ties", tmp_path / "r", "--level", "runs", "--format", "tsv", "--precision", "float32")
    assert pd.read_csv(io.StringIO(t64), sep="\t")["n_tied_docs"].iloc[0] == 0
    assert pd.read_csv(io.StringIO(t32), sep="\t")["n_tied_docs"].iloc[0] == 2


@pytest.mark.parametrize("command", ["band", "round", "ties"])
def test_help_has_examples(command):
    status, text, _ = run_cli(command, "--help")
    assert status == 0 and "examples:" in text and f"pyterrier-noise {command}" in text


@pytest.mark.slow   # real data; test_ties_summary_matches_tie_stats checks the same command on synthetic runs
def test_ties_on_trec_covid_runs():
    runs = DATA / "trec-covid-round1" / "runs"
    if not runs.exists():
        pytest.skip(f"real data not available: {runs} is absent")
    files = [runs / "BITEM_BL.gz", runs / "run1.gz"]
    zero_based = r"BITEM_BL.gz: ranks start at 0 in 30 ranking"     # that run file's own ranks, read as 0-based
    with pytest.warns(CoercionWarning, match=zero_based):
        status, tsv, _ = run_cli("ties", *files, "--format", "tsv", "--level", "runs")
    got = pd.read_csv(io.StringIO(tsv), sep="\t")
    assert status == 0 and list(got["n_topics"]) == [30, 30]
    with pytest.warns(CoercionWarning, match=zero_based):
        frame = pd.concat([read_run(f).assign(name=f.name[:-3]) for f in files], ignore_index=True)
    assert list(got["n_tied_docs"]) == list(tie_stats(frame).runs["n_tied_docs"])
