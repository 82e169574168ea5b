"""The judging server's own state, in a SQLite file beside the judging session.

The session file (:class:`pyterrier_noise.selection.JudgingSession`) holds the runs, the selector's
settings and every judgment; it is held with SQLite's exclusive lock while it is open, so the
server keeps what is its own -- accounts (token hashes), logins, leases, who judged what, second
judgments for agreement, undone judgments -- in a companion file ``NAME.serve.sqlite`` beside
``NAME.sqlite`` (WAL journal, ``synchronous=FULL``, one transaction per step).  The companion file
records the session's runs fingerprint and refuses another session.

:class:`ServerLock` is the one-server-per-session lock: ``fcntl.flock`` on ``NAME.serve.lock``,
which the kernel releases when the process dies, so a killed server never leaves it stuck.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._validation import InputError
from . import auth

__all__ = ["WebStore", "ServerLock", "companion_path", "lock_path", "WebError"]

_FORMAT = "pyterrier-noise judging server 1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS web_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts(name TEXT PRIMARY KEY, role TEXT NOT NULL CHECK(role IN ('assessor', 'organiser')),
    token_id TEXT NOT NULL UNIQUE, salt BLOB NOT NULL, hash BLOB NOT NULL, topics TEXT, created TEXT NOT NULL,
    revoked TEXT);
CREATE TABLE IF NOT EXISTS logins(key TEXT PRIMARY KEY, name TEXT NOT NULL, csrf TEXT NOT NULL, created TEXT NOT NULL,
    expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS leases(nonce TEXT PRIMARY KEY, qid TEXT NOT NULL, docno TEXT NOT NULL,
    kind TEXT NOT NULL CHECK(kind IN ('first', 'double')), assessor TEXT NOT NULL, redo_of INTEGER,
    leased REAL NOT NULL, expires REAL NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS leases_doc ON leases(qid, docno, kind) WHERE redo_of IS NULL;
CREATE TABLE IF NOT EXISTS judgments(id INTEGER PRIMARY KEY AUTOINCREMENT, qid TEXT NOT NULL, docno TEXT NOT NULL,
    kind TEXT NOT NULL CHECK(kind IN ('first', 'double')), assessor TEXT NOT NULL, label REAL NOT NULL,
    nonce TEXT NOT NULL UNIQUE, time TEXT NOT NULL, retracted TEXT, replaces INTEGER, sampled INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS judgments_doc ON judgments(qid, docno, kind);
CREATE INDEX IF NOT EXISTS judgments_by ON judgments(assessor, id);
"""


class WebError(InputError):
    """The judging server cannot do what was asked (a second server, another session's file...)."""


def companion_path(session: str | os.PathLike) -> Path:
    """``NAME.sqlite`` -> ``NAME.serve.sqlite``: the file of the server's own state."""
    p = Path(session)
    return p.with_name(p.stem + ".serve" + (p.suffix or ".sqlite"))


