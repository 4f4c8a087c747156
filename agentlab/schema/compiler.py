"""JSON Schema (draft 2020-12) compiled once into plain Python checks.

``jsonschema.validate`` re-checks the schema itself on every call; a tool's
schema does not change between calls, so we compile it once into a tree of
closures and then each call only runs the checks. Every problem is collected
(never just the first) as a :class:`~agentlab.errors.Problem` with a path such
as ``items[0].sku``.

Every keyword of draft 2020-12 is enforced, by one of two paths; none is
accepted and then ignored:

* **compiled** (here, fast): ``type`` ``enum`` ``const`` ``properties``
  ``required`` ``additionalProperties`` ``patternProperties`` ``propertyNames``
  ``minProperties`` ``maxProperties`` ``dependentRequired`` ``dependentSchemas``
  ``items`` ``prefixItems`` ``contains`` ``minContains`` ``maxContains``
  ``minItems`` ``maxItems`` ``uniqueItems`` ``minimum`` ``maximum``
  ``exclusiveMinimum`` ``exclusiveMaximum`` ``multipleOf`` ``minLength``
  ``maxLength`` ``pattern`` ``format`` ``anyOf`` ``oneOf`` ``allOf`` ``not``
  ``if``/``then``/``else``, ``$ref`` to a JSON pointer in the same document
  (``~0``, ``~1`` and percent-escapes included), and boolean schemas. The older
  ``dependencies`` is enforced too, as the suite's compatibility tests expect.
* **delegated** (:mod:`agentlab.schema_delegate`, the ``jsonschema`` package,
  imported only then): a schema that uses :data:`DELEGATED` keywords
  (``unevaluated*``, ``$anchor``, ``$dynamicRef``...), an ``$id`` below the root,
  a ``$ref`` to an anchor or another document, or a ``$schema`` other than
  2020-12. The whole schema goes; its errors come back as the same problems.

Refused with :class:`SchemaError` at registration: a ``$ref`` to a document
nobody supplied (documents come only from ``compile_schema(..., resources=)``;
nothing is fetched), an unknown ``$schema``, a required ``$vocabulary`` we do
not know, a pattern that does not compile, and a pattern shaped for catastrophic
backtracking (:func:`slow_pattern`: ``^(a+)+$``, ``(a|aa)+``; ``re`` has no timeout).

Patterns follow ECMA-262 in both paths (:func:`ecma_to_python`). ``format`` is
asserted for the names in :data:`FORMATS` (date, date-time, time, email, uuid,
ipv4); every other format is an annotation, as 2020-12 makes them by default.
Annotations (``description``, ``default``, ``examples``...) and unknown
keywords are ignored, as the draft says; :func:`unsupported_keywords` lists the
unknown ones so the linter can warn about them.
"""
from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any
from urllib.parse import unquote

from ..errors import Problem, json_type
from ..jsonutil import canonical, json_eq
from ..names import closest, name_words, suggest, to_camel, to_snake

# What the delegated path shares with this one lives below both (schema_delegate.py imports these modules, never
# this one); the public names stay importable from here.
from .base import (
    _SCHEMA_LISTS,
    _SCHEMA_MAPS,
    _SCHEMA_ONE,
    DRAFT_2020_12,
    SchemaError,
    _children,
    _is_schema,
    _shape,
    join,
    ref_loop,
    show,
    transform,
)
from .formats import FORMATS
from .ecma import ecma_to_python

__all__ = ["ANNOTATIONS", "DELEGATED", "DRAFT_2020_12", "FORMATS", "KEYWORDS", "TYPE_TESTS", "Check", "Compiler",
           "SchemaError", "close_objects", "closest", "compile_schema", "ecma_to_python", "join", "name_words",
           "refuse_slow_patterns", "show", "slow_pattern", "subschemas", "suggest", "to_camel", "to_snake", "transform", "unsupported_keywords"]

Check = Callable[[Any, str, Any, list], None]  # (value, parent path, key, problems)

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


class _Delegate(Exception):
    """Raised while compiling: this schema needs the jsonschema package (the keyword is the argument)."""




# --- type tests ------------------------------------------------------------------
def _is_integer(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and v.is_integer()


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}






