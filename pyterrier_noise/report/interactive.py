"""The report's interactive figures (Plotly): hover names the run and gives its numbers, zoom and
pan work on any number of runs.  Colours follow :data:`pyterrier_noise._plot.COLOURS`, so a colour
means the same in the static and the interactive figures.  Each function returns a
``plotly.graph_objects.Figure``; :class:`~pyterrier_noise.report.Report` embeds it in a page that
carries Plotly's JavaScript itself (no CDN).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._plot import COLOURS, method_colour


def _layout(fig: Any, title: str, xtitle: str, ytitle: str, n_x: int | None = None, height: int = 520) -> Any:
    """The house layout: white template, titled axes, run names as vertical ticks."""
    fig.update_layout(template="plotly_white", title={"text": title, "x": 0.01}, height=height,
                      margin={"l": 70, "r": 30, "t": 60, "b": 40}, hovermode="closest",
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
                      font={"size": 12})
    fig.update_xaxes(title_text=xtitle, automargin=True)
    fig.update_yaxes(title_text=ytitle, automargin=True)
    if n_x is not None:
        fig.update_xaxes(tickangle=-90, tickfont={"size": 10 if n_x <= 60 else 9}, type="category")
    return fig


def rbp_ranges(base: pd.Series, residual: pd.Series, highlight: Sequence[str] = (),
               label: str = "RBP(p=0.8)") -> Any:
    """Each run's RBP from its base (judged documents only) to its upper bound (every unjudged
    document relevant), best base first (Moffat, Webber & Zobel 2007, Fig. 1); runs outside the
    judging pool in orange."""
    import plotly.graph_objects as go
    order = base.sort_values(ascending=False, kind="stable").index
    b, r = base.reindex(order).to_numpy(float), residual.reindex(order).to_numpy(float)
    names = np.asarray([str(n) for n in order], dtype=object)
    marked = set(map(str, highlight))
    out = np.array([n in marked for n in names], dtype=bool)
    rank = np.arange(1, len(names) + 1)
    fig = go.Figure()
    for flag, key, legend in ((False, "pooled", "pooled runs" if marked else "runs"),
                              (True, "not pooled", "runs outside the pool")):
        sel = out == flag
        if not sel.any():
            continue
        custom = np.stack([r[sel], b[sel] + r[sel], rank[sel]], axis=1)
        fig.add_trace(go.Scatter(
            x=names[sel], y=b[sel], mode="markers", name=legend, marker={"color": COLOURS[key], "size": 7},
            error_y={"type": "data", "symmetric": False, "array": r[sel], "arrayminus": np.zeros(sel.sum()),
                     "color": COLOURS[key], "thickness": 3, "width": 0},
            customdata=custom,
            hovertemplate=("<b>%{x}</b><br>rank %{customdata[2]} by base<br>" + label + " base %{y:.4f}"
                           "<br>residual %{customdata[0]:.4f}<br>upper bound %{customdata[1]:.4f}<extra></extra>")))
    _layout(fig, f"{label}: from base to upper bound, per run", "runs, by decreasing base",
            f"{label}", n_x=len(names))
    fig.update_xaxes(categoryorder="array", categoryarray=list(names))
    fig.update_yaxes(range=[0, 1])
    return fig


def replicate_distributions(result: Any, measure: str) -> Any:
    """Each run's mean score over the replicates (purple box) and under the unperturbed qrels
    (black dot), runs by unperturbed score (Rashidi, Zobel & Moffat 2023)."""
    import plotly.graph_objects as go
    m = result.measure(measure)
    M0, M = result.true[m].mean(axis=1), result.means[m]
    order = np.argsort(-M0, kind="stable")
    names = np.asarray(result.names, dtype=object)[order]
    R = M.shape[1]
    sysf = result.systems[result.systems["measure"] == m].set_index("name").reindex(names)
    fig = go.Figure()
    # the box's summary, not every replicate (143 runs x 10,000 replicates would be 1.4M numbers in
    # the page): quartiles as numpy's linear percentiles, whiskers at the range (as the caption says)
    q1, med, q3 = np.percentile(M[order], [25, 50, 75], axis=1)
    fig.add_trace(go.Box(x=names, q1=q1, median=med, q3=q3, lowerfence=M[order].min(axis=1),
                         upperfence=M[order].max(axis=1), name=f"{R} perturbed qrels",
                         marker={"color": COLOURS["spread"]}, boxpoints=False, line={"width": 1},
                         hoverinfo="skip"))
    custom = np.stack([sysf["q2.5"].to_numpy(float), sysf["q97.5"].to_numpy(float),
                       sysf["true_rank"].to_numpy(float), sysf["rank_q2.5"].to_numpy(float),
                       sysf["rank_q97.5"].to_numpy(float)], axis=1)
    fig.add_trace(go.Scatter(
        x=names, y=M0[order], mode="markers", name="unperturbed qrels",
        marker={"color": COLOURS["truth"], "size": 6}, customdata=custom,
        hovertemplate=("<b>%{x}</b><br>" + m + " %{y:.4f} (unperturbed)<br>replicates: 95% within "
                       "%{customdata[0]:.4f} to %{customdata[1]:.4f}<br>rank %{customdata[2]:.0f}, in 95% of "
                       "replicates %{customdata[3]:.0f} to %{customdata[4]:.0f}<extra></extra>")))
    _layout(fig, f"{m} of each run: unperturbed qrels and {R} perturbed qrels",
            "runs, by decreasing score under the unperturbed qrels", f"mean {m}", n_x=len(names))
    fig.update_xaxes(categoryorder="array", categoryarray=list(names))
    return fig


def rank_intervals(result: Any, measure: str) -> Any:
    """Each run's rank under the unperturbed qrels (x) against its median rank over the replicates,
    with the range holding 95% of them (Rashidi, Zobel & Moffat 2023, Figs 7-9 per run)."""
    import plotly.graph_objects as go
    m = result.measure(measure)
    s = result.systems[result.systems["measure"] == m].sort_values("true_rank", kind="stable")
    x = s["true_rank"].to_numpy(float)
    med, lo, hi = (s[c].to_numpy(float) for c in ("rank_median", "rank_q2.5", "rank_q97.5"))
    n = len(s)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[1, n], y=[1, n], mode="lines", name="same rank", hoverinfo="skip",
                             line={"color": COLOURS["reference"], "width": 1}))
    fig.add_trace(go.Scatter(
        x=x, y=med, mode="markers", name="median rank over the replicates (bar: 95% of them)",
        marker={"color": COLOURS["spread"], "size": 6}, text=s["name"].astype(str),
        error_y={"type": "data", "symmetric": False, "array": hi - med, "arrayminus": med - lo,
                 "color": COLOURS["spread"], "thickness": 1.5, "width": 0},
        customdata=np.stack([lo, hi], axis=1),
        hovertemplate=("<b>%{text}</b><br>rank %{x:.0f} under the unperturbed qrels<br>median rank %{y:.0f} "
                       "over the replicates<br>95% of replicates: %{customdata[0]:.0f} to %{customdata[1]:.0f}"
                       "<extra></extra>")))
    _layout(fig, f"{m}: rank of each run under perturbed qrels", "rank under the unperturbed qrels",
            "rank under the perturbed qrels")
    fig.update_xaxes(range=[0.5, n + 0.5])
    fig.update_yaxes(range=[max(n, float(np.nanmax(hi))) + 0.5, 0.5])    # rank 1 on top
    return fig


def selection_curves(summary: pd.DataFrame, p_eval: float | None = None) -> Any:
    """Relevant documents found and mean residual of the top runs against the number of
    judgments, one line per method (Moffat, Webber & Zobel 2007, Table 2)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    s = summary
    if "p_eval" in s.columns:
        p_eval = float(s["p_eval"].iloc[0]) if p_eval is None else p_eval
        s = s[np.isclose(s["p_eval"], p_eval)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Relevant documents found",
                                                        "Mean residual of the top runs"))
    for i, (method, g) in enumerate(s.groupby("method", sort=False)):
        g = g.sort_values("judgments")
        label = f"Method {method}" if str(method) in ("A", "B", "C") else ("depth pooling" if method == "pool" else str(method))
        style = {"color": method_colour(method, i), "width": 2}
        for col, what, fmt in ((1, "relevant", "%{y:,}"), (2, "top_residual", "%{y:.4f}")):
            fig.add_trace(go.Scatter(x=g["judgments"], y=g[what], mode="lines+markers", name=label, line=style,
                                     legendgroup=label, showlegend=col == 1,
                                     hovertemplate=f"<b>{label}</b><br>%{{x:,}} judgments<br>{what.replace('_', ' ')} "
                                                   f"{fmt}<extra></extra>"), row=1, col=col)
    _layout(fig, "Judging: what each method finds" + (f" (RBP p = {p_eval:g})" if p_eval is not None else ""),
            "judgments", "relevant documents found", height=480)
    fig.update_layout(margin={"t": 90, "b": 110},
                      legend={"y": -0.22, "yanchor": "top", "x": 0.5, "xanchor": "center", "orientation": "h"})
    fig.update_yaxes(title_text="mean residual of the top runs", row=1, col=2)
    fig.update_xaxes(title_text="judgments", row=1, col=2)
    return fig


