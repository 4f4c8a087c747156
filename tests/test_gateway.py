"""The guarded MCP gateway (agentlab/site/gateway.py): the official SDK's client, the gateway, and a real upstream
MCP server started here (FastMCP on stdio, in its own process) that counts every run of its tools."""
from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import sys

import pytest

pytest.importorskip("mcp")
from conftest import free_port
from mcp.shared.memory import create_connected_server_and_client_session

from agentlab.i18n import t
from agentlab.site.gateway import Gateway
from agentlab.site.keys import KeyStore
from agentlab.site.limits import Limiter
from agentlab.site.logs import SiteLogs
from agentlab.store import MemoryStore

UPSTREAM = '''
import json, sys
from pathlib import Path
from typing import Annotated
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field

runs = Path(sys.argv[1])
keys = runs.with_name("keys.json")
mcp = FastMCP("shop")

def count(name):
    seen = json.loads(runs.read_text()) if runs.exists() else {}
    seen[name] = seen.get(name, 0) + 1
    runs.write_text(json.dumps(seen))

@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=False))
def refund(order_id: str, amount: float) -> dict:
    """Refund part of an order (it moves money)."""
    count("refund")
    return {"refunded": amount, "order_id": order_id}

@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=False))
def keyed_refund(order_id: str, amount: float, note: str, ctx: Context) -> dict:
    """Refund an order once per idempotency key, as a real backend does: a key seen before answers its first result."""
    meta = ctx.request_context.meta
    key = (meta.model_extra or {}).get("agentlab/idempotency_key") if meta is not None else None
    seen = json.loads(keys.read_text()) if keys.exists() else {}
    if key in seen:
        return seen[key]
    count("keyed_refund")
    result = {"refunded": amount, "order_id": order_id, "note": note, "upstream_key": key}
    seen[key] = result
    keys.write_text(json.dumps(seen))
    return result

@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=True))
def cancel_order(order_id: str) -> dict:
    """Cancel an order (destructive, and said to be idempotent: the gateway claims it all the same)."""
    count("cancel_order")
    return {"order_id": order_id, "cancelled": True}

@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(order_id: str) -> dict:
    """Look an order up."""
    count("lookup")
    return {"order_id": order_id, "status": "shipped"}

@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def find_code(code: Annotated[str, Field(pattern=r"^(a+)+$")]) -> dict:
    """A contract shaped for catastrophic backtracking: the gateway must leave this tool out, and only it."""
    count("find_code")
    return {"code": code}

@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def held(order_id: str) -> dict:
    """A read that hangs until the test lets it go (a file appears), as a stuck backend does."""
    import anyio
    count("held")
    release = runs.with_name("release")
    for _ in range(400):
        if release.exists():
            break
        await anyio.sleep(0.05)
    return {"order_id": order_id}

@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def report(order_id: str) -> dict:
    """The order's sales report (its database is down)."""
    count("report")
    raise RuntimeError("could not connect to postgresql://admin:hunter2@db.internal:5432/orders")

mcp.run()
'''


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    folder = tmp_path_factory.mktemp("upstream")
    script = folder / "shop.py"
    script.write_text(UPSTREAM, encoding="utf-8")
    return folder, f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(folder / 'runs.json'))}"


@pytest.fixture(scope="module")
def started(upstream, tmp_path_factory):
    """One gateway and its upstream process for the module (starting them takes a second or two)."""
    _folder, command = upstream
    with Gateway(command, per_minute=8, sleep=lambda s: None) as gw:
        yield gw


@pytest.fixture
def gateway(started, upstream, tmp_path):
    """The module's gateway with nothing remembered: no runs, claims, sessions, rate windows or logs."""
    folder, _ = upstream
    (folder / "runs.json").unlink(missing_ok=True)
    (folder / "keys.json").unlink(missing_ok=True)
    (folder / "release").unlink(missing_ok=True)
    now = [1000.0]
    gw = started
    gw.store, gw.logs, gw.limiter = MemoryStore(), SiteLogs(tmp_path / "logs"), Limiter(clock=lambda: now[0])
    gw.keys, gw.allow_keyless = KeyStore(), False
    gw._guards.clear()
    gw.now = now  # type: ignore[attr-defined]
    gw.runs = lambda: json.loads((folder / "runs.json").read_text()) if (folder / "runs.json").exists() else {}  # type: ignore[attr-defined]
    return gw


