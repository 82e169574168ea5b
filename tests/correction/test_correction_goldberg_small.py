"""Goldberg et al.'s correction with a small gold sample: is the confusion matrix identified?

``confusion_determinant_z(counts)`` is ``|det J| / sd(det J)``, the graded form of the binary
``D / sd(D)`` (Goldberg et al. 2017, Sec 3.2, Eq 8).  Where each expected number comes from:
* TREC 2007 Enterprise (Goldberg et al. 2017, Sec 7, Table 2): the counts of runs DocRun02 and
  YORK07ED4 give ``D / sd(D)`` = 3.24 and 1.29 (recomputed from the table's counts; the second judge
  cannot be told apart from random);
* the eBay calibration (Sec 6: 43 of 59 gold-relevant and 67 of 84 gold-non-relevant pairs agreed):
  ``D = 0.526433``, ``sd(D) = sqrt(a (1 - a) / 59 + b (1 - b) / 84)``, written out here;
* graded: the first-order variance is the ``n -> inf`` limit of the exact variance of ``det`` over
  the multinomial rows, computed exactly from the permutation expansion of the determinant (the
  rows are independent, so ``E[det^2] = sum_{s,t} sgn(s) sgn(t) prod_g E[J_g s(g) J_g t(g)]``);
* the same number as ``JudgeCalibration.diagnostics()["D_over_sd"]`` (Jacobi's formula);
* ``CheapStudy.goldberg_diagnostics``: the weights' shares by brute force over the runs' top 3.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from pyterrier_noise.correction import CorrectionWarning
from pyterrier_noise.correction import JudgeCalibration
from pyterrier_noise.correction.estimators import confusion_determinant_z

from test_correction_goldberg_strata import GRADES, J_DEEP, J_TOP, known_collection, uniform_sample
from test_correction_cheap import ebay_study


def test_binary_is_d_over_sd_d_of_the_paper_examples():
    # rows gold N, R; columns cheap N, R (Table 2: DocRun02 17 of 38 R agreed, 216 of 262 N agreed)
    assert confusion_determinant_z([[216, 46], [21, 17]]) == pytest.approx(3.235088, abs=1e-6)
    assert confusion_determinant_z([[230, 55], [36, 14]]) == pytest.approx(1.286019, abs=1e-6)
    a, b = 43 / 59, 67 / 84                                   # eBay, Sec 6
    d, sd = a + b - 1, np.sqrt(a * (1 - a) / 59 + b * (1 - b) / 84)
    assert d == pytest.approx(0.526433, abs=1e-6)
    assert confusion_determinant_z([[67, 17], [16, 43]]) == pytest.approx(d / sd, rel=1e-12)
    # the order of the labels does not matter (rows and columns permuted together)
    assert confusion_determinant_z([[43, 16], [17, 67]]) == pytest.approx(d / sd, rel=1e-12)


def test_graded_is_jacobis_formula_of_judge_calibration():
    counts = np.array([[14, 4, 2], [3, 12, 5], [1, 3, 16]])    # the graded test vector of the seed notes
    ref = JudgeCalibration(counts).diagnostics()["D_over_sd"]
    assert confusion_determinant_z(counts) == pytest.approx(ref, rel=1e-12)


def _exact_det_variance(J: np.ndarray, n: float) -> float:
    """Var(det J_hat) when row g of J_hat is Multinomial(n, J[g]) / n, exactly (permutation expansion)."""
    L = len(J)
    M = [np.outer(r, r) * (1 - 1 / n) + np.diag(r) / n for r in J]      # E[J_g J_g^T]
    perms = list(itertools.permutations(range(L)))

    def sign(p):
        return round(np.linalg.det(np.eye(L)[list(p)]))
    e2 = sum(sign(s) * sign(t) * np.prod([M[g][s[g], t[g]] for g in range(L)]) for s in perms for t in perms)
    return e2 - np.linalg.det(J) ** 2


def test_graded_first_order_variance_is_the_limit_of_the_exact_one():
    for J in (J_TOP, J_DEEP):
        for n in (1e6, 1e8):
            z = confusion_determinant_z(J * n)
            exact = _exact_det_variance(J, n)
            assert abs(np.linalg.det(J)) / np.sqrt(exact) == pytest.approx(z, rel=10 / n ** 0.5 + 1e-6)
        # with 10 pairs a row the higher-order terms are not negligible: the first order is an approximation
        assert not np.isclose(abs(np.linalg.det(J)) / np.sqrt(_exact_det_variance(J, 10)),
                              confusion_determinant_z(J * 10), rtol=1e-3)


def test_singular_missing_and_perfect_matrices():
    assert confusion_determinant_z([[5, 5, 0], [5, 5, 0], [0, 0, 4]]) == 0.0     # two equal rows
    assert confusion_determinant_z([[5, 5, 0], [0, 0, 0], [0, 0, 4]]) == 0.0     # a gold grade without pairs
    assert confusion_determinant_z(np.diag([3, 7, 2])) == np.inf                # every row in one grade: exact
    # more pairs in the same proportions: the ratio grows like sqrt(n)
    assert confusion_determinant_z(J_TOP * 400) == pytest.approx(2 * confusion_determinant_z(J_TOP * 100),
                                                                  rel=1e-12)


def test_study_diagnostics_and_the_warning_on_a_known_collection():
    """Top stratum: 10 gold pairs per grade with exactly J_TOP; deep: the same with J_DEEP (neither identified)."""
    st, gold, cheap_base, cal = known_collection(bins=(2,))
    cheap = cheap_base.copy()
    ev = np.flatnonzero(st.aligned.table.frame["qid"].to_numpy() == "e")
    cheap[ev] = [0, 1, 2, 1, 0]
    z_top, z_deep = confusion_determinant_z(10 * J_TOP), confusion_determinant_z(10 * J_DEEP)
    assert z_top < z_deep < 2
    with pytest.warns(CorrectionWarning, match="is not identified by the gold sample"), \
            pytest.warns(CorrectionWarning, match=rf"of P@3: the confusion matrix of rank stratum 1-2 \(97% of the "
                                               rf"measure's weight; gold pairs per gold grade 10, 10, 10\) is not "
                                               rf"identified by the gold sample: \|det J\| / sd\(det J\) = "
                                               rf"{z_top:.3g} < 2"):
        st.estimate(cheap, gold[cal], uniform_sample(cal, len(gold)), methods=("goldberg",), grades=GRADES)
    d = st.goldberg_diagnostics
    p3 = d[d["measure"] == "P@3"].set_index("strata")
    assert list(p3.index) == ["1-2", "3+"]
    np.testing.assert_allclose(p3["det_z"], [z_top, z_deep], rtol=1e-12)
    assert p3["gold_pairs"].tolist() == [(10, 10, 10), (10, 10, 10)]
    assert p3["identified"].tolist() == [False, False]
    assert confusion_determinant_z(20 * J_DEEP) > 2          # twice the pairs would identify the deep one
    # brute force: P@3 weighs each of a run's top 3 documents alike; run A's top 3 are e0, e1, e2, B's
    # e3, e4, e0, C's the 2 calibration documents of each of 15 topics; only e2 (best rank 3) is in "3+"
    np.testing.assert_allclose(p3["weight"], [35 / 36, 1 / 36], rtol=1e-12)
    assert set(d["measure"]) == {"P@3", "RBP(p=0.8)"}


def test_the_ebay_calibration_is_identified_and_does_not_warn():
    st, c, gold, smp = ebay_study(500, 939)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*merged into the neighbouring stratum")   # empty "1-10" row
        st.estimate(c, gold, smp, methods=("goldberg",))
    d = st.goldberg_diagnostics
    assert len(d) == 1 and bool(d["identified"].iloc[0]) and d["weight"].iloc[0] == 1.0
    a, b = 43 / 59, 67 / 84
    assert d["det_z"].iloc[0] == pytest.approx((a + b - 1) / np.sqrt(a * (1 - a) / 59 + b * (1 - b) / 84),
                                               rel=1e-12)
    assert d["gold_pairs"].iloc[0] == (84, 59)
