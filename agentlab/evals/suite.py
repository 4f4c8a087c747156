"""Regression suites: cases as data, graded on the final state of the data (docs/metrics.md).

A case (one JSONL line) holds the user's words, the scenario, optionally how a
fake model behaves (a plan, a script, an injected fault), and what must be
true afterwards: which refunds exist (order, amount, reason), how many
hand-over tickets, which final statuses are acceptable. A run that "succeeded"
but refunded the wrong amount fails.
"""
from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import CODES, Problem
from ..guards import GUARDS, NO_GUARDS, GuardConfig
from ..i18n import Lang, Listed, LocalizedError, joined, label, t
from ..jsonutil import JsonReason
from ..models import DatedModel, FaultyModel, Model, Reply, ScriptedModel, SelfCorrectingModel, Step, ToolCall, call, say, tool_calls
from ..models.faults import MODEL_FAULTS
from ..resources import data_file, read_text
from ..runs import STATUSES, Run
from ..scenarios import Scenario
from ..scenarios import get as get_scenario
from ..scenarios.conversation import Conversation
from ..schema import compile_schema
from ..store import MemoryStore
from .metrics import pass_hat_k, summarize
from .outcome import grade
from .stored import CaseResult, save_results

__all__ = ["Case", "CaseResult", "ModelFactory", "SuiteError", "ablation", "check", "compare_groups", "fake_model",
           "load_cases", "metrics_row", "pass_k_curve", "pass_rate", "run_case", "run_suite"]


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    scenario: str
    task: str
    expect: dict
    fake: dict = field(default_factory=dict)
    task_zh: str | None = None
    start: dict = field(default_factory=dict)  # the scenario's starting state, as changes to its default data
    history: tuple[dict, ...] = ()  # earlier messages of the same chat (a long conversation to trim)
    needed_tools: tuple[str, ...] = ()  # the tool(s) a right run calls (the right-tool rate); () when not declared
    avoided_tools: tuple[str, ...] = ()  # the tool(s) a right run never calls (a refund the case must not make)

    def __repr__(self) -> str:
        return f"Case({self.id!r}, {self.category})"

    def text(self, lang: Lang = "en") -> str:
        return self.task_zh if lang == "zh" and self.task_zh else self.task


class SuiteError(LocalizedError):
    """A suite file that cannot be used. The message names the file and line and what was expected
    there, so the command line can print it as it is (one line, no traceback)."""


def load_cases(path: str | Path | None = None, *, desk: Scenario | None = None) -> list[Case]:
    """The cases of a JSONL suite (default: the after-sales suite shipped with the package).

    With ``desk`` (a participant's own desk, docs/capstone.md), every case is for that desk, whatever
    scenario its line names: a refund desk rewritten must still pass the refund suite.

    Every line is checked here, before anything runs: a suite that would crash the
    twentieth case after nineteen have run is refused at once with the line that is wrong
    (:class:`SuiteError`). A file with no cases gives an empty list.
    """
    path = path if path is not None else data_file("aftersales_cases.jsonl")
    text = _read_suite(Path(path))
    out: list[Case] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: brackets nested past what the parser takes
            why = JsonReason.of(exc) if isinstance(exc, json.JSONDecodeError) else JsonReason("nested too deeply")
            raise SuiteError("input.not_json", path=str(path), line=n, detail=why, what="what.suite") from None
        case = _case(d, str(path), n, desk)
        if case.id in seen:
            raise SuiteError("case.duplicate", path=str(path), line=n, id=case.id, first=seen[case.id])
        seen[case.id] = n
        out.append(case)
    return out


def _read_suite(path: Path) -> str:
    return read_text(path, "what.suite", SuiteError)


