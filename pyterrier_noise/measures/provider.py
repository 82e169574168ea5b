"""The ir_measures provider of the package's measures (:class:`NoiseProvider`), backed by the aligned
engine, and :func:`register`, which makes the measures known to ir_measures and pt.Experiment."""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Iterable, Iterator

import ir_measures
from ir_measures import Metric
from ir_measures.providers.base import Evaluator, Provider

from .._validation import InputError
from ..engine import AlignedRuns, JudgmentTable
from . import cwl, rbp
from . import ties as tie_measures
from .base import NoiseMeasure
from .evaluation import check_judgments, finish_values
from .parse import to_spec
from .table import OWN_MEASURES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["NoiseProvider", "NoiseEvaluator", "PROVIDER", "register", "ALL_MEASURES"]


#: the package's own measures, in their canonical order
ALL_MEASURES = [getattr(m, name) for name in OWN_MEASURES for m in (rbp, cwl, tie_measures) if hasattr(m, name)]
#: position of each measure name in :data:`ALL_MEASURES` (the providers' canonical order)
MEASURE_ORDER = {"RBP": -1, **{m.NAME: i for i, m in enumerate(ALL_MEASURES)}}   # ir_measures' RBP = the base


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
        # ir_measures' RBP without rel has no other provider (cwl_eval needs rel): it is the base
        return isinstance(measure, NoiseMeasure) or (
            measure.NAME == "RBP" and type(measure) is type(ir_measures.RBP) and "rel" not in measure.params)

    def _evaluator(self, measures, qrels) -> "NoiseEvaluator":
        return NoiseEvaluator(_in_order(measures), qrels)


def _frame(obj, kind: str) -> "pd.DataFrame":
    """The frame ir_measures' own converters make of ``obj``: the package's measures accept in
    ir_measures exactly what ir_measures accepts, with ir_measures' error (a PyTerrier frame with
    ``qid, docno, label`` is refused as it is for AP; ``pyterrier_noise.evaluate`` reads both)."""
    conv = ir_measures.util.QrelsConverter(obj) if kind == "qrels" else ir_measures.util.RunConverter(obj)
    found, error = conv.predict_type()
    if found == "UNKNOWN":
        raise ValueError(f"unknown {kind} format: {error} (pyterrier-noise's measures accept what ir_measures "
                         f"accepts; rename PyTerrier's qid/docno/label columns with pt.model.to_ir_measures, or "
                         f"use pyterrier_noise.evaluate, which reads both)")
    import pandas as pd   # ir_measures hands over frames or iterables
    if isinstance(obj, pd.DataFrame):
        return obj
    return conv.as_pd_dataframe()


class NoiseEvaluator(Evaluator):
    """Builds the judgment table once; each run is aligned once and all measures evaluated together."""

    def __init__(self, measures: Iterable[NoiseMeasure], qrels) -> None:
        measures = _in_order(measures)
        # the topic set: the qrels' topics and those in qrels.attrs["topics"] (reductions keep
        # topics whose judgments they removed); ir_measures gives the measure's DEFAULT to a
        # topic the run does not answer (base 0, residual 1), as trec_eval -c
        self.table = JudgmentTable.from_qrels(_frame(qrels, "qrels"))
        check_judgments(self.table, stacklevel=6)
        self.by_ties: dict[str, list] = defaultdict(list)
        self.specs = {}
        for m in measures:
            spec, ties = to_spec(m)
            self.specs[m] = spec
            self.by_ties[ties].append(m)
        super().__init__(measures, self.table.topics)

    def _iter_calc(self, run) -> Iterator[Metric]:
        frame = _frame(run, "run")
        if len(frame) == 0:
            return
        for ties, measures in self.by_ties.items():
            aligned = AlignedRuns.build({"run": frame}, self.table, ties=ties, on_topic_mismatch="ignore")
            specs = [self.specs[m] for m in measures]
            try:
                values = aligned.evaluate(specs)
            except InputError as exc:
                raise InputError(str(exc).replace("run 'run'", "the run given to ir_measures (in pt.Experiment: "
                                                  "one of its systems)")) from None
            answered = aligned.seg_len > 0
            for m, s in zip(measures, specs):
                v = finish_values(s, values[s][0, :, 0])
                for t, qid in enumerate(aligned.topics):
                    if answered[t]:
                        yield Metric(query_id=qid, measure=m, value=float(v[t]))


PROVIDER = NoiseProvider()


def register() -> None:
    """Make the measures known to ir_measures (parse_measure, calc, pt.Experiment), through its
    public ``ir_measures.measures.register`` and ``ir_measures.providers.register``; the provider is
    put first in ``ir_measures.DefaultPipeline.providers`` (ir_measures has no call for that).
    Idempotent."""
    for m in ALL_MEASURES:
        if m.NAME not in ir_measures.measures.registry:
            ir_measures.measures.register(m, name=m.NAME)
    if PROVIDER.NAME not in ir_measures.providers.registry:
        ir_measures.providers.register(PROVIDER)
    pipeline = ir_measures.DefaultPipeline
    if PROVIDER not in pipeline.providers:
        pipeline.providers.insert(0, PROVIDER)

