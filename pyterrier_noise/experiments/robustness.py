"""The robustness experiment: how far can judging error move scores, rankings and conclusions?

``robustness_experiment(...)`` (alias ``RobustnessExperiment``) is shaped like ``pt.Experiment``:
the same systems, topics, qrels, measures, names, baseline, test and correction -- plus a judgment
perturbation model.  Each system is run once, all systems are aligned once to the judgment table
(:class:`~pyterrier_noise.engine.AlignedRuns`), the model samples ``n_replicates`` versions of the
labels (a ``(J, R)`` matrix), and the engine evaluates every (system, topic, replicate) in
vectorised kernels.  The analysis (Rashidi, Zobel & Moffat 2023, Sec. 4-5; Webber, Chandar &
Carterette 2012, Sec. 3.3 and 4.5) is :class:`~pyterrier_noise.experiments.RobustnessResult`'s
(module ``result``); its plots are in module ``plots``.

Any perturbation model works that has ``sample_labels(table, n, seed=None) -> ndarray (J, n)``
(float labels aligned to ``table.frame`` rows, NaN = unjudged), e.g.
:class:`pyterrier_noise.judges.RandomFlips`.
"""
from __future__ import annotations

import inspect
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Protocol, Sequence

import numpy as np
import pandas as pd

from .._executor import Executor, map_ordered
from .._progress import progress_bar
from .._validation import InputError, announce, check_budget, check_choice, check_int, check_probability, check_seed, check_ties
from ..engine import AlignedRuns, JudgmentTable, MeasureSpec, are_run_paths
from ..measures.evaluation import finish_values
from ..io import read_qrels, read_runs, run_file_arguments, run_name
from ..io.chunks import DEFAULT_MEMORY, run_file_chunks, warn_oversized
from .._vocab import CORRECTIONS, TESTS, TOPIC_MISMATCH
from ._common import RBO_P, interactive, measure_label, spec_and_ties
from ._frame import check_frame_options
from ._systems import as_run, run_systems
from .result import DEFAULT_P_BANDS, RobustnessResult, baseline_index, check_finite

__all__ = ["PerturbationModel", "robustness_experiment", "RobustnessExperiment"]

#: ``robustness_experiment(keep_pvalues=None)`` keeps the ``(pairs, R)`` p-value arrays up to this
#: many pair-replicates (about 100 MB per measure); beyond, only the tables' reductions are kept
KEEP_PVALUES_MAX = 1 << 22


class PerturbationModel(Protocol):
    """What the experiment needs of a judgment perturbation model."""

    def sample_labels(self, table: JudgmentTable, n: int, seed: Any = None) -> np.ndarray:
        """``(len(table), n)`` float labels aligned to ``table.frame`` rows, NaN = unjudged."""



