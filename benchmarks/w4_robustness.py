"""Benchmark W4 (../shared/spec/BENCHMARKS.md): the robustness experiment end to end.

Ours: ``robustness_experiment`` over the 143 TREC-COVID round-1 runs given as precomputed results
(``pt.Transformer.from_df``), 30 topics, 200 replicates of random flips (TPR 0.93, FPR 0.07; seed
000's main setting), three measures (RBP(p=0.8), AP, nDCG@10), every system against a baseline
(``bm25_baseline``) with a paired t-test and Holm's correction, all pairs (10,153 per measure) per
replicate, and every summary table.  Timed: running the systems, aligning, sampling the
replicates, evaluating, and all the analysis.

Peer ("the kernels alone": W2 scaled to 200 replicates), measured in the same run: the bare
``AlignedRuns.evaluate`` of the same three measures on the same 200-replicate label matrix
(alignment and sampling untimed).  Target: ours <= 3 x peer.  Ours and the peer run in separate
processes (so peak memory is per side), each ``--repeat`` times, interleaved; the best wall time of
each counts.  CPU times (process and alignment workers) are reported too: they are less sensitive
to other work on the machine.
The per-(run, topic, replicate) values of ours and the peer are compared (they must agree to 1e-12).

Usage:  python benchmarks/w4_robustness.py [--replicates 200] [--repeat 2] [--seed 1]
        (about 1.5 minutes; writes benchmarks/results/w4_robustness.json)

Study (docs/evidence/robustness.md, "What judging error does to TREC-COVID round 1"):
        python benchmarks/w4_robustness.py --study [--study-replicates 300] [--seed 1]
The 50 best runs by mean RBP(p=0.8) on the official qrels, random flips and rank-biased flips
(meta-AP over those 50 runs) at TPR 0.93 / FPR 0.07, AP, nDCG, P@10, RBP(p=0.8) and RBP(p=0.95);
RBO is Rashidi et al.'s truncated form (p = 0.9, depth 50), paired t-tests without correction at
alpha 0.05.  Prints the tables and writes benchmarks/results/w4_study.json (about 1 minute).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
sys.path.insert(0, str(ROOT))
MEASURES = ["RBP(p=0.8)", "AP", "nDCG@10"]
BASELINE = "bm25_baseline"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the alignment workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _load():
    from pyterrier_noise import read_qrels, read_runs
    return read_runs(DATA / "runs"), read_qrels(DATA / "qrels-rnd1.txt")


def part_ours(n: int, seed: int, out: str) -> dict:
    import numpy as np
    import pandas as pd
    import pyterrier as pt
    from pyterrier_noise.judges import RandomFlips
    from pyterrier_noise.experiments import robustness_experiment
    runs, qrels = _load()
    systems = {name: pt.Transformer.from_df(run) for name, run in runs.items()}
    topics = pd.DataFrame({"qid": sorted(qrels["qid"].unique(), key=int)})
    topics["query"] = "topic " + topics["qid"]
    model = RandomFlips(0.93, 0.07)
    c0, t0 = _cpu(), time.perf_counter()
    res = robustness_experiment(systems, topics, qrels, MEASURES, model, n_replicates=n, seed=seed,
                                baseline=BASELINE, test="t", correction="holm",
                                perquery=True)   # keeps the per-topic values compared with the peer's
    frames = res.frames()
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    np.savez(out, **{m: res.values[m] for m in res.measures})
    summary = res.summary[["measure", "kendall_tau", "tau_ap", "rbo", "significant_pairs", "kept_significant",
                           "lost", "reversed", "gained"]]
    base = res.baseline.groupby("measure", sort=False)[["better_share", "worse_share"]].mean()
    return {"seconds": seconds, "cpu": cpu, "peak_mib": _peak_mib(), "rows": {k: len(v) for k, v in frames.items()},
            "summary": summary.to_dict(orient="records"),
            "baseline_mean_shares": base.reset_index().to_dict(orient="records")}


def part_peer(n: int, seed: int, out: str) -> dict:
    import numpy as np
    from pyterrier_noise import AlignedRuns
    from pyterrier_noise.measures import to_spec
    from pyterrier_noise.judges import RandomFlips
    runs, qrels = _load()
    aligned = AlignedRuns.build(runs, qrels)
    L = RandomFlips(0.93, 0.07).sample_labels(aligned.table, n, seed=seed)
    specs = [to_spec(m)[0] for m in MEASURES]
    c0, t0 = _cpu(), time.perf_counter()
    values = aligned.evaluate(specs, L)
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    np.savez(out, **{m: values[s] for m, s in zip(MEASURES, specs)})
    return {"seconds": seconds, "cpu": cpu, "peak_mib": _peak_mib()}


STUDY_MEASURES = ["AP", "nDCG", "P@10", "RBP(p=0.8)", "RBP(p=0.95)"]


def study_data(n: int, seed: int, runs: dict | None = None) -> dict:
    """The experiment of Rashidi, Zobel & Moffat (2023, Sec. 5) on TREC-COVID round 1: the rows that
    ``study`` prints and stores (``benchmarks/render_docs.py`` stores them for docs/evidence/robustness.md,
    passing the ``runs`` it holds, so that they are not read again)."""
    import numpy as np
    from scipy import stats
    from pyterrier_noise import evaluate
    from pyterrier_noise.judges import RandomFlips, RankBiasedFlips
    from pyterrier_noise.experiments import robustness_experiment
    if runs is None:
        runs, qrels = _load()
    else:
        from pyterrier_noise import read_qrels
        qrels = read_qrels(DATA / "qrels-rnd1.txt")
    means = evaluate(runs, qrels, ["RBP(p=0.8)"]).set_index("name")["value"]
    top = list(means.sort_values(ascending=False, kind="stable").index[:50])
    chosen = {name: runs[name] for name in top}
    models = {"random flips": RandomFlips(0.93, 0.07),
              "rank-biased flips": RankBiasedFlips(0.93, 0.07, runs=chosen)}
    rows, reverse_rows, versus = [], [], []
    for label, model in models.items():
        t0 = time.perf_counter()
        res = robustness_experiment(chosen, None, qrels, STUDY_MEASURES, model, n_replicates=n, seed=seed,
                                    rbo_variant="trunc", rbo_p=0.9, keep_pvalues=True)
        seconds = time.perf_counter() - t0
        rates = res.labels[["tpr", "fpr", "n_relevant"]].mean()
        # Rashidi et al. (Sec. 5.4) compare measures by a paired t-test on the per-replicate RBO
        # (the replicates are shared by all measures: common random numbers)
        rk = res.rankings.pivot(index="replicate", columns="measure", values=["rbo", "kendall_tau"])
        for other in STUDY_MEASURES[1:]:
            for stat in ("rbo", "kendall_tau"):
                d = rk[(stat, other)] - rk[(stat, "AP")]
                versus.append({"model": label, "measure": other, "statistic": stat, "mean_minus_AP": float(d.mean()),
                               "p_value": float(stats.ttest_rel(rk[(stat, other)], rk[(stat, "AP")]).pvalue)})
        for r in res.summary.itertuples():
            rows.append({"model": label, "measure": r.measure, "kendall_tau": r.kendall_tau,
                         "kendall_tau_sd": r.kendall_tau_sd, "rbo": r.rbo, "rbo_sd": r.rbo_sd, "tau_ap": r.tau_ap,
                         "significant_pairs": r.significant_pairs, "kept": r.kept_significant, "lost": r.lost,
                         "reversed": r.reversed, "swapped": r.swapped, "gained": r.gained, "seconds": seconds,
                         "realised_tpr": rates["tpr"], "realised_fpr": rates["fpr"],
                         "relevant_per_replicate": rates["n_relevant"]})
            # reverse protocol: observed p <= 0.05 under a replicate -> what the official qrels say
            mapped = res.true_p_given_observed(r.measure, 0.0, 0.05)
            near = res.true_p_given_observed(r.measure, 0.005, 0.015)
            reverse_rows.append({"model": label, "measure": r.measure, "observed_significant": int(len(mapped)),
                                 "confirmed": float(np.mean(mapped < 0.05)), "same_direction": float(np.mean(mapped < 0.5)),
                                 "significantly_reversed": float(np.mean(mapped > 0.95)),
                                 "window_0.005_0.015": int(len(near)),
                                 "window_mean": float(np.mean(near)) if len(near) else float("nan"),
                                 "window_sd": float(np.std(near, ddof=1)) if len(near) > 1 else float("nan")})
    return {"runs": top, "n_runs": len(runs), "replicates": n, "seed": seed, "rows": rows, "reverse": reverse_rows,
            "versus_AP": versus, "models": list(models), "official_relevant": int((qrels["label"] >= 1).sum())}


def study(n: int, seed: int) -> int:
    """Run :func:`study_data`, print its tables and write benchmarks/results/w4_study.json."""
    d = study_data(n, seed)
    top, rows, reverse_rows, versus = d["runs"], d["rows"], d["reverse"], d["versus_AP"]
    print(f"50 best of {d['n_runs']} runs by RBP(p=0.8): {top[0]} .. {top[-1]}; {n} replicates, seed {seed}")
    print(f"{'model':18} {'measure':12} {'tau':>6} {'(sd)':>6} {'RBO':>6} {'(sd)':>6} {'tau_ap':>6} {'sig':>5} "
          f"{'kept':>6} {'lost':>6} {'revers':>7} {'swapped':>7} {'gained':>7}")
    for r in rows:
        print(f"{r['model']:18} {r['measure']:12} {r['kendall_tau']:6.3f} {r['kendall_tau_sd']:6.3f} {r['rbo']:6.3f} "
              f"{r['rbo_sd']:6.3f} {r['tau_ap']:6.3f} {r['significant_pairs']:5d} {r['kept']:6.3f} {r['lost']:6.3f} "
              f"{r['reversed']:7.4f} {r['swapped']:7.4f} {r['gained']:7.4f}")
    print("paired t-test over replicates against AP (positive: more stable than AP)")
    for v in versus:
        print(f"  {v['model']:18} {v['measure']:12} {v['statistic']:12} {v['mean_minus_AP']:+.3f}  p = {v['p_value']:.1e}")
    print("reverse protocol: pairs significant (p <= 0.05) under a replicate, judged by the official qrels")
    print(f"{'model':18} {'measure':12} {'n':>7} {'confirmed':>9} {'same dir':>9} {'sig. rev.':>9} "
          f"{'n(.005-.015)':>12} {'mean p':>7} {'sd':>6}")
    for r in reverse_rows:
        print(f"{r['model']:18} {r['measure']:12} {r['observed_significant']:7d} {r['confirmed']:9.3f} "
              f"{r['same_direction']:9.3f} {r['significantly_reversed']:9.4f} {r['window_0.005_0.015']:12d} "
              f"{r['window_mean']:7.3f} {r['window_sd']:6.3f}")
    for label in d["models"]:
        r = next(x for x in rows if x["model"] == label)
        print(f"{label}: realised TPR {r['realised_tpr']:.4f}, FPR {r['realised_fpr']:.4f}, "
              f"{r['relevant_per_replicate']:.0f} relevant judgments per replicate "
              f"(official: {d['official_relevant']}); {r['seconds']:.1f} s")
    path = ROOT / "benchmarks" / "results" / "w4_study.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"runs": top, "replicates": n, "seed": seed, "rows": rows, "reverse": reverse_rows,
                                "versus_AP": versus},
                               indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


def _run_part(*args: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, __file__, "--part", *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"benchmark part {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--study", action="store_true", help="run the docs study instead of the benchmark")
    ap.add_argument("--study-replicates", type=int, default=300)
    ap.add_argument("--part", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.part:
        which, n, seed, out = args.part
        fn = part_ours if which == "ours" else part_peer
        print(json.dumps(fn(int(n), int(seed), out)))
        return 0
    if not DATA.exists():
        print(f"W4 needs the real data at {DATA}; it is absent, so nothing was benchmarked.", file=sys.stderr)
        return 2
    if args.study:
        return study(args.study_replicates, args.seed)
    import numpy as np

    n, seed = args.replicates, args.seed
    with tempfile.TemporaryDirectory() as tmp:
        ours, peer = [], []
        for r in range(args.repeat):  # interleaved, so that load on the machine hits both sides
            peer.append(_run_part("peer", str(n), str(seed), f"{tmp}/peer.npz"))
            ours.append(_run_part("ours", str(n), str(seed), f"{tmp}/ours.npz"))
        a, b = np.load(f"{tmp}/ours.npz"), np.load(f"{tmp}/peer.npz")
        diffs = {m: float(np.abs(a[m] - b[m]).max()) for m in MEASURES}
        shape = tuple(a[MEASURES[0]].shape)
    best_ours = min(ours, key=lambda d: d["seconds"])
    best_peer = min(peer, key=lambda d: d["seconds"])
    ratio = best_ours["seconds"] / best_peer["seconds"]
    row = {"workload": f"W4 robustness, 143 runs x 30 topics x {n} replicates, 3 measures, baseline + Holm",
           "ours_s": best_ours["seconds"], "peer": "bare AlignedRuns.evaluate", "peer_s": best_peer["seconds"],
           "ratio": ratio, "target_ratio": 3.0, "ours_peak_mib": best_ours["peak_mib"],
           "peer_peak_mib": best_peer["peak_mib"]}
    print(f"{'workload':74} {'ours (s)':>9} {'peer (s)':>9} {'ours/peer':>9} {'ours MiB':>9} {'peer MiB':>9}")
    print(f"{row['workload']:74} {row['ours_s']:9.2f} {row['peer_s']:9.2f} {ratio:8.2f}x "
          f"{row['ours_peak_mib']:9.0f} {row['peer_peak_mib']:9.0f}")
    print(f"all wall times (s): ours {[round(d['seconds'], 2) for d in ours]}, peer {[round(d['seconds'], 2) for d in peer]}")
    cpu_ratio = min(d["cpu"] for d in ours) / min(d["cpu"] for d in peer)
    print(f"CPU time (s, less sensitive to other load): ours {[round(d['cpu'], 2) for d in ours]}, "
          f"peer {[round(d['cpu'], 2) for d in peer]}; best ours / best peer {cpu_ratio:.2f}x")
    print(f"target ours <= 3.0 x peer: {'met' if ratio <= 3.0 else 'NOT met'}")
    print(f"values (runs x topics x replicates = {shape}) ours vs peer, max |difference|: "
          + ", ".join(f"{m} {d:.1e}" for m, d in diffs.items()))
    print("summary tables (rows): " + ", ".join(f"{k} {v}" for k, v in best_ours["rows"].items()))
    print("headline (mean over replicates):")
    for s in best_ours["summary"]:
        print(f"  {s['measure']:11} tau {s['kendall_tau']:.3f}  tau_ap {s['tau_ap']:.3f}  RBO {s['rbo']:.3f}  "
              f"significant pairs {s['significant_pairs']}: kept {s['kept_significant']:.3f}, lost {s['lost']:.3f}, "
              f"reversed {s['reversed']:.4f}; gained {s['gained']:.4f}")
    result = {"rows": [row], "all_seconds": {"ours": [d["seconds"] for d in ours], "peer": [d["seconds"] for d in peer]},
              "all_cpu_seconds": {"ours": [d["cpu"] for d in ours], "peer": [d["cpu"] for d in peer]},
              "cpu_ratio": cpu_ratio,
              "values_max_abs_diff": diffs, "replicates": n, "seed": seed, "measures": MEASURES, "baseline": BASELINE,
              "table_rows": best_ours["rows"], "summary": best_ours["summary"],
              "baseline_mean_shares": best_ours["baseline_mean_shares"]}
    path = ROOT / "benchmarks" / "results" / "w4_robustness.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0 if all(d <= 1e-12 for d in diffs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
