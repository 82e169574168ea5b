"""``pyterrier-noise serve``'s account commands and start-up checks (in-process; no port is bound)."""
from __future__ import annotations

import re

import pytest

from cli_helpers import run_cli

pytest.importorskip("starlette", reason="the 'web' extra (starlette) is not installed")


def test_add_assessor_prints_a_token_once_and_stores_its_hash(tmp_path):
    session = tmp_path / "judging.sqlite"
    code, out, err = run_cli("serve", "--session", session, "--add-assessor", "alice", "--assign", "1,2")
    assert code == 0, err
    token = out.strip().splitlines()[-1]
    assert re.fullmatch(r"pn_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", token)
    assert "assessor alice (topics 1, 2)" in out and "shown once" in out
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("judging.serve.sqlite"))
    assert token.split("_", 2)[2].encode() not in data
    from pyterrier_noise.web import WebStore
    store = WebStore(session)
    try:
        assert store.account("alice") == {"name": "alice", "role": "assessor", "topics": ["1", "2"]}
        assert store.token_record(token)[0] == "alice"
    finally:
        store.close()
    code, out, err = run_cli("serve", "--session", session, "--add-assessor", "alice")
    assert code == 2 and "account 'alice' exists already" in err
    code, out, err = run_cli("serve", "--session", session, "--revoke-assessor", "alice")
    assert code == 0 and "revoked alice" in out
    store = WebStore(session)
    try:
        assert store.token_record(token) is None and store.account("alice") is None
    finally:
        store.close()
    code, out, err = run_cli("serve", "--session", session, "--add-organiser", "lead")
    assert code == 0 and out.strip().splitlines()[-1].startswith("pn_")


def test_start_up_errors_are_sentences(tmp_path):
    code, out, err = run_cli("serve", "--session", tmp_path / "none.sqlite", "--host", "0.0.0.0")
    assert "warning: listening on 0.0.0.0, not this machine only" in err
    assert code == 2 and "no such session file; give the runs to create one" in err
    code, out, err = run_cli("serve", "--session", tmp_path / "none.sqlite", "--assign", "1")
    assert code == 2 and "--assign goes with --add-assessor" in err
    code, out, err = run_cli("serve", "--session", tmp_path / "none.sqlite", "--add-assessor", "../x")
    assert code == 2 and "account name: expected 1-64 letters" in err
    code, out, err = run_cli("serve", "--session", tmp_path / "none.sqlite", "--port", "0")
    assert code == 2 and "--port" in err


def test_a_second_server_is_refused_by_the_command(tmp_path):
    from pyterrier_noise.synthetic import make_collection
    from pyterrier_noise.web import ServeConfig, open_server
    coll = make_collection(n_topics=2, n_systems=3, n_docs_per_topic=20, depth=10, pool_depth=3, seed=1)
    first = open_server(ServeConfig(session=tmp_path / "s.sqlite", runs=coll.runs))
    try:
        code, out, err = run_cli("serve", "--session", tmp_path / "s.sqlite")
        assert code == 2 and "another judging server (process" in err and "stop it first" in err
    finally:
        first.close()
