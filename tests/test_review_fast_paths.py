"""Each shortcut review --logs takes on an openai log gives what the long way gives: a tools list a line repeats read
once (logs._Tools), a tools tuple given again and a call checked once (log_tools.Registries), an answer or a time read
without parsing it whole, records made without their __init__, a conversation's counts read from its coded events.
Each test holds the shortcut against the long way (the code before it, written out here where it is gone), so it
fails when the shortcut says something else. Speed is benchmarks/bench_review.py's, never measured here."""
from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest
from conftest import ROOT
from test_review_speed import TOOLS, _conversations, _write

from agentlab.evals import exchanges, log_review, log_tools, logs
from agentlab.evals.failure_classes import run_classes
from agentlab.evals.metrics import went_wrong
from agentlab.runs import Run
from agentlab.tools import Registry

SPECS = json.loads(TOOLS.read_text(encoding="utf-8"))
SMALL = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object", "properties": {
    "order_id": {"type": "string", "maxLength": 8}}, "required": ["order_id"], "additionalProperties": False}}}]


def _lines() -> list[str]:
    """Lines a log may hold, the same tools text again and again among them, and lines no JSON reader takes."""
    tools, small = json.dumps(SPECS), json.dumps(SMALL)
    msgs = '[{"role": "user", "content": "hi"}]'
    return [
        f'{{"messages": {msgs}, "tools": {tools}, "metadata": {{"timestamp": "2026-03-03T10:00:00Z"}}}}',
        f'{{"messages": {msgs}, "tools": {tools}}}',  # the same text: the list read before
        f'{{"tools": {small}, "messages": {msgs}}}',
        f'{{"tools":{small},"messages":{msgs}}}',  # no spaces
        f'  {{ "tools" :\t{small} ,\n"messages" : {msgs} }}  ',  # white space of every kind JSON has
        f'{{"messages": {msgs}, "tools": {small}, "tools": {tools}}}',  # a key twice: its first place, its last value
        f'{{"messages": {msgs}, "\\u0074ools": {small}}}',  # a key written with an escape
        f'{{"messages": {msgs}, "tools": {small.replace("8", "8.0")}}}',  # 8.0 is not 8
        f'{{"messages": {msgs}, "tools": {small.replace("false", "0")}}}',  # 0 is not false
        f'{{"messages": {msgs}, "tools": {small[:-1]}, {{"x": NaN}}]}}',  # NaN, read as null
        f'{{"request": {{"messages": {msgs}, "tools": {small}}}, "response": {{"choices": []}}}}',
        f'{{"request": {{"tools": {tools}, "messages": {msgs}}}, "response": null}}',
        f'{{"request": "no", "tools": {small}}}',
        f'{{"messages": {msgs}, "tools": "none"}}',
        f'{{"messages": {msgs}, "tools": [1, 2]}}',
        '{}', ' {} ', '[]', '"text"', '{"a": 1}x', '{"a": 1,}', '{"a" 1}', '{"a": }', '{"tools": [1, 2}',
        f'{{"messages": {msgs}, "tools": {small}', f'{{"messages": {msgs}, "tools": {small}}} {{}}',
        '{"a": "\x01"}', '{"a": "unterminated}', '{' + '"a": ' * 3 + '1}', '{"a": [' + '[' * 5000 + ']' * 5000 + ']}',
        '\ufeff{"a": 1}', '{"a": 1}\r', '{"a": -0.0, "b": 1e400, "c": Infinity}',
        # the known list's text where the top-level tools is not: in a message before it, or as a message's "tools"
        f'{{"messages": [{{"role": "user", "content": "x", "tools": {small}}}], "tools": {tools}}}',
        f'{{"messages": [{{"role": "user", "content": "x", "tools": {small}}}], "tools": [{small}]}}',
        f'{{"messages": [{{"role": "user", "tools": {small}}}]}}',
        f'{{"messages": {msgs}, "tools": [{small}, 1]}}',  # the list only the start of another
        f'{{"messages": {msgs}, "tools": {small}, "n": "\\u0001tools\\u0001"}}',  # the hole's own text, as a log's
        f'{{"messages": {msgs}, "tools": {small}, "n": "\u0001tools\u0001"}}',
        f'{{"messages": [{{"role": "user", "tools": {small}}}], "tools": "\\u0001tools\\u0001"}}',
        # the hole's string spelt another way (a letter escaped): it reads as the hole all the same
        f'{{"messages": [{{"role": "user", "tools": {small}}}], "tools": "\\u0001\\u0074ools\\u0001"}}',
        f'{{"tools": {small}, "messages": {msgs}, "tools": "\\u0001tool\\u0073\\u0001"}}',
        f'{{"request": {{"messages": [{{"role": "user", "tools": {small}}}], "tools": "\\u0001\\u0074ools\\u0001"}}}}',
        f'{{"messages": {msgs}, "tools": {small}, "deep": ' + '[' * 1000 + ']' * 1000 + '}',  # past json's depth
        f'{{"messages": {msgs}, "tools": {small}, "n": 123456789012345678901234567890}}',  # past 64 bits: exact
        f'{{"messages": {msgs}, "tools": {small}, "t": "1733540000000000000", "n": -0}}',
        f'{{"messages": {msgs}, "tools": {small}, "x": "\\ud800"}}',  # a lone surrogate's escape
        f'{{"request": {{"messages": {msgs}, "tools": {small}}}, "tools": 0}}',
    ]