# --- the compiler ----------------------------------------------------------------------
class Compiler:
    """Compiles one root schema; ``$ref`` pointers resolve against that root."""

    def __init__(self, root: Any):
        self.root = root
        self._refs: dict[str, Check] = {}
        self._resolving: set[str] = set()

    def compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return _ok
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {json_type(schema)}",
                              f"schema 必须是对象或布尔值，实际是 {json_type(schema)}")
        self._refuse_delegated(schema)
        desc = schema.get("description")
        checks: list[Check] = []
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        types = schema.get("type")
        type_check = None
        if types is not None:
            type_check = _type_check(types, desc)
        for c in (self._object(schema), self._dependent(schema), self._property_names(schema), self._array(schema),
                  self._contains(schema), _number(schema), _string(schema), _enum(schema)):
            if c is not None:
                checks.append(c)
        for key in ("allOf", "anyOf", "oneOf"):
            if key in schema:
                subs = schema[key]
                if not isinstance(subs, list) or not subs:
                    raise SchemaError(f"{key} must be a non-empty list", f"{key} 必须是非空列表")
                compiled = [self.compile(s) for s in subs]
                checks.append(_all_of(compiled) if key == "allOf"
                              else _any_of(compiled, subs, one=key == "oneOf"))
        if "not" in schema:
            checks.append(_not(self.compile(schema["not"])))
        if "if" in schema:
            checks.append(_if(self.compile(schema["if"]), self.compile(schema.get("then", True)),
                              self.compile(schema.get("else", True))))
        return _sequence(type_check, checks)

    def _refuse_delegated(self, schema: dict) -> None:
        """Raise :class:`_Delegate` for what only the jsonschema package evaluates correctly."""
        found = DELEGATED.intersection(schema)
        if found:
            raise _Delegate(min(found))
        if "$id" in schema and schema is not self.root:  # a new base URI: refs below resolve against it
            raise _Delegate("$id")
        ref = schema.get("$ref")
        if isinstance(ref, str) and not (ref == "#" or ref.startswith("#/")):
            raise _Delegate("$ref")  # an anchor, or another document
        if schema is self.root and "$schema" in schema and schema["$schema"] not in DRAFT_2020_12:
            raise _Delegate("$schema")

    # objects ----------------------------------------------------------------
    def _object(self, s: dict) -> Check | None:
        keys = ("properties", "required", "additionalProperties", "patternProperties",
                "minProperties", "maxProperties")
        if not any(k in s for k in keys):
            return None
        props_schema = s.get("properties", {})
        if not isinstance(props_schema, dict):
            raise SchemaError("properties must be an object", "properties 必须是对象")
        props = {k: self.compile(v) for k, v in props_schema.items()}
        descs = {k: v.get("description") for k, v in props_schema.items() if isinstance(v, dict)}
        required = tuple(s.get("required", ()))
        patterns = [(re.compile(ecma_to_python(p)), self.compile(v)) for p, v in s.get("patternProperties", {}).items()]
        extra = s.get("additionalProperties", True)
        extra_check = None if extra is True or extra is False else self.compile(extra)
        closed = extra is False
        allowed = list(props)
        min_p, max_p = s.get("minProperties"), s.get("maxProperties")

        def check_object(v: Any, parent: str, key: Any, out: list) -> None:
            if not isinstance(v, dict):
                return
            here = join(parent, key) if key is not None else parent
            for name in required:
                if name not in v:
                    out.append(Problem(join(here, name), "missing", description=descs.get(name)))
            for k, x in v.items():
                sub = props.get(k)
                if sub is not None:
                    sub(x, here, k, out)
                    if not patterns:
                        continue
                matched = sub is not None
                for rx, pc in patterns:
                    if rx.search(k):
                        matched = True
                        pc(x, here, k, out)
                if matched:
                    continue
                if closed:
                    out.append(Problem(join(here, k), "unknown_field", allowed=tuple(allowed),
                                       suggestion=suggest(k, allowed)))
                elif extra_check is not None:
                    extra_check(x, here, k, out)
            if min_p is not None and len(v) < min_p:
                out.append(Problem(show(here), "out_of_range", got=len(v), limit=("minProperties", min_p)))
            if max_p is not None and len(v) > max_p:
                out.append(Problem(show(here), "out_of_range", got=len(v), limit=("maxProperties", max_p)))

        return check_object

    def _dependent(self, s: dict) -> Check | None:
        """``dependentRequired``, ``dependentSchemas``, and ``dependencies`` (their older spelling)."""
        needs: list[tuple[str, tuple[str, ...]]] = []
        subs: list[tuple[str, Check]] = []
        for kw in ("dependentRequired", "dependentSchemas", "dependencies"):
            spec = s.get(kw)
            if spec is None:
                continue
            if not isinstance(spec, dict):
                raise SchemaError(f"{kw} must be an object", f"{kw} 必须是对象")
            for name, dep in spec.items():
                if isinstance(dep, list) and kw != "dependentSchemas":
                    needs.append((name, tuple(dep)))
                elif kw != "dependentRequired":
                    subs.append((name, self.compile(dep)))
                else:
                    raise SchemaError(f"dependentRequired.{name} must be a list of names", f"dependentRequired.{name} 必须是字段名列表")
        if not needs and not subs:
            return None
        props = s.get("properties", {})
        descs = {k: v.get("description") for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}

        def check_dependent(v: Any, parent: str, key: Any, out: list) -> None:
            if not isinstance(v, dict):
                return
            here = join(parent, key) if key is not None else parent
            for name, wanted in needs:
                if name in v:
                    for w in wanted:
                        if w not in v:
                            out.append(Problem(join(here, w), "missing", description=descs.get(w)))
            for name, sub in subs:
                if name in v:
                    sub(v, parent, key, out)
        return check_dependent

    def _property_names(self, s: dict) -> Check | None:
        if "propertyNames" not in s:
            return None
        names = self.compile(s["propertyNames"])
        if names is _ok:
            return None

        def check_names(v: Any, parent: str, key: Any, out: list) -> None:
            if not isinstance(v, dict):
                return
            here = join(parent, key) if key is not None else parent
            for k in v:
                found: list[Problem] = []
                names(k, "", None, found)
                # the name itself broke the rule: say so at the field the model wrote
                out.extend(replace(p, field=join(here, k)) for p in found)
        return check_names

    # arrays -------------------------------------------------------------------
    def _contains(self, s: dict) -> Check | None:
        if "contains" not in s:
            return None  # minContains and maxContains mean nothing without it
        sub = self.compile(s["contains"])
        least, most = s.get("minContains", 1), s.get("maxContains")
        for kw, n in (("minContains", least), ("maxContains", most)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0):
                raise SchemaError(f"{kw} must be a non-negative integer", f"{kw} 必须是非负整数")

        def check_contains(v: Any, parent: str, key: Any, out: list) -> None:
            if not isinstance(v, list):
                return
            here = join(parent, key) if key is not None else parent
            count = 0
            for i, x in enumerate(v):
                found: list = []
                sub(x, here, i, found)
                count += not found
            if count < least:  # plain "contains" too: its hint reads "at least 1 item of the required shape"
                out.append(Problem(show(here), "out_of_range", got=v, limit=("minContains", least)))
            if most is not None and count > most:
                out.append(Problem(show(here), "out_of_range", got=v, limit=("maxContains", most)))
        return check_contains

    def _array(self, s: dict) -> Check | None:
        keys = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")
        if not any(k in s for k in keys):
            return None
        prefix = [self.compile(p) for p in s.get("prefixItems", ())]
        items = self.compile(s["items"]) if "items" in s else None
        if items is _ok:
            items = None
        min_i, max_i = s.get("minItems"), s.get("maxItems")
        unique = s.get("uniqueItems", False)
        n_prefix = len(prefix)

        def check_array(v: Any, parent: str, key: Any, out: list) -> None:
            if not isinstance(v, list):
                return
            here = join(parent, key) if key is not None else parent
            for i, c in enumerate(prefix[: len(v)]):
                c(v[i], here, i, out)
            if items is not None:
                for i in range(n_prefix, len(v)):
                    items(v[i], here, i, out)
            if min_i is not None and len(v) < min_i:
                out.append(Problem(show(here), "out_of_range", got=len(v), limit=("minItems", min_i)))
            if max_i is not None and len(v) > max_i:
                out.append(Problem(show(here), "out_of_range", got=len(v), limit=("maxItems", max_i)))
            if unique and len(v) > 1 and len({canonical(x) for x in v}) < len(v):
                out.append(Problem(show(here), "not_unique"))

        return check_array

    # references ---------------------------------------------------------------
    def _ref(self, ref: str) -> Check:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaError(f"$ref must be a string, got {ref!r}", f"$ref 必须是字符串，实际是 {ref!r}")
        if ref in self._refs:
            return self._refs[ref]
        if ref in self._resolving:  # recursion: resolve at call time
            refs = self._refs
            return lambda v, p, k, out: refs[ref](v, p, k, out)
        self._resolving.add(ref)
        target = self._pointer(ref[1:])
        compiled = self.compile(target)
        self._resolving.discard(ref)
        self._refs[ref] = compiled
        return compiled

    def resolve(self, ref: str, base: str) -> tuple[Any, str] | None:
        """What a local ``$ref`` names (for :func:`ref_loop`), or None when it names nothing."""
        try:
            return (self._pointer(ref[1:]), base) if ref.startswith("#") else None
        except SchemaError:
            return None

    def _pointer(self, fragment: str) -> Any:
        # A fragment is URI-encoded first ("%25" is "%"), then a JSON pointer ("~1" is "/", "~0" is "~");
        # an empty token is a key named "" ("#/$defs//x"), not a token to skip.
        pointer = unquote(fragment)
        node = self.root
        for part in pointer.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaError(f"$ref '#{fragment}' points nowhere", f"$ref '#{fragment}' 指向的位置不存在")
        return node


