"""Scale: `eval` on large synthetic collections against pytrec_eval, as whole processes.

Generates seeded collections of realistic shape (gzip TREC runs; never committed):

* ``msmarco``: MS MARCO dev-like, 6,980 topics x depth 1,000, about one judged relevant per topic
  (two judgments a topic, 60% relevant);
* ``dl``: TREC DL-like, 200 topics x depth 1,000, 200 graded judgments (0-3) a topic.

then runs, alternating, each side as a fresh process with its peak memory (``wait4``):

* ours: ``pyterrier-noise eval QRELS RUNS -m 'RBP(p=0.8)' -m AP -m nDCG@10 -m P@10 --per-query
  --format tsv`` (``--memory`` as given);
* pytrec_eval: a process that reads the qrels once and then one run at a time (parse, evaluate
  map / ndcg_cut_10 / P_10), as a trec_eval-style tool does.

Prints wall time, peak memory, bytes per ranked position and the ratio for each size, and writes
``benchmarks/results/scale.json``.  Values are compared on AP and P@10 per query (1e-9).

Usage:  python benchmarks/scale.py [--kind msmarco|dl] [--runs 1 3 ...] [--repeat N] [--memory GIB]
        [--dir DIR] [--no-peer]   (defaults: msmarco, 1 and 3 runs, 1 repeat, 4 GiB, /tmp/pyterrier-noise-scale)
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {"msmarco": dict(topics=6980, depth=1000, judged=2, grades=2, p_rel=0.6, docs=8_800_000),
          "dl": dict(topics=200, depth=1000, judged=200, grades=4, p_rel=0.3, docs=8_800_000)}

PEER = r'''
import gzip, sys, pytrec_eval
qrels = {}
for line in open(sys.argv[1]):
    q, _, d, r = line.split()
    qrels.setdefault(q, {})[d] = int(r)
ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut_10", "P_10"})
out = open(sys.argv[2], "w")
for path in sys.argv[3:]:
    run = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    name = path.rsplit("/", 1)[-1][:-3]
    for q, m in ev.evaluate(run).items():
        out.write(f"{name}\t{q}\t{m['map']!r}\t{m['P_10']!r}\n")
'''


def generate(kind: str, n_runs: int, root: Path) -> tuple[Path, list[Path], int]:
    """The collection's qrels and its first ``n_runs`` runs (made once, seeded), and positions a run."""
    s = SHAPES[kind]
    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    (root / "runs").mkdir(exist_ok=True)
    qids = np.arange(1, s["topics"] + 1) * 7 + 1_000_000
    qrels = root / "qrels.txt"
    if not qrels.exists():
        with open(qrels, "w") as f:
            for q in qids:
                docs = (np.arange(s["judged"]) * 7919 + rng.integers(0, s["docs"])) % s["docs"]
                labels = np.where(rng.random(s["judged"]) < s["p_rel"], rng.integers(1, s["grades"], s["judged"]), 0)
                f.writelines(f"{q} 0 {d} {r}\n" for d, r in zip(docs, labels))
    runs = []
    for r in range(n_runs):
        path = root / "runs" / f"run{r:03d}.gz"
        runs.append(path)
        if path.exists():
            continue
        tmp = path.with_suffix(".tmp")
        with _gzip_open(tmp) as f:
            f.write(run_text(kind, r, qids))
        tmp.rename(path)
    return qrels, runs, s["topics"] * s["depth"]


def _gzip_open(path: Path):
    """A gzip file for writing at level 1: ISA-L's writer (a dependency of the package) is about 4x
    faster than the standard library's and writes the same text."""
    try:
        from isal import igzip
        return igzip.open(path, "wb", compresslevel=1)
    except ImportError:
        return gzip.open(path, "wb", compresslevel=1)


_NUMBER_TEXTS: dict = {}


