"""Running a tool under a deadline, two ways, because reads and writes differ.

A read-only tool is interrupted in the calling thread by a SIGALRM deadline (a few microseconds of overhead, against
~9 us for a thread hand-off, and more on a busy machine, where the hand-off lets other processes run in between):
stopping a read half-way leaves nothing half-done. A write must never be interrupted half-way, so it runs in a worker
thread and the caller stops *waiting* for it; the write may still finish later, which is why a timed-out write's
outcome is unknown (:class:`WriteTimeout`). A deadline past due rings again until its wait ends (:data:`_AGAIN`).

The worker threads themselves are :mod:`agentlab.workers`'s. Neither way can interrupt C code that holds the GIL (a
catastrophic regex, a long ``sum`` over a C array): the deadline fires when that code gives the GIL back.
"""
from __future__ import annotations

import _signal
import asyncio
import contextlib
import contextvars
import functools
import os
import signal
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from typing import Any

from .workers import _LONGEST, NoWorker, _pool

__all__ = ["Interrupted", "ReadStillRunning", "WriteTimeout", "can_interrupt", "holding_alarm", "run_with_timeout",
           "wait_in_worker", "wait_on_loop"]


class ReadStillRunning(TimeoutError):
    """A read that did not answer in time and could not be interrupted (it ran in a worker thread): it still runs.

    Resending it would add a second call into a backend that is already stuck (a gateway's timed-out read became
    three hanging calls), so the guarded call does not resend while ``future`` is not done."""

    def __init__(self, limit: float, future: Future | asyncio.Future):
        super().__init__(f"no answer within {limit:g} s")
        self.future = future


class WriteTimeout(TimeoutError):
    """A write did not answer in time and is still running: it may yet take effect. ``future`` settles when the write
    finishes, so its real outcome can be recorded."""

    def __init__(self, limit: float, future: Future | asyncio.Future):
        super().__init__(f"no answer within {limit:g} s; the write is still running")
        self.future = future


class Interrupted(TimeoutError):
    """A read stopped by its deadline in the calling thread (told apart from a ``TimeoutError`` of its own)."""


class _Expired(BaseException):
    """Raised into a read by the alarm; a BaseException so a tool's ``except Exception`` cannot swallow it."""


_HAS_TIMER = hasattr(signal, "setitimer")  # POSIX
_AGAIN = 0.1  # seconds between a due deadline's rings until its wait ends: a raise in a gc callback is swallowed
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
            if len(armed) == 1:  # rung: again each _AGAIN s until the wait ends (see _AGAIN), set once
                armed.append(True)  # before the timer: one that rings at once rings into a handler that says so
                _signal.setitimer(_ITIMER_REAL, _AGAIN, _AGAIN)
            raise _Expired()

    prev_left, prev_interval, t0 = 0.0, 0.0, time.monotonic()
    previous = _signal.signal(_SIGALRM, on_alarm)
    try:
        # the running timer read before this one is set, not taken from setting it: a limit that rings at once (a
        # microsecond; any short one on a loaded machine) raises before that call's answer is kept, and the timer
        # found running (pytest-timeout's, a learner check's) was lost, so nothing stopped what came after. Read
        # inside the try: that timer ringing here is this wait's timeout, and its handler is put back below
        prev_left, prev_interval = _signal.getitimer(_ITIMER_REAL)
        try:
            # armed inside the try: an alarm due at once (a limit of a microsecond) still ends here, as a timeout
            _signal.setitimer(_ITIMER_REAL, limit)
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


class _Held:
    """The main thread's SIGALRM, held for a run of waits (:func:`holding_alarm`, a guarded loop's turn).

    Unheld, every wait reads the timer, installs its handler, sets and clears the timer and puts both back: five
    system calls (about 7 us with four) twice a tool call. Held, a wait notes its deadline (``waits``, innermost
    last) and reads the timer (a tool may have cleared or taken it); it sets the timer only when it is due before
    it, and when it rings early it is set again for the earliest deadline still noted: about once per limit.
    A timer running when the hold began (pytest-timeout's) keeps its time: its handler runs when it falls due (one
    it sets again is kept too, and no wait's deadline is raised into it while it runs)."""

    __slots__ = ("again", "depth", "interval", "other", "previous", "ringing", "waits")

    def __init__(self) -> None:
        self.depth = 0
        self.waits: list[float] = []  # deadlines (time.monotonic) of the waits in progress
        self.previous: Any = None  # the handler put back when the hold ends
        self.other = _NEVER  # when the timer found running at the start rings; _NEVER: there was none
        self.interval = 0.0  # that timer's interval
        self.ringing = False  # the previous handler is running (no deadline is raised into it)
        self.again = 0.0  # when a due deadline rings again (see _AGAIN)


