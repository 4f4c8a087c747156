"""Widgets for the workbook: thin shells over pure functions (``*_html`` here, ``plots.py``).

Every app is a small class holding its controls as attributes, so a test (or a person) can set ``app.fault.value``,
call ``app.run.click()`` and read ``app.view.value``. Outputs are written with ``out.outputs = ()`` plus
``append_display_data``, which behaves the same in tests, JupyterLab and Voila.
ipywidgets and matplotlib are imported here only, never by ``import agentlab``.
"""
from __future__ import annotations

import html
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import ipywidgets as W

from ..evals.outcome import reasons_in
from ..guards import GUARDS, GuardConfig, guards_off
from ..i18n import Lang, LocalizedError, accepted_lang, aside, colon, columns, joined, label, py_reason, said, t
from ..jsonutil import JsonReason
from ..lint import lint
from ..models.faults import FAULTS, MODEL_FAULTS, TOOL_FAULTS
from ..runs import Run
from ..schema import SchemaError
from ..tools import Registry, Tool
from ..trace import side_by_side_html
from .demo import Comparison, compare_loops, explain
from .exercises import clipped
from .figures import _append, _show, figure
from .uploads import file_said, kept_or_said, upload_button, upload_content, upload_note

__all__ = ["LANG_OPTIONS", "REPLAYABLE_FAULTS", "App", "BadCaseReview", "BudgetSlider",
           "FaultInjector", "GuardPanel", "MetricsPanel", "ProbePanel", "SchemaPlayground", "browser_lang", "comparison_html",
           "figure", "fit", "metrics_table_html", "offer", "playground_html", "sample_calls"]

LANG_OPTIONS = [("English", "en"), ("中文", "zh")]


def browser_lang(accept_language: str | None = None) -> Lang:
    """The language a page opens in: the browser's most preferred of English and Chinese (zh-* is Chinese), else
    English. ``accept_language``: the browser's Accept-Language header; by default the one Voila hands the kernel as
    ``HTTP_ACCEPT_LANGUAGE`` (``http_header_envs`` in etc/jupyter/voila.json, which ``python run.py app`` reads),
    unless ``python run.py app --lang`` chose the language (``AGENTLAB_APP_LANG``)."""
    if accept_language is None:
        chosen = os.environ.get("AGENTLAB_APP_LANG", "")  # python run.py app --lang zh: the person said which
        if chosen in ("en", "zh"):
            return cast(Lang, chosen)
        accept_language = os.environ.get("HTTP_ACCEPT_LANGUAGE", "")
    return accepted_lang(accept_language)


class App:
    """An app is its controls plus ``widget``, the box that shows them (displayed as itself)."""
    widget: W.Widget
    lang: W.ToggleButtons  # every app has a language toggle

    def _relabel(self) -> None:
        """Set every label in the current language (each app has its own labels)."""

    def _ipython_display_(self) -> None:
        from IPython.display import display
        no_null_tooltips(self.widget)
        display(self.widget)

    def _wire_run(self, update: Callable[[], Any]) -> None:
        """A Run button and a result view, with the language toggle relabelling everything."""
        self.run = W.Button(button_style="primary")
        self.view = W.HTML()
        self.last: Comparison | None = None
        self.run.on_click(lambda _: _safe(self.view, update, self.lang.value))
        self.lang.observe(lambda _: self._relabel(), names="value")
        self._relabel()


def no_null_tooltips(widget: W.Widget) -> None:
    """Every control under ``widget`` with its tooltip unset given an empty one: ipywidgets' page wrote an unset one
    as the title "null", shown on hover (the upload buttons, the probe's trials, every description label)."""
    seen: set[int] = set()
    todo = [widget]
    while todo:
        w = todo.pop()
        if id(w) in seen:
            continue
        seen.add(id(w))
        if w.has_trait("tooltip") and w.tooltip is None:
            w.tooltip = ""
        todo.extend(c for c in getattr(w, "children", ()) if isinstance(c, W.Widget))


