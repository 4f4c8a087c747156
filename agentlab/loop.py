"""The guarded loop: a guard at each place where a run goes wrong (docs/guards.md).

Each guard can be switched off in :class:`~agentlab.guards.GuardConfig`::

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
    tool calls run from one message             max_calls_per_turn
    wall-clock deadline for the whole run       run_deadline

A run never raises for a model's or a tool's failure, whatever the model sends;
it ends ``done``, ``done_after_self_correction``, ``escalated`` or ``budget_exhausted``
with a reason. (Its anti-pattern, the naive loop, is in :mod:`agentlab.naive`.)
"""
from __future__ import annotations

import functools
import inspect
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .calls import (
    CallContext,
    CallOutcome,
    _describe,
    _failed,
    _one_call,
    classify_exception,
    default_store,
    execute,
    idempotency_key,
    outlives_process,
    session_scoped,
)
from .errors import ToolError, UsageError, friendly, make_error, redact, render
from .guards import HARD_CAP, GuardConfig
from .i18n import Lang, t
from .jsonutil import escape_surrogates
from .models.interface import Model, ModelError, Reply, ToolCall, ToolChoice, Usage, content_text, takes_tool_choice
from .records import quick
from .runs import Run, Status
from .store import Store, quietly, result_json
from .timeouts import holding_alarm, run_with_timeout
from .tools import Registry
from .trace import Event, finalize

__all__ = [
    "BARE_ERROR",
    "CallContext",
    "CallOutcome",
    "classify_exception",
    "compose_messages",
    "default_store",
    "execute",
    "idempotency_key",
    "run_guarded",
]

BARE_ERROR = "Error: 500 internal error"
# CallContext, CallOutcome, execute, classify_exception, idempotency_key and default_store live in calls.py
# (one tool call); they are named here too, where a reader of the loop has always found them


# --- the guarded loop ------------------------------------------------------------------
def run_guarded(model: Model, registry: Registry, task: str, *, config: GuardConfig = GuardConfig(),
                store: Store | None = None, system_prompt: str = "", history: list[dict] | None = None,
                sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
                clock: Callable[[], float] = time.perf_counter, session_id: str | None = None,
                lang: Lang | None = None, offer: Callable[[list[dict]], list[str]] | None = None,
                tool_choice: ToolChoice | Callable[[list[dict]], ToolChoice] | None = None,
                final_model: Model | None = None) -> Run:
    """Run ``task`` with every guard of ``config``. Never raises for model or tool failures.

    ``offer`` routes tools: given the conversation, the names of the tools to show the model this turn
    (an :class:`agentlab.routing.Router`); by default every tool is shown. A call to a tool that was not
    offered is still checked and run: routing narrows what the model reads, not what it may do.

    ``tool_choice`` sets how much autonomy a turn has (a value, or a function of the conversation):
    ``auto``; ``required`` (a text-only reply is re-asked; given for the whole run, it holds until a call has
    run without error, then the closing answer may be text); ``none`` (no tools shown, a call is refused);
    or one tool's name (only it is shown, any other call is refused and a text answer re-asked, e.g. the
    confirmation before a delete). The loop enforces it for any model, and passes it on to models that take ``tool_choice=``.

    ``final_model`` (off by default) writes the closing answer in a separate call, with no tools, from the
    verified results only (the calls that ran without error): give it a model at a higher temperature than the
    tool turns, for a reply that reads naturally. It runs only when the run ended done; if it fails, or answers
    with anything but text, the single-call answer stands (:func:`compose_messages` says what it reads).

    ``session_id`` is the conversation's own id, the same when the caller restarts and sends the turn again: the
    keys of writes without a business key are scoped to it. It may be left out only where no key can outlive the
    process (the default store of the run's own, ``memory:``); on a SQLite file or Redis, a call of such a write
    raises :class:`~agentlab.errors.UsageError` before it runs (docs/guards.md#idempotency-across-restarts).

    ``config.run_deadline`` bounds the whole run on ``clock``: it is checked before every model call and
    every tool call, and a model call is waited for only until it passes. A model that takes ``timeout=``
    (the OpenAI adapter) is told the seconds left. In the main thread (POSIX) a SIGALRM deadline interrupts
    a model call that outlives the run; elsewhere the model runs in a daemon worker thread that the loop
    stops waiting for at the deadline. A Python thread cannot be killed: a model that never returns keeps
    that thread until the process ends, and what it returns late is dropped. A tool already running is
    never cut short by the deadline (a write cut half-way would leave its outcome unknown); only its own
    ``timeout`` bounds it.
    """
    store = store if store is not None else default_store()
    ctx = CallContext(registry, config, store, sleep, rng or random.Random(0), clock,
                      session_id or uuid.uuid4().hex[:12], lang or registry.lang)
    # a session made here is new: nothing can have been held for it, so no store is asked about its decisions
    turn = _Turn(model, ctx, system_prompt, history, task, offer, tool_choice, known_session=session_id is not None)
    if not session_id and outlives_process(store):
        # a session made up here dies with the process, and so would the keys of writes scoped to it: the caller
        # restarted (the commonest retry) would run them again on the store that remembers them
        turn.unscoped = {tool.name for tool in registry if session_scoped(tool, config)}
    turn.final_model = final_model
    with holding_alarm():  # the turn's waits share one SIGALRM timer, set about once per limit, not per wait
        return turn.run()