def robustness_experiment(retr_systems: Sequence[Any] | Mapping[str, Any], topics: pd.DataFrame | None,
                          qrels: Any, eval_metrics: Sequence[Any], perturbation: PerturbationModel,
                          n_replicates: int = 100, seed: int | None = 0, names: Sequence[str] | None = None,
                          baseline: int | str | None = None, test: str = "t", correction: str | None = None,
                          correction_alpha: float | None = None, perquery: bool = False,
                          round: int | Mapping[str, int] | None = None, highlight: str | None = None,
                          progress: bool | None = None, ties: str | None = None, rbo_p: float = RBO_P,
                          rbo_variant: str = "ext", p_bands: Sequence[float] = DEFAULT_P_BANDS,
                          n_resamples: int = 10_000, chunk_size: int = 50, on_topic_mismatch: str = "warn",
                          keep_pvalues: bool | None = None, executor: Executor = None,
                          memory: float | None = DEFAULT_MEMORY) -> RobustnessResult:
    """``pt.Experiment`` under judging error: evaluate every system on ``n_replicates`` perturbed
    versions of the qrels and report what holds (Rashidi, Zobel & Moffat 2023, Sec. 4-5; Webber,
    Chandar & Carterette 2012, Sec. 3.3 and 4.5).

    Args:
        retr_systems: list or dict of pt.Transformers or results frames (``qid, docno, score,
            rank``), e.g. ``pt.Transformer.from_df(run)``; each is run once on ``topics``.  Or
            TREC run files: a path, a directory of them or a list of paths (each run named by its
            file name without ``.gz``), which the engine reads directly (faster than frames).
            Or the systems already aligned to ``qrels`` (an :class:`AlignedRuns` built on them
            with every measure's tie policy, ``topics=None``): several experiments on one
            alignment, with the values of the runs themselves.
        topics: ``qid, query`` frame; only topics that also have qrels are evaluated.  May be None
            when every system is a results frame (then every qrels topic is evaluated).
        qrels: ``qid, docno, label`` frame or anything :func:`~pyterrier_noise.io.read_qrels` reads.
        eval_metrics: measure objects or ir_measures strings the engine computes (RBP, INST,
            INSQ, AP, nDCG, DCG, P, RR and the package's RBP*/INST* measures).
        perturbation: a model with ``sample_labels(table, n, seed)`` (e.g. ``RandomFlips``).
        n_replicates: number of perturbed qrels.
        seed: passed to ``perturbation.sample_labels`` (so replicate ``i`` is the model's
            replicate ``i`` of that seed, the same as ``pyterrier-noise perturb --seed``; None
            means the model's own seed); it also seeds the random tie-break of system orderings
            and the resampling tests.  Same seed -> same result.
        names: system names for a list (default ``str(system)``); ignored for a dict.
        baseline: index or name of the baseline system (adds the ``baseline`` frame).
        test: paired test over topics: ``"t"`` (default), ``"wilcoxon"``, ``"sign"``,
            ``"randomisation"``, ``"bootstrap"`` (:func:`pyterrier_noise.stats.paired_test`).
        correction: None, ``"bonferroni"``, ``"holm"`` or ``"fdr_bh"``: applied within each
            replicate over all pairs (``pairs``) and over the baseline comparisons (``baseline``).
        correction_alpha: significance level of every conclusion (``p < correction_alpha``; the
            frame's ``reject`` column is statsmodels' ``p_corrected <= correction_alpha``), default
            0.05.
        perquery: also keep the per-(system, topic, replicate) values ``result.values`` and build
            the frame ``result.perquery`` (both grow with the replicates; without it only the
            per-replicate system means ``result.means`` and the tables are kept).
        round, highlight: as ``pt.Experiment``'s, for ``result.frame`` (decimals of the measure
            columns, an int or ``{measure: int}``) and its notebook rendering (``"bold"`` /
            ``"color"``: the best value of each measure column).
        progress: progress bars over replicates and measures.
        ties: tie policy for every measure (default: each measure's own, usually ``trec_eval``).
        rbo_p, rbo_variant: RBO persistence (0.9, :data:`RBO_P`: Webber et al. 2010 put ~86% of
            the weight on the top 10) and variant (``"ext"``; ``"trunc"`` is Rashidi et al.'s).
        p_bands: edges of the observed p bands of ``p_given_observed``.
        n_resamples: resamples of the randomisation / bootstrap tests.
        chunk_size: replicates sampled, evaluated and analysed per step (memory and progress
            only; the result does not depend on it).
        keep_pvalues: keep the ``(pairs, R)`` arrays ``p_observed``, ``p_true_mapped`` and
            ``observed_direction`` (needed by ``true_p_given_observed``; 24 bytes per pair and
            replicate and measure).  Default: keep them while ``pairs x R`` is at most
            ``KEEP_PVALUES_MAX`` (2**22, 4.2 million, e.g. 143 systems x 413 replicates).
        on_topic_mismatch: ``"warn"`` (default), ``"error"`` or ``"ignore"`` for run topics without
            qrels (not evaluated) and qrels topics a system does not answer (score 0, as
            ``trec_eval -c``), as :func:`~pyterrier_noise.measures.evaluate` announces them; means
            are over every evaluated qrels topic.
        memory: bytes the experiment may take (default 4 GiB, as ``eval --memory``): a quarter
            for reading run files, which are read and aligned a chunk of files at a time
            (:func:`~pyterrier_noise.io.chunks.run_file_chunks`), a quarter for the aligned form
            of all the runs, kept throughout, and half for the chunks of replicates, made smaller
            than ``chunk_size`` when their values and tests would not fit.  None: all files at
            once, chunks of ``chunk_size``.  The result does not depend on it.
        executor: where the chunks of replicates are sampled and evaluated: None (default) in this
            process; a ``dask.distributed.Client`` (or ``"dask"``: the current client) on its
            workers, the aligned runs sent to each once.  A chunk's labels depend on the seed and
            the chunk's first replicate only, so the result is the same either way.

    Returns:
        A :class:`RobustnessResult`; ``result.frame`` (also its notebook / ``repr`` rendering) is
        the ``pt.Experiment``-shaped table with the robustness columns beside it.

    The steps: the options are checked here, :func:`_prepare` reads the systems and the qrels and
    aligns them, :func:`_replicate_chunks` samples and evaluates the replicates chunk by chunk and
    :func:`_accumulate` feeds the chunks to the streamed analysis and the realised error rates.
    The function is long only by this documentation of its ``pt.Experiment``-shaped arguments.
    """
    progress = bool(progress) and interactive()
    correction_alpha = 0.05 if correction_alpha is None else correction_alpha
    check_choice("on_topic_mismatch", on_topic_mismatch, TOPIC_MISMATCH)
    n_replicates = check_int("n_replicates", n_replicates)
    chunk_size = check_int("chunk_size", chunk_size)
    if not callable(getattr(perturbation, "sample_labels", None)):
        raise InputError(f"perturbation must have a sample_labels(table, n, seed) method, got "
                         f"{type(perturbation).__name__}")
    check_ties(ties, allow_none=True)
    check_choice("test", test, TESTS)   # a callable test cannot be vectorised over replicates
    check_choice("correction", correction, CORRECTIONS, allow_none=True)
    check_probability("correction_alpha", correction_alpha)
    check_frame_options(round, highlight)
    check_seed(seed)
    labels, parsed = _measures(eval_metrics)
    if topics is not None:
        if not isinstance(topics, pd.DataFrame) or "qid" not in topics.columns:
            raise InputError("topics must be a frame with a 'qid' column (e.g. dataset.get_topics())")
    check_budget(memory)
    prep = _prepare(retr_systems, topics, qrels, names, baseline, labels, parsed, ties, on_topic_mismatch,
                    progress, memory)
    if memory is not None:
        chunk_size = min(chunk_size, _replicates_that_fit(memory / 2, len(prep.names), len(prep.table.topics),
                                                          len(labels)))
    names = prep.names
    if keep_pvalues is None:
        keep_pvalues = len(names) * (len(names) - 1) // 2 * n_replicates <= KEEP_PVALUES_MAX
    # the analysis is streamed: each chunk of replicates is evaluated, reduced to what the tables
    # need (system means, pair conclusions, p bands) and dropped
    res, analysis = RobustnessResult.start_analysis(
        list(names), list(prep.table.topics), labels, n_replicates, baseline=baseline, test=test,
        correction=correction, correction_alpha=correction_alpha, seed=seed, rbo_p=rbo_p,
        rbo_variant=rbo_variant, p_bands=p_bands, n_resamples=n_resamples, round=round, highlight=highlight,
        keep_values=perquery, keep_pvalues=keep_pvalues)
    rates = _RealisedRates(prep.table.labels, n_replicates)
    chunks = _replicate_chunks(perturbation, prep, n_replicates, chunk_size, seed, executor)
    _accumulate(chunks, analysis, rates, n_replicates, len(labels), progress)
    res.finish_analysis(analysis, rates.frame(), perquery, progress)
    return res


