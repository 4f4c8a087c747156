"""Three replicas of the skill site on one Redis (docs/site.md#several-replicas), as real processes.

Each replica is ``python -m agentlab site --store redis://...`` (uvicorn) in its own process group,
all on one data folder (the keys, and ``effects.txt``, which every write appends to: the count
of effects). Requests go round-robin across the replicas, many at once.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, free_port
from site_helpers import SiteServer, write_skill

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.timeout(180)

# every effect appends the caller's tag (its Idempotency-Key, sent as an argument: the handler itself sees the key
# scoped to the tenant, which no test should have to recompute)
EFFECT = 'with ctx.lock, open(ctx.data_dir / "effects.txt", "a") as f:\n    f.write(str(arguments.get("tag")) + "\\n")\n'


def skills(folder: Path) -> Path:
    write_skill(folder, "count_write", EFFECT + 'return {"n": arguments.get("n")}', rate_class="write")
    meta = json.loads((folder / "count_write" / "skill.json").read_text())
    (folder / "count_write" / "skill.json").write_text(json.dumps({**meta, "limits": {"per_minute": 1000}}))
    write_skill(folder, "limited_write", EFFECT + 'return {"ok": True}', rate_class="write")  # 10 a minute
    write_skill(folder, "read_thing", 'return {"ok": True}')
    # the effect lands, then the reply takes long: the replica is killed in between
    write_skill(folder, "slow_effect", EFFECT + 'time.sleep(30)\nreturn {"done": True}', rate_class="write", timeout=2.0)
    return folder


@pytest.fixture(scope="module")
def replicas(redis_server, tmp_path_factory):
    from agentlab.site.service import SkillSite
    data, folder = tmp_path_factory.mktemp("shared-data"), skills(tmp_path_factory.mktemp("skills"))
    url = f"{redis_server}?prefix=site{uuid.uuid4().hex[:8]}:"
    setup = SkillSite(data, skills_dirs=[folder], store=url)
    plain, _ = setup.create_key("plain")
    capped, _ = setup.create_key("capped", quota=25, period="day")
    # the three boot side by side; the store comes from --store, never from the caller's shell
    servers = [SiteServer(data, "--skills", str(folder), "--store", url, "--lease-grace", "1", unset=("AGENTLAB_STORE",))
               for _ in range(3)]
    try:
        for server in servers:
            server.wait_ready()
        yield {"bases": [s.base for s in servers], "procs": [s.proc for s in servers], "data": data, "plain": plain,
               "capped": capped, "url": url, "store": setup.claims}
    finally:
        for server in servers:
            server.stop()


def effects(data: Path) -> list[str]:
    path = data / "effects.txt"
    return path.read_text().splitlines() if path.exists() else []


def post(client, base, skill, key, idem, args):
    headers = {"X-API-Key": key, **({"Idempotency-Key": idem} if idem else {})}
    args = {**args, "tag": idem}
    r = client.post(f"{base}/api/skills/{skill}/execute", json={"arguments": args}, headers=headers, timeout=60)
    return r.status_code, r.json(), r.headers


def fan_out(calls, bases, workers=32):
    """Every call at once (up to ``workers``), round-robin over the replicas; their replies in order."""
    # room for every thread's connection to every replica, kept open: at its limit, httpcore's pool closes an idle
    # connection to one replica to open one to another, and may close one it has just handed to a waiting request
    # (encode/httpcore#1110: that request hung for its whole read timeout, then read EBADF; seen once in CI)
    limits = httpx.Limits(max_connections=workers * len(bases), max_keepalive_connections=None, keepalive_expiry=None)
    with httpx.Client(limits=limits) as client, ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(post, client, bases[i % len(bases)], *c) for i, c in enumerate(calls)]
        return [f.result() for f in futures]


def test_200_concurrent_writes_over_20_keys_run_20_times(replicas):
    keys = [f"order-{i}" for i in range(20)]
    calls = [("count_write", replicas["plain"], keys[i % 20], {"n": i % 20}) for i in range(200)]
    replies = fan_out(calls, replicas["bases"])
    ran = [line for line in effects(replicas["data"]) if line.startswith("order-")]
    assert sorted(ran) == sorted(keys)  # each key's effect exactly once, whichever replica got it
    assert [s for s, _, _ in replies] == [200] * 200
    replayed = sum(h.get("Idempotent-Replayed") == "true" for _, _, h in replies)
    assert replayed == 180
    wrong = [(k, b) for (_, _, k, _), (_, b, _) in zip(calls, replies, strict=True) if b["result"]["n"] != int(k[6:])]
    assert not wrong, wrong[:3]


def test_a_10_per_minute_write_limit_holds_across_replicas(replicas):
    calls = [("limited_write", replicas["plain"], f"lim-{i}", {}) for i in range(30)]
    replies = fan_out(calls, replicas["bases"])
    statuses = [s for s, _, _ in replies]
    assert statuses.count(200) == 10 and statuses.count(429) == 20
    assert all(1 <= int(h["Retry-After"]) <= 60 for s, _, h in replies if s == 429)
    assert len([x for x in effects(replicas["data"]) if x.startswith("lim-")]) == 10


def test_a_quota_adds_up_across_replicas(replicas):
    calls = [("read_thing", replicas["capped"], None, {}) for _ in range(40)]
    replies = fan_out(calls, replicas["bases"])
    statuses = [s for s, _, _ in replies]
    assert statuses.count(200) == 25 and statuses.count(429) == 15  # 25 a day, whichever replica counted them
    assert all(b["error"]["code"] == "RATE_LIMITED" for s, b, _ in replies if s == 429)


def test_a_replica_killed_mid_write_leaves_one_effect_and_a_truthful_unknown(replicas):
    bases, store, data = replicas["bases"], replicas["store"], replicas["data"]
    key, idem = replicas["plain"], "slow-1"
    first: list = []
    t = threading.Thread(target=lambda: first.append(_try(post, httpx, bases[0], "slow_effect", key, idem, {})))
    t.start()
    deadline = time.monotonic() + 20
    while "slow-1" not in effects(data):  # the effect landed; the reply has not been sent
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(replicas["procs"][0].pid, signal.SIGKILL)
    replicas["procs"][0].wait(10)
    t.join(10)
    assert first and first[0] is None  # the caller never heard back
    claim_key = next(k for k in store.client.smembers(f"{store.prefix}open") if k.endswith(":slow_effect:slow-1"))
    assert store.unknown() == []  # within its lease: running, as far as anyone can tell
    with httpx.Client() as client:
        status, body, _ = post(client, bases[1], "slow_effect", key, idem, {})
        # the other replica waits for the running call, then says what it knows: still running, or unknown
        assert body["error"]["code"] in ("IN_PROGRESS", "OUTCOME_UNKNOWN")
        deadline = time.monotonic() + 10
        while store.unknown() != [claim_key]:  # the lease (timeout 2 s + grace 1 s) runs out
            assert time.monotonic() < deadline
            time.sleep(0.1)
        status, body, _ = post(client, bases[2], "slow_effect", key, idem, {})
        assert body["error"]["code"] == "OUTCOME_UNKNOWN" and not body["error"]["retryable"]
        assert effects(data).count("slow-1") == 1  # never run again by itself
        # a person checks the backend, sees the effect, and records it: from now on the key replays
        recorded = {"status": 200, "body": {"success": True, "result": {"done": True}, "error": None, "fallback_hint": None}}
        assert store.resolve(claim_key, json.dumps(recorded))
        status, body, headers = post(client, bases[1], "slow_effect", key, idem, {})
        assert (status, body["result"]["done"], headers.get("Idempotent-Replayed")) == (200, True, "true")
    assert effects(data).count("slow-1") == 1


def _try(fn, http, *args):
    try:
        with http.Client() as client:
            return fn(client, *args)
    except http.TransportError:
        return None


def test_the_site_refuses_a_store_it_cannot_reach(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    port = free_port()  # nobody listens there
    r = subprocess.run([sys.executable, "-m", "agentlab", "site", "--data", str(tmp_path), "--store",
                        f"redis://127.0.0.1:{port}/0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and f"--store redis://127.0.0.1:{port}/0: cannot use it" in r.stderr
    assert "Traceback" not in r.stderr
