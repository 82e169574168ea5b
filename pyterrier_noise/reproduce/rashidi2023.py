"""Rashidi, Zobel and Moffat (2023): how stable are RBP and AP system orderings and conclusions under judgment flips?

The paper's main setting (Sec. 5): the top 50 systems by mean RBP(p = 0.95), binary judgments,
100 sets of randomly flipped judgments at TPR 0.93 / FPR 0.07 ("smart neutral" assessor), the RBO
(p = 0.9, the truncated sum to depth 50, :func:`~pyterrier_noise.experiments.ordering_agreement`) and Kendall's tau between each flipped
ordering and the unflipped one, and the share of significant pair conclusions (paired t-test,
p < 0.01) that survive; the paired t-test of RBP's RBO against AP's
(:func:`~pyterrier_noise.experiments.compare_stability`) and each run's RBO with the consensus run
(:func:`~pyterrier_noise.experiments.consensus_similarity`, Sec. 5.4).  Run with :func:`pyterrier_noise.experiments.robustness_experiment` and
:class:`pyterrier_noise.judges.RandomFlips`.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import AlignedRuns, MeasureSpec
from ..experiments import (PAPER_RBO, compare_stability, consensus_similarity, ordering_agreement,
                           robustness_experiment)
from ..judges import RandomFlips, RankBiasedFlips
from .data import data_option, load_collection
from .record import DATA_DIFFERS, NO_NUMBER, NOT_REPRODUCED, REPRODUCED, Reproduction, Row

PAPER = "rashidi2023"
CITATION = "Rashidi, Zobel and Moffat (2023)"
TITLE = "The Impact of Judgment Variability on the Consistency of Offline Effectiveness Measures"
MEASURES = ("AP", "RBP(p=0.95)")
#: mean RBO of the system orderings, TPR 0.93 / FPR 0.07, random flips (Fig. 7 TREC 7; Fig. 8 Robust04 199 topics)
RBO_TREC7 = {"AP": 0.646, "RBP(p=0.95)": 0.945}
RBO_ROBUST = {"AP": 0.742, "RBP(p=0.95)": 0.940}
#: the same with rank-biased flips (Fig. 9 TREC 7; Robust04, topic set unstated)
RBO_RANK_BIASED_TREC7 = {"AP": 0.196, "RBP(p=0.95)": 0.189}
RBO_RANK_BIASED_ROBUST = {"AP": 0.517, "RBP(p=0.95)": 0.629}
#: Table 3, Robust04 (50 topics), random flips: (TPR, FPR) -> mean RBO of AP and of RBP
TABLE3_ROBUST50 = {
    (0.9, 0.01): (0.921, 0.928), (0.9, 0.02): (0.894, 0.926), (0.9, 0.03): (0.870, 0.929), (0.9, 0.05): (0.842, 0.921),
    (0.7, 0.01): (0.872, 0.888), (0.7, 0.02): (0.862, 0.881), (0.7, 0.03): (0.808, 0.874), (0.7, 0.05): (0.823, 0.873)}
N_SYSTEMS = 50
ALPHA = 0.01


def grid_rows(experiment: Any, where: str) -> list[Row]:
    """Table 3's grid (TPR 0.9 and 0.7 x FPR 0.01-0.05, random flips): RBO of AP and RBP per setting,
    and the paper's two trends (RBP above AP in every setting; RBO falling as FPR rises at TPR 0.9)."""
    rows, ours = [], {}
    for (tpr, fpr), printed in TABLE3_ROBUST50.items():
        agree = ordering_agreement(experiment(RandomFlips(tpr, fpr)), p=PAPER_RBO["p"], depth=PAPER_RBO["depth"],
                                   variant="trunc")
        summ = agree.groupby("measure")["rbo"].mean()
        ours[(tpr, fpr)] = (float(summ["AP"]), float(summ["RBP(p=0.95)"]))
        for k, m in enumerate(MEASURES):
            rows.append(Row(f"Table 3 grid, TPR {tpr:g} / FPR {fpr:g}: RBO of {m}", printed[k],
                            "Table 3 (Robust04, 50 topics)", ours[(tpr, fpr)][k], 3, where, DATA_DIFFERS,
                            note="Robust04 runs in the paper"))
    wins = sum(b > a for a, b in ours.values())
    rows.append(Row("Table 3 grid: settings where RBP's RBO is above AP's", 8, "Table 3 (Robust04, 50 topics)",
                    wins, 0, where, REPRODUCED if wins == 8 else NOT_REPRODUCED,
                    note="the paper's claim: RBP orders systems more stably than AP at every error rate"))
    ap = [ours[(0.9, f)][0] for f in (0.01, 0.02, 0.03, 0.05)]
    falls = ap[-1] - ap[0]
    rows.append(Row("Table 3 grid: RBO of AP at FPR 0.05 minus at FPR 0.01 (TPR 0.9)", 0.842 - 0.921,
                    "Table 3 (Robust04, 50 topics)", falls, 3, where, REPRODUCED if falls < 0 else NOT_REPRODUCED,
                    note="the paper's claim: more false positives, less stable orderings"))
    return rows


