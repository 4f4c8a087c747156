"""The schemas the compiled path does not evaluate, handed to the ``jsonschema`` package.

``unevaluatedProperties`` needs to know which fields the rest of the schema looked at;
``$id``, ``$anchor`` and ``$dynamicRef`` need URIs and a dynamic scope; a ``$schema``
may name another draft or a metaschema with its own vocabularies. jsonschema does all
of that. This module only adapts it to agentlab's contract:

* its errors come back as the same :class:`~agentlab.errors.Problem` records the
  compiled path makes (``items[0].sku`` paths, the renderer's reason codes);
* patterns mean what they mean in ECMA-262, as in the compiled path (every ``pattern``
  and ``patternProperties`` key is translated before jsonschema sees the schema, so
  every place it searches a pattern, its own helpers included, uses the translation);
* formats are the compiled path's :data:`~agentlab.schema.FORMATS`, nothing else;
* documents come only from ``resources`` (plus the drafts' own metaschemas, which ship
  with jsonschema): nothing is fetched, and a ``$ref`` nobody can resolve, an unknown
  ``$schema`` or a required vocabulary we do not know is a
  :class:`~agentlab.schema.SchemaError` at registration, never a surprise mid-call.

Importing this module imports jsonschema; :func:`agentlab.schema.compile_schema`
does so only for a schema that needs it.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urldefrag, urljoin

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import FormatChecker, ValidationError, validators
from jsonschema_specifications import REGISTRY as _METASCHEMAS

from ..errors import Problem
from ..i18n import Listed
from ..names import suggest
from .base import _SCHEMA_LISTS, _SCHEMA_MAPS, _SCHEMA_ONE, DRAFT_2020_12, SchemaError, _shape, join, ref_loop, show, transform
from .ecma import ecma_to_python
from .formats import FORMATS

try:  # which fields and items the rest of a schema evaluated: jsonschema's own answer, so both agree
    from jsonschema._utils import find_evaluated_item_indexes_by_schema as _evaluated_items
    from jsonschema._utils import find_evaluated_property_keys_by_schema as _evaluated_keys
except ImportError:  # a future jsonschema moved them: fall back to its one-error-per-object keywords
    _evaluated_items = _evaluated_keys = None

__all__ = ["VOCABULARIES", "compile_delegated"]

_V = "https://json-schema.org/draft/2020-12/vocab/"
VOCABULARIES: dict[str, frozenset[str]] = {
    _V + "core": frozenset({"$ref", "$dynamicRef"}),
    _V + "applicator": frozenset({"prefixItems", "items", "contains", "additionalProperties", "properties",
                                  "patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else",
                                  "allOf", "anyOf", "oneOf", "not"}),
    _V + "unevaluated": frozenset({"unevaluatedItems", "unevaluatedProperties"}),
    _V + "validation": frozenset({"type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
                                  "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                                  "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties",
                                  "required", "dependentRequired"}),
    _V + "meta-data": frozenset(),
    _V + "format-annotation": frozenset({"format"}),  # asserted for FORMATS all the same, as in the compiled path
    _V + "format-assertion": frozenset({"format"}),
    _V + "content": frozenset(),
}
"""The 2020-12 vocabularies a custom metaschema may turn on, and the keywords each brings (the ones that validate)."""


def compile_delegated(schema: Any, *, resources: Mapping[str, Any]) -> Callable[[Any], list[Problem]]:
    """Like :func:`~agentlab.schema.compile_schema`, by way of jsonschema."""
    patterns: dict[str, str] = {}  # translated -> as written, for the problem text
    documents = {uri: _translated(doc, patterns) for uri, doc in resources.items()}
    registry: referencing.Registry = referencing.Registry().with_resources(
        (uri, _resource(doc, uri)) for uri, doc in documents.items())
    base = _validator_class(schema, documents)
    _check_schema(base, schema)
    translated = _translated(schema, patterns)
    known = _check_refs(translated, registry, documents)
    loop = ref_loop(translated, _resolver(known), translated.get("$id", "") if isinstance(translated, dict) else "")
    if loop is not None:
        raise SchemaError("schema.ref_loop", loop=loop)
    checker = FormatChecker(formats=())
    for name, (test, _) in FORMATS.items():
        checker.checks(name)(lambda v, test=test: not isinstance(v, str) or test(v))
    validator = _with_our_keywords(base)(translated, registry=registry, format_checker=checker)
    probes: tuple[Any, ...] = (None, 0, "", [], {})
    for value in probes:  # a loop the walk above could not see ($dynamicRef): refused all the same
        try:
            for _ in validator.iter_errors(value):
                pass
        except RecursionError:
            raise SchemaError("schema.refs_loop") from None

    def validate(value: Any) -> list[Problem]:
        out: list[Problem] = []
        for error in validator.iter_errors(value):
            out += _problems(error, patterns)
        return out

    return validate


# --- dialect, vocabularies, references ------------------------------------------------
def _validator_class(schema: Any, documents: Mapping[str, Any]) -> Any:
    """The jsonschema class for ``schema``'s ``$schema``, narrowed to its metaschema's vocabularies."""
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if dialect is None or dialect in DRAFT_2020_12:
        return jsonschema.Draft202012Validator
    if not isinstance(dialect, str):
        raise SchemaError("schema.dialect_not_uri", dialect=dialect)
    known = validators.validator_for({"$schema": dialect}, default=None)
    if known is not None:
        return known
    meta = documents.get(dialect) or documents.get(dialect.rstrip("#"))
    if not isinstance(meta, dict):
        raise SchemaError("schema.dialect_unknown", dialect=dialect)
    vocabularies = meta.get("$vocabulary")
    if vocabularies is None:  # a metaschema without vocabularies extends its own dialect
        return jsonschema.Draft202012Validator
    unknown = sorted(v for v, required in vocabularies.items() if required and v not in VOCABULARIES)
    if unknown:
        raise SchemaError("schema.vocabularies", dialect=dialect, names=Listed(unknown))
    keywords = set().union(*(VOCABULARIES[v] for v in vocabularies if v in VOCABULARIES), VOCABULARIES[_V + "core"])
    base = jsonschema.Draft202012Validator
    return validators.create(meta_schema=base.META_SCHEMA, validators={k: f for k, f in base.VALIDATORS.items()
                                                                       if k in keywords},
                             type_checker=base.TYPE_CHECKER, format_checker=base.FORMAT_CHECKER,
                             id_of=base.ID_OF, applicable_validators=base._APPLICABLE_VALIDATORS)


def _check_schema(cls: Any, schema: Any) -> None:
    """A malformed schema (``"type": 5``) fails here, not in the middle of a call."""
    # no format checker: its "regex" check would judge ECMA patterns by Python's rules
    meta = cls(cls.META_SCHEMA, format_checker=None)
    error = jsonschema.exceptions.best_match(meta.iter_errors(schema))
    if error is not None:
        where = "/".join(map(str, error.absolute_path))
        if not where:
            raise SchemaError("schema.breaks_metaschema_at_root", error=error.message)
        raise SchemaError("schema.breaks_metaschema", where=where, error=error.message)


def _resource(doc: Any, uri: str) -> referencing.Resource:
    # a document in an unknown dialect is registered as 2020-12; _check_refs refuses it if a $ref reaches it
    return _specification(doc).create_resource(doc)


def _specification(doc: Any) -> Any:
    dialect = doc.get("$schema") if isinstance(doc, dict) else None
    return referencing.jsonschema.specification_with(dialect if isinstance(dialect, str) else "",
                                                     default=referencing.jsonschema.DRAFT202012)


def _known_dialect(doc: Any) -> bool:
    dialect = doc.get("$schema") if isinstance(doc, dict) else None
    return not isinstance(dialect, str) or validators.validator_for({"$schema": dialect}, default=None) is not None


def _resolver(known: referencing.Registry) -> Callable[[str, str], tuple[Any, str] | None]:
    """``resolve(ref, base)`` for :func:`~agentlab.schema.ref_loop`, by jsonschema's own lookup."""
    def resolve(ref: str, base: str) -> tuple[Any, str] | None:
        try:
            found = known.resolver(base_uri=base).lookup(ref)
        except referencing.exceptions.Unresolvable:
            return None
        return found.contents, getattr(found.resolver, "_base_uri", None) or urldefrag(urljoin(base, ref)).url
    return resolve


