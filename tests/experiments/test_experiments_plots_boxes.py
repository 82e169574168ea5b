"""The robustness plots' boxes are computed once with numpy and drawn as collections: the
statistics drawn must be matplotlib's own (``cbook.boxplot_stats``, Tukey's 1.5 x IQR rule), box
by box, on small cases with outliers, ties and integer ranks (the reference is matplotlib itself)."""
from __future__ import annotations

import numpy as np
import pytest

from pyterrier_noise.experiments.plots import _box_stats   # private: the box statistics under test


def reference(rows: np.ndarray) -> list[dict]:
    from matplotlib import cbook
    return cbook.boxplot_stats(list(rows))


def cases():
    rng = np.random.default_rng(0)
    skewed = rng.lognormal(0, 1, (7, 40))                       # long right tail: fliers above
    skewed[2, :3] = -5.0                                        # and below, in one row
    ranks = rng.integers(1, 30, (12, 25)).astype(float)         # integer ranks: many ties
    ranks[:, 0] = 1.0
    flat = np.ones((3, 9))                                      # IQR 0: whiskers at the box
    flat[1, 4] = 7.0
    few = rng.normal(0, 1, (5, 2))                              # two samples per box
    return [skewed, ranks, flat, few]


@pytest.mark.parametrize("data", cases())
def test_box_stats_equal_matplotlibs(data):
    ours = _box_stats(data, fliers=True)
    rows, values = ours["fliers"]
    for i, ref in enumerate(reference(data)):
        for key in ("q1", "med", "q3", "whislo", "whishi"):
            assert ours[key][i] == ref[key], (i, key)          # same numpy percentile: equal, not close
        assert sorted(set(values[rows == i])) == sorted(set(ref["fliers"])), i


def test_nan_row_gives_nan_box_like_matplotlib():
    data = np.array([[1.0, 2.0, np.nan, 4.0], [1.0, 2.0, 3.0, 4.0]])
    ours, ref = _box_stats(data), reference(data)
    for key in ("q1", "med", "q3", "whislo", "whishi"):
        assert np.isnan(ours[key][0]) and np.isnan(ref[0][key])
        assert ours[key][1] == ref[1][key]


def drawn(ax):
    """(box corners, whisker/cap segments, median segments) from the Axes' collections."""
    from matplotlib.collections import LineCollection, PolyCollection
    polys = [c for c in ax.collections if isinstance(c, PolyCollection)]
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(polys) == 1 and len(lines) == 2
    return [p.vertices for p in polys[0].get_paths()], lines[0].get_segments(), lines[1].get_segments()


def test_rank_plot_draws_matplotlibs_boxes_and_every_flier():
    from pyterrier_noise.experiments import RobustnessResult
    rng = np.random.default_rng(3)
    true = rng.uniform(0, 0.6, (9, 5))
    values = np.clip(true[:, :, None] + rng.normal(0, 0.08, (9, 5, 30)), 0, 1)
    res = RobustnessResult.from_arrays({"AP": true}, {"AP": values}, [f"r{i}" for i in range(9)],
                                       [f"q{i}" for i in range(5)])
    fig = res.plot_ranks("AP")
    ax = fig.axes[0]
    ranks = res.true_rank_at["AP"]                               # (replicates, observed rank)
    ref = reference(ranks.T)
    boxes, whiskers, medians = drawn(ax)
    S = ranks.shape[1]
    for i, st in enumerate(ref):
        x = i + 1.0
        assert boxes[i][:, 1].min() == st["q1"] and boxes[i][:, 1].max() == st["q3"]
        assert boxes[i][:, 0].min() == pytest.approx(x - 0.3) and boxes[i][:, 0].max() == pytest.approx(x + 0.3)
        assert medians[i][:, 1].tolist() == [st["med"], st["med"]]
        low, high = whiskers[i], whiskers[S + i]                # whiskers: box edge to the extreme datum
        assert sorted(low[:, 1]) == sorted([st["q1"], st["whislo"]]) and set(low[:, 0]) == {x}
        assert sorted(high[:, 1]) == sorted([st["q3"], st["whishi"]])
        assert whiskers[2 * S + i][0, 1] == st["whislo"] and whiskers[3 * S + i][0, 1] == st["whishi"]
    fliers = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(fliers) == 1                                      # one marker line for every box
    xy = {(float(a), float(b)) for a, b in zip(fliers[0].get_xdata(), fliers[0].get_ydata())}
    want = {(i + 1.0, float(v)) for i, st in enumerate(ref) for v in st["fliers"]}
    assert xy == want


def test_distribution_boxes_with_top_summarise_the_rest_as_matplotlib_would():
    from pyterrier_noise.experiments import RobustnessResult
    rng = np.random.default_rng(4)
    true = rng.uniform(0, 0.6, (8, 4))
    values = np.clip(true[:, :, None] + rng.normal(0, 0.05, (8, 4, 20)), 0, 1)
    res = RobustnessResult.from_arrays({"AP": true}, {"AP": values}, [f"r{i}" for i in range(8)],
                                       [f"q{i}" for i in range(4)])
    fig = res.plot_distributions("AP", top=3)
    order = np.argsort(-res.true["AP"].mean(axis=1), kind="stable")
    M = res.means["AP"]
    ref = reference(np.array([M[i] for i in order[:3]]))
    ref += reference(M[order[3:]].ravel()[None, :])
    boxes, whiskers, medians = drawn(fig.axes[0])
    assert len(boxes) == 4
    for i, st in enumerate(ref):
        assert boxes[i][:, 1].min() == st["q1"] and boxes[i][:, 1].max() == st["q3"]
        assert medians[i][0, 1] == st["med"]
        assert whiskers[8 + i][0, 1] == st["whislo"] and whiskers[12 + i][0, 1] == st["whishi"]


def test_report_boxes_carry_each_runs_summary_not_every_replicate():
    """The interactive page gets five numbers per run (quartiles by numpy's linear percentile, and
    the range, which the caption calls the whiskers), whatever the number of replicates."""
    from pyterrier_noise.experiments import RobustnessResult
    from pyterrier_noise.report.interactive import replicate_distributions
    rng = np.random.default_rng(5)
    true = rng.uniform(0, 0.6, (6, 4))
    values = np.clip(true[:, :, None] + rng.normal(0, 0.05, (6, 4, 50)), 0, 1)
    res = RobustnessResult.from_arrays({"AP": true}, {"AP": values}, [f"r{i}" for i in range(6)],
                                       [f"q{i}" for i in range(4)])
    box = replicate_distributions(res, "AP").data[0]
    order = np.argsort(-res.true["AP"].mean(axis=1), kind="stable")
    M = res.means["AP"][order]
    assert list(box.x) == [f"r{i}" for i in order] and box.y is None     # no replicate values sent
    for i in range(6):                                                   # brute force, run by run
        assert box.q1[i] == np.percentile(M[i], 25) and box.median[i] == np.median(M[i])
        assert box.q3[i] == np.percentile(M[i], 75)
        assert box.lowerfence[i] == M[i].min() and box.upperfence[i] == M[i].max()
