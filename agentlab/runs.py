"""The record of one run of either loop, and the statuses it can end in."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .i18n import Lang, colon, t
from .records import quick
from .trace import Event, side_by_side_html, to_html

__all__ = ["STATUSES", "Run", "Status", "compare_html"]

Status = Literal["done", "done_after_self_correction", "escalated", "budget_exhausted", "failed"]
#: ``failed`` is a crash of the naive loop; the guarded loop ends every run in one of the others.
STATUSES: tuple[Status, ...] = ("done", "done_after_self_correction", "escalated", "budget_exhausted", "failed")


@quick
@dataclass(frozen=True)
class Run:
    """The outcome of one run: status, the answer the user sees, and the full trace."""

    run_id: str
    loop: str
    model: str
    status: Status
    reason: str
    answer: str
    steps: int
    events: tuple[Event, ...]
    messages: tuple[dict, ...]
    config: str = ""
    pending: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Run({self.loop}, {self.status}, steps={self.steps}, invalid={self.invalid_calls})"

    @property
    def tool_events(self) -> list[Event]:
        return [e for e in self.events if e.kind == "tool"]

    @property
    def tool_calls(self) -> int:
        return len(self.tool_events)

    @property
    def invalid_calls(self) -> int:
        """Calls the model got wrong: unparsable, unknown tool, or invalid arguments."""
        return sum(1 for e in self.tool_events if e.parse_ok is False or e.validate_ok is False)

    @property
    def refused_by_tool(self) -> int:
        """Calls the contract let through that the tool's own checks refused (``INVALID_ARGS`` from the tool: an order
        not in a state the action needs). Not in :attr:`invalid_calls`, which counts what the contract catches: a
        page that showed only that said "0 invalid calls" above three INVALID_ARGS rows."""
        return sum(1 for e in self.tool_events
                   if e.error_code == "INVALID_ARGS" and e.parse_ok is not False and e.validate_ok is not False)

    @property
    def retries(self) -> int:
        return sum(e.retry_count for e in self.events)

    @property
    def tokens(self) -> int:
        return sum(e.prompt_tokens + e.completion_tokens for e in self.events)

    def summary(self) -> dict:
        return {"loop": self.loop, "status": self.status, "steps": self.steps, "tool_calls": self.tool_calls,
                "invalid_calls": self.invalid_calls, "retries": self.retries, "reason": self.reason,
                "answer": self.answer}

    def to_html(self) -> str:
        return to_html(self.events, f"{self.loop}: {self.status}")

    def _repr_html_(self) -> str:
        return self.to_html()


def compare_html(naive: Run, guarded: Run, lang: Lang = "en") -> str:
    """Two runs side by side, step against step; the titles, legend and roles in ``lang`` (what the model and the
    tools said stays as they said it)."""
    def title(r: Run) -> str:
        return f"{r.loop}: {r.status}" if lang == "en" else f"{t('loop.' + r.loop, lang)}{colon(lang)}{t('status.' + r.status, lang)}"

    return side_by_side_html(naive.events, guarded.events, titles=(title(naive), title(guarded)), lang=lang)
