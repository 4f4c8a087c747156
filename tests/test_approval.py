import json
import random
import re
import threading

import pytest

from agentlab.approval import approve, pending, reject
from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, SelfCorrectingModel
from agentlab.scenarios import aftersales
from agentlab.store import SQLiteStore

PLAN = [("get_order", {"order_id": "A1003"}), ("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]


def held(store, session="s1"):
    desk, reg = aftersales.SCENARIO.setup()
    run = run_guarded(SelfCorrectingModel(PLAN, "ok"), reg, "Refund A1003", store=store, session_id=session,
                      sleep=lambda s: None)
    return desk, reg, run


def test_large_refund_is_held_not_executed():
    store = SQLiteStore()
    desk, _reg, run = held(store)
    assert run.status == "escalated" and run.pending == ("create_refund:A1003",) and desk.refunds == []
    err = json.loads(run.tool_events[-1].model_visible)["error"]
    assert err["code"] == "NEEDS_APPROVAL" and err["retryable"] is False and err["approval_id"] == "create_refund:A1003"
    assert "approval" in run.answer
    assert [a.id for a in pending(store)] == ["create_refund:A1003"]


def test_approve_runs_exactly_the_approved_arguments_exactly_once():
    store = SQLiteStore()
    desk, reg, run = held(store)
    results = []
    threads = [threading.Thread(target=lambda: results.append(approve(store, reg, run.pending[0]))) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(d.ran for d in results) == 1
    assert desk.refunds == [{**desk.refunds[0], "order_id": "A1003", "amount": 2499, "reason": "user_cancel"}]
    assert pending(store) == []


def test_reject_tells_the_next_turn_why():
    store = SQLiteStore()
    desk, reg, run = held(store, "s2")
    reject(store, run.pending[0], "needs a manager's signature")
    model = ScriptedModel(["It was not approved."])
    nxt = run_guarded(model, reg, "Is it done?", store=store, session_id="s2", history=list(run.messages))
    notes = [m["content"] for m in model.calls[0].messages if m["role"] == "system"]
    assert any("APPROVAL_REJECTED" in n and "manager's signature" in n for n in notes)
    assert nxt.status == "done" and desk.refunds == []
    # told once, not on every later turn
    model2 = ScriptedModel(["ok"])
    run_guarded(model2, reg, "thanks", store=store, session_id="s2", history=list(nxt.messages))
    assert sum("APPROVAL_REJECTED" in (m.get("content") or "") for m in model2.calls[0].messages) == 1


# ---------------------------------------------------------------- every way out of approve() is seen
def _slow_refund(desk, reg, *, lands: bool, seconds: float = 0.3):
    import time
    from dataclasses import replace

    from agentlab.tools import Registry

    def refund(**kw):
        time.sleep(seconds)
        if not lands:
            raise ConnectionError("the payment backend dropped the connection after taking the request")
        return desk.create_refund(**kw)

    return Registry([replace(t, fn=refund) if t.name == "create_refund" else t for t in reg], lang=reg.lang)


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_an_approval_whose_backend_times_out_is_never_lost(store_kind):
    """The backend times out during approve() and never answers: the call is 'unknown', listed for a person,
    among the unknown claims, approving again runs nothing, the model is told, and resolving it settles it."""
    import time

    from agentlab.approval import resolve
    from agentlab.guards import GuardConfig
    from agentlab.store import MemoryStore
    store = MemoryStore() if store_kind == "memory" else SQLiteStore()
    desk, reg, run = held(store, "s-timeout")
    slow = _slow_refund(desk, reg, lands=False, seconds=0.2)
    held_id = run.pending[0]
    d = approve(store, slow, held_id, config=GuardConfig(timeout=0.05))
    assert not d.ran and d.error.code == "OUTCOME_UNKNOWN" and d.approval.state == "unknown"  # still running: unknown
    time.sleep(0.4)  # the write failed in the background: nothing will settle it by itself
    assert [a.id for a in pending(store)] == [held_id] and pending(store)[0].state == "unknown"
    assert held_id in store.unknown()
    assert not approve(store, slow, held_id).ran and desk.refunds == []  # approving again runs nothing
    model = ScriptedModel(["A person will check."])
    run_guarded(model, slow, "Is it done?", store=store, session_id="s-timeout", history=list(run.messages))
    notes = [m["content"] for m in model.calls[0].messages if m["role"] == "system"]
    assert any("OUTCOME_UNKNOWN" in n and held_id in n for n in notes)  # the model is told, not left guessing
    # a person checks the backend: it did not happen; the call may be approved again, and then runs once
    assert resolve(store, held_id, happened=False)
    assert store.get_approval(held_id).state == "failed" and [a.id for a in pending(store)] == [held_id]
    again = approve(store, reg, held_id)
    assert again.ran and len(desk.refunds) == 1 and pending(store) == []


def test_an_unknown_approval_resolved_as_happened_is_approved_with_its_result():
    from agentlab.approval import resolve
    from agentlab.guards import GuardConfig
    store = SQLiteStore()
    desk, reg, run = held(store, "s-happened")
    held_id = run.pending[0]
    approve(store, _slow_refund(desk, reg, lands=False, seconds=0.1), held_id, config=GuardConfig(timeout=0.02))
    assert resolve(store, held_id, happened=True, result={"refund_id": "R-by-hand"})
    a = store.get_approval(held_id)
    assert a.state == "approved" and json.loads(a.result) == {"refund_id": "R-by-hand"} and pending(store) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_why_a_call_waits_for_a_person_is_said_in_the_desks_language(lang):
    """The reason a held call gives (the model reads it in NEEDS_APPROVAL, a person on the approval desk) came from
    English written in the desks' code: a Chinese desk said "refund above 1000 yuan"."""
    from agentlab.calls import CallContext, _hold
    from agentlab.guards import GuardConfig
    from agentlab.i18n import t
    from agentlab.scenarios import aftersales, expense
    from agentlab.store import MemoryStore
    refund = aftersales.make_registry(aftersales.Desk(aftersales.load_orders()), lang=lang)["create_refund"]
    books = expense.make_registry(expense.Ledger(), lang=lang)
    said = [refund.needs_approval({"order_id": "A1001", "amount": 1500}),
            books["update_expense_record"].needs_approval({"record_id": "E0001"}),
            books["delete_expense_record"].needs_approval({"record_id": "E0001"})]
    assert said == [t("approval.why.refund", lang, limit="1000"), t("approval.why.update_record", lang, id="E0001"),
                    t("approval.why.delete_record", lang, id="E0001")]
    if lang == "zh":
        assert all(re.search("[\u4e00-\u9fff]", s) and not re.search("[A-Za-z]{3}", s) for s in said), said
    ctx = CallContext(books, GuardConfig(), MemoryStore(), lambda s: None, random.Random(0), lambda: 0.0, "s1", lang)
    held = _hold(refund, {"amount": "many"}, "k1", ctx, "{}")  # the rule cannot read the amount: held, said why
    assert held is not None and held.error is not None and t("approval.why.unreadable", lang) in held.content
