"""The room's servers, each with a door that knows which account of the machine is at the other end of a connection.

Every account of the machine can connect to every loopback port, and a room's servers listen on loopback TCP: a
participant's Jupyter server, the trainer's view. One participant held thousands of idle connections to another's
server (found on /proc/net/tcp) until it ran out of files: its owner's login failed with 500 and the server wrote a
traceback a millisecond. The kernel knows the account behind each end of a connection on one machine
(:func:`agentlab.site.peers.socket_owner`, as the site's door counts shares); it is asked once per connection.

- :func:`admit_only`: a server that only some accounts may reach (a participant's own server: root, for the hub and
  its proxy, and its owner): anyone else's connection is closed as it is accepted, holding nothing.
- :func:`admit_at_most`: a server every participant reaches (the trainer's view): at most ``n`` connections open at
  once per account; past them a new one is closed as it is accepted.

A connection from another machine is let through as before; :func:`admit_only` closes a loopback one whose account
the kernel cannot say (its sender closed it before it was accepted).
"""
from __future__ import annotations

import functools
import socket
from collections.abc import Iterable
from typing import Any

__all__ = ["admit_at_most", "admit_only", "kernel_says", "peer_uid"]


def peer_uid(conn: socket.socket) -> int | None:
    """The account owning the other end of the TCP connection ``conn`` when it is on this machine, else None."""
    return _owner(conn)


def _owner(conn: socket.socket) -> int | None:
    from ..site.peers import socket_owner
    try:
        if conn.family not in (socket.AF_INET, socket.AF_INET6):
            return None
        there, here = conn.getpeername(), conn.getsockname()
    except OSError:  # closed meanwhile
        return None
    return socket_owner((str(there[0]), int(there[1])), (str(here[0]), int(here[1])))


def _stream_socket(stream: Any) -> socket.socket | None:
    sock = getattr(stream, "socket", None)
    return sock if isinstance(sock, socket.socket) else None


def admit_only(uids: Iterable[int]) -> None:
    """Every Tornado HTTP server of this process closes a connection from an account of this machine not in ``uids``
    as it accepts it."""
    from tornado.httpserver import HTTPServer
    allowed = frozenset(uids)
    accept = HTTPServer.handle_stream

    def handle_stream(self: HTTPServer, stream: Any, address: Any) -> None:
        sock = _stream_socket(stream)
        uid = peer_uid(sock) if sock is not None else None
        # a connection from this machine whose account cannot be read, where the kernel does say accounts, was closed
        # by its sender before it was accepted (its request may be waiting in the buffer): let in, 141 of 55,000 such
        # wrote 8 MB into the log. Where the kernel says none (no sock_diag), the door is open, never shut to all
        if (uid is not None and uid not in allowed) or (uid is None and _from_here(address) and kernel_says()):
            stream.close()
            return
        accept(self, stream, address)
    HTTPServer.handle_stream = handle_stream  # type: ignore[method-assign]


@functools.cache
def kernel_says() -> bool:
    """Whether this machine's kernel says the account behind a loopback connection (asked once, of a connection made
    here for that): where it cannot (no netlink, a sandbox that refuses it), nobody's connection is told apart."""
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener, \
                socket.create_connection(listener.getsockname(), timeout=2) as mine:
            theirs, _ = listener.accept()
            with theirs:
                return _owner(theirs) is not None and mine is not None
    except OSError:
        return False


def _from_here(address: Any) -> bool:
    """Whether ``address`` (a client's, as accepted) is a loopback address of this machine."""
    import ipaddress
    try:
        host = ipaddress.ip_address(str(address[0]).split("%")[0])
    except (ValueError, IndexError, TypeError):
        return False
    mapped = getattr(host, "ipv4_mapped", None)
    return bool((mapped or host).is_loopback)


def admit_at_most(n: int, *, unlimited: Iterable[int] = (0,)) -> None:
    """Every Tornado HTTP server of this process keeps at most ``n`` connections open at once from each account of
    this machine (``unlimited``: the accounts with no cap, root's by default); past them a new one is closed as it is
    accepted."""
    from tornado.httpserver import HTTPServer
    free = frozenset(unlimited)
    accept = HTTPServer.handle_stream
    held: dict[int, list[Any]] = {}

    def handle_stream(self: HTTPServer, stream: Any, address: Any) -> None:
        sock = _stream_socket(stream)
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid not in free:
            open_ = [s for s in held.get(uid, []) if not s.closed()]
            if len(open_) >= n:
                held[uid] = open_
                stream.close()
                return
            held[uid] = [*open_, stream]
        accept(self, stream, address)
    HTTPServer.handle_stream = handle_stream  # type: ignore[method-assign]
