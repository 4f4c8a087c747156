"""Notebooks 10-19: the build exercises ("predict, run, fix"), and the look-up checks whose truth used to sit in the cell.

A build exercise asks the learner to write or change working code or data: a suite case, the expectation a bad
session's case should hold, a trimming function, a routing rule... Its cell starts as a stub (``None``, or a function
that returns ``None``), and its check **runs the learner's version against the notebook's own faults and cases**, then
says what is fixed and what still breaks, in the learner's language (``data/i18n/*.json``, keys ``build.*``). A learner's
code that raises is told so in a sentence, never with a traceback. Each verdict reports to the trainer's view under
the notebook's build exercise (``data/trainer/builds.json``: ``"10b"`` and so on). The model solutions live in
``data/trainer/solutions/nbNN.py``, never in the notebooks.

The look-up checks (12, 13, 14, 15, 16, 17, 19) compute their truth here, from the workbook's data, so a cell holds
only ``my_answer = None`` and the call.
"""
from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..guards import GuardConfig
from ..i18n import LANGS, Lang, both, joined, label, said, t
from .answers import judge_answer, plain_text
from .builds_guards import _detail
from .exercises import Feedback, _reports, _say, _shown, check_answer, plain_problems
from .learner_code import Said, bounded, returned_instead, unanswered

__all__ = ["contract_catches_faults", "cut_keeps_pairs", "desk_rule_holds", "duplicate_call_verdict",
           "first_role_after_cut", "handled_without_adapter", "key_scope_holds", "meta_field",
           "naive_correct", "promoted_expect", "replay_header", "routes_by_language", "skill_schema_holds",
           "suite_case_catches", "tools_offered"]


def _raised(exc: BaseException, lang: Lang) -> Feedback:
    """A learner's code raised: one sentence naming the exception, never a traceback."""
    if isinstance(exc, Said):  # what the learner's code returned, not raised: said as it is
        return _say("wrong", exc.sentence, lang)
    # an error of agentlab's own (an unknown error code) says itself in the learner's language
    return _say("wrong", t("build.sys.raised", lang, error=f"{type(exc).__name__}: {_detail(exc, lang, 160)}"), lang)


def _failed(result: Any, lang: Lang) -> str:
    """Why a run failed: the grader's reasons, or its outcome, said in the reader's language (the Chinese said only
    the outcome, 转人工, where the English said which status and what data the case wanted)."""
    from ..evals.outcome import reasons_in
    return joined(reasons_in(result.failures, lang), lang) or label(result.outcome, lang)


def _refusal(exc: Exception, lang: Lang) -> str:
    """The suite's refusal of what the learner wrote, without the file-and-line prefix a suite file's gets
    ("my_case:1: "): the learner wrote no file."""
    return re.sub(r"^my_\w+:1[:：]\s*", "", said(exc, lang))


def _statuses_as_ids(expect: Any) -> Any:
    """``expect`` with its statuses read as a learner types them: in either language (完成 is done), as the tables
    show them; anything else as it was, for the suite to judge."""
    if not isinstance(expect, dict) or not isinstance(expect.get("statuses"), list):
        return expect
    from ..runs import STATUSES
    words = {label(status, lang).casefold(): status for status in STATUSES for lang in LANGS}
    return {**expect, "statuses": [words.get(s.strip().casefold(), s) if isinstance(s, str) else s
                                   for s in expect["statuses"]]}


# --- 10 · a suite case that catches a regression ---------------------------------------------------------------

#: The release notebook 10's build exercise asks a case to catch: the idempotency guard switched off.
REGRESSION = "idempotency"


@_reports("10b")
@bounded()
def suite_case_catches(my_case: Any, lang: Lang = "en") -> Feedback:
    """10: a case (a dict, as a line of ``aftersales_cases.jsonl``) that passes with every guard on and fails on
    the release that switched the idempotency guard off."""
    from ..evals.suite import SuiteError, _case, run_case
    if my_case is None:
        return _say("not yet", t("build.nb10.todo", lang), lang)
    if not isinstance(my_case, dict):
        return _say("wrong", t("build.not_a_dict", lang, given=_shown(my_case)), lang)
    line = {"id": "my-case", "category": "adversarial", "scenario": "aftersales", **my_case}
    line["expect"] = _statuses_as_ids(line.get("expect"))
    try:
        case = _case(line, "my_case", 1)
    except SuiteError as exc:
        return _say("wrong", t("build.nb10.refused", lang, why=_refusal(exc, lang)), lang)
    try:
        good = run_case(case, config=GuardConfig(), lang=lang)
        released = run_case(case, config=GuardConfig().without(REGRESSION), lang=lang)
    except Exception as exc:  # noqa: BLE001 - a case the desk cannot run: a sentence
        return _raised(exc, lang)
    if not good.passed:
        return _say("wrong", t("build.nb10.fails_good", lang, why=_failed(good, lang)), lang)
    if released.passed:
        return _say("wrong", t("build.nb10.misses", lang), lang)
    return _say("right", t("build.nb10.right", lang, why=_failed(released, lang)), lang)


