"""Phi matching: the RBP whose system ordering is most like a recall-based metric's (Yang 2019, Ch. 4).

Recall-based metrics (AP, nDCG) have no residual: judging an unjudged document can move them up
*or down*, because it may also raise the number of relevant documents R.  Yang (2019, PhD thesis,
Ch. 4; Moffat, Scholer & Yang 2018, JDIQ 10(3)) proposes to borrow the residual of the RBP whose
system ordering is most like the metric's.  This module provides:

* :func:`match_phi` / :func:`match_phi_many` -- the persistence phi (the thesis's name for RBP's
  persistence ``p``) whose RBP system ordering agrees best (Kendall's tau_b, or RBO) with AP's,
  nDCG's or any other metric's, over a collection and per topic (thesis Sec. 4.4-4.5, Fig.
  4.2-4.4, Table 4.2), with the tau-against-phi curve and :func:`plot_phi_match`.  One
  alignment, one ``AlignedRuns.evaluate`` call for every phi.
* :func:`scores_with_residuals` and :func:`add_residual_columns` -- AP / nDCG scores with the
  residual of the matched RBP beside them (the thesis's Sec. 4.10 recommendation), from runs or
  added to ``pt.Experiment`` output.  Inside ``pt.Experiment`` itself, use
  ``RBPResidual(p=match.phi)`` (:meth:`PhiMatch.residual_measure`).

Conventions: phi is RBP's persistence ``p`` (keyword arguments that take one are called ``p``);
its expected viewing depth is ``1 / (1 - phi)``.  "Residual" is RBP's (Moffat & Zobel 2008): the
weight of the unjudged ranks and of the ranks after the run, i.e. the most the score could rise.
It is an optimistic bound, not a confidence interval (thesis Sec. 4.3).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import _plot
from .._vocab import CORRELATIONS, Correlation, TiePolicy
from .._validation import InputError, check_choice, check_probability
from ..engine import AlignedRuns, MeasureSpec
from ..measures import RBPResidual, to_spec
from ..stats import kendall_tau, rbo
from ._common import RBO_P, aligned_runs, labelled_spec

__all__ = ["DEFAULT_GRID", "FINE_GRID", "DEPTH_GRID", "CORRELATIONS", "phi_grid",
           "PhiMatch", "match_phi", "match_phi_many", "plot_phi_match",
           "scores_with_residuals", "add_residual_columns"]

#: phi for the expected depths 2, 5, 10, 20, 50, 100, 200 of the thesis's Fig. 4.1 / 4.2.
DEPTH_GRID: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995)
#: 0.50, 0.51, ..., 0.99, 0.995, 0.999: the default grid (52 values).
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.5 + 0.01 * i, 2) for i in range(50)) + (0.995, 0.999)
#: 0.500, 0.501, ..., 0.999: the per-topic search of the thesis (Sec. 4.5; 500 values).
FINE_GRID: tuple[float, ...] = tuple(round(0.5 + 0.001 * i, 3) for i in range(500))


def phi_grid(grid: Any) -> np.ndarray:
    """A sorted array of distinct persistences strictly inside (0, 1)."""
    if grid is None:
        return np.asarray(DEFAULT_GRID, dtype=float)
    try:
        g = np.asarray(grid, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(f"grid must be a sequence of numbers in (0, 1), got {grid!r}") from None
    if g.size == 0:
        raise InputError("grid is empty: give at least one persistence phi in (0, 1), e.g. DEFAULT_GRID")
    bad = ~np.isfinite(g) | (g <= 0.0) | (g >= 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"grid value at index {i} is {grid[i] if hasattr(grid, '__getitem__') else g[i]!r}; "
                         "every phi must be strictly between 0 and 1")
    s = np.sort(g)
    if (s[1:] == s[:-1]).any():
        raise InputError(f"grid lists phi={s[1:][s[1:] == s[:-1]][0]!r} more than once; give distinct values")
    return s



def _rel_args(rel: Any, max_rel: Any) -> tuple[float, float | None]:
    try:
        r = float(rel)
    except (TypeError, ValueError):
        raise InputError(f"rel must be a number (labels >= rel are relevant), got {rel!r}") from None
    if not math.isfinite(r):
        raise InputError(f"rel must be finite, got {rel!r}")
    if max_rel is None:
        return r, None
    try:
        m = float(max_rel)
    except (TypeError, ValueError):
        raise InputError(f"max_rel must be a positive number or None, got {max_rel!r}") from None
    if not m > 0:
        raise InputError(f"max_rel must be positive, got {max_rel!r}")
    return r, m



def _reference_from_frame(frame: pd.DataFrame, aligned: AlignedRuns) -> tuple[str, np.ndarray]:
    """(label, systems x topics array) from a pt.Experiment(perquery=True)-style frame."""
    missing = [c for c in ("name", "qid", "value") if c not in frame.columns]
    if missing:
        raise InputError(f"a reference frame needs columns name, qid, value (pt.Experiment(perquery=True) "
                         f"layout); column(s) {missing} are missing")
    label = "reference"
    if "measure" in frame.columns:
        kinds = pd.unique(frame["measure"].astype(str))
        if len(kinds) != 1:
            raise InputError(f"a reference frame must hold one measure; column 'measure' has {list(kinds)[:5]}")
        label = str(kinds[0])
    values = pd.to_numeric(frame["value"], errors="coerce")
    bad = values.isna() | ~np.isfinite(values.fillna(0.0))
    if bad.any():
        row = bad[bad].index[0]
        raise InputError(f"reference frame column 'value', row {row}: {frame.loc[row, 'value']!r} is not a finite number")
    keys = pd.MultiIndex.from_arrays([frame["name"].astype(str), frame["qid"].astype(str)])
    if keys.has_duplicates:
        name, qid = keys[keys.duplicated()][0]
        raise InputError(f"reference frame has two values for name={name!r}, qid={qid!r}")
    series = pd.Series(values.to_numpy(dtype=float), index=keys)
    want = pd.MultiIndex.from_product([aligned.run_names, aligned.topics])
    got = series.reindex(want)
    if got.isna().any():
        name, qid = got.index[got.isna().to_numpy()][0]
        raise InputError(f"reference frame has no value for name={name!r}, qid={qid!r}; it needs every run "
                         f"({aligned.n_runs}) on every qrels topic ({aligned.n_topics})")
    return label, got.to_numpy().reshape(aligned.n_runs, aligned.n_topics)


def _references(measures: Any, aligned: AlignedRuns) -> list[tuple[str, MeasureSpec | None, np.ndarray | None]]:
    items = [measures] if isinstance(measures, (str, MeasureSpec, pd.DataFrame)) or not isinstance(
        measures, Sequence) else list(measures)
    if not items:
        raise InputError("no reference measure given (e.g. measures=['AP', 'nDCG'])")
    out = []
    for m in items:
        if isinstance(m, pd.DataFrame):
            label, arr = _reference_from_frame(m, aligned)
            out.append((label, None, arr))
        else:
            label, spec = labelled_spec(m)
            out.append((label, spec, None))
    labels = [o[0] for o in out]
    if len(set(labels)) != len(labels):
        raise InputError(f"reference measures must be distinct, got {labels}")
    return out


def _correlate(ref: np.ndarray, rbp: np.ndarray, correlation: str, rbo_p: float) -> np.ndarray:
    """Correlation of each RBP ordering with the reference, batched over leading axes."""
    x = np.broadcast_to(ref, rbp.shape)
    if correlation == "kendall":
        return np.asarray(kendall_tau(x, rbp, variant="b"), dtype=float)
    # RBO is defined for strict orderings; equal scores are ordered by run position in both
    return np.asarray(rbo(x, rbp, p=rbo_p, variant="ext", ties="first"), dtype=float)


def _first_max(c: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Index of the first (smallest-phi) maximum along ``axis`` ignoring NaN, and whether any was finite."""
    finite = ~np.isnan(c)
    idx = np.argmax(np.where(finite, c, -np.inf), axis=axis)
    return idx, finite.any(axis=axis)



