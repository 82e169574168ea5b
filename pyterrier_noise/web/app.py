"""The judging server's web application (Starlette): the assessor's page, the organiser's page and
a small JSON API over the same operations.

Every page and API call needs a login (a token, :mod:`.auth`); the organiser's pages refuse
assessor logins; every post carries the login's CSRF token (a form field or the ``X-CSRF-Token``
header) and every judgment the lease's nonce (:mod:`.leases`).  Refusals are 4xx answers with a
sentence, and nothing is written.  Pages are rendered on the server with Jinja2's autoescaping
(documents are untrusted text) under a Content-Security-Policy that allows only the server's own
script and style sheet.

Handlers are ``async`` and do their (short, blocking) SQLite work on the event loop's thread, so
the session's connection is used by one thread and requests are handled one at a time.
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import math
import os
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

try:
    import jinja2
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import (HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response)
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(f"the judging server needs the 'web' extra (starlette, uvicorn, python-multipart, jinja2): "
                      f"pip install 'pyterrier-noise[web]' ({exc})") from None

from .. import __version__
from . import auth
from .docs import highlight, query_terms
from .leases import Refused, format_label
from .server import ServeConfig, ServerState, open_server

__all__ = ["create_app", "AccessLog", "Throttle"]

HERE = Path(__file__).resolve().parent
COOKIE, PRELOGIN = "pn_login", "pn_prelogin"
MAX_BODY = 16 * 1024
HEADERS = [(b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            b"connect-src 'self'; "
            b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
           (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
           (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store")]

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True,
                          undefined=jinja2.StrictUndefined)
_env.filters["num"] = lambda v, d=4: "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{d}f}"
_env.filters["label"] = lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else format_label(v)


def _page(name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(version=__version__, **ctx), status_code=status)


class _Guard:
    """Around every request: the ``Host`` allow-list (421), the body bound (413, counted as the body
    streams, chunked or not, before any handler or login check reads it: at most ``MAX_BODY`` bytes
    are ever held), the security headers, and one access-log line (method, path, status,
    milliseconds, account name; never a token, a cookie or a query string)."""

    def __init__(self, app: Any, hosts: Any = None, log: Any = None) -> None:
        self.app = app
        self.hosts = None if hosts is None else {_bare(h) for h in hosts}
        self.log = log

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = [0]

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        scope.setdefault("state", {})
        try:
            headers = dict(scope.get("headers") or [])
            host = _bare(headers.get(b"host", b"").decode("latin-1"))
            if self.hosts is not None and host not in self.hosts:
                await PlainTextResponse(f"this server does not answer to the host name {host[:64]!r} (a page of "
                                        f"another site may be trying to reach it); open it by its own address, "
                                        f"or the organiser may add this name with serve --allow-host",
                                        status_code=421)(scope, receive, send_with_headers)
                return
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
                await _too_large(scope, receive, send_with_headers)
                return
            body = bytearray()
            while True:
                message = await receive()
                if message["type"] != "http.request":     # the client went away
                    return
                body += message.get("body", b"")
                if len(body) > MAX_BODY:
                    await _too_large(scope, receive, send_with_headers)
                    return
                if not message.get("more_body", False):
                    break
            replayed = [False]

            async def replay() -> dict:
                if not replayed[0]:
                    replayed[0] = True
                    return {"type": "http.request", "body": bytes(body), "more_body": False}
                return await receive()

            await self.app(scope, replay, send_with_headers)
        finally:
            if self.log is not None:
                self.log(scope, status[0], (time.perf_counter() - t0) * 1000.0)


def _bare(host: str) -> str:
    """A ``Host`` header's name: lower-cased, without the port or IPv6 brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _too_large(scope: dict, receive: Any, send: Any) -> None:
    await PlainTextResponse(f"request body too large (the limit is {MAX_BODY // 1024} KiB)", status_code=413,
                            headers={"connection": "close"})(scope, receive, send)


