"""One tool call of the guarded loop (agentlab/calls.py): what it computes, and how often."""
import time
from dataclasses import replace
from typing import Any

import pytest

import agentlab.jsonutil as jsonutil
from agentlab import Registry, Tool
from agentlab.errors import ToolFailure
from agentlab.i18n import t
from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, call, say, tool_calls
from agentlab.store import MemoryStore
from agentlab.store_types import digest

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
          "required": ["order_id", "amount"], "additionalProperties": False}


def test_a_keyed_write_makes_its_arguments_canonical_once(monkeypatch):
    """The repeat breaker, the idempotency key and the claim's fingerprint all read one canonical text:
    it was computed three times per write (twice per read), a sorted JSON dump each time."""
    made = []
    normalize = jsonutil.normalize

    def counting(value):
        if isinstance(value, dict) and "order_id" in value:
            made.append(value)
        return normalize(value)

    monkeypatch.setattr(jsonutil, "normalize", counting)
    done = []
    reg = Registry([Tool("refund", "Refund an order.", SCHEMA, side_effect=True, keyed=True,
                         fn=lambda idempotency_key=None, **a: done.append(idempotency_key) or {"refunded": a["amount"]}),
                    Tool("lookup", "Look up an order.", SCHEMA, fn=lambda **a: {"ok": True})])
    store = MemoryStore()
    for name, expected in (("refund", 1), ("lookup", 1)):
        made.clear()
        run = run_guarded(ScriptedModel([call(name, {"order_id": "A1", "amount": 2.0}), say("done")]), reg, "x",
                          store=store, session_id="s1")
        assert run.status == "done" and len(made) == expected, (name, len(made))
    # the key is still made of the canonical arguments, as their digest: it names records others read (#34)
    assert done == ["refund:s1:" + digest('{"amount":2,"order_id":"A1"}')]


def test_a_tools_http_429_is_resent_after_its_retry_after():
    """A tool whose HTTP client raised a 429 (httpx's HTTPStatusError, the openai client's errors: a response with a
    status and headers) is rate limited, resent no sooner than Retry-After; it was a fatal TOOL_ERROR before."""
    import types

    from agentlab.calls import CallContext, execute
    from agentlab.tools import Registry, Tool

    class HTTPError(Exception):
        def __init__(self, status, headers):
            super().__init__(f"HTTP {status}")
            self.response = types.SimpleNamespace(status_code=status, headers=headers)

    attempts, waits = [], []

    def quote(order_id):
        attempts.append(order_id)
        if len(attempts) == 1:
            raise HTTPError(429, {"retry-after": "3"})
        return {"price": 7}

    tool = Tool("quote", "A quote.", fn=quote)
    out = execute(tool, {"order_id": "A1"}, CallContext(Registry([tool]), sleep=waits.append), key="k")
    assert out.error is None and len(attempts) == 2 and waits and waits[0] >= 3.0
    unavailable = execute(Tool("q", "Q.", fn=lambda: (_ for _ in ()).throw(HTTPError(503, {}))), {},
                          CallContext(Registry(), sleep=waits.append), key="k2")
    assert unavailable.error.code == "UNAVAILABLE"


def test_a_read_that_still_hangs_in_its_worker_is_not_sent_again():
    """Off the main thread a read cannot be interrupted: it runs in a worker, and past its timeout it still runs.
    Resending it made three calls into a backend that was already stuck (the gateway, the adapters). Now one call,
    and the model hears TIMEOUT; a read interrupted in the main thread may still be resent."""
    import threading

    from agentlab import GuardConfig
    from agentlab.retry import RetryPolicy
    release, started = threading.Event(), []

    def stuck(**args):
        started.append(args)
        release.wait(20)
        return {"ok": True}

    reg = Registry([Tool("lookup", "Look up an order.", {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                          "required": ["order_id"]}, fn=stuck)])
    cfg = GuardConfig(timeout=0.2, retry=RetryPolicy(max_retries=3, base=0.01, cap=0.01))
    out = []

    def go():
        out.append(run_guarded(ScriptedModel([call("lookup", {"order_id": "A1"}), say("sorry")]), reg, "where is A1",
                               config=cfg, store=MemoryStore(), sleep=lambda s: None))
    worker = threading.Thread(target=go)  # not the main thread: no SIGALRM, the read runs in a worker
    try:
        worker.start()
        worker.join(30)
    finally:
        release.set()
    run = out[0]
    assert len(started) == 1, f"sent {len(started)} times into a stuck backend"
    assert [e.error_code for e in run.tool_events] == ["TIMEOUT"]
    # and the model is not told to send it again as it is, which the loop itself declined to do
    told = run.tool_events[0].model_visible
    assert t("hint.read_still_running", "en") in told and t("hint.transient", "en") not in told, told


def _hung_write(keyed):
    """A write that hangs past its timeout (released by the test), a store and a context on one injected clock."""
    import threading

    from agentlab import GuardConfig
    from agentlab.calls import CallContext
    release, ran, now = threading.Event(), [], [1000.0]

    def refund(order_id, idempotency_key=None):
        ran.append(order_id)
        release.wait(20)
        return {"refunded": order_id}

    tool = Tool("refund", "Refund an order.", {"type": "object", "properties": {"order_id": {"type": "string"}}},
                fn=refund, side_effect=True, keyed=keyed)
    ctx = CallContext(Registry([tool]), GuardConfig(timeout=0.1, retry=None), MemoryStore(clock=lambda: now[0]),
                      sleep=lambda s: None, clock=lambda: now[0])
    return tool, ctx, release, ran, now


