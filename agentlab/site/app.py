"""The skill site over HTTP (FastAPI): the routes of the contract, nothing else.

    GET  /api/skills                      every skill: name, description, input schema, limits
    GET  /api/skills/search?q=...&k=6     the k most relevant, with scores (on-demand discovery)
    GET  /api/skills/{name}               one skill's full metadata
    POST /api/skills/{name}/execute       {"arguments": {...}} with X-API-Key (and Idempotency-Key for a write)
    POST /mcp                             the same skills over MCP, streamable HTTP (agentlab/site/mcp_server.py)
                                          (stateless, JSON replies: GET and DELETE, which would hold a stream or a
                                          session, answer 405)

    GET  /                                the skill market (HTML, agentlab/site/pages.py)
    GET  /skills/{name}                   a skill's detail page
    GET  /logs?skill=&status=&key=&session=   the call log page
    GET  /keys                            the API keys (an operator's page), each active one with a revoke button
    POST /keys/{id}/revoke                revoke a key (an operator's, with the page's token): refused at once

A key on a GET is optional; when sent it must be valid, and the listing shows only what
it may call. ``Accept-Language: zh`` (or ``?lang=zh``) answers in Chinese. Every reply
carries ``X-Request-Id``; ``X-Session-Id`` (the agent's session) is logged with it when it is
one (:func:`agentlab.site.logs.clean_session`: a key sent in its place is dropped). The market
and a skill's page need no key; the call log, and a skill's recent calls, need an operator key
(HTTP Basic's password, or ``X-API-Key``), docs/site.md#pages. Pages are sent with a
Content-Security-Policy that allows no script.

Every request is bounded before it costs anything (docs/site.md#bounds): an execute's key is checked
before its body is read; a body larger than ``SkillSite.max_body`` is refused (413) from its
Content-Length or as it streams in; a body that trickles in slower than ``bodies.BODY_SECONDS`` is cut
off (408); no more than ``MAX_RUNNING`` executes (and MCP calls) hold worker threads at once, so
that a frozen store slows the calls that need it and never the pages.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from ..errors import make_error
from ..i18n import Lang, accepted_lang, joined, t
from . import pages
from .bodies import BODY_SECONDS, TooLarge, TooSlow, receive_body, replayed
from .execute import body as reply_body
from .keys import ApiKey, hash_key
from .logs import clean_session
from .service import HttpReply, SkillSite, bad_body

__all__ = ["MAX_RUNNING", "MAX_RUNNING_PER_KEY", "SLOT_WAIT", "body_refusal", "create_app"]

#: executes and MCP calls running at once; uvicorn's pool has 40 threads, the rest stay for pages and discovery
MAX_RUNNING = 24
#: of those, what one API key may hold, so that one tenant cannot take every slot
MAX_RUNNING_PER_KEY = 8
#: seconds a call waits for a slot (on the event loop, holding no thread) before it hears 503
SLOT_WAIT = 5.0


class _Slots:
    """Calls running now, in all and per key. Changed only on the event loop's one thread: no lock.

    A call waits for a slot (asleep on the loop, holding no thread) up to ``SLOT_WAIT`` seconds, then hears 503."""

    def __init__(self, total: int, per_key: int):
        self.total, self.per_key = total, per_key
        self.held: dict[str, int] = {}
        self.running = 0  # the calls holding a slot, in all

    def _free(self, who: str) -> bool:
        return self.running < self.total and self.held.get(who, 0) < self.per_key

    async def take(self, who: str, wait: float = 0.0) -> bool:
        deadline = time.monotonic() + wait
        while not self._free(who):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        self.held[who] = self.held.get(who, 0) + 1
        self.running += 1
        return True

    def give(self, who: str) -> None:
        self.running -= 1
        self.held[who] -= 1
        if not self.held[who]:
            del self.held[who]


def _lang(request: Any) -> Lang:
    scope = request.scope
    # the query is parsed only when there is one, the header read from the raw list: every execute asks
    asked = request.query_params.get("lang") if scope.get("query_string") else None
    if asked:
        return "zh" if asked.lower().startswith("zh") else "en"
    return accepted_lang(_header(scope, b"accept-language") or "")


def _session(request: Any) -> str | None:
    return clean_session(request.headers.get("x-session-id"))


def _presented_key(request: Any) -> str | None:
    """The key a request carries: ``X-API-Key``, ``Authorization: Bearer``, or HTTP Basic's password
    (a browser's way; the user name is free, and ``curl -u KEY:`` puts it in the name)."""
    key = request.headers.get("x-api-key")
    if key:
        return str(key)
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):  # not base64, not ASCII, not UTF-8: no key was presented
            return None
        return password or user or None
    return None


