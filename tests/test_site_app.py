"""The HTTP contract in process, with FastAPI's TestClient and an injected clock (agentlab/site/app.py, service.py)."""
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from site_helpers import Clock
from typography import english_punctuation

from agentlab.site.app import create_app
from agentlab.site.service import SkillSite

NOTE = {"to": "customer@example.com", "subject": "Refund", "body": "Your refund is on its way."}


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


@pytest.fixture
def http(site):
    return TestClient(create_app(site))


def post(http, name, args, key, **headers):
    return http.post(f"/api/skills/{name}/execute", json={"arguments": args}, headers={"X-API-Key": key, **headers})


def test_discovery_lists_searches_and_describes(site, http):
    listed = http.get("/api/skills").json()["skills"]
    assert {"skill_name", "description", "input_schema", "limits"} <= set(listed[0])
    found = http.get("/api/skills/search", params={"q": "weather in Beijing today", "k": 3}).json()["results"]
    assert found[0]["skill_name"] == "current_weather" and found[0]["score"] > 0 and len(found) <= 3
    detail = http.get("/api/skills/current_weather", headers={"Accept-Language": "zh"}).json()
    assert detail["display_name"] == "当前天气查询" and detail["changelog"] and detail["examples"]
    key, _ = site.create_key("narrow", ["get_order"])
    assert [s["skill_name"] for s in http.get("/api/skills", headers={"X-API-Key": key}).json()["skills"]] == ["get_order"]
    assert http.get("/api/skills", headers={"X-API-Key": "sk-wrong"}).status_code == 401


def test_status_codes(site, http):
    key, _ = site.create_key("narrow", ["get_order", "send_notification"])
    assert post(http, "get_order", {"order_id": "A1001"}, "nope").status_code == 401
    assert http.post("/api/skills/get_order/execute", json={"arguments": {}}).status_code == 401
    assert post(http, "create_refund", {}, key).status_code == 403
    missing = post(http, "get_ordr", {}, key)
    assert missing.status_code == 404 and missing.json()["error"]["closest"] == "get_order"
    assert missing.json()["error"]["available"] == ["get_order", "send_notification"]
    bad = post(http, "get_order", {"orderId": "A1001"}, key)
    assert bad.status_code == 422 and bad.json()["error"]["problems"][1]["did_you_mean"] == "order_id"
    assert http.post("/api/skills/get_order/execute", content=b"[1", headers={"X-API-Key": key}).status_code == 400
    assert post(http, "send_notification", NOTE, key).status_code == 428
    assert post(http, "send_notification", NOTE, key, **{"Idempotency-Key": "k" * 201}).status_code == 400
    ok = post(http, "get_order", {"order_id": "A1001"}, key)
    assert ok.status_code == 200 and set(ok.json()) == {"success", "result", "error", "fallback_hint"}
    assert ok.json()["result"]["summary"] and ok.headers["X-Request-Id"]


def test_the_rate_per_class_and_the_quota_answer_429_with_retry_after(site, http):
    key, _ = site.create_key("busy")
    for i in range(10):
        assert post(http, "send_notification", NOTE, key, **{"Idempotency-Key": f"k{i}"}).status_code == 200
    refused = post(http, "send_notification", NOTE, key, **{"Idempotency-Key": "k10"})
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"
    assert refused.json()["error"]["code"] == "RATE_LIMITED" and refused.json()["error"]["retryable"]
    site.clock.now += 60
    assert post(http, "send_notification", NOTE, key, **{"Idempotency-Key": "k10"}).status_code == 200
    small, _ = site.create_key("small", quota=2, period="hour")
    assert [post(http, "get_order", {"order_id": "A1001"}, small).status_code for _ in range(3)] == [200, 200, 429]
    site.clock.now += 3600
    assert post(http, "get_order", {"order_id": "A1001"}, small).status_code == 200


