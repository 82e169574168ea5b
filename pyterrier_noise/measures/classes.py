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

from collections import defaultdict
from typing import Iterable, Iterator

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric
from ir_measures.measures import Measure, ParamInfo
from ir_measures.providers.base import Evaluator, Provider

from ..engine.align import TIE_POLICIES, AlignedRuns, JudgmentTable, MeasureSpec
from .._validation import InputError

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


def with_residuals(*measures: Measure) -> list[Measure]:
    """Each base measure followed by its residual: ``with_residuals(RBPBase(p=0.8))``."""
    out: list[Measure] = []
    for m in measures:
        out.append(m)
        if isinstance(m, _NoiseMeasure) and m.COMPONENT == "value" and m.FAMILY in ("RBP", "INST", "INSQ"):
            res = {"RBP": RBPResidual, "INST": INSTResidual, "INSQ": INSQResidual}[m.FAMILY]
            out.append(res(**m.params))
    return out


# ----------------------------------------------------------------------------------------------
# mapping any measure (ours or ir_measures') onto the engine


def to_spec(measure: Measure | str) -> tuple[MeasureSpec, str]:
    """Engine spec and tie policy of a measure given as an object or in ir_measures syntax.

    Besides the package's measures, the engine computes ir_measures' ``RBP`` (as base), ``INST``
    and ``INSQ`` (lower bound, with residuals), ``AP``, ``nDCG``, ``P``, ``RR`` and ``DCG`` with
    trec_eval's semantics.
    """
    if isinstance(measure, str):
        examples = "Examples: RBP(p=0.8), RBP(p=0.5,max_rel=2), INST(T=3,max_rel=2), AP, nDCG@10, P@10, RR"
        try:
            measure = ir_measures.parse_measure(measure)
        except NameError as exc:
            raise InputError(f"unknown measure {measure!r} ({exc}). {examples}") from None
        except (ValueError, SyntaxError) as exc:
            raise InputError(f"cannot parse measure {measure!r} ({exc}). {examples}") from None
        except AssertionError as exc:
            raise InputError(f"invalid parameters in measure {measure!r} ({exc}). {examples}") from None
    if isinstance(measure, _NoiseMeasure):
        return measure.spec(), measure["ties"]
    name = measure.NAME
    get = measure.params.get
    cutoff = get("cutoff")
    rel = get("rel", 1)
    max_rel = get("max_rel")
    if name == "RBP":
        spec = MeasureSpec("RBP", p=float(get("p", 0.8)), rel=float(rel) if max_rel is None else 1.0,
                           max_rel=None if max_rel is None else float(max_rel), cutoff=cutoff)
    elif name in ("INST", "INSQ"):
        if get("min_rel", 0) not in (0, None):
            raise InputError(f"{measure}: min_rel other than 0 is not supported")
        spec = MeasureSpec(name, T=float(get("T", 1.0)), rel=float(rel),
                           max_rel=None if max_rel is None else float(max_rel))
    elif name in ("AP", "P", "RR"):
        if get("judged_only"):
            raise InputError(f"{measure}: judged_only is not supported by the engine")
        spec = MeasureSpec(name, rel=float(rel), cutoff=cutoff)
    elif name in ("nDCG", "DCG"):
        if get("dcg", "log2") != "log2" or get("gains") is not None or get("judged_only"):
            raise InputError(f"{measure}: only trec_eval's nDCG (log2 discount, label gains) is supported")
        spec = MeasureSpec(name, cutoff=cutoff)
    else:
        raise InputError(f"measure {measure} is not computed by the pyterrier-noise engine; supported: "
                         f"RBP, INST, INSQ, AP, nDCG, DCG, P, RR and the package's RBP*/INST*/INSQ* measures")
    return spec.validate(), "trec_eval"


# ----------------------------------------------------------------------------------------------
# ir_measures provider


class NoiseProvider(Provider):
    """ir_measures provider for the package's measures, backed by :class:`AlignedRuns`."""

    NAME = "pyterrier_noise"

    def __init__(self) -> None:
        super().__init__()
        self.SUPPORTED_MEASURES = list(ALL_MEASURES)

    def supports(self, measure) -> bool:
        return isinstance(measure, _NoiseMeasure)

    def _evaluator(self, measures, qrels) -> "NoiseEvaluator":
        return NoiseEvaluator(list(measures), qrels)


def _frame(obj, kind: str) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        return obj
    conv = ir_measures.util.QrelsConverter(obj) if kind == "qrels" else ir_measures.util.RunConverter(obj)
    return conv.as_pd_dataframe()