def calls(gw: Gateway, script: list[tuple[str, dict, dict | None]]) -> list:
    """The script sent by one client session of the official SDK, in memory to the gateway."""
    async def go() -> list:
        async with create_connected_server_and_client_session(gw.server()) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == {"refund", "keyed_refund", "cancel_order", "lookup", "held", "report"}
            return [await client.call_tool(name, args, meta=meta) for name, args, meta in script]
    return asyncio.run(go())


def body(result) -> dict:
    return json.loads(result.content[0].text)


def test_a_tool_with_a_bad_contract_is_left_out_alone_with_why(gateway):
    """One upstream tool whose schema holds a catastrophic pattern made every gateway call fail, the harmless tools'
    included: the contracts compiled as one registry. That tool alone is left out, and the gateway says why."""
    assert "find_code" in gateway.disabled and "find_code" not in {t.name for t in gateway.tools}
    assert "pattern" in gateway.disabled["find_code"].lower() or "backtrack" in gateway.disabled["find_code"].lower()
    looked, = calls(gateway, [("lookup", {"order_id": "A1"}, None)])
    assert not looked.isError and body(looked)["data"]["status"] == "shipped"


def test_writes_are_read_from_the_upstream_annotations(gateway):
    assert gateway.writes == {"refund", "keyed_refund", "cancel_order"}


@pytest.mark.parametrize(("hints", "claims"), [
    (None, True),  # MCP's defaults: may write, destructive, not idempotent
    ({"readOnlyHint": True}, False),
    ({"readOnlyHint": True, "destructiveHint": True}, False),  # read-only wins: nothing to claim
    ({"idempotentHint": True, "destructiveHint": False}, False),
    ({"idempotentHint": True}, True),  # destructiveHint defaults to true
    ({"destructiveHint": True, "idempotentHint": True}, True),  # "idempotent" does not make a destructive call safe
    ({"destructiveHint": True, "idempotentHint": False}, True),
    ({"destructiveHint": False, "idempotentHint": False}, True),
])
def test_which_annotations_are_claimed(hints, claims):
    """The idempotency claim by annotations (a mutant that stopped claiming destructive-and-idempotent
    tools went unnoticed). An upstream's idempotentHint is its word, not agentlab's proof: a destructive tool is
    claimed whatever it says."""
    from mcp import types

    from agentlab.site.gateway import claimed
    tool = types.Tool(name="t", inputSchema={"type": "object"},
                      annotations=None if hints is None else types.ToolAnnotations(**hints))
    assert claimed(tool) is claims
    assert claimed(tool, writes=["t"]) is True  # the operator's --writes always claims


def test_a_destructive_tool_said_idempotent_runs_once_for_a_resent_call(gateway):
    """Through the whole gateway: the tool marked destructive and idempotent is claimed, so the same call sent
    twice in a session runs once upstream and the second answer is the first one, replayed."""
    first, again = calls(gateway, [("cancel_order", {"order_id": "A1"}, None)] * 2)
    assert not first.isError and again.meta["agentlab/replayed"] is True
    assert gateway.runs()["cancel_order"] == 1


def test_a_duplicated_refund_runs_once_upstream(gateway):
    refund = ("refund", {"order_id": "A1", "amount": 30}, None)
    first, second = calls(gateway, [refund, refund])
    assert not first.isError and not second.isError
    assert body(first)["data"] == body(second)["data"] == {"refunded": 30, "order_id": "A1"}
    assert second.meta["agentlab/replayed"] is True
    assert gateway.runs()["refund"] == 1
    audit = gateway.logs.read("audit")
    assert [line["replayed"] for line in audit] == [False, True]


def test_the_clients_own_key_is_the_clients_alone(gateway):
    meta = {"agentlab/idempotency_key": "refund-A1-once"}
    _first, again = calls(gateway, [("refund", {"order_id": "A1", "amount": 30}, meta)] * 2)
    assert again.meta["agentlab/replayed"] is True and gateway.runs()["refund"] == 1
    # another client (no API key: another session) sending the same key does not get the first one's result
    other, = calls(gateway, [("refund", {"order_id": "A1", "amount": 30}, meta)])
    assert not other.isError, other.content[0].text
    assert other.meta["agentlab/replayed"] is False and gateway.runs()["refund"] == 2


