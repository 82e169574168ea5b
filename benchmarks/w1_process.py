"""Benchmark W1 as whole processes, the way a user runs it (issue 19): interpreter start, imports,
reading, evaluation and output all included, each side a fresh process, measured in the same run.

Sides (on TREC-COVID round 1, 143 gzip runs):

* ours: exactly ``pyterrier-noise eval qrels-rnd1.txt runs/ -m 'RBP(p=0.5)' -m 'RBP(p=0.8)'
  -m 'RBP(p=0.95)' -m 'INST(T=3,max_rel=2)' -m AP -m nDCG -m nDCG@10 -m P@10 --per-query --format tsv``
  (run as ``python -m pyterrier_noise.cli``, output to /dev/null);
* floor: ``benchmarks/floor_parse.py``, a fresh Python process that only decompresses and parses the
  files with Arrow into arrays (issue 19's yardstick);
* tuned floor: ``benchmarks/floor_parse.py --tuned``, the same reading done as ``eval``'s reader does
  it (ISA-L's gzip decoder, one block per file, plain strings encoded once): what is left above it
  is the command's own cost (imports, alignment, measures, output);
* ir_measures: ``benchmarks/w1_evaluate.py --part ir_measures`` (its own loading included);
* ours RBP at three p with ``--ties expected`` against rbp-eval (PyPI):
  ``benchmarks/w1_evaluate.py --part rbp_eval``.

Sides alternate (ours, floor, ours, floor, ...) so that drift in the machine's speed hits both; the
median wall time of each side and the median of the pairwise ratios are reported, with the peak
memory of the largest single process (``wait4``).  The values themselves are checked by
``benchmarks/w1_evaluate.py`` and tests/measures/test_reference.py.

Before measuring, every side's ``pyterrier_noise`` is byte-compiled (``compileall``), as ``pip
install`` does for the peers: an editable checkout run with ``PYTHONDONTWRITEBYTECODE=1`` would
otherwise compile its modules again in every process (0.05-0.08 s here).

With ``--before SRC`` (a checkout or an unpacked ``git archive`` holding ``pyterrier_noise/``) the
same W1 command is also run from SRC, alternating with this checkout, as a before/after row.

With ``--more`` W1 with R@100, Bpref, Judged@10, Rprec and Success@10 added is run against W1.

Usage:  python benchmarks/w1_process.py [--runs N] [--peer-runs M] [--before SRC] [--more] [--no-floor]
(defaults 5 and 1;
writes benchmarks/results/w1_process.json)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
MEASURES = ["RBP(p=0.5)", "RBP(p=0.8)", "RBP(p=0.95)", "INST(T=3,max_rel=2)", "AP", "nDCG", "nDCG@10", "P@10"]
#: the measures of trec_eval's default output that W1 adds with --more (issue 27's second target)
MORE = ["R@100", "Bpref", "Judged@10", "Rprec", "Success@10"]


def _eval_cmd(measures: list[str], *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "pyterrier_noise.cli", "eval", "qrels-rnd1.txt", "runs/"]
    for m in measures:
        cmd += ["-m", m]
    return cmd + ["--per-query", "--format", "tsv", *extra]


SIDES = {
    "ours W1": _eval_cmd(MEASURES),
    "ours W1 + 5 measures": _eval_cmd(MEASURES + MORE),
    "floor (Arrow parse only)": [sys.executable, str(ROOT / "benchmarks" / "floor_parse.py"), str(DATA / "runs")],
    "tuned floor (ISA-L, 1 block)": [sys.executable, str(ROOT / "benchmarks" / "floor_parse.py"), "--tuned",
                                     str(DATA / "runs")],
    "ir_measures": [sys.executable, str(ROOT / "benchmarks" / "w1_evaluate.py"), "--part", "ir_measures"],
    "ours RBP x3, ties expected": _eval_cmd(MEASURES[:3], "--ties", "expected"),
    "rbp-eval": [sys.executable, str(ROOT / "benchmarks" / "w1_evaluate.py"), "--part", "rbp_eval"],
}


#: the checkout each side imports pyterrier_noise from (this one unless --before names another)
SOURCES: dict[str, Path] = {}


def run_once(cmd: list[str], source: Path = ROOT) -> dict:
    """Wall seconds, CPU seconds and peak MiB of one fresh process (output thrown away)."""
    env = dict(os.environ, PYTHONPATH=str(source))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=DATA, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed with status {proc.returncode}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mib": ru.ru_maxrss / 1024.0}


def pair(a: str, b: str, n: int) -> dict:
    """``n`` alternating runs of sides a and b (after one warm-up of each when n > 1; the files are
    in the page cache after the first pair anyway)."""
    src = lambda side: SOURCES.get(side, ROOT)  # noqa: E731
    if n > 1:
        run_once(SIDES[a], src(a))
        run_once(SIDES[b], src(b))
    ra, rb = [], []
    for _ in range(n):
        ra.append(run_once(SIDES[a], src(a)))
        rb.append(run_once(SIDES[b], src(b)))
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    return {"ours": a, "peer": b, "n": n,
            "ours_s": med(ra, "wall_s"), "peer_s": med(rb, "wall_s"),
            "ratio_peer_over_ours": statistics.median(y["wall_s"] / x["wall_s"] for x, y in zip(ra, rb)),
            "ours_cpu_s": med(ra, "cpu_s"), "peer_cpu_s": med(rb, "cpu_s"),
            "ours_peak_mib": max(r["peak_mib"] for r in ra), "peer_peak_mib": max(r["peak_mib"] for r in rb),
            "ours_wall_all": [r["wall_s"] for r in ra], "peer_wall_all": [r["wall_s"] for r in rb]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="alternating runs of ours against the floor")
    ap.add_argument("--peer-runs", type=int, default=1, help="alternating runs against ir_measures and rbp-eval")
    ap.add_argument("--before", type=Path, help="another checkout to run the same W1 command from (a before/after row)")
    ap.add_argument("--more", action="store_true", help=f"also W1 with {', '.join(MORE)} against W1 (a row)")
    ap.add_argument("--no-floor", action="store_true", help="leave out the two floor rows")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"W1 needs the real data at {DATA}; it is absent, so nothing was benchmarked.", file=sys.stderr)
        return 2
    import compileall
    for src in {ROOT, *( [args.before.resolve()] if args.before is not None else [])}:
        compileall.compile_dir(str(src / "pyterrier_noise"), quiet=1)
    rows = []
    if args.before is not None:
        SIDES["W1 from --before"] = SIDES["ours W1"]
        SOURCES["W1 from --before"] = args.before.resolve()
        rows.append(pair("ours W1", "W1 from --before", args.runs))
    if args.more:
        rows.append(pair("ours W1 + 5 measures", "ours W1", args.runs))
    if not args.no_floor:
        rows += [pair("ours W1", "floor (Arrow parse only)", args.runs),
                 pair("ours W1", "tuned floor (ISA-L, 1 block)", args.runs)]
    if args.peer_runs > 0:
        rows += [pair("ours W1", "ir_measures", args.peer_runs),
                 pair("ours RBP x3, ties expected", "rbp-eval", args.peer_runs)]
    if args.before is not None:
        rows[0]["before"] = str(args.before)
    print(f"{'ours':28} {'s':>6} {'peer':26} {'s':>6} {'peer/ours':>9} {'CPU s':>11} {'peak MiB':>11}")
    for r in rows:
        print(f"{r['ours']:28} {r['ours_s']:6.2f} {r['peer']:26} {r['peer_s']:6.2f} {r['ratio_peer_over_ours']:8.2f}x "
              f"{r['ours_cpu_s']:5.2f}/{r['peer_cpu_s']:<5.2f} {r['ours_peak_mib']:5.0f}/{r['peer_peak_mib']:<5.0f}")
    result = {"date": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
              "load_average": os.getloadavg(), "command": " ".join(SIDES["ours W1"][1:]), "rows": rows}
    out = ROOT / "benchmarks" / "results" / "w1_process.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"load average {os.getloadavg()[0]:.1f}; written {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
