"""review --logs: a team's own logs read as a stream, every call checked by agentlab's own validator,
the rates per day by the metrics' one definitions, a report without secrets, cases eval can run."""
from __future__ import annotations

import copy
import json
import tracemalloc

import pytest
from typography import ascii_colons

from agentlab.cli import main
from agentlab.errors import CODES
from agentlab.evals import load_cases, run_case, summarize
from agentlab.evals.log_review import FOUND_UNGUARDED, KINDS, analyze, review_html, review_logs, runs_of, write_report
from agentlab.evals.logs import LogError, read_logs
from agentlab.evals.otel import read_otlp
from agentlab.i18n import t
from agentlab.resources import data_file

OPENAI = data_file("logs_openai_sample.jsonl")
TELEMETRY = data_file("logs_telemetry_sample.jsonl")
BAD = data_file("logs_bad_sample.jsonl")
TOOLS = json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8"))


def test_openai_sample_every_class_with_both_taxonomies():
    r = review_logs(OPENAI, "openai")
    assert r["totals"]["runs"] == 5  # the four exchanges of one conversation are one conversation
    assert set(r["by_kind"]) == {"bad_json", "unknown_tool", "invalid_args", "repeated_call", "duplicate_write",
                                 "orphan_tool_message", "logged_error"}  # (a tool's answer naming its TIMEOUT)
    for f in r["findings"]:  # each finding in both taxonomies, from the one table; what no guard stopped, at execution
        assert (f["category"], f["stage"]) == FOUND_UNGUARDED.get(f["code"], CODES[KINDS[f["kind"]] or f["code"]])
    assert r["largest"]["count"] == 1 and r["largest"]["example"].startswith("logs_openai_sample.jsonl:")
    days = r["days"]
    assert list(days) == ["2026-03-02", "2026-03-03", "2026-03-04"]
    assert days["2026-03-03"]["task_success_rate"] == 1.0 and days["2026-03-03"]["graded"] == 2
    assert days["2026-03-04"]["takeover_rate"] == 1.0  # a hand-over tool was called
    assert days["2026-03-04"]["task_success_rate"] != days["2026-03-04"]["task_success_rate"]  # not said: NaN


def test_headline_is_the_metrics_definition():
    runs = [run for _, run, _ in runs_of(read_logs(OPENAI, "openai"))]
    mine = review_logs(OPENAI, "openai")["headline"]
    theirs = summarize(runs)
    for key in ("runs", "invalid_call_rate", "avg_steps", "takeover_rate", "finished_rate", "statuses"):
        assert mine[key] == theirs[key], key


def test_telemetry_sample():
    r = review_logs(TELEMETRY, "telemetry")
    assert r["totals"]["runs"] == 8
    kinds = r["by_kind"]
    assert kinds["bad_json"] == kinds["unknown_tool"] == kinds["invalid_args"] == 1
    assert kinds["duplicate_write"] == 1  # the naive loop refunded the same order twice
    assert any(f["code"] == "NEEDS_APPROVAL" and f["kind"] == "logged_error" for f in r["findings"])
    assert r["headline"]["takeover_rate"] == 1 / 8


