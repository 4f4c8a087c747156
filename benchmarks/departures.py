"""The measurements behind the workbook's departures from its source articles (docs/sources.md#departures).

Each section prints the figure that decided one departure; all run offline in a few seconds.

1. Step budget: the sources give 6-8 turns (the refund desk) and 5 (the bookkeeping desk); GuardConfig's default is
   6 and both desks use 5. Runs of wandering models (``budget_sweep``) that finish at 5..8, and the shipped suites'
   success at 5, 6 and 8 with the scripted models.
2. Resends after a transient failure: one source resends an environment failure at most once, another up to
   twice; RetryPolicy's default is 2. Calls that still fail after 1 and 2 resends when each attempt fails on its
   own with probability p, through ``execute`` on a read-only tool, and the seconds waited.
3. Value cleaning ("45元" -> 45): a source cleans; GuardConfig(clean=False) by default. The
   bookkeeping suite with cleaning off and on: success, invalid calls, steps.
4. A paid read carries an idempotency key on the skill site (the source asks it of writes only): a resend after a
   lost reply, under one key, against the same skill as a plain read: how many times the handler (the bill) ran.
5. No health line for tool execution success (a source's one example, 98%): execution success
   against task success on the shipped suites, naive and guarded.
6. Task success and takeover: a source counts a success only when the run finished and its data checked, and a
   takeover for anything not finished; the workbook's headline pair counts the grader's verdict (a correct
   hand-over is a success) and hand-overs. Both pairs on the shipped suites, naive and guarded.

Run: python benchmarks/departures.py
"""
from __future__ import annotations

import functools
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab import Registry, Tool  # noqa: E402
from agentlab.calls import CallContext, execute  # noqa: E402
from agentlab.errors import ToolFailure  # noqa: E402
from agentlab.evals import load_cases, run_suite  # noqa: E402
from agentlab.evals.metrics import layers, status_counts, summarize  # noqa: E402
from agentlab.guards import GuardConfig  # noqa: E402
from agentlab.retry import RetryPolicy  # noqa: E402
from agentlab.scenarios import expense  # noqa: E402
from agentlab.store import MemoryStore  # noqa: E402
from agentlab.workbook.demo import budget_sweep  # noqa: E402

AFTERSALES = load_cases()
EXPENSE = load_cases(ROOT / "data" / "expense_cases.jsonl")


def success(rs) -> str:
    return f"{sum(r.passed for r in rs)}/{len(rs)}"


def step_budget() -> None:
    print("1. step budget")
    sweep = budget_sweep([4, 5, 6, 7, 8], runs=200)
    print("  wandering models (DistractedModel, detour 0.35, 200 seeds): finished / out of steps")
    for budget, counts in sweep.items():
        print(f"    {budget}: {counts['done']} done, {counts['budget_exhausted']} budget_exhausted")
    for name, cases in (("after-sales", AFTERSALES), ("bookkeeping", EXPENSE)):
        cells = []
        for b in (5, 6, 8):
            rs = run_suite(cases, config=GuardConfig(step_budget=b))
            steps = max(r.run.steps for r in rs)
            out = sum(r.run.status == "budget_exhausted" for r in rs)
            cells.append(f"budget {b}: {success(rs)} pass, {out} out of steps, at most {steps} turns")
        print(f"  {name} suite, scripted models, guarded: " + "; ".join(cells))


def resends() -> None:
    print("2. resends after a transient failure (read-only tool, each attempt fails on its own with probability p)")
    for p in (0.1, 0.3, 0.5):
        row = []
        for retries in (1, 2):
            rng = random.Random(7)
            waited: list[float] = []

            def flaky(order_id: str, rng: random.Random = rng, p: float = p) -> dict:
                if rng.random() < p:
                    raise ToolFailure("UNAVAILABLE", "The order service is down for a moment.")
                return {"order_id": order_id}
            tool = Tool("get_order", "Look up an order.", {"type": "object", "properties": {"order_id": {"type": "string"}}},
                        fn=flaky)
            ctx = CallContext(Registry([tool]), config=GuardConfig(retry=RetryPolicy(max_retries=retries)),
                              store=MemoryStore(), sleep=waited.append, rng=random.Random(1))
            n = 2000
            failed = sum(execute(tool, {"order_id": f"A{i}"}, ctx, key=f"k{i}").error is not None for i in range(n))
            row.append(f"{retries} resend(s): {failed / n:.1%} still fail, {sum(waited) / n:.2f} s waited per call")
        print(f"  p={p}: " + "; ".join(row))


