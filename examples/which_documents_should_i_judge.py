"""User story: "which documents should I judge" -- spend a judging budget where it separates systems.

Replays depth pooling and Moffat, Webber & Zobel's Methods A, B and C against existing qrels and
reports, at each checkpoint, relevant documents found, the mean RBP residual of the best third of
the systems and the share of their pairs whose RBP ranges no longer overlap.

    python examples/which_documents_should_i_judge.py            # synthetic collection (offline)
    python examples/which_documents_should_i_judge.py --real     # TREC-COVID round 1 from ../shared/data
    python examples/which_documents_should_i_judge.py --quick    # a smaller run, as CI does
"""
from __future__ import annotations

import argparse
from pathlib import Path

from pyterrier_noise import read_qrels, read_runs
from pyterrier_noise.report.sections import selection_conclusion
from pyterrier_noise.selection import compare_methods
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
        qrels = read_qrels(DATA / "qrels-rnd1.txt")
        runs = read_runs(sorted((DATA / "runs").iterdir())[: 30 if args.quick else None])
        checkpoints = [1000, 2000, 4000] if not args.quick else [500, 1000]
    else:
        c = make_collection(n_topics=10 if args.quick else 30, seed=4)
        qrels, runs = c.qrels, c.runs
        checkpoints = [len(qrels) // 4, len(qrels) // 2]
    summary, _ = compare_methods(runs, qrels, methods=("pool", "A", "B", "C"), checkpoints=checkpoints,
                                 p_select=0.8, p_eval=[0.8])
    cols = [c for c in ("method", "judgments", "relevant", "top_residual", "separated", "sig_base_upper")
            if c in summary.columns]
    print(summary[cols].round(4).to_string(index=False))
    print("\njudgments, relevant: counts; top_residual: mean RBP residual of the best third of the systems;")
    print("separated: share of their pairs whose RBP ranges no longer overlap; sig_base_upper: share where one's")
    print("base is significantly above the other's upper bound (one-sided Wilcoxon test, alpha 0.05).")
    print()
    print(selection_conclusion(summary))
    last = summary[summary["judgments"] == summary["judgments"].max()].set_index("method")
    leader = last["top_residual"].idxmin()
    if leader != "C":
        print(f"Moffat, Webber & Zobel (2007) found Method C best at reducing the top systems' residual; here "
              f"{'depth pooling' if leader == 'pool' else 'Method ' + leader} leads on these data at "
              f"{int(last['judgments'].max()):,} judgments (see the table for how close the methods are).")
    else:
        print("As Moffat, Webber & Zobel (2007) found, Method C leaves the least uncertainty in the top systems.")

if __name__ == "__main__":
    main()