def _strict(value) -> str:
    return repr(value)  # tells 1 from 1.0 and from True, and keys in another order apart


def test_a_line_read_with_its_tools_shared_is_the_line_json_reads():
    shared = logs._Tools()
    for _ in range(2):  # the second time round, every tools text is one met before
        for text in _lines():
            got = shared.object(text.rstrip("\r\n"))
            try:
                want = logs._DECODE(text.rstrip("\r\n"))
            except (ValueError, RecursionError):
                assert got is None, text[:80]
                continue
            if got is not None:
                assert _strict(got) == _strict(want), text[:80]


def test_a_line_read_with_its_tools_shared_says_what_a_line_read_alone_says(tmp_path):
    """The error a line gets names the same line and the same reason, the tools shared or not."""
    for n, text in enumerate(_lines(), 1):
        said = []
        for shared in (None, logs._Tools()):
            try:
                said.append(_strict(logs._object("f.jsonl", n, text, shared)))
            except logs.LogError as exc:
                said.append(str(exc))
        assert said[0] == said[1], text[:80]


def test_a_tools_text_met_before_gives_the_list_and_the_tuple_made_then(tmp_path):
    lines = [{"messages": [{"role": "user", "content": f"q{k}"}], "tools": [SPECS, SMALL][k % 2]} for k in range(6)]
    path = _write(tmp_path / "l.jsonl", lines)
    runs = list(logs.read_logs(path, shared_tools=True))
    assert runs == list(logs.read_logs(path))
    assert runs[0].tools is runs[2].tools is runs[4].tools and runs[1].tools is runs[3].tools
    assert runs[0].tools is not runs[1].tools
    alone = list(logs.read_logs(path))
    assert alone[0].tools == alone[2].tools and alone[0].tools is not alone[2].tools  # not shared unless asked


def test_a_log_read_with_its_tools_shared_is_the_log_read_alone(tmp_path):
    for path in (_write(tmp_path / "c.jsonl", _conversations(120)), ROOT / "data" / "logs_openai_sample.jsonl"):
        alone, shared = list(logs.read_logs(path)), list(logs.read_logs(path, shared_tools=True))
        assert alone == shared and [repr(r) for r in alone] == [repr(r) for r in shared]


def test_a_bad_tools_list_is_refused_the_same_shared_or_not(tmp_path):
    path = _write(tmp_path / "bad.jsonl", [{"messages": [{"role": "user", "content": "x"}], "tools": SMALL},
                                          {"messages": [{"role": "user", "content": "x"}], "tools": [1]}])
    said = []
    for share in (False, True):
        with pytest.raises(logs.LogError) as exc:
            list(logs.read_logs(path, shared_tools=share))
        said.append(str(exc.value))
    assert said[0] == said[1]


def test_a_tools_tuple_given_again_finds_its_registry_without_its_pickle(monkeypatch):
    regs = log_tools.Registries(None)
    tools = tuple(SPECS)
    first = regs.get(tools)
    assert isinstance(first, Registry) and regs.get(tuple(SPECS)) is first  # an equal list: by its pickle
    monkeypatch.setattr(log_tools.pickle, "dumps", lambda *a, **k: pytest.fail("pickled again"))
    assert regs.get(tools) is first  # the same tuple: by itself


