"""The `pyterrier-noise pairwise` command (pyterrier_noise.cli.pairwise) on pyterrier_noise.crowd."""
from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.crowd import aggregate, read_pairwise, simulate_crowd, workers_path


def parser():
    p = argparse.ArgumentParser(prog="pyterrier-noise")
    sub = p.add_subparsers(dest="command")
    from pyterrier_noise.cli.pairwise import register_cli
    register_cli(sub)
    return p


def run(argv):
    args = parser().parse_args(argv)
    return args.handler(args)


def test_cli_simulate_and_aggregate(tmp_path, coll, capsys):
    qpath = tmp_path / "true.qrels"
    pn.write_trec_qrels(coll.qrels[coll.qrels.qid.isin(["1", "2"])], qpath)
    crowd_csv = tmp_path / "crowd.csv"
    assert run(["pairwise", "simulate", str(qpath), "--out", str(crowd_csv), "--seed", "3", "--missing", "0.05"]) == 0
    expected_crowd = simulate_crowd(pn.read_qrels(qpath), seed=3, missing=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        back = read_pairwise(crowd_csv)
        assert back.left.tolist() == expected_crowd.left.tolist()
        out = tmp_path / "crowd.qrels"
        assert run(["pairwise", "aggregate", str(crowd_csv), "--method", "combined", "--out", str(out),
                    "--left-bias", "0.04"]) == 0
        want = aggregate(back, "combined", left_bias=0.04)
    got = pn.read_qrels(out, fractional="keep")          # crowd magnitudes are graded, fractional labels
    np.testing.assert_allclose(got.label.to_numpy(), want.label.to_numpy(), rtol=1e-15)
    assert got.docno.tolist() == want.docno.tolist()
    wq = pd.read_csv(workers_path(out), sep="\t", dtype={"qid": str})
    assert workers_path(out).name == "crowd.qrels.workers.tsv"
    assert list(wq.columns) == ["qid", "worker", "groups", "pairs", "docs", "transitivity_inconsistency",
                                "absolute_inconsistency", "gold_pairs", "gold_accuracy", "left_rate"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)
        graded = tmp_path / "graded.qrels.gz"
        assert run(["pairwise", "aggregate", str(crowd_csv), "--reference", str(qpath), "--left-bias", "auto",
                    "--out", str(graded)]) == 0
    g = pn.read_qrels(graded)
    assert set(g.label) <= set(coll.qrels.label)
    assert (tmp_path / "graded.qrels.workers.tsv").exists()
    assert "left bias:" in capsys.readouterr().out


def test_cli_help_has_examples_and_errors_are_input_errors(tmp_path, capsys):
    for argv in (["pairwise", "--help"], ["pairwise", "aggregate", "--help"], ["pairwise", "simulate", "--help"]):
        with pytest.raises(SystemExit):
            parser().parse_args(argv)
        assert "examples:" in capsys.readouterr().out
    with pytest.raises(InputError, match="no such file"):
        run(["pairwise", "aggregate", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "q")])
    with pytest.raises(InputError, match="--accuracy"):
        run(["pairwise", "simulate", "--accuracy", "0.6,0.7,0.8", "--out", str(tmp_path / "c.csv")])
