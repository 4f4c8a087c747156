"""Running one skill: three layers in front of the handler, one check behind it (docs/site.md#three-layers).

::

    arguments -> input schema (agentlab's validator: the same problems the loop shows)  -> 422
              -> the skill's business check (problems -> 422; a ToolFailure -> its error)
              -> handler under the skill's timeout (really stops waiting)           -> 504
                 a ToolFailure from the handler (source down...) -> its error + fallback_hint
              -> output shaped (a scalar is {"value": ...}, a list {"items": ...}, a summary added)
              -> output schema: a mismatch is the skill's bug -> 500, logged, never shown

:func:`run_skill` returns an :class:`Execution`: the HTTP status and the body the client
receives. What went wrong inside (a stack, the bad output) goes to ``Execution.internal``
for the operator's log, never into the body.
"""
from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import Problem, ToolError, ToolFailure, make_error
from ..i18n import Lang
from ..schema import compile_schema
from ..store import result_json
from ..timeouts import WriteTimeout, run_with_timeout
from .flat import flat_summary
from .hints import fallback_hint as site_hint
from .hints import skill_hint
from .skills import Skill, SkillContext

__all__ = ["Execution", "SkillBug", "body", "http_status", "input_problems", "one_line_summary", "run_skill", "shape_result"]

# error code -> HTTP status; anything else a skill reports on purpose is a 200 with success false
_STATUS = {"INVALID_ARGS": 422, "BAD_JSON": 422, "TIMEOUT": 504, "RATE_LIMITED": 429, "UNAVAILABLE": 503,
           "TOOL_ERROR": 500, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "UNKNOWN_TOOL": 404,
           "CONFLICT": 422, "IN_PROGRESS": 409, "OUTCOME_UNKNOWN": 409, "BAD_REQUEST": 400}


@dataclass(frozen=True)
class Execution:
    """One execution: ``status`` and ``body`` go to the client; ``internal`` (a stack, the
    problems of a bad output) only to the error log. ``pending`` is a write still running
    after its timeout: its result will settle the idempotency key when it arrives."""

    status: int
    body: dict
    internal: str | None = None
    pending: Any = None
    ran: bool = False  # the handler was called (its effect may have happened)

    @property
    def ok(self) -> bool:
        return bool(self.body.get("success"))


def http_status(error: ToolError) -> int:
    """The status a reply with ``error`` is sent with."""
    return _STATUS.get(error.code, 200)


def body(result: Any = None, error: ToolError | None = None, lang: Lang = "en",
         fallback_hint: str | None = None) -> dict:
    """The reply's body: ``{"success", "result", "error", "fallback_hint"}``, the error in agentlab's shape;
    a failure a caller can act on gets the site's hint when none is given (agentlab/site/hints.py)."""
    return {"success": error is None, "result": result, "error": None if error is None else error.to_dict(lang),
            "fallback_hint": fallback_hint or site_hint(error, lang)}


def _failed(error: ToolError, skill: Skill, lang: Lang, *, internal: str | None = None, fallback: bool = False,
            pending: Any = None, ran: bool = False, kind: str | None = None) -> Execution:
    hint = (skill_hint(skill.meta.fallback_hint, lang) if fallback else None) or site_hint(error, lang, kind=kind)
    return Execution(http_status(error), body(None, error, lang, hint), internal, pending, ran)


def one_line_summary(name: str, result: dict) -> str:
    """A one-sentence summary of a result, for a skill that wrote none (docs/site.md#three-layers)."""
    if "items" in result and isinstance(result["items"], list):
        return f"{name}: {len(result['items'])} item(s)."
    return flat_summary(name, result)


def shape_result(name: str, data: Any) -> dict:
    """A handler's return as a flat object with a ``summary``: a scalar becomes ``{"value": ...}``,
    a list ``{"items": [...]}``. The value is first made plain JSON (what a replay returns too)."""
    plain = json.loads(result_json(data))
    if not isinstance(plain, dict):
        plain = {"items": plain} if isinstance(plain, list) else {"value": plain}
    if not isinstance(plain.get("summary"), str):
        plain = {**plain, "summary": one_line_summary(name, plain)}
    return plain


