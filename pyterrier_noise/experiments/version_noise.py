"""Judgment noise inside the significance test, and the noise floor of every system pair.

* :func:`judgment_noise`: for each comparison (a system against a baseline, or every pair), topics
  and label versions are resampled jointly: each resample draws ``T`` topics with replacement
  (the topic bootstrap, Sakai 2006) and, for each drawn topic, one of the label versions (as a
  different assessor could have judged each topic: TREC assigns assessors per topic, Voorhees
  2000).  It reports P(A > B), a percentile interval on the mean difference that includes judgment
  noise, and the probability that the p < alpha conclusion (paired t-test, corrected over every
  comparison of the measure in each resample as in the observed test) differs from the observed one,
  with topics and versions resampled and with versions alone (topics fixed).
* :func:`noise_floor`: for each system pair, the observed difference beside the range each source
  of noise alone could produce: topic sampling (bootstrap interval), unjudged documents (every
  unjudged retrieved document non-relevant or of the top grade), tied scores (optimistic and
  pessimistic tie orders) and judge disagreement (the range over the label versions).  The
  sources are shown one at a time, each with the others held at the reference; they are not
  additive and their ranges must not be summed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int, check_probability
from .._vocab import DRAWS, Draw
from ..engine import AlignedRuns
from ..engine.chunked import evaluate_in_chunks, file_chunks, table_with_unjudged
from ..stats import correct_pvalues, paired_test

if TYPE_CHECKING:   # pragma: no cover
    from .versions import VersionsResult

__all__ = ["DRAWS", "resample_design", "model_values", "judgment_noise", "noise_floor"]

#: elements of the largest temporary array (comparisons x resamples x topics) per step
_BLOCK = 1 << 22


def resample_design(n_topics: int, n_versions: int, n_resamples: int, seed: int = 0,
                    draw: Draw = "topic") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The draws of :func:`judgment_noise`: ``(topics, versions, versions_fixed_topics)``, each
    ``(n_resamples, n_topics)`` indices.  From ``numpy.random.default_rng(seed)`` in this order:
    topics ``integers(0, T, (B, T))``, versions ``integers(0, V, (B, T))`` (with ``draw="whole"``:
    ``integers(0, V, (B, 1))`` repeated over topics), then the versions of the fixed-topics
    resamples, drawn the same way."""
    check_choice("draw", draw, DRAWS)
    rng = np.random.default_rng(seed)
    cols = n_topics if draw == "topic" else 1
    topics = rng.integers(0, n_topics, (n_resamples, n_topics))
    versions = np.broadcast_to(rng.integers(0, n_versions, (n_resamples, cols)), (n_resamples, n_topics))
    fixed = np.broadcast_to(rng.integers(0, n_versions, (n_resamples, cols)), (n_resamples, n_topics))
    return topics, np.ascontiguousarray(versions), np.ascontiguousarray(fixed)


def _comparisons(res: "VersionsResult") -> tuple[np.ndarray, np.ndarray]:
    """(baseline index, system index) of every comparison: each system against each baseline, or
    every pair (i < j) as (i, j) without a baseline."""
    S = len(res.names)
    bases = [res.names.index(b) for b in res.params["baselines"]]
    if bases:
        b = np.repeat(bases, S)
        s = np.tile(np.arange(S), len(bases))
        keep = b != s
        return b[keep], s[keep]
    return np.triu_indices(S, 1)


