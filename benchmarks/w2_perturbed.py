"""Benchmark W2 (../shared/spec/BENCHMARKS.md): evaluate under 1,000 perturbed judgment sets.

1,000 seeded replicates of the TREC-COVID round-1 qrels under random flips (TPR 0.93, FPR 0.07;
Rashidi, Zobel & Moffat's (2023) main setting, ``RandomFlips.from_judge("smart_neutral")`` rounded to the paper's
values), then RBP(p=0.8) base, AP and nDCG@10 per (run, topic, replicate) for all 143 runs through
``AlignedRuns.evaluate`` -- one label matrix (judgments x 1,000), one call.

Peer, measured in the same run: ir_measures (pytrec_eval for AP and nDCG@10, cwl_eval for RBP)
evaluating replicates one at a time.  Three replicates are timed (an evaluator is built per
replicate's qrels, then all 143 runs are evaluated); the cost of 1,000 is an EXTRAPOLATION from
those three.  The same three replicates (the first three of the 1,000: replicate i does not
depend on n) are compared value by value with ours.  The peer is given every run in trec_eval's
order with float32 scores (trec_eval's own precision), so that cwl_eval, which keeps input order
for tied scores, sees the same ranking as pytrec_eval and the engine.

The evaluation is also repeated with ``chunk_elements=4_000_000`` (a public option of
``AlignedRuns.evaluate``; the default is 40,000,000), with user and system CPU time for both, to
show what the engine's chunk size costs: AP's temporaries are (judged positions x replicates
per chunk) arrays, 320 MB each by default.

Usage:  python benchmarks/w2_perturbed.py [--replicates 1000] [--peer-replicates 3] [--seed 1]
        (about 1.5 minutes; writes benchmarks/results/w2_perturbed.json)
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
sys.path.insert(0, str(ROOT))


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _trec_eval_order(run):
    """The run sorted as trec_eval sorts it (float32 score descending, docno descending)."""
    run = run.assign(score=run["score"].to_numpy(dtype=np.float32).astype(np.float64))
    return run.sort_values(["qid", "score", "docno"], ascending=[True, False, False], kind="stable")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--peer-replicates", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"W2 needs the real data at {DATA}; it is absent, so nothing was benchmarked.", file=sys.stderr)
        return 2

    from pyterrier_noise import AlignedRuns, MeasureSpec, read_qrels, read_runs
    from pyterrier_noise.judges import RandomFlips

    n = args.replicates
    t0 = time.perf_counter()
    qrels = read_qrels(DATA / "qrels-rnd1.txt")
    runs = read_runs(DATA / "runs")
    t_load = time.perf_counter()
    aligned = AlignedRuns.build(runs, qrels)            # once, whatever the number of replicates
    t_align = time.perf_counter()

    model = RandomFlips(tpr=0.93, fpr=0.07, seed=args.seed)
    specs = {"RBP(p=0.8)": MeasureSpec("RBP", p=0.8), "AP": MeasureSpec("AP"),
             "nDCG@10": MeasureSpec("nDCG", cutoff=10)}
    t1 = time.perf_counter()
    L = model.sample_labels(aligned.table, n)           # (8,691 x n) label matrix
    t_sample = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    out = aligned.evaluate(list(specs.values()), L)     # {spec: (143, 30, n)}
    t_eval = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    peak_ours = _peak_mib()
    ours_seconds = t_eval - t1
    rates = (L[aligned.table.labels >= 1] >= 1).mean(), (L[aligned.table.labels < 1] >= 1).mean()

    # the same evaluation with smaller chunks (a public option of AlignedRuns.evaluate): the
    # default chunk of 40M elements makes AP's temporaries (judged positions x replicates) 320 MB
    # each, freshly mapped and zero-filled by the kernel for every chunk
    import resource as _r
    before = _r.getrusage(_r.RUSAGE_SELF)
    s = time.perf_counter()
    small = aligned.evaluate(list(specs.values()), L, chunk_elements=4_000_000)
    t_small = time.perf_counter() - s
    after = _r.getrusage(_r.RUSAGE_SELF)
    same_small = all(np.array_equal(small[v], out[v]) for v in specs.values())
    del small

    # per-measure cost (first 200 replicates, scaled), to show where the time goes
    part = min(n, 200)
    breakdown = {}
    for name, spec in specs.items():
        s = time.perf_counter()
        aligned.evaluate([spec], L[:, :part])
        breakdown[name] = (time.perf_counter() - s) * n / part

    # -- peer: ir_measures, one replicate at a time -------------------------------------------------
    import ir_measures
    from ir_measures import AP, RBP, nDCG
    peer_measures = {"RBP(p=0.8)": RBP(rel=1, p=0.8), "AP": AP, "nDCG@10": nDCG @ 10}
    peer_runs = {name: _trec_eval_order(r).rename(columns={"qid": "query_id", "docno": "doc_id"})
                 [["query_id", "doc_id", "score"]] for name, r in runs.items()}
    k = min(args.peer_replicates, n)
    reps = model.replicates(qrels, k)                   # the first k of the n replicates
    assert np.array_equal(reps.labels, L[:, :k], equal_nan=True), "replicate i must not depend on n"
    peer_times, max_diff, compared = [], {m: 0.0 for m in specs}, 0
    run_index = {name: i for i, name in enumerate(aligned.run_names)}
    topic_index = {q: i for i, q in enumerate(aligned.topics)}
    by_str = {str(m): name for name, m in peer_measures.items()}
    for i in range(k):
        q = reps.qrels(i).rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        s = time.perf_counter()
        evaluator = ir_measures.evaluator(list(peer_measures.values()), q)
        results = {name: list(evaluator.iter_calc(run)) for name, run in peer_runs.items()}
        peer_times.append(time.perf_counter() - s)
        for name, metrics in results.items():
            r = run_index[name]
            for m in metrics:
                label = by_str[str(m.measure)]
                d = abs(out[specs[label]][r, topic_index[m.query_id], i] - m.value)
                max_diff[label] = max(max_diff[label], float(d))
                compared += 1
    per_rep = float(np.mean(peer_times))
    peer_extrapolated = per_rep * n
    peak_all = _peak_mib()

    rows = [
        ("load 143 runs + qrels (once)", t_load - t0, None),
        ("align runs to judgments (once)", t_align - t_load, None),
        (f"sample {n} replicates", t_sample - t1, None),
        (f"evaluate {n} replicates x 3 measures", t_eval - t_sample, None),
        (f"W2: {n} replicates (sample + evaluate)", ours_seconds, peer_extrapolated),
        ("  evaluate again, chunk_elements=4,000,000", t_small, None),
    ]
    print(f"W2: {n} replicates of {len(aligned.table)} judgments under RandomFlips(TPR 0.93, FPR 0.07, "
          f"seed {args.seed}); {aligned.n_runs} runs x {aligned.n_topics} topics; realised TPR {rates[0]:.4f}, "
          f"FPR {rates[1]:.4f}")
    print(f"{'workload':<44} {'ours (s)':>10} {'peer (s)':>14} {'ratio':>8}")
    for label, ours, peer in rows:
        p = "" if peer is None else f"{peer:>12.0f}*"
        ratio = "" if peer is None else f"{peer / ours:>7.0f}x"
        print(f"{label:<44} {ours:>10.2f} {p:>14} {ratio:>8}")
    print(f"  * peer = ir_measures per replicate {per_rep:.2f} s (mean of {k} timed replicates: "
          f"{', '.join(f'{t:.2f}' for t in peer_times)} s) x {n}: an EXTRAPOLATION, not a measurement")
    print(f"  evaluate with the default chunks: user {r1.ru_utime - r0.ru_utime:.1f} s, system "
          f"{r1.ru_stime - r0.ru_stime:.1f} s; with chunk_elements=4,000,000: user "
          f"{after.ru_utime - before.ru_utime:.1f} s, system {after.ru_stime - before.ru_stime:.1f} s "
          f"(identical values: {same_small})")
    print("  ours per measure (scaled from the first %d replicates): %s" % (
        part, ", ".join(f"{m} {t:.2f} s" for m, t in breakdown.items())))
    print(f"peak memory (max RSS): {peak_ours / 1024:.2f} GiB after ours (including the loaded runs), "
          f"{peak_all / 1024:.2f} GiB after the peer; label matrix {L.nbytes / 2**20:.0f} MiB")
    print(f"values of replicates 0..{k - 1} vs ir_measures: {compared} per-query values, max |diff| "
          + ", ".join(f"{m} {d:.1e}" for m, d in max_diff.items()))
    ok_time, ok_mem = ours_seconds <= 60.0, peak_ours <= 3 * 1024
    ok_vals = all(d <= 1e-9 for d in max_diff.values())
    print(f"targets: <= 60 s {'met' if ok_time else 'MISSED'}; <= 3 GiB {'met' if ok_mem else 'MISSED'}; "
          f"values equal ir_measures (1e-9) {'yes' if ok_vals else 'NO'}")

    result = {
        "workload": f"W2: {n} RandomFlips(0.93, 0.07) replicates of TREC-COVID round 1, RBP(p=0.8), AP, nDCG@10, "
                    f"{aligned.n_runs} runs x {aligned.n_topics} topics",
        "seed": args.seed, "replicates": n, "judgments": len(aligned.table),
        "ours": {"load_seconds": t_load - t0, "align_seconds": t_align - t_load, "sample_seconds": t_sample - t1,
                 "evaluate_seconds": t_eval - t_sample, "seconds": ours_seconds,
                 "evaluate_cpu_seconds": {"user": r1.ru_utime - r0.ru_utime, "system": r1.ru_stime - r0.ru_stime},
                 "evaluate_seconds_chunk_4M": t_small, "chunk_4M_identical": same_small,
                 "evaluate_cpu_seconds_chunk_4M": {"user": after.ru_utime - before.ru_utime,
                                                   "system": after.ru_stime - before.ru_stime},
                 "per_measure_seconds_scaled": breakdown, "peak_rss_mib": peak_ours},
        "peer": {"tool": "ir_measures 0.4 (pytrec_eval + cwl_eval), one replicate at a time",
                 "timed_replicates": k, "seconds_per_replicate": per_rep, "replicate_seconds": peer_times,
                 "extrapolated_seconds": peer_extrapolated, "extrapolated": True},
        "ratio": peer_extrapolated / ours_seconds,
        "peak_rss_mib_after_peer": peak_all,
        "realised_rates": {"tpr": float(rates[0]), "fpr": float(rates[1])},
        "check": {"compared_values": compared, "max_abs_diff": max_diff},
        "targets": {"seconds_le_60": ok_time, "peak_le_3GiB": ok_mem, "values_equal": ok_vals},
    }
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "w2_perturbed.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0 if ok_vals else 1


if __name__ == "__main__":
    sys.exit(main())
