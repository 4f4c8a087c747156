"""The adapters' shortcuts (benchmarks/bench_adapters.py measures what they save): each one keeps what the model is
told and what the tool is handed, and the work it skips is skipped."""
import warnings

import pytest
from conftest import skip_or_fail

from agentlab.adapters.compare import installed
from agentlab.adapters.core import Contract, Guard
from agentlab.guards import GuardConfig
from agentlab.store import MemoryStore


# --- Guard.contracts: one comparison in C, aligned tool by tool ---
def test_contracts_are_rebuilt_when_the_same_parts_fall_to_other_tools():
    """The identity check compares every part of every tool at once; a set whose parts, laid end to end, are the
    very same objects but split differently between its tools is another set, and gets its own contracts."""
    guard = Guard("test")
    x, y, z = object(), object(), object()
    built: list[tuple] = []

    def build(parts):
        built.append(parts)
        return Contract(f"t{len(built)}", "", {"type": "object"})
    first = guard.contracts([(x, y), (z,)], lambda t: t, build)
    assert guard.contracts([(x, y), (z,)], lambda t: t, build) is first, "the same parts: not rebuilt"
    other = guard.contracts([(x,), (y, z)], lambda t: t, build)
    assert other is not first and built[-2:] == [(x,), (y, z)]
    assert guard.contracts([(x,), (y, z), ()], lambda t: t, build) is not other, "a tool with no parts added"


# --- MemoryStore.finish: the record built directly ---
def test_a_finished_claim_keeps_its_fingerprint_and_lease_and_replays_its_result():
    store = MemoryStore(clock=lambda: 100.0)
    assert store.claim("refund:A1", '{"order_id":"A1"}', lease=60).status == "new"
    running = store._records["refund:A1"]
    store.finish("refund:A1", '{"refunded":1}')
    done = store._records["refund:A1"]
    assert (done.fingerprint, done.state, done.result, done.expires) == \
        (running.fingerprint, "done", '{"refunded":1}', running.expires)
    again = store.claim("refund:A1", '{"order_id":"A1"}')
    assert again.status == "replay" and again.result == '{"refunded":1}'
    assert store.claim("refund:A1", '{"order_id":"A2"}').status == "conflict", "the fingerprint is still compared"


# --- LangGraph: a scripted graph; the request handed on as it came, unless agentlab changed the arguments ---
def _langgraph_steps(tools, steps, version="v2", **options):
    """A graph whose model asks, turn by turn, for each step's calls (several in one message when a step has
    several), then says done. ``version="v1"``: the tool node is handed a message's calls together (v2 sends the node
    each call on its own, the graph running them side by side)."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from agentlab.adapters.lang_graph import guard_tools

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kw):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kw):
            turn = sum(isinstance(m, AIMessage) for m in messages)
            if turn >= len(steps) or any(isinstance(m, ToolMessage) and m.status == "error" for m in messages):
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])
            calls = [{"name": name, "args": args, "id": f"c{turn}-{i}", "type": "tool_call"}
                     for i, (name, args) in enumerate(steps[turn])]
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=calls))])

    node = guard_tools(tools, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent
        return create_react_agent(Scripted(), node, version=version), node


def _pools_made(monkeypatch) -> list:
    """The thread pools LangGraph's ToolNode makes from now on (one per node call it hands to its pool)."""
    from langgraph.prebuilt import tool_node
    made: list = []
    real = tool_node.get_executor_for_config

    def counted(config):
        made.append(config)
        return real(config)
    monkeypatch.setattr(tool_node, "get_executor_for_config", counted)
    return made


