"""One tool call of the guarded loop, from the model's raw call to what it is told (docs/guards.md).

:func:`execute` runs one validated call with its guards: the idempotency claim, the gate (business rules,
approval), the timeout and the safe resend. The loop (:mod:`agentlab.loop`) asks the model and keeps the
turn's budgets; the approval module (:mod:`agentlab.approval`) runs an approved call through
:func:`execute` too. ``_one_call`` is the step between them: checks, the repeated-call breaker, the key.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any

from .errors import ToolError, ToolFailure, UsageError, make_error, redact, render
from .guards import BadSetting, GuardConfig
from .i18n import Lang, t
from .jsonutil import MAX_DEPTH, canonical, parse_strict
from .models.interface import ToolCall
from .records import quick
from .store import Approval, MemoryStore, SQLiteStore, Store, open_store, quietly, result_json
from .store_types import digest
from .timeouts import ReadStillRunning, WriteTimeout, run_to_end, run_with_timeout, wait_on_loop
from .tools import Registry, ScopedKey, Tool
from .workers import NoWorker

__all__ = ["CallContext", "CallOutcome", "aguarded_call", "classify_exception", "default_store", "execute", "guarded_call",
           "idempotency_key", "outlives_process", "session_scoped"]


_decode = json.JSONDecoder().decode  # what json.loads calls, for JSON this module wrote itself


def default_store() -> Store:
    """The store ``AGENTLAB_STORE`` names (:func:`agentlab.store.open_store`): ``sqlite:///file.db`` or a path
    (processes sharing one file refund once between them), ``redis://host:port/db`` (processes on several
    machines), ``memory:``. Unset: a :class:`~agentlab.store.MemoryStore` of the run's own (a new SQLite
    database per run cost about 120 µs of CPU, for claims nobody else could read anyway).
    ``AGENTLAB_STORE_PREFIX`` keeps several users of one Redis apart (the workshop hub gives each participant
    their own), unless the URL names a ``?prefix=`` itself."""
    url = os.environ.get("AGENTLAB_STORE")
    return open_store(url, prefix=os.environ.get("AGENTLAB_STORE_PREFIX") or "agentlab:") if url else MemoryStore()


@dataclass(frozen=True)
class CallContext:
    """Everything a guarded call needs besides the call: the tools, the guards, where
    claims and held calls live, and the injected clock, sleep and randomness."""

    registry: Registry
    config: GuardConfig = GuardConfig()
    store: Store = field(default_factory=default_store)
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    clock: Callable[[], float] = time.perf_counter
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    lang: Lang = "en"

    def __post_init__(self) -> None:
        # every loop and adapter makes one before it runs anything: a bad setting is said here
        if not isinstance(self.config, GuardConfig):
            raise BadSetting("guards.not_a_config", given=type(self.config).__name__)
        if not self.config.__dict__.get("_checked"):
            self.config.checked()


@quick
@dataclass(frozen=True)
class CallOutcome:
    """One tool call's outcome: exactly what the model is told, and what telemetry records."""

    content: str
    error: ToolError | None = None
    data: Any = None
    parse_ok: bool | None = True
    validate_ok: bool | None = True
    exec_ok: bool | None = None
    retries: int = 0
    replayed: bool = False
    note: str | None = None
    approval_id: str | None = None


def _failed(error: ToolError, lang: Lang, **kw: Any) -> CallOutcome:
    return CallOutcome(render(error, lang), error, **kw)


