"""The workbook's metrics, computed from runs (docs/metrics.md). The four headline numbers:

* task success rate: runs the case's grader passed (final data, and the expected status: a correct
  hand-over is a success); without a grader, not measured (NaN): a run's own "done" proves nothing.
* invalid-call rate: invalid tool calls / all tool calls (unparsable, unknown tool, bad arguments).
* average steps: model turns per run.
* human-takeover rate: runs that ended ``escalated`` or ``budget_exhausted``.

Beside them, two stricter formulas that count differently (docs/metrics.md#two-ways-to-count):

* task success (finished and checked): runs that finished (``done*``) *and* whose data the grader passed; a
  correct hand-over is not one (:func:`finished_and_checked`).
* takeover (anything not finished): runs that did not end ``done*``: a crash and a hand-over alike
  (:func:`not_finished`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping

from ..errors import CODES
from ..i18n import Lang, keys, t
from ..routing import RoutingTurn, routing_metrics
from ..runs import STATUSES, Run
from ..trace import Event

__all__ = ["HEALTH_LINES", "LAYER_DEFINITIONS", "Tally", "by_taxonomy", "called_needed", "checked_success_rate",
           "crosses", "failure_breakdown", "finished_and_checked", "layers", "not_finished", "pass_hat_k",
           "repair_turns", "right_tool", "rounds_to_recover",
           "routing_from_trace", "routing_turns", "self_correction_rate", "status_counts", "status_shares", "summarize",
           "unfinished_rate", "went_wrong", "went_wrong_text"]


#: Reference ("health") lines for the metrics: STARTING POINTS a team calibrates against its own baseline, never
#: targets the workbook vouches for. ``value`` is the line; ``bad`` says which side of it is unhealthy
#: ("below" for rates that should be high, "above" for those that should be low). Read by the live curves
#: (their reference lines and alerts), docs/metrics.md#health-lines and notebook 11.
HEALTH_LINES: dict[str, dict[str, float | str]] = {
    "task_success_rate": {"value": 0.90, "bad": "below"},
    "invalid_call_rate": {"value": 0.05, "bad": "above"},
    "avg_steps": {"value": 4.0, "bad": "above"},
    "takeover_rate": {"value": 0.10, "bad": "above"},
    "self_correction_rate": {"value": 0.80, "bad": "below"},
    "hit_rate": {"value": 0.95, "bad": "below"},
}


def crosses(name: str, value: float, lines: Mapping[str, Mapping[str, float | str]] = HEALTH_LINES) -> bool:
    """True when ``value`` of metric ``name`` is on the unhealthy side of its line (False for a metric with no
    line, or a value that is NaN: not measured is not an alarm)."""
    line = lines.get(name)
    if line is None or value != value:
        return False
    bound = float(line["value"])
    return value < bound if line["bad"] == "below" else value > bound


def summarize(runs: Iterable[Run], correct: Callable[[Run], bool] | None = None) -> dict:
    """The four metrics (and the status counts) over ``runs``.

    Success is a grader's verdict on the final data (``correct``; agentlab.evals.outcome is the one
    definition), never the run's own word: without a grader the success rate is NaN, "not graded",
    and ``finished_rate`` says only how many runs *claimed* to be done.
    """
    tally = Tally()
    for r in runs:
        tally.add(r, None if correct is None else bool(correct(r)))
    return tally.summary()


class Tally:
    """The counts :func:`summarize` reads, added one run at a time: the headline numbers of a stream of
    runs too long to hold (a team's logs, docs/metrics.md#bring-your-own-logs) in constant memory.

    ``add(run, verdict)``: ``verdict`` is whether the run succeeded, or None when nobody graded it; the
    success rate is over the graded runs only ("where the logs say"), NaN when none was.
    """

    __slots__ = ("calls", "checked", "finished", "graded", "invalid", "passed", "runs", "statuses", "steps", "takeovers")

    def __init__(self) -> None:
        self.runs = self.calls = self.invalid = self.steps = self.takeovers = self.finished = 0
        self.graded = self.passed = self.checked = 0
        self.statuses: Counter = Counter()

    def add(self, run: Run, verdict: bool | None = None) -> None:
        self.count(run.tool_calls, run.invalid_calls, run.steps, run.status, verdict)

    def count(self, calls: int, invalid: int, steps: int, status: str, verdict: bool | None = None) -> None:
        """One run given by its counts (a run counted as its rows came, never held whole: a team's telemetry)."""
        self.runs += 1
        self.calls += calls
        self.invalid += invalid
        self.steps += steps
        self.takeovers += status in ("escalated", "budget_exhausted")
        self.finished += status.startswith("done")
        self.statuses[status] += 1
        if verdict is not None:
            self.graded += 1
            self.passed += bool(verdict)
            self.checked += finished_and_checked(status, verdict)

    def summary(self) -> dict:
        n = max(self.runs, 1)
        return {
            "runs": self.runs,
            "task_success_rate": self.passed / self.graded if self.graded else float("nan"),
            "invalid_call_rate": self.invalid / self.calls if self.calls else float("nan"),  # no call: not measured
            "avg_steps": self.steps / n,
            "takeover_rate": self.takeovers / n,
            "finished_rate": self.finished / n,
            "checked_success_rate": self.checked / self.graded if self.graded else float("nan"),
            "unfinished_rate": (self.runs - self.finished) / n,
            "statuses": dict(self.statuses),
        }


def rounds_to_recover(run: Run) -> int | None:
    """Invalid calls the model sent before its first valid call after a mistake: the re-asks it
    needed to fix a bad call. 0 when it never erred; None when it never recovered."""
    invalid = 0
    for e in run.tool_events:
        if e.parse_ok is False or e.validate_ok is False:
            invalid += 1
        elif invalid:
            return invalid
    return 0 if invalid == 0 else None


def repair_turns(run: Run) -> int | None:
    """Model turns from the first call the model got wrong (refused as a validation error: unparsable,
    unknown tool, bad arguments, or refused by the tool's own check) to the first later call that ran
    (docs/metrics.md#self-correction-rate). None when it got nothing wrong, or never repaired it."""
    first = None
    for e in run.tool_events:
        if first is None:
            if e.error_category == "validation":
                first = e.round_index
        elif e.exec_ok and e.error_code is None:
            return e.round_index - first
    return None


def self_correction_rate(runs: Iterable[Run]) -> float:
    """Runs in which the model repaired a wrong call after reading the error, within the run's step
    budget / runs in which it made one (docs/metrics.md#self-correction-rate). NaN when no run had a
    wrong call: nothing to repair is not a perfect score."""
    wrong = [r for r in runs if any(e.error_category == "validation" for e in r.tool_events)]
    if not wrong:
        return float("nan")
    return sum(repair_turns(r) is not None for r in wrong) / len(wrong)


def status_counts(runs: Iterable[Run]) -> dict[str, int]:
    c = Counter(r.status for r in runs)
    return {s: c.get(s, 0) for s in STATUSES}


def went_wrong(e: Event) -> tuple[str, str] | None:
    """``(category, stage)`` of what went wrong in one tool call or model turn, fixed or not; None if nothing did.

    An event that carries an error code is counted by that error. One that carries none but was resent
    (``retry_count``) met a failure a resend fixed: that is a transient failure that happened, counted
    as ``transient`` at the stage every transient code has (:data:`~agentlab.errors.CODES`). The run's
    ``end`` event is skipped: an error that ends a run is counted once, where it happened.
    """
    if e.kind == "end":
        return None
    if e.error_code:
        return e.error_category or "unknown", e.error_stage or "unknown"
    if e.retry_count:
        return "transient", _TRANSIENT_STAGE
    return None


#: the stage of a failure a resend fixed: the one stage every transient code shares
_TRANSIENT_STAGE = "/".join(sorted({stage for cat, stage in CODES.values() if cat == "transient"}))


def by_taxonomy(runs: Iterable[Run]) -> dict[str, Counter]:
    """Tool calls and model turns that went wrong (:func:`went_wrong`, fixed or not), counted by retry
    class and by stage (docs/metrics.md#failures-by-both-taxonomies)."""
    cat: Counter = Counter()
    stage: Counter = Counter()
    for r in runs:
        for e in r.events:
            wrong = went_wrong(e)
            if wrong is not None:
                cat[wrong[0]] += 1
                stage[wrong[1]] += 1
    return {"category": cat, "stage": stage}


def went_wrong_text(counts: Mapping[str, int], lang: Lang = "en") -> str:
    """The sentence beside a plot of :func:`by_taxonomy` counts, from the very counts the plot draws: how many
    calls or turns went wrong, and each class (retry class or stage) with its count and share, largest first."""
    total = sum(counts.values())
    known = set(keys())

    def name(k: str) -> str:
        return next((t(key, lang) for key in (f"class.{k}", f"stage.{k}") if key in known), k)
    parts = [t("went_wrong.part", lang, name=name(k), count=v, share=v / max(total, 1))
             for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return t("went_wrong.counted", lang, n=total, parts=("，" if lang == "zh" else ", ").join(parts))


# --- four layers (docs/metrics.md#the-four-layers) ----------------------------------------
LAYER_DEFINITIONS = {
    "model": {
        "json_parse_rate": "tool calls whose arguments parsed as a JSON object / all tool calls",
        "schema_valid_rate": "tool calls that passed the schema and business checks / calls that parsed",
        "known_tool_rate": "tool calls naming a tool the registry has (or the case allows) / all tool calls",
        "right_tool_rate": "runs that called every tool their case needs and none it must leave alone / runs whose case declares either",
    },
    "tool": {
        "exec_success_rate": "tool executions that returned a result / executions attempted (valid calls)",
        "latency_p50_ms": "median wall time of one tool call, checks and retries included",
        "latency_p95_ms": "95th percentile of the same",
        "retries_per_call": "resends after transient failures / tool calls",
    },
    "task": {
        "completion_rate": "runs that ended done or done_after_self_correction / runs",
        "correct_rate": "runs whose final data matched the case's expectation / runs",
    },
    "experience": {
        "rounds_per_task": "model turns per run",
        "tokens_per_task": "prompt + completion tokens per run",
        "takeover_rate": "runs that ended escalated or budget_exhausted / runs",
    },
}


def _pct(values: list[float], q: float) -> float:
    if not values:  # no call timed: not measured, never 0 ms
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def layers(runs: Iterable[Run], correct: Callable[[Run], bool] | None = None,
           allowed_tools: Callable[[Run], set[str] | None] | None = None,
           needed_tools: Callable[[Run], Collection[str] | None] | None = None,
           avoided_tools: Callable[[Run], Collection[str] | None] | None = None) -> dict[str, dict[str, float]]:
    """The four layers (docs/metrics.md#the-four-layers), each metric defined in :data:`LAYER_DEFINITIONS`.

    ``needed_tools(run)``: the tools the run's case needs (:attr:`~agentlab.evals.suite.Case.needed_tools`), or
    None when it declares none; ``avoided_tools(run)`` the tools it must leave alone (:attr:`~agentlab.evals.suite.
    Case.avoided_tools`). Without either the right-tool rate is NaN (not measured), never the known-tool rate."""
    runs = list(runs)
    n = max(len(runs), 1)
    calls = [e for r in runs for e in r.tool_events]
    parsed = [e for e in calls if e.parse_ok]
    valid = [e for e in parsed if e.validate_ok is not False]
    executed = [e for e in calls if e.exec_ok is not None]
    right = 0
    for r in runs:
        allow = allowed_tools(r) if allowed_tools else None
        for e in r.tool_events:
            ok_name = e.error_code != "UNKNOWN_TOOL" and (allow is None or e.tool_name in allow)
            right += ok_name
    lat = [e.latency_ms for e in calls]

    def share(part: int, whole: int) -> float:  # of nothing (no call made, parsed or run): not measured, never 0%
        return part / whole if whole else float("nan")
    return {
        "model": {"json_parse_rate": share(len(parsed), len(calls)),
                  "schema_valid_rate": share(len(valid), len(parsed)),
                  "known_tool_rate": share(right, len(calls)),
                  "right_tool_rate": right_tool(runs, needed_tools, avoided_tools)["right_tool_rate"]},
        "tool": {"exec_success_rate": share(sum(bool(e.exec_ok) for e in executed), len(executed)),
                 "latency_p50_ms": _pct(lat, 0.5), "latency_p95_ms": _pct(lat, 0.95),
                 "retries_per_call": share(sum(e.retry_count for e in calls), len(calls))},
        "task": {"completion_rate": sum(r.status.startswith("done") for r in runs) / n,
                 "correct_rate": sum(bool(correct(r)) for r in runs) / n if correct else float("nan")},
        "experience": {"rounds_per_task": sum(r.steps for r in runs) / n,
                       # no usage reported at all (fake models) is unknown, not zero
                       "tokens_per_task": (sum(r.tokens for r in runs) / n if any(r.tokens for r in runs)
                                           else float("nan")),
                       "takeover_rate": sum(r.status in ("escalated", "budget_exhausted") for r in runs) / n},
    }


def called_needed(run: Run, needed: Collection[str], avoided: Collection[str] = ()) -> bool:
    """Whether ``run`` called every tool in ``needed`` at least once (valid or not: a call's arguments are the
    schema-valid rate's business; naming the tool the task needs is this one's) and none in ``avoided`` (the refund
    a case must not make: asking for it is the wrong choice, whether a guard then refused it or not)."""
    if not needed and not avoided:
        return False
    called = {e.tool_name for e in run.tool_events if e.error_code != "UNKNOWN_TOOL"}
    return set(needed) <= called and not called & set(avoided)


def right_tool(runs: Iterable[Run], needed: Callable[[Run], Collection[str] | None] | None,
               avoided: Callable[[Run], Collection[str] | None] | None = None) -> dict[str, float]:
    """The right-tool rate (docs/metrics.md#the-right-tool-rate): runs that called the tool(s) their case needs and
    none it must leave alone / runs whose case declares either, with how many declare (``declared``) out of all
    (``runs``). A run whose case declares nothing is left out, never counted right; NaN when none declares."""
    runs = list(runs)
    wanted = [(r, n or (), a or ()) for r in runs for n in [needed(r) if needed else None]
              for a in [avoided(r) if avoided else None] if n or a]
    hits = sum(called_needed(r, n, a) for r, n, a in wanted)
    return {"right_tool_rate": hits / len(wanted) if wanted else float("nan"), "declared": len(wanted),
            "runs": len(runs)}


def pass_hat_k(successes_per_case: Iterable[tuple[int, int]], k: int) -> float:
    """tau-bench's pass^k: the mean over cases of C(c, k) / C(n, k), c successes in n trials.

    The chance that k trials drawn from a case's n all succeed: reliability, not luck.
    """
    from math import comb
    vals = [comb(c, k) / comb(n, k) for c, n in successes_per_case if n >= k]
    return sum(vals) / len(vals) if vals else float("nan")


def status_shares(runs: Iterable[Run]) -> dict[str, float]:
    counts = status_counts(runs)
    total = sum(counts.values()) or 1
    return {s: c / total for s, c in counts.items()}


def failure_breakdown(runs: Iterable[Run]) -> dict[str, dict[str, int]]:
    """What went wrong during runs (:func:`went_wrong`, fixed or not) by retry class and by stage;
    rule-blocked ones apart.

    A guard that fired as designed (``rule_blocked``: approval, breaker, budget,
    a business rule) is not an instability and is never counted with the others.
    """
    unstable_cat: Counter = Counter()
    unstable_stage: Counter = Counter()
    blocked: Counter = Counter()
    for r in runs:
        for e in r.events:
            wrong = went_wrong(e)
            if wrong is None:
                continue
            if e.error_code and e.error_stage == "rule_blocked":
                blocked[e.error_code] += 1
            else:
                unstable_cat[wrong[0]] += 1
                unstable_stage[wrong[1]] += 1
    return {"by_category": dict(unstable_cat), "by_stage": dict(unstable_stage), "rule_blocked": dict(blocked)}


# --- routing watched on traffic (docs/metrics.md#routing-on-traffic) ------------------------
def routing_turns(events: Iterable[Event]) -> list[RoutingTurn]:
    """The routed turns of a trace, as :func:`~agentlab.routing.routing_metrics` reads them.

    Each model turn that records what it was offered (``Event.offered``) and was answered with tool calls is
    one turn; what it "needed" is what the model called. Without labels, that is all traffic can say: a call
    to a tool the router did not offer is a miss for certain, while a needed tool the model never asked for
    is invisible (the labelled ask set of notebook 13 measures that). Text-only turns are not counted."""
    events = list(events)
    every = tuple(dict.fromkeys(n for e in events if e.kind == "model" and e.offered
                                for n in e.offered.split(",")))
    called: dict[tuple[str, int, int], set[str]] = {}
    for e in events:
        if e.kind == "tool" and e.tool_name:
            called.setdefault((e.run_id, e.turn_id, e.round_index), set()).add(e.tool_name)
    turns = []
    for e in events:
        if e.kind != "model" or e.offered is None:
            continue
        needed = called.get((e.run_id, e.turn_id, e.round_index))
        if needed:
            offered = tuple(e.offered.split(",")) if e.offered else ()
            turns.append(RoutingTurn(frozenset(needed), offered, every))
    return turns


def routing_from_trace(events: Iterable[Event]) -> dict[str, float]:
    """The router's hit and miss rates (and tools per turn) from a trace: the one definition of
    :func:`~agentlab.routing.routing_metrics`, read from live traffic instead of a labelled set (NaN: no
    routed turn called a tool)."""
    turns = routing_turns(events)
    if not turns:
        nan = float("nan")
        return {"hit_rate": nan, "miss_rate": nan, "tools_per_turn": nan, "turns": 0}
    out = routing_metrics(turns)
    return {"hit_rate": out["hit_rate"], "miss_rate": out["miss_rate"], "tools_per_turn": out["tools_per_turn"],
            "turns": len(turns)}


# --- finished-only: the two stricter formulas (docs/metrics.md#two-ways-to-count) ---------------------------
def finished_and_checked(status: str, verdict: bool | None) -> bool:
    """The stricter task success of one run: it finished (``done*``) *and* the grader passed its data. A correct
    hand-over is not one: the task was not finished by the agent."""
    return status.startswith("done") and verdict is True


def not_finished(status: str) -> bool:
    """The stricter takeover of one run: anything that did not end ``done*`` (handed over, out of steps, crashed)."""
    return not status.startswith("done")


def checked_success_rate(runs: Iterable[Run], correct: Callable[[Run], bool]) -> float:
    """Task success (finished and checked): runs that finished and passed the grader / runs (NaN for none)."""
    runs = list(runs)
    return sum(finished_and_checked(r.status, bool(correct(r))) for r in runs) / len(runs) if runs else float("nan")


def unfinished_rate(runs: Iterable[Run]) -> float:
    """Takeover (anything not finished): runs that did not end ``done*`` / runs (NaN for none)."""
    runs = list(runs)
    return sum(not_finished(r.status) for r in runs) / len(runs) if runs else float("nan")