class _Turn:
    """One user turn of the guarded loop: model turns and tool calls until an ending."""

    def __init__(self, model: Model, ctx: CallContext, system_prompt: str, history: list[dict] | None, task: str,
                 offer: Callable[[list[dict]], list[str]] | None = None,
                 tool_choice: ToolChoice | Callable[[list[dict]], ToolChoice] | None = None,
                 known_session: bool = True):
        self.model, self.ctx, self.offer, self.tool_choice = model, ctx, offer, tool_choice
        self.run_id = uuid.uuid4().hex[:12]
        self.messages = _start(system_prompt, history, task)
        if known_session:
            self.messages += _decisions_note(ctx)
        turn_id = sum(1 for m in self.messages if m.get("role") == "user")
        self.base: dict[str, Any] = dict(run_id=self.run_id, session_id=ctx.session_id, turn_id=turn_id, loop="guarded",
                         guard_config=ctx.config.label)
        self.events: list[Event] = []
        self.seen: dict[str, int] = {}
        self.invalid_streak = 0  # invalid calls since the last one that ran: the re-ask budget
        self.corrected = False
        self.acted = False  # a tool call has run without error in this run
        self.final_model: Model | None = None  # writes the closing answer in a separate call (run_guarded)
        self.pending: list[str] = []
        self.unscoped: set[str] = set()  # writes keyed by a session that will not survive a restart (run_guarded)
        self.rest: tuple[ToolCall, ...] = ()
        self.started = ctx.clock()

    def left(self) -> float | None:
        """Seconds left before the run's deadline (None: no deadline)."""
        limit = self.ctx.config.run_deadline
        return None if limit is None else limit - (self.ctx.clock() - self.started)

    def late(self, step: int, waiting: str) -> Run:
        """End the run at its deadline: nothing more is started, every unanswered call is answered "not run"."""
        limit = self.ctx.config.run_deadline or 0.0
        err = make_error("BUDGET_EXHAUSTED", _key="BUDGET_EXHAUSTED.deadline", seconds=limit)
        return self.end("budget_exhausted", f"run deadline of {limit:g} s passed ({waiting})",
                        t("friendly.deadline", self.ctx.lang), step, err)

    def end(self, status: Status, reason: str, answer: str, step: int, error: ToolError | None = None) -> Run:
        # every call of the last message gets an answer, even those the ending stopped before they ran:
        # a history with an unanswered tool_call_id is refused by the next API call
        skipped = make_error("NOT_RUN")
        for tc in self.rest:
            content = render(skipped, self.ctx.lang)
            self.messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
            self.events.append(Event(**self.base, round_index=step, kind="tool", tool_name=tc.name, tool_call_id=tc.id,
                                     args_raw=tc.arguments, parse_ok=None, validate_ok=None, exec_ok=None,
                                     error_code=skipped.code, error_category=skipped.category,
                                     error_stage=skipped.stage, model_visible=content, note="not run: the turn ended"))
        self.rest = ()
        self.events.append(Event(**self.base, round_index=step, kind="end", final_status=status, note=reason,
                                 error_code=error.code if error else None,
                                 error_category=error.category if error else None,
                                 error_stage=error.stage if error else None, model_visible=answer))
        return Run(self.run_id, "guarded", str(getattr(self.model, "name", "model")), status, reason, answer, step,
                   finalize(self.events, status), tuple(self.messages), self.ctx.config.label, tuple(self.pending))

    def run(self) -> Run:
        cfg, lang = self.ctx.config, self.ctx.lang
        budget = cfg.step_budget if cfg.step_budget is not None else HARD_CAP
        every = self.ctx.registry.specs()
        for step in range(1, budget + 1):
            left = self.left()
            if left is not None and left <= 0:
                return self.late(step - 1, "before a model call")
            choice = self._choice()
            if choice == "required" and self.tool_choice == "required" and self.acted:
                # run-wide "required" means "act before you answer": once a call has done its work, the closing
                # answer is text (a turn still forced to call could only end budget_exhausted after a success)
                choice = "auto"
            specs = _narrow(self._offered(every), choice)
            asked = _ask(self.model, self.messages, specs, self.ctx, step, choice, self.left)
            offered = ",".join(s.get("function", s).get("name", "") for s in specs)  # routing, watched on traffic
            if asked.error is not None:
                err = asked.error
                self.events.append(Event(**self.base, round_index=step, kind="model", exec_ok=False, offered=offered,
                                         error_code=err.code, error_category=err.category, error_stage=err.stage,
                                         retry_count=asked.retries, latency_ms=asked.latency_ms, note=asked.detail))
                if asked.late:
                    return self.late(step, "waiting for the model")
                return self.end("escalated", f"model API: {err.code}: {err.text('en')}", friendly(err, lang), step, err)
            reply = asked.reply
            assert reply is not None  # _ask returns a reply or an error
            self.messages.append(reply.message())
            usage = reply.usage
            self.events.append(Event(**self.base, round_index=step, kind="model", retry_count=asked.retries,
                                     latency_ms=asked.latency_ms, offered=offered,
                                     prompt_tokens=usage.prompt_tokens if usage else 0,
                                     completion_tokens=usage.completion_tokens if usage else 0,
                                     model_visible=_said_and_called(reply)))
            if not reply.tool_calls:
                if choice not in (None, "auto", "none"):  # required or one named tool: a text answer is re-asked
                    err = make_error("WRONG_TOOL", _key="WRONG_TOOL.required")
                    self.messages.append({"role": "system", "content": render(err, lang)})
                    self.events.append(Event(**self.base, round_index=step, kind="tool", validate_ok=False,
                                             error_code=err.code, error_category=err.category,
                                             error_stage=err.stage, model_visible=render(err, lang)))
                    ending = self._count_invalid("(no call)", step)
                    if ending is not None:
                        return ending
                    continue
                status: Status = "done_after_self_correction" if self.corrected else "done"
                answer = reply.content or ""
                if self.final_model is not None:
                    answer = self._compose(answer, step)
                return self.end(status, "final answer", answer, step)
            calls = reply.tool_calls if cfg.all_calls else reply.tool_calls[:1]
            cap = cfg.max_calls_per_turn
            over = calls[cap:] if cap is not None and len(calls) > cap else ()
            calls = calls[:len(calls) - len(over)]
            for i, tc in enumerate(calls):
                self.rest = calls[i + 1:] + over  # answered as "not run" if this call ends the turn
                left = self.left()
                if left is not None and left <= 0:
                    self.rest = calls[i:] + over
                    return self.late(step, "before a tool call")
                ending = self._call(tc, step, _refusal(tc, choice, lang))
                if ending is not None:
                    return ending
            for tc in over:  # not run, and the model is told why: it may send them again, fewer at a time
                assert cap is not None  # over is empty without a cap
                self._too_many(tc, step, cap)
            self.rest = ()
        err = make_error("BUDGET_EXHAUSTED", steps=budget)
        return self.end("budget_exhausted", f"step budget of {budget} used up", friendly(err, lang), budget, err)

    def _compose(self, single: str, step: int) -> str:
        """The closing answer written by :attr:`final_model` from the verified results (``single`` if that fails)."""
        assert self.final_model is not None
        task = next((m.get("content") or "" for m in reversed(self.messages) if m.get("role") == "user"), "")
        asked = _ask(self.final_model, compose_messages(task, self.events, self.ctx.lang), [], self.ctx, step,
                     None, self.left)
        text = asked.reply.content if asked.reply is not None and not asked.reply.tool_calls else None
        self.events.append(Event(**self.base, round_index=step, kind="model", retry_count=asked.retries,
                                 latency_ms=asked.latency_ms, offered="", model_visible=text,
                                 error_code=asked.error.code if asked.error else None,
                                 error_category=asked.error.category if asked.error else None,
                                 error_stage=asked.error.stage if asked.error else None,
                                 note="final answer written by a separate call" if text else
                                 "the separate final-answer call failed; the single-call answer stands"))
        if not text:
            return single
        self.messages[-1] = {**self.messages[-1], "content": text}  # the history holds what the user read
        return text

    def _too_many(self, tc: ToolCall, step: int, cap: int) -> None:
        """Answer a call past ``max_calls_per_turn`` without running it; the turn goes on."""
        lang = self.ctx.lang
        hint = {lg: t("hint.too_many_calls", lg, limit=cap) for lg in ("en", "zh")}
        err = make_error("NOT_RUN", _key="NOT_RUN.too_many_calls", limit=cap, hint=hint)
        content = render(err, lang) if self.ctx.config.readable_errors else BARE_ERROR
        self.messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
        self.events.append(Event(**self.base, round_index=step, kind="tool", tool_name=tc.name, tool_call_id=tc.id,
                                 args_raw=tc.arguments, parse_ok=None, validate_ok=None, exec_ok=None,
                                 error_code=err.code, error_category=err.category, error_stage=err.stage,
                                 model_visible=content, note=f"not run: more than {cap} calls in one message"))

    def _offered(self, every: list[dict]) -> list[dict]:
        if self.offer is None:
            return every
        try:
            names = set(self.offer(list(self.messages)))
        except Exception:  # noqa: BLE001 - a broken router shows every tool rather than none
            return every
        chosen = [s for s in every if s.get("function", s).get("name") in names]
        return chosen or every  # nothing matched: better every tool than none

    def _choice(self) -> ToolChoice | None:
        if callable(self.tool_choice):
            try:
                return self.tool_choice(list(self.messages))
            except Exception:  # noqa: BLE001 - a broken policy leaves the turn to the model
                return None
        return self.tool_choice

    def _count_invalid(self, name: str, step: int) -> Run | None:
        """One more invalid call in a row; a Run when the re-ask budget is spent."""
        cfg = self.ctx.config
        self.invalid_streak += 1
        if cfg.self_correction is not None and self.invalid_streak > cfg.self_correction:
            err = make_error("SELF_CORRECTION_EXHAUSTED", rounds=cfg.self_correction)
            return self.end("escalated", f"{name}: still invalid after {cfg.self_correction} corrections",
                            friendly(err, self.ctx.lang), step, err)
        return None

    def _call(self, tc: ToolCall, step: int, refused: CallOutcome | None = None) -> Run | None:
        """Answer one tool call (or refuse it with ``refused``); a Run when it ends the turn."""
        cfg, lang, clock = self.ctx.config, self.ctx.lang, self.ctx.clock
        t0 = clock()
        if refused is None and tc.name in self.unscoped:  # before it runs: a developer's mistake, not the model's
            raise UsageError(t("loop.no_session", lang, tool=tc.name, store=type(self.ctx.store).__name__))
        out = refused if refused is not None else _one_call(tc, self.ctx, self.seen)
        latency_ms = (clock() - t0) * 1000
        content = out.content if cfg.readable_errors or out.error is None else BARE_ERROR
        self.messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
        e = out.error
        self.events.append(Event(**self.base, round_index=step, kind="tool", tool_name=tc.name, tool_call_id=tc.id,
                                 args_raw=tc.arguments, parse_ok=out.parse_ok, validate_ok=out.validate_ok,
                                 exec_ok=out.exec_ok, error_code=e.code if e else None,
                                 error_category=e.category if e else None, error_stage=e.stage if e else None,
                                 retry_count=out.retries, latency_ms=latency_ms, model_visible=content,
                                 replayed=out.replayed, note=out.note))
        if out.approval_id:
            self.pending.append(out.approval_id)
        if e is None:
            self.acted = True
            if self.invalid_streak:
                self.corrected = True
            self.invalid_streak = 0
            return None
        if e.category == "validation":
            return self._count_invalid(tc.name, step)
        elif e.category == "fatal":
            return self.end("escalated", f"{tc.name}: {e.code}", friendly(e, lang), step, e)
        return None


