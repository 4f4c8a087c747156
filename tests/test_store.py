"""The Store's behaviour, the same on every store: in memory, SQLite and Redis (a real server, see conftest)."""
import importlib.util
import multiprocessing as mp
import sqlite3
import time
from typing import ClassVar

import pytest
from conftest import skip_or_fail, stop_group

from agentlab.store import Approval, MemoryStore, SQLiteStore, open_store


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "redis":
        s = open_store(request.getfixturevalue("redis_url"))
        yield s
        s.close()
    else:
        yield MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")


def test_claim_replay_conflict_in_flight(store):
    assert store.claim("k", "a").status == "new"
    assert store.claim("k", "a").status == "in_flight"
    assert store.claim("k", "b").status == "conflict"
    store.finish("k", '{"refund_id": "R1"}')
    c = store.claim("k", "a")
    assert c.status == "replay" and c.result == '{"refund_id": "R1"}'
    assert store.claim("k", "b").status == "conflict"


def test_release_lets_a_failed_call_be_claimed_again(store):
    store.claim("k", "a")
    store.release("k")
    assert store.claim("k", "a").status == "new"
    store.finish("k", "1")
    store.release("k")  # a finished record is never released
    assert store.claim("k", "a").status == "replay"


@pytest.fixture(params=["memory", "sqlite", "redis"])
def timed_store(request, tmp_path):
    """A store and a way to let its leases run out: an injected clock where the store reads ours, and real time on
    Redis, whose leases are timed by the server's own clock (``PX``) on purpose."""
    if request.param == "redis":
        s = open_store(request.getfixturevalue("redis_url"))

        def wait_out(lease: float) -> None:
            deadline = time.monotonic() + lease + 10  # a generous bound: this waits for an event, it times nothing
            while s.unknown() == [] and time.monotonic() < deadline:
                time.sleep(0.05)
        yield s, 1.0, wait_out
        s.close()
    else:
        now = [1000.0]

        def advance(lease: float) -> None:
            now[0] += lease + 0.01
        clock = lambda: now[0]  # noqa: E731
        yield (MemoryStore(clock=clock) if request.param == "memory" else SQLiteStore(tmp_path / "s.db", clock=clock)
               ), 1.0, advance


def test_a_lease_that_runs_out_makes_the_outcome_unknown_for_good(timed_store):
    store, lease, run_out = timed_store
    assert store.claim("k", "a", lease=lease).status == "new"
    assert store.claim("k", "a").status == "in_flight" and store.unknown() == []
    assert store.resolve("k", None) is False  # still within its lease: it is running, not a person's to settle
    run_out(lease)
    assert store.unknown() == ["k"]
    assert store.claim("k", "a").status == "unknown"
    assert store.claim("k", "a").status == "unknown"  # never "new" again by itself
    assert store.claim("k", "b").status == "conflict"
    store.release("k")  # an unknown outcome is not released by a runner
    assert store.claim("k", "a").status == "unknown"


def test_mark_unknown_then_resolve_by_a_person(store):
    store.claim("done", "a")
    store.mark_unknown("done")
    store.claim("gone", "a")
    store.mark_unknown("gone")
    assert sorted(store.unknown()) == ["done", "gone"] and store.result("done") is None
    assert store.resolve("done", '{"refund_id": "R9"}') is True  # the backend shows it happened
    assert store.resolve("gone", None) is True  # the backend shows it did not: free the key
    assert store.resolve("done", None) is False  # settled once
    assert store.unknown() == [] and store.result("done") == '{"refund_id": "R9"}'
    assert store.claim("done", "a").status == "replay" and store.claim("gone", "a").status == "new"
    store.finish("gone", "2")
    store.mark_unknown("gone")  # a finished call is never made unknown
    assert store.claim("gone", "a").result == "2"


def test_approvals_are_decided_once(store):
    a = store.add_approval(Approval("x", "s", "create_refund", "{}", "big"))
    assert a.state == "pending" and store.add_approval(Approval("x", "s", "t", "{}", "other")).reason == "big"
    assert store.decide("x", "approved", "ok").state == "approved"
    assert store.decide("x", "rejected", "no") is None
    assert [p.id for p in store.approvals("s")] == ["x"] and store.approvals("other") == []


