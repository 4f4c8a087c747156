"""Traces: one frozen record per model turn and per tool call (docs/telemetry.md).

The fields are the ones a post-mortem needs: where (session, turn, round),
what (tool, call id, the raw arguments as the model wrote them), how far it
got (parsed, validated, executed), what went wrong in both taxonomies, retries,
latency, tokens, and the run's final status. Traces go to and from JSONL, to a
pandas DataFrame in one call, and to HTML (one run, or two side by side).
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import names_a_field
from .i18n import Lang, aside, colon, keys, t, t_or
from .records import quick

if TYPE_CHECKING:  # pandas is optional: imported only when a DataFrame is asked for
    import pandas as pd

__all__ = ["COLORS", "FONT", "SYMBOLS", "Event", "EventKind", "crash_said", "finalize", "first_divergence", "note_text", "outcome",
           "read_jsonl",
           "side_by_side_html", "to_dataframe", "to_html", "to_jsonl"]

EventKind = Literal["model", "tool", "end"]


@quick
@dataclass(frozen=True)
class Event:
    """One step of a run. ``kind`` is ``model`` (a turn), ``tool`` (one call) or ``end``."""

    run_id: str
    session_id: str
    turn_id: int
    round_index: int
    kind: EventKind
    loop: str = ""
    guard_config: str = ""
    tool_name: str | None = None
    tool_call_id: str | None = None
    args_raw: str | None = None
    parse_ok: bool | None = None
    validate_ok: bool | None = None
    exec_ok: bool | None = None
    error_code: str | None = None
    error_category: str | None = None
    error_stage: str | None = None
    retry_count: int = 0
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    final_status: str | None = None
    model_visible: str | None = None  # exactly what the model was told (tool) or said (model)
    replayed: bool = False
    note: str | None = None
    offered: str | None = None  # model turns: the tools shown that turn, comma-joined (routing on traffic)

    def to_dict(self) -> dict:
        # every field is a scalar, so this is asdict() without its recursive deep copy
        return {name: getattr(self, name) for name in _FIELDS}


_FIELDS = tuple(f.name for f in fields(Event))


def finalize(events: Iterable[Event], status: str) -> tuple[Event, ...]:
    """Stamp the run's final status on every event (so any row can be filtered by outcome)."""
    return tuple(_stamped(e, status) for e in events)


def _stamped(e: Event, status: str) -> Event:
    # dataclasses.replace() re-runs __init__ over every field (~5 us an event, a dozen events a run);
    # the copy of a frozen event with one field changed needs none of it
    new = object.__new__(type(e))
    new.__dict__.update(e.__dict__)
    new.__dict__["final_status"] = status
    return new


def to_jsonl(events: Iterable[Event], path: str | Path, *, append: bool = False) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e.to_dict(), ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[Event]:
    names = {f.name for f in fields(Event)}
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(Event(**{k: v for k, v in d.items() if k in names}))
    return out


def to_dataframe(events: Iterable[Event]) -> pd.DataFrame:
    """A pandas DataFrame, one row per event (pandas is imported only here)."""
    import pandas as pd
    return pd.DataFrame([e.to_dict() for e in events], columns=[f.name for f in fields(Event)])


# --- HTML ------------------------------------------------------------------------
COLORS = {"ok": "#e6f4ea", "invalid": "#fff4e5", "error": "#fde8e8", "blocked": "#ede7f6", "text": "#eef3fb"}
#: a cell's outcome is never told by its background alone: each has its symbol, in the cell and in the legend
SYMBOLS = {"ok": "✓", "invalid": "⚠", "error": "✗", "blocked": "⊘", "text": "❝"}  # each in DejaVu Sans: no emoji font needed
FONT = "font-size:14px"  # the smallest text of a trace: readable without zooming


