import json
import re
from pathlib import Path

import pytest
from conftest import DATASETS, need

from agentlab.names import suggest
from agentlab.schema import SchemaError, close_objects, compile_schema, transform, unsupported_keywords

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


# --- the keywords the compiled path gained, and what goes to jsonschema -----------------------
@pytest.mark.parametrize("schema,value,expected", [
    ({"dependentRequired": {"method": ["card_number"]}}, {"method": "card"}, {("card_number", "missing")}),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, {("b", "missing")}),
    ({"dependencies": {"a": ["b"]}}, {"a": 1}, {("b", "missing")}),
    ({"if": {"type": "integer"}, "then": {"minimum": 1}, "else": {"type": "string"}}, 0, {("$", "out_of_range")}),
    ({"if": {"type": "integer"}, "then": {"minimum": 1}, "else": {"type": "string"}}, None, {("$", "wrong_type")}),
    ({"contains": {"type": "integer"}}, ["a"], {("$", "out_of_range")}),
    ({"contains": {"type": "integer"}, "minContains": 2}, ["a", 1], {("$", "out_of_range")}),
    ({"contains": {"type": "integer"}, "maxContains": 1}, [1, 2], {("$", "out_of_range")}),
    ({"properties": {"tags": {"propertyNames": {"maxLength": 3}}}}, {"tags": {"long": 1, "ok": 2}},
     {("tags.long", "out_of_range")}),
    ({"propertyNames": {"enum": ["a"]}}, {"b": 1}, {("b", "not_in_enum")}),
    ({"$defs": {"a/b": {"type": "string"}, "t~": {"type": "integer"}, "p%": {"type": "null"}},
      "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/t~0"}, "z": {"$ref": "#/$defs/p%25"}}},
     {"x": 1, "y": "s", "z": 0}, {("x", "wrong_type"), ("y", "wrong_type"), ("z", "wrong_type")}),
])
def test_new_compiled_keywords(schema, value, expected):
    assert reasons(compile_schema(schema)(value)) == expected


@pytest.mark.parametrize("schema", [{"format": "uuid"}, {"format": "date"}, {"format": "email"},
                                    {"format": "ipv4"}, {"format": "time"}, {"pattern": "^[0-9a-f-]+$"},
                                    {"pattern": "^[0-9a-f-]+$", "unevaluatedProperties": False}])
def test_no_format_or_pattern_matches_across_a_trailing_newline(schema):
    good = {"format": {"uuid": "123e4567-e89b-12d3-a456-426614174000", "date": "2026-02-28", "email": "a@b.co",
                       "ipv4": "10.0.0.1", "time": "10:00:00Z"}.get(schema.get("format"), "")}["format"] \
        or "123e4567-e89b-12d3-a456-426614174000"
    v = compile_schema(schema)
    assert v(good) == [] and [p.reason for p in v(good + "\n")] == ["bad_format"]


def test_patterns_are_ecma_in_both_paths():
    for extra in ({}, {"unevaluatedProperties": False}):
        v = compile_schema({"properties": {"n": {"pattern": r"^\d+$"}, "w": {"pattern": r"^\w+$"}}, **extra})
        assert v({"n": "2026", "w": "cafe"}) == []
        assert reasons(v({"n": "２０２６", "w": "café"})) == {("n", "bad_format"), ("w", "bad_format")}
        assert next(p for p in v({"n": "x"}) if p.field == "n").expected == r"pattern ^\d+$"  # as written


def test_delegated_schemas_give_the_same_problems():
    schema = dict(REFUND, unevaluatedProperties=False)
    del schema["additionalProperties"]
    found = compile_schema(schema)({"orderId": "A1001", "amount": True, "reason": "changed mind", "date": "2026-02-30",
                                    "items": [{"sku": "x", "qty": 0}, {"SKU": "ab"}, {"sku": 5}, {"sku": "cd"}]})
    assert reasons(found) == reasons(compile_schema(REFUND)({
        "orderId": "A1001", "amount": True, "reason": "changed mind", "date": "2026-02-30",
        "items": [{"sku": "x", "qty": 0}, {"SKU": "ab"}, {"sku": 5}, {"sku": "cd"}]}))
    assert next(p for p in found if p.field == "orderId").suggestion == "order_id"


