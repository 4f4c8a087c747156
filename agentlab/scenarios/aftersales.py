"""The after-sales refund desk: look up orders, refund the unshipped, hand over the rest.

``Desk`` is the backend and, like many internal APIs, trusts its caller: it
will refund a shipped order or refund twice if asked. The contract around it
(schema, business rules, approval, idempotency) is what the guarded loop adds.
"""
from __future__ import annotations

import datetime as _dt
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..context import Session, build_system_prompt
from ..errors import ToolFailure
from ..i18n import Lang, both, t
from ..resources import data_file
from ..tools import Registry, Tool, over_limit, rule
from .base import Scenario, contract_specs

__all__ = ["APPROVAL_THRESHOLD", "DEMO_NOW", "SCENARIO", "SYSTEM_PROMPT", "Desk", "aftersales_prompt", "apply_start", "load_orders",
           "make_registry"]
APPROVAL_THRESHOLD = 1000.0

SYSTEM_PROMPT = both("desk.aftersales.you_are_an_after")


def load_orders(path: str | Path | None = None) -> list[dict]:
    return json.loads(Path(path or data_file("aftersales_orders.json")).read_text(encoding="utf-8"))["orders"]


_ORDERS = load_orders()


#: The desk's clock for suites and lessons (the same day as the bookkeeping desk's).
DEMO_NOW = _dt.datetime(2026, 10, 15, 10, 0, tzinfo=_dt.timezone(_dt.timedelta(hours=8)))


class Desk:
    """Orders, refunds and hand-over tickets, in memory, safe across threads."""

    def __init__(self, orders: list[dict] | None = None, *, now: Callable[[], _dt.datetime] = lambda: DEMO_NOW):
        self.now = now
        # orders hold only scalars, so a shallow copy of each is a private copy (deepcopy cost 10x)
        self.orders = {o["order_id"]: dict(o) for o in (orders or _ORDERS)}
        self.refunds: list[dict] = []
        self.tickets: list[dict] = []
        self._by_key: dict[str, dict] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Desk({len(self.orders)} orders, {len(self.refunds)} refunds, {len(self.tickets)} tickets)"

    def _order(self, order_id: str) -> dict:
        order = self.orders.get(order_id)
        if order is None:
            raise ToolFailure("NOT_FOUND", both("desk.aftersales.no_order_order_id", order_id=order_id))
        return order

    def get_order(self, order_id: str) -> dict:
        o = self._order(order_id)
        return {"order_id": o["order_id"], "status": o["status"], "amount": o["amount"],
                "shipped": o["status"] == "shipped", "item": o["item"], "refunded": self.refunded(order_id)}

    def search_orders(self, phone: str) -> list[dict]:
        return [{"order_id": o["order_id"], "status": o["status"], "amount": o["amount"], "item": o["item"]}
                for o in self.orders.values() if o["phone"] == phone]

    def create_refund(self, order_id: str, amount: float, reason: str, remark: str = "",
                      idempotency_key: str | None = None) -> dict:
        with self._lock:
            if idempotency_key is not None and idempotency_key in self._by_key:
                return self._by_key[idempotency_key]  # the backend's own dedup (a unique key column)
            order = self._order(order_id)
            refund = {"refund_id": f"R{len(self.refunds) + 1:04d}", "order_id": order_id, "amount": amount,
                      "reason": reason, "remark": remark}
            self.refunds.append(refund)
            order["status"] = "refunded"
            if idempotency_key is not None:
                self._by_key[idempotency_key] = refund
            return refund

    def escalate_to_human(self, summary: str) -> dict:
        with self._lock:
            ticket = {"ticket_id": f"T{len(self.tickets) + 1:03d}", "summary": summary}
            self.tickets.append(ticket)
            return ticket

    def refunded(self, order_id: str) -> float:
        return round(sum(r["amount"] for r in self.refunds if r["order_id"] == order_id), 2)

    def snapshot(self) -> dict:
        """What a grader looks at: every refund, every ticket, and each order's status."""
        return {"refunds": [dict(r) for r in self.refunds], "tickets": [dict(t) for t in self.tickets],
                "status": {k: o["status"] for k, o in self.orders.items()}}


