"""Replaying judgment selection against an oracle and measuring it (Moffat, Webber & Zobel 2007,
Sec. 5 and Tables 2-5)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from .._executor import Executor, map_ordered
from .._progress import progress_bar
from .._validation import InputError, announce, check_choice, check_probability
from .._vocab import MISSING, UNKNOWN_TOPICS, Missing, SelectionMethod, SelectionScope, SelectionTieBreak
from ..engine import AlignedRuns, JudgmentTable, MeasureSpec, qrels_topics
from .contributions import aligned_for
from ..engine.ranges import midpoint_where_undefined as _proj_fallback
from .ranges import judged_ranges
from .selector import METHODS, JudgmentSelector
from .stopping import StopRule

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["qrels_oracle", "SimulationResult", "separation", "simulate", "compare_methods"]


def qrels_oracle(qrels: Any, missing: Missing = "nonrel") -> Callable[[str, str], float | None]:
    """The minimal oracle: look the label up in qrels; a document without a judgment is
    non-relevant (``missing="nonrel"``) or cannot be judged (``"bypass"``: returns None)."""
    from ..io import read_qrels
    check_choice("missing", missing, MISSING)
    q = read_qrels(qrels)
    table = dict(zip(zip(q["qid"], q["docno"]), q["label"].astype(float)))
    default = 0.0 if missing == "nonrel" else None

    def oracle(qid: str, docno: str) -> float | None:
        return table.get((str(qid), str(docno)), default)

    oracle.qrels = q  # type: ignore[attr-defined]
    oracle.missing = missing  # type: ignore[attr-defined]
    return oracle


@dataclass
class SimulationResult:
    """What :func:`simulate` measured at each checkpoint.

    ``summary``: one row per (checkpoint, p_eval): judgments, handled (judged + bypassed),
    relevant (found), mean_residual (all runs), top_residual (mean residual of the top runs by the
    reference), separated (share of top-run pairs whose mean base of one is above the other's mean
    upper bound), sig_base_base / sig_base_upper / sig_base_projected (share of top-run pairs
    significant by a one-tailed paired Wilcoxon test, Moffat et al. 2007 Table 5).
    ``systems``: per (checkpoint, p_eval, run) mean base, residual, upper, projected.
    ``judgments``: the selector's history; ``topic_counts``: judgments per topic per checkpoint;
    ``top_runs``: the runs of the top group; ``reference``: the reference score of every run.
    ``stopped``: why a :class:`StopRule` ended the simulation early (None: it did not).
    """

    method: str
    p_select: float
    summary: pd.DataFrame
    systems: pd.DataFrame
    judgments: pd.DataFrame
    bypassed: pd.DataFrame
    topic_counts: pd.DataFrame
    top_runs: list
    reference: pd.Series | None
    per_query: dict = field(default_factory=dict, repr=False)
    selector: Any = field(default=None, repr=False)
    stopped: str | None = None


def separation(per_query: Mapping[str, np.ndarray], alpha: float = 0.05, significance: bool = True) -> dict[str, float]:
    """How well a group of runs is separated (Moffat et al. 2007, Sec. 5 and Table 5).

    ``per_query``: ``base``, ``residual`` and ``projected`` arrays (n_runs, n_topics) for the runs
    of the group.  For each unordered pair, A is the run with the higher mean base.  Returns the
    share of pairs with mean base(A) > mean upper(B) (``separated``) and the share significant at
    ``alpha`` by a one-tailed Wilcoxon signed-rank test of x = base(A) against y = base(B),
    upper(B) or projected(B) over topics (a topic with nothing judged uses the midpoint; a pair
    whose differences are all zero, or with fewer than 2 topics, is not significant).
    ``significance=False`` skips the tests.

    The test is :func:`~pyterrier_noise.stats.paired_test` ``(test="wilcoxon")``: scipy's exact
    null distribution when no difference is zero or tied, else its normal approximation with tie
    and continuity corrections (Wilcoxon 1945; Cureton 1967) -- which is what
    ``scipy.stats.wilcoxon`` does from 14 topics on; with 13 or fewer topics and ties scipy would
    run an exact permutation test instead, thousands of statistic evaluations per pair, which
    made small simulations slower than large ones.
    """
    missing = [k for k in ("base", "residual", "projected") if k not in per_query]
    if missing:
        raise InputError(f"separation: per_query is missing {missing}; expected base, residual and projected")
    base = np.asarray(per_query["base"], dtype=np.float64)
    resid = np.asarray(per_query["residual"], dtype=np.float64)
    proj_raw = np.asarray(per_query["projected"], dtype=np.float64)
    if base.ndim != 2 or resid.shape != base.shape or proj_raw.shape != base.shape:
        raise InputError(f"separation: expected base, residual and projected of one shape (runs, topics), got "
                         f"{base.shape}, {resid.shape}, {proj_raw.shape}")
    if not (0 < alpha < 1):
        raise InputError(f"argument 'alpha': expected a number in (0, 1), got {alpha!r}")
    proj = _proj_fallback(base, resid, proj_raw)
    n = base.shape[0]
    if n < 2:
        return dict(pairs=0, separated=np.nan, sig_base_base=np.nan, sig_base_upper=np.nan, sig_base_projected=np.nan)
    i, j = np.triu_indices(n, k=1)
    mb = base.mean(axis=1)
    hi = np.where(mb[i] >= mb[j], i, j)
    lo = np.where(mb[i] >= mb[j], j, i)
    upper = base + resid
    out = dict(pairs=len(i), separated=float(np.mean(mb[hi] > upper[lo].mean(axis=1))))
    if not significance:
        return dict(out, sig_base_base=np.nan, sig_base_upper=np.nan, sig_base_projected=np.nan)
    from ..stats import paired_test
    for name, other in (("sig_base_base", base), ("sig_base_upper", upper), ("sig_base_projected", proj)):
        d = base[hi] - other[lo]
        nonzero = (d != 0).any(axis=1) & np.isfinite(d).all(axis=1)
        pv = np.ones(len(d))
        if nonzero.any() and d.shape[1] >= 2:
            res = paired_test(d[nonzero], 0.0, test="wilcoxon", alternative="greater")
            pv[nonzero] = np.nan_to_num(np.asarray(res, dtype=np.float64), nan=1.0)
        out[name] = float(np.mean(pv < alpha))
    return out


def _judged_qids(qrels: Any, topics: Sequence[str]) -> Any:
    """The qids on which ``qrels`` (a frame or a :class:`JudgmentTable`) hold a judgment (a table:
    each topic with a labelled row once, not a qid per judgment); for a table over ``topics``
    themselves (the alignment's own), whether each of them holds one (a bool array)."""
    if not isinstance(qrels, JudgmentTable):
        return qrels["qid"]
    tix = qrels.topic_index[~np.isnan(qrels.labels)]
    has = np.zeros(len(qrels.topics), dtype=bool)
    has[tix] = True
    return has if qrels.topics is topics else np.asarray(qrels.topics, dtype=object)[has]


def unknown_topic_quota(topics: Sequence[str], oracle_qids: Any, quota: Any, unknown_topics: str,
                        who: str) -> Any:
    """Announce the run topics without any oracle judgment (counts and which) and, for ``"skip"``,
    give them a quota of 0 judgments (the other topics keep ``quota``).  ``oracle_qids``: the qids
    the oracle judges, or a bool per topic of ``topics`` (whether the oracle judges it)."""
    names = np.asarray(list(topics), dtype=object)
    if isinstance(oracle_qids, np.ndarray) and oracle_qids.dtype == bool:
        unknown = names[~oracle_qids].tolist()
    else:
        import pandas as pd
        known = pd.Index(pd.unique(np.asarray(oracle_qids, dtype=object).astype(str)), dtype=object)
        # hashed once, not a lookup per topic (object indexes: isin on numpy's fixed-width strings is 15x slower)
        unknown = names[~pd.Index(names, dtype=object).isin(known)].tolist()
    if not unknown:
        return quota
    shown = ", ".join(repr(t) for t in unknown[:10]) + (", ..." if len(unknown) > 10 else "")
    if unknown_topics == "judge":
        announce(f"{who}: {len(unknown)} of {len(topics)} topics of the runs have no judgment in the oracle's qrels "
                 f"(qid {shown}); they are judged all the same, every answer there following the missing policy")
        return quota
    announce(f"{who}: {len(unknown)} of {len(topics)} topics of the runs have no judgment in the oracle's qrels "
             f"(qid {shown}); no judgment is spent on them ({len(topics) - len(unknown)} topics are judged; "
             f"judge them all the same with --judge-unknown-topics / unknown_topics='judge')")
    if isinstance(quota, Mapping):
        out = {str(k): int(v) for k, v in quota.items()}
    elif quota is None:
        out = {}
    else:
        out = dict.fromkeys(topics, int(quota))
    out.update(dict.fromkeys(unknown, 0))
    return out


def simulate(runs: Any, oracle_or_qrels: Any, method: SelectionMethod = "C",
             checkpoints: Sequence[int] = (1000, 2000, 5000),
             p_select: float = 0.8, p_eval: Sequence[float] = (0.5, 0.8, 0.95), pool_runs: Sequence[str] | None = None,
             missing: Missing = "nonrel", reference_qrels: Any = None, reference_measure: Any = "AP",
             top_fraction: float = 1 / 3, power: float = 3, residual_scope: SelectionScope = "query",
             score_scope: SelectionScope = "system", batch_size: int = 1,
             tie_break: SelectionTieBreak = "deterministic",
             seed: int = 0,
             per_topic_quota: Any = None, rel: float = 1.0, max_rel: float | None = None, alpha: float = 0.05,
             significance: bool = True, keep_per_query: bool = False, progress: bool = False,
             stop: StopRule | None = None, unknown_topics: str = "skip") -> SimulationResult:
    """Replay judgment selection against an oracle and measure it at each checkpoint.

    Moffat, Webber & Zobel 2007, Sec. 5: the oracle's labels are revealed only
    for the selected documents; everything else is unjudged.  ``oracle_or_qrels``: qrels (a
    missing judgment is non-relevant, or bypassed with ``missing="bypass"``, the paper's Table 2) or
    any callable ``oracle(qid, docno) -> label or None`` (None: apply ``missing``).
    ``reference_qrels`` (default: the oracle's qrels) rank the runs by ``reference_measure`` (the
    paper: official MAP) to find the top group (``top_fraction`` of the runs).  ``runs`` may be an
    :class:`AlignedRuns` built with ``include_unjudged=True`` (reused across methods).
    ``significance=False`` skips the Wilcoxon tests (their columns are NaN); ``keep_per_query``
    keeps the per-(run, topic) arrays in ``per_query[(checkpoint, p)]``.  ``stop``: a
    :class:`StopRule`; when it fires the simulation is measured there (a last row whose
    ``judgments`` is below its ``checkpoint``) and ends, and ``result.stopped`` says why.
    ``unknown_topics``: topics of the runs on which the oracle's qrels hold no judgment are announced
    and get no judgment (``"skip"``, default; their quota is 0) or are judged like any other
    (``"judge"``: every answer there is ``missing``).
    """
    import pandas as pd
    from ..io import read_qrels
    check_choice("missing", missing, MISSING)
    check_choice("unknown_topics", unknown_topics, UNKNOWN_TOPICS)
    cps = _checkpoints(checkpoints)
    p_select = check_probability("p_select", p_select)
    p_eval = [check_probability("p_eval", x) for x in (p_eval if isinstance(p_eval, Sequence) else [p_eval])]
    if not p_eval:
        raise InputError("argument 'p_eval': expected at least one persistence")
    if not 0 < top_fraction <= 1:
        raise InputError(f"argument 'top_fraction': expected a number in (0, 1], got {top_fraction!r}")

    oracle_fn: Callable | None = None
    oracle_q: pd.DataFrame | JudgmentTable | None = None
    if isinstance(oracle_or_qrels, JudgmentTable):
        oracle_q = oracle_or_qrels
    elif callable(oracle_or_qrels) and not isinstance(oracle_or_qrels, pd.DataFrame):
        oracle_fn = oracle_or_qrels
        oracle_q = getattr(oracle_or_qrels, "qrels", None)
    else:
        oracle_q = read_qrels(oracle_or_qrels)
    ref_q = read_qrels(reference_qrels) if reference_qrels is not None else oracle_q
    if ref_q is not None and not isinstance(ref_q, JudgmentTable):   # validated once, sorted once
        ref_q = JudgmentTable.from_frame(ref_q, qrels_topics(ref_q))
        oracle_q = ref_q if reference_qrels is None else oracle_q

    built = not isinstance(runs, AlignedRuns)
    aligned = aligned_for(runs, ref_q) if built else runs
    if built and ref_q is not None:
        # the alignment's table holds the reference qrels' label on each of its rows (NaN: none),
        # so neither the reference nor an oracle with those qrels looks a judgment up again
        oracle_q = aligned.table if oracle_q is ref_q else oracle_q
        ref_q = aligned.table
    if oracle_q is not None:
        per_topic_quota = unknown_topic_quota(aligned.topics, _judged_qids(oracle_q, aligned.topics), per_topic_quota,
                                              unknown_topics, "simulate")
    from functools import partial
    build = partial(JudgmentSelector, aligned, p=p_select, method=method, power=power, residual_scope=residual_scope,
                    score_scope=score_scope, batch_size=batch_size, tie_break=tie_break, seed=seed,
                    pool_runs=pool_runs, per_topic_quota=per_topic_quota, rel=rel, max_rel=max_rel)
    if ref_q is not None and ref_q is aligned.table and len(aligned.jidx) > _SEQUENTIAL_POSITIONS:
        # a large alignment: the reference scores first, so that their temporaries and those of
        # the selector's set-up are not held at once
        scores = _reference_scores(aligned, ref_q.labels, reference_measure)
        sel = build()
    elif ref_q is not None and ref_q is aligned.table:
        # the reference scores need only the alignment and its own labels: evaluated in a thread
        # while the selector is built (numpy releases the GIL), the same values
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1) as pool:
            scoring = pool.submit(_reference_scores, aligned, ref_q.labels, reference_measure)
            sel = build()
            scores = scoring.result()
    else:
        scores, sel = None, build()
    reference, top = _reference_group(sel, ref_q, reference_measure, top_fraction, scores)
    if built:   # what the alignment and the selector's set-up freed is not kept for the rest of the run
        from .._arrow import release_unused
        release_unused()
    oracle = oracle_fn if oracle_fn is not None else oracle_q
    bar = progress_bar(total=cps[-1], desc=f"select {method}", unit="judgment", enabled=bool(progress))
    summary, systems, counts, per_query = [], [], [], {}
    try:
        for cp in cps:
            _judge_until(sel, oracle, cp, missing, stop, bar)
            rows, frames, kept = _measure(sel, method, cp, p_eval, top, alpha, significance, keep_per_query)
            summary += rows
            systems += frames
            per_query.update(kept)
            counts.append(pd.DataFrame({"checkpoint": cp, "qid": sel.topics, "judgments": sel.topic_counts.to_numpy()}))
            if sel.stopped is not None:
                break
    finally:   # also when interrupted: the bar's last line comes now, not after the command's last word
        bar.close()
    return SimulationResult(method=method, p_select=p_select, summary=pd.DataFrame(summary),
                            systems=pd.concat(systems, ignore_index=True), judgments=sel.history,
                            bypassed=sel.bypassed, topic_counts=pd.concat(counts, ignore_index=True),
                            top_runs=[aligned.run_names[i] for i in top], reference=reference,
                            per_query=per_query, selector=sel, stopped=sel.stopped)