# --- 11 · the case a bad session should become ------------------------------------------------------------------

BAD_SESSION = "adv-asks-twice"  # notebook 11's bad session: the naive loop ran the repeated refund twice


@cache
def _bad_session() -> tuple[Any, Any]:
    from ..evals import load_cases, run_case
    from ..resources import data_file
    case = next(c for c in load_cases(data_file("aftersales_cases.jsonl")) if c.id == BAD_SESSION)
    return case, run_case(case, loop="naive")


@_reports("11b")
@bounded()
def promoted_expect(my_expect: Any, lang: Lang = "en") -> Feedback:
    """11: the ``expect`` of the case the bad session becomes: replaying its model replies, the case must fail
    through the naive loop (it reproduces the bug) and pass through the guarded loop (it goes green with the fix)."""
    from ..evals.review import promote
    from ..evals.suite import SuiteError, _case, run_case
    if my_expect is None:
        return _say("not yet", t("build.nb11.todo", lang), lang)
    if not isinstance(my_expect, dict) or not my_expect:
        return _say("wrong", t("build.empty_dict" if my_expect == {} else "build.not_a_dict", lang, given=_shown(my_expect)), lang)
    # each refund with its amount, as the cell asks: a refund of the wrong amount is the bug a case has to catch
    refunds = my_expect.get("refunds")
    if isinstance(refunds, list) and any(isinstance(r, dict) and "amount" not in r for r in refunds):
        return _say("wrong", t("build.nb11.no_amount", lang, given=_shown(refunds)), lang)
    case, bad = _bad_session()
    my_expect = _statuses_as_ids(my_expect)
    try:
        _case({"id": "promoted", "task": case.task, "expect": my_expect}, "my_expect", 1)
    except SuiteError as exc:
        return _say("wrong", t("build.nb10.refused", lang, why=_refusal(exc, lang)), lang)
    with tempfile.TemporaryDirectory() as folder:
        new = dataclasses.replace(promote(bad, case, Path(folder) / "suite.jsonl"), expect=my_expect)
    try:
        before, after = run_case(new, loop="naive", lang=lang), run_case(new, loop="guarded", lang=lang)
    except Exception as exc:  # noqa: BLE001 - an expectation the grader cannot read: a sentence
        return _raised(exc, lang)
    if before.passed:
        return _say("wrong", t("build.nb11.enshrines", lang), lang)
    if not after.passed:
        return _say("wrong", t("build.nb11.never_green", lang, why=_failed(after, lang)), lang)
    return _say("right", t("build.nb11.right", lang, why=_failed(before, lang)), lang)


# --- 12 · a cut that never starts on an orphaned tool reply -----------------------------------------------------

@cache
def _long_chat(lang: Lang) -> tuple[Any, list[dict]]:
    from ..evals import load_cases
    from ..resources import data_file
    from ..scenarios import expense
    case = next(c for c in load_cases(data_file("expense_cases.jsonl")) if c.id == "boundary-long-chat-taxi")
    return case, [{"role": "system", "content": expense.expense_prompt(lang)}, *case.history,
                  {"role": "user", "content": case.text(lang)}]


@cache
def _parallel_chat(lang: Lang) -> list[dict]:
    """The long chat with its first three tool calls each made two at once (the model's parallel calls): two tool
    replies in a row, which the long chat never has, so a cut that skips one leading tool reply and not all of them
    cannot pass for one that skips them all."""
    _, history = _long_chat(lang)
    out: list[dict] = []
    doubled: dict[str, str] = {}  # a call's id -> its twin's
    for m in history:
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if calls and len(doubled) < 3:
            twin = {**calls[0], "id": f"{calls[0]['id']}_b"}
            doubled[calls[0]["id"]] = twin["id"]
            out.append({**m, "tool_calls": [*calls, twin]})
            continue
        out.append(dict(m))
        if m.get("role") == "tool" and m.get("tool_call_id") in doubled:
            out.append({**m, "tool_call_id": doubled[m["tool_call_id"]]})
    return out


