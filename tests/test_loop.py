"""Every fault through both loops: status, invalid calls, and the final state of the orders."""
import json
import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlab.guards import GUARDS, GuardConfig
from agentlab.loop import run_guarded
from agentlab.models import ModelError, ScriptedModel, SelfCorrectingModel, call, say, tool_calls
from agentlab.models.faults import FAULTS
from agentlab.naive import run_naive
from agentlab.runs import STATUSES
from agentlab.scenarios import aftersales
from agentlab.store import MemoryStore
from agentlab.workbook.demo import compare_loops, seed_demo_model


def setup(lang="en"):
    return aftersales.SCENARIO.setup(lang)


def guarded(model, reg, task="Refund A1001", **kw):
    kw.setdefault("sleep", lambda s: None)
    return run_guarded(model, reg, task, **kw)


def test_the_opening_demo_replays():
    _desk, reg = setup()
    model = seed_demo_model()
    run = guarded(model, reg)
    tools = run.tool_events
    assert [e.error_code for e in tools] == ["INVALID_ARGS", None]
    first = json.loads(tools[0].model_visible)["error"]
    assert {(p["field"], p["reason"]) for p in first["problems"]} == {("order_id", "missing"), ("orderId", "unknown_field")}
    assert run.status == "done_after_self_correction" and run.steps == 3
    model.assert_used()


# (fault, naive status, guarded status, naive refunds, guarded refunds)
EXPECTED = [
    ("camel_case", "budget_exhausted", "done_after_self_correction", 0, 1),
    ("drop_required", "budget_exhausted", "done_after_self_correction", 0, 1),
    ("wrong_type", "done", "done_after_self_correction", 1, 1),
    ("amount_in_words", "done", "done_after_self_correction", 1, 1),
    ("out_of_enum", "done", "done_after_self_correction", 1, 1),
    ("out_of_range", "done", "done_after_self_correction", 1, 1),
    ("truncated_json", "failed", "done_after_self_correction", 0, 1),
    ("unknown_tool", "failed", "done_after_self_correction", 0, 1),
    ("duplicate_call", "done", "done", 2, 1),
    ("parallel_call", "done", "done", 1, 1),
    ("api_429", "failed", "done", 0, 1),
    ("api_timeout", "failed", "done", 0, 1),
    ("api_500", "failed", "done", 0, 1),
    ("api_401", "failed", "escalated", 0, 0),
    ("flaky_tool", "done", "done", 1, 1),
    ("hanging_tool", "done", "done", 1, 1),
    ("leaky_tool", "done", "escalated", 1, 0),
    ("lost_reply", "done", "done", 2, 1),
    ("repeat_call", "budget_exhausted", "escalated", 11, 1),  # the breaker stops the third; naive: only its cap
    ("ping_pong", "budget_exhausted", "budget_exhausted", 0, 0),  # new arguments each turn: only the step budget
]


def test_every_fault_is_covered():
    assert sorted(f for f, *_ in EXPECTED) == sorted(FAULTS)


