"""User story: "my qrels are incomplete" -- new systems retrieve documents nobody judged.

Scores from incomplete judgments are lower bounds. RBP says by how much each score could still
rise (its residual), so you can see which comparisons the judgments cannot settle.

    python examples/my_qrels_are_incomplete.py            # synthetic collection (offline)
    python examples/my_qrels_are_incomplete.py --real     # TREC-COVID round 1 from ../shared/data
    python examples/my_qrels_are_incomplete.py --quick    # a smaller run, as CI does
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from pyterrier_noise import evaluate, read_qrels, read_runs
from pyterrier_noise.synthetic import make_collection

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-covid-round1"


def load(real: bool, quick: bool):
    if real:
        if not DATA.exists():
            raise SystemExit(f"--real needs {DATA}")
        meta = pd.read_csv(DATA / "runs-metadata.csv")
        files = sorted((DATA / "runs").iterdir())[: 20 if quick else None]
        pooled = set(meta.loc[meta["contributed_judgments"] == "yes", "run"])
        return read_qrels(DATA / "qrels-rnd1.txt"), read_runs(files), pooled
    c = make_collection(n_topics=10 if quick else 30, seed=1)
    return c.qrels, c.runs, set(c.contributing)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    qrels, runs, pooled = load(args.real, args.quick)

    res = evaluate(runs, qrels, ["RBP(p=0.8)", "nDCG@10"], on_topic_mismatch="ignore")
    rbp = res[res["measure"] == "RBP(p=0.8)"].set_index("name")
    ndcg = res[res["measure"] == "nDCG@10"].set_index("name")["value"]
    table = pd.DataFrame({"pooled": [n in pooled for n in rbp.index], "RBP base": rbp["value"],
                          "RBP residual": rbp["residual"], "nDCG@10": ndcg}).sort_values("RBP base", ascending=False)
    print(table.round(4).to_string())
    print()
    print("mean RBP residual, pooled runs:     %.4f" % table.loc[table["pooled"], "RBP residual"].mean())
    print("mean RBP residual, not pooled runs: %.4f" % table.loc[~table["pooled"], "RBP residual"].mean())
    names = table.index.tolist()
    unsettled = sum(1 for i, a in enumerate(names) for b in names[i + 1:]
                    if table.loc[b, "RBP base"] + table.loc[b, "RBP residual"] >= table.loc[a, "RBP base"])
    print(f"{unsettled} of {len(names) * (len(names) - 1) // 2} pairs are not settled by these judgments "
          "(the lower run's upper bound reaches the higher run's base).")


if __name__ == "__main__":
    main()
