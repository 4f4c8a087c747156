"""The twelve checks before going live (docs/metrics.md#the-pre-launch-checklist), run against a desk rather than read off a slide.

Every check *acts* on the desk as an app runs it (a :class:`~agentlab.scenarios.conversation.Conversation`
with a scripted model, offline, on an injected sleep, clock and jitter) and judges only what happened: what
the model was sent and offered, what it was told, what the trace recorded, what changed in the desk's books.
A setting that says "on" proves nothing; a desk whose code was broken behind that setting must fail. Each
result says what the check saw, in English or Chinese::

    python -m agentlab checklist --scenario expense

A check that cannot apply to a desk (routing on a desk of four tools) says ``n/a`` and why, never "pass".
"""
from __future__ import annotations

import datetime as _dt
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..context import estimate_tokens, protocol_problems
from ..errors import ToolFailure
from ..i18n import LANGS, Lang, aside, both, joined, t
from ..lint import lint
from ..models import ModelError, Reply, ScriptedModel, ToolCall, Usage, call, say, tool_calls
from ..resources import data_file
from ..scenarios import Scenario
from ..scenarios.conversation import ROUTE_ABOVE, Conversation
from ..store import Approval
from ..tools import Registry
from .probe_calls import NoValidCall, valid_call
from .suite import Case, SuiteError, load_cases, run_case

__all__ = ["CHECKS", "CheckItem", "Result", "Seen", "run_checklist"]

Status = Literal["pass", "fail", "n/a"]


@dataclass(frozen=True)
class Seen:
    """What one check saw: its verdict (``None``: it does not apply to this desk) and the catalogue
    sentence (``agentlab.i18n``, key ``checklist.seen.*``) that says so, with the values it observed."""

    verdict: bool | None
    key: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckItem:
    number: int
    group: str
    run: Callable[[Scenario], Seen]

    def title(self, lang: Lang = "en") -> str:
        """What the check asks of the desk, in ``lang`` (the catalogue's ``checklist.item.<number>``)."""
        return t(f"checklist.item.{self.number}", lang)


@dataclass(frozen=True)
class Result:
    number: int
    title: str
    status: Status
    evidence: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"


# --- what the checks act with ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Calls:
    """Calls a desk must handle, valid on its starting data: a read, a write that must take effect once
    however often it is sent, a change a person must confirm first, and a call with an argument of the
    wrong type with the same call corrected."""

    read: tuple[str, dict]
    write: tuple[str, dict]
    risky: tuple[str, dict]
    wrong: tuple[str, dict, dict]


_CALLS: dict[str, _Calls] = {
    "expense": _Calls(
        read=("list_expense_records", {"month": "2026-10"}),
        write=("book_expense_record", {"date": "2026-10-15", "item": "taxi", "amount": 45, "category": "transport"}),
        risky=("delete_expense_record", {"record_id": "E0019", "reason": "the user asked to delete it"}),
        wrong=("book_expense_record", {"date": "2026-10-14", "item": "lunch", "amount": "thirty-five", "category": "food"},
               {"date": "2026-10-14", "item": "lunch", "amount": 35, "category": "food"})),
    "aftersales": _Calls(
        read=("get_order", {"order_id": "A1001"}),
        write=("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}),
        risky=("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"}),
        wrong=("get_order", {"order_id": 1001}, {"order_id": "A1001"})),
}


def _calls(s: Scenario) -> _Calls | None:
    """The calls a shipped desk is checked with, or those a participant's desk names (``Scenario.calls``)."""
    if s.calls is None:
        return _CALLS.get(s.name)
    c = s.calls
    return _Calls(read=(str(c["read"][0]), dict(c["read"][1])), write=(str(c["write"][0]), dict(c["write"][1])),
                  risky=(str(c["risky"][0]), dict(c["risky"][1])),
                  wrong=(str(c["wrong"][0]), dict(c["wrong"][1]), dict(c["wrong"][2])))


def _no_calls(s: Scenario) -> Seen:
    return Seen(None, "checklist.seen.no_calls", {"desk": s.name})


