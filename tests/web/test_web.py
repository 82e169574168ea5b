"""The judging server (pyterrier_noise.web) through Starlette's TestClient: logins and tokens,
cross-site request forgery, leases, refusals (each: its status and nothing written), undo, double
judging with Krippendorff's alpha, recovery after a crash between the two commits, one server per
session, and the same judgments as one assessor at a terminal."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("starlette", reason="the 'web' extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pyterrier_noise.selection import JudgingSession, QrelsOracle  # noqa: E402
from pyterrier_noise.web import (Collection, ServeConfig, WebError, WebStore, companion_path,  # noqa: E402
                                 highlight, open_collection, open_server)
from pyterrier_noise.web import leases as leases_module  # noqa: E402

from web_helpers import User, accounts, make_app, on_server, server, small_collection, snap  # noqa: E402


@pytest.fixture()
def setup(tmp_path):
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice", "bob", "carol")
    return tmp_path, coll, toks


def oracle_label(coll, t):
    q = coll.true_qrels
    hit = q[(q["qid"] == t["qid"]) & (q["docno"] == t["docno"])]
    return int(hit["label"].iloc[0]) if len(hit) else 0


# ---------------------------------------------------------------------------------------------
# no way in without a token; the organiser's pages refuse assessors; forged posts

def test_nothing_answers_without_a_login(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        before = snap(c, app)
        for url in ("/assess", "/organiser", "/organiser/qrels", "/organiser/log"):
            r = c.get(url, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == "/login", url
        for url in ("/api/next", "/api/status"):
            assert c.get(url).status_code == 401, url
        for url in ("/assess/judge", "/assess/undo", "/organiser/accounts", "/organiser/revoke", "/api/judge"):
            assert c.post(url, data={"label": "1", "name": "mallory"}).status_code == 401, url
        assert c.post("/api/login", headers={"authorization": "Bearer pn_000000000000_" + "x" * 43}).status_code == 401
        assert snap(c, app) == before


def test_a_wrong_or_revoked_token_does_not_log_in(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        r = c.get("/login")
        import re
        pre = re.search(r'name="pre" value="([^"]+)"', r.text).group(1)
        wrong = toks["alice"][:-3] + ("aaa" if not toks["alice"].endswith("aaa") else "bbb")
        r = c.post("/login", data={"pre": pre, "token": wrong})
        assert r.status_code == 401 and "not valid" in r.text
        pre = re.search(r'name="pre" value="([^"]+)"', r.text).group(1)
        assert c.post("/login", data={"pre": pre, "token": "not a token"}).status_code == 401
        # the login form itself is protected: a post without the form's value (a cross-site post) is refused
        c.cookies.clear()
        assert c.post("/login", data={"token": toks["alice"]}).status_code == 403
        alice = User(c, toks["alice"])
        assert alice.get("/assess").status_code == 200
        lead = User(c, toks["lead"])
        assert lead.post("/organiser/revoke", {"name": "alice"}, follow_redirects=False).status_code == 303
        # the revoked token no longer logs in, and the open login is gone too
        assert alice.get("/api/next").status_code == 401
        assert c.post("/api/login", headers={"authorization": f"Bearer {toks['alice']}"}).status_code == 401


def test_tokens_are_stored_hashed(setup):
    tmp, coll, toks = setup
    data = b"".join(p.read_bytes() for p in tmp.iterdir() if p.name.startswith("judging.serve.sqlite"))
    for name, tok in toks.items():
        secret = tok.split("_", 2)[2]
        assert secret.encode() not in data and tok.encode() not in data, name
    assert b"alice" in data   # the file is the right one


def test_an_assessor_token_does_not_open_the_organiser_pages(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        before = snap(c, app)
        for url in ("/organiser", "/organiser/qrels", "/organiser/log", "/api/status"):
            assert alice.get(url).status_code == 403, url
        assert alice.post("/organiser/accounts", {"name": "mallory", "role": "organiser"}).status_code == 403
        assert alice.post("/organiser/revoke", {"name": "bob"}).status_code == 403
        assert snap(c, app) == before
        lead = User(c, toks["lead"])
        assert lead.get("/assess").status_code == 403          # and the organiser does not judge
        assert lead.get("/organiser").status_code == 200


def test_forged_posts_are_refused_and_write_nothing(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        alice, bob, lead = User(c, toks["alice"]), User(c, toks["bob"]), User(c, toks["lead"])
        t = alice.task()
        before = snap(c, app)
        form = {"nonce": t["nonce"], "qid": t["qid"], "docno": t["docno"], "label": "1"}
        assert alice.post("/assess/judge", form, csrf=False).status_code == 403             # no CSRF token
        assert alice.post("/assess/judge", {**form, "csrf": "x" * 43}).status_code == 403    # a wrong one
        assert alice.post("/assess/judge", {**form, "csrf": bob.csrf}).status_code == 403    # another login's
        assert alice.post("/assess/undo", {"judgment": "1"}, csrf=False).status_code == 403
        assert lead.post("/organiser/accounts", {"name": "mallory"}, csrf=False).status_code == 403
        assert snap(c, app) == before


# ---------------------------------------------------------------------------------------------
# judgments: validation, leases, replays

def test_refused_judgments_write_nothing(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        alice, bob = User(c, toks["alice"]), User(c, toks["bob"])
        t, u = alice.task(), bob.task()
        assert (t["qid"], t["docno"]) != (u["qid"], u["docno"])        # two documents, one each
        srv = server(app)
        before = snap(c, app)
        cases = [
            (alice.judge(t, "2"), 422),                                  # not on the scale 0, 1
            (alice.judge(t, "relevant"), 422),
            (alice.judge(t, "nan"), 422),
            (alice.judge(u, "1"), 403),                                  # bob's lease
            (alice.judge({**t, "nonce": "made-up"}, "1"), 409),          # no such lease
            (alice.judge(t, "1", docno="../../etc/passwd"), 400),        # not the lease's document
            (alice.judge(t, "1", docno=u["docno"], qid=u["qid"]), 400),
        ]
        for r, status in cases:
            assert r.status_code == status, r.text
            assert "nothing was recorded" in r.text
        assert snap(c, app) == before
        ok = alice.judge(t, "1")
        assert ok.status_code == 303
        after = snap(c, app)
        assert alice.judge(t, "1").status_code == 409                     # the same post again: a replay
        assert alice.judge(t, "0").status_code == 409
        assert snap(c, app) == after
        assert on_server(c, lambda: srv.session.history["label"].tolist()) == [1.0]


def test_each_judgment_is_committed_before_the_next_document(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=1)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        path = tmp / "judging.sqlite"
        for i in range(3):
            t = alice.task()
            assert alice.judge(t, "1").status_code == 303
            # what another reader sees of the files now: the session holds the judgment (its -wal file is
            # readable only by the holder, so the server's own file stands witness) ...
            import sqlite3
            conn = sqlite3.connect(str(companion_path(path)))
            n = conn.execute("SELECT count(*) FROM judgments").fetchone()[0]
            conn.close()
            assert n == i + 1
            assert on_server(c, lambda: server(app).session.n_judged) == i + 1


def test_a_lease_keeps_a_document_from_the_others_until_it_expires(setup, monkeypatch):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=2, lease_seconds=60)
    with TestClient(app) as c:
        alice, bob, carol = (User(c, toks[n]) for n in ("alice", "bob", "carol"))
        t, u = alice.task(), bob.task()
        w = carol.task()
        assert w["state"] == "wait"                                # the round's two documents are taken
        assert alice.task()["nonce"] == t["nonce"]                 # asking again: the same lease
        assert alice.judge(t, "1").status_code == 303
        assert alice.task()["state"] == "wait"                     # the next round waits for bob's document
        real = time.time
        monkeypatch.setattr(leases_module.time, "time", lambda: real() + 120)   # bob's lease has expired
        v = carol.task()
        assert (v["qid"], v["docno"]) == (u["qid"], u["docno"]) and v["nonce"] != u["nonce"]
        srv = server(app)
        before = snap(c, app)
        assert bob.judge(u, "1").status_code == 409                # too late: the lease passed to carol
        assert snap(c, app) == before
        assert carol.judge(v, "0").status_code == 303
        assert on_server(c, lambda: srv.session.judged_qrels()["docno"].tolist()) == [t["docno"], u["docno"]]


def test_per_topic_assignment(setup):
    tmp, coll, toks = setup
    store = WebStore(tmp / "judging.sqlite")
    dave = store.add_account("dave", topics=["2"])
    store.close()
    app = make_app(tmp, coll, batch_size=4)
    with TestClient(app) as c:
        d = User(c, dave)
        seen = []
        for _ in range(6):
            t = d.task()
            if t["state"] != "judge":
                assert "not assigned to you" in t["reason"]
                break
            seen.append(t["qid"])
            assert d.judge(t, "0").status_code == 303
        assert seen and set(seen) == {"2"}


def test_the_same_judgments_as_one_assessor_at_a_terminal(setup):
    """Three assessors in a seeded random interleaving, the synthetic collection's true labels as
    judge: the judged documents (as a set) equal those of one uninterrupted session of the same
    settings judged by session.run (Moffat et al. 2007 Method C, batches of 3)."""
    tmp, coll, toks = setup
    budget = 30
    app = make_app(tmp, coll, batch_size=3, budget=budget, labels="0,1,2")
    rng = np.random.default_rng(0)
    with TestClient(app) as c:
        users = [User(c, toks[n]) for n in ("alice", "bob", "carol")]
        held: dict[int, dict] = {}
        for _ in range(2000):
            i = int(rng.integers(3))
            t = held.get(i) or users[i].task()
            if t["state"] == "done" and all(users[k].task()["state"] == "done" for k in range(3)):
                break
            if t["state"] != "judge":
                continue
            if rng.random() < 0.5:        # judge now, or hold it a while
                assert users[i].judge(t, oracle_label(coll, t)).status_code == 303
                held.pop(i, None)
            else:
                held[i] = t
        srv = server(app)
        got = on_server(c, srv.dispatcher.qrels)
        assert on_server(c, lambda: srv.session.n_judged) == budget
    with JudgingSession(tmp / "once.sqlite", runs=coll.runs, batch_size=3) as once:
        once.run(QrelsOracle(coll.true_qrels), budget=budget)
        want = once.judged_qrels()
    key = lambda q: set(zip(q["qid"], q["docno"], q["label"].astype(float)))  # noqa: E731
    assert key(got) == key(want) and len(got) == budget


# ---------------------------------------------------------------------------------------------
# undo, double judging, export

def test_undo_then_judge_again(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=1)
    with TestClient(app) as c:
        alice, bob = User(c, toks["alice"]), User(c, toks["bob"])
        done = []
        for label in (1, 0, 1):
            t = alice.task()
            assert alice.judge(t, label).status_code == 303
            done.append((t["qid"], t["docno"], float(label)))
        srv = server(app)
        last = on_server(c, srv.dispatcher.last_judgment, "alice")
        before = snap(c, app)
        assert alice.post("/assess/undo", {"judgment": last["id"] - 1}).status_code == 409     # not the last one
        assert bob.post("/assess/undo", {"judgment": last["id"]}).status_code == 409             # not bob's
        assert alice.post("/assess/undo", {"judgment": "x"}).status_code == 400
        assert snap(c, app) == before
        assert alice.post("/assess/undo", {"judgment": last["id"]}, follow_redirects=False).status_code == 303
        assert alice.post("/assess/undo", {"judgment": last["id"]}).status_code == 409           # replayed undo
        t = alice.task()
        assert t["redo"] and (t["qid"], t["docno"]) == done[-1][:2]
        page = alice.get("/assess").text
        assert "You undid your judgment" in page and 'id="undo"' not in page
        assert alice.judge(t, 0).status_code == 303
        done[-1] = (*done[-1][:2], 0.0)
        lead = User(c, toks["lead"])
        text = lead.get("/organiser/qrels").text
        assert text.splitlines() == [f"{q} 0 {d} {int(v)}" for q, d, v in done]
        log = pd.read_csv(__import__("io").StringIO(lead.get("/organiser/log").text), sep="\t", dtype=str)
        assert log["label"].astype(float).tolist() == [1.0, 0.0, 1.0, 0.0]
        assert log["retracted"].notna().tolist() == [False, False, True, False]
        assert float(log["replaces"].tolist()[-1]) == last["id"]
        # the session recorded the first label once (the selector used it); the export carries the new one
        assert on_server(c, lambda: srv.session.judged_qrels()["label"].tolist()) == [1.0, 0.0, 1.0]


def _alpha_by_hand(pairs: list[tuple[float, float]]) -> float:
    """Krippendorff's alpha, nominal, two coders, no missing values (Krippendorff 2011, Sec. A):
    coincidences o_ck count both orders of each pair; alpha = 1 - (n - 1) * sum_{c!=k} o_ck / sum_{c!=k} n_c n_k."""
    vals = sorted({v for p in pairs for v in p})
    o = np.zeros((len(vals), len(vals)))
    for a, b in pairs:
        o[vals.index(a), vals.index(b)] += 1
        o[vals.index(b), vals.index(a)] += 1
    n_c = o.sum(axis=1)
    n = n_c.sum()
    off = ~np.eye(len(vals), dtype=bool)
    return 1.0 - (n - 1) * o[off].sum() / np.outer(n_c, n_c)[off].sum()


def test_double_judging_and_alpha_per_topic(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=2, double=1.0, budget=12)
    rng = np.random.default_rng(5)
    with TestClient(app) as c:
        users = {n: User(c, toks[n]) for n in ("alice", "bob")}
        seen: dict[tuple[str, str], list[str]] = {}
        for _ in range(200):
            idle = 0
            for name, u in users.items():
                t = u.task()
                if t["state"] != "judge":
                    idle += 1
                    continue
                seen.setdefault((t["qid"], t["docno"]), []).append(name)
                assert u.judge(t, int(rng.integers(2))).status_code == 303
            if idle == len(users):
                break
        srv = server(app)
        pairs = on_server(c, srv.dispatcher.pairs)
        assert len(pairs) == 12                                     # every judged document, twice
        assert all(len(set(who)) == 2 for who in seen.values())      # by two different assessors
        agree = on_server(c, srv.dispatcher.agreement).set_index("qid")
        for qid, g in pairs.groupby("qid"):
            p = list(zip(g["first"], g["second"]))
            want = _alpha_by_hand(p) if len({v for x in p for v in x}) > 1 else np.nan
            assert agree.loc[qid, "n"] == len(g)
            np.testing.assert_allclose(agree.loc[qid, "alpha"], want, equal_nan=True)
        np.testing.assert_allclose(agree.loc["all", "alpha"], _alpha_by_hand(list(zip(pairs["first"],
                                                                                     pairs["second"]))))
        assert on_server(c, lambda: len(srv.session.judged_qrels())) == 12                 # second judgments are not in the qrels
        assert "Krippendorff" in User(c, toks["lead"]).get("/organiser").text


def test_the_organiser_page_shows_the_session_ranges_and_adds_accounts(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=2, budget=4, labels="0,1,2")
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        for _ in range(4):
            t = alice.task()
            assert alice.judge(t, oracle_label(coll, t)).status_code == 303
        lead = User(c, toks["lead"])
        page = lead.get("/organiser").text
        b = on_server(c, server(app).session.system_bounds)
        for row in b.itertuples():
            assert f"<td>{row.name}</td><td>{row.base:.4f}</td><td>{row.residual:.4f}</td><td>{row.upper:.4f}</td>" \
                in page
        assert "the budget of 4 judgments is spent" in page
        r = lead.post("/organiser/accounts", {"name": "erin", "topics": "1, 3"})
        assert r.status_code == 200
        import re
        token = re.search(r"<code>(pn_[^<]+)</code>", r.text).group(1)
        erin = User(c, token)
        assert erin.get("/assess").status_code == 200
        assert on_server(c, server(app).store.account, "erin")["topics"] == ["1", "3"]
        assert lead.post("/organiser/accounts", {"name": "erin"}).status_code == 400     # exists already
        assert lead.post("/organiser/accounts", {"name": "../x"}).status_code == 400


def test_documents_are_escaped_and_query_terms_marked(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=40)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        t = alice.task()
        assert t["state"] == "judge"
        page = alice.get("/assess")
        assert "<script>alert" not in page.text and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page.text
        assert "<mark>solar</mark> <mark>energy</mark> <mark>storage</mark>" in page.text
        assert "How is solar energy stored?" in page.text and "names a storage method" in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        cookie = [h for k, h in page.headers.multi_items() if k == "set-cookie"]
        assert not cookie        # the login cookie was set once, at login:
        r = c.get("/login")
        assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()


# ---------------------------------------------------------------------------------------------
# durability and one server per session

def test_a_crash_between_the_two_commits_is_repaired_at_restart(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        t = alice.task()
        # the session commits the judgment, then the server dies before its own file records who judged
        on_server(c, server(app).session.record, t["qid"], t["docno"], 1)
    app = make_app(tmp, coll)
    with TestClient(app) as c:
        srv = server(app)
        assert srv.dispatcher.recovered == 1
        log = on_server(c, srv.dispatcher.log)
        assert log[["assessor", "qid", "docno", "label"]].values.tolist() == [["alice", t["qid"], t["docno"], 1.0]]
        alice = User(c, toks["alice"])
        assert alice.judge(t, "1").status_code == 409                # the browser's retry: a replay
        assert alice.task()["docno"] != t["docno"]


def test_a_second_server_on_the_same_session_is_refused(setup):
    tmp, coll, toks = setup
    cfg = ServeConfig(session=tmp / "judging.sqlite", runs=coll.runs)
    first = open_server(cfg)
    try:
        with pytest.raises(WebError, match=f"another judging server \\(process {os.getpid()}\\)"):
            open_server(ServeConfig(session=tmp / "judging.sqlite"))
    finally:
        first.close()
    open_server(ServeConfig(session=tmp / "judging.sqlite")).close()     # released on close


@pytest.mark.slow   # a signal test
def test_a_killed_server_does_not_leave_the_lock_stuck(tmp_path):
    code = ("import sys, time; from pyterrier_noise.web import ServerLock; ServerLock(sys.argv[1]); "
            "print('locked', flush=True); time.sleep(60)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "s.sqlite")], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "locked"
        from pyterrier_noise.web import ServerLock
        with pytest.raises(WebError, match=f"process {proc.pid}"):
            ServerLock(tmp_path / "s.sqlite")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        ServerLock(tmp_path / "s.sqlite").release()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_the_server_file_belongs_to_one_session(setup):
    tmp, coll, toks = setup
    open_server(ServeConfig(session=tmp / "judging.sqlite", runs=coll.runs)).close()
    other = {k: v.iloc[:-1] for k, v in coll.runs.items()}
    os.replace(tmp / "judging.sqlite", tmp / "old.sqlite")
    with pytest.raises(WebError, match="belongs to another judging session"):
        open_server(ServeConfig(session=tmp / "judging.sqlite", runs=other))


def test_the_label_scale_is_kept(setup):
    tmp, coll, toks = setup
    open_server(ServeConfig(session=tmp / "judging.sqlite", runs=coll.runs, labels="0,1,2")).close()
    with pytest.raises(WebError, match="judged on the scale 0, 1, 2"):
        open_server(ServeConfig(session=tmp / "judging.sqlite", labels="0,1"))
    srv = open_server(ServeConfig(session=tmp / "judging.sqlite"))
    try:
        assert [v for v, _ in srv.dispatcher.scale] == [0.0, 1.0, 2.0]
    finally:
        srv.close()


# ---------------------------------------------------------------------------------------------
# documents and topics

def test_lookups_cannot_leave_the_collection(tmp_path):
    (tmp_path / "secret.txt").write_text("secret")
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.trec").write_text("<DOC>\n<DOCNO>D1</DOCNO>\n<TITLE>t</TITLE> text one\n</DOC>\n")
    col = open_collection(d)
    assert col.document("D1") == "t\n\ntext one"            # the title a paragraph of its own
    for bad in ("../secret.txt", "../../secret.txt", str(tmp_path / "secret.txt"), "a.trec", None, 1):
        assert col.document(bad) is None
    assert Collection(lookup=lambda x: None).document("../secret.txt") is None


def test_topic_and_document_formats(tmp_path):
    (tmp_path / "t.xml").write_text('<topics><topic number="7"><query>coronavirus origin</query>'
                                    '<question>What is the origin?</question><narrative>Any origin.</narrative>'
                                    '</topic></topics>')
    (tmp_path / "t.jsonl").write_text('{"qid": "8", "title": "x ray", "description": "d", "narrative": "n"}\n')
    (tmp_path / "d.jsonl").write_text('{"doc_id": "A", "title": "Head", "text": "body"}\n{"docno": "B", "body": "b"}\n')
    (tmp_path / "bad.jsonl").write_text('{"docno": "A", "text": "x"}\n{"docno": "B"}\n')
    xml = open_collection(topics=tmp_path / "t.xml").topic("7")
    assert (xml.title, xml.description, xml.narrative) == ("coronavirus origin", "What is the origin?", "Any origin.")
    js = open_collection(topics=tmp_path / "t.jsonl").topic("8")
    assert (js.title, js.description, js.narrative) == ("x ray", "d", "n")
    assert open_collection(tmp_path / "d.jsonl").documents == {"A": "Head\n\nbody", "B": "b"}
    with pytest.raises(Exception, match="bad.jsonl line 2: expected keys 'docno' and 'text'"):
        open_collection(tmp_path / "bad.jsonl")
    assert open_collection(topics=tmp_path / "t.xml").topic("99").title == ""


def test_highlight_marks_whole_words_only():
    pieces = highlight("Storage of stored energy; energies & <b>storages</b> variation class", {"storage", "energy",
                                                                                               "variations", "clas"})
    assert [p for p, hit in pieces if hit] == ["Storage", "energy", "storages", "variation"]
    assert "".join(p for p, _ in pieces) == "Storage of stored energy; energies & <b>storages</b> variation class"


def test_a_restarted_server_gives_each_assessor_back_their_document(setup):
    tmp, coll, toks = setup
    app = make_app(tmp, coll, batch_size=3)
    with TestClient(app) as c:
        alice, bob = User(c, toks["alice"]), User(c, toks["bob"])
        t, u = alice.task(), bob.task()
        queue = on_server(c, lambda: server(app).session.pending)
    app = make_app(tmp, coll, batch_size=3)            # a new process would see the same files
    with TestClient(app) as c:
        assert on_server(c, lambda: server(app).session.pending) == queue
        alice, bob, carol = User(c, toks["alice"]), User(c, toks["bob"]), User(c, toks["carol"])
        assert alice.task()["nonce"] == t["nonce"] and bob.task()["nonce"] == u["nonce"]
        w = carol.task()
        assert (w["qid"], w["docno"]) == queue[2][:2]   # the third of the round: nobody holds it
        assert alice.judge(t, "1").status_code == 303   # the form from before the restart still counts


def test_the_assessor_is_told_when_the_stopping_rule_fires(setup):
    from pyterrier_noise.selection import StopRule
    tmp, coll, toks = setup
    rule = StopRule(top_residual=1.0)                   # the mean residual is always <= 1: it fires at once
    app = make_app(tmp, coll, stop=rule)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        t = alice.task()
        assert t["state"] == "done" and t["reason"].startswith("the stopping rule fired: the mean residual of the top")
        page = alice.get("/assess").text
        assert "Judging has stopped: the stopping rule fired" in page and 'id="judge"' not in page
        org = User(c, toks["lead"]).get("/organiser").text
        assert "<b>fired</b>" in org


def test_documents_and_topics_from_an_ir_datasets_id(monkeypatch):
    """The ir_datasets reader through a stand-in module (no download): lookups by id in its document store."""
    import sys
    import types
    from collections import namedtuple
    Doc = namedtuple("Doc", "doc_id title text")
    Query = namedtuple("Query", "query_id title description narrative")

    class Store:
        def get(self, docno):
            if docno != "D1":
                raise KeyError(docno)
            return Doc("D1", "A title", "the body")

    class Dataset:
        def has_docs(self):
            return True

        def has_queries(self):
            return True

        def docs_store(self):
            return Store()

        def queries_iter(self):
            return iter([Query("5", "solar cells", "What about them?", "Anything.")])

    fake = types.ModuleType("ir_datasets")
    fake.load = lambda name: Dataset() if name == "fake/collection" else (_ for _ in ()).throw(KeyError(name))
    monkeypatch.setitem(sys.modules, "ir_datasets", fake)
    col = open_collection("irds:fake/collection")
    assert col.document("D1") == "A title\n\nthe body"
    assert col.document("../D1") is None and col.document("D2") is None
    assert col.topic("5").description == "What about them?"
    with pytest.raises(Exception, match="ir_datasets knows no dataset 'nope'"):
        open_collection("irds:nope")
