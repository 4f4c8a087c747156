"""Real models through any OpenAI-compatible endpoint, behind the same ``complete()`` as the fakes.

This is the model-call wrapper of docs/failures.md#model-api-failures: the request is unchanged; around
it, every ``openai`` exception is classified, transient ones are resent with
exponential backoff and full jitter (never sooner than the server's ``Retry-After``; one
longer than the policy's ``longest_wait`` stops at once with the wait recorded),
fatal ones never are, and the end user only ever sees a friendly sentence
(:func:`agentlab.errors.friendly`); the technical detail stays in telemetry.

The client's own retries are switched off (``max_retries=0``): one retry layer,
so a 429 is not resent 3 × 3 times. ``ModelError.attempts`` tells the loop the
failure was already retried here, and the guarded loop does not resend it again.

A reply is read only if it is one: an answer that is not a chat completion (an HTML login page from a proxy,
no ``choices``, no message) is a ``ModelError`` with a sentence in both languages, never an empty final
answer; an answer larger than ``max_reply_bytes`` (after decompression: a gzip bomb) is not read; an
answer that trickles in is cut at ``timeout`` (each attempt, connect to last byte, not per read). Every
string the model wrote (ids, names, arguments, text) loses its lone surrogates here, since it goes back
to the API in the next request's history.

Configuration, by argument or environment variable:
``AGENTLAB_BASE_URL`` (or ``OPENAI_BASE_URL``), ``AGENTLAB_API_KEY`` (or
``OPENAI_API_KEY``), ``AGENTLAB_MODEL``. Works with OpenAI, DeepSeek,
Qwen/DashScope, Huawei Cloud MaaS, Ollama, vLLM and llama.cpp servers.
"""
from __future__ import annotations

import json
import math
import os
import random
import re
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from ..jsonutil import escape_surrogates
from ..retry import RetryPolicy
from ..schema import transform
from .interface import ModelCall, ModelError, Reply, ToolCall, ToolChoice, Usage, content_text

__all__ = ["DEFAULT_BASE_URL", "OpenAIModel", "classify", "clean_messages", "endpoint_problem", "strict_spec",
           "to_reply"]

MAX_REPLY_BYTES = 8 * 2**20  # a chat completion is kilobytes; megabytes are a bomb or a mistake

_PARSE_FAILURE = re.compile(r"pars(e|ing)|tool.?call|invalid.*json|grammar", re.I)


def classify(exc: BaseException) -> ModelError:
    """Any exception from the ``openai`` client as a ModelError with the right code."""
    import openai
    detail = f"{type(exc).__name__}: {exc}"[:500]
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc.__cause__, ModelError):  # said while the answer was read (too large, too slow), then wrapped
        return exc.__cause__
    if isinstance(exc, openai.APITimeoutError):
        return ModelError("TIMEOUT", detail)
    if isinstance(exc, openai.APIConnectionError):
        return ModelError("UNAVAILABLE", detail)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = str(getattr(exc, "message", "")) + " " + json.dumps(getattr(exc, "body", None) or {}, default=str)
        if status == 429:
            return ModelError("RATE_LIMITED", detail, status=status, retry_after=_retry_after(exc))
        if status == 401:
            return ModelError("UNAUTHENTICATED", detail, status=status)
        if status == 403:
            return ModelError("PERMISSION_DENIED", detail, status=status)
        if status == 404:
            return ModelError("NOT_FOUND", detail, status=status)
        if status in (400, 413, 422) and re.search(r"context|maximum.*tokens|too long|too many tokens", text, re.I):
            return ModelError("CONTEXT_TOO_LONG", detail, status=status)
        if status >= 500 or status == 408:
            err = ModelError("UNAVAILABLE", detail, status=status, retry_after=_retry_after(exc))
            err.unparsable = bool(_PARSE_FAILURE.search(text))  # llama.cpp: "failed to parse tool call"
            return err
        return ModelError("BAD_REQUEST", detail, status=status)
    return ModelError("UNAVAILABLE", detail)


