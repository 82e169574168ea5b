"""Moffat, Webber and Zobel (2007): the RBP worked example (Sec. 2) and Methods A, B, C vs pooling at equal budgets (Table 5).

The worked example is exact.  The budget experiment replays each selection method against the
qrels with :func:`pyterrier_noise.selection.compare_methods` (the top third of the runs by AP on
the full qrels, one-tailed Wilcoxon tests over topics, RBP p = 0.8) on TREC-COVID round 1 instead
of TREC-8, and compares the *shape* of Table 5: which method separates the top runs best at a
small budget, and base-vs-base significance staying flat.  ``tables`` holds the tables that
``docs/evidence/selection.md`` shows (Tables 2, 4 and 5 of the paper, on TREC-COVID) and Table 3, the overlap of
Method C's judgment sets selected at p = 0.5, 0.8 and 0.95 (:func:`pyterrier_noise.experiments.judgment_overlap`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import AlignedRuns, MeasureSpec
from .._vocab import SELECTION_METHODS as METHODS
from ..experiments import judgment_overlap
from ..selection import compare_methods, simulate
from .data import data_option, load_collection
from .record import (CONTRADICTED, MIXED, NOT_COMPARABLE, NOT_TESTABLE, SUPPORTED, Claim, Reproduction, Row,
                     derived, judge)

PAPER = "moffat2007"
CITATION = "Moffat, Webber and Zobel (2007)"
TITLE = "Strategic System Comparisons via Targeted Relevance Judgments"
#: Table 5 of the paper at 5,000 judgments (TREC-8, 129 runs, 50 topics: 0.78 judgments per run and topic)
TABLE5_5000 = {"sig_base_base": {"pool": 0.443, "A": 0.484, "B": 0.465, "C": 0.504},
               "sig_base_upper": {"pool": 0.033, "A": 0.313, "B": 0.130, "C": 0.336},
               "sig_base_projected": {"pool": 0.151, "A": 0.367, "B": 0.272, "C": 0.398}}
#: Table 5, base-vs-base of Method C at 5,000 / 10,000 / 20,000 judgments
TABLE5_C_BASE = (0.504, 0.499, 0.503)
PAPER_PER_RUN_TOPIC = 5000 / (129 * 50)
#: Table 2 at 1,000 judgments (TREC-8, unjudged documents bypassed): relevant documents found
TABLE2_1000 = {"pool": 359, "A": 511, "B": 516, "C": 550}
#: Table 2: the smallest ratio, over the budgets, of the weakest RBP-weighted method's relevant found to pooling's
TABLE2_MIN_RATIO = 2538 / 2495
#: Table 3: judgments shared by Method C's 10,000-judgment selections at two persistences
TABLE3_OVERLAP = {(0.5, 0.8): 9215, (0.5, 0.95): 6972, (0.8, 0.95): 7517}
TABLE3_BUDGET = 10000
COLUMN_WORDS = {"sig_base_base": "base-vs-base", "sig_base_upper": "base-vs-top", "sig_base_projected": "base-vs-proj"}
FEEDS = {"all": "all runs", "contributing": "contributing runs"}
#: Table 5, base-vs-base at all 86,830 judgments: RBP (p = 0.8) and MAP, as printed
TABLE5_ALL = {"RBP": "0.502", "MAP": "0.421"}
#: Table 5, base-vs-top of Method C at 10,000 judgments (200 per query) and of RBP at all judgments
TABLE5_C_TOP_10000, TABLE5_RBP_TOP_ALL = "0.430", "0.498"
#: Table 4 (10,000 judgments, selection and evaluation p = 0.8): average residual of the top third
TABLE4_C_08, TABLE4_POOL_08 = "0.0190", "0.0636"
PER_QUERY = 200
ROUND3 = (5e-4, "half a unit of the printed 3rd decimal")
ROUND_DIFF = (1e-3, "a difference of two values printed to 3 decimals: one unit")
#: below this share of separated pairs for every method, a comparison of methods is a floor effect
FLOOR = 0.05


def worked_example_rows() -> list[Row]:
    """Sec. 2: relevance 0 1 1 0 0 1 ? 0 0 1 to depth 10 (rank 7 unjudged), p = 0.8."""
    labels = [0, 1, 1, 0, 0, 1, None, 0, 0, 1]
    docs = [f"d{i}" for i in range(10)]
    run = pd.DataFrame({"qid": "1", "docno": docs, "score": np.arange(10, 0, -1.0)})
    qrels = pd.DataFrame([("1", d, float(v)) for d, v in zip(docs, labels) if v is not None],
                         columns=["qid", "docno", "label"])
    specs = {c: MeasureSpec("RBP", c, p=0.8) for c in ("value", "residual", "upper")}
    out = AlignedRuns.build({"example": run}, qrels).evaluate(list(specs.values()))
    got = {c: float(out[s][0, 0, 0]) for c, s in specs.items()}
    where = "the paper's worked ranking (Sec. 2)"
    rows = []
    for c, paper in (("value", 0.380), ("residual", 0.160), ("upper", 0.540)):
        rows.append(Row(f"RBP worked example, {'base' if c == 'value' else c} (p = 0.8)", paper, "Sec. 2",
                        got[c], 3, where, judge(got[c], paper, ROUND3[0], same_data=True), paper_text=f"{paper:.3f}",
                        tolerance=ROUND3[0], tolerance_why=ROUND3[1]))
    return rows


def _budgets(n_judged: int, quick: bool, synthetic: bool) -> list[int]:
    if synthetic:
        cps = [n_judged // 8, n_judged // 4, n_judged // 2, n_judged]
        return cps[:2] if quick else cps
    return [1000, 2000] if quick else [1000, 2000, 4000, n_judged]


def table5(summary: pd.DataFrame, budgets: list[int]) -> dict[str, Any]:
    """docs/evidence/selection.md's Table 5-style table: per feed, budget and method, at p = 0.8."""
    cols = ["relevant", "top_residual", "separated", "sig_base_base", "sig_base_upper", "sig_base_projected"]
    rows, last_feed = [], None
    for feed in [f for f in FEEDS if f in set(summary["feed"])]:
        for cp in budgets:
            for k, m in enumerate(METHODS):
                r = summary[(summary["feed"] == feed) & (summary["checkpoint"] == cp) & (summary["method"] == m)
                            & (summary["p_eval"] == 0.8)].iloc[0]
                rows.append([FEEDS[feed] if feed != last_feed else "", int(cp) if k == 0 else "", m,
                             int(r["relevant"]), *[round(float(r[c]), 6) for c in cols[1:]]])
                last_feed = feed
    return {"columns": ["pool fed by", "judgments", "method", "relevant found", "top residual", "sep.", "b-b",
                        "b-top", "b-proj"], "rows": rows}


