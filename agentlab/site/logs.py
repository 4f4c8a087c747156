"""The site's JSON-lines logs (docs/site.md#logs), in the data folder's ``logs/``::

    access.jsonl   every request: method, path, status, latency
    call.jsonl     every execution: skill, arguments, result, status, latency
    error.jsonl    what failed inside, with the stack: for the operator, never for the model
    audit.jsonl    writes and key operations
    keyless.jsonl  the lines of requests without a valid key, whatever their kind (``"log"`` says which)

Every line carries ``request_id`` and the agent's ``session_id``. API keys never reach a
line: only a key's id (the first digits of its hash) and name are logged; every string
is passed through :func:`~agentlab.errors.redact_secrets`, a field named like a credential
loses its value, and a session id that looks like a key is not kept (:func:`clean_session`).

What one request can write is bounded: a name-like field (a skill, a path) keeps
:data:`FIELD_CHARS` characters, a string inside arguments or results :data:`VALUE_CHARS`, and
a whole line :data:`LINE_BYTES` (its largest fields are cut first). Requests without a valid
key go to ``keyless.jsonl``, capped on its own: however many an anonymous caller sends, they
never rotate an authenticated call out of ``call.jsonl`` or ``audit.jsonl``.

Each file is capped: past ``max_bytes`` it moves to ``.1`` (``.1`` to ``.2``...), keeping
``backups`` old files. Replicas sharing the folder append and rotate under one lock file
(``logs/.lock``, :func:`agentlab.site.files.locked`): a file is moved aside only when the
next line does not fit, by one process, and no line another process wrote is lost.

Audit and error lines are written at once (after the lines waiting for the same file: keyless.jsonl holds every
kind). Access and call lines, two for every request, wait in memory
for about ``flush_seconds`` (:data:`FLUSH_SECONDS`) or until :data:`FLUSH_BYTES` are waiting, and are then
written together, under one lock: written one by one, their lock, ``stat`` and ``write`` were most of what the
site added to a read (benchmarks/bench_site.py). :meth:`SiteLogs.read`, :meth:`SiteLogs.close` and the
process's normal exit write them first; a process killed outright (or ended by ``os._exit``)
loses the lines still waiting, never an audit or error line (docs/site.md#logs).
"""
from __future__ import annotations

import atexit
import json
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ..errors import find_secrets, redact_secrets
from ..i18n import t
from .files import hold, let_go

__all__ = ["FIELD_CHARS", "FLUSH_BYTES", "FLUSH_SECONDS", "LINE_BYTES", "LOGS", "VALUE_CHARS", "LogName", "SiteLogs",
           "clean_session", "scrub"]

LogName = Literal["access", "call", "error", "audit"]
LOGS: tuple[LogName, ...] = ("access", "call", "error", "audit")
KEYLESS: Literal["keyless"] = "keyless"
#: a name-like string field of a line (skill, path, key name, code) keeps at most this many characters
FIELD_CHARS = 200
#: a string inside a line's arguments, result or other nested values keeps at most this many characters
VALUE_CHARS = 4000
#: a line is at most this many bytes (and never more than the file's own cap)
LINE_BYTES = 32_000
_STACK_CHARS = 16_000  # the end of a stack: where the exception is
_CREDENTIAL = re.compile(r"(pass(word)?|secret|token|api[_-]?key|authorization|cookie)$", re.I)
_SESSION = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")
_FIXED = ("ts", "request_id", "session_id", "log")  # never cut from a line
_LOCK = ".lock"  # the lock file every replica's writer holds (agentlab.site.files)
#: seconds an access or call line may wait in memory before it is written, with every other line waiting
FLUSH_SECONDS = 0.1
#: bytes of waiting lines that are written at once, whatever their age
FLUSH_BYTES = 64_000
MAX_FLUSH_SECONDS = 60.0  # the longest a log may keep its lines waiting
_LATER = frozenset({"access", "call"})  # the lines of every request: written in batches


@lru_cache(maxsize=4096)
def _redacted(text: str) -> str:
    # most strings of a line repeat from call to call (a skill's name, a path, a summary): redacting
    # one costs ~18 us whatever its length, remembering it a dictionary lookup
    return redact_secrets(text)


