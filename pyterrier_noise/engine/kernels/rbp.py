"""RBP (Moffat and Zobel 2008) with its residual, upper bound and projected value."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_probability
from ..registry import register_kernel
from .linear import LinearKernel

if TYPE_CHECKING:  # pragma: no cover
    from ..spec import MeasureSpec

__all__ = ["rbp_weights", "RBPKernel", "PROJECTED_UNDEFINED"]

#: RBP's projected value where nothing is judged (0 / 0): the midpoint of [base, upper] = [0, 1]
PROJECTED_UNDEFINED = 0.5


def rbp_weights(p: float, length: int) -> np.ndarray:
    """RBP's weight of each 0-based rank, ``(1 - p) p^i`` (Moffat and Zobel 2008, Eq 2): the one
    place the package computes them."""
    return (1.0 - p) * p ** np.arange(length, dtype=np.float64)


class RBPKernel(LinearKernel):
    """RBP base (judged documents only), residual (weight not judged, tail included), upper
    (base + residual) and projected (base / judged weight; NaN where nothing is judged)."""

    family = "RBP"
    components = ("value", "residual", "upper", "projected")
    uses = frozenset({"p", "rel", "max_rel", "cutoff"})

    def undefined(self, spec: "MeasureSpec") -> float | None:
        """The projected value where nothing is judged: :data:`PROJECTED_UNDEFINED`."""
        return PROJECTED_UNDEFINED if spec.component == "projected" else None

    def check_params(self, spec: "MeasureSpec") -> None:
        check_probability("RBP persistence p", spec.p)

    def weights(self, spec: "MeasureSpec", length: int) -> np.ndarray:
        w = rbp_weights(spec.p, length)
        if spec.cutoff is not None:
            w[int(spec.cutoff):] = 0.0
        return w


register_kernel(RBPKernel())
