"""The compiled checks: one closure per keyword group, built once and run on every call.

Each check has the shape ``check(value, parent path, key, problems)`` and appends a
:class:`~agentlab.errors.Problem` for every thing wrong, never only the first. The
:class:`~agentlab.schema.compiler.Compiler` assembles them into one tree per schema.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..errors import Problem
from ..jsonutil import json_eq
from .base import SchemaError, _shape, join, show
from .ecma import ecma_to_python
from .formats import FORMATS

__all__ = ["TYPE_TESTS", "Check"]

Check = Callable[[Any, str, Any, list], None]  # (value, parent path, key, problems)


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
            raise SchemaError("schema.unknown_type", name=n)
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
        raise SchemaError("schema.enum_not_list")
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
                raise SchemaError("schema.not_a_number", keyword=kw)
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
        raise SchemaError("schema.pattern_bad", pattern=pattern, error=exc) from None
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
        found_tags = [next((p for p in r if p.reason == "not_in_enum"), None) for r in deeper]
        tags = [p for p in found_tags if p is not None]
        if len(tags) > 1 and len(tags) == len(found_tags) and len({p.field for p in tags}) == 1:
            # branches told apart by one field ({"kind": "phone"} | {"kind": "email"}) and the value fits none: every
            # value that field may take, not the nearest branch's alone ("Use one of: phone", where "email" was as
            # good); what else each branch wants depends on which one is meant
            values = tuple(dict.fromkeys(a for p in tags for a in (p.allowed or ())))
            out.append(dataclasses.replace(tags[0], allowed=values))
        elif deeper:  # the value had the right shape for a branch: report that branch's problems, the branch whose
            # fixed values it matches first ({"kind": "email"} means the email branch, whatever it lacks)
            out.extend(min(deeper, key=lambda r: (sum(p.reason == "not_in_enum" for p in r), len(r))))
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
