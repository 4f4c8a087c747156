"""agentlab.evals.otel: runs out as OpenTelemetry spans (GenAI conventions), OTLP JSON back in as trace rows."""
import itertools
import json

import pytest

pytest.importorskip("opentelemetry.sdk")  # the `otel` extra (requirements-dev.txt installs it)

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentlab.evals.otel import OtlpError, export_run, otlp_json, read_otlp
from agentlab.workbook.demo import compare_loops


def _spans(*runs, **kw):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ids = [export_run(r, provider, start_ns=1_700_000_000_000_000_000 + i * 10**9, **kw) for i, r in enumerate(runs)]
    return exporter.get_finished_spans(), ids


@pytest.fixture(scope="module")
def corrected():
    return compare_loops("camel_case").guarded  # an invalid call, corrected: done_after_self_correction


def test_one_trace_per_run_a_span_per_turn_and_call_under_invoke_agent(corrected):
    spans, (trace_id,) = _spans(corrected)
    assert len(spans) == len(corrected.events)
    assert {format(s.context.trace_id, "032x") for s in spans} == {trace_id}
    (root,) = [s for s in spans if s.parent is None]
    assert root.name == "invoke_agent agentlab" and root.attributes["gen_ai.operation.name"] == "invoke_agent"
    children = [s for s in spans if s is not root]
    assert all(s.parent.span_id == root.context.span_id for s in children)
    chats = [s for s in children if s.attributes["gen_ai.operation.name"] == "chat"]
    tools = [s for s in children if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert len(chats) == corrected.steps and len(tools) == corrected.tool_calls
    assert chats[0].name == f"chat {corrected.model}" and chats[0].attributes["gen_ai.request.model"] == corrected.model
    assert "gen_ai.usage.input_tokens" in chats[0].attributes and "gen_ai.usage.output_tokens" in chats[0].attributes
    assert [s.name for s in tools] == [f"execute_tool {e.tool_name}" for e in corrected.tool_events]


def test_the_guards_verdict_and_both_classifications_are_attributes(corrected):
    spans, _ = _spans(corrected)
    bad = next(s for s in spans if s.attributes.get("error.type"))
    a = bad.attributes
    assert a["gen_ai.tool.name"] == "create_refund" and a["gen_ai.tool.call.id"] == "call_2"
    assert (a["error.type"], a["agentlab.error.code"], a["agentlab.error.category"], a["agentlab.error.stage"]) == \
        ("INVALID_ARGS", "INVALID_ARGS", "validation", "structure")
    assert a["agentlab.guard"] == "invalid" and a["agentlab.validate_ok"] is False and "agentlab.exec_ok" not in a
    assert bad.status.status_code is StatusCode.ERROR
    assert all(s.attributes["agentlab.final_status"] == "done_after_self_correction" for s in spans)
    assert {"agentlab.retry_count", "agentlab.replayed"} <= set(a)


def test_spans_keep_the_events_durations_laid_end_to_end(corrected):
    spans, _ = _spans(corrected)
    children = sorted((s for s in spans if s.parent is not None), key=lambda s: s.attributes["agentlab.seq"])
    assert children[0].start_time == 1_700_000_000_000_000_000
    for a, b in itertools.pairwise(children):
        assert a.end_time == b.start_time
    for s, e in zip(children, [e for e in corrected.events if e.kind != "end"], strict=True):
        assert s.end_time - s.start_time == round(e.latency_ms * 1e6)


def test_content_is_opt_out(corrected):
    spans, _ = _spans(corrected, content=False)
    keys = {k for s in spans for k in s.attributes}
    assert not keys & {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.output.messages"}


def _comparable(row):
    """A row as an event writes it: a span's start time (``timestamp``, what a day is counted by) left out."""
    return {k: (round(v, 6) if k == "latency_ms" else v) for k, v in row.items() if k != "timestamp"}


def test_round_trip_run_to_spans_to_otlp_json_to_rows():
    runs = [compare_loops(f).guarded for f in ("camel_case", "api_500", "flaky_tool", "duplicate_call")]
    spans, _ = _spans(*runs)
    doc = otlp_json(spans)
    assert doc["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"] == "agentlab"
    want = [_comparable(e.to_dict()) for r in runs for e in r.events]
    assert [_comparable(r) for r in read_otlp(doc)] == want
    # as a collector's file exporter writes it: one request per line; and pretty-printed, as one document
    assert [_comparable(r) for r in read_otlp([json.dumps(doc) + "\n"])] == want
    assert [_comparable(r) for r in read_otlp(json.dumps(doc, indent=2).splitlines(True))] == want


def test_a_file_of_json_lines_reads_in_order(tmp_path, corrected):
    spans, _ = _spans(corrected)
    path = tmp_path / "traces.jsonl"
    half = len(spans) // 2  # the exporter writes a batch per line; a run may straddle two
    path.write_text(json.dumps(otlp_json(spans[:half])) + "\n\n" + json.dumps(otlp_json(spans[half:])) + "\n")
    assert [r["kind"] for r in read_otlp(path)] == [e.kind for e in corrected.events]
    # saved with a BOM (as Windows Notepad saves UTF-8): read the same, not "not OTLP JSON"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [r["kind"] for r in read_otlp(path)] == [e.kind for e in corrected.events]


FOREIGN = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
  "scopeSpans": [{"scope": {"name": "openai-agents"}, "spans": [
    {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "POST /refund",
     "startTimeUnixNano": "1000", "endTimeUnixNano": "2000", "attributes": [{"key": "http.method", "value": {"stringValue": "POST"}}]},
    {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175", "name": "chat gpt-4o",
     "startTimeUnixNano": "1000000", "endTimeUnixNano": "3000000", "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "120"}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "17"}}]},
    {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b176", "name": "execute_tool create_refund",
     "startTimeUnixNano": "3000000", "endTimeUnixNano": "3500000", "status": {"code": 2, "message": "boom"}, "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "create_refund"}},
        {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_9"}},
        {"key": "error.type", "value": {"stringValue": "openai.RateLimitError"}}]},
    {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b177", "name": "execute_tool lookup",
     "startTimeUnixNano": "3600000", "endTimeUnixNano": "3700000", "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
        {"key": "error.type", "value": {"stringValue": "KeyError"}}]},
    {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b178", "name": "chat gpt-4o",
     "startTimeUnixNano": "4000000", "endTimeUnixNano": "5000000", "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}]}]}]}


def test_spans_of_other_systems_read_by_the_conventions_alone():
    rows = list(read_otlp(FOREIGN))
    assert [(r["kind"], r["round_index"]) for r in rows] == [("model", 1), ("tool", 1), ("tool", 1), ("model", 2)]
    chat, refund, lookup, _ = rows
    assert (chat["prompt_tokens"], chat["completion_tokens"], chat["latency_ms"]) == (120, 17, 2.0)
    assert chat["run_id"] == "5b8efff798038103d269b633813fc60c"
    assert (refund["tool_name"], refund["tool_call_id"]) == ("create_refund", "call_9")
    assert (refund["error_code"], refund["error_category"], refund["error_stage"]) == ("RATE_LIMITED", "transient", "execution")
    assert (refund["exec_ok"], refund["validate_ok"]) == (False, True)
    assert lookup["error_code"] == "TOOL_ERROR" and lookup["note"] == "error.type: KeyError"  # no code means the same
    assert set(rows[0]) == {*compare_loops("camel_case").guarded.events[0].to_dict(), "timestamp"}


def _chat(trace: str, start: int, *, calls=(), answers=(), text=None) -> dict:
    """A chat span as an instrumentation that records the model's turns writes it: the calls the turn asked for as
    ``tool_call`` parts of its output, the answers to the last turn's as ``tool_call_response`` parts of its input."""
    out = [{"type": "tool_call", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    out += [{"type": "text", "content": text}] if text else []
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": out}])}
    if answers:
        attrs["gen_ai.input.messages"] = json.dumps(
            [{"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "response": said}]} for cid, said in answers])
    return {"traceId": trace, "spanId": f"{start:016x}", "name": "chat", "startTimeUnixNano": str(1764547200 * 10**9 + start),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def _tool_span(trace: str, start: int, cid: str, name: str) -> dict:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": cid,
             "gen_ai.tool.call.arguments": '{"order_id": "A1"}'}
    return {"traceId": trace, "spanId": f"{start:016x}", "name": f"execute_tool {name}",
            "startTimeUnixNano": str(1764547200 * 10**9 + start),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def _doc(*spans) -> dict:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


REFUND = {"order_id": "A1", "amount": 10}
CHAT_ONLY = [_chat("ab" * 16, 1, calls=[("c1", "lookup_order", {"order_id": "A1"})]),
             _chat("ab" * 16, 2, calls=[("c2", "create_refund", REFUND), ("c3", "create_refund", REFUND),
                                        ("c4", "send_coupon", {"order_id": "A1"})], answers=[("c1", {"status": "paid"})]),
             _chat("ab" * 16, 3, answers=[("c2", '{"refund_id": "R1"}'), ("c3", {"refund_id": "R2"}),
                                          ("c4", {"error": "declined"})], text="Done.")]


@pytest.mark.parametrize("shape", ["document", "a span a line", "a batch a line"])
def test_calls_recorded_only_in_chat_spans_are_read_from_them_and_answered_by_the_next_turn(tmp_path, shape):
    """An instrumentation that records the model's turns and not the tools (chat spans only, the calls as tool_call
    parts) was read as a conversation with no call: its double refund went unseen. Each call is now read from the
    turn that asked for it, and whether it ran from the answer the next turn was given."""
    path = tmp_path / "chat.jsonl"
    lines = {"document": [_doc(*CHAT_ONLY)], "a span a line": [_doc(s) for s in CHAT_ONLY],
             "a batch a line": [_doc(*CHAT_ONLY[:2]), _doc(CHAT_ONLY[2])]}[shape]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rows = list(read_otlp(path))
    assert [(r["kind"], r["round_index"], r["tool_name"]) for r in rows] == [
        ("model", 1, None), ("tool", 1, "lookup_order"), ("model", 2, None), ("tool", 2, "create_refund"),
        ("tool", 2, "create_refund"), ("tool", 2, "send_coupon"), ("model", 3, None)]
    lookup, refund, declined = rows[1], rows[3], rows[5]
    assert (lookup["tool_call_id"], json.loads(lookup["args_raw"]), lookup["exec_ok"]) == ("c1", {"order_id": "A1"}, True)
    assert json.loads(lookup["model_visible"]) == {"status": "paid"}
    assert (refund["exec_ok"], refund["model_visible"]) == (True, '{"refund_id": "R1"}')
    assert declined["exec_ok"] is False  # answered with an error: asked for, and it did not run
    assert {r["run_id"] for r in rows} == {"ab" * 16} and lookup["timestamp"] == rows[0]["timestamp"]
    assert set(lookup) == set(rows[0])  # a whole row, as every span's
    from agentlab.evals.log_review import review_logs
    report = review_logs(path, "otel")
    assert report["totals"]["tool_calls"] == 4  # was 0: "no tool call anywhere"
    assert [(f["kind"], f["tool"]) for f in report["findings"]] == [("duplicate_write", "create_refund")]


def test_a_call_with_a_span_of_its_own_is_read_once_and_one_never_answered_is_not_known_to_have_run():
    trace = "cd" * 16
    rows = list(read_otlp(_doc(
        _chat(trace, 1, calls=[("c1", "lookup_order", {"order_id": "A1"}), ("c2", "notify", {})]),
        _tool_span(trace, 2, "c1", "lookup_order"),  # the lookup has its own span; the notify has none
        _chat(trace, 3, calls=[("c3", "create_refund", REFUND)]))))
    assert [(r["kind"], r["tool_call_id"]) for r in rows] == [
        ("model", None), ("tool", "c1"), ("tool", "c2"), ("model", None), ("tool", "c3")]
    assert rows[1]["exec_ok"] is True and rows[2]["exec_ok"] is None  # the span says it ran; no one said of c2
    assert rows[4]["exec_ok"] is None  # asked for at the end of the file: read as asked
    # agentlab's own spans: every call has a span, none read twice
    own = compare_loops("camel_case").guarded
    spans, _ = _spans(own)
    assert [r["kind"] for r in read_otlp(otlp_json(spans))] == [e.kind for e in own.events]


def _span(trace: str, start: int, attrs: dict) -> dict:
    """A span of another system: each attribute a text, a whole number, or an OTLP value as written."""
    kv = [{"key": k, "value": v if isinstance(v, dict) else {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
          for k, v in attrs.items()]
    return {"traceId": trace, "spanId": f"{start:016x}", "name": "span", "startTimeUnixNano": str(10**18 + start),
            "attributes": kv}


def _read(tmp_path, *lines) -> list[dict]:
    """The rows of a file of these documents, one a line (a collector's file)."""
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return list(read_otlp(path))


def _calls(rows) -> list[tuple]:
    return [(r["tool_name"], r["tool_call_id"], r["round_index"], r["exec_ok"]) for r in rows if r["kind"] == "tool"]


def test_a_call_and_its_own_span_are_read_once_whatever_comes_first(tmp_path):
    """The chat span's copy of a call was dropped only when the call's own span came between that turn and the next:
    a span written first (a streamed turn ends after its tool ran), an id written as a number, a call with no id, or
    a second instrumentation's chat span of the same turn read the call twice, and a refund twice was a duplicate
    write that never happened, as did a span written only after the next turn (another process)."""
    t = "ab" * 16
    asked = _chat(t, 2, calls=[("c1", "create_refund", REFUND)])
    asked["attributes"].append({"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "Refund A1, please."}]}])}})
    answered = _chat(t, 3, answers=[("c1", '{"refund_id": "R1"}')], text="Done.")
    own = _tool_span(t, 1, "c1", "create_refund")
    for order in ([own, asked, answered], [asked, own, answered], [asked, asked, own, answered], [asked, asked, answered],
                  [own, asked, asked, answered], [asked, answered, own]):
        calls = _calls(_read(tmp_path, *map(_doc, order)))
        assert len(calls) == 1, order
        if own not in order:  # the second instrumentation's span did not take the answer from its own turn
            assert calls[0][3] is True, calls
    # an id a model uses again in a later turn is a call of its own (and an empty id is no id)
    again = [_chat(t, 1, calls=[("call_0", "create_refund", REFUND)]),
             _chat(t, 2, answers=[("call_0", "ok")], calls=[("call_0", "create_refund", REFUND)]),
             _chat(t, 3, answers=[("call_0", "ok")], text="Done.")]
    assert [c[2:] for c in _calls(_read(tmp_path, *map(_doc, again)))] == [(1, True), (2, True)]
    empty = [_chat(t, 1, calls=[("", "lookup_order", {"order_id": k}) for k in ("A1", "A2")]),
             _chat(t, 2, calls=[("", "lookup_order", {"order_id": "A3"})])]
    assert len(_calls(_read(tmp_path, *map(_doc, empty)))) == 3
    by_number = _span(t, 2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_refund",
                             "gen_ai.tool.call.id": {"intValue": "5"}})
    five = _chat(t, 1, calls=[("5", "create_refund", REFUND)])
    assert _calls(_read(tmp_path, _doc(five), _doc(by_number), _doc(answered))) == [("create_refund", "5", 1, True)]
    no_id = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": "create_refund", "arguments": REFUND}]}])})
    span = _tool_span(t, 2, "call_x", "create_refund")
    for order in ([no_id, span, answered], [span, no_id, answered]):  # a span a line: as it comes
        assert len(_calls(_read(tmp_path, *map(_doc, order)))) == 1, order
    # calls with no id, one of which has its own span: each answer (given in order) still goes to its own call
    both = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": name, "arguments": {}} for name in ("lookup_order", "create_refund")]}])})
    lookup = _span(t, 2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"})
    replies = _span(t, 3, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [
        {"type": "tool_call_response", "response": said}]} for said in ("paid", {"error": "declined"})])})
    rows = [r for r in _read(tmp_path, _doc(both), _doc(lookup), _doc(replies)) if r["kind"] == "tool"]
    assert [(r["tool_name"], r["exec_ok"]) for r in rows] == [("lookup_order", True), ("create_refund", False)]
    # two candidates (n=2): the calls of the first that asks, never both
    two = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": f"c{k}", "name": "create_refund", "arguments": REFUND}]}
         for k in (1, 2)])})
    assert [c[1] for c in _calls(_read(tmp_path, _doc(two), _doc(answered)))] == ["c1"]


def test_each_answer_goes_to_its_own_call(tmp_path):
    """Calls with no id each took the last answer, and an id a model reuses every turn (call_0) took the answer of a
    turn before, carried in the input's history: a call nobody answered read as having run."""
    t = "cd" * 16
    asks = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": "lookup_order", "arguments": {"order_id": k}} for k in ("A1", "A2")]}])})
    answers = _span(t, 2, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [
        {"type": "tool_call_response", "response": said}]} for said in ("fine", {"error": "boom"})])})
    assert [c[3] for c in _calls(_read(tmp_path, _doc(asks), _doc(answers)))] == [True, False]
    call_0 = {"type": "tool_call", "id": "call_0", "name": "lookup_order", "arguments": {"order_id": "A1"}}
    history = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}, {"role": "assistant", "parts": [call_0]},
               {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_0", "response": "first ok"}]},
               {"role": "assistant", "parts": [call_0]}]  # asked again, and no answer yet
    turns = [_span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call_0]}])}),
             _span(t, 2, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(history[:3]),
                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{**call_0, "id": "call_1"}]}])}),
             _span(t, 3, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(
                 [*history[:3], {"role": "assistant", "parts": [{**call_0, "id": "call_1"}]}])})]
    assert [(c[1], c[3]) for c in _calls(_read(tmp_path, *map(_doc, turns)))] == [("call_0", True), ("call_1", None)]


