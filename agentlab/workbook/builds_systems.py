"""Notebooks 10-19: the build exercises ("predict, run, fix"; 15-17's in :mod:`agentlab.workbook.builds_site`), and
the look-up checks whose truth used to sit in the cell.

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
from .exercises import Feedback, _reports, _say, _shown, check_answer
from .learner_code import Said, bounded, said_none, unanswered

__all__ = ["cut_keeps_pairs", "desk_rule_holds", "duplicate_call_verdict", "first_role_after_cut",
           "handled_without_adapter", "meta_field", "naive_correct", "promoted_expect", "replay_header",
           "routes_by_language", "suite_case_catches", "tools_offered"]


def _raised(exc: BaseException, lang: Lang) -> Feedback:
    """A learner's code raised: one sentence naming the exception, never a traceback."""
    if isinstance(exc, Said):  # what the learner's code returned, not raised: said as it is
        return _say("wrong", exc.sentence, lang)
    # an error of agentlab's own (an unknown error code) says itself in the learner's language
    return _say("wrong", t("build.raised", lang, error=type(exc).__name__, detail=_detail(exc, lang, 160) or "-"), lang)


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
    missing = [f for f in ("task", "expect") if f not in my_case]
    if missing:  # said here: the suite's own sentence asks for an "id" too, which the check gives a case itself
        return _say("wrong", t("build.nb10.missing", lang, fields=joined([_quoted(f, lang) for f in missing], lang)), lang)
    line = {"id": "my-case", "category": "adversarial", "scenario": "aftersales", **my_case}
    if "expect" in line:  # a case without one is told it is missing, not that it is null
        line["expect"] = _statuses_as_ids(line["expect"])
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
        return _say("wrong", _missed_write(case, lang) or t("build.nb10.misses", lang), lang)
    return _say("right", t("build.nb10.right", lang, why=_failed(released, lang)), lang)


def _quoted(name: str, lang: Lang) -> str:
    return f"“{name}”" if lang == "zh" else f"'{name}'"


def _missed_write(case: Any, lang: Lang) -> str | None:
    """The sentence for a fault put on a step of the plan that only reads, while the write comes at another: the right
    mistake at the wrong step ("duplicate_call" at step 1, the lookup). It was told to try another kind of mistake."""
    from ..evals.suite import get_scenario
    fake = case.fake
    plan, fault = fake.get("plan") or [], fake.get("fault")
    if not fault or not plan:
        return None
    step = fake.get("at_step", 2)
    _, reg = get_scenario(case.scenario).setup(lang)
    writes = [i for i, (tool, _) in enumerate(plan, 1) if tool in reg and reg[tool].side_effect]
    if not writes or step in writes:
        return None
    at = plan[step - 1][0] if isinstance(step, int) and 1 <= step <= len(plan) else None
    return t("build.nb10.step_reads" if at else "build.nb10.step_past", lang, fault=fault, step=step, tool=at or "",
             write=plan[writes[0] - 1][0], write_step=writes[0], n=len(plan))


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
                return _say("wrong", said_none(my_cut, "my_cut", f"keep={keep}", "messages", lang), lang)
            if not isinstance(out, list) or not all(isinstance(m, Mapping) for m in out) or not out:
                return _say("wrong", t("build.nb12.not_messages", lang, keep=keep,  # its type named: a tuple
                                       given=f"{type(out).__name__} {_shown(out)}"), lang)
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
            return _say("wrong", said_none(my_offer, "my_offer", repr(a.ask), "names", lang), lang)
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
                out = Said(said_none(my_rule, "my_rule", json.dumps(args, ensure_ascii=False), "problems", lang))
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
            if isinstance(bad, Problem):  # one rule(...) given as it is: said as such, not as its repr
                return _say("wrong", t("build.nb14.one_problem", lang, field=bad.field), lang)
            return _say("wrong", t("build.nb14.not_problems", lang, given=_shown(bad)), lang)
        if not result.passed:
            failed.append(result)
    if failed:
        first = failed[0]
        return _say("wrong", t("build.nb14.fails", lang, n=len(failed), ids=joined((r.case_id for r in failed[:5]), lang, "list"),
                               why=_failed(first, lang)), lang)
    fixed = _fixed_today(my_rule, lang)  # the suite's desk has one date: a rule may have written it down
    if fixed is not None:
        return fixed
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


