"""agentlab.ports: a server's port picked where no outgoing connection takes it first."""
import socket

from agentlab import ports


def test_a_port_is_free_and_below_the_range_connections_take_theirs_from():
    low, high = (int(x) for x in ports._RANGE.read_text().split()) if ports._RANGE.exists() else (49152, 65535)
    picked = {ports.free_port() for _ in range(20)}
    assert len(picked) > 1  # picked at random, not one port every process would try first
    for port in picked:
        assert not low <= port <= high, (port, low, high)
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # and free


def test_an_outgoing_connection_never_lands_on_the_picked_ports_range():
    """The failure this prevents: a port from bind(0) given next to a client's connection as its local end."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.create_connection(server.getsockname())
        try:
            assert client.getsockname()[1] not in ports._candidates()
        finally:
            client.close()


def test_a_taken_port_is_passed_over(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        other = free_other(taken)
        tries = iter([taken, taken, other])
        monkeypatch.setattr(ports._rng, "choice", lambda _: next(tries))
        assert ports.free_port() == other  # the next candidate, not the kernel's fallback


def free_other(taken: int) -> int:
    """A free port near ``taken`` that this process has not handed out lately: free_port passes over those, so one
    of them here made the scripted choices run out (1 run in ~150: a worker's last 100 of 16,384 ports)."""
    for port in range(taken + 1, taken + 200):
        if port in ports._recent:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port near the taken one")


def test_a_port_handed_out_is_not_handed_out_again_soon(monkeypatch):
    first = ports.free_port()
    other = free_other(first)
    tries = iter([first, first, other])  # free again (nothing bound it yet), but this process just gave it out
    monkeypatch.setattr(ports._rng, "choice", lambda _: next(tries))
    assert ports.free_port() == other


def test_an_ipv6_host_gets_an_ipv6_port():
    if not socket.has_ipv6:
        return
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return  # no IPv6 loopback on this machine
    port = ports.free_port("::1")
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", port))


def test_without_a_free_candidate_the_kernel_chooses(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        monkeypatch.setattr(ports._rng, "choice", lambda _: taken)
        port = ports.free_port()
        assert port != taken and port > 0
