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
from .._validation import InputError, check_probability
from ..stats import (CORRECTIONS, TESTS, all_pairs, correct_pvalues, kendall_tau, paired_test, rbo,
                     significant, tau_ap)
from ._common import RBO_P, measure_label, renamed
from ._frame import check_frame_options, experiment_frame, styled
from .plots import plot_distributions, plot_ranks

__all__ = ["RobustnessResult", "DEFAULT_P_BANDS", "CONCLUSIONS"]

#: edges of the observed p-value bands of ``p_given_observed`` (the last band includes 1)
DEFAULT_P_BANDS: tuple[float, ...] = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0)
#: what happens to a pair's significance conclusion in a replicate (a partition of the replicates)
CONCLUSIONS: tuple[str, ...] = ("kept", "lost", "gained", "reversed")


def _seed_int(ss: np.random.SeedSequence) -> int:
    """A plain int seed from a seed sequence (accepted by any ``default_rng``-based model)."""
    return int(ss.generate_state(1, np.uint64)[0])


def _strict_ranks(means: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """1-based ranks by mean score (higher first) along the last axis; exact ties are broken by a
    random priority per system drawn once from the seed (Rashidi et al. 2023 break ties at random;
    one shared draw means a tie that an unperturbed and a perturbed ordering share is not counted
    as a disagreement)."""
    prio = np.broadcast_to(priority, means.shape)
    order = np.lexsort((prio, -means), axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1, means.shape[-1] + 1), order.shape), axis=-1)
    return ranks


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=@+-]+", "_", text).strip("_") or "measure"



# ----------------------------------------------------------------------------------------------
# the result


