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

import _signal
import _thread
import asyncio
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["Interrupted", "WriteTimeout", "can_interrupt", "run_with_timeout", "wait_in_worker"]


class WriteTimeout(TimeoutError):
    """A write did not answer in time and is still running: it may yet take effect.

    ``future`` settles when the write finishes, so its real outcome can be recorded.
    """

    def __init__(self, limit: float, future: Future):
        super().__init__(f"no answer within {limit:g} s; the write is still running")
        self.future = future


class _Job:
    """One call handed to a worker. A Future is made only for a caller that stops waiting (``late``): a
    plain lock wakes the caller that does not, at about half the CPU of a Future and its Condition."""

    __slots__ = ("done", "error", "finished", "fn", "late", "value")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.late: Future | None = None


class Interrupted(TimeoutError):
    """A read stopped by its deadline in the calling thread (told apart from a ``TimeoutError`` of its own)."""


class _Workers:
    """Daemon threads for writes, so a hung tool never blocks the interpreter's exit."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def run(self, fn: Callable[[], Any], limit: float, *, write: bool) -> Any:
        """``fn()`` in a worker, waited for at most ``limit`` seconds."""
        job = _Job(fn)
        with self._lock:
            if self._idle == 0:
                threading.Thread(target=self._work, daemon=True, name="agentlab-tool").start()
            else:
                self._idle -= 1
        self._q.put(job)
        if not job.done.acquire(timeout=limit):
            with self._lock:
                if not job.finished:  # still running: the caller stops waiting, the result settles a Future
                    fut: Future = Future()
                    job.late = fut
                    fut.set_running_or_notify_cancel()
                    if write:
                        raise WriteTimeout(limit, fut)
                    raise TimeoutError(f"no answer within {limit:g} s")
        if job.error is not None:
            error, job.error = job.error, None  # no cycle through the traceback
            raise error
        return job.value

    def submit(self, fn: Callable[[], Any]) -> Future:
        """``fn()`` in a worker, its outcome in a Future (for a caller that waits on an event loop)."""
        job = _Job(fn)
        fut: Future = Future()
        fut.set_running_or_notify_cancel()
        job.late = fut
        with self._lock:
            if self._idle == 0:
                threading.Thread(target=self._work, daemon=True, name="agentlab-tool").start()
            else:
                self._idle -= 1
        self._q.put(job)
        return fut

    def _work(self) -> None:
        while True:
            job = self._q.get()
            try:
                value, error = job.fn(), None
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                value, error = None, exc
            with self._lock:
                # idle before the caller wakes, so that its next call finds this thread instead of starting one
                self._idle += 1
                job.value, job.error, job.finished = value, error, True
                late = job.late
            if late is None:
                job.done.release()
            elif error is not None:
                late.set_exception(error)
            else:
                late.set_result(value)


_workers = _Workers()


class _Expired(BaseException):
    """Raised into a read by the alarm; a BaseException so a tool's ``except Exception`` cannot swallow it."""


_HAS_TIMER = hasattr(signal, "setitimer")  # POSIX
_SIGALRM: int = getattr(signal, "SIGALRM", 0)
_ITIMER_REAL: int = getattr(signal, "ITIMER_REAL", 0)


def _can_alarm() -> bool:
    return _HAS_TIMER and threading.current_thread() is threading.main_thread()


def can_interrupt() -> bool:
    """Whether a read called here can be stopped at its deadline in this thread (the main thread, POSIX)."""
    return _can_alarm()


def _with_alarm(fn: Callable[[], Any], limit: float) -> Any:
    """Run ``fn`` in this thread with a SIGALRM deadline. A timer that was already running
    (pytest-timeout's, say) is put back afterwards.

    The C functions of ``_signal`` are called directly: ``signal.signal`` wraps them to turn numbers
    into enums, which is about half of this function's cost, and the handler it puts back is the same."""
    armed = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if armed[0]:
            raise _Expired()

    previous = _signal.signal(_SIGALRM, on_alarm)
    prev_left, prev_interval = _signal.setitimer(_ITIMER_REAL, limit)
    t0 = time.monotonic() if prev_left > 0 else 0.0
    try:
        try:
            result = fn()
            armed[0] = False
            return result
        finally:
            armed[0] = False  # a signal still pending after this point is a no-op
            _signal.setitimer(_ITIMER_REAL, 0)
    except _Expired:
        raise Interrupted(f"no answer within {limit:g} s") from None
    finally:
        _signal.signal(_SIGALRM, previous)
        if prev_left > 0:
            _signal.setitimer(_ITIMER_REAL, max(prev_left - (time.monotonic() - t0), 1e-3), prev_interval)


def run_with_timeout(fn: Callable[[], Any], limit: float | None, *, write: bool) -> Any:
    """``fn()`` with at most ``limit`` seconds of waiting.

    Raises ``TimeoutError`` for an interrupted read and :class:`WriteTimeout` for a write
    that is still running. Off the main thread (or on Windows) reads use a worker too.
    """
    if limit is None:
        return fn()
    if not write and _can_alarm():
        return _with_alarm(fn, limit)
    return _workers.run(fn, limit, write=write)


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
