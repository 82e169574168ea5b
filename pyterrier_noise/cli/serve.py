"""``pyterrier-noise serve``: judging in the browser over a durable session (:mod:`pyterrier_noise.web`)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import options

SERVE_EXAMPLES = """examples:
  # accounts first: each command prints a token once (stored hashed in judging.serve.sqlite)
  pyterrier-noise serve --session judging.sqlite --add-organiser lead
  pyterrier-noise serve --session judging.sqlite --add-assessor alice
  pyterrier-noise serve --session judging.sqlite --add-assessor bob --assign 1,2,3
  # a new session over runs (Method C, batches of 4 for 4 assessors), a budget, 10% double judging
  pyterrier-noise serve --session judging.sqlite --method C --batch-size 4 --budget 500 --double 0.1 \\
      --docs corpus.trec.gz --topics topics.trec --labels "0:not relevant,1:relevant,2:highly relevant" runs/
  # resume it (the same queue; every recorded judgment is in the file)
  pyterrier-noise serve --session judging.sqlite --budget 500 --docs corpus.trec.gz --topics topics.trec
  # documents and topics of an ir_datasets collection
  pyterrier-noise serve --session judging.sqlite --docs irds:vaswani
  pyterrier-noise serve --session judging.sqlite --revoke-assessor bob
  # the planned gold sample of `calibrate --plan`, judged in the browser, with live PPI++ estimates
  pyterrier-noise serve --session gold.sqlite --method pool plan/plan.run --labels 0,1,2,3 \
      --cheap-labels umbrela.tsv --score-runs runs/ --sample plan/design.tsv --docs corpus.trec.gz

