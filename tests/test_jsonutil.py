import pytest

from agentlab.jsonutil import canonical, json_eq, parse_strict


@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', "{'a': 1}",
                                 '{"a": 1} trailing', '{"a": 1', '', '{"a": 1,}', '{"a": 01}'])
def test_strict_parse_rejects(raw):
    value, failure = parse_strict(raw)
    assert value is None and failure is not None
    assert failure.line >= 1 and failure.column >= 1


def test_failure_says_where():
    _, f = parse_strict('{"date": "2026-09-21", "amount": 45')
    assert "truncated" in f.reason and f.position == 35


def test_parse_ok():
    assert parse_strict('{\n  "a": [1, 2.5, true, null]\n}') == ({"a": [1, 2.5, True, None]}, None)


def test_canonical_sorts_keys_and_normalises_numbers():
    assert canonical({"b": 2.0, "a": [1.0, {"y": 1, "x": 0.5}]}) == canonical({"a": [1, {"x": 0.5, "y": 1}], "b": 2})
    assert canonical({"a": True}) != canonical({"a": 1})


def test_json_equality():
    assert json_eq(1, 1.0) and not json_eq(True, 1) and not json_eq([False], [0]) and json_eq({"a": [1]}, {"a": [1.0]})


@pytest.mark.parametrize("raw, words", [
    ('{"amount": 1e400}', "too large"),
    ('{"amount": -1e400}', "too large"),
    ('{"amount": ' + "9" * 400 + "}", "64 digits"),
    ('{"a": ' + "[" * 70 + "]" * 70 + "}", "64 levels"),
])
def test_what_no_check_could_take_is_refused_while_reading(raw, words):
    value, failure = parse_strict(raw, max_depth=64)
    assert value is None and words in failure.describe() and "sys." not in failure.describe()


def test_a_check_that_cannot_handle_a_value_refuses_it_instead_of_raising():
    """1e400 used to become infinity and take down multipleOf (and with it the whole run)."""
    from agentlab import Registry
    reg = Registry.from_specs([{"name": "pay", "description": "Pay an amount.", "parameters": {
        "type": "object", "properties": {"amount": {"type": "number", "multipleOf": 0.01}}}}])
    for raw in ('{"amount": 1e400}', '{"amount": ' + "9" * 400 + "}", {"amount": float("inf")},
                {"amount": [[[[[[]]]]]] and None}):
        checked = reg.check("pay", raw)
        assert checked.render("en") and checked.render("zh")
    inf = reg.check("pay", {"amount": float("inf")})
    assert not inf.ok and inf.error.problems[0].reason in ("uncheckable", "wrong_type", "out_of_range")
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert reg.check("pay", {"amount": deep}).error.code == "BAD_JSON"
