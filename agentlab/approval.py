"""The human gate for risky calls (docs/guards.md#approval).

The guarded loop never runs a call that ``Tool.needs_approval`` flags: it records it
as held and tells the model ``NEEDS_APPROVAL``. A person then approves, which runs
exactly the recorded arguments exactly once (through the same idempotency claim), or
rejects, and the session's next turn is told why. When an approved call fails, the
held call says so (``failed``), stays open, and may be approved again; nothing is
reported as done that was not.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import ToolError
from .guards import GuardConfig
from .loop import Context, execute
from .store import Approval, Store, result_json
from .tools import Registry

__all__ = ["Decision", "approve", "pending", "reject", "resolve"]


@dataclass(frozen=True)
class Decision:
    """What happened when a person decided. ``ran`` is True only for the one approval that executed."""

    approval: Approval
    ran: bool
    data: Any = None
    error: ToolError | None = None


def pending(store: Store, session_id: str | None = None) -> list[Approval]:
    """Held calls waiting for a person: never decided, or approved and failed."""
    return [a for a in store.approvals(session_id) if a.open]


def approve(store: Store, registry: Registry, approval_id: str, *, note: str = "approved",
            config: GuardConfig = GuardConfig()) -> Decision:
    """Approve and run the held call. A second approval (or a race) runs nothing."""
    decided = store.decide(approval_id, "approved", note)
    if decided is None:
        current = store.get_approval(approval_id)
        if current is None:
            raise KeyError(f"no approval {approval_id!r}")
        return Decision(current, False, json.loads(current.result) if current.result else None)
    tool = registry[decided.tool]
    ctx = Context(registry, config, store, session_id=decided.session_id, lang=registry.lang)
    out = execute(tool, json.loads(decided.args), ctx, key=decided.id)
    if out.error is None:
        store.set_approval_result(approval_id, result_json(out.data))
    else:
        store.set_approval_result(approval_id, None, error=json.dumps(out.error.to_dict(registry.lang),
                                                                      ensure_ascii=False))
    return Decision(store.get_approval(approval_id) or decided, out.error is None and not out.replayed,
                    out.data, out.error)


def reject(store: Store, approval_id: str, reason: str) -> Decision:
    """Reject the held call; the session's next turn is told ``reason``."""
    decided = store.decide(approval_id, "rejected", reason)
    if decided is None:
        current = store.get_approval(approval_id)
        if current is None:
            raise KeyError(f"no approval {approval_id!r}")
        return Decision(current, False)
    return Decision(decided, False)


def resolve(store: Store, key: str, *, happened: bool, result: Any = None) -> bool:
    """A person's (or a reconcile job's) verdict on a call whose outcome was unknown.

    ``happened=True`` records ``result`` as the call's result (a resend replays it);
    ``happened=False`` frees the key so the call may run again. False if there was
    nothing unresolved under ``key``.
    """
    return store.resolve(key, result_json(result) if happened else None)