@pytest.mark.parametrize("use_async", [False, True])
def test_langgraph_hands_the_tool_the_checked_arguments_and_copies_the_request_only_when_they_changed(
        use_async, monkeypatch):
    """A call whose checked arguments equal the model's is handed on as it came (``override`` copied the request and
    its call for every call); arguments agentlab cleaned ("45元" -> 45) still reach the tool as cleaned."""
    if not installed("langgraph"):
        skip_or_fail("not installed: langgraph (pip install -r requirements-frameworks.txt)")
    import asyncio

    from langgraph.prebuilt.tool_node import ToolCallRequest
    copies: list[dict] = []
    real = ToolCallRequest.override

    def counted(self, **kw):
        copies.append(kw["tool_call"]["args"])
        return real(self, **kw)
    monkeypatch.setattr(ToolCallRequest, "override", counted)
    got: list[tuple] = []

    def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order."""
        got.append((order_id, amount))
        return {"refunded": amount}

    calls = [("refund", {"order_id": "A1", "amount": 10.5}), ("refund", {"order_id": "A2", "amount": "45元"})]
    agent, node = _langgraph_steps([refund], [[c] for c in calls], writes={"refund"}, config=GuardConfig(clean=True))
    state = {"messages": [("user", "Refund.")]}
    out = asyncio.run(agent.ainvoke(state)) if use_async else agent.invoke(state)
    assert got == [("A1", 10.5), ("A2", 45)], "the tool gets what agentlab checked"
    assert copies == [{"order_id": "A2", "amount": 45}], "only the cleaned call was copied"
    assert [e.error_code for e in node.guard.events] == [None, None]
    told = [m.content for m in out["messages"] if getattr(m, "type", "") == "tool"]
    assert '"refunded": 10.5' in told[0] and '"refunded": 45' in told[1]


# --- LangGraph invoke: a lone call in agentlab's worker, several in LangGraph's pool ---
def test_langgraph_invoke_hands_a_lone_call_to_agentlabs_worker_and_several_to_its_pool(monkeypatch):
    """LangGraph's ToolNode made a thread pool (a new thread) for every node call, which cost a tool call more CPU
    than the guards: a lone call now goes to agentlab's worker, kept from call to call, in a copy of the caller's
    context, off the caller's thread as before. Several calls in one message still run side by side in LangGraph's
    pool, and a thread running an event loop (a notebook's) is no reason to leave the worker: the tool runs off it."""
    if not installed("langgraph"):
        skip_or_fail("not installed: langgraph (pip install -r requirements-frameworks.txt)")
    import asyncio
    import contextvars
    import threading

    from langgraph.config import get_config
    ran: list[tuple[str, str, object]] = []
    mark: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="caller's")

    def lookup(order_id: str) -> dict:
        """Look an order up."""
        async def fetch() -> str:
            return "shipped"
        mark.set("the tool's")  # a change of the tool's context stays in its copy
        ran.append(("lookup", threading.current_thread().name, get_config()["configurable"].get("thread_id")))
        return {"status": asyncio.run(fetch())}  # a loop of its own: refused in a thread whose loop runs

    def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order."""
        ran.append(("refund", threading.current_thread().name, get_config()["configurable"].get("thread_id")))
        return {"refunded": amount}

    steps = [[("lookup", {"order_id": "A1"})], [("refund", {"order_id": "A1", "amount": 2.0})],
             [("lookup", {"order_id": "A2"}), ("lookup", {"order_id": "A3"})]]
    main = threading.main_thread().name
    for version, in_a_loop in (("v2", False), ("v1", False), ("v2", True)):
        ran.clear()
        agent, node = _langgraph_steps([lookup, refund], steps, version, writes={"refund"})
        assert type(node).lone_in_worker, "the installed LangGraph is the one the lone-call path mirrors"
        pools = _pools_made(monkeypatch)
        config = {"configurable": {"thread_id": "T7"}}

        async def in_a_notebook(agent=agent, config=config) -> object:
            return agent.invoke({"messages": [("user", "Refund A1.")]}, config=config)
        out = asyncio.run(in_a_notebook()) if in_a_loop else agent.invoke({"messages": [("user", "Refund A1.")]},
                                                                           config=config)
        assert ran[:2] == [("lookup", "agentlab-tool", "T7"), ("refund", "agentlab-tool", "T7")], \
            "a lone call: in agentlab's worker, the graph's config in reach"
        assert [r[0] for r in ran[2:]] == ["lookup"] * 2 and main not in {r[1] for r in ran[2:]}, "side by side"
        # v2 sends the node each call alone (the graph runs the two side by side); v1 hands it both, and its pool runs them
        assert len(pools) == (version == "v1"), "no pool for a lone call"
        assert mark.get() == "caller's"
        told = [m.content for m in out["messages"] if getattr(m, "type", "") == "tool"]
        assert len(told) == 4 and '"shipped"' in told[0] and '"refunded": 2' in told[1]
        assert [e.error_code for e in node.guard.events] == [None] * 4


def test_langgraph_invoke_leaves_calls_to_its_pool_where_tool_node_func_is_not_the_one_mirrored(monkeypatch):
    """Another LangGraph's ToolNode._func, a wrapper patched over it (whose __wrapped__ is the text mirrored), or one
    patched in after the node's class was made: every call goes to LangGraph's own pool, through the patch."""
    if not installed("langgraph"):
        skip_or_fail("not installed: langgraph (pip install -r requirements-frameworks.txt)")
    import functools

    from langgraph.prebuilt import ToolNode

    from agentlab.adapters import lang_graph
    through: list[str] = []

    def lookup(order_id: str) -> dict:
        """Look an order up."""
        return {"status": "shipped"}
    mirrored = ToolNode.__dict__["_func"]

    def changed(self, input, config, runtime):  # another LangGraph's text
        through.append("changed")
        return mirrored(self, input, config, runtime)

    @functools.wraps(mirrored)
    def wrapped(self, input, config, runtime):  # instrumentation over the very text mirrored
        through.append("wrapped")
        return mirrored(self, input, config, runtime)
    try:
        for patch, made_before in ((changed, False), (wrapped, False), (changed, True)):
            through.clear()
            lang_graph._node_type.cache_clear()
            if made_before:  # the node's class made while ToolNode._func was the one mirrored, the patch after
                agent, node = _langgraph_steps([lookup], [[("lookup", {"order_id": "A1"})]])
                assert type(node).lone_in_worker
            monkeypatch.setattr(ToolNode, "_func", patch)
            if not made_before:
                agent, node = _langgraph_steps([lookup], [[("lookup", {"order_id": "A1"})]])
                assert not type(node).lone_in_worker
            pools = _pools_made(monkeypatch)
            out = agent.invoke({"messages": [("user", "Where is A1?")]})
            assert through and len(pools) == 1, "the patch ran, and LangGraph's pool"
            assert '"shipped"' in next(m.content for m in out["messages"] if getattr(m, "type", "") == "tool")
            monkeypatch.undo()
    finally:
        monkeypatch.undo()
        lang_graph._node_type.cache_clear()


def test_langgraph_invoke_with_no_deadline_to_keep_or_no_worker_to_be_had_leaves_calls_to_its_pool(monkeypatch):
    """A guard with no deadline (GuardConfig(timeout=None)) runs its tool where it runs: in LangGraph's own pool, a
    thread made for the call, as without the adapter (a worker kept from call to call would hand the tool its CPU,
    its daemon flag and its thread-local data). With no worker to be had (out of descriptors), the call goes to the
    pool too, where the guard tells the model the tool is unavailable: nothing raised out of invoke, nothing ran."""
    if not installed("langgraph"):
        skip_or_fail("not installed: langgraph (pip install -r requirements-frameworks.txt)")
    import threading

    from agentlab import timeouts, workers
    from agentlab.adapters import lang_graph
    ran: list[tuple[str, bool]] = []

    def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order."""
        ran.append((threading.current_thread().name, threading.current_thread().daemon))
        return {"refunded": amount}
    call = [[("refund", {"order_id": "A1", "amount": 2.0})]]
    agent, node = _langgraph_steps([refund], call, writes={"refund"}, config=GuardConfig(timeout=None))
    pools = _pools_made(monkeypatch)
    agent.invoke({"messages": [("user", "Refund A1.")]})
    assert len(pools) == 1 and len(ran) == 1 and ran[0][0].startswith("ThreadPoolExecutor") and not ran[0][1]

    ran.clear()
    fresh = workers._Pool()  # no idle worker to take
    monkeypatch.setattr(timeouts, "_pool", fresh)
    monkeypatch.setattr(lang_graph, "_pool", fresh)

    def no_pipe():
        raise OSError(24, "Too many open files")
    monkeypatch.setattr(workers.os, "pipe", no_pipe)
    agent, node = _langgraph_steps([refund], call, writes={"refund"})
    out = agent.invoke({"messages": [("user", "Refund A1.")]})
    told = next(m.content for m in out["messages"] if getattr(m, "type", "") == "tool")
    assert ran == [] and len(pools) == 2, "LangGraph's pool took the call; the tool never began"
    assert '"UNAVAILABLE"' in told and node.guard.events[-1].error_code == "UNAVAILABLE"


