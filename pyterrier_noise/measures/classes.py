"""ir_measures measures for RBP and INST / INSQ with residuals, served by the aligned engine.

Each value is a measure of its own so that it gets its own column in ``pt.Experiment``:

============================  =====================================================================
``RBPBase(p=0.8)``            RBP counting judged documents only (Moffat & Zobel 2008, Eq. 1)
``RBPResidual(p=0.8)``        weight of unjudged ranks plus the tail after the run
``RBPUpper(p=0.8)``           base + residual: every unjudged document relevant
``RBPProjected(p=0.8)``       base / judged weight (Moffat, Webber & Zobel 2007, Sec. 2)
``INSTBase(T=3)``             INST lower bound (Moffat et al. 2015; C/W/L, Azzopardi et al. 2019)
``INSTResidual(T=3)``         INST upper bound minus lower bound, as cwl_eval ``-r`` reports it
``INSTUpper(T=3)``            INST with every unjudged document fully relevant
``INSQBase`` / ``INSQResidual`` / ``INSQUpper``   the same for INSQ (Moffat et al. 2012)
============================  =====================================================================

Parameters: ``p`` (RBP persistence), ``T`` (INST / INSQ expected relevance), ``rel`` (binary
relevance: ``label >= rel``, default 1), ``max_rel`` (graded gains ``min(label, max_rel) /
max_rel``), ``@k`` cutoff (RBP), ``ties`` (``trec_eval`` default, ``given``, ``expected``) and, for
INST / INSQ, ``tail`` (``cwl``: cwl_eval's 1,000 ranks, the default; ``exact``: the infinite tail).

They work in ``pt.Experiment(eval_metrics=[...])``, ``ir_measures.calc_aggregate`` and
``ir_measures.iter_calc``, and ``ir_measures.parse_measure("RBPResidual(p=0.8)")``.
"""
from __future__ import annotations

import difflib

import ir_measures
from ir_measures.measures import Measure, ParamInfo

from .._validation import InputError
from ..engine import TIE_POLICIES, MeasureSpec

__all__ = ["RBPBase", "RBPResidual", "RBPUpper", "RBPProjected", "INSTBase", "INSTResidual", "INSTUpper",
           "INSQBase", "INSQResidual", "INSQUpper", "APTies", "nDCGTies", "PTies", "RRTies", "TIE_AWARE",
           "ALL_MEASURES", "check_params"]

_NUM = (int, float)


def _common_params(**extra) -> dict:
    params = {
        "rel": ParamInfo(dtype=int, default=1, desc="minimum label counted relevant (binary gains)"),
        "max_rel": ParamInfo(dtype=_NUM, required=False, desc="graded gains: min(label, max_rel) / max_rel"),
        "ties": ParamInfo(dtype=str, choices=TIE_POLICIES, default="trec_eval", desc="tie policy"),
    }
    params.update(extra)
    return params


class _NoiseMeasure(Measure):
    """Base of the package's measures: maps an ir_measures measure to an engine MeasureSpec."""

    FAMILY = ""
    COMPONENT = "value"

    def spec(self) -> MeasureSpec:
        check_params(self)
        max_rel = self["max_rel"]
        return MeasureSpec(
            family=self.FAMILY, component=self.COMPONENT,
            p=float(self["p"]) if "p" in self.SUPPORTED_PARAMS else None,
            T=float(self["T"]) if "T" in self.SUPPORTED_PARAMS else None,
            rel=float(self["rel"]) if "rel" in self.SUPPORTED_PARAMS else 1.0,
            max_rel=None if max_rel is _NOT_PROVIDED else float(max_rel),
            cutoff=None if self["cutoff"] is _NOT_PROVIDED else int(self["cutoff"]),
            tail=self["tail"] if "tail" in self.SUPPORTED_PARAMS else "cwl",
        ).validate()

    def __getitem__(self, key):
        if key not in self.SUPPORTED_PARAMS:
            return _NOT_PROVIDED
        return super().__getitem__(key)

    def __repr__(self) -> str:
        # always show the user-model parameter (p or T; the tie policy of the tie-aware standard
        # measures) so that table columns say what they are
        key = "p" if "p" in self.SUPPORTED_PARAMS else "T" if "T" in self.SUPPORTED_PARAMS else "ties"
        shown = {key: self[key]}
        shown.update((k, v) for k, v in self.params.items()
                     if k not in (key, self.AT_PARAM) and v != self.SUPPORTED_PARAMS[k].default)
        text = f"{self.__name__}({','.join(f'{k}={self._param_repr(v)}' for k, v in shown.items())})"
        if self.AT_PARAM in self.params:
            text += f"@{self.params[self.AT_PARAM]}"
        return text


_NOT_PROVIDED = ir_measures.measures.base._NOT_PROVIDED

_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", _NUM: "a number"}


#: parameters the package's engine adds to ir_measures' own measures (by the measure's package and
#: name): graded RBP with gains min(label, max_rel) / max_rel, as rbp_eval computes it
_EXTENSIONS = {"ir_measures": {"RBP": {"max_rel": ParamInfo(dtype=_NUM, required=False,
                                                            desc="graded gains min(label, max_rel) / max_rel")}}}


