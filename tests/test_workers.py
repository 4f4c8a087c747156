"""agentlab's worker threads (agentlab/workers.py): kept from call to call, at most a few idle, woken on their
caller's CPU, none at all when the process is out of threads or descriptors, forked."""
import os
import threading
import time

import pytest
from conftest import interrupt_once

import agentlab.workers as workers
from agentlab.timeouts import run_with_timeout

# every test with a pool of its own, answering through a pipe and through a lock (conftest.worker_pool)
pytestmark = pytest.mark.usefixtures("worker_pool")


def test_after_a_burst_of_calls_at_once_only_a_few_idle_workers_are_kept_and_the_rest_end():
    """Each call at once needs a worker of its own; once they are over, IDLE_WORKERS of them are kept and the others
    end, their threads and descriptors with them (a burst of 200 left 200 threads and 800 descriptors for good)."""
    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))
    run_with_timeout(lambda: 0, 5.0, write=True)
    threads, open_fds = threading.active_count(), fds()
    go = threading.Event()
    n = workers.IDLE_WORKERS * 3
    callers = [threading.Thread(target=run_with_timeout, args=(lambda: go.wait(10), 5.0), kwargs={"write": True})
               for _ in range(n)]
    for c in callers:
        c.start()
    deadline = time.monotonic() + 10
    while len(workers._pool.every) < n:  # every caller's call under way, each in its own worker
        assert time.monotonic() < deadline
        time.sleep(0.01)
    go.set()
    for c in callers:
        c.join()
    deadline = time.monotonic() + 10
    while threading.active_count() > threads + workers.IDLE_WORKERS - 1:
        assert time.monotonic() < deadline, "the workers past those kept did not end"
        time.sleep(0.01)
    assert len(workers._pool.idle) == len(workers._pool.every) == workers.IDLE_WORKERS
    if os.path.isdir("/proc/self/fd"):
        fewer = 4 if workers._pool.answer_kind is workers._PipeAnswer else 2  # a worker's descriptors
        assert fds() <= open_fds + (workers.IDLE_WORKERS - 1) * fewer
    assert [run_with_timeout(lambda i=i: i, 5.0, write=True) for i in range(3)] == [0, 1, 2]


def test_no_worker_to_be_had_is_said_as_such_and_a_guarded_write_is_told_unavailable_not_unknown(monkeypatch):
    """Out of descriptors (or threads), no worker can start: NoWorker, with nothing left open, and a guarded write
    that never began is UNAVAILABLE (send it again later), its claim released, never OUTCOME_UNKNOWN."""
    from agentlab.calls import classify_exception
    from agentlab.errors import make_error

    def no_pipe():
        raise OSError(24, "Too many open files")
    monkeypatch.setattr(workers.os, "pipe", no_pipe)
    ran = []
    with pytest.raises(workers.NoWorker):
        run_with_timeout(lambda: ran.append(1), 5.0, write=True)
    with pytest.raises(workers.NoWorker):
        workers._pool.run_to_end(lambda: ran.append(1))
    assert ran == [] and workers._pool.every == []
    error = classify_exception(workers.NoWorker("no worker"), write=True, resendable=False)
    assert error.code == make_error("UNAVAILABLE").code and error.category == "transient"


@pytest.mark.parametrize("when", ["running", "ended"])
def test_run_to_end_goes_on_from_an_interrupt_only_once_its_call_has_ended(when):
    """As a caller of a thread pool waits (LangGraph's ToolNode, whose lone calls go to agentlab's worker): as long as
    the call takes, its value or error handed back; a handler that raises in the wait (Ctrl-C) is raised once the call
    has ended, so a write is never left half-way to a process about to exit, and no worker is lost."""
    assert workers._pool.run_to_end(lambda: "value") == "value"
    with pytest.raises(KeyError, match="boom"):
        workers._pool.run_to_end(lambda: {}["boom"])
    worker = workers._pool.idle[-1]
    real, go, ended = worker.answer, threading.Event(), []

    class RaisingInTheWait:
        def give(self):
            real.give()

        def wait(self, limit):
            if when == "ended":
                while not worker.finished:
                    time.sleep(0.001)
            else:
                threading.Timer(0.2, go.set).start()  # the call ends a while after the interrupt
            raise KeyboardInterrupt  # as a handler raises out of poll()

        def take_given(self):
            real.take_given()

    def write():
        go.wait(10)
        ended.append("written")
        return "written"
    worker.answer = RaisingInTheWait()
    if when == "ended":
        go.set()
    try:
        with pytest.raises(KeyboardInterrupt):
            workers._pool.run_to_end(write)
        assert ended == ["written"], "the interrupt went on only once the call had ended"
    finally:
        worker.answer = real
    deadline = time.monotonic() + 10
    while worker not in workers._pool.idle:
        assert time.monotonic() < deadline, "the worker was lost"
        time.sleep(0.01)
    assert workers._pool.run_to_end(lambda: "second") == "second"
    assert run_with_timeout(lambda: "third", 5.0, write=True) == "third"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_runs_its_writes():
    """A child made by fork has only the forking thread: the parent's idle workers are not there.
    The child's write was handed to one of them and reported "still running" at its timeout, never run."""
    run_with_timeout(lambda: 0, 5.0, write=True)  # the parent has an idle worker
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what happened, never return into pytest
        try:
            answer = repr(run_with_timeout(lambda: "ran", 2.0, write=True))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            answer = type(exc).__name__
        os.write(write, answer.encode())
        os._exit(0)
    os.close(write)
    answer = os.read(read, 100).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == "'ran'"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="threads are kept to a CPU only on Linux with two CPUs or more to choose from")
