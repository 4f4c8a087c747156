"""agentlab.workbook.tether: a server a notebook starts ends with its kernel, however the kernel ends."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentlab.workbook.tether import local_redis, tethered

ROOT = Path(__file__).resolve().parent.parent


def _gone(pid: int) -> bool:
    """The process has ended: no such process, or one that only waits to be reaped (a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _redis_pid(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"INFO server\r\n")
        data = b""
        while b"process_id:" not in data or not data.endswith(b"\r\n"):
            data += s.recv(65536)
    line = next(x for x in data.decode().splitlines() if x.startswith("process_id:"))
    return int(line.split(":")[1])


# a kernel, as far as its children can tell: it starts a server the way notebook 16 does, says where, then waits to be
# killed (a restart of a kernel that does not answer its shutdown request ends in SIGKILL: no cleanup code runs)
KERNEL = """
import sys, time
from agentlab.workbook.tether import local_redis
redis = local_redis(sys.argv[1])
print(redis.port, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_redis_started_by_a_kernel_ends_when_the_kernel_is_killed(tmp_path, how):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
    try:
        port = int(kernel.stdout.readline())
        pid = _redis_pid(port)
        assert not _gone(pid)
        kernel.send_signal(how)
        kernel.wait(10)
        assert _wait_gone(pid), "redis-server outlived the kernel that started it"
        assert not _listening(port)
    finally:
        kernel.kill()
        kernel.wait()


def test_stop_ends_the_command_and_the_watcher(tmp_path):
    marker = tmp_path / "ran"
    proc = tethered([sys.executable, "-c", f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); "
                                           "time.sleep(600)"])
    deadline = time.monotonic() + 15
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists() and proc.running
    proc.stop()
    assert not proc.running


def test_a_command_that_ends_by_itself_ends_its_watcher_with_its_status():
    proc = tethered([sys.executable, "-c", "raise SystemExit(3)"])
    assert proc._watcher.wait(15) == 3


def test_a_command_that_ignores_sigterm_is_killed():
    proc = tethered([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                           "print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
    assert proc._watcher.stdout.readline().strip() == b"ready"
    t0 = time.monotonic()
    proc.stop()
    assert not proc.running and time.monotonic() - t0 < 15


def test_without_redis_installed_there_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert local_redis(tmp_path) is None


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_the_redis_keeps_every_write_on_disk_and_stops_cleanly(tmp_path):
    with local_redis(tmp_path) as redis:
        assert redis.url == f"redis://127.0.0.1:{redis.port}/0"
        import redis as redis_py
        client = redis_py.Redis.from_url(redis.url)
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("appendfsync")["appendfsync"] == "always"
        client.close()
        port = redis.port
    assert not _listening(port)
    assert os.path.isdir(tmp_path)