_NEVER = float("inf")
_held = _Held()


def _forked() -> None:
    # a child has no timer of its parent's, and none of its parent's waits: their deadlines are not the child's
    _held.waits.clear()
    _held.other = _NEVER


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _set(when: float, now: float) -> None:
    _signal.setitimer(_ITIMER_REAL, max(when - now, 1e-6))


def _on_held_alarm(signum: int, frame: Any) -> None:
    """The held timer rang: a wait past its deadline is interrupted (``_Expired``, told which deadline); a timer
    that was running before the hold gets its handler; otherwise the timer is set for the next deadline."""
    held, now = _held, time.monotonic()
    if held.ringing:  # inside the previous handler: a deadline due meanwhile is raised once it has returned (below)
        return
    if held.other <= now:
        held.other = now + held.interval if held.interval > 0 else _NEVER
        held.ringing = True
        try:
            _other_rang(held.previous, signum, frame)
        finally:
            held.ringing = False
            left, interval = _signal.getitimer(_ITIMER_REAL)
            if left > 0:  # the handler set the timer again (a heartbeat): that is its timer now
                held.other, held.interval = time.monotonic() + left, interval
        now = time.monotonic()
    expired = next((d for d in reversed(held.waits) if d <= now), None)  # the innermost: the first to catch it
    later = [d for d in held.waits if d is not expired]  # another that expired too rings again at once
    if held.other < _NEVER:
        later.append(held.other)
    if expired is not None and now >= held.again - _AGAIN / 2:  # again until its wait ends (not at once: _AGAIN)
        held.again = now + _AGAIN
        later.append(held.again)
    if later:
        _set(min(later), now)
    if expired is not None:
        raise _Expired(expired)


def _other_rang(handler: Any, signum: int, frame: Any) -> None:
    """What the timer that was running before the hold would have done, ringing now."""
    if callable(handler):
        handler(signum, frame)
    elif handler == _signal.SIG_DFL:  # the default action (the process ends), as it would have been
        _signal.signal(_SIGALRM, _signal.SIG_DFL)
        os.kill(os.getpid(), _SIGALRM)


@contextlib.contextmanager
def holding_alarm() -> Iterator[None]:
    """Hold the main thread's SIGALRM for the waits inside (every read and model call of a guarded turn): the
    handler is installed once and the timer set only when a wait needs it sooner (:class:`_Held`). The handler and
    a timer that was running are put back at the end. Off the main thread (or on Windows) it does nothing."""
    if not _can_alarm():
        yield
        return
    held = _held
    if held.depth == 0:
        left, held.interval = _signal.setitimer(_ITIMER_REAL, 0)  # stopped first: it cannot ring in between
        held.previous = _signal.signal(_SIGALRM, _on_held_alarm)
        now = time.monotonic()
        held.waits.clear()
        held.other = now + left if left > 0 else _NEVER
        if held.other < _NEVER:
            _set(held.other, now)
    held.depth += 1
    try:
        yield
    finally:
        held.depth -= 1
        if held.depth == 0:
            _signal.setitimer(_ITIMER_REAL, 0)
            _signal.signal(_SIGALRM, held.previous)  # also over one a tool set inside (as an unheld wait does)
            if held.other < _NEVER:
                _signal.setitimer(_ITIMER_REAL, max(held.other - time.monotonic(), 1e-3), held.interval)
            held.previous, held.other = None, _NEVER


def _held_wait(fn: Callable[[], Any], limit: float) -> Any:
    """``fn()`` under a deadline of the held alarm: noted, and the timer set if it is not set or set for later."""
    held = _held
    now = time.monotonic()
    deadline = now + limit
    try:
        held.waits.append(deadline)  # in the try: an alarm due at once still ends here, as a timeout
        left = _signal.getitimer(_ITIMER_REAL)[0]  # read, not remembered: a tool may have cleared or taken it
        if left <= 0 or limit < left:
            _signal.setitimer(_ITIMER_REAL, limit)
        return fn()
    except _Expired as exc:
        if not exc.args or exc.args[0] is not deadline:  # an outer wait's deadline: it is that wait's to catch
            raise
        raise Interrupted(f"no answer within {limit:g} s") from None
    finally:
        if held.waits and held.waits[-1] is deadline:
            held.waits.pop()


