"""``pyterrier-noise robustness``: scores, rankings and significance under judging error
(:func:`pyterrier_noise.experiments.robustness_experiment`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import CORRECTIONS, TESTS
from . import options


# command line

ROBUSTNESS_EXAMPLES = """examples:
  pyterrier-noise robustness qrels.txt runs/ --replicates 200 --seed 1 -m 'RBP(p=0.8)' -m AP -m nDCG@10 \\
      --out robust                       # the default judge model: random flips, TPR 0.93, FPR 0.07
  pyterrier-noise robustness ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      --model rank-biased --judge smart_neutral --replicates 100 -m AP -m 'RBP(p=0.8)' \\
      --baseline run1 --correction holm --out robust-rb

--model and its options are those of `pyterrier-noise perturb` (see its --help; without --model,
random flips at TPR 0.93, FPR 0.07, the default judge model); models that need runs (rank-biased,
metarank, pool-depth) use the evaluated runs unless --model-runs is given.  Replicate i
is replicate i of `pyterrier-noise perturb` with the same model and --seed.

Writes to DIR: summary.tsv (one row per measure: ranking tau / tau_ap / RBO, pair conclusions),
systems.tsv, rankings.tsv, pairs.tsv, rank_given_observed.tsv, p_given_observed.tsv, labels.tsv,
baseline.tsv (with --baseline), experiment.json, and, unless --no-plots, distributions-<measure>.png,
ranks-<measure>.png and report.html (an interactive page that works offline: open it in a browser),
and manifest.json listing every file written.  The same
seed gives byte-identical TSV files.  A DIR holding other files is refused; --force replaces an
earlier robustness output (the files its manifest lists, so no old plot stays beside new tables).
--memory bounds the memory: run files are read and aligned a chunk of files at a time and the
replicates evaluated a chunk at a time, with the same output.
"""


def register_cli(subparsers: Any) -> None:
    """Add the ``robustness`` subcommand: ``pyterrier-noise robustness QRELS RUN... --model ...
    -m MEASURE... --out DIR``."""
    p = subparsers.add_parser(
        "robustness", help="robustness of scores, rankings and significance under judging error",
        description="Evaluate runs on N seeded perturbed versions of the qrels and report how scores, "
                    "system rankings and significance conclusions hold up (Rashidi, Zobel & Moffat 2023; "
                    "Webber, Chandar & Carterette 2012).",
        epilog=ROBUSTNESS_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.qrels_runs(runs_dest="run_files"),
                 options.measures(help="measure in ir_measures syntax (repeatable), e.g. 'RBP(p=0.8)', AP, nDCG@10"),
                 options.replicates(), options.seed(), options.out(force=True), options.progress(),
                 options.perturbation_model(for_robustness=True), options.run_cache(),
                 options.memory("the experiment")])
    p.add_argument("--baseline", help="name of the baseline run (its file name without .gz)")
    p.add_argument("--test", choices=list(TESTS), default="t", help="paired test over topics (default t)")
    p.add_argument("--correction", choices=list(CORRECTIONS), default=None,
                   help="multiple-comparison correction within each replicate (default none)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--no-plots", action="store_true", help="write the TSV files only (no PNG plots, no report.html)")
    p.set_defaults(handler=_cmd_robustness)


def _cmd_robustness(args: argparse.Namespace) -> int:
    import copy
    import json
    from pathlib import Path

    from .._output import OutputDirectory
    from .._validation import InputError, check_int
    from ..experiments import robustness_experiment
    from ..io import read_qrels, read_runs, run_file_arguments, run_name
    from .perturb import model_from_args, check_model_options

    check_model_options(args)
    directory = OutputDirectory(args.out, "robustness", force=args.force)
    qrels = read_qrels(args.qrels)
    runs: Any
    if args.model in ("rank-biased", "metarank", "pool-depth") and args.model_runs is None:
        runs = {}   # the model reads the evaluated runs: frames
        for item in args.run_files:
            for name, frame in read_runs(item).items():
                if name in runs:
                    raise InputError(f"two runs are named {name!r} (a run's name is its file name without .gz)")
                runs[name] = frame
    else:   # unread: the engine parses the files (one reader, one pool)
        runs = run_file_arguments(args.run_files)
    run_names = list(runs) if isinstance(runs, dict) else [run_name(f) for f in runs]
    baseline = args.baseline
    if baseline is not None and baseline not in run_names:
        alt = run_name(Path(baseline))  # a path to the run file is fine too
        if alt not in run_names:
            raise InputError(f"--baseline {baseline!r} is not one of the runs (e.g. {run_names[:3]})")
        baseline = alt
    margs = copy.copy(args)
    margs.ties = args.ties or "trec_eval"
    if margs.model_runs is None:
        margs.model_runs = runs
    model = model_from_args(margs)
    n = check_int("--replicates", args.replicates, 1)
    from .._validation import check_memory
    topics = qrels["qid"].nunique()
    check_memory(f"--replicates {n:,}", 8 * len(run_names) * topics * n * len(args.measures),
                 f"{len(run_names)} runs x {topics:,} topics x {n:,} replicates x {len(args.measures)} measure(s), "
                 "8 bytes each")
    res = robustness_experiment(runs, None, qrels, args.measures, model, n_replicates=n, seed=args.seed,
                                baseline=baseline, test=args.test, correction=args.correction, correction_alpha=args.alpha,
                                ties=args.ties, progress=args.progress, memory=args.memory * 2 ** 30)
    out = Path(args.out)
    page = None
    with directory.staging() as stage:
        if args.no_plots:
            res.save(stage, plots=False)
        else:
            from ..report.words import command_line
            title = f"Robustness of {len(res.names)} runs under {options.judge_label(args)}"
            page = _save_and_report(res, stage, title,
                                    command_line(getattr(args, "argv", None)), args.progress)
    info = {"model": repr(model), "qrels": str(args.qrels), "runs": len(runs), "measures": res.measures,
            "replicates": n, "seed": args.seed, "baseline": baseline, "test": args.test,
            "correction": args.correction, "alpha": args.alpha, "ties": args.ties,
            "topics": len(res.topics)}
    directory.write("experiment.json", json.dumps(info, indent=1) + "\n")
    if page is not None:
        directory.write("report.html", page)
    manifest = directory.finish()
    cols = ["measure", "kendall_tau", "tau_ap", "rbo", "significant_pairs", "kept_significant", "lost",
            "reversed", "gained"]
    print(res.summary[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}",
                                      formatters={"significant_pairs": lambda v: f"{int(v)}"}))
    print("kendall_tau, tau_ap, rbo: agreement of each replicate's ranking with the unperturbed one (1 = same order); "
          "significant_pairs: count under the unperturbed qrels; kept_significant, lost, reversed: shares of "
          "(significant pair, replicate); gained: share of (non-significant pair, replicate).")
    files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    print(f"wrote {len(files) + 1} files to {out}/ (manifest.json lists them): "
          f"{len(res.names)} runs x {len(res.topics)} topics x {n} replicates of {options.judge_label(args)}")
    if not args.no_plots:
        print(f"open {out / 'report.html'} in a browser for the interactive report")
    return 0


#: processes that draw the plots while this one builds the report page and writes the tables
SAVE_WORKERS = 2


def _save_in_worker(task: tuple[str, str]) -> str:
    """Save one plot of the result the pool was opened with (inherited through fork, never pickled:
    it holds every replicate)."""
    from .._pool import worker_state
    stage, name = task
    worker_state().save(stage, plots=True, progress=False, only=[name])
    return name


def _save_and_report(res: Any, stage: Any, title: str, command: str, progress: bool = False) -> str:
    """Write the result's tables and PNG plots to ``stage`` (``RobustnessResult.save``) and return
    the interactive report page: where processes can be forked, the plots (matplotlib, most of
    the time) are drawn by :data:`SAVE_WORKERS` forked workers, the costly ones first, while this
    process builds the page and writes the tables; else one after the other.  The files are the
    same either way."""
    from .._pool import fork_available, worker_pool
    from .._progress import progress_bar, stderr_is_terminal
    from ..report import build_report

    def page() -> str:
        return build_report(title, robustness=res, command=command).html()

    if not fork_available():
        res.save(stage, plots=True)
        return page()
    tables = res.file_names(plots=False)
    plots = [n for n in res.file_names(plots=True) if n not in set(tables)]
    # the box plots of every system's replicate means take longest: they go first, so that the
    # workers finish together
    plots.sort(key=lambda n: not n.startswith("distributions-"))
    with worker_pool(min(SAVE_WORKERS, len(plots)) or 1, state=res) as pool:
        jobs = pool.imap_unordered(_save_in_worker, [(str(stage), n) for n in plots], chunksize=1)
        html = page()
        bar = progress_bar(total=len(tables) + len(plots), desc="writing tables and plots", unit="file",
                           enabled=progress and stderr_is_terminal())
        for name in tables:
            res.save(stage, plots=False, progress=False, only=[name])
            bar.update(1)
        for _ in jobs:
            bar.update(1)
        bar.close()
    return html