def _ok(v: Any, parent: str, key: Any, out: list) -> None:
    return None


def _never(v: Any, parent: str, key: Any, out: list) -> None:
    out.append(Problem(show(join(parent, key)), "not_allowed", got=v))


def _sequence(type_check: Check | None, checks: list[Check]) -> Check:
    if type_check is None and not checks:
        return _ok
    if type_check is None and len(checks) == 1:
        return checks[0]
    if not checks and type_check is not None:
        return type_check
    checks_t = tuple(checks)
    if type_check is None:
        def run_all(v: Any, parent: str, key: Any, out: list) -> None:
            for c in checks_t:
                c(v, parent, key, out)
        return run_all

    # Keywords for other types skip the value themselves; enum still reports, which
    # helpfully lists the allowed values beside the wrong type.
    all_checks = (type_check, *checks_t)

    def typed(v: Any, parent: str, key: Any, out: list) -> None:
        for c in all_checks:
            c(v, parent, key, out)
    return typed


def _type_check(types: Any, desc: str | None) -> Check:
    names = [types] if isinstance(types, str) else list(types)
    for n in names:
        if n not in TYPE_TESTS:
            raise SchemaError(f"unknown type {n!r}", f"未知类型 {n!r}")
    expected = " or ".join(names)
    if len(names) == 1:
        name = names[0]
        if name == "string":
            def check(v, parent, key, out):
                if not isinstance(v, str):
                    out.append(Problem(show(join(parent, key)), "wrong_type", expected=expected, got=v, description=desc))
            return check
        if name == "object":
            def check(v, parent, key, out):
                if not isinstance(v, dict):
                    out.append(Problem(show(join(parent, key)), "wrong_type", expected=expected, got=v, description=desc))
            return check
        test = TYPE_TESTS[name]

        def check(v, parent, key, out):
            if not test(v):
                out.append(Problem(show(join(parent, key)), "wrong_type", expected=expected, got=v, description=desc))
        return check
    tests = tuple(TYPE_TESTS[n] for n in names)

    def check_any(v, parent, key, out):
        for test in tests:
            if test(v):
                return
        out.append(Problem(show(join(parent, key)), "wrong_type", expected=expected, got=v, description=desc))
    return check_any


