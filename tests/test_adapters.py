"""agentlab's guards in other agent frameworks (agentlab/adapters/): each framework's real agent loop, a scripted
model behind the test server, the same faults without and with the one wrapping call (docs/guards.md#guards-in-other-frameworks)."""
import json

import pytest
from conftest import skip_or_fail

from agentlab.adapters import compare
from agentlab.adapters.compare import DSN, FAULTS, FRAMEWORKS, installed

GENERIC = "An error occurred while running the tool. Please try again."  # the OpenAI Agents SDK's default


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
    if framework == "openai-agents":  # alone, the SDK hides the exception behind one generic sentence
        assert r.without.raised is None and r.without.told == (GENERIC,)
    else:
        assert r.without.raised is not None and "hunter2" in r.without.raised  # what the framework does alone
    assert r.with_.raised is None
    assert not r.with_.saw("hunter2") and not r.with_.saw("db.internal") and not r.with_.saw(DSN)
    told = [json.loads(m) for m in r.with_.told]
    assert told[-1]["error"]["code"] == "TOOL_ERROR"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_unknown_tool_is_told_the_tools_there_are(rows, framework):
    r = rows[framework, "unknown_tool"]
    assert r.with_.raised is None and r.with_.saw("refund") and r.with_.saw("lookup")


@pytest.mark.parametrize("framework", ["langgraph", "openai-agents"])
def test_an_unknown_tool_gets_agentlabs_structured_answer(rows, framework):
    told = json.loads(rows[framework, "unknown_tool"].with_.told[-1])
    assert told["error"]["code"] == "UNKNOWN_TOOL" and "refund" in told["error"]["available_tools"]


def test_openai_agents_alone_raises_on_an_unknown_tool(rows):
    assert rows["openai-agents", "unknown_tool"].without.raised.startswith("ModelBehaviorError")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_429_with_retry_after_is_resent_after_the_wait_asked(rows, framework):
    r = rows[framework, "rate_limited"]
    if framework == "openai-agents":  # alone: the generic sentence, no resend, no wait
        assert r.without.raised is None and r.without.runs["quote"] == 1 and r.without.told == (GENERIC,)
    else:
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


def test_openai_agents_wrapper_keeps_the_tools_and_turns_a_raise_into_a_structured_error(tmp_path):
    """One wrapping call: the same names and schemas; the original's exception reaches the guard, not the SDK's text."""
    if not installed("openai-agents"):
        skip_or_fail("not installed: openai-agents (pip install -r requirements-frameworks.txt)")
    import asyncio

    from agents import RunConfig, function_tool
    from agents.tool_context import ToolContext

    from agentlab.adapters.openai_agents import guard_function_tools

    def refund(order_id: str) -> dict:
        """Refund an order."""
        raise ValueError(f"no route to {DSN}")

    plain = function_tool(refund)
    tools = guard_function_tools([plain], trace=tmp_path / "t.jsonl")  # a read: a failed write is OUTCOME_UNKNOWN
    assert [t.name for t in tools] == ["refund"] and tools[0].params_json_schema == plain.params_json_schema
    ctx = ToolContext(context=None, tool_name="refund", tool_call_id="c1", tool_arguments='{"order_id": "A1"}')
    told = json.loads(asyncio.run(tools[0].on_invoke_tool(ctx, '{"order_id": "A1"}')))
    assert told["error"]["code"] == "TOOL_ERROR" and "hunter2" not in json.dumps(told)
    bad = json.loads(asyncio.run(tools[0].on_invoke_tool(ctx, '{"order_id": 7}')))
    assert bad["error"]["code"] == "INVALID_ARGS"  # agentlab's contract check, before the SDK's parser
    config = tools.run_config(RunConfig(tracing_disabled=True))
    assert config.tool_not_found_behavior == "return_error_to_model" and config.tracing_disabled
    assert [e.tool_call_id for e in tools.guard.events] == ["c1", "c1"]


def test_openai_agents_two_identical_refunds_in_one_message_run_once():
    """The runner runs one message's calls at once: the second hears IN_PROGRESS, the refund still runs once."""
    if not installed("openai-agents"):
        skip_or_fail("not installed: openai-agents (pip install -r requirements-frameworks.txt)")
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from openai import AsyncOpenAI

    from agentlab.adapters.compare import _tools
    from agentlab.adapters.openai_agents import guard_function_tools
    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.interface import Reply, ToolCall

    refund, runs = '{"order_id": "A1", "amount": 30}', {}
    tools = guard_function_tools(_tools(runs), writes={"refund": None}, sleep=lambda s: None)
    with ChatServer() as server:
        server.script = [Reply(None, (ToolCall("refund", refund, "c1"), ToolCall("refund", refund, "c2"))), "done"]
        model = OpenAIChatCompletionsModel(model="agentlab-test",
                                           openai_client=AsyncOpenAI(base_url=server.base_url, api_key="test"))
        Runner.run_sync(Agent(name="shop", tools=tools, model=model), "Refund 30 on order A1.",
                        run_config=tools.run_config(RunConfig(tracing_disabled=True)))
    assert runs == {"refund": 1}
    assert sorted(e.error_code or "" for e in tools.guard.events) == ["", "IN_PROGRESS"]


