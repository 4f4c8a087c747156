"""Running a tool under a deadline, two ways, because reads and writes differ.

A read-only tool is interrupted in the calling thread by a SIGALRM deadline (a few
microseconds of overhead, against ~85 us for a thread hand-off): stopping a read
half-way leaves nothing half-done. A write must never be interrupted half-way, so it
runs in a worker thread and the caller stops *waiting* for it; the write may still
finish later, which is why a timed-out write's outcome is unknown (:class:`WriteTimeout`).

:func:`wait_in_worker` is the worker-thread way for a coroutine: the event loop waits for the
worker's future (one hand-off there, one back) and serves other requests meanwhile.

Neither can interrupt C code that holds the GIL (a catastrophic regex, a long
``sum`` over a C array): the deadline fires when that code gives the GIL back.
"""
from __future__ import annotations

import asyncio
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

__all__ = ["Interrupted", "WriteTimeout", "can_interrupt", "run_with_timeout", "wait_in_worker"]


class WriteTimeout(TimeoutError):
    """A write did not answer in time and is still running: it may yet take effect.

    ``future`` settles when the write finishes, so its real outcome can be recorded.
    """

    def __init__(self, limit: float, future: Future):
        super().__init__(f"no answer within {limit:g} s; the write is still running")
        self.future = future


class Interrupted(TimeoutError):
    """A read stopped by its deadline in the calling thread (told apart from a ``TimeoutError`` of its own)."""


class _Workers:
    """Daemon threads for writes, so a hung tool never blocks the interpreter's exit."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> Future:
        fut: Future = Future()
        with self._lock:
            if self._idle == 0:
                threading.Thread(target=self._work, daemon=True, name="agentlab-tool").start()
            else:
                self._idle -= 1
        self._q.put((fn, fut))
        return fut

    def _work(self) -> None:
        while True:
            fn, fut = self._q.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                    fut.set_exception(exc)
            with self._lock:
                self._idle += 1


_workers = _Workers()


class _Expired(BaseException):
    """Raised into a read by the alarm; a BaseException so a tool's ``except Exception`` cannot swallow it."""


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def can_interrupt() -> bool:
    """Whether a read called here can be stopped at its deadline in this thread (the main thread, POSIX)."""
    return _can_alarm()


def _with_alarm(fn: Callable[[], Any], limit: float) -> Any:
    """Run ``fn`` in this thread with a SIGALRM deadline. A timer that was already running
    (pytest-timeout's, say) is put back afterwards."""
    armed = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if armed[0]:
            raise _Expired()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    prev_left, prev_interval = signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.monotonic()
    try:
        try:
            result = fn()
            armed[0] = False
            return result
        finally:
            armed[0] = False  # a signal still pending after this point is a no-op
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise Interrupted(f"no answer within {limit:g} s") from None
    finally:
        signal.signal(signal.SIGALRM, previous)
        if prev_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(prev_left - (time.monotonic() - t0), 1e-3), prev_interval)


def run_with_timeout(fn: Callable[[], Any], limit: float | None, *, write: bool) -> Any:
    """``fn()`` with at most ``limit`` seconds of waiting.

    Raises ``TimeoutError`` for an interrupted read and :class:`WriteTimeout` for a write
    that is still running. Off the main thread (or on Windows) reads use a worker too.
    """
    if limit is None:
        return fn()
    if not write and _can_alarm():
        return _with_alarm(fn, limit)
    fut = _workers.submit(fn)
    try:
        return fut.result(timeout=limit)
    except FutureTimeout:
        if write:
            raise WriteTimeout(limit, fut) from None
        raise TimeoutError(f"no answer within {limit:g} s") from None


async def wait_in_worker(fn: Callable[[], Any], limit: float | None, *, write: bool) -> Any:
    """``fn()`` in a worker thread, awaited on the running event loop for at most ``limit`` seconds.

    Raises what :func:`run_with_timeout` raises: past the limit, ``TimeoutError`` for a read (abandoned:
    its thread finishes it and nobody reads the result) and :class:`WriteTimeout` for a write, whose
    future settles when it ends. The loop is woken once, when ``fn`` ends or the limit passes: no task,
    no extra future chained to the worker's.
    """
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[bool] = loop.create_future()

    def wake(_: Future) -> None:  # in the worker thread: hand the news to the loop
        try:
            loop.call_soon_threadsafe(_settle, waiter, True)
        except RuntimeError:  # the loop closed meanwhile (a server shutting down): nobody waits any more
            pass

    fut = _workers.submit(fn)
    fut.add_done_callback(wake)
    timer = loop.call_later(limit, _settle, waiter, False) if limit is not None else None
    try:
        finished = await waiter
    finally:
        if timer is not None:
            timer.cancel()
    if finished:
        return fut.result()
    assert limit is not None
    if write:
        raise WriteTimeout(limit, fut)
    raise TimeoutError(f"no answer within {limit:g} s")


def _settle(waiter: asyncio.Future, finished: bool) -> None:
    if not waiter.done():  # the first of the worker and the timer decides; a cancelled wait stays cancelled
        waiter.set_result(finished)