def _check_refs(schema: Any, registry: referencing.Registry, documents: Mapping[str, Any]) -> referencing.Registry:
    """Resolve every ``$ref`` and ``$dynamicRef`` now, in every document they reach."""
    root_uri = schema.get("$id", "") if isinstance(schema, dict) else ""
    known = _METASCHEMAS.combine(registry.with_resource(root_uri, _specification(schema).create_resource(schema)))
    known = known.crawl()
    seen: set[str] = set()
    todo: list[tuple[Any, str]] = [(schema, root_uri)]
    while todo:
        doc, uri = todo.pop()
        if uri in seen:
            continue
        seen.add(uri)
        for node, base in _subschemas(doc, uri):
            for kw in ("$ref", "$dynamicRef"):
                ref = node.get(kw)
                if not isinstance(ref, str):
                    continue
                try:
                    known.resolver(base_uri=base).lookup(ref)
                except referencing.exceptions.Unresolvable:
                    target = urldefrag(urljoin(base, ref)).url
                    if target and target != urldefrag(base).url and target not in documents:
                        raise SchemaError("schema.ref_no_document", keyword=kw, ref=ref, target=target) from None
                    raise SchemaError("schema.ref_nowhere", keyword=kw, ref=ref) from None
                target = urldefrag(urljoin(base, ref)).url
                if target in documents and target not in seen:
                    if not _known_dialect(documents[target]):
                        raise SchemaError("schema.ref_unknown_dialect", keyword=kw, ref=ref,
                                          dialect=documents[target].get("$schema"))
                    try:  # a document a $ref reaches is checked against its metaschema, like the schema itself
                        _check_schema(validators.validator_for(documents[target],
                                                               default=jsonschema.Draft202012Validator),
                                      documents[target])
                    except SchemaError as exc:
                        raise SchemaError("schema.in_resource", target=target, error=exc) from None
                    todo.append((documents[target], target))
    return known


