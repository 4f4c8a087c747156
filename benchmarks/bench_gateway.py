"""The guarded MCP gateway's cost: its CPU per ``tools/call`` against a bare MCP pass-through measured beside it.

Both sides are real processes on 127.0.0.1, each with an upstream of its own (the same FastMCP server on stdio, a read
``lookup`` and a write ``refund``, trivial), each serving streamable HTTP at ``/mcp``:

- the gateway: ``python -m agentlab gateway --upstream ...``, every guard on (the client's API key, the rate limit,
  the in-flight bound, the contract, the breaker, the claim of the write, redaction, the four JSONL logs);
- the bare pass-through: the official ``mcp`` SDK alone, a low-level ``Server`` whose ``list_tools`` and
  ``call_tool`` forward to an upstream ``ClientSession`` and hand its result back, no check of any kind.

What is measured is each proxy process's own CPU, and its upstream's beside it: the client's (this process's) CPU is
the same for both and not counted. It is read per thread from ``/proc/<pid>/task/*/schedstat`` (nanoseconds), and
from utime + stime in ``/proc/<pid>/stat`` (as bench_site.py does; 10 ms ticks) where a thread ended inside the window
(the two disagree by more than two ticks) or schedstat is missing: at 200 calls a side, a tick either way moved a
round's figure by 50 us a call. The sides are interleaved in one run: each round is ``--calls`` calls a side (lookup and
refund in turn, fresh order ids, so no write is ever replayed) sent in blocks of ``--block``, the sides alternating
block by block (ABBA, the first side alternating round by round), so a burst of load from elsewhere falls on both; one
MCP session per side held open, a warm-up outside the measured windows. The added cost is the median over rounds of
(gateway - pass-through) per call, on the same round's load.

Run: python benchmarks/bench_gateway.py [--rounds 12] [--calls 200] [--block 25]   (Linux: it reads /proc)
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_site import cpu_now, cpu_spent, free_port  # noqa: E402

TARGET_MS = 1.0  # the speed target: the guards add at most this over a bare MCP pass-through, per call

UPSTREAM = '''
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("shop")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(order_id: str) -> dict:
    """Look an order up."""
    return {"order_id": order_id, "status": "shipped"}


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=False))
def refund(order_id: str, amount: float) -> dict:
    """Refund part of an order (it moves money)."""
    return {"refunded": amount, "order_id": order_id}


mcp.run()
'''

BARE = '''
"""A bare MCP pass-through: the official SDK alone, every call forwarded upstream and its result handed back."""
import contextlib
import shlex
import sys

import uvicorn
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Route

command, port = shlex.split(sys.argv[1]), int(sys.argv[2])
upstream = {}
server = Server("bare-pass-through")


@server.list_tools()
async def list_tools():
    return (await upstream["session"].list_tools()).tools


@server.call_tool(validate_input=False)
async def call_tool(name, arguments):
    return await upstream["session"].call_tool(name, arguments)


manager = StreamableHTTPSessionManager(server, json_response=True)


@contextlib.asynccontextmanager
async def lifespan(app):
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        upstream["session"] = session
        async with manager.run():
            yield


class Endpoint:
    async def __call__(self, scope, receive, send):
        await manager.handle_request(scope, receive, send)


app = Starlette(routes=[Route("/mcp", endpoint=Endpoint(), methods=["GET", "POST", "DELETE"])], lifespan=lifespan)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
'''


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def target_line(what: str, measured: str, target: str, met: bool, load: float) -> str:
    """One row of run.py bench's table of targets: ``target | what | measured | target | met | load``, the load the
    1-minute average over the rounds measured (their median)."""
    return f"target | {what} | {measured} | {target} | {'yes' if met else 'no'} | load {load:.2f}"


def start(cmd: list[str], port: int, log: Path, env: dict) -> subprocess.Popen:
    """A server process in a session of its own, polled until its port answers."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError(f"did not start: {log.read_text()[-2000:]}")


def child(pid: int) -> int:
    """The one child process of ``pid`` (the proxy's upstream, started on stdio)."""
    for _ in range(100):
        kids = [int(k) for task in Path(f"/proc/{pid}/task").iterdir()
                for k in (task / "children").read_text().split()]
        if kids:
            return kids[0]
        time.sleep(0.1)
    raise RuntimeError(f"process {pid} has no upstream child")


