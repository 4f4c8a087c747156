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


def test_redis_limiters_share_one_window(redis_url):
    store, clock = open_store(redis_url), Clock()
    replicas = [RedisLimiter(store.client, prefix=store.prefix, clock=clock) for _ in range(3)]
    admitted = [replicas[i % 3].admit(key(), "send_notification", 10).ok for i in range(15)]
    assert admitted == [True] * 10 + [False] * 5