def test_an_approval_records_its_result_failure_and_telling(store):
    store.add_approval(Approval("y", "s2", "create_refund", '{"order_id": "A1"}', "big", created=5.0))
    assert store.get_approval("nope") is None
    store.decide("y", "approved", "fine")
    store.set_approval_result("y", None, error="timed out")
    a = store.get_approval("y")
    assert (a.state, a.error, a.told, a.open, a.created) == ("failed", "timed out", False, True, 5.0)
    assert store.decide("y", "approved", "again").error is None  # a failed run may be approved again
    store.set_approval_result("y", '{"refund_id": "R1"}')
    store.mark_told("y")
    a = store.get_approval("y")
    assert (a.state, a.result, a.told, a.decision) == ("approved", '{"refund_id": "R1"}', True, "again")
    assert [x.id for x in store.approvals()] == ["y"]


def test_sqlite_reads_a_claim_and_a_sessions_held_calls_through_an_index(tmp_path):
    """Every run asks for its session's held calls (the decisions to tell its model): that was a scan of
    every held call ever recorded. A claim's table is its key's B-tree alone (one page written per commit)."""
    store = SQLiteStore(tmp_path / "s.db")
    plan = " ".join(str(row[-1]) for row in store._db.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM held_calls WHERE session_id = ?", ("s1",)))
    assert "USING INDEX" in plan, plan
    table = store._db.execute("SELECT sql FROM sqlite_master WHERE name = 'claims'").fetchone()[0]
    assert "WITHOUT ROWID" in table
    store.close()


def test_open_store_reads_a_url(tmp_path):
    assert isinstance(open_store("memory:"), MemoryStore)
    assert open_store(f"sqlite://{tmp_path}/a.db").path == f"{tmp_path}/a.db"
    assert open_store(str(tmp_path / "b.db")).path == str(tmp_path / "b.db")  # a bare path, as AGENTLAB_STORE was
    assert open_store("sqlite://").path == ":memory:"
    with pytest.raises(ValueError, match="redis://"):
        open_store("postgres://x")


def _racer(path, keys, barrier):
    store = SQLiteStore(path)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    barrier.wait()
    for key in keys:
        if store.claim(key, "same").status == "new":
            db.execute("INSERT INTO effects(key) VALUES (?)", (key,))  # the refund
            store.finish(key, "{}")


def test_processes_racing_on_the_same_keys_refund_once(tmp_path):
    path = str(tmp_path / "race.db")
    SQLiteStore(path).close()
    sqlite3.connect(path).execute("CREATE TABLE effects(key TEXT)").connection.commit()
    keys = [f"create_refund:A{1000 + i}" for i in range(40)]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_racer, args=(path, keys if i % 2 else keys[::-1], barrier)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = sqlite3.connect(path).execute("SELECT key, COUNT(*) FROM effects GROUP BY key").fetchall()
    assert len(rows) == len(keys) and all(n == 1 for _, n in rows)


def test_default_store_follows_agentlab_store(monkeypatch, tmp_path, redis_url):
    from agentlab.loop import default_store
    from agentlab.redis_store import RedisStore
    monkeypatch.delenv("AGENTLAB_STORE", raising=False)
    assert isinstance(default_store(), MemoryStore)  # a run's own, made for nothing
    monkeypatch.setenv("AGENTLAB_STORE", f"sqlite://{tmp_path}/c.db")
    assert default_store().path == f"{tmp_path}/c.db"
    monkeypatch.setenv("AGENTLAB_STORE", redis_url)
    store = default_store()
    assert isinstance(store, RedisStore) and store.prefix == redis_url.split("prefix=")[1]
    assert store.claim("k", "a").status == "new" and open_store(redis_url).claim("k", "a").status == "in_flight"


class _Contended(sqlite3.Connection):
    """A connection that hears "database is locked" at once, as a replica setting up a fresh file does
    when another sets it up at the same moment (SQLite does not wait in that case)."""

    refusals: ClassVar[dict[str, int]] = {}

    def _refuse(self, sql: str) -> None:
        for start, left in self.refusals.items():
            if sql.lstrip().startswith(start) and left:
                self.refusals[start] = left - 1
                raise sqlite3.OperationalError("database is locked")

    def execute(self, sql, *args):
        self._refuse(sql)
        return super().execute(sql, *args)

    def executescript(self, sql):
        self._refuse(sql)
        return super().executescript(sql)


def test_opening_a_fresh_file_retries_what_a_concurrent_opener_locked(tmp_path, monkeypatch):
    """The many-process version is tests/test_site_replicas.py; this one is deterministic."""
    import agentlab.store
    from agentlab.site.keys import KeyStore
    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real(*a, factory=_Contended, **k))
    monkeypatch.setattr(agentlab.store, "_sleep", lambda s: None, raising=False)
    _Contended.refusals = {"PRAGMA journal_mode": 3, "CREATE TABLE": 2}
    store = SQLiteStore(tmp_path / "fresh.db")
    assert store.claim("k", "a").status == "new" and store._q("PRAGMA journal_mode")[0][0] == "wal"
    assert _Contended.refusals == {"PRAGMA journal_mode": 0, "CREATE TABLE": 0}
    _Contended.refusals = {"CREATE TABLE": 2}
    keys = KeyStore(tmp_path / "keys.db")
    assert keys.check(keys.create("k")[0]) is not None
    _Contended.refusals = {"PRAGMA journal_mode": 1}
    with pytest.raises(sqlite3.OperationalError):  # past the timeout, the error is told, not hidden
        agentlab.store.connect_sqlite(tmp_path / "other.db", wal=True, timeout=0)


