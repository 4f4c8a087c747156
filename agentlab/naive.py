"""The naive loop, as found in the wild: the anti-pattern every notebook starts from.

It does what much real code does (tau-bench's reference agent, the function-calling
cookbook): it runs only ``tool_calls[0]``, ``json.loads`` the arguments without a
guard, shows raw exception text to the model, retries nothing (or everything), and
has only a hard step cap. Its crashes are caught and reported as the run's outcome
(``failed``), never raised into a notebook. Compare :mod:`agentlab.loop`.
"""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from .errors import UsageError, make_error
from .models.interface import Model, ModelError
from .runs import Run, Status
from .tools import Registry
from .trace import Event, finalize

__all__ = ["run_naive"]


def run_naive(model: Model, registry: Registry, task: str, *, retry_everything: bool = False, cap: int = 12,
              system_prompt: str = "", clock: Callable[[], float] = time.perf_counter,
              session_id: str | None = None, history: list[dict] | None = None) -> Run:
    """The loop as commonly written. Faithful to its flaws; only its crash is contained.

    ``history`` is the conversation so far, sent as it is (no trimming, no checks)."""
    run_id = uuid.uuid4().hex[:12]
    sid = session_id or uuid.uuid4().hex[:12]
    label = "naive, retry everything" if retry_everything else "naive"
    turn = 1 + sum(1 for m in (history or ()) if m.get("role") == "user")
    base: dict[str, Any] = dict(run_id=run_id, session_id=sid, turn_id=turn, loop="naive", guard_config=label)
    messages = [dict(m) for m in history] if history else []
    if system_prompt and not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": task})
    events: list[Event] = []
    specs = registry.specs()
    step = 0

    def end(status: Status, reason: str, answer: str) -> Run:
        events.append(Event(**base, round_index=step, kind="end", final_status=status, note=reason, model_visible=answer))
        return Run(run_id, "naive", str(getattr(model, "name", "model")), status, reason, answer, step,
                   finalize(events, status), tuple(messages), label)

    try:
        for step in range(1, cap + 1):
            t0 = clock()
            try:
                reply = model.complete(list(messages), specs)  # no wrapper: an API error crashes the run
            except UsageError:
                raise
            except Exception as exc:
                # the crash stays a crash; the trace only records its cause (a 429, a refused history...),
                # so a review tags it by what went wrong (evals.review.auto_tag), not as the model's doing
                err = exc.to_error() if isinstance(exc, ModelError) else make_error("MODEL_ERROR")
                events.append(Event(**base, round_index=step, kind="model", exec_ok=False, error_code=err.code,
                                    error_category=err.category, error_stage=err.stage,
                                    latency_ms=(clock() - t0) * 1000, note=f"crashed: {type(exc).__name__}"))
                raise
            messages.append(reply.message())
            events.append(Event(**base, round_index=step, kind="model", latency_ms=(clock() - t0) * 1000,
                                model_visible=reply.content if not reply.tool_calls
                                else ", ".join(str(c.name) for c in reply.tool_calls)))
            if not reply.tool_calls:
                return end("done", "final answer", reply.content or "")
            tc = reply.tool_calls[0]                            # the rest are silently dropped
            ev: dict[str, Any] = dict(base, round_index=step, kind="tool", tool_name=tc.name, tool_call_id=tc.id, args_raw=tc.arguments)
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
            ok, content, attempt = False, "", 0
            for attempt in range(attempts):  # noqa: B007 - the last attempt number is reported below
                try:
                    content = json.dumps(fn(**args), ensure_ascii=False, default=str)  # type: ignore[misc]  # None crashes, as in the wild
                    ok = True
                    break
                except Exception as exc:  # noqa: BLE001 - the raw text goes to the model, as in the wild
                    content = f"Error: {type(exc).__name__}: {exc}"
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
            events.append(Event(**ev, parse_ok=True, exec_ok=ok, retry_count=attempt,
                                latency_ms=(clock() - t0) * 1000, model_visible=content,
                                error_code=None if ok else "TOOL_ERROR",
                                error_category=None if ok else "fatal", error_stage=None if ok else "execution"))
        return end("budget_exhausted", f"safety cap of {cap} steps", "")
    except UsageError:
        raise  # a mistake in the code driving the loop (a script that ran out) is not the loop's outcome
    except Exception as exc:  # noqa: BLE001 - the crash is the outcome
        return end("failed", f"crashed: {type(exc).__name__}: {exc}"[:500], "")
