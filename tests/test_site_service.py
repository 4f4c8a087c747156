"""SkillSite against a hostile world, without HTTP (agentlab/site/service.py): tenants kept apart, store outages
that never turn into a second effect, client mistakes that are never "try again later"."""
import json

import pytest
from site_helpers import Clock, SiteServer

from agentlab.site.client import wire_key
from agentlab.site.service import SkillSite


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


def call(site, name, args, key, idem=None, **kw):
    return site.execute(name, json.dumps({"arguments": args}).encode(), api_key=key, idempotency_key=idem,
                        session_id=kw.pop("session_id", None), **kw)


REFUND = {"amount": 199.0, "reason": "user_cancel"}


# ---------------------------------------------------------------- tenants
def test_a_key_one_tenant_sent_first_never_answers_another_tenants_write(site):
    victim, mine = site.create_key("victim")
    attacker, theirs = site.create_key("attacker")
    shared = "the-key-the-victim-will-send"
    first = call(site, "create_refund", {"order_id": "A1001", **REFUND}, attacker, shared)
    assert first.status == 200 and first.body["result"]["order_id"] == "A1001"
    own = call(site, "create_refund", {"order_id": "A1005", "amount": 19.9, "reason": "user_cancel"}, victim, shared)
    assert own.status == 200 and own.headers.get("Idempotent-Replayed") is None
    assert own.body["result"]["order_id"] == "A1005"  # its own refund, never the attacker's A1001
    assert [r["order_id"] for r in site.state_for(mine.id)["aftersales"].refunds] == ["A1005"]
    assert [r["order_id"] for r in site.state_for(theirs.id)["aftersales"].refunds] == ["A1001"]


def test_a_tenant_can_neither_read_nor_pre_empt_another_tenants_back_office(site):
    alice, _ = site.create_key("alice")
    mallory, _ = site.create_key("mallory")
    booked = call(site, "book_expense_record", {"date": "2026-10-14", "amount": 88.0, "category": "food",
                                                 "item": "alice secret dinner"}, alice, "a-1")
    assert booked.status == 200, booked.body
    seen = call(site, "search_expense_records", {"keyword": "alice"}, mallory)
    assert seen.status == 200 and "alice secret dinner" not in json.dumps(seen.body)
    # refunding the order first, with a tiny amount, blocks nothing of alice's
    assert call(site, "create_refund", {"order_id": "A1001", "amount": 1.0, "reason": "user_cancel"}, mallory,
                "m-1").status == 200
    hers = call(site, "create_refund", {"order_id": "A1001", **REFUND}, alice, "a-2")
    assert hers.status == 200 and hers.body["success"] and hers.body["result"]["amount"] == 199.0


def test_the_same_tenant_resending_its_key_still_gets_one_effect(site):
    key, tenant = site.create_key("t")
    a = call(site, "create_refund", {"order_id": "A1001", **REFUND}, key, "k1")
    b = call(site, "create_refund", {"order_id": "A1001", **REFUND}, key, "k1")
    assert a.body == b.body and b.headers.get("Idempotent-Replayed") == "true"
    assert len(site.state_for(tenant.id)["aftersales"].refunds) == 1


def test_the_key_a_client_sends_cannot_be_computed_without_its_api_key():
    loop_key = "create_refund:A1005"  # predictable on purpose: the tool and the order
    mine, theirs = wire_key("sk-site-victim", loop_key), wire_key("sk-site-attacker", loop_key)
    assert mine != theirs and mine == wire_key("sk-site-victim", loop_key)  # stable for its owner across resends
    import hashlib
    assert hashlib.sha256(loop_key.encode()).hexdigest()[:40] not in (mine, theirs)


