"""Two agent loops on the same model: the naive one from the wild, and the guarded one.

``run_naive`` does what much real code does (tau-bench's reference agent, the
function-calling cookbook): it runs only ``tool_calls[0]``, ``json.loads`` the
arguments without a guard, shows raw exception text to the model, retries
nothing (or everything), and has only a hard step cap. Its crashes are caught
and reported as the run's outcome, never raised into a notebook.

``run_guarded`` puts a guard at each place a run goes wrong (seed 000 §三-五,
seed 003 §3.3, §5.1). Each one can be switched off in :class:`GuardConfig`::

    every tool call of a message, in order      all_calls
    parse + schema + business checks            validate
    structured errors the model can read        readable_errors
    re-ask budget per tool (the model's fault)  self_correction
    per-call timeout                            timeout
    resend transient failures, safely           retry
    one effect per idempotency key              idempotency
    risky calls wait for a person               approval
    step budget                                 step_budget
    same call + same arguments N times -> stop  repeat_limit

Final statuses: ``done``, ``done_after_self_correction``, ``escalated``,
``budget_exhausted``, ``failed`` (the naive loop crashed).
"""
from __future__ import annotations

import json
import queue
import random
import signal
import threading
import time
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Any, Callable, Literal

from .errors import ToolError, ToolFailure, friendly, make_error, redact, render
from .i18n import Lang
from .jsonutil import canonical, parse_strict
from .models import Model, ModelError, Reply
from .retry import RetryPolicy
from .store import Approval, Store, result_json
from .tools import Registry, Tool
from .trace import Event, finalize, side_by_side_html, to_html

Status = Literal["done", "done_after_self_correction", "escalated", "budget_exhausted", "failed"]
STATUSES: tuple[Status, ...] = ("done", "done_after_self_correction", "escalated", "budget_exhausted", "failed")
HARD_CAP = 50  # even with every guard off, no run is endless
BARE_ERROR = "Error: 500 internal error"


@dataclass(frozen=True, kw_only=True)
class GuardConfig:
    """The guards of :func:`run_guarded`. ``None``/``False`` switches one off.

    Args:
        all_calls: answer every tool call of a message, in order (else only the first).
        validate: parse, schema and business checks before running a tool.
        readable_errors: tell the model what went wrong as structured JSON (else a bare 500).
        self_correction: invalid calls allowed per tool before escalating (re-ask budget).
        timeout: seconds a tool may take. A read-only tool gets a SIGALRM deadline in the calling
            thread (main thread, POSIX); a write, which must never be interrupted half-way, runs in a
            worker thread the loop stops waiting for.
        retry: how to resend transient failures (only for read-only or keyed tools).
        idempotency: claim side-effect calls under a key; a repeat replays the first result.
        approval: hold risky calls (``Tool.needs_approval``) for a person.
        step_budget: model turns before ``budget_exhausted``.
        repeat_limit: the Nth identical call (same tool, same canonical arguments) escalates.
        clean: clean values (``"45元"`` -> 45) before validation, with an audit.
    """

    all_calls: bool = True
    validate: bool = True
    readable_errors: bool = True
    self_correction: int | None = 2
    timeout: float | None = 5.0
    retry: RetryPolicy | None = RetryPolicy()
    idempotency: bool = True
    approval: bool = True
    step_budget: int | None = 6
    repeat_limit: int | None = 3
    clean: bool = False

    def without(self, *guards: str) -> "GuardConfig":
        """This config with the named guards switched off."""
        off = {}
        for g in guards:
            if g not in GUARDS:
                raise ValueError(f"unknown guard {g!r}; guards are {GUARDS}")
            off[g] = False if isinstance(getattr(self, g), bool) else None
        return replace(self, **off)

    @property
    def label(self) -> str:
        off = [g for g in GUARDS if getattr(self, g) in (None, False)]
        return "all guards" if not off else "without " + ", ".join(off)


GUARDS = ("all_calls", "validate", "readable_errors", "self_correction", "timeout", "retry",
          "idempotency", "approval", "step_budget", "repeat_limit")
NO_GUARDS = GuardConfig().without(*GUARDS)


