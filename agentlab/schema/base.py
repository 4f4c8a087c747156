"""What both paths of the schema check share: the schema's error, problem paths, walking
subschemas, and the ``$ref`` loops refused at registration.

Every module of the package builds on this one (the compiled path in compiler.py and checks.py, the
delegated one in delegate.py, the meta-schema checks in keywords.py), so that compiler.py can hand a
schema to delegate.py without the two importing each other.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urljoin

from ..i18n import LocalizedError

__all__ = ["DRAFT_2020_12", "Pointer", "SchemaError", "join", "ref_loop", "show", "transform"]


DRAFT_2020_12 = frozenset({"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"})


class SchemaError(LocalizedError):
    """The schema itself is broken (a developer's mistake, raised at registration).

    ``str()`` is the English sentence; :meth:`localized` gives it in either language, so that a widget or a
    notebook in Chinese says what is wrong in Chinese (keywords, paths and values stay as written). The sentences
    are the catalogue's (``schema.*``)."""


def join(parent: str, key: Any) -> str:
    """``join("items", 0) == "items[0]"``, ``join("items[0]", "sku") == "items[0].sku"``."""
    if key is None:
        return parent
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def show(path: str) -> str:
    return path or "$"


Pointer = tuple[str, ...]  # a JSON pointer's tokens, unescaped: ("properties", "a/b")


def _where(at: Pointer) -> str:
    """``at`` as the JSON pointer a schema's author reads in an error: ``#/properties/code/minLength``."""
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in at)


def _short_repr(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _shape(s: Any) -> str:
    if isinstance(s, dict):
        if "type" in s:
            return s["type"] if isinstance(s["type"], str) else "/".join(s["type"])
        if "enum" in s:
            return "one of " + ", ".join(map(str, s["enum"]))
        if "const" in s:
            return f"{s['const']!r}"
    return "schema"


# --- $ref loops that never move on ------------------------------------------------------
# These keywords apply their subschema to the same value; properties, items and the like move
# to a part of it. A loop of $ref through the first kind only ({"$ref": "#"}, a -> b -> a,
# allOf: [{"$ref": "#"}]) is a RecursionError on every call, so it is refused at registration.
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_MAPS = ("dependentSchemas", "dependencies")
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def _same_value(schema: dict) -> Iterator[tuple[str, Any]]:
    """``(label, subschema)`` for each subschema of ``schema`` applied to the very value ``schema`` checks."""
    for k in _SAME_VALUE_ONE:
        if isinstance(schema.get(k), dict):
            yield k, schema[k]
    for k in _SAME_VALUE_LISTS:
        if isinstance(schema.get(k), list):
            yield from ((f"{k}[{i}]", sub) for i, sub in enumerate(schema[k]) if isinstance(sub, dict))
    for k in _SAME_VALUE_MAPS:
        if isinstance(schema.get(k), dict):
            yield from ((f"{k}.{n}", sub) for n, sub in schema[k].items() if isinstance(sub, dict))


def ref_loop(schema: Any, resolve: Callable[[str, str], tuple[Any, str] | None], base: str = "") -> str | None:
    """The first loop of references that comes back to a subschema without moving into the value, or None.

    ``resolve(ref, base)`` gives the ``(subschema, its base URI)`` a reference names, or None when it
    cannot say. The answer reads like ``$ref '#/$defs/a' -> $ref '#/$defs/b' -> $ref '#/$defs/a'``.
    """
    done: set[int] = set()
    starts: list[tuple[Any, str]] = [(schema, base)]
    while starts:
        start, start_base = starts.pop()
        if not isinstance(start, dict):
            continue
        for _, _, sub in _children(start):  # every subschema is a place the value may arrive at
            starts.append((sub, urljoin(start_base, start["$id"]) if isinstance(start.get("$id"), str) else start_base))
        if id(start) not in done:
            loop = _loop_from(start, start_base, schema, resolve, done)
            if loop is not None:
                return loop
    return None


def _loop_from(start: dict, base: str, root: Any, resolve: Callable[[str, str], tuple[Any, str] | None],
               done: set[int]) -> str | None:
    """Depth-first from ``start`` along the same-value edges only; ``done`` holds the nodes known to be loop-free."""
    on_path: dict[int, int] = {}
    labels: list[str] = []
    stack: list[tuple[dict, Iterator[tuple[str, Any, str]]]] = []

    def edges(node: dict, node_base: str) -> Iterator[tuple[str, Any, str]]:
        for kw in _REF_KEYWORDS:
            ref = node.get(kw)
            if isinstance(ref, str):
                found = resolve(ref, node_base)
                if found is not None and isinstance(found[0], dict):
                    yield f"{kw} {ref!r}", found[0], found[1]
        for label, sub in _same_value(node):
            yield label, sub, node_base

    step: tuple[str, Any, str] | None = ("", start, base)
    while True:
        if step is not None:
            label, node, node_base = step
            if id(node) in on_path:
                return " -> ".join([*labels[on_path[id(node)] + 1:], label])
            if id(node) not in done:
                if isinstance(node.get("$id"), str) and node is not root:
                    node_base = urljoin(node_base, node["$id"])
                on_path[id(node)] = len(labels)
                labels.append(label)
                stack.append((node, edges(node, node_base)))
        if not stack:
            return None
        node, it = stack[-1]
        step = next(it, None)
        if step is None:
            stack.pop()
            del on_path[id(node)]
            labels.pop()
            done.add(id(node))


# Where subschemas sit (everything else holds values, not schemas). contentSchema is left out: it is never applied.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_ONE = ("items", "additionalItems", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
               "unevaluatedItems", "unevaluatedProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _is_schema(v: Any) -> bool:
    return isinstance(v, (dict, bool))


def transform(schema: Any, node: Callable[[dict], dict]) -> Any:
    """A copy of ``schema`` with ``node`` applied to every subschema, innermost first."""
    if isinstance(schema, list):
        return [transform(s, node) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            # dependencies mixes lists of names with schemas: only the schemas are transformed
            out[k] = {name: transform(sub, node) if _is_schema(sub) else sub for name, sub in v.items()}
        elif k in _SCHEMA_ONE or k in _SCHEMA_LISTS:
            out[k] = transform(v, node)
        else:
            out[k] = v
    return node(out)


def _children(schema: dict) -> Iterator[tuple[str, str | int | None, Any]]:
    """``(keyword, name or index or None, subschema)`` for every direct subschema of ``schema``."""
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            for name, sub in v.items():
                if _is_schema(sub):
                    yield k, name, sub
        elif k in _SCHEMA_ONE or k in _SCHEMA_LISTS:
            if isinstance(v, list):
                for i, sub in enumerate(v):
                    yield k, i, sub
            else:
                yield k, None, v
