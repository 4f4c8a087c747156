"""The schema's own keywords: which ones draft 2020-12 has, and whether their values are allowed.

These are the meta-schema checks, run once at registration (the call path never sees them):
:func:`check_keywords` refuses a keyword value the draft does not allow, :func:`unsupported_keywords`
lists the keywords it does not know (the linter warns about them), and :func:`subschemas` walks every
position where a subschema may sit.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from ..errors import json_type
from ..i18n import Listed, Sentence
from .base import _SCHEMA_LISTS, _SCHEMA_MAPS, _SCHEMA_ONE, Pointer, SchemaError, _children, _is_schema, _short_repr, _where
from .checks import TYPE_TESTS, _is_integer, _is_number
from .ecma import ecma_to_python

__all__ = ["ANNOTATIONS", "DELEGATED", "KEYWORDS", "check_keywords", "subschemas", "unsupported_keywords"]

ANNOTATIONS = frozenset({
    "description", "title", "default", "examples", "$schema", "$id", "$comment",
    "deprecated", "readOnly", "writeOnly", "$defs", "contentEncoding", "contentMediaType", "contentSchema",
    # not 2020-12, but common and harmless: OpenAPI's example, BFCL's optional, draft 7's home for $defs
    "example", "optional", "definitions",
})
KEYWORDS = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired",
    "dependentSchemas", "dependencies", "items", "prefixItems", "contains", "minContains", "maxContains",
    "minItems", "maxItems", "uniqueItems", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "format",
    "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref",
})
"""The keywords the compiled path enforces."""
DELEGATED = frozenset({
    "unevaluatedItems", "unevaluatedProperties", "$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary",
})
"""Keywords that send their whole schema to the ``jsonschema`` package (they need annotations or URIs)."""


# --- the schema's own keyword values ---------------------------------------------------
# Checked once, at registration, for a 2020-12 schema (another draft is checked against its own
# metaschema by jsonschema): a value of the wrong kind would otherwise fail on every call
# (minLength "5" is a TypeError, multipleOf 0 a ZeroDivisionError) or quietly mean something
# else (required "name" would ask for fields n, a, m and e). Written by hand, not by the metaschema,
# so an ordinary schema never imports jsonschema.
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
                     "minContains", "maxContains"})
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_TEXTS = frozenset({"pattern", "$ref", "$dynamicRef", "$anchor", "$dynamicAnchor", "$id", "$schema", "$comment", "format",
                    "title", "description", "contentEncoding", "contentMediaType"})
_FLAGS = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})

def _names_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(n, str) for n in v) and len(set(v)) == len(v)


def _keyword_problem(k: str, v: Any) -> Sentence | None:
    """What is wrong with the value ``v`` of keyword ``k`` (draft 2020-12), or None."""
    if k in _COUNTS:
        if isinstance(v, bool) or not _is_integer(v) or v < 0:
            return Sentence("schema.why.non_negative_integer")
    elif k in _BOUNDS:
        if isinstance(v, float) and not math.isfinite(v):  # 1e400 read as infinity: "must be a number, got number inf"
            return Sentence("schema.why.finite_number")
        if not _is_number(v):
            return Sentence("schema.why.number")
    elif k == "multipleOf":
        if isinstance(v, float) and not math.isfinite(v):
            return Sentence("schema.why.finite_number")
        if not _is_number(v) or not v > 0:
            return Sentence("schema.why.positive_number")
    elif k in _TEXTS:
        if not isinstance(v, str):
            return Sentence("schema.why.string")
    elif k in _FLAGS:
        if not isinstance(v, bool):
            return Sentence("schema.why.boolean")
    elif k == "type":
        names = [v] if isinstance(v, str) else v
        if not isinstance(names, list) or not names or len(set(map(repr, names))) != len(names) \
                or any(not isinstance(n, str) or n not in TYPE_TESTS for n in names):
            return Sentence("schema.why.types", types=Listed(TYPE_TESTS))
    elif k == "enum":
        if not isinstance(v, list):
            return Sentence("schema.why.list")
    elif k == "required":
        if not _names_list(v):
            return Sentence("schema.why.names")
    elif k == "dependentRequired":
        if not isinstance(v, dict) or not all(_names_list(x) for x in v.values()):
            return Sentence("schema.why.names_map")
    elif k == "dependencies":
        if not isinstance(v, dict) or not all(_is_schema(x) or _names_list(x) for x in v.values()):
            return Sentence("schema.why.schema_or_names_map")
    elif k in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        if not isinstance(v, dict) or not all(_is_schema(x) for x in v.values()):
            return Sentence("schema.why.schema_map")
    elif k in ("allOf", "anyOf", "oneOf"):
        if not isinstance(v, list) or not v or not all(_is_schema(x) for x in v):
            return Sentence("schema.why.schemas")
    elif k == "prefixItems":
        if not isinstance(v, list) or not v or not all(_is_schema(x) for x in v):
            return Sentence("schema.why.schemas")
    elif (k in _SCHEMA_ONE and k != "additionalItems") or k == "contentSchema":  # additionalItems: not 2020-12
        if not _is_schema(v):
            return Sentence("schema.why.schema")
    elif k == "examples":
        if not isinstance(v, list):
            return Sentence("schema.why.list")
    elif k == "$vocabulary":
        if not isinstance(v, dict) or not all(isinstance(x, bool) for x in v.values()):
            return Sentence("schema.why.uri_flags")
    return None


def check_keywords(schema: Any) -> None:
    """Raise :class:`SchemaError` for the first keyword whose value draft 2020-12 does not allow.

    The message names the keyword and where it is, as a JSON pointer (``#/properties/code/minLength``).
    Patterns must compile (as ECMA-262, see :func:`ecma_to_python`). Unknown keywords are not judged.
    """
    # each node with the objects above it: a schema built in code can hold itself (a notebook's learner wrote
    # my_schema["properties"]["self"] = my_schema), which JSON cannot say and whose walk never ended
    todo: list[tuple[Any, Pointer, tuple[int, ...]]] = [(schema, (), ())]
    while todo:
        node, at, above = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            raise SchemaError("schema.not_a_schema_at", got=json_type(node), where=_where(at))
        if id(node) in above:
            raise SchemaError("schema.contains_itself", where=_where(at))
        above += (id(node),)
        for k, v in node.items():
            why = _keyword_problem(k, v)
            if why is not None:
                raise SchemaError("schema.bad_keyword", keyword=k, why=why, got=json_type(v), value=_short_repr(v),
                                  where=_where((*at, k)))
        patterns = [(node["pattern"], (*at, "pattern"))] if "pattern" in node else []
        patterns += [(p, (*at, "patternProperties", p)) for p in node.get("patternProperties", {})]
        for p, where in patterns:
            try:
                re.compile(ecma_to_python(p))
            except re.error as exc:
                raise SchemaError("schema.pattern_bad_at", pattern=p, error=exc, where=_where(where)) from None
        for k, name, sub in _children(node):
            if k != "additionalItems":  # not a 2020-12 keyword: not judged
                todo.append((sub, at + (k,) + (() if name is None else (str(name),)), above))


_KNOWN = KEYWORDS | ANNOTATIONS | DELEGATED


def subschemas(schema: Any, path: str = "$") -> Iterator[tuple[str, dict]]:
    """``(path, subschema)`` for ``schema`` and every object subschema in it, in every position 2020-12 has.

    Paths read like the linter's locations: ``$.order.items`` for a property, ``$.anyOf[1]``,
    ``$.$defs.node``, ``$.then``.
    """
    if not isinstance(schema, dict):
        return
    yield path, schema
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            for name, sub in v.items():
                yield from subschemas(sub, f"{path}.{name}" if k == "properties" else f"{path}.{k}.{name}")
        elif k in _SCHEMA_ONE and not isinstance(v, list):
            yield from subschemas(v, f"{path}.{k}")
        elif (k in _SCHEMA_LISTS or k in _SCHEMA_ONE) and isinstance(v, list):  # items: [...] before 2020-12
            for i, sub in enumerate(v):
                yield from subschemas(sub, f"{path}.{k}[{i}]")


def unsupported_keywords(schema: Any, path: str = "$") -> list[tuple[str, str]]:
    """``(path, keyword)`` for every keyword that draft 2020-12 does not know, in every subschema.

    Nothing enforces such a keyword (the draft says to ignore it), so the author who wrote it
    probably expects something that will not happen. A misspelling (``maxLenght``) is the usual case.
    """
    return [(where, k) for where, node in subschemas(schema, path) for k in node if k not in _KNOWN]
