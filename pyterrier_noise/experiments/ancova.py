"""Analysis of covariance of scores over pool depth, topic and system (Yang 2019, Sec. 4.9, Table 4.9).

The thesis fits ``M ~ d + topic + sys`` (and ``M ~ d * topic * sys``) with R's ``car::Anova(...,
type="III")``, ``d`` the pool depth as a numeric covariate, ``topic`` and ``sys`` factors, over the
deeply judged runs and the depths 5, 10, ..., 50: every effect is significant for AP, nDCG and RBP,
and depth is not for RR (p = 0.860 on TREC 7, 0.875 on TREC 13).  Here the same model is fitted by
statsmodels' OLS with sum-to-zero contrasts, so its type III table is R's.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice
from .depth import DepthExperiment

__all__ = ["depth_ancova"]


def depth_ancova(experiment: DepthExperiment, measures: Sequence[str] | None = None, *,
                 interactions: bool = False, typ: int = 3) -> pd.DataFrame:
    """ANCOVA of per-topic scores on pool depth, topic and system (Yang 2019, Table 4.9).

    The data are the scores of every run and topic at every depth of a :func:`depth_experiment`,
    with the reference version at its own depth when it has one (``reference_depth``; the full
    qrels have no depth and are left out).  The model is ``score ~ d + C(topic) + C(sys)``, or
    with ``interactions=True`` the thesis's second model ``score ~ d * C(topic) * C(sys)`` (large:
    one column per topic x system pair), fitted by ordinary least squares (statsmodels) with
    sum-to-zero contrasts, and summarised by a type III (or ``typ=2``) ANOVA table.

    Args:
        experiment: a :class:`DepthExperiment` (use ``reference_depth=50`` and depths 5-45 for the
            thesis's design).
        measures: measures to analyse (default: all of the experiment's).
        interactions: fit the full factorial model.
        typ: 3 (the thesis's) or 2.

    Returns:
        Frame ``measure, term, sum_sq, df, F, p_value`` (one row per term and the residual).
    """
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    if not isinstance(experiment, DepthExperiment):
        raise InputError(f"experiment must be a DepthExperiment (from depth_experiment), got {type(experiment).__name__}")
    typ = check_choice("typ", typ, (2, 3))
    depths = list(experiment.depths)
    n_versions = len(depths)
    if experiment.reference_depth is not None:
        depths.append(int(experiment.reference_depth))
        n_versions += 1
    if len(set(depths)) < 2:
        raise InputError("the ANCOVA needs scores at two or more pool depths")
    names = list(experiment.measures) if measures is None else [str(m) for m in measures]
    rows = []
    S, T = len(experiment.run_names), len(experiment.topics)
    for m in names:
        if m not in experiment.scores:
            raise InputError(f"measure {m!r} is not in this experiment ({experiment.measures})")
        s = experiment.scores[m][:, :, :n_versions]                       # (S, T, V)
        data = pd.DataFrame({
            "score": s.ravel(),
            "sys": np.repeat(np.arange(S), T * n_versions).astype(str),
            "topic": np.tile(np.repeat(np.arange(T), n_versions), S).astype(str),
            "d": np.tile(np.asarray(depths, dtype=float), S * T)})
        rhs = "d * C(topic, Sum) * C(sys, Sum)" if interactions else "d + C(topic, Sum) + C(sys, Sum)"
        fit = smf.ols(f"score ~ {rhs}", data=data).fit()
        table = anova_lm(fit, typ=typ)
        for term, r in table.iterrows():
            name = str(term).replace("C(topic, Sum)", "topic").replace("C(sys, Sum)", "sys")
            if name == "Intercept":
                continue
            rows.append({"measure": m, "term": name, "sum_sq": float(r["sum_sq"]), "df": float(r["df"]),
                         "F": float(r["F"]) if "F" in r and pd.notna(r["F"]) else np.nan,
                         "p_value": float(r["PR(>F)"]) if pd.notna(r.get("PR(>F)")) else np.nan})
    return pd.DataFrame(rows)
