"""Recovering a damaged session file walks the rowids that exist (issue 19): every row on a readable
page is copied, whatever the rowids, and the walk costs a number of queries that grows with the
rows and the damage, never with an assumed range of rowids; a file held by another process is an
error, not damage."""
from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from pyterrier_noise.selection import SessionError
from pyterrier_noise.selection.durable import readable_rows
from pyterrier_noise.selection.store import SCHEMA

COLUMNS = "seq, action, qid, docno, label, weight, time"


def _events_file(path, seqs):
    """A file with the session schema whose events table holds one row per seq; each row's time
    field is a tag (``T<seq>.``) written nowhere else in the file (the unique index holds qid and
    docno, not the time), so the page holding a row's record can be found by searching the bytes."""
    with closing(sqlite3.connect(str(path), isolation_level=None)) as c:
        c.execute("PRAGMA journal_mode=DELETE")
        for stmt in SCHEMA.strip().split(";"):
            if stmt.strip():
                c.execute(stmt)
        c.execute("BEGIN")
        c.executemany("INSERT INTO events(seq, action, qid, docno, label, weight, time) VALUES (?, ?, ?, ?, ?, ?, ?)",
                      [(s, "judge", f"q{s % 7}", f"doc-{s:08d}", float(s % 3), 1.0 / s, f"T{s:012d}.")
                       for s in seqs])
        c.execute("COMMIT")
        page = c.execute("PRAGMA page_size").fetchone()[0]
    return page


def _spoil_pages(path, page_size, tags):
    """Overwrite every page holding one of the tags with garbage; returns the seqs whose record was
    on a spoiled page (brute force over every row's tag)."""
    data = bytearray(path.read_bytes())
    pages = {bytes(data).index(t) // page_size for t in tags}
    for p in pages:
        data[p * page_size:(p + 1) * page_size] = (b"\xde\xad\xbe\xef" * (page_size // 4))
    path.write_bytes(bytes(data))
    return pages


def _expected(path, page_size, pages, seqs):
    data = path.read_bytes()
    out = []
    for s in seqs:
        at = data.find(f"T{s:012d}.".encode())
        if at >= 0 and at // page_size not in pages:
            out.append(s)
    return out


def _counted(conn):
    n = [0]
    conn.set_trace_callback(lambda _sql: n.__setitem__(0, n[0] + 1))
    return n


@pytest.mark.parametrize("seqs", [list(range(1, 5001)),                                   # a session's seqs
                                  [*range(1, 2001), *range(10 ** 12, 10 ** 12 + 2000)]])  # a huge gap
@pytest.mark.parametrize("where", [(1 / 4, 3 / 4), (1 / 2, 1.0)])   # two stretches; the middle and the end
def test_every_row_on_a_readable_page_is_read_and_the_walk_is_short(tmp_path, seqs, where):
    path = tmp_path / "s.sqlite"
    page = _events_file(path, seqs)
    # damage the pages holding the rows at these fractions of the table
    hit = [seqs[min(int(f * len(seqs)), len(seqs) - 1)] for f in where]
    pages = _spoil_pages(path, page, [f"T{s:012d}.".encode() for s in hit])
    want = _expected(path, page, pages, seqs)
    assert 0 < len(want) < len(seqs) - 2
    with closing(sqlite3.connect(str(path))) as c:
        with pytest.raises(sqlite3.DatabaseError):   # the plain read fails: the walk is needed
            c.execute(f"SELECT {COLUMNS} FROM events ORDER BY seq").fetchall()
        n = _counted(c)
        got = readable_rows(c, "events", COLUMNS, "seq")
    assert [r[0] for r in got] == want                      # in order, none lost, none invented
    assert all(r[6] == f"T{r[0]:012d}." and r[3] == f"doc-{r[0]:08d}" for r in got)
    # one point read per row found, plus the walk: pages of 512 rowids, a few dozen seeks per
    # damaged stretch and one probe per rowid jumped over: at most twice the stretch for consecutive
    # rowids, at most 2 x 4096 around a wide gap -- never the 10**12 rowids of the gap
    per_stretch = 2 * (len(seqs) - len(want)) if seqs[-1] == len(seqs) else 2 * 8 * 512
    assert n[0] <= len(want) + 2 * len(seqs) // 512 + 2 * (200 + per_stretch) + 20


def test_a_locked_file_is_an_error_not_damage(tmp_path):
    path = tmp_path / "s.sqlite"
    _events_file(path, range(1, 101))
    with closing(sqlite3.connect(str(path), isolation_level=None)) as holder:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("COMMIT")   # the lock is kept, as an open JudgingSession keeps it
        with closing(sqlite3.connect(str(path), timeout=0)) as c:
            with pytest.raises(SessionError, match="another process"):
                readable_rows(c, "events", COLUMNS, "seq")
        from pyterrier_noise.selection import JudgingSession
        with pytest.raises(SessionError, match="another process"):
            JudgingSession.recover(path, tmp_path / "new.sqlite")
    assert not (tmp_path / "new.sqlite").exists()
