"""The skill site's cost: the SERVER's CPU per ``execute`` of a read skill against a bare FastAPI endpoint.

Both sides are real uvicorn processes on 127.0.0.1 (one worker each): ``python -m agentlab site`` and
``uvicorn bare_app:app``. The work is the same function: look a city up in a small table and return
flat fields with a one-sentence summary. The site adds what it is for: the key check, the rate limit,
the input and output schemas, the per-skill timeout, the four JSONL logs.

What is measured is each server's own CPU (utime + stime of its process, from ``/proc/<pid>/stat``),
never the wall clock: another program on the machine slows both sides' wall time but does not add
to their CPU. The sides are interleaved in one run: rounds alternate bare and site (the first side
alternates too), ``--requests`` POSTs each, from the same client (one httpx client, one connection
per server, kept alive). The ratio is the site's CPU per request over the bare endpoint's.

Run: python benchmarks/bench_site.py [--rounds 12] [--requests 300]   (Linux: it reads /proc)
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


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (all its threads), in seconds, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # after "(comm)": the name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send(client: httpx.Client, url: str, headers: dict, requests: int) -> int:
    """``requests`` POSTs one after the other; the number that did not succeed."""
    bad = 0
    for j in range(requests):
        r = client.post(url, json={"arguments": {"city": "Beijing" if j % 2 else "Shanghai"}}, headers=headers)
        bad += r.status_code != 200 or not r.json().get("success")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=12, help="rounds per side, interleaved (default: %(default)s)")
    ap.add_argument("--requests", type=int, default=300, help="requests per round (default: %(default)s)")
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
    sides = {"bare FastAPI": (bare, f"http://127.0.0.1:{bare_port}/bare", {}),
             "site execute": (site, f"http://127.0.0.1:{site_port}/api/skills/bench_weather/execute",
                              {"X-API-Key": key})}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    failed = dict.fromkeys(sides, 0)
    try:
        with httpx.Client(timeout=30) as client:
            for _, url, headers in sides.values():
                send(client, url, headers, 100)  # warm up: imports, compiled schemas, open files
            for r in range(ns.rounds):
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                for name in order:
                    proc, url, headers = sides[name]
                    before = cpu_seconds(proc.pid)
                    failed[name] += send(client, url, headers, ns.requests)
                    cpu[name].append((cpu_seconds(proc.pid) - before) / ns.requests)
        lines = {name: sum(1 for _ in (tmp / "data" / "logs" / f"{name}.jsonl").open()) for name in ("access", "call")}
    finally:
        for proc in (site, bare):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {ns.rounds} rounds "
          f"per side, interleaved, {ns.requests} sequential requests each; server CPU from /proc")
    print("| endpoint | requests | failed | CPU per request (mean of rounds) | median round |")
    print("|---|---:|---:|---:|---:|")
    for name, per in cpu.items():
        print(f"| {name} | {ns.rounds * ns.requests} | {failed[name]} | {statistics.fmean(per) * 1e6:.0f} µs | "
              f"{statistics.median(per) * 1e6:.0f} µs |")
    ratio = statistics.fmean(cpu["site execute"]) / statistics.fmean(cpu["bare FastAPI"])
    print(f"| site / bare | | | {ratio:.2f}x | "
          f"{statistics.median(cpu['site execute']) / statistics.median(cpu['bare FastAPI']):.2f}x |")
    print(f"site log lines: access {lines['access']}, call {lines['call']} (every request, warm-up included)")


if __name__ == "__main__":
    main()
