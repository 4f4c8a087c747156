"""The compiled validator against jsonschema, on generated schemas and values.

jsonschema is the oracle (as PyTorch is micrograd's): for every generated schema and value,
``compile_schema(s)(x) == []`` must hold exactly when ``Draft202012Validator(s).is_valid(x)``,
given the same format checks (agentlab's :data:`~agentlab.schema.FORMATS`).

Schemas are drawn from the keywords the compiled path enforces, nested, with the new ones
(``if``/``then``/``else``, ``dependentRequired``, ``dependentSchemas``, ``contains`` with its
bounds, ``propertyNames``) and local ``$ref``. Values are drawn to fit the schema most of the
time (near-valid: a shape that fits and a leaf that may not), otherwise freely.

Left out, because the two legitimately differ there:

* regex dialect: agentlab reads patterns as ECMA-262, jsonschema as Python ``re`` (``\\d``,
  ``\\w``, ``$`` before a final newline, ``.`` and ``\\r``), so only patterns that mean the
  same in both are drawn;
* ``multipleOf`` with fractions: agentlab divides the numbers as written (0.0075 is a multiple
  of 0.0001), jsonschema divides binary floats (it is not), so divisors are integers and values
  stay small (for a huge float the decimal and the binary value differ by more than 1).
"""
import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlab.schema import FORMATS, compile_schema

KEYS = ["a", "b", "c", "card"]
PATTERNS = ["^a", "b", "^c|^d", "^[ab]+", "x?y"]  # the same in ECMA-262 and Python
STRINGS = ["", "a", "ab", "ba", "card", "cd", "xy", "2026-02-28", "2026-02-30", "2026-02-28T10:00:00Z",
           "10:00:00+08:00", "23:59:60Z", "bob@example.com", "bob@", "127.0.0.1", "256.1.1.1",
           "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000\n", "a\n"]
NUMBERS = [0, 1, 2, 3, -1, 5, 10, 1.0, 1.5, 2.5, -0.5, 100]
SCALARS = st.sampled_from([None, True, False, *STRINGS, *NUMBERS])
TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]

CHECKER = jsonschema.FormatChecker(formats=())
for _name, (_test, _) in FORMATS.items():
    CHECKER.checks(_name)(lambda v, test=_test: not isinstance(v, str) or test(v))

json_values = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3), max_leaves=6)


def _leaf_keywords():
    return st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True),
        "enum": st.lists(SCALARS, min_size=1, max_size=3),
        "const": SCALARS,
        "minimum": st.sampled_from([0, 1, 2.5]), "maximum": st.sampled_from([2, 5, 10]),
        "exclusiveMinimum": st.sampled_from([0, 1]), "exclusiveMaximum": st.sampled_from([3, 10]),
        "multipleOf": st.sampled_from([1, 2, 5]),
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 4),
        "pattern": st.sampled_from(PATTERNS),
        "format": st.sampled_from([*FORMATS, "hostname"]),  # hostname: an annotation in both
        "minItems": st.integers(0, 2), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans(),
        "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 3),
        "required": st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    })


def _extend(inner):
    names = st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    some = st.lists(inner, min_size=1, max_size=3)
    key_rules = st.fixed_dictionaries({}, optional={"maxLength": st.integers(1, 3), "pattern": st.sampled_from(PATTERNS),
                                                    "enum": st.lists(st.sampled_from(KEYS), min_size=1, max_size=3)})
    return st.tuples(_leaf_keywords(), st.fixed_dictionaries({}, optional={
        "properties": names, "additionalProperties": st.booleans() | inner,
        "patternProperties": st.dictionaries(st.sampled_from(PATTERNS), inner, max_size=2),
        "items": inner, "prefixItems": some,
        "allOf": some, "anyOf": some, "oneOf": some, "not": inner,
        "if": inner, "then": inner, "else": inner,
        "dependentRequired": st.dictionaries(st.sampled_from(KEYS), st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
                                             max_size=2),
        "dependentSchemas": st.dictionaries(st.sampled_from(KEYS), inner, max_size=2),
        "contains": inner, "minContains": st.integers(0, 2), "maxContains": st.integers(0, 3),
        "propertyNames": key_rules | st.booleans(),
    })).map(lambda pair: {**pair[0], **pair[1]})


schemas = st.recursive(st.booleans() | _leaf_keywords(), _extend, max_leaves=6)


@st.composite
def with_refs(draw):
    """Sometimes the schema sits in $defs and the root only points at it, or at a part of it."""
    schema = draw(schemas)
    if isinstance(schema, dict) and draw(st.booleans()):
        return {"$defs": {"it": schema}, "$ref": "#/$defs/it", **draw(_leaf_keywords())}
    return schema


@st.composite
def near(draw, schema, depth=0):
    """A value shaped by ``schema``: its type, its properties and items, with leaves from the pools."""
    if depth > 3 or not isinstance(schema, dict) or draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    if "$ref" in schema and "$defs" in schema:
        schema = schema["$defs"]["it"]
        if not isinstance(schema, dict):
            return draw(json_values)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema and draw(st.booleans()):
            branch = draw(st.sampled_from(schema[key]))
            return draw(near(branch, depth + 1))
    kinds = schema.get("type")
    kind = draw(st.sampled_from(kinds)) if isinstance(kinds, list) else kinds
    if "enum" in schema and draw(st.booleans()):
        return draw(st.sampled_from(schema["enum"]))
    if kind == "object" or (kind is None and any(k in schema for k in ("properties", "required", "dependentRequired"))):
        props = schema.get("properties", {})
        keys = set(schema.get("required", [])) | set(draw(st.lists(st.sampled_from(KEYS), max_size=3)))
        return {k: draw(near(props.get(k, True), depth + 1)) for k in sorted(keys)}
    if kind == "array" or (kind is None and any(k in schema for k in ("items", "prefixItems", "contains"))):
        prefix = [draw(near(s, depth + 1)) for s in schema.get("prefixItems", [])]
        rest = draw(st.lists(near(schema.get("items", schema.get("contains", True)), depth + 1), max_size=3))
        return prefix + rest
    if kind == "string":
        return draw(st.sampled_from(STRINGS))
    if kind in ("integer", "number"):
        return draw(st.sampled_from(NUMBERS))
    return draw(SCALARS)


@st.composite
def cases(draw):
    schema = draw(with_refs())
    value = draw(near(schema) | json_values)
    return schema, value


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_compiled_path_agrees_with_jsonschema(case):
    schema, value = case
    ours = compile_schema(schema)(value)
    theirs = jsonschema.Draft202012Validator(schema, format_checker=CHECKER).is_valid(value)
    assert (ours == []) == theirs, (schema, value, ours)


@settings(max_examples=100, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_delegated_path_agrees_with_jsonschema(case):
    """The same schemas forced down the delegated path (unevaluatedProperties: true changes nothing)."""
    schema, value = case
    if not isinstance(schema, dict):
        return
    forced = {**schema, "unevaluatedProperties": True}
    ours = compile_schema(forced)(value)
    theirs = jsonschema.Draft202012Validator(forced, format_checker=CHECKER).is_valid(value)
    assert (ours == []) == theirs, (forced, value, ours)