def _operator(site: SkillSite, request: Any) -> ApiKey | None:
    """The operator key the request carries, or None."""
    record = site.keys.check(_presented_key(request))
    return record if record is not None and record.operator else None


def _revoke_token(presented: str, key_id: str) -> str:
    """The keys page's proof that a revoke came from it: bound to the operator's own key and to the key revoked. A
    browser sends HTTP Basic's password with a form posted from any site; another site cannot know this."""
    return hmac.new(hash_key(presented).encode(), f"revoke:{key_id}".encode(), hashlib.sha256).hexdigest()[:32]


def create_app(site: SkillSite, *, mcp_hosts: Iterable[str] = ()) -> FastAPI:
    """The FastAPI app serving ``site``.

    Args:
        mcp_hosts: Host headers ``/mcp`` accepts besides localhost (``"site.example:*"``): the SDK
            refuses others, against DNS rebinding. The HTTP API itself does not look at Host.
    """
    from .mcp_server import LOCAL_HOSTS, SESSION_LANG, body_refused, mcp_manager, refused_body
    manager = mcp_manager(site, allowed_hosts=[*LOCAL_HOSTS, *mcp_hosts])

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with manager.run():  # the MCP endpoint answers only while its session manager runs
            yield

    app = _SiteApp(title="agentlab skill site", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.site = site


    slots = _Slots(MAX_RUNNING, MAX_RUNNING_PER_KEY)

    class _MCP:  # an ASGI app (not a function), so Starlette's Route passes the raw request through
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            request = Request(scope, receive)
            lang = _lang(request)
            early = _early_refusal(scope, site.max_body, lang, rpc=True)
            if early is not None:
                await early(scope, receive, send)
                return
            try:  # the body first, bounded, holding no slot: a caller that trickles costs a connection, no thread
                raw = await receive_body(receive, site.max_body, BODY_SECONDS)
            except (TooLarge, TooSlow) as exc:  # as JSON-RPC: an MCP client reads these, not the REST route's shape
                await body_refused(isinstance(exc, TooLarge), site.max_body, BODY_SECONDS, lang)(scope, receive, send)
                return
            refused = refused_body(raw, lang)
            if refused is not None:
                await refused(scope, receive, send)
                return
            who = _digest(_presented_key(request))
            if not await slots.take(who, SLOT_WAIT):
                await _busy(lang)(scope, receive, send)
                return
            token = SESSION_LANG.set(lang)  # the session's instructions in the caller's language
            try:
                await manager.handle_request(scope, replayed(raw, receive), send)
            finally:
                SESSION_LANG.reset(token)
                slots.give(who)

    def _known(api_key: str | None, state: dict) -> bool:
        try:
            record = site.keys.check(api_key) if api_key is not None else None
        except Exception:  # noqa: BLE001 - the keys cannot be read: execute says so (503) in its own words
            return True
        state["key_checked"] = (api_key, record)  # looked up once a request: execute and the access log reuse it
        return record is not None

    app.router.routes.append(Route("/mcp", endpoint=_MCP(), methods=["POST"]))

    @app.exception_handler(RequestValidationError)
    async def bad_query(request: Request, exc: RequestValidationError) -> JSONResponse:
        # the names of the parameters that were wrong, never the values sent
        names = sorted({".".join(str(p) for p in e.get("loc", ())[1:]) or "?" for e in exc.errors()})[:5]
        message = {lg: t("site.bad_query", lg, detail=joined(names, lg, "list")) for lg in ("en", "zh")}
        return JSONResponse(reply_body(None, make_error("BAD_REQUEST", message=message), _lang(request)), 400)

    @app.exception_handler(StarletteHTTPException)
    async def no_route(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own refusals (no such path, no such method) in the site's shape, like every other reply
        # by its key, so that only what the caller sent is redacted: the whole sentence was, and the site's own
        # /api/skills in it read "[path removed]"
        error = make_error("BAD_REQUEST", _key="site.no_route", method=request.method[:10], path=request.url.path[:100])
        return JSONResponse(reply_body(None, error, _lang(request)), exc.status_code, headers=dict(exc.headers or {}))

    def send(reply: HttpReply) -> JSONResponse:
        return _Reply(reply.body, status_code=reply.status, headers=dict(reply.headers))

    # the access log wraps everything as a plain ASGI app: Starlette's @app.middleware("http") ran each
    # request as a task with memory streams between it and the route, about a millisecond of CPU a request.
    # An execute meets it in front of FastAPI's own layers (_SiteApp, below, once the route exists)
    app.add_middleware(_AccessLog, site=site)

    def key_of(request: Request, lang: Lang) -> tuple[Any, JSONResponse | None]:
        api_key = request.headers.get("x-api-key")
        if api_key is None:
            return None, None
        record, refused = site.authorize(api_key, lang)
        return record, (send(refused) if refused is not None else None)

    @app.get("/api/skills")
    def list_skills(request: Request) -> Any:
        lang = _lang(request)
        key, refused = key_of(request, lang)
        return refused or site.listing(key, lang)

    @app.get("/api/skills/search")
    def search_skills(request: Request, q: str = "", k: int = 6) -> Any:
        lang = _lang(request)
        key, refused = key_of(request, lang)
        return refused or site.search(q[:500], max(1, min(k, 50)), key, lang)

    @app.get("/api/skills/{name}")
    def describe_skill(name: str, request: Request) -> Any:
        return send(site.describe(name, _lang(request)))

    async def execute_skill(request: Request) -> Any:
        name = request.path_params["name"]
        lang = _lang(request)
        early = _early_refusal(request.scope, site.max_body, lang)
        if early is not None:
            return early
        state = request.scope["state"]
        scope = request.scope  # the headers read from the one pass _header makes (Starlette's Headers scan per get)
        call = dict(api_key=_header(scope, b"x-api-key"), idempotency_key=_header(scope, b"idempotency-key"),
                    session_id=clean_session(_header(scope, b"x-session-id")), request_id=state["request_id"], lang=lang)
        seen = site.keys.cached(call["api_key"])  # a key seen before: no thread, no database
        if seen is not None:
            state["key_checked"] = (call["api_key"], seen)
        elif not await run_in_threadpool(_known, call["api_key"], state):  # a 401 costs a lookup, never a download
            return send(await run_in_threadpool(lambda: site.execute(name, b"", **call)))
        if "key_checked" in state:
            call["checked"] = state["key_checked"][1]
        try:  # the body first, bounded, holding no slot: a caller that trickles costs a connection, no thread
            raw = await receive_body(request.receive, site.max_body, BODY_SECONDS)
        except (TooLarge, TooSlow) as exc:
            return body_refusal(exc, site.max_body, lang)
        who = _digest(call["api_key"])
        if not await slots.take(who, SLOT_WAIT):
            return _busy(lang)
        try:
            if site.runs_on_loop(name, raw, call.get("checked")):  # a read: only the skill's code takes a thread
                return send(await site.execute_async(name, raw, **call))
            # agentlab's own worker (a pipe hand-off, kept on the loop's CPU), not anyio's pool: on 2 busy CPUs
            # the anyio hand-off cost a keyed write more CPU than its claim, its skill and its logs together.
            # The skill's handler runs in that worker too, its deadline kept by this loop (one hand-off, not two)
            return send(await site.execute_in_worker(name, raw, **call, alone=slots.running == 1))
        finally:
            slots.give(who)

    # a plain Starlette route: FastAPI's dependency solving (a path parameter, the request) cost more than
    # the rest of the route; the body is read by hand anyway (bounded, above)
    app.router.routes.append(Route("/api/skills/{name}/execute", endpoint=execute_skill, methods=["POST"]))
    app.front = _AccessLog(_Execute(execute_skill), site)

    def html(text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers={"Content-Security-Policy": pages.CSP,
                                                               "X-Content-Type-Options": "nosniff",
                                                               "Referrer-Policy": "no-referrer"})

    @app.get("/")
    def market(request: Request) -> Any:
        return html(pages.market_page(site, _lang(request)))

    @app.get("/skills/{name}")
    def detail(name: str, request: Request) -> Any:
        lang = _lang(request)
        skill = site.skills.get(name)
        if skill is None:
            return html(pages.missing_page(site, name[:100], lang), 404)
        operator = _operator(site, request) is not None
        page = html(pages.detail_page(site, skill, lang, operator=operator))
        if operator:  # its recent calls are other people's data: no copy in a shared cache
            page.headers["Cache-Control"] = "no-store"
        return page

    @app.get("/logs")
    def call_log(request: Request, skill: str = "", status: str = "", key: str = "", session: str = "") -> Any:
        lang = _lang(request)
        if _operator(site, request) is None:  # every tenant's calls: the operator's only
            page = html(pages.operator_page(lang), 401)
            page.headers["WWW-Authenticate"] = 'Basic realm="agentlab site operator", charset="UTF-8"'
            return page
        page = html(pages.log_page(site, lang, skill=skill[:100], status=status[:10], key=key[:100],
                                   session=session[:64]))
        page.headers["Cache-Control"] = "no-store"  # other people's data: no copy in a shared cache
        return page

    def needs_operator(lang: Lang, here: str) -> HTMLResponse:
        page = html(pages.operator_page(lang, here), 401)
        page.headers["WWW-Authenticate"] = 'Basic realm="agentlab site operator", charset="UTF-8"'
        return page

    def keys_html(request: Request, lang: Lang, status: int = 200, message: str | None = None) -> HTMLResponse:
        presented = str(_presented_key(request))
        page = html(pages.keys_page(site, lang, lambda key_id: _revoke_token(presented, key_id), message=message),
                    status)
        page.headers["Cache-Control"] = "no-store"
        return page

    @app.get("/keys")
    def key_list(request: Request) -> Any:
        lang = _lang(request)
        if _operator(site, request) is None:
            return needs_operator(lang, "/keys")
        return keys_html(request, lang)

    async def revoke_key(request: Request) -> Any:
        lang = _lang(request)
        key_id = str(request.path_params["key_id"])[:64]
        if await run_in_threadpool(_operator, site, request) is None:
            return needs_operator(lang, "/keys")
        try:  # a form of one field: bounded, parsed by hand (no multipart parser needed)
            raw = await receive_body(request.receive, 4096, BODY_SECONDS)
        except (TooLarge, TooSlow) as exc:
            return body_refusal(exc, 4096, lang)
        sent = parse_qs(raw.decode("latin-1")).get("token", [""])[0]
        if not hmac.compare_digest(sent.encode(), _revoke_token(str(_presented_key(request)), key_id).encode()):
            return await run_in_threadpool(keys_html, request, lang, 403, t("page.keys.forged", lang))
        await run_in_threadpool(site.keys.revoke, key_id)
        site.logs.write("audit", request_id=request.scope["state"]["request_id"], session_id=None, action="revoke",
                        key_id=key_id, keyless=False)
        return RedirectResponse(f"/keys?lang={lang}", status_code=303)

    app.router.routes.append(Route("/keys/{key_id}/revoke", endpoint=revoke_key, methods=["POST"]))

    return app


class _SiteApp(FastAPI):
    """The site's FastAPI app, with a front door for its hot path: ``POST /api/skills/{name}/execute`` goes from here
    to its route through the access log alone (``front``). FastAPI's own layers around its router (the server-error
    and telemetry middlewares, the body limit, the exception layer, the router's matching of every route before
    it) are bypassed: the route (a plain Starlette one that raises no HTTPException and needs no dependency) uses
    none of them, the access log answers an exception of its own in the site's shape, and the body is bounded by
    the route itself. What it answers is the same either way (tests/test_site_hot_path.py); every other request,
    and every other method on this path (405 in the site's shape), goes the whole way."""

    front: Any = None  # the access log around the execute route (set by create_app once the route exists)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        front = self.front
        if front is not None and scope["type"] == "http" and scope["method"] == "POST" \
                and not scope.get("root_path"):
            found = _EXECUTE.fullmatch(scope["path"])
            if found is not None:
                scope["app"] = self
                scope["path_params"] = {"name": found[1]}
                await front(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


class _Execute:
    """The execute route as a plain ASGI app (the front door's inner app)."""

    def __init__(self, route: Any):
        self.route = route

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        scope["endpoint"] = self.route
        response = await self.route(Request(scope, receive))
        await response(scope, receive, send)


class _AccessLog:
    """Every request's line in the access log (or the keyless log), and its ``X-Request-Id``, as a plain
    ASGI middleware. A request id is made here and kept in ``scope["state"]`` for the routes; an
    exception no route handled is logged with its stack and answered 500 in the site's shape."""

    def __init__(self, app: Any, site: SkillSite):
        self.app, self.site = app, site

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = os.urandom(8).hex()  # 16 hex digits, as uuid4().hex[:16] was, for a third of its cost
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        t0 = time.perf_counter()
        sent = {"status": 500, "started": False}
        tag = (b"x-request-id", request_id.encode())

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                sent["status"], sent["started"] = message["status"], True
                headers = [h for h in message.get("headers", ()) if h[0].lower() != b"x-request-id"]
                message = {**message, "headers": [*headers, tag]}
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            import traceback
            request = Request(scope)
            self.site.logs.write("error", request_id=request_id, session_id=_session(request), path=scope["path"],
                                 code="TOOL_ERROR", stack="".join(traceback.format_exception(exc)),
                                 keyless=self._keyless(scope))
            if sent["started"]:  # part of the reply is out: nothing sensible can follow it
                raise
            await JSONResponse(reply_body(None, make_error("TOOL_ERROR"), _lang(request)), status_code=500)(
                scope, receive, sending)
        # a request without a valid key goes to the keyless log: it can never push a tenant's history out
        self.site.logs.write("access", request_id=request_id, session_id=clean_session(_header(scope, b"x-session-id")),
                             method=scope["method"], path=scope["path"], status=sent["status"],
                             latency_ms=round((time.perf_counter() - t0) * 1000, 2), keyless=self._keyless(scope))

    def _keyless(self, scope: Any) -> bool:
        checked = scope["state"].get("key_checked")
        sent = _header(scope, b"x-api-key")
        # an X-API-Key is the key presented whenever it is not empty (_presented_key): the usual case, read
        # from the raw headers without building a request
        presented = sent if sent else _presented_key(Request(scope))
        if checked is not None and checked[0] == presented:  # the route looked this key up already
            return checked[1] is None
        try:
            return self.site.keys.check(presented) is None
        except Exception:  # noqa: BLE001 - the keys cannot be read: count it keyless, the safe side for the logs
            return True


#: the execute route's path, as Starlette's router matches ``/api/skills/{name}/execute`` (a name is one segment)
_EXECUTE = re.compile(r"/api/skills/([^/]+)/execute")


_REPLY = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class _Reply(JSONResponse):
    """A JSON reply rendered byte for byte as Starlette's, by one encoder made once (``json.dumps`` with
    options makes a new one per reply)."""

    def render(self, content: Any) -> bytes:
        return _REPLY.encode(content).encode("utf-8")


#: the headers an execute reads, each several times (route, access log): picked out in one pass, kept in the scope
_PICKED = frozenset({b"x-api-key", b"idempotency-key", b"x-session-id", b"accept-language", b"content-length",
                     b"content-type"})


def _header(scope: Any, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), as Starlette's ``Headers.get`` gives it."""
    if name in _PICKED:
        picked = scope.get("agentlab.headers")
        if picked is None:
            picked = {}
            for key, value in scope.get("headers", ()):
                key = key.lower()
                if key in _PICKED and key not in picked:
                    picked[key] = value.decode("latin-1")
            scope["agentlab.headers"] = picked
        return picked.get(name)
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _json(reply: HttpReply) -> JSONResponse:
    return JSONResponse(reply.body, status_code=reply.status, headers=dict(reply.headers))


def _early_refusal(scope: Any, limit: int, lang: Lang, *, rpc: bool = False) -> Any:
    """What can be refused from the headers alone: a declared body too large, a body that is not JSON. ``rpc``: said
    as JSON-RPC, for /mcp's clients (the REST reply told them to send {"arguments": ...})."""
    length = _header(scope, b"content-length") or ""
    if length and (not length.isdigit() or int(length) > limit):
        if rpc:
            from .mcp_server import body_refused
            return body_refused(True, limit, BODY_SECONDS, lang)
        return _json(bad_body("too_large", lang, limit))
    kind = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if kind and kind != "application/json" and not kind.endswith("+json"):
        reply = bad_body("content_type", lang, limit)
        if rpc:
            from .mcp_server import rpc_refusal
            return rpc_refusal(-32600, reply.body["error"]["message"], 415)
        return JSONResponse(reply.body, status_code=415)
    return None


def _busy(lang: Lang) -> JSONResponse:
    message = {lg: t("site.busy", lg) for lg in ("en", "zh")}
    return JSONResponse(reply_body(None, make_error("UNAVAILABLE", message=message, retry_after=2), lang),
                        status_code=503, headers={"Retry-After": "2"})


def body_refusal(exc: Exception, limit: int, lang: Lang) -> JSONResponse:
    """What a body refused by :func:`~agentlab.site.bodies.receive_body` is answered, in the site's words."""
    if isinstance(exc, TooLarge):
        return _json(bad_body("too_large", lang, limit))
    message = {lg: t("site.bad_body.slow", lg, limit=f"{BODY_SECONDS:g}") for lg in ("en", "zh")}
    return JSONResponse(reply_body(None, make_error("BAD_REQUEST", message=message), lang), status_code=408)


def _digest(api_key: str | None) -> str:
    """Who holds a slot: a hash of the presented key (the key itself is kept nowhere)."""
    return hashlib.sha256((api_key or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]


