"""Notebook 05's build exercise, solved: a refund is keyed by its order (one refund per order), not by its amount,
its wording, or every argument."""


def my_business_key(args):
    return args["order_id"]