#: ranked positions above which the reference scores are evaluated before the selector is built,
#: not in a thread meanwhile: each step's temporaries are tens of bytes a position (on five MS
#: MARCO-like runs, 35 million positions, together they raised the peak by about 1 GB)
_SEQUENTIAL_POSITIONS = 10_000_000


def _reference_group(sel: JudgmentSelector, ref_q: pd.DataFrame | None, reference_measure: Any,
                     top_fraction: float, scores: np.ndarray | None = None) -> tuple[pd.Series | None, np.ndarray]:
    """The runs' scores under the reference qrels (None without them) and the top group: the
    ``top_fraction`` best runs by that score (ties by run order), every run without reference.
    ``scores``: :func:`_reference_scores` already computed (None: computed here)."""
    import pandas as pd
    aligned = sel.aligned
    S = aligned.n_runs
    if ref_q is None:
        announce("simulate: no reference qrels (a callable oracle without .qrels and no reference_qrels): "
                 "the top group is all runs")
        return None, np.arange(S)
    # (the labels are looked up only when the scores are not already computed)
    ref_scores = scores if scores is not None else _reference_scores(aligned, sel.labels_of(ref_q), reference_measure)
    reference = pd.Series(ref_scores, index=pd.Index(aligned.run_names, name="name"), name=str(reference_measure))
    n_top = max(2, int(round(S * top_fraction)))
    return reference, np.lexsort((np.arange(S), -ref_scores))[:n_top]