def test_a_connection_is_never_named_after_one_that_closed():
    """In memory and on stdio a connection was named by its object's ``id()``: a connection opened after another
    closed could get its address, so its name and its guard. Then its first refund was the old session's third
    identical call, stopped by the breaker, never run (a flaky failure of the test above)."""
    from agentlab.site.gateway import _connection

    class Connection:
        pass

    names, addresses = [], set()
    for _ in range(200):
        conn = Connection()
        names.append(_connection(conn))
        addresses.add(id(conn))
        del conn
    assert len(addresses) < 200  # the addresses are reused here, as they were under the suite
    assert len(set(names)) == 200
    kept = Connection()
    assert _connection(kept) == _connection(kept)  # one connection keeps its one name


def test_a_key_another_client_used_never_reaches_the_upstream_as_theirs(gateway):
    """Client B sending client A's idempotency key with other arguments was told "ok" with A's refund record (A's
    private note included) and B's own write never ran: the gateway scoped the key in its own store only and sent it
    upstream unchanged. On the wire it is scoped to the client too, as agentlab's own MCP client does."""
    key = {"agentlab/idempotency_key": "refund-once-7"}
    a_args = {"order_id": "A1", "amount": 30, "note": "A's private note"}
    b_args = {"order_id": "B9", "amount": 999, "note": "B's own"}

    a_first, a_again = calls(gateway, [("keyed_refund", a_args, key)] * 2)  # client A: one session
    b_first, = calls(gateway, [("keyed_refund", b_args, key)])  # client B: another session, A's key
    assert body(a_first)["data"]["note"] == "A's private note" and a_again.meta["agentlab/replayed"] is True
    assert not b_first.isError and body(b_first)["data"]["note"] == "B's own", body(b_first)
    assert gateway.runs()["keyed_refund"] == 2  # each client's write ran once
    a_wire, b_wire = body(a_first)["data"]["upstream_key"], body(b_first)["data"]["upstream_key"]
    assert a_wire != b_wire and "refund-once-7" not in (a_wire, b_wire)  # scoped, and never the client's raw key


def test_a_clients_key_reused_with_other_arguments_is_a_conflict_never_a_replay(gateway):
    key = {"agentlab/idempotency_key": "refund-once-8"}
    first, other = calls(gateway, [("keyed_refund", {"order_id": "A1", "amount": 30, "note": "x"}, key),
                                   ("keyed_refund", {"order_id": "A1", "amount": 45, "note": "x"}, key)])
    assert not first.isError and other.isError and other.meta["agentlab/replayed"] is False
    assert "30" not in other.content[0].text or body(other)["error"]["code"] != "OK"
    assert gateway.runs()["keyed_refund"] == 1


def test_one_clients_hanging_calls_never_hold_up_another_client(gateway, upstream):
    """30-45 hanging calls from one client took every worker thread: another client's fast read waited 10-30 s.
    Each client has at most ``in_flight`` calls running; past them a call is refused at once, nothing run, and
    another client's read is answered while the first one's calls still hang."""
    folder, _ = upstream

    async def go():
        async with create_connected_server_and_client_session(gateway.server()) as a, \
                create_connected_server_and_client_session(gateway.server()) as b:
            hanging = [asyncio.create_task(a.call_tool("held", {"order_id": f"A{i}"})) for i in range(gateway.in_flight + 3)]
            for _ in range(400):  # until the gateway runs the first client's share (bounded: a failure, not a hang)
                if sum(gateway._running.values()) == gateway.in_flight and sum(t.done() for t in hanging) == 3:
                    break
                await asyncio.sleep(0.05)
            refused = [t.result() for t in hanging if t.done()]
            other = await b.call_tool("lookup", {"order_id": "B1"})  # answered while the first client's calls hang
            still_hanging = sum(not t.done() for t in hanging)
            (folder / "release").write_text("go")
            answered = await asyncio.gather(*[t for t in hanging if not t.done()])
            return refused, other, still_hanging, answered
    refused, other, still_hanging, answered = asyncio.run(go())
    assert not other.isError and body(other)["data"]["status"] == "shipped"
    assert still_hanging == gateway.in_flight
    assert len(refused) == 3 and all(r.isError and body(r)["error"]["code"] == "RATE_LIMITED" for r in refused)
    assert "4" in body(refused[0])["error"]["message"] and gateway.runs()["held"] == gateway.in_flight
    assert all(not r.isError for r in answered)
    assert gateway._running == {}  # every slot given back


