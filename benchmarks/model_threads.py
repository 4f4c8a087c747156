"""How many threads should llama.cpp use on a machine that is busy with other work? (the shared model's default)

The hub runs the shared model beside every participant's server and kernels, and ``python -m agentlab local`` runs
it beside the learner's own notebook: the model rarely has the cores to itself. llama.cpp's threads meet at a
barrier after every layer, so one thread pre-empted by another process stalls all of them. This starts the 0.5B
model with each thread count, keeps ``busy`` other processes spinning (0, 1, then one per core), and times the
same answer as ``python run.py check --model`` does (48 tokens at temperature 0, wall time): the median of
``--repeats`` answers after one to warm up.

Run: python benchmarks/model_threads.py [--threads 1 2] [--busy 0 2] [--repeats 3]
(the figures and the rule they led to: docs/workshop.md, "The shared model's threads")
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.models.local import LocalServer, cpu_count, default_threads  # noqa: E402
from run import _model_speed  # noqa: E402


def measure(threads: int, busy: int, repeats: int) -> list[float]:
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        with LocalServer(threads=threads) as server:
            _model_speed(server.base_url, None)  # the first answer loads the weights into the page cache
            speeds = []
            for _ in range(repeats):
                speed, error = _model_speed(server.base_url, None)
                if speed is None:
                    raise RuntimeError(error)
                speeds.append(speed)
            return speeds
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def main() -> int:
    cores = cpu_count()
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=sorted({1, max(1, cores - 1), cores}))
    ap.add_argument("--busy", type=int, nargs="+", default=sorted({0, 1, cores}))
    ap.add_argument("--repeats", type=int, default=3)
    ns = ap.parse_args()
    print(f"{cores} cores; load average before: {os.getloadavg()[0]:.1f}; default_threads() = {default_threads()}")
    print("busy processes | threads | tokens/s (median) | each answer")
    for busy in ns.busy:
        for threads in ns.threads:
            speeds = measure(threads, busy, ns.repeats)
            print(f"{busy} | {threads} | {statistics.median(speeds):.1f} | {', '.join(f'{s:.1f}' for s in speeds)}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
