"""What a log review says: its page (``report.html``), its largest finding in a sentence, and the files
:func:`write_report` leaves (report.json, report.html, cases.jsonl), from the report
:func:`agentlab.evals.log_review.review_logs` makes."""
from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import CODES
from ..i18n import Lang, joined, said_marks, t
from ..i18n import keys as catalogue_keys
from ..jsonutil import finite
from ..resources import MAX_LINK_BYTES, data_url, render_page
from .failure_classes import CODE_CLASSES, class_name
from .log_cases import CASES
from .metrics import went_wrong_text
from .suite import load_cases

__all__ = ["KINDS", "largest_text", "review_html", "write_report"]

#: what a finding is, and the error code the guarded loop gives it (its category and stage: CODES)
KINDS: dict[str, str] = {
    "bad_json": "BAD_JSON",
    "unknown_tool": "UNKNOWN_TOOL",
    "invalid_args": "INVALID_ARGS",
    "repeated_call": "LOOP_DETECTED",  # the repeat breaker's code
    "duplicate_write": "CONFLICT",  # the idempotency guard would have replayed it, not done it again
    "orphan_tool_message": "BAD_REQUEST",
    "refused_history": "BAD_REQUEST",
    "logged_error": "",  # an error the logs recorded themselves (telemetry): its own code
}

def _say(lang: Lang) -> Callable[..., str]:
    """The catalogue in ``lang``, as a template asks it: ``t("key", field=value)``."""
    return lambda key, **fields: t(key, lang, **fields)


def _desk(scenario: str, lang: Lang) -> str:
    """A case's desk as the page's language names it (its id, "aftersales", was English on a Chinese page)."""
    from ..scenarios import SCENARIOS
    known = SCENARIOS.get(scenario)
    return known.title[lang] if known is not None else scenario


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.0%}"  # NaN: not graded


def largest_text(report: Mapping[str, Any], lang: Lang = "en") -> str:
    """The sentence that names the class to fix first (the largest), with its count, share and an example."""
    big = report.get("largest")
    if not big and not report.get("totals", {}).get("runs"):
        # nothing read is not nothing wrong: an empty file, or logs in another format than the one chosen
        return t("logs.nothing_read", lang, format=report.get("settings", {}).get("format") or "-")
    if not big:
        return no_calls_text(report, lang) or t("logs.no_findings", lang)
    if big.get("tied"):  # as many findings each, of as large a class: each named, none picked by its name
        kinds = joined((t("logs.tied_kind", lang, kind=t("logs.kind." + k["kind"], lang), code=k["code"])
                        for k in big["tied"]), lang, "list")
        # the class first: beside a kinds table of six kinds at one each, three named "tied" read as a puzzle until
        # the sentence says they are the three of the largest class
        classes = list(dict.fromkeys(CODE_CLASSES.get(k["code"], "") for k in big["tied"]))
        counts = report.get("failure_classes") or {}
        if len(classes) == 1 and classes[0]:
            return t("logs.largest_tied_class", lang, cls=class_name(classes[0], lang), n=counts.get(classes[0], 0),
                     kinds=kinds, count=big["count"], total=report["totals"]["findings"], example=big["example"])
        return t("logs.largest_tied", lang, kinds=kinds, count=big["count"], total=report["totals"]["findings"],
                 classes=joined((class_name(c, lang) for c in classes if c), lang, "list") or "-",
                 example=big["example"])
    return t("logs.largest", lang, kind=t("logs.kind." + big["kind"], lang), code=big["code"],
             stage=t("stage." + big["stage"], lang), count=big["count"], total=report["totals"]["findings"],
             share=big["share"], example=big["example"])


def no_calls_text(report: Mapping[str, Any], lang: Lang = "en") -> str:
    """Conversations read, and not one tool call in them, in a sentence ("" otherwise): "nothing wrong" of calls the
    review never saw (a shape of log it does not read them from) is not what the team would take it to mean."""
    tot = report.get("totals", {})
    if not tot.get("runs") or tot.get("tool_calls"):
        return ""
    return t("logs.no_calls", lang, runs=tot["runs"], format=report.get("settings", {}).get("format") or "-")


def cases_jsonl(report: Mapping[str, Any]) -> str:
    """The runnable candidate cases of a review, one JSON line each: what ``cases.jsonl`` holds."""
    return _writable("".join(json.dumps(c["case"], ensure_ascii=False, allow_nan=False) + "\n"
                             for c in report["cases"] if c["runnable"]))


