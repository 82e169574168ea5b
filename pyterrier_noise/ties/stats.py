"""Tie statistics of runs in the style of Yang (2019) thesis Sec. 3.2.1, Table 3.2."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._progress import progress_bar
from .._validation import InputError, check_choice, where
from .._vocab import PRECISIONS, Precision
from ..io.chunks import DEFAULT_MEMORY
from ._frames import _codes, _numeric, _validate

__all__ = ["PRECISIONS", "TieStats", "tie_stats", "tie_stats_in_chunks", "combine_tie_stats"]


@dataclass
class TieStats:
    """Tie statistics of one or more runs (Yang 2019 thesis, Sec. 3.2.1, Table 3.2).

    Attributes:
        topics: one row per (run, qid): ``n_docs``, ``n_tied_docs`` (documents whose score equals
            another document's in the same ranking), ``n_tied_groups`` (groups of >= 2 equal
            scores), ``largest_group``, ``first_tie_rank`` (1-based rank, in score order, where
            the first tied group starts; NaN without ties) and ``has_ties``; with a ``rank``
            column also ``n_contradictions`` (adjacent pairs, in score-then-rank order, whose
            scores and rank labels imply opposite orders) and ``n_contradicted_docs`` (documents
            in such a pair).
        runs: one row per run: the same counts summed, ``n_topics``, ``n_topics_with_ties``,
            ``share_topics_with_ties``, ``share_docs_tied``, ``mean_group_size`` (of tied
            groups), ``largest_group``, ``gm_first_tie_rank`` (geometric mean over its topics
            with ties) and ``has_ties`` (and the contradiction counterparts).
        group_sizes: the histogram of tied-group sizes per run: ``size``, ``n_groups``.
        summary: Table 3.2: rows ``"tied scores"`` (and ``"rank/score contradictions"`` with a
            ``rank`` column); columns ``share_runs``, ``share_topics`` (run-topic pairs),
            ``share_docs`` (fractions in [0, 1]) and ``gm_first_tie_rank`` (over all run-topic
            pairs with ties).
    """

    topics: pd.DataFrame
    runs: pd.DataFrame
    group_sizes: pd.DataFrame
    summary: pd.DataFrame

def _gmean_by(values: pd.Series, keys: list) -> pd.Series:
    """Geometric mean per group, ignoring NaN (scipy.stats.gmean has no groupby form)."""
    return np.exp(np.log(values).groupby(keys, sort=False).mean())


def _first_appearance(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``key`` numbered in order of first appearance, and the first row of each code."""
    codes, uniques = pd.factorize(key, sort=False)
    first = np.full(len(uniques), len(key), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(key)))
    return codes.astype(np.int64), first


def _sort_key(major: np.ndarray, minor: np.ndarray) -> np.ndarray | None:
    """One int64 key ordering by (major, minor) (non-negative codes), or None if it could overflow."""
    span = int(minor.max()) + 1 if len(minor) else 1
    if (int(major.max()) + 1 if len(major) else 1) * span >= 1 << 62:
        return None
    return major * span + minor


def _score_order(topic: np.ndarray, score: np.ndarray) -> np.ndarray:
    """``np.lexsort((-score, topic))`` (stable), fast when each ranking's rows are contiguous: only
    the rankings not already listed by descending score are sorted (runs are usually in rank order)."""
    n = len(topic)
    same = topic[1:] == topic[:-1]
    if not (topic[1:] >= topic[:-1]).all():
        return np.lexsort((-score, topic))
    bad = np.zeros(int(topic.max()) + 1 if n else 0, dtype=bool)
    bad[topic[1:][same & (score[1:] > score[:-1])]] = True
    order = np.arange(n)
    if bad.any():
        idx = np.flatnonzero(bad[topic])      # whole contiguous blocks, so a sort inside them is in place
        order[idx] = idx[np.lexsort((-score[idx], topic[idx]))]
    return order


def _check_unique_codes(results: pd.DataFrame, run: pd.Series, topic: np.ndarray, doc: np.ndarray, rc: str) -> None:
    """InputError at the first row repeating a (ranking, docno) pair, as ``_check_unique`` words it."""
    key = _sort_key(topic, doc)
    if key is not None:
        k = np.sort(key)
        if not (k[1:] == k[:-1]).any():
            return
    order = np.lexsort((doc, topic))
    again = (topic[order][1:] == topic[order][:-1]) & (doc[order][1:] == doc[order][:-1])
    if again.any():
        dup = order[1:][again]
        i = int(dup.min())
        what = f"{rc} {run.iloc[i]!r}, qid {results['qid'].iloc[i]!r}, docno {results['docno'].iloc[i]!r}"
        raise InputError(f"tie_stats: {where(None, row=results.index[i])} repeats {what} "
                         f"({len(dup)} duplicate(s) in all); expected each document at most once per ranking")


