"""Judging in the browser: a small web server over a durable judging session, for several assessors.

``pyterrier-noise serve --session FILE.sqlite`` (or :func:`create_app`) serves the documents a
:class:`pyterrier_noise.selection.JudgingSession` chooses (Moffat, Webber and Zobel 2007) to
several assessors at once: leases, per-topic assignment, double judging with Krippendorff's alpha,
undo, an organiser's page with the runs' RBP ranges, tokens stored hashed, CSRF-protected forms,
request bodies bounded as they stream, login throttling, a ``Host`` allow-list, an access log, and a
server file paired with the session file (a lost or older one is refused, not silently replaced).
Needs the ``web`` extra (starlette, uvicorn, python-multipart, jinja2).
"""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "docs": "Collection Topic highlight open_collection read_documents read_topics",
    "leases": "Dispatcher Refused Task parse_scale",
    "server": "ServeConfig ServerState open_server",
    "store": "ServerLock WebError WebStore companion_path",
    "app": "create_app",
})