@pytest.mark.parametrize("keyed", [True, False])
def test_a_write_that_timed_out_is_unknown_to_a_repeat_not_in_progress_until_its_lease_ends(keyed):
    """Once its runner stopped waiting (the in-flight window is the call's timeout), a write still running is an
    unknown outcome: a repeat hears OUTCOME_UNKNOWN (never resend, a person checks), not IN_PROGRESS ("may be sent
    later") for the rest of a 60-second lease; when the late result lands, a repeat replays it. A keyed write was
    told TIMEOUT, then IN_PROGRESS for 60 s; without its mark_unknown, a plain write was told IN_PROGRESS too."""
    import time

    from agentlab.calls import execute
    tool, ctx, release, ran, now = _hung_write(keyed)
    try:
        first = execute(tool, {"order_id": "A1"}, ctx, key="k")
        assert first.error.code == "OUTCOME_UNKNOWN" and first.error.retryable is False
        for later in (1, 30, 59):  # within the claim's 60-second lease, on the injected clock
            now[0] = 1000.0 + later
            again = execute(tool, {"order_id": "A1"}, ctx, key="k")
            assert (again.error.code, again.error.retryable) == ("OUTCOME_UNKNOWN", False), later
        assert ctx.store.unknown() == ["k"]  # listed where a person looks
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while ctx.store.result("k") is None and time.monotonic() < deadline:  # the late result settles the key
        time.sleep(0.01)
    landed = execute(tool, {"order_id": "A1"}, ctx, key="k")
    assert landed.replayed and landed.data == {"refunded": "A1"} and ran == ["A1"]


def test_a_repeat_while_the_first_write_is_still_waited_for_hears_in_progress():
    """Inside the in-flight window (its runner still waits for it) the same write is IN_PROGRESS: resent later
    with the same key, it replays the result; it is not run twice."""
    import threading

    from agentlab import GuardConfig
    from agentlab.calls import execute
    tool, ctx, release, ran, _now = _hung_write(True)
    ctx = replace(ctx, config=GuardConfig(timeout=10.0, retry=None))
    first = []
    runner = threading.Thread(target=lambda: first.append(execute(tool, {"order_id": "A1"}, ctx, key="k")))
    runner.start()
    try:
        while not ran:
            time.sleep(0.005)
        again = execute(tool, {"order_id": "A1"}, ctx, key="k")
        assert again.error.code == "IN_PROGRESS" and ran == ["A1"]
    finally:
        release.set()
        runner.join(10)
    assert first[0].error is None
    assert execute(tool, {"order_id": "A1"}, ctx, key="k").replayed and ran == ["A1"]


def test_a_plain_read_makes_no_idempotency_key_and_a_write_makes_one(monkeypatch):
    """The key names a claim, a keyed backend call or a held call; a read has none of them, so its arguments are not
    hashed for it (a SHA-256 on every lookup)."""
    import agentlab.calls as calls
    made = []
    real = calls._key_of
    monkeypatch.setattr(calls, "_key_of", lambda tool, *a: made.append(tool.name) or real(tool, *a))
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    reg = Registry([Tool("lookup", "Look an order up.", schema, fn=lambda order_id: {"status": "paid"}),
                    Tool("refund", "Refund an order.", schema, fn=lambda order_id: {"refunded": order_id},
                         side_effect=True)])
    script = [tool_calls(call("lookup", {"order_id": "A1"})), tool_calls(call("refund", {"order_id": "A1"})),
              say("done")]
    run = run_guarded(ScriptedModel(script), reg, "refund A1", store=MemoryStore())
    assert run.status == "done" and made == ["refund"]


@pytest.mark.parametrize("write", [False, True])
def test_an_async_def_tool_is_run_to_its_end_never_shown_as_its_coroutine(write):
    """An async def tool handed back its coroutine unrun: the model read "<coroutine object ...>" as the result and
    the run said done of a refund that never happened. Run where a loop is already running too (a notebook's)."""
    import asyncio

    done: list[str] = []

    async def refund(order_id: str) -> dict:
        await asyncio.sleep(0)
        done.append(order_id)
        return {"refunded": order_id}

    async def failing(order_id: str) -> dict:
        await asyncio.sleep(0)
        raise ToolFailure("INVALID_ARGS", "amount: at most 10")

    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    reg = Registry([Tool("refund", "Refund an order.", schema, fn=refund, side_effect=write),
                    Tool("failing", "Fails.", schema, fn=failing, side_effect=write)])

    def one() -> Any:
        return run_guarded(ScriptedModel([call("refund", {"order_id": "A1"}), call("failing", {"order_id": "A2"}),
                                          say("done")]), reg, "refund A1", store=MemoryStore())

    async def inside_a_loop() -> Any:
        return one()

    for run in (one(), asyncio.run(inside_a_loop())):
        told = [e.model_visible or "" for e in run.events if e.kind == "tool"]
        assert '"refunded": "A1"' in told[0] and "coroutine" not in " ".join(told), told
        assert "at most 10" in told[1] and "coroutine" not in (run.answer or ""), told
    assert done == ["A1", "A1"]
