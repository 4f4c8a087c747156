"""The subcommands behind ``python -m agentlab`` beyond check-args and lint (demo, local, eval).

Each is ``name -> (help, configure(parser), run(namespace) -> exit code)`` in :data:`EXTRA` (and the commands
that serve, in :data:`agentlab.serve_commands.SERVE`); ``cli.py`` builds its parser from both tables. Heavy imports happen inside each command.

Every input is checked before any work starts (a suite that runs for minutes and then
cannot be stored is worse than one refused at once); a bad one raises :class:`InputError`,
which ``cli.main`` prints as one line in the user's language and turns into exit code 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from .i18n import Lang, Listed, LocalizedError, colon, joined, label, os_reason, pad, t
from .i18n import keys as catalogue_keys
from .jsonutil import JsonReason, finite
from .resources import read_text

__all__ = ["EXTRA", "InputError", "emit", "read_input", "read_json"]


class InputError(LocalizedError):
    """A bad input to a command, said in one line in either language."""


_stdout_gone = False


def emit(text: str, *, json_text: bool = False) -> None:
    """Print to stdout; a stdout that cannot take the text never changes a command's exit code.

    Not UTF-8 (``LANG=C``): JSON goes as ``\\u`` escapes (the same JSON), prose with the rest escaped.
    A reader that went away (``| head``): nothing more is printed."""
    global _stdout_gone
    if _stdout_gone or sys.stdout is None:
        return
    try:
        try:
            print(text, flush=True)
        except UnicodeEncodeError:
            enc = sys.stdout.encoding or "ascii"
            print(json.dumps(json.loads(text), indent=2 if "\n" in text else None) if json_text
                  else text.encode(enc, "backslashreplace").decode(enc), flush=True)
    except BrokenPipeError:
        _stdout_gone = True
        try:  # Python flushes stdout again at exit and would report the broken pipe then: give it the null device
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # not a real file (a notebook, a test's capture): no flush at exit
            pass


def load_registry(path: str, *, lang: Lang = "en", close: bool = True) -> Any:
    """A Registry from a JSON file of tool specs, checked shape by shape so that a bad file gets one clear line.

    Here, not in cli.py, so that the commands need nothing from the parser that dispatches to them."""
    from .tools import load_specs
    return load_specs(read_json(path, "what.tools"), source=path, lang=lang, close=close)


def read_input(path: str, what: str, *, head: int | None = None) -> Any:
    """A file's text (or its first ``head`` bytes), or the InputError that names it and says what was expected."""
    if head is None:
        return read_text(path, what, InputError)
    where = {"path": path, "what": what}
    if Path(path).is_dir():
        raise InputError("input.is_dir", **where)
    try:
        with open(path, "rb") as f:
            return f.read(head)
    except FileNotFoundError:
        raise InputError("input.missing", **where) from None
    except OSError as exc:
        raise InputError("input.unreadable", reason=os_reason(exc), **where) from None


def read_json(path: str, what: str, *, lines: bool = False) -> Any:
    """One JSON document from a file; with ``lines``, a list of one object per non-empty line (JSONL)."""
    text = read_input(path, what)
    if not lines and not text.strip():
        raise InputError("input.empty", path=path, what=what)
    out = []
    for n, doc in [(n, x) for n, x in enumerate(text.splitlines(), 1) if x.strip()] if lines else [(1, text)]:
        try:
            out.append(json.loads(doc))
        except json.JSONDecodeError as exc:
            raise InputError("input.not_json", path=path, line=n + exc.lineno - 1, detail=JsonReason.of(exc), what=what) from None
        except RecursionError:  # brackets nested past what the parser takes: not JSON this program can read
            raise InputError("input.not_json", path=path, line=n, detail=JsonReason("nested too deeply"), what=what) from None
        if lines and not isinstance(out[-1], dict):
            raise InputError("case.not_object", path=path, line=n, got=json.dumps(out[-1])[:60])
    return out if lines else out[0]


def _in_range(option: str, value: int, lo: int, hi: int | None = None) -> None:
    if value < lo or (hi is not None and value > hi):
        raise InputError("cli.at_least" if hi is None else "cli.between", option=option, n=lo, lo=lo, hi=hi, got=value)


