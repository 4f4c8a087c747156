"""Regression suites: cases as data, graded on the final state of the data (seed 000 §六).

A case (one JSONL line) holds the user's words, the scenario, optionally how a
fake model behaves (a plan, a script, an injected fault), and what must be
true afterwards: which refunds exist (order, amount, reason), how many
hand-over tickets, which final statuses are acceptable. A run that "succeeded"
but refunded the wrong amount fails.
"""
from __future__ import annotations

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from . import aftersales
from .faults import FaultyModel
from .i18n import Lang
from .loop import GuardConfig, Run, run_guarded, run_naive
from .models import ScriptedModel, SelfCorrectingModel, Step, call, say
from .store import MemoryStore

SCENARIOS = {"aftersales": aftersales.SCENARIO}
DATA = Path(__file__).resolve().parent.parent / "data"


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


def load_cases(path: str | Path = DATA / "aftersales_cases.jsonl") -> list[Case]:
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
        for w, g in zip(want, got):
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
    scenario = SCENARIOS[case.scenario]
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
    done = [0]
    lock = threading.Lock()
    bar = _Progress(len(jobs)) if progress else None

    def one(job: tuple[Case, int]) -> CaseResult:
        c, t = job
        r = run_case(c, model=model(c, t) if model else None, loop=loop, config=config, lang=lang, trial=t)
        if bar:
            with lock:
                done[0] += 1
                bar.update(done[0])
        return r

    if concurrency <= 1:
        out = [one(j) for j in jobs]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            out = list(pool.map(one, jobs))
    if bar:
        bar.close()
    if store is not None:
        save_results(out, store, label=label or f"{out[0].run.model.split(':')[0] if out else 'empty'}-{loop}",
                     meta={"concurrency": concurrency, "config": config.label})
    return out


class _Progress:
    """A progress bar that works in a terminal (stderr) and in a notebook (a widget, when available)."""

    def __init__(self, total: int):
        self.total, self.t0, self.widget = total, time.perf_counter(), None
        try:
            from IPython import get_ipython
            if get_ipython() is not None and "IPKernelApp" in get_ipython().config:
                import ipywidgets as W
                from IPython.display import display
                self.widget = W.IntProgress(value=0, max=total, description="cases")
                display(self.widget)
        except Exception:  # noqa: BLE001 - no notebook: fall back to text
            self.widget = None

    def update(self, n: int) -> None:
        if self.widget is not None:
            self.widget.value = n
            return
        now = time.perf_counter()
        if n < self.total and now - getattr(self, "_last", 0.0) < 0.2:  # redraw at most 5 times a second
            return
        self._last = now
        import sys
        width = 30
        filled = int(width * n / max(self.total, 1))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {n}/{self.total} "
                         f"{time.perf_counter() - self.t0:5.1f}s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.widget is None:
            import sys
            sys.stderr.write("\n")


def pass_rate(results: Iterable[CaseResult]) -> float:
    results = list(results)
    return sum(r.passed for r in results) / max(len(results), 1)


# --- stored runs: reopen, compare, replay ------------------------------------------------
def code_version() -> str:
    """The package version and, in a git checkout, the commit."""
    import subprocess
    from . import __version__
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).parent, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{__version__}+{sha}" if sha else __version__