def test_a_write_is_woken_on_the_cpu_of_its_caller_and_runs_with_every_cpu(monkeypatch):
    """A hand-off across CPUs cost a keyed write 15-34 us more CPU in the guarded loop: the worker is kept to the CPU
    its caller ran on when it handed the write over (where the caller then waits for it), and woken there. What it
    runs gets every CPU of the process again, and so do the threads and processes that starts (a tool's `make -j8`,
    kept to one CPU, took eight times as long)."""
    if workers._CPU_NOW is None:
        pytest.skip("no sched_getcpu in this C library")
    where = lambda: os.sched_getaffinity(0)  # noqa: E731 - run in the worker: its own CPU set
    run_with_timeout(where, 5.0, write=True)  # the worker starts (its thread id is known once it has run)
    kept: list[tuple[int, set]] = []
    real = os.sched_setaffinity

    def spy(tid, cpus):
        kept.append((tid, set(cpus)))
        real(tid, cpus)
    monkeypatch.setattr(workers.os, "sched_setaffinity", spy)
    worker = workers._pool.idle[-1]
    threads: list[set] = []

    def tool():
        other = threading.Thread(target=lambda: threads.append(os.sched_getaffinity(0)))
        other.start()
        other.join()
        return os.sched_getaffinity(0)
    cpus = run_with_timeout(tool, 5.0, write=True)
    assert kept[0][0] == worker.tid and len(kept[0][1]) == 1, "kept to one CPU before it was woken"
    assert kept[0][1] <= os.sched_getaffinity(0)  # a CPU the process may use
    assert cpus == threads[0] == os.sched_getaffinity(0), "the tool, and a thread it starts, get its caller's CPUs"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="threads are kept to a CPU only on Linux with two CPUs or more to choose from")
def test_a_call_handed_over_from_an_event_loop_is_woken_on_the_loops_cpu(monkeypatch):
    """The event loop's hand-off (submit: a keyed write on the site) keeps its worker to the loop's CPU too, until it
    is woken; what it runs gets every CPU."""
    if workers._CPU_NOW is None:
        pytest.skip("no sched_getcpu in this C library")
    where = lambda: os.sched_getaffinity(0)  # noqa: E731 - run in the worker: its own CPU set
    workers._pool.submit(where).result(5)  # the worker starts (its thread id is known once it has run)
    deadline = time.monotonic() + 5
    while not workers._pool.idle and time.monotonic() < deadline:  # it is idle again just after its result is set
        time.sleep(0.001)
    worker = workers._pool.idle[-1]  # the one the next call takes
    kept: list[tuple[int, set]] = []
    real = os.sched_setaffinity
    monkeypatch.setattr(workers.os, "sched_setaffinity", lambda tid, cpus: (kept.append((tid, set(cpus))), real(tid, cpus)))
    cpus = workers._pool.submit(where).result(5)
    assert kept[0][0] == worker.tid and len(kept[0][1]) == 1 and kept[0][1] <= os.sched_getaffinity(0)
    assert cpus == os.sched_getaffinity(0)


@pytest.mark.parametrize("way", ["try_run", "run_to_end"])
def test_an_interrupt_just_as_the_answer_lands_neither_hangs_nor_loses_a_worker(way):
    """A signal's handler that raises once the wait has taken the worker's answer: giving up then waited for an
    answer already taken, for good. Now the interrupt goes on at once, the worker goes back to the idle ones, and its
    next call hears its own result."""
    kind = workers._pool.answer_kind

    class TakenThenInterrupted(kind):  # type: ignore[misc, valid-type]
        armed = True

        def wait(self, limit):
            got = super().wait(limit)
            if TakenThenInterrupted.armed:
                TakenThenInterrupted.armed = False
                raise KeyboardInterrupt  # as a handler raises just after poll() and read() returned
            return got
    pool = workers._Pool(TakenThenInterrupted)
    raised: list[BaseException] = []

    def call() -> None:
        try:
            getattr(pool, way)(lambda: "first", *([5.0] if way == "try_run" else []))
        except BaseException as exc:  # noqa: BLE001 - what the caller sees
            raised.append(exc)
    caller = threading.Thread(target=call)
    caller.start()
    caller.join(5)
    assert not caller.is_alive(), "the caller hung giving up on an answer it had already taken"
    assert [type(e) for e in raised] == [KeyboardInterrupt]
    assert len(pool.idle) == len(pool.every) == 1, "the worker went back to the idle ones"
    assert pool.try_run(lambda: "second", 5.0) == (True, "second")
    assert pool.run_to_end(lambda: "third") == "third"


