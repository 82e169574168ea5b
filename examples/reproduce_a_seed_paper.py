"""User story: "reproduce a seed paper" -- the worked numbers of the five source papers, recomputed.

* Moffat, Webber & Zobel (2007): the RBP worked example, base 0.380 and residual 0.160 at p = 0.8.
* Goldberg et al. (2017): corrected P@3 of the eBay example, 0.8047 and 0.8284.
* Yang (2019), Ch. 2-3: Kendall tau 0.4 and RBO_ext 0.9317 (corrected values), Krippendorff's
  alpha 0.298 (Table 2.10), and the worst-case banding bounds of Table 3.3.

    python examples/reproduce_a_seed_paper.py [--quick]
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from pyterrier_noise import AlignedRuns, MeasureSpec
from pyterrier_noise.stats import kendall_tau, krippendorff_alpha, rbo
from pyterrier_noise.correction import JudgeCalibration, correct_summary
from pyterrier_noise.ties import worst_case_table


def rbp_worked_example() -> None:
    labels = [0, 1, 1, 0, 0, 1, None, 0, 0, 1]        # rank 7 unjudged
    docs = [f"d{i}" for i in range(10)]
    run = pd.DataFrame({"qid": "1", "docno": docs, "score": np.arange(10, 0, -1.0)})
    qrels = pd.DataFrame([("1", d, float(l)) for d, l in zip(docs, labels) if l is not None],
                         columns=["qid", "docno", "label"])
    aligned = AlignedRuns.build({"example": run}, qrels)
    specs = [MeasureSpec("RBP", c, p=0.8) for c in ("value", "residual", "upper", "projected")]
    out = aligned.evaluate(specs)
    print("Moffat, Webber & Zobel 2007, Sec. 2 (paper: 0.380 + 0.160, upper 0.540):")
    print("  base %.4f  residual %.4f  upper %.4f  projected %.4f" % tuple(out[s][0, 0, 0] for s in specs))


def ebay_correction() -> None:
    cal = JudgeCalibration.binary(59, 43, 84, 67)
    a = correct_summary(0.6260, 0.414, 10278, cal, measure="P@3")
    b = correct_summary(0.6385, 0.402, 20604, cal, measure="P@3")
    print("Goldberg et al. 2017, Sec. 6 (paper: 0.8047 (SE 0.0903) and 0.8284 (SE 0.0923)):")
    print(f"  corrected P@3 {a.value:.4f} (SE {a.se:.4f}) and {b.value:.4f} (SE {b.se:.4f})")


def thesis_agreement() -> None:
    m0, m2 = [9.0, 8.0, 7.0, 6.0, 5.0], [9.7, 8.1, 5.5, 6.0, 6.9]
    units = np.array([[1, 1, 2], [0, 0, 0], [2, 1, 2], [1, 2, 1]], dtype=float)   # Table 2.10, N/R/H = 0/1/2
    print("Yang 2019, Ch. 2 (corrected values: tau 0.4, RBO_ext 0.9317; Krippendorff nominal 0.298):")
    print(f"  tau(M0, M2) {kendall_tau(m0, m2, variant='a'):.4f}   RBO_ext(M0, M2, 0.8) {rbo(m0, m2, p=0.8):.4f}   "
          f"alpha {krippendorff_alpha(units, level='nominal'):.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="(everything here is quick already)")
    ap.parse_args()
    rbp_worked_example()
    ebay_correction()
    thesis_agreement()
    print("Yang 2019, Table 3.3 (worst-case score change from banding):")
    print(worst_case_table().round(4).to_string(index=False))


if __name__ == "__main__":
    main()
