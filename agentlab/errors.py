"""Errors as data at the model boundary.

A tool call can fail in many ways, but the model only ever receives one shape,
built by :func:`render`::

    {"ok": false, "error": {"code", "message", "category", "stage", "retryable",
                            "problems": [{"field", "reason", "hint", ...}], "hint"}}

Every error sits in both taxonomies of seed 003 §5:

* ``category`` answers "may the same thing be sent again?" (for code that retries):
  ``transient`` (resend as is, later), ``validation`` (the model must change the call),
  ``fatal`` (stop; retrying or correcting cannot help).
* ``stage`` answers "where in the chain did it happen?" (for post-mortems):
  ``structure`` (the call could not be read or breaks the contract), ``semantic``
  (well-formed but wrong for the business), ``execution`` (the tool or a service
  failed), ``rule_blocked`` (a guard stopped it on purpose: not an instability).

Exceptions are kept for developers' mistakes and for :class:`ToolFailure`, which a
tool raises to say precisely what went wrong; the loop turns it into a record.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .i18n import Lang, t

__all__ = ["CODES", "Category", "Problem", "Reason", "Stage", "ToolError", "ToolFailure", "UsageError",
           "friendly", "json_type", "make_error", "redact", "render", "with_stage"]

Category = Literal["transient", "validation", "fatal"]
Stage = Literal["structure", "semantic", "execution", "rule_blocked"]
Reason = Literal[
    "missing", "unknown_field", "wrong_type", "not_in_enum", "out_of_range",
    "bad_format", "not_unique", "no_match", "not_allowed", "rule", "broken_text",
]

# code -> (category, stage). The defaults; a single error may override its stage.
CODES: dict[str, tuple[Category, Stage]] = {
    "BAD_JSON": ("validation", "structure"),
    "UNKNOWN_TOOL": ("validation", "structure"),
    "INVALID_ARGS": ("validation", "structure"),
    "TOOL_ERROR": ("fatal", "execution"),
    "TIMEOUT": ("transient", "execution"),
    "RATE_LIMITED": ("transient", "execution"),
    "UNAVAILABLE": ("transient", "execution"),
    "IN_PROGRESS": ("transient", "execution"),
    "OUTCOME_UNKNOWN": ("fatal", "execution"),  # a write that may have happened: never resent
    "MODEL_ERROR": ("fatal", "execution"),
    "UNAUTHENTICATED": ("fatal", "execution"),
    "PERMISSION_DENIED": ("fatal", "rule_blocked"),
    "NOT_FOUND": ("fatal", "semantic"),
    "BAD_REQUEST": ("fatal", "structure"),
    "CONTEXT_TOO_LONG": ("fatal", "execution"),
    "NEEDS_APPROVAL": ("fatal", "rule_blocked"),
    "APPROVAL_REJECTED": ("fatal", "rule_blocked"),
    "CONFLICT": ("fatal", "rule_blocked"),
    "RULE_VIOLATION": ("fatal", "rule_blocked"),
    "LOOP_DETECTED": ("fatal", "rule_blocked"),
    "BUDGET_EXHAUSTED": ("fatal", "rule_blocked"),
    "SELF_CORRECTION_EXHAUSTED": ("fatal", "structure"),
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the arguments, language-neutral until rendered.

    ``field`` is a path such as ``items[0].sku`` (``$`` for the whole object).
    The optional fields carry what the renderer needs to say what to do next.
    """

    field: str
    reason: Reason
    expected: str | None = None
    got: Any = None
    allowed: tuple | None = None
    limit: tuple[str, Any] | None = None  # (keyword, bound), e.g. ("maximum", 100)
    suggestion: str | None = None
    description: str | None = None
    detail: Mapping[str, str] | None = None  # rule text per language

    def to_dict(self, lang: Lang = "en") -> dict:
        """The problem as the model sees it."""
        out: dict[str, Any] = {"field": self.field, "reason": self.reason,
                               "hint": _problem_hint(self, lang)}
        if self.expected is not None and self.reason in ("wrong_type", "bad_format"):
            out["expected"] = self.expected
        if self.reason not in ("missing", "unknown_field") and self.got is not None:
            out["got"] = _short(self.got)
        if self.allowed is not None:
            out["allowed"] = list(self.allowed)
        if self.suggestion is not None:
            out["did_you_mean"] = self.suggestion
        return out


