"""The site's skills as agentlab tools over HTTP (agentlab/site/client.py).

The after-sales desk runs through the guarded loop twice, in process and through the site
(uvicorn on 127.0.0.1 in a thread, so the site's desk can be inspected afterwards), and must
end in the same state.
"""
import json
import threading
import time

import httpx
import pytest
import uvicorn
from conftest import free_port
from fastapi.testclient import TestClient
from site_helpers import Clock

from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, call, say, tool_calls
from agentlab.scenarios import aftersales
from agentlab.site.app import create_app
from agentlab.site.client import site_registry
from agentlab.site.service import SkillSite
from agentlab.workbook import kernels

# the client sends each request with its skill's own wait (timeout=...), as it must over a real socket; Starlette's
# TestClient, which stands in for the socket here, has no timeout to honour and warns about each one
pytestmark = pytest.mark.filterwarnings("ignore:You should not use the 'timeout' argument with the TestClient")

SCRIPT = [
    tool_calls(call("get_order", {"orderId": "A1001"})),  # wrong field: the loop's validator catches it locally
    tool_calls(call("get_order", {"order_id": "A1001"})),
    tool_calls(call("create_refund", {"order_id": "A1001", "amount": 99999, "reason": "user_cancel"})),  # site: 422
    tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})),
    tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})),  # a repeat
    tool_calls(call("escalate_to_human", {"summary": "customer asks about delivery of A1002"})),
    say("Refunded 199 yuan for A1001 and passed A1002 to a colleague."),
]


@pytest.fixture
def live_site(tmp_path):
    site = SkillSite(tmp_path)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(site), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield site, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_the_desk_through_the_site_ends_as_it_does_in_process(live_site):
    site, url = live_site
    desk = aftersales.Desk()
    local = run_guarded(ScriptedModel(list(SCRIPT)), aftersales.make_registry(desk), "refund A1001")
    key, tenant = site.create_key("agent", ["get_order", "search_orders", "create_refund", "escalate_to_human"])
    remote_reg = site_registry(url, key, session_id="sess-desk")
    remote = run_guarded(ScriptedModel(list(SCRIPT)), remote_reg, "refund A1001")
    assert remote.status == local.status
    assert site.state_for(tenant.id)["aftersales"].snapshot() == desk.snapshot()
    assert len(desk.refunds) == 1 and len(desk.tickets) == 1
    told = [m["content"] for m in remote.messages if m.get("role") == "tool"]
    assert '"did_you_mean": "order_id"' in told[0]  # caught before anything was sent
    assert '"INVALID_ARGS"' in told[2] and "must not exceed" in told[2]  # the site's 422, as the model reads it
    # and where it happened, as in process: a business rule's refusal is semantic (the client had filed every site
    # refusal under its code's default stage, so the same rule read "structure" through the site)
    here = [json.loads(m["content"])["error"] for m in local.messages if m.get("role") == "tool" and '"ok": false' in m["content"]]
    there = [json.loads(x)["error"] for x in told if '"ok": false' in x]
    assert [(e["code"], e["category"], e["stage"]) for e in there] == [(e["code"], e["category"], e["stage"]) for e in here]
    assert there[-1]["stage"] == "semantic"
    site.logs.flush()  # the call lines wait in memory for a moment (docs/site.md#logs)
    calls = [json.loads(x) for x in (site.data_dir / "logs" / "call.jsonl").read_text().splitlines()]
    assert {c["session_id"] for c in calls} == {"sess-desk"}
    assert sum(c["skill"] == "create_refund" and c["status"] == 200 for c in calls) == 1  # the repeat replayed in the loop


NAIVE_SCRIPT = [
    tool_calls(call("get_order", {"order_id": "A1001"})),
    tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})),
    tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})),  # a repeat
    say("Refunded."),
]


def test_the_naive_loop_through_the_site_ends_as_it_does_in_process(live_site):
    from agentlab.naive import run_naive
    site, url = live_site
    desk = aftersales.Desk()
    local = run_naive(ScriptedModel(list(NAIVE_SCRIPT)), aftersales.make_registry(desk), "refund A1001")
    key, tenant = site.create_key("naive", ["get_order", "create_refund"])
    remote = run_naive(ScriptedModel(list(NAIVE_SCRIPT)), site_registry(url, key, session_id="sess-naive"), "refund A1001")
    assert (remote.status, remote.steps) == (local.status, local.steps)
    # the same run, but not the same outcome, on purpose: in process the naive loop calls a desk that trusts its
    # caller and refunds twice; the site checks every caller's call against the business rules (its second layer)
    assert len(desk.refunds) == 2
    assert len(site.state_for(tenant.id)["aftersales"].snapshot()["refunds"]) == 1
    assert "RULE_VIOLATION" in [m for m in remote.messages if m.get("role") == "tool"][-1]["content"]


