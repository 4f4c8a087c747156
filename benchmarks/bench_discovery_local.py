"""Discovery with real small models: every skill of the site against its search's top 6 (docs/site.md).

For each size this starts the local model (an 8k context: nineteen skills' specs are about 3.6k tokens),
asks it each ask of ``data/expense_asks.jsonl`` (or every Nth intent, both languages) once with all the
site's skills and once with the search's top 6, records every turn to
``data/cassettes/site-discovery-<size>.jsonl``, prints the figures, and checks that the replay with no
model running gives the same ones.

Run: python benchmarks/bench_discovery_local.py [--sizes 0.5b 1.5b] [--every 2]
     python benchmarks/bench_discovery_local.py --replay
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_routing_local import same, table  # noqa: E402

from agentlab.evals.discovery_eval import discovery_cassette, measure_discovery, replay_discovery  # noqa: E402
from agentlab.evals.routing_eval import MODES, figures, load_asks  # noqa: E402
from agentlab.models.cassette import RecordingModel  # noqa: E402
from agentlab.models.local import LocalServer, what_is_missing  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402


def record(size: str, every: int) -> dict | None:
    missing = what_is_missing(size)
    if missing:
        print(f"{size}: skipped ({missing})", flush=True)
        return None
    out = discovery_cassette(size)
    out.unlink(missing_ok=True)
    intents = sorted({a.id.rsplit("-", 1)[0] for a in load_asks()})[::every]
    asks = sorted((a for a in load_asks() if a.id.rsplit("-", 1)[0] in intents), key=lambda a: a.lang)
    live = {}
    t_size = time.perf_counter()
    with LocalServer(size, ctx=8192) as server:
        inner = OpenAIModel(f"qwen2.5-coder-{size}", base_url=server.base_url, max_tokens=256, timeout=900, retry=None)
        for mode in MODES:
            t0 = time.perf_counter()
            turns = []
            for i, ask in enumerate(asks, 1):
                turn = measure_discovery(lambda label: RecordingModel(inner, out, label=label), [ask],
                                         search=mode == "routed")[0]
                turns.append(turn)
                print(f"  {size} {mode:6s} {i:2d}/{len(asks)} {ask.id:28s} -> {turn.first_call or turn.error or '-'}"
                      f"{'' if turn.right_tool else '  [wrong]'}  {time.perf_counter() - t0:.0f} s", flush=True)
            live[mode] = figures(turns)
    print(f"{size}: {time.perf_counter() - t_size:.0f} s in all", flush=True)
    replayed = {mode: figures(turns) for mode, turns in replay_discovery(out).items()}
    for mode, fig in live.items():
        assert same(fig, replayed[mode]), f"{size} {mode}: replay {replayed[mode]} != live {fig}"
    print(f"{size}: the replay gives the live figures", flush=True)
    return replayed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"])
    ap.add_argument("--every", type=int, default=1, help="every Nth intent (both languages)")
    ap.add_argument("--replay", action="store_true", help="no model: the figures from the recorded cassettes")
    ns = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d')}, site search top 6 against all skills ('routed' = the search)", flush=True)
    results = {}
    for size in ns.sizes:
        if ns.replay:
            if discovery_cassette(size).exists():
                results[size] = {m: figures(t) for m, t in replay_discovery(discovery_cassette(size)).items()}
            continue
        got = record(size, ns.every)
        if got is not None:
            results[size] = got
    print(table(results))


if __name__ == "__main__":
    main()
