"""tool_choice on the local models: what auto, required, none and a named tool do to a real small model.

Each of a few bookkeeping asks runs once per setting through the guarded loop (step budget 3), with
the setting sent to the server for every turn (the OpenAI adapter passes ``tool_choice`` on) and enforced
by the loop. Every model turn is recorded to ``data/cassettes/expense-tool-choice-<size>.jsonl``
(labelled ``<ask id>/<setting>``) so notebook 13 shows it offline, and a table is printed.

Run: python benchmarks/bench_tool_choice_local.py [--sizes 0.5b 1.5b]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.evals.tool_choice_eval import ASKS, CHOICES, choice_cassette, run_choice, summary  # noqa: E402
from agentlab.models.cassette import RecordingModel  # noqa: E402
from agentlab.models.local import LocalServer, what_is_missing  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402


class ServerSafe:
    """Sends ``auto`` and ``none`` on to the server, and keeps ``required`` and a named tool to the loop.

    Measured on 2026-11-30: the local llama.cpp server (xllamacpp) crashes on ``tool_choice="required"`` with
    the bookkeeping tools, and every later request fails. The loop enforces every setting for any model anyway
    (it narrows the tools shown, refuses other calls, re-asks words), so that is what is measured for those two.
    """

    def __init__(self, inner: OpenAIModel):
        self.inner, self.name = inner, inner.name

    def complete(self, messages: list[dict], tools: list[dict], tool_choice: object = None):
        if tool_choice in ("auto", "none"):
            return self.inner.complete(messages, tools, tool_choice=tool_choice)
        return self.inner.complete(messages, tools)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"])
    ns = ap.parse_args()
    for size in ns.sizes:
        missing = what_is_missing(size)
        if missing:
            print(f"{size}: skipped ({missing})")
            continue
        out = choice_cassette(size)
        out.unlink(missing_ok=True)
        t0 = time.perf_counter()
        with LocalServer(size) as server:
            rows = []
            for ask_id in ASKS:
                for choice in CHOICES:
                    inner = OpenAIModel(f"qwen2.5-coder-{size}", base_url=server.base_url, max_tokens=200, timeout=900,
                                        retry=None)
                    run = run_choice(RecordingModel(ServerSafe(inner), out, label=f"{ask_id}/{choice}"), ask_id, choice)
                    rows.append(summary(ask_id, choice, run))
                    print(f"  {size} {ask_id:14s} {choice:24s} {rows[-1]}", flush=True)
        print(f"{size}: {len(rows)} runs in {time.perf_counter() - t0:.0f} s -> {out.relative_to(ROOT)}")
        from agentlab.models.cassette import read_cassette
        failed = [e["label"] for e in read_cassette(out) if "error" in e and not e["error"].get("unparsable")]
        if failed:  # a recording of a server that was down says nothing about the model: do not keep it
            out.unlink()
            raise SystemExit(f"{size}: the server failed on {len(failed)} turns ({failed[:3]}); nothing kept")


if __name__ == "__main__":
    main()