def test_writes_marked_by_a_tools_file(tmp_path):
    tools = [{"type": "function", "side_effect": True, "function": {"name": "voucher_for_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}}]
    call = {"id": "c1", "type": "function", "function": {"name": "voucher_for_order", "arguments": '{"order_id": "A1"}'}}
    msgs = [{"role": "user", "content": "voucher please"},
            {"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1", "content": "{}"},
            {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c2"}]},
            {"role": "tool", "tool_call_id": "c2", "content": "{}"}, {"role": "assistant", "content": "done"}]
    log = tmp_path / "v.jsonl"
    log.write_text(json.dumps({"messages": msgs, "tools": tools}) + "\n")
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps(tools))
    assert "duplicate_write" not in review_logs(log)["by_kind"]  # no write verb in the name, no file: a read
    marked = review_logs(log, tools=spec)
    assert marked["by_kind"] == {"duplicate_write": 1} and marked["settings"]["writes"] == "tools file"


@pytest.mark.parametrize("text, where", [
    ('{"messages": []}\n[1, 2]\n', ":2:"),
    ('{"messages": [{"role": "user", "content": "hi"}]}\n\n{"request": {"messages": 5}}\n', ":3:"),
    ('{"messages": [{"content": "no role"}]}\n', ":1:"),
    ('{"messages": [], "tools": "get_order"}\n', ":1:"),
])
def test_bad_lines_name_file_and_line(tmp_path, text, where):
    log = tmp_path / "team.jsonl"
    log.write_text(text)
    with pytest.raises(LogError) as exc:
        list(read_logs(log))
    assert str(log) + where in str(exc.value) and "\n" not in str(exc.value)
    assert str(log) + where[:-1] in exc.value.localized("zh")  # Chinese puts a full-width colon after the line


def test_not_text_and_bad_rows(tmp_path):
    log = tmp_path / "t.jsonl"
    log.write_bytes(b'{"run_id": "r", "kind": "model"}\n\xff\xfe\n')
    with pytest.raises(LogError, match=r"t\.jsonl:2:"):
        list(read_logs(log, "telemetry"))
    log.write_text('{"kind": "model"}\n')
    with pytest.raises(LogError, match=r"t\.jsonl:1: .*run_id"):
        list(read_logs(log, "telemetry"))
    with pytest.raises(LogError):
        list(read_logs(tmp_path / "missing.jsonl"))


def test_every_row_is_checked_though_rows_of_one_shape_are_checked_once(tmp_path):
    """A row whose keys repeat an earlier row's, each with its own type, is checked as the first was: a type of
    another kind in the same keys is refused on its own line, and a null is kept or left out by its field."""
    from agentlab.evals.logs import read_rows
    log = tmp_path / "t.jsonl"
    rows = [{"run_id": "r", "kind": "tool", "tool_name": "get_order", "retry_count": 0, "args_raw": "{}"},
            {"run_id": "r", "kind": "tool", "tool_name": "get_order", "retry_count": 1, "args_raw": None},
            {"run_id": "r", "kind": "tool", "tool_name": "get_order", "retry_count": None, "args_raw": "{}"},
            {"run_id": "r", "kind": "end", "tool_name": None, "retry_count": 0, "args_raw": None}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = [r for _, r in read_rows(log)]
    assert [r.get("retry_count", "-") for r in read] == [0, 1, "-", 0]  # a count may not be null: not said
    assert [r.get("args_raw", "-") for r in read] == ["{}", None, "{}", None]  # the arguments may: kept
    rows.insert(2, {"run_id": "r", "kind": "tool", "tool_name": "get_order", "retry_count": "1", "args_raw": "{}"})
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(LogError, match=r"t\.jsonl:3: .*retry_count.*str"):
        list(read_rows(log))


def test_cli_bad_sample_one_line_no_traceback(tmp_path, capsys):
    """A line that cannot be read after lines that could (a log cut short, one line written by something else) is
    read past, counted and said in the terminal, report.json and report.html; the rest is reviewed. Before, the
    whole review stopped on it. A file whose first line cannot be read still stops, in one line."""
    assert main(["review", "--logs", str(BAD), "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "1 line of the file could not be read" in err and "logs_bad_sample.jsonl:3:" in err
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["totals"]["runs"] == 2 and report["totals"]["unread_lines"] == 1
    assert report["unread"][0].startswith("logs_bad_sample.jsonl:3: not valid JSON") and str(BAD.parent) not in err
    assert "1 line of the file could not be read" in (tmp_path / "report.html").read_text(encoding="utf-8")
    first = tmp_path / "first.jsonl"
    first.write_text("".join(BAD.read_text(encoding="utf-8").splitlines(keepends=True)[2:]), encoding="utf-8")
    assert main(["review", "--logs", str(first), "--out", str(tmp_path / "first")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and f"{first}:1:" in err
    assert not (tmp_path / "first" / "report.html").exists()


@pytest.mark.parametrize("fmt", ["openai", "telemetry", "otel"])
def test_lines_that_cannot_be_read_after_good_ones_are_counted_in_every_format(tmp_path, fmt, capsys):
    """Each kind of line no reader can read, after one it could: counted once each, said by its own line number
    (an undecodable line too: the lines after it keep theirs), in either language; what a line quotes of itself
    (its keys) reaches the report redacted."""
    good = {"openai": OPENAI, "telemetry": TELEMETRY, "otel": tmp_path / "spans.jsonl"}[fmt]
    if fmt == "otel":  # a collector's file: a span a line, two runs of two calls and their end
        good.write_text("".join(_span_line(run, op, k) + "\n" for run in ("r1", "r2")
                                for k, op in enumerate(("execute_tool", "execute_tool", "invoke_agent"))))
    lines = good.read_bytes().splitlines(keepends=True)
    bad = [b'{"run_id": "r1", "kind": "tool", "retry_count": "two"}\n' if fmt == "telemetry" else
           b'{"sk-proj-abcdefghijklmnopqrstuvwx": 1}\n' if fmt == "openai" else b'{"resourceSpans": 5}\n',
           b"\xff\xfe not text\n", b'{"messages": [\n']
    log = tmp_path / f"{fmt}.jsonl"
    log.write_bytes(b"".join([lines[0], *bad, *lines[1:]]))
    whole = review_logs(good, fmt)
    report = review_logs(log, fmt)
    assert report["totals"]["unread_lines"] == 3 and report["totals"]["runs"] == whole["totals"]["runs"]
    assert [u.split(":")[1] for u in report["unread"]] == ["2", "3", "4"], report["unread"]
    assert all(u.startswith(f"{fmt}.jsonl:") for u in report["unread"])
    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in json.dumps(report)
    assert review_logs(log, fmt, lang="zh")["unread"][0].startswith(f"{fmt}.jsonl:2：")
    with pytest.raises(LogError if fmt != "otel" else ValueError):  # the readers' own callers: strict as before
        list(read_logs(log, fmt))


def _span_line(run: str, op: str, k: int) -> str:
    attrs = {"gen_ai.operation.name": op, "agentlab.run_id": run, "agentlab.round_index": str(k)}
    if op == "execute_tool":
        attrs |= {"gen_ai.tool.name": "get_order", "gen_ai.tool.call.arguments": json.dumps({"order_id": f"A100{k}"})}
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": op, "startTimeUnixNano": "1764547200000000000",
            "endTimeUnixNano": "1764547201000000000",
            "attributes": [{"key": key, "value": {"stringValue": v}} for key, v in attrs.items()]}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def test_cli_writes_both_files_in_either_language(tmp_path, capsys):
    assert main(["review", "--logs", str(OPENAI), "--out", str(tmp_path), "--lang", "zh"]) == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "每日核心指标" in page and "优先修复" in page
    assert not ascii_colons(page, page=True), ascii_colons(page, page=True)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["settings"]["format"] == "openai"
    assert main(["review", "--logs", str(TELEMETRY), "--format", "telemetry", "--out", str(tmp_path)]) == 0
    assert "Headline rates per day" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_secrets_and_personal_data_redacted(tmp_path):
    write_report(review_logs(OPENAI), tmp_path)
    raw = OPENAI.read_text(encoding="utf-8")
    for secret in ("sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", "lilei@example.com", "138 0013 8000", "13912345678"):
        assert secret in raw
        for name in ("report.html", "report.json", "cases.jsonl"):
            assert secret not in (tmp_path / name).read_text(encoding="utf-8"), (secret, name)


def test_markup_from_the_logs_is_escaped(tmp_path):
    bad = "<script>alert(1)</script>"
    call = {"id": "c1", "type": "function", "function": {"name": bad, "arguments": "{}"}}
    log = tmp_path / "x.jsonl"
    log.write_text(json.dumps({"messages": [{"role": "user", "content": bad},
                                            {"role": "assistant", "content": None, "tool_calls": [call]}],
                               "tools": TOOLS}) + "\n")
    page = review_html(review_logs(log), "en")
    assert bad not in page and "&lt;script&gt;" in page


def test_candidate_cases_run_in_eval(tmp_path):
    paths = write_report(review_logs(OPENAI), tmp_path)
    cases = load_cases(paths["cases.jsonl"])
    assert len(cases) == 3 and all(c.category == "regression" for c in cases)
    dup = next(c for c in cases if c.id.endswith("-1"))
    assert dup.fake["script"][0]["calls"] == [["get_order", '{"orderId": "A1001"}']]  # the call as it was sent
    result = run_case(dup)
    assert result.run.status in ("done", "done_after_self_correction", "escalated")
    assert result.run.invalid_calls >= 1  # the replayed bad call is refused by the guarded loop, as in the logs


def _big_log(path, lines):
    msgs = [{"role": "user", "content": "What did I pay for A1005?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "get_order", "arguments": '{"orderId": "A1005"}'}}]},
            {"role": "tool", "tool_call_id": "c", "content": "{}"}, {"role": "assistant", "content": "19.9"}]
    line = json.dumps({"messages": msgs, "tools": TOOLS, "metadata": {"timestamp": "2026-03-03T10:00:00Z"}}) + "\n"
    with path.open("w") as f:
        for _ in range(lines):
            f.write(line)


def _peak(path) -> int:
    tracemalloc.start()
    try:
        report = analyze(read_logs(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report["totals"]["findings"] == report["totals"]["runs"]
    return peak


def test_large_file_in_bounded_memory(tmp_path):
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _big_log(small, 100)
    _big_log(big, 1000)
    assert big.stat().st_size > 9 * small.stat().st_size
    # ten times the lines, not ten times the memory: what is held is one conversation and the counts
    assert _peak(big) < 1.3 * _peak(small) + 256 * 1024


def test_progress_bar_on_stderr(capsys):
    list(read_logs(OPENAI, progress=True))
    assert "logs_openai_sample.jsonl" in capsys.readouterr().err


def test_otel_round_trip(tmp_path):
    """The same runs exported as OpenTelemetry spans (the official SDK, in memory) and read back by
    `review --format otel` give the review their own telemetry rows give: the same findings, the same rates."""
    pytest.importorskip("opentelemetry.sdk")  # the otel extra; CI installs it (requirements-dev.txt)
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentlab.evals.otel import export_run, otlp_json
    from agentlab.trace import to_jsonl
    from agentlab.workbook.demo import compare_loops
    runs = [getattr(compare_loops(f), side) for f in ("camel_case", "repeat_call", "lost_reply") for side in ("naive", "guarded")]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for r in runs:
        export_run(r, provider)
    spans_file, rows_file = tmp_path / "spans.jsonl", tmp_path / "rows.jsonl"
    spans_file.write_text(json.dumps(otlp_json(exporter.get_finished_spans())) + "\n", encoding="utf-8")
    for r in runs:
        to_jsonl(r.events, rows_file, append=True)
    from_spans, from_rows = review_logs(spans_file, "otel"), review_logs(rows_file, "telemetry")
    assert from_spans["by_kind"] == from_rows["by_kind"] and from_spans["by_kind"]
    assert json.dumps(from_spans["headline"], sort_keys=True) == json.dumps(from_rows["headline"], sort_keys=True)  # NaN: not graded
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 1}]}]}]}\nnot json\n', encoding="utf-8")
    from agentlab.i18n import LocalizedError
    with pytest.raises(LocalizedError, match=r"bad\.jsonl:2: "):  # one line naming the file and the line
        list(read_otlp(bad))
    # a review reads past it (a line read well came first), and says so
    assert review_logs(bad, "otel")["unread"][0].startswith("bad.jsonl:2: ")


# --- hostile files: each failed on the code before its fix ---------------------------------
_SK = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"


def _conv(user: str, args: str = '{"order_id": "A1"}', name: str = "get_order") -> dict:
    return {"messages": [{"role": "user", "content": user},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                         {"role": "assistant", "content": "done"}]}


def _review_cli(tmp_path, capsys, text: str, fmt: str = "openai") -> tuple[int, str]:
    log = tmp_path / "hostile.jsonl"
    log.write_text(text, encoding="utf-8")
    code = main(["review", "--logs", str(log), "--format", fmt, "--out", str(tmp_path / "out")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["openai", "telemetry", "otel"])
def test_json_nested_past_the_parser_is_one_line_saying_so(tmp_path, capsys, fmt):
    # a RecursionError escaped as "unexpected RecursionError" (openai, telemetry) or "not valid JSON" without why
    code, err = _review_cli(tmp_path, capsys, "[" * 100_000 + "]" * 100_000 + "\n", fmt)
    assert code == 2 and err.count("\n") == 1 and "hostile.jsonl:1" in err
    assert "unexpected" not in err and "Recursion" not in err


def test_a_line_longer_than_max_line_is_refused_before_it_is_read_whole(tmp_path, monkeypatch):
    import agentlab.evals.logs as logs
    monkeypatch.setattr(logs, "MAX_LINE", 1000)
    log = tmp_path / "one_line.jsonl"
    log.write_text(json.dumps(_conv("x" * 5000)), encoding="utf-8")  # no newline at all, as a runaway writer leaves it
    with pytest.raises(LogError) as e:
        list(read_logs(log, "openai"))
    assert "one_line.jsonl:1" in e.value.localized("en") and "1000" in e.value.localized("en")
    assert "一" in e.value.localized("zh") or "字节" in e.value.localized("zh")


def test_report_json_is_strict_json_and_lone_surrogates_are_written(tmp_path):
    # report.json held NaN (no grader: task_success_rate) which JSON.parse and jq refuse; a "\ud800"
    # in a log line (valid JSON) made writing report.json raise UnicodeEncodeError
    log = tmp_path / "s.jsonl"
    conv = _conv("where is my order \ud800 A1", args='{"order_id": "A1\udc00"')
    conv["messages"] = conv["messages"][:2]  # stops on a call nobody answered: a finding, and a case
    line = json.dumps(conv)
    log.write_text(line + "\n", encoding="utf-8")
    paths = write_report(review_logs(log, "openai"), tmp_path / "out")
    text = paths["report.json"].read_text(encoding="utf-8")
    report = json.loads(text, parse_constant=lambda c: pytest.fail(f"report.json holds {c}"))
    assert report["headline"]["task_success_rate"] is None
    assert "\ufffd" in paths["report.html"].read_text(encoding="utf-8")


def test_nan_and_infinity_in_a_log_line_are_read_as_nothing_said(tmp_path):
    log = tmp_path / "n.jsonl"
    log.write_text(json.dumps({**_conv("hi"), "created": float("inf"), "success": float("nan")}) + "\n", encoding="utf-8")
    (run,) = read_logs(log, "openai")
    assert run.day == "" and run.success is None


def test_telemetry_rows_missing_or_mistyped_fields(tmp_path, capsys):
    # a row without session_id/turn_id/round_index raised TypeError from Event(); a mistyped one
    # ("round_index": "3") a TypeError in max(): both said as "unexpected"
    rows = [{"run_id": "r1", "kind": "tool", "tool_name": "get_order", "args_raw": "{bad"},
            {"run_id": "r1", "kind": "end", "final_status": "done"}]
    log = tmp_path / "t.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [r.rows[0]["session_id"] for r in read_logs(log, "telemetry")] == ["r1"]
    report = review_logs(log, "telemetry")
    assert report["totals"]["runs"] == 1
    code, err = _review_cli(tmp_path, capsys, json.dumps({**rows[0], "round_index": "3"}) + "\n", "telemetry")
    assert code == 2 and "hostile.jsonl:1" in err and "round_index" in err and "unexpected" not in err


def test_a_run_id_and_a_tool_name_from_the_logs_are_redacted_like_the_detail(tmp_path):
    # the finding's run (a telemetry run_id) and tool were written to report.json as the logs had them
    rows = [{"run_id": f"run-for-bob@example.com-{_SK}", "session_id": "s", "turn_id": 1, "round_index": 1,
             "kind": "tool", "tool_name": "bob@example.com", "args_raw": "{bad", "error_code": "BAD_JSON"},
            {"run_id": f"run-for-bob@example.com-{_SK}", "session_id": "s", "turn_id": 1, "round_index": 1,
             "kind": "end", "final_status": "failed"}]
    log = tmp_path / "t.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    paths = write_report(review_logs(log, "telemetry"), tmp_path / "out")
    for name, p in paths.items():
        text = p.read_text(encoding="utf-8")
        assert "bob@example.com" not in text and _SK[:20] not in text, name


def test_a_logged_category_or_stage_of_its_own_is_read_by_the_one_table(tmp_path, capsys):
    # "stage./etc/passwd" was looked up in the catalogue for the "fix first" sentence: KeyError, "unexpected"
    rows = [{"run_id": "r", "kind": "tool", "tool_name": "get_order", "args_raw": "{}", "error_code": "<b>X</b>",
             "error_stage": "/etc/passwd <script>", "error_category": "zzz"},
            {"run_id": "r", "kind": "end", "final_status": "failed"}]
    code, err = _review_cli(tmp_path, capsys, "".join(json.dumps(r) + "\n" for r in rows), "telemetry")
    assert code == 0, err
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<b>X" not in page and "/etc/passwd" not in page and "<script>" not in page
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert (report["findings"][0]["category"], report["findings"][0]["stage"]) == CODES.get("X", ("fatal", "execution"))


# --- a tool's plain-text failure, and self-correction, by the package's one definition ----------
def _conversation(tmp_path, *turns):
    """A logged conversation with the after-sales tools offered: each turn is (arguments, the tool's reply), then
    the assistant's closing words."""
    msgs = [{"role": "user", "content": "What did I pay for A1005?"}]
    for i, (args, reply) in enumerate(turns):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "get_order", "arguments": args}}]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": reply}]
    msgs.append({"role": "assistant", "content": "19.9"})
    log = tmp_path / "one.jsonl"
    log.write_text(json.dumps({"messages": msgs, "tools": TOOLS}) + "\n")
    ((_, run, _),) = runs_of(read_logs(log))
    return run


@pytest.mark.parametrize("reply, ran", [("Error: order service unavailable", False), ("error - no such order", False),
                                        ('{"order_id": "A1005", "amount": 19.9}', True), ("A1005: paid 19.9", True)])
def test_a_plain_text_error_reply_is_a_failed_call(tmp_path, reply, ran):
    run = _conversation(tmp_path, ('{"order_id": "A1005"}', reply))
    assert [e.exec_ok for e in run.tool_events] == [ran]


def test_a_wrong_call_then_a_corrected_one_that_ran_is_self_correction(tmp_path):
    ok = '{"order_id": "A1005", "amount": 19.9}'
    run = _conversation(tmp_path, ('{"orderId": "A1005"}', '{"error": "bad args"}'), ('{"order_id": "A1005"}', ok))
    assert run.invalid_calls == 1 and run.status == "done_after_self_correction"
    assert _conversation(tmp_path, ('{"order_id": "A1005"}', ok)).status == "done"
    # a wrong call never repaired (the corrected call's tool said it failed, or the model gave up) is not one:
    # the loop's definition (and metrics.repair_turns) needs a later call that ran
    failed = _conversation(tmp_path, ('{"orderId": "A1005"}', '{"error": "bad args"}'),
                           ('{"order_id": "A1005"}', "Error: order service unavailable"))
    assert failed.status == "done"
    assert _conversation(tmp_path, ('{"orderId": "A1005"}', '{"error": "bad args"}')).status == "done"


# --- every format in bounded memory: one run of many rows costs its counts, never its rows -------------
def _one_long_run(path, rows, fmt):
    """One run of ``rows`` rows (calls, some refused, some repeated, some with a logged error), then its end."""
    def row(k):
        if k == rows:
            return {"run_id": "r1", "kind": "end", "round_index": k, "final_status": "done",
                    "timestamp": "2026-03-02T10:00:00Z"}
        args = ['{"order_id": "A1001"}', '{"orderId": 1}', '{bad', f'{{"order_id": "A{k % 7}"}}'][k % 4]
        return {"run_id": "r1", "kind": "tool", "round_index": k, "tool_name": "get_order", "args_raw": args,
                "exec_ok": True, **({"error_code": "TIMEOUT"} if k % 10 == 0 else {})}

    def span(r):
        op = {"tool": "execute_tool", "end": "invoke_agent"}[r["kind"]]
        attrs = {"gen_ai.operation.name": op, "agentlab.run_id": r["run_id"], "agentlab.round_index": r["round_index"],
                 **({"gen_ai.tool.name": r["tool_name"], "gen_ai.tool.call.arguments": r["args_raw"]}
                    if r["kind"] == "tool" else {"agentlab.final_status": r["final_status"]}),
                 **({"agentlab.error.code": r["error_code"]} if r.get("error_code") else {})}
        kv = [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
              for k, v in attrs.items()]
        return {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": op,
                                                              "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                                                              "attributes": kv}]}]}]}
    with path.open("w") as f:
        for k in range(rows + 1):
            f.write(json.dumps(span(row(k)) if fmt == "otel" else row(k)) + "\n")


def _review_peak(path, fmt) -> tuple[int, dict]:
    tracemalloc.start()
    try:
        report = review_logs(path, fmt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, report


@pytest.mark.parametrize("fmt", ["telemetry", "otel"])
def test_one_long_run_is_read_in_bounded_memory(tmp_path, fmt):
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _one_long_run(small, 1_000, fmt)
    _one_long_run(big, 10_000, fmt)
    peak_small, r_small = _review_peak(small, fmt)
    peak_big, r_big = _review_peak(big, fmt)
    assert r_small["totals"]["runs"] == r_big["totals"]["runs"] == 1
    assert r_big["totals"]["tool_calls"] == 10_000 and r_big["totals"]["findings"] > 1_000  # every row counted
    assert len(r_big["findings"]) == 200  # the sample shown is bounded; the counts are not
    # ten times the rows of one run, not ten times the memory: the run is counted as it comes, never held
    assert peak_big < 1.3 * peak_small + 256 * 1024, (peak_small, peak_big)


def test_a_double_write_no_guard_stopped_is_a_failure_not_the_guard_working(tmp_path):
    """An unguarded log (no replay, no breaker: the refund was done twice) files the double write as a failure of
    execution, in the idempotency class of the five, never as rule-blocked (a guard that worked); a repeated read
    too. The same code logged by a guard that stopped it stays rule-blocked."""
    refund = {"id": "c1", "type": "function",
              "function": {"name": "create_refund", "arguments": '{"order_id": "A1001", "amount": 199, "reason": "user_cancel"}'}}
    read = {"id": "r", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1001"}'}}
    ok = '{"ok": true, "data": {"refund_id": "R1"}}'
    msgs = [{"role": "user", "content": "refund A1001"}]
    for i, call in enumerate([read, read, read, refund, {**refund, "id": "c2"}]):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [{**call, "id": f"x{i}"}]},
                 {"role": "tool", "tool_call_id": f"x{i}", "content": ok}]
    msgs.append({"role": "assistant", "content": "Refunded."})
    log = tmp_path / "double.jsonl"
    log.write_text(json.dumps({"messages": msgs, "tools": TOOLS}) + "\n")
    r = review_logs(log)
    assert r["by_kind"] == {"repeated_call": 1, "duplicate_write": 1}
    assert "rule_blocked" not in r["by_stage"] and r["by_stage"] == {"execution": 2}
    assert {f["kind"]: f["stage"] for f in r["findings"]} == {"repeated_call": "execution", "duplicate_write": "execution"}
    assert r["failure_classes"]["idempotency"] == 1 and r["failure_classes"]["loops"] == 1
    page = review_html(r)
    assert "rule-blocked" not in page and "The five classes of failure" in page
    assert "task success (finished and checked)" in page and "takeover (anything not finished)" in page
    # telemetry: the guarded loop's own CONFLICT (the guard stopped it) is rule-blocked; a write run twice is not
    rows = [json.loads(line) for line in TELEMETRY.read_text(encoding="utf-8").splitlines()]
    guarded = [{**row, "run_id": "g"} for row in rows if row["run_id"] == rows[0]["run_id"]]
    guarded[-2] = {**guarded[-2], "kind": "tool", "error_code": "CONFLICT", "error_category": "fatal", "error_stage": "rule_blocked"}
    tel = tmp_path / "t.jsonl"
    tel.write_text("".join(json.dumps(row) + "\n" for row in rows + guarded))
    t = review_logs(tel, "telemetry")
    stages = {(x["kind"], x["stage"]) for x in t["by_kind_stage"]}
    assert ("duplicate_write", "execution") in stages and ("logged_error", "rule_blocked") in stages


def test_logs_that_hold_no_conversation_are_not_called_clean(tmp_path):
    """An empty file, or a log read in a format it is not in (an openai log read as OTLP): nothing was read, which the
    report said as "Nothing wrong was found in these logs" beside "0 conversations"."""
    from agentlab.evals.log_report import largest_text, review_html
    from agentlab.evals.log_review import review_logs
    from agentlab.i18n import t
    from agentlab.resources import data_file
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    for path, fmt in ((empty, "openai"), (empty, "otel")):
        for lang in ("en", "zh"):
            report = review_logs(path, fmt, lang=lang)
            assert report["totals"]["runs"] == 0
            said = largest_text(report, lang)
            assert said == t("logs.nothing_read", lang, format=fmt) and said != t("logs.no_findings", lang)
            assert t("logs.no_findings", lang) not in review_html(report, lang)
    read = review_logs(data_file("logs_openai_sample.jsonl"), "openai")
    assert read["totals"]["runs"] and largest_text(read) != t("logs.nothing_read", "en", format="openai")


def test_a_chinese_review_says_what_the_api_would_refuse_in_chinese(tmp_path):
    """The Chinese page read "message 2: a tool message answering 'call_zz', which no preceding assistant message with
    tool_calls asked for": the review's own sentence about a conversation the API would refuse, left in English."""
    from agentlab.evals.log_review import review_logs
    from agentlab.resources import data_file
    for lang, says in (("zh", "第 "), ("en", "message ")):
        report = review_logs(data_file("logs_openai_sample.jsonl"), "openai", lang=lang)
        details = [f["detail"] for f in report["findings"] if f["code"] == "BAD_REQUEST"]
        assert details and all(d.startswith(says) for d in details), details


@pytest.mark.parametrize("name, fmt", [("logs_openai_sample.jsonl", "openai"), ("logs_telemetry_sample.jsonl", "telemetry")])
def test_fix_first_names_a_kind_of_the_class_the_report_counts_most(name, fmt):
    """Every kind of the sample tied at one finding, and "fix first" named UNKNOWN_TOOL by its name, beside a class
    table that counted schema three times as often."""
    from agentlab.evals.failure_classes import CODE_CLASSES
    from agentlab.evals.log_review import review_logs
    from agentlab.resources import data_file
    report = review_logs(data_file(name), fmt)
    classes = report["failure_classes"]
    assert sum(classes.values()) and len(set(classes.values()) - {0}) > 1  # classes of different sizes to choose by
    chosen = CODE_CLASSES.get(report["largest"]["code"], "")
    tied = [k for k in report["by_kind_stage"] if k["count"] == report["largest"]["count"]]
    assert classes.get(chosen, 0) == max(classes.get(CODE_CLASSES.get(k["code"], ""), 0) for k in tied), (report["largest"], classes)


@pytest.mark.parametrize("name, fmt", [("logs_telemetry_sample.jsonl", "telemetry"), ("logs_openai_sample.jsonl", "openai")])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_says_nothing_it_has_no_cases_for_and_names_each_taxonomy(name, fmt, lang):
    """Telemetry rows (no messages to replay) ended with "0 conversations could be kept as regression cases, but none
    of them can be replayed"; the two taxonomies' sentences began alike, and nothing said which was which."""
    from agentlab.evals.log_report import review_html
    from agentlab.evals.log_review import review_logs
    from agentlab.i18n import t
    from agentlab.resources import data_file
    report = review_logs(data_file(name), fmt, lang=lang)
    page = review_html(report, lang, page=True)
    if not report["cases"]:
        assert t("logs.cases_zero", lang) in page and t("logs.cases_page_none", lang, n=0) not in page
    i = page.index('id="taxonomies"')
    assert page.index(t("logs.col.category", lang), i) < page.index(t("logs.col.stage", lang), i)


def test_what_was_cut_from_the_logs_is_marked_in_the_pages_language():
    """The Chinese review read [address removed], [phone …78] and [secret removed] among its Chinese; the weekly
    review's conversations too. The text around a mark is left as the logs hold it."""
    import re

    from agentlab.evals.log_report import review_html
    from agentlab.evals.log_review import review_logs
    from agentlab.i18n import said_marks
    from agentlab.resources import data_file
    marks = re.compile(r"\[(?:secret|details|path|address|query) removed\]|\[(?:card|phone) …\d+\]")
    en = review_html(review_logs(data_file("logs_openai_sample.jsonl"), "openai", lang="en"), "en", page=True)
    zh = review_html(review_logs(data_file("logs_openai_sample.jsonl"), "openai", lang="zh"), "zh", page=True)
    assert marks.search(en) and not marks.search(zh) and "[地址已删除]" in zh and "[电话 …78]" in zh
    assert said_marks("call [phone …78] at [path removed]", "zh") == "call [电话 …78] at [路径已删除]"
    assert said_marks("[phone …78]", "en") == "[phone …78]"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_log_read_as_otel_that_is_another_format_is_refused_naming_the_format_and_the_flag(tmp_path, lang):
    """An openai log (or any JSON line without resourceSpans) read as OTLP was "0 conversations reviewed", exit 0,
    and overwrote the good report."""
    from agentlab.evals.log_review import review_logs
    from agentlab.evals.otel import OtlpError
    from agentlab.resources import data_file
    with pytest.raises(OtlpError) as told:
        review_logs(data_file("logs_openai_sample.jsonl"), "otel", lang=lang)
    assert "--format openai" in told.value.localized(lang) and ":1" in told.value.localized(lang)
    with pytest.raises(OtlpError) as told:
        review_logs(data_file("logs_telemetry_sample.jsonl"), "otel", lang=lang)
    assert "--format telemetry" in told.value.localized(lang)
    other = tmp_path / "other.jsonl"
    other.write_text('{"foo": 1}\n', encoding="utf-8")
    with pytest.raises(OtlpError):
        review_logs(other, "otel", lang=lang)


def test_personal_data_and_secrets_spelt_in_json_escapes_or_as_an_id_number_never_reach_a_report_and_cases_stay_json(
        tmp_path):
    """An outside pass found, in report.html, report.json and cases.jsonl: a mainland resident ID number as the log
    had it; a key, an e-mail and a phone number spelt in JSON escapes (read back whole by a replay); and a case whose
    arguments lost their closing quote and brace to the URL's redaction, so it replayed broken JSON."""
    escaped_key = "sk-\\u0070roj-AbCdEf1234567890AbCdEf1234567890XyZ"
    lines = [
        _conv("my id is 11010519491231002X", '{"order_id": "11010519491231002X"}'),
        _conv("refund", '{"order_id": "' + escaped_key + '", "note": "jane\\u002edoe\\u0040corp-mail.com"}'),
        _conv("call me", '{"order_id": "\\u0031\\u0033\\u0038\\u0030\\u0030\\u0031\\u0033\\u0038\\u0030\\u0030\\u0030"}'),
        _conv("refund", '{"order_id": "postgresql+psycopg2://u:VeryS3cret@h/db mysql://x"}', name="create_refund"),
    ]
    for line in lines:
        line["tools"] = TOOLS
    log = tmp_path / "pii.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    paths = write_report(review_logs(log), tmp_path / "out")
    for name, p in paths.items():
        text = p.read_text(encoding="utf-8")
        for leak in ("11010519491231002X", "AbCdEf1234567890", "\\u0070roj", "jane", "corp-mail", "13800138000",
                     "\\u0031\\u0033", "VeryS3cret"):
            assert leak not in text, (name, leak)
    cases = [json.loads(line) for line in paths["cases.jsonl"].read_text(encoding="utf-8").splitlines()]
    sent = [c for case in cases for step in case["fake"]["script"] for c in step["calls"]]
    assert sent and all(isinstance(json.loads(args), dict) for _, args in sent), sent


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_calls_no_tools_list_covers_are_still_read_as_json_and_the_report_says_what_it_could_not_check(
        tmp_path, capsys, lang):
    """With no tools list in the logs and no --tools, nothing was checked, broken JSON included, and the page said
    "Nothing wrong was found"; OTLP spans and telemetry rows with no parse_ok of their own, the same."""
    conv = _conv("refund A1", '{"orderId": 5')
    conv["messages"][1]["tool_calls"].append(
        {"id": "c2", "type": "function", "function": {"name": "totally_made_up", "arguments": "{}"}})
    conv["messages"].insert(3, {"role": "tool", "tool_call_id": "c2", "content": "ok"})
    log = tmp_path / "notools.jsonl"
    log.write_text(json.dumps(conv) + "\n", encoding="utf-8")
    r = review_logs(log)
    assert r["by_kind"] == {"bad_json": 1} and r["totals"]["unchecked_calls"] == 2, r["totals"]
    assert r["headline"]["invalid_call_rate"] == 0.5
    assert main(["review", "--logs", str(log), "--out", str(tmp_path / "out"), "--lang", lang]) == 0
    said = capsys.readouterr().err
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for text in (said, page):
        assert ("2 of 2 tool calls had no tools list" in text) if lang == "en" else ("2 次工具调用中有 2 次没有" in text)
    rows = [{"run_id": "r1", "session_id": "s", "turn_id": 1, "round_index": 1, "kind": "tool", "tool_name": "get_order",
             "args_raw": '{"order_id": "A1'},
            {"run_id": "r1", "session_id": "s", "turn_id": 1, "round_index": 2, "kind": "end", "final_status": "done"}]
    tel = tmp_path / "t.jsonl"
    tel.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    r = review_logs(tel, "telemetry")
    assert r["by_kind"] == {"bad_json": 1} and r["totals"]["unchecked_calls"] == 1, r
    assert review_logs(tel, "telemetry", tools=data_file("aftersales_tools.json"))["totals"]["unchecked_calls"] == 0


def _otlp_line(*spans: dict) -> str:
    def kv(k, v):
        return {"key": k, "value": v if isinstance(v, dict) else {"stringValue": v}}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "ab" * 16, "spanId": f"{i:016x}", "name": s["op"], "startTimeUnixNano": str(1772704800 * 10**9 + i),
         "endTimeUnixNano": str(1772704800 * 10**9 + i + 1000), "attributes": [kv(k, v) for k, v in s["attrs"].items()]}
        for i, s in enumerate(spans)]}]}]}) + "\n"


