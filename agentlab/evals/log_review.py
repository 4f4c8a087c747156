"""The bad-case review of a team's own logs: what went wrong, where, how often per day, what to fix first
(docs/metrics.md#bring-your-own-logs).

Every tool call in the logs is checked as the guarded loop would have checked it, by the same code:
the offered tools become a :class:`~agentlab.tools.Registry` and each call goes through
``Registry.check`` (unparsable arguments, an unknown tool, arguments the schema refuses); a history the
chat-completions API would refuse is found by :func:`~agentlab.context.protocol_problems`. Each finding
carries the error code the guarded loop gives it, so its retry class and stage come from
:data:`~agentlab.errors.CODES`, the one table. Each conversation becomes a :class:`~agentlab.runs.Run`
whose events have the fields the loop records, so the headline numbers are those of
:mod:`agentlab.evals.metrics`, computed by the same functions as for the workbook's own runs.

A **write** (a side-effect tool, sent twice = done twice) is a tool the team's tools file marks
``"side_effect": true``; without a file, a tool whose name starts with a verb that changes something
(:func:`agentlab.tools.guess_write`: ``create_``, ``close_``, ``updateUser``...).
"""
from __future__ import annotations

import json
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from ..context import protocol_problems
from ..errors import CODES, mask_personal, redact_secrets
from ..i18n import Lang, LocalizedError, Sentence
from ..runs import STATUSES, Run, Status
from ..tools import Registry
from ..trace import Event, finalize
from .exchanges import answered, said_done, told_code
from .failure_classes import CODE_CLASSES, FAILURE_CLASSES, REPEAT_LIMIT, effect_classes, run_classes, runs_by_class, schema_refused
from .log_cases import CASES, _obj, _shown, case_of
from .log_report import KINDS, largest_text, review_html, write_report  # what a review says: its page, its files
from .log_tools import REGISTRIES, Registries, hands_over, plain_args, signature, tools_file, write_name
from .logs import OPEN_RUNS, Format, LogRun, read_logs, read_rows, run_meta
from .metrics import Tally, repair_turns, went_wrong
from .unread import Unread

__all__ = ["KINDS", "LogFinding", "analyze", "case_of", "largest_text", "review_html", "review_logs", "runs_of", "tools_file",
           "write_report"]

_KIND_OF_CODE = {"BAD_JSON": "bad_json", "UNKNOWN_TOOL": "unknown_tool", "INVALID_ARGS": "invalid_args", "LOOP_DETECTED": "repeated_call"}
EXAMPLES = 200  # findings shown with their detail; all are counted

#: what a call whose arguments are not a JSON object is, as the loop files it (read, never written: update() copies)
_BAD_JSON = {"parse_ok": False, "error_code": "BAD_JSON", "error_category": CODES["BAD_JSON"][0],
             "error_stage": CODES["BAD_JSON"][1]}
_SIGNATURES = 10_000  # a run's latest distinct calls looked in for a repeat: ~2 MB (100,000 held 23 MB of a runaway)
_CATEGORIES = frozenset(c for c, _ in CODES.values())
_STAGES = frozenset(s for _, s in CODES.values())


@dataclass(frozen=True)
class LogFinding:
    """One thing wrong in the logs: where (``where`` is file:line, ``message`` its place in the conversation, counted
    from 1 as a reader counts, the same number every sentence of the review says),
    what (``kind``, ``code``, ``category``, ``stage``), and a redacted ``detail``."""

    where: str
    run: str
    kind: str
    code: str
    category: str
    stage: str
    tool: str = ""
    message: int | None = None
    detail: str = ""
    day: str = ""

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@lru_cache(maxsize=1024)
def _shown_short(text: str, limit: int) -> str:
    return _shown(text, limit)


def _shown_name(text: Any, limit: int) -> str:
    """:func:`_shown` of a name (a code, a tool, a run id): a log repeats a few of them on row after row, so the
    short ones are redacted once (the rules are the module's own, fixed: the same text is redacted the same)."""
    # (a span's attribute may be a number or a list where a name is expected: _shown writes it as JSON)
    return _shown_short(text, limit) if isinstance(text, str) and len(text) <= 256 else _shown(text, limit)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _err(code: str) -> tuple[str, str]:
    cat, stage = CODES.get(code, ("fatal", "execution"))
    return cat, stage


