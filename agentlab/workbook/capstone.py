"""The capstone: a desk graded by everything the course built, and what is left to fix (docs/capstone.md).

A *desk* is a participant's own tools and policy, as a Python file with a ``desk()`` function that returns a
:class:`~agentlab.scenarios.Scenario` (its tools, its loop's policy in ``guards``, the calls the checks act
with in ``calls``, its regression suites in ``cases``). :func:`load_desk` reads one, or a shipped desk by
name; :func:`grade` runs on it, without re-implementing any of them:

    the linter       (agentlab.lint)              the contracts the model reads
    the probe        (agentlab.evals.probe)       every fault against the contracts, with the desk's own guards
    the twelve checks (agentlab.evals.checklist)  the desk acted on as an app runs it
    its own suite    (agentlab.evals.suite)       every case of the desk's suites, graded on the final data

Everything is offline and scripted: the same desk always gets the same grade.

    python -m agentlab capstone [--desk PATH] [--lang zh]     # exit 0 only when everything passes
    python -m agentlab capstone --copy DIR                    # DIR/desk.py: the broken desk, yours to fix
"""
from __future__ import annotations

import contextlib
import importlib.util
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..i18n import Lang, Listed, LocalizedError, Sentence, colon, joined, os_reason, pad, py_reason, t
from ..resources import data_file
from ..scenarios import SCENARIOS, Scenario

__all__ = ["BROKEN", "DeskError", "Item", "copy_desk", "exits_said", "grade_desk", "load_desk", "report_lines", "send_progress"]

#: The shipped broken desk a participant hardens, by the name ``--desk`` also takes.
BROKEN = "capstone"
Status = Literal["pass", "fail", "n/a"]
_MOST = 30  # details listed per failed item (a to-do list, not a log); the rest are counted


class DeskError(LocalizedError):
    """A desk that cannot be graded (missing, does not load, no ``desk()``, not a Scenario): one line, both languages."""


def _broken_path() -> Path:
    return data_file("capstone/broken_desk.py")


def load_desk(spec: str | None = None) -> Scenario:
    """A shipped desk by name (``aftersales``, ``expense``, ``capstone``: the broken one) or a desk file's path."""
    if spec is None or spec == BROKEN:
        return _from_file(_broken_path(), BROKEN)
    if spec in SCENARIOS and not Path(spec).exists():
        return SCENARIOS[spec]
    return _from_file(Path(spec), spec)


@contextlib.contextmanager
def exits_said(desk: str | None) -> Iterator[None]:
    """Checks of the participant's desk ``desk`` (a shipped one's when None): a tool of it that calls sys.exit() had
    ended the command silently with 0, read as everything passing; said as DeskError, exit 2."""
    try:
        yield
    except SystemExit:
        if desk is None:
            raise
        raise DeskError("capstone.desk_exited", path=desk) from None


def _from_file(path: Path, shown: str) -> Scenario:
    if path.is_dir():
        raise DeskError("capstone.desk_is_dir", path=shown)
    if not path.is_file():
        raise DeskError("capstone.desk_missing", path=shown, known=Listed([BROKEN, *SCENARIOS]))
    if path.suffix != ".py":
        raise DeskError("capstone.desk_not_py", path=shown)
    name = f"_agentlab_desk_{abs(hash(str(path.resolve())))}"
    loader = importlib.util.spec_from_file_location(name, path)
    if loader is None or loader.loader is None:
        raise DeskError("capstone.desk_not_py", path=shown)
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module
    with exits_said(shown):  # sys.exit() in the file, its desk() or its setup: the command had ended there with 0
        try:
            loader.loader.exec_module(module)
            make = getattr(module, "desk", None)
            if not callable(make):
                raise DeskError("capstone.desk_no_function", path=shown)
            made = make()
        except DeskError:
            raise
        except Exception as exc:  # noqa: BLE001 - the participant's file failed while loading: said in one line
            raise DeskError("capstone.desk_broken", path=shown, detail=_where(exc, path)) from None
        finally:
            sys.modules.pop(name, None)
        if not isinstance(made, Scenario):
            raise DeskError("capstone.desk_not_scenario", path=shown, got=type(made).__name__)
        try:
            made.setup()  # a desk whose state or tools cannot be built is said now, not as twelve crashed checks
        except Exception as exc:  # noqa: BLE001
            raise DeskError("capstone.desk_broken", path=shown, detail=_where(exc, path)) from None
    return made


