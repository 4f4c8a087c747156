"""Errors as data at the model boundary.

A tool call can fail in many ways, but the model only ever receives one shape,
built by :func:`render`::

    {"ok": false, "error": {"code", "message", "category", "stage", "retryable",
                            "problems": [{"field", "reason", "hint", ...}], "hint"}}

Every error sits in both taxonomies (docs/failures.md#two-classifications):

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
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .i18n import Lang, Listed, LocalizedError, joined, said, t
from .jsonutil import escape_surrogates
from .records import quick

# Redaction is its own module; its public names are re-exported here, where every caller has always found them.
from .redaction import (
    DETAIL_LIMIT,
    NAME_LIMIT,
    TEXT_LIMIT,
    _clean_json,
    _cut,
    _safe_json,
    _text_of,
    _untouched,
    find_secrets,
    mask_personal,
    redact,
    redact_authored,
    redact_secrets,
)

__all__ = ["CODES", "RESULT_LIMIT", "Category", "Problem", "Reason", "Stage", "ToolError", "ToolFailure", "UnknownCode", "UsageError",
           "find_secrets", "friendly", "json_type", "make_error", "mask_personal", "names_a_field", "redact", "redact_secrets",
           "render", "retry_seconds", "with_stage"]

Category = Literal["transient", "validation", "fatal"]
Stage = Literal["structure", "semantic", "execution", "rule_blocked"]
Reason = Literal[
    "missing", "unknown_field", "wrong_type", "not_in_enum", "out_of_range",
    "bad_format", "not_unique", "no_match", "many_match", "not_allowed", "rule", "broken_text", "uncheckable",
    "over_limit",  # a business limit the call would pass (a budget, what is left to refund): RULE_VIOLATION
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
    "NOT_RUN": ("fatal", "rule_blocked"),  # a later call of a message whose earlier call ended the turn
    "WRONG_TOOL": ("validation", "structure"),  # a call this turn's tool_choice does not allow
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


def names_a_field(problem: Mapping[str, Any]) -> bool:
    """Whether a problem, as the model reads it (:meth:`Problem.to_dict`), is about one field rather than the whole call
    (``$``: a business rule such as an order that does not exist). A person is told a whole-call problem by its hint
    alone: a trace cell and a build check had said it as "$：…", the path read as code."""
    return problem.get("field") not in ("$", "", None)


@quick  # one per thing wrong with every refused call: its nine fields set in one step
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
        # the path holds the model's own key names: bounded, like everything it wrote
        out: dict[str, Any] = {"field": _cut(self.field, NAME_LIMIT), "reason": self.reason,
                               "hint": _problem_hint(self, lang)}
        if self.expected is not None and self.reason in ("wrong_type", "bad_format"):
            out["expected"] = self.expected
        if self.limit is not None and self.limit[0] in _SIZE_WORDS:
            out["got_size"] = _size(self.got)  # a length limit: the length, never the (maybe huge) value
        elif self.reason not in ("missing", "unknown_field") and self.got is not None:
            out["got"] = _short(self.got)
        if self.reason == "over_limit" and self.limit is not None:
            out["limit"] = _short(self.limit[1])  # the bound itself: what is left, so the model can say it
        if self.allowed is not None:
            out["allowed"] = list(self.allowed[:ALLOWED_SHOWN])  # a 100k-value enum is no message to read
            if len(self.allowed) > ALLOWED_SHOWN:
                out["allowed_total"] = len(self.allowed)
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

    def __post_init__(self) -> None:
        if self.retry_after is not None:  # built directly or with replace(): the same coercion as make_error
            object.__setattr__(self, "retry_after", retry_seconds(self.retry_after))

    def __repr__(self) -> str:
        return f"ToolError({self.code}, {self.category}/{self.stage}, problems={len(self.problems)})"

    def text(self, lang: Lang = "en") -> str:
        """The one-line message in ``lang``."""
        if self.message:  # written for the model: only credentials are removed
            return _authored(self.message.get(lang) or self.message["en"])
        key = self.fields.get("_key", self.code)
        # The catalogue sentence is ours; the fill-ins are not: a tool name the model made up,
        # an exception's detail. Each is cut and redacted on its own, before it is placed.
        # (a fill-in that says itself in either language, a parser's reason, is said in the reader's)
        fills = {k: (_authored(_text_of(v)) if k in _AUTHORED_FIELDS
                     else _technical(said(v, lang) if hasattr(v, "localized") else v))
                 for k, v in self.fields.items() if not k.startswith("_")}
        return t(key, lang, **fills)

    def hint_text(self, lang: Lang = "en") -> str:
        """What the model should do next."""
        if self.hint:
            return _authored(self.hint.get(lang) or self.hint["en"])
        if self.code == "BAD_JSON":
            return t("hint.bad_json", lang)
        if self.code == "BAD_REQUEST":  # fatal as it stands, yet the caller can mend it: "do not retry" beside
            return t("hint.bad_request", lang)  # the site's "correct it before sending again" read as two answers
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
            "message": self.text(lang),
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
        out["hint"] = self.hint_text(lang)
        return out


def make_error(code: str, /, *, problems: tuple[Problem, ...] | list[Problem] = (),
               stage: Stage | None = None, message: Mapping[str, str] | str | None = None,
               hint: Mapping[str, str] | str | None = None, retry_after: float | str | None = None,
               extra: Mapping[str, Any] | None = None, **fields: Any) -> ToolError:
    """Build a :class:`ToolError` with the category and stage of ``code``.

    Free text (``message``/``hint``) is cut, and what never reaches a model removed from it here (credentials,
    traces, hosts, paths, SQL: see :func:`redact_authored`); the rest of what the author wrote reaches it as written.
    ``retry_after`` may be a header's text: see :func:`retry_seconds`.
    """
    try:
        category, default_stage = CODES[code]
    except (KeyError, TypeError):  # a tool's author named a code there is none of: said, with the codes there are
        raise UnknownCode("errors.unknown_code", code=code, codes=Listed(CODES)) from None
    # ToolError(code=..., ...) written out: the frozen dataclass's __init__ sets its ten fields one call at a time, then
    # its __post_init__ coerces retry_after, done here already (every refused call of every loop makes one of these)
    error = object.__new__(ToolError)
    error.__dict__.update({
        "code": code, "category": category, "stage": stage or default_stage, "retryable": category != "fatal",
        "problems": tuple(problems), "fields": fields, "message": _lang_map(message), "hint": _lang_map(hint),
        "retry_after": retry_seconds(retry_after), "extra": extra})
    return error


MAX_RETRY_AFTER = 86_400.0  # a day: a longer wait is no instruction anyone will follow


def retry_seconds(value: object) -> float | None:
    """A Retry-After as seconds (``"5"`` -> ``5.0``), or None when it is unknown. Never raises.

    NaN, infinities, negative and non-numeric values (an HTTP date: the adapter converts
    those itself) say nothing usable, so they are unknown rather than a wait of "nan
    seconds". A wait longer than :data:`MAX_RETRY_AFTER` is capped there, never dropped:
    the server asked us to stay away that long, so nobody may resend sooner (the loop
    stops and says when to come back). Rounded to the millisecond.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str) and len(value) > 40:  # float() of a long text is wasted work
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]  # anything may arrive; what fails is unknown
    except Exception:  # noqa: BLE001 - a header value or an object whose __float__ raises
        return None
    if math.isnan(seconds) or seconds < 0.0:
        return None
    return round(min(seconds, MAX_RETRY_AFTER), 3)  # +inf too: "not before a day from now"


