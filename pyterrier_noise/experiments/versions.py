"""Whose judgments?  One experiment over several label versions of the same topics.

``versions_experiment(...)`` is shaped like ``pt.Experiment`` (systems or run frames, topics,
measures, names, baseline, correction, perquery), but ``qrels`` is a dict of label versions
(``{"nist": ..., "llm": ..., "assessor_b": ...}``): NIST and LLM qrels, a second assessor, qrels
before and after a re-judging round.  Every system is aligned once to the union of the versions'
judgments; each version is one column of the label matrix, and the engine scores every (system,
topic, version) in one pass.  The :class:`VersionsResult` holds the per-version scores (the frame
``pt.Experiment`` gives, one block per version), leaderboard agreement, significance agreement
and label agreement (module :mod:`.version_agreement`), and judgment noise inside the
significance test and the noise floor (module :mod:`.version_noise`).

Pairs judged in one version and not another follow an explicit policy, ``unjudged=``:

* ``"trec_eval"`` (default): each version is scored on its own judgments, a document it did not
  judge is unjudged in it (non-relevant for the trec_eval measures, part of RBP's residual);
* ``"common"``: only the (topic, document) pairs every version judged keep their labels; the
  others are unjudged in every version, so the versions differ only in how they labelled the
  common pool.

Topics: only topics judged in every version are evaluated (those of the ``topics`` frame, when
given); topics missing from a version are announced with counts.
"""
from __future__ import annotations

import builtins
import os
from functools import cached_property
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._progress import progress_bar
from .._validation import InputError, announce, check_budget, check_choice, check_int, check_probability, check_ties
from ..engine import JudgmentTable, are_run_paths, qrels_topics
from ..engine.chunked import evaluate_in_chunks, file_chunks
from ..io.chunks import DEFAULT_MEMORY
from ..io import RunFileReader, read_qrels, read_runs, run_file_arguments, run_name
from .._vocab import (CORRECTIONS, TESTS, TOPIC_MISMATCH, UNJUDGED_POLICIES, Correction, Draw, Test, TiePolicy,
                      TopicMismatch, UnjudgedPolicy)
from ..stats import correct_pvalues, paired_test
from ._common import RBO_P, interactive, measure_label, spec_and_ties
from ._frame import check_frame_options
from .result import check_finite
from ._systems import as_run, run_systems
from . import version_agreement as agree

__all__ = ["UNJUDGED_POLICIES", "VersionsResult", "versions_experiment", "VersionsExperiment"]

#: the statement of each policy written into every output
POLICY_TEXT = {
    "trec_eval": "each version scored on its own judgments; a document a version did not judge is unjudged "
                 "in it (non-relevant for trec_eval measures), as trec_eval treats it",
    "common": "only (topic, document) pairs judged in every version keep their labels; the others are "
              "unjudged in every version (restricted to the common pool)",
}


def _version_frames(qrels: Any) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]]]:
    """The versions read (``read_qrels``) and the topics of each (those a frame declares in
    ``attrs["topics"]``, else those with judgments)."""
    if not isinstance(qrels, Mapping) or not qrels:
        raise InputError("qrels must be a non-empty dict {version name: qrels} (frames, TREC files, ...), "
                         f"got {type(qrels).__name__}")
    if len(qrels) < 2:
        raise InputError(f"a label-versions experiment needs at least 2 versions of the qrels, got {list(qrels)}")
    out, topics = {}, {}
    for name, q in qrels.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"version names must be non-empty strings, got {name!r}")
        frame = read_qrels(q)
        declared = qrels_topics(q) if isinstance(q, pd.DataFrame) else None
        topics[name] = [str(t) for t in (declared or pd.unique(frame["qid"]))]
        out[name] = frame
    return out, topics


def _evaluated_topics(judged: dict[str, list[str]], reference: str, topics: pd.DataFrame | None,
                      mode: str) -> list[str]:
    """Topics judged in every version (in the reference's order), cut to the topics frame."""
    ref_topics = judged[reference]
    sets = {v: set(t) for v, t in judged.items()}
    common = set.intersection(*sets.values())
    if topics is not None:
        common &= set(topics["qid"].astype(str))
    evaluated = [t for t in ref_topics if t in common]
    union = set.union(*sets.values())
    if topics is not None:
        union &= set(topics["qid"].astype(str))
    dropped = sorted(union - common)
    if dropped and mode != "ignore":
        t = dropped[0]
        missing = [v for v, s in sets.items() if t not in s]
        msg = (f"{len(dropped)} topic(s) are judged in some label versions and not in others and are not "
               f"evaluated (e.g. qid {t!r}, absent from version {missing[0]!r}); every version is scored on the "
               f"{len(evaluated)} topic(s) all versions judge")
        if mode == "error":
            raise InputError(msg)
        announce(msg)
    if len(evaluated) < 2:
        raise InputError(f"paired tests over topics need at least 2 topics judged in every version, got {evaluated}")
    return evaluated