#: what the review itself finds a log did that a guard would have stopped: it happened, so it is a failure where
#: it was done (a write done twice, a call repeated), not a guard that worked. Its code is the one the guard would
#: give (so its class of the five: idempotency, loops); a guard's own code in the logs keeps its stage (CODES).
FOUND_UNGUARDED: dict[str, tuple[str, str]] = {"CONFLICT": ("fatal", "execution"), "LOOP_DETECTED": ("fatal", "execution")}


def _openai_run(log: LogRun, registries: Registries, writes: frozenset[str], *,
                details: bool = True) -> tuple[Run, list[LogFinding]]:
    """The conversation as a Run, and its findings (``details=False``: each with an empty detail, for a report that
    will not show it)."""
    walk = _openai_walk(log, registries, writes, details=details)
    return Run(log.where, "logs", "", walk.status, "", walk.answer[:300], walk.steps, finalize(walk.events, walk.status), ()), walk.findings


class _Walk(NamedTuple):
    """A conversation read as the loop would have recorded it: events (no final status yet), findings, ending, counts."""

    events: list[Event]
    findings: list[LogFinding]
    steps: int
    status: Status
    answer: str
    calls: int
    invalid: int
    coded: bool  # some event carries an error code (none does: nothing went wrong, no class, no repair)
    unchecked: int  # calls no tools list could check (their arguments read as JSON only)
    schema_also: int  # calls its schema refused that ran, whose code is the repeat they made: schema besides