@pytest.mark.parametrize("attribute, value", [
    ("gen_ai.usage.input_tokens", {"stringValue": "12.5"}), ("agentlab.latency_ms", {"stringValue": "fast"}),
    ("agentlab.round_index", {"stringValue": "x"}), ("agentlab.turn_id", {"stringValue": "one"}),
    ("gen_ai.tool.name", {"intValue": "7"}), ("gen_ai.tool.call.arguments", {"doubleValue": 1.5}),
    ("agentlab.retry_count", {"arrayValue": {"values": [{"intValue": "1"}]}})])
def test_an_otlp_attribute_of_another_type_is_read_as_unknown_never_an_unexpected_error(tmp_path, capsys, attribute,
                                                                                        value):
    """Another system's exporter writes what it likes: one attribute of the wrong type stopped the whole review
    with "unexpected ValueError" and no file or line."""
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order",
            "gen_ai.tool.call.arguments": '{"order_id": "A1001"}', "agentlab.round_index": {"intValue": "1"}}
    chat = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": {"intValue": "10"}}
    spans = [{"op": "chat", "attrs": chat}, {"op": "execute_tool", "attrs": tool}]
    target = tool if attribute.startswith(("gen_ai.tool", "agentlab")) else chat
    target[attribute] = value
    log = tmp_path / "odd.jsonl"
    log.write_text(_otlp_line(*spans), encoding="utf-8")
    assert main(["review", "--logs", str(log), "--format", "otel", "--out", str(tmp_path / "out")]) == 0, \
        capsys.readouterr().err
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["totals"]["tool_calls"] == 1