def consensus_rows(runs: dict, qrels: Any, where: str) -> list[Row]:
    """Sec. 5.4: each run's RBO (p = 0.98) with the consensus run, the top 10 runs by MAP against the others."""
    spec = MeasureSpec("AP")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aligned = AlignedRuns.build(runs, qrels, on_topic_mismatch="ignore")
        means = aligned.evaluate([spec])[spec][:, :, 0].mean(axis=1)
    sim = consensus_similarity(runs, dict(zip(aligned.run_names, means)), top=10, p=0.98)
    g = sim.groupby("group")["rbo"].mean()
    rows = [Row(f"RBO (p = 0.98) with the consensus run, {what}", paper, "Sec. 5.4 (TREC 7)", float(g[grp]), 3,
                where, DATA_DIFFERS, note="TREC 7 in the paper (Robust04: the top runs are not less typical)")
            for grp, what, paper in (("top", "top 10 runs by MAP", 0.358), ("rest", "the other runs", 0.522))]
    diff = float(g["top"] - g["rest"])
    rows.append(Row("consensus RBO: top 10 minus the other runs", 0.358 - 0.522, "Sec. 5.4 (TREC 7)", diff, 3, where,
                    NO_NUMBER, note="the paper's explanation of why rank-biased flips hurt TREC 7 more: there the "
                                    "best runs are least like the consensus; a sign either way describes our data"))
    return rows


