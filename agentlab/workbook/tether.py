"""Processes a notebook starts that end when its kernel ends, however it ends, and only then.

A server a notebook starts with ``subprocess.Popen`` outlives a kernel that is restarted or killed before the cell
that stops it: it is handed to init and keeps its port, its memory and a place in the participant's process limit
on a shared hub. Each restart of notebook 16 before its last cell could leave one more ``redis-server`` behind. And
it shares the kernel's process group, so the interrupt button (SIGINT to that group) stopped it mid-notebook.

:func:`tethered` starts the command under a small watcher (:data:`WATCHER`, a few lines of the standard library
run with ``python -c``, so it needs nothing of this process's path) in a session of its own, whose stdin is a pipe
from this process. Only this process holds the pipe's other end, so when this process ends (a clean exit, a
restart, SIGKILL) the watcher reads end-of-file, stops the command (SIGTERM, then SIGKILL) and exits. An interrupt
of the kernel reaches neither. No signal handler or ``prctl`` in this process, and the same on Linux and macOS. (A
child this process forks without exec keeps a copy of the pipe's end: the command then lasts until that child ends
too.)
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from ..i18n import Lang, t
from ..redis_store import answers_ping
from ..scratch import scratch_folder

__all__ = ["LocalRedis", "RedisNotStarted", "Tethered", "local_redis", "notebook_redis", "tethered"]

#: seconds the watcher gives the command to stop after SIGTERM, before SIGKILL
STOP_SECONDS = 5.0

#: the watcher: runs ``argv[1:]``; stops it when its own stdin reaches end-of-file (the parent closed the pipe or is
#: gone) or when it is told to stop itself (SIGTERM, SIGHUP); never on SIGINT. Its exit status is the command's
WATCHER = f"""
import os, signal, subprocess, sys, threading
signal.signal(signal.SIGINT, signal.SIG_IGN)
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)

def kill():
    try:
        child.kill()
    except OSError:
        pass

def stop(*_):
    # no wait here: a handler runs in the main thread, inside its child.wait(), which holds the wait lock
    try:
        child.terminate()
    except OSError:
        pass
    timer = threading.Timer({STOP_SECONDS}, kill)
    timer.daemon = True
    timer.start()

def stop_at_eof():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stop()

signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)
threading.Thread(target=stop_at_eof, daemon=True).start()
code = child.wait()
os._exit(code if code >= 0 else 128 - code)  # no interpreter shutdown beside a thread blocked in a read
"""


class Tethered:
    """A command started by :func:`tethered`: it runs until :meth:`stop`, or until this process ends."""

    def __init__(self, watcher: subprocess.Popen):
        self._watcher = watcher

    @property
    def pid(self) -> int:
        """The watcher's process id (the command is its child, in the same process group)."""
        return self._watcher.pid

    @property
    def running(self) -> bool:
        return self._watcher.poll() is None

    def stop(self, timeout: float = STOP_SECONDS + 5) -> None:
        """Stop the command and its watcher: the pipe is closed, exactly as when this process ends."""
        if self._watcher.stdin is not None and not self._watcher.stdin.closed:
            self._watcher.stdin.close()
        try:
            self._watcher.wait(timeout)
        except subprocess.TimeoutExpired:  # a watcher that does not answer: its whole group goes, the command too
            try:
                os.killpg(self._watcher.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._watcher.wait()

    def __enter__(self) -> Tethered:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def tethered(cmd: list[str], **popen: object) -> Tethered:
    """``cmd`` started so that it ends when this process ends (see the module). ``popen``: ``stdout``, ``cwd``..."""
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, *cmd], stdin=subprocess.PIPE,  # type: ignore[call-overload]
                               start_new_session=True, **popen)
    return Tethered(watcher)


class RedisNotStarted(Exception):
    """redis-server is installed but did not start; ``reason`` is the end of its log."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class LocalRedis:
    """A throwaway ``redis-server`` on a Unix socket of its own, tethered to this process (:func:`local_redis`)."""

    def __init__(self, process: Tethered, socket_path: Path, folder: Path):
        self.process, self.socket, self.folder = process, socket_path, folder
        self.url = f"unix://{socket_path}?db=0"

    @property
    def running(self) -> bool:
        return self.process.running

    def stop(self) -> None:
        self.process.stop()

    def __enter__(self) -> LocalRedis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# folder -> the server started for it last: a cell run twice stops its first server rather than keep two
_STARTED: dict[Path, LocalRedis] = {}

#: the longest path a Unix socket may have (108 bytes on Linux, 104 on macOS, with the final NUL)
_SOCKET_BYTES = 100


def local_redis(folder: str | Path, *, wait: float = 10.0) -> LocalRedis | None:
    """A ``redis-server`` as the site requires one (every write on disk before it answers: ``--appendonly yes
    --appendfsync always``), its files and log in a new folder inside ``folder``, ready for connections; None when
    none is installed. It ends with this process even when :meth:`LocalRedis.stop` is never reached (a kernel
    restarted mid-notebook); the one started earlier for the same ``folder`` is stopped first.

    It listens on no TCP port, only on a Unix socket only this account may open (mode 0700, in a folder of mode
    0700): on a shared hub every participant's kernel runs on the same machine, and one on 127.0.0.1 was open to
    all of them, to read, flush or freeze. ``url`` is the ``unix://`` URL the stores take.

    Raises :class:`RedisNotStarted` (the end of its log) when it is installed but did not start."""
    exe = shutil.which("redis-server")
    if exe is None:
        return None
    base = Path(folder).resolve()
    earlier = _STARTED.pop(base, None)
    if earlier is not None:
        earlier.stop()
    base.mkdir(parents=True, exist_ok=True)
    own = base / f"r-{uuid.uuid4().hex[:8]}"  # inside the caller's folder, gone with it
    own.mkdir(mode=0o700)
    log, sock = own / "redis.log", own / "redis.sock"
    if len(os.fsencode(sock)) > _SOCKET_BYTES:  # a deep folder: the socket in a short one of this user's own
        sock = scratch_folder("r-") / "s"
    proc = tethered([exe, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700", "--save", "",
                     "--appendonly", "yes", "--appendfsync", "always", "--dir", str(own), "--logfile", str(log)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and proc.running:
        if answers_ping(sock, 0.5):
            started = _STARTED[base] = LocalRedis(proc, sock, own)
            return started
        time.sleep(0.05)
    proc.stop()
    try:
        reason = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-5:])
    except OSError:
        reason = ""
    raise RedisNotStarted(reason or "redis-server exited without a word")


def notebook_redis(folder: str | Path, lang: Lang) -> LocalRedis | None:
    """:func:`local_redis` for a notebook cell: when there is none, one sentence in ``lang`` says why (not
    installed, or what its log said), and None."""
    try:
        redis = local_redis(folder)
    except RedisNotStarted as exc:
        print(t("nb16.redis_failed", lang, reason=exc.reason))
        return None
    if redis is None:
        print(t("nb16.no_redis", lang))
    return redis
