"""Optional value cleaning before validation, with an audit of every change.

Models write what people write: ``"45元"``, ``"¥1,200"``, full-width ``"１２"``,
``" A1001 "``. Cleaning turns those into what the schema asks for, but only where
the schema asks for a number (or a string, for surrounding spaces), and every
change is returned so it can be shown next to the result. It is off by default:
silently "fixing" a model's output hides the bug you want to see (docs/guards.md#clean).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = ["Cleaned", "clean", "to_number"]

_UNITS = re.compile(r"^(?:RMB|CNY|USD|EUR|人民币|[¥$€£])?\s*(.*?)\s*(?:元|块钱|块|圆|RMB|CNY|USD|EUR|yuan|dollars?)?$", re.I)
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d+)?|\.\d+)$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


@dataclass(frozen=True)
class Cleaned:
    """One value that cleaning changed, and the rule that changed it."""

    field: str
    before: Any
    after: Any
    rule: str

    def to_dict(self) -> dict:
        return {"field": self.field, "before": self.before, "after": self.after, "rule": self.rule}


def clean(args: Any, schema: Any) -> tuple[Any, tuple[Cleaned, ...]]:
    """Return cleaned ``args`` (a new object; the input is untouched) and the audit."""
    changes: list[Cleaned] = []
    return _walk(args, schema, "", changes), tuple(changes)


def _types(schema: dict) -> set[str]:
    t = schema.get("type")
    return {t} if isinstance(t, str) else set(t or ())


def _walk(value: Any, schema: Any, path: str, changes: list[Cleaned]) -> Any:
    if not isinstance(schema, dict):
        return value
    types = _types(schema)
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        return {k: _walk(v, props.get(k), f"{path}.{k}" if path else k, changes) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_walk(v, schema["items"], f"{path}[{i}]", changes) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    if types & {"number", "integer"} and "string" not in types:
        number, rule = to_number(value)
        if number is not None:
            if "integer" in types and "number" not in types and not float(number).is_integer():
                return value  # 4.5 for an integer field stays an error
            changes.append(Cleaned(path or "$", value, number, rule))
            return number
        return value
    if "string" in types and value != value.strip():
        stripped = value.strip()
        changes.append(Cleaned(path or "$", value, stripped, "strip_spaces"))
        return stripped
    return value


def to_number(text: str) -> tuple[int | float | None, str]:
    """``"¥1,200"`` -> ``(1200, rule)``; ``(None, "")`` when it is not a plain amount."""
    rules = []
    s = unicodedata.normalize("NFKC", text)
    if s != text:
        rules.append("full_width")
    stripped = s.strip()
    if stripped != s:
        rules.append("strip_spaces")
    m = _UNITS.match(stripped)
    core = m.group(1) if m else stripped
    if core != stripped:
        rules.append("drop_unit")
    if _THOUSANDS.match(core):
        core = core.replace(",", "")
        rules.append("drop_thousands_separator")
    if not _NUMBER.match(core):
        return None, ""
    number: int | float = float(core) if "." in core else int(core)
    return number, "+".join(rules) or "string_to_number"
