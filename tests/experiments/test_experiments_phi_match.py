"""Tests for pyterrier_noise.experiments.phi_match: matched RBP residuals (Yang 2019 thesis Ch. 4).

Phi matching is checked by a planted RBP reference (tau = 1 at the planted phi) and against scipy's
Kendall tau topic by topic; scores with residuals against the engine's measures and pt.Experiment.
"""
from __future__ import annotations

import argparse
import io
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest

import pyterrier_noise as pn
import scipy.stats as st

from pyterrier_noise import AlignedRuns, MeasureSpec, evaluate
from pyterrier_noise import InputError
from pyterrier_noise.experiments import (DEPTH_GRID, add_residual_columns, match_phi, match_phi_many,
                                       plot_phi_match, scores_with_residuals)
from pyterrier_noise.cli.phi_match import register_cli


pytestmark = pytest.mark.collection(n_topics=12, n_systems=14, n_docs_per_topic=200, depth=60, pool_depth=8, seed=7)


@pytest.fixture(scope="module")
def aligned(coll):
    return AlignedRuns.build(coll.runs, coll.qrels)




# ---------------------------------------------------------------------------------------------
# phi matching

@pytest.mark.parametrize("planted", [0.8, 0.95])
def test_match_phi_recovers_planted_phi(aligned, planted):
    m = match_phi(aligned, measure=MeasureSpec("RBP", p=planted), grid=DEPTH_GRID)
    assert m.phi == planted and m.corr == pytest.approx(1.0)
    others = m.curve[m.curve["phi"] != planted]["tau"]
    assert (others < 1.0).all()                       # the planted phi is the only perfect match
    assert m.depth == pytest.approx(1 / (1 - planted))
    # the same with ir_measures syntax, and with RBO (identical orderings: RBO = 1)
    assert match_phi(aligned, measure=f"RBP(p={planted})", grid=DEPTH_GRID).phi == planted
    r = match_phi(aligned, measure=f"RBP(p={planted})", grid=DEPTH_GRID, correlation="rbo")
    assert r.phi == planted and r.corr == pytest.approx(1.0) and "rbo" in r.curve


def test_match_phi_curve_and_per_topic_against_scipy(coll, aligned):
    grid = [0.5, 0.7, 0.9, 0.95, 0.99]
    m = match_phi(aligned, measure="AP", grid=grid, per_topic=True)
    specs = [MeasureSpec("AP")] + [MeasureSpec("RBP", p=p) for p in grid] + \
        [MeasureSpec("RBP", "residual", p=p) for p in grid]
    out = aligned.evaluate(specs)
    ap = out[specs[0]][:, :, 0]
    rbp = [out[s][:, :, 0] for s in specs[1:6]]
    res = [out[s][:, :, 0] for s in specs[6:]]
    taus = [st.kendalltau(ap.mean(1), r.mean(1)).statistic for r in rbp]
    assert m.curve["tau"].to_numpy() == pytest.approx(taus)
    assert m.curve["mean_residual"].to_numpy() == pytest.approx([r.mean() for r in res])
    first_best = grid[int(np.argmax(taus))]
    assert m.phi == first_best and m.corr == pytest.approx(max(taus))
    # per topic: a loop over topics and phi with scipy (the reference)
    for t, qid in enumerate(aligned.topics):
        ts = np.array([st.kendalltau(ap[:, t], r[:, t]).statistic for r in rbp])
        row = m.per_topic.iloc[t]
        assert row["qid"] == qid
        if np.isnan(ts).all():
            assert np.isnan(row["phi"])
            continue
        k = int(np.nanargmax(ts))
        assert row["phi"] == grid[k] and row["corr"] == pytest.approx(ts[k])
        assert row["mean_residual"] == pytest.approx(res[k][:, t].mean())
    R = coll.qrels.assign(rel=coll.qrels["label"] >= 1).groupby("qid")["rel"].sum()
    assert m.per_topic["R"].tolist() == [int(R[q]) for q in aligned.topics]
    s = m.summary
    ok = m.per_topic.dropna(subset=["phi"])
    assert s["mean_phi"] == pytest.approx(ok["phi"].mean())
    assert s["tau_R_phi"] == pytest.approx(st.kendalltau(ok["R"], ok["phi"]).statistic)
    assert s["below_0.8"] + s["0.8_to_0.9"] + s["at_least_0.9"] + s["n_undefined"] == len(aligned.topics)


def test_match_phi_many_one_alignment_and_reference_frames(coll, aligned):
    ms = match_phi_many(aligned, measures=["AP", "nDCG", "RR"], grid=DEPTH_GRID)
    assert list(ms) == ["AP", "nDCG", "RR"]
    # a reference given as a pt.Experiment(perquery=True)-style frame gives the same match
    pq = evaluate(coll.runs, coll.qrels, ["AP"], perquery=True)
    m = match_phi(aligned, measure=pq[["name", "qid", "measure", "value"]], grid=DEPTH_GRID)
    assert m.measure == "AP" and m.phi == ms["AP"].phi and m.corr == pytest.approx(ms["AP"].corr)
    assert "matched phi" in m.to_text()