# ---------------------------------------------------------------- a store that fails mid-write
class _Redis:
    """A redis-server of this test's own, on a folder that outlives it: killed with SIGKILL, started again."""

    def __init__(self, folder, *, durable=True):
        import shutil

        from conftest import free_port, skip_or_fail
        self.exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        import os
        if not os.path.isfile(self.exe):
            skip_or_fail("redis-server not found: apt-get install redis-server")
        pytest.importorskip("redis")
        self.folder, self.port, self.durable, self.proc = folder, free_port(), durable, None
        folder.mkdir(parents=True, exist_ok=True)
        self.start()

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        from conftest import start_redis
        self.proc = start_redis(self.exe, self.port, self.folder, durable=self.durable)

    def kill(self):
        import os
        import signal
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def redis_box(tmp_path):
    box = _Redis(tmp_path / "redis-data")
    yield box
    box.kill()


def _counting_write(folder, on_effect=""):
    """A write skill that appends to effects.txt, then runs ``on_effect`` (kill the store, say)."""
    from site_helpers import write_skill
    body = ('with open(ctx.data_dir / "effects.txt", "a") as f:\n    f.write("x\\n")\n' + on_effect +
            'return {"done": True}')
    write_skill(folder, "pay", body, rate_class="write", timeout=5.0)
    return folder


def _effects(data):
    path = data / "effects.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_site_refuses_a_redis_that_may_forget_a_claim(tmp_path):
    from agentlab.i18n import LocalizedError
    box = _Redis(tmp_path / "volatile", durable=False)
    try:
        with pytest.raises(LocalizedError) as refused:
            SkillSite(tmp_path / "site", store=box.url)
        assert "appendonly" in str(refused.value) and "两次" in refused.value.localized("zh")
        SkillSite(tmp_path / "demo", store=box.url, volatile_store=True)  # a throwaway demo may say so
    finally:
        box.kill()


def test_a_site_refuses_a_redis_that_would_evict_claims_when_full(tmp_path, redis_box):
    import redis

    from agentlab.i18n import LocalizedError
    client = redis.Redis(port=redis_box.port)
    client.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(LocalizedError, match="maxmemory-policy"):
        SkillSite(tmp_path / "site", store=redis_box.url)
    client.config_set("maxmemory-policy", "noeviction")
    SkillSite(tmp_path / "site", store=redis_box.url)


def test_a_write_finished_before_the_store_crashed_is_replayed_after_it_restarts(tmp_path, redis_box):
    data = tmp_path / "site"
    site = SkillSite(data, skills_dirs=[_counting_write(tmp_path / "skills")], store=redis_box.url)
    key, _ = site.create_key("t")
    first = call(site, "pay", {"n": 1}, key, "pay-1")
    assert first.status == 200 and _effects(data) == 1
    redis_box.kill()
    redis_box.start()  # from its append-only file
    again = call(site, "pay", {"n": 1}, key, "pay-1")
    assert again.status == 200 and again.headers.get("Idempotent-Replayed") == "true"
    assert _effects(data) == 1


def test_a_store_that_dies_after_the_effect_answers_outcome_unknown_and_a_resend_never_repeats_it(tmp_path, redis_box):
    data = tmp_path / "site"
    kill = ("import os, signal\nos.killpg(int((ctx.data_dir / 'redis.pid').read_text()), signal.SIGKILL)\n"
            "time.sleep(0.2)\n")
    site = SkillSite(data, skills_dirs=[_counting_write(tmp_path / "skills", kill)], store=redis_box.url,
                     lease_grace=0)
    (data / "redis.pid").write_text(str(redis_box.proc.pid))
    key, _ = site.create_key("t")
    hit = call(site, "pay", {"n": 1}, key, "pay-1")
    assert _effects(data) == 1
    assert hit.status == 409 and hit.body["error"]["code"] == "OUTCOME_UNKNOWN"  # never "unavailable, retry"
    assert hit.body["error"]["retryable"] is False
    redis_box.proc.wait(10)
    while_down = call(site, "pay", {"n": 1}, key, "pay-1")
    assert while_down.status == 503 and _effects(data) == 1  # nothing runs while the store is down
    redis_box.start()
    for _ in range(3):  # after the restart: the claim came back from disk, so the resend runs nothing
        resent = call(site, "pay", {"n": 1}, key, "pay-1")
        assert resent.status == 409 and resent.body["error"]["code"] in ("IN_PROGRESS", "OUTCOME_UNKNOWN")
    assert _effects(data) == 1
    # and a person finds it among the unknown outcomes once its lease is over
    import time
    deadline = time.monotonic() + 15
    while not any(k.endswith(":pay:pay-1") for k in site.claims.unknown()):
        assert time.monotonic() < deadline
        time.sleep(0.2)


