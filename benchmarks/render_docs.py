"""Store the numbers of docs tables that are not a reproduction as JSON in docs/data/, in each page's layout.

Every numeric table in docs/ is backed by JSON that a script wrote (tests/docs/test_docs_numbers.py
checks the page against it).  The reproductions write their own records
(``pyterrier-noise reproduce all --write-docs``); this script writes the others it can back:

* ``docs/data/tie_stats.json#table32``: ties in the TREC-COVID round-1 runs (Yang 2019 thesis,
  Table 3.2 layout), computed here with ``pyterrier_noise.ties.tie_stats_in_chunks`` in float64
  and float32; the TREC-7 and TREC-8 rows are the thesis's printed numbers.
* ``docs/data/selection_stopping.json#stopping``: judgments until a stopping rule of
  ``pyterrier_noise.selection.StopRule`` ends Methods C and A and pooling on TREC-COVID round 1
  (all runs pooled, p = 0.8, the round-1 qrels as the assessor; docs/evidence/selection.md).
* ``docs/data/banding_experiment.json#unchanged`` and ``#rho2``: the two tables of the banding
  experiment, taken from ``benchmarks/results/banding_experiment.json`` (run
  ``python benchmarks/banding_experiment.py`` first; skipped with a message when it is absent).

* ``docs/data/robustness_study.json#study`` and ``#reverse``: the TREC-COVID robustness study of
  docs/evidence/robustness.md (Rashidi, Zobel and Moffat 2023, Sec. 5), from ``study_data`` of
  ``benchmarks/w4_robustness.py`` (300 replicates, seed 1).
* ``docs/data/uncertainty_study.json``: the phi-matching and pool-depth tables of docs/evidence/uncertainty.md
  (Yang 2019, Ch. 4), from ``study`` of ``benchmarks/depth_experiment.py`` (without its plots or timings).
* ``docs/data/perturbation_judges.json#judges``: the named judges' rates (``judges.JUDGES``, ``sdt_rates``).
* ``docs/data/ties_table31.json#table31``: Yang (2019) thesis Table 3.1, scored by the engine's tie modes.

Usage:  python benchmarks/render_docs.py [NAME ...]   (a few minutes; needs ../shared/data; NAME limits it to
        tie_stats, selection_stopping, banding, robustness, uncertainty, perturbation, ties)
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


def covid_runs() -> dict:
    """TREC-COVID round 1's 143 runs, read once per process: the reproductions' copy
    (:func:`pyterrier_noise.reproduce.data.load_collection`), shared by the tables below (read-only)."""
    from pyterrier_noise.reproduce.data import load_collection, resolve_data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the 0-based ranks of some runs are announced while reading
        return load_collection(resolve_data(DATA.parent)).runs


def tie_stats_table() -> dict:
    from pyterrier_noise.ties import tie_stats_in_chunks
    runs = covid_runs()
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


def _benchmark(name: str):
    """A module of benchmarks/ (they are scripts, not a package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STUDY_LABELS = {"random flips": "random", "rank-biased flips": "rank-biased"}


def robustness_tables(n: int = 300, seed: int = 1) -> dict:
    """docs/evidence/robustness.md's two tables: the study of Rashidi, Zobel and Moffat (2023, Sec. 5) on TREC-COVID."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = _benchmark("w4_robustness").study_data(n, seed, covid_runs())
    study = [[STUDY_LABELS[r["model"]], r["measure"], [round(r["kendall_tau"], 6), round(r["kendall_tau_sd"], 6)],
              [round(r["rbo"], 6), round(r["rbo_sd"], 6)], round(r["tau_ap"], 6), int(r["significant_pairs"]),
              round(r["kept"], 6), round(r["lost"], 6), round(r["reversed"], 6), round(r["gained"], 6)]
             for r in d["rows"]]
    reverse = [[STUDY_LABELS[r["model"]], r["measure"], int(r["observed_significant"]), round(r["confirmed"], 6),
                round(r["same_direction"], 6), [round(r["window_mean"], 6), round(r["window_sd"], 6)]]
               for r in d["reverse"]]
    return {"study": {"columns": ["flips", "measure", "Kendall tau (sd)", "RBO (sd)", "tau_AP", "significant pairs",
                                  "kept", "lost", "reversed", "gained"], "rows": study},
            "reverse": {"columns": ["flips", "measure", "observed significant", "confirmed (true p < 0.05)",
                                    "same direction", "true p for observed p in [0.005, 0.015]: mean (sd)"],
                        "rows": reverse}}


def uncertainty_tables() -> dict:
    """docs/evidence/uncertainty.md's phi-matching and pool-depth tables (Yang 2019, Ch. 4) on TREC-COVID round 1."""
    import os
    de = _benchmark("depth_experiment")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = covid_runs()
        everything = de.all_aligned(runs)
        found = de.part_deep(everything)
        os.environ["DEPTH_BENCH_RUNS"] = ",".join(found["deep"])
        s = de.study(plots=False, everything=everything, runs=runs)
        del everything
    phi = []
    for m, x in s["phi_match"].items():
        smallest = min(c["phi"] for c in x["curve"])
        shown = f"{x['phi']:g} (the smallest phi tried)" if x["phi"] == smallest else round(x["phi"], 6)
        phi.append([m, shown, round(x["depth"], 6), round(x["tau"], 6), round(x["mean_residual"], 6)])
    topic = []
    for key in ("AP/kendall", "AP/rbo", "nDCG/kendall", "nDCG/rbo"):
        x = s["phi_per_topic"][key]
        m, c = key.split("/")
        topic.append([f"{m} / {'Kendall' if c == 'kendall' else 'RBO'}", round(x["mean_phi"], 6),
                      round(x["tau_R_phi"], 6), f"{x['p_value']:.1e}",
                      f"{x['below_0.8']} / {x['0.8_to_0.9']} / {x['at_least_0.9']}"])
    versions = [r["version"] for r in s["pool"]]
    heads = [versions[0]] + [v.replace("k=", "") for v in versions[1:]]
    pool = [["judged", *[int(r["judged"]) for r in s["pool"]]], ["relevant", *[int(r["relevant"]) for r in s["pool"]]],
            ["mean RBP(0.98) residual", *[round(r["mean_residual"], 6) for r in s["pool"]]]]
    label = {"AP": "AP", "nDCG": "nDCG", "RBP(p=0.98)": "RBP(0.98)"}
    disc = [[label[r["measure"]], *[round(100 * r[v], 6) for v in versions]] for r in s["discrimination"]]
    shallow = [1, 2, 3, 5, 10, 20, 50]
    agree = []
    for m in label:
        cells = {int(r["depth"]): f"{r['FP']} / {r['FN']}" for r in s["agreement"] if r["measure"] == m}
        agree.append([label[m], *[cells[k] for k in shallow]])
    move = []
    for m in label:
        rows = {str(r["depth"]): r for r in s["movement"] if r["measure"] == m}
        cells = [f"{rows[k]['pct_rise']:.1f} / {rows[k]['pct_same']:.1f} / {rows[k]['pct_fall']:.1f}"
                 for k in ("1", "5", "20", "100")]
        a = rows["all"]
        move.append([label[m], *cells, round(a["tau_diff"], 6), round(a["tau_abs_diff"], 6),
                     round(a["tau_resolved_abs_diff"], 6)])
    return {"phi": {"columns": ["metric", "matched phi", "expected depth", "tau_b", "mean RBP residual at phi"],
                    "rows": phi},
            "phi_per_topic": {"columns": ["reference / correlation", "mean phi", "tau_b(R, phi)", "p",
                                          "max corr < 0.8 / 0.8-0.9 / >= 0.9"], "rows": topic},
            "pool": {"columns": ["version", *heads], "rows": pool},
            "discrimination": {"columns": ["measure", *heads], "rows": disc},
            "agreement": {"columns": ["measure", "k=1", *[str(k) for k in shallow[1:]]], "rows": agree},
            "movement": {"columns": ["measure", "k=1", "k=5", "k=20", "k=100", "all depths: tau_b(res, diff)",
                                     "tau_b(res, \\|diff\\|)", "tau_b(resolved, \\|diff\\|)"], "rows": move}}


JUDGE_WORDS = {"smart_neutral": "Rashidi et al.'s main setting (\"TPR 0.93, FPR 0.07\")",
               "extreme": "their low-TPR case",
               "nist_primary": "Smucker & Jethani's primary (NIST) assessors",
               "crowd_secondary": "Smucker & Jethani's secondary (crowd) assessors"}


def judges_table() -> dict:
    """docs/perturbation.md's named judges: (d', bias) of ``judges.JUDGES`` and their rates by ``sdt_rates``."""
    from pyterrier_noise.judges import JUDGES, sdt_rates
    rows = []
    for name, words in JUDGE_WORDS.items():
        disc, bias = JUDGES[name]
        tpr, fpr = sdt_rates(disc, bias)
        rows.append([name, [float(disc), float(bias)], round(float(tpr), 6), round(float(fpr), 6), words])
    return {"columns": ["name", "(d', bias)", "TPR", "FPR", ""], "rows": rows}


#: Yang (2019) thesis, Table 3.1: a ranking of ten documents with three groups of tied scores (R = 5)
T31_DOCS = list("DHACMSWBEJ")
T31_SCORES = [9.8, 9.3, 9.3, 9.3, 8.4, 8.4, 8.2, 8.0, 8.0, 8.0]
T31_RELEVANT = set("ACSWJ")


def table31() -> dict:
    """docs/tied-evaluation.md's Table 3.1: expected, pessimistic and optimistic RBP(0.9), P@5, RR and AP by the engine."""
    from fractions import Fraction

    import pandas as pd

    from pyterrier_noise import AlignedRuns, MeasureSpec
    run = pd.DataFrame({"qid": "1", "docno": T31_DOCS, "score": T31_SCORES})
    qrels = pd.DataFrame({"qid": "1", "docno": T31_DOCS, "label": [float(d in T31_RELEVANT) for d in T31_DOCS]})
    specs = {"RBP(0.9)": MeasureSpec("RBP", p=0.9), "P@5": MeasureSpec("P", cutoff=5), "RR": MeasureSpec("RR"),
             "AP": MeasureSpec("AP")}
    values = {}
    for mode in ("expected", "pessimistic", "optimistic"):
        out = AlignedRuns.build({"t31": run}, qrels, ties=mode).evaluate(list(specs.values()))
        values[mode] = {k: float(out[s][0, 0, 0]) for k, s in specs.items()}

    def shown(k: str, v: float):
        if k == "RR":
            return str(Fraction(v).limit_denominator(100))
        return round(v, 6) if k != "P@5" else round(v, 1)
    rows = [[k, *[shown(k, values[mode][k]) for mode in ("expected", "pessimistic", "optimistic")]] for k in specs]
    return {"columns": ["metric", "expected", "min (pessimistic)", "max (optimistic)"], "rows": rows}


def main() -> int:
    only = set(sys.argv[1:])
    if only:
        parts = {"robustness": lambda: _write("robustness_study", robustness_tables(),
                                              "python benchmarks/render_docs.py robustness (benchmarks/w4_robustness.py "
                                              "study_data, 300 replicates, seed 1)"),
                 "uncertainty": lambda: _write("uncertainty_study", uncertainty_tables(),
                                               "python benchmarks/render_docs.py uncertainty (benchmarks/"
                                               "depth_experiment.py study, without plots or timings)"),
                 "perturbation": lambda: _write("perturbation_judges", {"judges": judges_table()},
                                                "python benchmarks/render_docs.py perturbation"),
                 "ties": lambda: _write("ties_table31", {"table31": table31()},
                                        "python benchmarks/render_docs.py ties (the engine's tie modes)")}
        unknown = only - set(parts)
        if unknown:
            print(f"render_docs: unknown part(s) {sorted(unknown)}; expected some of {sorted(parts)} (or none: all)",
                  file=sys.stderr)
            return 2
        for name in sorted(only):
            parts[name]()
        return 0
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
              "first to back the banding tables of docs/evidence/ties.md", file=sys.stderr)
    _write("perturbation_judges", {"judges": judges_table()}, "python benchmarks/render_docs.py perturbation")
    _write("ties_table31", {"table31": table31()}, "python benchmarks/render_docs.py ties (the engine's tie modes)")
    _write("robustness_study", robustness_tables(),
           "python benchmarks/render_docs.py robustness (benchmarks/w4_robustness.py study_data, 300 replicates, seed 1)")
    _write("uncertainty_study", uncertainty_tables(),
           "python benchmarks/render_docs.py uncertainty (benchmarks/depth_experiment.py study, without plots or timings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