def test_the_same_idempotency_key_replays_and_other_arguments_are_refused(site, http, tmp_path):
    key, _ = site.create_key("w")
    first = post(http, "send_notification", NOTE, key, **{"Idempotency-Key": "mail-1"})
    again = post(http, "send_notification", NOTE, key, **{"Idempotency-Key": "mail-1"})
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    other = post(http, "send_notification", {**NOTE, "subject": "Other"}, key, **{"Idempotency-Key": "mail-1"})
    assert other.status_code == 422 and other.json()["error"]["code"] == "CONFLICT"
    assert len((tmp_path / "outbox.jsonl").read_text().splitlines()) == 1


def test_concurrent_requests_with_one_key_run_once(site, http, tmp_path):
    key, _ = site.create_key("race")
    with ThreadPoolExecutor(20) as pool:
        replies = list(pool.map(lambda _: post(http, "send_notification", NOTE, key, **{"Idempotency-Key": "race-1"}),
                                range(20)))
    assert {r.status_code for r in replies} == {200}
    assert len({r.json()["result"]["message_id"] for r in replies}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in replies) == 19
    assert len((tmp_path / "outbox.jsonl").read_text().splitlines()) == 1


def test_a_refused_write_frees_its_key(site, http):
    key, tenant = site.create_key("desk")
    shipped = post(http, "create_refund", {"order_id": "A1002", "amount": 10.0, "reason": "user_cancel"}, key,
                   **{"Idempotency-Key": "r-1"})
    assert shipped.json()["error"]["code"] == "RULE_VIOLATION"
    site.state_for(tenant.id)["aftersales"].orders["A1002"]["status"] = "paid"  # the order changes: the same call may now run
    done = post(http, "create_refund", {"order_id": "A1002", "amount": 10.0, "reason": "user_cancel"}, key,
                **{"Idempotency-Key": "r-1"})
    assert done.json()["success"] and "Idempotent-Replayed" not in done.headers


def test_logs_carry_ids_and_never_the_key(site, http, tmp_path):
    key, _ = site.create_key("logged")
    post(http, "get_order", {"order_id": "A1001"}, key, **{"X-Session-Id": "sess-42"})
    post(http, "send_notification", NOTE, key, **{"X-Session-Id": "sess-42", "Idempotency-Key": "n-1"})
    site.logs.flush()  # the access and call lines wait in memory for a moment (docs/site.md#logs)
    logs = tmp_path / "logs"
    text = "".join(p.read_text() for p in logs.iterdir())
    assert key not in text and key[8:30] not in text
    for name in ("access", "call", "audit"):
        lines = [json.loads(x) for x in (logs / f"{name}.jsonl").read_text().splitlines()]
        assert all(line["request_id"] for line in lines)
    calls = [json.loads(x) for x in (logs / "call.jsonl").read_text().splitlines()]
    assert {c["session_id"] for c in calls} == {"sess-42"} and calls[0]["skill"] == "get_order"
    audit = [json.loads(x) for x in (logs / "audit.jsonl").read_text().splitlines()]
    assert [a["action"] for a in audit] == ["key_created", "execute"]


def test_errors_speak_chinese(site, http):
    key, _ = site.create_key("zh", ["get_order"])
    reply = post(http, "create_refund", {}, key, **{"Accept-Language": "zh"})
    assert reply.status_code == 403 and "无权" in reply.json()["error"]["message"]
    # a malformed body's two sentences, joined as Chinese joins them (it read "…对象。 请求体必须是…")
    bad = http.post("/api/skills/get_order/execute", content=b"city=Beijing",
                    headers={"X-API-Key": key, "Accept-Language": "zh", "Content-Type": "application/json"})
    said = json.dumps(bad.json(), ensure_ascii=False)
    assert bad.status_code == 400 and "。请求体" in said and not english_punctuation(said), said


def test_a_site_whose_store_is_down_answers_503_in_its_own_shape_and_runs_nothing(tmp_path):
    import json as _json

    from agentlab.site.service import SkillSite
    site = SkillSite(tmp_path)

    def down(*a, **k):
        raise ConnectionError("Error 111 connecting to 10.1.2.3:6379 password=hunter2")

    site.claims.claim = down
    key, _ = site.create_key("k")
    body = _json.dumps({"arguments": {"to": "a@example.com", "subject": "s", "body": "b"}}).encode()
    reply = site.execute("send_notification", body, api_key=key, idempotency_key="i-1", session_id="s")
    assert reply.status == 503 and reply.body["error"]["code"] == "UNAVAILABLE" and reply.headers["Retry-After"]
    assert "10.1.2.3" not in _json.dumps(reply.body) and not (tmp_path / "outbox.jsonl").exists()
    logged = (tmp_path / "logs" / "error.jsonl").read_text()
    assert "ConnectionError" in logged and "hunter2" not in logged


