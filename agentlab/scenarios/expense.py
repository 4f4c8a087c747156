"""The bookkeeping (expense) desk: "今天坐出租车花了45元，记一笔" and the 12 tools around it.

``Ledger`` is the backend and trusts its caller, like the after-sales ``Desk``: it books a
future date, "45元" as an amount, the same taxi twice, or three times a category's budget,
and deletes whatever it is told to. The contract around it (schemas that state format, unit
and range; the rules below; the monthly budgets as limits; confirmation before a change or a
delete; one booking per expense per conversation) is what the guarded desk adds
(docs/sources.md#article-003-the-expense-booking-agent).

The desk has a clock (``now``): today's date in the system prompt and the "not in the
future" rule read the same one, so a test or a lesson can set the day.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import threading
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from ..context import Session, build_system_prompt
from ..errors import ToolFailure
from ..i18n import Lang, both, t
from ..resources import data_file
from ..tools import Registry, Tool, over_limit, rule
from .base import Scenario, contract_specs

__all__ = ["CATEGORIES", "CONTEXT_BUDGET", "DEMO_NOW", "NAIVE_DATE", "SCENARIO", "STEP_BUDGET", "SYSTEM_PROMPT", "Ledger",
           "apply_start", "expense_prompt", "fixed_clock", "make_registry"]

TZ = "Asia/Shanghai"
#: The day the suites and lessons run on (a Thursday): "yesterday" is 2026-10-14, "last Friday" 2026-10-09.
DEMO_NOW = _dt.datetime(2026, 10, 15, 10, 0, tzinfo=ZoneInfo(TZ))
#: The date the naive desk's prompt was written on, and still says (the date of the desk's own first example).
NAIVE_DATE = "2026-09-21"
#: At most five model turns per user turn (docs/guards.md#step_budget); when cut, the user gets a plain answer.
STEP_BUDGET = 5
#: Tokens of conversation the guarded desk sends (by the labelled estimate): older turns are trimmed.
CONTEXT_BUDGET = 1500

_DATA = json.loads(data_file("expense_ledger.json").read_text(encoding="utf-8"))
CATEGORIES: dict[str, str] = {c["id"]: c["zh"] for c in _DATA["categories"]}

SYSTEM_PROMPT = both("desk.expense.you_are_the_bookkeeping")
_NAIVE_TODAY = both("desk.expense.today_is_naive_date", date=NAIVE_DATE)


def fixed_clock(when: _dt.datetime = DEMO_NOW) -> Callable[[], _dt.datetime]:
    """A clock that always says ``when`` (the suites' and lessons' day)."""
    return lambda: when


class Ledger:
    """Expense records, budgets and hand-over tickets, in memory, safe across threads."""

    def __init__(self, now: Callable[[], _dt.datetime] | None = None, *, timezone: str = TZ):
        self.now = now or fixed_clock()
        self.timezone = timezone
        self.records: dict[str, dict] = {r["record_id"]: dict(r) for r in _DATA["records"]}
        self.budgets: dict[tuple[str, str], float] = {(b["category"], b["month"]): b["amount"] for b in _DATA["budgets"]}
        self.tickets: list[dict] = []
        self._by_key: dict[str, dict] = {}
        self._next = len(self.records) + 1
        self._lock = threading.Lock()
        self.baseline()

    def __repr__(self) -> str:
        return f"Ledger({len(self.records)} records, today {self.today()})"

    def baseline(self) -> None:
        """Take the ledger as it is now as the start that :meth:`snapshot` compares against."""
        self._start = {k: dict(v) for k, v in self.records.items()}
        self._start_budgets = dict(self.budgets)

    def today(self) -> _dt.date:
        return self.now().astimezone(ZoneInfo(self.timezone)).date()

    def _record(self, record_id: str) -> dict:
        rec = self.records.get(record_id)
        if rec is None:
            raise ToolFailure("NOT_FOUND", both("desk.expense.there_is_no_record", record_id=record_id))
        return rec

    # -- the tools' backends ------------------------------------------------------------
    def book(self, date: str, item: str, amount: Any, category: str, remark: str = "",
             idempotency_key: str | None = None) -> dict:
        with self._lock:
            if idempotency_key is not None and idempotency_key in self._by_key:
                return dict(self._by_key[idempotency_key])  # the backend's own dedup (a unique key column)
            rec = {"record_id": f"E{self._next:04d}", "date": date, "item": item, "amount": amount,
                   "category": category, "remark": remark}
            self._next += 1
            self.records[rec["record_id"]] = rec
            if idempotency_key is not None:
                self._by_key[idempotency_key] = dict(rec)
            return dict(rec)

    def list_records(self, month: str, category: str | None = None) -> dict:
        rows = sorted((dict(r) for r in self.records.values()
                       if str(r["date"]).startswith(month) and (category is None or r["category"] == category)),
                      key=lambda r: (r["date"], r["record_id"]))
        return {"month": month, "count": len(rows), "records": rows}

    def search(self, keyword: str, date_from: str | None = None, date_to: str | None = None) -> dict:
        k = keyword.lower()
        rows = [dict(r) for r in self.records.values()
                if (k in str(r["item"]).lower() or k in str(r["remark"]).lower())
                and (date_from is None or str(r["date"]) >= date_from) and (date_to is None or str(r["date"]) <= date_to)]
        return {"count": len(rows), "records": sorted(rows, key=lambda r: (r["date"], r["record_id"]))}

    def get(self, record_id: str) -> dict:
        return dict(self._record(record_id))

    def update(self, record_id: str, **fields: Any) -> dict:
        with self._lock:
            rec = self._record(record_id)
            rec.update(fields)
            return dict(rec)

    def delete(self, record_id: str, reason: str = "") -> dict:
        with self._lock:
            rec = self.records.pop(self._record(record_id)["record_id"])
            return {"deleted": rec["record_id"], "item": rec["item"], "amount": rec["amount"], "date": rec["date"]}

    def spent(self, category: str, month: str, *, but: str | None = None) -> float:
        """What the records of ``category`` dated in ``month`` add up to, leaving out the record ``but``."""
        return round(sum(r["amount"] for k, r in self.records.items()
                         if k != but and r["category"] == category and str(r["date"]).startswith(month)
                         and isinstance(r["amount"], (int, float)) and not isinstance(r["amount"], bool)), 2)

    def summary(self, month: str) -> dict:
        totals: dict[str, float] = {}
        for r in self.records.values():
            if str(r["date"]).startswith(month) and isinstance(r["amount"], (int, float)):
                totals[r["category"]] = round(totals.get(r["category"], 0) + r["amount"], 2)
        return {"month": month, "by_category": totals, "total": round(sum(totals.values()), 2)}

    def set_budget(self, category: str, month: str, amount: float) -> dict:
        with self._lock:
            self.budgets[(category, month)] = amount
            return {"category": category, "month": month, "budget": amount}

    def get_budget(self, category: str, month: str) -> dict:
        budget = self.budgets.get((category, month))
        spent = self.summary(month)["by_category"].get(category, 0)
        return {"category": category, "month": month, "budget": budget, "spent": spent,
                "left": None if budget is None else round(budget - spent, 2)}

    def categories(self) -> dict:
        return {"categories": [{"id": k, "zh": v} for k, v in CATEGORIES.items()]}

    def export_csv(self, month: str) -> dict:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["record_id", "date", "item", "amount", "category", "remark"])
        for r in self.list_records(month)["records"]:
            w.writerow([r["record_id"], r["date"], r["item"], r["amount"], r["category"], r["remark"]])
        return {"month": month, "csv": out.getvalue()}

    def convert(self, amount: float, currency: str) -> dict:
        rate = _DATA["rates_to_cny"][currency]
        return {"amount": amount, "currency": currency, "rate": rate, "yuan": round(amount * rate, 2)}

    def escalate(self, summary: str) -> dict:
        with self._lock:
            ticket = {"ticket_id": f"T{len(self.tickets) + 1:03d}", "summary": summary}
            self.tickets.append(ticket)
            return ticket

    def snapshot(self) -> dict:
        """What a grader looks at: records booked, deleted and changed since the start, budgets set, tickets."""
        added = [dict(r) for k, r in self.records.items() if k not in self._start]
        deleted = sorted(k for k in self._start if k not in self.records)
        changed = [{"record_id": k, **{f: v for f, v in self.records[k].items() if self._start[k].get(f) != v}}
                   for k in self._start if k in self.records and self.records[k] != self._start[k]]
        budgets = [{"category": c, "month": m, "amount": a} for (c, m), a in self.budgets.items()
                   if self._start_budgets.get((c, m)) != a]
        return {"records": added, "deleted": deleted, "changed": changed, "budgets": budgets,
                "tickets": [dict(t) for t in self.tickets]}


def make_registry(ledger: Ledger, *, lang: Lang = "en", clean: bool = False) -> Registry:
    """The thirteen bookkeeping tools bound to ``ledger``, with the contract of ``data/expense_tools.json``."""
    specs = contract_specs("expense", lang)

    def not_in_future(args: dict) -> list:
        day = args.get("date")
        if isinstance(day, str) and day > ledger.today().isoformat():  # ISO dates compare as text
            today = ledger.today().isoformat()
            return [rule("date", **both("desk.expense.future_date", day=day, today=today))]
        return []

    def within_budget(args: dict) -> list:
        # The month's budget of a category is a business limit, not a mistake in the call: a booking (or a
        # change) that would take the category past it is refused before the ledger is touched. The record as
        # it would be after the call is judged, so an update is judged with its unchanged fields; a change that
        # adds nothing to the category's month (a remark, a smaller amount) is never refused, even where a
        # lowered budget is passed already.
        old = ledger.records.get(args.get("record_id", ""), {})
        new = {**old, **args}
        category, month, amount = new.get("category"), str(new.get("date", ""))[:7], new.get("amount")
        budget = ledger.budgets.get((str(category), month))
        if budget is None or not isinstance(amount, (int, float)) or isinstance(amount, bool):
            return []  # no budget, no limit (a malformed amount is the schema's to refuse)
        others = ledger.spent(str(category), month, but=old.get("record_id"))
        before = ledger.spent(str(category), month)
        after = round(others + amount, 2)
        if after <= budget or after <= before:
            return []
        left = round(budget - others, 2)
        fills = {"amount": _yuan(amount), "month": month, "budget": _yuan(budget), "spent": _yuan(others),
                 "left": _yuan(max(left, 0))}
        return [over_limit("amount", amount, max(left, 0),
                           t("over_limit.budget", "en", category=category, **fills),
                           t("over_limit.budget", "zh", category=CATEGORIES.get(str(category), category), **fills))]

    def existing_then(check: Callable[[dict], list]) -> Callable[[dict], list]:
        def run(args: dict) -> list:
            ledger._record(args["record_id"])  # NOT_FOUND is raised as a ToolFailure
            return check(args)
        return run

    def confirm(key: str) -> Callable[[dict], str]:
        # a change to the books is the user's decision: the call waits until they confirm it
        return lambda args: t(key, lang, id=args["record_id"])

    def tool(name: str, fn: Any, **kw: Any) -> Tool:
        s = specs[name]
        return Tool(name, s["description"], s["parameters"], fn, **kw)

    return Registry([
        tool("book_expense_record", ledger.book, side_effect=True, check=not_in_future, limits=within_budget,
             key_scope="session", keyed=True, business_key=_same_expense),
        tool("list_expense_records", ledger.list_records),
        tool("search_expense_records", ledger.search),
        tool("get_expense_record", ledger.get),
        tool("update_expense_record", ledger.update, side_effect=True, check=existing_then(not_in_future),
             limits=within_budget,
             needs_approval=confirm("approval.why.update_record")),
        tool("delete_expense_record", ledger.delete, side_effect=True, check=existing_then(lambda a: []),
             business_key=lambda a: a["record_id"],
             needs_approval=confirm("approval.why.delete_record")),
        tool("monthly_summary", ledger.summary),
        tool("set_budget", ledger.set_budget, side_effect=True, idempotent=True),  # it sets a value: twice is once
        tool("get_budget", ledger.get_budget),
        tool("list_categories", ledger.categories),
        tool("export_records_csv", ledger.export_csv),
        tool("convert_currency", ledger.convert),
        tool("escalate_to_human", ledger.escalate, side_effect=True),
    ], lang=lang, clean=clean)


def _yuan(amount: float) -> str:
    """An amount as people write it: 1131, 172.1, 0.05 (never 1131.0 or 1.131e+03)."""
    return f"{amount:.2f}".rstrip("0").rstrip(".")


def _same_expense(args: dict) -> str:
    """What makes two bookings in one chat the same expense: the day, the amount to the fen, the category and
    the item (case and spacing aside). Lunch 30 and dinner 30 on one day are two expenses; "Taxi" twice is one."""
    from decimal import ROUND_HALF_UP, Decimal
    try:
        amount = Decimal(str(args["amount"])).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    except ArithmeticError:  # "45元", NaN: not an amount (the schema refuses it); the loop falls back to all args
        raise ValueError(f"not an amount: {args['amount']!r}") from None
    item = " ".join(str(args["item"]).split()).casefold()
    return f"{args['date']}|{amount}|{args['category']}|{item}"


def expense_prompt(lang: Lang = "en", *, state: Ledger | None = None, session: Session | None = None,
                   naive: bool = False) -> str:
    """The desk's system prompt. Guarded: built for this turn from the ledger's clock and the session.
    Naive: the date the prompt was written on, frozen into it (the stale-date bug this desk exists to show)."""
    if naive:
        return SYSTEM_PROMPT[lang] + " " + _NAIVE_TODAY[lang]
    ledger = state if state is not None else Ledger()
    return build_system_prompt(SYSTEM_PROMPT[lang], session or Session(user_id=_DATA["user"], timezone=ledger.timezone),
                               now=ledger.now, lang=lang)


def apply_start(ledger: Ledger, start: dict) -> None:
    """A case's starting state: ``{"records": [...], "budgets": [...], "today": "2026-10-15"}``."""
    if "today" in start:
        day = _dt.date.fromisoformat(start["today"])
        when = _dt.datetime(day.year, day.month, day.day, 10, 0, tzinfo=ZoneInfo(ledger.timezone))
        ledger.now = fixed_clock(when)
    for r in start.get("records", []):
        rec = {"item": "", "remark": "", "category": "other", **r}
        ledger.records[rec["record_id"]] = rec
        ledger._next = max(ledger._next, int(rec["record_id"][1:]) + 1)
    for b in start.get("budgets", []):
        ledger.budgets[(b["category"], b["month"])] = b["amount"]
    ledger.baseline()


SCENARIO = Scenario(
    name="expense",
    title=both("desk.expense.bookkeeping_desk_expenses"),
    system_prompt=SYSTEM_PROMPT,
    make_state=Ledger,
    make_registry=make_registry,
    snapshot=Ledger.snapshot,
    apply=apply_start,
    build_prompt=expense_prompt,
    step_budget=STEP_BUDGET,
    context_budget=CONTEXT_BUDGET,
    strict_api=True,
)