def test_hanging_calls_answer_timeout_at_the_configured_timeout_not_the_connections(gateway, upstream):
    """The tool's timeout is the guards' (GuardConfig.timeout), whatever else is in flight: hanging calls answered
    TIMEOUT after 28-48 s against a 5 s timeout while a client's calls queued for worker threads. Here 1 s: every
    running call hears TIMEOUT within a second or two of it, and one upstream call each (a hanging read is not
    sent again while it still runs)."""
    import time
    from dataclasses import replace
    folder, _ = upstream
    kept = gateway.config
    gateway.config = replace(kept, timeout=1.0)

    async def one(session, i: int) -> tuple[float, object]:
        t0 = time.perf_counter()
        result = await session.call_tool("held", {"order_id": f"T{i}"})
        return time.perf_counter() - t0, result

    async def go():
        async with create_connected_server_and_client_session(gateway.server()) as a:
            return await asyncio.gather(*[one(a, i) for i in range(gateway.in_flight)])
    try:
        answered = asyncio.run(go())
    finally:
        (folder / "release").write_text("go")
        gateway.config = kept
        gateway._guards.clear()
    codes = [body(r)["error"]["code"] for _, r in answered]
    waits = sorted(round(w, 1) for w, _ in answered)
    assert codes == ["TIMEOUT"] * gateway.in_flight, codes
    # the configured second, not the connection's 30 (28-48 s before): slack for a loaded host, which took 3.1 s
    assert waits[-1] < 1.0 + 9.0, waits
    assert gateway.runs()["held"] == gateway.in_flight


def test_invalid_arguments_get_problems_and_never_reach_upstream(gateway):
    result, = calls(gateway, [("refund", {"order_id": "A1", "amount": "thirty", "reason": "x"}, None)])
    assert result.isError
    error = body(result)["error"]
    assert error["code"] == "INVALID_ARGS" and error["problems"]
    assert {p["field"] for p in error["problems"]} >= {"amount"}
    assert "refund" not in gateway.runs()


def test_problems_in_chinese_for_a_chinese_client(upstream, tmp_path):
    _, command = upstream
    with Gateway(command, lang="zh") as gw:
        result, = calls(gw, [("refund", {"order_id": "A1"}, None)])
    assert result.isError and any("\u4e00" <= ch <= "\u9fff" for ch in body(result)["error"]["message"])


def test_five_identical_reads_stop_at_the_breaker(gateway):
    results = calls(gateway, [("lookup", {"order_id": "A1"}, None)] * 5)
    assert gateway.runs()["lookup"] == 2
    assert [body(r)["error"]["code"] for r in results[2:]] == ["LOOP_DETECTED"] * 3


def test_a_dsn_in_an_upstream_error_never_reaches_the_client(gateway):
    result, = calls(gateway, [("report", {"order_id": "A1"}, None)])
    text = result.content[0].text
    assert result.isError and body(result)["error"]["code"] == "TOOL_ERROR"
    for leak in ("hunter2", "postgresql://", "db.internal", "Traceback"):
        assert leak not in text
    errors = gateway.logs.read("error")  # the operator's log keeps what happened, without the password
    assert errors and "could not connect" in errors[0]["detail"] and "hunter2" not in json.dumps(errors)


def test_a_client_over_its_rate_gets_a_clear_error(gateway):
    results = calls(gateway, [("lookup", {"order_id": f"A{i}"}, None) for i in range(10)])
    assert [r.isError for r in results] == [False] * 8 + [True] * 2
    error = body(results[-1])["error"]
    assert error["code"] == "RATE_LIMITED" and "8" in error["message"] and error["retry_after"] >= 1
    assert gateway.runs()["lookup"] == 8
    other, = calls(gateway, [("lookup", {"order_id": "B1"}, None)])  # another client has its own share
    assert not other.isError
    gateway.now[0] += 61  # a minute later the first client's window is empty again


def test_an_unknown_tool_gets_the_tools_there_are(gateway):
    result, = calls(gateway, [("refnud", {"order_id": "A1", "amount": 30}, None)])
    text = result.content[0].text
    assert result.isError and "refund" in text and "lookup" in text


