"""The ``pt.Experiment``-shaped table of a robustness result, with the robustness columns beside it.

Private to :mod:`pyterrier_noise.experiments`: :attr:`RobustnessResult.frame` and
:meth:`RobustnessResult.style` are its public faces.
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice
from .._vocab import HIGHLIGHTS

if TYPE_CHECKING:
    from .result import RobustnessResult


def check_frame_options(round: int | Mapping[str, int] | None, highlight: str | None,
                        measures: list[str] | None = None) -> None:
    """``round`` and ``highlight`` as ``pt.Experiment`` takes them, or an InputError."""
    def ok(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
    if round is not None:
        if isinstance(round, Mapping):
            for k, v in round.items():
                if not ok(v):
                    raise InputError(f"round[{k!r}] must be a non-negative integer (decimals), got {v!r}")
                if measures is not None and k not in measures:
                    raise InputError(f"round names measure {k!r}, which is not in this experiment; "
                                     f"it has {measures}")
        elif not ok(round):
            raise InputError(f"round must be a non-negative integer (decimals) or a {{measure: decimals}} dict, "
                             f"got {round!r}")
    check_choice("highlight", highlight, HIGHLIGHTS, allow_none=True)


def experiment_frame(res: "RobustnessResult") -> pd.DataFrame:
    """One row per system: ``name``, the mean of each measure under the unperturbed qrels (in the
    order asked), with a baseline ``<m> +``, ``<m> -``, ``<m> p-value`` (and with a correction
    ``<m> reject``, ``<m> p-value corrected``) exactly as ``pt.Experiment`` lays them out, then per
    measure the robustness columns ``<m> sd``, ``<m> rank``, ``<m> rank held`` and, with a
    baseline, ``<m> kept``."""
    p = res.params
    names = list(res.names)
    S = len(names)
    b = None if p.get("baseline") is None else names.index(p["baseline"])
    rnd = p.get("round")
    sysf = res.systems
    cols: dict[str, Any] = {"name": pd.Series(names, dtype=object)}

    def rounded(m: str, x: np.ndarray) -> np.ndarray:
        d = rnd if isinstance(rnd, (int, np.integer)) else (rnd or {}).get(m)
        return x if d is None else np.array([builtins.round(float(v), int(d)) for v in x])

    by_m = {m: sysf[sysf["measure"] == m].set_index("name").loc[names] for m in res.measures}
    for m in res.measures:
        cols[m] = rounded(m, by_m[m]["true"].to_numpy())
    if b is not None:
        others = np.flatnonzero(np.arange(S) != b)
        for m in res.measures:
            X = res.true[m]
            plus = np.full(S, np.nan)
            minus = np.full(S, np.nan)
            plus[others] = (X[others] > X[b]).sum(axis=1)
            minus[others] = (X[others] < X[b]).sum(axis=1)
            base = res.baseline[res.baseline["measure"] == m].set_index("name").loc[[names[k] for k in others]]
            pv = np.full(S, np.nan)
            pv[others] = base["p_value"].to_numpy()
            cols[f"{m} +"], cols[f"{m} -"], cols[f"{m} p-value"] = plus, minus, pv
            if p.get("correction") is not None:
                pc = np.full(S, np.nan)
                pc[others] = base["p_corrected"].to_numpy()
                # statsmodels' multipletests rejects where the corrected p <= alpha
                with np.errstate(invalid="ignore"):
                    cols[f"{m} reject"] = pc <= p["alpha"]
                cols[f"{m} p-value corrected"] = pc
    for m in res.measures:
        f = by_m[m]
        cols[f"{m} sd"] = rounded(m, f["sd"].to_numpy())
        r0 = f["true_rank"].to_numpy()
        cols[f"{m} rank"] = r0
        cols[f"{m} rank held"] = (res.observed_ranks[m] == r0[None, :]).mean(axis=0)
        if b is not None:
            kept = np.full(S, np.nan)
            base = res.baseline[res.baseline["measure"] == m].set_index("name").loc[[names[k] for k in others]]
            kept[others] = base["kept"].to_numpy()
            cols[f"{m} kept"] = kept
    return pd.DataFrame(cols)


def styled(res: "RobustnessResult", highlight: str | None) -> Any:
    """``frame`` as a pandas Styler with the best value of each measure column (and of the ``+``
    / ``-`` columns: most wins, fewest losses) marked as ``pt.Experiment(highlight=...)`` marks it."""
    check_frame_options(None, highlight)
    frame = res.frame
    sty = frame.style
    if highlight is None:
        return sty
    props = "font-weight: bold" if highlight == "bold" else "background-color: lightgreen"
    high = [c for c in frame.columns if c in res.measures or (c.endswith(" +") and c[:-2] in res.measures)]
    low = [c for c in frame.columns if c.endswith(" -") and c[:-2] in res.measures]
    return sty.highlight_max(subset=high, props=props).highlight_min(subset=low, props=props)
