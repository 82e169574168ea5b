"""What the engine computes for one measure column (:class:`MeasureSpec`) and the engine's constants."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import InputError, check_probability

TIE_POLICIES = ("trec_eval", "given", "expected", "optimistic", "pessimistic")
#: policies that treat groups of equal scores as unordered (they keep tie-group boundaries)
GROUPED_POLICIES = ("expected", "optimistic", "pessimistic")
#: measures whose value is not a weighted sum over ranks (their expected value needs its own kernel)
NONLINEAR = ("AP", "RR", "INST")
#: cwl_eval evaluates C/W/L measures over exactly this many ranks (padding or truncating).
CWL_DEPTH = 1000


@dataclass(frozen=True)
class MeasureSpec:
    """What the engine computes for one measure column.

    ``family``: RBP, INST, INSQ, AP, nDCG, P, RR, DCG.  ``component``: value (the base / lower
    bound), residual, upper (value + residual) or projected (RBP only: base / judged weight).
    Relevance: binary ``label >= rel`` unless ``max_rel`` is set, in which case the gain is
    ``clip(label, 0, max_rel) / max_rel`` (ir_measures / cwl_eval semantics).
    """

    family: str
    component: str = "value"
    p: float | None = None
    T: float | None = None
    rel: float = 1.0
    max_rel: float | None = None
    cutoff: int | None = None
    tail: str = "cwl"  # INST / INSQ: "cwl" (1,000 ranks, cwl_eval) or "exact" (infinite tail)

    def validate(self) -> "MeasureSpec":
        if self.family not in ("RBP", "INST", "INSQ", "AP", "nDCG", "P", "RR", "DCG"):
            raise InputError(f"unknown measure family {self.family!r}")
        if self.component not in ("value", "residual", "upper", "projected"):
            raise InputError(f"unknown component {self.component!r}")
        if self.component != "value" and self.family not in ("RBP", "INST", "INSQ"):
            raise InputError(f"{self.family} has no {self.component}: only RBP, INST and INSQ have residuals")
        if self.component == "projected" and self.family != "RBP":
            raise InputError("only RBP has a projected value")
        if self.family == "RBP":
            check_probability("RBP persistence p", self.p)
        if self.family in ("INST", "INSQ"):
            if self.T is None or not np.isfinite(self.T) or self.T <= 0:
                raise InputError(f"{self.family} needs T > 0, got T={self.T!r}")
            if self.family == "INST" and self.T < 0.25:
                raise InputError(f"INST needs T >= 0.25 for its continuation probabilities to be valid, got {self.T}")
            if self.tail not in ("cwl", "exact"):
                raise InputError(f"tail must be 'cwl' or 'exact', got {self.tail!r}")
            if self.cutoff is not None:
                raise InputError(f"{self.family} has no cutoff: its user model decides how deep to look")
        if self.cutoff is not None and (int(self.cutoff) != self.cutoff or self.cutoff <= 0):
            raise InputError(f"cutoff must be a positive integer, got {self.cutoff!r}")
        if self.max_rel is not None and not self.max_rel > 0:
            raise InputError(f"max_rel must be positive, got {self.max_rel!r}")
        if self.family == "P" and self.cutoff is None:
            raise InputError("P needs a cutoff, e.g. P@10")
        return self

    @property
    def graded(self) -> bool:
        return self.max_rel is not None or self.family in ("nDCG", "DCG")