# ---------------------------------------------------------------- smaller
NOTE = {"to": "customer@example.com", "subject": "Refund", "body": "Your refund is on its way."}


def test_a_rate_limited_duplicate_write_hears_429_not_in_progress(site):
    import threading
    import time
    key, _ = site.create_key("busy")
    n = 0
    while call(site, "send_notification", NOTE, key, f"fill-{n}").status != 429:  # spend the minute's writes
        n += 1
        assert n < 1000
    admit = site.limiter.admit

    def slow_admit(*a, **kw):  # the first request holds its claim while the limiter answers
        time.sleep(0.3)
        return admit(*a, **kw)

    site.limiter.admit = slow_admit
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(call(site, "send_notification", NOTE, key, "same")))
               for _ in range(2)]
    for th in threads:
        th.start()
        time.sleep(0.05)
    for th in threads:
        th.join()
    assert [r.status for r in replies] == [429, 429]
    assert all(r.body["error"]["code"] == "RATE_LIMITED" and r.headers.get("Retry-After") for r in replies)


@pytest.mark.parametrize("grace", [-1.0, float("nan"), float("inf")])
def test_a_lease_grace_that_is_no_duration_is_refused(tmp_path, grace):
    from agentlab.i18n import LocalizedError
    with pytest.raises(LocalizedError):
        SkillSite(tmp_path, lease_grace=grace)


@pytest.mark.parametrize("grace", ["-5", "nan", "inf"])
def test_the_command_line_refuses_a_lease_grace_that_is_no_duration(tmp_path, grace, capsys):
    pytest.importorskip("fastapi")
    from agentlab.cli import main
    code = main(["site", "--data", str(tmp_path), "--lease-grace", grace, "keys", "create", "--name", "x"])
    err = capsys.readouterr().err
    assert code == 2 and "lease grace" in err.lower() and "Traceback" not in err


def test_a_frozen_store_slows_only_the_calls_that_need_it_never_the_pages(tmp_path, redis_box):
    """Redis stopped (SIGSTOP) under a real uvicorn: 60 executes at once wait for it (3 s at most, then 503), and
    past the cap on running calls they are refused at once; the market page still answers, from the threads left."""
    import os
    import signal
    import time
    from concurrent.futures import ThreadPoolExecutor

    httpx = pytest.importorskip("httpx")
    data = tmp_path / "site"
    key, _ = SkillSite(data, store=redis_box.url).create_key("t")
    with SiteServer(data, "--store", redis_box.url) as server:
        base = server.base
        os.kill(redis_box.proc.pid, signal.SIGSTOP)
        try:
            def execute(_):
                return httpx.post(f"{base}/api/skills/current_weather/execute", json={"arguments": {"city": "Beijing"}},
                                  headers={"X-API-Key": key}, timeout=60)
            with ThreadPoolExecutor(60) as pool:
                calls = list(pool.map(lambda i: pool.submit(execute, i), range(60)))
                time.sleep(0.5)  # every worker thread the executes may take is taken now
                page = httpx.get(base + "/", timeout=2.5)  # a hang guard: before, the page waited 30 s for a thread
                statuses = [c.result().status_code for c in calls]
        finally:
            os.kill(redis_box.proc.pid, signal.SIGCONT)
        assert page.status_code == 200
        assert set(statuses) == {503}  # the store was down, or the site was full: nothing ran, a resend is safe


