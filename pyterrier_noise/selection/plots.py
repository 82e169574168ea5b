"""Plots of judgment selection: RBP ranges per run and judging curves (Moffat, Webber & Zobel 2007,
Figures 1-3, Table 2).  Both return a matplotlib Figure, take ``save=`` and follow the package's
colours (:data:`pyterrier_noise._plot.COLOURS`, one colour per method)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._plot import (COLOURS, check_top, figure, integer_ticks, label_systems, title_and_legend, method_colour,
                     save as save_figure, systems_width)
from .._validation import InputError, check_choice
from .._vocab import CURVE_KINDS, CurveKind

__all__ = ["plot_ranges", "plot_curves"]


def plot_ranges(system_bounds: pd.DataFrame, order_by: pd.Series | Sequence[str] | None = None,
                kind: CurveKind = "full", ax: Any = None, title: str | None = None, color: str = COLOURS["pooled"],
                top: int | None = None, save: str | Path | None = None) -> Any:
    """RBP ranges per system, as Moffat et al. 2007, Figures 1-3: a bar from the mean base to the
    mean upper bound (``kind="full"``) or to the mean projected value (``"projected"``), with the
    systems ordered by a reference score (descending) or listed order, each labelled by its name.
    ``top=k`` draws the first k systems and one grey bar for the rest.  Draws on ``ax`` when given,
    else on a new Figure sized for the systems; returns the Figure (written to ``save`` when a
    path is given)."""
    check_choice("kind", kind, CURVE_KINDS)
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
    k = check_top(top, len(b))
    rest = b.iloc[k:] if k is not None else b.iloc[:0]
    b = b.iloc[:k] if k is not None else b
    end = "upper" if kind == "full" else "projected"
    n_bars = len(b) + (1 if len(rest) else 0)
    own = ax is None
    if own:
        ax = figure(systems_width(n_bars), 4.0).add_subplot()
    x = np.arange(len(b))
    what = "base to upper bound" if kind == "full" else "base to projected value"
    ax.vlines(x, b["base"], b[end], color=color, linewidth=3, label=f"mean RBP, {what}")
    ax.plot(x, b["base"], "_", color=COLOURS["truth"], markersize=6, label="mean base")
    labels = [str(n) for n in b.index]
    if len(rest):
        ax.vlines([len(b)], rest["base"].min(), rest[end].max(), color=COLOURS["rest"], linewidth=7,
                  label=f"the other {len(rest)} runs: lowest base to highest {end}")
        labels.append(f"other {len(rest)} runs")
    label_systems(ax, labels, np.arange(n_bars))
    ax.set_ylim(0, 1)
    ax.set_xlabel("runs, by decreasing reference score" if order_by is not None else "runs")
    ax.set_ylabel("RBP " + ("base to upper" if kind == "full" else "base to projected"))
    title_and_legend(ax, title, own)
    return save_figure(ax.figure, save)


def plot_curves(summaries: pd.DataFrame, p_eval: float | None = None, by: str = "method",
                linestyle_by: str | None = None, axes: Any = None, save: str | Path | None = None) -> Any:
    """Relevant documents found and mean residual of the top runs against the number of
    judgments (Moffat et al. 2007, Table 2 and Sec. 5), one line per value of ``by`` (colour) and
    of ``linestyle_by`` (solid, dashed, ...), from :class:`SimulationResult` summaries (rows at
    one ``p_eval``: the given one, else the first).  Both panels have a title; the legend (one
    for the figure) names every line.  Draws on the two ``axes`` when given, else on a new
    Figure; returns the Figure (written to ``save`` when a path is given)."""
    need = {by, "judgments", "relevant", "top_residual"} | ({linestyle_by} if linestyle_by else set())
    missing = need - set(summaries.columns)
    if missing:
        raise InputError(f"plot_curves: summaries are missing column(s) {sorted(missing)}")
    s = summaries
    if "p_eval" in s.columns:
        p_eval = s["p_eval"].iloc[0] if p_eval is None else p_eval
        s = s[np.isclose(s["p_eval"], p_eval)]
    if axes is None:
        fig = figure(10, 4.0)
        axes = fig.subplots(1, 2)
    else:
        fig = axes[0].figure
    colours = {k: method_colour(k, i) for i, k in enumerate(pd.unique(s[by]))}
    styles = {k: ls for k, ls in zip(pd.unique(s[linestyle_by]) if linestyle_by else [None], ["-", "--", ":", "-."])}
    keys = [by] + ([linestyle_by] if linestyle_by else [])
    for key, g in s.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values("judgments")
        style = dict(color=colours[key[0]], linestyle=styles[key[1]] if linestyle_by else "-", marker=".")
        label = " / ".join(str(k) for k in key)
        if by == "method" and str(key[0]) in ("A", "B", "C"):
            label = "Method " + label
        axes[0].plot(g["judgments"], g["relevant"], label=label, **style)
        axes[1].plot(g["judgments"], g["top_residual"], label=label, **style)
    for ax in axes:
        ax.set_xlabel("judgments")
        integer_ticks(ax.xaxis)
        ax.grid(alpha=0.3)
    integer_ticks(axes[0].yaxis)
    axes[0].set_ylabel("relevant documents found")
    axes[0].set_title("Relevant documents found")
    axes[1].set_ylabel("mean residual of the top runs")
    axes[1].set_title("Uncertainty left in the top runs" + (f" (RBP p = {p_eval:g})" if p_eval is not None else ""))
    handles, labels = axes[0].get_legend_handles_labels()
    if fig.get_layout_engine() is not None:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)
    else:
        axes[1].legend(handles, labels, fontsize=8)
    return save_figure(fig, save)
