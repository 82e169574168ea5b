"""Uncertainty of recall-based metrics: matched RBP residuals, exact AP bounds, pool-depth studies.

Recall-based metrics (AP, nDCG) have no residual: judging an unjudged document can move them up
*or down*, because it may also raise the number of relevant documents R.  Yang (2019, PhD thesis,
Ch. 4; Moffat, Scholer & Yang 2018, JDIQ 10(3)) proposes to borrow the residual of the RBP whose
system ordering is most like the metric's, and studies how scores and significance decisions
move when the pool is made shallower.  This module provides:

* :func:`match_phi` / :func:`match_phi_many` -- the persistence phi whose RBP system ordering
  agrees best (Kendall's tau_b, or RBO) with AP's, nDCG's or any other metric's, over a collection
  and per topic (thesis Sec. 4.4-4.5, Fig. 4.2-4.4, Table 4.2), with the tau-against-phi curve
  and :func:`plot_phi_match`.  One alignment, one ``AlignedRuns.evaluate`` call for every phi.
* :func:`scores_with_residuals` and :func:`add_residual_columns` -- AP / nDCG scores with the
  residual of the matched RBP beside them (the thesis's Sec. 4.10 recommendation), from runs or
  added to ``pt.Experiment`` output.  Inside ``pt.Experiment`` itself, use
  ``RBPResidual(p=match.phi)`` (:meth:`PhiMatch.residual_measure`).
* :func:`ap_bounds` -- exact AP range over every completion of a few unjudged documents
  (thesis Sec. 4.1 worked example), vectorised over the ``2^u`` completions.
* :func:`pool_entry_depth`, :func:`depth_labels`, :func:`pool_multiplicity`,
  :func:`multiplicity_table` -- the Depth@k reduction of the qrels (thesis Sec. 4.6) for many
  depths at once as one label matrix, and :func:`depth_experiment`, the Ch. 4 study of
  discrimination, consistent discrimination and residual-versus-score movement across depths.

Conventions: phi is RBP's persistence ``p``; its expected viewing depth is ``1 / (1 - phi)``.
"Residual" is RBP's (Moffat & Zobel 2008): the weight of the unjudged ranks and of the ranks
after the run, i.e. the most the score could rise.  It is an optimistic bound, not a confidence
interval (thesis Sec. 4.3).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as _st

from ..stats.agreement import (consistent_discrimination, discrimination_agreement, discrimination_ratio,
                        kendall_tau, rbo)
from ..engine.align import TIE_POLICIES, AlignedRuns, MeasureSpec
from .._validation import InputError, check_choice, check_int, check_probability

__all__ = [
    "DEFAULT_GRID", "FINE_GRID", "DEPTH_GRID", "MAX_UNJUDGED",
    "PhiMatch", "match_phi", "match_phi_many", "plot_phi_match",
    "scores_with_residuals", "add_residual_columns",
    "APBounds", "ap_bounds",
    "pool_entry_depth", "pool_multiplicity", "multiplicity_table", "depth_labels",
    "DepthExperiment", "depth_experiment",
    
]

#: phi for the expected depths 2, 5, 10, 20, 50, 100, 200 of the thesis's Fig. 4.1 / 4.2.
DEPTH_GRID: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995)
#: 0.50, 0.51, ..., 0.99, 0.995, 0.999: the default grid (52 values).
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.5 + 0.01 * i, 2) for i in range(50)) + (0.995, 0.999)
#: 0.500, 0.501, ..., 0.999: the per-topic search of the thesis (Sec. 4.5; 500 values).
FINE_GRID: tuple[float, ...] = tuple(round(0.5 + 0.001 * i, 3) for i in range(500))
#: :func:`ap_bounds` refuses more unjudged documents than this unless ``max_unjudged`` is raised.
MAX_UNJUDGED = 20

CORRELATIONS = ("kendall", "rbo")
_ENUM_BLOCK = 1 << 16          # completions evaluated per block in ap_bounds (memory ~ block x u)


# ---------------------------------------------------------------------------------------------
# validation helpers

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


def _positive_int(name: str, value: Any) -> int:
    return check_int(name, value)


def _choice(name: str, value: Any, choices: Sequence) -> Any:
    return check_choice(name, value, choices)


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


def _aligned(runs: Any, qrels: Any, ties: str) -> AlignedRuns:
    """Runs aligned to qrels once (an AlignedRuns is used as it is)."""
    if isinstance(runs, AlignedRuns):
        return runs
    if qrels is None:
        raise InputError("qrels are required unless runs is an AlignedRuns (already aligned to its qrels)")
    _choice("ties", ties, TIE_POLICIES)
    return AlignedRuns.build(runs, qrels, ties=ties)


def _spec_label(spec: MeasureSpec) -> str:
    """ir_measures-style name of an engine spec (``AP``, ``nDCG@10``, ``RBP(p=0.9)``...)."""
    params = []
    if spec.p is not None:
        params.append(f"p={spec.p:g}")
    if spec.T is not None:
        params.append(f"T={spec.T:g}")
    if spec.rel != 1.0 and spec.max_rel is None and spec.family not in ("nDCG", "DCG"):
        params.append(f"rel={spec.rel:g}")
    if spec.max_rel is not None:
        params.append(f"max_rel={spec.max_rel:g}")
    name = spec.family
    if spec.component != "value":
        name += {"residual": "Residual", "upper": "Upper", "projected": "Projected"}[spec.component]
    text = name + (f"({','.join(params)})" if params else "")
    return text + (f"@{spec.cutoff}" if spec.cutoff is not None else "")


def _as_spec(measure: Any) -> tuple[str, MeasureSpec]:
    """(label, engine spec) of a measure given as ir_measures text / object or a MeasureSpec."""
    from ..measures.classes import to_spec
    if isinstance(measure, MeasureSpec):
        spec = measure.validate()
        return _spec_label(spec), spec
    spec, _ = to_spec(measure)
    return str(measure), spec


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
            label, spec = _as_spec(m)
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
        phi: the matched persistence (the smallest phi among equal maxima, seed004b A4).
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
        from ..measures.classes import RBPResidual
        params: dict[str, Any] = {"p": self.phi}
        if self.max_rel is not None:
            params["max_rel"] = self.max_rel
        elif self.rel != 1.0:
            params["rel"] = int(self.rel) if float(self.rel).is_integer() else self.rel
        return RBPResidual(**params)

    def plot(self, path: str | Path | None = None) -> Any:
        """The correlation-against-phi curve (and the per-topic phi against R); see :func:`plot_phi_match`."""
        return plot_phi_match(self, path)

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
                   per_topic: bool = False, correlation: str = "kendall", rbo_p: float = 0.98,
                   rel: float = 1.0, max_rel: float | None = None,
                   ties: str = "trec_eval") -> dict[str, PhiMatch]:
    """Match RBP's persistence to several reference metrics with one alignment and one evaluation.

    Yang (2019), Sec. 4.4 (Fig. 4.2) and Sec. 4.5 (Fig. 4.3/4.4, Table 4.2): for every phi of
    ``grid``, RBP(phi) orders the systems by their mean score over topics; ``phi_M`` is the phi
    whose ordering agrees best with the reference metric M's (Kendall's tau_b by default, or
    RBO with persistence ``rbo_p``).  Ties between equal maxima go to the smallest phi (seed004b
    A4).  ``per_topic=True`` also matches each topic on its own (systems ordered by their score
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
            ordered by run position in both orderings).
        rbo_p: RBO persistence (0.98, seed004b A4).
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
    correlation = _choice("correlation", correlation, CORRELATIONS)
    rbo_p = check_probability("rbo_p", rbo_p)
    rel, max_rel = _rel_args(rel, max_rel)
    aligned = _aligned(runs, qrels, ties)
    if aligned.n_runs < 2:
        raise InputError(f"phi matching compares system orderings and needs at least 2 runs, got {aligned.n_runs}")
    refs = _references(measures, aligned)
    ref_values, rbp, res = _evaluate_grid(aligned, refs, g, rel, max_rel)
    return {label: _match(label, v, rbp, res, g, aligned, per_topic, correlation, rbo_p, rel, max_rel)
            for (label, _, _), v in zip(refs, ref_values)}