def table4(summary: pd.DataFrame, budget: int) -> dict[str, Any]:
    """docs/evidence/selection.md's Table 4-style table: top-third residual at the largest budget, three p."""
    rows, last_feed = [], None
    for feed in [f for f in FEEDS if f in set(summary["feed"])]:
        for m in METHODS:
            sub = summary[(summary["feed"] == feed) & (summary["checkpoint"] == budget) & (summary["method"] == m)]
            vals = [round(float(sub.loc[sub["p_eval"] == p, "top_residual"].iloc[0]), 6) for p in (0.5, 0.8, 0.95)]
            rows.append([FEEDS[feed] if feed != last_feed else "", m, *vals])
            last_feed = feed
    return {"columns": ["pool fed by", "method", "p = 0.5", "p = 0.8", "p = 0.95"], "rows": rows}


def table2(bypass: pd.DataFrame, budgets: list[int]) -> dict[str, Any]:
    """docs/evidence/selection.md's Table 2-style table: relevant found : documents handled, unjudged bypassed."""
    rows = []
    for m in METHODS:
        cells = []
        for cp in budgets:
            r = bypass[(bypass["method"] == m) & (bypass["checkpoint"] == cp)].iloc[0]
            cells.append([int(r["relevant"]), int(r["handled"])])
        rows.append([m, *cells])
    return {"columns": ["method", *[f"{b:,}" for b in budgets]], "rows": rows}


