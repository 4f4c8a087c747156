"""One connection to a Redis server per event loop, pipelined: how :class:`~agentlab.redis_store.LuaScripts` calls
a script from a loop (a site's read) without a thread, and without a reader or a timer registered for each call.

Calls are written as they come and their replies read in order by one reader registered with the loop for the
connection's life (:class:`Pipe`); replies are parsed as their bytes arrive, each byte once (:class:`Replies`).
The ``redis`` client is imported inside the functions that need it, so the core imports without it.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
import weakref
from collections import deque
from typing import Any

__all__ = ["THREAD_WAY", "Pipe", "Replies", "close_pipes", "closed_here", "pack_command", "plain_settings"]


#: a loop on which every call goes the thread way (it cannot watch a descriptor)
THREAD_WAY = object()


def plain_settings(client: Any) -> bool:
    """Whether :class:`Pipe` can speak for this client: a plain TCP or Unix socket, a password at most, on a
    system whose sockets are file descriptors. TLS, a credential provider or Windows go redis-py's own way."""
    from redis.connection import Connection, UnixDomainSocketConnection
    pool = client.connection_pool
    return (os.name == "posix" and pool.connection_class in (Connection, UnixDomainSocketConnection)
            and not pool.connection_kwargs.get("credential_provider"))


def close_pipes(pipes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]) -> None:
    for pipe in list(pipes.values()):
        if isinstance(pipe, Pipe):
            pipe.close_from_anywhere()


