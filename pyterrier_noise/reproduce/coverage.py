"""Coverage of :func:`pyterrier_noise.correction.compare`'s 95% intervals under both calibration modes.

A simulation study of Goldberg, Trotman, Wang, Min and Wan (2017)'s correction with everything
known: the gold judge's true P@3 of two systems, a bronze judge with a known confusion matrix
(true rates ``m_JR = 43/59``, ``m_JN = 67/84``, the eBay estimates of their Sec 6), a gold sample
of the eBay size (59 gold-relevant and 84 gold-non-relevant pairs) and the eBay numbers of queries
(10,278 and 20,604, three documents each).  Each simulated experiment draws the queries' bronze
labels and the calibration sample, corrects both systems (:func:`correct_summary`, their Eq 14 and
Eq 7) and compares them with :func:`compare` under ``calibration="shared"`` and
``calibration="independent"`` (the paper's Eq 10/11).  :func:`simulate` returns the share of
experiments whose 95% interval holds the true value, per design:

* ``one sample``: one calibration sample corrects both systems (the eBay design);
* ``one sample, no difference``: the same with equal true P@3;
* ``own samples``: each system has its own calibration sample (the TREC design of Sec 7); only
  ``independent`` applies there.

The random draws are vectorised and seeded; the package's estimator is then called once per
experiment, since that call is what is checked.  ``benchmarks/compare_coverage.py`` and
``pyterrier-noise reproduce goldberg2017`` both run it.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from ..correction import JudgeCalibration, compare, correct_summary

__all__ = ["simulate", "ebay", "TPR", "TNR", "N_R", "N_N", "N_A", "N_B", "K"]

TPR, TNR = 43 / 59, 67 / 84          # true judge rates (the eBay estimates, Goldberg et al. 2017, Sec 6)
N_R, N_N = 59, 84                    # gold sample: the eBay size (143 pairs)
N_A, N_B = 10278, 20604              # queries of the two eBay data sets
K = 3                                # P@3


def _bronze_summaries(m_gold: float, n: int, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SD over ``n`` queries of bronze P@3, for ``size`` experiments (Eq 3: forward model)."""
    m_j = m_gold * TPR + (1 - m_gold) * (1 - TNR)
    pmf = stats.binom.pmf(np.arange(K + 1), K, m_j)
    counts = rng.multinomial(n, pmf, size=size)               # queries with 0..3 bronze-relevant docs
    x = np.arange(K + 1) / K
    mean = counts @ x / n
    var = (counts @ x ** 2 - n * mean ** 2) / (n - 1)
    return mean, np.sqrt(np.maximum(var, 0.0))


def _calibrations(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.binomial(N_R, TPR, size=size), rng.binomial(N_N, TNR, size=size)


def _calibration(made: dict, agree_r: int, agree_n: int) -> JudgeCalibration:
    """The binary calibration of ``agree_r`` of ``N_R`` and ``agree_n`` of ``N_N`` agreements, made
    once per count pair (``made`` holds those made; a calibration is never modified)."""
    cal = made.get((agree_r, agree_n))
    if cal is None:
        cal = made[(agree_r, agree_n)] = JudgeCalibration.binary(N_R, agree_r, N_N, agree_n)
    return cal


def _coverage(hits: np.ndarray) -> dict[str, float]:
    c = float(hits.mean())
    return {"coverage": c, "mc_se": float(np.sqrt(c * (1 - c) / hits.size))}


def simulate(n_experiments: int = 4000, seed: int = 0) -> dict:
    """Run the three designs; return the table rows."""
    rng = np.random.default_rng(seed)
    rows = []
    calibrations: dict[tuple[int, int], JudgeCalibration] = {}   # a few hundred distinct draws of 12,000
    designs = [("one sample", 0.805, 0.828, True), ("one sample, no difference", 0.805, 0.805, True),
               ("own samples", 0.805, 0.828, False)]
    for design, m_a, m_b, shared in designs:
        mean_a, sd_a = _bronze_summaries(m_a, N_A, n_experiments, rng)
        mean_b, sd_b = _bronze_summaries(m_b, N_B, n_experiments, rng)
        agree_r, agree_n = _calibrations(n_experiments, rng)
        agree_r2, agree_n2 = (agree_r, agree_n) if shared else _calibrations(n_experiments, rng)
        modes = ("shared", "independent") if shared else ("independent",)
        cover_a = np.zeros(n_experiments, bool)
        cover = {m: np.zeros(n_experiments, bool) for m in modes}
        se = {m: np.zeros(n_experiments) for m in modes}
        diff = np.zeros(n_experiments)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # a rare draw puts a corrected P@3 above 1: still counted
            for i in range(n_experiments):
                cal_a = _calibration(calibrations, int(agree_r[i]), int(agree_n[i]))
                cal_b = cal_a if shared else _calibration(calibrations, int(agree_r2[i]), int(agree_n2[i]))
                a = correct_summary(mean_a[i], sd_a[i], N_A, cal_a, measure="P@3")
                b = correct_summary(mean_b[i], sd_b[i], N_B, cal_b, measure="P@3")
                cover_a[i] = a.ci_low <= m_a <= a.ci_high
                for mode in modes:
                    c = compare(a, b, calibration=mode)
                    cover[mode][i] = c.ci_low <= m_a - m_b <= c.ci_high
                    se[mode][i] = c.se
                    diff[i] = c.diff
        rows.append({"design": design, "interval": "system a", "calibration": "-", **_coverage(cover_a)})
        for mode in modes:
            rows.append({"design": design, "interval": "difference a - b", "calibration": mode,
                         **_coverage(cover[mode]), "mean_se": float(se[mode].mean()),
                         "sd_of_difference": float(diff.std(ddof=1))})
    return {"rows": rows}


def ebay() -> dict:
    """The paper's eBay comparison (Sec 6) computed both ways."""
    cal = JudgeCalibration.binary(59, 43, 84, 67)
    a = correct_summary(0.6260, 0.414, 10278, cal, measure="P@3")
    b = correct_summary(0.6385, 0.402, 20604, cal, measure="P@3")
    out = {"paper_p_value": 0.841}
    for mode in ("shared", "independent"):
        c = compare(b, a, calibration=mode)
        out[mode] = {"diff": c.diff, "se": c.se, "z": c.z, "p_value": c.p_value}
    out["naive_p_value"] = compare(b, a).naive_p_value
    return out