def test_what_cannot_be_enforced_is_refused():
    with pytest.raises(SchemaError, match="resources="):
        compile_schema({"$ref": "https://example.com/nowhere.json"})
    with pytest.raises(SchemaError, match="unknown \\$schema"):
        compile_schema({"$schema": "https://example.com/my-dialect", "type": "string"})
    meta = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/meta",
            "$vocabulary": {"https://json-schema.org/draft/2020-12/vocab/core": True, "https://example.com/vocab/money": True}}
    with pytest.raises(SchemaError, match="vocab/money"):
        compile_schema({"$schema": "https://example.com/meta", "type": "string"}, resources={"https://example.com/meta": meta})
    with pytest.raises(SchemaError, match="points nowhere"):
        compile_schema({"$ref": "#nothing-here"})
    with pytest.raises(SchemaError):
        compile_schema({"type": 5, "unevaluatedProperties": False})  # malformed, on the delegated path too


def test_another_draft_is_enforced_as_that_draft():
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}], "additionalItems": False}
    v = compile_schema(draft7)
    assert v([1]) == [] and v([1, 2]) != [] and v(["a"]) != []


def test_jsonschema_is_imported_only_for_a_schema_that_needs_it():
    import subprocess
    import sys
    code = ("import sys, agentlab; from agentlab import compile_schema; compile_schema({'type': 'object', "
            "'if': {'required': ['a']}, 'then': {'required': ['b']}})({}); print('jsonschema' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_unsupported_keywords_are_only_the_unknown_ones_in_every_position():
    schema = {"type": "object", "maxLenght": 3, "unevaluatedProperties": False, "$anchor": "x",
              "properties": {"a": {"dependentRequired": {}, "colour": 1}},
              "$defs": {"d": {"minimun": 1}}, "if": {"requird": []}, "then": {"x-flag": True},
              "contains": {"multipleof": 2}, "propertyNames": {"patern": "a"}, "dependentSchemas": {"a": {"foo": 1}},
              "anyOf": [{"bar": 1}], "unevaluatedItems": {"baz": 1}}
    assert set(unsupported_keywords(schema)) == {
        ("$", "maxLenght"), ("$.a", "colour"), ("$.$defs.d", "minimun"), ("$.if", "requird"), ("$.then", "x-flag"),
        ("$.contains", "multipleof"), ("$.propertyNames", "patern"), ("$.dependentSchemas.a", "foo"),
        ("$.anyOf[0]", "bar"), ("$.unevaluatedItems", "baz")}


def test_transform_reaches_the_new_positions():
    schema = {"if": {"type": "dict"}, "then": {"type": "dict"}, "else": {"type": "dict"}, "contains": {"type": "dict"},
              "dependentSchemas": {"a": {"type": "dict"}}, "propertyNames": {"type": "dict"},
              "unevaluatedProperties": {"type": "dict"}, "dependencies": {"a": ["b"], "c": {"type": "dict"}}}
    seen = []
    transform(schema, lambda node: seen.append(node.get("type")) or node)
    assert seen.count("dict") == 8


def test_close_objects_keeps_conditions_and_compositions_working():
    closed = close_objects(PAY_LIKE)
    assert "additionalProperties" not in closed["if"] and "additionalProperties" not in closed["then"]
    v = compile_schema(closed)
    assert v({"method": "card", "card_number": "4111"}) == [] and reasons(v({"method": "card"})) == {("card_number", "missing")}
    assert reasons(v({"method": "cash", "cvv": 1})) == {("cvv", "unknown_field")}
    # fields named by then-branches count as known: unevaluatedProperties, never additionalProperties
    nested = close_objects({"properties": {"kind": {"enum": ["a", "b"]}}, "if": {"properties": {"kind": {"const": "a"}}},
                            "then": {"properties": {"a_only": {"type": "integer"}}}})
    assert nested["unevaluatedProperties"] is False and "additionalProperties" not in nested
    v = compile_schema(nested)
    assert v({"kind": "a", "a_only": 1}) == [] and reasons(v({"kind": "b", "a_only": 1})) == {("a_only", "unknown_field")}
    # an object that already says what to do with unevaluated fields is left as it is
    own = {"properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}], "unevaluatedProperties": {"type": "string"}}
    assert close_objects(own) == own
    # alternatives with no fields of their own are whole shapes: each is closed
    alt = close_objects({"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "null"}]})
    assert alt["anyOf"][0]["additionalProperties"] is False


PAY_LIKE = {"type": "object", "properties": {"method": {"enum": ["card", "cash"]}, "card_number": {"type": "string"}},
            "required": ["method"], "if": {"properties": {"method": {"const": "card"}}},
            "then": {"required": ["card_number"]}}


# --- the attacker's review (schema-fixes) --------------------------------------------------------------
# close_objects must never make a valid value invalid, nor an invalid one valid: every instance here has
# no unknown field, so the closed schema must agree with jsonschema on the ORIGINAL schema, both ways.
_CARD = {"type": "object", "properties": {"kind": {"enum": ["credit", "gift"]}, "number": {"type": "string"}}}
CLOSING_CASES = [
    ({"type": "object", "properties": {"card": _CARD, "cvv": {"type": "string"}},
      "if": {"properties": {"card": {"properties": {"kind": {"const": "credit"}}, "required": ["kind"]}},
             "required": ["card"]},
      "then": {"required": ["cvv"]}},
     [{"card": {"kind": "credit", "number": "4111"}}, {"card": {"kind": "credit", "number": "4111"}, "cvv": "123"},
      {"card": {"kind": "gift", "number": "1"}}]),
    ({"type": "object", "properties": {"a": {}, "b": {}},
      "not": {"anyOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]}]}},
     [{"a": 1, "b": 2}, {"a": 2, "b": 2}]),
    ({"type": "object", "properties": {"m": {}, "n": {}, "z": {}},
      "if": {"anyOf": [{"properties": {"m": {"const": "card"}}, "required": ["m"]}]}, "then": {"required": ["n"]}},
     [{"m": "card", "z": 1}, {"m": "card", "z": 1, "n": 1}, {"m": "cash", "z": 1}]),
    ({"type": "object", "properties": {"m": {}, "n": {}, "z": {}}, "if": {"$ref": "#/$defs/card"},
      "then": {"required": ["n"]}, "$defs": {"card": {"properties": {"m": {"const": "card"}}, "required": ["m"]}}},
     [{"m": "card", "z": 1}, {"m": "card", "n": 1}, {"m": "cash"}]),
    ({"type": "object", "properties": {"m": {}, "n": {}}, "not": {"$ref": "#/$defs/onlym"},
      "$defs": {"onlym": {"properties": {"m": {}}, "required": ["m"]}}},
     [{"m": 1, "n": 1}, {"n": 1}]),
    ({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"sku": {}, "qty": {}}},
                                             "contains": {"properties": {"sku": {"const": "X"}}, "required": ["sku"]}}}},
     [{"l": [{"sku": "X", "qty": 1}]}, {"l": [{"sku": "Y", "qty": 1}]}]),
    # mixins: a $defs entry that adds fields to the object that uses it
    ({"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/base"}],
      "$defs": {"base": {"properties": {"b": {"type": "string"}}}}},
     [{"a": "x", "b": "y"}, {"a": "x", "b": 1}]),
    ({"type": "object", "$ref": "#/$defs/base", "properties": {"a": {}}, "$defs": {"base": {"properties": {"b": {}}}}},
     [{"a": 1, "b": 2}]),
    ({"type": "object", "properties": {"m": {}, "n": {}, "c": {"type": "object", "properties": {"x": {}}}},
      "propertyNames": {"$ref": "#/$defs/name"}, "$defs": {"name": {"maxLength": 1}}},
     [{"m": 1, "c": {"x": 1}}]),
]


