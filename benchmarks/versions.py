"""Benchmark: the label-versions experiment as a whole process, against one ``eval`` of the same runs.

On TREC-COVID round 1 (143 gzip runs, 30 topics), ten label versions of the qrels are written as
TREC files first (not timed): NIST's qrels; random flips at Rashidi, Zobel & Moffat's (2023) rates
0.93 / 0.07 (seeds 1-3) and 0.31 / 0.07; rank-biased flips at 0.93 / 0.07 (popularity over all the
runs); two confusion-matrix judges from Goldberg et al.'s (2017, Table 2) TREC 2007 counts (both
judges, on the binarised labels); a pool cut to the documents every run puts in its top 20 (NIST's
labels); and the fixed second-assessor file of tests/data.  Then, each side a fresh process,
alternating (ours, peer, ours, peer, ...):

* ours: ``pyterrier-noise versions --qrels NAME=FILE x10 runs/ -m AP -m nDCG@10 -m P@10
  -m 'RBP(p=0.8)' --out DIR --force --quiet`` (every agreement table written: scores, summary,
  leaderboards, pairs, significance, label agreement, confusion);
* peer: ``pyterrier-noise eval qrels-rnd1.txt runs/ -m AP -m nDCG@10 -m P@10 -m 'RBP(p=0.8)'``.

The median wall time of each side and the median of the pairwise ratios are reported (target:
within 3x).  Optional sides: ``--noise N`` adds ``--noise-resamples N --noise-floor`` to a third side.

Usage:  python benchmarks/versions.py [--runs 5] [--noise 0]   (writes benchmarks/results/versions.json)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
VERSIONS = ("nist", "flips93a", "flips93b", "flips93c", "flips31", "rankbiased", "goldberg1", "goldberg2", "top20",
            "second")
MEASURES = ["-m", "AP", "-m", "nDCG@10", "-m", "P@10", "-m", "RBP(p=0.8)"]


def make_versions(directory: Path) -> dict[str, Path]:
    """The ten label versions as TREC qrels files in ``directory``."""
    import numpy as np
    import pandas as pd
    from pyterrier_noise.io import read_qrels, read_runs, write_trec_qrels
    from pyterrier_noise.judges import ConfusionJudge, RandomFlips, RankBiasedFlips

    nist = read_qrels(DATA / "qrels-rnd1.txt")
    runs = read_runs(DATA / "runs")
    binary = nist.assign(label=(nist["label"] >= 1).astype(int))
    judges = [np.array([[216, 46], [21, 17]], float), np.array([[230, 55], [36, 14]], float)]
    top20 = pd.concat([r[r["rank"] < 20][["qid", "docno"]] for r in runs.values()]).drop_duplicates()
    frames = {
        "nist": nist,
        "flips93a": RandomFlips(0.93, 0.07, seed=1).transform(nist),
        "flips93b": RandomFlips(0.93, 0.07, seed=2).transform(nist),
        "flips93c": RandomFlips(0.93, 0.07, seed=3).transform(nist),
        "flips31": RandomFlips(0.31, 0.07, seed=4).transform(nist),
        "rankbiased": RankBiasedFlips(0.93, 0.07, runs=runs, seed=5).transform(nist),
        "goldberg1": ConfusionJudge(judges[0] / judges[0].sum(1, keepdims=True), [0, 1], seed=6).transform(binary),
        "goldberg2": ConfusionJudge(judges[1] / judges[1].sum(1, keepdims=True), [0, 1], seed=7).transform(binary),
        "top20": nist.merge(top20, on=["qid", "docno"]),
        "second": read_qrels(ROOT / "tests" / "data" / "covid-rnd1-second-assessor.qrels"),
    }
    assert tuple(frames) == VERSIONS
    paths = {}
    for name, frame in frames.items():
        paths[name] = directory / f"{name}.qrels"
        write_trec_qrels(frame, paths[name])
    return paths


def time_analysis(paths: dict[str, Path]) -> dict[str, float]:
    """Wall times, in this process, of the experiment, judgment_noise(1000) against bm25_baseline and
    noise_floor(1000) (every pair) on the ten versions."""
    import warnings
    from pyterrier_noise.experiments import versions_experiment
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = versions_experiment(DATA / "runs", None, {n: str(p) for n, p in paths.items()}, MEASURES[1::2],
                                  baseline="bm25_baseline")
        out["experiment"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        res.judgment_noise(n_resamples=1000)
        out["judgment_noise(1000), 142 comparisons"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        res.noise_floor(n_resamples=1000)
        out["noise_floor(1000), 10153 pairs"] = time.perf_counter() - t0
    return out


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s = user + system, peak resident MiB) of one fresh process (``os.wait4``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed (status {status})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="pairs of processes (default 5)")
    ap.add_argument("--noise", type=int, default=0, help="also time --noise-resamples N --noise-floor")
    ap.add_argument("--make", metavar="DIR", help=argparse.SUPPRESS)   # internal: write the versions to DIR
    ap.add_argument("--analysis", action="store_true",
                    help="also time, in this process, judgment_noise(1000) against bm25_baseline and noise_floor(1000)")
    args = ap.parse_args()
    if args.make:
        make_versions(Path(args.make))
        return
    if not DATA.exists():
        sys.exit(f"real data not available: {DATA} is absent")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "pyterrier_noise")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # the versions are made in their own process: this one stays small, so that the peak memory
        # a child reports (ru_maxrss, which a fork inherits) is the child's own
        subprocess.run([sys.executable, __file__, "--make", str(tmp)], check=True, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        paths = {n: tmp / f"{n}.qrels" for n in VERSIONS}
        cli = [sys.executable, "-m", "pyterrier_noise.cli"]
        ours = [*cli, "versions", *[a for n, p in paths.items() for a in ("--qrels", f"{n}={p}")],
                str(DATA / "runs"), *MEASURES, "--out", str(tmp / "out"), "--force", "--quiet"]
        peer = [*cli, "eval", str(DATA / "qrels-rnd1.txt"), str(DATA / "runs"), *MEASURES]
        sides = {"versions": ours, "eval": peer}
        if args.noise:
            sides["versions + noise"] = [*ours[:-3], "--out", str(tmp / "out2"), "--force", "--quiet",
                                         "--noise-resamples", str(args.noise), "--noise-floor"]
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        peak: dict[str, float] = {k: 0.0 for k in sides}
        timed(ours)   # warm the file cache and check the command works
        for _ in range(args.runs):
            for k, cmd in sides.items():
                wall, used, rss = timed(cmd)
                times[k].append(wall)
                cpu[k].append(used)
                peak[k] = max(peak[k], rss)
        sizes = {p.name: p.stat().st_size for p in sorted((tmp / "out").iterdir())}
        analysis = time_analysis(paths) if args.analysis else None
    ratios = [a / b for a, b in zip(times["versions"], times["eval"])]
    cpu_ratios = [a / b for a, b in zip(cpu["versions"], cpu["eval"])]
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "versions": list(paths), "runs": 143, "measures": MEASURES[1::2],
              "median_s": {k: statistics.median(v) for k, v in times.items()}, "times_s": times,
              "median_ratio_versions_over_eval": statistics.median(ratios), "target_ratio": 3.0,
              "median_cpu_s": {k: statistics.median(v) for k, v in cpu.items()}, "cpu_s": cpu,
              "median_cpu_ratio": statistics.median(cpu_ratios), "peak_rss_mib": peak,
              "output_bytes": sizes, "analysis_s": analysis, "load_average": os.getloadavg()}
    out = ROOT / "benchmarks" / "results" / "versions.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    for k, v in result["median_s"].items():
        print(f"{k:>18}: median {v:.2f} s wall, {result['median_cpu_s'][k]:.2f} s CPU, peak {peak[k]:.0f} MiB "
              f"over {len(times[k])} processes")
    if analysis:
        print("in one process: " + ", ".join(f"{k} {v:.2f} s" for k, v in analysis.items()))
    print(f"versions / eval: median ratio {result['median_ratio_versions_over_eval']:.2f}x wall, "
          f"{result['median_cpu_ratio']:.2f}x CPU (target <= 3x); "
          f"load average {result['load_average'][0]:.1f}; wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
