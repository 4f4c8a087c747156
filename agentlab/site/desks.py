"""The desks' tools as skills: the after-sales desk and the bookkeeping desk, a back office per API key.

Each :class:`~agentlab.tools.Tool` becomes a :class:`~agentlab.site.skills.Skill` with the
same name, description and schema; its business rules become the skill's check; a write
is a ``write`` skill that needs an Idempotency-Key, and a keyed tool (the refund) gets the
site's key, so the backend dedups too. Where both desks have a tool of one name
(``escalate_to_human``) the second is prefixed with its desk (``expense_escalate_to_human``).

The human gate is not on the site: a call that would wait for a person (a refund above
the threshold, changing a booked expense) is refused with ``NEEDS_APPROVAL`` and runs
nothing; the in-process loop keeps its approval flow (docs/guards.md#approval).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ..errors import Problem, ToolFailure
from ..i18n import keys as catalogue_keys
from ..i18n import t
from ..scenarios import aftersales, expense
from ..tools import Registry, Tool
from .skills import Skill, SkillContext, SkillMeta

__all__ = ["DESK_FIELDS", "desk_registry", "desk_skills", "desk_state"]

#: the arguments that make a repeat the same write (what the desks' business_key reads)
DESK_FIELDS: dict[str, tuple[tuple[str, ...], Literal["global", "session"]]] = {
    "create_refund": (("order_id",), "global"),
    "book_expense_record": (("date", "amount", "category"), "session"),
    "delete_expense_record": (("record_id",), "global"),
    "set_budget": (("category", "month", "amount"), "session"),
}


def desk_state() -> dict[str, Any]:
    """A fresh back office: the after-sales desk and the ledger. The site keeps one per API key."""
    return {"aftersales": aftersales.Desk(), "expense": expense.Ledger()}


_MAKERS: dict[str, Callable[..., Registry]] = {"aftersales": aftersales.make_registry, "expense": expense.make_registry}


def desk_registry(state: dict[str, Any], desk: str) -> Registry:
    """The desk's tools bound to ``state`` (built once per state and kept in it)."""
    regs = state.setdefault("registries", {})
    if desk not in regs:
        regs[desk] = _MAKERS[desk](state[desk])
    return regs[desk]


def desk_skills(state: dict[str, Any] | None = None) -> list[Skill]:
    """Both desks' tools as skills. A call runs on the desk of its context's state (``SkillContext.state``: the
    site gives each API key a back office of its own, docs/site.md#tenants); ``state`` is the one used for a
    context that carries none (a skill run on its own, in a test)."""
    fallback = state if state is not None else desk_state()
    skills: dict[str, Skill] = {}
    for desk, make in _MAKERS.items():
        zh = make(fallback[desk], lang="zh")
        for tool in desk_registry(fallback, desk):
            name = tool.name if tool.name not in skills else f"{desk}_{tool.name}"
            skills[name] = _skill(name, desk, tool, zh[tool.name], fallback)
    return list(skills.values())


def _skill(name: str, desk: str, tool: Tool, zh: Tool, fallback: dict[str, Any]) -> Skill:
    fields, scope = DESK_FIELDS.get(tool.name, ((), "session"))  # no business key: all arguments, per session
    said = {k: v["description"] for k, v in (zh.parameters.get("properties") or {}).items()
            if isinstance(v, dict) and isinstance(v.get("description"), str)}
    shown = f"site.desk_tool.{desk}.{tool.name}"
    # a tool the catalogue does not name yet (a desk grew one) is shown by its own name, never a KeyError
    named = shown in catalogue_keys()
    meta = SkillMeta(
        skill_name=name, display_name=t(shown, "en") if named else tool.name.replace("_", " "), description=tool.description,
        tags=(desk,), input_schema=dict(tool.parameters), rate_class="write" if tool.side_effect else "query",
        idempotency_fields=fields if tool.side_effect else (), idempotency_scope=scope if tool.side_effect else "global",
        notes=(t("site.desk_note", "en"),),
        # the desk's Chinese registry says the same tool in Chinese: its description and each field's
        i18n={"zh": {"display_name": t(shown, "zh") if named else tool.name, "description": zh.description, "notes": [t("site.desk_note", "zh")],
                     "fields": said}})

    def bound(ctx: SkillContext) -> tuple[Registry, Tool]:
        state = ctx.state if desk in ctx.state else fallback
        reg = desk_registry(state, desk)  # type: ignore[arg-type]  # the site's states are plain dicts
        return reg, reg[tool.name]

    def validate(args: dict, ctx: SkillContext) -> list[Problem]:
        reg, mine = bound(ctx)
        error = reg.check_rules(tool.name, args)
        if error is not None:
            if error.code == "INVALID_ARGS":
                return list(error.problems)
            raise _as_failure(error)
        reason = mine.needs_approval(args) if mine.needs_approval is not None else None
        if reason:
            raise ToolFailure("NEEDS_APPROVAL", {lg: t("site.needs_person", lg, reason=reason) for lg in ("en", "zh")})
        return []

    def handler(args: dict, ctx: SkillContext) -> Any:
        fn: Callable[..., Any] = bound(ctx)[1].fn  # type: ignore[assignment]  # every desk tool has one
        if tool.keyed and ctx.idempotency_key is not None:
            return fn(**args, idempotency_key=ctx.idempotency_key)
        return fn(**args)

    return Skill(meta, handler, validate)


def _as_failure(error: Any) -> ToolFailure:
    failure = ToolFailure(error.code)
    failure.error = error  # the rule's own record, message and all
    return failure
