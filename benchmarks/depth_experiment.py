"""Benchmark and study: the pool-depth experiment of Yang (2019, thesis Ch. 4) on TREC-COVID round 1.

The thesis reduces the qrels to the Depth@k pool of the *deeply judged* runs and asks how scores,
residuals and significance decisions move as k grows.  TREC-COVID round 1 was judged shallowly:
60 of its 143 runs have every top-5 document judged on every topic, none has every top-10 judged.
So the deeply judged runs here are those judged to depth 5 (the thesis uses 50), they form the
pools and are the scored runs, and the reference is the full official qrels ("full") rather than
qrels_50.  Depths: 1, 2, 3, 5, 10, 20, 50, 100, 1000.  Measures: AP, nDCG (graded gains), RBP(0.98)
(binary); RBP residual at 0.98.

Timed workload (ours vs peer, same outputs): the per-(run, topic) AP and nDCG of the 60 runs under
the 10 versions of the qrels.
* ours: one alignment of the runs, the Depth@k label matrix of every depth, one
  ``AlignedRuns.evaluate`` call (uncertainty.depth_labels);
* peer: pandas builds each reduced qrels (pool = union of the runs' top k in trec_eval order,
  joined with the qrels) and ir_measures (pytrec_eval) evaluates the runs against it, per version.
Every peer value is compared with ours (max |difference| reported).  Each side runs in a fresh
process, so peak memory is per side; run reading is not timed on either side.

Also (untimed study): the analyses of Sec. 4.6-4.9 through uncertainty.depth_experiment, and phi
matching (Sec. 4.4-4.5) of AP, nDCG, P@10 and RR on all 143 runs, per topic for AP and nDCG on the
thesis's 0.001 grid.  Plots go to docs/img/uncertainty-*.png.

Usage:  python benchmarks/depth_experiment.py     (about a minute; writes benchmarks/results/depth_experiment.json)
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
IMG = ROOT / "docs" / "img"
DEPTHS = (1, 2, 3, 5, 10, 20, 50, 100, 1000)
DEEP = 5


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def all_aligned(runs: dict | None = None):
    """All the runs (read here unless given) aligned with the qrels (for :func:`part_deep` and :func:`study`)."""
    from pyterrier_noise import AlignedRuns, read_qrels, read_runs
    return AlignedRuns.build(read_runs(DATA / "runs") if runs is None else runs, read_qrels(DATA / "qrels-rnd1.txt"))


def part_deep(everything=None) -> dict:
    """The deeply judged runs (untimed; its own process so that the parts below read only those runs).
    ``everything``: :func:`all_aligned`'s value when the caller holds it (else it is built here)."""
    from pyterrier_noise.judges import deeply_judged_runs
    if everything is None:
        everything = all_aligned()
    counts = {d: len(deeply_judged_runs(everything, everything.table, depth=d)) for d in (DEEP, DEEP + 1, 10)}
    return {"deep": deeply_judged_runs(everything, everything.table, depth=DEEP), "counts": counts}


def _deep_runs(every: dict | None = None):
    """The deeply judged runs (names from the environment) and the qrels, read from disk (the runs
    taken from ``every``, all the runs already read, when given)."""
    from pyterrier_noise import read_qrels, read_runs
    names = os.environ["DEPTH_BENCH_RUNS"].split(",")
    runs = read_runs([DATA / "runs" / f"{n}.gz" for n in names]) if every is None else {n: every[n] for n in names}
    return runs, read_qrels(DATA / "qrels-rnd1.txt"), names


def part_ours() -> dict:
    import numpy as np
    from pyterrier_noise import AlignedRuns, MeasureSpec
    from pyterrier_noise.experiments import depth_labels
    runs, qrels, _ = _deep_runs()
    t0 = time.perf_counter()
    aligned = AlignedRuns.build(runs, qrels, n_jobs=1)
    L = np.concatenate([depth_labels(aligned, DEPTHS), aligned.label_matrix()], axis=1)
    specs = [MeasureSpec("AP"), MeasureSpec("nDCG")]
    out = aligned.evaluate(specs, L)
    seconds = time.perf_counter() - t0
    versions = [f"k={k}" for k in DEPTHS] + ["full"]
    values = {}
    for s, label in zip(specs, ("AP", "nDCG")):
        for v, ver in enumerate(versions):
            for r, name in enumerate(aligned.run_names):
                for t, q in enumerate(aligned.topics):
                    values[f"{label}\t{ver}\t{name}\t{q}"] = float(out[s][r, t, v])
    return {"seconds": seconds, "peak_mib": _peak_mib(), "values": values}


