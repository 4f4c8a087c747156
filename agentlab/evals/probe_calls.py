"""Valid calls made from a tool's schema, and the user message that asks for one (docs/metrics.md#the-probe).

:func:`valid_call` walks a JSON Schema and builds one value that satisfies it: every required field,
enums, ``const``, formats (date, date-time, time, email, uuid, ipv4), patterns, ranges and lengths,
nested objects and arrays, ``anyOf``/``oneOf``/``allOf`` and local ``$ref``. It is seeded, so the same
schema and seed always give the same call, and it prefers values a person would write: an example the
schema or its description gives (``"such as '#W0000000'"``), then a value guessed from the field's name
(``email``, ``zip``, ``city``), then a plain one. The result is checked with the registry's own
validator; a schema nothing can satisfy raises :class:`NoValidCall`, which says why in either language
(an enum that contradicts its type, ``minLength`` over ``maxLength``, arguments that are not an object, a
``$ref`` that points back at itself: the nesting bound, :data:`MAX_DEPTH`, is what stops it).

What it builds is bounded, whatever the schema asks: no string longer than :data:`MAX_LENGTH` (a ``minLength``
of 500,000,000 is refused with the reason, never allocated), at most :data:`MAX_VALUES` values a try (a
``minItems`` or ``minProperties`` above that is refused the same way), the first :data:`MAX_ENUM` values of an
``enum`` or ``examples`` list tried, and numbers within :data:`MAX_MAGNITUDE` (a ``minimum`` of 1e308 is refused;
a ``multipleOf`` of 1e-300 is reckoned in exact fractions, so nothing overflows). An optional clock and deadline
bound its time (``probe.why.no_time``).

:func:`ask_for` turns a valid call into the words of a user who wants it made, so that a real model
writes the call itself instead of being handed it.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import random
import re
import uuid
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from ..i18n import Lang, said, t
from ..schema import FORMATS, SchemaError, compile_schema, ecma_to_python

__all__ = ["MAX_DEPTH", "MAX_ENUM", "MAX_LENGTH", "MAX_MAGNITUDE", "MAX_VALUES", "NoValidCall", "ask_for", "valid_call",
           "valid_value"]

#: How deep the generator follows a schema (each object, array, ``$ref``, ``allOf`` or ``anyOf`` is a level):
#: deep enough for any realistic schema (a 10-level nested object takes 10), and a bound on a ``$ref`` cycle.
MAX_DEPTH = 64
#: How many values one attempt may build: a bound on schemas that branch at every level.
MAX_VALUES = 5000
#: The longest string the generator builds (and the longest a fault is allowed to build from a ``maxLength``).
MAX_LENGTH = 100_000
#: How many values of an ``enum`` (or an ``examples`` list) are tried: each is checked, and 100,000 of them
#: checked for every attempt took the probe 26 minutes.
MAX_ENUM = 1000
#: The largest number (either sign) the generator builds: past 2**53 floats skip integers, and a bound such as
#: 1e308 leaves no room for arithmetic (1e308 + 1e308 is inf).
MAX_MAGNITUDE = 10**15
_ATTEMPTS = 12  # seeds tried before a schema is declared unsatisfiable (a oneOf, a pattern with a lookahead)
# the same for every seed: no other attempt can help
_STRUCTURAL = ("probe.why.too_deep", "probe.why.too_large", "probe.why.not_object", "probe.why.over_limit",
               "probe.why.number_too_big", "probe.why.no_time", "probe.why.enum_tried")


class NoValidCall(ValueError):
    """No value this generator can build satisfies the schema; ``why`` is the catalogue key of the reason
    (``probe.why.*``), ``fields`` fill it in, :meth:`localized` says it in either language."""

    def __init__(self, why: str = "probe.why.none", /, **fields: Any):
        self.why, self.fields = why, {"field": "", **fields}
        super().__init__(self.localized("en"))

    def localized(self, lang: Lang = "en") -> str:
        where = t("probe.why.at", lang, field=self.fields["field"]) if self.fields["field"] else ""
        fields = {k: said(v, lang)[:120] if hasattr(v, "localized") else v for k, v in self.fields.items()}
        return t(self.why, lang, **{**fields, "at": where})


class _Budget:
    """What one attempt may still spend: values, and (with a clock) time until ``until``."""

    def __init__(self, clock: Callable[[], float] | None = None, until: float | None = None) -> None:
        self.left = MAX_VALUES
        self.clock, self.until = clock, until

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise NoValidCall("probe.why.too_large", limit=MAX_VALUES)
        if self.clock is not None and self.until is not None and self.left % 64 == 0:  # a reading every 64 values
            self.check_time()

    def check_time(self) -> None:
        if self.clock is not None and self.until is not None and self.clock() >= self.until:
            raise NoValidCall("probe.why.no_time")


def valid_call(parameters: Mapping[str, Any], *, seed: int | str = 0, optional: bool = True,
               clock: Callable[[], float] | None = None, until: float | None = None) -> dict:
    """Arguments that pass ``parameters`` (a tool's JSON Schema), the same ones for the same ``seed``.

    ``optional`` fills optional fields as well (more fields for the faults to hit); when the
    schema refuses that (``oneOf`` between fields, ``maxProperties``), only the required ones.
    With ``clock`` and ``until``, a search still going at ``until`` stops with ``probe.why.no_time``.
    """
    kind = parameters.get("type", "object") if isinstance(parameters, Mapping) else None
    if isinstance(kind, list):
        kind = "object" if "object" in kind else (kind[0] if kind else "object")
    if kind != "object":
        raise NoValidCall("probe.why.not_object", type=json.dumps(kind if kind is not None else parameters,
                                                                  ensure_ascii=False)[:60])
    try:
        check = compile_schema(dict(parameters))
    except SchemaError as exc:
        raise NoValidCall("probe.why.uncheckable", detail=exc) from None
    why = NoValidCall()
    for attempt in range(_ATTEMPTS):
        for with_optional in ((True, False) if optional else (False,)):
            rng = random.Random(f"{seed}/{attempt}")
            budget = _Budget(clock, until)
            try:
                budget.check_time()
                value = valid_value(parameters, rng, root=parameters, optional=with_optional, budget=budget)
            except NoValidCall as exc:
                why = exc
                continue
            if not isinstance(value, dict):
                why = NoValidCall("probe.why.not_object", type=type(value).__name__)
                continue
            try:
                problems = check(value)
            except Exception as exc:  # noqa: BLE001 - a keyword of the wrong type ("minLength": "3") breaks the checker
                raise NoValidCall("probe.why.uncheckable", detail=f"{type(exc).__name__}: {str(exc)[:100]}") from None
            if not problems:
                return value
            first = problems[0]
            why = NoValidCall("probe.why.unsatisfied", field=getattr(first, "field", ""),
                              reason=str(getattr(first, "reason", first))[:80])
        if why.why in _STRUCTURAL:
            break  # no other seed builds a shallower or smaller value
    raise why


def valid_value(schema: Any, rng: random.Random, *, root: Any = None, name: str = "", optional: bool = True,
                depth: int = 0, budget: Any = None, refs: tuple[str, ...] = ()) -> Any:
    """One value for ``schema`` (a best effort; :func:`valid_call` checks the whole call).

    ``refs`` are the ``$ref`` s followed on the way here: below a second visit to one (a recursive
    schema: a tree, a list of lists) only required fields are filled, so that the value ends."""
    root = schema if root is None else root
    budget = budget if budget is not None else _Budget()
    budget.spend()
    if depth > MAX_DEPTH:
        raise NoValidCall("probe.why.too_deep", limit=MAX_DEPTH, field=name)
    if schema is True or schema == {}:
        return _word(name, rng)
    if schema is False or not isinstance(schema, Mapping):
        raise NoValidCall("probe.why.false_schema", field=name)
    kw: dict[str, Any] = dict(name=name, optional=optional, depth=depth + 1, root=root, budget=budget, refs=refs)
    if "$ref" in schema:
        ref = schema["$ref"]
        target = _pointer(root, ref)
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        again = ref in refs
        return valid_value(merged, rng, **{**kw, "refs": (*refs, str(ref)), "optional": optional and not again})
    if "allOf" in schema:
        merged = _merge([{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]], root)
        return valid_value(merged, rng, **kw)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            options = list(schema[key])
            for option in options:
                try:
                    candidate = valid_value(_merge([rest, option], root), rng, **kw)
                except NoValidCall:
                    continue
                if _accepts(schema, root, candidate):
                    return candidate
            raise NoValidCall("probe.why.no_option", key=key, field=name)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and isinstance(schema["enum"], list):
        accepts = _checker(schema, root)  # compiled once: the enum may be long
        allowed = [v for v in schema["enum"][:MAX_ENUM] if accepts(v)]
        if not allowed and len(schema["enum"]) > MAX_ENUM:
            raise NoValidCall("probe.why.enum_tried", field=name, tried=MAX_ENUM, total=len(schema["enum"]))
        if not allowed:  # an enum of strings on an integer field: nothing is both
            raise NoValidCall("probe.why.enum", field=name)
        return rng.choice(allowed)
    examples = _examples(schema)[:MAX_ENUM]
    if examples:
        accepts = _checker(schema, root)
        for example in examples:
            if accepts(example):
                return example
    kind = _kind(schema, rng)
    if kind == "object":
        return _object(schema, rng, **kw)
    if kind == "array":
        return _array(schema, rng, **kw)
    if kind == "string":
        return _string(schema, rng, name)
    if kind in ("number", "integer"):
        try:
            return _number(schema, rng, integer=kind == "integer")
        except NoValidCall as exc:
            raise NoValidCall(exc.why, **{**exc.fields, "field": name}) from None
    if kind == "boolean":
        return rng.choice([True, False])
    return None  # "null"


def _accepts(schema: Mapping, root: Any, value: Any) -> bool:
    """Whether ``schema`` (a node of ``root``) takes ``value`` (see :func:`_checker`)."""
    return _checker(schema, root)(value)


def _checker(schema: Mapping, root: Any) -> Callable[[Any], bool]:
    """Whether ``schema`` (a node of ``root``) takes a value; the root's definitions come along for its ``$ref``s.
    A node that cannot be checked on its own is given the benefit of the doubt: the whole call is checked later."""
    node = dict(schema)
    if isinstance(root, Mapping):
        for defs in ("$defs", "definitions"):
            if defs in root and defs not in node:
                node[defs] = root[defs]
    try:
        check = compile_schema(node)
    except SchemaError:
        return lambda value: True
    return lambda value: not check(value)


def _pointer(root: Any, ref: Any) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise NoValidCall("probe.why.ref_remote", ref=str(ref)[:80])
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise NoValidCall("probe.why.ref_nowhere", ref=str(ref)[:80])
    return node


def _merge(parts: list[Any], root: Any) -> dict:
    """Several schemas that must all hold, as one (properties and required are joined; the rest: last wins)."""
    out: dict[str, Any] = {}
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        if "$ref" in part:
            part = {**_pointer(root, part["$ref"]), **{k: v for k, v in part.items() if k != "$ref"}}
        for k, v in part.items():
            if k == "properties" and isinstance(v, Mapping):
                out["properties"] = {**out.get("properties", {}), **v}
            elif k == "required" and isinstance(v, list):
                out["required"] = list(dict.fromkeys([*out.get("required", []), *v]))
            else:
                out[k] = v
    return out


def _examples(schema: Mapping) -> list[Any]:
    found: list[Any] = []
    if isinstance(schema.get("examples"), list):
        found += schema["examples"]
    if "example" in schema:
        found.append(schema["example"])
    if "default" in schema:
        found.append(schema["default"])
    desc = schema.get("description")
    if isinstance(desc, str) and _kind(schema, None) == "string":
        found += [m.group(2) for m in _SAID_EXAMPLE.finditer(desc)]
    return found


# "such as '#W0000000'", "e.g. 'A1001'", "like \"E0001\"", "例如 A1001"
_SAID_EXAMPLE = re.compile(r"(?:such as|e\.g\.,?|for example,?|like|例如|比如|形如)\s*(['\"“‘`])([^'\"”’`]{1,60})[\'\"”’`]", re.I)


def _kind(schema: Mapping, rng: random.Random | None) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        real = [k for k in kind if k != "null"] or ["null"]
        return str(real[0])
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema or "minItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _object(schema: Mapping, rng: random.Random, *, name: str, optional: bool, depth: int, root: Any, budget: Any,
            refs: tuple[str, ...]) -> dict:
    found = schema.get("properties")
    props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)]
    out: dict[str, Any] = {}
    for field in [*required, *(k for k in props if k not in required and optional)]:
        sub = props.get(field, _extra_schema(schema, field))
        out[field] = valid_value(sub, rng, root=root, name=field, optional=optional, depth=depth, budget=budget, refs=refs)
    least = _int(schema.get("minProperties")) or 0
    if least > MAX_VALUES:  # refused before any is built
        raise NoValidCall("probe.why.over_limit", field=name, keyword="minProperties", value=least, limit=MAX_VALUES)
    extra = schema.get("additionalProperties", True)
    i = 1
    while len(out) < least and extra is not False:
        key = f"key{i}"
        out.setdefault(key, valid_value(extra if isinstance(extra, Mapping) else {}, rng, root=root, name=key,
                                        optional=optional, depth=depth, budget=budget, refs=refs))
        i += 1
    most = _int(schema.get("maxProperties"))
    if isinstance(most, int) and len(out) > most:  # keep the required ones first
        out = dict(list(out.items())[:most])
    return out


def _int(value: Any) -> int | None:
    """A limit (``minLength``, ``maxItems``...) as a number, or None for a limit that is not one (``"3"``):
    the generator ignores it, and the schema's own check decides."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _extra_schema(schema: Mapping, field: str) -> Any:
    for pattern, sub in (schema.get("patternProperties") or {}).items():
        if re.search(ecma_to_python(pattern), field):
            return sub
    extra = schema.get("additionalProperties", True)
    return extra if isinstance(extra, Mapping) else {}


def _array(schema: Mapping, rng: random.Random, *, name: str, optional: bool, depth: int, root: Any, budget: Any,
           refs: tuple[str, ...]) -> list:
    least = _int(schema.get("minItems")) or 0
    if least > MAX_VALUES:
        raise NoValidCall("probe.why.over_limit", field=name, keyword="minItems", value=least, limit=MAX_VALUES)
    most = _int(schema.get("maxItems"))
    prefix = list(schema.get("prefixItems") or [])
    n = max(least, len(prefix), 1)
    if isinstance(most, int):
        n = min(n, most)
    items = schema.get("items", {})
    item_name = name[:-1] if name.endswith("s") else name
    out: list[Any] = []
    tries = 0
    while len(out) < n and tries < n * 10:
        tries += 1
        i = len(out)
        sub = prefix[i] if i < len(prefix) else (items if items is not False else {})
        value = valid_value(sub, rng, root=root, name=item_name, optional=optional, depth=depth, budget=budget, refs=refs)
        if schema.get("uniqueItems") and value in out:
            continue
        out.append(value)
    return out


# values a person would write, by what the field is called (the first matching rule wins)
_BY_NAME: list[tuple[re.Pattern[str], list[str]]] = [(re.compile(p, re.I), v) for p, v in [
    (r"e_?mail", ["mia.li@example.com", "sam.chen@example.com"]),
    (r"(^|_)zip|postal|postcode", ["10001", "94107", "60614"]),
    (r"phone|mobile|tel", ["13800138000", "+1-555-0100"]),
    (r"first_?name|given", ["Mia", "Sam", "Lei"]),
    (r"last_?name|surname|family", ["Li", "Chen", "Garcia"]),
    (r"(^|_)name$", ["Mia Li", "Sam Chen"]),
    (r"city", ["Austin", "Seattle", "Beijing"]),
    (r"state|province", ["TX", "WA", "CA"]),
    (r"country", ["USA", "China"]),
    (r"address", ["100 Main Street", "22 Oak Avenue"]),
    (r"url|link|website", ["https://example.com/page"]),
    (r"currency", ["USD", "CNY"]),
    (r"lang", ["en", "zh"]),
    (r"(^|_)ids?$|_id$|Id$", ["A1001", "A2002", "X3003"]),
    (r"reason|summary|thought|note|remark|message|comment|description|query|keyword|text|content", [
        "the customer changed their mind", "please check this", "a short note"]),
]]


def _word(name: str, rng: random.Random) -> str:
    for rx, values in _BY_NAME:
        if rx.search(name):
            return rng.choice(values)
    return rng.choice(["alpha", "blue", "sample", "first"])


def _string(schema: Mapping, rng: random.Random, name: str) -> str:
    fmt = schema.get("format")
    pattern = schema.get("pattern")
    least, most = _int(schema.get("minLength")) or 0, _int(schema.get("maxLength"))
    if most is not None and least > most:
        raise NoValidCall("probe.why.lengths", field=name, least=least, most=most)
    if least > MAX_LENGTH:  # refused before a character is written: 500,000,000 of them grew the probe to 6 GB
        raise NoValidCall("probe.why.over_limit", field=name, keyword="minLength", value=least, limit=MAX_LENGTH)
    plain = [_formatted(fmt, rng)] if isinstance(fmt, str) and fmt in FORMATS else [_word(name, rng)]
    s = plain[0]
    if isinstance(pattern, str):
        try:
            rx = re.compile(ecma_to_python(pattern))
        except re.error:
            raise NoValidCall("probe.why.bad_pattern", pattern=pattern[:80], field=name) from None
        plausible = [s, _formatted("date", rng), _formatted("date", rng)[:7], _formatted("date-time", rng)]
        s = next((x for x in plausible if rx.search(x) and (not isinstance(fmt, str) or fmt not in FORMATS or FORMATS[fmt][0](x))), s)
        if not rx.search(s):
            for _ in range(40):
                try:
                    s = from_regex(rx, rng)
                except NoValidCall as exc:
                    raise NoValidCall(exc.why, **{**exc.fields, "field": name, "value": pattern[:80]}) from None
                if rx.search(s) and (not isinstance(fmt, str) or fmt not in FORMATS or FORMATS[fmt][0](s)):
                    break
            else:
                raise NoValidCall("probe.why.no_pattern_string", pattern=pattern[:80], field=name)
    if len(s) < least:
        s = s + "x" * (least - len(s)) if not pattern else s
    if isinstance(most, int) and len(s) > most:
        s = s[:most]
    return s


def _formatted(fmt: str, rng: random.Random) -> str:
    day = _dt.date(2024, 1, 1) + _dt.timedelta(days=rng.randrange(365))
    return {"date": day.isoformat(), "date-time": f"{day.isoformat()}T10:30:00+00:00", "time": "10:30:00+00:00",
            "email": "mia.li@example.com", "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
            "ipv4": f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}"}[fmt]


def _number(schema: Mapping, rng: random.Random, *, integer: bool) -> int | float:
    lo, hi = -1e9, 1e9
    lo_open = hi_open = False
    lo_kw = hi_kw = None
    for kw, is_lo, is_open in (("minimum", True, False), ("exclusiveMinimum", True, True),
                               ("maximum", False, False), ("exclusiveMaximum", False, True)):
        b = schema.get(kw)
        if isinstance(b, bool) or not isinstance(b, (int, float)) or b != b:  # b != b: NaN
            continue
        if is_lo and (b > lo or (b == lo and is_open)):
            lo, lo_open, lo_kw = b, is_open, kw
        if not is_lo and (b < hi or (b == hi and is_open)):
            hi, hi_open, hi_kw = b, is_open, kw
    # every valid number lies past what the generator builds: said, not attempted (1e308 + 1 is no arithmetic)
    if lo > MAX_MAGNITUDE:
        raise NoValidCall("probe.why.number_too_big", keyword=lo_kw, value=_said_number(lo), limit=f"{MAX_MAGNITUDE:.0e}")
    if hi < -MAX_MAGNITUDE:
        raise NoValidCall("probe.why.number_too_big", keyword=hi_kw, value=_said_number(hi), limit=f"{MAX_MAGNITUDE:.0e}")
    # a range wholly past the default one (a minimum of 5e9 and no maximum): the open end follows it
    if hi_kw is None and lo >= hi:
        hi = min(lo + 2e9, MAX_MAGNITUDE)
    if lo_kw is None and hi <= lo:
        lo = max(hi - 2e9, -MAX_MAGNITUDE)
    mult = schema.get("multipleOf")
    nice = [45, 2, 10, 1, 5, 20, 100, 3, 199, 0]
    rng.shuffle(nice)
    pool: list[float] = [*nice, lo + 1, (lo + hi) / 2, lo, hi]
    if isinstance(mult, (int, float)) and not isinstance(mult, bool) and 0 < mult < math.inf:
        pool = [round(k * mult, 10) for k in (1, 2, 3, 10)] + _multiples(mult, lo, hi, integer)
    for v in pool:
        v = int(v) if integer and float(v).is_integer() else v
        if integer and not float(v).is_integer():
            continue
        if (v > lo or (v == lo and not lo_open)) and (v < hi or (v == hi and not hi_open)):
            return v
    raise NoValidCall("probe.why.no_number")


def _multiples(mult: float, lo: float, hi: float, integer: bool) -> list[float]:
    """Multiples of ``mult`` near the middle and the ends of ``[lo, hi]``. Reckoned in exact fractions of the
    numbers as written (as the checker reckons them): 5e8 / 1e-300 is past every float, not past a Fraction."""
    step = Fraction(repr(mult)) if isinstance(mult, float) else Fraction(mult)
    if integer:  # the integers among the multiples of p/q are the multiples of p
        step = Fraction(step.numerator)
    mid, low, high = (Fraction(repr(x)) if isinstance(x, float) else Fraction(x) for x in ((lo + hi) / 2, lo, hi))
    out: list[float] = []
    try:  # the float reckoning first, as before: a schema that worked gives the same call (a recording's label)
        out.append(mult * round(((lo + hi) / 2) / mult))
    except OverflowError:
        pass
    for k in (round(mid / step), math.ceil(low / step), math.ceil(low / step) + 1, math.floor(high / step)):
        exact = k * step
        out.append(int(exact) if exact.denominator == 1 else float(exact))
    return out


def _said_number(v: float) -> str:
    """A bound as a short text, however large (``str`` of a 5,000-digit integer raises)."""
    if isinstance(v, int) and abs(v).bit_length() > 60:
        return f"{'-' if v < 0 else ''}~1e{int(abs(v).bit_length() * 0.30103)}"
    return f"{v:g}" if isinstance(v, float) else str(v)


# --- strings from a regular expression ----------------------------------------------------
def from_regex(rx: re.Pattern[str], rng: random.Random) -> str:
    """One string matching ``rx`` (a Python pattern), built from its parse tree; one longer than
    :data:`MAX_LENGTH` (``a{4000000000}``) is refused with the reason before it is built."""
    from re import _parser  # type: ignore[attr-defined]  # the parser re itself uses
    return _emit(_parser.parse(rx.pattern, rx.flags), rng, [MAX_LENGTH])


def _emit(tree: Any, rng: random.Random, left: list[int]) -> str:
    """``left`` holds how many more characters may be written, shared by every level of the tree."""
    from re import _constants as c  # type: ignore[attr-defined]
    out = []
    for op, arg in tree:
        if op not in (c.SUBPATTERN, c.BRANCH, c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None),
                      getattr(c, "ATOMIC_GROUP", None)):
            left[0] -= 1
            if left[0] < 0:
                raise NoValidCall("probe.why.over_limit", keyword="pattern", value="", limit=MAX_LENGTH)
        if op is c.LITERAL:
            out.append(chr(arg))
        elif op is c.NOT_LITERAL:
            out.append("a" if chr(arg) != "a" else "b")
        elif op is c.ANY:
            out.append("a")
        elif op is c.IN:
            out.append(_in(arg, rng))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            least, most, sub = arg
            if least * sub.getwidth()[0] > left[0]:  # a{4000000000}: refused before a character is written
                raise NoValidCall("probe.why.over_limit", keyword="pattern", value="", limit=MAX_LENGTH)
            n = least if most == least else rng.randint(least, min(most, least + 2) if most != c.MAXREPEAT else least + 2)
            out.extend(_emit(sub, rng, left) for _ in range(n))
        elif op is c.SUBPATTERN:
            out.append(_emit(arg[-1], rng, left))
        elif op is c.BRANCH:
            out.append(_emit(rng.choice(arg[1]), rng, left))
        elif op is getattr(c, "ATOMIC_GROUP", None):
            out.append(_emit(arg, rng, left))
        elif op is c.CATEGORY:
            out.append(_category(arg))
        # AT (anchors), ASSERT, ASSERT_NOT, GROUPREF: nothing to write (a lookahead may fail: checked after)
    return "".join(out)


