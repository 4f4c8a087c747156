"""The model protocol and the records of what a model said.

Every model has one method, ``complete(messages, tools) -> Reply``. A failing
model API raises :class:`ModelError`, whose ``code`` says whether a resend can
help. This module is all the loops need to know about models; the fakes, the
fault injector and the real adapters live beside it in :mod:`agentlab.models`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import CODES, ToolError, make_error, retry_seconds
from ..i18n import LANGS, both, t
from ..records import quick

__all__ = ["Model", "ModelCall", "ModelError", "Reply", "ToolCall", "ToolChoice", "Usage", "call", "content_text", "say",
           "takes_tool_choice", "tool_calls"]

#: how much autonomy a turn has: "auto", "required", "none", or the name of one tool
ToolChoice = str


@quick
@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model wrote it: ``arguments`` is the raw string."""

    name: str
    arguments: str
    id: str = ""

    def __repr__(self) -> str:
        return f"{self.name}({self.arguments})"

    def to_dict(self) -> dict:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@quick
@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@quick
@dataclass(frozen=True)
class Reply:
    """One assistant turn: text, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None

    def __repr__(self) -> str:
        if self.tool_calls:
            return "Reply(" + ", ".join(map(repr, self.tool_calls)) + ")"
        return f"Reply({self.content!r})"

    def message(self) -> dict:
        """The assistant message to append to the history (OpenAI format)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return msg


class ModelError(Exception):
    """The model API failed. ``code`` is an errors.CODES key (RATE_LIMITED, TIMEOUT, ...).

    ``detail`` is for telemetry only; the end user sees :func:`~agentlab.errors.friendly`.
    ``retry_after`` may be a header's text ("5"); NaN, negative, unreadable or absurd
    values become None (unknown), see :func:`~agentlab.errors.retry_seconds`.
    ``said`` names the catalogue sentence (:mod:`agentlab.i18n`) that says what went wrong in
    either language (an unreadable reply, say), filled in with ``fields``.
    """

    def __init__(self, code: str, detail: str = "", *, status: int | None = None,
                 retry_after: float | str | None = None, said: str | None = None, **fields: Any):
        if code not in CODES:
            raise ValueError(f"unknown code {code!r}")
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code, self.detail, self.status = code, detail, status
        self.retry_after: float | None = retry_seconds(retry_after)
        self.attempts = 0  # > 0: a lower layer (the OpenAI adapter) already resent it that many times
        self.unparsable = False
        self.said, self.fields = said, fields

    @property
    def transient(self) -> bool:
        return CODES[self.code][0] == "transient"

    def to_error(self) -> ToolError:
        """The failure as a ToolError record; end users only ever see ``friendly()`` of it."""
        if self.said is not None:
            return make_error(self.code, retry_after=self.retry_after,
                              message={lang: t(self.said, lang, **self.fields) for lang in LANGS})
        return make_error(self.code, retry_after=self.retry_after,
                          message=both("model.said.the_model_api_failed", code=self.code))


class Model(Protocol):
    """Anything with a ``name`` and ``complete(messages, tools) -> Reply`` is a model.

    ``messages`` and ``tools`` are in OpenAI's chat format. A failing API raises
    :class:`ModelError`; anything else a model raises ends a guarded run as ``MODEL_ERROR``.
    """

    name: str

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply: ...


def call(name: str, args: dict | str | None = None, *, id: str | None = None) -> ToolCall:
    """A tool call; ``args`` may be a dict or a raw (possibly broken) string."""
    raw = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
    return ToolCall(name, raw, id or "")  # a scripted model numbers unnamed calls, per instance


def tool_calls(*calls: ToolCall, content: str | None = None) -> Reply:
    """A reply holding one or more tool calls."""
    return Reply(content, tuple(calls))


def say(text: str) -> Reply:
    """A final text reply."""
    return Reply(text)


@dataclass(frozen=True)
class ModelCall:
    """What a model was asked: a snapshot of the messages and the tool names."""

    messages: tuple[dict, ...]
    tools: tuple[str, ...]


def takes_tool_choice(model: Any) -> bool:
    """Whether ``model.complete`` accepts ``tool_choice=`` (the OpenAI adapter does; a fake need not)."""
    import inspect
    try:
        return "tool_choice" in inspect.signature(model.complete).parameters
    except (TypeError, ValueError):
        return False


def content_text(content: Any) -> str | None:
    """A message's content as text: a string as it is, list-of-parts content (``[{"type": "text", "text": ...}]``)
    as its text parts joined, nothing (None, or no text part) as None; anything else as its ``str()``."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else getattr(p, "text", None)
                 for p in content]
        joined = "".join(x for x in texts if isinstance(x, str))
        return joined or None
    return str(content)