def classify_exception(exc: BaseException, seconds: float = 0, *, write: bool = False,
                       resendable: bool = True) -> ToolError:
    """A tool's exception as a ToolError. Only ToolFailure text reaches the model.

    A write that failed by accident (timed out, lost its connection, raised) may or may not
    have taken effect. Unless it is safe to resend (keyed), that is ``OUTCOME_UNKNOWN``:
    never retryable. For a read, a refused connection is a plain transient failure.
    """
    if isinstance(exc, ToolFailure):
        return exc.error  # the tool said on purpose what happened
    if isinstance(exc, NoWorker) and not exc.started:  # no thread could be started for the tool: it never began
        return make_error("UNAVAILABLE")
    if write and not resendable:
        # a write is a black box: even a refused connection may come from a second hop after the
        # first one wrote. A tool that knows nothing happened says so with ToolFailure("UNAVAILABLE").
        return make_error("OUTCOME_UNKNOWN")
    status, retry_after = _http_status(exc)
    if status == 429:  # the service refused the request: nothing ran, and it says when to come back
        return make_error("RATE_LIMITED", retry_after=retry_after)
    if status in (502, 503, 504):
        return make_error("UNAVAILABLE", retry_after=retry_after)
    if isinstance(exc, ConnectionRefusedError):
        return make_error("UNAVAILABLE")
    if isinstance(exc, TimeoutError):
        return make_error("TIMEOUT", seconds=seconds)
    if isinstance(exc, ConnectionError):
        return make_error("UNAVAILABLE")
    return make_error("TOOL_ERROR")


def _http_status(exc: BaseException) -> tuple[int | None, str | None]:
    """The HTTP status and Retry-After an HTTP client's exception carries (httpx's HTTPStatusError, requests'
    HTTPError, the openai client's APIStatusError all hold a response), else ``(None, None)``. A tool wrapped by
    an adapter calls services with whatever client it likes; read duck-typed, so no client is imported here."""
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(response, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool):
        return None, None
    headers = getattr(response, "headers", None) or getattr(exc, "headers", None)
    try:
        value = headers.get("retry-after") or headers.get("Retry-After") if headers is not None else None
    except Exception:  # noqa: BLE001 - a headers object that is no mapping says nothing about the wait
        value = None
    return status, value if isinstance(value, str) else None


def idempotency_key(tool: Tool, args: dict, session_id: str | None = None) -> str:
    """Computed by the loop, never by the model: the business key (one refund per order, whoever
    asks), or else all the arguments within one session: two customers asking for a call back in
    the same words are two intents, one customer asking twice is one."""
    return _key_of(tool, args, session_id)


def _key_of(tool: Tool, args: dict, session_id: str | None, text: str | None = None) -> str:
    """:func:`idempotency_key`, given the canonical JSON of ``args`` when the caller has it already.

    All the arguments enter the key as their digest: the key names records in a store that other processes
    and their operators read (Redis key names, a SQLite file), and is handed to a keyed tool's backend. A
    business key is written as it is: an identifier its author chose (an order id), not the call's content."""
    scope = f"{session_id}:" if session_id else ""
    if tool.business_key is not None:
        try:
            return f"{tool.name}:{scope if tool.key_scope == 'session' else ''}{tool.business_key(args)}"
        except (KeyError, TypeError, ValueError):  # unvalidated arguments: fall back to all of them
            pass
    return f"{tool.name}:{scope}{digest(canonical(args) if text is None else text)}"


def session_scoped(tool: Tool, config: GuardConfig) -> bool:
    """Whether this tool's claims are keyed by the session: a claimed write without a business key that holds
    whoever asks (its key is all its arguments within one conversation). Such a key survives a restart of the
    caller only if the session id does (docs/guards.md#idempotency-across-restarts)."""
    claimed = tool.side_effect and config.idempotency and not tool.idempotent
    return claimed and (tool.business_key is None or tool.key_scope == "session")


def outlives_process(store: Store) -> bool:
    """Whether claims in ``store`` outlive this process (a SQLite file, Redis, any store agentlab does not know):
    then a session id made up by this process scopes keys that a restarted caller can never meet again."""
    if isinstance(store, MemoryStore):
        return False
    return not (isinstance(store, SQLiteStore) and store.path == ":memory:")


