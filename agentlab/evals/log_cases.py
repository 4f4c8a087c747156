"""What a log review shows of the logs, and a conversation of them as a candidate regression case.

Everything a report or a case takes from a team's logs goes through :func:`_shown`: secrets and technical detail
removed, personal data masked. A conversation with a finding becomes a case in the suite's format (:func:`case_of`),
its calls replayed as they were sent, their arguments still JSON where they were (:func:`_shown_args`).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import mask_personal, redact
from ..redaction import secret_field
from .logs import LogRun

CASES = 20  # candidate regression cases written

__all__ = ["case_of"]


def _shown(text: Any, limit: int = 300) -> str:
    """Log text as a report may show it: secrets and technical detail removed, personal data masked."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return mask_personal(redact(s[:limit * 4]))[:limit]


def _shown_args(text: str, limit: int) -> str:
    """A call's arguments as a case replays them: arguments that are JSON stay JSON, each string in them shown as
    :func:`_shown` shows text (and cut to :data:`_ARG_CHARS`); arguments that are not JSON, as text. Redacted and
    cut as one text, a URL took the closing quote and brace with it, and the case replayed broken JSON where the
    log had a call its schema refused."""
    try:
        value = json.loads(text)
    except ValueError:  # broken, as sent: replayed as broken
        return _shown(text, limit)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return _shown(v, _ARG_CHARS)
        if isinstance(v, list):
            return [walk(x) for x in v[:_ARG_ITEMS]]
        if isinstance(v, dict):  # a field named like a credential loses its value, as in the report's findings
            return {_shown(str(k), 200): "[secret removed]" if secret_field(k, x) else walk(x)
                    for k, x in list(v.items())[:_ARG_ITEMS]}
        return v
    try:
        shown = json.dumps(walk(value), ensure_ascii=False)
    except (RecursionError, ValueError):  # nested past what a walk can take: as text
        return _shown(text, limit)
    return shown if len(shown) <= limit else _shown(text, limit)


_ARG_CHARS, _ARG_ITEMS = 500, 100  # a string and a list or object in a case's arguments: what a replay keeps


def _obj(value: Any) -> Mapping[str, Any]:
    # (a parsed line's objects are dicts: their type is told before the Mapping ABC's slower test)
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def case_of(log: LogRun, found: list[Any]) -> dict | None:
    """A conversation as a candidate regression case in the suite's format (``found``: its findings, each a
    :class:`~agentlab.evals.log_review.LogFinding`, of which the message it was found at is read): the user's words
    as the task, what came before as history, and every assistant message after it replayed whole by a scripted model
    (each call's arguments exactly as sent, broken ones too), redacted like the report. ``{"runnable", "case"}``:
    runnable when one of the workbook's desks has every tool it calls (``eval`` runs it there); None when
    there is nothing to replay."""
    messages = log.messages
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return None
    first_bad = min((f.message for f in found if f.message is not None), default=len(messages))
    start = max((i for i in users if i <= first_bad), default=users[0])
    script: list[Any] = []
    for m in messages[start + 1:]:
        if m.get("role") != "assistant":
            continue
        calls = []
        for c in m.get("tool_calls") or ():
            fn = _obj(c.get("function")) if isinstance(c, Mapping) else {}
            raw = fn.get("arguments")
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False) if isinstance(raw, Mapping) else ""
            calls.append([_shown(str(fn.get("name") or ""), 200), _shown_args(text, 4000)])  # as sent, broken or not
        content = m.get("content") if isinstance(m.get("content"), str) else None
        script.append({"content": _shown(content, 2000) if content else None, "calls": calls})
    if not script:
        return None
    task = messages[start].get("content")
    history = [{"role": m["role"], "content": _shown(m.get("content") or "", 2000)}
               for m in messages[:start] if m.get("role") in ("user", "system")]
    names = {c[0] for s in script for c in s["calls"]}
    scenario = _scenario_for(names)
    case: dict[str, Any] = {"id": f"log-{Path(log.source).stem}-{log.line}", "category": "regression",
                            "scenario": scenario or "aftersales",
                            "task": _shown(task if isinstance(task, str) else "", 2000),
                            "expect": {"statuses": ["done", "done_after_self_correction", "escalated"]},
                            "fake": {"script": script}}
    if history:
        case["history"] = history
    case["promoted_from"] = log.where
    return {"runnable": scenario is not None, "case": case}


def _scenario_for(names: set[str]) -> str | None:
    """The desk whose tools include every tool the conversation called (a case runs there), or None."""
    for name, tools in _desk_tools().items():
        if names <= tools:
            return name
    return None


@cache
def _desk_tools() -> dict[str, frozenset[str]]:
    from ..scenarios import SCENARIOS
    return {name: frozenset(scenario.setup()[1].names) for name, scenario in SCENARIOS.items()}
