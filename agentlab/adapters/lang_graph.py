"""agentlab's guards around a LangGraph agent's tools: ``create_react_agent(llm, guard_tools(tools, writes={"refund"}))``.

:func:`guard_tools` returns LangGraph's own ``ToolNode`` for the same tools, with one interceptor (its
``wrap_tool_call`` and ``awrap_tool_call`` hooks) that sends every call through agentlab's guards before the
node runs the tool. The interceptor sees a call before the node looks its name up, so an unknown name gets
agentlab's answer (the tools there are). It sees the arguments as LangChain parsed them: a call whose arguments
were not JSON is set aside by the chat model's parser (``invalid_tool_calls``) and never reaches a tool node.

A graph run with ``invoke`` runs its tools' sync entry, and a tool made from an ``async def`` (``@tool`` on a
coroutine) has none: :func:`guard_tools` gives each such tool one that runs the coroutine on an event loop of its
own, so the tool runs under ``invoke`` and ``ainvoke`` alike. A tool the framework still cannot start (a
``BaseTool`` whose ``_run`` raises ``NotImplementedError``) is answered ``NOT_RUN``: nothing was done.

A graph run with ``invoke`` (or ``stream``) makes LangGraph's ``ToolNode`` start a thread pool for every node call,
to run the model's tool calls at once; that new thread cost a tool call more CPU than all of agentlab's guards
(``benchmarks/bench_adapters.py`` prints both). The node :func:`guard_tools` returns hands a lone call to one of
agentlab's worker threads instead, kept from call to call (:meth:`agentlab.workers._Pool.run_to_end`), in a copy of
the caller's context, and waits for it as LangGraph waits for its pool: the call runs off the caller's thread as
before, the guards keep its deadline as they do in any thread (handing the tool to a worker of its own, as from
LangGraph's pool), and an interrupt of the caller (Ctrl-C) goes on once the call has ended, as from LangGraph's pool.
Several calls at once still go to LangGraph's pool, and so does every call of a guard with no deadline to keep
(``GuardConfig(timeout=None)``: the tool runs where the guard runs, in a thread of its own as LangGraph gives it, not
in a worker kept from call to call), every call when no worker can be started, and every call where
``ToolNode._func`` is not the one this node was written against (:data:`_MIRRORED`: another LangGraph, or a wrapper
patched over it).

The keys of writes are scoped to the graph's ``thread_id`` (``config={"configurable": {"thread_id": ...}}``), the
conversation id a checkpointer keeps, so a caller restarted with the same thread replays instead of writing twice.
"""
from __future__ import annotations

import contextvars
import functools
import hashlib
import inspect
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..timeouts import run_to_end
from ..workers import NoWorker, _pool
from .core import Contract, Guard, Writes

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.runtime import Runtime

__all__ = ["guard_tools"]


def _with_sync_entry(tool: Any) -> Any:
    """A LangChain ``StructuredTool`` made from a coroutine alone, given a sync entry that runs it (a copy; other
    tools as they are). ``functools.wraps`` keeps the coroutine's signature, which LangChain reads to pass
    ``config`` and injected arguments."""
    from langchain_core.tools import StructuredTool
    if not isinstance(tool, StructuredTool) or tool.func is not None or tool.coroutine is None:
        return tool
    coroutine = tool.coroutine

    @functools.wraps(coroutine)
    def func(*args: Any, **kwargs: Any) -> Any:
        return run_to_end(coroutine(*args, **kwargs))
    return tool.model_copy(update={"func": func})


#: the digest of the ``ToolNode._func`` text that :class:`_LoneCalls` mirrors (langgraph-prebuilt 1.1.3): a node call
#: made ready (its calls read, a runtime made for each) and handed to a new thread pool. Any other text: its own pool
_MIRRORED = "da0073353f9152e1"


def _mirrored(func: Any) -> bool:
    """Whether ``func`` is the ``ToolNode._func`` written out in :class:`_LoneCalls`: its own text (a wrapper's
    ``__wrapped__`` is not followed, as ``inspect.getsource`` would), by digest."""
    if hasattr(func, "__wrapped__") or not inspect.isfunction(func):
        return False
    try:
        text = inspect.getsource(func)
    except (OSError, TypeError):  # no source to compare: the pool, as LangGraph runs it
        return False
    return hashlib.sha256(text.encode()).hexdigest()[:16] == _MIRRORED


