"""A read's rate and quota on Redis, counted from the event loop (agentlab/redis_store.py LuaScripts.call_async):
no thread for the round trip, the same verdicts, and a frozen server holds the call, never the loop."""
import asyncio
import os
import shutil
import signal
import sys
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
        # (a limit under BATCH_FROM a minute: each read asks Redis, none is admitted from a batch taken before)
        site, key, record = _site(tmp_path, f"redis://127.0.0.1:{port}/0?prefix=frozen:", per_minute=500)

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


# --- the loop's own connection (redis_pipe.Pipe): shared, in order, and never left half-read ------------------
_CLIENTS: list = []  # every client a test here made, closed after it (a socket left to the collector warns)


@pytest.fixture(autouse=True)
def _close_clients():
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def _scripts(url):
    from agentlab.redis_store import LuaScripts, RedisStore
    store = RedisStore.from_url(url)
    _CLIENTS.append(store.client)
    return store.client, LuaScripts(store.client, {"echo": "return ARGV[1]", "count": ECHO_COUNT})


# the call's own token back, with how many calls came before it on this key
ECHO_COUNT = "return {ARGV[1], redis.call('INCR', KEYS[1])}"


def _redis_with_password(tmp_path, password: str, *extra: str):
    """(process, port) of a redis-server of this test's own that requires ``password``."""
    exe = os.environ.get("AGENTLAB_REDIS_SERVER") or shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    return start_redis(exe, port, tmp_path, durable=False, password=password, extra=extra), port


def _handoffs(monkeypatch) -> list:
    """The calls handed to a worker thread from now on (the thread way)."""
    handed: list = []
    real = timeouts_module.wait_in_worker
    monkeypatch.setattr(timeouts_module, "wait_in_worker",
                        lambda fn, limit, *, write: handed.append(fn) or real(fn, limit, write=write))
    return handed


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
    _, lua = _scripts(redis_server)

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
    import redis
    proc, port = _redis_with_password(tmp_path, "s3cret-pw", "--unixsocket", str(tmp_path / "r.sock"),
                                      "--unixsocketperm", "700")
    try:
        admin = redis.Redis(port=port, password="s3cret-pw", db=3, decode_responses=True)
        _CLIENTS.append(admin)
        _, lua = _scripts(f"redis://:s3cret-pw@127.0.0.1:{port}/3")
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
    gc.collect()  # what other tests left to the collector goes first: whatever is reported below is this block's
    before = len(os.listdir("/proc/self/fd"))
    # a warning raised while an object is collected cannot reach the test as an exception: it goes to this hook
    unraisable: list = []
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        mp.setattr(sys, "unraisablehook", unraisable.append)
        warnings.simplefilter("error")
        for _ in range(5):  # asyncio.run in five notebook cells: five loops, each ended with its connection open
            assert asyncio.run(lua.call_async("echo", [], ["x"])) == "x"
        gc.collect()
    assert not unraisable, [repr(u.exc_value) for u in unraisable]
    assert len(os.listdir("/proc/self/fd")) - before <= 1  # at most the last loop's, until it is collected
    lua.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_closing_fails_the_calls_still_waiting_from_this_thread_or_another(redis_server):
    """A call on the wire when its scripts are closed fails at once, never waits on; closed from another thread,
    the loop that owns the connection closes it."""
    import threading

    import redis
    _, lua = _scripts(redis_server)

    async def closed_under_it():
        assert await lua.call_async("echo", [], ["warm"]) == "warm"
        call = asyncio.ensure_future(lua.call_async("echo", [], ["in flight"]))
        await asyncio.sleep(0)
        lua.close()
        return await asyncio.wait_for(asyncio.gather(call, return_exceptions=True), 10)

    (out,) = asyncio.run(closed_under_it())
    assert isinstance(out, redis.ConnectionError)  # its connection gone (and the call not sent again)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        assert asyncio.run_coroutine_threadsafe(lua.call_async("echo", [], ["there"]), loop).result(10) == "there"
        pipe = lua._pipes[loop]
        lua.close()  # from this thread: the loop's own thread closes it
        deadline = time.monotonic() + 10
        while not pipe.closed:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert asyncio.run_coroutine_threadsafe(lua.call_async("echo", [], ["again"]), loop).result(10) == "again"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        lua.close()
        loop.close()


def test_scripts_dropped_on_a_live_loop_take_their_connections_with_them(redis_server):
    """A kernel or a server that makes stores and drops them: the loop's reader must not keep each one's
    connection open forever."""
    import gc
    client, _ = _scripts(redis_server)

    async def make_and_drop(n):
        for _ in range(n):
            _, lua = _scripts(redis_server)
            assert await lua.call_async("echo", [], ["x"]) == "x"
            del lua
        # one collection for all of them: a full one costs a second or more in a worker holding the whole suite
        gc.collect()
        for _ in range(3):
            await asyncio.sleep(0)  # the closes it asked for

    async def twice():
        await make_and_drop(2)
        fds, clients = _fds(), len(client.client_list())
        await make_and_drop(40)
        return _fds() - fds, len(client.client_list()) - clients

    more_fds, more_clients = asyncio.run(twice())
    assert more_fds <= 4 and more_clients <= 4, (more_fds, more_clients)


