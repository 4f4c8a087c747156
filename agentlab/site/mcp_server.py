"""The site's skills as an MCP server (the official ``mcp`` SDK, 1.x low-level ``Server``), docs/site.md#mcp.

Every MCP call is one :meth:`SkillSite.execute`: the same key, limits, claims and logs as HTTP::

    tools/list   the skills the key may call: title, description (with its limit), inputSchema,
                 outputSchema, annotations (query: readOnlyHint; write: destructiveHint and
                 idempotentHint, since a repeat under the same key replays), and in ``_meta``
                 ``agentlab/idempotency`` (the fields a client builds its key from)
    tools/call   success  -> structuredContent = the result (it matches outputSchema), text = its JSON
                 refused  -> isError, text and structuredContent = {"status", "error", "fallback_hint"}
                             with the error in agentlab's shape (code, message, problems, hint, retryable)

The key travels as the ``X-API-Key`` header of the HTTP transport (or ``Authorization: Bearer``);
an in-process server is given one (``mcp_server(site, api_key=...)``). MCP has no idempotency key:
a write's key goes in the request's ``_meta`` as ``agentlab/idempotency_key``, and a write without
one is refused (428's error) rather than run unprotected.

Served over streamable HTTP at ``/mcp`` in the site's own app (``app.py`` runs the session
manager in its lifespan); only localhost Host headers are accepted unless ``allowed_hosts`` says more.
"""
from __future__ import annotations

import json
import logging
import traceback
import uuid
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from ..errors import make_error
from ..i18n import Lang, accepted_lang, said, t
from ..jsonutil import JsonReason
from .execute import body
from .logs import clean_session
from .service import HttpReply, SkillSite, bad_body
from .skills import Skill

__all__ = ["IDEMPOTENCY_META", "LOCAL_HOSTS", "SESSION_LANG", "LocalizedServer", "body_refused", "mcp_manager",
           "mcp_server", "mcp_tool", "refused_body", "rpc_refusal"]

#: the ``_meta`` field of a tools/call request that carries a write's idempotency key
IDEMPOTENCY_META = "agentlab/idempotency_key"
#: the ``_meta`` field of a listed tool that says which arguments make a repeat the same action
IDEMPOTENCY_FIELDS_META = "agentlab/idempotency"
#: Host headers the HTTP endpoint accepts by default (DNS rebinding protection)
LOCAL_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")


def rpc_refusal(code: int, message: str, status: int) -> Any:
    """A JSON-RPC error an MCP client reads, as an ASGI app: what this site's /mcp and the gateway refuse before the
    SDK, said in their own words (the site's REST reply told an MCP client to send {"arguments": ...})."""
    from starlette.responses import JSONResponse
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status_code=status)


def body_refused(too_large: bool, limit: int, seconds: float, lang: Lang) -> Any:
    """The refusal of a body past its size (413) or its time (408), as JSON-RPC."""
    if too_large:
        return rpc_refusal(-32600, t("mcp.too_large", lang, limit=limit), 413)
    return rpc_refusal(-32600, t("site.bad_body.slow", lang, limit=f"{seconds:g}"), 408)


def refused_body(raw: bytes, lang: Lang) -> Any | None:
    """The refusal of an MCP request body the SDK would answer in its own English (or worse), as an ASGI app; None
    for a body it can read. Not UTF-8: the SDK failed with -32603 and a stack on the server's terminal. Not JSON: its
    "Parse error" quoted the decoder. Not a JSON-RPC message: a pydantic dump of eleven validation errors, the body
    echoed, and a link. Each is now JSON-RPC's own code with one sentence in ``lang``."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return rpc_refusal(-32700, t("mcp.not_utf8", lang), 400)
    try:
        message = json.loads(raw)  # bytes, as the SDK reads them: a byte-order mark is no error
    except json.JSONDecodeError as exc:
        return rpc_refusal(-32700, t("mcp.not_json", lang, detail=said(JsonReason.of(exc), lang)), 400)
    except RecursionError:
        return rpc_refusal(-32700, t("mcp.not_json", lang, detail=t("json.too_deep", lang)), 400)
    try:  # the SDK's own reading of a message, its refusal said here: it answered with a dump that echoed the body
        types.JSONRPCMessage.model_validate(message)
    except ValueError:  # (pydantic's ValidationError is one)
        return rpc_refusal(-32600, t("mcp.not_request", lang), 400)
    return None


def mcp_tool(skill: Skill, lang: Lang = "en") -> types.Tool:
    """A skill's metadata as an MCP tool definition."""
    meta = skill.meta
    writes = meta.writes
    annotations = types.ToolAnnotations(
        title=meta.text("display_name", lang), readOnlyHint=not writes,
        # a write cannot be taken back (a refund, a message sent), and under one key it runs once
        destructiveHint=True if writes else None, idempotentHint=True if writes else None, openWorldHint=False)
    extra = {IDEMPOTENCY_FIELDS_META: {"fields": list(meta.idempotency_fields), "scope": meta.idempotency_scope}} \
        if writes else None
    return types.Tool(name=skill.name, title=meta.text("display_name", lang),
                      description=meta.text("description", lang) + t("mcp.limit", lang, n=meta.per_minute),
                      inputSchema=dict(meta.input_schema), outputSchema=dict(meta.output_schema),
                      annotations=annotations, _meta=extra)


