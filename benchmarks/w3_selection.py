"""Benchmark W3: adaptive judgment selection on TREC-COVID round 1 (shared/spec/BENCHMARKS.md).

    python benchmarks/w3_selection.py            # about 3 minutes, most of it the peer

Method C (p = 0.8, cube of the midpoint, one document per step, one global queue over the 30
topics) over all 143 runs with a budget of 8,691 judgments, labels from the round-1 qrels (a
document they do not judge is non-relevant), the per-run residuals recorded every 1,000
judgments; then Methods A and B and pooling at the same budget.

Peer: ``minavgerr`` from rbp-eval (PyPI), ``-W residual-and-midpoint-cubed`` for Method C (and
its default uniform weighting, i.e. Method A, and ``-W residual``, i.e. Method B with run-level
residuals), on the same runs (decompressed, as it reads plain files only; not timed) and budget,
reporting its average residual every 1,000 judgments.  The peer is timed twice: with ``-J 8691``
(end to end) and with ``-J 1`` (loading plus one selection round); the difference is its
selection time.  Note that minavgerr recomputes the weighted scores only every 5 x 30 = 150
judgments (an approximation it documents) and uses run-level residuals, while ours is the exact
one-document-per-step greedy with per-topic residuals (seed002's default); ``C/system`` is ours
with run-level residuals, the closest match to the peer's weighting.

Prints a table (workload, ours, peer, ratio, peak memory) and writes benchmarks/results/w3_selection.json.
Ours is timed the same way: set-up (alignment and the selector's contribution matrix and queue,
which correspond to the peer's loading and document-weight sort) separately from the selection
loop (8,691 proposals and recordings, plus the per-run residuals at each checkpoint).
Exits with status 1 when ../shared/data is absent.
"""
from __future__ import annotations

import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
BUDGET = 8691
CHECKPOINTS = list(range(1000, BUDGET, 1000)) + [BUDGET]


def _peak_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0


def ours() -> tuple[dict, dict]:
    sys.path.insert(0, str(ROOT))
    from pyterrier_noise import read_qrels
    from pyterrier_noise.selection import JudgmentSelector, _aligned_for

    t0 = time.perf_counter()
    qrels = read_qrels(DATA / "qrels-rnd1.txt")
    t1 = time.perf_counter()
    # the run files go straight to the engine (Arrow parser, files read in threads), as the
    # `select` command and JudgmentSelector(path) do
    aligned = _aligned_for(DATA / "runs", qrels)
    t2 = time.perf_counter()
    times = {"load": t1 - t0, "align": t2 - t1}
    found = {}
    for label, kw in (("C", dict(method="C")), ("C/system", dict(method="C", residual_scope="system")),
                      ("A", dict(method="A")), ("B", dict(method="B")),
                      ("B/system", dict(method="B", residual_scope="system")), ("pool", dict(method="pool"))):
        t = time.perf_counter()
        sel = JudgmentSelector(aligned, p=0.8, **kw)
        sel.judge(qrels, 0)                      # maps the qrels onto the candidates once
        t_setup = time.perf_counter()
        residuals = {}
        for cp in CHECKPOINTS:
            sel.judge(qrels, cp - sel.n_judged)  # one document per step; missing -> non-relevant
            residuals[cp] = sel.system_bounds(0.8)["residual"].to_numpy()
        t_end = time.perf_counter()
        times[label + " setup"] = t_setup - t
        times[label] = t_end - t_setup
        h = sel.history
        found[label] = {"relevant": int((h["label"] >= 1).sum()),
                        "mean_residual_by_checkpoint": {cp: float(r.mean()) for cp, r in residuals.items()}}
    return times, found


def peer(weighting: str | None, budget: int, run_dir: Path, lacking: Path) -> tuple[float, str]:
    cmd = [shutil.which("minavgerr") or "minavgerr", "-p", "0.8", "-Q", str(DATA / "qrels-rnd1.txt"),
           "-J", str(budget), "-L", str(lacking)]
    if weighting:
        cmd += ["-W", weighting]
    cmd += sorted(str(p) for p in run_dir.iterdir())
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, out.stdout


