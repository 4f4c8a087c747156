"""Running one skill: three layers in front of the handler, one check behind it (docs/site.md#three-layers).

::

    arguments -> input schema (agentlab's validator: the same problems the loop shows)  -> 422
              -> the skill's business check (problems -> 422; a ToolFailure -> its error)
              -> handler under the skill's timeout (really stops waiting)           -> 504
                 a ToolFailure from the handler (source down...) -> its error + fallback_hint
              -> output shaped (a scalar is {"value": ...}, a list {"items": ...}, a summary added)
              -> output schema: a mismatch is the skill's bug -> 500, logged, never shown

:func:`run_skill` returns an :class:`Execution`: the HTTP status and the body the client
receives. What went wrong inside (a stack, the bad output) goes to ``Execution.internal``
for the operator's log, never into the body.

The skill's own code (its business check, its handler) never runs where the steps run: each piece
is a :class:`Handoff` the steps ``yield`` and a driver carries out in a worker thread, waiting at
most the handoff's ``limit``. :func:`run_steps` waits in the calling thread (``SkillSite.execute``,
a thread of its own); :func:`run_steps_async` on an event loop, which stays free for other requests
while the skill runs (the HTTP route of a read: the site's checks, logs and reply cost no thread).
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import Problem, ToolError, ToolFailure, make_error
from ..i18n import Lang, t
from ..schema import compile_schema
from ..store import result_json
from ..timeouts import Interrupted, WriteTimeout, _settle, can_interrupt, run_with_timeout, wait_in_worker
from ..workers import _LONGEST, NoWorker, _pool
from .flat import flat_summary
from .hints import fallback_hint as site_hint
from .hints import skill_hint
from .skills import Skill, SkillContext

__all__ = ["Execution", "Handoff", "SkillBug", "Steps", "body", "http_status", "input_problems", "one_line_summary",
           "run_skill", "run_steps", "run_steps_async", "run_steps_in_worker", "shape_result", "skill_steps"]

# error code -> HTTP status; anything else a skill reports on purpose is a 200 with success false
_STATUS = {"INVALID_ARGS": 422, "BAD_JSON": 422, "TIMEOUT": 504, "RATE_LIMITED": 429, "UNAVAILABLE": 503,
           "TOOL_ERROR": 500, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "UNKNOWN_TOOL": 404,
           "CONFLICT": 422, "IN_PROGRESS": 409, "OUTCOME_UNKNOWN": 409, "BAD_REQUEST": 400}


T = TypeVar("T")


@dataclass(frozen=True)
class Handoff:
    """A skill's own code for a worker thread, waited for at most ``limit`` seconds (None: as long as it
    takes). Past the limit the driver raises :class:`~agentlab.timeouts.WriteTimeout` into the steps, the
    code still running (its future settles when it ends)."""

    fn: Callable[[], Any]
    limit: float | None
    read: bool = False  # a read skill's code: stopping it half-way leaves nothing half-done
    name: str = ""  # the skill and the step, for what the driver remembers of it
    #: the same work as a coroutine, for a driver on an event loop: awaited there instead of a thread hand-off
    #: (a round trip to Redis, which holds no thread while it waits)
    aio: Callable[[], Awaitable[Any]] | None = None


#: steps that hand the skill's code out (:class:`Handoff`) and return what the call comes to
Steps = Generator[Handoff, Any, T]


def run_steps(steps: Steps[T]) -> T:
    """Carry ``steps`` out in this thread: each handoff in a worker, this thread waiting for it."""
    try:
        step = next(steps)
        while True:
            try:
                value = run_with_timeout(step.fn, step.limit, write=True)
            except BaseException as exc:  # noqa: BLE001 - the steps say what it means (or raise it again)
                step = steps.throw(exc)
            else:
                step = steps.send(value)
    except StopIteration as done:
        return done.value


async def run_steps_async(steps: Steps[T]) -> T:
    """Carry ``steps`` out on the running event loop: the steps themselves run on the loop (they must not
    block), each handoff in one worker thread, awaited, so the loop serves other requests meanwhile."""
    try:
        step = next(steps)
    except StopIteration as done:
        return done.value
    return await _go_on_async(steps, step)


async def _go_on_async(steps: Steps[T], step: Handoff) -> T:
    """:func:`run_steps_async` from ``step`` on (the steps are at that handoff)."""
    try:
        while True:
            try:
                value = await _carry(step)
            except asyncio.CancelledError:  # the request itself is cancelled: nothing to answer
                steps.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - the steps say what it means (or raise it again)
                step = steps.throw(exc)
            else:
                step = steps.send(value)
    except StopIteration as done:
        return done.value


_BEFORE, _RUNNING, _AFTER, _TAKEN = range(4)  # where a write's steps are, for run_steps_in_worker


class _Watch:
    """What the event loop and the worker share while a write's steps run in the worker (under ``lock``)."""

    __slots__ = ("deadline", "late", "limit", "lock", "phase")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.phase = _BEFORE
        self.deadline = self.limit = 0.0
        self.late: Future | None = None