def with_stage(error: ToolError, stage: Stage) -> ToolError:
    """The same error placed elsewhere in the chain."""
    return replace(error, stage=stage)


class UsageError(Exception):
    """A developer's mistake (a script that ran out, a misconfigured loop).

    The loops turn every model and tool failure into a run outcome, but never this:
    a mistake in the code that drives them must surface where it was made.
    """


class UnknownCode(UsageError, LocalizedError):
    """:func:`make_error` (or a :class:`ToolFailure`) asked for a code :data:`CODES` does not have."""


class ToolFailure(Exception):
    """Raised by a tool to report a precise, model-readable failure.

    ``message`` is shown to the model as written, less what never reaches a model
    (a credential, a stack trace, a host, a path, a query: see :func:`redact_authored`);
    write it for the model, with what to do next. Anything else a tool raises becomes a ``TOOL_ERROR`` whose text the
    model never sees.
    """

    def __init__(self, code: str, message: Mapping[str, str] | str | None = None, *,
                 hint: Mapping[str, str] | str | None = None, retry_after: float | str | None = None,
                 stage: Stage | None = None, problems: tuple[Problem, ...] = ()):
        text = _lang_map(message)
        super().__init__(code if text is None else f"{code}: {text['en']}")
        #: the :class:`UnknownCode` of a code :data:`CODES` lacks (None when it is one), for its author to read
        self.unknown: UnknownCode | None = None
        try:
            self.error = make_error(code, message=message, hint=hint, retry_after=retry_after,
                                    stage=stage, problems=problems)
        except UnknownCode as exc:
            # raised inside a tool, a mistyped code must not end the agent's request: the call fails as any tool
            # failure of unknown kind does (TOOL_ERROR), and the author's mistake is kept to be said (a trace note)
            self.unknown = exc
            self.error = make_error("TOOL_ERROR", message=message, hint=hint, retry_after=retry_after,
                                    stage=stage, problems=problems)