def table2_rows(bypass: pd.DataFrame, budgets: list[int], description: str) -> list[Row]:
    """Table 2's relevant documents found (unjudged documents bypassed): at the first budget per
    method, and the paper's two claims (C finds the most; every RBP-weighted method beats pooling)."""
    found = bypass.pivot_table(index="checkpoint", columns="method", values="relevant")
    first = budgets[0]
    where = f"{description}, all runs pooled, unjudged documents bypassed, {first:,} judgments"
    rows = [Row(f"relevant documents found, {m}", TABLE2_1000[m], "Table 2, 1,000 judgments",
                float(found.loc[first, m]), 0, where,
                judge(float(found.loc[first, m]), TABLE2_1000[m], 0.5, same_data=False),
                paper_text=str(TABLE2_1000[m]), tolerance=0.5, tolerance_why="a printed count",
                note="TREC-8 in the paper")
            for m in METHODS]
    lead = float(found.loc[first, "C"] - found.loc[first, ["pool", "A", "B"]].max())
    value, text = derived(f"{TABLE2_1000['C']} - {TABLE2_1000['B']}", 0)
    rows.append(Row("relevant found: C minus the best other method", value, "Table 2, 1,000 judgments", lead, 0, where,
                    judge(lead, value, 0.5, same_data=False, signed=True), paper_text=text, tolerance=0.5,
                    tolerance_why="printed counts", signed=True,
                    note="the paper's claim: Method C finds the most relevant documents"))
    total = found.to_numpy().max()
    open_budgets = [b for b in budgets if found.loc[b].max() < total] or budgets
    ratio = float(min(found.loc[b, ["A", "B", "C"]].min() / found.loc[b, "pool"] for b in open_budgets))
    value, text = derived("2538 / 2495", 3)
    rows.append(Row("relevant found: weakest RBP-weighted method / pooling, smallest over budgets", value,
                    "Table 2", ratio, 3,
                    f"{description}, unjudged documents bypassed, budgets {', '.join(f'{b:,}' for b in open_budgets)} "
                    "(before every relevant document is found)", judge(ratio, value, ROUND3[0], same_data=False),
                    paper_text=text, tolerance=ROUND3[0], tolerance_why=ROUND3[1],
                    note="the paper's claim: every RBP-weighted method finds more relevant documents than pooling "
                         "at every budget (ratio above 1)"))
    return rows


def overlap_rows(runs: Any, qrels: pd.DataFrame, budget: int, description: str) -> tuple[list[Row], dict[str, Any]]:
    """Table 3: Method C's selections of ``budget`` judgments at p = 0.5, 0.8, 0.95 and the share each two
    have in common (:func:`pyterrier_noise.experiments.judgment_overlap`); the rows and the table."""
    ps = (0.5, 0.8, 0.95)
    sel = {p: simulate(runs, qrels, method="C", checkpoints=[budget], p_select=p, p_eval=[p],
                       significance=False).judgments.iloc[:budget] for p in ps}
    table = judgment_overlap(sel)
    where = f"{description}, Method C, {budget:,} judgments per selection"
    rows = []
    for (a, b), printed in TABLE3_OVERLAP.items():
        ours = float(table.loc[a, b]) / budget
        value, text = derived(f"{printed} / {TABLE3_BUDGET}", 4)
        rows.append(Row(f"judgments shared by Method C's selections at p = {a:g} and p = {b:g} (share)",
                        value, "Table 3, 10,000 judgments", ours, 3, where,
                        judge(ours, value, 5e-5, same_data=False), paper_text=text, tolerance=5e-5,
                        tolerance_why="printed counts of 10,000", note="TREC-8 (129 runs, 50 topics) in the paper"))
    far, near = float(table.loc[0.5, 0.95]), float(table.loc[0.5, 0.8])
    value, text = derived(f"({TABLE3_OVERLAP[(0.5, 0.95)]} - {TABLE3_OVERLAP[(0.5, 0.8)]}) / {TABLE3_BUDGET}", 4)
    gap = (far - near) / budget
    rows.append(Row("shared judgments: p = 0.5 vs 0.95 minus p = 0.5 vs 0.8 (share)", value, "Table 3", gap, 3, where,
                    judge(gap, value, 5e-5, same_data=False, signed=True), paper_text=text, tolerance=5e-5,
                    tolerance_why="printed counts of 10,000", signed=True,
                    note="the paper's claim: the further apart the persistences, the more the judgment sets differ"))
    out = {"columns": ["p", *[f"{p:g}" for p in ps]],
           "rows": [[f"{a:g}", *[int(table.loc[a, b]) for b in ps]] for a in ps]}
    return rows, out


