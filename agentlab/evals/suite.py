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
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from pathlib import Path
from typing import Any

from ..guards import GUARDS, NO_GUARDS, GuardConfig
from ..i18n import Lang
from ..loop import run_guarded
from ..models import FaultyModel, ScriptedModel, SelfCorrectingModel, Step, call, say
from ..naive import run_naive
from ..resources import data_file
from ..runs import Run
from ..scenarios import get as get_scenario
from ..store import MemoryStore
from .metrics import pass_hat_k, summarize

__all__ = ["Case", "CaseResult", "ModelFactory", "ablation", "check", "compare_groups", "fake_model",
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

    def __repr__(self) -> str:
        return f"Case({self.id!r}, {self.category})"

    def text(self, lang: Lang = "en") -> str:
        return self.task_zh if lang == "zh" and self.task_zh else self.task


def load_cases(path: str | Path | None = None) -> list[Case]:
    """The cases of a JSONL suite (default: the after-sales suite shipped with the package)."""
    path = path if path is not None else data_file("aftersales_cases.jsonl")
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: not a JSON object ({exc})") from None
        if not isinstance(d, dict):
            raise ValueError(f"{path}:{n}: each line must be a JSON object")
        try:
            out.append(Case(d["id"], d.get("category", ""), d.get("scenario", "aftersales"), d["task"], d["expect"],
                            d.get("fake", {}), d.get("task_zh"), d.get("start", {})))
        except KeyError as exc:
            raise ValueError(f"{path}:{n}: a case needs {exc}") from None
    return out


def fake_model(case: Case) -> Any:
    """The scripted or rule-based model a case describes (with its injected fault, if any)."""
    fake = case.fake
    if "script" in fake:
        items = [call(x[0], x[1]) if isinstance(x, list) else say(x) for x in fake["script"]]
        return ScriptedModel(items, name=f"script:{case.id}", then="I have done what I can.")
    model: Any = SelfCorrectingModel([Step(t, a) for t, a in fake.get("plan", [])], fake.get("answer", "Done."),
                                     name=f"fake:{case.id}")
    if fake.get("fault"):
        model = FaultyModel(model, fake["fault"], at_step=fake.get("at_step", 2))
    return model


def check(case: Case, snapshot: dict, run: Run) -> list[str]:
    """Why the case failed; empty when it passed."""
    exp, why = case.expect, []
    if "statuses" in exp and run.status not in exp["statuses"]:
        why.append(f"status {run.status}, expected one of {exp['statuses']}")
    if "refunds" in exp:
        got = snapshot["refunds"]
        want = exp["refunds"]
        if len(got) != len(want):
            why.append(f"{len(got)} refund(s), expected {len(want)}")
        for w, g in zip(want, got, strict=False):
            for k, v in w.items():
                if k == "amount":
                    ok = isinstance(g.get(k), (int, float)) and abs(g[k] - v) < 0.005
                else:
                    ok = g.get(k) == v
                if not ok:
                    why.append(f"refund {k}={g.get(k)!r}, expected {v!r}")
    if "tickets" in exp and len(snapshot["tickets"]) != exp["tickets"]:
        why.append(f"{len(snapshot['tickets'])} ticket(s), expected {exp['tickets']}")
    if "pending" in exp and len(run.pending) != exp["pending"]:
        why.append(f"{len(run.pending)} pending approval(s), expected {exp['pending']}")
    for word in exp.get("answer_contains", []):
        if word not in run.answer:
            why.append(f"answer lacks {word!r}")
    return why


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    category: str
    trial: int
    run: Run
    passed: bool
    failures: tuple[str, ...]
    snapshot: dict

    def __repr__(self) -> str:
        return f"CaseResult({self.case_id}, {'pass' if self.passed else 'FAIL'}, {self.run.status})"


def run_case(case: Case, *, model: Any = None, loop: str = "guarded", config: GuardConfig = GuardConfig(),
             lang: Lang = "en", trial: int = 0, seed: int = 0) -> CaseResult:
    """Run one case on a fresh copy of its scenario and grade the final state."""
    scenario = get_scenario(case.scenario)
    state, reg = scenario.setup(lang, start=case.start)
    m = model if model is not None else fake_model(case)
    prompt = scenario.system_prompt[lang]
    if loop == "naive":
        run = run_naive(m, reg, case.text(lang), system_prompt=prompt)
    else:
        run = run_guarded(m, reg, case.text(lang), config=config, store=MemoryStore(), system_prompt=prompt,
                          sleep=lambda s: None, rng=random.Random(seed + trial), lang=lang, session_id=case.id)
    snap = scenario.snapshot(state)
    why = check(case, snap, run)
    return CaseResult(case.id, case.category, trial, run, not why, tuple(why), snap)


ModelFactory = Callable[[Case, int], Any]


def run_suite(cases: Sequence[Case], *, model: ModelFactory | None = None, loop: str = "guarded",
              config: GuardConfig = GuardConfig(), trials: int = 1, concurrency: int = 1, lang: Lang = "en",
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
    with tqdm(total=len(jobs), unit="case", disable=not progress, leave=False) as bar:
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
        from .results import save_results  # results builds on this module
        save_results(out, store, label=label or f"{out[0].run.model.split(':')[0] if out else 'empty'}-{loop}",
                     meta={"concurrency": concurrency, "config": config.label})
    return out


def pass_rate(results: Iterable[CaseResult]) -> float:
    results = list(results)
    return sum(r.passed for r in results) / max(len(results), 1)


def metrics_row(results: Sequence[CaseResult]) -> dict:
    """Seed 000's four numbers and pass^1, graded by each case's check."""
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
