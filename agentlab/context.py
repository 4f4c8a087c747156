"""The conversation around the loop: a system prompt built per turn, clearing, trimming in pairs.

A chat-completions history has rules the API enforces: every ``tool`` message answers a
``tool_call_id`` of the assistant message just before it, and every tool call of that
message is answered before anyone else speaks. Naive trimming ("keep the last 10
messages") cuts an assistant message from its replies and the next call is refused with
a 400. Here a history is cut only between *blocks* (a user message; an assistant message
with all of its tool replies; a plain assistant message), never inside one, and the
system prompt and the latest user message always stay (docs/guards.md#context).
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ToolFailure
from .i18n import Lang, Sentence, both, joined, t

__all__ = ["ContextTooLong", "Session", "build_system_prompt", "clear_chat", "estimate_tokens", "protocol_problems",
           "trim_messages"]

Count = Callable[[Sequence[Mapping[str, Any]]], int]


@dataclass(frozen=True)
class Session:
    """Who is asking, from where, with what rights: the facts a system prompt states each turn."""

    user_id: str = ""
    organisation: str = ""
    page: str = ""
    permissions: tuple[str, ...] = ()
    flags: Mapping[str, bool] = field(default_factory=dict)
    timezone: str = "Asia/Shanghai"


def build_system_prompt(instructions: str, session: Session, *, now: Callable[[], _dt.datetime],
                        lang: str = "en") -> str:
    """The system prompt for this turn: the standing instructions plus today's date and time (from an
    injected clock, in the session's timezone), the user, the organisation, the page, permissions and
    feature flags, said in ``lang``. Built per turn, so "yesterday" always means yesterday."""
    from zoneinfo import ZoneInfo
    lg: Lang = "zh" if lang == "zh" else "en"
    when = now().astimezone(ZoneInfo(session.timezone))
    day = t("context.weekdays", lg).split()[when.weekday()]
    facts = [t("context.now", lg, when=when, day=day, tz=session.timezone)]
    for key, value in (("user", session.user_id), ("org", session.organisation), ("page", session.page),
                       ("perm", joined(session.permissions, lg, "list")),
                       ("flags", joined((k for k, v in session.flags.items() if v), lg, "list"))):
        if value:
            facts.append(t(f"context.{key}", lg, v=value))
    return instructions.rstrip() + "\n\n" + joined(facts, lg, "sentence")


def clear_chat(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """What "clear the chat" keeps: the system prompt (the leading system messages), nothing else. (The
    business state a desk keeps for the conversation is cleared by the desk; the instructions and the
    facts about the user are not.)"""
    return _blocks(messages)[0]


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """An *estimate* of the prompt tokens of ``messages`` (no tokenizer at hand): about four characters
    a token for Latin text, one a token for CJK, plus a few tokens of framing per message. Use the
    model's own tokenizer (``count=``) where there is one."""
    total = 0
    for m in messages:
        total += 4
        for text in _texts(m):
            cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
            total += cjk + (len(text) - cjk + 3) // 4
    return total


def _texts(m: Mapping[str, Any]) -> Iterable[str]:
    content = m.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, (list, tuple)):  # list-of-parts content: its text parts are read, so they count
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                yield part["text"]
            elif isinstance(part, str):
                yield part
    for c in m.get("tool_calls") or ():
        fn = c.get("function", {}) if isinstance(c, Mapping) else {}
        yield str(fn.get("name", ""))
        yield str(fn.get("arguments", ""))


class ProtocolProblem(Sentence):
    """One thing the chat-completions API would refuse, as its English sentence (what a fake endpoint answers, as the
    real one does), and said in either language by :meth:`localized` (a Chinese log review reads it in Chinese)."""


