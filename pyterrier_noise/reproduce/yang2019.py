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
from .record import DATA_DIFFERS, NO_NUMBER, NOT_REPRODUCED, REPRODUCED, Reproduction, Row

PAPER = "yang2019"
CITATION = "Yang (2019)"
TITLE = "Improving the Reliability and Robustness of IR Evaluation (PhD thesis)"
#: Table 3.3 as printed: rho -> (delta RR, delta RBP p = 0.5, delta RBP p = 0.85)
TABLE_3_3 = {1.1: (0.0038, 0.0002, 0.0087), 1.2: (0.0119, 0.0052, 0.0231), 1.4: (0.0417, 0.0429, 0.0482),
             1.7: (0.0833, 0.0945, 0.0777), 2.0: (0.0833, 0.1016, 0.0971)}
BAND_MEASURES = {"RR": MeasureSpec("RR"), "RBP(0.5)": MeasureSpec("RBP", p=0.5), "RBP(0.85)": MeasureSpec("RBP", p=0.85),
                 "AP": MeasureSpec("AP")}
PHI_GRID = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99)     # expected depths 2, 5, 10, 20, 50, 100 (Sec. 4.4)
#: Table 4.5, TREC-7 AP: discrimination ratio (%) at d' = 5 and 25, and d' = 50
TABLE_4_5_AP = {5: 68.0, 25: 73.3, 50: 73.0}


def table33_rows() -> list[Row]:
    """The 15 numbers of Table 3.3 against :func:`~pyterrier_noise.ties.worst_case_table`."""
    t = worst_case_table(rhos=list(TABLE_3_3), ps=(0.5, 0.85), depth=1000)
    rows = []
    for i, (rho, printed) in enumerate(TABLE_3_3.items()):
        for col, what, paper in zip(("delta_rr", "delta_rbp(p=0.5)", "delta_rbp(p=0.85)"),
                                    ("RR", "RBP (p = 0.5)", "RBP (p = 0.85)"), printed):
            ours = float(t[col].iloc[i])
            rows.append(Row(f"worst-case change of {what} from banding, rho = {rho:g}", paper, "Table 3.3", ours, 4,
                            "exact arithmetic (no data)", REPRODUCED if abs(ours - paper) <= 5e-5 else NOT_REPRODUCED))
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
                        kept, 3, where, REPRODUCED if kept >= 0.96 else NOT_REPRODUCED, paper_text="0.96-0.98",
                        note="TREC-7, 80 systems in the thesis; 'reproduced' means at least 0.96"))
    return rows