def test_match_phi_is_deterministic(coll):
    a = match_phi(coll.runs, coll.qrels, "nDCG", per_topic=True, correlation="rbo")
    b = match_phi(coll.runs, coll.qrels, "nDCG", per_topic=True, correlation="rbo")
    pd.testing.assert_frame_equal(a.curve, b.curve)
    pd.testing.assert_frame_equal(a.per_topic, b.per_topic)
    assert a.phi == b.phi


@pytest.mark.parametrize("grid, message", [
    ([], "grid is empty"),
    ([0.5, 1.0], "index 1"),
    ([0.0, 0.5], "index 0"),
    ([0.5, float("nan")], "strictly between 0 and 1"),
    ([0.9, 0.9], "more than once"),
])
def test_match_phi_bad_grid(aligned, grid, message):
    with pytest.raises(InputError, match=message):
        match_phi(aligned, measure="AP", grid=grid)


def test_match_phi_bad_input(coll, aligned):
    with pytest.raises(InputError, match="correlation"):
        match_phi(aligned, measure="AP", correlation="pearson")
    with pytest.raises(InputError, match="rbo_p"):
        match_phi(aligned, measure="AP", rbo_p=1.0)
    with pytest.raises(InputError, match="at least 2 runs"):
        match_phi({"only": coll.runs["run01"]}, coll.qrels, "AP")
    with pytest.raises(InputError, match="qrels are required"):
        match_phi(coll.runs, None, "AP")
    with pytest.raises(InputError, match="unknown measure"):
        match_phi(aligned, measure="NoSuchMeasure")
    with pytest.raises(InputError, match="one measure"):
        match_phi(aligned, measure=["AP", "nDCG"])
    frame = pd.DataFrame({"name": ["run01"], "qid": ["1"], "value": [0.5]})
    with pytest.raises(InputError, match="no value for name="):
        match_phi(aligned, measure=frame)


def test_several_correlations_from_one_evaluation_equal_one_call_each(aligned):
    """correlation=("kendall", "rbo") gives {correlation: matches}, each equal to its own call."""
    both = match_phi_many(aligned, measures=["AP", "nDCG"], grid=DEPTH_GRID, per_topic=True,
                          correlation=("kendall", "rbo"))
    assert list(both) == ["kendall", "rbo"]
    for c, matches in both.items():
        one = match_phi_many(aligned, measures=["AP", "nDCG"], grid=DEPTH_GRID, per_topic=True, correlation=c)
        assert list(matches) == list(one) == ["AP", "nDCG"]
        for m in one:
            a, b = matches[m], one[m]
            assert (a.correlation, a.phi, a.corr, a.residual, a.summary) == (b.correlation, b.phi, b.corr, b.residual,
                                                                           b.summary)
            pd.testing.assert_frame_equal(a.curve, b.curve, check_exact=True)
            pd.testing.assert_frame_equal(a.per_topic, b.per_topic, check_exact=True)
    assert both["kendall"]["AP"].curve.columns.tolist() != both["rbo"]["AP"].curve.columns.tolist()
    with pytest.raises(InputError, match="correlation"):
        match_phi_many(aligned, measures=["AP"], grid=DEPTH_GRID, correlation=())
    with pytest.raises(InputError, match="correlation"):
        match_phi_many(aligned, measures=["AP"], grid=DEPTH_GRID, correlation=("kendall", "spearman"))


DEPTH_GRID_DEPTHS = (2, 5, 10, 20, 50, 100, 200, 1000)   # the top axis's phi ticks (plot_phi_match)


