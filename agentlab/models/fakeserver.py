"""A small OpenAI-compatible chat-completions server, on 127.0.0.1, for tests and workshops.

It speaks the real wire format, so the official ``openai`` client can be driven
through it end to end: scripted replies (text, tool calls, malformed arguments),
faults (429 with ``Retry-After``, 500, 401, slow replies), or any agentlab model
answering live behind it. Every request is recorded, so a test can count the
HTTP attempts a retry policy made.

    with ChatServer([HTTPFault(429, retry_after=1), say("hi")]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..context import protocol_problems
from .interface import Model, Reply, ToolCall

__all__ = ["ChatServer", "HTTPFault", "Slow", "completion", "malformed"]

@dataclass(frozen=True)
class HTTPFault:
    """An HTTP error to answer with (``status`` 429, 500, 401...)."""

    status: int
    message: str = ""
    retry_after: float | str | None = None  # seconds, or sent as written (an HTTP date)
    code: str | None = None
    headers: Mapping[str, str] | None = None  # more headers, sent as written (``retry-after-ms``, say)


@dataclass(frozen=True)
class Slow:
    """Answer ``item`` after ``seconds``."""

    seconds: float
    item: Any


class _QuietServer(ThreadingHTTPServer):
    """A client that gives up (a timeout, Ctrl+C) closes its socket; our late reply then meets a
    broken pipe. That is the client's choice, not the server's fault: no traceback for it."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipe, ConnectionReset, ConnectionAborted
            return
        super().handle_error(request, client_address)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error"}


class ChatServer:
    """Plays ``script`` in order, then (if given) lets ``model`` answer; otherwise 500s.

    Args:
        delay: seconds added to every reply (for concurrency benchmarks).
    """

    def __init__(self, script: Iterable[Any] = (), *, model: Model | None = None, delay: float = 0.0,
                 host: str = "127.0.0.1", port: int = 0):
        self.script = list(script)
        self.model, self.delay = model, delay
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._replies = 0
        self._busy = 0  # connections being handled right now (see wait_idle)
        self._idle = threading.Condition()
        self._httpd = _QuietServer((host, port), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host  # typeshed allows bytes for AF_UNIX addresses
        return f"http://{host}:{port}/v1"

    @property
    def attempts(self) -> int:
        return len(self.requests)

    def __repr__(self) -> str:
        return f"ChatServer({self.base_url}, {self.attempts} requests)"

    def start(self) -> ChatServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="agentlab-chatserver")
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and close the socket, waiting at most ``timeout`` seconds for the serving loop.

        ``BaseServer.shutdown`` waits with no limit for ``serve_forever`` to notice, and forever when it
        never started: a caller's cleanup must not hang on either."""
        if self._thread is not None and self._thread.is_alive():
            stopper = threading.Thread(target=self._httpd.shutdown, daemon=True, name="agentlab-chatserver-stop")
            stopper.start()
            stopper.join(timeout)
        self._httpd.server_close()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no connection is being handled (a test's late replies have all been written).

        A client's idle keep-alive connection counts as handled until the client closes it."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------------------
    def next_id(self) -> int:
        """The next reply's number (ids of completions and unnamed tool calls)."""
        with self._lock:
            self._replies += 1
            return self._replies

    def _next(self, body: dict) -> Any:
        with self._lock:
            self.requests.append(body)
            n = len(self.requests)
            if n <= len(self.script):
                return self.script[n - 1]
        if self.model is not None:
            return self.model.complete(body.get("messages", []), body.get("tools", []))
        return HTTPFault(500, "the test server's script is used up")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs: 40 ms a reply

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def handle(self) -> None:
                with server._idle:
                    server._busy += 1
                try:
                    super().handle()
                finally:
                    with server._idle:
                        server._busy -= 1
                        server._idle.notify_all()

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                try:
                    data = json.dumps(payload, ensure_ascii=False).encode()
                except UnicodeEncodeError:  # a lone surrogate (half an emoji): send it escaped, as real servers do
                    data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except ConnectionError:  # the client gave up waiting: nobody is left to answer
                    self.close_connection = True

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "agentlab-test", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found", "type": "not_found_error"}})
                    return
                problems = protocol_problems(body.get("messages") or [])
                if problems:  # as the real API does: a broken history is refused before any model runs
                    server.requests.append(body)
                    self._send(400, {"error": {"message": "Invalid parameter: " + problems[0],
                                               "type": "invalid_request_error", "param": "messages"}})
                    return
                item = server._next(body)
                while isinstance(item, Slow):
                    time.sleep(item.seconds)
                    item = item.item
                if server.delay:
                    time.sleep(server.delay)
                if isinstance(item, HTTPFault):
                    ra = item.retry_after
                    headers = {} if ra is None else {"Retry-After": ra if isinstance(ra, str) else f"{ra:g}"}
                    headers.update(item.headers or {})
                    err = {"message": item.message or f"HTTP {item.status}",
                           "type": _ERROR_TYPES.get(item.status, "server_error"), "code": item.code}
                    self._send(item.status, {"error": err}, headers)
                    return
                if isinstance(item, ToolCall):
                    item = Reply(None, (item,))
                reply = item if isinstance(item, Reply) else Reply(str(item))
                self._send(200, completion(reply, body, server.next_id()))

        return Handler


def completion(reply: Reply, request: dict, seq: int = 1) -> dict:
    """A chat.completion object for ``reply`` (token counts estimated at 4 characters a token).

    ``seq`` numbers the completion and any unnamed tool calls (the server counts its own replies)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": c.id or f"call_{seq}_{i}", "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for i, c in enumerate(reply.tool_calls, 1)]
    prompt = len(json.dumps(request.get("messages", []), ensure_ascii=False)) // 4
    out = len((reply.content or "") + "".join(c.arguments for c in reply.tool_calls)) // 4 + 1
    return {"id": f"chatcmpl-{seq}", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", "agentlab-test"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}}


def malformed(name: str, arguments: str) -> Reply:
    """A reply whose tool call carries broken arguments, exactly as given."""
    return Reply(None, (ToolCall(name, arguments, ""),))
