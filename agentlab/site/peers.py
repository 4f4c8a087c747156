"""Who is at the other end of a connection from this machine: the account that owns the client's socket.

On a workshop hub every participant's kernel connects to the site and the model from 127.0.0.1, so an address is
no way to tell one participant from another: a flood from one kernel shared its address, and so its share of
connections, with everyone's. The kernel knows which account owns each socket (``ss -e`` shows it); this asks it
for the one socket at the other end, by its four addresses, over the sock_diag netlink interface (linux/inet_diag.h):
one request and one answer, a few microseconds, and no privilege needed. An account cannot pose as another.

A client on another machine has no socket here, and the kernel says so: :func:`source_of` then falls back to the
address, as it does on another system or when the kernel says no.
"""
from __future__ import annotations

import ipaddress
import socket
import struct

__all__ = ["socket_owner", "source_of"]

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBxI")  # inet_diag_req_v2 before its socket id: family, protocol, extensions, states
_UID_AT = 4 + 48 + 12  # inet_diag_msg: family, state, timer, retrans; the socket id; expires, rqueue, wqueue; uid
_STATE_AT = 1
_ESTABLISHED = 1


def _sockid(family: int, local: tuple, remote: tuple) -> bytes:
    """inet_diag_sockid of the socket bound to ``local`` and connected to ``remote`` (ports and addresses in network
    order, the interface left open, no cookie)."""
    def address(host: str) -> bytes:
        packed = socket.inet_pton(family, host)
        return packed + b"\0" * (16 - len(packed))
    return (struct.pack("!HH", local[1], remote[1]) + address(local[0]) + address(remote[0])
            + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))


def socket_owner(client: tuple, server: tuple) -> int | None:
    """The uid that owns the socket at ``client`` connected to ``server`` on this machine; None when the kernel
    cannot say (no such socket, no netlink here) or the socket is no longer its program's (closed already)."""
    family = socket.AF_INET6 if ":" in client[0] else socket.AF_INET
    try:
        body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + _sockid(family, client, server)
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.send(_HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + body)
            answer = nl.recv(65536)
    except (OSError, AttributeError, ValueError):  # AttributeError: no AF_NETLINK here; ValueError: not an address
        return None
    if len(answer) < _HEADER.size + _UID_AT + 4:
        return None
    _, kind, _, _, _ = _HEADER.unpack_from(answer)
    if kind != _SOCK_DIAG_BY_FAMILY:  # an error (no such socket), or not the answer asked for
        return None
    uid = int(struct.unpack_from("=I", answer, _HEADER.size + _UID_AT)[0])
    # a socket its program has closed (TIME_WAIT, an orphan) is the kernel's, and its uid reads 0: no one's. A
    # half-closed one (the client shut its sending side) is still its program's, and keeps its account.
    if answer[_HEADER.size + _STATE_AT] != _ESTABLISHED and uid == 0:
        return None
    return uid


def source_of(client: tuple | None, server: tuple | None) -> str:
    """The key a connection's share is counted under: the owning account when the client is on this machine (several
    people's programs share it, and each of its addresses: 127.0.0.1, its LAN address, ``::ffff:127.0.0.1`` on a
    dual-stack server), else the client's address. A local client whose account cannot be read (it closed its end
    before it was accepted) shares the address's key, which no live account's client has."""
    if not client:
        return "?"
    host = str(client[0])
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if server:  # any address may be this machine's: only the kernel knows a socket here, a remote one it has not
        uid = socket_owner((host, int(client[1])), (str(server[0]), int(server[1])))
        if uid is not None:
            return f"uid {uid}"  # not the address too: one account's connections, whichever address they came by
    return host
