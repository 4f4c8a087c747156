"""The offline validation set (docs/site.md#site-check): every skill's normal, boundary and abnormal cases.

A case is one JSON line (docs/site.md#site-check)::

    {"kind": "boundary", "name": "city with the 市 suffix", "arguments": {"city": "北京市"},
     "expect": {"status": 200, "result": {"city": "Beijing"}}}

A skill folder keeps its cases next to its definition (``<skill>/cases.jsonl``; a line may name
another ``skill`` of the folder); the desks' skills, which are generated and have no folder, keep
theirs in ``desk_cases.jsonl`` beside this module, each line naming its ``skill``. ``files``
writes JSON files into the site's data folder for that case only (a weather source that is down).

:func:`run_checks` runs every case in process through :meth:`SkillSite.execute` (the same checks
as over HTTP, with a key allowed everything), each skill on a fresh site in a temporary folder so
cases never see another skill's writes and nothing touches a real data folder. ``expect`` may hold
``status``, ``success``, ``error`` (the code), ``fields`` (fields named in ``problems``),
``result`` (a subset of the result) and ``fallback_hint`` (true: one is offered). The check
passes when every case passes and every skill has all three kinds: boundary failures must be 0.

Every skill also gets one generated abnormal case, its **timeout**: the skill's handler is swapped for
one that never answers (and its business check left out: this case is about the timeout layer), the
call is made with the arguments of the skill's first normal case (or its first example) under the skill's
own ``timeout``, and the reply must be ``504 TIMEOUT`` naming
those seconds, with a ``fallback_hint``. The skills' timeouts run side by side, so the whole check waits
about the longest one. A skill whose ``output_schema`` declares nested fields is listed as a warning
(agentlab/site/flat.py): it does not fail the check.
"""
from __future__ import annotations

import json
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..i18n import Lang, Sentence, joined, pad, said, t
from .flat import nested_fields
from .service import SkillSite
from .skills import SkillContext, shipped_dir

__all__ = ["KINDS", "CheckCase", "CheckOutcome", "CheckReport", "desk_cases_path", "load_check_cases", "run_checks"]

KINDS: tuple[str, ...] = ("normal", "boundary", "abnormal")
_EXPECT = {"status", "success", "error", "fields", "result", "fallback_hint"}


@dataclass(frozen=True)
class CheckCase:
    """One case: which skill, what kind, the arguments sent and what must come back."""

    skill: str
    kind: str
    name: str
    arguments: Mapping[str, Any]
    expect: Mapping[str, Any]
    files: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    i18n: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # {"zh": {"name": ...}}, as a skill.json's

    def __repr__(self) -> str:
        return f"CheckCase({self.skill}, {self.kind}, {self.name!r})"

    def name_in(self, lang: Lang = "en") -> str:
        """The case's name in ``lang`` where the case gives it, else as written."""
        return self.i18n.get(lang, {}).get("name") or self.name


@dataclass(frozen=True)
class CheckOutcome:
    case: CheckCase
    problems: tuple[str, ...]  # empty: passed

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass
class CheckReport:
    """Every outcome, and the skills that lack a kind of case."""

    outcomes: list[CheckOutcome]
    missing: dict[str, list[str]]  # skill -> kinds with no case
    unknown: list[CheckCase]  # cases naming a skill the site does not have
    nested: dict[str, list[str]] = field(default_factory=dict)  # skill -> nested output fields (a warning)

    def counts(self, skill: str, kind: str) -> tuple[int, int]:
        mine = [o for o in self.outcomes if o.case.skill == skill and o.case.kind == kind]
        return sum(o.passed for o in mine), len(mine)

    @property
    def boundary_failures(self) -> int:
        return sum(1 for o in self.outcomes if o.case.kind == "boundary" and not o.passed)

    @property
    def ok(self) -> bool:
        return all(o.passed for o in self.outcomes) and not any(self.missing.values()) and not self.unknown

    def lines(self, lang: Lang = "en") -> list[str]:
        skills = sorted({o.case.skill for o in self.outcomes} | set(self.missing))
        width = max([len(s) for s in skills] + [20])
        out = [f"{pad(t('check.skill', lang), width)}  " + "  ".join(pad(t("check." + k, lang), 9, ">") for k in KINDS)]
        for skill in skills:
            cells = []
            for kind in KINDS:
                passed, total = self.counts(skill, kind)
                cells.append(f"{passed}/{total}" if total else "-")
            flag = "" if all(self.counts(skill, k)[0] == self.counts(skill, k)[1] for k in KINDS) \
                and not self.missing.get(skill) else "  " + t("check.failed", lang)
            out.append(f"{skill:{width}}  " + "  ".join(f"{c:>9}" for c in cells) + flag)
        for o in self.outcomes:
            if not o.passed:
                out.append(t("check.case_failed", lang, skill=o.case.skill, kind=t("check." + o.case.kind, lang),
                             name=o.case.name_in(lang), source=o.case.source,
                             why=joined((said(p, lang) for p in o.problems), lang)))
        for skill, kinds in sorted(self.missing.items()):
            if kinds:
                out.append(t("check.missing", lang, skill=skill, kinds=joined((t("check." + k, lang) for k in kinds), lang,
                                                                              "list")))
        for case in self.unknown:
            out.append(t("check.unknown_skill", lang, skill=case.skill, source=case.source))
        for skill, fields in sorted(self.nested.items()):
            out.append(t("check.nested", lang, skill=skill, fields=joined(fields, lang, "list")))
        passed = sum(o.passed for o in self.outcomes)
        out.append(t("check.total", lang, cases=len(self.outcomes), passed=passed, boundary=self.boundary_failures,
                     verdict=t("check.pass" if self.ok else "check.fail", lang)))
        return out