def test_plot_phi_match_shows_the_curves_and_the_topics(aligned, tmp_path):
    ms = match_phi_many(aligned, measures=["AP", "nDCG"], grid=DEPTH_GRID, per_topic=True)
    fig = plot_phi_match(ms, tmp_path / "phi.png")
    # what it shows: the curve panel (plus its phi axis on top) and one per-topic panel (plus colour bar) per measure
    assert len(fig.axes) == 2 + 2 * 2
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "expected depth 1/(1-phi) of RBP"
    assert ax.get_ylabel() == "Kendall tau_b"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"{m} (phi* {ms[m].phi:g})" for m in ("AP", "nDCG")]
    for m, curve in zip(("AP", "nDCG"), ax.lines[0::2]):     # each curve is the match's tau against 1/(1-phi)
        np.testing.assert_allclose(curve.get_xdata(), 1 / (1 - ms[m].curve["phi"].to_numpy()))
        np.testing.assert_allclose(curve.get_ydata(), ms[m].curve["tau"].to_numpy())
    top = next(a for a in fig.axes if a.get_xlabel() == "phi")
    assert [t.get_text() for t in top.get_xticklabels()] == [f"{1 - 1 / d:g}" for d in DEPTH_GRID_DEPTHS
                                                              if ax.get_xlim()[0] <= d <= ax.get_xlim()[1]]
    panels = [a for a in fig.axes if a.get_xlabel() == "R (relevant judgments of the topic)"]
    assert len(panels) == 2 and all(a.get_ylabel() == "matched phi" for a in panels)
    for a, m in zip(panels, ("AP", "nDCG")):
        assert len(a.collections) == 1 and len(a.collections[0].get_offsets()) == ms[m].per_topic["phi"].notna().sum()
    from matplotlib.image import imread
    assert imread(tmp_path / "phi.png").ndim == 3
    with pytest.raises(InputError, match="does not exist"):
        ms["AP"].plot(tmp_path / "missing" / "phi.png")


# ---------------------------------------------------------------------------------------------
# scores with the matched residual

def test_scores_with_residuals_matches_engine_measures(coll, aligned):
    tab = scores_with_residuals(aligned, measures=["AP", "nDCG"], p=0.98, perquery=True)
    ref = evaluate(coll.runs, coll.qrels, ["AP", "nDCG", "RBPResidual(p=0.98)", "RBP(p=0.98)"], perquery=True)
    ref = ref.pivot_table(index=["name", "qid"], columns="measure", values="value")
    for m in ("AP", "nDCG"):
        sub = tab[tab["measure"] == m].set_index(["name", "qid"])
        r = ref.reindex(sub.index)
        assert sub["value"].to_numpy() == pytest.approx(r[m].to_numpy())
        assert sub["residual"].to_numpy() == pytest.approx(r["RBPResidual(p=0.98)"].to_numpy())
        assert sub["base"].to_numpy() == pytest.approx(r["RBP(p=0.98)"].to_numpy())
    agg = scores_with_residuals(aligned, measures=["AP"], p=0.98)
    per = tab[tab["measure"] == "AP"].groupby("name", sort=False)["residual"].mean()
    assert agg.set_index("name")["residual"].to_numpy() == pytest.approx(per.to_numpy())


def test_scores_with_residuals_uses_matched_phi(aligned):
    tab = scores_with_residuals(aligned, measures=["AP", "RR"], grid=DEPTH_GRID)
    ms = match_phi_many(aligned, measures=["AP", "RR"], grid=DEPTH_GRID)
    assert tab.attrs["phi"] == {"AP": ms["AP"].phi, "RR": ms["RR"].phi}
    for m in ("AP", "RR"):
        assert (tab[tab["measure"] == m]["phi"] == ms[m].phi).all()
    both = scores_with_residuals(aligned, measures=["AP", "RR"], p={"AP": 0.9, "RR": 0.5})
    assert both.attrs["phi"] == {"AP": 0.9, "RR": 0.5}
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        scores_with_residuals(aligned, measures=["AP"], p=1.5)
    with pytest.raises(InputError, match="no persistence for measure"):
        scores_with_residuals(aligned, measures=["AP", "RR"], p={"AP": 0.9})


def test_residual_columns_on_pt_experiment(coll):
    pt = pytest.importorskip("pyterrier")
    from ir_measures import AP, nDCG
    names = list(coll.runs)[:5]
    runs = {n: coll.runs[n] for n in names}
    topics = coll.get_topics()
    m = match_phi(runs, coll.qrels, "AP", grid=DEPTH_GRID)
    exp = pt.Experiment([runs[n] for n in names], topics, coll.qrels, names=names,
                        eval_metrics=[AP, nDCG, m.residual_measure()])
    out = add_residual_columns(exp, runs, coll.qrels, p=m.phi)
    col = f"AP RBPResidual(p={m.phi:g})"
    assert list(out.columns).index(col) == list(out.columns).index("AP") + 1
    # the residual pt.Experiment computed with RBPResidual(p=phi) is the added column
    assert out[col].to_numpy() == pytest.approx(out[str(m.residual_measure())].to_numpy())
    pq = pt.Experiment([runs[n] for n in names], topics, coll.qrels, names=names, eval_metrics=[AP, nDCG],
                       perquery=True)
    out = add_residual_columns(pq, runs, coll.qrels, p=0.9)
    assert len(out) == len(pq) and (out["phi"] == 0.9).all()
    ref = scores_with_residuals(runs, coll.qrels, ["AP"], p=0.9, perquery=True).set_index(["name", "qid"])
    ap = out[out["measure"] == "AP"].set_index(["name", "qid"])
    assert ap["residual"].to_numpy() == pytest.approx(ref.reindex(ap.index)["residual"].to_numpy())
    assert "rbp_residual" not in ap.columns
    with pytest.raises(InputError, match="is not among the runs"):
        add_residual_columns(exp, {n: runs[n] for n in names[:2]}, coll.qrels, p=0.9)


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# command line

