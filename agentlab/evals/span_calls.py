"""The tool calls a chat span holds, for the traces whose calls have no ``execute_tool`` span of their own.

An instrumentation that records the model's turns and not the tools writes each call the model asked for as a
``tool_call`` part of the chat span's ``gen_ai.output.messages`` (the OpenTelemetry GenAI conventions), and each
answer as a ``tool_call_response`` part of the next turn's ``gen_ai.input.messages``. :class:`SpanCalls` turns
those parts into the rows an ``execute_tool`` span would have given, for :func:`agentlab.evals.otel.read_otlp`:

- a call is held until its trace's next turn (whose input answers it) or its end, then read in the turn that asked
  for it; whether it ran is what its answer says (:func:`agentlab.evals.exchanges.answered`), not known without one;
- a call that also has a span of its own is read once, from that span, whether the span comes before the chat span
  that asked (a streamed turn ends after its tools ran) or before the next turn;
- a second chat span of the same turn (two instrumentations of one call: the same calls, by id) is not a new ask;
- what is held is bounded: calls only of a trace begun among the last :data:`WINDOW` (by when it began, as the log
  reader closes runs: :data:`agentlab.evals.logs.OPEN_RUNS`), at most :data:`HELD` calls in all, :data:`SPANS`
  unmatched spans a trace. Past a bound the oldest calls are read as asked, never dropped: held longer, a trace that
  never ends (a chat-only log has no ``invoke_agent`` span) had its run closed by the reader before its calls came,
  and was read as two runs.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .exchanges import answered

__all__ = ["HELD", "SPANS", "WINDOW", "SpanCalls", "messages_of", "text_of"]

#: traces, by when they began, whose calls may be held (the log reader keeps 10,000 runs open)
WINDOW = 2_048
#: calls held at once, every trace together
HELD = 4_096
#: spans of their own that matched no held call, kept per trace for the chat span that asks for them next
SPANS = 16
_BEGUN = 10_000  # traces whose beginning is remembered (as many as the reader's open runs): older ones hold nothing
_EVERY = 64  # traces begun between two looks for held calls grown too old

# json.dumps(..., ensure_ascii=False), made once: arguments or an answer written as an object
_TEXT = json.JSONEncoder(ensure_ascii=False, default=str).encode
#: a part of this type in a text that is not whole JSON: something was there, and could not be read
_PART = {kind: re.compile(rf'"type"\s*:\s*"{kind}"') for kind in ("tool_call", "tool_call_response")}


def text_of(value: Any) -> str | None:
    """A name or an id as a span wrote it: text, or the text of a number or a flag; None when absent."""
    if value is None or type(value) is str:
        return value
    try:
        return _TEXT(value)
    except (ValueError, RecursionError):
        return None


def _id(value: Any) -> str | None:
    return text_of(value) or None  # an empty id is no id


def messages_of(value: Any) -> list[Mapping[str, Any]] | None:
    """The messages of ``gen_ai.input.messages`` or ``gen_ai.output.messages``: a JSON text (the usual way) or the
    structured value the conventions prefer (read by the span reader as a list of dicts); one message alone, a list of
    parts alone, or either wrapped in an object under ``messages``. None when it is not messages at all."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping):
        value = value["messages"] if isinstance(value.get("messages"), list) else [value] if "parts" in value else None
    if not isinstance(value, list):
        return None
    if value and all(isinstance(m, Mapping) and "type" in m and "parts" not in m for m in value):
        return [{"parts": value}]  # the parts of one message, given without it
    return [m for m in value if isinstance(m, Mapping)]


def unreadable(value: Any, kind: str) -> bool:
    """Whether ``value`` holds parts of ``kind`` and is not JSON at all (cut short by an attribute length limit). JSON
    of another shape is read as holding no messages, never said to be cut short."""
    if not isinstance(value, str) or _PART[kind].search(value) is None:
        return False
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return True
    return False


def _parts(message: Mapping[str, Any], kind: str) -> Iterator[Mapping[str, Any]]:
    parts = message.get("parts")
    for p in parts if isinstance(parts, list) else ():
        if isinstance(p, Mapping) and p.get("type") == kind:
            yield p


def asks(messages: Any) -> list[Mapping[str, Any]]:
    """The ``tool_call`` parts of a chat span's output: of its first message that asks (one message per candidate:
    the first is the one an agent goes on with)."""
    for m in messages_of(messages) or ():
        parts = list(_parts(m, "tool_call"))
        if parts:
            return parts
    return []


