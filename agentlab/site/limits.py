"""Rate limits per key and skill, quotas per key, on an injected clock (docs/site.md#keys-and-limits).

The rate comes from the skill's metadata (query 60 a minute, write 10, paid its own), so
the model can read the limit it is held to. The rate is a sliding window (the last 60
seconds), the quota a fixed one (this day, hour or minute, aligned to the clock). Either
refusal says when a call would be accepted again: that is the Retry-After.

:class:`Limiter` counts in memory, for one process. :class:`RedisLimiter` keeps the same counts
in Redis, checked and counted by one Lua script, so that several replicas of the site share
one window and one quota (docs/site.md#several-replicas). For a skill of at least
:data:`BATCH_FROM` calls a minute, a round trip may take a few places at once (a batch) while the
window and the quota are far from full: the next calls of the same key and skill on that replica
are admitted without asking Redis.
"""
from __future__ import annotations

import asyncio
import math
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..redis_store import LuaScripts
from .keys import PERIODS, ApiKey

__all__ = ["BATCH_FROM", "BATCH_PLACES", "BATCH_SECONDS", "Admission", "Limiter", "RedisLimiter"]


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

#: the least calls a minute for which a replica may take places in a window ahead of its calls (a batch)
BATCH_FROM = 600
#: the most places one batch takes: one call in every this many asks Redis, on a busy skill
BATCH_PLACES = 16
#: how long a batch's places may be used: each is kept in the window as if used at the end of it
BATCH_SECONDS = 1.0

# KEYS: the sliding window (a sorted set of call times), the quota's counter for this slot, this call's mark (what a
# batch it takes holds), then for each batch given back its window, the quota counter it was counted in and its mark.
# ARGV: now, per minute, quota (-1: none), seconds until the quota's slot ends, the slot's length, QUOTA_SYNC,
# a token the caller drew at random (the call's member in the window: unique without a shared counter to bump),
# the places wanted (1, or a batch's; 0: only give back), the time a batch's places are kept as
# (now + BATCH_SECONDS), then how many batches are given back and for each its time, token, first and end place.
# What the script writes is kept from the append-only file and the replicas (REPL_NONE): a server run with
# appendfsync always (what the site's claims require) would otherwise fsync the disk before answering each
# read, and the caller wait for it. A crash then forgets the last minute's windows (they end within a minute
# anyway) and at most QUOTA_SYNC - 1 counts of each quota: the count is written there (SET) each time it passes
# a multiple of QUOTA_SYNC. The counter's expiry is set when the slot's first count makes it (a slot's length and a
# minute from then: past the slot's end), not again on each count; the SET carries it to the file. Each command is
# CPU a read pays: the count is taken first and given back when it went past the quota (a refusal's two commands
# spare every admitted call a GET; a quota of 0 refuses before counting, and so writes nothing).
# A batch is granted only while the window, and the quota, stay under three quarters full with it: near a limit
# every call is counted as it comes. Its mark holds the places granted beyond the call's own and whether the quota
# counted them, until the quota's period ends: a give-back takes the mark and returns at most that many, so a
# give-back the server runs twice (a reply lost, a client that sent it again) returns them once, and one for a
# batch that was never granted returns nothing; a call the server runs twice (redis-py's retry after a reply lost)
# finds its own member in the window and is answered from its mark, counted once.
_ADMIT = """
local now = tonumber(ARGV[1])
local quota = tonumber(ARGV[3])
redis.set_repl(redis.REPL_NONE)
local at, k = 10, 3
for _ = 1, tonumber(ARGV[10] or 0) do
  local first, stop = tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4])
  local places = {}
  for i = first, stop - 1 do
    places[#places + 1] = ARGV[at + 1] .. ':' .. ARGV[at + 2] .. ':' .. i
  end
  local mark = redis.call('GET', KEYS[k + 3])
  if mark then
    redis.call('DEL', KEYS[k + 3])
    if #places > 0 then
      redis.call('ZREM', KEYS[k + 1], unpack(places))
    end
    local held, counted = string.match(mark, '^(%d+):(%d)$')
    local back = math.min(tonumber(held), stop - first)
    if counted == '1' and back > 0 and redis.call('EXISTS', KEYS[k + 2]) == 1
        and redis.call('DECRBY', KEYS[k + 2], back) < 0 then
      redis.call('SET', KEYS[k + 2], 0, 'KEEPTTL')
    end
  end
  at, k = at + 4, k + 3
end
local want = tonumber(ARGV[8])
if want == 0 then
  return {'ok', '0'}
end
if redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':' .. ARGV[7]) then
  local mark = redis.call('GET', KEYS[3])
  return {'ok', tostring(1 + (mark and tonumber(string.match(mark, '^(%d+)')) or 0))}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60)
local count = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[2])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] == nil then
    return {'rate', '60'}
  end
  return {'rate', tostring(tonumber(oldest[2]) + 60 - now)}
end
if quota == 0 then
  return {'quota', ARGV[4]}
end
if want > 1 and count + want > limit - math.floor(limit / 4) then
  want = 1
end
if quota > 0 then
  if want > 1 and tonumber(redis.call('GET', KEYS[2]) or '0') + want > quota - math.floor(quota / 4) then
    want = 1
  end
  local used = redis.call('INCRBY', KEYS[2], want)
  local ttl = math.ceil(tonumber(ARGV[5])) + 60
  if used == want then
    redis.call('EXPIRE', KEYS[2], ttl)
  end
  if used > quota then
    redis.call('DECRBY', KEYS[2], want)
    return {'quota', ARGV[4]}
  end
  local sync = tonumber(ARGV[6])
  if math.floor(used / sync) > math.floor((used - want) / sync) then
    redis.set_repl(redis.REPL_ALL)
    redis.call('SET', KEYS[2], used, 'EX', ttl)
    redis.set_repl(redis.REPL_NONE)
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[7])
if want > 1 then
  local later = {}
  for i = 1, want - 1 do
    later[#later + 1] = ARGV[9]
    later[#later + 1] = ARGV[9] .. ':' .. ARGV[7] .. ':' .. i
  end
  redis.call('ZADD', KEYS[1], unpack(later))
  local counted = quota > 0 and '1' or '0'
  redis.call('SET', KEYS[3], (want - 1) .. ':' .. counted, 'EX', math.max(math.ceil(tonumber(ARGV[4])), 0) + 120)
end
redis.call('EXPIRE', KEYS[1], 120)
return {'ok', tostring(want)}
"""


