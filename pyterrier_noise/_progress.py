"""One progress-bar helper: tqdm's console-or-notebook bar, or a silent stand-in when disabled.

PyTerrier's ``pt.tqdm`` is used when PyTerrier is already imported (it follows
``pt.utils.set_tqdm``); PyTerrier is never imported just for a bar.
"""
from __future__ import annotations

import sys
from typing import Any


def progress_bar(iterable: Any = None, *, total: int | None = None, desc: str | None = None,
                 unit: str = "it", enabled: bool = True, **kwargs: Any) -> Any:
    """A tqdm bar over ``iterable`` (or a manual one of ``total`` steps); disabled when not ``enabled``."""
    pt = sys.modules.get("pyterrier")
    if pt is not None and hasattr(pt, "tqdm"):
        bar = pt.tqdm
    else:
        from tqdm.auto import tqdm as bar
    return bar(iterable, total=total, desc=desc, unit=unit, disable=not enabled, **kwargs)
