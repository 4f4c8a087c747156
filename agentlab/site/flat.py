"""Flat results are the rule: what a skill returns should be one level of named fields.

A model reads ``{"city": "Beijing", "temperature": 7}`` and quotes it; it misreads
``{"data": {"weather": {"now": {...}}}}`` (it quotes the wrong level, or a field of the wrong entry
of a list). So a skill whose ``output_schema`` declares a nested field (an object, or a list of
objects) is *flagged* when it is registered: :class:`NestedResultWarning`, seen at load (Python's
``warnings``) and on ``site check``'s report. It is a warning, not a refusal: some results are
lists by nature (search hits, a month's records), a site that refused them would push authors to
stringify JSON into a field, which is worse, and an existing skill must not stop loading when the
rule arrives. :func:`flat_summary` says what a result holds when the skill wrote no ``summary`` of its
own, from its flat fields first and then one level into the nested ones, never just "done".
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..i18n import Lang, t

__all__ = ["NestedResultWarning", "flat_summary", "nested_fields", "nested_warning"]

_SCALAR = (str, int, float, bool)
_PARTS = 5  # a summary is one line: the first few fields, then how many more


class NestedResultWarning(UserWarning):
    """A skill's output_schema declares nested fields (docs/site.md#flat-results)."""


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    found = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    if "properties" in schema:
        found.add("object")
    return found


def nested_fields(output_schema: Mapping[str, Any]) -> list[str]:
    """The top-level fields of ``output_schema`` that hold an object or a list of objects."""
    out = []
    for name, sub in (output_schema.get("properties") or {}).items():
        if not isinstance(sub, Mapping):
            continue
        kinds = _types(sub)
        items = sub.get("items")
        if "object" in kinds or ("array" in kinds and isinstance(items, Mapping) and "object" in _types(items)):
            out.append(str(name))
    return out


def nested_warning(skill_name: str, output_schema: Mapping[str, Any]) -> str | None:
    """The warning's sentence for a skill with nested output fields, or None (kept English: it is a Python
    warning for the author, like a lint message; ``site check`` says it in the reader's language)."""
    nested = nested_fields(output_schema)
    if not nested:
        return None
    return (f"skill {skill_name!r} declares nested output fields {nested}: flat results are the rule "
            "(one level of named fields the model can quote); flatten them or keep the list short")


def _value(v: Any) -> str:
    if isinstance(v, bool) or v is None:  # as the result's JSON writes them, in either language (not Python's False)
        return "true" if v is True else "false" if v is False else "null"
    text = str(v)
    return text if len(text) <= 40 else text[:39] + "…"


def flat_summary(name: str, result: Mapping[str, Any], lang: Lang = "en") -> str:
    """One line for a result without its own ``summary``, in ``lang``: its scalar fields (``city Beijing``), then the
    nested ones one level in (``order.status shipped``, ``lines (3)``), at most five parts and how many more. An empty
    text says nothing ("remark ." was a field with nothing in it)."""
    parts: list[str] = []
    nested: list[str] = []
    for k, v in result.items():
        if k == "summary" or v == "":
            continue
        if isinstance(v, _SCALAR) or v is None:
            parts.append(f"{k} {_value(v)}")
        elif isinstance(v, list):
            nested.append(f"{k} ({len(v)})")
        elif isinstance(v, Mapping):
            inner = [f"{k}.{ik} {_value(iv)}" for ik, iv in v.items() if isinstance(iv, _SCALAR) and iv != ""]
            nested.extend(inner or [f"{k} ({len(v)})"])
    parts += nested
    if not parts:
        return t("site.summary.done", lang, name=name)  # an empty result: there is nothing more to say
    more = len(parts) - _PARTS
    said = t("site.summary.separator", lang).join(parts[:_PARTS]) + (f" (+{more})" if more > 0 else "")
    return t("site.summary.fields", lang, name=name, fields=said)
