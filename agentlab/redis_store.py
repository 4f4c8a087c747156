"""The Store on Redis: idempotency claims and held calls that several processes, or machines, share.

A claim is two Redis keys: the record (a hash: fingerprint, state, result) and its lease,
taken with ``SET lease NX PX``. The record outlives the lease on purpose: a lease that runs
out before ``finish`` means the claimant died or hung, so the call's outcome is *unknown*,
never "free to run again". Every method that reads and then writes is one Lua script, which
Redis runs atomically, so two processes claiming at once still run the action once.

Leases are timed by the Redis server's own clock (``PX``), the one clock every replica
shares; the injected ``clock`` only stamps when a held call was created. The ``redis``
client is imported when a store is opened, so the core imports without it
(``pip install agentlab[redis]``).
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from .redis_pipe import THREAD_WAY, Pipe, close_pipes, pack_command, plain_settings
from .store_types import Approval, ApprovalState, Claim, _judge, _Record, digest

__all__ = ["LuaScripts", "RedisStore", "answers_ping"]

# KEYS: record, lease, open set. ARGV: fingerprint, lease in ms, the caller's key.
_CLAIM = """
if redis.call('HSETNX', KEYS[1], 'fp', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'state', 'running')
  redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2])
  redis.call('SADD', KEYS[3], ARGV[3])
  return {'new'}
end
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'running' and redis.call('EXISTS', KEYS[2]) == 0 then
  state = 'unknown'
  redis.call('HSET', KEYS[1], 'state', state)
end
return {'old', redis.call('HGET', KEYS[1], 'fp'), state, redis.call('HGET', KEYS[1], 'result')}
"""
# KEYS: record, lease, open set. ARGV: result, the caller's key.
_FINISH = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'done', 'result', ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[2])
return 1
"""
_RELEASE = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
"""
_MARK_UNKNOWN = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'unknown')
redis.call('DEL', KEYS[2])
return 1
"""
# only an unknown outcome is a person's to settle; a call still within its lease is running.
# ARGV: the caller's key, '1' and the result to record it, '0' to forget the claim.
_RESOLVE = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state or state == 'done' or (state == 'running' and redis.call('EXISTS', KEYS[2]) == 1) then return 0 end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'done', 'result', ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
"""
# A session's held calls are also listed under the session (its turns read them at every start: reading every
# session's to keep its own was a round trip per held call on the whole server, at every run). The list of all ids is
# the record; each script first lists under their sessions the ids added to it since the last one did (a counter
# says how far it is listed), so that held calls added by a process that writes only that list (an older agentlab,
# beside this one during a rolling upgrade) are found too, each listed once.
_LISTED = """
local function listed(all, upto, hashes, sessions)
  local from = tonumber(redis.call('GET', upto) or '0')
  local ids = redis.call('LRANGE', all, from, -1)
  for _, id in ipairs(ids) do
    local session = redis.call('HGET', hashes .. id, 'session_id')
    if session then redis.call('RPUSH', sessions .. session, id) end
  end
  if #ids > 0 then redis.call('SET', upto, from + #ids) end
end
"""
# KEYS: the approval's hash, the list of ids, the counter. ARGV: the hashes' prefix, the sessions' lists' prefix, then
# field, value, field, value...
_ADD_APPROVAL = _LISTED + """
local added = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 3))
  redis.call('RPUSH', KEYS[2], redis.call('HGET', KEYS[1], 'id'))
  added = 1