# --- hostile calls through one Guard: no framework needed; each failed on the code before its fix ---
def _guard_and_contract():
    from agentlab.adapters.core import Contract, Guard
    return Guard("test", sleep=lambda s: None), [Contract("lookup", "look a thing up", {
        "type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": True})]


def test_a_guard_run_for_weeks_keeps_the_last_rows_not_every_row(tmp_path):
    # an application makes its agent once and runs it for weeks: every tool call's row was kept in guard.events
    from agentlab.adapters.core import KEPT_EVENTS, Guard
    from agentlab.trace import read_jsonl
    guard, contracts = _guard_and_contract()
    assert guard.keep_events == KEPT_EVENTS
    for i in range(KEPT_EVENTS * 2):
        guard.call(contracts, "lookup", {"q": f"q{i}"}, lambda a: a["q"], call_id=f"c{i}")
    assert KEPT_EVENTS <= len(guard.events) <= KEPT_EVENTS * 9 // 8 and guard.calls == KEPT_EVENTS * 2
    assert guard.events[-1].tool_call_id == f"c{KEPT_EVENTS * 2 - 1}"
    ids = [int(e.tool_call_id[1:]) for e in guard.events]
    assert ids == list(range(ids[0], KEPT_EVENTS * 2))  # the latest, in order, none missing
    few = Guard("test", keep_events=3, trace=tmp_path / "t.jsonl")
    for i in range(10):
        few.call(contracts, "lookup", {"q": "x"}, lambda a: a["q"], call_id=f"c{i}")
    assert [e.tool_call_id for e in few.events][-3:] == ["c7", "c8", "c9"] and len(few.events) <= 3
    assert len(read_jsonl(tmp_path / "t.jsonl")) == 10  # the trace file is where every row is kept
    none = Guard("test", keep_events=False)
    none.call(contracts, "lookup", {"q": "x"}, lambda a: a["q"])
    assert none.events == [] and none.calls == 1


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


def test_the_kept_measurement_agrees_with_a_fresh_run(rows):
    """Machines without the extras show data/adapters_measured.json: it must say what a fresh run says."""
    kept = compare.recorded()
    assert all(r.recorded for r in kept) and not any(r.recorded for r in rows.values())
    assert [(r.framework, r.fault) for r in kept] == list(rows), "re-record: python -m agentlab.adapters.compare --record"
    for r in kept:
        fresh = rows[r.framework, r.fault]
        assert (r.version, r.passed, r.without, r.with_) == (fresh.version, fresh.passed, fresh.without, fresh.with_), (
            f"{r.framework}/{r.fault} changed since it was kept: python -m agentlab.adapters.compare --record")
    for lang in ("en", "zh"):
        assert compare.table(kept, lang) == compare.table(rows.values(), lang)


def test_a_framework_not_installed_shows_its_kept_rows_with_the_version(monkeypatch):
    monkeypatch.setattr(compare, "installed", lambda fw: fw != "langgraph")
    got = compare.compare(["langgraph"], ["duplicate_refund", "secret_in_error"], fill=True)
    assert [(r.framework, r.fault, r.recorded) for r in got] == [("langgraph", "duplicate_refund", True),
                                                                  ("langgraph", "secret_in_error", True)]
    assert got[0].version.startswith("langgraph==") and got[0].passed == (False, True)
    assert compare.compare(["langgraph"], ["duplicate_refund"]) == [], "without fill, only what was measured here"


def test_compare_runs_inside_a_running_event_loop_as_in_a_notebook():
    """pydantic-ai's run_sync and the SDK's Runner.run_sync refuse a running loop: compare moves them to a thread."""
    if not installed("pydantic-ai"):
        skip_or_fail("not installed: pydantic-ai (pip install -r requirements-frameworks.txt)")
    import asyncio

    async def in_a_kernel():
        return compare.compare(["pydantic-ai"], ["duplicate_refund"])
    (row,) = asyncio.run(in_a_kernel())
    assert row.without.raised is None and row.passed == (False, True), row.without.raised


# --- a write retried after a restart, claims in clear, async-only tools, the pass-through validator ---
PRIVATE = "PRIVATE-NOTE-4711: customer is pregnant"  # a value that must never be readable in the claim store
NOTE = json.dumps({"order_id": "A1", "text": PRIVATE})


def _note_tools(runs: dict[str, int]) -> list:
    def note(order_id: str, text: str) -> dict:
        """Add a note to an order's file (a write, keyed by all its arguments within one conversation)."""
        runs["note"] = runs.get("note", 0) + 1
        return {"noted": order_id}
    return [note]


