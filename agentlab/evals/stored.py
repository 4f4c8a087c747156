"""A graded case's record, and a suite run written to a folder and read back.

A stored run is a folder: ``meta.json`` (what, when, which code), ``results.jsonl``
(one graded case per line), ``traces.jsonl`` (every event) and ``messages.jsonl``
(every message), written under a temporary name and renamed when complete, so a
crash never leaves a half-written run.

Below suite.py (its ``run_suite(store=...)`` saves here) and results.py (which replays what
is stored here through suite.py's ``run_case``), so neither of those imports the other.
"""
from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..runs import Run
from ..trace import read_jsonl, to_jsonl
from ..version import __version__

__all__ = ["CaseResult", "StoredSuite", "code_version", "load_results", "save_results"]


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    category: str
    trial: int
    run: Run
    passed: bool
    failures: tuple[str, ...]
    snapshot: dict
    outcome: str = ""  # agentlab.evals.outcome's label: correct, done with wrong data, leaked...

    def __repr__(self) -> str:
        return f"CaseResult({self.case_id}, {self.outcome or ('pass' if self.passed else 'FAIL')}, {self.run.status})"


def code_version() -> str:
    """The package version and, in a git checkout, the commit."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).parent, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{__version__}+{sha}" if sha else __version__


def save_results(results: Sequence[CaseResult], directory: str | Path, *, label: str, meta: dict | None = None) -> Path:
    """Write a suite run (metadata, one line per case result, every trace event, every message)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    final = Path(directory) / f"{stamp}-{label}"
    n = 1
    while final.exists():
        n += 1
        final = Path(directory) / f"{stamp}-{label}-{n}"
    out = final.with_name(final.name + ".partial")  # renamed when complete: never a half-written run
    out.mkdir(parents=True)
    first = results[0].run if results else None
    # to the microsecond, so that runs stored within one second still have an order (evals.review.trend)
    info = {"label": label, "time": datetime.now().astimezone().isoformat(), "code_version": code_version(),
            "model": first.model if first else "", "loop": first.loop if first else "",
            "guard_config": first.config if first else "", "cases": len({r.case_id for r in results}),
            "trials": max((r.trial for r in results), default=-1) + 1, **(meta or {})}
    (out / "meta.json").write_text(json.dumps(info, ensure_ascii=False, indent=1), encoding="utf-8")
    with (out / "results.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({"case_id": r.case_id, "category": r.category, "trial": r.trial, "passed": r.passed,
                                "failures": list(r.failures), "outcome": r.outcome, "snapshot": r.snapshot,
                                "run": _run_header(r.run)},
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
        out.append(CaseResult(d["case_id"], d["category"], d["trial"], run, d["passed"], tuple(d["failures"]),
                              d["snapshot"], d.get("outcome", "")))
    return StoredSuite(path, meta, tuple(out))