def selection_ranges(systems: pd.DataFrame) -> Any:
    """RBP base to upper bound of each run at the last checkpoint of a judging simulation."""
    s = systems
    if "judgments" in s.columns:
        s = s[s["judgments"] == s["judgments"].max()]
    if "p_eval" in s.columns:
        s = s[np.isclose(s["p_eval"], s["p_eval"].iloc[0])]
    s = s.set_index("name")
    return rbp_ranges(s["base"], s["upper"] - s["base"], label="RBP")


def _interval_and_reference(names: np.ndarray, mid: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                            ref: np.ndarray, mid_name: str, ref_name: str, mid_hover: str, thickness: int) -> Any:
    """Each run's value with its bar from ``lo`` to ``hi`` (purple) and a reference value (black
    cross), hovering both; ``mid_hover`` describes the purple point (``customdata`` 0 and 1 are
    ``lo`` and ``hi``)."""
    import plotly.graph_objects as go
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=names, y=mid, mode="markers", name=mid_name, marker={"color": COLOURS["spread"], "size": 7},
        error_y={"type": "data", "symmetric": False, "array": hi - mid, "arrayminus": mid - lo,
                 "color": COLOURS["spread"], "thickness": thickness, "width": 0},
        customdata=np.stack([lo, hi, ref], axis=1),
        hovertemplate=f"<b>%{{x}}</b><br>{mid_hover}<br>{ref_name} %{{customdata[2]:.4f}}<extra></extra>"))
    fig.add_trace(go.Scatter(x=names, y=ref, mode="markers", name=ref_name,
                             marker={"color": COLOURS["truth"], "symbol": "x", "size": 6},
                             hovertemplate=f"<b>%{{x}}</b><br>{ref_name} %{{y:.4f}}<extra></extra>"))
    return fig