class _BoundedArgs(logging.Filter):
    """Cut what the SDK logs from a request (a 900 KB tool name it warns about): output is not a place a
    caller may fill."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(a[:200] + "..." if isinstance(a, str) and len(a) > 200 else a for a in record.args)
        return True


for _name in ("mcp.server.lowlevel.server", "mcp.server.streamable_http", "mcp.server.streamable_http_manager"):
    logging.getLogger(_name).addFilter(_BoundedArgs())


#: the language of the HTTP request that opens an MCP session (its Accept-Language), set by the endpoint around the
#: session manager's handling of it: the session's task is started there and inherits it
SESSION_LANG: ContextVar[Lang | None] = ContextVar("agentlab_mcp_session_lang", default=None)


class LocalizedServer(Server):
    """An MCP server whose ``instructions`` (a client shows them, the model reads them) are the catalogue's ``key``,
    said in the language of the request that opened the session (:data:`SESSION_LANG`), else ``lang``. They
    were an English sentence in the code, the same for a Chinese client."""

    def __init__(self, name: str, key: str, lang: Lang = "en"):
        super().__init__(name, instructions=t(key, lang))
        self._key, self._lang = key, lang

    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        made = super().create_initialization_options(*args, **kwargs)
        return made.model_copy(update={"instructions": t(self._key, SESSION_LANG.get() or self._lang)})


def mcp_server(site: SkillSite, *, api_key: str | None = None, lang: Lang = "en") -> Server:
    """An MCP server for ``site``. ``api_key``: the key of an in-process caller; over HTTP the header's."""
    server: Server = LocalizedServer("agentlab-skill-site", "site.mcp_instructions", lang)

    def caller() -> tuple[str | None, str | None, Lang]:
        """The API key, the session id and the language of the current request."""
        request = server.request_context.request
        if request is None or not hasattr(request, "headers"):
            return api_key, None, lang
        headers = request.headers
        key = headers.get("x-api-key")
        if key is None and headers.get("authorization", "").lower().startswith("bearer "):
            key = headers["authorization"][7:].strip()
        asked = accepted_lang(headers.get("accept-language", ""), lang)
        # the session id is checked as over HTTP: a key sent in its place is dropped, never logged
        return key or api_key, clean_session(headers.get("x-session-id")), asked

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        key, _, lg = caller()
        record = None
        if key is not None:
            record, refused = site.authorize(key, lg)
            if refused is not None:
                raise ValueError(refused.body["error"]["message"])
        return [mcp_tool(s, lg) for s in site.visible(record)]

    @server.call_tool(validate_input=False)  # the site validates, and answers in agentlab's shape
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        key, session, lg = caller()
        meta = server.request_context.meta
        idem = (meta.model_extra or {}).get(IDEMPOTENCY_META) if meta is not None else None
        try:
            raw = json.dumps({"arguments": arguments}).encode("utf-8")
        except (ValueError, TypeError, RecursionError):  # the caller's arguments cannot be JSON: its mistake
            return call_result(bad_body("not_json", lg, site.max_body))
        try:
            reply = await anyio.to_thread.run_sync(lambda: site.execute(
                name, raw, api_key=key, idempotency_key=idem if isinstance(idem, str) else None,
                session_id=session, lang=lg, key_in="meta"))
        except Exception:  # noqa: BLE001 - the site's own bug: logged with its stack, the client hears a sentence
            site.logs.write("error", request_id=uuid.uuid4().hex[:16], session_id=session, skill=name[:200], status=500,
                            code="TOOL_ERROR", stack=traceback.format_exc())
            reply = HttpReply(500, body(None, make_error("TOOL_ERROR"), lg))
        return call_result(reply)

    return server


def call_result(reply: HttpReply) -> types.CallToolResult:
    """One site reply as an MCP tool result; ``_meta`` says whether it was replayed and its request id."""
    meta = {"agentlab/replayed": reply.headers.get("Idempotent-Replayed") == "true",
            "agentlab/request_id": reply.headers.get("X-Request-Id")}
    if reply.status == 200 and reply.body.get("success"):
        result = reply.body["result"]
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
                                    structuredContent=result, isError=False, _meta=meta)
    refused = {"status": reply.status, "error": reply.body.get("error"), "fallback_hint": reply.body.get("fallback_hint")}
    if "Retry-After" in reply.headers:
        refused["retry_after"] = reply.headers["Retry-After"]
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(refused, ensure_ascii=False))],
                                structuredContent=refused, isError=True, _meta=meta)


def mcp_manager(site: SkillSite, *, allowed_hosts: Iterable[str] = LOCAL_HOSTS,
                allowed_origins: Iterable[str] = ()) -> StreamableHTTPSessionManager:
    """The streamable-HTTP session manager for ``site`` (stateless, JSON replies: any replica can answer).

    Its ``run()`` must be running while requests arrive (the app's lifespan); a Host header not in
    ``allowed_hosts`` (``"name:*"`` matches any port) is refused with 421.
    """
    hosts = list(allowed_hosts)
    origins = list(allowed_origins) or [f"http://{h}" for h in hosts]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=origins)
    return StreamableHTTPSessionManager(mcp_server(site), stateless=True, json_response=True,
                                        security_settings=security)