def _longest_tail(history: Sequence[Mapping[str, Any]], keep: int) -> int:
    """How many of the latest messages (after the system prompt) a right cut keeps: at most ``keep``, never
    starting on a tool reply."""
    start = max(1, len(history) - keep)
    while start < len(history) - 1 and history[start].get("role") == "tool":
        start += 1
    return len(history) - start


@_reports("12b")
@bounded()
def cut_keeps_pairs(my_cut: Any, lang: Lang = "en") -> Feedback:
    """12: ``my_cut(messages, keep)`` -> the messages to send: the system prompt, then as many of the latest messages
    as fit in ``keep`` without starting on a tool reply whose call was cut off. Run on the notebook's long chat for
    every ``keep`` from 1 to its length."""
    from ..context import protocol_problems
    if my_cut is None:
        return _say("not yet", t("build.nb12.todo", lang), lang)
    if not callable(my_cut):
        return _say("wrong", t("build.sys.not_a_function", lang, given=_shown(my_cut)), lang)
    said_: list[str] = []
    for chat, history in (("long", _long_chat(lang)[1]), ("parallel", _parallel_chat(lang))):
        broken: dict[str, list[int]] = {}
        for keep in range(1, len(history)):
            given = [dict(m) for m in history]
            try:
                out = my_cut(given, keep)
            except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
                return _raised(exc, lang)
            if out is None:
                if unanswered(my_cut):
                    return _say("not yet", t("build.nb12.todo", lang), lang)
                return _say("wrong", t("build.returned_none", lang, name="my_cut", case=f"keep={keep}"), lang)
            if not isinstance(out, list) or not all(isinstance(m, Mapping) for m in out) or not out:
                return _say("wrong", t("build.nb12.not_messages", lang, keep=keep, given=_shown(out)), lang)
            if given != history:  # the caller's own list, changed: the next cut (the loop's next turn) starts short
                return _say("wrong", t("build.nb12.changed_input", lang, keeps=keep), lang)
            want = _longest_tail(history, keep)
            tail = [dict(m) for m in out[1:]]
            problems = protocol_problems(out)
            if out[0] != history[0]:
                broken.setdefault("build.nb12.no_system", []).append(keep)
            elif problems:  # the one the API names: a reply whose call was cut off, or a call left with no reply
                orphan = any(getattr(p, "key", "") == "protocol.orphan" for p in problems)
                broken.setdefault("build.nb12.orphan" if orphan else "build.nb12.unanswered", []).append(keep)
            elif tail != history[len(history) - len(tail):] or not tail:
                broken.setdefault("build.nb12.not_a_tail", []).append(keep)
            elif len(tail) > keep:
                broken.setdefault("build.nb12.too_many", []).append(keep)
            elif len(tail) < want:
                broken.setdefault("build.nb12.too_few", []).append(keep)
        found = [t(key, lang, keeps=joined(map(str, keeps[:6]), lang, "list") + ("…" if len(keeps) > 6 else ""),
                   n=len(keeps)) for key, keeps in broken.items()]
        if found and chat == "parallel":  # said as the chat it was found in: the learner's cut passed the other
            found = [t("build.nb12.in_parallel", lang, said=joined(found, lang, "sentence"))]
        said_ += found
    if said_:
        return _say("wrong", joined(said_, lang, "sentence"), lang)
    history = _long_chat(lang)[1]
    return _say("right", t("build.nb12.right", lang, n=len(history) - 1), lang)


@_reports("12")
def first_role_after_cut(given: Any, lang: Lang = "en") -> Feedback:
    """12: the role of the first message the naive cut ("the last 10 messages") sends."""
    case, _ = _long_chat(lang)
    right = case.history[-10:][0]["role"]
    return check_answer(given, right, lang=lang, why=both("build.nb12.look.why"),
                        hint=both("build.nb12.look.hint"))


# --- 13 · route each ask in its own language --------------------------------------------------------------------

@cache
def _routers() -> dict[str, Any]:
    from ..evals.routing_eval import desk_router
    from ..scenarios import expense
    # the plain router (descriptions alone): the exercise is about the descriptions' language, and the keyword
    # router's words are in both languages, so it would route either language from either desk
    return {lang: desk_router(expense.make_registry(expense.Ledger(), lang=lang), keywords=False)
            for lang in ("en", "zh")}


