"""The skill site's cost: the SERVERS' CPU per ``execute``, against bare FastAPI endpoints doing the same work.

Every side is a real uvicorn process on 127.0.0.1 (one worker each, uvicorn's h11 protocol, each reply a
JSONResponse made by the endpoint), driven over HTTP from one client:

- reads: a bare FastAPI endpoint; the site on its SQLite default (``python -m agentlab site``); the site
  with its claims, rate windows and quotas in Redis (``--store redis://...``, a redis-server started here
  with the durability the site requires: ``appendonly yes``, ``appendfsync always``). The Redis side's
  CPU is the site's plus redis-server's: the work moved there is still work. The read skill's limit is 10^9 a
  minute (no side is ever refused), so the Redis side takes its places in batches (``agentlab.site.limits``:
  from ``BATCH_FROM`` a minute, up to ``BATCH_PLACES`` places a round trip): one read in sixteen asks Redis. What
  a read costs where each asks Redis (a skill under ``BATCH_FROM`` a minute) is the line printed after the table,
  the script's round trip measured alone, and both figures are in it.
- keyed writes: a bare FastAPI endpoint that keeps each Idempotency-Key as a careful hand-written one
  would (a SQLite file in WAL mode, as the site's own claims: the key taken with ``INSERT OR IGNORE``
  before the work, the reply recorded after it, a repeated key answered with the recorded reply),
  against the site's write skill on its SQLite default. Every request carries a new key: each one runs.

The work is the same function on every side (look a city up, or note a line, and return flat fields with a
one-sentence summary); the site adds what it is for: the key check, the rate limit, the input and output
schemas, the per-skill timeout, the idempotency claim, the JSONL logs.

What is measured is each server's own CPU, read per thread from ``/proc/<pid>/task/*/schedstat`` (nanoseconds),
and from utime + stime in ``/proc/<pid>/stat`` (10 ms ticks) where a thread ended inside the window or schedstat is
missing: a round of 200 reads costs the bare side about seven ticks, so ticks alone moved a ratio by a seventh
either way. Never the wall clock: another program on the machine slows every side's wall time but adds to no side's
CPU. The sides are interleaved: each round runs every side once, ``--requests`` sequential POSTs each, in
an order that rotates from round to round; a ratio is the median over rounds of (site / bare) in the same
round. Every server is started afresh for each round (and warmed up again): a process's own luck, where its
memory landed or the CPU it settled on, moved one side by up to 6% against an identical copy of itself, and
kept for the whole run it would be the whole figure. The 1-minute load average is sampled each round. The last lines are the speed targets in
the common format (``target | what | measured | target | yes/no | load L``) that ``run.py bench``
gathers.

A change is measured beside the code before it with ``--against CHECKOUT`` (``git worktree add ../before HEAD~1``):
that checkout's sites run as more sides of the same rounds, each row against the same bare endpoint.

Run: python benchmarks/bench_site.py [--rounds 8] [--requests 200] [--quick] [--against CHECKOUT]   (Linux: /proc)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# below the ephemeral range: a port from bind(0) could be taken by an outgoing connection before the server binds it
from agentlab.ports import free_port  # noqa: E402
from agentlab.site.limits import BATCH_FROM, BATCH_PLACES  # noqa: E402

CITIES = {"Beijing": (7.0, "cloudy", 35.0, "north 3"), "Shanghai": (14.0, "light rain", 80.0, "east 2")}
TARGETS = {"read": 1.25, "redis": 1.5, "write": 1.25}  # site / bare, CPU per request: the speed targets

WORK = '''
CITIES = {"Beijing": (7.0, "cloudy", 35.0, "north 3"), "Shanghai": (14.0, "light rain", 80.0, "east 2")}
NOTES = []


def lookup(city):
    t, c, h, w = CITIES[city]
    return {"city": city, "temperature": t, "condition": c, "humidity": h, "wind": w,
            "summary": f"{city}: {c}, {t:g} °C, humidity {h:g}%, wind {w}."}


def note(city, text):
    NOTES.append((city, text))
    return {"note_id": f"N{len(NOTES)}", "city": city, "summary": f"Noted for {city}: {text[:40]}."}
'''

BARE = WORK + '''
import json
import os
import sqlite3

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

app = FastAPI()
# the keys a careful endpoint keeps: one SQLite file in WAL mode, as the site's own claims
db = sqlite3.connect(os.environ["BARE_KEYS"], isolation_level=None, check_same_thread=False)
db.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                 "CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, reply TEXT) WITHOUT ROWID")


# Each reply is a JSONResponse made here, as the site makes its own: a dict returned to FastAPI would first go
# through jsonable_encoder, work the site never does, and the bare side would pay for it
@app.post("/bare")
async def bare(request: Request):
    body = await request.json()
    return JSONResponse({"success": True, "result": lookup(body["arguments"]["city"]), "error": None,
                         "fallback_hint": None})


@app.post("/bare_write")
async def bare_write(request: Request):
    key = request.headers.get("idempotency-key")
    if not key:
        return JSONResponse({"success": False, "error": "an Idempotency-Key is required"}, status_code=428)
    body = await request.json()
    if db.execute("INSERT OR IGNORE INTO keys(key, reply) VALUES (?, NULL)", (key,)).rowcount == 0:
        (recorded,) = db.execute("SELECT reply FROM keys WHERE key = ?", (key,)).fetchone()
        if recorded is None:
            return JSONResponse({"success": False, "error": "in progress"}, status_code=409)
        return JSONResponse(json.loads(recorded), headers={"Idempotent-Replayed": "true"})
    args = body["arguments"]
    reply = {"success": True, "result": note(args["city"], args["text"]), "error": None, "fallback_hint": None}
    db.execute("UPDATE keys SET reply = ? WHERE key = ?", (json.dumps(reply), key))
    return JSONResponse(reply)
'''

_OUTPUT = {"type": "object", "properties": {
    "city": {"type": "string"}, "temperature": {"type": "number"}, "condition": {"type": "string"},
    "humidity": {"type": "number"}, "wind": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["city", "temperature", "condition", "summary"]}
SKILLS = {
    "bench_weather": ({
        "skill_name": "bench_weather", "display_name": "Bench weather", "version": "1.0.0", "tags": ["bench"],
        "description": "Use for the benchmark: today's weather in Beijing or Shanghai as flat fields with a summary.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string", "enum": list(CITIES)}},
                         "required": ["city"], "additionalProperties": False},
        "output_schema": _OUTPUT, "rate_class": "query", "limits": {"per_minute": 10**9}, "timeout": 5.0},
        "return lookup(arguments['city'])"),
    "bench_note": ({
        "skill_name": "bench_note", "display_name": "Bench note", "version": "1.0.0", "tags": ["bench"],
        "description": "Use for the benchmark: note a line about Beijing or Shanghai; returns the note's id.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string", "enum": list(CITIES)},
                                                          "text": {"type": "string", "maxLength": 200}},
                         "required": ["city", "text"], "additionalProperties": False},
        "output_schema": {"type": "object", "properties": {"note_id": {"type": "string"}, "city": {"type": "string"},
                                                           "summary": {"type": "string"}},
                          "required": ["note_id", "summary"]},
        "rate_class": "write", "limits": {"per_minute": 10**9}, "timeout": 5.0},
        "return note(arguments['city'], arguments['text'])"),
}


class Server:
    """One server process, started afresh for each round (:meth:`launch` then :meth:`wait`, so that every server of
    a round starts at once): ``argv(port)`` is its command line, ``probe`` a path that answers once it is up."""

    def __init__(self, name: str, argv: Callable[[int], list[str]], probe: str, log: Path, env: dict,
                 cwd: Path = ROOT):
        self.name, self.argv, self.probe, self.log, self.env, self.cwd = name, argv, probe, log, env, cwd
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.pids: set[int] = set()  # every process it ran as: a new one each round

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(self.argv(self.port), cwd=self.cwd, env=self.env, stdout=self.log.open("a"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pids.add(self.proc.pid)

    def wait(self, seconds: float = 60) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + self.probe, timeout=1)
                return
            except httpx.TransportError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (all its threads), in seconds, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # after "(comm)": the name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_now(pid: int) -> tuple[float, dict[int, int]]:
    """Process ``pid``'s CPU seconds in ticks (all its threads, ended ones too), and each live thread's nanoseconds."""
    threads: dict[int, int] = {}
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                threads[int(task.name)] = int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):  # the thread ended meanwhile, or no schedstat
                continue
    except OSError:
        pass
    return cpu_seconds(pid), threads


def cpu_spent(before: tuple[float, dict[int, int]], after: tuple[float, dict[int, int]]) -> float:
    """CPU seconds between two :func:`cpu_now` readings: the threads' nanoseconds, unless a thread ended in between
    (its time is gone from schedstat) or there were none, then the ticks."""
    ticks = after[0] - before[0]
    t0, t1 = before[1], after[1]
    if not t1 or set(t0) - set(t1):
        return ticks
    ns = sum(v - t0.get(tid, 0) for tid, v in t1.items()) / 1e9
    return ns if abs(ns - ticks) <= 2.5 / os.sysconf("SC_CLK_TCK") else ticks


def start_redis(folder: Path, env: dict) -> tuple[subprocess.Popen | None, str]:
    """(process, url) of a redis-server keeping what the site requires, or (None, why not)."""
    exe = shutil.which("redis-server")
    if exe is None:
        return None, "redis-server is not installed"
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
                             "--appendfsync", "always", "--dir", str(folder)], stdout=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    stop(proc)
    return None, "redis-server did not answer"


class Side:
    """One endpoint: the server it is on (and other processes whose CPU it costs), where to POST, what to send."""

    @property
    def pids(self) -> list[int]:
        assert self.server.proc is not None
        return [self.server.proc.pid, *self.besides]


    def __init__(self, name: str, server: Server, path: str, headers: dict, write: bool = False,
                 besides: tuple[int, ...] = ()):
        self.name, self.server, self.path, self.headers, self.write = name, server, path, headers, write
        self.besides = besides  # other processes whose CPU the side costs too (redis-server)
        self.cpu: list[float] = []
        self.others: list[float] = []  # of which the processes after the first (redis-server)
        self.failed = 0
        self.sent = 0

    def run(self, client: httpx.Client, requests: int, record: bool = True) -> None:
        before = [cpu_now(p) for p in self.pids]
        for j in range(requests):
            self.sent += 1
            city = "Beijing" if j % 2 else "Shanghai"
            if self.write:  # a new key each time: every request runs the write
                body = {"arguments": {"city": city, "text": f"delivery window moved, {self.sent}"}}
                headers = {**self.headers, "Idempotency-Key": f"{self.name[:4]}-{os.getpid()}-{self.sent}"}
            else:
                body, headers = {"arguments": {"city": city}}, self.headers
            r = client.post(self.server.url + self.path, json=body, headers=headers)
            self.failed += r.status_code != 200 or not r.json().get("success")
        if record:
            spent = [cpu_spent(b, cpu_now(p)) for p, b in zip(self.pids, before, strict=True)]
            self.cpu.append(sum(spent) / requests)
            self.others.append(sum(spent[1:]) / requests)


def write_skills(folder: Path) -> None:
    for name, (meta, call) in SKILLS.items():
        skill = folder / name
        skill.mkdir(parents=True)
        (skill / "skill.json").write_text(json.dumps(meta), encoding="utf-8")
        (skill / "handler.py").write_text(WORK + textwrap.dedent(f'''
            from pathlib import Path
            from agentlab.site.skills import read_meta, register_skill

            __all__ = ["{name}"]


            @register_skill(read_meta(Path(__file__).with_name("skill.json")))
            def {name}(arguments, ctx):
                {call}
            '''), encoding="utf-8")


def site_server(py: str, tmp: Path, data: str, env: dict, store: list[str], root: Path = ROOT) -> tuple[Server, str]:
    """A site on its own data folder, run from the checkout ``root`` (started by the rounds), and an API key for it."""
    args = ["--skills", str(tmp / "skills"), "--data", str(tmp / data), *store]
    if root != ROOT:
        env = {**env, "PYTHONPATH": f"{root}{os.pathsep}{tmp}"}
    made = subprocess.run([py, "-m", "agentlab", "site", *args, "keys", "create", "--name", "bench", "--quota",
                           "100000000/day"], cwd=root, env=env, capture_output=True, text=True)
    if made.returncode != 0:
        raise RuntimeError(f"no key from the site in {root}: {made.stderr[-2000:]}")
    server = Server(data, lambda port: [py, "-m", "agentlab", "site", "--host", "127.0.0.1", "--port", str(port), *args],
                    "/api/skills", tmp / f"{data}.log", env, cwd=root)
    return server, made.stdout.strip()


def ratio(site: Side, bare: Side) -> float:
    """The median over rounds of site / bare in the same round (the same load on both). A round that cost the bare
    side nothing measurable says nothing and is left out."""
    rounds = [s / b for s, b in zip(site.cpu, bare.cpu, strict=True) if b > 0]
    return statistics.median(rounds) if rounds else float("nan")


def target_line(what: str, measured: float, target: float, load: float) -> str:
    shown = f"{measured:.2f}x" if measured == measured else "not measured (rounds too short)"
    return (f"target | {what} | {shown} | ≤ {target:g}x | {'yes' if measured <= target else 'no'} | "
            f"load {load:.2f}")


def script_round_trips(redis_url: str, redis_pid: int, calls: int, rounds: int = 3,
                       per_minute: int = BATCH_FROM - 1) -> dict[str, float]:
    """Where a Redis read's own cost goes: the rate-and-quota script called from an event loop in this process,
    ``calls`` at a time (the site's path, ``RedisLimiter.admit_async``), and a ``PING`` beside it (the server's
    floor for one round trip). Medians over rounds, µs per call: this process's user and system CPU
    (``getrusage``), redis-server's CPU. ``per_minute`` under BATCH_FROM: each call one round trip (a clock of its
    own moves 0.2 s a call, so none is refused); from it, most calls are admitted from a batch (the clock moves
    1 ms a call: a busy skill's thousand calls a second)."""
    import asyncio
    import resource

    from agentlab.redis_store import RedisStore
    from agentlab.site.keys import ApiKey
    from agentlab.site.limits import RedisLimiter
    store = RedisStore.from_url(redis_url, prefix="bench-trips:")
    ticks = iter(range(10**9))
    limiter = RedisLimiter(store.client, prefix=f"bench-trips-{per_minute}:", clock=lambda: 1.8e9 + next(ticks) * step)
    step = 0.2 if per_minute < BATCH_FROM else 0.001
    key = ApiKey(id="trips", name="trips", skills=None, quota=10**9, period="day", created=0.0, operator=False,
                 revoked=False)
    got: dict[str, list[float]] = {"user": [], "system": [], "redis": [], "ping": []}

    async def admit(n: int) -> None:
        for _ in range(n):
            assert (await limiter.admit_async(key, "trips", per_minute)).ok

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(admit(200))  # warm: the connection open, the script known
        for _ in range(rounds):
            r0, s0 = cpu_now(redis_pid), resource.getrusage(resource.RUSAGE_SELF)
            loop.run_until_complete(admit(calls))
            s1, r1 = resource.getrusage(resource.RUSAGE_SELF), cpu_now(redis_pid)
            got["user"].append((s1.ru_utime - s0.ru_utime) / calls)
            got["system"].append((s1.ru_stime - s0.ru_stime) / calls)
            got["redis"].append(cpu_spent(r0, r1) / calls)
            r0 = cpu_now(redis_pid)
            for _ in range(calls):
                store.client.ping()
            got["ping"].append(cpu_spent(r0, cpu_now(redis_pid)) / calls)
    finally:
        loop.close()
        limiter._lua.close()
        store.close()
    return {k: statistics.median(v) * 1e6 for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8, help="rounds, every side once in each (default: %(default)s)")
    ap.add_argument("--requests", type=int, default=200, help="requests per side per round (default: %(default)s)")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 60 requests: that it runs, not what it says")
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="another checkout of the workbook (git worktree add ../before HEAD~1): its sites run as more "
                         "sides in the same rounds, so that a change is measured beside the code before it")
    ns = ap.parse_args()
    rounds, requests, warm = (2, 60, 10) if ns.quick else (ns.rounds, ns.requests, 50)
    tmp = Path(tempfile.mkdtemp(prefix="bench-site-"))
    write_skills(tmp / "skills")
    (tmp / "bare_app.py").write_text(BARE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp}", "BARE_KEYS": str(tmp / "bare-keys.db")}
    py = sys.executable
    redis: subprocess.Popen | None = None
    servers: list[Server] = []
    try:
        redis, redis_url = start_redis(tmp, env)
        # h11, as the site's server (agentlab.site.serving builds its protocol on uvicorn's h11 one): left to
        # "auto", uvicorn would pick httptools where it is installed, a faster parser the site does not get
        bare = Server("bare", lambda port: [py, "-m", "uvicorn", "bare_app:app", "--host", "127.0.0.1", "--port",
                                            str(port), "--http", "h11", "--log-level", "warning"],
                      "/docs", tmp / "bare.log", env)
        site, key = site_server(py, tmp, "data", env, [])
        servers += [bare, site]
        bare_read = Side("bare FastAPI", bare, "/bare", {})
        site_read = Side("site, SQLite", site, "/api/skills/bench_weather/execute", {"X-API-Key": key})
        reads = [bare_read, site_read]
        redis_read = None
        if redis is not None:
            rsite, rkey = site_server(py, tmp, "data-redis", env, ["--store", f"{redis_url}?prefix=bench:"])
            servers.append(rsite)
            redis_read = Side("site, Redis (+ redis-server)", rsite, "/api/skills/bench_weather/execute",
                              {"X-API-Key": rkey}, besides=(redis.pid,))
            reads.append(redis_read)
        bare_write = Side("bare FastAPI keeping the key", bare, "/bare_write", {}, write=True)
        site_write = Side("site keyed write, SQLite", site, "/api/skills/bench_note/execute", {"X-API-Key": key},
                          write=True)
        writes = [bare_write, site_write]
        if ns.against is not None:  # the same sites from the other checkout, as more sides of the same rounds
            other = ns.against.resolve()
            osite, okey = site_server(py, tmp, "data-against", env, [], root=other)
            servers.append(osite)
            reads.append(Side(f"site, SQLite ({other.name})", osite, "/api/skills/bench_weather/execute",
                              {"X-API-Key": okey}))
            writes.append(Side(f"site keyed write, SQLite ({other.name})", osite, "/api/skills/bench_note/execute",
                               {"X-API-Key": okey}, write=True))
            if redis is not None:
                orsite, orkey = site_server(py, tmp, "data-against-redis", env,
                                            ["--store", f"{redis_url}?prefix=against:"], root=other)
                servers.append(orsite)
                reads.append(Side(f"site, Redis (+ redis-server) ({other.name})", orsite,
                                  "/api/skills/bench_weather/execute", {"X-API-Key": orkey}, besides=(redis.pid,)))
        sides = reads + writes
        loads: list[float] = []
        with httpx.Client(timeout=30) as client:
            for r in range(rounds):
                # every server is a new process each round: one process's luck (where its memory landed, its
                # hash seed, the CPU it settled on) moved a side by up to 6% against an identical copy of itself
                # in the same rounds; over fresh processes it is one draw of several, not the whole figure
                for server in servers:
                    server.launch()
                for server in servers:
                    server.wait()
                for side in sides:
                    side.run(client, warm, record=False)  # warm up: imports, compiled schemas, open files
                for side in sides[r % len(sides):] + sides[:r % len(sides)]:  # no side always after the same one
                    side.run(client, requests)
                loads.append(os.getloadavg()[0])
                for server in servers:
                    server.stop()
        if redis is not None:
            calls = 300 if ns.quick else 3000
            trips = {"calls": calls, **script_round_trips(redis_url, redis.pid, calls)}
            batched = script_round_trips(redis_url, redis.pid, calls, per_minute=10**9)
    finally:
        for server in servers:
            server.stop()
        if redis is not None:
            stop(redis)
    load = statistics.median(loads)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {min(loads):.2f}-{max(loads):.2f}; "
          f"{rounds} interleaved rounds, {requests} sequential requests per side each; server CPU from /proc; "
          f"{sum(len(server.pids) for server in servers)} server processes, a new one for each server each round")
    print("| endpoint | requests | failed | CPU per request (median of rounds) | vs bare (median of rounds) |")
    print("|---|---:|---:|---:|---:|")
    for group, base in ((reads, reads[0]), (writes, writes[0])):
        for side in group:
            vs = "1 (baseline)" if side is base else f"{ratio(side, base):.2f}x"  # nan: rounds too short
            besides = f" (redis-server {statistics.median(side.others) * 1e6:.0f} µs)" if side.besides else ""
            print(f"| {side.name} | {rounds * requests} | {side.failed} | {statistics.median(side.cpu) * 1e6:.0f} µs"
                  f"{besides} | {vs} |")
    if redis is None:
        print(f"site on Redis: skipped ({redis_url})")
    else:
        print(f"where a Redis read's script goes, from an event loop in one process ({trips['calls']:.0f} calls, "
              f"median of 3): a limit under {BATCH_FROM} a minute, one round trip a call: {trips['user']:.0f} µs"
              f" user + {trips['system']:.0f} µs system CPU per call in the process, redis-server"
              f" {trips['redis']:.0f} µs (a PING costs it {trips['ping']:.0f} µs); the sides' skill (10^9 a minute),"
              f" places taken {BATCH_PLACES} at a time: {batched['user']:.1f} µs user + {batched['system']:.1f} µs"
              f" system, redis-server {batched['redis']:.1f} µs")
    print(target_line("skill site read vs bare FastAPI, over HTTP (SQLite)", ratio(site_read, bare_read),
                      TARGETS["read"], load))
    if redis_read is not None:
        print(target_line(f"skill site on Redis, read vs bare FastAPI (site + redis-server CPU; a busy skill, places taken {BATCH_PLACES} at a time)",
                          ratio(redis_read, bare_read), TARGETS["redis"], load))
    print(target_line("site keyed write vs a bare endpoint keeping the same key (SQLite both)",
                      ratio(site_write, bare_write), TARGETS["write"], load))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
