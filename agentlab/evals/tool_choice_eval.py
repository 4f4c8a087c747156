"""What each ``tool_choice`` setting does to a model on the bookkeeping desk (docs/guards.md#tool_choice).

A few asks, each run once per setting through the guarded loop: ``auto``, ``required``, ``none`` and one
named tool (``search_expense_records``: find the record before anything else). :func:`run_choice` runs one;
:func:`summary` says what happened in one row (tools shown, the calls made, those refused, the status);
:func:`replay_choices` plays the local models' recordings (``benchmarks/bench_tool_choice_local.py``) with no model.
"""
from __future__ import annotations

import random
from pathlib import Path

from ..guards import GuardConfig
from ..models.cassette import CassetteModel, labels
from ..models.interface import Model
from ..resources import data_file
from ..runs import Run
from ..scenarios.expense import Ledger, expense_prompt, make_registry
from ..store import MemoryStore

__all__ = ["ASKS", "CHOICES", "choice_cassette", "replay_choices", "run_choice", "summary"]

ASKS = {"delete-coffee": "Delete yesterday's coffee.", "book-taxi": "I took a taxi today for 45 yuan, please book it.",
        "food-budget": "How much of my food budget is left this month?"}
CHOICES = ("auto", "required", "none", "search_expense_records")


def choice_cassette(size: str) -> Path:
    return Path(str(data_file("cassettes"))) / f"expense-tool-choice-{size}.jsonl"


def run_choice(model: Model, ask_id: str, choice: str) -> Run:
    """One ask through the guarded bookkeeping desk with ``tool_choice=choice`` for every turn."""
    from ..loop import run_guarded
    ledger = Ledger()
    registry = make_registry(ledger)
    return run_guarded(model, registry, ASKS[ask_id], tool_choice=choice, system_prompt=expense_prompt("en", state=ledger),
                       config=GuardConfig(step_budget=3), store=MemoryStore(), sleep=lambda s: None,
                       rng=random.Random(0), session_id=f"{ask_id}/{choice}")


def summary(ask_id: str, choice: str, run: Run) -> dict:
    """One row: the first move, the calls that ran, the calls the loop refused, how it ended."""
    calls = [e for e in run.tool_events if e.tool_name]
    return {"ask": ask_id, "tool_choice": choice,
            "first call": calls[0].tool_name if calls else "(words)",
            "ran": ", ".join(e.tool_name or "" for e in calls if e.exec_ok) or "-",
            "refused": sum(e.error_code == "WRONG_TOOL" for e in run.tool_events),
            "invalid": run.invalid_calls, "status": run.status}


def replay_choices(size: str) -> list[dict]:
    """Every recorded run of ``size`` again, from its cassette, through the same loop; [] when not recorded."""
    path = choice_cassette(size)
    if not path.exists():
        return []
    rows = []
    for label in labels(path):
        ask_id, choice = label.split("/", 1)
        run = run_choice(CassetteModel(path, label, then="(no more recorded replies)"), ask_id, choice)
        rows.append({"model": size, **summary(ask_id, choice, run)})
    return rows
