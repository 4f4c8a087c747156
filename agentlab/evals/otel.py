"""A run's trace as OpenTelemetry spans, and OTLP JSON read back as trace rows (docs/telemetry.md#opentelemetry).

Spans follow the GenAI semantic conventions, so Jaeger, Phoenix, Langfuse or any OTLP collector shows them
without a plugin: one trace per run, an ``invoke_agent`` span for the run (it carries the ``end`` event), and
under it a ``chat`` span per model turn and an ``execute_tool`` span per tool call. What the conventions have
no name for (the guard's verdict, both classifications of an error, resends, replays) is namespaced
``agentlab.*``. :func:`read_otlp` turns OTLP JSON (a collector's file exporter, an OTLP/HTTP JSON body) back into
the rows :meth:`agentlab.trace.Event.to_dict` writes, one per GenAI span; spans from other systems that follow
the conventions without agentlab's attributes read too.

``opentelemetry`` is imported only inside :func:`export_run` (the ``otel`` extra): importing agentlab stays light.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import CODES
from ..i18n import Lang, LocalizedError
from ..jsonutil import UNREAD, quick_loads
from ..runs import Run
from ..trace import Event, outcome
from ..version import __version__
from .span_calls import SpanCalls, asks, messages_of, text_of, unreadable
from .unread import Unread

__all__ = ["OtlpError", "export_run", "otlp_json", "read_otlp"]

_AGENT = "agentlab"
# a turn, a call, the run: the operation names of the conventions, and the trace's kinds they stand for
_KIND_OF = {"chat": "model", "text_completion": "model", "generate_content": "model",
            "execute_tool": "tool", "invoke_agent": "end"}
_OPERATION = {"model": "chat", "tool": "execute_tool", "end": "invoke_agent"}


class OtlpError(LocalizedError):
    """A line that is not OTLP JSON; ``line`` is its 1-based number (the message names the file and line). A
    ``LocalizedError``, so a command says it in the reader's language as one line, like any other bad input."""

    def __init__(self, where: str, line: int, why: str, lang: Lang = "en", *, key: str = "otel.bad_line", **more: object):
        super().__init__(key, where=where, line=line, what=why, **more)
        self.line, self.lang = line, lang

    def __str__(self) -> str:
        return self.localized(self.lang)


# --- out: a run as spans -----------------------------------------------------------
def export_run(run: Run, tracer_provider: Any = None, *, start_ns: int | None = None, content: bool = True) -> str:
    """Emit ``run`` as one trace; return its trace id (32 hex digits).

    ``tracer_provider``: an ``opentelemetry.sdk.trace.TracerProvider`` (None: the global one, which the
    application configures as usual). Events record how long they took, not when they started, so the spans
    are laid end to end from ``start_ns`` (default: the run ends now), each lasting its event's ``latency_ms``.
    ``content=False`` leaves out what was said and sent (arguments, results, answers): the conventions make
    content opt-in, because a trace travels further than a log.
    """
    from opentelemetry import trace as ot
    from opentelemetry.trace import SpanKind, Status, StatusCode

    tracer = (tracer_provider or ot.get_tracer_provider()).get_tracer(_AGENT, __version__)
    steps = [e for e in run.events if e.kind != "end"]
    end = next((e for e in run.events if e.kind == "end"), None)
    durations = [_ns(e.latency_ms) for e in steps]
    cursor = start_ns if start_ns is not None else time.time_ns() - sum(durations)
    root_event = end or Event(run.run_id, steps[0].session_id if steps else "", 0, run.steps, "end", loop=run.loop,
                              guard_config=run.config, final_status=run.status)
    root = tracer.start_span(f"invoke_agent {_AGENT}", kind=SpanKind.INTERNAL, start_time=cursor,
                             attributes=_attributes(root_event, run.model, len(run.events) - 1, content))
    context = ot.set_span_in_context(root)
    for seq, (e, took) in enumerate(zip(steps, durations, strict=True)):
        name = f"chat {run.model}" if e.kind == "model" else f"execute_tool {e.tool_name or ''}".rstrip()
        span = tracer.start_span(name, context=context, kind=SpanKind.CLIENT if e.kind == "model" else SpanKind.INTERNAL,
                                 start_time=cursor, attributes=_attributes(e, run.model, seq, content))
        if e.error_code:
            span.set_status(Status(StatusCode.ERROR, e.error_code))
        cursor += took
        span.end(end_time=cursor)
    if root_event.error_code:
        root.set_status(Status(StatusCode.ERROR, root_event.error_code))
    root.end(end_time=cursor + _ns(root_event.latency_ms))
    return format(root.get_span_context().trace_id, "032x")