def _subschemas(schema: Any, base: str) -> Iterator[tuple[dict, str]]:
    """Every subschema of ``schema`` with its base URI (an ``$id`` starts a new one)."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("$id"), str):
        base = urljoin(base, schema["$id"])
    yield schema, base
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            for sub in v.values():
                yield from _subschemas(sub, base)
        elif k in _SCHEMA_ONE and not isinstance(v, list):
            yield from _subschemas(v, base)
        elif (k in _SCHEMA_LISTS or k in _SCHEMA_ONE) and isinstance(v, list):  # items: [...] before 2020-12
            for sub in v:
                yield from _subschemas(sub, base)


def _translated(schema: Any, patterns: dict[str, str]) -> Any:
    """A copy of ``schema`` with every pattern in Python's dialect (see :func:`~agentlab.schema.ecma_to_python`)."""
    def python(p: Any) -> Any:
        if not isinstance(p, str):
            return p
        t = ecma_to_python(p)
        try:
            re.compile(t)
        except re.error as exc:
            raise SchemaError("schema.pattern_bad", pattern=p, error=exc) from None
        patterns[t] = p
        return t

    def node(s: dict) -> dict:
        if "pattern" in s:
            s["pattern"] = python(s["pattern"])
        if isinstance(s.get("patternProperties"), dict):
            s["patternProperties"] = {python(k): v for k, v in s["patternProperties"].items()}
        return s
    return transform(schema, node)