def test_a_byte_order_mark_and_a_gzipped_log_are_read_as_the_text_they_hold(tmp_path):
    """A Windows editor's BOM stopped the review on line 1 ("Unexpected UTF-8 BOM"); a rotated .gz log was "not
    UTF-8 text"."""
    import gzip
    text = OPENAI.read_text(encoding="utf-8")
    want = review_logs(OPENAI)["totals"]
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert review_logs(bom)["totals"] == want
    zipped = tmp_path / "rotated.jsonl.1"  # the name says nothing: its first two bytes do
    zipped.write_bytes(gzip.compress(text.encode("utf-8")))
    assert review_logs(zipped)["totals"] == want
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(text.encode("utf-8"))[:40])
    with pytest.raises(LogError):
        review_logs(cut)


def test_another_systems_otlp_runs_are_counted_by_how_they_ended_and_on_the_day_they_ran(tmp_path):
    """Spans in the GenAI conventions from another system (no agentlab.final_status): every run was "failed", and
    every day "-"."""
    from datetime import UTC, datetime

    def trace(trace_id: str, *spans: dict) -> str:
        line = json.loads(_otlp_line(*spans))
        for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            span["traceId"] = trace_id
        return json.dumps(line) + "\n"
    chat = {"op": "chat", "attrs": {"gen_ai.operation.name": "chat"}}
    root = {"op": "invoke_agent", "attrs": {"gen_ai.operation.name": "invoke_agent"}}

    def tool(name: str) -> dict:
        return {"op": "execute_tool", "attrs": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                                "gen_ai.tool.call.arguments": '{"order_id": "A1001"}'}}
    log = tmp_path / "foreign.jsonl"
    log.write_text(trace("a1" * 16, chat, tool("get_order"), chat, root)
                   + trace("b2" * 16, chat, tool("get_order"), root)
                   + trace("c3" * 16, chat, tool("escalate_to_human"), chat, root), encoding="utf-8")
    r = review_logs(log, "otel")
    day = datetime.fromtimestamp(1772704800, tz=UTC).strftime("%Y-%m-%d")
    assert list(r["days"]) == [day], r["days"]
    h = r["headline"]  # done, failed (it stopped on a call nothing answered), escalated
    assert (h["finished_rate"], h["takeover_rate"], h["unfinished_rate"]) == pytest.approx((1 / 3, 1 / 3, 2 / 3))


