"""``pyterrier-noise select``: simulated judgment selection (pooling, Methods A, B, C; :mod:`pyterrier_noise.selection`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import MISSING, SELECTION_METHODS, SELECTION_TIE_BREAKS
from . import options


# command line

SELECT_EXAMPLES = """examples:
  pyterrier-noise select qrels.txt runs/ --method C -m 'RBP(p=0.8)' --budget 2000 --out sel-C
  pyterrier-noise select ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs \\
      --method pool --budget 8691 --checkpoints 1000,2000,4000 \\
      --pool-runs ../shared/data/trec-covid-round1/runs-metadata.csv --out sel-pool
  pyterrier-noise select qrels.txt runs/ --method C --budget 8691 --stop-leader upper --out sel-stop

Simulates judging: QRELS act as the assessor (a document they do not judge is non-relevant,
or skipped with --missing bypass).  Writes DIR/judgments.tsv (step qid docno label, in selection
order), DIR/residuals.tsv (judgments run base residual: RBP at the first -m, mean over topics, at every
checkpoint), DIR/summary.tsv (relevant found, mean residuals, separation of the top third of
runs by AP on the qrels) and DIR/report.html (an interactive page that works offline: the judging
curve, each run's RBP range at the end and what to conclude; open it in a browser).  --pool-runs takes run names separated by commas, a file of names (one a
line), or a CSV with columns run and contributed_judgments (the rows marked yes feed the pool).
--stop-top-residual / --stop-leader stop before the budget once the top runs' residual is small
or the leading run is separated from every other.  The measure is RBP: the first -m 'RBP(p=P)'
(default 'RBP(p=0.8)') selects and is reported; further -m 'RBP(p=P)' are evaluated too.
"""


def _read_pool_runs(value: str | None) -> list[str] | None:
    from pathlib import Path
    if value is None:
        return None
    path = Path(value)
    if path.is_file():
        text = path.read_text().splitlines()
        first = text[0] if text else ""
        if "," in first and "run" in [x.strip() for x in first.split(",")]:
            import pandas as pd
            meta = pd.read_csv(path, dtype=str)
            if "contributed_judgments" in meta.columns:
                flag = meta["contributed_judgments"].str.strip().str.lower().isin(["yes", "true", "1", "y"])
                return meta.loc[flag, "run"].str.strip().tolist()
            return meta["run"].str.strip().tolist()
        return [x.strip() for x in text if x.strip() and not x.startswith("#")]
    return [x.strip() for x in value.split(",") if x.strip()]


def _cmd_select(args: argparse.Namespace) -> int:
    import os

    from .._output import OutputDirectory
    from ..io.files import run_file_arguments
    from ..io.reader import RunFileReader
    args.p, args.p_eval = options.rbp_persistences(args.measures)
    directory = OutputDirectory(args.out, "select", force=args.force)      # checked before any work
    # the run files are read in threads from here on (pyarrow and numpy only), while pandas, the
    # selection package and the qrels are imported and read, as eval does
    runs = RunFileReader(run_file_arguments(args.runs), os.cpu_count() or 1)
    from concurrent.futures import ThreadPoolExecutor
    try:
        # and the qrels in a thread of their own, while this one imports
        with ThreadPoolExecutor(1) as pool:
            return _select(args, runs, directory, pool.submit(_plain_qrels, args.qrels))
    finally:
        runs.forget()


def _plain_qrels(path: str) -> Any:
    """The judgment table of a plain qrels file, read with Arrow as eval reads it (no pandas), or
    None: anything the validating reader has to say, or not a file (an ir_datasets id)."""
    from pathlib import Path
    if not Path(path).is_file():
        return None
    from ..io import read_arrow_qrels
    plain = read_arrow_qrels(path)
    if plain is None:
        return None
    from ..engine import JudgmentTable
    return JudgmentTable.from_arrays(*plain)


def _select(args: argparse.Namespace, runs: Any, directory: Any, reading_qrels: Any) -> int:
    """The rest of ``select`` once its run files and qrels (``reading_qrels``: a future of
    :func:`_plain_qrels`) are being read."""
    from pathlib import Path

    import numpy as np

    from .._validation import InputError
    from ..io import read_qrels
    from ..selection import simulate
    # the judgment table the runs are aligned to; anything the validating reader has to say (or an
    # ir_datasets id) goes through it
    qrels = reading_qrels.result()
    if qrels is None:
        qrels = read_qrels(args.qrels)
    if args.budget is None and not args.checkpoints:
        raise InputError("give --budget N or --checkpoints N1,N2,...")
    cps = []
    if args.checkpoints:
        try:
            cps = [int(x) for x in str(args.checkpoints).split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--checkpoints: expected integers separated by commas, got {args.checkpoints!r}") from None
    if any(c < 1 for c in cps):
        raise InputError(f"--checkpoints: every count must be at least 1, got {args.checkpoints!r}")
    if args.per_topic_quota is not None and args.per_topic_quota < 1:
        raise InputError(f"--per-topic-quota: expected a positive integer (judgments per topic), "
                         f"got {args.per_topic_quota}")
    if args.budget is not None:
        if args.budget < 1:
            raise InputError(f"--budget: expected a positive integer, got {args.budget}")
        beyond = [c for c in cps if c > args.budget]
        if beyond:
            raise InputError(f"--checkpoints {','.join(map(str, beyond))}: beyond --budget {args.budget}; "
                             "a checkpoint must be at most the budget")
        cps = cps + [args.budget]
    p_eval = sorted({args.p} | set(args.p_eval or []))
    res = simulate(runs, qrels, method=args.method, checkpoints=cps, p_select=args.p, p_eval=p_eval,
                   pool_runs=_read_pool_runs(args.pool_runs), missing=args.missing, power=args.power,
                   batch_size=args.batch_size, tie_break=args.tie_break, seed=args.seed,
                   per_topic_quota=args.per_topic_quota, progress=args.progress, stop=options.stop_rule(args),
                   unknown_topics="judge" if args.judge_unknown_topics else "skip")
    out = Path(args.out)
    h = res.judgments[["step", "qid", "docno", "label"]].copy()
    if len(h) and (h["label"] == np.round(h["label"])).all():
        h["label"] = h["label"].astype(np.int64)   # integral labels as in the qrels
    directory.write("judgments.tsv", h.to_csv(sep="\t", index=False))
    s = res.systems[np.isclose(res.systems["p_eval"], args.p)]
    directory.write("residuals.tsv", s[["judgments", "name", "base", "residual"]].rename(columns={"name": "run"})
                    .to_csv(sep="\t", index=False, float_format="%.6g"))
    directory.write("summary.tsv", res.summary.to_csv(sep="\t", index=False, float_format="%.6g"))
    from ..report import build_report
    from ..report.words import command_line
    page = build_report(f"Judging simulation: method {args.method}, {len(runs)} runs", selection=res,
                        command=command_line(getattr(args, "argv", None)))
    directory.write("report.html", page.html())
    directory.finish({"method": args.method, "p": args.p, "seed": args.seed})
    last = res.summary[np.isclose(res.summary["p_eval"], args.p)].iloc[-1]
    print(f"{args.method}: {int(last['judgments'])} judgments, {int(last['relevant'])} relevant found, "
          f"mean residual {last['mean_residual']:.4f} (top third {last['top_residual']:.4f}); wrote {out}/ "
          f"(open {out / 'report.html'} in a browser)")
    if res.stopped is not None:
        print(f"stopped early: {res.stopped}")
    return 0


def register_cli(subparsers: Any) -> None:
    """Add the ``select`` subcommand to the ``pyterrier-noise`` command line."""
    s = subparsers.add_parser(
        "select", help="simulate judgment selection (pooling, Methods A, B, C)",
        description="Choose documents to judge by pooling or Moffat, Webber & Zobel's (2007) Methods A, B "
                    "and C, simulating the assessor with qrels, and report the RBP residuals.",
        epilog=SELECT_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.qrels_runs(qrels_help="TREC qrels that play the assessor (plain or .gz)"),
                 options.selection_measure(repeatable=True), options.out(force=True), options.seed(help="seed for --tie-break random (default 0)"),
                 options.selection_stop(), options.progress()])
    s.add_argument("--method", choices=list(SELECTION_METHODS), default="C",
                   help="selection method (default C)")
    s.add_argument("--budget", type=int, default=None, help="number of judgments")
    s.add_argument("--checkpoints", default=None, help="judgment counts at which to report, e.g. 1000,2000,4000")
    s.add_argument("--pool-runs", default=None, help="runs that feed the pool: names a,b,c, a file of names, "
                                                     "or a runs-metadata CSV (contributed_judgments=yes)")
    s.add_argument("--missing", choices=list(MISSING), default="nonrel",
                   help="a document the qrels do not judge: non-relevant (default) or skipped")
    s.add_argument("--judge-unknown-topics", action="store_true",
                   help="also judge topics of the runs on which the qrels hold no judgment (default: they are "
                        "announced and get no judgment)")
    s.add_argument("--power", type=float, default=3.0, help="Method C's exponent (default 3)")
    s.add_argument("--batch-size", type=int, default=1, help="documents per weight update (default 1, exact)")
    s.add_argument("--per-topic-quota", type=int, default=None, help="at most this many judgments per topic")
    s.add_argument("--tie-break", choices=list(SELECTION_TIE_BREAKS), default="deterministic")
    s.set_defaults(handler=_cmd_select)