def _hit(ask: Any, offered: Sequence[str]) -> bool:
    return set(ask.needed) <= set(offered) and (not ask.needed_any or bool(set(ask.needed_any) & set(offered)))


@_reports("13b")
@bounded()
def routes_by_language(my_offer: Any, lang: Lang = "en") -> Feedback:
    """13: ``my_offer(ask)`` -> the tool names to offer for one ask (text): at most five, the hand-over always
    among them, and the needed tool offered at least as often as routing each ask in its own language does.
    Run on every ask of the routing set, in both languages."""
    from ..evals.routing_eval import load_asks
    if my_offer is None:
        return _say("not yet", t("build.nb13.todo", lang), lang)
    if not callable(my_offer):
        return _say("wrong", t("build.sys.not_a_function", lang, given=_shown(my_offer)), lang)
    routers, asks = _routers(), load_asks()
    known = set(routers["en"].registry.names)
    target = sum(_hit(a, routers[a.lang].offer(a.ask)) for a in asks)
    hits, missed = 0, []
    for a in asks:
        try:
            offered = my_offer(a.ask)
        except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
            return _raised(exc, lang)
        if offered is None:
            if unanswered(my_offer):
                return _say("not yet", t("build.nb13.todo", lang), lang)
            return _say("wrong", t("build.returned_none", lang, name="my_offer", case=repr(a.ask)), lang)
        if isinstance(offered, str) or not isinstance(offered, Sequence) \
                or not all(isinstance(name, str) for name in offered) or not set(offered) <= known:
            return _say("wrong", t("build.nb13.not_names", lang, ask=a.ask, given=_shown(offered)), lang)
        if len(set(offered)) > 5 or "escalate_to_human" not in offered:
            return _say("wrong", t("build.nb13.too_many", lang, ask=a.ask, given=_shown(list(offered))), lang)
        if _hit(a, offered):
            hits += 1
        else:
            missed.append(a)
    if hits < target:
        first = missed[0]
        return _say("wrong", t("build.nb13.misses", lang, hits=hits, n=len(asks), target=target, ask=first.ask,
                               needed=joined(first.needed or first.needed_any, lang, "list")), lang)
    return _say("right", t("build.nb13.right", lang, hits=hits, n=len(asks)), lang)


@_reports("13")
def tools_offered(given: Any, lang: Lang = "en") -> Feedback:
    """13: how many tools the router over the English descriptions offers for a Chinese ask."""
    right = len(_routers()["en"].offer("今天坐出租车花了45元，记一笔"))
    return check_answer(given, right, lang=lang, unit="count", why=both("build.nb13.look.why"),
                        hint=both("build.nb13.look.hint"))


# --- 14 · the business rule the expense desk needs -------------------------------------------------------------

class _Broken(Exception):
    """The learner's rule raised, or returned what is not a list of problems: said once, after the runs."""


def _desk_with(my_rule: Callable[[dict, str], Any], seen: list[Any], judged: list[tuple[dict, str, Any]] | None = None
               ) -> Any:
    """The expense desk with ``my_rule`` as its bookings' and changes' check (the desk's own rule taken out)."""
    from ..errors import Problem
    from ..scenarios import expense
    from ..tools import Registry

    def make_registry(ledger: Any, *, lang: Lang = "en", clean: bool = False) -> Registry:
        def check(args: dict) -> list:
            if args.get("record_id"):  # a change: the record must exist first (NOT_FOUND), as on the desk
                ledger._record(args["record_id"])
            try:
                out = my_rule(dict(args), ledger.today().isoformat())
            except Exception as exc:  # noqa: BLE001 - the learner's rule raised: kept, said after the run
                seen.append(exc)
                return []
            if out is None and not unanswered(my_rule):  # a path with no return: said with the call it was
                out = Said(t("build.returned_none", lang, name="my_rule", case=json.dumps(args, ensure_ascii=False)))
            seen.append(out)
            if judged is not None:  # what each call was told, with the call: the field a problem names is read
                judged.append((dict(args), ledger.today().isoformat(), out))
            return list(out) if isinstance(out, list) and all(isinstance(p, Problem) for p in out) else []
        reg = expense.make_registry(ledger, lang=lang, clean=clean)
        return Registry([dataclasses.replace(tool, check=check) if tool.name in ("book_expense_record",
                                                                                 "update_expense_record") else tool
                         for tool in reg], lang=lang, clean=clean)
    return dataclasses.replace(expense.SCENARIO, make_registry=make_registry)