def test_an_epoch_written_as_text_gives_its_day():
    from agentlab.evals.logs import run_meta
    assert run_meta({"timestamp": "1772704800"})["day"] == run_meta({"timestamp": 1772704800})["day"] != ""


def test_function_calling_as_the_api_had_it_before_tool_calls_is_read_as_tool_calls(tmp_path):
    """An assistant's function_call was neither counted nor checked, and its function message was "a history the
    API would refuse" for its role."""
    msgs = [{"role": "user", "content": "Where is my order?"},
            {"role": "assistant", "content": None, "function_call": {"name": "get_order", "arguments": '{"orderId": "A1"}'}},
            {"role": "function", "name": "get_order", "content": "{}"},
            {"role": "assistant", "content": "It has shipped."}]
    log = tmp_path / "legacy.jsonl"
    log.write_text(json.dumps({"messages": msgs, "tools": TOOLS}) + "\n"
                   + json.dumps({"request": {"messages": msgs[:1], "tools": TOOLS},
                                 "response": {"choices": [{"message": msgs[1]}]}}) + "\n", encoding="utf-8")
    r = review_logs(log)
    assert r["totals"]["tool_calls"] == 2 and r["by_kind"] == {"invalid_args": 2}, r["by_kind"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_anthropic_messages_are_refused_by_name_never_read_as_a_log_with_no_calls(tmp_path, capsys, lang):
    """Read as chat completions, tool_use blocks held no call: 0 tool calls, nothing wrong, exit 0."""
    msgs = [{"role": "user", "content": "Refund A1001"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "create_refund",
                                               "input": {"order_id": "A1001"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    log = tmp_path / "anthropic.jsonl"
    log.write_text(json.dumps({"messages": msgs}) + "\n", encoding="utf-8")
    assert main(["review", "--logs", str(log), "--out", str(tmp_path / "out"), "--lang", lang]) == 2
    said = capsys.readouterr().err
    assert "tool_use" in said and "anthropic.jsonl:1" in said and "Traceback" not in said, said
    # the reply too, whether logged as a whole response of that API or as a chat-completions choice: the first was
    # "1 conversation, 0 tool calls, nothing wrong" at exit 0
    for response in ({"type": "message", "role": "assistant", "content": msgs[1]["content"]},
                     {"choices": [{"message": msgs[1]}]}):
        log.write_text(json.dumps({"request": {"messages": msgs[:1]}, "response": response}) + "\n", encoding="utf-8")
        assert main(["review", "--logs", str(log), "--out", str(tmp_path / "out"), "--lang", lang]) == 2
        said = capsys.readouterr().err
        assert "tool_use" in said and "anthropic.jsonl:1" in said, said


def _chunk(delta: dict, **more) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1764547200,
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}], **more}


def test_a_streamed_reply_logged_as_its_chunks_is_read_as_the_reply_they_make(tmp_path):
    """A response logged as the chunks of a stream was read as no reply: its calls were neither counted nor checked,
    and the review said nothing was wrong."""
    ask = [{"role": "user", "content": "Where is my order?"}]
    chunks = [_chunk({"role": "assistant", "content": None, "tool_calls": [
                  {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_", "arguments": ""}}]}),
              _chunk({"tool_calls": [{"index": 0, "function": {"name": "order", "arguments": '{"orderId": '}}]}),
              _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"A1"}'}},
                                     {"index": 1, "id": "call_2", "function": {"name": "get_order",
                                                                               "arguments": '{"order_id": "A1001"}'}}]}),
              _chunk({}, usage={"prompt_tokens": 90, "completion_tokens": 12})]
    log = tmp_path / "streamed.jsonl"
    log.write_text(json.dumps({"request": {"messages": ask, "tools": TOOLS}, "response": chunks}) + "\n",
                   encoding="utf-8")
    [run] = list(read_logs(log))
    calls = run.messages[-1]["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("call_1", "get_order", '{"orderId": "A1"}'), ("call_2", "get_order", '{"order_id": "A1001"}')]
    assert run.usage == ((90, 12),) and run.day == "2025-12-01"
    r = review_logs(log)
    assert r["totals"]["tool_calls"] == 2 and r["by_kind"].get("invalid_args") == 1, r
    # one chunk alone as the response, and a text reply streamed: read the same way
    log.write_text(json.dumps({"request": {"messages": ask}, "response": _chunk({"content": "It has "})}) + "\n"
                   + json.dumps({"request": {"messages": ask}, "response": [_chunk({"content": "It has "}),
                                                                            _chunk({"content": "shipped."})]}) + "\n",
                   encoding="utf-8")
    assert [r.messages[-1]["content"] for r in read_logs(log)] == ["It has ", "It has shipped."]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_streamed_chunks_a_line_each_or_a_list_of_no_chunks_are_refused_by_name(tmp_path, capsys, lang):
    log = tmp_path / "chunks.jsonl"
    log.write_text(json.dumps(_chunk({"content": "Hi"})) + "\n", encoding="utf-8")
    assert main(["review", "--logs", str(log), "--out", str(tmp_path / "out"), "--lang", lang]) == 2
    said = capsys.readouterr().err
    assert "chat.completion.chunk" in said and "chunks.jsonl:1" in said and "Traceback" not in said, said
    log.write_text(json.dumps({"request": {"messages": [{"role": "user", "content": "hi"}]},
                               "response": [{"text": "hi"}]}) + "\n", encoding="utf-8")
    assert main(["review", "--logs", str(log), "--out", str(tmp_path / "out"), "--lang", lang]) == 2
    said = capsys.readouterr().err
    assert "chat.completion.chunk" in said and "response" in said and "Traceback" not in said, said


def _exchanges(user: str, calls: list[str]) -> list[dict]:
    """One conversation logged as exchanges: each request the history so far, each response one call, then an
    answer."""
    history: list[dict] = [{"role": "user", "content": user}]
    out = []
    for i, args in enumerate(calls):
        call = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"{user[:3]}{i}", "type": "function", "function": {"name": "get_order", "arguments": args}}]}
        out.append({"request": {"messages": list(history), "tools": TOOLS}, "response": {"choices": [{"message": call}]}})
        history += [call, {"role": "tool", "tool_call_id": f"{user[:3]}{i}", "content": '{"status": "shipped"}'}]
    out.append({"request": {"messages": list(history), "tools": TOOLS},
                "response": {"choices": [{"message": {"role": "assistant", "content": "It has shipped."}}]}})
    return out


