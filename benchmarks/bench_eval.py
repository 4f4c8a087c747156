"""Suite throughput: how many cases a second, and what concurrency buys.

1. Concurrency against the project's own OpenAI-compatible server with a fixed delay per
   reply: a suite at concurrency 8 against concurrency 1 (target: at least 90% of the ideal 8x).
   The two take turns for several rounds (which goes first alternates), and the figures are medians:
   one run of each, one after the other, saw different loads.
2. 1,000 fake-model after-sales cases end to end with every trace stored: wall time, cases
   per second, and where the time goes (cProfile, grouped by module).

Run: python run.py bench   (or: python benchmarks/bench_eval.py [--rounds 3] [--trials 3] [--delay 0.2])
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.evals import load_cases, pass_rate, run_suite, save_results  # noqa: E402
from agentlab.models import Reply, call  # noqa: E402
from agentlab.models.fakeserver import ChatServer  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402

DELAY = 0.2
ROUNDS = 3  # interleaved rounds of concurrency 1 and 8 (about 30 s each at 200 ms a reply)


class PlanModel:
    """Stateless, so one server can answer many conversations at once: the reply depends only
    on the request (which case, from the user's words; how far along, from the tool replies)."""

    name = "plan-server"

    def __init__(self, cases):
        self.plans = {c.task: c.fake.get("plan", []) for c in cases}

    def complete(self, messages, tools):
        task = next(m["content"] for m in messages if m["role"] == "user")
        plan = self.plans.get(task, [])
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < len(plan):
            return Reply(None, (call(*plan[done]),))
        return Reply("Done.")


def serve(n_cases: int, delay: float = DELAY) -> None:
    """The model's side, in a process of its own as a real endpoint is: its CPU never competes with the
    suite's threads for one interpreter's lock. Prints its URL, serves until its input closes."""
    cases = _cases(n_cases)
    with ChatServer(model=PlanModel(cases), delay=delay) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def _cases(n: int):
    return [c for c in load_cases() if c.category == "normal" and "plan" in c.fake][:n]


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def concurrency(n_cases: int = 16, rounds: int = ROUNDS, trials: int = 3, delay: float = DELAY) -> dict[int, list[float]]:
    """Wall seconds of the suite at concurrency 1 and 8, the two taking turns for ``rounds`` rounds (the side that
    goes first alternates), and the median per side; the suite's CPU time (``time.process_time``) beside it."""
    cases = _cases(n_cases)
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(n_cases), str(delay)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    times: dict[int, list[float]] = {1: [], 8: []}
    cpu: dict[int, list[float]] = {1: [], 8: []}
    speedups, loads, turns = [], [], 0
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()

        def model(case, trial):
            return OpenAIModel("plan", base_url=url, api_key="k")
        for rnd in range(rounds):
            this: dict[int, float] = {}
            for c in ((1, 8) if rnd % 2 == 0 else (8, 1)):
                t0, c0 = time.perf_counter(), time.process_time()
                rs = run_suite(cases, model=model, concurrency=c, trials=trials)  # 48 jobs: waves pack evenly
                this[c] = time.perf_counter() - t0
                times[c].append(this[c])
                cpu[c].append(time.process_time() - c0)
                assert pass_rate(rs) == 1.0, [r.failures for r in rs if not r.passed]
                turns = sum(r.run.steps for r in rs)
            speedups.append(this[1] / this[8])
            loads.append(_load())
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=30)
    med = {c: statistics.median(v) for c, v in times.items()}
    speedup = statistics.median(speedups)  # each round's own ratio: both sides under that round's load
    print(f"suite of {len(cases)} cases x {trials} trials ({turns} model turns, {delay * 1000:.0f} ms per reply, the model "
          f"server in its own process), {rounds} interleaved rounds (concurrency 1 and 8 take turns), medians:")
    print(f"  concurrency 1: {med[1]:.2f} s   concurrency 8: {med[8]:.2f} s   speed-up {speedup:.2f}x "
          f"(rounds {min(speedups):.2f}..{max(speedups):.2f}) = {speedup / 8:.0%} of the ideal 8x (target 90%: "
          f"{'met' if speedup >= 7.2 else 'MISSED'}); the suite's CPU {statistics.median(cpu[1]):.2f} s and "
          f"{statistics.median(cpu[8]):.2f} s   load {min(loads):.1f}-{max(loads):.1f}")
    return times


def thousand() -> None:
    cases = load_cases()
    n_trials = 20  # 50 cases x 20 = 1,000
    prof = cProfile.Profile()
    with tempfile.TemporaryDirectory() as d:
        t0, c0 = time.perf_counter(), time.process_time()
        prof.enable()
        rs = run_suite(cases, trials=n_trials)
        t_run = time.perf_counter() - t0
        path = save_results(rs, d, label="bench")
        prof.disable()
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        size = sum(f.stat().st_size for f in path.iterdir())
    print(f"{len(rs)} fake after-sales cases, traces stored: {total:.2f} s wall ({len(rs) / total:.0f} cases/s), "
          f"{cpu:.2f} s CPU; running {t_run:.2f} s, storing {total - t_run:.2f} s ({size / 1e6:.1f} MB)   "
          f"load {_load():.1f}")
    by_module: dict[str, float] = defaultdict(float)
    stats = pstats.Stats(prof)
    for (file, _, _), (_, _, tt, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        key = Path(file).name if file not in ("~",) else "builtins"
        by_module[key] += tt
    top = sorted(by_module.items(), key=lambda kv: -kv[1])[:10]
    print("  where the time goes (own time): " + ", ".join(f"{k} {v:.2f}s" for k, v in top))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), float(sys.argv[3]))
        sys.exit()
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds of concurrency 1 and 8")
    ap.add_argument("--trials", type=int, default=3, help="trials per case in each suite run (16 cases)")
    ap.add_argument("--delay", type=float, default=DELAY, help="seconds the model server takes per reply")
    ns = ap.parse_args()
    concurrency(rounds=ns.rounds, trials=ns.trials, delay=ns.delay)
    thousand()
