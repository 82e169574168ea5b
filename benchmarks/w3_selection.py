"""Benchmark W3: adaptive judgment selection on TREC-COVID round 1 (shared/spec/BENCHMARKS.md).

    python benchmarks/w3_selection.py              # about 6 minutes, most of it the peer
    python benchmarks/w3_selection.py --repeat 1   # about 3 minutes, noisier

Method C (p = 0.8, cube of the midpoint, one document per step, one global queue over the 30
topics) over all 143 runs with a budget of 8,691 judgments, labels from the round-1 qrels (a
document they do not judge is non-relevant), the per-run residuals recorded every 1,000
judgments; then Methods A and B and pooling at the same budget.

Peer: ``minavgerr`` from rbp-eval (PyPI; a Python port of rbp_eval), ``-W
residual-and-midpoint-cubed`` for Method C (and its default uniform weighting, i.e. Method A, and
``-W residual``, i.e. Method B with run-level residuals), on the same runs (decompressed, as it
reads plain files only; not timed) and budget, reporting its average residual every 1,000
judgments.  Its whole process is timed, and a stamp taken inside the same run when it has sorted
its document-weight list splits that into loading and selection.  Note that minavgerr recomputes the
weighted scores only every 5 x 30 = 150 judgments (an approximation it documents) and uses
run-level residuals, while ours is the exact one-document-per-step greedy with per-topic residuals
(the default, as in Moffat, Webber & Zobel 2007); ``C/system`` is ours with run-level residuals, the closest match to the peer's
weighting.

Both sides run in fresh processes, ``--repeat`` times each (default 2), ours and the peer's Method
C alternating so that both meet the same load, and the fastest time of each is kept (timings on
this shared 2-core machine vary by 20-40% from run to run; the 1-minute load average before each
measurement is recorded).  Ours is
timed three ways: the whole process (interpreter start and imports included, as the peer's time
includes its own), end to end inside the process (read the 143 run files and the qrels, align,
set up the selector, select, residuals at every checkpoint), and the parts: reading and aligning,
the selector's set-up (contribution matrix and queue, the counterpart of the peer's document-weight
sort), and the selection loop (8,691 proposals and recordings plus the per-run residuals at each
checkpoint).  The measured process of ours runs as the ``select`` command does when run as a
program: the garbage collector off for the run and frozen before exit (docs/evidence/selection.md).

Prints a table (workload, ours, peer, ratio, peak memory) and writes benchmarks/results/w3_selection.json.
Exits with status 1 when ../shared/data or the peer is absent.
"""
from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
BUDGET = 8691
CHECKPOINTS = list(range(1000, BUDGET, 1000)) + [BUDGET]
METHODS = (("C", dict(method="C")), ("C/system", dict(method="C", residual_scope="system")),
           ("A", dict(method="A")), ("B", dict(method="B")),
           ("B/system", dict(method="B", residual_scope="system")), ("pool", dict(method="pool")))