def _writable_dir(path: str, option: str = "--out") -> Path:
    """``path`` as a directory we can write in, created if need be; checked before any work is done. ``option`` is
    the option that named it, as the error says it (the trainer's --state was called --out)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError("cli.out_not_dir", path=path, option=option)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):  # permissions say little to root; a real write says it all
            pass
    except OSError as exc:
        raise InputError("cli.out_unwritable", path=path, reason=os_reason(exc), option=option) from None
    return out


LOCAL_START_TIMEOUT = 180  # seconds for the local model to load (a cold 1.5B on 2 cores takes about a minute)

# the demo's task takes three model turns, four with a correction: a later step injects nothing
DEMO_STEPS = (1, 4)


def _demo_configure(p: argparse.ArgumentParser) -> None:
    from .models.faults import FAULTS
    p.add_argument("--fault", choices=sorted(FAULTS), help="inject this fault (default: the opening demo, orderId -> INVALID_ARGS -> order_id)")
    p.add_argument("--step", type=int, default=None,
                   help=f"model turn at which a model fault is injected ({DEMO_STEPS[0]}-{DEMO_STEPS[1]}; default: the turn "
                        "of the desk's write, 2 for after-sales, 1 for expense)")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--scenario", choices=("aftersales", "expense"), default="aftersales",
                   help="the desk: after-sales refunds, or bookkeeping (without a fault: the date lesson)")


def _demo(ns: argparse.Namespace) -> int:
    step = ns.step if ns.step is not None else (1 if ns.scenario == "expense" else 2)
    _in_range("--step", step, *DEMO_STEPS)
    from .workbook.demo import compare_expense, compare_loops, demo_report
    if ns.scenario == "expense":
        emit(demo_report(compare_expense(ns.fault, at_step=step, lang=ns.lang), ns.lang))
    else:
        emit(demo_report(compare_loops(ns.fault, at_step=step, lang=ns.lang), ns.lang))
    return 0


def _checklist_configure(p: argparse.ArgumentParser) -> None:
    from .scenarios import SCENARIOS
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="expense")
    p.add_argument("--desk", help="a desk file (a .py with desk(), docs/capstone.md) or a shipped desk's name "
                                  "(aftersales, expense, capstone); instead of --scenario")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--json", action="store_true")


def _checklist(ns: argparse.Namespace) -> int:
    from .evals.checklist import run_checklist
    from .scenarios import get
    from .workbook.capstone import exits_said, load_desk
    desk = load_desk(ns.desk) if ns.desk is not None else get(ns.scenario)
    with exits_said(ns.desk):
        results = run_checklist(desk, ns.lang)
    if ns.json:
        emit(json.dumps([{**r.__dict__, "passed": r.passed} for r in results], ensure_ascii=False, indent=1),
             json_text=True)
    else:
        word = {"pass": t("checklist.pass", ns.lang), "fail": t("checklist.fail", ns.lang), "n/a": t("checklist.na", ns.lang)}
        for r in results:
            emit(f"{pad(word[r.status], 5)} {r.number:>2}. {r.title}\n          {r.evidence}")
        na = sum(r.status == "n/a" for r in results)  # a check that does not apply is said, never counted as a pass
        n = sum(r.passed for r in results)
        emit(t("checklist.total_na", ns.lang, n=n, total=len(results) - na, na=na) if na else
             t("checklist.total", ns.lang, n=n, total=len(results)))
    return 0 if all(r.status != "fail" for r in results) else 1


def _capstone_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--desk", default=None, help="your desk file (default: the shipped broken desk, capstone)")
    p.add_argument("--copy", metavar="DIR", help="copy the broken desk to DIR/desk.py for you to fix, and stop")
    p.add_argument("--lang", choices=("en", "zh"), default="en")


def _capstone(ns: argparse.Namespace) -> int:
    from .workbook.capstone import BROKEN, copy_desk, exits_said, grade_desk, load_desk, report_lines, score, send_progress
    if ns.copy is not None:
        target = copy_desk(ns.copy)
        emit(t("capstone.copied", ns.lang, path=str(target)))
        return 0
    desk = load_desk(ns.desk)
    with exits_said(ns.desk or BROKEN):
        items = grade_desk(desk, ns.lang)
    for line in report_lines(items, desk, ns.lang):
        emit(line)
    sending = send_progress(items, ns.lang)
    if sending is not None:  # inside a hub: the score reaches the trainer's view before the command exits
        from .workbook.exercises import REPORT_TIMEOUT
        sending.join(REPORT_TIMEOUT + 1)
    n, total = score(items)
    return 0 if n == total else 1


def _local_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", choices=("0.5b", "1.5b"), default="0.5b")
    p.add_argument("--gguf", help="use this GGUF file instead of the packaged weights")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--threads", type=int, default=None,
                   help="llama.cpp's threads (default: half the cores, one on two: agentlab.models.local.default_threads)")
    p.add_argument("--ctx", type=int, default=4096, help="tokens of context in all (shared by the slots)")
    p.add_argument("--parallel", type=int, default=1, help="requests answered at once (a room shares one server)")
    p.add_argument("--lang", choices=("en", "zh"), default="en")


def _local(ns: argparse.Namespace) -> int:
    _in_range("--port", ns.port, 1, 65535)
    if ns.threads is not None:
        _in_range("--threads", ns.threads, 1)
    _in_range("--ctx", ns.ctx, 1)
    _in_range("--parallel", ns.parallel, 1, 64)
    gguf = Path(ns.gguf) if ns.gguf is not None else None
    if ns.gguf is not None and read_input(ns.gguf, "what.gguf", head=4) != b"GGUF":  # else llama.cpp fails later, saying less
        raise InputError("input.not_gguf", path=ns.gguf, what="what.gguf")
    from .models.local import serve, weights_path, what_is_missing
    if gguf is None:
        missing = what_is_missing(ns.size, lang=ns.lang)
        if missing:
            print(t("cli.error", ns.lang, message=missing), file=sys.stderr)
            return 2
        gguf = weights_path(ns.size)
    serve(gguf, port=ns.port, threads=ns.threads, ctx=ns.ctx, parallel=ns.parallel)
    return 0


def _eval_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", required=True, help="JSONL file of cases (e.g. data/aftersales_cases.jsonl)")
    p.add_argument("--model", choices=("fake", "local", "replay", "openai"), default="fake")
    p.add_argument("--loop", choices=("naive", "guarded"), default="guarded")
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--cassette", help="for --model replay: the recording to play (default: the 0.5b one of the suite's desk)")
    p.add_argument("--size", choices=("0.5b", "1.5b"), default="0.5b", help="for --model local")
    p.add_argument("--out", default="runs", help="directory where the run is stored")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")


def _eval(ns: argparse.Namespace) -> int:
    # Everything that can be wrong with the input is found here, before the first case runs.
    _in_range("--trials", ns.trials, 1, 1000)  # a hundred million was taken, and ran until it was killed
    _in_range("--concurrency", ns.concurrency, 1, 64)
    from .evals import failure_breakdown, layers, load_cases, pass_hat_k, run_suite, save_results, summarize
    from .evals.metrics import right_tool
    from .evals.suite import Case, ModelFactory
    from .models import Model
    from .resources import data_file
    cases = load_cases(ns.suite)
    if not cases:
        raise InputError("suite.empty", path=ns.suite)
    tape = None
    if ns.model == "replay":
        # by default, the 0.5B recording of the suite's own desk
        tape = Path(ns.cassette) if ns.cassette else data_file(f"cassettes/{cases[0].scenario}-0.5b.jsonl")
        read_json(str(tape), "what.cassette", lines=True)
    out = _writable_dir(ns.out)
    skipped: list[str] = []
    if tape is not None:
        # a recording answers only the cases it recorded: grading the others would score silence
        from .evals import recorded_cases
        recorded = set(recorded_cases(tape).get(ns.loop, ()))
        skipped = [c.id for c in cases if c.id not in recorded]
        cases = [c for c in cases if c.id in recorded]
        if not cases:
            raise InputError("cli.nothing_recorded", path=str(tape), loop=ns.loop)
    factory: ModelFactory | None = None
    if ns.model == "replay" and tape is not None:
        from .models.cassette import CassetteModel
        played = tape

        def factory(case: Case, trial: int) -> Model:
            return CassetteModel(played, f"{case.id}/{ns.loop}", then="(no more recorded replies)")
    with live_model(ns) as make:
        if make is False:
            return 2
        if make is not None:
            def factory(case: Case, trial: int) -> Model:
                return make()
        results = run_suite(cases, model=factory, loop=ns.loop, trials=ns.trials, concurrency=ns.concurrency,
                            lang=ns.lang, progress=not ns.json)
    # a live model's service only: a scripted model's failures are the suite's own faults, part of what it tests
    failed = [_model_failed(r.run) for r in results] if make else []
    if failed and None not in failed:  # every run ended on the service: a table of hand-overs that exited 0
        _say_service_failed([str(code) for code in failed])
    runs = [r.run for r in results]
    ok = {r.run.run_id: r.passed for r in results}
    needed_by_case = {c.id: c.needed_tools for c in cases}
    needs = {r.run.run_id: needed_by_case.get(r.case_id) or None for r in results}
    avoid_by_case = {c.id: c.avoided_tools for c in cases}
    avoids = {r.run.run_id: avoid_by_case.get(r.case_id) or None for r in results}
    per_case: dict[str, list[int]] = {}
    for r in results:
        per_case.setdefault(r.case_id, []).append(r.passed)
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    report = {"suite": ns.suite, "model": ns.model, "loop": ns.loop, "cases": len(cases), "trials": ns.trials,
              "not_recorded": skipped,
              "headline": {k: v for k, v in summarize(runs, lambda run: ok[run.run_id]).items()},
              "outcomes": outcomes,
              "layers": layers(runs, correct=lambda run: ok[run.run_id], needed_tools=lambda run: needs[run.run_id],
                               avoided_tools=lambda run: avoids[run.run_id]),
              "right_tool": {**right_tool(runs, lambda run: needs[run.run_id], lambda run: avoids[run.run_id]),
                             "cases_declaring": sum(bool(c.needed_tools or c.avoided_tools) for c in cases),
                             "cases_not_declaring": [c.id for c in cases if not (c.needed_tools or c.avoided_tools)]},
              "pass^k": {k: pass_hat_k([(sum(v), len(v)) for v in per_case.values()], k) for k in range(1, ns.trials + 1)},
              "failures": failure_breakdown(runs),
              "failure_classes": _suite_classes(results, cases, ns.lang),
              "model_failed": {c: failed.count(c) for c in sorted({c for c in failed if c is not None})}}
    path = save_results(results, out, label=f"{ns.model}-{ns.loop}", meta={"suite": ns.suite})
    report["stored"] = str(path)
    if ns.json:
        # strict JSON: a rate with nothing to count (no tokens reported) is null, never NaN, which JSON.parse refuses
        emit(json.dumps(finite(report), ensure_ascii=False, indent=1, default=str, allow_nan=False), json_text=True)
        return 0
    for line in eval_text(report, ns.lang):
        emit(line)
    return 0


#: the codes of a model service refusing a request outright: a key it does not take, a model this key may not use
_REFUSALS = ("UNAUTHENTICATED", "PERMISSION_DENIED")
#: the codes of the service failing, whatever was asked: down, too slow, overloaded, or refusing outright. Not a request
#: it refused as malformed or too long (BAD_REQUEST, CONTEXT_TOO_LONG), nor a reply it sent that could not be read
_SERVICE = ("UNAVAILABLE", "TIMEOUT", "RATE_LIMITED", *_REFUSALS)


def _model_failed(run: Any) -> str | None:
    """The code when the model's service failed the run's request, after the loop's retries (down, overloaded,
    refusing the key), else None: a model call that failed with nothing said, as the trace reads one."""
    return next((str(e.error_code) for e in run.events if e.kind == "model" and not e.model_visible
                 and e.error_code in _SERVICE), None)


def _say_service_failed(codes: list[str]) -> None:
    """Refuse to report figures when the model's service failed every request (exit 2): refused them (a wrong key) or
    failed them (down, a wrong address, overloaded), each said with what to check."""
    if set(codes) <= set(_REFUSALS):
        raise InputError("cli.model_refused", code=codes[0])
    raise InputError("cli.model_failed", code=", ".join(sorted(set(codes))))


def _suite_classes(results: list, cases: list, lang: Lang) -> dict[str, int]:
    """The five classes of failure over a suite's runs: codes, and the failures that leave none (the grader's
    verdict, the ending, every call the desk's schema refuses): :func:`~agentlab.evals.failure_classes.run_classes`."""
    from .evals.failure_classes import run_classes, runs_by_class
    from .scenarios import SCENARIOS
    by_id = {c.id: c for c in cases}
    registries = {name: SCENARIOS[name].setup(lang)[1] for name in {c.scenario for c in cases} if name in SCENARIOS}
    return runs_by_class(run_classes(r.run, r.outcome, r.failures, registries.get(by_id[r.case_id].scenario),
                                     by_id[r.case_id].needed_tools) for r in results)


