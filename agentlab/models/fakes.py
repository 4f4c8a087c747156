"""Fake models that ship in the package, so notebooks and tests run offline.

* :class:`ScriptedModel` plays a list of replies and records every call.
* :class:`SelfCorrectingModel` follows a plan and, like a good model, reads the
  structured errors it gets back (problems, allowed values, did-you-mean) and
  fixes its call. It cannot read a bare exception string, just as a real model
  mostly cannot act on ``500 internal error``.
"""
from __future__ import annotations

import copy
import datetime as _dt
import difflib
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..clean import to_number
from ..errors import UsageError
from .interface import ModelCall, ModelError, Reply, ToolCall, call

__all__ = ["DatedModel", "DistractedModel", "ScriptError", "ScriptedModel", "SelfCorrectingModel", "Step", "resolve_dates"]


def _as_reply(item: Any) -> Reply | ModelError:
    if isinstance(item, (Reply, ModelError)):
        return item
    if isinstance(item, str):
        return Reply(item)
    if isinstance(item, ToolCall):
        return Reply(None, (item,))
    raise TypeError(f"a script item must be a Reply, str, ToolCall or ModelError, not {type(item).__name__}")


class ScriptError(UsageError):
    """A scripted model ran out of script, or was not used up: the script's author's mistake,
    which no loop turns into a run outcome."""


class ScriptedModel:
    """Plays ``script`` in order: replies, tool calls, or a ModelError to raise.

    Raises :class:`ScriptError` when asked for more than the script holds (unless
    ``then`` gives a reply to repeat); :meth:`assert_used` complains about leftovers.
    """

    def __init__(self, script: Iterable[Any], *, name: str = "scripted", then: Reply | str | None = None):
        self.name = name
        self.script = [_as_reply(x) for x in script]
        self.then = _as_reply(then) if then is not None else None
        self.calls: list[ModelCall] = []
        self._ids = 0  # ids of unnamed calls count per instance, so they never depend on test order

    def __repr__(self) -> str:
        return f"ScriptedModel({self.name!r}, {len(self.calls)}/{len(self.script)} used)"

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        self.calls.append(ModelCall(tuple(dict(m) for m in messages), tuple(_tool_name(t) for t in tools)))
        n = len(self.calls)
        if n > len(self.script):
            if self.then is None:
                raise ScriptError(f"{self.name}: asked for reply {n} but the script has {len(self.script)}")
            item = self.then
        else:
            item = self.script[n - 1]
        if isinstance(item, ModelError):
            raise item
        return self._named(item)

    def _named(self, reply: Reply) -> Reply:
        if all(c.id for c in reply.tool_calls):
            return reply
        named = []
        for c in reply.tool_calls:
            if not c.id:
                self._ids += 1
                c = replace(c, id=f"call_{self._ids}")
            named.append(c)
        return replace(reply, tool_calls=tuple(named))

    @property
    def unused(self) -> int:
        return max(0, len(self.script) - len(self.calls))

    def assert_used(self) -> None:
        if self.unused:
            raise ScriptError(f"{self.name}: {self.unused} scripted replies were never asked for")


def _tool_name(spec: dict) -> str:
    return spec.get("function", spec).get("name", "?")


@dataclass(frozen=True)
class Step:
    """One step of a plan: the call a model means to make."""

    tool: str
    args: dict


