"""The ir_measures provider of the package's measures (:class:`NoiseProvider`), backed by the aligned
engine, and :func:`register`, which makes the measures known to ir_measures and pt.Experiment."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Iterator

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric
from ir_measures.providers.base import Evaluator, Provider

from ..engine import AlignedRuns, JudgmentTable
from .classes import ALL_MEASURES, MEASURE_ORDER, _NoiseMeasure

__all__ = ["NoiseProvider", "NoiseEvaluator", "PROVIDER", "register"]


def _in_order(measures: Iterable) -> list:
    """The measures in the order asked; a set (ir_measures' pipeline hands providers a set, whose
    order follows the hash seed) in the canonical order: as in ALL_MEASURES, then by repr."""
    if isinstance(measures, (set, frozenset)):
        return sorted(measures, key=lambda m: (MEASURE_ORDER.get(m.NAME, len(MEASURE_ORDER)), repr(m)))
    return list(dict.fromkeys(measures))


class NoiseProvider(Provider):
    """ir_measures provider for the package's measures, backed by :class:`AlignedRuns`."""

    NAME = "pyterrier_noise"

    def __init__(self) -> None:
        super().__init__()
        self.SUPPORTED_MEASURES = list(ALL_MEASURES)

    def supports(self, measure) -> bool:
        return isinstance(measure, _NoiseMeasure)

    def _evaluator(self, measures, qrels) -> "NoiseEvaluator":
        return NoiseEvaluator(_in_order(measures), qrels)


def _frame(obj, kind: str) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        return obj
    conv = ir_measures.util.QrelsConverter(obj) if kind == "qrels" else ir_measures.util.RunConverter(obj)
    return conv.as_pd_dataframe()


class NoiseEvaluator(Evaluator):
    """Builds the judgment table once; each run is aligned once and all measures evaluated together."""

    def __init__(self, measures: Iterable[_NoiseMeasure], qrels) -> None:
        measures = _in_order(measures)
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


def register() -> None:
    """Make the measures known to ir_measures (parse_measure, calc, pt.Experiment). Idempotent."""
    registry = ir_measures.measures.registry
    for m in ALL_MEASURES:
        registry.setdefault(m.NAME, m)
    ir_measures.providers.registry.setdefault(PROVIDER.NAME, PROVIDER)
    pipeline = ir_measures.DefaultPipeline
    if PROVIDER not in pipeline.providers:
        pipeline.providers.insert(0, PROVIDER)

