"""The report's sections, one per capability, each with figures, tables and one or two sentences
computed from the data that say what to conclude.

* :func:`scores_section`: scores with their uncertainty (RBP base and residual; Moffat & Zobel 2008);
* :func:`robustness_section`: noisy judges (Rashidi, Zobel & Moffat 2023; Webber, Chandar &
  Carterette 2012), with the p-value correction used;
* :func:`selection_section`: which documents to judge next (Moffat, Webber & Zobel 2007);
* :func:`ties_section` and :func:`tie_stats_section`: tied scores (Yang 2019);
* :func:`correction_section`: scores corrected for a calibrated judge's errors (Goldberg et al. 2017).

:func:`build_report` puts together the sections for what the caller provides.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from . import interactive
from .html import Report

#: a run whose residual exceeds this could still move by a large amount
LARGE_RESIDUAL = 0.2


def _share(x: float) -> str:
    return f"{100 * x:.0f}%"


def _names(items: Sequence[str], most: int = 4) -> str:
    items = [str(i) for i in items]
    if len(items) <= most:
        return ", ".join(items)
    return ", ".join(items[:most]) + f" and {len(items) - most} more"


# -- scores with their uncertainty ------------------------------------------------------------------

def scores_conclusion(base: pd.Series, residual: pd.Series, highlight: Sequence[str] = (),
                      threshold: float = LARGE_RESIDUAL) -> str:
    """What the RBP ranges say: how many runs could still move by more than ``threshold``, which
    of them lie outside the pool, and how many pairs of runs the judgments do not separate."""
    n = len(base)
    big = residual[residual > threshold].index.astype(str)
    marked = set(map(str, highlight))
    words = f"{len(big)} of {n} runs could still move by more than {threshold:g}"
    if len(big) and marked:
        out = [b for b in big if b in marked]
        if len(out) == len(big):
            words += ": all are runs that did not contribute to the pool"
        else:
            words += f": {len(out)} of them did not contribute to the pool"
    elif len(big):
        words += f" ({_names(big)})"
    b = base.to_numpy(float)
    u = b + residual.reindex(base.index).to_numpy(float)
    hi = b[:, None] >= b[None, :]        # i at least as good as j by base
    overlap = hi & (u[None, :] >= b[:, None]) & ~np.eye(n, dtype=bool)   # j's upper reaches i's base
    n_pairs = n * (n - 1) // 2
    not_sep = int(np.triu(overlap | overlap.T, 1).sum())
    best = str(base.idxmax())
    return (f"{words}. {not_sep:,} of {n_pairs:,} pairs of runs are not separated: the lower run's upper bound "
            f"reaches the higher run's base. {best} has the highest base ({base.max():.4f}).")


def scores_section(report: Report, scores: pd.DataFrame, highlight: Sequence[str] = (),
                   rbp: str = "RBP(p=0.8)", residual: str = "RBP residual",
                   heading: str = "Scores with their uncertainty") -> Report:
    """RBP ranges (interactive) and the table of mean scores, with the conclusion."""
    report.section(heading, f"{rbp} counts the judged documents only (its base); the residual is how much it "
                            "could still rise if every unjudged document the run retrieved were relevant "
                            "(Moffat and Zobel 2008).")
    if rbp in scores.columns and residual in scores.columns:
        fig = interactive.rbp_ranges(scores[rbp], scores[residual], highlight=highlight, label=rbp)
        colours = ("Green: runs that contributed to the judging pool; orange: runs that did not. "
                   if len(highlight) else "")
        report.figure(fig, f"{rbp} of each run, from its base (dot) to its upper bound (top of the bar). "
                           f"{colours}Hover a run for its numbers; drag to zoom, double-click to reset.",
                      name="rbp-ranges", conclusion=scores_conclusion(scores[rbp], scores[residual], highlight))
    report.table(scores, caption="Mean scores over all topics (click a heading to sort)")
    return report


# -- noisy judges -----------------------------------------------------------------------------------

def robustness_conclusion(result: Any, measure: str) -> str:
    """How far the ranking and the significance conclusions moved under the perturbed qrels."""
    s = result.summary.set_index("measure").loc[measure]
    sysf = result.systems[result.systems["measure"] == measure]
    width = (sysf["rank_q97.5"] - sysf["rank_q2.5"]).to_numpy(float)
    i = int(np.argmax(width))
    words = (f"Kendall's tau between the perturbed and the unperturbed rankings is {s['kendall_tau']:.3f} on average. "
             f"{sysf['name'].iloc[i]} moves most: between ranks {sysf['rank_q2.5'].iloc[i]:.0f} and "
             f"{sysf['rank_q97.5'].iloc[i]:.0f} in 95% of the replicates")
    moved = int((width > 0).sum())
    words += f"; {moved} of {len(sysf)} runs change rank at all."
    n_sig = int(s["significant_pairs"])
    if n_sig:
        words += (f" Of the {n_sig:,} pairs significant under the unperturbed qrels, a replicate keeps "
                  f"{_share(s['kept_significant'])} of the conclusions, loses {_share(s['lost'])} and reverses "
                  f"{_share(s['reversed'])}.")
    else:
        words += " No pair of runs is significantly different under the unperturbed qrels."
    return words


def robustness_section(report: Report, result: Any, measures: Sequence[str] | None = None,
                       heading: str = "Noisy judges") -> Report:
    """Robustness of scores, rankings and significance under perturbed qrels: per measure the
    replicate distributions and rank intervals (interactive), the ranking agreement table and the
    pair-conclusion table (counts and shares in separate tables)."""
    p = result.params
    R = p["n_replicates"]
    corr = p.get("correction")
    report.section(heading, f"The runs evaluated on {R} replicates of the qrels perturbed by a model of judge "
                            f"error (Rashidi, Zobel and Moffat 2023; Webber, Chandar and Carterette 2012). "
                            f"Significance: paired {p.get('test', 't')}-test over topics at alpha "
                            f"{p.get('alpha', 0.05):g}, "
                            + (f"p-values adjusted by {corr} within each replicate." if corr
                               else "no correction for multiple comparisons."))
    measures = list(measures) if measures is not None else list(result.measures)
    summ = result.summary.set_index("measure")
    agree = summ[[c for c in ("kendall_tau", "tau_ap", "rbo") if c in summ.columns]]
    report.table(agree, caption="Agreement of each replicate's ranking with the unperturbed ranking (mean over "
                                "replicates)")
    counts = summ[["n_pairs", "significant_pairs"]].rename(columns={"n_pairs": "pairs of runs"})
    report.table(counts, caption="Pairs of runs, and those significantly different under the unperturbed qrels "
                                 "(counts)", explain={"pairs of runs": "count: pairs of runs compared"})
    shares = summ[[c for c in ("kept_significant", "lost", "reversed", "gained") if c in summ.columns]]
    report.table(shares, caption="What the replicates do to the significance conclusions (shares of "
                                 "pair-replicate conclusions)")
    for m in measures:
        report.figure(interactive.replicate_distributions(result, m),
                      f"{m} of each run under the unperturbed qrels (black) and its spread over the {R} "
                      "perturbed qrels (purple box: quartiles, whiskers: range). Hover a dot for the run's numbers.",
                      name=f"replicate-distributions-{_ident(m)}", conclusion=robustness_conclusion(result, m))
        report.figure(interactive.rank_intervals(result, m),
                      f"{m}: each run's rank under the unperturbed qrels against its median rank over the "
                      "replicates; the bar holds 95% of the replicates, the grey line is 'same rank'.",
                      name=f"rank-intervals-{_ident(m)}")
    return report


def _ident(text: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "measure"


# -- which documents to judge next ------------------------------------------------------------------

def _method_label(m: Any) -> str:
    return f"Method {m}" if str(m) in ("A", "B", "C") else ("depth pooling" if m == "pool" else str(m))


def selection_conclusion(summary: pd.DataFrame) -> str:
    """Which method found most and which separated most top pairs at the last checkpoint."""
    s = summary
    if "p_eval" in s.columns:
        s = s[np.isclose(s["p_eval"], s["p_eval"].iloc[0])]
    last = s.sort_values("judgments").groupby("method", sort=False).tail(1).set_index("method")
    label = {m: _method_label(m) for m in last.index}
    best = last["relevant"].idxmax()
    words = (f"At {int(last['judgments'].max()):,} judgments {label[best]} found the most relevant documents "
             f"({int(last.loc[best, 'relevant']):,})")
    lowest = last["top_residual"].idxmin()
    words += f"; {label[lowest]} left the least uncertainty in the top runs (mean residual {last.loc[lowest, 'top_residual']:.4f})."
    if "separated" in last.columns:
        if (last["separated"].fillna(0) == 0).all():
            words += " No pair of top runs is separated yet: the judgments are too few."
        elif last["judgments"].nunique() == 1:
            order = last["separated"].sort_values(ascending=False)
            words += (f" Share of top pairs separated at {int(last['judgments'].iloc[0]):,} judgments: "
                      + ", ".join(f"{label[m]} {_share(v)}" for m, v in order.items()) + ".")
        else:
            order = last["separated"].sort_values(ascending=False)
            words += " Separated top pairs: " + ", ".join(
                f"{label[m]} {_share(v)} at {int(last.loc[m, 'judgments']):,} judgments" for m, v in order.items()) + "."
    if "C" in last.index and lowest != "C" and len(last) > 1:
        words += (f" Moffat, Webber and Zobel (2007) found Method C best at this; on these data {label[lowest]} "
                  f"is ahead by {last.loc['C', 'top_residual'] - last.loc[lowest, 'top_residual']:.4f} in mean residual.")
    return words


def selection_section(report: Report, summary: pd.DataFrame, systems: pd.DataFrame | None = None,
                      heading: str = "Which documents to judge next", systems_method: str | None = None) -> Report:
    """Judging curves per method (interactive), the run ranges at the end, and the summary table."""
    report.section(heading, "The qrels re-judged in the order chosen by depth pooling and by Moffat, Webber and "
                            "Zobel's (2007) Methods A, B and C: relevant documents found and the uncertainty left "
                            "at each checkpoint.")
    report.figure(interactive.selection_curves(summary),
                  "Relevant documents found (left) and mean RBP residual of the top third of the runs (right) "
                  "against the number of judgments, one colour per method.",
                  name="selection-curves", conclusion=selection_conclusion(summary))
    if systems is not None and len(systems):
        report.figure(interactive.selection_ranges(systems),
                      "RBP of each run at the last checkpoint"
                      + (f" of {_method_label(systems_method)}" if systems_method else "")
                      + ", from its base (dot) to its upper bound (top of the bar).",
                      name="selection-ranges")
    keep = [c for c in ("method", "p_eval", "judgments", "relevant", "mean_residual", "top_residual", "separated",
                        "sig_base_upper") if c in summary.columns]
    shown = summary[keep]
    if "p_eval" in shown.columns and shown["p_eval"].nunique() == 1:
        shown = shown.drop(columns="p_eval")
    report.table(shown, caption="The judging simulation at each checkpoint", index=False,
                 explain={"p_eval": "RBP persistence the residuals are measured at"})
    return report


# -- ties ------------------------------------------------------------------------------------------

def _rank_changes(before: pd.Series, after: pd.Series) -> int:
    """How many runs take another rank (highest score first, ties sharing the best rank) by ``after``
    than by ``before``."""
    return int((before.rank(ascending=False, method="min") != after.rank(ascending=False, method="min")).sum())


def ties_conclusion(table: pd.DataFrame, measure: str) -> str:
    """How much the arbitrary order of tied documents can change the scores."""
    t = table[table["measure"] == measure]
    spread = (t["optimistic"] - t["pessimistic"]).to_numpy(float)
    i = int(np.argmax(spread))
    moved = _rank_changes(t["original"], t["expected"])
    return (f"The order of tied documents can change {measure} by {spread.mean():.4f} on average and by up to "
            f"{spread[i]:.4f} ({t['system'].iloc[i]}); {moved} of {len(t)} runs rank differently by their "
            "expected score than as submitted.")


def ties_section(report: Report, table: pd.DataFrame, heading: str = "Tied scores") -> Report:
    """Scores as submitted and over the orders of tied documents, per measure (``table``: columns
    system, measure, original, pessimistic, expected, optimistic)."""
    report.section(heading, "Documents that share a score are tied: their order is arbitrary, so the score "
                            "can be anything between the worst order (pessimistic) and the best (optimistic); "
                            "expected averages over every order (Yang 2019).")
    for m in pd.unique(table["measure"]):
        report.figure(interactive.tie_ranges(table, m), f"{m} of each run as submitted (black cross) and over the "
                      "orders of its tied documents (purple: expected, bar from worst to best order).",
                      name=f"tie-effects-{_ident(str(m))}", conclusion=ties_conclusion(table, m))
    wide = table.assign(spread=table["optimistic"] - table["pessimistic"])
    wide = wide.sort_values(["measure", "original"], ascending=[True, False], kind="stable")
    if wide["measure"].nunique() == 1:
        caption = f"{wide['measure'].iloc[0]} by tie policy"
        wide = wide.drop(columns="measure")
    else:
        caption = "Scores by tie policy"
    report.table(wide, caption=caption, index=False)
    return report


def tie_stats_section(report: Report, stats: Any, heading: str = "Ties in the runs") -> Report:
    """How many tied scores the runs hold (Yang 2019, Table 3.2), per run (interactive) and overall."""
    runs = stats.runs
    report.section(heading, "Documents of one topic with equal scores are tied; trec_eval orders them by "
                            "document number, which is arbitrary (Yang 2019, Sec. 3.2).")
    n_tied = int((runs["share_docs_tied"] > 0).sum())
    if n_tied == 0:
        report.conclusion(f"None of the {len(runs)} runs has tied scores: every document's score differs from the "
                          "others' in its topic, so the tie policy cannot change any measure.")
        return report
    share = float((runs["share_docs_tied"] * runs.get("n_docs", 1)).sum() / runs["n_docs"].sum()) \
        if "n_docs" in runs.columns else float(runs["share_docs_tied"].mean())
    top = runs.sort_values("share_docs_tied", ascending=False).iloc[0]
    report.figure(interactive.tie_shares(runs), "Share of each run's documents tied with another document of the "
                  "same topic, most first. Hover a bar for the run's counts.", name="tie-shares",
                  conclusion=(f"{n_tied} of {len(runs)} runs have tied scores; {_share(share)} of all documents are "
                              f"tied. {top['name']} has the most ({_share(top['share_docs_tied'])} of its documents)."))
    summary = stats.summary.rename_axis("kind")
    report.table(summary, caption="Share of runs, run-topic rankings and documents with ties (Yang 2019, Table 3.2)",
                 explain={"kind": "what is counted", "share_runs": "share of runs with at least one",
                          "share_topics": "share of (run, topic) rankings with at least one",
                          "share_docs": "share of documents involved"})
    keep = [c for c in ("name", "n_topics", "n_topics_with_ties", "share_docs_tied", "n_tied_groups",
                        "largest_group", "gm_first_tie_rank") if c in runs.columns]
    report.table(runs[keep], caption="Ties per run", index=False)
    return report


# -- correction for noisy judges --------------------------------------------------------------------

def correction_conclusion(frame: pd.DataFrame, measure: str) -> str:
    """How much correcting for the judge's errors moves the scores and the order of the runs."""
    f = frame[frame["measure"] == measure]
    shift = (f["corrected"] - f["naive"]).to_numpy(float)
    i = int(np.argmax(np.abs(shift)))
    moved = _rank_changes(f["naive"], f["corrected"])
    return (f"Correcting for the judge's errors changes {measure} by {shift.mean():+.4f} on average and by up to "
            f"{shift[i]:+.4f} ({f['name'].iloc[i]}); {moved} of {len(f)} runs take another rank than by the noisy "
            "labels.")


