"""The weekly bad-case review: sample sessions, tag where each went wrong, promote one
into the regression suite so it can never come back unnoticed (docs/metrics.md)."""
from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .results import replies_of
from .suite import Case, CaseResult, load_cases

__all__ = ["STAGES", "auto_tag", "promote", "sample"]

STAGES = ("structure", "semantic", "execution", "rule_blocked")


def auto_tag(result: CaseResult) -> str:
    """Where a failed session went wrong (docs/metrics.md#bad-case-tags); ``ok`` for one that passed.

    The first error that is not a guard firing names the stage; a guarded session that
    only met guards is ``rule_blocked`` (a guard fired as designed). The naive loop has no
    guards: its safety cap stopping a model that went round in circles is the model's
    doing (``semantic``: well-formed calls that did not get the job done), never a guard's.
    A session with no error at all but the wrong final data is ``semantic`` too.
    """
    if result.passed:
        return "ok"
    errors = [e for e in result.run.events if e.error_code and e.kind != "end"]
    for e in errors:
        if e.error_stage != "rule_blocked":
            return e.error_stage or "execution"
    guarded = result.run.loop == "guarded"
    if guarded and (errors or result.run.status == "budget_exhausted"):
        return "rule_blocked"
    return "semantic"


def sample(results: Sequence[CaseResult], n: int, *, seed: int = 0) -> list[CaseResult]:
    """N sessions at random, failed or not (sampling only failures distorts the shares)."""
    rng = random.Random(seed)
    pool = list(results)
    return rng.sample(pool, min(n, len(pool)))


def promote(result: CaseResult, case: Case, path: str | Path, *, expect: dict | None = None) -> Case:
    """Append a bad session to a regression suite as a new case that replays its model replies.

    The new case keeps the task, takes ``expect`` (default: the original case's), and
    scripts the model with exactly the replies recorded in the bad session, so it
    reproduces without the model.
    """
    script: list[Any] = []
    for reply in replies_of(result.run):
        if not reply.tool_calls:
            script.append(reply.content or "")
            continue
        calls = []
        for c in reply.tool_calls:  # every call of the message: a refund plus a hand-over stays both
            try:
                args = json.loads(c.arguments)
            except ValueError:
                args = c.arguments
            calls.append([c.name, args if isinstance(args, (dict, str)) else c.arguments])
        script.append({"content": reply.content, "calls": calls} if len(calls) > 1 or reply.content else calls[0])
    path = Path(path)
    existing = {c.id for c in load_cases(path)} if path.exists() else set()
    new_id, n = f"promoted-{case.id}", 1
    while new_id in existing:
        n += 1
        new_id = f"promoted-{case.id}-{n}"
    new = Case(new_id, "regression", case.scenario, case.task, expect or case.expect, {"script": script},
               case.task_zh, case.start)
    line = {"id": new.id, "category": new.category, "scenario": new.scenario, "task": new.task,
            **({"task_zh": case.task_zh} if case.task_zh else {}),
            "start": case.start, "fake": new.fake, "expect": new.expect, "promoted_from": result.run.run_id}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return new