def test_an_interrupt_before_a_worker_is_woken_loses_no_worker(monkeypatch):
    """A handler that raises while a worker is being readied (kept to the caller's CPU), before it is woken: the
    worker goes back to the idle ones instead of being held by nobody, with its thread and descriptors, for good."""
    workers._pool.try_run(lambda: 0, 5.0)  # one idle worker
    interrupt_once(monkeypatch, workers, "_follow")
    with pytest.raises(KeyboardInterrupt):
        workers._pool.try_run(lambda: "never", 5.0)
    assert len(workers._pool.idle) == len(workers._pool.every) == 1
    assert workers._pool.try_run(lambda: "next", 5.0) == (True, "next")


def test_no_worker_raised_inside_a_call_that_had_begun_is_not_nothing_ran(monkeypatch):
    """NoWorker means "nothing ran" only from the hand-off of the call itself: one raised by the call's own code (a
    tool's nested hand-off, after it charged a card) is marked started, and a guarded write that raised it is
    OUTCOME_UNKNOWN, never resent as UNAVAILABLE (a second charge)."""
    from agentlab.calls import classify_exception
    from agentlab.guards import GuardConfig
    from agentlab.loop import run_guarded
    from agentlab.models.fakes import ScriptedModel
    from agentlab.models.interface import ToolCall
    from agentlab.tools import Registry, Tool

    def inside():
        raise workers.NoWorker("a nested hand-off found no worker")
    with pytest.raises(workers.NoWorker) as caught:
        run_with_timeout(inside, 5.0, write=True)
    assert caught.value.started
    assert classify_exception(caught.value, write=True, resendable=False).code == "OUTCOME_UNKNOWN"
    charged: list[str] = []

    def charge(order_id: str) -> dict:
        charged.append(order_id)
        raise workers.NoWorker("a nested hand-off found no worker")
    for timeout in (5.0, None):  # in a worker, and in the caller's own thread
        charged.clear()
        reg = Registry([Tool("charge", "Charge an order.", {"type": "object", "properties": {
            "order_id": {"type": "string"}}, "required": ["order_id"]}, fn=charge, side_effect=True)])
        call = ToolCall("charge", '{"order_id": "A1"}')
        run = run_guarded(ScriptedModel([call, call, "done"]), reg, "Charge A1.", config=GuardConfig(timeout=timeout),
                          sleep=lambda s: None)
        codes = [e.error_code for e in run.events if e.kind == "tool"]
        assert charged == ["A1"], "charged once: not resent, nor run again"
        assert codes[0] == "OUTCOME_UNKNOWN", codes


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="threads are kept to a CPU only on Linux with two CPUs or more to choose from")
def test_a_worker_gives_back_the_cpus_of_its_caller_as_they_are_not_those_the_process_started_with():
    """A caller kept to one CPU (an operator's taskset, after the process started): the call it hands over runs on
    that CPU alone, as it would in the caller's thread, not on every CPU the process started with."""
    one = {min(os.sched_getaffinity(0))}
    got: list[set] = []

    def restricted() -> None:
        os.sched_setaffinity(0, one)
        got.append(run_with_timeout(lambda: os.sched_getaffinity(0), 5.0, write=True))
    caller = threading.Thread(target=restricted)
    caller.start()
    caller.join(10)
    assert got == [one]
    assert run_with_timeout(lambda: os.sched_getaffinity(0), 5.0, write=True) == os.sched_getaffinity(0)


@pytest.mark.parametrize("way", ["try_run", "run_to_end", "submit"])
def test_an_interrupt_just_after_a_worker_is_woken_loses_no_worker_and_answers_no_other_call(monkeypatch, way):
    """A handler that raises as the wake-up's write returns, before the caller could wait: the call is taken back if
    the worker has not taken it, else it runs on for nobody; either way the worker is back among the idle ones once it
    is free, and the next call hears its own result, never the abandoned one's."""
    workers._pool.try_run(lambda: 0, 5.0)  # one idle worker
    interrupt_once(monkeypatch, workers.os, "write", after=True)
    with pytest.raises(KeyboardInterrupt):
        if way == "submit":
            workers._pool.submit(lambda: "abandoned")
        else:
            getattr(workers._pool, way)(lambda: "abandoned", *([5.0] if way == "try_run" else []))
    deadline = time.monotonic() + 5
    while len(workers._pool.idle) != 1:
        assert time.monotonic() < deadline, "the worker was lost"
        time.sleep(0.001)
    assert len(workers._pool.every) == 1
    assert workers._pool.try_run(lambda: "next", 5.0) == (True, "next")
    assert workers._pool.run_to_end(lambda: "and the next") == "and the next"
