"""Any MCP server's tools, served to any MCP client with agentlab's guards in between (docs/site.md#the-guarded-mcp-gateway).

``python -m agentlab gateway --upstream URL_OR_COMMAND`` connects once to the upstream (streamable HTTP, or a
command speaking MCP on stdio: :class:`~agentlab.site.mcp_client.MCPConnection`), lists its tools and serves
them unchanged at ``/mcp``. Every ``tools/call`` goes through one :class:`~agentlab.adapters.core.Guard` per
client session, the guards every adapter uses (:func:`agentlab.calls.guarded_call`)::

    keys         over HTTP a client sends an API key from the operator's key store (``gateway keys create``, the
                 site's KeyStore in --data): an unknown or revoked key, or none, is refused (401) before any MCP
                 session, unless --allow-keyless: then every keyless client is one client, with one client's limits
                 (an invented key is still refused, so inventing keys buys nothing). In memory or on stdio the
                 client is the process that started the gateway, and its session is the client
    rate         each client's calls a minute (its key's id; its key's quota too)
    contract     the arguments against the tool's inputSchema: agentlab's problems, in the client's language;
                 a call that fails them never reaches the upstream
    breaker      the Nth identical call of a session is stopped (GuardConfig.repeat_limit)
    idempotency  a write (named by --writes, or not read-only and not marked idempotent, or marked destructive)
                 is claimed under a key: the client's ``_meta["agentlab/idempotency_key"]`` (scoped to the
                 client), else the session and the canonical arguments; a repeat replays the first result
    redaction    what comes back is agentlab's rendered result: credentials removed; an upstream error in
                 plain text becomes TOOL_ERROR (its text goes to the error log, redacted, never to the client)
    logs         access, call, error and audit JSONL, as the site writes them (:class:`~agentlab.site.logs.SiteLogs`)

MCP's own defaults are taken as the upstream states them: a tool with no annotations may write.
"""
from __future__ import annotations

import contextvars
import functools
import hashlib
import itertools
import json
import logging
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server

from ..adapters.core import Contract, Guard
from ..calls import default_store
from ..errors import make_error, render
from ..guards import GuardConfig
from ..i18n import Lang, accepted_lang, check_lang, said, t
from ..jsonutil import canonical
from ..schema import SchemaError
from ..store import Store, open_store
from ..tools import Registry, ScopedKey, Tool
from .admission import quota_used
from .keys import ApiKey, KeyStore
from .limits import Limiter
from .logs import SiteLogs, clean_session
from .mcp_client import IDEMPOTENCY_META, MCPConnection, _outcome
from .mcp_server import SESSION_LANG, LocalizedServer

__all__ = ["MAX_SESSIONS", "Gateway", "claimed"]

#: client sessions whose repeat breaker is kept; past it the oldest is forgotten (its claims stay in the store)
MAX_SESSIONS = 10_000
#: the largest request body the gateway reads (the MCP SDK's own cap on a message)
GATEWAY_BODY = 4 * 1024 * 1024

