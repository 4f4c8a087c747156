"""Stored suite runs: save, reopen, and replay through another loop or guard config.

Saving and reopening live in stored.py (below suite.py, which saves through it); replaying runs
cases again, so it lives here, above suite.py. Every name is importable from here as before.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..guards import GuardConfig
from ..models import Reply, ScriptedModel, ToolCall
from ..runs import Run
from .stored import StoredSuite, code_version, load_results, save_results
from .suite import Case, CaseResult, run_case

__all__ = ["StoredSuite", "code_version", "load_results", "replay_results", "replies_of", "save_results"]


def replies_of(run: Run) -> list:
    """The model's replies in a run, in order, as a script (to replay them elsewhere)."""
    out = []
    for m in run.messages:
        if m.get("role") == "assistant":
            calls = tuple(ToolCall(c["function"]["name"], c["function"]["arguments"], c.get("id", ""))
                          for c in m.get("tool_calls") or [])
            out.append(Reply(m.get("content"), calls))
    return out


def replay_results(results: Sequence[CaseResult], cases: Sequence[Case], *, config: GuardConfig,
                   loop: str = "guarded") -> list[CaseResult]:
    """Replay each stored run's model replies through another loop or guard config, without the model.

    Shows what a new guard would have changed on yesterday's conversations. Where the new
    config makes the conversation go differently, the replies stop matching what was asked;
    the replay then simply plays the next recorded reply, as a cassette does.
    """
    by_id = {c.id: c for c in cases}
    out = []
    for r in results:
        script = ScriptedModel(replies_of(r.run), name=f"replay:{r.run.model}", then="(no more recorded replies)")
        out.append(run_case(by_id[r.case_id], model=script, loop=loop, config=config, trial=r.trial))
    return out
