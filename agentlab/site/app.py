"""The skill site over HTTP (FastAPI): the routes of the contract, nothing else.

    GET  /api/skills                      every skill: name, description, input schema, limits
    GET  /api/skills/search?q=...&k=6     the k most relevant, with scores (on-demand discovery)
    GET  /api/skills/{name}               one skill's full metadata
    POST /api/skills/{name}/execute       {"arguments": {...}} with X-API-Key (and Idempotency-Key for a write)
    POST /mcp                             the same skills over MCP, streamable HTTP (agentlab/site/mcp_server.py)

    GET  /                                the skill market (HTML, agentlab/site/pages.py)
    GET  /skills/{name}                   a skill's detail page
    GET  /logs?skill=&status=&key=&session=   the call log page

A key on a GET is optional; when sent it must be valid, and the listing shows only what
it may call. ``Accept-Language: zh`` (or ``?lang=zh``) answers in Chinese. Every reply
carries ``X-Request-Id``; ``X-Session-Id`` (the agent's session) is logged with it when it is
one (:func:`agentlab.site.logs.clean_session`: a key sent in its place is dropped). The market
and a skill's page need no key; the call log, and a skill's recent calls, need an operator key
(HTTP Basic's password, or ``X-API-Key``), docs/site.md#pages. Pages are sent with a
Content-Security-Policy that allows no script.
"""
from __future__ import annotations

import base64
import binascii
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from ..i18n import Lang
from . import pages
from .keys import ApiKey
from .logs import clean_session
from .service import HttpReply, SkillSite

__all__ = ["create_app"]


def _lang(request: Any) -> Lang:
    asked = request.query_params.get("lang") or request.headers.get("accept-language", "")
    return "zh" if asked.lower().startswith("zh") else "en"


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
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or user or None
    return None


def _operator(site: SkillSite, request: Any) -> ApiKey | None:
    """The operator key the request carries, or None."""
    record = site.keys.check(_presented_key(request))
    return record if record is not None and record.operator else None


def create_app(site: SkillSite, *, mcp_hosts: Iterable[str] = ()) -> FastAPI:
    """The FastAPI app serving ``site``.

    Args:
        mcp_hosts: Host headers ``/mcp`` accepts besides localhost (``"site.example:*"``): the SDK
            refuses others, against DNS rebinding. The HTTP API itself does not look at Host.
    """
    from .mcp_server import LOCAL_HOSTS, mcp_manager
    manager = mcp_manager(site, allowed_hosts=[*LOCAL_HOSTS, *mcp_hosts])

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with manager.run():  # the MCP endpoint answers only while its session manager runs
            yield

    app = FastAPI(title="agentlab skill site", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.site = site

    class _MCP:  # an ASGI app (not a function), so Starlette's Route passes the raw request through
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    from starlette.routing import Route
    app.router.routes.append(Route("/mcp", endpoint=_MCP(), methods=["GET", "POST", "DELETE"]))

    def send(reply: HttpReply) -> JSONResponse:
        return JSONResponse(reply.body, status_code=reply.status, headers=dict(reply.headers))

    @app.middleware("http")
    async def access_log(request: Request, call_next: Any) -> Any:
        request.state.request_id = uuid.uuid4().hex[:16]
        t0 = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception as exc:  # noqa: BLE001 - a bug in the site itself: logged with its stack, never shown
            import traceback
            site.logs.write("error", request_id=request.state.request_id, session_id=_session(request),
                            path=request.url.path, code="TOOL_ERROR", stack="".join(traceback.format_exception(exc)))
            response = JSONResponse({"success": False, "result": None, "fallback_hint": None,
                                     "error": {"code": "TOOL_ERROR", "message": "internal error", "retryable": False}},
                                    status_code=500)
        response.headers["X-Request-Id"] = request.state.request_id
        site.logs.write("access", request_id=request.state.request_id, session_id=_session(request),
                        method=request.method, path=request.url.path, status=response.status_code,
                        latency_ms=round((time.perf_counter() - t0) * 1000, 2))
        return response

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

    @app.post("/api/skills/{name}/execute")
    async def execute_skill(name: str, request: Request) -> Any:
        raw = await request.body()
        reply = await run_in_threadpool(
            site.execute, name, raw, api_key=request.headers.get("x-api-key"),
            idempotency_key=request.headers.get("idempotency-key"), session_id=_session(request),
            request_id=request.state.request_id, lang=_lang(request))
        return send(reply)

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

    return app
