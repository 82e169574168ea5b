"""The engine's measure kernels, one per family, in the kernel registry
(:data:`~pyterrier_noise.engine.registry.KERNELS`).

Modules: :mod:`.common` (gains, sums over topics and segments, condensed ranks, :class:`Labels`),
:mod:`.linear` (weighted sums over ranks), :mod:`.ties` (tie groups and orderings), and one module
per family group: :mod:`.rbp`, :mod:`.cwl` (INST, INSQ), :mod:`.ap` (AP, Bpref), :mod:`.rr` (RR,
Success), :mod:`.dcg` (DCG, nDCG, ERR), :mod:`.precision` (P, R, Rprec, IPrec, Judged, counts).
Importing this package registers every kernel.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import InputError
from ..registry import kernel_for
from . import ap, cwl, dcg, precision, rbp, rr  # noqa: F401  (each registers its kernels)
from .common import Labels, gains, segment_sum, topic_sum
from .cwl import INST_CHUNK_ELEMENTS, INST_MAX_ORDERINGS, inst_bounds, inst_utility, segment_chunks
from .dcg import ideal_dcg
from .rbp import rbp_weights
from .ties import MODES, expected_ap

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["Labels", "gains", "segment_sum", "topic_sum", "rbp_weights", "position_weights", "inst_utility",
           "inst_bounds", "segment_chunks", "ideal_dcg", "INST_CHUNK_ELEMENTS", "INST_MAX_ORDERINGS", "MODES",
           "expected_ap", "evaluate_tied"]


def position_weights(spec: "MeasureSpec", length: int) -> np.ndarray:
    """Weight of each 0-based position (0 beyond the cutoff) of a linear measure (RBP, P, R, DCG,
    nDCG, INSQ, Judged), from its kernel."""
    kernel = kernel_for(spec.family)
    if not kernel.linear:
        raise InputError(f"{spec.family} is not a weighted sum over ranks: it has no position weights")
    return kernel.weights(spec, length)


def evaluate_tied(aligned: "AlignedRuns", spec: "MeasureSpec", L: np.ndarray, mode: str) -> np.ndarray:
    """Tie-aware value of one measure for every (run, topic, version) of aligned runs.

    Yang (2019) thesis Sec. 3.1 (expected value over all orderings of the tied groups; the
    optimistic and pessimistic orderings), McSherry and Najork (2008) for the exact expected AP;
    :mod:`.ties` gives the formulas.

    Args:
        aligned: runs aligned with tie groups (``AlignedRuns.build(..., ties="expected" |
            "optimistic" | "pessimistic")``; with another policy every group is a single
            position and every mode gives that policy's value).
        spec: the measure (a family whose kernel has this mode).
        L: label matrix ``(n_judgments, R)`` over ``aligned.table`` (NaN = unjudged).
        mode: ``"expected"``, ``"optimistic"`` or ``"pessimistic"``.

    Returns:
        Array ``(aligned.n_segments, R)`` (segment = run_index * n_topics + topic_index).
    """
    if mode not in MODES:
        raise InputError(f"mode must be one of {MODES}, got {mode!r}")
    if not hasattr(spec, "family") or not hasattr(spec, "validate"):
        raise InputError(f"spec must be a MeasureSpec, got {type(spec).__name__}")
    spec = spec.validate()
    kernel = kernel_for(spec.family)
    kernel.check_ties(spec, mode)
    L = np.asarray(L, dtype=np.float64)
    if L.ndim != 2 or L.shape[0] != len(aligned.table):
        raise InputError(f"L must be a label matrix of shape (n_judgments={len(aligned.table)}, R), got {L.shape}")
    return kernel.tied(aligned, spec, Labels(L, (spec,)), mode)