@pytest.mark.parametrize("fault,naive_status,guarded_status,naive_refunds,guarded_refunds", EXPECTED)
def test_fault_through_both_loops(fault, naive_status, guarded_status, naive_refunds, guarded_refunds):
    c = compare_loops(fault, hang_seconds=0.3)
    assert (c.naive.status, c.guarded.status) == (naive_status, guarded_status)
    assert (len(c.naive_state["refunds"]), len(c.guarded_state["refunds"])) == (naive_refunds, guarded_refunds)
    # never a double refund in the guarded loop, and only ever the right amount
    for r in c.guarded_state["refunds"]:
        assert r == {**r, "order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
    assert c.guarded.status in STATUSES and c.guarded.steps <= 6


def test_naive_damage_is_shown_not_hidden():
    c = compare_loops("wrong_type")
    assert c.naive_state["refunds"][0]["amount"] == "199元"  # the backend stored text as money
    c = compare_loops("lost_reply")
    assert sum(r["amount"] for r in c.naive_state["refunds"]) == 398.0
    c = compare_loops("leaky_tool")
    leaked = " ".join(e.model_visible or "" for e in c.naive.tool_events)
    assert "S3cr3t" in leaked and "Traceback" in leaked


def test_a_leak_names_its_own_desks_tool():
    """The bookkeeping desk's backend leaked the refund desk's account and table ("svc_refund", "FROM orders"), data
    that desk's reader meets nowhere else: a leak is made of the failing tool's own names."""
    from agentlab.workbook.demo import compare_expense, compare_retail
    for c, tool in ((compare_expense("leaky_tool"), "book_expense_record"),
                    (compare_retail("leaky_tool"), "get_order_details"), (compare_loops("leaky_tool"), "get_order")):
        leaked = " ".join(e.model_visible or "" for e in c.naive.tool_events if e.error_code)
        assert "S3cr3t" in leaked and f"svc_{tool}:" in leaked and f"FROM {tool} " in leaked, leaked
        assert "refund" not in leaked and "orders" not in leaked, leaked


def test_no_model_visible_message_leaks():
    for fault in FAULTS:
        c = compare_loops(fault, hang_seconds=0.3)
        for m in c.guarded.messages:
            text = m.get("content") or ""
            if m["role"] in ("tool", "system"):
                for secret in ("S3cr3t", "db-prod.internal", "Traceback", "/srv/", "SELECT", "postgresql://", "5432"):
                    assert secret not in text, (fault, text)


def test_naive_runs_only_the_first_call_and_drops_the_rest():
    desk, reg = setup()
    model = ScriptedModel([tool_calls(call("get_order", {"order_id": "A1001"}), call("escalate_to_human", {"summary": "user wants a manager"})),
                           say("Done.")])
    run = run_naive(model, reg, "x")
    assert run.status == "done" and desk.tickets == [] and run.tool_calls == 1
    desk, reg = setup()
    model = ScriptedModel([tool_calls(call("get_order", {"order_id": "A1001"}), call("escalate_to_human", {"summary": "user wants a manager"})),
                           say("Done.")])
    run = guarded(model, reg)
    assert run.status == "done" and len(desk.tickets) == 1 and run.tool_calls == 2
    ids = [m["tool_call_id"] for m in run.messages if m["role"] == "tool"]
    assert len(ids) == len(set(ids)) == 2


def test_naive_crash_is_an_outcome():
    _desk, reg = setup()
    run = run_naive(ScriptedModel([call("get_order", '{"order_id": "A1001"')]), reg, "x")
    assert run.status == "failed" and "JSONDecodeError" in run.reason


def test_self_correction_budget_escalates():
    _desk, reg = setup()
    bad = [call("get_order", {"orderId": "A1001"}) for _ in range(5)]
    run = guarded(ScriptedModel(bad), reg)
    assert run.status == "escalated" and run.invalid_calls == 3 and "corrections" in run.reason
    run = guarded(ScriptedModel([*bad[:3], say("x")]), setup()[1], config=GuardConfig(self_correction=None))
    assert run.status == "done"  # unlimited re-asks when the budget is off


def test_repeated_call_breaker_on_the_third():
    _desk, reg = setup()
    same = [call("get_order", {"order_id": "A1001"}) for _ in range(4)]
    run = guarded(ScriptedModel(same), reg)
    assert run.status == "escalated" and run.tool_events[-1].error_code == "LOOP_DETECTED" and run.steps == 3


def test_ping_pong_hits_the_step_budget():
    _desk, reg = setup()
    ping = [call("get_order", {"order_id": f"A10{i:02d}"}) if i % 2 else call("search_orders", {"phone": f"138001380{i:02d}"})
            for i in range(1, 20)]
    run = guarded(ScriptedModel(ping, then="x"), reg)
    assert run.status == "budget_exhausted" and run.steps == 6
    run = guarded(ScriptedModel(ping, then="x"), setup()[1], config=GuardConfig(step_budget=3))
    assert run.steps == 3


def test_timeout_and_retry_schedule_are_injected():
    _desk, reg = setup()
    waits = []
    model = ScriptedModel([ModelError("RATE_LIMITED", retry_after=1.5), ModelError("UNAVAILABLE"), say("ok")])
    run = guarded(model, reg, sleep=waits.append, rng=random.Random(1))
    assert run.status == "done" and len(waits) == 2 and waits[0] >= 1.5 and run.retries == 2
    waits2 = []
    guarded(ScriptedModel([ModelError("RATE_LIMITED", retry_after=1.5), ModelError("UNAVAILABLE"), say("ok")]),
            setup()[1], sleep=waits2.append, rng=random.Random(1))
    assert waits == waits2  # reproducible from the seed


def test_transient_errors_give_up_after_the_cap():
    _desk, reg = setup()
    model = ScriptedModel([ModelError("UNAVAILABLE")] * 3)
    run = guarded(model, reg)
    assert run.status == "escalated" and run.retries == 2
    assert "busy" in run.answer


def test_fatal_model_error_is_not_retried_and_user_sees_friendly_text():
    for lang, word in (("en", "configuration"), ("zh", "权限")):
        run = guarded(ScriptedModel([ModelError("UNAUTHENTICATED", "401 bad key sk-abcdefghijkl")]), setup(lang)[1], lang=lang)
        assert run.status == "escalated" and run.retries == 0 and word in run.answer and "sk-" not in run.answer


def test_side_effect_tools_without_a_key_are_not_resent():
    desk, reg = setup()
    from agentlab.models.faults import inject_tool_fault
    reg = inject_tool_fault(reg, "escalate_to_human", "flaky_tool")
    run = guarded(ScriptedModel([call("escalate_to_human", {"summary": "please call the user"}), say("ok")]), reg)
    e = run.tool_events[0]
    # not keyed: a reset connection may have handed over already, so it is neither resent nor "retryable"
    assert e.error_code == "OUTCOME_UNKNOWN" and e.retry_count == 0
    assert '"retryable": false' in e.model_visible and run.status == "escalated"
    assert len(desk.tickets) == 0  # flaky_tool failed before the inner call: nothing happened, yet nobody resent it


def test_each_guard_switches_off():
    c_on = compare_loops("duplicate_call")
    c_off = compare_loops("duplicate_call", config=GuardConfig().without("idempotency"))
    assert len(c_on.guarded_state["refunds"]) == 1
    # without idempotency the backend's own rule still refuses the second refund (the order is refunded now)
    assert c_off.guarded.tool_events[-1].error_code == "RULE_VIOLATION"
    c = compare_loops("camel_case", config=GuardConfig(readable_errors=False))
    assert all(m["content"] == "Error: 500 internal error" for m in c.guarded.messages if m["role"] == "tool" and "ok\": true" not in m["content"])
    assert c.guarded.status != "done_after_self_correction"
    with pytest.raises(ValueError):
        GuardConfig().without("seatbelt")
    assert GuardConfig().label == "all guards" and "retry" in GuardConfig().without("retry").label


def test_cleaning_turns_45_yuan_into_a_number():
    c = compare_loops("wrong_type", config=GuardConfig(clean=True))
    assert c.guarded.status == "done" and c.guarded.invalid_calls == 0
    assert '"cleaned"' in next(e.model_visible for e in c.guarded.tool_events if e.tool_name == "create_refund")


def test_business_rules_block_shipped_orders_and_large_amounts():
    desk, reg = setup()
    run = guarded(ScriptedModel([call("create_refund", {"order_id": "A1002", "amount": 10, "reason": "user_cancel"})]), reg)
    assert run.status == "escalated" and run.tool_events[0].error_stage == "rule_blocked" and desk.refunds == []
    desk, reg = setup()
    model = SelfCorrectingModel([("create_refund", {"order_id": "A1001", "amount": 500, "reason": "user_cancel"})], "x")
    run = guarded(model, reg)
    assert run.tool_events[0].error_stage == "semantic" and desk.refunds == []


def test_conflicting_second_refund_is_refused():
    desk, reg = setup()
    store = MemoryStore()
    guarded(ScriptedModel([call("create_refund", {"order_id": "A1001", "amount": 100, "reason": "user_cancel"}), say("ok")]),
            reg, store=store)
    run = guarded(ScriptedModel([call("create_refund", {"order_id": "A1001", "amount": 99, "reason": "user_cancel"})]),
                  reg, store=store)
    assert run.tool_events[0].error_code == "CONFLICT" and len(desk.refunds) == 1
    run = guarded(ScriptedModel([call("create_refund", {"order_id": "A1001", "amount": 100.0, "reason": "user_cancel"}), say("ok")]),
                  reg, store=store)
    assert run.tool_events[0].replayed and '"replayed": true' in run.tool_events[0].model_visible and len(desk.refunds) == 1


replies = st.one_of(
    st.builds(say, st.text(max_size=20)),
    st.builds(lambda n, a: tool_calls(call(n, a)),
              st.sampled_from(["get_order", "search_orders", "create_refund", "escalate_to_human", "nope"]),
              st.one_of(st.text(max_size=30),
                        st.dictionaries(st.sampled_from(["order_id", "orderId", "amount", "reason", "phone", "summary"]),
                                        st.one_of(st.integers(), st.text(max_size=8), st.floats(allow_nan=False), st.booleans(), st.none()),
                                        max_size=4).map(json.dumps))),
    st.builds(lambda c, r: ModelError(c, retry_after=r), st.sampled_from(["RATE_LIMITED", "TIMEOUT", "UNAVAILABLE", "UNAUTHENTICATED", "BAD_REQUEST"]),
              st.one_of(st.none(), st.floats(0, 5))),
    st.builds(lambda a, b: tool_calls(a, b), st.just(call("get_order", {"order_id": "A1001"})),
              st.just(call("create_refund", {"order_id": "A1001", "amount": 5, "reason": "user_cancel"}))),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(replies, max_size=10), st.integers(1, 8),
       st.sets(st.sampled_from([g for g in GUARDS if g not in ("step_budget", "timeout")])))
def test_any_reply_sequence_ends_in_a_terminal_status(script, budget, off):
    """Whatever the model says, and whichever guards are off, the guarded loop ends and never raises."""
    desk, reg = setup()
    config = replace(GuardConfig(step_budget=budget, timeout=None).without(*off))
    run = guarded(ScriptedModel(script, then="the end"), reg, config=config)
    assert run.status in STATUSES and run.status != "failed"
    assert run.steps <= budget
    if not {"idempotency", "validate"} & off:
        assert len(desk.refunds) <= 1
    assert run.events[-1].kind == "end" and all(e.final_status == run.status for e in run.events)


def test_with_every_guard_off_the_hard_cap_still_ends_the_run_at_fifty():
    from agentlab.guards import HARD_CAP, NO_GUARDS
    _desk, reg = setup()
    run = guarded(ScriptedModel([], then=tool_calls(call("get_order", {"order_id": "A1001"}))), reg, config=NO_GUARDS)
    assert HARD_CAP == 50 and run.status == "budget_exhausted" and run.steps == 50 and run.tool_calls == 50


def test_a_write_runs_in_a_worker_thread_and_a_read_in_the_callers():
    import threading
    seen = {}
    _desk, reg = setup()

    def record(name, fn):
        def wrapped(**kw):
            seen[name] = threading.current_thread() is threading.main_thread()
            return fn(**kw)
        return wrapped

    from agentlab.tools import Registry
    reg = Registry([replace(t, fn=record(t.name, t.fn)) for t in reg])
    guarded(ScriptedModel([call("get_order", {"order_id": "A1001"}),
                           call("escalate_to_human", {"summary": "call back"}), say("ok")]), reg)
    assert seen == {"get_order": True, "escalate_to_human": False}


def test_a_budget_of_zero_reasks_is_still_a_guard():
    assert GuardConfig(self_correction=0).label == "all guards"
    assert GuardConfig(self_correction=None).label == "without self_correction"


class _StoreDown(MemoryStore):
    """A shared store that cannot be reached (Redis restarting): every call raises."""

    def __init__(self, *, fail_on=("claim", "add_approval", "approvals"), **kw):
        super().__init__(**kw)
        self.fail_on = fail_on

    def __getattribute__(self, name):
        if name in object.__getattribute__(self, "fail_on"):
            def down(*a, **k):
                raise ConnectionError("Error 111 connecting to 10.1.2.3:6379. Connection refused. password=hunter2")
            return down
        return object.__getattribute__(self, name)


def test_a_store_that_is_down_runs_nothing_and_says_so_plainly():
    desk, reg = aftersales.SCENARIO.setup()
    refund = call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})
    run = run_guarded(ScriptedModel([refund, say("sorry")]), reg, "refund", store=_StoreDown(), sleep=lambda s: None)
    assert desk.refunds == [] and run.status != "failed"
    told = run.tool_events[0].model_visible
    assert "UNAVAILABLE" in told and "10.1.2.3" not in told and "hunter2" not in told


