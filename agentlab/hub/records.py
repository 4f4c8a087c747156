"""The hub's own records stay bounded, whatever a participant sends it (README.md#a-workshop-on-one-machine).

A participant's files are on a disk of their own (:mod:`agentlab.hub.disks`); what the hub itself writes is on the
machine's disk, and a participant could make it write without end:

- **a request's body.** Tornado reads up to 100 MB of one request before the hub sees it, and JupyterHub keeps
  some of what it reads (a token's note went into its database whole). The hub's own requests are a login form
  and small JSON: :func:`bound_requests` refuses a body past :data:`MAX_BODY` before it is read.
- **its database.** A participant's default rights (JupyterHub's ``self``) let them make API tokens and share
  codes, each a row, as many as they ask for. Nothing in the room needs either: :data:`PARTICIPANT_SCOPES` is
  ``self`` without them.
- **its log and the services' logs.** Every refused request is a line with its address in it (up to 16 kB each,
  the proxy's header limit), hundreds a second. :class:`LogTrimmer` keeps each log under a cap: past it, the
  last part is kept as ``NAME.1`` and the log starts again. The writers keep their files open in append mode, so
  their next line goes to the start of the emptied file; a line written between the copy and the emptying (a
  millisecond) is lost.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["LOG_CAP", "MAX_BODY", "PARTICIPANT_SCOPES", "LogTrimmer", "bound_requests", "room_logs", "trim"]

#: the largest request body the hub reads: its login form is under a kilobyte, its API's JSON a few
MAX_BODY = 1 << 20

#: each log's cap by default; the part moved aside is at most as large again
LOG_CAP = 64 << 20

#: what a participant may do at the hub: JupyterHub's ``self`` (read their own record, report activity, start,
#: stop and use their own server) without ``tokens`` and the share scopes, which add rows to the hub's database at
#: each request (the trainer's view's access scope is added beside these, agentlab.hub.progress)
PARTICIPANT_SCOPES = ("read:users!user", "users:activity!user", "servers!user", "access:servers!user")


def bound_requests(max_body: int = MAX_BODY) -> None:
    """Every HTTP server made in this process after the call refuses a body past ``max_body`` bytes (400, before it
    is read). JupyterHub makes its server with Tornado's default (100 MB) and no setting of its own reaches it:
    the default is changed here, in the hub's process only (hub/jupyterhub_config.py calls this)."""
    from tornado.httpserver import HTTPServer
    made = HTTPServer.initialize
    if getattr(made, "agentlab_max_body", None) == max_body:
        return

    @functools.wraps(made)
    def initialize(self: HTTPServer, *args: object, **kw: object) -> None:
        kw.setdefault("max_body_size", max_body)
        made(self, *args, **kw)  # type: ignore[arg-type]
    initialize.agentlab_max_body = max_body  # type: ignore[attr-defined]
    HTTPServer.initialize = initialize  # type: ignore[method-assign]


def trim(path: Path, cap: int) -> bool:
    """When ``path`` is past ``cap`` bytes: its last ``cap`` bytes (from a line's start) go to ``path.1`` (replacing
    what was there) and ``path`` is emptied in place, so its writers, in append mode, go on at its start. True when
    it was trimmed. Never follows a link: a service's account owns its logs' folder and could plant one."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        if size <= cap:
            return False
        os.lseek(fd, size - cap - 1, os.SEEK_SET)  # and the byte before: is the window's first a line's start?
        kept = os.read(fd, cap + 1)
        start = (kept.find(b"\n") + 1) or 1  # from a whole line (none in the window: all of it)
        aside = path.with_name(path.name + ".1")
        tmp = path.with_name(path.name + ".1.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(out, kept[start:])
        finally:
            os.close(out)
        os.replace(tmp, aside)
        os.ftruncate(fd, 0)
        return True
    finally:
        os.close(fd)


class LogTrimmer:
    """A thread that keeps every log ``paths()`` names under ``cap`` bytes (:func:`trim`), looking every ``every``
    seconds. A thread of its own, not the hub's event loop: a flood of requests is what keeps that loop busy."""

    def __init__(self, paths: Callable[[], Iterable[Path]], cap: int = LOG_CAP, every: float = 1.0):
        self.paths, self.cap, self.every = paths, cap, every
        self.trimmed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentlab-log-trimmer", daemon=True)

    def start(self) -> LogTrimmer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def once(self) -> int:
        """Trim what is past the cap now; how many logs were trimmed."""
        done = 0
        for path in self.paths():
            try:
                done += trim(path, self.cap)
            except OSError:  # a full disk, a log that went away: tried again at the next look
                continue
        self.trimmed += done
        return done

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.once()


def room_logs(hub_log: Path, services: Path) -> Callable[[], list[Path]]:
    """The logs of a room: the hub's (where the proxy writes too) and each service's in ``services``."""
    def paths() -> list[Path]:
        try:
            own = sorted(p for p in services.iterdir() if p.name.endswith(".log"))
        except OSError:
            own = []
        return [hub_log, *own]
    return paths
