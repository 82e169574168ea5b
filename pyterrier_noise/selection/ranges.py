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


def _gain_fn(rel: float, max_rel: float | None, p: float) -> Callable[[np.ndarray], np.ndarray]:
    """Gain in [0, 1] of a label: the engine's :func:`~pyterrier_noise.engine.gains` for RBP at
    ``p`` (binary ``label >= rel``, or graded ``clip(label, 0, max_rel) / max_rel``)."""
    spec = MeasureSpec("RBP", p=p, rel=rel, max_rel=max_rel)
    return lambda y: gains(np.asarray(y, dtype=np.float64), spec)


def _bounds_arrays(sel: Any, ps: Sequence[float]) -> dict[float, dict[str, np.ndarray]]:
    """RBP base / residual / projected (n_runs, n_topics) at each p, summed over the positions of
    the judged documents only: base = sum W(i) u_i over judged positions,
    residual = 1 - judged mass (the tail after the run included), projected = base / judged mass
    (NaN when nothing is judged).  Equal to the engine's RBP value / residual / projected."""
    ct = sel.contributions
    rows = np.flatnonzero(sel.judged)
    lens = ct.all_ptr[rows + 1] - ct.all_ptr[rows]
    offs = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(lens[:-1], out=offs[1:])
    idx = np.repeat(ct.all_ptr[rows] - offs, lens) + np.arange(int(lens.sum()))
    seg = ct.all_seg[idx]
    gain = np.repeat(sel.gain(sel.labels()[rows]), lens)
    pos = ct.all_pos[idx]
    n_seg = sel.n_runs * sel.n_topics
    out = {}
    for p in ps:
        r = ranges_from_judged(seg, pos, gain, n_seg, p)   # the engine's one home of the RBP ranges
        shape = (sel.n_runs, sel.n_topics)
        out[p] = {k: r[k].reshape(shape) for k in ("base", "residual", "projected")}
    return out


def _bounds_frame(sel: Any, p: float) -> pd.DataFrame:
    import pandas as pd
    res = _bounds_arrays(sel, [p])[p]
    S, T = sel.n_runs, sel.n_topics
    base, resid, proj = res["base"], res["residual"], res["projected"]
    return pd.DataFrame({"name": np.repeat(np.asarray(sel.run_names, dtype=object), T),
                         "qid": np.tile(np.asarray(sel.topics, dtype=object), S),
                         "base": base.ravel(), "residual": resid.ravel(), "upper": (base + resid).ravel(),
                         "projected": proj.ravel()})




def _system_frame(sel: Any, p: float) -> pd.DataFrame:
    """Per-run means over topics of base, residual, upper and projected (a topic with nothing judged
    counts its midpoint base + residual/2), from the arrays without building the per-topic frame;
    pandas' group means, grouped by run number."""
    import pandas as pd
    res = _bounds_arrays(sel, [p])[p]
    S, T = sel.n_runs, sel.n_topics
    base, resid = res["base"].ravel(), res["residual"].ravel()
    cols = {"base": base, "residual": resid, "upper": base + resid,
            "projected": midpoint_where_undefined(base, resid, res["projected"].ravel())}
    out = pd.DataFrame(cols).groupby(np.repeat(np.arange(S), T), sort=False).mean()
    out.insert(0, "name", np.asarray(sel.run_names, dtype=object))
    return out.reset_index(drop=True)
