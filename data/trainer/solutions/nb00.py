"""Notebook 00's build exercise, solved: a refund tool that refunds an order once, whatever the loop resends."""


def my_create_refund(desk, order_id, amount, reason, remark=""):
    for refund in desk.refunds:
        if refund["order_id"] == order_id:
            return refund  # already refunded: the refund on record, nothing paid again
    return desk.create_refund(order_id, amount, reason, remark)
