"""The bookkeeping desk: its rules live in code, and its suite is graded on the ledger."""
import dataclasses
from collections import Counter

import pytest

from agentlab import approve
from agentlab.evals.suite import load_cases, run_case, run_suite
from agentlab.models import DatedModel, ScriptedModel, call, say
from agentlab.models.fakes import resolve_dates
from agentlab.models.faults import in_words
from agentlab.resources import data_file
from agentlab.scenarios import expense, get
from agentlab.scenarios.conversation import Conversation

BOOK = {"date": "2026-10-15", "item": "taxi", "amount": 45, "category": "transport"}


def chat(model, **kw):
    return Conversation(get("expense"), model, sleep=lambda s: None, **kw)


def test_the_desk_has_thirteen_tools_in_both_languages_with_the_same_schemas():
    en, zh = (expense.make_registry(expense.Ledger(), lang=lang) for lang in ("en", "zh"))
    assert len(en) == 13 and en.names == zh.names
    for a, b in zip(en, zh, strict=True):
        assert a.parameters["required"] == b.parameters["required"] and a.description != b.description


@pytest.mark.parametrize("args, field, reason", [
    ({**BOOK, "date": "2026-10-16"}, "date", "rule"),       # tomorrow, by the desk's clock
    ({**BOOK, "amount": 0}, "amount", "out_of_range"),
    ({**BOOK, "amount": "45元"}, "amount", "wrong_type"),
    ({**BOOK, "category": "fitness"}, "category", "not_in_enum"),
    ({**BOOK, "date": "2026-02-30"}, "date", "bad_format"),
])
def test_business_rules_refuse_bad_bookings_before_the_ledger_is_touched(args, field, reason):
    ledger = expense.Ledger()
    checked = expense.make_registry(ledger).check("book_expense_record", args)
    assert not checked.ok and (field, reason) in {(p.field, p.reason) for p in checked.error.problems}
    assert ledger.snapshot()["records"] == []


def test_a_delete_waits_for_the_users_confirmation_then_runs_once():
    c = chat(ScriptedModel([call("delete_expense_record", {"record_id": "E0020", "reason": "wrong"}), say("Please confirm.")]))
    run = c.ask("delete E0020")
    assert run.status == "escalated" and len(run.pending) == 1 and "E0020" in c.state.records
    approve(c.store, c.registry, run.pending[0])
    assert "E0020" not in c.state.records and c.state.snapshot()["deleted"] == ["E0020"]


def test_the_same_expense_twice_in_one_chat_is_booked_once_and_again_after_clearing():
    c = chat(ScriptedModel([call("book_expense_record", BOOK), say("ok"), call("book_expense_record", BOOK),
                            say("ok"), call("book_expense_record", BOOK), say("ok")]))
    c.ask("taxi 45 today")
    c.ask("did you book the taxi? book it")
    assert len(c.state.snapshot()["records"]) == 1
    c.clear()
    c.ask("new chat: taxi 45 today")
    assert len(c.state.snapshot()["records"]) == 2


def test_the_same_expense_with_other_details_is_a_conflict_for_a_person_not_a_second_record():
    c = chat(ScriptedModel([call("book_expense_record", BOOK), say("ok"),
                            call("book_expense_record", {**BOOK, "remark": "to the airport"}), say("ok")]), session_id="s-42")
    c.ask("taxi 45 today")
    run = c.ask("the taxi, 45, today, to the airport")
    assert run.events[-1].error_code == "CONFLICT" and len(c.state.snapshot()["records"]) == 1
    told = next(e.model_visible for e in run.tool_events if e.error_code == "CONFLICT")
    assert "s-42" not in told and "2026-10-15" in told  # the business key, never the session's internals


def test_two_expenses_alike_in_day_amount_and_category_are_both_booked():
    lunch = {**BOOK, "item": "lunch", "amount": 30, "category": "food"}
    c = chat(ScriptedModel([call("book_expense_record", lunch), call("book_expense_record", {**lunch, "item": "dinner"}),
                            call("book_expense_record", {**lunch, "item": " Lunch ", "amount": 30.0}), say("ok")]))
    c.ask("lunch 30 and dinner 30 today")
    assert sorted(r["item"] for r in c.state.snapshot()["records"]) == ["dinner", "lunch"]  # " Lunch " 30.0 is lunch


def test_setting_a_budget_again_is_never_replayed_from_an_old_result():
    sets = [call("set_budget", {"category": "food", "month": "2026-10", "amount": a}) for a in (2000, 3000, 2000)]
    c = chat(ScriptedModel([sets[0], say("ok"), sets[1], say("ok"), sets[2], say("ok")]))
    for _ in range(3):
        run = c.ask("set my food budget")
        said = run.tool_events[0].model_visible
        assert f'"budget": {c.state.budgets[("food", "2026-10")]}' in said and not run.tool_events[0].replayed
    assert c.state.budgets[("food", "2026-10")] == 2000