def outcome(e: Event) -> str:
    """ok / invalid (the model's call was wrong) / error (execution) / blocked (a guard) / text."""
    if e.kind == "model":
        return "text"
    if e.kind == "end":
        return "blocked" if e.error_stage == "rule_blocked" else ("ok" if e.final_status and e.final_status.startswith("done") else "error")
    if e.error_code is None:
        return "ok"
    if e.error_stage == "rule_blocked":
        return "blocked"
    if e.error_category == "validation":
        return "invalid"
    return "error"


def _cell(e: Event | None, highlight: bool = False, lang: Lang = "en") -> str:
    if e is None:
        return f"<td style='color:#555;{FONT}'>—</td>"
    style = f"background:{COLORS[outcome(e)]};vertical-align:top;padding:4px 6px;{FONT}"
    if highlight:  # outlined, and marked with the ◆ the legend explains
        style += ";outline:3px solid #D55E00"
    mark = f"<span title='{html.escape(t('legend.' + outcome(e), lang))}'>{SYMBOLS[outcome(e)]}</span> " + ("◆ " if highlight else "")
    if e.kind == "model" and e.error_code and not e.model_visible:  # the model API failed: nothing was said
        body = f"<b>{t('cell.model', lang)}</b> → <b>{html.escape(e.error_code)}</b>"
    elif e.kind == "model":  # what the model said stays as it said it; only the frame around it is translated
        said = e.model_visible or t("cell.tool_calls", lang)
        body = f"<b>{t('cell.model', lang)}</b> {html.escape(_short(said, 160))}" + (
            f" <i>{html.escape(t('cell.retries', lang, n=e.retry_count))}</i>" if e.retry_count else "")  # 429, 500
    elif e.kind == "end":
        status = _status(e.final_status or "", lang)
        note = note_text(e.note or "", lang)
        raw = ""
        if e.final_status == "failed" and (e.note or "").startswith("crashed: "):  # said once: "崩溃 崩溃：…" read twice
            raw = (e.note or "").removeprefix("crashed: ")
            # what crashed it in words, as the plain account says it; Python's own text on hover, for who reads it
            note = t("note.crash_cause", lang, what=crash_said(raw, lang) or raw)
        body = f"<b>{html.escape(status)}</b> " + (
            f"<span title='{html.escape(raw)}'>{html.escape(_short(note, 200))}</span>" if raw else html.escape(_short(note, 200)))
    else:
        status = e.error_code or t("cell.replayed" if e.replayed else "legend.ok", lang)
        body = (f"<b>{html.escape(e.tool_name or '?')}</b> <code>{html.escape(_short(e.args_raw or '', 120))}</code>"
                f"<br>→ <b>{html.escape(status)}</b>"
                + (f" <span style='color:#555' title='{html.escape(e.model_visible or '')}'>"
                   f"{html.escape(_told(e.model_visible or '', lang))}</span>" if e.error_code else "")
                # a tool call resent is said as the times it went out: "ok (retries 1)" on one row read as one refund
                # beside the two the resend made
                + (f" <i>{html.escape(t('cell.sent', lang, n=e.retry_count + 1))}</i>" if e.retry_count else ""))
    return f"<td style='{style}'>{mark}{body}</td>"


def _status(status: str, lang: Lang) -> str:
    return t_or(f"status.{status}", status, lang)


