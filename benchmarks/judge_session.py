"""Benchmark ``pyterrier-noise judge`` as whole processes (issue 19: at most 0.6 GB peak memory over the
143 TREC-COVID runs, and resume to the first document in under 1 s).

Cases (each a fresh process running exactly the command line, labels from the round-1 qrels):

* create: ``judge --session S --method C --budget 50 --qrels qrels-rnd1.txt runs/`` on a new file;
* resume: ``judge --session S --budget 100 --qrels qrels-rnd1.txt`` on a copy of that 50-judgment
  session (the file as a process killed after its 50th judgment leaves it);
* resume, older file: the same on a copy whose stored alignment was removed, as a session written
  before alignments were stored (the first open aligns the stored runs once and adds the alignment);
* import: a process that only imports what the resumed command imports.

For each case: wall time; the time from the process start to the first document served (the
oracle's first question: the CLI runs with ``QrelsOracle.judge`` wrapped to note the time); the time
from the session being opened (``JudgingSession(...)`` called) to that first document; the peak
resident memory of the process (``wait4``) and of any worker process it started
(``RUSAGE_CHILDREN``, reported by the process itself).  Medians over ``--runs`` repetitions (the
peak: the largest).  Every resumed session is checked to hold the same 100 judgments.

``--before PATH``: the same cases with another checkout of the package first on the path (e.g. the
commit before this work, extracted with ``git archive``), measured in the same run.

Usage:  python benchmarks/judge_session.py [--runs N] [--before PATH]   (default 3 runs; writes
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
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"

# the CLI itself, with the session's opening and the qrels oracle's first question timed against
# the parent's clock, and the peak memory of any worker process reported at exit
DRIVER = """
import atexit, os, resource, sys, time
T0 = float(os.environ["JUDGE_BENCH_T0"])
atexit.register(lambda: print(f"CHILDREN-MAXRSS {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}",
                              file=sys.stderr, flush=True))
from pyterrier_noise.selection import oracles, session
_judge = oracles.QrelsOracle.judge
def judge(self, *a, **k):
    if not getattr(judge, "seen", False):
        judge.seen = True
        print(f"FIRST-DOCUMENT {time.time() - T0:.6f}", file=sys.stderr, flush=True)
    return _judge(self, *a, **k)
oracles.QrelsOracle.judge = judge
_init = session.JudgingSession.__init__
def init(self, *a, **k):
    print(f"OPEN {time.time() - T0:.6f}", file=sys.stderr, flush=True)
    return _init(self, *a, **k)