def correction_section(report: Report, frame: pd.DataFrame, heading: str = "Correction for noisy judges") -> Report:
    """Scores corrected for a calibrated judge's errors (the frame of
    :func:`pyterrier_noise.correction.correct_experiment`; Goldberg et al. 2017)."""
    report.section(heading, "Scores from a noisy judge's labels corrected with the judge's confusion matrix "
                            "against a gold judge, with delta-method confidence intervals (Goldberg et al. 2017).")
    for m in pd.unique(frame["measure"]):
        report.figure(interactive.corrected_scores(frame, m),
                      f"{m} of each run from the noisy labels (black cross) and corrected (purple, with its "
                      "confidence interval). Hover a run for its numbers.",
                      name=f"corrected-{_ident(str(m))}", conclusion=correction_conclusion(frame, m))
    keep = [c for c in ("name", "measure", "n_queries", "naive", "corrected", "ci_low", "ci_high") if c in frame]
    report.table(frame[keep].sort_values(["measure", "corrected"], ascending=[True, False], kind="stable"),
                 caption="Corrected scores", index=False,
                 explain={"n_queries": "count: topics", "naive": "mean score from the noisy judge's labels",
                          "corrected": "the score corrected for the judge's errors (Goldberg et al. 2017, Eq 14)",
                          "ci_low": "lower end of the confidence interval of the corrected score",
                          "ci_high": "upper end of the confidence interval of the corrected score"})
    return report


