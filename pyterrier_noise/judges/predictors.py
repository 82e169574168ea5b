"""Which metarank predicts disagreement best: Webber, Chandar and Carterette (2012), Sec. 3.2.3 and Table 3.

Each predictor (:data:`~pyterrier_noise.judges.metaap.PREDICTORS`) gets the same per-topic logistic
models (Eq. 1) on the same dual assessments; their goodness of fit is the unweighted residual sum of
squares of Eq. 2, ``S = sum_i (y_i - pi_i)^2``, and two predictors are compared by the mean of the
per-model differences ``S(first) - S(second)`` with a paired t-test over the models.
"""
from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_probability
from .._vocab import PREDICTOR_IMPROPER, PredictorImproper, RunOrder
from .._warnings import PerturbationWarning
from ..stats import paired_test
from .disagreement import MetarankLogisticModel
from .metaap import META_AP_DEPTH, PREDICTORS

__all__ = ["compare_predictors"]


def compare_predictors(original: Any, alternative: Any, runs: Any,
                       predictors: Sequence[str] = ("meta_ap", "mean_inverse_rank", "max_inverse_rank"), *,
                       improper: PredictorImproper = "exclude", alpha: float = 0.05, depth: int = META_AP_DEPTH,
                       ties: RunOrder = "trec_eval", rel: float = 1) -> pd.DataFrame:
    """Goodness of fit of metarank predictors, pairwise (Webber, Chandar and Carterette 2012, Eq. 2, Table 3).

    For every predictor, per-topic logistic models of the alternative assessor's label given the
    original one (:class:`MetarankLogisticModel`, Eq. 1) are fitted; each model's fit is Eq. 2's
    ``S = sum_i (y_i - pi_i)^2`` (in-sample, as in the paper).  For every pair of predictors and
    original class, the table holds the mean of ``S(first) - S(second)`` over the models (negative:
    the first fits better) and a two-sided paired t-test of it.

    Args:
        original: the original assessor's qrels.
        alternative: the alternative assessor's qrels, or ``{name: qrels}`` for several
            alternative assessors, whose models are pooled (the paper's 48 topics x 2 assessors).
        runs: the runs the metaranks are computed from.
        predictors: two or more of ``"meta_ap"``, ``"mean_inverse_rank"``, ``"max_inverse_rank"``.
        improper: models without a finite MLE under some predictor (the paper does not say how it
            treated them): ``"exclude"`` (default) leaves the (topic, class) out of every comparison;
            ``"step"`` keeps it with the 0/1 step fit (whose ``S`` is 0 under complete separation).
        alpha: significance level of the paired t-test.
        depth, ties, rel: as in :class:`MetarankLogisticModel`.

    Returns:
        Frame ``first, second, condition ("p(.|1)" / "p(.|0)"), n_models, mean_diff, statistic,
        p_value, significant``.
    """
    improper = check_choice("improper", improper, PREDICTOR_IMPROPER)
    alpha = check_probability("alpha", alpha)
    preds = [check_choice("predictors", p, tuple(PREDICTORS)) for p in predictors]
    if len(preds) < 2 or len(set(preds)) != len(preds):
        raise InputError(f"predictors must be two or more distinct names of {list(PREDICTORS)}, got {list(predictors)}")
    alts = dict(alternative) if isinstance(alternative, Mapping) else {"alternative": alternative}
    if not alts:
        raise InputError("alternative is empty: give the alternative assessor's qrels")
    fits: dict[str, pd.DataFrame] = {}
    for pred in preds:
        parts = []
        for name, alt in alts.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PerturbationWarning)   # improper fits are handled below
                model = MetarankLogisticModel(runs, scope="per_topic", improper="step", depth=depth, ties=ties,
                                              rel=rel, predictor=pred).fit(original, alt)
            c = model.coefficients_
            parts.append(c[c["status"] != "no_data"].assign(assessor=str(name)))
        fits[pred] = pd.concat(parts, ignore_index=True).set_index(["assessor", "qid", "original"])
    keys = fits[preds[0]].index
    for pred in preds[1:]:
        keys = keys.intersection(fits[pred].index)
    if improper == "exclude":
        ok = np.ones(len(keys), dtype=bool)
        for pred in preds:
            ok &= (fits[pred].loc[keys, "status"] != "improper").to_numpy()
        keys = keys[ok]
    rows = []
    for first, second in itertools.combinations(preds, 2):
        for cond, label in ((1, "p(.|1)"), (0, "p(.|0)")):
            k = keys[keys.get_level_values("original") == cond]
            d = fits[first].loc[k, "rss"].to_numpy() - fits[second].loc[k, "rss"].to_numpy()
            if len(d) >= 2 and np.ptp(d) > 0:
                p = float(paired_test(fits[first].loc[k, "rss"].to_numpy(), fits[second].loc[k, "rss"].to_numpy()))
                stat = float(d.mean() / (d.std(ddof=1) / np.sqrt(len(d))))
            else:
                stat, p = float("nan"), float("nan")
            rows.append({"first": first, "second": second, "condition": label, "n_models": int(len(d)),
                         "mean_diff": float(d.mean()) if len(d) else float("nan"), "statistic": stat,
                         "p_value": p, "significant": bool(p < alpha)})
    return pd.DataFrame(rows)