def test_a_call_checked_once_is_the_call_checked_each_time(monkeypatch):
    reg = Registry.from_specs(SPECS)
    calls = [("get_order", '{"order_id": "A1001"}'), ("get_order", '{"orderId": "A1001"}'), ("get_order", '{bad'),
             ("get_ordr", '{"order_id": "A1001"}'), ("get_order", ""), ("get_order", "[1]"), ("get_order", '"x"'),
             ("create_refund", '{"order_id": "A1001", "amount": 199, "reason": "user_cancel"}'),
             ("create_refund", '{"order_id": "A1001", "amount": "199"}'), ("get_order", {"order_id": "A1001"}),
             ("get_order", '{"order_id": "' + "x" * 2000 + '"}'), ("get_order", '{"order_id": "\\ud800"}')]
    regs = log_tools.Registries(None)
    want = [log_tools._read(reg.check(name, raw, rules=False)) for name, raw in calls]
    assert [regs.check(reg, name, raw) for name, raw in calls] == want
    made = []
    monkeypatch.setattr(reg, "check", lambda *a, **k: made.append(a) or Registry.check(reg, *a, **k))
    assert [regs.check(reg, name, raw) for name, raw in calls] == want
    # checked again: a dict's arguments and a text past the length kept, never the short texts
    assert [a[1] for a in made] == [{"order_id": "A1001"}, calls[10][1]]
    assert want[0] == (True, True, None, '{"order_id":"A1001"}') and want[2][:3] == (False, None, "BAD_JSON")


def _answered_parsed(content) -> bool:
    """exchanges.answered's rule, read on the parsed answer every time."""
    return exchanges._text_ran(content) if isinstance(content, str) else exchanges._value_ran(content)


def test_an_answer_read_without_parsing_is_read_as_parsed():
    texts = ["{}", '{"ok": true}', '{"ok": false}', '{"ok":false}', '{"error": "x"}', '{"\\u0065rror": 1}',
             '{"o\\u006b": false}', "error: no", "ERROR", "Error 500", "eh", "", " error", "[1]", "null", '"error"',
             "{'ok': False}", "ok", "İ", "e", "E", '{"data": {"error": 1}}', '{"errors": []}', "[\"error\"]",
             '{"result": "no error"}', "19.9", "not json", "{bad", '{"ok": null}', "\\error", '{"isError": true}',
             '{"isError": false}', '{"ok": true, "error": null}', '{"data": 1, "error": ""}', '{"Error": 1}',
             '{"success": false}', '{"status": "error"}', '{"status": "ok"}', '{"errors": [{"message": "x"}]}',
             '"Error: x"', "  Error: x", '{"ok": "false"}', "An error occurred while running the tool. Please try again.",
             '{"content": [{"type": "text", "text": "done"}]}']
    for content in [*texts, None, 3, {"ok": False}, {"error": 1}, {"x": 1}, ["error"], True, {"isError": True},
                    {"error": None}]:
        assert exchanges.answered(content) == _answered_parsed(content), content
    # an answer that says it failed, and one that says it did not (the error field there, and empty)
    assert [exchanges.answered(c) for c in ('{"isError": true, "content": []}', {"ok": True, "error": None},
                                             '{"data": {"id": 1}, "error": null}', '{"error": "declined"}',
                                             '{"success": false}', '{"status": "error"}', '{"errors": ["x"]}',
                                             '"Error: boom"', "  error: boom",
                                             "An error occurred while running the tool. Please try again. Error: x")] == \
        [False, True, True, False, False, False, False, False, False, False]


def _day_parsed(value) -> str:
    """logs._day before it read a UTC time by its date."""
    try:
        if isinstance(value, bool):
            return ""
        if isinstance(value, (int, float)):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d")
        if isinstance(value, str) and value:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return (stamp.astimezone(UTC) if stamp.tzinfo else stamp).strftime("%Y-%m-%d")
    except (ValueError, OverflowError, OSError):
        pass
    return ""


