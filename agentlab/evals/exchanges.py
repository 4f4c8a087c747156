"""How chat-completions exchanges are read as conversations (:mod:`agentlab.evals.logs`, the ``openai`` format): a
streamed reply's chunks joined into the reply they make, and each exchange joined to the conversation it goes on.
Plain functions of the messages a log holds: the reader that names the file and the line is logs.py's."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..jsonutil import UNREAD, quick_loads

__all__ = ["OPEN_EXCHANGES", "answered", "assembled", "continues", "is_chunk", "prefix_keys", "said_done", "told_code", "unindex",
           "went_on"]


#: conversations an exchange log may hold open at once (a service's users talking at the same time); past it, the
#: one that began first is counted as it is, and a later exchange of it begins a conversation of its own
OPEN_EXCHANGES = 256


def prefix_keys(messages: Sequence[dict]) -> list[int]:
    """A key of each beginning of ``messages`` (the first message, the first two...), by role and text: what
    :func:`continues` compares, so that the conversation an exchange goes on is looked up, not searched for."""
    keys: list[int] = []
    key = 0
    for m in messages:
        content = m.get("content")
        text = content if content is None or type(content) is str else json.dumps(content, sort_keys=True, default=str)
        key = hash((key, m.get("role"), text))
        keys.append(key)
    return keys


def unindex(ends: dict[int, list[int]], key: int, began: int) -> None:
    """``began`` no longer held under ``key`` (a key none holds is dropped: a long log leaves none behind)."""
    both = ends[key]
    both.remove(began)
    if not both:
        del ends[key]


def went_on(held: dict[int, Any], ends: dict[int, list[int]], keys: list[int], messages: tuple[dict, ...]) -> int | None:
    """The held conversation ``messages`` goes on (the longest, when two would do), or None."""
    for k in range(len(keys) - 2, -1, -1):
        for began in ends.get(keys[k], ()):
            if len(held[began].messages) == k + 1 and continues(held[began].messages, messages):
                return began
    return None


def is_chunk(d: Any) -> bool:
    """Whether ``d`` is one chunk of a streamed reply (``chat.completion.chunk``: its choices hold deltas)."""
    if not isinstance(d, dict):
        return False
    choices = d.get("choices")
    return d.get("object") == "chat.completion.chunk" or (
        isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict) and "delta" in choices[0])


def assembled(chunks: list) -> dict | None:
    """A streamed reply, logged as its chunks, as the one response they make (as the SDK's stream helper joins
    them): the first choice's text, and each tool call by its index, its name and arguments joined piece by piece;
    the usage and the time the chunks carry. Read as no response at all, a streamed reply's calls were never counted
    nor checked, and the review said nothing was wrong."""
    if not all(is_chunk(c) for c in chunks):  # a list of something else: the reader says so (None)
        return None
    text: list[str] = []
    calls: dict[Any, dict] = {}  # index -> the call so far, in the order the indexes first came
    legacy: dict | None = None  # function calling as the API had it before tool calls
    usage = created = None
    for chunk in chunks:
        created = chunk.get("created") if created is None else created
        if isinstance(chunk.get("usage"), dict):  # the last chunk's, when the stream was asked to include it
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) and choice.get("index", 0) == 0 else None
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for piece in delta.get("tool_calls") or ():
                if not isinstance(piece, dict):
                    continue
                at = piece.get("index", 0)
                at = at if isinstance(at, int | str) else 0
                call = calls.setdefault(at, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                if piece.get("id") and not call["id"]:
                    call["id"] = piece["id"]
                _join(call["function"], piece.get("function"))
            if isinstance(delta.get("function_call"), dict):
                legacy = legacy or {"name": "", "arguments": ""}
                _join(legacy, delta["function_call"])
    message: dict[str, Any] = {"content": "".join(text) if text or not (calls or legacy) else None}
    if calls:
        message["tool_calls"] = [{**c, "id": c["id"] or f"call_{i}"} for i, c in enumerate(calls.values())]
    elif legacy is not None:
        message["function_call"] = legacy
    return {"choices": [{"message": message}], "usage": usage, "created": created}


def _join(into: dict, piece: Any) -> None:
    """A function's name and arguments, one piece of each more (a stream sends them in pieces)."""
    if isinstance(piece, dict):
        for key in ("name", "arguments"):
            if isinstance(piece.get(key), str):
                into[key] += piece[key]