@pytest.mark.parametrize("schema,instances", CLOSING_CASES)
def test_close_objects_agrees_with_the_original_schema_where_no_field_is_unknown(schema, instances):
    import jsonschema

    from agentlab import Registry
    registry = Registry.from_specs([{"name": "t", "parameters": schema}])
    for value in instances:
        expected = jsonschema.Draft202012Validator(schema).is_valid(value)
        assert registry.check("t", json.dumps(value)).ok == expected, (value, close_objects(schema))


def test_close_objects_still_closes_shapes_and_leaves_tests_open():
    closed = close_objects(CLOSING_CASES[0][0])
    assert closed["properties"]["card"]["additionalProperties"] is False  # the shape: closed
    assert "additionalProperties" not in closed["if"]["properties"]["card"]  # the test: open at every depth
    recursive = close_objects({"$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}},
                               "$ref": "#/$defs/n"})
    assert recursive["$defs"]["n"]["additionalProperties"] is False  # a whole shape reached by $ref: closed


@pytest.mark.parametrize("schema,keyword", [
    ({"type": "string", "minLength": "5"}, "minLength"), ({"type": "array", "maxItems": "2"}, "maxItems"),
    ({"maxItems": -1}, "maxItems"), ({"minLength": 2.5}, "minLength"), ({"minProperties": True}, "minProperties"),
    ({"type": "number", "multipleOf": 0}, "multipleOf"), ({"multipleOf": -2}, "multipleOf"),
    ({"type": "object", "required": "name"}, "required"), ({"required": [1]}, "required"),
    ({"required": ["a", "a"]}, "required"), ({"type": "array", "uniqueItems": "false"}, "uniqueItems"),
    ({"type": "string", "pattern": 5}, "pattern"), ({"pattern": "("}, "pattern"),
    ({"type": "object", "patternProperties": {"(": {}}}, "pattern"), ({"dependentRequired": {"a": [1]}}, "dependentRequired"),
    ({"type": ["string", "string"]}, "type"), ({"type": []}, "type"), ({"minimum": "1"}, "minimum"),
    ({"allOf": []}, "allOf"), ({"properties": {"a": 5}}, "properties"), ({"format": 5}, "format"),
    ({"properties": {"deep": {"items": {"maxLength": "x"}}}}, "maxLength"),
    ({"$defs": {"unused": {"minLength": "x"}}}, "minLength"),
])
def test_a_keyword_of_the_wrong_kind_is_refused_at_registration(schema, keyword):
    with pytest.raises(SchemaError, match=keyword) as info:
        compile_schema(schema)
    said = info.value.localized("zh")  # a widget in Chinese says it in Chinese; the keyword stays as written
    assert keyword in said and re.search(r"[\u4e00-\u9fff]", said) and str(info.value) == info.value.localized("en")


