"""The capstone desk: a refund desk that was written in a hurry. Find what is wrong with it and fix it.

This file is a desk (docs/capstone.md): a Python file with a ``desk()`` function that returns an
:class:`agentlab.scenarios.Scenario`. Take your own copy, grade it, fix it, grade it again:

    python -m agentlab capstone --copy my-capstone        # my-capstone/desk.py is yours to edit
    python -m agentlab capstone --desk my-capstone/desk.py

The backend (orders, refunds, tickets) is the shop's and is fine; what is wrong is the contract around it
(the schemas the model reads, which tools are writes, the errors it is told) and the policy of its loop.
"""
from __future__ import annotations

from typing import Any

from agentlab.guards import GuardConfig
from agentlab.resources import data_file
from agentlab.retry import RetryPolicy
from agentlab.scenarios import Scenario
from agentlab.scenarios.aftersales import Desk, apply_start
from agentlab.tools import Registry, Tool

SYSTEM_PROMPT = {
    "en": "You are a helpful after-sales assistant. Today is 2024-01-01.",
    "zh": "你是一个乐于助人的售后助手。今天是 2024-01-01。",
}

TOOLS: dict[str, dict[str, Any]] = {
    "get_order": {
        "description": "Get order.",
        "parameters": {"type": "object", "properties": {
            "order_id": {"description": "Order ID"}},
            "required": ["order_id"]}},
    "search_orders": {
        "description": "Search orders.",
        "parameters": {"type": "object", "properties": {
            "phone": {"type": "string", "description": "Phone"}},
            "required": ["phone"]}},
    "create_refund": {
        "description": "Refund.",
        "parameters": {"type": "object", "properties": {
            "order_id": {"type": "string", "description": "Order ID"},
            "amount": {"type": "number", "description": "Amount"},
            "reason": {"type": "string", "description": "Reason: user_cancel, out_of_stock or price_error"},
            "remark": {"type": "string"}}}},
    "escalate_to_human": {
        "description": "Escalate.",
        "parameters": {"type": "object", "properties": {
            "summary": {"type": "string", "description": "Summary"}},
            "required": ["summary"]}},
}


def make_registry(desk: Desk, *, lang: str = "en", **_: Any) -> Registry:
    def get_order(order_id: Any) -> dict:
        try:
            return desk.get_order(order_id)
        except Exception:
            raise ConnectionError("backend error") from None  # whatever went wrong, "try again"

    def create_refund(order_id: str, amount: float, reason: str, remark: str = "") -> dict:
        order = desk.orders.get(order_id)
        if order is None:
            raise RuntimeError("E_RFND_404")
        if amount > order["amount"]:
            raise RuntimeError(f"E_RFND_422 amt>{order['amount']}")
        return desk.create_refund(order_id, amount, reason, remark)

    def tool(name: str, fn: Any, **kw: Any) -> Tool:
        return Tool(name, TOOLS[name]["description"], TOOLS[name]["parameters"], fn, **kw)

    return Registry([
        tool("get_order", get_order),
        tool("search_orders", desk.search_orders),
        tool("create_refund", create_refund),
        tool("escalate_to_human", desk.escalate_to_human, side_effect=True),
    ], lang=lang)  # type: ignore[arg-type]


def desk() -> Scenario:
    return Scenario(
        name="capstone",
        title={"en": "Capstone refund desk", "zh": "结业退款助手"},
        system_prompt=SYSTEM_PROMPT,
        make_state=Desk,
        make_registry=make_registry,
        snapshot=Desk.snapshot,
        apply=apply_start,
        guards=GuardConfig(step_budget=None, repeat_limit=None,
                           retry=RetryPolicy(max_retries=5, base=1.0, cap=1.0, jitter="none")),
        calls={"read": ["get_order", {"order_id": "A1001"}],
               "write": ["create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}],
               "risky": ["create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"}],
               "wrong": ["get_order", {"order_id": 1001}, {"order_id": "A1001"}]},
        cases=(data_file("capstone/cases.jsonl"), data_file("aftersales_cases.jsonl")),
    )
