"""Correcting binary metrics known only by per-query values or summary statistics.

Goldberg et al. 2017, Eq 5/14 for the value and Eq 7 for the standard error, applied to
per-query values of a binary-gain linear metric (e.g. ``pt.Experiment(perquery=True)`` output)
or to the mean, SD and number of topics a paper reports (the paper's eBay and TREC examples).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_int, check_positive, check_probability
from .._vocab import SEMethod
from ._common import SeedLike, _check_ddof, _n_replicates, _warn, _z
from .calibration import JudgeCalibration, calibration_arg
from .estimates import CorrectedEstimate, calibration_terms, finish_estimate, gold_mass, corrected_weights

__all__ = ["correct_per_query", "correct_summary", "correct_experiment"]


def _mass_total(mass: Any) -> float:
    return check_positive("mass", mass, "a positive number (sum of the rank weights)")


def correct_per_query(values: Any, calibration: JudgeCalibration, *, mass: float = 1.0, measure: str = "metric",
                      se: SEMethod = "delta", n_replicates: int = 10_000, seed: SeedLike = 0,
                      ddof: int = 1, alpha: float = 0.05) -> CorrectedEstimate:
    """Correct per-query values of a binary-gain linear metric (Goldberg et al. 2017, Eq 14, Eq 7).

    ``values[q] = sum_s d_s [bronze relevant]`` with every one of the metric's ranks filled by a
    judged document (unjudged ones counted as bronze non-relevant), and ``mass = sum_s d_s``:
    1 for P@k, ``1 - p**k`` for RBP@k, ``sum 1/log2(s+1)`` for DCG@k.  Then each topic's label
    mass is ``(mass - value, value)``.  ``values`` is an array or a Series indexed by qid (e.g.
    one system's rows of ``pt.Experiment(..., perquery=True)``).  Binary calibrations only.
    """
    n_replicates = _n_replicates(n_replicates)
    calibration = calibration_arg(calibration)
    calibration.require_binary("correct_per_query")
    s = _mass_total(mass)
    if isinstance(values, pd.Series):
        qids = pd.Index(values.index.astype(str), name="qid")
        x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    else:
        x = np.asarray(values, dtype=np.float64)
        qids = pd.Index([str(i) for i in range(x.size)], name="qid")
    if x.ndim != 1 or x.size == 0:
        raise InputError(f"values must be a non-empty 1-d array of per-query scores, got shape {x.shape}")
    bad = ~np.isfinite(x) | (x < -1e-12) | (x > s + 1e-12)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"values row {i} (qid {qids[i]!r}): expected a number in [0, mass={s:g}], got "
                         f"{x[i]!r} ({int(bad.sum())} such value(s)); set mass to the metric's maximum")
    x = np.clip(x, 0.0, s)
    m = np.stack([s - x, x], axis=1)
    return finish_estimate(measure, calibration, np.array([0.0, 1.0]), m, qids, se=se, n_replicates=n_replicates,
                   seed=seed, ddof=ddof, alpha=alpha)


def correct_summary(mean: float, sd: float, n: int, calibration: JudgeCalibration, *, mass: float = 1.0,
                    measure: str = "metric", se: SEMethod = "delta",
                    n_replicates: int = 10_000, seed: SeedLike = 0, alpha: float = 0.05) -> CorrectedEstimate:
    """Correct a binary metric known only by its mean, SD over topics and number of topics.

    Goldberg et al. 2017, Eq 5/14 for the value and Eq 7 with ``V[J] = sd^2 / n`` (Sec 3.5) for the
    SE; this is how the paper's eBay and TREC examples are reported.  The bootstrap draws the
    topic mean from ``Normal(mean, sd^2 / n)`` (notes A11) and redraws the calibration.
    """
    n_replicates = _n_replicates(n_replicates)
    calibration = calibration_arg(calibration)
    calibration.require_binary("correct_summary")
    s = _mass_total(mass)
    n = check_int("n", n, 2)
    try:
        mean, sd = float(mean), float(sd)
    except (TypeError, ValueError):
        raise InputError(f"mean and sd must be numbers, got {mean!r}, {sd!r}") from None
    if not (np.isfinite(mean) and 0.0 <= mean <= s):
        raise InputError(f"mean must be in [0, mass={s:g}], got {mean!r}")
    if not (np.isfinite(sd) and sd >= 0):
        raise InputError(f"sd must be a non-negative number, got {sd!r}")
    return finish_estimate(measure, calibration, np.array([0.0, 1.0]), None, None, mass_mean=np.array([s - mean, mean]),
                   naive_mean=mean, naive_sd=sd, n=n, se=se, n_replicates=n_replicates, seed=seed, ddof=1,
                   alpha=alpha)


_P_RE = re.compile(r"^P(?:\(rel=(\d+)\))?@(\d+)$")
_RBP_RE = re.compile(r"^RBP(?:\((.*)\))?@(\d+)$")


def _infer_mass(measure: str) -> float:
    m = _P_RE.match(measure)
    if m:
        return 1.0
    m = _RBP_RE.match(measure)
    if m:
        params = dict(kv.split("=", 1) for kv in (m.group(1) or "").split(",") if "=" in kv)
        p = float(params.get("p", 0.8))
        return 1.0 - p ** int(m.group(2))
    raise InputError(f"column 'measure': cannot correct {measure!r} from per-query values; only metrics linear in "
                     f"binary gains with a fixed cutoff are inferred (P@k, RBP(p=..)@k).  Pass mass={{measure: sum of "
                     f"rank weights}} for others (DCG@k: sum of 1/log2(s+1)); nDCG, AP and RR are not linear and "
                     f"cannot be corrected this way")


def correct_experiment(perquery: pd.DataFrame, calibration: JudgeCalibration | Mapping[str, JudgeCalibration], *,
                       mass: float | Mapping[str, float] | None = None, ddof: int = 1, alpha: float = 0.05,
                       per_query_values: bool = False) -> pd.DataFrame:
    """Correct ``pt.Experiment(..., perquery=True)`` output of binary-gain metrics (Eq 14, Eq 7).

    Args:
        perquery: long frame ``name, qid, measure, value`` (``name`` optional for one system).
            Each ranking must fill the cutoff with judged documents (unjudged ones count as bronze
            non-relevant), and the qrels labels must be 0/1.
        calibration: one calibration shared by every system, or ``{name: calibration}`` (per-run
            calibration, as in the paper's TREC example).
        mass: sum of rank weights per measure (inferred for ``P@k`` and ``RBP(p=..)@k``).
        per_query_values: return the input rows with a ``corrected`` column instead of the summary.

    Returns one row per (name, measure): ``n_queries, naive, naive_se, corrected, se, ci_low,
    ci_high, D`` (delta-method SE; use :func:`correct_per_query` for a bootstrap and
    :func:`compare` for tests).
    """
    if not isinstance(perquery, pd.DataFrame):
        raise InputError(f"perquery must be the frame pt.Experiment(..., perquery=True) returns, got "
                         f"{type(perquery).__name__}")
    missing = [c for c in ("qid", "measure", "value") if c not in perquery.columns]
    if missing:
        raise InputError(f"perquery frame is missing column(s) {missing}; expected name, qid, measure, value "
                         f"(found {list(perquery.columns)})")
    ddof = _check_ddof(ddof)
    alpha = check_probability("alpha", alpha)
    df = perquery.copy()
    if "name" not in df.columns:
        df["name"] = "system"
    df["name"] = df["name"].astype(str)
    df["measure"] = df["measure"].astype(str)
    values = pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=np.float64)
    measures = pd.unique(df["measure"])
    if isinstance(mass, Mapping):
        totals = {m: (_mass_total(mass[m]) if m in mass else _infer_mass(m)) for m in measures}
    elif mass is not None:
        totals = {m: _mass_total(mass) for m in measures}
    else:
        totals = {m: _infer_mass(m) for m in measures}
    names = pd.unique(df["name"])
    if isinstance(calibration, Mapping):
        missing_names = [n for n in names if n not in calibration]
        if missing_names:
            raise InputError(f"calibration has no entry for system(s) {missing_names}; pass one calibration or a "
                             f"mapping with every name in column 'name'")
        cals = {n: calibration_arg(calibration[n]) for n in names}
    else:
        cal = calibration_arg(calibration)
        cals = {n: cal for n in names}
    for n, c in cals.items():
        c.require_binary(f"correct_experiment (system {n!r})")
    s_row = df["measure"].map(totals).to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values < -1e-12) | (values > s_row + 1e-12)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"perquery column 'value', row {i} (name={df['name'].iloc[i]!r}, qid={df['qid'].iloc[i]!r}, "
                         f"measure={df['measure'].iloc[i]!r}): expected a number in [0, {s_row[i]:g}], got "
                         f"{df['value'].iloc[i]!r}")
    df["value"] = values
    # per-system constants (few systems): tnr, D for the affine per-query map and the delta terms
    tnr = df["name"].map({n: c.tnr for n, c in cals.items()}).to_numpy()
    dd = df["name"].map({n: c.D for n, c in cals.items()}).to_numpy()
    if per_query_values:
        for c in {id(c): c for c in cals.values()}.values():
            c.check_usable()
        out = perquery.copy()
        out["corrected"] = (values - s_row * (1.0 - tnr)) / dd     # Eq 14 per topic: (M - S (1 - m_JN)) / D
        return out
    g = df.groupby(["name", "measure"], sort=False)["value"]
    agg = pd.DataFrame({"n_queries": g.size(), "naive": g.mean(), "sd": g.std(ddof=ddof)}).reset_index()
    if (agg["n_queries"] <= ddof).any():
        row = agg[agg["n_queries"] <= ddof].iloc[0]
        raise InputError(f"system {row['name']!r}, measure {row['measure']!r}: need more than {ddof} topic(s)")
    S = agg["measure"].map(totals).to_numpy(dtype=np.float64)
    J = np.stack([cals[n].J for n in agg["name"]])
    n_gold = np.stack([cals[n].n_gold.to_numpy(np.float64) for n in agg["name"]])
    m = agg["naive"].to_numpy()
    n = agg["n_queries"].to_numpy(dtype=np.float64)
    mass_mean = np.stack([S - m, m], axis=1)
    w = corrected_weights(J, np.array([0.0, 1.0]))
    mu = gold_mass(J, mass_mean)
    calib = calibration_terms(J, n_gold, mu[:, :, None] * w[:, None, :]).sum(axis=1)
    query_var = (w[:, 1] - w[:, 0]) ** 2 * agg["sd"].to_numpy() ** 2 / n
    corrected = (mass_mean * w).sum(axis=1)
    se = np.sqrt(query_var + calib)
    z = _z(alpha)
    agg["naive_se"] = agg["sd"] / np.sqrt(n)
    agg["corrected"] = corrected
    agg["se"] = se
    agg["ci_low"] = corrected - z * se
    agg["ci_high"] = corrected + z * se
    agg["D"] = [cals[x].D for x in agg["name"]]
    for c in {id(c): c for c in cals.values()}.values():
        c.check_usable()
    out_of_range = (corrected < -1e-12) | (corrected > S + 1e-12)
    if out_of_range.any():
        r = agg[out_of_range].iloc[0]
        _warn(f"{int(out_of_range.sum())} corrected value(s) lie outside the metric's range, e.g. system "
              f"{r['name']!r} {r['measure']} = {r['corrected']:.4f}: the calibration does not fit these judgments")
    return agg[["name", "measure", "n_queries", "naive", "naive_se", "corrected", "se", "ci_low", "ci_high", "D"]]