# --- keywords that report each field on its own -----------------------------------------
# jsonschema reports "'a', 'b' were unexpected" as one error with the names in its text; the
# model needs one problem per field, at that field's path, so these keywords yield one error each.
def _with_our_keywords(base: Any) -> Any:
    theirs = base.VALIDATORS
    ours: dict[str, Callable] = {}

    def required(validator, names, instance, schema):
        if not isinstance(names, list):  # draft 3 spells it "required": true on the property
            yield from theirs["required"](validator, names, instance, schema)
            return
        if validator.is_type(instance, "object"):
            for name in names:
                if name not in instance:
                    yield ValidationError(f"{name!r} is a required property", path=(name,))

    def dependent_required(validator, spec, instance, schema):
        if validator.is_type(instance, "object"):
            for name, wanted in spec.items():
                if name in instance and isinstance(wanted, list):
                    for w in wanted:
                        if w not in instance:
                            yield ValidationError(f"{w!r} is needed with {name!r}", validator="dependentRequired", path=(w,))
                elif name in instance:  # "dependencies" with a schema
                    yield from validator.descend(instance, wanted, schema_path=name)

    def additional(validator, extra, instance, schema):
        if extra is not False:
            yield from theirs["additionalProperties"](validator, extra, instance, schema)
            return
        if validator.is_type(instance, "object"):
            props = schema.get("properties", {})
            pats = list(schema.get("patternProperties", {}))
            for k in instance:
                if k not in props and not any(re.search(p, k) for p in pats):
                    yield ValidationError(f"{k!r} is not allowed", path=(k,))

    def unevaluated_props(validator, extra, instance, schema):
        if not validator.is_type(instance, "object"):
            return
        seen = set(_evaluated_keys(validator, instance, schema))
        for k in instance:
            if k in seen:
                continue
            if extra is False:
                yield ValidationError(f"{k!r} is not allowed", path=(k,))
            else:
                yield from validator.descend(instance[k], extra, path=k, schema_path=k)

    def unevaluated_items(validator, extra, instance, schema):
        if not validator.is_type(instance, "array"):
            return
        seen = set(_evaluated_items(validator, instance, schema))
        for i, x in enumerate(instance):
            if i in seen:
                continue
            if extra is False:
                yield ValidationError(f"item {i} is not allowed", path=(i,), instance=x)
            else:
                yield from validator.descend(x, extra, path=i, schema_path=i)

    if "required" in theirs:
        ours["required"] = required
    if "dependentRequired" in theirs:
        ours["dependentRequired"] = dependent_required
        ours["dependencies"] = dependent_required  # the older spelling, enforced as by the compiled path
    if "additionalProperties" in theirs:
        ours["additionalProperties"] = additional
    if _evaluated_keys is not None and "unevaluatedProperties" in theirs:
        ours["unevaluatedProperties"] = unevaluated_props
    if _evaluated_items is not None and "unevaluatedItems" in theirs:
        ours["unevaluatedItems"] = unevaluated_items
    return validators.extend(base, ours)


# --- jsonschema's errors as agentlab's problems -----------------------------------------
_LIMITS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                     "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains",
                     "maxContains"})
_NAMED_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
                         "dependentRequired", "dependencies"})


def _problems(error: ValidationError, patterns: Mapping[str, str]) -> list[Problem]:
    here = ""
    for part in error.absolute_path:
        here = join(here, part)
    kw, v = error.validator, error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if _in_property_names(error):
        # the value is a field's name, checked against propertyNames: say so at that field
        return [_replace_field(p, join(here, v)) for p in _problems_at(kw, v, "", error, schema, patterns)]
    return _problems_at(kw, v, here, error, schema, patterns)


