"""A schema linter: the habits of docs/guards.md#schema-habits as checkable rules.

Each rule looks for one way a schema makes the model guess. Findings are data
(:class:`Finding`), so a notebook can tabulate them and a CLI can print them.

| rule | what it finds |
|---|---|
| AL001 missing-description | a tool or field with no description |
| AL002 uninformative-description | a description that only repeats the name ("Order ID") |
| AL003 closed-set-as-free-text | a string whose description lists the allowed values: use ``enum`` |
| AL004 mixed-naming | ``order_id`` beside ``orderId`` in one registry |
| AL005 composite-tool | a tool that does two jobs (``get_order_and_refund``) |
| AL006 number-without-unit | an amount, price, weight or duration whose unit is not said |
| AL007 required-without-example | a required field with no example, enum, pattern or format |
| AL008 unknown-keyword | a keyword JSON Schema 2020-12 does not have (usually a misspelling): nothing enforces it |
| AL009 description-says-what-not-when | a tool description that never says when to use it |
| AL010 unchecked-format | a ``format`` the validator treats as a note, not a rule (only date, date-time, time, email, uuid, ipv4 are checked) |
| AL011 slow-pattern | a ``pattern`` or ``patternProperties`` name that can take exponential time (``(a+)+``, ``(a|aa)*``) |
| AL012 required-undefined | a ``required`` name the schema's ``properties`` do not define (a misspelling, usually) |

AL011 reads patterns with :func:`agentlab.schema.slow_pattern`, the reading that also refuses them when a schema
is loaded: the linter says it about a file before it is loaded, the loader refuses it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .i18n import Lang, joined, t
from .names import to_snake
from .schema import FORMATS, slow_pattern, subschemas, unsupported_keywords

__all__ = ["Finding", "Severity", "lint", "slow_pattern"]

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Finding:
    """One lint finding."""

    rule: str
    severity: Severity
    location: str
    message: str
    suggestion: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "location": self.location,
                "message": self.message, "suggestion": self.suggestion}


def _f(rule: str, severity: Severity, location: str, variant: str, lang: Lang, **fmt: Any) -> Finding:
    # the sentences are the catalogue's (lint.<rule>.<variant> and its .fix); formatted even with no field, as the
    # doubled braces of a JSON example must be
    key = f"lint.{rule}.{variant}"
    return Finding(rule, severity, location, t(key, lang).format(**fmt), t(f"{key}.fix", lang).format(**fmt))


_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_CAMEL = re.compile(r"^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$")
_COMPOSITE = re.compile(r"(?:^|_)(?:and|then|plus)(?:_|$)|[a-z]And[A-Z]|[a-z]Then[A-Z]")
_CLOSED_SET = re.compile(
    r"(?:\b(?:one of|either|must be|can be|options?|allowed values?|possible values?|choose)\b|可选|取值|之一|选项)"
    r"[^.。]*?['\"“‘`]?\w+['\"”’`]?\s*(?:,|/|、|\bor\b|或)\s*['\"“‘`]?\w+", re.I)
_QUOTED_LIST = re.compile(r"['\"“‘`]\w[\w -]*['\"”’`]\s*(?:,|/|、|\bor\b|或)\s*['\"“‘`]\w[\w -]*['\"”’`]")
_EXAMPLE = re.compile(r"e\.g\.|for example|such as|like ['\"]|例如|比如|形如|如 ?['\"“A-Z0-9]|example|格式|format|\d", re.I)
_UNIT = re.compile(
    r"\b(?:yuan|rmb|cny|usd|eur|dollars?|cents?|seconds?|secs?|minutes?|mins?|hours?|days?|ms|"
    r"milliseconds?|kg|grams?|g|km|meters?|m|cm|mm|miles?|percent|bytes?|kb|mb|gb|units?|unit|"
    r"celsius|fahrenheit|currency)\b|[元¥$€£%秒分钟小时天克米]|单位", re.I)
_NEEDS_UNIT = re.compile(r"amount|price|cost|fee|total|balance|salary|weight|height|width|length|"
                         r"distance|duration|timeout|delay|size|temperature|budget|refund|pay", re.I)
_WHEN = re.compile(r"\b(?:use|call|when|if|before|after|only|for)\b|用于|当|时|先|如果|仅|只", re.I)


def lint(tools: Iterable[Any], *, lang: Lang = "en") -> list[Finding]:
    """Lint tools given as :class:`~agentlab.tools.Tool` objects or OpenAI-format specs."""
    specs = [_as_function(t) for t in tools]
    findings: list[Finding] = []
    names_seen: list[tuple[str, str]] = []  # (name, location)
    for fn in specs:
        name = fn.get("name", "?")
        names_seen.append((name, name))
        findings += _lint_tool(name, fn.get("description") or "", lang)
        params = fn.get("parameters") or {}
        for path, kw in unsupported_keywords(params, name):
            findings.append(_f("AL008", "warning", path, "unsupported", lang, kw=kw))
        for path, sub in subschemas(params, name):
            fmt = sub.get("format")
            if isinstance(fmt, str) and fmt not in FORMATS:
                findings.append(_f("AL010", "warning", path, "format", lang, fmt=fmt, checked=joined(FORMATS, lang, "list")))
            patterns = [sub["pattern"]] if isinstance(sub.get("pattern"), str) else []
            if isinstance(sub.get("patternProperties"), Mapping):
                patterns += [p for p in sub["patternProperties"] if isinstance(p, str)]
            findings += [_f("AL011", "warning", path, "pattern", lang, pattern=p) for p in patterns if slow_pattern(p)]
            props, required = sub.get("properties"), sub.get("required")
            if isinstance(props, Mapping) and isinstance(required, list):
                # a name required and never defined: with properties closed, no call can pass; open, the model
                # is told nothing of what to write there (``orderid`` beside a defined ``order_id``)
                patterns = [p for p in (sub.get("patternProperties") or {}) if isinstance(p, str)]
                undefined = [r for r in required if isinstance(r, str) and r not in props
                             and not any(_matches(p, r) for p in patterns)]
                if undefined:
                    findings.append(_f("AL012", "error", path, "required", lang,
                                       names=joined(undefined, lang, "list")))
        for loc, field, spec, required in _fields(name, params):
            names_seen.append((field, loc))
            findings += _lint_field(loc, field, spec, required, lang)
    findings += _lint_naming(names_seen, lang)
    return findings


def _matches(pattern: str, name: str) -> bool:
    """Whether a patternProperties pattern defines ``name`` (a pattern Python cannot read defines nothing here)."""
    if slow_pattern(pattern):
        return False  # AL011's: never run on a name
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def _as_function(t: Any) -> Mapping:
    if hasattr(t, "spec"):
        return t.spec()["function"]
    if isinstance(t, Mapping) and t.get("type") == "function" and "function" in t:
        return t["function"]
    return t


def _fields(tool: str, schema: Mapping, prefix: str = "") -> Iterator[tuple[str, str, Mapping, bool]]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return
    required = set(schema.get("required", ()))
    for field, sub in props.items():
        loc = f"{tool}.{prefix}{field}"
        if not isinstance(sub, Mapping):
            continue
        yield loc, field, sub, field in required
        yield from _fields(tool, sub, f"{prefix}{field}.")
        items = sub.get("items")
        if isinstance(items, Mapping):
            yield from _fields(tool, items, f"{prefix}{field}[].")


def _lint_tool(name: str, desc: str, lang: Lang) -> list[Finding]:
    out = []
    if not desc.strip():
        out.append(_f("AL001", "error", name, "tool", lang))
    elif _uninformative(name, desc):
        out.append(_f("AL002", "warning", name, "tool", lang, desc=desc))
    elif not _WHEN.search(desc):
        out.append(_f("AL009", "info", name, "tool", lang))
    if _COMPOSITE.search(name):
        out.append(_f("AL005", "error", name, "tool", lang, name=name))
    return out


def _lint_field(loc: str, field: str, s: Mapping, required: bool, lang: Lang) -> list[Finding]:
    out = []
    desc = (s.get("description") or "").strip()
    types = s.get("type")
    types = {types} if isinstance(types, str) else set(types or ())
    if not desc:
        out.append(_f("AL001", "error" if required else "warning", loc, "field", lang))
    elif _uninformative(field, desc):
        out.append(_f("AL002", "warning", loc, "field", lang, desc=desc))
    if "string" in types and "enum" not in s and desc and (_CLOSED_SET.search(desc) or _QUOTED_LIST.search(desc)):
        out.append(_f("AL003", "warning", loc, "field", lang))
    if types & {"number", "integer"} and _NEEDS_UNIT.search(field) and not _UNIT.search(desc):
        out.append(_f("AL006", "warning", loc, "field", lang))
    if required and "enum" not in s and "const" not in s and "pattern" not in s and "format" not in s \
            and "examples" not in s and not ({"boolean"} >= types and types) and not _EXAMPLE.search(desc):
        whole = bool(types & {"object", "array"})  # "like A1001" means nothing for a list or an object
        out.append(_f("AL007", "info", loc, "structured" if whole else "field", lang))
    return out


def _uninformative(name: str, desc: str) -> bool:
    words = re.sub(r"[^a-z0-9\u4e00-\u9fff]+", " ", to_snake(name).replace("_", " ").lower()).split()
    text = re.sub(r"[^a-z0-9\u4e00-\u9fff]+", " ", desc.lower()).split()
    filler = {"the", "a", "an", "of", "this", "is", "id", "identifier", "value", "name", "field", "parameter"}
    rest = [w for w in text if w not in words and w not in filler]
    return (len(desc) < 60 and not rest) or len(desc.strip()) <= 4


def _lint_naming(names: list[tuple[str, str]], lang: Lang) -> list[Finding]:
    snake = [(n, loc) for n, loc in names if _SNAKE.match(n)]
    camel = [(n, loc) for n, loc in names if _CAMEL.match(n)]
    if not snake or not camel:
        return []
    # the workbook teaches snake_case; only a registry that is clearly camelCase keeps its own convention
    minority, majority = (snake, "camelCase") if len(camel) > 2 * len(snake) else (camel, "snake_case")
    return [_f("AL004", "warning", loc, "field", lang, name=n, style=majority,
                       fix=to_snake(n) if majority == "snake_case" else _camel(n))
            for n, loc in minority]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)