Open http://127.0.0.1:8000/ and log in with a token.  The server listens on 127.0.0.1 unless
--host says otherwise; on any other address put it behind an https proxy (tokens and cookies
travel in clear over http).
"""


def register_cli(subparsers: Any) -> None:
    """Add ``pyterrier-noise serve``."""
    s = subparsers.add_parser(
        "serve", help="judge in the browser: several assessors over one durable judging session",
        description="A web server over a judging session (Moffat, Webber & Zobel 2007 selection): assessors log in "
                    "with a token and judge the documents the selector chooses; the organiser follows the runs' "
                    "RBP ranges and exports the qrels.  Every judgment is saved before the next document is shown.",
        epilog=SERVE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options.seed(help="seed of the session (--tie-break random) and of the double-judging sample "
                                   "(default: 0)"),
                 options.selection_measure(default="'RBP(p=0.8)' for a new session"), options.selection_stop(),
                 options.progress()])
    s.add_argument("runs", nargs="*", metavar="RUN", help="TREC run files or directories (to create a session)")
    s.add_argument("--session", required=True, metavar="FILE.sqlite", help="the judging session file")
    s.add_argument("--docs", default=None, metavar="DOCS",
                   help="documents to show: TREC <DOC> file or directory (plain or .gz), 'docno<TAB>text' lines, "
                        "JSON lines, or irds:ID (an ir_datasets collection)")
    s.add_argument("--topics", default=None, metavar="TOPICS",
                   help="topics to show: TREC <top> / XML topics, JSON lines, 'qid<TAB>text' lines or irds:ID")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    s.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    s.add_argument("--labels", default=None,
                   help="the label scale, e.g. '0:not relevant,1:relevant' (default; kept by the session)")
    s.add_argument("--budget", type=int, default=None, metavar="N", help="stop at N judgments in the session")
    s.add_argument("--double", type=float, default=0.0, metavar="FRACTION",
                   help="judge this fraction of the documents a second time, by another assessor (agreement)")
    s.add_argument("--lease-seconds", type=float, default=600.0,
                   help="how long a document stays with an assessor before another may take it (default: 600)")
    s.add_argument("--method", default=None, metavar="{pool,A,B,C}", help="selection method of a new session (C)")
    s.add_argument("--batch-size", type=int, default=None,
                   help="documents proposed per round of a new session (default: 1; use the number of assessors)")
    s.add_argument("--rounds-ahead", action="store_true",
                   help="when every document of the round is with another assessor, propose the next round at once "
                        "instead of making the assessor wait (the selector then chooses without the labels still out, "
                        "so the documents differ from one assessor's at a terminal)")
    s.add_argument("--add-assessor", metavar="NAME", default=None, help="create an assessor account, print its token")
    s.add_argument("--add-organiser", metavar="NAME", default=None, help="create an organiser account, print its token")
    s.add_argument("--assign", metavar="QIDS", default=None, help="with --add-assessor: the topics they judge (comma-separated)")
    s.add_argument("--revoke-assessor", metavar="NAME", default=None, help="revoke an account (its token stops working)")
    s.add_argument("--secure-cookies", action="store_true", help="mark cookies Secure (behind an https proxy)")
    s.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a further Host name the server answers to (besides --host, localhost, 127.0.0.1 and ::1; "
                        "e.g. the name of the proxy in front of it); repeatable")
    s.add_argument("--access-log", default=None, metavar="FILE",
                   help="append one line per request to FILE (method, path, status, ms, account; never a token); "
                        "without it the lines go to stderr")
    s.add_argument("--cheap-labels", default=None, metavar="FILE",
                   help="cheap labels (llm-judge's output: qid, docno, label[, probability]); the organiser's page "
                        "then estimates the runs' scores by PPI++ from them and the judgments so far; stored in the "
                        "server file (a restart keeps them; giving them again replaces them)")
    s.add_argument("--score-runs", action="append", default=[], metavar="RUN",
                   help="with --cheap-labels: the runs whose scores to estimate (files or directories; repeatable)")
    s.add_argument("--sample", default=None, metavar="design.tsv",
                   help="with --cheap-labels: the design the judged pairs were planned by (calibrate --plan's "
                        "design.tsv); without it the judged pairs are analysed as a simple random sample")
    s.add_argument("--rebuild-server-file", action="store_true",
                   help="start although the server file (NAME.serve.sqlite) is missing, empty, another session's "
                        "or an older copy; says what it cannot recover (who judged what, second judgments, undos)")
    s.set_defaults(handler=_cmd_serve)


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def _accounts(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..web import WebError, WebStore
    if not Path(args.session).parent.is_dir():
        raise WebError(f"{args.session}: the directory {Path(args.session).parent} does not exist")
    fingerprint = topics = None
    if Path(args.session).exists():
        from ..selection import JudgingSession, SessionLockedError
        try:    # ties the accounts to the session; while a server holds it, the server's file has it already
            with JudgingSession(args.session, create=False) as s:
                fingerprint = s.fingerprint
                if args.assign:
                    topics = [str(t) for t in s.selector.topics]
        except SessionLockedError:
            pass
    store = WebStore(args.session, fingerprint=fingerprint)
    try:
        if topics is not None and store.meta("topics") is None:
            store.set_meta("topics", json.dumps(topics))
        if args.revoke_assessor is not None:
            store.revoke(args.revoke_assessor)
            print(f"revoked {args.revoke_assessor}: their token and logins no longer work")
        for name, role in ((args.add_assessor, "assessor"), (args.add_organiser, "organiser")):
            if name is not None:
                topics = [t.strip() for t in args.assign.split(",")] if args.assign is not None and \
                    role == "assessor" else None
                token = store.add_account(name, role, topics)
                print(f"{role} {name}" + (f" (topics {', '.join(topics)})" if topics else "") +
                      f": token (shown once, stored hashed in {store.path}):")
                print(token)
    finally:
        store.close()
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .._validation import InputError
    if args.assign is not None and args.add_assessor is None:
        raise InputError("--assign goes with --add-assessor")
    if args.assign is not None and not all(t.strip() for t in args.assign.split(",")):
        raise InputError(f"--assign: expected topic ids separated by commas (1,2,3), got {args.assign!r}")
    if any(x is not None for x in (args.add_assessor, args.add_organiser, args.revoke_assessor)):
        return _accounts(args)
    if args.budget is not None and args.budget < 0:
        raise InputError(f"--budget: expected a non-negative integer, got {args.budget}")
    if not 0 < args.port < 65536:
        raise InputError(f"--port: expected a port number 1-65535, got {args.port}")
    try:
        import uvicorn
        from ..web import ServeConfig, create_app, open_server
    except ImportError as exc:
        raise InputError(f"serve needs the 'web' extra: pip install 'pyterrier-noise[web]' ({exc})") from None
    from ..io import read_runs
    settings = {"method": args.method, "p": options.selection_p(args), "batch_size": args.batch_size, "seed": args.seed}
    config = ServeConfig(session=args.session, runs=read_runs(args.runs) if args.runs else None, settings=settings,
                         docs=args.docs, topics=args.topics, labels=args.labels, budget=args.budget,
                         stop=options.stop_rule(args), double=args.double, seed=args.seed or 0,
                         lease_seconds=args.lease_seconds, secure_cookies=args.secure_cookies,
                         hosts=(args.host, "localhost", "127.0.0.1", "::1", *args.allow_host),
                         rebuild=args.rebuild_server_file, access_log=args.access_log, ahead=args.rounds_ahead,
                         cheap_labels=args.cheap_labels, score_runs=args.score_runs or None, sample=args.sample)
    if args.host not in LOOPBACK:
        print(f"pyterrier-noise: warning: listening on {args.host}, not this machine only: anybody who can reach "
              f"it can try tokens, and over plain http tokens and cookies travel in clear -- put it behind an "
              f"https proxy (and pass --secure-cookies); it answers only to the Host names {args.host}, localhost, 127.0.0.1, "
              f"::1{''.join(', ' + h for h in args.allow_host)} (add the names it is reached by with --allow-host)",
              file=sys.stderr)
    if args.access_log is None:
        import logging
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access = logging.getLogger("pyterrier_noise.web.access")
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False
    state = open_server(config)
    try:
        if state.rebuilt:
            print(f"pyterrier-noise: warning: {state.rebuilt}", file=sys.stderr)
        n_acc = sum(1 for a in state.store.accounts() if a["revoked"] is None)
        print(f"serving {args.session} ({state.session.n_judged} judged, {n_acc} accounts) on "
              f"http://{args.host}:{args.port}/ -- Ctrl-C stops", flush=True)
        if n_acc == 0:
            print("pyterrier-noise: warning: no accounts yet: nobody can log in (add one with --add-organiser NAME "
                  "or --add-assessor NAME; the server need not stop)", file=sys.stderr)
        # close=True: the application's shutdown closes the files and releases the lock, which SIGTERM
        # reaches too (uvicorn runs the shutdown, then ends the process by the signal, skipping this finally)
        uvicorn.run(create_app(state=state, close=True), host=args.host, port=args.port, log_level="warning",
                    timeout_graceful_shutdown=5)
    finally:
        state.close()
    return 0