def unchecked_text(report: Mapping[str, Any], lang: Lang = "en", *, page: bool = False) -> str:
    """What the review could not check, in a sentence ("" when it checked every call): calls that no tools list
    (in the logs or ``--tools``) covered, whose arguments were read as JSON only. On a page (the app, where there is
    no command line), what would let them be checked, without the command's option ("Give the tools with --tools
    FILE" read to a product manager)."""
    tot = report["totals"]
    n = tot.get("unchecked_calls", 0)
    return t("logs.unchecked_page" if page else "logs.unchecked", lang, n=n, calls=tot["tool_calls"]) if n else ""


def unread_text(report: Mapping[str, Any], lang: Lang = "en") -> str:
    """The lines of the file the review read past, in a sentence with the first of them ("" when it read them all):
    left out of every figure, and said wherever the figures are."""
    n, partly = report["totals"].get("unread_lines", 0), report["totals"].get("partly_read_lines", 0)
    said = [t("logs.read_as", lang, encoding=report["settings"]["encoding"].upper())] \
        if report.get("settings", {}).get("encoding") else []
    said += [t("logs.unread", lang, n=n, first=joined(report.get("unread", ()), lang, "clause"))] if n else []
    if partly:  # read, and a part of each not (tool calls whose messages were cut short): the rest of them counted
        said.append(t("logs.partly_read", lang, n=partly, first=joined(report.get("partly_read", ()), lang, "clause")))
    return joined(said, lang, "sentence")


def review_html(report: Mapping[str, Any], lang: Lang = "en", *, page: bool = False) -> str:
    """``report.html``: one self-contained page in ``lang``, every value escaped by the template.

    ``page``: the review shown on a web page (the app, a notebook) rather than written beside ``cases.jsonl``: the
    cases come as a link the browser saves them from, not as a file and a command to run on the serving machine."""
    s, tot = report["settings"], report["totals"]
    kind = lambda k: t("logs.kind." + k, lang)  # noqa: E731
    largest = report.get("largest")
    days = [[d if d != "-" else t("logs.no_day", lang), str(v["runs"]), _pct(v["task_success_rate"]),
             str(v.get("graded", "")), _pct(v["invalid_call_rate"]), _pct(v["takeover_rate"]),
             _pct(v.get("checked_success_rate", math.nan)), _pct(v.get("unfinished_rate", math.nan))]
            for d, v in report["days"].items()]
    # each class of finding at the stage it was found at: a write done twice that no guard stopped is a failure of
    # execution, the same code logged by a guard that stopped it is rule-blocked
    kinds = [[kind(r["kind"]), r["code"] or "-", t("class." + CODES[r["code"]][0], lang) if r["code"] in CODES else "-",
              t("stage." + r["stage"], lang) if r["stage"] else "-", r["count"]] for r in report.get("by_kind_stage", ())]
    classes = report.get("failure_classes", {})
    cases = report["cases"]
    runnable = sum(c["runnable"] for c in cases)
    # on a page the cases travel in the link itself: up to MAX_LINK_BYTES (each toggle of the language sends it again)
    whole = cases_jsonl(report).encode("utf-8") if page and runnable else b""
    href = data_url(whole, "application/jsonl")
    too_large = href is None
    carried = b"" if too_large else whole
    # a finding's class and stage as the tables above say them (the code itself stays: it is what the logs hold)
    findings = [{**f, "kind": kind(f["kind"]), "category": _said(f"class.{f['category']}", f["category"], lang),
                 "stage": _said(f"stage.{f['stage']}", f["stage"], lang)} for f in report["findings"]]
    more = tot["findings"] - len(findings)
    # the marks of what was cut from the logs ([address removed]) said in the page's language, as its words are
    return said_marks(_page("log_review.html", _say(lang), lang=lang, version=report["version"], page=page,
                 title=t("logs.title", lang, source=s.get("source", "")),
                 totals=t("logs.totals", lang, runs=tot["runs"], calls=tot["tool_calls"], findings=tot["findings"],
                          bad=tot["runs_with_findings"]),
                 largest=largest_text(report, lang) if largest or not tot["runs"] or not tot["tool_calls"] else "",
                 unchecked=unchecked_text(report, lang, page=page), unread=unread_text(report, lang),
                 writes=t("logs.writes." + s.get("writes", "name pattern"), lang),
                 # the team's tools file, named: one uploaded beside the logs changed nothing a reader could see
                 tools_line=t("logs.tools_checked", lang, file=s["tools"], n=s["tools_count"]) if s.get("tools") else "",
                 day_head=[t("logs.col." + c, lang) for c in ("day", "runs", "success", "graded", "invalid", "takeover")]
                 + [t("metrics2." + c, lang) for c in ("checked_success_rate", "unfinished_rate")],
                 days=days,
                 kind_head=[t("logs.col." + c, lang) for c in ("kind", "code", "category", "stage", "count")], kinds=kinds,
                 by_category=went_wrong_text(report["by_category"], lang) if report["by_category"] else "-",
                 by_stage=went_wrong_text(report["by_stage"], lang) if report["by_stage"] else "-",
                 classes=[[class_name(c, lang), n] for c, n in classes.items()],
                 findings=findings, more=t("logs.more", lang, more=more) if more > 0 else "",
                 cases_text=_cases_text(len(cases), runnable, lang, page=page, too_large=too_large),
                 # at the cap, the cases are the first of many conversations with findings: said (a review of 16,545
                 # such conversations read "20 conversations could be kept", as if those were all)
                 cases_first=t("logs.cases_first", lang, total=tot["runs_with_findings"], n=len(cases))
                 if len(cases) >= CASES and tot["runs_with_findings"] > len(cases) else "",
                 cases_href=href if carried else "",
                 downloads=_downloads(report, lang) if page and tot["runs"] else (),
                 read_any=bool(tot["runs"]),
                 cases=[{"runnable": c["runnable"], **{k: c["case"][k] for k in ("id", "scenario", "task")},
                         "desk": _desk(c["case"]["scenario"], lang)}
                        for c in cases]), lang)


