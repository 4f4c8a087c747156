"""``review --logs`` CPU against the least any reader of the same file does: a plain ``json.loads`` of every line.

Per format (openai chat-completions JSONL, agentlab telemetry, OTLP JSON spans), one generated file each
(``bench_review_memory.generate``: the after-sales tools offered on every openai line, one long telemetry run with
repeated, broken and failed calls, the same run as spans), reviewed whole by ``review_logs`` (what
``python -m agentlab review --logs FILE`` runs, less writing the report) and read by the plain pass, interleaved in
one run (the sides take turns, their order rotating round by round, so a loaded machine slows them alike), CPU time
(``time.process_time``), the median over rounds of each round's ratio. Target: at most 3x the plain pass. Memory
is ``bench_review_memory.py``'s (peak at two sizes, each in a process of its own).

The plain pass decodes every line whole. The review reads JSON with orjson wherever it gives what json gives
(``agentlab.jsonutil.quick_loads``); the same plain pass with orjson is printed beside, for reference: the review's cost
over the fastest plain reading of the file, not the target's baseline. The review does not decode again a tools list whose text it met on an
earlier line (``logs.read_logs(shared_tools=True)``: on the openai file, two thirds of each line), and checks a call
it has checked before (the same tool, the same arguments text) once: this file repeats one tools list, as a log of
one product does; three calls in four name a new order (or break off at a place of their own), as its users do, and
the fourth looks one of 97 orders up again, as a run that loops does: the cache helps with that quarter only. Below
about 8,000 rows the whole file's arguments stay in the process's caches from one round to the next: the default is
20,000.

Run: python benchmarks/bench_review.py [--rows 20000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from bench_review_memory import FORMATS, generate  # noqa: E402

from agentlab.evals.log_review import review_logs  # noqa: E402

TARGET = 3.0


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def plain(path: Path, loads=json.loads) -> int:
    """What any reader of the file does at the least: every line parsed, nothing looked at. ``loads=orjson.loads``:
    the same pass with orjson, the reader the review itself uses where it reads as json does, for reference (the
    review's cost over the fastest plain reading), not the target's baseline."""
    n = 0
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                loads(line)
                n += 1
    return n


def cpu(fn, *args) -> float:
    started = time.process_time()
    fn(*args)
    return time.process_time() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000, help="rows (telemetry, otel); openai has a tenth as many lines")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for fmt in FORMATS:
            files[fmt] = Path(tmp) / f"{fmt}.jsonl"
            generate(files[fmt], fmt, a.rows // 10 if fmt == "openai" else a.rows)
        times: dict[str, dict[str, list[float]]] = {fmt: {"plain": [], "orjson": [], "review": []} for fmt in FORMATS}
        loads = []
        review_logs(files["openai"], "openai")  # imports and first compiles out of the first round
        for k in range(a.rounds):
            for fmt in FORMATS:
                sides = [("plain", lambda p=files[fmt]: plain(p)), ("orjson", lambda p=files[fmt]: plain(p, orjson.loads)),
                         ("review", lambda p=files[fmt], f=fmt: review_logs(p, f))]
                for side, fn in sides[k % 3:] + sides[:k % 3]:  # the order rotates from round to round
                    times[fmt][side].append(cpu(fn))
            loads.append(load())
        print(f"review --logs vs a plain json.loads pass over the same file, CPU seconds (time.process_time), "
              f"{a.rounds} interleaved rounds, medians (ratio: the median of each round's ratio); "
              f"load {min(loads):.2f}-{max(loads):.2f}")
        print(f"  {'format':<10} {'lines':>8} {'file MB':>8} {'plain s':>8} {'review s':>9} {'ratio':>7} {'p90':>6}"
              f" {'orjson pass s':>14} {'review / orjson pass':>21}")
        ratios = {}
        for fmt in FORMATS:
            t = times[fmt]
            per = sorted(r / p for r, p in zip(t["review"], t["plain"], strict=True) if p > 0)
            ratios[fmt] = statistics.median(per)
            lines = sum(1 for _ in files[fmt].open("rb"))
            over_orjson = statistics.median(r / o for r, o in zip(t["review"], t["orjson"], strict=True) if o > 0)
            print(f"  {fmt:<10} {lines:>8} {files[fmt].stat().st_size / 1e6:>8.1f} {statistics.median(t['plain']):>8.3f} "
                  f"{statistics.median(t['review']):>9.3f} {ratios[fmt]:>6.2f}x {per[min(len(per) - 1, int(0.9 * len(per)))]:>5.2f}x"
                  f" {statistics.median(t['orjson']):>14.3f} {over_orjson:>20.2f}x")
    for fmt in FORMATS:
        met = "yes" if ratios[fmt] <= TARGET else "no"
        print(f"target | review --logs vs a plain json.loads pass, {fmt} | {ratios[fmt]:.2f}x | <= {TARGET:.2f}x | {met} "
              f"| load {load():.2f}")


if __name__ == "__main__":
    main()
