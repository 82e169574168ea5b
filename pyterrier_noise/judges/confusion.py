"""Confusion-matrix judges (Goldberg et al. 2017): each label is redrawn from ``P(observed | true)``."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import InputError, check_confusion, check_rate, is_frame
from ._common import _warn
from .base import JudgmentPerturbation
from .stream import Rows, Stream


def _is_calibration(matrix: Any) -> bool:
    """A :class:`~pyterrier_noise.correction.JudgeCalibration`, known by what it gives (the judges
    sit below the correction, which builds on them): its ``matrix``, ``labels`` and ``counts``."""
    return not isinstance(matrix, np.ndarray) and not is_frame(matrix) and all(
        hasattr(matrix, a) for a in ("matrix", "labels", "counts"))


class ConfusionJudge(JudgmentPerturbation):
    """A judge given by a confusion matrix ``J[g, b] = P(observed label b | true label g)``.

    Goldberg et al. (2017), Table 1 (binary) and Sec. 4.1 (graded, Eq. 15-16): each judgment
    with label ``g`` is replaced by a label drawn from row ``g``.  ``matrix`` is a
    :class:`~pyterrier_noise.correction.JudgeCalibration` (its estimated matrix and labels), a
    frame (index = true labels, columns = observed labels, in the same order) or a square array
    with ``labels``; rows must sum to 1.  With ``sample_matrix=True`` (calibrations only) every
    replicate first redraws the matrix from the calibration's multinomial counts, adding the
    calibration's own uncertainty (Goldberg et al. 2017, Alg. 1).  Every label in the
    judgments must be one of the matrix's labels.
    """

    def __init__(self, matrix: Any, labels: Sequence[float] | None = None, *, sample_matrix: bool = False,
                 seed: int | None = 0) -> None:
        super().__init__(seed)
        self._counts = None
        if _is_calibration(matrix):
            if labels is not None:
                raise InputError("labels come from the calibration; do not pass labels with a JudgeCalibration")
            labels = matrix.labels
            self._counts = matrix.counts.to_numpy().astype(np.int64)
            matrix = matrix.matrix.to_numpy()
        labels, J = check_confusion("matrix", matrix, labels)
        n_labels = J.shape[0]
        values = np.asarray(labels)
        order = np.argsort(values)
        self.labels = values[order]
        self.matrix = J[np.ix_(order, order)]
        if self._counts is not None:
            self._counts = self._counts[np.ix_(order, order)]
        self.sample_matrix = bool(sample_matrix)
        if self.sample_matrix and self._counts is None:
            raise InputError("sample_matrix=True redraws the matrix from calibration counts: pass a JudgeCalibration")
        if abs(np.linalg.det(self.matrix)) < 1e-9:
            _warn("the confusion matrix is singular: the observed labels carry no (or incomplete) information about "
                  "the true labels (a judge no better than chance)")
        elif n_labels == 2 and self.matrix[1, 1] <= self.matrix[0, 1]:
            _warn(f"TPR = {self.matrix[1, 1]:g} <= FPR = {self.matrix[0, 1]:g}: this judge is no better than chance")

    @classmethod
    def from_rates(cls, tpr: float, fpr: float, *, seed: int | None = 0) -> "ConfusionJudge":
        """The binary judge ``[[1 - fpr, fpr], [1 - tpr, tpr]]`` on labels 0, 1 (Goldberg et al. 2017, Table 1)."""
        tpr, fpr = check_rate("tpr", tpr), check_rate("fpr", fpr)
        return cls(np.array([[1 - fpr, fpr], [1 - tpr, tpr]]), [0, 1], seed=seed)

    def _params(self) -> dict[str, Any]:
        return {"labels": self.labels.tolist(), "matrix": np.round(self.matrix, 6).tolist(),
                "sample_matrix": self.sample_matrix}

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        judged = ~np.isnan(L)
        g = np.searchsorted(self.labels, np.where(judged, L, self.labels[0]))
        g = np.minimum(g, len(self.labels) - 1)
        unknown = judged & (self.labels[g] != np.where(judged, L, self.labels[0]))
        if unknown.any():
            r, c = np.argwhere(unknown)[0]
            row = rows.table.frame.iloc[rows.rows[r]]
            raise InputError(f"judgment qid={row['qid']!r}, docno={row['docno']!r} has label {float(L[r, c]):g}, "
                             f"which is not one of the confusion matrix's labels {self.labels.tolist()}")
        U = stream.uniforms()
        nl = len(self.labels)
        if self.sample_matrix:
            n_gold = self._counts.sum(axis=1)
            J = self._counts / n_gold[:, None]
            draws = stream.child(0).generator().multinomial(n_gold, J, size=(stream.start + stream.n, nl))
            cum = np.cumsum(draws[stream.start:] / n_gold[None, :, None], axis=2)   # (n, L, L)
            col = np.arange(stream.n)[None, :]
            obs = np.zeros(U.shape, dtype=np.int64)
            for c in range(nl - 1):   # over labels (a handful), vectorised over judgments x replicates
                obs += U >= cum[col, g, c]
        else:
            cum = np.cumsum(self.matrix, axis=1)
            obs = np.zeros(U.shape, dtype=np.int64)
            for c in range(nl - 1):
                obs += U >= cum[g, c]
        return np.where(judged, self.labels[obs], np.nan)
