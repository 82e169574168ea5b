"""Scale of the robustness command and of the run cache, as whole processes on MS MARCO-like runs.

Uses the seeded collections of ``benchmarks/scale.py`` (6,980 topics x depth 1,000, about one
judged relevant per topic; gzip TREC runs made once, never committed) and runs, each as a fresh
process whose peak memory is read with ``wait4``:

* ``robustness``: ``pyterrier-noise robustness QRELS RUNS -m 'RBP(p=0.8)' -m AP --replicates N
  --no-plots --quiet --memory GIB`` for each (runs, replicates) asked for;
* ``cache``: ``pyterrier-noise eval QRELS RUNS -m 'RBP(p=0.8)' -m AP -m nDCG@10 -m P@10 --per-query
  --format tsv`` without a cache, then twice with ``--cache DIR`` (the first fills it, the second
  reads it), checking the three outputs are byte-identical.

Prints wall and CPU time and peak memory, and writes ``benchmarks/results/robustness_scale.json``.

Usage:  python benchmarks/robustness_scale.py [--mode robustness|cache] [--runs 2 10 ...]
        [--replicates 100 1000 ...] [--memory GIB] [--dir DIR]
        (defaults: robustness, 2 runs, 100 replicates, 4 GiB, /tmp/pyterrier-noise-scale)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import generate  # noqa: E402  (the collections of benchmarks/scale.py)

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pyterrier_noise.cli"]


def run(cmd: list[str], stdout: Path | None = None) -> dict:
    """Wall time, CPU time (user + system) and peak memory of one process."""
    t0 = time.perf_counter()
    with open(stdout or os.devnull, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(map(str, cmd[:6]))} ... failed: {err[-800:]}")
    return {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
            "peak_gib": round(ru.ru_maxrss / 2 ** 20, 3), "load_average": round(os.getloadavg()[0], 1)}


def robustness(args: argparse.Namespace) -> list[dict]:
    rows = []
    for n in args.runs:
        qrels, runs, per_run = generate("msmarco", n, args.dir / "msmarco")
        for r in args.replicates:
            out = args.dir / f"robustness-{n}-{r}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [*CLI, "robustness", str(qrels), *map(str, runs), "-m", "RBP(p=0.8)", "-m", "AP",
                   "--replicates", str(r), "--no-plots", "--quiet", "--memory", str(args.memory), "--out", str(out)]
            row = {"runs": n, "positions": n * per_run, "replicates": r, "memory_gib": args.memory, **run(cmd)}
            rows.append(row)
            print(f"robustness {n:3d} runs ({row['positions'] / 1e6:.0f}M positions) x {r:5d} replicates: "
                  f"{row['wall_s']:7.1f} s wall, {row['cpu_s']:7.1f} s CPU, peak {row['peak_gib']:.2f} GiB "
                  f"(budget {args.memory} GiB; load {row['load_average']})", flush=True)
    return rows


def cache(args: argparse.Namespace) -> list[dict]:
    rows = []
    for n in args.runs:
        qrels, runs, per_run = generate("msmarco", n, args.dir / "msmarco")
        directory = args.dir / "run-cache"
        shutil.rmtree(directory, ignore_errors=True)
        cmd = [*CLI, "eval", str(qrels), *map(str, runs), "-m", "RBP(p=0.8)", "-m", "AP", "-m", "nDCG@10",
               "-m", "P@10", "--per-query", "--format", "tsv", "--quiet"]
        outputs = {}
        for case, extra in (("no cache", []), ("first (fills the cache)", ["--cache", str(directory)]),
                            ("second (reads the cache)", ["--cache", str(directory)])):
            outputs[case] = args.dir / f"cache-{len(outputs)}.tsv"
            row = {"runs": n, "positions": n * per_run, "case": case, **run(cmd + extra, outputs[case])}
            rows.append(row)
            print(f"eval {n:3d} runs, {case:25s}: {row['wall_s']:6.1f} s wall, {row['cpu_s']:6.1f} s CPU, "
                  f"peak {row['peak_gib']:.2f} GiB (load {row['load_average']})", flush=True)
        texts = {p.read_bytes() for p in outputs.values()}
        assert len(texts) == 1, "the outputs differ"
        rows[-1]["cache_mib"] = round(sum(f.stat().st_size for f in directory.iterdir()) / 2 ** 20, 1)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["robustness", "cache"], default="robustness")
    ap.add_argument("--runs", type=int, nargs="+", default=[2])
    ap.add_argument("--replicates", type=int, nargs="+", default=[100])
    ap.add_argument("--memory", type=float, default=4.0, help="robustness --memory GIB")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pyterrier-noise-scale"))
    args = ap.parse_args()
    rows = robustness(args) if args.mode == "robustness" else cache(args)
    out = ROOT / "benchmarks" / "results" / f"robustness_scale-{args.mode}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