def _reference_scores(aligned: AlignedRuns, labels: np.ndarray, reference_measure: Any) -> np.ndarray:
    """Each run's mean score over topics by ``reference_measure`` with ``labels`` (one per row of
    the alignment's table)."""
    from ..measures import to_spec   # here: the measures load ir_measures
    spec, _ = to_spec(reference_measure) if not isinstance(reference_measure, MeasureSpec) else (reference_measure, None)
    return _labelled_only(aligned, labels).evaluate([spec], labels)[spec][:, :, 0].mean(axis=1)


def _labelled_only(aligned: AlignedRuns, labels: np.ndarray) -> AlignedRuns:
    """The alignment with no table row for a position whose row has no label (NaN) in ``labels``:
    the alignment the engine builds without ``include_unjudged``, on which every measure takes the
    same value (a position without a row and a row without a label are both unjudged), while the
    kernels visit only the labelled positions instead of every retrieved one."""
    labelled = np.append(~np.isnan(labels), False)   # jidx -1 (no row) reads the False
    return AlignedRuns(run_names=aligned.run_names, table=aligned.table, ties=aligned.ties, seg_len=aligned.seg_len,
                       seg_start=aligned.seg_start, pos=aligned.pos, jidx=np.where(labelled[aligned.jidx], aligned.jidx, -1),
                       group_start=aligned.group_start, group_end=aligned.group_end, docno=aligned.docno)


