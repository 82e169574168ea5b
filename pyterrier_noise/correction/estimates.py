"""Metric correction for noisy ("bronze") judges, calibrated against a gold judge.

Implements Goldberg, Trotman, Wang, Min and Wan, "Drawing Sound Conclusions from Noisy Judgments"
(WWW 2017), with the corrections and extensions of ``shared/spec/seed001-metric-correction.md``:

* :class:`JudgeCalibration` -- the bronze judge's confusion matrix ``J[g, b] = P(bronze=b | gold=g)``
  estimated from a sample of bronze-judged pairs that a gold judge re-judged (Sec 3.1, Sec 4.1);
* :func:`corrected_precision`, :func:`corrected_dcg`, :func:`corrected_rbp` and
  :func:`corrected_metric` -- corrected P@k (Eq 14), DCG@k (Eq 18) and RBP, per topic and as means
  over topics, with delta-method standard errors (Eq 7 and its graded form, notes Sec 12.2) or a
  bootstrap that resamples topics and redraws the calibration from its multinomial counts;
* :func:`correct_per_query`, :func:`correct_summary` and :func:`correct_experiment` -- the same
  correction applied to per-query values of a binary metric (e.g. ``pt.Experiment(perquery=True)``
  output) or to the summary statistics a paper reports;
* :func:`compare` -- difference of two corrected systems with its SE and p-value (Eq 10/11), under
  an independent or a *shared* calibration (notes Sec 12.3), and the naive Welch / paired t-test.

Every metric here is linear in per-document gains with label-independent rank weights,
``M_q = sum_s d_s * v[label_qs]``.  Its corrected value relabels each bronze grade with a
"corrected gain" ``w = J^-1 v`` (notes Sec 12.1), so the whole computation is one product of a
(topics x labels) "label mass" matrix with ``w``.  nDCG, AP, RR and other non-linear metrics are
not covered by the paper and are not offered.
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Union

import numpy as np
import pandas as pd
from scipy import stats

from .._warnings import CorrectionWarning
from .._validation import InputError, announce, check_choice, check_int, check_probability

__all__ = [
    "CorrectionWarning", "JudgeCalibration", "CorrectedEstimate", "Comparison", "MassCorrection",
    "corrected_precision", "corrected_dcg", "corrected_rbp", "corrected_metric",
    "correct_per_query", "correct_summary", "correct_experiment", "compare",
    "label_mass", "corrected_from_mass",
]

SeedLike = Union[int, np.random.Generator, None]

_SINGULAR_DET = 1e-9        # |det J| below this: the judge carries no usable information
_MAX_COND = 1e12            # condition number above this: the correction is numerically meaningless
_NEAR_RANDOM_Z = 2.0        # warn when D / sd(D) < 2 (notes Sec 12.4, A9)
_BOOT_CELLS = 2_000_000     # topic-resampling weights per chunk (replicates x topics)


def _stacklevel(start: int) -> int:
    """Stack level of the first frame outside this module (so warnings point at the user's call)."""
    frame = sys._getframe(2)            # the caller of _warn / _announce
    level = start
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
        level += 1
    return level


def _warn(message: str) -> None:
    warnings.warn(message, CorrectionWarning, stacklevel=_stacklevel(2))


def _announce(message: str) -> None:
    announce(message, stacklevel=_stacklevel(3))


def _py(x: Any) -> Any:
    """A numpy scalar as the plain Python value (for labels and messages)."""
    return x.item() if isinstance(x, np.generic) else x


# ------------------------------------------------------------------------------------------------
# small validators

def _check_int(name: str, value: Any, minimum: int) -> int:
    return check_int(name, value, minimum)


def _check_alpha(alpha: Any) -> float:
    return check_probability("alpha", alpha)


def _check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    return check_choice(name, value, choices)


def _check_ddof(ddof: Any) -> int:
    return _check_choice("ddof", ddof, (0, 1))


def _z(alpha: float) -> float:
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def _p_value(z: float, alternative: str) -> float:
    if alternative == "two-sided":
        return float(2.0 * stats.norm.sf(abs(z)))
    if alternative == "greater":
        return float(stats.norm.sf(z))
    return float(stats.norm.cdf(z))


# ------------------------------------------------------------------------------------------------
# calibration

class JudgeCalibration:
    """Confusion matrix of a bronze judge against a gold judge (Goldberg et al. 2017, Table 1, Sec 4.1).

    ``counts[g, b]`` is the number of calibration pairs the gold judge labelled ``g`` and the
    bronze judge labelled ``b`` (rows = gold, columns = bronze).  The estimated confusion matrix is
    the row-normalised counts, ``J[g, b] = P(bronze=b | gold=g)``; each row is a multinomial sample
    of size ``n_gold[g]``.  For binary labels ``tpr`` is the paper's ``m_JR`` and ``tnr`` its ``m_JN``.

    Numeric labels are sorted ascending (the higher of two binary labels is "relevant"); other
    labels keep the order given.  Every gold label needs at least one pair and the matrix must be
    invertible; otherwise :class:`~pyterrier_noise.errors.InputError` is raised.

    Args:
        counts: square array (or frame with gold labels as index and bronze labels as columns).
        labels: the labels of the rows/columns (default: the frame's index, else ``0..L-1``).
    """

    def __init__(self, counts: Any, labels: Sequence[Any] | None = None) -> None:
        if isinstance(counts, pd.DataFrame):
            if labels is None:
                labels = list(counts.index)
            if list(counts.columns) != list(counts.index):
                raise InputError(f"counts frame: the columns (bronze labels {list(counts.columns)}) must be "
                                 f"the same labels in the same order as the index (gold labels "
                                 f"{list(counts.index)})")
            counts = counts.to_numpy()
        try:
            arr = np.asarray(counts, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("counts must be a square array of non-negative integer counts") from None
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
            raise InputError(f"counts must be a square L x L array with L >= 2 (rows = gold label, "
                             f"columns = bronze label), got shape {arr.shape}")
        bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.round(arr))
        if bad.any():
            g, b = np.argwhere(bad)[0]
            raise InputError(f"counts row {g}, column {b}: expected a non-negative integer count, "
                             f"got {_py(arr[g, b])!r}")
        n_labels = arr.shape[0]
        if labels is None:
            labels = list(range(n_labels))
        labels = [_py(x) for x in labels]
        if len(labels) != n_labels:
            raise InputError(f"labels has {len(labels)} entries but counts is {n_labels} x {n_labels}")
        if len(set(labels)) != n_labels:
            raise InputError(f"labels must be distinct, got {labels}")
        numeric = all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
                      for x in labels)
        if numeric:
            keys = np.asarray(labels, dtype=np.float64)
            if not np.isfinite(keys).all():
                raise InputError(f"labels must be finite numbers or names, got {labels}")
            order = np.argsort(keys, kind="stable")
            arr = arr[np.ix_(order, order)]
            labels = [labels[i] for i in order]
            keys = keys[order]
        self._labels = labels
        self._numeric = numeric
        self._index = pd.Index(keys if numeric else labels)
        self._counts = arr.astype(np.int64)
        n_gold = self._counts.sum(axis=1)
        empty = np.flatnonzero(n_gold == 0)
        if empty.size:
            raise InputError(f"gold label {labels[empty[0]]!r} has no calibration pairs (its row of counts "
                             f"sums to 0): every gold label needs at least one re-judged pair to "
                             f"estimate P(bronze | gold)")
        self._n_gold = n_gold
        self._J = self._counts / n_gold[:, None]
        never = np.flatnonzero(self._counts.sum(axis=0) == 0)
        det = float(np.linalg.det(self._J))
        cond = float(np.linalg.cond(self._J))
        if abs(det) < _SINGULAR_DET or not np.isfinite(cond) or cond > _MAX_COND:
            why = (f"the bronze judge never used label {labels[never[0]]!r} in the calibration sample"
                   if never.size else "its rows are linearly dependent (a coin-toss judge, D = 0)")
            raise InputError(f"the calibration's confusion matrix is singular (det = {det:.3g}): {why}; "
                             f"a corrected metric is undefined for this judge")
        self._det = det
        self._Jinv = np.linalg.inv(self._J)

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def from_pairs(cls, bronze: Any, gold: Any = None, *,
                   labels: Sequence[Any] | None = None) -> "JudgeCalibration":
        """Count (bronze, gold) label pairs of a gold-rejudged sample (Goldberg et al. 2017, Sec 3.1).

        Args:
            bronze: array of bronze labels, or a frame with columns ``bronze, gold`` or
                ``label_bronze, label_gold`` (what ``pd.merge(bronze_qrels, gold_qrels,
                on=["qid", "docno"], suffixes=("_bronze", "_gold"))`` produces).
            gold: array of gold labels (same length), when ``bronze`` is an array.
            labels: every label the judges may use (default: those seen).  Unlisted labels in
                the data raise :class:`~pyterrier_noise.errors.InputError`.
        """
        if isinstance(bronze, pd.DataFrame):
            if gold is not None:
                raise InputError("pass either a frame (with bronze and gold columns) or two arrays, not both")
            frame = bronze
            for bcol, gcol in (("bronze", "gold"), ("label_bronze", "label_gold"),
                               ("bronze_label", "gold_label")):
                if bcol in frame.columns and gcol in frame.columns:
                    break
            else:
                raise InputError(f"calibration frame: expected columns 'bronze' and 'gold' (or 'label_bronze' "
                                 f"and 'label_gold'), found {list(frame.columns)}")
            b_values, g_values = frame[bcol].to_numpy(), frame[gcol].to_numpy()
            names = (bcol, gcol)
        else:
            if gold is None:
                raise InputError("from_pairs needs the gold labels: from_pairs(bronze, gold) or a frame with "
                                 "'bronze' and 'gold' columns")
            b_values, g_values = np.asarray(bronze), np.asarray(gold)
            names = ("bronze", "gold")
            if b_values.ndim != 1 or g_values.ndim != 1 or len(b_values) != len(g_values):
                raise InputError(f"bronze and gold must be 1-d arrays of the same length, got shapes "
                                 f"{b_values.shape} and {g_values.shape}")
        if len(b_values) == 0:
            raise InputError("the calibration sample is empty: expected at least one (bronze, gold) pair")
        for name, values in zip(names, (b_values, g_values)):
            missing = pd.isna(values)
            if missing.any():
                i = int(np.flatnonzero(missing)[0])
                raise InputError(f"calibration column {name!r}, row {i}: missing label "
                                 f"({int(missing.sum())} such row(s))")
        if labels is None:
            labels = list(pd.unique(np.concatenate([b_values, g_values])))
        cal_labels = [_py(x) for x in labels]
        probe = cls._probe_index(cal_labels)
        codes = []
        for name, values in zip(names, (b_values, g_values)):
            idx = probe.get_indexer(cls._keys(values, probe))
            if (idx < 0).any():
                i = int(np.flatnonzero(idx < 0)[0])
                raise InputError(f"calibration column {name!r}, row {i}: label {_py(values[i])!r} is not one of "
                                 f"the calibration labels {cal_labels}")
            codes.append(idx)
        n_labels = len(cal_labels)
        counts = np.bincount(codes[1] * n_labels + codes[0], minlength=n_labels * n_labels)
        return cls(counts.reshape(n_labels, n_labels), labels=cal_labels)

    @classmethod
    def from_qrels(cls, bronze_qrels: Any, gold_qrels: Any, *,
                   labels: Sequence[Any] | None = None) -> "JudgeCalibration":
        """Calibrate from two qrels: the bronze judgments and the gold re-judgments of a sample.

        Pairs are matched on ``(qid, docno)``; gold judgments without a bronze label are not
        usable and are dropped with a warning that counts them (Goldberg et al. 2017, Sec 3.1).
        Accepts anything :func:`pyterrier_noise.io.read_qrels` reads.
        """
        from ..io.trec import read_qrels
        bronze = read_qrels(bronze_qrels)
        gold = read_qrels(gold_qrels)
        merged = gold.merge(bronze, on=["qid", "docno"], how="left", suffixes=("_gold", "_bronze"))
        unmatched = merged["label_bronze"].isna()
        if unmatched.all():
            raise InputError("no gold-judged (qid, docno) pair has a bronze label: the gold qrels must "
                             "re-judge documents that the bronze judge labelled")
        if unmatched.any():
            first = merged[unmatched].iloc[0]
            _announce(f"{int(unmatched.sum())} gold judgment(s) have no bronze label and were left out of the "
                      f"calibration, e.g. qid={first.qid!r} docno={first.docno!r}")
            merged = merged[~unmatched]
        return cls.from_pairs(merged[["label_bronze", "label_gold"]], labels=labels)

    @classmethod
    def binary(cls, n_relevant: int, agree_relevant: int, n_nonrelevant: int,
               agree_nonrelevant: int) -> "JudgeCalibration":
        """Binary calibration from the paper's counts (Goldberg et al. 2017, Sec 3.1, Eq 8).

        ``agree_relevant`` of the ``n_relevant`` gold-relevant pairs were called relevant by the
        bronze judge (``m_JR = agree_relevant / n_relevant``); ``agree_nonrelevant`` of the
        ``n_nonrelevant`` gold-non-relevant pairs were called non-relevant (``m_JN``).  Labels 0, 1.
        """
        n_r = _check_int("n_relevant", n_relevant, 1)
        n_n = _check_int("n_nonrelevant", n_nonrelevant, 1)
        a_r = _check_int("agree_relevant", agree_relevant, 0)
        a_n = _check_int("agree_nonrelevant", agree_nonrelevant, 0)
        if a_r > n_r:
            raise InputError(f"agree_relevant ({a_r}) cannot exceed n_relevant ({n_r})")
        if a_n > n_n:
            raise InputError(f"agree_nonrelevant ({a_n}) cannot exceed n_nonrelevant ({n_n})")
        return cls([[a_n, n_n - a_n], [n_r - a_r, a_r]], labels=[0, 1])

    # -- label lookup -------------------------------------------------------------------------

    @staticmethod
    def _probe_index(labels: list[Any]) -> pd.Index:
        numeric = all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
                      for x in labels)
        return pd.Index(np.asarray(labels, dtype=np.float64) if numeric else labels)

    @staticmethod
    def _keys(values: Any, index: pd.Index) -> Any:
        values = np.asarray(values)
        if index.dtype.kind == "f":
            converted = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
            return converted
        return values

    def label_index(self, values: Any) -> np.ndarray:
        """Positions of ``values`` among :attr:`labels` (-1 where a value is not a calibration label)."""
        return self._index.get_indexer(self._keys(np.asarray(values).ravel(), self._index)).reshape(
            np.shape(values))

    # -- properties ---------------------------------------------------------------------------

    @property
    def labels(self) -> list[Any]:
        """The labels, in row/column order."""
        return list(self._labels)

    @property
    def n_labels(self) -> int:
        """Number of labels ``L``."""
        return len(self._labels)

    @property
    def counts(self) -> pd.DataFrame:
        """Calibration counts; index = gold label, columns = bronze label."""
        return pd.DataFrame(self._counts, index=pd.Index(self._labels, name="gold"),
                            columns=pd.Index(self._labels, name="bronze"))

    @property
    def matrix(self) -> pd.DataFrame:
        """Estimated confusion matrix ``P(bronze | gold)`` (rows sum to 1; the paper's script J)."""
        return pd.DataFrame(self._J, index=pd.Index(self._labels, name="gold"),
                            columns=pd.Index(self._labels, name="bronze"))

    @property
    def n_gold(self) -> pd.Series:
        """Calibration pairs per gold label (the paper's ``n_R``, ``n_N``)."""
        return pd.Series(self._n_gold, index=pd.Index(self._labels, name="gold"), name="n")

    @property
    def n_pairs(self) -> int:
        """Total number of calibration pairs."""
        return int(self._counts.sum())

    def _require_binary(self, what: str) -> None:
        if self.n_labels != 2:
            raise InputError(f"{what} is defined for binary calibrations only; this one has "
                             f"{self.n_labels} labels {self._labels}")

    @property
    def tpr(self) -> float:
        """``m_JR = P(bronze relevant | gold relevant)`` (binary only; Goldberg et al. 2017, Table 1)."""
        self._require_binary("tpr")
        return float(self._J[1, 1])

    @property
    def tnr(self) -> float:
        """``m_JN = P(bronze non-relevant | gold non-relevant)`` (binary only)."""
        self._require_binary("tnr")
        return float(self._J[0, 0])

    @property
    def tpr_se(self) -> float:
        """Binomial standard error of :attr:`tpr`, ``sqrt(m_JR (1 - m_JR) / n_R)`` (Eq 8)."""
        return float(np.sqrt(self.tpr * (1 - self.tpr) / self._n_gold[1]))

    @property
    def tnr_se(self) -> float:
        """Binomial standard error of :attr:`tnr`, ``sqrt(m_JN (1 - m_JN) / n_N)`` (Eq 8)."""
        return float(np.sqrt(self.tnr * (1 - self.tnr) / self._n_gold[0]))

    @property
    def D(self) -> float:  # noqa: N802 - the paper's symbol
        """``det J``; for binary labels the Youden index ``D = m_JR + m_JN - 1`` of Eq 7.

        0 means a judge whose labels carry no information about the gold label.
        """
        return self._det

    @property
    def sd_D(self) -> float:  # noqa: N802
        """Delta-method SD of :attr:`D` from the multinomial rows (binary: ``sqrt(V[J_R] + V[J_N])``).

        Uses Jacobi's formula ``d det J / d J[g, b] = det J * (J^-1)[b, g]`` (notes Sec 12.4).
        """
        grad = self._det * self._Jinv.T                       # grad[g, b]
        mean = (self._J * grad).sum(axis=1)
        var = ((self._J * grad ** 2).sum(axis=1) - mean ** 2) / self._n_gold
        return float(np.sqrt(np.maximum(var, 0.0).sum()))

    @property
    def condition_number(self) -> float:
        """2-norm condition number of :attr:`matrix`."""
        return float(np.linalg.cond(self._J))

    # -- derived quantities -------------------------------------------------------------------

    def rates(self, given: Literal["gold", "bronze"] = "gold", alpha: float = 0.05) -> pd.DataFrame:
        """Estimated rates with binomial standard errors and Wilson intervals.

        ``given="gold"``: ``P(bronze=b | gold=g)`` -- the model's rates (Goldberg et al. 2017, Eq 8),
        valid for any sample whose selection depends only on the gold label.
        ``given="bronze"``: ``P(gold=g | bronze=b)``, e.g. how often a bronze "relevant" is truly
        relevant; meaningful only if the calibration pairs are a simple random sample of the
        evaluated pool (not stratified by gold label).

        Returns a long frame ``gold, bronze, count, n, rate, se, ci_low, ci_high``.
        """
        from statsmodels.stats.proportion import proportion_confint
        _check_choice("given", given, ("gold", "bronze"))
        alpha = _check_alpha(alpha)
        counts = self._counts.astype(np.float64)
        n = (np.broadcast_to(self._n_gold[:, None], counts.shape) if given == "gold"
             else np.broadcast_to(counts.sum(axis=0)[None, :], counts.shape)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = counts / n
            se = np.sqrt(rate * (1 - rate) / n)
        lo, hi = proportion_confint(counts.ravel(), np.where(n > 0, n, 1).ravel(), alpha=alpha, method="wilson")
        lo = np.where(n.ravel() > 0, lo, np.nan)
        hi = np.where(n.ravel() > 0, hi, np.nan)
        n_labels = self.n_labels
        gold = np.repeat(np.arange(n_labels), n_labels)
        bronze = np.tile(np.arange(n_labels), n_labels)
        labels = np.asarray(self._labels, dtype=object)
        return pd.DataFrame({"gold": labels[gold], "bronze": labels[bronze], "count": self._counts.ravel(),
                             "n": n.ravel().astype(np.int64), "rate": rate.ravel(), "se": se.ravel(),
                             "ci_low": lo, "ci_high": hi})

    def gain_vector(self, gains: Any = None) -> np.ndarray:
        """Gains ``v`` in label order: a mapping label -> gain, a sequence in label order, a callable,
        or ``None`` for the numeric label values themselves."""
        if gains is None:
            if not self._numeric:
                raise InputError(f"labels {self._labels} are not numbers: pass gains (a mapping label -> gain)")
            return np.asarray(self._labels, dtype=np.float64)
        if callable(gains):
            v = np.asarray([gains(x) for x in self._labels], dtype=np.float64)
        elif isinstance(gains, Mapping):
            missing = [x for x in self._labels if x not in gains]
            if missing:
                raise InputError(f"gains has no value for label(s) {missing}; expected one gain per "
                                 f"calibration label {self._labels}")
            v = np.asarray([gains[x] for x in self._labels], dtype=np.float64)
        else:
            v = np.asarray(gains, dtype=np.float64)
            if v.shape != (self.n_labels,):
                raise InputError(f"gains must have one value per calibration label {self._labels} "
                                 f"(shape ({self.n_labels},)), got shape {v.shape}")
        if not np.isfinite(v).all():
            raise InputError(f"gains must be finite numbers, got {v.tolist()}")
        return v

    def corrected_gains(self, gains: Any = None) -> pd.Series:
        """Corrected gains ``w = J^-1 v`` (notes Sec 12.1; Goldberg et al. 2017, Eq 17/18).

        Scoring every bronze label ``b`` with ``w[b]`` instead of ``v[b]`` gives the corrected metric.
        Binary P@k: ``w = ((m_JN - 1) / D, m_JN / D)``.
        """
        v = self.gain_vector(gains)
        return pd.Series(self._Jinv @ v, index=pd.Index(self._labels, name="bronze"), name="corrected_gain")

    def sample_matrices(self, n_draws: int, seed: SeedLike = None) -> np.ndarray:
        """Redraw the confusion matrix ``n_draws`` times: row ``g`` ~ Multinomial(n_gold[g], J[g]) / n_gold[g].

        The parametric bootstrap of the calibration (Goldberg et al. 2017, Alg 1; binomial when
        binary).  Returns an array ``(n_draws, L, L)``.
        """
        n_draws = _check_int("n_draws", n_draws, 1)
        return self._draw(n_draws, np.random.default_rng(seed))

    def _draw(self, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        draws = rng.multinomial(self._n_gold, self._J, size=(n_draws, self.n_labels))
        return draws / self._n_gold[:, None]

    def diagnostics(self) -> dict[str, Any]:
        """Health of the calibration: D, sd(D), D/sd(D), condition number, pairs per gold label,
        and the bronze-positive share of the sample (compare it with the evaluated pool, notes A8)."""
        sd = self.sd_D
        out: dict[str, Any] = {
            "n_pairs": self.n_pairs, "n_gold": dict(zip(self._labels, self._n_gold.tolist())),
            "D": self.D, "sd_D": sd, "D_over_sd": (abs(self.D) / sd) if sd > 0 else float("inf"),
            "condition_number": self.condition_number,
            "bronze_share": dict(zip(self._labels, (self._counts.sum(axis=0) / self.n_pairs).tolist())),
        }
        out["near_random"] = out["D_over_sd"] < _NEAR_RANDOM_Z
        if self.n_labels == 2:
            out.update(tpr=self.tpr, tpr_se=self.tpr_se, tnr=self.tnr, tnr_se=self.tnr_se)
        return out

    def same_sample(self, other: "JudgeCalibration") -> bool:
        """True when ``other`` has the same labels and counts (i.e. comes from the same calibration sample)."""
        return other is self or (isinstance(other, JudgeCalibration) and other._labels == self._labels
                                 and np.array_equal(other._counts, self._counts))

    def _check_usable(self) -> None:
        sd = self.sd_D
        ratio = abs(self.D) / sd if sd > 0 else float("inf")
        if ratio < _NEAR_RANDOM_Z:
            _warn(f"the bronze judge is close to random: D = {self.D:.4g}, D / sd(D) = {ratio:.3g} < "
                  f"{_NEAR_RANDOM_Z:g} (the judge cannot be told apart from a coin toss); corrected values "
                  f"and their standard errors are unreliable")
        if self.D < 0:
            _warn(f"D = {self.D:.4g} < 0: the bronze judge agrees with the gold judge less often than chance "
                  f"(an adversarial or mislabelled judge); check the calibration labels")

    def __repr__(self) -> str:
        body = ", ".join(f"{g}: {row.tolist()}" for g, row in zip(self._labels, self._counts))
        return f"JudgeCalibration(counts gold -> bronze {{{body}}}, labels={self._labels}, D={self.D:.4f})"


def _calibration_arg(calibration: Any) -> JudgeCalibration:
    if not isinstance(calibration, JudgeCalibration):
        raise InputError(f"calibration must be a JudgeCalibration (e.g. JudgeCalibration.from_pairs(...)), "
                         f"got {type(calibration).__name__}")
    return calibration


# ------------------------------------------------------------------------------------------------
# array kernels (batched over leading axes: systems, simulations, bootstrap replicates)

def _calibration_terms(J: np.ndarray, n_gold: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``Var_{b ~ J[j]}(g[j, b]) / n_j`` for each gold row ``j`` (multinomial row covariance).

    ``g[..., j, b]`` is the gradient of the estimate with respect to ``J[j, b]`` up to sign.
    """
    mean = (J * g).sum(axis=-1)
    var = (J * g ** 2).sum(axis=-1) - mean ** 2
    return np.maximum(var, 0.0) / n_gold


def _mu(J: np.ndarray, mass_mean: np.ndarray) -> np.ndarray:
    """``mu = J^-T cbar``: the estimated gold-label mass (Eq 17 applied to the mean label mass)."""
    return np.linalg.solve(np.swapaxes(J, -1, -2), mass_mean[..., None])[..., 0]


def _solve_w(J: np.ndarray, v: np.ndarray) -> np.ndarray:
    vb = np.broadcast_to(v, J.shape[:-1])
    return np.linalg.solve(J, vb[..., None])[..., 0]


def label_mass(label_index: Any, discount: Any, n_labels: int) -> np.ndarray:
    """Discounted label mass ``c[..., q, l] = sum_s d_s [label_qs == l]`` (Goldberg et al. 2017, Eq 18;
    notes Sec 12.2).

    Args:
        label_index: integer array ``(..., topics, depth)`` of label positions in the calibration
            (``-1`` = no document or a document that contributes nothing).
        discount: rank weights ``d_s`` of length ``depth`` (P@k: 1/k; DCG: 1/log2(s+1); RBP:
            (1-p) p^(s-1)).
        n_labels: number of calibration labels ``L``.

    Returns an array ``(..., topics, L)``; ``mass @ v`` is the per-topic bronze metric.
    """
    idx = np.asarray(label_index)
    if idx.ndim < 2 or not np.issubdtype(idx.dtype, np.integer):
        raise InputError(f"label_index must be an integer array (..., topics, depth), got dtype {idx.dtype} "
                         f"and shape {idx.shape}")
    d = np.asarray(discount, dtype=np.float64)
    if d.shape != idx.shape[-1:]:
        raise InputError(f"discount must have length depth = {idx.shape[-1]}, got shape {d.shape}")
    n_labels = _check_int("n_labels", n_labels, 1)
    if (idx >= n_labels).any() or (idx < -1).any():
        raise InputError(f"label_index values must be in -1..{n_labels - 1}")
    onehot = idx[..., None] == np.arange(n_labels)
    return np.einsum("...skl,k->...sl", onehot, d)


class MassCorrection(NamedTuple):
    """Result of :func:`corrected_from_mass` (arrays over the leading batch axes)."""

    value: np.ndarray        #: corrected mean over topics
    se: np.ndarray           #: delta-method standard error
    per_query: np.ndarray    #: corrected per-topic values (..., topics)
    query_var: np.ndarray    #: query-sampling variance term
    calibration_var: np.ndarray  #: calibration variance term per gold label (..., L)


def corrected_from_mass(mass: Any, counts: Any, gains: Any, *, ddof: int = 1) -> MassCorrection:
    """Corrected metric and delta-method SE from label masses, batched (notes Sec 12.1-12.2).

    Estimate ``theta = mean_q(c_q) . w`` with ``w = J^-1 v`` (Goldberg et al. 2017, Eq 14/18) and

        ``Var = Var_q(c_q . w) / n + sum_j mu_j^2 Var_{b ~ J[j]}(w_b) / n_j``,  ``mu = J^-T mean_q(c_q)``,

    which for binary P@k is exactly the paper's Eq 7 (with ``V[J] = s^2 / n``, Sec 3.5).
    ``mass`` is ``(..., topics, L)`` (see :func:`label_mass`), ``counts`` is ``(..., L, L)``
    calibration counts (rows gold, columns bronze) and ``gains`` the ``L`` gains in label order.
    Leading axes broadcast, so thousands of simulated experiments are corrected in one call.
    """
    ddof = _check_ddof(ddof)
    c = np.asarray(mass, dtype=np.float64)
    cnt = np.asarray(counts, dtype=np.float64)
    v = np.asarray(gains, dtype=np.float64)
    if c.ndim < 2:
        raise InputError(f"mass must be an array (..., topics, L), got shape {c.shape}")
    n_labels = c.shape[-1]
    if cnt.shape[-2:] != (n_labels, n_labels):
        raise InputError(f"counts must end in ({n_labels}, {n_labels}) to match mass, got shape {cnt.shape}")
    if v.shape != (n_labels,):
        raise InputError(f"gains must have shape ({n_labels},), got {v.shape}")
    n = c.shape[-2]
    if n <= ddof:
        raise InputError(f"need more than {ddof} topic(s) for a query-sampling variance, got {n}")
    n_gold = cnt.sum(axis=-1)
    if (n_gold <= 0).any():
        raise InputError("every gold label needs at least one calibration pair (a row of counts sums to 0)")
    J = cnt / n_gold[..., None]
    try:
        w = _solve_w(J, v)
        mu = _mu(J, c.mean(axis=-2))
    except np.linalg.LinAlgError:
        raise InputError("a calibration matrix in counts is singular: the corrected metric is undefined") from None
    per_query = np.einsum("...ql,...l->...q", c, w)
    value = per_query.mean(axis=-1)
    query_var = per_query.var(axis=-1, ddof=ddof) / n
    calib = _calibration_terms(J, n_gold, mu[..., :, None] * w[..., None, :])
    se = np.sqrt(query_var + calib.sum(axis=-1))
    return MassCorrection(value, se, per_query, query_var, calib)


# ------------------------------------------------------------------------------------------------
# results

@dataclass(eq=False)
class CorrectedEstimate:
    """A corrected metric with its uncertainty (Goldberg et al. 2017, Eq 5/7/14/18).

    ``value`` is the corrected mean over topics and ``se`` its standard error by ``se_method``;
    ``naive_value`` / ``naive_se`` are the uncorrected (bronze) mean and ``s / sqrt(n)``.
    ``var_terms`` splits the delta-method variance into the query-sampling term and one
    calibration term per gold label.  ``per_query`` holds corrected per-topic values; they average
    to ``value`` but individually are not confined to the metric's range.
    """

    measure: str
    value: float
    se: float
    ci_low: float
    ci_high: float
    se_method: str
    naive_value: float
    naive_se: float
    n_queries: int
    delta_se: float
    var_terms: dict[str, float]
    calibration: JudgeCalibration = field(repr=False)
    per_query: pd.Series | None = field(default=None, repr=False)
    naive_per_query: pd.Series | None = field(default=None, repr=False)
    replicates: np.ndarray | None = field(default=None, repr=False)
    n_invalid_replicates: int = 0
    alpha: float = 0.05
    gains: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _mass: np.ndarray | None = field(default=None, repr=False)
    _mass_mean: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _naive_sd: float = field(default=float("nan"), repr=False)
    _ddof: int = field(default=1, repr=False)

    @property
    def corrected_gains(self) -> np.ndarray:
        """``w = J^-1 v`` used for this estimate."""
        return self.calibration._Jinv @ self.gains

    def to_series(self) -> pd.Series:
        """The scalar fields as a Series (handy for building tables)."""
        return pd.Series({"measure": self.measure, "n_queries": self.n_queries, "naive": self.naive_value,
                          "naive_se": self.naive_se, "corrected": self.value, "se": self.se,
                          "ci_low": self.ci_low, "ci_high": self.ci_high, "se_method": self.se_method,
                          "D": self.calibration.D})


def _topic_means(masses: list[np.ndarray], n_boot: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Bootstrap means of per-topic masses; all masses share the same resampled topics (paired)."""
    n = masses[0].shape[0]
    out = [np.empty((n_boot, m.shape[1])) for m in masses]
    step = max(1, _BOOT_CELLS // n)
    p = np.full(n, 1.0 / n)
    for start in range(0, n_boot, step):  # chunks bound memory; each chunk is one vectorised draw
        stop = min(n_boot, start + step)
        weights = rng.multinomial(n, p, size=stop - start) / n      # (chunk, topics)
        for o, m in zip(out, masses):
            o[start:stop] = weights @ m
    return out


def _summary_means(est: CorrectedEstimate, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Topic-sampling draws for an estimate known only by its summary (binary; notes A11)."""
    total = est._mass_mean.sum()
    m = rng.normal(est.naive_value, est._naive_sd / np.sqrt(est.n_queries), size=n_boot)
    return np.stack([total - m, m], axis=1)


def _valid_draws(J: np.ndarray, det_hat: float) -> tuple[np.ndarray, np.ndarray]:
    """Replace singular or sign-flipped draws by the identity; return (safe matrices, valid mask)."""
    det = np.linalg.det(J)
    valid = (np.sign(det) == np.sign(det_hat)) & (np.abs(det) > _SINGULAR_DET)
    safe = np.where(valid[:, None, None], J, np.eye(J.shape[-1]))
    return safe, valid


def _draw_thetas(ests: list[CorrectedEstimate], n_boot: int, rng: np.random.Generator,
                 shared: bool, paired: bool) -> tuple[list[np.ndarray], np.ndarray]:
    """Bootstrap replicates of each estimate: topics resampled, calibration redrawn (notes A5)."""
    cal_draws = []
    for i, est in enumerate(ests):
        if shared and i > 0:
            cal_draws.append(cal_draws[0])
        else:
            cal_draws.append(_valid_draws(est.calibration._draw(n_boot, rng), est.calibration.D))
    if paired:
        means = _topic_means([e._mass for e in ests], n_boot, rng)
    else:
        means = [(_topic_means([e._mass], n_boot, rng)[0] if e._mass is not None else _summary_means(e, n_boot, rng))
                 for e in ests]
    valid = np.ones(n_boot, dtype=bool)
    thetas = []
    for est, (J, ok), cbar in zip(ests, cal_draws, means):
        w = _solve_w(J, est.gains)
        thetas.append((cbar * w).sum(axis=1))
        valid &= ok
    return thetas, valid


def _finish(measure: str, calibration: JudgeCalibration, v: np.ndarray, mass: np.ndarray | None,
            qids: pd.Index | None, *, mass_mean: np.ndarray | None = None, naive_mean: float | None = None,
            naive_sd: float | None = None, n: int | None = None, se: str, n_boot: int, seed: SeedLike,
            ddof: int, alpha: float) -> CorrectedEstimate:
    """Assemble a CorrectedEstimate from per-topic masses (or a binary summary) and warn where needed."""
    _check_choice("se", se, ("delta", "bootstrap"))
    ddof = _check_ddof(ddof)
    alpha = _check_alpha(alpha)
    n_boot = _check_int("n_boot", n_boot, 2)
    calibration._check_usable()
    J, n_gold = calibration._J, calibration._n_gold.astype(np.float64)
    w = calibration._Jinv @ v
    per_query = naive_pq = None
    if mass is not None:
        n = mass.shape[0]
        if n <= ddof:
            raise InputError(f"need more than {ddof} topic(s) to estimate a query-sampling variance, got {n}")
        corr = mass @ w
        naive = mass @ v
        mass_mean = mass.mean(axis=0)
        naive_mean = float(naive.mean())
        naive_sd = float(naive.std(ddof=ddof))
        query_var = float(corr.var(ddof=ddof) / n)
        per_query = pd.Series(corr, index=qids, name=measure)
        naive_pq = pd.Series(naive, index=qids, name=measure)
    else:
        # binary summary: c_q = (S - M_q, M_q), so c_q . w = S w0 + M_q (w1 - w0)
        query_var = float((w[1] - w[0]) ** 2 * naive_sd ** 2 / n)
    mu = calibration._Jinv.T @ mass_mean
    calib = _calibration_terms(J, n_gold, mu[:, None] * w[None, :])
    value = float(mass_mean @ w)
    delta_se = float(np.sqrt(query_var + calib.sum()))
    var_terms = {"query": query_var}
    var_terms.update({f"calibration[gold={g}]": float(t) for g, t in zip(calibration.labels, calib)})
    est = CorrectedEstimate(
        measure=measure, value=value, se=delta_se, ci_low=np.nan, ci_high=np.nan, se_method=se,
        naive_value=float(naive_mean), naive_se=float(naive_sd / np.sqrt(n)), n_queries=int(n),
        delta_se=delta_se, var_terms=var_terms, calibration=calibration, per_query=per_query,
        naive_per_query=naive_pq, alpha=alpha, gains=v, _mass=mass, _mass_mean=mass_mean,
        _naive_sd=float(naive_sd), _ddof=ddof)
    z = _z(alpha)
    if se == "bootstrap":
        rng = np.random.default_rng(seed)
        (theta,), valid = _draw_thetas([est], n_boot, rng, shared=False, paired=False)
        est.n_invalid_replicates = int((~valid).sum())
        if est.n_invalid_replicates:
            _warn(f"{est.n_invalid_replicates} of {n_boot} bootstrap draws of the calibration were singular or "
                  f"flipped the sign of D and were left out (the judge is close to random)")
        theta = theta[valid]
        if theta.size < 2:
            raise InputError("fewer than 2 usable bootstrap replicates: the calibration is too close to random")
        est.replicates = theta
        est.se = float(theta.std(ddof=1))
        est.ci_low, est.ci_high = (float(x) for x in np.quantile(theta, [alpha / 2, 1 - alpha / 2]))
    else:
        est.ci_low, est.ci_high = value - z * delta_se, value + z * delta_se
    lo, hi = v.min() * mass_mean.sum(), v.max() * mass_mean.sum()
    if not (lo - 1e-12 <= value <= hi + 1e-12):
        _warn(f"corrected {measure} = {value:.4f} lies outside the metric's range [{lo:.4g}, {hi:.4g}]: the "
              f"calibration does not fit these judgments (too few calibration pairs, a judge close to random, "
              f"or a calibration sample unlike the evaluated pool)")
    return est


# ------------------------------------------------------------------------------------------------
# from runs / label matrices to label masses

def _labels_from_matrix(matrix: Any, calibration: JudgeCalibration, depth: int | None
                        ) -> tuple[np.ndarray, pd.Index]:
    if isinstance(matrix, pd.DataFrame):
        qids = pd.Index(matrix.index.astype(str), name="qid")
        values = matrix.to_numpy()
    else:
        values = np.asarray(matrix)
        qids = pd.Index([str(i) for i in range(values.shape[0])] if values.ndim == 2 else [], name="qid")
    if values.ndim != 2 or values.shape[0] == 0:
        raise InputError(f"a label matrix must be 2-d (topics x ranks) with at least one topic, got shape "
                         f"{values.shape}")
    missing = pd.isna(values)
    idx = calibration.label_index(np.where(missing, calibration.labels[0], values))
    bad = (idx < 0) & ~missing
    if bad.any():
        q, r = np.argwhere(bad)[0]
        raise InputError(f"label matrix row {q} (qid {qids[q]!r}), rank {r}: label {_py(values[q, r])!r} is not a "
                         f"calibration label {calibration.labels} ({int(bad.sum())} such cell(s)); the "
                         f"calibration must cover every label the bronze judge used")
    idx = np.where(missing, -1, idx).astype(np.int64)
    if depth is not None:
        if depth <= idx.shape[1]:
            idx = idx[:, :depth]
        else:
            idx = np.pad(idx, ((0, 0), (0, depth - idx.shape[1])), constant_values=-1)
    return idx, qids


def _labels_from_run(run: Any, qrels: Any, calibration: JudgeCalibration, depth: int | None,
                     unjudged: str) -> tuple[np.ndarray, pd.Index]:
    """Top-``depth`` bronze label positions per topic, in trec_eval order (score desc, docno desc)."""
    from ..io.trec import read_qrels, read_run
    run = read_run(run)
    qrels = read_qrels(qrels)
    dup = run.duplicated(["qid", "docno"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"run column 'docno', row {i}: document {run['docno'].iloc[i]!r} appears twice in "
                         f"the ranking of qid {run['qid'].iloc[i]!r} ({int(dup.sum())} duplicate row(s))")
    judged_topics = pd.Index(qrels["qid"].unique())
    in_qrels = run["qid"].isin(judged_topics).to_numpy()
    if not in_qrels.all():
        dropped = run.loc[~in_qrels, "qid"].unique()
        _announce(f"{len(dropped)} topic(s) of the run have no bronze judgments and were left out "
                  f"(as trec_eval does), e.g. qid={dropped[0]!r}")
        run = run[in_qrels]
        if run.empty:
            raise InputError("no topic of the run has bronze judgments: check that the qids match the qrels")
    q_codes, qids = pd.factorize(run["qid"], sort=True)
    _, d_codes = np.unique(run["docno"].to_numpy(dtype=str), return_inverse=True)
    order = np.lexsort((-d_codes, -run["score"].to_numpy(), q_codes))     # trec_eval: score desc, docno desc
    q_sorted = q_codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(q_sorted)) + 1]
    sizes = np.diff(np.r_[starts, len(q_sorted)])
    pos = np.arange(len(q_sorted)) - np.repeat(starts, sizes)
    if depth is None:
        depth = int(sizes.max())
    keep = pos < depth
    rows = order[keep]
    top = pd.DataFrame({"qid": run["qid"].to_numpy()[rows], "docno": run["docno"].to_numpy()[rows]})
    labels = top.merge(qrels[["qid", "docno", "label"]], on=["qid", "docno"], how="left")["label"].to_numpy()
    idx = calibration.label_index(np.where(np.isnan(labels), calibration.labels[0], labels))
    unj = np.isnan(labels)
    bad = (idx < 0) & ~unj
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"qrels column 'label': label {_py(labels[i])!r} (qid={top['qid'].iloc[i]!r}, "
                         f"docno={top['docno'].iloc[i]!r}) is not a calibration label {calibration.labels} "
                         f"({int(bad.sum())} such judgment(s) in the top {depth}); the calibration must cover "
                         f"every label the bronze judge used")
    if unj.any():
        i = int(np.flatnonzero(unj)[0])
        where = f"e.g. qid={top['qid'].iloc[i]!r} docno={top['docno'].iloc[i]!r}"
        if unjudged == "error":
            raise InputError(f"{int(unj.sum())} of the top-{depth} documents have no bronze judgment ({where}); "
                             f"judge them or pass unjudged='zero' / 'lowest'")
        if unjudged == "zero":
            _announce(f"{int(unj.sum())} of {len(unj)} top-{depth} documents have no bronze judgment and count "
                      f"as certainly non-relevant (gain 0, not corrected), {where}")
            idx = np.where(unj, -1, idx)
        else:  # "lowest"
            _announce(f"{int(unj.sum())} of {len(unj)} top-{depth} documents have no bronze judgment and count "
                      f"as if the bronze judge gave them label {calibration.labels[0]!r}, {where}")
            idx = np.where(unj, 0, idx)
    matrix = np.full((len(qids), depth), -1, dtype=np.int64)
    matrix[q_sorted[keep], pos[keep]] = idx
    return matrix, pd.Index(qids, name="qid")


def _label_positions(run: Any, qrels: Any, calibration: JudgeCalibration, depth: int | None,
                     unjudged: str) -> tuple[np.ndarray, pd.Index]:
    """Dispatch: a run (frame or TREC file) with qrels, or a label matrix alone."""
    _check_choice("unjudged", unjudged, ("zero", "lowest", "error"))
    if depth is not None:
        depth = _check_int("k", depth, 1)
    is_run_frame = isinstance(run, pd.DataFrame) and {"qid", "docno"}.issubset(run.columns)
    if is_run_frame or isinstance(run, (str, os.PathLike)):
        if qrels is None:
            raise InputError("a run needs the bronze qrels (a qid, docno, label frame or qrels file)")
        return _labels_from_run(run, qrels, calibration, depth, unjudged)
    if isinstance(run, pd.DataFrame) and ({"qid", "docno", "score"} & set(map(str, run.columns))):
        missing = [c for c in ("qid", "docno", "score") if c not in run.columns]
        raise InputError(f"run frame is missing column(s) {missing}; expected qid, docno, score (found "
                         f"{list(run.columns)})")
    if qrels is not None:
        raise InputError("qrels were given but run is not a results frame (qid, docno, score) or a run file: "
                         "pass either a run with qrels, or a (topics x ranks) label matrix alone")
    return _labels_from_matrix(run, calibration, depth)


def corrected_metric(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, discount: Any,
                     gains: Any = None, measure: str = "metric", se: Literal["delta", "bootstrap"] = "delta",
                     n_boot: int = 10_000, seed: SeedLike = None, ddof: int = 1, alpha: float = 0.05,
                     unjudged: Literal["zero", "lowest", "error"] = "zero") -> CorrectedEstimate:
    """Corrected value of any metric linear in gains, ``M_q = sum_s d_s v[label_qs]`` (notes Sec 12.1).

    Generalises Goldberg et al. 2017, Eq 14 (P@k) and Eq 18 (DCG); SE by the delta method
    (Eq 7; graded form, notes Sec 12.2) or by bootstrap (topics resampled with replacement and the
    calibration redrawn from its multinomial counts, ``n_boot`` replicates, ``seed``).

    Args:
        run: a PyTerrier results frame ``qid, docno, score[, rank]`` (ranked as trec_eval does:
            score descending, then docno descending; ``rank`` is ignored) or a TREC run file, used
            with ``qrels``; or a (topics x ranks) matrix of bronze labels (array or frame indexed by
            qid; NaN = no document at that rank), used alone.
        qrels: bronze qrels ``qid, docno, label`` for a run.
        calibration: the judge's :class:`JudgeCalibration`.
        discount: rank weights ``d_1..d_depth``; ranks beyond it do not count.
        gains: gain per calibration label (mapping, sequence or callable; default: label values).
        unjudged: top-ranked documents without a bronze label count as certainly non-relevant
            (``"zero"``, trec_eval's convention; they are not corrected), as bronze label
            ``labels[0]`` (``"lowest"``), or raise (``"error"``).  Ranks past the end of a ranking
            always contribute 0.
    """
    calibration = _calibration_arg(calibration)
    d = np.asarray(discount, dtype=np.float64)
    if d.ndim != 1 or d.size == 0 or not np.isfinite(d).all():
        raise InputError(f"discount must be a non-empty 1-d array of finite rank weights, got shape {d.shape}")
    idx, qids = _label_positions(run, qrels, calibration, d.size, unjudged)
    v = calibration.gain_vector(gains)
    mass = label_mass(idx, d, calibration.n_labels)
    return _finish(measure, calibration, v, mass, qids, se=se, n_boot=n_boot, seed=seed, ddof=ddof, alpha=alpha)


def _threshold_gains(calibration: JudgeCalibration, gains: Any, rel: Any) -> Any:
    if gains is not None:
        return gains
    if not calibration._numeric:
        raise InputError(f"labels {calibration.labels} are not numbers: pass gains (a mapping label -> gain)")
    try:
        r = float(rel)
    except (TypeError, ValueError):
        raise InputError(f"rel must be a number (minimum label counted as relevant), got {rel!r}") from None
    return (np.asarray(calibration.labels, dtype=np.float64) >= r).astype(np.float64)


def corrected_precision(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, k: int, rel: float = 1,
                        gains: Any = None, se: Literal["delta", "bootstrap"] = "delta", n_boot: int = 10_000,
                        seed: SeedLike = None, ddof: int = 1, alpha: float = 0.05,
                        unjudged: Literal["zero", "lowest", "error"] = "zero") -> CorrectedEstimate:
    """Corrected P@k (Goldberg et al. 2017, Eq 14) with SE by Eq 7 (Sec 3.5) or bootstrap.

    A document counts as relevant when its label is ``>= rel`` (as in ir_measures' ``P(rel=..)@k``);
    ``gains`` overrides that.  The denominator is always ``k`` (trec_eval).  See
    :func:`corrected_metric` for ``run``, ``qrels``, ``se`` and ``unjudged``.
    """
    k = _check_int("k", k, 1)
    calibration = _calibration_arg(calibration)
    return corrected_metric(run, qrels, calibration=calibration, discount=np.full(k, 1.0 / k),
                            gains=_threshold_gains(calibration, gains, rel), measure=f"P@{k}", se=se,
                            n_boot=n_boot, seed=seed, ddof=ddof, alpha=alpha, unjudged=unjudged)


def _depth(run: Any, qrels: Any, calibration: JudgeCalibration, k: int | None, unjudged: str
           ) -> tuple[np.ndarray, pd.Index, int]:
    idx, qids = _label_positions(run, qrels, calibration, k, unjudged)
    return idx, qids, idx.shape[1]


def corrected_dcg(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, k: int | None = None,
                  gains: Any = None, se: Literal["delta", "bootstrap"] = "delta", n_boot: int = 10_000,
                  seed: SeedLike = None, ddof: int = 1, alpha: float = 0.05,
                  unjudged: Literal["zero", "lowest", "error"] = "zero") -> CorrectedEstimate:
    """Corrected DCG@k (Goldberg et al. 2017, Eq 18): ``sum_s v[label] / log2(s + 1)``, linear gain, no
    normalisation (nDCG is not linear and not corrected).  ``k=None``: the whole ranking.

    Gains default to the label values.  SE by the graded delta method (notes Sec 12.2) or bootstrap.
    """
    calibration = _calibration_arg(calibration)
    idx, qids, depth = _depth(run, qrels, calibration, k, unjudged)
    d = 1.0 / np.log2(np.arange(2, depth + 2))
    v = calibration.gain_vector(gains)
    mass = label_mass(idx, d, calibration.n_labels)
    name = f"DCG@{depth}" if k is not None else "DCG"
    return _finish(name, calibration, v, mass, qids, se=se, n_boot=n_boot, seed=seed, ddof=ddof, alpha=alpha)


def corrected_rbp(run: Any, qrels: Any = None, *, calibration: JudgeCalibration, p: float = 0.8,
                  k: int | None = None, rel: float = 1, gains: Any = None,
                  se: Literal["delta", "bootstrap"] = "delta", n_boot: int = 10_000, seed: SeedLike = None,
                  ddof: int = 1, alpha: float = 0.05,
                  unjudged: Literal["zero", "lowest", "error"] = "zero") -> CorrectedEstimate:
    """Corrected rank-biased precision, weights ``(1 - p) p^(s-1)`` (notes Sec 12.1; Moffat & Zobel 2008).

    Binary gain ``label >= rel`` unless ``gains`` is given; ``k=None`` scores the whole ranking
    (the RBP *base*: unretrieved ranks contribute 0).
    """
    from .._validation import check_probability
    p = check_probability("p", p)
    calibration = _calibration_arg(calibration)
    idx, qids, depth = _depth(run, qrels, calibration, k, unjudged)
    d = (1.0 - p) * p ** np.arange(depth)
    v = calibration.gain_vector(_threshold_gains(calibration, gains, rel))
    mass = label_mass(idx, d, calibration.n_labels)
    name = f"RBP(p={p:g})" + (f"@{depth}" if k is not None else "")
    return _finish(name, calibration, v, mass, qids, se=se, n_boot=n_boot, seed=seed, ddof=ddof, alpha=alpha)


# ------------------------------------------------------------------------------------------------
# per-query values and summaries of binary metrics

def _check_mass_total(mass: Any) -> float:
    try:
        s = float(mass)
    except (TypeError, ValueError):
        raise InputError(f"mass must be a positive number (sum of the rank weights), got {mass!r}") from None
    if not (np.isfinite(s) and s > 0):
        raise InputError(f"mass must be a positive number (sum of the rank weights), got {mass!r}")
    return s


def correct_per_query(values: Any, calibration: JudgeCalibration, *, mass: float = 1.0, measure: str = "metric",
                      se: Literal["delta", "bootstrap"] = "delta", n_boot: int = 10_000, seed: SeedLike = None,
                      ddof: int = 1, alpha: float = 0.05) -> CorrectedEstimate:
    """Correct per-query values of a binary-gain linear metric (Goldberg et al. 2017, Eq 14, Eq 7).

    ``values[q] = sum_s d_s [bronze relevant]`` with every one of the metric's ranks filled by a
    judged document (unjudged ones counted as bronze non-relevant), and ``mass = sum_s d_s``:
    1 for P@k, ``1 - p**k`` for RBP@k, ``sum 1/log2(s+1)`` for DCG@k.  Then each topic's label
    mass is ``(mass - value, value)``.  ``values`` is an array or a Series indexed by qid (e.g.
    one system's rows of ``pt.Experiment(..., perquery=True)``).  Binary calibrations only.
    """
    calibration = _calibration_arg(calibration)
    calibration._require_binary("correct_per_query")
    s = _check_mass_total(mass)
    if isinstance(values, pd.Series):
        qids = pd.Index(values.index.astype(str), name="qid")
        x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    else:
        x = np.asarray(values, dtype=np.float64)
        qids = pd.Index([str(i) for i in range(x.size)], name="qid")
    if x.ndim != 1 or x.size == 0:
        raise InputError(f"values must be a non-empty 1-d array of per-query scores, got shape {x.shape}")
    bad = ~np.isfinite(x) | (x < -1e-12) | (x > s + 1e-12)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"values row {i} (qid {qids[i]!r}): expected a number in [0, mass={s:g}], got "
                         f"{x[i]!r} ({int(bad.sum())} such value(s)); set mass to the metric's maximum")
    x = np.clip(x, 0.0, s)
    m = np.stack([s - x, x], axis=1)
    return _finish(measure, calibration, np.array([0.0, 1.0]), m, qids, se=se, n_boot=n_boot, seed=seed,
                   ddof=ddof, alpha=alpha)


def correct_summary(mean: float, sd: float, n: int, calibration: JudgeCalibration, *, mass: float = 1.0,
                    measure: str = "metric", se: Literal["delta", "bootstrap"] = "delta", n_boot: int = 10_000,
                    seed: SeedLike = None, alpha: float = 0.05) -> CorrectedEstimate:
    """Correct a binary metric known only by its mean, SD over topics and number of topics.

    Goldberg et al. 2017, Eq 5/14 for the value and Eq 7 with ``V[J] = sd^2 / n`` (Sec 3.5) for the
    SE; this is how the paper's eBay and TREC examples are reported.  The bootstrap draws the
    topic mean from ``Normal(mean, sd^2 / n)`` (notes A11) and redraws the calibration.
    """
    calibration = _calibration_arg(calibration)
    calibration._require_binary("correct_summary")
    s = _check_mass_total(mass)
    n = _check_int("n", n, 2)
    try:
        mean, sd = float(mean), float(sd)
    except (TypeError, ValueError):
        raise InputError(f"mean and sd must be numbers, got {mean!r}, {sd!r}") from None
    if not (np.isfinite(mean) and 0.0 <= mean <= s):
        raise InputError(f"mean must be in [0, mass={s:g}], got {mean!r}")
    if not (np.isfinite(sd) and sd >= 0):
        raise InputError(f"sd must be a non-negative number, got {sd!r}")
    return _finish(measure, calibration, np.array([0.0, 1.0]), None, None, mass_mean=np.array([s - mean, mean]),
                   naive_mean=mean, naive_sd=sd, n=n, se=se, n_boot=n_boot, seed=seed, ddof=1, alpha=alpha)


_P_RE = re.compile(r"^P(?:\(rel=(\d+)\))?@(\d+)$")
_RBP_RE = re.compile(r"^RBP(?:\((.*)\))?@(\d+)$")


def _infer_mass(measure: str) -> float:
    m = _P_RE.match(measure)
    if m:
        return 1.0
    m = _RBP_RE.match(measure)
    if m:
        params = dict(kv.split("=", 1) for kv in (m.group(1) or "").split(",") if "=" in kv)
        p = float(params.get("p", 0.8))
        return 1.0 - p ** int(m.group(2))
    raise InputError(f"column 'measure': cannot correct {measure!r} from per-query values; only metrics linear in "
                     f"binary gains with a fixed cutoff are inferred (P@k, RBP(p=..)@k).  Pass mass={{measure: sum of "
                     f"rank weights}} for others (DCG@k: sum of 1/log2(s+1)); nDCG, AP and RR are not linear and "
                     f"cannot be corrected this way")


def correct_experiment(perquery: pd.DataFrame, calibration: JudgeCalibration | Mapping[str, JudgeCalibration], *,
                       mass: float | Mapping[str, float] | None = None, ddof: int = 1, alpha: float = 0.05,
                       per_query_values: bool = False) -> pd.DataFrame:
    """Correct ``pt.Experiment(..., perquery=True)`` output of binary-gain metrics (Eq 14, Eq 7).

    Args:
        perquery: long frame ``name, qid, measure, value`` (``name`` optional for one system).
            Each ranking must fill the cutoff with judged documents (unjudged ones count as bronze
            non-relevant), and the qrels labels must be 0/1.
        calibration: one calibration shared by every system, or ``{name: calibration}`` (per-run
            calibration, as in the paper's TREC example).
        mass: sum of rank weights per measure (inferred for ``P@k`` and ``RBP(p=..)@k``).
        per_query_values: return the input rows with a ``corrected`` column instead of the summary.

    Returns one row per (name, measure): ``n_queries, naive, naive_se, corrected, se, ci_low,
    ci_high, D`` (delta-method SE; use :func:`correct_per_query` for a bootstrap and
    :func:`compare` for tests).
    """
    if not isinstance(perquery, pd.DataFrame):
        raise InputError(f"perquery must be the frame pt.Experiment(..., perquery=True) returns, got "
                         f"{type(perquery).__name__}")
    missing = [c for c in ("qid", "measure", "value") if c not in perquery.columns]
    if missing:
        raise InputError(f"perquery frame is missing column(s) {missing}; expected name, qid, measure, value "
                         f"(found {list(perquery.columns)})")
    ddof = _check_ddof(ddof)
    alpha = _check_alpha(alpha)
    df = perquery.copy()
    if "name" not in df.columns:
        df["name"] = "system"
    df["name"] = df["name"].astype(str)
    df["measure"] = df["measure"].astype(str)
    values = pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=np.float64)
    measures = pd.unique(df["measure"])
    if isinstance(mass, Mapping):
        totals = {m: (_check_mass_total(mass[m]) if m in mass else _infer_mass(m)) for m in measures}
    elif mass is not None:
        totals = {m: _check_mass_total(mass) for m in measures}
    else:
        totals = {m: _infer_mass(m) for m in measures}
    names = pd.unique(df["name"])
    if isinstance(calibration, Mapping):
        missing_names = [n for n in names if n not in calibration]
        if missing_names:
            raise InputError(f"calibration has no entry for system(s) {missing_names}; pass one calibration or a "
                             f"mapping with every name in column 'name'")
        cals = {n: _calibration_arg(calibration[n]) for n in names}
    else:
        cal = _calibration_arg(calibration)
        cals = {n: cal for n in names}
    for n, c in cals.items():
        c._require_binary(f"correct_experiment (system {n!r})")
    s_row = df["measure"].map(totals).to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values < -1e-12) | (values > s_row + 1e-12)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"perquery column 'value', row {i} (name={df['name'].iloc[i]!r}, qid={df['qid'].iloc[i]!r}, "
                         f"measure={df['measure'].iloc[i]!r}): expected a number in [0, {s_row[i]:g}], got "
                         f"{df['value'].iloc[i]!r}")
    df["value"] = values
    # per-system constants (few systems): tnr, D for the affine per-query map and the delta terms
    tnr = df["name"].map({n: c.tnr for n, c in cals.items()}).to_numpy()
    dd = df["name"].map({n: c.D for n, c in cals.items()}).to_numpy()
    if per_query_values:
        for c in {id(c): c for c in cals.values()}.values():
            c._check_usable()
        out = perquery.copy()
        out["corrected"] = (values - s_row * (1.0 - tnr)) / dd     # Eq 14 per topic: (M - S (1 - m_JN)) / D
        return out
    g = df.groupby(["name", "measure"], sort=False)["value"]
    agg = pd.DataFrame({"n_queries": g.size(), "naive": g.mean(), "sd": g.std(ddof=ddof)}).reset_index()
    if (agg["n_queries"] <= ddof).any():
        row = agg[agg["n_queries"] <= ddof].iloc[0]
        raise InputError(f"system {row['name']!r}, measure {row['measure']!r}: need more than {ddof} topic(s)")
    S = agg["measure"].map(totals).to_numpy(dtype=np.float64)
    J = np.stack([cals[n]._J for n in agg["name"]])
    n_gold = np.stack([cals[n]._n_gold for n in agg["name"]]).astype(np.float64)
    m = agg["naive"].to_numpy()
    n = agg["n_queries"].to_numpy(dtype=np.float64)
    mass_mean = np.stack([S - m, m], axis=1)
    w = _solve_w(J, np.array([0.0, 1.0]))
    mu = _mu(J, mass_mean)
    calib = _calibration_terms(J, n_gold, mu[:, :, None] * w[:, None, :]).sum(axis=1)
    query_var = (w[:, 1] - w[:, 0]) ** 2 * agg["sd"].to_numpy() ** 2 / n
    corrected = (mass_mean * w).sum(axis=1)
    se = np.sqrt(query_var + calib)
    z = _z(alpha)
    agg["naive_se"] = agg["sd"] / np.sqrt(n)
    agg["corrected"] = corrected
    agg["se"] = se
    agg["ci_low"] = corrected - z * se
    agg["ci_high"] = corrected + z * se
    agg["D"] = [cals[x].D for x in agg["name"]]
    for c in {id(c): c for c in cals.values()}.values():
        c._check_usable()
    out_of_range = (corrected < -1e-12) | (corrected > S + 1e-12)
    if out_of_range.any():
        r = agg[out_of_range].iloc[0]
        _warn(f"{int(out_of_range.sum())} corrected value(s) lie outside the metric's range, e.g. system "
              f"{r['name']!r} {r['measure']} = {r['corrected']:.4f}: the calibration does not fit these judgments")
    return agg[["name", "measure", "n_queries", "naive", "naive_se", "corrected", "se", "ci_low", "ci_high", "D"]]


# ------------------------------------------------------------------------------------------------
# comparing two systems

@dataclass
class Comparison:
    """Difference ``a - b`` of two corrected estimates and the naive (bronze) comparison.

    ``p_value`` is from the normal approximation (Goldberg et al. 2017, Eq 10/11);
    ``naive_p_value`` from Welch's t-test (Eq 9 with the Welch-Satterthwaite df) or, for paired
    topics, the paired t-test.
    """

    diff: float
    se: float
    z: float
    p_value: float
    ci_low: float
    ci_high: float
    calibration: str
    paired: bool
    se_method: str
    naive_diff: float
    naive_se: float
    naive_statistic: float
    naive_df: float
    naive_p_value: float
    naive_test: str
    alternative: str = "two-sided"
    n_invalid_replicates: int = 0


def compare(a: CorrectedEstimate, b: CorrectedEstimate, *,
            calibration: Literal["auto", "shared", "independent"] = "auto",
            paired: Literal["auto"] | bool = "auto", se: Literal["delta", "bootstrap"] = "delta",
            alternative: Literal["two-sided", "greater", "less"] = "two-sided", alpha: float = 0.05,
            n_boot: int = 10_000, seed: SeedLike = None) -> Comparison:
    """Test ``a - b`` on corrected metrics (Goldberg et al. 2017, Eq 10/11; notes Sec 12.3).

    ``calibration="independent"`` adds the two estimates' variances, as the paper's Eq 10 does --
    right when each system has its own calibration sample.  ``"shared"`` is for one calibration
    used for both: its error then moves both corrected values together, so it enters through the
    *difference* of the gradients, ``sum_j Var_{b~J[j]}(mu_a,j w_a,b - mu_b,j w_b,b) / n_j``, and
    usually gives a much smaller SE (eBay: p 0.854 independent, 0.017 shared).  ``"auto"`` picks
    shared when both estimates used the same calibration sample.

    ``paired="auto"`` pairs topics when both estimates have per-query values over the same qids
    (query term ``Var_q(a_q - b_q) / n``); otherwise the query terms add (unpaired).
    ``se="bootstrap"`` draws topics and calibrations jointly under the same choices (``seed``).
    """
    for name, e in (("a", a), ("b", b)):
        if not isinstance(e, CorrectedEstimate):
            raise InputError(f"{name} must be a CorrectedEstimate (from corrected_precision etc.), got "
                             f"{type(e).__name__}")
    _check_choice("calibration", calibration, ("auto", "shared", "independent"))
    _check_choice("paired", paired, ("auto", True, False))
    _check_choice("se", se, ("delta", "bootstrap"))
    _check_choice("alternative", alternative, ("two-sided", "greater", "less"))
    alpha = _check_alpha(alpha)
    n_boot = _check_int("n_boot", n_boot, 2)
    same = a.calibration.same_sample(b.calibration)
    if calibration == "auto":
        calibration = "shared" if same else "independent"
    if calibration == "shared" and not same:
        raise InputError("calibration='shared' needs both estimates to use the same calibration sample "
                         "(same labels and counts); these differ, use calibration='independent'")
    can_pair = (a.per_query is not None and b.per_query is not None
                and set(a.per_query.index) == set(b.per_query.index) and a.per_query.index.is_unique)
    if paired is True and not can_pair:
        raise InputError("paired=True needs per-query values of both systems over the same qids")
    paired_b = bool(can_pair if paired == "auto" else paired)
    ddof = a._ddof
    diff = a.value - b.value

    if paired_b:
        order = a.per_query.index
        b_pos = b.per_query.index.get_indexer(order)
        b_mass = b._mass[b_pos]
        pa, pb = a.per_query.to_numpy(), b.per_query.to_numpy()[b_pos]
        query_var = float(np.var(pa - pb, ddof=ddof) / len(pa))
    else:
        b_mass = b._mass
        query_var = a.var_terms["query"] + b.var_terms["query"]
    J = a.calibration._J
    if calibration == "shared":
        mu_a = a.calibration._Jinv.T @ a._mass_mean
        mu_b = b.calibration._Jinv.T @ b._mass_mean
        g = mu_a[:, None] * a.corrected_gains[None, :] - mu_b[:, None] * b.corrected_gains[None, :]
        calib_var = float(_calibration_terms(J, a.calibration._n_gold.astype(np.float64), g).sum())
    else:
        calib_var = sum(v for k, v in a.var_terms.items() if k != "query") + \
            sum(v for k, v in b.var_terms.items() if k != "query")
    se_val = float(np.sqrt(query_var + calib_var))
    n_invalid = 0
    if se == "bootstrap":
        rng = np.random.default_rng(seed)
        b_boot = b
        if paired_b:
            b_boot = dataclasses.replace(b, _mass=b_mass)
        (ta, tb), valid = _draw_thetas([a, b_boot], n_boot, rng, shared=calibration == "shared", paired=paired_b)
        n_invalid = int((~valid).sum())
        if n_invalid:
            _warn(f"{n_invalid} of {n_boot} bootstrap draws had a singular or sign-flipped calibration and were "
                  f"left out (the judge is close to random)")
        d = (ta - tb)[valid]
        if d.size < 2:
            raise InputError("fewer than 2 usable bootstrap replicates: the calibration is too close to random")
        se_val = float(d.std(ddof=1))
    z = diff / se_val if se_val > 0 else (np.inf * np.sign(diff) if diff else 0.0)
    zc = _z(alpha)

    # naive comparison on the bronze values
    if paired_b:
        na, nb = a.naive_per_query.to_numpy(), b.naive_per_query.to_numpy()[b_pos]
        res = stats.ttest_rel(na, nb, alternative=alternative)
        naive_se = float(np.std(na - nb, ddof=1) / np.sqrt(len(na)))
        naive_stat, naive_df, naive_p, test = float(res.statistic), float(res.df), float(res.pvalue), "paired t"
    else:
        va = a._naive_sd ** 2 / a.n_queries
        vb = b._naive_sd ** 2 / b.n_queries
        naive_se = float(np.sqrt(va + vb))
        res = stats.ttest_ind_from_stats(a.naive_value, a._naive_sd, a.n_queries, b.naive_value, b._naive_sd,
                                         b.n_queries, equal_var=False, alternative=alternative)
        # Welch-Satterthwaite df (the paper's Eq 9 text prints n_b - 1 twice: a typo, notes A3)
        naive_df = float((va + vb) ** 2 / (va ** 2 / (a.n_queries - 1) + vb ** 2 / (b.n_queries - 1))) \
            if va + vb > 0 else float("nan")
        naive_stat, naive_p, test = float(res.statistic), float(res.pvalue), "welch"
    return Comparison(diff=float(diff), se=se_val, z=float(z), p_value=_p_value(float(z), alternative),
                      ci_low=float(diff - zc * se_val), ci_high=float(diff + zc * se_val), calibration=calibration,
                      paired=paired_b, se_method=se, naive_diff=float(a.naive_value - b.naive_value),
                      naive_se=naive_se, naive_statistic=naive_stat, naive_df=naive_df, naive_p_value=naive_p,
                      naive_test=test, alternative=alternative, n_invalid_replicates=n_invalid)