@lru_cache(maxsize=1024)
def _credential(name: str) -> bool:
    return _CREDENTIAL.search(name) is not None


@lru_cache(maxsize=4096)
def _value_text(text: str) -> str:
    # a short string inside a line's arguments or result as the line keeps it (redacted, then cut): one lookup
    return _cut(_redacted(text), VALUE_CHARS)


@lru_cache(maxsize=4096)
def _field_text(text: str) -> str:
    # a short string field of a line (a skill, a path, a key's name) as the line keeps it: one lookup
    return _cut(_redacted(text), FIELD_CHARS)


@lru_cache(maxsize=1024)
def _key_text(name: str) -> tuple[str, bool]:
    # a key of a nested object: as the line keeps it, and whether its value is a credential's
    return _cut(name, FIELD_CHARS), _credential(name)


def _clean(value: Any, depth: int, odd: list | None = None) -> Any:
    """What :func:`scrub` then :func:`_bounded` make of ``value``, in one walk: a line's nested values
    (arguments, results) are walked once per line, not twice. An object's plain values (short strings,
    numbers, flags) are taken in its own loop, without a call each: the usual arguments and results are one
    flat object (about a microsecond less a line, tight loop; the line's JSON encoding is most of what is left).
    ``odd`` is told (an item appended) of a value or key other than JSON's own types, which orjson would write its
    own way (an Enum as its value, a float subclass as text, two NaN keys as one): the line is then written by json."""
    kind = type(value)
    if kind is str or isinstance(value, str):
        return _value_text(value) if len(value) <= 512 else _cut(redact_secrets(value), VALUE_CHARS)
    if depth > 20:
        return "[nested too deep]"
    if value is None or kind is bool or kind is int or kind is float:  # a number or a flag: nothing to walk
        return value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        inner = depth + 1 <= 20  # a value one level down is still within the depth (else _clean says so)
        for k, v in value.items():
            if isinstance(k, str):
                k, secret = _key_text(k)
                if secret and v:
                    out[k] = "[secret removed]"
                    continue
            else:
                if not (k is None or isinstance(k, (int, float))):  # a date, a tuple: JSON keys are text, a line
                    k = _cut(_value_text(str(k)), FIELD_CHARS)      # is never lost to a key json cannot write
                if odd is not None:
                    odd.append(k)
            vk = type(v)
            if vk is str and len(v) <= 512:
                out[k] = _value_text(v)
            elif inner and (v is None or vk is bool or vk is int or vk is float):
                out[k] = v
            else:
                out[k] = _clean(v, depth + 1, odd)
        return out
    if isinstance(value, (list, tuple)):
        return [_clean(v, depth + 1, odd) for v in value]
    if odd is not None:
        odd.append(value)
    return value


def scrub(value: Any, depth: int = 0) -> Any:
    """``value`` with credentials removed from every string and credential-named fields blanked."""
    if isinstance(value, str):
        return _redacted(value) if len(value) <= 512 else redact_secrets(value)
    if depth > 20:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {k: ("[secret removed]" if isinstance(k, str) and _CREDENTIAL.search(k) and v else scrub(v, depth + 1))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, depth + 1) for v in value]
    return value


def clean_session(value: object) -> str | None:
    """The session id a caller sent, or None when it is not one: the one check every transport uses.

    A session id is 1-64 letters, digits and ``_.:-``. One that looks like a credential is
    refused too (an API key sent in the wrong header, a random token with upper and lower case
    letters and digits of 24 characters or more): it would otherwise be stored and shown as is.
    A UUID, a ULID or ``sess-42`` pass.
    """
    if not isinstance(value, str) or not _SESSION.fullmatch(value) or _secret_like(value):
        return None
    return value


def _secret_like(value: str) -> bool:
    if find_secrets(value) or redact_secrets(value) != value:
        return True
    return len(value) >= 24 and any(c.isupper() for c in value) and any(c.islower() for c in value) \
        and any(c.isdigit() for c in value)


