"""Evaluating runs with the aligned engine (:func:`evaluate`), mapping any measure onto the engine
(:func:`to_spec`) and pairing base measures with their residuals (:func:`with_residuals`)."""
from __future__ import annotations

import os
import warnings
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
from ir_measures.measures import Measure

from .._validation import InputError, check_ties, is_frame
from .._vocab import TiePolicy, TopicMismatch
from .._progress import status
from .._warnings import NoiseWarning
from ..engine import AlignedRuns, JudgmentTable, MeasureSpec, are_run_paths, kernel_for
from ..io import RunFileReader, run_file_arguments
from ..io.chunks import DEFAULT_MEMORY, run_file_chunks, warn_oversized
from .base import NoiseMeasure
from .cwl import INSQResidual, INSTResidual
from .parse import measure_label, to_spec
from .rbp import RBPResidual

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["evaluate", "evaluate_arrays", "EvaluationArrays", "with_residuals", "judgment_table", "check_judgments",
           "finish_values"]

def judgment_table(qrels, topics: Sequence[str] | None = None) -> JudgmentTable:
    """The judgment table of ``qrels`` over its topic set: ``topics`` when given (qids, or a
    PyTerrier topics frame with a ``qid`` column), else the qrels' topics with those named in
    ``qrels.attrs["topics"]`` (set by the judges' reductions)."""
    if is_frame(topics):   # a frame means pandas is imported already
        import pandas as pd
        if "qid" not in topics.columns:
            raise InputError(f"topics frame: expected a 'qid' column, got columns {list(topics.columns)}")
        topics = list(pd.unique(topics["qid"].astype(str)))
    if isinstance(qrels, JudgmentTable):
        return qrels if topics is None else qrels.with_topics(topics)
    return JudgmentTable.from_qrels(qrels, None if topics is None else [str(t) for t in topics])


def check_judgments(table: JudgmentTable, stacklevel: int = 3) -> None:
    """Say what the judgments imply: topics without any judgment (kept in every mean) and
    relevant-only qrels (every judged label > 0, as in Vaswani)."""
    judged = ~np.isnan(table.labels)
    per_topic = np.bincount(table.topic_index[judged], minlength=len(table.topics))
    empty = np.flatnonzero(per_topic == 0)
    if len(empty):
        warnings.warn(
            f"{len(empty)} of {len(table.topics)} topics have no judgment (e.g. qid {table.topics[empty[0]]!r}); "
            f"means are over all {len(table.topics)} topics: such a topic scores base 0 with the residual of "
            f"the run's ranking (1 for RBP), as trec_eval -c would", NoiseWarning,
            stacklevel=stacklevel)
    if judged.any() and (table.labels[judged] > 0).all():
        warnings.warn(
            f"every one of the {int(judged.sum())} judged labels is relevant (> 0), as in Vaswani's qrels: "
            f"a judged document is then always relevant, so RBP base + residual = 1 for every ranking (the "
            f"upper bound is always 1 and the residual is only the weight of what is unjudged, an upper "
            f"bound on what judging it could add, never tightened by a non-relevant judgment), and "
            f"judge models that turn non-relevant into relevant (false positives) have nothing to act on", NoiseWarning,
            stacklevel=stacklevel)


def with_residuals(*measures: Measure) -> list[Measure]:
    """Each base measure followed by its residual: ``with_residuals(RBPBase(p=0.8))``."""
    out: list[Measure] = []
    for m in measures:
        out.append(m)
        if isinstance(m, NoiseMeasure) and m.COMPONENT == "value" and m.FAMILY in ("RBP", "INST", "INSQ"):
            res = {"RBP": RBPResidual, "INST": INSTResidual, "INSQ": INSQResidual}[m.FAMILY]
            out.append(res(**m.params))
    return out


