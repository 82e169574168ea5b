"""Agreement of crowd qrels with other qrels: pyterrier_noise.crowd.agreement (Yang 2019 Sec. 5.3.4-5.3.6)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pyterrier_noise as pn
from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.crowd import (
    aggregate,
    document_agreement,
    document_tau,
    judgment_alpha,
    simulate_crowd,
    system_agreement,
)


def test_judgment_alpha_thesis_table_2_12():
    # three raters' scores of four documents (Table 2.12); pairwise L/R/T units: 0.353, ties missing: 0.5
    raters = [(0.5, 0.1, 0.7, 0.5), (0.4, 0.2, 0.5, 0.7), (0.9, 0.5, 0.9, 0.7)]
    qs = [pd.DataFrame({"qid": "1", "docno": ["a", "b", "c", "d"], "label": r}) for r in raters]
    assert round(judgment_alpha(qs), 3) == 0.353
    assert judgment_alpha(qs, tie="missing") == pytest.approx(0.5)
    # a second topic is just more units: same as building them by hand with agreement's helper
    from pyterrier_noise.stats import krippendorff_alpha, pairwise_preference_units
    qs2 = [pd.concat([q, q.assign(qid="2", label=q.label[::-1].to_numpy())]) for q in qs]
    units = pd.concat([pairwise_preference_units(np.array(raters).T).units,
                       pairwise_preference_units(np.array(raters)[:, ::-1].T).units])
    assert judgment_alpha(qs2) == pytest.approx(krippendorff_alpha(units))
    with pytest.raises(InputError, match="at least two"):
        judgment_alpha(qs[:1])


def test_document_tau_and_agreement_against_scipy():
    rng = np.random.default_rng(6)
    a = pd.DataFrame({"qid": np.repeat(["1", "2"], 12), "docno": [f"d{k}" for k in range(24)],
                      "label": rng.integers(0, 3, 24)})
    b = a.assign(label=a.label + rng.integers(0, 2, 24)).iloc[1:]          # one document only in a
    t = document_tau(a, b).set_index("qid")
    for q in ("1", "2"):
        m = a[a.qid == q].merge(b, on=["qid", "docno"])
        assert t.loc[q, "tau"] == pytest.approx(stats.kendalltau(m.label_x, m.label_y).statistic)
        assert t.loc[q, "docs"] == len(m)
    assert t.loc["all", "tau"] == pytest.approx(t.loc[["1", "2"], "tau"].mean())
    d = document_agreement(a, b).set_index("qid")
    m = a.merge(b, on=["qid", "docno"])
    sa, sb, n = 0, 0, 0
    for q, g in m.groupby("qid"):
        i, k = np.triu_indices(len(g), 1)
        x = np.sign(g.label_x.to_numpy()[i] - g.label_x.to_numpy()[k])
        y = np.sign(g.label_y.to_numpy()[i] - g.label_y.to_numpy()[k])
        sa, sb, n = sa + np.sum(x * y > 0), sb + np.sum(x * y < 0), n + len(i)
    assert d.loc["all", "pairs"] == n
    assert (d.loc["all", "agree"], d.loc["all", "disagree"]) == (pytest.approx(sa / n), pytest.approx(sb / n))
    same = document_agreement(a, a).set_index("qid").loc["all"]
    assert same.disagree == 0 and same.agree == pytest.approx(same.separated)


def test_system_agreement_uses_the_engine(coll):
    runs = {k: coll.runs[k] for k in list(coll.runs)[:8]}
    ten = coll.qrels[coll.qrels.qid.astype(int) <= 10]
    crowd_q = aggregate(simulate_crowd(ten, seed=2), "ratio")
    def everything_relevant():        # ratio magnitudes are all > 0
        return pytest.warns(pn.NoiseWarning, match="judged labels is relevant")
    with everything_relevant():
        res = system_agreement(runs, crowd_q, ten, measure="RBP(p=0.9,max_rel=1)")
    with everything_relevant():    # the runs' other 20 topics are left out, as system_agreement leaves them
        ea = pn.evaluate(runs, crowd_q, ["RBP(p=0.9,max_rel=1)"], on_topic_mismatch="ignore").set_index("name").value
    eb = pn.evaluate(runs, ten, ["RBP(p=0.9,max_rel=1)"], on_topic_mismatch="ignore").set_index("name").value
    np.testing.assert_allclose(res.scores.a, ea.to_numpy())
    np.testing.assert_allclose(res.scores.b, eb.to_numpy())
    assert res.tau == pytest.approx(stats.kendalltau(ea, eb).statistic)
    assert res.agree + res.disagree + res.tied == pytest.approx(1.0)
    assert res.agree == pytest.approx((1 + res.tau) / 2)                  # no ties among 8 systems
    with pytest.warns(CoercionWarning, match="20 topic"):
        same = system_agreement(runs, coll.qrels, ten, measure="AP")
    assert same.tau == pytest.approx(1.0) and same.disagree == 0