def ours(methods: tuple = METHODS) -> dict:
    """One measurement of ours, in this (fresh) process; returns times, what was found and peak memory."""
    t_start = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    # the run files are read in threads from the start (inflated while numpy and pyarrow are
    # imported, then parsed), while the selection package is imported and the qrels read; the
    # qrels are read with Arrow into a JudgmentTable and the residuals taken as arrays, so that
    # nothing in this process imports pandas (docs/evidence/selection.md, "Speed")
    from pyterrier_noise.io.files import list_run_files
    from pyterrier_noise.io.reader import RunFileReader
    reading = RunFileReader(list_run_files(DATA / "runs"), os.cpu_count() or 1)
    import numpy as np
    from pyterrier_noise.engine import JudgmentTable
    from pyterrier_noise.io import read_arrow_qrels
    from pyterrier_noise.selection import JudgmentSelector
    from pyterrier_noise.selection.contributions import aligned_for
    t0 = time.perf_counter()
    qrels = JudgmentTable.from_arrays(*read_arrow_qrels(DATA / "qrels-rnd1.txt"))
    t1 = time.perf_counter()
    aligned = aligned_for(reading, qrels)
    reading.forget()
    t2 = time.perf_counter()
    # the reading overlaps the imports and the qrels: "read and align runs" is what is left of it
    times = {"import": t0 - t_start, "read qrels": t1 - t0, "read and align runs": t2 - t1}
    found = {}
    for label, kw in methods:
        t = time.perf_counter()
        sel = JudgmentSelector(aligned, p=0.8, **kw)
        sel.judge(qrels, 0)                      # maps the qrels onto the candidates once
        t_setup = time.perf_counter()
        residuals = {}
        for cp in CHECKPOINTS:
            sel.judge(qrels, cp - sel.n_judged)  # one document per step; missing -> non-relevant
            residuals[cp] = sel.bounds_arrays(0.8)["residual"].mean(axis=1)   # per run: mean over topics
        t_end = time.perf_counter()
        times[label + " setup"] = t_setup - t
        times[label] = t_end - t_setup
        if label == "C":
            times["C end to end in process"] = t_end - t0
        found[label] = {"relevant": int(np.count_nonzero(sel.labels() >= 1)),   # judged here (no initial qrels)
                        "mean_residual_by_checkpoint": {cp: float(r.mean()) for cp, r in residuals.items()}}
    return {"times": times, "found": found, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def ours_in_fresh_process() -> dict:
    """Every method in one fresh process (the parts), then Method C alone in another, whose wall
    time is the whole-process figure (interpreter start, imports, reading, alignment, selection)."""
    import subprocess
    out = subprocess.run([sys.executable, __file__, "--ours-json"], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    t = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--ours-json", "--only-c"], capture_output=True, text=True, check=True)
    result["times"]["whole process"] = time.perf_counter() - t
    return result


# The peer runs in a fresh process of its own; a stamp taken when its document-weight list is
# sorted (DocWgt.get_entries, the end of its loading) splits its time into loading and selection
# within the same run, so no difference of two noisy runs is needed.
_PEER_RUNNER = """
import io, json, sys, time
t0 = time.perf_counter()
import rbp_eval.cli.minavgerr as m
stamp = {}
orig = m.DocWgt.get_entries
def stamped(self, *a, **k):
    out = orig(self, *a, **k)
    stamp["loaded"] = time.perf_counter()
    return out
m.DocWgt.get_entries = stamped
real, sys.stdout = sys.stdout, io.StringIO()
status = m.main(sys.argv[1:])
text, sys.stdout = sys.stdout.getvalue(), real
t1 = time.perf_counter()
print(json.dumps({"status": status, "load": stamp["loaded"] - t0, "select": t1 - stamp["loaded"], "stdout": text}))
"""


def peer(weighting: str | None, budget: int, run_dir: Path, lacking: Path) -> dict:
    """One run of minavgerr: its whole-process wall time, and its loading and selection phases."""
    import subprocess
    args = ["-p", "0.8", "-Q", str(DATA / "qrels-rnd1.txt"), "-J", str(budget), "-L", str(lacking)]
    if weighting:
        args += ["-W", weighting]
    args += sorted(str(p) for p in run_dir.iterdir())
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _PEER_RUNNER, *args], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    res = json.loads(out.stdout)
    if res["status"] != 0:
        raise RuntimeError(f"minavgerr exited with status {res['status']}: {out.stderr}")
    last = [ln.split() for ln in res["stdout"].splitlines() if ln.strip()][-1]
    return {"total": wall, "load": res["load"], "select": res["select"], "stdout_last": last}


def main() -> int:
    if "--ours-json" in sys.argv[1:]:
        # the measured process of ours: nothing of the harness (argparse, subprocess, tempfile) is
        # imported, and it runs as the select command does: without garbage collections, neither
        # during the run nor at exit, with glibc keeping freed memory for reuse (see docs/evidence/selection.md)
        gc.disable()
        sys.path.insert(0, str(ROOT))
        from pyterrier_noise.cli._process import batch_memory
        batch_memory()   # as the select command tunes its memory, before numpy and pyarrow are imported
        result = ours(METHODS[:1] if "--only-c" in sys.argv[1:] else METHODS)
        result["modules"] = sorted(m for m in ("pandas", "scipy", "matplotlib", "pyterrier") if m in sys.modules)
        print(json.dumps(result), flush=True)
        gc.freeze()
        return 0
    import argparse
    import gzip
    import shutil
    import tempfile
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2, help="fresh-process runs of each side; the fastest is kept")
    ap.add_argument("--ours-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only-c", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not (DATA / "runs").is_dir() or not (DATA / "qrels-rnd1.txt").is_file():
        print(f"W3 needs the TREC-COVID round-1 data in {DATA} (absent); not benchmarking anything smaller.",
              file=sys.stderr)
        return 1
    if shutil.which("minavgerr") is None:
        print("W3 needs the peer: pip install rbp-eval (provides minavgerr)", file=sys.stderr)
        return 1
    repeat = max(1, args.repeat)

    peers: dict = {}
    runs_of_ours: list[dict] = []
    loads: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "runs"
        run_dir.mkdir()
        for f in sorted((DATA / "runs").iterdir()):
            name = f.name[:-3] if f.name.endswith(".gz") else f.name
            opener = gzip.open if f.name.endswith(".gz") else open
            with opener(f, "rb") as src, open(run_dir / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
        lacking = Path(tmp) / "lacking.txt"
        # ours and the peer's Method C alternate, so that both sides meet the same load (this
        # machine is shared); the load average is recorded before each measurement
        measured_c = []
        for _ in range(repeat):
            loads.append({"side": "ours", "load_1min": os.getloadavg()[0]})
            runs_of_ours.append(ours_in_fresh_process())
            loads.append({"side": "peer C", "load_1min": os.getloadavg()[0]})
            measured_c.append(peer("residual-and-midpoint-cubed", BUDGET, run_dir, lacking))
        for label, w, n in (("C", None, 0), ("A", None, 1), ("B", "residual", 1)):
            measured = measured_c if label == "C" else [peer(w, BUDGET, run_dir, lacking) for _ in range(n)]
            peers[label] = {k: min(m[k] for m in measured) for k in ("total", "load", "select")}
            peers[label]["stdout_last"] = measured[0]["stdout_last"]
            peers[label]["runs"] = measured
    peak_peer = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    times = {k: min(r["times"][k] for r in runs_of_ours) for k in runs_of_ours[0]["times"]}
    found = runs_of_ours[0]["found"]
    peak_ours = max(r["peak_mib"] for r in runs_of_ours)

    rows = [
        ("C, whole process (interpreter start, imports, read, align, 8,691 steps, residuals)",
         times["whole process"], peers["C"]["total"]),
        ("C, end to end in process (read 143 runs + qrels, align, set up, 8,691 steps, residuals)",
         times["C end to end in process"], peers["C"]["total"]),
        ("C, selection only (8,691 exact steps + per-run residuals at 9 checkpoints)", times["C"],
         peers["C"]["select"]),
        ("C with run-level residuals (the peer's weighting), selection only", times["C/system"], peers["C"]["select"]),
        ("A, selection only (peer: uniform weighting)", times["A"], peers["A"]["select"]),
        ("B, selection only (peer: -W residual, run-level)", times["B"], peers["B"]["select"]),
        ("B with run-level residuals, selection only", times["B/system"], peers["B"]["select"]),
        ("pooling, selection only", times["pool"], None),
    ]
    print(f"W3: judgment selection, TREC-COVID round 1 (143 runs, 30 topics, budget {BUDGET:,}, p = 0.8); "
          f"fastest of {repeat} fresh-process run(s) per side")
    print(f"ours: import {times['import']:.2f} s, read qrels {times['read qrels']:.2f} s, read and align the runs "
          f"{times['read and align runs']:.2f} s, selector set-up (contributions, queue) {times['C setup']:.2f} s "
          f"for C; peer (C): load {peers['C']['load']:.2f} s, selection {peers['C']['select']:.2f} s; peak memory ours {peak_ours:,.0f} MiB, "
          f"peer {peak_peer:,.0f} MiB")
    print("1-minute load average before each measurement: "
          + ", ".join(f"{x['side']} {x['load_1min']:.1f}" for x in loads))
    print(f"{'workload':<92} {'ours (s)':>9} {'peer (s)':>9} {'ratio':>7}")
    out_rows = []
    for name, o, p in rows:
        ratio = (p / o) if p else None
        print(f"{name:<92} {o:>9.2f} {(p if p else float('nan')):>9.2f} {(ratio or float('nan')):>6.1f}x")
        out_rows.append({"workload": name, "ours_s": o, "peer_s": p, "ratio": ratio})
    print("relevant found at 8,691 (ours):", {k: v["relevant"] for k, v in found.items()})
    result = {"benchmark": "W3", "budget": BUDGET, "checkpoints": CHECKPOINTS, "repeat": repeat, "rows": out_rows,
              "ours_times_s": times, "ours_runs": [r["times"] for r in runs_of_ours], "peer": peers,
              "peak_memory_mib": {"ours": peak_ours, "peer": peak_peer}, "ours_found": found,
              "load_average_1min": loads,
              "notes": "fastest of --repeat fresh-process runs per side; the peer's selection time runs from the "
                       "sort of its document-weight list to its exit, in the same run as its loading; the peer "
                       "recomputes weighted scores every 150 judgments, ours exactly after every judgment"}
    out = ROOT / "benchmarks" / "results" / "w3_selection.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