def test_exchanges_of_conversations_logged_between_each_other_are_joined_as_when_logged_one_after_another(tmp_path):
    """A service logs its users' exchanges as they come. Joined only to the line before, three conversations
    interleaved were read as nine, with 16 tool calls for 6 and 5 findings for 2: each exchange counted again the
    calls and the faults of the history it repeats."""
    same = '{"order_id": "A1001"}'
    convs = [_exchanges("Where is A1001?", [same, same, same]), _exchanges("Where is A1002?", ['{"order_id": "A1002"}']),
             _exchanges("Is A1003 late?", ['{"orderId": "A1003"}', '{"order_id": "A1003"}'])]
    one_by_one, between = tmp_path / "one_by_one.jsonl", tmp_path / "between.jsonl"
    one_by_one.write_text("".join(json.dumps(x) + "\n" for c in convs for x in c), encoding="utf-8")
    mixed = [c[i] for i in range(4) for c in convs if i < len(c)]
    between.write_text("".join(json.dumps(x) + "\n" for x in mixed), encoding="utf-8")
    want, got = review_logs(one_by_one), review_logs(between)
    assert want["totals"]["runs"] == 3 and want["by_kind"] == {"repeated_call": 1, "invalid_args": 1}, want["by_kind"]
    assert got["totals"] == want["totals"] and got["by_kind"] == want["by_kind"]
    assert json.dumps(got["headline"], sort_keys=True) == json.dumps(want["headline"], sort_keys=True)
    # given out in the order they began (the first line of each)
    assert [r.line for r in read_logs(between)] == [1, 2, 3]


def test_two_users_who_open_alike_stay_two_conversations_and_a_log_of_many_at_once_stays_bounded(tmp_path, monkeypatch):
    from agentlab.evals import exchanges
    a, b = _exchanges("hi", ['{"order_id": "A1001"}']), _exchanges("hi", ['{"order_id": "A1002"}'])
    log = tmp_path / "alike.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in [a[0], b[0], a[1], b[1]]), encoding="utf-8")
    runs = list(read_logs(log))
    assert len(runs) == 2 and sorted(len(r.messages) for r in runs) == [4, 4]
    # past OPEN_EXCHANGES conversations at once, the one that began first is given out as it is, and what goes on
    # from it later begins one of its own (here each, as three go on past a room for two)
    monkeypatch.setattr(exchanges, "OPEN_EXCHANGES", 2)
    convs = [_exchanges(f"Where is A100{k}?", ['{"order_id": "A1001"}']) for k in range(3)]
    log.write_text("".join(json.dumps(c[i]) + "\n" for i in range(2) for c in convs), encoding="utf-8")
    assert [(r.line, len(r.messages)) for r in read_logs(log)] == [(1, 2), (2, 2), (3, 2), (4, 4), (5, 4), (6, 4)]
    log.write_text("".join(json.dumps(x) + "\n" for c in convs[:2] for x in c), encoding="utf-8")
    assert [(r.line, len(r.messages)) for r in read_logs(log)] == [(1, 4), (3, 4)]  # two at once: room enough


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_conversations_with_no_tool_call_anywhere_are_not_said_to_be_nothing_wrong(tmp_path, capsys, lang):
    """Conversations whose calls the review never read were "1 conversation reviewed" and "Nothing wrong was found".
    Any log whose conversations hold no call now says so (here: spans of chat turns that hold words only)."""
    parts = [{"type": "text", "content": "Your refund is on its way."}]
    attrs = {"gen_ai.operation.name": "chat",
             "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])}
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat", "startTimeUnixNano": "1764547200000000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    log = tmp_path / "chat_only.jsonl"
    log.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n", encoding="utf-8")
    assert main(["review", "--logs", str(log), "--format", "otel", "--out", str(tmp_path / "out"), "--lang", lang]) == 0
    err = capsys.readouterr().err
    said = {"en": "no tool call anywhere", "zh": "没有一次工具调用"}[lang]
    assert said in err, err
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert said in page and {"en": "Nothing wrong was found", "zh": "没有发现问题"}[lang] not in page
    # a log with calls says nothing of the kind
    assert main(["review", "--logs", str(OPENAI), "--out", str(tmp_path / "calls"), "--lang", lang]) == 0
    assert said not in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kinds_still_tied_after_their_class_are_each_named_never_one_picked_by_its_name(lang):
    """The sample's three schema kinds tied at one finding each, and "fix first" named the one whose name sorts
    last; the weekly review says a tie as a tie."""
    from agentlab.evals.log_report import largest_text
    from agentlab.i18n import t
    report = review_logs(OPENAI, lang=lang)
    tied = report["largest"]["tied"]
    assert {k["code"] for k in tied} == {"BAD_JSON", "INVALID_ARGS", "BAD_REQUEST"}
    said = largest_text(report, lang)
    assert all(t("logs.kind." + k["kind"], lang) in said for k in tied), said
    # the class first, with its count: three of the kinds table's six kinds at one each read as a puzzle until the
    # sentence said they were the three of the largest class
    from agentlab.evals.failure_classes import class_name
    assert said.startswith(t("logs.largest_tied_class", lang).split("{")[0]), said
    assert class_name("schema", lang) in said and "3" in said, said
    # kinds tied across two classes as large as each other: both classes named, neither called "the largest"
    two = {**report, "failure_classes": {"schema": 1, "loops": 1},
           "largest": {**report["largest"], "tied": [{"kind": "invalid_args", "code": "INVALID_ARGS", "stage": "structure"},
                                                     {"kind": "repeated_call", "code": "LOOP_DETECTED", "stage": "execution"}]}}
    said = largest_text(two, lang)
    assert class_name("schema", lang) in said and class_name("loops", lang) in said, said
    assert said.startswith({"en": "Fix first, tied: ", "zh": "优先修复（并列）"}[lang]), said
    one = review_logs(TELEMETRY, "telemetry", tools=data_file("aftersales_tools.json"))
    assert "tied" not in one["largest"] or len(one["largest"]["tied"]) > 1


def test_a_candidate_cases_desk_is_named_in_the_pages_language():
    """Each candidate case on the Chinese page read "(aftersales)", the desk's id."""
    from agentlab.scenarios import SCENARIOS
    page = review_html(review_logs(OPENAI, lang="zh"), "zh", page=True)
    cases = page[page.index('class="cases"'):]
    assert "aftersales" not in cases.split("</ul>")[0] and f"（{SCENARIOS['aftersales'].title['zh']}）" in cases


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cases_say_how_many_they_are_of_and_name_no_desk_for_a_conversation_none_can_replay(tmp_path, lang):
    """A 50 MB log of 16,545 conversations with findings said "20 conversations could be kept", as if those were
    all; and a case whose tools no desk has was labelled "(After-sales desk)" beside "calls tools no desk of the
    workbook has"."""
    from agentlab.evals.log_review import CASES
    from agentlab.scenarios import SCENARIOS
    exchange = [{"role": "user", "content": "refund A1001"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "get_order", "arguments": "{\"orderId\": \"A1001\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": true}"},
                {"role": "assistant", "content": "done"}]
    many = tmp_path / "many.jsonl"
    many.write_text("".join(json.dumps({"messages": exchange}) + "\n" for _ in range(CASES + 7)), encoding="utf-8")
    from agentlab.resources import data_file
    report = review_logs(many, "openai", tools=data_file("aftersales_tools.json"), lang=lang)
    assert report["totals"]["runs_with_findings"] == CASES + 7 and len(report["cases"]) == CASES
    for page in (True, False):
        said = review_html(report, lang, page=page)
        assert f"<p>{t('logs.cases_first', lang, n=CASES, total=CASES + 7)}</p>" in said  # a sentence of its own
    theirs = [dict(m) for m in exchange]
    theirs[1] = {**theirs[1], "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "查询订单", "arguments": "{\"单号\": \"A1001\""}}]}
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"messages": theirs}, ensure_ascii=False) + "\n", encoding="utf-8")
    page = review_html(review_logs(own, "openai", lang=lang), lang, page=True)
    cases = page[page.index('class="cases"'):].split("</ul>")[0]
    assert t("logs.case_not_runnable_page", lang) in cases and SCENARIOS["aftersales"].title[lang] not in cases
    assert t("logs.cases_first", lang, n=1, total=1) not in page


