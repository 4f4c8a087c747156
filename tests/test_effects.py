"""What a run's tools wrote, as rows: added rows counted per table, changed values with old and new."""
from agentlab.workbook.effects import written_rows


def test_a_second_identical_refund_is_a_second_row():
    before = {"refunds": [{"order_id": "A1000", "amount": 5.0}], "status": {"A1001": "paid"}}
    after = {"refunds": [{"order_id": "A1000", "amount": 5.0}, {"order_id": "A1001", "amount": 199.0},
                         {"order_id": "A1001", "amount": 199.0}], "status": {"A1001": "refunded"}}
    rows = written_rows(before, after)
    assert rows == ["refund 1: order_id A1001, amount 199.0", "refund 2: order_id A1001, amount 199.0",
                    "order status A1001: paid → refunded"]
    assert written_rows(before, after, "zh")[1] == "退款 2：订单号 A1001、金额 199.0"  # a Chinese list, Chinese names
    assert written_rows(before, after, "zh")[2] == "订单状态 A1001：已支付 → 已退款"


def test_nothing_written_is_no_row_and_an_unknown_table_keeps_its_name():
    assert written_rows({"refunds": []}, {"refunds": []}) == []
    assert written_rows({}, {"shipments": [{"id": 1, "note": ""}]}) == ["shipments 1: id 1"]


def test_every_desk_s_rows_name_their_fields_and_statuses_in_chinese():
    """What the app shows under each side, for every desk: each field is named in the reader's language (a Chinese
    reader read "order_id A1001、amount 199.0"), and an order's status too; the values stay as the tools wrote them."""
    import re

    from agentlab.scenarios import retail
    from agentlab.workbook.demo import compare_expense, compare_loops, compare_retail
    from agentlab.workbook.effects import written_side_by_side
    desks = [compare_loops, compare_expense] + ([compare_retail] if retail.available() else [])
    for compare in desks:
        c = compare("lost_reply", lang="zh")
        rows = [r for side in written_side_by_side(c.start_state, c.naive_state, c.guarded_state, "zh") for r in side if r]
        assert rows, compare.__name__
        for row in rows:
            # a field's name opens the row's list (after "：") or follows "、"; a status is a value after "状态 " or "："
            names = re.findall(r"(?:：|、)([^\s：、]+) ", row)
            assert names and not [n for n in names if re.fullmatch(r"[a-z_]+", n)], row
            assert not re.search(r"(?:状态 |：|→ )(?:paid|refunded|cancelled|pending|processed|delivered)\b", row), row


def test_a_changed_field_deep_in_a_record_is_named_in_chinese_too():
    """A change inside a record (an order's status) named its field as stored, "订单 A1/status", and a status the
    catalogue names only in English stayed English; a field or status it does not know stays as the tool wrote it."""
    before = {"orders": {"A1": {"status": "pending", "note": "x"}}}
    after = {"orders": {"A1": {"status": "return requested", "note": "y"}}}
    assert written_rows(before, after, "zh") == ["订单 A1/状态：待处理 → 已申请退货", "订单 A1/note：x → y"]
    assert written_rows(before, after) == ["order A1/status: pending → return requested", "order A1/note: x → y"]
