"""Benchmark W1 (../shared/spec/BENCHMARKS.md): evaluate everything once, end to end.

Load the 143 gzip TREC-COVID round-1 runs and the qrels from disk, then compute per-query RBP at
p = 0.5, 0.8, 0.95 (base and residual), INST(T=3) with residual, AP, nDCG, nDCG@10 and P@10.

Peers, measured in the same run, each in a fresh process (so peak memory is per side):
* ir_measures (cwl_eval provider for RBP / INST, pytrec_eval for the rest), with its own loading;
* rbp-eval (PyPI) for RBP alone (base and residual at the three p in one pass).

Values are checked, not assumed: every per-query value of AP, nDCG, nDCG@10 and P@10 against
pytrec_eval; RBP base and residual against rbp-eval (ties='expected', rbp_eval's treatment); RBP
and INST against ir_measures' cwl_eval provider, which keeps input order for tied scores, with
ties='given'.

Usage:  python benchmarks/w1_evaluate.py        (about 1 to 2 minutes; writes benchmarks/results/w1_evaluate.json)
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
PS = [0.5, 0.8, 0.95]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def part_ours(ties: str, rbp_only: bool) -> dict:
    import numpy as np  # noqa: F401
    from pyterrier_noise import AlignedRuns, MeasureSpec, read_qrels, read_runs
    t0 = time.perf_counter()
    qrels = read_qrels(DATA / "qrels-rnd1.txt")
    t_read = time.perf_counter()
    aligned = AlignedRuns.build(DATA / "runs", qrels, ties=ties)  # read and aligned in parallel workers
    t_align = time.perf_counter()
    specs = [MeasureSpec("RBP", c, p=p) for p in PS for c in ("value", "residual")]
    if not rbp_only:
        specs += [MeasureSpec("INST", T=3.0), MeasureSpec("INST", "residual", T=3.0), MeasureSpec("AP"),
                  MeasureSpec("nDCG"), MeasureSpec("nDCG", cutoff=10), MeasureSpec("P", cutoff=10)]
    out = aligned.evaluate(specs)
    t_eval = time.perf_counter()
    values = {}
    for s in specs:
        key = f"{s.family}:{s.component}:{s.p}:{s.T}:{s.cutoff}"
        values[key] = {f"{n}\t{q}": float(out[s][r, t, 0]) for r, n in enumerate(aligned.run_names)
                       for t, q in enumerate(aligned.topics)}
    result = {"seconds": t_eval - t0, "read_qrels": t_read - t0, "read_and_align_runs": t_align - t_read,
              "evaluate": t_eval - t_align, "peak_mib": _peak_mib(), "values": values}
    if ty_given(ties):  # (untimed) runs listed in rank order with non-increasing scores
        runs = read_runs(DATA / "runs")
        result["consistent_runs"] = [n for n, r in runs.items() if _listed_in_score_order(r)]
    return result


def ty_given(ties: str) -> bool:
    return ties == "given"


def _listed_in_score_order(run) -> bool:
    """File order = rank order, and scores never increase down it (ties keep file order)."""
    same_q = run["qid"].to_numpy()[1:] == run["qid"].to_numpy()[:-1]
    rank_up = run["rank"].to_numpy()[1:] > run["rank"].to_numpy()[:-1]
    score_down = run["score"].to_numpy()[1:] <= run["score"].to_numpy()[:-1]
    return bool((~same_q | (rank_up & score_down)).all())


def part_ir_measures() -> dict:
    import ir_measures
    from ir_measures import AP, INST, RBP, P, nDCG
    t0 = time.perf_counter()
    qrels = list(ir_measures.read_trec_qrels(str(DATA / "qrels-rnd1.txt")))
    measures = [RBP(p=p, rel=1) for p in PS] + [INST(T=3.0, max_rel=1), AP, nDCG, nDCG @ 10, P @ 10]
    evaluator = ir_measures.evaluator(measures, qrels)
    values: dict = {}
    for f in sorted((DATA / "runs").iterdir()):
        name = f.name[:-3]
        run = list(ir_measures.read_trec_run(str(f)))
        for m in evaluator.iter_calc(run):
            values.setdefault(str(m.measure), {})[f"{name}\t{m.query_id}"] = float(m.value)
    return {"seconds": time.perf_counter() - t0, "peak_mib": _peak_mib(), "values": values}


def part_rbp_eval() -> dict:
    import gzip
    from rbp_eval import Ordering, RelType, evaluate, load_qrels, load_run
    t0 = time.perf_counter()
    with open(DATA / "qrels-rnd1.txt") as fh:
        qrels = load_qrels(fh)
    qrels.set_reltype(RelType.BINARY, 1.0)
    values: dict = {}
    for f in sorted((DATA / "runs").iterdir()):
        name = f.name[:-3]
        with gzip.open(f, "rt") as fh:
            res = evaluate(qrels, load_run(fh), Ordering.SCORE, PS, [float("inf")])
        for q in res.qid_res:
            for k, p in enumerate(PS):
                pr = q.depth_res[0].persist_res[k]
                values.setdefault(f"RBP:value:{p}", {})[f"{name}\t{q.qid}"] = pr.sum
                values.setdefault(f"RBP:residual:{p}", {})[f"{name}\t{q.qid}"] = pr.err
    return {"seconds": time.perf_counter() - t0, "peak_mib": _peak_mib(), "values": values}


def _run_part(*args: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, __file__, "--part", *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"benchmark part {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def _max_diff(ours: dict, ref: dict, runs: set | None = None) -> tuple[float, int]:
    diffs = [abs(ours[k] - v) for k, v in ref.items() if k in ours and (runs is None or k.split("\t")[0] in runs)]
    return (max(diffs) if diffs else float("nan")), len(diffs)


def main() -> int:
    if not DATA.exists():
        print(f"W1 needs the real data at {DATA}; it is absent, so nothing was benchmarked.", file=sys.stderr)
        return 2
    ours = _run_part("ours", "trec_eval", "all")
    ours_given = _run_part("ours", "given", "all")
    ours_rbp = _run_part("ours", "expected", "rbp")
    irm = _run_part("ir_measures")
    rbpe = _run_part("rbp_eval")

    checks = {}
    # ir_measures' cwl_eval provider sorts by score keeping input order for ties: compare it on the
    # runs listed in rank order with non-increasing scores (then it and the 'given' policy agree)
    consistent = set(ours_given["consistent_runs"])
    pairs = {"AP": "AP:value:None:None:None", "nDCG": "nDCG:value:None:None:None",
             "nDCG@10": "nDCG:value:None:None:10", "P@10": "P:value:None:None:10"}
    for irm_name, key in pairs.items():
        checks[f"{irm_name} vs pytrec_eval"] = _max_diff(ours["values"][key], irm["values"][irm_name])
    for p in PS:
        from ir_measures import RBP
        checks[f"RBP(p={p}) vs cwl_eval"] = _max_diff(ours_given["values"][f"RBP:value:{p}:None:None"],
                                                      irm["values"][str(RBP(p=p, rel=1))], consistent)
        for c in ("value", "residual"):
            checks[f"RBP(p={p}) {c} vs rbp-eval"] = _max_diff(ours_rbp["values"][f"RBP:{c}:{p}:None:None"],
                                                             rbpe["values"][f"RBP:{c}:{p}"])
    checks["INST(T=3) vs cwl_eval"] = _max_diff(ours_given["values"]["INST:value:None:3.0:None"],
                                                irm["values"]["INST(T=3.0,max_rel=1)"], consistent)
    rows = [
        {"workload": "W1 all measures, end to end", "ours_s": ours["seconds"], "peer": "ir_measures",
         "peer_s": irm["seconds"], "ratio": irm["seconds"] / ours["seconds"],
         "ours_peak_mib": ours["peak_mib"], "peer_peak_mib": irm["peak_mib"]},
        {"workload": "W1 RBP (3 p, base+residual), end to end", "ours_s": ours_rbp["seconds"], "peer": "rbp-eval",
         "peer_s": rbpe["seconds"], "ratio": rbpe["seconds"] / ours_rbp["seconds"],
         "ours_peak_mib": ours_rbp["peak_mib"], "peer_peak_mib": rbpe["peak_mib"]},
    ]
    print(f"{'workload':44} {'ours (s)':>9} {'peer':>12} {'peer (s)':>9} {'ratio':>7} {'ours MiB':>9} {'peer MiB':>9}")
    for r in rows:
        print(f"{r['workload']:44} {r['ours_s']:9.2f} {r['peer']:>12} {r['peer_s']:9.2f} {r['ratio']:6.1f}x "
              f"{r['ours_peak_mib']:9.0f} {r['peer_peak_mib']:9.0f}")
    print(f"ours, split: read qrels {ours['read_qrels']:.2f} s, read and align runs "
          f"{ours['read_and_align_runs']:.2f} s, evaluate {ours['evaluate']:.2f} s")
    print(f"cwl_eval comparisons over the {len(consistent)} runs listed in rank order with non-increasing scores")
    print("agreement (max |difference| over per-query values, count):")
    for k, (d, n) in checks.items():
        print(f"  {k:36} {d:.1e}  ({n} values)")
    result = {"rows": rows, "split": {k: ours[k] for k in ("read_qrels", "read_and_align_runs", "evaluate")},
              "cwl_runs_compared": len(consistent),
              "agreement": {k: {"max_abs_diff": d, "n": n} for k, (d, n) in checks.items()},
              "machine": {"cpus": os.cpu_count()}}
    out = ROOT / "benchmarks" / "results" / "w1_evaluate.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"written {out.relative_to(ROOT)}")
    worst = max(d for d, _ in checks.values())
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--part":
        part = sys.argv[2]
        if part == "ours":
            res = part_ours(sys.argv[3], sys.argv[4] == "rbp")
        elif part == "ir_measures":
            res = part_ir_measures()
        else:
            res = part_rbp_eval()
        json.dump(res, sys.stdout)
        sys.exit(0)
    sys.exit(main())
