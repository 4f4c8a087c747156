"""The guarded loop against a hostile model and a failing backend: nothing runs twice,
nothing hangs, nothing lies. Each test here failed on the loop before the fix."""
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest
from conftest import ROOT

from agentlab import GuardConfig, MemoryStore, SQLiteStore, approve, pending, resolve, run_guarded
from agentlab.errors import ToolFailure
from agentlab.guards import GUARDS
from agentlab.models import ModelError, Reply, ScriptedModel, SelfCorrectingModel, ToolCall, call, say, tool_calls
from agentlab.models.faults import inject_tool_fault
from agentlab.runs import STATUSES
from agentlab.scenarios import aftersales
from agentlab.tools import Registry


def guarded(model, reg, task="help", **kw):
    kw.setdefault("sleep", lambda s: None)
    return run_guarded(model, reg, task, **kw)


# --- 2. an unknown outcome is never "retryable" -------------------------------------------
def test_a_lost_reply_on_an_unkeyed_write_hands_over_instead_of_writing_twice():
    desk, reg = aftersales.SCENARIO.setup()
    reg = inject_tool_fault(reg, "escalate_to_human", "lost_reply")
    model = SelfCorrectingModel([("escalate_to_human", {"summary": "customer wants a call back"})], "Handed over.")
    run = guarded(model, reg, store=SQLiteStore())
    assert len(desk.tickets) == 1, "the ticket was written once and never again"
    err = json.loads(run.tool_events[0].model_visible)["error"]
    assert err["code"] == "OUTCOME_UNKNOWN" and err["retryable"] is False and "NOT send it again" in err["message"]
    assert run.status == "escalated" and "confirm" in run.answer


def test_a_write_that_outlives_its_timeout_is_not_resent_and_its_late_result_is_recorded():
    desk, reg = aftersales.SCENARIO.setup()
    slow = reg["escalate_to_human"]

    def ticket_after_a_while(summary: str):
        time.sleep(0.4)
        return desk.escalate_to_human(summary)

    reg = Registry([t if t.name != "escalate_to_human" else replace(slow, fn=ticket_after_a_while) for t in reg])
    store = SQLiteStore()
    args = {"summary": "please call"}
    model = ScriptedModel([call("escalate_to_human", args), call("escalate_to_human", args), say("done")])
    run = guarded(model, reg, store=store, config=GuardConfig(timeout=0.1), session_id="s1")
    assert run.tool_events[0].error_code == "OUTCOME_UNKNOWN" and run.status == "escalated"
    time.sleep(0.6)  # the worker finishes the write; its result settles the key
    assert len(desk.tickets) == 1
    again = guarded(ScriptedModel([call("escalate_to_human", args), say("ok")]), reg, store=store, session_id="s1")
    assert again.tool_events[0].replayed and len(desk.tickets) == 1


