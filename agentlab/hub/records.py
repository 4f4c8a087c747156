"""The hub's own records stay bounded, whatever a participant sends it (README.md#a-workshop-on-one-machine).

A participant's files are on a disk of their own (:mod:`agentlab.hub.disks`); what the hub itself writes is on the
machine's disk, and a participant could make it write without end:

- **a request's body.** Tornado reads up to 100 MB of one request before the hub sees it, and JupyterHub keeps
  some of what it reads (a token's note went into its database whole). The hub's own requests are a login form
  and small JSON: :func:`bound_requests` refuses a body past :data:`MAX_BODY` before it is read.
- **its open files.** Every participant's kernel can reach the hub's own port. Idle connections, kept an hour,
  used up its 1,024 files: it accepted no one and logged a traceback per turn of its loop, megabytes a second.
  :func:`bound_requests` closes a silent connection after :data:`IDLE` seconds, :func:`more_files` raises the
  hub's limit to the machine's, and the trimmer holds its files open, so it trims even then.
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
import errno
import functools
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["IDLE", "LOG_CAP", "MAX_BODY", "PARTICIPANT_SCOPES", "LogTrimmer", "bound_requests", "more_files",
           "room_logs", "trim"]

#: the largest request body the hub reads: its login form is under a kilobyte, its API's JSON a few
MAX_BODY = 1 << 20

#: each log's cap by default; the part moved aside is at most as large again
LOG_CAP = 64 << 20

#: seconds a connection to the hub may send nothing before it is closed (Tornado's default: an hour)
IDLE = 20.0

#: what a participant may do at the hub: JupyterHub's ``self`` (read their own record, report activity, start,
#: stop and use their own server) without ``tokens`` and the share scopes, which add rows to the hub's database at
#: each request (the trainer's view's access scope is added beside these, agentlab.hub.progress)
PARTICIPANT_SCOPES = ("read:users!user", "users:activity!user", "servers!user", "access:servers!user")


def bound_requests(max_body: int = MAX_BODY, idle: float = IDLE) -> None:
    """Every HTTP server made in this process after the call refuses a body past ``max_body`` bytes (400, before it
    is read) and closes a connection that sends no request (or no more of its body) for ``idle`` seconds.
    JupyterHub makes its server with Tornado's defaults (100 MB, an idle connection kept an hour) and no setting of
    its own reaches them: the defaults are changed here, in the hub's process only (hub/jupyterhub_config.py)."""
    from tornado.httpserver import HTTPServer
    made = getattr(HTTPServer.initialize, "agentlab_made", HTTPServer.initialize)

    @functools.wraps(made)
    def initialize(self: HTTPServer, *args: object, **kw: object) -> None:
        kw.setdefault("max_body_size", max_body)
        kw.setdefault("idle_connection_timeout", idle)
        kw.setdefault("body_timeout", idle)
        made(self, *args, **kw)  # type: ignore[arg-type]
    initialize.agentlab_made = made  # type: ignore[attr-defined]
    HTTPServer.initialize = initialize  # type: ignore[method-assign]


