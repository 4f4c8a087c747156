"""A write's idempotency claim as a small state machine (docs/site.md#idempotency).

A write first claims ``(key id, skill, Idempotency-Key)`` in the store. What the store answers is
one of the :class:`ClaimState` s, and :func:`answer` says what the request does in it: run the
write (``NEW``), or answer without running it. Once a write held the claim and ran, :func:`transition`
names what becomes of the claim (:class:`Settle`), from the outcome alone::

    NEW      -> run it, then settle:  KEEP (still running past its timeout) | RELEASE (nothing happened)
                                      | FINISH (recorded: a resend replays it) | MARK_UNKNOWN (a person looks)
    RUNNING  -> wait for its runner, then the state it reaches (still RUNNING: 409 in progress)
    REPLAY   -> the recorded reply, with Idempotent-Replayed: true
    CONFLICT -> 422: the key was used with other arguments
    UNKNOWN  -> 409: it ran and its outcome was never recorded
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from enum import Enum

from ..errors import make_error
from ..i18n import Lang, t
from ..store import Store, quietly
from .execute import Execution
from .replies import HttpReply, call_store, reply

__all__ = ["ClaimState", "Settle", "WriteClaim", "answer", "transition"]


class ClaimState(Enum):
    """What the store says of a claimed key (the values are the store's own words)."""

    NEW = "new"  # this request holds the claim: it runs the write
    RUNNING = "in_flight"  # another request runs it now
    REPLAY = "replay"  # it took effect: its recorded reply answers
    CONFLICT = "conflict"  # the key was used with other arguments
    UNKNOWN = "unknown"  # it started and never reported back


class Settle(Enum):
    """What becomes of a held claim once its write is over."""

    KEEP = "keep"  # the write still runs past its timeout: it settles the claim when it reports back
    RELEASE = "release"  # nothing happened (refused by its check, or the skill said so): a resend runs it
    FINISH = "finish"  # it happened: the reply is recorded and a resend replays it
    MARK_UNKNOWN = "mark_unknown"  # it failed half-way: a resend must not run it again; a person looks


def answer(state: ClaimState, result: str | None, lang: Lang) -> HttpReply | None:
    """The reply of a request whose claim is in ``state`` without running anything, or None: run it."""
    if state is ClaimState.NEW:
        return None
    if state is ClaimState.REPLAY:
        recorded = json.loads(result or "{}")
        return HttpReply(recorded["status"], recorded["body"], {"Idempotent-Replayed": "true"})
    if state is ClaimState.CONFLICT:
        hint = {lg: t("site.key_reused.hint", lg) for lg in ("en", "zh")}
        return reply(make_error("CONFLICT", _key="site.key_reused", hint=hint), lang, status=422, hint="key_reused")
    if state is ClaimState.RUNNING:
        return reply(make_error("IN_PROGRESS"), lang)
    return reply(make_error("OUTCOME_UNKNOWN"), lang)


def transition(outcome: Execution) -> Settle:
    """The one transition out of a held claim, from what the write's execution reports."""
    if outcome.pending is not None:
        return Settle.KEEP
    if not outcome.ran:
        return Settle.RELEASE
    if outcome.internal is not None:
        return Settle.MARK_UNKNOWN
    if not outcome.ok and outcome.body["error"]["category"] == "transient":
        return Settle.RELEASE
    return Settle.FINISH


class WriteClaim:
    """One write's claim in ``store``: taken (waiting for another runner if need be), then settled."""

    def __init__(self, store: Store, key: str, fingerprint: str, *, lease: float, wait: float,
                 sleep: Callable[[float], None] = time.sleep):
        self.store, self.key, self.fingerprint = store, key, fingerprint
        self.lease, self.wait, self.sleep = lease, wait, sleep

    def take(self) -> tuple[ClaimState, str | None]:
        """The claim's state (and a replay's recorded reply); :class:`StoreDown` when the store is unreachable."""
        claim = call_store(self.store.claim, self.key, self.fingerprint, lease=self.lease)
        deadline = time.monotonic() + self.wait
        # someone runs it now: wait for its reply rather than run it twice. "new" after a wait: its runner
        # released it (refused, rate limited, nothing happened): this request now holds the claim and goes
        # through every check itself, so it hears its own 429 or runs once
        while claim.status == ClaimState.RUNNING.value and time.monotonic() <= deadline:
            self.sleep(0.02)
            claim = call_store(self.store.claim, self.key, self.fingerprint, lease=self.lease)
        return ClaimState(claim.status), claim.result

    def release(self) -> bool:
        return quietly(self.store.release, self.key)

    def apply(self, step: Settle, outcome: Execution) -> bool:
        """Carry ``step`` out; False when the store failed to keep it."""
        if step is Settle.KEEP:
            return True
        if step is Settle.RELEASE:
            return self.release()
        if step is Settle.MARK_UNKNOWN:
            return quietly(self.store.mark_unknown, self.key)
        return self.finish(outcome)

    def finish(self, outcome: Execution) -> bool:
        return quietly(self.store.finish, self.key, json.dumps({"status": outcome.status, "body": outcome.body}))

    def __repr__(self) -> str:
        return f"WriteClaim({self.store!r})"
