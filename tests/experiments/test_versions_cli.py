"""``pyterrier-noise versions``: the files it writes are the library's tables; bad input is a sentence."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
from collection_helpers import random_collection
from pyterrier_noise.cli import main
from pyterrier_noise.experiments import versions_experiment
from pyterrier_noise.io import write_trec_qrels, write_trec_run


@pytest.fixture()
def files(tmp_path):
    runs, q = random_collection(4, n_runs=4, n_topics=5)
    q["label"] = q["label"].astype(int)
    b = q.assign(label=np.where(np.random.default_rng(0).random(len(q)) < 0.3, 2 - q["label"], q["label"]))
    paths = []
    for name, run in runs.items():
        write_trec_run(run, tmp_path / name, tag=name)
        paths.append(str(tmp_path / name))
    write_trec_qrels(q, tmp_path / "a.qrels")
    write_trec_qrels(b, tmp_path / "b.qrels")
    return tmp_path, paths, {"nist": q, "second": b}


def test_cli_writes_the_library_tables(files, capsys):
    tmp, paths, versions = files
    out = tmp / "out"
    code = main(["versions", "--qrels", f"nist={tmp / 'a.qrels'}", "--qrels", f"second={tmp / 'b.qrels'}", *paths,
                 "-m", "AP", "-m", "nDCG@10", "--baseline", "run0", "--correction", "holm", "--unjudged", "common",
                 "--noise-resamples", "50", "--noise-floor", "--out", str(out), "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "restricted to the common pool" in printed
    res = versions_experiment(paths, None, versions, ["AP", "nDCG@10"], baseline="run0", correction="holm",
                              unjudged="common")
    scores = pd.read_csv(out / "scores.tsv", sep="\t")
    np.testing.assert_allclose(scores["AP"], res.frame["AP"], rtol=1e-9)
    np.testing.assert_allclose(scores["AP p-value"], res.frame["AP p-value"], rtol=1e-9)
    la = pd.read_csv(out / "label_agreement.tsv", sep="\t", dtype={"qid": str})
    np.testing.assert_allclose(la["kappa"], res.label_agreement["kappa"], rtol=1e-9)
    pairs = pd.read_csv(out / "pairs.tsv", sep="\t")
    assert list(pairs["status"]) == list(res.pairs["status"])
    noise = pd.read_csv(out / "judgment_noise.tsv", sep="\t")
    np.testing.assert_allclose(noise["AP P(flip)"], res.judgment_noise(50)["AP P(flip)"])
    assert len(pd.read_csv(out / "noise_floor.tsv", sep="\t")) == 2 * 6
    info = json.loads((out / "experiment.json").read_text())
    assert info["unjudged"] == "common" and "common pool" in info["policy"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) >= {"scores.tsv", "summary.tsv", "confusion.tsv", "experiment.json", "report.html"}
    assert "Whose judgments?" in (out / "report.html").read_text()


def test_cli_bad_input_is_a_sentence(files, capsys):
    tmp, paths, _ = files
    with pytest.raises(SystemExit):
        main(["versions", "--qrels", str(tmp / "a.qrels"), *paths, "-m", "AP", "--out", str(tmp / "o")])
    assert "expected NAME=FILE" in capsys.readouterr().err
    code = main(["versions", "--qrels", f"a={tmp / 'a.qrels'}", "--qrels", f"b={tmp / 'b.qrels'}", *paths,
                 "-m", "AP", "--baseline", "nope", "--out", str(tmp / "o2")])
    assert code == 2 and "--baseline 'nope'" in capsys.readouterr().err
    code = main(["versions", "--qrels", f"a={tmp / 'a.qrels'}", *paths, "-m", "AP", "--out", str(tmp / "o3")])
    assert code == 2 and "at least 2 versions" in capsys.readouterr().err


def test_a_small_memory_budget_reads_a_file_at_a_time_and_writes_the_same_files(files, monkeypatch):
    """``--memory``: more run files than fit are aligned a chunk of files at a time, for the scores
    and for the noise tables' own alignments (unjudged completions and tie orders), with the same
    bytes in every table."""
    from pyterrier_noise import NoiseWarning
    from pyterrier_noise.engine import chunked
    tmp, paths, _ = files
    sizes = []
    real = chunked.AlignedRuns.build
    monkeypatch.setattr(chunked.AlignedRuns, "build", lambda runs, *a, **k: sizes.append(len(runs)) or real(runs, *a, **k))
    argv = ["versions", "--qrels", f"nist={tmp / 'a.qrels'}", "--qrels", f"second={tmp / 'b.qrels'}", *paths,
            "-m", "AP", "-m", "RBP(p=0.8)", "--baseline", "run0", "--noise-resamples", "30", "--noise-floor",
            "--no-report", "--quiet"]
    assert main([*argv, "--out", str(tmp / "whole")]) == 0
    assert sizes == [len(paths)] * len(sizes) and sizes   # one alignment of every run each time
    sizes.clear()
    with pytest.warns(NoiseWarning) as seen:
        assert main([*argv, "--out", str(tmp / "small"), "--memory", "1e-9"]) == 0
    said = [str(w.message) for w in seen]
    assert any(s.startswith(f"{len(paths)} run file(s) need more than the memory budget") for s in said), said
    # every alignment a file at a time, the unjudged completions of noise_floor.tsv included
    assert set(sizes) == {1} and not any("every run at once" in s for s in said), said
    tables = sorted(p.name for p in (tmp / "whole").glob("*.tsv"))
    assert {"scores.tsv", "judgment_noise.tsv", "noise_floor.tsv"} <= set(tables)
    for name in tables:
        assert (tmp / "whole" / name).read_bytes() == (tmp / "small" / name).read_bytes(), name


def test_versions_experiment_in_chunks_equals_one_pass(files):
    tmp, paths, versions = files
    whole = versions_experiment(paths, None, versions, ["AP", "nDCG@10", "RBP(p=0.8)"], memory=None)
    with pytest.warns(pn.NoiseWarning, match="need more than the memory budget"):
        small = versions_experiment(paths, None, versions, ["AP", "nDCG@10", "RBP(p=0.8)"], memory=1)
    for m in whole.measures:
        np.testing.assert_array_equal(whole.values[m], small.values[m])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the unjudged completions too are aligned a file at a time
        floor = small.noise_floor(n_resamples=20)
    pd.testing.assert_frame_equal(whole.noise_floor(n_resamples=20), floor, check_exact=True)
    with pytest.raises(pn.InputError, match="memory must be a positive number"):
        versions_experiment(paths, None, versions, ["AP"], memory=0)