def test_over_http_a_clients_key_replays_on_a_new_connection_and_its_rate_is_its_own(gateway):
    """Streamable HTTP at /mcp, as `python -m agentlab gateway` serves it: the client is its API key."""
    import threading
    import time

    import httpx
    import uvicorn
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(gateway.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.02)

    async def session(key: str, script: list) -> list:
        async with httpx.AsyncClient(headers={"X-API-Key": key}) as http, \
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write, _), \
                ClientSession(read, write) as client:
            await client.initialize()
            return [await client.call_tool(name, args, meta=meta) for name, args, meta in script]

    async def listed(key: str) -> set[str]:
        async with httpx.AsyncClient(headers={"X-API-Key": key}) as http, \
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write, _), \
                ClientSession(read, write) as client:
            await client.initialize()
            return {t.name for t in (await client.list_tools()).tools}

    meta = {"agentlab/idempotency_key": "refund-A1-once"}
    refund = ("refund", {"order_id": "A1", "amount": 30}, meta)
    alice, _ = gateway.keys.create("alice")
    mallory_key, _ = gateway.keys.create("mallory")
    narrow, _ = gateway.keys.create("narrow", ("lookup", "refund"))
    try:
        # a key's client is listed the tools its key may call (every one was listed, the others then refused)
        assert asyncio.run(listed(narrow)) == {"lookup", "refund"} and len(asyncio.run(listed(alice))) > 2
        _first, = asyncio.run(session(alice, [refund]))
        again, = asyncio.run(session(alice, [refund]))  # a new connection, the same client and key
        mallory, = asyncio.run(session(mallory_key, [refund]))  # the same key from another client
        reads = asyncio.run(session(alice, [("lookup", {"order_id": f"A{i}"}, None) for i in range(8)]))
    finally:
        server.should_exit = True
        thread.join(10)
    assert again.meta["agentlab/replayed"] is True and mallory.meta["agentlab/replayed"] is False
    assert gateway.runs()["refund"] == 2
    # alice's two refund calls (the replay too) and eight reads: past 8 a minute from her ninth call on
    assert [r.isError for r in reads] == [False] * 6 + [True] * 2
    assert alice not in json.dumps(gateway.logs.read("access"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_command_says_in_one_line_when_the_upstream_cannot_be_reached(lang, tmp_path, capsys):
    from agentlab.cli import main
    code = main(["gateway", "--upstream", str(tmp_path / "no-such-server"), "--logs", str(tmp_path / "logs"),
                 "--lang", lang])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert ("upstream MCP server" if lang == "en" else "上游 MCP 服务器") in err
    # the system's refusal in the reader's words: it read "FileNotFoundError: [Errno 2] No such file or directory"
    assert t("os.ENOENT", lang) in err and "Errno" not in err and "FileNotFoundError" not in err, err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_unreachable_url_upstream_is_said_as_the_refused_connection_not_a_task_group(tmp_path, capsys, lang):
    from agentlab.cli import main
    port = free_port()  # nothing listens once the socket is closed
    code = main(["gateway", "--upstream", f"http://127.0.0.1:{port}/mcp", "--logs", str(tmp_path / "logs"),
                 "--lang", lang])
    err = capsys.readouterr().err
    assert code == 2 and t("os.ECONNREFUSED", lang) in err and "TaskGroup" not in err and "ConnectError" not in err, err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_upstream_command_that_ends_at_once_is_said_in_the_readers_words(tmp_path, capsys, lang):
    from agentlab.cli import main
    code = main(["gateway", "--upstream", f"{sys.executable} -c 'raise SystemExit(3)'", "--logs",
                 str(tmp_path / "logs"), "--lang", lang])
    err = capsys.readouterr().err
    assert code == 2 and t("gateway.upstream_closed", lang) in err and "McpError" not in err, err


def test_a_long_lived_gateway_keeps_a_bounded_number_of_sessions(gateway, monkeypatch):
    import agentlab.site.gateway as module
    monkeypatch.setattr(module, "MAX_SESSIONS", 3)
    for i in range(5):
        gateway.guard(f"s{i}", "en")
    assert [s for s, _ in gateway._guards] == ["s2", "s3", "s4"]


@contextlib.contextmanager
def served(gateway):
    """``gateway.app()`` under uvicorn in a thread on a free loopback port; yields its /mcp URL."""
    import threading
    import time

    import uvicorn
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(gateway.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)


def http_session(url: str, key: str | None, script: list) -> list:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> list:
        async with httpx.AsyncClient(headers={"X-API-Key": key} if key else {}) as http, \
                streamable_http_client(url, http_client=http) as (read, write, _), ClientSession(read, write) as client:
            await client.initialize()
            return [await client.call_tool(name, args) for name, args in script]
    return asyncio.run(go())


def initialize(url: str, headers: dict) -> object:
    import httpx
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    return httpx.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers}, timeout=15)


