"""Cheap judges, honest conclusions: :func:`cheap_experiment`, a ``pt.Experiment``-shaped table of
bias-corrected scores with intervals from cheap (LLM or crowd) labels plus a small gold sample.

Methods (see :mod:`.estimators`): ``naive`` (today's practice), ``goldberg`` (Goldberg et al.
2017), ``ppi`` (Angelopoulos et al. 2023), ``ppi++`` (Angelopoulos, Duchi and Zrnic 2023) and
``gold`` (the gold sample alone).  Output frames:

* ``systems``: ``name, method`` then, for each measure ``M``, columns ``M`` (estimate),
  ``M se``, ``M lo``, ``M hi`` (the ``1 - alpha`` interval);
* ``pairs``: ``name, baseline, method`` then ``M`` (difference name minus baseline), ``M se``,
  ``M lo``, ``M hi``, ``M p-value`` (two-sided; by default paired over topics, the naive one the
  paired t-test), and with ``correction=`` also ``M p-value corrected`` and ``M reject``.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_probability
from .._vocab import CORRECTIONS, RUN_ORDERS, SCOPES, CheapMethod, Correction, Design, Scope
from ..engine import AlignedRuns
from ._common import _warn
from .ap_pair import AP_FAMILIES
from .design import GoldSample
from .estimators import GOLDBERG_RANK_BINS, METHODS, CheapStudy, p_value

__all__ = ["cheap_experiment", "CheapResult", "plan_gold_sample", "measure_range", "rankings"]


@dataclass(eq=False)
class CheapResult:
    """The result of :func:`cheap_experiment`: ``systems`` and ``pairs`` frames, the design used."""

    systems: pd.DataFrame
    pairs: pd.DataFrame
    design: str
    scope: str
    measures: list[str]
    n_gold: int
    study: CheapStudy = field(repr=False)

    def ranking(self, measure: str | None = None, method: CheapMethod = "ppi++", alpha: float = 0.05,
                correction: Correction = "holm") -> pd.DataFrame:
        """The runs ranked by ``method``'s estimate of ``measure``, each with a set of ranks that holds
        for every run at once with probability about ``1 - alpha``: ``rank lo`` is 1 plus the number of
        runs significantly better than it, ``rank hi`` the number of runs minus those significantly
        worse, with the pairs' p-values (paired over topics by default, see ``test``) adjusted by
        ``correction`` (Holm 1979 by default: family-wise error over all pairs, hence simultaneous).
        A simpler, more conservative method than prediction-powered ranking (Chatzi et al. 2024)."""
        from ..stats import correct_pvalues
        measure = measure or self.measures[0]
        if measure not in self.measures:
            raise InputError(f"measure {measure!r} is not one of {self.measures}")
        check_choice("method", method, sorted(set(self.systems["method"])))
        alpha = check_probability("alpha", alpha)
        sys_ = self.systems[self.systems["method"] == method].reset_index(drop=True)
        pr = self.pairs[self.pairs["method"] == method]
        names = list(sys_["name"])
        pos = {n: k for k, n in enumerate(names)}
        i, j = pr["name"].map(pos).to_numpy(dtype=np.int64), pr["baseline"].map(pos).to_numpy(dtype=np.int64)
        p = pr[f"{measure} p-value"].to_numpy(dtype=np.float64)
        sig = np.zeros(len(p), dtype=bool)
        finite = np.isfinite(p)
        if finite.any():
            sig[finite] = correct_pvalues(p[finite], correction) <= alpha
        d = pr[measure].to_numpy(dtype=np.float64)
        R = len(names)
        better = np.bincount(i[sig & (d < 0)], minlength=R) + np.bincount(j[sig & (d > 0)], minlength=R)
        worse = np.bincount(i[sig & (d > 0)], minlength=R) + np.bincount(j[sig & (d < 0)], minlength=R)
        est = sys_[measure].to_numpy(dtype=np.float64)
        out = pd.DataFrame({"name": names, measure: est, "rank": pd.Series(-est).rank(method="min").to_numpy(),
                            "rank lo": 1 + better, "rank hi": R - worse})
        return out.sort_values(["rank", "name"]).reset_index(drop=True)

    def plot(self, measure: str | None = None, save: Any = None) -> Any:
        """Intervals per system, one marker colour per method (a matplotlib Figure)."""
        from .._plot import figure, save as save_fig
        measure = measure or self.measures[0]
        if measure not in self.measures:
            raise InputError(f"measure {measure!r} is not one of {self.measures}")
        df = self.systems.dropna(subset=[measure])
        names = list(dict.fromkeys(df["name"]))
        order = (df[df["method"] == df["method"].iloc[0]].sort_values(measure)["name"].tolist()
                 if len(df) else names)
        methods = list(dict.fromkeys(df["method"]))
        fig = figure(7.5, max(2.5, 0.22 * len(order) + 1.2))
        ax = fig.add_subplot(1, 1, 1)
        pos = {n: i for i, n in enumerate(order)}
        for k, m in enumerate(methods):
            d = df[df["method"] == m]
            y = d["name"].map(pos).to_numpy() + (k - (len(methods) - 1) / 2) * 0.8 / max(len(methods), 1)
            ax.errorbar(d[measure], y, xerr=[d[measure] - d[f"{measure} lo"], d[f"{measure} hi"] - d[measure]],
                        fmt="o", ms=3, lw=1, capsize=0, label=m)
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels(order, fontsize=7)
        ax.set_xlabel(f"{measure} ({self.scope} scope, {self.design} design, {self.n_gold} gold labels)")
        if methods:                  # a measure no method could estimate (NaN) has nothing to label
            ax.legend(fontsize=7, loc="lower right")
        return save_fig(fig, save)


def _gold_rows(table: Any, gold: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Table row and gold label of every gold pair; every gold pair must be a cheap-judged pair."""
    key = table.frame[["qid", "docno"]].assign(row=np.arange(len(table)))
    m = gold.merge(key, on=["qid", "docno"], how="left")
    missing = m["row"].isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"gold qrels row {i}: pair qid={m['qid'].iloc[i]!r} docno={m['docno'].iloc[i]!r} has no "
                         f"cheap label ({int(missing.sum())} such pair(s)); the gold sample must be drawn from the "
                         f"cheap-judged pairs")
    return m["row"].to_numpy(dtype=np.int64), m["label"].to_numpy(dtype=np.float64)