LiveModel = Callable[[], Any]


@contextmanager
def live_model(ns: argparse.Namespace, **local_options: Any) -> Iterator[LiveModel | Literal[False] | None]:
    """``--model openai`` or ``local`` for every command (eval, probe): a function making one live model.

    openai: the endpoint or key from the environment, refused at once when neither is set. local: the packaged
    model of ``--size``, started here and stopped on the way out whatever happens (``local_options`` go to its
    client). None for the sources a command plays itself (fake, replay); False when the local model is not
    installed (said on stderr: the command exits 2)."""
    if ns.model not in ("openai", "local"):
        yield None
        return
    keys = ("AGENTLAB_BASE_URL", "OPENAI_BASE_URL", "AGENTLAB_API_KEY", "OPENAI_API_KEY")
    if ns.model == "openai" and not any(os.environ.get(v) for v in keys):  # else every call fails, the run scores nothing
        raise InputError("cli.openai_unset")
    import importlib.util
    if importlib.util.find_spec("openai") is None:  # the core alone: "unexpected ModuleNotFoundError" said nothing to do
        raise InputError("cli.needs_openai")
    from .models.openai_model import OpenAIModel, endpoint_problem
    if ns.model == "openai":
        problem = endpoint_problem()  # nothing answering there: said now, not as a run of hand-overs that exits 0
        if problem is not None:
            raise InputError(problem[0], **problem[1])
        yield OpenAIModel
        return
    from .models.local import LocalServer, what_is_missing
    missing = what_is_missing(ns.size, lang=ns.lang)
    if missing:
        print(t("cli.error", ns.lang, message=missing), file=sys.stderr)
        yield False
        return
    local = LocalServer(ns.size)
    try:
        server = local.start(timeout=LOCAL_START_TIMEOUT)
    except TimeoutError:
        raise InputError("cli.no_start", seconds=LOCAL_START_TIMEOUT, log=str(local.log)) from None
    try:
        yield lambda: OpenAIModel(f"qwen2.5-coder-{ns.size}", base_url=server.base_url, max_tokens=256, **local_options)
    finally:
        server.stop()