def _number_texts(n: int):
    """'0' ... str(n - 1) as one Arrow string array, made once a process (runs take from it)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if _NUMBER_TEXTS.get("n", 0) < n:
        _NUMBER_TEXTS.update(text=pc.cast(pa.array(np.arange(n)), pa.string()), n=n)
    return _NUMBER_TEXTS["text"]


def run_text(kind: str, r: int, qids: np.ndarray):
    """The text of run ``r`` (a buffer): per topic a start document and sorted normal scores drawn
    from seed 1000 + r, lines ``qid Q0 docno rank score runR`` with the score to 4 decimals, as
    ``f"{score:.4f}"`` writes it (the text is built by Arrow, not line by line in Python)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    s = SHAPES[kind]
    depth, g = s["depth"], np.random.default_rng(1000 + r)
    starts, scores = np.empty(len(qids), np.int64), np.empty((len(qids), depth))
    for i in range(len(qids)):   # the draws of a topic in the seeded stream's order
        # distinct documents in a ranking; a run retrieves part of the topic's judged ones
        starts[i] = g.integers(0, s["docs"])
        scores[i] = np.sort(g.normal(size=depth))[::-1] + 20.0
    x = scores.ravel()
    n = np.round(x * 10_000)
    near_half = np.abs(x * 10_000 - n) > 0.5 - 1e-6   # where float rounding could differ from Python's
    n = n.astype(np.int64)
    n[near_half] = [int(f"{v:.4f}".replace(".", "")) for v in x[near_half]]
    num = _number_texts(max(s["docs"], int(qids.max()) + 1))
    four = pc.utf8_lpad(num.slice(0, 10_000), 4, "0")
    docs = (np.arange(depth) * 8803 + starts[:, None]) % s["docs"]
    text = pc.binary_join_element_wise(
        num.take(pa.array(np.repeat(qids, depth))), pa.scalar("Q0"), num.take(pa.array(docs.ravel())),
        num.take(pa.array(np.tile(np.arange(1, depth + 1), len(qids)))),
        pc.binary_join_element_wise(num.take(pa.array(n // 10_000)), four.take(pa.array(n % 10_000)), "."),
        pa.scalar(f"run{r}\n"), " ")
    offsets = np.frombuffer(text.buffers()[1], np.int32)[text.offset:text.offset + len(text) + 1]
    return text.buffers()[2][int(offsets[0]):int(offsets[-1])]


def run_once(cmd: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(map(str, cmd[:6]))} ... failed: {err[-500:]}")
    return {"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mib": ru.ru_maxrss / 1024.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=sorted(SHAPES), default="msmarco")
    ap.add_argument("--runs", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--memory", type=float, default=4.0, help="ours: eval --memory GIB")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pyterrier-noise-scale"))
    ap.add_argument("--no-peer", action="store_true",
                    help="ours alone (pytrec_eval's time grows linearly with the runs, its memory is constant)")
    args = ap.parse_args()
    rows = []
    for n in args.runs:
        qrels, runs, per_run = generate(args.kind, n, args.dir / args.kind)
        ours_out, peer_out = args.dir / "ours.tsv", args.dir / "peer.tsv"
        ours = [sys.executable, "-m", "pyterrier_noise.cli", "eval", str(qrels), *map(str, runs),
                "-m", "RBP(p=0.8)", "-m", "AP", "-m", "nDCG@10", "-m", "P@10", "--per-query", "--format", "tsv",
                "--memory", str(args.memory), "--quiet"]
        peer = [sys.executable, "-c", PEER, str(qrels), str(peer_out), *map(str, runs)]
        a, b = [], []
        for _ in range(args.repeat):
            with open(ours_out, "w") as f:
                t0 = time.perf_counter()
                proc = subprocess.Popen(ours, stdout=f, stderr=subprocess.PIPE)
                _, status, ru = os.wait4(proc.pid, 0)
                if os.waitstatus_to_exitcode(status) != 0:
                    sys.exit(f"ours failed: {proc.stderr.read().decode()[-500:]}")
                a.append({"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
                          "peak_mib": ru.ru_maxrss / 1024.0})
            if not args.no_peer:
                b.append(run_once(peer))
        if args.no_peer:
            row = {"kind": args.kind, "runs": n, "positions": n * per_run, "ours_s": float(np.median([x["wall_s"] for x in a])),
                   "ours_peak_mib": max(x["peak_mib"] for x in a)}
            row["ours_bytes_per_position"] = row["ours_peak_mib"] * 2 ** 20 / row["positions"]
            rows.append(row)
            print(f"{args.kind} {n:4d} runs {row['positions'] / 1e6:7.1f}M positions: ours {row['ours_s']:6.1f} s "
                  f"{row['ours_peak_mib'] / 1024:5.2f} GiB ({row['ours_bytes_per_position']:.0f} B/pos)", flush=True)
            continue
        # values: AP and P@10 per query
        mine = {}
        for line in open(ours_out).read().splitlines()[1:]:
            r, q, m, v, _ = line.split("\t")
            mine[(r, q, m)] = float(v)
        worst = 0.0
        for line in open(peer_out):
            r, q, ap_, p10 = line.split("\t")
            worst = max(worst, abs(mine[(r, q, "AP")] - float(ap_)), abs(mine[(r, q, "P@10")] - float(p10)))
        med = lambda xs, k: float(np.median([x[k] for x in xs]))  # noqa: E731
        row = {"kind": args.kind, "runs": n, "positions": n * per_run, "ours_s": med(a, "wall_s"),
               "ours_cpu_s": med(a, "cpu_s"), "peer_cpu_s": med(b, "cpu_s"), "load_average": os.getloadavg()[0],
               "ours_peak_mib": max(x["peak_mib"] for x in a), "peer_s": med(b, "wall_s"),
               "peer_peak_mib": max(x["peak_mib"] for x in b), "max_abs_diff": worst}
        row["ratio_peer_over_ours"] = row["peer_s"] / row["ours_s"]
        # CPU time (user + system, every thread): a loaded machine disturbs it less than wall time,
        # and it counts ours' second thread, so its ratio is the lower of the two on a quiet machine
        row["cpu_ratio_peer_over_ours"] = row["peer_cpu_s"] / row["ours_cpu_s"]
        row["ours_bytes_per_position"] = row["ours_peak_mib"] * 2 ** 20 / row["positions"]
        rows.append(row)
        print(f"{args.kind} {n:4d} runs {row['positions'] / 1e6:7.1f}M positions: ours {row['ours_s']:6.1f} s "
              f"{row['ours_peak_mib'] / 1024:5.2f} GiB ({row['ours_bytes_per_position']:.0f} B/pos); pytrec_eval "
              f"{row['peer_s']:6.1f} s {row['peer_peak_mib'] / 1024:5.2f} GiB; peer/ours {row['ratio_peer_over_ours']:.2f}x "
              f"(CPU {row['ours_cpu_s']:.1f} s against {row['peer_cpu_s']:.1f} s: {row['cpu_ratio_peer_over_ours']:.2f}x; "
              f"load {row['load_average']:.1f});"
              f" max |diff| {worst:.1e}", flush=True)
    out = ROOT / "benchmarks" / "results" / "scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
                               "load_average": os.getloadavg(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