class SelfCorrectingModel:
    """A rule-based model that follows ``plan`` and repairs calls from structured errors.

    After a tool error it looks only at what the error says:
    ``unknown_field`` + ``did_you_mean`` -> rename; ``missing`` -> fill in from
    what it knows (the plan); ``wrong_type`` -> convert (``"199元"`` -> 199);
    ``not_in_enum`` -> pick the closest allowed value; ``BAD_JSON`` -> resend
    valid JSON; ``UNKNOWN_TOOL`` + did-you-mean -> use that tool. An error it
    cannot read (plain text) makes it resend the same call, as models do.
    A fatal error ends the plan with an apology.
    """

    def __init__(self, plan: Sequence[Step | tuple[str, dict]], answer: str | Callable[[list], str] = "Done.",
                 *, name: str = "self-correcting", give_up: str = "Sorry, I could not complete this."):
        self.name = name
        self.plan = [s if isinstance(s, Step) else Step(*s) for s in plan]
        self.answer = answer
        self.give_up = give_up
        self.calls: list[ModelCall] = []
        self._ids = 0            # call ids count per instance
        self._asides: set[str] = set()  # ids of calls whose answers do not advance the plan
        self._pos = 0            # next plan step
        self._last: ToolCall | None = None
        self._results: list[Any] = []
        self._last_read: str | None = None

    def __repr__(self) -> str:
        return f"SelfCorrectingModel({len(self.plan)} steps, at {self._pos})"

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        self.calls.append(ModelCall(tuple(dict(m) for m in messages), tuple(_tool_name(t) for t in tools)))
        mine = _tool_result(messages, self._last.id) if self._last is not None else None
        if mine is not None and self._last is not None and self._last.id in self._asides:
            self._last = None  # the answer to a call made on the side changes nothing in the plan
        elif mine is not None and self._last is not None:
            self._last_read = self._last.id
            parsed = _try_json(mine)
            failed = mine.startswith("Error") or (isinstance(parsed, dict) and (parsed.get("ok") is False or "error" in parsed))
            if not failed:  # {"ok": true, "data": ...} from a guarded loop, or a bare result from a naive one
                self._results.append(parsed.get("data") if isinstance(parsed, dict) and parsed.get("ok") is True else parsed)
                self._pos += 1
            elif isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
                err = parsed["error"]
                if err.get("category") == "fatal" or err.get("retryable") is False:
                    self._last = None
                    return Reply(self.give_up)
                fixed = self._repair(self._last, err)
                self._last = fixed
                return Reply(None, (fixed,))
            else:  # unreadable text: try the very same call again
                again = ToolCall(self._last.name, self._last.arguments, self._new_id())
                self._last = again
                return Reply(None, (again,))
        elif self._last is not None:
            # No answer to my last call (a loop dropped it, or someone else spoke):
            # ask again, as a model would when its request went unanswered.
            again = ToolCall(self._last.name, self._last.arguments, self._new_id())
            self._last = again
            return Reply(None, (again,))
        if self._pos >= len(self.plan):
            self._last = None
            text = self.answer(self._results) if callable(self.answer) else self.answer
            return Reply(text)
        self._last = self._next_call(self.plan[self._pos])
        return Reply(None, (self._last,))

    def _next_call(self, step: Step) -> ToolCall:
        """The call to make for ``step`` (a subclass may make another one first: see _asides)."""
        return self._call(step.tool, step.args)

    def _new_id(self) -> str:
        self._ids += 1
        return f"call_{self._ids}"

    def _call(self, name: str, args: Any) -> ToolCall:
        return replace(call(name, args), id=self._new_id())

    def believe(self, sent: ToolCall) -> None:
        """Take ``sent`` as the call this model made (used by the fault injector)."""
        self._last = sent

    def _repair(self, bad: ToolCall, err: dict) -> ToolCall:
        step = self.plan[min(self._pos, len(self.plan) - 1)]
        code = err.get("code")
        if code == "BAD_JSON":
            return self._call(bad.name, step.args)
        if code == "UNKNOWN_TOOL":
            name = err.get("did_you_mean") or step.tool
            return self._call(name, _try_json(bad.arguments) or step.args)
        args = _try_json(bad.arguments)
        if not isinstance(args, dict):
            args = copy.deepcopy(step.args)  # repaired in place: the plan itself stays as it was
        for p in err.get("problems", []):
            path = _locate(p.get("field", ""), step.args, args)
            if path is None:
                continue  # a place in neither the plan nor the call ("$", a bad path): nothing to change
            reason = p.get("reason")
            here = _get(args, path)
            planned = _get(step.args, path)
            if reason == "unknown_field":
                _pop(args, path)
                target = p.get("did_you_mean")
                if target and here is not _NOTHING:
                    _put(args, [*path[:-1], target], here)
            elif reason == "missing" and planned is not _NOTHING:
                _put(args, path, planned)
            elif reason == "wrong_type":
                if isinstance(here, str) and p.get("expected") in ("number", "integer"):
                    number, _ = to_number(here)
                    _put(args, path, number if number is not None else _or(planned, None))
                else:
                    _put(args, path, _or(planned, _or(here, None)))
            elif reason == "not_in_enum" and p.get("allowed"):
                _put(args, path, _closest(_or(planned, _or(here, "")), list(p["allowed"])))
            elif reason in ("out_of_range", "bad_format", "rule") and planned is not _NOTHING:
                _put(args, path, planned)
        return self._call(bad.name, args)


