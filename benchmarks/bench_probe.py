"""The probe on many tools: CPU seconds for 10,000 generated tools, every fault category, one trial each
(the target is 300 s). The probe runs in a subprocess of its own, so the figure is its CPU time alone.

Run: python benchmarks/bench_probe.py [--tools 10000] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def specs(n: int) -> list[dict]:
    """``n`` tools of the shape a team's tools file has: a pattern, a range, an enum, a length limit, required fields."""
    return [{"type": "function", "function": {
        "name": f"update_item_{i}", "description": f"Update item {i}. Changes its amount.",
        "parameters": {"type": "object", "properties": {
            "item_id": {"type": "string", "pattern": "^I[0-9]{4}$", "description": "the item, I and 4 digits"},
            "amount": {"type": "number", "minimum": 0, "maximum": 1000, "description": "yuan, 0 to 1000"},
            "reason": {"type": "string", "enum": ["damaged", "late", "other"]},
            "note": {"type": "string", "maxLength": 50}},
            "required": ["item_id", "amount", "reason"], "additionalProperties": False}}} for i in range(n)]


def child(n: int, profile: bool) -> None:
    sys.path.insert(0, str(ROOT))
    from agentlab.evals.probe import fake_source, probe
    from agentlab.tools import load_specs
    reg = load_specs(specs(n), source="generated")
    started = time.process_time()
    prof = cProfile.Profile() if profile else None
    if prof is not None:
        prof.enable()
    report = probe(reg, fake_source(), time_limit=None, tool_time_limit=None)
    if prof is not None:
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    print(json.dumps({"tools": n, "cells": len(report["cells"]), "cpu_s": round(time.process_time() - started, 1)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.tools, a.profile)
        return
    out = subprocess.run([sys.executable, __file__, "--child", "--tools", str(a.tools)] + (["--profile"] if a.profile else []),
                         capture_output=True, text=True, check=True)
    sys.stderr.write(out.stderr)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"probe on {r['tools']} tools ({r['cells']} cells): {r['cpu_s']} s CPU (target 300 s)")


if __name__ == "__main__":
    main()