def protocol_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the chat-completions API would refuse in ``messages`` (empty when it is valid): a tool message
    that answers no call of the assistant message before it, a tool call left unanswered, an unknown role. Each is a
    :class:`ProtocolProblem`: its English text, and :meth:`~ProtocolProblem.localized` for another language."""
    problems: list[str] = []
    # the call ids of the last assistant message: all of them (answerable), those not answered yet (waiting). Most
    # messages call nothing, and a reply calls one or two: both are lists, made only for a message with calls (a
    # review reads every message of a log through here: about 1% of its time, measured interleaved)
    answerable: list[str] = _NONE
    waiting: list[str] = _NONE
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            cid = str(m.get("tool_call_id"))
            if cid not in answerable:
                problems.append(ProtocolProblem("protocol.orphan", i=i + 1, id=repr(cid)))
            elif cid in waiting:
                waiting.remove(cid)
            continue
        if waiting:
            problems.append(ProtocolProblem("protocol.unanswered", i=i + 1, ids=str(waiting)))
        if role == "assistant" and (calls := m.get("tool_calls")):
            # (a dict asked first: Mapping is an ABC, slow to ask, and a log's calls are dicts)
            answerable = [str(c.get("id")) for c in calls if type(c) is dict or isinstance(c, Mapping)]
            waiting = answerable.copy()
        else:
            answerable = waiting = _NONE
            if role not in _ROLES:
                problems.append(ProtocolProblem("protocol.role", i=i + 1, role=repr(role)))
    if waiting:
        problems.append(ProtocolProblem("protocol.never_answered", ids=str(waiting)))
    return problems


_NONE: list[str] = []  # no call to answer (never added to: a list is made for a message that has calls)
_ROLES = frozenset(("system", "user", "developer", "assistant"))  # the roles besides "tool"


class ContextTooLong(ToolFailure):
    """The system prompt and the latest user message alone do not fit the budget."""

    def __init__(self, needed: int, budget: int):
        super().__init__("CONTEXT_TOO_LONG", both("context.too_long", needed=needed, budget=budget))
        self.needed, self.budget = needed, budget


_PROMPT_ROLES = ("system", "developer")  # what the person running the assistant says: never trimmed


def _blocks(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict], list[list[dict]]]:
    """The system prompt (the leading system and developer messages), and the rest cut into blocks that must
    stay whole.

    A system (or developer) message later in the conversation (a note about a person's decision) is a block
    of its own, kept in its place; orphan tool messages are dropped."""
    system: list[dict] = []
    blocks: list[list[dict]] = []
    open_ids: set[str] = set()
    for m in _answered(messages):
        m = dict(m)
        role = m.get("role")
        if role in _PROMPT_ROLES and not blocks:
            system.append(m)
        elif role in _PROMPT_ROLES:
            blocks.append([m])
            open_ids = set()
        elif role == "tool":
            if str(m.get("tool_call_id")) in open_ids and blocks:
                blocks[-1].append(m)  # a reply stays with the call it answers
        else:
            blocks.append([m])
            open_ids = {str(c.get("id")) for c in m.get("tool_calls") or () if isinstance(c, Mapping)} \
                if role == "assistant" else set()
    return system, blocks


def _answered(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` with every tool call answered: a call left without its reply (a crash, an old bug) gets a
    ``NOT_RUN`` reply right after its message's other replies, so no block is kept that the API would refuse."""
    from .errors import make_error, render
    out: list[Mapping[str, Any]] = []
    waiting: list[str] = []

    def close() -> None:
        for cid in waiting:
            out.append({"role": "tool", "tool_call_id": cid, "content": render(make_error("NOT_RUN"))})
        waiting.clear()

    for m in messages:
        if m.get("role") == "tool":
            cid = str(m.get("tool_call_id"))
            if cid in waiting:
                waiting.remove(cid)
            out.append(m)
            continue
        close()
        out.append(m)
        if m.get("role") == "assistant":
            waiting.extend(str(c.get("id")) for c in m.get("tool_calls") or () if isinstance(c, Mapping))
    close()
    return out


def trim_messages(messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None,
                  max_turns: int | None = None, count: Count | None = None) -> list[dict]:
    """The history cut to the last ``max_turns`` user turns and to ``max_tokens`` (by ``count``, the model's
    tokenizer, or :func:`estimate_tokens`), oldest first, whole blocks only.

    Keeps every system and developer message (the prompt at the top and the notes later on, each in its
    place) and the latest user message with what followed it; never leaves a tool message without its call
    or a call without its replies; starts the kept history at a user message. Raises
    :class:`ContextTooLong` when even that minimum does not fit.

    Linear in the history: ``count`` is called once per block it needs (the system prompt; a user message; an
    assistant message with its tool replies), so it sees each message at most once, and the total is the sum.
    A block, not a lone message: a chat template refuses an assistant message with tool calls on its own (the
    llama.cpp server answers 400). A tokenizer that adds framing to every call (a default system prompt, the
    assistant's cue) over-counts by that much per block: the history is trimmed a little early, never late.
    A history without any user message is trimmed the same way, oldest first.
    """
    count = count or estimate_tokens
    if max_turns is not None and max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    system, blocks = _blocks(messages)
    users = [i for i, b in enumerate(blocks) if b[0].get("role") == "user"]
    notes = {i for i, b in enumerate(blocks) if b[0].get("role") in _PROMPT_ROLES}
    last_user = users[-1] if users else len(blocks)  # no user message: nothing after it must stay
    first = users[-max_turns] if max_turns is not None and len(users) > max_turns else 0
    kept = [i for i in range(len(blocks)) if i >= first or i in notes]
    if max_tokens is not None:
        sizes: dict[int, int] = {}  # block -> tokens, each block counted once, on its own

        def size(i: int) -> int:
            if i not in sizes:
                sizes[i] = count(blocks[i])
            return sizes[i]

        # the latest user message and everything after it (this turn's calls and their results) must stay:
        # dropping a result the model just got would only make it call again; notes stay too
        needed = (count(system) if system else 0) + sum(size(i) for i in kept if i >= last_user or i in notes)
        if needed > max_tokens:
            raise ContextTooLong(needed, max_tokens)
        droppable = [i for i in kept if i < last_user and i not in notes]
        # drop oldest first until the rest fits: the newest blocks are counted first, so no block older
        # than the cut is ever counted (with a long history, most of it never is)
        total, keep_from = needed, len(droppable)
        while keep_from and total + size(droppable[keep_from - 1]) <= max_tokens:
            keep_from -= 1
            total += sizes[droppable[keep_from]]
        gone = set(droppable[:keep_from])
        kept = [i for i in kept if i not in gone]
    if users:
        # a history starts with what the user said: drop blocks left before the first kept user message
        # (notes excepted: they stay in place)
        start = 0
        while start < len(kept) and blocks[kept[start]][0].get("role") != "user":
            start += 1
        kept = [i for n, i in enumerate(kept) if n >= start or i in notes]
    return system + [m for i in kept for m in blocks[i]]
