"""Scenarios: a world (data), the tools over it, and a system prompt, as one value.

    base.py        the Scenario record every loop, suite and notebook works with
    aftersales.py  the after-sales (refund) desk (docs/sources.md#article-000-the-refund-desk)
    expense.py     the bookkeeping (expense) desk (docs/sources.md#article-003-the-expense-booking-agent)
    retail.py      tau-bench's retail store, for evaluation against its oracle

A new desk is a new module here and one line in :data:`SCENARIOS`.
"""
from __future__ import annotations

from .aftersales import SCENARIO as AFTERSALES
from .base import Scenario
from .expense import SCENARIO as EXPENSE

__all__ = ["SCENARIOS", "Scenario", "get"]

SCENARIOS: dict[str, Scenario] = {"aftersales": AFTERSALES, "expense": EXPENSE}


def get(name: str) -> Scenario:
    """The scenario called ``name``; a ValueError that lists the known ones otherwise."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known scenarios: {', '.join(SCENARIOS)}") from None