@dataclass(frozen=True)
class Run:
    """The outcome of one run: status, the answer the user sees, and the full trace."""

    run_id: str
    loop: str
    model: str
    status: Status
    reason: str
    answer: str
    steps: int
    events: tuple[Event, ...]
    messages: tuple[dict, ...]
    config: str = ""
    pending: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Run({self.loop}, {self.status}, steps={self.steps}, invalid={self.invalid_calls})"

    @property
    def tool_events(self) -> list[Event]:
        return [e for e in self.events if e.kind == "tool"]

    @property
    def tool_calls(self) -> int:
        return len(self.tool_events)

    @property
    def invalid_calls(self) -> int:
        """Calls the model got wrong: unparsable, unknown tool, or invalid arguments."""
        return sum(1 for e in self.tool_events if e.parse_ok is False or e.validate_ok is False)

    @property
    def retries(self) -> int:
        return sum(e.retry_count for e in self.events)

    @property
    def tokens(self) -> int:
        return sum(e.prompt_tokens + e.completion_tokens for e in self.events)

    def summary(self) -> dict:
        return {"loop": self.loop, "status": self.status, "steps": self.steps, "tool_calls": self.tool_calls,
                "invalid_calls": self.invalid_calls, "retries": self.retries, "reason": self.reason,
                "answer": self.answer}

    def to_html(self) -> str:
        return to_html(self.events, f"{self.loop}: {self.status}")

    def _repr_html_(self) -> str:
        return self.to_html()


def compare_html(naive: Run, guarded: Run) -> str:
    """Two runs side by side, step against step."""
    return side_by_side_html(naive.events, guarded.events,
                             titles=(f"{naive.loop}: {naive.status}", f"{guarded.loop}: {guarded.status}"))