def render(error: ToolError | None, lang: Lang = "en", *, data: Any = None, data_json: str | None = None,
           **extra: Any) -> str:
    """The exact text the model receives for a tool result. The only such function.

    ``render(None, data=...)`` is a success; everything else calls this too
    (traces, viewers, the CLI), so what you see is what the model saw. ``data_json`` is ``data`` as
    :func:`agentlab.store.result_json` wrote it, when the caller has that text (``data`` read back from it).
    """
    if error is None and data_json is not None and "ok" not in extra and "data" not in extra \
            and "\\ud" not in data_json and _untouched(data_json):
        # strict JSON, no credential in it: the body is built around the text that was stored rather than serialising
        # ``data`` again (a guarded call's every result was written twice). The same text, but for a dict whose keys
        # serialise alike (1 and "1", True and "true"): told all of them, as stored. Escaped surrogates (half an
        # emoji each, which reading joins into one) and extras a redaction rule could touch go the careful way.
        rest = _clean_json(extra) if extra else "{}"
        if rest is not None and escape_surrogates(rest) is rest:  # a lone surrogate in an extra: the careful way
            text = '{"ok": true, "data": ' + data_json + (", " + rest[1:-1] if extra else "") + "}"
            return text if len(text) <= RESULT_LIMIT else _too_large(text, lang)
    if error is None:
        body: dict[str, Any] = {"ok": True, "data": data}
    else:
        body = {"ok": False, "error": error.to_dict(lang)}
    body.update(extra)
    # Last, over everything: a credential in returned data, an extra, or a fill-in is
    # removed here whatever path it took. Linear, and a no-op on clean text. A lone
    # surrogate (half an emoji from a model or a tool) becomes its JSON escape, so what
    # the model is told can always be stored and sent. Always strict JSON: NaN and
    # Infinity become null, and a value that cannot be serialised becomes its text.
    text = escape_surrogates(_safe_json(body))
    return text if len(text) <= RESULT_LIMIT else _too_large(text, lang)


#: the most characters a model is told of one tool result: a tool that returned five megabytes filled the model's
#: context with it, and the run said done. Past it, the model reads the result's start and what happened to the rest
RESULT_LIMIT = 50_000
_RESULT_START = 2_000  # characters of a result past RESULT_LIMIT the model still reads


def _too_large(text: str, lang: Lang) -> str:
    """What the model is told of a result past :data:`RESULT_LIMIT`: that it was cut, how large it was, its start."""
    # (already redacted whole: a slice of it cannot hold what the whole did not)
    body = {"ok": True, "data": None, "cut": {"characters": len(text), "start": text[:_RESULT_START] + "…"},
            "note": t("result.too_large", lang, n=len(text), limit=RESULT_LIMIT, start=_RESULT_START)}
    return escape_surrogates(_safe_json(body))


def friendly(error: ToolError, lang: Lang = "en") -> str:
    """A sentence for the end user: no codes, no technical detail."""
    code = error.code
    if code == "OUTCOME_UNKNOWN":
        key = "friendly.unknown"
    elif code == "RATE_LIMITED" and error.retry_after is not None and error.fields.get("_key"):
        # retry_after is finite and at most a day (retry_seconds); never "about 0 seconds"
        return t("friendly.wait", lang, seconds=max(1, math.ceil(error.retry_after)))
    elif error.category == "transient":
        key = "friendly.transient"
    elif code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        key = "friendly.auth" if code == "UNAUTHENTICATED" else "friendly.rule"
    elif code == "NOT_FOUND":
        key = "friendly.not_found"
    elif code == "CONTEXT_TOO_LONG":
        key = "friendly.too_long"
    elif code == "NEEDS_APPROVAL":
        key = "friendly.approval"
    elif code in ("LOOP_DETECTED", "BUDGET_EXHAUSTED", "SELF_CORRECTION_EXHAUSTED"):
        key = "friendly.loop"
    elif error.stage == "rule_blocked":
        key = "friendly.rule"
    else:
        key = "friendly.error"
    return t(key, lang)


_AUTHORED_FIELDS = frozenset({"reason", "example"})  # fill-ins a person wrote: redacted as a person's sentence


def _authored(text: str) -> str:
    """A sentence a person wrote for the model: bounded, and without what never reaches a model."""
    return redact_authored(_cut(text, TEXT_LIMIT))