def part_peer() -> dict:
    import ir_measures
    import numpy as np
    import pandas as pd
    runs, qrels, deep = _deep_runs()
    frames = {n: runs[n][["qid", "docno", "score"]] for n in deep}
    t0 = time.perf_counter()
    # trec_eval's order: score (as a C float) descending, then docno descending
    ranked = []
    for name, f in frames.items():
        g = f.assign(s32=f["score"].astype(np.float32)).sort_values(["qid", "s32", "docno"],
                                                                   ascending=[True, False, False])
        ranked.append(g.assign(pos=g.groupby("qid").cumcount())[["qid", "docno", "pos"]])
    ranked = pd.concat(ranked, ignore_index=True)
    measures = [ir_measures.AP, ir_measures.nDCG]
    run_frames = {n: f.rename(columns={"qid": "query_id", "docno": "doc_id"}) for n, f in frames.items()}
    values = {}
    versions = [(f"k={k}", k) for k in DEPTHS] + [("full", None)]
    for ver, k in versions:
        if k is None:
            q = qrels
        else:
            pool = ranked.loc[ranked["pos"] < k, ["qid", "docno"]].drop_duplicates()
            q = qrels.merge(pool, on=["qid", "docno"])
        q = q.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        q = q.assign(relevance=q["relevance"].astype(int))
        evaluator = ir_measures.evaluator(measures, q)
        for name, run in run_frames.items():
            for m in evaluator.iter_calc(run):
                values[f"{m.measure}\t{ver}\t{name}\t{m.query_id}"] = float(m.value)
    return {"seconds": time.perf_counter() - t0, "peak_mib": _peak_mib(), "values": values}