async def run_steps_in_worker(steps: Steps[T], *, check_every: float, name: str = "", alone: bool = False) -> T:
    """Carry ``steps`` out in one worker thread, awaited on the running event loop: for a write, whose steps
    block (its claim and its record are a store's round trips) and whose handler must never be interrupted.

    What :func:`run_steps` does in a thread of its own, with one hand-off fewer: there each handoff with a limit
    (the handler) went to a second worker while the first waited for it, two more thread switches per write,
    which cost a keyed write more CPU than its claim. Here the worker runs the handler itself and the loop,
    which waits for the worker anyway, keeps the handler's deadline: past it, the loop stops waiting and the
    steps go on, on the loop, from :class:`~agentlab.timeouts.WriteTimeout` (the handler still running; its
    future settles when it ends), exactly as :func:`run_steps` goes on from it. ``check_every``: seconds
    between two looks at a handler not started yet (the skill's timeout: its deadline cannot come sooner).

    ``alone``: no other call is in progress on the loop. Then its thread first waits for the worker itself, for
    :data:`WRITE_WAIT` at most (at most half the handler's limit, so an answer within it is never one past the
    deadline): waking the loop from a worker (its self-pipe, a callback, a task step) cost a keyed write about
    65 us more CPU than this wait on a pipe, more than its claim. Past it, the loop serves others while the write
    goes on, and when the write was slow in the worker itself (not a worker kept from a CPU), the next
    :data:`SLOW_WRITES` calls of ``name`` (the skill's write) are not waited for so at all.
    """
    watch = _Watch()
    took: list[float] = []  # the steps' own time in the worker, once they are over

    def carry() -> Any:  # in the worker
        start = time.monotonic()
        try:
            step = next(steps)
            while True:
                if step.limit is None:
                    try:
                        value = step.fn()
                    except BaseException as exc:  # noqa: BLE001 - the steps say what it means (or raise it again)
                        step = steps.throw(exc)
                    else:
                        step = steps.send(value)
                    continue
                limit = min(step.limit, _LONGEST) if step.limit > 0 else 1e-6  # as run_with_timeout reads it
                with watch.lock:
                    watch.phase, watch.limit, watch.deadline = _RUNNING, limit, time.monotonic() + limit
                error: BaseException | None = None
                try:
                    value = step.fn()
                except BaseException as exc:  # noqa: BLE001 - handed to the steps, or to the late future
                    value, error = None, exc
                with watch.lock:
                    late = watch.late
                    if late is None:
                        watch.phase = _AFTER
                if late is not None:  # the loop stopped waiting: the outcome settles the future it handed out
                    if error is not None:
                        late.set_exception(error)
                    else:
                        late.set_result(value)
                    return None
                step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return done.value
        finally:
            took.append(time.monotonic() - start)

    budget = min(WRITE_WAIT, check_every / 2)
    # poll() rounds a wait up to whole milliseconds: from one millisecond up it stays within twice the budget
    if not alone or not budget >= 1e-3 or _counted_down(name):
        return await _wait_for_worker(steps, _pool.submit(carry), watch, check_every)
    done, got = _pool.try_run(carry, budget)
    if done:
        return got
    try:
        return await _wait_for_worker(steps, got, watch, check_every)
    finally:
        if name and (not took or took[0] >= budget):  # still running, or as long as the wait in the worker itself
            _slow[name] = SLOW_WRITES


def _counted_down(name: str) -> bool:
    """Whether ``name`` has calls left not to wait for on the loop's thread (one is counted off)."""
    left = _slow.get(name)
    if not left:
        return False
    if left == 1:
        del _slow[name]
    else:
        _slow[name] = left - 1
    return True


