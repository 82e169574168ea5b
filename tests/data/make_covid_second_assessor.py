"""tests/data/covid-rnd1-second-assessor.qrels: a second assessor's partial re-judging of TREC-COVID
round 1, made with numpy alone (not with the package's judge models): per topic, 20 documents drawn
from NIST's judgments (the NIST grade kept with probability 0.8, else another grade drawn uniformly)
and up to 5 documents NIST never judged among the top 40 of run BBGhelani1 (relevant with probability
0.3).  Run from the repository root: python tests/data/make_covid_second_assessor.py [DATA_DIR]."""
import gzip
import sys
import numpy as np
import pandas as pd
DATA = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/trec-covid-round1"
rng = np.random.default_rng(2026)
q = pd.read_csv(DATA + "/qrels-rnd1.txt", sep=r"\s+", header=None,
                names=["qid", "it", "docno", "label"], dtype={"qid": str, "docno": str})
with gzip.open(DATA + "/runs/BBGhelani1.gz", "rt") as f:
    run = pd.read_csv(f, sep=r"\s+", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"],
                      dtype={"qid": str, "docno": str})
rows = []
for qid in sorted(q["qid"].unique(), key=int):
    judged = q[q["qid"] == qid]
    pick = judged.iloc[rng.choice(len(judged), 20, replace=False)]
    for _, r in pick.iterrows():
        g = int(r["label"])
        if rng.random() >= 0.8:
            g = int(rng.choice([x for x in (0, 1, 2) if x != g]))
        rows.append((qid, r["docno"], g))
    top = run[run["qid"] == qid].sort_values("rank").head(40)
    new = [d for d in top["docno"] if d not in set(judged["docno"])][:5]
    rows += [(qid, d, int(rng.random() < 0.3)) for d in new]
with open("tests/data/covid-rnd1-second-assessor.qrels", "w") as f:
    for qid, d, g in rows:
        f.write(f"{qid} 0 {d} {g}\n")
print(len(rows))