def _show(value: Any, limit: int = 60) -> str:
    """A value as the JSON the user wrote, cut to fit one line."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@cache
def _case_schema() -> tuple[dict, Callable[[Any], list[Problem]]]:
    """The shape of a case (data/schemas/case.schema.json) and its compiled check, read once.

    The lists a case may choose from stay in the code that uses them and are filled in here."""
    schema = json.loads(data_file("schemas/case.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    defs["status"]["enum"], defs["fault"]["enum"] = list(STATUSES), list(MODEL_FAULTS)
    defs["because"]["enum"] = ["ticket", *CODES]  # "ticket": a hand-over the case accepts as its ending
    return schema, compile_schema(schema)


class _StatusNames(Listed):
    """The statuses a case may expect, each with the words a table shows it in (``done（完成）``): a Chinese learner
    who wrote 成功 read a list of English ids alone."""

    def localized(self, lang: Lang = "en") -> str:
        return joined([s if lang == "en" else f"{s}（{label(s, lang)}）" for s in self.items], lang, "list")


class _Kinds(str):
    """JSON types said in a reader's words, one or several ("a string or null (None in Python)")."""

    items: tuple[str, ...]

    def __new__(cls, kinds: list[str]) -> _Kinds:
        made = super().__new__(cls, " or ".join(t(f"case.json.{k}", "en") for k in kinds))
        made.items = tuple(kinds)
        return made

    def localized(self, lang: Lang = "en") -> str:
        return ("或" if lang == "zh" else " or ").join(t(f"case.json.{k}", lang) for k in self.items)


_JSON_TYPES = ("object", "array", "number", "integer", "string", "boolean", "null")

# items with a sentence of their own: what a wrong one should have been is more than a type
_ITEM = re.compile(r"(fake\.script|fake\.plan|expect\.because|expect\.statuses)\[(\d+)\]")
_ITEM_KEYS = {"fake.script": "case.script_item", "fake.plan": "case.plan_item", "expect.because": "case.because",
              "expect.statuses": "case.status"}


@dataclass(frozen=True)
class _Hint:
    """The validator's own advice for a problem, in either language (LocalizedError asks it)."""

    problem: Problem

    def localized(self, lang: Lang = "en") -> str:
        return str(self.problem.to_dict(lang)["hint"])


def _refusal(p: Problem, d: dict, at: dict) -> SuiteError:
    """The first problem the case schema found, as the sentence a person writing a suite reads."""
    schema, _ = _case_schema()
    item = _ITEM.match(p.field)
    if item:
        where, index = item[1].split("."), int(item[2])
        value = d[where[0]][where[1]][index]
        return SuiteError(_ITEM_KEYS[item[1]], field=item[0], got=_show(value), name=value[:40] if isinstance(value, str) else _show(value),
                          known=_StatusNames(STATUSES), **at)
    top, _, rest = p.field.partition(".")
    if p.reason == "missing" and not rest:
        return SuiteError("case.missing", field=p.field, **at)
    if p.reason == "unknown_field":  # a typo ("refund") would otherwise be a check that silently never runs
        return SuiteError("case.unknown_key", field=top, key=rest, known=Listed(schema["properties"].get(top, {}).get("properties", ())), **at)
    least = schema["properties"].get(top, {}).get("properties", {}).get(rest, {}).get("minimum") if rest else None
    if least is not None and p.reason in ("wrong_type", "out_of_range"):  # a count: bool, 1.5 and -1 are not
        return SuiteError("case.at_least", field=p.field, got=_show(p.got), n=least, **at)
    if p.reason == "wrong_type":
        # the type in words a person reads ("a JSON array (a list in Python)"), not the schema's bare "array"
        kinds = [k.strip() for k in str(p.expected).replace(" or ", "|").replace(",", "|").split("|") if k.strip()]
        kind: Any = _Kinds(kinds) if kinds and all(k in _JSON_TYPES for k in kinds) else p.expected
        return SuiteError("case.type", field=p.field, got=_show(p.got), expected=p.expected, kind=kind, **at)
    if p.field == "fake.fault":
        return SuiteError("case.fault", name=p.got[:40] if isinstance(p.got, str) else _show(p.got), known=Listed(MODEL_FAULTS), **at)
    return SuiteError("case.problem", field=p.field, hint=_Hint(p), **at)