async def _wait_for_worker(steps: Steps[T], fut: Future, watch: _Watch, check_every: float) -> T:
    """:func:`run_steps_in_worker` from the moment the loop stops waiting for the worker in its own thread. The
    handler's deadline is looked at from now on (at once: the loop may have waited in its thread past it)."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[bool] = loop.create_future()

    def wake(_: Future) -> None:  # in the worker thread: hand the news to the loop
        try:
            loop.call_soon_threadsafe(_settle, waiter, True)
        except RuntimeError:  # the loop closed meanwhile (a server shutting down): nobody waits any more
            pass

    timer: list[asyncio.TimerHandle] = []

    def look() -> None:  # on the loop: is the handler past its deadline?
        with watch.lock:
            if watch.phase == _RUNNING:
                left = watch.deadline - time.monotonic()
                if left <= 0:
                    watch.phase = _TAKEN
                    watch.late = Future()
                    watch.late.set_running_or_notify_cancel()
                    _settle(waiter, False)
                    return
            elif watch.phase == _BEFORE:
                left = check_every
            else:  # the handler has answered: what is left is the steps' own work
                return
        timer[:] = [loop.call_later(max(left, 1e-3), look)]

    fut.add_done_callback(wake)
    look()  # BEFORE: the handler's deadline is at least check_every away; RUNNING: set for its deadline
    try:
        finished = await waiter
    finally:
        for handle in timer:
            handle.cancel()
    if finished:
        return fut.result()
    assert watch.late is not None
    try:  # the worker is done with the steps: they go on here, from the timeout
        step = steps.throw(WriteTimeout(watch.limit, watch.late))
    except StopIteration as done:
        return done.value
    return await _go_on_async(steps, step)


#: how long a read's own code may hold the event loop: past it, the read is stopped and run again in a worker
LOOP_BUDGET = 0.01
#: how long the event loop's thread waits for a write's worker itself before it serves other requests meanwhile
WRITE_WAIT = LOOP_BUDGET / 2
#: a write that was slower than that in its worker is not waited for so for this many of its next calls: it holds
#: an otherwise idle loop for WRITE_WAIT once in that many and one, and a first call slow only because it was the
#: first (imports, a database opened: 5.5 ms measured) is waited for again soon
SLOW_WRITES = 20
#: a read that overran :data:`LOOP_BUDGET` goes straight to a worker thread for this many of its next calls
SLOW_CALLS = 1000
#: a read's step name -> calls still to hand to a worker; a write's name -> calls whose worker the loop's thread
#: does not wait for itself (changed on the loop's thread only)
_slow: dict[str, int] = {}


async def _carry(step: Handoff) -> Any:
    """One handoff on the event loop. A thread hand-off there and back costs more CPU than a lookup's whole
    reply (benchmarks/bench_site.py), so a read is first run on the loop's own thread, under a SIGALRM deadline
    of :data:`LOOP_BUDGET` (agentlab.timeouts: reads are interrupted, never writes); one that overruns it is
    stopped, run again in a worker thread for the rest of its limit, and for its next :data:`SLOW_CALLS` calls
    goes there first, unless it ran there in under half the budget: then the loop's thread had been kept
    from a CPU (a busy machine), the read was not slow, and it stays on the loop. A hanging read holds the
    loop for LOOP_BUDGET at most, once in SLOW_CALLS calls."""
    if step.aio is not None:
        return await step.aio()
    limit = step.limit
    if not (step.read and (limit is None or limit > 2 * LOOP_BUDGET) and can_interrupt()):
        return await wait_in_worker(step.fn, limit, write=True)
    if _slow.get(step.name):
        _slow[step.name] -= 1
        return await wait_in_worker(step.fn, limit, write=True)
    t0 = time.monotonic()
    try:
        return run_with_timeout(step.fn, LOOP_BUDGET, write=False)
    except Interrupted:
        _slow[step.name] = SLOW_CALLS
    rest = None if limit is None else max(limit - (time.monotonic() - t0), 1e-3)
    took: list[float] = []
    fn = step.fn

    def timed() -> Any:  # in the worker: how long the read itself takes there
        start = time.monotonic()
        try:
            return fn()
        finally:
            took.append(time.monotonic() - start)

    try:
        return await wait_in_worker(timed, rest, write=True)
    finally:
        # quick in the worker: the budget ran out while the loop's thread waited for a CPU (a busy machine
        # preempts it), not in the read. Its next calls stay on the loop: sending them all to a worker
        # doubled a read's CPU on a loaded machine, for a read that had done nothing wrong
        if took and took[0] < LOOP_BUDGET / 2:
            _slow.pop(step.name, None)


@dataclass(frozen=True)
class Execution:
    """One execution: ``status`` and ``body`` go to the client; ``internal`` (a stack, the
    problems of a bad output) only to the error log. ``pending`` is a write still running
    after its timeout: its result will settle the idempotency key when it arrives."""

    status: int
    body: dict
    internal: str | None = None
    pending: Any = None
    ran: bool = False  # the handler was called (its effect may have happened)

    @property
    def ok(self) -> bool:
        return bool(self.body.get("success"))


def http_status(error: ToolError) -> int:
    """The status a reply with ``error`` is sent with."""
    return _STATUS.get(error.code, 200)


def body(result: Any = None, error: ToolError | None = None, lang: Lang = "en",
         fallback_hint: str | None = None) -> dict:
    """The reply's body: ``{"success", "result", "error", "fallback_hint"}``, the error in agentlab's shape;
    a failure a caller can act on gets the site's hint when none is given (agentlab/site/hints.py).

    A hint is said once: an error that carries the very sentence of the reply's ``fallback_hint`` (a used-up quota's,
    which the gateway sends as the error's own) leaves it to ``fallback_hint``, and the model reads it once."""
    if error is None:
        return {"success": True, "result": result, "error": None, "fallback_hint": fallback_hint}
    said = error.to_dict(lang)
    hint = fallback_hint or site_hint(error, lang)
    if hint is not None and said.get("hint") == hint:
        del said["hint"]
    return {"success": False, "result": result, "error": said, "fallback_hint": hint}


