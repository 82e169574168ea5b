"""Plots of judgment selection: RBP ranges per run and judging curves (Moffat, Webber & Zobel 2007,
Figures 1-3, Table 2)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._plot import figure, save as save_figure
from .._validation import InputError, check_choice

__all__ = ["plot_ranges", "plot_curves"]


def plot_ranges(system_bounds: pd.DataFrame, order_by: pd.Series | Sequence[str] | None = None,
                kind: str = "full", ax: Any = None, title: str | None = None, color: str = "C0",
                save: str | Path | None = None) -> Any:
    """RBP ranges per system, as Moffat et al. 2007, Figures 1-3: a bar from the mean base to the
    mean upper bound (``kind="full"``) or to the mean projected value (``"projected"``), with the
    systems ordered by a reference score (descending) or listed order.  Draws on ``ax`` when given,
    else on a new Figure; returns the Figure (written to ``save`` when a path is given)."""
    check_choice("kind", kind, ("full", "projected"))
    need = {"name", "base", "upper"} | ({"projected"} if kind == "projected" else set())
    missing = need - set(system_bounds.columns)
    if missing:
        raise InputError(f"plot_ranges: system_bounds is missing column(s) {sorted(missing)}")
    b = system_bounds.set_index("name")
    if order_by is None:
        names = list(b.index)
    elif isinstance(order_by, pd.Series):
        names = list(order_by.sort_values(ascending=False, kind="stable").index)
    else:
        names = [str(x) for x in order_by]
    unknown = [n for n in names if n not in b.index]
    if unknown:
        raise InputError(f"plot_ranges: order_by names {unknown[:3]} are not in system_bounds")
    b = b.loc[names]
    top = b["upper"] if kind == "full" else b["projected"]
    if ax is None:
        ax = figure(10, 3.5).add_subplot()
    x = np.arange(len(b))
    ax.vlines(x, b["base"], top, color=color, linewidth=2)
    ax.plot(x, b["base"], "_", color="k", markersize=4)
    ax.set_xlim(-1, len(b))
    ax.set_ylim(0, 1)
    ax.set_xlabel("runs, by decreasing reference score" if order_by is not None else "runs")
    ax.set_ylabel("RBP " + ("base to upper" if kind == "full" else "base to projected"))
    if title:
        ax.set_title(title)
    return save_figure(ax.figure, save)


def plot_curves(summaries: pd.DataFrame, p_eval: float | None = None, by: str = "method",
                linestyle_by: str | None = None, axes: Any = None, save: str | Path | None = None) -> Any:
    """Relevant documents found and mean residual of the top runs against the number of
    judgments (Moffat et al. 2007, Table 2 and Sec. 5), one line per value of ``by`` (colour) and
    of ``linestyle_by`` (solid, dashed, ...), from :class:`SimulationResult` summaries (rows at
    one ``p_eval``: the given one, else the first).  Draws on the two ``axes`` when given, else on a
    new Figure; returns the Figure (written to ``save`` when a path is given)."""
    need = {by, "judgments", "relevant", "top_residual"} | ({linestyle_by} if linestyle_by else set())
    missing = need - set(summaries.columns)
    if missing:
        raise InputError(f"plot_curves: summaries are missing column(s) {sorted(missing)}")
    s = summaries
    if "p_eval" in s.columns:
        s = s[np.isclose(s["p_eval"], s["p_eval"].iloc[0] if p_eval is None else p_eval)]
    if axes is None:
        fig = figure(10, 3.5)
        axes = fig.subplots(1, 2)
    else:
        fig = axes[0].figure
    colours = {k: f"C{i}" for i, k in enumerate(pd.unique(s[by]))}
    styles = {k: ls for k, ls in zip(pd.unique(s[linestyle_by]) if linestyle_by else [None], ["-", "--", ":", "-."])}
    keys = [by] + ([linestyle_by] if linestyle_by else [])
    for key, g in s.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values("judgments")
        style = dict(color=colours[key[0]], linestyle=styles[key[1]] if linestyle_by else "-", marker=".")
        label = " / ".join(str(k) for k in key)
        axes[0].plot(g["judgments"], g["relevant"], label=label, **style)
        axes[1].plot(g["judgments"], g["top_residual"], label=label, **style)
    axes[0].set_xlabel("judgments")
    axes[0].set_ylabel("relevant documents found")
    axes[1].set_xlabel("judgments")
    axes[1].set_ylabel("mean residual of the top runs")
    axes[1].legend(fontsize=7)
    return save_figure(fig, save)