def _openai_walk(log: LogRun, registries: Registries, writes: frozenset[str], *, details: bool = True,
                 counted: bool = False, lang: Lang = "en") -> _Walk:
    """``counted``: the events only a report's counts read (the tool calls, and what carries a code), for
    :func:`_summaries`; a model turn of words and the end are left out, whose fields no count reads."""
    rid = log.where
    messages = log.messages
    reg = registries.get(log.tools)
    answers: dict[str, Any] = {}
    replies: list[int] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            answers[str(m.get("tool_call_id"))] = m.get("content")
        elif role == "assistant":
            replies.append(i)
    findings: list[LogFinding] = []
    events: list[Event] = []
    seen: dict[str, int] = {}
    step = calls_made = invalid = unchecked = schema_also = 0
    coded = False

    def found(kind: str, code: str, *, tool: str = "", index: int | None = None, detail: str = "",
              unguarded: bool = False) -> tuple[str, str]:
        cat, stage = FOUND_UNGUARDED[code] if unguarded else _err(code)
        finding = object.__new__(LogFinding)  # (as _event: the fields straight into it, no frozen __init__)
        finding.__dict__.update({"where": rid, "run": rid, "kind": kind, "code": code, "category": cat, "stage": stage,
                                 "tool": tool, "message": index,
                                 # a sentence of the review's own (what the API would refuse) in the review's language
                                 "detail": _shown(detail.localized(lang) if isinstance(detail, Sentence) else detail)
                                 if details else "",
                                 "day": log.day})
        findings.append(finding)
        return cat, stage

    for problem in protocol_problems(messages):
        if getattr(problem, "key", "") == "protocol.never_answered":
            continue  # calls the log ends on: how it ended (its status), not a history sent and refused
        kind = "orphan_tool_message" if "a tool message answering" in problem else "refused_history"
        at = re.match(r"message (\d+):", problem)
        index = int(at[1]) if at else len(messages)  # (counted from 1, as the sentence says it)
        cat, stage = found(kind, "BAD_REQUEST", index=index, detail=problem)
        coded = True
        events.append(_made({"run_id": rid, "session_id": rid, "turn_id": 1, "loop": "logs", "round_index": 0,
                              "kind": "model", "error_code": "BAD_REQUEST", "error_category": cat, "error_stage": stage,
                              "note": kind}))
    # an exchange log gives the usage of each response it logged: the last replies of the conversation
    usage = dict(zip(replies[len(replies) - len(log.usage):], log.usage, strict=False)) if log.usage else {}
    handed_over = False
    for i in replies:
        m = messages[i]
        step += 1
        # (each event's fields in the order the loop's are given: run, session, turn, loop, then its own)
        if not counted:
            prompt, completion = usage.get(i, (0, 0)) if usage else (0, 0)
            text = _text(m.get("content"))
            events.append(_made({"run_id": rid, "session_id": rid, "turn_id": 1, "loop": "logs", "round_index": step,
                                  "kind": "model", "prompt_tokens": prompt, "completion_tokens": completion,
                                  "model_visible": text[:300]}))
        tool_calls = m.get("tool_calls")
        if not tool_calls:  # a reply of words only: no call to check
            continue
        for c in tool_calls:
            if type(c) is not dict and not isinstance(c, Mapping):
                continue
            fn = _obj(c.get("function"))
            name = str(fn.get("name") or "")
            raw = fn.get("arguments")
            raw = raw if isinstance(raw, (str, Mapping)) else ""
            cid = str(c.get("id"))
            handed_over = handed_over or hands_over(name)
            code: str | None = None
            parse_ok: bool | None = True
            validate_ok: bool | None = None
            kind = ""
            if reg is not None:
                # the check of the same call (tool, arguments text) is the same: made once (log_tools.Registries)
                parse_ok, validate_ok, code, args = registries.check_all(reg, name, raw)
            else:
                # no tools list: arguments that are not a JSON object are still seen (the loop refuses them as
                # BAD_JSON whatever the tools); "nothing wrong" of broken JSON was a guess
                unchecked += 1
                args = plain_args(raw) if not isinstance(raw, str) or raw.strip() else "{}"
                if args is None:
                    parse_ok, code = False, "BAD_JSON"
            if code is not None:
                kind = _KIND_OF_CODE.get(code, "invalid_args")
                found(kind, code, tool=name, index=i + 1, detail=raw if isinstance(raw, str) else json.dumps(raw))
            answer = answers.get(cid)
            # refused by its contract, and the logs say it ran (a refund above the limit, twice): what it did counts too
            ran = code is not None and parse_ok is not False and cid in answers and said_done(answer)
            args = plain_args(raw) if ran and args is None else args
            if (code is None or ran) and args is not None:  # (args: the canonical JSON of arguments that are an object)
                sig = f"{name}:{args}"
                n = seen[sig] = seen.get(sig, 0) + 1
                write = name in writes if writes else write_name(name)
                # a write's second run is a write done twice, any call's Nth a loop nothing stopped (eleven refunds)
                repeat = ("CONFLICT", "duplicate_write") if write and n == 2 else ("LOOP_DETECTED", "repeated_call") if n == REPEAT_LIMIT else None
                if repeat is not None:  # the call's own code: what it did outranks the contract it broke
                    found(repeat[1], repeat[0], tool=name, index=i + 1, detail=args, unguarded=True)
                    schema_also += CODE_CLASSES.get(code or "") == "schema"
                    code, kind = repeat
            if code is None and (told := told_code(answer, CODES)) is not None:  # an answer naming its error, as a row does
                code, kind = told, _KIND_OF_CODE.get(told, "logged_error")
                found(kind, code, tool=name, index=i + 1, detail=str(answer))
            cat, stage = (FOUND_UNGUARDED[code] if kind in ("duplicate_write", "repeated_call") and code in FOUND_UNGUARDED
                          else _err(code)) if code else ("", "")
            coded = coded or bool(code)
            calls_made += 1
            invalid += parse_ok is False or validate_ok is False
            events.append(_made({"run_id": rid, "session_id": rid, "turn_id": 1, "loop": "logs", "round_index": step,
                                  "kind": "tool", "tool_name": name, "tool_call_id": cid,
                                  "args_raw": (raw if isinstance(raw, str) else json.dumps(raw))[:1000],
                                  "parse_ok": parse_ok, "validate_ok": validate_ok,
                                  "exec_ok": None if cid not in answers else answered(answer),
                                  "error_code": code, "error_category": cat or None, "error_stage": stage or None,
                                  "note": kind or None, "model_visible": None if answer is None else str(answer)[:300]}))
    last = messages[-1] if messages else {}
    if log.status in STATUSES:
        status = log.status
    elif handed_over:
        status = "escalated"
    elif last.get("role") == "assistant" and not last.get("tool_calls"):
        # self-corrected by the package's one definition (the loop's, metrics.repair_turns): a call refused as
        # invalid, then a later call that ran; a wrong call the model gave up on, or whose fix failed too, is not one
        # (a run with no error code has no call refused: nothing to repair)
        corrected = coded and repair_turns(_run(rid, "done", step, tuple(events))) is not None
        status = "done_after_self_correction" if corrected else "done"
    else:  # the conversation stops on a call or a tool's answer: the user never got a reply
        status = "failed"
    answer = _text(last.get("content")) if last.get("role") == "assistant" else ""
    # the events are counted, never shown: only what the report shows is redacted (findings, cases)
    if not counted:
        events.append(_made({"run_id": rid, "session_id": rid, "turn_id": 1, "loop": "logs", "round_index": step,
                             "kind": "end", "model_visible": answer[:300]}))
    return tuple.__new__(_Walk, (events, findings, step, status, answer, calls_made, invalid, coded, unchecked, schema_also))