def _failed(error: ToolError, skill: Skill, lang: Lang, *, internal: str | None = None, fallback: bool = False,
            pending: Any = None, ran: bool = False, kind: str | None = None) -> Execution:
    hint = (skill_hint(skill.meta.fallback_hint, lang) if fallback else None) or site_hint(error, lang, kind=kind)
    return Execution(http_status(error), body(None, error, lang, hint), internal, pending, ran)


def one_line_summary(name: str, result: dict, lang: Lang = "en") -> str:
    """A one-sentence summary of a result, in ``lang``, for a skill that wrote none (docs/site.md#three-layers)."""
    if "items" in result and isinstance(result["items"], list):
        return t("site.summary.items", lang, name=name, n=len(result["items"]))
    return flat_summary(name, result, lang)


def shape_result(name: str, data: Any, lang: Lang = "en") -> dict:
    """A handler's return as a flat object with a ``summary``: a scalar becomes ``{"value": ...}``,
    a list ``{"items": [...]}``. The value is first made plain JSON (what a replay returns too)."""
    plain = _flat_copy(data)
    if plain is None:
        plain = json.loads(result_json(data))
    if not isinstance(plain, dict):
        plain = {"items": plain} if isinstance(plain, list) else {"value": plain}
    if not isinstance(plain.get("summary"), str):
        plain = {**plain, "summary": one_line_summary(name, plain, lang)}
    return plain


def _flat_copy(data: Any) -> dict | None:
    """A copy of ``data`` when it is one flat object of plain JSON values (what most handlers return), which
    JSON text and back (``result_json`` then ``json.loads``) would give back equal; else None (go that way).

    Exact types only: a string (a lone surrogate too: written as its escape, it reads back as itself), a flag,
    None, an integer well within what JSON readers keep exactly, a finite float (``repr`` reads back as itself)."""
    if type(data) is not dict:
        return None
    for k, v in data.items():
        kind = type(v)
        if type(k) is not str or not (kind is str or kind is bool or v is None
                                      or (kind is int and -_EXACT < v < _EXACT)
                                      or (kind is float and v - v == 0.0)):  # NaN and the infinities fail
            return None
    return dict(data)


_EXACT = 2 ** 53  # integers JSON readers (a browser's too) keep exactly

_COMPILED: dict[str, Callable[[Any], list[Problem]]] = {}
_BY_ID: dict[int, tuple[Any, Callable[[Any], list[Problem]]]] = {}


def _validator(schema: Any) -> Callable[[Any], list[Problem]]:
    """A schema compiled once per distinct schema (skills are few, calls many). Found by the schema
    object's identity first (the entry keeps the object alive, so its id is never reused): a call
    costs a dictionary lookup, not a serialisation of the schema."""
    known = _BY_ID.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _COMPILED:
        _COMPILED[key] = compile_schema(dict(schema))
    if len(_BY_ID) < 10_000:  # bounded: skills are few; a caller making schemas on the fly gets no cache
        _BY_ID[id(schema)] = (schema, _COMPILED[key])
    return _COMPILED[key]


def input_problems(skill: Skill, arguments: Any, lang: Lang = "en") -> list[Problem]:
    """What is wrong with ``arguments`` by the skill's input schema (agentlab's validator, same problems)."""
    return _validator(skill.meta.input_schema_in(lang))(arguments)  # the same rules; a hint in the caller's language


