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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

from .i18n import Lang, t
from .jsonutil import escape_surrogates

__all__ = ["CODES", "Category", "Problem", "Reason", "Stage", "ToolError", "ToolFailure", "UsageError",
           "friendly", "json_type", "make_error", "redact", "redact_secrets", "render", "with_stage"]

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
    "NOT_RUN": ("fatal", "rule_blocked"),  # a later call of a message whose earlier call ended the turn
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
        # the path holds the model's own key names: bounded, like everything it wrote
        out: dict[str, Any] = {"field": _cut(self.field, NAME_LIMIT), "reason": self.reason,
                               "hint": _problem_hint(self, lang)}
        if self.expected is not None and self.reason in ("wrong_type", "bad_format"):
            out["expected"] = self.expected
        if self.limit is not None and self.limit[0] in _SIZE_WORDS:
            out["got_size"] = _size(self.got)  # a length limit: the length, never the (maybe huge) value
        elif self.reason not in ("missing", "unknown_field") and self.got is not None:
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
        if self.message:  # written for the model: only credentials are removed
            return _authored(self.message.get(lang) or self.message["en"])
        key = self.fields.get("_key", self.code)
        # The catalogue sentence is ours; the fill-ins are not: a tool name the model made up,
        # an exception's detail. Each is cut and redacted on its own, before it is placed.
        fills = {k: (_authored(str(v)) if k in _AUTHORED_FIELDS else _technical(v))
                 for k, v in self.fields.items() if not k.startswith("_")}
        return t(key, lang, **fills)

    def hint_text(self, lang: Lang = "en") -> str:
        """What the model should do next."""
        if self.hint:
            return _authored(self.hint.get(lang) or self.hint["en"])
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
               hint: Mapping[str, str] | str | None = None, retry_after: float | None = None,
               extra: Mapping[str, Any] | None = None, **fields: Any) -> ToolError:
    """Build a :class:`ToolError` with the category and stage of ``code``.

    Free text (``message``/``hint``) is cut and has credentials removed here (see
    :func:`redact_secrets`); what else the author wrote reaches the model as written.
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

    ``message`` is shown to the model as written, less any credential or stack
    trace (see :func:`redact_secrets`); write it for the model, with what to do
    next. Anything else a tool raises becomes a ``TOOL_ERROR`` whose text the
    model never sees.
    """

    def __init__(self, code: str, message: Mapping[str, str] | str | None = None, *,
                 hint: Mapping[str, str] | str | None = None, retry_after: float | None = None,
                 stage: Stage | None = None, problems: tuple[Problem, ...] = ()):
        text = _lang_map(message)
        super().__init__(code if text is None else f"{code}: {text['en']}")
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
    # Last, over everything: a credential in returned data, an extra, or a fill-in is
    # removed here whatever path it took. Linear, and a no-op on clean text. A lone
    # surrogate (half an emoji from a model or a tool) becomes its JSON escape, so what
    # the model is told can always be stored and sent.
    return escape_surrogates(_safe_json(body))


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
# Two levels. Credentials (keys, tokens, passwords, the user:password of a URL) and
# stack traces are removed from everything the model or the user reads, returned
# data included. The broad patterns (SQL, paths, hosts, IPs, e-mail, whole URLs) also
# match prose ("update the address from the order page"), so they run only on
# technical text: exception text, telemetry, error details, model values echoed back.
#
# The model controls much of this text, so every pattern is linear: it starts only
# where a run of the characters it scans starts (a lookbehind such as (?<![\w.-])),
# and its repetitions are possessive (*+), bounded ({1,63}) or over classes that
# cannot overlap what follows, so no failed match backtracks through a run.
# Model-controlled text is still cut before it is redacted (_cut): that bounds the constant.


class _Rule(NamedTuple):
    pattern: re.Pattern[str]
    repl: Any  # as for re.sub; a callable may return the match unchanged to keep it
    needs: tuple[str, ...]  # substrings it cannot match without: ``in`` is far cheaper than a regex
    fold: bool = False  # look for ``needs`` in the lower-cased text

    def apply(self, text: str) -> str:
        if not callable(self.repl):
            return self.pattern.sub(self.repl, text)
        # A kept match must not hide the next one: in "令牌 Password: x" the first key's
        # value is "Password:", so the search resumes after a kept key, not after its value.
        # Each character is still scanned at most twice.
        out, done, at = [], 0, 0
        while (m := self.pattern.search(text, at)) is not None:
            new = self.repl(m)
            if new == m[0]:
                at = m.end(1) if m.end(1) > m.start() else m.end()
                continue
            out += [text[done:m.start()], new]
            done = at = m.end()
        return "".join(out) + text[done:]