def label_matrix(versions: Mapping[str, pd.DataFrame], topics: Sequence[str],
                 unjudged: UnjudgedPolicy = "trec_eval") -> tuple[JudgmentTable, np.ndarray]:
    """The union of the versions' judgments on ``topics`` as one table and its ``(J, V)`` label
    matrix (column ``v`` = version ``v``'s labels, NaN where it did not judge), under the policy
    ``unjudged`` (``"common"``: rows some version did not judge are NaN in every column)."""
    check_choice("unjudged", unjudged, UNJUDGED_POLICIES)
    keep = set(topics)
    frames = [f.loc[f["qid"].isin(keep), ["qid", "docno", "label"]] for f in versions.values()]
    union = pd.concat([f[["qid", "docno"]] for f in frames], ignore_index=True).drop_duplicates(ignore_index=True)
    table = JudgmentTable.from_frame(union.assign(label=np.nan), list(topics))
    index = pd.MultiIndex.from_frame(table.frame[["qid", "docno"]])
    L = np.full((len(table), len(frames)), np.nan)
    for v, f in enumerate(frames):   # one vectorised lookup per version (a handful)
        rows = index.get_indexer(pd.MultiIndex.from_frame(f[["qid", "docno"]]))
        L[rows, v] = f["label"].to_numpy(dtype=np.float64)
    if unjudged == "common":
        L[np.isnan(L).any(axis=1)] = np.nan
    return table, L


def _baselines(baseline: Any, names: list[str]) -> list[int]:
    if baseline is None:
        return []
    items = list(baseline) if isinstance(baseline, (list, tuple)) else [baseline]
    out = []
    for b in items:
        if isinstance(b, (int, np.integer)) and not isinstance(b, bool):
            if not 0 <= b < len(names):
                raise InputError(f"baseline index {b} is out of range for {len(names)} systems")
            out.append(int(b))
        elif isinstance(b, str) and b in names:
            out.append(names.index(b))
        else:
            raise InputError(f"baseline {b!r} is neither a system index nor one of the system names {names[:5]}")
    if len(set(out)) != len(out):
        raise InputError(f"baseline names a system more than once: {baseline!r}")
    return out


def _systems(retr_systems: Any, topics: pd.DataFrame | None, names: Sequence[str] | None) -> tuple[list[str], Any]:
    """(names, runs): run files stay paths or a RunFileReader already reading them (the engine reads
    them), anything else is run once."""
    if isinstance(retr_systems, RunFileReader) and topics is None:
        return [run_name(p) for p in retr_systems.paths], retr_systems
    if isinstance(retr_systems, RunFileReader):
        retr_systems = list(retr_systems.paths)
    if are_run_paths(retr_systems):
        files = run_file_arguments([retr_systems] if isinstance(retr_systems, (str, os.PathLike)) else retr_systems)
        if topics is None:
            return [run_name(f) for f in files], files
        retr_systems = read_runs(files)
    names, results = run_systems(retr_systems, topics, names)
    return list(names), {n: as_run(r, n) for n, r in zip(names, results)}