def _enum(s: dict) -> Check | None:
    desc = s.get("description")
    if "const" in s:
        const = s["const"]

        def check_const(v, parent, key, out):
            if not json_eq(v, const):
                out.append(Problem(show(join(parent, key)), "not_in_enum", got=v, allowed=(const,), description=desc))
        return check_const
    if "enum" not in s:
        return None
    values = s["enum"]
    if not isinstance(values, list):
        raise SchemaError("enum must be a list", "enum 必须是列表")
    allowed = tuple(values)
    if all(isinstance(x, str) for x in values):
        fast = frozenset(values)

        def check_str_enum(v, parent, key, out):
            if not (isinstance(v, str) and v in fast):
                out.append(Problem(show(join(parent, key)), "not_in_enum", got=v, allowed=allowed, description=desc))
        return check_str_enum

    # scalars looked up by (kind, value), so a long enum costs one lookup a check, not a pass over it (1 and 1.0
    # are one number, as JSON has it, and hash alike; true is not 1); lists and objects are compared one by one
    scalars = frozenset(_scalar_key(x) for x in values if isinstance(x, _SCALARS))
    nested = [x for x in values if not isinstance(x, _SCALARS)]

    def check_enum(v, parent, key, out):
        if isinstance(v, _SCALARS):
            if _scalar_key(v) in scalars:
                return
        elif any(json_eq(v, x) for x in nested):
            return
        out.append(Problem(show(join(parent, key)), "not_in_enum", got=v, allowed=allowed, description=desc))
    return check_enum


_SCALARS = (str, int, float, type(None))  # bool is an int


def _scalar_key(v: Any) -> tuple[str, Any]:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("number", v)
    return (type(v).__name__, v)


def _multiple_of(v: float, m: float) -> bool:
    if isinstance(v, int) and isinstance(m, int):
        return v % m == 0
    if isinstance(v, float) and not math.isfinite(v):
        return False  # inf or nan is a multiple of nothing
    try:
        q = v / m
    except OverflowError:  # an integer too large for a float on either side: the exact way below
        q = math.inf
    if not math.isinf(q) and q.is_integer():
        return True
    # 0.0075 / 0.0001 is 74.99999999999999 in floats, and 1e308 / 0.5 overflows: the numbers as
    # written, as exact fractions, get both right
    return Fraction(repr(v)) % Fraction(repr(m)) == 0