def _one_run(framework: str, base_url: str, runs: dict, store, conversation: str | None) -> None:
    """One process's life: a fresh adapter around fresh tools, one run of the conversation, then gone."""
    import warnings

    from openai import AsyncOpenAI
    tools, client = _note_tools(runs), AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    options = {"writes": {"note"}, "store": store, "sleep": lambda s: None}
    if framework == "pydantic-ai":
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        from pydantic_ai.toolsets import FunctionToolset

        from agentlab.adapters.pydanticai import guard_toolset
        agent = Agent(OpenAIChatModel("agentlab-test", provider=OpenAIProvider(openai_client=client)),
                      toolsets=[guard_toolset(FunctionToolset(tools), **options)])
        agent.run_sync("Note it.", conversation_id=conversation)
    elif framework == "openai-agents":
        from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

        from agentlab.adapters.openai_agents import guard_function_tools
        guarded = guard_function_tools(tools, **options)
        agent = Agent(name="desk", tools=guarded, model=OpenAIChatCompletionsModel(model="agentlab-test",
                                                                                   openai_client=client))
        Runner.run_sync(agent, "Note it.", run_config=guarded.run_config(RunConfig(tracing_disabled=True,
                                                                                    group_id=conversation)))
    else:
        from langchain_openai import ChatOpenAI

        from agentlab.adapters.lang_graph import guard_tools
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent
            llm = ChatOpenAI(model="agentlab-test", base_url=base_url, api_key="test", max_retries=0)
            agent = create_react_agent(llm, guard_tools(tools, **options))
        config = {"configurable": {"thread_id": conversation}} if conversation else {}
        agent.invoke({"messages": [("user", "Note it.")]}, config=config)


def _restarted(framework: str, store_of, conversation: str | None, runs: dict | None = None) -> tuple[dict, list[str]]:
    """The same call sent by a first process, then by the same caller restarted: two adapters, one store."""
    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.interface import Reply, ToolCall
    if not installed(framework):
        skip_or_fail(f"not installed: {framework} (pip install -r requirements-frameworks.txt)")
    runs = {} if runs is None else runs
    told: list[str] = []
    with ChatServer() as server:
        for attempt in (1, 2):  # the script is played from its start for each request list
            server.script = [Reply(None, (ToolCall("note", NOTE, f"call_{attempt}"),)), "done", "done"]
            server.requests = []
            _one_run(framework, server.base_url, runs, store_of(), conversation)
            told += [str(m.get("content")) for m in server.requests[-1].get("messages", []) if m.get("role") == "tool"]
    return runs, told


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("kind", ["redis", "sqlite"])
def test_a_write_retried_after_a_restart_runs_once_on_the_frameworks_conversation_id(framework, kind, redis_url,
                                                                                        tmp_path):
    """Failed before the fix: the key held a session id made fresh in each process, so the restarted caller's
    identical note ran a second time on the shared store (Redis, or one SQLite file)."""
    from agentlab.store import open_store
    url = redis_url if kind == "redis" else f"sqlite:///{tmp_path}/claims.db"
    runs, told = _restarted(framework, lambda: open_store(url), "conv-42")
    assert runs == {"note": 1}, told
    assert any('"replayed": true' in m for m in told), told


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_write_with_no_stable_conversation_id_on_a_shared_store_is_refused_loudly(framework, redis_url):
    """Failed before the fix: no conversation id anywhere, a per-process session, the note ran twice in silence."""
    from agentlab.errors import UsageError
    from agentlab.store import open_store
    runs: dict[str, int] = {}
    with pytest.raises(Exception) as got:  # the SDK wraps a tool's exception in its UserError
        _restarted(framework, lambda: open_store(redis_url), None, runs)
    chain, exc = [], got.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    usage = next(e for e in chain if isinstance(e, UsageError))
    assert "session_id" in str(usage) and framework in str(usage) and runs == {}, "refused before it ran"


def test_the_loop_on_a_shared_store_refuses_a_session_scoped_write_without_a_session_id(redis_url):
    """Failed before the fix: run_guarded made up a session per call, so a restarted caller's note ran twice."""
    from agentlab.errors import UsageError
    from agentlab.loop import run_guarded
    from agentlab.models.fakes import ScriptedModel
    from agentlab.models.interface import Reply, ToolCall
    from agentlab.store import open_store
    from agentlab.tools import Registry, Tool

    runs: dict[str, int] = {}
    params = {"type": "object", "properties": {"order_id": {"type": "string"}, "text": {"type": "string"}},
              "required": ["order_id", "text"]}
    reg = Registry([Tool("note", "Add a note.", params, fn=_note_tools(runs)[0], side_effect=True)])

    def script():
        return ScriptedModel([Reply(None, (ToolCall("note", NOTE, "c1"),)), "done"])
    for lang in ("en", "zh"):
        with pytest.raises(UsageError) as got:
            run_guarded(script(), reg, "Note it.", store=open_store(redis_url), sleep=lambda s: None, lang=lang)
        assert "session_id" in str(got.value)
    assert "会话" in str(got.value)
    assert runs == {}, "refused before anything ran"
    for _ in (1, 2):  # a restart with the conversation's own id: once
        run = run_guarded(script(), reg, "Note it.", store=open_store(redis_url), session_id="conv-42",
                          sleep=lambda s: None)
    assert runs == {"note": 1} and '"replayed": true' in run.messages[-2]["content"]
    # a private store of the run's own (the default) cannot outlive the process: nothing to require
    run_guarded(script(), reg, "Note it.", sleep=lambda s: None)


def _raw_redis(url: str) -> str:
    import redis
    client = redis.Redis.from_url(url.split("?")[0], decode_responses=True)
    prefix = url.split("prefix=")[1]
    out = []
    for k in client.scan_iter(prefix + "*"):
        kind = client.type(k)
        value = {"hash": client.hgetall, "set": client.smembers, "string": client.get,
                 "list": lambda k: client.lrange(k, 0, -1)}[kind](k)
        out.append(f"{k} {value}")
    client.close()
    return "\n".join(out)


