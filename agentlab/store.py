"""Where idempotency records and pending approvals live, behind one small interface.

A side-effect call is *claimed* under its idempotency key before it runs.
Exactly one claimant gets ``new``; everybody else gets ``replay`` (the
recorded result), ``conflict`` (same key, different arguments: the second
refund of one order for another amount) or ``in_flight`` (someone is running
it right now). The guarantee lives in the storage itself: a primary key in
SQLite, so two processes claiming at once still run the action once. A Redis
store (``SET key NX``) fits the same five methods.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

ClaimStatus = Literal["new", "replay", "conflict", "in_flight"]
ApprovalState = Literal["pending", "approved", "rejected"]


@dataclass(frozen=True)
class Claim:
    status: ClaimStatus
    result: str | None = None  # JSON text of the recorded result, for a replay


@dataclass(frozen=True)
class Approval:
    """A risky call waiting for a person. ``args`` is canonical JSON: exactly what will run."""

    id: str
    session_id: str
    tool: str
    args: str
    reason: str
    state: ApprovalState = "pending"
    decision: str = ""
    result: str | None = None
    created: float = 0.0


class Store(Protocol):
    def claim(self, key: str, fingerprint: str) -> Claim: ...
    def finish(self, key: str, result: str) -> None: ...
    def release(self, key: str) -> None: ...
    def add_approval(self, approval: Approval) -> Approval: ...
    def get_approval(self, approval_id: str) -> Approval | None: ...
    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None: ...
    def set_approval_result(self, approval_id: str, result: str) -> None: ...
    def approvals(self, session_id: str | None = None) -> list[Approval]: ...


class MemoryStore:
    """In one process only; a lock makes it safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, tuple[str, str | None]] = {}  # key -> (fingerprint, result or None)
        self._approvals: dict[str, Approval] = {}

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._records)} keys, {len(self._approvals)} approvals)"

    def claim(self, key: str, fingerprint: str) -> Claim:
        with self._lock:
            rec = self._records.get(key)
            if rec is None:
                self._records[key] = (fingerprint, None)
                return Claim("new")
        return _judge(rec[0], rec[1], fingerprint)

    def finish(self, key: str, result: str) -> None:
        with self._lock:
            self._records[key] = (self._records[key][0], result)

    def release(self, key: str) -> None:
        with self._lock:
            rec = self._records.get(key)
            if rec is not None and rec[1] is None:
                del self._records[key]

    def add_approval(self, approval: Approval) -> Approval:
        with self._lock:
            return self._approvals.setdefault(approval.id, approval)

    def get_approval(self, approval_id: str) -> Approval | None:
        return self._approvals.get(approval_id)

    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None:
        with self._lock:
            a = self._approvals.get(approval_id)
            if a is None or a.state != "pending":
                return None
            self._approvals[approval_id] = a = replace(a, state=state, decision=decision)
            return a

    def set_approval_result(self, approval_id: str, result: str) -> None:
        with self._lock:
            self._approvals[approval_id] = replace(self._approvals[approval_id], result=result)

    def approvals(self, session_id: str | None = None) -> list[Approval]:
        return [a for a in self._approvals.values() if session_id is None or a.session_id == session_id]


def _judge(stored_fp: str, result: str | None, fingerprint: str) -> Claim:
    if stored_fp != fingerprint:
        return Claim("conflict", result)
    if result is None:
        return Claim("in_flight")
    return Claim("replay", result)


class SQLiteStore:
    """The embedded default: a file any number of processes can share.

    The primary key on ``idempotency.key`` is the guard: ``INSERT OR IGNORE``
    succeeds for exactly one writer, whatever the number of processes.
    """

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS idempotency (
        key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, result TEXT, created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS approvals (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,
        reason TEXT NOT NULL, state TEXT NOT NULL, decision TEXT NOT NULL DEFAULT '',
        result TEXT, created REAL NOT NULL);
    """

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: no corruption, no fsync per claim
        self._db.executescript(self._SCHEMA)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        self._db.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def claim(self, key: str, fingerprint: str) -> Claim:
        with self._lock:
            cur = self._db.execute("INSERT OR IGNORE INTO idempotency(key, fingerprint, result, created) "
                                   "VALUES (?, ?, NULL, ?)", (key, fingerprint, time.time()))
            if cur.rowcount == 1:
                return Claim("new")
            row = self._db.execute("SELECT fingerprint, result FROM idempotency WHERE key = ?", (key,)).fetchone()
        if row is None:  # released between our insert and select: try once more
            return self.claim(key, fingerprint)
        return _judge(row[0], row[1], fingerprint)

    def finish(self, key: str, result: str) -> None:
        self._q("UPDATE idempotency SET result = ? WHERE key = ?", (result, key))

    def release(self, key: str) -> None:
        self._q("DELETE FROM idempotency WHERE key = ? AND result IS NULL", (key,))

    def add_approval(self, a: Approval) -> Approval:
        self._q("INSERT OR IGNORE INTO approvals(id, session_id, tool, args, reason, state, decision, result, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (a.id, a.session_id, a.tool, a.args, a.reason, a.state, a.decision, a.result, a.created or time.time()))
        return self.get_approval(a.id)  # type: ignore[return-value]

    def get_approval(self, approval_id: str) -> Approval | None:
        rows = self._q("SELECT id, session_id, tool, args, reason, state, decision, result, created "
                       "FROM approvals WHERE id = ?", (approval_id,))
        return Approval(*rows[0]) if rows else None

    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None:
        with self._lock:  # the WHERE state='pending' makes a decision happen once
            cur = self._db.execute("UPDATE approvals SET state = ?, decision = ? WHERE id = ? AND state = 'pending'",
                                   (state, decision, approval_id))
        return self.get_approval(approval_id) if cur.rowcount == 1 else None

    def set_approval_result(self, approval_id: str, result: str) -> None:
        self._q("UPDATE approvals SET result = ? WHERE id = ?", (result, approval_id))

    def approvals(self, session_id: str | None = None) -> list[Approval]:
        sql = "SELECT id, session_id, tool, args, reason, state, decision, result, created FROM approvals"
        rows = self._q(sql + " WHERE session_id = ?", (session_id,)) if session_id else self._q(sql)
        return [Approval(*r) for r in rows]


def result_json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)
