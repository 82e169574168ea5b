"""User story: "my judges are noisy" -- does "A beats B, p < 0.05" survive plausible judging error?

Perturbs the qrels with Rashidi, Zobel & Moffat's (2023) judge models (random flips at TPR 0.93 / FPR 0.07, and a weaker
crowd-like judge), evaluates every system on every replicate with the aligned engine, and reports
how stable the system ranking is and how often significance conclusions are kept, lost, gained or
reversed.

    python examples/my_judges_are_noisy.py            # synthetic collection (offline)
    python examples/my_judges_are_noisy.py --real     # TREC-COVID round 1 from ../shared/data
    python examples/my_judges_are_noisy.py --quick    # fewer replicates, as CI does
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from pyterrier_noise import read_qrels, read_runs
from pyterrier_noise.judges import RandomFlips
from pyterrier_noise.experiments import robustness_experiment
from pyterrier_noise.synthetic import make_collection

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-covid-round1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.real:
        if not DATA.exists():
            raise SystemExit(f"--real needs {DATA}")
        qrels, runs = read_qrels(DATA / "qrels-rnd1.txt"), read_runs(DATA / "runs")
        if args.quick:
            runs = dict(list(runs.items())[:20])
    else:
        c = make_collection(n_topics=15 if args.quick else 30, seed=3)
        qrels, runs = c.qrels, c.runs
    n = 30 if args.quick else 300
    judges = {"TPR 0.93 / FPR 0.07": RandomFlips(tpr=0.93, fpr=0.07),
              "crowd-like (disc 1.9, bias 0.14)": RandomFlips.from_discriminability(1.9, 0.14)}
    rows = []
    for label, model in judges.items():
        res = robustness_experiment(runs, None, qrels, ["RBP(p=0.8)", "AP", "nDCG@10"], model,
                                    n_replicates=n, seed=7, correction="holm")
        s = res.summary.set_index("measure")
        for measure, r in s.iterrows():
            rows.append({"judge": label, "measure": measure, "kendall tau": r["kendall_tau"], "RBO": r["rbo"],
                         "significant pairs": int(r["significant_pairs"]), "kept": r["kept_significant"],
                         "lost": r["lost"], "gained": r["gained"], "reversed": r["reversed"]})
    print(f"{n} replicates per judge model, Holm-corrected paired t-tests at alpha 0.05:")
    print(pd.DataFrame(rows).round(3).to_string(index=False))
    print("\nkendall tau, RBO: agreement of each replicate's system ranking with the unperturbed one (1 = same")
    print("order). significant pairs: count of system pairs significant under the unperturbed qrels. kept, lost,")
    print("reversed: shares of (significant pair, replicate) whose conclusion the replicate keeps, loses, or turns")
    print("into a significant win for the other system; gained: share of (non-significant pair, replicate) that")
    print("became significant.")


if __name__ == "__main__":
    main()