def test_claims_keep_a_digest_of_the_arguments_never_the_arguments(redis_url, tmp_path):
    """Failed before the fix: the claim's fingerprint (and a key made of all the arguments) held the note in clear."""
    import sqlite3

    from agentlab.adapters.core import Contract, Guard
    spec = [Contract(n, "Add a note.", {"type": "object", "properties": {"order_id": {"type": "string"},
                                                                         "text": {"type": "string"}},
                                       "required": ["order_id", "text"]}) for n in ("note", "note_once")]
    for url in (redis_url, f"sqlite:///{tmp_path}/claims.db"):
        guard = Guard("test", writes={"note": None, "note_once": lambda a: a["order_id"]}, store=url,
                      session_id="s1", sleep=lambda s: None)
        done: list = []

        def ran(a, done=done):
            done.append(a)
            return {"ok": len(done)}
        for name in ("note", "note_once"):
            first, again = guard.call(spec, name, NOTE, ran), guard.call(spec, name, NOTE, ran)
            assert first.error is None and again.replayed
        other = guard.call(spec, "note_once", {"order_id": "A1", "text": "another"}, ran)
        assert other.error is not None and other.error.code == "CONFLICT", "same key, other arguments: detected"
        assert len(done) == 2
        if url.startswith("redis"):
            raw = _raw_redis(url)
        else:
            raw = "\n".join(map(str, sqlite3.connect(f"{tmp_path}/claims.db").execute("SELECT * FROM claims")))
        assert raw.count("claim") >= 2 or raw.count("running") + raw.count("done") >= 2, raw
        assert "PRIVATE" not in raw and "pregnant" not in raw, raw


