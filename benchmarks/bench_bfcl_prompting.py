"""BFCL asked the leaderboard's own way (its prompt-mode system prompt, its decoder, its checker), raw and guarded.

For each size this starts the local model and asks every question of the fixed seeded sample
(:func:`agentlab.evals.bfcl.questions`, ``--n`` per category, taken round robin so that a recording cut short covers
every category alike) through the guarded way of :mod:`agentlab.evals.bfcl_prompting`; its first reply is the raw
one. Each reply's raw text goes to ``data/cassettes/bfcl-prompt-<size>.jsonl``; ``--replay`` decodes and grades
the recordings with no model running and prints, per category, the leaderboard's figure beside ours, with the raw
sample's 95% interval and whether the leaderboard's figure lies in it. ``--ship`` writes
``data/bfcl/prompting.json`` (what notebook 18 shows where the evaluator is not installed).

Needs the bfcl extra (``requirements-bfcl.txt``) and, to record, the local models.

Run: python benchmarks/bench_bfcl_prompting.py [--sizes 0.5b 1.5b] [--n 100] [--threads 1] [--resume]
     python benchmarks/bench_bfcl_prompting.py --replay [--ship]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.cmdline import Parser, positive  # noqa: E402
from agentlab.evals import bfcl, bfcl_official, bfcl_results  # noqa: E402
from agentlab.evals import bfcl_prompting as bp  # noqa: E402
from agentlab.evals.bfcl_check import Untrusted, command, mend_for_resume, model_of, read_recording  # noqa: E402
from agentlab.models.interface import Reply  # noqa: E402
from agentlab.models.local import WEIGHTS, LocalServer, what_is_missing  # noqa: E402


class _Writing:
    """A text model whose every reply is appended to the cassette (question id, turn, text, tokens)."""

    def __init__(self, inner: bp.TextCompletion, path: Path, qid: str):
        self.inner, self.path, self.qid, self.turn, self.name = inner, path, qid, 0, inner.name

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        reply = self.inner.complete(messages, tools)
        self.turn += 1
        usage = [reply.usage.prompt_tokens, reply.usage.completion_tokens] if reply.usage else None
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"id": self.qid, "model": self.name, "turn": self.turn, "text": reply.content,
                                "usage": usage}, ensure_ascii=False) + "\n")
        return reply


def record(size: str, n: int, threads: int, resume: bool) -> None:
    missing = what_is_missing(size)
    if missing:
        print(f"{size}: skipped ({missing})", flush=True)
        return
    out = bp.prompt_cassette(size)
    if resume and out.exists():
        # done: a question whose recording replays whole; a question cut short mid re-ask is asked again, its lines
        # dropped first (a replay would leave it out, raw reply and all)
        mend_for_resume(out)
        # a recording of another sample (another --n) is refused, not cut to this one's questions
        read_recording(out, "prompt", {q.id for q in bfcl.questions(n)})
        done = {a.id for a in bp.replay_prompted(out, bfcl.questions(n), strict=False) if a.way == "raw"}
        mend_for_resume(out, lambda e: e["id"] in done)
    else:
        done = set()
        out.unlink(missing_ok=True)
    qs = [q for q in bfcl.recording_order(bfcl.questions(n)) if q.id not in done]
    t0 = time.perf_counter()
    with LocalServer(size, threads=threads, ctx=8192) as server:
        for i, q in enumerate(qs, 1):
            model = _Writing(bp.TextCompletion(server.base_url, q, name=model_of(size)), out, q.id)
            a = bp.ask_prompted(q, "guarded", model)
            print(f"  {size} {i:3d}/{len(qs)} {q.id:22s} turns={a.turns} official={a.official} "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)


def table(size: str, rows: list[dict]) -> str:
    lines = [f"{size}: | category | n | leaderboard | ours raw | official raw (95% interval) | official guarded | "
             "reproduced |"]
    for r in rows:
        lb = "n/a" if r["leaderboard"] is None else f"{r['leaderboard']:.1f}"
        g = "n/a" if r["official_guarded"] is None else f"{r['official_guarded']:.1f}"
        rep = {True: "yes", False: "no", None: "n/a"}[r["reproduced"]]
        lines.append(f"  | {r['category']} | {r['n']} | {lb} | {r['ours_raw']:.1f} | {r['official_raw']:.1f} "
                     f"({r['interval'][0]:.1f}-{r['interval'][1]:.1f}) | {g} | {rep} |")
    return "\n".join(lines)


def build(lang: str) -> argparse.ArgumentParser:
    ap = Parser(prog="python benchmarks/bench_bfcl_prompting.py", lang=lang)
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"], choices=list(WEIGHTS))
    ap.add_argument("--n", type=positive, default=bfcl.PER_CATEGORY)
    ap.add_argument("--threads", type=positive, default=1)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--ship", action="store_true")
    ap.add_argument("--lang", choices=("en", "zh"), default=lang)
    return ap


def body(ns: argparse.Namespace, lang: str) -> int:
    if not bfcl_official.evaluator_installed():
        raise Untrusted("bfcl.check.no_evaluator")
    if not bfcl_results.have_data():
        raise Untrusted("bfcl.check.no_data")
    shipped = {}
    for size in ns.sizes:
        if not ns.replay:
            record(size, ns.n, ns.threads, ns.resume)
        rows = bp.prompting_figures(bp.graded_recording(size, ns.n), size)  # held to the sample first
        shipped[size] = rows
        print(table(size, rows), flush=True)
    if ns.ship:
        path = bp.write_prompting(shipped)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(command(build, body))