def compose_messages(task: str, events: list[Event], lang: Lang) -> list[dict]:
    """The separate final-answer call's conversation: the instruction, the user's request, and the verified
    results (each call that ran without error, with its arguments and what it returned), nothing else: not the
    errors, re-asks and guesses of the tool turns."""
    verified = [{"tool": e.tool_name, "arguments": e.args_raw, "result": e.model_visible}
                for e in events if e.kind == "tool" and e.error_code is None and e.exec_ok]
    return [{"role": "system", "content": t("final_answer.prompt", lang)},
            {"role": "user", "content": task},
            {"role": "user", "content": json.dumps({"verified_results": verified}, ensure_ascii=False)}]


def _narrow(specs: list[dict], choice: ToolChoice | None) -> list[dict]:
    """The tools a turn shows under ``choice``: none, one, or all that were offered."""
    if choice == "none":
        return []
    if choice in (None, "auto", "required"):
        return specs
    return [s for s in specs if s.get("function", s).get("name") == choice]


def _refusal(tc: ToolCall, choice: ToolChoice | None, lang: Lang) -> CallOutcome | None:
    """A call this turn's tool_choice does not allow, answered without running it (the model's mistake)."""
    if choice in (None, "auto", "required") or tc.name == choice:
        return None
    err = make_error("WRONG_TOOL", _key="WRONG_TOOL.none") if choice == "none" else \
        make_error("WRONG_TOOL", _key="WRONG_TOOL.named", tool=choice)
    return _failed(err, lang, validate_ok=False, exec_ok=None)