def _where(exc: BaseException, path: Path) -> str:
    """What the desk file raised, and the line of that file it came from (a SyntaxError's own line)."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    tb = exc.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            line = tb.tb_lineno
        tb = tb.tb_next
    # a SyntaxError's text names its file and line already ("invalid syntax (desk.py, line 1)"): its message alone
    reason = py_reason(exc) if not isinstance(exc, SyntaxError) or not exc.msg else str(exc.msg)
    if not hasattr(reason, "localized"):
        reason = reason[:160]
    if line:
        return Sentence("py.raised_at", error=type(exc).__name__, reason=reason, line=line)
    return Sentence("py.raised", error=type(exc).__name__, reason=reason)


@dataclass(frozen=True)
class Item:
    """One graded item: ``kind`` is lint, probe, check or suite; ``details`` what failed, in the report's language."""

    kind: str
    number: int
    title: str
    status: Status
    details: tuple[str, ...] = ()
    fix: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def _lint(desk: Scenario, lang: Lang) -> Item:
    from ..lint import lint
    _, reg = desk.setup(lang)
    found = [f for f in lint(reg, lang=lang) if f.severity in ("error", "warning")]
    return Item("lint", 0, t("capstone.item.lint", lang), "fail" if found else "pass",
                tuple(f"{f.rule} {f.location}{colon(lang)}{f.message}" for f in found), t("capstone.fix.lint", lang))


def _probe(desk: Scenario, lang: Lang) -> Item:
    """The probe on the desk's contracts as declared (which tools are writes, which are keyed), under the desk's
    own guards, each tool a dry-run stub: whether a fault is caught is the contract's and the loop's question; what
    the backend does with a valid call is the suite's."""
    from ..evals.probe import fake_source, probe
    from ..evals.probe_summary import FAILING
    from ..guards import GuardConfig
    from ..tools import Registry
    _, reg = desk.setup(lang)
    stubs = Registry([replace(x, fn=None, check=None, limits=None, needs_approval=None, keyed=False) for x in reg],
                     lang=reg.lang, resources=reg.resources)
    config = desk.guards if desk.guards is not None else GuardConfig()
    if desk.step_budget:
        config = replace(config, step_budget=desk.step_budget)
    report = probe(stubs, fake_source(), config=config, lang=lang, writes={x.name for x in reg if x.side_effect},
                   time_limit=600.0, tool_time_limit=120.0)
    bad = [c for c in report["cells"] if c["applies"] and c["verdict"] in FAILING]
    details = tuple(t("capstone.probe_cell", lang, tool=c["tool"], category=c["category"],
                      verdict=t(f"capstone.verdict.{c['verdict']}", lang)) for c in bad)
    return Item("probe", 0, t("capstone.item.probe", lang), "fail" if bad else "pass", details, t("capstone.fix.probe", lang))


def _checks(desk: Scenario, lang: Lang) -> list[Item]:
    from ..evals.checklist import run_checklist
    return [Item("check", r.number, r.title, r.status, (r.evidence,) if r.status == "fail" else (),
                 t(f"capstone.fix.check{r.number}", lang)) for r in run_checklist(desk, lang)]


