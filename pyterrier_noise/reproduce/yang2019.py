"""Yang (2019) thesis: worst-case banding bounds (Table 3.3), conclusions kept at rho = 2 (Sec. 3.3.4), phi matching (Sec. 4.4) and pool depth (Table 4.5).

* Table 3.3 is exact arithmetic (:func:`pyterrier_noise.ties.worst_case_table`).
* Banding: every run in trec_eval's order (:class:`~pyterrier_noise.ties.TieBreaker`, float32), banded
  with :class:`~pyterrier_noise.ties.TieBanding` at rho = 2 and scored with ``ties="expected"``; a pair
  keeps its conclusion when the paired t-test (alpha 0.05) decides the same before and after
  (:func:`pyterrier_noise.stats.discrimination_agreement`, TP + TN).
* Phi matching: :func:`pyterrier_noise.experiments.match_phi_many` on the thesis's grid of expected
  depths 2, 5, 10, 20, 50, 100.
* Pool depth: :func:`pyterrier_noise.experiments.depth_experiment` against the deepest reference the data
  support (``reference_depth``), :func:`~pyterrier_noise.experiments.depth_ancova` (Table 4.9) and
  :func:`~pyterrier_noise.experiments.unjudged_depth` (Sec. 4.10).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .. import AlignedRuns, MeasureSpec
from ..experiments import depth_ancova, depth_experiment, depth_labels, match_phi_many, unjudged_depth
from ..stats import discrimination_agreement
from ..ties import TieBanding, TieBreaker, worst_case_table
from .data import Collection, data_option, load_collection
from .record import (CONTRADICTED, MIXED, NOT_COMPARABLE, NOT_TESTABLE, REFERENCE, SUPPORTED, VALIDATION_BLOCK,
                     Claim, Reproduction, Row, derived, judge)

PAPER = "yang2019"
CITATION = "Yang (2019)"
TITLE = "Improving the Reliability and Robustness of IR Evaluation (PhD thesis)"
#: Table 3.3 as printed: rho -> (delta RR, delta RBP p = 0.5, delta RBP p = 0.85)
TABLE_3_3 = {1.1: (0.0038, 0.0002, 0.0087), 1.2: (0.0119, 0.0052, 0.0231), 1.4: (0.0417, 0.0429, 0.0482),
             1.7: (0.0833, 0.0945, 0.0777), 2.0: (0.0833, 0.1016, 0.0971)}
BAND_MEASURES = {"RR": MeasureSpec("RR"), "RBP(0.5)": MeasureSpec("RBP", p=0.5), "RBP(0.85)": MeasureSpec("RBP", p=0.85),
                 "AP": MeasureSpec("AP")}
PHI_GRID = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99)     # expected depths 2, 5, 10, 20, 50, 100 (Sec. 4.4)
#: Table 4.5, TREC-7 AP: discrimination ratio (%) at d' = 5, 25 and 50, as printed
TABLE_4_5_AP = {5: "68.0", 25: "73.3", 50: "73.0"}
#: Table 3.2, TREC-7, tied scores: percentage of systems, system-topics, documents; first tie (geometric mean rank)
TABLE_3_2_TREC7 = {"share_runs": "95.2", "share_topics": "91.0", "share_docs": "14.0", "gm_first_tie_rank": "66"}
TIE_WORDS = {"share_runs": "systems with tied scores (%)", "share_topics": "system-topics with tied scores (%)",
             "share_docs": "documents with tied scores (%)", "gm_first_tie_rank": "rank of the first tie (geometric mean)"}
#: Table 5.1: topic -> (NumDocs, NumParts) as printed
TABLE_5_1 = {402: (285, 14), 403: (120, 6), 405: (216, 11), 407: (225, 11), 408: (192, 10), 415: (184, 9),
             416: (176, 9), 431: (208, 10), 440: (270, 13)}
ROUND4 = (5e-5, "half a unit of the printed 4th decimal")


def table33_rows() -> list[Row]:
    """The 15 numbers of Table 3.3 against :func:`~pyterrier_noise.ties.worst_case_table`."""
    t = worst_case_table(rhos=list(TABLE_3_3), ps=(0.5, 0.85), depth=1000)
    rows = []
    for i, (rho, printed) in enumerate(TABLE_3_3.items()):
        for col, what, paper in zip(("delta_rr", "delta_rbp(p=0.5)", "delta_rbp(p=0.85)"),
                                    ("RR", "RBP (p = 0.5)", "RBP (p = 0.85)"), printed):
            ours = float(t[col].iloc[i])
            rows.append(Row(f"worst-case change of {what} from banding, rho = {rho:g}", paper, "Table 3.3", ours, 4,
                            "exact arithmetic (no data)", judge(ours, paper, ROUND4[0], same_data=True),
                            paper_text=f"{paper:.4f}", tolerance=ROUND4[0], tolerance_why=ROUND4[1]))
    return rows


def _scores(runs: dict, qrels: pd.DataFrame, ties: str) -> dict[str, np.ndarray]:
    aligned = AlignedRuns.build(runs, qrels, ties=ties, on_topic_mismatch="ignore")
    out = aligned.evaluate(list(BAND_MEASURES.values()))
    return {k: out[s][:, :, 0] for k, s in BAND_MEASURES.items()}


def banding_rows(coll: Collection, rho: float = 2.0) -> list[Row]:
    """Share of system pairs keeping their t-test conclusion after banding at ``rho`` (Sec. 3.3.4)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ordered = {n: TieBreaker("trec_eval", precision="float32")(r) for n, r in coll.runs.items()}
        banded = {n: TieBanding(rho)(r) for n, r in ordered.items()}
        before = _scores(ordered, coll.qrels, "trec_eval")
        after = _scores(banded, coll.qrels, "expected")
    n = len(coll.runs)
    where = f"{coll.description}: {n * (n - 1) // 2:,} system pairs, banded at rho = {rho:g}"
    rows = []
    for m in BAND_MEASURES:
        ag = discrimination_agreement(after[m], before[m], alpha=0.05)
        kept = float(ag["outcome"].isin(["TP", "TN"]).mean())
        rows.append(Row(f"pairs keeping their conclusion at rho = {rho:g}, {m}", 0.96, "Sec. 3.3.4, Figs. 3.8-3.11",
                        kept, 3, where, judge(kept, 0.96, None, same_data=False, bound="above"),
                        paper_text="over 96%", bound="above", tolerance_why="a printed bound",
                        note="TREC-7, 80 systems in the thesis"))
    return rows


