"""Who judges what: leases over a judging session's queue, second judgments, undo, export.

The documents come from a :class:`pyterrier_noise.selection.JudgingSession` (Moffat, Webber and
Zobel 2007: pooling, Methods A, B, C) exactly as one judge at a terminal would take them: the
documents the session has served and not yet judged, in the order served, and a new batch of the
session's ``batch_size`` only when every served document is judged.  Several assessors share that
queue through *leases*: a request gets the first served document nobody holds (a lease that
expires after ``lease_seconds``; an expired lease passes to the next assessor who asks).  So with
the qrels as judge, several assessors judge the same documents, as a set, as one assessor would
(set ``batch_size`` to the number of assessors so that nobody waits for a new batch).

* Each judgment is recorded in the session (committed, with the pairing count of :mod:`.server`)
  before the next document is served, then attributed in the server's file; a crash or a failed
  write between the two is repaired at the next request or start (the lease says who judged).
  A write the session cannot make (disk full, I/O error) records nothing: the session is opened
  again from its records and the assessor is told to try again.
* Every form carries the lease's random ``nonce``: a replayed post finds no lease and is refused.
* Per-topic assignment: an assessor with topics takes documents of those topics only.
* Double judging: a seeded sample (``double`` = the fraction) of first judgments is leased again
  to another assessor; the pairs give Krippendorff's alpha per topic
  (:func:`pyterrier_noise.stats.krippendorff_alpha`).
* Undo: an assessor's last judgment is retracted and the document is leased back to them.  The
  session records a judgment once, so the selector has already used the first label to choose
  what followed; the new label replaces the first in the exported qrels and the log.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..selection import JudgingSession, SessionError, StopRule
from .store import WebError, WebStore, now_iso

__all__ = ["Dispatcher", "Task", "Refused", "parse_scale", "PAIR"]

FOREVER = 1e18
PAIR = "web_server"     # the session's note: the server file's id and count of changes
_log = logging.getLogger("pyterrier_noise.web")


class Refused(WebError):
    """A request the server refuses; ``status`` is the HTTP status (4xx) and nothing was written."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Task:
    """What an assessor sees next: a leased document (``state="judge"``), or ``"wait"`` / ``"done"``
    with a sentence (``reason``)."""
    state: str
    qid: str | None = None
    docno: str | None = None
    nonce: str | None = None
    kind: str | None = None
    redo: bool = False
    reason: str | None = None


def parse_scale(text: str | list) -> list[tuple[float, str]]:
    """The label scale ``"0:not relevant,1:relevant,2:highly relevant"`` (names optional) as
    ``[(label, name), ...]``; labels are distinct finite numbers."""
    items = text if isinstance(text, list) else [x for x in str(text).split(",") if x.strip()]
    out: list[tuple[float, str]] = []
    for item in items:
        if isinstance(item, (tuple, list)):
            value, name = item
        else:
            value, _, name = str(item).partition(":")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise WebError(f"labels: expected numbers such as 0,1,2 (optionally 0:name), got {item!r}") from None
        if not math.isfinite(v):
            raise WebError(f"labels: expected finite numbers, got {item!r}")
        out.append((v, str(name).strip() or format_label(v)))
    if len(out) < 2 or len({v for v, _ in out}) != len(out):
        raise WebError(f"labels: expected at least two distinct labels, got {text!r}")
    return out


def _natural(text: str) -> list:
    """Sort key putting topic '4' before '34'."""
    import re
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|\D+", str(text))]