def desk_cases_path() -> Path:
    return Path(__file__).with_name("desk_cases.jsonl")


def _read(path: Path, default_skill: str | None) -> list[CheckCase]:
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        where = f"{path.parent.name}/{path.name}:{n}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{where}: not JSON ({exc})") from None
        skill = data.get("skill", default_skill)
        if not isinstance(skill, str) or data.get("kind") not in KINDS or not isinstance(data.get("arguments"), dict) \
                or not isinstance(data.get("expect"), dict) or not set(data["expect"]) <= _EXPECT:
            raise ValueError(f"{where}: a case needs skill, kind (one of {', '.join(KINDS)}), arguments and expect "
                             f"(keys among {', '.join(sorted(_EXPECT))})")
        said = data.get("i18n", {})
        if not isinstance(said, dict) or not all(isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
                                                 for v in said.values()):
            raise ValueError(f'{where}: "i18n" names the case in another language: {{"zh": {{"name": "..."}}}}')
        cases.append(CheckCase(skill, data["kind"], str(data.get("name", f"line {n}")), data["arguments"], data["expect"],
                               data.get("files") or {}, where, said))
    return cases


def load_check_cases(*folders: str | Path, desks: bool = True) -> list[CheckCase]:
    """The desks' cases and every ``cases.jsonl`` in the skill folders (shipped first), in file order."""
    cases = _read(desk_cases_path(), None) if desks else []
    for folder in map(Path, (shipped_dir(), *folders)):
        paths = [folder / "cases.jsonl"] if (folder / "handler.py").is_file() else sorted(folder.glob("*/cases.jsonl"))
        for path in paths:
            if not path.is_file():
                continue
            meta = path.with_name("skill.json")
            default = json.loads(meta.read_text(encoding="utf-8-sig")).get("skill_name") if meta.is_file() else None
            cases += _read(path, default)
    return cases


def _judge(case: CheckCase, status: int, body: Mapping[str, Any]) -> tuple[str, ...]:
    """What the reply got wrong against the case, each a catalogue sentence (English as text, either language with
    :func:`~agentlab.i18n.said`: a Chinese report read "status 200, expected 422; no problem about 'city'")."""
    want, problems = case.expect, []
    error = body.get("error") or {}
    if "status" in want and status != want["status"]:
        problems.append(Sentence("check.why.status_code", got=status, want=want["status"], code=error.get("code"))
                        if error else Sentence("check.why.status", got=status, want=want["status"]))
    success = want.get("success", want.get("status", 200) == 200 and "error" not in want)
    if bool(body.get("success")) != success:
        problems.append(Sentence("check.why.success_error", got=bool(body.get("success")), want=success,
                                 code=error.get("code"), message=str(error.get("message"))[:120]) if error
                        else Sentence("check.why.success", got=bool(body.get("success")), want=success))
    if "error" in want and error.get("code") != want["error"]:
        problems.append(Sentence("check.why.error", got=error.get("code"), want=want["error"]))
    named = {p.get("field") for p in error.get("problems") or []}
    for f in want.get("fields", ()):
        if f not in named:
            problems.append(Sentence("check.why.field", field=f, got=sorted(x for x in named if x)))
    result = body.get("result") or {}
    for k, v in (want.get("result") or {}).items():
        if result.get(k) != v:
            problems.append(Sentence("check.why.result", key=k, got=repr(result.get(k)), want=repr(v)))
    if "fallback_hint" in want and bool(body.get("fallback_hint")) != bool(want["fallback_hint"]):
        problems.append(Sentence("check.why.fallback_present" if body.get("fallback_hint") else "check.why.fallback_absent"))
    return tuple(problems)


def run_checks(cases: Iterable[CheckCase], *, skills_dirs: Iterable[str | Path] = (), lang: Lang = "en",
               timeouts: bool = True) -> CheckReport:
    """Run ``cases`` on fresh sites (one per skill) in a temporary folder, then (``timeouts``) every skill's
    generated timeout case; see the module's docstring."""
    cases = list(cases)
    dirs = list(skills_dirs)
    opened: list[SkillSite] = []  # closed before their folder goes: their log lines are written, none after

    def site_in(folder: Path) -> SkillSite:
        site = SkillSite(folder, skills_dirs=dirs)
        opened.append(site)
        return site

    with tempfile.TemporaryDirectory(prefix="agentlab-site-check-") as tmp:
        try:
            report = _run_in(Path(tmp), cases, lang, timeouts, site_in)
        finally:
            for site in opened:
                site.close()
    return report


