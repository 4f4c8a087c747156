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


# --- LangGraph: the request handed on as it came, unless agentlab changed the arguments ---
def _langgraph_agent(tools, calls, **options):
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
            step = sum(isinstance(m, ToolMessage) for m in messages)
            if step >= len(calls):
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])
            name, args = calls[step]
            msg = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{step}", "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=msg)])

    node = guard_tools(tools, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent
        return create_react_agent(Scripted(), node), node


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
    agent, node = _langgraph_agent([refund], calls, writes={"refund"}, config=GuardConfig(clean=True))
    state = {"messages": [("user", "Refund.")]}
    out = asyncio.run(agent.ainvoke(state)) if use_async else agent.invoke(state)
    assert got == [("A1", 10.5), ("A2", 45)], "the tool gets what agentlab checked"
    assert copies == [{"order_id": "A2", "amount": 45}], "only the cleaned call was copied"
    assert [e.error_code for e in node.guard.events] == [None, None]
    told = [m.content for m in out["messages"] if getattr(m, "type", "") == "tool"]
    assert '"refunded": 10.5' in told[0] and '"refunded": 45' in told[1]
