"""A test still running well past its time limit ends its worker, with every thread's stack printed first.

Why: pytest-timeout stops a test with SIGALRM, and the workbook's own code uses SIGALRM too (a read's deadline, a
guarded turn's held alarm, a learner's check). When a test's code loses pytest-timeout's timer, or hangs where no
signal handler can run, nothing stops it: one such test held a CI run at 8,527 of 8,530 tests until the CI's own
limit, and the log said neither which test nor where it stood.

This watchdog does not use signals. ``faulthandler``'s timer is a C thread that needs neither the GIL nor the main
thread: at the limit it prints every thread's stack to the terminal the run was started from (not to the test's
captured output, which is lost with the process) and ends the process. pytest-xdist then reports the test as failed,
naming it ("worker 'gw1' crashed while running ..."), starts a new worker and runs the rest.

The limit is the test's pytest-timeout limit plus :data:`GRACE` seconds, so that a test pytest-timeout can stop is
stopped by it, with its own report. ``AGENTLAB_TEST_WATCHDOG`` (seconds) replaces the limit: the watchdog's own
test sets it low.
"""
from __future__ import annotations

import faulthandler
import os
import time
from collections.abc import Iterator
from typing import IO, Any

import pytest

GRACE = 120.0  # seconds past pytest-timeout's limit

_terminal: IO[str] | None = None  # the run's own stderr, kept from before pytest captured it
#: the test in progress (one at a time in a process): when its watch rings (time.monotonic), and the least it is
#: given again after a failure
_watched: tuple[float, float] | None = None


def limit_of(item: pytest.Item) -> float | None:
    """Seconds the watchdog gives ``item``: ``AGENTLAB_TEST_WATCHDOG`` if set, else its pytest-timeout limit (as
    pytest-timeout itself reads it: a marker's argument or keyword, ``--timeout``, ``PYTEST_TIMEOUT``, the ini) plus
    :data:`GRACE`; None where no limit is set."""
    told = os.environ.get("AGENTLAB_TEST_WATCHDOG")
    if told:
        return float(told)
    try:
        from pytest_timeout import _get_item_settings
        limit = float(_get_item_settings(item).timeout or 0)
    except Exception:  # noqa: BLE001 - another pytest-timeout, or none: the marker's first argument or the ini's
        marker = item.get_closest_marker("timeout")
        try:
            limit = float(marker.args[0] if marker is not None and marker.args else item.config.getini("timeout") or 0)
        except (ValueError, TypeError):
            return None
    return limit + GRACE if limit > 0 else None


def pytest_configure(config: pytest.Config) -> None:
    global _terminal
    # fd 2 is the run's own stderr here: pytest's capture is suspended once the first conftests are loaded and turned
    # on again only around each collected file and each test phase (resuming it from here captured the run's output)
    _terminal = os.fdopen(os.dup(2), "w")


def pytest_unconfigure(config: pytest.Config) -> None:
    global _terminal
    faulthandler.cancel_dump_traceback_later()
    if _terminal is not None:
        _terminal.close()
        _terminal = None


def _arm(seconds: float) -> None:
    if _terminal is not None:
        faulthandler.dump_traceback_later(seconds, exit=True, file=_terminal)


def _debugging(config: pytest.Config) -> bool:
    """``--pdb`` or ``--trace``: a person at the debugger, whose pause is no hang."""
    return bool(config.getvalue("usepdb") or config.getvalue("trace"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # around setup, call and teardown: the module's and the session's fixtures end in the last test's teardown
    global _watched
    limit = limit_of(item)
    if limit is not None and not _debugging(item.config):
        _watched = (time.monotonic() + limit, min(GRACE, limit))
        _arm(limit)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        _watched = None


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector, call: Any, report: Any) -> None:
    """A phase failed: pytest's faulthandler plugin has just cancelled the process's one dump timer (and
    pytest-timeout its own alarm), so the teardown that follows was watched by nothing. The watch is set again for
    the time the test has left (at least :data:`GRACE`, or its whole limit if that is shorter)."""
    if _watched is not None:
        deadline, least = _watched
        _arm(max(deadline - time.monotonic(), least))
