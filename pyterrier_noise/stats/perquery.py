"""Pairwise significance from ``pt.Experiment(perquery=True)`` frames, and the per-system
procedures of Yang (2019) Ch. 3.3.4: the non-inferiority (degradation) test of Table 3.4 and the
p-value agreement grid of Fig. 3.8."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, announce
from ._checks import _alpha, _choice, _float_array
from .._vocab import CORRECTIONS, Alternative, Correction, PerqueryMissing, Test
from .multiple import correct_pvalues, significant
from .tests import all_pairs, paired_test

__all__ = ["pairwise_significance", "degradation_test", "pvalue_quadrants"]

_PERQUERY_COLUMNS = ("name", "qid", "measure", "value")


def _perquery_arrays(perquery: pd.DataFrame, measures: list[str], systems: list[str] | None,
                     missing: str) -> tuple[list[str], list[str], np.ndarray]:
    """Pivot a perquery frame to a systems x topics x measures array."""
    sub = perquery[perquery["measure"].astype(str).isin(measures)]
    sub = sub.assign(measure=sub["measure"].astype(str))
    names = list(pd.unique(sub["name"])) if systems is None else list(systems)
    if systems is not None:
        unknown = [s for s in names if s not in set(sub["name"])]
        if unknown:
            raise InputError(f"systems {unknown[:5]} do not appear in column 'name' for "
                             f"measure(s) {measures}")
        sub = sub[sub["name"].isin(names)]
    if len(names) < 2:
        raise InputError(f"column 'name' must hold at least 2 systems for measure(s) {measures}, "
                         f"found {names}")
    values = pd.to_numeric(sub["value"], errors="coerce")
    bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    n_bad = int(bad.sum())
    if n_bad:
        row = bad[bad].index[0]
        if missing == "error":
            raise InputError(f"column 'value', row {row}: {sub.loc[row, 'value']!r} is not a finite "
                             "number (pass missing='drop' to drop such topics)")
        sub = sub[~bad]
        values = values[~bad]
    sub = sub.assign(value=values.astype(float))
    dup = sub.duplicated(["name", "qid", "measure"])
    if dup.any():
        row = dup[dup].index[0]
        raise InputError(f"row {row}: duplicate value for name={sub.loc[row, 'name']!r}, "
                         f"qid={sub.loc[row, 'qid']!r}, measure={sub.loc[row, 'measure']!r}")
    wide = sub.pivot(index=["name", "measure"], columns="qid", values="value")
    full = pd.MultiIndex.from_product([names, measures], names=["name", "measure"])
    wide = wide.reindex(full)
    holes = wide.isna()
    if holes.to_numpy().any():
        if missing == "error":
            stacked = holes.stack()
            name, meas, qid = stacked[stacked].index[0]
            raise InputError(f"system {name!r} has no finite value for qid {qid!r}, measure "
                             f"{meas!r}; paired tests need every system on every topic "
                             "(pass missing='drop' to keep only topics common to all systems)")
        keep = ~holes.any(axis=0)
        dropped = int((~keep).sum())
        removed = int(wide.loc[:, ~keep].notna().to_numpy().sum()) + n_bad
        announce(f"pairwise_significance: dropped {dropped} topic(s) not scored with a finite "
                 f"value for every system and measure ({removed} values changed)")
        wide = wide.loc[:, keep]
    qids = [str(q) for q in wide.columns]
    arr = wide.to_numpy(dtype=float).reshape(len(names), len(measures), len(qids))
    return names, qids, np.moveaxis(arr, 1, 2)            # systems x topics x measures


def _measures_of(perquery: pd.DataFrame, measure: object) -> list[str]:
    """The measures asked for (``None``: every measure in the frame), as the frame spells them."""
    available = list(pd.unique(perquery["measure"].astype(str)))
    if measure is None:
        measures = available
    else:
        measures = [str(m) for m in (measure if isinstance(measure, (list, tuple)) else [measure])]
        unknown = [m for m in measures if m not in available]
        if unknown:
            raise InputError(f"measure(s) {unknown} not found in column 'measure'; "
                             f"available: {available}")
    if not measures:
        raise InputError("perquery frame has no rows")
    return measures


def pairwise_significance(perquery: pd.DataFrame, measure: object = None, test: Test = "t",
                          alternative: Alternative = "two-sided",
                          correction: Correction | None = "holm", alpha: float = 0.05,
                          inclusive: bool = False, systems: Sequence[str] | None = None,
                          missing: PerqueryMissing = "error", n_resamples: int = 10_000,
                          seed: int | np.random.Generator | None = 0) -> pd.DataFrame:
    """Pairwise p-values for every system pair from ``pt.Experiment(..., perquery=True)`` output.

    Runs :func:`all_pairs` for each measure and corrects within each measure's family of pairs.
    Each row also reports the number of topics and the standardised effect size
    ``mean(a - b) / sd(a - b)`` (Sakai's advice to report effect and sample sizes with p).

    Args:
        perquery: frame with columns ``name, qid, measure, value``.
        measure: a measure (ir_measures object or its string form), a list of them, or None
            for every measure in the frame.
        test: see :func:`paired_test`.
        alternative: see :func:`paired_test`; "greater" means ``sys_a`` > ``sys_b``.
        correction: ``"bonferroni"``, ``"holm"``, ``"fdr_bh"`` or None (then
            ``p_corrected == p_value``).
        alpha: significance level for the ``significant`` column (on ``p_corrected``).
        inclusive: significant iff ``p <= alpha`` instead of ``p < alpha``.
        systems: systems to compare, in this order (default: order of first appearance).
        missing: ``"error"`` (default) if a system lacks a topic, or ``"drop"`` to keep only
            topics scored for every system (announced).
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        Frame with columns ``measure, sys_a, sys_b, n_topics, mean_a, mean_b, mean_diff,
        effect_size, p_value, p_corrected, significant``.
    """
    if not isinstance(perquery, pd.DataFrame):
        raise InputError("perquery must be a pandas DataFrame in pt.Experiment(perquery=True) layout")
    absent = [c for c in _PERQUERY_COLUMNS if c not in perquery.columns]
    if absent:
        raise InputError(f"perquery frame is missing column(s) {absent}; expected the "
                         "pt.Experiment(perquery=True) layout with columns name, qid, measure, value")
    _choice("missing", missing, ("error", "drop"))
    if correction is not None:
        _choice("correction", correction, CORRECTIONS)
    _alpha(alpha)
    measures = _measures_of(perquery, measure)
    names, qids, x = _perquery_arrays(perquery, measures, None if systems is None else
                                      list(systems), missing)
    if len(qids) < 2:
        raise InputError(f"need at least 2 topics common to all systems, found {len(qids)}")
    i, j, p = all_pairs(x, test=test, alternative=alternative, n_resamples=n_resamples, seed=seed)
    p_corr = p if correction is None else correct_pvalues(p, correction, axis=0)
    d = x[i] - x[j]                                        # pairs x topics x measures
    mean_diff = d.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = mean_diff / d.std(axis=1, ddof=1)
    means = x.mean(axis=1)                                 # systems x measures
    n_pairs, n_meas = len(i), len(measures)
    frame = pd.DataFrame({
        "measure": np.tile(np.asarray(measures, dtype=object), n_pairs),
        "sys_a": np.repeat(np.asarray(names, dtype=object)[i], n_meas),
        "sys_b": np.repeat(np.asarray(names, dtype=object)[j], n_meas),
        "n_topics": len(qids),
        "mean_a": means[i].ravel(),
        "mean_b": means[j].ravel(),
        "mean_diff": mean_diff.ravel(),
        "effect_size": effect.ravel(),
        "p_value": p.ravel(),
        "p_corrected": p_corr.ravel(),
    })
    frame["significant"] = significant(frame["p_corrected"].to_numpy(), alpha, inclusive)
    order = {m: k for k, m in enumerate(measures)}
    return frame.sort_values("measure", key=lambda s: s.map(order), kind="stable") \
        .reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Yang (2019) Ch. 3 procedures

def degradation_test(orig: object, changed: object, delta: float = 0.01, test: Test = "t",
                     axis: int = -1, n_resamples: int = 10_000,
                     seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """One-tailed non-inferiority test: is ``changed`` better than ``(1 - delta) * orig``?

    Yang (2019), Ch. 3.3.4, Table 3.4: for each system, a paired t-test over topics with
    H1: changed > (1 - delta) * original; the system "passes" (no notable degradation) when
    p <= 0.05. Equivalent to ``ttest_rel(changed, (1 - delta) * orig, alternative="greater")``.

    Args:
        orig: per-topic scores before the change (e.g. original runs).
        changed: per-topic scores after it (e.g. banded runs); broadcast against ``orig``.
        delta: tolerated relative loss in [0, 1) (0.01 and 0.03 in Table 3.4).
        test: paired test, ``"t"`` in the thesis.
        axis: topic axis.
        n_resamples: resamples for randomisation/bootstrap tests.
        seed: seed for randomisation/bootstrap tests.

    Returns:
        One-sided p-values (batch shape); count passes with ``(p <= 0.05).sum()``.
    """
    try:
        dl = float(delta)
    except (TypeError, ValueError):
        raise InputError(f"delta must be a number in [0, 1), got {delta!r}") from None
    if not 0.0 <= dl < 1.0:
        raise InputError(f"delta must be in [0, 1), got {delta!r}")
    orig_arr = _float_array("orig", orig)
    return paired_test(changed, (1.0 - dl) * orig_arr, test=test, alternative="greater",
                       axis=axis, n_resamples=n_resamples, seed=seed)


_QUADRANTS = ("both", "neither", "gained", "lost", "reversed")


def quadrant_codes(p_orig: object, p_new: object, alpha: float, inclusive: bool,
                    diff_orig: object = None, diff_new: object = None) -> np.ndarray:
    """Per-element code 0..4 into ``_QUADRANTS`` (4 only when directions are given)."""
    po = np.asarray(p_orig, dtype=float)
    pn = np.asarray(p_new, dtype=float)
    if po.shape != pn.shape:
        raise InputError(f"p_orig (shape {po.shape}) and p_new (shape {pn.shape}) must have "
                         "the same shape")
    so = np.asarray(significant(po, alpha, inclusive))
    sn = np.asarray(significant(pn, alpha, inclusive))
    codes = np.where(so & sn, 0, np.where(~so & ~sn, 1, np.where(sn, 2, 3)))
    if (diff_orig is None) != (diff_new is None):
        raise InputError("give both diff_orig and diff_new (directions of the differences) or neither")
    if diff_orig is not None:
        do = np.asarray(diff_orig, dtype=float)
        dn = np.asarray(diff_new, dtype=float)
        if do.shape != po.shape or dn.shape != po.shape:
            raise InputError(f"diff_orig {do.shape} and diff_new {dn.shape} must have the "
                             f"p-values' shape {po.shape}")
        codes = np.where((codes == 0) & (np.sign(do) != np.sign(dn)), 4, codes)
    return codes


def pvalue_quadrants(p_orig: object, p_new: object, alpha: float = 0.05, inclusive: bool = False,
                     diff_orig: object = None, diff_new: object = None) -> pd.DataFrame:
    """How significance decisions change between two conditions (Yang 2019, Fig. 3.8 grid).

    Each element (a system pair, possibly per replicate) falls in one quadrant of the
    (p_orig, p_new) scatter at ``alpha``: significant under both (``"both"``, true positives in
    the thesis), under neither (``"neither"``), only under the new condition (``"gained"``) or
    only under the original (``"lost"``). If the signed mean differences are given, pairs
    significant under both but with opposite winners are counted as ``"reversed"``
    (Yang 2019, Ch. 4.8).

    Args:
        p_orig: p-values under the original condition (e.g. original runs or full qrels).
        p_new: p-values under the new condition, same shape.
        alpha: significance level.
        inclusive: significant iff ``p <= alpha`` (default ``p < alpha``).
        diff_orig: optional signed mean differences under the original condition.
        diff_new: optional signed mean differences under the new condition.

    Returns:
        Frame indexed by quadrant with columns ``count`` and ``fraction``.
    """
    codes = quadrant_codes(p_orig, p_new, alpha, inclusive, diff_orig, diff_new)
    labels = _QUADRANTS if diff_orig is not None else _QUADRANTS[:4]
    counts = np.bincount(codes.ravel(), minlength=len(_QUADRANTS))[:len(labels)]
    total = max(int(codes.size), 1)
    return pd.DataFrame({"count": counts, "fraction": counts / total},
                        index=pd.Index(labels, name="quadrant"))