#: ``pt.Experiment``-style name for :func:`robustness_experiment`
RobustnessExperiment = robustness_experiment


def _measures(eval_metrics: Any) -> tuple[list[str], list[tuple[MeasureSpec, str]]]:
    """Column labels and (engine spec, own tie policy) of the measures, checked: at least one, no
    label twice."""
    metrics = list(eval_metrics) if not isinstance(eval_metrics, (str, bytes)) else [eval_metrics]
    if not metrics:
        raise InputError("eval_metrics is empty; give at least one measure, e.g. ['RBP(p=0.8)', 'AP']")
    labels = [measure_label(m) for m in metrics]
    if len(set(labels)) != len(labels):
        dup = pd.Index(labels)[pd.Index(labels).duplicated()][0]
        raise InputError(f"measure {dup!r} is given more than once")
    return labels, [spec_and_ties(m) for m in metrics]


@dataclass
class _Prepared:
    """The systems read and aligned once: what every chunk of replicates is evaluated on."""

    names: list[str]
    table: JudgmentTable
    #: per tie policy in use (normally one), the alignments of consecutive groups of the runs (one
    #: group unless run files are read a chunk at a time), all on ``table``
    aligned: dict[str, list[AlignedRuns]]
    #: the measures (label, spec) evaluated under each tie policy
    by_policy: dict[str, list[tuple[str, MeasureSpec]]]


