"""The human gate for risky calls (docs/guards.md#approval).

The guarded loop never runs a call that ``Tool.needs_approval`` flags: it records it
as held and tells the model ``NEEDS_APPROVAL``. A person then approves, which runs
exactly the recorded arguments exactly once (through the same idempotency claim), or
rejects, and the session's next turn is told why. When an approved call fails, the
held call says so (``failed``), stays open, and may be approved again; nothing is
reported as done that was not.

Every way out of :func:`approve` ends in a state a person sees in :func:`pending` or a
done call: ``approved`` with its result; ``failed``, approvable again; or ``unknown``
(it started and no result came back: a timeout, a lost reply). An unknown call runs
nothing more: it becomes ``approved`` by itself if its result lands later, or a person
finds out and calls :func:`resolve` (happened: approved with the result; did not:
``failed``, approvable again). Its idempotency claim is marked unknown too, so it is
listed wherever unknown outcomes are.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import ToolError, render
from .guards import GuardConfig
from .i18n import LocalizedError
from .loop import CallContext, CallOutcome, execute
from .store import WAITING_STATES, Approval, Store, result_json
from .tools import Registry

__all__ = ["Decision", "UnknownApproval", "approve", "pending", "reject", "resolve", "settle"]


class UnknownApproval(LocalizedError, KeyError):
    """An approval id the store does not have, or one held for a tool the registry given does not have: a ``KeyError``
    (what these functions always raised), said in either language (the approvals desk showed English to a Chinese
    reader, and a bare "no key ..." once Python's errors were said plainly)."""

    def __str__(self) -> str:  # a KeyError's own quotes its text again
        return self.localized("en")


@dataclass(frozen=True)
class Decision:
    """What happened when a person decided. ``ran`` is True only for the one approval that executed."""

    approval: Approval
    ran: bool
    data: Any = None
    error: ToolError | None = None


def pending(store: Store, session_id: str | None = None) -> list[Approval]:
    """Held calls waiting for a person: never decided, approved and failed, or approved with an unknown outcome
    (an unknown one whose result has landed since is recorded as approved first, and is not listed)."""
    return [a for a in (settle(store, a) for a in store.approvals(session_id)) if a.state in WAITING_STATES]


def settle(store: Store, approval: Approval) -> Approval:
    """``approval`` with a result that landed after its approval timed out, recorded; else as it is."""
    if approval.state not in ("approved", "unknown") or approval.result is not None:
        return approval
    late = store.result(approval.id)  # the claim under the approval's id settles when the write reports back
    if late is None:
        return approval
    store.set_approval_result(approval.id, late, state="approved")
    return store.get_approval(approval.id) or approval


def approve(store: Store, registry: Registry, approval_id: str, *, note: str = "approved",
            config: GuardConfig = GuardConfig()) -> Decision:
    """Approve and run the held call. A second approval (or a race) runs nothing.

    The business rules run again first: the world may have changed while the call waited (the
    order shipped). A call whose outcome is not known yet (a timeout, a resend in flight) is not
    reported as failed: the approval stays approved and the key settles when the result arrives.
    """
    held = store.get_approval(approval_id)
    if held is None:
        raise UnknownApproval("approval.unknown", id=approval_id)
    if held.tool not in registry:  # checked before deciding, so a wrong registry leaves the call waiting
        raise UnknownApproval("approval.unknown_tool", id=approval_id, tool=held.tool)
    decided = store.decide(approval_id, "approved", note)
    if decided is None:
        current = store.get_approval(approval_id) or held
        return Decision(current, False, json.loads(current.result) if current.result else None)
    tool = registry[decided.tool]
    args = json.loads(decided.args)
    ctx = CallContext(registry, config, store, session_id=decided.session_id, lang=registry.lang)

    def rules() -> CallOutcome | None:
        err = registry.check_rules(tool.name, args)
        return CallOutcome(render(err, registry.lang), err, exec_ok=None) if err is not None else None

    try:
        out = execute(tool, args, ctx, key=decided.id, gate=rules)
    except BaseException:
        store.set_approval_result(approval_id, None, error=json.dumps({"code": "TOOL_ERROR"}))  # open again
        raise
    if out.error is None:
        store.set_approval_result(approval_id, result_json(out.data))
    elif out.error.code in _NOT_KNOWN_YET:
        # it may still take effect: saying "not executed, approve again" would be a lie, and leaving it
        # "approved" with no result would lose it. The claim is marked unknown (a write still running keeps
        # its callback, which records the result if it lands); the approval waits for that or for a person.
        if out.error.code != "IN_PROGRESS":  # a claim another runner holds is not this approval's to mark
            store.mark_unknown(decided.id)
        store.set_approval_result(approval_id, None, state="unknown",
                                  error=json.dumps(out.error.to_dict(registry.lang), ensure_ascii=False))
        settle(store, store.get_approval(approval_id) or decided)  # it may have landed in the meantime
    else:
        store.set_approval_result(approval_id, None, error=json.dumps(out.error.to_dict(registry.lang),
                                                                      ensure_ascii=False))
    return Decision(store.get_approval(approval_id) or decided, out.error is None and not out.replayed,
                    out.data, out.error)


# the call may still take effect: saying "not executed, approve again" would be a lie
_NOT_KNOWN_YET = frozenset({"TIMEOUT", "IN_PROGRESS", "OUTCOME_UNKNOWN"})


def reject(store: Store, approval_id: str, reason: str) -> Decision:
    """Reject the held call; the session's next turn is told ``reason``."""
    decided = store.decide(approval_id, "rejected", reason)
    if decided is None:
        current = store.get_approval(approval_id)
        if current is None:
            raise UnknownApproval("approval.unknown", id=approval_id)
        return Decision(current, False)
    return Decision(decided, False)


def resolve(store: Store, key: str, *, happened: bool, result: Any = None) -> bool:
    """A person's (or a reconcile job's) verdict on a call whose outcome was unknown.

    ``happened=True`` records ``result`` as the call's result (a resend replays it);
    ``happened=False`` frees the key so the call may run again. False if there was
    nothing unresolved under ``key``. A held call approved under ``key`` follows: approved
    with ``result``, or ``failed`` and approvable again.
    """
    stored = result_json(result) if happened else None
    done = store.resolve(key, stored)
    held = store.get_approval(key)
    if held is not None and held.state == "unknown":
        if happened:
            store.set_approval_result(key, stored, state="approved")
        else:
            store.set_approval_result(key, None, state="failed",
                                      error=json.dumps({"code": "NOT_RUN", "resolved": "did not happen"}))
        return True
    return done