def test_a_store_that_fails_after_the_effect_keeps_the_result_and_never_raises():
    desk, reg = aftersales.SCENARIO.setup()
    refund = call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})
    run = run_guarded(ScriptedModel([refund, say("done")]), reg, "refund", store=_StoreDown(fail_on=("finish",)),
                      sleep=lambda s: None)
    assert len(desk.refunds) == 1 and run.status == "done" and "could not be recorded" in run.tool_events[0].note


# --- budgets per message and per run: calls in one reply, wall-clock deadline ------------------------------
from agentlab.i18n import t as _t  # noqa: E402
from agentlab.models import Reply, ToolCall  # noqa: E402
from agentlab.tools import Registry, Tool  # noqa: E402


def _writes_registry(done: list):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
    return Registry([Tool("write", "Write one record.", schema, fn=lambda n: done.append(n) or {"written": n},
                          side_effect=True)])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_hundred_writes_in_one_reply_run_at_most_the_cap(lang):
    done: list = []
    reg = _writes_registry(done)
    hundred = tool_calls(*[call("write", {"n": i}) for i in range(100)])
    cap = GuardConfig().max_calls_per_turn
    run = guarded(ScriptedModel([hundred, say("ok")]), reg, "write them", store=MemoryStore(), lang=lang)
    assert done == list(range(cap)) and run.status == "done"
    answers = [json.loads(m["content"]) for m in run.messages if m["role"] == "tool"]
    assert len(answers) == 100  # every call is answered, so the next request is valid
    refused = [a["error"] for a in answers[cap:]]
    assert {e["code"] for e in refused} == {"NOT_RUN"}
    assert refused[0]["message"] == _t("NOT_RUN.too_many_calls", lang, limit=cap)
    assert refused[0]["hint"] == _t("hint.too_many_calls", lang, limit=cap)
    off = guarded(ScriptedModel([hundred, say("ok")]), _writes_registry(done := []), "write them",
                  store=MemoryStore(), config=GuardConfig().without("max_calls_per_turn"))
    assert len(done) == 100 and off.status == "done"


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _SlowModel:
    """Each answer takes ``seconds`` on the injected clock."""

    name = "slow"

    def __init__(self, clock, seconds, replies):
        self.clock, self.seconds, self.replies = clock, seconds, list(replies)

    def complete(self, messages, tools):
        self.clock.now += self.seconds
        return self.replies.pop(0)