def run_with_timeout(fn: Callable[[], Any], limit: float | None, *, write: bool) -> Any:
    """``fn()`` with at most ``limit`` seconds of waiting. Raises ``TimeoutError`` for an interrupted read and
    :class:`WriteTimeout` for a write that is still running. Off the main thread (or on Windows) reads use a worker
    too. In a worker, ``fn`` runs in a copy of the caller's context (its context variables), as it would here."""
    if limit is None:
        return fn()
    if not limit > 0:  # zero, negative, NaN: no time to wait (an interval timer of 0 is no timer at all)
        limit = 1e-6
    limit = min(limit, _LONGEST)
    if not write and _can_alarm():
        # held (a guarded turn) and still ours: a deadline noted; else the handler and timer set for this wait alone
        if _held.depth and _signal.getsignal(_SIGALRM) is _on_held_alarm:
            return _held_wait(fn, limit)
        return _with_alarm(fn, limit)
    # in a copy of this thread's context, as run here: a tool's tracing span, a request id, a framework's config
    done, got = _pool.try_run(functools.partial(contextvars.copy_context().run, fn), limit)
    if done:
        return got
    raise (WriteTimeout if write else ReadStillRunning)(limit, got)


def run_to_end(awaitable: Awaitable[Any]) -> Any:
    """Run ``awaitable`` to its end on a new event loop in a thread of its own, and return what it returns (or raise
    what it raises): the calling thread may be running a loop already (a notebook's, a framework's), where
    ``asyncio.run`` refuses. For an ``async def`` tool called where tools are called plainly."""
    box: dict[str, Any] = {}

    async def awaited() -> Any:
        return await awaitable

    def main() -> None:
        try:
            box["value"] = asyncio.run(awaited())
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread as it was raised
            if isinstance(exc, NoWorker):
                exc.started = True  # raised inside the coroutine, which had begun
            box["error"] = exc
    # in a copy of the caller's context, as a worker runs a call (run_with_timeout)
    worker = threading.Thread(target=functools.partial(contextvars.copy_context().run, main),
                              name="agentlab-async-tool", daemon=True)
    try:
        worker.start()
    except RuntimeError as exc:  # out of threads: the coroutine never began
        if hasattr(awaitable, "close"):
            awaitable.close()
        raise NoWorker(f"no thread could be started for the coroutine: {exc}") from exc
    worker.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