def phi_rows(coll: Collection, aligned: AlignedRuns | None = None) -> list[Row]:
    """The RBP persistence whose system ordering best matches each metric's (Kendall's tau, Sec. 4.4).
    ``aligned``: the collection's runs already aligned to its qrels (:func:`_aligned_collection`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = match_phi_many(_aligned_collection(coll, aligned), None, ["AP", "nDCG", "P@10", "RR"], grid=list(PHI_GRID))
    where = f"{coll.description}, grid of expected depths 2-100"
    rows = []
    for k in ("AP", "nDCG"):
        rows.append(Row(f"matched RBP persistence for {k}", 0.98, "Sec. 4.4, Fig. 4.2", m[k].phi, 2, where,
                        judge(m[k].phi, 0.98, None, same_data=False, bound="above"), paper_text="0.98 or more",
                        bound="above", tolerance_why="a printed bound",
                        note=f"TREC-7, -8 and -13 in the thesis; Kendall's tau at the match {m[k].corr:.3f}"))
    for k in ("P@10", "RR"):
        rows.append(Row(f"matched RBP persistence for {k}", None, "", m[k].phi, 2, where, REFERENCE,
                        block=VALIDATION_BLOCK,
                        note=f"the thesis prints no value ('highly correlated to RBP when phi is small', Sec. 4.4); "
                             f"Kendall's tau at the match {m[k].corr:.3f}"))
    return rows


def reference_depth_for(coll: Collection) -> int:
    """The deepest reference the collection supports: 5 on TREC-COVID round 1 (60 runs judged to depth 5
    on every topic, none to depth 10), 10 on the synthetic collection (its pool depth); the thesis used 50."""
    return 10 if coll.synthetic else 5


def depth_rows(coll: Collection, quick: bool, aligned: AlignedRuns | None = None) -> list[Row]:
    """Discrimination ratio of AP at shallow pool depths (Table 4.5) against the deepest available reference,
    the ANCOVA of Table 4.9 and the first-unjudged report of Sec. 4.10.  ``aligned``: as :func:`phi_rows`'s."""
    ref = reference_depth_for(coll)
    depths = tuple(range(1, ref)) if not coll.synthetic else tuple(range(2, ref, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the runs not judged to the reference depth are announced and left out
        d = depth_experiment(_aligned_collection(coll, aligned), None, depths=depths, measures=("AP", "RR"),
                             reference_depth=ref)
        table = depth_ancova(d).set_index(["measure", "term"])
    r = d.discrimination.loc["AP"]
    lo, hi = depths[0], depths[-1]
    why = ("TREC-COVID round 1 judged 60 runs to depth 5 on every topic and none to depth 10, so depth 5 is the "
           "deepest reference" if not coll.synthetic else "the synthetic collection is pooled to depth 10")
    where = f"{coll.description}, the {len(d.run_names)} runs judged to depth {ref}, reference: their depth-{ref} qrels"
    tnote = f"TREC-7, 65 systems, reference depth 50 in the thesis; {why}"
    ours_ref = 100 * float(r[f"k={ref}"])
    rows = [Row(f"AP discrimination ratio (%), depth-{ref} pool", float(TABLE_4_5_AP[5]),
                "Table 4.5 (TREC-7, d' = 5)", ours_ref, 1, where,
                judge(ours_ref, float(TABLE_4_5_AP[5]), 0.05, same_data=False), paper_text=TABLE_4_5_AP[5],
                tolerance=0.05, tolerance_why="half a unit of the printed 1st decimal", note=tnote)]
    for k in (lo, hi):
        rows.append(Row(f"AP discrimination ratio (%), pool depth {k}", None, "", 100 * float(r[f"k={k}"]), 1, where,
                        REFERENCE, block=VALIDATION_BLOCK, note=f"the thesis's shallowest pool is 5 deep; {tnote}"))
    gain = 100 * float(r[f"k={hi}"] - r[f"k={lo}"])
    value, text = derived(f"{TABLE_4_5_AP[25]} - {TABLE_4_5_AP[5]}", 1)
    rows.append(Row(f"AP discrimination ratio, depth {hi} minus depth {lo} (points)", value,
                    "Table 4.5 (TREC-7, d' = 25 and 5)", gain, 1, where, NOT_COMPARABLE, paper_text=text,
                    tolerance=0.1, tolerance_why="a difference of two values printed to 1 decimal", signed=True,
                    note=f"depths {lo} to {hi} against the thesis's 5 to 25; the thesis: ratios 'mostly grow a little "
                         "bit when the d' increases from 5 to 25'"))
    awhere = f"{where}, depths {', '.join(map(str, depths))} and {ref} as a numeric covariate"
    anote = f"TREC-7 and TREC-13, depths 5-50 in the thesis; our depths stop at {ref} ({why})"
    for term, what in (("d", "pool depth d"), ("topic", "topic"), ("sys", "system")):
        pv = float(table.loc[("AP", term), "p_value"])
        rows.append(Row(f"ANCOVA score ~ d + topic + sys: p-value of {what}, AP", 0.05, "Table 4.9 (TREC-7)", pv, 4,
                        awhere, judge(pv, 0.05, None, same_data=False, bound="below"),
                        paper_text="***", bound="below", tolerance_why="'***' marks a p-value below 0.05 (Table 4.9's caption)",
                        note=anote))
    p_rr = float(table.loc[("RR", "d"), "p_value"])
    rows.append(Row("ANCOVA: p-value of pool depth d, RR", 0.860, "Table 4.9 (TREC-7)", p_rr, 3, awhere,
                    NOT_COMPARABLE, paper_text="0.860", tolerance=5e-4,
                    tolerance_why="half a unit of the printed 3rd decimal",
                    note=(f"not comparable: the thesis's pools are 5-50 deep, ours 1-{ref}; RR's first relevant "
                          "document is judged at any depth of 5 or more, not at depth 1 or 2 (TREC-13: 0.875)")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aligned = AlignedRuns.build({n: coll.runs[n] for n in d.run_names}, coll.qrels, on_topic_mismatch="ignore")
        rep = unjudged_depth(aligned, depth_labels(aligned, [lo]), k=10, versions=[f"k={lo}"])
    share = float(rep["share_unjudged_at_k"].mean())
    rows.append(Row(f"share of the top 10 unjudged with a depth-{lo} pool (Sec. 4.10 report)", None, "", share, 3,
                    where, REFERENCE, block=VALIDATION_BLOCK,
                    note=f"Sec. 4.10 recommends the report and prints no number; first unjudged rank, mean over runs "
                         f"and topics: {rep['first_unjudged'].mean():.1f}"))
    return rows


def tie_rows(coll: Collection) -> list[Row]:
    """Ch. 3.2 (Table 3.2): tied scores in the real runs (:func:`pyterrier_noise.ties.tie_stats_in_chunks`, float64)."""
    from ..ties import tie_stats_in_chunks
    s = tie_stats_in_chunks(coll.runs, "float64", progress=False).summary.loc["tied scores"]
    where = f"{coll.description}, all runs, float64 equality"
    rows = []
    for col, printed in TABLE_3_2_TREC7.items():
        scale = 1 if col == "gm_first_tie_rank" else 100
        ours = scale * float(s[col])
        tol = 0.5 if scale == 1 else 0.05
        rows.append(Row(f"Table 3.2: {TIE_WORDS[col]}", float(printed), "Table 3.2 (TREC-7)", ours, 1, where,
                        judge(ours, float(printed), tol, same_data=False), paper_text=printed, tolerance=tol,
                        tolerance_why="half a unit of the printed last place",
                        note="TREC-7's 103 systems in the thesis (TREC-8: 93.8, 91.8, 11.0, 71)"))
    return rows


def crowd_rows() -> list[Row]:
    """Ch. 5 (Table 5.1): the number of partitionings X of each topic's documents that the design gives
    (:func:`pyterrier_noise.crowd.design_partitions`, K = 3 partners, 15% of the other documents)."""
    from ..crowd import design_partitions
    rows = []
    for topic, (n_docs, parts) in TABLE_5_1.items():
        ours = float(design_partitions(n_docs))
        rows.append(Row(f"Table 5.1, topic {topic} ({n_docs} documents): NumParts", float(parts), "Table 5.1", ours, 0,
                        "the thesis's design (Sec. 5.1.1, Eq 5.2), exact arithmetic",
                        judge(ours, float(parts), 0.0, same_data=True), paper_text=str(parts), tolerance=0.0,
                        tolerance_why="a printed count"))
    return rows


def residual_rows(coll: Collection, aligned: AlignedRuns | None = None) -> list[Row]:
    """Sec. 4.2 (Fig. 4.1): the smallest persistence of the grid at which the mean RBP residual exceeds the mean
    RBP score, over all runs and topics.  ``aligned``: as :func:`phi_rows`'s."""
    specs = {phi: (MeasureSpec("RBP", p=phi), MeasureSpec("RBP", "residual", p=phi)) for phi in PHI_GRID}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _aligned_collection(coll, aligned).evaluate(
            [s for pair in specs.values() for s in pair])
    above = [phi for phi, (v, r) in specs.items() if out[r][:, :, 0].mean() > out[v][:, :, 0].mean()]
    ours = float(min(above)) if above else float("nan")
    return [Row("smallest persistence of the grid with mean RBP residual above mean RBP score", 0.99,
                "Sec. 4.2 (Fig. 4.1)", ours, 2, f"{coll.description}, grid {', '.join(map(str, PHI_GRID))}",
                NOT_COMPARABLE, paper_text="about 0.99", tolerance=0.005, tolerance_why="'about': our grid's step",
                note="not comparable: the thesis's pools are 100 deep (TREC-7, -8, -13), TREC-COVID round 1's "
                     "judgments are far shallower, so the residual overtakes the score at a smaller persistence")]


def claims(rows: list[Row]) -> list[Claim]:
    """The thesis's headline claims (abstract, conclusions of Ch. 3-5) and the rows that test them."""
    v = {r.quantity: r for r in rows}
    kept = [q for q in v if q.startswith("pairs keeping their conclusion")]
    phi = ["matched RBP persistence for AP", "matched RBP persistence for nDCG"]
    t33 = [q for q in v if q.startswith("worst-case change")]
    ties = [q for q in v if q.startswith("Table 3.2:")]
    t51 = [q for q in v if q.startswith("Table 5.1")]
    ancova = [q for q in v if q.startswith("ANCOVA score")]

    def by_verdict(names: list[str]) -> str:
        ok = [v[q].verdict == "reproduced" for q in names]
        return SUPPORTED if all(ok) else CONTRADICTED if not any(ok) else MIXED

    share = v["Table 3.2: system-topics with tied scores (%)"].ours
    return [
        Claim("similarity-score ties are frequent in TREC runs (the tie rates of Table 3.2 are 'generally quite "
              "high')", "Sec. 3.2", ties, SUPPORTED if share > 10 else CONTRADICTED,
              f"ties are frequent in TREC-COVID round 1 too ({share:.1f}% of run-topics; TREC-7: 91.0%), less so "
              "than in TREC-7; whether they reorder the top systems (Fig. 3.4) is not a row here"),
        Claim("the worst-case score change from banding is bounded (Table 3.3)", "Sec. 3.3", t33, by_verdict(t33),
              "exact arithmetic: every printed bound"),
        Claim("banding at rho = 2 keeps the t-test conclusion of over 96% of system pairs", "Sec. 3.3.4", kept,
              by_verdict(kept), "the share of pairs keeping their conclusion, per measure"),
        Claim("deep metrics such as AP and NDCG correspond to RBP with phi of 0.98 or more", "Sec. 4.4", phi,
              by_verdict(phi), "the persistence whose ordering best matches each metric's on our data"),
        Claim("pool depth affects AP, NDCG and RBP scores but not RR's (ANCOVA)", "Sec. 4.9",
              ancova + ["ANCOVA: p-value of pool depth d, RR"], NOT_TESTABLE,
              "AP's depth effect is significant here too, but RR's part needs pools at least 5 deep: TREC-COVID "
              "round 1 supports 1-5 only"),
        Claim("pairwise crowd judgments collected with the thesis's design (Table 5.1) are 'not dissimilar' to NIST, "
              "Sormunen and ME judgments, cheaper, and give similar system comparison outcomes", "Sec. 5.4", t51,
              NOT_TESTABLE,
              "the design arithmetic of Table 5.1 is reproduced exactly, but the thesis's crowd judgments of nine "
              "TREC-8 topics are not public, so Tables 5.2-5.15 cannot be recomputed"),
    ]


def _aligned_collection(coll: Collection, aligned: AlignedRuns | None = None) -> AlignedRuns:
    """The collection's runs aligned to its qrels (trec_eval's order), once for the phi matching, the residual
    and the depth experiment; ``aligned`` when already given."""
    if aligned is not None:
        return aligned
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # run topics without qrels are not evaluated
        return AlignedRuns.build(coll.runs, coll.qrels, on_topic_mismatch="ignore")


def run(data: Path | str, quick: bool = False, progress: bool = False) -> Reproduction:
    """Table 3.3, banding at rho = 2, phi matching and the depth experiment."""
    coll = load_collection(data)
    rows = table33_rows() + tie_rows(coll) + banding_rows(coll)
    aligned = _aligned_collection(coll)
    rows += phi_rows(coll, aligned) + residual_rows(coll, aligned) + depth_rows(coll, quick, aligned) + crowd_rows()
    return Reproduction(
        paper=PAPER, citation=CITATION, title=TITLE,
        experiment=("Table 3.3 by exact arithmetic; every run banded at rho = 2 and scored with expected ties; "
                    "RBP persistence matched to AP, nDCG, P@10 and RR; discrimination ratio at shallow pool depths against the "
                    "deepest reference the data support, the ANCOVA of Table 4.9 and the unjudged-documents report"),
        data=coll.description,
        data_differs=("the thesis used TREC-7, TREC-8 and TREC-13 runs with depth-100 pools and a depth-50 "
                      "reference; " + ("the synthetic collection stands in for them (reference depth 10, its pool "
                                       "depth)" if coll.synthetic else
                                       "TREC-COVID round 1 judged 60 runs to depth 5 on every topic and none to "
                                       "depth 10, so the depth experiment and the ANCOVA use a depth-5 reference")),
        command=f"pyterrier-noise reproduce {PAPER}{data_option(data)}" + (" --quick" if quick else ""),
        quick=quick, rows=rows, claims=claims(rows),
        not_yet=["the banding experiment on Vaswani (see docs/ties.md, benchmarks/banding_experiment.py)",
                 "Ch. 5's results on the thesis's crowd judgments (Tables 5.2-5.15: agreement with NIST, Sormunen and "
                 "ME judgments, judging time, system orderings): the judgments of the nine TREC-8 topics are not "
                 "public; the package's crowd module implements the design and the aggregation",
                 "Tables 4.2-4.4 and 4.6-4.8 (per-topic phi, TP/FP counts of depth pairs): TREC-7, -8 and -13 runs "
                 "with depth-100 pools are not in our data"])


__all__ = ["run", "table33_rows", "banding_rows", "phi_rows", "depth_rows", "reference_depth_for", "tie_rows",
           "crowd_rows", "residual_rows", "claims"]
