"""Keeping a judging session's file safe: atomic creation, integrity checks, online backups and
recovery of the readable judgments from a damaged file (SQLite's backup API)."""
from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._validation import InputError

__all__ = ["SessionError", "SessionLockedError"]


class SessionError(InputError):
    """A judging session cannot do what was asked (wrong file, other runs, a document not proposed...)."""


class SessionLockedError(SessionError):
    """Another process (or another open :class:`JudgingSession`) holds the session file."""


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(str(directory), os.O_RDONLY)
    except OSError:   # pragma: no cover - a platform without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:   # pragma: no cover
        pass
    finally:
        os.close(fd)


def _unlink_all(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(str(path) + suffix)
        except FileNotFoundError:
            pass


#: bytes a blob is written in (:func:`insert_blob`)
BLOB_CHUNK = 1 << 24


def insert_blob(conn: sqlite3.Connection, table: str, name: str, data: bytes) -> None:
    """Insert ``data`` as the blob ``name`` of ``table`` (columns ``name`` and ``data``): a zero-filled
    blob of its size, then written in pieces through SQLite's incremental blob I/O
    (``Connection.blobopen``, Python 3.11+).  Binding the
    bytes instead makes SQLite copy them twice (the bound value and the record), which for the
    alignment of a large run set (about 1 GB) was the peak of creating a session."""
    if not hasattr(conn, "blobopen") or len(data) <= BLOB_CHUNK:
        conn.execute(f"INSERT INTO {table}(name, data) VALUES (?, ?)", (name, data))
        return
    rowid = conn.execute(f"INSERT INTO {table}(name, data) VALUES (?, zeroblob(?))", (name, len(data))).lastrowid
    view = memoryview(data)
    with conn.blobopen(table, "data", rowid) as blob:
        for start in range(0, len(view), BLOB_CHUNK):
            blob.write(view[start:start + BLOB_CHUNK])


def publish(path: Path, write: Callable[[sqlite3.Connection], Any]) -> bool:
    """Build a complete SQLite file under a temporary name beside ``path`` (``write(conn)`` fills it),
    then publish it at ``path`` only if nothing is there yet (``os.link``: atomic and no-clobber).

    Returns True when this call published the file, False when another file was already at ``path``
    (this call's copy is then discarded).  Nothing but the temporary file is ever deleted.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.creating")
    try:
        # readable by its owner only (the umask may narrow it further): it holds the judgments
        os.close(os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA synchronous=FULL")
            write(conn)
        finally:
            conn.close()
        fd = os.open(str(tmp), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(str(tmp), str(path))
            published = True
        except FileExistsError:
            published = False
        except OSError:
            # a file system without hard links: check, then rename (a narrow window remains there)
            if path.exists():
                published = False
            else:
                os.replace(str(tmp), str(path))
                published = True
        _fsync_dir(path.parent)
        return published
    except sqlite3.Error as exc:
        raise SessionError(f"{path}: cannot create the session file ({exc})") from None
    except OSError as exc:
        raise SessionError(f"{path}: cannot create the session file ({exc.strerror or exc})") from None
    finally:
        _unlink_all(tmp)


def damaged_message(path: Path, detail: str) -> str:
    return (f"{path}: the session file is damaged ({detail}). Opening it again cannot repair it. Copy the "
            f"judgments that can still be read into a new session with `pyterrier-noise judge --session {path} "
            f"--recover NEW.sqlite` (JudgingSession.recover(path, new_path)), then judge in the new file; keep the "
            f"damaged file, and restore a backup (`judge --backup`) if you have one")


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` (every page, b-tree and record format): a damaged file is an error that
    says what to do, never a traceback."""
    try:
        rows = conn.execute("PRAGMA quick_check(5)").fetchall()
    except sqlite3.DatabaseError as exc:
        raise SessionError(damaged_message(path, str(exc))) from None
    problems = [str(r[0]) for r in rows if str(r[0]).lower() != "ok"]
    if problems:
        raise SessionError(damaged_message(path, "; ".join(problems)))


def backup(conn: sqlite3.Connection, source: Path, dest: Path) -> Path:
    """Copy the open session ``conn`` (with the judgments still in its -wal file) to ``dest``
    through SQLite's online backup API; ``dest`` must not exist (published atomically)."""
    dest = Path(dest)
    if dest.exists():
        raise SessionError(f"{dest}: exists already; a backup is written to a new file (choose another name)")
    if not dest.parent.is_dir():
        raise SessionError(f"{dest}: the directory {dest.parent} does not exist")
    if dest.resolve() == Path(source).resolve():
        raise SessionError(f"{dest}: is the session file itself")

    def write(target: sqlite3.Connection) -> None:
        conn.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")   # one self-contained file

    if not publish(dest, write):
        raise SessionError(f"{dest}: another process created this file meanwhile; nothing was overwritten")
    return dest


def _locked(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _query(conn: sqlite3.Connection, sql: str, args: tuple = ()) -> list[tuple] | None:
    """The rows of ``sql``, or None where the pages it reads are damaged; a file held by another
    process is an error, never damage (reading around a lock would skip judgments that exist)."""
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.DatabaseError as exc:
        if _locked(exc):
            raise SessionError("the session file is open in another process (SQLite lock); close it first, "
                               "then recover") from None
        return None


#: rowids read per step of the walk over a table's b-tree
_PAGE = 512
#: the largest rowid SQLite can store
_MAX_ROWID = 2 ** 63 - 1


def _existing_rowids(conn: sqlite3.Connection, table: str) -> list[int]:
    """The rowids of ``table`` that can be found, in order, walking its b-tree rather than a range.

    Pages of rowids are read with ``rowid > last ORDER BY rowid LIMIT n`` (a seek through the
    b-tree, then a walk along its leaves).  Where a seek hits a damaged page, the walk jumps ahead
    by doubling steps until a seek succeeds, then probes the rowids it jumped over one by one, so a
    readable row past a damaged page is still found; the rowids of the table's indexes (every
    UNIQUE constraint holds one) are added, which finds rows whose table pages cannot be walked.
    Cost: the number of rows plus, per damaged stretch, its length and a logarithm of the rowid
    range -- never a scan of an assumed range."""
    # the rowids its indexes hold (every UNIQUE constraint is one): rows whose table pages cannot
    # be walked are still found by them, and they bound the probes below
    indexed: set[int] = set()
    for (index,) in _query(conn, "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=?", (table,)) or []:
        got = _query(conn, f'SELECT rowid FROM {table} INDEXED BY "{index}"')
        if got is not None:
            indexed.update(r[0] for r in got)
    found = set(indexed)
    last = 0   # rowids of a session's tables start at 1
    limit = _PAGE
    while True:
        rows = _query(conn, f"SELECT rowid FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT {limit}", (last,))
        if rows is not None:
            found.update(r[0] for r in rows)
            if len(rows) < limit:
                break
            last = rows[-1][0]
            limit = min(2 * limit, _PAGE)
            continue
        if limit > 1:   # damage within the next ``limit`` rows: approach it row by row (doubling again)
            limit = 1
            continue
        # a damaged page after ``last``: jump ahead by doubling steps until a seek lands on readable pages
        step, landed = 1, None
        while last + step < _MAX_ROWID:
            got = _query(conn, f"SELECT rowid FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT 1", (last + step,))
            if got is not None:
                landed = got[0][0] if got else 0
                break
            step *= 2
        # the rowids jumped over, one point probe each: as many as the damaged stretch is long for
        # a session's consecutive rowids (the doubling overshoots it at most twice); over a wide gap
        # of rowids, the stretches just after ``last`` and just before the landing point (rows
        # further inside a gap are known from the indexes)
        span = 8 * _PAGE
        if landed is None:   # nothing after ``last`` could be sought
            hi = min(last + span, max(max(indexed, default=last), last))
            probes = range(last + 1, hi + 1)
        else:
            hi = last + step if landed == 0 else min(last + step, landed)
            probes = (range(last + 1, hi + 1) if hi - last <= 2 * span else
                      [*range(last + 1, last + span + 1), *range(hi - span + 1, hi + 1)])
        for rowid in probes:
            got = _query(conn, f"SELECT rowid FROM {table} WHERE rowid = ?", (rowid,))
            if got:
                found.add(got[0][0])
        if not landed:
            break
        found.add(landed)
        last = landed
    return sorted(found)


def readable_rows(conn: sqlite3.Connection, table: str, columns: str, order: str) -> list[tuple]:
    """The rows of ``table`` that can still be read: all at once, else one by one over the rowids
    that exist (:func:`_existing_rowids`), skipping rows whose pages are damaged; ordered by ``order``
    (a column of ``columns``, the first being the key: ``seq`` of the events, ``key`` / ``name``)."""
    rows = _query(conn, f"SELECT {columns} FROM {table} ORDER BY {order}")
    if rows is not None:
        return rows
    out = []
    for rowid in _existing_rowids(conn, table):
        got = _query(conn, f"SELECT {columns} FROM {table} WHERE rowid = ?", (rowid,))
        if got:
            out.append(got[0])
    return out


def recover(source: Path, dest: Path, schema: str, runs_blob: Callable[[], bytes] | None = None) -> dict[str, int]:
    """Copy what can still be read of a damaged session file into a new session file ``dest``.

    The settings, the runs (or ``runs_blob()`` when the stored copy is unreadable), the initial
    qrels and every readable judgment and bypass, in order (renumbered), are written to a new file
    published atomically.  Returns the counts: ``events`` copied, ``unreadable`` events skipped.
    """
    import hashlib
    source, dest = Path(source), Path(dest)
    if dest.exists():
        raise SessionError(f"{dest}: exists already; --recover writes a new session file (choose another name)")
    if not source.is_file():
        raise SessionError(f"{source}: no such session file")
    try:
        conn = sqlite3.connect(str(source), timeout=0.2, isolation_level=None)
    except sqlite3.Error as exc:
        raise SessionError(f"{source}: cannot be read at all ({exc}); restore a backup") from None
    try:
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            if _locked(exc):
                raise SessionError(f"{source}: the session is open in another process (SQLite lock); close it "
                                   f"first, then recover") from None
        meta = dict(readable_rows(conn, "meta", "key, value", "key"))
        if "config" not in meta or "run_names" not in meta:
            raise SessionError(f"{source}: the session's settings cannot be read; nothing can be recovered -- "
                               f"restore a backup, or start a new session with the exported judgments as initial qrels")
        blobs = dict(readable_rows(conn, "blobs", "name, data", "name"))
        runs = blobs.get("runs")
        if runs is not None and meta.get("runs_blob_sha256") not in (None, hashlib.sha256(runs).hexdigest()):
            runs = None
        if runs is None:
            if runs_blob is None:
                raise SessionError(f"{source}: the runs stored in the session cannot be read; give the runs the session "
                                   f"was created with (judge --recover NEW RUN...)")
            runs = runs_blob()
        if meta.get("initial_qrels_fingerprint") and "initial_qrels" not in blobs:
            raise SessionError(f"{source}: the session's initial qrels cannot be read; start a new session with "
                               f"your copy of them as initial qrels and the exported judgments")
        try:
            hi = conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
        except sqlite3.DatabaseError:
            hi = 0
        events = readable_rows(conn, "events", "seq, action, qid, docno, label, weight, time", "seq")
    finally:
        conn.close()
    import json as _json
    import secrets as _secrets
    # the stored alignment is copied only when intact and beside the stored runs (else it is rebuilt on open)
    aligned = blobs.get("aligned")
    if aligned is None or runs is not blobs.get("runs") or \
            meta.get("aligned_blob_sha256") != hashlib.sha256(aligned).hexdigest():
        aligned = None
        meta.pop("aligned_blob_sha256", None)
    meta = {k: v for k, v in meta.items() if k not in ("creation_token",)}
    meta["runs_blob_sha256"] = hashlib.sha256(runs).hexdigest()
    meta["creation_token"] = _secrets.token_hex(16)
    meta["recovered_from"] = _json.dumps({"file": str(source), "events": len(events)})

    def write(c: sqlite3.Connection) -> None:
        c.execute("BEGIN IMMEDIATE")
        for stmt in schema.strip().split(";"):
            if stmt.strip():
                c.execute(stmt)
        c.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(meta.items()))
        c.execute("INSERT INTO blobs(name, data) VALUES ('runs', ?)", (runs,))
        if aligned is not None:
            c.execute("INSERT INTO blobs(name, data) VALUES ('aligned', ?)", (aligned,))
        if "initial_qrels" in blobs:
            c.execute("INSERT INTO blobs(name, data) VALUES ('initial_qrels', ?)", (blobs["initial_qrels"],))
        c.executemany("INSERT OR IGNORE INTO events(seq, action, qid, docno, label, weight, time) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", [(i + 1, *row[1:]) for i, row in enumerate(events)])
        c.execute("COMMIT")

    if not publish(dest, write):
        raise SessionError(f"{dest}: another process created this file meanwhile; nothing was overwritten")
    return {"events": len(events), "unreadable": max(hi - len(events), 0)}