def main() -> int:
    if not (DATA / "runs").is_dir() or not (DATA / "qrels-rnd1.txt").is_file():
        print(f"W3 needs the TREC-COVID round-1 data in {DATA} (absent); not benchmarking anything smaller.",
              file=sys.stderr)
        return 1
    if shutil.which("minavgerr") is None:
        print("W3 needs the peer: pip install rbp-eval (provides minavgerr)", file=sys.stderr)
        return 1
    times, found = ours()
    peak_ours = _peak_mb()

    peers = {}
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "runs"
        run_dir.mkdir()
        for f in sorted((DATA / "runs").iterdir()):
            name = f.name[:-3] if f.name.endswith(".gz") else f.name
            opener = gzip.open if f.name.endswith(".gz") else open
            with opener(f, "rb") as src, open(run_dir / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
        lacking = Path(tmp) / "lacking.txt"
        load_only, _ = peer("residual-and-midpoint-cubed", 1, run_dir, lacking)
        peers["load_only"] = load_only
        for label, w in (("C", "residual-and-midpoint-cubed"), ("A", None), ("B", "residual")):
            total, stdout = peer(w, BUDGET, run_dir, lacking)
            last = [ln.split() for ln in stdout.splitlines() if ln.strip()][-1]
            peers[label] = {"total": total, "select": total - load_only, "stdout_last": last}
    peak_peer = _peak_mb(resource.RUSAGE_CHILDREN)

    ours_e2e = times["load"] + times["align"] + times["C setup"] + times["C"]
    rows = [
        ("C, end to end (read 143 runs + qrels, align, 8,691 steps, residuals every 1,000)", ours_e2e,
         peers["C"]["total"]),
        ("C, selection only (8,691 exact steps + per-run residuals at 9 checkpoints)", times["C"],
         peers["C"]["select"]),
        ("C with run-level residuals (the peer's weighting), selection only", times["C/system"], peers["C"]["select"]),
        ("A, selection only (peer: uniform weighting)", times["A"], peers["A"]["select"]),
        ("B, selection only (peer: -W residual, run-level)", times["B"], peers["B"]["select"]),
        ("B with run-level residuals, selection only", times["B/system"], peers["B"]["select"]),
        ("pooling, selection only", times["pool"], None),
    ]
    print(f"W3: judgment selection, TREC-COVID round 1 (143 runs, 30 topics, budget {BUDGET:,}, p = 0.8)")
    print(f"ours: read qrels {times['load']:.2f} s, read and align the runs {times['align']:.2f} s, selector set-up (contributions, "
          f"queue) {times['C setup']:.2f} s for C; peer: load {peers['load_only']:.2f} s (-J 1); peak memory ours "
          f"{peak_ours:,.0f} MiB, peer {peak_peer:,.0f} MiB")
    print(f"{'workload':<92} {'ours (s)':>9} {'peer (s)':>9} {'ratio':>7}")
    out_rows = []
    for name, o, p in rows:
        ratio = (p / o) if p else None
        print(f"{name:<92} {o:>9.2f} {(p if p else float('nan')):>9.2f} {(ratio or float('nan')):>6.1f}x")
        out_rows.append({"workload": name, "ours_s": o, "peer_s": p, "ratio": ratio})
    print("relevant found at 8,691 (ours):", {k: v["relevant"] for k, v in found.items()})
    result = {"benchmark": "W3", "budget": BUDGET, "checkpoints": CHECKPOINTS, "rows": out_rows,
              "ours_times_s": times, "peer": peers, "peak_memory_mib": {"ours": peak_ours, "peer": peak_peer},
              "ours_found": found,
              "notes": "peer selection time = minavgerr -J 8691 minus minavgerr -J 1 (loading); the peer "
                       "recomputes weighted scores every 150 judgments, ours exactly after every judgment"}
    out = ROOT / "benchmarks" / "results" / "w3_selection.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
