"""Worker threads for calls that must not run in the caller's thread: a write (never interrupted), a read off the
main thread, a store's round trip from an event loop (:mod:`agentlab.timeouts` waits for them under a deadline).

A worker is a daemon thread kept from call to call, asleep on a pipe of its own; a call takes an idle one (or a new
one) and hands it back when it ends, and at most :data:`IDLE_WORKERS` idle ones are kept. A worker is kept to its
caller's CPU while it waits to be woken, so that the hand-off stays on one CPU, and lets go of it once woken: what it
runs gets its caller's CPUs. A forked child starts its own workers.
"""
from __future__ import annotations

import _thread
import contextlib
import os
import select
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any

__all__ = ["IDLE_WORKERS", "NoWorker"]

_LONGEST = 2_000_000.0  # seconds (23 days): poll() counts milliseconds in a C int, timers overflow past it


class _PipeAnswer:
    """A worker's "done" to the caller that waits for it: a byte on a pipe, waited for with ``poll`` (POSIX).
    Like the wake-up, a pipe hands the CPU over: the caller runs once the worker blocks for its next call."""

    __slots__ = ("fds", "poller")

    def __init__(self) -> None:
        self.fds = os.pipe()
        self.poller = select.poll()
        self.poller.register(self.fds[0], select.POLLIN)

    def give(self) -> None:
        os.write(self.fds[1], b"\0")

    def wait(self, limit: float) -> bool:
        """Take the answer if it comes within ``limit`` seconds."""
        if not self.poller.poll(limit * 1000):
            return False
        os.read(self.fds[0], 1)
        return True

    def take_given(self) -> None:
        """Take an answer given and not taken yet, if there is one (never waits)."""
        if self.poller.poll(0):
            os.read(self.fds[0], 1)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


class _LockAnswer:
    """The same with a lock, where ``select.poll`` does not exist (Windows)."""

    __slots__ = ("lock",)

    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.lock.acquire()

    def give(self) -> None:
        self.lock.release()

    def wait(self, limit: float) -> bool:
        return self.lock.acquire(True, limit)

    def take_given(self) -> None:
        self.lock.acquire(False)

    def close(self) -> None:
        pass


_Answer = _PipeAnswer if hasattr(select, "poll") else _LockAnswer


class NoWorker(RuntimeError):
    """No worker thread could be started for a call (the process is out of threads or file descriptors): nothing ran.

    ``started``: raised by a call that had begun (a tool's own hand-off inside it, which may have done something
    first) rather than by the hand-off of the call itself; set where the call's code runs (:meth:`_Worker._serve`,
    and a guarded call's own wrapper of its tool), so that only a call that never began is told "nothing ran"."""

    started = False


#: idle workers kept for the next calls; a worker that ends a call with this many idle already ends too (each holds a
#: thread and four descriptors: a burst of calls at once left every one of its workers behind, for good)
IDLE_WORKERS = 16


class _Worker:
    """A daemon thread that runs one call at a time, for as long as it is kept (:data:`IDLE_WORKERS`). It sleeps in ``os.read`` on
    a pipe of its own, woken by one byte: on Linux about half the CPU of a lock's wake-up (a pipe wakes its reader
    on the writer's CPU once the writer blocks; a lock wakes it at once elsewhere, to wait for the GIL)."""

    __slots__ = ("answer", "cpu", "error", "finished", "fn", "home", "inbox", "late", "orphan", "pool", "retired",
                 "running", "tid", "value", "wake")

    def __init__(self, pool: _Pool) -> None:
        self.pool = pool  # the pool it goes back to (its lock guards the hand-back of a result)
        self.inbox, self.wake = os.pipe()
        try:
            self.answer: _PipeAnswer | _LockAnswer = pool.answer_kind()  # given when a call its caller still waits for ends
        except BaseException:
            os.close(self.inbox)
            os.close(self.wake)
            raise
        self.fn: Callable[[], Any] | None = None
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.late: Future | None = None  # made only for a caller that stopped waiting
        self.tid: int | None = None  # its thread's id for the system, once it runs (see _follow)
        self.home: set[int] | None = None  # the CPUs its caller may use, given back once it is woken (see _follow)
        self.cpu = -1  # the CPU it was last kept to
        self.retired = False  # told to end (_Pool.rest): its next wake-up ends its thread
        self.running = self.orphan = False  # its thread has begun; its maker was interrupted while starting it
        try:
            threading.Thread(target=self._serve, daemon=True, name="agentlab-tool").start()
        except RuntimeError:  # no thread started: nothing holds the descriptors
            self.close()
            raise
        except BaseException:
            # a signal's handler raised while the thread was starting: it may run (its descriptors stay its own, never
            # closed under it and handed to another worker). Whoever comes second, this or its thread, puts it among
            # the pool's workers, so that it is used, not left asleep for good
            with pool.lock:
                self.orphan, running = True, self.running
                if running:
                    pool.every.append(self)
            if running:
                pool.rest(self)
            raise

    def close(self) -> None:
        """Its descriptors closed (a worker whose thread never started, or one that has ended)."""
        for fd in (self.inbox, self.wake):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self.answer.close()

    def _serve(self) -> None:
        self.tid = threading.get_native_id()
        with self.pool.lock:
            self.running, orphan = True, self.orphan
            if orphan:
                self.pool.every.append(self)
        if orphan:
            self.pool.rest(self)
        read = os.read
        while True:
            if not read(self.inbox, 1):  # end of file: the pipe was closed, nothing more will come
                return
            with self.pool.lock:  # the call taken under the lock: a caller interrupted before it waited takes it back
                fn, self.fn = self.fn, None
                retired = self.retired
            if retired:  # put to rest (_Pool.rest): its descriptors go with it
                self.close()
                return
            if fn is None:  # a wake-up whose call was taken back (_Pool._start): asleep again
                continue
            if self.cpu >= 0:
                # kept to its caller's CPU to be woken there (_follow); what it runs, and the threads and processes
                # that starts, gets its caller's CPUs again: a tool's `make -j8` was held to one
                self._let_go()
            try:
                value, error = fn(), None
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                if isinstance(exc, NoWorker):
                    exc.started = True  # raised inside the call, which had begun
                value, error = None, exc
            with self.pool.lock:  # the answer given under the lock: a caller that gives up knows it is there (_give_up)
                self.value, self.error, self.finished = value, error, True
                late, self.late = self.late, None
                if late is None:
                    self.answer.give()
            if late is None:
                continue
            self.value = self.error = None
            if error is not None:
                late.set_exception(error)
            else:
                late.set_result(value)
            self.pool.rest(self)  # its caller is gone: free for the next call once the late result is in


    def _let_go(self) -> None:
        """Back to the CPUs its caller may use (those of the process's main thread, if the system refuses them)."""
        for cpus in (self.home, lambda: os.sched_getaffinity(os.getpid())):
            try:
                os.sched_setaffinity(0, cpus() if callable(cpus) else cpus)  # type: ignore[arg-type]
                break
            except (OSError, TypeError, ValueError):
                continue
        self.cpu = -1


