"""A request's body read whole, within a size and a time: what every door of the workbook that takes a body from
anyone reads it with (the skill site's execute route and ``/mcp``, the MCP gateway, the workshop's model gate).

Read without bounds, six bodies of a gigabyte each held 8 GB of a machine, and one that trickles in a byte at a time
holds a connection (and whatever waits behind it) for as long as its sender likes. :func:`receive_body` refuses the one
past its size as it streams in (a missing or lying Content-Length), and the other past its time; :func:`replayed`
hands the body read to an app that reads it itself (the MCP SDK's).

Plain ASGI and asyncio: importing this loads none of FastAPI or starlette.
"""
from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["BODY_SECONDS", "Gone", "TooLarge", "TooSlow", "receive_body", "replayed"]

#: seconds a request body may take to arrive (a trickle holds a connection, and a worker, for nothing)
BODY_SECONDS = 10.0


class TooLarge(Exception):
    """The body passed its size."""


class TooSlow(Exception):
    """The body did not arrive in its time."""


class Gone(TooSlow):
    """The client went away before its body was whole (a body that never arrived, as one too slow): the model gate
    had sent the part that came to the model, holding the participant's place."""


async def receive_body(receive: Any, limit: int, seconds: float = BODY_SECONDS) -> bytes:
    """A request's whole body from ``receive``, refused past ``limit`` bytes as it streams (a missing or lying
    Content-Length, :class:`TooLarge`) or after ``seconds`` (:class:`TooSlow`).

    The deadline is armed only when ``receive`` has to wait: a body already in (an agent's small JSON comes in
    the packet of its headers) is taken without a timer, which cost a read more than the rest of this function
    (asyncio.timeout: about 5 us a request). The ``seconds`` count from the first wait: what came at once took none."""
    chunks, size = [], 0
    deadline: float | None = None
    try:
        while True:
            message, pending = _at_once(receive)
            if pending is not None:  # it waits for the network: under the deadline
                if deadline is None:
                    deadline = asyncio.get_running_loop().time() + seconds
                async with asyncio.timeout_at(deadline):  # the loop's own timer, lighter than anyio's cancel scope
                    message = await pending
            if message.get("type") != "http.request":
                raise Gone  # the client went away mid-body: what arrived is not its request, nothing is to run
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
            if deadline is None:  # more to come: the next parts count against the time from the first
                deadline = asyncio.get_running_loop().time() + seconds
    except TimeoutError:
        raise TooSlow from None
    return b"".join(chunks)


def _at_once(receive: Any) -> tuple[Any, Any]:
    """``(message, None)`` when ``receive()`` gives its message without waiting; else ``(None, awaitable)``: the
    call stopped at its first wait, to be awaited from there (:class:`_GoOn`), or an awaitable of another kind."""
    coro = receive()
    if not asyncio.iscoroutine(coro) or not hasattr(coro, "send"):
        return None, _Await(coro)
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value, None
    return None, _GoOn(coro, waiting)


class _Await:
    """An awaitable that is no coroutine, awaited under the deadline like one that had to wait."""

    __slots__ = ("it",)

    def __init__(self, it: Any):
        self.it = it

    def __await__(self) -> Any:
        return (yield from self.it.__await__())


class _GoOn:
    """A coroutine stopped at its first wait by :func:`_at_once`, awaited from there: what it waits for is handed
    to the task as if it had yielded it itself, and what the task sends or throws (a cancel) goes back into it."""

    __slots__ = ("coro", "waiting")

    def __init__(self, coro: Any, waiting: Any):
        self.coro, self.waiting = coro, waiting

    def __await__(self) -> Any:
        coro, waiting = self.coro, self.waiting
        while True:
            try:
                sent = yield waiting
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - a cancel (the deadline's): the coroutine hears it
                try:
                    waiting = coro.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                waiting = coro.send(sent)
            except StopIteration as done:
                return done.value


def replayed(raw: bytes, receive: Any) -> Any:
    """``receive`` for an app that reads the body itself, once the body has been read: it hears it whole."""
    sent = False

    async def again() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return again
