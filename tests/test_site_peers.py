"""Who is at the other end of a connection from this machine: the kernel's answer, not the address."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from agentlab.site.peers import socket_owner, source_of


def accepted(listener: socket.socket) -> tuple[socket.socket, tuple, tuple]:
    conn, client = listener.accept()
    return conn, client[:2], conn.getsockname()[:2]


@pytest.mark.parametrize("host, family", [("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)])
def test_a_loopback_client_is_counted_by_its_account_not_its_address(host, family):
    with socket.socket(family) as listener:
        listener.bind((host, 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()[:2]):
            conn, client, server = accepted(listener)
            with conn:
                assert socket_owner(client, server) == os.getuid()
                assert source_of(client, server) == f"uid {os.getuid()}"


def as_nobody(port: int, then: str = "") -> subprocess.Popen:
    """A client of ``port`` run as the account ``nobody``: it connects, does ``then``, and holds on for 5 s."""
    return subprocess.Popen([sys.executable, "-c", "import socket, time\n"
                             f"s = socket.create_connection(('127.0.0.1', {port}))\n{then}\ntime.sleep(5)"],
                            user="nobody", cwd="/")


def test_another_account_is_another_source_on_the_same_address():
    if os.geteuid() != 0:
        pytest.skip("needs root, to connect as another account")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        theirs = as_nobody(port)
        try:
            conn, client, server = accepted(listener)
            with conn, socket.create_connection(("127.0.0.1", port)):
                mine, my_client, _ = accepted(listener)
                with mine:
                    assert source_of(client, server) == "uid 65534"
                    assert source_of(my_client, server) == "uid 0"
        finally:
            theirs.kill()
            theirs.wait()


def test_a_client_that_closed_before_it_was_read_falls_back_to_the_address():
    """A closed socket is the kernel's (its uid reads 0): it must not be counted as root's, or a flood of closed
    connections would use up the share of whoever runs as root."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        socket.create_connection(listener.getsockname()).close()
        time.sleep(0.1)
        conn, client, server = accepted(listener)
        with conn:
            assert socket_owner(client, server) is None
            assert source_of(client, server) == "127.0.0.1"


def test_other_addresses_are_their_own_source():
    assert source_of(("203.0.113.9", 5000), ("10.0.0.1", 8000)) == "203.0.113.9"
    assert source_of(None, None) == "?"
    assert source_of(("not an address", 1), ("127.0.0.1", 2)) == "not an address"


def test_a_dual_stack_server_counts_a_mapped_loopback_client_by_its_account():
    """On a server listening on ``::`` a client of 127.0.0.1 arrives as ``::ffff:127.0.0.1``, which Python does not
    call loopback: every account shared that one key."""
    with socket.socket(socket.AF_INET6) as listener:
        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        listener.bind(("::", 0))
        listener.listen()
        with socket.create_connection(("127.0.0.1", listener.getsockname()[1])):
            conn, client, server = accepted(listener)
            with conn:
                assert client[0] == "::ffff:127.0.0.1"
                assert source_of(client, server) == f"uid {os.getuid()}"


def _own_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: the kernel picks the route's source address
            host = s.getsockname()[0]
        except OSError:
            return None
    return None if host.startswith("127.") else host


def test_a_client_on_this_machine_by_its_other_address_is_still_its_account():
    """Connecting through the machine's own LAN address made a second share for the same account."""
    host = _own_address()
    if host is None:
        pytest.skip("this machine has no address but loopback")
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        with socket.create_connection((host, listener.getsockname()[1])):
            conn, client, server = accepted(listener)
            with conn:
                assert client[0] == host and source_of(client, server) == f"uid {os.getuid()}"


def test_a_half_closed_client_keeps_its_account():
    """A client that sent its request and shut its sending side is still its program's: counted under no one, it
    escaped its account's share."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to connect as another account (root's own closed sockets read uid 0)")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        theirs = as_nobody(port, "s.sendall(b'GET / HTTP/1.1\\r\\n\\r\\n'); s.shutdown(socket.SHUT_WR)")
        try:
            time.sleep(0.5)
            conn, client, server = accepted(listener)
            with conn:
                assert source_of(client, server) == "uid 65534"
        finally:
            theirs.kill()
            theirs.wait()