@functools.cache
def _node_type() -> type:
    """LangGraph's ``ToolNode``, handing a lone call of a sync node call to agentlab's worker (see the module)."""
    from langchain_core.runnables.config import get_config_list
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolRuntime

    written = ToolNode.__dict__["_func"]
    mirrored = _mirrored(written)

    class _LoneCalls(ToolNode):
        lone_in_worker = mirrored  # (read by the tests: the installed LangGraph is the one mirrored)

        # (annotated by name: LangGraph reads the names to hand the node its config and runtime)
        def _func(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
            # ToolNode._func as it was when this class was made, and the one mirrored (a patch since: its own way); a
            # guard with no deadline to keep (GuardConfig(timeout=None)) runs its tools where it runs, as the pool did
            if not mirrored or ToolNode.__dict__.get("_func") is not written or not self._timed():
                return super()._func(input, config, runtime)
            tool_calls, input_type = self._parse_input(input)
            if len(tool_calls) != 1:  # several at once: LangGraph's pool runs them side by side
                return super()._func(input, config, runtime)
            # what ToolNode._func makes for each call, for this one, run as its pool runs it: in a copy of the
            # context, off this thread, waited for until it ends
            (cfg,) = get_config_list(config, 1)
            call = tool_calls[0]
            tool_runtime: Any = ToolRuntime(state=self._extract_state(input, cfg), tool_call_id=call["id"], config=cfg,
                                            context=runtime.context, store=runtime.store,
                                            stream_writer=runtime.stream_writer, tools=list(self.tools_by_name.values()),
                                            execution_info=runtime.execution_info, server_info=runtime.server_info)
            run = functools.partial(contextvars.copy_context().run, self._run_one, call, input_type, tool_runtime)
            try:
                output = _pool.run_to_end(run)
            except NoWorker as exc:  # out of threads or descriptors: nothing ran, and LangGraph's own pool may start
                if exc.started:  # raised by the call itself, which had begun: never run again
                    raise
                return super()._func(input, config, runtime)
            return self._combine_tool_outputs([output], input_type)

        def _timed(self) -> bool:
            # the guard keeps a deadline (its tools run in agentlab's worker anyway); a node with no guard (the
            # benchmark's) is taken as one
            guard = getattr(self, "guard", None)
            return guard is None or guard.ctx.config.timeout is not None

    return _LoneCalls


def _parts(tool: Any) -> tuple:
    return (tool, tool.name, tool.description, getattr(tool, "args_schema", None))


def guard_tools(tools: Sequence[Any], *, writes: Writes = (), **options: Any) -> Any:
    """A LangGraph ``ToolNode`` (a subclass: a lone call in agentlab's worker, see the module) of ``tools``
    (LangChain tools or plain functions) with agentlab's guards around each call. ``writes`` names the tools that
    change the world; ``options`` are :class:`~agentlab.adapters.core.Guard`'s. The guard is the node's ``.guard`` (its rows: ``.guard.events``)."""
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import tool as as_tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    guard = Guard("langgraph", writes=writes, **options)
    node: Any = None

    def contract(tool: Any) -> Contract:
        fn = convert_to_openai_tool(tool)["function"]  # what the model is shown
        return Contract(fn["name"], fn.get("description", ""), fn.get("parameters"))

    def contracts() -> tuple[Contract, ...]:
        # converting every tool for every call was most of what this adapter cost: built again only when the node's
        # tools changed (a tool added, removed or replaced, or its description or argument schema set anew)
        return guard.contracts(list(node.tools_by_name.values()), _parts, contract)

    def told(request: Any, content: str, failed: bool) -> Any:
        call = request.tool_call
        return ToolMessage(content=content, name=call["name"], tool_call_id=call["id"],
                           status="error" if failed else "success")

    def result(message: Any) -> Any:
        # what the tool returned, as the node wrapped it (a Command, which steers the graph, is not data)
        content = getattr(message, "content", message)
        if getattr(message, "status", None) == "error":
            raise RuntimeError(str(content))
        if isinstance(content, str):  # the node serialised the tool's value: the model reads it as data again
            try:
                return json.loads(content)
            except ValueError:
                return content
        return content

    def thread(request: Any) -> str | None:
        # the conversation's id, as a checkpointer keeps it: it survives a restart of the caller
        config = getattr(request.runtime, "config", None) or {}
        value = (config.get("configurable") or {}).get("thread_id")
        return str(value) if value not in (None, "") else None

    def turn(request: Any, conversation: str | None) -> object:
        # what the repeat breaker counts within: the user's turn, the thread and the id of the last human message in
        # the state (add_messages gives each one; an application may give its own, the same in every thread); None
        # without one, and the guard counts within the thread. Counted across every invoke of the graph, the third user
        # to ask about the same order was told their lookup was a loop
        state = getattr(request, "state", None)
        messages: Any = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", state)
        for m in reversed(messages if isinstance(messages, list) else []):
            if getattr(m, "type", None) == "human":
                said = getattr(m, "id", None)
                # a message with no id (a state without add_messages) is the turn itself, told apart by identity
                return ("langgraph", conversation, said) if said else m
        return None

    def checked(request: Any, args: dict) -> Any:
        # the request with the arguments agentlab checked; the usual call's are the model's own, equal as they came
        # (read back from their JSON), and the request is handed on as it is: ``override`` copies it
        # (``dataclasses.replace``) and its call, a tenth of what this adapter added to a call
        call = request.tool_call
        return request if args == call.get("args") else request.override(tool_call={**call, "args": args})

    def wrap(request: Any, execute: Any) -> Any:
        call = request.tool_call

        def run(args: dict) -> Any:
            return result(execute(checked(request, args)))

        conversation = thread(request)
        out = guard.call(contracts(), call["name"], call.get("args") or {}, run, call_id=call.get("id"),
                         run_id=conversation, conversation=conversation, turn=turn(request, conversation))
        return told(request, out.content, out.error is not None)

    async def awrap(request: Any, execute: Any) -> Any:
        call = request.tool_call

        async def run(args: dict) -> Any:
            return result(await execute(checked(request, args)))

        conversation = thread(request)
        out = await guard.acall(contracts(), call["name"], call.get("args") or {}, run, call_id=call.get("id"),
                                run_id=conversation, conversation=conversation, turn=turn(request, conversation))
        return told(request, out.content, out.error is not None)

    # handle_tool_errors=False: a tool's exception reaches agentlab, which turns it into its structured error
    # a plain async function becomes a StructuredTool here (as ToolNode would make it), then gets its sync entry
    made = [_with_sync_entry(as_tool(t) if callable(t) and not hasattr(t, "invoke") else t) for t in tools]
    node = _node_type()(made, handle_tool_errors=False, wrap_tool_call=wrap, awrap_tool_call=awrap)
    node.guard = guard
    return node