def test_every_schema_error_is_written_in_both_languages():
    """Every place that raises SchemaError names a sentence of the catalogue, which has it in both languages (read
    from the source, so a refusal written out in code, in one language or two, fails here)."""
    import ast

    from agentlab.i18n import _catalog
    root = Path(__file__).resolve().parent.parent / "agentlab"
    not_said = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                    and getattr(node.exc.func, "id", None) == "SchemaError":
                key = node.exc.args[0] if node.exc.args else None
                if not (isinstance(key, ast.Constant) and set(_catalog().get(key.value, {})) == {"en", "zh"}):
                    not_said.append(f"{path.name}:{node.lineno}")
    assert not_said == []


def test_the_keyword_check_names_where_it_is_and_accepts_what_2020_12_allows():
    with pytest.raises(SchemaError, match=r"#/properties/code/minLength"):
        compile_schema({"type": "object", "properties": {"code": {"type": "string", "minLength": "5"}}})
    # integers written as 2.0 are integers; an unknown keyword is not judged; additionalItems is not 2020-12
    v = compile_schema({"maxLength": 2.0, "x-anything": "5", "additionalItems": 5, "multipleOf": 0.5})
    assert v(1.5) == [] and v(1.2) != []


def test_a_huge_integer_against_a_fractional_multiple_of_does_not_crash():
    assert compile_schema({"multipleOf": 0.1})(10 ** 400) == []
    assert compile_schema({"multipleOf": 10 ** 400})(1.5) != []


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}},
    {"if": {"$ref": "#"}},
    {"$anchor": "a", "$ref": "#a"},  # the delegated path
    {"$defs": {"a": {"$anchor": "x", "$ref": "#/$defs/b"}, "b": {"$ref": "#x"}}, "$ref": "#x"},
])
def test_a_ref_loop_that_never_moves_into_the_value_is_refused_at_registration(schema):
    with pytest.raises(SchemaError, match="loop"):
        compile_schema(schema)


