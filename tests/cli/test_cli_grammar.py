"""One grammar for every command, checked from each command's parser (the subparsers of the real
``pyterrier-noise`` parser): ``pyterrier-noise COMMAND [QRELS] RUNS... [options]``, one option name
per idea, ``--quiet`` / ``--progress`` everywhere, and a "did you mean" for an option of another
command (docs/cli.md, "The grammar")."""
from __future__ import annotations

import argparse

import pytest

from pyterrier_noise.cli import _parser, commands, main


COMMANDS = commands(_parser())


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def test_every_command_is_walked():
    assert set(COMMANDS) >= {"eval", "demo", "perturb", "robustness", "select", "judge", "band", "round", "ties",
                             "phi-match", "pairwise aggregate", "pairwise simulate", "report", "calibrate",
                             "reproduce", "serve", "versions", "llm-judge"}


#: commands whose inputs are one qrels file and runs: QRELS first and positional, then RUN...
QRELS_RUNS = ["eval", "report", "robustness", "select", "phi-match"]


@pytest.mark.parametrize("command", QRELS_RUNS)
def test_qrels_and_runs_are_positional(command):
    parser = COMMANDS[command]
    pos = _positionals(parser)
    assert [a.dest for a in pos][0] == "qrels" and pos[0].nargs is None
    assert pos[1].nargs == "+" and pos[1].metavar == "RUN"
    assert "--qrels" not in _options(parser) and "--runs" not in _options(parser)
    assert parser.format_usage().rstrip().endswith("QRELS RUN [RUN ...]")


def test_perturb_takes_qrels_positionally_and_names_the_runs_of_its_model():
    for command in ("perturb", "robustness"):
        parser = COMMANDS[command]
        assert _positionals(parser)[0].dest == "qrels"
        assert "--model-runs" in _options(parser) and "--runs" not in _options(parser)