_EVENT_FIELDS = frozenset(f.name for f in fields(Event))
_REQUIRED = frozenset(f.name for f in fields(Event) if f.default is MISSING)


def _event(values: Mapping[str, Any]) -> Event:
    """``Event(**values)`` less the dataclass ``__init__`` setting its 25 frozen fields one by one (half a telemetry row's
    cost): the values go into the event's ``__dict__``; a field not given reads its default on the class."""
    if not values.keys() >= _REQUIRED:  # a field with no default missing: the dataclass's own TypeError
        return Event(**values)
    e = object.__new__(Event)
    e.__dict__.update(values)
    return e


def _made(values: dict[str, Any]) -> Event:
    """:func:`_event` of values written out here, every field without a default among them: no test of that."""
    e = object.__new__(Event)
    e.__dict__.update(values)
    return e


class _TelemetryRun:
    """One telemetry run, read a row at a time: its counts, what went wrong in it and its findings, aggregated as the
    rows come, so that a run of a million rows costs its counts and a bounded sample, never its rows
    (``keep=True``, for :func:`runs_of`, keeps the events and every finding too)."""

    __slots__ = (
        "calls",
        "classes",
        "codes",
        "day",
        "end",
        "events",
        "findings",
        "found",
        "invalid",
        "keep",
        "kind_stage",
        "kinds",
        "last",
        "last_line",
        "line",
        "loop",
        "registry",
        "rid",
        "seen",
        "source",
        "status",
        "steps",
        "unchecked",
        "where",
        "writes",
        "wrong",
    )

    def __init__(self, source: str, line: int, first: Mapping[str, Any], registry: Registry | None,
                 writes: frozenset[str], *, keep: bool = False):
        self.source, self.line = source, line
        self.where, self.last_line = f"{source}:{line}", 0  # (last_line: the row being added, where it is known)
        self.rid = str(first.get("run_id"))
        self.day = run_meta(first)["day"]
        self.registry, self.writes, self.keep = registry, writes, keep
        self.calls = self.invalid = self.steps = self.found = self.unchecked = 0
        self.status: str | None = None  # the last final_status a row gave
        self.last: str | None = None  # the kind of the last row before the end ("handover": a hand-over tool called)
        self.loop: str | None = None
        self.end: Event | None = None
        # signatures of the calls so far (a repeat, a duplicate write): a bounded window, oldest forgotten first
        self.seen: OrderedDict[str, int] = OrderedDict()
        self.wrong: Counter = Counter()  # (category, stage) of what went wrong, by the metrics' one definition
        self.classes: Counter = Counter()  # the five classes, by failure_classes.by_failure_class's rule, as rows come
        self.codes: set[str] = set()  # the codes met before the end row (an error that ends a run is counted once)
        self.kinds: Counter = Counter()
        self.kind_stage: Counter = Counter()
        self.findings: list[LogFinding] = []  # every one when keep, else the first EXAMPLES
        self.events: list[Event] = []

    def add(self, row: Mapping[str, Any]) -> None:
        # a row holds Event fields, and a span's row its start besides: its values go into the new event whole, the
        # start taken out (as _event, without copying the row first); a row with other keys, the Event fields only
        e = object.__new__(Event)
        values = e.__dict__
        values.update(row)
        values.pop("timestamp", None)
        if not (values.keys() <= _EVENT_FIELDS and values.keys() >= _REQUIRED):
            e = _event({k: v for k, v in row.items() if k in _EVENT_FIELDS})
        extra: dict[str, Any] = {}
        if e.error_code and not (e.error_category in _CATEGORIES and e.error_stage in _STAGES):
            # a system that logs the code only, or names of its own: the taxonomy is the one table's
            cat, stage = _err(e.error_code)
            extra = {"error_category": e.error_category if e.error_category in _CATEGORIES else cat,
                     "error_stage": e.error_stage if e.error_stage in _STAGES else stage}
        if e.kind == "tool" and e.error_code and e.tool_name and self.registry is not None and e.exec_ok is not None:
            self.classes["schema"] += schema_refused(self.registry, e)  # the row keeps its own code
        if e.kind == "tool" and not e.error_code and e.tool_name:
            raw = e.args_raw or ""
            sig: str | None = None
            if self.registry is not None:
                checked = self.registry.check(e.tool_name, raw, rules=False)
                if checked.error is not None:
                    code = checked.error.code
                    cat, stage = _err(code)
                    extra = {"parse_ok": checked.parse_ok, "validate_ok": False if checked.parse_ok else None,
                             "error_code": code, "error_category": cat, "error_stage": stage}
            elif e.parse_ok is None and raw and not raw.isspace():
                # nothing checked it: its JSON, at least, is read (the parse the repeat count makes anyway): arguments
                # that are not a JSON object are what the loop refuses as BAD_JSON
                self.unchecked += 1
                sig = signature(e.tool_name, raw)
                if not sig.startswith("{", len(e.tool_name) + 1):
                    extra = _BAD_JSON
            if (not extra or (e.exec_ok and extra.get("parse_ok"))) and not e.replayed:  # (refused, and ran: counted)
                if sig is None:
                    sig = signature(e.tool_name, raw)
                if sig:
                    n = self.seen[sig] = self.seen.pop(sig, 0) + 1
                    if len(self.seen) > _SIGNATURES:
                        self.seen.popitem(last=False)
                    write = e.tool_name in self.writes or (not self.writes and write_name(e.tool_name))
                    code = ("CONFLICT" if write and n == 2 and e.exec_ok
                            else "LOOP_DETECTED" if n == REPEAT_LIMIT else "")
                    if code:  # its own code (what it did outranks the contract it broke); done, no guard stopping it
                        cat, stage = FOUND_UNGUARDED[code]
                        self.classes["schema"] += bool(extra)  # (its schema's refusal counted still)
                        extra = {**extra, "error_code": code, "error_category": cat, "error_stage": stage}
        if extra:  # (the row's own event, made above: set in place, not made again)
            e.__dict__.update(extra)
        if e.error_code and e.kind != "end":
            kind = ("duplicate_write" if e.error_code == "CONFLICT" and extra else
                    _KIND_OF_CODE.get(e.error_code, "logged_error"))
            # a row's run id, tool name and code are the logs' own text too (a run id may hold a user's e-mail)
            code = _shown_name(e.error_code, 60)
            self.found += 1
            self.kinds[kind] += 1
            self.kind_stage[(kind, code, e.error_stage or "")] += 1
            if self.keep or len(self.findings) < EXAMPLES:  # the rest are counted, never shown: nothing to redact
                self.findings.append(LogFinding(f"{self.source}:{self.last_line}" if self.last_line else self.where,
                                                _shown_name(self.rid, 200), kind, code, e.error_category or "",
                                                e.error_stage or "", _shown_name(e.tool_name or "", 200), None,
                                                _shown(e.args_raw or e.note or ""), self.day))
        # (went_wrong's one definition reads a code or a resend: a row with neither, most of them, is not asked)
        wrong = went_wrong(e) if e.error_code or e.retry_count else None
        if wrong is not None:
            self.wrong[wrong] += 1
        if e.error_code in CODE_CLASSES and (e.kind != "end" or e.error_code not in self.codes):
            self.classes[CODE_CLASSES[e.error_code]] += 1
        if e.error_code and e.kind != "end" and len(self.codes) < REGISTRIES:  # a few codes a run: bounded all the same
            self.codes.add(e.error_code)
        self.calls += e.kind == "tool"
        self.invalid += e.kind == "tool" and (e.parse_ok is False or e.validate_ok is False)
        if e.round_index > self.steps:
            self.steps = e.round_index
        if self.loop is None:
            self.loop = e.loop
        if row.get("final_status"):
            self.status = str(row["final_status"])
        if e.kind == "end":
            self.end = e
        elif self.last != "handover":  # (a hand-over ends the run's own work, whatever follows it)
            kind = e.kind
            self.last = "handover" if kind == "tool" and e.tool_name and hands_over(e.tool_name) else kind
        if self.keep:
            self.events.append(e)

    def final_status(self) -> str:
        if self.status in STATUSES:
            return self.status
        if self.status is None and self.end is not None and self.last in ("model", "handover"):
            # a run that ended and says no status (another system's spans): read as a conversation log is, from how
            # it ended: on a hand-over, on the model's words, or (below) on a call no answer followed
            return "escalated" if self.last == "handover" else "done"
        return "failed"

    def run(self) -> Run:
        """The run as the loop records one (``keep=True`` only: the events are what it holds)."""
        status = self.final_status()
        end = self.end
        answer = (end.model_visible or "")[:300] if end else ""
        return Run(self.rid, self.loop if self.loop is not None else "logs", "", status,  # type: ignore[arg-type]
                   (end.note or "") if end else "", answer, self.steps, finalize(self.events, status), ())

    def summary(self) -> _Summary:
        classes = +(self.classes + effect_classes(self.final_status(), self.codes))
        return _Summary(self.day, None, self.calls, self.invalid, self.steps, self.final_status(), self.wrong,
                        self.kinds, self.kind_stage, tuple(self.findings), self.found, None, classes, self.unchecked)


