"""``review --logs`` memory, per log format: the peak resident memory of reviewing a large generated file, at two
sizes ten times apart, each in a subprocess of its own (one telemetry run of a million rows once took 2.1 GB).
Bounded memory shows as the same peak at both sizes; the figure counted is the growth over the interpreter with
agentlab imported, read from ``resource.getrusage`` (ru_maxrss) in the child.

* openai: one conversation per line (the after-sales tools offered on every line), a tenth as many lines as
  ``rows`` (each line is 2.8 KB: a million would be a 2.8 GB file);
* telemetry: ONE run of ``rows`` rows (tool calls, some repeated, some with a logged error), then its end row;
* otel: the same run as OTLP JSON Lines, one span per line.

Target: flat, the peak over import at the larger size at most 1.25x the smaller's plus 8 MB (the interpreter's own
allocator keeps a few MB it has touched), one target row per format.

Run: python benchmarks/bench_review_memory.py [--rows 1000000]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("openai", "telemetry", "otel")


def _row(k: int, rows: int) -> dict:
    if k == rows:
        return {"run_id": "r1", "kind": "end", "round_index": k, "final_status": "done", "timestamp": "2026-03-02T10:00:00Z"}
    # a new order on every call, as a product's log has it (a review checks a call it met before once: the same
    # few arguments texts over and over flattered it by a third), a broken one cut off at its own place; a quarter
    # of the calls look up one of 97 orders again, as a run that loops does
    args = [f'{{"order_id": "A{1000 + k}"}}', f'{{"orderId": {k}}}', f'{{"order_id": "A{k}", "amou',
            f'{{"order_id": "A{k % 97}"}}'][k % 4]
    return {"run_id": "r1", "kind": "tool", "round_index": k, "tool_name": "get_order", "args_raw": args, "exec_ok": True,
            **({"error_code": "TIMEOUT"} if k % 10 == 0 else {})}


def _span(r: dict) -> dict:
    op = {"tool": "execute_tool", "end": "invoke_agent"}[r["kind"]]
    attrs = {"gen_ai.operation.name": op, "agentlab.run_id": r["run_id"], "agentlab.round_index": r["round_index"],
             **({"gen_ai.tool.name": r["tool_name"], "gen_ai.tool.call.arguments": r["args_raw"]} if r["kind"] == "tool"
                else {"agentlab.final_status": r["final_status"]}),
             **({"agentlab.error.code": r["error_code"]} if r.get("error_code") else {})}
    kv = [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}} for k, v in attrs.items()]
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": op,
                                                          "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                                                          "attributes": kv}]}]}]}


def generate(path: Path, fmt: str, rows: int) -> None:
    with path.open("w") as f:
        if fmt == "openai":
            tools = json.loads((ROOT / "data" / "aftersales_tools.json").read_text(encoding="utf-8"))
            for k in range(rows):
                msgs = [{"role": "user", "content": f"What did I pay for A{k % 97}?"},
                        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {
                            "name": "get_order", "arguments": [f'{{"orderId": "A{1000 + k}"}}',
                                                               f'{{"order_id": "A{1000 + k}"}}'][k % 2]}}]},
                        {"role": "tool", "tool_call_id": "c", "content": "{}"}, {"role": "assistant", "content": "19.9"}]
                f.write(json.dumps({"messages": msgs, "tools": tools, "metadata": {"timestamp": "2026-03-03T10:00:00Z"}}) + "\n")
            return
        for k in range(rows + 1):
            r = _row(k, rows)
            f.write(json.dumps(_span(r) if fmt == "otel" else r) + "\n")


def child(path: str, fmt: str) -> None:
    sys.path.insert(0, str(ROOT))
    from agentlab.evals.log_review import review_logs
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    report = review_logs(path, fmt)
    cpu = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"base_kb": base, "peak_kb": peak, "cpu_s": round(cpu, 1), "runs": report["totals"]["runs"],
                      "calls": report["totals"]["tool_calls"]}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows (telemetry, otel) or lines (openai) of the larger file")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    grown_at: dict[str, list[tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'format':<10} {'rows':>9} {'file MB':>8} {'peak RSS MB':>12} {'over import MB':>15} {'CPU s':>6}")
        for fmt in a.formats.split(","):
            most = a.rows // 10 if fmt == "openai" else a.rows
            for rows in (most // 10, most):  # the same format at two sizes, one after the other
                path = Path(tmp) / f"{fmt}-{rows}.jsonl"
                generate(path, fmt, rows)
                out = subprocess.run([sys.executable, __file__, "--child", str(path), fmt], capture_output=True, text=True,
                                     check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                grown = (r["peak_kb"] - r["base_kb"]) / 1024
                grown_at.setdefault(fmt, []).append((rows, grown))
                print(f"{fmt:<10} {rows:>9} {path.stat().st_size / 1e6:>8.1f} {r['peak_kb'] / 1024:>12.1f} {grown:>15.1f} "
                      f"{r['cpu_s']:>6}", flush=True)
                path.unlink()
    one = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for fmt, ((small, at_small), (big, at_big)) in grown_at.items():
        most = 1.25 * at_small + 8
        print(f"target | review --logs memory flat, {fmt}, {small} -> {big} rows | {at_small:.1f} -> {at_big:.1f} MB over import "
              f"| <= {most:.1f} MB | {'yes' if at_big <= most else 'no'} | load {one:.2f}")


if __name__ == "__main__":
    main()