def _value(name: str, v: Any, lang: Lang = "en") -> str:
    """One format per kind of number: rates as percentages, counts and times as plain numbers, unknown as n/a."""
    if isinstance(v, float) and v != v:  # NaN: nothing was measured (fakes report no tokens)
        return t("eval.not_measured", lang)
    if name.endswith("_rate") or name.startswith("pass"):
        return f"{v:.1%}"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def eval_text(report: dict, lang: Lang = "en") -> list[str]:
    """The human-readable form of an ``eval`` report, every rate as a percentage."""
    s = report["headline"]
    lines = [t("eval.head", lang, model=report["model"], loop=report["loop"], suite=report["suite"],
               cases=report["cases"], trials=report["trials"])]
    if report["not_recorded"]:
        lines.append(t("eval.not_recorded", lang, n=len(report["not_recorded"]),
                       ids=joined(report["not_recorded"][:8], lang, "list") + (" ..." if len(report["not_recorded"]) > 8 else "")))
    # each pair under the rule it counts by: the plain names alone read as the finished-only pair a team brings
    lines.append("  " + t("metrics2.workbook_way", lang))
    for key in ("task_success_rate", "invalid_call_rate", "avg_steps", "takeover_rate"):
        lines.append(f"  {pad(t('eval.' + key, lang), 24)} {_value(key, s[key], lang)}")
    lines.append("  " + t("metrics2.two_ways", lang))
    for key in ("checked_success_rate", "unfinished_rate"):
        lines.append(f"  {pad(t('metrics2.' + key, lang), 40)} {_value(key, s[key], lang)}")
    failed = report.get("model_failed") or {}
    if failed:  # runs the service failed are hand-overs in every figure above: about the service, not the model
        lines.append("  " + t("eval.model_failed", lang, n=sum(failed.values()), runs=sum(report["outcomes"].values()),
                              code=", ".join(sorted(failed))))
    lines.append("  " + t("eval.outcomes", lang) + colon(lang) + joined(
        (f"{t('outcome.' + k, lang)} {v}" for k, v in sorted(report["outcomes"].items(), key=lambda kv: -kv[1])), lang, "list"))
    rt = report["right_tool"]
    lines.append("  " + t("tools2.eval.right_tool", lang, rate=_value("right_tool_rate", rt["right_tool_rate"], lang),
                          declared=rt["cases_declaring"], cases=report["cases"]))
    if rt.get("cases_not_declaring"):  # which, so a team can declare them (needed_tools, avoided_tools)
        ids = rt["cases_not_declaring"]
        lines.append("    " + t("eval.not_declaring", lang, ids=joined(ids[:8], lang, "list") + (" ..." if len(ids) > 8 else "")))
    for layer, metrics in report["layers"].items():
        # each metric by the name the reader's tables give it (a Chinese reader read "tokens_per_task n/a")
        lines.append(f"  [{label(layer, lang)}] " + joined((f"{label(k, lang)} {_value(k, v, lang)}" for k, v in metrics.items()),
                                              lang, "list"))
    lines.append("  pass^k " + joined((f"k={k} {_value('pass', v, lang)}" for k, v in report["pass^k"].items()), lang, "list"))
    f = report["failures"]
    named = {"by_category": "class.", "by_stage": "stage.", "rule_blocked": None}  # retry classes, stages; codes as codes
    for key in ("by_category", "by_stage", "rule_blocked"):
        prefix = named[key]
        counts = joined((f"{t(prefix + k, lang) if prefix and prefix + k in catalogue_keys() else k} {v}"
                         for k, v in sorted(f[key].items(), key=lambda kv: -kv[1])), lang, "list") or "-"
        lines.append(f"  {pad(t('eval.' + key, lang), 24)} {counts}")
    if "failure_classes" in report:
        from .evals.failure_classes import class_counts_text
        lines.append(f"  {pad(t('metrics2.failure_classes', lang), 24)} {class_counts_text(report['failure_classes'], lang)}")
    lines.append(f"  {pad(t('eval.stored', lang), 24)} {report['stored']}")
    return lines


