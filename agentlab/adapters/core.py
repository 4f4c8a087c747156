"""The guards one adapter puts around a framework's tools (docs/guards.md#guards-in-other-frameworks).

A framework hands every tool call to its tool; an adapter hands it to :meth:`Guard.call` first, with the
framework's own tool bound to the call. Every guard is agentlab's own (:func:`agentlab.calls.guarded_call`):
the contract checks with readable problems, the repeat breaker, the idempotency key computed here from the
session, the tool and the canonical arguments (never by the model), the claim and replay in a store, the
resend of transient failures with the Retry-After floor, the structured error with secrets redacted, and one
trace row per call (:class:`agentlab.trace.Event`), written as the guarded loop writes them.

The session a key is scoped to must survive a restart of the caller, the most common way a call is retried:
each adapter hands over the id its framework keeps for the conversation (LangGraph's ``thread_id``, pydantic-ai's
``conversation_id``, the Agents SDK's ``group_id``). When there is none and the claims live in a store that
outlives the process, a write keyed by its conversation is refused with a :class:`~agentlab.errors.UsageError`
before it runs, rather than keyed by an id that dies with the process (docs/guards.md#idempotency-across-restarts).
"""
from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, fields, replace
from itertools import chain
from operator import is_
from pathlib import Path
from typing import Any

from ..calls import (
    CallContext,
    CallOutcome,
    aguarded_call,
    default_store,
    guarded_call,
    outlives_process,
    session_scoped,
)
from ..errors import ToolFailure, UsageError, make_error, render
from ..guards import GuardConfig
from ..i18n import Lang, check_lang, t
from ..jsonutil import canonical
from ..models.interface import ToolCall
from ..store import Store
from ..tools import MAX_ARGS_CHARS, Registry, Tool
from ..trace import Event, to_jsonl

__all__ = ["KEPT_EVENTS", "MAX_TOOL_SETS", "MAX_TURNS", "Contract", "Guard", "Writes"]

# json.dumps(..., ensure_ascii=False, default=str), made once: a framework's dict of arguments, each call
_ARGS = json.JSONEncoder(ensure_ascii=False, default=str).encode
_SESSION_HOWTO = ("adapters.no_session.pydantic-ai", "adapters.no_session.openai-agents", "adapters.no_session.langgraph")

#: the tool sets whose compiled registries a guard keeps
MAX_TOOL_SETS = 64

#: the turns whose counts the repeat breaker keeps (a run still going after this many newer ones counts afresh)
MAX_TURNS = 1024

#: the trace rows a guard keeps in :attr:`Guard.events` by default: the last ten thousand calls' (a few megabytes)
KEPT_EVENTS = 10_000

#: which tools write: their names, or a name -> business key (``{"refund": lambda a: a["order_id"]}``: one refund
#: per order, whatever else the model wrote). A framework does not say which of its tools change the world.
Writes = Iterable[str] | Mapping[str, Callable[[dict], str] | None]


class Contract:
    """What agentlab knows of one framework tool: its name, description and JSON Schema (no ``fn``: the
    framework's tool is bound to each call)."""

    __slots__ = ("description", "name", "parameters")

    def __init__(self, name: str, description: str, parameters: Mapping[str, Any] | None):
        self.name, self.description = name, description or ""
        self.parameters = dict(parameters or {"type": "object", "properties": {}})


