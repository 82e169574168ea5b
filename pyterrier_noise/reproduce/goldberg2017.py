"""Goldberg, Trotman, Wang, Min and Wan (2017): the eBay correction (Sec. 6) and the Algorithm 2 simulation (Sec. 5).

The eBay example is the paper's own data (summary statistics and a 143-pair calibration), so its
numbers must match exactly; the coverage of :func:`~pyterrier_noise.correction.compare`'s intervals
comes from :mod:`pyterrier_noise.reproduce.coverage`; the simulation is the paper's Algorithm 2 setting (true P@10 = 0.4,
m_JR = 0.9, m_JN = 0.8, 250 + 250 calibration pairs, 50 queries), vectorised over experiments with
:func:`pyterrier_noise.correction.label_mass` and :func:`~pyterrier_noise.correction.corrected_from_mass`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..correction import JudgeCalibration, compare, corrected_from_mass, correct_summary, label_mass
from .record import NOT_REPRODUCED, REPRODUCED, Reproduction, Row

PAPER = "goldberg2017"
CITATION = "Goldberg, Trotman, Wang, Min and Wan (2017)"
TITLE = "Drawing Sound Conclusions from Noisy Judgments"
#: the paper's own numbers: no data folder needed
NEEDS_DATA = False
EBAY = "the paper's eBay summary statistics and calibration (Sec. 6)"


def _close(ours: float, paper: float, tol: float) -> str:
    return REPRODUCED if abs(ours - paper) <= tol else NOT_REPRODUCED


def ebay_rows() -> list[Row]:
    """The eBay example: corrected P@3 and its SE (Eq 5, Eq 7), naive and corrected p (Eq 9-11)."""
    cal = JudgeCalibration.binary(59, 43, 84, 67)
    a = correct_summary(0.6260, 0.414, 10278, cal, measure="P@3")
    b = correct_summary(0.6385, 0.402, 20604, cal, measure="P@3")
    paper_eq = compare(a, b, calibration="independent")
    rows = [
        Row("corrected P@3, data set a", 0.8047, "Sec. 6 (Eq 5)", a.value, 4, EBAY, _close(a.value, 0.8047, 5e-4)),
        Row("SE of corrected P@3, a", 0.0903, "Sec. 6 (Eq 7)", a.se, 4, EBAY, _close(a.se, 0.0903, 5e-4)),
        Row("corrected P@3, data set b", 0.8284, "Sec. 6 (Eq 5)", b.value, 4, EBAY, _close(b.value, 0.8284, 5e-4)),
        Row("SE of corrected P@3, b", 0.0923, "Sec. 6 (Eq 7)", b.se, 4, EBAY, _close(b.se, 0.0923, 5e-4)),
        Row("naive p-value of a vs b (Welch)", 0.011, "Sec. 6 (Eq 9)", paper_eq.naive_p_value, 4, EBAY,
            _close(paper_eq.naive_p_value, 0.011, 1e-3), paper_text="about 0.011"),
        Row("corrected p-value of a vs b, independent calibrations", 0.841, "Sec. 6 (Eq 10-11)", paper_eq.p_value,
            3, EBAY, _close(paper_eq.p_value, 0.841, 1e-3),
            note="exact arithmetic on the printed inputs gives 0.854 (0.859 with the rounded inputs); the paper's "
                 "0.841 cannot be recovered, but the conclusion (not significant) is the same"),
    ]
    return rows


def algorithm2_rows(n_sim: int, seed: int = 0) -> list[Row]:
    """Algorithm 2 (Sec. 5): naive vs corrected P@10 over ``n_sim`` simulated experiments and the
    coverage of their 95% intervals (naive: SD of the per-query values / sqrt(50); corrected: Eq 7)."""
    rng = np.random.default_rng(seed)
    n, k, n_cal = 50, 10, 250
    m_g = np.linspace(0.49, 0.31, k)                                # true P@10 = 0.4
    gold = rng.random((n_sim, n, k)) < m_g
    u = rng.random((n_sim, n, k))
    bronze = np.where(gold, u < 0.9, u < 0.2).astype(np.int64)      # m_JR = 0.9, m_JN = 0.8
    agree_r, agree_n = rng.binomial(n_cal, 0.9, n_sim), rng.binomial(n_cal, 0.8, n_sim)
    counts = np.stack([np.stack([agree_n, n_cal - agree_n], -1), np.stack([n_cal - agree_r, agree_r], -1)], axis=1)
    res = corrected_from_mass(label_mass(bronze, np.full(k, 1 / k), 2), counts, [0.0, 1.0])
    per_query = bronze.mean(axis=2)
    naive = per_query.mean(axis=1)
    naive_se = per_query.std(axis=1, ddof=1) / np.sqrt(n)
    naive_cov = float(np.mean(np.abs(naive - 0.4) <= 1.96 * naive_se))
    cov = float(np.mean(np.abs(res.value - 0.4) <= 1.96 * res.se))
    mc = 3 * np.sqrt(0.05 * 0.95 / n_sim)                           # 3 Monte Carlo SEs of a 5% / 95% share
    sim = f"{n_sim:,} simulated experiments in the paper's Algorithm 2 setting (seed {seed})"
    return [
        Row("naive P@10, mean over experiments", 0.48, "Sec. 5 (0.4 x 0.7 + 0.2)", float(naive.mean()), 3, sim,
            _close(float(naive.mean()), 0.48, 3 * 0.022 / np.sqrt(n_sim) + 5e-4)),
        Row("corrected P@10, mean over experiments", 0.40, "Sec. 5, Fig. 2", float(res.value.mean()), 3, sim,
            _close(float(res.value.mean()), 0.40, 3 * 0.040 / np.sqrt(n_sim) + 5e-4)),
        Row("coverage of the naive 95% interval", 0.05, "Sec. 5 (\"only 5%\")", naive_cov, 3, sim,
            _close(naive_cov, 0.05, mc + 5e-3)),
        Row("coverage of the corrected 95% interval (Eq 7)", 0.95, "Sec. 5 (\"95%\")", cov, 3, sim,
            _close(cov, 0.95, mc + 5e-3)),
    ]


def coverage_rows(n_experiments: int, seed: int = 0) -> list[Row]:
    """The coverage of :func:`~pyterrier_noise.correction.compare`'s 95% intervals in the eBay setting, under
    both calibration modes (:func:`pyterrier_noise.reproduce.coverage.simulate`, the study of
    ``benchmarks/compare_coverage.py``)."""
    from .coverage import simulate
    res = simulate(n_experiments, seed)
    sim = f"{n_experiments:,} simulated experiments per design in the eBay setting (seed {seed})"
    rows = []
    words = {"one sample": "one calibration sample for both systems",
             "one sample, no difference": "one calibration sample, equal true P@3",
             "own samples": "each system its own calibration sample"}
    for r in res["rows"]:
        tol = 3 * np.sqrt(0.05 * 0.95 / n_experiments) + 5e-3
        if r["interval"] == "system a":
            if r["design"] != "one sample":
                continue
            what = "coverage of the 95% interval of one system's corrected P@3 (Eq 7)"
        else:
            what = (f"coverage of compare()'s 95% interval of the difference, {words[r['design']]}, "
                    f"calibration=\"{r['calibration']}\"")
        ok = abs(r["coverage"] - 0.95) <= tol
        note = ""
        if r["calibration"] == "independent" and r["design"] != "own samples":
            note = ("Eq 10-11 treat one calibration sample as two independent ones: the interval is far too wide "
                    "(it always covers), so compare()'s default with one sample is calibration=\"shared\"")
        elif not ok and r["coverage"] > 0.95:
            note = "the interval is conservative here: it covers more often than 95%"
        rows.append(Row(what, 0.95, "Sec. 6 (a 95% interval)", r["coverage"], 3, sim,
                        REPRODUCED if ok else NOT_REPRODUCED, note=note))
    return rows


DESIGN_WORDS = {"one sample": "one calibration sample for both", "one sample, no difference": "one sample, equal true P@3",
                "own samples": "each system its own sample"}


def correction_tables(n_experiments: int, seed: int = 0) -> dict[str, Any]:
    """docs/correction.md's two tables: the eBay comparison computed three ways (Eq 9, Eq 10/11 and the
    shared calibration) and the coverage study (:func:`pyterrier_noise.reproduce.coverage.simulate`)."""
    from .coverage import simulate
    cal = JudgeCalibration.binary(59, 43, 84, 67)
    a = correct_summary(0.6260, 0.414, 10278, cal, measure="P@3")
    b = correct_summary(0.6385, 0.402, 20604, cal, measure="P@3")
    ind, sh = compare(b, a, calibration="independent"), compare(b, a, calibration="shared")
    ebay = [["naive Welch test (Eq 9)", round(sh.naive_diff, 8), round(sh.naive_se, 8), round(sh.naive_statistic, 6),
             round(sh.naive_p_value, 6)],
            ['calibration="independent" (Eq 10/11)', round(ind.diff, 8), round(ind.se, 8), round(ind.z, 6),
             round(ind.p_value, 6)],
            ['calibration="shared" (the default here)', round(sh.diff, 8), round(sh.se, 8), round(sh.z, 6),
             round(sh.p_value, 6)],
            ["printed by Goldberg et al. (2017)", None, None, None, 0.841]]
    rows = []
    for r in simulate(n_experiments, seed)["rows"]:
        diff = r["interval"] != "system a"
        rows.append([DESIGN_WORDS[r["design"]], "difference" if diff else "system a",
                     r["calibration"] if diff else None, round(r["coverage"], 6),
                     round(r["mean_se"], 6) if diff else None, round(r["sd_of_difference"], 6) if diff else None])
    rows = [r for r in rows if r[1] == "difference" or r[0] == DESIGN_WORDS["one sample"]]
    return {"ebay": {"columns": ["eBay, `b − a` (P@3)", "diff", "SE", "z", "p"], "rows": ebay},
            "coverage": {"columns": ["design", "interval", "calibration", "coverage", "mean SE", "SD of the estimate"],
                         "rows": rows}}


def run(data: Path | str, quick: bool = False, progress: bool = False) -> Reproduction:
    """The eBay example, Algorithm 2 (10,000 experiments; 2,000 with ``quick``) and the coverage of
    compare()'s intervals (4,000 experiments per design; 500 with ``quick``).  ``data`` is not
    used: both are the paper's own numbers and setting."""
    n_sim = 2000 if quick else 10000
    n_cov = 500 if quick else 4000
    return Reproduction(
        paper=PAPER, citation=CITATION, title=TITLE,
        experiment=("the eBay example recomputed from its printed summary statistics; Algorithm 2 run "
                    f"{n_sim:,} times; the coverage of compare()'s intervals over {n_cov:,} simulated eBay-sized "
                    "experiments per design, under shared and independent calibrations"),
        data="the paper's own numbers (eBay, Sec. 6) and its simulation setting (Sec. 5)",
        data_differs="nothing: the eBay data are the paper's printed summaries, the simulation is the paper's",
        command=f"pyterrier-noise reproduce {PAPER}" + (" --quick" if quick else ""),
        quick=quick, rows=ebay_rows() + algorithm2_rows(n_sim) + coverage_rows(n_cov),
        tables=correction_tables(n_cov))


__all__ = ["run", "ebay_rows", "algorithm2_rows", "coverage_rows", "correction_tables"]