def _ns(ms: float) -> int:
    return max(0, round(ms * 1_000_000))


def _attributes(e: Event, model: str, seq: int, content: bool) -> dict[str, Any]:
    """An event's fields as span attributes: the conventions' names where they have one, ``agentlab.*`` for the
    rest. OpenTelemetry attributes cannot be None: an unset field is left out, and read back as unset."""
    a: dict[str, Any] = {
        "gen_ai.operation.name": _OPERATION[e.kind], "gen_ai.conversation.id": e.session_id,
        "agentlab.run_id": e.run_id, "agentlab.turn_id": e.turn_id, "agentlab.round_index": e.round_index,
        "agentlab.seq": seq, "agentlab.loop": e.loop, "agentlab.guard_config": e.guard_config,
        "agentlab.retry_count": e.retry_count, "agentlab.latency_ms": e.latency_ms, "agentlab.replayed": e.replayed,
        # the verdict a viewer colours the step by: ok / invalid / error / blocked / text (agentlab.trace.outcome)
        "agentlab.guard": outcome(e),
    }
    if e.kind == "tool":
        a.update({"gen_ai.tool.name": e.tool_name or "", "gen_ai.tool.type": "function"})
        if e.tool_call_id is not None:
            a["gen_ai.tool.call.id"] = e.tool_call_id
        if content and e.args_raw is not None:
            a["gen_ai.tool.call.arguments"] = e.args_raw
        if content and e.model_visible is not None:
            a["gen_ai.tool.call.result"] = e.model_visible
    else:
        a["gen_ai.request.model"] = model
        if e.kind == "end":
            a["gen_ai.agent.name"] = _AGENT
        if content and e.model_visible is not None:
            a["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": e.model_visible}]}], ensure_ascii=False)
    if e.kind == "model":
        a["gen_ai.usage.input_tokens"] = e.prompt_tokens
        a["gen_ai.usage.output_tokens"] = e.completion_tokens
    for gate in ("parse_ok", "validate_ok", "exec_ok"):
        if getattr(e, gate) is not None:
            a[f"agentlab.{gate}"] = getattr(e, gate)
    if e.error_code:
        a["error.type"] = e.error_code  # low-cardinality, as the conventions ask: the code, never the message
        a["agentlab.error.code"] = e.error_code
    if e.error_category:
        a["agentlab.error.category"] = e.error_category
    if e.error_stage:
        a["agentlab.error.stage"] = e.error_stage
    if e.final_status:
        a["agentlab.final_status"] = e.final_status
    if e.offered is not None:
        a["agentlab.offered"] = e.offered  # the tools the turn was shown (routing read from traffic)
    if e.note is not None and (content or e.kind == "end"):
        a["agentlab.note"] = e.note
    return a