def test_the_gateways_instructions_are_said_in_the_language_of_the_request_that_opens_the_session(gateway):
    from agentlab.i18n import t
    key, _ = gateway.keys.create("mei")
    with served(gateway) as url:
        said = {lang: initialize(url, {"X-API-Key": key, "Accept-Language": accept}).json()["result"]["instructions"]
                for lang, accept in (("zh", "zh-CN,zh;q=0.9"), ("en", "en-GB,en;q=0.8"))}
    assert said == {"zh": t("gateway.instructions", "zh"), "en": t("gateway.instructions", "en")}

def test_over_http_invented_keys_get_nothing_and_an_operators_key_has_its_limit(gateway):
    """The rate limit and the breaker keyed on whatever X-API-Key a client invented (30 calls,
    a fresh key each: none limited). Now a key comes from the operator's key store; an unknown key, or none, is
    refused before any MCP session, in the client's language, and nothing runs."""
    key, record = gateway.keys.create("alice")
    with served(gateway) as url:
        invented = [initialize(url, {"X-API-Key": f"made-up-{i}"}) for i in range(30)]
        none = initialize(url, {"Accept-Language": "zh"})
        ranked = initialize(url, {"Accept-Language": "fr-FR,zh-CN;q=0.8,en;q=0.5"})  # read by q-value, as every page
        bearer = initialize(url, {"Authorization": "Bearer made-up"})
        reads = http_session(url, key, [("lookup", {"order_id": f"A{i}"}) for i in range(10)])
        gateway.keys.revoke(record.id)
        revoked = initialize(url, {"X-API-Key": key})
    assert all(r.status_code == 401 for r in invented) and bearer.status_code == 401 and revoked.status_code == 401
    said = invented[0].json()["error"]["message"]
    assert "unknown" in said and "made-up" not in said and "Traceback" not in said
    assert none.status_code == 401 and "运维方" in none.json()["error"]["message"]
    assert ranked.status_code == 401 and "运维方" in ranked.json()["error"]["message"]
    assert [r.isError for r in reads] == [False] * 8 + [True] * 2  # her limit holds: 8 a minute
    assert gateway.runs() == {"lookup": 8}


def test_keyless_callers_share_one_clients_limit_when_the_operator_allows_them(gateway):
    gateway.allow_keyless = True
    with served(gateway) as url:
        first = http_session(url, None, [("lookup", {"order_id": f"A{i}"}) for i in range(5)])
        second = http_session(url, None, [("lookup", {"order_id": f"B{i}"}) for i in range(5)])  # another session
        invented = initialize(url, {"X-API-Key": "made-up"})  # a key it does not know is still refused
    assert [r.isError for r in first + second] == [False] * 8 + [True] * 2
    assert invented.status_code == 401


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_gateway_command_makes_lists_and_revokes_keys(tmp_path, capsys, lang):
    from agentlab.cli import main
    # with no key yet, the way to make one is the gateway's own command (it named the site's)
    assert main(["gateway", "keys", "list", "--data", str(tmp_path), "--lang", lang]) == 0
    assert "agentlab gateway keys create" in capsys.readouterr().err
    assert main(["gateway", "keys", "create", "--name", "bot", "--data", str(tmp_path), "--lang", lang]) == 0
    key = capsys.readouterr().out.strip()
    record = KeyStore(tmp_path / "keys.db").check(key)
    assert record is not None and record.name == "bot"
    assert main(["gateway", "keys", "list", "--data", str(tmp_path), "--lang", lang]) == 0
    out = capsys.readouterr().out
    assert record.id in out and key not in out
    # a gateway's key is for tools: its line said "skills *"
    assert ({"en": "tools *", "zh": "工具 *"}[lang] in out) and "skills" not in out and "技能" not in out, out
    assert main(["gateway", "keys", "revoke", record.id, "--data", str(tmp_path), "--lang", lang]) == 0
    assert KeyStore(tmp_path / "keys.db").check(key) is None