async def wait_in_worker(fn: Callable[[], Any], limit: float | None, *, write: bool) -> Any:
    """``fn()`` in a worker thread, awaited on the running event loop for at most ``limit`` seconds. Raises what
    :func:`run_with_timeout` raises: past the limit, ``TimeoutError`` for a read (abandoned) and :class:`WriteTimeout`
    for a write, whose future settles when it ends. The loop is woken once, when ``fn`` ends or the limit passes."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[bool] = loop.create_future()

    def wake(_: Future) -> None:  # in the worker thread: hand the news to the loop
        try:
            loop.call_soon_threadsafe(_settle, waiter, True)
        except RuntimeError:  # the loop closed meanwhile (a server shutting down): nobody waits any more
            pass

    fut = _pool.submit(functools.partial(contextvars.copy_context().run, fn))  # the caller's context, as above
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
    raise ReadStillRunning(limit, fut)


def _settle(waiter: asyncio.Future, finished: bool) -> None:
    if not waiter.done():  # the first of the worker and the timer decides; a cancelled wait stays cancelled
        waiter.set_result(finished)


async def wait_on_loop(awaitable: Awaitable[Any], limit: float | None, *, write: bool) -> Any:
    """``awaitable`` (a framework's async tool) on the running event loop, waited for at most ``limit`` seconds.

    A read is awaited in the caller's own task under a deadline (the loop's :class:`_Alarm`; a task of its own cost
    more than the rest of the wait): past it, the read is cancelled. A framework may have run it in a thread, which
    no cancellation stops, so it counts as still running (:class:`ReadStillRunning`: never resent on a guess). A
    write is never interrupted: it runs as a task of its own and, past the limit, goes on (:class:`WriteTimeout`;
    its task settles the key when it lands). No thread either way; a loop's deadlines share one timer.
    """
    if limit is None:
        return await awaitable
    if not limit > 0:
        limit = 1e-6
    limit = min(limit, _LONGEST)
    loop = asyncio.get_running_loop()
    alarm = _alarm(loop)
    if not write:
        task = asyncio.current_task()
        if task is None:  # awaited outside a task: nothing to cancel at the deadline, asyncio's own way refuses it
            return await _read_under_timeout(awaitable, limit, loop)
        cut = _Cut(task)
        alarm.add(cut, loop.time() + limit)
        try:
            value = await awaitable
        except asyncio.CancelledError:
            # the deadline's cancellation, unless another one came on top of it (asyncio.timeout's rule)
            if cut.expired and task.uncancel() <= cut.cancelling:
                raise ReadStillRunning(limit, loop.create_future()) from None  # a future never done: not resent
            raise
        except BaseException:
            if cut.expired:  # it failed of its own as the deadline passed: the cancellation is taken back
                task.uncancel()
            raise
        finally:
            alarm.due.pop(cut, None)
        if cut.expired:  # it answered as the deadline passed: the cancellation is taken back
            task.uncancel()
        return value
    # A write runs as a task of its own from its first step: a tool that notes its task before it first waits (an
    # asyncio.timeout, a TaskGroup, anyio's cancel scopes inside httpx) must find the task it ends in. Started in the
    # caller's task instead, to spare a task for a write that answers at once, such a write failed after its effect
    waiter: asyncio.Future[bool] = loop.create_future()
    task = loop.create_task(_landing(awaitable, waiter))
    late = _Late(waiter)
    alarm.add(late, loop.time() + limit)
    try:
        finished = await waiter
    finally:
        alarm.due.pop(late, None)
    if finished:
        return await task  # done by now (it ended before the waiter woke us): its result, or what it raised
    task.add_done_callback(_retrieved)  # abandoned: its late failure is nobody's to log
    raise WriteTimeout(limit, task)


async def _landing(awaitable: Awaitable[Any], waiter: asyncio.Future) -> Any:
    """A write's own task, which wakes its waiting caller itself as it ends. A done callback did it a turn of the
    loop later (callbacks are scheduled), and that turn, with the caller's own, was a third of what the task cost a
    claimed write on the adapters."""
    try:
        return await awaitable
    finally:
        if not waiter.done():  # the deadline passed first, or the caller was cancelled: nobody to wake
            waiter.set_result(True)


async def _read_under_timeout(awaitable: Awaitable[Any], limit: float, loop: asyncio.AbstractEventLoop) -> Any:
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await awaitable
    except TimeoutError:
        if not deadline.expired():  # the tool's own TimeoutError, not the deadline's
            raise
        raise ReadStillRunning(limit, loop.create_future()) from None  # a future never done: not resent


class _Cut:
    """A read's deadline on its loop's alarm: past it, the task awaiting the read is cancelled (the read is
    abandoned, as ``asyncio.timeout`` abandons it), and ``expired`` tells that cancellation from any other."""

    __slots__ = ("cancelling", "expired", "task")

    def __init__(self, task: asyncio.Task) -> None:
        self.task, self.expired, self.cancelling = task, False, task.cancelling()

    def ring(self) -> None:
        self.expired = True
        self.task.cancel()


class _Late:
    """A write's deadline on its loop's alarm: past it, its caller stops waiting (the write goes on)."""

    __slots__ = ("waiter",)

    def __init__(self, waiter: asyncio.Future) -> None:
        self.waiter = waiter

    def ring(self) -> None:
        _settle(self.waiter, False)


class _Alarm:
    """Every deadline a call awaits on one event loop, behind one timer.

    A timer per call (``asyncio.timeout``'s) was most of what a deadline cost a call on the adapters. Here a call
    notes its deadline (``due``) and takes it away when it ends; the one timer is set for the earliest deadline,
    again only when it rings or a call needs it sooner: about once per limit, not once per call."""

    __slots__ = ("__weakref__", "due", "handle", "loop", "when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.due: dict[_Cut | _Late, float] = {}
        self.handle: asyncio.TimerHandle | None = None
        self.when = float("inf")

    def add(self, entry: _Cut | _Late, deadline: float) -> None:
        self.due[entry] = deadline
        if deadline < self.when:
            self._set(deadline)

    def _set(self, when: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.when, self.handle = when, self.loop.call_at(when, self._ring)

    def _ring(self) -> None:
        # what is due by the time the loop ran this timer: the loop runs a timer a clock tick early, as it
        # would have run each call's own
        now = max(self.loop.time(), self.when)
        self.handle, self.when = None, float("inf")
        for entry, deadline in list(self.due.items()):
            if deadline <= now:
                del self.due[entry]
                entry.ring()
        if self.due:
            self._set(min(self.due.values()))


# each loop's alarm, held weakly: an alarm lives while its timer is set (the loop's timer holds it) or a call holds it,
# and keeps its loop; keyed by the loop's id, never by the loop (a dictionary holding its loops would keep every
# loop asyncio.run ever made), and checked to be that very loop's
_ALARMS: weakref.WeakValueDictionary[int, _Alarm] = weakref.WeakValueDictionary()


def _alarm(loop: asyncio.AbstractEventLoop) -> _Alarm:
    """The loop's alarm, made for its first deadline (again after one that rang with nothing more due)."""
    alarm = _ALARMS.get(id(loop))
    if alarm is None or alarm.loop is not loop:
        alarm = _ALARMS[id(loop)] = _Alarm(loop)
    return alarm


def _retrieved(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()