def _write(coll, tmp_path):
    root = coll.write_trec(tmp_path / "coll")
    return str(root / "qrels.txt"), str(root / "runs")


def test_cli_phi_match(coll, tmp_path):
    from pyterrier_noise.cli import main
    qrels, runs = _write(coll, tmp_path)
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["phi-match", qrels, runs, "-m", "AP", "-m", "nDCG", "--grid", "depths", "--format", "tsv",
                     "--plot", str(tmp_path / "phi.png")]) == 0
    tsv = pd.read_csv(io.StringIO(buf.getvalue()), sep="\t", dtype={"measure": str})
    ms = match_phi_many(coll.runs, coll.qrels, ["AP", "nDCG"], grid=DEPTH_GRID)
    for m in ("AP", "nDCG"):
        rows = tsv[tsv["measure"] == m]
        assert rows["tau"].to_numpy() == pytest.approx(ms[m].curve["tau"].to_numpy())
        assert rows.loc[rows["matched"] == 1, "phi"].tolist() == [ms[m].phi]
    assert (tmp_path / "phi.png").exists()
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["phi-match", qrels, runs, "-m", "AP", "--per-topic", "--grid", "0.5:0.9:0.1"]) == 0
    text = buf.getvalue()
    assert "matched phi" in text and "per topic" in text and "tau_b(R, phi)" in text


def test_cli_phi_match_errors_and_help(coll, tmp_path, capsys):
    from pyterrier_noise.cli import main
    qrels, runs = _write(coll, tmp_path)
    assert main(["phi-match", qrels, runs, "-m", "AP", "--grid", "0.5,1.2"]) == 2
    assert "strictly between 0 and 1" in capsys.readouterr().err
    assert main(["phi-match", qrels, runs, "-m", "AP", "--grid", "abc"]) == 2
    assert "--grid" in capsys.readouterr().err
    # register_cli on a parser of our own
    parser = argparse.ArgumentParser(prog="x")
    register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["phi-match", qrels, runs, "-m", "AP", "--per-topic", "--format", "tsv"])
    assert args.per_topic and args.measures == ["AP"] and callable(args.handler)
    with pytest.raises(SystemExit):
        parser.parse_args(["phi-match", "--help"])
    assert "examples:" in capsys.readouterr().out



# ---------------------------------------------------------------------------------------------
# the names of before the first release are gone (phi=, path=, the rbp column, the flat module)

def test_keywords_are_p_and_save(aligned, tmp_path):
    new = scores_with_residuals(aligned, measures=["AP"], p=0.9)
    assert "rbp" not in new.columns and set(new["phi"]) == {0.9}
    with pytest.raises(TypeError):
        scores_with_residuals(aligned, measures=["AP"], phi=0.9)
    m = match_phi(aligned, measure="AP", grid=DEPTH_GRID)
    with pytest.raises(TypeError):
        m.plot(path=tmp_path / "old.png")
    fig = m.plot(save=tmp_path / "new.png")
    assert len(fig.axes) == 2 and fig.axes[0].get_ylabel() == "Kendall tau_b"
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [f"AP (phi* {m.phi:g})"]
    from matplotlib.image import imread
    assert imread(tmp_path / "new.png").ndim == 3
    with pytest.raises(AttributeError):
        pn.uncertainty


def test_phi_match_grid_too_large_is_refused_before_reading(tmp_path):
    # issue 30: --grid 0.5:0.99:0.000001 took 4 GiB within seconds
    from cli_helpers import run_cli
    from pyterrier_noise.cli.phi_match import MAX_GRID_POINTS
    missing = tmp_path / "never-read"
    status, _, err = run_cli("phi-match", missing, missing, missing, "-m", "AP", "--grid", "0.5:0.99:0.000001")
    assert status == 2 and f"490,001 points; at most {MAX_GRID_POINTS:,}" in err, err
    status, _, err = run_cli("phi-match", missing, missing, missing, "-m", "AP", "--grid", "0.5:0.9:0")
    assert status == 2 and "the step must be positive" in err, err     # was swallowed by the generic message


def test_check_memory_names_the_estimate():
    from pyterrier_noise._validation import InputError, check_memory   # private: the check under test
    check_memory("x", 1000, "how", available=1000)
    with pytest.raises(InputError, match=r"--grid of 10 points needs about 1\.5 GiB of memory \(how\) and 1\.0 GiB"):
        check_memory("--grid of 10 points", 1.5 * 2 ** 30, "how", available=2 ** 30)
