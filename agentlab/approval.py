"""The human gate for risky calls (seed 000 §四, third layer).

The guarded loop never runs a call that ``Tool.needs_approval`` flags: it
records it as pending and tells the model ``NEEDS_APPROVAL``. A person then
approves, which runs exactly the recorded arguments exactly once (through the
same idempotency claim), or rejects, and the next turn of that session is told why.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Any

from .errors import ToolError
from .loop import GuardConfig, _Ctx, execute
from .store import Approval, Store, result_json
from .tools import Registry


@dataclass(frozen=True)
class Decision:
    """What happened when a person decided. ``ran`` is True only for the one approval that executed."""

    approval: Approval
    ran: bool
    data: Any = None
    error: ToolError | None = None


def pending(store: Store, session_id: str | None = None) -> list[Approval]:
    return [a for a in store.approvals(session_id) if a.state == "pending"]


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
    args = json.loads(decided.args)
    ctx = _Ctx(registry, config, store, time.sleep, random.Random(0), time.perf_counter, decided.session_id,
               registry.lang)
    data, err, _, replayed, _ = execute(tool, args, ctx, key=decided.id)
    if err is None:
        store.set_approval_result(approval_id, result_json(data))
    return Decision(store.get_approval(approval_id) or decided, err is None and not replayed, data, err)


def reject(store: Store, approval_id: str, reason: str) -> Decision:
    """Reject the held call; the session's next turn is told ``reason``."""
    decided = store.decide(approval_id, "rejected", reason)
    if decided is None:
        current = store.get_approval(approval_id)
        if current is None:
            raise KeyError(f"no approval {approval_id!r}")
        return Decision(current, False)
    return Decision(decided, False)
