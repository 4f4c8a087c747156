"""A free port on this machine, picked where no outgoing connection can take it first.

A port the kernel hands out for ``bind(port 0)`` comes from the ephemeral range, the same range it hands to every
outgoing connection's local end. Between picking it and the server's own bind, a connection opened by anything else
(a room of participants, a flood test opening thousands) can take it, and the server fails with "address already in
use". A port below that range is never handed out implicitly, so only a server that binds it on purpose competes.
"""
from __future__ import annotations

import collections
import random
import socket
from pathlib import Path

__all__ = ["free_port", "port_taken"]

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_rng = random.SystemRandom()  # never a sequence two processes started alike would share


def _candidates() -> range:
    try:
        low, high = (int(x) for x in _RANGE.read_text().split())
    except (OSError, ValueError):  # not Linux: IANA's ephemeral range (macOS, Windows; FreeBSD's starts lower)
        low, high = 49152, 65535
    if low - 1024 >= 4096:
        return range(max(1024, low - 16384), low)
    return range(high + 1, 65536) if 65535 - high >= 4096 else range(1024, 65536)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at ``host`` right now, outside the kernel's ephemeral range where it can be, and
    never one this process handed out in its last hundred picks (a hub starts five services one after another)."""
    family = socket.getaddrinfo(host, None)[0][0]  # ::1 is IPv6: an IPv4 socket refuses it as a taken port would
    ports = _candidates()
    for _ in range(64):
        port = _rng.choice(ports)
        if port in _recent:
            continue
        with socket.socket(family) as s:
            try:
                s.bind((host, port))
            except OSError:  # taken, or still closing: another
                continue
        return _handed(port)
    with socket.socket(family) as s:  # a crowded machine: the kernel's choice after all
        s.bind((host, 0))
        return _handed(int(s.getsockname()[1]))


_recent: collections.deque[int] = collections.deque(maxlen=100)


def _handed(port: int) -> int:
    _recent.append(port)
    return port


def port_taken(host: str, port: int) -> bool:
    """Whether another program listens on ``port`` at ``host`` now: bound as a server binds it (SO_REUSEADDR, so a
    closed connection's TIME_WAIT holds nothing), any other refusal (a port below 1024, a host not this machine's)
    left for the server itself to say. A server started on a taken port said it was serving, then failed in
    uvicorn's English, and the gateway's stayed running, deaf to Ctrl-C."""
    import errno
    import os
    if not port:
        return False  # 0: any free port
    try:
        family = socket.getaddrinfo(host, None)[0][0]
    except OSError:
        return False
    with socket.socket(family) as s:
        if os.name != "nt":  # on Windows the same option lets two programs share a port
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False