class _ClientGone(logging.Filter):
    """Drop the SDK's stack for a client that closed its session (its server-to-client stream ends with
    ClosedResourceError on every disconnect): the operator's terminal is for what went wrong."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, anyio.ClosedResourceError)


logging.getLogger("mcp.server.streamable_http").addFilter(_ClientGone())

# who is calling, set in the worker thread of each call: the key function of a write reads it
_CALLER: contextvars.ContextVar[tuple[str, str, str | None]] = contextvars.ContextVar("gateway_caller")


def claimed(tool: types.Tool, writes: Iterable[str] = ()) -> bool:
    """Whether the gateway claims ``tool``'s calls under an idempotency key: the operator named it, or the
    upstream says it may write (not read-only) without saying a repeat is harmless, or says it is destructive."""
    if tool.name in set(writes):
        return True
    a = tool.annotations
    if a is None:
        return True  # MCP's defaults: not read-only, destructive, not idempotent
    if a.readOnlyHint:
        return False
    # destructiveHint left unset means destructive (MCP's default), and an upstream's idempotentHint is its word,
    # not a proof: only a tool that says it is idempotent *and* not destructive goes unclaimed
    return not a.idempotentHint or a.destructiveHint is not False


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Gateway:
    """The upstream's tools behind agentlab's guards; :meth:`server` is the MCP server clients talk to.

    Args:
        upstream: a streamable-HTTP URL, a stdio command, or an SDK server object (in memory).
        writes: tool names claimed whatever their annotations say.
        store: where claims live (a :class:`~agentlab.store.Store` or URL; default ``AGENTLAB_STORE`` or memory).
        logs: the folder of the four logs (or a :class:`SiteLogs`); None writes none.
        per_minute: each client's calls a minute.
        config: the guards; sleep and clock are injected (the rate window reads ``clock``).
        keys: the clients' API keys (a KeyStore or its file); allow_keyless: serve HTTP clients without one.
    """

    def __init__(self, upstream: Any, *, writes: Iterable[str] = (), store: Store | str | None = None,
                 logs: SiteLogs | str | Path | None = None, per_minute: int = 60, in_flight: int = 4,
                 config: GuardConfig = GuardConfig(),
                 lang: Lang = "en", timeout: float = 30.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, keys: KeyStore | str | Path | None = None,
                 allow_keyless: bool = False, upstream_headers: Mapping[str, str] | None = None):
        self.lang, self.timeout, self.config, self.sleep = check_lang(lang), timeout, config, sleep
        self.per_minute = per_minute
        #: the operator's keys (a keys.db, or a KeyStore); none given: an empty store in memory
        self.keys = keys if isinstance(keys, KeyStore) else KeyStore(keys if keys is not None else ":memory:")
        #: serve HTTP clients without a key, all of them as one client ("keyless") with one client's limits
        self.allow_keyless = allow_keyless
        #: each client's calls running at once: past it, a call is refused at once (RATE_LIMITED, nothing run).
        #: Unbounded, one client's 30-45 hanging calls took every worker thread and another's fast read waited 10-30 s.
        self.in_flight, self._running = in_flight, Counter[str]()
        self.store = open_store(store) if isinstance(store, str) else store or default_store()
        self.logs = logs if isinstance(logs, SiteLogs) or logs is None else SiteLogs(logs)
        self.limiter = Limiter(clock=clock)
        # an HTTP upstream hears the gateway's language, and its own key when it asks for one (agentlab's site does:
        # without one, every call came back "The API key is missing or unknown", blaming the client's valid key)
        self.conn = MCPConnection(upstream, timeout=timeout,
                                  headers={"Accept-Language": self.lang, **(upstream_headers or {})}
                                  if isinstance(upstream, str) and upstream.startswith(("http://", "https://")) else None)
        try:
            self.tools: list[types.Tool] = list(self.conn.run(self.conn.session.list_tools(), timeout).tools)
        except BaseException:
            self.conn.close()
            raise
        #: tools whose contract cannot be used (a pattern shaped for catastrophic backtracking, a schema that does
        #: not compile): name -> why, in the gateway's language. Each is left out alone: one bad upstream tool
        #: made every call fail, the harmless tools' included, when the contracts compiled as one registry.
        self.disabled: dict[str, str] = {}
        usable = []
        for tool in self.tools:
            contract = Contract(tool.name, tool.description or tool.title or tool.name, tool.inputSchema)
            try:
                Registry([Tool(contract.name, contract.description, contract.parameters)], lang=self.lang)
            except (SchemaError, TypeError, ValueError) as exc:
                self.disabled[tool.name] = said(exc, self.lang)
                continue
            usable.append((tool, contract))
        self.tools = [tool for tool, _ in usable]
        # a tuple, never changed: each session's guard knows it by identity (Guard.registry). As a list, its canonical
        # text (every tool's schema) was written out again on every call to find the registry it had already (~10 us
        # a call with two small tools, more with more)
        self.contracts = tuple(contract for _, contract in usable)
        self.writes = frozenset(t.name for t in self.tools if claimed(t, writes))
        self._guards: dict[tuple[str, Lang], Guard] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Gateway({self.conn!r}, {len(self.tools)} tools, writes={sorted(self.writes)})"

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def guard(self, session: str, lang: Lang) -> Guard:
        """The guard of one client session (its repeat breaker counts that session's calls)."""
        with self._lock:
            g = self._guards.get((session, lang))
            if g is None:
                if len(self._guards) >= MAX_SESSIONS:  # a long-lived gateway forgets its oldest session's breaker
                    del self._guards[next(iter(self._guards))]
                g = Guard("mcp-gateway", writes=dict.fromkeys(self.writes, _key), config=self.config,
                          store=self.store, lang=lang, sleep=self.sleep, session_id=session, keep_events=False)
                self._guards[(session, lang)] = g
            return g

    def who(self, headers: Any) -> tuple[str, ApiKey | None, str | None]:
        """An HTTP client: ``(client, its key's record, None)``, or ``("", None, why)`` (an i18n key) when refused.
        Never the key itself: the client is named by its record's id."""
        key = _api_key(headers)
        if key:
            record = self.keys.check(key if len(key) <= 200 and key.isprintable() else None)
            return ("key:" + record.id, record, None) if record is not None else ("", None, "gateway.unknown_key")
        return ("keyless", None, None) if self.allow_keyless else ("", None, "gateway.no_key")

    def known(self, headers: Any) -> tuple[str, ApiKey | None, str | None] | None:
        """:meth:`who`, when it needs no lookup (no key sent, or a key checked before and unchanged since: one
        cheap query); else None, and :meth:`who` decides in a worker thread. A thread hand-off per request to
        find a key already known was a tenth of what the gateway added to a bare pass-through."""
        key = _api_key(headers)
        if not key:
            return ("keyless", None, None) if self.allow_keyless else ("", None, "gateway.no_key")
        record = self.keys.cached(key if key.isprintable() else None)
        return ("key:" + record.id, record, None) if record is not None else None

    def refusal(self, why: str, lang: Lang) -> str:
        """The text of a refused client (:meth:`who`), rendered as every error is."""
        hint = {lg: t("gateway.no_key.hint", lg) for lg in ("en", "zh")}
        return render(make_error("UNAUTHENTICATED", _key=why, hint=hint), lang)

    # --- one call: its admission, its guarded run upstream, what the client is sent ------------------------
    def call(self, name: str, arguments: dict[str, Any] | None, *, client: str, session: str,
             meta_key: str | None = None, lang: Lang = "en", record: ApiKey | None = None) -> types.CallToolResult:
        """One ``tools/call`` through the key's whitelist, the rate limit and every guard; what the client is sent.
        Blocking (the upstream's answer is waited for): from a worker thread, or outside an event loop."""
        request_id, t0 = uuid.uuid4().hex[:16], time.perf_counter()
        refused = self._admit(request_id, name, arguments, client, session, lang, record, t0)
        if refused is not None:
            return refused
        guard = self.guard(session, lang)
        _CALLER.set((client, session, meta_key))
        timeout = self.timeout

        def run(args: dict) -> Any:
            result = self.conn.run(self.conn.session.call_tool(name, args, timedelta(seconds=timeout),
                                                               meta=self._meta(name, client, session, meta_key, args)),
                                   timeout + 1.0)
            return self._upstream(result)

        out = guard.call(self.contracts, name, arguments or {}, run, run_id=request_id)
        return self._told(out, request_id, name, arguments, client, session, t0)

    async def acall(self, name: str, arguments: dict[str, Any] | None, *, client: str, session: str,
                    meta_key: str | None = None, lang: Lang = "en", record: ApiKey | None = None
                    ) -> types.CallToolResult:
        """:meth:`call` on the server's event loop. With the claims in this process (the guard's ``on_loop``),
        every guard runs right here and the upstream's answer is awaited, not waited for in a thread: three
        thread hand-offs a call fewer (a worker for the guards, one for the deadline, one blocked on the
        upstream's loop), which were most of what the gateway added to a bare pass-through. With a store that
        outlives the process (a SQLite file, Redis: I/O) the call goes to a worker thread, as it always did."""
        guard = self.guard(session, lang)
        if not guard.on_loop:
            return await anyio.to_thread.run_sync(lambda: self.call(
                name, arguments, client=client, session=session, meta_key=meta_key, lang=lang, record=record))
        request_id, t0 = uuid.uuid4().hex[:16], time.perf_counter()
        refused = self._admit(request_id, name, arguments, client, session, lang, record, t0)
        if refused is not None:
            return refused
        _CALLER.set((client, session, meta_key))  # this request's task has a context of its own
        timeout = self.timeout

        async def run(args: dict) -> Any:
            meta = self._meta(name, client, session, meta_key, args)
            result = await self.conn.arun(self.conn.session.call_tool(name, args, timedelta(seconds=timeout), meta=meta),
                                          timeout + 1.0)
            return self._upstream(result)

        out = await guard.acall(self.contracts, name, arguments or {}, run, run_id=request_id)
        return self._told(out, request_id, name, arguments, client, session, t0)

    def _admit(self, request_id: str, name: str, arguments: Any, client: str, session: str, lang: Lang,
               record: ApiKey | None, t0: float) -> types.CallToolResult | None:
        """The key's whitelist and the client's rate: the refusal the client is sent, or None to go on."""
        if record is not None and not record.allows(name):
            self._log(request_id, session, client, name, arguments, "PERMISSION_DENIED", 403, t0)
            return _result(render(make_error("PERMISSION_DENIED", _key="gateway.not_allowed", name=name[:200]), lang),
                           None, error=True)
        # a key's limits are its own (its quota too); keyless clients, when allowed, are all the one "keyless"
        admission = self.limiter.admit(record or ApiKey(client, client, ("*",), None, "day", 0.0), "*",
                                       self.per_minute)
        if not admission.ok:
            err = quota_used(admission) if admission.kind == "quota" else make_error(
                "RATE_LIMITED", _key="gateway.rate_limited", n=self.per_minute,
                retry_after=float(admission.retry_after_header))
            self._log(request_id, session, client, name, arguments, "RATE_LIMITED", 429, t0)
            return _result(render(err, lang), None, error=True)
        return None

    def _meta(self, name: str, client: str, session: str, meta_key: str | None, args: dict) -> dict | None:
        # the upstream's own key (an agentlab site refuses a write without one): always a digest scoped to this
        # client, never the client's raw key nor the session. Sent as it came, client B reusing client A's key
        # was answered upstream with A's record, and B's own write never ran.
        return {IDEMPOTENCY_META: _digest(_key_for(client, session, meta_key, args))} if name in self.writes else None

    @staticmethod
    def _upstream(result: types.CallToolResult) -> Any:
        if result.isError and not isinstance(result.structuredContent, dict):
            # plain text from the upstream may hold anything (a DSN, a path): the error log keeps it, redacted
            text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
            raise RuntimeError(text[:2000] or "the upstream tool reported an error")
        return _outcome(result)

    def _told(self, out: Any, request_id: str, name: str, arguments: Any, client: str, session: str,
              t0: float) -> types.CallToolResult:
        """The guarded call's outcome logged, as the client is sent it."""
        e = out.error
        code = e.code if e else None
        if e is None:
            status = 200
        elif out.validate_ok is False or out.parse_ok is False:
            status = 422  # the caller's arguments: never sent upstream
        elif out.exec_ok is False:
            status = 502  # the upstream failed
        else:
            status = 409  # refused by a guard: the breaker, a claim in flight or in conflict
        self._log(request_id, session, client, name, arguments, code, status, t0, content=out.content,
                  replayed=out.replayed, note=out.note if out.exec_ok is False else None)
        # what the content says, parsed back: the content is what was redacted (out.data is the tool's own value)
        data = json.loads(out.content).get("data") if e is None else None
        return _result(out.content, data, error=e is not None, replayed=out.replayed)

    def _log(self, request_id: str, session: str, client: str, name: str, arguments: Any, code: str | None,
             status: int, t0: float, *, content: str | None = None, replayed: bool = False,
             note: str | None = None) -> None:
        if self.logs is None:
            return
        ms = round((time.perf_counter() - t0) * 1000, 2)
        common: dict[str, Any] = {"request_id": request_id, "session_id": _clean(session), "keyless": False}
        self.logs.write("access", **common, method="tools/call", path=name[:200], status=status, latency_ms=ms,
                        client=client)
        self.logs.write("call", **common, skill=name[:200], arguments=arguments, result=content, status=status,
                        code=code, latency_ms=ms, replayed=replayed, client=client)
        if note is not None:
            self.logs.write("error", **common, skill=name[:200], status=status, code=code, detail=note)
        if name in self.writes:
            self.logs.write("audit", **common, action="write", skill=name[:200], code=code, replayed=replayed,
                            client=client)

    # --- the MCP server ------------------------------------------------------------
    def server(self) -> Server:
        """The MCP server a client talks to: the upstream's tools as listed, each call through :meth:`call`."""
        server: Server = LocalizedServer("agentlab-gateway", "gateway.instructions", self.lang)

        def caller() -> tuple[str, str, Lang, ApiKey | None, str | None]:
            """The client (its key's id, "keyless", or on stdio its session), the session, the language, the key's
            record and, for a client to refuse, why."""
            ctx = server.request_context
            request = ctx.request
            headers = getattr(request, "headers", None)
            session = _connection(ctx.session)  # stdio or in memory: one connection, one session
            if headers is None:
                return session, session, self.lang, None, None
            session = _clean(headers.get("mcp-session-id")) or session
            lang = accepted_lang(headers.get("accept-language", ""), self.lang)
            # the client the HTTP endpoint found for this very request (it refuses a stranger before any session,
            # and its look-up sees a key revoked anywhere): asked again here, a second look-up per call
            scope = getattr(request, "scope", None)
            found = scope.get(_WHO) if isinstance(scope, dict) else None
            client, record, why = found if found is not None else self.who(headers)
            return client, session, lang, record, why

        @server.list_tools()
        async def list_tools() -> list[types.Tool]:
            # a key's client is shown the tools its key may call, as the site lists its skills: the others were
            # listed, and each call of one was refused
            record = caller()[3]
            return self.tools if record is None else [tool for tool in self.tools if record.allows(tool.name)]

        @server.call_tool(validate_input=False)  # the guards check, and answer with agentlab's problems
        async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            client, session, lang, record, why = caller()
            if why is not None:  # the HTTP endpoint refuses first; a key revoked mid-session is refused here
                return _result(self.refusal(why, lang), None, error=True)
            meta = server.request_context.meta
            key = (meta.model_extra or {}).get(IDEMPOTENCY_META) if meta is not None else None
            key = key[:200] if isinstance(key, str) and key else None
            with self._lock:
                busy = self._running[client] >= self.in_flight
                if not busy:
                    self._running[client] += 1
            if busy:  # this client's own calls hold their share of the workers: refused now, nothing run
                err = make_error("RATE_LIMITED", _key="gateway.too_many_in_flight", n=self.in_flight, retry_after=1.0)
                self._log(uuid.uuid4().hex[:16], session, client, name, arguments, "RATE_LIMITED", 429,
                          time.perf_counter())
                return _result(render(err, lang), None, error=True)
            try:
                return await self.acall(name, arguments, client=client, session=session, meta_key=key, lang=lang,
                                        record=record)
            finally:
                with self._lock:
                    self._running[client] -= 1
                    if not self._running[client]:
                        del self._running[client]

        return server

    def app(self, *, allowed_hosts: Iterable[str] | None = None) -> Any:
        """An ASGI app serving :meth:`server` over streamable HTTP at ``/mcp`` (sessions kept: the breaker
        counts per session)."""
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.applications import Starlette
        from starlette.datastructures import Headers
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        from .bodies import BODY_SECONDS, TooLarge, TooSlow, receive_body, replayed
        from .mcp_server import LOCAL_HOSTS, body_refused, refused_body
        hosts = list(allowed_hosts or LOCAL_HOSTS)
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                             allowed_origins=[f"http://{h}" for h in hosts])
        manager = StreamableHTTPSessionManager(self.server(), json_response=True, security_settings=security)

        @asynccontextmanager
        async def lifespan(_: Any) -> AsyncIterator[None]:
            async with manager.run():
                yield

        gateway = self

        class Endpoint:  # an ASGI endpoint: /mcp itself, no redirect to /mcp/
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                headers = Headers(scope=scope)
                found = gateway.known(headers)
                if found is None:  # a key not seen before, or the key store changed: looked up in a worker
                    found = await anyio.to_thread.run_sync(gateway.who, headers)
                _client, _record, why = found
                scope[_WHO] = found  # for the call's handler (caller()): the same request, the same client
                if why is not None:  # refused before any session is made: a stranger costs no state
                    lang = accepted_lang(headers.get("accept-language", ""), gateway.lang)
                    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": gateway.refusal(why, lang)}}
                    await JSONResponse(body, status_code=401,
                                       headers={"WWW-Authenticate": 'Bearer realm="agentlab gateway"'})(
                        scope, receive, send)
                    return
                lang = accepted_lang(headers.get("accept-language", ""), gateway.lang)
                if scope.get("method") == "POST":  # read here, bounded as the site's, and refused in words if not UTF-8
                    try:
                        raw = await receive_body(receive, GATEWAY_BODY)
                    except (TooLarge, TooSlow) as exc:
                        await body_refused(isinstance(exc, TooLarge), GATEWAY_BODY, BODY_SECONDS, lang)(scope, receive, send)
                        return
                    refused = refused_body(raw, lang)
                    if refused is not None:
                        await refused(scope, receive, send)
                        return
                    receive = replayed(raw, receive)
                # the session this request opens (its initialize) says its instructions in the client's language
                token = SESSION_LANG.set(lang)
                try:
                    await manager.handle_request(scope, receive, send)
                finally:
                    SESSION_LANG.reset(token)

        return Starlette(routes=[Route("/mcp", endpoint=Endpoint(), methods=["GET", "POST", "DELETE"])],
                         lifespan=lifespan)


