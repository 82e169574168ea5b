"""The robustness analyses, streamed over chunks of replicates.

Private to :mod:`pyterrier_noise.experiments`.  :class:`Analysis` takes per-topic values a chunk
of replicates at a time (the truth as column 0 of every chunk, so a replicate equal to the truth
gets bit-identical means and p-values) and keeps only what the tables need: the per-replicate
system means ``(S, R)``, per-pair counts of each conclusion, one small code per (pair, replicate)
for the p-band table, and per-system counts against the baseline.  Nothing of size
``systems x topics x replicates`` is held unless asked for (``perquery``), and the ``(pairs, R)``
p-value arrays only with ``keep_pvalues``.  Every table equals the one computed from all
replicates at once, whatever the chunking.
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pandas as pd

from .._vocab import CONCLUSIONS
from ..stats import all_pairs, correct_pvalues, kendall_tau, paired_test, rbo, significant, tau_ap
from ..stats.tests import all_pairs_t_codes

if TYPE_CHECKING:
    from .result import RobustnessResult

#: quantiles of the rank_given_observed and p_given_observed tables
_QS = (0.025, 0.25, 0.5, 0.75, 0.975)
#: replicates per call of the ranking-agreement functions
_ROWS = 500


def strict_ranks(means: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """1-based ranks by mean score (higher first) along the last axis; exact ties are broken by a
    random priority per system drawn once from the seed (Rashidi et al. 2023 break ties at random;
    one shared draw means a tie that an unperturbed and a perturbed ordering share is not counted
    as a disagreement)."""
    prio = np.broadcast_to(priority, means.shape)
    order = np.lexsort((prio, -means), axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1, means.shape[-1] + 1), order.shape), axis=-1)
    return ranks


def conclusion_codes(sig0: np.ndarray, d0: np.ndarray, sigr: np.ndarray, dr: np.ndarray) -> np.ndarray:
    """0 kept, 1 lost, 2 gained, 3 reversed for each (pair, replicate): a partition.

    Significant under the truth: kept (significant, same winner), reversed (significant, other
    winner) or lost (not significant).  Not significant under the truth: kept (still not) or
    gained (significant either way: a spurious conclusion)."""
    s0, dd = sig0[:, None], d0[:, None]
    return np.where(s0, np.where(sigr, np.where(dr == dd, 0, 3), 1), np.where(sigr, 2, 0)).astype(np.int8)


def code_counts(code: np.ndarray, k: int) -> np.ndarray:
    """Number of replicates (axis 1) in each code, per row -> (rows, k) int64."""
    rows = code.shape[0]
    flat = np.arange(rows)[:, None] * k + code
    return np.bincount(flat.ravel(), minlength=rows * k).reshape(rows, k)


def _sd(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nanstd(x, ddof=1)) if np.sum(~np.isnan(x)) > 1 else 0.0


def _tau_mean(tau: np.ndarray, measure: str) -> float:
    """The mean Kendall tau over the replicates where it is defined; where it is nowhere (every system
    scores the same, before or after perturbation: a ranking of ties has no order to agree with) NaN,
    said in a sentence rather than numpy's "Mean of empty slice"."""
    if np.isnan(tau).all():
        from .._warnings import warn
        warn(f"{measure}: Kendall's tau is undefined (NaN) in every replicate: every system has the same "
             f"score (identical runs?), so the ranking has no order to agree with")
        return float("nan")
    return float(np.nanmean(tau))


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else float("nan")


