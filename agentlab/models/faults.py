"""Faults injected on purpose, into any model and any tool.

Model faults rewrite one reply of the wrapped model at a chosen step (the
first tool-calling reply at or after it), or raise an API error there. Tool
faults wrap a tool's function. Each fault is listed in :data:`FAULTS` with the
guard that is meant to catch it, so notebooks can build menus from it.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..i18n import t as _t
from ..names import to_camel
from ..tools import Registry, Tool
from .interface import Model, ModelCall, ModelError, Reply, ToolCall

__all__ = [
    "FAULTS",
    "MODEL_FAULTS",
    "TOOL_FAULTS",
    "Fault",
    "FaultKind",
    "FaultyModel",
    "faulty_tool",
    "in_words",
    "inject_tool_fault",
    "mutate_call",
    "out_of_range",
]

FaultKind = Literal["model", "api", "tool"]


@dataclass(frozen=True)
class Fault:
    name: str
    kind: FaultKind
    caught_by: str  # the guard (a GuardConfig field) that handles it, or "fatal stop" when nothing may retry

    def describe(self, lang: str = "en") -> str:
        """What the fault does, in ``lang`` (the catalogue's ``fault.<name>``)."""
        return _t(f"fault.{self.name}", "zh" if lang == "zh" else "en")


FAULTS: dict[str, Fault] = {f.name: f for f in [
    Fault("camel_case", "model", "validate"),
    Fault("drop_required", "model", "validate"),
    Fault("wrong_type", "model", "validate"),
    Fault("amount_in_words", "model", "validate"),
    Fault("out_of_enum", "model", "validate"),
    Fault("out_of_range", "model", "validate"),
    Fault("truncated_json", "model", "validate"),
    Fault("unknown_tool", "model", "validate"),
    Fault("duplicate_call", "model", "idempotency"),
    Fault("parallel_call", "model", "idempotency"),
    Fault("api_429", "api", "retry"),
    Fault("api_timeout", "api", "retry"),
    Fault("api_500", "api", "retry"),
    Fault("api_401", "api", "fatal stop"),
    Fault("flaky_tool", "tool", "retry"),
    Fault("hanging_tool", "tool", "timeout"),
    Fault("leaky_tool", "tool", "readable_errors"),
    Fault("lost_reply", "tool", "idempotency"),
    # runaways: the model never answers. A repeat is the breaker's to stop; a ping-pong whose arguments
    # change every time never repeats, and only the step budget stops it
    Fault("repeat_call", "model", "repeat_limit"),
    Fault("ping_pong", "model", "step_budget"),
]}
MODEL_FAULTS = [f.name for f in FAULTS.values() if f.kind in ("model", "api")]
TOOL_FAULTS = [f.name for f in FAULTS.values() if f.kind == "tool"]


def _spec(tools: list[dict], name: str) -> dict:
    for t in tools:
        fn = t.get("function", t)
        if fn.get("name") == name:
            return fn.get("parameters", {})
    return {}


def mutate_call(fault: str, tc: ToolCall, tools: list[dict]) -> ToolCall:
    """``tc`` with an argument fault applied (the same call when there is nothing in it for the fault to change)."""
    if fault == "truncated_json":
        return replace(tc, arguments=tc.arguments[: max(1, len(tc.arguments) // 2)])
    if fault == "unknown_tool":
        name = tc.name.replace("create_", "add_").replace("get_", "fetch_")
        return replace(tc, name=name if name != tc.name else tc.name + "_v2")
    try:
        args = json.loads(tc.arguments)
    except ValueError:
        return tc
    schema = _spec(tools, tc.name)
    props = schema.get("properties", {})
    # a tool the model was not offered (a router left it out, and a scripted model calls it anyway): its fields'
    # types are read from the values themselves, so that wrong_type and amount_in_words do not depend on what the
    # router offered (faults that need the schema's own limits, enums or required names still need it offered)
    shown = any(t.get("function", t).get("name") == tc.name for t in tools)

    def numeric(k: str) -> bool:
        if shown:
            return props.get(k, {}).get("type") in ("number", "integer")
        return isinstance(args[k], (int, float)) and not isinstance(args[k], bool)

    if fault == "camel_case":
        for k in list(args):
            if to_camel(k) != k:
                args = {(to_camel(k) if x == k else x): v for x, v in args.items()}
                break
    elif fault == "drop_required":
        for k in schema.get("required", []):
            if k in args:
                del args[k]
                break
    elif fault == "wrong_type":
        numbers = [k for k in args if numeric(k)]
        if numbers:
            args[numbers[0]] = f"{args[numbers[0]]:g}元" if isinstance(args[numbers[0]], (int, float)) else "199元"
        elif args:
            args[next(iter(args))] = 12345
    elif fault == "amount_in_words":
        numbers = [k for k in args if numeric(k) and isinstance(args[k], (int, float)) and not isinstance(args[k], bool)]
        if numbers:
            args[numbers[0]] = in_words(args[numbers[0]])
    elif fault == "out_of_enum":
        enums = [k for k in args if "enum" in props.get(k, {})]
        if enums:  # a near miss, as models make them: a synonym of an allowed value
            args[enums[0]] = _NEAR_MISS.get(str(args[enums[0]]), "changed_mind")
    elif fault == "out_of_range":
        for k in list(args):
            beyond = out_of_range(props.get(k, {}), args[k])
            if beyond is not None:
                args[k] = beyond
                break
    return replace(tc, arguments=json.dumps(args, ensure_ascii=False))


def out_of_range(schema: Any, value: Any) -> Any:
    """A value just past one of ``schema``'s limits (a maximum, a minimum, a length), or None when it has none.

    Past a maximum by the maximum again (100000 -> 200000), below a minimum by as much (0 -> -1):
    the mistakes a model makes with units and signs, not an off-by-one."""
    if not isinstance(schema, dict):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for kw, sign in (("maximum", 1), ("exclusiveMaximum", 1), ("minimum", -1), ("exclusiveMinimum", -1)):
            bound = schema.get(kw)
            if isinstance(bound, (int, float)) and not isinstance(bound, bool):
                step = max(1, abs(bound))
                return bound + sign * step
    if isinstance(value, str):
        most, least = schema.get("maxLength"), schema.get("minLength")
        if isinstance(most, int) and not isinstance(most, bool):
            return (value or "x") * (most // max(len(value), 1) + 1) + "x"
        if isinstance(least, int) and not isinstance(least, bool) and least > 0:
            return value[: least - 1]
    return None


_NEAR_MISS = {"transport": "transportation", "food": "meals", "lodging": "hotel", "office": "office supplies",
              "communication": "phone", "entertainment": "fun", "medical": "health", "other": "misc"}
_DIGITS = "零一二三四五六七八九"


def in_words(amount: float) -> str:
    """An amount of yuan as people write it in Chinese: 120 -> "一百二十块", 19.5 -> "十九块五"."""
    whole, tenth = int(amount), round((amount - int(amount)) * 10)
    if not 0 <= whole < 100000:
        return f"{amount:g}块"
    out, zero = "", False
    for value, unit in ((10000, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
        d = whole // value % 10
        if d:
            out += ("零" if zero and out else "") + ("" if d == 1 and unit == "十" and not out else _DIGITS[d]) + unit
            zero = False
        elif out:
            zero = True
    return (out or "零") + "块" + (_DIGITS[tenth] if 0 < tenth < 10 else "")


class FaultyModel:
    """Wraps ``model`` and injects ``fault`` at model turn ``at_step`` (1-based)."""

    def __init__(self, model: Model, fault: str | None, *, at_step: int = 1, times: int = 1,
                 retry_after: float = 2.0):
        if fault is not None and (fault not in FAULTS or FAULTS[fault].kind == "tool"):
            raise ValueError(f"{fault!r} is not a model fault; choose from {MODEL_FAULTS}")
        self.inner, self.fault, self.at_step, self.times, self.retry_after = model, fault, at_step, times, retry_after
        self.name = getattr(model, "name", "model") + (f"+{fault}@{at_step}" if fault else "")
        self.turn = 0
        self.injected = 0
        self._repeat: ToolCall | None = None
        self._runaway: ToolCall | None = None  # repeat_call / ping_pong: the call it keeps sending
        self._reads: list[ToolCall] = []  # look-ups the wrapped model made: what a ping-pong goes back to
        self.calls: list[ModelCall] = []
        self._ids = 0  # ids of the calls this injector adds, counted per instance

    def __repr__(self) -> str:
        return f"FaultyModel({self.inner!r}, {self.fault!r} at step {self.at_step}, injected {self.injected})"

    def _next_runaway(self) -> ToolCall:
        """The next call of a runaway: the same call again, or a ping-pong between the look-ups the model made
        (the call itself when it made none), the digits of its first text argument counted on each time."""
        assert self._runaway is not None
        if self.fault == "repeat_call":
            return replace(self._runaway, id=self._new_id("rep"))
        names = list(dict.fromkeys(c.name for c in self._reads))[-2:]
        pool = [next(c for c in reversed(self._reads) if c.name == n) for n in names] or [self._runaway]
        k = self._ids + 1
        tc = pool[k % len(pool)]
        return replace(tc, arguments=_count_on(tc.arguments, k), id=self._new_id("pp"))

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._ids}"

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        self.turn += 1
        self.calls.append(ModelCall(tuple(messages), ()))
        f = self.fault or ""
        armed = bool(f) and self.turn >= self.at_step and self.injected < self.times
        if self._repeat is not None:  # duplicate_call: the turn after, the same call again
            tc, self._repeat = self._repeat, None
            return Reply(None, (replace(tc, id=self._new_id("dup")),))
        if armed and FAULTS[f].kind == "api":
            self.injected += 1
            raise {"api_429": ModelError("RATE_LIMITED", "429 Too Many Requests", status=429, retry_after=self.retry_after),
                   "api_timeout": ModelError("TIMEOUT", "request timed out", status=None),
                   "api_500": ModelError("UNAVAILABLE", "500 Internal Server Error", status=500),
                   "api_401": ModelError("UNAUTHENTICATED", "401 invalid api key", status=401)}[f]
        if self._runaway is not None:  # a runaway never lets the wrapped model speak again
            return Reply(None, (self._next_runaway(),))
        reply = self.inner.complete(messages, tools)
        self._reads += [c for c in reply.tool_calls if c.name.startswith(_READS)]
        if not armed or not reply.tool_calls:
            return reply
        self.injected += 1
        first, rest = reply.tool_calls[0], reply.tool_calls[1:]
        if f == "duplicate_call":
            self._repeat = first
            return reply
        if f in ("repeat_call", "ping_pong"):
            self._runaway = reply.tool_calls[0]
            return Reply(reply.content, (self._next_runaway(),), reply.usage)
        if f == "parallel_call":
            return replace(reply, tool_calls=(first, replace(first, id=self._new_id("par")), *rest))
        bad = mutate_call(f, first, tools)
        if bad == first:  # nothing in this call for the fault to change (no snake_case field, no number...)
            self.injected -= 1
            return reply
        # The wrapped model now believes it sent the bad call: a misconception it
        # keeps until an error it can read tells it otherwise.
        if hasattr(self.inner, "believe"):
            self.inner.believe(bad)
        return replace(reply, tool_calls=(bad, *rest))


#: names of tools that only look things up: what a ping-pong goes back and forth between
_READS = ("get_", "search_", "list_", "find_", "query_", "lookup_", "check_")


def _count_on(arguments: str, k: int) -> str:
    """``arguments`` with the last run of digits in its first text value counted on by ``k``, same width
    (A1001 -> A1003): a new call each time, still as well-formed as the first."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(args, dict):
        return arguments
    for key, value in args.items():
        runs = list(re.finditer(r"\d+", value)) if isinstance(value, str) else []
        if runs:
            m = runs[-1]
            width = len(m.group())
            counted = str((int(m.group()) + k) % 10 ** width).zfill(width)
            args[key] = value[: m.start()] + counted + value[m.end():]
            break
    return json.dumps(args, ensure_ascii=False)


def faulty_tool(tool: Tool, fault: str, *, times: int = 1, seconds: float = 3.0,
                sleep: Callable[[float], None] = time.sleep) -> Tool:
    """``tool`` with a tool-side fault for its first ``times`` calls."""
    if fault not in TOOL_FAULTS:
        raise ValueError(f"{fault!r} is not a tool fault; choose from {TOOL_FAULTS}")
    inner = tool.fn
    assert inner is not None
    state = {"n": 0}
    # what a careless backend lets out, made of this tool's own names: the bookkeeping desk's leak read as the
    # refund desk's ("svc_refund", "FROM orders"), data a reader of that desk never saw anywhere else
    key = next(iter(tool.parameters.get("required") or tool.parameters.get("properties") or ["id"]), "id")
    leak = (f"could not query postgresql://svc_{tool.name}:S3cr3t!@db-prod.internal:5432/desk\n"
            "Traceback (most recent call last):\n  File \"/srv/desk/repo.py\", line 88, in fetch\n"
            f"    cur.execute(\"SELECT * FROM {tool.name} WHERE {key} = %s\")\npsycopg.OperationalError: timeout")

    def fn(**kwargs: Any) -> Any:
        state["n"] += 1
        if state["n"] > times:
            return inner(**kwargs)
        if fault == "flaky_tool":
            raise ConnectionError("connection reset by peer")
        if fault == "hanging_tool":
            sleep(seconds)
            return inner(**kwargs)
        if fault == "leaky_tool":
            raise RuntimeError(leak)
        if fault == "lost_reply":
            inner(**kwargs)  # the effect happens ...
            raise TimeoutError("read timed out")  # ... but the caller never hears of it
        raise AssertionError(fault)

    return replace(tool, fn=fn)


def inject_tool_fault(registry: Registry, tool_name: str, fault: str, **kwargs: Any) -> Registry:
    """A copy of ``registry`` whose ``tool_name`` has ``fault``."""
    tools = [faulty_tool(t, fault, **kwargs) if t.name == tool_name else t for t in registry]
    return Registry(tools, lang=registry.lang, clean=registry.clean)