def evaluate(runs, qrels, measures: Iterable[Measure | str], ties: TiePolicy | None = None,
             perquery: bool = False, on_topic_mismatch: TopicMismatch = "warn",
             topics: "Sequence[str] | pd.DataFrame | None" = None, progress: bool = False) -> "pd.DataFrame":
    """Evaluate runs with the aligned engine: one alignment per tie policy, all measures at once.

    ``runs``: ``{name: frame}``, a directory or list of TREC run files (read in threads while
    the qrels are read), a :class:`~pyterrier_noise.io.RunFileReader` already reading them, or
    one frame (with a ``name`` column for several systems).  ``measures``: measure objects or ir_measures strings
    (``"RBP(p=0.8)"``, ``"INST(T=3,max_rel=2)"``, ``"AP"``, ``"nDCG@10"``...).  ``ties``
    overrides every measure's own tie policy.

    Returns a frame ``name, qid, measure, value, residual``: for measures with a residual (RBP,
    INST, INSQ) ``value`` is the lower bound (base) and ``residual`` its residual, else
    ``residual`` is NaN.  Without ``perquery`` each row is the mean over every topic of the qrels
    (qid ``"all"``; a topic a run does not answer scores 0 with residual 1, like ``trec_eval -c``).
    The topics are ``topics`` when given (qids or a topics frame), else those of the qrels together with the ones named in
    ``qrels.attrs["topics"]`` (a reduction that removes every judgment of a topic keeps it there):
    a topic without judgments scores base 0 with the residual of the run's ranking.
    ``RBPProjected`` is 0.5 (the midpoint of [base, upper]) where nothing is judged.  Counts
    (NumRet, NumRel, NumRelRet) are summed over topics, as trec_eval reports them.
    ``progress``: a one-line status on stderr for reading and aligning, and for evaluating, when
    either takes more than about 2 s (only when stderr is a terminal).

    Example::

        evaluate({"bm25": run}, qrels, ["RBP(p=0.8)", "AP"], perquery=True)
    """
    return evaluate_arrays(runs, qrels, measures, ties, perquery, on_topic_mismatch, topics, progress).to_frame()