class _Measure:
    """The running state of one measure."""

    def __init__(self, S: int, P: int, R: int, n_bands: int, keep_pvalues: bool, keep_values: bool,
                 T: int, b_idx: int | None) -> None:
        self.true: np.ndarray | None = None
        self.M0: np.ndarray | None = None
        self.M = np.empty((S, R))
        self.values = np.empty((S, T, R)) if keep_values else None
        self.pairs: dict[str, Any] = {}
        self.code_n = np.zeros((P, len(CONCLUSIONS)), np.int64)
        self.sig_n = np.zeros(P, np.int64)
        self.swap_n = np.zeros(P, np.int64)
        self.sig_per_rep = np.empty(R, np.int64)
        self.tot = {k: 0 for k in ("kept_st", "st_sigr", "sigr", "agree", "swap_st")}
        # (pair, replicate) -> -1 (no band: tied means or NaN p) or 2 * band + (observed winner is i)
        self.band = np.empty((P, R), np.int8 if 2 * n_bands < 127 else np.int16)
        self.p_obs = np.empty((P, R)) if keep_pvalues else None
        self.dir_obs = np.empty((P, R)) if keep_pvalues else None
        if b_idx is not None:
            self.base_code_n = np.zeros((S - 1, len(CONCLUSIONS)), np.int64)
            self.base_n = {k: np.zeros(S - 1, np.int64) for k in ("better", "worse", "ns")}


