"""The compiler: a draft 2020-12 schema turned once into a tree of checks, and :func:`compile_schema`.

A schema is compiled once, at registration; each call then runs only the checks (see
:mod:`agentlab.schema.checks`). A schema the compiled path does not evaluate (:data:`DELEGATED`
keywords, an ``$id`` below the root, a ``$ref`` to an anchor or another document, another
``$schema``) goes whole to :mod:`agentlab.schema.delegate`, imported only then.
"""
from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from ..errors import Problem, json_type
from ..jsonutil import canonical
from ..names import suggester
from .backtracking import refuse_slow_patterns
from .base import DRAFT_2020_12, SchemaError, join, ref_loop, show
from .checks import (
    Check,
    _all_of,
    _any_of,
    _enum,
    _if,
    _never,
    _not,
    _number,
    _ok,
    _sequence,
    _string,
    _type_check,
)
from .ecma import ecma_to_python
from .keywords import DELEGATED, check_keywords

__all__ = ["Compiler", "compile_schema"]


class _Delegate(Exception):
    """Raised while compiling: this schema needs the jsonschema package (the keyword is the argument)."""


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
            raise SchemaError("schema.not_a_schema", got=json_type(schema))
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
                    raise SchemaError("schema.empty_list", keyword=key)
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
            raise SchemaError("schema.properties_not_object")
        props = {k: self.compile(v) for k, v in props_schema.items()}
        descs = {k: v.get("description") for k, v in props_schema.items() if isinstance(v, dict)}
        required = tuple(s.get("required", ()))
        patterns = [(re.compile(ecma_to_python(p)), self.compile(v)) for p, v in s.get("patternProperties", {}).items()]
        extra = s.get("additionalProperties", True)
        extra_check = None if extra is True or extra is False else self.compile(extra)
        closed = extra is False
        allowed = tuple(props)
        # the names patternProperties allows, as the schema writes them: "Allowed fields: -" told a model nothing
        named_by = " | ".join(s.get("patternProperties", {})) or None
        near = suggester(allowed) if closed else None  # the fields' index is built here, once, not per call
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
                if near is not None:
                    out.append(Problem(join(here, k), "unknown_field", allowed=allowed, suggestion=near(k),
                                       expected=named_by))
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
                raise SchemaError("schema.not_an_object", keyword=kw)
            for name, dep in spec.items():
                if isinstance(dep, list) and kw != "dependentSchemas":
                    needs.append((name, tuple(dep)))
                elif kw != "dependentRequired":
                    subs.append((name, self.compile(dep)))
                else:
                    raise SchemaError("schema.dependent_required", name=name)
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
                raise SchemaError("schema.not_a_count", keyword=kw)

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
            raise SchemaError("schema.ref_not_text", ref=ref)
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
                raise SchemaError("schema.ref_fragment_nowhere", fragment=fragment)
        return node


def _dialect_2020_12(schema: Any) -> bool:
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    return dialect is None or dialect in DRAFT_2020_12


def compile_schema(schema: Any, *, resources: Mapping[str, Any] | None = None) -> Callable[[Any], list[Problem]]:
    """Compile ``schema`` once; the result maps a value to its list of problems.

    ``resources`` maps URIs to the documents a ``$ref`` may name (``{"https://example.com/money.json": {...}}``);
    nothing else is ever looked up, and never over the network. Raises :class:`SchemaError` for a schema
    that cannot be enforced.

    A schema compiled before, written the same (JSON text, keys in the same order), gets the same check back: a
    scenario builds its registry for every case and every run, and compiling was most of that (about 200 us a tool,
    10,000 registries in 9 s). The check is compiled from the text, never from the caller's objects, so changing a
    schema after it was compiled changes no check another registry holds.
    """
    if resources:
        return _compile(schema, resources)
    try:
        text = json.dumps(schema, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # not JSON (a set, NaN): compiled as given, not kept
        return _compile(schema, None)
    check = _CHECKS.get(text)
    if check is None:
        parsed = json.loads(text)
        if parsed != schema:  # JSON writes it differently (a tuple, a number as a key): compiled as given, not kept
            return _compile(schema, None)
        check = _compile(parsed, None)
        if len(text) <= _KEPT_ONE:  # a large schema is compiled each time rather than held
            global _kept
            # bounded by the schemas' text: a compiled check holds about 30 times its text (a probe of 10,000
            # generated tools keeps the last few hundred)
            while _CHECKS and (_kept + len(text) > _KEPT_ALL or len(_CHECKS) >= 1024):
                with contextlib.suppress(RuntimeError, StopIteration):  # another thread may drop the same one first
                    oldest = next(iter(_CHECKS))
                    if _CHECKS.pop(oldest, None) is not None:
                        _kept -= len(oldest)
            if not _CHECKS:
                _kept = 0  # two threads keeping the same text counted it twice: the count starts over here
            if _CHECKS.get(text) is None:
                _kept += len(text)
            _CHECKS[text] = check
    return check


_CHECKS: dict[str, Callable[[Any], list[Problem]]] = {}
_KEPT_ONE, _KEPT_ALL = 16_384, 1_000_000  # characters of schema text: one schema, all kept
_kept = 0


def _compile(schema: Any, resources: Mapping[str, Any] | None) -> Callable[[Any], list[Problem]]:
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
        raise SchemaError("schema.ref_loop", loop=loop)

    def validate(value: Any) -> list[Problem]:
        out: list[Problem] = []
        check(value, "", None, out)
        return out

    return validate