# --- running a tool under a timeout ----------------------------------------------
class _Workers:
    """Daemon threads for tool calls, so a hung tool never blocks the interpreter's exit."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> Future:
        fut: Future = Future()
        with self._lock:
            if self._idle == 0:
                threading.Thread(target=self._work, daemon=True, name="agentlab-tool").start()
            else:
                self._idle -= 1
        self._q.put((fn, fut))
        return fut

    def _work(self) -> None:
        while True:
            fn, fut = self._q.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    fut.set_exception(exc)
            with self._lock:
                self._idle += 1


_workers = _Workers()


class _Expired(BaseException):
    """Raised into a read-only tool by the alarm; a BaseException so ``except Exception`` cannot swallow it."""


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _with_alarm(fn: Callable[[], Any], limit: float) -> Any:
    """Run ``fn`` in this thread with a SIGALRM deadline (a few microseconds, against ~85 us for a
    worker thread hand-off). Used only for read-only tools: interrupting a read leaves nothing
    half-done, while a write is never interrupted (it runs in a worker thread instead).
    A timer that was already running (pytest-timeout's, say) is put back afterwards.
    """
    armed = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if armed[0]:
            raise _Expired()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    prev_left, prev_interval = signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.monotonic()
    try:
        try:
            result = fn()
            armed[0] = False
            return result
        finally:
            armed[0] = False  # a signal still pending after this point is a no-op
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise TimeoutError(f"no answer within {limit:g} s") from None
    finally:
        signal.signal(signal.SIGALRM, previous)
        if prev_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(prev_left - (time.monotonic() - t0), 1e-3), prev_interval)


def classify_exception(exc: BaseException, seconds: float = 0) -> ToolError:
    """A tool's exception as a ToolError. Only ToolFailure text reaches the model."""
    if isinstance(exc, ToolFailure):
        return exc.error
    if isinstance(exc, (TimeoutError, FutureTimeout)):
        return make_error("TIMEOUT", seconds=seconds)
    if isinstance(exc, ConnectionError):
        return make_error("UNAVAILABLE")
    return make_error("TOOL_ERROR")


@dataclass
class _Ctx:
    registry: Registry
    config: GuardConfig
    store: Store
    sleep: Callable[[float], None]
    rng: random.Random
    clock: Callable[[], float]
    session_id: str
    lang: Lang


def _invoke(tool: Tool, args: dict, key: str | None, timeout: float | None) -> tuple[Any, ToolError | None, str | None]:
    """Run ``tool.fn`` once. Returns (data, error, technical note for telemetry)."""
    if tool.fn is None:
        return None, make_error("TOOL_ERROR"), "tool has no implementation"
    kwargs = dict(args)
    if tool.keyed and key is not None:
        kwargs["idempotency_key"] = key
    limit = tool.timeout if tool.timeout is not None else timeout
    fn = tool.fn
    try:
        if limit is None:
            return fn(**kwargs), None, None
        if not tool.side_effect and _can_alarm():
            return _with_alarm(lambda: fn(**kwargs), limit), None, None
        return _workers.submit(lambda: fn(**kwargs)).result(timeout=limit), None, None
    except BaseException as exc:  # noqa: BLE001 - every failure becomes data
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return None, classify_exception(exc, limit or 0), redact(f"{type(exc).__name__}: {exc}")[:300]


def execute(tool: Tool, args: dict, ctx: _Ctx, *, key: str | None, claimed: bool = False,
            ) -> tuple[Any, ToolError | None, int, bool, str | None]:
    """Run one validated call with idempotency, timeout and safe retries.

    Returns (data, error, retries, replayed, note). ``claimed`` says the caller
    already holds the idempotency claim for ``key``.
    """
    cfg = ctx.config
    if not claimed and tool.side_effect and cfg.idempotency and key is not None:
        early = _claim(tool, args, ctx, key)
        if early is not None:
            return early
        claimed = True
    safe_to_resend = not tool.side_effect or (cfg.idempotency and tool.keyed)
    retries = 0
    resent_note = None
    while True:
        data, err, note = _invoke(tool, args, key if cfg.idempotency else None, cfg.timeout)
        note = note or resent_note
        if err is None:
            if claimed:
                ctx.store.finish(key, result_json(data))  # type: ignore[arg-type]
            return data, None, retries, False, note
        if (err.category == "transient" and cfg.retry is not None and safe_to_resend
                and retries < cfg.retry.max_retries):
            ctx.sleep(cfg.retry.delay(retries, ctx.rng, err.retry_after))
            retries += 1
            if tool.side_effect:
                resent_note = "resent with the same idempotency key"
            continue
        if claimed:
            ctx.store.release(key)  # type: ignore[arg-type]
        return None, err, retries, False, note


def _claim(tool: Tool, args: dict, ctx: _Ctx, key: str) -> tuple[Any, ToolError | None, int, bool, str | None] | None:
    """Claim ``key``; None if we now own it, else the replay or the refusal."""
    claim = ctx.store.claim(key, canonical(args))
    if claim.status == "new":
        return None
    if claim.status == "replay":
        return json.loads(claim.result or "null"), None, 0, True, "replayed from the idempotency store"
    if claim.status == "conflict":
        return None, make_error("CONFLICT", key=key.split(":", 1)[-1]), 0, False, None
    return None, make_error("IN_PROGRESS"), 0, False, None


def idempotency_key(tool: Tool, args: dict) -> str:
    """Computed by the loop, never by the model: the business key, or all the arguments."""
    if tool.business_key is not None:
        try:
            return f"{tool.name}:{tool.business_key(args)}"
        except (KeyError, TypeError, ValueError):  # unvalidated arguments: fall back to all of them
            pass
    return f"{tool.name}:{canonical(args)}"


# --- the guarded loop ------------------------------------------------------------------
def default_store() -> Store:
    """SQLite, the embedded default: in memory, or the file named by ``AGENTLAB_STORE``
    (share one file between processes and they refund once between them)."""
    import os
    from .store import SQLiteStore
    return SQLiteStore(os.environ.get("AGENTLAB_STORE", ":memory:"))


def run_guarded(model: Model, registry: Registry, task: str, *, config: GuardConfig = GuardConfig(),
                store: Store | None = None, system_prompt: str = "", history: list[dict] | None = None,
                sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
                clock: Callable[[], float] = time.perf_counter, session_id: str | None = None,
                lang: Lang | None = None) -> Run:
    """Run ``task`` with every guard of ``config``. Never raises for model or tool failures."""
    lang = lang or registry.lang
    ctx = _Ctx(registry, config, store if store is not None else default_store(), sleep, rng or random.Random(0),
               clock, session_id or uuid.uuid4().hex[:12], lang)
    run_id = uuid.uuid4().hex[:12]
    messages = _start(system_prompt, history, task)
    messages += _decisions_note(ctx, messages)
    turn_id = sum(1 for m in messages if m.get("role") == "user")
    base = dict(run_id=run_id, session_id=ctx.session_id, turn_id=turn_id, loop="guarded", guard_config=config.label)
    events: list[Event] = []
    specs = registry.specs()
    seen: dict[str, int] = {}
    invalid_streak = 0  # invalid calls since the last one that ran: the re-ask budget
    corrected = False
    pending: list[str] = []
    budget = config.step_budget if config.step_budget is not None else HARD_CAP

    def end(status: Status, reason: str, answer: str, step: int, error: ToolError | None = None) -> Run:
        events.append(Event(**base, round_index=step, kind="end", final_status=status, note=reason,
                            error_code=error.code if error else None,
                            error_category=error.category if error else None,
                            error_stage=error.stage if error else None, model_visible=answer))
        return Run(run_id, "guarded", getattr(model, "name", "model"), status, reason, answer, step,
                   finalize(events, status), tuple(messages), config.label, tuple(pending))

    for step in range(1, budget + 1):
        reply, err, retries, latency, detail = _ask(model, messages, specs, ctx)
        if err is not None:
            events.append(Event(**base, round_index=step, kind="model", exec_ok=False, error_code=err.code,
                                error_category=err.category, error_stage=err.stage, retry_count=retries,
                                latency_ms=latency, note=detail))
            return end("escalated", f"model API: {err.code}", friendly(err, lang), step, err)
        assert reply is not None
        messages.append(reply.message())
        usage = reply.usage
        events.append(Event(**base, round_index=step, kind="model", retry_count=retries, latency_ms=latency,
                            prompt_tokens=usage.prompt_tokens if usage else 0,
                            completion_tokens=usage.completion_tokens if usage else 0,
                            model_visible=reply.content if not reply.tool_calls else
                            (reply.content or "") + " → " + ", ".join(c.name for c in reply.tool_calls)))
        if not reply.tool_calls:
            status: Status = "done_after_self_correction" if corrected else "done"
            return end(status, "final answer", reply.content or "", step)
        calls = reply.tool_calls if config.all_calls else reply.tool_calls[:1]
        for tc in calls:
            t0 = clock()
            outcome = _one_call(tc, ctx, seen)
            latency_ms = (clock() - t0) * 1000
            content = outcome.content if config.readable_errors or outcome.error is None else BARE_ERROR
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
            e = outcome.error
            events.append(Event(**base, round_index=step, kind="tool", tool_name=tc.name, tool_call_id=tc.id,
                                args_raw=tc.arguments, parse_ok=outcome.parse_ok, validate_ok=outcome.validate_ok,
                                exec_ok=outcome.exec_ok, error_code=e.code if e else None,
                                error_category=e.category if e else None, error_stage=e.stage if e else None,
                                retry_count=outcome.retries, latency_ms=latency_ms, model_visible=content,
                                replayed=outcome.replayed, note=outcome.note))
            if outcome.approval_id:
                pending.append(outcome.approval_id)
            if e is None:
                if invalid_streak:
                    corrected = True
                invalid_streak = 0
                continue
            if e.category == "validation":
                invalid_streak += 1
                if config.self_correction is not None and invalid_streak > config.self_correction:
                    err2 = make_error("SELF_CORRECTION_EXHAUSTED", rounds=config.self_correction)
                    return end("escalated", f"{tc.name}: still invalid after {config.self_correction} corrections",
                               friendly(err2, lang), step, err2)
            elif e.category == "fatal":
                return end("escalated", f"{tc.name}: {e.code}", friendly(e, lang), step, e)
    err = make_error("BUDGET_EXHAUSTED", steps=budget)
    return end("budget_exhausted", f"step budget of {budget} used up", friendly(err, lang), budget, err)


@dataclass
class _Outcome:
    content: str
    error: ToolError | None = None
    parse_ok: bool | None = True
    validate_ok: bool | None = True
    exec_ok: bool | None = None
    retries: int = 0
    replayed: bool = False
    note: str | None = None
    approval_id: str | None = None


def _one_call(tc: Any, ctx: _Ctx, seen: dict[str, int]) -> _Outcome:
    cfg, reg, lang = ctx.config, ctx.registry, ctx.lang
    if cfg.validate:
        checked = reg.check(tc.name, tc.arguments, lang=lang, clean=cfg.clean, rules=False)
        if not checked.ok:
            return _Outcome(checked.render(lang), checked.error, parse_ok=checked.parse_ok,
                            validate_ok=False if checked.parse_ok else None)
        args, cleaned = checked.args or {}, checked.cleaned
    else:  # no contract checks: only what is needed not to crash
        args, failure = parse_strict(tc.arguments or "{}")
        if failure is not None or not isinstance(args, dict):
            err = make_error("BAD_JSON", detail=failure.describe() if failure else "not an object", example="{}")
            return _Outcome(render(err, lang), err, parse_ok=False, validate_ok=None)
        if tc.name not in reg:
            err = reg.unknown_tool(tc.name)
            return _Outcome(render(err, lang), err, validate_ok=False)
        cleaned = ()
    tool = reg[tc.name]
    sig = f"{tool.name}:{canonical(args)}"
    seen[sig] = count = seen.get(sig, 0) + 1
    if cfg.repeat_limit is not None and count >= cfg.repeat_limit:
        err = make_error("LOOP_DETECTED", count=count)
        return _Outcome(render(err, lang), err, exec_ok=None, note="repeated-call breaker")
    key = idempotency_key(tool, args)
    claimed = False
    if tool.side_effect and cfg.idempotency:
        # The claim comes before the business rules: a replay of a refund that was
        # done must return its first result, not be refused because the order is refunded now.
        early = _claim(tool, args, ctx, key)
        if early is not None:
            data, err, _, replayed, note = early
            if err is not None:
                return _Outcome(render(err, lang), err, exec_ok=None, note=note)
            return _Outcome(render(None, lang, data=data, replayed=True), None, exec_ok=True, replayed=True, note=note)
        claimed = True

    def refuse(err: ToolError, **kw: Any) -> _Outcome:
        if claimed:
            ctx.store.release(key)
        return _Outcome(render(err, lang), err, **kw)

    if cfg.validate:
        rule_err = reg.check_rules(tool.name, args)
        if rule_err is not None:
            return refuse(rule_err, validate_ok=False if rule_err.code == "INVALID_ARGS" else True, exec_ok=None)
    if cfg.approval and tool.needs_approval is not None:
        try:
            why = tool.needs_approval(args)
        except (KeyError, TypeError, ValueError):  # cannot tell: hold it, fail safe
            why = "the approval rule could not read these arguments"
        if why:
            approval = ctx.store.add_approval(Approval(key, ctx.session_id, tool.name, canonical(args), why,
                                                       created=time.time()))
            if approval.state == "pending":
                err = make_error("NEEDS_APPROVAL", reason=why, extra={"approval_id": approval.id})
                out = refuse(err, exec_ok=None)
                out.approval_id = approval.id
                return out
            if approval.state == "rejected":
                return refuse(make_error("APPROVAL_REJECTED", reason=approval.decision or "-"), exec_ok=None)
            if approval.args != canonical(args):
                return refuse(make_error("CONFLICT", key=key.split(":", 1)[-1]), exec_ok=None)
    data, err, retries, replayed, note = execute(tool, args, ctx, key=key, claimed=claimed)
    if err is not None:
        return _Outcome(render(err, lang), err, exec_ok=False, retries=retries, note=note)
    extra: dict[str, Any] = {}
    if replayed:
        extra["replayed"] = True
    if cleaned:
        extra["cleaned"] = [c.to_dict() for c in cleaned]
    return _Outcome(render(None, lang, data=data, **extra), None, exec_ok=True, retries=retries,
                    replayed=replayed, note=note)


def _ask(model: Model, messages: list[dict], specs: list[dict],
         ctx: _Ctx) -> tuple[Reply | None, ToolError | None, int, float, str | None]:
    """One model turn, resending transient API failures with backoff.

    Returns (reply, error, retries, latency in ms, technical detail for telemetry).
    """
    retries = 0
    t0 = ctx.clock()
    while True:
        try:
            reply = model.complete(list(messages), specs)
            return reply, None, retries, (ctx.clock() - t0) * 1000, None
        except ModelError as exc:
            err = exc.to_error()
            policy = ctx.config.retry
            retries += max(exc.attempts - 1, 0)
            # One retry layer: a failure the adapter already resent is not resent again here.
            if exc.transient and not exc.attempts and policy is not None and retries < policy.max_retries:
                ctx.sleep(policy.delay(retries, ctx.rng, exc.retry_after))
                retries += 1
                continue
            # the technical detail goes to telemetry (redacted), never to the user
            return None, err, retries, (ctx.clock() - t0) * 1000, redact(exc.detail)[:300] or None


def _start(system_prompt: str, history: list[dict] | None, task: str) -> list[dict]:
    messages = [dict(m) for m in history] if history else []
    if system_prompt and not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": task})
    return messages


def _decisions_note(ctx: _Ctx, messages: list[dict]) -> list[dict]:
    """Tell the model what a person decided about calls held for approval in this session."""
    notes = []
    said = json.dumps(messages, ensure_ascii=False)
    for a in ctx.store.approvals(ctx.session_id):
        if a.state == "pending" or f"decided:{a.id}" in said:
            continue
        if a.state == "rejected":
            body = render(make_error("APPROVAL_REJECTED", reason=a.decision or "-"), ctx.lang,
                          approval_id=a.id, decided=f"decided:{a.id}")
        else:
            body = render(None, ctx.lang, data=json.loads(a.result) if a.result else None,
                          approval_id=a.id, decided=f"decided:{a.id}", approved=True)
        notes.append({"role": "system", "content": body})
    return notes


# --- the naive loop --------------------------------------------------------------------
def run_naive(model: Model, registry: Registry, task: str, *, retry_everything: bool = False, cap: int = 12,
              system_prompt: str = "", clock: Callable[[], float] = time.perf_counter,
              session_id: str | None = None) -> Run:
    """The loop as commonly written. Faithful to its flaws; only its crash is contained."""
    run_id = uuid.uuid4().hex[:12]
    sid = session_id or uuid.uuid4().hex[:12]
    label = "naive, retry everything" if retry_everything else "naive"
    base = dict(run_id=run_id, session_id=sid, turn_id=1, loop="naive", guard_config=label)
    messages = _start(system_prompt, None, task)
    events: list[Event] = []
    specs = registry.specs()
    step = 0

    def end(status: Status, reason: str, answer: str) -> Run:
        events.append(Event(**base, round_index=step, kind="end", final_status=status, note=reason, model_visible=answer))
        return Run(run_id, "naive", getattr(model, "name", "model"), status, reason, answer, step,
                   finalize(events, status), tuple(messages), label)

    try:
        for step in range(1, cap + 1):
            t0 = clock()
            reply = model.complete(list(messages), specs)      # no wrapper: an API error crashes the run
            messages.append(reply.message())
            events.append(Event(**base, round_index=step, kind="model", latency_ms=(clock() - t0) * 1000,
                                model_visible=reply.content if not reply.tool_calls else ", ".join(c.name for c in reply.tool_calls)))
            if not reply.tool_calls:
                return end("done", "final answer", reply.content or "")
            tc = reply.tool_calls[0]                            # the rest are silently dropped
            ev = dict(base, round_index=step, kind="tool", tool_name=tc.name, tool_call_id=tc.id, args_raw=tc.arguments)
            try:
                args = json.loads(tc.arguments)                 # no guard
            except Exception:
                events.append(Event(**ev, parse_ok=False, error_code="BAD_JSON", error_category="validation",
                                    error_stage="structure", note="crashed before the tool ran"))
                raise
            try:
                fn = registry[tc.name].fn                       # KeyError on a made-up tool
            except KeyError:
                events.append(Event(**ev, parse_ok=True, validate_ok=False, error_code="UNKNOWN_TOOL",
                                    error_category="validation", error_stage="structure",
                                    note="crashed before the tool ran"))
                raise
            # Telemetry only (the naive loop does not act on it): was the call valid?
            ev["validate_ok"] = registry.check(tc.name, args, rules=False).ok
            attempts = 3 if retry_everything else 1
            t0 = clock()
            for attempt in range(attempts):
                try:
                    content = json.dumps(fn(**args), ensure_ascii=False, default=str)  # type: ignore[misc]
                    ok = True
                    break
                except Exception as exc:  # noqa: BLE001 - the raw text goes to the model, as in the wild
                    content = f"Error: {type(exc).__name__}: {exc}"
                    ok = False
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
            events.append(Event(**ev, parse_ok=True, exec_ok=ok, retry_count=attempt,
                                latency_ms=(clock() - t0) * 1000, model_visible=content,
                                error_code=None if ok else "TOOL_ERROR",
                                error_category=None if ok else "fatal", error_stage=None if ok else "execution"))
        return end("budget_exhausted", f"safety cap of {cap} steps", "")
    except AssertionError:
        raise  # a test's scripted model ran out: the developer's mistake, not the loop's
    except Exception as exc:  # noqa: BLE001 - the crash is the outcome
        return end("failed", f"crashed: {type(exc).__name__}: {exc}", "")