def _telemetry_run(log: LogRun, registry: Registry | None, writes: frozenset[str]) -> tuple[Run, list[LogFinding]]:
    acc = _TelemetryRun(log.source, log.line, log.rows[0] if log.rows else {"run_id": log.where}, registry, writes,
                        keep=True)
    acc.where = log.where
    acc.day = log.day
    if not log.rows:
        acc.rid = log.where
    for row in log.rows:
        acc.add(row)
    acc.status = log.status
    return acc.run(), acc.findings


class _Summary(NamedTuple):
    """What the report needs of one run: its counts, what went wrong, its findings (counted, and the first few
    whole), and a candidate case (openai logs only)."""

    day: str
    success: bool | None
    calls: int
    invalid: int
    steps: int
    status: str
    wrong: Mapping[tuple[str, str], int]  # (a Counter, or a dict of the same counts: read by items() only)
    kinds: Mapping[str, int]
    kind_stage: Mapping[tuple[str, str, str], int]
    examples: tuple[LogFinding, ...]
    found: int
    case: dict | None
    classes: Counter  # the five classes of failure (failure_classes.run_classes: codes and the ending)
    unchecked: int = 0  # tool calls no tools list could check


_NONE: Counter = Counter()  # a run's counts of nothing found: shared, read and never written
_COUNTS = 1024  # the kinds of run (status and coded events) whose counts are kept: the report reads them, never writes