@pytest.mark.parametrize("field, value", [("month", "2026-10\n"), ("month", "２０２６-10"), ("month", "2026-13")])
def test_patterns_mean_what_json_schema_says(field, value):
    reg = expense.make_registry(expense.Ledger())
    assert not reg.check("set_budget", {"category": "food", "month": "2026-10", "amount": 1, field: value}).ok
    assert not reg.check("get_expense_record", {"record_id": "E１２３４"}).ok


def test_an_update_must_change_something():
    assert not expense.make_registry(expense.Ledger()).check("update_expense_record", {"record_id": "E0001"}).ok


def test_the_naive_desk_books_it_twice():
    c = chat(ScriptedModel([call("book_expense_record", BOOK), say("ok"), call("book_expense_record", BOOK), say("ok")]),
             loop="naive")
    c.ask("taxi 45 today")
    c.ask("book it again")
    assert len(c.state.snapshot()["records"]) == 2


def test_dates_are_read_from_the_system_prompt_or_else_from_the_models_cutoff():
    assert resolve_dates('{"d": "{yesterday}", "f": "{last_friday}", "m": "{last_month}"}', expense.DEMO_NOW.date()) == \
        '{"d": "2026-10-14", "f": "2026-10-09", "m": "2026-09"}'
    yesterday = call("book_expense_record", {**BOOK, "date": "{yesterday}"})
    days = {}
    for loop in ("guarded", "naive"):
        c = chat(DatedModel(ScriptedModel([yesterday, say("ok"), yesterday, say("ok")])), loop=loop)
        c.ask("taxi yesterday 45")
        c.clear()
        c.ask("and another one, yesterday, 45")  # a second turn after clearing the chat
        days[loop] = [r["date"] for r in c.state.snapshot()["records"]]
    assert days["guarded"] == ["2026-10-14", "2026-10-14"]          # the prompt is built per turn
    assert days["naive"] == ["2026-09-20", "2024-06-29"]            # a frozen date, then no date at all


def test_chinese_amounts_in_words():
    assert [in_words(x) for x in (120, 45, 1005, 10, 19.5, 3000)] == \
        ["一百二十块", "四十五块", "一千零五块", "十块", "十九块五", "三千块"]


def test_the_suite_has_fifty_cases_of_three_kinds_and_the_guarded_desk_passes_them_all():
    cases = load_cases(data_file("expense_cases.jsonl"))
    kinds = Counter(c.category for c in cases)
    assert len(cases) >= 50 and set(kinds) == {"normal", "boundary", "adversarial"}
    for lang in ("en", "zh"):
        guarded = run_suite(cases, lang=lang)
        assert [r.case_id for r in guarded if not r.passed] == []
        naive = {r.case_id: r for r in run_suite(cases, loop="naive", lang=lang)}
        # the frozen date: every relative day is booked wrong, graded on the ledger
        assert naive["normal-lunch-yesterday"].outcome == "done, wrong data"
        assert naive["normal-train-explicit"].passed  # a date the user spelled out survives
        # tool_calls[0] only: the API refuses the history, after the first record was booked on the wrong day
        assert naive["boundary-two-in-one"].outcome == "wrong data, stopped"
        assert naive["boundary-long-chat-taxi"].outcome == "crashed"  # "the last 10 messages" cut a call from its reply
        assert sum(r.passed for r in naive.values()) < len(cases) / 2


def test_the_long_chats_pass_only_because_the_guarded_desk_trims():
    case = next(c for c in load_cases(data_file("expense_cases.jsonl")) if c.id == "boundary-long-chat-lunch")
    assert run_case(case).passed
    untrimmed = dataclasses.replace(get("expense"), context_budget=None)
    from agentlab.scenarios import SCENARIOS
    SCENARIOS["expense"], saved = untrimmed, SCENARIOS["expense"]
    try:
        result = run_case(case)
    finally:
        SCENARIOS["expense"] = saved
    assert not result.passed and result.run.events[-1].error_code == "CONTEXT_TOO_LONG"


def test_a_message_that_alone_is_too_long_is_refused_plainly_not_raised():
    c = chat(ScriptedModel([say("never asked")]), max_tokens=50)
    run = c.ask("receipt line " * 200)
    assert run.status == "escalated" and run.events[-1].error_code == "CONTEXT_TOO_LONG" and "new chat" in run.answer
    assert "budget" in run.events[-1].note  # the detail is for the trace, not for the user
    assert c.model.calls == []


def test_a_write_the_case_never_asked_for_fails_it():
    case = next(c for c in load_cases(data_file("expense_cases.jsonl")) if c.id == "normal-train-explicit")
    booked = {"date": "2026-10-12", "item": "train ticket", "amount": 73, "category": "transport"}
    extra = [call("book_expense_record", booked), call("delete_expense_record", {"record_id": "E0003", "reason": "x"}),
             call("set_budget", {"category": "food", "month": "2026-10", "amount": 1}), say("done")]
    assert run_case(case, model=ScriptedModel(extra[:1] + extra[-1:])).passed
    result = run_case(case, model=ScriptedModel(extra), loop="naive")
    assert result.outcome == "done, wrong data" and any("deleted" in f for f in result.failures)