def test_langgraph_invoke_keeps_deadlines_signals_and_writes_as_langgraphs_pool_did():
    """A lone call off the caller's thread keeps what the pool gave it: a read past its deadline is left running and
    not resent (ReadStillRunning, never an alarm in the caller's thread, where it would take a watchdog's SIGALRM of
    the program's own); a signal's handler that raises (Ctrl-C) while a write runs goes on once the write has ended and
    its claim is recorded, so the same call sent again is replayed."""
    if not installed("langgraph"):
        skip_or_fail("not installed: langgraph (pip install -r requirements-frameworks.txt)")
    import signal
    import threading
    import time

    started: list[str] = []
    release = threading.Event()

    def lookup(order_id: str) -> dict:
        """Look an order up."""
        started.append(order_id)
        release.wait(5)
        return {"status": "shipped"}

    def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order."""
        started.append("refund")
        time.sleep(0.4)
        return {"refunded": amount}

    class Watchdog(BaseException):
        pass

    def ring(signum, frame):
        raise Watchdog
    agent, node = _langgraph_steps([lookup, refund], [[("lookup", {"order_id": "A1"})]], writes={"refund"},
                                   config=GuardConfig(timeout=0.2), sleep=lambda s: None)
    before = signal.signal(signal.SIGALRM, signal.SIG_IGN)
    try:
        agent.invoke({"messages": [("user", "Where is A1?")]})
        assert started == ["A1"], "a read past its deadline is left running, not resent into a stuck backend"
        assert node.guard.events[-1].error_code == "TIMEOUT"
        release.set()
        # the program's own watchdog: its alarm rings where it was set, in the caller's thread, never inside a guard
        signal.signal(signal.SIGALRM, ring)
        release.clear()
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(Watchdog):
            agent.invoke({"messages": [("user", "Where is A2?")]})
        release.set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)

    started.clear()
    for timeout in (5.0, None):
        agent, node = _langgraph_steps([lookup, refund], [[("refund", {"order_id": "A1", "amount": 2.0})]],
                                       writes={"refund"}, config=GuardConfig(timeout=timeout))
        config = {"configurable": {"thread_id": f"T-{timeout}"}}
        before = signal.signal(signal.SIGALRM, ring)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.1)  # while the refund runs
            with pytest.raises(Watchdog):
                agent.invoke({"messages": [("user", "Refund A1.")]}, config=config)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, before)
        assert started == ["refund"], "the write ran to its end before the interrupt went on"
        out = agent.invoke({"messages": [("user", "Refund A1.")]}, config=config)
        assert started == ["refund"], "sent again, it is replayed: its claim was recorded"
        told = next(m.content for m in out["messages"] if getattr(m, "type", "") == "tool")
        assert '"refunded": 2' in told, told
        started.clear()


# --- the guarded call's own shortcuts: the canonical text, the digest, the encoders made once ---
@pytest.mark.parametrize("value", [
    {"order_id": "A1"}, {"order_id": "A1", "amount": 10.5}, {"amount": 2.0}, {"n": 3, "ok": True, "none": None},
    {"b": 1, "a": [2.0, {"y": 1.0}]}, {"x": float("inf")}, {"x": -0.0}, {"x": 1e16}, {1: "int key"}, {"z": "中文"},
    {}, [1.0, 2], "text", 7.0])
def test_canonical_is_the_normalised_text_on_its_fast_path_and_off_it(value):
    """The flat-object fast path writes exactly what normalize-then-dumps wrote (whole floats as integers, keys
    sorted, non-ASCII kept); anything else still takes the walk."""
    import json

    from agentlab.jsonutil import canonical, normalize
    assert canonical(value) == json.dumps(normalize(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def test_digest_of_the_same_text_object_twice_is_hashed_once_and_equal_texts_agree(monkeypatch):
    import hashlib

    from agentlab import store_types
    hashed: list[bytes] = []
    real = hashlib.sha256

    def counted(data=b""):
        hashed.append(data)
        return real(data)
    monkeypatch.setattr(store_types.hashlib, "sha256", counted)
    text = "".join(['{"order_id":', '"A1"}'])  # a string made at run time, as canonical() makes one
    first = store_types.digest(text)
    assert store_types.digest(text) == first and len(hashed) == 1, "the same object again: not hashed again"
    same = "".join(['{"order_id":', '"A1"}'])
    assert same is not text and store_types.digest(same) == first and len(hashed) == 2
    assert store_types.digest('{"order_id":"A2"}') != first
    assert first == "sha256:" + real(text.encode()).hexdigest()


def test_a_guarded_refund_is_claimed_under_one_digest_and_replayed():
    """The key and the claim read the one canonical text: a repeat (other key order, 10.50) replays, other
    arguments under the same business key are a conflict."""
    guard = Guard("test", writes={"refund": lambda a: a["order_id"]}, config=GuardConfig(repeat_limit=None))
    spec = (Contract("refund", "Refund.", {"type": "object", "properties": {
        "order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"]}),)
    runs: list[dict] = []

    def run(args):
        runs.append(args)
        return {"refunded": args["amount"]}
    first = guard.call(spec, "refund", '{"order_id": "A1", "amount": 10.5}', run)
    again = guard.call(spec, "refund", '{"amount": 10.50, "order_id": "A1"}', run)
    other = guard.call(spec, "refund", '{"order_id": "A1", "amount": 99}', run)
    assert first.error is None and again.replayed and again.data == first.data == {"refunded": 10.5}
    assert other.error is not None and other.error.code == "CONFLICT" and len(runs) == 1


# --- a write on the event loop: its own task wakes its caller as it ends ---
def _turns_until_done(awaitable_factory):
    """How many turns of the loop pass (a callback that schedules itself again each turn counts them) until
    ``await awaitable_factory()`` returns, and what it returned or raised."""
    import asyncio

    async def go():
        loop, turns, done = asyncio.get_running_loop(), [0], [False]

        def tick():
            if not done[0]:
                turns[0] += 1
                loop.call_soon(tick)
        loop.call_soon(tick)
        try:
            return await awaitable_factory(), turns[0]
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            return exc, turns[0]
        finally:
            done[0] = True
    return asyncio.run(go())


def test_a_write_on_the_loop_wakes_its_caller_as_its_task_ends():
    """The write's task sets its caller's waiter itself: two turns of the loop (the task's, the caller's) for a
    write that ends at once; a done callback on the task took a third."""
    from agentlab.timeouts import wait_on_loop

    async def write():
        return {"refunded": 1}

    async def fails():
        raise KeyError("boom")
    assert _turns_until_done(lambda: wait_on_loop(write(), 5.0, write=True)) == ({"refunded": 1}, 2)
    raised, _ = _turns_until_done(lambda: wait_on_loop(fails(), 5.0, write=True))
    assert isinstance(raised, KeyError), "what the write raised reaches the guard as it was raised"


def test_a_write_that_keeps_its_own_deadline_or_task_group_answers_as_it_would_alone():
    """A write runs in a task of its own from its first step, so what it notes of its task before it waits is the
    task it ends in: asyncio.timeout, a TaskGroup, anyio's cancel scopes (inside every httpx.AsyncClient call). Started
    in the caller's task to spare a task per call, each of these failed: the timeout cancelled the caller, anyio said
    the scope was left in another task, and through the guards a refund that was made read OUTCOME_UNKNOWN."""
    import asyncio
    import json

    import anyio

    from agentlab.calls import CallContext, aguarded_call
    from agentlab.models.interface import ToolCall
    from agentlab.timeouts import wait_on_loop
    from agentlab.tools import Registry, Tool

    async def own_deadline():
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            return "its own deadline passed"

    async def task_group():
        async def child():
            await asyncio.sleep(0)
            raise ValueError("child")
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(child())
                await asyncio.sleep(5)
        except ExceptionGroup:
            return "its child failed"

    async def anyio_scope():
        with anyio.fail_after(5):
            await anyio.sleep(0)
        return "posted"

    async def each():
        return [await wait_on_loop(f(), 5.0, write=True) for f in (own_deadline, task_group, anyio_scope)]
    assert asyncio.run(each()) == ["its own deadline passed", "its child failed", "posted"]

    made = []

    async def create_refund(order_id):
        with anyio.fail_after(5):  # the HTTP request, as httpx makes it
            await anyio.sleep(0)
            made.append(order_id)
        return {"refund": order_id}
    params = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    tool = Tool("create_refund", "Refund an order.", params, fn=create_refund, side_effect=True,
                business_key=lambda a: a["order_id"])
    ctx = CallContext(Registry([tool]), sleep=lambda s: None)

    async def refund_twice():
        return [await aguarded_call(ToolCall("create_refund", json.dumps({"order_id": "A1"}), f"c{i}"), ctx, {},
                                    fn=create_refund) for i in (1, 2)]
    first, again = asyncio.run(refund_twice())
    assert first.error is None and first.data == {"refund": "A1"}, first
    assert again.replayed and again.data == {"refund": "A1"} and made == ["A1"], (again, made)


def test_a_write_on_the_loop_past_its_deadline_goes_on_and_its_task_settles():
    import asyncio

    from agentlab.timeouts import WriteTimeout, wait_on_loop

    async def slow():
        await asyncio.sleep(0.2)
        return "written"

    async def go():
        try:
            await wait_on_loop(slow(), 0.02, write=True)
        except WriteTimeout as exc:
            return await asyncio.wait_for(exc.future, 5)
    assert asyncio.run(go()) == "written"


def test_an_adapters_trace_row_is_the_event_the_dataclass_makes():
    """_record fills a row's fields at once (no frozen __init__, a call per field): the same row, equal, hashed
    alike, with the dataclass's own defaults, still frozen, and written to JSONL as before."""
    import dataclasses

    from agentlab.adapters.core import _event
    from agentlab.trace import Event
    values = dict(run_id="r1", session_id="s1", turn_id=1, round_index=2, kind="tool", loop="langgraph",
                  tool_name="refund", exec_ok=True, latency_ms=1.5, model_visible='{"ok": true}')
    fast, usual = _event(**values), Event(**values)
    assert fast == usual and hash(fast) == hash(usual) and repr(fast) == repr(usual)
    assert fast.to_dict() == usual.to_dict() and fast.retry_count == 0 and fast.offered is None
    assert dataclasses.replace(fast, final_status="done") == dataclasses.replace(usual, final_status="done")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.note = "changed"  # type: ignore[misc]
    guard = Guard("test")
    guard.call([Contract("lookup", "Look up.", {"type": "object"})], "lookup", "{}", lambda args: {"ok": 1})
    assert type(guard.events[0]) is Event and guard.events[0].guard_config == "all guards"


