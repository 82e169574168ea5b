"""``pyterrier-noise band | round | ties``: tied scores on purpose, and tie statistics (:mod:`pyterrier_noise.ties`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import BAND_ORDERS, PRECISIONS, TIE_STATS_LEVELS
from . import options


# command line: pyterrier-noise band | round | ties

BAND_EXAMPLES = """examples:
  pyterrier-noise band --rho 2 run.gz --out run.rho2.gz
  D=../shared/data/trec-covid-round1
  pyterrier-noise band --rho 1.5 $D/runs/BITEM_BL.gz --out /tmp/BITEM_BL.rho1.5
  pyterrier-noise eval $D/qrels-rnd1.txt /tmp/BITEM_BL.rho1.5 -m AP -m RR --ties expected

Band g = [b_g, b_{g+1} - 1] with b_1 = 1, b_{g+1} = ceil(rho * b_g) (Yang 2019 thesis, Sec. 3.3.1),
computed exactly (--rho 1.1 means 11/10; fractions such as 3/2 work too).  Every document of band g
gets the score 1/g, so the bands are groups of tied scores: evaluate the output with --ties
expected (or optimistic / pessimistic).  Bands follow the run's order: --by trec_eval (default) is
score descending then docno descending, the order trec_eval evaluates the original run in; --by
given uses the file's rank column; --by input the line order.
"""

ROUND_EXAMPLES = """examples:
  pyterrier-noise round --decimals 2 run.gz --out run.2dp.gz
  pyterrier-noise round --sig-digits 3 run.gz --out run.3sig
  pyterrier-noise round --quantum 0.25 run.gz --out run.q025
  pyterrier-noise ties run.2dp.gz                      # how many ties the rounding made

Rounding is monotone, so it ties documents but never swaps them; tied documents keep their
previous order (the file's rank column) and ranks are recomputed.
"""

TIES_EXAMPLES = """examples:
  pyterrier-noise ties ../shared/data/trec-covid-round1/runs            # summary as in Yang (2019)
  pyterrier-noise ties ../shared/data/trec-covid-round1/runs --level runs --format tsv > ties.tsv
  pyterrier-noise ties run1.gz run2.gz --precision float32               # ties as trec_eval sees them
  pyterrier-noise ties ../shared/data/trec-covid-round1/runs --report ties.html   # and an interactive page

Levels: summary (as in Yang 2019, Table 3.2: shares of runs, run-topic pairs and documents with tied
scores or rank/score contradictions, geometric mean rank of the first tie), runs (one row per
run), topics (one row per run and topic), sizes (histogram of tied-group sizes per run).
--memory bounds the memory: run files are read a chunk of files at a time, with the same tables.
"""


def _read_one_run(path: str) -> Any:
    from pathlib import Path

    from .._validation import InputError
    from ..io import read_run
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory; band and round take one run file")
    run = read_run(p)
    dup = run.duplicated(["qid", "docno"]).to_numpy()
    if dup.any():
        i = int(dup.argmax())
        raise InputError(f"{p}: qid {run['qid'].iloc[i]!r}, docno {run['docno'].iloc[i]!r} appears more than once "
                         f"(ranking line {i + 1}; {int(dup.sum())} duplicate(s) in all); expected each document at "
                         "most once per topic")
    return run


def _transform(fn: Any, run: Any, path: str) -> Any:
    """``fn(run)``, its refusals prefixed by the run file's name (the rows they name are the file's)."""
    from .._validation import InputError
    try:
        return fn(run)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def _run_tag(path: str) -> str:
    from pathlib import Path
    name = Path(path).name
    return name[:-3] if name.endswith(".gz") else name


def _rho_label(rho: Any) -> str:
    """The exact growth factor as written in the output's run tag (``ties.rho_label``)."""
    from ..ties import rho_label
    return rho_label(rho)


def _cmd_band(args: argparse.Namespace) -> int:
    from .._output import atomic_file, check_output_file
    from ..io import write_trec_run
    from ..ties import TieBanding
    banding = TieBanding(args.rho, by=args.by)
    check_output_file(args.out)
    from .._progress import status
    with status(f"banding {args.run}", args.progress):
        run = _read_one_run(args.run)
        out = _transform(banding, run, args.run)
    with atomic_file(args.out) as tmp:
        write_trec_run(out, tmp, tag=args.tag or f"{_run_tag(args.run)}_band{_rho_label(banding.rho)}")
    n_groups = int(out.groupby(["qid", "band"]).ngroups)
    print(f"{args.out}: {len(out)} documents of {out['qid'].nunique()} topics in {n_groups} bands "
          f"({banding!r})")
    return 0


def _cmd_round(args: argparse.Namespace) -> int:
    from .._output import atomic_file, check_output_file
    from ..io import write_trec_run
    from ..ties import ScoreRounding, tie_stats
    rounding = ScoreRounding(decimals=args.decimals, sig_digits=args.sig_digits, quantum=args.quantum)
    check_output_file(args.out)
    from .._progress import status
    with status(f"rounding {args.run}", args.progress):
        run = _read_one_run(args.run)
        out = _transform(rounding, run, args.run)
    with atomic_file(args.out) as tmp:
        write_trec_run(out, tmp, tag=args.tag or _run_tag(args.run))
    ts = tie_stats(out.assign(name="run"))
    print(f"{args.out}: {len(out)} documents; {int(ts.runs['n_tied_docs'].iloc[0])} now share their score with "
          f"another document of the same topic ({rounding!r})")
    return 0


