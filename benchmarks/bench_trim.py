"""How long does trimming a long chat take, and does it grow linearly? (context: trim_messages)

The chat trims its history before every turn, and with the model's own tokenizer every count is an HTTP
round trip, so the cost that matters is how many times ``count`` is called and how the time grows with the
history. A chat of N messages (a system prompt, then user and assistant turns of ~400 characters, every
fifth assistant turn a tool call with its reply) is trimmed to a budget that keeps about the last 20 turns.

Reported per size (1,601 and 8,000 messages): CPU seconds (best of a few runs, the sizes interleaved so
a busy machine disturbs both alike), the tokenizer calls made, and the growth against the smaller size:
5x the messages should cost about 5x (linear), not 25x (quadratic). Before the fix every dropped turn
recounted everything still kept: on this chat 1,601 messages took 14.5 s of CPU (1,426 counts of ever shorter
histories) and 8,000 took 393 s (7,292); after it, 2.5 ms and 10.8 ms, 45 counts each (one per block kept).

Run: python run.py bench   (or: python benchmarks/bench_trim.py [--repeats 3])
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.context import estimate_tokens, trim_messages  # noqa: E402

SIZES = (1_601, 8_000)
BUDGET = 4_000  # tokens: about the last 20 turns of this chat
TARGET_GROWTH = 10.0  # for 5x the messages; quadratic would be ~25x


def chat(n: int) -> list[dict]:
    """A system prompt and n - 1 more messages: user, assistant, with a tool call and its reply now and then."""
    text = ("Where is my order? It was supposed to arrive on Monday and the tracking page still says "
            "'processing'. Could you check and tell me what happened, and whether I can still cancel it? ") * 2
    messages: list[dict] = [{"role": "system", "content": "You are the after-sales assistant. " * 10}]
    turn = 0
    while len(messages) < n:
        turn += 1
        messages.append({"role": "user", "content": f"[{turn}] {text}"})
        if turn % 5 == 0 and len(messages) + 3 <= n:
            cid = f"call_{turn}"
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1001"}'}}]})
            messages.append({"role": "tool", "tool_call_id": cid, "content": '{"ok": true, "data": {"status": "shipped"}}'})
        if len(messages) < n:
            messages.append({"role": "assistant", "content": f"[{turn}] {text}"})
    return messages[:n]


class Counting:
    """estimate_tokens, counting its calls (a tokenizer behind HTTP would pay a round trip for each)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages) -> int:
        self.calls += 1
        return estimate_tokens(messages)


def measure(messages: list[dict]) -> tuple[float, int, int]:
    """CPU seconds of one trim, the tokenizer calls it made, the messages it kept."""
    counter = Counting()
    t0 = time.process_time()
    kept = trim_messages(messages, max_tokens=BUDGET, count=counter)
    return time.process_time() - t0, counter.calls, len(kept)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    chats = {n: chat(n) for n in SIZES}
    best: dict[int, float] = {n: float("inf") for n in SIZES}
    calls: dict[int, int] = {}
    kept: dict[int, int] = {}
    for _ in range(args.repeats):
        for n in SIZES:  # interleaved: a disturbance hits both sizes, not one
            seconds, calls[n], kept[n] = measure(chats[n])
            best[n] = min(best[n], seconds)
    print(f"trim_messages to {BUDGET} tokens (CPU time, best of {args.repeats}, sizes interleaved)")
    for n in SIZES:
        print(f"  {n:>6,} messages  {best[n] * 1000:9.1f} ms   {calls[n]:>6,} count() calls   kept {kept[n]}")
    small, big = SIZES
    growth = best[big] / max(best[small], 1e-3)  # a 1 ms floor absorbs timer noise
    ok = growth <= TARGET_GROWTH and all(calls[n] <= n for n in SIZES)
    print(f"  growth x{growth:.1f} for x{big / small:.1f} the messages (target: at most x{TARGET_GROWTH:.0f}; "
          f"count() at most once a message)  {'ok' if ok else 'SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
