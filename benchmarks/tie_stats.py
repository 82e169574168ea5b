"""Tie statistics (Yang 2019 thesis, Table 3.2) of all 143 TREC-COVID round-1 runs.

Reads the runs once (not timed), stacks them into one results frame (3,509,493 rows with a
``name`` column) and times :func:`pyterrier_noise.ties.tie_stats` on it (median of 3 calls, in
this process), then :func:`~pyterrier_noise.ties.tie_stats_in_chunks` on the ``{name: frame}``
mapping (8 runs per call, no progress bar).  Target (issue 19): ``tie_stats`` under 2 s.

Usage:  python benchmarks/tie_stats.py [RUN_DIR]
"""
from __future__ import annotations

import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from pyterrier_noise import read_runs
from pyterrier_noise.ties import tie_stats, tie_stats_in_chunks

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "data" / "trec-covid-round1" / "runs"


def main() -> None:
    run_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the 0-based ranks of some runs are announced while reading
        runs = read_runs(run_dir)
    frame = pd.concat([r.assign(name=n) for n, r in runs.items()], ignore_index=True)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        stats = tie_stats(frame)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    chunked = tie_stats_in_chunks(runs, progress=False)
    t_chunks = time.perf_counter() - t0
    pd.testing.assert_frame_equal(chunked.topics, stats.topics)
    row = dict(date=time.strftime("%Y-%m-%d"), runs=len(runs), rows=len(frame),
               tie_stats_median_s=statistics.median(times), tie_stats_s=times, tie_stats_in_chunks_s=t_chunks)
    print(f"{len(runs)} runs, {len(frame):,} rows: tie_stats {row['tie_stats_median_s']:.2f} s (median of 3; "
          f"target < 2 s), tie_stats_in_chunks {t_chunks:.2f} s")
    print(stats.summary.to_string())
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "tie_stats.json").write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
