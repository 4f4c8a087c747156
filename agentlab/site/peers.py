"""Who is at the other end of a loopback connection: the account that owns the client's socket.

On a workshop hub every participant's kernel connects to the site and the model from 127.0.0.1, so an address is
no way to tell one participant from another: a flood from one kernel shared its address, and so its share of
connections, with everyone's. The kernel knows which account owns each socket (``ss -e`` shows it); this asks it
for the one socket at the other end, by its four addresses, over the sock_diag netlink interface (linux/inet_diag.h):
one request and one answer, a few microseconds, and no privilege needed. An account cannot pose as another.

Elsewhere (another system, or the kernel says no) :func:`source_of` falls back to the address, as before.
"""
from __future__ import annotations

import ipaddress
import socket
import struct

__all__ = ["loopback_owner", "source_of"]

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBxI")  # inet_diag_req_v2 before its socket id: family, protocol, extensions, states
_UID_AT = 4 + 48 + 12  # inet_diag_msg: family, state, timer, retrans; the socket id; expires, rqueue, wqueue; uid
_STATE_AT = 1
_ESTABLISHED = 1  # a socket its program has closed (FIN_WAIT, TIME_WAIT) is the kernel's now: its uid reads 0


def _sockid(family: int, local: tuple, remote: tuple) -> bytes:
    """inet_diag_sockid of the socket bound to ``local`` and connected to ``remote`` (ports and addresses in network
    order, the interface left open, no cookie)."""
    def address(host: str) -> bytes:
        packed = socket.inet_pton(family, host)
        return packed + b"\0" * (16 - len(packed))
    return (struct.pack("!HH", local[1], remote[1]) + address(local[0]) + address(remote[0])
            + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))


def loopback_owner(client: tuple, server: tuple) -> int | None:
    """The uid that owns the socket at ``client`` connected to ``server`` on this machine; None when the kernel
    cannot say (no such socket, no netlink here) or the socket is no longer its program's (closed already)."""
    family = socket.AF_INET6 if ":" in client[0] else socket.AF_INET
    body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + _sockid(family, client, server)
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.send(_HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + body)
            answer = nl.recv(65536)
    except (OSError, AttributeError):  # AttributeError: no AF_NETLINK on this system
        return None
    if len(answer) < _HEADER.size + _UID_AT + 4:
        return None
    _, kind, _, _, _ = _HEADER.unpack_from(answer)
    if kind == _NLMSG_ERROR or answer[_HEADER.size + _STATE_AT] != _ESTABLISHED:
        return None
    return int(struct.unpack_from("=I", answer, _HEADER.size + _UID_AT)[0])


def source_of(client: tuple | None, server: tuple | None) -> str:
    """The key a connection's share is counted under: the owning account for a loopback client (several people's
    programs share 127.0.0.1 on one machine), else the client's address. A loopback client whose account cannot be
    read (it closed its end before it was accepted) shares the address's key, which no live account's client has."""
    if not client:
        return "?"
    host = str(client[0])
    try:
        loopback = ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host
    if loopback and server:
        uid = loopback_owner((host, int(client[1])), (str(server[0]), int(server[1])))
        if uid is not None:
            return f"uid {uid}"  # not the address too: any 127.x address is this machine, one account's all
    return host