class Guard:
    """agentlab's guards for one session of one framework's agent; an adapter makes one per wrapping call.

    Args:
        framework: its name, written on each trace row (``loop``).
        writes: which tools change the world (claimed under a key, replayed when repeated).
        config: the guards (:class:`~agentlab.guards.GuardConfig`); ``timeout``, ``retry``, ``repeat_limit``...
        store: where claims live (:func:`~agentlab.store.open_store`: memory, ``sqlite:///...``, ``redis://``);
            default ``AGENTLAB_STORE`` or a store of this guard's own.
        trace: a JSONL file each call's row is appended to, as the guarded loop writes its rows.
        sleep, clock, rng: injected, as in the guarded loop (a test waits for no Retry-After).
        session_id: the conversation the keys are scoped to, for a guard made for one conversation. Default: the
            conversation id the framework hands each call (:meth:`call`'s ``conversation``); else, on a store
            of the guard's own (gone with the process anyway), one made up per guard.
        keep_events: keep the last calls' trace rows in :attr:`events` (a notebook reads them): ``True`` the last
            :data:`KEPT_EVENTS`, a number that many, ``False`` none (the MCP gateway, which writes its own logs).
            Kept without a bound, an application that makes its agent once and runs it for weeks grew by a row
            per tool call; ``trace`` is where every row is kept. Between two trims up to an eighth more are held.
    """

    def __init__(self, framework: str, *, writes: Writes = (), config: GuardConfig = GuardConfig(),
                 store: Store | str | None = None, trace: str | Path | None = None, lang: Lang = "en",
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.perf_counter,
                 rng: random.Random | None = None, session_id: str | None = None, keep_events: bool | int = True):
        from ..store import open_store  # only for a URL
        self.framework, self.lang = framework, check_lang(lang)
        self.writes: dict[str, Callable[[dict], str] | None] = \
            dict(writes) if isinstance(writes, Mapping) else dict.fromkeys(writes)
        self.ctx = CallContext(Registry(lang=self.lang), config,
                               open_store(store) if isinstance(store, str) else store or default_store(),
                               sleep, rng or random.Random(0), clock, session_id or uuid.uuid4().hex[:12], self.lang)
        self.session_id = session_id  # given by the caller: it wins over the framework's id
        # a store only this process can read: a made-up session loses nothing at a restart, which loses the store too
        self._private = not outlives_process(self.ctx.store)
        self.trace = Path(trace) if trace is not None else None
        self.events: list[Event] = []
        self.keep_events = KEPT_EVENTS if keep_events is True else max(0, int(keep_events))
        self.calls = 0
        self._seen: dict[str, int] = {}  # the repeat breaker's counts when no turn is given
        # turn -> (a weak reference to it when it is an object, its counts, its own id): the last MAX_TURNS turns
        self._turns: OrderedDict[object, tuple[weakref.ref | None, dict[str, int], str]] = OrderedDict()
        self._lock = threading.Lock()  # the turns and the call count, shared by threads
        self._registries: dict[str, Registry] = {}
        # the last tool set an adapter asked about: what it was made of (held, so no id is ever reused), its contracts,
        # and the last contracts tuple's registry. A framework hands the same tools to every call; building the
        # contracts and their canonical signature again each time was 25-60 us of every call.
        self._tool_set: tuple[tuple[Any, ...], tuple[Contract, ...]] | None = None
        self._last: tuple[tuple[Contract, ...], Registry] | None = None
        self._ctx: CallContext = self.ctx  # the last call's context (its registry and session), made again on a change
        self._label = config.label  # the config is frozen: its label is written on every trace row

    def __repr__(self) -> str:
        return f"Guard({self.framework}, {self.calls} calls, {self.ctx.config.label})"

    def registry(self, contracts: Iterable[Contract]) -> Registry:
        """The registry of these contracts, compiled once for each set of tools an agent offers. The same tuple
        as the last call's (what :meth:`contracts` hands out while the tools stay the same) is its registry at
        once; anything else is looked up by its canonical text."""
        last = self._last
        if last is not None and contracts is last[0]:
            return last[1]
        listed = list(contracts)
        sig = canonical([[c.name, c.description, c.parameters] for c in listed])
        reg = self._registries.get(sig)
        if reg is None:
            reg = Registry([self._tool(c) for c in listed], lang=self.lang)
            self._registries[sig] = reg
            if len(self._registries) > MAX_TOOL_SETS:  # tools made per user: the oldest set is compiled again if met
                self._registries.pop(next(iter(self._registries)))
        if isinstance(contracts, tuple):  # a list may change in place: never trusted by identity
            self._last = (contracts, reg)
        return reg

    def contracts(self, tools: Sequence[Any], parts: Callable[[Any], tuple],
                  build: Callable[[Any], Contract]) -> tuple[Contract, ...]:
        """The contracts of a framework's ``tools``, built (``build(tool)``) only when the tool set changed.

        ``parts(tool)`` is what a contract is made of (the tool object, its schema object, its name...): the set
        is the same when every part is the very same object as last time. Compared by identity, and held here
        while they are the last set, so a tool added, removed or replaced, or a schema or description set anew,
        always gets new contracts; only a schema dict edited in place goes unseen (a framework that allows that
        has no stable contract to give)."""
        now = tuple(map(parts, tools))
        kept = self._tool_set
        # compared in C (map, operator.is_): every call of every framework asks, and the generator expressions
        # this was, two per tool, were a tenth of what the guards themselves cost; the lengths keep the flat
        # comparison aligned tool by tool
        if kept is not None and len(kept[0]) == len(now) and list(map(len, kept[0])) == list(map(len, now)) \
                and all(map(is_, chain.from_iterable(kept[0]), chain.from_iterable(now))):
            return kept[1]
        built = tuple(build(t) for t in tools)
        self._tool_set = (now, built)
        return built

    def _tool(self, c: Contract) -> Tool:
        write = c.name in self.writes
        return Tool(c.name, c.description, c.parameters, side_effect=write, business_key=self.writes.get(c.name))

    def session(self, reg: Registry, name: str, conversation: str | None, stable: bool,
                turn_id: str | None = None) -> str:
        """The session this call's key is scoped to: the caller's ``session_id``; else the framework's
        conversation id, if it survives a restart; else (only where that cannot matter) the conversation, else this
        run's own id (``turn_id``: one per turn, see :meth:`call`), else one of this guard's own. Scoped to the
        guard, a second customer's identical write (a call-back note on the same order) was answered from the
        first customer's claim and never ran.

        Raises :class:`~agentlab.errors.UsageError` for a write keyed by its conversation, on a store that
        outlives the process, with no id that survives a restart: keyed by an id that dies with the process, a
        retry after a restart would run it again."""
        if self.session_id:
            return self.session_id
        if conversation and stable:
            return conversation
        if self._private or name not in reg or not session_scoped(reg[name], self.ctx.config):
            return conversation or turn_id or self.ctx.session_id
        how = t(f"adapters.no_session.{self.framework}", self.lang) if f"adapters.no_session.{self.framework}" \
            in _SESSION_HOWTO else ""
        raise UsageError(t("adapters.no_session", self.lang, framework=self.framework, tool=name,
                           store=type(self.ctx.store).__name__, how=how))

    @property
    def on_loop(self) -> bool:
        """Whether :meth:`acall` runs its guards on the event loop itself: the claims live in this process
        (nothing a claim waits on), so no worker thread is needed. A store that outlives the process (a SQLite
        file, Redis) is network or disk I/O, which must not hold up the loop: there the guards run in a worker."""
        return self._private

    def call(self, contracts: Iterable[Contract], name: str, arguments: str | Mapping[str, Any] | None,
             run: Callable[[dict], Any], *, call_id: str | None = None, run_id: str | None = None,
             conversation: str | None = None, stable: bool = True, turn: object = None) -> CallOutcome:
        """One tool call of the framework, through every guard. ``run(args)`` runs the framework's tool with the
        checked arguments and returns its result (or raises); it runs at most once per key. ``run`` raising
        ``NotImplementedError`` means the framework could not start the tool (LangChain's sync entry of an
        async-only tool): nothing was done, and the model is told exactly that.

        ``conversation`` is the framework's id for the conversation this call belongs to; ``stable`` says it
        survives a restart of the caller (an id the framework made up for this run alone does not).

        ``turn`` is what the repeat breaker counts identical calls within: one run of the agent, one user's turn.
        An object that can be weakly referenced (the run's usage record) is told apart by identity; anything else
        (a string id, a tuple) by value. An agent is made once and runs for every user: counted across runs, the
        third customer who asked about the same order was told their lookup was a loop. None: the
        ``conversation``; with neither, this guard's own count (a guard made for one conversation). Each turn also
        has an id of its own, which scopes a write's key when there is no conversation (:meth:`session`).

        Returns the outcome; ``outcome.content`` is exactly what the model is to be told."""
        counts, turn_id = self._turn(turn if turn is not None else conversation)
        ctx, raw = self._prepare(contracts, name, arguments, conversation, stable, turn_id)

        def started(**kw: Any) -> Any:
            try:
                return run(kw)
            except NotImplementedError as exc:
                raise _not_run() from exc
        t0 = ctx.clock()
        try:
            out = guarded_call(ToolCall(name, raw, call_id or ""), ctx, counts, fn=started)
        except Exception as exc:  # noqa: BLE001 - a guard that failed itself (a bug): the run goes on, told so
            out = self._broken(exc)
        return self._record(out, ctx, name, raw, call_id, run_id, t0)

    async def acall(self, contracts: Iterable[Contract], name: str, arguments: str | Mapping[str, Any] | None,
                    run: Callable[[dict], Awaitable[Any]], *, call_id: str | None = None, run_id: str | None = None,
                    conversation: str | None = None, stable: bool = True, turn: object = None) -> CallOutcome:
        """:meth:`call` for a framework whose tool is a coroutine: ``run(args)`` returns an awaitable.

        With the claims in this process (:attr:`on_loop`) every guard runs right here and the tool is awaited where
        the framework runs it: no thread. Otherwise the guards run in a worker thread (a store's I/O never holds
        up the loop) and the tool is sent back to this loop to run."""
        if not self.on_loop:
            loop = asyncio.get_running_loop()

            def hop(args: dict) -> Any:
                return asyncio.run_coroutine_threadsafe(_awaited(run(args)), loop).result()
            return await asyncio.to_thread(self.call, contracts, name, arguments, hop, call_id=call_id,
                                           run_id=run_id, conversation=conversation, stable=stable, turn=turn)
        counts, turn_id = self._turn(turn if turn is not None else conversation)
        ctx, raw = self._prepare(contracts, name, arguments, conversation, stable, turn_id)

        async def started(**kw: Any) -> Any:
            try:
                return await run(kw)
            except NotImplementedError as exc:
                raise _not_run() from exc
        t0 = ctx.clock()
        try:
            out = await aguarded_call(ToolCall(name, raw, call_id or ""), ctx, counts, fn=started)
        except Exception as exc:  # noqa: BLE001 - a guard that failed itself (a bug): the run goes on, told so
            out = self._broken(exc)
        return self._record(out, ctx, name, raw, call_id, run_id, t0)

    def _turn(self, turn: object) -> tuple[dict[str, int], str | None]:
        """The repeat breaker's counts of one turn (see :meth:`call`) and the turn's own id, made on its first call.
        An object is told apart by identity, its address never mistaken for a later turn's (a weak reference says
        whether it is still the same object); the oldest turns are forgotten past :data:`MAX_TURNS`.

        Raises ``TypeError`` for a turn neither weakly referenceable nor hashable: silently counted afresh at each
        call, it switched the breaker off."""
        if turn is None:
            return self._seen, None
        ref: weakref.ref | None = None
        key: object
        if type(turn) in _BY_VALUE:  # pydantic-ai's run id, LangGraph's tuple: no weak reference tried and refused
            key = ("value", turn)
            hash(key)  # a tuple holding a list is the caller's mistake, said here, before anything runs
        else:
            try:
                ref, key = weakref.ref(turn), ("object", id(turn))
            except TypeError:  # not weakly referenceable (a float, a frozenset...): the same value is the same turn
                key = ("value", turn)
                hash(key)  # an unhashable turn (a dict) is the caller's mistake, said here, before anything runs
        with self._lock:
            kept = self._turns.get(key)
            if kept is not None and (ref is None or (kept[0] is not None and kept[0]() is turn)):
                self._turns.move_to_end(key)
                return kept[1], kept[2]
            self._turns.pop(key, None)  # a dead object's address, reused: the new turn is the newest, not the oldest
            entry: tuple[weakref.ref | None, dict[str, int], str] = (ref, {}, uuid.uuid4().hex[:12])
            self._turns[key] = entry
            if len(self._turns) > MAX_TURNS:
                self._turns.popitem(last=False)
            return entry[1], entry[2]

    def _prepare(self, contracts: Iterable[Contract], name: str, arguments: str | Mapping[str, Any] | None,
                 conversation: str | None, stable: bool, turn_id: str | None = None) -> tuple[CallContext, str]:
        reg = self.registry(contracts)
        session = self.session(reg, name, conversation, stable, turn_id)  # raises before anything runs
        if isinstance(arguments, str):
            raw = arguments
        else:  # a framework's dict may hold what JSON has not: a date or a set as its text, never a TypeError
            try:
                raw = _ARGS(arguments or {})
            except (ValueError, RecursionError):  # a dict that holds itself has no text: refused as not JSON
                raw = "{...}"
        ctx = self._ctx
        if ctx.registry is not reg or ctx.session_id != session:
            ctx = self._ctx = replace(self.ctx, registry=reg, session_id=session)
        return ctx, raw

    def _broken(self, exc: Exception) -> CallOutcome:
        err = make_error("TOOL_ERROR")
        return CallOutcome(render(err, self.lang), err, exec_ok=False, note=f"adapter: {type(exc).__name__}")

    def _record(self, out: CallOutcome, ctx: CallContext, name: str, raw: str, call_id: str | None,
                run_id: str | None, t0: float) -> CallOutcome:
        e, session = out.error, ctx.session_id
        with self._lock:  # calls in threads at once (LangGraph's executor): each one counted, each its own index
            self.calls += 1
            index = self.calls
        if not self.keep_events and self.trace is None:
            return out
        event = _event(run_id=run_id or session, session_id=session, turn_id=1,
                       round_index=index, kind="tool", loop=self.framework,
                       guard_config=self._label, tool_name=name, tool_call_id=call_id,
                       args_raw=raw[:MAX_ARGS_CHARS], parse_ok=out.parse_ok, validate_ok=out.validate_ok,
                       exec_ok=out.exec_ok, error_code=e.code if e else None,
                       error_category=e.category if e else None, error_stage=e.stage if e else None,
                       retry_count=out.retries, latency_ms=(ctx.clock() - t0) * 1000, model_visible=out.content,
                       replayed=out.replayed, note=out.note)
        if self.keep_events:
            events = self.events
            events.append(event)
            if len(events) > self.keep_events + self.keep_events // 8:  # trimmed now and then, not at each row
                del events[:-self.keep_events]
        if self.trace is not None:
            to_jsonl([event], self.trace, append=True)
        return out


