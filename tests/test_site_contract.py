"""The HTTP contract against the real thing: uvicorn in a subprocess on 127.0.0.1, driven with httpx.

The server is started once (``python -m agentlab site``, its own process group, polled until it
answers) and stopped by its group at the end. Keys come from ``python -m agentlab site keys create``.
Limits with time in them are tested in process with an injected clock (test_site_app.py); here the
quota and the rate are hit for real, with small numbers.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from conftest import ROOT
from site_helpers import SiteServer, test_skills

NOTE = {"to": "customer@example.com", "subject": "Refund", "body": "Your refund is on its way."}


def cli(*args, data):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "agentlab", "site", "--data", str(data), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("site-data")
    skills = test_skills(tmp_path_factory.mktemp("site-skills"))
    keys = {}
    for name, extra in {"all": [], "narrow": ["--skills", "get_order,current_weather"],
                        "tiny": ["--skills", "get_order", "--quota", "2/day"]}.items():
        made = cli("--skills", str(skills), "keys", "create", "--name", name, *extra, data=data)
        assert made.returncode == 0, made.stderr
        keys[name] = made.stdout.strip()
        assert keys[name].startswith("sk-site-") and keys[name] not in made.stderr  # stdout holds the key, once
    with SiteServer(data, "--host", "127.0.0.1", "--skills", str(skills), log=data / "server.out") as site, \
            httpx.Client(base_url=site.base, timeout=15) as client:
        yield {"http": client, "url": site.base, "keys": keys, "data": data}


def post(server, name, args, key="all", **headers):
    key = server["keys"].get(key, key)
    return server["http"].post(f"/api/skills/{name}/execute", json={"arguments": args},
                               headers={"X-API-Key": key, **headers})


def test_discovery(server):
    http = server["http"]
    assert len(http.get("/api/skills").json()["skills"]) >= 19
    found = http.get("/api/skills/search", params={"q": "refund an unshipped order", "k": 6}).json()["results"]
    assert found[0]["skill_name"] == "create_refund" and all(r["score"] > 0 for r in found) and len(found) <= 6
    assert http.get("/api/skills/send_notification").json()["idempotency"]["required"] is True
    assert http.get("/api/skills/nope").status_code == 404


def test_every_status_code(server):
    assert post(server, "get_order", {"order_id": "A1001"}, "sk-site-wrong").status_code == 401
    assert server["http"].post("/api/skills/get_order/execute", json={"arguments": {}}).status_code == 401
    assert post(server, "create_refund", {}, "narrow").status_code == 403
    missing = post(server, "get_ordr", {})
    assert missing.status_code == 404 and missing.json()["error"]["closest"] == "get_order"
    invalid = post(server, "get_order", {"orderId": "A1001"})
    assert invalid.status_code == 422 and invalid.json()["error"]["problems"][0]["field"] == "order_id"
    assert post(server, "send_notification", NOTE).status_code == 428
    ok = post(server, "get_order", {"order_id": "A1001"})
    assert ok.status_code == 200 and ok.json()["success"] and ok.json()["error"] is None
    assert [post(server, "get_order", {"order_id": "A1001"}, "tiny").status_code for _ in range(3)] == [200, 200, 429]
    quota = post(server, "get_order", {"order_id": "A1001"}, "tiny")
    assert int(quota.headers["Retry-After"]) > 0 and quota.json()["error"]["code"] == "RATE_LIMITED"


def test_the_write_rate_is_ten_a_minute(server):
    codes = [post(server, "escalate_to_human", {"summary": f"case {i}"}, **{"Idempotency-Key": f"esc-{i}"}).status_code
             for i in range(11)]
    assert codes == [200] * 10 + [429]


def test_the_timeout_returns_504_within_the_bound_with_the_fallback(server):
    source = server["data"] / "weather_source.json"
    source.write_text('{"mode": "slow", "delay": 15}')
    try:
        t0 = time.monotonic()
        slow = post(server, "current_weather", {"city": "Shanghai"}, "narrow")
        took = time.monotonic() - t0
    finally:
        source.write_text('{"mode": "ok"}')
    assert slow.status_code == 504 and took < 2.0 + 6.0  # the 2 s bound, not the source's 15 s; slack for a loaded host
    assert slow.json()["error"]["code"] == "TIMEOUT" and "allow_cached" in slow.json()["fallback_hint"]


def test_replay_conflict_and_a_race_of_twenty(server):
    first = post(server, "send_notification", NOTE, **{"Idempotency-Key": "mail-1"})
    again = post(server, "send_notification", NOTE, **{"Idempotency-Key": "mail-1"})
    assert first.status_code == 200 and again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    other = post(server, "send_notification", {**NOTE, "body": "changed"}, **{"Idempotency-Key": "mail-1"})
    assert other.status_code == 422
    with ThreadPoolExecutor(20) as pool:
        replies = list(pool.map(lambda _: post(server, "send_notification", NOTE, **{"Idempotency-Key": "race"}), range(20)))
    assert {r.status_code for r in replies} == {200}
    assert len({r.json()["result"]["message_id"] for r in replies}) == 1
    sent = [json.loads(x) for x in (server["data"] / "outbox.jsonl").read_text().splitlines()]
    assert len(sent) == 2  # mail-1 once, race once


def test_an_invalid_output_is_a_logged_500_and_a_generic_error(server):
    broken = post(server, "broken_output", {}, **{"X-Session-Id": "sess-broken"})
    assert broken.status_code == 500 and broken.json()["error"]["code"] == "TOOL_ERROR"
    assert "wrong" not in broken.text and "output_schema" not in broken.text
    errors = [json.loads(x) for x in (server["data"] / "logs" / "error.jsonl").read_text().splitlines()]
    mine = [e for e in errors if e["request_id"] == broken.headers["X-Request-Id"]]
    assert mine and "Traceback" in mine[0]["stack"] and "output_schema" in mine[0]["stack"]
    assert mine[0]["session_id"] == "sess-broken"


def test_a_failure_with_secrets_shows_them_to_nobody(server):
    leaky = post(server, "leaky_failure", {})
    assert leaky.status_code == 500 and "hunter2" not in leaky.text and "10.0.0.7" not in leaky.text


def test_logs_carry_ids_and_never_a_key_or_secret(server):
    post(server, "get_order", {"order_id": "A1001"}, **{"X-Session-Id": "sess-logs"})
    last = post(server, "leaky_failure", {}).headers["X-Request-Id"]
    logs = server["data"] / "logs"
    # another process's access and call lines wait in its memory for a moment (docs/site.md#logs)
    deadline = time.monotonic() + 30
    while last not in ((logs / "access.jsonl").read_text() if (logs / "access.jsonl").exists() else "") \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    text = "".join(p.read_text() for p in logs.iterdir())
    for key in server["keys"].values():
        assert key not in text
    assert "hunter2" not in text
    for name in ("access", "call", "error", "audit"):
        lines = [json.loads(x) for x in (logs / f"{name}.jsonl").read_text().splitlines()]
        assert lines and all(line["request_id"] and "session_id" in line for line in lines)
    access = [json.loads(x) for x in (logs / "access.jsonl").read_text().splitlines()]
    assert any(a["session_id"] == "sess-logs" and a["status"] == 200 and a["latency_ms"] >= 0 for a in access)
    audit = [json.loads(x) for x in (logs / "audit.jsonl").read_text().splitlines()]
    assert sum(a["action"] == "key_created" for a in audit) == 3
    assert b"sk-site-" not in (server["data"] / "keys.db").read_bytes()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_refused_route_names_the_sites_own_paths_and_hides_the_callers(server, lang):
    """FastAPI's 404 and 405 in the site's shape read "The API is under [path removed]": the whole sentence was
    redacted, the site's own /api/skills with what the caller sent."""
    http = server["http"]
    for refused in (http.delete("/api/skills", params={"lang": lang}), http.get("/nope/etc/passwd", params={"lang": lang})):
        message = refused.json()["error"]["message"]
        assert refused.status_code in (404, 405) and "/api/skills" in message and "/mcp" in message, message
        assert "etc/passwd" not in message
