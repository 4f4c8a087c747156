"""Rates per skill class and quotas per key, on an injected clock (agentlab/site/limits.py), in memory and in Redis."""
import os

import pytest
from site_helpers import Clock

from agentlab.site.keys import ApiKey
from agentlab.site.limits import BATCH_FROM, BATCH_PLACES, BATCH_SECONDS, Limiter, RedisLimiter
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


ONE_BY_ONE = BATCH_FROM - 1  # a limit under which every call is counted in Redis as it comes (no batch)


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
    assert limiter.admit(capped, "get_weather", ONE_BY_ONE).ok
    before = logged()
    for _ in range(QUOTA_SYNC - 2):  # counts 2 .. 15: nothing reaches the disk
        assert limiter.admit(capped, "get_weather", ONE_BY_ONE).ok
        assert limiter.admit(key(), "get_weather", ONE_BY_ONE).ok  # no quota at all: nothing either
    assert logged() == before
    assert limiter.admit(capped, "get_weather", ONE_BY_ONE).ok  # the 16th
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
    assert limiter.admit(capped, "get_weather", ONE_BY_ONE).ok
    (counter,) = store.client.keys(f"{store.prefix}quota:k2:*")
    first = store.client.ttl(counter)
    assert 86_400 + 58 <= first <= 86_400 + 60  # from the slot's first count: past the slot's end whenever that was
    for _ in range(20):  # past a QUOTA_SYNC write too
        assert limiter.admit(capped, "get_weather", ONE_BY_ONE).ok
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


def _counting(limiter):
    """``limiter`` with its round trips to Redis counted (``.trips``)."""
    lua = limiter._lua
    limiter.trips = 0

    def counted(name, keys, args):
        limiter.trips += 1
        return lua(name, keys, args)
    limiter._lua = counted
    return limiter


def test_a_busy_skill_takes_places_in_batches_and_three_replicas_admit_exactly_its_limit(redis_url):
    """From BATCH_FROM calls a minute a round trip takes up to BATCH_PLACES places for the replica's next calls: a
    busy read asks Redis once in sixteen calls, not each time. Batches stop at three quarters of the window, and every
    place taken is used or given back: three replicas taking turns at one instant admit exactly the limit, no more,
    and the window holds exactly the calls admitted."""
    store, clock = open_store(redis_url), Clock()
    replicas = [_counting(RedisLimiter(store.client, prefix=store.prefix, clock=clock)) for _ in range(3)]
    limit = 640
    admitted = [replicas[i % 3].admit(key(), "get_weather", limit).ok for i in range(900)]
    assert admitted.count(True) == limit and admitted[limit + 100:] == [False] * (900 - limit - 100)
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == limit
    trips = sum(r.trips for r in replicas)
    # the first three quarters in batches of 16 (a round trip per 16 calls), the last quarter and the refusals one by one
    assert trips < limit * 3 // 4 // BATCH_PLACES + 3 + (limit - limit * 3 // 4) + (900 - limit), trips
    assert replicas[0].trips < 20 + (900 - limit) // 3 + limit // 4  # not one per call: 300 calls each
    # under BATCH_FROM a minute, every call asks Redis: the exact count across replicas stays as it was
    counted = _counting(RedisLimiter(store.client, prefix=store.prefix, clock=clock))
    assert all(counted.admit(key(), "get_order", ONE_BY_ONE).ok for _ in range(50)) and counted.trips == 50


def test_a_window_never_holds_more_than_its_limit_with_batches_on_a_moving_clock(redis_url):
    """Replicas called at random on a moving clock, places used late in their batch: in no 60 seconds are more
    calls admitted than the limit (a place is kept in the window as if used at the end of its batch)."""
    import random
    store, clock = open_store(redis_url), Clock()
    replicas = [RedisLimiter(store.client, prefix=store.prefix, clock=clock) for _ in range(4)]
    rng = random.Random(7)
    limit, times = 800, []
    for _ in range(6000):
        clock.now += rng.expovariate(1 / 0.05)  # about 20 calls a second: past the limit, every minute
        if rng.choice(replicas).admit(key(), "get_weather", limit).ok:
            times.append(clock.now)
    j = 0
    for i, t in enumerate(times):  # the most admitted in any 60 s ending at an admitted call
        while times[j] <= t - 60:
            j += 1
        assert i - j + 1 <= limit, (t, i - j + 1)
    assert len(times) > 3 * limit  # the limit was reached again and again, and the calls went on being admitted