def check_params(measure: Measure) -> None:
    """Refuse unknown, misspelt or mistyped parameters of an ir_measures measure (ours or
    ir_measures' own) with an :class:`InputError` naming the measure, the parameter and the
    accepted ones; ir_measures itself raises on the same strings when it evaluates them."""
    supported = {**measure.SUPPORTED_PARAMS, **_EXTENSIONS.get(type(measure).__module__.split(".")[0], {})
                 .get(measure.NAME, {})}
    accepted = ", ".join(sorted(supported)) or "none"
    name = measure.NAME
    for key, value in measure.params.items():
        if key not in supported:
            close = difflib.get_close_matches(key, list(supported), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"measure {name}: unknown parameter {key!r}{hint}; {name} accepts: {accepted}")
        info = supported[key]
        if value is _NOT_PROVIDED:
            continue
        wrong_bool = isinstance(value, bool) and info.dtype not in (bool, None)
        int_for_float = info.dtype is float and isinstance(value, int) and not wrong_bool  # T=3 means 3.0
        if not (info.validate(value) or int_for_float) or wrong_bool:
            want = _TYPE_NAMES.get(info.dtype, getattr(info.dtype, "__name__", str(info.dtype)))
            if info.choices is not _NOT_PROVIDED:
                want = f"one of {', '.join(map(str, info.choices))}"
            raise InputError(f"measure {name}: parameter {key}={value!r} must be {want}; "
                             f"{name} accepts: {accepted}")


def _rbp_class(component: str, doc: str, default: float) -> type:
    name = "RBP" + {"value": "Base"}.get(component, component.capitalize())
    return type(f"_{name}", (_NoiseMeasure,), {
        "__doc__": doc, "__name__": name, "NAME": name, "FAMILY": "RBP", "COMPONENT": component,
        "DEFAULT": default,
        "SUPPORTED_PARAMS": _common_params(
            p=ParamInfo(dtype=_NUM, default=0.8, desc="persistence"),
            cutoff=ParamInfo(dtype=int, required=False, desc="evaluate the top k only (the residual then includes p^k)")),
    })


def _cwl_class(family: str, component: str, doc: str, default: float) -> type:
    name = family + {"value": "Base"}.get(component, component.capitalize())
    return type(f"_{name}", (_NoiseMeasure,), {
        "__doc__": doc, "__name__": name, "NAME": name, "FAMILY": family, "COMPONENT": component,
        "DEFAULT": default,
        "SUPPORTED_PARAMS": _common_params(
            T=ParamInfo(dtype=_NUM, default=1.0, desc="expected total relevance the user seeks"),
            tail=ParamInfo(dtype=str, choices=("cwl", "exact"), default="cwl",
                           desc="cwl: cwl_eval's 1,000 ranks; exact: the infinite tail in closed form"),
            cutoff=ParamInfo(dtype=int, required=False, desc="not supported (the user model sets the depth)")),
    })


RBPBase = _rbp_class("value", "RBP over judged documents (unjudged count 0): the lower bound.", 0.0)()
RBPResidual = _rbp_class("residual", "RBP residual: weight of unjudged ranks and of the tail after the run.", 1.0)()
RBPUpper = _rbp_class("upper", "RBP upper bound: base + residual.", 1.0)()
RBPProjected = _rbp_class("projected", "RBP projected: base / judged weight (the midpoint 0.5 where nothing "
                          "is judged).", 0.5)()
INSTBase = _cwl_class("INST", "value", "INST lower bound (unjudged documents gain 0).", 0.0)()
INSTResidual = _cwl_class("INST", "residual", "INST residual (upper minus lower bound).", 1.0)()
INSTUpper = _cwl_class("INST", "upper", "INST upper bound (unjudged documents gain 1).", 1.0)()
INSQBase = _cwl_class("INSQ", "value", "INSQ lower bound (unjudged documents gain 0).", 0.0)()
INSQResidual = _cwl_class("INSQ", "residual", "INSQ residual (upper minus lower bound).", 1.0)()
INSQUpper = _cwl_class("INSQ", "upper", "INSQ upper bound (unjudged documents gain 1).", 1.0)()



def _std_class(family: str, doc: str, rel: bool, cutoff: str) -> type:
    """A trec_eval measure with a ``ties`` parameter (the engine's AP, nDCG, P, RR)."""
    name = family + "Ties"
    params = {"ties": ParamInfo(dtype=str, choices=TIE_POLICIES, default="trec_eval", desc="tie policy"),
              "cutoff": ParamInfo(dtype=int, required=family == "P", desc=cutoff)}
    if rel:
        params["rel"] = ParamInfo(dtype=int, default=1, desc="minimum label counted relevant")
    return type(f"_{name}", (_NoiseMeasure,), {
        "__doc__": doc, "__name__": name, "NAME": name, "FAMILY": family, "COMPONENT": "value",
        "DEFAULT": 0.0, "SUPPORTED_PARAMS": params})


APTies = _std_class("AP", "Average precision (trec_eval's) under a tie policy.", True, "rank cutoff (AP@k)")()
nDCGTies = _std_class("nDCG", "nDCG (trec_eval's: log2 discount, label gains) under a tie policy.", False,
                      "rank cutoff (nDCG@k)")()
PTies = _std_class("P", "Precision at k (trec_eval's) under a tie policy; needs @k.", True, "rank cutoff k")()
RRTies = _std_class("RR", "Reciprocal rank (trec_eval's) under a tie policy.", True, "rank cutoff (RR@k)")()

ALL_MEASURES = [RBPBase, RBPResidual, RBPUpper, RBPProjected, INSTBase, INSTResidual, INSTUpper,
                INSQBase, INSQResidual, INSQUpper, APTies, nDCGTies, PTies, RRTies]
#: the tie-aware standard measures (trec_eval's definitions with a ``ties`` parameter)
TIE_AWARE = [APTies, nDCGTies, PTies, RRTies]

#: position of each measure name in :data:`ALL_MEASURES` (the providers' canonical order)
MEASURE_ORDER = {"RBP": -1, **{m.NAME: i for i, m in enumerate(ALL_MEASURES)}}   # ir_measures' RBP = the base