def _records(frame) -> list:
    import numpy as np
    out = frame.replace({np.nan: None}).to_dict(orient="records")
    return [{str(k): (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in out]


def study(plots: bool = True, everything=None, runs: dict | None = None) -> dict:
    """The untimed analyses and (unless ``plots=False``) the plots.  ``benchmarks/render_docs.py`` calls it
    without plots to store the tables of docs/evidence/uncertainty.md, passing ``everything`` (all runs
    aligned, :func:`all_aligned`) that it built for :func:`part_deep` and ``runs`` (all the runs, read),
    so that they are not read again."""
    import pandas as pd
    from pyterrier_noise import AlignedRuns
    from pyterrier_noise.experiments import (FINE_GRID, depth_experiment, match_phi_many, multiplicity_table,
                                             plot_phi_match)
    runs, qrels, deep = _deep_runs(runs)
    aligned = AlignedRuns.build(runs, qrels)
    t0 = time.perf_counter()
    e = depth_experiment(aligned, depths=DEPTHS)
    t_exp = time.perf_counter() - t0
    if plots:
        IMG.mkdir(parents=True, exist_ok=True)
        e.plot_discrimination(IMG / "uncertainty-depth-discrimination.png")
        e.plot_movement(IMG / "uncertainty-depth-movement.png")
        e.plot_consistency(IMG / "uncertainty-depth-consistency.png")
    mult = {k: multiplicity_table(aligned, k) for k in (5, 20)}

    if everything is None:
        everything = all_aligned()
    t0 = time.perf_counter()
    global_ = match_phi_many(everything, None, ["AP", "nDCG", "P@10", "RR"])
    t_global = time.perf_counter() - t0
    t0 = time.perf_counter()
    both = match_phi_many(everything, None, ["AP", "nDCG"], FINE_GRID, per_topic=True, correlation=("kendall", "rbo"))
    t_topic = time.perf_counter() - t0
    topical, rbo = both["kendall"], both["rbo"]
    if plots:
        plot_phi_match(list(global_.values()), IMG / "uncertainty-phi-match.png")
        plot_phi_match([topical["AP"], topical["nDCG"]], IMG / "uncertainty-phi-per-topic.png")

    pd.set_option("display.width", 200)
    return {
        "depth_experiment_seconds": t_exp,
        "pool": _records(e.pool),
        "discrimination": _records(e.discrimination.reset_index().rename(columns={"index": "measure"})),
        "agreement": _records(e.agreement),
        "movement": _records(e.movement),
        "consistency": _records(e.consistency.pivot_table(index=["measure", "tau"], columns="consistency",
                                                          values="count", observed=False).reset_index()),
        "multiplicity": {str(k): _records(v) for k, v in mult.items()},
        "phi_match": {m: {"phi": x.phi, "depth": x.depth, "tau": x.corr, "mean_residual": x.residual,
                          "curve": _records(x.curve)} for m, x in global_.items()},
        "phi_match_seconds": t_global,
        "phi_per_topic": {f"{m}/{c}": {**x.summary, "global_phi": x.phi, "global_corr": x.corr}
                          for c, d in (("kendall", topical), ("rbo", rbo)) for m, x in d.items()},
        "phi_per_topic_seconds_two_measures_kendall_and_rbo": t_topic,
        "per_topic_table": {m: _records(x.per_topic) for m, x in topical.items()},
    }


def _run_part(name: str, deep: list[str] | None = None) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0", DEPTH_BENCH_RUNS=",".join(deep or []))
    out = subprocess.run([sys.executable, __file__, "--part", name], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"benchmark part {name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--part":
        res = {"deep": part_deep, "ours": part_ours, "peer": part_peer, "study": study}[sys.argv[2]]()
        json.dump(res, sys.stdout)
        return 0
    if not DATA.exists():
        print(f"depth_experiment: {DATA} is absent; this benchmark needs ../shared/data/trec-covid-round1",
              file=sys.stderr)
        return 1
    found = _run_part("deep")
    deep = found["deep"]
    ours = _run_part("ours", deep)
    peer = _run_part("peer", deep)
    keys = set(peer["values"])
    missing = keys - set(ours["values"])
    if missing:
        sys.exit(f"peer has {len(missing)} values ours lacks, e.g. {sorted(missing)[:3]}")
    diff = max(abs(ours["values"][k] - v) for k, v in peer["values"].items())
    res = _run_part("study", deep)
    res["deeply_judged_runs"] = found["counts"]
    n = len(peer["values"])
    workload = (f"{len(deep)} deep runs x 30 topics x {len(DEPTHS) + 1} qrels versions (Depth@k, k={','.join(map(str, DEPTHS))}"
                f", full): AP and nDCG")
    summary = {"workload": workload, "ours_seconds": ours["seconds"], "peer": "pandas pools + ir_measures "
               "(pytrec_eval), one evaluation per version", "peer_seconds": peer["seconds"],
               "ratio": peer["seconds"] / ours["seconds"], "ours_peak_mib": ours["peak_mib"],
               "peer_peak_mib": peer["peak_mib"], "values_compared": n, "max_abs_diff": diff}
    print(f"{'workload':<40} {'ours s':>8} {'peer s':>8} {'ratio':>7} {'ours MiB':>9} {'peer MiB':>9} {'max |diff|':>11}")
    print(f"{f'AP+nDCG, {len(deep)} runs x 30 topics x {len(DEPTHS) + 1} qrels':<40} {ours['seconds']:>8.3f} {peer['seconds']:>8.3f} "
          f"{summary['ratio']:>7.1f} {ours['peak_mib']:>9.0f} {peer['peak_mib']:>9.0f} {diff:>11.1e}")
    print(f"\ndeeply judged runs (every top-k judged on every topic): {res['deeply_judged_runs']}")
    import pandas as pd
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 30)
    print("\npool (judgments kept per version):")
    print(pd.DataFrame(res["pool"]).round(3).to_string(index=False))
    print("\ndiscrimination ratio (share of run pairs with paired t-test p < 0.05):")
    print(pd.DataFrame(res["discrimination"]).set_index("measure").round(3).to_string())
    print("\nagreement with the full qrels (TP/FP/FN/TN):")
    print(pd.DataFrame(res["agreement"]).to_string(index=False))
    cols = ["measure", "depth", "pct_rise", "pct_same", "pct_fall", "mean_abs_diff", "mean_residual", "covered",
            "tau_diff", "tau_abs_diff", "tau_ratio", "mean_resolved", "tau_resolved_abs_diff"]
    print("\nscore movement from depth k to full vs RBP(0.98) residual at k:")
    print(pd.DataFrame(res["movement"])[cols].round(3).to_string(index=False))
    print("\nphi matching on all 143 runs (Kendall tau_b, default grid):")
    for m, x in res["phi_match"].items():
        print(f"  {m:>6}: phi {x['phi']:g} (depth {x['depth']:.1f}), tau {x['tau']:.3f}, "
              f"mean residual {x['mean_residual']:.3f}")
    print("per topic (0.500..0.999 by 0.001):")
    for k, s in res["phi_per_topic"].items():
        print(f"  {k:>14}: mean phi {s['mean_phi']:.3f}, tau_b(R, phi) {s['tau_R_phi']:.3f} (p {s['p_value']:.2g}), "
              f"max corr <0.8/0.8-0.9/>=0.9: {s['below_0.8']}/{s['0.8_to_0.9']}/{s['at_least_0.9']}")
    out = ROOT / "benchmarks" / "results" / "depth_experiment.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "study": res}, indent=1) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)} and docs/img/uncertainty-*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