end
listed(KEYS[2], KEYS[3], ARGV[1], ARGV[2])
return added
"""
# KEYS: the session's list, the list of ids, the counter. ARGV: the hashes' prefix, the sessions' lists' prefix, the
# fields. One round trip: each held call's fields, in the order they were held (the hashes are named from the ids
# the list holds, as the approval desk's listing names them)
_SESSION_APPROVALS = _LISTED + """
listed(KEYS[2], KEYS[3], ARGV[1], ARGV[2])
local rows = {}
for i, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  rows[i] = redis.call('HMGET', ARGV[1] .. id, unpack(ARGV, 3))
end
return rows
"""
# the check on the open states makes a decision happen once. ARGV: state, decision
_DECIDE = """
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'pending' and state ~= 'failed' then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'decision', ARGV[2], 'told', '0')
redis.call('HDEL', KEYS[1], 'error')
return 1
"""


class LuaScripts:
    """The Lua scripts of a store, each run in one round trip (``EVALSHA``) on connections of their own.

    redis-py's own path for one command (its pool's bookkeeping and metrics, a ``poll`` to check the
    connection is idle, its general packer) cost more CPU than a claim's whole script on the server;
    here a script's call is packed by hand and sent on a connection kept for these scripts (made with
    the client's own settings: address, password, database, TLS, timeouts). Whatever goes wrong on that
    path is left to redis-py's, but one: a script the server does not know yet (NOSCRIPT: its first call, or
    a server restarted) is sent whole (``EVAL``), which also keeps it there. A connection the server closed
    or that broke is redis-py's to mend (it reconnects, with its own retries). A timeout is
    raised as it is, as redis-py raises it: the server may be frozen, and waiting again would double
    the wait of every caller.
    """

    def __init__(self, client: Any, sources: dict[str, str]):
        self.client = client
        self._scripts = {name: client.register_script(src) for name, src in sources.items()}
        self._sha = {name: script.sha.encode() for name, script in self._scripts.items()}
        self._src = {name: src.encode() for name, src in sources.items()}
        self._idle: list[Any] = []  # connections between calls: each call takes one (threads share the store)
        # each event loop's own connection for call_async (or the future of one being opened)
        self._pipes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._plain = plain_settings(client)
        # a loop's reader keeps its pipe alive: when these scripts are dropped, so are their connections
        weakref.finalize(self, close_pipes, self._pipes)
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def __call__(self, name: str, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import ConnectionError as Broken
        from redis.exceptions import NoScriptError
        conn = self._take()
        try:
            conn.send_packed_command([_pack(b"EVALSHA", self._sha[name], keys, args)])
            try:
                reply = conn.read_response()
            except NoScriptError:  # its first call on this server (or one restarted, flushed): sent whole, kept
                conn.send_packed_command([_pack(b"EVAL", self._src[name], keys, args)])
                reply = conn.read_response()
        except (Broken, OSError):  # closed by the server, or a dead socket: redis-py reconnects (and retries)
            conn.disconnect()
            return self._scripts[name](keys=keys, args=args)
        except BaseException:
            conn.disconnect()  # half a reply may be left on it: never reused
            raise
        self._idle.append(conn)
        return reply

    async def call_async(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """:meth:`__call__` awaited on the running event loop, holding no thread for the round trip.

        A thread hand-off there and back cost a read on Redis more CPU than the script's round trip, and so did
        a reader and a timer registered for each call (about 60 us a call between them). Here each event loop
        has one connection of its own (:class:`Pipe`), registered with the loop once: a call is written to it
        at once and its reply taken from the loop's own reads, in order, so calls from many requests share it.
        What is not the plain case goes the thread way (:meth:`__call__` in a worker thread, awaited): a TLS
        connection, a client with a credential provider, Windows or a loop that cannot watch a descriptor, a
        connection refused, one the server closed (redis-py reconnects, with its own retries). A script the server
        does not know yet is sent whole on the same connection. A server that answers nothing within the client's
        socket timeout fails every call waiting on the connection, as redis-py's ``TimeoutError``, and the
        connection is dropped; so does a server that does not answer the connection, its password or its
        database in time.
        """
        from redis.exceptions import ConnectionError as Broken
        from redis.exceptions import NoScriptError

        from .timeouts import wait_in_worker
        pipe = await self._pipe(asyncio.get_running_loop())
        if pipe is None:
            return await wait_in_worker(lambda: self(name, keys, args), None, write=True)
        try:
            try:
                return await pipe.send(_pack(b"EVALSHA", self._sha[name], keys, args))
            except NoScriptError:  # its first call on this server (or one restarted, flushed): sent whole, kept
                return await pipe.send(_pack(b"EVAL", self._src[name], keys, args))
        except Broken as exc:  # closed by the server, or a dead socket: redis-py reconnects (and retries)
            if getattr(exc, "agentlab_sent", False):  # closed here after it was written: it may have run once already
                raise
            return await wait_in_worker(lambda: self._scripts[name](keys=keys, args=args), None, write=True)

    def send_soon(self, name: str, keys: list[str], args: list[Any],
                  loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any] | None:
        """The script written now on ``loop``'s open connection, without a task: its reply's future (a callback
        reads it), or None when the loop has none open (nothing was sent). For work nobody waits for, which a
        task would leave pending if its loop closed first."""
        got = self._pipes.get(loop) if self._pid == os.getpid() else None
        if not isinstance(got, Pipe) or got.closed:
            return None
        return got.send(_pack(b"EVALSHA", self._sha[name], keys, args))

    async def _pipe(self, loop: asyncio.AbstractEventLoop) -> Pipe | None:
        """This loop's open connection, opened now if it has none (None: this call goes the thread way)."""
        if self._pid != os.getpid():  # a forked child: the parent's connections are not its own
            self._forked()
        got = self._pipes.get(loop)
        if isinstance(got, Pipe) and not got.closed:
            return got
        if got is THREAD_WAY or not self._plain:
            return None
        if isinstance(got, asyncio.Future) and not got.done():
            return await asyncio.shield(got)
        opening: asyncio.Future[Pipe | None] = loop.create_future()  # the calls that come meanwhile wait for it
        self._pipes[loop] = opening
        pipe = None
        try:
            pipe = await Pipe.open(loop, self.client)
        except NotImplementedError:  # a loop that cannot watch a descriptor (Windows' proactor): never on this loop
            self._pipes[loop] = THREAD_WAY
        except Exception as exc:  # no answer in time: the calls waiting for it get the same error
            opening.set_exception(exc)
            opening.exception()  # retrieved here, whether or not another call waits for it
            raise
        finally:
            if not opening.done():
                opening.set_result(pipe)
            if pipe is not None:
                self._pipes[loop] = pipe
            elif self._pipes.get(loop) is opening:
                del self._pipes[loop]
        return pipe

    def _forked(self) -> None:
        """In a forked child: the parent's connections are not its own (left open: the parent uses them; a pipe
        never closes a descriptor another process opened)."""
        with self._lock:
            if self._pid != os.getpid():
                self._idle, self._pid = [], os.getpid()
                self._pipes.clear()

    def _take(self) -> Any:
        if self._pid != os.getpid():
            self._forked()
        try:
            return self._idle.pop()  # atomic: two threads never take one connection
        except IndexError:
            pool = self.client.connection_pool
            return pool.connection_class(**pool.connection_kwargs)  # connects on its first command

    def close(self) -> None:
        """Every connection closed; a call still waiting on one fails (it does not wait on)."""
        if self._pid != os.getpid():
            self._forked()  # a child closes nothing of its parent's
        while self._idle:
            self._idle.pop().disconnect()
        close_pipes(self._pipes)