def test_an_undecodable_reply_fails_its_own_call_at_once_and_the_calls_behind_it_get_theirs(redis_server):
    client, lua = _scripts(redis_server)
    lua_bad = type(lua)(client, {"bad": "return '\\255\\254'", "echo": "return ARGV[1]"})
    with pytest.raises(UnicodeDecodeError):
        lua_bad("bad", [], [])  # redis-py's own way says the same

    async def bad_then_good():
        assert await lua_bad.call_async("echo", [], ["warm"]) == "warm"
        bad = asyncio.ensure_future(lua_bad.call_async("bad", [], []))
        good = [asyncio.ensure_future(lua_bad.call_async("echo", [], [f"after-{i}"])) for i in range(3)]
        return await asyncio.gather(bad, *good, return_exceptions=True)

    bad, *good = asyncio.run(bad_then_good())
    # its own error, not the stalled connection's timeout, and the calls behind it answered
    assert isinstance(bad, UnicodeDecodeError) and good == ["after-0", "after-1", "after-2"]
    lua_bad.close()
    lua.close()


def test_a_long_reply_in_many_reads_is_read_whole_and_each_byte_parsed_once(redis_server, monkeypatch):
    """A long reply comes in many reads: it is parsed as it comes, each item once. Parsed again from its start at
    each 64 KB read, 200,000 items (about 5 MB) took longer than the socket timeout and the call failed."""
    from agentlab import redis_pipe
    client, lua = _scripts(redis_server)
    big = type(lua)(client, {"big": "local t = {} for i = 1, tonumber(ARGV[1]) do t[i] = 'item-' .. i end "
                                    "t[7] = {1, false, 'x', {}} return t"})
    got = asyncio.run(big.call_async("big", [], [20_000]))
    assert len(got) == 20_000 and got[0] == "item-1" and got[-1] == "item-20000" and got[6] == [1, None, "x", []]
    assert got == big("big", [], [20_000])  # as redis-py's own way reads it
    big.close()
    lua.close()

    texts = []
    real = redis_pipe.Replies._text
    monkeypatch.setattr(redis_pipe.Replies, "_text", lambda self, raw: texts.append(raw) or real(self, raw))
    wire = b"*3\r\n" + b"*20000\r\n" + b"".join(b"$6\r\n%06d\r\n" % i for i in range(20_000)) + b":7\r\n$-1\r\n"
    replies, reader = [], redis_pipe.Replies("utf-8", "strict")
    for at in range(0, len(wire), 4096):  # in 4 KB reads, most of them ending inside an item
        replies += reader.feed(wire[at:at + 4096])
    assert replies == [[[f"{i:06d}" for i in range(20_000)], 7, None]] and not reader.partial()
    assert len(texts) == 20_000  # each item decoded once, however many reads it took


def test_every_address_is_tried_and_a_loop_that_cannot_watch_a_descriptor_goes_the_thread_way(redis_server,
                                                                                             monkeypatch):
    import socket
    port = int(redis_server.rsplit(":", 1)[1].split("/")[0])
    _, lua = _scripts(f"redis://localhost:{port}/0")

    async def first_address_refused():
        loop = asyncio.get_running_loop()

        async def two(host, port_, **kw):  # localhost as ::1 then 127.0.0.1, the server on 127.0.0.1 only
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port_)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port_))]

        monkeypatch.setattr(loop, "getaddrinfo", two)
        assert await lua.call_async("echo", [], ["here"]) == "here"
        return lua._pipes.get(loop)

    from agentlab.redis_pipe import Pipe
    assert isinstance(asyncio.run(first_address_refused()), Pipe)  # its own connection, not the thread way

    class NoReaders(asyncio.SelectorEventLoop):
        def add_reader(self, *args):
            raise NotImplementedError

    loop = NoReaders()
    try:
        def calls(n: int) -> int:
            got = [loop.run_until_complete(lua.call_async("echo", [], [f"n{i}"])) for i in range(n)]
            assert got == [f"n{i}" for i in range(n)]
            return _fds()

        warm = calls(10)  # the worker threads and redis-py's connection made
        # nothing leaked per call (it was one descriptor each); a worker thread's pipe or two may still be made
        assert calls(30) - warm <= 8
    finally:
        loop.close()
        lua.close()


