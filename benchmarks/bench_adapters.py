"""The framework adapters: the faults they fix, and what they cost per tool call.

1. Faults (docs/guards.md#guards-in-other-frameworks): the same faults in each framework's real agent loop, without
   and with agentlab's adapter, a scripted model behind the test server (agentlab.adapters.compare).
2. Cost: the CPU each framework's real agent loop (pydantic-ai ``Agent.run_sync``, the OpenAI Agents SDK's
   ``Runner.run_sync``, LangGraph's ``create_react_agent(...).invoke`` and ``ainvoke``) spends per tool call with
   the adapter, minus the same loop without it. The model is each framework's own kind of in-process scripted model
   (no HTTP, no JSON over a socket: those would add the same noise to both sides and hide the difference); the tools
   are trivial plain functions, so the difference is the adapter. Every guard is on (``GuardConfig()``), claims in
   the adapter's default store (memory); a read (``lookup``) and a claimed write (``refund``).

3. The floor: the same loop with each tool behind the smallest wrapper a team writes by hand (the call's arguments
   as a key in a dict of results, a repeat answered from it: no contract, no trace, no store), measured as a third
   side beside the other two: what wrapping a tool at all costs in that loop, and the adapter's cost over it, what
   agentlab's guards add beyond that (printed for reference, not a target row).
   LangGraph's ``invoke`` has a fourth side: the adapter's own node with no guard. That node hands a lone call to
   agentlab's worker, where LangGraph's ``ToolNode`` starts a thread pool for each node call (docs/guards.md), so the
   guarded graph can cost less than the bare one; the guards' own cost over that same node is printed under the table.
4. The guards alone: ``Guard.acall`` on an event loop with a trivial tool, no framework, once with the caches warm
   (as in a tight loop) and once with the caches flushed before each call (32 MB copied), as a framework's own work
   between two tool calls flushes them; the ten-line wrapper beside it, the same two ways (for reference).

CPU time (``time.process_time``: every thread of the process, so a thread hop is counted), sides interleaved run by
run: each round runs ``--runs`` runs of each side of every framework on fresh order ids, the sides taking turns run
by run (bare, floor and guarded, their order rotating run by run and round by round), so a burst of load from
elsewhere falls on every side alike; the added cost is the median over rounds of (adapter - bare) of the same round, per tool call. A warm-up
outside the measured windows (imports, schemas, caches, each side's first runs) comes first; the collector then runs
as in any process, so the full collections a side's allocations cause over the frameworks' big, old heap are that
side's cost (frozen out of view, they flattered the guarded side, which allocates most, by 25-45 µs a call). Each
row prints the 1-minute load average over its rounds.

Run: python benchmarks/bench_adapters.py [--rounds 15] [--runs 10] [--no-faults] [--lang zh]
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.adapters.compare import FRAMEWORKS, compare, installed, table  # noqa: E402

CALLS = 5  # tool calls per run, one per turn, then an answer (as bench_loop.py)
TARGET_US = 150.0  # the speed target: µs added per tool call by an adapter, over the same framework without it
TOOLS = ("lookup", "refund")


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def target_line(what: str, measured: str, target: str, met: bool, load: float) -> str:
    """One row of run.py bench's table of targets: ``target | what | measured | target | met | load``, the load the
    1-minute average over the rounds measured (their median)."""
    return f"target | {what} | {measured} | {target} | {'yes' if met else 'no'} | load {load:.2f}"


def plain_tools() -> list[Callable[..., Any]]:
    def lookup(order_id: str) -> dict:
        """Look an order up."""
        return {"order_id": order_id, "status": "shipped"}

    def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order (a write: it moves money)."""
        return {"refunded": amount, "order_id": order_id}
    return [lookup, refund]


def wrapped_tools() -> list[Callable[..., Any]]:
    """The floor: :func:`plain_tools`, each behind the smallest wrapper a team writes by hand. The call's arguments
    are its key in a dict of results, so a repeated call is answered from there; nothing is checked, traced or
    stored beyond that. Each framework reads the tool's signature through ``functools.wraps``, as for the tool."""
    done: dict[str, Any] = {}

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            key = f"{fn.__name__}:{json.dumps([args, kw], sort_keys=True, default=str)}"
            if key in done:
                return done[key]
            done[key] = out = fn(*args, **kw)
            return out
        return wrapper
    return [wrap(f) for f in plain_tools()]


def _args(tool: str, tag: str, i: int) -> dict:
    order = f"A{tag}{i}"
    return {"order_id": order} if tool == "lookup" else {"order_id": order, "amount": 10.5}


# --- each framework's loop, bare or guarded, with a scripted model in process ---------------------------------
# The agent (and its adapter) is made once per side, as an application makes it once and runs it many times; each
# run is told its tool and a fresh tag (new order ids: new keys, nothing replayed, no repeat tripped).
Run = Callable[[str, str], None]