#: where the HTTP endpoint leaves the client it found in the request's ASGI scope, for the MCP handler of that request
_WHO = "agentlab.gateway.who"

#: each stdio or in-memory connection's name, for as long as the connection lives. Named by ``id()``, a connection
#: opened after another one closed could be given its address, and with it the closed one's guard: its claims, so a
#: stranger's call replayed, and its breaker, so a stranger's first call was stopped as a repeat.
_CONNECTIONS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_NEXT = itertools.count(1)


def _connection(session: Any) -> str:
    name = _CONNECTIONS.get(session)
    if name is None:
        name = _CONNECTIONS.setdefault(session, f"s{next(_NEXT):x}-{uuid.uuid4().hex[:8]}")
    return name


def _clean(session: str | None) -> str | None:
    """:func:`~agentlab.site.logs.clean_session`, remembered: a session sends the same id with every call, and
    checking it for secrets (every pattern, ~5 us) twice a call bought nothing after the first. Only what could be a
    session id (64 characters at most) is remembered: nothing longer is one, and the memory stays small."""
    if not isinstance(session, str) or len(session) > 64:
        return clean_session(session)
    return _clean_id(session)


_clean_id = functools.lru_cache(maxsize=4096)(clean_session)


def _api_key(headers: Any) -> str | None:
    key = headers.get("x-api-key")
    if key is None and headers.get("authorization", "").lower().startswith("bearer "):
        key = headers["authorization"][7:].strip()
    return key

def _key(args: dict) -> str:
    """A write's key, computed here, never by the model: the client's own key (scoped to the client, so a resend
    on a new connection replays), else the session and the canonical arguments."""
    return _key_for(*_CALLER.get(("", "", None)), args)


def _key_for(client: str, session: str, meta_key: str | None, args: dict) -> str:
    # scoped to the client (or the session), which the model is never told: it reads its own key, or the arguments
    return ScopedKey(f"client:{client}:{meta_key}", meta_key) if meta_key \
        else ScopedKey(f"{session}:{canonical(args)}", canonical(args)[:200])


def _result(content: str, data: Any, *, error: bool, replayed: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=content)],
                                structuredContent=data if isinstance(data, dict) else None, isError=error,
                                _meta={"agentlab/replayed": replayed})
