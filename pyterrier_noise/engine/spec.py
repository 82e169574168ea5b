"""What the engine computes for one measure column (:class:`MeasureSpec`) and the engine's constants."""
from __future__ import annotations

from dataclasses import dataclass

from .._vocab import GROUPED_POLICIES, TIE_POLICIES
from .registry import kernel_for

__all__ = ["TIE_POLICIES", "GROUPED_POLICIES", "CWL_DEPTH", "MeasureSpec"]

#: cwl_eval evaluates C/W/L measures over exactly this many ranks (padding or truncating).
CWL_DEPTH = 1000


@dataclass(frozen=True)
class MeasureSpec:
    """What the engine computes for one measure column.

    ``family``: a family of the kernel registry (:data:`~pyterrier_noise.engine.registry.KERNELS`:
    RBP, INST, INSQ, AP, nDCG, DCG, P, R, RR, Rprec, Bpref, Success, Judged, IPrec, ERR, NumRet,
    NumRel, NumRelRet).  ``component``: value (the base / lower bound), residual, upper (value +
    residual) or projected (RBP only: base / judged weight).  Relevance: binary ``label >= rel``
    unless ``max_rel`` is set, in which case the gain is ``clip(label, 0, max_rel) / max_rel``
    (ir_measures / cwl_eval semantics).  ``judged_only``: condensed lists (unjudged documents
    removed before ranking, Sakai 2007; trec_eval ``-J``).  ``gains``: nDCG's label -> gain
    mapping as sorted ``(label, gain)`` pairs.  ``recall``: IPrec's recall level.  Each kernel
    validates the fields it reads and refuses the others.
    """

    family: str
    component: str = "value"
    p: float | None = None
    T: float | None = None
    rel: float = 1.0
    max_rel: float | None = None
    cutoff: int | None = None
    tail: str = "cwl"  # INST / INSQ: "cwl" (1,000 ranks, cwl_eval) or "exact" (infinite tail)
    judged_only: bool = False
    gains: tuple | None = None
    recall: float | None = None

    def validate(self) -> "MeasureSpec":
        kernel_for(self.family).check(self)
        return self