def _probe_configure(p: argparse.ArgumentParser) -> None:
    from .evals.probe import CATEGORIES
    from .guards import GUARDS
    p.add_argument("--tools", required=True, help="JSON file of OpenAI-format tool specs (wrapped or bare)")
    p.add_argument("--impl", help="a module path or .py file with functions named like the tools (else dry-run stubs)")
    p.add_argument("--model", choices=("fake", "local", "replay", "openai"), default="fake")
    p.add_argument("--trials", type=int, default=1, help="runs per tool and category")
    p.add_argument("--out", default="probe-report", help="directory for report.json and report.html")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--cassette", help="--model replay: the recording to play; --model local/openai: where to record "
                                      "(default for local: data/cassettes/probe-<tools>-<size>.jsonl)")
    p.add_argument("--size", choices=("0.5b", "1.5b"), default="0.5b", help="for --model local")
    p.add_argument("--faults", help="comma-separated categories to run (default all: " + ", ".join(CATEGORIES) + ")")
    p.add_argument("--only", help="comma-separated tool names to probe (default: every tool)")
    p.add_argument("--seed", type=int, default=0, help="seed of the valid-call generator")
    p.add_argument("--offer", choices=("one", "all"), default="one",
                   help="show the model only the tool under test (default) or every tool")
    p.add_argument("--without", action="append", default=[], choices=GUARDS, metavar="GUARD",
                   help="switch a guard off (repeatable) and see what it was catching")
    p.add_argument("--resume", action="store_true", help="recording: keep the cassette and skip trials already in it")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop starting tools after this long; the rest are named in the report (default 8 h)")
    p.add_argument("--tool-time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop probing one tool after this long; it is named as probed in part (default 1 h)")