def _number(s: dict) -> Check | None:
    bounds = []
    for kw, op in (("minimum", lambda v, b: v >= b), ("maximum", lambda v, b: v <= b),
                   ("exclusiveMinimum", lambda v, b: v > b), ("exclusiveMaximum", lambda v, b: v < b)):
        if kw in s:
            b = s[kw]
            if isinstance(b, bool) or not isinstance(b, (int, float)):
                raise SchemaError(f"{kw} must be a number", f"{kw} 必须是数字")
            bounds.append((kw, b, op))
    mult = s.get("multipleOf")
    if not bounds and mult is None:
        return None
    bounds_t = tuple(bounds)

    def check_number(v, parent, key, out):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return
        for kw, b, op in bounds_t:
            if not op(v, b):
                out.append(Problem(show(join(parent, key)), "out_of_range", got=v, limit=(kw, b)))
        if mult is not None and not _multiple_of(v, mult):
            out.append(Problem(show(join(parent, key)), "out_of_range", got=v, limit=("multipleOf", mult)))
    return check_number


def _string(s: dict) -> Check | None:
    min_l, max_l = s.get("minLength"), s.get("maxLength")
    pattern = s.get("pattern")
    fmt = FORMATS.get(s.get("format", ""))
    if min_l is None and max_l is None and pattern is None and fmt is None:
        return None
    try:
        rx = re.compile(ecma_to_python(pattern)) if pattern is not None else None
    except re.error as exc:
        raise SchemaError(f"pattern {pattern!r} does not compile: {exc}",
                          f"pattern {pattern!r} 无法编译：{exc}") from None
    desc = s.get("description")
    fmt_name = s.get("format")

    def check_string(v, parent, key, out):
        if not isinstance(v, str):
            return
        if min_l is not None and len(v) < min_l:
            out.append(Problem(show(join(parent, key)), "out_of_range", got=v, limit=("minLength", min_l)))
        if max_l is not None and len(v) > max_l:
            out.append(Problem(show(join(parent, key)), "out_of_range", got=v, limit=("maxLength", max_l)))
        if rx is not None and not rx.search(v):
            out.append(Problem(show(join(parent, key)), "bad_format", got=v, expected=f"pattern {pattern}", description=desc))
        if fmt is not None and not fmt[0](v):
            out.append(Problem(show(join(parent, key)), "bad_format", got=v, expected=f"{fmt_name} ({fmt[1]})", description=desc))
    return check_string




def _all_of(subs: list[Check]) -> Check:
    def check_all(v, parent, key, out):
        for c in subs:
            c(v, parent, key, out)
    return check_all


def _any_of(subs: list[Check], raw: list, *, one: bool) -> Check:
    shapes = " | ".join(_shape(s) for s in raw)

    def check_any(v, parent, key, out):
        results = []
        passed = 0
        for c in subs:
            found: list = []
            c(v, parent, key, found)
            if not found:
                passed += 1
                if not one:
                    return
            results.append(found)
        if passed == 1 and one:
            return
        path = show(join(parent, key))
        if passed > 1:
            out.append(Problem(path, "many_match", got=v, expected=shapes))
            return
        # If every branch failed only on its type, say so plainly ("string or null").
        if all(len(r) == 1 and r[0].reason == "wrong_type" and r[0].field == path for r in results):
            out.append(Problem(path, "wrong_type", got=v, expected=" or ".join(r[0].expected for r in results)))
            return
        deeper = [r for r in results if not any(p.field == path and p.reason == "wrong_type" for p in r)]
        if deeper:  # the value had the right shape for a branch: report that branch's problems
            out.extend(min(deeper, key=len))
        else:
            out.append(Problem(path, "no_match", got=v, expected=shapes))
    return check_any


def _if(cond: Check, then: Check, otherwise: Check) -> Check:
    def check_if(v, parent, key, out):
        found: list = []
        cond(v, parent, key, found)  # the condition's own problems are never shown: it only chooses
        (otherwise if found else then)(v, parent, key, out)
    return check_if


def _not(sub: Check) -> Check:
    def check_not(v, parent, key, out):
        found: list = []
        sub(v, parent, key, found)
        if not found:
            out.append(Problem(show(join(parent, key)), "not_allowed", got=v))
    return check_not




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


def _where(at: Pointer) -> str:
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in at)


def _names_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(n, str) for n in v) and len(set(v)) == len(v)


