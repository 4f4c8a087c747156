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


HERD = {"no jitter": RetryPolicy(max_retries=4, base=1, cap=8, jitter="none"),
        "full jitter": RetryPolicy(max_retries=4, base=1, cap=8, jitter="full")}


def test_the_herd_window_covers_the_whole_schedule_so_every_client_is_accounted_for():
    """Notebook 04: with a 10 s window the 4th lockstep resend (t=15) fell outside and counted as given up."""
    for jitter, policy in HERD.items():
        r = herd(policy, clients=300, capacity=40, rng=random.Random(0))
        assert r["horizon"] >= 1 + 2 + 4 + 8, jitter
        assert r["unfinished"] == 0 and r["served"] + r["gave_up"] == r["clients"] == 300, jitter
        assert sum(r["first"]) == 300 and r["first"][0] == 300  # every client's first try, all at t=0
        assert r["arrivals"] == [f + s for f, s in zip(r["first"], r["resends"], strict=True)]
        assert sum(r["arrivals"]) == 300 + sum(r["resends"])
    rigid = herd(HERD["no jitter"], clients=300, capacity=40)
    # five waves (t = 0, 1, 3, 7, 15), 40 served in each; the rest gave up after the fourth resend
    assert [t * 4 for t in (0, 1, 3, 7, 15)] == [i for i, n in enumerate(rigid["arrivals"]) if n]
    assert rigid["served"] == 5 * 40 and rigid["gave_up"] == 100
    assert rigid["arrivals"][0] == 300 and rigid["resends"][0] == 0


def test_a_window_shorter_than_the_schedule_counts_the_unfinished_apart():
    r = herd(HERD["no jitter"], clients=300, capacity=40, horizon=10)
    assert (r["served"], r["gave_up"], r["unfinished"]) == (160, 0, 140)
    assert r["served"] + r["gave_up"] + r["unfinished"] == 300


def test_the_herd_sentences_say_what_the_plot_draws():
    import re

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentlab.workbook.plots import herd_results, herd_text, plot_herd
    results = herd_results(HERD, clients=300, capacity=40)
    for lang in ("en", "zh"):
        ax = plot_herd(results, capacity=40, lang=lang)
        lines = herd_text(results, lang)
        for r, step, line, first in zip(results.values(), ax.lines[:2], lines[0::2], lines[1::2], strict=True):
            drawn = list(step.get_ydata())[:-1]  # the last point only closes the last slot
            assert drawn == r["arrivals"] and list(step.get_xdata())[-1] == r["horizon"]
            nums = [int(n) for n in re.findall(r"\d+", line.split("：" if lang == "zh" else ": ", 1)[1])]
            assert r["served"] in nums and r["gave_up"] in nums and r["clients"] in nums
            assert str(int(drawn[0])) in first and str(r["first"][0]) in first
            if r["resends"][0]:
                assert str(r["resends"][0]) in first and r["first"][0] + r["resends"][0] == drawn[0]
        plt.close("all")
    full = results["full jitter"]
    assert full["arrivals"][0] > 300 and full["first"][0] == 300  # the first slot: first tries plus early resends
