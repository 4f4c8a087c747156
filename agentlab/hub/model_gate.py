"""The room's model behind a fair share: each participant has at most one request at the model at once, and the
participants waiting are served in turn.

llama.cpp's server answers requests first come, first served: one participant sending six long requests held every
slot, and another's eight-token question waited minutes behind them. Here the model listens only on a Unix socket in
a folder of the services' account (no participant can reach it), and this gate is the room's only way in:

- a request carries the participant's own model key (``AGENTLAB_API_KEY``, given by the hub at spawn: ``mk-<name>-``
  and an HMAC of the name under the room's secret, so the gate keeps no book of keys and a key cannot be made up);
- each participant holds at most :attr:`FairShare.per_who` of the model's slots, waits at most :attr:`FairShare.depth`
  deep (past it: 429 at once, nothing queued), and a free slot goes to the participant next in turn, not to the
  earliest request, so one participant's flood costs another at most one request's time per slot.

``python -m agentlab.hub.model_gate --port … --socket … --parallel N`` runs both in one process: the model on its
socket, the gate on 127.0.0.1 (``--host 0.0.0.0`` in a Kubernetes pod of its own: deploy/z2jh/model.yaml). The
secret comes from the environment (``AGENTLAB_MODEL_SECRET``), never argv.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import sys
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..i18n import t

__all__ = ["MODEL_BODY", "MODEL_PATHS", "FairShare", "Full", "gate_app", "model_key", "who_holds"]

KEY_PREFIX = "mk-"


def model_key(secret: str, name: str) -> str:
    """Participant ``name``'s key to the room's model: their name and an HMAC of it under the room's ``secret``."""
    mac = hmac.new(secret.encode(), name.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{KEY_PREFIX}{name}-{mac}"


def who_holds(secret: str, key: str) -> str | None:
    """The participant whose key ``key`` is, or None for a key the room's secret never made."""
    if not key.startswith(KEY_PREFIX) or "-" not in key[len(KEY_PREFIX):]:
        return None
    name, _, _ = key[len(KEY_PREFIX):].rpartition("-")
    return name if name and hmac.compare_digest(model_key(secret, name), key) else None


class Full(Exception):
    """This participant already has :attr:`FairShare.depth` requests waiting."""


class FairShare:
    """``slots`` places at the model, shared in turn.

    Each participant (``who``) holds at most ``per_who`` places at once and has at most ``depth`` requests waiting;
    when a place frees it goes to the next participant in the rotation who has one waiting (first come within a
    participant). "In turn": the place goes to the participant served longest ago. One asyncio loop owns it: no
    locks."""

    def __init__(self, slots: int, *, per_who: int = 1, depth: int = 4):
        if slots < 1 or per_who < 1 or depth < 0:
            raise ValueError("slots and per_who are at least 1, depth at least 0")
        self.slots, self.per_who, self.depth = slots, per_who, depth
        self.busy = 0
        self.holding: dict[str, int] = {}
        self.waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()  # in order of first asking
        self._last: dict[str, int] = {}  # when each participant was last given a place (a count, not a clock)
        self._tick = 0
        self.served: list[str] = []  # who got each place, in order (read by the tests; cut to the last 1,000)

    async def enter(self, who: str) -> None:
        """Wait for a place for ``who`` (:class:`Full` when they already wait ``depth`` deep)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(who, deque()).append(future)
        self._hand_out()
        if not future.done() and len(self.waiting[who]) > self.depth:  # it would wait, past their depth
            self._forget(who, future)
            raise Full(who)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # given a place in the same moment: give it back
                self.leave(who)
            else:
                self._forget(who, future)
            raise

    def leave(self, who: str) -> None:
        """``who`` is done with a place."""
        self.busy -= 1
        self.holding[who] -= 1
        if not self.holding[who]:
            del self.holding[who]
        self._hand_out()

    def _forget(self, who: str, future: asyncio.Future[None]) -> None:
        queue = self.waiting.get(who)
        if queue is not None and future in queue:
            queue.remove(future)
            if not queue:
                del self.waiting[who]

    def _hand_out(self) -> None:
        while self.busy < self.slots:
            # the participant served longest ago (never: first) among those waiting and under their share
            ready = [w for w in self.waiting if self.holding.get(w, 0) < self.per_who]
            if not ready:
                return
            who = min(ready, key=lambda w: self._last.get(w, -1))
            queue = self.waiting[who]
            future = queue.popleft()
            if not queue:
                del self.waiting[who]
            if future.done():  # given up in the same moment (cancelled): not a place taken
                continue
            self.busy += 1
            self.holding[who] = self.holding.get(who, 0) + 1
            self._tick += 1
            self._last[who] = self._tick
            self.served = [*self.served[-999:], who]
            future.set_result(None)


#: what a participant may ask the room's model (OpenAI's API); the rest of llama.cpp's server is the operator's
MODEL_PATHS = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/models", "/chat/completions", "/models"})
#: the largest request the gate reads: a long chat with every tool is a few hundred kilobytes
MODEL_BODY = 4 * 1024 * 1024


def _many_tasks(body: bytes) -> bool:
    """Whether one request asks the model for several answers at once: a list of prompts, or ``n`` above 1. llama.cpp
    runs each as a task of its own on a slot of its own, so one such request of 3,000 prompts held every slot for as
    long as it liked while the gate counted it as one place. A body that is not JSON goes on (the model refuses it)."""
    import json
    try:
        sent = json.loads(body)
    except (ValueError, RecursionError):  # (not UTF-8 text is a ValueError too)
        return False
    if not isinstance(sent, dict):
        return False
    prompt, n = sent.get("prompt"), sent.get("n", 1)
    # one prompt may be a list of token ids; a list holding texts or lists is several prompts
    several = isinstance(prompt, list) and len(prompt) > 1 and not all(type(x) is int for x in prompt)
    return several or (n is not None and not (type(n) is int and n <= 1))


def _refusal(status: int, key: str, headers: dict[str, str] | None = None, **fields: object) -> Any:
    from starlette.responses import JSONResponse
    message = "\n".join(t(key, lang, **fields) for lang in ("en", "zh"))  # a person reads it: both languages
    kind = {429: "rate_limit_error", 401: "authentication_error", 404: "not_found_error"}.get(status,
                                                                                            "invalid_request_error")
    return JSONResponse({"error": {"message": message, "type": kind, "code": key.rsplit(".", 1)[-1]}},
                        status_code=status, headers=headers)


def gate_app(share: FairShare, secret: str, upstream: Any) -> Any:
    """The gate: ``upstream`` is an ``httpx.AsyncClient`` to the model (its base URL set). ``/health`` is open (the
    hub asks it); everything else needs a participant's model key and a place."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    from ..site.bodies import BODY_SECONDS, TooLarge, TooSlow, receive_body

    async def health(request: Request) -> Response:
        reply = await upstream.get("/health")
        return Response(reply.content, reply.status_code, media_type=reply.headers.get("content-type"))

    async def forward(request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        who = who_holds(secret, auth[7:].strip()) if auth[:7].lower() == "bearer " else None
        if who is None:
            return _refusal(401, "hub.model.no_key")
        if request.url.path.rstrip("/") not in MODEL_PATHS:  # the server's own pages (its slots: others' activity)
            return _refusal(404, "hub.model.no_path")
        declared = request.headers.get("content-length", "")
        if declared and (not declared.isdigit() or int(declared) > MODEL_BODY):
            return _refusal(413, "hub.model.too_large")
        try:  # bounded in size and time: six bodies of a gigabyte each held 8 GB of the machine
            body = await receive_body(request.receive, MODEL_BODY, BODY_SECONDS)
        except TooLarge:
            return _refusal(413, "hub.model.too_large")
        except TooSlow:  # a trickle held a connection of the participant's share for as long as they liked
            return _refusal(408, "hub.model.too_slow", limit=f"{BODY_SECONDS:g}")
        if _many_tasks(body):
            return _refusal(400, "hub.model.one_task")
        try:
            await share.enter(who)
        except Full:
            return _refusal(429, "hub.model.queue_full", {"Retry-After": "5"})
        try:
            sent = upstream.build_request(request.method, request.url.path, params=request.query_params, content=body,
                                          headers={k: v for k, v in request.headers.items()
                                                   if k in ("content-type", "accept")})
            reply = await upstream.send(sent, stream=True)
        except BaseException:
            share.leave(who)
            raise

        async def relay() -> AsyncIterator[bytes]:
            try:  # the place is held until the answer's last byte, or until the participant hangs up
                async for chunk in reply.aiter_raw():
                    yield chunk
            finally:
                await reply.aclose()
                share.leave(who)
        kept = {k: v for k, v in reply.headers.items() if k in ("content-type", "cache-control")}
        return StreamingResponse(relay(), status_code=reply.status_code, headers=kept)

    return Starlette(routes=[Route("/health", health),
                             Route("/{path:path}", forward, methods=["GET", "POST"])])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agentlab.hub.model_gate")
    ap.add_argument("--gguf", default=None, help="the weights (default: the packaged small model)")
    ap.add_argument("--host", default="127.0.0.1", help="the gate's address (0.0.0.0 in a pod of its own)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--socket", required=True, help="the model's Unix socket (ends in .sock), in a private folder")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=1, help="the model's slots: requests answered at once")
    ap.add_argument("--ctx", type=int, default=4096, help="tokens of context in all (shared by the slots)")
    ap.add_argument("--queue", type=int, default=4, help="requests one participant may have waiting")
    ns = ap.parse_args(argv)
    secret = os.environ.get("AGENTLAB_MODEL_SECRET", "")
    if not secret:
        print(t("hub.model.no_secret", "en"), file=sys.stderr)
        return 2
    import httpx
    import uvicorn
    sock = Path(ns.socket)
    sock.unlink(missing_ok=True)
    from ..models.local import llama_server, weights_path
    gguf = Path(ns.gguf) if ns.gguf else weights_path("0.5b")
    server = llama_server(gguf, listen=str(sock), threads=ns.threads, ctx=ns.ctx, parallel=ns.parallel)
    upstream = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(sock)), base_url="http://model",
                                 timeout=httpx.Timeout(600.0, connect=10.0))
    share = FairShare(ns.parallel, depth=ns.queue)
    print(f"agentlab model gate on {ns.host}:{ns.port} ({gguf.name}, {ns.parallel} slots)", flush=True)
    from ..site.serving import server_config  # as the site is served: headers within 5 s, a share per source
    config = server_config(gate_app(share, secret, upstream), host=ns.host, port=ns.port)
    try:
        uvicorn.Server(config).run()
    finally:
        del server  # the model lives exactly as long as the gate
    return 0


if __name__ == "__main__":
    sys.exit(main())