def make_registry(desk: Desk, *, lang: Lang = "en", approval_threshold: float | None = APPROVAL_THRESHOLD,
                  clean: bool = False) -> Registry:
    """The four after-sales tools bound to ``desk``, with the contract of ``data/aftersales_tools.json``."""
    specs = contract_specs("aftersales", lang)

    def refund_rules(args: dict) -> list:
        order = desk._order(args["order_id"])  # NOT_FOUND is raised as a ToolFailure
        if order["status"] != "paid":
            raise ToolFailure("RULE_VIOLATION", both("desk.aftersales.order_order_id_is", order_id=order['order_id'], status=order['status']))
        if args["amount"] > order["amount"]:
            return [rule("amount", **both("desk.aftersales.over_amount", amount=order["amount"]))]
        return []

    def refundable(args: dict) -> list:
        # What is left to refund on an order is a business limit: the rules above read the order's status and
        # amount, not what was refunded already (a partial refund recorded while the order stayed paid), so a
        # full refund after it would pay out more than the order cost. Refused before anything is written.
        order = desk._order(args["order_id"])
        refunded = desk.refunded(args["order_id"])
        left = round(order["amount"] - refunded, 2)
        if refunded == 0 or args["amount"] <= left:  # nothing refunded yet: the amount rule has said it all
            return []
        fills = {"amount": args["amount"], "order_id": order["order_id"], "total": order["amount"],
                 "refunded": refunded, "left": max(left, 0)}
        return [over_limit("amount", args["amount"], max(left, 0),
                           t("over_limit.refund", "en", **fills), t("over_limit.refund", "zh", **fills))]

    def needs_approval(args: dict) -> str | None:
        if approval_threshold is not None and args["amount"] > approval_threshold:
            return t("approval.why.refund", lang, limit=f"{approval_threshold:g}")
        return None

    def tool(name: str, fn: Any, **kw: Any) -> Tool:
        s = specs[name]
        return Tool(name, s["description"], s["parameters"], fn, **kw)

    return Registry([
        tool("get_order", desk.get_order),
        tool("search_orders", desk.search_orders),
        tool("create_refund", desk.create_refund, side_effect=True, check=refund_rules, limits=refundable,
             keyed=True, business_key=lambda a: a["order_id"], needs_approval=needs_approval),
        tool("escalate_to_human", desk.escalate_to_human, side_effect=True),
    ], lang=lang, clean=clean)


def apply_start(desk: Desk, start: dict) -> None:
    """A case's starting state: ``{"orders": {"A1001": {"status": "shipped"}}, "refunds": [...]}``."""
    for oid, fields in start.get("orders", {}).items():
        desk.orders.setdefault(oid, {"order_id": oid, "status": "paid", "amount": 0, "currency": "CNY",
                                     "item": "", "phone": "", "created": ""}).update(fields)
    desk.refunds.extend(dict(r) for r in start.get("refunds", []))


def aftersales_prompt(lang: Lang = "en", *, state: Desk | None = None, session: Session | None = None,
                      naive: bool = False) -> str:
    """The desk's system prompt: built per turn (date, user) for the guarded desk; fixed for the naive one."""
    if naive:
        return SYSTEM_PROMPT[lang]
    now = state.now if state is not None else (lambda: DEMO_NOW)
    return build_system_prompt(SYSTEM_PROMPT[lang], session or Session(user_id="customer"), now=now, lang=lang)


SCENARIO = Scenario(
    name="aftersales",
    title=both("desk.aftersales.after_sales_desk_refunds"),
    system_prompt=SYSTEM_PROMPT,
    make_state=Desk,
    make_registry=make_registry,
    snapshot=Desk.snapshot,
    apply=apply_start,
    build_prompt=aftersales_prompt,
    step_budget=5,  # at most five model turns per user turn, a plain answer when cut (docs/guards.md#step_budget)
    context_budget=1500,  # tokens of conversation sent (estimated); older turns are trimmed in whole blocks
)
