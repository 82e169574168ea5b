"""Benchmark ``pyterrier-noise judge`` as whole processes (issue 19: at most 0.6 GB peak memory over the
143 TREC-COVID runs, and resume to the first document in under 1 s).

Cases (each a fresh process running exactly the command line, labels from the round-1 qrels):

* create: ``judge --session S --method C --budget 50 --qrels qrels-rnd1.txt runs/`` on a new file;
* resume: ``judge --session S --budget 100 --qrels qrels-rnd1.txt`` on a copy of a 50-judgment session;
* resume, older file: the same on a copy whose stored alignment was removed, as a session written
  before alignments were stored (the first open aligns the stored runs once and adds the alignment).

For each case: wall time, time from the process start to the first document served (the oracle's
first question; the process is the CLI itself, with ``QrelsOracle.judge`` wrapped to note the time),
and peak resident memory (``wait4``); medians over ``--runs`` repetitions.  ``import`` is a process
that only imports the modules the resumed command needs: the part of the time to the first document
that precedes opening the session.

Usage:  python benchmarks/judge_session.py [--runs N]   (default 3; writes
benchmarks/results/judge_session.json)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from contextlib import closing
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"

# the CLI itself, with the qrels oracle's first question timed against the parent's clock
DRIVER = """
import os, sys, time
T0 = float(os.environ["JUDGE_BENCH_T0"])
from pyterrier_noise.selection import oracles
_judge = oracles.QrelsOracle.judge
def judge(self, *a, **k):
    if not getattr(judge, "seen", False):
        judge.seen = True
        print(f"FIRST-DOCUMENT {time.time() - T0:.6f}", file=sys.stderr, flush=True)
    return _judge(self, *a, **k)
oracles.QrelsOracle.judge = judge
from pyterrier_noise.cli import main
sys.exit(main(sys.argv[1:]))
"""

IMPORTS = ("import pyterrier_noise.cli, pyterrier_noise.cli.judge, pyterrier_noise.selection.session, "
           "pyterrier_noise.selection.selector, pyterrier_noise.selection.contributions")


def run_once(args: list[str], driver: bool = True) -> dict:
    """Wall seconds, seconds to the first document and peak MiB of one fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUDGE_BENCH_T0=repr(time.time()))
    cmd = [sys.executable, "-c", DRIVER if driver else IMPORTS, *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=DATA, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode("utf-8", "replace")
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(args)} failed:\n{err[-2000:]}")
    first = [float(x) for x in re.findall(r"FIRST-DOCUMENT ([0-9.]+)", err)]   # the bar's \r may precede it
    return {"wall_s": wall, "first_document_s": first[0] if first else None, "peak_mib": ru.ru_maxrss / 1024.0}


def _events(path: Path) -> list:
    with closing(sqlite3.connect(str(path))) as c:
        return c.execute("SELECT seq, action, qid, docno, label, weight FROM events ORDER BY seq").fetchall()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="repetitions of each case (medians reported)")
    opts = ap.parse_args()
    if not (DATA / "runs").is_dir():
        sys.exit(f"{DATA}: the TREC-COVID round 1 data is not there")
    tmp = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    judge = ["judge", "--qrels", "qrels-rnd1.txt"]
    results: dict[str, list[dict]] = {"create": [], "resume": [], "resume, older file": [], "import": []}
    try:
        template = None
        for i in range(opts.runs):
            s = tmp / f"create{i}.sqlite"
            results["create"].append(run_once([*judge, "--session", str(s), "--method", "C", "--budget", "50", "runs/"]))
            template = template or s
        old = tmp / "old.sqlite"
        shutil.copy(template, old)
        with closing(sqlite3.connect(str(old), isolation_level=None)) as c:   # as written before alignments were stored
            c.execute("DELETE FROM blobs WHERE name='aligned'")
            c.execute("DELETE FROM meta WHERE key='aligned_blob_sha256'")
        finished = []
        for i in range(opts.runs):
            for case, src in (("resume", template), ("resume, older file", old)):
                s = tmp / f"{case.replace(', ', '-').replace(' ', '-')}{i}.sqlite"
                shutil.copy(src, s)
                results[case].append(run_once([*judge, "--session", str(s), "--budget", "100"]))
                finished.append(_events(s))
            results["import"].append(run_once([], driver=False))
        if any(ev != finished[0] for ev in finished) or len(finished[0]) != 100:
            sys.exit("the resumed sessions do not hold the same 100 judgments")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = lambda rs, k: statistics.median(r[k] for r in rs) if rs and rs[0][k] is not None else None  # noqa: E731
    rows = {case: {"n": len(rs), "wall_s": med(rs, "wall_s"), "first_document_s": med(rs, "first_document_s"),
                   "peak_mib": max(r["peak_mib"] for r in rs), "all": rs} for case, rs in results.items()}
    print("| case | wall | first document | peak memory |")
    print("|---|---|---|---|")
    for case, r in rows.items():
        first = "-" if r["first_document_s"] is None else f"{r['first_document_s']:.2f} s"
        print(f"| {case} | {r['wall_s']:.2f} s | {first} | {r['peak_mib']:.0f} MiB |")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "judge_session.json").write_text(json.dumps(
        {"date": datetime.date.today().isoformat(), "command": "python benchmarks/judge_session.py "
         f"--runs {opts.runs}", "cases": rows}, indent=1))


if __name__ == "__main__":
    main()
