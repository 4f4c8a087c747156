import pytest

from agentlab.clean import clean, to_number

SCHEMA = {"type": "object", "properties": {
    "amount": {"type": "number"}, "qty": {"type": "integer"}, "note": {"type": "string"},
    "lines": {"type": "array", "items": {"type": "object", "properties": {"price": {"type": "number"}}}}}}


@pytest.mark.parametrize("text,number", [("45元", 45), ("¥1,200", 1200), ("１２", 12), (" 7.5 ", 7.5),
                                         ("RMB 300", 300), ("45块", 45), ("$3.25", 3.25), ("-3", -3)])
def test_to_number(text, number):
    assert to_number(text)[0] == number


@pytest.mark.parametrize("text", ["abc", "1,2", "45 apples", "", "1.2.3"])
def test_not_a_plain_amount_is_left_alone(text):
    assert to_number(text)[0] is None


def test_clean_reports_every_change_and_leaves_input_untouched():
    args = {"amount": "¥1,200", "qty": "３", "note": "  hi ", "lines": [{"price": "9元"}]}
    out, audit = clean(args, SCHEMA)
    assert out == {"amount": 1200, "qty": 3, "note": "hi", "lines": [{"price": 9}]}
    assert args["amount"] == "¥1,200"
    assert [(c.field, c.before, c.after) for c in audit] == [
        ("amount", "¥1,200", 1200), ("qty", "３", 3), ("note", "  hi ", "hi"), ("lines[0].price", "9元", 9)]


def test_integer_field_keeps_a_fraction_as_an_error():
    out, audit = clean({"qty": "2.5"}, SCHEMA)
    assert out == {"qty": "2.5"} and audit == ()
