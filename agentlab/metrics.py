"""Seed 000's four numbers, computed from runs (the evaluation issue builds on this).

* task success rate: runs that finished (``done*``) *and* left the data right.
* invalid-call rate: invalid tool calls / all tool calls (unparsable, unknown tool, bad arguments).
* average steps: model turns per run.
* human-takeover rate: runs that ended ``escalated`` or ``budget_exhausted``.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from .loop import STATUSES, Run


def summarize(runs: Iterable[Run], correct: Callable[[Run], bool] | None = None) -> dict:
    """The four metrics (and the status counts) over ``runs``."""
    runs = list(runs)
    n = max(len(runs), 1)
    calls = sum(r.tool_calls for r in runs)
    ok = [r for r in runs if r.status.startswith("done") and (correct is None or correct(r))]
    return {
        "runs": len(runs),
        "task_success_rate": len(ok) / n,
        "invalid_call_rate": sum(r.invalid_calls for r in runs) / max(calls, 1),
        "avg_steps": sum(r.steps for r in runs) / n,
        "takeover_rate": sum(r.status in ("escalated", "budget_exhausted") for r in runs) / n,
        "statuses": {s: c for s, c in Counter(r.status for r in runs).items()},
    }


def status_counts(runs: Iterable[Run]) -> dict[str, int]:
    c = Counter(r.status for r in runs)
    return {s: c.get(s, 0) for s in STATUSES}


def by_taxonomy(runs: Iterable[Run]) -> dict[str, Counter]:
    """Failed tool calls counted by retry class and by stage in the chain (seed 003 §5)."""
    cat: Counter = Counter()
    stage: Counter = Counter()
    for r in runs:
        for e in r.events:
            if e.error_code:
                cat[e.error_category or "unknown"] += 1
                stage[e.error_stage or "unknown"] += 1
    return {"category": cat, "stage": stage}