# --- where a problem is: a field path resolved against the real keys ---------------------------
_NOTHING: Any = object()
_INDEX = re.compile(r"\[(\d+)\]")


def _locate(field: str, *trees: Any) -> list[str | int] | None:
    """The keys that lead to ``field`` (a checker's path: ``items[0].sku``) in the first of ``trees``
    that has it, matched against the real keys first, so that a key with a dot or a bracket in its
    name (``"a.b"``, ``"c[0]"``) is one key. A path found in neither: a new key of the parent when the
    part before its last dot is found (a missing nested field), else one top-level key. None for the whole call."""
    if not field or field == "$":
        return None
    for tree in trees:
        found = _walk(tree, field)
        if found is not None:
            return found
    parent, _, last = field.rpartition(".")
    for tree in trees if parent else ():
        up = _walk(tree, parent)
        if up is not None and isinstance(_get(tree, up), dict):
            return [*up, last]
    return [field]


def _walk(node: Any, rest: str) -> list[str | int] | None:
    if rest == "":
        return []
    if isinstance(node, dict):
        # the longest key that the path starts with, ending where the path's next step begins
        for key in sorted((k for k in node if isinstance(k, str) and rest.startswith(k)), key=len, reverse=True):
            after = rest[len(key):]
            if after and after[0] not in ".[":
                continue
            tail = _walk(node[key], after[1:] if after.startswith(".") else after)
            if tail is not None:
                return [key, *tail]
        return None
    if isinstance(node, list):
        m = _INDEX.match(rest)
        if m and int(m.group(1)) < len(node):
            after = rest[m.end():]
            tail = _walk(node[int(m.group(1))], after[1:] if after.startswith(".") else after)
            return None if tail is None else [int(m.group(1)), *tail]
    return None


def _get(tree: Any, path: Sequence[str | int]) -> Any:
    node = tree
    for key in path:
        if isinstance(node, dict) and isinstance(key, str) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return _NOTHING
    return node


def _put(tree: Any, path: Sequence[str | int], value: Any) -> None:
    parent = _get(tree, path[:-1])
    key = path[-1]
    if isinstance(parent, dict) and isinstance(key, str):
        parent[key] = value
    elif isinstance(parent, list) and isinstance(key, int) and key < len(parent):
        parent[key] = value


def _pop(tree: Any, path: Sequence[str | int]) -> None:
    parent = _get(tree, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)


def _or(value: Any, default: Any) -> Any:
    return default if value is _NOTHING else value


def _closest(want: Any, allowed: list[Any]) -> Any:
    """The allowed value meant, with its own JSON type (an integer enum stays integers): the wanted
    value itself when allowed, else the one whose JSON text is closest."""
    for a in allowed:
        if a == want and type(a) is type(want):
            return a
    texts = [json.dumps(a, ensure_ascii=False, sort_keys=True) for a in allowed]
    plain = [a if isinstance(a, str) else t for a, t in zip(allowed, texts, strict=True)]
    want_text = want if isinstance(want, str) else json.dumps(want, ensure_ascii=False, sort_keys=True, default=str)
    close = difflib.get_close_matches(want_text, plain, n=1, cutoff=0.0)
    return allowed[plain.index(close[0])] if close else allowed[0]


def _tool_result(messages: list[dict], call_id: str) -> str | None:
    """The content of the tool message answering ``call_id``, if any."""
    for m in reversed(messages):
        if m.get("role") == "tool" and m.get("tool_call_id") == call_id:
            return m.get("content", "")
    return None


def _try_json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