#: an undeclared gold sample whose plausibility as a simple random sample (:func:`srs_plausibility`) is below
#: the first is analysed with a warning, below the second refused
SRS_WARN_P, SRS_REFUSE_P = 1e-3, 1e-9
_ADVICE = ("pass the design it was drawn by (calibrate --sample design.tsv, from --plan), judge a random sample "
           "(calibrate --plan N --design uniform), or declare it a simple random sample (--sample srs)")


def _design(table: Any, rows: np.ndarray, sample: Any, importance: np.ndarray) -> tuple[str, Any]:
    """The design: the given sample, whole topics (topic design) or a simple random sample of pairs,
    post-stratified (:func:`~pyterrier_noise.correction.design.post_stratify`)."""
    from .design import post_stratify, srs_plausibility
    N = len(table)
    declared = isinstance(sample, str) and sample.lower() in ("srs", "uniform")
    if isinstance(sample, (str, Path)) and not declared:
        src = str(sample)
        sample = GoldSample.from_design_frame(table, pd.read_csv(sample, sep="\t", dtype={"qid": str, "docno": str}),
                                              rows, source=src)
    elif isinstance(sample, pd.DataFrame):
        sample = GoldSample.from_design_frame(table, sample, rows)
    if isinstance(sample, GoldSample):
        if sample.n_rows != N or not np.array_equal(np.sort(rows), sample.rows):
            raise InputError(f"the gold qrels must label exactly the {len(sample)} pairs of the sample "
                             f"(got {len(rows)} gold pairs)")
        return "pairs", sample
    per_topic = np.bincount(table.topic_index[rows], minlength=len(table.topics))
    size = np.diff(table.topic_start)
    gold_topics = np.flatnonzero(per_topic > 0)
    if not declared and len(gold_topics) >= 2 and (per_topic[gold_topics] == size[gold_topics]).all():
        _warn(f"the gold qrels judge every cheap-judged pair of {len(gold_topics)} topics and none of the other "
              f"{len(size) - len(gold_topics)}: analysed by the topic design (those topics a random sample of the "
              f"topics); if the gold pairs were drawn at random among the pairs instead, pass --sample srs "
              f"(sample='srs')")
        return "topics", gold_topics
    if len(rows) < 2:
        raise InputError(f"a gold sample of {len(rows)} pair(s): at least 2 are needed for a variance")
    if not declared:
        test = srs_plausibility(rows, table.labels, importance, table.topic_index)
        if test["p"] < SRS_WARN_P:
            worst = min((k for k in test if k != "p"), key=test.get)
            what = {"importance": "concentrated in some ranks (importance to the runs' scores)",
                    "cheap label": "spread over the cheap labels unlike the cheap-judged pairs",
                    "topic": "spread over the topics unlike the cheap-judged pairs"}[worst]
            msg = (f"the {len(rows)} gold pairs do not look like a simple random sample of the {N} cheap-judged "
                   f"pairs: they are {what} (p = {test['p']:.2g}); estimates that take them for one are biased")
            if test["p"] < SRS_REFUSE_P:
                raise InputError(f"{msg}; {_ADVICE}")
            _warn(f"{msg}; {_ADVICE}")
    return "pairs", post_stratify(table.labels, rows, importance)


