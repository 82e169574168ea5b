"""The ``pyterrier-noise`` command line.

``pyterrier-noise eval QRELS RUN [RUN ...] -m MEASURE [-m MEASURE ...] [--per-query]
[--ties trec_eval|given|expected|optimistic|pessimistic] [--format text|tsv|json]``

``pyterrier-noise demo [--out DIR]``

Errors read as sentences (``pyterrier-noise: error: ...``, exit status 2), not tracebacks.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Sequence

from .engine import TIE_POLICIES
from .errors import CoercionWarning, InputError

EVAL_EXAMPLES = """examples:
  pyterrier-noise eval qrels.txt run1.gz run2.gz -m 'RBP(p=0.8)' -m AP
  pyterrier-noise eval ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      -m 'RBP(p=0.5,max_rel=2)' -m 'INST(T=3,max_rel=2)' -m nDCG@10 --ties expected --format tsv

MEASURE uses ir_measures syntax: RBP(p=0.8), RBP(p=0.5,max_rel=2), INST(T=3,max_rel=2), INSQ(T=2),
AP, nDCG, nDCG@10, P@10, RR, and the package's RBPResidual(p=0.8), RBPUpper(...), RBPProjected(...).
For RBP, INST and INSQ the value is the lower bound (unjudged documents count 0) and the residual is
printed beside it (text: '0.8010 +0.0015'; tsv/json: a 'residual' column).
"""

DEMO_EXAMPLES = """examples:
  pyterrier-noise demo                      # built-in synthetic collection, report in ./noise-demo
  pyterrier-noise demo --out /tmp/demo
  pyterrier-noise demo --qrels ../shared/data/trec-covid-round1/qrels-rnd1.txt \\
      --runs ../shared/data/trec-covid-round1/runs
"""


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with the name of a capability module's command, only that module is
    imported (a command starts without importing, say, scipy.stats and PyTerrier when it needs
    neither), otherwise every module registers its commands (for ``--help`` and errors)."""
    p = argparse.ArgumentParser(
        prog="pyterrier-noise",
        description="Honest IR evaluation: RBP / INST residuals, noisy and incomplete judgments, ties.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    e = sub.add_parser("eval", help="evaluate runs (RBP / INST with residuals, AP, nDCG, P, RR)",
                       description="Evaluate TREC runs against qrels with the aligned engine.",
                       epilog=EVAL_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("qrels", help="TREC qrels file (plain or .gz)")
    e.add_argument("runs", nargs="+", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    e.add_argument("-m", "--measure", action="append", required=True, dest="measures", metavar="MEASURE",
                   help="measure in ir_measures syntax (repeatable)")
    e.add_argument("--per-query", action="store_true", help="one row per (run, topic, measure)")
    e.add_argument("--ties", choices=list(TIE_POLICIES), default=None,
                   help="tie policy (default: trec_eval, i.e. score then docno descending); expected, "
                        "optimistic and pessimistic treat equal scores as unordered")
    e.add_argument("--format", choices=["text", "tsv", "json"], default="text", help="output format")

    d = sub.add_parser("demo", help="run the demonstration and write a report",
                       description="Demonstrate the package offline on a synthetic collection (or on real "
                                   "data with --qrels and --runs) and write a report.",
                       epilog=DEMO_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--out", default="noise-demo", help="directory for the report (default: ./noise-demo)")
    d.add_argument("--qrels", default=None, help="qrels file of a real collection")
    d.add_argument("--runs", default=None, help="directory of run files of a real collection")
    d.add_argument("--seed", type=int, default=0, help="seed of the synthetic collection")

    # capability modules add their own subcommands: each has register_cli(subparsers), which adds
    # a parser and sets its ``handler`` default to a function(args) -> exit status
    import importlib
    for module in ((_COMMAND_MODULES[command],) if command in _COMMAND_MODULES else _CLI_MODULES):
        try:
            mod = importlib.import_module(f"pyterrier_noise.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"pyterrier_noise.{module}":
                raise
            continue
        if hasattr(mod, "register_cli"):
            mod.register_cli(sub)
    return p


#: modules that contribute subcommands (perturb, robustness, select, judge, band, round, report ...)
_CLI_MODULES = ("perturbation", "robustness", "selection", "session", "ties", "uncertainty", "pairwise", "report")
#: the module that registers each of those commands
_COMMAND_MODULES = {"perturb": "perturbation", "robustness": "robustness", "select": "selection", "judge": "session",
                    "band": "ties", "round": "ties", "ties": "ties", "phi-match": "uncertainty",
                    "pairwise": "pairwise", "report": "report"}


def _fmt(x: float) -> str:
    """Full precision (shortest round-trip repr), empty for a missing value."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def _cmd_eval(args: argparse.Namespace) -> int:
    from .io import read_qrels, read_run_arguments
    from .measures import evaluate

    qrels = read_qrels(args.qrels)
    runs = read_run_arguments(args.runs)
    res = evaluate(runs, qrels, args.measures, ties=args.ties, perquery=args.per_query)
    out = sys.stdout
    if args.format == "tsv":
        out.write("run\tqid\tmeasure\tvalue\tresidual\n")
        for r in res.itertuples(index=False):
            out.write(f"{r.name}\t{r.qid}\t{r.measure}\t{_fmt(r.value)}\t{_fmt(r.residual)}\n")
    elif args.format == "json":
        records = [{"run": r.name, "qid": r.qid, "measure": r.measure,
                    "value": None if math.isnan(r.value) else r.value,
                    "residual": None if math.isnan(r.residual) else r.residual}
                   for r in res.itertuples(index=False)]
        json.dump(records, out, indent=1)
        out.write("\n")
    else:
        wr = max([len(str(n)) for n in res["name"]] + [3])
        wq = max([len(str(q)) for q in res["qid"]] + [3])
        wm = max([len(str(m)) for m in res["measure"]] + [7])
        for r in res.itertuples(index=False):
            val = "   nan" if math.isnan(r.value) else f"{r.value:.4f}"
            res_txt = "" if math.isnan(r.residual) else f" +{r.residual:.4f}"
            out.write(f"{r.name:<{wr}}  {r.qid:<{wq}}  {r.measure:<{wm}}  {val}{res_txt}\n")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    return run_demo(out=Path(args.out), qrels=args.qrels, runs=args.runs, seed=args.seed)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyterrier-noise`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser(argv[0] if argv else None).parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", CoercionWarning)
        warnings.formatwarning = lambda msg, cat, *a, **k: f"pyterrier-noise: warning: {msg}\n"
        try:
            if args.command == "eval":
                return _cmd_eval(args)
            if args.command == "demo":
                return _cmd_demo(args)
            return int(args.handler(args) or 0)
        except InputError as exc:
            print(f"pyterrier-noise: error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:
            return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
