"""``--cache DIR`` and ``--memory GIB`` on the commands that read run files: the same output; with a
cache, a second command on the same files parses no text (pyterrier_noise.io.cache)."""
from __future__ import annotations

import os

import pytest

import pyterrier_noise as pn
from pyterrier_noise import NoiseWarning
from pyterrier_noise.io import reader as reader_module

from cli_helpers import run_cli
from collection_helpers import random_collection


def test_eval_with_a_cache_prints_the_same_and_parses_once(tmp_path, monkeypatch):
    runs, qrels = random_collection(23, n_runs=3, n_topics=5)
    for name, frame in runs.items():
        pn.write_trec_run(frame, tmp_path / "runs" / f"{name}.gz")
    pn.write_trec_qrels(qrels, tmp_path / "qrels.txt")
    parsed = []
    real = reader_module.parse_arrow_run
    monkeypatch.setattr(reader_module, "parse_arrow_run", lambda data: parsed.append(1) or real(data))
    args = ["eval", tmp_path / "qrels.txt", tmp_path / "runs", "-m", "RBP(p=0.8)", "-m", "AP", "--per-query",
            "--format", "tsv"]
    plain = run_cli(*args)
    assert plain[0] == 0 and len(parsed) == 3
    parsed.clear()
    first = run_cli(*args, "--cache", tmp_path / "cache")
    assert len(parsed) == 3 and len(list((tmp_path / "cache").glob("*.arrow"))) == 3
    parsed.clear()
    second = run_cli(*args, "--cache", tmp_path / "cache")
    assert parsed == []
    assert plain[1] == first[1] == second[1] and plain[1].count("\n") == 1 + 3 * 5 * 2
    assert "PYTERRIER_NOISE_CACHE" not in os.environ   # the option's environment ends with the command


def test_robustness_within_a_small_budget_writes_the_same_tables(tmp_path, monkeypatch):
    runs, qrels = random_collection(29, n_runs=4, n_topics=6)
    for name, frame in runs.items():
        pn.write_trec_run(frame, tmp_path / "runs" / name)
    pn.write_trec_qrels(qrels, tmp_path / "qrels.txt")
    parsed = []
    real = reader_module.parse_arrow_run
    monkeypatch.setattr(reader_module, "parse_arrow_run", lambda data: parsed.append(1) or real(data))
    args = ["robustness", tmp_path / "qrels.txt", tmp_path / "runs", "-m", "AP", "-m", "RBP(p=0.8)",
            "--replicates", "9", "--no-plots", "--quiet"]
    assert run_cli(*args, "--out", tmp_path / "whole")[0] == 0
    with pytest.warns(NoiseWarning, match=r"^4 run file\(s\) need more than the memory budget"):   # each read whole
        small = run_cli(*args, "--out", tmp_path / "small", "--memory", "1e-9", "--cache", tmp_path / "cache")
    assert small[0] == 0, small[2]
    assert len(parsed) == 8
    with pytest.warns(NoiseWarning, match="need more than the memory budget"):
        again = run_cli(*args, "--out", tmp_path / "again", "--memory", "1e-9", "--cache", tmp_path / "cache")
    assert again[0] == 0 and len(parsed) == 8   # every file from the cache
    tables = sorted(p.name for p in (tmp_path / "whole").glob("*.tsv"))
    assert "summary.tsv" in tables and "systems.tsv" in tables
    for name in tables:
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "small" / name).read_bytes() \
            == (tmp_path / "again" / name).read_bytes(), name
    assert run_cli(*args, "--out", tmp_path / "x", "--memory", "0")[0] == 2   # a usage error