@_reports("14b")
@bounded()
def desk_rule_holds(my_rule: Any, lang: Lang = "en") -> Feedback:
    """14: ``my_rule(args, today)`` -> the business-rule problems of a booking or a change (``rule(...)``), put on
    the expense desk in place of its own rule; every case of the expense suite is run through the guarded loop."""
    from ..errors import Problem
    from ..evals import load_cases, run_case
    from ..resources import data_file
    if my_rule is None:
        return _say("not yet", t("build.nb14.todo", lang), lang)
    if not callable(my_rule):
        return _say("wrong", t("build.sys.not_a_function", lang, given=_shown(my_rule)), lang)
    seen: list[Any] = []
    judged: list[tuple[dict, str, Any]] = []
    desk = _desk_with(my_rule, seen, judged)
    failed = []
    for case in load_cases(data_file("expense_cases.jsonl")):
        try:
            result = run_case(case, lang=lang, scenario=desk)
        except Exception as exc:  # noqa: BLE001 - a desk the learner's rule broke: a sentence
            return _raised(exc, lang)
        if any(isinstance(x, BaseException) for x in seen):  # raised, or a Said: what came back instead
            return _raised(next(x for x in seen if isinstance(x, BaseException)), lang)
        if any(x is None for x in seen):
            return _say("not yet", t("build.nb14.todo", lang), lang)
        bad = next((x for x in seen if not isinstance(x, list) or not all(isinstance(p, Problem) for p in x)), "ok")
        if bad != "ok":
            return _say("wrong", t("build.nb14.not_problems", lang, given=_shown(bad)), lang)
        if not result.passed:
            failed.append(result)
    if failed:
        first = failed[0]
        return _say("wrong", t("build.nb14.fails", lang, n=len(failed), ids=joined((r.case_id for r in failed[:5]), lang, "list"),
                               why=_failed(first, lang)), lang)
    # the model reads the rule's words to fix its call: "x" passed, with no why and nothing to do next
    # a problem is terse when every language it speaks in is (日期不能在未来 says enough beside a terse English)
    # a date in the future is the date's fault: filed under another field, the model is told to change that one
    misfiled = next(((args, p) for args, today, problems in judged if str(args.get("date") or "") > today
                     for p in problems if p.field != "date"), None)
    if misfiled is not None:
        return _say("wrong", t("build.nb14.wrong_field", lang, field=misfiled[1].field,
                               date=str(misfiled[0].get("date"))), lang)
    terse = next((words[0] for problems in seen for p in problems if (words := _rule_words(p)) and all(map(_terse, words))), None)
    if terse is not None:
        return _say("wrong", t("build.nb14.terse", lang, said=terse), lang)
    return _say("right", t("build.nb14.right", lang), lang)


def _rule_words(problem: Any) -> list[str]:
    detail = getattr(problem, "detail", None)
    return [str(v) for v in detail.values()] if isinstance(detail, dict) else [str(detail or "")]


def _terse(text: str) -> bool:
    """Too short to say why and what to do next: under four words, and under six Chinese characters."""
    return len(text.split()) < 4 and len(re.findall("[\u4e00-\u9fff]", text)) < 6


# --- 15 · a skill's input schema that its own cases hold it to ---------------------------------------------------

DRAFT_SKILL = "send_notification"  # notebook 15's write skill: its schema is the learner's to fix


def _notify_cases() -> list[Any]:
    from ..site.check import load_check_cases
    return [c for c in load_check_cases(desks=False) if c.skill == DRAFT_SKILL]


