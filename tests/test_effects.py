"""What a run's tools wrote, as rows: added rows counted per table, changed values with old and new."""
from agentlab.workbook.effects import written_rows


def test_a_second_identical_refund_is_a_second_row():
    before = {"refunds": [{"order_id": "A1000", "amount": 5.0}], "status": {"A1001": "paid"}}
    after = {"refunds": [{"order_id": "A1000", "amount": 5.0}, {"order_id": "A1001", "amount": 199.0},
                         {"order_id": "A1001", "amount": 199.0}], "status": {"A1001": "refunded"}}
    rows = written_rows(before, after)
    assert rows == ["refund 1: order_id A1001, amount 199.0", "refund 2: order_id A1001, amount 199.0",
                    "order status A1001: paid → refunded"]
    assert written_rows(before, after, "zh")[1] == "退款 2：order_id A1001、amount 199.0"  # a Chinese list


def test_nothing_written_is_no_row_and_an_unknown_table_keeps_its_name():
    assert written_rows({"refunds": []}, {"refunds": []}) == []
    assert written_rows({}, {"shipments": [{"id": 1, "note": ""}]}) == ["shipments 1: id 1"]
