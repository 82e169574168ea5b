"""RBP's ranges -- base, residual, upper and projected -- in one place (Moffat, Webber and Zobel
2007, Sec. 2): base = sum of W(i) u_i over the judged positions, residual = 1 - judged mass (the
tail after the run included), upper = base + residual, projected = base / judged mass, and the
midpoint of [base, upper] where nothing is judged.  W(i) = (1-p) p^i (Moffat and Zobel 2008).

:func:`rbp_ranges` gives them from aligned runs and label versions (through the RBP kernel);
:func:`ranges_from_judged` from the judged positions a caller already holds (the judging
selector's contribution arrays); :func:`projected` and :func:`midpoint_where_undefined` are
the two steps every caller shares.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .kernels.rbp import PROJECTED_UNDEFINED, rbp_weights
from .spec import MeasureSpec

if TYPE_CHECKING:  # pragma: no cover
    from .align import AlignedRuns

__all__ = ["PROJECTED_UNDEFINED", "projected", "midpoint_where_undefined", "ranges_from_judged", "rbp_ranges"]


def projected(base: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """RBP's projected value base / judged mass; NaN where nothing is judged (mass 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mass > 0, base / np.where(mass > 0, mass, 1.0), np.nan)


def midpoint_where_undefined(base: np.ndarray, residual: np.ndarray, proj: np.ndarray) -> np.ndarray:
    """The projected value, with the midpoint base + residual / 2 of the range where it is
    undefined (NaN: nothing judged; then base 0 and residual 1 without a cutoff, so
    :data:`PROJECTED_UNDEFINED`)."""
    return np.where(np.isnan(proj), base + residual / 2.0, proj)


def ranges_from_judged(seg: np.ndarray, pos: np.ndarray, gain: np.ndarray, n_segments: int,
                       p: float) -> dict[str, np.ndarray]:
    """RBP ranges of every segment from its judged positions: segment ``seg``, 0-based rank
    ``pos`` and gain ``gain`` of each judged position.  Returns ``base``, ``residual``, ``upper``,
    ``projected`` (NaN where nothing is judged) and the judged ``mass``, each ``(n_segments,)``,
    equal to the engine's RBP value, residual, upper and projected under ``ties="trec_eval"``."""
    n_rank = int(pos.max(initial=-1)) + 1
    w = rbp_weights(p, n_rank)[pos]
    mass = np.bincount(seg, weights=w, minlength=n_segments)
    base = np.bincount(seg, weights=w * gain, minlength=n_segments)
    residual = np.maximum(1.0 - mass, 0.0)
    return {"base": base, "residual": residual, "upper": base + residual, "projected": projected(base, mass),
            "mass": mass}


def rbp_ranges(aligned: "AlignedRuns", p: float, labels: np.ndarray | None = None, rel: float = 1.0,
               max_rel: float | None = None, cutoff: int | None = None) -> dict[str, np.ndarray]:
    """RBP ranges of aligned runs for every label version: ``base``, ``residual``, ``upper`` and
    ``projected`` (the midpoint where nothing is judged), each ``(n_runs, n_topics, R)``, under the
    aligned runs' tie policy."""
    spec = {c: MeasureSpec("RBP", c, p=p, rel=rel, max_rel=max_rel, cutoff=cutoff)
            for c in ("value", "residual", "upper", "projected")}
    out = aligned.evaluate(spec.values(), labels)
    v = {c: out[s] for c, s in spec.items()}
    return {"base": v["value"], "residual": v["residual"], "upper": v["upper"],
            "projected": midpoint_where_undefined(v["value"], v["residual"], v["projected"])}