def _retry_after(exc: Any) -> float | None:
    """The server's Retry-After in seconds: ``retry-after-ms``, seconds, or an HTTP date (RFC 9110)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            seconds = math.nan
        if not math.isnan(seconds):
            return max(seconds, 0.0)
        if name == "retry-after-ms":
            # milliseconds are a number or nothing: an unreadable one leaves the word to Retry-After,
            # which may still ask for a wait (ignoring it could resend sooner than the server asked)
            continue
        try:  # a date is as binding as a number of seconds: ignoring it could resend too soon
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None  # unreadable: our own backoff decides
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max((when - datetime.now(UTC)).total_seconds(), 0.0)
    return None



_TLS: dict[tuple[str | None, str | None], Any] = {}
_TLS_LOCK = threading.Lock()


#: where the ``openai`` client sends its requests when no base URL is set
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def endpoint_problem(base_url: str | None = None, *, timeout: float = 5.0) -> tuple[str, dict[str, Any]] | None:
    """None when something accepts a connection at the model's address (``base_url``, else the environment's, else
    OpenAI's), else one line's catalogue key and fields: ``cli.model_address`` for an address a client cannot use
    (:func:`~agentlab.models.address.model_address`), ``cli.model_unreachable`` for one where nothing answers.

    Why before a run: against an endpoint that cannot answer, every case failed in the model call, was counted a
    hand-over and an unreadable error, and the command exited 0 with a table that blamed the guards."""
    import urllib.request

    from .address import model_address
    address = model_address(base_url or os.environ.get("AGENTLAB_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
                            or DEFAULT_BASE_URL)
    if not address.usable:
        return "cli.model_address", {"url": address.shown}
    host, port = address.host, address.port
    # the client goes through the proxy the environment names (HTTPS_PROXY...): a machine that reaches the model only
    # through it must not be refused for the direct connection it never makes
    scheme = address.url.split(":", 1)[0].lower()
    proxy = urllib.request.getproxies().get(scheme) or urllib.request.getproxies().get("all")
    if proxy and not urllib.request.proxy_bypass(host):
        via = model_address(proxy if "://" in proxy else f"http://{proxy}")
        if not via.usable:
            return None  # a proxy setting the client will say is wrong, in its own words
        host, port = via.host, via.port
    if not _connects(host, port, timeout):
        return "cli.model_unreachable", {"url": address.shown, "seconds": f"{timeout:g}"}
    return None


def _connects(host: str, port: int, timeout: float) -> bool:
    """Whether something accepts a TCP connection at ``host:port`` within ``timeout`` seconds, the name's lookup
    included. ``socket.create_connection``'s timeout bounds each connect, not the lookup before it (the system's
    resolver, which a dead DNS server holds for 5 s per try and per server): the whole attempt runs in a daemon thread
    waited for ``timeout`` seconds, and one still looking the name up then is left to end by itself."""
    import socket
    answer: list[bool] = []

    def attempt() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except (OSError, UnicodeError):  # refused, no such host, no route, no answer in time
            answer.append(False)
        else:
            answer.append(True)
    worker = threading.Thread(target=attempt, daemon=True, name="agentlab-endpoint-check")
    worker.start()
    worker.join(timeout)
    return bool(answer and answer[0])


def _tls_context(client_class: type) -> Any:
    """The TLS context every model of this process shares: the one the HTTP client would build for itself
    (its own ``create_ssl_context``, the same trust store, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` read as it
    reads them), built once per pair of those settings. Each client building its own reads the whole CA
    bundle again: about 60 ms of CPU a model, which an evaluation that makes a model per case (8 at once)
    spent serialised, a third of the time at concurrency 8. One context is safe to share between
    connections and threads."""
    env = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _TLS_LOCK:
        ctx = _TLS.get(env)
        if ctx is None:
            base = next((c for c in client_class.__mro__ if c.__name__ == "Client"), None)
            library = sys.modules.get(base.__module__.split(".")[0]) if base is not None else None
            make = getattr(library, "create_ssl_context", None)
            if make is None:  # a client library we do not know: let it build its own, as before
                return True
            ctx = _TLS[env] = make()
        return ctx


class OpenAIModel:
    """A model behind an OpenAI-compatible endpoint, used by both loops like any fake.

    Args:
        temperature: 0 for tool turns: the arguments should be as deterministic as possible.
        tool_choice: ``auto``, ``none``, ``required``, or the name of one tool to force.
        parallel_tool_calls: sent only when not None (not every server knows it).
        retry: our single retry layer for transient failures (None: no resend).
        timeout: seconds one attempt may take, from connecting to the answer's last byte.
        client: an ``openai.OpenAI`` to use instead of building one (tests pass a mock transport). Only a client
            built here bounds the size and the time of reading an answer.
        max_reply_bytes: the largest answer read, after decompression (larger: ``MODEL_ERROR``, not resent).
        strict: ask the server to constrain tool arguments to the schema while the model writes them (OpenAI's
            ``"strict": true`` function calling, "structured outputs"). Strict mode wants every object closed and
            every field listed as required, so an optional field is sent as "this type or null", and a null the
            model writes for it is taken out of the call again before anything checks it (:func:`strict_spec`).
            Only for servers that support it; the guarded loop still checks every call.
    """

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 temperature: float = 0.0, tool_choice: ToolChoice = "auto", parallel_tool_calls: bool | None = None,
                 timeout: float = 60.0, retry: RetryPolicy | None = RetryPolicy(),
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
                 client: Any = None, max_tokens: int | None = None, name: str | None = None, strict: bool = False,
                 max_reply_bytes: int = MAX_REPLY_BYTES):
        self.model = model or os.environ.get("AGENTLAB_MODEL") or "gpt-4o-mini"
        # stripped: a space or newline pasted after it went into every request's path ("/v1%20/chat/...")
        self.base_url = (base_url or os.environ.get("AGENTLAB_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or "").strip() \
            or None
        key = api_key or os.environ.get("AGENTLAB_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.temperature, self.tool_choice, self.parallel_tool_calls = temperature, tool_choice, parallel_tool_calls
        self.retry, self.sleep, self.rng = retry, sleep, rng or random.Random()
        self.max_tokens, self.strict = max_tokens, strict
        self.name = name or self.model
        self.calls: list[ModelCall] = []
        self.last_attempts = 0
        self.timeout, self.max_reply_bytes = timeout, max_reply_bytes
        self._attempt = threading.local()  # this thread's attempt deadline, read while its answer arrives
        if client is None:
            import openai
            # the hook reads each answer itself, bounded in size and time, before the client parses it
            http = openai.DefaultHttpxClient(event_hooks={"response": [self._read_bounded]},
                                             headers={"Accept-Encoding": "gzip, deflate"},
                                             verify=_tls_context(openai.DefaultHttpxClient))
            client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=timeout, http_client=http)
            self._plain_json = True  # our own client: messages and tools go in the body as the JSON they are
        else:
            self._plain_json = False  # a client handed in (a test's fake, a proxy's): the documented keywords only
        self.client = client

    def _read_bounded(self, response: Any) -> None:
        """Read ``response``'s body now, at most ``max_reply_bytes`` decompressed and no later than this
        attempt's deadline, and hand the client the bytes read (so it never reads an unbounded body)."""
        limit, deadline = self.max_reply_bytes, getattr(self._attempt, "deadline", None)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("", "identity"):
            decoder = None
        elif encoding in ("gzip", "x-gzip", "deflate"):
            decoder = zlib.decompressobj(zlib.MAX_WBITS | (16 if "gzip" in encoding else 0))
        else:  # an encoding we did not ask for (Accept-Encoding) and cannot bound
            response.close()
            raise ModelError("MODEL_ERROR", f"unsupported Content-Encoding {encoding[:40]!r}", said="model.not_json")
        body = bytearray()
        try:
            for chunk in response.stream:
                if deadline is not None and time.monotonic() > deadline:
                    raise ModelError("TIMEOUT", "the answer trickled in past the attempt's timeout",
                                     said="model.too_slow", seconds=self.timeout)
                if decoder is not None:
                    chunk = decoder.decompress(chunk, limit + 1 - len(body))
                    if decoder.unconsumed_tail:
                        chunk += b"x"  # there is more than the limit
                body += chunk
                if len(body) > limit:
                    raise ModelError("MODEL_ERROR", f"the answer was larger than {limit} bytes",
                                     said="model.too_large", limit=round(limit / 2**20, 2))
            if decoder is not None:
                body += decoder.flush()
        except zlib.error as exc:
            raise ModelError("MODEL_ERROR", f"the answer could not be decompressed: {exc}", said="model.not_json") from None
        finally:
            response.stream.close()
        http = sys.modules[type(response).__module__.split(".")[0]]  # httpx, or the fork the client uses
        response.stream = http.ByteStream(bytes(body))
        if "content-encoding" in response.headers:
            del response.headers["content-encoding"]

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.base_url!r})"

    def request(self, messages: list[dict], tools: list[dict], tool_choice: ToolChoice | None = None) -> dict:
        """The exact keyword arguments sent to ``chat.completions.create`` (``tool_choice`` for this turn only)."""
        kw: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if tools:
            kw["tools"] = [strict_spec(t) for t in tools] if self.strict else tools
            kw["tool_choice"] = _tool_choice(tool_choice or self.tool_choice)
            if self.parallel_tool_calls is not None:
                kw["parallel_tool_calls"] = self.parallel_tool_calls
        if self.max_tokens is not None:
            kw["max_tokens"] = self.max_tokens
        return kw

    def complete(self, messages: list[dict], tools: list[dict], tool_choice: ToolChoice | None = None,
                 timeout: float | None = None) -> Reply:
        """One model turn. ``timeout``: the seconds this whole call may take, resends and waits included
        (the guarded loop passes what is left of its run deadline); each attempt also has ``self.timeout``."""
        self.calls.append(ModelCall(tuple(messages), tuple(t.get("function", t).get("name", "?") for t in tools)))
        kw = self.request(clean_messages(messages), tools, tool_choice)
        end = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            budget = self.timeout if end is None else max(min(self.timeout, end - time.monotonic()), 0.001)
            self._attempt.deadline = time.monotonic() + budget
            try:
                resp = self.client.chat.completions.create(**(_as_body(kw) if self._plain_json else kw), timeout=budget)
                self.last_attempts = attempt
                reply = to_reply(resp)
                return _drop_optional_nulls(reply, tools) if self.strict else reply
            except Exception as exc:  # noqa: BLE001 - classified, never shown raw
                err = classify(exc)
                err.attempts = attempt
                policy = self.retry
                # Past the longest wait the policy allows, stop now rather than resend early (the
                # server would refuse it again) or sleep for minutes: the error keeps retry_after,
                # and the loop tells the user when to come back. No resend waits past ``timeout``.
                wait = policy.delay(attempt - 1, self.rng, err.retry_after) if policy is not None else 0.0
                if not err.transient or policy is None or attempt > policy.max_retries \
                        or not policy.may_wait(err.retry_after) or (end is not None and time.monotonic() + wait >= end):
                    self.last_attempts = attempt
                    raise err from None
                if getattr(err, "unparsable", False):
                    # The server could not parse the model's tool call; the same prompt at
                    # temperature 0 would fail the same way, so the resend varies it a little.
                    kw = {**kw, "temperature": max(kw.get("temperature") or 0.0, 0.3)}
                self.sleep(wait)  # never shorter than Retry-After


#: The keywords whose values are already plain JSON, built by the loop: the SDK's typed transform of them walks every
#: message and every tool schema with typing introspection, about 2 ms of CPU a turn (40% of the client's own), which
#: eight conversations at once then wait for in turn. ``extra_body`` puts them in the body as they are.
_AS_JSON = ("messages", "tools")


def _as_body(kw: dict[str, Any]) -> dict[str, Any]:
    """``kw`` with the plain-JSON keywords moved into ``extra_body``: the same request body, without the transform."""
    return {**{k: v for k, v in kw.items() if k not in _AS_JSON}, "messages": [],
            "extra_body": {**(kw.get("extra_body") or {}), **{k: kw[k] for k in _AS_JSON if k in kw}}}


def _strict_node(node: dict) -> dict:
    props = node.get("properties")
    if node.get("type") != "object" or not isinstance(props, dict):
        return node
    required = set(node.get("required", ()))
    out = {**node, "additionalProperties": False, "required": list(props)}
    out["properties"] = {k: v if k in required or not isinstance(v, dict) else {"anyOf": [v, {"type": "null"}]}
                         for k, v in props.items()}
    return out


def strict_spec(spec: dict) -> dict:
    """A tool spec for strict function calling: objects closed, every field required, optional ones nullable."""
    fn = dict(spec.get("function", spec))
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    fn["parameters"], fn["strict"] = transform(params, _strict_node), True
    return {"type": "function", "function": fn}


def _optional_fields(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    return set(schema.get("properties", {})) - set(schema.get("required", ()))


def _drop_optional_nulls(reply: Reply, tools: list[dict]) -> Reply:
    """Take out the nulls strict mode made the model write for fields it could have left out (top level)."""
    optional = {t.get("function", t).get("name"): _optional_fields(t.get("function", t).get("parameters")) for t in tools}
    calls = []
    for c in reply.tool_calls:
        try:
            args = json.loads(c.arguments)
        except ValueError:
            calls.append(c)  # broken arguments stay as written: the guard reports them
            continue
        if isinstance(args, dict):
            args = {k: v for k, v in args.items() if not (v is None and k in optional.get(c.name, set()))}
            c = ToolCall(c.name, json.dumps(args, ensure_ascii=False), c.id)
        calls.append(c)
    return Reply(reply.content, tuple(calls), reply.usage)


def _tool_choice(choice: ToolChoice) -> Any:
    if choice in ("auto", "none", "required") or isinstance(choice, dict):
        return choice
    return {"type": "function", "function": {"name": str(choice)}}


def clean_messages(messages: list[dict]) -> list[dict]:
    """The history as every server accepts it.

    ``content: None`` beside tool calls is sent as empty text. And a tool call whose arguments were broken JSON
    (the model's own mistake, answered with BAD_JSON) is sent with its arguments as a JSON string of the raw
    text: llama.cpp (and other servers that parse the history's arguments) refuse the whole request with a 500
    otherwise, so one bad call would make every later turn fail. The chat template shows the string's text, so
    the model still sees what it wrote.
    """
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if v is not None or k == "content"}
        if m.get("role") == "assistant" and m.get("tool_calls"):
            if m.get("content") is None:
                m["content"] = ""
            m["tool_calls"] = [_parsable(c) for c in m["tool_calls"]]
        out.append(m)
    return out


def _parsable(call: dict) -> dict:
    fn = call.get("function") or {}
    args = fn.get("arguments")
    if not isinstance(args, str):
        return call
    try:
        json.loads(args)
    except ValueError:
        return {**call, "function": {**fn, "arguments": json.dumps(args, ensure_ascii=False)}}
    return call


def to_reply(resp: Any) -> Reply:
    """A chat.completion (object or dict) as a Reply, smoothing real servers' quirks.

    Raises :class:`ModelError` for an answer that is no completion: text (an HTML page), no ``choices``,
    no message. Lone surrogates in what the model wrote become escapes; list-of-parts content is its text."""
    def get(obj: Any, key: str) -> Any:  # pydantic objects and plain dicts alike, without model_dump()
        return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)

    if resp is None or isinstance(resp, (str, bytes, list, int, float)):  # the client hands back what is not JSON as text
        shown = resp[:200] if isinstance(resp, (str, bytes)) else type(resp).__name__
        raise ModelError("MODEL_ERROR", f"the answer is not a chat completion: {shown!r}", said="model.not_json")
    choices = get(resp, "choices")
    if not isinstance(choices, (list, tuple)) or not choices:
        error = get(resp, "error")  # some proxies answer 200 with an error object
        raise ModelError("UNAVAILABLE", f"no choices in the answer{': ' + str(error)[:300] if error else ''}",
                         said="model.no_choices")
    msg = get(choices[0], "message")
    if msg is None or isinstance(msg, (str, bytes, list, int, float)):
        raise ModelError("UNAVAILABLE", "the first choice holds no message", said="model.no_message")
    calls = []
    raw_calls = get(msg, "tool_calls")
    for c in raw_calls if isinstance(raw_calls, (list, tuple)) else ():
        fn = get(c, "function") or {}
        name, args, cid = get(fn, "name"), get(fn, "arguments"), get(c, "id")
        if not isinstance(args, str):  # some servers send an object, not the string the spec says
            args = json.dumps(args if args is not None else {}, ensure_ascii=False, default=str)
        cid = cid if isinstance(cid, str) and cid else f"call_{uuid.uuid4().hex[:8]}"
        calls.append(ToolCall(escape_surrogates(name) if isinstance(name, str) else "", escape_surrogates(args),
                              escape_surrogates(cid)))
    content = content_text(get(msg, "content"))  # list-of-parts content is its text, not a Python repr
    if isinstance(content, str) and not content.strip() and calls:
        content = None  # "" beside tool calls means nothing
    usage = get(resp, "usage") or {}
    return Reply(escape_surrogates(content) if content else content, tuple(calls),
                 Usage(_count(get(usage, "prompt_tokens")), _count(get(usage, "completion_tokens"))))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