def test_with_a_store_that_outlives_the_process_a_call_runs_in_a_worker_and_a_duplicate_still_runs_once(gateway,
                                                                                                        tmp_path):
    """With the claims in memory the guards run on the event loop; with a SQLite file (I/O) they go to a worker
    thread. Both ways, the same guards: a duplicated refund runs once upstream, a bad argument never reaches it."""
    from agentlab.store import SQLiteStore
    gateway.store = SQLiteStore(tmp_path / "claims.db")
    assert not gateway.guard("probe", "en").on_loop
    refund = ("refund", {"order_id": "A9", "amount": 5}, None)
    first, second, bad = calls(gateway, [refund, refund, ("lookup", {"order_id": 7}, None)])
    assert not first.isError and second.meta["agentlab/replayed"] is True
    assert bad.isError and body(bad)["error"]["code"] == "INVALID_ARGS"
    assert gateway.runs() == {"refund": 1}
    gateway.store = MemoryStore()
    gateway._guards.clear()
    assert gateway.guard("probe", "en").on_loop


def test_a_sessions_calls_find_their_contracts_registry_without_writing_every_schema_out_again(gateway, monkeypatch):
    """The contracts are one tuple for the gateway's life: each session's guard finds their registry by identity. As a
    list, every call wrote every tool's schema out as canonical text to look the same registry up again."""
    import agentlab.adapters.core as core
    written: list[int] = []
    real = core.canonical
    monkeypatch.setattr(core, "canonical", lambda value: written.append(1) or real(value))
    assert isinstance(gateway.contracts, tuple)
    out = calls(gateway, [("lookup", {"order_id": f"A{i}"}, None) for i in range(5)])
    assert [r.isError for r in out] == [False] * 5 and gateway.runs() == {"lookup": 5}
    assert len(written) <= 1, "the registry is found once a session, not once a call"
    bad = calls(gateway, [("lookup", {"order_id": 7}, None)])[0]  # still checked against the tool's own contract
    assert bad.isError and body(bad)["error"]["code"] == "INVALID_ARGS"


def test_over_http_the_endpoints_client_is_the_handlers_and_a_key_revoked_mid_session_is_refused(gateway, monkeypatch):
    """The HTTP endpoint finds the client of each request (a stranger refused before any session) and hands it to that
    request's handler: one look-up a call, not two. A key revoked while its session is open is refused at the next
    call, and nothing more runs."""
    key, record = gateway.keys.create("alice")
    looked: list[str] = []
    for name in ("who", "known"):
        real = getattr(gateway, name)
        monkeypatch.setattr(gateway, name, lambda headers, real=real, name=name: looked.append(name) or real(headers))
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    got: dict = {}

    async def go(url: str) -> None:
        async with httpx.AsyncClient(headers={"X-API-Key": key}) as http, \
                streamable_http_client(url, http_client=http) as (read, write, _), ClientSession(read, write) as client:
            await client.initialize()
            before = len(looked)
            got["done"] = [await client.call_tool("lookup", {"order_id": f"A{i}"}) for i in range(4)]
            got["during"] = looked[before:]
            gateway.keys.revoke(record.id)
            got["after"] = await asyncio.wait_for(client.call_tool("lookup", {"order_id": "B1"}), 10)
    with served(gateway) as url:
        try:
            asyncio.run(go(url))
        except BaseException as exc:  # noqa: BLE001 - refused at the HTTP endpoint (401): the SDK's client raises
            got.setdefault("after", exc)
    done, during, after = got["done"], got["during"], got["after"]
    assert [r.isError for r in done] == [False] * 4
    # each HTTP request is looked up once, at the endpoint (a known key: no worker thread); the handler asks nobody
    assert during and set(during) == {"known"}, during
    assert isinstance(after, Exception) or after.isError, after
    assert gateway.runs() == {"lookup": 4}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_gateway_with_no_key_says_every_client_will_be_refused_and_how_to_make_one(lang, upstream, tmp_path, capsys,
                                                                                     monkeypatch):
    """Started as the README says, in a fresh folder, it printed only "guarding 3 tools at ..." and every client then
    heard 401."""
    from agentlab.cli import main
    from agentlab.site import mcp_client
    monkeypatch.setattr(mcp_client.MCPConnection, "serve", lambda self, server: None)  # started, then stopped at once
    _folder, command = upstream
    data = tmp_path / "data"
    args = ["gateway", "--upstream", command, "--logs", str(tmp_path / "logs"), "--data", str(data), "--lang", lang]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "gateway keys create" in err and "401" in err, err
    assert main(["gateway", "keys", "create", "--name", "agent", "--data", str(data)]) == 0
    capsys.readouterr()
    assert main(args) == 0
    assert "gateway keys create" not in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_used_up_quota_is_said_as_a_quota_never_as_a_minutes_rate(gateway, lang):
    """A key with a quota of 2 a day, at its third call, was told it sent more than 8 calls in a minute, that this
    was temporary and to send it again after hours."""
    _, record = gateway.keys.create("quota-two", ("lookup",), quota=2, period="day")
    said = [gateway._admit("r", "lookup", {}, "client", "s", lang, record, 0.0) for _ in range(3)]
    assert said[:2] == [None, None]
    error = json.loads(said[2].content[0].text)["error"]
    assert error["code"] == "RATE_LIMITED" and error["retry_after"] > 60
    assert error["message"] == t("site.quota", lang, limit=2, period=t("site.period.day", lang))
    assert error["hint"] == t("site.hint.quota", lang) and "8" not in error["message"]


