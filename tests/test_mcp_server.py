"""The site's skills over MCP (agentlab/site/mcp_server.py), driven by the official SDK's own client.

In memory (``create_connected_server_and_client_session``) for the contract, and over streamable HTTP
against the site's app under uvicorn for the key header and the Host check.
"""
import json

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from agentlab.site.mcp_server import IDEMPOTENCY_META, mcp_server
from agentlab.site.service import SkillSite
from agentlab.site.serving import serving

REFUND = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}


def in_memory(site, key, steps):
    """Run ``steps(session)`` against ``site``'s MCP server through the SDK's in-memory client."""
    async def main():
        async with create_connected_server_and_client_session(mcp_server(site, api_key=key)) as session:
            return await steps(session)
    return anyio.run(main)


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path)


def test_the_listing_carries_annotations_schemas_and_the_idempotency_fields(site):
    key, _ = site.create_key("agent", ["get_order", "create_refund"])
    tools = {t.name: t for t in in_memory(site, key, lambda s: s.list_tools()).tools}
    assert set(tools) == {"get_order", "create_refund"}  # only what the key may call
    read, write = tools["get_order"], tools["create_refund"]
    assert read.annotations.readOnlyHint is True and read.outputSchema == dict(site.skills["get_order"].meta.output_schema)
    assert write.annotations.readOnlyHint is False
    assert write.annotations.destructiveHint is True and write.annotations.idempotentHint is True
    assert write.meta["agentlab/idempotency"] == {"fields": ["order_id"], "scope": "global"}
    assert "Limit: 10 calls per minute." in write.description


def test_a_read_returns_structured_content(site):
    key, _ = site.create_key("agent")
    result = in_memory(site, key, lambda s: s.call_tool("get_order", {"order_id": "A1001"}))
    assert not result.isError and result.structuredContent["order_id"] == "A1001"
    assert json.loads(result.content[0].text) == result.structuredContent


def test_errors_are_is_error_results_in_agentlabs_shape(site):
    key, _ = site.create_key("agent", ["get_order"])

    async def steps(s):
        return (await s.call_tool("get_order", {"orderId": "A1001"}),  # the site's schema check, not the SDK's
                await s.call_tool("create_refund", REFUND, meta={IDEMPOTENCY_META: "k1"}))  # not this key's skill
    invalid, denied = in_memory(site, key, steps)
    assert invalid.isError and denied.isError
    error = invalid.structuredContent["error"]
    assert invalid.structuredContent["status"] == 422 and error["code"] == "INVALID_ARGS"
    assert {"code", "message", "problems", "hint", "retryable"} <= set(error) and error["problems"]
    assert json.loads(invalid.content[0].text)["error"] == error  # what a text-only client reads
    assert denied.structuredContent["status"] == 403 and denied.structuredContent["error"]["code"] == "PERMISSION_DENIED"
    unkeyed = in_memory(site, None, lambda s: s.call_tool("get_order", {"order_id": "A1001"}))
    assert unkeyed.isError and unkeyed.structuredContent["error"]["code"] == "UNAUTHENTICATED"


def test_a_retry_with_the_same_key_replays_and_another_body_is_refused(site):
    key, tenant = site.create_key("agent")

    async def steps(s):
        first = await s.call_tool("create_refund", REFUND, meta={IDEMPOTENCY_META: "refund-A1001"})
        again = await s.call_tool("create_refund", REFUND, meta={IDEMPOTENCY_META: "refund-A1001"})
        other = await s.call_tool("create_refund", {**REFUND, "amount": 10.0}, meta={IDEMPOTENCY_META: "refund-A1001"})
        bare = await s.call_tool("create_refund", REFUND)
        return first, again, other, bare
    first, again, other, bare = in_memory(site, key, steps)
    assert not first.isError and not again.isError
    assert again.structuredContent == first.structuredContent
    assert (first.meta["agentlab/replayed"], again.meta["agentlab/replayed"]) == (False, True)
    assert len(site.state_for(tenant.id)["aftersales"].snapshot()["refunds"]) == 1  # one effect
    assert other.isError and other.structuredContent["error"]["code"] == "CONFLICT"
    # a key that came in _meta is never called a header an MCP client cannot send ("this Idempotency-Key was used")
    assert "Idempotency-Key" not in json.dumps(other.structuredContent), other.structuredContent
    assert bare.isError and bare.structuredContent["status"] == 428  # no key: refused, not run unprotected
    told = bare.structuredContent["error"]["message"]  # where an MCP client puts it, never a header it cannot send
    assert IDEMPOTENCY_META in told and "_meta" in told and "header" not in told, told
    site.logs.flush()  # the call lines wait in memory for a moment (docs/site.md#logs)
    calls = [json.loads(x) for x in (site.data_dir / "logs" / "call.jsonl").read_text().splitlines()]
    assert [c["replayed"] for c in calls if c["skill"] == "create_refund" and c["status"] == 200] == [False, True]


