"""Several replicas on one data folder (docs/site.md#several-replicas): real processes, one folder.

Each test starts 6-8 processes (``multiprocessing``, spawned: nothing is shared but the files) that
wait at a barrier and then hammer one of the things the replicas share: the weather skill's cache
file, the four logs and their rotation, a fresh SQLite file (``idempotency.db`` and ``keys.db``)
opened by all of them at once. A thread lock in one process does not hold another: what keeps the
files whole is an atomic replace, a lock on a file, or SQLite's own locking with a retry.
"""
import json
import multiprocessing
import traceback
from pathlib import Path

PROCESSES = 8
CTX = multiprocessing.get_context("spawn")  # the way other platforms start them; no state inherited


def _run(target, args_of, n=PROCESSES, timeout=120):
    """Start ``n`` processes of ``target(i, barrier, queue, *args_of(i))``; their reports, one per process."""
    barrier, queue = CTX.Barrier(n), CTX.Queue()
    procs = [CTX.Process(target=target, args=(i, barrier, queue, *args_of(i))) for i in range(n)]
    for p in procs:
        p.start()
    reports = [queue.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout)
    return reports


# ------------------------------------------------------------------ the weather skill's cache

def _weather_worker(i, barrier, queue, data):
    from agentlab.errors import ToolFailure
    from agentlab.site.shipped.weather.handler import CITIES, current_weather
    from agentlab.site.skills import SkillContext
    ctx = SkillContext(Path(data))  # its own thread lock: shared by nothing in another process
    cities = list(CITIES)
    failures = []
    barrier.wait()
    for n in range(30):
        city = cities[(i + n) % len(cities)]
        for args in ({"city": city}, {"city": city, "allow_cached": True}):
            try:
                current_weather(args, ctx)
            except ToolFailure:
                pass  # nothing cached yet for that city: an answer, not a failure
            except Exception:  # noqa: BLE001 - what would be a 500
                failures.append(traceback.format_exc(limit=1))
    queue.put(failures)


def test_replicas_share_the_weather_cache_without_a_500(tmp_path):
    reports = _run(_weather_worker, lambda i: (str(tmp_path),))
    failures = [f for r in reports for f in r]
    assert failures == [], f"{len(failures)} of {PROCESSES * 60} calls failed, e.g. {failures[:1]}"
    cache = json.loads((tmp_path / "weather_cache.json").read_text(encoding="utf-8"))
    from agentlab.site.shipped.weather.handler import CITIES
    assert sorted(cache) == sorted(CITIES)  # no replica's update was lost under another's
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []  # no temporary file left behind


# ------------------------------------------------------------------ the logs and their rotation

LINES = 150


def _log_worker(i, barrier, queue, folder, max_bytes):
    from agentlab.site.logs import SiteLogs
    logs = SiteLogs(folder, max_bytes=max_bytes, backups=200)
    failures = []
    barrier.wait()
    for n in range(LINES):
        try:
            logs.write("access", request_id=f"p{i}-{n:04d}", session_id=None, method="GET", path="/api/skills",
                       status=200)
        except Exception:  # noqa: BLE001
            failures.append(traceback.format_exc(limit=1))
    queue.put(failures)


def test_replicas_append_and_rotate_the_logs_without_losing_a_line(tmp_path):
    max_bytes = 6000
    reports = _run(_log_worker, lambda i: (str(tmp_path), max_bytes), n=6)
    assert [f for r in reports for f in r] == []
    files = sorted(tmp_path.glob("access.jsonl*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    ids = [json.loads(x)["request_id"] for p in files for x in p.read_text(encoding="utf-8").splitlines()]
    assert len(ids) == len(set(ids)) == 6 * LINES  # every line of every process, once: no history lost
    longest = max(len(x) + 1 for p in files for x in p.read_text(encoding="utf-8").splitlines())
    for p in files:
        size = p.stat().st_size
        assert size <= max_bytes, p.name
        if p.name != "access.jsonl":  # a file moved aside only when the next line did not fit: none half empty
            assert size > max_bytes - longest, (p.name, size)


# ------------------------------------------------------------------ a fresh SQLite file opened by all at once

ROUNDS = 80


def _sqlite_worker(i, barrier, queue, folder):
    from agentlab.site.keys import KeyStore
    from agentlab.store import SQLiteStore
    failures = []
    for r in range(ROUNDS):
        barrier.wait()
        for kind, make, name in (("claims", SQLiteStore, f"claims-{r}.db"), ("keys", KeyStore, f"keys-{r}.db")):
            try:
                store = make(Path(folder) / name)
                if kind == "claims":
                    store.claim(f"k{i}", "fp")
                else:
                    store.all()
                store.close()
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{kind}: {exc}")
    queue.put(failures)


def test_replicas_open_a_fresh_sqlite_file_at_once(tmp_path):
    reports = _run(_sqlite_worker, lambda i: (str(tmp_path),))
    failures = [f for r in reports for f in r]
    assert failures == [], f"{len(failures)} of {PROCESSES * ROUNDS * 2} opens failed: {sorted(set(failures))}"
    from agentlab.store import SQLiteStore
    store = SQLiteStore(tmp_path / "claims-0.db")
    assert store._q("PRAGMA journal_mode")[0][0] == "wal"
    assert {store.claim(f"k{i}", "fp").status for i in range(PROCESSES)} == {"in_flight"}  # every replica's claim is there
