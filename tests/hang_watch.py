"""A test still running well past its time limit ends its worker, with every thread's stack printed first.

Why: pytest-timeout stops a test with SIGALRM, and the workbook's own code uses SIGALRM too (a read's deadline, a
guarded turn's held alarm, a learner's check). When a test's code loses pytest-timeout's timer, or hangs where no
signal handler can run, nothing stops it: one such test held a CI run until the CI's own limit, 1,900 s after the
rest of the suite had finished, and the log said neither which test nor where it stood.

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
from collections.abc import Iterator
from typing import IO

import pytest

GRACE = 120.0  # seconds past pytest-timeout's limit

_terminal: IO[str] | None = None  # the run's own stderr, kept from before pytest captured it


def limit_of(item: pytest.Item) -> float | None:
    """Seconds the watchdog gives ``item``: ``AGENTLAB_TEST_WATCHDOG`` if set, else its pytest-timeout limit (its
    ``timeout`` marker or the ini's) plus :data:`GRACE`; None where neither sets one (no pytest-timeout)."""
    told = os.environ.get("AGENTLAB_TEST_WATCHDOG")
    if told:
        return float(told)
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        limit = float(marker.args[0])
    else:
        try:
            limit = float(item.config.getini("timeout") or 0)
        except ValueError:  # no pytest-timeout: its ini option is unknown
            return None
    return limit + GRACE if limit > 0 else None


def pytest_configure(config: pytest.Config) -> None:
    global _terminal
    # fd 2 is the run's own stderr here: pytest suspends its global capture once the first conftests are loaded and
    # resumes it for the session (resuming it from here would capture the run's whole terminal output)
    _terminal = os.fdopen(os.dup(2), "w")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # around setup, call and teardown: the module's and the session's fixtures end in the last test's teardown
    limit = limit_of(item)
    if limit is not None and _terminal is not None:
        faulthandler.dump_traceback_later(limit, exit=True, file=_terminal)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