class AccessLog:
    """One line per request -- ``time client "METHOD path" status ms account`` -- to the logger
    ``pyterrier_noise.web.access`` and, if given, appended to a file (created 0600)."""

    def __init__(self, path: Any = None) -> None:
        self.logger = logging.getLogger("pyterrier_noise.web.access")
        self.file = None
        if path is not None:
            fd = os.open(str(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self.file = os.fdopen(fd, "a", buffering=1, encoding="utf-8")

    def __call__(self, scope: dict, status: int, ms: float) -> None:
        client = scope.get("client") or ("-", 0)
        who = (scope.get("state") or {}).get("account") or "-"
        path = scope.get("path", "")
        line = (f'{datetime.now(timezone.utc).isoformat(timespec="milliseconds")} {client[0]} '
                f'"{scope.get("method", "-")} {_printable(path)}" {status} {ms:.1f} {who}')
        self.logger.info(line)
        if self.file is not None:
            try:
                self.file.write(line + "\n")
            except OSError:   # a full disk does not stop the server
                pass

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() and ch not in '" ' else f"%{ord(ch):02X}" for ch in text[:300])


class Throttle:
    """Login attempts limited per client address and per account id: after ``free`` failures in a row
    (the ``free``-th included) each failure doubles the wait (2 s, 4 s, 8 s, ... up to ``cap``); while waiting, an
    attempt is answered 429 with ``Retry-After`` and its token is not even looked at.  A success
    clears the account's count (not the address's); counts are forgotten after ``cap`` quiet seconds."""

    def __init__(self, free: int = 5, cap: float = 900.0, max_keys: int = 100_000) -> None:
        self.free, self.cap, self.max_keys = free, cap, max_keys
        self.state: dict[tuple[str, str], tuple[int, float, float]] = {}   # key -> (failures, until, last)

    def wait(self, keys: list[tuple[str, str]], now: float | None = None) -> float:
        """Seconds to wait before ``keys`` may try again (0: now)."""
        now = time.monotonic() if now is None else now
        return max([0.0] + [self.state[k][1] - now for k in keys if k in self.state])

    def failed(self, keys: list[tuple[str, str]], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if len(self.state) >= self.max_keys:
            self.state = {k: v for k, v in self.state.items() if now - v[2] < self.cap}
            if len(self.state) >= self.max_keys:   # still full: the oldest half goes
                keep = sorted(self.state.items(), key=lambda kv: kv[1][2])[self.max_keys // 2:]
                self.state = dict(keep)
        for k in keys:
            n, _, last = self.state.get(k, (0, 0.0, now))
            n = 1 if now - last > self.cap else n + 1
            until = now + min(2.0 ** (n - self.free + 1), self.cap) if n >= self.free else 0.0
            self.state[k] = (n, until, now)

    def succeeded(self, keys: list[tuple[str, str]]) -> None:
        for k in keys:
            if k[0] == "account":
                self.state.pop(k, None)


# -- helpers ------------------------------------------------------------------------------

def _state(request: Request) -> ServerState:
    return request.app.state.server


def _api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _refuse(request: Request, status: int, message: str) -> Response:
    if _api(request):
        return JSONResponse({"error": message, "status": status}, status_code=status)
    return _page("error.html", status=status, status_code=status, message=message)


def _who(request: Request) -> tuple[dict[str, Any], str] | None:
    return _state(request).store.login(request.cookies.get(COOKIE))


def _need(request: Request, role: str | None = None) -> tuple[dict[str, Any], str] | Response:
    """The login, or the refusal: 401 without one (a page redirects to the login form), 403 for an
    assessor on an organiser's page."""
    who = _who(request)
    if who is None:
        if request.method == "GET" and not _api(request):
            return RedirectResponse("/login", status_code=303)
        return _refuse(request, 401, "log in with your token first")
    if role == "organiser" and who[0]["role"] != "organiser":
        return _refuse(request, 403, "this page is for the organiser; an assessor's token does not open it")
    if role == "assessor" and who[0]["role"] != "assessor":
        return _refuse(request, 403, "this page is for assessors; log in with an assessor's token to judge")
    request.state.account = who[0]["name"]     # for the access log
    return who


async def _form(request: Request, csrf: str | None) -> dict[str, str] | Response:
    """The posted fields, after the CSRF check (a form field ``csrf`` or the ``X-CSRF-Token`` header)."""
    ctype = request.headers.get("content-type", "")
    try:
        if ctype.startswith("application/json"):
            data = await request.json()
            if not isinstance(data, dict):
                raise ValueError("not an object")
            fields = {str(k): str(v) for k, v in data.items()}
        else:
            form = await request.form(max_files=0, max_fields=20)
            fields = {k: v for k, v in form.items() if isinstance(v, str)}
    except Exception:
        return _refuse(request, 400, "the request body could not be read (expected a form or a JSON object)")
    sent = fields.get("csrf") or request.headers.get("x-csrf-token")
    if csrf is not None and not auth.same(sent, csrf):
        return _refuse(request, 403, "the form's CSRF token is missing or wrong (a forged or stale form); "
                                     "nothing was recorded -- reload the page")
    return fields


async def _posted(request: Request, role: str | None = None
                  ) -> tuple[tuple[dict[str, Any], str], dict[str, str]] | Response:
    """The login (:func:`_need`) and the posted fields (:func:`_form`, CSRF checked), or the refusal."""
    who = _need(request, role)
    if isinstance(who, Response):
        return who
    fields = await _form(request, who[1])
    return fields if isinstance(fields, Response) else (who, fields)


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int | None = None) -> None:
    response.set_cookie(name, value, max_age=max_age, httponly=True, samesite="strict", path="/",
                        secure=_state(request).config.secure_cookies or request.url.scheme == "https")


# -- login --------------------------------------------------------------------------------

async def home(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return RedirectResponse("/login", status_code=303)
    return RedirectResponse("/organiser" if who[0]["role"] == "organiser" else "/assess", status_code=303)


async def login_form(request: Request) -> Response:
    pre = auth.new_login()[1]
    resp = _page("login.html", pre=pre, error=None)
    _cookie(resp, request, PRELOGIN, pre, max_age=3600)
    return resp


def _throttle_keys(request: Request, token: str) -> list[tuple[str, str]]:
    keys = [("address", request.client.host if request.client else "-")]
    parsed = auth.parse_token(token)
    if parsed is not None:
        keys.append(("account", parsed[0]))
    return keys


def _throttled(request: Request, keys: list[tuple[str, str]]) -> Response | None:
    wait = request.app.state.throttle.wait(keys)
    if wait <= 0:
        return None
    secs = max(1, math.ceil(wait))
    msg = f"too many failed logins from this address or for this token; try again in {secs} s"
    if _api(request):
        resp: Response = JSONResponse({"error": msg, "status": 429}, status_code=429)
    else:
        resp = _page("error.html", status=429, status_code=429, message=msg)
    resp.headers["retry-after"] = str(secs)
    return resp


async def _check_token(request: Request, token: str) -> dict[str, Any] | Response | None:
    """The account of a valid token; None (counted as a failure); or the 429 answer while this client
    address or this token's account must wait (the token is then not looked at)."""
    token = token if isinstance(token, str) else ""
    keys = _throttle_keys(request, token)
    refused = _throttled(request, keys)
    if refused is not None:
        return refused
    rec = _state(request).store.token_record(token)
    acc = None
    if rec is not None:
        name, salt, digest, secret = rec
        ok = await asyncio.get_running_loop().run_in_executor(None, auth.verify_secret, secret, salt, digest)
        acc = _state(request).store.account(name) if ok else None
    throttle = request.app.state.throttle
    if acc is None:
        throttle.failed(keys)
        return None
    throttle.succeeded(keys)
    request.state.account = acc["name"]
    return acc


async def login(request: Request) -> Response:
    fields = await _form(request, None)
    if isinstance(fields, Response):
        return fields
    if not auth.same(fields.get("pre"), request.cookies.get(PRELOGIN)):
        return _refuse(request, 403, "the login form is stale or forged; open the login page again")
    acc = await _check_token(request, fields.get("token", ""))
    if isinstance(acc, Response):
        return acc
    if acc is None:
        pre = auth.new_login()[1]
        resp = _page("login.html", status=401, pre=pre, error="this token is not valid (or was revoked)")
        _cookie(resp, request, PRELOGIN, pre, max_age=3600)
        return resp
    cookie, _ = _state(request).store.start_login(acc["name"])
    resp = RedirectResponse("/organiser" if acc["role"] == "organiser" else "/assess", status_code=303)
    _cookie(resp, request, COOKIE, cookie)
    resp.delete_cookie(PRELOGIN, path="/")
    return resp


async def api_login(request: Request) -> Response:
    """``Authorization: Bearer TOKEN`` -> a login cookie and the CSRF token (for scripts)."""
    header = request.headers.get("authorization", "")
    acc = await _check_token(request, header[7:] if header.lower().startswith("bearer ") else "")
    if isinstance(acc, Response):
        return acc
    if acc is None:
        return JSONResponse({"error": "missing or invalid token", "status": 401}, status_code=401)
    cookie, csrf = _state(request).store.start_login(acc["name"])
    resp = JSONResponse({"name": acc["name"], "role": acc["role"], "csrf": csrf})
    _cookie(resp, request, COOKIE, cookie)
    return resp


async def logout(request: Request) -> Response:
    posted = await _posted(request)
    if isinstance(posted, Response):
        return posted
    who, fields = posted
    _state(request).store.end_login(request.cookies.get(COOKIE))
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(COOKIE, path="/")
    return resp


# -- the assessor -------------------------------------------------------------------------

def _counter(st: ServerState) -> dict[str, Any]:
    d = st.dispatcher
    n = st.session.n_judged
    left = None if d.budget is None else max(d.budget - n, 0)
    state, why = d.main_state()
    return {"judged": n, "budget": d.budget, "left": left, "main": state, "main_reason": why}


def _task_json(st: ServerState, name: str, topics: list[str] | None) -> dict[str, Any]:
    t = st.dispatcher.task(name, topics)
    out: dict[str, Any] = {"state": t.state, "reason": t.reason, **_counter(st)}
    if t.state == "judge":
        out.update(qid=t.qid, docno=t.docno, nonce=t.nonce, kind=t.kind, redo=t.redo)
    last = st.dispatcher.last_judgment(name)
    out["last"] = last
    return out


async def assess(request: Request) -> Response:
    who = _need(request, "assessor")
    if isinstance(who, Response):
        return who
    acc, csrf = who
    st = _state(request)
    task = _task_json(st, acc["name"], acc["topics"])
    ctx: dict[str, Any] = {"me": acc, "csrf": csrf, "task": task, "scale": st.dispatcher.scale,
                           "keys": _keys(st.dispatcher.scale), "topic": None, "pieces": None,
                           "names": {v: n for v, n in st.dispatcher.scale}}
    if task["state"] == "judge":
        topic = st.collection.topic(task["qid"])
        text = st.collection.document(task["docno"])
        ctx["topic"] = topic
        ctx["pieces"] = None if text is None else highlight(text, query_terms(topic))
    last = task["last"]
    ctx["can_undo"] = bool(last and last["retracted"] is None and not task.get("redo"))
    return _page("assess.html", **ctx)


def _keys(scale: list[tuple[float, str]]) -> list[str]:
    """Keyboard shortcut per label: the label itself when all labels are single digits, else 1, 2, ..."""
    if all(float(v).is_integer() and 0 <= v <= 9 for v, _ in scale):
        return [str(int(v)) for v, _ in scale]
    return [str(i + 1) for i in range(len(scale))]


async def _judge(request: Request) -> dict[str, Any] | Response:
    posted = await _posted(request, "assessor")
    if isinstance(posted, Response):
        return posted
    who, fields = posted
    try:
        jid = _state(request).dispatcher.judge(who[0]["name"], fields.get("nonce", ""), fields.get("qid", ""),
                                               fields.get("docno", ""), fields.get("label"))
    except Refused as exc:
        return _refuse(request, exc.status, str(exc))
    return {"recorded": jid}


async def _undo(request: Request) -> dict[str, Any] | Response:
    posted = await _posted(request, "assessor")
    if isinstance(posted, Response):
        return posted
    who, fields = posted
    try:
        _state(request).dispatcher.undo(who[0]["name"], fields.get("judgment"))
    except Refused as exc:
        return _refuse(request, exc.status, str(exc))
    return {"undone": int(fields["judgment"])}


def _as_form(action: Callable[[Request], Awaitable[dict[str, Any] | Response]]) -> Callable:
    """The assessor page's handler of ``action``: back to the page once it is done."""
    async def handler(request: Request) -> Response:
        out = await action(request)
        return out if isinstance(out, Response) else RedirectResponse("/assess", status_code=303)
    return handler


def _as_api(action: Callable[[Request], Awaitable[dict[str, Any] | Response]]) -> Callable:
    """The JSON API's handler of ``action``: its result as JSON."""
    async def handler(request: Request) -> Response:
        out = await action(request)
        return out if isinstance(out, Response) else JSONResponse(out)
    return handler


judge_form, api_judge = _as_form(_judge), _as_api(_judge)
undo_form, api_undo = _as_form(_undo), _as_api(_undo)


async def api_next(request: Request) -> Response:
    who = _need(request, "assessor")
    if isinstance(who, Response):
        return who
    return JSONResponse(_task_json(_state(request), who[0]["name"], who[0]["topics"]))


# -- the organiser ------------------------------------------------------------------------

def _overview(st: ServerState) -> dict[str, Any]:
    d = st.dispatcher
    ranges = st.session.system_bounds().sort_values(["base", "upper"], ascending=False, kind="stable")
    stop = None if d.stop is None else d.stop.reason(st.session.selector)
    prog = d.progress()
    return {"counter": _counter(st), "ranges": ranges.to_dict("records"), "stop": d.stop, "stop_reason": stop,
            "topics": prog["topics"].to_dict("records"), "assessors": prog["assessors"].to_dict("records"),
            "agreement": d.agreement().to_dict("records"), "pending": len(st.session.pending),
            "recovered": d.recovered, "rebuilt": st.rebuilt, "double": d.double, "config": st.session.config,
            "n_runs": len(st.session.run_names), "cheap": None if st.cheap is None else st.cheap.describe(),
            "corrections": int(st.store.conn.execute(
                "SELECT count(*) FROM judgments WHERE replaces IS NOT NULL AND retracted IS NULL").fetchone()[0])}


async def organiser(request: Request) -> Response:
    who = _need(request, "organiser")
    if isinstance(who, Response):
        return who
    return _page("organiser.html", me=who[0], csrf=who[1], o=_overview(_state(request)), new_token=None)


async def api_status(request: Request) -> Response:
    who = _need(request, "organiser")
    if isinstance(who, Response):
        return who
    o = _overview(_state(request))
    o["stop"] = None if o["stop"] is None else repr(o["stop"])
    return JSONResponse(_plain(o))


def _plain(x: Any) -> Any:
    """JSON-safe: NaN becomes null, numpy numbers plain numbers, anything else its text."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (bool, str)) or x is None:
        return x
    if hasattr(x, "item") and not isinstance(x, (list, dict)):
        x = x.item()
    if isinstance(x, float):
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, int):
        return x
    return str(x)


_NO_CHEAP = ("no cheap labels are loaded: start the server with --cheap-labels FILE --score-runs RUN ... "
             "[--sample design.tsv] (ServeConfig(cheap_labels=..., score_runs=..., sample=...)); they are kept "
             "in the server file from then on")


async def _estimates(st: ServerState, app: Any) -> dict[str, Any]:
    """The live estimates (:func:`.estimates.live_estimates`) for the judgments so far: computed in a
    worker thread (the event loop goes on handing out and recording judgments meanwhile), once per
    state of the judgments (their count and the server's count of changes, undos included), and
    shared by the requests that wait for the same state."""
    from .estimates import live_estimates
    if st.cheap is None:
        return {"loaded": None, "message": _NO_CHEAP, "systems": None, "n_gold": st.session.n_judged, "notes": []}
    key = (st.session.n_judged, st.store.changes, id(st.cheap))
    cache = app.state.estimates
    if cache.get("key") != key:
        fut = cache.get("pending") if cache.get("pending_key") == key else None
        if fut is None:
            gold = st.dispatcher.qrels()       # read here: the SQLite connection stays on the loop's thread
            fut = asyncio.get_running_loop().run_in_executor(None, live_estimates, st.cheap, gold)
            cache.update(pending=fut, pending_key=key)
        try:
            out = await fut
        except Exception as exc:   # a bug, said as a sentence on the page rather than a bare 500
            out = {"n_gold": st.session.n_judged, "systems": None, "notes": [], "design": None,
                   "message": f"the estimates failed: {type(exc).__name__}: {exc}"}
        if cache.get("pending_key") == key:
            cache.update(key=key, result=out, pending=None, pending_key=None)
    else:
        out = cache["result"]
    return {**out, "loaded": st.cheap.describe()}


def _estimate_tables(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Per measure, the runs (best PPI++ estimate first) with each method's estimate and interval."""
    sys_ = out.get("systems")
    if sys_ is None:
        return []
    tables = []
    for m in out["measures"]:
        rows: dict[str, dict[str, Any]] = {}
        for r in sys_.to_dict("records"):
            rows.setdefault(r["name"], {"name": r["name"]})[r["method"]] = (r[m], r[f"{m} lo"], r[f"{m} hi"])
        key = out["methods"][0]
        order = sorted(rows.values(), key=lambda r: -(r[key][0] if r[key][0] == r[key][0] else -math.inf))
        tables.append({"measure": m, "rows": order})
    return tables


async def estimates_page(request: Request) -> Response:
    who = _need(request, "organiser")
    if isinstance(who, Response):
        return who
    out = await _estimates(_state(request), request.app)
    return _page("estimates.html", me=who[0], csrf=who[1], e=out, tables=_estimate_tables(out))


async def api_estimates(request: Request) -> Response:
    who = _need(request, "organiser")
    if isinstance(who, Response):
        return who
    out = dict(await _estimates(_state(request), request.app))
    if out.get("systems") is not None:
        out["systems"] = out["systems"].to_dict("records")
    return JSONResponse(_plain(out))


async def export_qrels(request: Request) -> Response:
    who = _need(request, "organiser")
    if isinstance(who, Response):
        return who
    q = _state(request).dispatcher.qrels()
    lines = [f"{r.qid} 0 {r.docno} {format_label(r.label)}" for r in q.itertuples(index=False)]
    return PlainTextResponse("\n".join(lines) + ("\n" if lines else ""),
                             headers={"content-disposition": 'attachment; filename="judged-qrels.txt"'})


async def export_log(request: Request) -> Response:
    who = _need(request, "organiser")
    if isinstance(who, Response):
        return who
    buf = io.StringIO()
    log = _state(request).dispatcher.log()
    log["label"] = [format_label(v) for v in log["label"]]      # as the scale writes them: 2, not 2.0
    log.to_csv(buf, sep="\t", index=False)
    return PlainTextResponse(buf.getvalue(), media_type="text/tab-separated-values",
                             headers={"content-disposition": 'attachment; filename="judging-log.tsv"'})


async def add_account(request: Request) -> Response:
    posted = await _posted(request, "organiser")
    if isinstance(posted, Response):
        return posted
    who, fields = posted
    st = _state(request)
    topics = [t for t in fields.get("topics", "").replace(",", " ").split() if t]
    try:
        token = st.store.add_account(fields.get("name", ""), fields.get("role", "assessor"), topics or None)
    except Exception as exc:   # WebError: a sentence
        return _refuse(request, 400, str(exc))
    if _api(request):
        return JSONResponse({"name": fields["name"], "token": token})
    return _page("organiser.html", me=who[0], csrf=who[1], o=_overview(st), new_token=(fields["name"], token))


async def revoke_account(request: Request) -> Response:
    posted = await _posted(request, "organiser")
    if isinstance(posted, Response):
        return posted
    who, fields = posted
    name = fields.get("name", "")
    if name == who[0]["name"]:
        return _refuse(request, 400, "you cannot revoke your own account here; use serve --revoke-assessor")
    try:
        _state(request).store.revoke(name)
    except Exception as exc:
        return _refuse(request, 400, str(exc))
    return JSONResponse({"revoked": name}) if _api(request) else RedirectResponse("/organiser", status_code=303)


async def not_found(request: Request, exc: Exception) -> Response:
    return _refuse(request, 404, "no such page")


async def not_allowed(request: Request, exc: Exception) -> Response:
    return _refuse(request, 405, "this address does not take that method")


async def refused(request: Request, exc: Exception) -> Response:
    return _refuse(request, getattr(exc, "status", 400), str(exc))


async def storage_failed(request: Request, exc: Exception) -> Response:
    return _refuse(request, 503, f"the server could not read or write its files ({exc}); nothing more was "
                                 f"recorded -- try again in a moment")


# -- the application ----------------------------------------------------------------------

def create_app(config: ServeConfig | None = None, state: ServerState | None = None, close: bool = False) -> Any:
    """The Starlette application of the judging server.

    Give an open ``state`` (:func:`pyterrier_noise.web.open_server`; the command line does, so
    that errors come before the port is bound), or a ``config``: the application then opens the
    server at startup and closes it at shutdown (as Starlette's ``TestClient`` runs it).  With
    ``close=True`` a given ``state`` is closed at shutdown too (checkpointed, lock released), which
    is what SIGTERM and SIGINT reach: uvicorn runs the shutdown, then ends the process by the signal.
    """
    if (config is None) == (state is None):
        raise TypeError("create_app: give either config or state")
    cfg = config if config is not None else state.config
    log = AccessLog(cfg.access_log)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        own = state is None
        app.state.server = open_server(config) if own else state
        try:
            yield
        finally:
            if own or close:
                app.state.server.close()
            log.close()

    routes = [
        Route("/", home), Route("/login", login_form, methods=["GET"]), Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/assess", assess, methods=["GET"]), Route("/assess/judge", judge_form, methods=["POST"]),
        Route("/assess/undo", undo_form, methods=["POST"]),
        Route("/organiser", organiser, methods=["GET"]), Route("/organiser/qrels", export_qrels, methods=["GET"]),
        Route("/organiser/log", export_log, methods=["GET"]),
        Route("/organiser/estimates", estimates_page, methods=["GET"]),
        Route("/api/estimates", api_estimates, methods=["GET"]),
        Route("/organiser/accounts", add_account, methods=["POST"]),
        Route("/organiser/revoke", revoke_account, methods=["POST"]),
        Route("/api/login", api_login, methods=["POST"]), Route("/api/next", api_next, methods=["GET"]),
        Route("/api/judge", api_judge, methods=["POST"]), Route("/api/undo", api_undo, methods=["POST"]),
        Route("/api/status", api_status, methods=["GET"]), Route("/api/accounts", add_account, methods=["POST"]),
        Route("/api/revoke", revoke_account, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={
        404: not_found, 405: not_allowed, Refused: refused, sqlite3.Error: storage_failed})
    app.state.throttle = Throttle()
    app.state.estimates = {}
    if state is not None:
        app.state.server = state
    return _Guard(app, hosts=cfg.hosts, log=log)
