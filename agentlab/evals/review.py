"""The weekly bad-case review: sample sessions, tag where each went wrong, promote one
into the regression suite so it can never come back unnoticed, then verify: compare two
stored runs class by class, and follow the headline numbers across stored runs (docs/metrics.md)."""
from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import CODES
from ..i18n import Lang, keys, label, t
from .outcome import OUTCOMES
from .results import StoredSuite, load_results, replies_of
from .suite import Case, CaseResult, load_cases, metrics_row

__all__ = ["HEADLINE", "STAGES", "RunComparison", "auto_tag", "compare_runs", "compared_class", "promote", "sample", "tag_cause", "trend"]

STAGES = ("structure", "semantic", "execution", "rule_blocked")


def auto_tag(result: CaseResult) -> str:
    """Where a failed session went wrong (docs/metrics.md#bad-case-tags); ``ok`` for one that passed.

    The stage of :func:`tag_cause`: read from the trace, so each failure is tagged by its cause.
    """
    return tag_cause(result)[0]


def tag_cause(result: CaseResult) -> tuple[str, str]:
    """``(tag, code)``: where a session went wrong, and the error code that says so (``""`` when none did).

    The first error that is not a guard firing names the stage, by that error's own record
    (:data:`~agentlab.errors.CODES`): a 429, a 500 or a dead key the naive loop crashed on is
    ``execution``, a history the API refused is ``structure``, never the model's doing. An error
    only the run's end carries (a turn refused as too long before it was sent) counts too. A
    guarded session that only met guards is ``rule_blocked`` (a guard fired as designed). The
    naive loop has no guards: its safety cap stopping a model that went round in circles is the
    model's doing (``semantic``: well-formed calls that did not get the job done), never a
    guard's. A session with no error at all but the wrong final data is ``semantic`` too.
    """
    if result.passed:
        return "ok", ""
    events = result.run.events
    # an ending error repeats the one that ended the run, except where nothing else recorded it
    errors = [e for e in events if e.error_code and e.kind != "end"] + \
             [e for e in events if e.error_code and e.kind == "end"]
    for e in errors:
        if e.error_stage != "rule_blocked":
            code = e.error_code or ""
            return e.error_stage or CODES.get(code, ("", "execution"))[1], code
    if result.run.loop == "guarded" and (errors or result.run.status == "budget_exhausted"):
        return "rule_blocked", (errors[0].error_code or "") if errors else "BUDGET_EXHAUSTED"
    return "semantic", ""


def sample(results: Sequence[CaseResult], n: int, *, seed: int = 0) -> list[CaseResult]:
    """N sessions at random, failed or not (sampling only failures distorts the shares)."""
    rng = random.Random(seed)
    pool = list(results)
    return rng.sample(pool, min(n, len(pool)))


def promote(result: CaseResult, case: Case, path: str | Path, *, expect: dict | None = None) -> Case:
    """Append a bad session to a regression suite as a new case that replays its model replies.

    The new case keeps the task, takes ``expect`` (default: the original case's), and
    scripts the model with exactly the replies recorded in the bad session, so it
    reproduces without the model.
    """
    script: list[Any] = []
    for reply in replies_of(result.run):
        if not reply.tool_calls:
            script.append(reply.content or "")
            continue
        calls = []
        for c in reply.tool_calls:  # every call of the message: a refund plus a hand-over stays both
            try:
                args = json.loads(c.arguments)
            except ValueError:
                args = c.arguments
            calls.append([c.name, args if isinstance(args, (dict, str)) else c.arguments])
        script.append({"content": reply.content, "calls": calls} if len(calls) > 1 or reply.content else calls[0])
    path = Path(path)
    existing = {c.id for c in load_cases(path)} if path.exists() else set()
    new_id, n = f"promoted-{case.id}", 1
    while new_id in existing:
        n += 1
        new_id = f"promoted-{case.id}-{n}"
    new = Case(new_id, "regression", case.scenario, case.task, expect or case.expect, {"script": script},
               case.task_zh, case.start)
    line = {"id": new.id, "category": new.category, "scenario": new.scenario, "task": new.task,
            **({"task_zh": case.task_zh} if case.task_zh else {}),
            "start": case.start, "fake": new.fake, "expect": new.expect, "promoted_from": result.run.run_id}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return new