# --- async-only and sync-only tools in each adapter (the framework calls the other kind) ---
def _two_kinds(runs: dict[str, int]) -> list:
    async def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order (async only)."""
        runs["refund"] = runs.get("refund", 0) + 1
        return {"refunded": amount, "order_id": order_id}

    def lookup(order_id: str) -> dict:
        """Look an order up (sync only)."""
        runs["lookup"] = runs.get("lookup", 0) + 1
        return {"order_id": order_id, "status": "shipped"}
    return [refund, lookup]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_async_only_and_sync_only_tools_both_run_through_each_adapter(framework, mode):
    """LangGraph failed before the fix: invoke() never ran the async refund, and told the model a person would check."""
    import asyncio
    import warnings

    from openai import AsyncOpenAI

    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.interface import Reply, ToolCall
    if not installed(framework):
        skip_or_fail(f"not installed: {framework} (pip install -r requirements-frameworks.txt)")
    runs: dict[str, int] = {}
    tools = _two_kinds(runs)
    options = {"writes": {"refund"}, "sleep": lambda s: None}
    with ChatServer() as server:
        server.script = [Reply(None, (ToolCall("refund", '{"order_id": "A1", "amount": 30}', "c1"),)),
                         Reply(None, (ToolCall("lookup", '{"order_id": "A1"}', "c2"),)), "done", "done"]
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        if framework == "pydantic-ai":
            from pydantic_ai import Agent
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider
            from pydantic_ai.toolsets import FunctionToolset

            from agentlab.adapters.pydanticai import guard_toolset
            agent = Agent(OpenAIChatModel("agentlab-test", provider=OpenAIProvider(openai_client=client)),
                          toolsets=[guard_toolset(FunctionToolset(tools), **options)])
            agent.run_sync("Refund.") if mode == "sync" else asyncio.run(agent.run("Refund."))
        elif framework == "openai-agents":
            from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

            from agentlab.adapters.openai_agents import guard_function_tools
            guarded = guard_function_tools(tools, **options)
            agent = Agent(name="desk", tools=guarded,
                          model=OpenAIChatCompletionsModel(model="agentlab-test", openai_client=client))
            config = guarded.run_config(RunConfig(tracing_disabled=True))
            Runner.run_sync(agent, "Refund.", run_config=config) if mode == "sync" else \
                asyncio.run(Runner.run(agent, "Refund.", run_config=config))
        else:
            from langchain_core.tools import tool as lc_tool
            from langchain_openai import ChatOpenAI

            from agentlab.adapters.lang_graph import guard_tools
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from langgraph.prebuilt import create_react_agent
                llm = ChatOpenAI(model="agentlab-test", base_url=server.base_url, api_key="test", max_retries=0)
                agent = create_react_agent(llm, guard_tools([lc_tool(t) for t in tools], **options))
            state = {"messages": [("user", "Refund.")]}
            agent.invoke(state) if mode == "sync" else asyncio.run(agent.ainvoke(state))
        told = [str(m.get("content")) for body in server.requests for m in body.get("messages", [])
                if m.get("role") == "tool"]
    assert runs == {"refund": 1, "lookup": 1}, told
    assert all(json.loads(m)["ok"] is True for m in told[-2:]), told


def test_langgraph_a_tool_that_cannot_run_is_told_so_never_that_a_person_will_check():
    """Failed before the fix: a write LangGraph could not start was OUTCOME_UNKNOWN, "a person will check"."""
    if not installed("langgraph"):
        skip_or_fail("not installed: langgraph (pip install -r requirements-frameworks.txt)")
    import warnings

    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI

    from agentlab.adapters.lang_graph import guard_tools
    from agentlab.i18n import t
    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.interface import Reply, ToolCall

    class Refund(BaseTool):  # a tool written for async graphs only: its sync entry is not implemented
        name: str = "refund"
        description: str = "Refund an order."

        def _run(self, order_id: str) -> dict:
            raise NotImplementedError("use ainvoke")

        async def _arun(self, order_id: str) -> dict:
            return {"refunded": order_id}

    with ChatServer() as server:
        server.script = [Reply(None, (ToolCall("refund", '{"order_id": "A1"}', "c1"),)), "done"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent
            llm = ChatOpenAI(model="agentlab-test", base_url=server.base_url, api_key="test", max_retries=0)
            node = guard_tools([Refund()], writes={"refund"}, sleep=lambda s: None)
            create_react_agent(llm, node).invoke({"messages": [("user", "Refund A1.")]})
        told = [str(m.get("content")) for body in server.requests for m in body.get("messages", [])
                if m.get("role") == "tool"]
    error = json.loads(told[-1])["error"]
    assert error["code"] != "OUTCOME_UNKNOWN" and "person will check" not in told[-1], told
    assert error["code"] == "NOT_RUN" and error["message"] == t("NOT_RUN.cannot_run", "en")


def test_pydantic_ai_shows_the_model_agentlabs_validation_error_not_pydantics():
    """The pass-through validator is what lets agentlab's contract check speak: without it, pydantic-ai answers
    a bad call with its own retry prompt and agentlab never sees the call. This test fails if it is removed."""
    if not installed("pydantic-ai"):
        skip_or_fail("not installed: pydantic-ai (pip install -r requirements-frameworks.txt)")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.toolsets import FunctionToolset

    from agentlab.adapters.pydanticai import guard_toolset
    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.interface import Reply, ToolCall
    runs: dict[str, int] = {}
    with ChatServer() as server:
        server.script = [Reply(None, (ToolCall("lookup", '{"order_id": ["A1"], "extra": 1}', "c1"),)), "done"]
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        toolset = guard_toolset(FunctionToolset(_two_kinds(runs)[1:]), lang="zh")
        Agent(OpenAIChatModel("agentlab-test", provider=OpenAIProvider(openai_client=client)),
              toolsets=[toolset]).run_sync("Look A1 up.")
        told = [str(m.get("content")) for body in server.requests for m in body.get("messages", [])
                if m.get("role") == "tool"]
    assert runs == {}
    (event,) = toolset.guard.events
    assert event.error_code == "INVALID_ARGS" and told == [event.model_visible], told  # agentlab's words, exactly
    assert json.loads(told[0])["error"]["code"] == "INVALID_ARGS" and not told[0].isascii()  # in the guard's zh
    assert "validation error" not in told[0] and "Fix the errors" not in told[0]


# --- contracts built once per tool set: a changed set never reuses a stale contract ---
def test_contracts_are_built_once_per_tool_set_and_again_when_it_changes():
    from agentlab.adapters.core import Contract, Guard

    class T:  # a framework's tool: its name, description and schema, each an attribute that can be set anew
        def __init__(self, name, schema):
            self.name, self.description, self.schema = name, f"{name} it.", schema

    built: list[str] = []

    def build(t):
        built.append(t.name)
        return Contract(t.name, t.description, t.schema)

    def parts(t):
        return (t, t.name, t.description, t.schema)
    guard = Guard("test")
    a, b = T("lookup", {"type": "object", "properties": {"q": {"type": "string"}}}), T("refund", {"type": "object"})
    first = guard.contracts([a, b], parts, build)
    assert guard.contracts([a, b], parts, build) is first and built == ["lookup", "refund"], "same tools: not rebuilt"
    assert guard.registry(first) is guard.registry(first)
    c = T("cancel", {"type": "object"})
    added = guard.contracts([a, b, c], parts, build)
    assert [x.name for x in added] == ["lookup", "refund", "cancel"] and "cancel" in guard.registry(added)
    assert [x.name for x in guard.contracts([a], parts, build)] == ["lookup"], "a tool removed"
    a.schema = {"type": "object", "properties": {"q": {"type": "integer"}}}  # a schema set anew
    changed = guard.contracts([a], parts, build)
    assert changed[0].parameters["properties"]["q"]["type"] == "integer"
    out = guard.call(changed, "lookup", {"q": "text"}, lambda args: {"ok": 1})
    assert out.error is not None and out.error.code == "INVALID_ARGS", "the new schema is the one checked"
    a.description = "Look it up, carefully."
    assert guard.contracts([a], parts, build)[0].description == "Look it up, carefully."
    b2 = T("lookup", a.schema)  # another object under the same name: a replaced tool
    assert guard.contracts([b2], parts, build)[0] is not changed[0]


def test_openai_agents_a_tool_removed_from_the_guarded_list_is_no_longer_offered():
    """The list's contracts are kept between calls: one taken out of the list must not keep its stale contract."""
    if not installed("openai-agents"):
        skip_or_fail("not installed: openai-agents (pip install -r requirements-frameworks.txt)")
    import asyncio

    from agents.tool_context import ToolContext

    from agentlab.adapters.compare import _tools
    from agentlab.adapters.openai_agents import guard_function_tools

    runs: dict[str, int] = {}
    refund, lookup, *_ = _tools(runs)
    tools = guard_function_tools([refund, lookup], sleep=lambda s: None)
    first = tools.contracts()
    assert tools.contracts() is first and [c.name for c in first] == ["refund", "lookup"]
    ctx = ToolContext(context=None, tool_name="lookup", tool_call_id="c1", tool_arguments='{"order_id": "A1"}')
    assert json.loads(asyncio.run(tools[1].on_invoke_tool(ctx, '{"order_id": "A1"}')))["ok"] is True
    removed = tools.pop()
    assert [c.name for c in tools.contracts()] == ["refund"]
    told = json.loads(asyncio.run(removed.on_invoke_tool(ctx, '{"order_id": "A2"}')))
    assert told["error"]["code"] == "UNKNOWN_TOOL" and runs == {"lookup": 1}, told
    tools.append(removed)
    assert json.loads(asyncio.run(removed.on_invoke_tool(ctx, '{"order_id": "A3"}')))["ok"] is True


