"""A read's rate and quota on Redis, counted from the event loop (agentlab/redis_store.py LuaScripts.call_async):
no thread for the round trip, the same verdicts, and a frozen server holds the call, never the loop."""
import asyncio
import os
import shutil
import signal
import time

import pytest
from conftest import free_port, start_redis, stop_group

import agentlab.site.execute as execute_module
import agentlab.timeouts as timeouts_module
from agentlab.site.service import SkillSite
from agentlab.site.skills import Skill, SkillMeta

pytest.importorskip("redis")
pytestmark = pytest.mark.timeout(120)


def _site(tmp_path, url, per_minute=3):
    look = Skill(SkillMeta("look_it", "Look", "Use to look a line up.", limits={"per_minute": per_minute}),
                 lambda args, ctx: {"answer": 42})
    site = SkillSite(tmp_path / "data", desks=False, extra=[look], store=url)
    key, record = site.create_key("loop")
    return site, key, record


def _read(site, key, record):
    assert site.runs_on_loop("look_it", b'{"arguments": {}}', record)
    return site.execute_async("look_it", b'{"arguments": {}}', api_key=key, idempotency_key=None, session_id=None,
                              checked=record)


def test_a_read_on_redis_is_counted_from_the_loop_with_no_thread_and_the_same_verdicts(tmp_path, redis_url,
                                                                                       monkeypatch):
    site, key, record = _site(tmp_path, redis_url)
    first = asyncio.run(_read(site, key, record))  # its connection is opened the thread way, once
    handed = []
    for module in (execute_module, timeouts_module):
        real = module.wait_in_worker
        monkeypatch.setattr(module, "wait_in_worker",
                            lambda fn, limit, *, write, real=real: handed.append(fn) or real(fn, limit, write=write))
    then = [asyncio.run(_read(site, key, record)) for _ in range(3)]
    assert [r.status for r in [first, *then]] == [200, 200, 200, 429]  # 3 a minute: the fourth is refused
    assert then[-1].body["error"]["code"] == "RATE_LIMITED" and int(then[-1].headers["Retry-After"]) >= 1
    assert handed == []  # neither the skill nor its limits took a worker thread


def test_a_frozen_redis_holds_the_read_for_its_timeout_and_never_the_loop(tmp_path):
    exe = os.environ.get("AGENTLAB_REDIS_SERVER") or shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    (tmp_path / "redis-files").mkdir()
    proc = start_redis(exe, port, tmp_path / "redis-files")
    try:
        site, key, record = _site(tmp_path, f"redis://127.0.0.1:{port}/0?prefix=frozen:", per_minute=1000)

        async def frozen():
            assert (await _read(site, key, record)).status == 200  # the connection is open
            os.killpg(proc.pid, signal.SIGSTOP)
            ticks = 0
            call = asyncio.ensure_future(_read(site, key, record))
            t0 = time.monotonic()
            while not call.done():
                await asyncio.sleep(0.05)
                ticks += 1
            return await call, ticks, time.monotonic() - t0

        try:
            out, ticks, took = asyncio.run(frozen())
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        assert out.status == 503 and out.body["error"]["code"] == "UNAVAILABLE" and took < 20
        assert ticks >= 10  # the loop went on while the read waited (3 s of socket timeout: ~60 ticks)
        assert asyncio.run(_read(site, key, record)).status == 200  # back, on a new connection
        assert any(line.get("code") == "UNAVAILABLE" for line in site.logs.read("error"))
    finally:
        stop_group(proc, 10)


# --- the loop's own connection (redis_store._Pipe): shared, in order, and never left half-read ------------------
def _scripts(url):
    from agentlab.redis_store import LuaScripts, RedisStore
    store = RedisStore.from_url(url)
    return store.client, LuaScripts(store.client, {"echo": "return ARGV[1]", "count": ECHO_COUNT})


# the call's own token back, with how many calls came before it on this key
ECHO_COUNT = "return {ARGV[1], redis.call('INCR', KEYS[1])}"


