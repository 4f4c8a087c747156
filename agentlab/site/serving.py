"""How the site and the gateway are served: uvicorn with a door that counts connections, not just requests.

``python -m agentlab site`` and ``python -m agentlab gateway`` build their server with :func:`server_config`;
:func:`serving` runs a site in a thread of this process, for notebooks and tests.

Why not uvicorn's ``limit_concurrency``: it counts open *connections* with the requests, so 200 sockets that
send nothing made every request, a keyed client's too, hear 503; and uvicorn closes no connection that has not
sent a request yet, so they stayed open for ever. Here (docs/site.md#bounds):

* a connection must send a request's headers within ``HEADER_SECONDS`` of opening, or of its last answer, else
  it is closed, at most ``SWEEP_SECONDS`` later; uvicorn's keep-alive timer stops as soon as one byte arrives,
  and half a request line held it;
* one source holds at most ``PER_SOURCE`` connections. A source is an IP address, or, for a client on this
  machine, the account that owns its socket (:mod:`agentlab.site.peers`): a hub's participants all connect from
  127.0.0.1, and one participant's flood must use up its own share, never theirs. A new connection past the share
  closes that source's oldest connection that sent part of a request and not the rest (a client sends its headers
  at once; a half-sent request is a flood's), else its oldest connection that has waited for headers more than
  ``GRACE_SECONDS``, or is closed itself when there is none. A connection is never closed for a newer one in its
  first ``GRACE_SECONDS``: on a busy machine a client can be descheduled between connecting and sending. A loop that
  fell behind accepts a flood's burst before reading any of it: a newcomer whose whole request is already in its
  socket (looked at, not read) still gets in then;
* past ``MAX_CONNECTIONS`` in all, the oldest connection waiting for headers is closed the same way;
* requests (not connections) in progress are bounded by ``MAX_REQUESTS`` in all and by ``REQUESTS_PER_SOURCE``
  for one source: past either, 503 in the site's shape. A connection that has sent its headers is a request in
  progress while its body trickles in, and is never closed for a newcomer; without the share per source, one
  source's 256 slow bodies filled ``MAX_REQUESTS`` and every other client heard 503.
"""
from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import make_error
from ..i18n import Lang, accepted_lang, t
from ..ports import free_port
from .peers import source_of

__all__ = ["GRACE_SECONDS", "HEADER_SECONDS", "MAX_CONNECTIONS", "MAX_REQUESTS", "PER_SOURCE", "REQUESTS_PER_SOURCE",
           "STALL_SECONDS", "SWEEP_SECONDS", "server_config", "serving"]

#: seconds a connection has to send a request's headers (after it opens, or after its last answer)
HEADER_SECONDS = 5.0
#: how often the connections waiting for headers are looked at: one past HEADER_SECONDS goes within this much more
SWEEP_SECONDS = 0.5
#: seconds a new connection cannot be closed to make room for a newer one
GRACE_SECONDS = 1.0
#: seconds a half-sent request may pause before it is the first to go for a new connection (none: its headers are
#: one write away; a client descheduled mid-request is rarer than a flood, and its resend is transient)
STALL_SECONDS = 0.0
#: connections one source may hold; a browser opens 6, an agent's pool a few more
PER_SOURCE = 64
#: how far past its share a source may go while none of its connections can be judged yet (see connection_made)
OVERSHOOT = 4
#: bytes of a newcomer's socket looked at for a whole request's headers (see _whole_request_in)
PEEK_BYTES = 8192
#: connections in all, before the oldest idle one is closed for a new one
MAX_CONNECTIONS = 4096
#: requests in progress in all (each holds a task, most a thread): past them, 503
MAX_REQUESTS = 200
#: requests in progress from one source (a participant's account, an address): half of MAX_REQUESTS, so one source
#: never holds them all, and one client's own burst (60 executes waiting on a frozen store, 40 trickling bodies and a
#: keyed call beside them) is still answered by the site's own bounds (slots per key, body deadlines), not this one
REQUESTS_PER_SOURCE = MAX_REQUESTS // 2