def test_a_ref_loop_through_properties_or_items_is_a_tree_and_fine():
    tree = {"$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}, "l": {"items": {"$ref": "#"}}}}},
            "$ref": "#/$defs/n"}
    v = compile_schema(tree)
    assert v({"c": {"c": {}}, "l": [{}]}) == [] and v({"c": {"c": 1}}) != []


def test_the_delegated_path_walks_list_items_and_checks_the_documents_it_reaches():
    for schema in ({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"$ref": "http://evil.example/x"}]},
                   {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{}],
                    "additionalItems": {"$ref": "http://evil.example/x"}},
                   {"$schema": "http://json-schema.org/draft-04/schema#", "items": [{"$ref": "http://evil.example/y"}]}):
        with pytest.raises(SchemaError, match="nobody supplied"):
            compile_schema(schema)
    with pytest.raises(SchemaError, match="metaschema"):
        compile_schema({"$ref": "https://ex.com/m.json"}, resources={"https://ex.com/m.json": {"type": 5}})
    # draft 3 allows a schema in a type list: reported, not a TypeError
    v = compile_schema({"$schema": "http://json-schema.org/draft-03/schema#", "type": [{"type": "string"}, "integer"]})
    assert reasons(v(1.5)) == {("$", "wrong_type")} and v("a") == [] and v(3) == []


@pytest.mark.parametrize("schema", [{"oneOf": [{"type": "integer"}, {"minimum": 0}]},
                                    {"$anchor": "d", "oneOf": [{"type": "integer"}, {"minimum": 0}]}])
def test_one_of_matched_twice_says_so_in_both_languages(schema):
    from agentlab.errors import make_error
    problems = compile_schema(schema)(1)
    assert reasons(problems) == {("$", "many_match")}
    assert "none" not in problems[0].to_dict("en")["hint"] and "more than one" in problems[0].to_dict("en")["hint"]
    assert "同时符合" in problems[0].to_dict("zh")["hint"]
    assert make_error("INVALID_ARGS", problems=problems)
    assert reasons(compile_schema(schema)(-1.5)) != {("$", "many_match")}


CATASTROPHIC = ["^(a+)+$", "(a|aa)+$", "(x+x+)+y", "^(\\w+\\s?)*$", "(a*)*b"]
BENIGN = ["^a+$", "^(a|b)+$", "^[a-z]+(-[a-z]+)*$", "^(\\d{1,3}\\.){3}\\d{1,3}$", "^#W\\d{7}$", "^[A-Z]{3}$"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_is_refused_at_load_in_both_languages(pattern):
    """Before, ``^(a+)+$`` compiled and every check of a long "aaaa…!" took seconds (lint's AL011 only warned)."""
    for schema, where in (({"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}},
                           "#/properties/code/pattern"),
                          ({"type": "object", "patternProperties": {pattern: {"type": "string"}}}, "#/patternProperties/"),
                          ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",  # the delegated path
                            "properties": {"code": {"pattern": pattern}}}, "#/properties/code/pattern")):
        with pytest.raises(SchemaError) as info:
            compile_schema(schema)
        assert repr(pattern) in str(info.value) and where in str(info.value) and "exponential" in str(info.value)
        assert repr(pattern) in info.value.localized("zh") and "指数级" in info.value.localized("zh")
    money = {"$id": "https://example.com/code.json", "type": "string", "pattern": pattern}
    with pytest.raises(SchemaError, match="exponential"):  # a document a $ref may reach is loaded too
        compile_schema({"$ref": "https://example.com/code.json"}, resources={"https://example.com/code.json": money})


@pytest.mark.parametrize("pattern", BENIGN)
def test_benign_patterns_still_load_and_check(pattern):
    check = compile_schema({"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}},
                            "patternProperties": {pattern: {"type": "string"}}})
    assert check({"code": 5}) and check({"code": "?"})


def test_the_linter_and_the_loader_share_one_reading_of_a_slow_pattern():
    import importlib
    schema = importlib.import_module("agentlab.schema")
    assert importlib.import_module("agentlab.lint").slow_pattern is schema.slow_pattern
    many = "(" + "|".join(f"w{i}x" for i in range(5000)) + ")+"  # read once, not pair by pair, on every load
    assert not schema.slow_pattern(many) and schema.slow_pattern(many[:-2] + "|w1)+")


