"""The idempotency store's cost: ``execute`` on a refund with SQLite against Redis, one process against three.

Every call is a new refund (its own order id), so each one claims, runs and finishes: the full
cost of the guard (docs/guards.md#idempotency-across-processes). The processes share one store
(one SQLite file in WAL mode, or one redis-server on 127.0.0.1 that this script starts) and one
backend, a file every refund appends a line to. The keys are split between the processes; at the
end the lines are counted: effects must equal unique keys, nothing lost and nothing doubled.
Reported: calls per second over all processes, p50 and p99 of one ``execute``: wall time, as a throughput is, so
each row prints the 1-minute load average it ran at, and the order of the stores is swapped between the one-process
rows and the three-process rows (each row is still one run after the other, not interleaved). Each store runs as
agentlab configures it: the redis-server started here syncs every write to disk before it answers (``appendfsync
always``, docs/site.md), the SQLite file does not (WAL, ``synchronous=NORMAL``: a process's crash loses nothing, the
machine's may lose the last commits), which is most of the difference between them.

Run: python benchmarks/bench_store.py [--calls 2000] [--seconds 60] [--redis redis://host:port/db]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _worker(store_url: str, backend: str, keys: list[str], deadline: float, barrier, out) -> None:
    from agentlab.loop import CallContext, execute
    from agentlab.store import open_store
    from agentlab.tools import Registry, Tool

    def create_refund(order_id: str) -> dict:
        with open(backend, "a", encoding="utf-8") as f:  # O_APPEND: one whole line per refund
            f.write(order_id + "\n")
        return {"refund_id": "R-" + order_id}

    tool = Tool("create_refund", "Refund an order.", fn=create_refund, side_effect=True,
                business_key=lambda a: a["order_id"])
    ctx = CallContext(Registry([tool]), store=open_store(store_url))
    times, errors = [], 0
    barrier.wait()
    for k in keys:
        if time.time() > deadline:
            break
        t0 = time.perf_counter()
        outcome = execute(tool, {"order_id": k}, ctx, key=f"create_refund:{k}")
        times.append(time.perf_counter() - t0)
        errors += outcome.error is not None
    out.put((times, errors))


def run(store_url: str, procs: int, calls: int, seconds: float, folder: Path) -> dict:
    backend = folder / f"effects-{uuid.uuid4().hex[:6]}.txt"
    backend.touch()
    run_id = uuid.uuid4().hex[:6]
    keys = [f"{run_id}-{i}" for i in range(calls)]
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(procs + 1), ctx.Queue()
    deadline = time.time() + seconds + 30  # + the processes' start-up
    workers = [ctx.Process(target=_worker, args=(store_url, str(backend), keys[i::procs], deadline, barrier, out))
               for i in range(procs)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    results = [out.get(timeout=seconds + 120) for _ in workers]
    wall = time.perf_counter() - t0
    for w in workers:
        w.join(30)
    times = sorted(t for ts, _ in results for t in ts)
    lines = backend.read_text(encoding="utf-8").splitlines()
    return {"calls": len(times), "errors": sum(e for _, e in results), "per_s": len(times) / wall,
            "p50_ms": statistics.median(times) * 1000, "p99_ms": times[int(0.99 * (len(times) - 1))] * 1000,
            "effects": len(lines), "unique": len(set(lines))}


def start_redis(folder: Path) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # with the durability agentlab requires of a Redis that keeps idempotency claims (docs/site.md): every write on
    # disk before its reply (without it Redis did a fifth of the work). Each store runs as agentlab configures it:
    # the SQLite file's commits (WAL, synchronous=NORMAL) survive a process's crash, not the machine's, and are not
    # synced to disk one by one; a machine that must survive its own crash runs Redis so
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
                             "--appendfsync", "always", "--dir", str(folder)], stdout=subprocess.DEVNULL,
                            start_new_session=True)
    import redis
    client, deadline = redis.Redis(port=port), time.monotonic() + 15
    while True:
        try:
            client.ping()
            return proc, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000, help="refunds per configuration (unique keys)")
    ap.add_argument("--seconds", type=float, default=60.0, help="stop a configuration's calls after this")
    ap.add_argument("--redis", default=None, help="an existing server; default: start redis-server on a free port")
    ns = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-store-"))
    server = None
    try:
        redis_url = ns.redis
        if redis_url is None:
            try:
                server, redis_url = start_redis(folder)
            except (OSError, ImportError) as exc:
                print(f"Redis skipped: {exc}")
        stores = [("sqlite", f"sqlite://{folder}/claims.db")]
        if redis_url:
            stores.append(("redis", f"{redis_url}?prefix=bench{uuid.uuid4().hex[:6]}:"))
        print(f"execute() on a new refund each call, {ns.calls} calls per row, {os.cpu_count()} cores, 127.0.0.1")
        print(f"{'store':8} {'procs':>5} {'calls':>6} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'effects':>8} {'unique':>7}"
              f" {'load':>6}")
        for procs in (1, 3):
            for name, url in stores if procs == 1 else stores[::-1]:
                r = run(url, procs, ns.calls, ns.seconds, folder)
                ok = r["effects"] == r["unique"] == r["calls"] and not r["errors"]
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
                print(f"{name:8} {procs:>5} {r['calls']:>6} {r['per_s']:>9.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
                      f"{r['effects']:>8} {r['unique']:>7} {load:>6.2f}{'' if ok else '  LOST OR DOUBLED'}")
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