def _keyword_problem(k: str, v: Any) -> str | None:
    """What is wrong with the value ``v`` of keyword ``k`` (draft 2020-12), or None."""
    if k in _COUNTS:
        if isinstance(v, bool) or not _is_integer(v) or v < 0:
            return "must be a non-negative integer"
    elif k in _BOUNDS:
        if not _is_number(v) or (isinstance(v, float) and not math.isfinite(v)):
            return "must be a number"
    elif k == "multipleOf":
        if not _is_number(v) or (isinstance(v, float) and not math.isfinite(v)) or not v > 0:
            return "must be a number greater than 0"
    elif k in _TEXTS:
        if not isinstance(v, str):
            return "must be a string"
    elif k in _FLAGS:
        if not isinstance(v, bool):
            return "must be true or false"
    elif k == "type":
        names = [v] if isinstance(v, str) else v
        if not isinstance(names, list) or not names or len(set(map(repr, names))) != len(names) \
                or any(not isinstance(n, str) or n not in TYPE_TESTS for n in names):
            return f"must be one of {', '.join(TYPE_TESTS)}, or a list of them without repeats"
    elif k == "enum":
        if not isinstance(v, list):
            return "must be a list"
    elif k == "required":
        if not _names_list(v):
            return "must be a list of field names (strings, no repeats)"
    elif k == "dependentRequired":
        if not isinstance(v, dict) or not all(_names_list(x) for x in v.values()):
            return "must map each field name to a list of field names (strings, no repeats)"
    elif k == "dependencies":
        if not isinstance(v, dict) or not all(_is_schema(x) or _names_list(x) for x in v.values()):
            return "must map each field name to a schema or a list of field names"
    elif k in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        if not isinstance(v, dict) or not all(_is_schema(x) for x in v.values()):
            return "must map names to schemas (objects or booleans)"
    elif k in ("allOf", "anyOf", "oneOf"):
        if not isinstance(v, list) or not v or not all(_is_schema(x) for x in v):
            return "must be a non-empty list of schemas"
    elif k == "prefixItems":
        if not isinstance(v, list) or not v or not all(_is_schema(x) for x in v):
            return "must be a non-empty list of schemas"
    elif (k in _SCHEMA_ONE and k != "additionalItems") or k == "contentSchema":  # additionalItems: not 2020-12
        if not _is_schema(v):
            return "must be a schema (an object or a boolean)"
    elif k == "examples":
        if not isinstance(v, list):
            return "must be a list"
    elif k == "$vocabulary":
        if not isinstance(v, dict) or not all(isinstance(x, bool) for x in v.values()):
            return "must map URIs to true or false"
    return None


_WHY_ZH = {
    "must be a non-negative integer": "必须是非负整数",
    "must be a number": "必须是数字",
    "must be a number greater than 0": "必须是大于 0 的数字",
    "must be a string": "必须是字符串",
    "must be true or false": "必须是 true 或 false",
    "must be a list": "必须是列表",
    "must be a list of field names (strings, no repeats)": "必须是字段名列表（字符串，不重复）",
    "must map each field name to a list of field names (strings, no repeats)": "必须把每个字段名映射到一个字段名列表（字符串，不重复）",
    "must map each field name to a schema or a list of field names": "必须把每个字段名映射到一个 schema 或字段名列表",
    "must map names to schemas (objects or booleans)": "必须把名字映射到 schema（对象或布尔值）",
    "must be a non-empty list of schemas": "必须是非空的 schema 列表",
    "must be a schema (an object or a boolean)": "必须是 schema（对象或布尔值）",
    "must map URIs to true or false": "必须把 URI 映射到 true 或 false",
}


def _why_zh(why: str) -> str:
    if why.startswith("must be one of "):  # the type list: names stay as JSON Schema spells them
        return "必须是 " + why.removeprefix("must be one of ").replace(", or a list of them without repeats", "") \
            + " 之一，或由它们组成、不重复的列表"
    return _WHY_ZH.get(why, why)


def check_keywords(schema: Any) -> None:
    """Raise :class:`SchemaError` for the first keyword whose value draft 2020-12 does not allow.

    The message names the keyword and where it is, as a JSON pointer (``#/properties/code/minLength``).
    Patterns must compile (as ECMA-262, see :func:`ecma_to_python`). Unknown keywords are not judged.
    """
    todo: list[tuple[Any, Pointer]] = [(schema, ())]
    while todo:
        node, at = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {json_type(node)} at {_where(at)}",
                              f"{_where(at)} 处的 schema 必须是对象或布尔值，实际是 {json_type(node)}")
        for k, v in node.items():
            why = _keyword_problem(k, v)
            if why is not None:
                raise SchemaError(f"{k} {why}, got {json_type(v)} {_short_repr(v)} at {_where((*at, k))}",
                                  f"{_where((*at, k))} 处的 {k} {_why_zh(why)}，实际是 {json_type(v)} {_short_repr(v)}")
        patterns = [(node["pattern"], (*at, "pattern"))] if "pattern" in node else []
        patterns += [(p, (*at, "patternProperties", p)) for p in node.get("patternProperties", {})]
        for p, where in patterns:
            try:
                re.compile(ecma_to_python(p))
            except re.error as exc:
                raise SchemaError(f"pattern {p!r} does not compile ({exc}) at {_where(where)}",
                                  f"{_where(where)} 处的 pattern {p!r} 无法编译（{exc}）") from None
        for k, name, sub in _children(node):
            if k != "additionalItems":  # not a 2020-12 keyword: not judged
                todo.append((sub, at + (k,) + (() if name is None else (str(name),))))