# --- one validated call: claim, gate, run, resend ----------------------------------
# The steps of a call are written once, as a generator that yields what it needs done (run the tool: _Invoke; wait
# before a resend: _Wait) and is sent the result or thrown the exception. Two drivers run them: _drive in the
# calling thread (the loop, the sync adapters), _adrive on an event loop, awaiting a framework's async tool where
# the framework runs it (no worker thread and no hop back to the loop: 85 us of CPU per call on the adapters).
class _Invoke:
    """Run the tool once (a step of a call). A plain class with slots: a frozen dataclass set its four fields through
    ``object.__setattr__``, one call each, on every guarded call."""

    __slots__ = ("args", "key", "timeout", "tool")

    def __init__(self, tool: Tool, args: dict, key: str | None, timeout: float | None) -> None:
        self.tool, self.args, self.key, self.timeout = tool, args, key, timeout


@dataclass(frozen=True)
class _Wait:
    seconds: float


Steps = Generator["_Invoke | _Wait", Any, CallOutcome]


def _drive(steps: Steps, ctx: CallContext) -> CallOutcome:
    """Run a call's steps in this thread: the tool under :func:`run_with_timeout`, waits with ``ctx.sleep``."""
    try:
        step = next(steps)
        while True:
            if isinstance(step, _Wait):
                ctx.sleep(step.seconds)
                step = steps.send(None)
                continue
            try:
                value = _invoke(step.tool, step.args, step.key, step.timeout)
            except BaseException as exc:  # noqa: BLE001 - the steps decide what a failure means
                step = steps.throw(exc)
            else:
                step = steps.send(value)
    except StopIteration as done:
        return done.value


async def _adrive(steps: Steps, ctx: CallContext) -> CallOutcome:
    """Run a call's steps on the running event loop: the tool's ``fn`` returns an awaitable, awaited under
    :func:`~agentlab.timeouts.wait_on_loop`; a wait is ``asyncio.sleep`` unless a sleep was injected."""
    try:
        step = next(steps)
        while True:
            if isinstance(step, _Wait):
                if ctx.sleep is time.sleep:
                    await asyncio.sleep(step.seconds)
                else:  # injected (a test, a notebook plotting the schedule): called as the sync driver calls it
                    ctx.sleep(step.seconds)
                step = steps.send(None)
                continue
            try:
                value = await _ainvoke(step.tool, step.args, step.key, step.timeout)
            except asyncio.CancelledError:
                # the run itself is cancelled: no outcome to tell; a claimed write stays in flight until its lease
                # ends, then reads "outcome unknown" to a repeat (never run twice on a guess)
                steps.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - the steps decide what a failure means
                step = steps.throw(exc)
            else:
                step = steps.send(value)
    except StopIteration as done:
        return done.value


def execute(tool: Tool, args: dict, ctx: CallContext, *, key: str,
            gate: Callable[[], CallOutcome | None] | None = None, extra: dict | None = None,
            fingerprint: str | None = None) -> CallOutcome:
    """Run one validated call with idempotency, timeout and safe retries.

    The claim on ``key`` is taken here and only here. ``gate`` runs after the claim and
    before the tool (business rules, approval): an outcome from it refuses the call and
    frees the key. ``extra`` is added to a success (the cleaning audit, say). ``fingerprint``
    is ``canonical(args)`` when the caller has computed it already (it is not computed twice).
    """
    return _drive(_execute_steps(tool, args, ctx, key=key, gate=gate, extra=extra, fingerprint=fingerprint), ctx)


