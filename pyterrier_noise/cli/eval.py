"""``pyterrier-noise eval``: evaluate runs against qrels with the aligned engine."""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from .._vocab import FRACTIONAL
from . import options

EVAL_EXAMPLES = """examples:
  pyterrier-noise eval qrels.txt run1.gz run2.gz -m 'RBP(p=0.8)' -m AP
  pyterrier-noise eval ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      -m 'RBP(p=0.5,max_rel=2)' -m 'INST(T=3,max_rel=2)' -m nDCG@10 --ties expected --format tsv

MEASURE uses ir_measures syntax: RBP(p=0.8), RBP(p=0.5,max_rel=2), INST(T=3,max_rel=2), INSQ(T=2),
AP, AP@100, nDCG@10, P@10, R@100, RR, Rprec, Bpref, Success@10, Judged@10, IPrec@0.5, ERR@20,
NumRet, NumRel, NumRelRet, AP(judged_only=True), nDCG(gains={0:0,1:1,2:3})@10, and the package's
RBPResidual(p=0.8), RBPUpper(...), RBPProjected(...); trec_eval's names (map, P_10, ndcg_cut_10,
recall_100, recip_rank, bpref ...) are read as the same measures.  --list-measures shows them all.
For RBP, INST and INSQ the value is the lower bound (unjudged documents count 0) and the residual is
printed beside it (text: '0.8010 +0.0015'; tsv/json: a 'residual' column).
"""


def register_cli(sub: Any) -> None:
    """Add the ``eval`` subcommand."""
    e = sub.add_parser("eval", help="evaluate runs (RBP / INST with residuals, AP, nDCG, P, RR)",
                       description="Evaluate TREC runs against qrels with the aligned engine.",
                       epilog=EVAL_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
                       parents=[options.qrels_runs(), options.measures(), options.ties(help=(
                           "tie policy (default: trec_eval, i.e. score then docno descending); expected, "
                           "optimistic and pessimistic treat equal scores as unordered")),
                           options.output_format(("text", "tsv", "json")), options.progress(), options.run_cache()])
    e.add_argument("--per-query", action="store_true", help="one row per (run, topic, measure)")
    e.add_argument("--list-measures", action=_ListMeasures, help="list the measures the engine computes and exit")
    e.add_argument("--memory", type=options.gib, default=4.0, metavar="GIB",
                   help="memory the evaluation may use, in GiB (default 4): more run files than fit are read, "
                        "aligned and evaluated a chunk of files at a time, with the same values")
    e.add_argument("--fractional", choices=list(FRACTIONAL), default="truncate",
                   help="fractional qrels labels (1.5): truncate them as trec_eval does (default, with a warning "
                        "that counts them) or keep them as graded gains (e.g. aggregated crowd magnitudes)")
    e.set_defaults(handler=_cmd_eval)


def _one_chunk(items: list, memory: float) -> bool:
    """Whether the run files fit in ``memory`` at once (then they are read while the qrels are);
    a missing path is left for the reader to name."""
    from ..io.files import run_file_arguments
    from ..io.chunks import run_file_chunks, warn_oversized   # standard library at import, like io.files
    try:
        files = run_file_arguments(items)
    except Exception:   # the same call below says what is wrong
        return True
    if len(run_file_chunks(files, memory)) > 1:
        return False   # evaluate_arrays reads them a chunk at a time (and warns of a file over the budget)
    warn_oversized(files, memory)
    return True


class _ListMeasures(argparse.Action):
    """Print the capability table (measure, example, tie policies, aggregation, what it is) and exit."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        from ..measures.table import measure_rows
        rows = measure_rows()
        width = max(len(r["example"]) for r in rows)
        for r in rows:
            sys.stdout.write(f"{r['example']:<{width}}  {r['what']} ({r['reference']}); ties: {r['ties']}"
                             f"{'; summed over topics' if r['topics'] == 'sum' else ''}\n")
        sys.stdout.write("and the package's RBPBase/Residual/Upper/Projected(p=...), INSTBase/Residual/Upper(T=...), "
                         "INSQBase/Residual/Upper(T=...), APTies/nDCGTies/PTies/RRTies(ties=...)\n")
        parser.exit()


def _fmt(x: float) -> str:
    """Full precision (shortest round-trip repr), empty for a missing value."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def _fmt_column(values) -> list:
    """:func:`_fmt` over a column: Python's ``repr`` (the shortest round-trip text, numpy's float64
    text too: tests/processes/test_worker_pool.py checks them equal on random bit patterns) is cheaper than numpy's
    conversion to text."""
    import numpy as np
    return ["" if x != x else repr(x) for x in np.asarray(values, dtype=np.float64).tolist()]


