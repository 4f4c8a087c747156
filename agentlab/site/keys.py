"""API keys: printed once, stored hashed, each with a whitelist of skills and a quota (docs/site.md#keys-and-limits).

A key is 32 random bytes (``sk-site-`` and base64url). What is kept is its SHA-256: a key
with that much randomness cannot be guessed from its hash, so a slow password hash
would add latency to every call and no safety. The key itself is never stored, never
logged and cannot be shown again; a lost key is replaced, not recovered.

An *operator* key (``keys create --operator``) also opens the call log page, which shows
every caller's calls, and the keys page: it is for a person who runs the site, never for an agent.

A key is revoked (``keys revoke ID``, or the keys page), never deleted: its row stays, listed as revoked, and
it is refused from the next request on, by every replica sharing the file. Each store caches the keys it has
found, and drops that cache whenever a connection has committed to the file since its last look: a revoke through
any replica, or the CLI, empties every replica's cache before its next answer; no timer, no message that could be
missed. The look is the file change counter in the database's header (4 bytes read with ``pread``, which SQLite
itself increments on every commit in its default rollback-journal mode, the mode keys.db is kept in), a tenth of
the cost of asking SQLite for its ``data_version``; a file in WAL mode (whose commits leave that counter alone) is
asked for ``data_version`` as before.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from ..store import connect_sqlite

__all__ = ["PERIODS", "ApiKey", "KeyStore", "hash_key", "parse_quota"]

PERIODS: dict[str, int] = {"minute": 60, "hour": 3600, "day": 86400}
_QUOTA = re.compile(r"^\s*(\d{1,9})\s*/\s*(minute|hour|day)\s*$")


def parse_quota(text: str) -> tuple[int, str]:
    """``"1000/day"`` -> ``(1000, "day")``; ValueError for anything else."""
    m = _QUOTA.match(text or "")
    if not m or int(m.group(1)) < 1:
        raise ValueError(f"a quota looks like 1000/day (per minute, hour or day), got {text!r}")
    return int(m.group(1)), m.group(2)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """A key as stored: its id (the first hex digits of its hash, safe to log), its name, what it may call."""

    id: str
    name: str
    skills: tuple[str, ...]  # ("*",) for every skill
    quota: int | None
    period: str
    created: float
    operator: bool = False  # may read the call log page (every caller's calls)
    revoked: float | None = None  # when it was revoked; a revoked key is refused

    def __repr__(self) -> str:
        role = ", operator" if self.operator else ""
        gone = ", revoked" if self.revoked is not None else ""
        return f"ApiKey({self.id}, {self.name!r}, skills={list(self.skills)}, quota={self.quota}/{self.period}{role}{gone})"

    def allows(self, skill: str) -> bool:
        return "*" in self.skills or skill in self.skills


class KeyStore:
    """Keys in a SQLite file (``keys.db`` in the site's data folder), hashed."""

    def __init__(self, path: str | Path = ":memory:", *, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._lock = threading.Lock()
        # hash -> record of every active key found: the next call with that key is answered without a query of its
        # own. Emptied when the file changed under another connection (a revoke elsewhere): see _fresh
        self._known: dict[str, ApiKey] = {}
        # every replica opens keys.db when it starts: connect_sqlite retries a fresh file's set-up
        self._db = connect_sqlite(path, "CREATE TABLE IF NOT EXISTS keys (hash TEXT PRIMARY KEY, name TEXT NOT NULL, "
                                  "skills TEXT NOT NULL, quota INTEGER, period TEXT NOT NULL, created REAL NOT NULL, "
                                  "operator INTEGER NOT NULL DEFAULT 0, revoked REAL)", _add_columns)
        # the file itself, read-only, for the change counter in its header (see _stamp); none for :memory:
        self._header: int | None = None
        if str(path) != ":memory:":
            try:
                self._header = os.open(str(path), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:  # cannot be opened a second time: data_version on every look, as before
                self._header = None
        self._version = self._stamp()

    def __repr__(self) -> str:
        return f"KeyStore({len(self.all())} keys)"

    def create(self, name: str, skills: Iterable[str] = ("*",), *, quota: int | None = None,
               period: str = "day", operator: bool = False) -> tuple[str, ApiKey]:
        """A new key: ``(the key, its record)``. The key is returned here and nowhere else, ever.

        ``skills`` must name at least one skill (``("*",)`` for every one): an empty whitelist is
        refused rather than read as "everything".
        """
        if period not in PERIODS:
            raise ValueError(f"period must be one of {list(PERIODS)}")
        names = tuple(skills)
        if not names or any(not isinstance(n, str) or not n.strip() for n in names):
            raise ValueError("a key needs at least one skill name (or * for every skill); got an empty one")
        key = "sk-site-" + secrets.token_urlsafe(32)
        digest = hash_key(key)
        record = ApiKey(digest[:12], name, names, quota, period, self._clock(), operator)
        with self._lock:
            self._db.execute("INSERT INTO keys (hash, name, skills, quota, period, created, operator) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", (digest, name, json.dumps(record.skills), quota, period,
                                                              record.created, int(operator)))
        return key, record

    def check(self, key: str | None) -> ApiKey | None:
        """The record of ``key``, or None when it is missing or unknown."""
        if not key or len(key) > 200:
            return None
        digest = hash_key(key)
        with self._lock:
            self._fresh()
            known = self._known.get(digest)
            if known is not None:
                return known
            row = self._db.execute(f"SELECT {_COLS} FROM keys WHERE hash = ?", (digest,)).fetchone()
            if row is None or not hmac.compare_digest(row[0], digest):
                return None
            record = _record(row)
            if record.revoked is not None:
                return None
            self._known[digest] = record
            return record

    def cached(self, key: str | None) -> ApiKey | None:
        """The record of ``key`` when :meth:`check` has found it before and nothing has changed the file since,
        else None (which proves nothing: ask :meth:`check`). One ``pread`` of the file's header (:meth:`_stamp`), no query."""
        if not key or len(key) > 200:
            return None
        with self._lock:
            self._fresh()
            return self._known.get(hash_key(key))

    def all(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first (records only: a key itself is never kept)."""
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLS} FROM keys ORDER BY created, hash").fetchall()
        return [_record(r) for r in rows]

    def revoke(self, which: str) -> list[ApiKey]:
        """Revoke the active key whose id is ``which`` (or whose name is, when one key alone has it): the revoked
        records, ``[]`` when no active key matches. LookupError when the name is several keys' (revoke by id)."""
        now = self._clock()
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLS} FROM keys WHERE revoked IS NULL AND substr(hash, 1, 12) = ?",
                                    (which,)).fetchall()
            if not rows:
                rows = self._db.execute(f"SELECT {_COLS} FROM keys WHERE revoked IS NULL AND name = ?",
                                        (which,)).fetchall()
                if len(rows) > 1:
                    raise LookupError(f"{len(rows)} keys are named {which!r}: revoke one by its id")
            for row in rows:
                self._db.execute("UPDATE keys SET revoked = ? WHERE hash = ?", (now, row[0]))
            self._known.clear()  # at once: in WAL mode this connection's own write does not move data_version
        return [replace(_record(row), revoked=now) for row in rows]

    def _data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _stamp(self) -> tuple[int, bytes] | int:
        """What changes whenever a connection commits to the file: in rollback-journal mode the file change counter
        (bytes 24-27 of the header, incremented by every commit before it ends, so a revoke that has returned is
        always seen), in WAL mode (header bytes 18-19 are 2) or for a file that cannot be read, ``data_version``."""
        if self._header is not None:
            try:
                head = os.pread(self._header, 10, 18)
            except OSError:
                head = b""
            if len(head) == 10 and head[0] == 1 and head[1] == 1:  # legacy (rollback journal) read/write versions
                return 0, head[6:10]
        return self._data_version()

    def _fresh(self) -> None:
        """Empty the cache when a connection (a replica, the CLI, this one) has committed to the file since the last
        look: a revoke anywhere is seen here before the next answer. Called holding the lock."""
        version = self._stamp()
        if version != self._version:
            self._known.clear()
            self._version = version

    def close(self) -> None:
        self._db.close()
        if self._header is not None:
            os.close(self._header)
            self._header = None


_COLS = "hash, name, skills, quota, period, created, operator, revoked"


def _add_columns(db: sqlite3.Connection) -> None:
    """A keys.db from before operator keys, or before revoking, gets the column (its keys are neither)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(keys)")}
    for column, kind in (("operator", "INTEGER NOT NULL DEFAULT 0"), ("revoked", "REAL")):
        if column in have:
            continue
        try:
            db.execute(f"ALTER TABLE keys ADD COLUMN {column} {kind}")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc).lower():  # another replica added it first: done
                raise


def _record(row: tuple) -> ApiKey:
    digest, name, skills, quota, period, created, operator, revoked = row
    return ApiKey(digest[:12], name, tuple(json.loads(skills)), quota, period, created, bool(operator), revoked)
