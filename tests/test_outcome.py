"""The grader every figure rests on (agentlab/evals/outcome.py), called directly, outcome by outcome.

Each row is a final state, what the case expected, and how the run ended; the outcome is the one
grade() must give. The rows were chosen by breaking grade() on purpose (partial writes not wrong,
a broken service taken for the hand-over a case expects, a tolerance of 1 on money, a stray
hand-over ticket beside a finished task): each such break fails at least one row here.
"""
import pytest

from agentlab.errors import CODES
from agentlab.evals.outcome import INFRASTRUCTURE, OUTCOMES, SUCCESS, grade, reasons_in
from agentlab.runs import Run
from agentlab.trace import Event

DONE = ["done", "done_after_self_correction"]
HANDOVER = ["escalated"]


def run(status="done", *, code=None, answer="Done.", told=(), pending=()):
    """A run that ended in ``status``; its end event carries ``code``; ``told`` is what its tools told the model."""
    events = (Event("r1", "s1", 1, 1, "tool", tool_name="t", exec_ok=True),
              Event("r1", "s1", 1, 2, "end", error_code=code, final_status=status))
    messages = ({"role": "user", "content": "please"},
                *({"role": "tool", "tool_call_id": f"c{i}", "content": c} for i, c in enumerate(told)))
    return Run("r1", "guarded", "fake", status, "why it ended", answer, 2, events, messages, pending=tuple(pending))


def refund(order="A1001", amount=199.0, reason="user_cancel", **more):
    return {"order_id": order, "amount": amount, "reason": reason, **more}


def desk(*refunds, tickets=0):
    """An after-sales desk's snapshot: refunds written, tickets opened."""
    return {"refunds": list(refunds), "tickets": [{"ticket_id": f"T{i:03d}", "summary": "x"} for i in range(tickets)],
            "status": {"A1001": "paid"}}


def ledger(records=(), deleted=(), changed=(), budgets=(), tickets=0):
    """A bookkeeping desk's snapshot: what was booked, deleted, changed and budgeted since the start."""
    return {"records": list(records), "deleted": sorted(deleted), "changed": list(changed), "budgets": list(budgets),
            "tickets": [{"ticket_id": f"T{i:03d}", "summary": "x"} for i in range(tickets)]}


ONE_REFUND = {"refunds": [refund()], "tickets": 0, "statuses": DONE}
ONE_REFUND_NO_TICKETS_SAID = {"refunds": [refund()], "statuses": DONE}  # most cases say no tickets by saying nothing
TWO_REFUNDS = {"refunds": [refund(), refund("A1005", 19.9)], "statuses": DONE}
NO_REFUND_HANDOVER = {"refunds": [], "statuses": HANDOVER}
TAXI = {"date": "2026-10-14", "amount": 45.0, "category": "transport"}
LUNCH = {"date": "2026-10-14", "amount": 32.5, "category": "food"}
TWO_RECORDS = {"records": [TAXI, LUNCH], "statuses": DONE}
TWO_DELETES = {"deleted": ["R001", "R002"], "statuses": DONE}