def _suite(desk: Scenario, lang: Lang) -> Item:
    from ..evals.outcome import reasons_in
    from ..evals.suite import load_cases, run_case
    cases = [c for path in desk.cases for c in load_cases(path, desk=desk)] if desk.cases else []
    if not desk.cases and desk.name in SCENARIOS:
        cases = load_cases(data_file(f"{desk.name}_cases.jsonl"))
    if not cases:
        return Item("suite", 0, t("capstone.item.suite", lang, n=0, total=0), "fail",
                    (t("capstone.no_cases", lang),), t("capstone.fix.suite", lang))
    results = [run_case(c, scenario=desk, lang=lang) for c in cases]
    failed = [r for r in results if not r.passed]
    details = tuple(f"{r.case_id}{colon(lang)}{joined(reasons_in(r.failures, lang), lang) or r.outcome}" for r in failed)
    return Item("suite", 0, t("capstone.item.suite", lang, n=len(results) - len(failed), total=len(results)),
                "fail" if failed else "pass", details, t("capstone.fix.suite", lang))


def grade_desk(desk: Scenario, lang: Lang = "en") -> list[Item]:
    """The linter, the probe, the twelve checks and the desk's own suite, in that order: one item each."""
    return [_lint(desk, lang), _probe(desk, lang), *_checks(desk, lang), _suite(desk, lang)]


def score(items: list[Item]) -> tuple[int, int]:
    """(passed, graded): an item that does not apply to the desk is neither."""
    graded = [i for i in items if i.status != "n/a"]
    return sum(i.passed for i in graded), len(graded)


def report_lines(items: list[Item], desk: Scenario, lang: Lang = "en") -> list[str]:
    """The report a participant reads: every item, what each failure saw, what to fix, then the score."""
    word = {"pass": t("checklist.pass", lang), "fail": t("checklist.fail", lang), "n/a": t("checklist.na", lang)}
    title = desk.title.get(lang) or desk.title.get("en") or desk.name
    lines = [t("capstone.head", lang, desk=title)]
    for i in items:
        label = t("capstone.check_label", lang, n=i.number) if i.kind == "check" else t(f"capstone.kind.{i.kind}", lang)
        lines.append(f"{pad(word[i.status], 5)} " + t("capstone.line", lang, label=label, title=i.title))
        if i.status != "fail":
            continue
        for d in i.details[:_MOST]:
            lines.append(f"        - {d}")
        if len(i.details) > _MOST:
            lines.append("        - " + t("capstone.more", lang, n=len(i.details) - _MOST))
        lines.append("        " + t("capstone.to_fix", lang, fix=i.fix))
    n, total = score(items)
    na = sum(i.status == "n/a" for i in items)
    lines.append(t("capstone.score", lang, n=n, total=total) + (t("capstone.score_na", lang, na=na) if na else ""))
    lines.append(t("capstone.all_pass", lang) if n == total else t("capstone.left", lang, n=total - n))
    return lines


def copy_desk(folder: str | Path) -> Path:
    """The broken desk as ``folder/desk.py``, the participant's to edit; an existing desk.py is never overwritten."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise DeskError("capstone.copy_not_dir", path=str(folder))
    target = out / "desk.py"
    if target.exists():
        raise DeskError("capstone.copy_exists", path=str(target))
    try:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_broken_path(), target)
        target.chmod(0o644)
    except OSError as exc:
        raise DeskError("capstone.copy_failed", path=str(target), reason=os_reason(exc)) from None
    return target


def send_progress(items: list[Item], lang: Lang = "en", *,
                  send: Callable[..., Any] | None = None) -> Any:
    """The score to the trainer's view, as notebook ``capstone`` (agentlab.workbook.exercises.report): nothing is
    sent when not connected to one (a hub, or a trainer's room). The thread that sends it, or None."""
    from .exercises import Feedback, report
    n, total = score(items)
    feedback = Feedback("right" if n == total else "wrong", t("capstone.score", lang, n=n, total=total))
    kwargs: dict[str, Any] = {} if send is None else {"send": send}
    # the view shows a score as a share (0.0-1.0) in the capstone's cell, and groups the room's scores
    # (and its answer is "3/14", what the participant read: "passed 3 of 14")
    return report(feedback, "capstone", answer=f"{n}/{total}", score=n / total if total else 0.0, **kwargs)