_SECRET = "[secret removed]"
_KEYS = re.compile(r"(?<![A-Za-z0-9_\-])(?:"
    r"(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{8,}+"  # OpenAI, Anthropic...
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{8,}+"  # Stripe (a bare pk_ is also a primary key's name)
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}(?![0-9A-Z])"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+|glpat-[A-Za-z0-9_\-]{20,}+"  # GitHub, GitLab
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}+|whsec_[A-Za-z0-9]{16,}+|AIza[A-Za-z0-9_\-]{30,}+"  # Slack, webhooks, Google
    r"|eyJ[A-Za-z0-9_\-]{8,}+(?:\.[A-Za-z0-9_\-]*+){1,2})")  # JWTs
_KEY_NEEDS = ("sk-", "pk-", "rk-", "ak-", "_live_", "_test_", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA",
              "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "whsec_", "AIza", "eyJ")
# "password: x", "token=x", "the password is x", "密码是x", '"api_key": "x"'
_PASSWORD_EN, _PASSWORD_ZH = r"pass(?:word|wd|phrase|code)s?|credentials?|pwd", "密码|口令"
_TOKEN_EN = (r"(?:(?:api|access|secret|private|client|aws[ _\-]?secret[ _\-]?access)[ _\-]?)keys?|apikey"
             r"|(?:(?:access|refresh|auth|session|api|bearer|id)[ _\-]?)?token|(?:client[ _\-]?)?secret|authorization")
_TOKEN_ZH = "密钥|秘钥|令牌"
_PASSWORD_WORDS, _TOKEN_WORDS = _PASSWORD_EN + "|" + _PASSWORD_ZH, _TOKEN_EN + "|" + _TOKEN_ZH
_PHRASE = re.compile(  # bare "pwd" is also a shell command: only "pwd=" counts; Chinese has no word boundaries
    r"(?P<key>(?<![a-z0-9])(?:" + _PASSWORD_EN.replace("|pwd", "|pwd(?==)") + "|" + _TOKEN_EN + r")(?![a-z])"
    r"|" + _PASSWORD_ZH + "|" + _TOKEN_ZH + ")"
    r"(?P<sep>[\"']?(?:[ \t]*+(?:[:=：]|(?<=[ \t])(?:is|was)(?=[ \t])|是|为)[ \t]*+[:：]?[ \t]*+|[ \t]++)[\"']?)"
    r"(?P<value>(?!\[)[^\s\"'`,;，。；、！？（）()<>\[\]{}\u3000-\u303f\u3400-\u9fff\uff01-\uff0f\uff1a-\uff1f]++)", re.I)
_PASSWORD_KEY = re.compile(r"(?:" + _PASSWORD_WORDS + r")\Z", re.I)
_KEY_WORD = re.compile(r"(?:[\w\-]*[_\-])?(?:" + _PASSWORD_WORDS + "|" + _TOKEN_WORDS + ")", re.I)
_SECRET_FIELD = re.compile(r"(?:\A|[_\-.])(?:" + _PASSWORD_WORDS + "|" + _TOKEN_WORDS + r")\Z", re.I)
# What follows "password is" or "token:" in a sentence about a credential rather than one holding it.
_NOT_SECRETS = frozenset("""
    a an the this that it its your my our their no not none null nil n/a empty blank unset is was are be been
    being has have had must should will can cannot may might does did do expired expires invalid incorrect wrong
    bad missing required optional needed too at least most only also still already now then here there set
    reset changed updated valid correct ok okay fine accepted rejected revoked unknown weak strong long short
    hidden removed redacted masked stored saved sent ready active inactive disabled enabled locked case
    case-sensitive sensitive same different new old current temporary one-time field value length characters
""".split())


def _phrase(match: re.Match[str]) -> str:
    value = match["value"]
    kept = value.rstrip(".:")  # the sentence's full stop is not part of the secret
    if not kept or kept.lower() in _NOT_SECRETS or _KEY_WORD.fullmatch(kept):
        return match[0]  # prose, or "password: access_token: x" where the next key's secret follows
    if not match["sep"].strip(" \t\"'"):  # "secret <value>" with no ":" or "is": only if it cannot be prose
        if len(kept) < 16 or not any(c.isdigit() for c in kept) or not any(c.isalpha() for c in kept):
            return match[0]
    elif _PASSWORD_KEY.search(match["key"]):
        if len(kept) < 3:  # "密码是6位数字" (six digits long) gives a length, not a password
            return match[0]
    elif not (len(kept) >= 10 or any(c.isdigit() for c in kept) or any(c.isupper() for c in kept[1:])):
        return match[0]  # a token is long or has digits; "token: expired" is about one
    return match["key"] + match["sep"] + _SECRET + value[len(kept):]


_SECRETS = [
    # a literal, then the rest of the text: at most one match each
    _Rule(re.compile(r"Traceback \(most recent call last\):.*", re.S), "[details removed]", ("Traceback",)),
    _Rule(re.compile(r"^[ \t]*+File \"[^\"\n]*+\", line \d++[^\n]*+", re.M), "[details removed]", ('File "',)),
    _Rule(re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\Z)",
                     re.S), _SECRET, ("-----BEGIN",)),
    # "key: value" first: it keeps what reads as prose, so "Bearer access_token: x" loses x
    # here before the Bearer shape below takes the key's name for the token
    _Rule(_PHRASE, _phrase, ("pass", "pwd", "credential", "key", "token", "secret", "authorization", "密码", "口令",
                             "密钥", "秘钥", "令牌"), fold=True),
    # scheme://user:password@host -> scheme://[secret removed]@host: the host is no credential
    _Rule(re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*+://)[^\s/?#@\[\]\"'<>]++@"),
          r"\1" + _SECRET + "@", ("://",)),
    # "Bearer <token>", "Basic <base64>": the value must have a digit or punctuation, so
    # "Bearer of this voucher" is prose, and a Basic one be base64, so "Basic plan-2024" is too
    _Rule(re.compile(r"\b(?i:bearer[ \t]++(?=[A-Za-z]*+[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,}+"
                     r"|basic[ \t]++(?=[A-Za-z]*+[0-9+/=])[A-Za-z0-9+/]{12,}+={0,2})"), _SECRET,
          ("bearer", "basic"), fold=True),
    _Rule(_KEYS, _SECRET, _KEY_NEEDS),
]
_ADDRESS = "[address removed]"
_TECHNICAL_FIRST = [
    # a whole URL before its parts, so that a DSN is removed whole rather than in pieces
    _Rule(re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*+://\S*+"), _ADDRESS, ("://",)),
    # at most 300 characters from the keyword to the clause: bounded work per keyword
    _Rule(re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER)\b[^;\n]{0,300}?"
                     r"\b(?:FROM|INTO|SET|TABLE|WHERE)\b[^;\n]*+;?", re.I), "[query removed]",
          ("select", "insert", "update", "delete", "drop", "create", "alter"), fold=True),
]
_TECHNICAL_LAST = [
    _Rule(re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?!\.?\d)"), _ADDRESS, (".",)),
    _Rule(re.compile(r"(?<![\w.+\-])[\w.+\-]{1,64}+@[\w\-]{1,63}+(?:\.[\w\-]{1,63}+)++(?::\d{1,5})?"), _ADDRESS, ("@",)),
    _Rule(re.compile(r"(?<![\w.\-])(?:[\w\-]{1,63}\.){1,10}(?:internal|local|lan|corp|intra|svc|cluster)\b"
                     r"(?::\d{1,5})?", re.I), _ADDRESS, ("internal", "local", "lan", "corp", "intra", "svc", "cluster"),
          fold=True),
    _Rule(re.compile(r"\blocalhost(?::\d{1,5})?\b", re.I), _ADDRESS, ("localhost",), fold=True),
    _Rule(re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|\\\\|/)(?:[\w.\-]++[\\/])++[\w.\-]*+"), "[path removed]", ("/", "\\")),
]