def _judge_until(sel: JudgmentSelector, oracle: Any, cp: int, missing: str, stop: StopRule | None,
                 bar: Any) -> None:
    """Judge until the selector holds ``cp`` judgments, the queue is exhausted or ``stop`` fires."""
    while sel.n_judged < cp:
        before = sel.n_judged
        if not sel.judge(oracle, min(max(100, sel.batch_size), cp - sel.n_judged), missing=missing, stop=stop) \
                or sel.stopped is not None:
            bar.update(sel.n_judged - before)
            break
        bar.update(sel.n_judged - before)


def _measure(sel: JudgmentSelector, method: str, cp: int, p_eval: list[float], top: np.ndarray, alpha: float,
             significance: bool, keep_per_query: bool) -> tuple[list[dict], list[pd.DataFrame], dict]:
    """The checkpoint's summary rows and per-run frames at each evaluation ``p`` (and the per-query
    arrays when kept)."""
    import pandas as pd
    arrays = judged_ranges(sel.contributions, sel.judged, sel.current_labels, sel.gain, (sel.n_runs, sel.n_topics),
                           p_eval)
    judged = sel.history["label"].to_numpy(dtype=np.float64)
    n_rel = int((sel.gain(judged) > 0).sum()) if len(judged) else 0
    handled = sel.n_judged + len(sel.bypassed)
    summary, systems, per_query = [], [], {}
    for p in p_eval:
        base, resid, proj = (arrays[p][k] for k in ("base", "residual", "projected"))
        sep = separation({"base": base[top], "residual": resid[top], "projected": proj[top]}, alpha=alpha,
                         significance=significance)
        summary.append(dict(method=method, checkpoint=cp, judgments=sel.n_judged, handled=handled, relevant=n_rel,
                            p_eval=p, mean_residual=float(resid.mean()), top_residual=float(resid[top].mean()),
                            **{k: v for k, v in sep.items() if k != "pairs"}))
        pb = base.mean(axis=1)
        pr = resid.mean(axis=1)
        pj = _proj_fallback(base, resid, proj).mean(axis=1)
        systems.append(pd.DataFrame({"method": method, "checkpoint": cp, "judgments": sel.n_judged, "p_eval": p,
                                     "name": sel.aligned.run_names, "base": pb, "residual": pr, "upper": pb + pr,
                                     "projected": pj}))
        if keep_per_query:
            per_query[(cp, p)] = {"base": base.copy(), "residual": resid.copy(), "projected": proj.copy()}
    return summary, systems, per_query


