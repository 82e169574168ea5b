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
from .._validation import InputError

if TYPE_CHECKING:  # the result module imports this one; no import at run time
    from .result import RobustnessResult

__all__ = ["plot_distributions", "plot_ranks"]


def _target(ax: Any, n: int, height: float = 4.5) -> tuple[Any, Any]:
    """(figure, axes): the given Axes and its figure, or a new figure sized for ``n`` systems."""
    if ax is not None:
        return ax.figure, ax
    fig = _plot.figure(_plot.systems_width(n), height)
    return fig, fig.add_subplot()


def plot_distributions(result: "RobustnessResult", measure: Any = None, ax: Any = None, kind: str = "box",
                       top: int | None = None, save: str | Path | None = None) -> Any:
    """Replicate distribution of each system's mean score (box or violin, purple), systems in
    order of their unperturbed score, with the unperturbed score as a black dot (Rashidi et al.
    2023 Fig. 6's question, per system).  ``top=k`` shows the best k systems and one grey box
    of every replicate mean of the others.  Returns the matplotlib Figure."""
    m = result._measure(measure)
    if kind not in ("box", "violin"):
        raise InputError(f"kind must be 'box' or 'violin', got {kind!r}")
    S = len(result.names)
    k = _plot.check_top(top, S)
    M0, M = result.true[m].mean(axis=1), result.means[m]
    order = np.argsort(-M0, kind="stable")
    shown = order if k is None else order[:k]
    data = [M[i] for i in shown]
    labels = list(np.asarray(result.names)[shown])
    if k is not None:
        data.append(M[order[k:]].ravel())
        labels.append(f"other {S - k} runs")
    own = ax is None
    fig, ax = _target(ax, len(data))
    pos = np.arange(1, len(data) + 1)
    spread = _plot.COLOURS["spread"]
    if kind == "box":
        parts = ax.boxplot(data, positions=pos, widths=0.6, showfliers=False, patch_artist=True,
                           medianprops={"color": spread}, boxprops={"facecolor": spread + "55", "edgecolor": spread},
                           whiskerprops={"color": spread}, capprops={"color": spread})
        if k is not None:
            parts["boxes"][-1].set_facecolor(_plot.COLOURS["rest"])
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
    m = result._measure(measure)
    S = len(result.names)
    k = _plot.check_top(top, S) or S
    fig, ax = _target(ax, min(k, 60))
    pos = np.arange(1, k + 1)
    spread = _plot.COLOURS["spread"]
    ax.boxplot(result.true_rank_at[m][:, :k],           # (replicates, observed rank): one box per rank
               positions=pos, widths=0.6, showfliers=True, manage_ticks=False,
               flierprops={"markersize": 2, "markeredgecolor": spread}, boxprops={"color": spread},
               medianprops={"color": _plot.COLOURS["truth"]}, whiskerprops={"color": spread}, capprops={"color": spread})
    ax.plot([1, k], [1, k], color=_plot.COLOURS["reference"], linewidth=0.8, label="true rank = observed rank")
    ax.plot([], [], "s", color=spread, label="true ranks over the replicates")
    ax.set_xlim(0.3, k + 0.7)
    _plot.integer_ticks(ax.xaxis)
    _plot.integer_ticks(ax.yaxis)
    ax.set_xlabel(f"observed rank ({m}, perturbed qrels)")
    ax.set_ylabel("true rank (unperturbed qrels)")
    ax.set_title(f"{m}: true rank given observed rank" + (f" (first {k} of {S} ranks)" if k < S else ""))
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    return _plot.save(fig, save)
