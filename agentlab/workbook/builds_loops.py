"""The build exercises of notebooks 05-09 (keys, loop limits, every call answered, which guard, a write check), as
:mod:`agentlab.workbook.builds_guards` does for 00-04: the learner's code runs against the notebook's own faults,
through a real loop on a scripted model, and the verdict says what is handled and what still breaks."""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..i18n import Lang, aside, colon, joined, label, said, t
from ..tools import Registry
from . import exercises
from .builds_guards import _detail, _not_yet, _raised, _tally, _wrong
from .exercises import Feedback
from .learner_code import Said, bounded, returned_instead, said_none, unanswered, unsteady_key

__all__ = ["build_answer_every_call", "build_business_key", "build_loop_limits", "build_which_guard",
           "build_write_check"]

_log = logging.getLogger(__name__)


# --- 05: the business key of a write --------------------------------------------------------------------------------

_05_CASES = ("lost_reply", "duplicate_call", "parallel_call", "reworded_repeat", "second_amount", "two_orders")


def _refund_call(order_id: str, amount: float, remark: str = "") -> Any:
    from ..models.interface import call

    return call("create_refund", {"order_id": order_id, "amount": amount, "reason": "user_cancel", "remark": remark})


@bounded("05")
def build_business_key(fn: Callable[[dict], Any] | None, lang: Lang = "en") -> Feedback:
    """05: ``fn(args)``, the business key of a refund: the loop keys ``create_refund`` with it. The check runs the
    guarded loop with only the key between a repeat and a second payment (the desk's status rule is off): under a
    lost reply, a repeated call, two calls in one message, a repeat with a reworded remark and a repeat with another
    amount, order A1001 must be refunded once; asked to refund two orders of the same amount, each once."""
    import random

    from ..guards import GuardConfig
    from ..loop import run_guarded
    from ..models import ScriptedModel, say
    from ..models.faults import FaultyModel, inject_tool_fault
    from ..scenarios import aftersales
    from ..store import MemoryStore
    from .demo import TASK, make_model

    if fn is None:
        return _not_yet("05", "build.nb05.not_yet", lang)
    if not callable(fn):
        return _wrong("05", t("build.not_a_function", lang, name="my_business_key"), lang)
    try:
        sample = fn({"order_id": "A1001", "amount": 199.0, "reason": "user_cancel", "remark": ""})
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("05", _raised(exc, lang), lang)
    if sample is None and unanswered(fn):
        return _not_yet("05", "build.nb05.not_yet", lang)
    wrong = returned_instead(sample, "text", "my_business_key", "A1001", lang)
    if wrong is not None:  # hash() of a text differs from process to process: a key must be the same text each time
        return _wrong("05", wrong, lang)
    try:  # a random or timed key: said as such, not as the situations it broke
        unsteady = unsteady_key(fn, {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel", "remark": ""},
                                name="my_business_key", call="A1001", lang=lang)
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("05", _raised(exc, lang), lang)
    if unsteady is not None:
        return _wrong("05", unsteady, lang)
    broken: dict[str, str | None] = {}
    for case in _05_CASES:
        desk, reg = aftersales.SCENARIO.setup(lang)
        raised: list[BaseException] = []

        def key(args: dict, _raised_: list = raised) -> str:
            try:
                made = fn(args)
            except Exception as exc:
                _raised_.append(exc)
                raise
            wrong = returned_instead(made, "text", "my_business_key", str(args.get("order_id")), lang)
            if wrong is not None:
                _raised_.append(Said(wrong))
                raise Said(wrong)
            return made

        # only the key stands between a repeat and a second payment: the status rule that refuses a refunded order
        # is off, as in the "every call, no key" column
        reg = Registry([replace(tool, business_key=key, check=None, limits=None, needs_approval=None)
                        if tool.name == "create_refund" else tool for tool in reg], lang=reg.lang)
        model: Any = make_model(lang)
        if case == "lost_reply":
            reg = inject_tool_fault(reg, "create_refund", case)
        elif case == "reworded_repeat":
            model = ScriptedModel([_refund_call("A1001", 199.0), _refund_call("A1001", 199.0, "customer changed mind"),
                                   say("Refunded.")])
        elif case == "second_amount":  # one refund per order, whatever the amount: a key with the amount paid twice
            model = ScriptedModel([_refund_call("A1001", 199.0), _refund_call("A1001", 99.0), say("Refunded.")])
        elif case == "two_orders":
            model = ScriptedModel([_refund_call("A1005", 19.9), _refund_call("A1008", 19.9), say("Refunded both.")])
        else:
            model = FaultyModel(model, case, at_step=2)
        try:
            run_guarded(model, reg, TASK[lang], system_prompt=aftersales.SYSTEM_PROMPT[lang],
                        config=GuardConfig(timeout=0.1), store=MemoryStore(), sleep=lambda s: None,
                        rng=random.Random(0), lang=lang)
        except Exception as exc:  # noqa: BLE001 - the key the loop asks for raised through it: said, not a traceback
            return _wrong("05", _raised(raised[0] if raised else exc, lang), lang)
        if raised:
            return _wrong("05", _raised(raised[0], lang), lang)
        if case == "two_orders":  # the key the second order got, said below: asked here, where what it gave is seen
            try:
                key({"order_id": "A1008", "amount": 19.9, "reason": "user_cancel", "remark": ""})
            except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
                return _wrong("05", _raised(exc, lang), lang)
        per_order = {o: sum(1 for r in desk.refunds if r["order_id"] == o) for o in ("A1001", "A1005", "A1008")}
        if case == "two_orders":
            broken[case] = None if per_order["A1005"] == per_order["A1008"] == 1 else t(
                "build.nb05.blocked", lang, a=per_order["A1005"], b=per_order["A1008"], key=key(
                    {"order_id": "A1008", "amount": 19.9, "reason": "user_cancel", "remark": ""}))
        else:
            broken[case] = None if per_order["A1001"] == 1 else t("build.nb00.refunds", lang, n=per_order["A1001"])
    return _tally("05", broken, lang, t("build.nb05.right", lang), cases=True)  # two orders is no fault


# --- 06: a step budget and a breaker that stop runaways and let healthy runs finish --------------------------------

_06_PING_PONG_MOST = 12  # turns a runaway may cost: a little more than the longest healthy run (9)
_06_REPEATS_MOST = 4


def _06_ping_pong() -> Any:
    from ..models import ScriptedModel, call

    return ScriptedModel([call("get_order", {"order_id": f"A{1001 + i}"}) if i % 2 else
                          call("search_orders", {"phone": f"1380013{i:04d}"}) for i in range(40)], then="?")


def _06_repeater() -> Any:
    from ..models import ScriptedModel, call

    return ScriptedModel([call("get_order", {"order_id": "A1001"})] * 40, then="?")


@bounded("06")
def build_loop_limits(config: Any, lang: Lang = "en") -> Feedback:
    """06: ``config``, a GuardConfig. The check runs the guarded loop with it on the notebook's ping-pong model, its
    repeater and forty wandering but healthy runs (the budget sweep's). Right when the ping-pong is stopped within
    12 turns, the repeater within 4, and all forty healthy runs finish."""
    from ..guards import BadSetting, GuardConfig
    from ..loop import run_guarded
    from ..models import DistractedModel
    from ..scenarios import aftersales
    from ..store import MemoryStore
    from .demo import ANSWER, PLAN, TASK

    if config is None:
        return _not_yet("06", "build.nb06.not_yet", lang)
    if not isinstance(config, GuardConfig):
        return _wrong("06", t("build.nb06.not_a_config", lang, given=type(config).__name__), lang)
    try:
        config.checked()
    except BadSetting as exc:  # a setting no guard can use: which one and what it takes, not "your code raised"
        return _wrong("06", said(exc, lang), lang)
    broken: dict[str, str | None] = {}
    try:
        _, reg = aftersales.SCENARIO.setup(lang)
        pp = run_guarded(_06_ping_pong(), reg, "where is my order?", config=config, sleep=lambda s: None, lang=lang)
        broken["ping_pong"] = None if pp.steps <= _06_PING_PONG_MOST and pp.status != "done" else t(
            "build.nb06.ran_on", lang, steps=pp.steps, most=_06_PING_PONG_MOST, status=label(pp.status, lang))
        _, reg = aftersales.SCENARIO.setup(lang)
        rp = run_guarded(_06_repeater(), reg, "where is my order?", config=config, sleep=lambda s: None, lang=lang)
        broken["repeat_call"] = None if rp.steps <= _06_REPEATS_MOST and rp.status != "done" else t(
            "build.nb06.ran_on", lang, steps=rp.steps, most=_06_REPEATS_MOST, status=label(rp.status, lang))
        cut = []
        for seed in range(40):
            _, reg = aftersales.SCENARIO.setup(lang)
            run = run_guarded(DistractedModel(PLAN, ANSWER[lang], detour=0.35, seed=seed), reg, TASK[lang],
                              config=config, store=MemoryStore(), sleep=lambda s: None, lang=lang)
            if run.status != "done":
                cut.append(run.status)
    except Exception as exc:  # noqa: BLE001 - a setting the loop cannot use: a sentence, never a traceback
        return _wrong("06", _raised(exc, lang), lang)
    broken["healthy_runs"] = None if not cut else t("build.nb06.cut_off", lang, n=len(cut),
                                                    statuses=joined((label(c, lang) for c in sorted(set(cut))), lang, "list"))
    return _tally("06", broken, lang, t("build.nb06.right", lang), cases=True)


# --- 07: answer every call of a message -----------------------------------------------------------------------------

_07_CASES = ("two_at_once", "three_lookups", "bad_call_between")


def _07_model(case: str, lang: Lang) -> Any:
    from ..models import ScriptedModel, call, say, tool_calls

    done = say(t("script.done", lang))
    if case == "two_at_once":
        first = tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}),
                           call("escalate_to_human", {"summary": t("script.call_about_a1002", lang)}))
    elif case == "three_lookups":
        first = tool_calls(*(call("get_order", {"order_id": o}) for o in ("A1001", "A1002", "A1003")))
    else:
        first = tool_calls(call("get_order", {"order_id": "A1001"}), call("create_refund", '{"order_id": "A10'),
                           call("escalate_to_human", {"summary": t("script.call_about_a1002", lang)}))
    return ScriptedModel([first, done], name=case)