def test_the_encoders_made_once_write_what_json_dumps_wrote():
    """Each module-level encoder is json.dumps with the same options, made once instead of on every call."""
    import datetime
    import json

    from agentlab.adapters import core, openai_agents, pydanticai
    from agentlab.jsonutil import canonical
    from agentlab.store import result_json
    args = {"order_id": "A1", "note": "退款", "when": datetime.date(2026, 1, 2), "amount": 10.5, "n": [1, 2.0]}
    assert core._ARGS(args) == pydanticai._ARGS_TEXT(args) == json.dumps(args, ensure_ascii=False, default=str)
    plain = {k: v for k, v in args.items() if k != "when"}
    assert openai_agents._ARGS_TEXT(plain) == json.dumps(plain, ensure_ascii=False)
    assert result_json({"x": {1, 2}.__class__.__name__, "nan": float("nan")}) == '{"x": "set", "nan": null}'
    assert canonical({"b": 2.0, "a": "退款"}) == '{"a":"退款","b":2}'


# --- deadlines on the event loop: one timer per loop, each call cut at its own deadline ---
def test_reads_on_one_loop_share_one_timer_and_each_is_cut_at_its_own_deadline():
    """Fifty reads that answer set the loop's timer once (a timer per read was made and cancelled fifty times);
    two reads that hang, with other limits, are each cut at their own deadline, and the task goes on uncancelled."""
    import asyncio
    import time

    from agentlab.timeouts import ReadStillRunning, wait_on_loop

    async def quick():
        await asyncio.sleep(0)
        return 1

    async def hang():
        await asyncio.sleep(5)

    async def go():
        loop = asyncio.get_running_loop()
        timers = []
        real = loop.call_at

        def counted(when, callback, *args, **kw):
            timers.append(when)
            return real(when, callback, *args, **kw)
        loop.call_at = counted  # type: ignore[method-assign]
        answers = [await wait_on_loop(quick(), 5.0, write=False) for _ in range(50)]
        set_for_reads = len(timers)

        async def timed(limit):
            t0 = time.perf_counter()
            try:
                await wait_on_loop(hang(), limit, write=False)
            except ReadStillRunning:
                return time.perf_counter() - t0
        short, long_ = await asyncio.gather(timed(0.05), timed(0.3))
        after = await wait_on_loop(quick(), 5.0, write=False)  # no cancellation left pending on the task
        await asyncio.sleep(0.01)
        return answers, set_for_reads, short, long_, after
    answers, set_for_reads, short, long_, after = asyncio.run(go())
    assert answers == [1] * 50 and set_for_reads <= 1, set_for_reads
    # each wait ends at its own limit, never before, and the shorter first; neither waits for the read (5 s): a
    # bound on behaviour with room for any load, not a speed (benchmarks measure those)
    assert 0.04 <= short < long_ < 5 and long_ >= 0.28, (short, long_)
    assert after == 1


