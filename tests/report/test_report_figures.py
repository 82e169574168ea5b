"""The static figures stay legible at 143 runs (TREC-COVID round 1's count): no two tick labels
overlap, no label is cut by the figure's edge, every run is named (or the names are thinned, never
piled up), rank ticks are whole numbers, ``top=k`` summarises the rest, and colour is explained by a
legend.  Checked on what matplotlib's renderer lays out (``get_window_extent``), not on file sizes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

N_RUNS = 143


def run_names(n: int = N_RUNS, seed: int = 0) -> list[str]:
    """Names as long and as varied as TREC-COVID's (from 'run1' to 'NTU_NMLAB_BM25_ALLQQ')."""
    rng = np.random.default_rng(seed)
    stems = ["run", "BM25", "UIowaS_Run", "NTU_NMLAB_BM25_", "sab20.1.meta.docs", "ir_covid19_cle_", "udel_fang_"]
    return [f"{stems[i % len(stems)]}{rng.integers(1, 999)}_{i}" for i in range(n)]


def tick_boxes(fig, ax):
    """Window extents of the visible x tick labels after a draw."""
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    return [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


def assert_legible(fig, ax, n_expected: int | None = None):
    boxes = tick_boxes(fig, ax)
    if n_expected is not None:
        assert len(boxes) == n_expected
    for a, b in zip(boxes, boxes[1:]):          # neighbours along the axis must not overlap
        assert a.x1 <= b.x0 + 0.5, (a, b)
    W, H = fig.bbox.width, fig.bbox.height
    for bb in boxes:                            # and no name is cut by the figure's edge
        assert bb.x0 >= 0 and bb.x1 <= W and bb.y0 >= 0 and bb.y1 <= H, bb
    label = ax.xaxis.label.get_window_extent(fig.canvas.get_renderer())
    assert label.y0 >= 0 and label.x0 >= 0 and label.x1 <= W


@pytest.fixture(scope="module")
def scores():
    names = run_names()
    rng = np.random.default_rng(1)
    base = pd.Series(rng.uniform(0, 0.75, N_RUNS), index=names)
    resid = pd.Series(rng.uniform(0, 0.25, N_RUNS), index=names)
    return base, resid


@pytest.fixture(scope="module")
def robustness():
    from pyterrier_noise.experiments import RobustnessResult
    names = run_names()
    rng = np.random.default_rng(2)
    true = rng.uniform(0, 0.6, (N_RUNS, 6))
    values = np.clip(true[:, :, None] + rng.normal(0, 0.05, (N_RUNS, 6, 4)), 0, 1)
    return RobustnessResult.from_arrays({"AP": true}, {"AP": values}, names, [f"q{i}" for i in range(6)])


def test_rbp_ranges_at_143_runs_names_every_run_without_overlap(scores):
    from pyterrier_noise.report import plot_rbp_ranges
    base, resid = scores
    out = list(base.index[::3])
    fig = plot_rbp_ranges(base, resid, highlight=out)
    ax = fig.axes[0]
    assert_legible(fig, ax, n_expected=N_RUNS)   # 143 names fit at 20 inches: none is thinned
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert shown == list(base.sort_values(ascending=False, kind="stable").index)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("outside the pool" in t for t in legend) and any("pooled" in t for t in legend)


def test_top_k_summarises_the_rest(scores):
    from pyterrier_noise.report import plot_rbp_ranges
    base, resid = scores
    fig = plot_rbp_ranges(base, resid, top=20)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == 21 and labels[-1] == f"other {N_RUNS - 20} runs"
    assert labels[:20] == list(base.sort_values(ascending=False).index[:20])
    assert fig.get_figwidth() < 6.5                   # sized for 21 bars, not for 143
    assert_legible(fig, ax)
    rest = base.sort_values(ascending=False).index[20:]
    grey = [c for c in ax.collections if "other" in str(c.get_label())][0]
    (lo, hi), = [seg[:, 1] for seg in grey.get_segments()]
    assert lo == pytest.approx(base[rest].min()) and hi == pytest.approx((base + resid)[rest].max())


def test_distributions_at_143_runs(robustness):
    fig = robustness.plot_distributions("AP")
    ax = fig.axes[0]
    assert_legible(fig, ax)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    order = np.argsort(-robustness.true["AP"].mean(axis=1), kind="stable")
    assert labels[0] == robustness.names[order[0]] and len(labels) >= N_RUNS // 2
    assert ax.get_ylabel() == "mean AP" and ax.get_legend() is not None
    fig = robustness.plot_distributions("AP", top=10)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[-1] == f"other {N_RUNS - 10} runs" and len(labels) == 11


def test_rank_plot_has_integer_ticks_and_a_legend(robustness):
    fig = robustness.plot_ranks("AP", top=12)
    ax = fig.axes[0]
    fig.canvas.draw()
    for ticks in (ax.get_xticks(), ax.get_yticks()):
        assert np.all(ticks == np.round(ticks)), ticks      # no rank 1.5 or 2.5
    assert ax.get_xlim()[1] < 13 and "first 12 of 143 ranks" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()][0] == "true rank = observed rank"


