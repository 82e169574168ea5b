"""RBP ranges of the runs from the judgments a selector holds: base, residual, upper, projected.

Moffat, Webber & Zobel (SIGIR 2007), Sec. 2: base = sum of W(i) u_i over the
judged positions, residual = 1 - judged mass (the tail after the run included), upper = base +
residual, projected = base / judged mass.  W(i) = (1-p) p^i is the engine's
:func:`~pyterrier_noise.engine.rbp_weights`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..engine import MeasureSpec, gains
from ..engine.ranges import midpoint_where_undefined, ranges_from_judged

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def gain_fn(rel: float, max_rel: float | None, p: float) -> Callable[[np.ndarray], np.ndarray]:
    """Gain in [0, 1] of a label: the engine's :func:`~pyterrier_noise.engine.gains` for RBP at
    ``p`` (binary ``label >= rel``, or graded ``clip(label, 0, max_rel) / max_rel``)."""
    spec = MeasureSpec("RBP", p=p, rel=rel, max_rel=max_rel)
    return lambda y: gains(np.asarray(y, dtype=np.float64), spec)


def judged_ranges(contrib: Any, judged: np.ndarray, labels: np.ndarray, gain: Callable[[np.ndarray], np.ndarray],
                  shape: tuple[int, int], ps: Sequence[float]) -> dict[float, dict[str, np.ndarray]]:
    """RBP base / residual / projected ``shape`` = (n_runs, n_topics) at each p, summed over the
    positions of the judged documents only (``judged``: a mask of the table rows, ``labels`` their
    labels, ``contrib`` the selector's contribution structure): base = sum W(i) u_i over judged
    positions, residual = 1 - judged mass (the tail after the run included), projected = base /
    judged mass (NaN when nothing is judged).  Equal to the engine's RBP value / residual / projected."""
    ct = contrib
    rows = np.flatnonzero(judged)
    lens = ct.all_ptr[rows + 1] - ct.all_ptr[rows]
    offs = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(lens[:-1], out=offs[1:])
    idx = np.repeat(ct.all_ptr[rows] - offs, lens) + np.arange(int(lens.sum()))
    seg = ct.all_seg[idx]
    g = np.repeat(gain(labels[rows]), lens)
    pos = ct.all_pos[idx]
    n_seg = shape[0] * shape[1]
    out = {}
    for p in ps:
        r = ranges_from_judged(seg, pos, g, n_seg, p)   # the engine's one home of the RBP ranges
        out[p] = {k: r[k].reshape(shape) for k in ("base", "residual", "projected")}
    return out


def ranges_frame(res: dict[str, np.ndarray], run_names: Sequence[str], topics: Sequence[str]) -> pd.DataFrame:
    """One p's :func:`judged_ranges` as a frame ``name, qid, base, residual, upper, projected``."""
    import pandas as pd
    S, T = res["base"].shape
    base, resid, proj = res["base"], res["residual"], res["projected"]
    return pd.DataFrame({"name": np.repeat(np.asarray(run_names, dtype=object), T),
                         "qid": np.tile(np.asarray(topics, dtype=object), S),
                         "base": base.ravel(), "residual": resid.ravel(), "upper": (base + resid).ravel(),
                         "projected": proj.ravel()})


def system_ranges(res: dict[str, np.ndarray], run_names: Sequence[str]) -> pd.DataFrame:
    """Per-run means over topics of one p's :func:`judged_ranges`: base, residual, upper and
    projected (a topic with nothing judged counts its midpoint base + residual/2), from the arrays
    without building the per-topic frame; pandas' group means, grouped by run number."""
    import pandas as pd
    S, T = res["base"].shape
    base, resid = res["base"].ravel(), res["residual"].ravel()
    cols = {"base": base, "residual": resid, "upper": base + resid,
            "projected": midpoint_where_undefined(base, resid, res["projected"].ravel())}
    out = pd.DataFrame(cols).groupby(np.repeat(np.arange(S), T), sort=False).mean()
    out.insert(0, "name", np.asarray(run_names, dtype=object))
    return out.reset_index(drop=True)