def match_phi(runs: Any, qrels: Any = None, measure: Any = "AP", grid: Any = None, *,
              per_topic: bool = False, correlation: str = "kendall", rbo_p: float = 0.98,
              rel: float = 1.0, max_rel: float | None = None, ties: str = "trec_eval") -> PhiMatch:
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


# ---------------------------------------------------------------------------------------------
# plots (matplotlib's object interface with the Agg canvas: no global pyplot state)

def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | Path | None) -> None:
    if path is not None:
        path = Path(path)
        if not path.parent.exists():
            raise InputError(f"cannot write the plot to {path}: directory {path.parent} does not exist")
        fig.savefig(path, dpi=110)


def plot_phi_match(matches: PhiMatch | Sequence[PhiMatch] | Mapping[str, PhiMatch],
                   path: str | Path | None = None) -> Any:
    """Plot correlation against phi for one or more matches (Yang 2019, Fig. 4.2; Fig. 4.3/4.4).

    Left panel: the correlation of each reference metric's system ordering with RBP(phi)'s
    against the expected depth ``1/(1-phi)`` (log scale), the matched phi marked.  For matches
    made with ``per_topic=True``, one more panel each: the topic's matched phi against its
    number of relevant documents R, coloured by the maximised correlation.

    Args:
        matches: a :class:`PhiMatch`, a list of them, or the dict of :func:`match_phi_many`.
        path: write a PNG here (optional).

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
    fig = _figure(5.2 + 4.2 * len(topical), 3.8)
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
    _save(fig, path)
    return fig


# ---------------------------------------------------------------------------------------------
# scores with the matched residual

def _resolve_phi(phi: Any, labels: list[str]) -> dict[str, float] | None:
    if phi is None:
        return None
    if isinstance(phi, Mapping):
        unknown = [k for k in phi if str(k) not in labels]
        if unknown:
            raise InputError(f"phi has entries for {unknown} that are not among the measures {labels}")
        missing = [m for m in labels if m not in {str(k) for k in phi}]
        if missing:
            raise InputError(f"phi gives no persistence for measure(s) {missing}; give one per measure or a number")
        return {str(k): check_probability(f"phi[{k!r}]", v) for k, v in phi.items()}
    if isinstance(phi, PhiMatch):
        return {m: phi.phi for m in labels}
    return {m: check_probability("phi", phi) for m in labels}


def _scores_arrays(aligned: AlignedRuns, measures: Any, phi: Any, grid: Any, correlation: str, rbo_p: float,
                   rel: float, max_rel: float | None) -> tuple[list[str], list[np.ndarray], dict, dict, dict]:
    """Per measure: values, matched phi, RBP base and residual there (runs x topics); one evaluate call."""
    refs = _references(measures, aligned)
    labels = [r[0] for r in refs]
    fixed = _resolve_phi(phi, labels)
    if fixed is None:
        g = phi_grid(grid)
        if aligned.n_runs < 2:
            raise InputError("matching phi needs at least 2 runs; with one run give phi= explicitly (e.g. 0.98)")
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


def scores_with_residuals(runs: Any, qrels: Any = None, measures: Any = ("AP", "nDCG"), phi: Any = None, *,
                          perquery: bool = False, grid: Any = None, correlation: str = "kendall",
                          rbo_p: float = 0.98, rel: float = 1.0, max_rel: float | None = None,
                          ties: str = "trec_eval") -> pd.DataFrame:
    """AP / nDCG (any metric) with the residual of the matched RBP beside each score.

    Yang (2019), Sec. 4.4 and 4.10: a recall-based metric has no residual of its own, so report
    the residual of RBP(phi_M), the RBP most like the metric, as its measurement uncertainty
    (an optimistic bound on how far unjudged documents could move an RBP-like score, not an
    interval for the metric itself).  ``phi=None`` matches phi per measure on these runs
    (:func:`match_phi_many`); a number uses it for every measure (the thesis recommends about
    0.98 for AP and nDCG); a dict gives one per measure.  One alignment, one evaluation.

    Args:
        runs: ``{name: frame}``, a directory or files of runs, or an :class:`AlignedRuns`.
        qrels: the judgments, unless ``runs`` is aligned.
        measures: metrics (ir_measures names or objects, or MeasureSpec).
        phi: None (match), a persistence in (0, 1), a :class:`PhiMatch`, or ``{measure: phi}``.
        perquery: one row per (run, topic) instead of the mean over the qrels' topics.
        grid, correlation, rbo_p, rel, max_rel: as in :func:`match_phi_many`.
        ties: tie policy of the alignment.

    Returns:
        Frame ``name, [qid,] measure, value, phi, rbp, residual``: the metric's value, the
        persistence used, RBP(phi) (unjudged = non-relevant) and its residual.  A topic a run
        does not answer scores 0 with residual 1 (``trec_eval -c``).  ``frame.attrs["phi"]`` is
        ``{measure: phi}``.
    """
    correlation = _choice("correlation", correlation, CORRELATIONS)
    rbo_p = check_probability("rbo_p", rbo_p)
    rel, max_rel = _rel_args(rel, max_rel)
    aligned = _aligned(runs, qrels, ties)
    labels, values, chosen, base, resid = _scores_arrays(aligned, measures, phi, grid, correlation, rbo_p,
                                                         rel, max_rel)
    frames = []
    for lab, v in zip(labels, values):
        if perquery:
            frames.append(pd.DataFrame({
                "name": np.repeat(np.asarray(aligned.run_names, dtype=object), aligned.n_topics),
                "qid": np.tile(np.asarray(aligned.topics, dtype=object), aligned.n_runs),
                "measure": lab, "value": v.ravel(), "phi": chosen[lab], "rbp": base[lab].ravel(),
                "residual": resid[lab].ravel()}))
        else:
            frames.append(pd.DataFrame({
                "name": aligned.run_names, "measure": lab, "value": v.mean(axis=1), "phi": chosen[lab],
                "rbp": base[lab].mean(axis=1), "residual": resid[lab].mean(axis=1)}))
    out = pd.concat(frames, ignore_index=True)
    keys = ["name", "qid"] if perquery else ["name"]
    run_order = {n: i for i, n in enumerate(aligned.run_names)}
    out = out.sort_values(keys[:1], key=lambda s: s.map(run_order), kind="stable").reset_index(drop=True)
    out.attrs["phi"] = dict(chosen)
    return out


_MATCHABLE = ("AP", "nDCG", "P", "RR", "DCG")


def add_residual_columns(experiment: pd.DataFrame, runs: Any, qrels: Any = None, phi: Any = None, *,
                         measures: Sequence[str] | None = None, grid: Any = None, correlation: str = "kendall",
                         rbo_p: float = 0.98, rel: float = 1.0, max_rel: float | None = None,
                         ties: str = "trec_eval") -> pd.DataFrame:
    """``pt.Experiment`` output with the matched-RBP residual of each AP / nDCG / P / RR column.

    Yang (2019), Sec. 4.10.  ``runs`` are the systems' result frames (``{name: frame}`` with
    the names of the experiment's ``name`` column; for transformers, their ``.transform(topics)``
    output).  Wide output (``pt.Experiment(...)``) gets, after each matchable measure column
    ``M``, a column ``"M RBPResidual(p=phi)"`` holding the mean residual over the qrels' topics;
    per-query output (``perquery=True``: ``name, qid, measure, value``) gets columns ``phi`` and
    ``rbp_residual`` (NaN on rows of other measures).  Every input column and row is kept.

    Args:
        experiment: a ``pt.Experiment`` result frame.
        runs: the systems' result frames, or an :class:`AlignedRuns`.
        qrels: the judgments given to ``pt.Experiment``.
        phi: as in :func:`scores_with_residuals` (None: match on these runs).
        measures: the columns / measures to annotate (default: every AP, nDCG, P, RR, DCG measure).
        grid, correlation, rbo_p, rel, max_rel, ties: as in :func:`scores_with_residuals`.

    Returns:
        A copy of ``experiment`` with the residual columns.
    """
    from ..measures.classes import to_spec
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
    aligned = _aligned(runs, qrels, ties)
    names = set(aligned.run_names)
    absent = experiment.loc[~experiment["name"].astype(str).isin(names), "name"]
    if len(absent):
        row = absent.index[0]
        raise InputError(f"experiment column 'name', row {row}: system {absent.iloc[0]!r} is not among the runs "
                         f"given ({sorted(names)[:5]}); pass each system's results under its experiment name")
    table = scores_with_residuals(aligned, None, chosen, phi, perquery=perquery, grid=grid, correlation=correlation,
                                  rbo_p=rbo_p, rel=rel, max_rel=max_rel)
    out = experiment.copy()
    if perquery:
        key = table.set_index(["name", "qid", "measure"])
        idx = pd.MultiIndex.from_arrays([out["name"].astype(str), out["qid"].astype(str), out["measure"].astype(str)])
        hit = key.reindex(idx)
        out["phi"] = hit["phi"].to_numpy()
        out["rbp_residual"] = hit["residual"].to_numpy()
        return out
    for m in chosen:
        sub = table[table["measure"] == m].set_index("name")
        col = f"{m} RBPResidual(p={table.attrs['phi'][m]:g})"
        values = sub["residual"].reindex(out["name"].astype(str)).to_numpy()
        out.insert(list(out.columns).index(m) + 1, col, values)
    return out


# ---------------------------------------------------------------------------------------------
# exact AP bounds by enumeration

class APBounds(NamedTuple):
    """Exact range of AP over every completion of the unjudged documents (see :func:`ap_bounds`)."""

    current: float                 # unjudged documents non-relevant, R as given
    low: float
    high: float
    low_completion: np.ndarray     # (u,) bool: which unjudged documents are relevant at the minimum
    high_completion: np.ndarray    # (u,) bool: ... at the maximum
    values: np.ndarray             # (2^u,) AP of completion i (bit j of i: j-th unjudged document relevant)
    unjudged_ranks: np.ndarray     # (u,) 1-based ranks of the unjudged documents


def ap_bounds(labels: Sequence[Any], n_relevant: int | None = None, *, n_unjudged_outside: int = 0,
              rel: float = 1.0, max_unjudged: int = MAX_UNJUDGED) -> APBounds:
    """Exact minimum and maximum of AP over all relevance completions of the unjudged documents.

    Yang (2019), Sec. 4.1: judging an unjudged document relevant can raise AP (a new relevant
    document near the top) or lower it (R grows), so AP has no residual and its range needs
    enumeration over the ``2^u`` completions of the ``u`` unjudged documents.  AP is trec_eval's
    ``(1/R) sum_{relevant i} P@i`` with R the known relevant documents plus those of the
    completion.  Documents unjudged *outside* the ranking (``n_unjudged_outside``) can only add to
    R, so the minimum takes them all relevant and the maximum none.  All completions are
    evaluated as matrix operations in blocks (memory ~ 65,536 x u): with ``b`` the completion,
    ``K(i)`` the known relevant documents at ranks <= i, ``P`` the ranks of known relevant
    documents and ``u_j`` the unjudged ranks,
    ``AP = [sum_{p in P} (K(p) + #{j: u_j < p, b_j}) / p + sum_j b_j (K(u_j) + sum_{l <= j} b_l) / u_j]
    / (R + |b| + c)``.

    Args:
        labels: the ranking's labels, best first: numbers (relevant iff ``>= rel``) and
            ``None`` / NaN for unjudged documents.
        n_relevant: R, the known relevant documents of the topic (default: those in the ranking;
            must be at least that many).
        n_unjudged_outside: unjudged documents of the collection that are not in the ranking
            (the thesis's example assumes 0: "only these five documents").
        rel: relevance threshold.
        max_unjudged: refuse more unjudged documents than this (default 20, i.e. 1,048,576
            completions; the cost doubles with each one).

    Returns:
        :class:`APBounds` (``current`` counts the unjudged documents non-relevant with R as given).

    Example (the thesis's ranking ``1, 0, ?, 1, ?`` with R = 2): current 0.75; completions
    0.8056 (third relevant), 0.70 (fifth relevant), 0.8042 (both); low 0.70, high 0.8056.
    """
    try:
        lab = np.array([np.nan if v is None else v for v in labels], dtype=float)
    except (TypeError, ValueError):
        bad = next(i for i, v in enumerate(labels) if v is not None and not _is_number(v))
        raise InputError(f"labels[{bad}] is {labels[bad]!r}; expected a number or None/NaN for unjudged") from None
    if lab.ndim != 1 or lab.size == 0:
        raise InputError("labels must be a non-empty sequence (the ranking's labels, best first)")
    if np.isinf(lab).any():
        i = int(np.flatnonzero(np.isinf(lab))[0])
        raise InputError(f"labels[{i}] is infinite; expected a finite label or None/NaN for unjudged")
    try:
        rel = float(rel)
    except (TypeError, ValueError):
        raise InputError(f"rel must be a number, got {rel!r}") from None
    max_unjudged = _positive_int("max_unjudged", max_unjudged)
    if isinstance(n_unjudged_outside, bool) or not isinstance(n_unjudged_outside, (int, np.integer)) \
            or n_unjudged_outside < 0:
        raise InputError(f"n_unjudged_outside must be a non-negative integer, got {n_unjudged_outside!r}")
    unjudged = np.isnan(lab)
    known = ~unjudged & (np.nan_to_num(lab, nan=-np.inf) >= rel)
    n_known = int(known.sum())
    if n_relevant is None:
        n_relevant = n_known
    if isinstance(n_relevant, bool) or not isinstance(n_relevant, (int, np.integer)) or n_relevant < n_known:
        raise InputError(f"n_relevant must be an integer >= {n_known} (the relevant documents in the ranking), "
                         f"got {n_relevant!r}")
    u = int(unjudged.sum())
    if u > max_unjudged:
        raise InputError(f"the ranking has {u} unjudged documents: exact AP bounds enumerate 2^{u} completions, "
                         f"more than the limit of {max_unjudged} (2^{max_unjudged}); judge some of them, or "
                         "truncate the ranking, or raise max_unjudged if you have the time")
    rank = np.arange(1, lab.size + 1, dtype=float)
    k_before = np.cumsum(known)                                   # K(i), inclusive
    const = float((k_before[known] / rank[known]).sum())
    uj = rank[unjudged]
    # w_j: a relevant unjudged document at u_j adds 1/p to every known relevant document below it
    inv_known = np.where(known, 1.0 / rank, 0.0)
    below = np.cumsum(inv_known[::-1])[::-1]                      # sum over p >= i of 1/p (known)
    w = below[unjudged] + k_before[unjudged] / uj                 # (u,)  (u_j itself is not known)
    R0 = float(n_relevant)
    m = float(n_unjudged_outside)
    current = const / R0 if R0 > 0 else 0.0
    n_comp = 1 << u
    values = np.empty(n_comp)
    lows = np.empty(n_comp)
    shifts = np.arange(u)
    for start in range(0, n_comp, _ENUM_BLOCK):                   # blocks of completions, not one by one
        idx = np.arange(start, min(n_comp, start + _ENUM_BLOCK))
        B = ((idx[:, None] >> shifts[None, :]) & 1).astype(float)  # (block, u)
        num = const + B @ w + (B * np.cumsum(B, axis=1)) @ (1.0 / uj)
        size = B.sum(axis=1)
        den = R0 + size
        values[idx] = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        den_low = den + m
        lows[idx] = np.where(den_low > 0, num / np.where(den_low > 0, den_low, 1.0), 0.0)
    i_lo, i_hi = int(np.argmin(lows)), int(np.argmax(values))
    bits = lambda i: ((i >> shifts) & 1).astype(bool)  # noqa: E731
    return APBounds(current=float(current), low=float(lows[i_lo]), high=float(values[i_hi]),
                    low_completion=bits(i_lo), high_completion=bits(i_hi), values=values,
                    unjudged_ranks=rank[unjudged].astype(np.int64))


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# Depth@k reduction

def _pool_positions(aligned: AlignedRuns, pool_runs: Sequence[str] | None) -> np.ndarray:
    """Boolean over positions: judged table row and ranked by one of the pooling runs."""
    if pool_runs is None:
        in_pool = np.ones(aligned.n_runs, dtype=bool)
    else:
        names = [str(n) for n in ([pool_runs] if isinstance(pool_runs, str) else pool_runs)]
        if not names:
            raise InputError("pool_runs is empty: give the runs whose top documents form the pool (or None for all)")
        index = pd.Index(aligned.run_names).get_indexer(names)
        if (index < 0).any():
            bad = names[int(np.flatnonzero(index < 0)[0])]
            raise InputError(f"pool_runs: run {bad!r} is not among the aligned runs ({aligned.run_names[:5]} ...)")
        in_pool = np.zeros(aligned.n_runs, dtype=bool)
        in_pool[index] = True
    run_of_pos = np.repeat(np.arange(aligned.n_segments) // aligned.n_topics, aligned.seg_len)
    return (aligned.jidx >= 0) & in_pool[run_of_pos]


def pool_entry_depth(aligned: AlignedRuns, pool_runs: Sequence[str] | None = None) -> np.ndarray:
    """Depth at which each judgment enters the Depth@k pool of ``pool_runs`` (Yang 2019, Sec. 4.6).

    For row ``j`` of ``aligned.table`` (topic t, document d) this is the smallest 1-based rank at
    which any pooling run retrieves d for t, so d is in ``Pool_t(k)`` iff ``entry[j] <= k``;
    ``inf`` when no pooling run retrieves it.  One pass over the aligned positions serves every
    depth (the per-depth model is ``perturbation.PoolDepthReduction``).

    Args:
        aligned: runs aligned to the qrels (ranked in the alignment's tie order).
        pool_runs: names of the runs that form the pool (default: all aligned runs; the thesis
            pools and scores its deeply judged runs, seed004b A16).

    Returns:
        Float array ``(len(aligned.table),)``.
    """
    if not isinstance(aligned, AlignedRuns):
        raise InputError(f"aligned must be an AlignedRuns (AlignedRuns.build(runs, qrels)), got {type(aligned).__name__}")
    ok = _pool_positions(aligned, pool_runs)
    entry = np.full(len(aligned.table), np.inf)
    np.minimum.at(entry, aligned.jidx[ok], aligned.pos[ok].astype(np.float64) + 1.0)
    return entry


def _depths(depths: Any) -> np.ndarray:
    if isinstance(depths, (int, np.integer)) and not isinstance(depths, bool):
        depths = [depths]
    try:
        items = list(depths)
    except TypeError:
        raise InputError(f"depths must be positive integers, got {depths!r}") from None
    if not items:
        raise InputError("depths is empty: give at least one pool depth k >= 1")
    out = [_positive_int(f"depths[{i}]", d) for i, d in enumerate(items)]
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
    depth = _positive_int("depth", depth)
    if not isinstance(aligned, AlignedRuns):
        raise InputError(f"aligned must be an AlignedRuns, got {type(aligned).__name__}")
    ok = _pool_positions(aligned, pool_runs) & (aligned.pos < depth)
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


# ---------------------------------------------------------------------------------------------
# the pool-depth experiment

@dataclass
class DepthExperiment:
    """Results of :func:`depth_experiment` (Yang 2019, Sec. 4.6-4.9), for the shallow depths and the full qrels.

    Attributes:
        depths: the pool depths k (ascending); the last version is the full qrels ("full").
        versions: version labels ``["k=1", ..., "full"]``.
        measures: measure labels.
        run_names, topics: the scored runs and the topics.
        scores: ``{measure: array (runs, topics, versions)}``.
        residual: RBP residual at ``residual_p`` ``(runs, topics, versions)``.
        residual_p: its persistence.
        pool: per version: judged and relevant documents, per topic and in all, topics without a
            relevant judgment, and the mean RBP residual of the scored runs (thesis Fig. 4.5).
        discrimination: share of run pairs separated by the paired test, measure x version
            (thesis Table 4.5).
        agreement: per measure and depth, TP / FP / FN / TN against the full qrels and the
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
    test: str = "t"
    extra: dict = field(default_factory=dict)

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

    def plot_movement(self, path: str | Path | None = None) -> Any:
        """Score change from depth k to the full qrels against the RBP residual at k (thesis Fig. 4.8/4.9)."""
        from matplotlib import colormaps
        fig = _figure(4.0 * len(self.measures), 3.6)
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
            ax.set_ylabel("score(k) - score(full)")
            ax.grid(alpha=0.3)
        axes[-1].legend(fontsize=7, markerscale=3, ncol=2)
        _save(fig, path)
        return fig

    def plot_discrimination(self, path: str | Path | None = None) -> Any:
        """Discrimination ratio, and FP / FN shares against the full qrels, by pool depth (Tables 4.5, 4.6)."""
        fig = _figure(9.0, 3.6)
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
        ax1.set_title("discrimination ratio (dotted: full qrels)", fontsize=10)
        ax2.set_ylabel("% of run pairs")
        ax2.set_title("decisions that differ from the full qrels", fontsize=10)
        ax1.legend(fontsize=8)
        ax2.legend(fontsize=7, ncol=2)
        _save(fig, path)
        return fig

    def plot_consistency(self, path: str | Path | None = None) -> Any:
        """Per-pair Kendall tau between depth and p-value, stacked by significance class (thesis Fig. 4.7)."""
        if self.consistency is None:
            raise InputError("consistent discrimination needs at least two shallow depths")
        fig = _figure(4.0 * len(self.measures), 3.4)
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
        _save(fig, path)
        return fig


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
                     residual_p: float = 0.98, alpha: float = 0.05, test: str = "t",
                     ties: str = "trec_eval", rel: float = 1.0, n_resamples: int = 10_000,
                     seed: int | np.random.Generator | None = 0) -> DepthExperiment:
    """The pool-depth study of Yang (2019), Sec. 4.6-4.9, with the full qrels as the reference.

    Every depth k gives the Depth@k reduced qrels (:func:`depth_labels`); together with the full
    qrels they form one label matrix, evaluated for every run, topic and measure in a single
    ``AlignedRuns.evaluate`` call on one alignment.  Then, against the full qrels:

    * discrimination ratio per version (Table 4.5; ``agreement.discrimination_ratio``);
    * consistently consistent discrimination, TP / FP / FN / TN per depth (Table 4.6;
      ``agreement.discrimination_agreement`` with the direction check);
    * consistent discrimination over the shallow depths (Fig. 4.7;
      ``agreement.consistent_discrimination``);
    * score movement from depth k to full against the RBP residual at k (Tables 4.7-4.8).

    The thesis pools and scores only *deeply judged* runs (every run judged to depth 50 on every
    topic; ``perturbation.deeply_judged_runs``) and uses qrels_50 as the reference; pass such
    runs (or an AlignedRuns of them) and choose the depths.

    Args:
        runs: the scored runs (``{name: frame}``, files, or an :class:`AlignedRuns`).
        qrels: the full judgments, unless ``runs`` is aligned.
        depths: pool depths k (positive integers).
        measures: measures to study (ir_measures names or objects, or MeasureSpec).
        pool_runs: runs forming the pools (default: all scored runs; seed004b A16).
        residual_p: persistence of the RBP residual that is compared with score movement (0.98).
        alpha: significance level (p < alpha).
        test: paired test over topics (``"t"``: two-tailed paired t-test, as the thesis).
        ties: tie policy of the alignment.
        rel: relevance threshold for the pool statistics.
        n_resamples: resamples for the randomisation and bootstrap tests.
        seed: seed of the randomisation and bootstrap tests (same seed, same tables).

    Returns:
        :class:`DepthExperiment`.
    """
    residual_p = check_probability("residual_p", residual_p)
    ks = _depths(depths)
    aligned = _aligned(runs, qrels, ties)
    if aligned.n_runs < 2:
        raise InputError(f"the depth experiment compares runs in pairs and needs at least 2, got {aligned.n_runs}")
    if aligned.n_topics < 2:
        raise InputError(f"paired tests over topics need at least 2 topics, got {aligned.n_topics}")
    items = [_as_spec(m) for m in ([measures] if isinstance(measures, (str, MeasureSpec)) else list(measures))]
    if not items:
        raise InputError("no measures given")
    labels = [lab for lab, _ in items]
    if len(set(labels)) != len(labels):
        raise InputError(f"measures must be distinct, got {labels}")
    full = aligned.label_matrix()
    L = np.concatenate([depth_labels(aligned, ks, pool_runs), full], axis=1)     # (J, D + 1)
    res_spec = MeasureSpec("RBP", "residual", p=residual_p)
    out = aligned.evaluate(list(dict.fromkeys([s for _, s in items] + [res_spec])), L)
    scores = {lab: out[s] for lab, s in items}
    residual = out[res_spec]
    D = len(ks)
    versions = [f"k={d}" for d in ks] + ["full"]

    # judgments per version
    judged = ~np.isnan(L)
    with np.errstate(invalid="ignore"):
        relevant = judged & (L >= rel)
    tix = aligned.table.topic_index
    T = aligned.n_topics
    jt = _topic_counts(tix, judged, T)
    rt = _topic_counts(tix, relevant, T)
    pool = pd.DataFrame({"version": versions, "depth": list(ks) + [np.nan],
                         "judged": jt.sum(axis=0).astype(np.int64), "relevant": rt.sum(axis=0).astype(np.int64),
                         "judged_per_topic": jt.mean(axis=0), "relevant_per_topic": rt.mean(axis=0),
                         "topics_without_relevant": (rt == 0).sum(axis=0).astype(np.int64),
                         "mean_residual": residual.mean(axis=(0, 1))})

    stat = dict(alpha=alpha, test=test, n_resamples=n_resamples, seed=seed)
    disc = pd.DataFrame({lab: np.atleast_1d(discrimination_ratio(scores[lab], **stat))
                         for lab in labels}, index=versions).T
    disc.columns.name = "version"

    agree_rows, cons_rows, move_rows = [], [], []
    for lab in labels:
        s = scores[lab]
        a = discrimination_agreement(s[:, :, :D], s[:, :, D], versions=list(ks), names=aligned.run_names,
                                     check_direction=True, **stat)
        counts = a.groupby(["version", "outcome"], observed=False).size().unstack("outcome") \
            .reindex(columns=["TP", "FP", "FN", "TN"]).fillna(0).astype(np.int64)
        counts["reversed"] = a.groupby("version")["reversed"].sum().astype(np.int64)
        counts["ratio"] = (counts["TP"] + counts["FP"]) / counts[["TP", "FP", "FN", "TN"]].sum(axis=1)
        counts = counts.reset_index().rename(columns={"version": "depth"})
        counts.insert(0, "measure", lab)
        agree_rows.append(counts)
        if D >= 2:
            c = consistent_discrimination(s[:, :, :D], versions=list(ks), names=aligned.run_names, **stat)
            c = c.assign(tau=c["tau"].round(6))
            h = c.groupby(["tau", "consistency"], observed=False, dropna=False).size().rename("count").reset_index()
            h.insert(0, "measure", lab)
            cons_rows.append(h)
        move_rows.extend(_movement_rows(lab, s, residual, list(ks)))
    consistency = pd.concat(cons_rows, ignore_index=True) if cons_rows else None
    return DepthExperiment(depths=[int(k) for k in ks], versions=versions, measures=labels,
                           run_names=list(aligned.run_names), topics=list(aligned.topics), scores=scores,
                           residual=residual, residual_p=residual_p, pool=pool, discrimination=disc,
                           agreement=pd.concat(agree_rows, ignore_index=True), consistency=consistency,
                           movement=pd.DataFrame(move_rows), alpha=float(alpha), test=test)


def _topic_counts(topic_index: np.ndarray, mask: np.ndarray, n_topics: int) -> np.ndarray:
    """Per-topic column sums of a boolean (rows x versions) matrix -> (topics, versions)."""
    csum = np.zeros((mask.shape[0] + 1, mask.shape[1]))
    np.cumsum(mask, axis=0, out=csum[1:])
    start = np.searchsorted(topic_index, np.arange(n_topics + 1))
    return csum[start[1:]] - csum[start[:-1]]
