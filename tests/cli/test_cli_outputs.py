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
from pyterrier_noise import InputError

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
            "--tpr", "0.9", "--fpr", "0.1", "--replicates", "3", "-m", "AP", "--quiet", "--out", out]
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
    ["select", "{qrels}", "--budget", "3", "--quiet", "{run}", "--out"],
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
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-m", "pyterrier_noise.cli", "round", "--quantum", "1e-320", str(files / "run1"),
                        "--out", str(blocker / "x.run")], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("pyterrier-noise: error:")


# --- an output that is an input: refused before anything is read or written (issue 30) ----------

#: a command line that parses for every (sub)command with an output option; {X} are inputs, {OUT}
#: the output option's value.  The generated test below sets each output to each input in turn.
SAME_FILE_ARGV = {
    "demo": ["demo", "{Q}", "{RD}"],
    "perturb": ["perturb", "{Q}", "--model", "removal", "--fraction", "0.2"],
    "robustness": ["robustness", "{Q}", "{R1}", "{R2}", "-m", "AP", "--model", "random", "--tpr", "0.9", "--fpr", "0.1"],
    "select": ["select", "{Q}", "--budget", "3", "{R1}", "{R2}"],
    "judge": ["judge", "--session", "{S}", "{R1}"],
    "band": ["band", "--rho", "2", "{R1}"],
    "round": ["round", "--decimals", "1", "{R1}"],
    "ties": ["ties", "{R1}", "{R2}"],
    "phi-match": ["phi-match", "{Q}", "{R1}", "{R2}", "-m", "AP"],
    "pairwise aggregate": ["pairwise", "aggregate", "{CSV}"],
    "pairwise simulate": ["pairwise", "simulate", "{Q}"],
    "report": ["report", "{Q}", "{R1}", "{R2}", "--pooled", "{P}"],
    "calibrate": ["calibrate", "-m", "AP", "--cheap", "{CH}", "--gold", "{Q}", "{R1}"],
    "reproduce": ["reproduce", "yang2019", "--data", "{RD}"],
    "serve": ["serve", "--session", "{S}", "--docs", "{D}"],
    "versions": ["versions", "-m", "AP", "--qrels", "a={Q}", "{R1}"],
    "llm-judge": ["llm-judge", "--qrels", "{Q}", "--docs", "{D}", "--model", "m", "--cache", "{C}", "--out", "never-written.tsv"],
}


def _leaf_commands() -> dict[str, list[str]]:
    """Each (sub)command of the parser and the option strings of its outputs."""
    import argparse

    from pyterrier_noise.cli import _parser
    from pyterrier_noise.cli._outputs import OUTPUT_DESTS
    found: dict[str, list[str]] = {}

    def walk(p, path):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if subs:
            for name, sp in subs[0].choices.items():
                walk(sp, [*path, name])
            return
        outs = [next(o for o in a.option_strings if o.startswith("--")) for a in p._actions if a.dest in OUTPUT_DESTS]
        if outs:
            found[" ".join(path)] = outs
    walk(_parser(), [])
    return found


def _same_file_cases():
    return [(cmd, opt, key) for cmd, opts in sorted(_leaf_commands().items()) for opt in opts
            for key in sorted({a[a.index("{") + 1:a.index("}")] for a in SAME_FILE_ARGV.get(cmd, []) if "{" in a})]


def test_every_command_with_an_output_is_in_the_generated_test():
    assert sorted(_leaf_commands()) == sorted(SAME_FILE_ARGV)
    assert {c for c, _, _ in _same_file_cases()} == set(SAME_FILE_ARGV)   # each has an input to try


@pytest.fixture
def inputs(files) -> dict[str, Path]:
    d = files / "rundir"
    d.mkdir()
    (d / "runA").write_text((files / "run1").read_text())
    paths = {"Q": files / "qrels.txt", "R1": files / "run1", "R2": files / "run2", "RD": d,
             "S": files / "s.sqlite", "CSV": files / "crowd.csv", "P": files / "pooled.tsv", "CH": files / "cheap.tsv",
             "D": files / "docs.tsv", "C": files / "cache.sqlite"}
    for key in ("S", "CSV", "P", "CH", "D", "C"):
        paths[key].write_text(f"content of {key}\n")
    return paths


def _snapshot(paths: dict[str, Path]) -> dict[str, object]:
    return {k: sorted((p.name, p.read_bytes()) for p in v.iterdir()) if v.is_dir() else v.read_bytes()
            for k, v in paths.items()}


@pytest.mark.parametrize("command, option, key", _same_file_cases())
def test_an_output_equal_to_an_input_is_refused(inputs, command, option, key):
    before = _snapshot(inputs)
    target = inputs[key] / "sub" if inputs[key].is_dir() else inputs[key]
    argv = []
    for a in SAME_FILE_ARGV[command]:
        for k, v in inputs.items():
            a = a.replace("{" + k + "}", str(v))
        argv.append(a)
    status, _, err = run_cli(*argv, option, target)
    words = "inside the input directory" if inputs[key].is_dir() else "is the same file as the input"
    assert status == 2 and words in err and str(inputs[key]) in err and "Traceback" not in err, err
    assert err.count("\n") == 1
    assert _snapshot(inputs) == before