def _prepare(retr_systems: Any, topics: pd.DataFrame | None, qrels: Any, names: Sequence[str] | None,
             baseline: int | str | None, labels: list[str], parsed: list[tuple[MeasureSpec, str]],
             ties: str | None, on_topic_mismatch: str, progress: bool, memory: float | None = None) -> _Prepared:
    """Read the systems and the qrels, build the judgment table over the evaluated topics and align
    the runs to it once per tie policy; run files a chunk of files at a time when a quarter of the
    experiment's ``memory`` bytes would not hold reading them all at once."""
    if isinstance(retr_systems, AlignedRuns):
        return _prepared_from(retr_systems, topics, qrels, baseline, labels, parsed, ties, on_topic_mismatch)
    names, files, results = _read_systems(retr_systems, topics, names)
    if len(names) < 2:
        read = f" (read as a run: {', '.join(map(str, files))})" if files else ""
        raise InputError(f"a robustness experiment needs at least 2 systems, got {len(names)}{read}")
    baseline_index(baseline, names)  # fail before the expensive part
    table, wanted = _judgment_table(qrels, topics, on_topic_mismatch)
    runs = files if files is not None else {name: as_run(res, name) for name, res in zip(names, results)}
    if wanted is not None:
        # rows on topics outside the topics frame are announced here; rows on topics of the
        # topics frame without qrels were announced by _judgment_table
        runs = _on_topics(runs, set(wanted), set(table.topics), on_topic_mismatch)
    policies = [ties or own for _, own in parsed]
    groups = run_file_chunks(runs, None if memory is None else memory / 4) if files is not None else [runs]
    if files is not None:
        warn_oversized(files, memory)   # against the whole budget: a file read whole may take more than its quarter
    aligned = _align(groups, table, list(dict.fromkeys(policies)), on_topic_mismatch, progress)
    by_policy: dict[str, list[tuple[str, MeasureSpec]]] = {}
    for lab, (spec, _), pol in zip(labels, parsed, policies):
        by_policy.setdefault(pol, []).append((lab, spec))
    return _Prepared(list(names), table, aligned, by_policy)


def _prepared_from(aligned: AlignedRuns, topics: pd.DataFrame | None, qrels: Any, baseline: int | str | None,
                   labels: list[str], parsed: list[tuple[MeasureSpec, str]], ties: str | None,
                   on_topic_mismatch: str) -> _Prepared:
    """Systems already aligned: used as they are when their alignment holds the judgment table of
    ``qrels`` (the same rows, labels and topics) and every measure's tie policy is its own."""
    if topics is not None:
        raise InputError("topics: systems given aligned (an AlignedRuns) are evaluated on the topics of their "
                         "judgments; pass topics=None, or the systems themselves")
    names = list(aligned.run_names)
    if len(names) < 2:
        raise InputError(f"a robustness experiment needs at least 2 systems, got {len(names)}")
    baseline_index(baseline, names)
    table, _ = _judgment_table(qrels, None, on_topic_mismatch)
    own = aligned.table
    if not (own.topics == table.topics and len(own) == len(table)
            and np.array_equal(own.frame["qid"].to_numpy(), table.frame["qid"].to_numpy())
            and np.array_equal(own.frame["docno"].to_numpy(), table.frame["docno"].to_numpy())
            and np.array_equal(own.labels, table.labels, equal_nan=True)):
        raise InputError("retr_systems: the AlignedRuns was built on other judgments than qrels (other rows, labels "
                         "or topics); align the systems to these qrels, or pass the systems themselves")
    policies = [ties or pol for _, pol in parsed]
    other = sorted(set(policies) - {aligned.ties})
    if other:
        raise InputError(f"retr_systems: the AlignedRuns orders tied scores by {aligned.ties!r}, the measures need "
                         f"{other}; pass the systems themselves")
    by_policy: dict[str, list[tuple[str, MeasureSpec]]] = {}
    for lab, (spec, _) in zip(labels, parsed):
        by_policy.setdefault(aligned.ties, []).append((lab, spec))
    return _Prepared(names, own, {aligned.ties: [aligned]}, by_policy)