def test_an_unrelated_sqlite_error_is_not_retried(tmp_path):
    (tmp_path / "not.db").write_text("this is not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        SQLiteStore(tmp_path / "not.db")


# --- result_json never raises, whatever a tool returns ---------------------------------------------
class _BrokenStr:
    def __str__(self):
        raise RuntimeError("no")


class _StrNotStr:
    def __str__(self):
        return 42  # type: ignore[return-value]


class _BadItems(dict):
    def items(self):
        raise RuntimeError("no items")

    def __repr__(self):
        raise RuntimeError("no repr")


def _cycles():
    d: dict = {"a": 1}
    d["self"] = d
    lst: list = [1]
    lst.append(lst)
    twice: dict = {}
    twice["x"], twice["y"] = twice, [twice, twice]  # a cycle reached twice at each level
    return [d, lst, twice]


RESULTS = [
    10 ** 5000, -(10 ** 5000), {"n": 10 ** 5000}, {10 ** 5000: "key"}, [1, 2, 10 ** 6000],
    float("nan"), float("inf"), {"x": float("-inf")}, "half \ud800 an emoji", {"\udfff": "key"},
    {(1, 2): "tuple key"}, {1, 2}, b"bytes", _BrokenStr(), [_BrokenStr()], _StrNotStr(), {"o": _StrNotStr()},
    _BadItems(a=1), [_BadItems(a=1)], object(), {"deep": _cycles()}, *_cycles(), None, True, 3.5, "ok",
]


@pytest.mark.parametrize("value", RESULTS, ids=range(len(RESULTS)))
def test_result_json_never_raises(value):
    import json

    from agentlab.store import result_json
    text = result_json(value)
    json.loads(text)  # valid JSON
    text.encode("utf-8")  # and storable anywhere


def test_result_json_says_what_a_huge_integer_was():
    from agentlab.store import result_json
    assert "5001 digits" in result_json({"n": 10 ** 5000})


def test_agentlab_store_prefix_keeps_two_users_of_one_redis_apart(monkeypatch, redis_server):
    """The workshop hub gives every participant the same Redis and a prefix of their own (AGENTLAB_STORE_PREFIX):
    a claim one makes is never seen by the other, and each sees its own."""
    import uuid

    from agentlab.calls import default_store
    monkeypatch.setenv("AGENTLAB_STORE", redis_server)
    room = uuid.uuid4().hex[:8]
    stores = {}
    for who in ("ana", "bo"):
        monkeypatch.setenv("AGENTLAB_STORE_PREFIX", f"agentlab:u:{room}{who}:")
        stores[who] = default_store()
    assert stores["ana"].claim("refund-1", "f").status == "new"
    assert stores["bo"].claim("refund-1", "f").status == "new"  # bo's own, not ana's in flight
    assert stores["ana"].claim("refund-1", "f").status == "in_flight"
    assert stores["ana"].prefix == f"agentlab:u:{room}ana:"


def test_a_store_opens_a_redis_on_a_unix_socket_with_and_without_a_password(tmp_path):
    """The hub's stores are Redis on Unix sockets (``unix:///path?db=0``, the room's with ``default:pw@``); the URL
    was rebuilt by urlunsplit, which dropped the empty host, and redis refused it."""
    import shutil
    import subprocess
    import time
    exe = shutil.which("redis-server")
    if exe is None or importlib.util.find_spec("redis") is None:
        skip_or_fail("redis-server and the redis client are needed")
    from agentlab.hub.services import own_redis_command
    folder = tmp_path / "r"
    folder.mkdir()
    proc = subprocess.Popen([exe, *own_redis_command(folder)[1:], "--requirepass", "pw"], cwd=folder,
                            start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (folder / "redis.sock").exists():
            assert time.monotonic() < deadline, "redis did not start"
            time.sleep(0.05)
        store = open_store(f"unix://default:pw@{folder / 'redis.sock'}?db=0&prefix=room:")
        assert store.prefix == "room:" and store.claim("k", "a").status == "new"
        again = open_store(f"unix://default:pw@{folder / 'redis.sock'}?db=0", prefix="room:")
        assert again.claim("k", "a").status == "in_flight"
    finally:
        stop_group(proc, 10)


def test_a_sessions_held_calls_are_read_without_the_other_sessions(store):
    """Every run reads its session's held calls (the decisions to tell its model). On Redis that read every held
    call of every session on the server, one HMGET each, at each run; in memory it walked them all."""
    for i in range(200):
        store.add_approval(Approval(f"other{i}", f"s{i}", "create_refund", "{}", "big"))
    store.add_approval(Approval("mine", "me", "create_refund", "{}", "big"))
    if isinstance(store, MemoryStore):
        store._approvals = _Counted(store._approvals)
    elif not isinstance(store, SQLiteStore):  # Redis: count the server's own reads of held calls
        before = _hmgets(store)
    assert [a.id for a in store.approvals("me")] == ["mine"] and store.approvals("nobody") == []
    if isinstance(store, MemoryStore):
        assert store._approvals.read <= 1, store._approvals.read
    elif not isinstance(store, SQLiteStore):
        assert _hmgets(store) - before <= 1
    assert len(store.approvals()) == 201  # the desk's listing still has them all


class _Counted(dict):
    read = 0

    def __getitem__(self, key):
        self.read += 1
        return super().__getitem__(key)

    def values(self):
        self.read += len(self)
        return super().values()


def _hmgets(store) -> int:
    stats = store.client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k in ("cmdstat_hmget", "cmdstat_hgetall"))


def test_redis_finds_held_calls_an_older_agentlab_keeps_before_and_beside_it(redis_url):
    """An older agentlab listed held calls only in one list of all of them, and may still be running beside this one
    (a rolling upgrade, a rollback): a session's held calls are found whenever that process held them, each once, in
    the order they were held."""
    store = open_store(redis_url)

    def held_the_old_way(i: int, session: str) -> None:
        store.client.hset(f"{store.prefix}approval:a{i}", mapping={"id": f"a{i}", "session_id": session, "tool": "t",
                                                                  "args": "{}", "reason": "big", "state": "pending",
                                                                  "created": "1.0", "told": "0"})
        store.client.rpush(f"{store.prefix}approvals", f"a{i}")
    for i, session in enumerate(["old", "other", "old"]):
        held_the_old_way(i, session)
    assert [a.id for a in store.approvals("old")] == ["a0", "a2"]
    store.add_approval(Approval("a3", "old", "t", "{}", "big"))
    held_the_old_way(4, "old")  # the older process, still running, after this one listed everything
    assert [a.id for a in store.approvals("old")] == ["a0", "a2", "a3", "a4"]
    fresh = open_store(redis_url)  # another process: nothing listed twice
    assert fresh.add_approval(Approval("a5", "other", "t", "{}", "big")).id == "a5"
    assert fresh.add_approval(Approval("a5", "other", "t", "{}", "again")).reason == "big"
    assert [a.id for a in fresh.approvals("other")] == ["a1", "a5"] and len(fresh.approvals()) == 6
    assert [a.id for a in store.approvals("old")] == ["a0", "a2", "a3", "a4"]
    store.close()
    fresh.close()


def test_the_same_held_call_added_twice_is_listed_once(store):
    held = Approval("k1", "s", "create_refund", "{}", "big")
    assert store.add_approval(held) is not None and store.add_approval(held).id == "k1"
    assert [a.id for a in store.approvals("s")] == ["k1"] and [a.id for a in store.approvals()] == ["k1"]