def test_a_read_cancelled_from_outside_is_cancelled_not_timed_out_and_a_tools_own_timeout_error_is_its_own():
    import asyncio

    import pytest as _pytest

    from agentlab.timeouts import ReadStillRunning, wait_on_loop

    async def hang():
        await asyncio.sleep(5)

    async def own_timeout():
        raise TimeoutError("the service said so")

    async def go():
        task = asyncio.ensure_future(wait_on_loop(hang(), 5.0, write=False))
        await asyncio.sleep(0.01)
        task.cancel()
        with _pytest.raises(asyncio.CancelledError):
            await task
        with _pytest.raises(TimeoutError) as caught:
            await wait_on_loop(own_timeout(), 5.0, write=False)
        assert not isinstance(caught.value, ReadStillRunning) and "service" in str(caught.value)
        return "ok"
    assert asyncio.run(go()) == "ok"


def test_a_write_past_its_deadline_on_the_shared_timer_goes_on_while_the_next_call_waits():
    """A write's deadline rings on the same timer as the reads'; past it the write goes on, and a read started
    later with a shorter limit still gets its own deadline."""
    import asyncio

    from agentlab.timeouts import ReadStillRunning, WriteTimeout, wait_on_loop

    async def slow_write():
        await asyncio.sleep(0.3)
        return "written"

    async def hang():
        await asyncio.sleep(5)

    async def go():
        write = asyncio.ensure_future(wait_on_loop(slow_write(), 0.2, write=True))
        await asyncio.sleep(0.01)
        try:
            await wait_on_loop(hang(), 0.03, write=False)
        except ReadStillRunning:
            read_cut = True
        try:
            await write
        except WriteTimeout as exc:
            return read_cut, await asyncio.wait_for(exc.future, 5)
    assert asyncio.run(go()) == (True, "written")


