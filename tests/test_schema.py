import json

import pytest
from conftest import DATASETS, need

from agentlab.schema import SchemaError, compile_schema, suggest

SUITE = DATASETS / "json-schema-test-suite" / "draft2020-12"


def _suite_cases():
    if not SUITE.exists():
        return [pytest.param(None, None, id="suite-absent")]
    cases = []
    for f in sorted(SUITE.glob("*.json")):
        for group in json.loads(f.read_text()):
            for test in group["tests"]:
                cases.append(pytest.param(group["schema"], test, id=f"{f.stem}:{group['description']}:{test['description']}"))
    return cases


@pytest.mark.dataset
@pytest.mark.parametrize("schema,test", _suite_cases())
def test_json_schema_test_suite(schema, test):
    """Every test of draft 2020-12 for the keywords we support agrees with the suite."""
    need(SUITE, "JSON-Schema-Test-Suite")
    validate = compile_schema(schema)
    assert (not validate(test["data"])) == test["valid"], validate(test["data"])


def test_suite_is_not_empty():
    need(SUITE, "JSON-Schema-Test-Suite")
    assert len(_suite_cases()) > 400


REFUND = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": r"^A\d{4}$", "description": "Order number, like A1001"},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 100000},
        "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock"]},
        "date": {"type": "string", "format": "date"},
        "items": {"type": "array", "maxItems": 3, "items": {
            "type": "object", "properties": {"sku": {"type": "string", "minLength": 2}, "qty": {"type": "integer", "minimum": 1}},
            "required": ["sku"], "additionalProperties": False}},
    },
    "required": ["order_id", "amount", "reason"],
    "additionalProperties": False,
}


def reasons(problems):
    return {(p.field, p.reason) for p in problems}


def test_valid_call_has_no_problems():
    v = compile_schema(REFUND)
    assert v({"order_id": "A1001", "amount": 10, "reason": "user_cancel", "date": "2026-02-28",
              "items": [{"sku": "ab", "qty": 1}]}) == []


def test_every_problem_is_reported_at_once_with_paths():
    v = compile_schema(REFUND)
    found = v({"orderId": "A1001", "amount": True, "reason": "changed mind", "date": "2026-02-30",
               "items": [{"sku": "x", "qty": 0}, {"SKU": "ab"}, {"sku": 5}, {"sku": "cd"}]})
    assert reasons(found) == {
        ("order_id", "missing"), ("orderId", "unknown_field"), ("amount", "wrong_type"),
        ("reason", "not_in_enum"), ("date", "bad_format"), ("items[0].sku", "out_of_range"),
        ("items[0].qty", "out_of_range"), ("items[1].sku", "missing"), ("items[1].SKU", "unknown_field"),
        ("items[2].sku", "wrong_type"), ("items", "out_of_range"),
    }
    unknown = next(p for p in found if p.field == "orderId")
    assert unknown.suggestion == "order_id" and unknown.allowed == tuple(REFUND["properties"])
    enum = next(p for p in found if p.field == "reason")
    assert enum.allowed == ("user_cancel", "out_of_stock")


@pytest.mark.parametrize("value,ok", [(1, True), (1.0, True), (1.5, False), (True, False), ("1", False), (None, False)])
def test_integer_semantics(value, ok):
    assert (compile_schema({"type": "integer"})(value) == []) is ok


def test_boolean_is_never_a_number():
    assert compile_schema({"type": "number"})(False)[0].reason == "wrong_type"
    assert compile_schema({"enum": [0]})(False)[0].reason == "not_in_enum"
    assert compile_schema({"enum": [1.0]})(1) == []


@pytest.mark.parametrize("schema,value,reason", [
    ({"minimum": 1}, 0, "out_of_range"), ({"exclusiveMaximum": 1}, 1, "out_of_range"),
    ({"maxLength": 2}, "abc", "out_of_range"), ({"pattern": "^a"}, "b", "bad_format"),
    ({"format": "date"}, "21/09/2026", "bad_format"), ({"format": "date-time"}, "2026-09-21 25:00:00Z", "bad_format"),
    ({"const": "x"}, "y", "not_in_enum"), ({"uniqueItems": True}, [1, 1.0], "not_unique"),
    ({"not": {"type": "string"}}, "s", "not_allowed"), (False, 1, "not_allowed"),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 3, "wrong_type"),
])
def test_each_keyword_gives_its_reason(schema, value, reason):
    assert [p.reason for p in compile_schema(schema)(value)] == [reason]


def test_local_refs_and_recursion():
    tree = {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                               "additionalProperties": False}}, "$ref": "#/$defs/node"}
    v = compile_schema(tree)
    assert v({"kids": [{"kids": []}]}) == []
    assert reasons(v({"kids": [{"kid": 1}]})) == {("kids[0].kid", "unknown_field")}


def test_broken_schema_is_a_developer_error():
    with pytest.raises(SchemaError):
        compile_schema({"type": "strnig"})
    with pytest.raises(SchemaError):
        compile_schema({"$ref": "http://example.com/x"})


@pytest.mark.parametrize("name,allowed,expected", [
    ("orderId", ["order_id"], "order_id"), ("order_id", ["orderId"], "orderId"),
    ("OrderID", ["order_id"], "order_id"), ("ordr_id", ["order_id", "amount"], "order_id"), ("zzz", ["order_id"], None),
])
def test_did_you_mean(name, allowed, expected):
    assert suggest(name, allowed) == expected