def test_places_not_used_in_time_are_given_back_to_the_window_and_the_quota(redis_url):
    """A replica whose batch runs out unused gives the places back on its next round trip of that key and skill:
    the window and the quota then hold the calls made and no more. A batch from an earlier quota period is never
    used in the next one, and its places go back to its own period's count, never the new one's."""
    store = open_store(redis_url)
    clock = Clock(86_400 * 20_000 + 100)
    limiter = _counting(RedisLimiter(store.client, prefix=store.prefix, clock=clock))
    capped = key(quota=10_000)
    window = f"{store.prefix}rate:k1:get_weather"
    slot = int(clock.now // 86_400)
    assert limiter.admit(capped, "get_weather", 1000).ok and limiter.admit(capped, "get_weather", 1000).ok
    assert limiter.trips == 1 and store.client.zcard(window) == BATCH_PLACES
    assert store.client.get(f"{store.prefix}quota:k1:{slot}") == str(BATCH_PLACES)  # counted when taken
    clock.now += BATCH_SECONDS + 0.5  # the batch is over, 14 places unused
    assert limiter.admit(capped, "get_weather", 1000).ok and limiter.trips == 2
    assert store.client.zcard(window) == 2 + BATCH_PLACES  # the two calls, and this call's own new batch
    assert store.client.get(f"{store.prefix}quota:k1:{slot}") == str(2 + BATCH_PLACES)
    clock.now = 86_400 * (slot + 1) + 1  # the next day, within the same minute's window: the batch is not used
    assert limiter.admit(capped, "get_weather", 1000).ok and limiter.trips == 3
    assert store.client.get(f"{store.prefix}quota:k1:{slot}") == "3"  # that day's three calls: its unused places back
    assert store.client.get(f"{store.prefix}quota:k1:{slot + 1}") == str(BATCH_PLACES)
    clock.now += 61
    assert limiter.admit(capped, "get_weather", 1000).ok
    assert store.client.zcard(window) == BATCH_PLACES  # the given back gone, the rest left the window


def test_near_its_limit_or_its_quota_a_busy_skill_counts_every_call_as_it_comes(redis_url):
    """No batch once it would fill three quarters of the window or of the quota: the last places go one call at
    a time, so a replica holding places it will not use cannot refuse another's calls near the limit."""
    store, clock = open_store(redis_url), Clock()
    limiter = _counting(RedisLimiter(store.client, prefix=store.prefix, clock=clock))
    for _ in range(590):  # a window already near three quarters of 800, filled one by one
        assert limiter.admit(key(), "get_weather", ONE_BY_ONE).ok
    limiter.trips = 0
    assert all(limiter.admit(key(), "get_weather", 800).ok for _ in range(20)) and limiter.trips == 20
    capped = ApiKey("k3", "test", ("*",), 100, "day", 0.0)  # a quota of 100: three quarters is 75
    assert [limiter.admit(capped, "s", 10**6).ok for _ in range(110)] == [True] * 100 + [False] * 10
    (counter,) = store.client.keys(f"{store.prefix}quota:k3:*")
    assert store.client.get(counter) == "100"


def test_places_to_give_back_survive_a_round_trip_that_failed(redis_url):
    """A round trip that fails keeps the places it was to give back for the next one: none is lost in the window."""
    store, clock = open_store(redis_url), Clock()
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    assert limiter.admit(key(), "get_weather", 1000).ok
    clock.now += BATCH_SECONDS + 1
    lua = limiter._lua

    def down(name, keys, args):
        raise ConnectionError("the server went away")
    limiter._lua = down
    with pytest.raises(ConnectionError):
        limiter.admit(key(), "get_weather", 1000)
    limiter._lua = lua
    assert limiter.admit(key(), "get_weather", 1000).ok
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == 1 + BATCH_PLACES  # 15 given back, 16 taken


def test_the_site_s_path_on_the_event_loop_takes_its_places_in_batches_as_well(redis_url):
    """``admit_async`` (the site's read path) batches as ``admit`` does: 48 calls, three round trips."""
    import asyncio
    store, clock = open_store(redis_url), Clock()
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    lua, trips = limiter._lua, []
    call = lua.call_async

    async def counted(name, keys, args):
        trips.append(name)
        return await call(name, keys, args)
    lua.call_async = counted

    async def calls():
        return [(await limiter.admit_async(key(), "get_weather", 1000)).ok for _ in range(3 * BATCH_PLACES)]
    assert asyncio.run(calls()) == [True] * 3 * BATCH_PLACES and len(trips) == 3
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == 3 * BATCH_PLACES


def test_a_give_back_the_server_ran_twice_returns_the_places_once(redis_url):
    """A round trip that gave places back and whose reply was lost is sent again with them: the quota went 14 below
    the calls admitted, and as many calls past it got through. Redis gives a batch's places back once (its mark), and
    a batch taken by a round trip whose reply was lost is given back, not held for the rest of the day."""
    store = open_store(redis_url)
    clock = Clock(86_400 * 20_000 + 100)
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    capped = key(quota=1000)
    assert limiter.admit(capped, "get_weather", 1000).ok and limiter.admit(capped, "get_weather", 1000).ok
    clock.now += BATCH_SECONDS + 1  # 14 places unused
    lua = limiter._lua

    def ran_then_lost(name, keys, args):
        lua(name, keys, args)
        raise ConnectionError("the connection broke after the server ran the script")
    limiter._lua = ran_then_lost
    with pytest.raises(ConnectionError):
        limiter.admit(capped, "get_weather", 1000)  # it ran: one call counted, its batch taken, 14 given back
    limiter._lua = lua
    assert limiter.admit(capped, "get_weather", 1000).ok  # the 14 sent again, with a new batch's 16
    counter = f"{store.prefix}quota:k1:{int(clock.now // 86_400)}"
    # the two calls, the lost round trip's own call (it ran), this call and its 15: the batch the lost round trip took
    # there, never handed out here, is given back too (it held 15 of the quota for the day)
    assert int(store.client.get(counter)) == 2 + 1 + BATCH_PLACES
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == 2 + 1 + BATCH_PLACES


def test_a_replica_gives_places_back_with_a_call_of_another_skill_or_on_its_own_timer(redis_url):
    """Unused places were given back only with the next call of the same key and skill: a replica whose calls went to
    another skill, or that got none, held them in the quota for the rest of the day (45 of a quota of 100 over
    three replicas). Any round trip of the limiter gives them back, and an event loop's timer does so unasked."""
    import asyncio
    store = open_store(redis_url)
    clock = Clock(86_400 * 20_000 + 100)
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    capped = key(quota=10_000)
    counter = f"{store.prefix}quota:k1:{int(clock.now // 86_400)}"
    assert limiter.admit(capped, "get_weather", 1000).ok
    clock.now += BATCH_SECONDS + 1
    assert limiter.admit(capped, "get_order", 60).ok  # another skill, counted one by one
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == 1 and store.client.get(counter) == "2"

    idle = RedisLimiter(store.client, prefix=store.prefix, clock=clock)

    async def one_call_then_idle():
        assert (await idle.admit_async(capped, "get_news", 1000)).ok
        assert store.client.get(counter) == str(2 + BATCH_PLACES)
        clock.now += BATCH_SECONDS + 1
        await asyncio.sleep(BATCH_SECONDS + 0.3)  # no call: the loop's timer gives the 15 back
    asyncio.run(one_call_then_idle())
    assert store.client.get(counter) == "3" and store.client.zcard(f"{store.prefix}rate:k1:get_news") == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_uses_none_of_its_parent_s_places(redis_url):
    """A child forked after its parent took a batch used the same places: 29 calls admitted, 15 counted."""
    store, clock = open_store(redis_url), Clock()
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    assert limiter.admit(key(), "get_weather", 1000).ok  # a batch of 16: 15 places left here
    pid = os.fork()
    if pid == 0:  # the child: each of its calls is a round trip of its own, counted in the window
        code = 1
        try:
            for _ in range(3):
                limiter.admit(key(), "get_weather", 640)  # (640 a minute: a batch of 16 again, its own)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    for _ in range(BATCH_PLACES - 1):
        assert limiter.admit(key(), "get_weather", 1000).ok
    # the parent's 16 (every one used), the child's batch of 16 (one used, 15 held until given back or gone)
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == 2 * BATCH_PLACES


def test_a_call_the_server_runs_twice_counts_once_and_keeps_its_batch(redis_url):
    """redis-py sends a script again when the connection breaks after the server ran it: the second run counted a
    batch of 16 in the quota again (18 counted for 2 calls). The call finds its own place and is answered as before."""
    store, clock = open_store(redis_url), Clock(86_400 * 20_000 + 100)
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    lua, trips = limiter._lua, []

    def twice(name, keys, args):
        trips.append(name)
        lua(name, keys, args)
        return lua(name, keys, args)
    limiter._lua = twice
    assert all(limiter.admit(key(quota=1000), "get_weather", 1000).ok for _ in range(BATCH_PLACES)) and len(trips) == 1
    counter = f"{store.prefix}quota:k1:{int(clock.now // 86_400)}"
    assert store.client.get(counter) == str(BATCH_PLACES)
    assert store.client.zcard(f"{store.prefix}rate:k1:get_weather") == BATCH_PLACES


def test_places_given_back_by_a_loop_s_timer_need_no_task_and_close_gives_back_the_rest(redis_url):
    """The timer's give-back ran as a task: fired while asyncio.run was shutting down, the task was left pending on
    a closed loop ("Task was destroyed but it is pending!") with the places it carried. It is written on the loop's
    connection now, and what no round trip gave back is given back by close()."""
    import asyncio
    store = open_store(redis_url)
    clock = Clock(86_400 * 20_000 + 100)
    limiter = RedisLimiter(store.client, prefix=store.prefix, clock=clock)
    capped = key(quota=1000)

    counter = f"{store.prefix}quota:k1:{int(clock.now // 86_400)}"

    async def calls():
        loop = asyncio.get_running_loop()
        assert (await limiter.admit_async(capped, "get_order", 1000)).ok  # the loop's connection open
        started, create = [], loop.create_task
        loop.create_task = lambda coro, **kw: started.append(coro) or create(coro, **kw)
        assert (await limiter.admit_async(capped, "get_weather", 1000)).ok
        clock.now += BATCH_SECONDS + 1
        await asyncio.sleep(BATCH_SECONDS + 0.3)  # the timer gives both batches' places back
        assert started == [] and store.client.get(counter) == "2"
        assert (await limiter.admit_async(capped, "get_news", 1000)).ok  # and the loop ends with this one's timer set
    asyncio.run(calls())
    assert store.client.get(counter) == str(2 + BATCH_PLACES)
    limiter.close()
    assert store.client.get(counter) == "3" and store.client.zcard(f"{store.prefix}rate:k1:get_news") == 1
