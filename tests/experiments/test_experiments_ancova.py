"""ANCOVA of scores over pool depth (Yang 2019, Table 4.9), first-unjudged depths (Sec. 4.10) and
judgment-set overlap (Moffat, Webber and Zobel 2007, Table 3).

References: the type III F test of each term of the additive model computed by brute force as the
drop-one comparison of two least-squares fits (numpy) with scipy's F distribution; unjudged ranks
and overlaps by loops over documents."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pyterrier_noise import AlignedRuns
from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.experiments import (depth_ancova, depth_experiment, depth_labels, judgment_overlap,
                                       unjudged_depth)
from pyterrier_noise.selection import rbp_pool


pytestmark = pytest.mark.collection(n_topics=8, n_systems=8, n_docs_per_topic=150, depth=40, pool_depth=10, seed=2)


@pytest.fixture(scope="module")
def experiment(coll):
    with pytest.warns(CoercionWarning, match="4 of 8 runs are not judged to depth 10 on every topic"):
        return depth_experiment(coll.runs, coll.qrels, depths=(2, 4, 6, 8), reference_depth=10,
                                measures=("AP", "RR"))


def _rss(X, y):
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    return float(((y - X @ beta) ** 2).sum()), np.linalg.matrix_rank(X)


def test_additive_ancova_equals_drop_one_least_squares(experiment):
    table = depth_ancova(experiment).set_index(["measure", "term"])
    S, T = len(experiment.run_names), len(experiment.topics)
    depths = list(experiment.depths) + [10]
    for m in ("AP", "RR"):
        y = experiment.scores[m][:, :, :len(depths)].ravel()
        sys = np.repeat(np.arange(S), T * len(depths))
        top = np.tile(np.repeat(np.arange(T), len(depths)), S)
        d = np.tile(np.asarray(depths, float), S * T)
        blocks = {"d": d[:, None], "topic": (top[:, None] == np.arange(1, T)).astype(float),
                  "sys": (sys[:, None] == np.arange(1, S)).astype(float)}
        full = np.column_stack([np.ones_like(y)] + list(blocks.values()))
        rss_full, rank_full = _rss(full, y)
        df_res = len(y) - rank_full
        for term, block in blocks.items():
            reduced = np.column_stack([np.ones_like(y)] + [b for t, b in blocks.items() if t != term])
            rss_red, _ = _rss(reduced, y)
            df = block.shape[1]
            F = (rss_red - rss_full) / df / (rss_full / df_res)
            row = table.loc[(m, term)]
            assert row["df"] == df
            assert row["sum_sq"] == pytest.approx(rss_red - rss_full, rel=1e-8)
            assert row["F"] == pytest.approx(F, rel=1e-8)
            assert row["p_value"] == pytest.approx(stats.f.sf(F, df, df_res), rel=1e-6, abs=1e-300)
        assert table.loc[(m, "Residual"), "df"] == df_res


def test_ancova_rejects_bad_input(experiment):
    with pytest.raises(InputError, match="not in this experiment"):
        depth_ancova(experiment, ["nDCG"])
    with pytest.raises(InputError, match="DepthExperiment"):
        depth_ancova("nope")


def test_unjudged_depth_brute_force(coll):
    aligned = AlignedRuns.build(coll.runs, coll.qrels)
    L = depth_labels(aligned, [2, 6])
    rep = unjudged_depth(aligned, L, k=5, versions=["k=2", "k=6"]).set_index(["name", "qid", "version"])
    frame = aligned.table.frame
    for col, v in enumerate(["k=2", "k=6"]):
        judged = {(q, d) for q, d, lab in zip(frame["qid"], frame["docno"], L[:, col]) if not np.isnan(lab)}
        for name in list(coll.runs)[:3]:
            r = coll.runs[name].sort_values(["qid", "score", "docno"], ascending=[True, False, False])
            for q, g in r.groupby("qid"):
                if q not in aligned.topics:
                    continue
                flags = [(q, d) not in judged for d in g["docno"]]
                first = next((i + 1 for i, f in enumerate(flags) if f), np.nan)
                row = rep.loc[(name, q, v)]
                assert (np.isnan(first) and np.isnan(row["first_unjudged"])) or row["first_unjudged"] == first
                assert row["unjudged_at_k"] == sum(flags[:5])
                assert row["share_unjudged_at_k"] == pytest.approx(sum(flags[:5]) / min(5, len(flags)))


def test_judgment_overlap_brute_force(coll):
    sel = {p: rbp_pool(coll.runs, 300, p=p, method="A") for p in (0.5, 0.8, 0.95)}
    table = judgment_overlap(sel)
    sets = {p: set(zip(f["qid"].astype(str), f["docno"].astype(str))) for p, f in sel.items()}
    for a in sel:
        for b in sel:
            assert table.loc[a, b] == len(sets[a] & sets[b])
    assert (np.diag(judgment_overlap(sel, share=True)) == 1.0).all()
    with pytest.raises(InputError, match="qid and docno"):
        judgment_overlap({"x": pd.DataFrame({"a": [1]})})
