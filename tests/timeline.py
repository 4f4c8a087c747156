"""Where the wall time of ``python run.py test`` went: each pytest-xdist worker's span and busy time, and each
``xdist_group``'s span and worker, printed at the end of the run (tests/conftest.py collects the reports). Also the
CPU each file's tests cost, with the processes they started and waited for (servers, kernels, builds): on two
cores a suite that keeps both busy is as long as its CPU, and a file's wall time says little of its share of it.

Why: the suite runs on a few workers and one group (the hub's) runs serially on one of them. Whether that group or
the rest decides the run's length was guessed once and was wrong; every CI log now says it, so the next change to
the suite's schedule starts from that run's own figures rather than from a second run of the whole suite.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable, Iterator

import pytest


@dataclasses.dataclass(frozen=True)
class Span:
    """One test's setup, call or teardown on one worker: wall-clock start and stop (seconds since the epoch)."""
    worker: str
    nodeid: str
    start: float
    stop: float
    cpu: float = 0.0  # CPU seconds of the worker and of the processes it waited for, during this phase


def group_of(nodeid: str) -> str | None:
    """The ``xdist_group`` pytest-xdist appended to a node id (``path::test@group``), or None (a parameter's own ``@``
    inside its brackets is not a group, as xdist itself reads it)."""
    at = nodeid.rfind("@")
    return nodeid[at + 1:] if at > nodeid.rfind("]") else None


def summary(spans: Iterable[Span]) -> list[str]:
    """Lines for the terminal: the run's span; per worker its last stop and the seconds it spent in tests; per group
    its worker, first start, last stop and test count; the test that stopped last. Times from the first start."""
    spans = list(spans)
    if not spans:
        return []
    t0 = min(s.start for s in spans)
    end = max(spans, key=lambda s: s.stop)
    lines = [f"suite timeline: {end.stop - t0:.0f} s from the first test's start to the last test's stop"]
    for worker in sorted({s.worker for s in spans}):
        mine = [s for s in spans if s.worker == worker]
        busy = sum(s.stop - s.start for s in mine)
        tests = len({s.nodeid for s in mine})
        lines.append(f"  worker {worker}: {tests} tests, {busy:.0f} s in tests, last stop at {max(s.stop for s in mine) - t0:.0f} s")
    groups: dict[str, list[Span]] = {}
    for s in spans:
        name = group_of(s.nodeid)
        if name:
            groups.setdefault(name, []).append(s)
    for name, mine in sorted(groups.items()):
        first, last = min(s.start for s in mine) - t0, max(s.stop for s in mine) - t0
        workers = ",".join(sorted({s.worker for s in mine}))
        lines.append(f"  group {name} on {workers}: {len({s.nodeid for s in mine})} tests, "
                     f"{first:.0f} s to {last:.0f} s ({last - first:.0f} s)")
    lines.append(f"  last to stop: {end.nodeid} on {end.worker}")
    files: dict[str, float] = {}
    for s in spans:
        path = s.nodeid.split("::", 1)[0]
        files[path] = files.get(path, 0.0) + s.stop - s.start
    top = sorted(files.items(), key=lambda kv: -kv[1])[:FILES]
    lines.append("  files with the most time in tests: " + ", ".join(f"{path} {sec:.0f} s" for path, sec in top))
    cpu: dict[str, float] = {}
    for s in spans:
        path = s.nodeid.split("::", 1)[0]
        cpu[path] = cpu.get(path, 0.0) + s.cpu
    if any(cpu.values()):
        used = sorted(cpu.items(), key=lambda kv: -kv[1])[:FILES]
        lines.append(f"  CPU in tests: {sum(cpu.values()):.0f} s; files with the most: "
                     + ", ".join(f"{path} {sec:.0f} s" for path, sec in used))
    return lines


def cpu_seconds() -> float:
    """This process's CPU (all its threads, to the nanosecond) and that of the processes it has waited for (their
    user + system time, in the clock's ticks), in seconds."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


#: the files the summary names, slowest first: where a shorter suite has to come from
FILES = 15


# --- the hooks (imported by tests/conftest.py) -------------------------------------------------------------------

_SPANS: list[Span] = []
_CPU = pytest.StashKey[float]()


def _phase(item: pytest.Item) -> Iterator[None]:
    item.stash[_CPU] = cpu_seconds()
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    """The phase's CPU on its report (made right after the phase), which xdist carries to the controller."""
    report = yield
    started = item.stash.get(_CPU, None)
    if started is not None:
        report.user_properties.append(("cpu", cpu_seconds() - started))
    return report


def pytest_runtest_logreport(report) -> None:
    """Each setup, call and teardown as it reaches the controller: worker, node id (with its ``@group``), start, stop.
    Only reports a worker sent carry a worker: a run on one process has no schedule to explain, and a worker's own
    reports are not counted twice."""
    worker = getattr(report, "worker_id", None) or getattr(getattr(getattr(report, "node", None), "gateway", None),
                                                            "id", None)
    start, stop = getattr(report, "start", None), getattr(report, "stop", None)
    if worker and start is not None and stop is not None:
        cpu = sum(float(v) for k, v in getattr(report, "user_properties", ()) if k == "cpu")
        _SPANS.append(Span(str(worker), report.nodeid, float(start), float(stop), cpu))


def pytest_terminal_summary(terminalreporter) -> None:
    for line in summary(_SPANS):
        terminalreporter.write_line(line)
    if os.environ.get("AGENTLAB_SPANS"):  # every phase, for a closer look than the summary's (one JSON line each)
        with open(os.environ["AGENTLAB_SPANS"], "w", encoding="utf-8") as out:
            out.writelines(json.dumps(dataclasses.asdict(s)) + "\n" for s in _SPANS)