@_reports("15b")
@bounded()
def skill_schema_holds(my_schema: Any, lang: Lang = "en") -> Feedback:
    """15: the notification skill's ``input_schema``: the skill, given ``my_schema``, is run on a fresh site on every
    one of its own cases (normal, boundary, abnormal: ``cases.jsonl`` beside it)."""
    import json
    import warnings

    from ..site.check import _judge
    from ..site.service import SkillSite
    from ..site.skills import Skill, load_skills, shipped_dir
    if my_schema is None:
        return _say("not yet", t("build.nb15.todo", lang), lang)
    if not isinstance(my_schema, dict):
        return _say("wrong", t("build.not_a_dict", lang, given=_shown(my_schema)), lang)
    shipped = next(sk for sk in load_skills(shipped_dir()) if sk.name == DRAFT_SKILL)
    draft = f"{DRAFT_SKILL}_draft"  # beside the shipped skill, which every site has: the same handler, your schema
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agentlab-build-15-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # the learner's schema with the shipped skill's name and words, not its fields' Chinese descriptions (those
            # belong to the shipped schema: a learner's field of the same name was shown with the shipped one's)
            words = {lg: {k: v for k, v in said.items() if k in ("display_name", "description")}
                     for lg, said in shipped.meta.i18n.items()}
            meta = dataclasses.replace(shipped.meta, skill_name=draft, input_schema=my_schema, i18n=words)
            site = SkillSite(Path(tmp), desks=False, extra=[Skill(meta, shipped.handler, shipped.validate)])
            try:
                key, _ = site.create_key("build-15")
                for i, case in enumerate(_notify_cases()):
                    reply = site.execute(draft, json.dumps({"arguments": case.arguments}).encode(), api_key=key,
                                         idempotency_key=f"build-{i}", session_id="build-15", lang=lang)
                    if _judge(case, reply.status, reply.body):
                        named = sorted({str(p.get("field"))
                                        for p in (reply.body.get("error") or {}).get("problems") or []})
                        failed.append(t("build.nb15.case", lang, name=case.name_in(lang), got=reply.status,
                                        want=case.expect.get("status", 200), fields=joined(named, lang, "list") or "-",
                                        expected=joined(case.expect.get("fields", ()), lang, "list") or "-"))
            finally:
                site.close()  # its log lines written before the folder goes, none into a folder being removed
        except Exception as exc:  # noqa: BLE001 - a schema the site cannot compile: a sentence
            return _say("wrong", t("build.nb15.refused", lang, why=said(exc, lang)[:200]), lang)
    if failed:
        return _say("wrong", t("build.nb15.fails", lang, n=len(failed), total=len(_notify_cases()),
                               cases=joined(failed, lang, "sentence")), lang)  # each, as the count says
    return _say("right", t("build.nb15.right", lang, total=len(_notify_cases())), lang)


# --- 16 · an idempotency key whose scope makes two replicas refund once ------------------------------------------

_REFUND = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
#: Notebook 16's situations: two calls, one to replica A and one to replica B (one claim store between them),
#: each with its session id, and how many refunds are right.
KEY_SITUATIONS: tuple[tuple[str, tuple[tuple[dict, str], tuple[dict, str]], int], ...] = (
    ("lost_reply", ((_REFUND, "chat-1"), (_REFUND, "chat-1")), 1),
    ("restart", ((_REFUND, "chat-1"), (_REFUND, "chat-2")), 1),
    ("two_orders", ((_REFUND, "chat-1"), ({"order_id": "A1005", "amount": 19.9, "reason": "user_cancel"}, "chat-1")), 2),
    # notebook 05's lesson: the model rewords what it resends; a key of every argument changes with it
    ("reworded", ((_REFUND, "chat-1"), ({**_REFUND, "remark": "the customer asked again"}, "chat-1")), 1),
)


def _refunds_with(my_key: Callable[[dict, str], Any], calls: Sequence[tuple[dict, str]],
                  lang: Lang = "en") -> int | str | None:
    """Refunds made when each call goes to its replica with the key ``my_key`` gives it; None: a key was None; text:
    the site refused a key (what it said, as the agent would read it)."""
    import json

    from ..site.service import SkillSite
    with tempfile.TemporaryDirectory(prefix="agentlab-build-16-") as tmp:
        store = f"sqlite:///{tmp}/claims.db"
        replicas = (SkillSite(tmp, store=store), SkillSite(tmp, store=store))
        try:
            api_key, agent = replicas[0].create_key("agent", ["*"])
            for site, (args, session) in zip(replicas, calls, strict=True):
                key = my_key(dict(args), session)
                if key is None and unanswered(my_key):
                    return None
                wrong = returned_instead(key, "text", "my_key", f"{args.get('order_id')} / {session}", lang)
                if wrong is not None:  # a tuple or a number is no header's text (str() of it was sent)
                    raise Said(wrong)
                reply = site.execute("create_refund", json.dumps({"arguments": args}).encode(), api_key=api_key,
                                     idempotency_key=key, session_id=session, lang=lang)  # as made: never cut to fit
                error = reply.body.get("error") or {}
                if reply.status == 400 and error.get("code") == "BAD_REQUEST":  # the key itself: no refund could run
                    return str(error.get("message"))
            return sum(len(site.state_for(agent.id)["aftersales"].snapshot()["refunds"]) for site in replicas)
        finally:
            for site in replicas:  # their log lines written before the folder goes, none into a folder being removed
                site.close()


