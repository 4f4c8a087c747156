"""Notebook 01's build exercise, solved: a create_refund contract that refuses what the argument faults send."""

my_refund_schema = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A\\d{4}$", "description": "Order number, like A1001."},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 100000,
                   "description": "Refund amount in yuan, a positive number, e.g. 199.0."},
        "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock", "price_error"],
                   "description": "Why the order is refunded."},
        "remark": {"type": "string", "maxLength": 200, "description": "Optional note for the finance team."},
    },
    "required": ["order_id", "amount", "reason"],
    "additionalProperties": False,
}