class Pipe:
    """One connection to a Redis server owned by one event loop, for :meth:`agentlab.redis_store.LuaScripts.call_async`.

    Calls are written as they come and their replies taken in order (pipelined) by one reader registered with the
    loop for the connection's life, so every request of a site process shares it and no call registers a reader or
    a timer of its own. A call whose caller gave up (cancelled) still has its reply read, and dropped, so the next
    call gets its own. One timer watches the oldest call waiting: past the socket timeout since it was written (or
    since the last bytes of its reply, when a long one is still coming) with no reply, every waiting call fails and
    the connection is closed (a late reply would come out of step). Closing it fails the calls still waiting, never
    leaves them waiting, and never sends them again (their scripts may have run).

    The connection is a bare file descriptor, not a socket object or an asyncio transport: a loop that ended without
    closing it (``asyncio.run`` in a notebook cell) leaves it to this object's finalizer, which closes it without a
    warning, where a socket or a transport collected with its loop warns that it was never closed. A forked child
    never closes its parent's descriptor (the number may by then be one of the child's own files).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, timeout: float | None, encoding: str | None,
                 errors: str):
        self._loop = weakref.ref(loop)  # the loops' table holds this weakly by its loop: no strong way back
        self.fd = fd
        self.pid = os.getpid()
        self.timeout = timeout
        self.waiting: deque[tuple[asyncio.Future[Any], float]] = deque()
        self.reader = Replies(encoding, errors)
        self.out = bytearray()  # what the socket's buffer did not take yet (a server that stopped reading)
        self.watching = False  # a timer is set for the oldest call (not kept: a handle would hold the loop)
        self.closed = True  # until the loop watches it: a pipe that failed here is not its descriptor's owner
        loop.add_reader(fd, self._readable)  # NotImplementedError on a loop without readers (Windows' proactor)
        self.closed = False

    @classmethod
    async def open(cls, loop: asyncio.AbstractEventLoop, client: Any) -> Pipe | None:
        """A connection made with the client's own settings (address, password, database, timeouts), or None when
        this call is to go redis-py's own way, which then raises its own error: the server refuses the connection
        or the password. A server that does not answer in time raises redis-py's ``TimeoutError`` here (the thread
        way would wait as long again)."""
        import socket

        from redis.connection import UnixDomainSocketConnection
        from redis.exceptions import TimeoutError as Late
        pool = client.connection_pool
        kw = pool.connection_kwargs
        timeout = kw.get("socket_connect_timeout") or kw.get("socket_timeout")
        if pool.connection_class is UnixDomainSocketConnection:
            addresses = [(socket.AF_UNIX, socket.SOCK_STREAM, 0, kw["path"])]
        else:
            host, port = kw.get("host", "localhost"), int(kw.get("port", 6379))
            try:  # every address in turn, as redis-py does (localhost may be ::1 first, the server on 127.0.0.1)
                addresses = [(f, k, p, a) for f, k, p, _, a in await loop.getaddrinfo(host, port,
                                                                                     type=socket.SOCK_STREAM)]
            except OSError:
                return None
        fd = -1
        for family, kind, proto, address in addresses:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                if family != socket.AF_UNIX:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as redis-py's: a call is one write
                await asyncio.wait_for(loop.sock_connect(sock, address), timeout)
            except TimeoutError:
                sock.close()
                raise Late("Timeout connecting to server") from None
            except OSError:  # refused, unreachable: the next address
                sock.close()
                continue
            except BaseException:
                sock.close()
                raise
            fd = sock.detach()
            break
        if fd < 0:
            return None
        encoding = kw.get("encoding", "utf-8") if kw.get("decode_responses") else None
        try:
            pipe = cls(loop, fd, kw.get("socket_timeout"), encoding, kw.get("encoding_errors", "strict"))
        except BaseException:
            os.close(fd)
            raise
        try:
            if kw.get("password") is not None:
                user = [kw["username"]] if kw.get("username") else []
                await pipe.send(pack_command(b"AUTH", *user, kw["password"]))
            if kw.get("db"):
                await pipe.send(pack_command(b"SELECT", str(kw["db"])))
        except Late:
            pipe.close()
            raise
        except Exception:  # noqa: BLE001 - a refused password: redis-py's way says so in its own words
            pipe.close()
            return None
        except BaseException:
            pipe.close()
            raise
        return pipe

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop()
        assert loop is not None  # only its own loop's code calls it, and that loop is alive
        return loop

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        """The future of this command's reply (the command is written now)."""
        from redis.exceptions import ConnectionError as Broken
        loop = self.loop
        future = loop.create_future()
        if self.closed:
            future.set_exception(Broken("Connection closed."))
            return future
        self.waiting.append((future, loop.time() + (self.timeout or 0.0)))
        if self.out:
            self.out += packed
        else:
            self._write(packed)
        if not self.watching and self.timeout is not None and not self.closed:
            self.watching = True
            loop.call_at(self.waiting[0][1], self._check)
        return future

    def _write(self, data: bytes | bytearray) -> None:
        from redis.exceptions import ConnectionError as Broken
        try:
            sent = os.write(self.fd, data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            self.close(Broken(f"Error writing to socket: {exc.strerror}"))
            return
        if sent < len(data):
            if not self.out:
                self.loop.add_writer(self.fd, self._writable)
            self.out[:] = data[sent:]

    def _writable(self) -> None:
        data = bytes(self.out)
        self.out.clear()
        self._write(data)
        if not self.out and not self.closed:
            self.loop.remove_writer(self.fd)

    def _readable(self) -> None:
        from redis.exceptions import ConnectionError as Broken
        from redis.exceptions import InvalidResponse
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError as exc:
            self.close(Broken(f"Error reading from socket: {exc.strerror}"))
            return
        if not data:
            self.close(Broken("Connection closed by server."))
            return
        try:
            replies = self.reader.feed(data)
        except Exception as exc:  # noqa: BLE001 - bytes that are not the protocol: the stream cannot be trusted
            self.close(InvalidResponse(f"Protocol error: {type(exc).__name__}"))
            return
        for reply in replies:
            if not self.waiting:  # a reply no call asked for: the stream is out of step
                self.close(Broken("A reply no call asked for."))
                return
            future, _ = self.waiting.popleft()
            if future.done():  # its caller gave up: the reply is read and dropped
                continue
            if isinstance(reply, _Undecodable):
                future.set_exception(reply.error)
            elif isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)
        if self.waiting and self.reader.partial():  # a long reply still coming: its deadline counts from now
            future, _ = self.waiting[0]
            self.waiting[0] = (future, self.loop.time() + (self.timeout or 0.0))

    def _check(self) -> None:
        """The oldest call's deadline: past it with no reply, the server is frozen or gone."""
        from redis.exceptions import TimeoutError as Late
        self.watching = False
        if not self.waiting or self.closed:
            return
        deadline = self.waiting[0][1]
        if self.loop.time() >= deadline:
            self.close(Late("Timeout reading from socket"))
        else:
            self.watching = True
            self.loop.call_at(deadline, self._check)

    def close(self, why: Exception | None = None) -> None:
        """Closed, from its own loop's thread; every call still waiting fails (``why``, or :func:`closed_here`: its
        script may have run, so it is not sent again). In a forked child only this object is closed: the
        descriptor and the loop's registration (a selector shared across the fork) are the parent's."""
        if self.closed:
            return
        self.closed = True
        if self.pid == os.getpid():
            loop = self._loop()
            if loop is not None and not loop.is_closed():
                loop.remove_reader(self.fd)
                loop.remove_writer(self.fd)
            os.close(self.fd)
        why = why or closed_here()
        loop = self._loop()
        if loop is None or loop.is_closed():  # nobody can wait on a closed loop (and its futures cannot be settled)
            self.waiting.clear()
        while self.waiting:
            future, _ = self.waiting.popleft()
            if not future.done():
                future.set_exception(why)

    def close_from_anywhere(self, wait: float = 5.0) -> None:
        """:meth:`close`, run by its own loop when that loop runs in another thread (a selector is not thread-safe,
        and the loop may be reading the descriptor right now). Waits up to ``wait`` seconds for it: a loop that
        stops meanwhile (its last turn may drop what was queued) leaves the close to this thread; a loop still
        busy past the wait closes it when it gets to it."""
        loop = self._loop()
        if self.pid != os.getpid() or loop is None or not loop.is_running() or _runs_here(loop):
            self.close()
            return
        done = threading.Event()

        def close() -> None:
            try:
                self.close()
            finally:
                done.set()

        try:
            loop.call_soon_threadsafe(close)
        except RuntimeError:  # it closed meanwhile
            self.close()
            return
        deadline = time.monotonic() + wait
        while not done.wait(0.02):
            if not loop.is_running():
                self.close()
                return
            if time.monotonic() > deadline:
                return

    def __del__(self) -> None:
        # its loop ended with it open: only the descriptor is left to close, and only by the process that opened it
        if not self.closed and self.pid == os.getpid():
            self.closed = True
            os.close(self.fd)