@dataclass(frozen=True)
class ToolError:
    """A failed tool call, as data. Build with :func:`make_error`."""

    code: str
    category: Category
    stage: Stage
    retryable: bool
    problems: tuple[Problem, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)  # fill-ins for the message
    message: Mapping[str, str] | None = None  # per-language override (sanitised)
    hint: Mapping[str, str] | None = None
    retry_after: float | None = None
    extra: Mapping[str, Any] | None = None  # structured extras the model can act on

    def __repr__(self) -> str:
        return f"ToolError({self.code}, {self.category}/{self.stage}, problems={len(self.problems)})"

    def text(self, lang: Lang = "en") -> str:
        """The one-line message in ``lang``."""
        if self.message:
            return self.message.get(lang) or self.message["en"]
        key = self.fields.get("_key", self.code)
        return t(key, lang, **{k: v for k, v in self.fields.items() if not k.startswith("_")})

    def hint_text(self, lang: Lang = "en") -> str:
        """What the model should do next."""
        if self.hint:
            return self.hint.get(lang) or self.hint["en"]
        if self.code == "BAD_JSON":
            return t("hint.bad_json", lang)
        if self.category == "validation":
            return t("hint.validation", lang)
        if self.category == "transient":
            if self.retry_after is not None:
                return t("hint.transient_after", lang, seconds=self.retry_after)
            return t("hint.transient", lang)
        return t("hint.fatal", lang)

    def to_dict(self, lang: Lang = "en") -> dict:
        """The ``error`` object the model sees (see :func:`render`)."""
        out: dict[str, Any] = {
            "code": self.code,
            "message": redact(self.text(lang)),
            "category": self.category,
            "stage": self.stage,
            "retryable": self.retryable,
        }
        if self.problems:
            out["problems"] = [p.to_dict(lang) for p in self.problems]
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        if self.extra:
            out.update(self.extra)
        out["hint"] = redact(self.hint_text(lang))
        return out


def make_error(code: str, /, *, problems: tuple[Problem, ...] | list[Problem] = (),
               stage: Stage | None = None, message: Mapping[str, str] | str | None = None,
               hint: Mapping[str, str] | str | None = None, retry_after: float | None = None,
               extra: Mapping[str, Any] | None = None, **fields: Any) -> ToolError:
    """Build a :class:`ToolError` with the category and stage of ``code``.

    Free text (``message``/``hint``) is redacted here, so nothing a tool author
    writes can leak a path, host or secret to the model.
    """
    category, default_stage = CODES[code]
    return ToolError(
        code=code, category=category, stage=stage or default_stage,
        retryable=category != "fatal", problems=tuple(problems), fields=fields,
        message=_lang_map(message), hint=_lang_map(hint), retry_after=retry_after, extra=extra,
    )


def with_stage(error: ToolError, stage: Stage) -> ToolError:
    """The same error placed elsewhere in the chain."""
    return replace(error, stage=stage)


class UsageError(Exception):
    """A developer's mistake (a script that ran out, a misconfigured loop).

    The loops turn every model and tool failure into a run outcome, but never this:
    a mistake in the code that drives them must surface where it was made.
    """


class ToolFailure(Exception):
    """Raised by a tool to report a precise, model-readable failure.

    ``message`` is shown to the model (after :func:`redact`); write it for the
    model, with what to do next. Anything else a tool raises becomes a
    ``TOOL_ERROR`` whose text the model never sees.
    """

    def __init__(self, code: str, message: Mapping[str, str] | str | None = None, *,
                 hint: Mapping[str, str] | str | None = None, retry_after: float | None = None,
                 stage: Stage | None = None, problems: tuple[Problem, ...] = ()):
        super().__init__(code if message is None else f"{code}: {_lang_map(message)['en']}")
        self.error = make_error(code, message=message, hint=hint, retry_after=retry_after,
                                stage=stage, problems=problems)


def render(error: ToolError | None, lang: Lang = "en", *, data: Any = None, **extra: Any) -> str:
    """The exact text the model receives for a tool result. The only such function.

    ``render(None, data=...)`` is a success; everything else calls this too
    (traces, viewers, the CLI), so what you see is what the model saw.
    """
    if error is None:
        body: dict[str, Any] = {"ok": True, "data": data}
    else:
        body = {"ok": False, "error": error.to_dict(lang)}
    body.update(extra)
    return json.dumps(body, ensure_ascii=False, default=str)


