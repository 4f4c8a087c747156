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
import itertools
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.evals import bfcl, bfcl_results  # noqa: E402
from agentlab.models.cassette import RecordingModel, labels  # noqa: E402
from agentlab.models.constrained import ConstrainedModel  # noqa: E402
from agentlab.models.local import LocalServer, what_is_missing  # noqa: E402


def table(results: dict[str, dict[str, dict[str, float]]], counts: dict[str, dict[str, int]]) -> str:
    """One row per size and mode; n is each size's own count per category (a slower model may have fewer)."""
    cats = list(bfcl.CATEGORIES)
    head = "| model | mode | n per category | " + " | ".join(cats) + " | mean | published overall |"
    rule = "|---|---|---|" + "---:|" * (len(cats) + 2)
    rows = []
    for size, modes in results.items():
        n = "/".join(str(counts[size].get(c, 0)) for c in cats)
        for mode, fig in modes.items():
            cells = [f"{fig[c]:.0%}" if c in fig else "n/a" for c in cats]
            rows.append(f"| {size} | {mode} | {n} | " + " | ".join(cells) + f" | {fig['mean']:.0%} | "
                        f"{bfcl.PUBLISHED.get(size, {}).get('overall', float('nan')):.1f} |")
    return "\n".join([head, rule, *rows])


def record(size: str, n: int, resume: bool, categories: list[str], limit: int | None = None) -> None:
    missing = what_is_missing(size)
    if missing:
        print(f"{size}: skipped ({missing})", flush=True)
        return
    out = bfcl.bfcl_cassette(size)
    done = set(labels(out)) if resume and out.exists() else set()
    if not resume:
        out.unlink(missing_ok=True)
    # --limit: the first questions of each category's sample (a slower model's share of the same sample)
    # round robin over the categories, so that a recording cut short still covers each of them alike
    per = [bfcl.sample_category(c, n)[:limit] for c in categories]
    qs = [q for row in itertools.zip_longest(*per) for q in row if q is not None]
    t_size = time.perf_counter()
    with LocalServer(size) as server:
        print(f"{size}: server up in {time.perf_counter() - t_size:.0f} s", flush=True)
        # the same prompt both ways; "free" is what the model writes (the chat endpoint would add the server's
        # own lazy grammar to every call, see agentlab.models.constrained)
        plain = ConstrainedModel(server.base_url, grammar=False, name=f"qwen2.5-coder-{size}", max_tokens=256)
        constrained = ConstrainedModel(server.base_url, name=f"qwen2.5-coder-{size} (constrained)", max_tokens=256)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["0.5b", "1.5b"])
    ap.add_argument("--n", type=int, default=bfcl.PER_CATEGORY, help="questions per category")
    ap.add_argument("--limit", type=int, default=None, help="record only the first L of each category's sample")
    ap.add_argument("--categories", nargs="+", default=list(bfcl.CATEGORIES))
    ap.add_argument("--resume", action="store_true", help="keep the cassette and skip questions already in it")
    ap.add_argument("--replay", action="store_true", help="no model: the table from the recorded cassettes")
    ap.add_argument("--ship", action="store_true",
                    help="write data/bfcl/graded.json (notebook 18's results without the datasets) from the recordings")
    ns = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {platform.system()}, n={ns.n}, seed={bfcl.SEED}", flush=True)
    results, counts = {}, {}
    for size in ns.sizes:
        if not ns.replay:
            record(size, ns.n, ns.resume, ns.categories, ns.limit)
        path = bfcl.bfcl_cassette(size)
        if not path.exists():
            print(f"{size}: no cassette at {path.name}")
            continue
        attempts = bfcl.replay_attempts(path, bfcl.questions(ns.n, categories=ns.categories))
        results[size] = bfcl.accuracy(attempts)
        counts[size] = {c: sum(1 for a in attempts if a.category == c and a.mode == "single") for c in bfcl.CATEGORIES}
    print(table(results, counts))
    if ns.ship:
        if not bfcl_results.have_data():
            sys.exit(f"--ship needs the BFCL data in {bfcl.bfcl_dir()} (set AGENTLAB_DATASETS)")
        path = bfcl_results.write_shipped()
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
              f"({path.stat().st_size:,} bytes; sample: {bfcl.PER_CATEGORY} per category, seed {bfcl.SEED})")


if __name__ == "__main__":
    main()
