import multiprocessing as mp
import sqlite3

import pytest

from agentlab.store import Approval, MemoryStore, SQLiteStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")


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


def test_approvals_are_decided_once(store):
    a = store.add_approval(Approval("x", "s", "create_refund", "{}", "big"))
    assert a.state == "pending" and store.add_approval(Approval("x", "s", "t", "{}", "other")).reason == "big"
    assert store.decide("x", "approved", "ok").state == "approved"
    assert store.decide("x", "rejected", "no") is None
    assert [p.id for p in store.approvals("s")] == ["x"] and store.approvals("other") == []


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