def test_a_schema_compiled_before_gets_its_check_back_and_no_caller_can_change_it():
    """Registries are built per case and per run; an equal schema (same JSON text) is compiled once."""
    from agentlab.schema import compiler
    first = {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}, "required": ["n"]}
    again = json.loads(json.dumps(first))
    check = compiler.compile_schema(first)
    assert compiler.compile_schema(again) is check
    first["properties"]["n"]["enum"].append(3)  # the caller changes its schema after compiling it
    assert check({"n": 3}) and compiler.compile_schema(again)({"n": 3})  # 3 is still refused by the check held
    assert compiler.compile_schema(first)({"n": 3}) == []  # the changed schema is a schema of its own
    reordered = {"required": ["n"], "type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}
    assert compiler.compile_schema(reordered) is not check  # keys in another order: problems may come in another order


def test_a_schema_json_writes_differently_or_with_resources_is_compiled_as_given():
    from agentlab.schema import compiler
    number_key = {"type": "integer", "examples": [{1: "one"}]}  # JSON would write the key as "1"
    assert compiler.compile_schema(number_key) is not compiler.compile_schema(number_key)
    assert compiler.compile_schema(number_key)("x") and compiler.compile_schema(number_key)(1) == []
    for _ in range(2):  # a tuple JSON would write as a list: refused as before, every time
        with pytest.raises(compiler.SchemaError):
            compiler.compile_schema({"type": "object", "required": ("n",)})
    money = {"https://example.com/money.json": {"type": "number"}}
    ref = {"$ref": "https://example.com/money.json"}
    assert compiler.compile_schema(ref, resources=money) is not compiler.compile_schema(ref, resources=money)
    assert compiler.compile_schema(ref, resources=money)("x")
    with pytest.raises(compiler.SchemaError):  # a refused schema is refused every time, never kept
        compiler.compile_schema({"type": "nonsense"})
    with pytest.raises(compiler.SchemaError):
        compiler.compile_schema({"type": "nonsense"})


def test_the_checks_kept_are_bounded_by_their_schemas_text_and_formats_cannot_change_under_them(monkeypatch):
    from agentlab.schema import FORMATS, compiler
    monkeypatch.setattr(compiler, "_CHECKS", {})
    monkeypatch.setattr(compiler, "_kept", 0)
    monkeypatch.setattr(compiler, "_KEPT_ALL", 2_000)
    schemas = [{"type": "object", "properties": {f"f{i}_{j}": {"type": "string"} for j in range(20)}} for i in range(10)]
    for schema in schemas:
        compiler.compile_schema(schema)
    assert 0 < compiler._kept <= 2_000 and sum(map(len, compiler._CHECKS)) == compiler._kept
    assert len(compiler._CHECKS) < len(schemas)  # the oldest went
    big = {"type": "object", "properties": {f"field_{i}": {"type": "string"} for i in range(1_000)}}
    assert compiler.compile_schema(big) is not compiler.compile_schema(big)  # over 16 KB of text: never held
    with pytest.raises(TypeError):  # a kept check read the formats when compiled: they cannot change after
        FORMATS["phone"] = (str.isdigit, "digits")  # type: ignore[index]


def test_a_bound_too_large_for_a_float_is_said_as_such():
    """maximum: 1e400 is read as infinity, and the error said "maximum must be a number, got number inf": a number,
    refused for not being one. It now says the number is too large to be held."""
    import json as _json

    from agentlab.schema import SchemaError as _SchemaError
    from agentlab.tools import Registry as _Registry
    from agentlab.tools import Tool as _Tool
    schema = _json.loads('{"type": "object", "properties": {"amount": {"type": "number", "maximum": 1e400}}}')
    with pytest.raises(_SchemaError) as caught:
        _Registry([_Tool("refund", "Refund an order.", schema)])
    assert "1e400" in caught.value.localized("en") and "无穷大" in caught.value.localized("zh")
    assert "must be a number," not in caught.value.localized("en")
