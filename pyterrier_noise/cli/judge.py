"""``pyterrier-noise judge``: a resumable judging session (:class:`pyterrier_noise.selection.JudgingSession`)."""
from __future__ import annotations

import argparse
from typing import Any

from .._vocab import MISSING, RANGE_COLUMNS, SELECTION_TIE_BREAKS
from . import options


# command line

JUDGE_EXAMPLES = """examples:
  # an interactive session with a person at the terminal (resumable: run the same command again)
  pyterrier-noise judge --session covid.sqlite --method C -m 'RBP(p=0.8)' --budget 200 \\
      --topics topics.txt --labels 0,1,2 runs/
  # a scripted session: labels come from qrels (documents without a judgment count as non-relevant)
  pyterrier-noise judge --session sim.sqlite --method C --budget 500 \\
      --qrels ../shared/data/trec-covid-round1/qrels-rnd1.txt ../shared/data/trec-covid-round1/runs
  # stop before the budget once the leading run is certainly ahead of every other
  pyterrier-noise judge --session covid.sqlite --budget 2000 --stop-leader upper --topics topics.txt runs/
  # write the judgments made so far as TREC qrels, and exit
  pyterrier-noise judge --session covid.sqlite --export judged-qrels.txt
  # a self-contained copy of the session (safe after a crash: includes the -wal file's judgments)
  pyterrier-noise judge --session covid.sqlite --backup covid-backup.sqlite
  # a damaged session file: copy its readable judgments into a new session
  pyterrier-noise judge --session covid.sqlite --recover covid-recovered.sqlite

At the prompt: type a label (one of --labels), s to skip the document (it is bypassed: not
judged, not counted), q to quit.  Every judgment is saved before the next document is shown, so
quitting, Ctrl-C or a crash loses nothing; the same command resumes where the session stopped.
--budget is the session's total number of judgments.  A session keeps the runs and settings it
was created with: RUN and the settings may be left out when resuming, and must match if given.
"""


def register_cli(subparsers: Any) -> None:
    """Add ``pyterrier-noise judge`` (an interactive or scripted, resumable judging session)."""
    j = subparsers.add_parser(
        "judge", help="judge documents chosen by pooling / Methods A, B, C in a resumable session",
        description="Adaptive judgment selection (Moffat, Webber & Zobel 2007) in a durable session: the "
                    "selector proposes the document that matters most, a person (or --qrels) labels it, and "
                    "the label is saved in the SQLite session file before the next document is shown.",
        epilog=JUDGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.seed(help="seed for --tie-break random (default: 0)", default=None),
                 options.selection_measure(default="'RBP(p=0.8)' for a new session"), options.selection_stop(),
                 options.progress()])
    j.add_argument("runs", nargs="*", metavar="RUN",
                   help="TREC run files or directories of them (needed to create a session; optional to resume)")
    j.add_argument("--session", required=True, metavar="FILE.sqlite", help="the session file (created if absent)")
    j.add_argument("--method", default=None, metavar="{pool,A,B,C}",
                   help="selection method for a new session (default: C)")
    j.add_argument("--power", type=float, default=None, help="Method C's exponent (default: 3)")
    j.add_argument("--batch-size", type=int, default=None, help="documents proposed per update (default: 1)")
    j.add_argument("--tie-break", choices=list(SELECTION_TIE_BREAKS), default=None,
                   help="how equal weights are ordered (default: deterministic)")
    j.add_argument("--rel", type=float, default=None,
                   help="binary relevance: label >= REL is relevant (default: 1)")
    j.add_argument("--max-rel", type=float, default=None,
                   help="graded gain min(label, MAX_REL) / MAX_REL instead of binary (e.g. 2 for 0/1/2 labels)")
    j.add_argument("--initial-qrels", default=None, metavar="QRELS", help="judgments known before the session")
    j.add_argument("--budget", type=int, default=None, metavar="N",
                   help="stop when the session holds N judgments (default: until no candidate is left)")
    j.add_argument("--topics", default=None, metavar="TOPICS_FILE",
                   help="topic texts to show: TREC <top> / XML topics, or 'qid<TAB>text' lines")
    j.add_argument("--docs", default=None, metavar="DOCS_FILE",
                   help="document texts to show: TREC <DOC> file (plain or .gz) or 'docno<TAB>text' lines")
    j.add_argument("--labels", default="0,1", help="allowed labels at the prompt, comma-separated (default: 0,1)")
    j.add_argument("--qrels", default=None, metavar="QRELS",
                   help="take the labels from these qrels instead of asking a person (scripted sessions)")
    j.add_argument("--missing", choices=list(MISSING), default="nonrel",
                   help="with --qrels: a document without a judgment is non-relevant (default) or bypassed")
    j.add_argument("--judge-unknown-topics", action="store_true",
                   help="with --qrels, for a new session: also judge topics of the runs on which the qrels hold no "
                        "judgment (default: they are announced and get no judgment)")
    j.add_argument("--export", default=None, metavar="FILE",
                   help="write the judgments as TREC qrels to FILE and exit (no judging)")
    j.add_argument("--backup", default=None, metavar="FILE",
                   help="copy the session (every saved judgment, including those still in its -wal file) to "
                        "the new file FILE through SQLite's backup API, and exit")
    j.add_argument("--recover", default=None, metavar="NEW.sqlite",
                   help="copy what can still be read of a damaged session into the new session NEW.sqlite "
                        "(give RUN... too if the stored runs are unreadable), and exit")
    j.add_argument("--bounds", action="store_true", help="print the per-system RBP bounds at the end")
    j.set_defaults(handler=_cmd_judge)


