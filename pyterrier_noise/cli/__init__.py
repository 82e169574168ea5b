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
import sys
import contextlib
import warnings
from typing import Sequence

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


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; given a known command name, only that command's module is imported."""
    p = argparse.ArgumentParser(
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
    parser = _parser(command)
    args = parser.parse_args(argv)
    args.argv = argv   # the command as typed: the reports name the command that made them
    from ._process import tuned
    with tuned(command, as_program):   # gc, malloc and environment: before the handler imports numpy
        return _run(parser, argv, args, as_program)


def _run(parser: argparse.ArgumentParser, argv: list, args: argparse.Namespace, as_program: bool) -> int:
    """The command's handler, its errors as one line each and its exit status."""
    from .._validation import InputError
    from .._warnings import CoercionWarning
    old_format = warnings.formatwarning
    try:
        with warnings.catch_warnings(), once_per_kind():
            warnings.simplefilter("always", CoercionWarning)
            try:
                from ._outputs import check_args
                check_args(parser, argv, args)
                return int(args.handler(args) or 0)
            except KeyboardInterrupt:   # Ctrl-C: one line, exit 130 (128 + SIGINT), no partial output
                if as_program:
                    # the interrupt is handled: a second SIGINT (another Ctrl-C, or a late one: select
                    # was seen to die by SIGINT after printing this line in 1 of 25 runs, cause not
                    # pinned down) must not turn this exit into a death by signal
                    import signal
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                from .._output import discard_temporaries
                discard_temporaries()
                print("pyterrier-noise: interrupted; nothing written", file=sys.stderr)
                return 130
            except InputError as exc:
                print(f"pyterrier-noise: error: {exc}", file=sys.stderr)
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


@contextlib.contextmanager
def once_per_kind():
    """Each kind of warning (:func:`~pyterrier_noise._warnings.warning_kind`) printed once, when it first
    comes, as one line on stderr; at the end, one line per kind that came again, with its count.
    (Through ``warnings.formatwarning``, so that a caller recording warnings still gets every one.)"""
    from .._warnings import warning_kind
    seen: dict = {}
    old = warnings.formatwarning

    def fmt(message, category, filename, lineno, line=None):
        text = str(message)
        key = (category, warning_kind(text))
        first = key not in seen
        seen.setdefault(key, [text, 0])[1] += 1
        return f"pyterrier-noise: warning: {text}\n" if first else ""

    warnings.formatwarning = fmt
    try:
        yield
    finally:
        warnings.formatwarning = old
        for text, count in seen.values():
            if count > 1:
                short = text if len(text) <= 80 else text[:77] + "..."
                print(f"pyterrier-noise: warning: {count} warnings like \"{short}\" in all", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
