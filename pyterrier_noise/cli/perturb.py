"""``pyterrier-noise perturb``: seeded replicate qrels under a judge-error model (:mod:`pyterrier_noise.judges`)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._vocab import META_AP_DEPTH, RUN_ORDERS
from . import options


# command line

PERTURB_EXAMPLES = """models (--model):
  random       random flips at --tpr/--fpr, or --disc/--bias, or --judge NAME (Rashidi et al. 2023)
  rank-biased  the same error counts placed by meta-AP over --model-runs (Rashidi et al. 2023, Figs 2-3)
  flip-rate    flip rates fitted on dual assessments --alt-qrels (Webber et al. 2012)
  metarank     metarank-logistic model fitted on --alt-qrels with metarank from --model-runs (Webber et al. 2012)
  confusion    graded judge from a confusion matrix --matrix FILE (Goldberg et al. 2017)
  pool-depth   keep only judgments in the depth --depth pool of --model-runs (Yang 2019, Sec. 4.6)
  removal      make a --fraction of judgments unjudged

judges (--judge): smart_neutral (TPR 0.93, FPR 0.07), nist_primary, crowd_secondary, extreme
Without --model: random flips at TPR 0.93, FPR 0.07 (the default judge model, the main setting of
Rashidi, Zobel and Moffat 2023; demo and report use it too).  random and rank-biased without
--tpr/--fpr, --disc/--bias or --judge use those rates.

examples:
  pyterrier-noise perturb qrels.txt --replicates 100 --seed 1 --out reps   # the default judge model
  pyterrier-noise perturb qrels.txt --model random --tpr 0.9 --fpr 0.1 --replicates 100 --seed 1 --out reps
  pyterrier-noise perturb qrels.txt --model random --judge smart_neutral --replicates 1000 --out reps
  pyterrier-noise perturb ../shared/data/trec-covid-round1/qrels-rnd1.txt --model rank-biased \\
      --tpr 0.93 --fpr 0.07 --model-runs ../shared/data/trec-covid-round1/runs --replicates 100 --out reps
  pyterrier-noise perturb qrels.txt --model metarank --alt-qrels second-assessor.txt --model-runs runs/ --out reps
  pyterrier-noise perturb qrels.txt --model confusion --matrix judge.csv --replicates 100 --out reps
  pyterrier-noise perturb qrels.txt --model pool-depth --depth 10 --model-runs runs/ --out reps10
  pyterrier-noise perturb qrels.txt --model removal --fraction 0.2 --replicates 50 --out reps

