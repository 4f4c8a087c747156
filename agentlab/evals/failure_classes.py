"""The refund desk's five classes of failure, as data (docs/failures.md#five-classes-of-failure).

The refund article sorts what goes wrong with tool calls into five classes a team fixes one at a time:
the call breaks the schema; the model chose the wrong action; an error the model (or the loop) cannot read;
a write that happens twice (idempotency); a loop that never ends. The workbook's two taxonomies (retry
class and stage, :data:`agentlab.errors.CODES`) answer other questions; this map files every error code and
every injected fault (:data:`agentlab.models.faults.FAULTS`) under one of the five, so a count by code or by
fault can be read as "which class of failure to fix next".
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..i18n import Lang, t
from ..trace import Event

__all__ = ["CODE_CLASSES", "FAILURE_CLASSES", "FAULT_CLASSES", "by_failure_class", "class_name", "class_table"]

#: the five classes, in the article's order
FAILURE_CLASSES = ("schema", "model_choice", "unreadable_errors", "idempotency", "loops")

#: every error code -> its class. Filed by what a team changes to prevent it: the schema and its checks, the
#: model's choices (prompt, routing, tool_choice, approval), how failures are told, keys on writes, the brakes.
CODE_CLASSES: dict[str, str] = {
    "BAD_JSON": "schema",
    "INVALID_ARGS": "schema",
    "BAD_REQUEST": "schema",  # a request the API refuses as malformed
    "SELF_CORRECTION_EXHAUSTED": "schema",  # still invalid after every re-ask
    "UNKNOWN_TOOL": "model_choice",
    "WRONG_TOOL": "model_choice",
    "NOT_FOUND": "model_choice",  # well-formed, but about something that does not exist
    "PERMISSION_DENIED": "model_choice",
    "NEEDS_APPROVAL": "model_choice",
    "APPROVAL_REJECTED": "model_choice",
    "RULE_VIOLATION": "model_choice",  # well-formed, but the business says no
    "TOOL_ERROR": "unreadable_errors",
    "TIMEOUT": "unreadable_errors",
    "RATE_LIMITED": "unreadable_errors",
    "UNAVAILABLE": "unreadable_errors",
    "MODEL_ERROR": "unreadable_errors",
    "UNAUTHENTICATED": "unreadable_errors",
    "CONTEXT_TOO_LONG": "unreadable_errors",
    "NOT_RUN": "unreadable_errors",  # the model must be told plainly that nothing was done
    "IN_PROGRESS": "idempotency",
    "OUTCOME_UNKNOWN": "idempotency",
    "CONFLICT": "idempotency",
    "LOOP_DETECTED": "loops",
    "BUDGET_EXHAUSTED": "loops",
}

#: every injected fault -> its class
FAULT_CLASSES: dict[str, str] = {
    "camel_case": "schema", "drop_required": "schema", "wrong_type": "schema", "amount_in_words": "schema",
    "out_of_enum": "schema", "out_of_range": "schema", "truncated_json": "schema",
    "unknown_tool": "model_choice",
    "api_429": "unreadable_errors", "api_timeout": "unreadable_errors", "api_500": "unreadable_errors",
    "api_401": "unreadable_errors", "flaky_tool": "unreadable_errors", "hanging_tool": "unreadable_errors",
    "leaky_tool": "unreadable_errors",
    "duplicate_call": "idempotency", "parallel_call": "idempotency", "lost_reply": "idempotency",
    "repeat_call": "loops", "ping_pong": "loops",
}


def class_name(cls: str, lang: Lang = "en") -> str:
    """A class's name in ``lang`` (the catalogue's ``failure_class.*``)."""
    return t(f"failure_class.{cls}", lang)


def class_table(lang: Lang = "en") -> list[dict[str, str]]:
    """One row per class: its name, the error codes and the faults filed under it (for docs and notebooks)."""
    return [{"class": class_name(c, lang),
             "codes": ", ".join(k for k, v in CODE_CLASSES.items() if v == c),
             "faults": ", ".join(k for k, v in FAULT_CLASSES.items() if v == c)} for c in FAILURE_CLASSES]


def by_failure_class(events: Iterable[Event]) -> Counter:
    """What went wrong in a trace, counted by class: the error code of every tool call and model turn, and the
    code of a run's ending when no earlier event of that run carries it (the step budget's, the deadline's:
    an error that ends a run is counted once). Codes the map does not know are skipped."""
    events = list(events)
    seen = {(e.run_id, e.error_code) for e in events if e.kind != "end" and e.error_code}
    codes = [e.error_code for e in events
             if e.error_code and (e.kind != "end" or (e.run_id, e.error_code) not in seen)]
    return Counter(CODE_CLASSES[c] for c in codes if c in CODE_CLASSES)
