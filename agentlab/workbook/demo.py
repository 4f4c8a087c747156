"""Naive against guarded on the after-sales desk, in one call (for the CLI, notebooks and the app)."""
from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..evals.failure_classes import run_classes, runs_by_class
from ..evals.outcome import Verdict, grade, reasons_in
from ..guards import GuardConfig
from ..i18n import Lang, aside, both, columns, joined, label, pad, t
from ..loop import run_guarded
from ..models import Model, ScriptedModel, SelfCorrectingModel, Step, call, say
from ..models.faults import FAULTS, FaultyModel, inject_tool_fault
from ..naive import run_naive
from ..runs import Run
from ..scenarios import aftersales
from ..store import MemoryStore
from ..trace import crash_said, note_text

__all__ = [
    "ANSWER",
    "PLAN",
    "TASK",
    "TOOL_TARGET",
    "Comparison",
    "budget_sweep",
    "caught_by_guards",
    "classes_by_loop",
    "compare_expense",
    "compare_loops",
    "compare_retail",
    "explain",
    "guards_that_acted",
    "make_model",
    "seed_demo_model",
    "trace_text",
]

TASK = both("demo.said.order_a_arrived_too")
PLAN = (Step("get_order", {"order_id": "A1001"}),
        Step("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}))
ANSWER = both("demo.said.done_order_a_has")
# which tool a tool-side fault hits, and where a model fault lands (the refund step)
TOOL_TARGET = {"flaky_tool": "get_order", "hanging_tool": "get_order", "leaky_tool": "get_order",
               "lost_reply": "create_refund"}


def seed_demo_model(lang: Lang = "en") -> ScriptedModel:
    """The opening demo (docs/sources.md#article-000-the-refund-desk): ``orderId`` first, then ``order_id``, then the answer in step 3."""
    return ScriptedModel([call("get_order", {"orderId": "A1001"}), call("get_order", {"order_id": "A1001"}),
                          say(t("demo.said.order_a_has_not", lang))], name="scripted refund demo")


def make_model(lang: Lang = "en") -> SelfCorrectingModel:
    return SelfCorrectingModel(PLAN, ANSWER[lang], give_up=t("demo.said.sorry_i_could_not", lang))


#: what the refund task must leave behind: exactly one refund of A1001, 199 yuan, because the user cancelled
EXPECT = {"refunds": [{"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}], "tickets": 0}
#: the opening demo is a question, not a refund: it must answer and change nothing
SEED_TASK = both("demo.said.can_order_a_still")
SEED_EXPECT = {"refunds": [], "tickets": 0, "answer_contains": ["199"]}


@dataclass(frozen=True)
class Comparison:
    fault: str | None
    naive: Run
    guarded: Run
    naive_state: dict
    guarded_state: dict
    expect: Mapping[str, Any] = field(default_factory=lambda: EXPECT)
    scenario: str = "aftersales"
    injected: bool | None = None  # a model fault: did it fire in either run (None: not a model fault)
    target: str | None = None  # a tool fault: the tool it is put on (it fires only if the model calls that tool)
    at_step: int = 1
    start_state: dict | None = None  # the desk before either run: what each side wrote is its state minus this
    # how often each guard steps in on the guarded side with no fault at all (the model's own mistakes: the opening
    # demo's script writes orderId): a fault's account says which of its guards would have acted anyway
    acted_anyway: Mapping[tuple[str, tuple], int] = field(default_factory=dict)

    def written(self, lang: Lang = "en") -> tuple[list[str | None], list[str | None]]:
        """Each side's rows written (a refund, a ledger line, a changed order), table against table, None where a
        side wrote fewer: a double write is two rows facing one and a gap."""
        from .effects import written_side_by_side
        return written_side_by_side(self.start_state or {}, self.naive_state, self.guarded_state, lang)

    @property
    def naive_verdict(self) -> Verdict:
        return grade(self.expect, self.naive_state, self.naive)

    @property
    def guarded_verdict(self) -> Verdict:
        return grade(self.expect, self.guarded_state, self.guarded)

    def table(self) -> list[dict]:
        """One row per loop: what happened and what it cost."""
        rows = []
        for run, state in ((self.naive, self.naive_state), (self.guarded, self.guarded_state)):
            written = _written(state)
            rows.append({"loop": run.loop, "status": run.status, "steps": run.steps,
                         "invalid calls": run.invalid_calls, "retries": run.retries,
                         WRITTEN[self.scenario]: len(written), "amount": sum(_num(r["amount"]) for r in written),
                         "outcome": grade(self.expect, state, run).outcome, "reason": run.reason})
        return rows


#: what each desk writes, as the comparison table names it
WRITTEN = {"aftersales": "refunds", "expense": "records", "retail": "changed"}


def _written(state: Mapping[str, Any]) -> list:
    return list(state.get("refunds", state.get("records", state.get("changed", []))))


def _num(x: Any) -> float:
    return x if isinstance(x, (int, float)) else float("nan")


def compare_loops(fault: str | None = None, *, at_step: int = 2, lang: Lang = "en",
                  model: Model | Callable[[], Model] | None = None,
                  config: GuardConfig | None = None, naive_retry_everything: bool | None = None,
                  hang_seconds: float = 0.3, seed: int = 0, question: bool | None = None) -> Comparison:
    """Run the same task through both loops, each on a fresh desk and a fresh copy of the model.

    ``question``: the task is the opening demo's question about the order (answer, refund nothing), as the opening
    demo's scripted model plays it, rather than the refund; by default, only when neither a fault nor a model is given
    (the opening demo itself). A model is graded on the task it was written for: the opening demo's script graded on
    the refund always read "said done, but nothing was done"."""
    seed_demo = (fault is None and model is None) if question is None else question
    task = (SEED_TASK if seed_demo else TASK)[lang]
    runs = []
    start = aftersales.SCENARIO.setup(lang)[0].snapshot()
    faulty: list[FaultyModel] = []  # the two sides' models a model fault was put on: whether it fired, said
    # with a fault, the guarded side runs once more without it (a third, quick scripted run): what acts anyway
    for loop in ("naive", "guarded", "unfaulted") if fault else ("naive", "guarded"):
        desk, reg = aftersales.SCENARIO.setup(lang)
        injected = fault if loop != "unfaulted" else None
        if injected and FAULTS[injected].kind == "tool":
            reg = inject_tool_fault(reg, TOOL_TARGET[injected], injected, seconds=hang_seconds)
        base = model() if callable(model) else (model or (seed_demo_model(lang) if fault is None else make_model(lang)))
        m = _faulted(base, injected, at_step, faulty)
        prompt = aftersales.SYSTEM_PROMPT[lang]
        if loop == "naive":
            retry_all = fault == "lost_reply" if naive_retry_everything is None else naive_retry_everything
            run = run_naive(m, reg, task, system_prompt=prompt, retry_everything=retry_all)
        else:
            cfg = config or GuardConfig(timeout=min(0.1, hang_seconds / 3))
            run = run_guarded(m, reg, task, system_prompt=prompt, config=cfg, store=MemoryStore(),
                              sleep=lambda s: None, rng=random.Random(seed), lang=lang)
        runs.append((run, desk.snapshot()))
    (n, ns), (g, gs) = runs[:2]
    anyway = dict(guard_acts(runs[2][0])) if fault else {}
    return Comparison(fault, n, g, ns, gs, SEED_EXPECT if seed_demo else EXPECT, start_state=start,
                      acted_anyway=anyway, target=TOOL_TARGET.get(fault) if fault else None,
                      injected=any(m.injected for m in faulty) if faulty else None, at_step=at_step)


EXPENSE_TASK = both("demo.said.i_took_a_taxi")
EXPENSE_PLAN = (Step("book_expense_record", {"date": "{today}", "item": "taxi", "amount": 45, "category": "transport"}),)
EXPENSE_ANSWER = both("demo.said.booked_taxi_yuan_today")


def compare_expense(fault: str | None = None, *, at_step: int = 1, lang: Lang = "en", hang_seconds: float = 0.3,
                    seed: int = 0) -> Comparison:
    """The bookkeeping desk's first sentence ("今天坐出租车花了45元，记一笔") through both desks, on the desk's clock (2026-10-15).

    With no fault this is the date lesson: the naive prompt still says the day it was written. A model
    fault lands on the booking call; a tool fault on ``book_expense_record``."""
    from ..models import DatedModel
    from ..scenarios import expense
    from ..scenarios.conversation import Conversation
    day = expense.Ledger().today().isoformat()
    want = {"records": [{"date": day, "amount": 45, "category": "transport"}], "tickets": 0}
    runs = []
    faulty: list[FaultyModel] = []
    start = expense.SCENARIO.setup(lang)[0].snapshot()
    for loop in ("naive", "guarded"):
        state, reg = expense.SCENARIO.setup(lang)
        if fault and FAULTS[fault].kind == "tool":
            reg = inject_tool_fault(reg, "book_expense_record", fault, seconds=hang_seconds)
        base: Model = SelfCorrectingModel(EXPENSE_PLAN, EXPENSE_ANSWER[lang])
        base = _faulted(base, fault, at_step, faulty)
        cfg = GuardConfig(step_budget=expense.STEP_BUDGET, timeout=min(0.1, hang_seconds / 3))
        chat = Conversation(expense.SCENARIO, DatedModel(base), loop=loop, lang=lang, state=state, registry=reg,
                            config=cfg, sleep=lambda s: None, rng=random.Random(seed))
        run = chat.ask(EXPENSE_TASK[lang])
        if fault == "hanging_tool":
            time.sleep(hang_seconds)  # a write the loop stopped waiting for still lands: look at the ledger after it
        runs.append((run, state.snapshot()))
    (n, ns), (g, gs) = runs
    return Comparison(fault, n, g, ns, gs, want, scenario="expense",
                      injected=any(m.injected for m in faulty) if faulty else None, at_step=at_step, start_state=start,
                      target="book_expense_record" if fault and FAULTS[fault].kind == "tool" else None)


RETAIL_ORDER = "#W2974929"  # a pending order of one skateboard, paid by PayPal, in tau-bench's retail data
RETAIL_TASK = both("demo.said.please_cancel_order_retail", order=RETAIL_ORDER)
RETAIL_PLAN = (Step("get_order_details", {"order_id": RETAIL_ORDER}),
               Step("cancel_pending_order", {"order_id": RETAIL_ORDER, "reason": "ordered by mistake"}))
RETAIL_ANSWER = both("demo.said.order_retail_order_is", order=RETAIL_ORDER)  # the store's prices are dollars
RETAIL_TARGET = {"flaky_tool": "get_order_details", "hanging_tool": "get_order_details",
                 "leaky_tool": "get_order_details", "lost_reply": "cancel_pending_order"}


def _retail_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict]:
    """The store's changed records, one per record: its id and each changed field's new value (a list that grew
    by its count of new entries, e.g. ``payment_history +1``)."""
    from ..scenarios.retail import diff
    rows: dict[str, dict] = {}
    for path, (old, new) in sorted(diff(before, after).items()):
        _, _table, record, *field_path = path.split("/")
        value = f"+{len(new) - len(old)}" if isinstance(old, list) and isinstance(new, list) else new
        rows.setdefault(record, {"record_id": record})["/".join(field_path)] = value
    return list(rows.values())


def compare_retail(fault: str | None = None, *, at_step: int = 2, lang: Lang = "en", hang_seconds: float = 0.3,
                   seed: int = 0) -> Comparison:
    """tau-bench's retail store (when its data is on this machine): cancel a pending order, through both loops,
    each on a fresh copy of the store. A model fault lands on the cancelling call; a tool fault as ``RETAIL_TARGET``
    says. The store refuses to cancel an order twice, which is its own guard: a lost reply resent is refused."""
    from ..scenarios import retail
    expect = {"changed": [{"record_id": RETAIL_ORDER, "status": "cancelled"}], "tickets": 0}
    runs = []
    faulty: list[FaultyModel] = []
    for loop in ("naive", "guarded"):
        store, reg = retail.SCENARIO.setup(lang)
        start = json.loads(json.dumps(store.db))
        if fault and FAULTS[fault].kind == "tool":
            reg = inject_tool_fault(reg, RETAIL_TARGET[fault], fault, seconds=hang_seconds)
        base: Model = SelfCorrectingModel(RETAIL_PLAN, RETAIL_ANSWER[lang])
        m = _faulted(base, fault, at_step, faulty)
        prompt = retail.SCENARIO.system_prompt[lang]
        if loop == "naive":
            run = run_naive(m, reg, RETAIL_TASK[lang], system_prompt=prompt, retry_everything=fault == "lost_reply")
        else:
            run = run_guarded(m, reg, RETAIL_TASK[lang], system_prompt=prompt, store=MemoryStore(),
                              config=GuardConfig(timeout=min(0.1, hang_seconds / 3)), sleep=lambda s: None,
                              rng=random.Random(seed), lang=lang)
        if fault == "hanging_tool":
            time.sleep(hang_seconds)  # a call the loop stopped waiting for may still land: look at the store after it
        runs.append((run, {"changed": _retail_changes(start, store.db), "tickets": []}))
    (n, ns), (g, gs) = runs
    return Comparison(fault, n, g, ns, gs, expect, scenario="retail", at_step=at_step,
                      start_state={"changed": [], "tickets": []}, injected=any(m.injected for m in faulty) if faulty else None,
                      target=RETAIL_TARGET.get(fault) if fault and FAULTS[fault].kind == "tool" else None)


def trace_text(run: Run, width: int = 110, lang: Lang = "en") -> str:
    """A run as terminal lines, one entry per event; long text is wrapped, never cut (the error text is the lesson)."""
    import textwrap
    lines = [t("trace.header", lang, loop=t("loop." + run.loop, lang), status=t("status." + run.status, lang),
               steps=run.steps, invalid=run.invalid_calls, reason=note_text(run.reason, lang))]
    for e in run.events:
        if e.kind == "model":
            what = t("trace.model", lang, text=e.model_visible or "")
        elif e.kind == "tool":
            what = f"  {e.tool_name}({e.args_raw}) -> {e.error_code or t('cell.replayed' if e.replayed else 'legend.ok', lang)}"
            if e.retry_count:
                how = note_text(e.note, lang) if e.note else t("trace.no_key" if run.loop == "naive" else "trace.read_again", lang)
                what += " " + t("trace.resent", lang, n=e.retry_count, how=how)
            if e.error_code:
                what += " | " + t("trace.model_sees", lang, text=e.model_visible or "")
        else:
            status = t("status." + (e.final_status or run.status), lang)
            # a run that ends with nothing said (out of steps): said so, not "the user reads:" and a blank
            what = t("trace.end", lang, status=status, text=e.model_visible) if (e.model_visible or "").strip() \
                else t("trace.end_silent", lang, status=status)
        first = f"  {t('trace.step', lang, n=e.round_index)}  "
        lines += textwrap.wrap(what.replace("\n", " "), width=width, initial_indent=first,
                               subsequent_indent=" " * (len(first) + 4), break_long_words=True) or [first]
    return "\n".join(lines)


def demo_report(c: Comparison, lang: Lang = "en", width: int = 110) -> str:
    """What ``python -m agentlab demo`` prints: both traces, a table, and the plain account, in ``lang``."""
    title = (FAULTS[c.fault].describe(lang) if c.fault
             else t("demo.expense_title" if c.scenario == "expense" else "demo.seed_title", lang))
    out = [f"== {title}", ""]
    for run in (c.naive, c.guarded):
        out += [trace_text(run, width, lang), ""]
    head = [t(k, lang) for k in ("demo.col.loop", "demo.col.status", "demo.col.steps", "demo.col.invalid",
                                  f"demo.col.{WRITTEN[c.scenario]}", "demo.col.outcome")]
    rows = [[t("loop." + row["loop"], lang), t("status." + row["status"], lang), row["steps"], row["invalid calls"],
             row[WRITTEN[c.scenario]], t("outcome." + row["outcome"], lang)] for row in c.table()]
    # each column as wide as its widest cell, in the columns a terminal draws (a Chinese character takes two)
    wide = [max(columns(str(r[i])) for r in [head, *rows]) for i in range(5)]
    for r in [head, *rows]:
        out.append(" ".join([pad(r[0], wide[0]), pad(r[1], wide[1]), *(pad(r[i], wide[i], ">") for i in (2, 3, 4))])
                   + f"  {r[5]}")
    out += ["", *explain(c, lang)]
    return "\n".join(out)


_GUARD_OF_CODE = {"INVALID_ARGS": "validate", "BAD_JSON": "validate", "UNKNOWN_TOOL": "validate",
                  "TIMEOUT": "timeout", "RATE_LIMITED": "retry", "UNAVAILABLE": "retry",
                  "TOOL_ERROR": "escalate", "UNAUTHENTICATED": "escalate", "PERMISSION_DENIED": "escalate",
                  "NOT_FOUND": "escalate", "RULE_VIOLATION": "escalate", "LOOP_DETECTED": "breaker",
                  "BUDGET_EXHAUSTED": "budget", "SELF_CORRECTION_EXHAUSTED": "escalate", "OUTCOME_UNKNOWN": "escalate",
                  "NEEDS_APPROVAL": "approval", "CONFLICT": "idempotency"}


def guards_that_acted(run: Run) -> list[str]:
    """Which guards stepped in during ``run``, in the order they did, read from its trace.

    The one answer to "caught by" (notebooks 00 and 08 both show :func:`caught_by_guards`): never the fault
    table's intention (:attr:`~agentlab.models.faults.Fault.caught_by`), which a run may not bear out."""
    return list(dict.fromkeys(guard for guard, _ in guard_acts(run)))


def guard_acts(run: Run) -> Counter[tuple[str, tuple]]:
    """Each step a guard stepped in on during ``run``, as (guard, the step: its round, tool, arguments and error code),
    counted, in the order they first did. Two runs' counts compare step by step: the same guard on the same call is
    the same act, the same guard on another call (a fault's own) is not."""
    out: Counter[tuple[str, tuple]] = Counter()
    for e in run.events:
        acted: list[str | None] = []
        if e.retry_count:  # resent after a transient failure; a keyed write resent under its key: the key acted too
            acted.append("timeout" if e.kind == "tool" and e.latency_ms > 50 else "retry")
            if "idempotency key" in (e.note or ""):
                acted.append("idempotency")
        if e.replayed:
            acted.append("idempotency")
        elif e.error_code == "INVALID_ARGS" and e.kind == "tool" and e.validate_ok is not False:
            # the contract let it through and the tool refused it: what acted is the refusal the model could read
            acted.append("readable_errors" if _structured(e.model_visible) else None)
        elif e.error_code:
            if e.kind == "tool" and e.error_code == "TOOL_ERROR" and _structured(e.model_visible):
                acted.append("readable_errors")  # the tool raised; the model read a record, not the exception
            acted.append(_GUARD_OF_CODE.get(e.error_code))
        step = (e.round_index, e.kind, e.tool_name, e.args_raw, e.error_code)
        out.update(dict.fromkeys(((g, step) for g in acted if g), 1))
    if sum(1 for e in run.events if e.kind == "tool" and e.round_index == 1) > 1 or any(
            sum(1 for x in run.events if x.kind == "tool" and x.round_index == e.round_index) > 1 for e in run.events):
        out["all_calls", ()] += 1
    return out


def _structured(shown: str | None) -> bool:
    """Whether the model was shown a structured error record (readable errors on), not raw or bare text."""
    try:
        body = json.loads(shown or "")
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("ok") is False and isinstance(body.get("error"), dict)


def caught_by_guards(c: Comparison, lang: Lang = "en") -> str:
    """The "caught by" cell of a comparison: the guards the guarded run's trace shows acting, each named and listed
    as ``lang`` names and lists them, ``-`` for none. Each name is said before the list is joined: a table cannot
    say the names inside a list already joined in Chinese (it showed 幂等 alone but idempotency、all_calls)."""
    return joined((label(g, lang) for g in guards_that_acted(c.guarded)), lang, "list") or "-"


def classes_by_loop(comparisons: Iterable[Comparison], lang: Lang = "en") -> dict[str, dict[str, int]]:
    """Each loop's runs by failure class, over comparisons on the after-sales desk: from the codes and from what the
    runs did that no code says (the grader's verdict, the ending, calls its schema refuses that ran), as ``eval``
    and a log review count them (:func:`~agentlab.evals.failure_classes.runs_by_class`)."""
    registry = aftersales.SCENARIO.setup(lang)[1]
    done = list(comparisons)
    return {side: runs_by_class(run_classes(getattr(c, side), verdict.outcome, verdict.failures, registry)
                                for c in done for verdict in (getattr(c, f"{side}_verdict"),))
            for side in ("naive", "guarded")}


def explain(c: Comparison, lang: Lang = "en") -> list[str]:
    """A plain-language account of a comparison, one sentence per line, for people who do not read traces."""
    if c.fault:
        key = "explain.injected_tool" if FAULTS[c.fault].kind == "tool" else "explain.injected"
        lines = [t(key, lang, what=FAULTS[c.fault].describe(lang))]
        if c.injected is False:
            lines.append(t("explain.not_injected", lang, step=c.at_step))
        elif not _fired(c):  # a model that never calls the tool the fault is put on: nothing was injected
            lines.append(t("explain.not_injected_tool", lang, tool=c.target))
    else:
        lines = [t({"expense": "explain.none_expense", "retail": "explain.none_retail"}.get(c.scenario, "explain.none"), lang)]
    n = c.naive
    dropped = sum(len(m.get("tool_calls") or ()) - 1 for m in n.messages
                  if m.get("role") == "assistant" and len(m.get("tool_calls") or ()) > 1)
    if dropped:  # the naive loop runs only tool_calls[0]: say so, even when that happened to save it
        lines.append(t("explain.dropped", lang, n=dropped))
    if n.status == "failed":
        # what crashed it, in words a reader of this account has (it said "crashed (JSONDecodeError)")
        lines.append(t("explain.crashed", lang, reason=crash_said(n.reason, lang) or t("explain.crash.other", lang)))
    elif n.status == "budget_exhausted":
        lines.append(t("explain.capped", lang, steps=n.steps))
    else:
        lines.append(t("explain.naive_done", lang, steps=n.steps))
    if c.fault == "hanging_tool" and n.tool_events and _fired(c):  # (a hang that never happened waited nothing)
        # the hang's cost is time, which the traces do not show: a run that "finished" read as harmless
        waited = max(e.latency_ms for e in n.tool_events) / 1000
        stopped = max((e.latency_ms for e in c.guarded.tool_events), default=0.0) / 1000
        lines.append(t("explain.hang", lang, naive=f"{waited:.2f}", guarded=f"{stopped:.2f}"))
    if c.scenario == "expense":
        lines += _expense_lines(c, lang)
    refunds = c.naive_state.get("refunds", [])
    if len(refunds) > 1:
        total = sum(_num(r["amount"]) for r in refunds)
        # as a person writes an amount: 398, 12345.67 (not 398.0, nor :g's 12345.7)
        lines.append(t("explain.double", lang, n=len(refunds), total=f"{total:.2f}".rstrip("0").rstrip(".")))
    bad = [r for r in refunds if not isinstance(r["amount"], (int, float)) or r["reason"] not in
           ("user_cancel", "out_of_stock", "price_error")]
    if bad:
        detail = joined((joined((f"amount={r['amount']!r}", f"reason={r['reason']!r}"), lang, "list") for r in bad), lang)
        lines.append(t("explain.bad_data", lang, detail=detail))
    if any("Traceback" in (e.model_visible or "") for e in n.events):
        lines.append(t("explain.leak", lang))
    # the bookkeeping desk's wrong date is its own line above: the verdict names what else is wrong (a category made up)
    lines.append(_verdict_line("naive", c.naive_verdict, lang, which=not bad,
                               said=("record date=",) if c.scenario == "expense" else ()))
    g = c.guarded
    if c.scenario in ("expense", "retail"):
        key, written = ("explain.guarded_booked", "records") if c.scenario == "expense" else ("explain.guarded_changed", "changed")
        lines.append(t(key, lang, status=t("status." + g.status, lang), steps=g.steps, n=len(c.guarded_state[written])))
    else:
        lines.append(t("explain.guarded", lang, status=t("status." + g.status, lang), steps=g.steps,
                       refunds=len(c.guarded_state["refunds"])))
    verdict = c.guarded_verdict
    lines.append(_verdict_line("guarded", verdict, lang))
    if verdict.outcome in ("done, wrong data", "done, nothing done", "wrong data, stopped", "leaked", "crashed"):
        # a run that did the wrong thing (or nothing) is not a guard's success, whatever fired on the way
        lines.append(t("explain.no_credit", lang, why=joined(reasons_in(verdict.failures, lang), lang) or verdict.outcome))
        return lines
    acted = guards_that_acted(g)
    if c.scenario == "expense" and not acted and not c.fault:
        lines.append(t("explain.dated", lang, today=c.expect["records"][0]["date"]))
        return lines
    acts = guard_acts(g)
    # the steps a guard acted on that a run with no fault meets too, the very same call: the model's own mistakes
    same = acts & Counter(c.acted_anyway)
    anyway = [a for a in acted if any(guard == a for guard, _ in same)]
    whole = bool(c.fault and anyway and not (acts - same))  # every act is one the run with no fault has too
    if not whole:  # "what caught it" of acts none of which is the fault's read as the fault caught: said once, below
        lines.append(t("explain.caught", lang, guard=joined((t("guard." + a, lang) for a in acted), lang)) if acted
                     else t("explain.nothing", lang))
    if c.fault and anyway:  # a PM read the model's own mistake, caught, as the fault caught
        lines.append(t("explain.caught_anyway_all" if whole else "explain.caught_anyway", lang,
                       guard=joined((t("guard." + a, lang) for a in anyway), lang)))
    return lines


def _faulted(base: Model, fault: str | None, at_step: int, faulty: list[FaultyModel]) -> Model:
    """``base`` with a model fault put on it (kept in ``faulty``, which says afterwards whether it fired), or ``base``
    itself for no fault or a tool's (put on the registry instead)."""
    if not fault or FAULTS[fault].kind == "tool":
        return base
    faulty.append(FaultyModel(base, fault, at_step=at_step))
    return faulty[-1]


def _fired(c: Comparison) -> bool:
    """Whether a tool fault could fire: the model called the tool it is put on, on either side (a model fault, and a
    tool fault on no known tool, count as fired; ``Comparison.injected`` says a model fault's own)."""
    if not (c.fault and c.target and FAULTS[c.fault].kind == "tool"):
        return True
    return any(e.tool_name == c.target for run in (c.naive, c.guarded) for e in run.tool_events)


def _expense_lines(c: Comparison, lang: Lang) -> list[str]:
    """What the naive bookkeeping desk got wrong in the ledger: the day, and bookings beyond the one asked for."""
    from ..scenarios.expense import NAIVE_DATE
    out = []
    records, want = c.naive_state["records"], list(c.expect.get("records", []))
    if len(records) > len(want):
        out.append(t("explain.double_booked", lang, n=len(records), want=len(want)))
    wanted_days = {w["date"] for w in want}
    for r in records:
        if wanted_days and r.get("date") not in wanted_days:
            out.append(t("explain.wrong_date", lang, naive=NAIVE_DATE, got=r.get("date"), want=sorted(wanted_days)[0]))
            break
    bad = [r for r in records if not isinstance(r.get("amount"), (int, float))]
    if bad:
        out.append(t("explain.bad_record", lang, detail=joined((f"amount={r['amount']!r}" for r in bad), lang, "list")))
    return out


def _verdict_line(loop: str, verdict: Verdict, lang: Lang, *, which: bool = False, said: tuple[str, ...] = ()) -> str:
    """``which``: a wrong run says which data is wrong, but for the failures starting with one of ``said`` (a line
    before it said those)."""
    outcome = t("outcome." + verdict.outcome, lang)
    failures = [f for f in verdict.failures if not f.startswith(said)] if said else list(verdict.failures)
    if which and verdict.outcome in ("done, wrong data", "wrong data, stopped") and failures:
        # which data is wrong: a refund of 200,000 on a 199 order read only "the data is wrong"
        outcome += aside(joined(reasons_in(failures, lang), lang), lang)
    return t("explain.verdict", lang, loop=t("loop." + loop, lang), outcome=outcome)


def budget_sweep(budgets: Sequence[int], *, runs: int = 40, detour: float = 0.35, seed: int = 0) -> dict[str, dict[str, int]]:
    """Final statuses of ``runs`` refund tasks by wandering models (:class:`DistractedModel`), per step budget.

    Each run has its own seed, so the turns needed vary from run to run; the same seeds are used for
    every budget, so the only thing that changes between bars is the budget.
    """
    from ..evals.metrics import status_counts
    from ..models import DistractedModel
    out = {}
    for budget in budgets:
        done = []
        for i in range(runs):
            _, reg = aftersales.SCENARIO.setup()
            model = DistractedModel(PLAN, ANSWER["en"], detour=detour, seed=seed + i)
            done.append(run_guarded(model, reg, TASK["en"], config=GuardConfig(step_budget=budget),
                                    store=MemoryStore(), sleep=lambda s: None))
        out[f"budget {budget}"] = status_counts(done)
    return out