def _per_topic(results: pd.DataFrame, run: pd.Series, rc: str, score: np.ndarray,
               rank: np.ndarray | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:attr:`TieStats.topics`, and the tied groups (run, size), from one stable sort."""
    # integer codes: a ranking (run, qid) is a topic, numbered in order of first appearance
    # (as groupby(sort=False) orders them); one stable sort by (topic, score descending)
    n = len(results)
    run_code = _codes(run)
    qid_code = _codes(results["qid"])
    topic, first_row = _first_appearance(run_code * (int(qid_code.max()) + 1) + qid_code)
    n_topics = len(first_row)
    _check_unique_codes(results, run, topic, _codes(results["docno"]), rc)
    order = _score_order(topic, score)
    t_s, sc_s = topic[order], score[order]
    new_topic = np.r_[True, t_s[1:] != t_s[:-1]]
    new_group = new_topic | np.r_[True, sc_s[1:] != sc_s[:-1]]
    g_start = np.flatnonzero(new_group)
    g_size = np.diff(np.r_[g_start, n])
    g_topic = t_s[g_start]
    topic_start = np.flatnonzero(new_topic)
    # 1-based rank where each group starts (competition rank, score descending)
    g_rank = (g_start - topic_start[np.cumsum(new_topic)[g_start] - 1] + 1).astype(np.float64)
    tied_g = g_size >= 2

    n_docs = np.bincount(topic, minlength=n_topics).astype(np.int64)
    n_tied_docs = np.bincount(g_topic[tied_g], weights=g_size[tied_g], minlength=n_topics).astype(np.int64)
    n_tied_groups = np.bincount(g_topic[tied_g], minlength=n_topics).astype(np.int64)
    largest_group = np.ones(n_topics, dtype=np.int64)
    np.maximum.at(largest_group, g_topic[tied_g], g_size[tied_g])
    first_tie_rank = np.full(n_topics, np.inf)
    np.minimum.at(first_tie_rank, g_topic[tied_g], g_rank[tied_g])
    first_tie_rank[np.isinf(first_tie_rank)] = np.nan

    keys = pd.DataFrame({rc: run.iloc[first_row].to_numpy(), "qid": results["qid"].iloc[first_row].to_numpy()})
    t = keys.assign(n_docs=n_docs, n_tied_docs=n_tied_docs, first_tie_rank=first_tie_rank,
                    n_tied_groups=n_tied_groups, largest_group=largest_group, has_ties=n_tied_docs > 0)
    groups = pd.DataFrame({rc: keys[rc].to_numpy()[g_topic[tied_g]], "size": g_size[tied_g].astype(np.int64)})

    if rank is not None:
        # in (topic, score descending, rank) order, an adjacent pair with different scores is the
        # largest rank label of one score group and the smallest of the next group of its topic
        rk = rank[order]
        g_min = np.minimum.reduceat(rk, g_start)
        g_max = np.maximum.reduceat(rk, g_start)
        contra = (g_topic[1:] == g_topic[:-1]) & (g_max[:-1] > g_min[1:])   # between group i and i + 1
        after = np.append(contra, False)
        before = np.r_[False, contra]
        docs_in = np.where(g_size == 1, after | before, after.astype(np.int64) + before)
        t["n_contradictions"] = np.bincount(g_topic[:-1][contra], minlength=n_topics).astype(np.int64)
        t["n_contradicted_docs"] = np.bincount(g_topic, weights=docs_in, minlength=n_topics).astype(np.int64)
        t["has_contradictions"] = t["n_contradictions"] > 0
    cols = [rc, "qid", "n_docs", "n_tied_docs", "n_tied_groups", "largest_group", "first_tie_rank", "has_ties"]
    if rank is not None:
        cols += ["n_contradictions", "n_contradicted_docs", "has_contradictions"]
    return t[cols], groups


def _per_run(topics: pd.DataFrame, groups: pd.DataFrame, rc: str, has_rank: bool) -> pd.DataFrame:
    """:attr:`TieStats.runs` from the per-topic frame and the tied groups."""
    by_run = topics.groupby(rc, sort=False)
    runs = by_run.agg(n_topics=("qid", "size"), n_topics_with_ties=("has_ties", "sum"), n_docs=("n_docs", "sum"),
                      n_tied_docs=("n_tied_docs", "sum"), n_tied_groups=("n_tied_groups", "sum"),
                      largest_group=("largest_group", "max"))
    runs["share_topics_with_ties"] = runs["n_topics_with_ties"] / runs["n_topics"]
    runs["share_docs_tied"] = runs["n_tied_docs"] / runs["n_docs"]
    tied_in_groups = groups.groupby(rc, sort=False)["size"].sum().reindex(runs.index, fill_value=0)
    runs["mean_group_size"] = (tied_in_groups / runs["n_tied_groups"]).where(runs["n_tied_groups"] > 0)
    runs["gm_first_tie_rank"] = _gmean_by(topics["first_tie_rank"], [topics[rc]]).reindex(runs.index)
    runs["has_ties"] = runs["n_topics_with_ties"] > 0
    if has_rank:
        extra = by_run.agg(n_topics_with_contradictions=("has_contradictions", "sum"),
                           n_contradictions=("n_contradictions", "sum"),
                           n_contradicted_docs=("n_contradicted_docs", "sum"))
        runs = runs.join(extra)
        runs["share_topics_with_contradictions"] = runs["n_topics_with_contradictions"] / runs["n_topics"]
        runs["share_docs_contradicted"] = runs["n_contradicted_docs"] / runs["n_docs"]
        runs["has_contradictions"] = runs["n_topics_with_contradictions"] > 0
    return runs.reset_index()


def _share(num: float, den: float) -> float:
    return float(num / den) if den else float("nan")


def _summary(topics: pd.DataFrame, runs: pd.DataFrame, has_rank: bool) -> pd.DataFrame:
    """:attr:`TieStats.summary`: Table 3.2's rows."""
    n_runs, n_topics, n_docs = len(runs), len(topics), float(topics["n_docs"].sum())
    first = topics["first_tie_rank"].dropna()
    rows = {"tied scores": {
        "share_runs": _share(runs["has_ties"].sum(), n_runs),
        "share_topics": _share(topics["has_ties"].sum(), n_topics),
        "share_docs": _share(topics["n_tied_docs"].sum(), n_docs),
        "gm_first_tie_rank": float(np.exp(np.log(first).mean())) if len(first) else float("nan")}}
    if has_rank:
        rows["rank/score contradictions"] = {
            "share_runs": _share(runs["has_contradictions"].sum(), n_runs),
            "share_topics": _share(topics["has_contradictions"].sum(), n_topics),
            "share_docs": _share(topics["n_contradicted_docs"].sum(), n_docs),
            "gm_first_tie_rank": float("nan")}
    return pd.DataFrame.from_dict(rows, orient="index")


def tie_stats(results: pd.DataFrame, run_column: str | None = "name",
              precision: Precision = "float64") -> TieStats:
    """Tie statistics of runs in the style of Yang (2019) thesis Table 3.2.

    Ties are documents of the same ranking (run, qid) with equal scores -- in float64, or in
    float32 with ``precision="float32"`` (trec_eval's precision).  Group sizes and the rank of the
    first tie do not depend on how ties are ordered: a tied group starts at rank
    ``1 + #(documents with a higher score)``.  If the frame has a ``rank`` column, rank/score
    contradictions are counted too: after sorting by score descending then ``rank`` ascending (the
    thesis's canonical order), an adjacent pair with a strictly higher score but a larger rank
    label (e.g. LIAClass, topic 351, rank labels 1, 2, 3, 536, 4, 537, 5).

    Args:
        results: a results frame (``qid, docno, score`` [, ``rank``]); many runs may be stacked
            with a run column.
        run_column: the column naming the run.  If it is absent from the frame (the default
            ``"name"`` often is), the whole frame is one run called ``"run"``; pass None to force
            that.
        precision: ``"float64"`` or ``"float32"``.

    Returns:
        A :class:`TieStats` with per-topic, per-run, group-size and summary frames.
    """
    _validate(results, "tie_stats", ["score"])
    if len(results) == 0:
        raise InputError("tie_stats: the results frame is empty; expected at least one ranked document")
    precision = check_choice("precision", precision, PRECISIONS)
    if run_column is not None and run_column in results.columns:
        run = results[run_column]
        rc = run_column
    else:
        run = pd.Series("run", index=results.index)
        rc = run_column if run_column is not None else "name"
    score = _numeric(results, "score", "tie_stats")
    if precision == "float32":
        score = score.astype(np.float32).astype(np.float64)
    has_rank = "rank" in results.columns
    rank = _numeric(results, "rank", "tie_stats") if has_rank else None

    topics, groups = _per_topic(results, run, rc, score, rank)
    runs = _per_run(topics, groups, rc, has_rank)
    group_sizes = groups.groupby([rc, "size"], sort=True).size().rename("n_groups").reset_index()
    summary = _summary(topics, runs, has_rank)
    return TieStats(topics=topics, runs=runs, group_sizes=group_sizes, summary=summary)




def tie_stats_in_chunks(runs: Mapping[str, pd.DataFrame] | Sequence[Any], precision: Precision = "float64",
                        chunk: int = 8, *, progress: bool = True, memory: float | None = DEFAULT_MEMORY) -> TieStats:
    """:func:`tie_stats` of many runs, a few runs at a time behind a progress bar; the per-topic,
    per-run and group-size frames are concatenated and the Table 3.2 summary recomputed from them
    (Yang 2019 thesis, Table 3.2).

    Args:
        runs: run name -> results frame, or run file paths: these are read a chunk of files at a
            time within ``memory`` bytes (the statistics are per run, so the tables are those of
            one reading; two files of the same name are an error).
        precision: ``"float64"`` or ``"float32"`` (see :func:`tie_stats`).
        chunk: runs per call of :func:`tie_stats`.
        progress: show a progress bar (only when there is more than one chunk).
        memory: with run files, the memory budget in bytes (None: every file at once).
    """
    if not isinstance(runs, Mapping):
        from ..io import read_runs
        from ..io.chunks import run_file_chunks, warn_oversized
        from ..io.trec import check_run_names
        files = list(runs)
        check_run_names(files)
        warn_oversized(files, memory)
        return combine_tie_stats([tie_stats_in_chunks(read_runs(part), precision, chunk, progress=progress)
                                  for part in run_file_chunks(files, memory)])
    names = list(runs)
    parts = []
    for a in progress_bar(range(0, len(names), chunk), desc="tie statistics", unit="chunk",
                          enabled=progress and len(names) > chunk):
        frame = pd.concat([runs[n].assign(name=n) for n in names[a:a + chunk]], ignore_index=True)
        parts.append(tie_stats(frame, run_column="name", precision=precision))
    return combine_tie_stats(parts)


def combine_tie_stats(parts: Sequence[TieStats]) -> TieStats:
    """The :class:`TieStats` of the runs of several :func:`tie_stats` results (disjoint runs, in
    order): the per-topic, per-run and group-size frames concatenated and the Table 3.2 summary
    recomputed from them (Yang 2019 thesis, Table 3.2); one result is returned as it is."""
    parts = list(parts)
    if not parts:
        raise InputError("combine_tie_stats: expected at least one TieStats, got none")
    if len(parts) == 1:
        return parts[0]
    topics = pd.concat([p.topics for p in parts], ignore_index=True)
    per_run = pd.concat([p.runs for p in parts], ignore_index=True)
    sizes = pd.concat([p.group_sizes for p in parts], ignore_index=True)
    first = topics["first_tie_rank"].dropna()
    n_docs = float(topics["n_docs"].sum())
    rows = {"tied scores": {"share_runs": per_run["has_ties"].mean(), "share_topics": topics["has_ties"].mean(),
                            "share_docs": topics["n_tied_docs"].sum() / n_docs,
                            "gm_first_tie_rank": float(np.exp(np.log(first).mean())) if len(first) else np.nan}}
    if "has_contradictions" in topics.columns:
        rows["rank/score contradictions"] = {
            "share_runs": per_run["has_contradictions"].mean(), "share_topics": topics["has_contradictions"].mean(),
            "share_docs": topics["n_contradicted_docs"].sum() / n_docs, "gm_first_tie_rank": np.nan}
    summary = pd.DataFrame.from_dict(rows, orient="index").astype(float)
    return TieStats(topics=topics, runs=per_run, group_sizes=sizes, summary=summary)