def test_a_finding_names_its_message_as_a_reader_counts_them():
    """The review said "message 4" of the fifth message (counted from 0), beside the weekly review's numbered list
    of the same conversation (counted from 1); in Chinese "第 4 条消息" was plainly wrong. Each finding's number is
    now the message's place counted from 1: the assistant message that asked for the call it names."""
    lines = OPENAI.read_text(encoding="utf-8").splitlines()
    r = review_logs(OPENAI, "openai")
    checked = 0
    for f in r["findings"]:
        row = json.loads(lines[int(f["where"].rsplit(":", 1)[1]) - 1])
        if "messages" not in row:  # an exchange of a conversation logged call by call: counted across its exchanges
            continue
        said = row["messages"][f["message"] - 1]
        if f["tool"]:
            assert said["role"] == "assistant", f
            assert f["tool"] in [c["function"]["name"] for c in said.get("tool_calls") or []], f
            checked += 1
        else:  # a tool message answering no call: that tool message
            assert said["role"] == "tool", f
    assert checked >= 3
    assert [f["message"] for f in r["findings"] if f["kind"] == "invalid_args"] == [3]


def test_a_file_with_nothing_to_review_shows_its_sentence_and_no_empty_tables(tmp_path):
    """An empty or blank-lines file said "No conversation was read", then a headline table of header cells and a "-"
    under every section."""
    from agentlab.evals.log_report import review_html
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    for lang in ("en", "zh"):
        page = review_html(review_logs(path, "openai", lang=lang), lang, page=True)
        assert "<table" not in page and 'id="findings"' not in page and "report.json" not in page
        assert t("logs.totals", lang, runs=0, calls=0, findings=0, bad=0) not in page  # no all-clear of zeros
        assert t("logs.nothing_read", lang, format="openai")[:12] in page


