"""Diagnosis benchmark: where AP's pair-design variance goes wrong, per variance path, on TREC-COVID round 1.

For every simulated study (the cheap judge and the stratified gold sample of
``benchmarks/cheap_judges.py``, same seeds) AP is estimated by gold-only, PPI and PPI++ twice: with
the design-based Horvitz-Thompson variance of the linearisation alone (``variance="design"``) and
with the pooled model (``variance="pooled"``).  The package takes the pooled value where the
design-based one rests on fewer than 30 effective degrees of freedom; this script records which
path each system and pair took and reports, per path, the mean variance estimate over the
Monte-Carlo variance of the estimate across studies, and the coverage of the 95% intervals (t with
the path's degrees of freedom).

For gold-only (systems) it also computes two oracle variances that use the *true* labels of every
pair (unknown in practice) for the linearisation's weights ``(dN/dr_d - AP) / (T R)``: the
design-based variance with these weights, and the pooled model with them.  Their ratios to the
Monte-Carlo variance separate the error of the linearisation itself from the error of estimating
its weights from the sample.  The minimum of sampled relevant pairs per topic is turned off here.

Usage:  python benchmarks/ap_pair_variance.py [--studies 150] [--budgets 300,500,700,1000] [--judge rank]
        (writes benchmarks/results/ap_pair_variance.json)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def tables(results: list) -> dict:
    """The two tables of docs/evidence/cheap-judges.md: ``ap_variance`` (per budget and method, systems and pairs:
    the share on the pooled path, each path's mean variance over the true one, their coverage alone
    and as used, and the bias over the SD, systems) and ``ap_oracle`` (gold-only with the true weights)."""
    cols = ["gold pairs", "relevant pairs per topic", "method", "pooled path, systems", "pooled path, pairs",
            "design-based var / true", "pooled var / true", "coverage, design-based alone",
            "coverage, pooled alone", "coverage as used, systems", "coverage as used, pairs", "bias / SD"]
    rows, oracle = [], []
    for b in sorted({r["gold_pairs"] for r in results}):
        for m in ("gold", "ppi++"):
            s = next((r for r in results if r["gold_pairs"] == b and r["method"] == m and r["kind"] == "systems"), None)
            p = next((r for r in results if r["gold_pairs"] == b and r["method"] == m and r["kind"] == "pairs"), None)
            if s is None or p is None:
                continue
            rows.append([b, s["relevant_per_topic"], m, s["pooled_path_share"], p["pooled_path_share"],
                         s["design_var_over_mc"], s["pooled_var_over_mc"], s["coverage_design_only"],
                         s["coverage_pooled_only"], s["coverage"], p["coverage"], s["bias_over_sd"]])
            if "oracle_design_var_over_mc" in s:
                oracle.append([b, s["oracle_design_var_over_mc"], s["oracle_design_coverage_normal"],
                               s["oracle_pooled_var_over_mc"], s["oracle_pooled_coverage_normal"]])
    return {"ap_variance": {"columns": cols, "rows": rows},
            "ap_oracle": {"columns": ["gold pairs", "design-based var / true", "coverage, design-based",
                                      "pooled var / true", "coverage, pooled"], "rows": oracle}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=150)
    ap.add_argument("--budgets", default="300,500,700,1000", help="gold pairs")
    ap.add_argument("--judge", default="rank", help="rank (errors depend on rank) or flat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "ap_pair_variance.json"))
    args = ap.parse_args()
    from cheap_judges import DATA, draw_cheap, top_and_importance
    if not DATA.exists():
        print(f"real data not available: {DATA} is absent", file=sys.stderr)
        return 2
    from scipy import stats

    from pyterrier_noise.correction import CheapStudy, ap_pair, sample_pairs
    from pyterrier_noise.correction.ap_pair import _APParts, _pooled_ap_quadratics
    from pyterrier_noise.correction.design import ht_covariance
    from pyterrier_noise.engine import AlignedRuns
    from pyterrier_noise.measures import to_spec

    ap_pair.MIN_RELEVANT_PER_TOPIC = 0.0
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aligned = AlignedRuns.build(DATA / "runs", DATA / "qrels-rnd1.txt")
    R, T = aligned.n_runs, aligned.n_topics
    rng = np.random.default_rng(args.seed)
    ii, jj = np.triu_indices(R, 1)
    sub = np.sort(rng.choice(len(ii), 500, replace=False))
    spec = to_spec("AP")[0]
    studies = {v: CheapStudy(aligned, [spec], pairs=(ii[sub], jj[sub]), variance=v) for v in ("design", "pooled")}
    st = studies["pooled"]
    truth = aligned.table.labels
    top, importance = top_and_importance(aligned, ii, jj)
    relevant = (truth >= 1).astype(np.float64)
    per = st.per_topic(truth)[spec]
    ref = {"systems": per.mean(axis=1)}
    ref["pairs"] = ref["systems"][st.i] - ref["systems"][st.j]
    methods = ("gold", "ppi", "ppi++")
    results = []
    for budget in [int(b) for b in args.budgets.split(",") if b.strip()]:
        rec = {(m, k): {x: [] for x in ("v", "vd", "vp", "dfd", "dfp")} for m in methods for k in ref}
        oracle = {x: [] for x in ("design", "pooled")}
        counts = []
        t1 = time.time()
        for k in range(args.studies):
            srng = np.random.default_rng([args.seed, budget, k] + ([1] if args.judge == "flat" else []))
            cheap = draw_cheap(truth, top, srng, rank_dependent=(args.judge == "rank"))
            smp = sample_pairs(cheap, budget, design="stratified", importance=importance, seed=int(srng.integers(2 ** 31)))
            counts.append(np.bincount(st.row_topic[smp.rows], weights=relevant[smp.rows], minlength=T).mean())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = {v: s.estimate(cheap, truth[smp.rows], smp, methods=methods)[spec] for v, s in studies.items()}
            for m in methods:
                for kind in ref:
                    e_d, e_p = getattr(est["design"], kind), getattr(est["pooled"], kind)
                    idx = 0 if kind == "systems" else 1
                    r = rec[(m, kind)]
                    r["v"].append(e_d[m][0])
                    r["vd"].append(e_d[m][1] ** 2)
                    r["vp"].append(e_p[m][1] ** 2)
                    r["dfd"].append(est["design"].df[m][idx])
                    r["dfp"].append(est["pooled"].df[m][idx])
            # the oracle: the linearisation's weights at the true labels of every pair
            parts = _APParts(st, spec, cheap, truth[smp.rows], smp)
            _, A_true = parts.point(relevant)
            oracle["design"].append(np.diag(ht_covariance((A_true[:, smp.rows] * parts.y[None, :]).T, smp)))
            oracle["pooled"].append(_pooled_ap_quadratics(parts, dict(Ay=A_true, Af=A_true), smp, st)[0][:, 0])
        for (m, kind), r in rec.items():
            V, VD, VP, DFD, DFP = (np.array(r[x]) for x in ("v", "vd", "vp", "dfd", "dfp"))
            mc = V.var(axis=0, ddof=1)
            ok = mc > 0
            pooled = DFD < 30.0              # the package's rule (MIN_DESIGN_DF)
            err = np.abs(V - ref[kind])

            def cover(var: np.ndarray, df: np.ndarray) -> np.ndarray:
                return err <= stats.t.ppf(0.975, np.maximum(df, 1.0)) * np.sqrt(var)

            chosen = cover(np.where(pooled, VP, VD), np.where(pooled, DFP, DFD))
            row = {"judge": args.judge, "gold_pairs": budget, "method": m, "kind": kind, "studies": args.studies,
                   "relevant_per_topic": float(np.mean(counts)),
                   "pooled_path_share": float(pooled.mean()),
                   "coverage": float(chosen.mean()),
                   "coverage_on_pooled_path": float(chosen[pooled].mean()) if pooled.any() else None,
                   "coverage_on_design_path": float(chosen[~pooled].mean()) if (~pooled).any() else None,
                   "coverage_design_only": float(cover(VD, DFD).mean()),
                   "coverage_pooled_only": float(cover(VP, DFP).mean()),
                   "design_var_over_mc": float(np.median(VD.mean(axis=0)[ok] / mc[ok])),
                   "pooled_var_over_mc": float(np.median(VP.mean(axis=0)[ok] / mc[ok])),
                   "bias_over_sd": float(np.median((V.mean(axis=0) - ref[kind])[ok] / np.sqrt(mc[ok]))),
                   "bias": float(np.mean(V - ref[kind]))}
            if m == "gold" and kind == "systems":
                for name, vals in oracle.items():
                    O = np.array(vals)
                    row[f"oracle_{name}_var_over_mc"] = float(np.median(O.mean(axis=0)[ok] / mc[ok]))
                    row[f"oracle_{name}_coverage_normal"] = float((err <= 1.96 * np.sqrt(O)).mean())
            results.append(row)
            print(json.dumps(row), flush=True)
        print(f"budget {budget}: {time.time() - t1:.0f} s", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": "python benchmarks/ap_pair_variance.py " + " ".join(sys.argv[1:]),
                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "seconds": round(time.time() - t0, 1), "results": results,
                               "tables": tables(results)}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
