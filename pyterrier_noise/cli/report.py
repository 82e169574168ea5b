"""``pyterrier-noise report``: evaluate runs and write an HTML report (:mod:`pyterrier_noise.report`)."""
from __future__ import annotations

import argparse
from typing import Any

from . import options

REPORT_EXAMPLES = """examples:
  pyterrier-noise report qrels.txt runs/ --out report-dir
  pyterrier-noise report ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      -m 'RBP(p=0.8)' -m nDCG@10 --pooled ../shared/data/trec-covid-round1/runs-metadata.csv --out covid-report
  pyterrier-noise report qrels.txt runs/ --noisy-judges --replicates 100 --judging --budget 2000 --tie-stats \
      --out full-report

The page has a section for each part asked for: scores with their uncertainty (always), noisy judges
(--noisy-judges: --replicates N replicates of the qrels, default 100, with random judge errors at
TPR 0.93 and FPR 0.07, the default judge model, as in Rashidi, Zobel and Moffat 2023), which
documents to judge next (--judging: depth pooling and Moffat, Webber and Zobel's 2007 Methods A, B
and C replayed against the qrels up to --budget judgments, default half the qrels) and tied scores
in the runs (--tie-stats; Yang 2019).  Each figure says what to conclude from it.  --memory bounds
the reading of the scores, of the noisy judges' runs and of the tie statistics: more run files than
fit are read a chunk of files at a time (the same page); --judging reads every run at once.
"""