def test_selection_ranges_label_runs_by_name_and_keep_the_axis_label(scores):
    from pyterrier_noise.selection import plot_ranges
    base, resid = scores
    bounds = pd.DataFrame({"name": base.index, "base": base.to_numpy(), "upper": (base + resid).to_numpy()})
    fig = plot_ranges(bounds, order_by=base)
    ax = fig.axes[0]
    assert_legible(fig, ax)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == base.idxmax() and set(labels) <= set(base.index)
    assert ax.get_xlabel() == "runs, by decreasing reference score"


def test_selection_curves_have_titles_and_one_legend_naming_the_methods():
    from pyterrier_noise._plot import METHOD_COLOURS   # private: the colour table the legend must follow
    from pyterrier_noise.selection import plot_curves
    s = pd.DataFrame({"method": ["pool", "pool", "C", "C"], "judgments": [100, 200, 100, 200],
                      "relevant": [10, 20, 15, 30], "top_residual": [0.5, 0.3, 0.4, 0.2]})
    fig = plot_curves(s)
    assert [ax.get_title() for ax in fig.axes] == ["Relevant documents found", "Uncertainty left in the top runs"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["pool", "Method C"]
    colours = [line.get_color() for line in fig.axes[0].get_lines()]
    assert colours == [METHOD_COLOURS["pool"], METHOD_COLOURS["C"]]      # one colour per method, everywhere
    fig.canvas.draw()
    assert all(t == int(t) for t in fig.axes[0].get_xticks())


def test_too_many_runs_for_the_width_thin_the_labels_instead_of_piling_them():
    from pyterrier_noise.report import plot_rbp_ranges
    names = run_names(400, seed=3)
    base = pd.Series(np.linspace(0.8, 0.1, 400), index=names)
    fig = plot_rbp_ranges(base, base * 0 + 0.1)
    ax = fig.axes[0]
    boxes = tick_boxes(fig, ax)
    assert 400 / 4 <= len(boxes) < 400                      # every k-th name, k small
    assert_legible(fig, ax)


def test_top_must_be_a_positive_integer(scores):
    from pyterrier_noise import InputError
    from pyterrier_noise.report import plot_rbp_ranges
    with pytest.raises(InputError, match="top must be a positive integer"):
        plot_rbp_ranges(*scores, top=0)


def test_drawing_on_a_given_axes_returns_its_figure_with_the_title_on_the_axes():
    from pyterrier_noise._plot import figure   # private: a figure as the package makes them
    from pyterrier_noise.report import plot_rbp_ranges
    fig = figure(4, 3)
    ax = fig.add_subplot()
    assert plot_rbp_ranges(pd.Series({"a": 0.5}), pd.Series({"a": 0.1}), ax=ax, title="t") is fig
    assert ax.get_title(loc="left") == "t" and ax.get_ylim() == (0, 1) and fig.get_suptitle() == ""
