"""Which (query, document) pairs to send to the gold (human) judge, with known inclusion probabilities.

A gold sample is drawn from the pairs the cheap judge labelled (the rows of a judgment table) by
one of three designs, each with the inclusion probability ``pi`` of every pair, so that the
Horvitz-Thompson estimator ``sum_{i in S} z_i / pi_i`` of a total ``sum_j z_j`` is unbiased
(Horvitz and Thompson 1952):

* ``"uniform"``: a simple random sample without replacement of ``n`` pairs;
* ``"stratified"``: strata by the cheap label crossed with bins of the pair's rank weight in the
  runs (its importance to the measure); within each stratum a simple random sample, allocated in
  proportion to the stratum's size times its mean importance, at least two pairs (or the whole
  stratum) per stratum so that every pair can be drawn and every stratum has a variance (with too
  small a budget the importance bins, then the label strata, are merged);
* ``"active"``: the stratified design's strata, each split into the pairs the cheap judge is
  sure and unsure of (``sqrt(q (1 - q))`` of its probability ``q``, above or below its median,
  when a probability is given), with half the budget allocated by Neyman's rule taking the
  residual's spread as importance times uncertainty (the stratified form of the variance-optimal
  rule of Zrnic and Candes 2024) and half in proportion to the strata's sizes (uniform), at least
  two pairs per stratum -- human effort goes where the cheap judge is unsure and the pair
  matters (as LARA, Takehi et al. 2024), while an over-confident judge cannot starve a stratum,
  and the variance is the stratified one (with its pooled model, it cannot collapse to 0).

:func:`planned_selector` makes a judging session serve the planned pairs to the human judges.

:func:`ht_covariance` is the design-based covariance of the Horvitz-Thompson estimates of several
totals at once (stratified: ``sum_h N_h^2 (1 - f_h) s_h^2 / n_h``; Poisson:
``sum_i (1 - pi_i) z_i z_i^T / pi_i^2``), batched over leading axes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int
from .._vocab import DESIGNS, Design

__all__ = ["GoldSample", "sample_pairs", "sample_topics", "ht_covariance", "ht_df", "DESIGNS", "PlannedSelector",
           "planned_selector", "post_stratify", "srs_plausibility", "MIN_POST_STRATUM"]

#: the fewest gold pairs a post-stratum keeps (:func:`post_stratify` merges neighbouring strata below it)
MIN_POST_STRATUM = 10
#: the share of an active design's budget allocated in proportion to the strata's sizes (uniform)
ACTIVE_MIX = 0.5


@dataclass(eq=False)
class GoldSample:
    """A sample of judgment-table rows for the gold judge, with the design's inclusion probabilities.

    ``rows``: sampled row numbers of the table (sorted); ``pi``: their inclusion probabilities;
    ``factor``: each unit's share of the variance estimator (see :func:`ht_covariance`);
    ``stratum``: each unit's stratum (``-1`` for Poisson sampling, which is not centred);
    ``pi_all``: the inclusion probability of every row of the table (for exact checks);
    ``design``: the design's name; ``n_rows``: the size of the table.
    """

    rows: np.ndarray
    pi: np.ndarray
    factor: np.ndarray
    stratum: np.ndarray
    pi_all: np.ndarray
    design: str
    n_rows: int
    stratum_all: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def to_frame(self, table: Any) -> pd.DataFrame:
        """The sampled pairs as ``qid, docno, pi, stratum`` (what to hand to the human judges)."""
        frame = table.frame.iloc[self.rows][["qid", "docno"]].reset_index(drop=True)
        return frame.assign(pi=self.pi, stratum=self.stratum)

    def with_rows(self, rows: Any) -> "GoldSample":
        """Another sample of the same design (same strata and probabilities) made of ``rows``: for
        exact checks by enumeration, or for gold labels collected on a planned sample."""
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        if rows.size and (rows[0] < 0 or rows[-1] >= self.n_rows):
            raise InputError(f"rows must be table rows 0..{self.n_rows - 1}")
        pi = self.pi_all[rows]
        if self.stratum_all is None:      # Poisson sampling
            return GoldSample(rows, pi, (1.0 - pi) / pi ** 2, np.full(len(rows), -1), self.pi_all, self.design,
                              self.n_rows)
        s_all = self.stratum_all
        sizes = np.bincount(s_all)
        taken = np.bincount(s_all[rows], minlength=len(sizes))
        s = s_all[rows]
        return GoldSample(rows, pi, _stratified_factor(s, sizes, taken), s, self.pi_all, self.design, self.n_rows,
                          s_all)


    def design_frame(self, table: Any) -> pd.DataFrame:
        """Every cheap-judged pair with its inclusion probability and stratum, and whether it is in the
        sample: ``qid, docno, pi, stratum, planned, design``.  Written beside the gold labels, it lets
        :meth:`from_design_frame` (and ``pyterrier-noise calibrate --sample``) weight them later."""
        frame = table.frame[["qid", "docno"]].reset_index(drop=True)
        planned = np.zeros(self.n_rows, dtype=bool)
        planned[self.rows] = True
        stratum = self.stratum_all if self.stratum_all is not None else np.full(self.n_rows, -1)
        return frame.assign(pi=self.pi_all, stratum=stratum, planned=planned.astype(int), design=self.design)

    @classmethod
    def from_design_frame(cls, table: Any, frame: pd.DataFrame, judged: Any = None,
                          source: str = "design frame") -> "GoldSample":
        """The sample described by :meth:`design_frame`, on ``table`` (the same cheap-judged pairs).

        ``judged``: the table rows the gold judge actually labelled (default: the planned ones); they
        must be planned pairs.  Planned pairs left unjudged are counted in a warning: under a stratified
        or uniform design each stratum's sample is then taken as a simple random sample of the size
        judged (``pi = n_h / N_h``, unbiased if the pairs were skipped at random within the stratum);
        under the active (Poisson) design the probabilities are kept and the estimate is biased by the
        missing pairs."""
        from ._common import _warn
        missing = [c for c in ("qid", "docno", "pi", "stratum", "planned") if c not in frame.columns]
        if missing:
            raise InputError(f"{source}: missing column(s) {missing}; expected qid, docno, pi, stratum, planned "
                             f"(GoldSample.design_frame writes them)")
        N = len(table)
        key = table.frame[["qid", "docno"]].astype(str).assign(_row=np.arange(N))
        m = frame.assign(qid=frame["qid"].astype(str), docno=frame["docno"].astype(str)).merge(
            key, on=["qid", "docno"], how="left")
        absent = m["_row"].isna().to_numpy()
        if absent.any():
            i = int(np.flatnonzero(absent)[0])
            raise InputError(f"{source}, row {i + 1}: qid={m['qid'].iloc[i]!r} docno={m['docno'].iloc[i]!r} has no "
                             f"cheap label ({int(absent.sum())} such row(s)); the design must be planned on the same "
                             f"cheap labels")
        rows_of = m["_row"].to_numpy(dtype=np.int64)
        if len(np.unique(rows_of)) != len(rows_of) or len(rows_of) != N:
            raise InputError(f"{source}: expected each of the {N} cheap-judged pairs exactly once, got {len(m)} "
                             f"rows ({len(np.unique(rows_of))} distinct pairs)")
        pi_all = np.empty(N)
        pi_all[rows_of] = m["pi"].to_numpy(dtype=np.float64)
        stratum = np.empty(N, dtype=np.int64)
        stratum[rows_of] = m["stratum"].to_numpy(dtype=np.int64)
        planned = np.zeros(N, dtype=bool)
        planned[rows_of] = m["planned"].to_numpy(dtype=np.int64) != 0
        bad = ~np.isfinite(pi_all) | (pi_all <= 0) | (pi_all > 1)
        if bad.any():
            i = int(np.flatnonzero(bad[rows_of])[0])
            raise InputError(f"{source}, row {i + 1}: column 'pi' must be in (0, 1], got {m['pi'].iloc[i]!r}")
        design = str(m["design"].iloc[0]) if "design" in m.columns and len(m) else \
            ("active" if (stratum < 0).all() else "stratified")
        rows = np.flatnonzero(planned) if judged is None else np.unique(np.asarray(judged, dtype=np.int64))
        extra = rows[~planned[rows]]
        if extra.size:
            raise InputError(f"{source}: {extra.size} gold pair(s) were not planned, e.g. qid="
                             f"{table.frame['qid'].iloc[extra[0]]!r} docno={table.frame['docno'].iloc[extra[0]]!r}; "
                             f"judge the planned pairs only (or calibrate without --sample)")
        skipped = int(planned.sum() - len(rows))
        if (stratum < 0).all():          # Poisson sampling
            if skipped:
                _warn(f"{source}: {skipped} planned pair(s) have no gold label; the active (Poisson) design "
                      f"cannot reweight them, so the estimates are biased by their absence")
            p = pi_all[rows]
            return cls(rows, p, (1.0 - p) / p ** 2, np.full(len(rows), -1), pi_all, design, N)
        sizes = np.bincount(stratum)
        taken = np.bincount(stratum[rows], minlength=len(sizes))
        if skipped:
            _warn(f"{source}: {skipped} planned pair(s) have no gold label; each stratum is taken as a simple "
                  f"random sample of the pairs judged (pi = judged / stratum size)")
            with np.errstate(divide="ignore", invalid="ignore"):
                pi_all = np.where(taken[stratum] > 0, taken[stratum] / sizes[stratum], pi_all)
        s = stratum[rows]
        return cls(rows, pi_all[rows], _stratified_factor(s, sizes, taken), s, pi_all, design, N, stratum)


def _stratified_factor(stratum: np.ndarray, sizes: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """``N_h^2 (1 - n_h / N_h) / (n_h (n_h - 1))`` per unit (0 when its stratum has one unit)."""
    Nh = sizes[stratum].astype(np.float64)
    nh = taken[stratum].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = Nh ** 2 * (1.0 - nh / Nh) / (nh * (nh - 1.0))
    return np.where(nh > 1, f, 0.0)


def _allocate(sizes: np.ndarray, score: np.ndarray, n: int) -> np.ndarray:
    """Sample size per stratum, proportional to ``score``, at most the stratum size, summing to ``n``."""
    take = np.minimum(sizes, 2)      # every stratum at least two pairs (or all of it): pi > 0 and a variance
    rest = n - take.sum()
    while rest > 0:
        room = sizes - take
        s = np.where(room > 0, score, 0.0)
        if s.sum() <= 0:
            s = (room > 0).astype(np.float64)
        share = rest * s / s.sum()
        add = np.minimum(np.floor(share).astype(np.int64), room)
        if add.sum() == 0:   # hand out the remainders one by one, largest share first
            order = np.argsort(-(share - np.floor(share)) - (room > 0) * 1e-9)
            for h in order[:rest]:
                if room[h] > 0:
                    add[h] += 1
        take = take + add
        rest = n - take.sum()
    return take


def _strata(cheap: np.ndarray, importance: np.ndarray, n_bins: int) -> np.ndarray:
    """Stratum of each row: cheap label crossed with quantile bins of importance."""
    labels, lab = np.unique(np.nan_to_num(cheap, nan=-1.0), return_inverse=True)
    if n_bins > 1 and np.ptp(importance) > 0:
        edges = np.unique(np.quantile(importance, np.linspace(0, 1, n_bins + 1)[1:-1]))
        b = np.searchsorted(edges, importance, side="right")
    else:
        b = np.zeros(len(importance), dtype=np.int64)
    _, stratum = np.unique(lab * (n_bins + 1) + b, return_inverse=True)
    return stratum


def sample_pairs(cheap: Any, n: int, *, design: Design = "stratified", importance: Any = None,
                 probability: Any = None, n_bins: int = 3, seed: int | None = 0) -> GoldSample:
    """Draw a gold sample of ``n`` pairs (expected size for ``"active"``) from the cheap-judged pairs.

    Args:
        cheap: the cheap judge's label of every row of the judgment table (NaN: its own stratum).
        n: the human budget in pairs.
        design: ``"uniform"``, ``"stratified"`` or ``"active"`` (see the module doc).
        importance: a weight per row, e.g. the total rank weight of the pair over the runs (from
            :func:`pair_weights`); default equal.
        probability: the cheap judge's probability that the pair is relevant (``"active"`` only;
            without it, active allocates by importance alone, half of it uniformly).
        n_bins: importance bins crossed with the cheap labels (``"stratified"``).
        seed: the random seed (default 0).
    """
    y = np.asarray(cheap, dtype=np.float64)
    N = len(y)
    n = check_int("n", n, 1)
    if n > N:
        raise InputError(f"a gold sample of {n} pairs needs at least {n} cheap-judged pairs, got {N}")
    check_choice("design", design, DESIGNS)
    imp = np.ones(N) if importance is None else np.asarray(importance, dtype=np.float64)
    if imp.shape != (N,) or not np.isfinite(imp).all() or (imp < 0).any():
        raise InputError(f"importance must be {N} finite non-negative weights (one per pair), got shape {imp.shape}")
    rng = np.random.default_rng(seed)
    unsure = None
    if design == "active" and probability is not None:
        q = np.clip(np.asarray(probability, dtype=np.float64), 0.0, 1.0)
        if q.shape != (N,):
            raise InputError(f"probability must have one value per pair ({N}), got shape {q.shape}")
        unsure = np.sqrt(q * (1.0 - q))
    stratum = np.zeros(N, dtype=np.int64)
    if design != "uniform":   # fewer bins (then one stratum) until every stratum gets two pairs
        splits = [True, False] if unsure is not None and np.ptp(unsure) > 0 else [False]
        found = False
        for split in splits:
            for bins in range(max(int(n_bins), 1), 0, -1):
                cand = _strata(y, imp, bins)
                if split:       # active: the cheap judge's sure and unsure halves apart
                    _, cand = np.unique(cand * 2 + (unsure > np.median(unsure)), return_inverse=True)
                if n >= np.minimum(np.bincount(cand), 2).sum():
                    stratum, found = cand, True
                    break
            if found:
                break
    sizes = np.bincount(stratum)
    score = sizes * np.maximum(np.bincount(stratum, weights=imp) / sizes, 1e-12)
    if design == "active":
        # Neyman's allocation with the residual's spread taken as importance x uncertainty (the
        # stratified form of Zrnic and Candes 2024's variance-optimal rule), mixed half and half
        # with proportional (uniform) allocation, so that an over-confident judge cannot starve a stratum
        u = np.ones(N) if unsure is None else unsure + 0.05
        opt = sizes * np.maximum(np.bincount(stratum, weights=imp * u) / sizes, 1e-12)
        score = ACTIVE_MIX * sizes / sizes.sum() + (1.0 - ACTIVE_MIX) * opt / opt.sum()
    taken = np.array([n]) if design == "uniform" else _allocate(sizes, score, n)
    # a simple random sample within every stratum: the `taken[h]` rows with the smallest keys
    key = rng.random(N)
    order = np.lexsort((key, stratum))
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank_in = np.empty(N, dtype=np.int64)
    rank_in[order] = np.arange(N) - first[stratum[order]]
    rows = np.flatnonzero(rank_in < taken[stratum])
    pi_all = taken[stratum] / sizes[stratum]
    s = stratum[rows]
    return GoldSample(rows, pi_all[rows], _stratified_factor(s, sizes, taken), s, pi_all, design, N, stratum)


def post_stratify(cheap: Any, rows: Any, importance: Any = None, *, n_bins: int = 3,
                  min_per_stratum: int = MIN_POST_STRATUM) -> GoldSample:
    """A simple random sample of pairs (``rows`` of the judgment table), post-stratified.

    The strata are the stratified design's (the cheap label crossed with ``n_bins`` quantile bins of
    ``importance``, see :func:`sample_pairs`), known for every pair; neighbouring strata (in the order
    label, then importance bin) are merged until each holds at least ``min_per_stratum`` gold pairs.
    Given how many gold pairs fell in each stratum, a simple random sample is a simple random sample
    within every stratum, so the stratified estimator applies with ``pi = n_h / N_h`` (Cochran 1977,
    Sec 5A.9; Holt and Smith 1979): unbiased conditionally on the ``n_h``, and the variance and the
    pooled model of :class:`~pyterrier_noise.correction.CheapStudy` follow the strata instead of
    assuming relevance unrelated to rank weight over all pairs.
    """
    y = np.asarray(cheap, dtype=np.float64)
    N = len(y)
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    if rows.size < 2 or rows[0] < 0 or rows[-1] >= N:
        raise InputError(f"a post-stratified sample needs at least 2 distinct table rows in 0..{N - 1}, "
                         f"got {rows.size}")
    min_per_stratum = check_int("min_per_stratum", min_per_stratum, 2)
    imp = np.ones(N) if importance is None else np.asarray(importance, dtype=np.float64)
    if imp.shape != (N,):
        raise InputError(f"importance must have one value per pair ({N}), got shape {imp.shape}")
    base = _strata(y, imp, max(int(n_bins), 1))
    taken = np.bincount(base[rows], minlength=int(base.max()) + 1)
    group = np.cumsum(np.r_[0, _closes(taken, min_per_stratum)[:-1]])       # consecutive strata, >= min each
    if np.bincount(group, weights=taken)[-1] < min_per_stratum and group[-1] > 0:
        group[group == group[-1]] -= 1       # a short last group joins the one before
    _, stratum = np.unique(group[base], return_inverse=True)
    sizes = np.bincount(stratum)
    got = np.bincount(stratum[rows], minlength=len(sizes))
    pi_all = got[stratum] / sizes[stratum]
    s = stratum[rows]
    return GoldSample(rows, pi_all[rows], _stratified_factor(s, sizes, got), s, pi_all, "post-stratified", N,
                      stratum)


def _closes(taken: np.ndarray, minimum: int) -> np.ndarray:
    """Whether each stratum closes a group of consecutive strata holding ``minimum`` sampled units."""
    out = np.zeros(len(taken), dtype=np.int64)
    acc = 0
    for h, t in enumerate(taken):        # one step per stratum (a dozen), not per pair
        acc += int(t)
        if acc >= minimum:
            out[h], acc = 1, 0
    return out


def srs_plausibility(rows: Any, cheap: Any, importance: Any, topic: Any) -> dict[str, float]:
    """How plausible ``rows`` are as a simple random sample of the table's pairs: the p-values of
    Mann-Whitney's test of the sampled pairs' ``importance`` against the others' (a sample drawn from
    the top ranks), and of chi-square tests of the sampled counts per cheap label and per topic
    against their shares of the table (a sample stratified by label, or of whole topics); ``p``: the
    smallest, times 3 (Bonferroni), at most 1."""
    from scipy import stats
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    imp = np.asarray(importance, dtype=np.float64)
    N = len(imp)
    inside = np.zeros(N, dtype=bool)
    inside[rows] = True
    out: dict[str, float] = {}
    if 0 < rows.size < N and np.ptp(imp) > 0:
        out["importance"] = float(stats.mannwhitneyu(imp[inside], imp[~inside], alternative="two-sided").pvalue)
    for name, cat in (("cheap label", np.unique(np.nan_to_num(np.asarray(cheap, dtype=np.float64), nan=-1.0),
                                                return_inverse=True)[1]),
                      ("topic", np.asarray(topic, dtype=np.int64))):
        total = np.bincount(cat)
        keep = total > 0
        if keep.sum() < 2:
            continue
        obs = np.bincount(cat[rows], minlength=len(total))[keep]
        exp = rows.size * total[keep] / N
        out[name] = float(stats.chisquare(obs, exp).pvalue)
    out["p"] = float(min(1.0, 3 * min(out.values()))) if out else 1.0
    return out


def sample_topics(n_topics: int, n: int, *, seed: int | None = 0) -> np.ndarray:
    """A simple random sample (sorted) of ``n`` of ``n_topics`` topics whose pairs all go to the gold judge."""
    n_topics = check_int("n_topics", n_topics, 2)
    n = check_int("n", n, 2)
    if n > n_topics:
        raise InputError(f"cannot sample {n} of {n_topics} topics")
    return np.sort(np.random.default_rng(seed).choice(n_topics, n, replace=False))


def _stratum_blocks(stratum: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order that groups the sampled units by stratum, the start of each group, and each group's size."""
    order = np.argsort(stratum, kind="stable")
    s = stratum[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    sizes = np.diff(np.r_[starts, len(s)])
    return order, starts, sizes


def _centred(Z: np.ndarray, sample: GoldSample) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``Z`` (sorted by stratum) minus its stratum means, the units' factors in that order, and the blocks."""
    if not (sample.stratum >= 0).any():
        return Z, sample.factor, None, None
    order, starts, sizes = _stratum_blocks(sample.stratum)
    Zs = Z[..., order, :]
    means = np.add.reduceat(Zs, starts, axis=-2) / sizes[:, None]
    return Zs - np.repeat(means, sizes, axis=-2), sample.factor[order], starts, sizes


def ht_covariance(Z: Any, sample: GoldSample) -> np.ndarray:
    """Design-based covariance of the Horvitz-Thompson totals of the columns of ``Z``.

    ``Z`` is ``(..., n, d)``: for each sampled unit (in ``sample.rows`` order) its value ``z_i``
    of ``d`` totals.  Stratified simple random sampling (Cochran 1977, Eq 5.8):
    ``sum_h N_h^2 (1 - f_h) s_h^2 / n_h``; Poisson sampling: ``sum_i (1 - pi_i) z_i z_i^T / pi_i^2``.
    Returns ``(..., d, d)``.
    """
    Zc, factor, _, _ = _centred(np.asarray(Z, dtype=np.float64), sample)
    return np.swapaxes(Zc * factor[:, None], -1, -2) @ Zc


def ht_df(Z: Any, sample: GoldSample) -> np.ndarray:
    """Effective degrees of freedom of the variance estimate of each column's Horvitz-Thompson total.

    Stratified sampling: the smaller of Satterthwaite's approximation over strata (Cochran 1977,
    Sec 5.4), ``(sum_h v_h)^2 / sum_h v_h^2 / (n_h - 1)`` with ``v_h = N_h^2 (1 - f_h) s_h^2 / n_h``,
    and the effective number of terms of the variance sum minus one,
    ``(sum_i v_i)^2 / sum_i v_i^2 - 1`` over the sampled units' terms ``v_i``; Poisson sampling: the
    latter.  A total carried by a few sampled pairs (a run's top ranks hold few of them) gets
    few degrees of freedom, hence a wider t interval.
    ``Z`` is ``(n, d)``; returns ``(d,)`` (0 where the variance estimate is 0: nothing to go on).
    """
    Zc, factor, starts, sizes = _centred(np.asarray(Z, dtype=np.float64), sample)
    unit = factor[:, None] * Zc * Zc
    total = unit.sum(axis=0)
    num = total * total
    den_unit = (unit * unit).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        units = np.where(den_unit > 0, np.maximum(num / den_unit - 1.0, 1.0), 0.0)
        if starts is None:
            return units
        v = np.add.reduceat(unit, starts, axis=0)                                  # (H, d)
        den = (v * v / np.maximum(sizes - 1.0, 1.0)[:, None]).sum(axis=0)
        strata = np.where(den > 0, num / den, 0.0)
    return np.minimum(strata, units)


class PlannedSelector:
    """A judgment selector that serves the pairs of a planned gold sample, in the plan's order.

    It wraps :class:`~pyterrier_noise.selection.JudgmentSelector` (which keeps the runs' bounds and
    the judged qrels) and replaces only its proposals, so a
    :class:`~pyterrier_noise.selection.JudgingSession` records the humans' labels of exactly the
    planned pairs, durably and resumably.  Build it through :func:`planned_selector`.
    """

    def __init__(self, runs: Any, plan: pd.DataFrame, **config: Any) -> None:
        from ..selection import JudgmentSelector
        missing = [c for c in ("qid", "docno") if c not in plan.columns]
        if missing:
            raise InputError(f"plan: missing column(s) {missing}; expected qid, docno[, pi] "
                             f"(GoldSample.to_frame gives them)")
        self._inner = JudgmentSelector(runs, **config)
        retrieved = pd.MultiIndex.from_frame(pd.concat(
            [f[["qid", "docno"]].astype(str) for f in runs.values()], ignore_index=True).drop_duplicates())
        keys = pd.MultiIndex.from_arrays([plan["qid"].astype(str), plan["docno"].astype(str)])
        absent = ~keys.isin(retrieved)
        if absent.any():
            i = int(np.flatnonzero(absent)[0])
            raise InputError(f"plan row {i}: qid={keys[i][0]!r} docno={keys[i][1]!r} was not retrieved by any run "
                             f"of the session ({int(absent.sum())} such pair(s)); plan the sample on pairs the "
                             f"runs retrieve")
        weight = plan["pi"].to_numpy(dtype=np.float64) if "pi" in plan.columns else np.ones(len(plan))
        self._queue = [(str(q), str(d), float(w)) for q, d, w in zip(plan["qid"], plan["docno"], weight)]
        self._done: set[tuple[str, str]] = set()

    def propose(self, n: int | None = None) -> list[tuple[str, str, float]]:
        """The next ``n`` (default 1) planned pairs not yet judged or bypassed, as ``(qid, docno, pi)``."""
        n = 1 if n is None else int(n)
        return [item for item in self._queue if (item[0], item[1]) not in self._done][:n]

    def record(self, qid: Any, docno: Any, label: float) -> None:
        self._inner.record(qid, docno, label)
        self._done.add((str(qid), str(docno)))

    def bypass(self, qid: Any, docno: Any) -> None:
        self._inner.bypass(qid, docno)
        self._done.add((str(qid), str(docno)))

    def replay(self, actions: Any, qids: Any, docnos: Any, labels: Any, weights: Any) -> None:
        """A session's committed steps, applied to the wrapped selector at once and marked done in the plan."""
        self._inner.replay(actions, qids, docnos, labels, weights)
        self._done.update((str(q), str(d)) for q, d in zip(qids, docnos))

    def __getattr__(self, name: str) -> Any:     # bounds, system_bounds, judged_qrels ... of the wrapped selector
        if name.startswith("_"):    # private hooks would bypass the plan's bookkeeping
            raise AttributeError(name)
        return getattr(self._inner, name)


def planned_selector(plan: pd.DataFrame) -> Any:
    """A ``selector_factory`` for :class:`~pyterrier_noise.selection.JudgingSession` that serves the
    planned pairs (``GoldSample.to_frame(table)``) to the human judges, in order.

    Pass the same factory when the session is reopened (the plan is not stored in the session file).
    """
    frame = plan.copy()
    return lambda runs, **config: PlannedSelector(runs, frame, **config)