def more_files(at_most: int = 1 << 20) -> int:
    """This process's limit of open files raised to its hard limit (at most ``at_most``); the limit now. A ``sudo``
    shell gives 1,024, and a participant's kernel opened as many idle connections to the hub in one cell: the hub
    then accepted no one, and wrote a traceback per turn of its loop. The processes the hub starts (the proxy, the
    services) inherit it; a participant's own are held to theirs (agentlab.hub.spawner)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = at_most if hard == resource.RLIM_INFINITY else min(hard, at_most)
    if want > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def trim(path: Path, cap: int) -> bool:
    """When ``path`` is past ``cap`` bytes: its last ``cap`` bytes (from a line's start) go to ``path.1`` (replacing
    what was there) and ``path`` is emptied in place, so its writers, in append mode, go on at its start. True when
    it was trimmed. Never follows a link: a service's account owns its logs' folder and could plant one."""
    try:
        held = _Held.open(path)
    except OSError:
        return False
    try:
        return held.trim(cap)
    finally:
        held.close()


class _Held:
    """A log and its part set aside, both open: trimmed with no file opened then. A process out of descriptors (a
    flood of idle connections) writes the most lines, and a trim that opened a file then failed with them."""

    __slots__ = ("aside", "log")

    def __init__(self, log: int, aside: int):
        self.log, self.aside = log, aside

    @classmethod
    def open(cls, path: Path) -> _Held:
        log = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            aside = os.open(path.with_name(path.name + ".1"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                            0o600)
        except OSError:
            os.close(log)
            raise
        found, own = os.fstat(aside), os.fstat(log)
        # a pipe, or another file's second name (the log too: a participant's is in a folder they own)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1 or not stat.S_ISREG(own.st_mode) or own.st_nlink != 1:
            os.close(log)
            os.close(aside)
            raise OSError(errno.EPERM, "not a log's own file", str(path) + ".1")
        if found.st_uid != own.st_uid and os.geteuid() == 0:  # made here, by root: the log's owner reads it too
            os.fchown(aside, own.st_uid, own.st_gid)
        return cls(log, aside)

    def trim(self, cap: int) -> bool:
        size = os.fstat(self.log).st_size
        if size <= cap:
            return False
        begin = size - cap
        if begin > 0:  # from a whole line: the first after the byte before the window (none near: the window whole)
            head = os.pread(self.log, 1 << 16, begin - 1)
            begin += head.find(b"\n") if b"\n" in head else 0
        os.ftruncate(self.aside, 0)
        # copied by the kernel, not through this process: the lines a writer adds during the copy are lost when the
        # log is emptied, so the copy is kept short (64 MB in tens of milliseconds, where a read and a write took
        # hundreds under a flood)
        at, left = begin, size - begin
        while left > 0:
            done = os.copy_file_range(self.log, self.aside, left, at, at - begin) if _KERNEL_COPY else \
                os.pwrite(self.aside, os.pread(self.log, min(left, 1 << 20), at), at - begin)
            if done <= 0:
                break
            at, left = at + done, left - done
        os.ftruncate(self.log, 0)
        return True

    def close(self) -> None:
        os.close(self.log)
        os.close(self.aside)


_KERNEL_COPY = hasattr(os, "copy_file_range")


class LogTrimmer:
    """A thread that keeps every log ``paths()`` names under ``cap`` bytes (:func:`trim`). Each log is opened once
    and held: out of file descriptors, the hub still trims. It looks every ``every`` seconds, and again at once
    after a trim (a log that grows fast is looked at as fast). A thread of its own, not the hub's event loop: a
    flood of requests is what keeps that loop busy."""

    def __init__(self, paths: Callable[[], Iterable[Path]], cap: int = LOG_CAP, every: float = 1.0):
        self.paths, self.cap, self.every = paths, cap, every
        self.trimmed = 0
        self._held: dict[Path, _Held] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentlab-log-trimmer", daemon=True)

    def start(self) -> LogTrimmer:
        self.once()  # the logs there are now opened while descriptors are plenty
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for held in self._held.values():
            held.close()
        self._held.clear()

    def once(self) -> int:
        """Trim what is past the cap now; how many logs were trimmed."""
        try:
            for path in self.paths():
                if path not in self._held:
                    with contextlib.suppress(OSError):  # not there yet, or not a log's own file: looked for again
                        self._held[path] = _Held.open(path)
        except OSError:  # no descriptor left to list a folder: the logs held already are trimmed
            pass
        done = 0
        for held in list(self._held.values()):
            try:
                done += held.trim(self.cap)
            except OSError:  # a full disk: tried again at the next look
                continue
        self.trimmed += done
        return done

    def _run(self) -> None:
        wait = self.every
        while not self._stop.wait(wait):
            wait = self.every / 10 if self.once() else self.every


def room_logs(hub_log: Path, services: Path, homes: Path | None = None) -> Callable[[], list[Path]]:
    """The logs of a room: the hub's (where the proxy writes too), each service's in ``services``, and each
    participant's server's in their home under ``homes`` (:data:`agentlab.hub.disks.SERVER_LOG`): anyone can make a
    server print (a flood of long requests to its port, messages pushed into its kernel), and one participant's
    flood filled another's disk in 40 s."""
    from .disks import SERVER_LOG

    def paths() -> list[Path]:
        try:
            own = sorted(p for p in services.iterdir() if p.name.endswith(".log"))
        except OSError:
            own = []
        try:
            theirs = sorted(home / SERVER_LOG for home in homes.iterdir()) if homes is not None else []
        except OSError:
            theirs = []
        return [hub_log, *own, *theirs]
    return paths