def test_a_slow_model_ends_the_run_at_its_deadline_and_nothing_more_is_started():
    done: list = []
    clock = _Clock()
    replies = [tool_calls(call("write", {"n": i}), call("write", {"n": i + 100})) for i in range(10)]
    model = _SlowModel(clock, 50.0, replies)
    run = guarded(model, _writes_registry(done), "write", store=MemoryStore(), clock=clock,
                  config=GuardConfig(run_deadline=120.0, step_budget=10))
    assert run.status == "budget_exhausted" and "deadline of 120 s" in run.reason
    assert done == [0, 100, 1, 101] and clock.now == 150.0  # the third reply came after the deadline: not run
    assert not protocol_problems_of(run)
    assert run.answer == _t("friendly.deadline", "en")
    assert run.events[-1].error_code == "BUDGET_EXHAUSTED"


def protocol_problems_of(run):
    from agentlab.context import protocol_problems
    return protocol_problems(list(run.messages))


def test_no_resend_waits_past_the_deadline():
    clock = _Clock()
    slept: list = []
    model = ScriptedModel([ModelError("UNAVAILABLE", "down"), say("late")])
    run = guarded(model, _writes_registry([]), clock=clock, sleep=slept.append, store=MemoryStore(),
                  config=GuardConfig(run_deadline=0.001))
    assert run.status == "budget_exhausted" and slept == []