def test_a_loop_with_deadlines_on_its_timer_is_not_kept_alive_by_it():
    """Each asyncio.run makes a loop (LangGraph's ainvoke, a notebook cell): the shared timer must not keep them."""
    import asyncio
    import gc
    import weakref

    from agentlab.timeouts import wait_on_loop

    async def quick():
        return 1

    loops = []

    async def go():
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return [await wait_on_loop(quick(), 5.0, write=w) for w in (False, True)]
    for _ in range(3):
        assert asyncio.run(go()) == [1, 1]
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None], "every loop let go once it was closed"


# --- the guarded call on the loop: no coroutine of its own around the driver, nor around the wait ---
def test_a_tool_that_fails_as_it_is_called_is_told_as_one_that_fails_as_it_is_awaited():
    """aguarded_call hands back _adrive's coroutine and _ainvoke hands back the wait, so a tool can fail before its
    awaitable exists: it is caught where a failure on the await is, resent alike (a transient one), and told in
    the same words, as the sync driver tells it."""
    import asyncio

    from agentlab.calls import aguarded_call, guarded_call
    from agentlab.models.interface import ToolCall
    spec = (Contract("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}}),)
    tries: list[str] = []

    def at_call(**kw):
        tries.append("call")
        raise ConnectionError("the backend is down")

    async def raises(**kw):
        tries.append("await")
        raise ConnectionError("the backend is down")

    def at_await(**kw):
        return raises(**kw)
    outcomes = []
    for fn in (at_call, at_await):
        guard = Guard("test", sleep=lambda s: None)
        ctx, raw = guard._prepare(spec, "lookup", {"q": "x"}, None, True)
        outcomes.append(asyncio.run(aguarded_call(ToolCall("lookup", raw, "c1"), ctx, {}, fn=fn)))
    guard = Guard("test", sleep=lambda s: None)
    ctx, raw = guard._prepare(spec, "lookup", {"q": "x"}, None, True)
    outcomes.append(guarded_call(ToolCall("lookup", raw, "c1"), ctx, {}, fn=at_call))
    told = {(o.content, o.error.code if o.error else None, o.retries, o.exec_ok) for o in outcomes}
    assert len(told) == 1 and outcomes[0].error is not None and outcomes[0].retries > 0
    assert tries.count("await") == tries.count("call") // 2, "resent as often from the loop as from the sync driver"
