"""Notebook 02's build exercise, solved: the loose create_refund contract, tightened until the boundary refuses the
notebook's bad calls."""


def my_tighten(schema):
    schema["required"] = ["order_id", "amount", "reason"]  # missing field
    schema["properties"]["amount"]["type"] = "number"  # "45元"
    schema["properties"]["reason"]["enum"] = ["user_cancel", "out_of_stock", "price_error"]  # invented reason
    schema["additionalProperties"] = False  # orderId
    return schema
