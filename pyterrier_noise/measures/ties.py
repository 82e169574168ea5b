"""trec_eval's AP, nDCG, P and RR with a ``ties`` parameter (Yang 2019 thesis, Sec. 3.1;
McSherry and Najork 2008 for the expected AP), for ``pt.Experiment``."""
from __future__ import annotations

from .base import REL, TIES, NoiseMeasure, Param

__all__ = ["APTies", "nDCGTies", "PTies", "RRTies", "TIE_AWARE"]


class _APTies(NoiseMeasure):
    """Average precision (trec_eval's) under a tie policy."""
    FAMILY, DEFAULT, CITATION = "AP", 0.0, "McSherry and Najork 2008; Yang 2019, Sec. 3.1"
    PARAMS = {"ties": TIES, "rel": REL, "cutoff": Param(int, desc="rank cutoff (AP@k)")}


class _nDCGTies(NoiseMeasure):
    """nDCG (trec_eval's: log2 discount, label gains) under a tie policy."""
    FAMILY, DEFAULT, CITATION = "nDCG", 0.0, "Jarvelin and Kekalainen 2002; Yang 2019, Sec. 3.1"
    PARAMS = {"ties": TIES, "cutoff": Param(int, desc="rank cutoff (nDCG@k)")}


class _PTies(NoiseMeasure):
    """Precision at k (trec_eval's) under a tie policy; needs @k."""
    FAMILY, DEFAULT, CITATION = "P", 0.0, "Yang 2019, Sec. 3.1"
    PARAMS = {"ties": TIES, "rel": REL, "cutoff": Param(int, desc="rank cutoff k", required=True)}


class _RRTies(NoiseMeasure):
    """Reciprocal rank (trec_eval's) under a tie policy."""
    FAMILY, DEFAULT, CITATION = "RR", 0.0, "Yang 2019, Sec. 3.3"
    PARAMS = {"ties": TIES, "rel": REL, "cutoff": Param(int, desc="rank cutoff (RR@k)")}


APTies, nDCGTies, PTies, RRTies = _APTies(), _nDCGTies(), _PTies(), _RRTies()


#: the tie-aware standard measures (trec_eval's definitions with a ``ties`` parameter)
TIE_AWARE = [APTies, nDCGTies, PTies, RRTies]