def _read_systems(retr_systems: Any, topics: pd.DataFrame | None,
                  names: Sequence[str] | None) -> tuple[Sequence[str], list | None, list | None]:
    """``(names, run files, None)`` for run files the engine reads itself, else ``(names, None,
    results frames)`` of the systems run once on the topics."""
    files = None
    if are_run_paths(retr_systems):
        # run files go straight to the engine's Arrow reader (one reader, one pool); with a topics
        # frame they are read as frames, to be cut to its topics
        files = run_file_arguments([retr_systems] if isinstance(retr_systems, (str, os.PathLike)) else retr_systems)
        if topics is not None:
            retr_systems, files = read_runs(files), None
        else:
            return [run_name(f) for f in files], files, None
    names, results = run_systems(retr_systems, topics, names)
    return names, None, results


def _judgment_table(qrels: Any, topics: pd.DataFrame | None,
                    on_topic_mismatch: str) -> tuple[JudgmentTable, np.ndarray | None]:
    """The judgment table over the evaluated topics (those of the topics frame that have qrels)
    and the topics frame's qids (None without one)."""
    q = read_qrels(qrels)
    wanted = None
    if topics is not None:
        wanted = pd.unique(topics["qid"].astype(str))
        no_qrels = np.setdiff1d(wanted, q["qid"].unique())
        q = q[q["qid"].isin(set(wanted))]
        if len(q) == 0:
            raise InputError("no qrels for any qid of the topics frame: nothing to evaluate")
        if len(no_qrels) and on_topic_mismatch != "ignore":
            msg = (f"{len(no_qrels)} of the {len(wanted)} topic(s) of the topics frame have no qrels and are "
                   f"not evaluated (e.g. qid {no_qrels[0]!r}); means are over the {q['qid'].nunique()} "
                   f"topic(s) with qrels")
            if on_topic_mismatch == "error":
                raise InputError(msg)
            announce(msg)
    table = JudgmentTable.from_qrels(q.reset_index(drop=True))
    if len(table.topics) < 2:
        raise InputError(f"paired tests over topics need at least 2 topics with qrels, got {table.topics}")
    return table, wanted


def _align(groups: list, table: JudgmentTable, policies: list[str], on_topic_mismatch: str,
           progress: bool) -> dict[str, list[AlignedRuns]]:
    """Each group of runs aligned once per tie policy (normally one), one group after the other (a
    group's files are read, aligned and freed before the next is read); all share the judgment
    table.  The first policy's alignments announce run topics without qrels and qrels topics a run
    does not answer (the policy of evaluate), the others stay quiet."""
    status = progress_bar(total=len(policies) * len(groups), desc=f"aligning {sum(map(len, groups))} runs",
                          unit="alignment", enabled=progress)
    aligned: dict[str, list[AlignedRuns]] = {}
    for k, pol in enumerate(policies):
        for runs in groups:
            aligned.setdefault(pol, []).append(AlignedRuns.build(
                runs, table, ties=pol, on_topic_mismatch=on_topic_mismatch if k == 0 else "ignore"))
            status.update(1)
    status.close()
    return aligned