_COMPILED: dict[str, Callable[[Any], list[Problem]]] = {}


def _validator(schema: Any) -> Callable[[Any], list[Problem]]:
    """A schema compiled once per distinct schema (skills are few, calls many)."""
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _COMPILED:
        _COMPILED[key] = compile_schema(dict(schema))
    return _COMPILED[key]


def input_problems(skill: Skill, arguments: Any) -> list[Problem]:
    """What is wrong with ``arguments`` by the skill's input schema (agentlab's validator, same problems)."""
    return _validator(skill.meta.input_schema)(arguments)


def run_skill(skill: Skill, arguments: dict, ctx: SkillContext, *, lang: Lang = "en", check_input: bool = True,
              on_late: Callable[[Execution], None] | None = None) -> Execution:
    """Validate, check, run and shape one call of ``skill``. Never raises for a skill's failure.

    ``on_late`` receives the outcome of a write that timed out and finished afterwards.
    """
    if check_input:
        problems = input_problems(skill, arguments)
        if problems:
            return _failed(make_error("INVALID_ARGS", problems=problems), skill, lang)
    if skill.validate is not None:
        try:
            found = list(skill.validate(arguments, ctx) or ())
        except ToolFailure as exc:  # a rule that refuses outright (no such order, shipped already)
            return _failed(exc.error, skill, lang)
        except Exception:  # noqa: BLE001 - the check itself broke: the skill's bug, nothing has run
            return _failed(make_error("TOOL_ERROR"), skill, lang, internal=traceback.format_exc())
        if found:
            return _failed(make_error("INVALID_ARGS", problems=found, stage="semantic"), skill, lang)

    def finish(data: Any) -> Execution:
        try:
            shaped = shape_result(skill.name, data)
        except Exception:  # noqa: BLE001 - cannot happen for JSON-able data; a bug if it does
            return _failed(make_error("TOOL_ERROR"), skill, lang, internal=traceback.format_exc(), ran=True)
        bad = _validator(skill.meta.output_schema)(shaped)
        if bad:
            detail = "; ".join(f"{p.field}: {p.reason}" for p in bad)
            try:
                raise SkillBug(f"{skill.name} returned output that breaks its output_schema: {detail}")
            except SkillBug:
                return _failed(make_error("TOOL_ERROR"), skill, lang, internal=traceback.format_exc(), ran=True)
        return Execution(200, body(shaped, None, lang), ran=True)

    def settle(future: Any) -> None:
        if on_late is None or future.cancelled():
            return
        exc = future.exception()
        on_late(finish(future.result()) if exc is None else _from_exception(exc, skill, lang))

    try:
        data = run_with_timeout(lambda: skill.handler(dict(arguments), ctx), skill.meta.timeout, write=True)
    except WriteTimeout as exc:  # the handler still runs in its worker; we stop waiting now
        exc.future.add_done_callback(settle)
        err = make_error("TIMEOUT", seconds=skill.meta.timeout)
        return _failed(err, skill, lang, fallback=True, pending=exc.future, ran=True)
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return _from_exception(exc, skill, lang)
    return finish(data)


class SkillBug(Exception):
    """A skill broke its own contract (its output does not match its output_schema)."""


def _from_exception(exc: BaseException, skill: Skill, lang: Lang) -> Execution:
    if isinstance(exc, ToolFailure):  # the skill said on purpose what happened: the model may read it
        transient = exc.error.category == "transient"
        kind = "upstream" if exc.error.code == "UNAVAILABLE" else None
        return _failed(exc.error, skill, lang, fallback=transient, ran=True, kind=kind)
    stack = "".join(traceback.format_exception(exc))
    if isinstance(exc, (TimeoutError, ConnectionError)):  # its source failed: a fallback may help
        err = make_error("TIMEOUT", seconds=skill.meta.timeout) if isinstance(exc, TimeoutError) else make_error("UNAVAILABLE")
        return _failed(err, skill, lang, fallback=True, internal=stack, ran=True,
                       kind=None if isinstance(exc, TimeoutError) else "upstream")
    return _failed(make_error("TOOL_ERROR"), skill, lang, internal=stack, ran=True)
