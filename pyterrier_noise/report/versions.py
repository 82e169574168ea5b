"""The report section of a label-versions experiment (:class:`~pyterrier_noise.experiments.VersionsResult`):
whose judgments change which conclusions, in tables with the conclusion computed from them."""
from __future__ import annotations

from typing import Any

from .html import Report

__all__ = ["versions_conclusion", "versions_section"]

#: words for the columns of the section's tables
EXPLAIN = {
    "kendall_tau": "Kendall's tau_b between the version's ranking of the runs and the reference's (1 = same order)",
    "tau_ap": "tau_AP (Yilmaz, Aslam and Robertson 2008): like tau, with swaps near the top weighing more",
    "rbo": "rank-biased overlap (Webber, Moffat and Zobel 2010), persistence 0.9",
    "max_rank_change": "the largest change of a run's rank between the reference and the version",
    "significant": "count: pairs of runs significantly different under the version",
    "kept": "count: pairs with the same conclusion as under the reference (significant or not)",
    "lost": "count: pairs significant under the reference and not under the version",
    "gained": "count: pairs significant under the version and not under the reference",
    "reversed": "count: pairs significant under both, with the other run winning",
    "common": "count: (topic, document) pairs both versions judged",
    "kappa": "Cohen's kappa (1960) on binary labels (relevant at grade >= 1), common pairs only",
    "kappa_weighted": "Cohen's weighted kappa (1968, linear weights) on the grades, common pairs only",
    "alpha": "Krippendorff's alpha (ordinal) on the grades, common pairs only",
    "a_relevant_unjudged_by_b": "share of the first version's relevant documents the second did not judge",
    "b_relevant_unjudged_by_a": "share of the second version's relevant documents the first did not judge",
}


def versions_conclusion(result: Any, measure: str) -> str:
    """Which version moves the ranking and the conclusions most against the reference."""
    s = result.summary[(result.summary["measure"] == measure) & (result.summary["version"] != result.reference)]
    worst = s.sort_values("kendall_tau").iloc[0]
    words = (f"For {measure}, the version farthest from {result.reference!r} is {worst['version']!r}: Kendall's tau "
             f"{worst['kendall_tau']:.3f}, a run moves by up to {int(worst['max_rank_change'])} ranks")
    ref = result.significance[(result.significance["measure"] == measure)
                              & (result.significance["version"] == result.reference)]
    n_sig = int(ref["significant"].iloc[0])
    words += (f"; of the {n_sig:,} pairs significant under {result.reference!r} it loses {int(worst['lost']):,} "
              f"and reverses {int(worst['reversed']):,}, and it gains {int(worst['gained']):,} others.")
    return words


def versions_section(report: Report, result: Any, heading: str = "Whose judgments?") -> Report:
    """Leaderboard and significance agreement of every version with the reference (per measure),
    and the label agreement of every pair of versions over all topics."""
    p = result.params
    corr = p.get("correction")
    report.section(heading, f"The runs evaluated under {len(result.versions)} label versions of the same "
                            f"{len(result.topics)} topics ({', '.join(result.versions)}); reference "
                            f"{result.reference!r}. Pairs judged in one version and not another: {result.policy}. "
                            f"Significance: paired {p.get('test', 't')}-test over topics at alpha "
                            f"{p.get('correction_alpha', 0.05):g}, "
                            + (f"p-values adjusted by {corr} within each version." if corr
                               else "no correction for multiple comparisons."))
    cols = ["measure", "version", "kendall_tau", "tau_ap", "rbo", "max_rank_change", "significant", "kept", "lost",
            "gained", "reversed"]
    summ = result.summary[result.summary["version"] != result.reference][cols].set_index(["measure", "version"])
    report.table(summ, caption=f"Each version against {result.reference!r}: ranking agreement and the "
                               "significance conclusions on every pair of runs", explain=EXPLAIN)
    for m in result.measures:
        report.conclusion(versions_conclusion(result, m))
    la = result.label_agreement
    overall = la[la["qid"] == "all"].set_index(["version_a", "version_b"])[
        ["common", "kappa", "kappa_weighted", "alpha", "a_relevant_unjudged_by_b", "b_relevant_unjudged_by_a"]]
    report.table(overall, caption="Label agreement of every pair of versions, all topics", explain=EXPLAIN)
    return report
