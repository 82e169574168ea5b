"""The organiser's live estimates in ``serve``: cheap labels loaded (and kept across a restart), PPI++
estimates equal to calling :func:`cheap_experiment` directly, and sentences for too few judgments
and for malformed files."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise import InputError
from pyterrier_noise.correction import CorrectionWarning, cheap_experiment, plan_gold_sample
from pyterrier_noise.io import write_trec_run
from pyterrier_noise.selection import QrelsOracle
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.web import ServeConfig, create_app, open_server
from pyterrier_noise.web.estimates import LIVE_MEASURES, LIVE_METHODS, MIN_SRS

from web_helpers import TestClient, User, accounts, on_server, server, small_collection

MEASURES = list(LIVE_MEASURES)


def _loop(tmp, design="stratified", n=90):
    """Runs on disk, noisy cheap labels of the pool to depth 15, a planned gold sample (design.tsv,
    plan.run as a run frame) and the true qrels."""
    coll = make_collection(n_topics=8, n_systems=5, n_docs_per_topic=40, depth=15, pool_depth=5, seed=11)
    small_collection(tmp)            # docs.tsv / topics.trec for the pages (texts do not matter here)
    rdir = tmp / "runs"
    rdir.mkdir()
    for name, frame in coll.runs.items():
        write_trec_run(frame.assign(rank=frame["rank"] + 1), rdir / f"{name}.run", name)
    pool = pd.concat([f[["qid", "docno"]] for f in coll.runs.values()]).drop_duplicates()
    truth = pool.merge(coll.true_qrels, on=["qid", "docno"], how="left").fillna({"label": 0})
    rng = np.random.default_rng(5)
    flip = rng.random(len(truth)) < 0.2
    cheap = truth.assign(label=np.where(flip, 1 - (truth["label"] > 0), truth["label"] > 0).astype(int),
                         probability=np.clip(rng.normal(0.5, 0.2, len(truth)), 0.01, 0.99))
    cheap.to_csv(tmp / "cheap.tsv", sep="\t", index=False)
    frame = plan_gold_sample(str(rdir), tmp / "cheap.tsv", MEASURES, n, design=design, seed=2)
    frame.to_csv(tmp / "design.tsv", sep="\t", index=False)
    planned = frame[frame["planned"] == 1].sample(frac=1, random_state=4).reset_index(drop=True)   # as plan.run
    plan = pd.DataFrame({"qid": planned["qid"], "docno": planned["docno"],
                         "score": np.arange(len(planned), 0, -1, dtype=float),
                         "rank": planned.groupby("qid").cumcount().to_numpy()})
    gold_truth = truth.assign(label=(truth["label"] > 0).astype(int))
    return rdir, plan, gold_truth


def _config(tmp, plan, **kw):
    return ServeConfig(session=tmp / "gold.sqlite", runs=None if plan is None else {"plan": plan}, settings={"method": "pool", "batch_size": 1},
                       docs=tmp / "docs.tsv", topics=tmp / "topics.trec", hosts=("testserver",), labels="0,1", **kw)


def _judge(user, oracle, k):
    for _ in range(k):
        t = user.task()
        if t["state"] != "judge":
            return
        r = user.judge(t, int(oracle.judge(t["qid"], t["docno"])))
        assert r.status_code == 303, r.text


def _direct(rdir, tmp, gold, sample):
    return cheap_experiment(str(rdir), tmp / "cheap.tsv", gold, MEASURES, methods=LIVE_METHODS,
                            sample=sample).systems


@pytest.mark.slow   # restarts a server
def test_the_page_shows_the_estimates_of_cheap_experiment_and_keeps_them_over_a_restart(tmp_path):
    rdir, plan, truth = _loop(tmp_path)
    toks = accounts(tmp_path / "gold.sqlite", "alice")
    oracle = QrelsOracle(truth)
    app = create_app(_config(tmp_path, plan, cheap_labels=tmp_path / "cheap.tsv", score_runs=[rdir],
                             sample=tmp_path / "design.tsv"))
    design = pd.read_csv(tmp_path / "design.tsv", sep="\t", dtype={"qid": str, "docno": str})
    with TestClient(app) as client:
        lead, alice = User(client, toks["lead"]), User(client, toks["alice"])
        page = lead.get("/organiser").text
        assert "Loaded: " in page and "cheap.tsv" in page and "/organiser/estimates" in page
        first = lead.get("/api/estimates").json()            # nothing judged: too few, and how many more
        assert first["systems"] is None and first["n_gold"] == 0
        strata = design.loc[design["planned"] == 1, "stratum"].value_counts()
        need = int(np.minimum(strata, 2).sum())
        assert f"{need} more needed" in first["message"] and first["message"].startswith("too few")
        html = lead.get("/organiser/estimates").text
        assert 'id="estimates-message"' in html and "too few gold judgments" in html
        planned = design[design["planned"] == 1]
        while True:                      # one judgment at a time until every stratum has 2 judged pairs
            _judge(alice, oracle, 1)
            gold = on_server(client, server(app).dispatcher.qrels)[["qid", "docno", "label"]]
            got = lead.get("/api/estimates").json()
            judged = planned.merge(gold, on=["qid", "docno"], how="left")["label"].notna()
            per = judged.groupby(planned["stratum"].to_numpy()).sum()
            need = int((np.minimum(planned["stratum"].value_counts().sort_index(), 2) - per).clip(lower=0).sum())
            if need:
                assert f", {need} more needed;" in got["message"], (need, got["message"])
                continue
            break
        assert got["message"] is None and got["n_gold"] == len(gold) < len(plan)    # 86 of 90 (seeded)
        assert any("have no gold label" in n for n in got["notes"])     # the rest: each stratum taken as an SRS
        with pytest.warns(CorrectionWarning, match="planned pair\\(s\\) have no gold label"):   # as the page's note
            want = _direct(rdir, tmp_path, gold, design)
        frame = pd.DataFrame(got["systems"])
        assert len(frame) == len(want) == 2 * 5
        for c in [c for c in want.columns if c not in ("name", "method")]:
            np.testing.assert_allclose(frame[c].to_numpy(float), want[c].to_numpy(float), rtol=0, atol=1e-12)
        assert frame["name"].tolist() == want["name"].tolist() and frame["method"].tolist() == want["method"].tolist()
        html = lead.get("/organiser/estimates").text
        best = want[want["method"] == "ppi++"].sort_values("P@10", ascending=False).iloc[0]
        row = re.search(r'data-measure="P@10">.*?<tbody><tr><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td>',
                        html, re.S)
        assert row.group(1) == best["name"] and row.group(2) == f"{best['P@10']:.4f}"
        assert row.group(3) == f"{best['P@10 lo']:.4f} .. {best['P@10 hi']:.4f}"
        again = lead.get("/api/estimates").json()          # cached by the judgments' state: the same answer
        assert again == got and app.app.state.estimates["key"][0] == len(gold)
    # a restart without the options keeps the labels, runs and design
    app = create_app(_config(tmp_path, None))
    with TestClient(app) as client:
        lead = User(client, toks["lead"])
        assert server(app).cheap is not None and "Loaded: " in lead.get("/organiser").text
        got2 = pd.DataFrame(lead.get("/api/estimates").json()["systems"])
        for c in [c for c in want.columns if c not in ("name", "method")]:
            np.testing.assert_allclose(got2[c].to_numpy(float), want[c].to_numpy(float), rtol=0, atol=1e-12)


def test_without_a_design_the_judged_pairs_are_a_simple_random_sample(tmp_path):
    rdir, plan, truth = _loop(tmp_path, design="uniform", n=40)
    toks = accounts(tmp_path / "gold.sqlite", "alice")
    app = create_app(_config(tmp_path, plan, cheap_labels=tmp_path / "cheap.tsv", score_runs=[str(rdir)]))
    with TestClient(app) as client:
        lead, alice = User(client, toks["lead"]), User(client, toks["alice"])
        _judge(alice, QrelsOracle(truth), MIN_SRS - 1)
        msg = lead.get("/api/estimates").json()["message"]
        assert msg == (f"too few gold judgments to estimate: {MIN_SRS - 1} of the judged pairs have a cheap label; "
                       f"a simple random sample needs at least {MIN_SRS} (a post-stratum's minimum), 1 more")
        _judge(alice, QrelsOracle(truth), 40)
        gold = on_server(client, server(app).dispatcher.qrels)[["qid", "docno", "label"]]
        got = lead.get("/api/estimates").json()
        assert got["design"] == "post-stratified" and len(gold) == 40
        want = _direct(rdir, tmp_path, gold, None)
        frame = pd.DataFrame(got["systems"])
        for c in [c for c in want.columns if c not in ("name", "method")]:
            np.testing.assert_allclose(frame[c].to_numpy(float), want[c].to_numpy(float), rtol=0, atol=1e-12)


def test_a_malformed_cheap_labels_file_is_refused_with_its_line(tmp_path):
    rdir, plan, _ = _loop(tmp_path)
    bad = tmp_path / "bad.tsv"
    lines = (tmp_path / "cheap.tsv").read_text().splitlines()
    lines[3] = "\t".join(lines[3].split("\t")[:2] + ["relevant", "0.5"])
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bad\.tsv.*(line|row) \d+: column 'label' must be a number, got 'relevant'"):
        open_server(_config(tmp_path, plan, cheap_labels=bad, score_runs=[rdir]))
    with pytest.raises(InputError, match="--score-runs"):
        open_server(_config(tmp_path, plan, cheap_labels=tmp_path / "cheap.tsv"))
    short = tmp_path / "short.tsv"
    pd.read_csv(tmp_path / "design.tsv", sep="\t").iloc[:-3].to_csv(short, sep="\t", index=False)
    with pytest.raises(InputError, match=r"short\.tsv: expected each of the \d+ cheap-judged pairs exactly once"):
        open_server(_config(tmp_path, plan, cheap_labels=tmp_path / "cheap.tsv", score_runs=[rdir], sample=short))
    with pytest.raises(InputError, match="go with --cheap-labels"):
        open_server(_config(tmp_path, plan, sample=tmp_path / "design.tsv"))
    # nothing was stored: a start without the options has no cheap labels
    st = open_server(_config(tmp_path, plan))
    try:
        assert st.cheap is None
    finally:
        st.close()


def test_the_page_without_cheap_labels_says_how_to_load_them(tmp_path):
    _, plan, _ = _loop(tmp_path)
    toks = accounts(tmp_path / "gold.sqlite")
    app = create_app(_config(tmp_path, plan))
    with TestClient(app) as client:
        lead = User(client, toks["lead"])
        assert "No cheap labels loaded" in lead.get("/organiser").text
        got = lead.get("/api/estimates").json()
        assert got["systems"] is None and "--cheap-labels FILE --score-runs RUN" in got["message"]


def test_serve_refuses_a_malformed_cheap_labels_file_before_it_listens(tmp_path):
    from cli_helpers import run_cli
    rdir, plan, _ = _loop(tmp_path)
    write_trec_run(plan.assign(rank=plan["rank"] + 1), tmp_path / "plan.run", "plan")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "1", "docid": "d1-00", "grade": 2}\n{"qid": "1", "docid": "d1-01", "grade": \n')
    code, out, err = run_cli("serve", "--session", tmp_path / "gold.sqlite", "--method", "pool", tmp_path / "plan.run",
                             "--cheap-labels", bad, "--score-runs", rdir, "--port", "1")
    assert code != 0 and out == ""
    assert f"{bad}, line 2: not valid JSON" in err
    assert not (tmp_path / "gold.sqlite").exists()          # refused before the session was created


def test_a_method_c_session_is_not_taken_for_a_random_sample(tmp_path):
    """Method C judges the top ranks first: analysed as a simple random sample, the judged pairs fail
    calibrate's check, and the page says so instead of showing numbers as if they were valid."""
    rdir, _, truth = _loop(tmp_path)
    toks = accounts(tmp_path / "gold.sqlite", "alice")
    runs = {p.stem: p for p in sorted(rdir.iterdir())}
    app = create_app(ServeConfig(session=tmp_path / "gold.sqlite", runs=runs, settings={"method": "C"},
                                 docs=tmp_path / "docs.tsv", topics=tmp_path / "topics.trec", hosts=("testserver",),
                                 labels="0,1", cheap_labels=tmp_path / "cheap.tsv", score_runs=[rdir]))
    with TestClient(app) as client:
        lead, alice = User(client, toks["lead"]), User(client, toks["alice"])
        _judge(alice, QrelsOracle(truth), 60)
        got = lead.get("/api/estimates").json()
        assert got["systems"] is None and got["message"].startswith("cannot estimate: the 60 gold pairs do not look "
                                                                    "like a simple random sample")
        assert "concentrated in some ranks" in got["message"] and "design.tsv" in got["message"]