@pytest.mark.parametrize("thread", ["main", "worker"])
def test_a_model_that_never_answers_is_waited_for_only_until_the_deadline(thread):
    import threading
    release = threading.Event()

    class Stuck:
        name = "stuck"

        def complete(self, messages, tools):
            release.wait(30)  # far longer than the deadline; released when the test ends
            return say("too late")

    out: list = []
    go = lambda: out.append(guarded(Stuck(), _writes_registry([]), store=MemoryStore(), clock=_Clock(),  # noqa: E731
                                    config=GuardConfig(run_deadline=0.05)))
    try:
        if thread == "main":
            go()
        else:
            worker = threading.Thread(target=go)
            worker.start()
            worker.join(20)
    finally:
        release.set()
    assert out and out[0].status == "budget_exhausted" and "waiting for the model" in out[0].reason


def test_the_deadline_is_a_guard_that_can_be_switched_off():
    assert GuardConfig().without("run_deadline").run_deadline is None
    assert "run_deadline" in GUARDS and "max_calls_per_turn" in GUARDS
    clock = _Clock()
    run = guarded(_SlowModel(clock, 1000.0, [say("fine")]), _writes_registry([]), clock=clock, store=MemoryStore(),
                  config=GuardConfig().without("run_deadline"))
    assert run.status == "done"