# --- patterns that backtrack catastrophically ------------------------------------------
_QUANTIFIER = re.compile(r"[*+?]|\{(\d*)(,?)(\d*)\}")
_GROUP_OPENER = re.compile(r"\?(?::|=|!|<=|<!|<[A-Za-z_]\w*>|P<[A-Za-z_]\w*>)?")


class _Group:
    """One open group while :func:`slow_pattern` reads: what it holds so far."""

    def __init__(self, begin: int):
        self.repeats = False  # holds a repetition of variable length
        self.alts: list[str] = []  # its alternatives as written, the current one not yet
        self.begin = begin  # where the current alternative began
        self.atoms: list[list[Any]] = []  # [text, repeated] for each character it can match, nested ones too


def slow_pattern(pattern: str) -> bool:
    """Whether ``pattern`` has the shape of catastrophic backtracking, by a cheap reading of its text.

    Two shapes, the classic ones: a group repeated without bound that holds a repetition of variable
    length itself (``(a+)+``, ``(\\w*x)*``, ``(a{1,3})+``), unless a character that nothing else in the
    group can match begins or ends it (``(-[a-z]+)*``, ``(\\d{1,3}\\.)+`` are fine: each turn has one way
    to end); or whose alternatives overlap, one being the same as another or its beginning (``(a|aa)+``).
    A heuristic: it can miss a slow pattern and flag a harmless one; it never runs the pattern.

    The one reading both uses share: :func:`compile_schema` refuses such a pattern when a schema is loaded
    (:func:`refuse_slow_patterns`), and the linter names it (AL011) in a file not yet loaded.
    """
    stack = [_Group(0)]
    last: _Group | list[Any] | None = None  # the atom just read: a closed group, or [text, repeated]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        q = _QUANTIFIER.match(pattern, i)
        if q is not None and (ch != "{" or q.group(1) or q.group(3)):
            if last is None:
                i = q.end()
                continue
            unbounded = ch in "*+" or (ch == "{" and bool(q.group(2)) and not q.group(3))
            variable = ch in "*+?" or (ch == "{" and bool(q.group(2)) and q.group(1) != q.group(3))
            if isinstance(last, _Group):
                if unbounded and last.repeats and not _delimited(last.atoms):
                    return True  # a repetition inside a repetition
                if unbounded and _overlap(last.alts):
                    return True  # alternatives that overlap, repeated
                if variable or last.repeats:
                    stack[-1].repeats = True
                for atom in last.atoms:
                    atom[1] = atom[1] or variable
            else:
                last[1] = True
                stack[-1].repeats = stack[-1].repeats or variable
            i = q.end() + pattern.startswith("?", q.end())  # a lazy quantifier is as slow
            last = None
            continue
        if ch == "(":
            m = _GROUP_OPENER.match(pattern, i + 1)
            i = m.end() if m else i + 1
            stack.append(_Group(i))
            last = None
            continue
        if ch == ")" and len(stack) > 1:
            group = stack.pop()
            group.alts.append(pattern[group.begin:i])
            stack[-1].atoms += group.atoms
            last, i = group, i + 1
            continue
        if ch == "|":
            stack[-1].alts.append(pattern[stack[-1].begin:i])
            stack[-1].begin = i + 1
            last, i = None, i + 1
            continue
        if ch == "\\":
            j = i + 2
        elif ch == "[":
            j = i + 1 + pattern.startswith("^", i + 1)
            j += pattern.startswith("]", j)  # a "]" first in a class is literal
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            j += 1
        else:
            j = i + 1
        if ch in "^$":
            last = None
        else:
            last = [pattern[i:j], False]
            stack[-1].atoms.append(last)
        i = j
    return False


def _overlap(alts: list[str]) -> bool:
    """Whether one alternative is the same as another or its beginning. Sorted, such a pair has the shorter one
    right before a string it begins (everything between them begins with it too): a pass over neighbours, not
    over every pair, since this runs on every schema that is loaded and a pattern may have thousands of them."""
    ordered = sorted(a for a in alts if a)
    return any(b.startswith(a) for a, b in itertools.pairwise(ordered))


