"""What does the guarded loop add per tool call, against the naive loop?

A scripted model asks for N tool calls, one per turn, all valid; the tools are
trivial, so the difference between the loops is the guards themselves:
validation, canonical keys and the repeated-call ledger, the idempotency claim,
the timeout thread, traces. Measured with the in-memory and the SQLite store,
for a read-only tool and for a side-effect tool.

Run: python run.py bench   (or: python benchmarks/bench_loop.py)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab import Registry, Tool  # noqa: E402
from agentlab.guards import GuardConfig  # noqa: E402
from agentlab.loop import run_guarded  # noqa: E402
from agentlab.naive import run_naive  # noqa: E402
from agentlab.models import call, say, tool_calls  # noqa: E402
from agentlab.store import MemoryStore, SQLiteStore  # noqa: E402

RUNS, CALLS = 400, 5  # short runs, as real ones are: 5 tool calls then an answer
N = RUNS * CALLS
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


def script(tool: str, run: int, rep: int) -> list:
    return [tool_calls(call(tool, {"order_id": f"A{rep}{run:04d}{i}", "amount": 10.5, "reason": "user_cancel"}))
            for i in range(CALLS)] + [say("done")]


def timed(tool: str, one_run) -> float:
    """Best of 3 of RUNS runs; microseconds per tool call. Keys are new in every repeat."""
    best = float("inf")
    for rep in range(3):
        scripts = [script(tool, r, rep) for r in range(RUNS)]
        t0 = time.perf_counter()
        for s in scripts:
            one_run(Replay(s))
        best = min(best, time.perf_counter() - t0)
    return best / N * 1e6


def main() -> None:
    reg = registry()
    big: dict = {}
    print(f"per tool call: {RUNS} runs of {CALLS} valid calls, best of 3")
    naive = {t: timed(t, lambda m: run_naive(m, reg, "x")) for t in ("lookup", "refund")}
    for t in ("lookup", "refund"):
        print(f"  naive loop, {t:6s}                              {naive[t]:8.1f} us")
    import tempfile
    tmp = tempfile.TemporaryDirectory()
    rows = [
        ("guarded, timeout watchdog off, memory store", GuardConfig(timeout=None, **big), MemoryStore()),
        ("guarded, timeout watchdog off, SQLite file", GuardConfig(timeout=None, **big), SQLiteStore(Path(tmp.name) / "a.db")),
        ("guarded, default (5 s timeout), memory store", GuardConfig(**big), MemoryStore()),
        ("guarded, default (5 s timeout), SQLite file", GuardConfig(**big), SQLiteStore(Path(tmp.name) / "b.db")),
    ]
    added = {}
    for label, cfg, store in rows:
        for t in ("lookup", "refund"):
            us = timed(t, lambda m: run_guarded(m, reg, "x", config=cfg, store=store))
            added[(label, t)] = us - naive[t]
            print(f"  {label:46s} {t:6s} {us:8.1f} us   added {us - naive[t]:6.1f} us")
    for label in ("guarded, default (5 s timeout), memory store", "guarded, timeout watchdog off, memory store"):
        worst = max(added[(label, t)] for t in ("lookup", "refund"))
        print(f"  target: added cost under 30 us, {label}: reads {added[(label, 'lookup')]:.1f} us, "
              f"writes {added[(label, 'refund')]:.1f} us ({'met' if worst < 30 else 'MISSED for writes'})")
    print("  (with a timeout, reads run under a SIGALRM deadline in the calling thread; writes are never"
          " interrupted and run in a worker thread, whose hand-off costs ~85 us here)")
    tmp.cleanup()


if __name__ == "__main__":
    main()