def _session_field(value: object) -> str | None:
    """A session id as a line keeps it: valid, or replaced by what it was."""
    if value is None or value == "":
        return None
    if clean_session(value) is not None:
        return str(value)
    return "[secret removed]" if isinstance(value, str) and _secret_like(value[:200]) else "[invalid session id]"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bounded(value: Any, depth: int = 0) -> Any:
    """Every string in ``value`` cut to :data:`VALUE_CHARS` (keys to :data:`FIELD_CHARS`)."""
    if isinstance(value, str):
        return _cut(value, VALUE_CHARS)
    if isinstance(value, dict):
        return {(_cut(k, FIELD_CHARS) if isinstance(k, str) else k): _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v, depth + 1) for v in value]
    return value


def _stack(text: str) -> str:
    # a stack is for the operator, so it is kept; credentials in it (an exception's message) are not
    text = text if len(text) <= _STACK_CHARS else "…" + text[-_STACK_CHARS:]
    return "\n".join(redact_secrets(line) if not line.lstrip().startswith(("File ", "Traceback")) else line
                     for line in text.splitlines())


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # made once: json.dumps with options makes one a call


# orjson, where it is installed (a core dependency): the same JSON value, written compactly, five to ten times faster
# (two lines a request, most of a line's cost). Only a line of JSON's own types is given to it (see _clean); anything it
# still refuses (a lone surrogate, an integer past 64 bits) is written the encoder's way. NaN and the infinities, which
# JSON has not, are written as null
try:
    from orjson import OPT_APPEND_NEWLINE as _QUICK
    from orjson import JSONEncodeError as _QuickError
    from orjson import dumps as _quick
except ImportError:  # pragma: no cover
    _quick = None  # type: ignore[assignment]


def _dump(line: dict, quick: bool = True) -> bytes:
    if quick and _quick is not None:
        try:
            return _quick(line, option=_QUICK)
        except _QuickError:
            pass
    return (_ENCODER.encode(line) + "\n").encode("utf-8", "replace")


def _fit(line: dict, limit: int, quick: bool = True) -> bytes:
    """``line`` as bytes within ``limit``: its largest fields give way first, the ids never."""
    data = _dump(line, quick)
    if len(data) <= limit:
        return data
    line = {**line, "cut": True}
    sizes = sorted(((len(_dump({k: v}, quick)), k) for k, v in line.items() if k not in _FIXED), reverse=True)
    for size, k in sizes:
        line[k] = f"[cut: {size} bytes]"
        data = _dump(line, quick)
        if len(data) <= limit:
            return data
    return _dump({k: line[k] for k in _FIXED if k in line} | {"cut": True}, quick)