def _downloads(report: Mapping[str, Any], lang: Lang) -> list[tuple[str, str]]:
    """On a page (the app), the review's two files as the command writes them, carried in their links: a reader with
    no command line keeps or shares them. A file past the links' limit is left out (the command writes it)."""
    page, text = _files(report, lang)
    files = {"report.html": (page, "text/html"), "report.json": (text, "application/json")}
    return [(name, href) for name, (body, kind) in files.items() if (href := data_url(body.encode("utf-8"), kind))]


def _files(report: Mapping[str, Any], lang: Lang) -> tuple[str, str]:
    """The texts of ``report.html`` and ``report.json``, as the command writes them and the page's links carry them."""
    return (_writable(review_html(report, lang)),
            _writable(json.dumps(finite(report), ensure_ascii=False, indent=1, default=str, allow_nan=False)))


def _said(key: str, fallback: Any, lang: Lang) -> str:
    return t(key, lang) if key in _known() else str(fallback or "-")


@cache
def _known() -> frozenset[str]:
    return frozenset(catalogue_keys())



def _cases_text(n: int, runnable: int, lang: Lang, *, page: bool, too_large: bool) -> str:
    """The sentence over the candidate cases: the file and the command beside ``report.html``; on a page, the link
    to save them from, or why there is none (no case that runs, or more than a link carries)."""
    if not n:  # "0 conversations could be kept ..., but none of them can be replayed": no sentence for nothing
        return t("logs.cases_zero", lang)
    if not page:
        return t("logs.cases", lang, n=n, runnable=runnable, file="cases.jsonl")
    if not runnable:
        return t("logs.cases_page_none", lang, n=n)
    if too_large:
        return t("logs.cases_page_too_large", lang, n=n, runnable=runnable, mb=MAX_LINK_BYTES // 1_000_000)
    return t("logs.cases_page", lang, n=n, runnable=runnable)


def _page(template: str, say: Callable[..., str], /, **context: Any) -> str:
    """The page from ``data/templates/``, autoescaped (:func:`agentlab.resources.render_page`)."""
    return render_page(template, say, **context)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _writable(text: str) -> str:
    """A lone surrogate (``"\\ud800"`` in a log line is valid JSON) cannot be written as UTF-8: U+FFFD instead."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def write_report(report: Mapping[str, Any], out: str | Path, *, lang: Lang | None = None) -> dict[str, Path]:
    """``report.json``, ``report.html`` and ``cases.jsonl`` (the runnable candidate cases) in ``out``; each file
    appears whole or not at all. The cases are read back with the suite's own reader (:func:`load_cases`), so a
    case ``eval`` could not run is never written. ``report.json`` is strict JSON (NaN written as null) and a lone
    surrogate from the logs is written as U+FFFD."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    page, text = _files(report, lang or report["settings"].get("lang", "en"))
    lines = cases_jsonl(report)
    paths = {}
    for name, body in (("cases.jsonl", lines), ("report.json", text), ("report.html", page)):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            if name == "cases.jsonl":
                load_cases(tmp)  # the suite's reader (and its schema) accepts every case, or nothing is written
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the report from a colleague
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        paths[name] = folder / name
    return paths