def test_search_offers_the_top_k_with_their_limits(tmp_path):
    site = SkillSite(tmp_path)
    key, _ = site.create_key("agent")
    reg = site_registry("http://site", key, query="what is the weather in Beijing", k=2,
                        client=TestClient(create_app(site)))
    assert reg.names[0] == "current_weather" and len(reg) <= 2
    assert "Limit: 60 calls per minute." in reg["current_weather"].description


def test_a_429_waits_for_retry_after_then_sends_again(tmp_path):
    clock = Clock()
    site = SkillSite(tmp_path, clock=clock)
    key, _ = site.create_key("agent", ["get_order"])
    waited = []

    def sleep(seconds):
        waited.append(seconds)
        clock.now += seconds

    reg = site_registry("http://site", key, client=TestClient(create_app(site)), sleep=sleep, max_wait=120)
    for _ in range(60):
        reg["get_order"].fn(order_id="A1001")
    assert reg["get_order"].fn(order_id="A1001")["order_id"] == "A1001" and waited == [60.0]
    short = site_registry("http://site", key, client=TestClient(create_app(site)), sleep=sleep, max_wait=5)
    for _ in range(59):
        short["get_order"].fn(order_id="A1001")
    with pytest.raises(Exception) as caught:  # longer than the client waits itself: the loop decides
        short["get_order"].fn(order_id="A1001")
    assert caught.value.error.code == "RATE_LIMITED" and caught.value.error.retry_after == 60.0


def test_the_fallback_hint_and_a_timeout_reach_the_model(tmp_path):
    site = SkillSite(tmp_path)
    key, _ = site.create_key("agent", ["current_weather"])
    reg = site_registry("http://site", key, client=TestClient(create_app(site)))
    (tmp_path / "weather_source.json").write_text('{"mode": "down"}')
    model = ScriptedModel([tool_calls(call("current_weather", {"city": "Beijing"})), say("no weather")])
    run = run_guarded(model, reg, "weather?", sleep=lambda s: None)
    told = json.loads(next(m["content"] for m in run.messages if m.get("role") == "tool"))
    assert told["error"]["code"] == "UNAVAILABLE" and "allow_cached" in told["error"]["fallback_hint"]


def test_a_wrong_key_fails_loudly_at_load_time(tmp_path):
    site = SkillSite(tmp_path)
    with pytest.raises(Exception) as caught:
        site_registry("http://site", "sk-site-wrong", client=TestClient(create_app(site)))
    assert caught.value.error.code == "UNAUTHENTICATED"


def test_an_unreachable_site_is_transient(tmp_path):
    listing = TestClient(create_app(SkillSite(tmp_path))).get("/api/skills").json()

    def transport(request):
        if request.method == "GET":
            return httpx.Response(200, json=listing)
        raise httpx.ConnectError("connection refused", request=request)  # the site went away after loading

    reg = site_registry("http://site", "k", client=httpx.Client(base_url="http://site",
                                                                transport=httpx.MockTransport(transport)))
    with pytest.raises(Exception) as caught:
        reg["get_order"].fn(order_id="A1001")
    assert caught.value.error.code == "UNAVAILABLE" and caught.value.error.retryable


def test_inside_a_hub_the_rooms_site_and_key_come_from_the_environment(tmp_path, monkeypatch):
    from agentlab.i18n import LocalizedError
    from agentlab.site.client import room_site
    site = SkillSite(tmp_path)
    ana, _ = site.create_key("ana", ["get_order", "current_weather"])
    monkeypatch.setenv("AGENTLAB_SITE_URL", "http://site")
    monkeypatch.setenv("AGENTLAB_SITE_KEY", ana)
    assert room_site() == ("http://site", ana)
    reg = site_registry(client=TestClient(create_app(site)))
    assert sorted(reg.names) == ["current_weather", "get_order"]  # what ana's key may call, not every skill
    monkeypatch.setenv("AGENTLAB_SITE_KEY", "  ")  # set but empty is not a room
    assert room_site() is None
    with pytest.raises(LocalizedError) as caught:
        site_registry()
    assert "(AGENTLAB_SITE_KEY not set)" in str(caught.value)  # the one that is missing, by name
    assert "AGENTLAB_SITE_KEY" in caught.value.localized("zh") and caught.value.localized("zh") != str(caught.value)
    monkeypatch.setenv("AGENTLAB_SITE_KEY", ana)
    for half in ({"url": "https://elsewhere.example"}, {"key": "sk-site-mine"}):  # never half from the room
        with pytest.raises(LocalizedError) as caught:
            site_registry(**half, client=TestClient(create_app(site)))
        assert caught.value.key == "site.url_without_key"