# ---------------------------------------------------------------------------------------------
# matching phi

@dataclass
class PhiMatch:
    """The RBP persistence that best reproduces a metric's system ordering (Yang 2019, Sec. 4.4-4.5).

    Attributes:
        measure: the reference metric.
        correlation: ``"kendall"`` (tau_b) or ``"rbo"``, the agreement that was maximised.
        phi: the matched persistence (the smallest phi among equal maxima).
        corr: the maximised correlation.
        residual: mean RBP residual at ``phi`` over runs and topics: the uncertainty proxy of
            the metric (thesis Fig. 4.2, x-axis; A17 averaging).
        curve: one row per grid phi: ``phi, depth`` (= 1/(1-phi)), ``tau`` (and ``rbo`` when
            matching by RBO), ``mean_rbp, mean_residual``.
        per_topic: with ``per_topic=True``, one row per topic: ``qid, R`` (relevant judgments),
            ``phi`` (the topic's matched phi, NaN when the orderings are constant), ``corr``,
            ``mean_residual`` (at the topic's phi).
        summary: with ``per_topic=True``: ``tau_R_phi`` and ``p_value`` (Kendall's tau_b between
            R and the per-topic phi, Table 4.2), ``mean_phi``, ``n_topics``, ``n_undefined``
            and the counts of maximised correlations ``below_0.8``, ``0.8_to_0.9``, ``at_least_0.9``.
        n_runs: systems compared.
        rel, max_rel: the RBP gains used (binary ``label >= rel`` or graded).
    """

    measure: str
    correlation: str
    phi: float
    corr: float
    residual: float
    curve: pd.DataFrame
    per_topic: pd.DataFrame | None = None
    summary: dict | None = None
    n_runs: int = 0
    rel: float = 1.0
    max_rel: float | None = None

    @property
    def depth(self) -> float:
        """Expected viewing depth ``1 / (1 - phi)`` of the matched RBP."""
        return 1.0 / (1.0 - self.phi)

    def residual_measure(self) -> Any:
        """``RBPResidual(p=phi)`` as an ir_measures measure, for ``pt.Experiment(eval_metrics=...)``."""
        params: dict[str, Any] = {"p": self.phi}
        if self.max_rel is not None:
            params["max_rel"] = self.max_rel
        elif self.rel != 1.0:
            params["rel"] = int(self.rel) if float(self.rel).is_integer() else self.rel
        return RBPResidual(**params)

    def plot(self, save: str | Path | None = None) -> Any:
        """The correlation-against-phi curve (and the per-topic phi against R) as a Figure, written to
        ``save`` when given; see :func:`plot_phi_match`."""
        return plot_phi_match(self, save)

    def to_text(self) -> str:
        """A plain-text report: the match, the curve (``*`` marks the match) and the per-topic summary."""
        name = "Kendall tau_b" if self.correlation == "kendall" else "RBO"
        lines = [f"{self.measure}: matched phi {self.phi:g} (expected depth {self.depth:.1f}), {name} "
                 f"{self.corr:.4f} over {self.n_runs} runs; mean RBP residual at phi {self.residual:.4f}"]
        cols = ["phi", "depth", "tau"] + (["rbo"] if "rbo" in self.curve else []) + ["mean_rbp", "mean_residual"]
        lines.append("  " + "  ".join(f"{c:>13}" for c in cols))
        for r in self.curve[cols].itertuples(index=False):
            mark = "*" if r[0] == self.phi else " "
            lines.append(mark + " " + "  ".join(f"{v:>13.4f}" if c != "phi" else f"{v:>13g}"
                                                for c, v in zip(cols, r)))
        if self.summary is not None:
            s = self.summary
            lines.append(f"per topic: mean phi {s['mean_phi']:.4f} over {s['n_topics']} topics "
                         f"({s['n_undefined']} undefined); tau_b(R, phi) {s['tau_R_phi']:.3f} "
                         f"(p {s['p_value']:.3g}); max {name} < 0.8: {s['below_0.8']}, 0.8-0.9: "
                         f"{s['0.8_to_0.9']}, >= 0.9: {s['at_least_0.9']}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _evaluate_grid(aligned: AlignedRuns, refs: list, grid: np.ndarray, rel: float,
                   max_rel: float | None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Reference scores (runs x topics each), RBP base and residual (G x runs x topics): one call."""
    base = [MeasureSpec("RBP", p=float(p), rel=rel, max_rel=max_rel) for p in grid]
    resid = [MeasureSpec("RBP", "residual", p=float(p), rel=rel, max_rel=max_rel) for p in grid]
    ref_specs = [s for _, s, _ in refs if s is not None]
    out = aligned.evaluate(list(dict.fromkeys(ref_specs + base + resid)))
    ref_values = [arr if spec is None else out[spec][:, :, 0] for _, spec, arr in refs]
    for (label, _, _), v in zip(refs, ref_values):
        if np.isnan(v).any():
            raise InputError(f"reference measure {label} is undefined (NaN) for some run and topic; "
                             "use a measure defined everywhere (e.g. RBP rather than RBPProjected)")
    return (ref_values, np.stack([out[s][:, :, 0] for s in base]),
            np.stack([out[s][:, :, 0] for s in resid]))


def _relevant_per_topic(aligned: AlignedRuns, rel: float) -> np.ndarray:
    lab = aligned.table.labels
    with np.errstate(invalid="ignore"):
        is_rel = (lab >= rel) & ~np.isnan(lab)
    return np.bincount(aligned.table.topic_index, weights=is_rel.astype(float),
                       minlength=aligned.n_topics).astype(np.int64)


def _match(label: str, ref: np.ndarray, rbp: np.ndarray, res: np.ndarray, grid: np.ndarray,
           aligned: AlignedRuns, per_topic: bool, correlation: str, rbo_p: float, rel: float,
           max_rel: float | None) -> PhiMatch:
    """Collection-level (and per-topic) matching from evaluated arrays (thesis Sec. 4.4, 4.5)."""
    sys_ref = ref.mean(axis=1)                               # (S,)  arithmetic mean over topics
    sys_rbp = rbp.mean(axis=2)                               # (G, S)
    tau = _correlate(sys_ref, sys_rbp, "kendall", rbo_p)
    corr = tau if correlation == "kendall" else _correlate(sys_ref, sys_rbp, "rbo", rbo_p)
    best, ok = _first_max(corr)
    if not ok:
        raise InputError(f"{label}: the system ordering is constant (every run has the same mean score), so "
                         "no phi can be matched to it")
    mean_res = res.mean(axis=(1, 2))
    curve = pd.DataFrame({"phi": grid, "depth": 1.0 / (1.0 - grid), "tau": tau})
    if correlation == "rbo":
        curve["rbo"] = corr
    curve["mean_rbp"] = rbp.mean(axis=(1, 2))
    curve["mean_residual"] = mean_res
    b = int(best)
    match = PhiMatch(label, correlation, float(grid[b]), float(corr[b]), float(mean_res[b]), curve,
                     n_runs=aligned.n_runs, rel=rel, max_rel=max_rel)
    if per_topic:
        c = _correlate(ref.T, np.transpose(rbp, (0, 2, 1)), correlation, rbo_p)   # (G, T)
        idx, ok_t = _first_max(c)
        t = np.arange(aligned.n_topics)
        phi_t = np.where(ok_t, grid[idx], np.nan)
        corr_t = np.where(ok_t, c[idx, t], np.nan)
        res_t = np.where(ok_t, res[idx, :, t].mean(axis=1), np.nan)
        n_rel = _relevant_per_topic(aligned, rel)
        match.per_topic = pd.DataFrame({"qid": aligned.topics, "R": n_rel, "phi": phi_t, "corr": corr_t,
                                        "mean_residual": res_t})
        v = ok_t
        if v.sum() >= 2 and np.ptp(n_rel[v]) > 0 and np.ptp(phi_t[v]) > 0:
            from scipy import stats as _st   # on first use: scipy.stats is slow to import
            kt = _st.kendalltau(n_rel[v], phi_t[v])
            tau_rp, p_rp = float(kt.statistic), float(kt.pvalue)
        else:
            tau_rp, p_rp = float("nan"), float("nan")
        cv = corr_t[v]
        match.summary = {
            "tau_R_phi": tau_rp, "p_value": p_rp,
            "mean_phi": float(phi_t[v].mean()) if v.any() else float("nan"),
            "n_topics": int(aligned.n_topics), "n_undefined": int((~v).sum()),
            "below_0.8": int((cv < 0.8).sum()), "0.8_to_0.9": int(((cv >= 0.8) & (cv < 0.9)).sum()),
            "at_least_0.9": int((cv >= 0.9).sum()),
        }
    return match


def match_phi_many(runs: Any, qrels: Any = None, measures: Any = ("AP", "nDCG"), grid: Any = None, *,
                   per_topic: bool = False, correlation: Correlation | Sequence[Correlation] = "kendall",
                   rbo_p: float = RBO_P, rel: float = 1.0, max_rel: float | None = None,
                   ties: TiePolicy = "trec_eval") -> dict[str, PhiMatch] | dict[str, dict[str, PhiMatch]]:
    """Match RBP's persistence to several reference metrics with one alignment and one evaluation.

    Yang (2019), Sec. 4.4 (Fig. 4.2) and Sec. 4.5 (Fig. 4.3/4.4, Table 4.2): for every phi of
    ``grid``, RBP(phi) orders the systems by their mean score over topics; ``phi_M`` is the phi
    whose ordering agrees best with the reference metric M's (Kendall's tau_b by default, or
    RBO with persistence ``rbo_p``).  Ties between equal maxima go to the smallest
    phi.  ``per_topic=True`` also matches each topic on its own (systems ordered by their score
    on that topic) and relates the matched phi to the topic's number of relevant documents R.
    All phi are evaluated in a single ``AlignedRuns.evaluate`` call on one alignment.

    Args:
        runs: ``{name: frame}``, a directory or list of run files, or an :class:`AlignedRuns`
            (then ``qrels`` is not needed).
        qrels: the judgments (frame, file, ...), unless ``runs`` is aligned.
        measures: reference metrics: ir_measures names or objects (``"AP"``, ``"nDCG@10"``,
            ``"RR"``, ``"RBP(p=0.9)"``...), engine ``MeasureSpec`` objects, or
            ``pt.Experiment(perquery=True)`` frames (columns ``name, qid, value``; one measure) for
            metrics the engine does not compute (e.g. ``Rprec``, ``R@1000``).
        grid: persistences to try, strictly inside (0, 1) (default :data:`DEFAULT_GRID`;
            :data:`FINE_GRID` is the thesis's per-topic search, :data:`DEPTH_GRID` its Fig. 4.2).
        per_topic: also match each topic separately.
        correlation: ``"kendall"`` (tau_b) or ``"rbo"`` (extrapolated RBO; equal scores are
            ordered by run position in both orderings); or a sequence of them, e.g.
            ``("kendall", "rbo")``: ``{correlation: {measure label: PhiMatch}}``, every
            correlation's matches from the one evaluation of the grid.
        rbo_p: RBO persistence (default :data:`RBO_P` = 0.9, the package's: Webber et al. 2010
            put ~86% of the weight on the top 10; the thesis used 0.98 A4: pass
            ``rbo_p=0.98`` to reproduce it).
        rel: RBP counts ``label >= rel`` as relevant (binary gains) ...
        max_rel: ... unless graded gains ``min(label, max_rel) / max_rel`` are asked for.
        ties: tie policy of the alignment (ignored for an AlignedRuns).

    Returns:
        ``{measure label: PhiMatch}`` in the order given.

    Raises:
        InputError: empty grid, phi outside (0, 1), fewer than two runs, a constant reference
            ordering, unknown options.
    """
    g = phi_grid(grid)
    several = isinstance(correlation, (list, tuple))
    corrs = [check_choice("correlation", c, CORRELATIONS) for c in (correlation if several else [correlation])]
    if not corrs:
        raise InputError("argument 'correlation': expected 'kendall', 'rbo' or a sequence of them, got none")
    rbo_p = check_probability("rbo_p", rbo_p)
    rel, max_rel = _rel_args(rel, max_rel)
    aligned = aligned_runs(runs, qrels, ties)
    if aligned.n_runs < 2:
        raise InputError(f"phi matching compares system orderings and needs at least 2 runs, got {aligned.n_runs}")
    refs = _references(measures, aligned)
    ref_values, rbp, res = _evaluate_grid(aligned, refs, g, rel, max_rel)
    out = {c: {label: _match(label, v, rbp, res, g, aligned, per_topic, c, rbo_p, rel, max_rel)
               for (label, _, _), v in zip(refs, ref_values)} for c in corrs}
    return out if several else out[corrs[0]]


def match_phi(runs: Any, qrels: Any = None, measure: Any = "AP", grid: Any = None, *,
              per_topic: bool = False, correlation: Correlation = "kendall", rbo_p: float = RBO_P,
              rel: float = 1.0, max_rel: float | None = None, ties: TiePolicy = "trec_eval") -> PhiMatch:
    """The RBP persistence whose system ordering best matches ``measure``'s (Yang 2019, Sec. 4.4-4.5).

    One reference metric; see :func:`match_phi_many` for the arguments and the procedure.

    Example::

        m = match_phi(runs, qrels, "AP")
        m.phi, m.corr, m.residual        # matched phi, its tau_b, mean RBP residual there
        m.curve                          # tau against phi
    """
    if isinstance(measure, Sequence) and not isinstance(measure, str):
        raise InputError("match_phi takes one measure; use match_phi_many for several")
    return next(iter(match_phi_many(runs, qrels, [measure], grid, per_topic=per_topic, correlation=correlation,
                                    rbo_p=rbo_p, rel=rel, max_rel=max_rel, ties=ties).values()))



def plot_phi_match(matches: PhiMatch | Sequence[PhiMatch] | Mapping[str, PhiMatch],
                   save: str | Path | None = None) -> Any:
    """Plot correlation against phi for one or more matches (Yang 2019, Fig. 4.2; Fig. 4.3/4.4).

    Left panel: the correlation of each reference metric's system ordering with RBP(phi)'s
    against the expected depth ``1/(1-phi)`` (log scale), the matched phi marked.  For matches
    made with ``per_topic=True``, one more panel each: the topic's matched phi against its
    number of relevant documents R, coloured by the maximised correlation.

    Args:
        matches: a :class:`PhiMatch`, a list of them, or the dict of :func:`match_phi_many`.
        save: write the figure here (a path; optional).

    Returns:
        The matplotlib ``Figure``.
    """
    if isinstance(matches, PhiMatch):
        items = [matches]
    elif isinstance(matches, Mapping):
        items = list(matches.values())
    else:
        items = list(matches)
    if not items or not all(isinstance(m, PhiMatch) for m in items):
        raise InputError("plot_phi_match needs one or more PhiMatch results")
    topical = [m for m in items if m.per_topic is not None]
    fig = _plot.figure(5.2 + 4.2 * len(topical), 3.8)
    axes = fig.subplots(1, 1 + len(topical), squeeze=False)[0]
    ax = axes[0]
    for m in items:
        col = "tau" if m.correlation == "kendall" else "rbo"
        line, = ax.plot(m.curve["depth"], m.curve[col], marker=".", ms=3, label=f"{m.measure} (phi* {m.phi:g})")
        ax.plot([m.depth], [m.corr], "o", ms=8, mfc="none", color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("expected depth 1/(1-phi) of RBP")
    ax.set_ylabel("Kendall tau_b" if items[0].correlation == "kendall" else "RBO")
    ax.set_title("system ordering: RBP(phi) vs reference", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    # phi on the top axis at the depths 2, 5, 10, 20, 50, 100, 200, 1000 that the plot spans
    lo, hi = ax.get_xlim()
    depths = [d for d in (2, 5, 10, 20, 50, 100, 200, 1000) if lo <= d <= hi]
    top = ax.twiny()
    top.set_xscale("log")
    top.set_xlim(lo, hi)
    top.set_xticks(depths, [f"{1 - 1 / d:g}" for d in depths], fontsize=7)
    top.minorticks_off()
    top.set_xlabel("phi", fontsize=8)
    for ax, m in zip(axes[1:], topical):
        pt_ = m.per_topic.dropna(subset=["phi"])
        sc = ax.scatter(pt_["R"], pt_["phi"], c=pt_["corr"], cmap="viridis", s=18)
        fig.colorbar(sc, ax=ax, label="max " + ("tau_b" if m.correlation == "kendall" else "RBO"))
        ax.set_xlabel("R (relevant judgments of the topic)")
        ax.set_ylabel("matched phi")
        s = m.summary or {}
        ax.set_title(f"{m.measure} per topic: tau_b(R, phi) = {s.get('tau_R_phi', float('nan')):.2f}", fontsize=9)
        ax.grid(alpha=0.3)
    return _plot.save(fig, save)



# ---------------------------------------------------------------------------------------------
# scores with the matched residual

def _resolve_phi(phi: Any, labels: list[str]) -> dict[str, float] | None:
    if phi is None:
        return None
    if isinstance(phi, Mapping):
        unknown = [k for k in phi if str(k) not in labels]
        if unknown:
            raise InputError(f"p has entries for {unknown} that are not among the measures {labels}")
        missing = [m for m in labels if m not in {str(k) for k in phi}]
        if missing:
            raise InputError(f"p gives no persistence for measure(s) {missing}; give one per measure or a number")
        return {str(k): check_probability(f"p[{k!r}]", v) for k, v in phi.items()}
    if isinstance(phi, PhiMatch):
        return {m: phi.phi for m in labels}
    return {m: check_probability("p", phi) for m in labels}


def _scores_arrays(aligned: AlignedRuns, measures: Any, phi: Any, grid: Any, correlation: str, rbo_p: float,
                   rel: float, max_rel: float | None) -> tuple[list[str], list[np.ndarray], dict, dict, dict]:
    """Per measure: values, matched phi, RBP base and residual there (runs x topics); one evaluate call."""
    refs = _references(measures, aligned)
    labels = [r[0] for r in refs]
    fixed = _resolve_phi(phi, labels)
    if fixed is None:
        g = phi_grid(grid)
        if aligned.n_runs < 2:
            raise InputError("matching phi needs at least 2 runs; with one run give p= explicitly (e.g. 0.98)")
        ref_values, rbp, res = _evaluate_grid(aligned, refs, g, rel, max_rel)
        chosen = {lab: _match(lab, v, rbp, res, g, aligned, False, correlation, rbo_p, rel, max_rel).phi
                  for lab, v in zip(labels, ref_values)}
        index = {float(p): i for i, p in enumerate(g)}
        base = {lab: rbp[index[chosen[lab]]] for lab in labels}
        resid = {lab: res[index[chosen[lab]]] for lab in labels}
    else:
        g = np.unique(np.asarray(list(fixed.values()), dtype=float))
        ref_values, rbp, res = _evaluate_grid(aligned, refs, g, rel, max_rel)
        index = {float(p): i for i, p in enumerate(g)}
        chosen = fixed
        base = {lab: rbp[index[fixed[lab]]] for lab in labels}
        resid = {lab: res[index[fixed[lab]]] for lab in labels}
    return labels, ref_values, chosen, base, resid


def scores_with_residuals(runs: Any, qrels: Any = None, measures: Any = ("AP", "nDCG"), p: Any = None, *,
                          perquery: bool = False, grid: Any = None, correlation: Correlation = "kendall",
                          rbo_p: float = RBO_P, rel: float = 1.0, max_rel: float | None = None,
                          ties: TiePolicy = "trec_eval") -> pd.DataFrame:
    """AP / nDCG (any metric) with the residual of the matched RBP beside each score.

    Yang (2019), Sec. 4.4 and 4.10: a recall-based metric has no residual of its own, so report
    the residual of RBP(phi_M), the RBP most like the metric, as its measurement uncertainty
    (an optimistic bound on how far unjudged documents could move an RBP-like score, not an
    interval for the metric itself).  ``p=None`` matches phi per measure on these runs
    (:func:`match_phi_many`); a number uses it for every measure (the thesis recommends about
    0.98 for AP and nDCG); a dict gives one per measure.  One alignment, one evaluation.

    Args:
        runs: ``{name: frame}``, a directory or files of runs, or an :class:`AlignedRuns`.
        qrels: the judgments, unless ``runs`` is aligned.
        measures: metrics (ir_measures names or objects, or MeasureSpec).
        p: the RBP persistence phi: None (match), a number in (0, 1), a :class:`PhiMatch`, or
            ``{measure: p}``.
        perquery: one row per (run, topic) instead of the mean over the qrels' topics.
        grid, correlation, rbo_p, rel, max_rel: as in :func:`match_phi_many`.
        ties: tie policy of the alignment.

    Returns:
        Frame ``name, [qid,] measure, value, phi, base, residual``: the metric's value, the
        persistence phi used, RBP(phi) (``base``: unjudged = non-relevant) and its residual.  A
        topic a run does not answer scores 0 with residual 1 (``trec_eval -c``).
        ``frame.attrs["phi"]`` is ``{measure: phi}``.
    """
    correlation = check_choice("correlation", correlation, CORRELATIONS)
    rbo_p = check_probability("rbo_p", rbo_p)
    rel, max_rel = _rel_args(rel, max_rel)
    aligned = aligned_runs(runs, qrels, ties)
    labels, values, chosen, base, resid = _scores_arrays(aligned, measures, p, grid, correlation, rbo_p,
                                                         rel, max_rel)
    frames = []
    for lab, v in zip(labels, values):
        if perquery:
            frames.append(pd.DataFrame({
                "name": np.repeat(np.asarray(aligned.run_names, dtype=object), aligned.n_topics),
                "qid": np.tile(np.asarray(aligned.topics, dtype=object), aligned.n_runs),
                "measure": lab, "value": v.ravel(), "phi": chosen[lab], "base": base[lab].ravel(),
                "residual": resid[lab].ravel()}))
        else:
            frames.append(pd.DataFrame({
                "name": aligned.run_names, "measure": lab, "value": v.mean(axis=1), "phi": chosen[lab],
                "base": base[lab].mean(axis=1), "residual": resid[lab].mean(axis=1)}))
    out = pd.concat(frames, ignore_index=True)
    keys = ["name", "qid"] if perquery else ["name"]
    run_order = {n: i for i, n in enumerate(aligned.run_names)}
    out = out.sort_values(keys[:1], key=lambda s: s.map(run_order), kind="stable").reset_index(drop=True)
    out.attrs["phi"] = dict(chosen)
    return out


_MATCHABLE = ("AP", "nDCG", "P", "RR", "DCG")


def add_residual_columns(experiment: pd.DataFrame, runs: Any, qrels: Any = None, p: Any = None, *,
                         measures: Sequence[str] | None = None, grid: Any = None, correlation: Correlation = "kendall",
                         rbo_p: float = RBO_P, rel: float = 1.0, max_rel: float | None = None,
                         ties: TiePolicy = "trec_eval") -> pd.DataFrame:
    """``pt.Experiment`` output with the matched-RBP residual of each AP / nDCG / P / RR column.

    Yang (2019), Sec. 4.10.  ``runs`` are the systems' result frames (``{name: frame}`` with
    the names of the experiment's ``name`` column; for transformers, their ``.transform(topics)``
    output).  Wide output (``pt.Experiment(...)``) gets, after each matchable measure column
    ``M``, a column ``"M RBPResidual(p=phi)"`` holding the mean residual over the qrels' topics;
    per-query output (``perquery=True``: ``name, qid, measure, value``) gets columns ``phi`` and
    ``residual``, as :func:`pyterrier_noise.measures.evaluate` names it (NaN on rows of other
    measures).  Every input column and row is kept.

    Args:
        experiment: a ``pt.Experiment`` result frame.
        runs: the systems' result frames, or an :class:`AlignedRuns`.
        qrels: the judgments given to ``pt.Experiment``.
        p: the RBP persistence phi, as in :func:`scores_with_residuals` (None: match on these
            runs).
        measures: the columns / measures to annotate (default: every AP, nDCG, P, RR, DCG measure).
        grid, correlation, rbo_p, rel, max_rel, ties: as in :func:`scores_with_residuals`.

    Returns:
        A copy of ``experiment`` with the residual columns.
    """
    if not isinstance(experiment, pd.DataFrame) or "name" not in experiment.columns:
        raise InputError("experiment must be a pt.Experiment result frame with a 'name' column")
    perquery = {"qid", "measure", "value"} <= set(experiment.columns)
    candidates = (list(pd.unique(experiment["measure"].astype(str))) if perquery
                  else [c for c in experiment.columns if c != "name"])
    if measures is None:
        chosen = []
        for c in candidates:
            try:
                spec, _ = to_spec(str(c))
            except InputError:
                continue            # columns such as "AP +", "AP p-value", "mrt"
            if spec.family in _MATCHABLE and spec.component == "value":
                chosen.append(str(c))
        if not chosen:
            raise InputError(f"experiment has no AP, nDCG, P, RR or DCG measure to annotate (columns / measures: "
                             f"{[str(c) for c in candidates][:8]})")
    else:
        chosen = [str(m) for m in measures]
        unknown = [m for m in chosen if m not in [str(c) for c in candidates]]
        if unknown:
            raise InputError(f"measure(s) {unknown} are not in the experiment (it has {[str(c) for c in candidates][:8]})")
    aligned = aligned_runs(runs, qrels, ties)
    names = set(aligned.run_names)
    absent = experiment.loc[~experiment["name"].astype(str).isin(names), "name"]
    if len(absent):
        row = absent.index[0]
        raise InputError(f"experiment column 'name', row {row}: system {absent.iloc[0]!r} is not among the runs "
                         f"given ({sorted(names)[:5]}); pass each system's results under its experiment name")
    table = scores_with_residuals(aligned, None, chosen, p, perquery=perquery, grid=grid, correlation=correlation,
                                  rbo_p=rbo_p, rel=rel, max_rel=max_rel)
    out = experiment.copy()
    if perquery:
        key = table.set_index(["name", "qid", "measure"])
        idx = pd.MultiIndex.from_arrays([out["name"].astype(str), out["qid"].astype(str), out["measure"].astype(str)])
        hit = key.reindex(idx)
        out["phi"] = hit["phi"].to_numpy()
        out["residual"] = hit["residual"].to_numpy()
        return out
    for m in chosen:
        sub = table[table["measure"] == m].set_index("name")
        col = f"{m} RBPResidual(p={table.attrs['phi'][m]:g})"
        values = sub["residual"].reindex(out["name"].astype(str)).to_numpy()
        out.insert(list(out.columns).index(m) + 1, col, values)
    return out

