"""Benchmark W2 at scale (issue 19): the robustness command at 1,000 and 10,000 replicates.

Each case is one whole process, exactly as a user types it (plus ``--out`` and ``--quiet``)::

    pyterrier-noise robustness qrels-rnd1.txt runs/ --model random --tpr 0.93 --fpr 0.07 \\
        --replicates N --seed 1 -m 'RBP(p=0.8)' -m AP -m nDCG@10 --out DIR --quiet

on TREC-COVID round 1 (143 runs, 30 topics, 8,691 judgments; 10,153 system pairs per measure).
Wall time and the child's peak memory (its own ``ru_maxrss`` from ``os.wait4``, the per-child
form of ``getrusage(RUSAGE_CHILDREN)``) are recorded with the load average at the start (the
machine is shared).  Targets: 1,000 replicates in at most 10 s; 10,000 in at most 60 s and 3 GiB.

Usage:  python benchmarks/w2_scale.py [--replicates 1000 10000] [--timeout 1200]
        (writes benchmarks/results/w2_scale.json)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"


def command(n: int, out: Path, seed: int = 1) -> list[str]:
    return [sys.executable, "-m", "pyterrier_noise.cli", "robustness", str(DATA / "qrels-rnd1.txt"),
            str(DATA / "runs"), "--model", "random", "--tpr", "0.93", "--fpr", "0.07", "--replicates", str(n),
            "--seed", str(seed), "-m", "RBP(p=0.8)", "-m", "AP", "-m", "nDCG@10", "--out", str(out), "--quiet"]


def run_case(n: int, timeout: float) -> dict:
    """One whole process: wall seconds, CPU seconds and peak RSS of the child."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = command(n, out)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
    shown = " ".join(c if " " not in c and "(" not in c else repr(c) for c in cmd[3:])
    return {"replicates": n, "seconds": wall, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024.0, "exit": proc.returncode, "timed_out": wall > timeout,
            "load_average_at_start": load, "command": f"pyterrier-noise {shown}",
            "stderr_tail": err.strip().splitlines()[-3:] if proc.returncode else []}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per case")
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"no data at {DATA}", file=sys.stderr)
        return 2
    targets = {1000: (10.0, None), 10000: (60.0, 3 * 1024.0)}
    rows = []
    print(f"{'replicates':>10} {'wall (s)':>9} {'cpu (s)':>8} {'peak (GiB)':>10} {'load':>5}  target")
    for n in args.replicates:
        r = run_case(n, args.timeout)
        t_max, m_max = targets.get(n, (None, None))
        r["target"] = {"seconds_max": t_max, "peak_mib_max": m_max,
                       "seconds_met": None if t_max is None else r["seconds"] <= t_max,
                       "peak_met": None if m_max is None else r["peak_rss_mib"] <= m_max}
        rows.append(r)
        verdict = ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in
                            (("time", r["target"]["seconds_met"]), ("memory", r["target"]["peak_met"]))
                            if v is not None)
        print(f"{n:>10} {r['seconds']:>9.1f} {r['cpu_seconds']:>8.1f} {r['peak_rss_mib'] / 1024:>10.2f} "
              f"{r['load_average_at_start']:>5.1f}  {verdict}{'' if r['exit'] == 0 else ' (exit %d)' % r['exit']}")
    print("command:", rows[0]["command"] if rows else "")
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "w2_scale.json"
    # cases measured earlier (other replicate counts) are kept, each with its own date
    old = json.loads(path.read_text())["cases"] if path.exists() else []
    today = datetime.date.today().isoformat()
    for r in rows:
        r["date"] = today
    cases = sorted([c for c in old if c["replicates"] not in args.replicates] + rows, key=lambda c: c["replicates"])
    path.write_text(json.dumps({"cpus": os.cpu_count(), "cases": cases}, indent=1) + "\n")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
