"""The desks' tools as skills: the after-sales desk and the bookkeeping desk, bound to one state per site.

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
from ..i18n import t
from ..scenarios import aftersales, expense
from ..tools import Registry, Tool
from .skills import Skill, SkillContext, SkillMeta

__all__ = ["DESK_FIELDS", "desk_skills", "desk_state"]

#: the arguments that make a repeat the same write (what the desks' business_key reads)
DESK_FIELDS: dict[str, tuple[tuple[str, ...], Literal["global", "session"]]] = {
    "create_refund": (("order_id",), "global"),
    "book_expense_record": (("date", "amount", "category"), "session"),
    "delete_expense_record": (("record_id",), "global"),
    "set_budget": (("category", "month", "amount"), "session"),
}


def desk_state() -> dict[str, Any]:
    """One fresh state per site: the desk and the ledger every call of the site shares."""
    return {"aftersales": aftersales.Desk(), "expense": expense.Ledger()}


def desk_skills(state: dict[str, Any]) -> list[Skill]:
    """Both desks' tools as skills over ``state`` (see :func:`desk_state`)."""
    regs = {"aftersales": (aftersales.make_registry(state["aftersales"]), aftersales.make_registry(state["aftersales"], lang="zh")),
            "expense": (expense.make_registry(state["expense"]), expense.make_registry(state["expense"], lang="zh"))}
    skills: dict[str, Skill] = {}
    for desk, (reg, zh) in regs.items():
        for tool in reg:
            name = tool.name if tool.name not in skills else f"{desk}_{tool.name}"
            skills[name] = _skill(name, desk, tool, reg, zh[tool.name])
    return list(skills.values())


def _skill(name: str, desk: str, tool: Tool, reg: Registry, zh: Tool) -> Skill:
    fields, scope = DESK_FIELDS.get(tool.name, ((), "session"))  # no business key: all arguments, per session
    meta = SkillMeta(
        skill_name=name, display_name=tool.name.replace("_", " "), description=tool.description,
        tags=(desk,), input_schema=dict(tool.parameters), rate_class="write" if tool.side_effect else "query",
        idempotency_fields=fields if tool.side_effect else (), idempotency_scope=scope if tool.side_effect else "global",
        notes=("generated from the desk's registry: same name, schema and business rules",),
        i18n={"zh": {"display_name": tool.name.replace("_", " "), "description": zh.description}})

    def validate(args: dict, ctx: SkillContext) -> list[Problem]:
        error = reg.check_rules(tool.name, args)
        if error is not None:
            if error.code == "INVALID_ARGS":
                return list(error.problems)
            raise _as_failure(error)
        reason = tool.needs_approval(args) if tool.needs_approval is not None else None
        if reason:
            raise ToolFailure("NEEDS_APPROVAL", {lg: t("site.needs_person", lg, reason=reason) for lg in ("en", "zh")})
        return []

    fn: Callable[..., Any] = tool.fn  # type: ignore[assignment]  # every desk tool has one

    def handler(args: dict, ctx: SkillContext) -> Any:
        if tool.keyed and ctx.idempotency_key is not None:
            return fn(**args, idempotency_key=ctx.idempotency_key)
        return fn(**args)

    return Skill(meta, handler, validate)


def _as_failure(error: Any) -> ToolFailure:
    failure = ToolFailure(error.code)
    failure.error = error  # the rule's own record, message and all
    return failure