session.JudgingSession.__init__ = init
from pyterrier_noise.cli import main
sys.exit(main(sys.argv[1:]))
"""

IMPORTS = ("import pyterrier_noise.cli, pyterrier_noise.cli.judge, pyterrier_noise.selection.session, "
           "pyterrier_noise.selection.selector, pyterrier_noise.selection.contributions")


def run_once(tree: Path, args: list[str], driver: bool = True) -> dict:
    """Wall seconds, seconds to the first document (from the start, from the opening) and peak MiB
    of one fresh process."""
    env = dict(os.environ, PYTHONPATH=str(tree), JUDGE_BENCH_T0=repr(time.time()), PYTHONWARNINGS="ignore")
    cmd = [sys.executable, "-c", DRIVER if driver else IMPORTS, *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=DATA, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode("utf-8", "replace")
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(args)} failed:\n{err[-2000:]}")
    grab = lambda tag: [float(x) for x in re.findall(tag + r" ([0-9.]+)", err)]  # noqa: E731  (a bar's \r may precede)
    first, opened, kids = grab("FIRST-DOCUMENT"), grab("OPEN"), grab("CHILDREN-MAXRSS")
    return {"wall_s": wall, "first_document_s": first[0] if first else None,
            "open_to_first_s": first[0] - opened[0] if first and opened else None,
            "peak_mib": ru.ru_maxrss / 1024.0, "workers_peak_mib": kids[0] / 1024.0 if kids else 0.0}


def _events(path: Path) -> list:
    with closing(sqlite3.connect(str(path))) as c:
        return c.execute("SELECT seq, action, qid, docno, label FROM events ORDER BY seq").fetchall()


def measure(tree: Path, runs: int, tmp: Path, older: bool) -> dict[str, list[dict]]:
    judge = ["judge", "--qrels", "qrels-rnd1.txt"]
    cases = ["create", "resume", *(["resume, older file"] if older else []), "import"]
    results: dict[str, list[dict]] = {c: [] for c in cases}
    template = None
    for i in range(runs):
        s = tmp / f"create{i}.sqlite"
        results["create"].append(run_once(tree, [*judge, "--session", str(s), "--method", "C", "--budget", "50",
                                                 "runs/"]))
        template = template or s
    sources = {"resume": template}
    if older:
        old = tmp / "old.sqlite"
        shutil.copy(template, old)
        with closing(sqlite3.connect(str(old), isolation_level=None)) as c:   # as written before alignments were stored
            c.execute("DELETE FROM blobs WHERE name='aligned'")
            c.execute("DELETE FROM meta WHERE key='aligned_blob_sha256'")
        sources["resume, older file"] = old
    finished = []
    for i in range(runs):
        for case, src in sources.items():
            s = tmp / f"{case.replace(', ', '-').replace(' ', '-')}{i}.sqlite"
            shutil.copy(src, s)
            results[case].append(run_once(tree, [*judge, "--session", str(s), "--budget", "100"]))
            finished.append(_events(s))
        results["import"].append(run_once(tree, [], driver=False))
    if any(ev != finished[0] for ev in finished) or len(finished[0]) != 100:
        sys.exit(f"{tree}: the resumed sessions do not hold the same 100 judgments")
    return results


def summary(results: dict[str, list[dict]]) -> dict:
    def med(rs: list[dict], k: str) -> float | None:
        vals = [r[k] for r in rs if r[k] is not None]
        return statistics.median(vals) if vals else None
    return {case: {"n": len(rs), "wall_s": med(rs, "wall_s"), "first_document_s": med(rs, "first_document_s"),
                   "open_to_first_s": med(rs, "open_to_first_s"), "peak_mib": max(r["peak_mib"] for r in rs),
                   "workers_peak_mib": max(r["workers_peak_mib"] for r in rs), "all": rs}
            for case, rs in results.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="repetitions of each case (medians reported)")
    ap.add_argument("--before", type=Path, default=None, metavar="PATH",
                    help="another checkout of the package, measured in the same run (e.g. the commit before)")
    opts = ap.parse_args()
    if not (DATA / "runs").is_dir():
        sys.exit(f"{DATA}: the TREC-COVID round 1 data is not there")
    trees = {"after": ROOT, **({"before": opts.before.resolve()} if opts.before else {})}
    out_rows = {}
    for label, tree in trees.items():
        tmp = Path(tempfile.mkdtemp(prefix=f"judge-bench-{label}-"))
        try:
            out_rows[label] = summary(measure(tree, opts.runs, tmp, older=label == "after"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    fmt = lambda x: "-" if x is None else f"{x:.2f} s"  # noqa: E731
    print("| version | case | wall | first document (from start) | from opening | peak memory | workers' peak |")
    print("|---|---|---|---|---|---|---|")
    for label, rows in out_rows.items():
        for case, r in rows.items():
            print(f"| {label} | {case} | {fmt(r['wall_s'])} | {fmt(r['first_document_s'])} | "
                  f"{fmt(r['open_to_first_s'])} | {r['peak_mib']:.0f} MiB | {r['workers_peak_mib']:.0f} MiB |")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "judge_session.json").write_text(json.dumps(
        {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "command": "python benchmarks/judge_session.py " + " ".join(sys.argv[1:]),
         "load_average": os.getloadavg(), "versions": {k: str(v) for k, v in trees.items()}, "cases": out_rows},
        indent=1))


if __name__ == "__main__":
    main()