def cleaning() -> None:
    print("3. value cleaning, the bookkeeping suite (scripted models, guarded)")
    for clean in (False, True):
        rs = run_suite(EXPENSE, config=GuardConfig(clean=clean, step_budget=expense.STEP_BUDGET))
        lay = layers([r.run for r in rs])
        invalid = summarize([r.run for r in rs])["invalid_call_rate"]  # the package's one definition, as notebook 14
        cleaned = sum(1 for r in rs for e in r.run.tool_events if "\"cleaned\"" in str(e.model_visible or ""))
        print(f"  clean={clean!s:5}: {success(rs)} pass, invalid calls {invalid:.1%}, "
              f"{lay['experience']['rounds_per_task']:.2f} turns per task, calls with a cleaned value {cleaned}")


def paid_read() -> None:
    from agentlab.site.service import SkillSite
    from agentlab.site.skills import Skill, SkillMeta
    print("4. a paid read resent after a lost reply (two identical requests)")
    charges = {"paid": 0, "query": 0}

    def handler(kind):
        def run(args, ctx):
            charges[kind] += 1
            return {"answer": 42}
        return run
    with tempfile.TemporaryDirectory() as d:
        site = SkillSite(Path(d) / "data", desks=False, extra=[
            Skill(SkillMeta("paid_search", "Paid search", "Use for a search that costs money per call.",
                            rate_class="paid"), handler("paid")),
            Skill(SkillMeta("free_search", "Search", "Use for a search.", rate_class="query"), handler("query"))])
        key, _ = site.create_key("bench")
        body = b'{"arguments": {}}'
        without = site.execute("paid_search", body, api_key=key, idempotency_key=None, session_id="s")
        for _ in range(2):
            site.execute("paid_search", body, api_key=key, idempotency_key="lost-reply-1", session_id="s")
            site.execute("free_search", body, api_key=key, idempotency_key=None, session_id="s")
    print(f"  paid, one key: the handler ran {charges['paid']}x; as a plain read (no key): {charges['query']}x; "
          f"a paid call without a key: HTTP {without.status}")


@functools.cache
def suite_runs() -> list[tuple[str, str, list]]:
    """(desk, loop, results) of both shipped suites through both loops, run once for the sections that read them."""
    return [(name, loop, run_suite(cases, loop=loop)) for name, cases in (("after-sales", AFTERSALES), ("bookkeeping", EXPENSE))
            for loop in ("naive", "guarded")]


def health() -> None:
    print("5. tool execution success against task success (scripted models)")
    for name, loop, rs in suite_runs():
        lay = layers([r.run for r in rs])
        counts = status_counts([r.run for r in rs])
        print(f"  {name:11s} {loop:7s}: execution success {lay['tool']['exec_success_rate']:.1%}, "
              f"task success {sum(r.passed for r in rs) / len(rs):.1%} (a correct hand-over counts) ({counts})")


def two_ways() -> None:
    print("6. task success and takeover, the workbook's pair and the finished-only pair (scripted models)")
    for name, loop, rs in suite_runs():
        passed = {r.run.run_id: r.passed for r in rs}
        s = summarize([r.run for r in rs], lambda run, passed=passed: passed[run.run_id])
        print(f"  {name:11s} {loop:7s}: success {s['task_success_rate']:.1%} the workbook's way, "
              f"{s['checked_success_rate']:.1%} finished and checked; takeover {s['takeover_rate']:.1%} "
              f"the workbook's way, {s['unfinished_rate']:.1%} anything not finished")


if __name__ == "__main__":
    step_budget()
    resends()
    cleaning()
    paid_read()
    health()
    two_ways()