def test_pydantic_ai_a_tool_added_between_runs_is_offered_and_checked():
    if not installed("pydantic-ai"):
        skip_or_fail("not installed: pydantic-ai (pip install -r requirements-frameworks.txt)")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from agentlab.adapters.compare import _tools
    from agentlab.adapters.pydanticai import guard_toolset
    runs: dict[str, int] = {}
    refund, lookup, *_ = _tools(runs)
    asked = {"tool": "refund", "args": {"order_id": "A1", "amount": 30}}

    def model(messages, info):
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(asked["tool"], asked["args"], "c1")])
    inner = FunctionToolset([refund])
    toolset = guard_toolset(inner, writes={"refund"}, sleep=lambda s: None)
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    agent.run_sync("Refund A1.")
    inner.add_function(lookup)  # the tool set changed between runs
    asked.update(tool="lookup", args={"order_id": 7})  # against the new tool's contract: a string is required
    agent.run_sync("Look A1 up.")
    asked.update(args={"order_id": "A1"})
    agent.run_sync("Look A1 up.")
    assert runs == {"refund": 1, "lookup": 1}
    assert [e.error_code for e in toolset.guard.events] == [None, "INVALID_ARGS", None]


def test_on_the_event_loop_a_hung_read_is_not_resent_and_a_hung_write_settles_its_key_when_it_lands():
    """Guard.acall awaits the framework's tool on the loop (no worker thread): the timeout keeps its meaning. A read
    past its limit is abandoned, never sent again while it runs; a write past it is OUTCOME_UNKNOWN, and its
    result, when it lands, is what a repeat is told."""
    import asyncio

    from agentlab.adapters.core import Contract, Guard
    from agentlab.guards import GuardConfig
    spec = (Contract("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}}),
            Contract("refund", "Refund.", {"type": "object", "properties": {"q": {"type": "string"}}}))
    guard = Guard("test", writes={"refund"}, config=GuardConfig(timeout=0.05), sleep=lambda s: None)
    assert guard.on_loop
    started: list[str] = []

    async def slow(args):
        started.append(args["q"])
        await asyncio.sleep(0.3)
        return {"done": args["q"]}

    async def go():
        read = await guard.acall(spec, "lookup", {"q": "r"}, slow)
        write = await guard.acall(spec, "refund", {"q": "w"}, slow)
        await asyncio.sleep(0.5)  # the write lands after its caller stopped waiting
        again = await guard.acall(spec, "refund", {"q": "w"}, slow)
        return read, write, again
    read, write, again = asyncio.run(go())
    assert read.error.code == "TIMEOUT" and started.count("r") == 1, "a read still running is not sent again"
    assert write.error.code == "OUTCOME_UNKNOWN" and started.count("w") == 1
    assert again.replayed and again.data == {"done": "w"}, "the landed result settled the key"


def test_openai_agents_wrapper_hints_are_objects_and_the_sdk_hands_it_the_tool_context_unchanged():
    """The SDK resolves the wrapper's type hints on every call to choose which context to hand it: they are the objects
    themselves (no string to compile each time), and they still name no context type, so the ``ToolContext`` (its
    ``tool_call_id``, its ``run_config`` with the conversation's ``group_id``) reaches the guard as it did."""
    if not installed("openai-agents"):
        skip_or_fail("not installed: openai-agents (pip install -r requirements-frameworks.txt)")
    import typing

    from agents.tool import _get_function_tool_invoke_context
    from agents.tool_context import ToolContext

    from agentlab.adapters.compare import _tools
    from agentlab.adapters.openai_agents import guard_function_tools
    tools = guard_function_tools(_tools({})[:2], sleep=lambda s: None)
    hook = tools[0].on_invoke_tool
    assert hook.__annotations__ == {"ctx": typing.Any, "arguments": str, "return": str}
    assert all(not isinstance(v, str) for v in hook.__annotations__.values()), "a string is compiled on every call"
    assert typing.get_type_hints(hook) == hook.__annotations__
    ctx = ToolContext(context=None, tool_name="refund", tool_call_id="c1", tool_arguments="{}")
    assert _get_function_tool_invoke_context(tools[0], ctx) is ctx


def test_pydantic_ai_offered_tools_are_copies_with_the_pass_through_and_the_originals_untouched():
    """Each step's tools are offered as copies made without ``dataclasses.replace`` (pydantic-ai's own plain dataclass):
    every field as it was but the validator (the pass-through), the validator function (none) and the retries (at
    least one); the toolset's own tools are not changed. A tool class with a ``__post_init__`` is still replaced."""
    if not installed("pydantic-ai"):
        skip_or_fail("not installed: pydantic-ai (pip install -r requirements-frameworks.txt)")
    import asyncio
    import dataclasses

    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.toolsets import FunctionToolset

    from agentlab.adapters.compare import _tools
    from agentlab.adapters.pydanticai import _offered, _PassThrough
    inner = FunctionToolset(list(_tools({})[:2]))
    agent = Agent(TestModel())
    seen: dict = {}

    async def offer(ctx):
        seen["tools"] = await inner.get_tools(ctx)
        return {name: _offered(t) for name, t in seen["tools"].items()}

    @agent.tool
    async def probe(ctx) -> str:  # a RunContext to list the toolset's tools with
        seen["offered"] = await offer(ctx)
        return "ok"
    asyncio.run(agent.run("go"))
    for name, offered in seen["offered"].items():
        original = seen["tools"][name]
        assert type(offered) is type(original) and offered is not original
        assert isinstance(offered.args_validator, _PassThrough) and offered.args_validator_func is None
        assert offered.max_retries == max(original.max_retries, 1)
        assert not isinstance(original.args_validator, _PassThrough), "the toolset's own tool is not changed"
        for f in dataclasses.fields(original):
            if f.name not in ("args_validator", "args_validator_func", "max_retries"):
                assert getattr(offered, f.name) is getattr(original, f.name), f.name

    @dataclasses.dataclass
    class Checked:  # a tool class whose __init__ does more than set fields
        max_retries: int
        args_validator: object = None
        args_validator_func: object = None
        made: int = 0

        def __post_init__(self):
            self.made += 1
    again = _offered(Checked(0, "v", "f"))
    assert (again.made, again.max_retries, again.args_validator_func) == (2, 1, None), "through replace: __init__ ran"


# --- one agent, made once, serving many users (as an application runs it) ------------------------------------------
def _agent_made_once(framework: str, runs: list):
    """``framework``'s real loop around one guarded agent made once, an in-process scripted model, and ``one(calls)``:
    a run (a user's turn) that makes ``calls`` (tool, arguments) in turn, then answers. Returns (one, guard)."""
    if not installed(framework):
        skip_or_fail(f"{framework} is not installed (pip install -r requirements-frameworks.txt)")
    now: dict = {"calls": []}

    def lookup(order_id: str) -> dict:
        """Look an order up."""
        runs.append(order_id)
        return {"order_id": order_id, "status": "shipped"}

    def note(order_id: str, text: str) -> dict:
        """Add a note to an order's file (a write)."""
        runs.append(f"note {order_id}")
        return {"noted": order_id}
    if framework == "pydantic-ai":
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.toolsets import FunctionToolset

        from agentlab.adapters.pydanticai import guard_toolset

        def model(messages: list, info: object) -> ModelResponse:
            step = (len(messages) - 1) // 2
            if step >= len(now["calls"]):
                return ModelResponse(parts=[TextPart("done")])
            return ModelResponse(parts=[ToolCallPart(*now["calls"][step], f"c{step}")])
        toolset = guard_toolset(FunctionToolset([lookup, note]), writes={"note"})
        agent = Agent(FunctionModel(model), toolsets=[toolset])
        return (lambda calls, **_: (now.update(calls=calls), agent.run_sync("Where is my order?"))), toolset.guard
    if framework == "openai-agents":
        from agents import Agent, RunConfig, Runner
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

        from agentlab.adapters.openai_agents import guard_function_tools

        class Scripted(Model):
            step = 0

            async def get_response(self, *a: object, **kw: object) -> ModelResponse:
                i, self.step = self.step, self.step + 1
                if i >= len(now["calls"]):
                    out: object = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                                        content=[ResponseOutputText(type="output_text", text="done",
                                                                                    annotations=[])])
                else:
                    name, args = now["calls"][i]
                    out = ResponseFunctionToolCall(type="function_call", call_id=f"c{i}", name=name,
                                                   arguments=json.dumps(args))
                return ModelResponse(output=[out], usage=Usage(), response_id=None)

            def stream_response(self, *a: object, **kw: object) -> object:
                raise NotImplementedError
        tools = guard_function_tools([lookup, note], writes={"note"})
        config = tools.run_config(RunConfig(tracing_disabled=True))
        model = Scripted()
        agent = Agent(name="shop", instructions="Help with orders.", tools=tools, model=model)

        def one(calls: list, **_: object) -> None:
            now["calls"], model.step = calls, 0
            Runner.run_sync(agent, "Where is my order?", run_config=config)
        return one, tools.guard
    import warnings

    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from agentlab.adapters.lang_graph import guard_tools
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    class Chat(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: object, **kw: object) -> "Chat":
            return self

        def _generate(self, messages: list, stop: object = None, run_manager: object = None, **kw: object) -> ChatResult:
            step = sum(isinstance(m, ToolMessage) for m in messages)
            if step >= len(now["calls"]):
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])
            name, args = now["calls"][step]
            msg = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{step}", "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=msg)])
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    node = guard_tools([lookup, note], writes={"note"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(Chat(), node, checkpointer=InMemorySaver())

    def one(calls: list, thread: str | None = None, message_id: str | None = None) -> None:
        now["calls"] = calls
        # a thread of its own unless given (the checkpointer needs one); the application's own message id if given
        config = {"configurable": {"thread_id": thread or f"t{len(runs)}-{id(calls)}"}}
        graph.invoke({"messages": [HumanMessage("Where is my order?", id=message_id)]}, config)
    return one, node.guard


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_one_agent_serving_many_users_counts_repeats_within_each_run_only(framework):
    # an application makes its agent once: the breaker counted identical calls across every user's run, and the third
    # customer to ask about order A1001 was told their one lookup was a loop (LOOP_DETECTED)
    runs: list = []
    one, guard = _agent_made_once(framework, runs)
    for _user in range(5):
        one([("lookup", {"order_id": "A1001"})])
    assert runs == ["A1001"] * 5 and [e.error_code for e in guard.events] == [None] * 5
    one([("lookup", {"order_id": "A2002"})] * 3)  # one run asking the same thing again and again is still a loop
    assert guard.events[-1].error_code == "LOOP_DETECTED"
    assert runs.count("A2002") <= 2
    one([("lookup", {"order_id": "A2002"})])  # and the next user's run starts afresh
    assert guard.events[-1].error_code is None


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_two_users_writing_the_same_note_both_get_it_written(framework):
    # with no conversation id, a write's key was scoped to the guard: the second customer's call-back note on the
    # same order was answered from the first customer's claim and never ran. A run repeating its write still runs once
    runs: list = []
    one, guard = _agent_made_once(framework, runs)
    for _user in range(2):
        one([("note", {"order_id": "A1001", "text": "call me back"})])
    assert runs == ["note A1001"] * 2, runs
    one([("note", {"order_id": "A3003", "text": "call me back"})] * 2)
    assert runs.count("note A3003") == 1 and guard.events[-1].replayed


def test_langgraph_threads_that_reuse_their_message_ids_are_still_each_their_own_turn():
    # an application that names its messages itself ("1" in every thread): the turn is the thread and the message
    runs: list = []
    one, guard = _agent_made_once("langgraph", runs)
    for user in range(4):
        one([("lookup", {"order_id": "A1001"})], thread=f"user-{user}", message_id="1")
    assert runs == ["A1001"] * 4 and [e.error_code for e in guard.events] == [None] * 4


def test_a_turn_is_told_apart_by_value_or_identity_and_never_switches_the_breaker_off():
    guard, contracts = _guard_and_contract()

    def codes(turn: object, n: int = 3, **kw: object) -> list:
        return [guard.call(contracts, "lookup", {"q": "same"}, lambda a: a["q"], turn=turn, **kw).error
                and guard.events[-1].error_code for _ in range(n)]
    assert codes(("run", 1)) == [None, None, "LOOP_DETECTED"]  # a tuple: by value, never a fresh count per call
    assert codes(("run", 2)) == [None, None, "LOOP_DETECTED"]
    with pytest.raises(TypeError):
        guard.call(contracts, "lookup", {"q": "x"}, lambda a: a["q"], turn={"run": 3})  # neither hashable nor weak

    class Usage:  # a run's record, as the Agents SDK's: one object per run, compared by identity
        pass
    first = Usage()
    assert codes(first, 2) == [None, None]
    del first
    assert codes(Usage(), 2) == [None, None]  # a new run, even at a recycled address, starts afresh
    assert codes(None, 3, conversation="c-1") == [None, None, "LOOP_DETECTED"]  # no turn: the conversation
    assert codes(None, 1, conversation="c-2") == [None]


def test_calls_in_threads_at_once_lose_no_count():
    # LangGraph runs one message's tool calls in executor threads at once: the breaker's count (read, add one, write)
    # and the guard's call count lost increments between them, so a loop was stopped later than its limit said
    import sys
    import threading

    from agentlab.adapters.core import Contract, Guard
    from agentlab.guards import GuardConfig
    threads, each = 8, 400
    contracts = [Contract("lookup", "look a thing up", {"type": "object", "properties": {"q": {"type": "string"}}})]
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: a lost count shows within a few thousand calls
    try:
        for _round in range(5):  # a lost increment is a matter of timing: five chances to show
            guard = Guard("test", config=GuardConfig(repeat_limit=threads * each + 1, timeout=None), sleep=lambda s: None)

            def work(guard: Guard = guard) -> None:
                for _ in range(each):
                    guard.call(contracts, "lookup", {"q": "same"}, lambda a: 1)
            running = [threading.Thread(target=work) for _ in range(threads)]
            for t in running:
                t.start()
            for t in running:
                t.join()
            assert [e.error_code for e in guard.events if e.error_code] == []
            assert guard.calls == threads * each
            assert sorted(e.round_index for e in guard.events) == list(range(1, threads * each + 1))
            last = guard.call(contracts, "lookup", {"q": "same"}, lambda a: 1)
            assert last.error is not None and last.error.code == "LOOP_DETECTED"  # the limit-th call exactly
    finally:
        sys.setswitchinterval(before)