def test_a_model_that_raises_timeout_error_itself_is_a_model_error_not_the_deadline():
    class Raises:
        name = "raises"

        def complete(self, messages, tools):
            raise TimeoutError("my own")

    run = guarded(Raises(), _writes_registry([]), store=MemoryStore())
    assert run.status == "escalated" and "MODEL_ERROR" in run.reason


def test_a_surrogate_in_a_call_id_and_list_of_parts_content_are_made_safe_at_the_boundary():
    class Odd:
        name = "odd"

        def __init__(self):
            self.replies = [Reply(None, (ToolCall("write", '{"n": 1}', "call_\ud800"),)),
                            Reply([{"type": "text", "text": "all "}, {"type": "text", "text": "done"}])]  # type: ignore[arg-type]

        def complete(self, messages, tools):
            json.dumps(messages, ensure_ascii=False).encode("utf-8")  # what an HTTP client does with the history
            return self.replies.pop(0)

    run = guarded(Odd(), _writes_registry([]), store=MemoryStore())
    assert run.status == "done" and run.answer == "all done"


# --- the tool resend path honours the longest wait, like the model path ------------------------------------
from agentlab.errors import ToolFailure  # noqa: E402
from agentlab.retry import RetryPolicy  # noqa: E402


def _busy_registry(calls: list, retry_after):
    """One read tool that is always rate limited and asks to be left alone for ``retry_after`` seconds."""
    def lookup(q):
        calls.append(q)
        raise ToolFailure("RATE_LIMITED", retry_after=retry_after)
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False}
    return Registry([Tool("lookup", "Look a thing up.", schema, fn=lookup)])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tool_asking_for_a_longer_wait_than_allowed_is_not_waited_for_and_says_when(lang):
    calls: list = []
    slept: list = []
    run = guarded(ScriptedModel([call("lookup", {"q": "x"}), say("later")]), _busy_registry(calls, 3600), "look",
                  sleep=slept.append, store=MemoryStore(), lang=lang, rng=random.Random(0))
    assert slept == [] and calls == ["x"]  # not an hour's sleep, and not sent again
    told = json.loads(run.tool_events[0].model_visible)["error"]
    assert told["code"] == "RATE_LIMITED" and told["retry_after"] == 3600
    assert told["message"] == _t("RATE_LIMITED.too_long", lang, seconds=3600)  # why it was not resent
    assert told["hint"] == _t("hint.transient_after", lang, seconds=3600)  # when to come back
    assert run.tool_events[0].retry_count == 0 and run.status == "done"


@pytest.mark.parametrize("retry_after,resent", [(2, True), (30, True), (30.001, False), (3600, False)])
def test_a_tool_is_resent_only_within_the_longest_wait_and_never_sooner_than_asked(retry_after, resent):
    calls: list = []
    slept: list = []
    policy = RetryPolicy(max_retries=2, longest_wait=30.0)
    guarded(ScriptedModel([call("lookup", {"q": "x"}), say("later")]), _busy_registry(calls, retry_after), "look",
            sleep=slept.append, store=MemoryStore(), config=GuardConfig(retry=policy), rng=random.Random(0))
    if resent:
        assert len(calls) == 3 and len(slept) == 2 and all(s >= retry_after for s in slept)
    else:
        assert calls == ["x"] and slept == []