# The loops write their notes in English (a trace file is read by engineers); a person reading a trace in the
# app reads them in their language. A note no pattern knows is shown as written.
_NOTES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), k) for p, k in (
    (r"^final answer$", "note.final_answer"),
    (r"^safety cap of (?P<n>\d+) steps$", "note.safety_cap"),
    (r"^step budget of (?P<n>\d+) used up$", "note.step_budget"),
    (r"^crashed before the tool ran$", "note.crashed_before"),
    (r"^crashed: (?P<what>.+)$", "note.crashed"),
    (r"^not run: the turn ended$", "note.turn_ended"),
    (r"^not run: more than (?P<n>\d+) calls in one message$", "note.too_many_calls"),
    (r"^replayed from the idempotency store$", "note.replayed_store"),
    (r"^replayed from the approved call$", "note.replayed_approved"),
    (r"^repeated-call breaker$", "note.breaker"),
    (r"^resent with the same idempotency key$", "note.resent_same_key"),
    (r"^final answer written by a separate call$", "note.final_call"),
    (r"^the separate final-answer call failed; the single-call answer stands$", "note.final_call_failed"),
    (r"^an earlier attempt never reported back; a person must resolve it$", "note.never_reported"),
    (r"^(?P<tool>\w+): still invalid after (?P<n>\d+) corrections$", "note.still_invalid"),
    (r"^model API: (?P<code>[A-Z_0-9]+): .*$", "note.model_api"),
    (r"^(?P<tool>\w+): (?P<code>[A-Z_0-9]+)$", "note.tool_code"),
))


def crash_said(cause: str, lang: Lang) -> str | None:
    """What crashed a run (``"JSONDecodeError: ..."``, a run's reason or its end row's note, with or without its
    ``crashed:``) in words a reader without Python has, as the catalogue says it; None for an error it has no words for."""
    kind, _, rest = cause.removeprefix("crashed: ").partition(":")
    key = f"explain.crash.{kind.strip()}"
    # a model error says which: the API refusing what the loop sent (a call left unanswered) is the loop's own fault,
    # never "the model's service failed" (a reader took the desk's provider for a flaky one)
    code = f"{key}.{rest.split(':')[0].strip()}"
    if code in keys():
        return t(code, lang)
    return t(key, lang) if key in keys() else None


def note_text(note: str, lang: Lang = "en") -> str:
    """A loop's note on a trace row, in ``lang`` (English notes are returned unchanged)."""
    if lang == "en":
        return note
    for pattern, key in _NOTES:
        m = pattern.match(note)
        if m:
            return t(key, lang, **m.groupdict())
    return note


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _told(text: str, lang: Lang = "en") -> str:
    """What an error told the model, for a trace cell. A structured error is shown whole, as its message, each
    problem with its hint (the did-you-mean is in there: that is the lesson, so it is never cut) and the hint;
    the raw JSON stays in the cell's tooltip. Any other text (a naive loop's traceback) is cut, long after its
    first lines have said what leaked."""
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        error = None
    if not isinstance(error, dict):
        return _short(text, 600)
    parts = [str(error.get("message", ""))]
    told = (_problem_told(p, lang) for p in error.get("problems", []) if isinstance(p, dict))
    parts += [x for x in told if x not in parts[0]]  # a refusal's message already says its whole-call problem
    if error.get("hint"):
        parts.append(str(error["hint"]))
    return " · ".join(x for x in parts if x)


def _problem_told(p: Mapping[str, Any], lang: Lang) -> str:
    """One problem as a trace cell says it: where, what, and its hint; one with the whole call, its hint alone
    (:func:`agentlab.errors.names_a_field`: "$：rule（找不到这个订单）" read as code)."""
    hint = str(p.get("hint") or "")
    if not names_a_field(p) and hint:
        return hint
    return f"{p.get('field')}{colon(lang)}{p.get('reason')}" + (aside(hint, lang) if hint else "")


def to_html(events: Iterable[Event], title: str = "", lang: Lang = "en") -> str:
    rows = "".join(f"<tr><td style='color:#555;{FONT}'>{e.round_index}</td>{_cell(e, lang=lang)}</tr>"
                   for e in events)
    head = f"<caption style='text-align:left'><b>{html.escape(title)}</b></caption>" if title else ""
    return f"<table style='border-collapse:collapse'>{head}{rows}</table>"


def _signature(e: Event) -> tuple:
    return (e.kind, e.tool_name, e.args_raw, e.error_code, e.final_status if e.kind == "end" else None)