def _cmd_ties(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    import pandas as pd

    from .._validation import InputError
    from ..io import list_run_files
    from ..ties import tie_stats_in_chunks
    files = []
    for item in args.runs:
        p = Path(item)
        if not p.exists():
            raise InputError(f"{p}: no such file or directory")
        files.extend(list_run_files(p) if p.is_dir() else [p])
    # the statistics are per run: a chunk of files is read at a time within --memory, the same tables
    ts = tie_stats_in_chunks(files, args.precision, progress=args.progress, memory=args.memory * 2 ** 30)
    if args.report:
        from ..report import build_report
        from ..report.words import command_line
        page = build_report(f"Ties in {len(ts.runs)} runs ({args.precision})", tie_stats=ts, command=command_line(getattr(args, "argv", None)))
        written = page.write(args.report)
        print(f"Report: {written} (open it in a browser; it works offline)", file=sys.stderr)
    table = {"summary": ts.summary.rename_axis("kind").reset_index(), "runs": ts.runs, "topics": ts.topics,
             "sizes": ts.group_sizes}[args.level]
    out = sys.stdout
    if args.format == "tsv":
        table.to_csv(out, sep="\t", index=False, float_format="%.10g")
        return 0
    if args.level == "summary":
        n_pairs = len(ts.topics)
        out.write(f"{len(ts.runs)} runs, {n_pairs} run-topic rankings, {int(ts.topics['n_docs'].sum())} documents "
                  f"(ties in {args.precision})\n\n")
        out.write(f"{'':28s} {'runs %':>8s} {'run-topics %':>13s} {'docs %':>8s} {'first tie (gm rank)':>20s}\n")
        for kind, row in ts.summary.iterrows():
            first = "" if pd.isna(row["gm_first_tie_rank"]) else f"{row['gm_first_tie_rank']:.1f}"
            out.write(f"{kind:28s} {100 * row['share_runs']:8.1f} {100 * row['share_topics']:13.1f} "
                      f"{100 * row['share_docs']:8.1f} {first:>20s}\n")
        sizes = ts.group_sizes.groupby("size")["n_groups"].sum()
        if len(sizes):
            out.write(f"\ntied groups: {int(sizes.sum())}, mean size "
                      f"{float((sizes.index * sizes).sum() / sizes.sum()):.2f}, largest {int(sizes.index.max())}\n")
        return 0
    if args.level == "runs":   # the text view keeps the main columns; tsv has them all
        keep = ["name", "n_topics", "n_topics_with_ties", "share_docs_tied", "n_tied_groups", "mean_group_size",
                "largest_group", "gm_first_tie_rank", "n_topics_with_contradictions"]
        table = table[[c for c in keep if c in table.columns]]
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
        out.write(table.to_string(index=False, float_format=lambda v: f"{v:.4g}") + "\n")
    return 0


def register_cli(subparsers: Any) -> None:
    """Add the ``band``, ``round`` and ``ties`` subcommands to ``pyterrier-noise``."""
    p = subparsers.add_parser(
        "band", help="group a run's scores into geometric bands of ties (TieBanding)",
        description="Replace the scores of a TREC run by geometric bands of tied scores (Yang 2019 thesis, "
                    "Sec. 3.3.1) and write it as a TREC run file.",
        epilog=BAND_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter, parents=[options.progress()])
    p.add_argument("run", metavar="RUN", help="TREC run file (plain or .gz)")
    p.add_argument("--rho", required=True, help="growth factor >= 1 of the bands (1 = no ties), e.g. 1.5 or 3/2")
    p.add_argument("--out", required=True, help="output TREC run file (.gz to compress)")
    p.add_argument("--by", choices=list(BAND_ORDERS), default="trec_eval",
                   help="the run order that decides the bands (default: trec_eval, score then docno descending)")
    p.add_argument("--tag", default=None, help="run tag of the output (default: RUN's name + _band<rho>)")
    p.set_defaults(handler=_cmd_band)

    p = subparsers.add_parser(
        "round", help="round a run's scores (ScoreRounding), creating realistic ties",
        description="Round the scores of a TREC run to decimals, significant digits or a quantum and write it "
                    "as a TREC run file.",
        epilog=ROUND_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter, parents=[options.progress()])
    p.add_argument("run", metavar="RUN", help="TREC run file (plain or .gz)")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--decimals", type=int, help="decimal places (negative rounds to tens, hundreds, ...)")
    how.add_argument("--sig-digits", type=int, dest="sig_digits", help="significant digits (>= 1)")
    how.add_argument("--quantum", help="round to the nearest multiple of this step, e.g. 0.25")
    p.add_argument("--out", required=True, help="output TREC run file (.gz to compress)")
    p.add_argument("--tag", default=None, help="run tag of the output (default: RUN's name)")
    p.set_defaults(handler=_cmd_round)

    p = subparsers.add_parser(
        "ties", help="tie statistics of runs (Yang 2019)",
        description="Count tied scores and rank/score contradictions in TREC runs (Yang 2019 thesis, "
                    "Sec. 3.2.1, Table 3.2).",
        epilog=TIES_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.output_format(), options.progress(), options.memory("the tie statistics")])
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run file (plain or .gz) or a directory of them")
    p.add_argument("--level", choices=list(TIE_STATS_LEVELS), default="summary",
                   help="which table to print (default: summary)")
    p.add_argument("--precision", choices=list(PRECISIONS), default="float64",
                   help="score equality in float64 (default) or float32 (trec_eval's)")
    p.add_argument("--report", metavar="PATH", default=None,
                   help="also write an interactive HTML report (self-contained, works offline) to PATH "
                        "(a .html file, or a directory that gets report.html)")
    p.set_defaults(handler=_cmd_ties)
