"""Judging in the browser: a small web server over a durable judging session, for several assessors.

``pyterrier-noise serve --session FILE.sqlite`` (or :func:`create_app`) serves the documents a
:class:`pyterrier_noise.selection.JudgingSession` chooses (Moffat, Webber and Zobel 2007) to
several assessors at once: leases, per-topic assignment, double judging with Krippendorff's alpha,
undo, an organiser's page with the runs' RBP ranges, tokens stored hashed, CSRF-protected forms,
request bodies bounded as they stream, login throttling, a ``Host`` allow-list, an access log, and a
server file paired with the session file (a lost or older one is refused, not silently replaced).
Needs the ``web`` extra (starlette, uvicorn, python-multipart, jinja2).
"""
from .docs import Collection, Topic, highlight, open_collection, read_documents, read_topics
from .leases import Dispatcher, Refused, Task, parse_scale
from .server import ServeConfig, ServerState, open_server
from .store import ServerLock, WebError, WebStore, companion_path


def create_app(config: "ServeConfig | None" = None, state: "ServerState | None" = None, close: bool = False):
    """The Starlette application (see :func:`pyterrier_noise.web.app.create_app`)."""
    from .app import create_app as _create
    return _create(config=config, state=state, close=close)


__all__ = ["Collection", "Topic", "highlight", "open_collection", "read_documents", "read_topics", "Dispatcher",
           "Refused", "Task", "parse_scale", "ServeConfig", "ServerState", "open_server", "ServerLock", "WebError",
           "WebStore", "companion_path", "create_app"]
