"""Where idempotency records and held calls live, behind one small interface.

A side-effect call is *claimed* under its idempotency key before it runs, with a
lease. Exactly one claimant gets ``new``; everybody else gets

* ``replay``: the call took effect; here is its recorded result,
* ``conflict``: same key, different arguments (a second refund of one order for another amount),
* ``in_flight``: someone is running it now (the lease has not run out),
* ``unknown``: it was started and never finished: its process died past the lease, its reply
  was lost, or it timed out while still running. Nobody can say whether it took effect, so
  nobody runs it again until a person (or a reconcile job that checks the backend) calls
  :meth:`~Store.resolve`.

The guarantee lives in the storage itself: a primary key in SQLite, so two processes
claiming at once still run the action once; on Redis (``agentlab/redis_store.py``) a Lua
script and a lease taken with ``SET NX PX``, so processes on several machines share it.
:func:`open_store` picks one by URL (docs/guards.md#idempotency-across-processes).
"""
from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .jsonutil import escape_surrogates

# the records live in store_types.py, which redis_store.py shares; named here as they always were
from .store_types import WAITING_STATES, Approval, ApprovalState, Claim, ClaimStatus, Store, _judge, _Record, digest

__all__ = ["WAITING_STATES", "Approval", "ApprovalState", "Claim", "ClaimStatus", "MemoryStore", "SQLiteStore",
           "Store", "connect_sqlite", "open_store", "quietly", "result_json"]

_NEW = Claim("new")  # frozen: one answer shared by every new claim


class MemoryStore:
    """In one process only; a lock makes it safe across threads."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._approvals: dict[str, Approval] = {}
        self._held_by: dict[str, list[str]] = {}  # a session's held calls' ids: each run of it reads its own

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._records)} keys, {len(self._approvals)} approvals)"

    def claim(self, key: str, fingerprint: str, *, lease: float = 60.0) -> Claim:
        now = self._clock()
        with self._lock:
            rec = self._records.get(key)
            if rec is None:
                self._records[key] = _Record(digest(fingerprint), "running", None, now + lease)
                return _NEW
            if rec.state == "running" and rec.expires <= now:
                self._records[key] = rec = replace(rec, state="unknown")
        return _judge(rec, fingerprint)

    def finish(self, key: str, result: str) -> None:
        with self._lock:
            rec = self._records.get(key)
            if rec is not None:  # built directly: dataclasses.replace walks every field again, on every write
                self._records[key] = _Record(rec.fingerprint, "done", result, rec.expires)

    def release(self, key: str) -> None:
        with self._lock:
            rec = self._records.get(key)
            if rec is not None and rec.state == "running":
                del self._records[key]

    def mark_unknown(self, key: str) -> None:
        with self._lock:
            rec = self._records.get(key)
            if rec is not None and rec.state == "running":
                self._records[key] = replace(rec, state="unknown")

    def result(self, key: str) -> str | None:
        """The recorded result of a finished call under ``key`` (None while it runs or is unknown)."""
        rec = self._records.get(key)
        return rec.result if rec is not None and rec.state == "done" else None

    def unknown(self) -> list[str]:
        now = self._clock()
        with self._lock:
            return [k for k, r in self._records.items()
                    if r.state == "unknown" or (r.state == "running" and r.expires <= now)]

    def resolve(self, key: str, result: str | None) -> bool:
        with self._lock:
            rec = self._records.get(key)
            # only an unknown outcome is a person's to settle; a call still within its lease is running
            if rec is None or rec.state == "done" or (rec.state == "running" and rec.expires > self._clock()):
                return False
            if result is None:
                del self._records[key]
            else:
                self._records[key] = replace(rec, state="done", result=result)
            return True

    def add_approval(self, approval: Approval) -> Approval:
        with self._lock:
            kept = self._approvals.get(approval.id)
            if kept is not None:  # held already (the same call, or the same object added twice): listed once
                return kept
            self._approvals[approval.id] = approval
            self._held_by.setdefault(approval.session_id, []).append(approval.id)
            return approval

    def get_approval(self, approval_id: str) -> Approval | None:
        return self._approvals.get(approval_id)

    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None:
        with self._lock:
            a = self._approvals.get(approval_id)
            if a is None or not a.open:
                return None
            self._approvals[approval_id] = a = replace(a, state=state, decision=decision, error=None, told=False)
            return a

    def set_approval_result(self, approval_id: str, result: str | None, *, error: str | None = None,
                            state: ApprovalState | None = None) -> None:
        with self._lock:
            a = self._approvals[approval_id]
            state = state or ("failed" if error is not None else a.state)
            self._approvals[approval_id] = replace(a, result=result, error=error, state=state, told=False)

    def mark_told(self, approval_id: str) -> None:
        with self._lock:
            self._approvals[approval_id] = replace(self._approvals[approval_id], told=True)

    def approvals(self, session_id: str | None = None) -> list[Approval]:
        if session_id is None:
            return list(self._approvals.values())
        with self._lock:
            return [self._approvals[i] for i in self._held_by.get(session_id, ())]


_sleep = time.sleep  # replaced in tests, which have no time to wait


def _busy(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and any(w in str(exc).lower() for w in ("locked", "busy"))


def connect_sqlite(path: str | Path, *init: str | Callable[[sqlite3.Connection], object], wal: bool = False,
                   timeout: float = 30.0) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` that several processes may open at the same moment.

    ``init`` is run in order: SQL scripts (``CREATE TABLE IF NOT EXISTS ...``) or callables given
    the connection (a migration), each safe to run again. ``wal`` switches the file to WAL. The
    connection waits up to ``timeout`` seconds for a lock (SQLite's busy timeout); SQLite answers
    "database is locked" at once, without waiting, when two connections set up a fresh file
    together (the switch to WAL, or two schema writes that would deadlock), so each step is
    retried, with a short random pause, until it passes or ``timeout`` has gone by.
    """
    db = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    steps: list[str | Callable[[sqlite3.Connection], object]] = []
    if wal:
        steps += ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"]
    steps += init
    deadline = time.monotonic() + timeout
    try:
        for step in steps:
            pause = 0.005
            while True:
                try:
                    if isinstance(step, str):
                        db.executescript(step)
                    else:
                        step(db)
                    break
                except sqlite3.OperationalError as exc:
                    if not _busy(exc) or time.monotonic() >= deadline:
                        raise
                    _sleep(pause * (1 + random.random()))  # apart, so the same two do not collide again
                    pause = min(pause * 2, 0.25)
    except BaseException:
        db.close()
        raise
    return db


