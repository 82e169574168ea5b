"""The judging server's own state, in a SQLite file beside the judging session.

The session file (:class:`pyterrier_noise.selection.JudgingSession`) holds the runs, the selector's
settings and every judgment; it is held with SQLite's exclusive lock while it is open, so the
server keeps what is its own -- accounts (token hashes), logins, leases, who judged what, second
judgments for agreement, undone judgments -- in a companion file ``NAME.serve.sqlite`` beside
``NAME.sqlite`` (WAL journal, ``synchronous=FULL``, one transaction per step).  The companion file
records the session it serves (its runs fingerprint and its id) and a count of the changes it made;
the session file records the server file's id and the same count (:mod:`.server` checks the two
agree at every start).  Both files are created readable by their owner only (0600, narrowed further
by the umask).

:class:`ServerLock` is the one-server-per-session lock: ``fcntl.flock`` on the session file itself
(keyed by its device and inode, so a second server naming it through a symbolic or hard link is
refused too), or on ``NAME.serve.lock`` while a new session is being created; the kernel releases
it when the process dies, so a killed server never leaves it stuck.
"""
from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._validation import InputError
from ..selection.store import foreign_format
from .._vocab import WEB_ROLES
from . import auth

__all__ = ["WebStore", "ServerLock", "companion_path", "lock_path", "WebError", "create_private", "damaged"]

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
CREATE TABLE IF NOT EXISTS cheap_inputs(name TEXT PRIMARY KEY, source TEXT NOT NULL, loaded TEXT NOT NULL,
    data BLOB NOT NULL);
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


def create_private(path: str | os.PathLike) -> bool:
    """Create ``path`` empty with mode 0600 (the umask may narrow it) unless it exists; whether it was
    created.  SQLite gives its ``-wal`` and ``-shm`` files the database file's mode."""
    try:
        os.close(os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except FileExistsError:
        return False


def damaged(path: Path, what: str, detail: str) -> str:
    return (f"{path}: the {what} is damaged ({detail}); the server cannot start on it. Restore it from a "
            f"backup, or move it away")


_HELD: dict[tuple[int, int], int] = {}     # (device, inode) of the files this process holds: their holder


def _holder(st: os.stat_result) -> str:
    """The process holding a ``flock`` on the file ``st`` (from ``/proc/locks``), or ``"unknown"``."""
    if (st.st_dev, st.st_ino) in _HELD:
        return str(os.getpid())
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == want:
                    return parts[4]
    except OSError:   # pragma: no cover - not Linux
        pass
    return "unknown"


class ServerLock:
    """``fcntl.flock`` for the life of a server; a second server is refused with a sentence naming the
    process that holds it.  An existing session file is locked itself (by its device and inode: a
    link to it is the same file); a session not yet created is locked through ``NAME.serve.lock``
    (the name with symbolic links resolved) until :meth:`adopt` locks the new file.  The kernel drops
    the lock when the holder dies (even by SIGKILL)."""

    def __init__(self, session: str | os.PathLike) -> None:
        self.session = Path(session)
        self.path = lock_path(self.session.resolve() if self.session.parent.is_dir() else self.session)
        self._fds: list[int] = []
        self._keys: list[tuple[int, int]] = []
        if self.session.exists():
            self._lock(str(self.session), os.O_RDONLY)
        else:
            self._lock(str(self.path), os.O_RDWR | os.O_CREAT, pid=True)

    def _lock(self, name: str, flags: int, pid: bool = False) -> None:
        import fcntl
        try:
            st = os.stat(name)
        except FileNotFoundError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) in _HELD:
            # this process holds it: refused without opening (and closing) a descriptor of the file, which
            # for a session file would drop the SQLite locks of this process's connection to it
            self._refuse(str(os.getpid()))
        try:
            fd = os.open(name, flags, 0o600)
        except OSError as exc:
            raise WebError(f"{self.session}: cannot open {name} to lock it ({exc.strerror})") from None
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(st)
            if holder == "unknown" and pid:
                holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            self._refuse(holder)
        if pid:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode("ascii"))
        _HELD[key] = os.getpid()
        self._fds.append(fd)
        self._keys.append(key)

    def _refuse(self, holder: str) -> None:
        raise WebError(f"{self.session}: another judging server (process {holder}) is serving this session; "
                       f"two servers on one session would hand out the same documents -- stop it first") from None

    def adopt(self) -> None:
        """Lock the session file, once it exists (a new session, created under the name's lock), and
        remove the name's lock file: from now on every server locks the session file itself."""
        st = os.stat(self.session)
        if (st.st_dev, st.st_ino) in self._keys:
            return
        self._lock(str(self.session), os.O_RDONLY)
        fd, key = self._fds.pop(0), self._keys.pop(0)
        try:
            os.unlink(self.path)
        except OSError:   # pragma: no cover - removed by hand
            pass
        _HELD.pop(key, None)
        os.close(fd)

    def release(self) -> None:
        """Drop the locks (after the session is closed: closing a descriptor of the session file drops
        this process's SQLite locks on it)."""
        for fd, key in zip(self._fds, self._keys):
            _HELD.pop(key, None)
            os.close(fd)     # closing the descriptor drops the flock
        self._fds, self._keys = [], []


