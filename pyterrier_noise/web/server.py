"""What a running judging server holds: the lock, the judging session, the server's own file, the
dispatcher of leases and the collection to show.  :func:`open_server` opens them in order (the lock
first, so a second server is refused before it touches anything) and :meth:`ServerState.close`
releases them.

The two files are one whole: the server file records the session's id and counts its changes
(judgments, second judgments, undos); the session file records the server file's id and the same
count, in the same transaction as each judgment.  A start that finds the server file missing,
empty, made for another session, another server file, or an older copy of it (fewer changes than
the session has seen) refuses with a sentence; ``rebuild=True`` (``serve --rebuild-server-file``)
goes on and says what it cannot recover.
"""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .docs import Collection, open_collection
from .leases import PAIR, Dispatcher, parse_scale, format_label
from .store import ServerLock, WebError, WebStore, companion_path, sqlite_message

__all__ = ["ServeConfig", "ServerState", "open_server", "DEFAULT_LABELS"]

DEFAULT_LABELS = "0:not relevant,1:relevant"


@dataclass
class ServeConfig:
    """How to serve a session.

    Args:
        session: the session file (``JudgingSession``); created from ``runs`` and ``settings`` when absent.
        runs: the runs for a new session (anything ``read_runs`` reads); optional (checked) for an existing one.
        settings: the session's settings for a new one (``method``, ``p``, ``batch_size``, ...).
        docs, topics: what to show (see :func:`pyterrier_noise.web.open_collection`).
        labels: the label scale (``"0:not relevant,1:relevant"``); stored at the first start, and a later
            start must give the same scale or none.
        budget, stop, double, seed, lease_seconds: see :class:`pyterrier_noise.web.Dispatcher`.
        secure_cookies: mark cookies ``Secure`` (behind an https proxy).
        hosts: the ``Host`` names the server answers (a DNS-rebinding page names another and gets 421);
            default: ``localhost``, ``127.0.0.1`` and ``::1``; None: any.
        rebuild: go on with a missing, empty, foreign or older server file (the foreign file is moved
            aside as ``NAME.serve.sqlite.replaced-TIME``); :attr:`ServerState.rebuilt` says what was lost.
        ahead: propose the next round when an assessor would wait for the others (see :class:`Dispatcher`).
        access_log: a file to append one line per request to (method, path, status, milliseconds,
            account; never a token or cookie); None: the ``pyterrier_noise.web.access`` logger only.
        cheap_labels, score_runs, sample: cheap labels (what ``llm-judge`` writes), the runs whose scores
            the organiser's page estimates, and the design the gold sample was planned by (``calibrate
            --plan``'s ``design.tsv``; optional): read, checked and stored in the server file (replacing
            what was stored), so a restart without them keeps them (see :mod:`.estimates`).
    """
    session: str | os.PathLike
    runs: Any = None
    settings: dict[str, Any] = field(default_factory=dict)
    docs: Any = None
    topics: Any = None
    labels: str | None = None
    budget: int | None = None
    stop: Any = None
    double: float = 0.0
    seed: int = 0
    lease_seconds: float = 600.0
    secure_cookies: bool = False
    hosts: Any = ("localhost", "127.0.0.1", "::1")
    rebuild: bool = False
    access_log: str | os.PathLike | None = None
    ahead: bool = False
    cheap_labels: str | os.PathLike | None = None
    score_runs: Any = None
    sample: str | os.PathLike | None = None


@dataclass
class ServerState:
    config: ServeConfig
    lock: ServerLock
    store: WebStore
    dispatcher: Dispatcher
    collection: Collection
    rebuilt: str | None = None
    cheap: Any = None    #: the organiser's cheap labels, runs and design (:class:`.estimates.CheapInputs`) or None

    @property
    def session(self) -> Any:
        """The judging session (the dispatcher opens it again after a failed write)."""
        return self.dispatcher.session

    def close(self) -> None:
        """Checkpoint and close both files (no ``-wal`` file is left), then release the lock."""
        if self.store.conn is not None:
            try:
                self.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:   # pragma: no cover - closing checkpoints too
                pass
        for part in (self.store, self.dispatcher.session):
            try:
                part.close()
            except Exception:   # pragma: no cover - closing what is already closed
                pass
        self.lock.release()


