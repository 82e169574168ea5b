"""Pool-depth studies: the Depth@k reduction of the qrels and the experiment over it (Yang 2019, Ch. 4).

Yang (2019, PhD thesis, Sec. 4.6-4.9; Moffat, Scholer & Yang 2018, JDIQ 10(3)) studies how scores
and significance decisions move when the pool is made shallower:

* :func:`pool_entry_depth`, :func:`depth_labels`, :func:`pool_multiplicity`,
  :func:`multiplicity_table` -- the Depth@k reduction of the qrels (Sec. 4.6) for many depths at
  once as one label matrix;
* :func:`depth_experiment` (:class:`DepthExperiment`) -- discrimination, consistent
  discrimination and residual-versus-score movement across depths, against the full qrels or
  (``reference_depth=50``) the thesis's depth-50 reference.

"Residual" is RBP's (Moffat & Zobel 2008): the weight of the unjudged ranks and of the ranks
after the run, i.e. the most the score could rise; an optimistic bound, not a confidence
interval (thesis Sec. 4.3).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import _plot
from .._validation import InputError, announce, check_int, check_probability
from .._vocab import Test, TiePolicy
from ..engine import AlignedRuns, MeasureSpec
from ..engine import pools
from ..judges import deeply_judged_runs
from ..stats import consistent_discrimination, discrimination_agreement, discrimination_ratio
from ._common import aligned_runs, labelled_spec

__all__ = ["pool_entry_depth", "depth_labels", "pool_multiplicity", "multiplicity_table",
           "DepthExperiment", "depth_experiment", "unjudged_depth"]


# ---------------------------------------------------------------------------------------------
# Depth@k reduction

def pool_entry_depth(aligned: AlignedRuns, pool_runs: Sequence[str] | None = None) -> np.ndarray:
    """Depth at which each judgment enters the Depth@k pool of ``pool_runs`` (Yang 2019, Sec. 4.6):
    the engine's :func:`~pyterrier_noise.engine.pools.pool_entry_depth` (one home), for an
    :class:`AlignedRuns`; ``inf`` where no pooling run retrieves the document."""
    if not isinstance(aligned, AlignedRuns):
        raise InputError(f"aligned must be an AlignedRuns (AlignedRuns.build(runs, qrels)), got {type(aligned).__name__}")
    return pools.pool_entry_depth(aligned, pool_runs)


def _depths(depths: Any) -> np.ndarray:
    if isinstance(depths, (int, np.integer)) and not isinstance(depths, bool):
        depths = [depths]
    try:
        items = list(depths)
    except TypeError:
        raise InputError(f"depths must be positive integers, got {depths!r}") from None
    if not items:
        raise InputError("depths is empty: give at least one pool depth k >= 1")
    out = [check_int(f"depths[{i}]", d) for i, d in enumerate(items)]
    if len(set(out)) != len(out):
        raise InputError(f"depths must be distinct, got {out}")
    return np.asarray(sorted(out), dtype=np.int64)


def depth_labels(aligned: AlignedRuns, depths: Any, pool_runs: Sequence[str] | None = None,
                 labels: np.ndarray | None = None) -> np.ndarray:
    """Depth@k reduced judgments for several depths as one label matrix (Yang 2019, Sec. 4.6).

    ``qrels_k = {(t, d, label) in qrels : d in Pool_t(k)}``, ``Pool_t(k)`` the union of the top
    ``k`` documents of the pooling runs for topic t; the other judgments become unjudged (NaN), so
    R and the ideal DCG are recomputed from the reduced judgments and RBP residuals grow.

    Args:
        aligned: runs aligned to the qrels.
        depths: pool depths k (positive integers; sorted ascending in the output).
        pool_runs: the runs forming the pool (default: all aligned runs).
        labels: the full labels over ``aligned.table`` rows (default: the table's own).

    Returns:
        ``(len(aligned.table), len(depths))`` float matrix for ``aligned.evaluate(specs, L)``.
    """
    ks = _depths(depths)
    entry = pool_entry_depth(aligned, pool_runs)
    full = aligned.label_matrix(labels)
    if full.shape[1] != 1:
        raise InputError(f"labels must be one label vector over the table rows, got shape {full.shape}")
    return np.where(entry[:, None] <= ks[None, :], full, np.nan)


def pool_multiplicity(aligned: AlignedRuns, depth: int, pool_runs: Sequence[str] | None = None) -> np.ndarray:
    """How many pooling runs place each judged document in their top ``depth`` (Yang 2019, Table 4.4).

    Returns an integer array over ``aligned.table`` rows (0 = not in the pool).
    """
    depth = check_int("depth", depth)
    if not isinstance(aligned, AlignedRuns):
        raise InputError(f"aligned must be an AlignedRuns, got {type(aligned).__name__}")
    ok = pools.pool_positions(aligned, pool_runs) & (aligned.pos < depth)
    return np.bincount(aligned.jidx[ok], minlength=len(aligned.table)).astype(np.int64)


def multiplicity_table(aligned: AlignedRuns, depth: int, pool_runs: Sequence[str] | None = None,
                       rel: float = 1.0) -> pd.DataFrame:
    """Judged documents of the depth-``depth`` pool by multiplicity, and the share relevant (Table 4.4).

    Bins 1, 2, 3-4, 5-8, 9-16, 17-32, 33+ (the thesis's); only documents with a judgment count.

    Returns:
        Frame ``multiplicity, count, relevant, pct_relevant`` with a ``Total`` row.
    """
    mult = pool_multiplicity(aligned, depth, pool_runs)
    lab = aligned.table.labels
    judged = ~np.isnan(lab) & (mult > 0)
    with np.errstate(invalid="ignore"):
        is_rel = judged & (lab >= float(rel))
    edges = np.array([1, 2, 3, 5, 9, 17, 33, np.iinfo(np.int64).max])
    names = ["1", "2", "3-4", "5-8", "9-16", "17-32", "33+"]
    b = np.searchsorted(edges, mult, side="right") - 1
    count = np.bincount(b[judged], minlength=len(names))[:len(names)]
    relevant = np.bincount(b[is_rel], minlength=len(names))[:len(names)]
    frame = pd.DataFrame({"multiplicity": names + ["Total"], "count": np.append(count, count.sum()),
                          "relevant": np.append(relevant, relevant.sum())})
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["pct_relevant"] = 100.0 * frame["relevant"] / frame["count"].where(frame["count"] > 0)
    return frame


def unjudged_depth(aligned: AlignedRuns, labels: np.ndarray | None = None, k: int = 10,
                   versions: Sequence[str] | None = None) -> pd.DataFrame:
    """Where each ranking meets its first unjudged document, and how many of its top k are unjudged.

    Yang (2019, Sec. 4.10) recommends reporting, beside significance tests, the RBP residual or,
    where residuals cannot be computed, "the fraction of unjudged documents above rank k" per
    topic.  For every run, topic and label version this gives ``first_unjudged``, the 1-based rank
    of the first retrieved document without a judgment (NaN when every retrieved document is
    judged), ``unjudged_at_k``, the number of unjudged documents in the top ``k``, and
    ``share_unjudged_at_k``, that number over the documents retrieved in the top ``k``.

    Args:
        aligned: runs aligned to the qrels.
        labels: label matrix ``(len(aligned.table), versions)`` (e.g. :func:`depth_labels`; NaN =
            unjudged); default: the table's own labels.
        k: the rank cutoff.
        versions: names of the label columns (default ``0, 1, ...``).

    Returns:
        Frame ``name, qid, version, first_unjudged, unjudged_at_k, share_unjudged_at_k``.
    """
    if not isinstance(aligned, AlignedRuns):
        raise InputError(f"aligned must be an AlignedRuns, got {type(aligned).__name__}")
    k = check_int("k", k, 1)
    L = aligned.label_matrix(labels)
    K = L.shape[1]
    names = [str(v) for v in (range(K) if versions is None else versions)]
    if len(names) != K:
        raise InputError(f"versions has {len(names)} names for {K} label column(s)")
    G = aligned.n_segments
    seg = np.repeat(np.arange(G), aligned.seg_len)
    judged_row = aligned.jidx >= 0
    lab = np.full((len(seg), K), np.nan)
    lab[judged_row] = L[aligned.jidx[judged_row]]
    unj = np.isnan(lab)                                                   # (positions, K)
    rank = aligned.pos.astype(np.float64) + 1.0
    first = np.full(G * K, np.inf)
    flat = (seg[:, None] * K + np.arange(K)[None, :])
    np.minimum.at(first, flat[unj], np.broadcast_to(rank[:, None], unj.shape)[unj])
    top = aligned.pos < k
    count = np.bincount(flat[unj & top[:, None]], minlength=G * K)
    retrieved = np.minimum(aligned.seg_len, k).astype(np.float64)         # (G,)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = count.reshape(G, K) / retrieved[:, None]
    run_of = np.arange(G) // aligned.n_topics
    topic_of = np.arange(G) % aligned.n_topics
    return pd.DataFrame({
        "name": np.repeat(np.asarray(aligned.run_names, dtype=object)[run_of], K),
        "qid": np.repeat(np.asarray(aligned.topics, dtype=object)[topic_of], K),
        "version": np.tile(np.asarray(names, dtype=object), G),
        "first_unjudged": np.where(np.isinf(first), np.nan, first),
        "unjudged_at_k": count.astype(np.int64), "share_unjudged_at_k": share.ravel()})


# ---------------------------------------------------------------------------------------------
# the pool-depth experiment

@dataclass
class DepthExperiment:
    """Results of :func:`depth_experiment` (Yang 2019, Sec. 4.6-4.9), for the shallow depths and the full qrels.

    Attributes:
        depths: the pool depths k (ascending); the last version is the reference: the full qrels
            (``"full"``) or, with ``reference_depth``, the Depth@reference_depth qrels.
        versions: version labels ``["k=1", ..., "full"]`` (``[..., "k=50"]`` with ``reference_depth=50``).
        measures: measure labels.
        run_names, topics: the scored runs and the topics.
        scores: ``{measure: array (runs, topics, versions)}``.
        residual: RBP residual at ``residual_p`` ``(runs, topics, versions)``.
        residual_p: its persistence.
        pool: per version: judged and relevant documents, per topic and in all, topics without a
            relevant judgment, and the mean RBP residual of the scored runs (thesis Fig. 4.5).
        discrimination: share of run pairs separated by the paired test, measure x version
            (thesis Table 4.5).
        agreement: per measure and depth, TP / FP / FN / TN against the reference and the
            ``reversed`` pairs (significant both ways, opposite winners, counted in FP)
            (thesis Table 4.6), with ``ratio`` = (TP + FP) / N.
        consistency: per measure, the distribution of each pair's Kendall tau between depth and
            p-value over the shallow depths, split by all-significant / straddle /
            all-not-significant (thesis Fig. 4.7).
        movement: per measure and depth (and ``all`` pooled): % of (run, topic) scores that rise
            (diff < 0), stay, fall (diff > 0) from depth k to full, with ``diff = score_k -
            score_full`` (thesis Table 4.7); Kendall's tau_b of the residual at k with the
            difference, its absolute value and the ratio ``score_k / score_full`` (Table 4.8);
            ``covered``, the share of points with ``|diff| <= residual``; and ``mean_resolved`` /
            ``tau_resolved_abs_diff``: the part of the residual at k that the full qrels judge
            (``residual_k - residual_full``) and its tau_b with ``|diff|``.
        alpha, test: the significance level and paired test.
        reference_depth: the depth of the reduced reference qrels (``None``: the full qrels).
    """

    depths: list[int]
    versions: list[str]
    measures: list[str]
    run_names: list[str]
    topics: list[str]
    scores: dict[str, np.ndarray]
    residual: np.ndarray
    residual_p: float
    pool: pd.DataFrame
    discrimination: pd.DataFrame
    agreement: pd.DataFrame
    consistency: pd.DataFrame | None
    movement: pd.DataFrame
    alpha: float = 0.05
    test: Test = "t"
    extra: dict = field(default_factory=dict)
    reference_depth: int | None = None

    def points(self, measure: str) -> pd.DataFrame:
        """One row per (run, topic, shallow depth): ``name, qid, depth, residual, score, full, diff``."""
        if measure not in self.scores:
            raise InputError(f"measure {measure!r} is not in this experiment ({self.measures})")
        s = self.scores[measure]
        D = len(self.depths)
        S, T = s.shape[:2]
        return pd.DataFrame({
            "name": np.repeat(np.asarray(self.run_names, dtype=object), T * D),
            "qid": np.tile(np.repeat(np.asarray(self.topics, dtype=object), D), S),
            "depth": np.tile(self.depths, S * T),
            "residual": self.residual[:, :, :D].ravel(),
            "score": s[:, :, :D].ravel(),
            "full": np.broadcast_to(s[:, :, D:], (S, T, D)).ravel(),
            "diff": (s[:, :, :D] - s[:, :, D:]).ravel(),
        })

    def plot_movement(self, save: str | Path | None = None) -> Any:
        """Score change from depth k to the full qrels against the RBP residual at k (thesis Fig. 4.8/4.9).

        Returns the matplotlib Figure; writes it to ``save`` (a path) when given."""
        from matplotlib import colormaps
        fig = _plot.figure(4.0 * len(self.measures), 3.6)
        axes = fig.subplots(1, len(self.measures), squeeze=False)[0]
        cmap = colormaps["viridis"]
        D = len(self.depths)
        for ax, m in zip(axes, self.measures):
            diff = self.scores[m][:, :, :D] - self.scores[m][:, :, D:]
            for k, d in enumerate(self.depths):
                ax.scatter(self.residual[:, :, k].ravel(), diff[:, :, k].ravel(), s=4, alpha=0.35,
                           color=cmap(k / max(D - 1, 1)), label=f"k={d}", rasterized=True)
            row = self.movement[(self.movement["measure"] == m) & (self.movement["depth"] == "all")]
            tau = float(row["tau_diff"].iloc[0]) if len(row) else float("nan")
            ax.axhline(0.0, color="k", lw=0.6)
            ax.set_title(f"{m}: tau_b = {tau:.2f}", fontsize=10)
            ax.set_xlabel(f"RBP residual (p={self.residual_p:g}) at depth k")
            ax.set_ylabel(f"score(k) - score({self.versions[-1]})")
            ax.grid(alpha=0.3)
        axes[-1].legend(fontsize=7, markerscale=3, ncol=2)
        return _plot.save(fig, save)

    def plot_discrimination(self, save: str | Path | None = None) -> Any:
        """Discrimination ratio, and FP / FN shares against the full qrels, by pool depth (Tables 4.5, 4.6).

        Returns the Figure; ``save``: as in :meth:`plot_movement`."""
        fig = _plot.figure(9.0, 3.6)
        ax1, ax2 = fig.subplots(1, 2)
        x = np.asarray(self.depths, dtype=float)
        for m in self.measures:
            r = self.discrimination.loc[m]
            line, = ax1.plot(x, 100 * r.iloc[:len(x)].to_numpy(dtype=float), marker="o", ms=3, label=m)
            ax1.axhline(100 * float(r.iloc[-1]), color=line.get_color(), ls=":", lw=1)
            a = self.agreement[self.agreement["measure"] == m]
            n = a[["TP", "FP", "FN", "TN"]].sum(axis=1).to_numpy(dtype=float)
            ax2.plot(x, 100 * a["FP"].to_numpy() / n, marker="o", ms=3, color=line.get_color(), label=f"{m} FP")
            ax2.plot(x, 100 * a["FN"].to_numpy() / n, marker="s", ms=3, ls="--", color=line.get_color(),
                     label=f"{m} FN")
        for ax in (ax1, ax2):
            ax.set_xscale("log")
            ax.set_xlabel("pool depth k")
            ax.grid(alpha=0.3)
        ax1.set_ylabel(f"% of run pairs with p < {self.alpha:g}")
        ax1.set_title(f"discrimination ratio (dotted: {self.versions[-1]})", fontsize=10)
        ax2.set_ylabel("% of run pairs")
        ax2.set_title(f"decisions that differ from {self.versions[-1]}", fontsize=10)
        ax1.legend(fontsize=8)
        ax2.legend(fontsize=7, ncol=2)
        return _plot.save(fig, save)

    def plot_consistency(self, save: str | Path | None = None) -> Any:
        """Per-pair Kendall tau between depth and p-value, stacked by significance class (thesis Fig. 4.7).

        Returns the Figure; ``save``: as in :meth:`plot_movement`."""
        if self.consistency is None:
            raise InputError("consistent discrimination needs at least two shallow depths")
        fig = _plot.figure(4.0 * len(self.measures), 3.4)
        axes = fig.subplots(1, len(self.measures), squeeze=False)[0]
        classes = ["all_significant", "straddle", "all_not_significant"]
        colours = {"all_significant": "#7b3294", "straddle": "#fdb863", "all_not_significant": "#5aae61"}
        for ax, m in zip(axes, self.measures):
            c = self.consistency[self.consistency["measure"] == m]
            # bins of width 0.1 (with many versions, or tied p-values, tau takes many values)
            c = c.assign(bin=np.clip(np.round(c["tau"].to_numpy(dtype=float) * 10), -10, 10) / 10)
            wide = c.pivot_table(index="bin", columns="consistency", values="count", aggfunc="sum",
                                 observed=False).reindex(columns=classes).fillna(0)
            taus = wide.index.to_numpy(dtype=float)
            width = 0.08
            bottom = np.zeros(len(taus))
            for cls in classes:
                ax.bar(taus, wide[cls].to_numpy(), width=width, bottom=bottom, color=colours[cls], label=cls)
                bottom += wide[cls].to_numpy()
            ax.set_title(m, fontsize=10)
            ax.set_xlabel("Kendall tau(depth, p-value) of a pair (bins of 0.1)")
            ax.set_ylabel("run pairs")
        axes[-1].legend(fontsize=7)
        return _plot.save(fig, save)


def _movement_rows(measure: str, s: np.ndarray, resid: np.ndarray, depths: list[int]) -> list[dict]:
    D = len(depths)
    diff = s[:, :, :D] - s[:, :, D:]
    full = np.broadcast_to(s[:, :, D:], diff.shape)
    res = resid[:, :, :D]
    resolved = res - resid[:, :, D:]          # residual weight that the full qrels judge
    rows = []
    for k, label in [(slice(k, k + 1), str(d)) for k, d in enumerate(depths)] + [(slice(0, D), "all")]:
        d, r, f = diff[:, :, k].ravel(), res[:, :, k].ravel(), full[:, :, k].ravel()
        g = resolved[:, :, k].ravel()
        zero = np.isclose(d, 0.0, rtol=0.0, atol=1e-12)
        pos = f > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = s[:, :, :D][:, :, k].ravel()[pos] / f[pos]

        def tau(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
            if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
                return float("nan"), float("nan")
            from scipy import stats as _st   # on first use: scipy.stats is slow to import
            kt = _st.kendalltau(x, y)
            return float(kt.statistic), float(kt.pvalue)

        t_d, p_d = tau(r, d)
        t_a, _ = tau(r, np.abs(d))
        t_r, _ = tau(r[pos], ratio)
        t_g, _ = tau(g, np.abs(d))
        rows.append({"measure": measure, "depth": label, "n": int(d.size),
                     "pct_rise": 100.0 * float(((d < 0) & ~zero).mean()),
                     "pct_same": 100.0 * float(zero.mean()),
                     "pct_fall": 100.0 * float(((d > 0) & ~zero).mean()),
                     "mean_diff": float(d.mean()), "mean_abs_diff": float(np.abs(d).mean()),
                     "mean_residual": float(r.mean()),
                     "covered": float((np.abs(d) <= r + 1e-12).mean()),
                     "tau_diff": t_d, "p_diff": p_d, "tau_abs_diff": t_a, "tau_ratio": t_r,
                     "n_ratio": int(pos.sum()), "mean_resolved": float(g.mean()),
                     "tau_resolved_abs_diff": t_g})
    return rows


def depth_experiment(runs: Any, qrels: Any = None, depths: Any = (1, 2, 3, 5, 10, 20, 50, 100), *,
                     measures: Sequence[Any] = ("AP", "nDCG", "RBP(p=0.98)"), pool_runs: Sequence[str] | None = None,
                     p: float = 0.98, alpha: float = 0.05, test: Test = "t",
                     ties: TiePolicy = "trec_eval", rel: float = 1.0, n_resamples: int = 10_000,
                     seed: int | np.random.Generator | None = 0,
                     reference_depth: int | None = None) -> DepthExperiment:
    """The pool-depth study of Yang (2019), Sec. 4.6-4.9, against the full qrels or the thesis's depth-50 reference.

    Every depth k gives the Depth@k reduced qrels (:func:`depth_labels`); together with the full
    qrels they form one label matrix, evaluated for every run, topic and measure in a single
    ``AlignedRuns.evaluate`` call on one alignment.  Then, against the full qrels:

    * discrimination ratio per version (Table 4.5; ``agreement.discrimination_ratio``);
    * consistently consistent discrimination, TP / FP / FN / TN per depth (Table 4.6;
      ``agreement.discrimination_agreement`` with the direction check);
    * consistent discrimination over the shallow depths (Fig. 4.7;
      ``agreement.consistent_discrimination``);
    * score movement from depth k to full against the RBP residual at k (Tables 4.7-4.8).

    By default the reference is the full qrels and every given run is scored and pooled.  The
    thesis (Tables 4.5-4.8) instead pools and scores only the *deeply judged* runs (every topic's
    top 50 judged; :func:`~pyterrier_noise.judges.deeply_judged_runs`) and compares with qrels_50,
    the qrels reduced to their depth-50 pool: ``reference_depth=50`` does both (the other runs are
    left out with a warning that names how many; depths must be below ``reference_depth``).

    Args:
        runs: the scored runs (``{name: frame}``, files, or an :class:`AlignedRuns`).
        qrels: the full judgments, unless ``runs`` is aligned.
        depths: pool depths k (positive integers).
        measures: measures to study (ir_measures names or objects, or MeasureSpec).
        pool_runs: runs forming the pools (default: all scored runs).
        p: RBP persistence of the residual that is compared with score movement (default 0.98,
            the thesis's).
        alpha: significance level (p < alpha).
        test: paired test over topics (``"t"``: two-tailed paired t-test, as the thesis).
        ties: tie policy of the alignment.
        rel: relevance threshold for the pool statistics.
        n_resamples: resamples for the randomisation and bootstrap tests.
        seed: seed of the randomisation and bootstrap tests (same seed, same tables).
        reference_depth: compare with the Depth@reference_depth qrels of the runs judged to that
            depth on every topic, scoring and pooling only those runs (the thesis: 50); ``None``
            (default): the full qrels and all runs.

    Returns:
        :class:`DepthExperiment`.
    """
    residual_p = check_probability("p", p)
    ks = _depths(depths)
    aligned = aligned_runs(runs, qrels, ties)
    if aligned.n_runs < 2:
        raise InputError(f"the depth experiment compares runs in pairs and needs at least 2, got {aligned.n_runs}")
    if aligned.n_topics < 2:
        raise InputError(f"paired tests over topics need at least 2 topics, got {aligned.n_topics}")
    items = [labelled_spec(m) for m in ([measures] if isinstance(measures, (str, MeasureSpec)) else list(measures))]
    if not items:
        raise InputError("no measures given")
    labels = [lab for lab, _ in items]
    if len(set(labels)) != len(labels):
        raise InputError(f"measures must be distinct, got {labels}")
    scored, reference, ref_label, pool_runs = _reference(aligned, ks, reference_depth, pool_runs)
    L = np.concatenate([depth_labels(aligned, ks, pool_runs), reference], axis=1)     # (J, D + 1)
    res_spec = MeasureSpec("RBP", "residual", p=residual_p)
    out = aligned.evaluate(list(dict.fromkeys([s for _, s in items] + [res_spec])), L)
    scores = {lab: out[s][scored] for lab, s in items}
    residual = out[res_spec][scored]
    run_names = [aligned.run_names[i] for i in scored]
    versions = [f"k={d}" for d in ks] + [ref_label]
    pool = _pool_table(aligned, L, ks, versions, rel, residual)
    stat = dict(alpha=alpha, test=test, n_resamples=n_resamples, seed=seed)
    disc = pd.DataFrame({lab: np.atleast_1d(discrimination_ratio(scores[lab], **stat))
                         for lab in labels}, index=versions).T
    disc.columns.name = "version"
    agreement, consistency, movement = _agreement_tables(scores, residual, ks, run_names, stat)
    return DepthExperiment(depths=[int(k) for k in ks], versions=versions, measures=labels,
                           run_names=run_names, topics=list(aligned.topics), scores=scores,
                           residual=residual, residual_p=residual_p, pool=pool, discrimination=disc,
                           agreement=agreement, consistency=consistency,
                           movement=movement, alpha=float(alpha), test=test,
                           reference_depth=None if reference_depth is None else int(reference_depth))


def _reference(aligned: AlignedRuns, ks: np.ndarray, reference_depth: int | None,
               pool_runs: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, str, Sequence[str] | None]:
    """The runs scored (indices), the reference labels ``(J, 1)``, the reference's version name
    and the pool runs: the full qrels and every run, or with ``reference_depth`` the qrels reduced
    to that depth's pool of the runs judged to that depth on every topic (Yang 2019, Sec. 4.6)."""
    if reference_depth is None:
        return np.arange(aligned.n_runs), aligned.label_matrix(), "full", pool_runs
    ref_depth = check_int("reference_depth", reference_depth, 1)
    if ks.max() >= ref_depth:
        raise InputError(f"depths must be below reference_depth={ref_depth}, got {list(ks)}")
    deep = deeply_judged_runs(aligned, aligned.table, depth=ref_depth)
    if len(deep) < 2:
        raise InputError(f"reference_depth={ref_depth}: {len(deep)} of the {aligned.n_runs} runs have their top "
                         f"{ref_depth} documents judged on every topic; the experiment needs at least 2")
    if len(deep) < aligned.n_runs:
        announce(f"reference_depth={ref_depth}: {aligned.n_runs - len(deep)} of {aligned.n_runs} runs are not "
                 f"judged to depth {ref_depth} on every topic and are left out (scored and pooled: {len(deep)})")
    scored = pd.Index(aligned.run_names).get_indexer(deep)
    if pool_runs is None:
        pool_runs = deep
    return scored, depth_labels(aligned, [ref_depth], pool_runs), f"k={ref_depth}", pool_runs


def _pool_table(aligned: AlignedRuns, L: np.ndarray, ks: np.ndarray, versions: list[str], rel: float,
                residual: np.ndarray) -> pd.DataFrame:
    """Judgments per version: judged and relevant documents (in all and per topic), topics without
    a relevant document and the mean RBP residual."""
    judged = ~np.isnan(L)
    with np.errstate(invalid="ignore"):
        relevant = judged & (L >= rel)
    tix = aligned.table.topic_index
    T = aligned.n_topics
    jt = _topic_counts(tix, judged, T)
    rt = _topic_counts(tix, relevant, T)
    return pd.DataFrame({"version": versions, "depth": list(ks) + [np.nan],
                         "judged": jt.sum(axis=0).astype(np.int64), "relevant": rt.sum(axis=0).astype(np.int64),
                         "judged_per_topic": jt.mean(axis=0), "relevant_per_topic": rt.mean(axis=0),
                         "topics_without_relevant": (rt == 0).sum(axis=0).astype(np.int64),
                         "mean_residual": residual.mean(axis=(0, 1))})


def _agreement_tables(scores: dict[str, np.ndarray], residual: np.ndarray, ks: np.ndarray, run_names: list[str],
                      stat: dict) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame]:
    """Per measure against the reference (the last version): the TP / FP / FN / TN counts per depth
    (Yang 2019, Table 4.6), the consistency over the depths (Fig. 4.7; None with one depth) and
    the score movement against the residual (Tables 4.7-4.8)."""
    D = len(ks)
    agree_rows, cons_rows, move_rows = [], [], []
    for lab, s in scores.items():
        a = discrimination_agreement(s[:, :, :D], s[:, :, D], versions=list(ks), names=run_names,
                                     check_direction=True, **stat)
        counts = a.groupby(["version", "outcome"], observed=False).size().unstack("outcome") \
            .reindex(columns=["TP", "FP", "FN", "TN"]).fillna(0).astype(np.int64)
        counts["reversed"] = a.groupby("version")["reversed"].sum().astype(np.int64)
        counts["ratio"] = (counts["TP"] + counts["FP"]) / counts[["TP", "FP", "FN", "TN"]].sum(axis=1)
        counts = counts.reset_index().rename(columns={"version": "depth"})
        counts.insert(0, "measure", lab)
        agree_rows.append(counts)
        if D >= 2:
            c = consistent_discrimination(s[:, :, :D], versions=list(ks), names=run_names, **stat)
            c = c.assign(tau=c["tau"].round(6))
            h = c.groupby(["tau", "consistency"], observed=False, dropna=False).size().rename("count").reset_index()
            h.insert(0, "measure", lab)
            cons_rows.append(h)
        move_rows.extend(_movement_rows(lab, s, residual, list(ks)))
    consistency = pd.concat(cons_rows, ignore_index=True) if cons_rows else None
    return pd.concat(agree_rows, ignore_index=True), consistency, pd.DataFrame(move_rows)


def _topic_counts(topic_index: np.ndarray, mask: np.ndarray, n_topics: int) -> np.ndarray:
    """Per-topic column sums of a boolean (rows x versions) matrix -> (topics, versions)."""
    csum = np.zeros((mask.shape[0] + 1, mask.shape[1]))
    np.cumsum(mask, axis=0, out=csum[1:])
    start = np.searchsorted(topic_index, np.arange(n_topics + 1))
    return csum[start[1:]] - csum[start[:-1]]