def _technical(value: Any) -> Any:
    """A technical or model-written fill-in, bounded and fully redacted; numbers pass."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return redact(_cut(_text_of(value), DETAIL_LIMIT))



def _lang_map(value: Mapping[str, str] | str | None) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"en": _authored(value)}
    return {k: _authored(v) for k, v in value.items()}


def _short(value: Any, limit: int = 60, *, clean: Callable[[str], str] = redact) -> Any:
    """Echo a bad value back: cut (a megabyte costs no more than a kilobyte), redacted, cut again.

    Never raises: a value JSON cannot hold (nested too deep, a cycle, tuple keys, a
    broken ``__str__``) is echoed as its text, or as a placeholder.
    """
    if isinstance(value, (float, bool)) or value is None or (isinstance(value, int) and value.bit_length() <= 200):
        return value  # NaN is fine here: render() writes it as null
    if isinstance(value, str):
        text = clean(_cut(value, DETAIL_LIMIT))
        return text if len(text) <= limit else text[:limit] + "…"
    try:  # no default: what JSON cannot hold as it is (a set, an object) is echoed as its text
        raw = json.dumps(value, ensure_ascii=False)
    except Exception:  # noqa: BLE001 - RecursionError, ValueError (cycle, huge int), TypeError (keys, objects)
        text = clean(_cut(_text_of(value), DETAIL_LIMIT))
        return text if len(text) <= limit else text[:limit] + "…"
    text = clean(_cut(raw, DETAIL_LIMIT))
    if text == raw and len(raw) <= limit:
        return value  # short and clean: keep its JSON shape
    return text if len(text) <= limit else text[:limit] + "…"


def _fmt(value: Any, *, clean: Callable[[str], str] = redact) -> str:
    return json.dumps(_short(value, clean=clean), ensure_ascii=False, default=_text_of)


_SIZE_WORDS = {"minItems": "items", "maxItems": "items", "minLength": "chars", "maxLength": "chars",
               "minProperties": "fields", "maxProperties": "fields"}


def _size(got: Any) -> Any:
    return len(got) if isinstance(got, (str, list, tuple, dict)) else _short(got)  # not sized: echoed safely


#: the values of an enum (or the fields of a schema) a problem lists; past it, how many more there are
ALLOWED_SHOWN = 50


def _listed(values: Sequence[Any], lang: Lang, show: Callable[[Any], str]) -> str:
    """The first :data:`ALLOWED_SHOWN` values, then how many more: rendering a huge enum whole cost seconds."""
    shown = joined((show(v) for v in values[:ALLOWED_SHOWN]), lang, "list")  # 、 between them in Chinese
    if len(values) > ALLOWED_SHOWN:
        shown += t("problem.and_more", lang, n=len(values) - ALLOWED_SHOWN)
    return shown


def _problem_hint(p: Problem, lang: Lang) -> str:
    desc = _cut(p.description or "", TEXT_LIMIT)  # the schema's words, for the model: bounded, not redacted
    r = p.reason
    if r == "missing":
        text = t("problem.missing", lang, description=desc)
    elif r == "unknown_field":
        allowed = _listed(p.allowed or (), lang, str) or "-"
        if p.expected:  # patternProperties: a name matching one of its patterns is allowed too
            text = t("problem.unknown_field.pattern" if p.allowed else "problem.unknown_field.pattern_only", lang,
                     allowed=allowed, pattern=_technical(p.expected))
        elif p.suggestion:
            text = t("problem.unknown_field.suggest", lang, suggestion=p.suggestion, allowed=allowed)
        else:
            text = t("problem.unknown_field", lang, allowed=allowed)
    elif r == "wrong_type":
        text = t("problem.wrong_type", lang, expected=p.expected, got=_type_and_value(p.got), description=desc)
    elif r == "not_in_enum":
        text = t("problem.not_in_enum", lang, got=_fmt(p.got),  # the schema's own values: not technical
                 allowed=_listed(p.allowed or (), lang, lambda a: _fmt(a, clean=redact_secrets)))
    elif r == "out_of_range":
        keyword, bound = p.limit or ("minimum", "?")
        if keyword in _SIZE_WORDS:  # say what was sent ("an empty list"), not its length as if it were the value
            n = _size(p.got)
            size = t(f"size.{_SIZE_WORDS[keyword]}{'.none' if n == 0 else ''}", lang, n=n)
            text = t("problem.size", lang, size=size, limit=t("limit." + keyword, lang, n=bound))
        else:
            text = t("problem.out_of_range", lang, got=_fmt(p.got), limit=t("limit." + keyword, lang, n=bound))
    elif r == "bad_format":
        text = t("problem.bad_format", lang, got=_fmt(p.got), expected=p.expected, description=desc)
    elif r in ("rule", "over_limit"):
        detail = (p.detail or {}).get(lang) or (p.detail or {}).get("en", "")
        text = t("problem.rule", lang, detail=_authored(detail))  # the rule's author wrote it for the model
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

