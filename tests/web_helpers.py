"""Shared by the judging-server tests: a small collection with documents and topics on disk, a
logged-in test client per account, and a snapshot of everything the server can write."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from starlette.testclient import TestClient

from pyterrier_noise.io import write_trec_run
from pyterrier_noise.synthetic import make_collection

ROOT = Path(__file__).resolve().parents[1]
from pyterrier_noise.web import ServeConfig, WebStore, create_app


def serve_load():
    """``benchmarks/serve_load.py`` as a module (the load benchmark the web tests run small)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("serve_load", ROOT / "benchmarks" / "serve_load.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("serve_load", mod)      # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def small_collection(tmp: Path, evil: str = "<script>alert('x')</script>"):
    """5 topics x 6 runs (the synthetic collection), a docno<TAB>text file and a TREC topics file."""
    coll = make_collection(n_topics=5, n_systems=6, n_docs_per_topic=40, depth=15, pool_depth=5, seed=3)
    docnos = sorted({d for r in coll.runs.values() for d in r["docno"]})
    lines = [f"{d}\tdocument {d} about solar energy storage {evil}" for d in docnos]
    (tmp / "docs.tsv").write_text("\n".join(lines) + "\n")
    qids = sorted({q for r in coll.runs.values() for q in r["qid"]})
    (tmp / "topics.trec").write_text("".join(
        f"<top>\n<num> Number: {q}\n<title> solar energy storage\n<desc> Description:\nHow is solar energy stored?\n"
        f"<narr> Narrative:\nA relevant document names a storage method.\n</top>\n" for q in qids))
    return coll


def accounts(session: Path, *names: str, organiser: str = "lead") -> dict[str, str]:
    store = WebStore(session)
    try:
        toks = {n: store.add_account(n) for n in names}
        toks[organiser] = store.add_account(organiser, "organiser")
    finally:
        store.close()
    return toks


def make_app(tmp: Path, coll, **kw):
    cfg = {"session": tmp / "judging.sqlite", "runs": coll.runs, "settings": {"batch_size": kw.pop("batch_size", 2)},
           "docs": tmp / "docs.tsv", "topics": tmp / "topics.trec", "hosts": ("testserver", "localhost"), **kw}
    return create_app(ServeConfig(**cfg))


def server(app):
    """The open :class:`ServerState` of a running app (inside ``with TestClient(app)``)."""
    return app.app.state.server


def login(client: TestClient, token: str) -> str:
    """Log in through the login form; returns the login's CSRF token."""
    r = client.get("/login")
    pre = re.search(r'name="pre" value="([^"]+)"', r.text).group(1)
    r = client.post("/login", data={"pre": pre, "token": token})
    assert r.status_code == 200, r.text
    return re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)


class User:
    """One account's browser on a shared test client (one client, so one event-loop thread, which the
    session's SQLite connection needs): its own cookies, swapped in for each request."""

    def __init__(self, client: TestClient, token: str | None = None) -> None:
        self.client, self.cookies, self.csrf = client, {}, None
        if token is not None:
            self.csrf = self.call(login, token)

    def call(self, fn, *args, **kw):
        self.client.cookies.clear()
        for k, v in self.cookies.items():
            self.client.cookies.set(k, v)
        try:
            return fn(self.client, *args, **kw)
        finally:
            self.cookies = dict(self.client.cookies.items())

    def get(self, url: str, **kw):
        return self.call(lambda c: c.get(url, **kw))

    def post(self, url: str, data: dict | None = None, csrf: bool = True, **kw):
        data = dict(data or {})
        if csrf and "csrf" not in data:
            data["csrf"] = self.csrf
        return self.call(lambda c: c.post(url, data=data, **kw))

    def task(self) -> dict:
        r = self.get("/api/next")
        assert r.status_code == 200, r.text
        return r.json()

    def judge(self, t: dict, label, **override):
        return self.post("/assess/judge", {"nonce": t["nonce"], "qid": t["qid"], "docno": t["docno"],
                                           "label": label, **override}, follow_redirects=False)


def snapshot(srv) -> tuple:
    """Everything a request could write: the session's steps and served documents, and the server's tables."""
    c = srv.store.conn
    return (srv.session.history[["seq", "action", "qid", "docno", "label"]].to_records(index=False).tolist(),
            list(srv.session.pending),
            c.execute("SELECT * FROM judgments ORDER BY id").fetchall(),
            c.execute("SELECT nonce, qid, docno, kind, assessor, redo_of FROM leases ORDER BY nonce").fetchall(),
            c.execute("SELECT name, role, revoked FROM accounts ORDER BY name").fetchall())


def on_server(client: TestClient, fn, *args):
    """Run ``fn(*args)`` on the application's event-loop thread (the session's SQLite connection is
    usable only there)."""
    return client.portal.call(fn, *args)


def snap(client: TestClient, app) -> tuple:
    return on_server(client, snapshot, server(app))


# a real server process (uvicorn on loopback)

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m pyterrier_noise serve`` in a child process, until it answers on its port."""

    def __init__(self, tmp: Path, *extra: str, runs: bool = True, docs=None) -> None:
        """``docs(docnos) -> text of a --docs file`` (TREC <DOC> or docno<TAB>text) to show documents."""
        self.tmp, self.port = tmp, _free_port()
        run_args = []
        coll = make_collection(n_topics=3, n_systems=3, n_docs_per_topic=20, depth=10, pool_depth=3, seed=2)
        self.coll = coll
        if docs is not None:
            (tmp / "docs.trec").write_text(docs(sorted({d for r in coll.runs.values() for d in r["docno"]})))
            extra = (*extra, "--docs", str(tmp / "docs.trec"))
        if runs:
            for name, run in coll.runs.items():
                write_trec_run(run, tmp / f"{name}.run")
                run_args.append(str(tmp / f"{name}.run"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT)] + sys.path)}
        self.log = open(tmp / "server.err", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "pyterrier_noise", "serve", "--session",
                                      str(tmp / "s.sqlite"), "--port", str(self.port), "--batch-size", "2",
                                      *extra, *run_args], stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env)
        import httpx
        line = self.proc.stdout.readline()
        assert line.startswith("serving"), (line, (tmp / "server.err").read_text())
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=2) as client:   # one client (and TLS context) for every poll
            while True:
                try:
                    client.get(self.url("/login"))
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and self.proc.poll() is None, (tmp / "server.err").read_text()
                    time.sleep(0.05)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self.log.close()
        self.proc.stdout.close()
        return code

    def stderr(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (self.tmp / "server.err").read_text()

    def stderr_when(self, done, timeout: float = 30.0) -> str:
        """The server's stderr once ``done(text)`` holds, or after ``timeout`` seconds: the server logs
        a request once it has answered it, so the client may see the answer before the log line."""
        end = time.monotonic() + timeout
        while True:
            text = self.stderr()
            if done(text) or time.monotonic() > end:
                return text
            time.sleep(0.02)