class SQLiteStore:
    """The embedded default: a file any number of processes can share.

    The primary key on ``claims.key`` is the guard: ``INSERT OR IGNORE`` succeeds for
    exactly one writer, whatever the number of processes. Leases use wall-clock time,
    which every process on the machine shares.
    """

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS claims (
        key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, state TEXT NOT NULL, result TEXT,
        created REAL NOT NULL, expires REAL NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS held_calls (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,
        reason TEXT NOT NULL, state TEXT NOT NULL, decision TEXT NOT NULL DEFAULT '',
        result TEXT, created REAL NOT NULL, error TEXT, told INTEGER NOT NULL DEFAULT 0);
    CREATE INDEX IF NOT EXISTS held_calls_by_session ON held_calls(session_id);
    """
    _CLAIM = ("INSERT OR IGNORE INTO claims(key, fingerprint, state, result, created, expires) "
              "VALUES (?, ?, 'running', NULL, ?, ?)")
    _COLS = "id, session_id, tool, args, reason, state, decision, result, created, error, told"

    def __init__(self, path: str | Path = ":memory:", *, clock: Callable[[], float] = time.time):
        self.path = str(path)
        self._clock = clock
        self._lock = threading.Lock()
        # WAL + NORMAL: readers never wait for the writer, no corruption, no fsync per claim
        self._db = connect_sqlite(self.path, self._SCHEMA, wal=self.path != ":memory:")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        self._db.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _n(self, sql: str, args: tuple = ()) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    def claim(self, key: str, fingerprint: str, *, lease: float = 60.0) -> Claim:
        now = self._clock()
        with self._lock:
            # one statement, one commit: the claim is in the file (and visible to every process) before it returns
            # the arguments' digest, never the arguments: the file is read by every process that shares it
            if self._db.execute(self._CLAIM, (key, digest(fingerprint), now, now + lease)).rowcount == 1:
                return _NEW
            # a claim whose lease ran out was never finished: its outcome is unknown, for good
            self._db.execute("UPDATE claims SET state = 'unknown' WHERE key = ? AND state = 'running' "
                             "AND expires <= ?", (key, now))
            row = self._db.execute("SELECT fingerprint, state, result, expires FROM claims WHERE key = ?",
                                   (key,)).fetchone()
        if row is None:  # released between our insert and select: try once more
            return self.claim(key, fingerprint, lease=lease)
        return _judge(_Record(*row), fingerprint)

    def finish(self, key: str, result: str) -> None:
        with self._lock:
            self._db.execute("UPDATE claims SET state = 'done', result = ? WHERE key = ?", (result, key))

    def release(self, key: str) -> None:
        self._q("DELETE FROM claims WHERE key = ? AND state = 'running'", (key,))

    def mark_unknown(self, key: str) -> None:
        self._q("UPDATE claims SET state = 'unknown' WHERE key = ? AND state = 'running'", (key,))

    def result(self, key: str) -> str | None:
        """The recorded result of a finished call under ``key`` (None while it runs or is unknown)."""
        rows = self._q("SELECT result FROM claims WHERE key = ? AND state = 'done'", (key,))
        return rows[0][0] if rows else None

    def unknown(self) -> list[str]:
        rows = self._q("SELECT key FROM claims WHERE state = 'unknown' OR (state = 'running' AND expires <= ?)",
                       (self._clock(),))
        return [r[0] for r in rows]

    def resolve(self, key: str, result: str | None) -> bool:
        # only an unknown outcome is a person's to settle; a call still within its lease is running
        open_ = "(state = 'unknown' OR (state = 'running' AND expires <= ?))"
        if result is None:
            return self._n(f"DELETE FROM claims WHERE key = ? AND {open_}", (key, self._clock())) == 1
        return self._n(f"UPDATE claims SET state = 'done', result = ? WHERE key = ? AND {open_}",
                       (result, key, self._clock())) == 1

    def add_approval(self, a: Approval) -> Approval:
        self._q(f"INSERT OR IGNORE INTO held_calls({self._COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (a.id, a.session_id, a.tool, a.args, a.reason, a.state, a.decision, a.result,
                 a.created or self._clock(), a.error, int(a.told)))
        return self.get_approval(a.id) or a  # just inserted or already there: rows are never deleted

    def get_approval(self, approval_id: str) -> Approval | None:
        rows = self._q(f"SELECT {self._COLS} FROM held_calls WHERE id = ?", (approval_id,))
        return self._approval(rows[0]) if rows else None

    @staticmethod
    def _approval(row: tuple) -> Approval:
        id_, session, tool, args, reason, state, decision, result, created, error, told = row
        return Approval(id_, session, tool, args, reason, state, decision, result, created, error, bool(told))

    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None:
        # the WHERE on the open states makes a decision happen once
        n = self._n("UPDATE held_calls SET state = ?, decision = ?, error = NULL, told = 0 "
                    "WHERE id = ? AND state IN ('pending', 'failed')", (state, decision, approval_id))
        return self.get_approval(approval_id) if n == 1 else None

    def set_approval_result(self, approval_id: str, result: str | None, *, error: str | None = None,
                            state: ApprovalState | None = None) -> None:
        state = state or ("failed" if error is not None else None)
        if state is None:
            self._q("UPDATE held_calls SET result = ?, error = NULL, told = 0 WHERE id = ?", (result, approval_id))
        else:
            self._q("UPDATE held_calls SET result = ?, error = ?, state = ?, told = 0 WHERE id = ?",
                    (result, error, state, approval_id))

    def mark_told(self, approval_id: str) -> None:
        self._q("UPDATE held_calls SET told = 1 WHERE id = ?", (approval_id,))

    def approvals(self, session_id: str | None = None) -> list[Approval]:
        sql = f"SELECT {self._COLS} FROM held_calls"
        rows = self._q(sql + " WHERE session_id = ?", (session_id,)) if session_id else self._q(sql)
        return [self._approval(r) for r in rows]


def open_store(url: str, *, prefix: str = "agentlab:") -> Store:
    """The store a URL names: ``memory:``, ``sqlite:///abs/path/file.db`` (``sqlite://`` alone: in memory),
    ``redis://host:port/db`` (optionally ``?prefix=name:`` to keep several users of one server apart).
    A bare path is a SQLite file, as ``AGENTLAB_STORE`` always meant."""
    from urllib.parse import parse_qsl, urlencode, urlsplit
    if url in ("memory:", "memory://"):
        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis_store import RedisStore
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        prefix = query.pop("prefix", "") or prefix
        # written out, not urlunsplit: that drops the empty host of unix:///path, and redis then refuses the URL
        rest = f"?{urlencode(query)}" if query else ""
        return RedisStore.from_url(f"{parts.scheme}://{parts.netloc}{parts.path}{rest}", prefix=prefix)
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:").removeprefix("//")  # sqlite:///tmp/a.db is /tmp/a.db
        return SQLiteStore(":memory:" if path in ("", "/:memory:", ":memory:") else path)
    if "://" in url:
        # the URL as given, less its password: a DSN pasted by mistake ends up in a terminal, a CI log, a notebook
        from .redaction import redact_secrets
        raise ValueError(f"a store URL is memory:, sqlite:///path or redis://host:port/db, got {redact_secrets(url)!r}")
    return SQLiteStore(url or ":memory:")


def quietly(fn: Callable[..., object], *args: object) -> bool:
    """Tell a store something after the fact (finish, release, mark unknown); False if it could not be reached,
    for the caller to say so. Bookkeeping after an effect must never turn a done call into a crash or a "retry"."""
    try:
        fn(*args)
        return True
    except Exception:  # noqa: BLE001 - whatever the store raises: the caller reports it as data
        return False


def result_json(data: object) -> str:
    """A tool result as stored JSON text (what a replay returns). Never raises: whatever a tool
    returns (sets, bytes, tuple keys, NaN, cycles, objects whose ``str()`` fails, half an emoji,
    an integer too long for Python to write out) becomes plain, valid JSON that any store can hold."""
    try:
        text = _RESULT(data)
    except Exception:  # noqa: BLE001 - anything the fast path cannot take goes the careful way
        try:
            text = json.dumps(_plain(data, 0, set()), ensure_ascii=False, allow_nan=False)
        except Exception:  # noqa: BLE001 - a container whose own methods raise: its name is all that is left
            text = json.dumps(_text(data))
    return escape_surrogates(text)


def _text(value: object) -> str:
    try:
        text = str(value)[:10_000]
        return text if isinstance(text, str) else f"<{type(value).__name__}>"
    except Exception:  # noqa: BLE001 - a result's broken __str__ must not break the record of its effect
        return f"<{type(value).__name__}>"


# json.dumps(data, ensure_ascii=False, allow_nan=False, default=_text), the encoder made once: every tool result of
# every guarded call is written through it (dumps made the encoder again, its options checked, each time)
_RESULT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_text).encode


def _plain(value: object, depth: int, path: set[int]) -> object:
    """``value`` as plain JSON data; ``path`` holds the containers above it (a cycle is written as text)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        try:  # past Python's digit limit (4,300 by default) an int cannot even be written out
            int.__repr__(value)
            return int(value)
        except ValueError:
            return f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if depth > 50 or id(value) in path:  # absurd nesting, or a cycle
        return _text(value)[:200] if depth > 50 else "<cycle>"
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        path = path | {id(value)}
        if isinstance(value, dict):
            return {(k if isinstance(k, str) else _key(k)): _plain(v, depth + 1, path) for k, v in value.items()}
        return [_plain(v, depth + 1, path) for v in value]
    return _text(value)


def _key(key: object) -> str:
    plain = _plain(key, 51, set())  # a key is written as text; a too-long integer key as its description
    return plain if isinstance(plain, str) else _text(plain)
