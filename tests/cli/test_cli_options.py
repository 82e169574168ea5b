"""The command line's shape: quick help (no library import), shared options, house vocabulary."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import pyterrier_noise as pn
from pyterrier_noise import cli
from pyterrier_noise.cli import main, options

HEAVY = ("pandas", "numpy", "pyterrier", "matplotlib", "scipy", "pyarrow")


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = cli._parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def test_help_imports_no_library():
    """``--help`` answers from argparse alone: the command modules import the library in their handlers.
    One fresh process asks for every command's help in turn, then the program's (which loads every command
    module), and says after each which of the libraries it has loaded by then: the first command that loads
    one is named."""
    argvs = [[command, "--help"] for command in cli.COMMANDS] + [["--help"]]
    code = ("import sys\nfrom pyterrier_noise.cli import main\n"
            f"for argv in {argvs!r}:\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            f"    print(argv[0], sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.count("usage: pyterrier-noise") == len(argvs)
    loaded = res.stderr.strip().splitlines()[-len(argvs):]
    assert loaded == [f"{argv[0]} []" for argv in argvs], res.stderr


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pyterrier-noise {pn.__version__}"


def _dests(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if a.dest != "help"}


def test_perturb_and_robustness_share_the_model_options():
    perturb, robustness = _dests(_subparser("perturb")), _dests(_subparser("robustness"))
    model = set(_dests(options.perturbation_model()))
    assert model <= set(perturb) and model <= set(robustness)
    for dest in model - {"ties", "model"}:
        assert perturb[dest].option_strings == robustness[dest].option_strings
        assert perturb[dest].default == robustness[dest].default
    # robustness evaluates with --ties too: each measure's own policy unless given
    assert perturb["ties"].default == "trec_eval" and robustness["ties"].default is None
    # building robustness's parser does not change perturb's
    assert _dests(_subparser("perturb"))["ties"].default == "trec_eval"


@pytest.mark.parametrize("command", ["perturb", "robustness", "pairwise"])
def test_house_vocabulary(command):
    """--seed defaults to 0 and the number of replicates is --replicates wherever they appear."""
    parser = _subparser(command)
    if command == "pairwise":
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices["simulate"]
    d = _dests(parser)
    assert d["seed"].default == 0
    if "replicates" in d:
        assert "--replicates" in d["replicates"].option_strings


@pytest.mark.parametrize("command", ["perturb", "robustness", "select", "judge", "phi-match"])
def test_quiet_turns_progress_bars_off(command):
    parser = _subparser(command)
    required = {"perturb": ["q", "--model", "random", "--out", "o"],
                "robustness": ["q", "r", "--model", "random", "-m", "AP", "--out", "o"],
                "select": ["q", "r", "--out", "o"], "judge": ["--session", "s"],
                "phi-match": ["q", "r", "-m", "AP"]}[command]
    assert parser.parse_args(required).progress is True
    assert parser.parse_args(required + ["--quiet"]).progress is False
    assert parser.parse_args(required + ["--progress"]).progress is True


def test_options_have_one_spelling(capsys):
    parser = _subparser("pairwise")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["simulate"]
    assert sub.parse_args(["--out", "c.csv"]).rel == 1.0
    assert sub.parse_args(["--out", "c.csv", "--rel", "2"]).rel == 2.0
    with pytest.raises(SystemExit):     # --relevant-from was its name before the first release
        sub.parse_args(["--out", "c.csv", "--relevant-from", "2"])
    assert "--relevant-from" not in sub.format_help() and "--rel " in sub.format_help()


def test_option_names_map_to_options_of_their_command():
    """A command's ``option_names`` (library parameter -> option, for errors) names options it has."""
    import argparse

    from pyterrier_noise.cli import _parser
    parser = _parser(None, [])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = 0
    stack = list(sub.choices.values())
    while stack:
        p = stack.pop()
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(a.choices.values())
        for param, option in (p.get_default("option_names") or {}).items():
            found += 1
            assert any(option in a.option_strings for a in p._actions), (p.prog, param, option)
    assert found >= 2
