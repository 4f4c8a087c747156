"""The subcommands behind ``python -m agentlab`` beyond check-args and lint (demo, local, eval).

Each is ``name -> (help, configure(parser), run(namespace) -> exit code)`` in :data:`EXTRA`;
``cli.py`` builds its parser from that table. Heavy imports happen inside each command.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

__all__ = ["EXTRA"]



def _demo_configure(p: argparse.ArgumentParser) -> None:
    from .models.faults import FAULTS
    p.add_argument("--fault", choices=sorted(FAULTS), help="inject this fault (default: seed 000's orderId demo)")
    p.add_argument("--step", type=int, default=2, help="model turn at which a model fault is injected")
    p.add_argument("--lang", choices=("en", "zh"), default="en")


def _demo(ns: argparse.Namespace) -> int:
    from .models.faults import FAULTS
    from .workbook.demo import compare_loops, trace_text
    c = compare_loops(ns.fault, at_step=ns.step, lang=ns.lang)
    title = FAULTS[ns.fault].describe(ns.lang) if ns.fault else "seed 000: orderId -> INVALID_ARGS -> order_id"
    print(f"== {title}\n")
    for run in (c.naive, c.guarded):
        print(trace_text(run))
        print()
    print(f"{'loop':8} {'status':27} {'steps':>5} {'invalid':>7} {'refunds':>7}  reason")
    for row in c.table():
        print(f"{row['loop']:8} {row['status']:27} {row['steps']:>5} {row['invalid calls']:>7} {row['refunds']:>7}  {row['reason']}")
    return 0




def _local_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", choices=("0.5b", "1.5b"), default="0.5b")
    p.add_argument("--gguf", help="use this GGUF file instead of the packaged weights")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=4096)


def _local(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from .models.local import serve, weights_path, what_is_missing
    if ns.gguf is None:
        missing = what_is_missing(ns.size)
        if missing:
            print(f"error: {missing}", flush=True)
            return 2
    gguf = Path(ns.gguf) if ns.gguf else weights_path(ns.size)
    serve(gguf, port=ns.port, threads=ns.threads, ctx=ns.ctx)
    return 0




def _eval_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", required=True, help="JSONL file of cases (e.g. data/aftersales_cases.jsonl)")
    p.add_argument("--model", choices=("fake", "local", "replay", "openai"), default="fake")
    p.add_argument("--loop", choices=("naive", "guarded"), default="guarded")
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--cassette", help="for --model replay: the recording to play (default: the 0.5b one)")
    p.add_argument("--size", choices=("0.5b", "1.5b"), default="0.5b", help="for --model local")
    p.add_argument("--out", default="runs", help="directory where the run is stored")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")


def _eval(ns: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from .evals import failure_breakdown, layers, load_cases, pass_hat_k, run_suite, save_results, summarize
    from .resources import data_file
    cases = load_cases(ns.suite)
    server = None
    factory = None
    if ns.model == "replay":
        from .models.cassette import CassetteModel
        tape = Path(ns.cassette) if ns.cassette else data_file("cassettes/aftersales-0.5b.jsonl")
        factory = lambda case, trial: CassetteModel(tape, f"{case.id}/{ns.loop}", then="(no more replies)")  # noqa: E731
    elif ns.model == "openai":
        from .models.openai_model import OpenAIModel
        factory = lambda case, trial: OpenAIModel()  # noqa: E731
    elif ns.model == "local":
        from .models.local import LocalServer, what_is_missing
        from .models.openai_model import OpenAIModel
        missing = what_is_missing(ns.size)
        if missing:
            print(f"error: {missing}", file=sys.stderr)
            return 2
        server = LocalServer(ns.size).start()
        factory = lambda case, trial: OpenAIModel(f"qwen2.5-coder-{ns.size}", base_url=server.base_url,  # noqa: E731
                                                  max_tokens=256)
    try:
        results = run_suite(cases, model=factory, loop=ns.loop, trials=ns.trials, concurrency=ns.concurrency,
                            lang=ns.lang, progress=not ns.json)
    finally:
        if server is not None:
            server.stop()
    runs = [r.run for r in results]
    ok = {r.run.run_id: r.passed for r in results}
    per_case: dict[str, list[int]] = {}
    for r in results:
        per_case.setdefault(r.case_id, []).append(r.passed)
    report = {"suite": ns.suite, "model": ns.model, "loop": ns.loop, "cases": len(cases), "trials": ns.trials,
              "seed000": {k: v for k, v in summarize(runs, lambda run: ok[run.run_id]).items()},
              "layers": layers(runs, correct=lambda run: ok[run.run_id]),
              "pass^k": {k: pass_hat_k([(sum(v), len(v)) for v in per_case.values()], k) for k in range(1, ns.trials + 1)},
              "failures": failure_breakdown(runs)}
    path = save_results(results, ns.out, label=f"{ns.model}-{ns.loop}", meta={"suite": ns.suite})
    report["stored"] = str(path)
    if ns.json:
        print(json.dumps(report, ensure_ascii=False, indent=1, default=str))
        return 0
    s = report["seed000"]
    print(f"{ns.model} / {ns.loop} on {ns.suite}: {len(cases)} cases x {ns.trials} trial(s)")
    print(f"  task success rate   {s['task_success_rate']:.1%}")
    print(f"  invalid-call rate   {s['invalid_call_rate']:.1%}")
    print(f"  average steps       {s['avg_steps']:.2f}")
    print(f"  human takeover rate {s['takeover_rate']:.1%}")
    for layer, metrics in report["layers"].items():
        print(f"  [{layer}] " + ", ".join(f"{k} {v:.3g}" for k, v in metrics.items()))
    print("  pass^k " + ", ".join(f"k={k}: {v:.2f}" for k, v in report["pass^k"].items()))
    print(f"  statuses {s['statuses']}")
    print(f"  stored in {path}")
    return 0


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
EXTRA: dict[str, Command] = {
    "demo": ("naive and guarded loops side by side on the after-sales desk", _demo_configure, _demo),
    "local": ("serve a small real model on 127.0.0.1 (OpenAI-compatible, offline)", _local_configure, _local),
    "eval": ("run a suite of cases and print the metrics", _eval_configure, _eval),
}