def _connections(client) -> int:
    return sum(1 for c in client.client_list() if c.get("cmd") in ("evalsha", "eval"))


def test_concurrent_calls_on_one_loop_share_one_connection_and_each_gets_its_own_reply(redis_server):
    import uuid
    client, lua = _scripts(redis_server)
    key = f"pipe:{uuid.uuid4().hex}"
    before = _connections(client)

    async def many():
        return await asyncio.gather(*(lua.call_async("count", [key], [f"call-{i}"]) for i in range(200)))

    got = asyncio.run(many())
    assert [token for token, _ in got] == [f"call-{i}" for i in range(200)]  # each call its own reply
    assert sorted(n for _, n in got) == list(range(1, 201))  # each ran once
    assert _connections(client) - before <= 1  # one connection for the loop, not one per call
    lua.close()


def test_a_call_whose_caller_gave_up_leaves_the_next_call_its_own_reply(redis_server):
    """A request cancelled while its script was on the wire: its reply still comes, and must not be the next
    call's answer (on a shared connection, a reply taken by the wrong call would tell one caller another's verdict)."""
    client, lua = _scripts(redis_server)

    async def cancelled_then_next():
        assert await lua.call_async("echo", [], ["warm"]) == "warm"  # the connection open, the script known
        first = asyncio.ensure_future(lua.call_async("echo", [], ["first"]))
        await asyncio.sleep(0)  # written to the server
        first.cancel()
        return await lua.call_async("echo", [], ["second"]), await lua.call_async("echo", [], ["third"])

    assert asyncio.run(cancelled_then_next()) == ("second", "third")
    lua.close()


def test_a_connection_the_server_closed_is_replaced_and_the_call_still_answered(redis_server):
    client, lua = _scripts(redis_server)

    async def killed_between():
        assert await lua.call_async("echo", [], ["before"]) == "before"
        killed = client.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1
        return await lua.call_async("echo", [], ["after"]), await lua.call_async("echo", [], ["again"])

    assert asyncio.run(killed_between()) == ("after", "again")
    lua.close()


def test_a_password_a_database_and_a_unix_socket_are_used_and_a_wrong_password_is_redis_pys_own_error(tmp_path):
    """As the workshop room's site connects: a Unix socket, the user ``default`` and a password."""
    import subprocess

    import redis
    exe = os.environ.get("AGENTLAB_REDIS_SERVER") or shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--requirepass", "s3cret-pw", "--unixsocket", str(tmp_path / "r.sock"), "--unixsocketperm", "700",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        admin = redis.Redis(port=port, password="s3cret-pw", db=3, decode_responses=True)
        deadline = time.monotonic() + 15
        while True:
            try:
                admin.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        client, lua = _scripts(f"redis://:s3cret-pw@127.0.0.1:{port}/3")
        assert asyncio.run(lua.call_async("count", ["in-db-3"], ["x"])) == ["x", 1]
        assert admin.get("in-db-3") == "1"  # database 3, as the URL said
        _, unix = _scripts(f"unix://default:s3cret-pw@{tmp_path / 'r.sock'}?db=3")
        assert asyncio.run(unix.call_async("count", ["in-db-3"], ["y"])) == ["y", 2]
        unix.close()
        _, wrong = _scripts(f"redis://:not-the-pw@127.0.0.1:{port}/3")
        with pytest.raises(redis.AuthenticationError):
            asyncio.run(wrong.call_async("echo", [], ["x"]))
        lua.close()
    finally:
        stop_group(proc, 10)


def test_a_loop_that_ended_with_its_connection_open_leaves_no_warning_and_no_open_descriptor(redis_server):
    import gc
    import warnings
    _, lua = _scripts(redis_server)
    before = len(os.listdir("/proc/self/fd"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):  # asyncio.run in five notebook cells: five loops, each ended with its connection open
            assert asyncio.run(lua.call_async("echo", [], ["x"])) == "x"
        gc.collect()
    assert len(os.listdir("/proc/self/fd")) - before <= 1  # at most the last loop's, until it is collected
    lua.close()
