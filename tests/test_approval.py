import json
import threading

from agentlab.scenarios import aftersales
from agentlab.approval import approve, pending, reject
from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, SelfCorrectingModel
from agentlab.store import SQLiteStore

PLAN = [("get_order", {"order_id": "A1003"}), ("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]


def held(store, session="s1"):
    desk, reg = aftersales.SCENARIO.setup()
    run = run_guarded(SelfCorrectingModel(PLAN, "ok"), reg, "Refund A1003", store=store, session_id=session,
                      sleep=lambda s: None)
    return desk, reg, run


def test_large_refund_is_held_not_executed():
    store = SQLiteStore()
    desk, reg, run = held(store)
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