def _safe(target: W.HTML, fn: Callable[[], Any], lang: Lang = "en") -> Any:
    """Run a widget action; on failure show a short message instead of a traceback."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the learner sees a sentence, not a stack
        error = t("py.raised", lang, error=type(exc).__name__, reason=clipped(said(py_reason(exc), lang)))
        target.value = f"<p style='color:#d93025'>{html.escape(t('ui.went_wrong', lang, error=error))}</p>"
        return None


def fit(widget: W.Widget, labels: Sequence[str] = ()) -> None:
    """Size a control so its description and its longest option show whole, in either language (ipywidgets
    cuts a description at about 90 px and a dropdown at 300 px, which left about 200 px for the choice)."""
    desc = columns(getattr(widget, "description", "") or "")
    widget.style.description_width = f"{desc + 2}ch" if desc else ""
    longest = max((columns(x) for x in labels), default=0)
    if longest:  # the arrow and the padding of a select take about five
        widget.layout.width = f"{desc + 2 + longest + 6}ch"


def offer(menu: W.Widget, options: Sequence[Any], keep: Any = None) -> None:
    """``menu``'s ``options``, its choice ``keep`` when among them (else the first), sent to the page in one message.
    Sent as two, a choice the person made between them was put back on the page (the new options shown, the old
    choice not yet), while the kernel kept the person's: the page showed one and a run used the other."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    with menu.hold_sync():
        menu.options = options
        if values:
            menu.value = keep if keep in values else values[0]


# --- the side-by-side view ---------------------------------------------------------
def comparison_html(c: Comparison, lang: Lang = "en") -> str:
    """Both traces, the invalid-call counts (and the calls the tool itself refused, when there are any), and the
    plain-language account."""
    n, g = c.naive, c.guarded
    # validation off, the guarded run checks no call and counts none invalid (notebook 11's week 2): said beside its 0
    unchecked = "validate" in guards_off(g.config)
    counts = (f"<p><b>{t('ui.invalid', lang)}</b>{colon(lang)}{t('ui.naive', lang)} {n.invalid_calls} · "
              f"{t('ui.guarded', lang)} {g.invalid_calls}"
              f"{aside(t('ui.invalid_unchecked', lang), lang) if unchecked else ''}</p>")
    if g.refused_by_tool:  # the INVALID_ARGS rows the count above does not hold, counted beside it (the naive loop
        # records a tool's refusal as a bare TOOL_ERROR: a count of its side would read 0 above eleven refusals)
        counts += f"<p><b>{html.escape(t('ui.refused_by_tool', lang))}</b>{colon(lang)}{g.refused_by_tool}</p>"
    if any(e.kind == "tool" and e.error_code and e.model_visible for e in n.events):
        # the naive column quotes the tool's raw error as its model read it: read as the page left untranslated
        counts += f"<p><small>{html.escape(t('ui.naive_raw_note', lang))}</small></p>"
    account = "".join(f"<li>{html.escape(line)}</li>" for line in explain(c, lang))
    titles = (joined((t("ui.naive", lang), t("status." + n.status, lang)), lang, "colon"),
              joined((t("ui.guarded", lang), t("status." + g.status, lang)), lang, "colon"))
    return (f"<div class='agentlab-result'><h4>{t('ui.what_happened', lang)}</h4><ul>{account}</ul>{counts}"
            f"{side_by_side_html(n.events, g.events, titles=titles, lang=lang, effects=c.written(lang))}</div>")


class FaultInjector(App):
    """Pick a fault and a step, run both loops, see the traces side by side."""

    def __init__(self, *, lang: Lang = "en", faults: Sequence[str] | None = None, config: GuardConfig | None = None,
                 model: Callable[[], Any] | None = None, run_fn: Callable[..., Comparison] = compare_loops):
        """``model`` makes a fresh model per loop (a replayed or live real one); default: the fake."""
        names = list(faults or (MODEL_FAULTS + TOOL_FAULTS))
        self.run_fn, self.config, self.model = run_fn, config, model
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.fault = W.Dropdown(options=[(f"{n} — {FAULTS[n].describe(lang)}", n) for n in names], value=names[0])
        self.step = W.IntSlider(value=2, min=1, max=4)
        self._wire_run(self.update)
        self.widget = W.VBox([self.lang, W.HBox([self.fault, self.step]), self.run, self.view])

    def _relabel(self) -> None:
        lang = self.lang.value
        self.fault.description, self.step.description, self.run.description = (
            t("ui.fault", lang), t("ui.step", lang), t("ui.run", lang))
        # new labels must not lose the user's choice
        offer(self.fault, [(f"{n} — {FAULTS[n].describe(lang)}", n) for _, n in self.fault.options], self.fault.value)
        fit(self.fault, [label for label, _ in self.fault.options])
        fit(self.step)
        if self.last is not None:
            self.view.value = comparison_html(self.last, lang)

    def update(self) -> Comparison:
        kw = {"model": self.model} if self.model is not None else {}
        self.last = self.run_fn(self.fault.value, at_step=self.step.value, lang=self.lang.value, config=self.config, **kw)
        self.view.value = comparison_html(self.last, self.lang.value)
        return self.last


