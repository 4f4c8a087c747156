"""agentlab's guards around an OpenAI Agents SDK agent's function tools:
``tools = guard_function_tools([refund, lookup], writes={"refund"})``, then ``Agent(..., tools=tools)`` and
``Runner.run(agent, ..., run_config=tools.run_config())``.

:func:`guard_function_tools` returns the same tools as the SDK's own ``FunctionTool`` objects (same names,
descriptions and JSON Schemas), each with its ``on_invoke_tool`` replaced by one that sends the call through
agentlab's guards and then runs the original tool. The original runs with the SDK's failure formatter switched off, so a tool's exception
reaches agentlab (which resends a transient one and redacts the rest) instead of becoming the SDK's generic
"An error occurred" text.

What a tool wrapper cannot do here: a call to a name the agent has no tool for never reaches a tool, and the
runner raises ``ModelBehaviorError`` out of the run by default. The SDK's run settings are the only way round it;
``tools.run_config()`` sets them (``tool_not_found_behavior="return_error_to_model"`` and a formatter that gives
agentlab's answer, the tools there are), so it is a second argument to ``Runner.run``, not part of the wrapping call.

The keys of writes are scoped to the run's ``RunConfig.group_id``, the id the SDK keeps for a conversation ("a chat
thread ID"): set it to your conversation's own id, and a caller restarted with it replays instead of writing twice.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .core import Contract, Guard, Writes

__all__ = ["guard_function_tools"]

# json.dumps(args, ensure_ascii=False), the encoder made once: the checked arguments of each call, as the SDK reads them
_ARGS_TEXT = json.JSONEncoder(ensure_ascii=False).encode


class GuardedTools(list):
    """The guarded ``FunctionTool`` list an ``Agent`` takes as ``tools``, with its :class:`Guard` (``.guard``)
    and the run settings that give an unknown tool agentlab's answer (:meth:`run_config`)."""

    guard: Guard

    def contracts(self) -> tuple[Contract, ...]:
        """The tools' contracts, built again only when a tool was added, removed or replaced (a list may change)."""
        return self.guard.contracts(self, _parts, _contract)

    def run_config(self, base: Any = None) -> Any:
        """``base`` (an SDK ``RunConfig``, default a new one) set so that a call to an unknown tool is answered
        with the list of tools instead of raising out of the run."""
        from agents import RunConfig

        tools = self

        async def formatter(args: Any) -> str | None:
            if args.kind != "tool_not_found":
                return None  # the SDK's own message (our tools never raise, so only its other errors get here)
            # the formatter is not told the arguments; the guard answers for the name, and writes the trace row
            out = await tools.guard.acall(tools.contracts(), args.tool_name, "{}", _nothing, call_id=args.call_id)
            return out.content

        return replace(base or RunConfig(), tool_not_found_behavior="return_error_to_model",
                       tool_error_formatter=formatter)


def guard_function_tools(tools: Iterable[Any], *, writes: Writes = (), **options: Any) -> GuardedTools:
    """``tools`` (the SDK's ``FunctionTool`` objects, or plain functions, which ``function_tool`` makes into
    ones) with agentlab's guards around each call. ``writes`` names the tools that change the world;
    ``options`` are :class:`~agentlab.adapters.core.Guard`'s (``config``, ``store``, ``trace``, ``lang``,
    ``sleep``...). The guard is the returned list's ``.guard`` (its trace rows: ``.guard.events``)."""
    from agents import FunctionTool, function_tool

    out = GuardedTools()
    out.guard = Guard("openai-agents", writes=writes, **options)
    for tool in tools:
        if not isinstance(tool, FunctionTool):
            tool = function_tool(tool, failure_error_function=None)
        out.append(_guarded(tool, out))
    return out


def _guarded(tool: Any, tools: GuardedTools) -> Any:
    # the original with no failure formatter: its exception reaches agentlab, not the SDK's generic text
    original = replace(tool, _failure_error_function=None, _use_default_failure_error_function=False)

    async def on_invoke_tool(ctx: Any, arguments: str) -> str:
        def run(args: dict) -> Any:
            # the SDK's own argument parsing and the tool, where the SDK runs it
            return original.on_invoke_tool(ctx, _ARGS_TEXT(args))

        # the conversation's id the caller set (the SDK never makes one up): it survives a restart of the caller
        group = getattr(getattr(ctx, "run_config", None), "group_id", None) or None
        # the repeat breaker counts within this run: the SDK names no run, but each run has one usage record,
        # which every tool call's context shares (counted across runs, the third user to ask about the same order
        # was told their lookup was a loop)
        got = await tools.guard.acall(tools.contracts(), tool.name, arguments, run,
                                      call_id=getattr(ctx, "tool_call_id", None), run_id=group, conversation=group,
                                      turn=getattr(ctx, "usage", None))
        return got.content

    # the SDK reads the wrapper's signature and type hints on every call (which context to hand it); this module's
    # annotations are strings (``from __future__ import annotations``), and resolving them compiled two of them
    # for each call: the same hints, as the objects they name, cost it a dict lookup
    on_invoke_tool.__annotations__ = {"ctx": Any, "arguments": str, "return": str}
    return replace(tool, on_invoke_tool=on_invoke_tool)


def _parts(tool: Any) -> tuple:
    return (tool, tool.name, tool.description, tool.params_json_schema)


def _contract(tool: Any) -> Contract:
    return Contract(tool.name, tool.description, tool.params_json_schema)


async def _nothing(args: dict) -> None:
    return None  # an unknown tool: the guard answers for the name, nothing runs