# -- a whole report ---------------------------------------------------------------------------------

def build_report(title: str, *, scores: pd.DataFrame | None = None, highlight: Sequence[str] = (),
                 robustness: Any = None, selection: Mapping[str, Any] | Any = None, ties: pd.DataFrame | None = None,
                 tie_stats: Any = None, correction: pd.DataFrame | None = None, command: str | None = None,
                 intro: str | None = None, versions: Any = None) -> Report:
    """A report with a section for each thing given: ``scores`` (a frame of mean scores, index the
    runs, columns ``RBP(p=0.8)`` and ``RBP residual``), ``robustness`` (a RobustnessResult),
    ``selection`` (a SimulationResult, or a summary frame of several methods), ``ties`` (scores
    by tie policy), ``tie_stats`` (a TieStats), ``correction`` (the frame of
    :func:`~pyterrier_noise.correction.correct_experiment`), ``versions`` (a VersionsResult)."""
    report = Report(title, command=command)
    if intro:
        report.text(intro)
    if scores is not None:
        scores_section(report, scores, highlight=highlight)
    if robustness is not None:
        robustness_section(report, robustness)
    if selection is not None:
        if isinstance(selection, pd.DataFrame):
            selection_section(report, selection)
        else:
            selection_section(report, selection.summary, selection.systems, systems_method=selection.method)
    if ties is not None:
        ties_section(report, ties)
    if tie_stats is not None:
        tie_stats_section(report, tie_stats)
    if correction is not None:
        correction_section(report, correction)
    if versions is not None:
        from .versions import versions_section
        versions_section(report, versions)
    return report


def write_report(out: str | Path, scores: pd.DataFrame, highlight: Sequence[str] = (),
                 report: Report | None = None, title: str = "pyterrier-noise report",
                 command: str | None = None) -> Path:
    """Write ``out/report.html`` for a frame of mean scores (index: system; columns include
    ``RBP(p=0.8)`` and ``RBP residual``), appending to ``report`` if one was started: the
    interactive RBP ranges with what they mean, and the sortable table of scores."""
    report = report or Report(title)
    if command is not None:
        report.command = command
    scores_section(report, scores, highlight=highlight)
    return report.write(Path(out) / "report.html")