def save_results(results: Sequence[CaseResult], directory: str | Path, *, label: str, meta: dict | None = None) -> Path:
    """Write a suite run (metadata, one line per case result, every trace event, every message)."""
    from .trace import to_jsonl
    stamp = time.strftime("%Y%m%d-%H%M%S")
    final = Path(directory) / f"{stamp}-{label}"
    n = 1
    while final.exists():
        n += 1
        final = Path(directory) / f"{stamp}-{label}-{n}"
    out = final.with_name(final.name + ".partial")  # renamed when complete: never a half-written run
    out.mkdir(parents=True)
    first = results[0].run if results else None
    info = {"label": label, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "code_version": code_version(),
            "model": first.model if first else "", "loop": first.loop if first else "",
            "guard_config": first.config if first else "", "cases": len({r.case_id for r in results}),
            "trials": max((r.trial for r in results), default=-1) + 1, **(meta or {})}
    (out / "meta.json").write_text(json.dumps(info, ensure_ascii=False, indent=1), encoding="utf-8")
    with (out / "results.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({"case_id": r.case_id, "category": r.category, "trial": r.trial, "passed": r.passed,
                                "failures": list(r.failures), "snapshot": r.snapshot, "run": _run_header(r.run)},
                               ensure_ascii=False, default=str) + "\n")
    to_jsonl([e for r in results for e in r.run.events], out / "traces.jsonl")
    with (out / "messages.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({"run_id": r.run.run_id, "messages": list(r.run.messages)}, ensure_ascii=False,
                               default=str) + "\n")
    out.rename(final)
    return final


def _run_header(run: Run) -> dict:
    return {"run_id": run.run_id, "loop": run.loop, "model": run.model, "status": run.status, "reason": run.reason,
            "answer": run.answer, "steps": run.steps, "config": run.config, "pending": list(run.pending)}


@dataclass(frozen=True)
class StoredSuite:
    path: Path
    meta: dict
    results: tuple[CaseResult, ...]

    def __repr__(self) -> str:
        return f"StoredSuite({self.path.name}, {len(self.results)} results)"


