"""The capability table: every measure the engine computes, declared once.

Each :class:`Capability` says which ir_measures name it serves, the engine family, how
ir_measures' parameters map onto the engine's :class:`~pyterrier_noise.engine.MeasureSpec`, the
trec_eval names that mean the same measure, what it is and where it comes from.  The measure
parser (:func:`~pyterrier_noise.measures.to_spec`), the ir_measures provider, the command line's
list of measures and the docs' measure table (tests/measures) all read this table.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ir_measures.measures import ParamInfo

from ..engine import kernel_for
from .base import NUMBER

__all__ = ["Capability", "CAPABILITIES", "TREC_EVAL_NAMES", "OWN_MEASURES", "measure_rows"]


@dataclass(frozen=True)
class Capability:
    """One ir_measures measure name the engine computes."""

    name: str
    family: str
    description: str
    citation: str
    #: ir_measures parameter -> MeasureSpec field
    params: dict = field(default_factory=dict)
    #: parameters the engine adds to ir_measures' own (name -> ParamInfo)
    extra: dict = field(default_factory=dict)
    #: trec_eval's names of the measure: "map" (no cutoff) or "P_" (a prefix taking a cutoff)
    trec_eval: tuple = ()
    example: str = ""
    #: spec fields the engine needs that ir_measures leaves to their defaults (RBP's p, INST's T)
    defaults: dict = field(default_factory=dict)
    #: the family when ``rel`` is given (ir_measures' NumRelRet is NumRet(rel=1))
    family_with_rel: str | None = None
    #: graded gains replace binary relevance when max_rel is given (rel then plays no part)
    max_rel_replaces_rel: bool = False


_BIN = {"rel": "rel", "judged_only": "judged_only"}

CAPABILITIES: dict[str, Capability] = {c.name: c for c in [
    Capability("AP", "AP", "average precision; AP@k counts relevant documents in the top k only",
               "trec_eval map / map_cut", {"cutoff": "cutoff", **_BIN}, trec_eval=("map", "map_cut_"), example="AP@100"),
    Capability("P", "P", "precision at k", "trec_eval P", {"cutoff": "cutoff", **_BIN}, trec_eval=("P_",),
               example="P@10"),
    Capability("R", "R", "recall at k: relevant documents in the top k over the topic's relevant judgments",
               "trec_eval recall", {"cutoff": "cutoff", **_BIN}, trec_eval=("recall_",), example="R@100"),
    Capability("Rprec", "Rprec", "precision at R, the topic's number of relevant judgments", "trec_eval Rprec",
               dict(_BIN), trec_eval=("Rprec",), example="Rprec"),
    Capability("RR", "RR", "reciprocal rank of the first relevant document", "trec_eval recip_rank",
               {"cutoff": "cutoff", **_BIN}, trec_eval=("recip_rank",), example="RR@10"),
    Capability("Success", "Success", "1 if a relevant document is in the top k", "trec_eval success",
               {"cutoff": "cutoff", **_BIN}, trec_eval=("success_",), example="Success@10"),
    Capability("Bpref", "Bpref", "binary preference: relevant documents ranked above judged non-relevant ones",
               "Buckley and Voorhees 2004; trec_eval bpref", {"rel": "rel"}, trec_eval=("bpref",), example="Bpref"),
    Capability("nDCG", "nDCG", "normalised DCG, log2 discount, the label (or a gains mapping) as gain",
               "Jarvelin and Kekalainen 2002; trec_eval ndcg / ndcg_cut",
               {"cutoff": "cutoff", "gains": "gains", "judged_only": "judged_only", "dcg": None},
               trec_eval=("ndcg", "ndcg_cut_"), example="nDCG@10"),
    Capability("IPrec", "IPrec", "interpolated precision at a recall level", "trec_eval iprec_at_recall",
               {"recall": "recall", **_BIN}, trec_eval=("iprec_at_recall_",), example="IPrec@0.5"),
    Capability("ERR", "ERR", "expected reciprocal rank (cascade model, stopping probability (2^g - 1) / 16)",
               "Chapelle et al. 2009; gdeval, as ir_measures serves it", {"cutoff": "cutoff"}, example="ERR@20"),
    Capability("Judged", "Judged", "share of the top k documents that have a judgment",
               "ir_measures' Judged, after OpenNIR", {"cutoff": "cutoff"}, example="Judged@10"),
    Capability("NumRet", "NumRet", "documents ranked; NumRet(rel=1) = NumRelRet",
               "trec_eval num_ret / num_rel_ret", {"rel": "rel"}, trec_eval=("num_ret",), example="NumRet",
               family_with_rel="NumRelRet"),
    Capability("NumRelRet", "NumRelRet", "relevant documents ranked", "trec_eval num_rel_ret",
               {"rel": "rel"}, trec_eval=("num_rel_ret",), example="NumRelRet"),
    Capability("NumRel", "NumRel", "relevant judgments of the topic", "trec_eval num_rel",
               {"rel": "rel"}, trec_eval=("num_rel",), example="NumRel"),
    Capability("RBP", "RBP", "rank-biased precision over judged documents (the base; see RBPResidual)",
               "Moffat and Zobel 2008", {"p": "p", "cutoff": "cutoff", "rel": "rel", "max_rel": "max_rel"},
               extra={"max_rel": ParamInfo(dtype=NUMBER, required=False,
                                           desc="graded gains min(label, max_rel) / max_rel, as rbp_eval")},
               example="RBP(p=0.8)", defaults={"p": 0.8}, max_rel_replaces_rel=True),
    Capability("INST", "INST", "INST lower bound (see INSTResidual)", "Moffat et al. 2015; cwl_eval",
               {"T": "T", "max_rel": "max_rel", "rel": "rel", "min_rel": None}, example="INST(T=3,max_rel=2)",
               defaults={"T": 1.0}),
    Capability("INSQ", "INSQ", "INSQ lower bound (see INSQResidual)", "Moffat et al. 2012; cwl_eval",
               {"T": "T", "max_rel": "max_rel", "rel": "rel", "min_rel": None}, example="INSQ(T=3,max_rel=2)",
               defaults={"T": 1.0}),
]}

#: trec_eval's measure names (exact, no cutoff) -> the ir_measures string they mean
TREC_EVAL_NAMES = {t: c.name for c in CAPABILITIES.values() for t in c.trec_eval if not t.endswith("_")}

#: the package's own measures (the classes in rbp.py, cwl.py, ties.py), in their canonical order
OWN_MEASURES = ("RBPBase", "RBPResidual", "RBPUpper", "RBPProjected", "INSTBase", "INSTResidual", "INSTUpper",
                "INSQBase", "INSQResidual", "INSQUpper", "APTies", "nDCGTies", "PTies", "RRTies")


def measure_rows() -> list[dict]:
    """One row per measure of the capability table, as the command line's ``--list-measures`` and
    docs/measures.md show it: name, example, tie policies, how topics aggregate, description,
    reference and trec_eval's names."""
    rows = []
    for c in CAPABILITIES.values():
        k = kernel_for(c.family)
        modes = k.tie_modes
        rows.append({"measure": c.name, "example": c.example, "ties": ", ".join(("trec_eval", "given", *modes)),
                     "topics": k.aggregate, "what": c.description, "reference": c.citation,
                     "trec_eval": ", ".join(t + ("k" if t.endswith("_") else "") for t in c.trec_eval)})
    return rows