def _scale(store: WebStore, labels: str | None) -> list[tuple[float, str]]:
    stored = store.meta("labels")
    if labels is None:
        return parse_scale(json.loads(stored) if stored else DEFAULT_LABELS)
    scale = parse_scale(labels)
    text = json.dumps([[v, n] for v, n in scale])
    if stored is None:
        store.set_meta("labels", text)
    elif [v for v, _ in parse_scale(json.loads(stored))] != [v for v, _ in scale]:
        old = ", ".join(format_label(v) for v, _ in parse_scale(json.loads(stored)))
        raise WebError(f"--labels: this session is judged on the scale {old}; a session keeps its scale "
                       f"(leave --labels out, or start a new session)")
    else:
        store.set_meta("labels", text)    # names may change
    return scale


def _check_writable(path: Path) -> None:
    """A session file marked read-only (no write permission) is said to be read-only, not "disk I/O error"."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not (mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(path, os.W_OK):
        raise WebError(f"{path}: the session file is read-only (mode {stat.filemode(mode)}); the server writes every "
                       f"judgment to it -- make it writable (chmod u+w {path}) or serve a copy")
    if not os.access(path.parent, os.W_OK):
        raise WebError(f"{path}: its directory {path.parent} is read-only; the server writes the session's journal "
                       f"and its own file there -- make it writable or serve a copy elsewhere")


def _moved_aside(store: WebStore) -> Path:
    aside = store.path.with_name(store.path.name + time.strftime(".replaced-%Y%m%dT%H%M%S"))
    store.close()
    for suffix in ("-wal", "-shm"):
        if Path(str(store.path) + suffix).exists():   # closing checkpointed it; what is left is not needed
            os.unlink(str(store.path) + suffix)
    os.replace(store.path, aside)
    return aside


_LOST = ("who made each of them, the second judgments, and the labels given again after an undo (the exported qrels "
         "carry the labels the session recorded)")


def _pair(session: Any, store: WebStore, rebuild: bool) -> tuple[WebStore, str | None]:
    """Check that ``store`` is the server file that served ``session`` (before the dispatcher repairs
    anything); with ``rebuild``, go on and say what is lost.  Returns the store to use and that sentence."""
    raw = session.note(PAIR)
    mine = json.loads(raw) if raw else None
    sid = store.meta("session_id")
    n = session.n_judged
    if sid is not None and sid != session.session_id:
        made = store.conn.execute("SELECT count(*) FROM judgments").fetchone()[0]
        msg = (f"{store.path}: belongs to another judging session (session id {sid[:12]}..., {made} judgments "
               f"through its server), not to {session.path} (id {session.session_id[:12]}..., {n} judged)")
        if not rebuild:
            raise WebError(f"{msg}; if the session file was replaced, emptied or recreated, restore it; otherwise "
                           f"{_HOW} (the other file is then moved aside, not deleted)")
        aside = _moved_aside(store)
        store = WebStore(session.path, fingerprint=session.fingerprint)
        return store, (f"{msg}: moved to {aside.name}; a new server file was started: no accounts (add them "
                       f"again); of the session's {n} judgments, {_LOST} are not known")
    if mine is None:
        return store, None                      # the first start of a server on this session
    if store.found in ("missing", "empty") or sid is None or store.server_id != mine.get("id"):
        msg = _not_the_one(session, store.path, store.found, mine)
        if not rebuild:
            raise WebError(f"{msg}; a fresh server file would lose who judged what -- {_HOW}")
        return store, (f"{msg}: going on with this file; of the session's {n} judgments, {_LOST} are not known"
                       + ("; add the accounts again" if not store.accounts() else ""))
    return store, None


_HOW = ("restore the server file from a backup (beside the session), or start with --rebuild-server-file to go on "
        "without what only it held")


def _not_the_one(session: Any, path: Path, found: str, mine: dict) -> str:
    what = {"missing": "is missing", "empty": "is empty (0 bytes)"}.get(
        found, "is not the server file that served this session (another file, made without it)")
    return (f"{path}: {what}, but the session {session.path} was served with server file {mine.get('id')} and has "
            f"{session.n_judged} judgments, {mine.get('changes', 0)} changes recorded by that server")


def _after_repair(session: Any, store: WebStore, dispatcher: Dispatcher, rebuild: bool) -> str | None:
    """The older-copy check (after the dispatcher attributed what the session committed just before a
    crash), then the pairing written to both files."""
    raw = session.note(PAIR)
    mine = json.loads(raw) if raw else None
    lost = None
    if mine is not None and store.server_id == mine.get("id") and store.changes < int(mine.get("changes", 0)):
        k = int(mine["changes"]) - store.changes
        msg = (f"{store.path}: is an older copy of the server file: it records {store.changes} changes, the session "
               f"{session.path} saw {mine['changes']} (its {session.n_judged} judgments included)")
        if not rebuild:
            raise WebError(f"{msg}; going on would lose who made the last {k} changes -- restore the newest copy of "
                           f"the server file, or start with --rebuild-server-file to go on without them")
        lost = f"{msg}: going on; of the last {k} changes (judgments, second judgments, undos), {_LOST} are lost"
    with store.tx() as c:
        for key, value in (("session_id", session.session_id), ("session_fingerprint", session.fingerprint)):
            c.execute("INSERT OR REPLACE INTO web_meta(key, value) VALUES (?, ?)", (key, value))
        if lost is not None:
            c.execute("INSERT OR REPLACE INTO web_meta(key, value) VALUES ('changes', ?)", (str(mine["changes"]),))
    dispatcher.write_pairing()
    return lost


def _read_cheap(config: ServeConfig) -> Any:
    """The cheap labels, runs and design given to this start (checked), or None."""
    if config.cheap_labels is None:
        if config.score_runs or config.sample is not None:
            raise WebError("--score-runs and --sample go with --cheap-labels (the cheap labels to estimate from)")
        return None
    from .estimates import CheapInputs
    return CheapInputs.read(config.cheap_labels, config.score_runs, config.sample)


def _stored_cheap(store: WebStore) -> Any:
    """The cheap labels, runs and design stored by an earlier start, or None."""
    stored = store.load_cheap()
    if stored is None:
        return None
    from .estimates import CheapInputs
    try:
        return CheapInputs.unpack(*stored)
    except Exception as exc:      # damaged blobs: a sentence, not a traceback
        raise WebError(f"{store.path}: the stored cheap labels cannot be read ({exc}); load them again with "
                       f"--cheap-labels FILE --score-runs RUN ...") from None


def open_server(config: ServeConfig) -> ServerState:
    """Take the server lock, open (or create) the session, the server's file, and the collection."""
    from ..selection import JudgingSession
    path = Path(config.session)
    if not path.parent.is_dir():
        raise WebError(f"{path}: the directory {path.parent} does not exist")
    if path.exists():
        _check_writable(path)
    lock = ServerLock(path)          # first: a second server is refused before it reads anything
    session = store = None
    try:
        collection = open_collection(config.docs, config.topics)
        cheap = _read_cheap(config)
        if not path.exists() and config.runs is None:
            raise WebError(f"{path}: no such session file; give the runs to create one")
        session = JudgingSession(path, runs=config.runs, **{k: v for k, v in config.settings.items() if v is not None})
        lock.adopt()
        raw, cp = session.note(PAIR), companion_path(path)
        if raw and not config.rebuild and (not cp.exists() or cp.stat().st_size == 0):   # refused before it is made
            raise WebError(f"{_not_the_one(session, cp, 'missing' if not cp.exists() else 'empty', json.loads(raw))}; "
                           f"a fresh server file would lose who judged what -- {_HOW}")
        store = WebStore(path)
        store, rebuilt = _pair(session, store, config.rebuild)
        if store.meta("session_fingerprint") not in (None, session.fingerprint):
            raise WebError(f"{store.path}: belongs to another judging session (runs fingerprint "
                           f"{store.meta('session_fingerprint')[:12]}..., this session's is {session.fingerprint[:12]}"
                           f"...); move it away or use the session it was made for")
        store.set_meta("topics", json.dumps([str(t) for t in session.selector.topics]))   # for --assign
        scale = _scale(store, config.labels)
        dispatcher = Dispatcher(session, store, scale, budget=config.budget, stop=config.stop, double=config.double,
                                seed=config.seed, lease_seconds=config.lease_seconds, ahead=config.ahead)
        lost = _after_repair(session, store, dispatcher, config.rebuild)
        rebuilt = "; ".join(x for x in (rebuilt, lost) if x) or None
        if cheap is not None:
            store.save_cheap(cheap.pack(), cheap.sources)
        else:
            cheap = _stored_cheap(store)
        return ServerState(config, lock, store, dispatcher, collection, rebuilt, cheap)
    except sqlite3.DatabaseError as exc:
        for part in (store, session):
            if part is not None:
                part.close()
        lock.release()
        raise WebError(sqlite_message(companion_path(path), "judging server's file", exc)) from None
    except BaseException:
        for part in (store, session):
            if part is not None:
                part.close()
        lock.release()
        raise