class _Pool:
    """The idle workers. A worker is taken for one call and put back when it ends; a write that outlives
    its caller's wait keeps its worker until it finishes, so a hung write never delays the next one."""

    def __init__(self, answer: type[_PipeAnswer | _LockAnswer] | None = None) -> None:
        self.answer_kind = answer or _Answer  # how a worker tells its caller it is done (a pipe, or a lock)
        self.lock = _thread.allocate_lock()
        self.idle: list[_Worker] = []
        self.every: list[_Worker] = []

    def try_run(self, fn: Callable[[], Any], limit: float) -> tuple[bool, Any]:
        """``fn()`` in a worker, waited for in this thread at most ``limit`` seconds: ``(True, its value)`` (its
        exception raised here), or ``(False, a Future)`` its outcome settles, once the caller stopped waiting."""
        w = self._start(fn, None)
        try:
            answered = w.answer.wait(limit)
        except BaseException:  # a signal's handler raised meanwhile (a caller's own deadline): no worker is lost
            if self._give_up(w) is None:
                w.value = w.error = None
                self.rest(w)
            raise
        if not answered and (late := self._give_up(w)) is not None:
            return False, late
        value, error = w.value, w.error
        w.value = w.error = None  # the worker holds no result (nor a traceback's frames) while idle
        self.idle.append(w)  # (not through rest(): a handler may raise as a function is entered, not here)
        if len(self.idle) > IDLE_WORKERS:
            self._retire_extra()
        if error is not None:
            raise error
        return True, value

    def run_to_end(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in a worker, waited for as long as it takes, as a thread pool's caller waits for its task. An
        exception raised into the wait (a signal's handler: Ctrl-C) goes on only once ``fn`` has ended, as it does
        from a ``with ThreadPoolExecutor()`` block, whose exit waits for its threads: a write under way is finished
        and recorded, never left half-way to a process about to exit (a second one ends that wait)."""
        w = self._start(fn, None)
        try:
            while not w.answer.wait(_LONGEST):
                pass
        except BaseException:
            late = self._give_up(w)
            if late is None:  # it had just ended: its result is dropped with the wait
                w.value = w.error = None
                self.rest(w)
            else:
                futures_wait([late])
            raise
        value, error = w.value, w.error
        w.value = w.error = None
        self.idle.append(w)  # (as in try_run)
        if len(self.idle) > IDLE_WORKERS:
            self._retire_extra()
        if error is not None:
            raise error
        return value

    def rest(self, w: _Worker) -> None:
        """``w``, its call over, kept for the next call; past :data:`IDLE_WORKERS` idle, the extra ones end."""
        self.idle.append(w)  # atomic (one bytecode's C call)
        if len(self.idle) > IDLE_WORKERS:
            self._retire_extra()

    def _retire_extra(self) -> None:
        """The idle workers past :data:`IDLE_WORKERS` end: each wakes to no call and ends, closing its descriptors."""
        while len(self.idle) > IDLE_WORKERS:
            try:
                w = self.idle.pop(0)
            except IndexError:
                return
            with self.lock:
                with contextlib.suppress(ValueError):
                    self.every.remove(w)
                w.fn, w.retired = None, True
            os.write(w.wake, b"\0")

    def _give_up(self, w: _Worker) -> Future | None:
        """The caller stops waiting for ``w``: the Future its outcome settles while it still runs (then it goes back
        to the idle ones by itself), or None when it has just ended (its answer taken, its result the caller's)."""
        with self.lock:
            if not w.finished:
                fut: Future = Future()
                fut.set_running_or_notify_cancel()
                w.late = fut
                return fut
            # it ended, and gave its answer under this lock: still there, or taken by the wait a signal's handler
            # then cut short. Taken now if it is there (never waited for: a wait here hung for good), so that the
            # worker's next call is waited for again
            w.answer.take_given()
        return None

    def submit(self, fn: Callable[[], Any]) -> Future:
        """``fn()`` in a worker, its outcome in a Future (for a caller that waits on an event loop); the worker
        goes back to the idle ones when it has settled the Future."""
        fut: Future = Future()
        fut.set_running_or_notify_cancel()
        self._start(fn, fut)
        return fut

    def _start(self, fn: Callable[[], Any], late: Future | None) -> _Worker:
        """An idle worker (or a new one) woken to run ``fn``; ``late``: the Future its outcome settles, if any."""
        try:
            # taken by subscript then deleted: neither is a call, so no signal's handler (nor another thread) runs in
            # between; a handler raising just after pop() returned lost the worker it had taken
            w = self.idle[-1]
            del self.idle[-1]
        except IndexError:
            try:
                w = _Worker(self)
            except (OSError, RuntimeError) as exc:  # out of descriptors or threads: said as such, nothing ran
                raise NoWorker(f"no worker thread could be started: {exc}") from exc
            with self.lock:
                self.every.append(w)
        w.finished, w.late = False, late
        w.fn = fn
        try:
            # kept to its caller's CPU, it runs there when the caller blocks (in a poll). Left anywhere, a keyed
            # write's hand-off from an event loop (bench_site.py) cost 100-300 us more CPU in-process on 2 busy CPUs
            _follow(w)
            os.write(w.wake, b"\0")
        except BaseException:
            # a signal's handler raised before the caller could wait (before or just after the wake-up): the call is
            # taken back if the worker has not taken it (then no answer comes, and the worker, woken or not, goes
            # back to the idle ones); else it runs on, for nobody, and the worker goes back by itself once it ends
            with self.lock:
                if w.fn is fn:  # not taken: taken back
                    w.fn, back = None, True
                elif late is not None:  # a Future's call: it settles it and goes back by itself
                    back = False
                elif w.finished:  # it ended in between and answered: the answer taken, the worker put back
                    w.answer.take_given()
                    w.value = w.error = None
                    back = True
                else:  # under way: it goes back by itself once it ends, settling a Future nobody reads
                    w.late = Future()
                    w.late.set_running_or_notify_cancel()
                    back = False
            if back:
                self.rest(w)
            raise
        return w

    def forget(self) -> None:
        """In a forked child: the workers' threads did not come along (fork copies only the calling
        thread), so the next call starts a new one. Without this, a child's write was handed to a thread
        that does not exist and reported "still running" at its timeout, never having run."""
        for w in self.every:
            try:
                os.close(w.inbox)
                os.close(w.wake)
                w.answer.close()
            except OSError:
                pass
        self.lock = _thread.allocate_lock()  # another thread may have held it at the fork
        self.idle, self.every = [], []


def _cpu_now() -> Callable[[], int] | None:
    """The C library's ``sched_getcpu`` (the CPU the calling thread runs on), where threads can be kept to a CPU
    (Linux); else None."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        import ctypes
        getcpu = ctypes.CDLL(None).sched_getcpu
    except (ImportError, OSError, AttributeError):
        return None
    getcpu.restype, getcpu.argtypes = ctypes.c_int, []
    return getcpu


_CPU_NOW = _cpu_now()


def _follow(w: _Worker) -> None:
    """Keep the worker on the CPU its caller runs on (Linux), so that a hand-off stays on one CPU.

    A worker woken on another CPU takes the GIL there while its caller still needs it, and each turn wakes a
    thread across CPUs: measured in the guarded loop on 2 CPUs (old and new interleaved in one process), a keyed
    write on SQLite cost 15-34 us more CPU (median) with the worker left anywhere. Once woken, the worker lets go of
    that CPU again (``_Worker._serve``: the call, and what it starts, may use every CPU), so the system call is made
    at every hand-off (about 5 us a hand-off in a tight loop, both calls together); a system that refuses it (a CPU set
    that changed meanwhile) leaves the worker where it is.
    """
    if _CPU_NOW is None or w.tid is None:
        return
    cpu = _CPU_NOW()
    if cpu != w.cpu and cpu >= 0:
        try:
            home = os.sched_getaffinity(0)  # the caller's CPUs as they are now (an operator's taskset included)
            if cpu not in home:
                return
            os.sched_setaffinity(w.tid, {cpu})
        except OSError:
            return
        w.cpu, w.home = cpu, home


_pool = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _pool.forget())
