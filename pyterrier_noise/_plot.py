"""One Figure helper and one style for every plot of the package.

Figures are made with matplotlib's object API (``matplotlib.figure.Figure`` on an Agg canvas), so
plotting never touches pyplot's global state nor switches a notebook's backend; every plotting
function returns the :class:`~matplotlib.figure.Figure` and takes ``save=`` (a path, or None).

Colours mean the same thing in every plot, static or interactive (:data:`COLOURS`): green for runs
that contributed to the judging pool, orange for runs that did not, black for the value under the
unperturbed (or original) judgments, purple for what replicates or tie orders spread it into, grey
for a summary of the runs left out by ``top=``; the selection methods have one colour each
(:data:`METHOD_COLOURS`).  Long lists of systems get a width from their number
(:func:`systems_width`), labels that shrink, then thin out, so that they never overlap
(:func:`label_systems`), and integer ticks for ranks (:func:`integer_ticks`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ._validation import InputError, check_int

#: what each colour means, in every plot of the package
COLOURS: dict[str, str] = {
    "pooled": "#1b9e77",        # a run that contributed to the judging pool (or any run when unknown)
    "not pooled": "#d95f02",    # a run that did not contribute to the pool
    "truth": "#222222",         # the value under the unperturbed / original judgments or scores
    "spread": "#7570b3",        # the spread over replicates or over the orders of tied documents
    "rest": "#999999",          # the runs summarised by top=k
    "reference": "#bbbbbb",     # reference lines (identity, zero)
}

#: one colour per judgment-selection method (depth pooling and Moffat, Webber & Zobel's Methods A, B, C)
METHOD_COLOURS: dict[str, str] = {"pool": "#666666", "A": "#1f78b4", "B": "#33a02c", "C": "#e31a1c"}

#: the smallest font (points) a system name is drawn in; below it labels are thinned instead
MIN_LABEL_POINTS = 6.0


def method_colour(method: Any, i: int = 0) -> str:
    """The colour of a selection method (:data:`METHOD_COLOURS`), else matplotlib's cycle colour ``C{i}``."""
    return METHOD_COLOURS.get(str(method), f"C{i % 10}")


def figure(width: float, height: float, **kwargs: Any) -> Any:
    """A new Figure of ``width`` x ``height`` inches with constrained layout, on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kwargs.setdefault("layout", "constrained")
    fig = Figure(figsize=(width, height), **kwargs)
    FigureCanvasAgg(fig)
    return fig


def systems_width(n: int, per_system: float = 0.13, minimum: float = 6.0, maximum: float = 22.0) -> float:
    """Figure width in inches for ``n`` systems side by side: ``per_system`` inches each plus the
    margins, between ``minimum`` and ``maximum`` (beyond it :func:`label_systems` thins the labels)."""
    return float(min(maximum, max(minimum, per_system * n + 2.0)))


def label_systems(ax: Any, names: Sequence[str], positions: Sequence[float] | None = None,
                  max_points: float = 8.0) -> int:
    """Name the systems on the x axis of ``ax``, rotated 90 degrees, in a font that fits the room
    per system; when even :data:`MIN_LABEL_POINTS` does not fit, only every k-th name is written.
    Returns k (1: every name).  Names are never cut: the figure's constrained layout makes room."""
    import numpy as np

    names = [str(n) for n in names]
    pos = np.arange(len(names)) if positions is None else np.asarray(positions, dtype=float)
    width_in = ax.figure.get_figwidth() * ax.get_position().width
    room_pt = 72.0 * width_in / max(len(names), 1)           # points of axis per system
    size = min(max_points, 0.85 * room_pt)
    step = 1
    if size < MIN_LABEL_POINTS:
        size = MIN_LABEL_POINTS
        step = int(np.ceil(1.1 * MIN_LABEL_POINTS / max(room_pt, 1e-9)))
    ax.set_xticks(pos[::step])
    ax.set_xticklabels(names[::step], rotation=90, fontsize=size)
    if len(pos):
        ax.set_xlim(pos.min() - 0.7, pos.max() + 0.7)
    return step


def title_and_legend(ax: Any, title: str | None = None, own: bool = True) -> Any:
    """Title and legend of ``ax`` outside the data: on a figure the package made (``own``), the
    title is the figure's (left) and the legend sits above the axes, in as many columns as the
    width allows; on a caller's Axes, the title is the Axes' (left) and the legend sits above its
    right end.  Returns the legend."""
    fig = ax.figure
    if not own:       # a caller's Axes: the title on its left, the legend above its right
        if title:
            ax.set_title(title, loc="left", fontsize=10)
        width = fig.get_figwidth() * ax.get_position().width
        ncols = max(1, min(3, int(width // 4.5)))
        return ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=ncols, fontsize=8, frameon=False,
                         borderaxespad=0.2)
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    ncols = max(1, min(3, int(fig.get_figwidth() // 4.5)))
    return ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=ncols, fontsize=8, frameon=False,
                     borderaxespad=0.2)


def integer_ticks(axis: Any) -> None:
    """Ticks at whole numbers only (ranks, counts) on a matplotlib ``Axis`` (``ax.xaxis`` / ``ax.yaxis``)."""
    from matplotlib.ticker import MaxNLocator
    axis.set_major_locator(MaxNLocator(nbins="auto", integer=True))


def rank_ticks(axis: Any, n: int, max_ticks: int = 12) -> None:
    """Ticks for ranks 1..n on a matplotlib ``Axis``: rank 1 and every multiple of a round step
    (1, 2, 5, 10, 20, 25, 50, ...), at most about ``max_ticks`` of them; never 0 or a fraction."""
    steps = [m * 10 ** e for e in range(7) for m in (1, 2, 2.5, 5) if float(m * 10 ** e).is_integer()]
    step = int(next(s for s in steps if n / s <= max_ticks))
    axis.set_ticks(sorted({1, *range(step, n + 1, step)}))


def check_top(top: Any, n: int) -> int | None:
    """``top`` as a positive int below ``n`` (None: show every system)."""
    if top is None:
        return None
    top = check_int("top", top)   # the number of systems to show
    return top if top < n else None


def save(fig: Any, path: str | Path | None, dpi: int = 110) -> Any:
    """Write ``fig`` to ``path`` (format from the suffix) when a path is given; return ``fig``."""
    if path is not None:
        path = Path(path)
        if not path.parent.exists():
            raise InputError(f"cannot write the plot to {path}: directory {path.parent} does not exist")
        from ._output import atomic_file
        with atomic_file(path, "plot") as tmp:   # same suffix: the format; renamed into place
            fig.savefig(tmp, dpi=dpi)
    return fig