@pytest.mark.parametrize("how", ["symlink", "hardlink", "relative"])
def test_the_same_file_by_another_name_is_the_same_file(files, monkeypatch, how):
    run = files / "run1"
    before = run.read_bytes()
    other = files / "other-name"
    if how == "symlink":
        other.symlink_to(run)
    elif how == "hardlink":
        os.link(run, other)
    else:
        (files / "sub").mkdir()
        monkeypatch.chdir(files / "sub")
        other = Path("..") / "." / "run1"
    for cmd in (["band", "--rho", "2"], ["round", "--decimals", "1"]):
        status, _, err = run_cli(*cmd, run, "--out", other)
        assert status == 2 and "is the same file as the input RUN" in err, err
    assert run.read_bytes() == before


def test_a_different_file_is_written(files):
    status, _, err = run_cli("band", "--rho", "2", files / "run1", "--out", files / "run1.band")
    assert status == 0, err
    assert (files / "run1.band").stat().st_size > 0


def test_leftovers_of_dead_processes_are_removed_and_of_live_ones_kept(files):
    from cli_helpers import dead_pid

    from pyterrier_noise.io import write_trec_qrels
    dead = files / f"{TMP_PREFIX}{dead_pid()}-band.run"
    dead_dir = files / f"{TMP_PREFIX}{dead_pid()}"
    live = files / f"{TMP_PREFIX}{os.getppid()}-band.run"     # a running process's (pytest's parent)
    dead.write_text("half")
    dead_dir.mkdir()
    (dead_dir / "x.tsv").write_text("half")
    live.write_text("being written")
    assert run_cli("band", "--rho", "2", files / "run1", "--out", files / "band.run")[0] == 0
    assert not dead.exists() and not dead_dir.exists() and live.read_text() == "being written"
    dead.write_text("half")
    write_trec_qrels(read_qrels(files / "qrels.txt"), files / "copy.qrels")   # the library's writer too
    assert not dead.exists() and live.exists() and read_qrels(files / "copy.qrels").equals(read_qrels(files / "qrels.txt"))


@pytest.mark.parametrize("where", ["file", "directory"])
def test_ctrl_c_while_writing_keeps_the_old_output_and_no_temporary(monkeypatch, files, where):
    # Ctrl-C in the middle of a write, for a file output (band) and a directory output (perturb)
    import pyterrier_noise.cli.perturb as perturb_cli
    import pyterrier_noise.cli.ties as ties_cli
    out = files / ("band.run" if where == "file" else "reps")
    if where == "file":
        out.write_text("old\n")
        before = {"band.run": b"old\n"}
    else:
        assert perturb(files, out, 2)[0] == 0
        before = {n: (out / n).read_bytes() for n in listing(out)}

    def interrupted(args):
        if where == "file":
            with atomic_file(args.out) as tmp:
                tmp.write_text("half")
                raise KeyboardInterrupt
        d = OutputDirectory(args.out, "perturb", force=True)
        d.write("replicate-0001.qrels", "half")
        with d.staging() as stage:
            (stage / "replicate-0002.qrels").write_text("half")
        raise KeyboardInterrupt     # after the files are staged, before finish()
    monkeypatch.setattr(ties_cli, "_cmd_band", interrupted)
    monkeypatch.setattr(perturb_cli, "_cmd_perturb", interrupted)
    argv = (["band", "--rho", "2", files / "run1", "--out", out] if where == "file" else
            ["perturb", files / "qrels.txt", "--model", "removal", "--fraction", "0.2", "--out", out, "--force"])
    status, _, err = run_cli(*argv)
    assert status == 130 and err == "pyterrier-noise: interrupted; nothing written\n"
    after = {"band.run": out.read_bytes()} if where == "file" else {n: (out / n).read_bytes() for n in listing(out)}
    assert after == before and not [p for p in files.rglob("*") if p.name.startswith(TMP_PREFIX)]


@pytest.mark.parametrize("raised", ["raise KeyboardInterrupt", "exec('raise KeyboardInterrupt')"])
def test_ctrl_c_inside_code_run_by_exec_still_exits_130(tmp_path, raised):
    """A Ctrl-C that lands while ``exec`` runs code from a string (a dataclass or named tuple being made
    as a module is imported) is handled as any other: one line and exit 130.  CPython marks such a
    KeyboardInterrupt as unhandled even when it is caught, and under ``python -m`` killed the process
    with SIGINT at exit (status -2 after "interrupted"; seen in 2 of 160 runs of robustness
    interrupted early)."""
    import subprocess
    import sys
    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "interrupted_ties.py").write_text(
        "import sys\n"
        "import pyterrier_noise.cli.ties as ties\n"
        "def handler(args):\n"
        f"    {raised}\n"
        "ties._cmd_ties = handler\n"
        "from pyterrier_noise.cli import main\n"
        f"sys.argv = ['pyterrier-noise', 'ties', {str(tmp_path / 'run')!r}]\n"
        "sys.exit(main())\n")
    (tmp_path / "run").write_text("1 Q0 d1 1 1.0 r\n")
    done = subprocess.run([sys.executable, "-m", "interrupted_ties"], capture_output=True, text=True, cwd=repo,
                          timeout=120, env={**os.environ, "PYTHONPATH": f"{repo}{os.pathsep}{tmp_path}"})
    assert (done.returncode, done.stderr) == (130, "pyterrier-noise: interrupted; nothing written\n")