def _in(items: Any, rng: random.Random) -> str:
    from re import _constants as c  # type: ignore[attr-defined]
    if items and items[0][0] is c.NEGATE:
        banned = set()
        for op, arg in items[1:]:
            if op is c.LITERAL:
                banned.add(chr(arg))
            elif op is c.RANGE:
                banned |= {chr(x) for x in range(arg[0], min(arg[1], arg[0] + 200) + 1)}
        return next(ch for ch in "aZ0_-x" if ch not in banned)
    op, arg = rng.choice(items)
    if op is c.LITERAL:
        return chr(arg)
    if op is c.RANGE:
        return chr(rng.randint(arg[0], arg[1]))
    if op is c.CATEGORY:
        return _category(arg)
    return "a"


def _category(cat: Any) -> str:
    from re import _constants as c  # type: ignore[attr-defined]
    return {c.CATEGORY_DIGIT: "7", c.CATEGORY_NOT_DIGIT: "a", c.CATEGORY_SPACE: " ", c.CATEGORY_NOT_SPACE: "a",
            c.CATEGORY_WORD: "a", c.CATEGORY_NOT_WORD: "-"}.get(cat, "a")


# --- the user's words ---------------------------------------------------------------------
def ask_for(tool: str, description: str, args: Mapping[str, Any], lang: Lang = "en") -> str:
    """What a user would say to get ``tool`` called with ``args``: the job in words, then each value.

    The model is not shown the call: it reads the job and the values and writes the call itself
    (in the tool's own field names, if it reads the schema well)."""
    job = _first_sentence(description) or tool.replace("_", " ")
    values = "; ".join(f"{_spoken(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    key = "probe.ask" if args else "probe.ask_no_args"
    return t(key, lang, tool=tool, job=job, values=values)


def _first_sentence(text: str) -> str:
    text = " ".join((text or "").split())
    m = re.match(r"(.+?[.。!?！？])(\s|$)", text)
    return (m.group(1) if m else text)[:200]


def _spoken(field: str) -> str:
    """``order_id`` as a person says it: "order id"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", field).replace("_", " ").lower()
