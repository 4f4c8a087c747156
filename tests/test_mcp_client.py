"""MCP tools in the guarded loop (agentlab/site/mcp_client.py).

The after-sales desk runs through the site's MCP endpoint (streamable HTTP, the site under uvicorn)
and ends in the same state and status as in process, as tests/test_site_client.py does over HTTP.
"""
import json

import pytest
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations
from test_site_client import SCRIPT

from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, call, say, tool_calls
from agentlab.scenarios import aftersales
from agentlab.site.mcp_client import MCPConnection, mcp_registry
from agentlab.site.mcp_server import mcp_server
from agentlab.site.service import SkillSite
from agentlab.site.serving import serving


def test_the_desk_through_mcp_ends_as_it_does_in_process(tmp_path):
    site = SkillSite(tmp_path)
    desk = aftersales.Desk()
    local = run_guarded(ScriptedModel(list(SCRIPT)), aftersales.make_registry(desk), "refund A1001")
    key, tenant = site.create_key("agent", ["get_order", "search_orders", "create_refund", "escalate_to_human"])
    with serving(site) as url, MCPConnection(url + "/mcp", headers={"X-API-Key": key, "X-Session-Id": "sess-mcp"}) as conn:
        reg = conn.registry()
        assert reg["create_refund"].keyed and not reg["get_order"].side_effect
        remote = run_guarded(ScriptedModel(list(SCRIPT)), reg, "refund A1001")
    assert remote.status == local.status
    assert site.state_for(tenant.id)["aftersales"].snapshot() == desk.snapshot()
    assert len(desk.refunds) == 1 and len(desk.tickets) == 1
    told = [m["content"] for m in remote.messages if m.get("role") == "tool"]
    assert '"did_you_mean": "order_id"' in told[0]  # caught by the loop before anything was sent
    assert '"INVALID_ARGS"' in told[2] and "must not exceed" in told[2]  # the site's refusal, as the model reads it
    site.logs.flush()  # the call lines wait in memory for a moment (docs/site.md#logs)
    calls = [json.loads(x) for x in (site.data_dir / "logs" / "call.jsonl").read_text().splitlines()]
    assert {c["session_id"] for c in calls} == {"sess-mcp"}
    assert sum(c["skill"] == "create_refund" and c["status"] == 200 for c in calls) == 1


def test_a_resent_write_carries_the_loops_key_and_replays(tmp_path):
    site = SkillSite(tmp_path)
    key, tenant = site.create_key("agent")
    with MCPConnection(mcp_server(site, api_key=key)) as conn:
        refund = conn.registry()["create_refund"]
        args = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
        first = refund.fn(**args, idempotency_key="create_refund:A1001")
        again = refund.fn(**args, idempotency_key="create_refund:A1001")  # the loop's resend after a lost reply
    assert first == again and len(site.state_for(tenant.id)["aftersales"].snapshot()["refunds"]) == 1


def test_any_mcp_server_tools_run_in_the_loop(tmp_path):
    server = FastMCP("notes")
    notes: list[str] = []

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def count_notes() -> dict:
        """How many notes there are."""
        return {"count": len(notes)}

    @server.tool()
    def add_note(text: str) -> dict:
        """Add a note."""
        if not text.strip():
            raise ValueError("text must not be blank")
        notes.append(text)
        return {"count": len(notes)}

    reg = mcp_registry(server._mcp_server)  # the SDK's low-level server, in memory
    assert not reg["count_notes"].side_effect and reg["add_note"].side_effect and not reg["add_note"].keyed
    model = ScriptedModel([tool_calls(call("add_note", {"text": "hi"})), tool_calls(call("count_notes", {})),
                           tool_calls(call("add_note", {"text": " "})), say("one note")])
    run = run_guarded(model, reg, "add notes")
    told = [json.loads(m["content"]) for m in run.messages if m.get("role") == "tool"]
    assert told[1]["data"]["count"] == 1 and notes == ["hi"]
    # the server's own error text reaches the model as TOOL_ERROR: fatal, never retried
    assert told[2]["error"]["code"] == "TOOL_ERROR" and "must not be blank" in told[2]["error"]["message"]
    assert run.status == "escalated"  # a fatal error hands the conversation to a person


def test_an_unreachable_server_fails_at_connection(tmp_path):
    from conftest import free_port
    with pytest.raises(BaseException):  # noqa: B017 - the SDK's connection error, whatever its class
        MCPConnection(f"http://127.0.0.1:{free_port()}/mcp", timeout=3)