def _checkpoints(checkpoints: Any) -> list[int]:
    if isinstance(checkpoints, (int, np.integer)) and not isinstance(checkpoints, bool):
        checkpoints = [checkpoints]
    try:
        cps = sorted({int(x) for x in checkpoints})
    except (TypeError, ValueError):
        raise InputError(f"argument 'checkpoints': expected a budget or a list of positive integers, "
                         f"got {checkpoints!r}") from None
    if not cps or cps[0] < 1:
        raise InputError(f"argument 'checkpoints': expected positive integers, got {checkpoints!r}")
    return cps


def compare_methods(runs: Any, qrels: Any, methods: Sequence[str] = METHODS, checkpoints: Sequence[int] = (1000, 2000),
                    executor: Executor = None, **kwargs: Any) -> tuple[pd.DataFrame, dict[str, SimulationResult]]:
    """Run :func:`simulate` for several methods on one alignment; returns the stacked summaries
    and ``{method: SimulationResult}``.  ``kwargs`` go to :func:`simulate`.  ``executor``: None
    (default) runs the methods here one after the other; a ``dask.distributed.Client`` (or
    ``"dask"``: the current client) runs each as a task on its workers (the alignment sent to each
    once), with the same results (every method's random numbers come from ``seed``)."""
    import pandas as pd
    from ..io import read_qrels
    q = read_qrels(qrels)
    ref = kwargs.get("reference_qrels")
    aligned = aligned_for(runs, read_qrels(ref) if ref is not None else q)
    done = map_ordered(executor, _simulate_method, (aligned, q, checkpoints, kwargs), methods)
    results = dict(zip(methods, done))
    return pd.concat([r.summary for r in results.values()], ignore_index=True), results


def _simulate_method(shared: tuple, method: str) -> SimulationResult:
    """:func:`simulate` of one method of :func:`compare_methods` (a task of its sweep)."""
    aligned, q, checkpoints, kwargs = shared
    return simulate(aligned, q, method=method, checkpoints=checkpoints, **kwargs)

