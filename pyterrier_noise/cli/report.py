"""``pyterrier-noise report``: evaluate runs and write an HTML report (:mod:`pyterrier_noise.report`)."""
from __future__ import annotations

import argparse
from typing import Any

from . import options

REPORT_EXAMPLES = """examples:
  pyterrier-noise report qrels.txt runs/ --out report-dir
  pyterrier-noise report ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      -m 'RBP(p=0.8)' -m nDCG@10 --out covid-report
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
                                  options.out(help="directory for report.html", force=True)])
    p.add_argument("--pooled", default=None,
                   help="CSV with columns run, contributed_judgments (yes/no), e.g. TREC-COVID's runs-metadata.csv")
    p.set_defaults(handler=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd

    from .._output import OutputDirectory
    from ..io import read_qrels, run_file_arguments
    from ..measures import evaluate
    from ..report import Report, write_report
    directory = OutputDirectory(args.out, "report", force=args.force)
    qrels = read_qrels(args.qrels)
    runs = run_file_arguments(args.runs)      # files go straight to the engine's reader
    measures = ["RBP(p=0.8)"] + [m for m in (args.measures or []) if m != "RBP(p=0.8)"]
    res = evaluate(runs, qrels, measures)      # topic mismatches announced as by `eval`; means over the qrels' topics
    wide = res.pivot(index="name", columns="measure", values="value")[measures]
    wide["RBP residual"] = res[res["measure"] == "RBP(p=0.8)"].set_index("name")["residual"]
    wide = wide[["RBP(p=0.8)", "RBP residual"] + measures[1:]].sort_values("RBP(p=0.8)", ascending=False)
    wide.columns.name, wide.index.name = None, "system"
    highlight: list[str] = []
    if args.pooled:
        meta = pd.read_csv(args.pooled)
        highlight = meta.loc[meta["contributed_judgments"].astype(str).str.lower() != "yes", "run"].astype(str).tolist()
    from ..report.words import command_line
    with directory.staging() as stage:
        written = write_report(stage, wide, highlight=highlight, command=command_line(getattr(args, "argv", None)),
                               report=Report(f"Evaluation of {len(runs)} runs on {qrels['qid'].nunique()} topics"))
    directory.finish()
    print(f"Report: {Path(args.out) / written.name} (open it in a browser; it works offline)")
    return 0