def reliability_rows(coll: Any, n_judged: int) -> list[Row]:
    """Table 5's last two rows: the base-vs-base share of top-third pairs significant (one-tailed Wilcoxon,
    0.95) at all judgments, by RBP (p = 0.8) and by MAP (:func:`pyterrier_noise.selection.separation`)."""
    import warnings

    from ..selection import separation
    specs = {"RBP": MeasureSpec("RBP", p=0.8), "MAP": MeasureSpec("AP")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = AlignedRuns.build(coll.runs, coll.qrels, on_topic_mismatch="ignore").evaluate(list(specs.values()))
    per = {k: out[s][:, :, 0] for k, s in specs.items()}
    top = np.argsort(-per["MAP"].mean(axis=1), kind="stable")[:max(2, len(coll.runs) // 3)]
    where = (f"{coll.description}, all {n_judged:,} judgments, the top third ({len(top)} runs) by MAP, "
             f"{len(top) * (len(top) - 1) // 2:,} pairs")
    share = {}
    for k, x in per.items():
        x = x[top]
        share[k] = separation({"base": x, "residual": np.zeros_like(x), "projected": x})["sig_base_base"]
    rows = [Row(f"base-vs-base share of top-third pairs at all judgments, {k}", float(TABLE5_ALL[k]),
                f"Table 5, 86,830 judgments ({k})", share[k], 3, where,
                judge(share[k], float(TABLE5_ALL[k]), ROUND3[0], same_data=False), paper_text=TABLE5_ALL[k],
                tolerance=ROUND3[0], tolerance_why=ROUND3[1], note="TREC-8, 43 runs, 903 pairs in the paper")
            for k in ("RBP", "MAP")]
    value, text = derived(f"{TABLE5_ALL['RBP']} - {TABLE5_ALL['MAP']}", 3)
    gap = share["RBP"] - share["MAP"]
    rows.append(Row("base-vs-base share at all judgments: RBP minus MAP", value, "Table 5, 86,830 judgments", gap, 3,
                    where, judge(gap, value, ROUND_DIFF[0], same_data=False, signed=True), paper_text=text,
                    tolerance=ROUND_DIFF[0], tolerance_why=ROUND_DIFF[1], signed=True,
                    note="the conclusion: 'RBP values can more reliably be used for significance tests than can MAP "
                         "scores'"))
    return rows


def per_query_rows(coll: Any, at08: pd.DataFrame, budgets: list[int], quick: bool, progress: bool,
                   runs: Any = None) -> list[Row]:
    """The abstract's 'around 200 documents for each of 50 queries ... identify the best systems': Method C's
    base-vs-top share at 200 judgments per topic against its share at all judgments (Table 5: 0.430 at 10,000
    judgments, 0.498 for RBP at all 86,830).  ``runs``: the collection's runs already aligned for the replays
    (:func:`_replay_alignment`; default: its runs)."""
    n_topics = coll.qrels["qid"].nunique()
    budget = PER_QUERY * n_topics
    if budget >= budgets[-1] or quick:
        return []
    summary, _ = compare_methods(coll.runs if runs is None else runs, coll.qrels, methods=["C"], checkpoints=[budget],
                                 p_select=0.8, p_eval=[0.8], progress=progress)
    at = float(summary["sig_base_upper"].iloc[0])
    full = float(at08[(at08["checkpoint"] == budgets[-1]) & (at08["method"] == "C")]["sig_base_upper"].iloc[0])
    ratio = at / full if full else float("nan")
    value, text = derived(f"{TABLE5_C_TOP_10000} / {TABLE5_RBP_TOP_ALL}", 3)
    where = (f"{coll.description}, Method C, {budget:,} judgments ({PER_QUERY} per topic, "
             f"{budget / budgets[-1]:.0%} of all {budgets[-1]:,}) against all")
    return [Row(f"base-vs-top share of Method C at {PER_QUERY} judgments per topic / at all judgments", value,
                "Table 5 (Method C at 10,000; RBP at 86,830)", ratio, 3, where,
                NOT_COMPARABLE, paper_text=text, tolerance=ROUND_DIFF[0], tolerance_why=ROUND_DIFF[1],
                note=(f"ours {at:.3f} / {full:.3f}; TREC-8 has 1,737 judgments per query, TREC-COVID round 1 "
                      f"{budgets[-1] / n_topics:.0f}: {PER_QUERY} per topic is most of ours, so the comparison "
                      "does not test the claim"))]


def claims(rows: list[Row]) -> list[Claim]:
    """The paper's headline claims (abstract, Sec. 7) and the rows that test them."""
    v = {r.quantity: r for r in rows}
    per = [q for q in v if q.startswith("base-vs-top share of Method C at")]
    c_rows = ["base-vs-top: C minus the best other method", "relevant found: C minus the best other method"]
    c_rows = [q for q in c_rows if q in v]
    c_ok = [v[q].ours is not None and v[q].ours > 0 for q in c_rows if v[q].verdict != NOT_COMPARABLE]
    rel = v["base-vs-base share at all judgments: RBP minus MAP"].ours
    res = v["average residual (p = 0.8) of the top third: C minus pooling"].ours
    out = [
        Claim("judging around 200 documents for each of 50 queries in a TREC-scale evaluation of over 100 runs is "
              "sufficient to identify the best systems", "Abstract; Sec. 7",
              per or ["base-vs-top: C minus the best other method"], NOT_TESTABLE,
              "TREC-COVID round 1 has about 290 judgments per topic in all (TREC-8: 1,737), so 200 per topic is most "
              "of the judgments and cannot show a saving"),
        Claim("RBP values can more reliably be used for significance tests than MAP scores", "Sec. 7; Table 5",
              ["base-vs-base share at all judgments: RBP minus MAP",
               "base-vs-base share of top-third pairs at all judgments, RBP",
               "base-vs-base share of top-third pairs at all judgments, MAP"],
              SUPPORTED if rel > 0 else CONTRADICTED,
              f"at all judgments RBP separates {rel:+.3f} more of the top-third pairs than MAP (paper +0.081)"),
        Claim("the new methods (Method C best) identify the best systems rapidly and find more relevant documents",
              "Sec. 5; Sec. 7", c_rows,
              NOT_TESTABLE if not c_ok else SUPPORTED if all(c_ok) else CONTRADICTED if not any(c_ok) else MIXED,
              "Method C minus the best other method: " + "; ".join(
                  f"{q.split(':')[0]} {v[q].ours:+.{v[q].decimals}f}" + (" (a floor effect: not comparable)"
                                                         if v[q].verdict == NOT_COMPARABLE else "")
                  for q in c_rows) + " (the paper: +0.023 and +34)"),
        Claim("in all except one combination the Method C judgment sets give smaller average residuals than pooling",
              "Sec. 5; Table 4", ["average residual (p = 0.8) of the top third: C minus pooling"],
              SUPPORTED if res < 0 else CONTRADICTED,
              f"at p = 0.8 Method C's top-third residual is {res:+.4f} from pooling's (paper -0.0446)"),
    ]
    return out


def _table5_rows(at08: pd.DataFrame, near: int, where: str) -> list[Row]:
    """Table 5 at the budget ``near`` (nearest the paper's 5,000 judgments): each method's shares of significant
    top-third pairs, and the paper's two claims about base-vs-top (Method C leads, pooling trails)."""
    rows = []
    why5 = "TREC-8 (129 runs, 50 topics, 0.78 judgments per run and topic) in the paper"
    for col, paper in TABLE5_5000.items():
        for m in METHODS:
            ours = float(at08[(at08["checkpoint"] == near) & (at08["method"] == m)][col].iloc[0])
            rows.append(Row(f"{COLUMN_WORDS[col]} share of top-third pairs, {m}", paper[m],
                            "Table 5, 5,000 judgments", ours, 3, where,
                            judge(ours, paper[m], ROUND3[0], same_data=False),
                            paper_text=f"{paper[m]:.3f}", tolerance=ROUND3[0], tolerance_why=ROUND3[1], note=why5))
    top = at08[at08["checkpoint"] == near].set_index("method")["sig_base_upper"]
    floor = bool(top.max() < FLOOR)
    floor_note = (f"a floor effect on our data: every method separates at most {top.max():.3f} of the pairs at this "
                  "budget, so the methods cannot be told apart" if floor else "")
    lead = float(top["C"] - top[["pool", "A", "B"]].max())
    value, text = derived("0.336 - 0.313", 3)
    rows.append(Row("base-vs-top: C minus the best other method", value, "Table 5, 5,000 judgments", lead, 3, where,
                    NOT_COMPARABLE if floor else judge(lead, value, ROUND_DIFF[0], same_data=False, signed=True),
                    paper_text=text, tolerance=ROUND_DIFF[0], tolerance_why=ROUND_DIFF[1], signed=True,
                    note=floor_note or "the paper's claim: Method C separates the top runs best at a small budget"))
    gap = float(top[["A", "B", "C"]].min() - top["pool"])
    value, text = derived("0.130 - 0.033", 3)
    rows.append(Row("base-vs-top: worst RBP-weighted method minus pooling", value, "Table 5, 5,000 judgments", gap, 3,
                    where, NOT_COMPARABLE if floor else judge(gap, value, ROUND_DIFF[0], same_data=False, signed=True),
                    paper_text=text, tolerance=ROUND_DIFF[0], tolerance_why=ROUND_DIFF[1], signed=True,
                    note=floor_note or "the paper's claim: every RBP-weighted method beats pooling"))
    return rows


def _replay_alignment(coll: Any) -> AlignedRuns:
    """The collection's runs aligned to its qrels with a table row for every retrieved document, as
    :func:`~pyterrier_noise.selection.compare_methods` and :func:`~pyterrier_noise.selection.simulate`
    align them: built once for every replay of the reproduction."""
    return AlignedRuns.build(coll.runs, coll.qrels, topics="runs", on_topic_mismatch="ignore", include_unjudged=True)


def run(data: Path | str, quick: bool = False, progress: bool = False) -> Reproduction:
    """The worked example and the budget experiment (both feeds and the bypass table unless ``quick``)."""
    coll = load_collection(data)
    aligned = _replay_alignment(coll)
    n_judged = len(coll.qrels)
    budgets = _budgets(n_judged, quick, coll.synthetic)
    feeds = {"all": None} if quick else {"all": None, "contributing": coll.contributing}
    parts = []
    for feed, pool_runs in feeds.items():
        summary, _ = compare_methods(aligned, coll.qrels, methods=list(METHODS), checkpoints=budgets,
                                     p_select=0.8, p_eval=[0.5, 0.8, 0.95], pool_runs=pool_runs, progress=progress)
        parts.append(summary.assign(feed=feed))
    summary = pd.concat(parts, ignore_index=True)
    at08 = summary[(summary["feed"] == "all") & (summary["p_eval"] == 0.8)]
    n_cells = len(coll.runs) * coll.qrels["qid"].nunique()
    target = PAPER_PER_RUN_TOPIC * n_cells
    near = min(budgets, key=lambda b: abs(b - target))
    where = f"{coll.description}, pool fed by all runs, {near:,} judgments ({near / n_cells:.2f} per run and topic)"
    rows = worked_example_rows()
    rows += _table5_rows(at08, near, where)
    bb = at08[at08["method"] == "C"].set_index("checkpoint")["sig_base_base"]
    spread = float(bb.max() - bb.min())
    value, text = derived(f"{max(TABLE5_C_BASE):.3f} - {min(TABLE5_C_BASE):.3f}", 3)
    rows.append(Row("base-vs-base of C: largest minus smallest over budgets", value, "Table 5", spread, 3,
                    f"{coll.description}, budgets {', '.join(f'{b:,}' for b in budgets)}",
                    judge(spread, value, ROUND_DIFF[0], same_data=False), paper_text=text, tolerance=ROUND_DIFF[0],
                    tolerance_why=ROUND_DIFF[1],
                    note="the paper: base-vs-base significance stays flat whatever the budget (0.504, 0.499, 0.503 at "
                         "5,000, 10,000, 20,000); ours moves " + " -> ".join(f"{v:.3f}" for v in bb.to_numpy())))
    rows += reliability_rows(coll, budgets[-1])
    rows += per_query_rows(coll, at08, budgets, quick, progress, runs=aligned)
    residual = at08[at08["checkpoint"] == near].set_index("method")["top_residual"]
    diff = float(residual["C"] - residual["pool"])
    value, text = derived(f"{TABLE4_C_08} - {TABLE4_POOL_08}", 4)
    rows.append(Row("average residual (p = 0.8) of the top third: C minus pooling", value,
                    "Table 4, 10,000 judgments", diff, 4, where,
                    judge(diff, value, 1e-4, same_data=False, signed=True), paper_text=text, tolerance=1e-4,
                    tolerance_why="a difference of two values printed to 4 decimals: one unit", signed=True,
                    note="the paper: 'in all except one combination the Method C judgment sets give smaller average "
                         "residuals' than pooling"))
    tables = {"table5": table5(summary, budgets), "table4": table4(summary, budgets[-1])}
    budget3 = budgets[0] if quick else budgets[1]
    more, tables["table3"] = overlap_rows(aligned, coll.qrels, budget3, coll.description)
    rows += more
    if not quick:
        cps = [1000, 2000, 4000, 8000] if not coll.synthetic else budgets
        cps = [c for c in cps if c <= n_judged] or budgets
        bypass, _ = compare_methods(aligned, coll.qrels, methods=list(METHODS), checkpoints=cps, p_eval=[0.8],
                                    missing="bypass", significance=False, progress=progress)
        tables["table2"] = table2(bypass, cps)
        rows += table2_rows(bypass, cps, coll.description)
    return Reproduction(
        paper=PAPER, citation=CITATION, title=TITLE,
        experiment=("pooling and Methods A, B, C replayed against the qrels at budgets "
                    f"{', '.join(f'{b:,}' for b in budgets)} (selection p = 0.8, top third of the runs by AP on "
                    "the full qrels, one-tailed Wilcoxon over topics)"),
        data=coll.description,
        data_differs=("the paper used TREC-8 ad hoc (129 runs, 50 topics, 86,830 judgments); "
                      + ("the synthetic collection stands in for it" if coll.synthetic else
                         "the judgments here come from the pools of the contributing runs only, so a document no "
                         "contributing run retrieved counts as non-relevant")),
        command=f"pyterrier-noise reproduce {PAPER}{data_option(data)}" + (" --quick" if quick else ""),
        quick=quick, rows=rows, tables=tables, claims=claims(rows),
        not_yet=["Table 1 and Figs. 1-3 (TREC-8 runs; plots)", "the TREC-5 training runs and the 4,100-run "
                 "experiment of Sec. 7: not in our data"])


__all__ = ["run", "overlap_rows", "worked_example_rows", "table5", "table4", "table2", "table2_rows"]