def test_a_key_reused_with_other_arguments_names_the_clients_key_alone(gateway):
    """The conflict read "already done for client:key:1b46ef8d5420:k1": the client's scope, never the model's to read."""
    meta = {"agentlab/idempotency_key": "k1"}
    _first, other = calls(gateway, [("refund", {"order_id": "A1", "amount": 10}, meta),
                                     ("refund", {"order_id": "A1", "amount": 99}, meta)])
    error = body(other)["error"]
    assert other.isError and error["code"] == "CONFLICT" and "k1" in error["message"], error
    assert "client:" not in other.content[0].text and gateway.runs()["refund"] == 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_body_that_is_not_utf8_is_refused_in_a_sentence(gateway, lang, capfd):
    """The SDK decoded it and failed: -32603 "Error handling POST request", and a UnicodeDecodeError stack on the
    operator's terminal."""
    import httpx
    key, _ = gateway.keys.create("mei")
    with served(gateway) as url:
        refused = httpx.post(url, content=b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "x": "\xff\xfe"}',
                             headers={"X-API-Key": key, "Accept": "application/json, text/event-stream",
                                      "Content-Type": "application/json", "Accept-Language": lang}, timeout=15)
        opened = initialize(url, {"X-API-Key": key})  # a body that is UTF-8 still reaches the SDK whole
    assert refused.status_code == 400 and refused.json()["error"] == {"code": -32700, "message": t("mcp.not_utf8", lang)}
    assert opened.status_code == 200 and "instructions" in opened.json()["result"]
    assert "Traceback" not in "".join(capfd.readouterr())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_gateway_on_a_taken_port_says_so_in_a_line_and_ends(lang, upstream, tmp_path, capsys, monkeypatch):
    """On a port in use it printed "guarding 2 tools", then uvicorn's English, and stayed running, deaf to Ctrl-C and
    SIGTERM (uvicorn's exit ended the loop's thread and left the main thread waiting on it)."""
    import socket

    from agentlab import ports
    from agentlab.cli import main
    _folder, command = upstream
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        args = ["gateway", "--upstream", command, "--logs", str(tmp_path / "logs"), "--data", str(tmp_path / "data"),
                "--port", str(port), "--lang", lang, "--allow-keyless"]
        assert main(args) == 2  # checked before the upstream starts
        said = capsys.readouterr().err
        assert t("serve.port_busy", lang, host="127.0.0.1", port=port) in said and "serving" not in said, said
        asked = []  # taken between the check and the bind: free at the check, taken when asked again after
        monkeypatch.setattr(ports, "port_taken", lambda host, port: bool(asked.append(port)) or len(asked) > 1)
        assert main(args) == 2
        assert t("serve.port_busy", lang, host="127.0.0.1", port=port) in capsys.readouterr().err
        monkeypatch.setattr(ports, "port_taken", lambda host, port: False)  # another cause: not said as a port taken
        assert main(args) == 2
        assert t("serve.not_started", lang, host="127.0.0.1", port=port) in capsys.readouterr().err