# ---------------------------------------------------------------- a hostile caller's bodies and headers
DEEP = b'{"arguments": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
BAD_BODIES = {
    "empty": b"",
    "empty object": b"{}",
    "no arguments": b'{"city": "Beijing"}',
    "a list": b"[]",
    "arguments a list": b'{"arguments": []}',
    "arguments a string": b'{"arguments": "Beijing"}',
    "arguments null": b'{"arguments": null}',
    "not json": b"city=Beijing",
    "single quotes": b"{'arguments': {}}",
    "truncated": b'{"arguments": {"city": "Bei',
    "nested 100k deep": DEEP,
    "nested 70 deep": b'{"arguments": {"x": ' + b"[" * 70 + b"]" * 70 + b"}}",
    "not utf-8": b'{"arguments": {"city": "\xff\xfe"}}',
    "NaN": b'{"arguments": {"city": NaN}}',
    "Infinity": b'{"arguments": {"n": Infinity}}',
    "1e400": b'{"arguments": {"n": 1e400}}',
    "5000 digits": b'{"arguments": {"n": ' + b"9" * 5000 + b"}}",
    "lone surrogate": b'{"arguments": {"city": "\\ud800"}}',
    "surrogate in a key": b'{"arguments": {"\\udc00": 1}}',
    "two objects": b'{"arguments": {}} {"arguments": {}}',
}


@pytest.mark.parametrize("skill", ["current_weather", "send_notification"])
@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_every_malformed_body_is_a_4xx_with_the_expected_shape_never_a_503(site, http, name, skill):
    key, _ = site.create_key("k")
    before = len(site.logs.read("call"))
    r = http.post(f"/api/skills/{skill}/execute", content=BAD_BODIES[name],
                  headers={"X-API-Key": key, "Content-Type": "application/json", "Idempotency-Key": "k-1"})
    assert 400 <= r.status_code < 500, (name, r.status_code, r.text[:300])
    body = r.json()
    assert body["success"] is False and body["error"]["retryable"] is False
    if r.status_code == 400:
        assert '{"arguments": {...}}' in body["error"]["message"]  # the sentence shows what was expected
    assert "Traceback" not in r.text and 'File "' not in r.text and ".py" not in r.text
    assert len(site.logs.read("call")) == before + 1  # every refusal is a line in the call log


BAD_HEADERS = {
    "form content type": {"Content-Type": "application/x-www-form-urlencoded"},
    "text content type": {"Content-Type": "text/plain"},
    "lying content length": {"Content-Length": "99999999999"},
    "content length not a number": {"Content-Length": "ten"},
    "idempotency key too long": {"Idempotency-Key": "k" * 201},
    "idempotency key with control characters": {"Idempotency-Key": "k\x01\x02"},
    "api key huge": {"X-API-Key": "sk-" + "x" * 100_000},
    "api key missing": {"X-API-Key": ""},
}


@pytest.mark.parametrize("name", sorted(BAD_HEADERS))
def test_every_malformed_header_is_a_4xx_never_a_503(site, http, name):
    key, _ = site.create_key("k")
    headers = {"X-API-Key": key, "Content-Type": "application/json", "Idempotency-Key": "k-1", **BAD_HEADERS[name]}
    r = http.post("/api/skills/send_notification/execute", content=json.dumps({"arguments": NOTE}), headers=headers)
    assert 400 <= r.status_code < 500 and r.status_code != 409, (name, r.status_code, r.text[:300])
    assert "Traceback" not in r.text


