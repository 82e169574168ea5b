"""Deprecated: the old single module of pairwise crowd judgments, now split across :mod:`pyterrier_noise.crowd`.

Every name it exported (and ``METHODS``, ``COLUMN_ALIASES``) still resolves here for one release
and emits a DeprecationWarning naming ``pyterrier_noise.crowd.<name>``.
"""
from __future__ import annotations

from typing import Any

from .._warnings import deprecated

_MOVED = ("COLUMNS", "COLUMN_ALIASES", "METHODS", "read_pairwise", "simulate_crowd", "design_partitions",
          "document_scores", "aggregate", "ratio_matrix_scores", "to_categories", "transitivity_inconsistency",
          "absolute_inconsistency", "gold_accuracy", "position_bias", "PositionBias", "worker_quality",
          "document_agreement", "document_tau", "judgment_alpha", "system_agreement", "SystemAgreement",
          "workers_path")

__all__ = list(_MOVED)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from .. import crowd
        deprecated(f"pyterrier_noise.crowd.pairwise.{name}", f"pyterrier_noise.crowd.{name}")
        return getattr(crowd, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MOVED))