def _replicates_that_fit(memory: float, n_systems: int, n_topics: int, n_measures: int) -> int:
    """Replicates whose chunk fits in ``memory`` bytes: per replicate, measure and topic, 8 bytes for
    every system's value and every pair's test, three times over (the chunk being analysed, the
    next one being evaluated, and the tests' temporaries)."""
    pairs = n_systems * (n_systems - 1) // 2
    per_replicate = 3 * 8 * n_measures * n_topics * (n_systems + pairs)
    return max(1, int(memory // per_replicate))


def _replicate_chunks(perturbation: PerturbationModel, prep: _Prepared, n_replicates: int, chunk_size: int,
                      seed: int | None, executor: Executor = None) -> Iterator[tuple[int, np.ndarray, dict[str, np.ndarray]]]:
    """``(c0, L, values)`` for each chunk of replicates ``[c0, c0 + chunk_size)``: the sampled
    labels ``L`` (``(J, c)``) and per measure the values ``(S, T, 1 + c)``, column 0 under the true
    labels.

    Models with ``start=`` (every model of pyterrier_noise.judges) draw replicates [c0, c1) alone,
    identical to columns c0..c1-1 of one big call: chunks bound the memory and the result does
    not depend on chunk_size; other models are sampled in one call.  With a Dask ``executor``
    the chunks are evaluated as tasks on its workers (the prepared runs sent once) and come back in
    order, the same chunks as here.
    """
    by_start = _accepts_start(perturbation)
    L_all = None if by_start else _sample(perturbation, prep.table, n_replicates, seed, None)
    bounds = [(c0, min(n_replicates, c0 + chunk_size)) for c0 in range(0, n_replicates, chunk_size)]
    # a chunk's labels are drawn from (seed, c0) alone, wherever and whenever it is evaluated
    tasks = (((c0, c1, seed, None) if by_start else (c0, c1, None, L_all[:, c0:c1])) for c0, c1 in bounds)
    yield from map_ordered(executor, _replicate_chunk, (perturbation, prep), tasks)


def _replicate_chunk(shared: tuple[PerturbationModel, _Prepared],
                     task: tuple[int, int, int | None, np.ndarray | None]) -> tuple[int, np.ndarray, dict[str, np.ndarray]]:
    """One chunk ``(c0, L, values)`` of :func:`_replicate_chunks`: the labels of replicates
    ``[c0, c1)`` (given, or sampled with the seed from ``start=c0``) and every measure's values."""
    perturbation, prep = shared
    c0, c1, seed, L = task
    table = prep.table
    if L is None:
        L = _sample(perturbation, table, c1 - c0, seed, c0)
    # the true labels ride along as column 0 of every chunk: one kernel call gives the
    # replicates and the truth through the same code path, so a replicate with the true
    # labels gets bit-identical values (a one-column product would take another path)
    chunk = {}
    for pol, items in prep.by_policy.items():
        specs, labels = dict.fromkeys(s for _, s in items), np.column_stack([table.labels, L])
        outs = [part.evaluate(specs, labels) for part in prep.aligned[pol]]
        for lab, spec in items:
            out = outs[0][spec] if len(outs) == 1 else np.concatenate([o[spec] for o in outs])
            v = finish_values(spec, out)   # RBP projected: the midpoint where undefined
            check_finite("true", lab, v[:, :, :1], prep.names, table.topics)
            check_finite("values", lab, v[:, :, 1:], prep.names, table.topics)
            chunk[lab] = v
    return c0, L, chunk


class _RealisedRates:
    """Realised error rates of each replicate, binary at label >= 1 (Rashidi et al. 2023 report
    nominal rates only; the realised ones show what a model actually did): judged, relevant and
    changed counts, true and false positive rates against the true labels ``y``."""

    def __init__(self, y: np.ndarray, n_replicates: int):
        self.y = y
        self.rel0 = y >= 1
        self.nonrel0 = ~self.rel0 & ~np.isnan(y)
        self.n_replicates = n_replicates
        self.rates = {k: np.empty(n_replicates) for k in ("n_judged", "n_relevant", "n_changed", "tpr", "fpr")}

    def add(self, c0: int, L: np.ndarray) -> None:
        """Count the replicates ``[c0, c0 + L.shape[1])`` of labels ``L``."""
        c1 = c0 + L.shape[1]
        rates, y, rel0, nonrel0 = self.rates, self.y, self.rel0, self.nonrel0
        with np.errstate(invalid="ignore"):
            rel = L >= 1
            judged = ~np.isnan(L)
            rates["n_judged"][c0:c1] = judged.sum(axis=0)
            rates["n_relevant"][c0:c1] = rel.sum(axis=0)
            rates["n_changed"][c0:c1] = ((L != y[:, None]) & (judged | ~np.isnan(y)[:, None])).sum(axis=0)
            rates["tpr"][c0:c1] = _ratio_vec((rel & rel0[:, None]).sum(axis=0), rel0.sum())
            rates["fpr"][c0:c1] = _ratio_vec((rel & nonrel0[:, None]).sum(axis=0), nonrel0.sum())

    def frame(self) -> pd.DataFrame:
        """One row per replicate: ``replicate``, the counts (int) and the rates."""
        return pd.DataFrame({"replicate": np.arange(self.n_replicates),
                             **{k: (v.astype(np.int64) if k.startswith("n_") else v)
                                for k, v in self.rates.items()}})


def _accumulate(chunks: Iterator[tuple[int, np.ndarray, dict[str, np.ndarray]]], analysis: Any,
                rates: _RealisedRates, n_replicates: int, n_measures: int, progress: bool) -> None:
    """Feed every chunk to the realised rates and to the streamed analysis.

    The analysis of chunk k (one task per measure, in worker threads: numpy and scipy release the
    GIL) overlaps the sampling and evaluation of chunk k + 1, which the generator ``chunks`` does
    when asked for the next chunk; a measure's tasks never overlap, so the result does not depend
    on the threads.
    """
    bar = progress_bar(total=n_replicates, desc="robustness replicates", unit="replicate", enabled=progress)
    pool = ThreadPoolExecutor(max_workers=max(1, min(n_measures, os.cpu_count() or 1)))
    pending: list[Any] = []
    done = 0
    try:
        for c0, L, chunk in chunks:
            rates.add(c0, L)
            for f in pending:
                f.result()
            bar.update(c0 - done)
            done = c0
            pending = [pool.submit(analysis.add, lab, v, c0) for lab, v in chunk.items()]
        for f in pending:
            f.result()
        bar.update(n_replicates - done)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()


def _ratio_vec(num: np.ndarray, den: float) -> np.ndarray:
    return num / den if den else np.full(num.shape, np.nan)


def _on_topics(runs: dict[str, pd.DataFrame], topics: set, evaluated: set, mode: str) -> dict[str, pd.DataFrame]:
    """The runs' rows on the evaluated topics (those of the topics frame with qrels, as
    pt.Experiment evaluates); rows of topics outside the topics frame (results frames given as
    systems) are announced with counts and not evaluated."""
    out, dropped, systems, example = {}, set(), 0, None
    for name, run in runs.items():
        on = run["qid"].isin(evaluated).to_numpy()
        if on.all():
            out[name] = run
            continue
        off = [t for t in pd.unique(run["qid"].to_numpy()[~on]) if t not in topics]
        if off:
            dropped.update(off)
            systems += 1
            example = example or (str(off[0]), name)
        kept = run[on].reset_index(drop=True)
        kept.attrs["source"] = run.attrs.get("source", f"system {name!r}")
        out[name] = kept
    if dropped and mode != "ignore":
        msg = (f"{len(dropped)} topic(s) answered by the systems are not in the topics frame and are not "
               f"evaluated (e.g. qid {example[0]!r} of system {example[1]!r}; {systems} system(s) affected)")
        if mode == "error":
            raise InputError(msg)
        announce(msg)
    return out



def _accepts_start(model: Any) -> bool:
    try:
        return "start" in inspect.signature(model.sample_labels).parameters
    except (TypeError, ValueError):
        return False


def _sample(model: Any, table: JudgmentTable, n: int, seed: int | None, start: int | None) -> np.ndarray:
    """Replicate labels from the model, checked: ``(len(table), n)`` floats, NaN = unjudged."""
    if start is None:
        L = model.sample_labels(table, n, seed=seed)
    else:
        L = model.sample_labels(table, n, seed=seed, start=start)
    try:
        L = np.asarray(L, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{type(model).__name__}.sample_labels returned non-numeric labels") from None
    if L.shape != (len(table), n):
        raise InputError(f"{type(model).__name__}.sample_labels(table, n={n}) returned shape {L.shape}; "
                         f"expected ({len(table)}, {n}): one row per judgment table row, one column per replicate")
    if np.isinf(L).any():
        r = int(np.argwhere(np.isinf(L))[0][0])
        raise InputError(f"{type(model).__name__}.sample_labels returned an infinite label at table row {r}")
    return L

