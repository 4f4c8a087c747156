"""Record a real model's replies to a file, and replay them offline, deterministically.

A cassette is JSONL, one line per model turn: what was asked (the messages and
the tool names) and what came back (a reply with its token usage, or an API
error). Replaying returns the recorded replies in order, whatever loop or guard
config asks for them, so a notebook can show real-model behaviour with no model
running, and a new guard can be tried on yesterday's replies.
"""
from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from .fakes import ScriptError
from .interface import Model, ModelCall, ModelError, Reply, ToolCall, Usage, takes_tool_choice

__all__ = ["CassetteModel", "RecordingModel", "labels", "read_cassette", "reply_from_dict", "reply_to_dict"]


def reply_to_dict(reply: Reply) -> dict:
    return {"content": reply.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
            "usage": [reply.usage.prompt_tokens, reply.usage.completion_tokens] if reply.usage else None}


def reply_from_dict(d: dict) -> Reply:
    usage = d.get("usage")
    return Reply(d.get("content"), tuple(ToolCall(c["name"], c["arguments"], c.get("id", "")) for c in d.get("tool_calls", [])),
                 Usage(*usage) if usage else None)


class RecordingModel:
    """Wraps any model and appends every turn to ``path``."""

    def __init__(self, model: Model, path: str | Path, *, label: str = ""):
        self.inner, self.path, self.label = model, Path(path), label
        self.name = getattr(model, "name", "model")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.calls: list[ModelCall] = []

    def complete(self, messages: list[dict], tools: list[dict], tool_choice: Any = None) -> Reply:
        names = [t.get("function", t).get("name", "?") for t in tools]
        self.calls.append(ModelCall(tuple(messages), tuple(names)))
        entry: dict[str, Any] = {"label": self.label, "model": self.name, "messages": messages, "tools": names}
        if tool_choice is not None:
            entry["tool_choice"] = tool_choice
        t0 = time.perf_counter()
        try:
            # the turn's tool_choice goes on to a model that takes it (the OpenAI adapter), as the loop would send it
            inner: Any = self.inner
            reply = (inner.complete(messages, tools, tool_choice=tool_choice)
                     if tool_choice is not None and takes_tool_choice(inner) else inner.complete(messages, tools))
        except ModelError as exc:
            entry["error"] = {"code": exc.code, "retry_after": exc.retry_after, "status": exc.status}
            if exc.unparsable:  # the server could not parse the model's tool call: the model's fault, not the API's
                entry["error"]["unparsable"] = True
            self._write(entry, t0)
            raise
        entry["reply"] = reply_to_dict(reply)
        self._write(entry, t0)
        return reply

    def _write(self, entry: dict, t0: float) -> None:
        entry["latency_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")


def read_cassette(path: str | Path, label: str | None = None) -> list[dict]:
    """The file's entries (``label``: that conversation's only), each a new object the caller may change."""
    lines, by_label = _index(Path(path))
    picked = range(len(lines)) if label is None else by_label.get(label, ())
    return [json.loads(lines[i]) for i in picked]


#: (path, mtime, size) -> the file's lines and each label's line numbers, for the last few files read. A replay made
#: a model per conversation, and each parsed its whole file (122 models, 9 s of a notebook's checks); now a file is
#: parsed once for its labels and a model parses its own lines. A file changed since (a recording appended) is read again.
_INDEXED: dict[tuple[str, int, int], tuple[list[str], dict[Any, list[int]]]] = {}


def _index(path: Path) -> tuple[list[str], dict[Any, list[int]]]:
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    found = _INDEXED.get(key)
    if found is None:
        # split at newlines alone: a reply that holds U+2028 is one JSON line, which splitlines() cut in two
        lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
        by_label: dict[Any, list[int]] = {}
        for i, line in enumerate(lines):
            label = json.loads(line).get("label")
            if isinstance(label, Hashable):  # a list or an object for a label names no conversation one can ask for
                by_label.setdefault(label, []).append(i)
        if len(_INDEXED) >= 16:  # the workbook's cassettes are 5 MB in all; a long session reads a few of them
            with contextlib.suppress(RuntimeError, StopIteration):  # another thread may drop the same one first
                _INDEXED.pop(next(iter(_INDEXED)), None)
        found = _INDEXED[key] = (lines, by_label)
    return found


def labels(path: str | Path) -> list[str]:
    """The recorded conversations in a cassette, in order."""
    return [label for label in _index(Path(path))[1] if isinstance(label, str)]


class CassetteModel:
    """Replays one recorded conversation (``label``) of a cassette, reply by reply."""

    def __init__(self, path: str | Path, label: str | None = None, *, then: str | None = None):
        self.entries = read_cassette(path, label)
        self.name = (self.entries[0].get("model", "replay") if self.entries else "replay") + " (replay)"
        self.then = then
        self.calls: list[ModelCall] = []

    def __repr__(self) -> str:
        return f"CassetteModel({self.name!r}, {len(self.calls)}/{len(self.entries)} used)"

    def complete(self, messages: list[dict], tools: list[dict], tool_choice: Any = None) -> Reply:
        self.calls.append(ModelCall(tuple(messages), tuple(t.get("function", t).get("name", "?") for t in tools)))
        n = len(self.calls)
        if n > len(self.entries):
            if self.then is None:
                raise ScriptError(f"the cassette has {len(self.entries)} replies; reply {n} was asked for")
            return Reply(self.then)
        e = self.entries[n - 1]
        if "error" in e:
            err = e["error"]
            exc = ModelError(err["code"], "replayed", status=err.get("status"), retry_after=err.get("retry_after"))
            exc.unparsable = bool(err.get("unparsable"))
            raise exc
        return reply_from_dict(e["reply"])