def _conclusions(d: np.ndarray, correction: str | None, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(p, conclusion in {-1, 0, 1}) of paired t-tests on ``d`` (topics last), corrected over axis 0."""
    p = np.asarray(paired_test(d, 0.0, test="t", axis=-1), dtype=np.float64)
    pc = p if correction is None else correct_pvalues(p, correction, axis=0)
    with np.errstate(invalid="ignore"):
        return p, np.where(pc < alpha, np.sign(d.mean(axis=-1)), 0.0)


def _resampled(D: np.ndarray, rows: np.ndarray, cols: np.ndarray, correction: str | None,
               alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean differences ``(C, B)`` and conclusions ``(C, B)`` of the resamples ``D[:, rows, cols]``,
    a block of resamples at a time."""
    C, T, _ = D.shape
    B = rows.shape[0]
    step = max(1, _BLOCK // max(1, C * T))
    means, concl = np.empty((C, B)), np.empty((C, B))
    for b0 in range(0, B, step):          # blocks bound the memory; vectorised inside
        d = D[:, rows[b0:b0 + step], cols[b0:b0 + step]]       # (C, b, T)
        means[:, b0:b0 + step] = d.mean(axis=-1)
        concl[:, b0:b0 + step] = _conclusions(d, correction, alpha)[1]
    return means, concl


def model_values(res: "VersionsResult", model: Any, n_replicates: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Per measure, ``(systems, topics, n_replicates)`` scores under replicates of a judge model
    (``model.sample_labels(table, n, seed)``, e.g. :class:`~pyterrier_noise.judges.RandomFlips`)
    applied to the reference version's labels: one alignment per tie policy, one evaluation."""
    if res.runs is None:
        raise InputError("this result has no runs to evaluate the model's replicates on")
    if not callable(getattr(model, "sample_labels", None)):
        raise InputError(f"model must have a sample_labels(table, n, seed) method, got {type(model).__name__}")
    n_replicates = check_int("n_replicates", n_replicates, 1)
    L = np.asarray(model.sample_labels(res.table, n_replicates, seed=seed), dtype=np.float64)
    out: dict[str, np.ndarray] = {}
    for pol, measures in _by_policy(res).items():
        got = evaluate_in_chunks(res.runs, res.table, [res.specs[m] for m in measures], L, res.params.get("memory"),
                                 ties=pol, on_topic_mismatch="ignore")
        for m in measures:
            out[m] = got[res.specs[m].validate()]
    return out


def judgment_noise(res: "VersionsResult", n_resamples: int = 1000, seed: int = 0, draw: Draw = "topic",
                   confidence: float = 0.95, model: Any = None, n_replicates: int = 100) -> pd.DataFrame:
    """Judgment noise inside the significance test of every comparison.

    Rows: one per (baseline, system) comparison (every pair ``i < j`` as (baseline ``i``, system
    ``j``) when the experiment has no baseline).  Columns, per measure ``m``: ``m`` (the system's
    mean under the reference), ``m diff`` (system - baseline, reference), ``m p-value`` (paired
    t-test under the reference) and with a correction ``m p-value corrected`` (over every
    comparison of the measure), then ``m P(>baseline)`` (share of resamples whose mean
    difference is positive, ties counted half), ``m diff low`` / ``m diff high`` (percentile
    interval at ``confidence``), ``m P(flip)`` (share of resamples whose conclusion -- significant
    either way or not, after the same correction -- differs from the observed one) and ``m P(flip
    | topics)`` (the same with the topics fixed and only the versions drawn).  Draws:
    :func:`resample_design`; every comparison and measure uses the same draws.

    With ``model`` (a judge model, e.g. ``RandomFlips(0.93, 0.07)``), the versions drawn are
    ``n_replicates`` replicates of the model applied to the reference labels
    (:func:`model_values`, seeded by ``seed``) instead of the experiment's versions; the observed
    conclusion is still the reference version's.
    """
    n_resamples = check_int("n_resamples", n_resamples, 1)
    check_probability("confidence", confidence)
    bi, si = _comparisons(res)
    ref = res.versions.index(res.reference)
    drawn = res.values if model is None else model_values(res, model, n_replicates, seed)
    V, T = next(iter(drawn.values())).shape[2], len(res.topics)
    rows_tb, cols_tb, cols_fixed = resample_design(T, V, n_resamples, seed, draw)
    fixed_rows = np.broadcast_to(np.arange(T), (n_resamples, T))
    correction, alpha = res.params["correction"], res.params["correction_alpha"]
    lo_q, hi_q = (1 - confidence) / 2, 1 - (1 - confidence) / 2
    out: dict[str, Any] = {"baseline": np.asarray(res.names, dtype=object)[bi],
                           "name": np.asarray(res.names, dtype=object)[si]}
    for m in res.measures:
        X = res.values[m]
        d_ref = X[si, :, ref] - X[bi, :, ref]                       # (C, T)
        p0 = np.asarray(paired_test(d_ref, 0.0, test="t", axis=-1), dtype=np.float64)
        c0 = _conclusions(d_ref, correction, alpha)[1]
        D = drawn[m][si] - drawn[m][bi]                             # (C, T, V)
        means, concl = _resampled(D, rows_tb, cols_tb, correction, alpha)
        _, concl_fixed = _resampled(D, fixed_rows, cols_fixed, correction, alpha)
        out[m] = X[si, :, ref].mean(axis=1)
        out[f"{m} diff"] = d_ref.mean(axis=1)
        out[f"{m} p-value"] = p0
        if correction is not None:
            out[f"{m} p-value corrected"] = correct_pvalues(p0, correction)
        out[f"{m} P(>baseline)"] = (means > 0).mean(axis=1) + 0.5 * (means == 0).mean(axis=1)
        out[f"{m} diff low"] = np.quantile(means, lo_q, axis=1)
        out[f"{m} diff high"] = np.quantile(means, hi_q, axis=1)
        out[f"{m} P(flip)"] = (concl != c0[:, None]).mean(axis=1)
        out[f"{m} P(flip | topics)"] = (concl_fixed != c0[:, None]).mean(axis=1)
    frame = pd.DataFrame(out)
    frame.attrs.update(resamples=n_resamples, seed=seed, draw=draw, confidence=confidence, reference=res.reference,
                       policy=res.policy, versions=res.versions if model is None else f"{n_replicates} x {model!r}")
    return frame


def _bracket(lo: np.ndarray, hi: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Range of mean(i) - mean(j) when each system's mean lies anywhere in [lo, hi]."""
    return lo[i] - hi[j], hi[i] - lo[j]


def _unjudged_means(res: "VersionsResult") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per measure, the system means with every unjudged retrieved document (under the reference)
    non-relevant and of the top grade: one alignment per tie policy, with a row for every unjudged
    retrieved document, and one evaluation of the two completions.  Under a memory budget that does
    not hold every run, the table first grows by every run's unjudged documents, a chunk of run files
    at a time (a completion's recall base counts what every run retrieved), then each chunk of runs
    is aligned to it and evaluated."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if res.runs is None:
        return out
    top = np.nanmax(res.labels) if np.isfinite(res.labels).any() else 1.0
    memory = res.params.get("memory")
    chunked = file_chunks(res.runs, memory, warn=False) is not None
    grown = table_with_unjudged(res.runs, res.table, memory, on_topic_mismatch="ignore") if chunked else None
    for pol, measures in _by_policy(res).items():
        specs = [res.specs[m] for m in measures]
        aligned = None if chunked else AlignedRuns.build(res.runs, res.table, ties=pol, on_topic_mismatch="ignore",
                                                         include_unjudged=True)
        y = grown.labels if chunked else aligned.table.labels
        L = np.column_stack([np.where(np.isnan(y), 0.0, y), np.where(np.isnan(y), top, y)])   # the two completions
        if chunked:   # every run's unjudged documents first (the grown table), then a chunk of runs at a time
            got = evaluate_in_chunks(res.runs, grown, specs, L, memory, ties=pol, on_topic_mismatch="ignore")
        else:
            got = aligned.evaluate(specs, L)
        for m in measures:
            v = got[res.specs[m].validate()].mean(axis=1)                   # (S, 2)
            out[m] = (v.min(axis=1), v.max(axis=1))
    return out


def _tie_means(res: "VersionsResult", ref: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per measure, the system means under the pessimistic and the optimistic tie order (reference
    labels): two alignments for every measure."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if res.runs is None or not res.specs:
        return out
    specs = [res.specs[m] for m in res.measures]
    got = []
    for pol in ("pessimistic", "optimistic"):
        got.append(evaluate_in_chunks(res.runs, res.table, specs, res.labels[:, ref], res.params.get("memory"),
                                      ties=pol, on_topic_mismatch="ignore"))
    for m, spec in zip(res.measures, specs):
        a, b = (g[spec.validate()][:, :, 0].mean(axis=1) for g in got)
        out[m] = (np.minimum(a, b), np.maximum(a, b))
    return out


def _by_policy(res: "VersionsResult") -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for m in res.measures:
        if m in res.specs:
            groups.setdefault(res.params["policies"][m], []).append(m)
    return groups


def noise_floor(res: "VersionsResult", n_resamples: int = 1000, seed: int = 0,
                confidence: float = 0.95) -> pd.DataFrame:
    """The noise floor of every system pair ``(a, b)``, ``a`` before ``b``, per measure.

    ``diff``: mean of a - b under the reference version.  Each source alone, the others held at
    the reference:

    * ``topics_low/high``: percentile bootstrap interval of the difference at ``confidence``
      (topics drawn with replacement, ``numpy.random.default_rng(seed).multinomial``);
    * ``unjudged_low/high``: the range of the difference when each system's mean may lie anywhere
      between its value with every unjudged retrieved document non-relevant and with every one of
      the top grade (for RBP and the other measures monotone in the labels these are bounds, the
      residual of Moffat & Zobel 2008; AP and nDCG are not monotone in the labels, so for them the
      two completions are indications, not bounds);
    * ``ties_low/high``: the same with each system's mean between its pessimistic and optimistic
      tie orders (McSherry & Najork 2008);
    * ``judges_low/high``: the smallest and largest difference over the label versions.

    ``below_<source>``: the source's range reaches zero or the other sign (the difference could
    vanish or reverse from that source alone); ``below_any``: any of them.  The ranges are not
    additive: each shows what one source alone can do.
    """
    n_resamples = check_int("n_resamples", n_resamples, 1)
    check_probability("confidence", confidence)
    S, T = len(res.names), len(res.topics)
    ref = res.versions.index(res.reference)
    i, j = np.triu_indices(S, 1)
    counts = np.random.default_rng(seed).multinomial(T, np.full(T, 1.0 / T), size=n_resamples)   # (B, T)
    lo_q, hi_q = (1 - confidence) / 2, 1 - (1 - confidence) / 2
    names = np.asarray(res.names, dtype=object)
    parts = []
    ranges = {"unjudged": _unjudged_means(res), "ties": _tie_means(res, ref)}
    for m in res.measures:
        X = res.values[m]
        mean = X.mean(axis=1)                                        # (S, V)
        cols: dict[str, Any] = {"measure": m, "system_a": names[i], "system_b": names[j],
                                "diff": mean[i, ref] - mean[j, ref]}
        boot = X[:, :, ref] @ counts.T / T                           # (S, B) bootstrap means
        d = boot[i] - boot[j]
        cols["topics_low"], cols["topics_high"] = np.quantile(d, lo_q, axis=1), np.quantile(d, hi_q, axis=1)
        for name, by_measure in ranges.items():
            got = by_measure.get(m)
            lo, hi = _bracket(*got, i, j) if got is not None else (np.full(len(i), np.nan),) * 2
            cols[f"{name}_low"], cols[f"{name}_high"] = lo, hi
        dv = mean[i] - mean[j]                                       # (pairs, V)
        cols["judges_low"], cols["judges_high"] = dv.min(axis=1), dv.max(axis=1)
        frame = pd.DataFrame(cols)
        sign = np.sign(frame["diff"].to_numpy())
        for src in ("topics", "unjudged", "ties", "judges"):
            lo, hi = frame[f"{src}_low"].to_numpy(), frame[f"{src}_high"].to_numpy()
            with np.errstate(invalid="ignore"):
                frame[f"below_{src}"] = np.where(sign > 0, lo <= 0, np.where(sign < 0, hi >= 0, True))
        frame["below_any"] = frame[[f"below_{s}" for s in ("topics", "unjudged", "ties", "judges")]].any(axis=1)
        parts.append(frame)
    out = pd.concat(parts, ignore_index=True)
    out.attrs.update(resamples=n_resamples, seed=seed, confidence=confidence, reference=res.reference,
                     policy=res.policy)
    return out