class WebStore:
    """The server's tables (accounts, logins, leases, judgments) in ``NAME.serve.sqlite``.

    ``fingerprint`` (the session's runs fingerprint) is recorded when the file is created and must
    match afterwards.  Each method that changes something is one committed transaction.
    """

    def __init__(self, session: str | os.PathLike, fingerprint: str | None = None) -> None:
        self.path = companion_path(session)
        self.conn: sqlite3.Connection | None = None
        #: what was found at the start: "missing", "empty" (0 bytes) or "file"
        self.found = "missing" if not self.path.exists() else "empty" if self.path.stat().st_size == 0 else "file"
        try:
            create_private(self.path)
            self.conn = sqlite3.connect(str(self.path), timeout=5.0, isolation_level=None)
            rows = self.conn.execute("PRAGMA quick_check(5)").fetchall()
            problems = [str(r[0]) for r in rows if str(r[0]).lower() != "ok"]
            if problems:
                raise sqlite3.DatabaseError("; ".join(problems))
            foreign = foreign_format(self.conn, "web_meta", _FORMAT)   # before anything that writes
            if foreign is not None:
                self.close()
                raise WebError(f"{self.path}: not a judging server file ({foreign}, expected format {_FORMAT!r}); "
                               f"the file was not changed")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            with self.tx() as c:
                for stmt in _SCHEMA.strip().split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("INSERT OR IGNORE INTO web_meta(key, value) VALUES ('format', ?)", (_FORMAT,))
                c.execute("INSERT OR IGNORE INTO web_meta(key, value) VALUES ('server_id', ?)", (secrets.token_hex(8),))
                c.execute("INSERT OR IGNORE INTO web_meta(key, value) VALUES ('created', ?)", (now_iso(),))
            fmt = self.meta("format")
        except OSError as exc:
            self.close()
            raise WebError(f"{self.path}: cannot create the judging server's file ({exc.strerror})") from None
        except sqlite3.DatabaseError as exc:
            self.close()
            raise WebError(sqlite_message(self.path, "judging server's file", exc)) from None
        if fmt != _FORMAT:
            self.close()
            raise WebError(f"{self.path}: not a judging server file (format {fmt!r})")
        if fingerprint is not None:
            stored = self.meta("session_fingerprint")
            if stored is None:
                self.set_meta("session_fingerprint", fingerprint)
            elif stored != fingerprint:
                self.close()
                raise WebError(f"{self.path}: belongs to another judging session (runs fingerprint {stored[:12]}..., "
                               f"this session's is {fingerprint[:12]}...); move it away or use the session it "
                               f"was made for")

    @property
    def server_id(self) -> str:
        """This server file's random id (made when the file is created)."""
        return str(self.meta("server_id"))

    @property
    def changes(self) -> int:
        """How many changes (judgments, second judgments, undos) this file has recorded."""
        return int(self.meta("changes") or 0)

    @staticmethod
    def bump(c: sqlite3.Connection) -> None:
        """Count one change, inside the caller's transaction."""
        c.execute("INSERT INTO web_meta(key, value) VALUES ('changes', '1') ON CONFLICT(key) DO UPDATE SET "
                  "value=CAST(CAST(value AS INTEGER) + 1 AS TEXT)")

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
            try:
                self.conn.close()
            finally:
                self.conn = None

    # -- cheap labels (the organiser's live estimates) -------------------------------------

    def save_cheap(self, blobs: dict[str, bytes], sources: dict[str, str]) -> None:
        """Store the cheap labels, runs and design (:class:`~pyterrier_noise.web.estimates.CheapInputs`),
        replacing what was stored, in one transaction."""
        with self.tx() as c:
            c.execute("DELETE FROM cheap_inputs")
            for name, data in blobs.items():
                c.execute("INSERT INTO cheap_inputs(name, source, loaded, data) VALUES (?, ?, ?, ?)",
                          (name, sources.get(name, ""), now_iso(), sqlite3.Binary(data)))

    def load_cheap(self) -> tuple[dict[str, bytes], dict[str, str]] | None:
        """The stored blobs and their sources, or None when nothing was loaded."""
        rows = self.conn.execute("SELECT name, source, data FROM cheap_inputs").fetchall()
        if not rows:
            return None
        return {n: bytes(d) for n, _, d in rows}, {n: s for n, s, _ in rows}

    # -- accounts --------------------------------------------------------------------------

    def add_account(self, name: str, role: str = "assessor", topics: list[str] | None = None) -> str:
        """Create an account (or give a revoked one a new token); returns the token, shown once.
        ``topics`` must be topics of the session (known once a server has started on it)."""
        name = check_name(name)
        if role not in WEB_ROLES:
            raise WebError(f"role: expected 'assessor' or 'organiser', got {role!r}")
        if topics is not None:
            topics = [str(t).strip() for t in topics]
            if not topics or not all(topics):
                raise WebError(f"topics: expected topic ids (qids) separated by commas, got {topics!r}; leave the "
                               f"topics out for an assessor of every topic")
            known = self.meta("topics")
            if known is not None:
                have = set(json.loads(known))
                bad = [t for t in topics if t not in have]
                if bad:
                    raise WebError(f"topics: {', '.join(bad[:5])} {'is not a topic' if len(bad) == 1 else 'are not topics'}"
                                   f" of this session (its topics: {', '.join(sorted(have, key=_natural)[:8])}"
                                   f"{' ...' if len(have) > 8 else ''}); the assessor would wait for ever")
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


def sqlite_message(path: Path, what: str, exc: BaseException) -> str:
    """A sentence for a SQLite error on ``path``: read-only, full, or damaged."""
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return (f"{path}: the {what} is read-only (SQLite: {text}); the server writes to it -- make it and its "
                f"directory writable (chmod u+w) or serve a copy")
    if "full" in low:
        return f"{path}: the disk holding the {what} is full (SQLite: {text}); free some space and start again"
    if "unable to open" in low or "locked" in low or "busy" in low:
        return f"{path}: cannot use the {what} (SQLite: {text})"
    return damaged(path, what, text)


def _natural(text: str) -> list:
    import re
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|\D+", str(text))]


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
