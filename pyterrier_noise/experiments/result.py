"""The result of a robustness experiment and its analyses (Rashidi, Zobel & Moffat 2023; Webber et al. 2012).

:class:`RobustnessResult` turns per-topic values under the true labels ``(S, T)`` and under R
replicate labels ``(S, T, R)`` (per measure) into tidy frames:

* ``systems``: each system's unperturbed score and its replicate distribution (mean, sd, 2.5 and
  97.5 percentiles), and the same for its rank;
* ``rankings``: per replicate, Kendall's tau (tau-b), tau_AP (Yilmaz et al. 2008) and RBO (Webber
  et al. 2010) between the replicate's system ordering and the unperturbed one (Rashidi, Zobel &
  Moffat 2023, Sec. 5.4, Table 3);
* ``pairs``: per system pair, how often the significance conclusion under the true qrels is kept,
  lost, spuriously gained or reversed under the replicates (paired test over topics, optional
  correction per replicate; Rashidi et al. 2023 Sec. 5.5; Webber et al. 2012 Sec. 4.5, Table 7);
* ``rank_given_observed`` and ``p_given_observed``: Rashidi et al.'s reverse protocol (Sec. 4,
  Figs 7-9 and 12-14): the distribution of the true rank of the system observed at each rank, and
  of the true ("mapped", one-sided) p-value of pairs observed in a p-value band;
* ``baseline`` (with a baseline): per system, the share of replicates in which it is significantly
  better or worse than the baseline;
* ``summary`` (one row per measure), ``labels`` (realised error rates of each replicate) and, on
  request, ``perquery`` (every per-(system, topic, replicate) value).

Every significance test is :mod:`pyterrier_noise.stats`' (``all_pairs``, ``paired_test``).
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._output import atomic_write
from .._progress import progress_bar
from .._validation import InputError, check_choice, check_probability
from .._vocab import CORRECTIONS, RBO_SCORES, TESTS, Correction, Highlight, RboScore, Test
from ._analysis import CONCLUSIONS, Analysis
from ._common import RBO_P, measure_label
from ._frame import check_frame_options, experiment_frame, styled
from .plots import plot_distributions, plot_ranks

__all__ = ["RobustnessResult", "DEFAULT_P_BANDS", "CONCLUSIONS"]

#: edges of the observed p-value bands of ``p_given_observed`` (the last band includes 1)
DEFAULT_P_BANDS: tuple[float, ...] = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0)


def _seed_int(ss: np.random.SeedSequence) -> int:
    """A plain int seed from a seed sequence (accepted by any ``default_rng``-based model)."""
    return int(ss.generate_state(1, np.uint64)[0])


def check_finite(what: str, m: str, arr: np.ndarray, names: Sequence[str], topics: Sequence[str]) -> None:
    """An InputError naming the system and topic of the first non-finite value of ``arr``."""
    bad = ~np.isfinite(arr)
    if bad.any():
        s, t = np.argwhere(bad)[0][:2]
        raise InputError(f"{what}[{m!r}] has a non-finite value for system {names[s]!r}, "
                         f"topic {topics[t]!r}; every value must be a finite number")


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=@+-]+", "_", text).strip("_") or "measure"



# ----------------------------------------------------------------------------------------------
# the result


@dataclass
class RobustnessResult:
    """Everything a robustness experiment measured, as tidy frames and raw arrays.

    Frames (pandas): ``systems``, ``rankings``, ``summary``, ``pairs``, ``rank_given_observed``,
    ``p_given_observed``, ``baseline`` (None without a baseline), ``labels`` (None when built from
    arrays) and ``perquery`` (None unless requested).  Arrays: ``true[measure]`` ``(S, T)``
    per-topic values under the unperturbed qrels, ``means[measure]`` ``(S, R)`` each system's mean
    in each replicate, ``values[measure]`` ``(S, T, R)`` per-topic replicate values (kept by
    :func:`robustness_experiment` only with ``perquery=True``: they grow with the replicates);
    ``p_observed[measure]`` ``(pairs, R)`` raw replicate p-values of the pairs ``pair_index``
    (``numpy.triu_indices(S, 1)`` order), unless ``keep_pvalues=False``.
    """

    names: list[str]
    topics: list[str]
    measures: list[str]
    true: dict[str, np.ndarray]
    values: dict[str, np.ndarray]
    params: dict[str, Any]
    systems: pd.DataFrame = None
    rankings: pd.DataFrame = None
    summary: pd.DataFrame = None
    pairs: pd.DataFrame = None
    rank_given_observed: pd.DataFrame = None
    p_given_observed: pd.DataFrame = None
    baseline: pd.DataFrame | None = None
    labels: pd.DataFrame | None = None
    perquery: pd.DataFrame | None = None
    pair_index: tuple[np.ndarray, np.ndarray] = None
    p_observed: dict[str, np.ndarray] = field(default_factory=dict)
    p_true_mapped: dict[str, np.ndarray] = field(default_factory=dict)
    observed_direction: dict[str, np.ndarray] = field(default_factory=dict)
    true_rank_at: dict[str, np.ndarray] = field(default_factory=dict)
    observed_ranks: dict[str, np.ndarray] = field(default_factory=dict)
    means: dict[str, np.ndarray] = field(default_factory=dict)
    _progress: bool = field(default=False, repr=False, compare=False)

    # -- construction from arrays ---------------------------------------------------------------

    @classmethod
    def from_arrays(cls, true: Mapping[str, np.ndarray], values: Mapping[str, np.ndarray],
                    names: Sequence[str], topics: Sequence[str], baseline: int | str | None = None,
                    test: Test = "t", correction: Correction | None = None, correction_alpha: float | None = None,
                    seed: int | None = 0, rbo_p: float = RBO_P, rbo_variant: RboScore = "ext",
                    p_bands: Sequence[float] = DEFAULT_P_BANDS, n_resamples: int = 10_000,
                    labels: pd.DataFrame | None = None, perquery: bool = False,
                    round: int | Mapping[str, int] | None = None, highlight: Highlight | None = None,
                    progress: bool | None = None, keep_pvalues: bool = True) -> "RobustnessResult":
        """Analyse per-topic values under the true labels (``(S, T)`` per measure) and under R
        replicates (``(S, T, R)``): the tables of Rashidi, Zobel & Moffat (2023, Sec. 4-5) and
        Webber et al. (2012, Sec. 3.3 and 4.5).  :func:`robustness_experiment` calls this; it is
        public for replicate values computed elsewhere.  ``rbo_p`` defaults to 0.9 (:data:`RBO_P`:
        Webber et al. 2010 put ~86% of RBO's weight on the top 10).  ``progress`` shows a bar over
        the measures; ``correction_alpha`` is the significance level (default 0.05); ``round``
        and ``highlight`` shape :attr:`frame` as ``pt.Experiment``'s; ``keep_pvalues=False`` leaves out the
        ``(pairs, R)`` arrays ``p_observed``, ``p_true_mapped`` and ``observed_direction``.
        """
        progress = bool(progress)
        alpha = 0.05 if correction_alpha is None else correction_alpha
        names = [str(n) for n in names]
        topics = [str(t) for t in topics]
        measures = list(true)
        if not measures:
            raise InputError("no measures given")
        if list(values) != measures:
            raise InputError(f"values has measures {list(values)} but true has {measures}")
        S, T = len(names), len(topics)
        if S < 2:
            raise InputError(f"a robustness experiment needs at least 2 systems, got {S}")
        if T < 2:
            raise InputError(f"paired tests over topics need at least 2 topics, got {T}")
        if len(set(names)) != S:
            dup = pd.Index(names)[pd.Index(names).duplicated()][0]
            raise InputError(f"system names must be unique; {dup!r} appears more than once (pass names=)")
        tv, vv = {}, {}
        R = None
        for m in measures:
            t_arr = np.asarray(true[m], dtype=np.float64)
            v_arr = np.asarray(values[m], dtype=np.float64)
            if t_arr.shape != (S, T):
                raise InputError(f"true[{m!r}] must have shape (systems={S}, topics={T}), got {t_arr.shape}")
            if v_arr.ndim != 3 or v_arr.shape[:2] != (S, T):
                raise InputError(f"values[{m!r}] must have shape (systems={S}, topics={T}, replicates), "
                                 f"got {v_arr.shape}")
            if R is None:
                R = v_arr.shape[2]
            elif v_arr.shape[2] != R:
                raise InputError(f"values[{m!r}] has {v_arr.shape[2]} replicates, the other measures {R}")
            check_finite("true", m, t_arr, names, topics)
            check_finite("values", m, v_arr, names, topics)
            tv[m], vv[m] = t_arr, v_arr
        if R < 1:
            raise InputError("values hold no replicates")
        res, analysis = cls.start_analysis(names, topics, measures, R, baseline=baseline, test=test, correction=correction,
                                   correction_alpha=alpha, seed=seed, rbo_p=rbo_p, rbo_variant=rbo_variant,
                                   p_bands=p_bands, n_resamples=n_resamples, round=round, highlight=highlight,
                                   keep_values=False, keep_pvalues=keep_pvalues)
        res.values = vv
        # chunks of replicates bound the memory of the pair tests; the tables do not depend on them
        step = max(1, (1 << 23) // max(S * (S - 1) // 2, S * T))
        for c0 in range(0, R, step):
            for m in measures:
                analysis.add(m, np.concatenate([tv[m][:, :, None], vv[m][:, :, c0:c0 + step]], axis=2), c0)
        res.finish_analysis(analysis, labels, perquery, progress)
        return res

    @classmethod
    def start_analysis(cls, names: list[str], topics: list[str], measures: list[str], R: int, *,
               baseline: int | str | None, test: str, correction: str | None, correction_alpha: float,
               seed: int | None, rbo_p: float, rbo_variant: str, p_bands: Sequence[float], n_resamples: int,
               round: Any, highlight: str | None, keep_values: bool, keep_pvalues: bool
               ) -> tuple["RobustnessResult", Analysis]:
        """An empty result and the streamed analysis that fills it (options checked here)."""
        check_choice("test", test, TESTS)
        check_choice("correction", correction, CORRECTIONS, allow_none=True)
        alpha = check_probability("correction_alpha", correction_alpha)
        check_frame_options(round, highlight, measures)
        rbo_p = check_probability("rbo_p", rbo_p)
        check_choice("rbo_variant", rbo_variant, RBO_SCORES)
        bands = np.asarray(p_bands, dtype=np.float64)
        if bands.ndim != 1 or len(bands) < 2 or not (np.diff(bands) > 0).all() or bands[0] < 0 or bands[-1] > 1:
            raise InputError(f"p_bands must be at least two increasing edges within [0, 1], got {list(p_bands)}")
        b_idx = baseline_index(baseline, names)
        S = len(names)
        children = np.random.SeedSequence(seed).spawn(3)
        priority = np.random.default_rng(children[1]).permutation(S)
        design_seed = _seed_int(children[2])
        params = dict(n_replicates=R, seed=seed, test=test, correction=correction, alpha=alpha,
                      rbo_p=rbo_p, rbo_variant=rbo_variant, p_bands=tuple(float(b) for b in bands),
                      n_resamples=n_resamples, baseline=None if b_idx is None else names[b_idx],
                      tie_priority=priority, round=round, highlight=highlight)
        res = cls(names, topics, measures, {}, {}, params)
        return res, Analysis(res, R, priority, design_seed, b_idx, keep_values, keep_pvalues)

    def finish_analysis(self, analysis: Analysis, labels: pd.DataFrame | None, perquery: bool, progress: bool) -> None:
        self.labels = labels
        self._progress = progress
        bar = None
        if progress:
            def bar(total: int) -> Any:
                return progress_bar(total=total, desc="robustness tables", unit="measure", enabled=True)
        analysis.finish(bar)
        if perquery:
            self.perquery = self.perquery_frame()

    # -- access -----------------------------------------------------------------------------------

    @property
    def frame(self) -> pd.DataFrame:
        """The ``pt.Experiment``-shaped table: one row per system, ``name``, one column per measure
        (its mean under the unperturbed qrels, in the order asked), with a baseline the ``+``,
        ``-``, ``p-value`` (and ``reject``, ``p-value corrected``) columns of ``pt.Experiment``,
        then per measure ``<m> sd`` (sd of the mean over replicates), ``<m> rank`` (rank under the
        unperturbed qrels), ``<m> rank held`` (share of replicates keeping that rank) and, with a
        baseline, ``<m> kept`` (share of replicates keeping the conclusion against the baseline).
        A new frame on every access."""
        return experiment_frame(self)

    def style(self, highlight: Highlight | None = None) -> Any:
        """:attr:`frame` as a pandas Styler, the best value of each measure marked as
        ``pt.Experiment(highlight=...)`` marks it (``"bold"`` or ``"color"``; default: the
        experiment's ``highlight``)."""
        return styled(self, highlight if highlight is not None else self.params.get("highlight"))

    def _repr_html_(self) -> str:
        if self.params.get("highlight") is not None:
            return self.style().to_html()
        return self.frame._repr_html_()

    def frames(self) -> dict[str, pd.DataFrame]:
        """The summary frames by name (those that exist)."""
        out = {"summary": self.summary, "systems": self.systems, "rankings": self.rankings,
               "pairs": self.pairs, "rank_given_observed": self.rank_given_observed,
               "p_given_observed": self.p_given_observed, "baseline": self.baseline, "labels": self.labels}
        return {k: v for k, v in out.items() if v is not None}

    def measure(self, measure: Any = None) -> str:
        """The label of ``measure`` (a measure object or any spelling of one of :attr:`measures`;
        ``None``: the first) in this result's frames and dicts."""
        if measure is None:
            return self.measures[0]
        label = measure if measure in self.measures else measure_label(measure)
        if label not in self.measures:
            raise InputError(f"measure {measure!r} is not in this experiment; it has {self.measures}")
        return label

    def perquery_frame(self, measures: Sequence[Any] | None = None) -> pd.DataFrame:
        """Every per-(system, topic, replicate) value as a frame ``name, qid, measure, replicate,
        value, true`` (``true``: the value under the unperturbed qrels)."""
        labels = self.measures if measures is None else [self.measure(m) for m in measures]
        if any(m not in self.values for m in labels):
            raise InputError("the per-topic replicate values are not kept: pass perquery=True to "
                             "robustness_experiment")
        S, T, R = len(self.names), len(self.topics), self.params["n_replicates"]
        frames = [pd.DataFrame({
            "name": np.repeat(np.asarray(self.names, dtype=object), T * R),
            "qid": np.tile(np.repeat(np.asarray(self.topics, dtype=object), R), S),
            "measure": m, "replicate": np.tile(np.arange(R), S * T),
            "value": self.values[m].ravel(), "true": np.repeat(self.true[m].ravel(), R)}) for m in labels]
        return pd.concat(frames, ignore_index=True)

    def true_p_given_observed(self, measure: Any = None, low: float = 0.005, high: float = 0.015) -> np.ndarray:
        """The multiset of true mapped p-values of every (pair, replicate) whose observed (raw,
        two-sided) p lies in ``[low, high]`` -- Rashidi et al. (2023) Fig. 12's window is the
        default; ``low=0, high=0.01`` is Fig. 14's filter.  The mapped p is the one-sided p, on
        the true qrels, of "the pair's observed winner is better": near 0 the
        truth confirms the observation, above 0.5 it reverses it."""
        m = self.measure(measure)
        if m not in self.p_observed:
            raise InputError("this result was built with keep_pvalues=False: the per-replicate p-values "
                             "are not kept; rerun with keep_pvalues=True")
        if not 0.0 <= low <= high <= 1.0:
            raise InputError(f"need 0 <= low <= high <= 1, got low={low!r}, high={high!r}")
        p_obs, mapped = self.p_observed[m], self.p_true_mapped[m]
        with np.errstate(invalid="ignore"):
            sel = (p_obs >= low) & (p_obs <= high) & ~np.isnan(mapped)
        return mapped[sel]

    # -- output -------------------------------------------------------------------------------

    def save(self, directory: str | Path, plots: bool = True, progress: bool | None = None,
             only: Sequence[str] | None = None) -> list[Path]:
        """Write every frame as ``<name>.tsv`` (and, with ``plots``, the two plots per measure as
        PNG) to ``directory``, each under a temporary name renamed into place; returns the paths
        written.  Same result -> byte-identical TSVs.  ``progress`` (default: the experiment's)
        shows a bar over the files.  ``only``: the names (of :meth:`file_names`) to write, e.g. to
        share the files among processes; default every one."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        names = self.file_names(plots)
        if only is not None:
            unknown = sorted(set(only) - set(names))
            if unknown:
                raise InputError(f"save(only=...) names no file of this result: {unknown} (it writes {names})")
            names = [n for n in names if n in set(only)]
        frames = self.frames()
        plotters = {"distributions": plot_distributions, "ranks": plot_ranks}
        by_name = {f"{kind}-{_safe_name(m)}.png": (fn, m) for m in self.measures for kind, fn in plotters.items()}
        show = self._progress if progress is None else bool(progress)
        written = []
        bar = progress_bar(total=len(names), desc="writing tables", unit="file", enabled=show)
        for name in names:
            if name in by_name:
                bar.set_description("plotting")
                fn, m = by_name[name]
                buf = io.BytesIO()
                # no "Software" metadata: the same result gives the same PNG bytes
                fn(self, m).savefig(buf, format="png", dpi=100, metadata={"Software": None})
                data = buf.getvalue()
            else:
                text = frames[name[:-len(".tsv")]].to_csv(sep="\t", index=False, lineterminator="\n")
                data = text.encode("utf-8")
            written.append(atomic_write(out / name, data))
            bar.update(1)
        bar.close()
        return written

    def file_names(self, plots: bool = True) -> list[str]:
        """The names of the files :meth:`save` writes, in its order: ``<frame>.tsv`` for every
        frame, then (with ``plots``) ``distributions-<measure>.png`` and ``ranks-<measure>.png``."""
        names = [f"{name}.tsv" for name in self.frames()]
        if plots:
            names += [f"{kind}-{_safe_name(m)}.png" for m in self.measures for kind in ("distributions", "ranks")]
        return names

    def plot_distributions(self, measure: Any = None, ax: Any = None, kind: str = "box",
                           top: int | None = None, save: str | Path | None = None) -> Any:
        """:func:`~pyterrier_noise.experiments.plot_distributions` of this result (returns the Figure)."""
        return plot_distributions(self, measure, ax=ax, kind=kind, top=top, save=save)

    def plot_ranks(self, measure: Any = None, ax: Any = None, top: int | None = None,
                   save: str | Path | None = None) -> Any:
        """:func:`~pyterrier_noise.experiments.plot_ranks` of this result (returns the Figure)."""
        return plot_ranks(self, measure, ax=ax, top=top, save=save)

    def __repr__(self) -> str:
        head = (f"RobustnessResult({len(self.names)} systems, {len(self.topics)} topics, "
                f"{self.params['n_replicates']} replicates, measures {self.measures})")
        if self.systems is None:
            return head
        return head + "\n" + self.frame.to_string(index=False)



def baseline_index(baseline: int | str | None, names: list[str]) -> int | None:
    if baseline is None:
        return None
    if isinstance(baseline, (int, np.integer)) and not isinstance(baseline, bool):
        if not 0 <= baseline < len(names):
            raise InputError(f"baseline index {baseline} is out of range: there are {len(names)} systems "
                             f"(0..{len(names) - 1})")
        return int(baseline)
    if isinstance(baseline, str):
        if baseline not in names:
            raise InputError(f"baseline {baseline!r} is not one of the systems; the systems are "
                             f"{names[:10]}{' ...' if len(names) > 10 else ''}")
        return names.index(baseline)
    raise InputError(f"baseline must be a system index or name, got {baseline!r}")


