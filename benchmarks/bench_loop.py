"""What does the guarded loop add per tool call, against the naive loop?

A scripted model asks for N tool calls, one per turn, all valid; the tools are
trivial, so the difference between the loops is the guards themselves:
validation, canonical keys and the repeated-call ledger, the idempotency claim,
the timeout, traces and telemetry. Every guard is on (the default GuardConfig).
Measured with the in-memory and the SQLite store, for a read-only tool and for a
keyed side-effect tool (claimed and finished under its idempotency key).

CPU time, not wall time (``time.process_time``: every thread of this process, so a
worker thread's hand-off is counted), and the sides are interleaved: each round runs
the naive loop, then every guarded variant, on fresh keys, and the figure is the
median over rounds of (guarded - naive) of the same round. A loaded machine slows
both sides of a round alike, so the difference holds where wall-clock best-of-3
reported negative overheads.

Run: python run.py bench   (or: python benchmarks/bench_loop.py [rounds])
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab import Registry, Tool  # noqa: E402
from agentlab.guards import GuardConfig  # noqa: E402
from agentlab.loop import run_guarded  # noqa: E402
from agentlab.models import call, say, tool_calls  # noqa: E402
from agentlab.naive import run_naive  # noqa: E402
from agentlab.store import MemoryStore, SQLiteStore  # noqa: E402

RUNS, CALLS = 100, 5  # short runs, as real ones are: 5 tool calls then an answer
N = RUNS * CALLS  # tool calls per side per round
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
TARGETS = {"lookup": 60.0, "refund": 120.0}  # µs added per call, SQLite store, every guard on
SCHEMA = {"type": "object", "properties": {
    "order_id": {"type": "string", "pattern": r"^A\d+$", "description": "Order number, like A1001."},
    "amount": {"type": "number", "exclusiveMinimum": 0, "description": "Amount in yuan, e.g. 10."},
    "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock", "price_error"], "description": "Why."}},
    "required": ["order_id", "amount", "reason"], "additionalProperties": False}


def registry() -> Registry:
    return Registry([
        Tool("lookup", "Look up an order. Use it first.", SCHEMA, fn=lambda **a: {"ok": 1}),
        Tool("refund", "Refund an order. Use after lookup.", SCHEMA, fn=lambda idempotency_key=None, **a: {"refund": 1},
             side_effect=True, keyed=True),
    ])


class Replay:
    """A model that only replays (no recording), so the loops are what is measured."""

    name = "replay"

    def __init__(self, replies):
        self.replies, self.i = replies, 0

    def complete(self, messages, tools):
        self.i += 1
        return self.replies[self.i - 1]


def scripts(tool: str, tag: str) -> list[list]:
    """RUNS scripts of CALLS valid calls; ``tag`` makes every order id (and so every key) new."""
    return [[tool_calls(call(tool, {"order_id": f"A{tag}{r:04d}{i}", "amount": 10.5, "reason": "user_cancel"}))
             for i in range(CALLS)] + [say("done")] for r in range(RUNS)]


def cpu_per_call(one_run, batch: list[list]) -> float:
    """CPU microseconds per tool call for one batch of runs."""
    models = [Replay(s) for s in batch]
    t0 = time.process_time()
    for m in models:
        one_run(m)
    return (time.process_time() - t0) / N * 1e6


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def main() -> None:
    load0 = _load()
    reg = registry()
    tmp = tempfile.TemporaryDirectory()
    sides = {
        "naive": lambda m: run_naive(m, reg, "x"),
        "guarded, memory store": (lambda store: lambda m: run_guarded(m, reg, "x", config=GuardConfig(),
                                                                       store=store))(MemoryStore()),
        "guarded, SQLite file": (lambda store: lambda m: run_guarded(m, reg, "x", config=GuardConfig(),
                                                                      store=store))(SQLiteStore(Path(tmp.name) / "a.db")),
    }
    print(f"CPU per tool call (time.process_time): {ROUNDS} interleaved rounds of {RUNS} runs x {CALLS} valid calls"
          f" a side; every guard on (GuardConfig(): validation, idempotency, repeat breaker, step budget,"
          f" 5 s timeout, run deadline, trace)")
    cost: dict[tuple[str, str], list[float]] = {}
    for rnd in range(1 + ROUNDS):  # round 0 warms the caches and is not counted
        for tool in ("lookup", "refund"):
            for label, one_run in sides.items():
                us = cpu_per_call(one_run, scripts(tool, f"{rnd}{len(label)}"))
                if rnd:
                    cost.setdefault((label, tool), []).append(us)
    met = True
    for tool in ("lookup", "refund"):
        naive = cost[("naive", tool)]
        print(f"  {tool:6s} naive loop                 {statistics.median(naive):7.1f} us")
        for label in sides:
            if label == "naive":
                continue
            mine = cost[(label, tool)]
            added = [g - n for g, n in zip(mine, naive, strict=True)]  # the same round: the same load
            q = statistics.quantiles(added, n=4) if len(added) > 1 else added * 3
            line = (f"  {tool:6s} {label:26s} {statistics.median(mine):7.1f} us   added {statistics.median(added):6.1f} us"
                    f" (quartiles {q[0]:.1f} .. {q[2]:.1f}), {statistics.median(mine) / statistics.median(naive):.2f}x")
            if label.endswith("SQLite file"):
                ok = statistics.median(added) <= TARGETS[tool]
                met &= ok
                line += f"   target <= {TARGETS[tool]:.0f} us: {'met' if ok else 'MISSED'}"
            print(line)
    print(f"  targets (SQLite, every guard on): {'met' if met else 'MISSED'}")
    print(f"  load average (1 min) before / after: {load0:.1f} / {_load():.1f} on {os.cpu_count()} CPUs"
          " (a busy machine inflates the guarded side most: each write's thread hand-off lets other processes run)")
    tmp.cleanup()


if __name__ == "__main__":
    main()