def first_divergence(a: list[Event], b: list[Event]) -> int | None:
    """Index of the first row where two runs differ (tool, arguments, or outcome)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if _signature(x) != _signature(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def side_by_side_html(left: Iterable[Event], right: Iterable[Event], *, titles: tuple[str, str] = ("naive", "guarded"),
                      lang: Lang = "en", effects: tuple[list[str | None], list[str | None]] | None = None) -> str:
    """Two runs step against step, coloured by outcome, first divergence outlined in red. ``effects``: each side's
    rows written (:func:`agentlab.workbook.effects.written_rows`), shown under the steps, row against row, their
    first difference outlined too: a reply lost and resent leaves the steps alike and the refunds not."""
    a, b = list(left), list(right)
    div = first_divergence(a, b)
    outlined = {id(side[div]) for side in (a, b) if div is not None and div < len(side)}
    rows = []
    # row against row within each step: a run that ended after step 1 ends in step 1's rows, beside the other run's
    # step 1, never under its step 2 (the rows were paired by position, and a number said the left run's step)
    for step in dict.fromkeys(sorted(e.round_index or 0 for e in (*a, *b))):
        xs = [e for e in a if (e.round_index or 0) == step]
        ys = [e for e in b if (e.round_index or 0) == step]
        for x, y in zip_longest(xs, ys):
            rows.append(f"<tr><td style='color:#555;{FONT}'>{step}</td>{_cell(x, id(x) in outlined, lang)}"
                        f"{_cell(y, id(y) in outlined, lang)}</tr>")
    wrote_div = None
    if effects is not None:
        ea, eb = effects
        wrote_div = next((i for i, (x, y) in enumerate(zip(ea, eb, strict=False)) if x != y),
                         None if len(ea) == len(eb) else min(len(ea), len(eb)))
        rows.append(f"<tr><th></th><th colspan='2' style='text-align:left;{FONT};padding-top:8px'>"
                    f"✎ {html.escape(t('effect.title', lang))}</th></tr>")
        for i in range(max(len(ea), len(eb), 1)):
            cells = [_written_cell(side, i, i == wrote_div, lang) for side in (ea, eb)]
            rows.append(f"<tr><td></td>{''.join(cells)}</tr>")
    legend = " ".join(f"<span style='background:{c};padding:1px 6px;{FONT}'>{SYMBOLS[k]} {html.escape(t('legend.' + k, lang))}</span>"
                      for k, c in COLORS.items())
    if div is not None or wrote_div is not None:
        legend += f" <span style='padding:1px 6px;border:3px solid #D55E00;{FONT}'>{html.escape(t('a11y.divergence', lang))}</span>"
    # the two runs in columns of one width: sized by their text, the side with the longest line (the guarded one's
    # message to its model) took three quarters of the page and the other's calls wrapped every few words. A fixed
    # layout holds the widths set here whatever a cell holds, and a word longer than its column (a list of 87
    # characters with no space) breaks where it must
    head = (f"<tr><th style='width:2.5em'></th><th style='text-align:left'>{html.escape(titles[0])}</th>"
            f"<th style='text-align:left'>{html.escape(titles[1])}</th></tr>")
    return (f"<div class='agentlab-sxs'><div>{legend}</div><table style='border-collapse:collapse;width:100%;"
            f"table-layout:fixed;overflow-wrap:anywhere'>{head}{''.join(rows)}</table></div>")


def _written_cell(rows: list[str | None], i: int, highlight: bool, lang: Lang) -> str:
    style = f"background:#F7F7F7;vertical-align:top;padding:4px 6px;{FONT}"
    if highlight:
        style += ";outline:3px solid #D55E00"
    line = rows[i] if i < len(rows) else None
    if line is None:
        text = t("effect.none", lang) if i == 0 and not any(rows) else "—"
        return f"<td class='agentlab-wrote' style='{style};color:#555'>{'◆ ' if highlight else ''}{html.escape(text)}</td>"
    return f"<td class='agentlab-wrote' style='{style}'>{'◆ ' if highlight else ''}✎ {html.escape(line)}</td>"
