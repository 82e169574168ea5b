"""Small random collections built in code, for the tests that need runs and qrels of a given shape
(imported by name: ``from collection_helpers import random_collection``)."""
from __future__ import annotations


def random_collection(seed: int, n_runs: int = 3, n_topics: int = 4, n_docs: int = 30, depth: int = 15,
                      judged_frac: float = 0.6, tie_decimals: int | None = None, grades: int = 3):
    """Small random runs and qrels: {name: frame}, qrels frame (some retrieved documents unjudged)."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        rows = []
        for t in range(n_topics):
            docs = rng.choice(n_docs, size=depth, replace=False)
            scores = rng.normal(size=depth)
            if tie_decimals is not None:
                scores = np.round(scores, tie_decimals)
            rows.append(pd.DataFrame({"qid": str(t + 1), "docno": [f"d{d}" for d in docs], "score": scores}))
        run = pd.concat(rows, ignore_index=True)
        run["rank"] = run.groupby("qid")["score"].rank(method="first", ascending=False).astype(int) - 1
        runs[f"run{r}"] = run
    q = []
    for t in range(n_topics):
        docs = np.flatnonzero(rng.random(n_docs) < judged_frac)
        q.append(pd.DataFrame({"qid": str(t + 1), "docno": [f"d{d}" for d in docs],
                               "label": rng.integers(0, grades, size=len(docs)).astype(float)}))
    return runs, pd.concat(q, ignore_index=True)