def test_a_tokenizer_that_is_down_falls_back_to_the_estimate_and_says_so():
    c = chat(ScriptedModel([say("ok")]), count=lambda messages: 1 / 0, max_tokens=5000)
    assert c.ask("hello").status == "done" and "estimate" in c.counted_by


# --- a business limit the desk declares (Tool.limits): checked before the write, refused as rule-blocked ------------
FEAST = {"date": "2026-10-15", "item": "banquet", "amount": 4500, "category": "food"}  # three times the food budget


def _run(model, reg, task="book it"):
    from agentlab.loop import run_guarded
    from agentlab.store import MemoryStore
    return run_guarded(model, reg, task, store=MemoryStore(), sleep=lambda s: None)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_booking_past_a_categorys_budget_is_refused_before_the_write_and_graded_rule_blocked(lang):
    """Three times the food budget ran to done with left -3369. Now the budget is a limit the desk declares: the
    call is refused before the ledger is touched (the balance is as it was), the model reads a structured
    RULE_VIOLATION (stage rule_blocked: what was asked, what is left), and the run is a hand-over that the
    package's one grading calls a correct one when the case expects the business to say no."""
    import json

    from agentlab.evals.metrics import failure_breakdown
    from agentlab.evals.outcome import grade
    ledger, reg = expense.SCENARIO.setup(lang)
    before = ledger.get_budget("food", "2026-10")
    run = _run(ScriptedModel([call("book_expense_record", FEAST), say("Booked.")]), reg)
    assert ledger.get_budget("food", "2026-10") == before and ledger.snapshot()["records"] == []
    end = run.events[-1]
    assert run.status == "escalated" and (end.error_code, end.error_stage) == ("RULE_VIOLATION", "rule_blocked")
    told = json.loads(run.tool_events[0].model_visible)["error"]
    assert (told["code"], told["category"], told["stage"], told["retryable"]) == \
        ("RULE_VIOLATION", "fatal", "rule_blocked", False)
    (problem,) = told["problems"]
    assert (problem["field"], problem["reason"], problem["got"], problem["limit"]) == ("amount", "over_limit", 4500, 1131)
    assert "1131" in problem["hint"] and ("预算" in problem["hint"]) == (lang == "zh")
    expect = {"records": [], "statuses": ["escalated"], "because": ["RULE_VIOLATION"]}
    assert grade(expect, ledger.snapshot(), run).outcome == "correct hand-over"
    assert failure_breakdown([run])["rule_blocked"] == {"RULE_VIOLATION": 1}
    assert grade({"records": []}, ledger.snapshot(), run).outcome == "escalated"  # nothing wrong was written


def test_the_naive_desk_has_no_spending_guard():
    """What the workbook shows beside it: the naive loop runs no contract, and the budget goes negative."""
    from agentlab.naive import run_naive
    ledger, reg = expense.SCENARIO.setup()
    run = run_naive(ScriptedModel([call("book_expense_record", FEAST), say("Booked.")]), reg, "book it")
    assert run.status == "done" and ledger.get_budget("food", "2026-10")["left"] == -3369


def test_booking_within_the_budget_still_works_up_to_the_last_yuan():
    ledger, reg = expense.SCENARIO.setup()
    left = ledger.get_budget("food", "2026-10")["left"]
    run = _run(ScriptedModel([call("book_expense_record", {**FEAST, "amount": left}), say("Booked.")]), reg)
    assert run.status == "done" and ledger.get_budget("food", "2026-10")["left"] == 0
    lodging = {**FEAST, "category": "lodging", "amount": 9000}  # a category without a budget has no limit
    assert _run(ScriptedModel([call("book_expense_record", lodging), say("Booked.")]), reg).status == "done"


def test_changing_a_record_past_the_budget_is_refused_before_it_waits_for_confirmation():
    """The same limit holds for an update (a larger amount, or moved into a category or month that has no room);
    a change that does not add to a category's spending (a remark, a smaller amount) is never refused by it."""
    ledger, reg = expense.SCENARIO.setup()
    run = _run(ScriptedModel([call("update_expense_record", {"record_id": "E0018", "amount": 5000}), say("?")]), reg)
    assert run.events[-1].error_code == "RULE_VIOLATION" and run.pending == () and ledger.records["E0018"]["amount"] == 35
    moved = {"record_id": "E0014", "category": "office", "amount": 199}  # office has 172.1 left
    assert _run(ScriptedModel([call("update_expense_record", moved), say("?")]), reg).events[-1].error_code == "RULE_VIOLATION"
    ledger.budgets[("food", "2026-10")] = 100  # lowered below what was spent: the limit is already passed
    for change in ({"remark": "team lunch"}, {"amount": 30}):
        run = _run(ScriptedModel([call("update_expense_record", {"record_id": "E0018", **change}), say("?")]), reg)
        assert run.events[-1].error_code == "NEEDS_APPROVAL", change  # held for the user, not refused