def test_a_time_in_utc_read_by_its_date_is_the_day_it_parses_to():
    dates = ["2026-03-03", "2024-02-29", "2026-02-29", "2026-13-01", "2026-00-10", "2026-01-00", "2026-04-31",
             "0000-01-01", "0001-01-01", "0999-12-31", "9999-12-31", "2026-3-03", "２０２６-03-03"]
    times = ["10:00:00", "23:59:59", "24:00:00", "00:60:00", "00:00:60", "1:00:00", "10:00", "10:00:00.1",
             "10:00:00.12", "10:00:00.123", "10:00:00.1234", "10:00:00.12345", "10:00:00.123456", "10:00:00.1234567",
             "10:00:00.", "10:00:0٣"]
    values = [f"{d}T{t}{z}" for d in dates for t in times for z in ("Z", "z", "+00:00", "+02:00", "")]
    for value in [*values, "2026-03-03", "2026-03-03Z", "", "Z", 1_767_000_000, 1_767_000_000_000, True, None]:
        assert logs._day(value) == _day_parsed(value), value


def _meta_merged(d) -> dict:
    """logs._meta before it stopped merging a line that has no metadata."""
    meta = d.get("metadata")
    look = {**(meta if isinstance(meta, dict) else {}), **d}
    success = next((look[k] for k in ("success", "passed", "resolved") if isinstance(look.get(k), bool)), None)
    status = next((look[k] for k in ("status", "final_status") if isinstance(look.get(k), str)), None)
    day = next((logs._day(look[k]) for k in ("timestamp", "time", "ts", "created_at", "created", "date") if k in look), "")
    return {"day": day, "success": success, "status": status}


def test_what_a_line_says_of_its_conversation_is_read_as_before():
    lines = [{}, {"metadata": {}}, {"metadata": "x"}, {"metadata": {"passed": True, "status": "done"}},
             {"success": 1, "passed": False}, {"metadata": {"success": True}, "success": "yes", "resolved": False},
             {"time": None, "timestamp": "2026-03-03T10:00:00Z"}, {"metadata": {"ts": 1_767_000_000}, "date": "x"},
             {"status": 3, "final_status": "failed"}, {"metadata": {"created": "2026-03-03"}, "created": "bad"}]
    for d in lines:
        assert logs._meta(d) == _meta_merged(d), d


def test_records_made_without_their_init_are_the_records_init_makes(tmp_path):
    run = logs._conversation("f.jsonl", 3, ({"role": "user", "content": "x"},), tuple(SMALL),
                             {"day": "2026-03-03", "success": True, "status": None})
    made = logs.LogRun("f.jsonl", 3, 3, ({"role": "user", "content": "x"},), tuple(SMALL), day="2026-03-03",
                       success=True, status=None)
    assert run == made and repr(run) == repr(made) and run.where == "f.jsonl:3" and run.usage == () == run.rows
    events = (log_review._made({"run_id": "r", "session_id": "r", "turn_id": 1, "loop": "logs", "round_index": 1,
                                "kind": "tool", "error_code": "BAD_JSON"}),)
    fast, slow = log_review._run("r", "failed", 2, events), Run("r", "logs", "", "failed", "", "", 2, events, ())
    assert fast == slow and repr(fast) == repr(slow) and fast.config == "" and fast.pending == ()
    path = _write(tmp_path / "c.jsonl", _conversations(40))
    for _, _, found in log_review.runs_of(logs.read_logs(path), registry=Registry.from_specs(SPECS)):
        for f in found:
            again = log_review.LogFinding(**f.to_dict())
            assert f == again and repr(f) == repr(again)


def test_a_conversations_counts_are_those_of_its_run(tmp_path):
    """What _summaries reads off a conversation's walk (its coded events only, no run made whole) is what the
    metrics' functions read off the Run that runs_of gives."""
    path = _write(tmp_path / "c.jsonl", _conversations(200))
    for tools in (None, Registry.from_specs(SPECS)):
        for source in (path, ROOT / "data" / "logs_openai_sample.jsonl"):
            summaries = list(log_review._summaries(logs.read_logs(source), tools, frozenset(), [0]))
            runs = list(log_review.runs_of(logs.read_logs(source), registry=tools))
            assert len(summaries) == len(runs)
            for s, (_, run, found) in zip(summaries, runs, strict=True):
                assert (s.calls, s.invalid, s.steps, s.status) == (run.tool_calls, run.invalid_calls, run.steps,
                                                                     run.status)
                assert dict(s.wrong) == Counter(w for w in map(went_wrong, run.events) if w is not None)
                assert s.classes == run_classes(run)
                assert dict(s.kinds) == Counter(f.kind for f in found) and s.found == len(found)