@_reports("16b")
@bounded()
def key_scope_holds(my_key: Any, lang: Lang = "en") -> Feedback:
    """16: ``my_key(args, session_id)`` -> the idempotency key the loop sends with a refund; run on two replicas that
    share one claim store, in the three situations of :data:`KEY_SITUATIONS`."""
    if my_key is None:
        return _say("not yet", t("build.nb16.todo", lang), lang)
    if not callable(my_key):
        return _say("wrong", t("build.sys.not_a_function", lang, given=_shown(my_key)), lang)
    wrong = []
    for name, calls, right in KEY_SITUATIONS:
        try:
            made = _refunds_with(my_key, calls, lang)
        except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
            return _raised(exc, lang)
        if made is None:
            return _say("not yet", t("build.nb16.todo", lang), lang)
        if isinstance(made, str):
            return _say("wrong", t("build.nb16.refused", lang, said=made), lang)
        if made != right:
            wrong.append(t(f"build.nb16.{name}", lang, made=made, right=right))
    if wrong:
        return _say("wrong", joined(wrong, lang, "sentence"), lang)
    return _say("right", t("build.nb16.right", lang), lang)


# --- 17 · a contract that gives the probe's faults something to catch -------------------------------------------

PROBED_TOOL = "create_refund"  # notebook 17's write: its parameters are the learner's to tighten
#: refunds the desk really makes (its orders' own amounts, in yuan and jiao, each reason): a tightened contract lets
#: them all by
_17_REAL = ({"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"},
            {"order_id": "A1005", "amount": 19.9, "reason": "out_of_stock"},
            {"order_id": "A1004", "amount": 899, "reason": "price_error"})
_GOOD_VERDICTS = ("ok", "repaired", "caught")


@_reports("17b")
@bounded()
def contract_catches_faults(my_parameters: Any, lang: Lang = "en") -> Feedback:
    """17: the refund tool's ``parameters`` schema, put in the refund desk's tools list and probed (the scripted
    model, every fault category): every cell must apply (no n/a: the contract says what a wrong call is) and end
    caught or repaired, and the clean call must still run."""
    import copy
    import json

    from ..evals.probe import fake_source, probe
    from ..resources import data_file
    from ..tools import load_specs
    if my_parameters is None:
        return _say("not yet", t("build.nb17.todo", lang), lang)
    if not isinstance(my_parameters, dict):
        return _say("wrong", t("build.not_a_dict", lang, given=_shown(my_parameters)), lang)
    if my_parameters.get("type") == "function" and isinstance(my_parameters.get("function"), dict):
        return _say("wrong", t("exercise.whole_tool_entry", lang), lang)  # its "parameters" are what is asked
    specs = json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8"))
    specs = copy.deepcopy(specs)
    next(s for s in specs if s["function"]["name"] == PROBED_TOOL)["function"]["parameters"] = my_parameters
    try:
        tools = load_specs(specs, lang=lang)
        # the desk's own refunds first: the probe's clean call is made from the learner's contract, so a contract
        # that refused every real refund (a maximum of 1, a pattern of B1234, integer amounts) still had one to pass
        for call in _17_REAL:
            checked = tools.check(PROBED_TOOL, json.dumps(call), lang=lang)
            if not checked.ok:
                problems = plain_problems(checked.error, lang) if checked.error is not None else "-"
                return _say("wrong", t("build.nb17.real_refused", lang, call=json.dumps(call, ensure_ascii=False),
                                       why=problems[:300]), lang)
        report = probe(tools, fake_source(), only=[PROBED_TOOL], lang=lang)
    except Exception as exc:  # noqa: BLE001 - a contract the loader or the probe refuses: its sentence
        return _say("wrong", t("build.nb17.refused", lang, why=said(exc, lang)[:240]), lang)
    verdicts = {c["category"]: c["verdict"] for c in report["cells"]}
    if verdicts.get("clean") != "ok":
        return _say("wrong", t("build.nb17.clean", lang, verdict=verdicts.get("clean")), lang)
    na = sorted(c for c, v in verdicts.items() if v == "n/a")
    missed = sorted(c for c, v in verdicts.items() if v not in (*_GOOD_VERDICTS, "n/a"))
    if na or missed:
        said_ = ([t("build.nb17.na", lang, cats=joined(na, lang, "list"))] if na else []) + \
                ([t("build.nb17.missed", lang, cats=joined(missed, lang, "list"))] if missed else [])
        return _say("wrong", joined(said_, lang, "sentence"), lang)
    return _say("right", t("build.nb17.right", lang, n=len(verdicts)), lang)


