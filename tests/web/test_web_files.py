"""The session file and the server file as one whole (issue 31): a server that finds the server
file missing, empty, another session's, another file, an older copy or damaged refuses with a
sentence, and ``rebuild=True`` (``serve --rebuild-server-file``) goes on saying what is lost; an
emptied session file beside a stale server file is refused; a failed write (injected) leaves a
judgment recorded whole or not at all, and the assessor goes on without a restart."""
from __future__ import annotations

import os
import shutil
import sqlite3
import stat

import pytest

pytest.importorskip("starlette", reason="the 'web' extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pyterrier_noise.selection.store import SessionStore  # noqa: E402
from pyterrier_noise.web import ServeConfig, WebError, companion_path, open_server  # noqa: E402

from cli_helpers import run_cli  # noqa: E402
from web_helpers import User, accounts, make_app, on_server, server, small_collection  # noqa: E402


@pytest.fixture()
def judged(tmp_path):
    """A session with 4 judgments through the server by alice and bob, one undone and judged again."""
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice", "bob")
    app = make_app(tmp_path, coll)
    with TestClient(app) as c:
        alice, bob = User(c, toks["alice"]), User(c, toks["bob"])
        for user in (alice, bob, alice, bob):
            t = user.task()
            assert user.judge(t, "0").status_code == 303
        last = on_server(c, server(app).dispatcher.last_judgment, "bob")
        assert bob.post("/assess/undo", {"judgment": str(last["id"])}, follow_redirects=False).status_code == 303
        t = bob.task()
        assert t["redo"] and bob.judge(t, "1").status_code == 303
        qrels = on_server(c, server(app).dispatcher.qrels)
    return tmp_path, coll, toks, qrels


def _open(tmp, **kw):
    return open_server(ServeConfig(session=tmp / "judging.sqlite", **kw))


def test_a_missing_or_empty_server_file_is_refused_then_rebuilt_saying_what_is_lost(judged):
    tmp, coll, toks, qrels = judged
    serve = companion_path(tmp / "judging.sqlite")
    shutil.copy(serve, tmp / "backup.serve.sqlite")
    for damage in ("missing", "empty"):
        if damage == "missing":
            serve.unlink()
        else:
            serve.write_bytes(b"")
        with pytest.raises(WebError, match=f"judging.serve.sqlite: is {damage}.*has 4 judgments.*"
                                           f"restore the server file from a backup.*--rebuild-server-file"):
            _open(tmp)
        assert serve.exists() == (damage == "empty") and (damage == "missing" or serve.stat().st_size == 0)   # untouched
    app = make_app(tmp, coll, rebuild=True)
    with TestClient(app) as c:
        st = server(app)
        assert "who made each of them, the second judgments, and the labels given again after an undo" in st.rebuilt
        assert "add the accounts again" in st.rebuilt
        assert st.session.n_judged == 4 and len(on_server(c, st.dispatcher.log)) == 0
        lead = accounts(tmp / "judging.sqlite", organiser="lead2")["lead2"]     # the new file has none
        page = User(c, lead).get("/organiser").text
        assert 'id="rebuilt"' in page and "is empty (0 bytes)" in page    # the organiser sees what was lost
    _open(tmp).close()       # rebuilt: paired again, starts without the flag


def test_a_restored_server_file_gives_back_everything(judged):
    tmp, coll, toks, qrels = judged
    serve = companion_path(tmp / "judging.sqlite")
    shutil.copy(serve, tmp / "backup.serve.sqlite")
    serve.unlink()
    with pytest.raises(WebError, match="is missing"):
        _open(tmp)
    shutil.copy(tmp / "backup.serve.sqlite", serve)
    st = _open(tmp)
    try:
        # the undone-and-judged-again document keeps its new label, and who judged what is there
        assert st.dispatcher.qrels().equals(qrels)
        log = st.dispatcher.log()
        assert sorted(log["assessor"]) == ["alice", "alice", "bob", "bob", "bob"] and log["retracted"].notna().sum() == 1
    finally:
        st.close()


def test_an_older_copy_of_the_server_file_is_refused(judged):
    tmp, coll, toks, qrels = judged
    serve = companion_path(tmp / "judging.sqlite")
    shutil.copy(serve, tmp / "old.serve.sqlite")
    app = make_app(tmp, coll)
    with TestClient(app) as c:                 # one more judgment after the copy
        alice = User(c, toks["alice"])
        assert alice.judge(alice.task(), "1").status_code == 303
    shutil.copy(tmp / "old.serve.sqlite", serve)
    for suffix in ("-wal", "-shm"):
        assert not os.path.exists(str(serve) + suffix)
    with pytest.raises(WebError, match=r"is an older copy of the server file: it records 6 changes, the session .* "
                                       r"saw 7 .*restore the newest copy"):
        _open(tmp)
    st = _open(tmp, rebuild=True)
    try:
        assert "of the last 1 changes" in st.rebuilt and st.session.n_judged == 5
    finally:
        st.close()


def test_another_sessions_server_file_and_an_emptied_session_file_are_refused(judged):
    tmp, coll, toks, qrels = judged
    (tmp / "judging.sqlite").write_bytes(b"")            # emptied; the runs given again make a new session
    with pytest.raises(WebError, match=r"belongs to another judging session \(session id .*, 5 judgments through "
                                       r"its server\), not to .*judging.sqlite \(id .*, 0 judged\).*restore it"):
        _open(tmp, runs=coll.runs)
    # the new, empty session file is kept and may be served only with the rebuild (the old file is moved aside)
    st = _open(tmp, rebuild=True)
    try:
        assert "moved to judging.serve.sqlite.replaced-" in st.rebuilt
    finally:
        st.close()
    assert any(p.name.startswith("judging.serve.sqlite.replaced-") for p in tmp.iterdir())


def test_a_server_file_made_by_the_account_command_alone_is_not_the_one_that_served(judged):
    tmp, coll, toks, qrels = judged
    companion_path(tmp / "judging.sqlite").unlink()
    code, out, err = run_cli("serve", "--session", tmp / "judging.sqlite", "--add-organiser", "lead2")
    assert code == 0
    code, out, err = run_cli("serve", "--session", tmp / "judging.sqlite")
    assert code == 2 and "is not the server file that served this session" in err and "Traceback" not in err


def test_damaged_files_give_a_sentence(judged):
    tmp, coll, toks, qrels = judged
    serve = companion_path(tmp / "judging.sqlite")
    orig = serve.read_bytes()
    data = bytearray(orig)
    mid = len(data) // 2
    data[mid:mid + 3000] = os.urandom(3000)
    serve.write_bytes(bytes(data))
    code, out, err = run_cli("serve", "--session", tmp / "judging.sqlite")
    assert code == 2 and "Traceback" not in err
    assert "judging.serve.sqlite: the judging server's file is damaged" in err, err
    serve.write_bytes(orig[:len(orig) // 2])                               # truncated in the middle
    code, out, err = run_cli("serve", "--session", tmp / "judging.sqlite")
    assert code == 2 and "Traceback" not in err and "judging.serve.sqlite: the judging server's file is" in err, err
    serve.write_bytes(b"this is not a database at all" * 200)
    code, out, err = run_cli("serve", "--session", tmp / "judging.sqlite")
    assert code == 2 and "Traceback" not in err and "is damaged" in err, err
    sess = tmp / "judging.sqlite"
    data = bytearray(sess.read_bytes())
    data[len(data) // 2:len(data) // 2 + 4096] = os.urandom(4096)
    sess.write_bytes(bytes(data))
    code, out, err = run_cli("serve", "--session", sess)
    assert code == 2 and "Traceback" not in err and "damaged" in err, err


def test_a_read_only_session_file_is_said_to_be_read_only(judged):
    tmp, coll, toks, qrels = judged
    sess = tmp / "judging.sqlite"
    sess.chmod(0o444)
    try:
        code, out, err = run_cli("serve", "--session", sess)
    finally:
        sess.chmod(0o600)
    assert code == 2 and "the session file is read-only (mode -r--r--r--)" in err and "chmod u+w" in err


def test_a_second_server_through_a_link_is_refused_and_leaves_no_lock_file(judged):
    tmp, coll, toks, qrels = judged
    first = _open(tmp)
    try:
        os.symlink(tmp / "judging.sqlite", tmp / "sym.sqlite")
        os.link(tmp / "judging.sqlite", tmp / "hard.sqlite")
        for name in ("sym.sqlite", "hard.sqlite"):
            with pytest.raises(WebError, match=f"another judging server \\(process {os.getpid()}\\)"):
                open_server(ServeConfig(session=tmp / name))
        assert not any(p.name.endswith(".serve.lock") for p in tmp.iterdir())
        assert first.session.n_judged == 4                       # the first server's session is unharmed
    finally:
        first.close()


# ---------------------------------------------------------------------------------------------
# a failed write (disk full, I/O error), injected

def _full(fail_on: str):
    """A SQLite authorizer refusing writes to table ``fail_on`` (as a full disk refuses them)."""
    def auth(action, table, *rest):
        if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE) and table == fail_on:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    return auth


def test_a_failed_server_file_write_is_repaired_at_the_next_request(tmp_path):
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice")
    app = make_app(tmp_path, coll)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        srv = server(app)
        t = alice.task()
        on_server(c, srv.store.conn.set_authorizer, _full("judgments"))
        r = alice.judge(t, "1")
        assert r.status_code == 503 and "saved in the session" in r.text
        assert srv.session.n_judged == 1
        on_server(c, srv.store.conn.set_authorizer, None)         # space again
        u = alice.task()                                          # no restart, no 409 loop: the next document
        assert (u["qid"], u["docno"]) != (t["qid"], t["docno"])
        log = on_server(c, srv.dispatcher.log)
        assert log[["assessor", "qid", "docno", "label"]].values.tolist() == [["alice", t["qid"], t["docno"], 1.0]]
        assert alice.judge(u, "0").status_code == 303
        assert srv.session.n_judged == 2 and len(on_server(c, srv.dispatcher.log)) == 2


def test_a_failed_session_write_records_nothing_and_the_assessor_goes_on(tmp_path, monkeypatch):
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice")
    app = make_app(tmp_path, coll)
    real = SessionStore.write                        # the session file: one transaction per write
    fail = {"on": False}

    def write(self, fn):
        def failing(c):
            fn(c)
            if fail["on"]:
                raise sqlite3.OperationalError("database or disk is full")
        return real(self, failing)
    monkeypatch.setattr(SessionStore, "write", write)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        t = alice.task()
        fail["on"] = True
        r = alice.judge(t, "1")
        assert r.status_code == 503 and "nothing was recorded" in r.text and "disk is full" in r.text
        srv = server(app)
        assert srv.session.n_judged == 0 and len(on_server(c, srv.dispatcher.log)) == 0
        fail["on"] = False
        u = alice.task()                                 # the same document, still hers, and judging goes on
        assert (u["qid"], u["docno"]) == (t["qid"], t["docno"])
        assert alice.judge(u, "1").status_code == 303
        assert srv.session.n_judged == 1 and len(on_server(c, srv.dispatcher.log)) == 1
    st = open_server(ServeConfig(session=tmp_path / "judging.sqlite"))      # both files agree at the next start
    try:
        assert st.session.n_judged == 1 and st.rebuilt is None
    finally:
        st.close()


def test_new_files_are_private(tmp_path):
    coll = small_collection(tmp_path)
    st = open_server(ServeConfig(session=tmp_path / "judging.sqlite", runs=coll.runs))
    st.close()
    for name in ("judging.sqlite", "judging.serve.sqlite"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) & 0o077 == 0, name


def test_trec_documents_keep_their_text_entities_and_paragraphs(tmp_path):
    from pyterrier_noise.web import read_documents
    (tmp_path / "d.trec").write_text(
        "<DOC>\n<DOCNO> FT-1 </DOCNO>\n<PROFILE>_AN-1</PROFILE>\n<HEADLINE>\nA &amp; B &mdash; C\n</HEADLINE>\n"
        "<TEXT>\n<!-- a comment -->a < b comparison and c > d, <i>kept</i> as written;\nline two\n\n"
        "paragraph two &lt;x&gt;\n<P>three</P></TEXT>\n</DOC>\n<DOC>\n<DOCNO>2</DOCNO>\nplain\ntext\n</DOC>\n")
    docs = read_documents(tmp_path / "d.trec")
    assert docs["FT-1"].split("\n\n") == ["A & B — C", "_AN-1",
                                          "a < b comparison and c > d, <i>kept</i> as written; line two",
                                          "paragraph two <x>", "three"]
    assert docs["2"] == "plain text"


def test_a_failed_undo_changes_nothing_and_can_be_tried_again(tmp_path):
    coll = small_collection(tmp_path)
    toks = accounts(tmp_path / "judging.sqlite", "alice")
    app = make_app(tmp_path, coll)
    with TestClient(app) as c:
        alice = User(c, toks["alice"])
        srv = server(app)
        t = alice.task()
        assert alice.judge(t, "1").status_code == 303
        last = on_server(c, srv.dispatcher.last_judgment, "alice")
        before = on_server(c, lambda: (srv.store.changes, srv.store.conn.execute(
            "SELECT count(*) FROM leases").fetchone()[0]))
        on_server(c, srv.store.conn.set_authorizer, _full("judgments"))
        r = alice.post("/assess/undo", {"judgment": str(last["id"])}, follow_redirects=False)
        assert r.status_code == 503 and "nothing was changed" in r.text
        on_server(c, srv.store.conn.set_authorizer, None)
        assert on_server(c, lambda: (srv.store.changes, srv.store.conn.execute(
            "SELECT count(*) FROM leases").fetchone()[0])) == before
        assert alice.post("/assess/undo", {"judgment": str(last["id"])}, follow_redirects=False).status_code == 303
        u = alice.task()
        assert u["redo"] and (u["qid"], u["docno"]) == (t["qid"], t["docno"])


def test_a_foreign_sqlite_file_as_the_server_file_is_refused_untouched(tmp_path):
    """Another application's SQLite file where the server file goes is refused before any PRAGMA or
    table that writes: its bytes stay the same."""
    from pyterrier_noise.web.store import WebStore
    path = companion_path(tmp_path / "s.sqlite")
    other = sqlite3.connect(path)
    other.executescript("CREATE TABLE notes(id INTEGER, body TEXT); INSERT INTO notes VALUES (1, 'x');")
    other.commit()
    other.close()
    before = path.read_bytes()
    with pytest.raises(WebError, match=r"not a judging server file \(its tables are notes.*the file was not changed"):
        WebStore(tmp_path / "s.sqlite")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
