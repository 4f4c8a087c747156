"""agentlab.hub.records: what a participant can make the hub write stays bounded (its logs, a request's body).

The hub's own test (tests/test_hub.py) floods a running room's hub and reads its log and database.
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlab.hub import records
from agentlab.hub.launch import LogWatch


def _lines(n: int, tag: str = "x", width: int = 100) -> bytes:
    return b"".join(f"{tag} {i:06d} ".ljust(width - 1, "-").encode() + b"\n" for i in range(n))


def test_a_log_past_its_cap_keeps_its_last_part_aside_and_its_writer_goes_on_at_the_start(tmp_path):
    log = tmp_path / "hub.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # as the launcher opens the hub's stdout
    try:
        os.write(fd, _lines(100))  # 10,000 bytes
        assert records.trim(log, 20_000) is False and log.stat().st_size == 10_000
        os.write(fd, _lines(300, "y"))  # 40,000 bytes in all
        assert records.trim(log, 20_000) is True
        assert log.stat().st_size == 0
        aside = (tmp_path / "hub.log.1").read_bytes()
        assert len(aside) <= 20_000 and aside.endswith(_lines(300, "y")[-20_000:])
        assert aside.split(b"\n")[0].startswith(b"y ")  # from a line's start: no half line first
        os.write(fd, b"after the trim\n")  # the writer's next line: at the start of the emptied file
        assert log.read_bytes() == b"after the trim\n"
    finally:
        os.close(fd)
    assert oct((tmp_path / "hub.log.1").stat().st_mode & 0o777) == "0o600"


def test_trimming_never_follows_a_link_planted_for_the_log(tmp_path):
    """A service's account owns its logs' folder: a link there to a file of root's must not be emptied by root,
    nor the part set aside written through a link or a second name of another file."""
    precious = tmp_path / "precious"
    precious.write_bytes(_lines(500))
    (tmp_path / "site.log").symlink_to(precious)
    assert records.trim(tmp_path / "site.log", 1000) is False
    assert precious.stat().st_size == 50_000 and not (tmp_path / "site.log.1").exists()
    for kind in ("symlink", "hardlink"):
        log = tmp_path / f"{kind}.log"
        log.write_bytes(_lines(50))
        aside = tmp_path / f"{kind}.log.1"
        aside.symlink_to(precious) if kind == "symlink" else os.link(precious, aside)
        assert records.trim(log, 1000) is False, kind
        assert precious.read_bytes() == _lines(500) and log.stat().st_size == 5000, kind


def test_the_trimmer_trims_when_its_process_has_no_file_descriptor_left(tmp_path):
    """Out of descriptors (a flood of idle connections to the hub), the hub wrote the most lines, and each trim
    failed opening the log. The trimmer now holds its files open from its start."""
    import subprocess
    import sys
    log = tmp_path / "jupyterhub.log"
    code = f"""
import os, resource, sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
from pathlib import Path
from agentlab.hub import records
log = Path({str(log)!r})
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
trimmer = records.LogTrimmer(records.room_logs(log, log.parent / "logs"), cap=10_000, every=0.05).start()
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
for _ in range(20):
    os.write(fd, (b"x" * 99 + b"\\n") * 100)  # 10 kB a time, 200 kB in all
    time.sleep(0.02)
time.sleep(0.5)
size, trimmed = log.stat().st_size, trimmer.trimmed  # read while no descriptor is left
for fd in held:  # given back before the interpreter's exit, which needs some
    os.close(fd)
print(size, trimmed)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    size, trimmed = map(int, out.stdout.split())
    assert size <= 10_000 and trimmed >= 2, out.stdout


def test_the_trimmer_keeps_every_log_of_the_room_under_its_cap_while_they_grow(tmp_path):
    hub_log, services = tmp_path / "hub" / "jupyterhub.log", tmp_path / "logs"
    hub_log.parent.mkdir()
    services.mkdir()
    files = [hub_log, services / "site.log", services / "redis.log"]
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) for p in files]
    trimmer = records.LogTrimmer(records.room_logs(hub_log, services), cap=50_000, every=0.05).start()
    try:
        for _ in range(40):  # 40 x 10 kB into each: 400 kB each, eight times the cap
            for fd in fds:
                os.write(fd, _lines(100))
            time.sleep(0.01)
        deadline = time.monotonic() + 5
        while any(p.stat().st_size > 50_000 for p in files) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        trimmer.stop()
        for fd in fds:
            os.close(fd)
    assert all(p.stat().st_size <= 50_000 for p in files), [p.stat().st_size for p in files]
    assert all(p.with_name(p.name + ".1").stat().st_size <= 50_000 for p in files)
    assert trimmer.trimmed >= 3  # each at least once
    # a moved-aside part is not itself a log to trim, nor is anything else in the folder
    assert sorted(p.name for p in records.room_logs(hub_log, services)()) == ["jupyterhub.log", "redis.log", "site.log"]


def test_the_trainers_terminal_reads_a_log_that_was_emptied_from_its_start(tmp_path):
    log = tmp_path / "hub" / "jupyterhub.log"
    log.parent.mkdir()
    log.write_bytes(_lines(200))
    watch = LogWatch(log)  # from the log's end, as at the hub's start
    with log.open("ab") as out:
        out.write(_lines(100))
        out.flush()
        assert watch.poll() == [] and watch.offset == 30_000
        records.trim(log, 1000)
        line = "[E 2026-12-06 10:00:00.000 JupyterHub app:1] Service site exited with status 1\n"
        out.write(line.encode())
        out.flush()
    said = watch.poll()
    assert len(said) == 1 and "site" in said[0], said  # before: read from its old offset, past the end: nothing