class _Batch:
    """Places a round trip took ahead of the calls of one key and skill on this replica at a limit of ``limit`` a
    minute: the places ``1 .. size - 1`` of its members (``kept:token:i``) in the window ``window``, the next one
    ``next``, usable until ``until`` (the time they are kept as) in the quota's slot ``slot``. ``quota``: the counter
    its grant counted them in, ``mark``: what the grant holds in Redis until they are given back."""

    __slots__ = ("kept", "limit", "mark", "next", "quota", "size", "slot", "token", "until", "window")

    def __init__(self, window: str, quota: str, mark: str, kept: str, token: str, size: int, until: float,
                 slot: int, limit: int):
        self.window, self.quota, self.mark, self.limit = window, quota, mark, limit
        self.kept, self.token, self.size, self.until, self.slot, self.next = kept, token, size, until, slot, 1


_Back = tuple[_Batch, int, int]  # a batch's places from .. to, to be given back


class RedisLimiter:
    """:class:`Limiter`'s rules with the counts in Redis, shared by every replica.

    The time of a call is the injected clock's (replicas on one machine share it); the check
    and the count are one script, so two replicas can never both take the last place.

    From :data:`BATCH_FROM` calls a minute, a round trip may also take up to :data:`BATCH_PLACES` places for the
    next calls of the same key and skill here (a batch), counted in the quota at once and kept in the window as if
    used :data:`BATCH_SECONDS` later, so that a batch never lets a window hold more calls than its limit. A batch is
    granted only while the window and the quota stay under three quarters full; its places not used within
    :data:`BATCH_SECONDS` are given back with this limiter's next round trip, or on the event loop that took them
    a moment later (no task: a write on its open connection), or at :meth:`close`. Each is given back until a
    round trip that carried it answers; Redis returns a batch's places once (the script's marks).
    """

    def __init__(self, client: Any, *, prefix: str = "agentlab:", clock: Callable[[], float] = time.time):
        self.clock = clock
        self.client = client
        self.prefix = prefix
        self._lua = LuaScripts(client, {"admit": _ADMIT})
        self._lock = threading.Lock()
        self._forget_batches()

    def _forget_batches(self) -> None:
        # (a forked child starts with none: its parent's places are its parent's to use and give back)
        self._pid = os.getpid()
        self._batches: dict[tuple[str, str], deque[_Batch]] = {}  # the batches a key and skill may still use
        self._over: deque[_Batch] = deque()  # every batch granted, by the time it is over
        self._back: list[_Back] = []  # places to give back, until a round trip that carried them answers
        # loops whose timer will give places back (held weakly: a loop that ended with its timer set is not kept)
        self._timed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"RedisLimiter(prefix={self.prefix!r})"

    def close(self) -> None:
        """Places not used given back (as far as the server answers), then its connections closed (a call waiting
        on one fails); the next call opens one again."""
        keys, args, back = self._giving_back(float("inf"))
        if back:
            try:
                self._lua("admit", keys, args)
                self._given(back)
            except Exception:  # noqa: BLE001 - closing: the places leave the window within a minute anyway
                pass
        self._lua.close()

    def admit(self, key: ApiKey, skill: str, per_minute: int) -> Admission:
        now = self.clock()
        if per_minute >= BATCH_FROM and self._from_batch(key, skill, per_minute, now):
            return Admission(True)
        keys, args, back = self._call(key, skill, per_minute, now)
        try:
            reply = self._lua("admit", keys, args)
        except BaseException:
            self._unsure(per_minute, now, keys, args)
            raise
        return self._answered(key, skill, per_minute, now, keys, args, back, reply)

    async def admit_async(self, key: ApiKey, skill: str, per_minute: int) -> Admission:
        """:meth:`admit` awaited on the running event loop (the script's round trip holds no thread)."""
        now = self.clock()
        if per_minute >= BATCH_FROM and self._from_batch(key, skill, per_minute, now):
            return Admission(True)
        keys, args, back = self._call(key, skill, per_minute, now)
        try:
            reply = await self._lua.call_async("admit", keys, args)
        except BaseException:
            self._unsure(per_minute, now, keys, args)
            raise
        verdict = self._answered(key, skill, per_minute, now, keys, args, back, reply)
        if self._over:
            self._time_give_back(asyncio.get_running_loop())
        return verdict

    def _from_batch(self, key: ApiKey, skill: str, per_minute: int, now: float) -> bool:
        """Whether a batch of this replica has a place for this call (taken if so)."""
        slot = int(now // PERIODS[key.period])
        with self._lock:
            self._mine()
            batches = self._batches.get((key.id, skill))
            while batches:
                batch = batches[0]
                if now < batch.until and batch.slot == slot and batch.next < batch.size and batch.limit == per_minute:
                    batch.next += 1
                    return True
                batches.popleft()  # used up or over (its unused places are given back from self._over)
                if not batches:
                    del self._batches[key.id, skill]
        return False

    def _mine(self) -> None:
        """In a forked child, none of the parent's batches (called holding the lock)."""
        if self._pid != os.getpid():
            self._forget_batches()

    def _sweep(self, now: float) -> None:
        """Batches over by ``now`` closed (no place of theirs is used any more) and their unused places set to be
        given back (called holding the lock)."""
        over = self._over
        while over and over[0].until <= now:
            batch = over.popleft()
            if batch.next < batch.size:
                self._back.append((batch, batch.next, batch.size))
                batch.next = batch.size

    def _given(self, back: list[_Back]) -> None:
        """``back`` given back: a round trip that carried it answered."""
        if back:
            gone = set(map(id, back))
            with self._lock:
                self._back = [b for b in self._back if id(b) not in gone]

    def _unsure(self, per_minute: int, now: float, keys: list[str], args: list[Any]) -> None:
        """A round trip that failed may have run on the server: a batch it took there is given back (the mark
        says; one it never took returns nothing), and what it was to give back stays to be given back."""
        if args[7] > 1:
            batch = _Batch(keys[0], keys[1], keys[2], args[8], args[6], args[7], now, 0, per_minute)
            with self._lock:
                self._back.append((batch, 1, batch.size))

    def _answered(self, key: ApiKey, skill: str, per_minute: int, now: float, keys: list[str], args: list[Any],
                  back: list[_Back], reply: Any) -> Admission:
        """The verdict of a round trip that answered: what it carried is given back, and a batch it took is kept."""
        self._given(back)
        size = int(reply[1]) if reply[0] == "ok" else 1
        if size > 1:
            batch = _Batch(keys[0], keys[1], keys[2], args[8], args[6], size, now + BATCH_SECONDS,
                           int(now // PERIODS[key.period]), per_minute)
            with self._lock:
                self._batches.setdefault((key.id, skill), deque()).append(batch)
                self._over.append(batch)
        return self._verdict(key, per_minute, reply)

    def _call(self, key: ApiKey, skill: str, per_minute: int, now: float) -> tuple[list[str], list[Any], list[_Back]]:
        span = PERIODS[key.period]
        slot = int(now // span)
        token = os.urandom(8).hex()
        keys = [f"{self.prefix}rate:{key.id}:{skill}", f"{self.prefix}quota:{key.id}:{slot}",
                f"{self.prefix}back:{token}"]
        want = min(BATCH_PLACES, per_minute // 40) if per_minute >= BATCH_FROM else 1
        args = [repr(now), per_minute, -1 if key.quota is None else key.quota, repr((slot + 1) * span - now), span,
                QUOTA_SYNC, token, want, repr(now + BATCH_SECONDS)]
        back: list[_Back] = []
        if self._over or self._back:
            with self._lock:
                self._mine()
                self._sweep(now)
                back = list(self._back)
            self._add_back(keys, args, back)
        return keys, args, back

    @staticmethod
    def _add_back(keys: list[str], args: list[Any], back: list[_Back]) -> None:
        args.append(len(back))
        for batch, first, end in back:
            keys += (batch.window, batch.quota, batch.mark)
            args += (batch.kept, batch.token, first, end)

    def _giving_back(self, now: float) -> tuple[list[str], list[Any], list[_Back]]:
        """A round trip that only gives back the places of batches over by ``now``: its keys and arguments, and
        what it gives back."""
        with self._lock:
            self._mine()
            self._sweep(now)
            back = list(self._back)
        keys = [f"{self.prefix}rate:-", f"{self.prefix}quota:-", f"{self.prefix}back:-"]
        args: list[Any] = [repr(self.clock()), 0, -1, "0", 1, QUOTA_SYNC, "-", 0, "0"]
        self._add_back(keys, args, back)
        return keys, args, back

    def _time_give_back(self, loop: asyncio.AbstractEventLoop) -> None:
        """A timer on ``loop`` that gives back the places of batches over, unless a round trip did it first: written on
        the loop's open connection, its reply read by a callback (no task, which its loop closing would leave
        pending); on a loop with none open, they wait for the next round trip."""
        if loop in self._timed:
            return
        self._timed.add(loop)

        def due() -> None:
            self._timed.discard(loop)
            keys, args, back = self._giving_back(self.clock())
            if back:
                sent = self._lua.send_soon("admit", keys, args, loop)
                if sent is not None:
                    sent.add_done_callback(lambda f: self._given(back) if not f.cancelled() and f.exception() is None
                                           else None)
            if self._over:
                self._time_give_back(loop)
        loop.call_later(BATCH_SECONDS + 0.05, due)

    @staticmethod
    def _verdict(key: ApiKey, per_minute: int, reply: Any) -> Admission:
        kind, wait = reply
        if kind == "rate":  # at most the window: replicas read their clocks a little apart, and the oldest place
            # taken could be a moment "later" than this call's now (a Retry-After of 61 s on a 60 s window)
            return Admission(False, "rate", per_minute, "minute", min(60.0, float(wait)))
        if kind == "quota":
            return Admission(False, "quota", key.quota or 0, key.period, float(wait))
        return Admission(True)