def closed_here() -> Exception:
    """The error of a call whose connection its owner closed after the call was written: the server may have run
    its script, so it must not be sent again (a quota would count it twice)."""
    from redis.exceptions import ConnectionError as Broken
    exc = Broken("Connection closed while the call was waiting for its reply.")
    exc.agentlab_sent = True  # type: ignore[attr-defined]
    return exc


def _runs_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class _Undecodable:
    """A reply with text the client's encoding cannot decode: that call raises the error, as redis-py's does, and the
    replies after it are read as usual."""

    def __init__(self, error: Exception):
        self.error = error


class Replies:
    """Replies of the protocol (RESP2) parsed as their bytes arrive, each byte once (a long reply that comes in many
    reads is not parsed again from its start at each). An error reply is redis-py's exception for it (raised at
    the top level, kept inside a list, as redis-py does); text is decoded as the client decodes it."""

    def __init__(self, encoding: str | None, errors: str):
        self.encoding, self.errors = encoding, errors
        self.buffer = bytearray()
        self.at = 0
        self.open: list[list[Any]] = []  # the arrays begun and not ended: [items still to come, items, undecodable]

    def partial(self) -> bool:
        return bool(self.open) or self.at < len(self.buffer)

    def feed(self, data: bytes) -> list[Any]:
        """The replies that ``data`` completed, in order."""
        from redis._parsers.base import BaseParser
        from redis.exceptions import InvalidResponse
        buffer = self.buffer
        buffer += data
        done: list[Any] = []
        while True:
            end = buffer.find(b"\r\n", self.at)
            if end < 0:
                break
            kind, head, after = buffer[self.at], bytes(buffer[self.at + 1:end]), end + 2
            value: Any
            if kind == 36:  # $ a bulk string, $-1 none
                size = int(head)
                if size < 0:
                    value = None
                elif len(buffer) < after + size + 2:
                    break
                else:
                    value = self._text(bytes(buffer[after:after + size]))
                    after += size + 2
            elif kind == 42:  # * an array, *-1 none
                count = int(head)
                if count > 0:
                    self.at = after
                    self.open.append([count, [], None])
                    continue
                value = None if count < 0 else []
            elif kind == 58:  # : an integer
                value = int(head)
            elif kind == 43:  # + a status
                value = self._text(head)
            elif kind == 45:  # - an error
                value = BaseParser.parse_error(head.decode("utf-8", "replace"))
            else:
                raise InvalidResponse(f"Protocol error: {bytes([kind])!r}")
            self.at = after
            while self.open:  # into the arrays it ends
                top = self.open[-1]
                if isinstance(value, _Undecodable):
                    top[2] = value
                top[1].append(value)
                top[0] -= 1
                if top[0]:
                    break
                self.open.pop()
                value = top[2] or top[1]
            else:
                done.append(value)
        del buffer[:self.at]
        self.at = 0
        return done

    def _text(self, raw: bytes) -> Any:
        if self.encoding is None:
            return raw
        try:
            return raw.decode(self.encoding, self.errors)
        except UnicodeDecodeError as exc:
            return _Undecodable(exc)


def pack_command(*parts: str | bytes) -> bytes:
    """A command in the protocol's own words (strings as UTF-8)."""
    raw = [p if isinstance(p, bytes) else p.encode() for p in parts]
    out = [b"*%d\r\n" % len(raw)]
    for part in raw:
        out += (b"$%d\r\n" % len(part), part, b"\r\n")
    return b"".join(out)
