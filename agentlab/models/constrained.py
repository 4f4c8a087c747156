"""Prevention beside repair: the local model's tool calls constrained by a grammar while it writes them.

The llama.cpp server can restrict each next token to those a grammar allows. Here the grammar says:
either one or more fenced ``json`` blocks, each ``{"name": <one of the tools>, "arguments": <that tool's
schema, closed>}``, or a plain answer in words (so "no call" stays possible: a question no tool fits
must not be forced into a call). The prompt is the one the unconstrained model gets: the server renders
the same chat template with the same tools (``/apply-template``), and only decoding differs.

What a grammar can prevent is what a grammar can say: broken JSON, a misspelt tool or field name, a
wrong type, a value outside an enum or a range. What it cannot: the wrong tool among valid ones, a
wrong value of the right type, a missing intent. And it can make things worse: a model that wanted to
add a field the schema does not have is made to go on with the value it was writing, and a number can
run on until the token limit. The comparison with validate-and-reask is measured, not assumed
(``benchmarks/bench_bfcl_local.py``, notebook 18).

Why not ``tool_choice="required"`` or ``response_format`` beside ``tools``: with tools the server adds
its own lazy grammar for tool calls, and the build in requirements-local.txt aborts when a second
grammar meets it (``llama-grammar.cpp: fatal error``). Rendering the prompt first and completing it
with our grammar alone avoids that, and works on any llama.cpp server with llguidance.
"""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .interface import ModelCall, ModelError, Reply, ToolCall, Usage
from .openai_model import clean_messages

__all__ = ["ConstrainedModel", "call_grammar", "call_schema", "parse_fenced", "post_json"]

_BLOCK = re.compile(r"```json\s*\n(.*?)(?:\n```|\Z)", re.S)


def post_json(root: str, path: str, body: dict, *, timeout: float) -> dict:
    """POST ``body`` to the llama.cpp server at ``root`` (``/completion``, ``/apply-template``...); its failures as
    :class:`ModelError` (a 4xx BAD_REQUEST, no answer in time TIMEOUT, anything else UNAVAILABLE)."""
    req = urllib.request.Request(root + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # a loopback URL we were given
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        code = "BAD_REQUEST" if 400 <= exc.code < 500 else "UNAVAILABLE"
        raise ModelError(code, f"HTTP {exc.code} from {path}", status=exc.code) from None
    except TimeoutError:
        raise ModelError("TIMEOUT", f"no answer from {path} in {timeout} s") from None
    except (OSError, ValueError) as exc:
        raise ModelError("UNAVAILABLE", f"{type(exc).__name__} from {path}") from None


def call_schema(spec: Mapping[str, Any]) -> dict:
    """The JSON Schema of one call of the tool ``spec`` (OpenAI format): its name, then its arguments, closed."""
    fn = spec.get("function", spec)
    params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
    params.setdefault("type", "object")
    params.setdefault("additionalProperties", False)
    return {"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
            "required": ["name", "arguments"], "additionalProperties": False}


def call_grammar(tools: Sequence[Mapping[str, Any]], *, allow_text: bool = True) -> str:
    """An llguidance grammar: fenced calls of the given tools, one after another, or (``allow_text``) words."""
    calls = [call_schema(s) for s in tools]
    one = calls[0] if len(calls) == 1 else {"anyOf": calls}
    lines = ["%llguidance {}",
             'start: block ("\\n" block)*' + (" | answer" if allow_text else ""),
             'block: "```json\\n" call "\\n```"',
             "call: %json " + json.dumps(one, ensure_ascii=False)]
    if allow_text:
        lines.append("answer: /[^`][^\\x00]*/")  # any text that does not start a fence
    return "\n".join(lines) + "\n"


def parse_fenced(text: str) -> tuple[str | None, tuple[ToolCall, ...]]:
    """The calls in a constrained reply, and the text left when there are none.

    A block cut off by the token limit is kept as a call with its cut arguments (the guard then says
    BAD_JSON), so a runaway value counts as the model's failure, never as "no call"."""
    calls = []
    for raw in _BLOCK.findall(text):
        name, args = _split_call(raw)
        if name is not None:
            calls.append(ToolCall(name, args, f"call_{uuid.uuid4().hex[:8]}"))
    if calls:
        return None, tuple(calls)
    return text.strip() or None, ()


def _split_call(raw: str) -> tuple[str | None, str]:
    try:
        obj = json.loads(raw)
    except ValueError:
        m = re.match(r'\s*\{\s*"name"\s*:\s*"([^"]*)"\s*,\s*"arguments"\s*:\s*(.*)\Z', raw, re.S)
        return (m.group(1), m.group(2)) if m else (None, raw)
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None, raw
    return obj["name"], json.dumps(obj.get("arguments", {}), ensure_ascii=False)


class ConstrainedModel:
    """A llama.cpp server's model whose tool calls are constrained by :func:`call_grammar`, or (``grammar=False``)
    not constrained at all.

    ``complete(messages, tools)`` like any model: the server renders the prompt with the tools (the chat
    template), then completes it at temperature 0, under the grammar or free; the fenced calls are parsed
    here. ``grammar=False`` is the baseline the grammar is measured against: the same prompt, and what the
    model writes, unchanged. (The server's chat endpoint is not that baseline: once a reply starts a tool
    call, llama.cpp constrains the arguments to the tool's schema with a grammar of its own, lazily, so an
    enum or a type is already forced there.)
    """

    def __init__(self, base_url: str, *, grammar: bool = True, name: str | None = None, max_tokens: int = 256,
                 timeout: float = 900.0, allow_text: bool = True):
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.grammar, self.max_tokens, self.timeout, self.allow_text = grammar, max_tokens, timeout, allow_text
        self.name = name or ("local (constrained)" if grammar else "local (free)")
        self.calls: list[ModelCall] = []

    def __repr__(self) -> str:
        return f"ConstrainedModel({self.root!r}, grammar={self.grammar})"

    def _post(self, path: str, body: dict) -> dict:
        return post_json(self.root, path, body, timeout=self.timeout)

    def complete(self, messages: list[dict], tools: list[dict], tool_choice: Any = None) -> Reply:
        self.calls.append(ModelCall(tuple(messages), tuple(t.get("function", t).get("name", "?") for t in tools)))
        body: dict[str, Any] = {"messages": clean_messages(messages)}  # a broken call in the history would be a 500
        if tools:
            body["tools"] = tools
        prompt = self._post("/apply-template", body)["prompt"]
        req: dict[str, Any] = {"prompt": prompt, "temperature": 0, "n_predict": self.max_tokens}
        if tools and self.grammar:
            req["grammar"] = call_grammar(tools, allow_text=self.allow_text)
        out = self._post("/completion", req)
        text = str(out.get("content") or "")
        content, calls = parse_fenced(text) if tools else (text, ())
        usage = Usage(int(out.get("tokens_evaluated") or 0), int(out.get("tokens_predicted") or 0))
        return Reply(content, calls, usage)
