"""One Figure helper for every plot of the package.

Figures are made with matplotlib's object API (``matplotlib.figure.Figure`` on an Agg canvas), so
plotting never touches pyplot's global state nor switches a notebook's backend; every plotting
function returns the :class:`~matplotlib.figure.Figure` and takes ``save=`` (a path, or None).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._validation import InputError


def figure(width: float, height: float, **kwargs: Any) -> Any:
    """A new Figure of ``width`` x ``height`` inches with constrained layout, on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kwargs.setdefault("layout", "constrained")
    fig = Figure(figsize=(width, height), **kwargs)
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, path: str | Path | None, dpi: int = 110) -> Any:
    """Write ``fig`` to ``path`` (format from the suffix) when a path is given; return ``fig``."""
    if path is not None:
        path = Path(path)
        if not path.parent.exists():
            raise InputError(f"cannot write the plot to {path}: directory {path.parent} does not exist")
        fig.savefig(path, dpi=dpi)
    return fig