def _summaries(logs: Iterable[LogRun], registry: Registry | None, writes: frozenset[str],
               cases: list[int], lang: Lang = "en") -> Iterator[_Summary]:
    """Each conversation or run of ``logs`` as the report counts it. ``cases`` counts the candidate cases made, so
    that none is built past :data:`CASES`."""
    registries = Registries(registry)
    shown = 0  # the findings the report will show (_report: the first EXAMPLES of all): past them, no detail is read
    counts: dict[tuple, tuple[Mapping[tuple[str, str], int], Counter]] = {}  # a run's counts by what they read of it
    for log in logs:
        if log.rows:
            acc = _TelemetryRun(log.source, log.line, log.rows[0], registry, writes)
            acc.where, acc.day = log.where, log.day
            for row in log.rows:
                acc.add(row)
            acc.status = log.status
            summary = acc.summary()
            shown = min(EXAMPLES, shown + len(summary.examples))
            yield summary
            continue
        # a finding's detail is redacted (the costliest part of one) only while the report has room to show it
        walk = _openai_walk(log, registries, writes, details=shown < EXAMPLES, counted=True, lang=lang)
        found = walk.findings
        shown = min(EXAMPLES, shown + min(len(found), EXAMPLES))
        # the metrics' own functions, on the run's events that carry a code: went_wrong and run_classes read no other
        # (none here is resent: no retry_count), so they count what they count on the run whole. What they read of
        # those (kind, code, category, stage; the run's status) is the key of their counts: few kinds of run, many runs
        coded = tuple(e for e in walk.events if e.error_code) if walk.coded else ()
        key = (walk.status, tuple((e.kind, e.error_code, e.error_category, e.error_stage) for e in coded))
        wrong_classes = counts.get(key)
        if wrong_classes is None:
            run = _run(log.where, walk.status, walk.steps, coded)
            wrong_classes = (_tally(w for w in map(went_wrong, coded) if w is not None) or _NONE, run_classes(run))
            if len(counts) < _COUNTS:
                counts[key] = wrong_classes
        wrong, classes = wrong_classes
        classes = classes + Counter(schema=walk.schema_also) if walk.schema_also else classes
        case = None
        if found and log.messages and cases[0] < CASES:
            case = case_of(log, found)
            cases[0] += case is not None
        # (the tuple made as it is, less NamedTuple's __new__ taking its 13 fields by name: once a conversation)
        yield tuple.__new__(_Summary, (log.day or "", log.success, walk.calls, walk.invalid, walk.steps, walk.status,
                                       wrong, _tally(f.kind for f in found) if found else _NONE,
                                       _tally((f.kind, f.code, f.stage) for f in found) if found else _NONE,
                                       tuple(found[:EXAMPLES]), len(found), case, classes, walk.unchecked))


