"""review --logs made faster gives the same report: every log here, in every format it reads (with and without a
tools file), reviewed by today's code, equals the report the code before the speed-up gave
(tests/data/review_reports.json, made by tests/data/make_review_reports.py). Speed itself is measured by
benchmarks/bench_review.py, never here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

from agentlab.evals.log_review import review_logs

DATA = ROOT / "data"
TOOLS = DATA / "aftersales_tools.json"


def _rows(rows: int) -> list[dict]:
    """One long telemetry run and a few short ones: tool calls repeated, broken, refused, writes done twice,
    codes logged with and without their category, a final status given or not."""
    out: list[dict] = []
    for k in range(rows):
        args = ['{"order_id": "A1001"}', '{"orderId": 1}', '{bad', f'{{"order_id": "A{k % 7}"}}', ""][k % 5]
        name = ["get_order", "create_refund", "get_order", "fetch_order", "get_order"][k % 5]
        row = {"run_id": f"r{k % 3}", "kind": "tool" if k % 6 else "model", "round_index": k, "tool_name": name,
               "args_raw": args, "exec_ok": k % 4 != 0, "timestamp": f"2026-03-0{1 + k % 3}T10:00:00Z"}
        if k % 10 == 0:
            row["error_code"] = "TIMEOUT"
        if k % 15 == 0:
            row |= {"error_code": "BAD_JSON", "error_category": "retryable", "error_stage": "parse"}
        if k % 21 == 0:
            row |= {"error_code": "MY_OWN", "error_category": "mine"}
        if k % 9 == 0:
            row["replayed"] = True
        out.append(row)
    out += [{"run_id": "r0", "kind": "end", "round_index": rows, "final_status": "done"},
            {"run_id": "r1", "kind": "end", "round_index": rows, "final_status": "escalated"}]
    return out  # r2 never ends


def _span(r: dict) -> dict:
    """A telemetry row as the OTLP span agentlab's exporter writes for it."""
    op = {"tool": "execute_tool", "end": "invoke_agent", "model": "chat"}[r["kind"]]
    attrs = {"gen_ai.operation.name": op, "agentlab.run_id": r["run_id"], "agentlab.round_index": r["round_index"]}
    if r["kind"] == "tool":
        attrs |= {"gen_ai.tool.name": r["tool_name"], "gen_ai.tool.call.arguments": r["args_raw"]}
    if r.get("final_status"):
        attrs["agentlab.final_status"] = r["final_status"]
    if r.get("error_code"):
        attrs["agentlab.error.code"] = r["error_code"]
    if r["round_index"] % 50 == 7:  # a system of its own: a number for a code, a number for a tool's name
        attrs |= {"agentlab.error.code": 500 + r["round_index"] % 3, "gen_ai.tool.name": 7}
    if r["kind"] == "tool" and r["round_index"] % 2:  # what agentlab's exporter says of how far a call got
        attrs |= {"agentlab.parse_ok": r["args_raw"] != "{bad", "agentlab.exec_ok": r["exec_ok"]}
    if r["round_index"] % 3 == 0:
        attrs["agentlab.seq"] = 1000 - r["round_index"]
    kv = [{"key": k, "value": {"boolValue": v} if isinstance(v, bool) else {"intValue": str(v)} if isinstance(v, int)
           else {"stringValue": v}} for k, v in attrs.items()]
    status = {"code": 2, "message": "boom"} if r.get("error_code") == "TIMEOUT" else {}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": f"{r['run_id']:0>32}"[-32:].replace("r", "a"), "spanId": f"{r['round_index'] + 1:016x}", "name": op,
         "startTimeUnixNano": str(1_767_000_000_000_000_000 + r["round_index"]), "endTimeUnixNano": "1", "attributes": kv,
         **({"status": status} if status else {})}]}]}]}


