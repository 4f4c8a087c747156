"""Any MCP server's tools as agentlab tools, run by the guarded loop (docs/site.md#mcp-tools-in-the-loop).

``mcp_registry(url)`` connects once (streamable HTTP; or an SDK ``Server`` object, in memory), lists
the tools and returns a :class:`~agentlab.tools.Registry` whose tools call the server::

    annotations.readOnlyHint     -> a read; otherwise a side effect (MCP's default is "may write")
    _meta agentlab/idempotency   -> a keyed write: the loop computes the key, the tool sends a hash of it
                                    in the call's _meta (agentlab/idempotency_key); a retry replays
    idempotentHint (not keyed)   -> a write that sets a value: resent freely, never claimed
    isError with agentlab's error shape -> that error, as the model would have got it in-process
    isError with plain text      -> TOOL_ERROR carrying the text; no connection -> UNAVAILABLE (transient)

The loop is synchronous and the SDK is async: the session lives in one task of an event loop on a
daemon thread, and each call is sent to it. ``MCPConnection`` closes it (``with`` or ``close()``).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import secrets
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from ..errors import ToolFailure
from ..i18n import Lang
from ..tools import Registry, Tool
from .client import _fail, _failure, wire_key

__all__ = ["MCPConnection", "ServerDidNotStart", "mcp_registry"]

IDEMPOTENCY_META = "agentlab/idempotency_key"  # the same names as mcp_server.py, without importing the server
IDEMPOTENCY_FIELDS_META = "agentlab/idempotency"


class ServerDidNotStart(RuntimeError):
    """uvicorn exited while starting (:meth:`MCPConnection.serve`): it said why on its own line (a port taken, an
    address not this machine's, a port below 1024)."""


class MCPConnection:
    """One MCP client session on a background event loop.

    Args:
        target: a streamable-HTTP URL (``http://127.0.0.1:8000/mcp``), a command that serves MCP on stdio
            (``"python server.py"``, split as a shell would) or an SDK server object (in memory).
        headers: sent with every HTTP request (``{"X-API-Key": key, "X-Session-Id": ...}``).
        timeout: seconds a call may take before it is a TIMEOUT.
    """

    def __init__(self, target: Any, *, headers: Mapping[str, str] | None = None, timeout: float = 30.0):
        self.target, self.timeout = target, timeout
        self._headers = dict(headers or {})
        # what keys the idempotency keys this connection sends: the caller's own credential, so that
        # another tenant cannot send the same key first; without one (an in-memory server), a secret
        # of this connection's own
        lowered = {k.lower(): v for k, v in self._headers.items()}
        bearer = lowered.get("authorization", "")
        self._secret = lowered.get("x-api-key") or (bearer[7:].strip() if bearer.lower().startswith("bearer ") else "") \
            or secrets.token_hex(16)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="mcp-client")
        self._thread.start()
        self._ready: concurrent.futures.Future = concurrent.futures.Future()
        self._closing: asyncio.Event | None = None
        self._main = asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        try:
            self.session = self._ready.result(timeout=timeout)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"MCPConnection({self.target if isinstance(self.target, str) else type(self.target).__name__})"

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Any]:
        from mcp import ClientSession
        if not isinstance(self.target, str):
            from mcp.shared.memory import create_connected_server_and_client_session
            async with create_connected_server_and_client_session(self.target) as session:
                yield session
            return
        if not self.target.startswith(("http://", "https://")):  # a command that speaks MCP on its stdin and stdout
            import shlex

            from mcp.client.stdio import StdioServerParameters, stdio_client
            command, *args = shlex.split(self.target)
            async with stdio_client(StdioServerParameters(command=command, args=args)) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                yield session
            return
        import httpx
        from mcp.client.streamable_http import streamable_http_client
        # a key sent with every request is never followed to another host (httpx strips only Authorization there)
        secret = any(k.lower() in ("x-api-key", "authorization", "cookie") for k in self._headers)
        async with httpx.AsyncClient(headers=self._headers, timeout=self.timeout, follow_redirects=not secret) as http, \
                streamable_http_client(self.target, http_client=http) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session

    async def _hold(self) -> None:
        """The session is entered and left in this one task (the SDK's task groups require it)."""
        self._closing = asyncio.Event()
        try:
            async with self._open() as session:
                self._ready.set_result(session)
                await self._closing.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            else:
                raise

    def run(self, coro: Any, timeout: float | None = None) -> Any:
        """Run one of the session's coroutines on the connection's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def arun(self, coro: Any, timeout: float | None = None) -> Any:
        """Await one of the session's coroutines from an event loop: on the connection's own loop (a server run
        there, :meth:`serve`) it is simply awaited (the session's own read timeout bounds it); from another loop
        it runs on the connection's and is awaited there, no thread of the caller's blocked on it."""
        if asyncio.get_running_loop() is self._loop:
            return await coro
        return await asyncio.wait_for(asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop)), timeout)

    def serve(self, server: Any) -> None:
        """Run ``server`` (a ``uvicorn.Server``) on this connection's event loop until it stops, the calling thread
        waiting: the server's handlers and the session then share one loop, and a call upstream crosses no thread
        (two wake-ups across threads a call were a third of what a gateway added to a bare pass-through).
        SIGINT and SIGTERM in the calling (main) thread stop it as uvicorn would."""
        import signal
        caught = (signal.SIGINT, signal.SIGTERM)
        main = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, server.handle_exit) for sig in caught} if main else {}
        async def serving() -> None:
            try:
                await server.serve()
            except SystemExit:  # uvicorn's own exit on a start that failed (a port taken since it was checked): out
                # of the loop's thread it ended the loop and left this thread waiting on it for ever, deaf to Ctrl-C
                raise ServerDidNotStart("the server did not start") from None
        try:
            self.run(serving())
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def close(self) -> None:
        if self._loop.is_running():
            if self._closing is not None:
                self._loop.call_soon_threadsafe(self._closing.set)
            try:
                self._main.result(timeout=10)
            except BaseException:  # noqa: BLE001 - closing: what went wrong while connected was already told
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> MCPConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def registry(self, *, lang: Lang = "en") -> Registry:
        """The server's tools as a Registry whose tools call it."""
        listed = self.run(self.session.list_tools(), self.timeout)
        return Registry([self._tool(t) for t in listed.tools], lang=lang)

    def _tool(self, spec: Any) -> Tool:
        annotations = spec.annotations
        writes = not (annotations is not None and annotations.readOnlyHint)
        found = (spec.meta or {}).get(IDEMPOTENCY_FIELDS_META)
        keyed_meta: dict = found if isinstance(found, dict) else {}
        keyed = writes and isinstance(found, dict)
        fields = tuple(keyed_meta.get("fields") or ())
        idempotent = writes and not keyed and bool(annotations is not None and annotations.idempotentHint)
        name = spec.name
        call = self._caller(name, keyed)
        business_key = (lambda a: "|".join(str(a.get(f)) for f in fields)) if fields else None
        return Tool(name, spec.description or spec.title or name, spec.inputSchema, call, side_effect=writes,
                    keyed=keyed, idempotent=idempotent, business_key=business_key,
                    key_scope=keyed_meta.get("scope", "global") if keyed else "global", timeout=self.timeout + 1.0)

    def _caller(self, name: str, keyed: bool) -> Callable[..., Any]:
        def fn(**args: Any) -> Any:
            key = args.pop("idempotency_key", None)
            meta = None
            if keyed:
                key = key or f"{name}:{uuid.uuid4().hex}"  # the loop runs with idempotency off: its own action
                meta = {IDEMPOTENCY_META: wire_key(self._secret, key)}
            try:
                result = self.run(self.session.call_tool(name, args, timedelta(seconds=self.timeout), meta=meta),
                                  self.timeout + 1.0)
            except (TimeoutError, concurrent.futures.TimeoutError):
                raise _fail("TIMEOUT", seconds=self.timeout) from None
            except Exception as exc:  # noqa: BLE001 - the connection or the protocol failed: nothing to tell the model but that
                if "timed out" in str(exc).lower():
                    raise _fail("TIMEOUT", seconds=self.timeout) from None
                raise _fail("UNAVAILABLE") from None
            return _outcome(result)
        return fn


def _outcome(result: Any) -> Any:
    """A CallToolResult as the tool's return, or the ToolFailure it stands for."""
    text = "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    if not result.isError:
        if result.structuredContent is not None:
            return result.structuredContent
        try:
            return json.loads(text)
        except ValueError:
            return text
    data = result.structuredContent
    if not isinstance(data, dict):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict) and isinstance(data.get("status"), int):
        failure: ToolFailure = _failure(data, data["status"], data.get("retry_after"))
        return _raise(failure)
    return _raise(_fail("TOOL_ERROR", message=text[:500] or "the MCP tool reported an error"))


def _raise(failure: ToolFailure) -> Any:
    raise failure


def mcp_registry(target: Any, *, headers: Mapping[str, str] | None = None, lang: Lang = "en",
                 timeout: float = 30.0) -> Registry:
    """The tools of the MCP server at ``target`` (a URL, or an SDK server object) as a Registry.

    The connection stays open for the life of the process (a daemon thread); to close it
    yourself, use ``with MCPConnection(target) as conn: conn.registry()``.
    """
    return MCPConnection(target, headers=headers, timeout=timeout).registry(lang=lang)
