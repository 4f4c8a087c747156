"""Live curves: the refund desk's three monitoring curves over a stream of runs, with reference lines and alerts
(docs/metrics.md#live-curves-and-alerts).

The curves are task success, invalid-call rate and takeover rate, each computed by
:func:`agentlab.evals.metrics.summarize` (the one definition) over a sliding window of the last runs, or over
fixed time buckets. A team sets a reference line per curve and which side of it is unhealthy; when a curve
crosses its line onto that side, the alert fires once: the callback is called and a line is logged. It is
re-armed only after the curve has come back past the line by ``margin`` (hysteresis), so a curve that hovers at
its line does not page anyone at every run.
"""
from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from ..i18n import Lang, t
from ..runs import Run
from . import metrics
from .metrics import summarize

__all__ = ["CURVES", "LINES", "Alert", "LiveCurves", "Point", "RefLine"]

#: the three curves, keys of :func:`agentlab.evals.metrics.summarize`
CURVES: tuple[str, ...] = ("task_success_rate", "invalid_call_rate", "takeover_rate")

log = logging.getLogger("agentlab.monitor")


@dataclass(frozen=True)
class RefLine:
    """A reference line: ``bad`` says which side of ``value`` is unhealthy (``below`` for success)."""

    metric: str
    value: float
    bad: Literal["above", "below"]

    def breached(self, x: float, margin: float = 0.0) -> bool:
        """On the unhealthy side (strictly past the line, or within ``margin`` of it when re-arming)."""
        return x < self.value + margin if self.bad == "below" else x > self.value - margin


# Starting points, not targets: a team calibrates them on its own traffic (docs/metrics.md#health-lines). The
# values and their unhealthy sides are metrics.HEALTH_LINES, the one definition the headline table shows too.
_CURVES = ("task_success_rate", "invalid_call_rate", "takeover_rate")


def _default_lines() -> tuple[RefLine, ...]:
    lines = metrics.HEALTH_LINES
    return tuple(RefLine(m, float(lines[m]["value"]), lines[m]["bad"]) for m in _CURVES)  # type: ignore[arg-type]


#: the default reference lines, one per curve
LINES: tuple[RefLine, ...] = _default_lines()


@dataclass(frozen=True)
class Point:
    """One point of the three curves: ``at`` is the time of the window's last run (or the bucket's start)."""

    at: float
    runs: int
    values: Mapping[str, float]


@dataclass(frozen=True)
class Alert:
    """A curve crossed its line onto the unhealthy side at ``point``."""

    line: RefLine
    value: float
    point: Point

    def text(self, lang: Lang = "en") -> str:
        return t("monitor.alert", lang, metric=t("eval." + self.line.metric, lang), value=f"{self.value:.1%}",
                 side=t("monitor." + self.line.bad, lang), line=f"{self.line.value:.1%}", runs=self.point.runs)


class LiveCurves:
    """Feed runs as they finish (:meth:`add`); read :attr:`points` and :attr:`alerts`.

    ``window``: each run adds a point over the last ``window`` runs (from ``min_runs`` on, default the whole
    window). ``bucket_s``: instead, one point per time bucket of that many
    seconds, made when a run of a later bucket arrives or at :meth:`flush`. ``correct`` grades a run
    (agentlab.evals.outcome); without it, and without ``success=`` at :meth:`add`, the success curve is not
    graded (NaN) and never alerts. ``on_alert`` is called with each :class:`Alert`; every alert is also logged
    on the ``agentlab.monitor`` logger at WARNING.
    """

    def __init__(self, lines: Iterable[RefLine] | None = None, *, window: int = 20, bucket_s: float | None = None,
                 min_runs: int | None = None, margin: float = 0.0, correct: Callable[[Run], bool] | None = None,
                 on_alert: Callable[[Alert], object] | None = None, clock: Callable[[], float] = time.time,
                 lang: Lang = "en"):
        if window < 1 or (bucket_s is not None and bucket_s <= 0) or margin < 0:
            raise ValueError("window >= 1, bucket_s > 0 and margin >= 0")
        self.lines = tuple(LINES if lines is None else lines)
        self.window, self.bucket_s, self.margin = window, bucket_s, margin
        # a rate over three runs is noise: a sliding window waits until it is full; a bucket counts what it got
        self.min_runs = (1 if bucket_s else window) if min_runs is None else min_runs
        self.correct, self.on_alert, self.clock, self.lang = correct, on_alert, clock, lang
        self.points: list[Point] = []
        self.alerts: list[Alert] = []
        self._runs: deque[tuple[Run, bool | None]] = deque(maxlen=None if bucket_s else window)
        self._bucket: float | None = None
        self._armed = {id(line): True for line in self.lines}

    def add(self, run: Run, *, at: float | None = None, success: bool | None = None) -> list[Alert]:
        """One finished run (``at``: when, default now). Returns the alerts this run fired."""
        at = self.clock() if at is None else at
        ok = success if success is not None else (bool(self.correct(run)) if self.correct else None)
        fired: list[Alert] = []
        if self.bucket_s is not None:
            bucket = math.floor(at / self.bucket_s) * self.bucket_s
            if self._bucket is not None and bucket != self._bucket:
                fired += self.flush()
            self._bucket = bucket
            self._runs.append((run, ok))
            return fired
        self._runs.append((run, ok))
        if len(self._runs) >= self.min_runs:
            fired += self._point(at)
        return fired

    def flush(self) -> list[Alert]:
        """Close the current time bucket (bucket mode): its point, and the alerts it fires."""
        if self.bucket_s is None or not self._runs or self._bucket is None:
            return []
        fired = self._point(self._bucket) if len(self._runs) >= self.min_runs else []
        self._runs.clear()
        return fired

    def _point(self, at: float) -> list[Alert]:
        pairs = list(self._runs)
        graded = all(ok is not None for _, ok in pairs)
        verdicts = {id(r): ok for r, ok in pairs}
        s = summarize([r for r, _ in pairs], (lambda r: bool(verdicts[id(r)])) if graded else None)
        point = Point(at, len(pairs), {m: float(s[m]) for m in CURVES})
        self.points.append(point)
        fired = []
        for line in self.lines:
            x = point.values.get(line.metric, math.nan)
            if math.isnan(x):
                continue
            if self._armed[id(line)] and line.breached(x):
                self._armed[id(line)] = False
                alert = Alert(line, x, point)
                fired.append(alert)
            elif not self._armed[id(line)] and not line.breached(x, self.margin):
                self._armed[id(line)] = True  # back on the healthy side, past the margin: the next crossing counts
        for alert in fired:
            self.alerts.append(alert)
            log.warning(alert.text(self.lang))
            if self.on_alert is not None:
                self.on_alert(alert)
        return fired

    def series(self) -> dict[str, list[tuple[float, float]]]:
        """``{curve: [(at, value), ...]}``, for :func:`agentlab.workbook.plots.plot_live`."""
        return {m: [(p.at, p.values[m]) for p in self.points] for m in CURVES}
