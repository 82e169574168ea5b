"""The ``pyterrier-noise`` command line: one module per command, the only place that imports argparse.

``pyterrier-noise COMMAND --help`` imports only that command's module, and the command modules
import only the standard library at module level (options shared by several commands are argparse
parent parsers in :mod:`.options`); the library (pandas, numpy, the package's subpackages) is
imported by a command's handler when it runs.  So help and usage errors come at once.  Errors read
as sentences (``pyterrier-noise: error: ...``, exit status 2), not tracebacks.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import contextlib
import warnings
from typing import NoReturn, Sequence

#: each command and the module of ``pyterrier_noise.cli`` that registers it
COMMANDS = {
    "eval": "eval", "demo": "demo", "perturb": "perturb", "robustness": "robustness", "select": "select",
    "judge": "judge", "band": "ties", "round": "ties", "ties": "ties", "phi-match": "phi_match",
    "pairwise": "pairwise", "report": "report", "calibrate": "calibrate", "reproduce": "reproduce", "serve": "serve",
    "versions": "versions", "llm-judge": "llm_judge",
}

def _version() -> str:
    from .. import __version__
    return __version__


#: options of no command any more, and what says the same now (a hint, never an alias)
RENAMED = {"--p": "-m 'RBP(p=P)'", "--p-eval": "-m 'RBP(p=P)'", "-n": "--replicates",
           "--runs": "RUN... (positional), or --model-runs for the runs that drive a judge model",
           "--qrels": "QRELS, positional (pyterrier-noise COMMAND [QRELS] RUNS... [options])"}


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors end with a "did you mean": an option the command does
    not have but another command has (``--x is an option of pyterrier-noise other``), or one whose
    idea has another name here (``--p``: ``-m 'RBP(p=P)'``)."""

    argv: Sequence[str] = ()

    def error(self, message: str) -> "NoReturn":   # type: ignore[override]
        target = self
        if self.prog == "pyterrier-noise":   # unrecognized arguments: argparse reports them at the top
            leaves = commands(self)
            words = [t for t in self.argv if not t.startswith("-")]
            for n in (2, 1):
                if " ".join(words[:n]) in leaves:
                    target = leaves[" ".join(words[:n])]
                    break
        hint = did_you_mean(target, self.argv)
        target.print_usage(sys.stderr)
        self.exit(2, f"{target.prog}: error: {message}\n" + "".join(f"{line}\n" for line in hint))


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its name (``pairwise aggregate`` for a command's own actions)."""
    out: dict[str, argparse.ArgumentParser] = {}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                full = f"{prefix} {name}".strip()
                out.update(commands(sub, full) or {full: sub})
    return out


def did_you_mean(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """Hints for the options in ``argv`` that ``parser`` (a command's) does not know."""
    if parser.prog == "pyterrier-noise":
        return []
    known = _options(parser)
    unknown = []
    for token in argv:
        opt = token.split("=", 1)[0]
        if (not opt.startswith("-") or opt == "-" or opt[1:].replace(".", "").isdigit() or opt in known
                or opt in unknown):
            continue
        if opt in RENAMED or not any(k.startswith(opt) and k.startswith("--") for k in known):
            unknown.append(opt)   # (a prefix of a known option is argparse's abbreviation)
    if not unknown:
        return []
    leaves = commands(_parser())
    here = parser.prog.removeprefix("pyterrier-noise ")
    hints = []
    for opt in unknown:
        if opt in RENAMED:
            hints.append(f"did you mean {RENAMED[opt]}? ({opt} is no option of pyterrier-noise {here})")
            continue
        others = [name for name, sub in leaves.items() if name != here and opt in _options(sub)]
        if others:
            hints.append(f"{opt} is an option of " + ", ".join(f"pyterrier-noise {n}" for n in others[:3])
                         + (f" (and {len(others) - 3} more)" if len(others) > 3 else "")
                         + f", not of pyterrier-noise {here}")
    return hints


def _parser(command: str | None = None, argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser; given a known command name, only that command's module is imported.
    ``argv``, the command line it will parse, is what its usage errors read their hints from."""
    if argv is not None:
        Parser.argv = tuple(argv)
    p = Parser(
        prog="pyterrier-noise",
        description="Honest IR evaluation: RBP / INST residuals, noisy and incomplete judgments, ties.")
    p.add_argument("--version", action="version", version=f"pyterrier-noise {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in wanted:
        importlib.import_module(f"{__name__}.{module}").register_cli(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyterrier-noise`` command."""
    as_program = argv is None   # the console script: the process exits when this returns
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(command, argv)
    args = parser.parse_args(argv)
    if getattr(args, "verbose", False) and getattr(args, "progress", None) is False:
        parser.error("--verbose asks for more on stderr (every warning) and --quiet for less: give one of them, not both")
    args.argv = argv   # the command as typed: the reports name the command that made them
    from ._process import run_cache, tuned
    # gc, malloc and environment (and the run cache of eval's and robustness's --cache DIR; llm-judge's
    # --cache is its answers' file): before the handler imports numpy
    with tuned(command, as_program), run_cache(getattr(args, "run_cache", None)):
        return _run(parser, argv, args, as_program)


def _run(parser: argparse.ArgumentParser, argv: list, args: argparse.Namespace, as_program: bool) -> int:
    """The command's handler, its errors as one line each and its exit status."""
    from .._validation import InputError
    from .._warnings import CoercionWarning, NoiseWarning
    from .._output import outputs_mark
    old_format = warnings.formatwarning
    done_before = outputs_mark()   # the outputs of earlier commands of this process are not this one's
    try:
        verbose = bool(getattr(args, "verbose", False))
        with warnings.catch_warnings(), once_per_kind(verbose):
            warnings.simplefilter("always", NoiseWarning if verbose else CoercionWarning)
            try:
                from ._outputs import check_args
                check_args(parser, argv, args)
                return int(args.handler(args) or 0)
            except KeyboardInterrupt as exc:   # Ctrl-C: one line, exit 130 (128 + SIGINT), no partial output;
                from ._process import Terminated   # SIGTERM: the same, exit 143 (128 + SIGTERM)
                if as_program:
                    # the interrupt is handled: a second Ctrl-C must not turn this exit into a death by signal
                    import signal
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                from .._output import completed_outputs, discard_temporaries
                discard_temporaries()
                term = isinstance(exc, Terminated)
                # the interrupt may land after the output is complete (while the process ends): say so
                done = completed_outputs(done_before)
                kept = (f"after writing {', '.join(str(p) + ('/' if p.is_dir() else '') for p in done)} (complete, kept)"
                        if done else "nothing written")
                print(f"pyterrier-noise: {'terminated' if term else 'interrupted'}; {kept}", file=sys.stderr)
                if as_program:
                    _exit_now(143 if term else 130)
                return 143 if term else 130
            except InputError as exc:
                from ._outputs import name_option
                print(f"pyterrier-noise: error: {name_option(exc, parser, argv, args)}", file=sys.stderr)
                return 2
            except BrokenPipeError:
                return 0
            except OSError as exc:   # an output (or input) the system refused: a sentence naming the path
                where = f"{exc.filename}: " if exc.filename is not None else ""
                print(f"pyterrier-noise: error: {where}{exc.strerror or exc}", file=sys.stderr)
                return 2
    finally:
        from .._output import discard_temporaries
        discard_temporaries()   # a run that failed keeps nothing half-written
        warnings.formatwarning = old_format


def _exit_now(status: int) -> None:
    """End the program with ``status`` once an interrupt is handled and the outputs are cleaned up.

    CPython (3.11 and 3.12) marks a KeyboardInterrupt as unhandled when it leaves code that ``exec`` or
    ``eval`` runs from a string (a dataclass or named tuple being made, as modules are imported), even
    if a caller catches it; at exit the interpreter then kills itself with SIGINT, whatever the status.
    A Ctrl-C that lands there (1 in 50-100 runs of a command interrupted early) would end the command
    by a signal after it said "interrupted".  Ending here skips that check, and the interpreter's
    shutdown: what the command started is already ended (worker pools when their block is left;
    the threads of a pool die with the process)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe or stream: nothing more can be said there
            pass
    os._exit(status)


@contextlib.contextmanager
def once_per_kind(verbose: bool = False):
    """Each kind of warning (:func:`~pyterrier_noise._warnings.warning_kind`) printed once, when it first
    comes, as one line on stderr; at the end, one line per kind that came again, with its count.
    With ``verbose`` (``--verbose``), every warning printed in full as it comes, and no count.
    (Through ``warnings.formatwarning``, so that a caller recording warnings still gets every one.)"""
    from .._warnings import warning_kind
    seen: dict = {}
    old = warnings.formatwarning

    def fmt(message, category, filename, lineno, line=None):
        text = str(message)
        key = (category, warning_kind(text))
        first = key not in seen
        seen.setdefault(key, [text, 0])[1] += 1
        return f"pyterrier-noise: warning: {text}\n" if first or verbose else ""

    warnings.formatwarning = fmt
    try:
        yield
    finally:
        warnings.formatwarning = old
        for text, count in seen.values():
            if count > 1 and not verbose:
                short = text if len(text) <= 80 else text[:77] + "..."
                print(f"pyterrier-noise: warning: {count} warnings like \"{short}\" in all "
                      "(--verbose lists every one)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
