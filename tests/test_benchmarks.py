"""The benchmarks still run and still print their baselines (their figures are never asserted: they are measured
by ``python run.py bench``, README.md#benchmarks). Each runs here with the smallest round counts it takes."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

CJK = re.compile(r"[\u4e00-\u9fff]")

pytestmark = pytest.mark.timeout(180)


def bench(*args: str) -> str:
    out = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=150,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_bench_loop_reports_both_baselines_and_every_store():
    out = bench("benchmarks/bench_loop.py", "1", "--runs", "2")
    for tool in ("lookup", "refund"):
        for row in ("plain tutorial loop", "agentlab naive loop", "guarded, memory store", "guarded, SQLite file"):
            assert any(line.split()[:1] == [tool] and row in line and "load" in line for line in out.splitlines()), (tool, row)
    # a real redis-server, or the reason there is none
    assert "guarded, Redis store" in out
    assert ("Redis store: skipped (" in out) or ("x plain" in out.split("guarded, Redis store", 1)[1].splitlines()[0])
    targets = [line.split(" | ") for line in out.splitlines() if line.startswith("target | ")]
    assert len(targets) == (2 if "Redis store: skipped (" in out else 3), out
    assert_target_rows(out)
    if "Redis store: skipped (" not in out:  # the keyed write's row says what redis-server spent besides
        assert "redis-server +" in targets[-1][2] and targets[-1][1].startswith("Redis store (appendfsync always)"), targets
        assert "round trips a write adds" in targets[-1][2], targets


def test_bench_validation_section_4_draws_fresh_misspellings_and_reports_medians():
    out = bench("benchmarks/bench_validation.py", "errors", "2")
    assert "fresh misspelling" in out and "median / p90" in out
    for case in ("book_expense_record + typo", "500 fields, one misspelt", "500 fields, one unknown"):
        assert any(line.strip().startswith(case) and "load" in line for line in out.splitlines()), case
    assert_target_rows(out, "error path, never-seen name, 500 fields, vs jsonschema")


def assert_target_rows(out: str, *what: str) -> None:
    """The benchmark ends with its target rows, one per target, as run.py bench gathers them:
    ``target | what | measured | target | yes/no | load <1-min load average>``."""
    rows = [[c.strip() for c in line.split("|")] for line in out.splitlines() if line.startswith("target |")]
    assert rows and out.rstrip().splitlines()[-1].startswith("target |"), out[-500:]
    for cells in rows:
        assert len(cells) == 6 and cells[4] in ("yes", "no"), cells
        assert cells[5].startswith("load ") and float(cells[5].removeprefix("load ")) >= 0, cells
    for w in what:
        assert any(cells[1] == w for cells in rows), (w, rows)
    import run  # python run.py bench --lang zh: every row's words in Chinese (the figures as measured)
    for line in out.splitlines():
        row = run.target_row(line)  # the cells as run.py bench's table holds them
        if row is None:
            continue
        what, measured = row[0], row[1]
        assert CJK.search(run.bench_text(what, "zh", "what")), f"no Chinese for {what!r} (data/i18n run.bench.what.*)"
        if re.search(r"[a-z]{3,}", re.sub(r"µs|MB|ms|x\b", "", measured)):
            assert CJK.search(run.bench_text(measured, "zh", "measured")), measured


def test_bench_eval_interleaves_concurrency_1_and_8():
    # a model reply of 50 ms, not 200: the same turns, a quarter of the test's waiting
    out = bench("benchmarks/bench_eval.py", "--rounds", "1", "--trials", "1", "--delay", "0.05")
    assert "1 interleaved rounds" in out and "concurrency 1:" in out and "concurrency 8:" in out and "load" in out
    assert "50 ms per reply" in out


def test_bench_review_compares_every_format_with_a_plain_json_pass():
    out = bench("benchmarks/bench_review.py", "--rows", "2000", "--rounds", "1")
    assert "interleaved rounds" in out and "load" in out
    assert_target_rows(out, *(f"review --logs vs a plain json.loads pass, {fmt}" for fmt in ("openai", "telemetry", "otel")))


def test_bench_review_memory_gives_a_flat_memory_row_per_format():
    out = bench("benchmarks/bench_review_memory.py", "--rows", "20000")
    assert_target_rows(out, *(f"review --logs memory flat, {fmt}, {small} -> {big} rows"
                              for fmt, small, big in (("openai", 200, 2000), ("telemetry", 2000, 20000), ("otel", 2000, 20000))))


def test_bench_adapters_measures_each_frameworks_added_cost_per_tool_call():
    pytest.importorskip("pydantic_ai")
    out = bench("benchmarks/bench_adapters.py", "--no-faults", "--rounds", "1", "--runs", "1")
    assert "interleaved rounds" in out and "load average" in out
    assert_target_rows(out, *(f"adapter {loop}, {tool}, added per tool call (claims in memory)"
                              for loop in ("pydantic-ai run_sync", "openai-agents run_sync", "langgraph invoke",
                                           "langgraph ainvoke") for tool in ("lookup", "refund")))
    assert all(line.split(" | ")[3] == "<= +150 us" for line in out.splitlines() if line.startswith("target |"))
    # each loop's row also gives the floor (a ten-line wrapper in the same loop) and the adapter over it
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ") and " µs |" in line]
    assert len(rows) == 8 and all(len(r) == 8 and r[5].endswith(" µs") and r[6].endswith(" µs") for r in rows), rows
    assert "caches flushed before each call" in out and "The ten-line wrapper alone: warm lookup" in out


def test_run_bench_in_chinese_hands_the_language_to_each_benchmark_that_takes_one(tmp_path):
    """python run.py bench --lang zh: the table of targets in Chinese, and a benchmark with tables of its own in words
    (bench_adapters' faults) is asked for them in Chinese too; one without a --lang option gets nothing it would
    refuse."""
    import run
    assert run.bench_args(ROOT / "benchmarks" / "bench_adapters.py", "zh", ["--rounds", "1"]) == \
        ["--rounds", "1", "--lang", "zh"]
    assert run.bench_args(ROOT / "benchmarks" / "bench_site.py", "zh", ["--quick"]) == ["--quick"]
    assert run.bench_args(ROOT / "benchmarks" / "bench_adapters.py", "en", []) == []
    fake = tmp_path / "bench_fake.py"  # what the benchmark is handed, through run.py's own runner
    fake.write_text("import argparse\nap = argparse.ArgumentParser()\nap.add_argument(\"--lang\", default=\"en\")\n"
                    "print(f\"target | lang {ap.parse_args().lang} | 1x | <= 2x | yes | load 0.5\")\n")
    rows: list[list[str]] = []
    assert run._bench(Path(sys.executable), fake, run.bench_args(fake, "zh", []), rows) == 0
    assert rows == [["bench_fake.py", "lang zh", "1x", "≤ 2x", "yes", "0.5"]]


def test_the_adapters_floor_is_a_wrapper_each_framework_reads_as_the_tool_itself():
    """The floor side of bench_adapters runs each tool behind a hand-written wrapper: a repeated call is answered from
    its dict (the tool runs once), and each framework makes the same tool of it as of the bare function."""
    import inspect
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_adapters
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    plain, wrapped = bench_adapters.plain_tools(), bench_adapters.wrapped_tools()
    assert [inspect.signature(f) for f in wrapped] == [inspect.signature(f) for f in plain]
    refund = wrapped[1]
    first = refund("A1", amount=10.5)
    assert refund("A1", amount=10.5) is first and refund(order_id="A2", amount=1.0) is not first
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.toolsets import FunctionToolset

    def schemas(tools):
        return {name: t.function_schema.json_schema for name, t in FunctionToolset(tools).tools.items()}
    assert schemas(wrapped) == schemas(plain)
    from agents import function_tool
    assert [function_tool(f).params_json_schema for f in wrapped] == [function_tool(f).params_json_schema for f in plain]
    from langchain_core.tools import tool as langchain_tool
    assert [langchain_tool(f).tool_call_schema.model_json_schema() for f in wrapped] == \
        [langchain_tool(f).tool_call_schema.model_json_schema() for f in plain]


def test_bench_gateway_measures_the_guards_against_a_bare_mcp_pass_through():
    pytest.importorskip("mcp")
    out = bench("benchmarks/bench_gateway.py", "--rounds", "1", "--calls", "10")
    assert "bare MCP pass-through" in out and "agentlab gateway" in out and "| 0 |" in out  # none failed
    assert_target_rows(out, "MCP gateway guards, added per call over a bare MCP pass-through")


def test_bench_site_measures_reads_on_sqlite_and_redis_and_a_keyed_write_against_fair_bare_endpoints(tmp_path):
    """With --against, another checkout's sites are more sides of the same rounds (here a copy of this one's
    package, as a worktree of an earlier commit would be), each row against the same bare endpoint; the targets
    stay this checkout's."""
    import shutil
    other = tmp_path / "before"
    shutil.copytree(ROOT / "agentlab", other / "agentlab", ignore=shutil.ignore_patterns("__pycache__"))
    (other / "data").symlink_to(ROOT / "data")  # the desks' data, read from the checkout's root
    out = bench("benchmarks/bench_site.py", "--quick", "--against", str(other))
    for row in ("| bare FastAPI |", "| site, SQLite |", "| bare FastAPI keeping the key |", "| site keyed write, SQLite |",
                "| site, SQLite (before) |", "| site keyed write, SQLite (before) |"):
        assert row in out, row
    assert "| site, Redis (+ redis-server) |" in out or "site on Redis: skipped (" in out
    if "| site, Redis (+ redis-server) |" in out:
        assert "| site, Redis (+ redis-server) (before) |" in out and "where a Redis read's script goes" in out
    targets = [line for line in out.splitlines() if line.startswith("target | ")]
    assert len(targets) == (3 if "| site, Redis" in out else 2), out
    # a new process for every server each round (--quick: 2 rounds): bare, the site, the other checkout's site, and
    # the two Redis sites where there is a redis-server
    servers = 5 if "| site, Redis" in out else 3
    assert f"; {2 * servers} server processes, a new one for each server each round" in out, out
    assert_target_rows(out)