def _tally(keys: Iterable[Any]) -> dict[Any, int]:
    """``Counter(keys)`` as a plain dict, the same counts in the same order: a run's few, which the report adds up
    (:func:`_add`) and never reads as a Counter."""
    out: dict[Any, int] = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return out


def _run(rid: str, status: Status, steps: int, events: tuple[Event, ...]) -> Run:
    """``Run(rid, "logs", "", status, "", "", steps, events, ())``, less the frozen dataclass ``__init__`` (as
    :func:`_event`): the run whose events the metrics read, made once a conversation."""
    run = object.__new__(Run)
    run.__dict__.update({"run_id": rid, "loop": "logs", "model": "", "status": status, "reason": "", "answer": "",
                         "steps": steps, "events": events, "messages": ()})
    return run


def _streamed(source: str, rows: Iterable[tuple[int, dict]], registry: Registry | None,
              writes: frozenset[str]) -> Iterator[_Summary]:
    """Telemetry rows grouped by run as :func:`~agentlab.evals.logs.read_logs` groups them (a run given out at its
    ``end`` row, the oldest closed past :data:`~agentlab.evals.logs.OPEN_RUNS` open ones, the rest at the end),
    each run aggregated as its rows come: memory holds the open runs' counts, never their rows."""
    open_runs: dict[str, _TelemetryRun] = {}
    for n, row in rows:
        acc = open_runs.get(rid := row["run_id"])
        if acc is None:
            acc = open_runs[rid] = _TelemetryRun(source, n, row, registry, writes)
        acc.last_line = n  # a finding names its own line, not its run's first
        acc.add(row)
        if row["kind"] == "end":
            del open_runs[rid]
            yield acc.summary()
        elif len(open_runs) > OPEN_RUNS:  # runs that never end must not fill the memory
            yield open_runs.pop(next(iter(open_runs))).summary()
    for acc in open_runs.values():
        yield acc.summary()


def runs_of(logs: Iterable[LogRun], *, registry: Registry | None = None,
            writes: frozenset[str] = frozenset()) -> Iterator[tuple[LogRun, Run, list[LogFinding]]]:
    """Each conversation of the logs as a Run (the loop's event fields) with what was found wrong in it."""
    registries = Registries(registry)
    for log in logs:
        if log.rows:
            run, found = _telemetry_run(log, registry, writes)
        else:
            run, found = _openai_run(log, registries, writes)
        yield log, run, found


def analyze(logs: Iterable[LogRun], *, registry: Registry | None = None, writes: frozenset[str] = frozenset(),
            settings: Mapping[str, Any] | None = None) -> dict:
    """The report of a stream of conversations (``report.json``), in memory bounded by the longest one."""
    return _report(_summaries(logs, registry, writes, [0], lang=(settings or {}).get("lang", "en")), settings)


def _add(counts: Counter, more: Mapping[Any, int]) -> None:
    """``counts.update(more)``, less its test of what ``more`` is (a run's few counts, on every run)."""
    for k, n in more.items():
        counts[k] += n


