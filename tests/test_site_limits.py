"""Rates per skill class and quotas per key, on an injected clock (agentlab/site/limits.py), in memory and in Redis."""
import pytest
from site_helpers import Clock

from agentlab.site.keys import ApiKey
from agentlab.site.limits import Limiter, RedisLimiter
from agentlab.store import open_store


@pytest.fixture(params=["memory", "redis"])
def make(request):
    """A limiter on a clock: the same rules whether the counts live in memory or in Redis."""
    if request.param == "memory":
        return lambda clock: Limiter(clock=clock)
    store = open_store(request.getfixturevalue("redis_url"))
    return lambda clock: RedisLimiter(store.client, prefix=store.prefix, clock=clock)


def key(quota=None, period="day"):
    return ApiKey("k1", "test", ("*",), quota, period, 0.0)


def test_the_rate_is_a_sliding_minute_and_says_when_to_come_back(make):
    clock = Clock()
    limiter = make(clock)
    for _ in range(10):
        assert limiter.admit(key(), "send_notification", 10).ok
        clock.now += 1
    refused = limiter.admit(key(), "send_notification", 10)
    assert not refused.ok and refused.kind == "rate" and refused.retry_after == 50.0
    clock.now += 50
    assert limiter.admit(key(), "send_notification", 10).ok
    assert limiter.admit(key(), "get_order", 60).ok  # another skill, another window


def test_the_quota_is_a_fixed_window_per_key(make):
    clock = Clock(86_400 * 20_000 + 3600)  # one hour into a day
    limiter = make(clock)
    assert all(limiter.admit(key(3), f"s{i}", 60).ok for i in range(3))
    refused = limiter.admit(key(3), "s9", 60)
    assert refused.kind == "quota" and refused.retry_after == 86_400 - 3600 and refused.retry_after_header == "82800"
    clock.now += refused.retry_after
    assert limiter.admit(key(3), "s9", 60).ok


def test_a_quota_reached_or_of_zero_refuses_and_counts_nothing_more(make):
    """Refusals past the quota leave the count where it was (the count is taken first and given back), and a key
    whose quota is 0 is refused before anything is counted: in Redis, no counter is left behind for it."""
    clock = Clock(86_400 * 20_000)
    limiter = make(clock)
    none = ApiKey("k0", "test", ("*",), 0, "day", 0.0)
    assert [limiter.admit(none, "s", 60).kind for _ in range(3)] == ["quota"] * 3
    assert [limiter.admit(key(2), "s", 60).ok for _ in range(7)] == [True, True] + [False] * 5
    slot = int(clock.now // 86_400)
    clock.now += 86_400  # the next day: the full quota again
    assert [limiter.admit(key(2), "s", 60).ok for _ in range(3)] == [True, True, False]
    if isinstance(limiter, RedisLimiter):
        assert limiter.client.get(f"{limiter.prefix}quota:k1:{slot}") == "2"  # not 7: refusals gave theirs back
        assert not limiter.client.exists(f"{limiter.prefix}quota:k0:{slot}")


def test_redis_limiters_share_one_window(redis_url):
    store, clock = open_store(redis_url), Clock()
    replicas = [RedisLimiter(store.client, prefix=store.prefix, clock=clock) for _ in range(3)]
    admitted = [replicas[i % 3].admit(key(), "send_notification", 10).ok for i in range(15)]
    assert admitted == [True] * 10 + [False] * 5


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_rate_limited_call_is_in_the_call_log_and_the_skills_success_rate(tmp_path, lang):
    """A keyed call refused by its quota or its rate used to go to the keyless log only: the skill's page said
    2 of 2 calls succeeded while its callers heard 429 on the third. It is a refused line of the call log now."""
    import json

    from agentlab.site.pages import skill_stats
    from agentlab.site.service import SkillSite
    site = SkillSite(tmp_path, clock=Clock())
    key, _ = site.create_key("tenant", quota=2)
    body = json.dumps({"arguments": {"order_id": "A1001"}}).encode()
    statuses = [site.execute("get_order", body, api_key=key, idempotency_key=None, session_id="s", lang=lang).status
                for _ in range(3)]
    assert statuses == [200, 200, 429]
    lines = [x for x in site.logs.read("call") if x.get("skill") == "get_order"]
    assert [x["status"] for x in lines] == [200, 200, 429]
    assert lines[-1]["error"] == "RATE_LIMITED" and lines[-1]["success"] is not True and lines[-1]["key_name"] == "tenant"
    assert lines[-1]["args_valid"] is None  # a read refused by its limit before its arguments were checked
    stats = skill_stats(site)["get_order"]
    assert stats.calls == 3 and stats.success_rate == pytest.approx(2 / 3) and stats.valid_rate == 1.0
    assert not [x for x in site.logs.read("keyless") if x.get("skill") == "get_order"]


def test_past_its_share_of_refusals_a_rate_limited_key_still_overflows_to_the_keyless_log(tmp_path):
    """What kept one tenant from pushing the others' calls out of the call log still holds: within a minute, at most
    REFUSALS_PER_MINUTE refused lines of one key reach the call log; the rest go to the capped keyless log."""
    import json

    from agentlab.site.admission import REFUSALS_PER_MINUTE
    from agentlab.site.service import SkillSite
    site = SkillSite(tmp_path, clock=Clock())
    key, _ = site.create_key("flood", quota=1)
    body = json.dumps({"arguments": {"order_id": "A1001"}}).encode()
    replies = [site.execute("get_order", body, api_key=key, idempotency_key=None, session_id=None)
               for _ in range(REFUSALS_PER_MINUTE + 11)]
    assert [r.status for r in replies].count(429) == REFUSALS_PER_MINUTE + 10
    assert all(r.body["error"]["code"] == "RATE_LIMITED" for r in replies[1:])
    logged = [x for x in site.logs.read("call") if x.get("status") == 429]
    assert len(logged) == REFUSALS_PER_MINUTE
    assert len([x for x in site.logs.read("keyless") if x.get("status") == 429]) == 10
    # the skill's figures count every call its keyed callers heard, wherever its line is kept: the page said
    # REFUSALS_PER_MINUTE + 1 calls where REFUSALS_PER_MINUTE + 11 were answered
    from agentlab.site.pages import skill_stats
    stats = skill_stats(site)["get_order"]
    assert stats.calls == REFUSALS_PER_MINUTE + 11 and stats.ok == 1, stats
    assert stats.statuses["429"] == REFUSALS_PER_MINUTE + 10
    # a request with no valid key is still none of a skill's calls
    site.execute("get_order", body, api_key="sk-site-not-a-key", idempotency_key=None, session_id=None)
    assert skill_stats(site)["get_order"].calls == REFUSALS_PER_MINUTE + 11
    import re

    from agentlab.site.pages import detail_page
    page = detail_page(site, site.skills["get_order"], "en")
    # the mean as precise as the log's latencies and p50 beside it ("mean 0.2886 ms · p50 0.12 ms")
    assert re.search(r"mean \d+\.\d\d ms · p50", page), page[page.find("mean"):][:80]


def test_a_read_counted_in_redis_waits_for_no_disk_and_every_16th_quota_count_is_kept(redis_url):
    """The server logs every write to disk before it answers (appendfsync always, for the claims): the rate
    windows and quota counts are kept from that log, so a read waits for no fsync; a quota's count is written
    there once every QUOTA_SYNC calls, so a crash forgets at most QUOTA_SYNC - 1 of them."""
    from agentlab.site.limits import QUOTA_SYNC
    store = open_store(redis_url)
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=Clock())

    def logged() -> int:
        return int(store.client.info("persistence")["aof_current_size"])

    capped = key(quota=1000)
    assert limiter.admit(capped, "get_weather", 10**6).ok
    before = logged()
    for _ in range(QUOTA_SYNC - 2):  # counts 2 .. 15: nothing reaches the disk
        assert limiter.admit(capped, "get_weather", 10**6).ok
        assert limiter.admit(key(), "get_weather", 10**6).ok  # no quota at all: nothing either
    assert logged() == before
    assert limiter.admit(capped, "get_weather", 10**6).ok  # the 16th
    assert logged() > before
    (counter,) = store.client.keys(f"{store.prefix}quota:k1:*")
    assert store.client.get(counter) == str(QUOTA_SYNC) and store.client.ttl(counter) > 86_000