def run_skill(skill: Skill, arguments: dict, ctx: SkillContext, *, lang: Lang = "en", check_input: bool = True,
              on_late: Callable[[Execution], None] | None = None) -> Execution:
    """Validate, check, run and shape one call of ``skill``. Never raises for a skill's failure.

    ``on_late`` receives the outcome of a write that timed out and finished afterwards.
    """
    return run_steps(skill_steps(skill, arguments, ctx, lang=lang, check_input=check_input, on_late=on_late))


def skill_steps(skill: Skill, arguments: dict, ctx: SkillContext, *, lang: Lang = "en", check_input: bool = True,
                on_late: Callable[[Execution], None] | None = None) -> Steps[Execution]:
    """:func:`run_skill` as steps: the business check and the handler are handed out (:class:`Handoff`),
    the handler under the skill's timeout; the schemas and the shaping run where the steps run."""
    if check_input:
        problems = input_problems(skill, arguments, lang)
        if problems:
            return _failed(make_error("INVALID_ARGS", problems=problems), skill, lang)
    if skill.validate is not None:
        check = skill.validate
        try:
            found = list((yield Handoff(lambda: check(arguments, ctx), None, not skill.meta.writes,
                                        f"{skill.name}:check")) or ())
        except ToolFailure as exc:  # a rule that refuses outright (no such order, shipped already)
            return _failed(exc.error, skill, lang)
        except Exception:  # noqa: BLE001 - the check itself broke: the skill's bug, nothing has run
            return _failed(make_error("TOOL_ERROR"), skill, lang, internal=traceback.format_exc())
        if found:
            return _failed(make_error("INVALID_ARGS", problems=found, stage="semantic"), skill, lang)

    def finish(data: Any) -> Execution:
        try:
            shaped = shape_result(skill.name, data, lang)
        except Exception:  # noqa: BLE001 - cannot happen for JSON-able data; a bug if it does
            return _failed(make_error("TOOL_ERROR"), skill, lang, internal=traceback.format_exc(), ran=True)
        bad = _validator(skill.meta.output_schema)(shaped)
        if bad:
            detail = "; ".join(f"{p.field}: {p.reason}" for p in bad)
            try:
                raise SkillBug(f"{skill.name} returned output that breaks its output_schema: {detail}")
            except SkillBug:
                return _failed(make_error("TOOL_ERROR"), skill, lang, internal=traceback.format_exc(), ran=True)
        return Execution(200, body(shaped, None, lang), ran=True)

    def settle(future: Any) -> None:
        if on_late is None or future.cancelled():
            return
        exc = future.exception()
        on_late(finish(future.result()) if exc is None else _from_exception(exc, skill, lang))

    handler = skill.handler
    try:
        data = yield Handoff(lambda: handler(dict(arguments), ctx), skill.meta.timeout, not skill.meta.writes,
                             f"{skill.name}:handler")
    except WriteTimeout as exc:  # the handler still runs in its worker; we stop waiting now
        exc.future.add_done_callback(settle)
        err = make_error("TIMEOUT", seconds=skill.meta.timeout)
        return _failed(err, skill, lang, fallback=True, pending=exc.future, ran=True)
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        return _from_exception(exc, skill, lang)
    return finish(data)


class SkillBug(Exception):
    """A skill broke its own contract (its output does not match its output_schema)."""


def _from_exception(exc: BaseException, skill: Skill, lang: Lang) -> Execution:
    if isinstance(exc, NoWorker) and not exc.started:  # no thread for the skill's code: it never began (resend it)
        return _failed(make_error("UNAVAILABLE"), skill, lang, internal=str(exc), ran=False)
    if isinstance(exc, ToolFailure):  # the skill said on purpose what happened: the model may read it
        transient = exc.error.category == "transient"
        kind = "upstream" if exc.error.code == "UNAVAILABLE" else None
        return _failed(exc.error, skill, lang, fallback=transient, ran=True, kind=kind)
    stack = "".join(traceback.format_exception(exc))
    if isinstance(exc, (TimeoutError, ConnectionError)):  # its source failed: a fallback may help
        err = make_error("TIMEOUT", seconds=skill.meta.timeout) if isinstance(exc, TimeoutError) else make_error("UNAVAILABLE")
        return _failed(err, skill, lang, fallback=True, internal=stack, ran=True,
                       kind=None if isinstance(exc, TimeoutError) else "upstream")
    return _failed(make_error("TOOL_ERROR"), skill, lang, internal=stack, ran=True)