def versions_experiment(retr_systems: Sequence[Any] | Mapping[str, Any], topics: pd.DataFrame | None,
                        qrels: Mapping[str, Any], eval_metrics: Sequence[Any], names: Sequence[str] | None = None,
                        baseline: int | str | Sequence[int | str] | None = None, reference: str | None = None,
                        test: Test = "t", correction: Correction | None = None, correction_alpha: float = 0.05,
                        perquery: bool = False, unjudged: UnjudgedPolicy = "trec_eval", ties: TiePolicy | None = None,
                        top_k: int = 10, rbo_p: float = RBO_P, round: int | Mapping[str, int] | None = None,
                        n_resamples: int = 10_000, seed: int = 0, progress: bool | None = None,
                        on_topic_mismatch: TopicMismatch = "warn",
                        memory: float | None = DEFAULT_MEMORY) -> "VersionsResult":
    """``pt.Experiment`` over several label versions of the qrels, aligned once.

    Args:
        retr_systems: list or dict of pt.Transformers or results frames, or TREC run files (a
            path, a directory or a list of paths, or a :class:`~pyterrier_noise.io.RunFileReader`
            already reading them), as :func:`robustness_experiment` takes them.
        topics: ``qid, query`` frame, or None when every system is a results frame or a file.
        qrels: ``{version name: qrels}`` (frames, TREC files, anything
            :func:`~pyterrier_noise.io.read_qrels` reads); at least two versions.
        eval_metrics: measures the engine computes (``AP``, ``nDCG@10``, ``RBP(p=0.8)``, ...).
        names: system names for a list.
        baseline: index or name of the baseline system, or a list of them (several baselines:
            the correction is applied across every baseline comparison of a measure and version).
        reference: the version the others are compared with (default: the first).
        test: paired test over topics (``"t"`` as ``pt.Experiment``; see
            :func:`~pyterrier_noise.stats.paired_test`).
        correction, correction_alpha: ``pt.Experiment``'s multiple-comparison correction
            (statsmodels' ``"bonferroni"``, ``"holm"``, ``"fdr_bh"``) and level; the all-pairs
            conclusions are corrected over the pairs of each version and measure.
        perquery: build ``result.perquery`` (``version, name, qid, measure, value``) at once (it is
            built on first use either way; the per-topic values are always kept in ``values``).
        unjudged: ``"trec_eval"`` or ``"common"`` (module docstring).
        ties: tie policy for every measure (default: each measure's own, usually ``trec_eval``).
        top_k: the k of tau@k and the top-k overlap.
        rbo_p: RBO persistence (0.9).
        round: decimals of the measure columns of ``frame``, as ``pt.Experiment``'s.
        n_resamples, seed: resamples and seed of the randomisation / bootstrap tests.
        progress: progress bar over the alignment and evaluation.
        on_topic_mismatch: ``"warn"``, ``"error"`` or ``"ignore"`` for topics not judged in every
            version and run topics without qrels.
        memory: bytes that reading run files may take (default 4 GiB, as ``eval --memory``): more
            files than fit are read, aligned and evaluated a chunk of files at a time, here and in
            the result's later alignments (:func:`~pyterrier_noise.engine.chunked.evaluate_in_chunks`),
            with the same values; None: all at once.

    Returns:
        A :class:`VersionsResult`.

    The function is long by this documentation and its option checks; the steps are
    :func:`_evaluated_rows` and :func:`_evaluate_versions`.
    """
    progress = bool(progress) and interactive()
    check_choice("on_topic_mismatch", on_topic_mismatch, TOPIC_MISMATCH)
    check_choice("unjudged", unjudged, UNJUDGED_POLICIES)
    check_ties(ties, allow_none=True)
    check_choice("test", test, TESTS)
    check_choice("correction", correction, CORRECTIONS, allow_none=True)
    check_probability("correction_alpha", correction_alpha)
    check_probability("rbo_p", rbo_p)
    top_k = check_int("top_k", top_k, 1)
    check_frame_options(round, None)
    check_budget(memory)
    metrics = list(eval_metrics) if not isinstance(eval_metrics, (str, bytes)) else [eval_metrics]
    if not metrics:
        raise InputError("eval_metrics is empty; give at least one measure, e.g. ['AP', 'nDCG@10']")
    labels = [measure_label(m) for m in metrics]
    if len(set(labels)) != len(labels):
        raise InputError(f"measure {pd.Index(labels)[pd.Index(labels).duplicated()][0]!r} is given more than once")
    parsed = [spec_and_ties(m) for m in metrics]
    if topics is not None and (not isinstance(topics, pd.DataFrame) or "qid" not in topics.columns):
        raise InputError("topics must be a frame with a 'qid' column (e.g. dataset.get_topics())")
    versions, judged = _version_frames(qrels)
    vnames = list(versions)
    reference = vnames[0] if reference is None else reference
    if reference not in versions:
        raise InputError(f"reference {reference!r} is not one of the versions {vnames}")
    names, runs = _systems(retr_systems, topics, names)
    file_chunks(runs, memory)   # warns of a run file that alone needs more than the budget
    if len(names) < 2:
        raise InputError(f"a label-versions experiment needs at least 2 systems, got {len(names)} "
                         f"({', '.join(map(str, names)) or 'none'})")
    bases = _baselines(baseline, names)
    evaluated = _evaluated_topics(judged, reference, topics, on_topic_mismatch)
    table, L = label_matrix(versions, evaluated, unjudged)
    table = table.with_labels(L[:, vnames.index(reference)])
    if isinstance(runs, dict):
        runs = _evaluated_rows(runs, judged, evaluated, topics)
    policies = [ties or own for _, own in parsed]
    values = _evaluate_versions(runs, table, L, labels, parsed, policies, names, evaluated, len(vnames),
                                on_topic_mismatch, progress, memory)
    params = dict(baselines=[names[b] for b in bases], reference=reference, test=test, correction=correction,
                  correction_alpha=correction_alpha, unjudged=unjudged, ties=ties, top_k=top_k, rbo_p=rbo_p,
                  round=round, n_resamples=n_resamples, seed=seed, perquery=perquery,
                  policies=dict(zip(labels, policies)), memory=memory)
    res = VersionsResult(names, evaluated, labels, vnames, values, table, L, params,
                         runs=runs, specs={lab: spec for lab, (spec, _) in zip(labels, parsed)})
    if perquery:
        res.perquery
    return res


