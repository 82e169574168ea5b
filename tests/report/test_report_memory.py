"""``report --memory``: the scores, the noisy judges and the tie statistics read a chunk of run files at
a time write the same page."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pyterrier_noise import NoiseWarning
from pyterrier_noise.cli import main
from pyterrier_noise.io import list_run_files
from pyterrier_noise.synthetic import default_collection


def test_report_in_chunks_writes_the_same_page(tmp_path):
    root = Path(default_collection().write_trec(tmp_path / "coll"))
    runs = list_run_files(root / "runs")
    argv = ["report", str(root / "qrels.txt"), str(root / "runs"), "-m", "AP", "-m", "nDCG@10", "--quiet",
            "--noisy-judges", "--replicates", "20", "--tie-stats"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    with pytest.warns(NoiseWarning) as seen:
        assert main([*argv, "--out", str(tmp_path / "small"), "--memory", "1e-9"]) == 0   # one file a chunk
    said = [str(w.message) for w in seen]
    # the readings of the scores, of the noisy judges and of the tie statistics say so, once each (the
    # command prints it once, with a count)
    assert sum(s.startswith(f"{len(runs)} run file(s) need more than the memory budget") for s in said) == 3, said
    page = [re.sub(r"<footer>.*?</footer>", "", (tmp_path / d / "report.html").read_text(), flags=re.S)
            for d in ("whole", "small")]
    assert page[0] == page[1] and "nDCG@10" in page[0] and "Noisy judges" in page[0] and "Ties in the runs" in page[0] and len(page[0]) > 10_000
