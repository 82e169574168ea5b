"""The output policy of the command line, applied to every command from its parser before its
handler runs: an output option (:data:`OUTPUT_DESTS`) naming one of the command's inputs -- the
same file by device and inode, a path inside an input directory, or a directory holding an input --
is refused with a sentence naming both (:func:`pyterrier_noise._output.check_outputs_apart`).

An input is any other argument whose value names an existing file or directory; so a session file
(``judge --session``), a cache (``llm-judge --cache``) or a run directory is protected too.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Sequence

#: the destinations of the options that name a file or directory a command writes
OUTPUT_DESTS = ("out", "export", "backup", "plot", "failures", "report", "access_log")
#: destinations whose values are never paths, even when a file of that name happens to exist
_NOT_PATHS = ("tag", "measures", "baseline", "command", "model", "argv")


def command_actions(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[argparse.Action]:
    """The actions of the (sub)command ``argv`` names, its parents' included, subcommands followed."""
    acts: list[argparse.Action] = []
    p = parser
    while True:
        sub = None
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                sub = a
            elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                acts.append(a)
        name = next((t for t in argv if sub is not None and t in sub.choices), None)
        if name is None:
            return acts
        p = sub.choices[name]


def name_option(exc: Exception, parser: argparse.ArgumentParser, argv: Sequence[str],
                args: argparse.Namespace) -> str:
    """The message of ``exc`` with the library parameter it names (``InputError.param``) replaced by the
    option the user typed: the option of that destination (``correction_alpha`` -> ``--correction-alpha``)
    or, where the library's name is not the option's, the command's ``option_names`` (``n`` -> ``--plan``)."""
    text = str(exc)
    param = getattr(exc, "param", None)
    if not param or not text.startswith(param):
        return text
    option = getattr(args, "option_names", {}).get(param)
    if option is None:
        option = next((_label(a) for a in command_actions(parser, argv) if a.dest == param and a.option_strings),
                      None)
    return text if option is None else option + text[len(param):]


def _label(a: argparse.Action) -> str:
    if a.option_strings:
        return next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
    return a.metavar if isinstance(a.metavar, str) else a.dest.upper()


def _paths(value: Any) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        v = os.fspath(value)
        return [v] if v not in ("", "-") and os.path.exists(v) else []
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _paths(v)]
    return []


def check_args(parser: argparse.ArgumentParser, argv: Sequence[str], args: argparse.Namespace) -> None:
    """Refuse (:class:`~pyterrier_noise._validation.InputError`) an output that is one of the inputs."""
    from .._output import check_outputs_apart
    outputs: dict[str, str] = {}
    inputs: dict[str, str] = {}
    for a in command_actions(parser, argv):
        value = getattr(args, a.dest, None)
        if value is None or a.dest in _NOT_PATHS:
            continue
        if a.dest in OUTPUT_DESTS:
            if isinstance(value, (str, os.PathLike)) and os.fspath(value) not in ("", "-"):
                outputs[_label(a)] = os.fspath(value)
            continue
        for i, path in enumerate(_paths(value)):
            inputs[_label(a) if i == 0 else f"{_label(a)} (#{i + 1})"] = path
    if outputs and inputs:
        check_outputs_apart(outputs, inputs)