def _run_one(reg: Registry, lang: Lang) -> Callable[[dict], str]:
    """What the learner's step calls for one tool call (OpenAI format): the text the model reads, never a raise."""
    from ..errors import ToolFailure, make_error, render

    def run_one(tool_call: dict) -> str:
        fn_part = tool_call.get("function", {}) if isinstance(tool_call, dict) else {}
        name, raw = str(fn_part.get("name", "")), fn_part.get("arguments", "")
        if name not in reg.names:
            return render(reg.unknown_tool(name), lang)
        checked = reg.check(name, raw, lang=lang)
        if not checked.ok:
            return checked.render(lang)
        tool = reg[name]
        try:
            return render(None, lang, data=tool.fn(**(checked.args or {})) if tool.fn else None)
        except ToolFailure as exc:
            return render(exc.error, lang)
        except Exception:  # noqa: BLE001 - a tool's own crash: the model reads a code, never the text
            return render(make_error("TOOL_ERROR"), lang)

    return run_one


@bounded("07")
def build_answer_every_call(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """07: ``fn(message, run_one)``: ``message`` is the assistant message (its ``tool_calls`` in the OpenAI
    format), ``run_one(tool_call)`` runs one call and returns the text for the model; ``fn`` returns the ``tool``
    messages that must follow. The check runs a loop with that step on the notebook's message of two calls, a
    message of three look-ups, and one with a broken call between two good ones. Right when every call is
    answered once, in order, by its ``tool_call_id``, and every action asked for is done."""
    from ..scenarios import aftersales

    if fn is None:
        return _not_yet("07", "build.nb07.not_yet", lang)
    if not callable(fn):
        return _wrong("07", t("build.not_a_function", lang, name="my_tool_messages"), lang)
    broken: dict[str, str | None] = {}
    for case in _07_CASES:
        desk, reg = aftersales.SCENARIO.setup(lang)
        model = _07_model(case, lang)
        messages: list[dict] = [{"role": "user", "content": "Refund A1001, and please have someone call me about A1002."}]
        why: str | None = None
        for _ in range(3):
            reply = model.complete(list(messages), reg.specs())
            message = reply.message()
            messages.append(message)
            if not reply.tool_calls:
                break
            asked = [c.id for c in reply.tool_calls]
            results: dict[str, str] = {}  # what run_one returned for each call: what the model must read
            base = _run_one(reg, lang)

            def run_one(tool_call: dict, _base: Callable[[dict], str] = base, _results: dict = results) -> str:
                text = _base(tool_call)
                _results[str(tool_call.get("id") if isinstance(tool_call, dict) else None)] = text
                return text
            try:
                out = fn(message, run_one)
            except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
                return _wrong("07", _raised(exc, lang), lang)
            if out is None:
                if unanswered(fn):
                    return _not_yet("07", "build.nb07.not_yet", lang)
                return _wrong("07", said_none(fn, "my_tool_messages", joined(asked, lang, "list"), "messages", lang), lang)
            out = list(out or []) if isinstance(out, (list, tuple)) else out
            if isinstance(out, list) and all(isinstance(m, dict) for m in out):  # the one thing wrong, said by name
                role = next(((n, m.get("role")) for n, m in enumerate(out, 1) if m.get("role") != "tool"), None)
                if role is not None:
                    return _wrong("07", t("build.nb07.not_tool_role", lang, n=role[0], role=str(role[1])[:40]), lang)
                missing = next((n for n, m in enumerate(out, 1) if "tool_call_id" not in m), None)
                if missing is not None:
                    return _wrong("07", t("build.nb07.no_call_id", lang, n=missing), lang)
            if not isinstance(out, list) or not all(isinstance(m, dict) and m.get("role") == "tool" for m in out):
                return _wrong("07", t("build.nb07.not_messages", lang, given=exercises._shown(out)), lang)
            answered = [m.get("tool_call_id") for m in out]
            messages.extend(out)
            if answered != asked:
                why = t("build.nb07.protocol", lang, asked=joined(asked, lang, "list"), answered=joined(map(str, answered), lang, "list")
                        or "-")
                break
            # each answer is the text run_one gave for its call: an empty or made-up content, or the result parsed back
            # into a dict (a real API refuses that: 400), leaves the model without what happened
            wrong = next((m for m in out if m.get("content") != results.get(str(m.get("tool_call_id")))), None)
            if wrong is not None:
                content = wrong.get("content")
                why = t("build.nb07.content_not_text" if not isinstance(content, str) else "build.nb07.content_not_result",
                        lang, call=str(wrong.get("tool_call_id")), given=exercises._shown(content),
                        kind=type(content).__name__)
                break
        if why is None and case == "two_at_once" and (len(desk.refunds), len(desk.tickets)) != (1, 1):
            why = t("build.nb07.not_done", lang, refunds=len(desk.refunds), tickets=len(desk.tickets))
        if why is None and case == "bad_call_between" and len(desk.tickets) != 1:
            why = t("build.nb07.not_done", lang, refunds=len(desk.refunds), tickets=len(desk.tickets))
        broken[case] = why
    return _tally("07", broken, lang, t("build.nb07.right", lang), cases=True)  # messages, not faults


# --- 08: which guard catches which fault ----------------------------------------------------------------------------

_08_FAULTS = ("camel_case", "duplicate_call", "api_429", "lost_reply", "repeat_call", "ping_pong")


def _guard_named(given: Any) -> str | None:
    """The guard a learner named: its GuardConfig field, or its name as the tables show it, in either language (a
    Chinese table says 重试 where the field is ``retry``, and a learner types what they read). None: no guard."""
    from ..guards import GUARDS
    from .answers import judge_answer
    if given in GUARDS:
        return str(given)
    found = next((g for g in GUARDS if judge_answer(given, g) is True), None)
    if found is None:  # the "caught by" column's own words (breaker, budget), as the notebook's tables print them
        found = next((g for word, g in _TABLE_WORDS.items() if given == word or judge_answer(given, word) is True), None)
    return found


#: the words the "caught by" column prints for a guard whose field is named otherwise (demo._GUARD_OF_CODE)
_TABLE_WORDS = {"breaker": "repeat_limit", "budget": "step_budget"}


@bounded("08")
def build_which_guard(guards: Any, lang: Lang = "en") -> Feedback:
    """08: ``guards``, a dict fault -> the GuardConfig field that catches it. The check runs the fault through the
    guarded loop twice, with every guard and with that one switched off: the guard catches the fault when switching
    it off changes how the run ends (graded on the final data, and its status)."""
    from ..guards import GUARDS, GuardConfig
    from .demo import compare_loops

    if guards is None or (isinstance(guards, dict) and all(v is None for v in guards.values())):
        return _not_yet("08", "build.nb08.not_yet", lang)
    if not isinstance(guards, dict):
        return _wrong("08", t("build.nb08.not_a_dict", lang, given=type(guards).__name__), lang)
    not_a_name = next(((fault, g) for fault, g in guards.items() if g is not None and not isinstance(g, str)), None)
    if not_a_name is not None:  # a list of guards: one name is asked, the one switched off to see the fault pass
        return _wrong("08", t("build.nb08.one_name", lang, fault=str(not_a_name[0])[:40],
                              given=type(not_a_name[1]).__name__), lang)
    named = {fault: _guard_named(g) for fault, g in guards.items()}
    unknown = [str(g) for fault, g in guards.items() if g is not None and named[fault] is None]
    if unknown:
        shown = joined((f"{g}（{label(g, lang)}）" if lang != "en" else g for g in GUARDS), lang, "list")
        return _wrong("08", t("build.nb08.unknown_guard", lang, given=joined(unknown, lang, "list"), guards=shown), lang)
    base = GuardConfig(timeout=0.1)
    broken: dict[str, str | None] = {}
    for fault in _08_FAULTS:
        guard = named.get(fault)
        if guard is None:
            broken[fault] = t("build.nb08.no_guard", lang)
            continue
        on, off = compare_loops(fault, config=base, lang=lang), compare_loops(fault, config=base.without(guard), lang=lang)
        same = (on.guarded_verdict.passed, on.guarded.status) == (off.guarded_verdict.passed, off.guarded.status)
        said = guard if lang == "en" else label(guard, lang) + aside(guard, lang)  # as the tables name it, and its field
        broken[fault] = None if not same else t("build.nb08.no_change", lang, guard=said,
                                                status=label(off.guarded.status, lang))
    return _tally("08", broken, lang, t("build.nb08.right", lang))


# --- 09: a guard the real-model recordings show is needed -----------------------------------------------------------


def _09_writes() -> list[tuple[str, str, dict, tuple[str, ...], bool]]:
    """Every write the recorded real models made in their guarded runs: (run, tool, args, what had been seen by then:
    the user's words and the read tools' results, whether every order id in the args is in it)."""
    import json
    import re

    from ..evals import load_cases, paired_cases, replay_cassette
    from ..resources import data_file
    from ..scenarios import aftersales

    cases = {c.id: c for c in load_cases(data_file("aftersales_cases.jsonl"))}
    _, tools = aftersales.SCENARIO.setup()
    out = []
    for path in sorted(data_file("cassettes").glob("aftersales-*.jsonl")):
        for r in replay_cassette(path, cases, "guarded", paired_cases(path, cases)):
            seen = [cases[r.case_id].task]
            for e in r.run.tool_events:
                tool = tools[e.tool_name] if e.tool_name in tools.names else None
                if tool is None or not e.exec_ok:
                    continue
                if not tool.side_effect:
                    seen.append(e.model_visible or "")
                    continue
                try:
                    args = json.loads(e.args_raw or "{}")
                except ValueError:
                    continue
                ids = re.findall(r"A\d{4}", json.dumps(args, ensure_ascii=False))
                asked = all(any(i in s for s in seen) for i in ids)
                out.append((f"{path.stem.split('-')[-1]} {r.case_id}", tool.name, args, tuple(seen), asked))
    return out + list(_09_MADE)


#: two writes the recordings lack, that tell a right check from two wrong ones: one order the user named and one
#: nobody did (a check that wants any id seen, not every id, lets it run); and an order the user never typed, found by
#: a read tool from their phone number (a check that reads the user's words alone stops it)
_09_MADE = (
    ("two_orders", "create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel",
                                           "remark": "same as A1007"},
     ("Please refund order A1001, I cancelled it.",
      '{"ok": true, "data": {"order_id": "A1001", "status": "paid", "amount": 199.0}}'), False),
    ("found_by_phone", "create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"},
     ("I cancelled the order on my phone 13800138000, please refund it.",
      '{"ok": true, "data": [{"order_id": "A1003", "status": "paid", "amount": 2499.0}]}'), True),
)


