"""The refund desk's five classes of failure, as data (docs/failures.md#five-classes-of-failure).

The refund desk sorts what goes wrong with tool calls into five classes a team fixes one at a time:
the call breaks the schema; the model chose the wrong action; an error the model (or the loop) cannot read;
a write that happens twice (idempotency); a loop that never ends. The workbook's two taxonomies (retry
class and stage, :data:`agentlab.errors.CODES`) answer other questions; this map files every error code and
every injected fault (:data:`agentlab.models.faults.FAULTS`) under one of the five, so a count by code or by
fault can be read as "which class of failure to fix next".

Many failures leave no error code: an unguarded loop refunds twice, writes "199元", runs eleven refunds until its
step cap, and no event says so. :func:`run_classes` counts a run's classes from its codes *and* from what it
did: the graded verdict (a write done more often than asked, a leak, a crash, "done" with nothing done), its
ending (a loop that hit the step budget) and, given the tools, every call the schema would have refused.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..guards import GuardConfig
from ..i18n import Lang, t
from ..runs import Run
from ..trace import Event
from .log_tools import signature

__all__ = ["CODE_CLASSES", "FAILURE_CLASSES", "FAULT_CLASSES", "REPEAT_LIMIT", "by_failure_class", "class_counts_text",
           "class_name", "class_table", "effect_classes", "run_classes", "runs_by_class", "schema_refused"]

#: the five classes, in the order the refund desk gives them
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

#: the Nth identical call (same tool, same arguments) is a repeat, as the guarded loop's breaker counts it: a log's
#: or a trace's third identical call that ran is a loop nothing stopped, a write's second a write done twice
REPEAT_LIMIT = GuardConfig().repeat_limit or 3

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


#: the things a run writes: one more than the case asked for is a write done twice (or a runaway's)
_WRITTEN = ("refunds", "records", "changed", "budgets")


def run_classes(run: Run, outcome: str | None = None, failures: Iterable[Any] = (), registry: Any = None,
                needed: Collection[str] = ()) -> Counter:
    """What went wrong in one run, by class: its error codes (:func:`by_failure_class`) and the failures that
    leave none, read from its outcome and effects (docs/failures.md#five-classes-of-failure):

    * schema: a call that ran although the tools' schema refuses its arguments (``registry``: checked with
      ``Registry.check`` after the fact, as the guarded loop checks before), one per call;
    * idempotency: a write done more often than the case asked (the grader's count of refunds, records...),
      one per extra write; a write the case wanted none of is the model's choice, its repeats writes done twice;
    * loops: a run that ended on its step budget, or ran one call :data:`REPEAT_LIMIT` times, with no code saying so;
    * unreadable errors: internal detail shown to the model (``leaked``), or a crash no code explains;
    * model choice: "done" when nothing was done, a write the case wanted none of, or a run with no error at all
      that never called a tool its case ``needed``.

    ``outcome`` and ``failures`` are the grader's (:func:`agentlab.evals.outcome.grade`); without them only the
    codes, the ending and the calls are read. A report counts runs by class (:func:`runs_by_class`), not these
    counts: one conversation is one failure to read, however many calls it repeated."""
    found = by_failure_class(run.events)
    calls: Counter = Counter()
    for e in run.tool_events:
        if not e.tool_name or e.exec_ok is None:  # refused before it ran, or never answered
            continue
        if registry is not None and schema_refused(registry, e):
            found["schema"] += 1
        if not e.replayed:  # the repeat's key a log review uses (arguments that do not parse: their text)
            calls[signature(e.tool_name, e.args_raw or "") or f"{e.tool_name}:{e.args_raw}"] += 1
    codes = {c for e in run.events if (c := e.error_code)}
    if calls and max(calls.values()) >= REPEAT_LIMIT and not codes & {"LOOP_DETECTED", "BUDGET_EXHAUSTED"} \
            and run.status != "budget_exhausted":  # (the budget's own ending is counted below)
        found["loops"] += 1
    if needed and not codes and not set(needed) <= {e.tool_name for e in run.tool_events}:
        found["model_choice"] += 1  # nothing went wrong, and the tool the task needs was never chosen
    found.update(effect_classes(run.status, codes, outcome, failures))
    return found


def schema_refused(registry: Any, e: Event) -> bool:
    """A call that ran, its code of another class (or none), on arguments its tools' schema refuses (``registry``:
    ``Registry.check`` after the fact, as the guarded loop checks before): a failure of the schema class too."""
    if CODE_CLASSES.get(e.error_code or "") == "schema":
        return False
    checked = registry.check(e.tool_name or "", e.args_raw or "", rules=False)
    return checked.error is not None and CODE_CLASSES.get(checked.error.code) == "schema"


def runs_by_class(per_run: Iterable[Mapping[str, int]], into: dict[str, int] | None = None) -> dict[str, int]:
    """How many runs (conversations) fell in each of the five classes, given each run's :func:`run_classes`: the one
    count every report shows. A run is in every class it shows, so the five may add up to more than the runs that
    failed; a run of eleven refunds is one run in its class, not eleven. ``into``: counts to add to (a review adds
    its runs one at a time)."""
    got = dict.fromkeys(FAILURE_CLASSES, 0) if into is None else into
    for counts in per_run:
        for c, n in counts.items():
            if n > 0 and c in got:
                got[c] += 1
    return got


def effect_classes(status: str, codes: Iterable[str], outcome: str | None = None, failures: Iterable[Any] = ()) -> Counter:
    """The classes of what a run did that no error code of its own says (:func:`run_classes`), from its final
    ``status``, the ``codes`` its events carry, and the grader's ``outcome`` and ``failures`` when it was graded."""
    found: Counter = Counter()
    for why in failures:
        fields = getattr(why, "fields", {})
        if getattr(why, "key", "") in ("grade.count", "grade.unmentioned") and fields.get("name") in _WRITTEN \
                and fields["n"] > fields["want"]:
            if fields["want"] == 0:  # a write the case wanted none of: the model chose it (the guard's RULE_VIOLATION)
                found["model_choice"] += 1
            if fields["n"] > max(fields["want"], 1):
                found["idempotency"] += fields["n"] - max(fields["want"], 1)
    coded = set(codes)
    if status == "budget_exhausted" and not coded & {"BUDGET_EXHAUSTED", "LOOP_DETECTED"}:
        found["loops"] += 1
    if outcome == "leaked" or (outcome == "crashed" and not coded):
        found["unreadable_errors"] += 1
    if outcome == "done, nothing done":
        found["model_choice"] += 1
    return found


def class_counts_text(counts: Counter | dict[str, int], lang: Lang = "en") -> str:
    """The five classes with their counts, in their usual order ("-" for a class with none)."""
    # a class with no run in it is 0: "-" is what the tables say of a figure not measured
    return ("、" if lang == "zh" else ", ").join(f"{class_name(c, lang)} {counts.get(c, 0)}" for c in FAILURE_CLASSES)
