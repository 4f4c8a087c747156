"""agentlab's guards in other agent frameworks (agentlab/adapters/): each framework's real agent loop, a scripted
model behind the test server, the same faults without and with the one wrapping call (docs/guards.md#guards-in-other-frameworks)."""
import json

import pytest
from conftest import skip_or_fail

from agentlab.adapters import compare
from agentlab.adapters.compare import DSN, FAULTS, FRAMEWORKS, installed


@pytest.fixture(scope="module")
def rows():
    missing = [fw for fw in FRAMEWORKS if not installed(fw)]
    if missing:
        skip_or_fail(f"not installed: {', '.join(missing)} (pip install -r requirements-frameworks.txt)")
    return {(r.framework, r.fault): r for r in compare.compare()}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_duplicated_refund_runs_once_with_the_adapter_twice_without(rows, framework):
    r = rows[framework, "duplicate_refund"]
    assert r.without.runs["refund"] == 2
    assert r.with_.runs["refund"] == 1 and r.with_.raised is None
    assert any('"replayed": true' in m for m in r.with_.told), "the repeat is told the first result, replayed"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_five_identical_reads_run_at_most_twice(rows, framework):
    r = rows[framework, "repeated_reads"]
    assert r.without.runs["lookup"] == 5
    assert r.with_.runs["lookup"] <= 2 and r.with_.raised is None
    assert any("LOOP_DETECTED" in m for m in r.with_.told)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_tool_raising_with_a_dsn_never_raises_out_and_the_model_never_sees_it(rows, framework):
    r = rows[framework, "secret_in_error"]
    assert r.without.raised is not None and "hunter2" in r.without.raised  # what the framework does alone
    assert r.with_.raised is None
    assert not r.with_.saw("hunter2") and not r.with_.saw("db.internal") and not r.with_.saw(DSN)
    told = [json.loads(m) for m in r.with_.told]
    assert told[-1]["error"]["code"] == "TOOL_ERROR"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_unknown_tool_is_told_the_tools_there_are(rows, framework):
    r = rows[framework, "unknown_tool"]
    assert r.with_.raised is None and r.with_.saw("refund") and r.with_.saw("lookup")


def test_langgraph_unknown_tool_gets_agentlabs_structured_answer(rows):
    told = json.loads(rows["langgraph", "unknown_tool"].with_.told[-1])
    assert told["error"]["code"] == "UNKNOWN_TOOL" and "refund" in told["error"]["available_tools"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_429_with_retry_after_is_resent_after_the_wait_asked(rows, framework):
    r = rows[framework, "rate_limited"]
    assert r.without.raised is not None
    assert r.with_.raised is None and r.with_.runs["quote"] == 2
    assert r.with_.sleeps and min(r.with_.sleeps) >= 2.0, "never sooner than Retry-After (the sleep is injected)"
    assert json.loads(r.with_.told[-1])["ok"] is True


def test_every_row_passes_with_the_adapter_and_the_table_reads_in_both_languages(rows):
    assert len(rows) == len(FRAMEWORKS) * len(FAULTS)
    assert all(r.passed[1] for r in rows.values()), [k for k, r in rows.items() if not r.passed[1]]
    en, zh = compare.table(rows.values(), "en"), compare.table(rows.values(), "zh")
    assert en.count("\n") == zh.count("\n") == len(rows) + 1
    assert "with the adapter" in en and "用适配器" in zh


def test_each_call_leaves_one_trace_row_as_the_guarded_loop_writes_them(tmp_path):
    from agentlab.adapters.core import Contract, Guard
    from agentlab.trace import read_jsonl
    guard = Guard("test", writes={"refund": lambda a: a["order_id"]}, store="sqlite:///" + str(tmp_path / "c.db"),
                  trace=tmp_path / "t.jsonl", lang="zh")
    spec = [Contract("refund", "Refund.", {"type": "object", "properties": {"order_id": {"type": "string"}},
                                           "required": ["order_id"]})]
    done = []
    first = guard.call(spec, "refund", {"order_id": "A1"}, lambda a: done.append(a) or {"ok": 1}, call_id="c1")
    again = guard.call(spec, "refund", '{"order_id": "A1"}', lambda a: done.append(a) or {"ok": 2}, call_id="c2")
    bad = guard.call(spec, "refund", {"order_id": 7}, lambda a: done.append(a), call_id="c3")
    assert len(done) == 1 and first.data == again.data == {"ok": 1} and again.replayed
    assert bad.error.code == "INVALID_ARGS" and bad.content.isascii() is False  # told in the guard's language (zh)
    events = read_jsonl(tmp_path / "t.jsonl")
    assert [e.tool_call_id for e in events] == ["c1", "c2", "c3"] and events == guard.events
    assert [e.replayed for e in events] == [False, True, False] and events[2].error_code == "INVALID_ARGS"


# --- hostile calls through one Guard: no framework needed; each failed on the code before its fix ---
def _guard_and_contract():
    from agentlab.adapters.core import Contract, Guard
    return Guard("test", sleep=lambda s: None), [Contract("lookup", "look a thing up", {
        "type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": True})]


def test_a_frameworks_dict_that_is_not_json_is_told_to_the_model_never_raised():
    import datetime
    guard, contracts = _guard_and_contract()
    # a date: json.dumps raised TypeError out of Guard.call, into the framework's loop
    out = guard.call(contracts, "lookup", {"q": datetime.date(2026, 1, 2)}, lambda a: a["q"])
    assert out.error is None and json.loads(out.content)["data"] == "2026-01-02"
    cyclic: dict = {}
    cyclic["self"] = cyclic  # depth() walked it forever, filling memory (Registry.check of a Mapping too)
    out = guard.call(contracts, "lookup", cyclic, lambda a: "ran")
    assert out.error is not None and out.error.code == "BAD_JSON" and "ran" not in out.content


def test_arguments_past_max_args_chars_are_refused_unread():
    from agentlab.tools import MAX_ARGS_CHARS
    guard, contracts = _guard_and_contract()
    ran = []
    out = guard.call(contracts, "lookup", json.dumps({"q": "x" * (MAX_ARGS_CHARS + 1)}), lambda a: ran.append(a))
    assert not ran and out.error is not None and out.error.code == "INVALID_ARGS"
    assert len(out.content) < 2000 and len(guard.events[0].args_raw) <= MAX_ARGS_CHARS


def test_a_tool_raising_with_secrets_and_a_result_json_has_not():
    guard, contracts = _guard_and_contract()

    def leaky(args):
        raise RuntimeError("postgresql://admin:hunter2@db.internal:5432/prod api_key=sk-proj-AbCdEfGhIjKlMnOp "
                           "in /srv/app/secret.py")
    out = guard.call(contracts, "lookup", {"q": "x"}, leaky)
    for leak in ("hunter2", "db.internal", "sk-proj", "/srv/app", "Traceback"):
        assert leak not in out.content and leak not in (guard.events[0].note or ""), leak
    out = guard.call(contracts, "lookup", {"q": "y"}, lambda a: {"when": {1, 2}, "n": float("nan")})
    assert out.error is None and json.loads(out.content)["data"]["n"] is None