@bounded("09")
def build_write_check(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """09: ``fn(tool_name, args, seen)`` -> True to let a write run, False to stop it; ``seen`` lists what the user
    wrote and what the read tools returned so far. The check asks it about every write the recorded real models
    made in their guarded runs: each write on an order nobody mentioned (an id copied from a tool's description)
    must be stopped, and every write the user asked for must run."""
    if fn is None:
        return _not_yet("09", "build.nb09.not_yet", lang)
    if not callable(fn):
        return _wrong("09", t("build.not_a_function", lang, name="my_write_check"), lang)
    writes = _09_writes()
    said = []
    for run, tool, args, seen, asked in writes:
        try:
            said.append((run, tool, args, asked, fn(tool, dict(args), list(seen))))
        except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence naming the call, never a traceback
            return _wrong("09", t("build.raised_on", lang, error=type(exc).__name__, detail=_detail(exc, lang) or "-",
                                  call=f"{tool} {json.dumps(args, ensure_ascii=False)}"), lang)
    if all(v is None for *_, v in said) and unanswered(fn):
        return _not_yet("09", "build.nb09.not_yet", lang)
    for _run, tool, args, _asked, allowed in said:  # a verdict is what an `if` reads, but never text: "allow" is a word
        wrong = returned_instead(allowed, "bool", "my_write_check", f"{tool} {json.dumps(args, ensure_ascii=False)}", lang,
                                 fn=fn)
        if wrong is not None:
            return _wrong("09", wrong, lang)
    broken: dict[str, str | None] = {}
    for run, tool, args, asked, allowed in said:
        if not asked:
            if allowed and broken.get(run) is None:
                broken[run] = t("build.nb09.let_through", lang, tool=tool, args=json.dumps(args, ensure_ascii=False))
            else:
                broken.setdefault(run, None)
    refused = [(run, tool) for run, tool, _args, asked, allowed in said if asked and not allowed]
    broken["asked_writes"] = None if not refused else t(
        "build.nb09.refused_asked", lang, n=len(refused), total=sum(1 for w in said if w[3]),
        example=f"{refused[0][0]}{colon(lang)}{refused[0][1]}")
    return _tally("09", broken, lang, t("build.nb09.right", lang), cases=True)  # writes, not faults
