"""The tool calls a chat span holds, for the traces whose calls have no ``execute_tool`` span of their own.

An instrumentation that records the model's turns and not the tools writes each call the model asked for as a
``tool_call`` part of the chat span's ``gen_ai.output.messages`` (the OpenTelemetry GenAI conventions), and each
answer as a ``tool_call_response`` part of the next turn's ``gen_ai.input.messages``. :class:`SpanCalls` turns
those parts into the rows an ``execute_tool`` span would have given, for :func:`agentlab.evals.otel.read_otlp`:

- a call is held until its trace's next turn (whose input answers it) or its end, then read in the turn that asked
  for it; whether it ran is what its answer says (:func:`agentlab.evals.exchanges.answered`), not known without one;
- a call that also has a span of its own is read once: from the span when the span comes first or before the next
  turn, from the chat span when the span comes only after that (its row is then not read a second time);
- a call asked again by a second chat span of the same turn (two instrumentations of one call) is read once;
- what is held is bounded: the calls of the last :data:`WINDOW` traces begun, at most :data:`HELD` calls in all,
  each trace's last :data:`IDS` call ids. Past a bound, the oldest are read as asked, never dropped: held longer,
  a trace that never ends (a chat-only log has no ``invoke_agent`` span) would have its run closed by the log
  reader (:data:`agentlab.evals.logs.OPEN_RUNS`) before its calls came, and read as two runs.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .exchanges import answered

__all__ = ["HELD", "IDS", "WINDOW", "SpanCalls", "messages_of", "text_of"]

#: traces whose held calls and call ids are kept, by when they began (well below the log reader's open runs)
WINDOW = 2_048
#: calls held at once, every trace together
HELD = 4_096
#: call ids each trace remembers (a call asked again, a span of its own that comes late)
IDS = 64

# json.dumps(..., ensure_ascii=False), made once: arguments or an answer written as an object
_TEXT = json.JSONEncoder(ensure_ascii=False, default=str).encode


def text_of(value: Any) -> str | None:
    """A name or an id as a span wrote it: text, or the text of a number or a flag; None when absent."""
    if value is None or type(value) is str:
        return value
    try:
        return _TEXT(value)
    except (ValueError, RecursionError):
        return None


def messages_of(value: Any) -> list[Mapping[str, Any]] | None:
    """The messages of ``gen_ai.input.messages`` or ``gen_ai.output.messages``: a JSON text (the usual way), the
    structured value the conventions prefer (read by the span reader as a list of dicts), or either wrapped in an
    object under ``messages``. None when it is not messages at all (or not JSON: cut short by a length limit)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    return [m for m in value if isinstance(m, Mapping)] if isinstance(value, list) else None


def _parts(message: Mapping[str, Any], kind: str) -> Iterator[Mapping[str, Any]]:
    parts = message.get("parts")
    for p in parts if isinstance(parts, list) else ():
        if isinstance(p, Mapping) and p.get("type") == kind:
            yield p


class _Trace:
    __slots__ = ("held", "ids")

    def __init__(self) -> None:
        self.held: list[dict] = []  # the calls its last turn asked for, not yet read
        self.ids: dict[str, bool] = {}  # a call id read already -> whether from a span of its own


