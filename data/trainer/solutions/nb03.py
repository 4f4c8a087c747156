"""Notebook 03's build exercise, solved: the backend's refusal of a refund above the order's amount, written so the
model can fix its call (which field, what is wrong, what would be right) and knows changing the call helps."""
from agentlab.errors import ToolFailure


def my_amount_failure(order_id, amount, paid):
    return ToolFailure("INVALID_ARGS", {
        "en": f"amount {amount:g} is more than order {order_id} cost: set amount to at most {paid:g} and call again.",
        "zh": f"amount {amount:g} 超过了订单 {order_id} 的金额：把 amount 改为不超过 {paid:g} 后再调用。"})