# --- verify: the same suite before and after a fix, and the trend across stored runs ------------
HEADLINE = ("task_success_rate", "invalid_call_rate", "avg_steps", "takeover_rate")  # of metrics_row

RunLike = StoredSuite | str | Path | Sequence[CaseResult]


def _opened(run: RunLike, default_label: str) -> tuple[str, tuple[CaseResult, ...]]:
    """A stored run (opened if a path), or graded results as they are, with a label to show."""
    if isinstance(run, (str, Path)):
        run = load_results(run)
    if isinstance(run, StoredSuite):
        return str(run.meta.get("label") or run.path.name), run.results
    return default_label, tuple(run)


@dataclass(frozen=True)
class RunComparison:
    """Two runs of a suite, class by class, on the cases both ran (:func:`compare_runs`).

    ``rows``: one per bad-case class (``kind`` "stage": ``ok`` then each of :data:`STAGES`, by
    :func:`auto_tag`) and one per outcome (``kind`` "outcome", :data:`~agentlab.evals.outcome.OUTCOMES`),
    each with ``before``, ``after``, ``change`` (session counts) and ``before_share``, ``after_share``,
    ``share_change`` (of the sessions compared on that side). ``metrics``: the headline numbers
    (:data:`HEADLINE`, by :func:`~agentlab.evals.suite.metrics_row`) before, after and their change.
    ``fixed``/``broken``: cases failing in some trial before and passing every trial after, and the
    reverse. ``only_before``/``only_after``: cases one run has and the other lacks, left out of
    everything else so that both sides count the same cases.
    """

    before: str
    after: str
    n_before: int
    n_after: int
    rows: tuple[dict, ...]
    metrics: tuple[dict, ...]
    fixed: tuple[str, ...]
    broken: tuple[str, ...]
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]

    def __repr__(self) -> str:
        return (f"RunComparison({self.before} -> {self.after}: {self.n_before} -> {self.n_after} sessions, "
                f"{len(self.fixed)} fixed, {len(self.broken)} broken, {len(self.only_before)} case(s) only before, "
                f"{len(self.only_after)} only after)")

    def shown_rows(self, lang: Lang = "en") -> list[dict]:
        """:attr:`rows` as a table shows them: each class by its name in ``lang`` (:func:`compared_class`), the name the
        comparison's plot gives it (the table said 转人工 where the plot beside it said 已转人工，没有写错数据)."""
        return [{**r, "class": compared_class(r["kind"], r["class"], lang)} for r in self.rows]

    def said(self, lang: Lang = "en") -> str:
        """The comparison in one sentence of ``lang``: the two runs, the sessions each, the cases fixed and broken,
        and the cases only one of them has."""
        return t("review.compared", lang, before=label(self.before, lang), after=label(self.after, lang), n_before=self.n_before,
                 n_after=self.n_after, fixed=len(self.fixed), broken=len(self.broken),
                 only_before=len(self.only_before), only_after=len(self.only_after))


def compared_class(kind: str, name: str, lang: Lang = "en") -> str:
    """A class of a comparison by its name in ``lang``: a stage or an outcome as the catalogue says it (``outcome.
    escalated``: handed over, nothing wrong written), else its label. One name for a table and a plot alike."""
    key = f"{kind}.{name}"
    return t(key, lang) if key in keys() else label(name, lang)


