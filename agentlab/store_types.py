"""What a store holds and answers, whichever backend holds it: claims, held calls, the ``Store`` protocol.

Its own module so that the backends in store.py (memory, SQLite) and redis_store.py (Redis) share these
records without importing each other: store.py's :func:`~agentlab.store.open_store` opens a Redis store,
and the Redis store needs nothing from store.py.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["OPEN_STATES", "WAITING_STATES", "Approval", "ApprovalState", "Claim", "ClaimStatus", "Store"]

ClaimStatus = Literal["new", "replay", "conflict", "in_flight", "unknown"]
ApprovalState = Literal["pending", "approved", "rejected", "failed", "unknown"]
#: states in which a held call may be decided (a failed execution may be approved again)
OPEN_STATES: tuple[ApprovalState, ...] = ("pending", "failed")
#: states a person must act on: decide it, or (``unknown``: approved, ran, and no result came back) find out
#: whether it took effect and :func:`~agentlab.approval.resolve` it
WAITING_STATES: tuple[ApprovalState, ...] = ("pending", "failed", "unknown")


@dataclass(frozen=True)
class Claim:
    status: ClaimStatus
    result: str | None = None  # JSON text of the recorded result, for a replay


@dataclass(frozen=True)
class Approval:
    """A risky call waiting for a person. ``args`` is canonical JSON: exactly what will run.

    ``failed`` means a person approved it and running it failed (``error`` says how): it waits
    for a person again. ``unknown`` means it was approved and started, and no result came back (a
    timeout, a lost reply): it is neither done nor approvable until it lands or a person resolves it.
    ``told`` records that the session's model was told the decision.
    """

    id: str
    session_id: str
    tool: str
    args: str
    reason: str
    state: ApprovalState = "pending"
    decision: str = ""
    result: str | None = None
    created: float = 0.0
    error: str | None = None
    told: bool = False

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES


class Store(Protocol):
    """Idempotency claims and held calls. Every method is atomic."""

    def claim(self, key: str, fingerprint: str, *, lease: float = 60.0) -> Claim: ...
    def finish(self, key: str, result: str) -> None: ...
    def release(self, key: str) -> None: ...
    def mark_unknown(self, key: str) -> None: ...
    def result(self, key: str) -> str | None: ...
    def unknown(self) -> list[str]: ...
    def resolve(self, key: str, result: str | None) -> bool: ...
    def add_approval(self, approval: Approval) -> Approval: ...
    def get_approval(self, approval_id: str) -> Approval | None: ...
    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None: ...
    def set_approval_result(self, approval_id: str, result: str | None, *, error: str | None = None,
                            state: ApprovalState | None = None) -> None: ...
    def mark_told(self, approval_id: str) -> None: ...
    def approvals(self, session_id: str | None = None) -> list[Approval]: ...


@dataclass(frozen=True)
class _Record:
    fingerprint: str
    state: Literal["running", "done", "unknown"]
    result: str | None
    expires: float


_LAST_DIGEST: tuple[str, str] = ("", "sha256:" + hashlib.sha256(b"").hexdigest())


def digest(text: str) -> str:
    """What a claim keeps of a call's arguments: their SHA-256, enough to tell "the same call" from "other
    arguments under the same key" (a conflict). The arguments themselves (a customer's note, an address) stay
    out of the store, which other processes, machines and their operators read.

    A guarded call hashes its canonical arguments twice, the very same string object (its key, then its claim's
    fingerprint): the last text and its digest are kept (one tuple, swapped whole, so threads never see half), and
    the same object again is answered without hashing it again."""
    global _LAST_DIGEST
    last = _LAST_DIGEST
    if text is last[0]:
        return last[1]
    value = "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    _LAST_DIGEST = (text, value)
    return value


def _judge(rec: _Record, fingerprint: str) -> Claim:
    """``fingerprint`` is the call's (:func:`digest` of it is compared); a record written before claims kept
    digests holds the text itself, and still matches it."""
    if rec.fingerprint not in (digest(fingerprint), fingerprint):
        return Claim("conflict", rec.result)
    if rec.state == "done":
        return Claim("replay", rec.result)
    return Claim("unknown" if rec.state == "unknown" else "in_flight")
