"""User story: "reproduce a source paper" -- the papers' worked numbers, then a whole headline experiment.

The worked numbers come from the same functions as ``pyterrier-noise reproduce`` (so they cannot
disagree with docs/reproductions.md):

* Moffat, Webber and Zobel (2007), Sec. 2: the RBP worked example, base 0.380 and residual 0.160 at p = 0.8.
* Goldberg et al. (2017), Sec. 6: corrected P@3 of the eBay example, 0.8047 and 0.8284.
* Yang (2019), Table 3.3: the worst-case banding bounds; Ch. 2: Kendall's tau 0.4 and RBO_ext
  0.9317 (corrected values), Krippendorff's alpha 0.298 (Table 2.10).

Then one paper's headline experiment through the Python entry point ``pyterrier_noise.reproduce.run``
(default goldberg2017, which needs no data; the others read TREC-COVID round 1 from --data, or use
--data synthetic):

    python examples/reproduce_a_seed_paper.py [--quick] [--paper moffat2007] [--data DIR | --data synthetic]
"""
from __future__ import annotations

import argparse

import numpy as np

from pyterrier_noise.reproduce import PAPERS, run
from pyterrier_noise.reproduce.goldberg2017 import ebay_rows
from pyterrier_noise.reproduce.moffat2007 import worked_example_rows
from pyterrier_noise.reproduce.yang2019 import table33_rows
from pyterrier_noise.stats import kendall_tau, krippendorff_alpha, rbo


def show(title: str, rows) -> None:
    print(title)
    for r in rows:
        print(f"  {r.quantity:55s} paper {r.paper_shown:>8s}   ours {r.ours_shown:>8s}   {r.verdict}")


def thesis_agreement() -> None:
    m0, m2 = [9.0, 8.0, 7.0, 6.0, 5.0], [9.7, 8.1, 5.5, 6.0, 6.9]
    units = np.array([[1, 1, 2], [0, 0, 0], [2, 1, 2], [1, 2, 1]], dtype=float)   # Table 2.10, N/R/H = 0/1/2
    print("Yang 2019, Ch. 2 (corrected values: tau 0.4, RBO_ext 0.9317; Krippendorff nominal 0.298):")
    print(f"  tau(M0, M2) {kendall_tau(m0, m2, variant='a'):.4f}   RBO_ext(M0, M2, 0.8) {rbo(m0, m2, p=0.8):.4f}   "
          f"alpha {krippendorff_alpha(units, level='nominal'):.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer replicates and budgets in the headline experiment")
    ap.add_argument("--paper", choices=list(PAPERS), default="goldberg2017", help="the headline experiment to run")
    ap.add_argument("--data", default=None, help="folder holding trec-covid-round1/, or 'synthetic'")
    args = ap.parse_args()
    show("Moffat, Webber and Zobel 2007, Sec. 2:", worked_example_rows())
    show("Goldberg et al. 2017, Sec. 6:", ebay_rows())
    thesis_agreement()
    show("Yang 2019, Table 3.3 (worst-case score change from banding):", table33_rows())
    print()
    print(run(args.paper, data=args.data, quick=args.quick).to_text())


if __name__ == "__main__":
    main()
