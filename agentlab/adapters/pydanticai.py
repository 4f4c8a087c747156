"""agentlab's guards around a pydantic-ai agent's tools, through pydantic-ai's own extension point, a toolset
wrapper (``WrapperToolset``): ``Agent(model, toolsets=[guard_toolset(toolset, writes={"refund"})])``.

pydantic-ai checks a call's arguments before any toolset sees them, so the wrapper offers each tool with a
validator that hands the raw arguments through: agentlab checks them against the tool's JSON Schema and tells
the model its readable problems; pydantic-ai's own validator then runs on arguments agentlab passed. A name
the agent has no tool for never reaches a toolset: pydantic-ai answers it itself, with the list of its tools.

The keys of writes are scoped to the run's ``conversation_id``: the one passed to ``agent.run`` or carried by the
``message_history`` handed back, both of which survive a restart of the caller. One pydantic-ai makes up for a
first run (a UUID7 minted with the run's id) does not, and is used only where a restart cannot matter.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from dataclasses import replace
from typing import Any

from .core import Contract, Guard, Writes

__all__ = ["guard_toolset"]

# json.dumps(..., ensure_ascii=False, default=str), the encoder made once: arguments a model gave as a dict, each call
_ARGS_TEXT = json.JSONEncoder(ensure_ascii=False, default=str).encode
_RAW = "__agentlab_raw__"  # the one key the pass-through validator hands on: the arguments as the model wrote them


class _PassThrough:
    """A validator (pydantic-ai's ``SchemaValidatorProt``) that checks nothing: the arguments, as written, reach
    the guarded call, where agentlab's contract checks run (and say what is wrong in agentlab's words)."""

    def validate_json(self, input: str | bytes | bytearray, *, allow_partial: Any = False, **kw: Any) -> Any:
        return {_RAW: input.decode() if isinstance(input, bytes | bytearray) else input}

    def validate_python(self, input: Any, *, allow_partial: Any = False, **kw: Any) -> Any:
        if isinstance(input, dict) and set(input) == {_RAW}:
            return input
        return {_RAW: _ARGS_TEXT(input)}


def _uuid7_ms(text: str | None) -> int | None:
    try:
        u = uuid.UUID(str(text))
    except ValueError:
        return None
    return u.int >> 80 if u.version == 7 else None


def _survives(ctx: Any) -> bool:
    """Whether the run's ``conversation_id`` survives a restart of the caller: it was carried in by the message
    history (an earlier run's message holds it), or the caller chose it. pydantic-ai does not say which; the one
    it makes up when given neither is a UUID7 minted with the run's own id, within the same second."""
    cid = getattr(ctx, "conversation_id", None)
    if not cid:
        return False
    if any(getattr(m, "conversation_id", None) == cid and getattr(m, "run_id", None) not in (None, ctx.run_id)
           for m in getattr(ctx, "messages", None) or ()):
        return True
    made, run = _uuid7_ms(cid), _uuid7_ms(getattr(ctx, "run_id", None))
    return made is None or run is None or abs(made - run) > 1000


_PASS = _PassThrough()  # it keeps nothing: one serves every tool
_PLAIN: dict[type, bool] = {}  # a tool class -> copied field by field (see _offered)


def _offered(tool: Any) -> Any:
    """``tool`` as the model is offered it: the pass-through validator, no validator function, a retry at least (what
    agentlab tells the model is a retry). A plain dataclass (pydantic-ai's own tools) is copied field by field with
    no ``__init__`` run again, in about half the time of ``dataclasses.replace`` (which checks every field again), at
    every step of every run. Any other (slots, a ``__post_init__``) goes through ``replace``, as it always did."""
    cls = type(tool)
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = dataclasses.is_dataclass(cls) and getattr(cls, "__post_init__", None) is None \
            and not any(c.__dict__.get("__slots__") for c in cls.__mro__)
    if plain:
        copy = object.__new__(cls)
        copy.__dict__.update(tool.__dict__)
        copy.__dict__.update(args_validator=_PASS, args_validator_func=None, max_retries=max(tool.max_retries, 1))
        return copy
    return replace(tool, args_validator=_PASS, args_validator_func=None, max_retries=max(tool.max_retries, 1))


def _parts(tool: Any) -> tuple:
    # pydantic-ai makes a new ToolDefinition each step, of the very same name, description and schema objects
    # (a tool's ``prepare`` that changes them hands out new ones): those are what a contract is made of
    d = tool.tool_def
    return (d.name, d.description, d.parameters_json_schema)


def _contract(tool: Any) -> Contract:
    d = tool.tool_def
    return Contract(d.name, d.description or "", d.parameters_json_schema)


def guard_toolset(toolset: Any, *, writes: Writes = (), **options: Any) -> Any:
    """``toolset`` (any pydantic-ai toolset: a ``FunctionToolset``, an MCP server...) with agentlab's guards
    around every tool it offers. ``writes`` names the tools that change the world; ``options`` are
    :class:`~agentlab.adapters.core.Guard`'s (``config``, ``store``, ``trace``, ``lang``, ``sleep``...).
    The guard is the returned toolset's ``.guard`` (its trace rows are ``.guard.events``)."""
    from pydantic_ai.toolsets import WrapperToolset

    guard = Guard("pydantic-ai", writes=writes, **options)
    one = guard
    # _survives(ctx) for the last run: one run's answer never changes (its own messages carry its own run id, and
    # the two ids are the run's), and reading the history and two UUIDs again for each call cost ~20 us
    last: list[tuple[Any, bool]] = [(None, False)]  # one tuple, replaced whole: runs in other threads read it too

    def survives(ctx: Any) -> bool:
        run = (ctx.run_id, getattr(ctx, "conversation_id", None))
        kept = last[0]
        if kept[0] != run:
            kept = last[0] = (run, _survives(ctx))
        return kept[1]

    class GuardedToolset(WrapperToolset):
        """A pydantic-ai toolset with agentlab's guards around each tool of the one it wraps."""

        guard = one  # a class attribute: pydantic-ai copies a toolset for each run (dataclasses.replace)

        async def get_tools(self, ctx: Any) -> dict[str, Any]:
            tools = await self.wrapped.get_tools(ctx)
            self._originals = tools
            return {name: _offered(t) for name, t in tools.items()}

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
            originals = getattr(self, "_originals", None) or await self.wrapped.get_tools(ctx)
            original = originals[name]
            # the same tool definitions every step of every run: their contracts are built once (Guard.contracts)
            contracts = guard.contracts(list(originals.values()), _parts, _contract)

            async def run(args: dict) -> Any:
                # the framework's own checks, then its tool, where pydantic-ai runs it
                checked = original.args_validator.validate_python(args, context=ctx.validation_context)
                if original.args_validator_func is not None:
                    r = original.args_validator_func(ctx, **checked)
                    if asyncio.iscoroutine(r):
                        await r
                return await self.wrapped.call_tool(name, checked, ctx, original)

            raw = tool_args.get(_RAW) if set(tool_args) == {_RAW} else tool_args
            # the repeat breaker counts within this run: the agent serves every user, and counted across runs
            # the third user to ask about the same order was told their lookup was a loop
            out = await guard.acall(contracts, name, raw, run, call_id=ctx.tool_call_id, run_id=ctx.run_id,
                                    conversation=getattr(ctx, "conversation_id", None), stable=survives(ctx),
                                    turn=ctx.run_id)
            return out.content

    return GuardedToolset(toolset)
