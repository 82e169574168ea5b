"""The report's figures: the RBP range of every system (Moffat, Webber & Zobel 2007, Figures 1-3).

Figures come from :func:`pyterrier_noise._plot.figure` (matplotlib's object API on an Agg canvas), so
drawing never touches pyplot nor switches the backend; every function returns the Figure and takes
``save=`` (a path, or None).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._plot import figure, save as _save


def plot_rbp_ranges(base: pd.Series, residual: pd.Series, order: Sequence[str] | None = None,
                    highlight: Sequence[str] = (), title: str | None = None, ax: Any = None,
                    save: str | Path | None = None) -> Any:
    """RBP range per system: a bar from base to base + residual (Moffat, Webber & Zobel 2007, Fig. 1).

    ``order`` (default: by base, best first) sets the x axis; systems in ``highlight`` are drawn in
    a second colour (e.g. the runs that did not contribute to the pool).  Draws on ``ax`` if given,
    else on a new Figure; returns the Figure, written to ``save`` when a path is given.
    """
    names = list(order) if order is not None else list(base.sort_values(ascending=False).index)
    b = base.reindex(names).to_numpy(float)
    r = residual.reindex(names).to_numpy(float)
    if ax is None:
        fig = figure(max(6.0, 0.28 * len(names) + 2), 4.0)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    x = np.arange(len(names))
    colours = np.where([n in set(highlight) for n in names], "#d95f02", "#1b9e77")
    ax.vlines(x, b, b + r, colors=colours, linewidth=4, alpha=0.55)
    ax.scatter(x, b, c=colours, s=14, zorder=3, label="base")
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_ylabel("RBP: base to base + residual")
    ax.set_ylim(0, 1)
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title)
    return _save(fig, save)