class Door:
    """The connections of one server, by source, and which of them are still waiting for headers (oldest first).
    Used only on the event loop's thread: no lock."""

    def __init__(self, per_source: int = PER_SOURCE, total: int = MAX_CONNECTIONS,
                 header_seconds: float = HEADER_SECONDS, grace: float = GRACE_SECONDS):
        self.per_source, self.total, self.header_seconds, self.grace = per_source, total, header_seconds, grace
        self.by_source: dict[str, set[Any]] = {}
        self.source_of: dict[Any, str] = {}  # a connection's client address (as in the ASGI scope) -> its source
        self.waiting: dict[Any, float] = {}  # when each began to wait; insertion order: the oldest first
        self.stalled: dict[Any, float] = {}  # of those, the ones that sent part of a request and stopped: since when
        self.count = 0
        self._sweep: asyncio.TimerHandle | None = None

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Look for connections past their header deadline every :data:`SWEEP_SECONDS` while any is open. One timer
        for the server, not one per request: a timer set and cancelled on every request was a server's CPU that a
        bare one does not spend (uvicorn's own keep-alive timer is set per request too)."""
        if self._sweep is None:
            self._sweep = loop.call_later(SWEEP_SECONDS, self._too_late, loop)

    def _too_late(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep = None
        deadline = loop.time() - self.header_seconds
        late = []
        for conn, since in self.waiting.items():  # the oldest first: the first in time ends the walk
            if since > deadline:
                break
            late.append(conn)
        for conn in late:
            _evict(conn)
        if self.count:
            self.watch(loop)

    def oldest_waiting(self, among: set[Any] | None = None, *, now: float) -> Any:
        """The connection to close for a new one: first the oldest that sent part of a request and stopped (for
        :data:`STALL_SECONDS`; a client sends its headers at once: a half-sent request is a flood's), else the one
        that has waited longest for headers, more than :attr:`grace`; None when there is none."""
        for conn, since in self.stalled.items():
            if since > now - STALL_SECONDS:
                break
            if among is None or conn in among:
                return conn
        for conn, since in self.waiting.items():
            if since > now - self.grace:
                return None  # the rest waited less still
            if among is None or conn in among:
                return conn
        return None


def _protocol(door: Door) -> type[H11Protocol]:
    class Guarded(H11Protocol):
        """uvicorn's h11 protocol with a header deadline and a share per source (see the module's docstring)."""

        _source: str | None = None
        _seen: Any = None  # the request whose headers arrived last

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            source = source_of(self.client, self.server)  # the account, for a loopback client: see peers.py
            mine = door.by_source.setdefault(source, set())
            now = self.loop.time()
            if len(mine) >= door.per_source and not _evict(door.oldest_waiting(mine, now=now)) \
                    and len(mine) >= OVERSHOOT * door.per_source \
                    and not (len(mine) < 2 * OVERSHOOT * door.per_source and _whole_request_in(transport)):
                # nothing of this source's to close yet (its connections are busy, or too new to judge): a newcomer
                # gets in up to OVERSHOOT times the share, so that a client whose address floods is not refused for
                # arriving between the flood's connections being accepted and their half-requests being read; and
                # up to twice that when its whole request is already there. A loop that fell behind accepts a
                # burst of a flood's connections before reading any: a client among them was reset
                transport.abort()
                if not mine:
                    door.by_source.pop(source, None)
                return
            if door.count >= door.total and not _evict(door.oldest_waiting(now=now)):
                transport.abort()
                if not mine:
                    door.by_source.pop(source, None)
                return
            self._source = source
            mine.add(self)
            if self.client is not None:
                door.source_of[tuple(self.client)] = source
            door.count += 1
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._source is not None:
                mine = door.by_source.get(self._source, set())
                mine.discard(self)
                if not mine:
                    door.by_source.pop(self._source, None)
                door.count -= 1
                if self.client is not None:
                    door.source_of.pop(tuple(self.client), None)
                self._source = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._started()
            if self in door.waiting:  # part of a request, not all its headers: stalled from now, unless more comes
                door.stalled.pop(self, None)
                door.stalled[self] = self.loop.time()
                mine = door.by_source.get(self._source or "", ())
                if len(mine) > door.per_source and not STALL_SECONDS:  # past its share: a flood's, made room at once
                    _evict(self)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.cycle is self._seen:  # no pipelined request began: the next one's headers are due
                self._arm()
            else:
                self._started()

        def _started(self) -> None:
            if self.cycle is not None and self.cycle is not self._seen:  # a new request's headers are in
                self._seen = self.cycle
                self._disarm()

        def _arm(self) -> None:
            self._disarm()
            door.waiting[self] = self.loop.time()
            door.watch(self.loop)

        def _disarm(self) -> None:
            door.waiting.pop(self, None)
            door.stalled.pop(self, None)

    return Guarded


def _whole_request_in(transport: asyncio.Transport) -> bool:
    """True when a request's headers have already arrived on ``transport``'s socket: looked at, not taken (uvicorn
    reads them next). A client writes its headers at once; a flood's connection holds part of them, or nothing."""
    sock = transport.get_extra_info("socket")
    if sock is None or not _DONTWAIT:
        return False
    view = None
    try:
        view = socket.socket(fileno=sock.fileno())  # the same descriptor, borrowed: detached below, never closed
        return b"\r\n\r\n" in view.recv(PEEK_BYTES, socket.MSG_PEEK | _DONTWAIT)
    except (OSError, ValueError):
        return False
    finally:
        if view is not None:
            view.detach()


_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)  # (not on Windows: there, no newcomer is looked at)


def _evict(conn: Any) -> bool:
    """Close ``conn`` (a connection waiting for headers, to make room or past its deadline); False when none."""
    if conn is None:
        return False
    conn._disarm()
    conn.transport.abort()  # (one uvicorn closed already may be stuck on a reader that never reads: let go of it)
    return True


class Busy:
    """At most ``limit`` requests in progress, and ``per_source`` from one source (an ASGI middleware); past either,
    503 in the site's shape at once. The source is the door's for the request's connection (the account, for a
    client on this machine), else the client's address."""

    def __init__(self, app: Any, limit: int = MAX_REQUESTS, *, per_source: int = REQUESTS_PER_SOURCE,
                 door: Door | None = None):
        self.app, self.limit, self.per_source, self.door = app, limit, per_source, door
        self.running = 0
        self.by_source: dict[str, int] = {}

    def source(self, scope: Any) -> str:
        client = scope.get("client")
        if client is None:
            return "?"
        known = self.door.source_of.get(tuple(client)) if self.door is not None else None
        return known or str(client[0])

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        source = self.source(scope)
        mine = self.by_source.get(source, 0)
        if self.running >= self.limit or mine >= self.per_source:
            await busy_reply(_lang(scope))(scope, receive, send)
            return
        self.running += 1
        self.by_source[source] = mine + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.running -= 1
            left = self.by_source[source] - 1
            if left:
                self.by_source[source] = left
            else:
                del self.by_source[source]


def _lang(scope: Any) -> Lang:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"accept-language":
            return accepted_lang(value.decode("latin-1"))
    return "zh" if b"lang=zh" in scope.get("query_string", b"") else "en"


def busy_reply(lang: Lang) -> Any:
    from fastapi.responses import JSONResponse

    from .execute import body as reply_body
    message = {lg: t("site.busy", lg) for lg in ("en", "zh")}
    return JSONResponse(reply_body(None, make_error("UNAVAILABLE", message=message, retry_after=2), lang),
                        status_code=503, headers={"Retry-After": "2"})


def server_config(app: Any, *, host: str, port: int, door: Door | None = None, **options: Any) -> Any:
    """The uvicorn config the site and the gateway are served with: the guarded protocol, requests bounded."""
    import uvicorn
    door = door or Door()
    return uvicorn.Config(Busy(app, door=door), host=host, port=port, http=_protocol(door),
                          timeout_keep_alive=int(HEADER_SECONDS), **{"log_level": "warning", **options})


@contextmanager
def serving(site: Any, *, host: str = "127.0.0.1", port: int = 0, timeout: float = 20.0) -> Iterator[str]:
    """Serve ``site`` on ``host`` (a free port unless given) while the block runs; yields its base URL."""
    import uvicorn

    from .app import create_app
    if port == 0:
        port = free_port(host)
    server = uvicorn.Server(server_config(create_app(site), host=host, port=port))
    thread = threading.Thread(target=server.run, daemon=True, name=f"site:{port}")
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError(f"the site did not start on {host}:{port}")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