def test_redis_counts_calls_at_one_instant_apart_and_a_quota_counter_keeps_the_expiry_its_first_count_set(redis_url):
    """Each call's member in the window is the time and a random token (no shared counter bumped per call): calls
    at the very same instant still count one each. A quota's counter gets its expiry (a slot's length and a
    minute) from the slot's first count alone: it outlives the slot, and keeps that expiry as it grows."""
    store = open_store(redis_url)
    clock = Clock()  # the time stands still: every call below is at one instant
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    verdicts = [limiter.admit(key(), "get_weather", 5).ok for _ in range(7)]
    assert verdicts == [True] * 5 + [False] * 2
    assert store.client.keys(f"{store.prefix}seq") == []
    capped = ApiKey("k2", "test", ("*",), 1000, "day", 0.0)
    assert limiter.admit(capped, "get_weather", 10**6).ok
    (counter,) = store.client.keys(f"{store.prefix}quota:k2:*")
    first = store.client.ttl(counter)
    assert 86_400 + 58 <= first <= 86_400 + 60  # from the slot's first count: past the slot's end whenever that was
    for _ in range(20):  # past a QUOTA_SYNC write too
        assert limiter.admit(capped, "get_weather", 10**6).ok
    assert first - 2 <= store.client.ttl(counter) <= first and store.client.get(counter) == "21"


def test_a_rate_of_none_a_minute_refuses_every_call_for_a_minute(make):
    """``limits: {"per_minute": 0}`` switches a skill off: each call hears 429 with a minute to wait (it was a 500:
    the oldest call of an empty window was read, in memory and in the Redis script)."""
    limiter = make(Clock())
    refused = [limiter.admit(key(), "off", 0) for _ in range(2)]
    assert [(r.ok, r.kind, r.retry_after) for r in refused] == [(False, "rate", 60.0)] * 2


def test_a_rate_refusal_never_asks_for_more_than_its_window():
    """Replicas read their clocks a little apart: the oldest place taken could be a moment later than this call's
    now, and a 10-a-minute write limit across replicas said Retry-After: 61 (a flaky CI run)."""
    key = ApiKey("k1", "test", ("*",), None, "day", 0.0)
    late = RedisLimiter._verdict(key, 10, ("rate", "60.004"))
    assert late.retry_after == 60.0 and late.retry_after_header == "60"