def test_demo_takes_optional_qrels_and_runs_defaulting_to_the_synthetic_collection():
    parser = COMMANDS["demo"]
    qrels, runs = _positionals(parser)
    assert (qrels.dest, qrels.nargs, runs.nargs) == ("qrels", "?", "*")
    assert "--qrels" not in _options(parser) and "--runs" not in _options(parser)
    args = parser.parse_args([])
    assert args.qrels is None and args.runs == []
    args = parser.parse_args(["q.txt", "r1", "r2", "--out", "d"])
    assert args.qrels == "q.txt" and args.runs == ["r1", "r2"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_quiet_and_progress_on_every_command(command):
    parser = COMMANDS[command]
    opts = _options(parser)
    assert {"--quiet", "--progress"} <= opts, command
    quiet = next(a for a in parser._actions if "--quiet" in a.option_strings)
    loud = next(a for a in parser._actions if "--progress" in a.option_strings)
    assert quiet.dest == loud.dest == "progress"
    assert quiet.const is False and loud.const is True


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_verbose_on_every_command(command):
    parser = COMMANDS[command]
    verbose = next(a for a in parser._actions if "--verbose" in a.option_strings)
    assert verbose.dest == "verbose" and verbose.default is False and verbose.const is True


@pytest.mark.parametrize("argv", [["eval", "q", "r", "-m", "AP"], ["demo", "--out", "o"],
                                  ["pairwise", "aggregate", "j.csv", "--out", "o"]])
def test_verbose_with_quiet_is_refused_with_a_sentence(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--verbose", "--quiet"])
    assert exc.value.code == 2
    command = " ".join(argv[:2]) if argv[0] == "pairwise" else argv[0]
    assert (f"pyterrier-noise {command}: error: --verbose asks for more on stderr (every warning) and --quiet "
            "for less: give one of them, not both") in capsys.readouterr().err


#: one name per idea: spellings no command has
NEVER = ("-n", "--noisy-judges-n", "--p", "--p-eval", "--judging-budget", "--n-replicates", "--k", "--pool-depth")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_one_option_name_per_idea(command):
    parser = COMMANDS[command]
    opts = _options(parser)
    assert not opts & set(NEVER), (command, opts & set(NEVER))
    for a in parser._actions:
        if a.dest == "replicates":
            assert a.option_strings == ["--replicates"], command
        if a.dest == "budget":
            assert a.option_strings == ["--budget"], command
        if a.dest == "seed":
            assert a.option_strings == ["--seed"], command
        if "--ties" in a.option_strings:   # a tie policy (or a run order), never a switch
            assert a.choices and set(a.choices) <= {"trec_eval", "given", "expected", "optimistic",
                                                    "pessimistic"}, command
        if "--judging" in a.option_strings or "--noisy-judges" in a.option_strings:
            assert a.nargs == 0, (command, "a section switch takes no count")
        if "-m" in a.option_strings:
            assert "--measure" in a.option_strings and a.dest == "measures", command


def test_report_counts_by_the_shared_names():
    args = COMMANDS["report"].parse_args(["q", "r", "--out", "o", "--noisy-judges", "--replicates", "7",
                                          "--judging", "--budget", "40", "--tie-stats"])
    assert (args.noisy_judges, args.replicates, args.judging, args.budget, args.tie_stats) == (True, 7, True, 40, True)


def test_band_offers_only_the_canonical_orders():
    by = next(a for a in COMMANDS["band"]._actions if "--by" in a.option_strings)
    assert list(by.choices) == ["given", "trec_eval", "input"] and by.default == "trec_eval"


@pytest.mark.parametrize("command", ["select", "judge", "serve"])
def test_rbp_persistence_is_a_measure_string(command):
    from pyterrier_noise.cli import options
    parser = COMMANDS[command]
    assert "--p" not in _options(parser) and "-m" in _options(parser)
    base = {"select": ["q", "r", "--out", "o"], "judge": ["--session", "s"], "serve": ["--session", "s"]}[command]
    args = parser.parse_args(base + ["-m", "RBP(p=0.9)"])
    assert options.rbp_persistences(args.measures) == (0.9, [])


def test_rbp_persistences_refuses_other_measures_and_bad_p():
    from pyterrier_noise import InputError
    from pyterrier_noise.cli import options
    assert options.rbp_persistences(None) == (0.8, [])
    assert options.rbp_persistences(["RBP(p=0.5)", "RBP(p=0.95)"]) == (0.5, [0.95])
    with pytest.raises(InputError, match="RBP"):
        options.rbp_persistences(["AP"])
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        options.rbp_persistences(["RBP(p=1.5)"])


def test_default_judge_model_is_one_and_named_as_given():
    from pyterrier_noise.cli import options
    for command in ("perturb", "robustness"):
        model = next(a for a in COMMANDS[command]._actions if "--model" in a.option_strings)
        assert model.default == "random" and not model.required
    args = COMMANDS["perturb"].parse_args(["q", "--out", "o"])
    assert options.judge_label(args) == options.DEFAULT_JUDGE_TEXT
    assert "TPR 0.93, FPR 0.07" in options.DEFAULT_JUDGE_TEXT and options.DEFAULT_JUDGE == {"tpr": 0.93, "fpr": 0.07}
    args = COMMANDS["perturb"].parse_args(["q", "--out", "o", "--judge", "smart_neutral"])
    assert options.judge_label(args) == "random flips, --judge smart_neutral"   # not its fitted rates


@pytest.mark.parametrize("argv, hint", [
    (["eval", "q", "r", "-m", "AP", "--budget", "3"], "--budget is an option of pyterrier-noise select"),
    (["report", "q", "r", "--out", "o", "--model", "random"], "--model is an option of pyterrier-noise perturb"),
    (["select", "--qrels", "q", "r", "--out", "o"], "did you mean QRELS, positional"),
    (["select", "q", "r", "--p", "0.8", "--out", "o"], "did you mean -m 'RBP(p=P)'?"),
    (["perturb", "q", "-n", "3", "--out", "o"], "did you mean --replicates?"),
    (["pairwise", "aggregate", "j.csv", "--out", "o", "--budget", "3"], "--budget is an option of"),
])
def test_did_you_mean_names_the_command_an_option_belongs_to(capsys, argv, hint):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    command = " ".join(argv[:2]) if argv[0] == "pairwise" else argv[0]
    assert err.startswith(f"usage: pyterrier-noise {command} ")   # the command's own usage
    assert f"pyterrier-noise {command}: error: " in err and hint in err, err


def test_no_hint_for_an_option_the_command_has_or_an_abbreviation(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "q", "r", "-m", "AP", "--ties", "nonsense"])
    err = capsys.readouterr().err
    assert "invalid choice" in err and "did you mean" not in err and "is an option of" not in err
    parser = COMMANDS["robustness"]
    assert parser.parse_args(["q", "r", "-m", "AP", "--out", "o", "--repl", "3"]).replicates == 3


def test_top_level_help_has_no_internal_words(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for word in ("gm_first_tie_rank", "thesis", "Table 3.2"):
        assert word not in text, word


def _shell_commands(text: str) -> list[str]:
    """The ``pyterrier-noise ...`` command lines of a page's ```bash blocks (continuations joined,
    comments and redirections cut; synopses with [...] or ... left out)."""
    import re
    out = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            m = re.search(r"(?:^|&& )pyterrier-noise (.*)", line.strip())
            if m:
                cmd = re.split(r"\s+(?:#|>|\||2>|&&|;)", m.group(1))[0]
                if not any(x in cmd for x in ("[", "...", "COMMAND")):
                    out.append(cmd)
    return out


def _pages() -> list:
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    return sorted(root.glob("docs/*.md")) + sorted(root.glob("docs/evidence/*.md")) + [root / "README.md"]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_docs_command_lines_parse_with_the_real_parser(page, capsys):
    """Every command line in the docs' shell blocks uses the current spellings."""
    import shlex
    parser = _parser()
    for cmd in _shell_commands(page.read_text()):
        try:
            parser.parse_args(shlex.split(cmd))
        except SystemExit as exc:
            assert not exc.code, f"{page.name}: pyterrier-noise {cmd}\n{capsys.readouterr().err}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_examples_parse_with_the_real_parser(command, capsys):
    """The examples in each command's --help use the current spellings."""
    import shlex
    parser = _parser()
    epilog = COMMANDS[command].epilog or ""
    for cmd in _shell_commands(f"```bash\n{epilog}```"):
        if "$" in cmd or "<" in cmd:
            continue
        try:
            parser.parse_args(shlex.split(cmd))
        except SystemExit as exc:
            assert not exc.code, f"{command} --help: pyterrier-noise {cmd}\n{capsys.readouterr().err}"