def test_a_credential_named_argument_never_reaches_the_candidate_cases(tmp_path):
    """The findings showed "password": "[secret removed]", but the cases replayed it as sent: each string of the
    arguments was redacted alone, and "hunter2" is no secret without the name beside it."""
    call = {"id": "c1", "type": "function", "function": {
        "name": "create_refund", "arguments": json.dumps({"orderId": "A1001", "password": "hunter2",
                                                          "auth": {"api_key": "plain-words-key"}})}}
    line = {"messages": [{"role": "user", "content": "refund A1001"},
                         {"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": "{}"},
                         {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c2"}]}],
            "tools": TOOLS}
    log = tmp_path / "x.jsonl"
    log.write_text(json.dumps(line) + "\n", encoding="utf-8")
    write_report(review_logs(log), tmp_path / "out")
    for name in ("report.html", "report.json", "cases.jsonl"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert "hunter2" not in text and "plain-words-key" not in text, name
    assert "A1001" in (tmp_path / "out" / "cases.jsonl").read_text(encoding="utf-8")


def test_a_log_a_chinese_windows_saved_is_read_as_gb18030_and_said_so(tmp_path):
    """A team's log saved in GBK was refused as "not UTF-8 text", with nothing a page could do about it; the same
    file saved as UTF-8 reviews the same. A UTF-8 log with one broken line stays UTF-8, that line read past."""
    from agentlab.evals.log_report import unread_text
    from agentlab.resources import data_file
    lines = data_file("logs_openai_sample.jsonl").read_text(encoding="utf-8").splitlines()
    chinese = [line.replace("Refund order A1001 please.", "请给订单 A1001 退款。") for line in lines]
    gbk, utf8 = tmp_path / "mine_gbk.jsonl", tmp_path / "mine.jsonl"
    gbk.write_bytes("\n".join(chinese).encode("gbk"))
    utf8.write_text("\n".join(chinese), encoding="utf-8")
    read, same = review_logs(gbk, "openai", lang="zh"), review_logs(utf8, "openai", lang="zh")
    assert read["totals"] == same["totals"] and read["settings"]["encoding"] == "gb18030"
    assert "GB18030" in unread_text(read, "zh") and "GB18030" in unread_text(read, "en")
    assert "encoding" not in same["settings"] and unread_text(same, "zh") == ""
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes("\n".join(chinese[:2]).encode("utf-8") + b"\n" + "再来一行".encode("gbk") + b"\n"
                       + "\n".join(chinese[2:]).encode("utf-8"))
    kept = review_logs(broken, "openai", lang="en")
    assert "encoding" not in kept["settings"] and kept["totals"]["unread_lines"] == 1
    # the broken line before any UTF-8 Chinese one: still UTF-8 (it switched the whole file to GB18030, mojibake)
    first = tmp_path / "first.jsonl"
    first.write_bytes(lines[0].encode() + b"\n" + b'{"messages": [{"role": "user", "content": "Garc\xeda"}]}\n'
                      + '{"messages": [{"role": "user", "content": "请给订单 A1001 退款"}]}\n'.encode()
                      + "\n".join(chinese[1:]).encode("utf-8"))
    read_first = review_logs(first, "openai", lang="en")
    assert "encoding" not in read_first["settings"] and read_first["totals"]["unread_lines"] == 1


def test_a_padded_spreadsheet_header_is_read_at_once():
    """One pattern over the whole first line backtracked for minutes on a header padded with spaces."""
    import time

    from agentlab.evals.logs import _csv_header
    started = time.process_time()
    assert _csv_header(", ".join(f"col_{i}    " for i in range(12)) + ", latency (ms)")
    assert not _csv_header(("a" + " " * 10 + ",") * 12 + "{")
    assert time.process_time() - started < 5  # (it took minutes: a hang, not a speed figure)


@pytest.mark.parametrize("fmt", ["openai", "telemetry"])
def test_a_spreadsheet_export_is_said_as_one_not_as_json_that_expected_a_value(tmp_path, fmt):
    from agentlab.evals.log_review import review_logs as review
    csv = tmp_path / "mine.csv"
    csv.write_text('\ufeffsession_id,tool_name,"error_code",latency_ms\ns1,get_order,,12\n', encoding="utf-8")
    with pytest.raises(LogError) as said:
        review(csv, fmt)
    assert "CSV" in said.value.localized("en") and "JSONL" in said.value.localized("zh")
    assert "Expecting" not in said.value.localized("en")


@pytest.mark.parametrize("fmt", ["openai", "telemetry"])
def test_a_json_array_is_said_as_one_in_the_readers_words(tmp_path, fmt):
    """An indented JSON array of conversations was "not valid JSON (Expecting value)", though it is valid JSON; one
    on a single line was "a JSON list", Python's name for it, in the Chinese sentence too."""
    from agentlab.evals.log_review import review_logs as review
    items = [{"messages": [{"role": "user", "content": "hi"}]}] * 2
    spread, one_line = tmp_path / "spread.json", tmp_path / "one_line.json"
    spread.write_text(json.dumps(items, indent=1), encoding="utf-8")
    one_line.write_text(json.dumps(items) + "\n", encoding="utf-8")
    with pytest.raises(LogError) as said:
        review(spread, fmt)
    assert "JSON array" in said.value.localized("en") and "JSON 数组" in said.value.localized("zh")
    assert "Expecting" not in said.value.localized("en") and "not valid JSON" not in said.value.localized("en")
    with pytest.raises(LogError) as said:
        review(one_line, fmt)
    assert "JSON array" in said.value.localized("en") and "JSON 数组" in said.value.localized("zh")
    assert "list" not in said.value.localized("zh")


def test_a_refused_call_the_logs_say_ran_twice_is_still_a_double_write_and_a_tools_file_is_named(tmp_path):
    """A refund of 99999 over a limit of 5000, sent twice and answered ok twice by an unguarded desk: the review
    counted two invalid calls and no double write, and a tools file uploaded beside the logs changed nothing a reader
    could see. A refused call its tool refused too is no write at all."""
    tools = [{"type": "function", "function": {"name": "create_refund", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number", "maximum": 5000}},
        "required": ["order_id", "amount"]}}}]

    def log(answer):
        call = {"type": "function", "function": {"name": "create_refund", "arguments": '{"order_id": "A1", "amount": 99999}'}}
        msgs = [{"role": "user", "content": "refund"}]
        for i in (1, 2):
            msgs += [{"role": "assistant", "content": None, "tool_calls": [{**call, "id": f"c{i}"}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": answer}]
        path = tmp_path / f"{len(answer)}.jsonl"
        path.write_text(json.dumps({"messages": [*msgs, {"role": "assistant", "content": "done"}], "tools": tools}) + "\n")
        return path
    ran = review_logs(log('{"ok": true}'))
    assert ran["by_kind"] == {"invalid_args": 2, "duplicate_write": 1}
    assert ran["failure_classes"]["idempotency"] == 1, ran["failure_classes"]  # in the five classes too
    assert review_logs(log('{"ok": false, "error": "over the limit"}'))["by_kind"] == {"invalid_args": 2}
    # a refusal written as a sentence is no sign it ran
    assert review_logs(log("退款失败：金额超过上限 5000，未执行"))["by_kind"] == {"invalid_args": 2}
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps(tools))
    checked = review_logs(log('{"ok": true}'), tools=spec, lang="zh")
    assert checked["settings"]["tools"] == "tools.json" and checked["settings"]["tools_count"] == 1
    assert "tools.json" in review_html(checked, "zh") and "tools.json" not in review_html(ran, "en")


def test_a_telemetry_finding_names_its_own_line_not_its_runs_first(tmp_path):
    """Findings of a telemetry run all named the run's first line (traces.jsonl:99 for calls on lines 100-122): a
    reader opening the file there found the run's start, not the call."""
    from agentlab.evals.log_review import review_logs
    rows = [{"run_id": "other", "kind": "end", "round_index": 1, "final_status": "done"}]
    rows += [{"run_id": "r", "kind": "tool", "round_index": i + 1, "tool_name": "create_refund",
              "args_raw": '{"order_id": "A1"}', "exec_ok": True} for i in range(3)]
    rows.append({"run_id": "r", "kind": "end", "round_index": 4, "final_status": "done"})
    log = tmp_path / "rows.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    found = review_logs(log, "telemetry")["findings"]
    assert [(f["where"], f["kind"]) for f in found] == [("rows.jsonl:3", "duplicate_write"), ("rows.jsonl:4", "repeated_call")]


def test_an_error_code_a_tool_answered_with_is_read_in_a_conversation_as_in_a_telemetry_row(tmp_path):
    """A tool answering {"ok": false, "error": {"code": "TIMEOUT"}} added nothing to unreadable errors in an openai log
    (the shipped sample's TIMEOUT among them), where the same conversation as telemetry rows counted it."""
    from agentlab.evals.log_review import review_logs
    read = {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1001"}'}}
    msgs = [{"role": "user", "content": "where is A1001"},
            {"role": "assistant", "content": None, "tool_calls": [read]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"ok": false, "error": {"code": "TIMEOUT", "message": "slow"}}'},
            {"role": "assistant", "content": "Sorry, the order service is slow."}]
    log = tmp_path / "chat.jsonl"
    log.write_text(json.dumps({"messages": msgs}) + "\n", encoding="utf-8")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"run_id": "r", "kind": "tool", "round_index": 1, "tool_name": "get_order",
                                "args_raw": '{"order_id": "A1001"}', "exec_ok": False, "error_code": "TIMEOUT"}) + "\n"
                    + json.dumps({"run_id": "r", "kind": "end", "round_index": 2, "final_status": "done"}) + "\n",
                    encoding="utf-8")
    chat, tel = review_logs(log, "openai"), review_logs(rows, "telemetry")
    assert chat["failure_classes"] == tel["failure_classes"] and chat["failure_classes"]["unreadable_errors"] == 1
    assert [(f["kind"], f["code"]) for f in chat["findings"]] == [("logged_error", "TIMEOUT")]
    # a word that is no code of the taxonomy is not taken for one
    msgs[2]["content"] = '{"ok": false, "error": {"code": "E1234"}}'
    log.write_text(json.dumps({"messages": msgs}) + "\n", encoding="utf-8")
    assert review_logs(log, "openai")["failure_classes"]["unreadable_errors"] == 0


def test_a_tool_answer_of_plain_data_says_it_ran_and_a_sentence_does_not():
    from agentlab.evals.exchanges import said_done
    assert said_done('{"refund_id": "R7", "amount": 199}') and said_done({"ok": True})
    assert not said_done('{"ok": false, "error": {"code": "RULE_VIOLATION"}}') and not said_done('{"error": "no"}')
    assert not said_done("退款失败：金额超过上限，未执行") and not said_done("{}") and not said_done('{"status": "error"}')


def test_what_to_fix_first_is_never_a_guard_that_worked(tmp_path):
    """The telemetry sample's "fix first" tied NEEDS_APPROVAL, a rule-blocked finding the same report sets apart as
    a guard working, with the failures to fix."""
    from agentlab.evals.log_review import review_logs
    from agentlab.resources import data_file
    largest = review_logs(data_file("logs_telemetry_sample.jsonl"), "telemetry")["largest"]
    assert all(k["stage"] != "rule_blocked" for k in largest.get("tied", [largest])), largest
    # a log whose only findings are guards that worked still names them
    rows = [{"run_id": "r", "kind": "tool", "round_index": 1, "tool_name": "create_refund", "args_raw": "{}",
             "exec_ok": False, "error_code": "NEEDS_APPROVAL", "error_category": "fatal", "error_stage": "rule_blocked"},
            {"run_id": "r", "kind": "end", "round_index": 2, "final_status": "escalated"}]
    log = tmp_path / "rows.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert review_logs(log, "telemetry")["largest"]["code"] == "NEEDS_APPROVAL"


def test_a_tools_file_checks_every_call_even_where_the_conversation_carried_its_own_tools(tmp_path):
    """The page said "every tool call is checked against your tools file, not only against the tools each conversation
    was sent", and a stricter file changed nothing: it was read only for a conversation with no tools list."""
    strict = copy.deepcopy(TOOLS)
    for spec in strict:
        fn = spec.get("function", spec)
        if fn["name"] == "get_order":
            fn["parameters"]["properties"]["order_id"]["pattern"] = "^B\\\\d{4}$"
    file = tmp_path / "strict.json"
    file.write_text(json.dumps(strict))
    msgs = [{"role": "user", "content": "where is my order A1001?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1001"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
            {"role": "assistant", "content": "It has shipped."}]
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"messages": msgs, "tools": TOOLS}) + "\n")
    assert review_logs(log)["totals"]["findings"] == 0  # the conversation's own tools let it through
    found = review_logs(log, tools=file)
    assert found["totals"]["findings"] == 1, found["findings"]
    assert review_logs(log, tools=data_file("aftersales_tools.json"))["totals"]["findings"] == 0  # the same: nothing