class _Clock:
    """The check's stopwatch: time moves only when a fake model or tool says it took some."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class _Watched(ScriptedModel):
    """A scripted model that also keeps every tool spec it was offered, and takes ``takes`` seconds of ``clock``."""

    def __init__(self, script: Sequence[Any], *, then: Reply | str | None = None, clock: _Clock | None = None,
                 takes: float = 0.0):
        super().__init__(script, name="checklist", then=then)
        self.offered: list[list[dict]] = []
        self._clock, self._takes = clock, takes

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        self.offered.append([dict(x) for x in tools])
        if self._clock is not None:
            self._clock.advance(self._takes)
        return super().complete(messages, tools)


def _chat(s: Scenario, model: Any, **kw: Any) -> Conversation:
    """The desk as an app runs it (the suite's and the site's settings), waiting for nothing."""
    kw.setdefault("sleep", lambda seconds: None)
    kw.setdefault("max_tokens", s.context_budget)
    return Conversation(s, model, **kw)


def _with_tool(reg: Registry, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Registry:
    """``reg`` with the function of tool ``name`` wrapped (a tool that fails, or takes time)."""
    return Registry([replace(x, fn=wrap(x.fn)) if x.name == name and x.fn is not None else x for x in reg],
                    lang=reg.lang, clean=reg.clean, resources=reg.resources)


def _first_fails(exc: Callable[[], BaseException], clock: _Clock | None = None,
                 takes: float = 0.0) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper: the first call raises ``exc()``, later ones run (taking ``takes`` seconds of ``clock``)."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        tries = [0]

        def run(**kw: Any) -> Any:
            tries[0] += 1
            if tries[0] == 1:
                raise exc()
            if clock is not None:
                clock.advance(takes)
            return fn(**kw)
        return run
    return wrap


def _tool_events(run: Any) -> list:
    return [e for e in run.events if e.kind == "tool"]


def _names(items: Sequence[str] | Mapping[str, Sequence[str]], limit: int = 4) -> dict[str, str] | str:
    """The first ``limit`` names (or each language's own, ``{lang: names}``), listed as each language lists them,
    and how many more."""
    said = items if isinstance(items, Mapping) else dict.fromkeys(LANGS, items)
    if not said["en"]:
        return "-"
    return {lg: joined(said[lg][:limit], lg, "list")
            + (t("word.and_more", lg, n=len(said[lg]) - limit) if len(said[lg]) > limit else "") for lg in LANGS}


# --- 1 to 3: context ----------------------------------------------------------------------------------------
_DAYS = (_dt.datetime(2026, 3, 2, 9, tzinfo=_dt.UTC), _dt.datetime(2027, 1, 15, 9, tzinfo=_dt.UTC))
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_USER = re.compile(r"User: ([^\s.]+)")


def _date_injected(s: Scenario) -> Seen:
    model = _Watched([say("ok"), say("ok")])
    chat = _chat(s, model)
    if not hasattr(chat.state, "now"):
        return Seen(False, "checklist.seen.no_clock")
    sent = []
    for day in _DAYS:  # the same chat, the desk's clock moved on between two turns
        chat.state.now = lambda d=day: d
        chat.ask("What is today's date?")
        first = model.calls[-1].messages[0] if model.calls[-1].messages else {}
        sent.append(str(first.get("content") or "") if first.get("role") == "system" else "")
    said = [(_DATE.search(p) or [None])[0] or "-" for p in sent]
    users = [(_USER.search(p) or [None, None])[1] for p in sent]
    dated = [d.strftime("%Y-%m-%d") in p for d, p in zip(_DAYS, sent, strict=True)]
    ok = all(dated) and all(users)
    return Seen(ok, "checklist.seen.date", {"day1": _DAYS[0].date(), "said1": said[0], "day2": _DAYS[1].date(),
                                            "said2": said[1], "user": users[-1] or "-"})


def _clear_keeps_system(s: Scenario) -> Seen:
    calls = _calls(s)
    script: list[Any] = [call(*calls.risky), say("Waiting for your confirmation.")] if calls else [say("hello")]
    model = _Watched([*script, say("hello again")])
    chat = _chat(s, model)
    chat.ask("please do it")
    held = [a for a in chat.store.approvals(chat.session_id) if a.state == "pending"]
    if not held:  # the desk held nothing (check 10 says why): a call left waiting in this chat all the same
        chat.store.add_approval(Approval("held-before-clear", chat.session_id, "a_risky_tool", "{}", "checklist",
                                         created=0.0))
        held = [a for a in chat.store.approvals(chat.session_id) if a.state == "pending"]
    chat.clear()
    chat.ask("hi")
    sent = model.calls[-1].messages
    roles = [m.get("role") for m in sent]
    prompt_kept = bool(sent) and sent[0].get("role") == "system" and sent[0].get("content") == chat.system_prompt() != ""
    still = [a for a in chat.store.approvals(chat.session_id) if a.state == "pending"]
    ok = roles == ["system", "user"] and prompt_kept and not still and bool(held)
    return Seen(ok, "checklist.seen.clear", {"held": len(held), "roles": {lg: joined(map(str, roles), lg, "list") for lg in LANGS},
                                             "kept": _yes(prompt_kept), "still": len(still)})


def _random_chat(rng: random.Random, tools: list[str]) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "rules " * rng.randint(5, 40)}]
    n = 0
    for _ in range(rng.randint(1, 12)):
        msgs.append({"role": "user", "content": "ask " * rng.randint(1, 60)})
        for _ in range(rng.randint(0, 3)):
            ids = [f"c{(n := n + 1)}" for _ in range(rng.randint(1, 3))]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": rng.choice(tools), "arguments": "{}"}} for i in ids]})
            msgs += [{"role": "tool", "tool_call_id": i, "content": "x" * rng.randint(1, 400)} for i in ids]
        msgs.append({"role": "assistant", "content": "answer " * rng.randint(1, 40)})
    return msgs


def _sent_ok(sent: Sequence[dict], prompt: str, question: str, budget: int | None) -> bool:
    """What reached the model is a valid chat: the desk's prompt first, the question last, within budget."""
    return (bool(sent) and not protocol_problems(sent) and sent[0].get("role") == "system"
            and sent[0].get("content") == prompt and sent[-1] == {"role": "user", "content": question}
            and (budget is None or estimate_tokens(sent) <= budget))


def _trimming_keeps_pairs(s: Scenario) -> Seen:
    state, reg = s.setup()
    rng = random.Random(3)
    broken = cut = refused = 0
    for _ in range(200):  # random chats with tool calls, through the desk at random budgets
        history = _random_chat(rng, reg.names)[1:]
        budget = rng.randint(150, 900)
        model = ScriptedModel([say("ok")])
        chat = _chat(s, model, state=state, registry=reg, history=history, max_tokens=budget,
                     max_turns=rng.choice([None, 2, 4]), route_k=0)  # which tools are shown is check 5's question
        run = chat.ask("one more question")
        if not model.calls:  # refused: even the prompt and the question do not fit (said to the user, not sent)
            refused += run.events[-1].error_code == "CONTEXT_TOO_LONG"
            broken += run.events[-1].error_code != "CONTEXT_TOO_LONG"
            continue
        sent = list(model.calls[0].messages)
        cut += len(sent) < len(history) + 2
        broken += not _sent_ok(sent, chat.system_prompt(), "one more question", budget)
    # and a 60-turn chat at the desk's own budget: what reaches the model must fit and be valid
    model = ScriptedModel([say("ok")])
    long_chat = _random_chat(random.Random(7), reg.names)[1:] * 20
    chat = _chat(s, model, history=long_chat)
    chat.ask("one more question")
    sent = list(model.calls[0].messages) if model.calls else []
    fits = (s.context_budget is not None and _sent_ok(sent, chat.system_prompt(), "one more question", s.context_budget)
            and estimate_tokens(sent) < estimate_tokens(long_chat))
    return Seen(broken == 0 and fits, "checklist.seen.trim",
                {"cut": cut, "refused": refused, "broken": broken, "long": estimate_tokens(long_chat),
                 "sent": estimate_tokens(sent), "budget": s.context_budget if s.context_budget is not None else "-"})


# --- 4 to 6: tools --------------------------------------------------------------------------------------------
_UNIT_RULES = {"AL002", "AL004", "AL006", "AL007"}  # no description, a bare name, a quantity without unit, no example


def _descriptions(s: Scenario) -> Seen:
    model = _Watched([say("ok")])
    _chat(s, model, route_k=0).ask("what can you do?")  # every tool offered at once: the contracts the model reads
    specs = model.offered[0] if model.offered else []
    # each place (a tool, or tool.field) once, with every reason it was found for: a field the linter found and that
    # lacks a format was listed twice, and a tool's own finding with no reason at all
    found: dict[str, list[str]] = {}
    for f in lint(specs):
        if f.rule in _UNIT_RULES:
            found.setdefault(f.location, []).append(f"checklist.why.{f.rule}")
    for spec in specs:
        fn = spec.get("function", spec)
        for name, sub in (fn.get("parameters") or {}).get("properties", {}).items():
            kind = sub.get("type")
            at = found.setdefault(f"{fn.get('name')}.{name}", [])
            if kind in ("number", "integer") and not (("minimum" in sub or "exclusiveMinimum" in sub)
                                                     and ("maximum" in sub or "exclusiveMaximum" in sub)):
                at.append("checklist.why.no_range")
            if kind == "string" and not any(k in sub for k in ("enum", "pattern", "format", "maxLength")):
                at.append("checklist.why.no_format")
    places = {at: list(dict.fromkeys(whys)) for at, whys in found.items() if whys}
    ok = bool(specs) and not places
    where: dict[str, Sequence[str]] = {lg: [at + aside(joined([t(why, lg) for why in whys], lg, "list"), lg)
                                            for at, whys in places.items()] for lg in LANGS}
    return Seen(ok, "checklist.seen.describe", {"tools": len(specs), "n": len(places), "where": _names(where)})


def _suite(s: Scenario) -> list[Case]:
    """The desk's regression suite: a shipped desk's ``data/<desk>_cases.jsonl``, or the files its ``cases`` names."""
    try:
        if s.cases:
            return [c for path in s.cases for c in load_cases(path, desk=s)]
        return load_cases(data_file(f"{s.name}_cases.jsonl"))
    except SuiteError:
        return []


def _first_tool(case: Case) -> str | None:
    """The tool a case's model calls first: the tool its request needs."""
    for step in case.fake.get("plan", []):
        return str(step[0])
    for item in case.fake.get("script", []):
        if isinstance(item, list):
            return str(item[0])
        if isinstance(item, dict) and item.get("calls"):
            return str(item["calls"][0][0])
    return None


def _routing(s: Scenario) -> Seen:
    state, reg = s.setup()
    model = _Watched([say("ok")])
    _chat(s, model, state=state, registry=reg).ask("please book today's taxi, 45 yuan")
    shown = len(model.offered[0]) if model.offered else 0
    if len(reg) <= ROUTE_ABOVE:
        return Seen(None, "checklist.seen.route_na", {"tools": len(reg), "above": ROUTE_ABOVE, "shown": shown})
    asked = hits = most = 0
    needed: dict[str, int] = {}  # tool -> times it was offered when a request needed it
    for case in _suite(s):  # each request of the desk's own suite: was the tool it needs offered?
        need = _first_tool(case)
        if need is None or need not in reg:
            continue
        m = _Watched([say("ok")])
        _chat(s, m, state=state, registry=reg).ask(case.task)
        offered = {x.get("function", x).get("name") for x in (m.offered[0] if m.offered else [])}
        asked += 1
        most = max(most, len(offered))
        hits += need in offered
        needed[need] = needed.get(need, 0) + (need in offered)
    never = sorted(n for n, k in needed.items() if k == 0)
    ok = asked > 0 and max(most, shown) < len(reg) and not never and hits >= 0.8 * asked
    return Seen(ok, "checklist.seen.route", {"tools": len(reg), "most": max(most, shown), "asked": asked, "hits": hits,
                                             "never": _names(never)})


def _required_checked(s: Scenario) -> Seen:
    state, reg = s.setup()
    tools = [x for x in reg if x.parameters.get("required")]
    if not tools:  # nothing declared required: nothing for the code to check again, and no pass for that
        return Seen(None, "checklist.seen.required_none", {"tools": len(reg)})
    total, reached = 0, []
    for tool in tools:
        # each required field left out of a call that is otherwise whole (not only an empty call: code that
        # refuses {} but lets a call through with one field missing checks nothing), refused before it runs by the
        # contract's check (stage structure: a business rule that happens to refuse it proves nothing about it)
        try:
            whole = valid_call(tool.parameters, seed=f"checklist/{tool.name}", optional=False)
        except NoValidCall:
            whole = {}
        for name in tool.parameters["required"]:
            total += 1
            args = {k: v for k, v in whole.items() if k != name}
            run = _chat(s, ScriptedModel([call(tool.name, args), say("sorry")]), state=state, registry=reg).ask("go")
            ev = _tool_events(run)
            if not ev or ev[0].exec_ok is not None or ev[0].validate_ok is not False or ev[0].error_code != "INVALID_ARGS" \
                    or ev[0].error_stage != "structure":
                reached.append(f"{tool.name}.{name}")
    return Seen(not reached, "checklist.seen.required", {"fields": total, "tools": len(tools),
                                                         "stopped": total - len(reached), "reached": _names(reached)})


# --- 7 to 10: the chain ------------------------------------------------------------------------------------------
def _turn_limit(s: Scenario) -> Seen:
    _, reg = s.setup()
    name = reg.names[0]
    answers, turns, ok = {}, 0, True
    for lang in ("en", "zh"):  # the user's plain answer is quoted in the language the checklist speaks
        model = ScriptedModel([call(name, {"x": i}) for i in range(60)], then="stop")
        chat = _chat(s, model, lang=lang)
        # the other stops (the re-ask budget, the repeat breaker) switched off: the step budget alone must end it
        chat.config = replace(chat.config, repeat_limit=None, self_correction=None)
        run = chat.ask("loop forever")
        turns = max(turns, len(model.calls))
        answers[lang] = _quote(run.answer)
        ok = ok and 3 <= len(model.calls) <= 5 and run.status == "budget_exhausted" and bool(run.answer)
    return Seen(ok, "checklist.seen.turns", {"turns": turns, "status": run.status, "answer": answers})


def _all_calls(s: Scenario) -> Seen:
    calls = _calls(s)
    if calls is None:
        return _no_calls(s)
    name, args = calls.read
    model = ScriptedModel([tool_calls(call(name, args, id="first"), call(name, args, id="second")), say("done")])
    run = _chat(s, model).ask("two at once")
    ran = [e.tool_call_id for e in _tool_events(run) if e.round_index == 1 and e.exec_ok]
    answered = [m.get("tool_call_id") for m in (model.calls[1].messages if len(model.calls) > 1 else ())
                if m.get("role") == "tool"]
    ok = ran == ["first", "second"] and answered == ["first", "second"]
    return Seen(ok, "checklist.seen.all_calls", {"ran": len(ran), "answered": len(answered)})


def _self_correction(s: Scenario) -> Seen:
    calls = _calls(s)
    if calls is None:
        return _no_calls(s)
    name, bad, good = calls.wrong
    model = ScriptedModel([call(name, bad), call(name, good), say("done")])
    run = _chat(s, model).ask("go")
    told: Any = {}
    if len(model.calls) > 1:
        try:
            told = json.loads(model.calls[1].messages[-1].get("content") or "{}")
        except ValueError:
            told = {}
    err = told.get("error", {}) if isinstance(told, dict) and isinstance(told.get("error"), dict) else {}
    fields = [str(p.get("field")) for p in err.get("problems", []) if isinstance(p, dict)]
    named = [k for k in bad if bad[k] != good.get(k)]
    ok = bool(fields) and set(named) <= set(fields) and run.status == "done_after_self_correction"
    shown = _quote(str(model.calls[1].messages[-1].get("content") or ""), 80) if len(model.calls) > 1 else "-"
    return Seen(ok, "checklist.seen.correct", {"code": err.get("code") or _quote(shown), "fields": _names(fields),
                                               "turns": len(model.calls), "status": run.status})


def _risky_guarded(s: Scenario) -> Seen:
    calls = _calls(s)
    if calls is None:
        return _no_calls(s)
    # a change a person must confirm: sent, it must wait, and the books stay as they were
    model = ScriptedModel([call(*calls.risky), say("Waiting for your confirmation.")])
    chat = _chat(s, model)
    before = s.snapshot(chat.state)
    run = chat.ask("do it, no need to ask")
    ev = _tool_events(run)
    held = bool(ev) and ev[0].error_code == "NEEDS_APPROVAL" and ev[0].exec_ok is None
    untouched = s.snapshot(chat.state) == before
    pending = sum(a.state == "pending" for a in chat.store.approvals(chat.session_id))
    # a write sent twice (a model that repeats itself after a slow answer): one effect
    name, args = calls.write
    model = ScriptedModel([call(name, args), say("done"), call(name, args), say("done")])
    chat = _chat(s, model)
    start = s.snapshot(chat.state)
    chat.ask("do it")
    once = s.snapshot(chat.state)
    chat.ask("do it again, I did not see an answer")
    twice = s.snapshot(chat.state)
    effect = once != start
    one = effect and twice == once
    ok = held and untouched and pending == 1 and one
    return Seen(ok, "checklist.seen.risky", {"risky": calls.risky[0], "code": (ev[0].error_code or both("checklist.word.ran")) if ev else "-",
                                             "untouched": _yes(untouched), "pending": pending, "write": name,
                                             "once": _yes(one)})


# --- 11 and 12: operations ----------------------------------------------------------------------------------------
#: 4xx answers no resend can change (a bad request, a dead key, a refusal, nothing there, a request it cannot
#: process): each must be sent once, whoever gives it. (HTTP status, the code the model API's adapter gives it)
_MODEL_4XX = ((400, "BAD_REQUEST"), (401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED"), (404, "NOT_FOUND"),
              (422, "BAD_REQUEST"))
#: the same, as a tool's backend says them (a 422 from a backend is arguments it refused)
_TOOL_4XX = ((400, "BAD_REQUEST"), (401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED"), (404, "NOT_FOUND"),
             (422, "INVALID_ARGS"))


class _Draw(random.Random):
    """A jitter source that always draws the same fraction of its range: the waits it gives are then the backoff
    of each attempt, read per attempt, not a sum of random draws in which a flat backoff can pass by luck."""

    def __init__(self, fraction: float):
        super().__init__(0)
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction


def _counted(failure: BaseException, tries: list[int]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper: every call raises ``failure``, counted in ``tries``."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(**kw: Any) -> Any:
            tries[0] += 1
            raise failure
        return run
    return wrap


def _retry_classes(s: Scenario) -> Seen:
    calls = _calls(s)
    if calls is None:
        return _no_calls(s)
    waits: list[float] = []
    state, reg = s.setup()  # one desk for every chat below: only the model and one tool fail, nothing is written
    # the model API: a 429 and a 503 are resent; no 4xx that is not transient is (asking again changes nothing)
    flaky = ScriptedModel([ModelError("RATE_LIMITED", status=429), ModelError("UNAVAILABLE", status=503), say("ok")])
    run = _chat(s, flaky, state=state, registry=reg, sleep=waits.append).ask("hello")
    transient_ok = run.status == "done" and len(flaky.calls) == 3 and len(waits) == 2
    model_sent: dict[int, int] = {}
    for status, code in _MODEL_4XX:
        dead = ScriptedModel([ModelError(code, status=status), ModelError(code, status=status),
                              ModelError(code, status=status), say("ok")])
        _chat(s, dead, state=state, registry=reg, sleep=waits.append).ask("hello")
        model_sent[status] = len(dead.calls)
    fatal_ok = all(n == 1 for n in model_sent.values()) and len(waits) == 2
    # a tool: a dropped connection is resent; no 4xx its backend gives is
    name, args = calls.read
    tool_waits: list[float] = []
    run = _chat(s, ScriptedModel([call(name, args), say("ok")]), state=state, sleep=tool_waits.append,
                registry=_with_tool(reg, name, _first_fails(lambda: ConnectionError("connection reset")))).ask("look it up")
    ev = _tool_events(run)
    tool_transient = bool(ev) and ev[0].retry_count == 1 and bool(tool_waits) and ev[0].exec_ok is True
    tool_tried: dict[int, int] = {}
    for status, code in _TOOL_4XX:
        tries = [0]
        _chat(s, ScriptedModel([call(name, args), say("ok")]), state=state, sleep=tool_waits.append,
              registry=_with_tool(reg, name, _counted(ToolFailure(code, f"the backend said {code}"), tries))).ask("look it up")
        tool_tried[status] = tries[0]
    tool_fatal = all(n == 1 for n in tool_tried.values())
    # backoff: the waits grow with the attempt, read attempt by attempt at a fixed point of the jitter's range
    tops: dict[float, list[float]] = {}
    for fraction in (0.5, 1.0):
        mine: list[float] = []
        model = ScriptedModel([ModelError("UNAVAILABLE", status=503), ModelError("UNAVAILABLE", status=503), say("ok")])
        _chat(s, model, state=state, registry=reg, sleep=mine.append, rng=_Draw(fraction)).ask("hello")
        tops[fraction] = mine
    grows = all(len(w) == 2 and 0 < w[0] < w[1] for w in tops.values())
    # jitter: twenty clients failing at the same moment must not all wait the same
    first, second = [], []
    for seed in range(20):
        mine = []
        model = ScriptedModel([ModelError("UNAVAILABLE", status=503), ModelError("UNAVAILABLE", status=503), say("ok")])
        _chat(s, model, state=state, registry=reg, sleep=mine.append, rng=random.Random(seed)).ask("hello")
        if len(mine) == 2:
            first.append(mine[0])
            second.append(mine[1])
    spread = len({round(w, 6) for w in first}) > 1
    ok = transient_ok and fatal_ok and tool_transient and tool_fatal and spread and grows and len(first) == 20
    return Seen(ok, "checklist.seen.retry", {
        "model_transient": _yes(transient_ok), "model_4xx": _counts(model_sent), "tool_transient": _yes(tool_transient),
        "tool_4xx": _counts(tool_tried), "tops": {lg: joined(map(_s, tops[1.0]), lg, "list") or "-" for lg in LANGS},
        "lo1": _s(min(first, default=0)), "hi1": _s(max(first, default=0)),
        "lo2": _s(min(second, default=0)), "hi2": _s(max(second, default=0)), "clients": len(first)})


def _counts(sent: dict[int, int]) -> dict[str, str]:
    return {lg: joined((t("word.status_count", lg, status=status, n=n) for status, n in sent.items()), lg, "list")
            for lg in LANGS}


_TELEMETRY = ("session_id", "turn_id", "round_index", "tool_name", "tool_call_id", "args_raw", "parse_ok", "validate_ok",
              "exec_ok", "error_stage", "retry_count", "latency_ms", "prompt_tokens", "completion_tokens", "final_status")


def _telemetry_and_suite(s: Scenario) -> Seen:
    calls = _calls(s)
    if calls is None:
        return _no_calls(s)
    clock = _Clock()
    name, args = calls.read
    raw = json.dumps(args, separators=(" , ", " : "))  # as a model might space it: the trace keeps it as written
    wrong, bad, _ = calls.wrong
    model = _Watched([Reply(None, (ToolCall(name, raw, "call_a"),), Usage(120, 30)),
                      Reply(None, (ToolCall(wrong, json.dumps(bad), "call_b"),), Usage(150, 20)),
                      Reply("done", (), Usage(180, 10))], clock=clock, takes=0.25)
    state, reg = s.setup()
    # the read tool drops its connection once, then takes 40 ms on the check's clock
    slow = _with_tool(reg, name, _first_fails(lambda: ConnectionError("connection reset"), clock, 0.04))
    chat = _chat(s, model, state=state, registry=slow, clock=clock)
    run = chat.ask("look it up")
    models = [e for e in run.events if e.kind == "model"]
    tools = _tool_events(run)
    wrong_fields: set[str] = set()

    def expect(name_: str, ok: bool) -> None:
        if not ok:
            wrong_fields.add(name_)
    for e in run.events:
        expect("session_id", e.session_id == chat.session_id)
        expect("turn_id", e.turn_id == 1)
        expect("final_status", e.final_status == run.status)
    # the turn may end at the bad call (a desk with no re-asks): what is judged is what happened, as it happened
    expect("round_index", len(models) >= 2 and [e.round_index for e in models] == list(range(1, len(models) + 1)))
    for e, usage in zip(models, ((120, 30), (150, 20), (180, 10)), strict=False):
        expect("latency_ms", round(e.latency_ms, 6) == 250.0)
        expect("prompt_tokens", e.prompt_tokens == usage[0])
        expect("completion_tokens", e.completion_tokens == usage[1])
    if len(tools) < 2:
        wrong_fields.update(("tool_name", "tool_call_id", "args_raw", "retry_count", "parse_ok", "validate_ok", "exec_ok",
                             "error_stage"))
    else:  # the good call (resent once, 40 ms) and the bad one, field by field: (seen, expected)
        a, b = tools[0], tools[1]
        for field_, seen, wanted in (
                ("tool_name", (a.tool_name, b.tool_name), (name, wrong)),
                ("tool_call_id", (a.tool_call_id, b.tool_call_id), ("call_a", "call_b")),
                ("args_raw", a.args_raw, raw),
                ("round_index", (a.round_index, b.round_index), (1, 2)),
                ("retry_count", (a.retry_count, b.retry_count), (1, 0)),
                ("latency_ms", round(a.latency_ms, 6), 40.0),
                ("parse_ok", (a.parse_ok, b.parse_ok), (True, True)),
                ("validate_ok", (a.validate_ok, b.validate_ok), (True, False)),
                ("exec_ok", (a.exec_ok, b.exec_ok), (True, None)),
                ("error_stage", (a.error_stage, b.error_stage), (None, "structure"))):
            expect(field_, seen == wanted)
    missing = [f for f in _TELEMETRY if f in wrong_fields]
    cases = _suite(s)
    ran = sum(1 for c in cases if c.scenario == s.name and run_case(c, scenario=s).run.events)  # every case runs to an ending
    ok = not missing and len(cases) >= 50 and ran == len(cases)
    return Seen(ok, "checklist.seen.telemetry", {"fields": len(_TELEMETRY) - len(missing), "total": len(_TELEMETRY),
                                                 "missing": _names(missing, 6), "cases": len(cases), "ran": ran})


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def _s(seconds: float) -> str:
    return f"{seconds:.2f}"


def _quote(text: str | None, n: int = 200) -> str:
    text = " ".join((text or "").split())
    if len(text) <= n:
        return text
    cut = text[:n].rsplit(" ", 1)[0] if " " in text[:n] else text[:n]  # a whole word, never half of one
    return cut + " ..."


CHECKS: tuple[CheckItem, ...] = (
    CheckItem(1, "context", _date_injected),
    CheckItem(2, "context", _clear_keeps_system),
    CheckItem(3, "context", _trimming_keeps_pairs),
    CheckItem(4, "tools", _descriptions),
    CheckItem(5, "tools", _routing),
    CheckItem(6, "tools", _required_checked),
    CheckItem(7, "chain", _turn_limit),
    CheckItem(8, "chain", _all_calls),
    CheckItem(9, "chain", _self_correction),
    CheckItem(10, "chain", _risky_guarded),
    CheckItem(11, "ops", _retry_classes),
    CheckItem(12, "ops", _telemetry_and_suite),
)


def _said(seen: Seen, lang: Lang) -> str:
    fields = {k: (t(f"checklist.word.{v}", lang) if v in ("yes", "NO") else v[lang] if isinstance(v, dict) else v)
              for k, v in seen.fields.items()}
    return t(seen.key, lang, **fields)


def run_checklist(scenario: Scenario, lang: Lang = "en") -> list[Result]:
    """Every check against ``scenario``; a check that crashes fails with what it raised."""
    out = []
    for c in CHECKS:
        try:
            seen = c.run(scenario)
            said = _said(seen, lang)
            status: Status = "n/a" if seen.verdict is None else "pass" if seen.verdict else "fail"
        except Exception as exc:  # noqa: BLE001 - a check that cannot run is a failed check, said plainly
            status, said = "fail", f"{type(exc).__name__}: {exc}"[:200]
        out.append(Result(c.number, c.title(lang), status, said))
    return out
