"""The cheap judge's error model fitted from a gold sample: confusion by grade, optionally by rank.

``P(cheap label b | gold label g)`` is estimated from the gold-judged pairs, each weighted by
``1 / pi`` (its inclusion probability under the sampling design), so that a sample stratified by
the cheap label still estimates the confusion of the whole pool (Goldberg et al. 2017 estimate it
from an unweighted sample; with a design that favours some cheap labels the weights are needed).
:func:`fit_judge` returns a :class:`~pyterrier_noise.judges.ConfusionJudge`, which the robustness
experiment takes as its model: "how much could my conclusions move under this judge's errors".
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError

__all__ = ["fit_confusion", "fit_judge", "rank_strata"]


def fit_confusion(cheap: Any, gold: Any, *, weights: Any = None, rank: Any = None,
                  rank_bins: Sequence[int] | None = None, labels: Sequence[float] | None = None,
                  smoothing: float = 0.0) -> pd.DataFrame:
    """Row-stochastic confusion ``P(cheap | gold)`` (rows gold labels, columns cheap labels).

    Args:
        cheap, gold: the two labels of each gold-judged pair (equal length).
        weights: ``1 / pi`` per pair (default 1).
        rank: the best (1-based) rank of each pair in the runs; with ``rank_bins`` (upper edges,
            e.g. ``[10, 100]``) one matrix per rank bin is returned, stacked with a ``ranks`` level
            (``"1-10"``, ``"11-100"``, ``"101+"``).
        labels: the label set (default: every label seen).
        smoothing: added to every cell before normalising (0: the plain estimate).

    A gold label without any pair gives a row of NaN (the frame is returned; :func:`fit_judge`
    refuses it).
    """
    c = np.asarray(cheap, dtype=np.float64)
    g = np.asarray(gold, dtype=np.float64)
    if c.shape != g.shape or c.ndim != 1:
        raise InputError(f"cheap and gold must be two label vectors of one length, got {c.shape} and {g.shape}")
    if np.isnan(c).any() or np.isnan(g).any():
        raise InputError("every gold-judged pair needs both labels (found NaN)")
    w = np.ones(len(c)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != c.shape or (w <= 0).any():
        raise InputError(f"weights must be {len(c)} positive numbers (1 / inclusion probability)")
    lab = np.unique(np.concatenate([c, g])) if labels is None else np.asarray(labels, dtype=np.float64)
    for name, x in (("cheap", c), ("gold", g)):
        bad = ~np.isin(x, lab)
        if bad.any():
            raise InputError(f"{name} label {x[bad][0]!r} (pair {int(np.flatnonzero(bad)[0])}) is not one of {list(lab)}")

    def one(mask: np.ndarray) -> pd.DataFrame:
        M = np.full((len(lab), len(lab)), float(smoothing))
        np.add.at(M, (np.searchsorted(lab, g[mask]), np.searchsorted(lab, c[mask])), w[mask])
        with np.errstate(invalid="ignore", divide="ignore"):
            M = M / M.sum(axis=1, keepdims=True)
        return pd.DataFrame(M, index=pd.Index(lab, name="gold"), columns=pd.Index(lab, name="cheap"))

    if rank_bins is None:
        return one(np.ones(len(c), dtype=bool))
    if rank is None:
        raise InputError("rank_bins needs rank (the best rank of each pair in the runs)")
    b, names = rank_strata(rank, rank_bins)
    return pd.concat({n: one(b == k) for k, n in enumerate(names)}, names=["ranks"])


def rank_strata(rank: Any, rank_bins: Sequence[int]) -> tuple[np.ndarray, list[str]]:
    """The rank bin of each pair and the bins' names: ``rank`` is the best (1-based) rank of each pair
    in the runs (``inf``: no run retrieves it), ``rank_bins`` the bins' upper edges, increasing
    (``[10]``: ``"1-10"`` and ``"11+"``; ``[10, 100]``: ``"1-10"``, ``"11-100"``, ``"101+"``)."""
    edges = [int(e) for e in rank_bins]
    if any(e < 1 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise InputError(f"rank_bins must be increasing ranks >= 1 (upper edges of the bins), got {list(rank_bins)}")
    r = np.asarray(rank, dtype=np.float64)
    if np.isnan(r).any():
        raise InputError(f"rank must be a best rank per pair (inf: not retrieved), found NaN at pair "
                         f"{int(np.flatnonzero(np.isnan(r))[0])}")
    names, lo = [], 1
    for e in edges:
        names.append(f"{lo}-{e}")
        lo = e + 1
    names.append(f"{lo}+")
    return np.searchsorted(np.asarray(edges, dtype=np.float64), r, side="left"), names


def fit_judge(cheap: Any, gold: Any, *, weights: Any = None, labels: Sequence[float] | None = None,
              smoothing: float = 0.0, seed: int | None = 0) -> Any:
    """A :class:`~pyterrier_noise.judges.ConfusionJudge` with the confusion fitted by :func:`fit_confusion`.

    Its matrix maps a true label to the cheap judge's label (Goldberg et al. 2017, Table 1 and
    Sec 4.1); pass it as the model of
    :func:`~pyterrier_noise.experiments.robustness_experiment` to see how scores, rankings and
    significance move under this judge's errors.  The judge is blind to rank (one matrix for every
    pair): ``pyterrier_noise.judges`` has no graded confusion model by rank, so errors that depend on
    rank (see ``fit_confusion(rank_bins=...)``) are averaged over ranks.
    """
    from ..judges import ConfusionJudge
    M = fit_confusion(cheap, gold, weights=weights, labels=labels, smoothing=smoothing)
    empty = M.index[M.isna().any(axis=1)].tolist()
    if empty:
        raise InputError(f"no gold-judged pair has gold label(s) {empty}: the confusion row is unknown; add pairs "
                         f"with that label, pass smoothing > 0, or restrict labels")
    return ConfusionJudge(M.to_numpy(), list(M.index), seed=seed)
