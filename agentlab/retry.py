"""Backoff with jitter, and the question "may I send this again?".

Three kinds of "try again" get three budgets (docs/failures.md#re-ask-resend-stop): a *re-ask* when the
model's call was invalid (the loop's self-correction budget), a *resend* when
the network or a service failed (this module), and *stop* when retrying cannot
help. Only transient failures are resent, and only where a repeat is safe.

Full jitter (``delay = uniform(0, min(cap, base * 2**attempt))``) spreads many
clients that failed at the same moment, so they do not all come back at the
same moment and knock the service over again (the thundering herd).
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from typing import Literal

__all__ = ["Jitter", "RetryPolicy", "herd"]

Jitter = Literal["full", "equal", "none"]


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How to resend after a transient failure.

    Args:
        max_retries: resends after the first attempt (2 means at most 3 attempts).
        base: seconds before the first resend, before jitter.
        cap: no backoff wait is longer than this, whatever the attempt.
        jitter: ``full`` (uniform in [0, backoff]), ``equal`` (half fixed, half random), ``none``.
        longest_wait: the longest a server may ask us to wait (``Retry-After``). We never resend
            sooner than the server asked; asked to wait longer than this, we stop and say when
            to come back (:meth:`may_wait`).
    """

    max_retries: int = 2
    base: float = 0.5
    cap: float = 8.0
    jitter: Jitter = "full"
    longest_wait: float = 30.0

    def backoff(self, attempt: int) -> float:
        """The un-jittered wait before resend number ``attempt`` (0-based)."""
        return min(self.cap, self.base * (2 ** attempt))

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before resend ``attempt``; a server's Retry-After is a floor, never cut short."""
        b = self.backoff(attempt)
        if self.jitter == "full":
            d = rng.uniform(0, b)
        elif self.jitter == "equal":
            d = b / 2 + rng.uniform(0, b / 2)
        else:
            d = b
        if retry_after is not None:
            d = max(d, retry_after)
        return d

    def may_wait(self, retry_after: float | None) -> bool:
        """Whether a resend may wait as long as the server asked (no Retry-After: yes)."""
        return retry_after is None or retry_after <= self.longest_wait

    def schedule(self, rng: random.Random, retry_after: float | None = None) -> list[float]:
        """Every wait of one failing call, for plotting without waiting."""
        return [self.delay(i, rng, retry_after) for i in range(self.max_retries)]


def herd(policy: RetryPolicy, *, clients: int = 200, rng: random.Random | None = None,
         capacity: int = 50, horizon: float | None = None, bucket: float = 0.25) -> dict:
    """Simulate ``clients`` that all fail at t=0 and retry under ``policy``.

    A server serves at most ``capacity`` requests per bucket; the rest fail again
    and retry. Returns per-bucket arrival counts and how many clients were served,
    which shows why jitter exists: without it every retry wave lands together.

    ``horizon`` (seconds) defaults to the whole schedule: the latest moment a last resend can come
    (every backoff in full, which no jitter exceeds), so every client ends ``served`` or ``gave_up``
    (out of attempts). A shorter horizon counts the clients whose next attempt falls after it as
    ``unfinished``, never as given up. Always ``served + gave_up + unfinished == clients``.

    ``arrivals`` counts every request of a bucket, first tries and resends alike; ``first`` and
    ``resends`` split it. The first bucket holds all the first tries (every client fails at t=0) and,
    with jitter, the resends drawn so short that they land in the same bucket.
    """
    rng = rng or random.Random(0)
    schedule = sum(policy.backoff(i) for i in range(policy.max_retries))
    n_buckets = int((schedule if horizon is None else horizon) / bucket) + (horizon is None)
    first = [0] * n_buckets
    resends = [0] * n_buckets
    used = [0] * n_buckets
    queue = [(0.0, 0, c) for c in range(clients)]  # (time, attempt, client)
    heapq.heapify(queue)
    served = gave_up = unfinished = 0
    while queue:
        t, attempt, c = heapq.heappop(queue)
        b = int(t / bucket)
        if b >= n_buckets:
            unfinished += 1  # still trying when the window closes: not a client that gave up
            continue
        (resends if attempt else first)[b] += 1
        if used[b] < capacity:
            used[b] += 1
            served += 1
        elif attempt >= policy.max_retries:
            gave_up += 1
        else:
            heapq.heappush(queue, (t + policy.delay(attempt, rng), attempt + 1, c))
    arrivals = [f + r for f, r in zip(first, resends, strict=True)]
    return {"arrivals": arrivals, "first": first, "resends": resends, "bucket": bucket,
            "horizon": n_buckets * bucket, "clients": clients, "served": served, "gave_up": gave_up,
            "unfinished": unfinished, "peak": max(arrivals) if arrivals else 0}