def register_cli(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    p = subparsers.add_parser("report", help="write an HTML report of an evaluation with plots",
                              description="Evaluate runs and write a self-contained, interactive HTML report "
                                          "to OUT/report.html: each run's RBP(p=0.8) range (hover for its numbers, "
                                          "zoom and pan), what to conclude from it, and a sortable table of the "
                                          "scores. It works offline (Plotly's JavaScript is embedded).",
                              epilog=REPORT_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
                              parents=[options.qrels_runs(), options.measures(
                                  required=False,
                                  help="extra measures besides RBP(p=0.8) (repeatable; ir_measures syntax)"),
                                  options.out(help="directory for report.html", force=True),
                                  options.replicates(), options.seed(help="seed of the noisy judges' replicates "
                                                                         "(default 0)"),
                                  options.progress(), options.memory("the evaluation of the scores")])
    p.add_argument("--pooled", default=None,
                   help="CSV with columns run, contributed_judgments (yes/no), e.g. TREC-COVID's runs-metadata.csv")
    p.add_argument("--noisy-judges", action="store_true",
                   help="add the noisy-judges section: --replicates replicates of the qrels with random judge "
                        "errors (TPR 0.93, FPR 0.07: the default judge model)")
    p.add_argument("--judging", action="store_true",
                   help="add the judging section: pooling and Methods A, B, C up to --budget judgments")
    p.add_argument("--budget", type=int, default=None, metavar="N",
                   help="with --judging: the judging budget (default: half the number of judged documents, "
                        "at least 100)")
    p.add_argument("--tie-stats", action="store_true", help="add the section on tied scores in the runs")
    p.set_defaults(handler=_cmd_report)


def _read_pooled(path: str) -> Any:
    """The ``--pooled`` table (columns ``run`` and ``contributed_judgments``, yes/no), validated like a
    run or qrels file: a binary file, a device, bad UTF-8, a missing column or another value is a
    sentence naming the file (and the line)."""
    import io

    import pandas as pd

    from .._validation import InputError
    from ..io.reader import read_text_file
    data = read_text_file(path)
    if data[:2] == b"\x1f\x8b":
        import gzip
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputError(f"--pooled {path}: looks like gzip but cannot be decompressed ({exc})") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"--pooled {path} line {line}: not UTF-8 text (byte {data[exc.start]:#04x}); "
                         "expected a CSV file") from None
    try:
        meta = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"--pooled {path}: not a CSV table ({str(exc).strip()})") from None
    missing = [c for c in ("run", "contributed_judgments") if c not in meta.columns]
    if missing:
        raise InputError(f"--pooled {path}: no column {', '.join(repr(c) for c in missing)} (found "
                         f"{', '.join(map(repr, meta.columns[:8]))}); expected columns run, contributed_judgments "
                         "(yes/no), as TREC-COVID's runs-metadata.csv")
    value = meta["contributed_judgments"].str.strip().str.lower()
    bad = ~value.isin(["yes", "no"])
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(f"--pooled {path} line {i + 2}: contributed_judgments is "
                         f"{meta['contributed_judgments'].iloc[i]!r}; expected yes or no")
    return meta.assign(contributed_judgments=value)


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path


    from .._output import OutputDirectory
    from ..io import read_qrels, run_file_arguments
    from ..measures import evaluate_arrays
    directory = OutputDirectory(args.out, "report", force=args.force)
    meta = _read_pooled(args.pooled) if args.pooled else None
    qrels = read_qrels(args.qrels)
    runs = run_file_arguments(args.runs)      # files go straight to the engine's reader
    measures = ["RBP(p=0.8)"] + [m for m in (args.measures or []) if m != "RBP(p=0.8)"]
    memory = args.memory * 2 ** 30
    res = evaluate_arrays(runs, qrels, measures,   # topic mismatches announced as by `eval`; means over the qrels' topics
                          progress=args.progress, memory=memory).to_frame()
    wide = res.pivot(index="name", columns="measure", values="value")[measures]
    wide["RBP residual"] = res[res["measure"] == "RBP(p=0.8)"].set_index("name")["residual"]
    wide = wide[["RBP(p=0.8)", "RBP residual"] + measures[1:]].sort_values("RBP(p=0.8)", ascending=False)
    wide.columns.name, wide.index.name = None, "system"
    highlight: list[str] = []
    if meta is not None:
        unknown = sorted(set(meta["run"]) - set(wide.index))
        if unknown:
            from .._validation import announce
            announce(f"--pooled {args.pooled}: {len(unknown)} run(s) named there are not among the runs evaluated "
                     f"(e.g. {', '.join(map(repr, unknown[:3]))}); they are not shown")
        highlight = meta.loc[meta["contributed_judgments"] != "yes", "run"].tolist()
    from ..report import build_report
    from ..report.words import command_line
    from .._validation import check_int
    from .._progress import status
    from .._validation import InputError
    robust = judging = ties = None
    if args.budget is not None and not args.judging:
        raise InputError("--budget goes with --judging (the judging section)")
    if args.noisy_judges:
        from ..experiments import robustness_experiment
        from ..judges import RandomFlips
        n = check_int("--replicates", args.replicates, 1)
        robust = robustness_experiment(runs, None, qrels, measures, RandomFlips(**options.DEFAULT_JUDGE),
                                       n_replicates=n, seed=args.seed, progress=None if args.progress else False,
                                       on_topic_mismatch="ignore", memory=memory)   # a chunk of files at a time
    if args.judging:
        from ..selection import compare_methods
        budget = (check_int("--budget", args.budget, 4) if args.budget is not None
                  else max(100, len(qrels) // 2))
        with status(f"judging simulation: pooling and Methods A, B, C up to {budget} judgments", args.progress):
            judging, _ = compare_methods(runs, qrels, methods=("pool", "A", "B", "C"),
                                         checkpoints=sorted({budget // 4, budget // 2, budget}), p_eval=[0.8])
    if args.tie_stats:   # per run: a chunk of files at a time, joined into the tables of one reading
        from ..ties import tie_stats_in_chunks
        ties = tie_stats_in_chunks(runs, progress=args.progress, memory=memory)
    page = build_report(f"Evaluation of {len(runs)} runs on {qrels['qid'].nunique()} topics", scores=wide,
                        highlight=highlight, robustness=robust, selection=judging, tie_stats=ties,
                        command=command_line(getattr(args, "argv", None)))
    directory.write("report.html", page.html())
    directory.finish()
    if args.noisy_judges:
        print(f"noisy judges: {args.replicates} replicates, {options.DEFAULT_JUDGE_TEXT}")
    print(f"Report: {Path(args.out) / 'report.html'} (open it in a browser; it works offline)")
    return 0