def otlp_json(spans: Iterable[Any]) -> dict:
    """Finished SDK spans (``ReadableSpan``, e.g. from ``InMemorySpanExporter.get_finished_spans()``) as one
    OTLP/JSON ``ExportTraceServiceRequest``: resourceSpans → scopeSpans → spans, ids in hex, 64-bit integers
    as strings, the shape an OTLP/HTTP JSON endpoint takes and a collector's file exporter writes per line."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str], list[dict]]]] = {}
    for s in spans:
        _res, scopes = by_resource.setdefault(id(s.resource), (s.resource, {}))
        scope = s.instrumentation_scope
        scopes.setdefault((scope.name if scope else "", (scope.version or "") if scope else ""), []).append(_span_json(s))
    return {"resourceSpans": [
        {"resource": {"attributes": _kv(res.attributes)},
         "scopeSpans": [{"scope": {"name": n, "version": v}, "spans": ss} for (n, v), ss in scopes.items()]}
        for res, scopes in by_resource.values()]}


def _span_json(s: Any) -> dict:
    ctx = s.get_span_context()
    out = {"traceId": format(ctx.trace_id, "032x"), "spanId": format(ctx.span_id, "016x"), "name": s.name,
           "kind": s.kind.value + 1,  # the SDK counts INTERNAL from 0; OTLP from 1 (0 is UNSPECIFIED)
           "startTimeUnixNano": str(s.start_time), "endTimeUnixNano": str(s.end_time),
           "attributes": _kv(s.attributes or {}), "status": {"code": s.status.status_code.value}}
    if s.parent is not None:
        out["parentSpanId"] = format(s.parent.span_id, "016x")
    if s.status.description:
        out["status"]["message"] = s.status.description
    return out


def _kv(attributes: Mapping[str, Any]) -> list[dict]:
    return [{"key": k, "value": _any_value(v)} for k, v in attributes.items()]


def _any_value(v: Any) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(x) for x in v]}}
    return {"stringValue": str(v)}


# --- in: OTLP JSON as trace rows -------------------------------------------------------
def read_otlp(path_or_lines: str | os.PathLike[str] | Mapping[str, Any] | Iterable[str], *,
              lang: Lang = "en", unread: Unread | None = None) -> Iterator[dict]:
    """Trace rows (the keys of :meth:`agentlab.trace.Event.to_dict`) from OTLP JSON, one per GenAI span.

    Takes a file path, an iterable of lines, or one parsed document. A file is either one JSON document
    (pretty-printed or not) or JSON Lines, one ``ExportTraceServiceRequest`` per line as a collector's file
    exporter writes it; lines are read one at a time, so a large file is read in bounded memory. Spans that
    are not GenAI operations (HTTP, database...) are skipped. A line that is not OTLP JSON raises
    :class:`OtlpError` naming the file and the line; given ``unread``
    (:class:`agentlab.evals.logs.Unread`), one after a line read well is counted there and read past.
    """
    if isinstance(path_or_lines, Mapping):
        carried = _Carried()
        yield from _rows(_spans(path_or_lines, "<document>", 1, lang), carried)
        carried.partly("<document>", 1, lang, Unread(strict=True))
        yield from carried.flush()
        yield from carried.calls.rest()
        return
    unread = unread if unread is not None else Unread(strict=True)
    if isinstance(path_or_lines, (str, os.PathLike)):
        path = Path(path_or_lines)
        with path.open("rb", buffering=1 << 16) as f:  # (as the log reader: the default 8 KB, a system call a line or two)
            yield from _read_lines(_text_lines(f, str(path), lang, unread), str(path), lang, unread)
        return
    yield from _read_lines(path_or_lines, "<lines>", lang, unread)


#: foreign traces whose turn count is carried from one line to the next: a file of a million traces is read in
#: bounded memory (as many as the open runs the log reader keeps, agentlab.evals.logs.OPEN_RUNS)
_TRACES = 10_000
MAX_DOCUMENT = 64 * 1024 * 1024  # bytes of one line, or of one pretty-printed document, held at once


def _text_lines(f: Any, where: str, lang: Lang, unread: Unread) -> Iterator[str]:
    """A file's lines as text, each at most MAX_DOCUMENT bytes; a line of bytes that are not UTF-8 is ``unread``'s to
    refuse or read past (given as an empty line, so that the lines after keep their numbers)."""
    for number, raw in enumerate(iter(lambda: f.readline(MAX_DOCUMENT + 1), b""), 1):
        if len(raw) > MAX_DOCUMENT:
            raise OtlpError(where, number, "otel.too_long", lang)
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a BOM, as Notepad saves: no part of the text
        except UnicodeDecodeError:
            unread.skip(OtlpError(where, number, "otel.not_json", lang))
            text = ""
        yield text


# one decoder for every line (json.loads given parse_constant builds one per call)
_DECODE = json.JSONDecoder(parse_constant=lambda name: None).decode


def _loads(text: str) -> Any:
    """JSON as OTLP is written: NaN and Infinity (not JSON) read as null, nesting past the parser's depth a ValueError."""
    try:  # (text opening with a byte-order mark goes through json.loads, which refuses it by name)
        value = quick_loads(text)
        return value if value is not UNREAD else (_DECODE if text[:1] != "\ufeff" else json.loads)(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _read_lines(lines: Iterable[str], where: str, lang: Lang, unread: Unread) -> Iterator[dict]:
    carried = _Carried()
    whole: list[str] | None = None  # a pretty-printed document: its lines, gathered until the end
    held = 0
    first = 0
    for number, line in enumerate(lines, 1):
        if whole is not None:
            whole.append(line)
            held += len(line)
            if held > MAX_DOCUMENT:  # not JSON Lines, and past what one document may hold
                raise OtlpError(where, first, "otel.too_long", lang)
            continue
        if not line or line.isspace():
            continue
        try:
            doc = _loads(line)
        except ValueError:
            if first:  # a bad line inside JSON Lines
                unread.skip(OtlpError(where, number, "otel.not_json", lang))
                continue
            whole, first, held = [line], number, len(line)
            continue
        first = first or number
        try:
            spans = _spans(doc, where, number, lang)
        except OtlpError as error:
            unread.skip(error)
            continue
        unread.started = True
        yield from _rows(spans, carried)
        carried.partly(where, number, lang, unread)
    if whole is not None:
        try:
            doc = _loads("".join(whole))
        except ValueError as exc:
            at = first + exc.lineno - 1 if isinstance(exc, json.JSONDecodeError) else first
            raise OtlpError(where, at, "otel.not_json", lang) from None
        spans = _spans(doc, where, first, lang)
        unread.started = True  # (the whole document read: a part of it that cannot be is said, the rest reviewed)
        yield from _rows(spans, carried)
        carried.partly(where, first, lang, unread)
    yield from carried.flush()
    yield from carried.calls.rest()


def _spans(doc: Any, where: str, line: int, lang: Lang) -> list[dict]:
    """The spans of one document, each with its attributes as a plain dict; the shape checked as it is read."""
    def bad(why: str) -> OtlpError:
        return OtlpError(where, line, why, lang)

    if isinstance(doc, dict) and "resourceSpans" not in doc:
        # another format's line (a chat exchange, a telemetry row) was read as no span at all: "0 conversations
        # reviewed" of a file full of them; the format it is, named where it can be told
        other = "telemetry" if {"run_id", "kind"} <= doc.keys() else "openai" if \
            {"messages", "request"} & doc.keys() else None
        raise bad(f"otel.is_{other}" if other else "otel.not_otlp")
    if not isinstance(doc, dict) or not isinstance(doc["resourceSpans"], list):
        raise bad("otel.not_otlp")
    out = []
    for rs in doc.get("resourceSpans", []):
        scopes = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", [])) if isinstance(rs, dict) else None
        if not isinstance(scopes, list):
            raise bad("otel.not_otlp")
        for ss in scopes:
            spans = ss.get("spans", []) if isinstance(ss, dict) else None
            if not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans):
                raise bad("otel.not_otlp")
            for s in spans:
                try:
                    out.append({"trace": _hex(s.get("traceId", "")), "start": int(s.get("startTimeUnixNano") or 0),
                                "end": int(s.get("endTimeUnixNano") or 0),
                                # as written, not normalised: a span's parent is written by the same exporter
                                "id": str(s.get("spanId") or ""), "parent": str(s.get("parentSpanId") or ""),
                                "status": s.get("status") or {}, "attrs": _attrs(s.get("attributes") or [])})
                except (TypeError, ValueError, AttributeError, OverflowError, RecursionError, KeyError):
                    raise bad("otel.not_otlp") from None  # Infinity as a time, an attribute with no key...
    return out