# (id, expect, final state, run, outcome)
TABLE = [
    # --- finished, and right
    ("exact", ONE_REFUND, desk(refund()), run("done"), "correct"),
    ("after self-correction", ONE_REFUND, desk(refund()), run("done_after_self_correction"), "correct"),
    ("fields the case does not name are not compared", ONE_REFUND, desk(refund(refund_id="RF1", at="now")), run(),
     "correct"),
    ("two right items in another order", TWO_REFUNDS, desk(refund("A1005", 19.9), refund()), run(), "correct"),
    ("an int amount equals its float", ONE_REFUND, desk(refund(amount=199)), run(), "correct"),
    ("money within half a cent", ONE_REFUND, desk(refund(amount=199.004)), run(), "correct"),
    ("two records booked", TWO_RECORDS, ledger([LUNCH, TAXI]), run(), "correct"),
    ("both deleted", TWO_DELETES, ledger(deleted=["R002", "R001"]), run(), "correct"),
    ("the ticket the case asks for", {"refunds": [], "tickets": 1, "statuses": DONE}, desk(tickets=1), run(),
     "correct"),
    # --- money is compared as a number, to the cent
    ("half a yuan off", ONE_REFUND, desk(refund(amount=199.5)), run(), "done, wrong data"),
    ("one cent off", ONE_REFUND, desk(refund(amount=199.01)), run(), "done, wrong data"),
    ("a yuan off", ONE_REFUND, desk(refund(amount=198.0)), run(), "done, wrong data"),
    ("an amount as text", ONE_REFUND, desk(refund(amount="199元")), run(), "done, wrong data"),
    ("an amount as the text of the number", ONE_REFUND, desk(refund(amount="199.0")), run(), "done, wrong data"),
    ("a boolean is no amount", {"refunds": [refund(amount=1)], "statuses": DONE}, desk(refund(amount=True)), run(),
     "done, wrong data"),
    ("taxi booked at 45.5", {"records": [TAXI], "statuses": DONE}, ledger([{**TAXI, "amount": 45.5}]), run(),
     "done, wrong data"),
    # --- written wrong, or too much
    ("the wrong reason", ONE_REFUND, desk(refund(reason="price_error")), run(), "done, wrong data"),
    ("the wrong order", ONE_REFUND, desk(refund("A1002")), run(), "done, wrong data"),
    ("refunded twice", ONE_REFUND, desk(refund(), refund()), run(), "done, wrong data"),
    ("a refund nobody asked for", {"refunds": [], "tickets": 0, "statuses": DONE}, desk(refund()), run(),
     "done, wrong data"),
    ("a delete the case does not mention", {"records": [TAXI], "statuses": DONE}, ledger([TAXI], deleted=["R009"]),
     run(), "done, wrong data"),
    ("a budget the case does not mention", {"records": [TAXI], "statuses": DONE},
     ledger([TAXI], budgets=[{"category": "food", "month": "2026-10", "amount": 1.0}]), run(), "done, wrong data"),
    ("the wrong record deleted", TWO_DELETES, ledger(deleted=["R001", "R003"]), run(), "done, wrong data"),
    # --- partial writes: some expected items done, some not, is wrong (the data is half a change)
    ("one refund of two", TWO_REFUNDS, desk(refund()), run(), "done, wrong data"),
    ("one record of two", TWO_RECORDS, ledger([TAXI]), run(), "done, wrong data"),
    ("one delete of two", TWO_DELETES, ledger(deleted=["R001"]), run(), "done, wrong data"),
    ("one refund of two, then stopped", TWO_REFUNDS, desk(refund()), run("budget_exhausted"), "wrong data, stopped"),
    # --- a stray hand-over ticket beside a finished task: the task was not simply done
    ("a stray ticket, tickets not said", ONE_REFUND_NO_TICKETS_SAID, desk(refund(), tickets=1), run(),
     "done, wrong data"),
    ("a stray ticket, no tickets said", ONE_REFUND, desk(refund(), tickets=1), run(), "done, wrong data"),
    ("a stray ticket and nothing else", {"refunds": [], "statuses": DONE}, desk(tickets=1), run(), "done, wrong data"),
    # --- said done, nothing done
    ("nothing written", ONE_REFUND, desk(), run(), "done, nothing done"),
    ("no record booked", TWO_RECORDS, ledger(), run(), "done, nothing done"),
    ("nothing deleted", TWO_DELETES, ledger(), run(), "done, nothing done"),
    ("the answer lacks what it must say", {"refunds": [], "answer_contains": ["A1001"], "statuses": DONE}, desk(),
     run(answer="All fine."), "done, nothing done"),
    ("the ticket asked for never opened", {"refunds": [], "tickets": 1, "statuses": DONE}, desk(), run(),
     "done, nothing done"),
    ("done where a person was needed", NO_REFUND_HANDOVER, desk(), run("done"), "done, nothing done"),
    # --- hand-overs the case expects: the business, a guard or the agent said so
    ("a rule refused", NO_REFUND_HANDOVER, desk(), run("escalated", code="PERMISSION_DENIED"), "correct hand-over"),
    ("no such order", NO_REFUND_HANDOVER, desk(), run("escalated", code="NOT_FOUND"), "correct hand-over"),
    ("a brake on a loop", NO_REFUND_HANDOVER, desk(), run("escalated", code="LOOP_DETECTED"), "correct hand-over"),
    ("held for approval", {"refunds": [], "statuses": HANDOVER, "pending": 1}, desk(),
     run("escalated", code="NEEDS_APPROVAL", pending=["call-1"]), "correct hand-over"),
    ("the agent wrote a ticket", NO_REFUND_HANDOVER, desk(tickets=1), run("escalated"), "correct hand-over"),
    ("a ticket, then the service failed", NO_REFUND_HANDOVER, desk(tickets=1), run("escalated", code="UNAVAILABLE"),
     "correct hand-over"),
    ("a case about a dead key names it", {**NO_REFUND_HANDOVER, "because": ["UNAUTHENTICATED"]}, desk(),
     run("escalated", code="UNAUTHENTICATED"), "correct hand-over"),
    ("a case that wants a ticket gets one", {**NO_REFUND_HANDOVER, "because": ["ticket"]}, desk(tickets=1),
     run("escalated", code="UNAVAILABLE"), "correct hand-over"),
    # --- hand-overs caused by infrastructure are never the one a case expects
    ("a dead key", NO_REFUND_HANDOVER, desk(), run("escalated", code="UNAUTHENTICATED"), "escalated"),
    ("a 429", NO_REFUND_HANDOVER, desk(), run("escalated", code="RATE_LIMITED"), "escalated"),
    ("a timeout", NO_REFUND_HANDOVER, desk(), run("escalated", code="TIMEOUT"), "escalated"),
    ("a broken model", NO_REFUND_HANDOVER, desk(), run("escalated", code="MODEL_ERROR"), "escalated"),
    ("a case about a dead key, ended by a 429", {**NO_REFUND_HANDOVER, "because": ["UNAUTHENTICATED"]}, desk(),
     run("escalated", code="RATE_LIMITED"), "escalated"),
    # a case whose reason is "ticket": a hand-over without one is not the one it wants, whatever ended the run
    ("a case that wants a ticket, a rule refused", {**NO_REFUND_HANDOVER, "because": ["ticket"]}, desk(),
     run("escalated", code="PERMISSION_DENIED"), "escalated"),
    ("a case that wants a ticket, handed over with none", {**NO_REFUND_HANDOVER, "because": ["ticket"]}, desk(),
     run("escalated"), "escalated"),
    ("held for approval, one too many", {"refunds": [], "statuses": HANDOVER, "pending": 1}, desk(),
     run("escalated", code="NEEDS_APPROVAL", pending=["c1", "c2"]), "escalated"),
    # --- stopped where the task should have been done
    ("handed over, nothing written", ONE_REFUND, desk(), run("escalated", code="PERMISSION_DENIED"), "escalated"),
    ("out of steps, nothing written", ONE_REFUND, desk(), run("budget_exhausted", code="BUDGET_EXHAUSTED"),
     "budget exhausted"),
    ("handed over after a wrong refund", ONE_REFUND, desk(refund(amount=19.9)), run("escalated"),
     "wrong data, stopped"),
    ("handed over after writing what a hand-over case forbids", NO_REFUND_HANDOVER, desk(refund()),
     run("escalated", code="PERMISSION_DENIED"), "wrong data, stopped"),
    # --- before the data: a crash, a leak
    ("the naive loop raised", ONE_REFUND, desk(refund()), run("failed"), "crashed"),
    # a crash after a wrong write: "crashed" alone read as harmless beside a ledger line booked on the wrong day
    ("the naive loop raised after a wrong refund", ONE_REFUND, desk(refund(amount=19.9)), run("failed"),
     "wrong data, stopped"),
    ("the naive loop raised after refunding twice", ONE_REFUND, desk(refund(), refund()), run("failed"),
     "wrong data, stopped"),
    ("a password shown to the model", ONE_REFUND, desk(refund()), run(told=['{"error": "login: password=hunter2"}']),
     "leaked"),
    ("a stack trace shown to the model", NO_REFUND_HANDOVER, desk(),
     run("escalated", code="PERMISSION_DENIED", told=["Traceback (most recent call last):\n  boom"]), "leaked"),
]


