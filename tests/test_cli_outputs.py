"""Output files and directories of the command line (pyterrier_noise._output): a directory holding
someone else's files is refused, --force replaces exactly what an earlier manifest lists, files are
written atomically, the manifest lists every file written, and an unwritable output or an unusable
rounding is a sentence with exit status 2, never a traceback."""
from __future__ import annotations

import json
import os
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest

from pyterrier_noise import read_qrels
from pyterrier_noise._output import TMP_PREFIX, OutputDirectory, atomic_file
from pyterrier_noise._validation import InputError

from cli_helpers import run_cli
from pyterrier_noise.ties import ScoreRounding, round_scores

QRELS = "".join(f"{q} 0 d{d} {(q + d) % 3}\n" for q in (1, 2, 3) for d in range(1, 9))




@pytest.fixture
def files(tmp_path) -> Path:
    (tmp_path / "qrels.txt").write_text(QRELS)
    for i in (1, 2, 3):
        lines = [f"{q} Q0 d{d} {r} {10 - r + i / 10:.2f} run{i}\n" for q in (1, 2, 3)
                 for r, d in enumerate(sorted(range(1, 9), key=lambda d: (d * 7 + q * 3 + i * 5) % 11), 1)]
        (tmp_path / f"run{i}").write_text("".join(lines))
    return tmp_path


def perturb(files: Path, out: Path, n: int, *extra: object) -> tuple[int, str, str]:
    return run_cli("perturb", files / "qrels.txt", "--model", "random", "--tpr", "0.9", "--fpr", "0.1",
                   "--replicates", n, "--quiet", "--out", out, *extra)


def listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_perturb_over_another_experiment_is_refused_then_replaced_with_force(files):
    out = files / "reps"
    assert perturb(files, out, 30)[0] == 0
    assert len(list(out.glob("replicate-*.qrels"))) == 30
    status, _, err = perturb(files, out, 5, "--seed", "1")
    assert status == 2 and "earlier output of `perturb`" in err and "--force" in err and "Traceback" not in err
    assert len(list(out.glob("replicate-*.qrels"))) == 30            # untouched
    status, _, err = perturb(files, out, 5, "--seed", "1", "--force")
    assert status == 0, err
    names = [f"replicate-000{i}.qrels" for i in range(1, 6)]
    assert listing(out) == sorted(names + ["manifest.json"])          # replicates 6-30 are gone
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "perturb" and manifest["files"] == names and manifest["seed"] == 1


def test_foreign_files_are_refused_even_with_force(files):
    out = files / "reps"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    (out / "b.qrels").write_text("1 0 d1 1\n")
    for extra in ((), ("--force",)):
        status, _, err = perturb(files, out, 2, *extra)
        assert status == 2 and "did not write" in err and "b.qrels, notes.txt" in err
    assert listing(out) == ["b.qrels", "notes.txt"] and (out / "notes.txt").read_text() == "mine\n"


def test_another_commands_output_is_foreign(files):
    out = files / "o"
    assert run_cli("report", files / "qrels.txt", files / "run1", files / "run2", "--out", out)[0] == 0
    assert json.loads((out / "manifest.json").read_text())["files"] == ["report.html"]
    status, _, err = perturb(files, out, 2, "--force")
    assert status == 2 and "manifest.json" in err and "report.html" in err


def test_a_failed_run_with_force_leaves_the_earlier_output(files):
    out = files / "reps"
    assert perturb(files, out, 3)[0] == 0
    before = {n: (out / n).read_bytes() for n in listing(out)}
    status, _, err = run_cli("perturb", files / "qrels.txt", "--model", "random", "--tpr", "1.5", "--fpr", "0.1",
                             "--out", out, "--force")
    assert status == 2 and "tpr" in err
    assert {n: (out / n).read_bytes() for n in listing(out)} == before


def test_robustness_force_without_plots_leaves_no_old_png(files):
    out = files / "robust"
    argv = ["robustness", files / "qrels.txt", files / "run1", files / "run2", files / "run3", "--model", "random",
            "--tpr", "0.9", "--fpr", "0.1", "-n", "3", "-m", "AP", "--quiet", "--out", out]
    assert run_cli(*argv)[0] == 0
    assert any(n.endswith(".png") for n in listing(out))
    status, _, err = run_cli(*argv, "--no-plots")
    assert status == 2 and "--force" in err
    status, _, err = run_cli(*argv, "--no-plots", "--force")
    assert status == 0, err
    names = listing(out)
    assert not any(n.endswith(".png") for n in names)
    manifest = json.loads((out / "manifest.json").read_text())
    # the manifest lists every file written, and every file there but itself
    assert sorted(manifest["files"]) == [n for n in names if n != "manifest.json"]
    assert "experiment.json" in manifest["files"] and "summary.tsv" in manifest["files"]


def test_report_twice_needs_force(files):
    argv = ["report", files / "qrels.txt", files / "run1", files / "run2", "--out", files / "r"]
    assert run_cli(*argv)[0] == 0
    assert run_cli(*argv)[0] == 2
    status, out, _ = run_cli(*argv, "--force")
    assert status == 0 and f"Report: {files / 'r' / 'report.html'}" in out
    assert listing(files / "r") == ["manifest.json", "report.html"]


