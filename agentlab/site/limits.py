"""Rate limits per key and skill, quotas per key, on an injected clock (docs/site.md#keys-and-limits).

The rate comes from the skill's metadata (query 60 a minute, write 10, paid its own), so
the model can read the limit it is held to. The rate is a sliding window (the last 60
seconds), the quota a fixed one (this day, hour or minute, aligned to the clock). Either
refusal says when a call would be accepted again: that is the Retry-After.

In memory, for one process; several replicas need a shared counter (the next step: Redis).
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .keys import PERIODS, ApiKey

__all__ = ["Admission", "Limiter"]


@dataclass(frozen=True)
class Admission:
    """``ok``, or the limit that refused the call (``rate`` or ``quota``) and the seconds until it would pass."""

    ok: bool
    kind: str = ""
    limit: int = 0
    period: str = ""
    retry_after: float = 0.0

    @property
    def retry_after_header(self) -> str:
        return str(max(1, math.ceil(self.retry_after)))


class Limiter:
    """Counts accepted calls; :meth:`admit` both checks and, when it passes, counts one."""

    def __init__(self, *, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._lock = threading.Lock()
        self._recent: dict[tuple[str, str], deque[float]] = {}
        self._used: dict[tuple[str, int], int] = {}

    def __repr__(self) -> str:
        return f"Limiter({len(self._recent)} windows)"

    def admit(self, key: ApiKey, skill: str, per_minute: int) -> Admission:
        now = self.clock()
        with self._lock:
            window = self._recent.setdefault((key.id, skill), deque())
            while window and window[0] <= now - 60.0:
                window.popleft()
            if len(window) >= per_minute:
                return Admission(False, "rate", per_minute, "minute", window[0] + 60.0 - now)
            if key.quota is not None:
                span = PERIODS[key.period]
                slot = (key.id, int(now // span))
                if self._used.get(slot, 0) >= key.quota:
                    return Admission(False, "quota", key.quota, key.period, (slot[1] + 1) * span - now)
                self._used[slot] = self._used.get(slot, 0) + 1
            window.append(now)
        return Admission(True)