@pytest.mark.parametrize("expect,state,the_run,outcome", [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_each_final_state_gets_its_one_outcome(expect, state, the_run, outcome):
    verdict = grade(expect, state, the_run)
    assert verdict.outcome == outcome, verdict
    assert verdict.passed == (outcome in SUCCESS)
    if not verdict.passed:
        assert verdict.failures, "a failure always says why"


def test_the_table_reaches_every_outcome():
    assert {row[-1] for row in TABLE} == set(OUTCOMES)


@pytest.mark.parametrize("code", sorted(INFRASTRUCTURE))
def test_no_broken_service_is_the_hand_over_a_case_expects(code):
    verdict = grade(NO_REFUND_HANDOVER, desk(), run("escalated", code=code))
    assert verdict.outcome == "escalated" and not verdict.passed
    assert code in verdict.failures[0]
    # unless the case is about that very failure
    assert grade({**NO_REFUND_HANDOVER, "because": [code]}, desk(), run("escalated", code=code)).passed


def test_every_transient_failure_counts_as_infrastructure():
    """A transient code added later must not slip into "the hand-over the case wanted"."""
    transient = {code for code, (category, _) in CODES.items() if category == "transient"}
    assert transient <= INFRASTRUCTURE and INFRASTRUCTURE <= set(CODES)


@pytest.mark.parametrize("amount,equal", [(199.0, True), (199.004, True), (198.996, True), (199.006, False),
                                          (199.5, False), (198.5, False), (200.0, False), (0.0, False)])
def test_money_is_equal_only_to_the_cent(amount, equal):
    verdict = grade(ONE_REFUND, desk(refund(amount=amount)), run())
    assert verdict.passed is equal, verdict
    if not equal:
        assert verdict.outcome == "done, wrong data" and any("amount" in why for why in verdict.failures)


def test_a_partial_write_names_what_is_missing():
    verdict = grade(TWO_REFUNDS, desk(refund()), run())
    assert verdict.outcome == "done, wrong data"
    assert verdict.failures == ("1 refund, expected 2",)


def test_a_stray_ticket_is_named():
    verdict = grade(ONE_REFUND_NO_TICKETS_SAID, desk(refund(), tickets=1), run())
    assert verdict.failures == ("1 ticket, expected 0",)


def test_why_a_run_failed_is_said_in_the_readers_language():
    """A verdict's reasons are English sentences (they compare and print as before) that a Chinese reader gets in
    Chinese: notebook 09, the review and the app show them."""
    import re

    from agentlab.evals.outcome import FailedBecause, reasons_in
    from agentlab.runs import Run
    run = Run(run_id="r", loop="guarded", model="m", status="done", reason="", answer="ok", steps=2, events=(), messages=())
    verdict = grade({"refunds": [{"order_id": "A1001", "amount": 40}], "answer_contains": ["A1001"]},
                    {"refunds": [{"order_id": "A1001", "amount": 45}, {"order_id": "A1001", "amount": 45}]}, run)
    assert verdict.outcome == "done, wrong data"
    assert all(isinstance(f, FailedBecause) for f in verdict.failures)
    assert list(verdict.failures)[:2] == ["2 refunds, expected 1", "refund amount=45, expected 40"]
    said = reasons_in(verdict.failures, "zh")
    assert all(re.search(r"[\u3400-\u9fff]", s) for s in said), said
    assert "45" in said[1] and "40" in said[1]
    assert reasons_in(["a reason stored as text"], "zh") == ["a reason stored as text"]


def test_a_status_failure_lists_the_wanted_statuses_in_its_own_text_too():
    """The failure's text (stored in results.jsonl, shown in English feedback) listed them as a Python list."""
    from agentlab.evals.outcome import FailedBecause
    from agentlab.i18n import Listed
    f = FailedBecause("grade.status", status="budget_exhausted", wanted=Listed(["done", "done_after_self_correction"]))
    assert str(f) == f.said("en") == "status budget exhausted, expected one of done, done after self-correction"
    assert "[" not in str(f) and "完成、自我修正后完成" in f.said("zh")


def test_a_count_in_chinese_names_its_collection_alike_whatever_the_number():
    """Chinese has no plural: the capstone said 退款：1，应为 0 in one line and 退款笔数：2，应为 1 in the next
    (the English noun's singular and plural, each put into Chinese)."""
    from agentlab.evals.outcome import FailedBecause
    one = FailedBecause("grade.count", n=1, noun="refund", name="refunds", want=0).said("zh")
    two = FailedBecause("grade.count", n=2, noun="refunds", name="refunds", want=1).said("zh")
    assert one.split("：")[0] == two.split("：")[0], (one, two)
    assert FailedBecause("grade.count", n=1, noun="refund", name="refunds", want=0).said("en") == "1 refund, expected 0"


def test_a_crash_after_a_wrong_write_says_the_crash_first_then_what_is_wrong():
    import dataclasses
    crashed = dataclasses.replace(run("failed"), reason="crashed: KeyError: 'amount'")  # as the naive loop says it
    verdict = grade(ONE_REFUND, desk(refund(amount=19.9)), crashed)
    assert verdict.outcome == "wrong data, stopped"
    said = reasons_in(verdict.failures)
    assert said[0] == "the loop crashed: KeyError: 'amount'" and len(said) > 1, said  # (it read "crashed: crashed:")


def test_what_crashed_a_run_is_said_in_chinese_words_not_pythons():
    """The bad-case review's Chinese row read 循环崩溃了：JSONDecodeError: Unterminated string starting at: ..."""
    from agentlab.evals.outcome import FailedBecause
    f = FailedBecause("grade.crashed", reason="JSONDecodeError: Unterminated string starting at: line 1 column 13 (char 12)")
    assert "JSONDecodeError" not in f.said("zh") and "JSON" in f.said("zh")
    assert "JSONDecodeError" in str(f)  # English keeps Python's own, which names what it found
