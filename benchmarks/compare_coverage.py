"""Coverage of ``correction.compare()``'s 95% intervals under both calibration modes.

A simulation study of Goldberg, Trotman, Wang, Min and Wan (2017)'s correction with everything
known: the gold judge's true P@3 of two systems, a bronze judge with a known confusion matrix
(true rates ``m_JR = 43/59``, ``m_JN = 67/84``, the eBay estimates of their Sec 6), a gold sample
of the eBay size (59 gold-relevant and 84 gold-non-relevant pairs) and the eBay numbers of queries
(10,278 and 20,604, three documents each).  Each simulated experiment draws the queries' bronze
labels and the calibration sample, corrects both systems (:func:`correct_summary`, their Eq 14 and
Eq 7) and compares them with :func:`compare` under ``calibration="shared"`` (one calibration for
both, the package's default when the sample is the same) and ``calibration="independent"`` (the
paper's Eq 10/11).  The table is the share of experiments whose 95% interval holds the true value.

Designs:

* ``one sample``: one calibration sample corrects both systems (the eBay design);
* ``one sample, no difference``: the same with equal true P@3 (the interval of the difference is
  then the test of no difference, so 1 - coverage is its size);
* ``own samples``: each system has its own calibration sample from the same judge (the TREC
  design of the paper's Sec 7); only ``independent`` applies there.

All random draws are vectorised (one multinomial per system for the queries' bronze P@3 counts,
one binomial per calibration row) and seeded; the package's estimator is then called once per
experiment, since that call is what is checked.

Usage:  python benchmarks/compare_coverage.py [N_EXPERIMENTS] [SEED]   (defaults 4000, 0)
Writes benchmarks/results/compare_coverage.json.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyterrier_noise.reproduce.coverage import K, N_A, N_B, N_N, N_R, TNR, TPR, ebay, simulate

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "compare_coverage.json"


def main() -> None:
    n_experiments = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    t0 = time.perf_counter()
    result = simulate(n_experiments, seed)
    result.update(date=time.strftime("%Y-%m-%d"), n_experiments=n_experiments, seed=seed,
                  command=f"python benchmarks/compare_coverage.py {n_experiments} {seed}",
                  truth={"tpr": TPR, "tnr": TNR, "n_relevant": N_R, "n_nonrelevant": N_N,
                         "n_queries": [N_A, N_B], "k": K},
                  ebay=ebay(), seconds=round(time.perf_counter() - t0, 1))
    print(f"{n_experiments} simulated experiments per design (seed {seed}), {result['seconds']} s")
    print(f"{'design':28} {'interval':18} {'calibration':12} coverage  (MC se)  mean SE   SD of diff")
    for r in result["rows"]:
        extra = f"  {r['mean_se']:.4f}   {r['sd_of_difference']:.4f}" if "mean_se" in r else ""
        print(f"{r['design']:28} {r['interval']:18} {r['calibration']:12} {r['coverage']:.4f}  "
              f"({r['mc_se']:.4f}){extra}")
    e = result["ebay"]
    print(f"eBay: shared p = {e['shared']['p_value']:.4f}, independent p = {e['independent']['p_value']:.4f} "
          f"(paper prints {e['paper_p_value']}), naive p = {e['naive_p_value']:.4f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