def _problems_at(kw: Any, v: Any, here: str, error: ValidationError, schema: dict,
                 patterns: Mapping[str, str]) -> list[Problem]:
    field, desc = show(here), schema.get("description")
    if kw in ("required", "dependentRequired", "dependencies"):
        name = error.path[-1] if error.path else ""
        sub = schema.get("properties", {}).get(name) if isinstance(schema.get("properties"), dict) else None
        return [Problem(here, "missing", description=sub.get("description") if isinstance(sub, dict) else None)]
    if kw in ("additionalProperties", "unevaluatedProperties"):
        allowed = list(_field_names(schema))
        name = str(error.path[-1]) if error.path else ""
        return [Problem(here, "unknown_field", allowed=tuple(allowed), suggestion=suggest(name, allowed))]
    if kw == "type":
        names = [error.validator_value] if isinstance(error.validator_value, str) else list(error.validator_value)
        names = [n if isinstance(n, str) else _shape(n) for n in names]  # draft 3 allows a schema in the list
        return [Problem(field, "wrong_type", expected=" or ".join(names), got=v, description=desc)]
    if kw == "enum":
        return [Problem(field, "not_in_enum", got=v, allowed=tuple(error.validator_value), description=desc)]
    if kw == "const":
        return [Problem(field, "not_in_enum", got=v, allowed=(error.validator_value,), description=desc)]
    if kw == "contains":  # no item matched: as the compiled path says it
        return [Problem(field, "out_of_range", got=v, limit=("minContains", schema.get("minContains", 1)))]
    if kw in _LIMITS:
        return [Problem(field, "out_of_range", got=v, limit=(kw, error.validator_value))]
    if kw == "pattern":
        shown = patterns.get(error.validator_value, error.validator_value)
        return [Problem(field, "bad_format", got=v, expected=f"pattern {shown}", description=desc)]
    if kw == "format":
        name = error.validator_value
        return [Problem(field, "bad_format", got=v, expected=f"{name} ({FORMATS[name][1]})" if name in FORMATS else name,
                        description=desc)]
    if kw == "uniqueItems":
        return [Problem(field, "not_unique")]
    if kw in ("anyOf", "oneOf"):
        return _branches(error, field, v, patterns)
    return [Problem(field, "not_allowed", got=v)]  # not, a false schema, an unevaluated item


def _branches(error: ValidationError, field: str, v: Any, patterns: Mapping[str, str]) -> list[Problem]:
    """anyOf/oneOf as the compiled path reports them: a plain type mismatch, the nearest branch, or the shapes."""
    branches = error.validator_value
    failed: dict[int, list[Problem]] = {}
    false_branches = iter([i for i, b in enumerate(branches) if b is False])
    for sub in error.context or ():
        # a false branch's error carries no schema path (jsonschema returns before adding it)
        index = sub.relative_schema_path[0] if sub.relative_schema_path else next(false_branches, -1)
        failed.setdefault(index, []).extend(_problems(sub, patterns))
    shapes = " | ".join(_shape(s) for s in branches)
    if len(failed) < len(branches):  # more than one branch passed: oneOf wants exactly one
        return [Problem(field, "many_match", got=v, expected=shapes)]
    results = list(failed.values())
    if all(len(r) == 1 and r[0].reason == "wrong_type" and r[0].field == field for r in results):
        return [Problem(field, "wrong_type", got=v, expected=" or ".join(r[0].expected or "" for r in results))]
    deeper = [r for r in results if not any(p.field == field and p.reason == "wrong_type" for p in r)]
    if deeper:
        return min(deeper, key=len)
    return [Problem(field, "no_match", got=v, expected=shapes)]


def _in_property_names(error: ValidationError) -> bool:
    path = list(error.absolute_schema_path)
    return any(p == "propertyNames" and (i == 0 or path[i - 1] not in _NAMED_MAPS) for i, p in enumerate(path))


def _replace_field(p: Problem, field: str) -> Problem:
    return replace(p, field=field)


def _field_names(schema: Any) -> dict[str, None]:
    """The field names a schema and the subschemas that add to it declare, in order (for "allowed" in a hint)."""
    if not isinstance(schema, dict):
        return {}
    names = dict.fromkeys(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
    subs = [*(schema.get("allOf") or []), *(schema.get("anyOf") or []), *(schema.get("oneOf") or []),
            schema.get("then"), schema.get("else")]
    if isinstance(schema.get("dependentSchemas"), dict):
        subs += list(schema["dependentSchemas"].values())
    for sub in subs:
        names.update(_field_names(sub))
    return names