def probe_cassette(tools: str, size: str) -> Path:
    """Where a local model's probe of ``tools`` is recorded: ``data/cassettes/probe-<tools>-<size>.jsonl``
    (``<tools>`` is the file's stem less ``_tools``, or its folder's name for a file called tools.json)."""
    path = Path(tools)
    stem = path.parent.name if path.stem == "tools" else path.stem.removesuffix("_tools")
    from .resources import data_file  # the package's data, installed or in a checkout (a pip install had no data/)
    return data_file(f"cassettes/probe-{stem or 'tools'}-{size}.jsonl")


def _probe(ns: argparse.Namespace) -> int:
    _in_range("--trials", ns.trials, 1)
    from .evals.probe import ProbeInputError, ProbeInterrupted, cassette_settings, fake_source, load_impl, probe, replay_source, summary_lines
    from .evals.probe_report import FAKE_MODEL, REPLAY_SUFFIX, write  # (the probe's names, as its page says them)
    from .guards import GuardConfig
    registry = load_registry(ns.tools, lang=ns.lang)
    impl, writes = load_impl(ns.impl) if ns.impl else ({}, None)
    faults = [f.strip() for f in ns.faults.split(",") if f.strip()] if ns.faults else None
    only = [n.strip() for n in ns.only.split(",") if n.strip()] if ns.only else None
    settings = {"trials": ns.trials, "seed": ns.seed, "lang": ns.lang, "offer": ns.offer, "categories": faults, "only": only}
    recorded = None
    tape: Path | None = None
    out = _writable_dir(ns.out)  # before a local model starts: a wrong --out is said at once
    if ns.model == "replay":
        tape = Path(ns.cassette) if ns.cassette else probe_cassette(ns.tools, ns.size)
        entries = read_json(str(tape), "what.cassette", lines=True)
        meta = cassette_settings(tape)
        if meta is None:
            raise ProbeInputError("probe.no_cassette_meta", path=str(tape))
        # the recording's own settings, so that its replay is the same report; a flag given here narrows it
        settings = {**settings, **{k: meta.get(k) for k in ("trials", "seed", "lang", "offer", "categories", "only")},
                    **({"categories": faults} if faults else {}), **({"only": only} if only else {})}
        recorded = {e["label"] for e in entries if isinstance(e.get("label"), str)}
        source = replay_source(tape)
        name = next((e.get("model") for e in entries if e.get("model")), "replay") + REPLAY_SUFFIX
    elif ns.model == "fake":
        source, name = fake_source(), FAKE_MODEL
    elif ns.model == "local" or ns.cassette:
        tape = Path(ns.cassette) if ns.cassette else probe_cassette(ns.tools, ns.size)
    with live_model(ns, timeout=900, retry=None) as make:
        if make is False:
            return 2
        watched: _Refusals | None = None
        if make is not None:
            inner = watched = _Refusals(make())
            name = inner.name
            source = _recording(inner, tape, settings, ns) if tape is not None else inner_source(inner)
        lang = settings["lang"] if settings["lang"] in ("en", "zh") else ns.lang
        limits = {k: v for k, v in (("time_limit", ns.time_limit), ("tool_time_limit", ns.tool_time_limit))
                  if v is not None}
        try:
            report = probe(registry, source, trials=int(settings["trials"] or 1), categories=settings["categories"],
                           only=settings["only"], config=GuardConfig().without(*ns.without), lang=lang,
                           seed=int(settings["seed"] or 0), offer=settings["offer"] or "one", impl=impl, writes=writes,
                           source=ns.tools, model_name=name, recorded=recorded, **limits,
                           progress=(lambda label: print(label, file=sys.stderr, flush=True)) if ns.model == "local" else None)
        except ProbeInterrupted as exc:  # Ctrl-C, or a tool that raised KeyboardInterrupt: stop, and say where (exit 130)
            print(t("cli.error", ns.lang, message=t("probe.interrupted", ns.lang, label=exc.label)), file=sys.stderr)
            return 130  # said here, where the probe stopped: not a second time by the command line
    if watched is not None and watched.calls and watched.refused == watched.calls:
        # a wrong key or a service down: a report of no_call cells and "not caught" rows that exited 0
        _say_service_failed(watched.codes)
    if watched is not None and watched.refused:  # some requests the service failed: said beside the figures, as eval does
        report["summary"]["model_failed"] = {"requests": watched.calls, "failed": watched.refused,
                                             "codes": sorted(set(watched.codes))}
    paths = write(report, out, lang=ns.lang)
    s = report["summary"]
    # exit 1 when no tool at all could be probed (no valid call from any schema): the report says why, tool by tool
    code = 1 if report["tools"] and not s["probed"] else 0
    if ns.json:
        emit(json.dumps(finite({"summary": s, "meta": report["meta"], "report": [str(p) for p in paths]}),
                        ensure_ascii=False, indent=1, allow_nan=False), json_text=True)
    else:
        for line in summary_lines(report, ns.lang):
            emit(line)
        if "model_failed" in s:
            failed = s["model_failed"]
            emit(t("probe.model_failed", ns.lang, n=failed["failed"], requests=failed["requests"],
                   code=", ".join(failed["codes"])))
        emit(t("probe.cli_wrote", ns.lang, json=str(paths[0]), html=str(paths[1])))
        if ns.model in ("local", "openai") and tape is not None:
            emit(t("probe.cli_recorded", ns.lang, path=str(tape),
                   command=f"python -m agentlab probe --tools {ns.tools} --model replay --cassette {tape}"))
    if code:
        # the schemas made no valid call, or the clock stopped the probe before any tool: say which
        timed = any(u.get("why") in ("probe.why.total_time", "probe.why.tool_time") for u in s.get("unprobed", []))
        why = "probe.cli_out_of_time" if timed else "probe.cli_nothing_probed"
        print(t("cli.error", ns.lang, message=t(why, ns.lang, html=str(paths[1]))), file=sys.stderr)
    return code



