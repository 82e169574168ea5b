"""A bronze judge's confusion matrix against a gold judge (Goldberg et al. 2017, Table 1, Sec 3.1, 4.1).

:class:`JudgeCalibration` counts (gold, bronze) label pairs of a gold-rejudged sample, estimates
``J[g, b] = P(bronze=b | gold=g)`` and its multinomial uncertainty, and gives the corrected gains
``w = J^-1 v`` every corrected metric is built from.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_confusion, check_int, check_probability
from ..io import read_qrels
from ._common import _MAX_COND, _NEAR_RANDOM_Z, _SINGULAR_DET, SeedLike, _announce, _det_sd, _py, _warn

__all__ = ["JudgeCalibration"]


class JudgeCalibration:
    """Confusion matrix of a bronze judge against a gold judge (Goldberg et al. 2017, Table 1, Sec 4.1).

    ``counts[g, b]`` is the number of calibration pairs the gold judge labelled ``g`` and the
    bronze judge labelled ``b`` (rows = gold, columns = bronze).  The estimated confusion matrix is
    the row-normalised counts, ``J[g, b] = P(bronze=b | gold=g)``; each row is a multinomial sample
    of size ``n_gold[g]``.  For binary labels ``tpr`` is the paper's ``m_JR`` and ``tnr`` its ``m_JN``.

    Numeric labels are sorted ascending (the higher of two binary labels is "relevant"); other
    labels keep the order given.  Every gold label needs at least one pair and the matrix must be
    invertible; otherwise :class:`~pyterrier_noise.InputError` is raised.

    Args:
        counts: square array (or frame with gold labels as index and bronze labels as columns).
        labels: the labels of the rows/columns (default: the frame's index, else ``0..L-1``).
    """

    def __init__(self, counts: Any, labels: Sequence[Any] | None = None) -> None:
        labels, arr = check_confusion("counts", counts, labels, counts=True, numeric=False)
        labels = [_py(x) for x in labels]
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
                the data raise :class:`~pyterrier_noise.InputError`.
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
        n_r = check_int("n_relevant", n_relevant, 1)
        n_n = check_int("n_nonrelevant", n_nonrelevant, 1)
        a_r = check_int("agree_relevant", agree_relevant, 0)
        a_n = check_int("agree_nonrelevant", agree_nonrelevant, 0)
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
        return pd.Series(self._n_gold, index=self._gold_index, name="n")

    @functools.cached_property
    def _gold_index(self) -> pd.Index:
        """The labels as the gold index of :attr:`n_gold` (immutable: built once, as every
        corrected estimate reads :attr:`n_gold`)."""
        return pd.Index(self._labels, name="gold")

    @property
    def J(self) -> np.ndarray:  # noqa: N802
        """:attr:`matrix` as an ``(L, L)`` array (rows: gold label, columns: bronze label); not to be
        modified."""
        return self._J

    @property
    def J_inv(self) -> np.ndarray:  # noqa: N802
        """The inverse of :attr:`J`, which turns bronze-label masses into gold-label ones (Goldberg
        et al. 2017, Eq 14); not to be modified."""
        return self._Jinv

    @property
    def numeric(self) -> bool:
        """Whether the labels are numbers (then they are their own gains by default)."""
        return self._numeric

    @property
    def n_pairs(self) -> int:
        """Total number of calibration pairs."""
        return int(self._counts.sum())

    def require_binary(self, what: str) -> None:
        """Raise an :class:`InputError` naming ``what`` unless the calibration is binary."""
        if self.n_labels != 2:
            raise InputError(f"{what} is defined for binary calibrations only; this one has "
                             f"{self.n_labels} labels {self._labels}")

    @property
    def tpr(self) -> float:
        """``m_JR = P(bronze relevant | gold relevant)`` (binary only; Goldberg et al. 2017, Table 1)."""
        self.require_binary("tpr")
        return float(self._J[1, 1])

    @property
    def tnr(self) -> float:
        """``m_JN = P(bronze non-relevant | gold non-relevant)`` (binary only)."""
        self.require_binary("tnr")
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

        Uses Jacobi's formula ``d det J / d J[g, b] = det J * (J^-1)[b, g]``.
        """
        return _det_sd(self._J, self._n_gold, self._det, self._Jinv)

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
        check_choice("given", given, ("gold", "bronze"))
        alpha = check_probability("alpha", alpha)
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
        """Corrected gains ``w = J^-1 v`` (Goldberg et al. 2017, Eq 17/18).

        Scoring every bronze label ``b`` with ``w[b]`` instead of ``v[b]`` gives the corrected metric.
        Binary P@k: ``w = ((m_JN - 1) / D, m_JN / D)``.
        """
        v = self.gain_vector(gains)
        return pd.Series(self._Jinv @ v, index=pd.Index(self._labels, name="bronze"), name="corrected_gain")

    def sample_matrices(self, n_draws: int, seed: SeedLike = 0) -> np.ndarray:
        """Redraw the confusion matrix ``n_draws`` times: row ``g`` ~ Multinomial(n_gold[g], J[g]) / n_gold[g].

        The parametric bootstrap of the calibration (Goldberg et al. 2017, Alg 1; binomial when
        binary).  Returns an array ``(n_draws, L, L)``; ``seed`` defaults to 0, ``seed=None`` draws
        fresh entropy.
        """
        n_draws = check_int("n_draws", n_draws, 1)
        rng = np.random.default_rng(seed)     # a Generator given as seed is used as it is
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

    def check_usable(self) -> None:
        """Warn (:class:`CorrectionWarning`) when the bronze judge is too close to random, or worse
        than random, for a correction to be reliable."""
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


def calibration_arg(calibration: Any) -> JudgeCalibration:
    if not isinstance(calibration, JudgeCalibration):
        raise InputError(f"calibration must be a JudgeCalibration (e.g. JudgeCalibration.from_pairs(...)), "
                         f"got {type(calibration).__name__}")
    return calibration

