"""Selection on many topics: ``select --method C --budget 2000`` on 1,000 / 10,000 / 100,000 topics.

Generates seeded synthetic collections outside the repository (a temporary directory): 5 runs of
depth 10 per topic, each drawn from the topic's 20 candidate documents (so runs overlap), and qrels
with 3 judgments a topic (about a third relevant).  Then times, as whole processes, the command a
user types::

    pyterrier-noise select QRELS RUN... --method C --budget 2000 --out DIR --quiet

``--repeat`` times per size (alternating sizes), and prints the median per size and its ratio to
the smallest size (wall time, and CPU time: user + system, which a loaded machine disturbs
less); and, in a fresh process, the CPU time of the selection loop alone (the 2,000 proposals and
recordings after the selector is built and the qrels' labels looked up), and within it the 1,999
steps after the first, whose proposal builds the queue's head over every row.  ``--before CHECKOUT``
times another checkout's package alongside, alternating.  The cost of a judgment should not depend on the number of topics: the target
is 2,000 judgments on 100,000 topics within 2x of the same on 1,000 topics (reading the larger
files is part of both times).

Usage:  python benchmarks/selection_topics.py [--topics 1000 10000 100000] [--repeat 3]
        [--budget 2000] [--method C] [--before CHECKOUT] [--dir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_RUNS, DEPTH, CANDIDATES, JUDGED = 5, 10, 20, 3


def generate(n_topics: int, root: Path, seed: int = 0) -> tuple[Path, list[Path]]:
    """Seeded runs and qrels for ``n_topics`` topics under ``root``."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    qids = np.array([f"q{t}" for t in range(n_topics)], dtype=object)
    runs = []
    ranks = np.tile(np.arange(1, DEPTH + 1), n_topics)
    scores = (DEPTH + 1 - ranks).astype(str)
    qcol = np.repeat(qids, DEPTH)
    for r in range(N_RUNS):
        # each topic ranks DEPTH of its CANDIDATES documents (a random order per topic)
        pick = np.argsort(rng.random((n_topics, CANDIDATES)), axis=1)[:, :DEPTH].ravel()
        docs = np.char.add("d", pick.astype(str)).astype(object)
        lines = qcol + " Q0 " + docs + " " + ranks.astype(str).astype(object) + " " + scores.astype(object) + f" run{r}\n"
        path = root / f"run{r}.txt"
        path.write_text("".join(lines.tolist()))
        runs.append(path)
    judged = np.argsort(rng.random((n_topics, CANDIDATES)), axis=1)[:, :JUDGED].ravel()
    labels = (rng.random(n_topics * JUDGED) < 0.35).astype(int).astype(str).astype(object)
    lines = np.repeat(qids, JUDGED) + " 0 " + np.char.add("d", judged.astype(str)).astype(object) + " " + labels + "\n"
    qrels = root / "qrels.txt"
    qrels.write_text("".join(lines.tolist()))
    return qrels, runs


def run_once(qrels: Path, runs: list[Path], out: Path, budget: int, method: str,
             source: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the process and its threads) of one command."""
    cmd = [sys.executable, "-m", "pyterrier_noise.cli", "select", str(qrels), *map(str, runs),
           "--method", method, "--budget", str(budget), "--out", str(out), "--force", "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(source) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # run outside the repository: python puts its working directory first on the path, before PYTHONPATH
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=qrels.parent)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


LOOP = r'''
import sys, time
from pyterrier_noise.io import read_qrels
from pyterrier_noise.selection import JudgmentSelector
qrels, method, budget, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
q = read_qrels(qrels)
sel = JudgmentSelector({f"r{i}": r for i, r in enumerate(runs)}, method=method)
sel.judge(q, 0)   # the qrels' labels looked up once
t0 = time.process_time()   # CPU time: the load disturbs it less than wall time
sel.judge(q, 1)   # the first proposal builds the queue's head over the rows in Method A order
t1 = time.process_time()
sel.judge(q, budget - 1)
t2 = time.process_time()
print(t2 - t0, t2 - t1)
'''


def loop_once(qrels: Path, runs: list[Path], budget: int, method: str, source: Path = ROOT) -> tuple[float, float]:
    """The selection loop alone (``budget`` proposals and recordings, in a fresh process), and the
    steps after the first (whose proposal builds the queue's head)."""
    env = dict(os.environ, PYTHONPATH=str(source) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", LOOP, str(qrels), method, str(budget), *map(str, runs)],
                         check=True, env=env, capture_output=True, text=True, cwd=qrels.parent).stdout
    total, steps = out.split()[-2:]
    return float(total), float(steps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--method", default="C")
    ap.add_argument("--before", type=Path, default=None,
                    help="also time the package of this checkout (a directory holding pyterrier_noise/)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the generated files here (default: a tempdir)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pyterrier-noise-selection-")) if args.dir is None else args.dir
    try:
        data = {n: generate(n, tmp / f"t{n}") for n in args.topics}
        sides = {"ours": ROOT} if args.before is None else {"before": args.before, "ours": ROOT}
        times = {(side, n): [] for side in sides for n in args.topics}
        cpus = {(side, n): [] for side in sides for n in args.topics}
        loops = {(side, n): [] for side in sides for n in args.topics}
        steps = {(side, n): [] for side in sides for n in args.topics}
        for _ in range(args.repeat):
            for n in args.topics:
                for side, source in sides.items():   # alternating: both sides meet the same load
                    wall, cpu = run_once(*data[n], tmp / f"out{n}", args.budget, args.method, source)
                    times[side, n].append(wall)
                    cpus[side, n].append(cpu)
                    total, rest = loop_once(*data[n], args.budget, args.method, source)
                    loops[side, n].append(total)
                    steps[side, n].append(rest)
        load = os.getloadavg()[0]
        print(f"select --method {args.method} --budget {args.budget}, median of {args.repeat} whole processes")
        print(f"{'side':>7} {'topics':>8} {'median s':>9} {'x first size':>13} {'cpu s':>6} {'x first':>8} "
              f"{'loop s':>7} {'x first':>8} {'steps s':>8} {'x first':>8}   runs")
        for side in sides:
            first = statistics.median(times[side, args.topics[0]])
            cfirst = statistics.median(cpus[side, args.topics[0]])
            lfirst = statistics.median(loops[side, args.topics[0]])
            sfirst = statistics.median(steps[side, args.topics[0]])
            for n in args.topics:
                med, lmed = statistics.median(times[side, n]), statistics.median(loops[side, n])
                cmed, smed = statistics.median(cpus[side, n]), statistics.median(steps[side, n])
                print(f"{side:>7} {n:>8} {med:>9.2f} {med / first:>13.2f} {cmed:>6.2f} {cmed / cfirst:>8.2f} "
                      f"{lmed:>7.3f} {lmed / lfirst:>8.2f} {smed:>8.3f} {smed / sfirst:>8.2f}   "
                      + " ".join(f"{x:.2f}" for x in times[side, n]))
        print(f"load average {load:.1f}")
        out = ROOT / "benchmarks" / "results"
        out.mkdir(exist_ok=True)
        (out / "selection_topics.json").write_text(json.dumps(
            {"budget": args.budget, "method": args.method, "load": load,
             "times": {f"{side} {n}": v for (side, n), v in times.items()},
             "cpu": {f"{side} {n}": v for (side, n), v in cpus.items()},
             "loops": {f"{side} {n}": v for (side, n), v in loops.items()},
             "steps": {f"{side} {n}": v for (side, n), v in steps.items()}}, indent=1))
    finally:
        if args.dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
