"""The probe: your tools and your model against every fault, and which guard caught each (docs/metrics.md#the-probe).

For each tool of a tools file nobody here wrote, the probe makes a valid call from the schema
(:mod:`agentlab.evals.probe_calls`), then runs the guarded loop once per fault category and trial:
the model is asked for that call (a scripted model makes it; a real one reads a user's words and
writes it), the fault is injected into the model's first call (:class:`~agentlab.models.faults.FaultyModel`),
and the trace says what happened. Nothing is taken from the :data:`~agentlab.models.faults.FAULTS`
table's intentions: the guard named in a cell is the one whose mark is in the trace (a refusal by the
checks, a replay from the idempotency store, a resend), and a cell where nothing caught the fault says so.

A category that cannot apply to a tool (no enum, no number, no field with a limit) is ``n/a``, not a pass.
Tools without an implementation run as dry-run stubs that check their arguments and echo them. A call that
passed the checks but whose tool failed (raised, even ``sys.exit()``) is ``tool_failed``, never ``ok``; a tool
no valid call can be made for is not probed, and the report says why (``summary["unprobed"]``).

The probe is bounded: what it builds (:mod:`agentlab.evals.probe_calls`' limits; a fault that would have to
write past them, such as a string beyond a ``maxLength`` of 10**12, is ``n/a`` for that reason) and how long
it runs (``time_limit`` in all, ``tool_time_limit`` a tool, read from ``clock``). A tool the budget left out,
or cut short, is named with why (``summary["unprobed"]``, ``summary["partial"]``), in both languages, and so is
one the probe itself could not handle: never an exception.

    report = probe(registry, fake_source(), trials=1)      # a dict: report.json, versioned
    probe_report.write(report, "probe-report/")            # report.json and report.html
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ToolFailure
from ..guards import GuardConfig, guards_off
from ..i18n import Lang, Listed, LocalizedError, t
from ..lint import lint
from ..loop import run_guarded
from ..models.cassette import CassetteModel, RecordingModel, read_cassette
from ..models.fakes import SelfCorrectingModel, Step
from ..models.faults import FAULTS, FaultyModel, mutate_call
from ..models.interface import Model, call
from ..runs import Run
from ..schema import compile_schema, transform
from ..store import MemoryStore
from ..tools import Registry, Tool, guess_write
from ..trace import Event
from ..version import __version__
from .metrics import repair_turns, self_correction_rate
from .probe_calls import MAX_LENGTH, NoValidCall, ask_for, valid_call
from .probe_summary import BOUNDED, summarize, summary_lines

__all__ = ["BOUNDED", "CATEGORIES", "META_LABEL", "REPORT_VERSION", "TIME_LIMIT", "TOOL_TIME_LIMIT", "VERDICTS", "ModelSource",
           "ProbeInputError", "ProbeInterrupted", "ToolExited", "cassette_settings", "caught_by", "dry_run", "fake_source",
           "guess_write", "load_impl", "prepare", "probe", "recording_source", "replay_source", "summary_lines",
           "trial_label"]

#: the probe's scripted model and a recording's replay, as report.json names them (its page says them in the reader's
#: language: probe_report.model_shown)
FAKE_MODEL = "fake (self-correcting)"
REPLAY_SUFFIX = " (replay)"

REPORT_VERSION = 1
#: "clean" is the call with no fault: can the model make it at all? Then each fault category.
CATEGORIES: tuple[str, ...] = ("clean", "camel_case", "drop_required", "wrong_type", "amount_in_words", "out_of_enum",
                               "out_of_range", "truncated_json", "unknown_tool", "duplicate_call", "parallel_call",
                               "api_429", "api_timeout", "api_500")
_ARG_FAULTS = ("camel_case", "drop_required", "wrong_type", "amount_in_words", "out_of_enum", "out_of_range",
               "truncated_json", "unknown_tool")
_REPEATS = ("duplicate_call", "parallel_call")
#: A cell's verdicts, worst first: the cell shows the worst one any of its trials got.
#: ``tool_failed``: the call passed the checks (or was repaired until it did), and the tool failed on it every time.
VERDICTS: tuple[str, ...] = ("not_caught", "tool_failed", "not_repaired", "no_call", "not_injected", "harmless", "caught",
                             "repaired", "ok", "n/a")
META_LABEL = "#probe"  # the cassette line that holds the settings of the recording
#: Seconds the whole probe may run, and one tool of it (defaults of :func:`probe`): generous for a local model
#: on two cores (a turn takes 4 to 10 s there, a trial up to a minute: 14 categories of 3 trials is about
#: 40 minutes), and a stop for a schema that would run all day.
TIME_LIMIT = 8 * 3600.0
TOOL_TIME_LIMIT = 3600.0

#: Gives the model for one trial: (tool, the valid call, the trial's label) -> a model.
ModelSource = Callable[[str, dict, str], Model]


class ProbeInputError(LocalizedError):
    """A bad input to the probe (an --impl that does not load, an unknown fault or tool name), in one line."""


class ToolExited(RuntimeError):
    """A tool implementation called ``sys.exit()`` (raised SystemExit): in the probe, that tool's failure
    on that call, like any other exception it raises, never the end of the probe."""


class ProbeInterrupted(KeyboardInterrupt):
    """Ctrl-C (or a tool that raised KeyboardInterrupt, which cannot be told apart from it) stopped the probe
    during the trial ``label``: the probe stops, as a Ctrl-C should, and says where."""

    def __init__(self, label: str):
        super().__init__(label)
        self.label = label


# --- the tools: stubs, implementations, reads and writes -----------------------------------
def dry_run(tool: Tool) -> Callable[..., Any]:
    """A stand-in for a tool nobody implemented: it checks its arguments against the schema and echoes them.

    It checks for itself, so that with the loop's ``validate`` guard switched off a bad call is still
    refused, by the tool (which the report names as such), as a real service would."""
    check = compile_schema(dict(tool.parameters))

    def stub(**kwargs: Any) -> Any:
        problems = check(kwargs)
        if problems:
            raise ToolFailure("INVALID_ARGS", problems=tuple(problems))
        return {"dry_run": True, "tool": tool.name, "args": kwargs}
    return stub


def load_impl(spec: str) -> tuple[dict[str, Callable[..., Any]], set[str] | None]:
    """Functions by tool name from a module path (``my_pkg.tools``) or a ``.py`` file.

    The convention (docs/metrics.md#the-probe): a function named like the tool, or a ``TOOLS`` dict
    ``{tool name: function}`` for names that are not identifiers (``math.sum``); an optional ``WRITES``
    set names the tools that change the world (otherwise guessed from each name's verb). A function is
    called with the validated arguments as keywords, returns JSON-able data, and may raise
    :class:`~agentlab.errors.ToolFailure` for an error the model should read.
    """
    try:
        if spec.endswith(".py") or Path(spec).is_file():
            path = Path(spec)
            if not path.is_file():
                raise ProbeInputError("probe.impl_missing", impl=spec)
            loader = importlib.util.spec_from_file_location(f"_agentlab_probe_impl_{path.stem}", path)
            if loader is None or loader.loader is None:
                raise ProbeInputError("probe.impl_bad", impl=spec, detail="not a Python file")
            module = importlib.util.module_from_spec(loader)
            sys.modules[loader.name] = module
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except ProbeInputError:
        raise
    except ModuleNotFoundError as exc:
        raise ProbeInputError("probe.impl_missing", impl=spec if exc.name == spec else f"{spec} ({exc.name})") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while loading: said in one line
        raise ProbeInputError("probe.impl_bad", impl=spec, detail=f"{type(exc).__name__}: {str(exc)[:160]}") from None
    table = getattr(module, "TOOLS", None)
    fns: dict[str, Callable[..., Any]] = {}
    if isinstance(table, Mapping):
        fns.update({str(k): v for k, v in table.items() if callable(v)})
    for name in dir(module):
        value = getattr(module, name)
        if not name.startswith("_") and callable(value) and getattr(value, "__module__", None) == module.__name__:
            fns.setdefault(name, value)
    writes = getattr(module, "WRITES", None)
    return fns, (set(writes) if isinstance(writes, Iterable) and not isinstance(writes, str) else None)


def prepare(registry: Registry, impl: Mapping[str, Callable[..., Any]] | None = None,
            writes: set[str] | None = None) -> tuple[Registry, list[dict]]:
    """The registry the probe runs: each tool with its implementation or a dry-run stub, and whether it
    is a write; and a description of each tool for the report."""
    impl = impl or {}
    tools, about = [], []
    for tool in registry:
        fn = impl.get(tool.name) or tool.fn
        write = (tool.name in writes) if writes is not None else (tool.side_effect or guess_write(tool.name))
        tools.append(replace(tool, fn=_contained(fn) if fn is not None else dry_run(tool), side_effect=write))
        about.append({"name": tool.name, "description": tool.description, "implemented": fn is not None,
                      "kind": "write" if write else "read",
                      "kind_from": "impl" if writes is not None else ("tool" if tool.side_effect else "name")})
    return Registry(tools, lang=registry.lang, clean=registry.clean), about


def _contained(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its ``sys.exit()`` turned into a failure of the call (:class:`ToolExited`): the loop lets
    SystemExit through on purpose (a program that exits must exit), but in the probe a tool that exits
    is a tool that failed, and the other cells still run."""
    @functools.wraps(fn)
    def contained(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SystemExit as exc:
            raise ToolExited(f"the tool called sys.exit({exc.code!r})") from None
    return contained


# --- models ---------------------------------------------------------------------------------
def fake_source() -> ModelSource:
    """A scripted model that makes the valid call and repairs its call from the error it reads.

    It is marked ``scripted``: the report and the command line's summary then say that its repair rate is
    the ceiling by construction, not a measurement of any model."""
    def make(tool: str, args: dict, label: str) -> Model:
        return SelfCorrectingModel([Step(tool, args)], "Done.", name=FAKE_MODEL)
    make.scripted = True  # type: ignore[attr-defined]
    return make


def recording_source(inner: Model, path: str | Path, done: Iterable[str] = ()) -> ModelSource:
    """A real model whose every turn is appended to the cassette at ``path`` under the trial's label;
    a label already in ``done`` (a resumed recording) is replayed instead of asked again."""
    done = set(done)

    def make(tool: str, args: dict, label: str) -> Model:
        if label in done:
            return CassetteModel(path, label, then="(no more recorded replies)")
        return RecordingModel(inner, path, label=label)
    return make


def replay_source(path: str | Path) -> ModelSource:
    """Each trial's recorded turns, replayed with no model running."""
    def make(tool: str, args: dict, label: str) -> Model:
        return CassetteModel(path, label, then="(no more recorded replies)")
    return make


def trial_label(tool: Tool, category: str, trial: int, args: dict, *, lang: Lang, offer: str) -> str:
    """A trial's label in a cassette: ``<tool>/<category>/<trial>#<digest>``. The digest changes with the
    tool's spec, the valid call, the language and what was offered, so a replay never passes off an
    old recording as the answer to a changed schema."""
    text = json.dumps([tool.spec(), args, lang, offer], ensure_ascii=False, sort_keys=True)
    return f"{tool.name}/{category}/{trial}#{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def cassette_settings(path: str | Path) -> dict | None:
    """The settings a probe recording was made with (its ``#probe`` line), or None."""
    for entry in read_cassette(path, META_LABEL):
        if isinstance(entry.get("probe"), dict):
            return entry["probe"]
    return None


# --- reading a trace ------------------------------------------------------------------------
def caught_by(run: Run, category: str) -> str | None:
    """The guard whose mark the trace shows on the fault of ``category``, or None when nothing caught it.

    Read from the events, never from the fault table: a refusal before the tool ran is ``validate``
    (or the loop's bare parse and tool lookup, which stay on when validate is off); a refusal by the
    tool itself is ``tool``; a replay from the idempotency store is ``idempotency``; the breaker's
    ``LOOP_DETECTED`` is ``repeat_limit``; a resend of the model's or the tool's call is ``retry``;
    ``TIMEOUT`` is ``timeout``."""
    tools = list(run.tool_events)
    if category.startswith("api_"):
        for e in run.events:
            if e.kind == "model" and e.retry_count and e.error_code is None:
                return "retry"
        return None
    if category in _REPEATS:
        first = tools[0] if tools else None
        for e in tools[1:]:
            if first is not None and e.args_raw == first.args_raw and e.tool_name == first.tool_name:
                mark = _mark(e)
                if mark is not None:
                    return mark
        return None
    return _mark(tools[0]) if tools else None


def _mark(e: Event) -> str | None:
    if e.replayed:
        return "idempotency"
    if e.error_code == "LOOP_DETECTED":
        return "repeat_limit"
    if e.error_code == "TIMEOUT":
        return "timeout"
    if e.error_category == "validation":
        if e.exec_ok is False:
            return "tool"  # the tool refused it itself: the loop let it through
        if "validate" not in guards_off(e.guard_config):
            return "validate"
        return {"BAD_JSON": "parse", "UNKNOWN_TOOL": "tool_lookup"}.get(e.error_code or "", "validate")
    if e.retry_count:
        return "retry"
    return None


@dataclass(frozen=True)
class _Trial:
    verdict: str
    guard: str | None
    status: str
    injected: bool
    repaired: bool | None  # None: the model got nothing wrong, nothing to repair
    turns: int | None
    first_call: str | None  # the first call as the model sent it (after the fault)
    told: str | None  # what the loop told the model about it
    effect: str
    run: Run
    tool_error: str | None = None  # the tool's failure on a valid call: its code and the exception, redacted


def _read(run: Run, category: str, injected: bool, write: bool, valid: Callable[[Event], bool] = lambda e: False) -> _Trial:
    """One trial's verdict from its trace. ``valid`` says whether an event's call passes the tool's schema:
    a failure of the tool on a valid call, with no run of the tool that succeeded, is ``tool_failed``,
    whatever else the trace shows (nothing else can be judged when the tool never works)."""
    tools = list(run.tool_events)
    first = tools[0] if tools else None
    guard = caught_by(run, category)
    turns = repair_turns(run)
    wrong = any(e.error_category == "validation" for e in tools)
    repaired = (turns is not None) if wrong else None
    ran = [e for e in tools if e.exec_ok and e.error_code is None]
    if category in _REPEATS and first is not None:
        twice = sum(1 for e in ran if e.args_raw == first.args_raw and e.tool_name == first.tool_name and not e.replayed)
        effect = "ran_twice" if twice >= 2 else ("ran_once" if twice == 1 else "did_not_run")
    elif category.startswith("api_"):
        effect = "stopped" if run.status == "escalated" and not tools else ("ran" if ran else "did_not_run")
    elif first is not None and first.exec_ok and first.error_code is None:
        effect = "ran_as_sent"
    else:
        effect = "ran_after_repair" if ran else "did_not_run"
    if not injected and category != "clean":
        verdict = "no_call" if first is None else "not_injected"  # nothing in the model's call for the fault to change
    elif category == "clean":
        verdict = "no_call" if first is None else ("ok" if not wrong else ("repaired" if repaired else "not_repaired"))
    elif guard is None and category in _REPEATS and effect == "ran_twice" and not write:
        verdict = "harmless"  # not caught, and said so: a read asked twice changes nothing
    elif guard is None:
        verdict = "not_caught"
    elif wrong:
        verdict = "repaired" if repaired else "not_repaired"
    else:
        verdict = "caught" if run.status.startswith("done") else "not_repaired"
    told = next((e.model_visible for e in tools if e.error_code), None)
    failed = [e for e in tools if e.exec_ok is False and valid(e)]
    tool_error = None
    if failed and not any(e.exec_ok and e.error_code is None for e in tools):
        verdict, effect = "tool_failed", "failed"
        told = failed[0].model_visible
        tool_error = f"{failed[0].error_code}: {failed[0].note}" if failed[0].note else failed[0].error_code
    return _Trial(verdict, guard, run.status, injected, repaired, turns, first.args_raw if first else None,
                  told[:400] if told else None, effect, run, tool_error[:300] if tool_error else None)


def _validity(tool: Tool) -> Callable[[Event], bool]:
    """Whether an event is a call of ``tool`` whose arguments pass its schema."""
    check = compile_schema(dict(tool.parameters))

    def valid(e: Event) -> bool:
        if e.tool_name != tool.name or e.args_raw is None:
            return False
        try:
            args = json.loads(e.args_raw)
            return isinstance(args, dict) and not check(args)
        except Exception:  # noqa: BLE001 - unparsable, or a schema the checker trips on: not a valid call
            return False
    return valid


# --- the probe ------------------------------------------------------------------------------
def probe(registry: Registry, model: ModelSource, *, trials: int = 1, categories: Sequence[str] | None = None,
          only: Sequence[str] | None = None, config: GuardConfig = GuardConfig(), lang: Lang = "en", seed: int = 0,
          offer: str = "one", impl: Mapping[str, Callable[..., Any]] | None = None, writes: set[str] | None = None,
          source: str = "", model_name: str = "", recorded: set[str] | None = None,
          progress: Callable[[str], None] | None = None, time_limit: float | None = TIME_LIMIT,
          tool_time_limit: float | None = TOOL_TIME_LIMIT, clock: Callable[[], float] = time.monotonic) -> dict:
    """Probe every tool of ``registry`` (or those in ``only``) against every category: the report as a dict.

    Args:
        model: gives the model for each trial (:func:`fake_source`, :func:`recording_source`, :func:`replay_source`).
        categories: the fault categories to run ("clean" is always run); default all of :data:`CATEGORIES`.
        config: the guards; switch one off to see what it was catching.
        offer: ``one`` shows the model only the tool under test (faster, and it isolates the schema);
            ``all`` shows every tool, as an agent would.
        recorded: in a replay, the labels the cassette holds; a trial missing from it is left out, not scored.
        time_limit, tool_time_limit: seconds for the whole probe and for one tool (None: no bound), read
            from ``clock`` between trials and while a call is built; what they leave out is named, with why.
    """
    started = clock()
    wanted = [c for c in CATEGORIES if categories is None or c in categories or c == "clean"]
    unknown = [c for c in (categories or ()) if c not in CATEGORIES]
    if unknown:
        raise ProbeInputError("probe.unknown_fault", names=Listed(unknown), known=Listed(CATEGORIES))
    missing = [n for n in (only or ()) if n not in registry]
    if missing:
        raise ProbeInputError("probe.unknown_tool", names=Listed(missing), known=Listed(registry.names))
    reg, about = prepare(registry, impl, writes)
    findings = lint(registry, lang=lang)
    # each tool's own spec, and its spec cut to the probe's reach, looked up by name: a fault is made from the
    # tool's own spec, so handing every trial the whole list cost a scan (and a deep compare) of every tool
    # per trial, quadratic in the tools (10,000 tools: hours)
    specs = {spec["function"]["name"]: [spec] for spec in reg.specs()}
    reachable = {name: _within_reach(own) for name, own in specs.items()}
    ends = started + time_limit if time_limit is not None else math.inf
    tools_out, cells = [], []
    not_recorded = 0
    # the linter's findings on each tool (its location is the tool or "tool.field..."), gathered once: filtering
    # every finding for every tool was quadratic in the tools
    lint_of: dict[str, list[Any]] = {}
    for f in findings:
        parts = f.location.split(".")
        for i in range(1, len(parts) + 1):
            lint_of.setdefault(".".join(parts[:i]), []).append(f)
    for info in about:
        tool = reg[info["name"]]
        if only and tool.name not in only:
            continue
        info = {**info, "valid_call": None, "lint": [f.to_dict() for f in lint_of.get(tool.name, ())]}
        tools_out.append(info)
        now = clock()
        if now >= ends:  # nothing of this tool was run: not n/a, not probed
            info["unprobed"] = _said("probe.why.total_time", seconds=time_limit)
            continue
        until = min(ends, now + tool_time_limit) if tool_time_limit is not None else ends

        def out_of_time(until: float = until) -> dict:
            total = until >= ends
            return _said("probe.why.total_time" if total else "probe.why.tool_time",
                         seconds=time_limit if total else tool_time_limit)
        why: dict | None = None
        args: dict | None = None
        try:
            args = valid_call(tool.parameters, seed=f"{seed}/{tool.name}", clock=clock, until=until)
        except NoValidCall as exc:  # said in both languages, as the categories are: the page is rendered in either
            why = out_of_time() if exc.why == "probe.why.no_time" else \
                {"why": exc.why, "en": exc.localized("en"), "zh": exc.localized("zh")}
        except Exception as exc:  # noqa: BLE001 - whatever the schema does to the generator is this tool's reason
            why = _said("probe.why.internal", detail=_detail(exc))
        info["valid_call"] = args
        if why is not None or args is None:
            info["unprobed"] = why
            if why is not None and why["why"] in ("probe.why.total_time", "probe.why.tool_time"):
                continue  # not run, so not n/a either: the table says "not run", and why
            cells += [_na(tool.name, category, "probe.na.no_valid_call") for category in wanted]
            continue
        valid = _validity(tool)
        # offered one tool, a trial runs on a registry of that tool (and of a real tool the unknown-tool fault may
        # name): the loop lists and scans its registry every turn, so the whole one made each trial cost O(tools)
        trial_reg = _registry_for(reg, tool, args) if offer == "one" else reg
        partial: list[dict] = []
        for n, category in enumerate(wanted):
            cut = False  # this category's trials were cut short by the clock
            try:
                why_na, field = _applies(category, tool, args, specs[tool.name], reachable[tool.name])
                if why_na:
                    cells.append(_na(tool.name, category, why_na))
                    if why_na == "probe.na.beyond_reach":
                        partial.append({**_said("probe.partial.beyond_reach", limit=MAX_LENGTH), "categories": [category]})
                    continue
                results = []
                for trial in range(1, trials + 1):
                    if clock() >= until:
                        cut = True
                        break
                    label = trial_label(tool, category, trial, args, lang=lang, offer=offer)
                    if recorded is not None and label not in recorded:
                        not_recorded += 1
                        continue
                    if progress is not None:
                        progress(label)
                    try:
                        results.append(_one(trial_reg, tool, category, args, model(tool.name, args, label), config=config,
                                            lang=lang, offer=offer, seed=seed, label=label, valid=valid))
                    except ProbeInterrupted:
                        raise
                    except KeyboardInterrupt:
                        raise ProbeInterrupted(label.split("#")[0]) from None
                if results:
                    cells.append(_cell(tool.name, category, field, results))
            except Exception as exc:  # noqa: BLE001 - the probe's own failure on this tool: said, and the rest runs
                partial.append({**_said("probe.partial.internal", detail=_detail(exc)), "categories": wanted[n:]})
                break
            left = wanted[n:] if cut else wanted[n + 1:]
            if left and clock() >= until:
                partial.append({**out_of_time(), "categories": left})
                break
        if partial:
            info["partial"] = partial
    report = {
        "version": REPORT_VERSION,
        "kind": "agentlab.probe",
        "settings": {"source": source, "trials": trials, "seed": seed, "lang": lang, "offer": offer,
                     "guards": config.label, "categories": wanted, "only": list(only) if only else None,
                     "time_limit": time_limit, "tool_time_limit": tool_time_limit},
        "categories": [{"name": c, "en": _describe(c, "en"), "zh": _describe(c, "zh"),
                        "meant_for": FAULTS[c].caught_by if c in FAULTS else None} for c in wanted],
        "tools": tools_out,
        "lint": [f.to_dict() for f in findings],
        "cells": cells,
    }
    report["summary"] = summarize(report)
    report["meta"] = {"model": model_name, "scripted": bool(getattr(model, "scripted", False)),
                      "agentlab": __version__, "seconds": round(clock() - started, 2),
                      "not_recorded": not_recorded}
    return report


def _said(key: str, **fields: Any) -> dict:
    """A reason as the report keeps it: its catalogue key, and the sentence in both languages."""
    return {"why": key, "en": t(key, "en", **fields), "zh": t(key, "zh", **fields)}


def _detail(exc: BaseException) -> str:
    """An exception in a few words, for a reason in the report: its type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:100]}"


def _within_reach(specs: list[dict]) -> list[dict]:
    """``specs`` with every ``maxLength`` above :data:`~agentlab.evals.probe_calls.MAX_LENGTH` brought down to it:
    a fault made against these builds nothing longer, and one that only breaks the real schema because of the
    cut (a string past a ``maxLength`` of 10**12) was never within the probe's reach."""
    def cut(node: dict) -> dict:
        most = node.get("maxLength")
        if isinstance(most, int) and not isinstance(most, bool) and most > MAX_LENGTH:
            return {**node, "maxLength": MAX_LENGTH}
        return node
    out = []
    for spec in specs:
        fn = spec.get("function") if isinstance(spec, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("parameters"), dict):
            spec = {**spec, "function": {**fn, "parameters": transform(fn["parameters"], cut)}}
        out.append(spec)
    return out


def _describe(category: str, lang: Lang) -> str:
    return FAULTS[category].describe(lang) if category in FAULTS else t("probe.cat.clean", lang)


def _na(tool: str, category: str, why: str) -> dict:
    return {"tool": tool, "category": category, "applies": False, "na_reason": why, "verdict": "n/a"}


def _applies(category: str, tool: Tool, args: dict, specs: list[dict],
             reachable: list[dict] | None = None) -> tuple[str | None, str | None]:
    """(why it does not apply, or None; the field the fault aims at, when it aims at one). ``reachable`` are
    the specs cut to what the probe builds (:func:`_within_reach`): the fault is made against those first."""
    if category not in _ARG_FAULTS:
        return None, None
    valid = call(tool.name, args)
    if reachable is not None and reachable != specs:
        bad = mutate_call(category, valid, reachable)
        if bad != valid and _breaks_only_the_cut(tool, bad, reachable):
            return "probe.na.beyond_reach", None
    bad = mutate_call(category, valid, specs)
    if bad == valid:
        return f"probe.na.{category}", None
    if category in ("truncated_json", "unknown_tool"):
        return None, None
    try:
        after = json.loads(bad.arguments)
    except ValueError:
        return None, None
    changed = [k for k in {*args, *after} if args.get(k, _GONE) != after.get(k, _GONE)]
    field = next((k for k in changed if k in args and k not in after), None) or (changed[0] if changed else None)
    if category == "camel_case":
        field = next((k for k in args if k not in after), field)
    return None, field


_GONE = object()


def _breaks_only_the_cut(tool: Tool, bad: Any, reachable: list[dict]) -> bool:
    """Whether ``bad`` passes ``tool``'s schema and fails only the cut one: the fault needed a value too large."""
    cut = next((s["function"]["parameters"] for s in reachable if s.get("function", {}).get("name") == tool.name), None)
    try:
        after = json.loads(bad.arguments)
    except ValueError:
        return False
    if cut is None or not isinstance(after, dict):
        return False
    return not compile_schema(dict(tool.parameters))(after) and bool(compile_schema(cut)(after))


def _registry_for(reg: Registry, tool: Tool, args: dict) -> Registry:
    """The tools a trial offered ``tool`` alone can reach: that tool, and the existing tool (if any) that the
    unknown-tool fault renames its call to, so that a renamed call still runs where it ran on the whole registry."""
    renamed = mutate_call("unknown_tool", call(tool.name, args), []).name
    return reg.subset([tool.name] + ([renamed] if renamed in reg and renamed != tool.name else []))


def _one(reg: Registry, tool: Tool, category: str, args: dict, inner: Model, *, config: GuardConfig, lang: Lang,
         offer: str, seed: int, label: str, valid: Callable[[Event], bool] = lambda e: False) -> _Trial:
    faulty = FaultyModel(inner, None if category == "clean" else category, at_step=1)
    run = run_guarded(faulty, reg, ask_for(tool.name, tool.description, args, lang), system_prompt=t("probe.system", lang),
                      config=config, store=MemoryStore(), sleep=lambda s: None, rng=random.Random(seed),
                      clock=_ticks(), session_id=label.split("#")[0], lang=lang,
                      offer=(lambda messages: [tool.name]) if offer == "one" else None)
    return _read(run, category, injected=category == "clean" or faulty.injected > 0, write=tool.side_effect, valid=valid)


def _ticks() -> Callable[[], float]:
    """A clock that advances one millisecond a reading: latencies are the same in a recording and its replay."""
    state = [0.0]

    def clock() -> float:
        state[0] += 0.001
        return state[0]
    return clock


def _cell(tool: str, category: str, field: str | None, results: list[_Trial]) -> dict:
    verdicts = Counter(r.verdict for r in results)
    worst = min(verdicts, key=VERDICTS.index)
    guards = Counter(r.guard or "none" for r in results)
    runs = [r.run for r in results]
    rate = self_correction_rate(runs)
    turns = [r.turns for r in results if r.turns is not None]
    sample = next((r for r in results if r.verdict == worst), results[0])
    return {"tool": tool, "category": category, "applies": True, "field": field, "trials": len(results),
            "injected": sum(r.injected for r in results), "verdict": worst, "verdicts": dict(verdicts),
            "guard": guards.most_common(1)[0][0] if guards else "none", "guards": dict(guards),
            "self_correction_rate": None if rate != rate else round(rate, 4),
            "repair_turns": round(sum(turns) / len(turns), 2) if turns else None,
            "statuses": dict(Counter(r.status for r in results)), "effect": sample.effect,
            "first_call": sample.first_call, "told": sample.told, "tool_error": sample.tool_error}