class DistractedModel(SelfCorrectingModel):
    """A self-correcting model that wanders: before each step of its plan it may, with probability
    ``detour``, look something up that does not help (a different phone number each time).

    Seeded, so a run is reproducible, and runs differ from seed to seed: some need three turns,
    some eight. That spread is what makes a step budget's trade-off visible.
    """

    def __init__(self, plan: Sequence[Step | tuple[str, dict]], answer: str = "Done.", *, detour: float = 0.35,
                 seed: int = 0, name: str = "distracted"):
        super().__init__(plan, answer, name=name)
        self.detour, self._rng = detour, random.Random(seed)

    def _next_call(self, step: Step) -> ToolCall:
        if self._rng.random() < self.detour:
            aside = self._call("search_orders", {"phone": f"139{self._rng.randrange(10**8):08d}"})
            self._asides.add(aside.id)
            return aside
        return super()._next_call(step)


# --- dates as a model reads them, and the API's rules on a history ----------------------------
_DAY_WORDS: dict[str, Callable[[Any], Any]] = {
    "today": lambda d: d,
    "yesterday": lambda d: d - _dt.timedelta(days=1),
    "day_before_yesterday": lambda d: d - _dt.timedelta(days=2),
    "tomorrow": lambda d: d + _dt.timedelta(days=1),
    # the Friday of the week before this one (weeks start on Monday, as in China)
    "last_friday": lambda d: d - _dt.timedelta(days=d.weekday() + 3),
}
_MONTH_WORDS = {"this_month": 0, "last_month": 1}
_A_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


class DatedModel:
    """A model as the chat API sees it, around any fake: it knows today's date only from the system
    prompt, and the API refuses what a real endpoint refuses.

    * The inner model writes relative dates as placeholders (``"{yesterday}"``, ``"{last_friday}"``,
      ``"{today}"``, ``"{this_month}"``...); this wrapper writes the date they mean *as of the first
      date in the system prompt*, or, with no date there, as of ``cutoff`` (what a model believes
      today is when nobody told it: its training cutoff).
    * A history the API would refuse (an orphan tool message, a call left unanswered) raises the
      400 ``BAD_REQUEST`` the real API returns; a prompt over ``context_window`` tokens (by
      :func:`agentlab.context.estimate_tokens`) raises ``CONTEXT_TOO_LONG``.
    """

    def __init__(self, inner: Any, *, cutoff: _dt.date = _dt.date(2024, 6, 30), context_window: int | None = None):
        self.inner, self.cutoff, self.context_window = inner, cutoff, context_window
        self.name = getattr(inner, "name", "model")
        self.seen_today: list[_dt.date] = []  # the day it took as today, per call

    def __repr__(self) -> str:
        return f"DatedModel({self.inner!r})"

    @property
    def calls(self) -> list[ModelCall]:
        return getattr(self.inner, "calls", [])

    def today(self, messages: Sequence[dict]) -> _dt.date:
        for m in messages:
            if m.get("role") == "system":
                found = _A_DATE.search(str(m.get("content") or ""))
                if found:
                    return _dt.date(*map(int, found.groups()))
        return self.cutoff

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        from ..context import estimate_tokens, protocol_problems  # the rules the endpoint enforces
        problems = protocol_problems(messages)
        if problems:
            raise ModelError("BAD_REQUEST", "invalid messages: " + problems[0], status=400)
        if self.context_window is not None:
            used = estimate_tokens(messages) + sum(len(json.dumps(t)) // 4 for t in tools)
            if used > self.context_window:
                raise ModelError("CONTEXT_TOO_LONG", f"about {used} tokens, the window is {self.context_window}",
                                 status=400)
        today = self.today(messages)
        self.seen_today.append(today)
        reply = self.inner.complete(messages, tools)
        if not reply.tool_calls:
            return reply
        calls = tuple(replace(c, arguments=resolve_dates(c.arguments, today)) for c in reply.tool_calls)
        return replace(reply, tool_calls=calls)


def resolve_dates(text: str, today: _dt.date) -> str:
    """``text`` with every date placeholder (``{yesterday}``, ``{last_month}``...) written out as of ``today``."""
    for word, fn in _DAY_WORDS.items():
        text = text.replace("{" + word + "}", fn(today).isoformat())
    for word, back in _MONTH_WORDS.items():
        y, m = today.year, today.month - back
        if m < 1:
            y, m = y - 1, m + 12
        text = text.replace("{" + word + "}", f"{y:04d}-{m:02d}")
    return text