def continues(before: tuple[dict, ...], after: tuple[dict, ...]) -> bool:
    """Whether ``after`` (a request's history plus its reply) goes on from ``before``: it is longer and
    repeats it from the start. Compared by role and text only: a log may re-serialise a message."""
    if len(after) <= len(before):
        return False
    return all(a.get("role") == b.get("role") and a.get("content") == b.get("content") for a, b in zip(before, after, strict=False))


#: how a tool's answer says it failed, as text: "Error: ...", and the OpenAI Agents SDK's own words for a tool that raised
_FAILED_TEXT = ("error", "an error occurred while running the tool")


def _loads(text: str) -> Any:
    """``json.loads(text)``, read by orjson where the two agree (an answer is read on every call a review checks)."""
    value = quick_loads(text)
    return json.loads(text) if value is UNREAD else value


def _failed_text(text: str) -> bool:
    return text.lstrip().lower().startswith(_FAILED_TEXT)


def said_done(content: Any) -> bool:
    """Whether a tool message says in so many words that the tool did it: a JSON object with ``"ok": true`` or
    ``"success": true``, or a JSON object of what it did (``{"refund_id": "R7", ...}``, as an unguarded loop passes a
    tool's result on) with none of :func:`answered`'s marks of a failure. Stricter than :func:`answered`, which takes
    any text not opening with "error" as done (a refusal written as a sentence, 退款失败：金额超过上限，未执行, is text too)."""
    if isinstance(content, str):
        try:
            content = _loads(content)
        except (ValueError, RecursionError):
            return False
    return isinstance(content, dict) and (content.get("ok") is True or content.get("success") is True
                                          or (bool(content) and "ok" not in content and "success" not in content
                                              and _value_ran(content)))


def told_code(content: Any, codes: Any) -> str | None:
    """The error code a tool's answer names, one of ``codes`` (``{"ok": false, "error": {"code": "TIMEOUT"}}``, as a
    guarded desk answers), else None: what a telemetry row logs as its ``error_code``, in a conversation's words."""
    if isinstance(content, str):
        if '"code"' not in content:  # (most answers: never parsed)
            return None
        try:
            content = _loads(content)
        except (ValueError, RecursionError):
            return None
    error = content.get("error") if isinstance(content, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and code in codes else None


def answered(content: Any) -> bool:
    """Whether a tool message says the tool ran. Not: ``{"ok": false}``, ``{"success": false}``, an ``error`` that
    holds something, ``errors`` listed, ``{"status": "error"}``, MCP's ``{"isError": true}``, a text opening with
    "error" or with the Agents SDK's "An error occurred while running the tool". ``{"ok": true, "error": null}`` ran."""
    if not isinstance(content, str):
        return _value_ran(content)
    if "rror" not in content and '"ok"' not in content and '"success"' not in content and '"status"' not in content \
            and "\\" not in content and content.lstrip()[:1] not in ("e", "E"):
        # none of those keys can be in it (a key is written as it reads: no escape), and no case of it opens with
        # "error": whatever it parses to, or does not, the tool ran. Most answers, never parsed.
        return True
    return _text_ran(content)


def _text_ran(text: str) -> bool:
    """:func:`answered` of a text, parsed every time (its fast path's reference)."""
    try:
        value = _loads(text)
    except (ValueError, RecursionError):
        return not _failed_text(text)
    return not _failed_text(value) if isinstance(value, str) else _value_ran(value)  # a JSON string: its text


def _value_ran(value: Any) -> bool:
    if not isinstance(value, dict):
        return True
    errors = value.get("errors")
    return not (value.get("ok") in (False, "false") or value.get("success") in (False, "false")
                or value.get("isError") is True or value.get("error") not in (None, False, "", {}, [])
                or (isinstance(errors, list) and bool(errors)) or value.get("status") in ("error", "failed", "failure"))