#: ``pt.Experiment``-style name of :func:`versions_experiment`
VersionsExperiment = versions_experiment


def _evaluated_rows(runs: dict[str, pd.DataFrame], judged: Mapping[str, Any], evaluated: Sequence[str],
                    topics: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """The runs' rows on the evaluated topics: rows on topics already announced (judged in some
    versions only) or outside the topics frame are not evaluated; rows on topics no version judges
    are announced by the alignment."""
    skip = set().union(*judged.values()) - set(evaluated)
    if topics is not None:
        wanted = set(topics["qid"].astype(str))
        runs = {n: r[r["qid"].isin(wanted)].reset_index(drop=True) for n, r in runs.items()}
    if skip:
        runs = {n: r[~r["qid"].isin(skip)].reset_index(drop=True) for n, r in runs.items()}
    return runs


def _evaluate_versions(runs: Any, table: Any, L: np.ndarray, labels: list[str], parsed: list, policies: list[str],
                       names: list[str], evaluated: Sequence[str], n_versions: int, on_topic_mismatch: str,
                       progress: bool, memory: float | None = None) -> dict[str, np.ndarray]:
    """Every measure's ``(systems, topics, versions)`` values: the runs aligned once per tie
    policy (the first alignment announces topic mismatches; run files a chunk of files at a time
    within ``memory`` bytes) and evaluated on the label matrix ``L``; RBP projected is the
    midpoint where undefined."""
    bar = progress_bar(total=len(set(policies)), desc=f"{len(names)} runs x {n_versions} versions",
                       unit="step", enabled=progress)
    values: dict[str, np.ndarray] = {}
    for k, pol in enumerate(dict.fromkeys(policies)):
        items = [(lab, spec) for lab, (spec, _), p in zip(labels, parsed, policies) if p == pol]
        out = evaluate_in_chunks(runs, table, dict.fromkeys(s for _, s in items), L, memory, ties=pol,
                                 on_topic_mismatch=on_topic_mismatch if k == 0 else "ignore")
        bar.update(1)
        for lab, spec in items:
            v = out[spec]
            if spec.component == "projected":
                v = np.where(np.isnan(v), 0.5, v)
            check_finite("version", lab, v, names, evaluated)
            values[lab] = v
    bar.close()
    return values


class VersionsResult:
    """What a label-versions experiment found; every table is built on first use.

    ``values[m]``: ``(systems, topics, versions)`` per-topic scores of measure ``m``;
    ``labels``: the ``(judgments, versions)`` label matrix over ``table`` rows (NaN = unjudged).
    """

    def __init__(self, names: list[str], topics: list[str], measures: list[str], versions: list[str],
                 values: dict[str, np.ndarray], table: JudgmentTable, labels: np.ndarray, params: dict,
                 runs: Any = None, specs: dict | None = None) -> None:
        self.names, self.topics, self.measures, self.versions = names, topics, measures, versions
        self.values, self.table, self.labels, self.params = values, table, labels, params
        self.reference: str = params["reference"]
        self.policy: str = POLICY_TEXT[params["unjudged"]]
        self.runs, self.specs = runs, specs or {}

    def __repr__(self) -> str:
        return (f"VersionsResult({len(self.names)} systems x {len(self.topics)} topics x {len(self.versions)} "
                f"versions {self.versions}, measures {self.measures}, reference {self.reference!r}; "
                f"unjudged={self.params['unjudged']!r}: {self.policy})")

    # -- scores --------------------------------------------------------------------------------

    @cached_property
    def means(self) -> pd.DataFrame:
        """``version, name, measure, mean`` for every version, system and measure."""
        rows = [pd.DataFrame({"version": np.repeat(self.versions, len(self.names)),
                              "name": np.tile(self.names, len(self.versions)), "measure": m,
                              "mean": self.values[m].mean(axis=1).T.ravel()}) for m in self.measures]
        return pd.concat(rows, ignore_index=True)

    def _baseline_block(self, m: str, v: int, b: int) -> tuple[np.ndarray, ...]:
        X = self.values[m][:, :, v]
        S = len(self.names)
        others = np.flatnonzero(np.arange(S) != b)
        plus, minus, pv = (np.full(S, np.nan) for _ in range(3))
        plus[others] = (X[others] > X[b]).sum(axis=1)
        minus[others] = (X[others] < X[b]).sum(axis=1)
        pv[others] = paired_test(X[others], X[b][None, :], test=self.params["test"], axis=1,
                                 n_resamples=self.params["n_resamples"], seed=self.params["seed"])
        return plus, minus, pv

    @cached_property
    def baseline_tests(self) -> pd.DataFrame:
        """Every (version, measure, baseline, system) comparison: ``diff`` (system - baseline),
        ``+``, ``-``, ``p_value`` and, with a correction, ``p_corrected`` and ``reject`` over
        every baseline comparison of that version and measure."""
        bases = [self.names.index(b) for b in self.params["baselines"]]
        if not bases:
            return pd.DataFrame(columns=["version", "measure", "baseline", "name", "diff", "+", "-", "p_value"])
        rows = []
        for v, ver in enumerate(self.versions):
            for m in self.measures:
                mean = self.values[m][:, :, v].mean(axis=1)
                block = []
                for b in bases:
                    plus, minus, pv = self._baseline_block(m, v, b)
                    block.append(pd.DataFrame({"version": ver, "measure": m, "baseline": self.names[b],
                                               "name": self.names, "diff": mean - mean[b], "+": plus, "-": minus,
                                               "p_value": pv}).drop(index=b))
                block = pd.concat(block, ignore_index=True)
                if self.params["correction"] is not None:
                    block["p_corrected"] = correct_pvalues(block["p_value"].to_numpy(), self.params["correction"])
                    block["reject"] = block["p_corrected"] <= self.params["correction_alpha"]
                rows.append(block)
        return pd.concat(rows, ignore_index=True)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """The frame ``pt.Experiment`` gives under each version, one block per version (column
        ``version`` first): ``name``, the measures, and with a baseline ``<m> +``, ``<m> -``,
        ``<m> p-value`` (with a correction ``<m> reject``, ``<m> p-value corrected``).  With
        several baselines these columns end in `` [baseline]``, one set per baseline."""
        bases = self.params["baselines"]
        rnd = self.params["round"]
        tests = self.baseline_tests
        blocks = []
        for v, ver in enumerate(self.versions):
            cols: dict[str, Any] = {"version": ver, "name": self.names}
            for m in self.measures:
                x = self.values[m][:, :, v].mean(axis=1)
                d = rnd if isinstance(rnd, (int, np.integer)) else (rnd or {}).get(m)
                cols[m] = x if d is None else np.array([builtins.round(float(e), int(d)) for e in x])
            for b in bases:
                tag = f" [{b}]" if len(bases) > 1 else ""
                for m in self.measures:
                    t = tests[(tests["version"] == ver) & (tests["measure"] == m) & (tests["baseline"] == b)]
                    t = t.set_index("name").reindex(self.names)
                    cols[f"{m} +{tag}"], cols[f"{m} -{tag}"] = t["+"].to_numpy(), t["-"].to_numpy()
                    cols[f"{m} p-value{tag}"] = t["p_value"].to_numpy()
                    if self.params["correction"] is not None:
                        cols[f"{m} reject{tag}"] = t["reject"].fillna(False).to_numpy(dtype=bool)
                        cols[f"{m} p-value corrected{tag}"] = t["p_corrected"].to_numpy()
            blocks.append(pd.DataFrame(cols))
        return pd.concat(blocks, ignore_index=True)

    @cached_property
    def perquery(self) -> pd.DataFrame:
        """``version, name, qid, measure, value``: every per-topic score (``pt.Experiment(perquery=True)``'s
        columns with ``version`` first)."""
        S, T, V = len(self.names), len(self.topics), len(self.versions)
        parts = [pd.DataFrame({"version": np.repeat(self.versions, S * T),
                               "name": np.tile(np.repeat(self.names, T), V),
                               "qid": np.tile(self.topics, S * V), "measure": m,
                               "value": np.moveaxis(self.values[m], 2, 0).ravel()}) for m in self.measures]
        return pd.concat(parts, ignore_index=True)

    # -- agreement (module version_agreement) --------------------------------------------------

    @cached_property
    def leaderboards(self) -> pd.DataFrame:
        """Leaderboard agreement of every ordered pair of versions, per measure
        (:func:`~.version_agreement.leaderboard_agreement`); rows with ``version_a`` equal to the
        reference compare each version with it."""
        return pd.concat([agree.leaderboard_agreement(self.values[m].mean(axis=1), self.versions, self.names,
                                                      top_k=self.params["top_k"], rbo_p=self.params["rbo_p"])
                          .assign(measure=m) for m in self.measures], ignore_index=True) \
            .pipe(lambda f: f[["measure", *[c for c in f.columns if c != "measure"]]])

    @cached_property
    def rankings(self) -> pd.DataFrame:
        """``measure, version, name, mean, rank`` (rank 1 = best; ties share the best rank)."""
        return agree.rankings(self.means)

    @cached_property
    def pairs(self) -> pd.DataFrame:
        """Every system pair under every version and measure (:func:`~.version_agreement.pair_conclusions`):
        mean difference, p-value, corrected p-value, conclusion, and its status against the reference."""
        return pd.concat([agree.pair_conclusions(self.values[m], self.versions, self.names, self.reference,
                                                 test=self.params["test"], correction=self.params["correction"],
                                                 alpha=self.params["correction_alpha"],
                                                 n_resamples=self.params["n_resamples"], seed=self.params["seed"])
                          .assign(measure=m) for m in self.measures], ignore_index=True) \
            .pipe(lambda f: f[["measure", *[c for c in f.columns if c != "measure"]]])

    @cached_property
    def significance(self) -> pd.DataFrame:
        """Per measure and version: significant pairs and the counts kept / lost / gained /
        reversed against the reference (the pairs are listed in :attr:`pairs`)."""
        return agree.conclusion_counts(self.pairs)

    @cached_property
    def label_agreement(self) -> pd.DataFrame:
        """Label agreement of every pair of versions on the pairs both judged, per topic and overall
        (:func:`~.version_agreement.label_agreement`)."""
        return agree.label_agreement(self.table, self.labels, self.versions)

    @cached_property
    def confusion(self) -> pd.DataFrame:
        """``version_a, version_b, qid, label_a, label_b, count`` on the pairs both judged (``qid``
        ``"all"`` for every topic together)."""
        return agree.confusion(self.table, self.labels, self.versions)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per (measure, version) against the reference: Kendall's tau, tau_AP, RBO,
        largest rank change, and the significance counts."""
        lb = self.leaderboards[self.leaderboards["version_a"] == self.reference] \
            .rename(columns={"version_b": "version"}).drop(columns="version_a")
        return lb.merge(self.significance, on=["measure", "version"], how="right")

    # -- judgment noise (module version_noise) -------------------------------------------------

    def judgment_noise(self, n_resamples: int = 1000, seed: int = 0, draw: Draw = "topic",
                       confidence: float = 0.95, model: Any = None, n_replicates: int = 100) -> pd.DataFrame:
        """Judgment noise inside the significance test: topics and label versions (or replicates of
        a judge ``model``) resampled jointly (:func:`~.version_noise.judgment_noise`), for every
        baseline comparison (every system pair without a baseline), as ``pt.Experiment``-style columns."""
        from .version_noise import judgment_noise
        return judgment_noise(self, n_resamples=n_resamples, seed=seed, draw=draw, confidence=confidence,
                              model=model, n_replicates=n_replicates)

    def noise_floor(self, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
        """The noise-floor table of every system pair (:func:`~.version_noise.noise_floor`)."""
        from .version_noise import noise_floor
        return noise_floor(self, n_resamples=n_resamples, seed=seed, confidence=confidence)