def test_a_keyed_write_with_a_lost_reply_is_resent_safely():
    desk, reg = aftersales.SCENARIO.setup()
    reg = inject_tool_fault(reg, "create_refund", "lost_reply")
    plan = [("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})]
    run = guarded(SelfCorrectingModel(plan, "Refunded."), reg, store=SQLiteStore())
    assert run.status == "done" and len(desk.refunds) == 1 and run.tool_events[0].retry_count == 1


@pytest.mark.parametrize("fault", ["lost_reply", "flaky_tool", "hanging_tool", "leaky_tool"])
@pytest.mark.parametrize("tool", ["create_refund", "escalate_to_human"])
def test_no_write_takes_effect_twice_whatever_the_tool_fault(fault, tool):
    desk, reg = aftersales.SCENARIO.setup()
    reg = inject_tool_fault(reg, tool, fault, seconds=0.3, times=2)
    args = ({"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"} if tool == "create_refund"
            else {"summary": "call the customer"})
    model = SelfCorrectingModel([(tool, args)], "ok")
    guarded(model, reg, store=SQLiteStore(), config=GuardConfig(timeout=0.1))
    time.sleep(0.4)
    assert len(desk.refunds) <= 1 and len(desk.tickets) <= 1


# --- 3. a crashed writer: a lease, then "outcome unknown", then a person resolves it -------
CHILD = textwrap.dedent("""
    import sys, time
    from dataclasses import replace
    from agentlab import GuardConfig, SQLiteStore, run_guarded, Registry
    from agentlab.models import ScriptedModel, call, say
    from agentlab.scenarios import aftersales
    desk, reg = aftersales.SCENARIO.setup()
    def refund_slowly(**kw):
        print("writing", flush=True)
        time.sleep(60)
    reg = Registry([t if t.name != "create_refund" else replace(t, fn=refund_slowly) for t in reg])
    store = SQLiteStore(sys.argv[1])
    run_guarded(ScriptedModel([call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}),
                               say("ok")]), reg, "refund", store=store, config=GuardConfig(lease=1.0, timeout=None))
""")


def test_a_writer_killed_mid_write_leaves_an_honest_unknown_that_a_person_resolves(tmp_path):
    db = tmp_path / "claims.sqlite"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    desk, reg = aftersales.SCENARIO.setup()
    store = SQLiteStore(db)
    refund = call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})
    soon = guarded(ScriptedModel([refund, say("?")]), reg, store=store)
    assert soon.tool_events[0].error_code == "IN_PROGRESS"  # within the lease: it may still be running
    time.sleep(1.1)
    late = guarded(ScriptedModel([refund, say("?")]), reg, store=store)
    err = json.loads(late.tool_events[0].model_visible)["error"]
    assert err["code"] == "OUTCOME_UNKNOWN" and err["retryable"] is False
    assert late.status == "escalated" and "confirm" in late.answer and desk.refunds == []
    assert store.unknown() == ["create_refund:A1001"]
    # a person checked the payment system: the killed refund never happened
    assert resolve(store, "create_refund:A1001", happened=False)
    done = guarded(ScriptedModel([refund, say("Refunded.")]), reg, store=store)
    assert done.status == "done" and len(desk.refunds) == 1 and store.unknown() == []


def test_resolving_as_happened_replays_the_recorded_result():
    store = MemoryStore(clock=lambda: 0.0)
    assert store.claim("k", "a", lease=5).status == "new"
    store.mark_unknown("k")
    assert store.claim("k", "a").status == "unknown"
    assert resolve(store, "k", happened=True, result={"refund_id": "R0009"})
    claim = store.claim("k", "a")
    assert claim.status == "replay" and json.loads(claim.result) == {"refund_id": "R0009"}
    assert not resolve(store, "k", happened=False)  # a finished key is never reopened


@pytest.mark.parametrize("store", [MemoryStore, SQLiteStore])
def test_a_lease_runs_out_into_unknown(store):
    now = [100.0]
    s = store(clock=lambda: now[0])
    assert s.claim("k", "a", lease=10).status == "new"
    now[0] = 109.0
    assert s.claim("k", "a", lease=10).status == "in_flight"
    now[0] = 110.5
    assert s.claim("k", "a", lease=10).status == "unknown" and s.unknown() == ["k"]
    s.release("k")  # releasing is for calls that certainly did not happen: an unknown key stays
    assert s.claim("k", "a").status == "unknown"


