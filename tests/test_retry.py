import random

from agentlab.retry import RetryPolicy, herd


def test_full_jitter_stays_within_the_backoff_and_the_cap():
    p = RetryPolicy(max_retries=6, base=0.5, cap=4)
    rng = random.Random(0)
    for attempt in range(6):
        for _ in range(200):
            assert 0 <= p.delay(attempt, rng) <= min(4, 0.5 * 2 ** attempt)


def test_retry_after_is_a_floor_never_cut_short_by_the_cap():
    p = RetryPolicy(base=0.1, cap=5, longest_wait=30)
    assert p.delay(0, random.Random(0), retry_after=2) >= 2
    assert p.delay(0, random.Random(0), retry_after=20) == 20  # the backoff cap does not shorten the server's wait
    assert p.may_wait(20) and p.may_wait(None) and not p.may_wait(60)


def test_equal_jitter_is_half_fixed_half_random():
    p = RetryPolicy(max_retries=5, base=1, cap=8, jitter="equal")
    rng = random.Random(1)
    for attempt in range(5):
        b = min(8, 2 ** attempt)
        waits = [p.delay(attempt, rng) for _ in range(300)]
        assert all(b / 2 <= w <= b for w in waits)
        assert max(waits) - min(waits) > b / 4  # the random half really varies


def test_no_jitter_is_exponential():
    assert RetryPolicy(max_retries=4, base=1, cap=100, jitter="none").schedule(random.Random(0)) == [1, 2, 4, 8]


def test_jitter_breaks_up_the_herd():
    rigid = herd(RetryPolicy(max_retries=4, base=1, cap=8, jitter="none"), clients=300, capacity=40)
    spread = herd(RetryPolicy(max_retries=4, base=1, cap=8, jitter="full"), clients=300, capacity=40)
    assert spread["served"] > rigid["served"]
    assert spread["gave_up"] < rigid["gave_up"]