def _rows(res) -> tuple[list, list, list, Any, Any]:
    """The run, qid and measure texts and the values and residuals of every output row of an
    :class:`~pyterrier_noise.measures.EvaluationArrays` (its :meth:`columns`, the strings as lists)."""
    names, qids, measures, value, residual = res.columns()
    return names.tolist(), qids.tolist(), measures.tolist(), value, residual


def _tsv_lines(res) -> str:
    """The per-row TSV body (no header): one join per line."""
    names, qids, measures, value, residual = _rows(res)
    if not names:
        return ""
    cols = [names, qids, measures, _fmt_column(value), _fmt_column(residual)]
    return "\n".join(map("\t".join, zip(*cols))) + "\n"


def _cmd_eval(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    runs = None
    qrels: object = args.qrels
    memory = args.memory * 2 ** 30
    if Path(args.qrels).is_file() and _one_chunk(args.runs, memory):
        # start reading the run files in threads at once (inflated while numpy and pyarrow are
        # imported, then parsed), while the measures and the qrels are read; the engine aligns
        # what they read.  A plain qrels file is read with Arrow too, so that nothing on this
        # path imports pandas
        from ..io.files import run_file_arguments
        from ..io.reader import RunFileReader
        runs = RunFileReader(run_file_arguments(args.runs), os.cpu_count() or 1)
    try:
        from ..engine import JudgmentTable
        from ..io import read_arrow_qrels, run_file_arguments
        from ..measures import evaluate_arrays
        plain = read_arrow_qrels(args.qrels) if runs is not None else None
        if plain is not None:
            qrels = JudgmentTable.from_arrays(*plain)
        else:   # anything the validating reader has to say (fractional or negative labels, a pair
            # judged twice, an irregular line), or an ir_datasets id
            from ..io import read_qrels
            qrels = read_qrels(args.qrels, fractional=args.fractional)
        if runs is None:   # qrels named otherwise (an ir_datasets id): its errors come first
            runs = run_file_arguments(args.runs)   # unread: the engine parses them
        # a one-line status on stderr for reading and aligning, and for evaluating, when either
        # takes more than about 2 s (not with --quiet, nor when stderr is not a terminal)
        res = evaluate_arrays(runs, qrels, args.measures, ties=args.ties, perquery=args.per_query,
                              progress=args.progress, memory=memory)
    finally:
        if runs is not None and not isinstance(runs, list):
            runs.forget()
    out = sys.stdout
    if args.format == "tsv":
        out.write("run\tqid\tmeasure\tvalue\tresidual\n")
        out.write(_tsv_lines(res))
        return 0
    names, qids, measures, value, residual = _rows(res)
    if args.format == "json":
        records = [{"run": n, "qid": q, "measure": m, "value": None if math.isnan(v) else v,
                    "residual": None if math.isnan(r) else r}
                   for n, q, m, v, r in zip(names, qids, measures, value.tolist(), residual.tolist())]
        json.dump(records, out, indent=1)
        out.write("\n")
    else:
        wr = max([len(n) for n in names] + [3])
        wq = max([len(q) for q in qids] + [3])
        wm = max([len(m) for m in measures] + [7])
        for n, q, m, v, r in zip(names, qids, measures, value.tolist(), residual.tolist()):
            val = "   nan" if math.isnan(v) else f"{v:.4f}"
            res_txt = "" if math.isnan(r) else f" +{r:.4f}"
            out.write(f"{n:<{wr}}  {q:<{wq}}  {m:<{wm}}  {val}{res_txt}\n")
    return 0