def test_notebook_15_asks_the_rooms_site_when_a_hub_names_one(live_site, monkeypatch):
    """The discovery section goes to the site the environment names, with that key; nothing else does."""
    import nbformat
    from nbclient import NotebookClient
    from test_notebooks import CELL_TIMEOUT, NB_DIR
    site, url = live_site
    key, _ = site.create_key("room-participant", ["*"])
    monkeypatch.setenv("AGENTLAB_SITE_URL", url)
    monkeypatch.setenv("AGENTLAB_SITE_KEY", key)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    path = NB_DIR / "15_skill_site.ipynb"
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    nb.cells = cells[:3]  # the set-up, the discovery table and its plot
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", kernel_manager_class=kernels.KernelManager,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    said = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert f"discovery uses {url}" in said
    searched = [line for line in site.logs.read("access") if line.get("path") == "/api/skills/search"]
    # 4 asks, twice each, all let in: the only key this site has is the one the environment gave
    assert len(searched) == 8 and {line.get("status") for line in searched} == {200}
    assert [k.name for k in site.keys.all()] == ["room-participant"]


def test_notebook_15_goes_on_with_its_own_site_when_the_rooms_does_not_answer(monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    from test_notebooks import CELL_TIMEOUT, NB_DIR
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("AGENTLAB_SITE_URL", dead)
    monkeypatch.setenv("AGENTLAB_SITE_KEY", "sk-site-nobody")
    monkeypatch.delenv("MPLBACKEND", raising=False)
    path = NB_DIR / "15_skill_site.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "code"][:2]  # the set-up and the discovery table
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", kernel_manager_class=kernels.KernelManager,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    said = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert "the room's site did not answer (ConnectError)" in said and f"discovery uses {dead}" not in said


def test_discovery_uses_the_rooms_site_only_when_it_answers(live_site, monkeypatch):
    from agentlab.site.client import discovery_site
    site, url = live_site
    room_key, _ = site.create_key("room-participant", ["*"])
    monkeypatch.delenv("AGENTLAB_SITE_URL", raising=False)
    assert discovery_site("http://own", "sk-own") == ("http://own", "sk-own", None)  # no hub: the notebook's own
    monkeypatch.setenv("AGENTLAB_SITE_URL", url)
    monkeypatch.setenv("AGENTLAB_SITE_KEY", room_key)
    assert discovery_site("http://own", "sk-own") == (url, room_key, None)
    monkeypatch.setenv("AGENTLAB_SITE_KEY", "sk-site-refused")  # a key the room's site refuses: 401
    own_url, own_key, note = discovery_site("http://own", "sk-own", lang="zh")
    assert (own_url, own_key) == ("http://own", "sk-own") and "教室的站点没有应答（HTTPStatusError）" in note


def test_the_listing_is_asked_again_after_a_reset_and_never_shows_a_transport_traceback():
    """A connection closed before it was used (a busy site, a flood from the same address) is sent again; past three
    tries the caller hears UNAVAILABLE as a tool would, never httpx's exception."""
    import httpx

    from agentlab.errors import ToolFailure
    listing = {"skills": []}
    tries = []

    def flaky(request: httpx.Request) -> httpx.Response:
        tries.append(request.url.path)
        if len(tries) < 3:
            raise httpx.ReadError("Connection reset by peer", request=request)
        return httpx.Response(200, json=listing)
    waits: list[float] = []
    reg = site_registry("http://site", "sk-x", client=httpx.Client(base_url="http://site",
                                                                   transport=httpx.MockTransport(flaky)),
                        sleep=waits.append)
    assert len(reg) == 0 and tries == ["/api/skills"] * 3 and waits == [0.2, 0.5]

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)
    with pytest.raises(ToolFailure) as failed:
        site_registry("http://site", "sk-x", client=httpx.Client(base_url="http://site",
                                                                 transport=httpx.MockTransport(down)),
                      sleep=lambda s: None)
    assert failed.value.error.code == "UNAVAILABLE"
