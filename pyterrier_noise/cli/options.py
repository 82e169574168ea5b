"""Options shared by the ``pyterrier-noise`` commands, as small argparse parent parsers.

Each function returns a fresh ``argparse.ArgumentParser(add_help=False)`` that a command lists in
``parents=[...]``; a fresh one each time, because argparse shares the parent's actions with the
child (changing one command's default must not change another's).  The house vocabulary
(LAYOUT.md): ``pyterrier-noise COMMAND [QRELS] RUNS... [options]``, ``--replicates`` for the number
of replicates, ``--budget`` for a judging budget, ``--depth`` for a pool depth, ``--seed`` (default 0),
measures as ``-m`` strings (RBP's persistence is spelt ``-m 'RBP(p=0.8)'``), ``--ties POLICY`` with
the house names of the tie policies, and ``--quiet`` / ``--progress`` on every command.

This module imports only the standard library and the package's vocabulary (``_vocab``, itself
standard library only), so that ``--help`` answers at once.
"""
from __future__ import annotations

import argparse
from typing import Any, Sequence

from .._vocab import (FIT_SCOPES, IMPROPER_FITS, JUDGE_MODELS, JUDGE_NAMES, META_AP_DEPTH, STOP_LEADERS, TIE_POLICIES,
                      WEIGHTINGS)


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


# ---------------------------------------------------------------------------------------------
# inputs and outputs

def qrels_runs(runs_dest: str = "runs", qrels_help: str = "TREC qrels file (plain or .gz)",
               runs_help: str = "TREC run file (plain or .gz) or a directory of them") -> argparse.ArgumentParser:
    """Positional QRELS and one or more RUN (files or directories)."""
    p = _parent()
    p.add_argument("qrels", metavar="QRELS", help=qrels_help)
    p.add_argument(runs_dest, nargs="+", metavar="RUN", help=runs_help)
    return p


def measures(required: bool = True,
             help: str = "measure in ir_measures syntax (repeatable)") -> argparse.ArgumentParser:
    """``-m MEASURE`` (repeatable) into ``args.measures``."""
    p = _parent()
    p.add_argument("-m", "--measure", action="append", required=required, dest="measures", metavar="MEASURE",
                   help=help)
    return p


def out(required: bool = True, help: str = "output directory", force: bool = False,
        **kwargs: Any) -> argparse.ArgumentParser:
    """``--out``, and with ``force`` the ``--force`` of an output directory (``pyterrier_noise._output``)."""
    p = _parent()
    p.add_argument("--out", required=required, help=help, **kwargs)
    if force:
        p.add_argument("--force", action="store_true",
                       help="replace an earlier output of this command in --out (only the files its manifest.json "
                            "lists); a directory holding other files is refused either way")
    return p


def seed(help: str = "random seed (default 0)", default: int | None = 0) -> argparse.ArgumentParser:
    """``--seed`` (default 0: the same command gives the same output)."""
    p = _parent()
    p.add_argument("--seed", type=int, default=default, help=help)
    return p


def replicates(default: int = 100) -> argparse.ArgumentParser:
    """``--replicates``: the number of replicates."""
    p = _parent()
    p.add_argument("--replicates", type=int, default=default, metavar="N", help=f"number of replicates (default {default})")
    return p


def run_cache() -> argparse.ArgumentParser:
    """``--cache DIR``: keep the parsed run files in DIR for the next command on the same files
    (:mod:`pyterrier_noise.io.cache`; the environment variable ``PYTERRIER_NOISE_CACHE`` does the same)."""
    p = _parent()
    p.add_argument("--cache", dest="run_cache", metavar="DIR", default=None,
                   help="keep the parsed run files in DIR (Arrow files, memory-mapped when read again) so that the "
                        "next command on the same files parses no text; a changed file is read again "
                        "(default: $PYTERRIER_NOISE_CACHE if set, else no cache)")
    return p


def memory(what: str = "the evaluation") -> argparse.ArgumentParser:
    """``--memory GIB``: the memory budget of a command that reads runs (default 4 GiB)."""
    p = _parent()
    p.add_argument("--memory", type=gib, default=4.0, metavar="GIB",
                   help=f"memory {what} may use, in GiB (default 4)")
    return p


