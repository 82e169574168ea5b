"""Store the numbers of docs tables that are not a reproduction as JSON in docs/data/, in each page's layout.

Every numeric table in docs/ is backed by JSON that a script wrote (tests/test_docs_numbers.py
checks the page against it).  The reproductions write their own records
(``pyterrier-noise reproduce all --write-docs``); this script writes the others it can back:

* ``docs/data/tie_stats.json#table32``: ties in the TREC-COVID round-1 runs (Yang 2019 thesis,
  Table 3.2 layout), computed here with ``pyterrier_noise.ties.tie_stats_in_chunks`` in float64
  and float32; the TREC-7 and TREC-8 rows are the thesis's printed numbers.
* ``docs/data/selection_stopping.json#stopping``: judgments until a stopping rule of
  ``pyterrier_noise.selection.StopRule`` ends Methods C and A and pooling on TREC-COVID round 1
  (all runs pooled, p = 0.8, the round-1 qrels as the assessor; docs/selection.md).
* ``docs/data/banding_experiment.json#unchanged`` and ``#rho2``: the two tables of the banding
  experiment, taken from ``benchmarks/results/banding_experiment.json`` (run
  ``python benchmarks/banding_experiment.py`` first; skipped with a message when it is absent).

Usage:  python benchmarks/render_docs.py          (about a minute; needs ../shared/data)
"""
from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trec-covid-round1"
OUT = ROOT / "docs" / "data"
BANDING = ROOT / "benchmarks" / "results" / "banding_experiment.json"

#: Yang (2019) thesis, Table 3.2: (runs %, run-topics %, docs %, geometric mean rank of the first tie)
THESIS_TABLE_3_2 = [
    ["TREC-7 (thesis), tied scores", 95.2, 91.0, 14.0, 66],
    ["TREC-7 (thesis), rank/score contradictions", 6.8, 4.2, 1.3, None],
    ["TREC-8 (thesis), tied scores", 93.8, 91.8, 11.0, 71],
    ["TREC-8 (thesis), rank/score contradictions", 6.2, 5.6, 1.8, None],
]
BAND_RHOS = ["1.1", "1.2", "1.5", "1.7", "2", "3", "4"]


def _write(name: str, tables: dict, source: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps({"source": source, "tables": tables}, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return path


def tie_stats_table() -> dict:
    from pyterrier_noise.io import read_runs
    from pyterrier_noise.ties import tie_stats_in_chunks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the 0-based ranks of some runs are announced while reading
        runs = read_runs(DATA / "runs")
    rows = []
    for precision, words in (("float64", "float64 equality"), ("float32", "float32, as trec_eval compares")):
        s = tie_stats_in_chunks(runs, precision, progress=False).summary
        t = s.loc["tied scores"]
        rows.append([f"TREC-COVID r1, tied scores ({words})", round(100 * t["share_runs"], 6),
                     round(100 * t["share_topics"], 6), round(100 * t["share_docs"], 6),
                     round(float(t["gm_first_tie_rank"]), 6)])
        if precision == "float64":
            c = s.loc["rank/score contradictions"]
            contradictions = ["TREC-COVID r1, rank/score contradictions", round(100 * c["share_runs"], 6),
                              round(100 * c["share_topics"], 6), round(100 * c["share_docs"], 6), None]
    rows.append(contradictions)
    return {"columns": ["", "runs %", "run-topics %", "docs %", "first tie (geometric mean rank)"],
            "rows": rows + THESIS_TABLE_3_2}


def stopping_table() -> dict:
    from pyterrier_noise.io import read_qrels, read_runs
    from pyterrier_noise.selection import StopRule, simulate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = read_runs(DATA / "runs")
    qrels = read_qrels(DATA / "qrels-rnd1.txt")
    budget = len(qrels)
    never = f"not within {budget:,}"

    def judgments(method: str, rules: list) -> int | str:
        used = []
        for rule in rules:
            res = simulate(runs, qrels, method=method, checkpoints=[budget], p_eval=[0.8], significance=False,
                           stop=rule)
            if res.stopped is not None:
                used.append(len(res.judgments))
        return min(used) if used else never

    rows = [["mean residual of the top 48 runs by midpoint <= 0.1",
             *[judgments(m, [StopRule(top_residual=0.1)]) for m in ("C", "A", "pool")]],
            ["leading run's base above every other run's upper bound (or projection)",
             *[judgments(m, [StopRule(leader="upper"), StopRule(leader="projected")]) for m in ("C", "A", "pool")]]]
    return {"columns": ["rule", "C", "A", "pooling"], "rows": rows}


def banding_tables(report: dict) -> dict:
    parts = [("covid", "TREC-COVID"), ("vaswani", "Vaswani")]
    measures = list(report["covid"]["results"]["2"])
    columns = ["rho"] + [f"{words} {m}" if i == 0 else m for key, words in parts for i, m in enumerate(measures)]
    unchanged = [[rho] + [round(100 * report[key]["results"][rho][m]["unchanged"], 6) for key, _ in parts
                          for m in measures] for rho in BAND_RHOS]
    rho2 = []
    for key, words in parts:
        for i, m in enumerate(measures):
            v = report[key]["results"]["2"][m]
            rho2.append([f"{words} ({report[key]['systems']} systems)" if i == 0 else "", m,
                         *[round(100 * v[k], 6) for k in ("both", "neither", "lost", "gained", "reversed")],
                         round(v["kendall_tau"], 6), round(v["spread_mean"], 6),
                         round(100 * v["pairs_ranges_overlap"], 6), v["noninferior_1pct"], v["noninferior_3pct"]])
    return {"unchanged": {"columns": columns, "rows": unchanged},
            "rho2": {"columns": ["", "measure", "both significant", "neither", "lost", "gained", "reversed", "tau",
                                 "spread", "overlap %", "NI 1 %", "NI 3 %"], "rows": rho2}}


def main() -> int:
    if not DATA.exists():
        print(f"render_docs: {DATA} is absent (../shared/data must sit beside the repository)", file=sys.stderr)
        return 1
    _write("tie_stats", {"table32": tie_stats_table()},
           "python benchmarks/render_docs.py (pyterrier_noise.ties.tie_stats_in_chunks on TREC-COVID round 1; "
           "thesis rows: Yang 2019, Table 3.2)")
    _write("selection_stopping", {"stopping": stopping_table()},
           "python benchmarks/render_docs.py (pyterrier_noise.selection.simulate with StopRule on TREC-COVID round 1)")
    if BANDING.exists():
        _write("banding_experiment", banding_tables(json.loads(BANDING.read_text())),
               "python benchmarks/banding_experiment.py, then python benchmarks/render_docs.py")
    else:
        print(f"render_docs: {BANDING.relative_to(ROOT)} is absent: run python benchmarks/banding_experiment.py "
              "first to back the banding tables of docs/ties.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