def _case(d: Any, path: str, n: int, desk: Scenario | None = None) -> Case:
    """One line as a Case, or the SuiteError that says what is wrong with it (the first problem found)."""
    at = {"path": path, "line": n}
    if not isinstance(d, dict):
        raise SuiteError("case.not_object", got=_show(d), **at)
    problems = _case_schema()[1](d)
    if problems:
        raise _refusal(problems[0], d, at)
    scenario_name = d.get("scenario", "aftersales") if desk is None else desk.name
    try:
        scenario = get_scenario(scenario_name) if desk is None else desk
    except ValueError:
        from ..scenarios import SCENARIOS
        raise SuiteError("case.scenario", name=scenario_name, known=Listed(SCENARIOS), **at) from None
    start = d.get("start", {})
    if start:
        try:  # a throwaway copy of the scenario's data: a bad start fails here, not in the middle of a run
            scenario.setup(start=start)
        except Exception as exc:  # noqa: BLE001 - whatever the scenario's apply() raises, it is this line's fault
            raise SuiteError("case.start", scenario=scenario_name, detail=f"{type(exc).__name__}: {exc}"[:120],
                             **at) from None
    return Case(d["id"], d.get("category") or "", scenario_name, d["task"], d["expect"], d.get("fake", {}),
                d.get("task_zh"), start, tuple(d.get("history", [])), tuple(d.get("needed_tools", ())),
                tuple(d.get("avoided_tools", ())))


def _script_reply(item: Any) -> Reply | ToolCall:
    if isinstance(item, str):
        return say(item)
    if isinstance(item, dict):
        return tool_calls(*[call(n, a) for n, a in item.get("calls", [])], content=item.get("content"))
    return call(item[0], item[1])


def fake_model(case: Case, scenario: Scenario | None = None) -> Model:
    """The scripted or rule-based model a case describes (with its injected fault, if any).

    On a desk whose prompt carries the date (the expense desk) the fake reads today's date from
    the system prompt, as a model must, and the chat API's rules apply to what it is sent
    (:class:`agentlab.models.DatedModel`)."""
    fake = case.fake
    model: Model
    if "script" in fake:
        items = [_script_reply(x) for x in fake["script"]]
        model = ScriptedModel(items, name=f"script:{case.id}", then="I have done what I can.")
    else:
        model = SelfCorrectingModel([Step(t, a) for t, a in fake.get("plan", [])], fake.get("answer", "Done."),
                                    name=f"fake:{case.id}")
        if fake.get("fault"):
            model = FaultyModel(model, fake["fault"], at_step=fake.get("at_step", 2))
    if (scenario or get_scenario(case.scenario)).strict_api or "context_window" in fake:
        model = DatedModel(model, context_window=fake.get("context_window"))
    return model


def check(case: Case, snapshot: dict, run: Run) -> list[str]:
    """Why the case failed; empty when it passed (graded by :func:`agentlab.evals.outcome.grade`)."""
    verdict = grade(case.expect, snapshot, run)
    return [] if verdict.passed else list(verdict.failures) or [verdict.outcome]


def run_case(case: Case, *, model: Model | None = None, loop: str = "guarded", config: GuardConfig | None = None,
             lang: Lang = "en", trial: int = 0, seed: int = 0, scenario: Scenario | None = None) -> CaseResult:
    """Run one case on a fresh copy of its scenario (or of ``scenario``, a desk not among the shipped ones)
    and grade the final state.

    ``config`` defaults to the desk's own policy: every guard on, with the desk's own step budget where it sets one."""
    scenario = scenario if scenario is not None else get_scenario(case.scenario)
    state, reg = scenario.setup(lang, start=case.start)
    m = model if model is not None else fake_model(case, scenario)
    chat = Conversation(scenario, m, loop="naive" if loop == "naive" else "guarded", lang=lang, state=state,
                        registry=reg, config=config, store=MemoryStore(), max_tokens=scenario.context_budget,
                        history=list(case.history), session_id=case.id, sleep=lambda s: None,
                        rng=random.Random(seed + trial))
    run = chat.ask(case.text(lang))
    snap = scenario.snapshot(state)
    verdict = grade(case.expect, snap, run)
    why = () if verdict.passed else (tuple(verdict.failures) or (verdict.outcome,))
    return CaseResult(case.id, case.category, trial, run, verdict.passed, why, snap, verdict.outcome)