@lru_cache(maxsize=4096)
def _hex(value: str) -> str:
    """Ids are hex in OTLP JSON; protobuf's own JSON writes them in base64: both read the same. (Kept: every span
    of a trace carries its id, a few thousand traces are open at most in a file read as it comes.)"""
    try:
        int(value, 16)
        return value.lower()
    except ValueError:
        try:
            return base64.b64decode(value, validate=True).hex()
        except (binascii.Error, ValueError):
            return value


def _attrs(kvs: Sequence[dict]) -> dict[str, Any]:
    out = {}
    for kv in kvs:
        v = kv.get("value") or {}
        out[kv["key"]] = v["stringValue"] if "stringValue" in v else _value(v)  # (most are texts: no call)
    return out


def _value(v: Mapping[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return int(v["intValue"])  # a string in JSON: 64-bit integers do not fit a JSON number
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:  # a structured attribute (messages, as the conventions prefer them): a dict
        return {kv["key"]: _value(kv.get("value") or {}) for kv in v["kvlistValue"].get("values", [])}
    return None


class _Carried:
    """What reading one file carries from a line to the next: each foreign trace's turn count, and the calls its
    chat spans asked for that no span of their own has recorded yet (:class:`~agentlab.evals.span_calls.SpanCalls`)."""

    __slots__ = ("calls", "ends", "rounds", "unreadable")

    def __init__(self) -> None:
        self.rounds: dict[str, int] = {}
        self.calls = SpanCalls()
        self.unreadable: list[str] = []  # the attributes of this line's spans that held parts and could not be read
        # trace -> (the span id still to be seen above it, an agent's span): an invoke_agent span whose parent has not
        # been read yet, so whether it is the trace's own agent or a sub-agent is not known (see _agent_ends)
        self.ends: dict[str, tuple[str, dict]] = {}

    def flush(self) -> Iterator[dict]:
        """At the end of the file: every agent still waiting for what is above it ends its trace's run."""
        for trace_id, (_, s) in list(self.ends.items()):
            del self.ends[trace_id]
            yield from _ended(s, trace_id, self)

    def partly(self, where: str, line: int, lang: Lang, unread: Unread) -> None:
        """This line's spans were read, and parts of them could not be: said once for the line, naming them."""
        if self.unreadable:
            unread.partly(OtlpError(where, line, "otel.not_json", lang, key="otel.calls_unread",
                                    attribute=", ".join(dict.fromkeys(self.unreadable))))
            self.unreadable.clear()


def _rows(spans: list[dict], carried: _Carried) -> Iterator[dict]:
    """Rows in the order of the run: by trace as they first appear, then by ``agentlab.seq`` or start time,
    the run's own span last (its row is the ``end`` event). ``carried`` is what one line leaves the next."""
    if len(spans) == 1:  # a collector's file: one span a line, nothing to group or order
        s = spans[0]
        kind = _KIND_OF.get(str(s["attrs"].get("gen_ai.operation.name", "")))
        if kind is not None and kind != "end":
            if "agentlab.round_index" in s["attrs"]:  # agentlab's own span: every call has a span of its own
                yield _row(s, kind, s["trace"], carried.rounds)
            else:
                yield from _foreign(s, kind, s["trace"], carried)
        if kind == "end" or (carried.ends and s["trace"] in carried.ends):
            itself = {s["id"]: (s["parent"], kind is not None)} if s["id"] else {}
            yield from _agent_ends(s["trace"], [s] if kind == "end" else [], itself, carried)
        return
    traces: dict[str, list[tuple[str, dict]]] = {}
    above: dict[str, tuple[str, bool]] = {}  # every span of the batch, GenAI or not: id -> (its parent, GenAI?)
    for s in spans:
        kind = _KIND_OF.get(str(s["attrs"].get("gen_ai.operation.name", "")))
        if s["id"]:
            above[s["id"]] = (s["parent"], kind is not None)
        if kind is not None:
            traces.setdefault(s["trace"], []).append((kind, s))
        elif carried.ends and s["trace"] in carried.ends:
            traces.setdefault(s["trace"], [])  # what is above an agent read earlier
    for trace_id, group in traces.items():
        group.sort(key=lambda ks: (ks[0] == "end", _whole(ks[1]["attrs"].get("agentlab.seq", -1), -1), ks[1]["start"]))
        for kind, s in group:
            if kind == "end":
                continue
            if "agentlab.round_index" in s["attrs"]:
                yield _row(s, kind, trace_id, carried.rounds)
            else:
                yield from _foreign(s, kind, trace_id, carried)
        ends = [s for kind, s in group if kind == "end"]
        if ends or trace_id in carried.ends:
            yield from _agent_ends(trace_id, ends, above, carried)


#: traces whose agent waits for what is above it, at most (past it, the one waiting longest ends its run)
_HELD = 1_000


def _climb(parent: str, above: Mapping[str, tuple[str, bool]]) -> tuple[str, str]:
    """What is above a span whose parent is ``parent``: ``("sub", "")`` a GenAI span (a call or a turn that ran an
    agent of its own), ``("top", "")`` none up to the trace's root, ``("wait", id)`` a span not read yet."""
    for _ in range(256):  # (a cycle of parents, which no tracer writes, ends the climb)
        if not parent:
            return "top", ""
        got = above.get(parent)
        if got is None:
            return "wait", parent
        if got[1]:
            return "sub", ""
        parent = got[0]
    return "top", ""


def _agent_ends(trace_id: str, ends: list[dict], above: Mapping[str, tuple[str, bool]],
                carried: _Carried) -> Iterator[dict]:
    """The end of a trace's run, from its ``invoke_agent`` spans (``ends``, in order) and the one read earlier that
    waits for what is above it. A trace is one conversation: an agent run by another agent's call or turn (a
    sub-agent) ends no run, and of agents one after another (a hand-off) the last ends it. Whether a span has an
    agent above it is known once its parent is read, which a collector writes after it (a span is written when
    it ends): until then the agent waits, at most until the end of the file."""
    candidates: list[tuple[str, dict]] = []
    held = carried.ends.pop(trace_id, None)
    if held is not None:
        candidates.append(held)
    candidates += [(s["parent"], s) for s in ends]
    last: tuple[str, str, dict] | None = None
    for parent, s in candidates:
        verdict, waits = _climb(parent, above)
        if verdict != "sub":  # the latest agent not under another ends the run
            last = (verdict, waits, s)
    if last is None:
        return
    verdict, waits, s = last
    if verdict == "top":
        yield from _ended(s, trace_id, carried)
        return
    # kept without its input (the largest attribute, which the end's row does not read)
    carried.ends[trace_id] = (waits, s if "gen_ai.input.messages" not in s["attrs"] else
                              {**s, "attrs": {k: v for k, v in s["attrs"].items() if k != "gen_ai.input.messages"}})
    if len(carried.ends) > _HELD:
        oldest = next(iter(carried.ends))
        yield from _ended(carried.ends.pop(oldest)[1], oldest, carried)


def _ended(s: dict, trace_id: str, carried: _Carried) -> Iterator[dict]:
    """The rows of the agent's span that ends its trace's run."""
    if "agentlab.round_index" in s["attrs"]:
        yield _row(s, "end", trace_id, carried.rounds)
    else:
        yield from _foreign(s, "end", trace_id, carried)


def _foreign(s: dict, kind: str, trace_id: str, carried: _Carried) -> Iterator[dict]:
    """The rows of another system's span: its own, and before a turn or the end, the calls the turn before asked for
    that no span of their own recorded (:mod:`agentlab.evals.span_calls`)."""
    a, calls = s["attrs"], carried.calls
    out: list[dict] = []
    if kind == "tool":
        read = calls.tool_span(trace_id, a, out)
        yield from out
        if read:
            yield _row(s, kind, trace_id, carried.rounds)
        return
    if kind == "end":
        calls.before(trace_id, None, out)
        yield from out
        yield _row(s, kind, trace_id, carried.rounds)
        calls.ended(trace_id)
        return
    said, raw = a.get("gen_ai.output.messages"), a.get("gen_ai.input.messages")
    parts, given = asks(said), messages_of(raw)  # (each read once, for every use below)
    if not parts and unreadable(said, "tool_call"):
        carried.unreadable.append("gen_ai.output.messages")
    if calls.repeats(trace_id, parts, given):  # a second span of the same turn: its row, nothing asked or answered anew
        yield _row(s, kind, trace_id, carried.rounds)
        return
    # answers cut short: parts of them there, or calls waiting for this turn's input and an input that is not JSON
    # (answers come last in it: a length limit cuts them first)
    if unreadable(raw, "tool_call_response") or (calls.waits(trace_id) and unreadable(raw, "tool_call")):
        carried.unreadable.append("gen_ai.input.messages")
    calls.before(trace_id, given, out)
    yield from out
    row = _row(s, kind, trace_id, carried.rounds)
    yield row
    yield from calls.asked(trace_id, parts, row, given)


_GATE_ATTRIBUTES = {g: f"agentlab.{g}" for g in ("parse_ok", "validate_ok", "exec_ok")}


_Y2K_NS = 946_684_800 * 10**9  # a span that says it started before 2000 gives no day (a made-up "1" ns)


def _whole(value: Any, default: int = 0) -> int:
    """A count or an index as a span wrote it: an int, or a text or a number that reads as one ("12", "12.0", 12.0);
    anything else (a word, "12.5", NaN, a list) is not known: ``default``. Another system's exporter writes what it
    likes, and one attribute of the wrong type stopped the whole review with "unexpected ValueError"."""
    if type(value) is int:
        return value
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return int(number) if math.isfinite(number) and number == int(number) else default


def _real(value: Any) -> float | None:
    """A duration as a span wrote it, or None when it is not a finite number (a word, a list, NaN)."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and not isinstance(value, bool) else None


def _int(value: Any) -> int:
    return value if type(value) is int else _whole(value)  # (most are ints: no call past this one)


def _str(value: Any) -> str | None:
    return value if value is None or type(value) is str else text_of(value)


def _row(s: dict, kind: str, trace_id: str, rounds: dict[str, int]) -> dict:
    a = s["attrs"]
    if "agentlab.round_index" in a:
        v = a["agentlab.round_index"]
        round_index = v if type(v) is int else _whole(v)
    else:  # a foreign trace: its chat spans count the turns; a tool call belongs to the turn before it
        round_index = rounds.pop(trace_id, 0) + (kind == "model")
        rounds[trace_id] = round_index  # the latest last: past _TRACES, the trace heard from longest ago is forgotten
        if len(rounds) > _TRACES:
            del rounds[next(iter(rounds))]
    code, category, stage, note = _error(a, kind, s["status"])
    said = a.get("gen_ai.tool.call.result") if kind == "tool" else _said(a.get("gen_ai.output.messages"))
    if kind == "tool" and a.keys().isdisjoint(_GATE_ATTRIBUTES.values()):
        gates = _gates(stage, code)
    else:
        gates = {g: a.get(attribute) for g, attribute in _GATE_ATTRIBUTES.items()}
    latency = a.get("agentlab.latency_ms")
    if latency is not None and type(latency) is not float:  # (most spans: none, or a float; the rest read carefully)
        latency = _real(latency)
    # Event(...).to_dict() written out: every field, in the Event's order (a test holds the two keys equal), without
    # making the event (its __init__ sets 25 frozen fields one call at a time: a third of reading a span)
    return {
        "run_id": str(a.get("agentlab.run_id", trace_id)), "session_id": str(a.get("gen_ai.conversation.id", trace_id)),
        "turn_id": _int(a.get("agentlab.turn_id", 0)), "round_index": round_index, "kind": kind,
        "loop": str(a.get("agentlab.loop", "")), "guard_config": str(a.get("agentlab.guard_config", "")),
        "tool_name": _str(a.get("gen_ai.tool.name")) if kind == "tool" else None,
        "tool_call_id": _str(a.get("gen_ai.tool.call.id")) if kind == "tool" else None,
        "args_raw": _str(a.get("gen_ai.tool.call.arguments")) if kind == "tool" else None,
        "parse_ok": gates["parse_ok"], "validate_ok": gates["validate_ok"], "exec_ok": gates["exec_ok"],
        "error_code": code, "error_category": category, "error_stage": stage,
        "retry_count": _int(a.get("agentlab.retry_count", 0)),
        "latency_ms": latency if latency is not None else max(0, s["end"] - s["start"]) / 1_000_000,
        "prompt_tokens": _int(a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens", 0))),
        "completion_tokens": _int(a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens", 0))),
        "final_status": a.get("agentlab.final_status"), "model_visible": said,
        "replayed": bool(a.get("agentlab.replayed", False)), "note": a.get("agentlab.note", note),
        "offered": a.get("agentlab.offered"),
        # when the span started, for the day a run is counted on (epoch seconds: a system's own spans carry no
        # other date, and a team's rates per day all fell on "-")
        "timestamp": s["start"] / 1e9 if s["start"] > _Y2K_NS else None,
    }


def _said(messages: Any) -> str | None:
    """The text of ``gen_ai.output.messages`` (messages, each a list of parts); the attribute itself when it is not
    messages (a text of its own)."""
    if messages is None:
        return None
    parsed = messages_of(messages)
    if parsed is None:
        return messages if isinstance(messages, str) else None
    texts = [str(p.get("content", "")) for m in parsed for p in _listed(m.get("parts"))
             if isinstance(p, Mapping) and p.get("type") == "text"]
    return "".join(texts) if texts else None


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


# error.type as other systems write it (an exception's class, an HTTP status) → the code that means the same
_ERROR_TYPES = {
    "timeout": "TIMEOUT", "timeouterror": "TIMEOUT", "apitimeouterror": "TIMEOUT", "readtimeout": "TIMEOUT",
    "408": "TIMEOUT", "504": "TIMEOUT",
    "ratelimiterror": "RATE_LIMITED", "429": "RATE_LIMITED",
    "apiconnectionerror": "UNAVAILABLE", "connectionerror": "UNAVAILABLE", "serviceunavailableerror": "UNAVAILABLE",
    "502": "UNAVAILABLE", "503": "UNAVAILABLE",
    "jsondecodeerror": "BAD_JSON", "validationerror": "INVALID_ARGS",
    "authenticationerror": "UNAUTHENTICATED", "401": "UNAUTHENTICATED",
    "permissiondeniederror": "PERMISSION_DENIED", "403": "PERMISSION_DENIED",
    "notfounderror": "NOT_FOUND", "404": "NOT_FOUND", "badrequesterror": "BAD_REQUEST", "400": "BAD_REQUEST",
    "conflicterror": "CONFLICT", "409": "CONFLICT", "contextwindowexceedederror": "CONTEXT_TOO_LONG",
}


def _error(a: Mapping[str, Any], kind: str, status: Mapping[str, Any]) -> tuple[str | None, str | None, str | None, str | None]:
    """(code, category, stage, note). agentlab's own attributes win; else ``error.type`` is mapped to a code where
    one means the same, and any other failure (an unknown type, or only an error status) is the generic failure
    of its kind, with what the span said kept in the note."""
    if "agentlab.error.code" in a:  # (texts as written; a value of another type, as its text)
        return _str(a["agentlab.error.code"]), _str(a.get("agentlab.error.category")), _str(a.get("agentlab.error.stage")), None
    raw = a.get("error.type")
    failed = raw is not None or status.get("code") in (2, "STATUS_CODE_ERROR")
    if not failed or (kind == "end" and raw is None):
        return None, None, None, None
    text = str(raw or "")
    code = text if text in CODES else _ERROR_TYPES.get(text.rsplit(".", 1)[-1].lower())
    note = None
    if code is None:
        code = "TOOL_ERROR" if kind == "tool" else "MODEL_ERROR"
        note = f"error.type: {text}" if text else status.get("message") or None
    category, stage = CODES[code]
    return code, category, stage, note


def _gates(stage: str | None, code: str | None) -> dict[str, bool | None]:
    """How far a foreign tool call got, from where its error belongs: a call that failed nowhere ran."""
    if code is None:
        return {"parse_ok": True, "validate_ok": True, "exec_ok": True}
    if code == "BAD_JSON":
        return {"parse_ok": False, "validate_ok": None, "exec_ok": None}
    if stage in ("structure", "semantic"):
        return {"parse_ok": True, "validate_ok": False, "exec_ok": None}
    if stage == "rule_blocked":
        return {"parse_ok": True, "validate_ok": True, "exec_ok": None}
    return {"parse_ok": True, "validate_ok": True, "exec_ok": False}