def _recording(model: Any, tape: Path, settings: dict, ns: argparse.Namespace) -> Any:
    """A live model's probe recorded to ``tape``: its settings first, then every reply (``--resume``: appended to)."""
    from .evals.probe import META_LABEL, recording_source
    from .models.cassette import labels
    done = set(labels(tape)) if ns.resume and tape.exists() else set()
    if not ns.resume:
        tape.unlink(missing_ok=True)
    if META_LABEL not in done:
        tape.parent.mkdir(parents=True, exist_ok=True)
        with tape.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"label": META_LABEL, "probe": {**settings, "tools": ns.tools}}, ensure_ascii=False) + "\n")
    return recording_source(model, tape, done)


class _Refusals:
    """A live model, its requests counted and those its service refused outright (a key it does not take, a model
    this key may not use): when it refused every one, a command's figures measure nothing."""

    def __init__(self, model: Any):
        self.model, self.name = model, getattr(model, "name", "model")
        self.calls = self.refused = 0
        self.codes: list[str] = []

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.model, attr)

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        from .models.interface import ModelError
        self.calls += 1
        try:
            return self.model.complete(*args, **kwargs)
        except ModelError as exc:  # after the client's retries: the service failed this request, or refused it
            if exc.code in _SERVICE:
                self.refused += 1
                self.codes.append(exc.code)
            raise