class SpanCalls:
    """The calls read from chat spans while one file is read (see the module's description)."""

    def __init__(self) -> None:
        self.traces: dict[str, _Trace] = {}  # by when they began: the last WINDOW
        self.held = 0  # calls held, every trace together
        self.unreadable = 0  # chat spans whose calls could not be read (messages cut short, not JSON)

    def _trace(self, trace_id: str, out: list[dict]) -> _Trace:
        tr = self.traces.get(trace_id)
        if tr is None:
            tr = self.traces[trace_id] = _Trace()
            if len(self.traces) > WINDOW:  # the trace begun longest ago: its calls read as asked, its ids forgotten
                out += self._out(self.traces.pop(next(iter(self.traces))))
        return tr

    def _out(self, tr: _Trace) -> list[dict]:
        rows, tr.held = tr.held, []
        self.held -= len(rows)
        return rows

    @staticmethod
    def _remember(tr: _Trace, cid: str, own: bool) -> None:
        tr.ids[cid] = own
        if len(tr.ids) > IDS:
            del tr.ids[next(iter(tr.ids))]

    def tool_span(self, trace_id: str, attrs: Mapping[str, Any], out: list[dict]) -> bool:
        """An ``execute_tool`` span: the held copy of its call dropped. False when its call was read from a chat span
        already (the span came after the next turn): its row is not to be read again."""
        tr = self._trace(trace_id, out)
        cid, name = text_of(attrs.get("gen_ai.tool.call.id")), attrs.get("gen_ai.tool.name")
        if cid is not None and tr.ids.get(cid) is False and not any(r["tool_call_id"] == cid for r in tr.held):
            return False
        for i, r in enumerate(tr.held):
            if (r["tool_call_id"] == cid) if cid is not None and r["tool_call_id"] is not None else r["tool_name"] == name:
                del tr.held[i]
                self.held -= 1
                break
        if cid is not None:
            self._remember(tr, cid, True)
        return True

    def before(self, trace_id: str, attrs: Mapping[str, Any] | None, out: list[dict]) -> None:
        """Before a trace's next turn (``attrs``: its span's) or its end (None): the calls held for it, each answered
        by what the turn's input says of it, go to ``out``."""
        tr = self._trace(trace_id, out)
        if not tr.held:
            return
        rows = self._out(tr)
        if attrs is not None:
            self._answer(rows, messages_of(attrs.get("gen_ai.input.messages")) or [])
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
                cid = text_of(p.get("id"))
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

    def asked(self, trace_id: str, messages: Any, chat: dict, out: list[dict]) -> None:
        """A chat span's output: a row for each call it asks for (the chat row's run, turn and day), held; the calls
        past :data:`HELD`, or of a trace past the window, go to ``out`` as asked."""
        if messages is None:
            return
        parsed = messages_of(messages)
        if parsed is None:
            if isinstance(messages, str) and "tool_call" in messages:
                self.unreadable += 1  # calls were there, and cannot be read: said, never silently none
            return
        first = next((m for m in parsed if any(True for _ in _parts(m, "tool_call"))), None)
        if first is None:  # (one message per candidate: the first that asks is the one an agent goes on with)
            return
        tr = self._trace(trace_id, out)
        for p in _parts(first, "tool_call"):
            cid = text_of(p.get("id"))
            if cid is not None and cid in tr.ids:  # read already: from a span of its own, or asked by another span
                continue
            args = p.get("arguments")
            row = {**chat, "kind": "tool", "tool_name": text_of(p.get("name")) or "", "tool_call_id": cid,
                   "args_raw": args if args is None or isinstance(args, str) else text_of(args),
                   "parse_ok": None, "validate_ok": None, "exec_ok": None, "error_code": None,
                   "error_category": None, "error_stage": None, "retry_count": 0, "latency_ms": 0.0,
                   "prompt_tokens": 0, "completion_tokens": 0, "final_status": None, "model_visible": None,
                   "replayed": False, "note": None, "offered": None}
            if cid is not None:
                self._remember(tr, cid, False)
            if self.held >= HELD:  # the trace with calls held longest (this one, when its own fill it): read as asked
                self._oldest(out)
            tr.held.append(row)
            self.held += 1

    def _oldest(self, out: list[dict]) -> None:
        for tr in self.traces.values():
            if tr.held:
                out += self._out(tr)
                return

    def ended(self, trace_id: str) -> None:
        """A trace's end: nothing more of it will come."""
        self.traces.pop(trace_id, None)

    def rest(self) -> Iterator[dict]:
        """The calls still held at the end of the file: read as asked."""
        for tr in self.traces.values():
            yield from tr.held
        self.traces.clear()
        self.held = 0