class Analysis:
    """Streamed analyses of :class:`RobustnessResult`: :meth:`add` each chunk, then :meth:`finish`."""

    def __init__(self, res: "RobustnessResult", R: int, priority: np.ndarray, design_seed: int,
                 b_idx: int | None, keep_values: bool, keep_pvalues: bool) -> None:
        self.res, self.R, self.priority, self.b_idx = res, R, priority, b_idx
        p = res.params
        self.kw = dict(test=p["test"], n_resamples=p["n_resamples"], seed=design_seed)
        S, T = len(res.names), len(res.topics)
        self.i, self.j = np.triu_indices(S, 1)
        self.edges = np.asarray(p["p_bands"])
        self.state = {m: _Measure(S, len(self.i), R, len(self.edges) - 1, keep_pvalues, keep_values, T, b_idx)
                      for m in res.measures}
        # Uncorrected two-sided t-tests need each replicate's p-value only to compare it with alpha
        # and the band edges: the replicates' p-values are then located among those cuts from
        # critical t values (stats.all_pairs_t_codes, exact at the boundaries), and every decision is
        # the p-value path's own applied to one representative p of each location
        self.cuts = np.unique(np.append(self.edges, p["alpha"]))
        self.by_codes = p["test"] == "t" and p["correction"] is None and not keep_pvalues
        if self.by_codes:
            c = self.cuts
            mids = np.concatenate([[c[0] - 1.0], (c[:-1] + c[1:]) / 2.0, [c[-1] + 1.0]])
            rep = np.empty(2 * len(c) + 2)
            rep[0] = np.nan                                   # code -1: undefined test
            rep[1::2] = mids                                  # code 2k: strictly between cuts
            rep[2::2] = c                                     # code 2k + 1: equal to cuts[k]
            self.code_sig, code_ok, code_band = self._decisions(rep)
            # the p-band code of (location code + 1, sign of the observed difference + 1), as
            # _band_codes gives it from the p-value path's decisions
            d = np.arange(3)[None, :]
            dtype = next(iter(self.state.values())).band.dtype
            self.code_band_lut = np.where(code_ok[:, None] & (d != 1), 2 * code_band[:, None] + (d == 2),
                                          -1).astype(dtype).ravel()

    def _decisions(self, pr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """From (corrected) replicate p-values: significant at alpha, inside the band edges, band."""
        e = self.edges
        sig = np.asarray(significant(pr, self.res.params["alpha"]))
        with np.errstate(invalid="ignore"):
            ok = ~np.isnan(pr) & (pr >= e[0]) & (pr <= e[-1])
        band = np.clip(np.searchsorted(e, pr, side="right") - 1, 0, len(e) - 2)
        return sig, ok, band

    # -- one chunk --------------------------------------------------------------------------------

    def add(self, m: str, XA: np.ndarray, c0: int) -> None:
        """Replicates ``c0 .. c0 + C - 1`` of measure ``m``: ``XA`` is ``(S, T, 1 + C)``, the
        per-topic values under the true labels in column 0."""
        st, p, i, j = self.state[m], self.res.params, self.i, self.j
        C = XA.shape[2] - 1
        c1 = c0 + C
        MA = XA.mean(axis=1)                                              # (S, 1 + C)
        M = MA[:, 1:]
        st.M[:, c0:c1] = M
        if st.values is not None:
            st.values[:, :, c0:c1] = XA[:, :, 1:]
        corr = p["correction"]
        if st.true is not None and self.by_codes:
            # the truth stays column 0 (same t statistics as the first chunk); see __init__
            idx = all_pairs_t_codes(XA, self.cuts).code[:, 1:].astype(np.int32) + 1
            dr = np.sign(M[i] - M[j])
            band_code = self.code_band_lut[idx * 3 + (dr.astype(np.int32) + 1)]
            self._add_replicates(st, dr, self.code_sig[idx], band_code, None, c0)
            if self.b_idx is not None:
                self._add_baseline(st, XA, MA, corr)
            return
        p_all = all_pairs(XA, **self.kw).pvalue                           # (P, 1 + C)
        p_all_c = p_all if corr is None else correct_pvalues(p_all, corr, axis=0)
        if st.true is None:
            X0 = np.ascontiguousarray(XA[:, :, 0])
            st.true, st.M0 = X0, MA[:, 0].copy()
            d0 = np.sign(st.M0[i] - st.M0[j])
            st.pairs = dict(p0=p_all[:, 0].copy(), p0c=p_all_c[:, 0].copy(), d0=d0,
                            sig0=np.asarray(significant(p_all_c[:, 0], p["alpha"])) & (d0 != 0),
                            gt=all_pairs(X0, alternative="greater", **self.kw).pvalue,
                            lt=all_pairs(X0, alternative="less", **self.kw).pvalue)
        pr, prc = p_all[:, 1:], p_all_c[:, 1:]
        sig_r = self._decisions(prc)[0]
        _, ok_r, band = self._decisions(pr)
        dr = np.sign(M[i] - M[j])
        self._add_replicates(st, dr, sig_r, np.where(ok_r & (dr != 0), 2 * band + (dr > 0), -1), pr, c0)
        if self.b_idx is not None:
            self._add_baseline(st, XA, MA, corr)

    def _add_replicates(self, st: _Measure, dr: np.ndarray, sig_r: np.ndarray, band_code: np.ndarray,
                        pr: np.ndarray | None, c0: int) -> None:
        """Pair conclusions and p bands of replicates ``c0 ..`` from their decisions: ``dr`` the
        sign of each (pair, replicate) difference of means, significant (corrected p < alpha),
        and the p-band code (``2 * band + (dr > 0)`` where the uncorrected p is in a band and
        ``dr != 0``, else -1).

        The conclusions (:func:`conclusion_codes`) are counted per pair without building them:
        a pair significant under the truth is kept where the replicate is significant the same
        way, reversed where significant the other way and lost elsewhere; any other pair is
        gained where the replicate is significant and kept elsewhere."""
        q = st.pairs
        C = dr.shape[1]
        c1 = c0 + C
        d0, sig0 = q["d0"], q["sig0"]
        sigr = sig_r & (dr != 0)
        n_sig = np.count_nonzero(sigr, axis=1)
        n_same = np.count_nonzero(sigr & (dr == d0[:, None]), axis=1)
        n_swap = np.count_nonzero(dr * d0[:, None] < 0, axis=1)
        zero = np.zeros_like(n_sig)
        st.code_n += np.stack([np.where(sig0, n_same, C - n_sig), np.where(sig0, C - n_sig, zero),
                               np.where(sig0, zero, n_sig), np.where(sig0, n_sig - n_same, zero)], axis=1)
        st.sig_n += n_sig
        st.swap_n += n_swap
        st.sig_per_rep[c0:c1] = np.count_nonzero(sigr, axis=0)
        st.tot["kept_st"] += int(n_same[sig0].sum())
        st.tot["st_sigr"] += int(n_sig[sig0].sum())
        st.tot["sigr"] += int(n_sig.sum())
        st.tot["agree"] += int(n_sig[sig0].sum() + (C - n_sig[~sig0]).sum())
        st.tot["swap_st"] += int(n_swap[sig0].sum())
        st.band[:, c0:c1] = band_code
        if st.p_obs is not None:
            st.p_obs[:, c0:c1] = pr
            st.dir_obs[:, c0:c1] = dr

    def _add_baseline(self, st: _Measure, XA: np.ndarray, MA: np.ndarray, corr: str | None) -> None:
        """Each system against the baseline, as pt.Experiment tests it: ``test(system, baseline)``
        over topics, corrected over the systems (here within each replicate)."""
        b, alpha = self.b_idx, self.res.params["alpha"]
        others = np.flatnonzero(np.arange(len(self.res.names)) != b)
        p_raw = paired_test(XA[others], XA[b][None], axis=1, **self.kw)          # (S-1, 1 + C)
        p_all = p_raw if corr is None else correct_pvalues(p_raw, corr, axis=0)
        D = np.sign(MA[others] - MA[b])                                           # (S-1, 1 + C)
        if "p_raw" not in st.pairs:
            d0 = D[:, 0]
            st.pairs.update(p_raw=p_raw[:, 0].copy(), p_base=p_all[:, 0].copy(), base_d0=d0,
                            base_sig0=np.asarray(significant(p_all[:, 0], alpha)) & (d0 != 0),
                            base_true=MA[others, 0].copy(), base_b=float(MA[b, 0]))
        d0, sig0 = st.pairs["base_d0"], st.pairs["base_sig0"]
        dr = D[:, 1:]
        sigr = np.asarray(significant(p_all[:, 1:], alpha)) & (dr != 0)
        st.base_code_n += code_counts(conclusion_codes(sig0, d0, sigr, dr), len(CONCLUSIONS))
        st.base_n["better"] += (sigr & (dr > 0)).sum(axis=1)
        st.base_n["worse"] += (sigr & (dr < 0)).sum(axis=1)
        st.base_n["ns"] += (~sigr).sum(axis=1)

    # -- the tables -------------------------------------------------------------------------------

    def finish(self, progress_bar: Any = None) -> None:
        """Build every table on the result (and drop the running state).  The measures' tables are
        built in worker threads (numpy and pandas release the GIL in the heavy parts), one
        measure per task; the frames are put together in the order of the measures."""
        res = self.res
        measures = list(res.measures)
        states = {m: self.state.pop(m) for m in measures}
        bar = progress_bar(total=len(measures)) if progress_bar is not None else None
        workers = max(1, min(len(measures), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {m: pool.submit(self._finish_measure, m, states.pop(m)) for m in measures}
            if bar is not None:
                for _ in as_completed(futures.values()):
                    bar.update(1)
                bar.close()
            parts = {m: f.result() for m, f in futures.items()}
        res.pair_index = (self.i, self.j)
        for m in measures:       # the result's dicts in the order of the measures
            for name, value in parts[m][1].items():
                if value is not None:
                    getattr(res, name)[m] = value
        rows: dict[str, list] = {k: [parts[m][0][k] for m in measures if k in parts[m][0]]
                                 for k in ("sys", "rank", "rgo", "pair", "pgo", "base", "summ")}
        res.systems = pd.concat(rows["sys"], ignore_index=True)
        res.rankings = pd.concat(rows["rank"], ignore_index=True)
        res.rank_given_observed = pd.concat(rows["rgo"], ignore_index=True)
        res.pairs = pd.concat(rows["pair"], ignore_index=True)
        res.p_given_observed = pd.concat(rows["pgo"], ignore_index=True)
        res.summary = pd.DataFrame(rows["summ"])
        res.baseline = pd.concat(rows["base"], ignore_index=True) if rows["base"] else None

    def _finish_measure(self, m: str, st: _Measure) -> tuple[dict[str, Any], dict[str, Any]]:
        """The tables' rows of one measure, and its arrays for the result's attributes."""
        res, p, R = self.res, self.res.params, self.R
        S = len(res.names)
        names = np.asarray(res.names, dtype=object)
        i, j = self.i, self.j
        rows: dict[str, Any] = {}
        arrays: dict[str, Any] = {"true": st.true, "means": st.M, "values": st.values}
        M0, M = st.M0, st.M
        # --- scores and ranks of each system
        r0 = strict_ranks(M0, self.priority)                       # (S,)
        rk = strict_ranks(M.T, self.priority)                      # (R, S)
        arrays["observed_ranks"] = rk
        q_lo, q_hi = np.quantile(M, [0.025, 0.975], axis=1)
        rq_lo, rq_med, rq_hi = np.quantile(rk, [0.025, 0.5, 0.975], axis=0)
        rows["sys"] = pd.DataFrame({
            "name": names, "measure": m, "true": M0, "mean": M.mean(axis=1),
            "sd": M.std(axis=1, ddof=1) if R > 1 else np.zeros(S), "q2.5": q_lo, "q97.5": q_hi,
            "true_rank": r0, "rank_median": rq_med, "rank_q2.5": rq_lo, "rank_q97.5": rq_hi})
        # --- agreement of each replicate's ordering with the unperturbed one
        strict0, strict = (S - r0).astype(float), (S - rk).astype(float)
        # row by row functions, called on blocks of replicates: their temporaries are
        # (replicates x systems x systems)
        blocks = [slice(r0_, r0_ + _ROWS) for r0_ in range(0, R, _ROWS)]
        tau = np.concatenate([kendall_tau(M.T[b], np.broadcast_to(M0, (len(range(R)[b]), S))) for b in blocks])
        tap = np.concatenate([tau_ap(strict[b], np.broadcast_to(strict0, strict[b].shape)) for b in blocks])
        rb = np.concatenate([rbo(strict[b], np.broadcast_to(strict0, strict[b].shape), p=p["rbo_p"],
                                 variant=p["rbo_variant"]) for b in blocks])
        rows["rank"] = pd.DataFrame({"replicate": np.arange(R), "measure": m, "kendall_tau": tau,
                                     "tau_ap": tap, "rbo": rb})
        # --- true rank given observed rank (Rashidi et al. 2023, Figs 7-9)
        at = r0[np.argsort(rk, axis=1)]                               # (R, S)
        arrays["true_rank_at"] = at
        qs = np.quantile(at, list(_QS), axis=0)
        rows["rgo"] = pd.DataFrame({
            "measure": m, "observed_rank": np.arange(1, S + 1), "count": R,
            "mean": at.mean(axis=0), "sd": at.std(axis=0, ddof=1) if R > 1 else np.zeros(S),
            "q2.5": qs[0], "q25": qs[1], "median": qs[2], "q75": qs[3], "q97.5": qs[4],
            "same": (at == np.arange(1, S + 1)).mean(axis=0),
            "within_1": (np.abs(at - np.arange(1, S + 1)) <= 1).mean(axis=0)})
        # --- all pairs
        q = st.pairs
        if st.p_obs is not None:
            arrays["p_observed"] = st.p_obs
            arrays["observed_direction"] = dr = st.dir_obs
            arrays["p_true_mapped"] = np.where(dr > 0, q["gt"][:, None], np.where(dr < 0, q["lt"][:, None], np.nan))
        frame = pd.DataFrame({
            "measure": m, "sys_a": names[i], "sys_b": names[j], "mean_a": M0[i], "mean_b": M0[j],
            "p_value": q["p0"], "p_corrected": q["p0c"], "significant": q["sig0"],
            "direction": q["d0"].astype(int), "significant_share": st.sig_n / R})
        for k, c in enumerate(CONCLUSIONS):
            frame[c] = st.code_n[:, k] / R
        frame["swapped"] = st.swap_n / R
        rows["pair"] = frame
        rows["pgo"] = band_table(m, st.band, q["gt"], q["lt"], self.edges, p["alpha"])
        # --- per-measure headline numbers
        sig0 = q["sig0"]
        n_st = int(sig0.sum()) * R
        tot = st.code_n.sum(axis=0).astype(float)
        t = st.tot
        rows["summ"] = {
            "measure": m, "n_systems": S, "n_topics": len(res.topics), "n_replicates": R,
            "kendall_tau": _tau_mean(tau, m), "kendall_tau_sd": _sd(tau),
            "tau_ap": float(np.mean(tap)), "tau_ap_sd": _sd(tap),
            "rbo": float(np.mean(rb)), "rbo_sd": _sd(rb),
            "n_pairs": len(i), "significant_pairs": int(sig0.sum()),
            "significant_pairs_replicates": float(st.sig_per_rep.mean()),
            "kept_significant": _ratio(t["kept_st"], n_st),
            "lost": _ratio(tot[1], n_st), "reversed": _ratio(tot[3], n_st),
            "swapped": _ratio(t["swap_st"], n_st),
            "gained": _ratio(tot[2], len(i) * R - n_st),
            "precision": _ratio(t["st_sigr"], t["sigr"]), "recall": _ratio(t["st_sigr"], n_st),
            "accuracy": float(t["agree"] / (len(i) * R)),
        }
        if self.b_idx is not None:
            rows["base"] = self._baseline_frame(m, st)
        return rows, arrays

    def _baseline_frame(self, m: str, st: _Measure) -> pd.DataFrame:
        res, b, R, q = self.res, self.b_idx, self.R, st.pairs
        others = np.flatnonzero(np.arange(len(res.names)) != b)
        sig0, d0 = q["base_sig0"], q["base_d0"]
        frame = pd.DataFrame({
            "measure": m, "name": np.asarray(res.names, dtype=object)[others],
            "baseline": res.names[b], "true": q["base_true"], "baseline_true": q["base_b"],
            "p_value": q["p_raw"], "p_corrected": q["p_base"], "significant": sig0,
            "conclusion": np.where(sig0, np.where(d0 > 0, "better", "worse"), "n.s."),
            "better_share": st.base_n["better"] / R, "worse_share": st.base_n["worse"] / R,
            "n.s._share": st.base_n["ns"] / R})
        for k, c in enumerate(CONCLUSIONS):
            frame[c] = st.base_code_n[:, k] / R
        return frame


class _Budget:
    """At most ``limit`` units in use across threads at once (one user may exceed it alone)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0
        self.cond = threading.Condition()

    @contextlib.contextmanager
    def take(self, n: int) -> Iterator[None]:
        with self.cond:
            self.cond.wait_for(lambda: self.used == 0 or self.used + n <= self.limit)
            self.used += n
        try:
            yield
        finally:
            with self.cond:
                self.used -= n
                self.cond.notify_all()


#: band entries whose mean and sd are computed at once by the measures' threads: pandas' group-by
#: holds about 17 bytes per entry (values, labels, key), so this bounds it near 570 MB; the band
#: tables of a few thousand replicates run side by side, those of 10,000 mostly in turn
_BAND_ENTRIES = _Budget(1 << 25)


def _group_quantiles(values: np.ndarray, counts: np.ndarray, n: int) -> list[float]:
    """pandas' groupby ``quantile`` (linear interpolation) of the multiset ``values`` (sorted,
    distinct) x ``counts``: position ``q (n - 1)``, its integer part and fraction, as pandas
    computes them."""
    cum = np.cumsum(counts)
    out = []
    for q in _QS:
        h = q * (n - 1)
        k = int(h)
        frac = h % 1
        val = values[np.searchsorted(cum, k, side="right")]
        if frac == 0.0:
            out.append(float(val))
        else:
            nxt = values[np.searchsorted(cum, k + 1, side="right")]
            out.append(float(val + (nxt - val) * frac))
    return out


def band_table(m: str, codes: np.ndarray, p_gt: np.ndarray, p_lt: np.ndarray, edges: np.ndarray,
               alpha: float) -> pd.DataFrame:
    """True mapped p given the observed p band (Rashidi et al. 2023, Sec. 5.5, Figs 12-14; the outcome
    classes confirmed, unsubstantiated, reversed and significantly reversed).

    ``codes[pair, replicate]`` is ``2 * band + (observed winner is the pair's first system)``, or
    -1 outside every band; the mapped p is ``p_gt`` (first system better, on the truth) or
    ``p_lt``.  Each band's values are a multiset of at most ``2 x pairs`` distinct values: counts
    give the count, quantiles and shares; the mean and sd are pandas' (its Kahan and Welford sums
    depend on the order of the values, which is the (pair, replicate) order)."""
    nb = len(edges) - 1
    P, R = codes.shape
    lut = np.stack([p_lt, p_gt], axis=1).ravel()                      # code & 1 -> which one-sided p
    cols = {k: np.full(nb, np.nan) for k in ("mean", "sd", "q2.5", "q25", "median", "q75", "q97.5",
                                              "same_direction", "confirmed", "unsubstantiated", "reversed",
                                              "significantly_reversed")}
    count = np.zeros(nb, np.int64)
    # per (pair, code) counts: which distinct mapped value, how often, in which band
    per = np.empty((P, 2 * nb), np.int64)                                 # (P, 2 nb)
    step = max(1, (1 << 22) // max(codes.shape[1], 1))
    for p0 in range(0, P, step):   # blocks of pairs: the temporaries are int64 (pairs x replicates)
        blk = codes[p0:p0 + step]
        per[p0:p0 + len(blk)] = code_counts(np.where(blk < 0, 2 * nb, blk), 2 * nb + 1)[:, :2 * nb]
    for b in range(nb):
        cnt = per[:, 2 * b:2 * b + 2].ravel()                           # (P * 2,) in lut order
        n = int(cnt.sum())
        count[b] = n
        if n == 0:
            continue
        keep = cnt > 0
        vals, c = lut[keep], cnt[keep]
        order = np.argsort(vals, kind="stable")
        vals, c = vals[order], c[order]
        uniq, start = np.unique(vals, return_index=True)
        c = np.add.reduceat(c, start)
        qv = _group_quantiles(uniq, c, n)
        for k, name in enumerate(("q2.5", "q25", "median", "q75", "q97.5")):
            cols[name][b] = qv[k]
        for name, mask in (("same_direction", uniq < 0.5), ("confirmed", uniq < alpha),
                           ("unsubstantiated", (uniq >= alpha) & (uniq <= 0.5)),
                           ("reversed", (uniq > 0.5) & (uniq <= 1 - alpha)),
                           ("significantly_reversed", uniq > 1 - alpha)):
            cols[name][b] = float(c[mask].sum()) / float(n)
    # mean and sd as pandas' groupby computes them over the (pair, replicate) sequence (its sums
    # depend on the order and on the other groups); one band code and one value per entry
    # one band at a time, built a block of pairs at a time (no (pair, replicate) index).  pandas'
    # groupby sums depend on the order of the values and take another path when the group
    # labels are sorted, so a one-value second group is placed second: the band's mean and sd
    # are then exactly those of one groupby over every band (tests pin this)
    for b in range(nb):
        n = int(count[b])
        if n == 0:
            continue
        with _BAND_ENTRIES.take(n):
            seq = np.empty(n + 1)
            at = 1
            for p0 in range(0, P, step):
                blk = codes[p0:p0 + step].ravel()
                # the band's entries of this block in (pair, replicate) order; a code of -1 (no
                # band) shifts to -1, never a band
                where = np.flatnonzero((blk >> 1) == b)
                seq[at:at + len(where)] = lut[2 * (p0 + where // R) + (blk[where] & 1)]
                at += len(where)
            seq[0], seq[1] = seq[1], 0.0      # the first value, the other group's zero, the rest
            key = np.zeros(n + 1, np.int8)
            key[1] = 1
            # the key as a categorical: pandas takes its codes as the group labels (the labels an
            # int8 key factorises to, so the same sums) without hashing every entry
            g = pd.Series(seq, copy=False).groupby(pd.Categorical.from_codes(key, categories=[0, 1]),
                                                   observed=False)
            cols["mean"][b] = g.mean().iloc[0]
            cols["sd"][b] = g.std(ddof=1).iloc[0]
            del seq, key, g
    return pd.DataFrame({"measure": m, "p_low": edges[:-1], "p_high": edges[1:], "count": count, **cols})