def compare_runs(before: RunLike, after: RunLike) -> RunComparison:
    """Two runs of the same suite (stored runs, their folders, or graded results), class by class.

    Cases are matched by ``case_id``; a case only one run has is named in ``only_before`` or
    ``only_after`` and counted nowhere else, so the classes and the headline numbers compare the
    same cases on both sides (every trial of each).
    """
    label_b, res_b = _opened(before, "before")
    label_a, res_a = _opened(after, "after")
    ids_b, ids_a = {r.case_id for r in res_b}, {r.case_id for r in res_a}
    common = ids_b & ids_a
    b = [r for r in res_b if r.case_id in common]
    a = [r for r in res_a if r.case_id in common]
    rows = _class_rows("stage", ("ok", *STAGES), Counter(auto_tag(r) for r in b), Counter(auto_tag(r) for r in a),
                       len(b), len(a))
    out_b, out_a = Counter(r.outcome or "unknown" for r in b), Counter(r.outcome or "unknown" for r in a)
    extra = sorted((set(out_b) | set(out_a)) - set(OUTCOMES))  # a run stored before outcomes were recorded
    rows += _class_rows("outcome", (*OUTCOMES, *extra), out_b, out_a, len(b), len(a))
    mb, ma = metrics_row(b), metrics_row(a)
    metrics = tuple({"metric": m, "before": mb[m], "after": ma[m], "change": ma[m] - mb[m]} for m in HEADLINE)

    def all_passed(results: Sequence[CaseResult]) -> dict[str, bool]:
        passed: dict[str, bool] = {}
        for r in results:
            passed[r.case_id] = passed.get(r.case_id, True) and r.passed
        return passed

    pb, pa = all_passed(b), all_passed(a)
    order = list(dict.fromkeys(r.case_id for r in b))  # the before run's case order
    return RunComparison(
        label_b, label_a, len(b), len(a), tuple(rows), metrics,
        fixed=tuple(c for c in order if pa[c] and not pb[c]),
        broken=tuple(c for c in order if pb[c] and not pa[c]),
        only_before=tuple(dict.fromkeys(r.case_id for r in res_b if r.case_id not in common)),
        only_after=tuple(dict.fromkeys(r.case_id for r in res_a if r.case_id not in common)))


def _class_rows(kind: str, names: Sequence[str], before: Counter, after: Counter, n_b: int, n_a: int) -> list[dict]:
    rows = []
    for name in names:
        sb, sa = before[name] / max(n_b, 1), after[name] / max(n_a, 1)
        rows.append({"kind": kind, "class": name, "before": before[name], "after": after[name],
                     "change": after[name] - before[name], "before_share": sb, "after_share": sa,
                     "share_change": sa - sb})
    return rows


def trend(stored_runs: Iterable[StoredSuite | str | Path]) -> list[dict]:
    """The headline numbers of each stored run, oldest first (by the time in its metadata).

    One row per run: ``time``, ``label``, ``code_version``, ``task_success_rate``,
    ``invalid_call_rate``, ``takeover_rate`` (by :func:`~agentlab.evals.suite.metrics_row`) and ``n``,
    the sessions it holds. Runs stored at the same time keep the order given.
    """
    runs = [load_results(r) if isinstance(r, (str, Path)) else r for r in stored_runs]

    def when(run: StoredSuite) -> float:
        stamp = run.meta.get("time")
        try:
            return datetime.fromisoformat(str(stamp)).timestamp()
        except ValueError:
            raise ValueError(f"{run.path}: meta.json has no usable time ({stamp!r}); cannot place it in a trend") from None

    rows = []
    for run in sorted(runs, key=when):  # sorted() is stable: ties keep the order given
        m = metrics_row(run.results)
        rows.append({"time": run.meta["time"], "label": run.meta.get("label", run.path.name),
                     "code_version": run.meta.get("code_version", ""), "task_success_rate": m["task_success_rate"],
                     "invalid_call_rate": m["invalid_call_rate"], "takeover_rate": m["takeover_rate"],
                     "n": len(run.results)})
    return rows
