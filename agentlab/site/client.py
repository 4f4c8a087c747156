"""A site's skills as agentlab tools, run over HTTP with httpx: the agent decides, the site executes.

``site_registry(url, key)`` (or ``site_registry()`` inside a workshop hub, which names the room's site and
this participant's key in ``AGENTLAB_SITE_URL`` and ``AGENTLAB_SITE_KEY``: :func:`room_site`) loads every skill the key may call (or, with ``query=``, the
search's top ``k``) as :class:`~agentlab.tools.Tool` contracts: the same name, description
(with its limits appended, so the model sees them) and schema, so the loop validates a
call before it leaves. Each tool's ``fn`` posts ``{"arguments": ...}`` and maps the reply::

    200 success          -> the result (flat, with its summary)
    200 success=false    -> the site's error, as the model would have got it in-process
    422                  -> INVALID_ARGS (or CONFLICT) with the site's problems: the model fixes the call
    429                  -> wait for Retry-After (up to ``max_wait``) and send once more; else RATE_LIMITED
    5xx, a timeout, no connection -> transient: the loop resends (writes with the same key)
    401 / 403 / 404      -> fatal: UNAUTHENTICATED, PERMISSION_DENIED, UNKNOWN_TOOL

``fallback_hint`` reaches the model inside the error. A write is a keyed tool: the loop
computes its idempotency key (:func:`agentlab.loop.idempotency_key`, from the skill's
``idempotency`` fields) and the client sends it as the Idempotency-Key header, keyed by the
API key (:func:`wire_key`): another tenant, who knows the tool and the order but not this key,
cannot compute it. The model never writes it.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import time
import uuid
from collections.abc import Callable
from typing import Any, get_args

from ..errors import CODES, Stage, ToolError, ToolFailure, make_error
from ..i18n import Lang, LocalizedError, t
from ..tools import Registry, Tool

__all__ = ["discovery_site", "room_site", "site_registry", "wire_key"]


_ROOM_VARIABLES = ("AGENTLAB_SITE_URL", "AGENTLAB_SITE_KEY")


def room_site() -> tuple[str, str] | None:
    """The shared site's URL and this participant's key when a workshop hub gave them, else ``None``.

    The hub starts one site for the room and makes every participant a key of their own, so their calls,
    idempotency claims and quotas are theirs (docs/workshop.md)."""
    url, key = (os.environ.get(name, "").strip() for name in _ROOM_VARIABLES)
    return (url, key) if url and key else None


def discovery_site(url: str, key: str, *, lang: Lang = "en", timeout: float = 10.0) -> tuple[str, str, str | None]:
    """Where a notebook discovers skills: the room's site and key (:func:`room_site`) when a workshop hub names
    one and it answers the listing; else ``url`` and ``key``. The third item is the line to show when the room's
    site did not answer (else ``None``): a lesson goes on with its own site rather than stop."""
    room = room_site()
    if room is None:
        return url, key, None
    import httpx
    try:
        httpx.get(room[0].rstrip("/") + "/api/skills", headers={"X-API-Key": room[1]},
                  timeout=timeout).raise_for_status()
    except httpx.HTTPError as exc:
        return url, key, t("site.room_unreachable", lang, error=type(exc).__name__)
    return room[0], room[1], None


def site_registry(url: str | None = None, key: str | None = None, *, query: str | None = None, k: int = 6, lang: Lang = "en",
                  session_id: str | None = None, client: Any = None, max_wait: float = 30.0,
                  sleep: Callable[[float], None] = time.sleep, timeout_margin: float = 2.0) -> Registry:
    """The site's skills as a Registry whose tools run on the site.

    Args:
        query: offer only the search's top ``k`` for this text (docs/site.md#the-http-contract) instead of all.
        session_id: sent as ``X-Session-Id`` so the site's logs group this agent's calls.
        client: an ``httpx.Client`` (or FastAPI's TestClient) to use instead of a new one.
        max_wait: the longest Retry-After the client waits itself; a longer one goes to the loop.

    Without both ``url`` and ``key``, the room's (:func:`room_site`); outside a hub that is a
    :class:`LocalizedError` naming the variable that is not set. One without the other is refused: the room's key
    is never sent to another site.
    """
    import httpx
    if (url is None) != (key is None):
        # never half from the room: its key would go to another site, or another key to the room's site
        raise LocalizedError("site.url_without_key")
    if url is None or key is None:
        room = room_site()
        if room is None:
            unset = [name for name in _ROOM_VARIABLES if not os.environ.get(name, "").strip()]
            raise LocalizedError("site.no_room_site", unset=", ".join(unset))
        url, key = room
    http = client if client is not None else httpx.Client(base_url=url.rstrip("/"))
    session = session_id or uuid.uuid4().hex[:12]
    headers = {"X-API-Key": key, "Accept-Language": lang, "X-Session-Id": session}
    if query is None:
        reply = _listing(http, "/api/skills", {}, headers, sleep)
        skills = reply.json()["skills"]
    else:
        reply = _listing(http, "/api/skills/search", {"q": query, "k": k}, headers, sleep)
        skills = reply.json()["results"]
    tools = [_tool(s, http, headers, max_wait=max_wait, sleep=sleep, margin=timeout_margin) for s in skills]
    return Registry(tools, lang=lang)


def wire_key(secret: str, key: str) -> str:
    """The Idempotency-Key sent for the loop's ``key``: an HMAC under the caller's own secret (its API key).

    The loop's key is predictable by design (the tool and the order), so sent as a plain hash anyone
    could send it first. Keyed by a secret only this caller holds, it is stable across resends and
    restarts of this caller and unguessable by anyone else."""
    return hmac.new(secret.encode("utf-8", "surrogatepass"), key.encode("utf-8", "surrogatepass"),
                    hashlib.sha256).hexdigest()[:40]


def _listing(http: Any, path: str, params: dict, headers: dict, sleep: Callable[[float], None]) -> Any:
    """GET a listing, sent again after a connection reset or refused (it reads only): a busy site sharing an address
    with a flood may close a connection before it is used. Past three tries, UNAVAILABLE as a tool would hear it."""
    import httpx
    for wait in (0.2, 0.5, None):
        try:
            reply = http.get(path, params=params or None, headers=headers)
        except httpx.TransportError:
            if wait is None:
                raise _failure({}, 503) from None
            sleep(wait)
            continue
        _raise_for_listing(reply)
        return reply
    raise AssertionError("unreachable")


def _raise_for_listing(reply: Any) -> None:
    if reply.status_code != 200:
        raise _failure(reply.json() if _is_json(reply) else {}, reply.status_code)


def _is_json(reply: Any) -> bool:
    return "json" in reply.headers.get("content-type", "")


def _tool(meta: dict, http: Any, headers: dict, *, max_wait: float, sleep: Callable[[float], None],
          margin: float) -> Tool:
    import httpx
    name = meta["skill_name"]
    writes = bool(meta.get("idempotency"))
    fields = tuple((meta.get("idempotency") or {}).get("fields") or ())
    per_minute = (meta.get("limits") or {}).get("per_minute")
    description = meta["description"] + (f" Limit: {per_minute} calls per minute." if per_minute else "")
    wait = float(meta.get("timeout", 5.0)) + margin

    def fn(**args: Any) -> Any:
        key = args.pop("idempotency_key", None)
        sent = dict(headers)
        if writes:
            if key is None:  # the loop runs with idempotency off: this call is its own action
                key = f"{name}:{uuid.uuid4().hex}"
            sent["Idempotency-Key"] = wire_key(headers.get("X-API-Key", ""), key)
        for attempt in (0, 1):
            try:
                reply = http.post(f"/api/skills/{name}/execute", json={"arguments": args}, headers=sent, timeout=wait)
            except httpx.TimeoutException:
                raise _fail("TIMEOUT", seconds=wait) from None
            except httpx.TransportError:
                raise _fail("UNAVAILABLE") from None
            if reply.status_code == 429 and attempt == 0:
                after = _seconds(reply.headers.get("retry-after"))
                if after is not None and after <= max_wait:
                    sleep(after)
                    continue
            break
        data = reply.json() if _is_json(reply) else {}
        if reply.status_code == 200 and data.get("success"):
            return data["result"]
        raise _failure(data, reply.status_code, reply.headers.get("retry-after"))

    business_key = (lambda a: "|".join(str(a.get(f)) for f in fields)) if fields else None
    return Tool(name, description, meta["input_schema"], fn, side_effect=writes, keyed=writes,
                business_key=business_key, key_scope=(meta.get("idempotency") or {}).get("scope", "global"),
                timeout=wait + 1.0)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# status -> the code the model is told when the body says nothing usable
_BY_STATUS = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "UNKNOWN_TOOL", 409: "IN_PROGRESS",
              422: "INVALID_ARGS", 428: "BAD_REQUEST", 429: "RATE_LIMITED", 504: "TIMEOUT"}


def _failure(data: dict, status: int, retry_after: str | None = None) -> ToolFailure:
    """The site's error as a ToolFailure whose record renders exactly the site's error object."""
    found = data.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    code = error.get("code") if isinstance(error.get("code"), str) else None
    if status >= 500 and status != 504:
        code = "UNAVAILABLE"  # a server error may pass: resent (a write with its key) by the loop
    code = code or _BY_STATUS.get(status, "UNAVAILABLE")
    if code not in CODES:
        code = "TOOL_ERROR"
    extra: dict[str, Any] = {}
    if error.get("problems"):
        extra["problems"] = error["problems"]
    for field in ("available", "closest"):
        if error.get(field) is not None:
            extra[field] = error[field]
    if data.get("fallback_hint"):
        extra["fallback_hint"] = data["fallback_hint"]
    message = error.get("message") if status < 500 or status == 504 else None
    # where in the chain the site said it happened (a business rule's refusal is semantic, not the schema's):
    # kept when the code is the site's own and the stage one the taxonomy knows, else the code's default
    # (rule_blocked only where it is the code's own: the metrics count it as a guard that worked, not a failure)
    stage = error.get("stage") if code == error.get("code") and error.get("stage") in get_args(Stage) else None
    stage = None if stage == "rule_blocked" and CODES[code][1] != "rule_blocked" else stage
    return _fail(code, message=message, hint=error.get("hint"),
                 retry_after=retry_after if retry_after is not None else error.get("retry_after"),
                 extra=extra or None, seconds=0, stage=stage)


def _fail(code: str, **kw: Any) -> ToolFailure:
    """A ToolFailure carrying exactly ``make_error(code, **kw)`` (ToolFailure itself takes no fill-ins)."""
    record: ToolError = make_error(code, **kw)
    failure = ToolFailure(code)
    failure.error = record
    return failure