async def measure(sides: dict[str, tuple[str, dict, int, int]], rounds: int, calls: int, block: int = 25
                  ) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int], list[float]]:
    """Per side: the proxy's and the upstream's CPU per call for each round; calls that failed; load per round."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    proxy: dict[str, list[float]] = {name: [] for name in sides}
    upstream: dict[str, list[float]] = {name: [] for name in sides}
    failed = dict.fromkeys(sides, 0)
    loads: list[float] = []
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, (url, headers, _pid, _up) in sides.items():
            http = await stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=30))
            read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=http))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await session.list_tools()
            sessions[name] = session

        async def send(name: str, tag: str, n: int, first: int = 0) -> int:
            bad = 0
            for i in range(first, first + n):
                if i % 2:
                    r = await sessions[name].call_tool("refund", {"order_id": f"A{tag}{i}", "amount": 10.5})
                else:
                    r = await sessions[name].call_tool("lookup", {"order_id": f"A{tag}{i}"})
                bad += bool(r.isError)
            return bad
        for name in sides:
            await send(name, "warm", 50)  # imports, compiled schemas, open log files
        block = max(1, min(block, calls))
        for rnd in range(rounds):
            spent = {name: [0.0, 0.0] for name in sides}
            for b, first in enumerate(range(0, calls, block)):
                n = min(block, calls - first)
                order = list(sides) if (rnd + b) % 2 == 0 else list(sides)[::-1]  # ABBA, block by block
                for name in order:
                    _url, _headers, pid, up = sides[name]
                    p0, u0 = cpu_now(pid), cpu_now(up)
                    failed[name] += await send(name, f"{rnd}x", n, first)
                    spent[name][0] += cpu_spent(p0, cpu_now(pid))
                    spent[name][1] += cpu_spent(u0, cpu_now(up))
            for name in sides:
                proxy[name].append(spent[name][0] / calls)
                upstream[name].append(spent[name][1] / calls)
            loads.append(_load())
    return proxy, upstream, failed, loads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=12, help="rounds per side, interleaved (default: %(default)s)")
    ap.add_argument("--calls", type=int, default=200, help="calls per side per round (default: %(default)s)")
    ap.add_argument("--block", type=int, default=25,
                    help="calls a side sends before the other side's turn, within a round (default: %(default)s)")
    ns = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    (tmp / "upstream.py").write_text(UPSTREAM, encoding="utf-8")
    (tmp / "bare.py").write_text(BARE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp}"}
    py = sys.executable
    upstream = f"{py} {tmp / 'upstream.py'}"
    key = subprocess.run([py, "-m", "agentlab", "gateway", "--data", str(tmp / "data"), "keys", "create", "--name",
                          "bench"], cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.strip()
    gw_port, bare_port = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    try:
        gw = start([py, "-m", "agentlab", "gateway", "--upstream", upstream, "--port", str(gw_port), "--data",
                    str(tmp / "data"), "--logs", str(tmp / "logs"), "--per-minute", str(10**9)], gw_port,
                   tmp / "gateway.log", env)
        procs.append(gw)
        bare = start([py, str(tmp / "bare.py"), upstream, str(bare_port)], bare_port, tmp / "bare.log", env)
        procs.append(bare)
        sides = {"bare MCP pass-through": (f"http://127.0.0.1:{bare_port}/mcp", {}, bare.pid, child(bare.pid)),
                 "agentlab gateway": (f"http://127.0.0.1:{gw_port}/mcp", {"X-API-Key": key}, gw.pid, child(gw.pid))}
        proxy, up, failed, loads = asyncio.run(measure(sides, ns.rounds, ns.calls, ns.block))
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
    load = f"{min(loads):.2f}-{max(loads):.2f}"
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; {ns.rounds} rounds per side, interleaved, {ns.calls}"
          f" sequential tools/call each (lookup and refund in turn) over streamable HTTP, the sides alternating every"
          f" {ns.block} calls (ABBA); CPU from /proc (per-thread schedstat)")
    print("| side | calls | failed | proxy CPU per call (median round) | its upstream's | proxy / upstream | load |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in sides:
        p, u = statistics.median(proxy[name]), statistics.median(up[name])
        print(f"| {name} | {ns.rounds * ns.calls} | {failed[name]} | {p * 1e6:.0f} µs | {u * 1e6:.0f} µs |"
              f" {p / u:.1f}x | {load} |")
    added = [g - b for g, b in zip(proxy["agentlab gateway"], proxy["bare MCP pass-through"], strict=True)]
    med = statistics.median(added) * 1e3
    q = statistics.quantiles(added, n=4) if len(added) > 1 else added * 3
    print(f"guards added per call: {med:+.2f} ms (quartiles {q[0] * 1e3:+.2f} .. {q[2] * 1e3:+.2f} ms); gateway / "
          f"pass-through {statistics.median(proxy['agentlab gateway']) / statistics.median(proxy['bare MCP pass-through']):.2f}x")
    print(f"load average (1 min) after: {_load():.2f} on {os.cpu_count()} CPUs\n")
    print(target_line("MCP gateway guards, added per call over a bare MCP pass-through", f"{med:+.2f} ms",
                      f"<= +{TARGET_MS:.0f} ms", med <= TARGET_MS + 1e-9 and not any(failed.values()),
                      statistics.median(loads)))


if __name__ == "__main__":
    main()