def inner_source(model: Any) -> Callable[[str, dict, str], Any]:
    """The same live model for every trial (nothing recorded)."""
    return lambda tool, args, label: model


def _review_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--logs", required=True, help="your log file: JSONL (docs/metrics.md#bring-your-own-logs)")
    p.add_argument("--format", choices=("openai", "telemetry", "otel"), default="openai")
    p.add_argument("--tools", help="JSON file of your tool specs; \"side_effect\": true marks a write")
    p.add_argument("--out", default="review", help="directory for report.html, report.json and cases.jsonl")
    p.add_argument("--lang", choices=("en", "zh"), default="en")


def _review(ns: argparse.Namespace) -> int:
    from .evals.log_report import no_calls_text, unchecked_text, unread_text
    from .evals.log_review import review_logs, write_report
    out = _writable_dir(ns.out)  # checked before a long file is read
    report = review_logs(ns.logs, ns.format, tools=ns.tools, lang=ns.lang, progress=sys.stderr.isatty())
    paths = write_report(report, out, lang=ns.lang)
    if not report["totals"]["runs"]:  # an empty file, or none of its lines in the format chosen: said, not only 0
        print(t("logs.nothing_read", ns.lang, format=ns.format), file=sys.stderr)
    elif no_calls_text(report, ns.lang):  # read, and no call in it: not "nothing wrong" of calls never seen
        print(no_calls_text(report, ns.lang), file=sys.stderr)
    if unread_text(report, ns.lang):  # lines read past: left out of every figure, and said
        print(unread_text(report, ns.lang), file=sys.stderr)
    if unchecked_text(report, ns.lang):  # "nothing wrong" of calls nothing could check is said to be that
        print(unchecked_text(report, ns.lang), file=sys.stderr)
    emit(t("logs.written", ns.lang, runs=report["totals"]["runs"], html=paths["report.html"], json=paths["report.json"],
           cases=paths["cases.jsonl"]))
    return 0


def _slides_configure(p: argparse.ArgumentParser) -> None:
    lang: Lang = getattr(p, "lang", "en")
    p.add_argument("notebooks", nargs="*", metavar="NN", help=t("kit.help_numbers", lang))
    p.add_argument("--lang", choices=("en", "zh"), default="en", help=t("kit.help_lang", lang))
    p.add_argument("--out", default="slides", help=t("kit.help_out", lang))
    p.add_argument("--execute", action="store_true", help=t("kit.help_execute", lang))


def _slides(ns: argparse.Namespace) -> int:
    """Each notebook as reveal.js slides (agentlab/workbook/slides.py, docs/trainer.md#slides)."""
    from .workbook.slides import notebooks, write_slides
    known = {p.name[:2] for p in notebooks(ns.lang)}
    unknown = [n for n in ns.notebooks if n.zfill(2) not in known]
    if unknown or not known:
        raise InputError("kit.unknown_notebook", given=Listed(unknown) or "-", known=Listed(sorted(known)) or "-")
    out = _writable_dir(ns.out)
    written = write_slides(notebooks(ns.lang, ns.notebooks), out, execute=ns.execute)
    for path in written.files:
        emit(t("kit.wrote", ns.lang, path=str(path)))
    emit(t("kit.offline" if written.offline else "kit.needs_cdn", ns.lang, n=len(written.files), out=str(out)))
    return 0


def _first_cause(exc: BaseException) -> BaseException:
    """The error that happened, out of the task groups that wrap it (the MCP client's anyio: "unhandled errors in
    a TaskGroup (1 sub-exception)" says nothing of the refused connection inside)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

EXTRA: dict[str, Command] = {
    "demo": ("naive and guarded loops side by side on a desk", _demo_configure, _demo),
    "checklist": ("run the twelve pre-launch checks against a desk", _checklist_configure, _checklist),
    "capstone": ("grade a desk with the linter, the probe, the twelve checks and its own suite; --copy: your own "
                 "broken desk to fix", _capstone_configure, _capstone),
    "local": ("serve a small real model on 127.0.0.1 (OpenAI-compatible, offline)", _local_configure, _local),
    "eval": ("run a suite of cases and print the metrics", _eval_configure, _eval),
    "probe": ("your tools and model against every fault: which guard caught each, and the model's repairs",
              _probe_configure, _probe),
    "review": ("review your own logs: every tool call checked, rates per day, the class to fix, cases to keep",
               _review_configure, _review),
    "slides": ("kit.help", _slides_configure, _slides),
}
