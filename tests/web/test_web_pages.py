"""The organiser's page and the exports say what they show (issue 31): topics of an account as a
list or "all" (never "nan"), alpha left blank with the reason, "projected" explained, a long topic
table folded, a periodic refresh; labels as the scale writes them; assigned topics checked."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the 'web' extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from cli_helpers import run_cli  # noqa: E402
from web_helpers import User, accounts, make_app, server, small_collection  # noqa: E402


def _cells(html: str, table: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [[re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_the_organiser_page_says_what_its_columns_mean(tmp_path):
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice", "bob")
    app = make_app(tmp_path, coll, batch_size=2, double=1.0, budget=1, labels="0:not relevant,1:relevant,2:highly relevant")
    with TestClient(app) as c:
        lead, alice, bob = User(c, toks["lead"]), User(c, toks["alice"]), User(c, toks["bob"])
        r = lead.post("/organiser/accounts", {"name": "carol", "topics": "3, 1"})
        assert r.status_code == 200 and "Token for <b>carol</b>" in r.text
        assert 'data-refresh' not in r.text                       # the token page is not reloaded away
        r = lead.post("/organiser/accounts", {"name": "dave", "topics": "1, 99"})
        assert r.status_code == 400 and "99 is not a topic of this session" in r.text
        t = alice.task()
        assert alice.judge(t, "2").status_code == 303              # one pair on t's topic
        u = bob.task()
        assert u["kind"] == "double" and bob.judge(u, "2").status_code == 303
        page = lead.get("/organiser").text
        people = {row[0]: row for row in _cells(page, "assessors")}
        assert people["carol"][7] == "1, 3" and people["alice"][7] == "all" and people["lead"][7] == "all"
        assert "nan" not in page
        agreement = _cells(page, "agreement")
        assert agreement[0][:3] == [t["qid"], "1", "not defined: one pair"]
        assert "<b>projected</b> = base divided by the RBP weight" in page
        assert 'data-refresh="30"' in page and '<details id="topics-box" open>' in page
        log = lead.get("/organiser/log").text.splitlines()
        assert log[1].split("\t")[6] == "2"                         # not 2.0
        page = alice.get("/assess").text
        assert re.search(r'id="undo-hint">\(topic \S+, document \S+: highly relevant\)', page)


def test_the_wait_page_polls_for_a_free_document(tmp_path):
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice", "bob")
    app = make_app(tmp_path, coll, batch_size=1)
    with TestClient(app) as c:
        alice, bob = User(c, toks["alice"]), User(c, toks["bob"])
        alice.task()
        page = bob.get("/assess").text
        assert 'id="wait"' in page and 'data-poll="1"' in page
        assert "connect-src 'self'" in bob.get("/assess").headers["content-security-policy"]


def test_account_commands_refuse_empty_names_and_topics(tmp_path):
    coll = small_collection(tmp_path)
    from pyterrier_noise.web import ServeConfig, open_server
    open_server(ServeConfig(session=tmp_path / "judging.sqlite", runs=coll.runs)).close()
    s = tmp_path / "judging.sqlite"
    code, out, err = run_cli("serve", "--session", s, "--add-assessor", "")
    assert code == 2 and "account name: expected 1-64 letters" in err
    code, out, err = run_cli("serve", "--session", s, "--add-assessor", "x", "--assign", ",,,")
    assert code == 2 and "--assign: expected topic ids separated by commas" in err
    code, out, err = run_cli("serve", "--session", s, "--add-assessor", "x", "--assign", "1,77")
    assert code == 2 and "77 is not a topic of this session" in err
    code, out, err = run_cli("serve", "--session", s, "--add-assessor", "x", "--assign", "1,2")
    assert code == 0 and "(topics 1, 2)" in out


@pytest.mark.parametrize("ahead", [False, True])
def test_rounds_ahead_keep_the_faster_assessor_busy(tmp_path, ahead):
    """Rounds of 2, two assessors, bob slow (he holds one document while alice judges 12): without
    rounds ahead alice waits after each of her documents; with them she never waits, no document is
    leased twice, and every judgment is in the session."""
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice", "bob")
    app = make_app(tmp_path, coll, batch_size=2, ahead=ahead)
    with TestClient(app) as c:
        alice, bob = User(c, toks["alice"]), User(c, toks["bob"])
        held = bob.task()
        waits, seen = 0, {(held["qid"], held["docno"])}
        judged = 0
        while judged < 12:
            t = alice.task()
            if t["state"] == "wait":
                waits += 1
                if not ahead:        # bob judges only when alice is stuck; otherwise the loop would not end
                    assert bob.judge(held, "0").status_code == 303
                    held = bob.task()
                    seen.add((held["qid"], held["docno"]))
                continue
            assert (t["qid"], t["docno"]) not in seen            # never the document bob holds
            seen.add((t["qid"], t["docno"]))
            assert alice.judge(t, "1").status_code == 303
            judged += 1
        srv = server(app)
        assert srv.session.n_judged == 12 + (0 if ahead else waits)
    assert (waits == 0) if ahead else (waits >= 6)
