"""What a caller can do next, for every failure it can act on: the site's ``fallback_hint``.

A skill's own ``fallback_hint`` (the weather skill: call again with ``allow_cached=true``) says what to
try when *it* times out or its source is down. Every other refusal a caller can act on gets the
site's own hint, one catalogue sentence per case (``site.hint.*``), so a model that meets a 429 or
a 409 is told what to do rather than left to guess::

    RATE_LIMITED   rate: wait Retry-After, then once more    quota: used up, tell the user / ask the operator
                   refused: fix the arguments before sending more
    IN_PROGRESS    resend with the SAME key after a moment   OUTCOME_UNKNOWN  never resend, not even with a new key
    UNAVAILABLE    store: nothing ran, resend after Retry-After   upstream: the skill's source is down
    TIMEOUT        the skill's own hint, else: a read once more, a write with the same key
    INVALID_ARGS   fix the fields named in problems (semantic: the business rule, ask the user)
    BAD_REQUEST BAD_JSON UNKNOWN_TOOL PERMISSION_DENIED UNAUTHENTICATED CONFLICT NEEDS_APPROVAL TOOL_ERROR

A refusal a skill words itself for its own domain (``NOT_FOUND``, ``RULE_VIOLATION``) carries its own
``hint`` in the error and gets no generic sentence here: a generic one would be wrong as often as right.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..errors import ToolError
from ..i18n import Lang, t

__all__ = ["HINTED", "KINDS", "fallback_hint", "skill_hint"]

#: error code -> the catalogue key of its default hint (``site.hint.<tail>``)
HINTED: dict[str, str] = {
    "INVALID_ARGS": "INVALID_ARGS", "BAD_JSON": "INVALID_ARGS", "BAD_REQUEST": "BAD_REQUEST",
    "UNKNOWN_TOOL": "UNKNOWN_TOOL", "PERMISSION_DENIED": "PERMISSION_DENIED", "UNAUTHENTICATED": "UNAUTHENTICATED",
    "RATE_LIMITED": "RATE_LIMITED", "IN_PROGRESS": "IN_PROGRESS", "OUTCOME_UNKNOWN": "OUTCOME_UNKNOWN",
    "CONFLICT": "CONFLICT", "TIMEOUT": "TIMEOUT", "UNAVAILABLE": "UNAVAILABLE", "TOOL_ERROR": "TOOL_ERROR",
    "NEEDS_APPROVAL": "NEEDS_APPROVAL",
}
#: the cases one code covers that call for different actions (the caller of :func:`fallback_hint` knows which)
KINDS: tuple[str, ...] = ("quota", "refused", "upstream", "key_reused", "semantic")


def fallback_hint(error: ToolError | None, lang: Lang, *, kind: str | None = None) -> str | None:
    """The site's hint for ``error`` in ``lang``: ``kind`` (one of :data:`KINDS`) picks the case, else the code's
    default; ``None`` for a success or a code the skill's own message must explain."""
    if error is None:
        return None
    if kind is None and error.code == "INVALID_ARGS" and error.stage == "semantic":
        kind = "semantic"  # the arguments had the right shape; a business rule refused them
    if kind is not None:
        if kind not in KINDS:
            raise ValueError(f"unknown hint kind {kind!r}; one of {list(KINDS)}")
        return t(f"site.hint.{kind}", lang)
    tail = HINTED.get(error.code)
    return None if tail is None else t(f"site.hint.{tail}", lang)


def skill_hint(hints: Mapping[str, str] | None, lang: Lang) -> str | None:
    """A skill's own ``fallback_hint`` in ``lang`` (English when it wrote no other)."""
    return None if not hints else hints.get(lang) or hints.get("en")