def _delimited(atoms: list[list[Any]]) -> bool:
    """Whether the group's first or last atom is one fixed character that none of its other atoms matches."""
    for edge in (atoms[:1], atoms[-1:]):
        if not edge or edge[0][1]:
            continue
        text = edge[0][0]
        char = text[1] if len(text) == 2 and text[0] == "\\" and not text[1].isalnum() else text
        if len(char) != 1 or text == "." or text.startswith("["):  # the dot and a class are no one character
            continue
        if all(not _matches(a[0], char) for a in atoms if a is not edge[0]):
            return True
    return False


def _matches(atom: str, char: str) -> bool:
    try:
        return re.fullmatch(ecma_to_python(atom), char) is not None
    except re.error:
        return True  # cannot tell: assume it does


def refuse_slow_patterns(schema: Any) -> None:
    """Raise :class:`SchemaError` for the first ``pattern`` or ``patternProperties`` name in ``schema`` that
    :func:`slow_pattern` reads as catastrophic. Python's ``re`` has no timeout: such a pattern, once loaded,
    lets whoever writes the value (a model, or text injected into its context) stall every check of it, so it
    is refused where the schema is loaded, in every dialect, as a pattern that does not compile is."""
    todo: list[tuple[Any, Pointer]] = [(schema, ())]
    while todo:
        node, at = todo.pop()
        if not isinstance(node, dict):
            continue
        patterns = [(node["pattern"], (*at, "pattern"))] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += [(p, (*at, "patternProperties", p)) for p in node["patternProperties"] if isinstance(p, str)]
        for p, where in patterns:
            if slow_pattern(p):
                raise SchemaError(
                    f"pattern {_short_repr(p)} at {_where(where)} can take exponential time on some texts (a repeated "
                    "group that itself repeats, or whose alternatives overlap), and Python's re has no timeout: one "
                    "value could stall every check. Write it without nested repetition (^a+$, not ^(a+)+$; ^(a|b)+$, "
                    "not ^(a|aa)+$) and bound the text with maxLength",
                    f"{_where(where)} 处的 pattern {_short_repr(p)} 在某些文本上可能耗费指数级时间（重复的分组内部还有重复，"
                    "或分支彼此重叠），而 Python 的 re 没有超时：一个取值就可能卡住每一次校验。请改写为不嵌套重复的形式"
                    "（用 ^a+$ 而不是 ^(a+)+$；用 ^(a|b)+$ 而不是 ^(a|aa)+$），并用 maxLength 限制文本长度")
        for k, name, sub in _children(node):
            todo.append((sub, at + (k,) + (() if name is None else (str(name),))))




def _short_repr(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _dialect_2020_12(schema: Any) -> bool:
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    return dialect is None or dialect in DRAFT_2020_12


def compile_schema(schema: Any, *, resources: Mapping[str, Any] | None = None) -> Callable[[Any], list[Problem]]:
    """Compile ``schema`` once; the result maps a value to its list of problems.

    ``resources`` maps URIs to the documents a ``$ref`` may name (``{"https://example.com/money.json": {...}}``);
    nothing else is ever looked up, and never over the network. Raises :class:`SchemaError` for a schema
    that cannot be enforced.
    """
    if _dialect_2020_12(schema):
        check_keywords(schema)
    refuse_slow_patterns(schema)
    for document in (resources or {}).values():  # a $ref may lead into any of them
        refuse_slow_patterns(document)
    try:
        compiler = Compiler(schema)
        check = compiler.compile(schema)
    except _Delegate:
        from .delegate import compile_delegated  # imports jsonschema: only for schemas that need it
        return compile_delegated(schema, resources=resources or {})
    loop = ref_loop(schema, compiler.resolve)
    if loop is not None:
        raise SchemaError(f"$ref loops back without moving into the value ({loop}): every check would recurse forever",
                          f"$ref 在没有深入取值的情况下绕回自身（{loop}）：每次校验都会无限递归")

    def validate(value: Any) -> list[Problem]:
        out: list[Problem] = []
        check(value, "", None, out)
        return out

    return validate




# Subschemas that add to the object around them rather than describe a whole value: closing one with
# its own properties would refuse its parent's fields. Conditions (if, not, contains, propertyNames)
# are tests, not shapes: nothing inside them is closed, at any depth, or a test that should match a
# valid value (an "if" naming one field of a nested object) would stop matching and its rule be skipped.
_ADDS_TO_PARENT = ("allOf", "then", "else", "dependentSchemas", "dependencies")
_CONDITIONS = ("if", "not", "contains", "propertyNames")

Pointer = tuple[str, ...]


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
