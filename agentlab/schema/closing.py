"""Closing objects: a copy of a schema whose objects refuse fields they do not name.

An unknown field from a model is almost always a misspelt known one; the registry closes every
tool's schema with :func:`close_objects` so that the model hears "did you mean ``order_id``?"
instead of its field being dropped in silence.
"""
from __future__ import annotations

import copy
from typing import Any
from urllib.parse import unquote

from .base import _SCHEMA_LISTS, _SCHEMA_MAPS, _SCHEMA_ONE, Pointer, _children, _is_schema

__all__ = ["close_objects"]


# Subschemas that add to the object around them rather than describe a whole value: closing one with
# its own properties would refuse its parent's fields. Conditions (if, not, contains, propertyNames)
# are tests, not shapes: nothing inside them is closed, at any depth, or a test that should match a
# valid value (an "if" naming one field of a nested object) would stop matching and its rule be skipped.
_ADDS_TO_PARENT = ("allOf", "then", "else", "dependentSchemas", "dependencies")
_CONDITIONS = ("if", "not", "contains", "propertyNames")


def close_objects(schema: Any) -> Any:
    """A copy of ``schema`` where every object with ``properties`` rejects unknown fields.

    An unknown field from a model is almost always a misspelt known one
    (``orderId`` for ``order_id``); saying so beats silently dropping it.
    An explicit ``additionalProperties`` or ``unevaluatedProperties`` is left alone.
    An object whose ``allOf``, ``anyOf``/``oneOf`` beside its own properties, ``then``, ``else``,
    ``dependentSchemas`` or ``$ref`` name further fields gets ``unevaluatedProperties: false``
    (those fields count, unknown ones do not; such a schema is validated by jsonschema); the
    subschemas themselves stay open. Nothing is closed inside a condition (``if``, ``not``,
    ``contains``, ``propertyNames``), nor in a ``$defs`` entry a condition reaches by ``$ref``;
    a ``$defs`` entry used as a mixin (a ``$ref`` in an ``allOf`` branch, or beside properties)
    stays open itself. Closing only ever refuses unknown fields: a value the original schema
    accepts and that has none is still accepted.
    """
    tests, mixins = _open_targets(schema)
    return _close(schema, may_close=True, at=(), tests=tests, mixins=mixins)


def _local_pointer(ref: Any) -> Pointer | None:
    """``"#/$defs/a~1b"`` as ``("$defs", "a/b")``; None for an anchor or another document."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return None
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in unquote(ref[1:]).split("/")[1:])




def _own_fields(schema: dict) -> bool:
    return any(k in schema for k in ("properties", "patternProperties", "additionalProperties"))


def _open_targets(root: Any) -> tuple[set[Pointer], set[Pointer]]:
    """Where ``$ref`` makes a subschema a test (left open throughout) or a mixin (left open itself)."""
    tests: set[Pointer] = set()
    mixins: set[Pointer] = set()
    seen: set[tuple[Pointer, bool, bool]] = set()
    todo: list[tuple[Any, Pointer, bool, bool]] = [(root, (), False, True)]
    while todo:
        node, at, in_test, whole = todo.pop()  # whole: this node describes a whole value (it may be closed)
        if not isinstance(node, dict) or (at, in_test, whole) in seen:
            continue
        seen.add((at, in_test, whole))
        target = _local_pointer(node.get("$ref"))
        if target is not None:
            found = _at_pointer(root, target)
            if in_test:
                tests.add(target)
                todo.append((found, target, True, False))
            elif not whole or _own_fields(node):  # the target adds its fields to this node's
                mixins.add(target)
                todo.append((found, target, False, False))
        own = _own_fields(node)
        for k, name, sub in _children(node):
            step = at + (k,) + (() if name is None else (str(name),))
            adds = k in _ADDS_TO_PARENT or (k in ("anyOf", "oneOf") and own)
            todo.append((sub, step, in_test or k in _CONDITIONS, not adds))
    return tests, mixins


def _at_pointer(root: Any, parts: Pointer) -> Any:
    node = root
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _close(schema: Any, *, may_close: bool, at: Pointer, tests: set[Pointer], mixins: set[Pointer]) -> Any:
    if isinstance(schema, list):
        return [_close(s, may_close=may_close, at=(*at, str(i)), tests=tests, mixins=mixins)
                for i, s in enumerate(schema)]
    if not isinstance(schema, dict):
        return schema
    if at in tests:
        return copy.deepcopy(schema)  # a test, not a shape: closing anything in it changes what it matches
    may_close = may_close and at not in mixins
    own_fields = _own_fields(schema)
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            open_ = k in _ADDS_TO_PARENT
            out[k] = {n: _close(sub, may_close=not open_, at=(*at, k, n), tests=tests, mixins=mixins)
                      if _is_schema(sub) else sub for n, sub in v.items()}
        elif k in _CONDITIONS:
            out[k] = copy.deepcopy(v)
        elif k in _SCHEMA_ONE or k in _SCHEMA_LISTS:
            open_ = k in _ADDS_TO_PARENT or (k in ("anyOf", "oneOf") and own_fields)
            out[k] = _close(v, may_close=not open_, at=(*at, k), tests=tests, mixins=mixins)
        else:
            out[k] = v
    if not may_close or "properties" not in out or any(
            k in out for k in ("additionalProperties", "patternProperties", "unevaluatedProperties")):
        return out
    if "$ref" in out or "$dynamicRef" in out or _names_fields(out):
        out["unevaluatedProperties"] = False  # sees the fields those subschemas name; additionalProperties would not
    else:
        out["additionalProperties"] = False
    return out


def _names_fields(schema: dict) -> bool:
    """Whether a subschema that adds to ``schema`` names fields of its own."""
    subs: list[Any] = []
    for k in ("allOf", "anyOf", "oneOf"):
        subs += schema.get(k, []) if isinstance(schema.get(k), list) else []
    subs += [schema.get("then"), schema.get("else")]
    for k in ("dependentSchemas", "dependencies"):
        if isinstance(schema.get(k), dict):
            subs += list(schema[k].values())
    return any(isinstance(s, dict) and (any(k in s for k in ("properties", "patternProperties", "$ref"))
                                        or _names_fields(s)) for s in subs)
