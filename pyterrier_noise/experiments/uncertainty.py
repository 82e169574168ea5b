"""Deprecated module: its names moved to :mod:`pyterrier_noise.experiments` (modules ``phi_match``,
``ap_bounds`` and ``depth``).  ``from pyterrier_noise.experiments.uncertainty import X`` still works
for one release and warns; import ``X`` from ``pyterrier_noise.experiments``."""
from __future__ import annotations

import importlib
from typing import Any

_MOVED = {
    **dict.fromkeys(["DEFAULT_GRID", "FINE_GRID", "DEPTH_GRID", "CORRELATIONS", "phi_grid", "PhiMatch",
                     "match_phi", "match_phi_many", "plot_phi_match", "scores_with_residuals",
                     "add_residual_columns"], "phi_match"),
    **dict.fromkeys(["MAX_UNJUDGED", "APBounds", "ap_bounds"], "ap_bounds"),
    **dict.fromkeys(["pool_entry_depth", "pool_multiplicity", "multiplicity_table", "depth_labels",
                     "DepthExperiment", "depth_experiment"], "depth"),
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from .._warnings import deprecated
        deprecated(f"pyterrier_noise.experiments.uncertainty.{name}", f"pyterrier_noise.experiments.{name}")
        return getattr(importlib.import_module(f"{__package__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
