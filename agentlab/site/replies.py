"""What the site answers, and how a request's body and the site's own state are read.

:class:`HttpReply` is one status, body and headers; :func:`reply` makes the one for an error;
:func:`read_body` and :func:`bad_body` read ``{"arguments": {...}}`` or say why not;
:func:`call_store` tells a failure of the site's own state (:class:`StoreDown`, 503) from its bugs.
"""
from __future__ import annotations

import hashlib
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolError, make_error
from ..i18n import Lang, joined, t
from ..jsonutil import MAX_DEPTH, lone_surrogates, parse_strict
from .execute import body, http_status
from .hints import fallback_hint

__all__ = ["MAX_BODY", "HttpReply", "StoreDown", "bad_body", "call_store", "read_body", "reply", "scoped",
           "short_hash"]

#: the largest body an execute call may send; larger is refused before it is parsed
MAX_BODY = 1_000_000


@dataclass(frozen=True)
class HttpReply:
    """What goes back over HTTP."""

    status: int
    body: dict
    headers: Mapping[str, str] = field(default_factory=dict)


class StoreDown(Exception):
    """The site's own state (keys, claims, limits) could not be reached. Raised only before anything ran."""

    def __init__(self, stack: str):
        super().__init__("store unreachable")
        self.stack = stack


def call_store(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Call the keys, claims or limits; a failure of theirs is :class:`StoreDown`, told apart from the site's bugs."""
    try:
        return fn(*args, **kw)
    except Exception as exc:
        raise StoreDown(traceback.format_exc()) from exc


def reply(error: ToolError, lang: Lang, *, status: int | None = None, headers: Mapping[str, str] | None = None,
          hint: str | None = None) -> HttpReply:
    """The reply carrying ``error``: its status from the error's code unless given; ``hint`` names the case of
    the code whose ``fallback_hint`` the caller gets (agentlab/site/hints.py: ``quota``, ``key_reused``...)."""
    return HttpReply(status or http_status(error), body(None, error, lang, fallback_hint(error, lang, kind=hint)),
                     dict(headers or {}))


def read_body(raw: bytes, limit: int = MAX_BODY) -> tuple[dict | None, str | None]:
    """The arguments of ``{"arguments": {...}}``, or the reason the body is not that (a catalogue key's tail)."""
    if len(raw) > limit:
        return None, "too_large"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not_utf8"
    parsed, failure = parse_strict(text or "null", max_depth=MAX_DEPTH + 2)
    if failure is not None:
        return None, "not_json"
    if not isinstance(parsed, dict) or "arguments" not in parsed or not isinstance(parsed["arguments"], dict):
        return None, "shape"
    # a lone surrogate can only come from a \\u escape: UTF-8 that decoded (above) holds none, so a body without
    # one is not walked for them
    if "\\u" in text and lone_surrogates(parsed):
        return None, "surrogate"
    return parsed["arguments"], None


def bad_body(problem: str, lang: Lang, limit: int = MAX_BODY) -> HttpReply:
    """The 4xx for a body :func:`read_body` refused: what was wrong, and the shape that is expected."""
    message = {lg: joined((t(f"site.bad_body.{problem}", lg, limit=limit), t("site.bad_body", lg)), lg, "sentence")
               for lg in ("en", "zh")}
    return reply(make_error("BAD_REQUEST", message=message), lang, status=413 if problem == "too_large" else 400)


def scoped(key_id: str, skill: str, idem: str | None) -> str:
    """The idempotency key a handler (and the backend behind it) sees: the caller's key id and the skill
    folded in, so equal keys from two tenants are two keys below the site as they are in its claims."""
    return hashlib.sha256(f"{key_id}\x00{skill}\x00{idem}".encode("utf-8", "surrogatepass")).hexdigest()[:40]


def short_hash(value: str | None) -> str | None:
    """What the audit log keeps of an Idempotency-Key: enough to match two lines, not the key."""
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()[:16]