def format_label(v: float) -> str:
    """A label as the scale writes it: ``2``, not ``2.0``."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


class Dispatcher:
    """Leases over ``session``'s queue for several assessors; state in ``store``.

    Args:
        session: the open judging session (one process holds it).
        store: the server's tables.
        scale: the label scale, :func:`parse_scale`.
        budget: the session's total of judgments (as ``pyterrier-noise judge --budget``); None: until
            no candidate is left or ``stop`` fires.
        stop: a :class:`~pyterrier_noise.selection.StopRule`, checked before a document is leased.
        double: the fraction of first judgments judged a second time by another assessor.
        seed: seeds the double-judging sample (a hash of seed, qid and docno: stable across restarts).
        lease_seconds: how long a lease keeps a document from the others.
        ahead: when every document of the round is with another assessor, let the selector propose the
            next round at once (without the labels still out) instead of making the assessor wait; the
            documents judged then differ from one assessor's at a terminal.
    """

    def __init__(self, session: JudgingSession, store: WebStore, scale: list[tuple[float, str]],
                 budget: int | None = None, stop: StopRule | None = None, double: float = 0.0, seed: int = 0,
                 lease_seconds: float = 600.0, ahead: bool = False) -> None:
        if not 0.0 <= float(double) <= 1.0:
            raise WebError(f"double: expected a fraction between 0 and 1, got {double!r}")
        if budget is not None and budget < 0:
            raise WebError(f"budget: expected a non-negative integer, got {budget!r}")
        if lease_seconds <= 0:
            raise WebError(f"lease_seconds: expected a positive number, got {lease_seconds!r}")
        self.session, self.store = session, store
        self.scale = scale
        self.labels = {v for v, _ in scale}
        self.budget, self.stop, self.double, self.seed = budget, stop, float(double), int(seed)
        self.lease_seconds = float(lease_seconds)
        self.ahead = bool(ahead)
        self.recovered = self.reconcile()

    # -- start ---------------------------------------------------------------------------

    def reconcile(self) -> int:
        """Attribute judgments the session committed while the server's file could not record them (a
        crash or a failed write between the two; their lease is still in the server's file) and drop
        leases of documents the session no longer serves; returns how many judgments were attributed."""
        leases = self.store.conn.execute(
            "SELECT nonce, qid, docno, assessor FROM leases WHERE kind='first' AND redo_of IS NULL").fetchall()
        if not leases:
            return 0
        pending = {(q, d) for q, d, _ in self.session.pending}
        todo = []
        for nonce, q, d, who in leases:
            done = self.session.handled(q, d)
            if done is not None:
                todo.append((nonce, q, d, who, done))
            elif (q, d) not in pending:
                todo.append((nonce, q, d, who, None))
        if not todo:
            return 0
        n = 0
        with self.store.tx() as c:
            for nonce, q, d, who, done in todo:
                if done is not None and done[1] == "judge" and \
                        c.execute("SELECT 1 FROM judgments WHERE nonce=?", (nonce,)).fetchone() is None:
                    c.execute("INSERT INTO judgments(qid, docno, kind, assessor, label, nonce, time, sampled) "
                              "VALUES (?, ?, 'first', ?, ?, ?, ?, ?)",
                              (q, d, who, float(done[2]), nonce, now_iso(), int(self.sampled(q, d))))
                    self.store.bump(c)
                    n += 1
                c.execute("DELETE FROM leases WHERE nonce=?", (nonce,))
        return n

    def write_pairing(self) -> None:
        """Record the server file's id and count of changes in the session file (after a change only the
        server's file holds: a second judgment or an undo).  A failure is logged: the server's file is
        then ahead of the session, which a start accepts."""
        try:
            self.session.note(PAIR, self._pairing())
        except Exception as exc:    # SessionError: the disk is full; the next judgment writes it again
            _log.warning("could not record the server's count of changes in the session file: %s", exc)

    def _pairing(self, ahead: int = 0) -> str:
        return json.dumps({"id": self.store.server_id, "changes": self.store.changes + ahead})

    def _usable(self) -> None:
        """Open the session again if a write of it failed (its selector may be ahead of its records)."""
        if not self.session.closed and self.session.write_error is None:
            return
        path = self.session.path
        try:
            self.session.close()
        except Exception:   # pragma: no cover
            pass
        try:
            self.session = JudgingSession(path, create=False)
        except Exception as exc:
            raise Refused(503, f"the session file cannot be opened again after a failed write ({exc}); nothing "
                               f"was recorded -- try again in a moment") from None
        _log.warning("%s: opened again after a failed write", path)

    def sampled(self, qid: str, docno: str) -> bool:
        """Whether ``(qid, docno)`` is in the double-judging sample (a seeded hash, so the same after a restart)."""
        if self.double <= 0.0:
            return False
        h = hashlib.sha256(f"{self.seed}\x00{qid}\x00{docno}".encode("utf-8")).digest()
        return int.from_bytes(h[:8], "big") / 2.0 ** 64 < self.double

    # -- handing out documents -----------------------------------------------------------

    def main_state(self) -> tuple[str, str | None]:
        """Whether new documents may be leased: ``("open", None)``, ``("wait", why)`` or
        ``("done", why)``; does not propose anything."""
        s = self.session
        if self.budget is not None:
            if s.n_judged >= self.budget:
                return "done", f"the budget of {self.budget} judgments is spent"
            live = self.store.conn.execute("SELECT count(*) FROM leases WHERE kind='first' AND redo_of IS NULL "
                                           "AND expires > ?", (time.time(),)).fetchone()[0]
            if s.n_judged + live >= self.budget:
                return "wait", "the last documents of the budget are with other assessors"
        if self.stop is not None:
            why = self.stop.reason(s.selector)
            if why is not None:
                return "done", f"the stopping rule fired: {why}"
        return "open", None

    def task(self, name: str, topics: list[str] | None = None) -> Task:
        """The next document for assessor ``name`` (leased to them), or why there is none."""
        self._usable()
        self.reconcile()     # a judgment the server's file could not record earlier: attributed now
        now = time.time()
        c = self.store.conn
        held = c.execute("SELECT nonce, qid, docno, kind, redo_of FROM leases WHERE assessor=? "
                         "ORDER BY (redo_of IS NULL), leased LIMIT 1", (name,)).fetchone()
        if held is not None:
            nonce, q, d, kind, redo_of = held
            if redo_of is None:
                with self.store.tx() as t:
                    t.execute("UPDATE leases SET expires=? WHERE nonce=?", (now + self.lease_seconds, nonce))
            return Task("judge", q, d, nonce, kind, redo_of is not None)
        allowed = set(topics) if topics else None
        state, why = self.main_state()
        busy = False        # every free document of the round is with another assessor
        if state == "open":
            if not self.session.pending and self.session.next() is None:
                state, why = "done", "no candidate document is left"
            else:
                got, other_topics = self._free_first(name, allowed, now)
                if got is not None:
                    return got
                state, busy = "wait", not other_topics
                why = ("the documents of this round are of topics not assigned to you" if other_topics else
                       "the other documents of this round are with other assessors; the next round is chosen "
                       "when they are judged")
        if self.double > 0.0:
            got = self._double_task(name, allowed, now)
            if got is not None:
                return got
        if busy and self.ahead:
            # a round ahead: the selector proposes the next round now, without the labels still out
            self.session.propose(len(self.session.pending) + int(self.session.config["batch_size"]))
            got, _ = self._free_first(name, allowed, now)
            if got is not None:
                return got
        return Task(state, reason=why)

    def _free_first(self, name: str, allowed: set[str] | None, now: float) -> tuple[Task | None, bool]:
        """Lease the first served document nobody holds (of ``allowed`` topics) to ``name``; or None, and
        whether documents of other topics were free."""
        leased = {(q, d): exp for q, d, exp in self.store.conn.execute(
            "SELECT qid, docno, expires FROM leases WHERE kind='first' AND redo_of IS NULL")}
        other_topics = False
        for q, d, _ in self.session.pending:
            exp = leased.get((q, d))
            if exp is not None and exp > now:
                continue
            if allowed is not None and q not in allowed:
                other_topics = True
                continue
            return self._lease(name, q, d, "first", now), other_topics
        return None, other_topics

    def _double_task(self, name: str, allowed: set[str] | None, now: float) -> Task | None:
        rows = self.store.conn.execute(
            "SELECT j.qid, j.docno FROM judgments j WHERE j.kind='first' AND j.sampled=1 AND j.retracted IS NULL "
            "AND j.assessor != ? AND NOT EXISTS (SELECT 1 FROM judgments k WHERE k.qid=j.qid AND k.docno=j.docno "
            "AND k.kind='double' AND k.retracted IS NULL) AND NOT EXISTS (SELECT 1 FROM leases l WHERE "
            "l.qid=j.qid AND l.docno=j.docno AND l.kind='double' AND (l.expires > ? OR l.redo_of IS NOT NULL)) "
            "ORDER BY j.id", (name, now)).fetchall()
        for q, d in rows:
            if allowed is None or q in allowed:
                return self._lease(name, q, d, "double", now)
        return None

    def _lease(self, name: str, q: str, d: str, kind: str, now: float) -> Task:
        nonce = secrets.token_urlsafe(18)
        with self.store.tx() as t:
            t.execute("DELETE FROM leases WHERE qid=? AND docno=? AND kind=? AND redo_of IS NULL", (q, d, kind))
            t.execute("INSERT INTO leases(nonce, qid, docno, kind, assessor, redo_of, leased, expires) "
                      "VALUES (?, ?, ?, ?, ?, NULL, ?, ?)", (nonce, q, d, kind, name, now, now + self.lease_seconds))
        return Task("judge", q, d, nonce, kind, False)

    # -- judging -------------------------------------------------------------------------

    def check_label(self, label: Any) -> float:
        try:
            v = float(label)
        except (TypeError, ValueError):
            v = math.nan
        if v not in self.labels:
            raise Refused(422, f"label {label!r} is not on this session's scale "
                               f"({', '.join(format_label(x) for x, _ in self.scale)}); nothing was recorded")
        return v

    def judge(self, name: str, nonce: str, qid: str, docno: str, label: Any) -> int:
        """Record ``label`` for the document leased to ``name`` under ``nonce``; returns the judgment's id.

        Refused (nothing written): a label off the scale (422), a nonce already used (409, a
        replayed request), no such lease (409), another assessor's lease (403), a form whose
        document is not the lease's (400)."""
        v = self.check_label(label)
        self._usable()
        self.reconcile()
        c = self.store.conn
        lease = c.execute("SELECT qid, docno, kind, assessor, redo_of FROM leases WHERE nonce=?",
                          (str(nonce),)).fetchone()
        if lease is None:
            if c.execute("SELECT 1 FROM judgments WHERE nonce=?", (str(nonce),)).fetchone() is not None:
                raise Refused(409, "this judgment was recorded already (the same request came twice); "
                                   "nothing was changed")
            raise Refused(409, "this document is not leased to you (the lease passed to another assessor or was "
                               "never given); nothing was recorded -- ask for the next document")
        q, d, kind, who, redo_of = lease
        if who != name:
            raise Refused(403, "this document is leased to another assessor; nothing was recorded")
        if (str(qid), str(docno)) != (q, d):
            raise Refused(400, f"the form names qid {qid!r} docno {docno!r}, but its lease is for qid {q!r} "
                               f"docno {d!r}; nothing was recorded")
        first = kind == "first" and redo_of is None
        if first:
            try:       # committed, with the pairing count, before anything else is served
                self.session.record(q, d, v, notes={PAIR: self._pairing(1)})
            except SessionError as exc:
                if self.session.write_error is not None:
                    self._usable()   # the selector took a step the file does not hold: open it again
                    raise Refused(503, f"the judgment could not be saved ({self.session.path}: "
                                       f"{exc.__cause__ or exc}); nothing was recorded -- try again in a moment "
                                       f"(if the disk is full, the organiser must free some space)") from None
                raise Refused(409, f"the session refused the judgment: {exc}") from None
        try:
            with self.store.tx() as t:
                cur = t.execute("INSERT INTO judgments(qid, docno, kind, assessor, label, nonce, time, replaces, "
                                "sampled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                (q, d, kind, name, v, str(nonce), now_iso(), redo_of, int(self.sampled(q, d))))
                t.execute("DELETE FROM leases WHERE nonce=?", (str(nonce),))
                self.store.bump(t)
        except sqlite3.Error as exc:
            if first:
                raise Refused(503, f"your judgment is saved in the session, but the server's file could not record "
                                   f"who made it ({self.store.path}: {exc}); it is attributed to you as soon as the "
                                   f"file can be written -- reload the page to go on") from None
            raise Refused(503, f"the judgment could not be saved ({self.store.path}: {exc}); nothing was recorded "
                               f"-- try again in a moment") from None
        if not first:
            self.write_pairing()
        return int(cur.lastrowid)

    def last_judgment(self, name: str) -> dict[str, Any] | None:
        row = self.store.conn.execute("SELECT id, qid, docno, kind, label, retracted FROM judgments WHERE assessor=? "
                                      "ORDER BY id DESC LIMIT 1", (name,)).fetchone()
        if row is None:
            return None
        return dict(zip(("id", "qid", "docno", "kind", "label", "retracted"), row))

    def undo(self, name: str, judgment: Any) -> None:
        """Retract ``name``'s last judgment (its id must be given: a replayed undo is refused) and lease
        the document back to them for a new label."""
        last = self.last_judgment(name)
        try:
            jid = int(judgment)
        except (TypeError, ValueError):
            raise Refused(400, f"undo: expected a judgment number, got {judgment!r}") from None
        if last is None or last["id"] != jid:
            raise Refused(409, "only your own last judgment can be undone; nothing was changed")
        if last["retracted"] is not None:
            raise Refused(409, "this judgment is undone already; judge the document again")
        now = time.time()
        try:
            with self.store.tx() as t:
                t.execute("UPDATE judgments SET retracted=? WHERE id=?", (now_iso(), jid))
                t.execute("INSERT INTO leases(nonce, qid, docno, kind, assessor, redo_of, leased, expires) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                          (secrets.token_urlsafe(18), last["qid"], last["docno"], last["kind"], name, jid, now, FOREVER))
                self.store.bump(t)
        except sqlite3.Error as exc:
            raise Refused(503, f"the undo could not be saved ({self.store.path}: {exc}); nothing was changed -- try "
                               f"again in a moment") from None
        self.write_pairing()

    # -- results -------------------------------------------------------------------------

    def qrels(self) -> pd.DataFrame:
        """The session's qrels (initial qrels first, then in judging order) with undone-and-judged-again
        labels replaced by the new label."""
        q = self.session.judged_qrels()
        rows = self.store.conn.execute(
            "SELECT qid, docno, label FROM judgments WHERE id IN (SELECT max(id) FROM judgments WHERE kind='first' "
            "AND retracted IS NULL GROUP BY qid, docno)").fetchall()
        if rows and len(q):
            eff = pd.DataFrame(rows, columns=["qid", "docno", "new"])
            m = q.merge(eff, on=["qid", "docno"], how="left")
            q = q.assign(label=np.where(m["new"].notna().to_numpy(), m["new"].to_numpy(dtype=float),
                                        q["label"].to_numpy(dtype=float)))
        return q

    def log(self) -> pd.DataFrame:
        """Every judgment made through the server: ``id, time, assessor, kind, qid, docno, label,
        retracted, replaces, double_sample``."""
        rows = self.store.conn.execute("SELECT id, time, assessor, kind, qid, docno, label, retracted, replaces, "
                                       "sampled FROM judgments ORDER BY id").fetchall()
        return pd.DataFrame(rows, columns=["id", "time", "assessor", "kind", "qid", "docno", "label", "retracted",
                                           "replaces", "double_sample"])

    def pairs(self) -> pd.DataFrame:
        """The double-judged documents: ``qid, docno, first, second`` (labels in force)."""
        rows = self.store.conn.execute(
            "SELECT a.qid, a.docno, a.label, b.label FROM judgments a JOIN judgments b ON a.qid=b.qid AND "
            "a.docno=b.docno WHERE a.kind='first' AND b.kind='double' AND a.retracted IS NULL AND b.retracted IS NULL "
            "AND a.id IN (SELECT max(id) FROM judgments WHERE kind='first' AND retracted IS NULL GROUP BY qid, docno) "
            "AND b.id IN (SELECT max(id) FROM judgments WHERE kind='double' AND retracted IS NULL "
            "GROUP BY qid, docno)").fetchall()
        return pd.DataFrame(rows, columns=["qid", "docno", "first", "second"])

    def agreement(self) -> pd.DataFrame:
        """Krippendorff's alpha per topic over the double-judged documents (Krippendorff 2011; nominal for a
        two-label scale, ordinal otherwise), with ``n`` pairs; the last row (``qid="all"``) pools the topics."""
        from ..stats import krippendorff_alpha
        pairs = self.pairs()
        level = "nominal" if len(self.scale) == 2 else "ordinal"
        cats = sorted(self.labels)
        out = []
        groups = sorted(pairs.groupby("qid"), key=lambda g: _natural(g[0])) + ([("all", pairs)] if len(pairs) else [])
        for qid, g in groups:
            data = g[["first", "second"]].to_numpy(dtype=float)
            try:
                alpha = krippendorff_alpha(data, level=level, categories=cats)
            except Exception:   # InputError: nothing pairable
                alpha = math.nan
            out.append((str(qid), len(g), float(alpha), float((data[:, 0] == data[:, 1]).mean())))
        return pd.DataFrame(out, columns=["qid", "n", "alpha", "agreement"])

    def progress(self) -> dict[str, pd.DataFrame]:
        """Per topic (``judged``, ``by_server``, ``double``, ``leased``) and per assessor
        (``first``, ``double``, ``undone``, ``leased``, ``last``)."""
        c = self.store.conn
        judged = self.session.judged_qrels(include_initial=False)
        topic = judged.groupby("qid").size().rename("judged").to_frame()
        by = pd.DataFrame(c.execute("SELECT qid, sum(kind='first' AND retracted IS NULL), "
                                    "sum(kind='double' AND retracted IS NULL) FROM judgments GROUP BY qid").fetchall(),
                          columns=["qid", "by_server", "double"]).set_index("qid")
        leased = pd.DataFrame(c.execute("SELECT qid, count(*) FROM leases WHERE expires > ? GROUP BY qid",
                                        (time.time(),)).fetchall(), columns=["qid", "leased"]).set_index("qid")
        topic = topic.join(by, how="outer").join(leased, how="outer").fillna(0).astype(int)
        topic = topic.reset_index().rename(columns={"index": "qid"})
        topic = topic.iloc[sorted(range(len(topic)), key=lambda i: _natural(topic["qid"].iat[i]))].reset_index(drop=True)
        people = pd.DataFrame(c.execute(
            "SELECT a.name, a.role, (SELECT count(*) FROM judgments j WHERE j.assessor=a.name AND j.kind='first' AND "
            "j.retracted IS NULL), (SELECT count(*) FROM judgments j WHERE j.assessor=a.name AND j.kind='double' AND "
            "j.retracted IS NULL), (SELECT count(*) FROM judgments j WHERE j.assessor=a.name AND j.retracted IS NOT "
            "NULL), (SELECT count(*) FROM leases l WHERE l.assessor=a.name), (SELECT max(time) FROM judgments j WHERE "
            "j.assessor=a.name), a.topics, a.revoked FROM accounts a ORDER BY a.role DESC, a.name").fetchall(),
            columns=["name", "role", "first", "double", "undone", "leased", "last", "topics", "revoked"])
        people["last"] = people["last"].fillna("")
        people["topics"] = [", ".join(sorted(json.loads(t), key=_natural)) if isinstance(t, str) and t else "all"
                            for t in people["topics"]]
        return {"topics": topic, "assessors": people}