def answers_ping(socket_path: str | os.PathLike[str], timeout: float) -> bool:
    """Whether a Redis answers ``PING`` with its own ``+PONG`` on the Unix socket ``socket_path`` within ``timeout``
    seconds (any other listener, or none, is False): the readiness check of a Redis of one's own (notebook 16's,
    a hub participant's)."""
    import socket
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(os.fspath(socket_path))
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _pack(command: bytes, script: bytes, keys: list[str], args: list[Any]) -> bytes:
    """``EVALSHA sha numkeys keys... args...`` (or ``EVAL source ...``) in the protocol's own words (strings as
    UTF-8, numbers as redis-py writes them)."""
    parts = [command, script, str(len(keys)).encode()]
    parts += [k.encode() for k in keys]
    parts += [a if isinstance(a, bytes) else (a if isinstance(a, str) else repr(a) if isinstance(a, float)
                                              else str(a)).encode() for a in args]
    return pack_command(*parts)


_FIELDS = ("id", "session_id", "tool", "args", "reason", "state", "decision", "result", "created", "error", "told")


class RedisStore:
    """Claims and held calls in one Redis database, under ``prefix``.

    Args:
        client: a ``redis.Redis`` (``decode_responses=True``); :meth:`from_url` makes one.
        prefix: every key this store writes starts with it, so that the loop, the site and
            tests can share one server without meeting.
    """

    def __init__(self, client: Any, *, prefix: str = "agentlab:", clock: Callable[[], float] = time.time):
        self.client = client
        self.prefix = prefix
        self._clock = clock
        self._lua = LuaScripts(client, {"claim": _CLAIM, "finish": _FINISH, "release": _RELEASE,
                                        "mark_unknown": _MARK_UNKNOWN, "resolve": _RESOLVE,
                                        "add_approval": _ADD_APPROVAL, "decide": _DECIDE,
                                        "session_approvals": _SESSION_APPROVALS})

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "agentlab:", clock: Callable[[], float] = time.time) -> RedisStore:
        """``redis://host:port/db``; the client is imported here, not when agentlab is.

        Every command waits at most 3 s: a frozen server then costs a request 3 s and a 503, instead of
        holding a worker thread (and, with all of them held, every page of the site) for half a minute."""
        import redis
        return cls(redis.Redis.from_url(url, decode_responses=True, socket_timeout=3,
                                        socket_connect_timeout=3, health_check_interval=30),
                   prefix=prefix, clock=clock)

    def durability(self) -> str | None:
        """None when a claim this store records survives the server's crash and restart; else why not.

        A claim that an outage forgets lets a resend run its write a second time, so a site refuses a
        server that does not log every write before answering: ``appendonly yes`` with ``appendfsync
        always`` (``everysec`` may lose the last second, which is exactly when a write is in flight)."""
        info = self.client.info("persistence")
        if not int(info.get("aof_enabled", 0)):
            return "appendonly is off (start redis-server with --appendonly yes --appendfsync always)"
        try:
            fsync = self.client.config_get("appendfsync").get("appendfsync")
        except Exception:  # noqa: BLE001 - CONFIG renamed or refused (a managed server): cannot be shown safe
            return "appendfsync could not be read (CONFIG is refused), so it cannot be shown to be 'always'"
        if fsync != "always":
            return f"appendfsync is {fsync!r}, not 'always': a crash may forget the last writes' claims"
        policy = self.client.config_get("maxmemory-policy").get("maxmemory-policy", "noeviction")
        if policy.startswith("allkeys"):  # volatile-* evicts only keys with a TTL: leases, which fail safe
            return f"maxmemory-policy is {policy!r}: a full server would evict claims (use noeviction)"
        return None

    def __repr__(self) -> str:
        kw = self.client.connection_pool.connection_kwargs
        return f"RedisStore({kw.get('host')}:{kw.get('port')}/{kw.get('db')}, prefix={self.prefix!r})"

    def close(self) -> None:
        self._lua.close()
        self.client.close()

    def _keys(self, key: str) -> list[str]:
        return [f"{self.prefix}claim:{key}", f"{self.prefix}lease:{key}", f"{self.prefix}open"]

    # ---------------------------------------------------------------- claims
    def claim(self, key: str, fingerprint: str, *, lease: float = 60.0) -> Claim:
        ms = max(1, int(lease * 1000))
        # the arguments' digest, never the arguments: every client of the server (and its AOF file) could read them
        got = self._lua("claim", self._keys(key), [digest(fingerprint), ms, key])
        if got[0] == "new":
            return Claim("new")
        _, fp, state, result = (list(got) + [None] * 4)[:4]
        return _judge(_Record(fp, state, result, 0.0), fingerprint)

    def finish(self, key: str, result: str) -> None:
        self._lua("finish", self._keys(key), [result, key])

    def release(self, key: str) -> None:
        self._lua("release", self._keys(key), [key])

    def mark_unknown(self, key: str) -> None:
        self._lua("mark_unknown", self._keys(key), [])

    def result(self, key: str) -> str | None:
        """The recorded result of a finished call under ``key`` (None while it runs or is unknown)."""
        state, result = self.client.hmget(self._keys(key)[0], "state", "result")
        return result if state == "done" else None

    def unknown(self) -> list[str]:
        keys = sorted(self.client.smembers(f"{self.prefix}open"))
        pipe = self.client.pipeline(transaction=False)
        for k in keys:
            rec, lease, _ = self._keys(k)
            pipe.hget(rec, "state")
            pipe.exists(lease)
        got = pipe.execute()
        return [k for k, state, leased in zip(keys, got[::2], got[1::2], strict=True)
                if state == "unknown" or (state == "running" and not leased)]

    def resolve(self, key: str, result: str | None) -> bool:
        args = [key, "0", ""] if result is None else [key, "1", result]
        return self._lua("resolve", self._keys(key), args) == 1

    # ---------------------------------------------------------------- held calls
    def _akey(self, approval_id: str) -> str:
        return f"{self.prefix}approval:{approval_id}"

    def _skey(self, session_id: str) -> str:
        return f"{self.prefix}approvals:session:{session_id}"

    def add_approval(self, approval: Approval) -> Approval:
        a = approval
        values = {"id": a.id, "session_id": a.session_id, "tool": a.tool, "args": a.args, "reason": a.reason,
                  "state": a.state, "decision": a.decision, "created": repr(a.created or self._clock()),
                  "told": "1" if a.told else "0"}
        if a.result is not None:
            values["result"] = a.result
        if a.error is not None:
            values["error"] = a.error
        flat = [x for kv in values.items() for x in kv]
        self._lua("add_approval", [self._akey(a.id), f"{self.prefix}approvals", f"{self.prefix}approvals:listed"],
                  [self._akey(""), self._skey(""), *flat])
        return self.get_approval(a.id) or a  # just added or already there: held calls are never deleted

    def get_approval(self, approval_id: str) -> Approval | None:
        return _approval(self.client.hmget(self._akey(approval_id), *_FIELDS))

    def decide(self, approval_id: str, state: ApprovalState, decision: str) -> Approval | None:
        done = self._lua("decide", [self._akey(approval_id)], [state, decision])
        return self.get_approval(approval_id) if done == 1 else None

    def set_approval_result(self, approval_id: str, result: str | None, *, error: str | None = None,
                            state: ApprovalState | None = None) -> None:
        k = self._akey(approval_id)
        state = state or ("failed" if error is not None else None)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(k, "told", "0")
        pipe.hset(k, "result", result) if result is not None else pipe.hdel(k, "result")
        pipe.hset(k, "error", error) if error is not None else pipe.hdel(k, "error")
        if state is not None:
            pipe.hset(k, "state", state)
        pipe.execute()

    def mark_told(self, approval_id: str) -> None:
        self.client.hset(self._akey(approval_id), "told", "1")

    def approvals(self, session_id: str | None = None) -> list[Approval]:
        if session_id is not None:  # its own list: one round trip, whatever the other sessions hold
            rows = self._lua("session_approvals", [self._skey(session_id), f"{self.prefix}approvals",
                                                   f"{self.prefix}approvals:listed"],
                             [self._akey(""), self._skey(""), *_FIELDS])
            return [a for a in (_approval(list(row)) for row in rows) if a is not None]
        ids = self.client.lrange(f"{self.prefix}approvals", 0, -1)
        pipe = self.client.pipeline(transaction=False)
        for i in ids:
            pipe.hmget(self._akey(i), *_FIELDS)
        found = [_approval(row) for row in pipe.execute()]
        return [a for a in found if a is not None]


def _approval(row: list[Any]) -> Approval | None:
    if row[0] is None:
        return None
    id_, session, tool, args, reason, state, decision, result, created, error, told = row
    return Approval(id_, session, tool, args, reason, state, decision or "", result, float(created or 0.0), error,
                    told == "1")