class NoiseEvaluator(Evaluator):
    """Builds the judgment table once; each run is aligned once and all measures evaluated together."""

    def __init__(self, measures: list[_NoiseMeasure], qrels) -> None:
        self.table = JudgmentTable.from_qrels(_frame(qrels, "qrels"))
        self.by_ties: dict[str, list[_NoiseMeasure]] = defaultdict(list)
        for m in measures:
            self.by_ties[m["ties"]].append(m)
        super().__init__(measures, self.table.topics)

    def _iter_calc(self, run) -> Iterator[Metric]:
        frame = _frame(run, "run")
        if len(frame) == 0:
            return
        for ties, measures in self.by_ties.items():
            aligned = AlignedRuns.build({"run": frame}, self.table, ties=ties, on_topic_mismatch="ignore")
            specs = [m.spec() for m in measures]
            values = aligned.evaluate(specs)
            answered = aligned.seg_len > 0
            for m, s in zip(measures, specs):
                v = values[s][0, :, 0]
                if s.component == "projected":  # undefined where nothing is judged: the midpoint
                    v = np.where(np.isnan(v), 0.5, v)
                for t, qid in enumerate(aligned.topics):
                    if answered[t]:
                        yield Metric(query_id=qid, measure=m, value=float(v[t]))


PROVIDER = NoiseProvider()


# ----------------------------------------------------------------------------------------------
# evaluation of many runs at once


def evaluate(runs, qrels, measures: Iterable[Measure | str], ties: str | None = None,
             perquery: bool = False, on_topic_mismatch: str = "warn") -> pd.DataFrame:
    """Evaluate runs with the aligned engine: one alignment per tie policy, all measures at once.

    ``runs``: ``{name: frame}``, a directory or list of TREC run files, or one frame (with a
    ``name`` column for several systems).  ``measures``: measure objects or ir_measures strings
    (``"RBP(p=0.8)"``, ``"INST(T=3,max_rel=2)"``, ``"AP"``, ``"nDCG@10"``...).  ``ties``
    overrides every measure's own tie policy.

    Returns a frame ``name, qid, measure, value, residual``: for measures with a residual (RBP,
    INST, INSQ) ``value`` is the lower bound (base) and ``residual`` its residual, else
    ``residual`` is NaN.  Without ``perquery`` each row is the mean over every topic of the qrels
    (qid ``"all"``; a topic a run does not answer scores 0 with residual 1, like ``trec_eval -c``).

    Example::

        evaluate({"bm25": run}, qrels, ["RBP(p=0.8)", "AP"], perquery=True)
    """
    from ..io.trec import read_runs
    if ties is not None and ties not in TIE_POLICIES:
        raise InputError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    measures = list(measures)
    if not measures:
        raise InputError("no measures given")
    if not isinstance(runs, dict):
        runs = read_runs(runs)
    table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
    parsed = [(str(m), *to_spec(m)) for m in measures]
    groups: dict[str, list] = defaultdict(list)
    for label, spec, own_ties in parsed:
        groups[ties or own_ties].append((label, spec))
    frames = []
    for policy, items in groups.items():
        aligned = AlignedRuns.build(runs, table, ties=policy, on_topic_mismatch=on_topic_mismatch)
        wanted = []
        for _, spec in items:
            wanted.append(spec)
            if spec.component == "value" and spec.family in ("RBP", "INST", "INSQ"):
                wanted.append(_replace(spec, component="residual"))
        values = aligned.evaluate(dict.fromkeys(wanted))
        for label, spec in items:
            v = values[spec][:, :, 0]
            has_res = spec.component == "value" and spec.family in ("RBP", "INST", "INSQ")
            r = values[_replace(spec, component="residual")][:, :, 0] if has_res else np.full_like(v, np.nan)
            if perquery:
                frames.append(pd.DataFrame({
                    "name": np.repeat(aligned.run_names, aligned.n_topics),
                    "qid": np.tile(aligned.topics, aligned.n_runs),
                    "measure": label, "value": v.ravel(), "residual": r.ravel()}))
            else:
                frames.append(pd.DataFrame({
                    "name": aligned.run_names, "qid": "all", "measure": label,
                    "value": np.nanmean(v, axis=1) if spec.component == "projected" else v.mean(axis=1),
                    "residual": r.mean(axis=1)}))
    out = pd.concat(frames, ignore_index=True)
    order = {str(m): i for i, m in enumerate(measures)}
    run_order = {n: i for i, n in enumerate(runs)}
    out["_m"] = out["measure"].map(order)
    out["_r"] = out["name"].map(run_order)
    return out.sort_values(["_r", "_m"], kind="stable").drop(columns=["_m", "_r"]).reset_index(drop=True)


def _replace(spec: MeasureSpec, **changes) -> MeasureSpec:
    from dataclasses import replace
    return replace(spec, **changes)


def register() -> None:
    """Make the measures known to ir_measures (parse_measure, calc, pt.Experiment). Idempotent."""
    registry = ir_measures.measures.registry
    for m in ALL_MEASURES:
        registry.setdefault(m.NAME, m)
    ir_measures.providers.registry.setdefault(PROVIDER.NAME, PROVIDER)
    pipeline = ir_measures.DefaultPipeline
    if PROVIDER not in pipeline.providers:
        pipeline.providers.insert(0, PROVIDER)


register()