#: turns told apart by value: a weak reference to one is refused (TypeError), an exception raised and caught per call
_BY_VALUE = frozenset({str, int, tuple, bytes})


# an Event's defaults, each a plain value (no default_factory: else every row is made the dataclass's own way)
_EVENT_DEFAULTS = {f.name: f.default for f in fields(Event) if f.default is not MISSING}
_PLAIN_EVENT = all(f.default_factory is MISSING for f in fields(Event))


def _event(**values: Any) -> Event:
    """``Event(**values)``, its fields filled at once: the frozen dataclass's ``__init__`` sets each of its 25 fields
    through ``object.__setattr__``, one call each, for the trace row of every call an adapter guards. The row is the
    same (the same fields, the dataclass's own defaults), equal to and hashed as one made the usual way."""
    if not _PLAIN_EVENT:
        return Event(**values)
    row = object.__new__(Event)
    row.__dict__.update(_EVENT_DEFAULTS, **values)
    return row


def _not_run() -> ToolFailure:
    # the framework had no way to start the tool: nothing was done, so the model hears that, never
    # "started, outcome unknown, a person will check" (what any other exception of a write means)
    return ToolFailure("NOT_RUN", {lg: t("NOT_RUN.cannot_run", lg) for lg in ("en", "zh")})


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