def test_held_calls_are_bounded_and_a_run_is_never_split(tmp_path, monkeypatch):
    """Calls of a trace with no next turn and no end (a chat-only log: one trace per model call) were held until the
    end of the file: the log reader closed the run first and read its calls as a second run with the same id (10,003
    runs of 10,002 traces), and one span of 100,000 calls held about 111 MB."""
    from agentlab.evals import logs, span_calls
    assert span_calls.WINDOW + span_calls._EVERY < logs.OPEN_RUNS <= span_calls._BEGUN  # the bounds it holds to
    monkeypatch.setattr(span_calls, "WINDOW", 3)
    monkeypatch.setattr(span_calls, "_EVERY", 1)
    monkeypatch.setattr(logs, "OPEN_RUNS", 5)  # (the reader closes runs long after the window: 10,000 against 2,048)
    assert span_calls.WINDOW < logs.OPEN_RUNS and span_calls.WINDOW == 3
    lines = [_doc(_chat("e" * 32, 1, calls=[("c1", "create_refund", REFUND)]))]
    lines += [_doc(_chat(f"{k:032x}", 1, text="hello")) for k in range(8)]
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    runs = [(r.rows[0]["run_id"], [row["kind"] for row in r.rows]) for r in logs.read_logs(path, "otel")]
    assert len(runs) == 9 and ("e" * 32, ["model", "tool"]) in runs, runs
    monkeypatch.setattr(span_calls, "HELD", 8)  # two traces' calls past the bound: the older read as asked
    ask = [_doc(_chat(t * 32, 1, calls=[(f"{t}{k}", "lookup_order", {"order_id": f"A{k}"}) for k in range(5)])) for t in "ab"]
    answer = [_doc(_chat(t * 32, 2, answers=[(f"{t}{k}", "ok") for k in range(5)])) for t in "ab"]
    calls = _calls(_read(tmp_path, *ask, *answer))
    assert [c[3] for c in calls] == [None] * 5 + [True] * 5 and len({c[1] for c in calls}) == 10
    big = span_calls.SpanCalls()
    parts = [{"type": "tool_call", "id": f"c{k}", "name": "f", "arguments": {}} for k in range(50)]
    given = 0
    for _ in big.asked("f" * 32, parts, {"run_id": "r"}):  # given out as they are made room for, never all held
        given += 1
        assert big.held <= 8
    assert big.held <= 8 and big.held + given == 50  # none lost
    # a trace begun before the window (it said hello, then many others began) holds nothing: its run is not split
    lines = [_doc(_chat("a" * 32, 1, text="hello")), *[_doc(_chat(f"{k:032x}", 1, text="hi")) for k in range(4)],
             _doc(_chat("a" * 32, 2, calls=[("c1", "create_refund", REFUND)])),
             *[_doc(_chat(f"{k:032x}", 1, text="hi")) for k in range(4, 9)]]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    runs = [(r.rows[0]["run_id"], [row["kind"] for row in r.rows]) for r in logs.read_logs(path, "otel")]
    assert ("a" * 32, ["model", "model", "tool"]) in runs and len(runs) == 10, runs