def tie_ranges(table: pd.DataFrame, measure: str) -> Any:
    """Each run's score when its tied documents are ordered worst first and best first (purple
    bar), averaged over every order (purple dot), and as submitted (black cross)."""
    t = table[table["measure"] == measure].sort_values("original", ascending=False, kind="stable")
    names = t["system"].astype(str).to_numpy(object)
    lo, ex, hi, orig = (t[c].to_numpy(float) for c in ("pessimistic", "expected", "optimistic", "original"))
    fig = _interval_and_reference(
        names, ex, lo, hi, orig, "expected over the orders of the ties (bar: worst to best order)", "as submitted",
        "expected %{y:.4f}<br>worst order %{customdata[0]:.4f}<br>best order %{customdata[1]:.4f}", thickness=3)
    _layout(fig, f"{measure} after banding the scores into ties", "runs, by decreasing score as submitted",
            measure, n_x=len(names))
    fig.update_xaxes(categoryorder="array", categoryarray=list(names))
    return fig


def tie_shares(runs: pd.DataFrame) -> Any:
    """Share of each run's documents that share their score with another document of the topic
    (Yang 2019, Table 3.2 per run)."""
    import plotly.graph_objects as go
    r = runs.sort_values("share_docs_tied", ascending=False, kind="stable")
    names = r["name"].astype(str).to_numpy(object)
    cols = [c for c in ("n_topics_with_ties", "n_topics", "largest_group") if c in r.columns]
    custom = np.stack([r[c].to_numpy(float) for c in cols], axis=1) if cols else None
    extra = "".join(f"<br>{c.replace('_', ' ')} %{{customdata[{i}]:,.0f}}" for i, c in enumerate(cols))
    fig = go.Figure(go.Bar(x=names, y=r["share_docs_tied"].to_numpy(float), name="share of documents tied",
                           marker={"color": COLOURS["spread"]}, customdata=custom,
                           hovertemplate="<b>%{x}</b><br>%{y:.1%} of documents tied" + extra + "<extra></extra>"))
    _layout(fig, "Documents whose score is tied with another's, per run", "runs, most ties first",
            "share of documents tied", n_x=len(names))
    fig.update_yaxes(tickformat=".0%")
    return fig


def corrected_scores(frame: pd.DataFrame, measure: str) -> Any:
    """Each run's score from the noisy judge's labels (black) and corrected for the judge's errors
    with its confidence interval (purple; Goldberg et al. 2017, Eq 14 and Eq 7)."""
    f = frame[frame["measure"] == measure].sort_values("corrected", ascending=False, kind="stable")
    names = f["name"].astype(str).to_numpy(object)
    cor, lo, hi, naive = (f[c].to_numpy(float) for c in ("corrected", "ci_low", "ci_high", "naive"))
    fig = _interval_and_reference(
        names, cor, lo, hi, naive, "corrected (bar: confidence interval)", "from the noisy labels",
        "corrected %{y:.4f}<br>interval %{customdata[0]:.4f} to %{customdata[1]:.4f}", thickness=2)
    _layout(fig, f"{measure} corrected for the judge's errors", "runs, by decreasing corrected score", measure,
            n_x=len(names))
    fig.update_xaxes(categoryorder="array", categoryarray=list(names))
    return fig