def friendly(error: ToolError, lang: Lang = "en") -> str:
    """A sentence for the end user: no codes, no technical detail."""
    code = error.code
    if code == "OUTCOME_UNKNOWN":
        key = "friendly.unknown"
    elif code == "RATE_LIMITED" and error.retry_after is not None and error.fields.get("_key"):
        return t("friendly.wait", lang, seconds=f"{error.retry_after:.0f}")
    elif error.category == "transient":
        key = "friendly.transient"
    elif code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        key = "friendly.auth" if code == "UNAUTHENTICATED" else "friendly.rule"
    elif code == "NOT_FOUND":
        key = "friendly.not_found"
    elif code == "NEEDS_APPROVAL":
        key = "friendly.approval"
    elif code in ("LOOP_DETECTED", "BUDGET_EXHAUSTED", "SELF_CORRECTION_EXHAUSTED"):
        key = "friendly.loop"
    elif error.stage == "rule_blocked":
        key = "friendly.rule"
    else:
        key = "friendly.error"
    return t(key, lang)


# --- redaction ---------------------------------------------------------------
# Ordered: the broad patterns (tracebacks, connection strings) run before the
# narrow ones so that a DSN is removed whole rather than in pieces.
_REDACTIONS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Traceback \(most recent call last\):.*", re.S), "[details removed]"),
    (re.compile(r"^\s*File \"[^\"]*\", line \d+.*$", re.M), "[details removed]"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "[address removed]"),
    (re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER)\b[^;\n]*(?:FROM|INTO|SET|TABLE|WHERE)\b[^;\n]*;?", re.I), "[query removed]"),
    (re.compile(r"\b(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{8,}"), "[secret removed]"),
    (re.compile(r"\bBearer\s+\S+", re.I), "[secret removed]"),
    (re.compile(r"\b(?:api[_-]?key|password|passwd|pwd|secret|token|authorization)\b\s*[:=]\s*\S+", re.I), "[secret removed]"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "[address removed]"),
    (re.compile(r"\b[\w.-]+@[\w-]+(?:\.[\w-]+)+(?::\d+)?\b"), "[address removed]"),
    (re.compile(r"\b(?:[\w-]+\.)+(?:internal|local|lan|corp|intra|svc|cluster)\b(?::\d+)?", re.I), "[address removed]"),
    (re.compile(r"\blocalhost(?::\d+)?\b", re.I), "[address removed]"),
    (re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|\\\\|/)(?:[\w.-]+[\\/])+[\w.-]*"), "[path removed]"),
]


def redact(text: str) -> str:
    """Remove stack traces, SQL, hosts, paths and secrets from ``text``."""
    for pattern, repl in _REDACTIONS:
        text = pattern.sub(repl, text)
    return text


def _lang_map(value: Mapping[str, str] | str | None) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"en": redact(value)}
    return {k: redact(v) for k, v in value.items()}


def _short(value: Any, limit: int = 60) -> Any:
    """Echo a bad value back, but never a wall of text."""
    if isinstance(value, str):  # even the model's own input is redacted before it is echoed
        value = redact(value)
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else text[:limit] + "…"


def _fmt(value: Any) -> str:
    return json.dumps(_short(value), ensure_ascii=False, default=str)


def _problem_hint(p: Problem, lang: Lang) -> str:
    desc = p.description or ""
    r = p.reason
    if r == "missing":
        text = t("problem.missing", lang, description=desc)
    elif r == "unknown_field":
        allowed = ", ".join(p.allowed or ()) or "-"
        if p.suggestion:
            text = t("problem.unknown_field.suggest", lang, suggestion=p.suggestion, allowed=allowed)
        else:
            text = t("problem.unknown_field", lang, allowed=allowed)
    elif r == "wrong_type":
        text = t("problem.wrong_type", lang, expected=p.expected, got=_type_and_value(p.got), description=desc)
    elif r == "not_in_enum":
        text = t("problem.not_in_enum", lang, got=_fmt(p.got),
                 allowed=", ".join(_fmt(a) for a in p.allowed or ()))
    elif r == "out_of_range":
        keyword, bound = p.limit or ("minimum", "?")
        text = t("problem.out_of_range", lang, got=_fmt(p.got), limit=t("limit." + keyword, lang, n=bound))
    elif r == "bad_format":
        text = t("problem.bad_format", lang, got=_fmt(p.got), expected=p.expected, description=desc)
    elif r == "rule":
        detail = (p.detail or {}).get(lang) or (p.detail or {}).get("en", "")
        text = t("problem.rule", lang, detail=redact(detail))
    else:
        text = t("problem." + r, lang, got=_fmt(p.got), expected=p.expected)
    return text.strip()


def _type_and_value(value: Any) -> str:
    return f"{json_type(value)} {_fmt(value)}"


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (``bool`` is never a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
