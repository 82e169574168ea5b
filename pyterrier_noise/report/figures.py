"""The report's static figures: the RBP range of every system (Moffat, Webber & Zobel 2007, Figures 1-3).

Figures come from :func:`pyterrier_noise._plot.figure` (matplotlib's object API on an Agg canvas), so
drawing never touches pyplot nor switches the backend; every function returns the Figure and takes
``save=`` (a path, or None).  Colours follow :data:`pyterrier_noise._plot.COLOURS`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._plot import COLOURS, check_top, figure, label_systems, title_and_legend, save as _save, systems_width


def plot_rbp_ranges(base: pd.Series, residual: pd.Series, order: Sequence[str] | None = None,
                    highlight: Sequence[str] = (), title: str | None = None, ax: Any = None,
                    top: int | None = None, save: str | Path | None = None) -> Any:
    """RBP range per system: a bar from base to base + residual (Moffat, Webber & Zobel 2007, Fig. 1).

    ``order`` (default: by base, best first) sets the x axis; systems in ``highlight`` (e.g. the
    runs that did not contribute to the pool) are drawn in orange, the others in green, with a
    legend.  ``top=k`` draws the first k systems and summarises the rest as one grey bar (from the
    lowest base to the highest upper bound among them).  The figure's width grows with the number
    of systems and names are never cut.  Draws on ``ax`` if given, else on a new Figure; returns
    the Figure, written to ``save`` when a path is given.
    """
    names = [str(n) for n in (order if order is not None else base.sort_values(ascending=False, kind="stable").index)]
    k = check_top(top, len(names))
    shown, rest = (names, []) if k is None else (names[:k], names[k:])
    b = base.reindex(shown).to_numpy(float)
    r = residual.reindex(shown).to_numpy(float)
    n_bars = len(shown) + (1 if rest else 0)
    own = ax is None
    if own:
        fig = figure(systems_width(n_bars), 4.5)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    x = np.arange(len(shown))
    marked = set(map(str, highlight))
    is_out = np.array([n in marked for n in shown], dtype=bool)
    for flag, key, label in ((False, "pooled", "pooled runs" if marked else "runs"),
                             (True, "not pooled", "runs outside the pool")):
        sel = is_out == flag
        if not sel.any():
            continue
        ax.vlines(x[sel], b[sel], b[sel] + r[sel], colors=COLOURS[key], linewidth=4, alpha=0.55)
        ax.scatter(x[sel], b[sel], color=COLOURS[key], s=14, zorder=3, label=f"{label}: base, bar to upper bound")
    labels = list(shown)
    if rest:
        rb = base.reindex(rest).to_numpy(float)
        ru = rb + residual.reindex(rest).to_numpy(float)
        xr = len(shown)
        ax.vlines([xr], np.nanmin(rb), np.nanmax(ru), colors=COLOURS["rest"], linewidth=8, alpha=0.6,
                  label=f"the other {len(rest)} runs: lowest base to highest upper bound")
        ax.scatter([xr], [np.nanmedian(rb)], color=COLOURS["rest"], marker="_", s=120, zorder=3)
        labels.append(f"other {len(rest)} runs")
    label_systems(ax, labels, np.arange(n_bars))
    ax.set_ylabel("RBP: base to base + residual")
    ax.set_xlabel("runs, by decreasing base" if order is None else "runs")
    ax.set_ylim(0, 1)
    ax.grid(axis="y", alpha=0.3)
    title_and_legend(ax, title, own)
    return _save(fig, save)