def _tools(side: str) -> list[Callable[..., Any]]:
    return wrapped_tools() if side == "floor" else plain_tools()


def pydantic_ai_run(side: str) -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from agentlab.adapters.pydanticai import guard_toolset
    now = {"tool": "lookup", "tag": "0"}

    def model(messages: list, info: Any) -> ModelResponse:
        step = (len(messages) - 1) // 2  # request, response, request...: the calls answered so far
        if step >= CALLS:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(now["tool"], _args(now["tool"], now["tag"], step), f"c{step}")])
    toolset: Any = FunctionToolset(_tools(side))
    if side == "guarded":
        toolset = guard_toolset(toolset, writes={"refund"})
    agent = Agent(FunctionModel(model), toolsets=[toolset])

    def one(tool: str, tag: str) -> None:
        now.update(tool=tool, tag=tag)
        agent.run_sync("Refund 10.5 on each order.")
    return one


def openai_agents_run(side: str) -> Run:
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from agentlab.adapters.openai_agents import guard_function_tools

    class Scripted(Model):
        tool, tag, step = "lookup", "0", 0

        async def get_response(self, *a: Any, **kw: Any) -> ModelResponse:
            i, self.step = self.step, self.step + 1
            if i >= CALLS:
                out: Any = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                                 content=[ResponseOutputText(type="output_text", text="done",
                                                                             annotations=[])])
            else:
                out = ResponseFunctionToolCall(type="function_call", call_id=f"c{i}", name=self.tool,
                                               arguments=json.dumps(_args(self.tool, self.tag, i)))
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **kw: Any) -> Any:
            raise NotImplementedError

    config = RunConfig(tracing_disabled=True)  # the SDK would otherwise send its traces to OpenAI
    if side == "guarded":
        tools: Any = guard_function_tools(plain_tools(), writes={"refund"})
        config = tools.run_config(config)
    else:
        tools = [function_tool(f) for f in _tools(side)]
    model = Scripted()
    agent = Agent(name="shop", instructions="Help with orders.", tools=tools, model=model)

    def one(tool: str, tag: str) -> None:
        model.tool, model.tag, model.step = tool, tag, 0
        Runner.run_sync(agent, "Refund 10.5 on each order.", run_config=config)
    return one