def _conversations(lines: int) -> list[dict]:
    """Conversations as teams log them: one per line, or one exchange per line joined into one; the after-sales
    tools offered (on some lines a second list), calls right, misspelt, broken, repeated, doubled writes."""
    tools = json.loads(TOOLS.read_text(encoding="utf-8"))
    out: list[dict] = []
    for k in range(lines):
        args = ['{"orderId": "A1005"}', '{"order_id": "A1005"}', '{"order_id": "A1005"', '{"order_id": "A1005", "x": 1}'][k % 4]
        call = {"id": f"c{k}", "type": "function", "function": {"name": ["get_order", "get_ordr"][k % 7 == 0], "arguments": args}}
        refund = {"id": f"d{k}", "type": "function", "function": {"name": "create_refund", "arguments":
                  '{"order_id": "A1001", "amount": 199, "reason": "user_cancel"}'}}
        msgs = [{"role": "user", "content": f"What did I pay for A{k % 97}? mail me at a{k}@example.com"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{k}", "content": ['{"ok": true}', '{"ok": false}', "error: no"][k % 3]}]
        if k % 5 == 0:
            for i in range(2):
                msgs += [{"role": "assistant", "content": None, "tool_calls": [{**refund, "id": f"d{k}{i}"}]},
                         {"role": "tool", "tool_call_id": f"d{k}{i}", "content": '{"ok": true}'}]
        if k % 6 != 5:
            msgs.append({"role": "assistant", "content": "19.9"})
        line = {"messages": msgs, "tools": tools if k % 8 else tools[:2],
                "metadata": {"timestamp": f"2026-03-0{1 + k % 4}T10:00:00Z", "passed": k % 3 == 0}}
        if k % 11 == 0:  # the same conversation as exchanges, each request repeating the history
            for cut in range(2, len(msgs) + 1, 2):
                out.append({"request": {"messages": msgs[:cut - 1], "tools": tools},
                            "response": {"choices": [{"message": msgs[cut - 1]}], "created": 1_767_000_000 + k,
                                         "usage": {"prompt_tokens": 100 + cut, "completion_tokens": 7}}})
            continue
        out.append(line)
    return out


def _write(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    return path


def logs(tmp: Path) -> dict[str, tuple[Path, str, Path | None]]:
    """Every log reviewed here: (file, format, tools file or None), by name."""
    rows = _rows(600)
    files = {"openai": _write(tmp / "conversations.jsonl", _conversations(120)),
             "telemetry": _write(tmp / "rows.jsonl", rows),
             "otel": _write(tmp / "spans.jsonl", [_span(r) for r in rows])}
    out: dict[str, tuple[Path, str, Path | None]] = {
        "openai sample": (DATA / "logs_openai_sample.jsonl", "openai", None),
        "openai sample, tools file": (DATA / "logs_openai_sample.jsonl", "openai", TOOLS),
        "telemetry sample": (DATA / "logs_telemetry_sample.jsonl", "telemetry", None),
        "telemetry sample, tools file": (DATA / "logs_telemetry_sample.jsonl", "telemetry", TOOLS),
    }
    # spans as an SDK exports them: many to a line, from several traces, to be grouped and ordered
    spans = [_span(r) for r in rows]
    batches = [{"resourceSpans": [{"scopeSpans": [{"spans": [x["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
                                                             for x in spans[i:i + 20]]}]}]} for i in range(0, len(spans), 20)]
    files["otel batched"] = _write(tmp / "batched.jsonl", batches)
    # past the 200 findings a report shows in full: those after are counted, their detail never shown
    files["openai 400 conversations"] = _write(tmp / "many.jsonl", _conversations(400))
    for fmt, path in files.items():
        out[f"generated {fmt}"] = (path, fmt.split()[0], None)
        out[f"generated {fmt}, tools file"] = (path, fmt.split()[0], TOOLS)
    return out


def report(path: Path, fmt: str, tools: Path | None) -> dict:
    """The report as JSON reads it back (NaN, which a rate of nothing is, as a string: NaN is never equal)."""
    r = review_logs(path, fmt, tools=tools)  # type: ignore[arg-type]
    return json.loads(json.dumps(r, default=str, sort_keys=True),
                      parse_constant=lambda c: c)  # NaN stays the text "NaN"


RECORDED_FILE = ROOT / "tests" / "data" / "review_reports.json"
RECORDED = json.loads(RECORDED_FILE.read_text(encoding="utf-8"))["reports"] if RECORDED_FILE.exists() else {}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_report_is_the_one_the_code_before_the_speed_up_gave(tmp_path, name):
    path, fmt, tools = logs(tmp_path)[name]
    assert report(path, fmt, tools) == RECORDED[name]


def test_every_log_is_recorded(tmp_path):
    assert RECORDED and sorted(logs(tmp_path)) == sorted(RECORDED)


def test_a_span_is_read_as_the_row_an_event_writes(tmp_path):
    """otel.read_otlp writes Event(...).to_dict() out by hand: every field of an Event, in its order."""
    from agentlab.evals.otel import read_otlp
    from agentlab.trace import Event
    path, _, _ = logs(tmp_path)["generated otel"]
    rows = list(read_otlp(path))
    fields = list(Event.__dataclass_fields__)
    assert rows and all(list(r) == [*fields, "timestamp"] for r in rows)  # and the span's start, for its day
    assert all(Event(**{k: v for k, v in r.items() if k != "timestamp"}).to_dict()
               == {k: v for k, v in r.items() if k != "timestamp"} for r in rows[:50])
    # what a telemetry line's row keeps of it (logs._json_rows): every field, a null only where one may be
    from agentlab.evals.logs import _KEPT, _NULLABLE
    assert all(k in _KEPT and (v is not None or k in _NULLABLE) for r in rows for k, v in r.items())


def test_an_event_made_without_its_init_is_the_event_init_makes():
    """log_review._event puts a row's values straight into a new Event: equal, the same dict, the same repr, and
    the dataclass's own TypeError when a field without a default is missing."""
    from dataclasses import replace

    from agentlab.evals.log_review import _event
    from agentlab.trace import Event, finalize
    rows = [{"run_id": "r", "session_id": "s", "turn_id": 1, "round_index": 2, "kind": "tool", "tool_name": "get_order",
             "args_raw": "{}", "exec_ok": False, "error_code": "TIMEOUT"},
            {"run_id": "r", "session_id": "r", "turn_id": 0, "round_index": 0, "kind": "end", "final_status": "done"}]
    for row in rows:
        fast, slow = _event(row), Event(**row)
        assert fast == slow and fast.to_dict() == slow.to_dict() and repr(fast) == repr(slow)
        assert replace(fast, note="x") == replace(slow, note="x")
        assert finalize([fast], "failed") == finalize([slow], "failed")
    with pytest.raises(TypeError):
        _event({"run_id": "r", "kind": "tool"})
