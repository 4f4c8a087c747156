"""The skill site's overhead: ``execute`` on a read skill against a bare FastAPI endpoint doing the same work.

Both run under uvicorn in their own process on 127.0.0.1 (one worker each). The work is the same
function: look a city up in a small table and return flat fields with a one-sentence summary. The
site adds what it is for: the key check, the rate limit, the input and output schemas, the per-skill
timeout, the JSONL logs. Each side gets the same requests from 1 and from 50 concurrent clients
(httpx, one client per thread), bounded in count and in time; the report is requests per second,
p50 and p99 latency, and the site's cost as a ratio of the bare endpoint's.

Run: python benchmarks/bench_site.py [--requests 600] [--seconds 60]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CITIES = {"Beijing": (7.0, "cloudy", 35.0, "north 3"), "Shanghai": (14.0, "light rain", 80.0, "east 2")}

WORK = '''
CITIES = {"Beijing": (7.0, "cloudy", 35.0, "north 3"), "Shanghai": (14.0, "light rain", 80.0, "east 2")}


def lookup(city):
    t, c, h, w = CITIES[city]
    return {"city": city, "temperature": t, "condition": c, "humidity": h, "wind": w,
            "summary": f"{city}: {c}, {t:g} °C, humidity {h:g}%, wind {w}."}
'''

BARE = WORK + '''
from fastapi import FastAPI, Request

app = FastAPI()


@app.post("/bare")
async def bare(request: Request):
    body = await request.json()
    return {"success": True, "result": lookup(body["arguments"]["city"]), "error": None, "fallback_hint": None}
'''

SKILL_META = {
    "skill_name": "bench_weather", "display_name": "Bench weather", "version": "1.0.0", "tags": ["bench"],
    "description": "Use for the benchmark: today's weather in Beijing or Shanghai as flat fields with a summary.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string", "enum": list(CITIES)}},
                     "required": ["city"], "additionalProperties": False},
    "output_schema": {"type": "object", "properties": {
        "city": {"type": "string"}, "temperature": {"type": "number"}, "condition": {"type": "string"},
        "humidity": {"type": "number"}, "wind": {"type": "string"}, "summary": {"type": "string"}},
        "required": ["city", "temperature", "condition", "summary"]},
    "rate_class": "query", "limits": {"per_minute": 10**9}, "timeout": 5.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], url: str, log: Path, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError(f"did not start: {log.read_text()[-2000:]}")


def load(url: str, headers: dict, clients: int, requests: int, seconds: float) -> dict:
    """``requests`` POSTs spread over ``clients`` threads, stopping early at ``seconds``."""
    lat: list[float] = []
    bad = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    per = max(1, requests // clients)

    def worker(i: int) -> None:
        nonlocal bad
        with httpx.Client(timeout=30) as c:
            for j in range(per):
                if time.monotonic() > stop:
                    return
                t0 = time.perf_counter()
                r = c.post(url, json={"arguments": {"city": "Beijing" if (i + j) % 2 else "Shanghai"}}, headers=headers)
                dt = time.perf_counter() - t0
                with lock:
                    lat.append(dt)
                    bad += r.status_code != 200 or not r.json().get("success")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    return {"n": len(lat), "failed": bad, "rps": len(lat) / wall if wall else 0.0,
            "p50_ms": statistics.median(lat) * 1000 if lat else float("nan"),
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--seconds", type=float, default=60.0)
    ns = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-site-"))
    skills = tmp / "skills" / "bench_weather"
    skills.mkdir(parents=True)
    (skills / "skill.json").write_text(json.dumps(SKILL_META), encoding="utf-8")
    (skills / "handler.py").write_text(WORK + textwrap.dedent('''
        from pathlib import Path
        from agentlab.site.skills import read_meta, register_skill

        __all__ = ["bench_weather"]


        @register_skill(read_meta(Path(__file__).with_name("skill.json")))
        def bench_weather(arguments, ctx):
            return lookup(arguments["city"])
        '''), encoding="utf-8")
    (tmp / "bare_app.py").write_text(BARE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp}"}
    py = sys.executable
    key = subprocess.run([py, "-m", "agentlab", "site", "--data", str(tmp / "data"), "--skills", str(tmp / "skills"),
                          "keys", "create", "--name", "bench", "--quota", "100000000/day"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    site_port, bare_port = free_port(), free_port()
    site = start([py, "-m", "agentlab", "site", "--host", "127.0.0.1", "--port", str(site_port), "--skills",
                  str(tmp / "skills"), "--data", str(tmp / "data")], f"http://127.0.0.1:{site_port}/api/skills",
                 tmp / "site.log", env)
    bare = start([py, "-m", "uvicorn", "bare_app:app", "--host", "127.0.0.1", "--port", str(bare_port),
                  "--log-level", "warning"], f"http://127.0.0.1:{bare_port}/docs", tmp / "bare.log", env)
    try:
        print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {ns.requests} requests per run, at most "
              f"{ns.seconds:g} s each")
        print("| clients | endpoint | requests | failed | req/s | p50 ms | p99 ms |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for clients in (1, 50):
            rows = {}
            for name, url, headers in (
                    ("bare FastAPI", f"http://127.0.0.1:{bare_port}/bare", {}),
                    ("site execute", f"http://127.0.0.1:{site_port}/api/skills/bench_weather/execute", {"X-API-Key": key})):
                load(url, headers, clients, min(50, ns.requests), ns.seconds)  # warm up
                rows[name] = r = load(url, headers, clients, ns.requests, ns.seconds)
                print(f"| {clients} | {name} | {r['n']} | {r['failed']} | {r['rps']:.0f} | {r['p50_ms']:.1f} | "
                      f"{r['p99_ms']:.1f} |")
            b, s = rows["bare FastAPI"], rows["site execute"]
            print(f"| {clients} | site / bare | | | {s['rps'] / b['rps']:.2f}x | {s['p50_ms'] / b['p50_ms']:.2f}x | "
                  f"{s['p99_ms'] / b['p99_ms']:.2f}x |")
    finally:
        for proc in (site, bare):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