# --- 4. an approved call that fails is not a success ----------------------------------------
PLAN = [("get_order", {"order_id": "A1003"}), ("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]


def test_an_approved_call_whose_backend_fails_stays_open_and_is_told_truthfully():
    store = SQLiteStore()
    desk, reg = aftersales.SCENARIO.setup()
    down = {"on": True}

    def refund(**kw):
        if down["on"]:
            raise ToolFailure("UNAVAILABLE", "the payment service is down")
        return desk.create_refund(**kw)

    reg = Registry([t if t.name != "create_refund" else replace(t, fn=refund) for t in reg])
    run = guarded(SelfCorrectingModel(PLAN, "ok"), reg, store=store, session_id="s1")
    (held,) = run.pending
    decision = approve(store, reg, held)
    assert not decision.ran and decision.error.code == "UNAVAILABLE"
    assert decision.approval.state == "failed" and [a.id for a in pending(store)] == [held]
    # the next turn is told the truth: approved, not executed, still waiting
    model = ScriptedModel(["I will wait."])
    guarded(model, reg, "is it done?", store=store, session_id="s1", history=list(run.messages))
    note = json.loads([m["content"] for m in model.calls[0].messages if m["role"] == "system"][-1])
    assert note["ok"] is False and note["executed"] is False and note["still_pending"] is True
    # another session asking for the same refund does not slip past the gate
    other = guarded(SelfCorrectingModel(PLAN, "ok"), reg, store=store, session_id="s2")
    assert desk.refunds == [] and other.tool_events[-1].error_code == "NEEDS_APPROVAL"
    # fixed backend, approved again: it runs exactly once
    down["on"] = False
    again = approve(store, reg, held)
    assert again.ran and again.approval.state == "approved" and len(desk.refunds) == 1
    assert not approve(store, reg, held).ran and len(desk.refunds) == 1 and pending(store) == []


# --- 5 and 9. whatever the model sends, the run ends with a status ---------------------------
def test_a_lone_surrogate_is_a_readable_argument_error_not_a_crash():
    desk, reg = aftersales.SCENARIO.setup()
    escaped = '{"summary": "upset \\ud800 help"}'           # the escape, as JSON text
    raw_char = '{"summary": "upset \ud800 help"}'            # the character itself
    for arguments in (escaped, raw_char):
        model = ScriptedModel([Reply(None, (ToolCall("escalate_to_human", arguments, "c1"),)), say("sorry")])
        run = guarded(model, reg, store=SQLiteStore())
        err = json.loads(run.tool_events[0].model_visible)["error"]
        assert err["code"] == "INVALID_ARGS" and err["problems"][0]["reason"] == "broken_text"
        assert run.status in STATUSES and desk.tickets == []
        json.dumps(list(run.messages), ensure_ascii=False).encode("utf-8")  # everything is storable text


class Raises:
    name = "raises"

    def __init__(self, exc):
        self.exc = exc

    def complete(self, messages, tools):
        raise self.exc


@pytest.mark.parametrize("exc", [ValueError("bad"), KeyError("choices"), AttributeError("x"), TypeError("y"),
                                 RuntimeError("secret sk-live-123 at /srv/app.py")])
def test_a_model_raising_anything_ends_the_run_with_a_status(exc):
    _desk, reg = aftersales.SCENARIO.setup()
    run = guarded(Raises(exc), reg)
    assert run.status == "escalated" and run.events[-1].error_code == "MODEL_ERROR"
    assert "sk-live" not in run.answer and "Traceback" not in run.answer


@pytest.mark.parametrize("reply", [
    Reply(None, (ToolCall(None, '{"order_id": "A1001"}', "c1"),)),
    Reply(None, (ToolCall("get_order", None, "c1"),)),
    Reply(None, (ToolCall(None, None, None),)),
    Reply(12345),
    None,
    "not a reply at all",
])
def test_malformed_replies_never_raise(reply):
    _desk, reg = aftersales.SCENARIO.setup()

    class Odd:
        name = "odd"

        def complete(self, messages, tools):
            return reply

    run = guarded(Odd(), reg, config=GuardConfig(step_budget=3))
    assert run.status in STATUSES and run.status != "failed" and run.steps <= 3


def test_retry_after_is_honoured_and_a_too_long_one_tells_the_user_when():
    _desk, reg = aftersales.SCENARIO.setup()
    waits = []
    run = run_guarded(ScriptedModel([ModelError("RATE_LIMITED", retry_after=20), say("ok")]), reg, "hi",
                      sleep=waits.append)
    assert run.status == "done" and waits == [20]  # never sooner than the server asked
    run = run_guarded(ScriptedModel([ModelError("RATE_LIMITED", retry_after=600), say("ok")]), reg, "hi",
                      sleep=waits.append)
    assert run.status == "escalated" and waits == [20] and "600 seconds" in run.answer
    assert run.events[-1].error_code == "RATE_LIMITED"


# --- the fuzz: 10,000 hostile reply sequences, every guard subset -----------------------------
NAMES = ["get_order", "search_orders", "create_refund", "escalate_to_human", "nope", "", None,
         "refund\ud800", "x" * 5000]
STRINGS = ["", "A1001", "199元", "\ud83d", "a." * 3000, "SELECT * FROM orders WHERE 1;" * 20, "null", "{", None]


def hostile_reply(rng: random.Random):
    roll = rng.random()
    if roll < 0.12:
        return ModelError(rng.choice(["RATE_LIMITED", "TIMEOUT", "UNAVAILABLE", "UNAUTHENTICATED", "BAD_REQUEST"]),
                          retry_after=rng.choice([None, 0.5, 20.0, 3600.0]))
    if roll < 0.18:
        return rng.choice([ValueError("boom"), KeyError("k"), RuntimeError("db at 10.0.0.5 password=x"), None])
    if roll < 0.3:
        return Reply(rng.choice([*STRINGS, 3, ["list"]]))
    calls = []
    for i in range(rng.choice([1, 1, 1, 2, 3])):
        name = rng.choice(NAMES)
        shape = rng.random()
        if shape < 0.5:
            args = json.dumps({rng.choice(["order_id", "orderId", "amount", "reason", "phone", "summary"]):
                               rng.choice([*STRINGS, 199, 199.0, -1, True, [], {}]) for _ in range(rng.randint(0, 4))})
        elif shape < 0.7:
            args = json.dumps({"order_id": "A1001", "amount": rng.choice([199, 5, 2499.0]), "reason": "user_cancel"})
        else:
            args = rng.choice([*STRINGS, {"order_id": "A1001"}])
        calls.append(ToolCall(name, args, rng.choice([f"c{i}", None, ""])))
    return Reply(rng.choice([None, "", "thinking"]), tuple(calls))


class Hostile:
    """Plays a random sequence; an item that is an exception is raised, anything else returned as is."""

    name = "hostile"

    def __init__(self, items):
        self.items, self.n = items, 0

    def complete(self, messages, tools):
        item = self.items[self.n] if self.n < len(self.items) else Reply("the end")
        self.n += 1
        if isinstance(item, BaseException):
            raise item
        return item


def test_ten_thousand_hostile_sequences_end_within_budget_and_never_raise():
    rng = random.Random(20261130)
    switchable = [g for g in GUARDS if g not in ("step_budget", "timeout")]
    outcomes: dict[str, int] = {}
    for _ in range(10_000):
        desk, reg = aftersales.SCENARIO.setup()
        budget = rng.randint(1, 6)
        off = rng.sample(switchable, rng.randint(0, 3)) if rng.random() < 0.5 else []
        config = GuardConfig(step_budget=budget, timeout=None).without(*off)
        items = [hostile_reply(rng) for _ in range(rng.randint(0, 8))]
        run = run_guarded(Hostile(items), reg, "help", config=config, store=MemoryStore(), sleep=lambda s: None)
        assert run.status in STATUSES and run.status != "failed" and run.steps <= budget
        assert run.events[-1].kind == "end"
        if "idempotency" not in off and "validate" not in off:
            assert len(desk.refunds) <= 1  # one order, one refund, whatever the model sends
        json.dumps(list(run.messages), ensure_ascii=False).encode("utf-8")
        outcomes[run.status] = outcomes.get(run.status, 0) + 1
    assert sum(outcomes.values()) == 10_000 and len(outcomes) >= 3, outcomes


# --- found by an attacker's review of the above (each failed before its fix) ---------------------
def _swap(reg, name, fn):
    return Registry([t if t.name != name else replace(t, fn=fn) for t in reg])


R = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}


class _BadStr:
    def __str__(self):
        raise RuntimeError("no str")


@pytest.mark.parametrize("value", [_BadStr(), {(1, 2): "x"}, {"note": "half \ud83d"}, {1, 2}, b"bytes",
                                   {"x": float("nan")}])
def test_whatever_a_write_returns_is_stored_and_told_never_raised(value):
    desk, reg = aftersales.SCENARIO.setup()

    def refund(**kw):
        desk.create_refund(**kw)
        return value

    store = SQLiteStore()
    run = guarded(ScriptedModel([call("create_refund", R), say("ok")]), _swap(reg, "create_refund", refund), store=store)
    assert run.status == "done" and len(desk.refunds) == 1
    json.loads(run.tool_events[0].model_visible)  # valid JSON, whatever came back
    again = guarded(ScriptedModel([call("create_refund", R), say("ok")]), _swap(reg, "create_refund", refund),
                    store=store)
    assert again.tool_events[0].replayed and again.tool_events[0].model_visible.replace(', "replayed": true', "") \
        == run.tool_events[0].model_visible and len(desk.refunds) == 1


def test_a_business_rule_that_fails_itself_frees_the_key_and_says_so():
    desk, reg = aftersales.SCENARIO.setup()
    store, orig = SQLiteStore(), desk._order
    desk._order = lambda oid: (_ for _ in ()).throw(ConnectionError("db down"))
    run = guarded(ScriptedModel([call("create_refund", R), say("ok")]), reg, store=store, config=GuardConfig(lease=0.2))
    assert run.tool_events[0].error_code == "UNAVAILABLE" and store.unknown() == []
    desk._order = orig
    time.sleep(0.3)
    done = guarded(ScriptedModel([call("create_refund", R), say("ok")]), reg, store=store)
    assert done.status == "done" and len(desk.refunds) == 1


def test_two_customers_asking_in_the_same_words_get_two_tickets():
    desk, reg = aftersales.SCENARIO.setup()
    store, ask = SQLiteStore(), {"summary": "Customer wants a call back"}
    guarded(ScriptedModel([call("escalate_to_human", ask), say("ok")]), reg, store=store, session_id="alice")
    bob = guarded(ScriptedModel([call("escalate_to_human", ask), say("ok")]), reg, store=store, session_id="bob")
    assert len(desk.tickets) == 2 and not bob.tool_events[0].replayed
    guarded(ScriptedModel([call("escalate_to_human", ask), say("ok")]), reg, store=store, session_id="bob")
    assert len(desk.tickets) == 2  # bob asking again in his session is the same intent


def test_a_keyed_write_that_lands_after_its_timeouts_is_replayed_not_refused():
    desk, reg = aftersales.SCENARIO.setup()
    store = SQLiteStore()

    def slow(**kw):
        time.sleep(0.3)
        return desk.create_refund(**kw)

    reg2 = _swap(reg, "create_refund", slow)
    first = guarded(ScriptedModel([call("create_refund", R), say("?")]), reg2, store=store,
                    config=GuardConfig(timeout=0.1))
    assert first.tool_events[0].error_code == "OUTCOME_UNKNOWN"  # still running after its resends: never "retry"
    time.sleep(0.6)
    again = guarded(ScriptedModel([call("create_refund", R), say("ok")]), reg2, store=store,
                    config=GuardConfig(timeout=0.1))
    assert again.tool_events[0].replayed and again.status == "done" and len(desk.refunds) == 1


def test_every_call_of_a_message_is_answered_even_after_one_ends_the_turn():
    desk, reg = aftersales.SCENARIO.setup()
    big = {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"}
    run = guarded(ScriptedModel([tool_calls(call("create_refund", big, id="c1"),
                                            call("escalate_to_human", {"summary": "angry customer, call back"}, id="c2")),
                                 say("x")]), reg, store=SQLiteStore())
    answered = [m["tool_call_id"] for m in run.messages if m["role"] == "tool"]
    assert answered == ["c1", "c2"] and json.loads(run.messages[-1]["content"])["error"]["code"] == "NOT_RUN"
    assert desk.tickets == []


def test_a_person_cannot_resolve_a_call_that_is_still_running():
    store = MemoryStore(clock=lambda: 0.0)
    store.claim("k", "a", lease=10)
    assert not resolve(store, "k", happened=False) and store.claim("k", "a").status == "in_flight"


def test_approve_rechecks_the_rules_and_a_wrong_registry_leaves_the_call_waiting():
    desk, reg = aftersales.SCENARIO.setup()
    store = SQLiteStore()
    run = guarded(SelfCorrectingModel(PLAN, "ok"), reg, store=store)
    (held,) = run.pending
    with pytest.raises(KeyError):
        approve(store, reg.subset(["get_order"]), held)
    assert [a.id for a in pending(store)] == [held]
    desk.orders["A1003"]["status"] = "shipped"  # the world changed while the call waited
    d = approve(store, reg, held)
    assert not d.ran and d.error.code == "RULE_VIOLATION" and desk.refunds == []


@pytest.mark.parametrize("reply", [Reply(None, 5), Reply("hi", (), "x"), Reply(_BadStr()),
                                   Reply(None, (ToolCall("get_order", {"s": {1, 2}}, "c1"),)),
                                   Reply(None, (ToolCall("get_order", '{"order_id": "A1001"}', "same"),
                                                ToolCall("get_order", '{"order_id": "A1002"}', "same")))])
def test_replies_of_any_shape_end_with_a_status(reply):
    _desk, reg = aftersales.SCENARIO.setup()

    class Odd:
        name = "odd"

        def complete(self, messages, tools):
            return reply

    run = guarded(Odd(), reg, config=GuardConfig(step_budget=2))
    assert run.status in STATUSES and run.status != "failed"
    for m in run.messages:  # within a message, every call has its own id, so each answer names one call
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            assert len(ids) == len(set(ids))


def test_a_model_raising_a_base_exception_ends_the_run():
    import asyncio
    _desk, reg = aftersales.SCENARIO.setup()
    for exc in (asyncio.CancelledError(), GeneratorExit(), type("Odd", (BaseException,), {})()):
        assert guarded(Raises(exc), reg).events[-1].error_code == "MODEL_ERROR"


def test_a_dead_model_is_not_a_correct_hand_over():
    from agentlab.evals import load_cases, run_suite

    class Dead:
        name = "dead"

        def complete(self, messages, tools):
            raise ModelError("UNAUTHENTICATED", "401 bad key")

    passed = [r.case_id for r in run_suite(load_cases(), model=lambda c, t: Dead()) if r.passed]
    assert passed == ["adv-bad-key"]  # only the case that is about a bad key expects that hand-over


def test_an_approved_call_that_outlived_its_timeout_is_told_when_it_lands():
    desk, reg = aftersales.SCENARIO.setup()
    store = SQLiteStore()

    def slow(**kw):
        time.sleep(0.3)
        return desk.create_refund(**kw)

    slow_reg = _swap(reg, "create_refund", slow)
    run = guarded(SelfCorrectingModel(PLAN, "ok"), slow_reg, store=store, session_id="s9")
    d = approve(store, slow_reg, run.pending[0], config=GuardConfig(timeout=0.05))
    assert not d.ran and d.approval.state == "unknown"  # not "failed" (it may land), and never silently gone
    assert [a.id for a in pending(store)] == [run.pending[0]] and run.pending[0] in store.unknown()
    time.sleep(0.5)
    model = ScriptedModel(["ok"])
    guarded(model, slow_reg, "done?", store=store, session_id="s9", history=list(run.messages))
    note = json.loads([m["content"] for m in model.calls[0].messages if m["role"] == "system"][-1])
    assert note["ok"] is True and note["approved"] is True and len(desk.refunds) == 1
    assert pending(store) == [] and store.get_approval(run.pending[0]).state == "approved"


@pytest.mark.parametrize("rules", [False, True])
def test_an_approval_is_for_one_execution_not_a_standing_permission(rules):
    """A repeat of the approved call gets its recorded result, with no rule to lean on, and with the desk's rules and
    limits (which the approved refund itself now fails: nothing is left to refund) never judging it again."""
    desk, reg = aftersales.SCENARIO.setup()
    if not rules:
        reg = Registry([replace(t, check=None, limits=None) if t.name == "create_refund" else t for t in reg])
    store = SQLiteStore()
    no_keys = GuardConfig(idempotency=False)
    big = {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"}
    run = guarded(ScriptedModel([call("create_refund", big), say("held")]), reg, store=store, config=no_keys)
    approve(store, reg, run.pending[0], config=no_keys)
    again = guarded(ScriptedModel([call("create_refund", big), say("ok")]), reg, store=store, config=no_keys)
    assert again.tool_events[0].replayed and len(desk.refunds) == 1