def _report(summaries: Iterable[_Summary], settings: Mapping[str, Any] | None) -> dict:
    """The report of runs counted one at a time: what it holds is the counts and bounded samples."""
    total = Tally()
    days: dict[str, Tally] = {}
    kinds: Counter = Counter()
    by_cat: Counter = Counter()
    by_stage: Counter = Counter()
    kind_stage: Counter = Counter()
    classes: dict[str, int] = dict.fromkeys(FAILURE_CLASSES, 0)
    examples: list[dict] = []
    cases: list[dict] = []
    runs_with_findings = unchecked = 0
    for r in summaries:
        total.count(r.calls, r.invalid, r.steps, r.status, r.success)
        unchecked += r.unchecked
        day = days.get(r.day or "-")
        if day is None:
            day = days[r.day or "-"] = Tally()
        day.count(r.calls, r.invalid, r.steps, r.status, r.success)
        for (cat, stage), n in r.wrong.items():  # both taxonomies, by the metrics' one definition of "went wrong"
            by_cat[cat] += n
            by_stage[stage] += n
        if r.found:  # (most runs found nothing: Counter.update costs its checks even on an empty one)
            _add(kinds, r.kinds)
            _add(kind_stage, r.kind_stage)
        if r.classes:  # runs by class: a conversation once in each class it shows
            runs_by_class((r.classes,), into=classes)
        for f in r.examples[:EXAMPLES - len(examples)]:  # the run id, the tool and the codes are the logs' words too
            examples.append(f.to_dict())
        if r.found:
            runs_with_findings += 1
            if r.case is not None and len(cases) < CASES:
                cases.append(r.case)
    largest = None
    # what to fix first is never a guard that worked (rule-blocked), unless nothing else was found
    fixable = {ks: n for ks, n in kind_stage.items() if ks[2] != "rule_blocked"} or kind_stage
    if fixable:  # a tie goes to the kind whose class the five classes count most (not to a kind's name)
        def weight(kv: tuple[tuple[str, str, str], int]) -> tuple[int, int]:
            return kv[1], classes.get(CODE_CLASSES.get(kv[0][1], ""), 0)
        heaviest = max(weight(kv) for kv in fixable.items())
        # still tied (as many, of as large a class): each is named, none picked by its name
        tied = sorted(ks for ks, n in fixable.items() if weight((ks, n)) == heaviest)
        (kind, code, stage), n = tied[0], heaviest[0]
        where = next((x["where"] for x in examples if x["kind"] == kind), "")
        largest = {"kind": kind, "code": code, "stage": stage, "count": n, "share": n / max(sum(kinds.values()), 1),
                   "example": where}
        if len(tied) > 1:
            largest["tied"] = [{"kind": k, "code": c, "stage": st} for k, c, st in tied]
    summary = total.summary()
    return {
        "version": 1,
        "settings": dict(settings or {}),
        "totals": {"runs": summary["runs"], "tool_calls": total.calls, "findings": sum(kinds.values()),
                   "runs_with_findings": runs_with_findings, "graded_runs": total.graded,
                   # calls no tools list could check: their arguments read as JSON only (no schema, no unknown tool)
                   "unchecked_calls": unchecked},
        "headline": summary,
        "days": {d: {**days[d].summary(), "graded": days[d].graded} for d in sorted(days)},
        "by_kind": dict(kinds.most_common()),
        "by_category": dict(by_cat.most_common()),
        "by_stage": dict(by_stage.most_common()),
        "by_kind_stage": [{"kind": k, "code": c, "stage": st, "count": n} for (k, c, st), n in kind_stage.most_common()],
        "failure_classes": {c: classes.get(c, 0) for c in FAILURE_CLASSES},
        "largest": largest,
        "findings": examples,
        "cases": cases,
    }


def review_logs(path: str | Path, fmt: Format = "openai", *, tools: str | Path | None = None, lang: Lang = "en",
                progress: bool = False) -> dict:
    """Read a log file as a stream and review it: the report :func:`write_report` writes."""
    registry, writes = tools_file(tools)
    name = Path(str(path)).name
    settings = {"source": name, "format": fmt, "lang": lang,
                "writes": "tools file" if writes else "name pattern", "repeat_limit": REPEAT_LIMIT}
    if registry is not None and tools is not None:  # named by its file's name, as the logs are
        settings.update(tools=Path(str(tools)).name, tools_count=len(registry.names))
    unread = Unread()  # a line that cannot be read, once one was: counted and said, the rest reviewed
    if fmt == "openai":  # a conversation is one line (or one line's history): bounded by the line
        report = analyze(read_logs(path, fmt, progress=progress, shared_tools=True, unread=unread), registry=registry,
                         writes=writes, settings=settings)
    else:  # telemetry and OTLP: a run may be a million rows, so it is counted row by row, never held
        rows = read_rows(path, fmt, progress=progress, unread=unread)
        report = _report(_streamed(name, rows, registry, writes), settings)
    report["totals"]["unread_lines"] = unread.count
    if unread.encoding != "utf-8":  # said beside the figures: the file was read, and how
        report["settings"]["encoding"] = unread.encoding
    # each as the reader said it, the file named (not where it sits on a disk) and what it quotes of the line redacted
    report["unread"] = [mask_personal(redact_secrets(_named(e, name).localized(lang))) for e in unread.first]
    if unread.partial:  # lines read with a part that could not be (OTLP messages cut short): only where there are some
        report["totals"]["partly_read_lines"] = unread.partial
        report["partly_read"] = [mask_personal(redact_secrets(_named(e, name).localized(lang))) for e in unread.first_partial]
    return report


def _named(error: LocalizedError, name: str) -> LocalizedError:
    """``error`` naming the file by ``name`` where it named it by its path (a report is shared; a disk is not)."""
    fields: dict[str, object] = dict(error.fields)
    fields.update((k, name) for k in ("path", "where") if k in fields)
    return LocalizedError(error.key, **fields)

