"""INST (Moffat et al. 2015) and INSQ (Moffat et al. 2012) bounds and residuals, as cwl_eval's
``-r`` reports them (Azzopardi et al. 2019), or with the exact infinite tail (Yang 2019, Sec. 2.3)."""
from __future__ import annotations

from .._vocab import CWL_TAILS
from .base import MAX_REL, NUMBER, REL, TIES, NoiseMeasure, Param

__all__ = ["INSTBase", "INSTResidual", "INSTUpper", "INSQBase", "INSQResidual", "INSQUpper"]

_CWL_PARAMS = {
    "T": Param(NUMBER, 1.0, desc="expected total relevance the user seeks"), "rel": REL, "max_rel": MAX_REL,
    "ties": TIES,
    "tail": Param(str, "cwl", CWL_TAILS, "cwl: cwl_eval's 1,000 ranks; exact: the infinite tail in closed form"),
}


class _INST(NoiseMeasure):
    FAMILY = "INST"
    CITATION = "Moffat et al. 2015; Azzopardi et al. 2019"
    PARAMS = _CWL_PARAMS


class _INSTBase(_INST):
    """INST lower bound (unjudged documents gain 0)."""
    DEFAULT = 0.0


class _INSTResidual(_INST):
    """INST residual (upper minus lower bound)."""
    COMPONENT = "residual"
    DEFAULT = 1.0


class _INSTUpper(_INST):
    """INST upper bound (unjudged documents gain 1)."""
    COMPONENT = "upper"
    DEFAULT = 1.0


class _INSQ(NoiseMeasure):
    FAMILY = "INSQ"
    CITATION = "Moffat et al. 2012; Azzopardi et al. 2019"
    PARAMS = _CWL_PARAMS


class _INSQBase(_INSQ):
    """INSQ lower bound (unjudged documents gain 0)."""
    DEFAULT = 0.0


class _INSQResidual(_INSQ):
    """INSQ residual (upper minus lower bound)."""
    COMPONENT = "residual"
    DEFAULT = 1.0


class _INSQUpper(_INSQ):
    """INSQ upper bound (unjudged documents gain 1)."""
    COMPONENT = "upper"
    DEFAULT = 1.0


INSTBase, INSTResidual, INSTUpper = _INSTBase(), _INSTResidual(), _INSTUpper()
INSQBase, INSQResidual, INSQUpper = _INSQBase(), _INSQResidual(), _INSQUpper()