Writes DIR/replicate-0001.qrels ... (TREC qrels; unjudged documents left out) and DIR/manifest.json
(listing every file written).  A DIR holding other files is refused; --force replaces an earlier
perturb output (the files its manifest lists).
The same seed gives byte-identical files.  A --matrix file is a CSV/TSV whose first column holds the
true labels and whose header holds the observed labels; rows are probabilities P(observed | true)
summing to 1, or calibration counts (non-negative integers).
"""


def _read_matrix(path: str) -> Any:
    import numpy as np
    import pandas as pd

    from .._validation import InputError
    from ..correction import JudgeCalibration
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such matrix file")
    try:
        frame = pd.read_csv(p, sep=None, engine="python", index_col=0)
    except Exception as exc:  # pandas raises several parser errors
        raise InputError(f"{path}: cannot read a matrix ({exc})") from None
    try:
        values = frame.to_numpy(dtype=np.float64)
        labels = [float(x) for x in frame.index]
        columns = [float(x) for x in frame.columns]
    except (TypeError, ValueError):
        raise InputError(f"{path}: expected numeric labels (first column and header) and numeric entries") from None
    if labels != columns:
        raise InputError(f"{path}: the header (observed labels {columns}) must list the same labels in the same "
                         f"order as the first column (true labels {labels})")
    sums = values.sum(axis=1)
    if np.all(values == np.round(values)) and not np.allclose(sums, 1.0):
        return JudgeCalibration(values, labels=[int(x) if x.is_integer() else x for x in labels])
    return pd.DataFrame(values, index=labels, columns=labels)


#: the model options each --model uses (the others are refused when given: never silently ignored)
_USES = {
    "random": {"tpr", "fpr", "disc", "bias", "judge", "binarise"},
    "rank-biased": {"tpr", "fpr", "disc", "bias", "judge", "binarise", "model_runs", "meta_depth", "weighting"},
    "flip-rate": {"alt_qrels", "scope"},
    "metarank": {"model_runs", "meta_depth", "alt_qrels", "scope", "improper"},
    "confusion": {"matrix", "sample_matrix"},
    "pool-depth": {"model_runs", "depth"},
    "removal": {"fraction", "exact"},
}
#: the default of each model option (given = different from it)
_DEFAULTS = {"tpr": None, "fpr": None, "disc": None, "bias": None, "judge": None, "binarise": False,
             "model_runs": None,
             "meta_depth": None, "weighting": "relative", "alt_qrels": None, "scope": "per-topic",
             "improper": "step", "matrix": None, "sample_matrix": False, "depth": None, "fraction": None,
             "exact": False}


def check_model_options(args: argparse.Namespace) -> None:
    """Refuse a model option that ``--model`` does not use (``--model removal --tpr 0.5`` would ignore
    the rate), naming the models that use it."""
    from .._validation import InputError
    defaults = {**_DEFAULTS, "meta_depth": META_AP_DEPTH}
    given = [d for d, v in defaults.items() if getattr(args, d, v) != v]
    unused = [d for d in given if d not in _USES.get(args.model, set(given))]
    if unused:
        d = unused[0]
        users = [m for m, uses in _USES.items() if d in uses]
        raise InputError(f"--model {args.model} does not use --{d.replace('_', '-')} (used by "
                         f"{', '.join(users)}); remove it")
    rates = [d for d in given if d in ("tpr", "fpr", "disc", "bias", "judge")]
    if args.model == "rank-biased" and args.weighting == "absolute" and rates:
        raise InputError(f"--weighting absolute does not use --{rates[0]} (the rank weights are the flip "
                         "probabilities); remove it, or give --weighting relative")


def model_from_args(args: argparse.Namespace) -> Any:
    """The judge-error model (a :class:`~pyterrier_noise.judges.JudgmentPerturbation`) the options ask for."""
    from .._validation import InputError
    from ..judges import (JUDGES, ConfusionJudge, FlipRateModel, MetarankLogisticModel, PoolDepthReduction,
                          RandomFlips, RandomRemoval, RankBiasedFlips, sdt_rates)
    model = args.model

    def rates() -> dict:
        if args.judge is not None:
            if any(v is not None for v in (args.tpr, args.fpr, args.disc, args.bias)):
                raise InputError("give --judge, or --tpr and --fpr, or --disc and --bias (one of them)")
            if args.judge not in JUDGES:
                raise InputError(f"unknown --judge {args.judge!r}; expected one of {list(JUDGES)}")
            t, f = sdt_rates(*JUDGES[args.judge])
            return {"tpr": t, "fpr": f}
        if args.disc is not None or args.bias is not None:
            if args.disc is None or args.bias is None or args.tpr is not None or args.fpr is not None:
                raise InputError("give both --disc and --bias (and not --tpr/--fpr)")
            t, f = sdt_rates(args.disc, args.bias)
            return {"tpr": t, "fpr": f}
        if args.tpr is None and args.fpr is None:
            return dict(options.DEFAULT_JUDGE)   # the default judge model
        if args.tpr is None or args.fpr is None:
            raise InputError(f"--model {model} needs --tpr and --fpr, or --disc and --bias, or --judge NAME "
                             "(or none of them: TPR 0.93, FPR 0.07)")
        return {"tpr": args.tpr, "fpr": args.fpr}

    def need(value: Any, flag: str) -> Any:
        if value is None:
            raise InputError(f"--model {model} needs {flag}")
        return value

    labels = {"rel": args.rel}
    ties = args.ties if args.ties in RUN_ORDERS else "trec_eval"   # run order for meta-AP and pools
    if model == "random":
        return RandomFlips(**rates(), **labels, binarise=args.binarise, seed=args.seed)
    if model == "rank-biased":
        r = rates() if args.weighting == "relative" else {"tpr": None, "fpr": None}
        return RankBiasedFlips(**r, runs=need(args.model_runs, "--model-runs DIR"), depth=args.meta_depth,
                               ties=ties,
                               weighting=args.weighting, **labels, binarise=args.binarise, seed=args.seed)
    if model == "flip-rate":
        return FlipRateModel(args.scope.replace("-", "_"), **labels, seed=args.seed).fit(
            args.qrels, need(args.alt_qrels, "--alt-qrels FILE"))
    if model == "metarank":
        return MetarankLogisticModel(need(args.model_runs, "--model-runs DIR"), scope=args.scope.replace("-", "_"),
                                     improper=args.improper, depth=args.meta_depth, ties=ties, **labels,
                                     seed=args.seed).fit(args.qrels, need(args.alt_qrels, "--alt-qrels FILE"))
    if model == "confusion":
        return ConfusionJudge(_read_matrix(need(args.matrix, "--matrix FILE")), sample_matrix=args.sample_matrix,
                              seed=args.seed)
    if model == "pool-depth":
        return PoolDepthReduction(need(args.model_runs, "--model-runs DIR"), need(args.depth, "--depth K"),
                                  ties=ties)
    if model == "removal":
        return RandomRemoval(need(args.fraction, "--fraction F"), exact=args.exact, seed=args.seed)
    raise InputError(f"unknown model {model!r}")


def _cmd_perturb(args: argparse.Namespace) -> int:
    import numpy as np

    from .._output import OutputDirectory
    from .._validation import check_int
    from ..judges import ConfusionJudge
    n = check_int("--replicates", args.replicates, 1)
    check_model_options(args)
    directory = OutputDirectory(args.out, "perturb", force=args.force)
    from .._validation import check_memory
    from ..io import read_qrels
    judged = len(read_qrels(args.qrels))
    check_memory(f"--replicates {n:,}", 2 * 8 * judged * n,
                 f"{judged:,} judgments x {n:,} replicates, a label and a code of 8 bytes each")
    model = model_from_args(args)
    reps = model.replicates(args.qrels, n, start=args.start)
    out = Path(args.out)
    with directory.staging() as stage:
        reps.write_trec(stage, progress=args.progress)
    directory.finish({"model": repr(model), "qrels": str(args.qrels), "replicates": n, "start": args.start,
                      "seed": reps.seed})
    msg = (f"wrote {n} replicate(s) of {len(reps.table)} judgment(s) to {out}/ ({reps.file_names()[0]} ..): "
           f"{options.judge_label(args)}")
    rates = reps.realised_rates(rel=args.rel)
    if isinstance(model, ConfusionJudge):
        kept = np.nanmean(reps.labels == reps.table.labels[:, None], axis=0)
        msg += f"\nlabels unchanged: {kept.mean():.4f} of judgments (mean over replicates)"
    else:
        msg += (f"\nrealised over replicates (mean): TPR {rates['tpr'].mean():.4f}, FPR {rates['fpr'].mean():.4f}, "
                f"judged {rates['n_judged'].mean():.1f}, relevant {rates['n_relevant'].mean():.1f} "
                f"(originally {int(rates['n_relevant_original'].iloc[0])})")
    print(msg)
    return 0


def register_cli(subparsers: Any) -> None:
    """Add the ``perturb`` subcommand (``pyterrier-noise perturb QRELS --model ... --out DIR``)."""
    p = subparsers.add_parser(
        "perturb", help="write seeded replicate qrels under a judge-error model",
        description="Write N seeded replicates of QRELS under a judgment perturbation model as TREC qrels "
                    "files DIR/replicate-0001.qrels ...",
        epilog=PERTURB_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.replicates(), options.seed(), options.out(force=True), options.progress(),
                 options.perturbation_model()])
    p.add_argument("qrels", metavar="QRELS", help="TREC qrels file (plain or .gz)")
    p.add_argument("--start", type=int, default=0, help="number of the first replicate minus one (default 0)")
    p.set_defaults(handler=_cmd_perturb)