def phi_rows(coll: Collection) -> list[Row]:
    """The RBP persistence whose system ordering best matches each metric's (Kendall's tau, Sec. 4.4)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = match_phi_many(coll.runs, coll.qrels, ["AP", "nDCG", "P@10", "RR"], grid=list(PHI_GRID))
    where = f"{coll.description}, grid of expected depths 2-100"
    claims = {"AP": ("at least 0.98", lambda f: f >= 0.98), "nDCG": ("at least 0.98", lambda f: f >= 0.98),
              "P@10": ("about 0.9", lambda f: 0.8 <= f <= 0.95), "RR": ("small (below 0.9)", lambda f: f < 0.9)}
    rows = []
    for k, (text, ok) in claims.items():
        rows.append(Row(f"matched RBP persistence for {k}", None, "Sec. 4.4, Fig. 4.2", m[k].phi, 2, where,
                        REPRODUCED if ok(m[k].phi) else NOT_REPRODUCED, paper_text=text,
                        note=f"Kendall's tau at the match {m[k].corr:.3f}"))
    return rows


def reference_depth_for(coll: Collection) -> int:
    """The deepest reference the collection supports: 5 on TREC-COVID round 1 (60 runs judged to depth 5
    on every topic, none to depth 10), 10 on the synthetic collection (its pool depth); the thesis used 50."""
    return 10 if coll.synthetic else 5


def depth_rows(coll: Collection, quick: bool) -> list[Row]:
    """Discrimination ratio of AP at shallow pool depths (Table 4.5) against the deepest available reference,
    the ANCOVA of Table 4.9 and the first-unjudged report of Sec. 4.10."""
    ref = reference_depth_for(coll)
    depths = tuple(range(1, ref)) if not coll.synthetic else tuple(range(2, ref, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the runs not judged to the reference depth are announced and left out
        d = depth_experiment(coll.runs, coll.qrels, depths=depths, measures=("AP", "RR"), reference_depth=ref)
        table = depth_ancova(d).set_index(["measure", "term"])
    r = d.discrimination.loc["AP"]
    lo, hi = depths[0], depths[-1]
    why = ("TREC-COVID round 1 judged 60 runs to depth 5 on every topic and none to depth 10, so depth 5 is the "
           "deepest reference" if not coll.synthetic else "the synthetic collection is pooled to depth 10")
    where = f"{coll.description}, the {len(d.run_names)} runs judged to depth {ref}, reference: their depth-{ref} qrels"
    rows = [Row(f"AP discrimination ratio (%), reference depth {ref}", TABLE_4_5_AP[50], "Table 4.5 (TREC-7, depth 50)",
                100 * float(r[f"k={ref}"]), 1, where, DATA_DIFFERS, note=f"TREC-7, 65 systems, reference depth 50; {why}")]
    for k in (lo, hi):
        rows.append(Row(f"AP discrimination ratio (%), pool depth {k}", None, "Table 4.5 (TREC-7: 68.0 at depth 5)",
                        100 * float(r[f"k={k}"]), 1, where, NO_NUMBER,
                        note=f"TREC-7, 65 systems, reference depth 50; {why}"))
    gain = 100 * float(r[f"k={hi}"] - r[f"k={lo}"])
    rows.append(Row(f"AP discrimination ratio, depth {hi} minus depth {lo} (points)", TABLE_4_5_AP[25] - TABLE_4_5_AP[5],
                    "Table 4.5 (TREC-7, depths 25 and 5)", gain, 1, where, REPRODUCED if gain >= 0 else NOT_REPRODUCED,
                    note="the thesis's claim: deeper pools discriminate a little more"))
    awhere = f"{where}, depths {', '.join(map(str, depths))} and {ref} as a numeric covariate"
    anote = (f"TREC-7 and TREC-13, depths 5-50 in the thesis; our depths stop at {ref} ({why})")
    p_ap = float(table.loc[("AP", "d"), "p_value"])
    rows.append(Row("ANCOVA score ~ d + topic + sys: p-value of pool depth d, AP", 0.05, "Table 4.9", p_ap, 4, awhere,
                    REPRODUCED if p_ap < 0.05 else NOT_REPRODUCED, paper_text="below 0.05", note=anote))
    for term, what in (("topic", "topic"), ("sys", "system")):
        pv = float(table.loc[("AP", term), "p_value"])
        rows.append(Row(f"ANCOVA: p-value of {what}, AP", 0.05, "Table 4.9", pv, 4, awhere,
                        REPRODUCED if pv < 0.05 else NOT_REPRODUCED, paper_text="below 0.05", note=anote))
    p_rr = float(table.loc[("RR", "d"), "p_value"])
    rows.append(Row("ANCOVA: p-value of pool depth d, RR", 0.860, "Table 4.9 (TREC 7; 0.875 on TREC 13)", p_rr, 3,
                    awhere, REPRODUCED if p_rr >= 0.05 else NOT_REPRODUCED,
                    note=anote + "; the thesis's claim: depth does not affect RR (its first relevant document is "
                                 "judged at any depth)"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aligned = AlignedRuns.build({n: coll.runs[n] for n in d.run_names}, coll.qrels, on_topic_mismatch="ignore")
        rep = unjudged_depth(aligned, depth_labels(aligned, [lo]), k=10, versions=[f"k={lo}"])
    share = float(rep["share_unjudged_at_k"].mean())
    rows.append(Row(f"share of the top 10 unjudged with a depth-{lo} pool (Sec. 4.10 report)", None,
                    "Sec. 4.10 (recommended, no number printed)", share, 3, where, NO_NUMBER,
                    note=f"first unjudged rank, mean over runs and topics: {rep['first_unjudged'].mean():.1f}"))
    return rows


def run(data: Path | str, quick: bool = False, progress: bool = False) -> Reproduction:
    """Table 3.3, banding at rho = 2, phi matching and the depth experiment."""
    coll = load_collection(data)
    rows = table33_rows() + banding_rows(coll) + phi_rows(coll) + depth_rows(coll, quick)
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
        quick=quick, rows=rows,
        not_yet=["the banding experiment on Vaswani (see docs/ties.md, benchmarks/banding_experiment.py)"])


__all__ = ["run", "table33_rows", "banding_rows", "phi_rows", "depth_rows", "reference_depth_for"]