# --- look-ups whose truth moved out of the cell -----------------------------------------------------------------

@_reports("14")
def naive_correct(given: Any, results: Mapping[str, Sequence[Any]], lang: Lang = "en") -> Feedback:
    """14: how many of the expense cases the naive desk gets right, graded on the ledger."""
    right = sum(r.passed for r in results["naive"])
    return check_answer(given, right, lang=lang, unit="count", why=both("build.nb14.look.why"),
                        hint=both("build.nb14.look.hint"))


@_reports("15")
def replay_header(given: Any, lang: Lang = "en") -> Feedback:
    """15: the response header that says the site replayed a recorded answer; read from a replay the site's
    claim store makes."""
    import json

    from ..site.claims import ClaimState, answer
    replayed = answer(ClaimState.REPLAY, json.dumps({"status": 200, "body": {}}), lang)
    right = next(iter(replayed.headers)) if replayed is not None else None
    return check_answer(given, right, lang=lang, why=both("build.nb15.look.why"),
                        hint=both("build.nb15.look.hint"), same=_header_named)


def _header_named(given: Any, right: Any) -> bool:
    """The header read by its name, as HTTP reads it: copied with its value ("Idempotent-Replayed: true"), it is
    still that header."""
    name = re.split(r"[:：]", given, maxsplit=1)[0] if isinstance(given, str) else given
    return judge_answer(name, right) is True


@_reports("16")
def meta_field(given: Any, lang: Lang = "en") -> Feedback:
    """16: the field of an MCP ``tools/call`` request in which the site reads a write's idempotency key."""
    right = "_meta"  # MCP's field for what is not an argument: agentlab/idempotency_key goes there
    # spelt as in the JSON, its underscore too ("meta" is another field): quotes, spaces and width still do not matter
    return check_answer(given, right, lang=lang, why=both("build.nb16.look.why"), hint=both("build.nb16.look.hint"),
                        same=lambda g, r: isinstance(g, str) and _IN_PARAMS.sub("", plain_text(g)).strip("'\"") == r)


# the field named by its path in the request, as the JSON nests it: params._meta, params["_meta"], params/_meta
_IN_PARAMS = re.compile(r"^params\s*(?:\.|/|\[)\s*|\s*\]$")


@_reports("17")
def duplicate_call_verdict(given: Any, lang: Lang = "en") -> Feedback:
    """17: the probe's verdict on ``create_refund`` for ``duplicate_call`` with the idempotency guard off."""
    import json

    from ..evals.probe import fake_source, probe
    from ..resources import data_file
    from ..tools import load_specs
    desk = load_specs(json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8")))
    without = probe(desk, fake_source(), config=GuardConfig().without("idempotency"), categories=["duplicate_call"],
                    only=["create_refund"])
    right = next(c["verdict"] for c in without["cells"] if c["category"] == "duplicate_call")
    return check_answer(given, right, lang=lang, why=both("build.nb17.look.why"),
                        hint=both("build.nb17.look.hint"))


@_reports("19")
def handled_without_adapter(given: Any, rows: Sequence[Any], faults: Sequence[str], lang: Lang = "en") -> Feedback:
    """19: the fault the OpenAI Agents SDK handled without the adapter while the other frameworks let it raise."""
    alone = {(r.framework, r.fault): r.passed[0] for r in rows}
    handled = [f for f in faults if alone.get(("openai-agents", f))
               and not any(ok for (fw, g), ok in alone.items() if g == f and fw != "openai-agents")]
    # the fault as the question names it (secret_in_error), or as the table's rows say it in either language
    right = [*handled, *(t(f"adapters.fault.{f}", lg) for f in handled for lg in LANGS)]
    return check_answer(given, right, lang=lang, why=both("build.nb19.look.why"), hint=both("build.nb19.look.hint"))

