"""Plots of a robustness experiment's result (Rashidi, Zobel & Moffat 2023, Figs 6-9).

Every function takes a :class:`~pyterrier_noise.experiments.RobustnessResult`, draws with
matplotlib's object API (:func:`pyterrier_noise._plot.figure`, no pyplot), returns the
matplotlib Figure and writes it to ``save`` (a path) when given.  With ``ax=``, it draws into
that Axes and returns the Axes' figure.
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


def _target(ax: Any, n: int) -> tuple[Any, Any]:
    """(figure, axes): the given Axes and its figure, or a new figure sized for ``n`` systems."""
    if ax is not None:
        return ax.figure, ax
    fig = _plot.figure(max(6.0, min(24.0, 0.12 * n + 3)), 4.5)
    return fig, fig.add_subplot()


def plot_distributions(result: "RobustnessResult", measure: Any = None, ax: Any = None, kind: str = "box",
                       save: str | Path | None = None) -> Any:
    """Replicate distribution of each system's mean score (box or violin), systems in order of
    their unperturbed score, with the unperturbed score as a dot (Rashidi et al. 2023 Fig. 6's
    question, per system).  Returns the matplotlib Figure."""
    m = result._measure(measure)
    if kind not in ("box", "violin"):
        raise InputError(f"kind must be 'box' or 'violin', got {kind!r}")
    fig, ax = _target(ax, len(result.names))
    M0, M = result.true[m].mean(axis=1), result.means[m]
    order = np.argsort(-M0, kind="stable")
    pos = np.arange(1, len(order) + 1)
    if kind == "box":
        ax.boxplot(M[order].T, positions=pos, widths=0.6, showfliers=False)
    else:
        ax.violinplot(M[order].T, positions=pos, widths=0.8, showextrema=False)
    ax.plot(pos, M0[order], "o", color="tab:red", markersize=3, label="unperturbed qrels")
    ax.set_xticks(pos)
    ax.set_xticklabels(np.asarray(result.names)[order], rotation=90,
                       fontsize=max(3, min(8, 400 // max(len(order), 1))))
    ax.set_ylabel(f"mean {m}")
    ax.set_title(f"{m} over {result.params['n_replicates']} perturbed qrels")
    ax.legend(loc="upper right", fontsize=8)
    return _plot.save(fig, save)


def plot_ranks(result: "RobustnessResult", measure: Any = None, ax: Any = None,
               save: str | Path | None = None) -> Any:
    """True rank of the system observed at each rank, over the replicates (box per observed
    rank, identity line for reference; Rashidi et al. 2023 Figs 7-9).  Returns the Figure."""
    m = result._measure(measure)
    S = len(result.names)
    fig, ax = _target(ax, S)
    pos = np.arange(1, S + 1)
    ax.boxplot(result.true_rank_at[m], positions=pos, widths=0.6, showfliers=True,
               flierprops={"markersize": 2})
    ax.plot([1, S], [1, S], color="tab:grey", linewidth=0.8)
    step = max(1, S // 10)
    ax.set_xticks(pos[::step])
    ax.set_xticklabels(pos[::step])
    ax.set_xlabel(f"observed rank ({m}, perturbed qrels)")
    ax.set_ylabel("true rank (unperturbed qrels)")
    ax.set_title(f"{m}: true rank given observed rank")
    return _plot.save(fig, save)