def _execute_steps(tool: Tool, args: dict, ctx: CallContext, *, key: str,
                   gate: Callable[[], CallOutcome | None] | None = None, extra: dict | None = None,
                   fingerprint: str | None = None) -> Steps:
    cfg, lang = ctx.config, ctx.lang
    # a write that sets a value (idempotent) is neither claimed nor deduplicated: doing it again is harmless,
    # and replaying an old result could report a value that a later call has since changed
    claimed = tool.side_effect and cfg.idempotency and not tool.idempotent
    if claimed:
        # The claim comes before the business rules: a replay of a refund that was done
        # must return its first result, not be refused because the order is refunded now.
        try:
            claim = ctx.store.claim(key, canonical(args) if fingerprint is None else fingerprint, lease=cfg.lease)
        except Exception as exc:  # noqa: BLE001 - a store that is down (Redis restarting): nothing has run
            return _failed(make_error("UNAVAILABLE"), lang, exec_ok=None,
                           note="the idempotency store could not be reached, so nothing was run: " + _describe(exc))
        if claim.status == "replay":
            data = json.loads(claim.result or "null")
            return CallOutcome(render(None, lang, data=data, replayed=True), None, data, exec_ok=True,
                               replayed=True, note="replayed from the idempotency store")
        if claim.status == "conflict":
            return _failed(make_error("CONFLICT", key=_shown_key(tool, args)), lang, exec_ok=None)
        if claim.status == "in_flight":
            return _failed(make_error("IN_PROGRESS"), lang, exec_ok=None)
        if claim.status == "unknown":
            return _failed(make_error("OUTCOME_UNKNOWN"), lang, exec_ok=None,
                           note="an earlier attempt never reported back; a person must resolve it")
    if gate is not None:
        try:
            refused = gate()
        except (KeyboardInterrupt, SystemExit, UsageError):
            raise
        except BaseException as exc:  # noqa: BLE001 - a rule that failed itself: nothing has run yet
            refused = _failed(classify_exception(exc), lang, exec_ok=None,
                              note="the business rule failed: " + _describe(exc))
        if refused is not None:
            if claimed:
                quietly(ctx.store.release, key)
            return refused
    resendable = not tool.side_effect or tool.idempotent or (cfg.idempotency and tool.keyed)
    retries, note = 0, None
    while True:
        try:
            data = yield _Invoke(tool, args, key if cfg.idempotency else None, cfg.timeout)
        except (KeyboardInterrupt, SystemExit, UsageError, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - every tool failure becomes data
            err = classify_exception(exc, _limit(tool, cfg.timeout) or 0, write=tool.side_effect,
                                     resendable=resendable)
            detail = _describe(exc)
            # a read whose first attempt still hangs in its worker is not sent again: a second and a third call into
            # a backend that is already stuck help nobody (the attempt is abandoned; the model hears TIMEOUT)
            still_running = isinstance(exc, ReadStillRunning) and not exc.future.done()
            if err.category == "transient" and cfg.retry is not None and resendable and not still_running \
                    and retries < cfg.retry.max_retries and cfg.retry.may_wait(err.retry_after):
                yield _Wait(cfg.retry.delay(retries, ctx.rng, err.retry_after))
                retries += 1
                note = "resent with the same idempotency key" if tool.side_effect else None
                continue
            if err.code == "RATE_LIMITED" and err.message is None and cfg.retry is not None \
                    and not cfg.retry.may_wait(err.retry_after):
                # not resent because the wait asked is longer than this run may wait (as on the model path):
                # the model hears that, and when the call may be sent again (the hint); a message the tool's
                # author wrote is kept as written
                err = make_error("RATE_LIMITED", _key="RATE_LIMITED.too_long", seconds=err.retry_after,
                                 retry_after=err.retry_after, stage=err.stage, problems=err.problems)
            if still_running and err.code == "TIMEOUT" and err.message is None:
                # the general hint ("temporary: send it again as it is") told the model to add a second call to a
                # backend the first still hangs in, which the loop itself declines to do
                err = make_error("TIMEOUT", seconds=_limit(tool, cfg.timeout) or 0, stage=err.stage,
                                 hint={lg: t("hint.read_still_running", lg) for lg in ("en", "zh")})
            if claimed:
                if isinstance(exc, WriteTimeout):
                    # The write still runs, but nobody waits for it any more: its in-flight window (the
                    # timeout) is over, so its outcome is unknown, keyed or not (the resends with its key are
                    # spent). Said so now, and to every repeat: IN_PROGRESS ("send it later") would be told
                    # until the lease ran out (60 s), about a write that may hang for good.
                    err = make_error("OUTCOME_UNKNOWN", stage=err.stage)
                if err.code == "OUTCOME_UNKNOWN":
                    quietly(ctx.store.mark_unknown, key)
                if isinstance(exc, WriteTimeout):
                    # never run again on a guess; if it lands after all, its result settles the key (a repeat
                    # replays it), else a person resolves it (agentlab.approval.resolve)
                    exc.future.add_done_callback(lambda f: _settle(ctx.store, key, f))
                elif err.code != "OUTCOME_UNKNOWN":
                    quietly(ctx.store.release, key)
            return _failed(err, lang, exec_ok=False, retries=retries, note=detail)
        # What is stored is what the model sees: one plain JSON value, whatever the tool returned
        # (a set, bytes, an object whose str() fails), so a replay tells exactly the same story.
        stored = result_json(data)
        plain = _decode(stored)  # json.loads without its checks: text result_json wrote
        if claimed and not quietly(ctx.store.finish, key, stored):
            # it ran; only the record is missing: the claim stays until its lease ends, then reads "outcome
            # unknown" to a repeat, so it is never run twice on a guess
            note = "done, but the result could not be recorded (the idempotency store was unreachable)"
        return CallOutcome(render(None, lang, data=plain, data_json=stored, **(extra or {})), None, plain, exec_ok=True,
                           retries=retries, note=note)


def _shown_key(tool: Tool, args: dict) -> str:
    """The business key as the model may read it: never the session id or the store's internal key."""
    try:
        key = tool.business_key(args) if tool.business_key is not None else tool.name
    except (KeyError, TypeError, ValueError):
        return tool.name
    return key.shown if isinstance(key, ScopedKey) else str(key)


def _settle(store: Store, key: str, future: Any) -> None:
    """A timed-out write finished after all: its result is the truth about the key."""
    if not future.cancelled() and future.exception() is None:
        quietly(store.finish, key, result_json(future.result()))


def _limit(tool: Tool, default: float | None) -> float | None:
    return tool.timeout if tool.timeout is not None else default


def _invoke(tool: Tool, args: dict, key: str | None, timeout: float | None) -> Any:
    """Run ``tool.fn`` once under its deadline; failures are raised."""
    fn = tool.fn
    if fn is None:
        raise ToolFailure("TOOL_ERROR", "this tool has no implementation")
    kwargs = dict(args)
    if tool.keyed and key is not None:
        kwargs["idempotency_key"] = key

    def call() -> Any:
        try:
            out = fn(**kwargs)
        except NoWorker as exc:  # the tool's own hand-off, once it had begun: it may have done something
            exc.started = True
            raise
        # an async def tool hands back its coroutine unrun: shown as the result, the run said "done" of a refund
        # that never happened. It is run to its end here, under the same deadline
        return run_to_end(out) if hasattr(out, "__await__") else out
    return run_with_timeout(call, _limit(tool, timeout), write=tool.side_effect)


def _ainvoke(tool: Tool, args: dict, key: str | None, timeout: float | None) -> Awaitable[Any]:
    """``tool.fn`` (here an async callable) once under its deadline, to be awaited; failures are raised (by the call
    or the await: :func:`_adrive` does both in one ``try``). A plain function that hands back the wait itself: a
    coroutine of its own was one more frame made, and resumed at every step the tool awaits, on every call."""
    fn = tool.fn
    if fn is None:
        raise ToolFailure("TOOL_ERROR", "this tool has no implementation")
    kwargs = dict(args)
    if tool.keyed and key is not None:
        kwargs["idempotency_key"] = key
    return wait_on_loop(fn(**kwargs), _limit(tool, timeout), write=tool.side_effect)


def guarded_call(tc: ToolCall, ctx: CallContext, seen: dict[str, int], *,
                 fn: Callable[..., Any] | None = None) -> CallOutcome:
    """One raw tool call, as the model wrote it, through every guard: the contract checks, the repeat breaker
    (``seen`` counts the calls of one run), the key, then :func:`execute`. ``fn`` runs instead of the
    registered tool's own ``fn`` (an adapter hands over the framework's tool, bound to this call)."""
    return _drive(_guarded_steps(tc, ctx, seen, fn), ctx)


def aguarded_call(tc: ToolCall, ctx: CallContext, seen: dict[str, int], *,
                  fn: Callable[..., Awaitable[Any]]) -> Coroutine[Any, Any, CallOutcome]:
    """:func:`guarded_call` on the running event loop, for a framework whose tool is a coroutine: ``fn(**args)``
    returns an awaitable, awaited where the framework runs it. Every guard is the same; the claims, rules and
    approvals run in this thread, so the store must not block it (an in-process store: see
    :meth:`agentlab.adapters.core.Guard.acall`). Returns the coroutine to await (that of :func:`_adrive`, with no
    coroutine of its own around it: one frame fewer, made and resumed, on every call)."""
    return _adrive(_guarded_steps(tc, ctx, seen, fn), ctx)


def _guarded_steps(tc: ToolCall, ctx: CallContext, seen: dict[str, int], fn: Callable[..., Any] | None) -> Steps:
    cfg, reg, lang = ctx.config, ctx.registry, ctx.lang
    cleaned: tuple = ()
    if cfg.validate:
        checked = reg.check(tc.name, tc.arguments, lang=lang, clean=cfg.clean, rules=False)
        if not checked.ok:
            return CallOutcome(checked.render(lang), checked.error, parse_ok=checked.parse_ok,
                               validate_ok=False if checked.parse_ok else None)
        args, cleaned = checked.args or {}, checked.cleaned
    else:  # no contract checks: only what is needed not to crash
        parsed, failure = parse_strict(tc.arguments or "{}", max_depth=MAX_DEPTH)
        if failure is not None or not isinstance(parsed, dict):
            err = make_error("BAD_JSON", detail=failure or "not an object", example="{}")
            return _failed(err, lang, parse_ok=False, validate_ok=None)
        if tc.name not in reg:
            return _failed(reg.unknown_tool(tc.name), lang, validate_ok=False)
        args = parsed
    tool = reg[tc.name] if fn is None else _with_fn(reg[tc.name], fn)
    text = canonical(args)  # once: the repeat breaker, the key and the claim's fingerprint all read it
    sig = f"{tool.name}:{text}"
    with _COUNTING:  # a framework runs one message's tool calls in threads at once: no count is lost between them
        seen[sig] = count = seen.get(sig, 0) + 1
    if cfg.repeat_limit is not None and count >= cfg.repeat_limit:
        return _failed(make_error("LOOP_DETECTED", count=count), lang, exec_ok=None, note="repeated-call breaker")
    # the key names a claim, a keyed tool's backend call or a held call: a plain read needs none (its digest was a
    # SHA-256 of the arguments on every lookup, for nothing)
    needs_key = (tool.side_effect and cfg.idempotency and not tool.idempotent) or tool.keyed \
        or (cfg.approval and tool.needs_approval is not None)
    key = _key_of(tool, args, ctx.session_id, text) if needs_key else ""

    def gate() -> CallOutcome | None:
        if cfg.validate:
            rule_err = reg.check_rules(tool.name, args)
            if rule_err is not None:
                # the approved execution of this very call is told again, never judged again: its own effect (the
                # refund now made, the budget now spent) is what the rules would refuse it for
                done = _approved_result(key, ctx, text) if cfg.approval and tool.needs_approval is not None else None
                if done is not None:
                    return done
                return _failed(rule_err, lang, validate_ok=False if rule_err.code == "INVALID_ARGS" else True,
                               exec_ok=None)
        if cfg.approval and tool.needs_approval is not None:
            return _hold(tool, args, key, ctx, text)
        return None

    extra = {"cleaned": [c.to_dict() for c in cleaned]} if cleaned else None
    return (yield from _execute_steps(tool, args, ctx, key=key, gate=gate, extra=extra, fingerprint=text))


_one_call = guarded_call  # the loop's name for it
_COUNTING = threading.Lock()  # the repeat breaker's counts: read, add one, write back, as one step


def _with_fn(tool: Tool, fn: Callable[..., Any]) -> Tool:
    """``tool`` bound to one call's ``fn`` (an adapter's): its fields copied as they are, with no ``__init__`` to
    run again (``dataclasses.replace`` was a tenth of what a guarded call costs an adapter)."""
    bound = object.__new__(Tool)
    bound.__dict__.update(tool.__dict__)
    bound.__dict__["fn"] = fn
    return bound


def _approved_result(key: str, ctx: CallContext, text: str) -> CallOutcome | None:
    """The recorded result of the approved execution of exactly this call (same key, same arguments), or None."""
    try:
        approval = ctx.store.get_approval(key)
    except Exception:  # noqa: BLE001 - no replay to give: the rules' refusal stands
        return None
    if approval is None or approval.args != text or approval.state != "approved" or approval.result is None:
        return None
    return CallOutcome(render(None, ctx.lang, data=json.loads(approval.result), replayed=True), None,
                       json.loads(approval.result), exec_ok=True, replayed=True, note="replayed from the approved call")


def _hold(tool: Tool, args: dict, key: str, ctx: CallContext, text: str) -> CallOutcome | None:
    """The approval gate: None lets the call run (a person approved exactly these arguments)."""
    try:
        why = tool.needs_approval(args) if tool.needs_approval else None
    except (KeyError, TypeError, ValueError):  # cannot tell: hold it, fail safe
        why = t("approval.why.unreadable", ctx.lang)
    if not why:
        return None
    try:
        approval = ctx.store.add_approval(Approval(key, ctx.session_id, tool.name, text, why,
                                                   created=time.time()))
    except Exception as exc:  # noqa: BLE001 - the call cannot be held, so it must not run either
        return _failed(make_error("UNAVAILABLE"), ctx.lang, exec_ok=None,
                       note="the approval could not be recorded, so nothing was run: " + _describe(exc))
    if approval.args != text:  # another call on the same key is held or was decided
        return _failed(make_error("CONFLICT", key=_shown_key(tool, args)), ctx.lang, exec_ok=None,
                       note=f"held call {approval.id} has other arguments")
    if approval.state == "rejected":
        return _failed(make_error("APPROVAL_REJECTED", reason=approval.decision or "-"), ctx.lang, exec_ok=None)
    if approval.state == "approved" and approval.result is not None:
        # an approval is for one execution, not a standing permission: a repeat gets the recorded result
        return _approved_result(key, ctx, text)
    if approval.open:  # pending, or approved once and failed: a person must decide (again)
        err = make_error("NEEDS_APPROVAL", reason=why, extra={"approval_id": approval.id})
        return CallOutcome(render(err, ctx.lang), err, exec_ok=None, approval_id=approval.id)
    return None


def _describe(exc: BaseException) -> str:
    """An exception as a redacted line for telemetry; an exception whose str() raises is named only."""
    try:
        text = str(exc)[:2000]
    except Exception:  # noqa: BLE001 - an exception whose own str() raises is still named
        text = ""
    unknown = getattr(exc, "unknown", None)  # a ToolFailure with a code agentlab has not: its author's to read
    if isinstance(exc, ToolFailure) and unknown is not None:
        text += f" ({unknown.localized('en').split(';')[0]})"
    return redact(f"{type(exc).__name__}: {text}")[:300]
