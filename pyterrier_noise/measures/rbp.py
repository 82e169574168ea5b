"""RBP with its residual, upper bound and projected value (Moffat and Zobel 2008; Moffat, Webber
and Zobel 2007), each a measure of its own so that it gets its own column in ``pt.Experiment``."""
from __future__ import annotations

from .base import MAX_REL, NUMBER, REL, TIES, NoiseMeasure, Param

__all__ = ["RBPBase", "RBPResidual", "RBPUpper", "RBPProjected"]


class _RBP(NoiseMeasure):
    FAMILY = "RBP"
    CITATION = "Moffat and Zobel 2008, Eq. 1-2"
    PARAMS = {"p": Param(NUMBER, 0.8, desc="persistence"), "rel": REL, "max_rel": MAX_REL, "ties": TIES,
              "cutoff": Param(int, desc="evaluate the top k only (the residual then includes p^k)")}


class _RBPBase(_RBP):
    """RBP over judged documents (unjudged count 0): the lower bound."""
    DEFAULT = 0.0


class _RBPResidual(_RBP):
    """RBP residual: weight of unjudged ranks and of the tail after the run."""
    COMPONENT = "residual"
    DEFAULT = 1.0


class _RBPUpper(_RBP):
    """RBP upper bound: base + residual."""
    COMPONENT = "upper"
    DEFAULT = 1.0


class _RBPProjected(_RBP):
    """RBP projected: base / judged weight (Moffat, Webber and Zobel 2007, Sec. 2); the midpoint 0.5
    where nothing is judged."""
    COMPONENT = "projected"
    DEFAULT = 0.5
    CITATION = "Moffat, Webber and Zobel 2007, Sec. 2"


RBPBase, RBPResidual, RBPUpper, RBPProjected = _RBPBase(), _RBPResidual(), _RBPUpper(), _RBPProjected()
