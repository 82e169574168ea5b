"""Evaluating run files a chunk at a time (a memory budget): the same values as all at once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyterrier_noise import InputError, NoiseWarning
from pyterrier_noise.io import list_run_files
from pyterrier_noise.io.chunks import BYTES_PER_TEXT_BYTE, run_file_chunks, text_bytes
from pyterrier_noise.measures import evaluate_arrays
from pyterrier_noise.synthetic import default_collection

MEASURES = ["RBP(p=0.8)", "AP", "nDCG@10", "P@10", "INST(T=3,max_rel=2)", "NumRet"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = default_collection().write_trec(tmp_path_factory.mktemp("coll"))
    return list_run_files(Path(root) / "runs"), Path(root) / "qrels.txt"


def test_chunks_follow_the_budget_and_keep_the_order(files):
    runs, _ = files
    sizes = [text_bytes(f) for f in runs]
    budget = 4.0 * (sizes[0] + sizes[1]) + 1           # two files' worth per chunk
    chunks = run_file_chunks(runs, budget)
    assert [f for c in chunks for f in c] == runs        # every file once, in order
    assert all(len(c) >= 1 for c in chunks) and max(len(c) for c in chunks) <= 3 and len(chunks) > 1
    assert run_file_chunks(runs, None) == [runs] and run_file_chunks(runs, 1) == [[f] for f in runs]
    with pytest.raises(InputError, match="memory must be a positive number"):
        run_file_chunks(runs, 0)


@pytest.mark.parametrize("perquery", [False, True])
def test_chunked_evaluation_equals_one_pass(files, perquery):
    runs, qrels = files
    whole = evaluate_arrays(runs, qrels, MEASURES, perquery=perquery, memory=None)
    with pytest.warns(NoiseWarning, match=rf"^{len(runs)} run file\(s\) need more than the memory budget of 1 bytes"):
        chunked = evaluate_arrays(runs, qrels, MEASURES, perquery=perquery, memory=1)   # one file a chunk
    assert chunked.run_names == whole.run_names and chunked.measures == whole.measures
    assert chunked.qids == whole.qids
    np.testing.assert_array_equal(chunked.value, whole.value)
    np.testing.assert_array_equal(chunked.residual, whole.residual)


def test_eval_memory_option_gives_the_same_output(files):
    runs, qrels = files
    def run(*extra):
        return subprocess.run([sys.executable, "-m", "pyterrier_noise.cli", "eval", str(qrels), str(runs[0].parent),
                               "-m", "AP", "-m", "RBP(p=0.8)", "--per-query", "--format", "tsv", *extra],
                              capture_output=True, text=True)
    one, chunked = run(), run("--memory", "0.000001")
    assert one.returncode == 0 and chunked.returncode == 0, chunked.stderr
    assert one.stdout == chunked.stdout and one.stdout.count("\n") > 100
    # every file is over so small a budget: one warning says so, once
    assert chunked.stderr.count("need more than the memory budget") == 1, chunked.stderr
    assert "need more than" not in one.stderr
    bad = run("--memory", "0")
    assert bad.returncode == 2 and "--memory" in bad.stderr and "positive number of GiB" in bad.stderr


def test_a_file_larger_than_the_budget_is_named_once(files, tmp_path):
    """A chunk holds at least one file: a file whose reading needs more than the budget is read
    whole, and a warning names the largest such file and the count (the command line's too)."""
    runs, qrels = files
    sizes = [text_bytes(f) for f in runs]
    big = max(range(len(runs)), key=sizes.__getitem__)
    budget = BYTES_PER_TEXT_BYTE * sizes[big] - 1       # only the largest file is over
    with pytest.warns(NoiseWarning, match="need more than the memory budget") as seen:
        res = evaluate_arrays(runs, qrels, ["AP"], memory=budget)
    msgs = [str(w.message) for w in seen if "memory budget" in str(w.message)]
    over = sum(BYTES_PER_TEXT_BYTE * s > budget for s in sizes)
    assert len(msgs) == 1 and msgs[0].startswith(f"{over} run file(s)") and str(runs[big]) in msgs[0]
    np.testing.assert_array_equal(res.value, evaluate_arrays(runs, qrels, ["AP"], memory=None).value)
    cli = subprocess.run([sys.executable, "-m", "pyterrier_noise.cli", "eval", str(qrels), str(runs[big]), "-m", "AP",
                          "--memory", str(budget / 2 ** 30)], capture_output=True, text=True)
    assert cli.returncode == 0 and cli.stderr.count("need more than the memory budget") == 1, cli.stderr