def test_callers_who_trickle_their_bodies_hold_no_slot_and_one_key_cannot_take_them_all(tmp_path):
    import socket
    httpx = pytest.importorskip("httpx")
    data = tmp_path / "site"
    key, _ = SkillSite(data).create_key("t")
    held = []
    with SiteServer(data) as served:
        try:
            for _ in range(40):  # keyless, a body promised and never sent: each costs a connection, not a slot
                s = socket.create_connection(("127.0.0.1", served.port))
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 500\r\n\r\n{")
                held.append(s)
            r = httpx.post(served.base + "/api/skills/current_weather/execute", json={"arguments": {"city": "Beijing"}},
                           headers={"X-API-Key": key}, timeout=8)  # a hang guard: before, 503 until the trickles ended
            assert r.status_code == 200, r.text
        finally:
            for s in held:
                s.close()


# ---------------------------------------------------------------- claims: per tenant, released, marked unknown
def test_a_second_tenant_sending_the_same_call_and_key_gets_its_own_execution_never_the_first_ones(site):
    """The claim is the tenant's: the same Idempotency-Key and the same arguments from another API key run
    again, for that tenant, and are never answered with the first tenant's recorded result."""
    first, one = site.create_key("first")
    second, two = site.create_key("second")
    args = {"order_id": "A1001", **REFUND}
    a = call(site, "create_refund", args, first, "same-key")
    b = call(site, "create_refund", args, second, "same-key")
    assert a.status == b.status == 200 and b.headers.get("Idempotent-Replayed") is None
    assert len(site.state_for(one.id)["aftersales"].refunds) == 1
    assert len(site.state_for(two.id)["aftersales"].refunds) == 1  # its own effect, not the first tenant's reply
    again = call(site, "create_refund", args, second, "same-key")  # and its own resend replays its own result
    assert again.headers.get("Idempotent-Replayed") == "true" and again.body == b.body
    assert len(site.state_for(two.id)["aftersales"].refunds) == 1


_COUNT_ATTEMPT = ('from agentlab.errors import ToolFailure\n'
                  'seen = ctx.data_dir / "attempts.txt"\n'
                  'n = int(seen.read_text()) if seen.exists() else 0\n'
                  'seen.write_text(str(n + 1))\n')
_EFFECT = 'with open(ctx.data_dir / "effects.txt", "a") as f:\n    f.write("x\\n")\n'


def _attempts(data):
    path = data / "attempts.txt"
    return int(path.read_text()) if path.exists() else 0


def test_a_transient_failure_releases_the_claim_so_a_resend_runs(tmp_path):
    from site_helpers import write_skill
    # the first attempt says "unavailable, nothing happened"; the second one writes
    write_skill(tmp_path / "skills", "flaky_pay", _COUNT_ATTEMPT + 'if n == 0:\n    raise ToolFailure("UNAVAILABLE")\n'
                + _EFFECT + 'return {"done": True}', rate_class="write")
    data = tmp_path / "site"
    site = SkillSite(data, skills_dirs=[tmp_path / "skills"], clock=Clock())
    key, _ = site.create_key("t")
    first = call(site, "flaky_pay", {"n": 1}, key, "pay-1")
    assert first.status == 503 and first.body["error"]["code"] == "UNAVAILABLE" and first.body["error"]["retryable"]
    assert _effects(data) == 0
    resent = call(site, "flaky_pay", {"n": 1}, key, "pay-1")
    assert resent.status == 200 and resent.headers.get("Idempotent-Replayed") is None  # it ran: not the 503 again
    assert _attempts(data) == 2 and _effects(data) == 1
    replayed = call(site, "flaky_pay", {"n": 1}, key, "pay-1")  # and now the key holds the success
    assert replayed.headers.get("Idempotent-Replayed") == "true" and _attempts(data) == 2 and _effects(data) == 1


def test_an_internal_failure_after_the_effect_marks_the_claim_unknown_and_a_resend_runs_nothing(tmp_path):
    from site_helpers import write_skill
    write_skill(tmp_path / "skills", "half_pay", _COUNT_ATTEMPT + _EFFECT
                + 'raise RuntimeError("ledger write failed at /srv/ledger.db")', rate_class="write")
    data = tmp_path / "site"
    site = SkillSite(data, skills_dirs=[tmp_path / "skills"], clock=Clock())
    key, _ = site.create_key("t")
    first = call(site, "half_pay", {"n": 1}, key, "pay-1")
    assert first.status >= 500 and first.body["error"]["code"] == "TOOL_ERROR"
    assert "/srv/ledger.db" not in json.dumps(first.body)
    assert _effects(data) == 1
    for _ in range(2):  # it may have happened: a resend hears so, and runs nothing
        resent = call(site, "half_pay", {"n": 1}, key, "pay-1")
        assert resent.status == 409 and resent.body["error"]["code"] == "OUTCOME_UNKNOWN", resent.body
        assert resent.body["error"]["retryable"] is False
    assert _attempts(data) == 1 and _effects(data) == 1
    assert any(k.endswith(":half_pay:pay-1") for k in site.claims.unknown())  # a person finds it


def test_a_backend_shared_by_every_tenant_sees_two_keys_for_two_tenants_sending_the_same_one(tmp_path):
    """Below the site (a payment provider's own dedup, shared by all tenants) the key is scoped to the caller
    too: two tenants sending the same Idempotency-Key are two keys there."""
    from site_helpers import write_skill
    write_skill(tmp_path / "skills", "keyed_pay", 'with open(ctx.data_dir / "keys.txt", "a") as f:\n'
                '    f.write(str(ctx.idempotency_key) + "\\n")\nreturn {"done": True}', rate_class="write")
    data = tmp_path / "site"
    site = SkillSite(data, skills_dirs=[tmp_path / "skills"], clock=Clock())
    first, _ = site.create_key("first")
    second, _ = site.create_key("second")
    for key in (first, second):
        assert call(site, "keyed_pay", {"n": 1}, key, "same-key").status == 200
    seen = (data / "keys.txt").read_text().split()
    assert len(seen) == 2 and len(set(seen)) == 2 and "same-key" not in seen


def test_a_held_claim_has_one_transition_named_by_the_outcome():
    """claims.transition: the write's outcome alone says what becomes of its claim, one named step each."""
    from agentlab.errors import make_error
    from agentlab.site.claims import ClaimState, Settle, answer, transition
    from agentlab.site.execute import Execution, body

    ok = Execution(200, body({"summary": "done"}), ran=True)
    transient = Execution(503, body(None, make_error("UNAVAILABLE")), ran=True)
    broken = Execution(500, body(None, make_error("TOOL_ERROR")), internal="stack", ran=True)
    refused = Execution(422, body(None, make_error("INVALID_ARGS", problems=[])))
    late = Execution(504, body(None, make_error("TIMEOUT", seconds=1)), pending=object(), ran=True)
    assert [transition(o) for o in (ok, transient, broken, refused, late)] == [
        Settle.FINISH, Settle.RELEASE, Settle.MARK_UNKNOWN, Settle.RELEASE, Settle.KEEP]
    assert answer(ClaimState.NEW, None, "en") is None  # only a new claim runs the write
    replay = answer(ClaimState.REPLAY, '{"status": 200, "body": {"success": true}}', "en")
    assert replay is not None and replay.headers["Idempotent-Replayed"] == "true"
    assert [answer(s, None, "en").status for s in (ClaimState.CONFLICT, ClaimState.RUNNING, ClaimState.UNKNOWN)] \
        == [422, 409, 409]
