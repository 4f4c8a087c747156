"""A free port on this machine, picked where no outgoing connection can take it first.

A port the kernel hands out for ``bind(port 0)`` comes from the ephemeral range, the same range it hands to every
outgoing connection's local end. Between picking it and the server's own bind, a connection opened by anything else
(a room of participants, a flood test opening thousands) can take it, and the server fails with "address already in
use". A port below that range is never handed out implicitly, so only a server that binds it on purpose competes.
"""
from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_rng = random.SystemRandom()  # never a sequence two processes started alike would share


def _candidates() -> range:
    try:
        low, high = (int(x) for x in _RANGE.read_text().split())
    except (OSError, ValueError):  # not Linux: the usual ephemeral range starts at 49152
        low, high = 49152, 65535
    if low - 1024 >= 4096:
        return range(max(1024, low - 16384), low)
    return range(high + 1, 65536) if 65535 - high >= 4096 else range(1024, 65536)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at ``host`` right now, outside the kernel's ephemeral range where it can be."""
    ports = _candidates()
    for _ in range(64):
        port = _rng.choice(ports)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:  # taken, or still closing: another
                continue
            return port
    with socket.socket() as s:  # a crowded machine: the kernel's choice after all
        s.bind((host, 0))
        return int(s.getsockname()[1])
