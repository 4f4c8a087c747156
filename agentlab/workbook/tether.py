"""Processes a notebook starts that end when its kernel ends, however it ends.

A server a notebook starts with ``subprocess.Popen`` outlives a kernel that is restarted or killed before the cell
that stops it: it is handed to init and keeps its port, its memory and a place in the participant's process limit
on a shared hub. Each restart of notebook 16 before its last cell left one more ``redis-server`` behind.

:func:`tethered` starts the command under a small watcher (:data:`WATCHER`, a few lines of the standard library
run with ``python -c``, so it needs nothing of this process's path) whose stdin is a pipe from this process. Only
this process holds the pipe's other end, so when this process ends (a clean exit, a restart, SIGKILL) the watcher
reads end-of-file, stops the command (SIGTERM, then SIGKILL) and exits.
No signal handler or ``prctl`` in this process, and the same on Linux and macOS. (A child this process forks
without exec keeps a copy of the pipe's end: the command then lasts until that child ends too.)
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..ports import free_port

__all__ = ["LocalRedis", "Tethered", "local_redis", "tethered"]

#: seconds the watcher gives the command to stop after SIGTERM, before SIGKILL
STOP_SECONDS = 5.0

#: the watcher: runs ``argv[1:]``, and stops it when its own stdin reaches end-of-file (the parent closed the pipe
#: or is gone); its exit status is the command's
WATCHER = f"""
import os, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)

def stop_at_eof():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    child.terminate()
    try:
        child.wait({STOP_SECONDS})
    except subprocess.TimeoutExpired:
        child.kill()

threading.Thread(target=stop_at_eof, daemon=True).start()
code = child.wait()
os._exit(code if code >= 0 else 128 - code)  # no interpreter shutdown beside a thread blocked in a read
"""


class Tethered:
    """A command started by :func:`tethered`: it runs until :meth:`stop`, or until this process ends."""

    def __init__(self, watcher: subprocess.Popen):
        self._watcher = watcher

    @property
    def running(self) -> bool:
        return self._watcher.poll() is None

    def stop(self, timeout: float = STOP_SECONDS + 5) -> None:
        """Stop the command and its watcher: the pipe is closed, exactly as when this process ends."""
        if self._watcher.stdin is not None and not self._watcher.stdin.closed:
            self._watcher.stdin.close()
        try:
            self._watcher.wait(timeout)
        except subprocess.TimeoutExpired:  # a watcher that does not answer: it goes, and the command with it
            self._watcher.kill()
            self._watcher.wait()

    def __enter__(self) -> Tethered:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def tethered(cmd: list[str], **popen: object) -> Tethered:
    """``cmd`` started so that it ends when this process ends (see the module). ``popen``: ``stdout``, ``cwd``..."""
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, *cmd],
                               stdin=subprocess.PIPE, **popen)  # type: ignore[call-overload]
    return Tethered(watcher)


class LocalRedis:
    """A throwaway ``redis-server`` on a free port of 127.0.0.1, tethered to this process (:func:`local_redis`)."""

    def __init__(self, process: Tethered, port: int):
        self.process, self.port = process, port
        self.url = f"redis://127.0.0.1:{port}/0"

    def stop(self) -> None:
        self.process.stop()

    def __enter__(self) -> LocalRedis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def local_redis(folder: str | Path, *, wait: float = 10.0) -> LocalRedis | None:
    """A ``redis-server`` as the site requires one (every write on disk before it answers: ``--appendonly yes
    --appendfsync always``), its files in ``folder``, ready for connections; None when none is installed. It ends with
    this process even when :meth:`LocalRedis.stop` is never reached (a kernel restarted mid-notebook)."""
    exe = shutil.which("redis-server")
    if exe is None:
        return None
    port = free_port()
    proc = tethered([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
                     "--appendfsync", "always", "--dir", str(folder)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and proc.running:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return LocalRedis(proc, port)
        except OSError:
            time.sleep(0.05)
    proc.stop()
    return None