ModelFactory = Callable[[Case, int], Model]


def run_suite(cases: Sequence[Case], *, model: ModelFactory | None = None, loop: str = "guarded",
              config: GuardConfig | None = None, trials: int = 1, concurrency: int = 1, lang: Lang = "en",
              progress: bool = False, store: str | Path | None = None, label: str | None = None) -> list[CaseResult]:
    """Every case ``trials`` times, ``concurrency`` at once; results come back in case order.

    With ``store`` (a directory) the run is saved there with its metadata and every trace
    (see :func:`save_results`), so it can be reopened, compared or replayed later.
    """
    jobs = [(c, t) for c in cases for t in range(trials)]

    def one(job: tuple[Case, int]) -> CaseResult:
        c, t = job
        return run_case(c, model=model(c, t) if model else None, loop=loop, config=config, lang=lang, trial=t)

    # tqdm.auto draws a widget in a notebook and text on stderr in a terminal
    from tqdm.auto import tqdm
    # (the unit in the reader's language: a Chinese run's bar read "case/s")
    with tqdm(total=len(jobs), unit=t("eval.progress_unit", lang), disable=not progress, leave=False) as bar:
        if concurrency <= 1:
            out = []
            for j in jobs:
                out.append(one(j))
                bar.update()
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                out = []
                for r in pool.map(one, jobs):
                    out.append(r)
                    bar.update()
    if store is not None:
        save_results(out, store, label=label or f"{out[0].run.model.split(':')[0] if out else 'empty'}-{loop}",
                     meta={"concurrency": concurrency, "config": (config or GuardConfig()).label})
    return out


def pass_rate(results: Iterable[CaseResult]) -> float:
    results = list(results)
    return sum(r.passed for r in results) / max(len(results), 1)


def metrics_row(results: Sequence[CaseResult]) -> dict:
    """The four headline numbers (docs/metrics.md#the-four-headline-numbers) and pass^1, graded by each case's check."""
    ok = {r.run.run_id: r.passed for r in results}
    s = summarize([r.run for r in results], lambda run: ok[run.run_id])
    return {k: v for k, v in s.items() if k != "runs"}


def compare_groups(groups: dict[str, Sequence[CaseResult]]) -> list[dict]:
    """One row per group (naive vs guarded, model vs model, config vs config)."""
    return [{"group": label, **{k: v for k, v in metrics_row(rs).items() if k != "statuses"}}
            for label, rs in groups.items()]


def pass_k_curve(results: Sequence[CaseResult], ks: Iterable[int] | None = None) -> list[tuple[int, float]]:
    per: dict[str, list[bool]] = {}
    for r in results:
        per.setdefault(r.case_id, []).append(r.passed)
    n = min(len(v) for v in per.values()) if per else 0
    return [(k, pass_hat_k([(sum(v), len(v)) for v in per.values()], k)) for k in (ks or range(1, n + 1))]


def ablation(cases: Sequence[Case], *, model: ModelFactory | None = None, trials: int = 1) -> dict[str, float]:
    """Success with no guard, with each guard alone, and with all of them."""
    out = {"no guards": pass_rate(run_suite(cases, model=model, config=NO_GUARDS, trials=trials))}
    full = GuardConfig()
    for g in GUARDS:
        cfg = _replace(NO_GUARDS, **{g: getattr(full, g)})
        out[f"only {g}"] = pass_rate(run_suite(cases, model=model, config=cfg, trials=trials))
    out["all guards"] = pass_rate(run_suite(cases, model=model, config=full, trials=trials))
    return out