def _run_in(tmp: Path, cases: list[CheckCase], lang: Lang, timeouts: bool,
            site_in: Callable[[Path], SkillSite]) -> CheckReport:
    """:func:`run_checks` in the scratch folder ``tmp``, each site made by ``site_in``."""
    outcomes: list[CheckOutcome] = []
    names = list(site_in(tmp / "_list").skills)
    for n, skill in enumerate(names):
        mine = [c for c in cases if c.skill == skill]
        if not mine:
            continue
        data = tmp / f"{n:02d}"
        site = site_in(data)
        key, _ = site.create_key("site-check")
        for i, case in enumerate(mine):
            written = []
            for rel, content in case.files.items():
                target = (data / rel).resolve()
                if data.resolve() not in target.parents:
                    raise ValueError(f"{case.source}: files may only name paths inside the data folder, got {rel!r}")
                target.write_text(json.dumps(content), encoding="utf-8")
                written.append(target)
            try:
                idem = f"check-{i}" if site.skills[skill].meta.writes else None
                reply = site.execute(skill, json.dumps({"arguments": case.arguments}).encode(), api_key=key,
                                     idempotency_key=idem, session_id="site-check", lang=lang)
            finally:
                for target in written:
                    target.unlink(missing_ok=True)
            outcomes.append(CheckOutcome(case, _judge(case, reply.status, reply.body)))
    unknown = [c for c in cases if c.skill not in names]
    if timeouts:
        outcomes += _timeout_outcomes(names, outcomes, tmp, lang, site_in)
    listed = site_in(tmp / "_list").skills
    nested = {n: nested_fields(listed[n].meta.output_schema) for n in names}
    missing = {s: [k for k in KINDS if not any(c.skill == s and c.kind == k for c in cases)] for s in names}
    return CheckReport(outcomes, {s: k for s, k in missing.items() if k}, unknown, {s: f for s, f in nested.items() if f})


def _arguments_that_run(site: SkillSite, skill: str, outcomes: list[CheckOutcome]) -> Mapping[str, Any]:
    """Arguments that pass the input schema: the first normal case's (without files of its own), else the
    skill's first example's, else none."""
    for o in outcomes:
        c = o.case
        if c.skill == skill and c.kind == "normal" and not c.files:
            return c.arguments
    examples = site.skills[skill].meta.examples
    return dict(examples[0].get("arguments", {})) if examples else {}


def _timeout_outcomes(names: list[str], outcomes: list[CheckOutcome], tmp: Path, lang: Lang,
                      site_in: Callable[[Path], SkillSite]) -> list[CheckOutcome]:
    """Each skill's generated timeout case, all of them at once (the wait is the longest timeout, not the sum)."""
    release = threading.Event()
    returned: list[threading.Event] = []  # the handlers reached
    finished: list[threading.Event] = []  # and those returned

    def one(n: int, name: str) -> CheckOutcome:
        site = site_in(tmp / f"t{n:02d}")
        skill = site.skills[name]
        done, reached = threading.Event(), threading.Event()
        returned.append(reached)
        finished.append(done)

        def never_answers(arguments: dict, ctx: SkillContext) -> dict:
            reached.set()
            try:  # held past the skill's timeout, then let go so no thread outlives the check
                release.wait(skill.meta.timeout + 30)
                return {}
            finally:
                done.set()

        # the business check is left out: the case is about the timeout layer, and a skill the site always
        # refuses before its handler (a change that needs a person) still has a timeout to answer for
        site.skills[name] = replace(skill, handler=never_answers, validate=None)
        seconds = skill.meta.timeout
        case = CheckCase(name, "abnormal", t("check.timeout_case", lang, seconds=seconds),
                         _arguments_that_run(site, name, outcomes),
                         {"status": 504, "error": "TIMEOUT", "fallback_hint": True}, source="generated")
        key, _ = site.create_key("site-check")
        reply = site.execute(name, json.dumps({"arguments": dict(case.arguments)}).encode(), api_key=key,
                             idempotency_key="check-timeout" if skill.meta.writes else None,
                             session_id="site-check", lang=lang)
        problems = list(_judge(case, reply.status, reply.body))
        message = str((reply.body.get("error") or {}).get("message") or "")
        if reply.status == 504 and not re.search(rf"(?<![\d.]){re.escape(f'{seconds:g}')}(?![\d])", message):
            problems.append(f"the timeout reply does not name the skill's own {seconds:g} s")
        if not reached.is_set():
            problems.append("the handler was never reached: give the skill a normal case that passes")
        return CheckOutcome(case, tuple(problems))

    try:
        with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
            found = list(pool.map(one, range(len(names)), names))
    finally:
        release.set()
    for reached, done in zip(returned, finished, strict=True):  # the handlers return; the writes settle their claims
        if reached.is_set():
            done.wait(5)
    time.sleep(0.05)
    return found