class SiteLogs:
    """Appends one JSON object per line, safe across threads and processes, with rotation.

    Args:
        max_bytes, backups: each file's cap and how many moved-aside files are kept.
        keyless_bytes, keyless_backups: the same for ``keyless.jsonl``.
        line_bytes: the cap of one line (at most ``max_bytes``).
        flush_seconds: how long an access or call line may wait in memory (0: every line written at once).
    """

    def __init__(self, folder: str | Path, *, max_bytes: int = 5_000_000, backups: int = 3,
                 keyless_bytes: int = 1_000_000, keyless_backups: int = 1, line_bytes: int = LINE_BYTES,
                 clock: Callable[[], float] = time.time, flush_seconds: float = FLUSH_SECONDS):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes, self.backups, self.clock = max_bytes, backups, clock
        self.keyless_bytes, self.keyless_backups = keyless_bytes, keyless_backups
        self.line_bytes = line_bytes
        if not 0 <= flush_seconds <= MAX_FLUSH_SECONDS:  # NaN too; an endless wait would stop every log's flushes
            raise ValueError(f"flush_seconds must be between 0 and {MAX_FLUSH_SECONDS:g}, got {flush_seconds!r}")
        self.flush_seconds = float(flush_seconds)
        self._lock = threading.Lock()
        # log name -> its file, open for appending; ".lock" -> logs/.lock, held around every append (all replicas)
        self._fds: dict[str, int] = {}
        self._idents: dict[str, tuple[int, int]] = {}
        self._paths: dict[str, Path] = {}  # log name -> device and inode of the file kept open
        self._waiting: dict[str, list[bytes]] = {}  # file -> access and call lines not written yet, oldest first
        self._waiting_bytes = 0
        self._queued = False  # handed to the flusher, which writes them within flush_seconds
        # not at exit: the process's exit closes them anyway, and a finalizer run there (registered after
        # _flush_all, so run before it) closed them under a flush still writing the lines waiting
        weakref.finalize(self, _close_all, self._fds).atexit = False
        _OPEN.add(self)
        self._read_lock = threading.Lock()
        # per file: (device and inode, its first bytes, bytes parsed, the lines): what read() has seen
        self._parsed: dict[str, tuple[tuple[int, int], bytes, int, list[dict]]] = {}

    def __repr__(self) -> str:
        return f"SiteLogs({self.folder})"

    def path(self, name: LogName | Literal["keyless"]) -> Path:
        return self.folder / f"{name}.jsonl"

    def write(self, name: LogName, *, request_id: str, session_id: str | None, **fields: Any) -> None:
        """Append one line to ``name``, or to ``keyless.jsonl`` for a request without a valid key.

        ``keyless=True`` for a request that carried no valid key, False for one that did. When not
        given, a ``call`` line is keyless when it names no ``key_id`` (the site names the key of
        every call it authenticated) and the other logs take the line as before. ``overflow=True``
        sends a keyed caller's line there too: one refused for going past its share.
        """
        keyless = fields.pop("keyless", None)
        if keyless is None:
            keyless = name == "call" and not fields.get("key_id")
        # a keyed caller past its share (rate limited, or refused too often): its lines go where a keyless
        # caller's go, so that no tenant can push the others' history out of the call log either
        overflow = bool(fields.pop("overflow", False))
        keyless = keyless or overflow
        stack = fields.pop("stack", None)
        odd: list = []  # values json and orjson write apart (see _clean): none, the usual line
        line: dict[str, Any] = {"ts": round(self.clock(), 3), "request_id": _cut(str(request_id), FIELD_CHARS),
                                "session_id": _session_field(session_id)}
        if keyless:
            line["log"] = name
        for k, v in fields.items():  # what scrub() then _bounded() would make of them, in one walk
            kind = type(v)
            if v and _credential(k):
                line[k] = "[secret removed]"
            elif kind is str and len(v) <= 512:
                line[k] = _field_text(v)
            elif kind is str:
                line[k] = _cut(redact_secrets(v), FIELD_CHARS)
            elif v is None or kind is bool or kind is int or kind is float:  # most fields: kept as they are
                line[k] = v
            elif isinstance(v, str):  # a str subclass
                line[k] = _cut(_redacted(v) if len(v) <= 512 else redact_secrets(v), FIELD_CHARS)
            else:
                line[k] = _clean(v, 1, odd)
        if stack is not None:
            line["stack"] = _stack(str(stack))
        target = KEYLESS if keyless else name
        data = _fit(line, min(self.line_bytes, self.keyless_bytes if keyless else self.max_bytes), not odd)
        if name in _LATER and self.flush_seconds > 0:
            self._later(target, data)
        else:
            self._append(target, data)

    def _later(self, name: str, data: bytes) -> None:
        """``data`` kept for the next flush: within ``flush_seconds`` (the flusher's), or now when
        :data:`FLUSH_BYTES` are waiting."""
        with self._lock:
            self._waiting.setdefault(name, []).append(data)
            self._waiting_bytes += len(data)
            full = self._waiting_bytes >= FLUSH_BYTES
            queued, self._queued = self._queued, True
        if full:
            self.flush()
        elif not queued:
            _FLUSHER.queue(self)

    def flush(self) -> None:
        """Write every line waiting in memory now (under one hold of the replicas' lock)."""
        with self._lock:
            self._queued = False
            if self._waiting:
                self._locked_write()

    def _append(self, name: str, data: bytes) -> None:
        """``data`` at the end of ``name``'s file now, after the lines waiting in memory (an audit or error line,
        or a line of a log that keeps none waiting)."""
        with self._lock:  # one writer of this process at a time, then one of every replica (the lock file)
            self._locked_write((name, data))

    def _locked_write(self, now: tuple[str, bytes] | None = None) -> None:
        """Every waiting line; or the line ``now`` (file, bytes) after the lines waiting for its file (the others
        keep waiting); each at the end of its file, under the lock file (called holding ``_lock``). The waiting
        lines are taken once the lock file is held (an interrupt while waiting for it leaves them waiting); each
        file is written on its own, so that one that fails (a full disk, a file made unwritable) keeps no other
        file's lines, an audit line's above all, from being written: the first error is raised once every file
        had its turn, and the lines that failed are not written twice."""
        lock = self._fds.get(_LOCK)
        if lock is None:
            lock = self._fds[_LOCK] = os.open(self.folder / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        hold(lock)
        try:
            if now is not None:  # an audit or error line: after the lines waiting for its own file
                name, data = now
                before = self._waiting.pop(name, [])
                self._waiting_bytes -= sum(map(len, before))
                waiting = {name: [*before, data]}
            else:
                waiting, self._waiting, self._waiting_bytes = self._waiting, {}, 0
            failed: BaseException | None = None
            for name, lines in waiting.items():
                try:
                    self._write_lines(name, lines)
                except Exception as exc:  # noqa: BLE001 - the other files still get theirs; raised below
                    failed = failed or exc
            if failed is not None:
                raise failed
        finally:
            let_go(lock)

    def _write_lines(self, name: str, lines: list[bytes]) -> None:
        """``lines`` at the end of ``name``'s file, moved aside first whenever the next line would not fit.

        The file stays open between lines (an ``open`` per line was most of a line's cost); the lines that fit go
        in one unbuffered ``os.write`` to an ``O_APPEND`` descriptor, so they are in the operating system's hands
        when this returns. A ``stat`` of the path tells whether another replica moved the file aside
        meanwhile: then it is opened afresh."""
        path = self._paths.get(name)
        if path is None:
            path = self._paths[name] = self.folder / f"{name}.jsonl"
        cap, backups = (self.keyless_bytes, self.keyless_backups) if name == KEYLESS else (self.max_bytes, self.backups)
        fd, size = self._open_current(name, path)
        batch: list[bytes] = []
        for data in lines:
            if size and size + len(data) > cap:
                if batch:
                    _write_all(fd, b"".join(batch))
                    batch = []
                self._rotate(path, backups)
                fd, size = self._open_current(name, path)
            batch.append(data)
            size += len(data)
        if batch:
            _write_all(fd, b"".join(batch))

    def _after_fork(self) -> None:
        """In a forked child: the parent's descriptors share its lock, the lines waiting are the parent's to
        write, and a lock the parent's flusher held at the fork would never be let go; all anew."""
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._fds.clear()
        self._idents.clear()
        self._waiting, self._waiting_bytes, self._queued = {}, 0, False

    def _open_current(self, name: str, path: Path) -> tuple[int, int]:
        """The descriptor of the file now at ``path`` (the one kept open, unless it was moved aside or
        removed) and its size."""
        fd = self._fds.get(name)
        try:
            st = os.stat(str(path))
        except FileNotFoundError:
            st = None
        # an open file keeps its device and inode: remembered when it was opened, no fstat per line
        if fd is not None and st is not None and self._idents.get(name) == (st.st_dev, st.st_ino):
            return fd, st.st_size
        if fd is not None:
            os.close(fd)
            del self._fds[name]
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._fds[name] = fd
        mine = os.fstat(fd)
        self._idents[name] = (mine.st_dev, mine.st_ino)
        return fd, mine.st_size

    def close(self) -> None:
        """Write the lines waiting, then close the files kept open (a later write opens them again)."""
        self.flush()
        with self._lock:
            _close_all(self._fds)

    @staticmethod
    def _rotate(path: Path, backups: int) -> None:
        for i in range(backups, 0, -1):
            older = path.with_name(f"{path.name}.{i}")
            if i == backups and older.exists():
                older.unlink()
            newer = path if i == 1 else path.with_name(f"{path.name}.{i - 1}")
            if newer.exists():
                os.replace(newer, older)
        if backups < 1:
            path.unlink(missing_ok=True)

    def read(self, name: LogName | Literal["keyless"]) -> list[dict]:
        """The current file's lines (not the rotated ones), oldest first.

        Parsed once: a second read of an unchanged file costs a ``stat``, and of a file that only
        grew, the new lines. A line being written by another process right now (no newline yet)
        waits for the next read; a line that does not parse is skipped.
        """
        self.flush()
        path = self.path(name)
        try:
            st = path.stat()
        except FileNotFoundError:
            return []
        ident = (st.st_dev, st.st_ino)
        with self._read_lock:
            known = self._parsed.get(name)
            if known is not None and known[0] == ident and known[2] == st.st_size:
                return list(known[3])
            try:
                with path.open("rb") as f:
                    head = f.read(64)
                    lines: list[dict] = []
                    start = 0
                    # the same file, grown (its first line identifies it: an inode may be reused)
                    if known is not None and known[0] == ident and known[2] < st.st_size \
                            and head[:len(known[1])] == known[1]:
                        start, lines = known[2], list(known[3])
                    f.seek(start)
                    chunk = f.read()
            except FileNotFoundError:  # moved aside between the stat and the open: read it next time
                return list(known[3]) if known is not None else []
            end = chunk.rfind(b"\n") + 1
            for raw in chunk[:end].splitlines():
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    lines.append(value)
            self._parsed[name] = (ident, head, start + end, lines)
            return list(lines)


def _write_all(fd: int, data: bytes) -> None:
    done = os.write(fd, data)
    while done < len(data):  # a short write (a full disk, a signal): the rest, never a torn line
        done += os.write(fd, data[done:])


class _Flusher:
    """One thread for every log of the process: a log with lines waiting is handed here once, and written when its
    ``flush_seconds`` have passed, with whatever came meanwhile. Started with the first log that waits; after a
    fork, the child starts its own."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[SiteLogs, float] = {}  # held until written: when each is due (time.monotonic)
        self._thread: threading.Thread | None = None

    def queue(self, logs: SiteLogs) -> None:
        with self._cond:
            self._due.setdefault(logs, time.monotonic() + logs.flush_seconds)
            if self._thread is None or not self._thread.is_alive():
                thread = threading.Thread(target=self._run, name="agentlab-site-logs", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no thread now (a limit, the interpreter shutting down): written at once
                    del self._due[logs]
                    started = False
                else:
                    self._thread, started = thread, True
            else:
                started = True
            self._cond.notify()
        if not started:
            logs.flush()

    def _run(self) -> None:
        while True:
            try:
                self._turn()
            except Exception:  # noqa: BLE001 - the thread writes every log of the process: it never ends
                time.sleep(0.01)

    def _turn(self) -> None:
        with self._cond:
            while not self._due:
                self._cond.wait()
            now = time.monotonic()
            ready = [logs for logs, at in self._due.items() if at <= now]
            if not ready:
                self._cond.wait(min(self._due.values()) - now)
                return
            for logs in ready:
                del self._due[logs]
        for logs in ready:
            try:
                logs.flush()
            except FileNotFoundError:  # the folder was removed (a scratch site's, a check's): nobody reads it
                pass
            except Exception as exc:  # noqa: BLE001 - a full disk, no permission: said, the thread goes on
                try:  # an operator's terminal: both languages, as the log has no reader's language
                    print("\n".join(t("site.logs_unwritable", lg, folder=logs.folder, error=type(exc).__name__)
                                     for lg in ("en", "zh")), file=sys.stderr)
                except Exception:  # noqa: BLE001 - no stderr left to say it on
                    pass


_FLUSHER = _Flusher()
_OPEN: weakref.WeakSet[SiteLogs] = weakref.WeakSet()


def _after_fork() -> None:
    global _FLUSHER
    _FLUSHER = _Flusher()
    for logs in list(_OPEN):
        logs._after_fork()


def _flush_all() -> None:
    """At exit: every log's waiting lines (a clean stop of the site loses none)."""
    for logs in list(_OPEN):
        try:
            logs.flush()
        except Exception:  # noqa: BLE001 - nothing can be done at exit; the others still get written
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
atexit.register(_flush_all)


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:  # closed already
            pass
    fds.clear()
