"""What a running judging server holds: the lock, the judging session, the server's own file, the
dispatcher of leases and the collection to show.  :func:`open_server` opens them in order (the lock
first, so a second server is refused before it touches anything) and :meth:`ServerState.close`
releases them."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .docs import Collection, open_collection
from .leases import Dispatcher, parse_scale, _fmt
from .store import ServerLock, WebError, WebStore

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


@dataclass
class ServerState:
    config: ServeConfig
    lock: ServerLock
    session: Any
    store: WebStore
    dispatcher: Dispatcher
    collection: Collection

    def close(self) -> None:
        for part in (self.store, self.session):
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
        old = ", ".join(_fmt(v) for v, _ in parse_scale(json.loads(stored)))
        raise WebError(f"--labels: this session is judged on the scale {old}; a session keeps its scale "
                       f"(leave --labels out, or start a new session)")
    else:
        store.set_meta("labels", text)    # names may change
    return scale


def open_server(config: ServeConfig) -> ServerState:
    """Take the server lock, open (or create) the session, the server's file, and the collection."""
    from ..selection import JudgingSession
    path = Path(config.session)
    if not path.parent.is_dir():
        raise WebError(f"{path}: the directory {path.parent} does not exist")
    lock = ServerLock(path)          # first: a second server is refused before it reads anything
    session = store = None
    try:
        collection = open_collection(config.docs, config.topics)
        if not path.exists() and config.runs is None:
            raise WebError(f"{path}: no such session file; give the runs to create one")
        session = JudgingSession(path, runs=config.runs, **{k: v for k, v in config.settings.items() if v is not None})
        store = WebStore(path, fingerprint=session.fingerprint)
        scale = _scale(store, config.labels)
        dispatcher = Dispatcher(session, store, scale, budget=config.budget, stop=config.stop, double=config.double,
                                seed=config.seed, lease_seconds=config.lease_seconds)
        return ServerState(config, lock, session, store, dispatcher, collection)
    except BaseException:
        for part in (store, session):
            if part is not None:
                part.close()
        lock.release()
        raise