#: (today, a booking's date, whether the desk refuses it) on days other than the suite's: a rule that compared with
#: "2026-10-15" written down passed every case, as the suite's desk is always on that day
_OTHER_DAYS = (("2026-12-20", "2026-11-30", False), ("2026-09-01", "2026-09-10", True), ("2027-01-05", "2027-01-05", False))


def _fixed_today(my_rule: Callable[[dict, str], Any], lang: Lang) -> Feedback | None:
    """The verdict when ``my_rule`` judges a booking on another day as if it were the suite's, else None."""
    from ..errors import Problem
    for today, date, refused in _OTHER_DAYS:
        args = {"date": date, "item": "taxi to the airport", "amount": 45.0, "category": "transport", "remark": ""}
        try:
            out = my_rule(dict(args), today)
        except Exception as exc:  # noqa: BLE001 - the learner's rule raised: a sentence
            return _raised(exc, lang)
        if out is None:
            return _say("wrong", said_none(my_rule, "my_rule", f"{date} / {today}", "problems", lang), lang)
        if not isinstance(out, list) or not all(isinstance(p, Problem) for p in out):
            return _say("wrong", t("build.nb14.not_problems", lang, given=_shown(out)), lang)
        if bool(out) != refused:
            return _say("wrong", t("build.nb14.fixed_today", lang, today=today, date=date,
                                   did=t("build.nb14.refused" if out else "build.nb14.let_by", lang)), lang)
    return None


def _rule_words(problem: Any) -> list[str]:
    detail = getattr(problem, "detail", None)
    return [str(v) for v in detail.values()] if isinstance(detail, dict) else [str(detail or "")]


def _terse(text: str) -> bool:
    """Too short to say why and what to do next: under four words, and under six Chinese characters."""
    return len(text.split()) < 4 and len(re.findall("[\u4e00-\u9fff]", text)) < 6


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
    if not isinstance(given, str):
        return judge_answer(given, right) is True
    name = re.split(r"[:：]", _HEADER_WORD.sub("", plain_text(given)), maxsplit=1)[0].strip()
    return judge_answer(name, right) is True


# the words that say it is a header before its name ("响应头 Idempotent-Replayed", "the header X"), read past
_HEADER_WORD = re.compile(r"^(?:the\s+)?(?:response\s+)?(?:header|响应头|回复头|响应标头|标头|头部|头)\s*(?:是|为|[:：])?\s*")


@_reports("16")
def meta_field(given: Any, lang: Lang = "en") -> Feedback:
    """16: the field of an MCP ``tools/call`` request in which the site reads a write's idempotency key."""
    right = "_meta"  # MCP's field for what is not an argument: agentlab/idempotency_key goes there
    # spelt as in the JSON, its underscore too ("meta" is another field): quotes, spaces and width still do not matter
    return check_answer(given, right, lang=lang, why=both("build.nb16.look.why"), hint=both("build.nb16.look.hint"),
                        same=_meta_named)


def _meta_named(given: Any, right: Any) -> bool:
    """The field named by its path in the request, as the JSON nests it (params._meta, params["_meta"]), or with the
    key's own name inside it (_meta.agentlab/idempotency_key, "_meta 里的 agentlab/idempotency_key"), or by that name
    alone: each names where the key goes. Any other name in the answer (meta, arguments), or a "not", is no answer."""
    if not isinstance(given, str):
        return False
    text = re.sub(r"params\s*(?:\.|/|\[)\s*", "", plain_text(given))  # the path to it: params._meta, params/_meta
    names = _JSON_NAME.findall(text)
    rest = _JSON_NAME.sub("", text)
    # around the names only the words that carry them (放在 _meta 里, _meta 里的 ...) and marks: "除了 _meta", "别用
    # _meta" and "_meta 之外" name it too, and say the opposite
    if not names or not re.fullmatch(r"[\s\W_]*", re.sub(r"放在|写在|里面|当中|字段|[的里中内在是]", "", rest)):
        return False
    return set(names) <= {right, _META_KEY} and (right in names or names == [_META_KEY])


# a name as the JSON writes it in an answer (params, _meta, agentlab/idempotency_key), and the key's own name in _meta
_JSON_NAME = re.compile(r"[a-z_][a-z0-9_]*(?:/[a-z0-9_]+)?")
_META_KEY = "agentlab/idempotency_key"


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

