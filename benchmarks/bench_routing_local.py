"""Routing with real small models: all thirteen bookkeeping tools against the routed top-k (docs/guards.md#routing).

For each size (0.5B, 1.5B) this starts the local model, asks it every ask of
``data/expense_asks.jsonl`` once with all tools and once with the router's top ``k``
(the hand-over always offered, as a Conversation does), records every turn to
``data/cassettes/expense-routing-<size>.jsonl`` (labelled ``<ask id>/<all|routed>``),
prints the right-tool, invalid-call and no-call rates, tools per turn, prompt tokens
and the router's hit rate, then replays the cassette with no model running and checks
that the replay gives the same figures. Calls are not resent: an unparsable call is
counted as the model wrote it. Needs ``pip install -r requirements-local-1.5b.txt``.

The router is :func:`~agentlab.evals.routing_eval.desk_router` (the keyword router). After a change to it,
``--resume`` asks again only the turns whose offer changed (their label's digest is new), keeps every other
recorded turn, and drops the turns no longer asked. The recordings of 2026-12-02: ``--sizes 0.5b --resume`` and
``--sizes 1.5b --every 2 --resume``, one model thread each, 32 and 34 minutes on two shared cores.

Run: python benchmarks/bench_routing_local.py [--sizes 0.5b 1.5b] [--k 5] [--resume]
     python benchmarks/bench_routing_local.py --replay      # the figures from the cassettes alone
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.evals.routing_eval import (  # noqa: E402
    MODES,
    cassette_path,
    figures,
    load_asks,
    measure,
    replay,
)
from agentlab.models.cassette import CassetteModel, RecordingModel, labels  # noqa: E402
from agentlab.models.local import LocalServer, what_is_missing  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402

COLUMNS = [("right_tool_rate", "right tool", "{:.0%}"), ("invalid_call_rate", "invalid calls", "{:.0%}"),
           ("no_call_rate", "no call", "{:.0%}"), ("tools_per_turn", "tools/turn", "{:.1f}"),
           ("prompt_tokens", "prompt tokens", "{:.0f}"), ("hit_rate", "router hit", "{:.0%}"),
           ("turns", "turns", "{:.0f}")]


def row(size: str, mode: str, fig: dict[str, float]) -> str:
    cells = [fmt.format(fig[key]) if not math.isnan(fig[key]) else "n/a" for key, _, fmt in COLUMNS]
    return f"| {size} | {mode} | " + " | ".join(cells) + " |"


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    head = "| model | tools | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    rule = "|---|---|" + "---:|" * len(COLUMNS)
    return "\n".join([head, rule] + [row(size, mode, fig) for size, figs in results.items() for mode, fig in figs.items()])


def same(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


def prune(path: Path, keep: set[str]) -> int:
    """Keep in the cassette at ``path`` only the first entry of each label in ``keep``; how many were dropped.

    With --resume, turns whose offers changed (a new router) are asked again under new labels; the old
    ones would only sit in the file unread."""
    lines = path.read_text(encoding="utf-8").splitlines()
    kept, seen = [], set()
    for line in lines:
        label = json.loads(line).get("label") if line.strip() else None
        if label in keep and label not in seen:
            seen.add(label)
            kept.append(line)
    path.write_text("".join(x + "\n" for x in kept), encoding="utf-8")
    return len(lines) - len(kept)


def record(size: str, k: int, resume: bool, every: int = 1) -> dict[str, dict[str, float]] | None:
    missing = what_is_missing(size)
    if missing:
        print(f"{size}: skipped ({missing})", flush=True)
        return None
    out = cassette_path(size)
    done = set(labels(out)) if resume and out.exists() else set()
    if not resume:
        out.unlink(missing_ok=True)
    # every Nth intent, asked in both languages (a slower model's sample), one language after the other so
    # that the server reuses the shared prompt
    intents = sorted({a.id.rsplit("-", 1)[0] for a in load_asks()})[::every]
    asks = sorted((a for a in load_asks() if a.id.rsplit("-", 1)[0] in intents), key=lambda a: a.lang)
    live, asked = {}, {}
    t_size = time.perf_counter()
    with LocalServer(size) as server:
        print(f"{size}: server up in {time.perf_counter() - t_size:.0f} s ({server.base_url})", flush=True)
        inner = OpenAIModel(f"qwen2.5-coder-{size}", base_url=server.base_url, max_tokens=256, timeout=900,
                            retry=None)
        for mode in MODES:
            t0 = time.perf_counter()
            turns = []
            for i, ask in enumerate(asks, 1):
                # a turn already recorded (--resume) is replayed, the others are asked and recorded
                turn = measure(lambda label: CassetteModel(out, label) if label in done
                               else RecordingModel(inner, out, label=label), [ask], routed=mode == "routed", k=k)[0]
                turns.append(turn)
                print(f"  {size} {mode:6s} {i:2d}/{len(asks)} {ask.id:28s} -> {turn.first_call or turn.error or '-'}"
                      f"{' (invalid: ' + turn.problem + ')' if turn.problem else ''}"
                      f"{'' if turn.right_tool else '  [wrong]'}  {time.perf_counter() - t0:.0f} s", flush=True)
            asked[mode] = turns
            if turns:
                live[mode] = figures(turns)
                print(f"  {size} {mode}: {len(turns)} turns in {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{size}: {time.perf_counter() - t_size:.0f} s in all", flush=True)
    stale = prune(out, {t.label for turns in asked.values() for t in turns})
    if stale:
        print(f"{size}: dropped {stale} recorded turns no longer asked (another router's offers)", flush=True)
    replayed = {mode: figures(turns) for mode, turns in replay(out, k=k).items()}
    for mode, fig in live.items():
        assert same(fig, replayed[mode]), f"{size} {mode}: replay {replayed[mode]} != live {fig}"
    print(f"{size}: the replay gives the live figures", flush=True)
    return replayed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"])
    ap.add_argument("--k", type=int, default=5, help="tools the router offers (the hand-over included)")
    ap.add_argument("--resume", action="store_true", help="keep the cassette and skip turns already in it")
    ap.add_argument("--every", type=int, default=1, help="every Nth intent (both languages): a sample for slow models")
    ap.add_argument("--replay", action="store_true", help="no model: the figures from the recorded cassettes")
    ns = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {platform.system()}, k={ns.k}", flush=True)
    results = {}
    for size in ns.sizes:
        if ns.replay:
            path = cassette_path(size)
            if path.exists():
                results[size] = {mode: figures(turns) for mode, turns in replay(path, k=ns.k).items()}
            else:
                print(f"{size}: no cassette at {path.name}")
            continue
        got = record(size, ns.k, ns.resume, ns.every)
        if got is not None:
            results[size] = got
    print(table(results))


if __name__ == "__main__":
    main()
