"""Options shared by the ``pyterrier-noise`` commands, as small argparse parent parsers.

Each function returns a fresh ``argparse.ArgumentParser(add_help=False)`` that a command lists in
``parents=[...]``; a fresh one each time, because argparse shares the parent's actions with the
child (changing one command's default must not change another's).  The house vocabulary
(LAYOUT.md): ``--replicates`` for the number of replicates, ``--seed`` (default 0), ``--p`` for
RBP persistence, tie policies by their house names, progress bars on with ``--quiet`` to turn them
off.

This module imports only the standard library, so that ``--help`` answers at once: the choices
below are literal copies of the library's public constants (a test checks that they agree).
"""
from __future__ import annotations

import argparse
from typing import Any, Sequence

# ---------------------------------------------------------------------------------------------
# the library's choices, copied so that building the parser imports nothing heavy
# (tests/test_cli_options.py checks each against the library's own constant)

#: engine.TIE_POLICIES
TIE_POLICIES = ("trec_eval", "given", "expected", "optimistic", "pessimistic")
#: the orders of a run that the judge models and pools can follow (judges.models.RUN_ORDERS)
RUN_ORDERS = ("trec_eval", "given")
#: judges.JUDGES (named judges of Rashidi et al. 2023)
JUDGE_NAMES = ("smart_neutral", "nist_primary", "crowd_secondary", "extreme")
#: judges.models.META_AP_DEPTH
META_AP_DEPTH = 1000
#: stats.TESTS and stats.CORRECTIONS
TESTS = ("t", "wilcoxon", "sign", "randomisation", "bootstrap")
CORRECTIONS = ("bonferroni", "holm", "fdr_bh")
#: selection.METHODS
SELECTION_METHODS = ("pool", "A", "B", "C")
#: ties.BAND_ORDERS and PRECISIONS
BAND_ORDERS = ("given", "trec_eval", "input")
PRECISIONS = ("float64", "float32")
#: experiments.CORRELATIONS
CORRELATIONS = ("kendall", "rbo")
#: crowd.METHODS
PAIRWISE_METHODS = ("preference", "absolute", "ratio", "combined")
#: perturbation models of ``perturb`` and ``robustness``
MODELS = ("random", "rank-biased", "flip-rate", "metarank", "confusion", "pool-depth", "removal")


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


# ---------------------------------------------------------------------------------------------
# inputs and outputs

def qrels_runs(runs_dest: str = "runs", qrels_help: str = "TREC qrels file (plain or .gz)",
               runs_help: str = "TREC run file (plain or .gz) or a directory of them") -> argparse.ArgumentParser:
    """Positional QRELS and one or more RUN (files or directories)."""
    p = _parent()
    p.add_argument("qrels", help=qrels_help)
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
    """``--replicates`` / ``-n``: the number of replicates."""
    p = _parent()
    p.add_argument("--replicates", "-n", type=int, default=default, help=f"number of replicates (default {default})")
    return p


def progress() -> argparse.ArgumentParser:
    """``--quiet`` turns the progress bars off (``--progress``, the default, keeps them on)."""
    p = _parent()
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quiet", "-q", dest="progress", action="store_false", default=True,
                   help="no progress bars")
    g.add_argument("--progress", dest="progress", action="store_true",
                   help="show progress bars on stderr (the default)")
    return p


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
    g.add_argument("--model", required=True, choices=list(MODELS),
                   help="perturbation model (see `pyterrier-noise perturb --help`)" if for_robustness
                   else "perturbation model (see below)")
    g.add_argument("--rel", type=float, default=1.0, help="binary relevance: label >= REL (default 1)")
    g.add_argument("--binarise", action="store_true",
                   help="random, rank-biased: write flipped qrels as 0/1 as Rashidi, Zobel and Moffat (2023) did "
                        "(default: relevant documents keep their grade)")
    g = p.add_argument_group("error rates (random, rank-biased)")
    g.add_argument("--tpr", type=float, help="probability that a relevant judgment stays relevant")
    g.add_argument("--fpr", type=float, help="probability that a non-relevant judgment becomes relevant")
    g.add_argument("--disc", type=float, help="discriminability d' (with --bias)")
    g.add_argument("--bias", type=float, help="judge criterion (with --disc); positive = conservative")
    g.add_argument("--judge", help=f"a named judge: {', '.join(JUDGE_NAMES)}")
    g = p.add_argument_group("runs (rank-biased, metarank, pool-depth)")
    g.add_argument("--runs", help="directory of TREC run files (or one file)")
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
    g.add_argument("--weighting", choices=["relative", "absolute"], default="relative",
                   help="rank-biased: keep the rates' expected counts (relative) or use the weights as probabilities")
    g.add_argument("--depth", type=int, help="pool-depth: pool depth k")
    g = p.add_argument_group("disagreement models (flip-rate, metarank)")
    g.add_argument("--alt-qrels", help="qrels of the alternative assessor (dual assessments)")
    g.add_argument("--scope", choices=["per-topic", "universal"], default="per-topic", help="fit per topic or pooled")
    g.add_argument("--improper", choices=["step", "rate", "universal"], default="step",
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
                   help="stop early once the mean residual (RBP at --p) of the top runs by midpoint is <= EPS")
    p.add_argument("--stop-top-k", type=int, default=None, metavar="K",
                   help="how many top runs --stop-top-residual averages (default: a third of the runs)")
    p.add_argument("--stop-leader", choices=["upper", "projected"], default=None,
                   help="stop early once the leading run's base is above every other run's upper bound "
                        "(or projected value)")
    return p


def stop_rule(args: argparse.Namespace) -> Any:
    """The :class:`~pyterrier_noise.selection.StopRule` that parsed ``--stop-*`` options ask for, or None."""
    from .._validation import InputError
    if args.stop_top_residual is None and args.stop_leader is None:
        if args.stop_top_k is not None:
            raise InputError("--stop-top-k goes with --stop-top-residual")
        return None
    from ..selection import StopRule
    return StopRule(top_residual=args.stop_top_residual, top_k=args.stop_top_k, leader=args.stop_leader)