def test_without_a_store_each_run_gets_a_memory_store_of_its_own(monkeypatch):
    from agentlab.loop import default_store
    from agentlab.store import MemoryStore
    monkeypatch.delenv("AGENTLAB_STORE", raising=False)
    a, b = default_store(), default_store()
    assert isinstance(a, MemoryStore) and a is not b  # no SQLite database made per run, nothing shared
    monkeypatch.setenv("AGENTLAB_STORE", "sqlite://")
    assert type(default_store()).__name__ == "SQLiteStore"  # a store named by the environment is still honoured


def test_required_for_the_whole_run_accepts_the_closing_answer_once_the_booking_ran():
    """tool_choice="required" for a whole run used to re-ask even the answer after a booking that succeeded: the
    run ended budget_exhausted and the user read "could not finish". Once a call has run without error, the
    closing answer is text; before it, a text-only reply is still re-asked."""
    from agentlab.models import ScriptedModel, call, say
    from agentlab.scenarios import expense
    ledger, reg = expense.SCENARIO.setup("en")
    day = ledger.today().isoformat()
    book = call("book_expense_record", {"date": day, "item": "taxi", "amount": 45, "category": "transport"})
    model = ScriptedModel([say("Sure, one moment."), book, say("Booked: taxi, 45 yuan, today.")])
    run = guarded(model, reg, "今天坐出租车花了45元，记一笔", tool_choice="required",
                  config=GuardConfig(step_budget=expense.STEP_BUDGET))
    assert run.status == "done_after_self_correction" and run.answer == "Booked: taxi, 45 yuan, today."
    assert [e.error_code for e in run.tool_events] == ["WRONG_TOOL", None]  # the words before any work: re-asked
    assert len(ledger.snapshot()["records"]) == 1
    # a per-turn policy that says "required" still means this turn: its text is re-asked
    strict = ScriptedModel([book, say("Booked."), say("Booked."), say("Booked.")])
    run = guarded(strict, expense.SCENARIO.setup("en")[1], "book it", tool_choice=lambda m: "required")
    assert run.status == "escalated" and run.events[-1].error_code == "SELF_CORRECTION_EXHAUSTED"


def test_the_final_answer_can_be_written_by_a_separate_call_from_the_verified_results():
    """The refund desk's optional last step, off by default: a second model, no tools, reads only what the
    calls that ran returned (not the errors and re-asks before them) and writes what the user reads."""
    from agentlab.models import ModelError, ScriptedModel, say
    from agentlab.models.faults import FaultyModel
    from agentlab.workbook.demo import TASK, make_model
    writer = ScriptedModel([say("Your refund of 199 yuan for order A1001 is on its way back to your card.")])
    _desk, reg = setup()
    run = guarded(FaultyModel(make_model(), "camel_case", at_step=2), reg, TASK["en"], final_model=writer)
    assert run.status == "done_after_self_correction" and run.answer.startswith("Your refund of 199 yuan")
    assert run.messages[-1]["content"] == run.answer  # the history holds what the user read
    single = [e for e in run.events if e.kind == "model"][-2].model_visible
    assert single == "Done: order A1001 has been refunded 199.0 yuan to the original payment method."
    (sent,) = writer.calls
    assert sent.tools == ()  # no tools
    told = sent.messages[-1]["content"]
    assert "create_refund" in told and "INVALID_ARGS" not in told and "orderId" not in told
    assert [e.note for e in run.events if e.kind == "model"][-1] == "final answer written by a separate call"
    off = guarded(make_model(), setup()[1], TASK["en"])  # off by default: one call, its answer
    assert off.answer == single and sum(e.kind == "model" for e in off.events) == 3
    broken = ScriptedModel([ModelError("UNAUTHENTICATED", "401")])
    kept = guarded(make_model(), setup()[1], TASK["en"], final_model=broken)
    assert kept.status == "done" and kept.answer == single  # a failed writer never costs the user the answer
