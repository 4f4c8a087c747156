"""The capstone desk, hardened: the model solution (for the trainer; docs/capstone.md).

The same refund desk as data/capstone/broken_desk.py, line for line where nothing was wrong, so that
``diff data/capstone/broken_desk.py data/trainer/solutions/capstone_desk.py`` shows every fix.
``python -m agentlab capstone --desk data/trainer/solutions/capstone_desk.py`` passes everything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlab.errors import ToolFailure
from agentlab.guards import GuardConfig
from agentlab.resources import data_file
from agentlab.retry import RetryPolicy
from agentlab.scenarios import Scenario
from agentlab.scenarios.aftersales import Desk, aftersales_prompt, apply_start
from agentlab.tools import Registry, Tool, rule

HERE = Path(__file__).resolve().parent

SYSTEM_PROMPT = {
    "en": ("You are an after-sales assistant for an online shop. Learn facts only from the tools; never guess "
           "order details. When a tool answers ok=false, read error.problems and error.hint, fix the call and "
           "try again; if the error is not retryable, tell the user plainly and offer a human colleague."),
    "zh": ("你是网店的售后助手。事实只能通过工具获得，不要猜测订单信息。工具返回 ok=false 时，阅读 "
           "error.problems 和 error.hint，修正后再调用；如果错误不可重试，如实告知用户并建议转人工。"),
}

ORDER_ID = {"type": "string", "pattern": "^A\\d{4}$", "description": "Order number, like A1001 (letter A and four digits)."}

# FIX vague-schema, untyped-field, missing-required: every field typed, described with its format, unit and range
TOOLS: dict[str, dict[str, Any]] = {
    "get_order": {
        "description": "Look up one order by its order number: status, amount, whether it has shipped. Use it before "
                       "any refund. If the user only gives a phone number, call search_orders first.",
        "parameters": {"type": "object", "properties": {"order_id": ORDER_ID},
                       "required": ["order_id"], "additionalProperties": False}},
    "search_orders": {
        "description": "Find a customer's orders by phone number. Use it only when the user gives no order number.",
        "parameters": {"type": "object", "properties": {
            "phone": {"type": "string", "pattern": "^1\\d{10}$",
                      "description": "Mainland mobile number, 11 digits, like 13800138000."}},
            "required": ["phone"], "additionalProperties": False}},
    "create_refund": {
        "description": "Refund a paid order that has not shipped. Call get_order first to learn the amount. One refund "
                       "per order; a repeat with the same arguments returns the first result.",
        "parameters": {"type": "object", "properties": {
            "order_id": ORDER_ID,
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 100000,
                       "description": "Refund amount in yuan, a positive number without a currency sign, at most the "
                                      "order amount (and never above 100000), e.g. 199.0."},
            "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock", "price_error"],
                       "description": "Why: the user cancelled -> user_cancel; we are out of stock -> out_of_stock; "
                                      "the price was wrong -> price_error."},
            "remark": {"type": "string", "maxLength": 200,
                       "description": "Optional note for the finance team, at most 200 characters, e.g. 'customer changed mind'."}},
            "required": ["order_id", "amount", "reason"], "additionalProperties": False}},
    "escalate_to_human": {
        "description": "Hand the conversation to a human agent. Use it when the request is outside what the tools "
                       "allow, or the user asks for a person.",
        "parameters": {"type": "object", "properties": {
            "summary": {"type": "string", "minLength": 5, "maxLength": 500,
                        "description": "One or two sentences for the colleague, e.g. 'A1002 shipped, user wants a refund'."}},
            "required": ["summary"], "additionalProperties": False}},
}

APPROVAL_ABOVE = 1000.0  # yuan: a larger refund waits for a person


def make_registry(desk: Desk, *, lang: str = "en", **_: Any) -> Registry:
    def get_order(order_id: str) -> dict:
        # FIX retry-4xx: an order that does not exist is NOT_FOUND (the backend's own error), never "try again later"
        return desk.get_order(order_id)

    def refund_rules(args: dict) -> list:
        order = desk._order(args["order_id"])
        if order["status"] != "paid":
            # FIX unreadable-error: a sentence the model can act on, with what to do next
            raise ToolFailure("RULE_VIOLATION", {
                "en": f"Order {order['order_id']} is {order['status']}; only paid orders that have not shipped can be "
                      "refunded here. Tell the user and offer a human colleague (escalate_to_human).",
                "zh": f"订单 {order['order_id']} 的状态是 {order['status']}，这里只能为已付款且未发货的订单退款。"
                      "请告知用户，并建议转人工（escalate_to_human）。"})
        if args["amount"] > order["amount"]:
            return [rule("amount", f"must not exceed the order amount {order['amount']}", f"不得超过订单金额 {order['amount']}")]
        return []

    def needs_approval(args: dict) -> str | None:  # FIX risky-unconfirmed
        return f"refund above {APPROVAL_ABOVE:g} yuan" if args["amount"] > APPROVAL_ABOVE else None

    def tool(name: str, fn: Any, **kw: Any) -> Tool:
        return Tool(name, TOOLS[name]["description"], TOOLS[name]["parameters"], fn, **kw)

    return Registry([
        tool("get_order", get_order),
        tool("search_orders", desk.search_orders),
        # FIX write-not-keyed: declared a write, keyed, one refund per order
        tool("create_refund", desk.create_refund, side_effect=True, keyed=True, check=refund_rules,
             business_key=lambda a: a["order_id"], needs_approval=needs_approval),
        tool("escalate_to_human", desk.escalate_to_human, side_effect=True),
    ], lang=lang)  # type: ignore[arg-type]


def desk() -> Scenario:
    return Scenario(
        name="capstone",
        title={"en": "Capstone refund desk (hardened)", "zh": "结业退款助手（已加固）"},
        system_prompt=SYSTEM_PROMPT,
        make_state=Desk,
        make_registry=make_registry,
        snapshot=Desk.snapshot,
        apply=apply_start,
        build_prompt=aftersales_prompt,  # FIX no-date-in-prompt: today's date and the user, every turn
        step_budget=5,  # FIX unbounded-loop: at most five model turns per user turn
        context_budget=1500,  # FIX no-context-budget: long chats trimmed in whole blocks
        # FIX flat-retries: exponential backoff with full jitter
        guards=GuardConfig(retry=RetryPolicy(max_retries=2, base=0.5, cap=8.0, jitter="full")),
        calls={"read": ["get_order", {"order_id": "A1001"}],
               "write": ["create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}],
               "risky": ["create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"}],
               "wrong": ["get_order", {"order_id": 1001}, {"order_id": "A1001"}]},
        cases=(data_file("capstone/cases.jsonl"), data_file("aftersales_cases.jsonl")),
    )
