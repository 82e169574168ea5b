"""INST's memory at scale: peak RSS of evaluating many short rankings with and without INST.

A synthetic collection of 30,000 topics x 10 ranked documents x 3 runs (5 graded judgments per
topic) is evaluated per query in a fresh child process, once with ``RBP(p=0.8), AP, nDCG@10, P@10``
and once with ``INST(T=3,max_rel=2)`` added; each child reports its own peak RSS
(``resource.getrusage``), so the two sides do not share memory.  INST's C/W/L recurrence runs
over cwl_eval's 1,000 ranks per ranking; the target (issue 19) is INST at most 2x the memory of
the other measures.

Usage:  python benchmarks/inst_memory.py [--topics 30000] [--before SRC]
        (--before: also measure the package found under SRC, e.g. an older checkout)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ["RBP(p=0.8)", "AP", "nDCG@10", "P@10"]
INST = ["INST(T=3,max_rel=2)"]

CHILD = r"""
import resource, sys, time
import numpy as np, pandas as pd
from pyterrier_noise import evaluate
n_topics, measures = int(sys.argv[1]), sys.argv[2].split(";")
rng = np.random.default_rng(19)
depth, n_runs, pool = 10, 3, 15
qids = np.char.add("q", np.arange(n_topics).astype(str))
runs = {}
for r in range(n_runs):
    docs = np.argsort(rng.random((n_topics, pool)), axis=1)[:, :depth]
    runs[f"run{r}"] = pd.DataFrame({
        "qid": np.repeat(qids, depth), "docno": np.char.add("d", docs.ravel().astype(str)),
        "score": np.tile(np.arange(depth, 0, -1, dtype=np.float64), n_topics),
        "rank": np.tile(np.arange(1, depth + 1), n_topics)})
judged = np.argsort(rng.random((n_topics, pool)), axis=1)[:, :5]
qrels = pd.DataFrame({"qid": np.repeat(qids, 5), "docno": np.char.add("d", judged.ravel().astype(str)),
                      "label": rng.integers(0, 3, n_topics * 5)})
t0 = time.perf_counter()
res = evaluate(runs, qrels, measures, perquery=True)
t1 = time.perf_counter()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, t1 - t0, len(res))
"""


def run_child(src: Path, n_topics: int, measures: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD, str(n_topics), ";".join(measures)],
                         env=env, cwd=src, check=True, capture_output=True, text=True).stdout.split()
    return dict(peak_mib=float(out[0]), evaluate_s=float(out[1]), rows=int(out[2]),
                wall_s=time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=30_000)
    ap.add_argument("--before", type=Path, default=None)
    args = ap.parse_args()
    sides = [("this tree", ROOT)] + ([("before", args.before)] if args.before else [])
    rows = []
    for label, src in sides:
        without = run_child(src, args.topics, BASE)
        with_inst = run_child(src, args.topics, BASE + INST)
        rows.append(dict(side=label, topics=args.topics, without=without, with_inst=with_inst,
                         ratio=with_inst["peak_mib"] / without["peak_mib"]))
    print(f"{'side':<10} {'topics':>7} {'peak without INST':>18} {'peak with INST':>15} {'ratio':>6} "
          f"{'eval s without / with':>22}")
    for r in rows:
        print(f"{r['side']:<10} {r['topics']:>7,} {r['without']['peak_mib']:>14.0f} MiB {r['with_inst']['peak_mib']:>11.0f} MiB "
              f"{r['ratio']:>5.2f}x {r['without']['evaluate_s']:>10.2f} / {r['with_inst']['evaluate_s']:.2f}")
    print("target: with INST <= 2x without")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "inst_memory.json").write_text(json.dumps(dict(date=time.strftime("%Y-%m-%d"), rows=rows), indent=1))


if __name__ == "__main__":
    main()