def test_one_look_at_the_log_reads_a_bounded_part_of_it(tmp_path, monkeypatch):
    import agentlab.hub.launch as launch
    monkeypatch.setattr(launch, "READ_AT_MOST", 10_000)
    monkeypatch.setattr(launch, "LINE_AT_MOST", 500)
    log = tmp_path / "jupyterhub.log"
    log.write_bytes(b"")
    watch = LogWatch(log)
    log.write_bytes(b"z" * 35_000)  # a line without end, larger than a look
    for _ in range(4):
        watch.poll()
    assert watch.offset == 35_000 and len(watch._partial) <= 500


def _post(port: int, size: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode())
        try:
            s.sendall(b"a" * size)
        except OSError:  # the server closed the connection before reading the body: what is being tested
            pass
        return s.recv(200)


@contextlib.contextmanager
def _bounded_server(handlers: list, *calls: dict) -> Iterator[int]:
    """A Tornado server made after ``bound_requests(**call)`` for each of ``calls`` (as the hub's process makes its
    own), served from a thread for 5 s: its port. Tornado's own ``initialize`` is put back after."""
    import asyncio

    import tornado.httpserver
    import tornado.netutil
    import tornado.web
    made = tornado.httpserver.HTTPServer.initialize
    ready, port = threading.Event(), [0]

    def serve() -> None:
        async def main() -> None:
            server = tornado.httpserver.HTTPServer(tornado.web.Application(handlers))
            [sock] = tornado.netutil.bind_sockets(0, "127.0.0.1")
            server.add_sockets([sock])
            port[0] = sock.getsockname()[1]
            ready.set()
            await asyncio.sleep(5)
            server.stop()
        asyncio.run(main())

    try:
        for call in calls:
            records.bound_requests(**call)
        threading.Thread(target=serve, daemon=True).start()
        assert ready.wait(10)
        yield port[0]
    finally:
        tornado.httpserver.HTTPServer.initialize = made  # type: ignore[method-assign]


def test_a_body_past_the_bound_is_refused_before_it_is_read():
    """JupyterHub makes its HTTP server with Tornado's default, a 100 MB body; after bound_requests every server made
    in the process refuses one past the bound, and a body under it still arrives whole."""
    import tornado.web
    got: list[int] = []

    class Echo(tornado.web.RequestHandler):
        def post(self) -> None:
            got.append(len(self.request.body))
            self.write("ok")

    # twice: Tornado's own wrapped, once
    with _bounded_server([("/x", Echo)], {"max_body": 64 << 10}, {"max_body": 64 << 10}) as port:
        assert b" 200 " in _post(port, 60 << 10) and got == [60 << 10]
        assert b" 400 " in _post(port, 2 << 20) and got == [60 << 10]  # never handed to the handler


def test_a_connection_that_sends_nothing_is_closed_and_the_hub_may_hold_as_many_files_as_the_machine_lets_it():
    """Every participant's kernel reaches the hub's port: idle connections, kept an hour by Tornado, used up the hub's
    1,024 files in one cell. Now a silent connection is closed after the bound, and the limit is the hard one."""
    import subprocess
    import sys
    with _bounded_server([], {"idle": 0.5}) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        t0 = time.monotonic()
        assert s.recv(10) == b""  # closed by the server, not by the client's 10 s
        assert time.monotonic() - t0 < 9  # after the bound (0.5 s), with a loaded host's slack
    code = ("import resource, sys; sys.path.insert(0, sys.argv[1]); from agentlab.hub import records\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
            "print(records.more_files(), min(hard, 1 << 20) if hard != resource.RLIM_INFINITY else 1 << 20)")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent.parent)], capture_output=True,
                         text=True, timeout=60, check=True)
    now, want = map(int, out.stdout.split())
    assert now == want >= 256


@pytest.mark.parametrize("scope", ["tokens", "users:shares", "self", "admin:users"])
def test_a_participant_has_no_right_that_adds_rows_at_each_request(scope):
    from agentlab.hub.config import HubSettings, build
    s = HubSettings(root=Path("/r"), state=Path("/s"), python=Path("/p"), proxy=Path("/x"), workshop_password="pw")
    [user] = [r for r in build(s)["JupyterHub"]["load_roles"] if r["name"] == "user"]
    assert not any(x.split("!")[0] == scope for x in user["scopes"]), user


def test_a_participants_server_log_is_kept_under_its_cap_and_its_older_part_stays_theirs(tmp_path):
    """Anyone could make a participant's server print: a flood of long requests to its port grew its log 54 MB a
    second, and messages pushed into its kernel filled its owner's 2 GB disk for good. The room's trimmer keeps each
    participant's server log under the cap too; the part it sets aside is the participant's own file."""
    from agentlab.hub.disks import SERVER_LOG
    hub_log, services, homes = tmp_path / "jupyterhub.log", tmp_path / "logs", tmp_path / "homes"
    services.mkdir()
    hub_log.write_text("")
    (homes / "ana").mkdir(parents=True)
    log = homes / "ana" / SERVER_LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    if os.geteuid() == 0:
        os.chown(log, 65534, 65534)  # the participant's, not the hub's
    trimmer = records.LogTrimmer(records.room_logs(hub_log, services, homes), cap=50_000, every=0.05).start()
    try:
        for _ in range(40):
            os.write(fd, _lines(100))
            time.sleep(0.01)
        deadline = time.monotonic() + 5
        while log.stat().st_size > 50_000 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        trimmer.stop()
        os.close(fd)
    aside = log.with_name(SERVER_LOG + ".1")
    assert log.stat().st_size <= 50_000 and 0 < aside.stat().st_size <= 50_000
    assert aside.stat().st_uid == log.stat().st_uid
