"""A chat with a desk over several user turns: what an app keeps between turns, done right and naively.

Guarded (as the bookkeeping desk does it): the system prompt is rebuilt every turn (today's date from the desk's
clock, who the user is); the history is trimmed in whole blocks to a token budget before it is
sent; with more than ten tools each turn offers the few it needs; "clear" keeps the system
prompt and starts a new session (the pending confirmations and the "booked once" memory are
the conversation's, the books are not).

Naive, as found in the wild: the prompt says the date it was written on; the history is cut to
the last ``keep_last`` messages whatever they are; "clear" empties everything, system prompt
included. Each of those is one lesson of notebook 12.
"""
from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from ..context import ContextTooLong, Count, Session, clear_chat, estimate_tokens, trim_messages
from ..errors import friendly
from ..guards import GuardConfig
from ..i18n import Lang
from ..loop import run_guarded
from ..models.interface import Model
from ..naive import run_naive
from ..routing import Router
from ..runs import Run
from ..store import MemoryStore, Store
from ..tools import Registry
from ..trace import Event
from .base import Scenario

__all__ = ["ROUTE_ABOVE", "Conversation"]

#: Route tools when a desk has more than this many (item 5 of the pre-launch checklist, docs/metrics.md#the-pre-launch-checklist).
ROUTE_ABOVE = 10


class Conversation:
    """One user's chat with ``scenario``'s desk through ``loop`` ("guarded" or "naive").

    Args:
        max_tokens, max_turns, count: the guarded desk's trimming budget (see
            :func:`agentlab.context.trim_messages`); ``count`` is the model's tokenizer if it has one.
        keep_last: the naive desk's trimming: the last N messages, cut anywhere.
        route_k: tools offered per turn when the desk has more than :data:`ROUTE_ABOVE`; 0 shows all.
        history: messages of an earlier part of this chat (a suite's long conversation).
        sleep, rng, clock: the loop's waits, jitter and stopwatch (injected: a check or a test times a turn
            without waiting for it).
    """

    def __init__(self, scenario: Scenario, model: Model, *, loop: Literal["guarded", "naive"] = "guarded",
                 lang: Lang = "en", state: Any = None, registry: Registry | None = None,
                 session: Session | None = None, config: GuardConfig | None = None, store: Store | None = None,
                 max_tokens: int | None = None, max_turns: int | None = None, count: Count | None = None,
                 keep_last: int | None = 10, route_k: int = 5, history: list[dict] | None = None,
                 session_id: str | None = None, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None, clock: Callable[[], float] = time.perf_counter):
        if loop not in ("guarded", "naive"):
            raise ValueError(f"loop must be 'guarded' or 'naive', got {loop!r}")
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if keep_last is not None and keep_last < 1:
            raise ValueError(f"keep_last must be at least 1 (or None: keep everything), got {keep_last}")
        for i, m in enumerate(history or ()):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise ValueError(f"history[{i}] is not a chat message (a dict with a role): {str(m)[:60]}")
        self.scenario, self.model, self.loop, self.lang = scenario, model, loop, lang
        if state is None:
            state, registry = scenario.setup(lang)
        self.state = state
        self.registry = registry if registry is not None else scenario.make_registry(state, lang=lang)
        self.session = session
        budget = scenario.step_budget
        policy = scenario.guards if scenario.guards is not None else GuardConfig()
        self.config = config if config is not None else (replace(policy, step_budget=budget) if budget else policy)
        self.store = store if store is not None else MemoryStore()
        self.max_tokens, self.max_turns, self.count, self.keep_last = max_tokens, max_turns, count, keep_last
        self.router = (Router(self.registry, k=route_k, always=[n for n in ("escalate_to_human",) if n in self.registry.names])
                       if route_k and len(self.registry) > ROUTE_ABOVE else None)
        self.session_id = session_id or uuid.uuid4().hex[:12]
        self.sleep, self.rng, self.clock = sleep, rng or random.Random(0), clock
        # the naive desk's prompt is written once, with the date of the day it was written
        self._naive_prompt = scenario.prompt(lang, state=state, naive=True) if loop == "naive" else ""
        self.messages: list[dict] = [dict(m) for m in history] if history else []
        self.runs: list[Run] = []
        self.counted_by = "the model's tokenizer" if count is not None else "estimate"

    def __repr__(self) -> str:
        return f"Conversation({self.scenario.name}, {self.loop}, {len(self.runs)} turns)"

    def system_prompt(self) -> str:
        """The system prompt the next turn will send."""
        if self.loop == "naive":
            return self._naive_prompt
        return self.scenario.prompt(self.lang, state=self.state, session=self.session)

    def ask(self, text: str) -> Run:
        """One user turn; the run's messages become the history of the next."""
        run = self._naive(text) if self.loop == "naive" else self._guarded(text)
        self.messages = [dict(m) for m in run.messages]
        self.runs.append(run)
        return run

    def clear(self) -> None:
        """The user pressed "clear the chat"."""
        if self.loop == "naive":
            self.messages, self._naive_prompt = [], ""  # the system prompt goes too: the bug
            return
        self.messages = clear_chat(self.messages)
        self.session_id = uuid.uuid4().hex[:12]  # a new conversation: its confirmations and "booked once" start over

    def _guarded(self, text: str) -> Run:
        prompt = self.system_prompt()
        rest = self.messages[len(clear_chat(self.messages)):]  # this turn's prompt replaces the old one
        wanted = [{"role": "system", "content": prompt}, *rest, {"role": "user", "content": text}]
        try:
            kept = trim_messages(wanted, max_tokens=self.max_tokens, max_turns=self.max_turns, count=self._count())
        except ContextTooLong as exc:
            return self._refused(exc, wanted)
        return run_guarded(self.model, self.registry, text, config=self.config, store=self.store, system_prompt=prompt,
                           history=kept[:-1], sleep=self.sleep, rng=self.rng, session_id=self.session_id,
                           lang=self.lang, offer=self.router, clock=self.clock)

    def _count(self) -> Count | None:
        """The model's tokenizer, or, when it cannot be reached this turn, the labelled estimate (noted once)."""
        if self.count is None:
            return None
        counter = self.count

        def count(messages: Any) -> int:
            try:
                return counter(messages)
            except Exception:  # noqa: BLE001 - a tokenizer that is down must not take the chat down with it
                self.counted_by = "estimate (the tokenizer could not be reached)"
                return estimate_tokens(messages)
        return count

    def _naive(self, text: str) -> Run:
        history = self.messages
        if self.keep_last is not None and len(history) > self.keep_last:
            history = history[-self.keep_last:]  # "keep the last 10 messages": cut wherever that falls
        return run_naive(self.model, self.registry, text, system_prompt=self._naive_prompt if not history else "",
                         history=history, session_id=self.session_id)

    def _refused(self, exc: ContextTooLong, messages: list[dict]) -> Run:
        """The turn that could not be sent: said plainly to the user, nothing run."""
        run_id = uuid.uuid4().hex[:12]
        turn = sum(1 for m in messages if m.get("role") == "user")
        answer = friendly(exc.error, self.lang)  # the user reads a sentence; the trace keeps the detail
        end = Event(run_id=run_id, session_id=self.session_id, turn_id=turn, round_index=0, kind="end", loop="guarded",
                    guard_config=self.config.label, final_status="escalated", error_code="CONTEXT_TOO_LONG",
                    error_category="fatal", error_stage="execution", note=exc.error.text("en"), model_visible=answer)
        return Run(run_id, "guarded", str(getattr(self.model, "name", "model")), "escalated", "context too long", answer,
                   0, (end,), tuple(messages), self.config.label)