def test_a_server_that_does_not_answer_the_password_times_out_once_and_never_also_the_thread_way(tmp_path, monkeypatch):
    import redis
    proc, port = _redis_with_password(tmp_path, "pw")
    try:
        _, lua = _scripts(f"redis://:pw@127.0.0.1:{port}/0")
        handed = _handoffs(monkeypatch)
        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(redis.TimeoutError):
                asyncio.run(lua.call_async("echo", [], ["x"]))
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        assert handed == []  # its timeout once (3 s), not again the thread way's
        lua.close()
    finally:
        stop_group(proc, 10)


def test_a_forked_child_never_closes_its_parents_descriptor_which_may_be_its_own_file_by_then(redis_server, tmp_path):
    import gc
    _, lua = _scripts(redis_server)
    loop = asyncio.new_event_loop()
    assert loop.run_until_complete(lua.call_async("echo", [], ["parent"])) == "parent"
    fd = lua._pipes[loop].fd
    loop.close()  # ended, still referenced: its pipe is still in the table
    pid = os.fork()
    if pid == 0:  # the child: the parent's descriptor number becomes one of its own files
        code = 1
        try:
            mine = os.open(tmp_path / "child.log", os.O_WRONLY | os.O_CREAT)
            os.dup2(mine, fd)
            assert asyncio.run(lua.call_async("echo", [], ["child"])) == "child"
            gc.collect()
            os.write(fd, b"still mine\n")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child.log").read_text() == "still mine\n"
    lua.close()


def test_a_call_cut_off_by_closing_is_never_sent_again(redis_server):
    """Closed while its script was on the wire: the server may have run it, so the call fails instead of being sent
    again the thread way (a quota would have counted one request twice)."""
    import uuid

    import redis
    client, lua = _scripts(redis_server)
    key = f"once:{uuid.uuid4().hex}"

    async def closed_under_it():
        await lua.call_async("echo", [], ["warm"])
        call = asyncio.ensure_future(lua.call_async("count", [key], ["x"]))
        await asyncio.sleep(0)  # written
        lua.close()
        with pytest.raises(redis.ConnectionError):
            await call

    asyncio.run(closed_under_it())
    time.sleep(0.2)
    assert client.get(key) in (None, "1")  # run once at most, never twice


def test_a_forked_child_closing_its_scripts_leaves_the_parents_connection_working(redis_server):
    _, lua = _scripts(redis_server)
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(lua.call_async("echo", [], ["before"])) == "before"
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                lua.close()  # the child's close: the descriptor and the loop's registration are the parent's
                code = 0
            finally:
                os._exit(code)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert loop.run_until_complete(asyncio.wait_for(lua.call_async("echo", [], ["after"]), 10)) == "after"
    finally:
        lua.close()
        loop.close()


def test_calls_waiting_for_a_connection_that_never_answers_time_out_once_each(tmp_path, monkeypatch):
    """Three reads arrive while the loop's connection is being opened on a server that does not answer its password:
    each hears one socket timeout, none a second one the thread way."""
    import redis
    proc, port = _redis_with_password(tmp_path, "pw")
    try:
        _, lua = _scripts(f"redis://:pw@127.0.0.1:{port}/0")
        handed = _handoffs(monkeypatch)

        async def three():
            return await asyncio.gather(*(lua.call_async("echo", [], [str(i)]) for i in range(3)),
                                        return_exceptions=True)

        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            got = asyncio.run(three())
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        assert all(isinstance(g, redis.TimeoutError) for g in got), got
        assert handed == []  # none waited again the thread way
        lua.close()
    finally:
        stop_group(proc, 10)


def test_closing_from_another_thread_while_the_loop_stops_still_closes(redis_server):
    """The owning loop stops right after the close was queued to it (its last turn runs only what was queued before
    the stop): the close is not lost, the connection is closed."""
    import threading
    _, lua = _scripts(redis_server)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        assert asyncio.run_coroutine_threadsafe(lua.call_async("echo", [], ["x"]), loop).result(10) == "x"
        pipe = lua._pipes[loop]
        loop.call_soon_threadsafe(time.sleep, 0.3)  # busy, then told to stop before the close is queued
        loop.call_soon_threadsafe(loop.stop)
        time.sleep(0.05)
        lua.close()
        thread.join(10)
        assert pipe.closed
    finally:
        if thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        loop.close()


def test_a_loop_closed_with_a_call_still_waiting_on_its_connection_is_closed_without_an_error():
    """A loop that ended while a reply was still coming (a give-back written at its shutdown) left a waiting future
    on the connection: closing it later set the future's exception on a closed loop and raised 'Event loop is
    closed' out of the store's close()."""
    import socket

    from agentlab.redis_pipe import Pipe
    ours, server = socket.socketpair()
    loop = asyncio.new_event_loop()
    try:
        pipe = Pipe(loop, os.dup(ours.fileno()), 3.0, "utf-8", "strict")
        waiting = pipe.send(b"*1\r\n$4\r\nPING\r\n")  # the server never answers
    finally:
        loop.close()
    pipe.close()  # no RuntimeError
    assert pipe.closed and not waiting.done()
    ours.close()
    server.close()