@dataclass
class EvaluationArrays:
    """What :func:`evaluate` returns, as arrays: ``value[r, m, t]`` and ``residual[r, m, t]`` of run
    ``run_names[r]``, measure ``measures[m]`` (in the order asked) and topic ``qids[t]`` (``["all"]``
    for the means, ``perquery=False``).  :meth:`to_frame` is :func:`evaluate`'s frame."""

    run_names: list[str]
    measures: list[str]
    qids: list[str]
    value: np.ndarray
    residual: np.ndarray
    perquery: bool = True

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The five columns of :meth:`to_frame` as arrays, one entry per row (rows by run, then
        measure, then topic): run name, qid, measure, value, residual."""
        n_runs, n_measures, n_cols = self.value.shape
        return (np.repeat(np.asarray(self.run_names), n_measures * n_cols),
                np.tile(np.asarray(self.qids), n_runs * n_measures),
                np.tile(np.repeat(np.asarray(self.measures), n_cols), n_runs),
                self.value.ravel(), self.residual.ravel())

    def to_frame(self) -> "pd.DataFrame":
        """The ``name, qid, measure, value, residual`` frame: rows by run, then measure, then topic."""
        import pandas as pd
        name, qid, measure, value, residual = self.columns()
        return pd.DataFrame({"name": name, "qid": qid if self.perquery else "all", "measure": measure,
                             "value": value, "residual": residual})

def evaluate_arrays(runs, qrels, measures: Iterable[Measure | str], ties: TiePolicy | None = None,
                    perquery: bool = False, on_topic_mismatch: TopicMismatch = "warn",
                    topics: "Sequence[str] | pd.DataFrame | None" = None, progress: bool = False,
                    memory: float | None = DEFAULT_MEMORY) -> EvaluationArrays:
    """:func:`evaluate` without the frame: the same values as :class:`EvaluationArrays`.  Given run
    files (or a :class:`~pyterrier_noise.io.RunFileReader`) and a
    :class:`~pyterrier_noise.engine.JudgmentTable` (e.g. ``JudgmentTable.from_arrays`` of
    :func:`~pyterrier_noise.io.read_arrow_qrels`), nothing on its way imports pandas (the
    command line's ``eval``).

    ``memory``: bytes that reading and evaluating run files may take (default 4 GiB); files that
    would take more are read, aligned and evaluated a chunk of files at a time
    (:func:`run_file_chunks`), with the same values; None: all at once.

    Example::

        res = evaluate_arrays({"bm25": run}, qrels, ["RBP(p=0.8)", "AP"], perquery=True)
        res.value[0, 0]    # RBP(p=0.8) of bm25 on every topic of the qrels
    """
    check_ties(ties, allow_none=True)
    if isinstance(measures, (str, Measure)):   # one measure, not a sequence of characters
        measures = [measures]
    measures = list(measures)
    if not measures:
        raise InputError("no measures given")
    own_reader = None
    if are_run_paths(runs):
        files = run_file_arguments([runs] if isinstance(runs, (str, os.PathLike)) else runs)
        chunks = run_file_chunks(files, memory)
        warn_oversized(files, memory)
        if len(chunks) > 1:
            return _evaluate_in_chunks(chunks, qrels, measures, ties, perquery, on_topic_mismatch, topics, progress)
        # files go straight to the engine's Arrow reader, in threads while the qrels are read
        runs = own_reader = RunFileReader(files, os.cpu_count() or 1)
    elif not isinstance(runs, (dict, RunFileReader)):
        from ..io import read_runs
        runs = read_runs(runs)
    try:
        return _evaluate(runs, qrels, measures, ties, perquery, on_topic_mismatch, topics, progress)
    finally:
        if own_reader is not None:
            own_reader.forget()


def _evaluate_in_chunks(chunks: list, qrels, measures: list, ties: str | None, perquery: bool,
                        on_topic_mismatch: str, topics, progress: bool) -> EvaluationArrays:
    """:func:`evaluate_arrays` a chunk of run files at a time: one judgment table, the chunks'
    runs in order; only one chunk's positions are held at once."""
    table = judgment_table(qrels, topics)
    check_judgments(table)
    parts = []
    for k, files in enumerate(chunks):
        with status(f"runs {sum(map(len, chunks[:k])) + 1}-{sum(map(len, chunks[:k + 1]))} of "
                    f"{sum(map(len, chunks))} (chunk {k + 1} of {len(chunks)})", progress):
            reader = RunFileReader(files, os.cpu_count() or 1)
            try:
                parts.append(_evaluate(reader, table, measures, ties, perquery, on_topic_mismatch, None, False,
                                       check=False))
            finally:
                reader.forget()
    first = parts[0]
    return EvaluationArrays([n for p in parts for n in p.run_names], first.measures, first.qids,
                            np.concatenate([p.value for p in parts]), np.concatenate([p.residual for p in parts]),
                            first.perquery)


def _evaluate(runs, qrels, measures: list, ties: str | None, perquery: bool, on_topic_mismatch: str,
              topics, progress: bool, check: bool = True) -> EvaluationArrays:
    """:func:`evaluate_arrays` once its runs are frames or a :class:`~pyterrier_noise.io.RunFileReader`."""
    parsed = [(measure_label(m), *to_spec(m)) for m in measures]
    table = judgment_table(qrels, topics)
    if check:
        check_judgments(table)
    groups: dict[str, list] = defaultdict(list)
    for label, spec, own_ties in parsed:
        groups[ties or own_ties].append((label, spec))
    blocks = []   # (label, values (runs, topics), residuals) in the order computed
    reading = isinstance(runs, RunFileReader)
    for k, (policy, items) in enumerate(groups.items()):
        what = f"{len(runs)} runs"
        if reading:   # the columns read stay for the alignments under other tie policies
            runs.keep_columns = k < len(groups) - 1
        with status(f"reading and aligning {what}" if reading else f"aligning {what}", progress):
            aligned = AlignedRuns.build(runs, table, ties=policy, on_topic_mismatch=on_topic_mismatch)
        wanted = []
        for _, spec in items:
            wanted.append(spec)
            if _has_residual(spec):
                wanted.append(_replace(spec, component="residual"))
        with status(f"evaluating {len(items)} measure(s) on {aligned.n_runs} runs x {aligned.n_topics} topics", progress):
            values = aligned.evaluate(dict.fromkeys(wanted))
        for label, spec in items:
            v = finish_values(spec, values[spec][:, :, 0])
            has_res = _has_residual(spec)
            r = values[_replace(spec, component="residual")][:, :, 0] if has_res else np.full_like(v, np.nan)
            if not perquery:
                total = kernel_for(spec.family).aggregate == "sum"   # trec_eval's counts are summed
                v, r = ((x.sum(axis=1) if total else x.mean(axis=1))[:, None] for x in (v, r))
            blocks.append((label, v, r))
    # rows by run, then measure in the order given (a measure given twice: both, in the order
    # computed), then topic
    order = {measure_label(m): i for i, m in enumerate(measures)}
    blocks.sort(key=lambda b: order[b[0]])
    return EvaluationArrays(list(aligned.run_names), [b[0] for b in blocks],
                            list(aligned.topics) if perquery else ["all"],
                            np.stack([b[1] for b in blocks], axis=1), np.stack([b[2] for b in blocks], axis=1), perquery)


def _has_residual(spec: MeasureSpec) -> bool:
    """A value (lower bound) whose family has a residual: evaluate reports the residual beside it."""
    return spec.component == "value" and "residual" in kernel_for(spec.family).components


def finish_values(spec: MeasureSpec, values: np.ndarray) -> np.ndarray:
    """The engine's values of one measure as reported: where a component is undefined (RBP's
    projected value where nothing is judged) the kernel's stated value replaces NaN."""
    fill = kernel_for(spec.family).undefined(spec)
    return values if fill is None else np.where(np.isnan(values), fill, values)


def _replace(spec: MeasureSpec, **changes) -> MeasureSpec:
    return replace(spec, **changes)