def _parse_labels(text: str) -> list[float]:
    from .._validation import InputError
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise InputError(f"--labels: expected comma-separated numbers such as 0,1,2, got {text!r}") from None
    return out


def _cmd_judge(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from .._validation import InputError
    from ..io import read_qrels, run_file_arguments
    from ..selection import (JudgingSession, Oracle, QrelsOracle, TerminalOracle, read_docs_file,
                             read_topics_file)
    # the files themselves: the session parses them with Arrow's reader (no frame per run)
    runs = run_file_arguments(args.runs) if args.runs else None
    if args.recover is not None:
        got = JudgingSession.recover(args.session, args.recover, runs=runs)
        print(f"recovered {got['events']} judgments and bypasses into {args.recover}"
              + (f" ({got['unreadable']} could not be read)" if got["unreadable"] else "")
              + f"; judge on with --session {args.recover}")
        return 0
    create = args.export is None and args.backup is None
    for flag, value in (("--export", args.export), ("--backup", args.backup)):
        if value is not None and not Path(args.session).exists():
            raise InputError(f"{flag}: no session file {args.session}")
    settings = {"method": args.method, "p": options.selection_p(args), "power": args.power, "batch_size": args.batch_size,
                "tie_break": args.tie_break, "seed": args.seed, "rel": args.rel, "max_rel": args.max_rel}
    init = read_qrels(args.initial_qrels) if args.initial_qrels else None
    oracle_qrels = read_qrels(args.qrels) if args.qrels is not None and create else None
    if oracle_qrels is not None and runs is not None and not Path(args.session).exists():
        from ..selection.simulation import unknown_topic_quota
        mode = "judge" if args.judge_unknown_topics else "skip"

        def quota(topics: list[str]) -> Any:   # the session calls it with the runs' topics, once read
            return unknown_topic_quota(topics, oracle_qrels["qid"], None, mode, "judge")
        settings["per_topic_quota"] = quota
    if create and runs is not None and not Path(args.session).exists() and args.progress and sys.stderr.isatty():
        # a one-line status for the few seconds before the first document (no bar: one pass, no steps)
        print(f"new session {args.session}: reading and aligning the runs ...", file=sys.stderr, flush=True)
    with JudgingSession(args.session, runs=runs, initial_qrels=init, create=create, **settings) as s:
        if args.export is not None:
            q = s.export_qrels(args.export)
            print(f"wrote {len(q)} judgments to {args.export}")
            return 0
        if args.backup is not None:
            s.backup(args.backup)
            print(f"backed up {args.session} ({s.n_judged} judgments) to {args.backup}")
            return 0
        if args.budget is not None and args.budget < 0:
            raise InputError(f"--budget: expected a non-negative integer, got {args.budget}")
        if args.qrels is not None:
            oracle: Oracle = QrelsOracle(oracle_qrels, missing=args.missing)
        else:
            topics = read_topics_file(args.topics) if args.topics else None
            docs = read_docs_file(args.docs) if args.docs else None
            oracle = TerminalOracle(labels=_parse_labels(args.labels), topics=topics, text=docs)
            print(f"session {args.session}: method {s.config['method']}, p={s.config['p']}, "
                  f"{len(s.run_names)} runs, {s.n_judged} judged so far"
                  + (f", budget {args.budget}" if args.budget is not None else ""))
        try:
            report = s.run(oracle, budget=args.budget, progress=args.qrels is not None and args.progress,
                           stop=options.stop_rule(args))
        except KeyboardInterrupt as exc:
            from ._process import Terminated
            term = isinstance(exc, Terminated)
            print(f"\n{'terminated' if term else 'interrupted'}: {s.n_judged} judgments are saved in {args.session}; "
                  f"run the same command to resume", file=sys.stderr)
            return 143 if term else 130
        why = {"budget": "budget reached", "exhausted": "no candidate left", "quit": "quit",
               "limit": "step limit reached", "stopped": f"stop rule: {report.detail}"}[report.reason]
        print(f"session {args.session}: {s.n_judged} judgments ({report.judged} new), {s.n_bypassed} bypassed; "
              f"stopped: {why}")
        if args.bounds:
            print(_bounds_table(s.system_bounds(), s.config["p"], len(s.selector.topics)))
    return 0


def _bounds_table(bounds: Any, p: float, n_topics: int, decimals: int = 4) -> str:
    """``--bounds``: the per-run RBP bounds (Moffat and Zobel 2008: base, residual, base + residual,
    projected), means over the topics, as a plain table: runs by base score, highest first (ties by
    name), run names in full, fixed decimals, no index."""
    import math
    b = bounds.sort_values(["base", "name"], ascending=[False, True], kind="stable")
    cols = list(RANGE_COLUMNS)
    names = [str(x) for x in b["name"]]
    width = max([len("run"), *map(len, names)])
    num = max(len("projected"), decimals + 3)

    def cell(x: float) -> str:
        return f"{x:{num}.{decimals}f}" if math.isfinite(x) else f"{'-':>{num}}"

    lines = [f"RBP bounds at p={p:g}, means over {n_topics} topics; runs by base score, highest first:",
             f"{'run':<{width}}  " + "  ".join(f"{c:>{num}}" for c in cols)]
    values = b[cols].to_numpy(dtype=float)
    lines += [f"{n:<{width}}  " + "  ".join(cell(float(v)) for v in row) for n, row in zip(names, values)]
    return "\n".join(lines)
