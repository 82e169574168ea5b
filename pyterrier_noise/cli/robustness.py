"""The ``pyterrier-noise`` command(s) of :mod:`pyterrier_noise.experiments.robustness`."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from .._validation import InputError, check_int
from ..stats.tests import CORRECTIONS, TESTS

from ..experiments.robustness import robustness_experiment


# command line

ROBUSTNESS_EXAMPLES = """examples:
  pyterrier-noise robustness qrels.txt runs/ --model random --tpr 0.93 --fpr 0.07 --replicates 200 \\
      --seed 1 -m 'RBP(p=0.8)' -m AP -m nDCG@10 --out robust
  pyterrier-noise robustness ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      --model rank-biased --judge smart_neutral --replicates 100 -m AP -m 'RBP(p=0.8)' \\
      --baseline run1 --correction holm --out robust-rb

--model and its options are those of `pyterrier-noise perturb` (see its --help); models that need
runs (rank-biased, metarank, pool-depth) use the evaluated runs unless --runs is given.  Replicate i
is replicate i of `pyterrier-noise perturb` with the same model and --seed.

Writes to DIR: summary.tsv (one row per measure: ranking tau / tau_ap / RBO, pair conclusions),
systems.tsv, rankings.tsv, pairs.tsv, rank_given_observed.tsv, p_given_observed.tsv, labels.tsv,
baseline.tsv (with --baseline), experiment.json, and distributions-<measure>.png and
ranks-<measure>.png (unless --no-plots).  The same seed gives byte-identical TSV files.
"""

# options of `perturb` that robustness defines itself (or does not use)
_OWN_DESTS = {"help", "qrels", "replicates", "seed", "start", "out"}


def _model_parser() -> argparse.ArgumentParser:
    """The ``perturb`` subcommand's parser, built in a private parser so that robustness offers
    exactly the same ``--model`` options without redefining them."""
    from . import perturb as perturbation
    holder = argparse.ArgumentParser(add_help=False).add_subparsers()
    perturbation.register_cli(holder)
    return holder.choices["perturb"]


def register_cli(subparsers: Any) -> None:
    """Add the ``robustness`` subcommand: ``pyterrier-noise robustness QRELS RUN... --model ...
    -m MEASURE... --out DIR``."""
    p = subparsers.add_parser(
        "robustness", help="robustness of scores, rankings and significance under judging error",
        description="Evaluate runs on N seeded perturbed versions of the qrels and report how scores, "
                    "system rankings and significance conclusions hold up (Rashidi, Zobel & Moffat 2023; "
                    "Webber, Chandar & Carterette 2012).",
        epilog=ROBUSTNESS_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("qrels", help="TREC qrels file (plain or .gz)")
    p.add_argument("run_files", nargs="+", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    p.add_argument("-m", "--measure", action="append", required=True, dest="measures", metavar="MEASURE",
                   help="measure in ir_measures syntax (repeatable), e.g. 'RBP(p=0.8)', AP, nDCG@10")
    p.add_argument("--replicates", "-n", type=int, default=100, help="number of replicates (default 100)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--baseline", help="name of the baseline run (its file name without .gz)")
    p.add_argument("--test", choices=list(TESTS), default="t", help="paired test over topics (default t)")
    p.add_argument("--correction", choices=list(CORRECTIONS), default=None,
                   help="multiple-comparison correction within each replicate (default none)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--no-plots", action="store_true", help="write the TSV files only")
    # the perturbation model's options, taken from `perturb` itself
    model_parser = _model_parser()
    groups = {}
    for group in model_parser._action_groups:
        for action in group._group_actions:
            if action.dest in _OWN_DESTS:
                continue
            if action.dest == "model":
                action.help = "perturbation model (see `pyterrier-noise perturb --help`)"
            if action.dest == "ties":
                action.default = None
                action.help = ("tie policy for evaluation and for the model's run order "
                               "(default: each measure's own, i.e. trec_eval)")
            title = group.title if group.title not in ("options", "optional arguments", "positional arguments") \
                else "perturbation model"
            if title not in groups:
                groups[title] = p.add_argument_group(title)
            groups[title]._add_action(action)
    p.set_defaults(handler=_cmd_robustness)


def _cmd_robustness(args: argparse.Namespace) -> int:
    import copy
    import json

    from ..io.trec import run_name, read_qrels, read_runs
    from .perturb import _model_from_args

    qrels = read_qrels(args.qrels)
    runs: dict[str, pd.DataFrame] = {}
    for item in args.run_files:
        for name, frame in read_runs(item).items():
            if name in runs:
                raise InputError(f"two runs are named {name!r} (a run's name is its file name without .gz)")
            runs[name] = frame
    baseline = args.baseline
    if baseline is not None and baseline not in runs:
        alt = run_name(Path(baseline))  # a path to the run file is fine too
        if alt not in runs:
            raise InputError(f"--baseline {baseline!r} is not one of the runs (e.g. {list(runs)[:3]})")
        baseline = alt
    margs = copy.copy(args)
    margs.ties = args.ties or "trec_eval"
    if margs.runs is None:
        margs.runs = runs
    model = _model_from_args(margs)
    n = check_int("--replicates", args.replicates, 1)
    res = robustness_experiment(runs, None, qrels, args.measures, model, n_replicates=n, seed=args.seed,
                                baseline=baseline, test=args.test, correction=args.correction, alpha=args.alpha,
                                ties=args.ties, verbose=True)
    out = Path(args.out)
    res.save(out, plots=not args.no_plots)
    info = {"model": repr(model), "qrels": str(args.qrels), "runs": len(runs), "measures": res.measures,
            "replicates": n, "seed": args.seed, "baseline": baseline, "test": args.test,
            "correction": args.correction, "alpha": args.alpha, "ties": args.ties,
            "topics": len(res.topics)}
    (out / "experiment.json").write_bytes((json.dumps(info, indent=1) + "\n").encode("utf-8"))
    cols = ["measure", "kendall_tau", "tau_ap", "rbo", "significant_pairs", "kept_significant", "lost",
            "reversed", "gained"]
    print(res.summary[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"wrote {len(res.frames())} tables{'' if args.no_plots else ' and plots'} to {out}/: "
          f"{len(res.names)} runs x {len(res.topics)} topics x {n} replicates of {model!r}")
    return 0