def test_no_temporary_names_are_left(files):
    assert perturb(files, files / "reps", 4)[0] == 0
    assert run_cli("band", "--rho", "2", files / "run1", "--out", files / "band.gz")[0] == 0
    assert not [p for p in files.rglob("*") if p.name.startswith(TMP_PREFIX)]
    assert len(read_qrels(files / "reps" / "replicate-0004.qrels")) > 0


def test_atomic_file_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_file(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed mid-write")
    assert path.read_text() == "old\n" and listing(tmp_path) == ["out.txt"]


def test_output_directory_api(tmp_path):
    d = OutputDirectory(tmp_path / "new" / "dir", "demo")
    d.write("a.tsv", "x\n")
    with d.staging() as stage:
        (stage / "b.png").write_bytes(b"png")
    d.finish({"data": "synthetic"})
    m = json.loads((tmp_path / "new" / "dir" / "manifest.json").read_text())
    assert m == {"command": "demo", "data": "synthetic", "files": ["a.tsv", "b.png"]}
    with pytest.raises(InputError, match="--force"):
        OutputDirectory(tmp_path / "new" / "dir", "demo")
    d = OutputDirectory(tmp_path / "new" / "dir", "demo", force=True)
    d.write("c.tsv", "y\n")
    d.finish()
    assert listing(tmp_path / "new" / "dir") == ["c.tsv", "manifest.json"]


@pytest.mark.parametrize("command", [
    ["band", "--rho", "2", "{run}", "--out"],
    ["round", "--decimals", "1", "{run}", "--out"],
    ["perturb", "{qrels}", "--model", "removal", "--fraction", "0.2", "--out"],
    ["report", "{qrels}", "{run}", "--out"],
    ["select", "--qrels", "{qrels}", "--budget", "3", "--quiet", "{run}", "--out"],
    ["pairwise", "simulate", "{qrels}", "--out"],
    ["phi-match", "{qrels}", "{run}", "{run2}", "-m", "AP", "--quiet", "--grid", "0.5,0.8", "--plot"],
])
def test_an_output_under_a_file_is_a_sentence(files, command):
    blocker = files / "a-file"
    blocker.write_text("x\n")
    subs = {"{run}": files / "run1", "{run2}": files / "run2", "{qrels}": files / "qrels.txt"}
    argv = [subs.get(a, a) for a in command] + [blocker / "sub" / "out"]
    status, _, err = run_cli(*argv)
    assert status == 2 and "Traceback" not in err and str(blocker) in err, err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes in a mode-0555 directory")
def test_a_read_only_directory_is_a_sentence(files):
    ro = files / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        status, _, err = perturb(files, ro / "reps", 2)
        assert status == 2 and str(ro) in err
        status, _, err = run_cli("band", "--rho", "2", files / "run1", "--out", ro / "x.run")
        assert status == 2 and str(ro) in err
    finally:
        ro.chmod(0o755)


def test_an_oserror_in_a_handler_is_a_sentence_naming_the_path(monkeypatch, files):
    import pyterrier_noise.cli.ties as ties_cli

    def refuse(args):
        raise PermissionError(13, "Permission denied", "/some/where/out.run")
    monkeypatch.setattr(ties_cli, "_cmd_band", refuse)
    status, _, err = run_cli("band", "--rho", "2", files / "run1", "--out", files / "o.run")
    assert status == 2 and err == "pyterrier-noise: error: /some/where/out.run: Permission denied\n"


@pytest.mark.parametrize("argv, words", [
    (["--decimals", "400"], "largest usable value is 308"),
    (["--decimals", "-309"], "largest usable value is 308"),
    (["--quantum", "1e-320"], "between 1e-308 and 1e308"),
])
def test_round_refuses_what_float64_cannot_hold(files, argv, words):
    status, _, err = run_cli("round", *argv, files / "run1", "--out", files / "o.run")
    assert status == 2 and words in err and "Traceback" not in err and not (files / "o.run").exists()


def test_rounding_at_the_limits_is_exact():
    x = np.array([1.5e-300, 2.5e-300, 0.123456789, 123.456, 1e300, 0.0])
    with pytest.raises(InputError, match="308"):
        ScoreRounding(decimals=400)
    # the invariant of rounding to d decimals: finite, and at most half a unit of the d-th place away
    # (Python's decimal module, exact, as the reference), give or take the few ulps numpy's round loses
    with localcontext() as ctx:
        ctx.prec = 2000
        for d in (300, 308, 2, -2, -308):
            got = round_scores(x, decimals=d)
            assert np.all(np.isfinite(got)), d
            half = Decimal(5) * Decimal(10) ** (-d - 1)
            for g, v in zip(got, x):
                ulps = Decimal(float(4 * np.spacing(abs(v))))
                assert abs(Decimal(float(g)) - Decimal(float(v))) <= half + ulps, (d, g, v)
    assert np.all(np.isfinite(round_scores(x, quantum="1e-308")))
    assert round_scores(np.array([0.3, 0.7]), quantum="1e308").tolist() == [0.0, 0.0]


def test_the_real_process_exits_2_with_one_sentence(files):
    # through the interpreter, as a shell sees it: exit status 2 and one line on stderr
    import subprocess
    import sys
    blocker = files / "a-file"
    blocker.write_text("x\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    p = subprocess.run([sys.executable, "-m", "pyterrier_noise.cli", "round", "--quantum", "1e-320", str(files / "run1"),
                        "--out", str(blocker / "x.run")], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("pyterrier-noise: error:")