def _history(*turns) -> str:
    """An input as a turn is given it: the user's ask, then each earlier turn's assistant message and tool answers."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": "Refund A1, please."}]}]
    for cid, said in turns:
        messages += [{"role": "assistant", "parts": [{"type": "tool_call", "id": cid, "name": "create_refund", "arguments": REFUND}]},
                     {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"{cid}-answer", "response": said}]}]
    return json.dumps(messages)


def _turn(t, start, given, calls=(), text=None) -> dict:
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": REFUND} for cid, name in calls]
    parts += [{"type": "text", "content": text}] if text else []
    return _span(t, start, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": given,
                            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])})


def test_a_call_is_read_once_when_a_turn_comes_between_it_and_its_span_or_its_trace_is_old(tmp_path, monkeypatch):
    """A tool that asks a model of its own ends after that model's turn: the call was read at that turn, then again
    from its span, a duplicate write that never was. A trace begun too long ago to hold calls read both as well."""
    t = "cd" * 16
    outer = _turn(t, 1, _history(), [("call_1", "create_refund")])
    inner = _turn(t, 2, json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Write the note."}]}]), text="note")
    span = _span(t, 3, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_refund", "gen_ai.tool.call.id": "call_1"})
    done = _turn(t, 4, _history(("call_1", "ok")), text="Refunded.")
    for layout in ([_doc(outer), _doc(inner), _doc(span), _doc(done)], [_doc(outer, inner), _doc(span, done)]):
        assert len(_calls(_read(tmp_path, *layout))) == 1, layout
    from agentlab.evals import span_calls
    monkeypatch.setattr(span_calls, "WINDOW", 3)
    monkeypatch.setattr(span_calls, "_EVERY", 1)
    lines = [_doc(_chat(t, 1, text="hello")), *[_doc(_chat(f"{k:032x}", 1, text="hi")) for k in range(4)],
             _doc(outer), _doc(span), _doc(done)]
    assert len(_calls(_read(tmp_path, *lines))) == 1


def test_the_same_id_asked_again_in_a_later_turn_is_a_call_of_its_own(tmp_path):
    """Instrumentations that make ids up (google-genai's name_index) give a retried call the id of the first, and its
    answer another: the retry was taken for a second span of the same turn and never read."""
    t = "ef" * 16
    turns = [_turn(t, 1, _history(), [("create_refund_1", "create_refund")]),
             _turn(t, 2, _history(("create_refund_1", {"error": "timeout"})), [("create_refund_1", "create_refund")]),
             _turn(t, 3, _history(("create_refund_1", {"error": "timeout"}), ("create_refund_1", "ok")), text="Done.")]
    for layout in ([_doc(x) for x in turns], [_doc(*turns)]):
        assert [c[2] for c in _calls(_read(tmp_path, *layout))] == [1, 2]


def test_a_streamed_turns_answers_without_ids_stay_with_their_calls(tmp_path):
    t = "12" * 16
    lookup = _span(t, 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"})
    both = _span(t, 2, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": name, "arguments": {}} for name in ("lookup_order", "create_refund")]}])})
    replies = _span(t, 3, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [
        {"type": "tool_call_response", "response": said}]} for said in ("paid", {"error": "declined"})])})
    rows = [r for r in _read(tmp_path, _doc(lookup), _doc(both), _doc(replies)) if r["kind"] == "tool"]
    assert [(r["tool_name"], r["exec_ok"]) for r in rows] == [("lookup_order", True), ("create_refund", False)]


def test_a_line_read_in_part_is_counted_once_and_a_weekly_review_goes_on(tmp_path):
    from agentlab.evals.log_review import review_logs
    from agentlab.evals.logs import read_logs
    t = "34" * 16
    cut = '[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a'
    spans = [_span(t, k, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": cut, "gen_ai.input.messages": cut.replace(
        '"tool_call"', '"tool_call_response"')}) for k in (1, 2)]
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(_doc(_chat(t, 0, text="hi"))) + "\n" + json.dumps(_doc(*spans)) + "\n", encoding="utf-8")
    report = review_logs(path, "otel")
    assert report["totals"]["partly_read_lines"] == 1 and len(report["partly_read"]) == 1
    assert "gen_ai.output.messages, gen_ai.input.messages" in report["partly_read"][0]
    assert len(list(read_logs(path, "otel"))) == 1  # strict, as the weekly review reads: read, never stopped
    # an input cut short before its answers (they come last): the calls waiting for them are said to have lost them
    asks = _turn(t, 1, _history(), [("c1", "create_refund")])
    cut_input = _turn(t, 2, _history(("c1", "ok"))[:200], text="Done.")
    path.write_text(json.dumps(_doc(asks)) + "\n" + json.dumps(_doc(cut_input)) + "\n", encoding="utf-8")
    report = review_logs(path, "otel")
    assert report["totals"]["partly_read_lines"] == 1 and "gen_ai.input.messages" in report["partly_read"][0]
    # JSON of another shape holds no calls: read as such, never said to be cut short
    other = _span(t, 3, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
        {"role": "assistant", "content": [{"type": "tool_call", "id": "c1", "name": "f"}]})})
    path.write_text(json.dumps(_doc(_chat(t, 0, text="hi"), other)) + "\n", encoding="utf-8")
    assert "partly_read_lines" not in review_logs(path, "otel")["totals"]


def test_calls_a_chat_span_holds_are_read_in_every_shape_or_said_unread(tmp_path, capsys):
    """Messages written as the conventions prefer (a structured value), wrapped in an object, or cut short by an
    attribute length limit: the calls were lost without a word and the review said "no tool call anywhere"."""
    t = "ef" * 16
    parts = {"arrayValue": {"values": [{"kvlistValue": {"values": [
        {"key": "role", "value": {"stringValue": "assistant"}},
        {"key": "parts", "value": {"arrayValue": {"values": [{"kvlistValue": {"values": [
            {"key": "type", "value": {"stringValue": "tool_call"}}, {"key": "id", "value": {"stringValue": "c1"}},
            {"key": "name", "value": {"stringValue": "lookup_order"}},
            {"key": "arguments", "value": {"stringValue": '{"order_id": "A1"}'}}]}}]}}}]}}]}}
    structured = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": parts})
    wrapped = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
        {"messages": [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup_order"}]}]})})
    for span in (structured, wrapped):
        assert [c[:2] for c in _calls(_read(tmp_path, _doc(span)))] == [("lookup_order", "c1")]
    whole = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup_order",
                                                         "arguments": {"order_id": "A1"}}]}])
    cut = _span(t, 2, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": whole[:-12]})
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(_doc(_span(t, 1, {"gen_ai.operation.name": "chat"}))) + "\n" + json.dumps(_doc(cut)) + "\n",
                    encoding="utf-8")
    assert len(list(read_otlp(path))) == 2  # a reader's own caller, strict: the line's rows read all the same
    from agentlab.cli import main
    for lang, said in (("en", "could not be read"), ("zh", "读不出来")):
        assert main(["review", "--logs", str(path), "--format", "otel", "--out", str(tmp_path / lang), "--lang", lang]) == 0
        assert said in capsys.readouterr().err
        report = json.loads((tmp_path / lang / "report.json").read_text(encoding="utf-8"))
        assert report["totals"]["partly_read_lines"] == 1 and report["totals"]["unread_lines"] == 0
        assert "gen_ai.output.messages" in report["partly_read"][0]
    # nested past the parser's depth, or parts that are not a list: read, never an unexpected error
    deep = _span(t, 1, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "f", "arguments": "[" * 990 + "]" * 990}]}])})
    odd = _span(t, 2, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": None}])})
    path.write_text(json.dumps(_doc(deep, odd)) + "\n", encoding="utf-8")
    assert main(["review", "--logs", str(path), "--format", "otel", "--out", str(tmp_path / "deep")]) == 0


def test_attributes_of_any_type_are_read_and_a_pretty_printed_file_says_what_it_could_not(tmp_path, capsys):
    """An error code written as a structured value, or a sequence number as a word, was an unexpected TypeError; a
    pretty-printed file whose one span held messages cut short stopped the review, where a file of lines read on."""
    from agentlab.cli import main
    t = "12" * 16
    odd = [_span(t, 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", "agentlab.seq": "soon",
                        "agentlab.error.code": {"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "b"}}]}}}),
           _span(t, 2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "g", "agentlab.seq": {"arrayValue": {}},
                        "agentlab.error.code": {"arrayValue": {"values": [{"stringValue": "x"}]}}})]
    rows = list(read_otlp(_doc(*odd)))
    assert [r["error_code"] for r in rows] == ['{"a": "b"}', '["x"]']
    cut = _span(t, 3, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"role": "assistant", "parts": '
                       '[{"type": "tool_call", "id": "c1", "name": "create_refund", "arguments": {"order_'})
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(_doc(*odd, cut), indent=2), encoding="utf-8")
    for lang in ("en", "zh"):
        assert main(["review", "--logs", str(path), "--format", "otel", "--out", str(tmp_path / lang), "--lang", lang]) == 0
        assert "gen_ai.output.messages" in capsys.readouterr().err
    # a text that names the part is a text, not messages cut short: read as the turn's words, nothing said of it
    plain = _span(t, 4, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "The tool_call failed."})
    assert [r["model_visible"] for r in read_otlp(_doc(plain))] == ["The tool_call failed."]


@pytest.mark.parametrize(("lines", "line"), [
    (['{"resourceSpans": []}\n', "not json\n"], 2),
    (["[1, 2]\n"], 1),
    (['{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}'], 1),
])
def test_a_bad_line_is_one_clear_error_naming_the_line(lines, line):
    with pytest.raises(OtlpError) as err:
        list(read_otlp(lines))
    assert err.value.line == line and f"<lines>:{line}:" in str(err.value) and "Traceback" not in str(err.value)
    with pytest.raises(OtlpError, match="不是"):
        list(read_otlp(lines, lang="zh"))


def test_the_global_provider_is_used_by_default(corrected):
    # no provider configured: the API's no-op tracer; nothing raises, and a trace id still comes back
    assert len(export_run(corrected)) == 32


@pytest.mark.parametrize(("data", "line"), [
    (b'{"resourceSpans": []}\n\xff\xfe\x00binary\n', 2),  # a UnicodeDecodeError came out of the file's iteration
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", 1),  # a RecursionError from the parser
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": Infinity}]}]}]}\n', 1),  # null, then fine
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"value": {"intValue": 1e400}}]}]}]}]}\n', 1),
])
def test_a_hostile_file_is_one_clear_error_or_read(tmp_path, data, line):
    # each of these escaped read_otlp as an exception other than OtlpError
    path = tmp_path / "spans.json"
    path.write_bytes(data)
    try:
        list(read_otlp(path))
    except OtlpError as err:
        assert err.line == line and "spans.json" in str(err)


def test_a_file_that_is_not_json_lines_is_not_held_past_max_document(tmp_path, monkeypatch):
    import agentlab.evals.otel as otel
    monkeypatch.setattr(otel, "MAX_DOCUMENT", 1000)
    path = tmp_path / "spans.json"
    path.write_text("{\n" + '"x": 1,\n' * 1000 + "}\n", encoding="utf-8")  # gathered whole as a pretty document
    with pytest.raises(OtlpError, match="64 MB"):
        list(read_otlp(path))


def _under(span: dict, parent: int | None) -> dict:
    """``span`` with the span started at ``parent`` (its id) as its parent; None: a root."""
    return {**span, "parentSpanId": f"{parent:016x}"} if parent is not None else span


def _agent(trace: str, start: int, text: str) -> dict:
    said = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
    return _span(trace, start, {"gen_ai.operation.name": "invoke_agent", "gen_ai.output.messages": said})


def _sub_agent_trace(t: str, *, http: bool = True) -> list[dict]:
    """An agent (10) whose tool call (20) runs an agent of its own (30), under a web request (1), as a collector
    writes them: each span when it ends, so every child before its parent."""
    spans = [_under(_chat(t, 11, calls=[("k1", "ask_specialist", {"q": "A1"})]), 10),
             _under(_chat(t, 31, text="A1 is refundable."), 30),
             _under(_agent(t, 30, "A1 is refundable."), 20),
             _under(_tool_span(t, 20, "k1", "ask_specialist"), 10),
             _under(_chat(t, 40, answers=[("k1", "A1 is refundable.")], text="Refunded."), 10),
             _under(_agent(t, 10, "Refunded."), 1 if http else 99)]  # 99: a parent the file never holds
    if http:
        spans.append(_span(t, 1, {"http.request.method": "POST"}))
    return spans


@pytest.mark.parametrize("http", [True, False], ids=["under a web request", "its parent never written"])
@pytest.mark.parametrize("shape", ["document", "a span a line", "a batch a line"])
def test_an_agent_run_by_another_agents_call_ends_no_run(tmp_path, shape, http):
    """A sub-agent's invoke_agent span closed a run of its own: one conversation was counted as two, the first
    cut at the sub-agent's answer and graded on it, the second made of the outer agent's last turn."""
    t = "ef" * 16
    spans = _sub_agent_trace(t, http=http)
    lines = {"document": [_doc(*spans)], "a span a line": [_doc(s) for s in spans],
             "a batch a line": [_doc(*spans[:3]), _doc(*spans[3:])]}[shape]
    rows = _read(tmp_path, *lines)
    # (a document is read in the order the spans started, a file in the order they were written)
    assert sorted(r["kind"] for r in rows[:-1]) == ["model", "model", "model", "tool"] and rows[-1]["kind"] == "end"
    assert rows[-1]["model_visible"] == "Refunded." and {r["run_id"] for r in rows} == {t}
    from agentlab.evals.log_review import review_logs
    path = tmp_path / "spans.jsonl"
    assert review_logs(path, "otel")["totals"]["runs"] == 1


def test_agents_one_after_another_in_a_trace_end_one_run_on_the_last(tmp_path):
    """A hand-off: two agents side by side under the application's own span; the conversation ends on the second."""
    t = "fa" * 16
    spans = [_under(_chat(t, 11, text="Passing you to refunds."), 10), _under(_agent(t, 10, "Passing you to refunds."), 1),
             _under(_chat(t, 21, text="Refunded."), 20), _under(_agent(t, 20, "Refunded."), 1),
             _span(t, 1, {"workflow": "support"})]
    for lines in ([_doc(s) for s in spans], [_doc(*spans)]):
        rows = _read(tmp_path, *lines)
        assert [r["kind"] for r in rows] == ["model", "model", "end"] and rows[-1]["model_visible"] == "Refunded.", rows
    # two traces, each an agent at its root: a run each, as before
    two = [_agent("01" * 16, 1, "one"), _agent("02" * 16, 2, "two")]
    assert [r["model_visible"] for r in _read(tmp_path, *map(_doc, two))] == ["one", "two"]