def run(data: Path | str, quick: bool = False, progress: bool = False) -> Reproduction:
    """The random-flip stability experiment (100 replicates; 20 with ``quick``)."""
    coll = load_collection(data)
    qrels = coll.qrels.assign(label=(coll.qrels["label"] >= 1).astype(float))   # the paper binarises
    runs = coll.runs
    if len(runs) > N_SYSTEMS:   # the paper's selection: the top 50 by mean RBP(p = 0.95)
        spec = MeasureSpec("RBP", p=0.95)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            means = AlignedRuns.build(runs, qrels).evaluate([spec])[spec][:, :, 0].mean(axis=1)
        names = list(runs)
        keep = [names[i] for i in np.argsort(-means, kind="stable")[:N_SYSTEMS]]
        runs = {n: runs[n] for n in keep}
    n_rep = 20 if quick else 100
    def experiment(model):
        return robustness_experiment(runs, None, qrels, list(MEASURES), model, n_replicates=n_rep, seed=0, rbo_p=0.9,
                                     rbo_variant="trunc", correction_alpha=ALPHA, progress=progress,
                                     on_topic_mismatch="ignore")

    res = experiment(RandomFlips(0.93, 0.07))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # meta-AP announces topics without a relevant document
        biased = experiment(RankBiasedFlips(0.93, 0.07, runs=runs))
    agree = ordering_agreement(res, p=PAPER_RBO["p"], depth=PAPER_RBO["depth"], variant="trunc")
    agree_b = ordering_agreement(biased, p=PAPER_RBO["p"], depth=PAPER_RBO["depth"], variant="trunc")
    s = res.summary.set_index("measure").assign(rbo=agree.groupby("measure")["rbo"].mean())
    sb = biased.summary.set_index("measure").assign(rbo=agree_b.groupby("measure")["rbo"].mean())
    where = (f"{coll.description}: {len(runs)} systems (top by RBP(p = 0.95)), labels binarised at 1, "
             f"{n_rep} flipped replicates")
    rows = []
    for m in MEASURES:
        rows.append(Row(f"RBO (p = 0.9, truncated at depth 50) of the system ordering, {m}", RBO_TREC7[m],
                        "Fig. 7 (TREC 7); Robust04: " + f"{RBO_ROBUST[m]:.3f} (Fig. 8)", float(s.loc[m, "rbo"]), 3,
                        where, DATA_DIFFERS, note="TREC 7 and Robust04 runs in the paper"))
    gap = float(s.loc["RBP(p=0.95)", "rbo"] - s.loc["AP", "rbo"])
    rows.append(Row("RBO of RBP minus RBO of AP", RBO_TREC7["RBP(p=0.95)"] - RBO_TREC7["AP"], "Figs. 7-8",
                    gap, 3, where, REPRODUCED if gap > 0 else NOT_REPRODUCED,
                    note="the paper's claim: under random flips RBP orders systems more stably than AP"))
    test = compare_stability(agree, "RBP(p=0.95)", "AP")
    rows.append(Row("paired t-test of RBO(RBP) vs RBO(AP) over the flipped sets: p-value", 0.05,
                    "Sec. 5.4, Table 3 (significance marks)", test["p_value"], 4, where,
                    REPRODUCED if test["p_value"] < 0.05 and test["more_stable"] == "RBP(p=0.95)" else NOT_REPRODUCED,
                    paper_text="below 0.05 (RBP more stable)",
                    note="the paper marks RBP's RBO significantly above AP's; it prints no p-values"))
    rows += consensus_rows(runs, qrels, where)
    for m in MEASURES:
        rows.append(Row(f"RBO with rank-biased flips, {m}", RBO_RANK_BIASED_TREC7[m],
                        f"Fig. 9 (TREC 7); Robust04: {RBO_RANK_BIASED_ROBUST[m]:.3f}", float(sb.loc[m, "rbo"]), 3,
                        where, DATA_DIFFERS, note="TREC 7 and Robust04 runs in the paper"))
        drop = float(sb.loc[m, "rbo"] - s.loc[m, "rbo"])
        rows.append(Row(f"RBO with rank-biased minus random flips, {m}", RBO_RANK_BIASED_TREC7[m] - RBO_TREC7[m],
                        "Figs. 7 and 9 (TREC 7)", drop, 3, where, REPRODUCED if drop < 0 else NOT_REPRODUCED,
                        note="the paper's claim: rank-biased flips disturb system orderings more than random flips"))
    rows += grid_rows(experiment, where)
    tau_gap = float(s.loc["RBP(p=0.95)", "kendall_tau"] - s.loc["AP", "kendall_tau"])
    for m in MEASURES:
        rows.append(Row(f"Kendall's tau of the system ordering, {m}", None, "Fig. 11 (bars only)",
                        float(s.loc[m, "kendall_tau"]), 3, where, NO_NUMBER))
    rows.append(Row("Kendall's tau of RBP minus that of AP", None, "Fig. 11", tau_gap, 3, where,
                    REPRODUCED if tau_gap > 0 else NOT_REPRODUCED, paper_text="positive",
                    note="the paper's bars show RBP's orderings more stable than AP's by tau too"))
    for m in MEASURES:
        rows.append(Row(f"significant conclusions kept (p < {ALPHA}), {m}", None, "Sec. 5.5, Figs. 12-14",
                        float(s.loc[m, "kept_significant"]), 3, where, NO_NUMBER,
                        note="the paper shows distributions of p-values, not this share"))
    return Reproduction(
        paper=PAPER, citation=CITATION, title=TITLE,
        experiment=(f"robustness_experiment with RandomFlips(tpr=0.93, fpr=0.07) and RankBiasedFlips(0.93, 0.07), "
                    f"{n_rep} replicates each, measures "
                    f"{', '.join(MEASURES)}, RBO p = 0.9 truncated, paired t-test at p < {ALPHA}"),
        data=coll.description,
        data_differs=("the paper used TREC 7 ad hoc (50 topics) and Robust04 (50 and 199 topics) with 50 systems "
                      "each; " + ("the synthetic collection stands in for them" if coll.synthetic else
                                  "TREC-COVID round 1 has 30 topics and many near-duplicate runs")),
        command=f"pyterrier-noise reproduce {PAPER}{data_option(data)}" + (" --quick" if quick else ""),
        quick=quick, rows=rows,
        not_yet=["Table 3's grid with rank-biased flips and on 199 topics (Robust04 only)"])


__all__ = ["run", "grid_rows", "consensus_rows"]
