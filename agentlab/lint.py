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

AL011 reads patterns with :func:`agentlab.schema.slow_pattern`, the reading that also refuses them when a schema
is loaded: the linter says it about a file before it is loaded, the loader refuses it.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .i18n import Lang
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


# (rule, variant) -> {lang: (message, suggestion)}
_TEXT: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    ("AL001", "tool"): {
        "en": ("the tool has no description",
               "Say what it does and when to use it, e.g. 'Look up one order by its id; use search_orders "
               "first when the user only gives a phone number.'"),
        "zh": ("工具没有描述", "写清它做什么、什么时候用，例如“按订单号查询订单；用户只给手机号时先用 search_orders”。")},
    ("AL001", "field"): {
        "en": ("the field has no description", "Describe the format, the unit and an example, e.g. 'Order number like A1001'."),
        "zh": ("字段没有描述", "写清格式、单位和示例，例如“订单号，形如 A1001”。")},
    ("AL002", "tool"): {
        "en": ("the description {desc!r} only repeats the name", "Say when to use the tool and what it returns."),
        "zh": ("描述 {desc!r} 只是重复了名字", "写清什么时候用这个工具、它返回什么。")},
    ("AL002", "field"): {
        "en": ("the description {desc!r} only repeats the field name", "Say the format and give an example, and when the field matters."),
        "zh": ("描述 {desc!r} 只是重复了字段名", "写清格式并给出示例，以及该字段何时需要。")},
    ("AL003", "field"): {
        "en": ("the description lists a closed set of values but the field is free text",
               "Use \"enum\": [...] with those values; the enum is also the model's list of options."),
        "zh": ("描述里列出了固定的取值，但字段是自由文本", "改用 \"enum\": [...] 列出这些取值；枚举同时也是给模型的选项提示。")},
    ("AL004", "field"): {
        "en": ("{name!r} breaks the registry's {style} naming",
               "Rename it to {fix!r}; mixed styles make models swap order_id and orderId."),
        "zh": ("{name!r} 与工具库统一的 {style} 命名不一致", "改名为 {fix!r}；命名风格混用会让模型把 order_id 和 orderId 串用。")},
    ("AL005", "tool"): {
        "en": ("{name!r} looks like two jobs in one tool",
               "Split it into one tool per job (e.g. get_order and create_refund) so the model takes one checked step at a time."),
        "zh": ("{name!r} 像是一个工具做了两件事", "拆成一个工具只做一件事（如 get_order 和 create_refund），让模型一步一步来。")},
    ("AL006", "field"): {
        "en": ("a quantity without a unit", "Say the unit and the form, e.g. 'positive number, in yuan, without a currency sign'."),
        "zh": ("数值字段没有写单位", "写清单位和形式，例如“正数，单位元，不带货币符号”。")},
    ("AL007", "field"): {
        "en": ("a required field with no example", "Add an example to the description (e.g. 'like A1001') or an \"examples\" list."),
        "zh": ("必填字段没有示例", "在描述里加示例（如“形如 A1001”），或加 \"examples\" 列表。")},
    ("AL007", "structured"): {
        "en": ("a required list or object with no example",
               "Add an \"examples\" list holding one whole value, e.g. [{{\"sku\": \"S1\", \"qty\": 1}}], so the model sees its shape."),
        "zh": ("必填的列表或对象字段没有示例",
               "加一个 \"examples\" 列表，放一个完整的取值，例如 [{{\"sku\": \"S1\", \"qty\": 1}}]，让模型看到它的结构。")},
    ("AL008", "unsupported"): {
        "en": ("{kw!r} is not a JSON Schema 2020-12 keyword, so nothing enforces it",
               "Check the spelling (maxLength, not maxLenght), or enforce the rule in a business check."),
        "zh": ("{kw!r} 不是 JSON Schema 2020-12 的关键字，不会被执行", "检查拼写（maxLength 而不是 maxLenght），或在业务校验中实现这条规则。")},
    ("AL010", "format"): {
        "en": ("format {fmt!r} is not checked: the validator accepts any text here",
               "Use a checked format ({checked}), or a pattern that says exactly what is allowed."),
        "zh": ("格式 {fmt!r} 不会被校验：这里任何文本都能通过", "改用会校验的格式（{checked}），或用 pattern 写清允许的取值。")},
    ("AL011", "pattern"): {
        "en": ("pattern {pattern!r} can take exponential time on some texts (a repeated group that itself repeats "
               "or has overlapping alternatives); Python's re has no timeout, so one call can stall the agent",
               "Write it without nested repetition (^a+$, not ^(a+)+$; ^(a|b)+$, not ^(a|aa)+$), and bound the "
               "text with maxLength."),
        "zh": ("pattern {pattern!r} 在某些文本上可能耗费指数级时间（重复的分组内部还有重复，或分支彼此重叠）；"
               "Python 的 re 没有超时，一次调用就可能卡住智能体",
               "改写为不嵌套重复的形式（用 ^a+$ 而不是 ^(a+)+$；用 ^(a|b)+$ 而不是 ^(a|aa)+$），并用 maxLength 限制文本长度。")},
    ("AL009", "tool"): {
        "en": ("the description says what the tool is, not when to use it",
               "Add a sentence such as 'Use this when ...; do not use it for ...'."),
        "zh": ("描述只说了工具是什么，没说什么时候用", "补一句“当……时使用；不要用于……”。")},
}


def _f(rule: str, severity: Severity, location: str, variant: str, lang: Lang, **fmt: Any) -> Finding:
    msg, sugg = _TEXT[(rule, variant)].get(lang) or _TEXT[(rule, variant)]["en"]
    return Finding(rule, severity, location, msg.format(**fmt), sugg.format(**fmt))


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
                findings.append(_f("AL010", "warning", path, "format", lang, fmt=fmt, checked=", ".join(FORMATS)))
            patterns = [sub["pattern"]] if isinstance(sub.get("pattern"), str) else []
            if isinstance(sub.get("patternProperties"), Mapping):
                patterns += [p for p in sub["patternProperties"] if isinstance(p, str)]
            findings += [_f("AL011", "warning", path, "pattern", lang, pattern=p) for p in patterns if slow_pattern(p)]
        for loc, field, spec, required in _fields(name, params):
            names_seen.append((field, loc))
            findings += _lint_field(loc, field, spec, required, lang)
    findings += _lint_naming(names_seen, lang)
    return findings


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
