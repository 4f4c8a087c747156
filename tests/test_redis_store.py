"""The loop's refund race across processes (docs/guards.md#idempotency-across-processes).

Eight processes make the same refunds through ``execute``; the refunds land in one shared
backend (a SQLite file the desk writes to). On one Redis store: one refund per order. With a
SQLite file per process, each process guards only itself: every order is refunded eight times.
"""
import multiprocessing as mp
import sqlite3

import pytest

from agentlab.loop import CallContext, execute, idempotency_key
from agentlab.store import open_store
from agentlab.tools import Registry, Tool

PROCS = 8
ORDERS = [f"A{1000 + i}" for i in range(20)]
pytestmark = pytest.mark.timeout(120)


def _refund_tool(backend: str) -> Tool:
    def create_refund(order_id: str, amount: float) -> dict:
        db = sqlite3.connect(backend, timeout=30, isolation_level=None)
        db.execute("INSERT INTO refunds(order_id, amount) VALUES (?, ?)", (order_id, amount))  # the money moves
        db.close()
        return {"refund_id": f"R-{order_id}", "amount": amount}

    params = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
              "required": ["order_id", "amount"]}
    return Tool("create_refund", "Refund an order.", params, fn=create_refund, side_effect=True,
                business_key=lambda a: a["order_id"])


def _desk(store_url: str, backend: str, orders: list[str], barrier, replies) -> None:
    tool = _refund_tool(backend)
    ctx = CallContext(Registry([tool]), store=open_store(store_url))
    barrier.wait()  # every process starts refunding at once
    for order in orders:
        args = {"order_id": order, "amount": 45.0}
        out = execute(tool, args, ctx, key=idempotency_key(tool, args))
        replies.put((order, out.replayed, out.error.code if out.error else None))


def race(store_url_of, tmp_path) -> tuple[dict[str, int], list]:
    """Run the desks; the number of refunds per order in the backend, and every reply."""
    backend = str(tmp_path / "backend.db")
    db = sqlite3.connect(backend)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE refunds(order_id TEXT, amount REAL)")
    db.commit()
    ctx = mp.get_context("spawn")
    barrier, replies = ctx.Barrier(PROCS), ctx.Queue()
    procs = [ctx.Process(target=_desk, args=(store_url_of(i), backend, ORDERS if i % 2 else ORDERS[::-1],
                                             barrier, replies)) for i in range(PROCS)]
    for p in procs:
        p.start()
    got = [replies.get(timeout=90) for _ in range(PROCS * len(ORDERS))]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    counts = dict(sqlite3.connect(backend).execute("SELECT order_id, COUNT(*) FROM refunds GROUP BY order_id"))
    return counts, got


def test_eight_processes_on_one_redis_refund_each_order_once(redis_url, tmp_path):
    counts, replies = race(lambda i: redis_url, tmp_path)
    assert counts == {o: 1 for o in ORDERS}
    # every other attempt was told the truth: done already (a replay), or running right now
    others = [r for r in replies if r[1] or r[2]]
    assert len(others) == (PROCS - 1) * len(ORDERS)
    assert {code for _, replayed, code in others if not replayed} <= {"IN_PROGRESS"}


def test_eight_processes_each_with_its_own_sqlite_file_refund_eight_times(tmp_path):
    # the lesson: a guard in each process's own storage guards nothing between processes
    counts, _ = race(lambda i: f"sqlite://{tmp_path}/own-{i}.db", tmp_path)
    assert counts == {o: PROCS for o in ORDERS}


def _counting_sends(monkeypatch, store) -> list[bytes]:
    """Every command the store's connections send from now on (its own path and redis-py's alike)."""
    sent: list[bytes] = []
    cls = store.client.connection_pool.connection_class
    send = cls.send_packed_command

    def counted(self, command, check_health=True):
        parts = [command] if isinstance(command, (bytes, str)) else list(command)
        sent.append(b"".join(p.encode() if isinstance(p, str) else p for p in parts))
        return send(self, command, check_health)

    monkeypatch.setattr(cls, "send_packed_command", counted)
    return sent


def test_a_claim_and_its_finish_are_one_round_trip_each(redis_url, monkeypatch):
    store = open_store(redis_url)
    store.claim("warm", "{}")  # the connection's own set-up, and each script's first call (sent whole: EVAL)
    store.finish("warm", "{}")
    sent = _counting_sends(monkeypatch, store)
    assert store.claim("one-trip", '{"a": 1}').status == "new"
    assert len(sent) == 1 and sent[0].split(b"\r\n")[2] == b"EVALSHA"
    store.finish("one-trip", '{"ok": 1}')
    assert len(sent) == 2 and sent[1].split(b"\r\n")[2] == b"EVALSHA"
    assert store.claim("one-trip", '{"a": 1}').status == "replay" and len(sent) == 3


def test_the_one_round_trip_claim_still_refuses_a_concurrent_duplicate(redis_url):
    """Threads sharing one store (and its connections) and a second store, all at once on one key: one runs."""
    import threading
    stores = [open_store(redis_url), open_store(redis_url)]
    start, answers = threading.Barrier(16), []

    def claim(i: int) -> None:
        start.wait()
        answers.append(stores[i % 2].claim("dup-key", '{"order": "A1"}').status)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(answers) == ["in_flight"] * 15 + ["new"]


def test_the_claim_survives_a_flushed_script_cache_and_a_connection_the_server_closed(redis_url):
    import redis
    store = open_store(redis_url)
    assert store.claim("before", "{}").status == "new"
    admin = redis.Redis.from_url(redis_url.split("?")[0])
    admin.script_flush()  # NOSCRIPT next: loaded again, the call still made
    assert store.claim("after-flush", "{}").status == "new"
    admin.client_kill_filter(_type="normal", skipme=True)  # every client's socket closed under it
    assert store.claim("after-kill", "{}").status == "new"
    store.finish("after-kill", "1")
    assert store.claim("after-kill", "{}").status == "replay"