def load_results(path: str | Path) -> StoredSuite:
    """Reopen a stored suite run, traces and messages included."""
    from .trace import read_jsonl
    path = Path(path)
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    events: dict[str, list] = {}
    for e in read_jsonl(path / "traces.jsonl"):
        events.setdefault(e.run_id, []).append(e)
    messages = {d["run_id"]: d["messages"] for d in map(json.loads, (path / "messages.jsonl").read_text(encoding="utf-8").splitlines())}
    out = []
    for line in (path / "results.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        h = d["run"]
        run = Run(h["run_id"], h["loop"], h["model"], h["status"], h["reason"], h["answer"], h["steps"],
                  tuple(events.get(h["run_id"], ())), tuple(messages.get(h["run_id"], ())), h["config"], tuple(h["pending"]))
        out.append(CaseResult(d["case_id"], d["category"], d["trial"], run, d["passed"], tuple(d["failures"]), d["snapshot"]))
    return StoredSuite(path, meta, tuple(out))


def replies_of(run: Run) -> list:
    """The model's replies in a run, in order, as a script (to replay them elsewhere)."""
    from .models import Reply, ToolCall
    out = []
    for m in run.messages:
        if m.get("role") == "assistant":
            calls = tuple(ToolCall(c["function"]["name"], c["function"]["arguments"], c.get("id", ""))
                          for c in m.get("tool_calls") or [])
            out.append(Reply(m.get("content"), calls))
    return out


def replay_results(results: Sequence[CaseResult], cases: Sequence[Case], *, config: GuardConfig,
                   loop: str = "guarded") -> list[CaseResult]:
    """Replay each stored run's model replies through another loop or guard config, without the model.

    Shows what a new guard would have changed on yesterday's conversations. Where the new
    config makes the conversation go differently, the replies stop matching what was asked;
    the replay then simply plays the next recorded reply, as a cassette does.
    """
    by_id = {c.id: c for c in cases}
    out = []
    for r in results:
        script = ScriptedModel(replies_of(r.run), name=f"replay:{r.run.model}", then="(no more recorded replies)")
        out.append(run_case(by_id[r.case_id], model=script, loop=loop, config=config, trial=r.trial))
    return out


# --- comparing and reviewing ------------------------------------------------------------------
def metrics_row(results: Sequence[CaseResult]) -> dict:
    """Seed 000's four numbers and pass^1, graded by each case's check."""
    from .metrics import summarize
    ok = {r.run.run_id: r.passed for r in results}
    s = summarize([r.run for r in results], lambda run: ok[run.run_id])
    return {k: v for k, v in s.items() if k != "runs"}


def compare(groups: dict[str, Sequence[CaseResult]]) -> list[dict]:
    """One row per group (naive vs guarded, model vs model, config vs config)."""
    return [{"group": label, **{k: v for k, v in metrics_row(rs).items() if k != "statuses"}}
            for label, rs in groups.items()]


def pass_k_curve(results: Sequence[CaseResult], ks: Iterable[int] | None = None) -> list[tuple[int, float]]:
    from .metrics import pass_hat_k
    per: dict[str, list[bool]] = {}
    for r in results:
        per.setdefault(r.case_id, []).append(r.passed)
    n = min(len(v) for v in per.values()) if per else 0
    return [(k, pass_hat_k([(sum(v), len(v)) for v in per.values()], k)) for k in (ks or range(1, n + 1))]


def ablation(cases: Sequence[Case], *, model: ModelFactory | None = None, trials: int = 1) -> dict[str, float]:
    """Success with no guard, with each guard alone, and with all of them."""
    from dataclasses import replace as _replace

    from .loop import GUARDS, NO_GUARDS
    out = {"no guards": pass_rate(run_suite(cases, model=model, config=NO_GUARDS, trials=trials))}
    full = GuardConfig()
    for g in GUARDS:
        cfg = _replace(NO_GUARDS, **{g: getattr(full, g)})
        out[f"only {g}"] = pass_rate(run_suite(cases, model=model, config=cfg, trials=trials))
    out["all guards"] = pass_rate(run_suite(cases, model=model, config=full, trials=trials))
    return out


STAGES = ("structure", "semantic", "execution", "rule_blocked")


def auto_tag(result: CaseResult) -> str:
    """Where a failed session went wrong (seed 003 §5.2); ``ok`` for one that passed.

    The first error that is not a guard firing names the stage; a session that only
    met guards is ``rule_blocked``; one with no error at all but the wrong final data
    is ``semantic`` (valid calls that did the wrong thing).
    """
    if result.passed:
        return "ok"
    errors = [e for e in result.run.events if e.error_code and e.kind != "end"]
    for e in errors:
        if e.error_stage != "rule_blocked":
            return e.error_stage or "execution"
    if errors or result.run.status == "budget_exhausted":
        return "rule_blocked"
    return "semantic"


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
    script = []
    for reply in replies_of(result.run):
        if reply.tool_calls:
            for c in reply.tool_calls[:1]:
                try:
                    args = json.loads(c.arguments)
                except ValueError:
                    args = c.arguments
                script.append([c.name, args])
        else:
            script.append(reply.content or "")
    path = Path(path)
    existing = {c.id for c in load_cases(path)} if path.exists() else set()
    new_id, n = f"promoted-{case.id}", 1
    while new_id in existing:
        n += 1
        new_id = f"promoted-{case.id}-{n}"
    new = Case(new_id, "regression", case.scenario, case.task, expect or case.expect, {"script": script},
               case.task_zh, case.start)
    line = {"id": new.id, "category": new.category, "scenario": new.scenario, "task": new.task,
            "start": case.start, "fake": new.fake, "expect": new.expect, "promoted_from": result.run.run_id}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return new


def compare_plot(groups: dict[str, Sequence[CaseResult]]) -> tuple[list[dict], Any]:
    """Compare groups in one call: the table, and one figure with grouped metric bars,
    the status breakdown, and pass^k curves."""
    import matplotlib.pyplot as plt

    from .metrics import status_counts
    from .plots import plot_bars, plot_pass_k, plot_statuses, use_cjk_fonts
    use_cjk_fonts()
    rows = compare(groups)
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.4))
    metrics = ("task_success_rate", "invalid_call_rate", "takeover_rate")
    plot_bars({m: {r["group"]: r[m] for r in rows} for m in metrics}, ax=axes[0], title="metrics")
    plot_statuses({label: status_counts([r.run for r in rs]) for label, rs in groups.items()}, ax=axes[1])
    plot_pass_k({label: pass_k_curve(rs) for label, rs in groups.items()}, ax=axes[2])
    fig.tight_layout()
    return rows, fig
