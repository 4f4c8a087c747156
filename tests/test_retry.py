import random

from agentlab.retry import RetryPolicy, herd


def test_full_jitter_stays_within_the_backoff_and_the_cap():
    p = RetryPolicy(max_retries=6, base=0.5, cap=4)
    rng = random.Random(0)
    for attempt in range(6):
        for _ in range(200):
            assert 0 <= p.delay(attempt, rng) <= min(4, 0.5 * 2 ** attempt)


def test_retry_after_is_a_floor_but_the_cap_wins():
    p = RetryPolicy(base=0.1, cap=5)
    assert p.delay(0, random.Random(0), retry_after=2) >= 2
    assert p.delay(0, random.Random(0), retry_after=60) == 5


def test_no_jitter_is_exponential():
    assert RetryPolicy(max_retries=4, base=1, cap=100, jitter="none").schedule(random.Random(0)) == [1, 2, 4, 8]


def test_jitter_breaks_up_the_herd():
    rigid = herd(RetryPolicy(max_retries=4, base=1, cap=8, jitter="none"), clients=300, capacity=40)
    spread = herd(RetryPolicy(max_retries=4, base=1, cap=8, jitter="full"), clients=300, capacity=40)
    assert spread["served"] > rigid["served"]
    assert spread["gave_up"] < rigid["gave_up"]