def langgraph_run(side: str, *, use_async: bool = False) -> Run:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from agentlab.adapters.lang_graph import guard_tools
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in LangGraph 1; still there
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent
    now = {"tool": "lookup", "tag": "0"}

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(self, messages: list, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            step = sum(isinstance(m, ToolMessage) for m in messages)
            if step >= CALLS:
                msg = AIMessage(content="done")
            else:
                tool = now["tool"]
                msg = AIMessage(content="", tool_calls=[{"name": tool, "args": _args(tool, now["tag"], step),
                                                         "id": f"c{step}", "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=msg)])

    tools: Any = _tools(side)
    if side == "guarded":
        tools = guard_tools(tools, writes={"refund"})
    elif side == "node":  # the adapter's node with no guard: a lone call in agentlab's worker, as the guarded side's
        from langchain_core.tools import tool as as_tool

        from agentlab.adapters.lang_graph import _node_type
        tools = _node_type()([as_tool(t) for t in tools], handle_tool_errors=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(Scripted(), tools)

    def one(tool: str, tag: str) -> None:
        now.update(tool=tool, tag=tag)
        state = {"messages": [("user", "Refund 10.5 on each order.")]}
        if use_async:
            asyncio.run(agent.ainvoke(state))
        else:
            agent.invoke(state)
    return one


SIDES = ("bare", "floor", "guarded")


def sides() -> dict[str, dict[str, Run]]:
    """Each installed framework's loop, each side of it: bare, behind the ten-line wrapper (the floor), guarded."""
    out: dict[str, dict[str, Run]] = {}
    if installed("pydantic-ai"):
        out["pydantic-ai run_sync"] = {side: pydantic_ai_run(side) for side in SIDES}
    if installed("openai-agents"):
        out["openai-agents run_sync"] = {side: openai_agents_run(side) for side in SIDES}
    if installed("langgraph"):
        # and the adapter's own node with no guard: under invoke it hands a lone call to agentlab's worker, where
        # LangGraph's starts a thread pool; what the guards add over that node is printed under the table
        out["langgraph invoke"] = {side: langgraph_run(side) for side in (*SIDES, "node")}
        out["langgraph ainvoke"] = {side: langgraph_run(side, use_async=True) for side in SIDES}
    return out


def _one_run(one: Run, tool: str, tag: str) -> float:
    """CPU seconds of one run of CALLS calls (every thread of the process)."""
    t0 = time.process_time()
    one(tool, tag)
    return time.process_time() - t0


def round_of(loop: dict[str, Run], tool: str, tag: str, runs: int, turn: int) -> dict[str, float]:
    """One round: ``runs`` runs of each side, interleaved run by run, the order of the sides rotating from run to
    run (and, by ``turn``, from round to round), so each side comes first, second and last equally often and a burst
    of load falls on all of them; each run on fresh order ids. CPU microseconds per tool call of each side."""
    spent = dict.fromkeys(loop, 0.0)
    order = list(loop.items())
    for r in range(runs):
        k = (r + turn) % len(order)
        for side, one in order[k:] + order[:k]:
            spent[side] += _one_run(one, tool, f"{tag}{side[0]}{r:03d}")
    per = runs * CALLS
    return {side: us / per * 1e6 for side, us in spent.items()}


def cost(rounds: int, runs: int, only: str = "") -> tuple[list[str], list[str]]:
    """The cost table, and its target lines (``only``: the loops whose name holds it)."""
    loops = {name: pair for name, pair in sides().items() if only in name}
    if not loops:
        return ["cost: no framework installed (pip install -r requirements-frameworks.txt)"], []
    added: dict[tuple[str, str], list[float]] = {}
    floor: dict[tuple[str, str], list[float]] = {}  # the ten-line wrapper's cost over bare
    over_floor: dict[tuple[str, str], list[float]] = {}  # the adapter's over the ten-line wrapper
    bare: dict[tuple[str, str], list[float]] = {}
    over_node: dict[tuple[str, str], list[float]] = {}  # the adapter over its own node with no guard (langgraph invoke)
    node: dict[tuple[str, str], list[float]] = {}  # that node with no guard over bare
    loads: list[float] = []
    # warm-up, outside every measured window: imports, compiled schemas, each framework's caches, the first call of
    # each side. The collector is left as a process has it: the full collections a side's allocations cause over
    # the frameworks' large heap are its cost (with the heap frozen out of view, the side that allocates most, the
    # guarded one, looked 25-45 µs a call cheaper than a real process finds it)
    for name, loop in loops.items():
        for tool in TOOLS:
            round_of(loop, tool, f"w{name[:2]}", max(3, runs // 2), 0)
    gc.collect()
    for rnd in range(rounds):
        for name, loop in loops.items():
            for tool in TOOLS:
                got = round_of(loop, tool, f"{rnd:03d}", runs, rnd)
                added.setdefault((name, tool), []).append(got["guarded"] - got["bare"])
                floor.setdefault((name, tool), []).append(got["floor"] - got["bare"])
                over_floor.setdefault((name, tool), []).append(got["guarded"] - got["floor"])
                bare.setdefault((name, tool), []).append(got["bare"])
                if "node" in got:
                    over_node.setdefault((name, tool), []).append(got["guarded"] - got["node"])
                    node.setdefault((name, tool), []).append(got["node"] - got["bare"])
        loads.append(_load())
    load = f"{min(loads):.2f}-{max(loads):.2f}"
    lines = [f"CPU per tool call (time.process_time, every thread): {rounds} interleaved rounds of {runs} runs x"
             f" {CALLS} calls a side, the sides taking turns run by run in a rotating order, a warm-up first;"
             " every guard on (GuardConfig()), claims in memory",
             "| loop | tool | bare framework | added by the adapter (median) | quartiles | added by a ten-line wrapper"
             " | the adapter over that wrapper | load |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    targets = []
    for (name, tool), diffs in added.items():
        med = statistics.median(diffs)
        q = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else diffs * 3
        lines.append(f"| {name} | {tool} | {statistics.median(bare[name, tool]):.0f} µs | {med:+.0f} µs |"
                     f" {q[0]:+.0f} .. {q[2]:+.0f} µs | {statistics.median(floor[name, tool]):+.0f} µs |"
                     f" {statistics.median(over_floor[name, tool]):+.0f} µs | {load} |")
        # (claims in memory: a store that outlives the process hands each write to a worker, not measured here)
        targets.append(target_line(f"adapter {name}, {tool}, added per tool call (claims in memory)", f"{med:+.0f} us",
                                   f"<= +{TARGET_US:.0f} us", med <= TARGET_US, statistics.median(loads)))
    for name in dict.fromkeys(n for n, _ in over_node):
        def each(got: dict[tuple[str, str], list[float]], n: str = name) -> str:
            return ", ".join(f"{tool} {statistics.median(got[n, tool]):+.0f} µs" for tool in TOOLS)
        lines.append(f"{name}: the adapter's node hands a lone call to agentlab's worker thread, where LangGraph's ToolNode"
                     f" starts a thread pool for each node call. That node with no guard, over bare: {each(node)};"
                     f" the guards over that same node: {each(over_node)} (medians, the same rounds)")
    return lines, targets


FLUSH_MB = 32  # copied between two buffers of this size before each cold call: past the caches of most machines


def _flusher(mb: int = FLUSH_MB) -> Callable[[], None]:
    """A copy of ``mb`` megabytes from one buffer to another: after it, little of what a call used before is still in
    the processor's caches, as after a framework's own work between two tool calls (a few milliseconds of it)."""
    src, dst = bytearray(mb << 20), bytearray(mb << 20)

    def flush() -> None:
        dst[:] = src
    return flush


def guards_alone(rounds: int, calls: int = 300) -> str:
    """The guarded path alone, as the async adapters call it (``Guard.acall`` on the event loop, contracts from the
    per-tool-set cache, a trivial async tool, claims in memory), and the ten-line wrapper alone: each once with the
    caches warm (call after call) and once cold (the caches flushed before each call, outside its measured time). The
    part of the added cost that is agentlab's own, without a framework's millisecond around it; cold, what it costs
    where a framework's work comes between two calls. Not a target row: the target is the real loop's."""
    from agentlab.adapters.core import Contract, Guard
    tools = [(f.__name__, f.__doc__ or "", schema) for f, schema in zip(plain_tools(), (
        {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
         "required": ["order_id", "amount"]}), strict=True)]
    guard = Guard("bench", writes={"refund"})
    wrapped = {f.__name__: f for f in wrapped_tools()}
    flush = _flusher()
    clock = time.process_time

    async def tool(args: dict) -> dict:
        return {"ok": 1}

    async def measure() -> dict[tuple[str, str, bool], float]:
        spent: dict[tuple[str, str, bool], list[float]] = {}
        for rnd in range(1 + max(rounds, 1)):
            for name in TOOLS:
                for cold in (False, True):
                    used = used_floor = 0.0
                    for i in range(calls):
                        args = _args(name, f"g{rnd}{int(cold)}_", i)
                        raw = json.dumps(args)
                        if cold:
                            flush()
                        t0 = clock()
                        contracts = guard.contracts(tools, lambda t: t, lambda t: Contract(*t))
                        await guard.acall(contracts, name, raw, tool, turn=("bench", rnd, cold))
                        used += clock() - t0
                        if cold:
                            flush()
                        t0 = clock()
                        wrapped[name](**json.loads(raw))
                        used_floor += clock() - t0
                    if rnd:
                        spent.setdefault(("guards", name, cold), []).append(used / calls * 1e6)
                        spent.setdefault(("wrapper", name, cold), []).append(used_floor / calls * 1e6)
        return {k: statistics.median(v) for k, v in spent.items()}
    got = asyncio.run(measure())

    def two(what: str, cold: bool) -> str:
        return f"lookup {got[what, 'lookup', cold]:.0f} µs, refund {got[what, 'refund', cold]:.0f} µs"
    return (f"the guards alone (Guard.acall on the loop, no framework; {calls} calls a round, medians): caches warm"
            f" {two('guards', False)}; caches flushed before each call ({FLUSH_MB} MB copied) {two('guards', True)}"
            f" per call. The ten-line wrapper alone: warm {two('wrapper', False)}; flushed {two('wrapper', True)}."
            f" Load {_load():.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds counted (one more warms up)")
    ap.add_argument("--runs", type=int, default=10, help=f"agent runs of {CALLS} tool calls per side per round")
    ap.add_argument("--no-faults", action="store_true", help="only the cost, not the fault table")
    ap.add_argument("--lang", choices=("en", "zh"), default="en")
    ap.add_argument("--only", default="", help="only the loops whose name holds this (pydantic, langgraph ainvoke...)")
    ns = ap.parse_args()
    missing = [fw for fw in FRAMEWORKS if not installed(fw)]
    if missing:
        print("not installed:", ", ".join(missing), "(pip install -r requirements-frameworks.txt)")
    if not ns.no_faults:
        t0 = time.perf_counter()
        rows = compare()
        print(table(rows, ns.lang))
        print(f"\n{len(rows)} rows, {2 * len(rows)} agent runs in {time.perf_counter() - t0:.1f} s\n")
    load0 = _load()
    lines, targets = cost(ns.rounds, ns.runs, ns.only)
    print("\n".join(lines))
    print(guards_alone(min(ns.rounds, 5), calls=60 * min(ns.rounds, 5)))  # a short run (a test's) stays short
    print(f"load average (1 min) before / after: {load0:.2f} / {_load():.2f} on {os.cpu_count()} CPUs\n")
    print("\n".join(targets))


if __name__ == "__main__":
    main()