# the same rules with their triggers as they read inside JSON text ('File "' is 'File \"')
_ESCAPED = [r._replace(needs=r.needs + tuple(json.dumps(n)[1:-1] for n in r.needs)) for r in _SECRETS]


def _active(rules: list[_Rule], text: str) -> list[_Rule]:
    """The rules whose every trigger is not absent from ``text``."""
    folded = text.lower() if any(r.fold for r in rules) else text
    return [r for r in rules if any(n in (folded if r.fold else text) for n in r.needs)]


def _apply(rules: list[_Rule], text: str) -> str:
    for r in _active(rules, text):
        text = r.apply(text)
    return text


def redact_secrets(text: str) -> str:
    """Remove credentials and stack traces from ``text``; leave everything else as written.

    For what a tool author wrote on purpose (messages, hints, rule text) and for
    returned data. Linear in ``len(text)``.
    """
    return _apply(_SECRETS, text)


def redact(text: str) -> str:
    """Remove stack traces, SQL, hosts, paths and secrets from ``text``.

    For technical detail (exception text, telemetry): it also removes prose that
    merely looks like SQL or a path. Linear in ``len(text)``.
    """
    return _apply(_TECHNICAL_LAST, redact_secrets(_apply(_TECHNICAL_FIRST, text)))


# --- bounds on what reaches the model ------------------------------------------
TEXT_LIMIT = 4000  # a message, hint or rule a tool author wrote
DETAIL_LIMIT = 1000  # technical detail, or a string the model wrote, before it is redacted
NAME_LIMIT = 200  # a field path the model wrote
_AUTHORED_FIELDS = frozenset({"reason", "example"})  # fill-ins a person wrote: credentials only