@quick
@dataclass(frozen=True)
class _Asked:
    reply: Reply | None
    error: ToolError | None
    retries: int
    latency_ms: float
    detail: str | None = None  # technical detail for telemetry (redacted), never for the user
    late: bool = False  # the run's deadline passed before the model answered


class _Late(Exception):
    """The run's deadline passed while the loop waited for the model."""


def _takes_timeout(model: Any) -> bool:
    complete = getattr(model, "complete", None)
    fn = getattr(complete, "__func__", complete)
    try:
        return "timeout" in _parameters(fn)
    except TypeError:  # an unhashable callable: read its signature every time
        return "timeout" in _parameters.__wrapped__(fn)


@functools.lru_cache(maxsize=256)
def _parameters(fn: Any) -> frozenset[str]:
    """The parameter names of ``fn``, read once per function (a signature costs ~10 us, a model call here ~5)."""
    try:
        return frozenset(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _complete(model: Model, messages: list[dict], specs: list[dict], choice: ToolChoice | None, native: bool,
              limit: float | None) -> Any:
    """``model.complete`` waited for at most ``limit`` seconds (None: as long as it takes); raises _Late past it.

    Waited for as a read tool is (:func:`agentlab.timeouts.run_with_timeout`): in the main thread a SIGALRM
    deadline interrupts the call (a model call changes nothing, so nothing is left half-done); elsewhere it
    runs in a daemon worker thread, with this thread's context variables, that the loop stops waiting for:
    that thread cannot be killed, and what it returns after the deadline is dropped."""
    kwargs: dict[str, Any] = {}
    if native:  # the protocol's complete() takes two arguments; a model that also takes tool_choice gets it
        kwargs["tool_choice"] = choice
    if limit is not None and _takes_timeout(model):
        kwargs["timeout"] = limit  # a model that can bound its own wait (the OpenAI adapter) is told how long it has
    if limit is None:
        return model.complete(list(messages), specs, **kwargs)

    def call() -> tuple[bool, Any]:
        try:  # the model's own exceptions come back as values: a TimeoutError past this point is the deadline's
            return True, model.complete(list(messages), specs, **kwargs)
        except Exception as exc:  # noqa: BLE001 - re-raised in the loop's thread, below
            return False, exc

    try:  # (in a worker thread, with this thread's context variables: run_with_timeout copies them)
        ok, value = run_with_timeout(call, max(limit, 1e-3), write=False)
    except TimeoutError:
        raise _Late() from None
    if not ok:
        raise value
    return value


def _ask(model: Model, messages: list[dict], specs: list[dict], ctx: CallContext, step: int,
         choice: ToolChoice | None = None, left: Callable[[], float | None] | None = None) -> _Asked:
    """One model turn, resending transient API failures with backoff. Never raises for the model.

    ``left`` gives the seconds before the run's deadline: the model is waited for at most that long,
    and a resend that would have to wait past it is not made (the answer is then ``late``)."""
    retries = 0
    t0 = ctx.clock()
    policy = ctx.config.retry
    native = bool(choice not in (None, "auto") and specs and takes_tool_choice(model))

    def late(detail: str) -> _Asked:
        err = make_error("TIMEOUT", _key="model.too_slow", seconds=ctx.config.run_deadline or 0.0)
        return _Asked(None, err, retries, (ctx.clock() - t0) * 1000, detail, late=True)

    while True:
        limit = left() if left is not None else None
        if limit is not None and limit <= 0:
            return late("the run deadline passed before the model was asked (again)")
        try:
            raw = _complete(model, messages, specs, choice, native, limit)
        except _Late:
            return late("the run deadline passed while waiting for the model")
        except ModelError as exc:
            err = exc.to_error()
            retries += max(exc.attempts - 1, 0)
            detail = redact(exc.detail[:2000])[:300] or None
            wait = policy.delay(retries, ctx.rng, exc.retry_after) if policy is not None else 0.0
            if exc.retry_after is not None and policy is not None and not policy.may_wait(exc.retry_after):
                # never resend before the server's Retry-After; past what we may wait, stop and say when to
                # come back (as rate limiting only when it is; a 503's wait keeps its own code)
                if exc.code == "RATE_LIMITED":
                    err = make_error("RATE_LIMITED", _key="RATE_LIMITED.too_long", seconds=exc.retry_after,
                                     retry_after=exc.retry_after)
                return _Asked(None, err, retries, (ctx.clock() - t0) * 1000, detail)
            # One retry layer: a failure the adapter already resent is not resent again here.
            if exc.transient and not exc.attempts and policy is not None and retries < policy.max_retries:
                limit = left() if left is not None else None
                if limit is not None and wait >= limit:  # the resend could only start after the deadline
                    return late(f"a resend would wait {wait:g} s, past the run deadline; the failure: {detail}")
                ctx.sleep(wait)
                retries += 1
                continue
            return _Asked(None, err, retries, (ctx.clock() - t0) * 1000, detail)
        except (KeyboardInterrupt, SystemExit, UsageError):
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken adapter ends the run, it does not crash it
            err = make_error("MODEL_ERROR", detail=type(exc).__name__)
            return _Asked(None, err, retries, (ctx.clock() - t0) * 1000, _describe(exc))
        try:
            reply = _well_formed(raw, step)
        except Exception as exc:  # noqa: BLE001 - a reply too odd to read (a str() that raises...) ends the run
            err = make_error("MODEL_ERROR", detail=f"unreadable reply: {type(exc).__name__}")
            return _Asked(None, err, retries, (ctx.clock() - t0) * 1000, _describe(exc))
        if reply is None:
            err = make_error("MODEL_ERROR", detail=f"not a reply: {type(raw).__name__}")
            return _Asked(None, err, retries, (ctx.clock() - t0) * 1000)
        return _Asked(reply, None, retries, (ctx.clock() - t0) * 1000)


def _well_formed(raw: Any, step: int) -> Reply | None:
    """The reply with every model-written string made safe to store and send.

    ``None`` names and arguments become empty (an unknown tool, empty arguments: both
    answered with a readable error), lone surrogates become escapes, missing ids get one.
    """
    if not isinstance(raw, Reply):
        return None
    calls = []
    raw_calls = raw.tool_calls if isinstance(raw.tool_calls, (list, tuple)) else ()
    seen_ids: set[str] = set()
    for i, c in enumerate(raw_calls, 1):
        name = getattr(c, "name", None)
        args = getattr(c, "arguments", None)
        if isinstance(args, (dict, list)):
            args = result_json(args)  # never raises, whatever the adapter put in there
        cid = getattr(c, "id", None)
        if isinstance(cid, str):  # the id goes back to the API in the history: half an emoji there breaks every request
            cid = escape_surrogates(cid)
        if not isinstance(cid, str) or not cid or cid in seen_ids:  # each call needs its own id to be answered
            cid = f"call_{step}_{i}"
        seen_ids.add(cid)
        calls.append(ToolCall(escape_surrogates(name) if isinstance(name, str) else "",
                              escape_surrogates(args) if isinstance(args, str) else ("" if args is None else str(args)),
                              cid))
    content = content_text(raw.content)  # list-of-parts content is read as its text, never as a Python repr
    usage = raw.usage if isinstance(raw.usage, Usage) and all(
        isinstance(n, int) for n in (raw.usage.prompt_tokens, raw.usage.completion_tokens)) else None
    return Reply(escape_surrogates(content) if content else content, tuple(calls), usage)


def _start(system_prompt: str, history: list[dict] | None, task: str) -> list[dict]:
    messages = [dict(m) for m in history] if history else []
    if system_prompt and not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": task})
    return messages


def _decisions_note(ctx: CallContext) -> list[dict]:
    """Tell the model what a person decided about this session's held calls, once each."""
    notes: list[dict] = []
    try:
        approvals = ctx.store.approvals(ctx.session_id)
    except Exception:  # noqa: BLE001 - the store is down: the decisions are told next turn, when it is back
        return notes
    for a in approvals:
        if a.state in ("approved", "unknown") and a.result is None:
            late = ctx.store.result(a.id)  # an approved call that outlived its timeout may have landed since
            if late is not None:
                ctx.store.set_approval_result(a.id, late, state="approved")
                a = replace(a, result=late, state="approved", told=False)
            elif a.state == "approved":
                continue
        if a.told or a.state == "pending":
            continue
        if a.state == "rejected":
            body = render(make_error("APPROVAL_REJECTED", reason=a.decision or "-"), ctx.lang, approval_id=a.id)
        elif a.state == "unknown":  # approved and started, no result: it may have happened; never "do it again"
            body = render(make_error("OUTCOME_UNKNOWN"), ctx.lang, approval_id=a.id, approved=True)
        elif a.state == "failed":  # approved, but running it failed: nothing happened yet, say so
            error = json.loads(a.error) if a.error else {}
            body = json.dumps({"ok": False, "error": error, "approval_id": a.id, "approved": True,
                               "executed": False, "still_pending": True}, ensure_ascii=False)
        else:
            body = render(None, ctx.lang, data=json.loads(a.result) if a.result else None,
                          approval_id=a.id, approved=True)
        notes.append({"role": "system", "content": body})
        quietly(ctx.store.mark_told, a.id)
    return notes


def _said_and_called(reply: Any) -> str | None:
    """A model turn as its trace row shows it: what it said, then the tools it called ("→ get_order" with nothing
    said read "model:  → get_order" beside the naive loop's "model: get_order")."""
    if not reply.tool_calls:
        return reply.content
    called = ", ".join(c.name for c in reply.tool_calls)
    return f"{reply.content} → {called}" if (reply.content or "").strip() else called
