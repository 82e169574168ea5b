"""Plots of a robustness experiment's result (Rashidi, Zobel & Moffat 2023, Figs 6-9).

Every function takes a :class:`~pyterrier_noise.experiments.RobustnessResult`, draws with
matplotlib's object API (:func:`pyterrier_noise._plot.figure`, no pyplot), returns the
matplotlib Figure and writes it to ``save`` (a path) when given.  With ``ax=``, it draws into
that Axes and returns the Axes' figure.  The figure grows with the number of systems, system
names are never cut (thinned when they cannot all fit), ranks have integer ticks, and ``top=k``
shows the best k systems with the rest summarised.  Colours follow
:data:`pyterrier_noise._plot.COLOURS` (black: unperturbed qrels; purple: replicates).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _plot
from .._validation import check_choice
from .._vocab import DISTRIBUTION_KINDS, DistributionKind

if TYPE_CHECKING:  # the result module imports this one; no import at run time
    from .result import RobustnessResult

__all__ = ["plot_distributions", "plot_ranks"]


def _target(ax: Any, n: int, height: float = 4.5) -> tuple[Any, Any]:
    """(figure, axes): the given Axes and its figure, or a new figure sized for ``n`` systems."""
    if ax is not None:
        return ax.figure, ax
    fig = _plot.figure(_plot.systems_width(n), height)
    return fig, fig.add_subplot()


def _box_stats(data: np.ndarray, whis: float = 1.5, fliers: bool = False) -> dict[str, Any]:
    """Box statistics of each row of ``data`` (rows: boxes, columns: samples), computed once over
    the whole array: quartiles by ``np.percentile`` (linear), whiskers at the most extreme datum
    within ``whis`` x IQR of the box (never inside it) -- Tukey's rule as matplotlib's
    ``cbook.boxplot_stats`` applies it, value for value.  With ``fliers``, ``"fliers"`` holds the
    (row, value) pairs beyond the whiskers, each distinct pair once (a repeated value draws the
    same marker)."""
    x = np.asarray(data, dtype=float)
    q1, med, q3 = np.percentile(x, [25, 50, 75], axis=1)
    iqr = q3 - q1
    loval, hival = (q1 - whis * iqr)[:, None], (q3 + whis * iqr)[:, None]
    hi = np.where(x <= hival, x, -np.inf).max(axis=1)
    lo = np.where(x >= loval, x, np.inf).min(axis=1)
    nan = np.isnan(iqr)     # a NaN sample: matplotlib's whiskers are the (NaN) quartiles
    out: dict[str, Any] = {"q1": q1, "med": med, "q3": q3, "whishi": np.where((hi < q3) | nan, q3, hi),
                           "whislo": np.where((lo > q1) | nan, q1, lo)}
    if fliers:
        rows, cols = np.nonzero((x < out["whislo"][:, None]) | (x > out["whishi"][:, None]))
        pairs = np.unique(np.stack([rows.astype(float), x[rows, cols]], axis=1), axis=0)
        out["fliers"] = (pairs[:, 0].astype(np.intp), pairs[:, 1])
    return out


def _draw_boxes(ax: Any, stats: dict[str, Any], pos: np.ndarray, width: float, box_face: Any, box_edge: str,
                line: str, median: str, flier: str | None = None) -> None:
    """Box plots from :func:`_box_stats` as four collections (boxes, whiskers and caps, medians) and
    one marker line for the fliers: what ``Axes.bxp`` draws (same geometry, caps half the box
    width), without one Line2D per box element, which costs seconds at 143 boxes x 1,000 replicates."""
    from matplotlib.collections import LineCollection, PolyCollection

    pos = np.asarray(pos, dtype=float)
    h, c = width / 2.0, width / 4.0
    q1, q3 = stats["q1"], stats["q3"]
    left, right = pos - h, pos + h
    boxes = np.stack([np.stack([left, q1], 1), np.stack([right, q1], 1), np.stack([right, q3], 1),
                      np.stack([left, q3], 1), np.stack([left, q1], 1)], axis=1)
    ax.add_collection(PolyCollection(boxes, closed=True, facecolors=box_face, edgecolors=box_edge, linewidths=1.0,
                                     zorder=2), autolim=True)

    def hseg(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.stack([np.stack([a, y], 1), np.stack([b, y], 1)], axis=1)

    def vseg(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.stack([np.stack([x, a], 1), np.stack([x, b], 1)], axis=1)

    whiskers = np.concatenate([vseg(pos, q1, stats["whislo"]), vseg(pos, q3, stats["whishi"]),
                               hseg(stats["whislo"], pos - c, pos + c), hseg(stats["whishi"], pos - c, pos + c)])
    ax.add_collection(LineCollection(whiskers, colors=line, linewidths=1.0, zorder=2), autolim=True)
    ax.add_collection(LineCollection(hseg(stats["med"], left, right), colors=median, linewidths=1.0, zorder=2.01),
                      autolim=True)
    if flier is not None and "fliers" in stats:
        rows, values = stats["fliers"]
        ax.plot(pos[rows], values, linestyle="none", marker="o", markersize=2, markerfacecolor="none",
                markeredgecolor=flier, zorder=2)
    ax.autoscale_view()


def plot_distributions(result: "RobustnessResult", measure: Any = None, ax: Any = None, kind: DistributionKind = "box",
                       top: int | None = None, save: str | Path | None = None) -> Any:
    """Replicate distribution of each system's mean score (box or violin, purple), systems in
    order of their unperturbed score, with the unperturbed score as a black dot (Rashidi et al.
    2023 Fig. 6's question, per system).  ``top=k`` shows the best k systems and one grey box
    of every replicate mean of the others.  Returns the matplotlib Figure."""
    m = result.measure(measure)
    check_choice("kind", kind, DISTRIBUTION_KINDS)
    S = len(result.names)
    k = _plot.check_top(top, S)
    M0, M = result.true[m].mean(axis=1), result.means[m]
    order = np.argsort(-M0, kind="stable")
    shown = order if k is None else order[:k]
    data = [M[i] for i in shown]     # the violins' input; boxes use their statistics only
    labels = list(np.asarray(result.names)[shown])
    if k is not None:
        data.append(M[order[k:]].ravel())
        labels.append(f"other {S - k} runs")
    own = ax is None
    fig, ax = _target(ax, len(data))
    pos = np.arange(1, len(data) + 1)
    spread = _plot.COLOURS["spread"]
    if kind == "box":
        stats = _box_stats(M[shown])
        if k is not None:
            stats = {key: np.concatenate([v, _box_stats(data[-1][None, :])[key]]) for key, v in stats.items()
                     if key != "fliers"}
        faces = [spread + "55"] * len(shown) + ([_plot.COLOURS["rest"]] if k is not None else [])
        _draw_boxes(ax, stats, pos, 0.6, box_face=faces, box_edge=spread, line=spread, median=spread)
    else:
        parts = ax.violinplot(data, positions=pos, widths=0.8, showextrema=False)
        for body in parts["bodies"]:
            body.set_facecolor(spread)
    ax.plot(pos[:len(shown)], M0[shown], "o", color=_plot.COLOURS["truth"], markersize=3, label="unperturbed qrels")
    ax.plot([], [], "s", color=spread, alpha=0.5, label=f"{result.params['n_replicates']} perturbed qrels ({kind})")
    _plot.label_systems(ax, labels, pos)
    ax.set_ylabel(f"mean {m}")
    ax.set_xlabel("runs, by decreasing score under the unperturbed qrels")
    _plot.title_and_legend(ax, f"{m} over {result.params['n_replicates']} perturbed qrels", own)
    return _plot.save(fig, save)


def plot_ranks(result: "RobustnessResult", measure: Any = None, ax: Any = None, top: int | None = None,
               save: str | Path | None = None) -> Any:
    """True rank of the system observed at each rank, over the replicates (purple box per
    observed rank, grey identity line; Rashidi et al. 2023 Figs 7-9).  ``top=k`` shows the first
    k observed ranks.  Integer rank ticks.  Returns the Figure."""
    m = result.measure(measure)
    S = len(result.names)
    k = _plot.check_top(top, S) or S
    fig, ax = _target(ax, min(k, 60))
    pos = np.arange(1, k + 1)
    spread = _plot.COLOURS["spread"]
    stats = _box_stats(result.true_rank_at[m][:, :k].T, fliers=True)   # one box per observed rank
    _draw_boxes(ax, stats, pos, 0.6, box_face="none", box_edge=spread, line=spread, median=_plot.COLOURS["truth"],
                flier=spread)
    ax.plot([1, k], [1, k], color=_plot.COLOURS["reference"], linewidth=0.8, label="true rank = observed rank")
    ax.plot([], [], "s", color=spread, label="true ranks over the replicates")
    ax.set_xlim(0.3, k + 0.7)
    _plot.rank_ticks(ax.xaxis, k)
    _plot.rank_ticks(ax.yaxis, int(min(S, max(1, np.floor(ax.get_ylim()[1])))))   # the true ranks drawn
    ax.set_xlabel(f"observed rank ({m}, perturbed qrels)")
    ax.set_ylabel("true rank (unperturbed qrels)")
    ax.set_title(f"{m}: true rank given observed rank" + (f" (first {k} of {S} ranks)" if k < S else ""))
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    return _plot.save(fig, save)