def test_limits_apply_over_mcp(site):
    key, _ = site.create_key("agent", quota=2, period="day")

    async def steps(s):
        return [await s.call_tool("get_order", {"order_id": "A1001"}) for _ in range(3)]
    results = in_memory(site, key, steps)
    assert [r.isError for r in results] == [False, False, True]
    assert results[2].structuredContent["error"]["code"] == "RATE_LIMITED" and results[2].structuredContent["retry_after"]


def test_streamable_http_in_the_sites_app_takes_the_key_header_and_refuses_other_hosts(site):
    key, _ = site.create_key("agent", ["get_order"])

    async def steps(url):
        async with httpx.AsyncClient(headers={"X-API-Key": key, "X-Session-Id": "sess-mcp"}) as http, \
                streamable_http_client(url, http_client=http) as (r, w, _), ClientSession(r, w) as s:
            await s.initialize()
            return await s.list_tools(), await s.call_tool("get_order", {"order_id": "A1001"})
    with serving(site) as base:
        listed, result = anyio.run(steps, base + "/mcp")
        foreign = httpx.post(base + "/mcp", headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
                             json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [t.name for t in listed.tools] == ["get_order"]
    assert result.structuredContent["order_id"] == "A1001"
    assert foreign.status_code == 421  # DNS rebinding protection: only localhost unless create_app(mcp_hosts=...)
    site.logs.flush()  # the call lines wait in memory for a moment (docs/site.md#logs)
    calls = [json.loads(x) for x in (site.data_dir / "logs" / "call.jsonl").read_text().splitlines()]
    assert calls[-1]["session_id"] == "sess-mcp" and calls[-1]["key_name"] == "agent"


def test_the_sites_mcp_instructions_are_said_in_the_clients_language(site):
    """The instructions an MCP client shows (and its model reads) were one English sentence in the code: a client
    whose requests ask for Chinese now gets the catalogue's Chinese, as every other reply of the site."""
    from agentlab.i18n import t
    key, _ = site.create_key("agent", ["get_order"])

    async def opened(url, accept):
        async with httpx.AsyncClient(headers={"X-API-Key": key, "Accept-Language": accept}) as http, \
                streamable_http_client(url, http_client=http) as (r, w, _), ClientSession(r, w) as s:
            return (await s.initialize()).instructions
    with serving(site) as base:
        said = {accept: anyio.run(opened, base + "/mcp", accept) for accept in ("zh-CN,zh;q=0.9", "en-US", "fr,zh;q=0.5")}
    assert said == {"zh-CN,zh;q=0.9": t("site.mcp_instructions", "zh"), "en-US": t("site.mcp_instructions", "en"),
                    "fr,zh;q=0.5": t("site.mcp_instructions", "zh")}
    assert said["en-US"] != said["zh-CN,zh;q=0.9"]

def _nested(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("arguments", [
    {"order_id": float("nan")},
    {"order_id": "A1001\ud800"},
    {"order_id": "A1001", "x": _nested(70)},
    {"order_id": 10 ** 5000},
], ids=["nan", "surrogate", "70 deep", "5000 digits"])
def test_a_malformed_call_is_a_4xx_in_agentlabs_shape_never_python_text(site, arguments):
    import sys
    sys.set_int_max_str_digits(0)  # so that the SDK itself can carry the 5,000-digit number to the server
    try:
        key, _ = site.create_key("agent")
        result = in_memory(site, key, lambda s: s.call_tool("get_order", arguments))
    finally:
        sys.set_int_max_str_digits(4300)
    assert result.isError
    refused = json.loads(result.content[0].text)
    assert 400 <= refused["status"] < 500 and refused["error"]["category"] != "transient"  # fix it, never "later"
    assert "Traceback" not in result.content[0].text and "Error:" not in result.content[0].text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_body_that_is_not_utf8_is_refused_in_a_sentence_at_the_sites_mcp(site, lang, capfd):
    """The SDK decoded it and failed: JSON-RPC -32603 "Error handling POST request" to the client, a
    UnicodeDecodeError stack on the server's stderr."""
    from agentlab.i18n import t
    key, _ = site.create_key("agent", ["get_order"])
    with serving(site) as base:
        refused = httpx.post(base + "/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "x": "\xff"}',
                             headers={"X-API-Key": key, "Accept": "application/json, text/event-stream",
                                      "Content-Type": "application/json", "Accept-Language": lang}, timeout=15)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700, refused.text
    assert refused.json()["error"]["message"] == t("mcp.not_utf8", lang), refused.text
    assert "Traceback" not in "".join(capfd.readouterr())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_what_the_sdk_would_answer_in_its_own_english_is_refused_in_json_rpc_and_the_callers_language(site, lang, capfd):
    """Bad JSON read "Parse error: Expecting property name..."; a JSON body that is no JSON-RPC message got a pydantic
    dump of eleven errors echoing the body; a body past the limit got the REST route's reply, telling an MCP client
    to send {"arguments": ...}."""
    from agentlab.i18n import t
    key, _ = site.create_key("agent", ["get_order"])
    headers = {"X-API-Key": key, "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Accept-Language": lang}
    with serving(site) as base:
        bad_json = httpx.post(base + "/mcp", content=b'{"jsonrpc": "2.0", "id": 1, method: 1}', headers=headers, timeout=15)
        not_rpc = httpx.post(base + "/mcp", json={"arguments": {"city": "x"}}, headers=headers, timeout=15)
        too_big = httpx.post(base + "/mcp", content=b'{"jsonrpc": "2.0", "x": "' + b"x" * 2_000_000 + b'"}',
                             headers=headers, timeout=30)
        ok = httpx.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers, timeout=15)
    assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == -32700, bad_json.text
    assert "Expecting" not in bad_json.text or lang == "en"
    assert not_rpc.status_code == 400 and not_rpc.json()["error"] == {"code": -32600, "message": t("mcp.not_request", lang)}
    assert too_big.status_code == 413 and too_big.json()["jsonrpc"] == "2.0" and "arguments" not in too_big.text, too_big.text[:300]
    assert ok.status_code == 200, ok.text
    assert "pydantic" not in "".join(capfd.readouterr()) + not_rpc.text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_gateway_in_front_of_this_site_sends_its_own_key_and_language_upstream(site, lang, tmp_path):
    """The gateway had no way to give the site a key: every call came back "The API key is missing or unknown", in
    English, its hint blaming the client's valid gateway key."""
    from mcp.shared.memory import create_connected_server_and_client_session

    from agentlab.site.gateway import Gateway
    key, _ = site.create_key("gateway", ["get_order"])

    async def ask(gw):
        async with create_connected_server_and_client_session(gw.server()) as client:
            return await client.call_tool("get_order", {"order_id": "A1001"})
    with serving(site) as base:
        with Gateway(base + "/mcp", lang=lang, upstream_headers={"X-API-Key": key}, sleep=lambda s: None) as gw:
            assert "get_order" in {t.name for t in gw.tools}
            result = anyio.run(ask, gw)
        assert not result.isError, result.content[0].text