# --- the schema playground --------------------------------------------------------------
def _registry_of(text: str, name: str, description: str, lang: Lang) -> tuple[Registry, str]:
    """What was pasted, as a registry and the tool to sample: a bare JSON Schema, one OpenAI tool spec
    (``{"type": "function", "function": {...}}`` or the inner function object), or a list of specs."""
    try:  # the slip that made it named, in the reader's language (a Chinese keyboard's marks)
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LocalizedError("ui.schema_not_json", line=exc.lineno, detail=JsonReason.of(exc)) from None
    if isinstance(data, dict) and "tools" in data and isinstance(data["tools"], list):
        data = data["tools"]
    if isinstance(data, list):
        if not data:
            raise LocalizedError("ui.schema_no_tool")
        reg = Registry.from_specs(data, lang=lang)
        return reg, reg.names[0]
    if not isinstance(data, dict):
        raise LocalizedError("ui.schema_not_object")
    if data.get("type") == "function" or ("name" in data and "parameters" in data):
        reg = Registry.from_specs([data], lang=lang)
        return reg, reg.names[0]
    schema = dict(data)
    tool = Tool(name, description or str(schema.pop("x-description", "")), schema)
    return Registry([tool], lang=lang), name


def sample_calls(tool: Tool) -> list[str]:
    """Calls a model might send this tool, made from its own schema: one valid-looking call, then
    the usual mistakes (a camelCase name, a missing field, a wrong type, cut-off JSON, nothing)."""
    from ..names import to_camel
    props = tool.parameters.get("properties", {}) if isinstance(tool.parameters, Mapping) else {}
    required = [k for k in tool.parameters.get("required", []) if k in props] or list(props)[:2]
    good = {k: _sample_value(props[k]) for k in required}
    calls = [json.dumps(good, ensure_ascii=False)]
    snake = next((k for k in good if to_camel(k) != k), None)
    if snake:
        calls.append(json.dumps({(to_camel(k) if k == snake else k): v for k, v in good.items()}, ensure_ascii=False))
    if required:
        calls.append(json.dumps({k: v for k, v in good.items() if k != required[0]}, ensure_ascii=False))
    typed = next((k for k in good if props[k].get("type") in ("number", "integer", "string")), None)
    if typed:
        wrong = "45元" if props[typed].get("type") in ("number", "integer") else 12345
        calls.append(json.dumps({**good, typed: wrong}, ensure_ascii=False))
    calls += [calls[0][: max(1, len(calls[0]) // 2)], "{}"]
    return calls


def _sample_value(schema: Mapping) -> Any:
    for key in ("examples", "enum"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    return {"string": "text", "integer": 1, "number": 1.5, "boolean": True, "array": [],
            "object": {}}.get(kind if isinstance(kind, str) else "string", "text")


def playground_html(schema_text: str, samples: Sequence[str] | None = None, *, name: str = "my_tool",
                    description: str = "", lang: Lang = "en") -> str:
    """Lint what was pasted and show how the validator answers sample calls (made from the pasted
    schema unless given): pure, so it is testable."""
    try:
        reg, name = _registry_of(schema_text, name, description, lang)
    except (ValueError, SchemaError, TypeError, AttributeError, KeyError) as exc:
        return f"<p style='color:#d93025'>{html.escape(t('ui.bad_schema', lang, error=said(exc, lang)))}</p>"
    if samples is None:
        samples = sample_calls(reg[name])
    findings = lint(reg, lang=lang)
    if findings:
        rows = "".join(f"<tr><td>{html.escape(label(f.severity, lang))}</td><td>{f.rule}</td><td>{html.escape(f.location)}</td>"
                       f"<td>{html.escape(f.message)}<br><i>{html.escape(f.suggestion)}</i></td></tr>" for f in findings)
        found = f"<table class='agentlab-findings'>{rows}</table>"
    else:
        found = f"<p>{t('ui.no_findings', lang)}</p>"
    answers = "".join(
        f"<tr><td><code>{html.escape(s)}</code></td><td><code>{html.escape(reg.check(name, s, lang=lang).render(lang))}</code></td></tr>"
        for s in samples)
    return (f"<h4>{t('ui.findings', lang)}{aside(len(findings), lang)}</h4>{found}"
            f"<h4>{t('ui.samples', lang)}</h4><table class='agentlab-samples'>{answers}</table>")


class SchemaPlayground(App):
    """Edit a schema; the linter's findings and the validator's answers update live."""

    def __init__(self, schema: Mapping | str | None = None, *, samples: Sequence[str] | None = None,
                 description: str = "", lang: Lang = "en"):
        text = schema if isinstance(schema, str) else json.dumps(schema or _starter_schema(lang), indent=2,
                                                                 ensure_ascii=False)
        self.samples, self.description = (list(samples) if samples is not None else None), description
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.editor = W.Textarea(value=text, layout=W.Layout(width="auto", height="260px"))  # (auto: see ProbePanel)
        self.view = W.HTML()
        self.editor.observe(lambda _: self.update(), names="value")
        self.lang.observe(lambda _: self.update(), names="value")
        self.update()
        self.widget = W.VBox([self.lang, W.Label(t("ui.schema", lang)), self.editor, self.view])

    def update(self) -> str:
        self.view.value = playground_html(self.editor.value, self.samples, description=self.description,
                                          lang=self.lang.value)
        return self.view.value


def _starter_schema(lang: Lang = "en") -> dict:
    """The playground's first schema, written in a hurry as notebook 01's is, described in the reader's language (the
    linter finds the same faults in either: a name repeated, no unit, a closed set as free text)."""
    def described(field: str, kind: str) -> dict:
        return {"type": kind, "description": t(f"playground.starter.{field}", lang)}
    return {"type": "object", "properties": {"orderId": described("order_id", "string"),
                                             "amount": described("amount", "number"),
                                             "reason": described("reason", "string")},
            "required": ["orderId", "amount", "reason"]}


# --- guards and metrics ----------------------------------------------------------------------
class GuardPanel(App):
    """A checkbox per guard; ``.config`` is the GuardConfig they describe."""

    def __init__(self, base: GuardConfig = GuardConfig(), *, on_change: Callable[[GuardConfig], None] | None = None,
                 lang: Lang = "en"):
        self.base = base
        # each switch in the reader's language (it read all_calls, validate...), its GuardConfig field as the tooltip
        self.boxes = {g: W.Checkbox(value=getattr(base, g) not in (None, False), description=label(g, lang),
                                    tooltip=g, indent=False) for g in GUARDS}
        for box in self.boxes.values():
            box.observe(lambda _: on_change and on_change(self.config), names="value")
        self.widget = W.VBox([W.HTML(f"<b>{t('ui.guards', lang)}</b>"), W.GridBox(
            list(self.boxes.values()), layout=W.Layout(grid_template_columns="repeat(3, 220px)"))])

    @property
    def config(self) -> GuardConfig:
        off = [g for g, box in self.boxes.items() if not box.value]
        on = GuardConfig()
        base = self.base
        for g, box in self.boxes.items():  # a guard switched back on takes its default value
            if box.value and getattr(base, g) in (None, False):
                from dataclasses import replace
                base = replace(base, **{g: getattr(on, g)})
        return base.without(*off)


def metrics_table_html(rows: Mapping[str, Mapping[str, Any]], lang: Lang = "en") -> str:
    cols = ["task_success_rate", "invalid_call_rate", "avg_steps", "takeover_rate"]
    # beside the workbook's four, the stricter two (docs/metrics.md#two-ways-to-count), named in full in every language
    cols += [c for c in ("checked_success_rate", "unfinished_rate") if all(c in m for m in rows.values())]
    strict = ("checked_success_rate", "unfinished_rate")
    # every metric under its full name, in English too: the four had read as identifiers (task_success_rate) beside
    # the stricter two's full names, two kinds of name for one row of numbers
    head = "".join(f"<th>{t('metrics2.' + c, lang) if c in strict else t('eval.' + c, lang)}</th>" for c in cols)
    body = "".join(f"<tr><td><b>{html.escape(label(group, lang))}</b></td>" + "".join(
        f"<td>{m[c]:.2f}</td>" for c in cols) + "</tr>" for group, m in rows.items())
    return f"<h4>{t('ui.metrics', lang)}</h4><table><tr><th></th>{head}</tr>{body}</table>"


class MetricsPanel(App):
    """The four headline numbers (docs/metrics.md#the-four-headline-numbers) for groups of runs, as a table and grouped bars."""

    def __init__(self, runs: Mapping[str, Sequence[Run]] | None = None, *, lang: Lang = "en",
                 correct: Callable[[Run], bool] | None = None):
        self.lang, self.correct = lang, correct
        self.table = W.HTML()
        self.plot = W.Output()
        self.widget = W.VBox([self.table, self.plot])
        if runs:
            self.update(runs)

    def update(self, runs: Mapping[str, Sequence[Run]]) -> dict:
        from ..evals import summarize
        from .plots import plot_bars
        rows = {group: summarize(rs, self.correct) for group, rs in runs.items()}
        self.table.value = metrics_table_html(rows, self.lang)
        metrics = ["task_success_rate", "invalid_call_rate", "takeover_rate"]
        data = {t("eval." + m, self.lang): {group: rows[group][m] for group in rows} for m in metrics}  # as the table names them
        _show(self.plot, figure(lambda ax: plot_bars(data, ax=ax, title=t("ui.metrics", self.lang), lang=self.lang)))
        return rows


# --- approvals --------------------------------------------------------------------------
#: A recording cannot react to what it is told: only faults the loop handles without the model's help
#: (API errors, repeated calls, tool failures resent or waited out) keep a replayed run meaningful.
REPLAYABLE_FAULTS = ("duplicate_call", "parallel_call", "api_429", "api_timeout", "api_500", "api_401",
                     "flaky_tool", "hanging_tool", "lost_reply")


# --- the weekly bad-case review (docs/metrics.md#the-weekly-bad-case-review) -----------------------
class BadCaseReview(App):
    """Sample sessions, check each auto-tag, see the shares, promote a bad case into the suite.

    Args:
        results: graded sessions (``CaseResult``) to sample from.
        cases: the cases they came from (for promotion).
        suite: the regression JSONL file a promoted case is appended to.
    """

    def __init__(self, results: Sequence[Any], cases: Sequence[Any], suite: str | Any, *, n: int = 10,
                 seed: int = 0, lang: Lang = "en"):
        from ..evals import STAGES, auto_tag, sample
        self.cases = {c.id: c for c in cases}
        self.suite = suite
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.picked = sample(results, n, seed=seed)
        self.tags = [W.Dropdown(options=["ok", *STAGES], value=auto_tag(r), layout=W.Layout(width="150px"))
                     for r in self.picked]

        self.rows = [W.HTML(layout=W.Layout(width="640px")) for _ in self.picked]
        self._quiet = False
        for tag in self.tags:
            tag.observe(lambda _: None if self._quiet else self.refresh(), names="value")
        self.shares = W.Output()
        self.top = W.HTML()
        self.choice = W.Dropdown()
        self.promote = W.Button(button_style="warning", layout=W.Layout(width="260px"))
        self.result = W.HTML()
        self.promote.on_click(lambda _: _safe(self.result, self.do_promote))
        self.lang.observe(lambda _: self._relabel(), names="value")
        self._relabel()
        self.widget = W.VBox([self.lang, *[W.HBox([row, tag]) for row, tag in zip(self.rows, self.tags, strict=True)],
                              self.shares, self.top, W.HBox([self.choice, self.promote]), self.result])

    def _relabel(self) -> None:
        lang = self.lang.value
        from ..evals import STAGES
        self._quiet = True  # the stages in this language (a tag's value stays the stage), then one refresh
        for tag in self.tags:
            tag.options, tag.value = [(t("stage." + s, lang), s) for s in ("ok", *STAGES)], tag.value
        self._quiet = False
        for row, r in zip(self.rows, self.picked, strict=True):
            case = self.cases.get(r.case_id)
            text = html.escape(case.text(lang)[:70]) if case else r.case_id
            why = html.escape(joined(reasons_in(r.failures, lang), lang)[:120]) or "—"
            row.value = (f"<code>{r.case_id}</code> <b>{t('status.' + r.run.status, lang)}</b><br>{text}<br>"
                         f"<span style='color:#a50e0e'>{why}</span>")
        offer(self.choice, [(r.case_id + aside(t("status." + r.run.status, lang), lang), i)
                            for i, r in enumerate(self.picked) if not r.passed] or [("-", -1)], self.choice.value)
        self.promote.description = t("ui.promote", lang)
        self.refresh()

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for tag in self.tags:
            if tag.value != "ok":
                out[tag.value] = out.get(tag.value, 0) + 1
        return out

    def refresh(self) -> None:
        from .plots import plot_shares
        counts = self.counts()
        lang = self.lang.value
        named = {t("stage." + k, lang): v for k, v in counts.items()} or {"-": 0}
        _show(self.shares, figure(lambda ax: plot_shares(named, ax=ax, title=t("ui.shares", lang), lang=lang),
                                  size=(6, 2.4)))
        top = max(counts, key=lambda k: counts[k]) if counts else None
        self.top.value = (t("ui.target", lang, top=t("stage." + top, lang), n=counts[top], total=sum(counts.values())) if top
                          else t("ui.no_failures", lang))

    def do_promote(self) -> Any:
        from ..evals import promote, run_case
        i = self.choice.value
        if i is None or i < 0:
            return None
        r = self.picked[i]
        new = promote(r, self.cases[r.case_id], self.suite)
        check = run_case(new, loop=r.run.loop)  # the loop the bad session ran in, so it fails the same way
        lang = self.lang.value
        verdict = (t("ui.passes", lang) if check.passed
                   else t("ui.fails", lang, why=joined(reasons_in(check.failures, lang), lang)))
        text = t("ui.promoted", lang, id=new.id, suite=Path(str(self.suite)).name, loop=t("loop." + r.run.loop, lang),
                 status=t("status." + check.run.status, lang), verdict=verdict)
        if not check.passed:
            text = joined((text, t("ui.reproduces", lang)), lang, "sentence")
        self.result.value = html.escape(text)
        return new


class BudgetSlider(App):
    """A step-budget slider over the final statuses of many wandering runs (notebook 06)."""

    def __init__(self, *, value: int = 6, runs: int = 40, lang: Lang = "en"):
        from .demo import budget_sweep
        self.sweep, self.runs = budget_sweep, runs
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        self.slider = W.IntSlider(value=value, min=1, max=12)
        self.out = W.Output()
        self.note = W.HTML()
        self.slider.observe(lambda _: _safe(self.note, self.update), names="value")
        self.lang.observe(lambda _: self._relabel(), names="value")
        self._relabel()
        self.widget = W.VBox([self.lang, self.slider, self.out, self.note])

    def _relabel(self) -> None:
        self.slider.description = t("ui.step_budget", self.lang.value)
        self.update()

    def update(self) -> dict[str, int]:
        from .plots import plot_statuses
        counts = self.sweep([self.slider.value], runs=self.runs)
        label, row = next(iter(counts.items()))
        _show(self.out, figure(lambda ax: plot_statuses({label: row}, ax=ax, lang=self.lang.value), size=(5, 2.6)))
        return row


# --- the probe: paste your tools, see which guard catches what --------------------------------------
def _sample_tools(lang: Lang) -> str:
    """The after-sales desk's tools, as the probe's editor starts: their descriptions in the page's language."""
    from ..scenarios.base import contract_specs
    return json.dumps([{"type": "function", "function": spec} for spec in contract_specs("aftersales", lang).values()],
                      indent=1, ensure_ascii=False)


class ProbePanel(App):
    """Paste a tools list (JSON), pick the model (fake, or a replayed recording) and the trials, press run:
    the probe's table and plots (docs/metrics.md#the-probe). Bad pasted text gets one friendly sentence."""

    def __init__(self, tools: str | Sequence[Mapping] | None = None, *, cassette: str | Path | None = None,
                 lang: Lang = "en"):
        text = tools if isinstance(tools, str) else json.dumps(list(tools), indent=1, ensure_ascii=False) \
            if tools is not None else _sample_tools(lang)
        self.lang = W.ToggleButtons(options=LANG_OPTIONS, value=lang)
        # width auto, not 100%: the widget's own margins took a 100% box 4 px past the panel, which then scrolled sideways
        self.editor = W.Textarea(value=text, layout=W.Layout(width="auto", height="200px"))
        self.upload = upload_button(".json")  # a tools file, for those who would not paste
        self.upload_note = W.HTML()  # the largest file it takes
        self.upload.observe(lambda _: _safe(self.view, self.take_upload, self.lang.value), names="value")
        self.model = W.Dropdown(options=["fake", "replay"], value="fake")
        self.cassette = W.Text(value=str(cassette or ""))  # a recording's path, where the page runs
        # a recording uploaded, for a reader who has no path on the machine serving the page (the app)
        self.tape_upload = upload_button(".jsonl")
        self.tape: Path | None = None
        self.tape_upload.observe(lambda _: _safe(self.view, self.take_tape, self.lang.value), names="value")
        self.trials = W.IntSlider(value=1, min=1, max=3)
        self.report: dict | None = None
        self.probed_sample = False  # the last run probed the sample tools (said above its table)
        self.uploaded = ("", "")  # the file last uploaded into the editor, and the text it put there
        self.plots = W.Output()
        self.header = W.HTML()
        self._wire_run(self.update)
        self.widget = W.VBox([self.lang, self.header, W.HBox([self.upload, self.upload_note]), self.editor,
                              W.HBox([self.model, self.trials]),
                              W.HBox([self.tape_upload, self.cassette]), self.run, self.view, self.plots])

    def take_tape(self) -> dict | None:
        """An uploaded recording: kept while the page runs, replayed at once (the model set to a recording); a file
        too large for the page gets its sentence."""
        tape = kept_or_said(self.tape_upload, "agentlab-probe-tape-", self.tape, self.view, self.lang.value)
        if tape is None:
            return None
        self.tape, self.cassette.value, self.model.value = tape, "", "replay"
        self._tools_of(tape)
        return self.update()

    def _tools_of(self, tape: Path) -> None:
        """The tools a recording was made with, into the editor, where the workbook has them (its own recordings name
        a data file): replayed against other tools (the Chinese page's sample), no call matched and every cell read
        n/a, with nothing said. A recording of a team's own tools leaves the editor as it is."""
        from ..evals.probe import cassette_settings
        from ..resources import data_file
        try:
            named = str((cassette_settings(tape) or {}).get("tools") or "")
        except (ValueError, OSError, AttributeError, TypeError):
            return
        if named.startswith("data/") and data_file(named[5:]).is_file():
            self.editor.value = data_file(named[5:]).read_text(encoding="utf-8")

    def take_upload(self) -> dict | None:
        """An uploaded tools file: into the editor (bytes that are not UTF-8 get their sentence), then probed."""
        from ..i18n import LocalizedError
        try:
            held = upload_content(self.upload)
            if held is None:
                return None
            self.editor.value = held[1].decode("utf-8-sig")
            self.uploaded = (held[0], self.editor.value)  # what the editor holds came from this file (said by name)
        except LocalizedError as exc:
            self.view.value = f"<p style='color:#d93025'>{html.escape(exc.localized(self.lang.value))}</p>"
            return None
        except UnicodeDecodeError as exc:
            said = t("probe.ui.not_utf8", self.lang.value, at=exc.start)
            self.view.value = f"<p style='color:#d93025'>{html.escape(said)}</p>"
            return None
        return self.update()

    def _relabel(self) -> None:
        lang = self.lang.value
        if self.editor.value == _sample_tools("zh" if lang == "en" else "en"):  # the sample, untouched: in the page's language
            self.editor.value = _sample_tools(lang)
        self.editor.description = t("probe.ui.tools", lang)  # its name to a screen reader, as the menus have theirs
        self.editor.style.description_width = "initial"
        self.model.description = t("probe.ui.model", lang)
        # the choice stays; only its words change
        offer(self.model, [(t(f"probe.ui.model_{m}", lang), m) for m in ("fake", "replay")], self.model.value)
        self.trials.description = t("probe.ui.trials", lang)
        self.cassette.description = t("probe.ui.cassette", lang)
        self.cassette.placeholder = t("probe.ui.cassette_path", lang)
        self.tape_upload.description = t("probe.ui.upload_tape", lang)
        self.upload.description = t("probe.ui.upload", lang)
        self.upload_note.value = upload_note(lang)
        self.header.value = f"<h3>{html.escape(t('probe.ui.title', lang))}</h3><p>{html.escape(t('probe.ui.intro', lang))}</p>"
        self.run.description = t("probe.ui.run", lang)
        if self.report is not None:
            self._show(self.report)

    def update(self) -> dict | None:
        """Run the probe on the pasted tools; the report, or None after a friendly message."""
        from ..evals.probe import cassette_settings, fake_source, probe, replay_source
        from ..i18n import LocalizedError
        from ..tools import load_specs
        lang = self.lang.value
        self.plots.outputs = ()
        try:
            try:
                specs = json.loads(self.editor.value)
            except json.JSONDecodeError as exc:  # nothing there (an empty file uploaded) is said so, never as "line 1"
                name, text = self.uploaded
                key = "probe.empty_text" if not self.editor.value.strip() else \
                    "probe.bad_json_file" if text == self.editor.value else "probe.bad_json_text"
                raise LocalizedError(key, line=exc.lineno, detail=JsonReason.of(exc), name=name) from None
            registry = load_specs(specs, source=t("probe.ui.tools", lang), lang=lang)
            kwargs: dict[str, Any] = {}
            if self.model.value == "replay":
                typed = self.cassette.value.strip()  # a path typed wins over the file uploaded before it
                if not typed and self.tape is None:  # (it said "- : no recording to replay", "-" standing for none)
                    raise LocalizedError("probe.ui.no_cassette_given")
                tape = Path(typed) if typed else self.tape
                assert tape is not None
                if not tape.is_file():  # none there, or a folder: said as such, not as "holds no recording"
                    raise LocalizedError("probe.ui.no_such_file", path=str(tape))
                try:  # any file that is not a probe's recording is said so, whatever is in it (never its JSON error)
                    settings = cassette_settings(tape) if tape.is_file() else None
                except (ValueError, OSError, AttributeError, TypeError):
                    settings = None
                if settings is None:
                    raise LocalizedError("probe.ui.no_cassette", path=str(tape))
                from ..models.cassette import labels
                kwargs = {"recorded": set(labels(tape)), "categories": settings.get("categories"),
                          "only": settings.get("only"), "seed": settings.get("seed") or 0,
                          "offer": settings.get("offer") or "one"}
                source = replay_source(tape)
                lang_run = settings.get("lang") or lang
            else:
                source, lang_run = fake_source(), lang
            report = probe(registry, source, trials=self.trials.value, lang=lang_run, source="pasted",
                           model_name=self.model.value, **kwargs)
        except LocalizedError as exc:
            self.report = None
            self.view.value = f"<p style='color:#d93025'>{html.escape(file_said(exc, lang))}</p>"
            return None
        self.report = report
        # the sample still in the editor (never replaced, or an upload that could not be read left it there): said
        self.probed_sample = self.editor.value in (_sample_tools("en"), _sample_tools("zh"))
        self._show(report)
        if self.model.value == "replay" and not report["summary"]["applicable"]:  # said, not a table of n/a alone
            said = t("probe.ui.tape_other_tools", lang)
            self.view.value = f"<p role='alert' style='color:#d93025'>{html.escape(said)}</p>" + self.view.value
        return report

    def _show(self, report: dict) -> None:
        from ..evals.probe_report import plot_probe_categories, plot_probe_matrix, table_html
        from ..evals.probe_summary import summary_lines
        lang = self.lang.value
        # the command line's own lines (a scripted model's 100% said as its ceiling, tools that failed or were not
        # probed): the panel had written its own first line, without them
        lines = ([t("probe.ui.sample_probed", lang)] if self.probed_sample else []) \
            + summary_lines(report, lang)
        said = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        # the table scrolls within its own box (data/templates/probe_table.html)
        self.view.value = f"<div class='agentlab-probe'>{said}{table_html(report, lang)}</div>"
        self.plots.outputs = ()
        n_tools, n_cats = len(report["tools"]), len(report["settings"]["categories"])
        _append(self.plots, figure(lambda ax: plot_probe_matrix(report, ax=ax, lang=lang),
                                   size=(max(6, 0.55 * n_cats + 3), max(2.5, 0.32 * n_tools + 1.6))))
        _append(self.plots, figure(lambda ax: plot_probe_categories(report, ax=ax, lang=lang), size=(8, 3.6)))