def lock_path(session: str | os.PathLike) -> Path:
    """``NAME.sqlite`` -> ``NAME.serve.lock``: the file the running server holds with ``flock``."""
    p = Path(session)
    return p.with_name(p.stem + ".serve.lock")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class ServerLock:
    """``fcntl.flock`` on ``NAME.serve.lock`` for the life of a server; a second server is refused
    with a sentence naming the process that holds it.  The kernel drops the lock when the holder
    dies (even by SIGKILL)."""

    def __init__(self, session: str | os.PathLike) -> None:
        import fcntl
        self.path = lock_path(session)
        fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            finally:
                os.close(fd)
            raise WebError(f"{session}: another judging server (process {holder}) is serving this session; "
                           f"two servers on one session would hand out the same documents -- stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)     # closing the descriptor drops the flock
            self._fd = None


class WebStore:
    """The server's tables (accounts, logins, leases, judgments) in ``NAME.serve.sqlite``.

    ``fingerprint`` (the session's runs fingerprint) is recorded when the file is created and must
    match afterwards.  Each method that changes something is one committed transaction.
    """

    def __init__(self, session: str | os.PathLike, fingerprint: str | None = None) -> None:
        self.path = companion_path(session)
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=5.0, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            with self.tx() as c:
                for stmt in _SCHEMA.strip().split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("INSERT OR IGNORE INTO web_meta(key, value) VALUES ('format', ?)", (_FORMAT,))
        except sqlite3.DatabaseError as exc:
            raise WebError(f"{self.path}: cannot use the judging server's file ({exc})") from None
        fmt = self.meta("format")
        if fmt != _FORMAT:
            raise WebError(f"{self.path}: not a judging server file (format {fmt!r})")
        if fingerprint is not None:
            stored = self.meta("session_fingerprint")
            if stored is None:
                self.set_meta("session_fingerprint", fingerprint)
            elif stored != fingerprint:
                raise WebError(f"{self.path}: belongs to another judging session (runs fingerprint {stored[:12]}..., "
                               f"this session's is {fingerprint[:12]}...); move it away or use the session it "
                               f"was made for")

    # -- plumbing --------------------------------------------------------------------------

    def tx(self) -> "_Tx":
        return _Tx(self.conn)

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM web_meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO web_meta(key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # -- accounts --------------------------------------------------------------------------

    def add_account(self, name: str, role: str = "assessor", topics: list[str] | None = None) -> str:
        """Create an account (or give a revoked one a new token); returns the token, shown once."""
        name = check_name(name)
        if role not in ("assessor", "organiser"):
            raise WebError(f"role: expected 'assessor' or 'organiser', got {role!r}")
        row = self.conn.execute("SELECT revoked FROM accounts WHERE name=?", (name,)).fetchone()
        if row is not None and row[0] is None:
            raise WebError(f"account {name!r} exists already; revoke it first to give it a new token")
        token, tid, secret = auth.new_token()
        salt, digest = auth.hash_secret(secret)
        topics_text = json.dumps(sorted(set(map(str, topics)))) if topics else None
        with self.tx() as c:
            c.execute("DELETE FROM accounts WHERE name=?", (name,))
            c.execute("INSERT INTO accounts(name, role, token_id, salt, hash, topics, created, revoked) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)", (name, role, tid, salt, digest, topics_text, now_iso()))
        return token

    def revoke(self, name: str) -> None:
        """Revoke an account: its token and its logins stop working, its leases are released."""
        row = self.conn.execute("SELECT revoked FROM accounts WHERE name=?", (name,)).fetchone()
        if row is None:
            raise WebError(f"no account named {name!r}")
        if row[0] is not None:
            raise WebError(f"account {name!r} is revoked already")
        with self.tx() as c:
            c.execute("UPDATE accounts SET revoked=? WHERE name=?", (now_iso(), name))
            c.execute("DELETE FROM logins WHERE name=?", (name,))
            c.execute("DELETE FROM leases WHERE assessor=? AND redo_of IS NULL", (name,))

    def accounts(self) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT name, role, topics, created, revoked FROM accounts ORDER BY role, name")
        return [{"name": n, "role": r, "topics": json.loads(t) if t else None, "created": c, "revoked": v}
                for n, r, t, c, v in rows]

    def account(self, name: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT name, role, topics, revoked FROM accounts WHERE name=?", (name,)).fetchone()
        if row is None or row[3] is not None:
            return None
        return {"name": row[0], "role": row[1], "topics": json.loads(row[2]) if row[2] else None}

    def token_record(self, token: str) -> tuple[str, bytes, bytes, str] | None:
        """``(name, salt, hash, secret)`` for a well-formed token of an active account, else None."""
        parsed = auth.parse_token(token)
        if parsed is None:
            return None
        row = self.conn.execute("SELECT name, salt, hash FROM accounts WHERE token_id=? AND revoked IS NULL",
                                (parsed[0],)).fetchone()
        return None if row is None else (row[0], row[1], row[2], parsed[1])

    # -- logins ----------------------------------------------------------------------------

    def start_login(self, name: str, hours: float = 12.0) -> tuple[str, str]:
        cookie, csrf = auth.new_login()
        with self.tx() as c:
            c.execute("DELETE FROM logins WHERE expires < ?", (time.time(),))
            c.execute("INSERT INTO logins(key, name, csrf, created, expires) VALUES (?, ?, ?, ?, ?)",
                      (auth.login_key(cookie), name, csrf, now_iso(), time.time() + hours * 3600))
        return cookie, csrf

    def login(self, cookie: str | None) -> tuple[dict[str, Any], str] | None:
        """``(account, csrf)`` of a live login cookie of an active account, else None."""
        if not cookie or len(cookie) > 200:
            return None
        row = self.conn.execute("SELECT name, csrf, expires FROM logins WHERE key=?",
                                (auth.login_key(cookie),)).fetchone()
        if row is None or row[2] < time.time():
            return None
        acc = self.account(row[0])
        return None if acc is None else (acc, row[1])

    def end_login(self, cookie: str | None) -> None:
        if cookie:
            with self.tx() as c:
                c.execute("DELETE FROM logins WHERE key=?", (auth.login_key(cookie),))


def check_name(name: str) -> str:
    """An account name: 1-64 letters, digits, '.', '_', '-' or '@'."""
    import re
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._@-]{1,64}", name):
        raise WebError(f"account name: expected 1-64 letters, digits, '.', '_', '-' or '@', got {name!r}")
    return name


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any error)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
