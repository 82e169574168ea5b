"""The linear kernel: measures that are a weighted sum of gains over ranks."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..registry import Kernel
from .common import Labels, condensed_positions, segment_sum
from .ties import linear_tied

if TYPE_CHECKING:  # pragma: no cover
    from ..align import AlignedRuns
    from ..spec import MeasureSpec

__all__ = ["LinearKernel"]


class LinearKernel(Kernel):
    """A measure that is a weighted sum of gains over ranks (RBP, P, R, DCG, INSQ, Judged ...).

    Subclasses give :meth:`weights` (of each 0-based position, 0 past the cutoff) and :meth:`gain`;
    :meth:`finish` turns the weighted sum into the measure (nDCG divides by the ideal DCG, R by the
    number of relevant documents).  Components other than the value are RBP's and INSQ's
    (residual = weight not judged).  Under ``expected`` ties each tied document gets the mean
    weight of its group's positions; ``optimistic`` / ``pessimistic`` arrange each group by gain.
    """

    linear = True

    def weights(self, spec: "MeasureSpec", length: int) -> np.ndarray:
        raise NotImplementedError

    def gain(self, spec: "MeasureSpec", labels: Labels) -> np.ndarray:
        return labels.binary(spec)

    def finish(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, value: np.ndarray) -> np.ndarray:
        return value

    def compute(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels) -> np.ndarray:
        g = self.gain(spec, labels)
        if spec.judged_only:
            j = aligned.judged_positions()
            cpos = condensed_positions(aligned, labels)
            w = self.weights(spec, max(aligned.max_len, 1))
            data = np.where(cpos >= 0, w[np.maximum(cpos, 0)], 0.0) * g[j["jidx"]]
            return self.finish(aligned, spec, labels, segment_sum(aligned, data))
        w_eff = aligned.effective_weights(spec, self.weights)
        base = aligned.weighted_sum(w_eff, g)
        if spec.component == "value":
            return self.finish(aligned, spec, labels, base)
        mass = aligned.weighted_sum(w_eff, labels.judged())
        # everything not judged (unjudged ranks and the tail after the run) is residual
        residual = np.maximum(1.0 - mass, 0.0)
        if spec.component == "residual":
            return residual
        if spec.component == "upper":
            return base + residual
        with np.errstate(invalid="ignore", divide="ignore"):   # projected: NaN where nothing is judged
            return np.where(mass > 0, base / np.where(mass > 0, mass, 1.0), np.nan)

    def tied(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: Labels, mode: str) -> np.ndarray:
        w = self.weights(spec, max(aligned.max_len, 1))
        out = linear_tied(aligned, spec, labels, mode, w, self.gain(spec, labels))
        return self.finish(aligned, spec, labels, out) if spec.component == "value" else out
