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

from agentlab.workbook.tether import RedisNotStarted, local_redis, notebook_redis, tethered

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


def _listening(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(0.5)
            s.connect(str(path))
        return True
    except OSError:
        return False


def _redis_pid(path: Path) -> int:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(str(path))
        s.sendall(b"INFO server\r\n")
        data = b""
        while b"process_id:" not in data or not data.endswith(b"\r\n"):
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
    line = next(x for x in data.decode().splitlines() if x.startswith("process_id:"))
    return int(line.split(":")[1])


# a kernel, as far as its children can tell: it starts a server the way notebook 16 does, says where, then waits to be
# killed (a restart of a kernel that does not answer its shutdown request ends in SIGKILL: no cleanup code runs)
KERNEL = """
import signal, sys, time
from agentlab.workbook.tether import local_redis
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a kernel survives an interrupt
redis = local_redis(sys.argv[1])
print(redis.socket, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_redis_started_by_a_kernel_ends_when_the_kernel_is_killed(tmp_path, how):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    # in a session of its own, as jupyter_client starts a kernel: its interrupt is SIGINT to that whole group
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, start_new_session=True)
    try:
        port = Path(kernel.stdout.readline().strip())
        pid = _redis_pid(port)
        assert not _gone(pid)
        os.killpg(kernel.pid, signal.SIGINT)  # the interrupt button: the kernel's cell stops, its Redis does not
        time.sleep(1.5)
        assert not _gone(pid) and _listening(port), "an interrupt of the kernel stopped its Redis"
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


STUBBORN = ("import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print(os.getpid(), flush=True); time.sleep(600)")


def test_a_command_that_ignores_sigterm_is_killed_and_gone():
    proc = tethered([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
    pid = int(proc._watcher.stdout.readline())
    t0 = time.monotonic()
    proc.stop()
    assert not proc.running and time.monotonic() - t0 < 15
    assert _wait_gone(pid, 5), "the command outlived stop()"


def test_a_watcher_that_does_not_answer_goes_with_its_command(monkeypatch):
    proc = tethered([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
    pid = int(proc._watcher.stdout.readline())
    os.kill(proc.pid, signal.SIGSTOP)  # a watcher that hears nothing: stop() gives up on it
    proc.stop(timeout=0.5)
    assert not proc.running
    assert _wait_gone(pid, 5), "the command outlived its watcher"


def test_a_watcher_told_to_stop_stops_its_command():
    proc = tethered([sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"],
                    stdout=subprocess.PIPE)
    pid = int(proc._watcher.stdout.readline())
    os.kill(proc.pid, signal.SIGTERM)
    assert _wait_gone(pid, 10)
    proc._watcher.wait(4)  # the watcher ends with its command, well before its SIGKILL timer (a handler that waited
    proc.stop()            # for the command deadlocked on the wait lock its own main thread held)


def test_without_redis_installed_there_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert local_redis(tmp_path) is None


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_the_redis_keeps_every_write_on_disk_and_stops_cleanly(tmp_path):
    with local_redis(tmp_path) as redis:
        assert redis.url == f"unix://{redis.socket}?db=0"
        import redis as redis_py
        client = redis_py.Redis.from_url(redis.url)
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("appendfsync")["appendfsync"] == "always"
        client.close()
        port = redis.socket
    assert not _listening(port)
    assert os.path.isdir(tmp_path)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_a_cell_run_twice_stops_its_first_server_and_each_keeps_its_own_files(tmp_path):
    first = local_redis(tmp_path)
    second = local_redis(tmp_path)
    try:
        assert not first.running and not _listening(first.socket)
        assert second.running and _listening(second.socket)
        assert first.folder != second.folder and first.folder.parent == second.folder.parent == tmp_path.resolve()
    finally:
        second.stop()


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_no_other_account_on_the_machine_can_reach_it(tmp_path):
    """On a shared hub every kernel runs on one machine: a Redis on 127.0.0.1 was open to every participant, to read,
    flush or freeze. It listens on no TCP port, on a socket only its own account may open, in a folder of its own."""
    with local_redis(tmp_path) as redis:
        import redis as redis_py
        client = redis_py.Redis.from_url(redis.url)
        assert client.config_get("port")["port"] == "0"
        assert client.config_get("unixsocketperm")["unixsocketperm"] == "700"
        client.close()
        assert redis.socket.stat().st_mode & 0o077 == 0 and redis.folder.stat().st_mode & 0o077 == 0


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_a_folder_too_deep_for_a_socket_still_gets_one(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with local_redis(deep) as redis:
        assert len(os.fsencode(redis.socket)) <= 100 and _listening(redis.socket)
        assert redis.folder.parent == deep.resolve()


def test_a_redis_that_cannot_start_says_what_its_log_said(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "bin" / "redis-server"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --logfile ] && echo 'FATAL: cannot open the "
                    "append only file' > \"$2\"; shift; done\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    with pytest.raises(RedisNotStarted) as err:
        local_redis(tmp_path / "data")
    assert "cannot open the append only file" in err.value.reason
    for lang, said in (("en", "did not start"), ("zh", "没有启动起来")):
        assert notebook_redis(tmp_path / "data", lang) is None
        out = capsys.readouterr().out
        assert said in out and "cannot open the append only file" in out and "Traceback" not in out
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert notebook_redis(tmp_path, "zh") is None
    assert "本机没有安装 redis-server" in capsys.readouterr().out
