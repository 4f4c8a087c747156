"""BFCL on the local models, three ways: single shot, the guarded loop's validate-and-reask, constrained decoding.

For each size this starts the local model, asks every question of the fixed seeded sample
(:func:`agentlab.evals.bfcl.questions`: ``--n`` per category of simple_python, multiple, parallel and
irrelevance) once through the guarded loop (label ``<id>/loop``: its first reply is the single-shot answer)
and once under the grammar (label ``<id>/constrained``), records every turn to
``data/cassettes/bfcl-<size>.jsonl``, then replays the cassette with no model running and prints the
accuracy per category and mode beside the published figure. ``--resume`` keeps what is recorded.
``--ship`` then writes ``data/bfcl/graded.json`` from the recordings and the standard sample (every size
recorded): the results notebook 18 shows on a machine without the BFCL data
(:mod:`agentlab.evals.bfcl_results`; tests/test_bfcl_results.py checks the file against a fresh grading).

Run: python benchmarks/bench_bfcl_local.py [--sizes 0.5b 1.5b] [--n 100] [--limit L] [--resume]
     python benchmarks/bench_bfcl_local.py --replay          # the table from the cassettes alone
     python benchmarks/bench_bfcl_local.py --replay --ship   # and the shipped results, graded again
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
from agentlab.evals import bfcl, bfcl_results  # noqa: E402
from agentlab.evals.bfcl_check import Untrusted, command, mend_for_resume, model_of, read_recording  # noqa: E402
from agentlab.i18n import t  # noqa: E402
from agentlab.models.cassette import RecordingModel  # noqa: E402
from agentlab.models.constrained import ConstrainedModel  # noqa: E402
from agentlab.models.local import WEIGHTS, LocalServer, what_is_missing  # noqa: E402


def table(results: dict[str, dict[str, dict[str, float]]], counts: dict[str, dict[str, int]], lang: str = "en") -> str:
    """One row per size and mode; n is each size's own count per category (a slower model may have fewer). The mean
    stands beside the published overall figure only over every category: over fewer (--categories, or a category not
    yet recorded) it said 91% beside 36.6 for simple_python alone."""
    cats = list(bfcl.CATEGORIES)
    head = "| model | mode | n per category | " + " | ".join(cats) + " | mean | published overall |"
    rule = "|---|---|---|" + "---:|" * (len(cats) + 2)
    rows = []
    for size, modes in results.items():
        n = "/".join(str(counts[size].get(c, 0)) for c in cats)
        for mode, fig in modes.items():
            cells = [f"{fig[c]:.0%}" if c in fig else "n/a" for c in cats]
            have = sum(c in fig for c in cats)
            mean = f"{fig['mean']:.0%}" if have == len(cats) else t("bfcl.check.mean_partial", lang, k=have, n=len(cats))
            rows.append(f"| {size} | {mode} | {n} | " + " | ".join(cells) + f" | {mean} | "
                        f"{bfcl.PUBLISHED.get(size, {}).get('overall', float('nan')):.1f} |")
    return "\n".join([head, rule, *rows])


def record(size: str, n: int, resume: bool, categories: list[str], limit: int | None = None) -> None:
    missing = what_is_missing(size)
    if missing:
        print(f"{size}: skipped ({missing})", flush=True)
        return
    out = bfcl.bfcl_cassette(size)
    done: set[str] = set()
    if resume and out.exists():
        # done: a conversation that replays whole; one cut short mid re-ask is asked again, its lines dropped first
        # (counted as done by its label alone, it was never asked again and the replay left it out for good)
        mend_for_resume(out)
        # a recording of another sample (another --n) is refused, not cut to this one's questions
        read_recording(out, "single", {q.id for q in bfcl.questions(n)})
        whole = bfcl.replay_attempts(out, bfcl.questions(n))
        done = {f"{a.id}/loop" for a in whole if a.mode == "reask"} | \
            {f"{a.id}/constrained" for a in whole if a.mode == "constrained"}
        mend_for_resume(out, lambda e: e["label"] in done)
    if not resume:
        out.unlink(missing_ok=True)
    # --limit: the first questions of each category's sample (a slower model's share of the same sample)
    # round robin over the categories, so that a recording cut short still covers each of them alike
    firsts = {q.id for c in categories for q in bfcl.sample_category(c, n)[:limit]}
    qs = [q for q in bfcl.recording_order(bfcl.questions(n)) if q.id in firsts]
    t_size = time.perf_counter()
    with LocalServer(size) as server:
        print(f"{size}: server up in {time.perf_counter() - t_size:.0f} s", flush=True)
        # the same prompt both ways; "free" is what the model writes (the chat endpoint would add the server's
        # own lazy grammar to every call, see agentlab.models.constrained)
        plain = ConstrainedModel(server.base_url, grammar=False, name=model_of(size), max_tokens=256)
        constrained = ConstrainedModel(server.base_url, name=f"{model_of(size)} (constrained)", max_tokens=256)
        for i, q in enumerate(qs, 1):
            got = []
            for label, model, mode in ((f"{q.id}/loop", plain, "reask"), (f"{q.id}/constrained", constrained, "constrained")):
                if label in done:
                    continue
                a = bfcl.run_question(q, mode, RecordingModel(model, out, label=label))
                got.append(f"{mode}={'ok' if a.correct else a.reason} ({a.turns})")
            print(f"  {size} {i:3d}/{len(qs)} {q.id:22s} {'; '.join(got) or 'recorded'}  "
                  f"{time.perf_counter() - t_size:.0f} s", flush=True)
    print(f"{size}: {time.perf_counter() - t_size:.0f} s in all", flush=True)


def build(lang: str) -> argparse.ArgumentParser:
    ap = Parser(prog="python benchmarks/bench_bfcl_local.py", lang=lang)
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"], choices=list(WEIGHTS))
    ap.add_argument("--n", type=positive, default=bfcl.PER_CATEGORY, help="questions per category")
    ap.add_argument("--limit", type=positive, default=None, help="record only the first L of each category's sample")
    ap.add_argument("--categories", nargs="+", default=list(bfcl.CATEGORIES), choices=list(bfcl.CATEGORIES))
    ap.add_argument("--resume", action="store_true", help="keep the cassette and skip questions already in it")
    ap.add_argument("--replay", action="store_true", help="no model: the table from the recorded cassettes")
    ap.add_argument("--ship", action="store_true",
                    help="write data/bfcl/graded.json (notebook 18's results without the datasets) from the recordings")
    ap.add_argument("--lang", choices=("en", "zh"), default=lang)
    return ap


def body(ns: argparse.Namespace, lang: str) -> int:
    if not bfcl_results.have_data():
        raise Untrusted("bfcl.check.no_data")
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {platform.system()}, n={ns.n}, seed={bfcl.SEED}", flush=True)
    results, counts = {}, {}
    for size in ns.sizes:
        if not ns.replay:
            record(size, ns.n, ns.resume, ns.categories, ns.limit)
        # held to the sample first (the categories it holds), every question but its last replayed whole
        attempts = bfcl.graded_attempts(size, ns.n, categories=ns.categories)
        results[size] = bfcl.accuracy(attempts)
        counts[size] = {c: sum(1 for a in attempts if a.category == c and a.mode == "single") for c in bfcl.CATEGORIES}
    print(table(results, counts, lang))
    if ns.ship:
        path = bfcl_results.write_shipped()
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
              f"({path.stat().st_size:,} bytes; sample: {bfcl.PER_CATEGORY} per category, seed {bfcl.SEED})")
    return 0


if __name__ == "__main__":
    sys.exit(command(build, body))