@dataclass
class RobustnessResult:
    """Everything a robustness experiment measured, as tidy frames and raw arrays.

    Frames (pandas): ``systems``, ``rankings``, ``summary``, ``pairs``, ``rank_given_observed``,
    ``p_given_observed``, ``baseline`` (None without a baseline), ``labels`` (None when built from
    arrays) and ``perquery`` (None unless requested).  Arrays: ``true[measure]`` ``(S, T)`` and
    ``values[measure]`` ``(S, T, R)`` per-topic values; ``p_observed[measure]`` ``(pairs, R)`` raw
    replicate p-values of the pairs ``pair_index`` (``numpy.triu_indices(S, 1)`` order).
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

    # -- construction from arrays ---------------------------------------------------------------

    @classmethod
    def from_arrays(cls, true: Mapping[str, np.ndarray], values: Mapping[str, np.ndarray],
                    names: Sequence[str], topics: Sequence[str], baseline: int | str | None = None,
                    test: str = "t", correction: str | None = None, correction_alpha: float | None = None,
                    seed: int | None = 0, rbo_p: float = RBO_P, rbo_variant: str = "ext",
                    p_bands: Sequence[float] = DEFAULT_P_BANDS, n_resamples: int = 10_000,
                    labels: pd.DataFrame | None = None, perquery: bool = False,
                    round: int | Mapping[str, int] | None = None, highlight: str | None = None,
                    progress: bool | None = None, alpha: float | None = None,
                    verbose: bool | None = None) -> "RobustnessResult":
        """Analyse per-topic values under the true labels (``(S, T)`` per measure) and under R
        replicates (``(S, T, R)``): the tables of Rashidi, Zobel & Moffat (2023, Sec. 4-5) and
        Webber et al. (2012, Sec. 3.3 and 4.5).  :func:`robustness_experiment` calls this; it is
        public for replicate values computed elsewhere.  ``rbo_p`` defaults to 0.9 (:data:`RBO_P`:
        Webber et al. 2010 put ~86% of RBO's weight on the top 10).  ``progress`` shows a bar over
        the measures (``verbose=`` is its deprecated old name); ``correction_alpha`` is the
        significance level (``alpha=`` is its deprecated old name); ``round`` and ``highlight``
        shape :attr:`frame` as ``pt.Experiment``'s.
        """
        progress = bool(renamed("progress", progress, "verbose", verbose, default=False))
        alpha = renamed("correction_alpha", correction_alpha, "alpha", alpha, default=0.05)
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
            for what, arr in (("true", t_arr), ("values", v_arr)):
                bad = ~np.isfinite(arr)
                if bad.any():
                    s, t = np.argwhere(bad)[0][:2]
                    raise InputError(f"{what}[{m!r}] has a non-finite value for system {names[s]!r}, "
                                     f"topic {topics[t]!r}; every value must be a finite number")
            tv[m], vv[m] = t_arr, v_arr
        if R < 1:
            raise InputError("values hold no replicates")
        if test not in TESTS:
            raise InputError(f"test must be one of {', '.join(map(repr, TESTS))}, got {test!r}")
        if correction is not None and correction not in CORRECTIONS:
            raise InputError(f"correction must be None or one of {', '.join(map(repr, CORRECTIONS))}, "
                             f"got {correction!r}")
        alpha = check_probability("correction_alpha", alpha)
        check_frame_options(round, highlight, measures)
        rbo_p = check_probability("rbo_p", rbo_p)
        if rbo_variant not in ("ext", "min", "trunc"):
            raise InputError(f"rbo_variant must be 'ext', 'min' or 'trunc', got {rbo_variant!r}")
        bands = np.asarray(p_bands, dtype=np.float64)
        if bands.ndim != 1 or len(bands) < 2 or not (np.diff(bands) > 0).all() or bands[0] < 0 or bands[-1] > 1:
            raise InputError(f"p_bands must be at least two increasing edges within [0, 1], got {list(p_bands)}")
        b_idx = _baseline_index(baseline, names)

        children = np.random.SeedSequence(seed).spawn(3)
        priority = np.random.default_rng(children[1]).permutation(S)
        design_seed = _seed_int(children[2])
        params = dict(n_replicates=R, seed=seed, test=test, correction=correction, alpha=alpha,
                      rbo_p=rbo_p, rbo_variant=rbo_variant, p_bands=tuple(float(b) for b in bands),
                      n_resamples=n_resamples, baseline=None if b_idx is None else names[b_idx],
                      tie_priority=priority, round=round, highlight=highlight)
        res = cls(names, topics, measures, tv, vv, params, labels=labels)
        res._analyse(priority, design_seed, b_idx, progress)
        if perquery:
            res.perquery = res.perquery_frame()
        return res

    # -- analysis ---------------------------------------------------------------------------------

    def _analyse(self, priority: np.ndarray, design_seed: int, b_idx: int | None, progress: bool) -> None:
        p = self.params
        S, R = len(self.names), self.params["n_replicates"]
        names = np.asarray(self.names, dtype=object)
        i, j = np.triu_indices(S, 1)
        self.pair_index = (i, j)
        sys_rows, rank_rows, rgo_rows, pair_rows, pgo_rows, base_rows, summ_rows = [], [], [], [], [], [], []
        for m in progress_bar(self.measures, desc="robustness analysis", unit="measure", enabled=progress):
            # the truth is column 0 of one array with the replicates, so that a replicate equal
            # to the truth gets bit-identical means and p-values
            X0 = self.true[m]
            XA = np.concatenate([X0[:, :, None], self.values[m]], axis=2)   # (S, T, 1 + R)
            MA = XA.mean(axis=1)
            M0, M = MA[:, 0], MA[:, 1:]                                      # (S,), (S, R)
            # --- scores and ranks of each system
            r0 = _strict_ranks(M0, priority)                           # (S,)
            rk = _strict_ranks(M.T, priority)                          # (R, S)
            self.observed_ranks[m] = rk
            q_lo, q_hi = np.quantile(M, [0.025, 0.975], axis=1)
            rq_lo, rq_med, rq_hi = np.quantile(rk, [0.025, 0.5, 0.975], axis=0)
            sys_rows.append(pd.DataFrame({
                "name": names, "measure": m, "true": M0, "mean": M.mean(axis=1),
                "sd": M.std(axis=1, ddof=1) if R > 1 else np.zeros(S), "q2.5": q_lo, "q97.5": q_hi,
                "true_rank": r0, "rank_median": rq_med, "rank_q2.5": rq_lo, "rank_q97.5": rq_hi}))
            # --- agreement of each replicate's ordering with the unperturbed one
            strict0, strict = (S - r0).astype(float), (S - rk).astype(float)
            tau = kendall_tau(M.T, np.broadcast_to(M0, (R, S)))
            tap = tau_ap(strict, np.broadcast_to(strict0, (R, S)))
            rb = rbo(strict, np.broadcast_to(strict0, (R, S)), p=p["rbo_p"], variant=p["rbo_variant"])
            rank_rows.append(pd.DataFrame({"replicate": np.arange(R), "measure": m, "kendall_tau": tau,
                                           "tau_ap": tap, "rbo": rb}))
            # --- true rank given observed rank (Rashidi et al. 2023, Figs 7-9)
            at = r0[np.argsort(rk, axis=1)]                               # (R, S): true rank at each observed rank
            self.true_rank_at[m] = at
            qs = np.quantile(at, [0.025, 0.25, 0.5, 0.75, 0.975], axis=0)
            rgo_rows.append(pd.DataFrame({
                "measure": m, "observed_rank": np.arange(1, S + 1), "count": R,
                "mean": at.mean(axis=0), "sd": at.std(axis=0, ddof=1) if R > 1 else np.zeros(S),
                "q2.5": qs[0], "q25": qs[1], "median": qs[2], "q75": qs[3], "q97.5": qs[4],
                "same": (at == np.arange(1, S + 1)).mean(axis=0),
                "within_1": (np.abs(at - np.arange(1, S + 1)) <= 1).mean(axis=0)}))
            # --- all pairs: true and replicate tests
            kw = dict(test=p["test"], n_resamples=p["n_resamples"], seed=design_seed)
            p_all = all_pairs(XA, **kw).pvalue                                # (P, 1 + R)
            p0_gt = all_pairs(X0, alternative="greater", **kw).pvalue
            p0_lt = all_pairs(X0, alternative="less", **kw).pvalue
            corr = p["correction"]
            if corr is not None:
                p_all_c = correct_pvalues(p_all, corr, axis=0)
            else:
                p_all_c = p_all
            p0, pr = p_all[:, 0], p_all[:, 1:]
            p0c, prc = p_all_c[:, 0], p_all_c[:, 1:]
            d0 = np.sign(M0[i] - M0[j])
            dr = np.sign(M[i] - M[j])
            sig0 = np.asarray(significant(p0c, p["alpha"])) & (d0 != 0)
            sigr = np.asarray(significant(prc, p["alpha"])) & (dr != 0)
            code = _conclusion_codes(sig0, d0, sigr, dr)
            shares = _shares(code, len(CONCLUSIONS))
            self.p_observed[m] = pr
            self.observed_direction[m] = dr
            mapped = np.where(dr > 0, p0_gt[:, None], np.where(dr < 0, p0_lt[:, None], np.nan))
            self.p_true_mapped[m] = mapped
            frame = pd.DataFrame({
                "measure": m, "sys_a": names[i], "sys_b": names[j], "mean_a": M0[i], "mean_b": M0[j],
                "p_value": p0, "p_corrected": p0c, "significant": sig0,
                "direction": d0.astype(int), "significant_share": sigr.mean(axis=1)})
            for k, c in enumerate(CONCLUSIONS):
                frame[c] = shares[:, k]
            frame["swapped"] = (dr * d0[:, None] < 0).mean(axis=1)
            pair_rows.append(frame)
            pgo_rows.append(_band_table(m, pr, mapped, np.asarray(p["p_bands"]), p["alpha"]))
            # --- per-measure headline numbers
            n_sig_true = int(sig0.sum())
            tot = np.bincount(code.ravel(), minlength=4).astype(float)
            st = np.broadcast_to(sig0[:, None], sigr.shape)
            both = float((st & sigr).sum())
            summ_rows.append({
                "measure": m, "n_systems": S, "n_topics": len(self.topics), "n_replicates": R,
                "kendall_tau": float(np.nanmean(tau)), "kendall_tau_sd": _sd(tau),
                "tau_ap": float(np.mean(tap)), "tau_ap_sd": _sd(tap),
                "rbo": float(np.mean(rb)), "rbo_sd": _sd(rb),
                "n_pairs": len(i), "significant_pairs": n_sig_true,
                "significant_pairs_replicates": float(sigr.sum(axis=0).mean()),
                "kept_significant": _ratio(((code == 0) & st).sum(), st.sum()),
                "lost": _ratio(tot[1], st.sum()), "reversed": _ratio(tot[3], st.sum()),
                "swapped": _ratio((st & (dr * d0[:, None] < 0)).sum(), st.sum()),
                "gained": _ratio(tot[2], (~st).sum()),
                "precision": _ratio(both, sigr.sum()), "recall": _ratio(both, st.sum()),
                "accuracy": float((st == sigr).mean()),
            })
            # --- against the baseline (pt.Experiment: test(system, baseline), corrected over systems)
            if b_idx is not None:
                base_rows.append(self._baseline_table(m, XA, MA, b_idx, kw, corr))
        self.systems = pd.concat(sys_rows, ignore_index=True)
        self.rankings = pd.concat(rank_rows, ignore_index=True)
        self.rank_given_observed = pd.concat(rgo_rows, ignore_index=True)
        self.pairs = pd.concat(pair_rows, ignore_index=True)
        self.p_given_observed = pd.concat(pgo_rows, ignore_index=True)
        self.summary = pd.DataFrame(summ_rows)
        self.baseline = pd.concat(base_rows, ignore_index=True) if base_rows else None

    def _baseline_table(self, m: str, XA: np.ndarray, MA: np.ndarray, b: int, kw: dict,
                        corr: str | None) -> pd.DataFrame:
        """Each system against the baseline, as pt.Experiment tests it: ``test(system, baseline)``
        over topics, corrected over the systems (here within each replicate)."""
        S = len(self.names)
        others = np.flatnonzero(np.arange(S) != b)
        alpha = self.params["alpha"]
        p_raw = paired_test(XA[others], XA[b][None], axis=1, **kw)              # (S-1, 1 + R)
        p_all = p_raw if corr is None else correct_pvalues(p_raw, corr, axis=0)
        p0, pr = p_all[:, 0], p_all[:, 1:]
        D = np.sign(MA[others] - MA[b])                                           # (S-1, 1 + R)
        d0, dr = D[:, 0], D[:, 1:]
        sig0 = np.asarray(significant(p0, alpha)) & (d0 != 0)
        sigr = np.asarray(significant(pr, alpha)) & (dr != 0)
        code = _conclusion_codes(sig0, d0, sigr, dr)
        shares = _shares(code, len(CONCLUSIONS))
        frame = pd.DataFrame({
            "measure": m, "name": np.asarray(self.names, dtype=object)[others],
            "baseline": self.names[b], "true": MA[others, 0], "baseline_true": MA[b, 0],
            "p_value": p_raw[:, 0], "p_corrected": p0, "significant": sig0,
            "conclusion": np.where(sig0, np.where(d0 > 0, "better", "worse"), "n.s."),
            "better_share": (sigr & (dr > 0)).mean(axis=1), "worse_share": (sigr & (dr < 0)).mean(axis=1),
            "n.s._share": (~sigr).mean(axis=1)})
        for k, c in enumerate(CONCLUSIONS):
            frame[c] = shares[:, k]
        return frame

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

    def style(self, highlight: str | None = None) -> Any:
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

    def _measure(self, measure: Any) -> str:
        if measure is None:
            return self.measures[0]
        label = measure if measure in self.measures else measure_label(measure)
        if label not in self.measures:
            raise InputError(f"measure {measure!r} is not in this experiment; it has {self.measures}")
        return label

    def perquery_frame(self, measures: Sequence[Any] | None = None) -> pd.DataFrame:
        """Every per-(system, topic, replicate) value as a frame ``name, qid, measure, replicate,
        value, true`` (``true``: the value under the unperturbed qrels)."""
        labels = self.measures if measures is None else [self._measure(m) for m in measures]
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
        m = self._measure(measure)
        if not 0.0 <= low <= high <= 1.0:
            raise InputError(f"need 0 <= low <= high <= 1, got low={low!r}, high={high!r}")
        p_obs, mapped = self.p_observed[m], self.p_true_mapped[m]
        with np.errstate(invalid="ignore"):
            sel = (p_obs >= low) & (p_obs <= high) & ~np.isnan(mapped)
        return mapped[sel]

    # -- output -------------------------------------------------------------------------------

    def save(self, directory: str | Path, plots: bool = True) -> list[Path]:
        """Write every frame as ``<name>.tsv`` (and, with ``plots``, the two plots per measure as
        PNG) to ``directory``, each under a temporary name renamed into place; returns the paths
        written.  Same result -> byte-identical TSVs."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, frame in self.frames().items():
            text = frame.to_csv(sep="\t", index=False, lineterminator="\n")
            written.append(atomic_write(out / f"{name}.tsv", text.encode("utf-8")))
        if plots:
            for m in self.measures:
                for kind, fn in (("distributions", plot_distributions), ("ranks", plot_ranks)):
                    buf = io.BytesIO()
                    # no "Software" metadata: the same result gives the same PNG bytes
                    fn(self, m).savefig(buf, format="png", dpi=100, metadata={"Software": None})
                    written.append(atomic_write(out / f"{kind}-{_safe_name(m)}.png", buf.getvalue()))
        return written

    def plot_distributions(self, measure: Any = None, ax: Any = None, kind: str = "box",
                           save: str | Path | None = None) -> Any:
        """:func:`~pyterrier_noise.experiments.plot_distributions` of this result (returns the Figure)."""
        return plot_distributions(self, measure, ax=ax, kind=kind, save=save)

    def plot_ranks(self, measure: Any = None, ax: Any = None, save: str | Path | None = None) -> Any:
        """:func:`~pyterrier_noise.experiments.plot_ranks` of this result (returns the Figure)."""
        return plot_ranks(self, measure, ax=ax, save=save)

    def __repr__(self) -> str:
        head = (f"RobustnessResult({len(self.names)} systems, {len(self.topics)} topics, "
                f"{self.params['n_replicates']} replicates, measures {self.measures})")
        if self.systems is None:
            return head
        return head + "\n" + self.frame.to_string(index=False)



def _sd(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nanstd(x, ddof=1)) if np.sum(~np.isnan(x)) > 1 else 0.0


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else float("nan")



def _conclusion_codes(sig0: np.ndarray, d0: np.ndarray, sigr: np.ndarray, dr: np.ndarray) -> np.ndarray:
    """0 kept, 1 lost, 2 gained, 3 reversed for each (pair, replicate): a partition.

    Significant under the truth: kept (significant, same winner), reversed (significant, other
    winner) or lost (not significant).  Not significant under the truth: kept (still not) or
    gained (significant either way: a spurious conclusion)."""
    s0, dd = sig0[:, None], d0[:, None]
    return np.where(s0, np.where(sigr, np.where(dr == dd, 0, 3), 1), np.where(sigr, 2, 0)).astype(np.int8)


def _shares(code: np.ndarray, k: int) -> np.ndarray:
    """Share of the replicates (axis 1) in each code, per row -> (rows, k)."""
    rows, R = code.shape
    flat = np.arange(rows)[:, None] * k + code
    return np.bincount(flat.ravel(), minlength=rows * k).reshape(rows, k) / R


def _band_table(m: str, p_obs: np.ndarray, mapped: np.ndarray, edges: np.ndarray, alpha: float) -> pd.DataFrame:
    """True mapped p given the observed p band (Rashidi et al. 2023, Sec. 5.5, Figs 12-14; the outcome
    classes confirmed, unsubstantiated, reversed and significantly reversed)."""
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(mapped) & ~np.isnan(p_obs) & (p_obs >= edges[0]) & (p_obs <= edges[-1])
    po, mp = p_obs[ok], mapped[ok]
    band = np.clip(np.searchsorted(edges, po, side="right") - 1, 0, len(edges) - 2)
    frame = pd.DataFrame({"band": band, "mapped": mp})
    g = frame.groupby("band")["mapped"]
    nb = len(edges) - 1
    idx = pd.RangeIndex(nb)
    count = g.size().reindex(idx, fill_value=0)
    qs = g.quantile([0.025, 0.25, 0.5, 0.75, 0.975]).unstack().reindex(idx) if len(frame) else \
        pd.DataFrame(np.nan, index=idx, columns=[0.025, 0.25, 0.5, 0.75, 0.975])

    def share(mask: np.ndarray) -> np.ndarray:
        num = np.bincount(band[mask], minlength=nb).astype(float)
        c = count.to_numpy().astype(float)
        return np.divide(num, c, out=np.full(nb, np.nan), where=c > 0)

    return pd.DataFrame({
        "measure": m, "p_low": edges[:-1], "p_high": edges[1:], "count": count.to_numpy(),
        "mean": g.mean().reindex(idx).to_numpy(), "sd": g.std(ddof=1).reindex(idx).to_numpy(),
        "q2.5": qs[0.025].to_numpy(), "q25": qs[0.25].to_numpy(), "median": qs[0.5].to_numpy(),
        "q75": qs[0.75].to_numpy(), "q97.5": qs[0.975].to_numpy(),
        "same_direction": share(mp < 0.5), "confirmed": share(mp < alpha),
        "unsubstantiated": share((mp >= alpha) & (mp <= 0.5)),
        "reversed": share((mp > 0.5) & (mp <= 1 - alpha)), "significantly_reversed": share(mp > 1 - alpha)})


def _baseline_index(baseline: int | str | None, names: list[str]) -> int | None:
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