def test_a_body_too_large_is_refused_before_it_is_read_and_a_keyless_body_is_never_read(site):
    read: list[int] = []

    async def app_with_spy(scope, receive, send):  # counts the bytes the app pulls from the socket
        async def spied():
            message = await receive()
            read.append(len(message.get("body", b"")))
            return message
        await inner(scope, spied, send)

    inner = create_app(site)
    spy = TestClient(app_with_spy)
    fits = b'{"arguments": {"x": "' + b"a" * 900_000 + b'"}}'
    r = spy.post("/api/skills/current_weather/execute", content=fits, headers={"Content-Type": "application/json"})
    assert r.status_code == 401 and sum(read) == 0  # no key: refused before one byte of the body
    big = b'{"arguments": {"x": "' + b"a" * 3_000_000 + b'"}}'
    key, _ = site.create_key("k")
    r = spy.post("/api/skills/current_weather/execute", content=big,
                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    assert r.status_code == 413 and sum(read) == 0  # Content-Length said it: not read either

    def chunks():  # no Content-Length: counted as it streams in (TestClient hands it over as one message)
        for _ in range(300):
            yield b"a" * 10_000
    r = spy.post("/api/skills/current_weather/execute", content=chunks(),
                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    assert r.status_code == 413 and "content-length" not in r.request.headers


def test_mcp_opens_no_stream_and_refuses_a_body_too_large(site, http):
    assert http.get("/mcp").status_code == 405  # stateless JSON replies: nothing to stream, nothing to hold open
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "' + b"a" * 2_000_000 + b'"}}'
    r = http.post("/mcp", content=big, headers={"Content-Type": "application/json",
                                                "Accept": "application/json, text/event-stream"})
    assert r.status_code == 413


def test_a_key_refused_again_and_again_cannot_push_other_tenants_out_of_the_call_log(site, http):
    from agentlab.site.service import REFUSALS_PER_MINUTE
    alice, _ = site.create_key("alice")
    mallory, _ = site.create_key("mallory")
    assert post(http, "send_notification", NOTE, alice, **{"Idempotency-Key": "a-1"}).status_code == 200
    big = {"to": "x" * 3000, "subject": "x" * 3000, "body": 7}  # refused (422), as large as a line may be
    statuses = [post(http, "send_notification", big, mallory, **{"Idempotency-Key": f"m-{i}"}).status_code
                for i in range(REFUSALS_PER_MINUTE + 40)]
    assert statuses.count(422) == REFUSALS_PER_MINUTE and statuses[-1] == 429  # past its share: 429
    call_log = site.logs.read("call")
    assert sum(line.get("key_name") == "mallory" for line in call_log) == REFUSALS_PER_MINUTE
    assert any(line.get("key_name") == "alice" for line in call_log)


def test_fastapis_own_refusals_come_in_the_sites_shape_and_language(site, http):
    for r in (http.get("/api/skills/search", params={"k": "abc"}), http.get("/no/such/path"),
              http.get("/api/skills/current_weather/execute"), http.get("/nope", headers={"Accept-Language": "zh"})):
        assert 400 <= r.status_code < 500 and "detail" not in r.json(), r.text
        assert r.json()["success"] is False and r.json()["error"]["code"] == "BAD_REQUEST"
    assert "这里没有" in r.json()["error"]["message"]
    assert "abc" not in http.get("/api/skills/search", params={"k": "abc"}).text  # the value sent is not echoed


@pytest.mark.parametrize("path", ["/logs", "/skills/current_weather"])
def test_an_unreadable_basic_credential_is_no_key_never_a_500(site, http, path):
    r = http.get(path, headers={"Authorization": "Basic \u00e9t\u00e9".encode("latin-1")})
    assert r.status_code in (200, 401) and "Traceback" not in r.text


def test_what_the_mcp_sdk_logs_from_a_request_is_cut(site, caplog):
    import logging
    caplog.set_level(logging.WARNING)
    payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x" * 900_000, "arguments": {}}}
    with TestClient(create_app(site), base_url="http://127.0.0.1") as live:  # the MCP manager runs in the lifespan
        r = live.post("/mcp", json=payload, headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 200 and r.json()["result"]["isError"]
    assert caplog.records and sum(len(r.getMessage()) for r in caplog.records) < 10_000