def _cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, "…" included, before any pattern runs on it.

    A word the cut falls inside goes too: the first half of a key no longer
    looks like one and would be shown.
    """
    if len(text) <= limit:
        return text
    end, floor = limit - 1, max(limit - 101, 0)
    while end > floor and not text[end].isspace():
        end -= 1
    return text[:end if end > floor else limit - 1] + "…"


def _authored(text: str) -> str:
    """A sentence a person wrote for the model: bounded, and without credentials."""
    return redact_secrets(_cut(text, TEXT_LIMIT))


def _technical(value: Any) -> Any:
    """A technical or model-written fill-in, bounded and fully redacted; numbers pass."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return redact(_cut(str(value), DETAIL_LIMIT))


def _safe_json(body: Any) -> str:
    """``body`` as JSON with credentials removed from every string in it, keys included.

    Serialised first: most results hold no trigger of any rule anywhere, and one
    look at the whole text says so. Otherwise each string is redacted with only the
    rules the whole text could trigger, and a field named like a credential
    (``password``, ``api_key``) loses its value whatever it looks like.
    """
    try:
        text = json.dumps(body, ensure_ascii=False, default=str)
    except ValueError:  # a cycle: walking it (to a bounded depth) shows it as text
        text = ""
    live = [_SECRETS[_ESCAPED.index(r)] for r in _active(_ESCAPED, text)] if text else _SECRETS
    if not live:
        return text
    memo: dict[str, str] = {}

    def clean(s: str) -> str:
        if s not in memo:  # records repeat their keys and many values
            memo[s] = _apply(live, s)
        return memo[s]

    def walk(v: Any, depth: int) -> Any:
        if isinstance(v, str):
            return clean(v)
        if isinstance(v, (bool, int, float)) or v is None:
            return v
        if depth > 100:  # bounded: absurd nesting, or a cycle, is shown as text
            return clean(_cut(str(v), DETAIL_LIMIT))
        if isinstance(v, Mapping):
            return {clean(k) if isinstance(k, str) else k:
                    _SECRET if isinstance(k, str) and isinstance(x, (str, int)) and not isinstance(x, bool) and x != ""
                    and _SECRET_FIELD.search(k) else walk(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x, depth + 1) for x in v]
        return clean(str(v))

    return json.dumps(walk(body, 0), ensure_ascii=False, default=str)


def _lang_map(value: Mapping[str, str] | str | None) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"en": _authored(value)}
    return {k: _authored(v) for k, v in value.items()}


def _short(value: Any, limit: int = 60, *, clean: Callable[[str], str] = redact) -> Any:
    """Echo a bad value back: cut (a megabyte costs no more than a kilobyte), redacted, cut again."""
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, str):
        text = clean(_cut(value, DETAIL_LIMIT))
        return text if len(text) <= limit else text[:limit] + "…"
    raw = json.dumps(value, ensure_ascii=False, default=str)
    text = clean(_cut(raw, DETAIL_LIMIT))
    if text == raw and len(raw) <= limit:
        return value  # short and clean: keep its JSON shape
    return text if len(text) <= limit else text[:limit] + "…"


def _fmt(value: Any, *, clean: Callable[[str], str] = redact) -> str:
    return json.dumps(_short(value, clean=clean), ensure_ascii=False, default=str)


_SIZE_WORDS = {"minItems": "items", "maxItems": "items", "minLength": "chars", "maxLength": "chars",
               "minProperties": "fields", "maxProperties": "fields"}


def _size(got: Any) -> Any:
    return len(got) if isinstance(got, (str, list, tuple, dict)) else got


def _problem_hint(p: Problem, lang: Lang) -> str:
    desc = _cut(p.description or "", TEXT_LIMIT)  # the schema's words, for the model: bounded, not redacted
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
        text = t("problem.not_in_enum", lang, got=_fmt(p.got),  # the schema's own values: not technical
                 allowed=", ".join(_fmt(a, clean=redact_secrets) for a in p.allowed or ()))
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
    elif r == "rule":
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