def measure_range(spec: Any) -> tuple[float, float]:
    """The range of a measure's values: ``[0, 1]`` for P@k, RBP, nDCG, AP, RR, INST and INSQ, ``[0, inf)`` for DCG.
    :func:`cheap_experiment` clips its estimates and interval ends to it (and differences to
    ``[-(b - a), b - a]``); the standard errors and p-values are those of the unclipped estimates."""
    return (0.0, float("inf")) if spec.family == "DCG" else (0.0, 1.0)


def _read_labels(cheap: Any, gold: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cheap labels and the gold labels, read and checked."""
    from ..io import read_qrels
    from ..io.cheap import check_grades, read_cheap_qrels
    cheap_q = read_cheap_qrels(cheap)
    gold_q = read_qrels(gold)
    gold_path = Path(gold) if isinstance(gold, (str, os.PathLike)) else None
    check_grades(gold_q, str(gold_path) if gold_path is not None else "gold labels", path=gold_path)
    return cheap_q, gold_q


def _measure_specs(measures: Sequence[Any]) -> tuple[list[str], list[Any]]:
    """The measures' names and specs; InputError on a tie policy other than trec_eval's order."""
    from ..measures import to_spec
    mnames = [m if isinstance(m, str) else str(m) for m in measures]
    specs = []
    for m in measures:
        spec, ties = to_spec(m)
        if ties not in RUN_ORDERS:
            raise InputError(f"measure {m!r}: tie policy {ties!r} is not supported here (trec_eval order only)")
        specs.append(spec)
    return mnames, specs


def _soft_gain(table: Any, cheap_q: pd.DataFrame) -> np.ndarray:
    """The cheap labels' ``probability`` column in the table's row order (``soft=True``)."""
    if "probability" not in cheap_q.columns:
        raise InputError("soft=True (--soft) needs a probability column in the cheap labels (the judge's "
                         "probability that the pair is relevant; llm-judge writes one from the logprobs)")
    soft_gain = table.frame[["qid", "docno"]].merge(cheap_q[["qid", "docno", "probability"]],
                                                    on=["qid", "docno"], how="left")["probability"].to_numpy()
    if ((soft_gain < 0) | (soft_gain > 1)).any():
        raise InputError("soft=True: the cheap labels' probability column must hold probabilities in [0, 1]")
    return soft_gain


def _estimates(study: CheapStudy, table: Any, rows: np.ndarray, labels: np.ndarray, design: str, smp: Any,
               methods: Sequence[str], scope: str, test: str, soft_gain: np.ndarray | None) -> tuple[dict, dict]:
    """The estimates in ``scope``, and in ``test``'s scope for the p-values."""
    cheap_labels = table.labels
    if design == "pairs":
        order = np.argsort(rows)
        given = labels[order]
    else:
        given = np.full(len(table), np.nan)
        given[rows] = labels
    est = study.estimate(cheap_labels, given, smp, methods=methods, scope=scope, soft=soft_gain)
    if test == scope:
        est_test = est
    else:                  # the p-values' scope: the same estimates, another variance (warned once already)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est_test = study.estimate(cheap_labels, given, smp, methods=methods, scope=test, soft=soft_gain)
    return est, est_test


def _tables(run_names: Sequence[str], study: CheapStudy, methods: Sequence[str], mnames: list[str],
            specs: list[Any], est: dict, est_test: dict, design: str, alpha: float, correction: Any,
            correction_alpha: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:class:`CheapResult`'s ``systems`` and ``pairs`` frames from the estimates (``est_test``: the
    p-values' scope); one warning names the estimates no method could give (NaN)."""
    sys_rows, pair_rows = [], []
    unavailable: list[str] = []
    for m in methods:
        srow = pd.DataFrame({"name": run_names, "method": m})
        prow = pd.DataFrame({"name": np.asarray(run_names)[study.i], "baseline": np.asarray(run_names)[study.j],
                             "method": m})
        for name, spec in zip(mnames, specs):
            e = est[spec]
            v, se = e.systems[m]
            dv, dse = e.pairs[m]
            ap_minimum = design == "pairs" and spec.family in AP_FAMILIES and m != "goldberg"   # warned in ap_pair
            if np.isnan(v).all() and not ap_minimum:
                unavailable.append(f"{m} for {name}")
            q, dq = e.quantile(m, "systems", alpha), e.quantile(m, "pairs", alpha)
            lo, hi = v - q * se, v + q * se
            dlo, dhi = dv - dq * dse, dv + dq * dse
            et = est_test[spec]
            tv, tse = et.pairs[m]
            p = p_value(tv, tse, et.df[m][1] if et.df and m in et.df else None)
            a, b = measure_range(spec)          # estimates and interval ends in the measure's range
            v, lo, hi = np.clip(v, a, b), np.clip(lo, a, b), np.clip(hi, a, b)
            dv, dlo, dhi = np.clip(dv, a - b, b - a), np.clip(dlo, a - b, b - a), np.clip(dhi, a - b, b - a)
            srow[name], srow[f"{name} se"], srow[f"{name} lo"], srow[f"{name} hi"] = v, se, lo, hi
            prow[name], prow[f"{name} se"], prow[f"{name} lo"], prow[f"{name} hi"] = dv, dse, dlo, dhi
            prow[f"{name} p-value"] = p
            if correction is not None:
                from ..stats import correct_pvalues
                pc = correct_pvalues(p, correction) if len(p) else p
                prow[f"{name} p-value corrected"] = pc
                with np.errstate(invalid="ignore"):
                    prow[f"{name} reject"] = pc <= correction_alpha
        sys_rows.append(srow)
        pair_rows.append(prow)
    if unavailable:
        why = ("under the pair design only P@k, DCG@k and RBP have an unbiased per-document correction, and "
               "nDCG@k and AP ratio estimators (not Goldberg et al.'s: their corrected gains are per document, "
               "and nDCG's ideal and AP's precisions and number of relevant documents are not sums of "
               "per-document gains); RR needs the topic design"
               if design == "pairs" else "Goldberg et al.'s correction needs a sample of pairs")
        _warn(f"not estimated (NaN): {', '.join(unavailable)}; {why}")
    return pd.concat(sys_rows, ignore_index=True), pd.concat(pair_rows, ignore_index=True)


def cheap_experiment(runs: Any, cheap: Any, gold: Any, measures: Sequence[Any], *,
                     methods: Sequence[str] = ("naive", "goldberg", "ppi", "ppi++", "gold"),
                     sample: GoldSample | pd.DataFrame | str | Path | None = None, scope: Scope = "collection",
                     alpha: float = 0.05,
                     names: Sequence[str] | None = None,
                     goldberg_rank_bins: Sequence[int] | None = GOLDBERG_RANK_BINS,
                     ap_min_relevant: float | None = None, test: Scope = "topics",
                     correction: Correction | None = None, correction_alpha: float = 0.05,
                     soft: bool = False) -> CheapResult:
    """Scores with intervals per system, and differences with p-values per pair, from cheap labels.

    Args:
        runs: ``{name: results frame}``, a list of frames (with ``names``), run files or a directory.
        cheap: the cheap judge's labels (see :func:`~pyterrier_noise.io.read_cheap_qrels`).
        gold: gold (human) labels of a subset of the cheap-judged pairs (qrels).
        measures: in ir_measures syntax or as measure objects, e.g. ``["P@10", "RBP(p=0.8)", "nDCG@10"]``.
        methods: any of ``naive, goldberg, gold, ppi, ppi++``.
        sample: the :class:`~pyterrier_noise.correction.GoldSample` the gold pairs were drawn by
            (its inclusion probabilities weight them), or its design frame (:func:`plan_gold_sample`,
            :meth:`GoldSample.design_frame`; a frame or a TSV file), or ``"srs"``: a simple random
            sample of the cheap-judged pairs, declared.  Default (``None``): whole topics if the gold
            qrels judge every cheap-judged pair of at least two topics (topic design, with a
            warning), else a simple random sample of pairs -- checked (:func:`srs_plausibility`:
            warned below p = 1e-3, refused below 1e-9).  A simple random sample is post-stratified
            by the cheap label and the pair's rank weight (:func:`post_stratify`).
        scope: ``"collection"``: intervals for the mean over these topics as the gold judge would
            score them; ``"topics"``: for the population of topics (adds topic sampling).
        alpha: the intervals are ``1 - alpha``.
        goldberg_rank_bins: Goldberg et al.'s correction is fitted within bins of each pair's best rank
            over the runs (upper edges; default ``[10]``: ranks 1-10 and 11+), one confusion matrix
            per bin; ``None``: one matrix for every pair, as in the paper (see :class:`CheapStudy`).
        ap_min_relevant: AP under the pair design needs this many gold-relevant sampled pairs per
            topic on average (default ``None``: 10; 0 turns the check off; see :class:`CheapStudy`).
        test: the pairs' p-values: ``"topics"`` (default), paired over topics -- the difference's
            variance includes topic sampling, the question a paired t-test over topics answers and
            the one researchers usually mean; ``"collection"``: the difference on these topics as
            the gold judge would score them (only the gold sample's noise).  The intervals follow
            ``scope``.
        correction: adjust each method's and measure's p-values over the pairs of runs:
            ``"bonferroni"``, ``"holm"`` (Holm 1979) or ``"fdr_bh"`` (Benjamini and Hochberg 1995),
            as ``pt.Experiment(correction=...)``; adds ``M p-value corrected`` and ``M reject``
            (``p-value corrected <= correction_alpha``).
        soft: use the cheap labels' ``probability`` column (the judge's probability that the pair is
            relevant, e.g. ``llm-judge``'s, from the LLM's label distribution) as the prediction of
            P@k's and RBP's binary gains in ``ppi`` and ``ppi++`` under the pair design, instead of
            the hard label's gain (see :meth:`CheapStudy.estimate`); other measures keep hard labels.

    Pair design: P@k, DCG@k and RBP by every method; nDCG@k by every method but ``goldberg`` (a
    ratio estimator: rectified DCG over the ideal DCG of the rectified grade counts, per topic,
    with a linearised variance); AP by every method but ``goldberg`` (:mod:`.ap_pair`: prediction-
    powered inference on the per-topic ratio of AP's numerator and number of relevant documents,
    linearised variance); RR by ``naive`` only (use the topic design).  Topic design: every measure by ``naive``, ``gold``,
    ``ppi`` and ``ppi++``; ``goldberg`` needs the pair design.  Estimates a method cannot give are
    NaN, with one warning that names them.

    (Long for its arguments' documentation; the body is about 35 lines of named steps.)
    """
    methods = tuple(methods)
    for m in methods:
        check_choice("method", m, METHODS)
    check_choice("scope", scope, SCOPES)
    check_choice("test", test, SCOPES)
    if correction is not None:
        check_choice("correction", correction, CORRECTIONS)
    alpha = check_probability("alpha", alpha)
    correction_alpha = check_probability("correction_alpha", correction_alpha)
    cheap_q, gold_q = _read_labels(cheap, gold)
    if isinstance(runs, (list, tuple)) and runs and isinstance(runs[0], pd.DataFrame):
        names = list(names) if names is not None else [f"run{i}" for i in range(len(runs))]
        runs = dict(zip(names, runs))
    mnames, specs = _measure_specs(measures)
    aligned = AlignedRuns.build(runs, cheap_q[["qid", "docno", "label"]], ties="trec_eval")
    study = CheapStudy(aligned, specs, goldberg_rank_bins=goldberg_rank_bins, ap_min_relevant=ap_min_relevant)
    table = aligned.table
    rows, labels = _gold_rows(table, gold_q)
    importance = study.importance()
    if np.ptp(importance) == 0:      # no linear measure: the pair's best rank over the runs tells its weight
        importance = np.where(np.isfinite(study.best_rank), 1.0 / study.best_rank, 0.0)
    design, smp = _design(table, rows, sample, importance)
    soft_gain = _soft_gain(table, cheap_q) if soft else None
    est, est_test = _estimates(study, table, rows, labels, design, smp, methods, scope, test, soft_gain)
    systems, pairs = _tables(aligned.run_names, study, methods, mnames, specs, est, est_test, design, alpha,
                             correction, correction_alpha)
    n_gold = len(rows)
    res = CheapResult(systems, pairs, design if design == "topics" else smp.design, scope, mnames, n_gold, study)
    return res


def plan_gold_sample(runs: Any, cheap: Any, measures: Sequence[Any], n: int, *, design: Design = "stratified",
                     n_bins: int = 3, seed: int | None = 0) -> pd.DataFrame:
    """Plan which cheap-judged pairs the humans should judge: :func:`~pyterrier_noise.correction.sample_pairs`
    on the pairs of ``cheap``, with each pair's importance its total rank weight in ``runs`` under the
    linear ``measures`` (P@k, DCG@k, RBP; equal weights if there is none) and, for ``design="active"``,
    the cheap judge's probability column (when the labels have one; Takehi et al. 2024).

    Returns the design frame (:meth:`GoldSample.design_frame`): every cheap-judged pair with ``qid, docno,
    pi, stratum, planned, design``; the rows with ``planned == 1`` go to the human judges, and the frame
    goes back to :func:`cheap_experiment` as ``sample=`` with their labels."""
    from ..io.cheap import read_cheap_qrels
    from ..measures import to_spec
    from .design import sample_pairs

    cheap_q = read_cheap_qrels(cheap)
    specs = [to_spec(m)[0] for m in measures]
    aligned = AlignedRuns.build(runs, cheap_q[["qid", "docno", "label"]], ties="trec_eval")
    study = CheapStudy(aligned, specs)
    table = aligned.table
    prob = None
    if design == "active" and "probability" in cheap_q.columns:
        prob = table.frame[["qid", "docno"]].merge(cheap_q[["qid", "docno", "probability"]], on=["qid", "docno"],
                                                   how="left")["probability"].to_numpy(dtype=np.float64)
        if np.isnan(prob).any():
            _warn(f"{int(np.isnan(prob).sum())} cheap-judged pair(s) have no probability; taken as 0.5 "
                  f"(the most uncertain)")
            prob = np.where(np.isnan(prob), 0.5, prob)
    smp = sample_pairs(table.labels, n, design=design, importance=study.importance(), probability=prob,
                       n_bins=n_bins, seed=seed)
    return smp.design_frame(table)


def rankings(result: CheapResult, alpha: float = 0.05, correction: Correction = "holm") -> pd.DataFrame:
    """:meth:`CheapResult.ranking` of every measure and method, stacked (``measure, method, name, estimate,
    rank, rank lo, rank hi``); a measure a method did not estimate is left out."""
    frames = []
    for m in result.measures:
        for meth in dict.fromkeys(result.systems["method"]):
            r = result.ranking(m, meth, alpha, correction)
            if r[m].notna().any():
                frames.append(r.rename(columns={m: "estimate"}).assign(measure=m, method=meth))
    cols = ["measure", "method", "name", "estimate", "rank", "rank lo", "rank hi"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def save_result(result: CheapResult, directory: Any, alpha: float = 0.05, correction: Correction = "holm") -> list[str]:
    """Write ``systems.tsv``, ``pairs.tsv``, ``ranking.tsv`` (:func:`rankings` at ``alpha`` with
    ``correction``) and one ``intervals-<measure>.png`` per measure into an open
    :class:`~pyterrier_noise._output.OutputDirectory`; returns the file names."""
    files = []
    directory.write("systems.tsv", result.systems.to_csv(sep="\t", index=False, float_format="%.6g"))
    directory.write("pairs.tsv", result.pairs.to_csv(sep="\t", index=False, float_format="%.6g"))
    files += ["systems.tsv", "pairs.tsv"]
    directory.write("ranking.tsv", rankings(result, alpha, correction).to_csv(sep="\t", index=False,
                                                                              float_format="%.6g"))
    files.append("ranking.tsv")
    for m in result.measures:
        safe = "".join(c if c.isalnum() or c in "@.=-" else "_" for c in m)
        name = f"intervals-{safe}.png"
        with directory.staging() as stage:
            result.plot(m, save=Path(stage) / name)
        files.append(name)
    return files
