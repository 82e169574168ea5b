"""Scripted judging throughput: ``judge --qrels`` for 2,000 judgments on 1,000 / 10,000 topics.

The collections of ``selection_topics.py`` (seeded, in a temporary directory: 5 runs of depth 10
per topic, 3 judgments a topic).  Per size, in fresh processes:

* the command a user types, on a new session file::

      pyterrier-noise judge --session S --method C --budget 2000 --qrels QRELS RUN... --quiet

  (wall and CPU seconds: user + system);
* the judging loop alone: ``JudgingSession(S, runs=RUNS, method="C").run(QrelsOracle(QRELS),
  budget=2000)`` timed around ``run`` (judgments per second, wall and CPU).

Every step is committed to the session file before the next document is served; the loop's wall
time is what the disk's syncs cost on top of the CPU.  ``--before CHECKOUT`` times another
checkout's package alongside, alternating.

Usage:  python benchmarks/judge_qrels_rate.py [--topics 1000 10000] [--repeat 3] [--budget 2000]
        [--before CHECKOUT]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from selection_topics import generate  # noqa: E402  (the same seeded collections)

ROOT = Path(__file__).resolve().parents[1]

LOOP = r'''
import sys, time
from pyterrier_noise.selection import JudgingSession, QrelsOracle
path, qrels, budget, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
with JudgingSession(path, runs=runs, method="C") as s:
    oracle = QrelsOracle(qrels)
    t0, c0 = time.perf_counter(), time.process_time()
    rep = s.run(oracle, budget=budget)
    t1, c1 = time.perf_counter(), time.process_time()
assert rep.n_judged == budget, rep
print(t1 - t0, c1 - c0)
'''


def _env(source: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(source) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def command_once(qrels: Path, runs: list[Path], session: Path, budget: int, source: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of the whole ``judge --qrels`` process on a new session file."""
    for p in session.parent.glob(session.name + "*"):
        p.unlink()
    cmd = [sys.executable, "-m", "pyterrier_noise.cli", "judge", "--session", str(session), "--method", "C",
           "--budget", str(budget), "--qrels", str(qrels), *map(str, runs), "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # outside the repository: python puts its working directory first on the path, before PYTHONPATH
    subprocess.run(cmd, check=True, env=_env(source), stdout=subprocess.DEVNULL, cwd=session.parent)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def loop_once(qrels: Path, runs: list[Path], session: Path, budget: int, source: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of ``run`` alone (the session created and the oracle read before)."""
    for p in session.parent.glob(session.name + "*"):
        p.unlink()
    out = subprocess.run([sys.executable, "-c", LOOP, str(session), str(qrels), str(budget), *map(str, runs)],
                         check=True, env=_env(source), capture_output=True, text=True, cwd=session.parent).stdout
    wall, cpu = map(float, out.split()[-2:])
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--before", type=Path, default=None,
                    help="also time the package of this checkout (a directory holding pyterrier_noise/)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pyterrier-noise-judge-rate-"))
    try:
        data = {n: generate(n, tmp / f"t{n}") for n in args.topics}
        sides = {"ours": ROOT} if args.before is None else {"before": args.before, "ours": ROOT}
        res: dict = {}
        for _ in range(args.repeat):
            for n in args.topics:
                for side, source in sides.items():   # alternating: both sides meet the same load
                    session = tmp / f"s-{side}-{n}.sqlite"
                    res.setdefault((side, n, "command"), []).append(command_once(*data[n], session, args.budget, source))
                    res.setdefault((side, n, "loop"), []).append(loop_once(*data[n], session, args.budget, source))
        load = os.getloadavg()[0]
        print(f"judge --qrels --method C --budget {args.budget}: median of {args.repeat}")
        print(f"{'side':>7} {'topics':>8} {'command s':>10} {'cpu s':>6} {'loop s':>7} {'loop cpu s':>10} "
              f"{'judgments/s':>12} {'per cpu s':>10}")
        for side in sides:
            for n in args.topics:
                cw = statistics.median(w for w, _ in res[side, n, "command"])
                cc = statistics.median(c for _, c in res[side, n, "command"])
                lw = statistics.median(w for w, _ in res[side, n, "loop"])
                lc = statistics.median(c for _, c in res[side, n, "loop"])
                print(f"{side:>7} {n:>8} {cw:>10.2f} {cc:>6.2f} {lw:>7.2f} {lc:>10.2f} {args.budget / lw:>12.0f} "
                      f"{args.budget / lc:>10.0f}")
        print(f"load average {load:.1f}")
        out = ROOT / "benchmarks" / "results"
        out.mkdir(exist_ok=True)
        (out / "judge_qrels_rate.json").write_text(json.dumps(
            {"budget": args.budget, "load": load,
             "results": {f"{side} {n} {what}": v for (side, n, what), v in res.items()}}, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