class _Trace:
    __slots__ = ("asked", "given", "held", "spans")

    def __init__(self) -> None:
        self.held: list[list[Any]] = []  # [row, recorded by a span of its own] of the last turn's calls, in order
        self.spans: list[tuple[str | None, Any]] = []  # (id, name) of spans of their own that matched no held call
        # the last ask: its ids (all named) and how many messages its turn was given (a second span of that turn)
        self.asked: tuple[frozenset[str], int] | None = None
        self.given: list[tuple[str | None, Any]] = []  # (id, name) of the calls read at the last turn, no span yet


def _same(cid: str | None, name: Any, other_id: str | None, other_name: Any) -> bool:
    return cid == other_id if cid is not None and other_id is not None else name == other_name


class SpanCalls:
    """The calls read from chat spans while one file is read (see the module's description)."""

    def __init__(self) -> None:
        self.begun: dict[str, int] = {}  # trace -> the count of traces begun when it began (the last _BEGUN)
        self.count = 0  # traces begun
        self.traces: dict[str, _Trace] = {}  # the young traces with something kept
        self.held = 0  # calls held, every trace together
        self.old: dict[tuple[str, str | None, Any], None] = {}  # calls of traces begun too long ago, read at once

    def _young(self, trace_id: str, out: list[dict]) -> bool:
        began = self.begun.get(trace_id)
        if began is None:
            self.count += 1
            began = self.begun[trace_id] = self.count
            if len(self.begun) > _BEGUN:
                del self.begun[next(iter(self.begun))]
            if self.count % _EVERY == 0:
                self._age(out)
        return self.count - began < WINDOW

    def _age(self, out: list[dict]) -> None:
        """The traces begun too long ago: their calls read as asked, nothing more kept of them."""
        for trace_id in [t for t in self.traces if self.count - self.begun.get(t, -WINDOW) >= WINDOW]:
            out += self._out(self.traces.pop(trace_id))

    def _trace(self, trace_id: str, out: list[dict]) -> _Trace | None:
        if not self._young(trace_id, out):
            tr = self.traces.pop(trace_id, None)
            if tr is not None:
                out += self._out(tr)
            return None
        tr = self.traces.get(trace_id)
        if tr is None:
            tr = self.traces[trace_id] = _Trace()
        return tr

    def _out(self, tr: _Trace) -> list[dict]:
        held, tr.held = tr.held, []
        self.held -= len(held)
        return [row for row, recorded in held if not recorded]

    def tool_span(self, trace_id: str, attrs: Mapping[str, Any], out: list[dict]) -> bool:
        """An ``execute_tool`` span. True: its row is read, and the held copy of its call is not (a span that matches
        no held call is kept for the chat span that asks for it next: a streamed turn's span comes first). False: its
        call was read already from the chat span (a turn came between: a tool that asks a model of its own, or a trace
        begun too long ago to hold anything), and the span's row is not read again."""
        cid, name = _id(attrs.get("gen_ai.tool.call.id")), attrs.get("gen_ai.tool.name")
        tr = self._trace(trace_id, out)
        if tr is None:
            key = next((k for k in self.old if k[0] == trace_id and _same(cid, name, k[1], k[2])), None)
            if key is not None:
                del self.old[key]
                return False
            return True
        for pair in tr.held:
            row = pair[0]
            if not pair[1] and _same(cid, name, row["tool_call_id"], row["tool_name"]):
                pair[1] = True  # kept in its place: answers without ids are given in order
                return True
        for i, (gid, gname) in enumerate(tr.given):
            if _same(cid, name, gid, gname):
                del tr.given[i]
                return False
        tr.spans.append((cid, name))
        if len(tr.spans) > SPANS:
            del tr.spans[0]
        return True

    def waits(self, trace_id: str) -> bool:
        """Whether calls of this trace wait for an answer (the next turn's input is what answers them)."""
        tr = self.traces.get(trace_id)
        return tr is not None and any(not recorded for _, recorded in tr.held)

    def repeats(self, trace_id: str, parts: list[Mapping[str, Any]], given: list[Mapping[str, Any]] | None) -> bool:
        """Whether a chat span is a second span of the trace's last turn (two instrumentations of one model call): it
        asks for the same calls, by id, and was given as many messages. A turn of its own was given more (the last
        turn's calls and their answers), and may ask again under an id a model or an instrumentation uses every turn
        (``call_0``, ``create_refund_1``). ``given``: the span's input messages (:func:`messages_of`)."""
        tr = self.traces.get(trace_id)
        if tr is None or tr.asked is None or not parts or given is None:
            return False
        ids = [_id(p.get("id")) for p in parts]
        return None not in ids and (frozenset(ids), len(given)) == tr.asked

    def before(self, trace_id: str, given: list[Mapping[str, Any]] | None, out: list[dict]) -> None:
        """Before a trace's next turn (``given``: its input messages) or its end (None): the calls held for it, each
        answered by what the turn's input says of it, go to ``out``."""
        tr = self._trace(trace_id, out)
        if tr is None:
            return
        tr.asked = None
        if not tr.held:
            tr.given = []
            return
        if given:
            self._answer([row for row, _ in tr.held], given)
        rows = self._out(tr)
        # a span of its own may still come for them: a tool that asks a model of its own ends after that model's turn
        tr.given = [(r["tool_call_id"], r["tool_name"]) for r in rows][-SPANS:]
        out += rows

    @staticmethod
    def _answer(rows: list[dict], messages: list[Mapping[str, Any]]) -> None:
        # the answers after the last assistant message: the input of a turn carries the whole conversation, where an
        # id a model reuses each turn (call_0) was answered turns ago
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        by_id: dict[str, Any] = {}
        unnamed: list[Any] = []  # answers with no id: given in order to the calls with none
        for m in messages[last + 1:]:
            for p in _parts(m, "tool_call_response"):
                said = p.get("response", p.get("result"))
                cid = _id(p.get("id"))
                if cid is None:
                    unnamed.append(said)
                else:
                    by_id[cid] = said
        unnamed.reverse()
        for r in rows:
            cid = r["tool_call_id"]
            if cid is not None and cid in by_id:
                said = by_id[cid]
            elif cid is None and unnamed:
                said = unnamed.pop()
            else:
                continue
            r["exec_ok"] = answered(said)
            r["model_visible"] = (said if isinstance(said, str) else text_of(said) or "")[:300]

    def asked(self, trace_id: str, parts: list[Mapping[str, Any]], chat: dict,
              given: list[Mapping[str, Any]] | None = None) -> Iterator[dict]:
        """A row for each call a chat span asks for (the chat row's run, turn and day; ``given``: the span's input
        messages): held, or read at once when its trace began too long ago; as the calls past :data:`HELD` make
        room, the oldest held are read as asked."""
        out: list[dict] = []
        tr = self._trace(trace_id, out)
        yield from out
        spans = tr.spans if tr is not None else []
        ids: list[str | None] = []
        for p in parts:
            cid, name = _id(p.get("id")), text_of(p.get("name")) or ""
            ids.append(cid)
            match = next((i for i, (sid, sname) in enumerate(spans) if _same(cid, name, sid, sname)), None)
            if match is not None:  # its own span came first: read from there (held in its place for the answers' order)
                del spans[match]
            args = p.get("arguments")
            row = {**chat, "kind": "tool", "tool_name": name, "tool_call_id": cid,
                   "args_raw": args if args is None or isinstance(args, str) else text_of(args),
                   "parse_ok": None, "validate_ok": None, "exec_ok": None, "error_code": None,
                   "error_category": None, "error_stage": None, "retry_count": 0, "latency_ms": 0.0,
                   "prompt_tokens": 0, "completion_tokens": 0, "final_status": None, "model_visible": None,
                   "replayed": False, "note": None, "offered": None}
            if tr is None:  # a trace begun too long ago: read at once, remembered for a span of its own (bounded)
                self.old[(trace_id, cid, name)] = None
                if len(self.old) > HELD:
                    del self.old[next(iter(self.old))]
                yield row
                continue
            if self.held >= HELD:  # the trace with calls held longest (this one, when its own fill it): read as asked
                yield from self._oldest()
            tr.held.append([row, match is not None])
            self.held += 1
        if tr is not None:
            tr.spans = []  # spans of an earlier turn that no call asked for: not this turn's
            named = [i for i in ids if i is not None]
            tr.asked = (frozenset(named), len(given)) if ids and len(named) == len(ids) and given is not None else None

    def _oldest(self) -> list[dict]:
        for tr in self.traces.values():
            if tr.held:
                return self._out(tr)
        return []

    def ended(self, trace_id: str) -> None:
        """A trace's end: nothing more of it will come."""
        self.traces.pop(trace_id, None)

    def rest(self) -> Iterator[dict]:
        """The calls still held at the end of the file: read as asked."""
        for tr in self.traces.values():
            yield from (row for row, recorded in tr.held if not recorded)
        self.traces.clear()
        self.held = 0
