"""Model solution, notebook 17's build exercise: the refund's parameters with an id pattern, a range, an enum and every
field required. Never copied to participants."""

my_parameters = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A\\d{4}$", "description": "Order number, like A1001."},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 100000,
                   "description": "Refund amount in yuan, a positive number, e.g. 199.0."},
        "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock", "price_error"],
                   "description": "user_cancel, out_of_stock or price_error."},
    },
    "required": ["order_id", "amount", "reason"],
    "additionalProperties": False,
}
