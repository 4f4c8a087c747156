"""Rate limits per key and skill, quotas per key, on an injected clock (docs/site.md#keys-and-limits).

The rate comes from the skill's metadata (query 60 a minute, write 10, paid its own), so
the model can read the limit it is held to. The rate is a sliding window (the last 60
seconds), the quota a fixed one (this day, hour or minute, aligned to the clock). Either
refusal says when a call would be accepted again: that is the Retry-After.

:class:`Limiter` counts in memory, for one process. :class:`RedisLimiter` keeps the same counts
in Redis, checked and counted by one Lua script, so that several replicas of the site share
one window and one quota (docs/site.md#several-replicas).
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..redis_store import LuaScripts
from .keys import PERIODS, ApiKey

__all__ = ["Admission", "Limiter", "RedisLimiter"]


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
            if len(window) >= per_minute:  # none a minute (a skill switched off): a minute from now
                return Admission(False, "rate", per_minute, "minute", min(60.0, window[0] + 60.0 - now) if window else 60.0)
            if key.quota is not None:
                span = PERIODS[key.period]
                slot = (key.id, int(now // span))
                if self._used.get(slot, 0) >= key.quota:
                    return Admission(False, "quota", key.quota, key.period, (slot[1] + 1) * span - now)
                self._used[slot] = self._used.get(slot, 0) + 1
            window.append(now)
        return Admission(True)


#: a quota's count is written to the server's append-only file once every this many calls (see _ADMIT)
QUOTA_SYNC = 16

# KEYS: the sliding window (a sorted set of call times), the quota's counter for this slot.
# ARGV: now, per minute, quota (-1: none), seconds until the quota's slot ends, the slot's length, QUOTA_SYNC,
# a token the caller drew at random (the call's member in the window: unique without a shared counter to bump).
# What the script writes is kept from the append-only file and the replicas (REPL_NONE): a server run with
# appendfsync always (what the site's claims require) would otherwise fsync the disk before answering each
# read, and the caller wait for it. A crash then forgets the last minute's windows (they end within a minute
# anyway) and at most QUOTA_SYNC - 1 counts of each quota: every QUOTA_SYNC-th count is written there (SET).
# The counter's expiry is set when the slot's first count makes it (a slot's length and a minute from then: past
# the slot's end), not again on each count; the SET carries it to the file. Each command is CPU a read pays: the
# count is taken first and given back when it went past the quota (a refusal's two commands spare every
# admitted call a GET; a quota of 0 refuses before counting, and so writes nothing).
_ADMIT = """
local now = tonumber(ARGV[1])
redis.set_repl(redis.REPL_NONE)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] == nil then
    return {'rate', '60'}
  end
  return {'rate', tostring(tonumber(oldest[2]) + 60 - now)}
end
if tonumber(ARGV[3]) == 0 then
  return {'quota', ARGV[4]}
end
if tonumber(ARGV[3]) > 0 then
  local used = redis.call('INCR', KEYS[2])
  local ttl = math.ceil(tonumber(ARGV[5])) + 60
  if used == 1 then
    redis.call('EXPIRE', KEYS[2], ttl)
  end
  if used > tonumber(ARGV[3]) then
    redis.call('DECR', KEYS[2])
    return {'quota', ARGV[4]}
  end
  if used % tonumber(ARGV[6]) == 0 then
    redis.set_repl(redis.REPL_ALL)
    redis.call('SET', KEYS[2], used, 'EX', ttl)
    redis.set_repl(redis.REPL_NONE)
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[7])
redis.call('EXPIRE', KEYS[1], 120)
return {'ok', '0'}
"""


class RedisLimiter:
    """:class:`Limiter`'s rules with the counts in Redis, shared by every replica.

    The time of a call is the injected clock's (replicas on one machine share it); the check
    and the count are one script, so two replicas can never both take the last place.
    """

    def __init__(self, client: Any, *, prefix: str = "agentlab:", clock: Callable[[], float] = time.time):
        self.clock = clock
        self.client = client
        self.prefix = prefix
        self._lua = LuaScripts(client, {"admit": _ADMIT})

    def __repr__(self) -> str:
        return f"RedisLimiter(prefix={self.prefix!r})"

    def close(self) -> None:
        """Its connections closed (a call waiting on one fails); the next call opens one again."""
        self._lua.close()

    def admit(self, key: ApiKey, skill: str, per_minute: int) -> Admission:
        return self._verdict(key, per_minute, self._lua("admit", *self._call(key, skill, per_minute)))

    async def admit_async(self, key: ApiKey, skill: str, per_minute: int) -> Admission:
        """:meth:`admit` awaited on the running event loop (the script's round trip holds no thread)."""
        return self._verdict(key, per_minute, await self._lua.call_async("admit", *self._call(key, skill, per_minute)))

    def _call(self, key: ApiKey, skill: str, per_minute: int) -> tuple[list[str], list[Any]]:
        now = self.clock()
        span = PERIODS[key.period]
        slot = int(now // span)
        keys = [f"{self.prefix}rate:{key.id}:{skill}", f"{self.prefix}quota:{key.id}:{slot}"]
        args = [repr(now), per_minute, -1 if key.quota is None else key.quota, repr((slot + 1) * span - now), span,
                QUOTA_SYNC, os.urandom(8).hex()]
        return keys, args

    @staticmethod
    def _verdict(key: ApiKey, per_minute: int, reply: Any) -> Admission:
        kind, wait = reply
        if kind == "rate":  # at most the window: replicas read their clocks a little apart, and the oldest place
            # taken could be a moment "later" than this call's now (a Retry-After of 61 s on a 60 s window)
            return Admission(False, "rate", per_minute, "minute", min(60.0, float(wait)))
        if kind == "quota":
            return Admission(False, "quota", key.quota or 0, key.period, float(wait))
        return Admission(True)
