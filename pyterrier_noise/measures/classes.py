"""ir_measures measures for RBP and INST / INSQ with residuals, served by the aligned engine.

Each value is a measure of its own so that it gets its own column in ``pt.Experiment``:

============================  =====================================================================
``RBPBase(p=0.8)``            RBP counting judged documents only (Moffat & Zobel 2008, Eq. 1)
``RBPResidual(p=0.8)``        weight of unjudged ranks plus the tail after the run (seed002 Sec. 1.2)
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

import ir_measures
from ir_measures.measures import Measure, ParamInfo

from ..engine import TIE_POLICIES, MeasureSpec

__all__ = ["RBPBase", "RBPResidual", "RBPUpper", "RBPProjected", "INSTBase", "INSTResidual", "INSTUpper",
           "INSQBase", "INSQResidual", "INSQUpper", "ALL_MEASURES"]

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
        self.validate_params()
        max_rel = self["max_rel"]
        return MeasureSpec(
            family=self.FAMILY, component=self.COMPONENT,
            p=float(self["p"]) if "p" in self.SUPPORTED_PARAMS else None,
            T=float(self["T"]) if "T" in self.SUPPORTED_PARAMS else None,
            rel=float(self["rel"]), max_rel=None if max_rel is _NOT_PROVIDED else float(max_rel),
            cutoff=None if self["cutoff"] is _NOT_PROVIDED else int(self["cutoff"]),
            tail=self["tail"] if "tail" in self.SUPPORTED_PARAMS else "cwl",
        ).validate()

    def __getitem__(self, key):
        if key not in self.SUPPORTED_PARAMS:
            return _NOT_PROVIDED
        return super().__getitem__(key)

    def __repr__(self) -> str:
        # always show the user-model parameter (p or T) so that table columns say what they are
        key = "p" if "p" in self.SUPPORTED_PARAMS else "T"
        shown = {key: self[key]}
        shown.update((k, v) for k, v in self.params.items()
                     if k not in (key, self.AT_PARAM) and v != self.SUPPORTED_PARAMS[k].default)
        text = f"{self.__name__}({','.join(f'{k}={self._param_repr(v)}' for k, v in shown.items())})"
        if self.AT_PARAM in self.params:
            text += f"@{self.params[self.AT_PARAM]}"
        return text


_NOT_PROVIDED = ir_measures.measures.base._NOT_PROVIDED


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
                          "is judged, seed002 A7).", 0.5)()
INSTBase = _cwl_class("INST", "value", "INST lower bound (unjudged documents gain 0).", 0.0)()
INSTResidual = _cwl_class("INST", "residual", "INST residual (upper minus lower bound).", 1.0)()
INSTUpper = _cwl_class("INST", "upper", "INST upper bound (unjudged documents gain 1).", 1.0)()
INSQBase = _cwl_class("INSQ", "value", "INSQ lower bound (unjudged documents gain 0).", 0.0)()
INSQResidual = _cwl_class("INSQ", "residual", "INSQ residual (upper minus lower bound).", 1.0)()
INSQUpper = _cwl_class("INSQ", "upper", "INSQ upper bound (unjudged documents gain 1).", 1.0)()

ALL_MEASURES = [RBPBase, RBPResidual, RBPUpper, RBPProjected, INSTBase, INSTResidual, INSTUpper,
                INSQBase, INSQResidual, INSQUpper]

#: position of each measure name in :data:`ALL_MEASURES` (the providers' canonical order)
MEASURE_ORDER = {m.NAME: i for i, m in enumerate(ALL_MEASURES)}