def gib(text: str) -> float:
    """``--memory``: a positive number of GiB."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of GiB, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of GiB, got {text!r}")
    return value


def progress(default: bool | None = True) -> argparse.ArgumentParser:
    """``--quiet`` / ``--progress`` and ``--verbose``, on every command: ``--quiet`` turns the progress
    bars and status lines on stderr off, ``--progress`` keeps them on (the default; with
    ``default=None`` the command decides, e.g. by whether stderr is a terminal); ``--verbose`` prints
    every warning in full as it comes, where by default each kind is printed once with a count
    (``pyterrier_noise.cli.once_per_kind``).  ``--verbose`` with ``--quiet`` is refused."""
    p = _parent()
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quiet", "-q", dest="progress", action="store_false", default=default,
                   help="no progress bars or status lines on stderr")
    g.add_argument("--progress", dest="progress", action="store_true",
                   help="show progress bars and status lines on stderr"
                        + (" (the default)" if default else ""))
    p.add_argument("--verbose", action="store_true",
                   help="print every warning in full as it comes (by default each kind is printed once, "
                        "with a count at the end)")
    return p


#: the judge model a command uses when it implies one and none is given (demo, report; perturb and
#: robustness without --model): random flips at the main setting of Rashidi, Zobel and Moffat (2023)
DEFAULT_JUDGE = {"tpr": 0.93, "fpr": 0.07}
#: how the default judge model is named in help and output
DEFAULT_JUDGE_TEXT = "random flips, TPR 0.93, FPR 0.07 (the default judge model)"


def judge_label(args: argparse.Namespace) -> str:
    """The judge model of ``perturb`` / ``robustness`` as the user gave it (``--judge smart_neutral``
    echoed by its name, not by its fitted rates)."""
    model = getattr(args, "model", None) or "random"
    if model in ("random", "rank-biased"):
        if getattr(args, "judge", None):
            rates = f"--judge {args.judge}"
        elif getattr(args, "disc", None) is not None:
            rates = f"--disc {args.disc:g} --bias {args.bias:g}"
        elif getattr(args, "tpr", None) is not None:
            rates = f"TPR {args.tpr:g}, FPR {args.fpr:g}"
        else:
            return DEFAULT_JUDGE_TEXT if model == "random" else f"{model}, TPR 0.93, FPR 0.07 (the default rates)"
        return f"{'random flips' if model == 'random' else model}, {rates}"
    words = {"flip-rate": f"flip-rate fitted on {getattr(args, 'alt_qrels', None)}",
             "metarank": f"metarank fitted on {getattr(args, 'alt_qrels', None)}",
             "confusion": f"confusion matrix {getattr(args, 'matrix', None)}",
             "pool-depth": f"pool to depth {getattr(args, 'depth', None)}",
             "removal": f"removal of a fraction {getattr(args, 'fraction', None)} of the judgments"}
    return words.get(model, model)


def ties(choices: Sequence[str] = TIE_POLICIES, default: str | None = None,
         help: str = "tie policy") -> argparse.ArgumentParser:
    """``--ties POLICY`` with the house names of the tie policies."""
    p = _parent()
    p.add_argument("--ties", choices=list(choices), default=default, help=help)
    return p


def output_format(choices: Sequence[str] = ("text", "tsv")) -> argparse.ArgumentParser:
    """``--format`` of what a command prints."""
    p = _parent()
    p.add_argument("--format", choices=list(choices), default="text", help="output format")
    return p


# ---------------------------------------------------------------------------------------------
# the perturbation model (perturb, robustness)

def perturbation_model(for_robustness: bool = False) -> argparse.ArgumentParser:
    """``--model`` and its options, shared by ``perturb`` and ``robustness``.

    ``robustness`` evaluates with ``--ties`` too, so there it defaults to each measure's own policy.
    """
    p = _parent()
    g = p.add_argument_group("perturbation model")
    g.add_argument("--model", default="random", choices=list(JUDGE_MODELS),
                   help="perturbation model (default random; see `pyterrier-noise perturb --help`)" if for_robustness
                   else "perturbation model (default random; see below)")
    g.add_argument("--rel", type=float, default=1.0, help="binary relevance: label >= REL (default 1)")
    g.add_argument("--binarise", action="store_true",
                   help="random, rank-biased: write flipped qrels as 0/1 as Rashidi, Zobel and Moffat (2023) did "
                        "(default: relevant documents keep their grade)")
    g = p.add_argument_group("error rates (random, rank-biased)")
    g.add_argument("--tpr", type=float, help="probability that a relevant judgment stays relevant")
    g.add_argument("--fpr", type=float, help="probability that a non-relevant judgment becomes relevant")
    g.add_argument("--disc", type=float, help="discriminability d' (with --bias)")
    g.add_argument("--bias", type=float, help="judge criterion (with --disc); positive = conservative")
    g.add_argument("--judge", help=f"a named judge: {', '.join(JUDGE_NAMES)} (without --tpr/--fpr, --disc/--bias "
                                   f"or --judge: TPR 0.93, FPR 0.07)")
    g = p.add_argument_group("runs that drive the model (rank-biased, metarank, pool-depth)")
    g.add_argument("--model-runs", metavar="RUNS",
                   help="directory of TREC run files (or one file) the model reads"
                        + (" (default: the evaluated runs)" if for_robustness else ""))
    g.add_argument("--meta-depth", type=int, default=META_AP_DEPTH,
                   help=f"meta-AP depth N (default {META_AP_DEPTH})")
    if for_robustness:
        g.add_argument("--ties", choices=list(TIE_POLICIES), default=None,
                       help="tie policy for evaluation and for the model's run order "
                            "(default: each measure's own, i.e. trec_eval)")
    else:
        g.add_argument("--ties", choices=list(TIE_POLICIES), default="trec_eval",
                       help="run order for meta-AP and pools: trec_eval (default) or given (the other policies "
                            "order runs as trec_eval does)")
    g.add_argument("--weighting", choices=list(WEIGHTINGS), default="relative",
                   help="rank-biased: keep the rates' expected counts (relative) or use the weights as probabilities")
    g.add_argument("--depth", type=int, help="pool-depth: pool depth k")
    g = p.add_argument_group("disagreement models (flip-rate, metarank)")
    g.add_argument("--alt-qrels", help="qrels of the alternative assessor (dual assessments)")
    g.add_argument("--scope", choices=[s.replace("_", "-") for s in FIT_SCOPES], default="per-topic", help="fit per topic or pooled")
    g.add_argument("--improper", choices=list(IMPROPER_FITS), default="step",
                   help="metarank: what improper (separated) fits use: step, 0/1 by metarank as Webber, Chandar "
                        "and Carterette (2012) (default); rate, the topic's empirical flip rate; universal, the "
                        "pooled fit")
    g = p.add_argument_group("other models")
    g.add_argument("--matrix", help="confusion: CSV/TSV confusion matrix or calibration counts")
    g.add_argument("--sample-matrix", action="store_true",
                   help="confusion: redraw the matrix from the calibration counts in every replicate")
    g.add_argument("--fraction", type=float, help="removal: share of judgments made unjudged")
    g.add_argument("--exact", action="store_true", help="removal: exactly round(fraction * n) per topic")
    return p


# ---------------------------------------------------------------------------------------------
# judgment selection (select, judge)

def selection_stop() -> argparse.ArgumentParser:
    """The ``--stop-*`` options of ``select`` and ``judge`` (a :class:`~pyterrier_noise.selection.StopRule`)."""
    p = _parent()
    p.add_argument("--stop-top-residual", type=float, default=None, metavar="EPS",
                   help="stop early once the mean residual (RBP at the selection -m) of the top runs by midpoint is <= EPS")
    p.add_argument("--stop-top-k", type=int, default=None, metavar="K",
                   help="how many top runs --stop-top-residual averages (default: a third of the runs)")
    p.add_argument("--stop-leader", choices=list(STOP_LEADERS), default=None,
                   help="stop early once the leading run's base is above every other run's upper bound "
                        "(or projected value)")
    return p


def selection_measure(repeatable: bool = False, default: str = "'RBP(p=0.8)'") -> argparse.ArgumentParser:
    """``-m 'RBP(p=P)'``: the RBP persistence that selects documents to judge (``select``, ``judge``,
    ``serve``); with ``repeatable``, further ``-m`` are evaluated too."""
    p = _parent()
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE", default=None,
                   help=f"the measure that selects, RBP at a persistence, e.g. 'RBP(p=0.8)' (default {default})"
                        + ("; repeat it to evaluate at further persistences too" if repeatable else ""))
    return p


def rbp_persistences(measures: list[str] | None) -> tuple[float, list[float]]:
    """The RBP persistence that selects (the first ``-m``) and those evaluated besides, from ``-m``
    strings such as ``'RBP(p=0.8)'`` (the default when none is given): the selection commands spell
    RBP's persistence as a measure, as every other command does."""
    import re

    from .._validation import InputError
    ps = []
    for m in measures or ["RBP(p=0.8)"]:
        match = re.fullmatch(r"\s*RBP\(\s*p\s*=\s*([0-9.eE+-]+)\s*\)\s*", m)
        if match is None:
            raise InputError(f"-m {m!r}: judgment selection is by RBP; give -m 'RBP(p=P)', "
                             "e.g. -m 'RBP(p=0.8)'")
        try:
            p = float(match.group(1))
        except ValueError:
            p = float("nan")
        if not 0.0 < p < 1.0:
            raise InputError(f"-m {m!r}: the RBP persistence p must be strictly between 0 and 1")
        ps.append(p)
    return ps[0], ps[1:]



def selection_p(args: argparse.Namespace) -> float | None:
    """The RBP persistence of ``-m 'RBP(p=P)'`` (one), or None for the session's own."""
    if not args.measures:
        return None
    if len(args.measures) > 1:
        from .._validation import InputError
        raise InputError(f"-m: a session selects by one measure, got {len(args.measures)}")
    return rbp_persistences(args.measures)[0]


def stop_rule(args: argparse.Namespace) -> Any:
    """The :class:`~pyterrier_noise.selection.StopRule` that parsed ``--stop-*`` options ask for, or None."""
    from .._validation import InputError
    if args.stop_top_residual is None and args.stop_leader is None:
        if args.stop_top_k is not None:
            raise InputError("--stop-top-k goes with --stop-top-residual")
        return None
    from ..selection import StopRule
    return StopRule(top_residual=args.stop_top_residual, top_k=args.stop_top_k, leader=args.stop_leader)
