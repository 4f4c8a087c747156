"""The probe's report: ``report.json`` (everything, versioned) and ``report.html`` (one self-contained page).

The page holds a tool × category table (which guard caught each fault, how often the model repaired
its call and in how many turns), two plots drawn by matplotlib and inlined as SVG, the worst tools
and fields with the linter's suggestions beside them, and every lint finding. No script, no
external file: it opens from a mail attachment. Both files are written under temporary names and
renamed, so a reader never sees half a report. matplotlib is imported only when a plot is drawn.

Every text on a plot that comes from the tools file (a tool's name) is drawn literally: ``price$\\frac{$``
is a name, not mathtext. The plots are drawn with the same CJK-capable fonts as the workbook's
(:func:`agentlab.workbook.plots.cjk_fonts`), so a Chinese tool name renders, and a glyph no font has
(an emoji) leaves a box, not a warning on stderr.
"""
from __future__ import annotations

import html
import io
import json
import os
import tempfile
import warnings
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..i18n import Lang, t
from ..resources import CJK_FILES, CJK_FONTS
from .probe import BOUNDED

__all__ = ["VERDICT_COLORS", "after_an_error", "cell_text", "plot_probe_categories", "plot_probe_matrix", "render_html", "table_html", "write"]

# greens: caught and fine; amber: stopped but not repaired, or the model made no call; purple: the call was
# valid and the tool failed on it; red: nothing caught it
VERDICT_COLORS = {"ok": "#188038", "repaired": "#81c995", "caught": "#34a853", "harmless": "#c8e6c9",
                  "not_injected": "#dadce0", "no_call": "#f9ab00", "not_repaired": "#e8710a", "tool_failed": "#a142f4",
                  "not_caught": "#d93025", "n/a": "#f1f3f4"}
_ORDER = ["ok", "repaired", "caught", "harmless", "not_injected", "no_call", "not_repaired", "tool_failed", "not_caught",
          "n/a"]
_FAILING = ("not_caught", "tool_failed", "not_repaired", "no_call")
_CJK_FONTS, _CJK_FILES = CJK_FONTS, CJK_FILES  # one list, in agentlab.resources
_families: list[str] | None = None


def write(report: Mapping[str, Any], out: str | Path, *, lang: Lang | None = None) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.html`` into ``out``; each appears whole or not at all."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, ensure_ascii=False, indent=1, sort_keys=False)
    page = render_html(report, lang or report["settings"]["lang"])  # both rendered before anything is written
    paths = []
    for name, body in (("report.json", text), ("report.html", page)):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            os.chmod(tmp, 0o644 & ~_umask())  # mkstemp's 0600 would hide the report from a web server or a colleague
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        paths.append(folder / name)
    return paths[0], paths[1]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- plots ------------------------------------------------------------------------------------
def _font_families() -> list[str]:
    global _families
    if _families is None:
        import logging

        from matplotlib import font_manager
        logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
        for path in _CJK_FILES:
            if Path(path).exists():
                font_manager.fontManager.addfont(path)
        installed = {f.name for f in font_manager.fontManager.ttflist}
        _families = ["DejaVu Sans", *[f for f in _CJK_FONTS if f in installed]]  # a list falls back glyph by glyph
    return _families


def _grid(report: Mapping[str, Any]) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    tools = [x["name"] for x in report["tools"]]
    cats = list(report["settings"]["categories"])
    cells = {(c["tool"], c["category"]): c for c in report["cells"]}
    return tools, cats, cells


def plot_probe_matrix(report: Mapping[str, Any], *, ax: Any = None, lang: Lang = "en") -> Any:
    """Tools down, categories across, each cell coloured by its verdict (``ax=None`` makes a figure). The tool and
    category names are the file's and the probe's own, the same in every language; ``lang`` is for the title."""
    from matplotlib.colors import ListedColormap
    tools, cats, cells = _grid(report)
    if ax is None:
        from matplotlib.figure import Figure
        ax = Figure(figsize=(max(6, 0.55 * len(cats) + 3), max(2.5, 0.32 * len(tools) + 1.6))).subplots()
    codes = [[_ORDER.index(cells[(tl, c)]["verdict"]) if (tl, c) in cells else _ORDER.index("n/a") for c in cats]
             for tl in tools]
    ax.imshow(codes, cmap=ListedColormap([VERDICT_COLORS[v] for v in _ORDER]), vmin=0, vmax=len(_ORDER) - 1,
              aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(cats)), cats, rotation=45, ha="right", fontsize=8, parse_math=False)
    ax.set_yticks(range(len(tools)), tools, fontsize=8, parse_math=False)  # a name from the file, never mathtext
    ax.set_xticks([x - 0.5 for x in range(1, len(cats))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(tools))], minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    for y, tl in enumerate(tools):
        for x, c in enumerate(cats):
            cell = cells.get((tl, c))
            if cell and cell["applies"] and cell["verdict"] in _FAILING:
                ax.text(x, y, "x", ha="center", va="center", color="white", fontsize=8, fontweight="bold")
    ax.set_title(t("probe.plot_matrix_title", lang), fontsize=9)
    return ax


def plot_probe_categories(report: Mapping[str, Any], *, ax: Any = None, lang: Lang = "en") -> Any:
    """Per category, how many tools got each verdict (stacked bars)."""
    tools, cats, cells = _grid(report)
    if ax is None:
        from matplotlib.figure import Figure
        ax = Figure(figsize=(max(6, 0.55 * len(cats) + 2), 3.2)).subplots()
    bottom = [0] * len(cats)
    for verdict in _ORDER:
        counts = [sum(1 for tl in tools if cells.get((tl, c), {}).get("verdict", "n/a") == verdict) for c in cats]
        if any(counts):
            ax.bar(range(len(cats)), counts, bottom=bottom, color=VERDICT_COLORS[verdict], label=t("probe.v." + verdict, lang),
                   edgecolor="white", linewidth=0.5)
            bottom = [b + n for b, n in zip(bottom, counts, strict=True)]
    ax.set_xticks(range(len(cats)), cats, rotation=45, ha="right", fontsize=8, parse_math=False)
    ax.set_ylabel(t("probe.axis_tools", lang))
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of tools: no "2.5 tools"
    # beside the axes: below them it met the rotated category names, inside it would cover a bar
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
    return ax


def after_an_error(path: str | Path) -> dict[str, int]:
    """What a recorded model did on the turn after its first call was refused for its arguments (a fault the
    ``validate`` guard catches): ``call``, it called again (and may have repaired the call), or ``words``, it
    answered the user instead (often by explaining the error), which no re-ask budget can repair. Counted over
    the recording's trials that reached that turn; this is why two models' self-correction rates differ."""
    from ..models.cassette import read_cassette
    from ..models.faults import FAULTS
    replies: dict[str, list[dict]] = defaultdict(list)
    for e in read_cassette(path):
        label = e.get("label")
        if isinstance(label, str) and not label.startswith("#") and isinstance(e.get("reply"), dict):
            replies[label].append(e["reply"])
    moves = {"call": 0, "words": 0}
    for label, turns in replies.items():
        category = label.split("/")[1] if label.count("/") >= 2 else ""
        if category in FAULTS and FAULTS[category].caught_by == "validate" and len(turns) > 1:
            moves["call" if turns[1].get("tool_calls") else "words"] += 1
    return moves


def _svg(draw: Any, report: Mapping[str, Any], lang: Lang = "en") -> str:
    import matplotlib
    with matplotlib.rc_context({"font.family": _font_families()}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from", category=UserWarning)
        ax = draw(report, lang=lang)
        fig = ax.figure
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline: no XML prolog, no doctype


# --- the page ---------------------------------------------------------------------------------
def cell_text(cell: Mapping[str, Any], lang: Lang = "en") -> str:
    """A cell in a few words: the guard that caught it (or "not caught"), the repair rate and turns."""
    v = cell["verdict"]
    if v == "n/a":
        return "n/a"
    guard = cell.get("guard") or "none"
    head = t("probe.v." + v, lang) if v in ("not_caught", "no_call", "not_injected", "ok", "harmless", "tool_failed") \
        else (guard if guard != "none" else t("probe.v." + v, lang))
    rate = cell.get("self_correction_rate")
    extra = ""
    if rate is not None:
        extra = f" · {t('probe.fixed', lang)} {rate:.0%}"
        if cell.get("repair_turns") is not None:
            extra += f" · {cell['repair_turns']:g} {t('probe.turns', lang)}"
    return head + extra


def _tip(cell: Mapping[str, Any], lang: Lang) -> str:
    if not cell["applies"]:
        return t(cell["na_reason"], lang) + (f": {cell['why']}" if cell.get("why") else "")
    parts = [f"{t('probe.verdict', lang)}: {t('probe.v.' + cell['verdict'], lang)}",
             f"{t('probe.guard', lang)}: {cell.get('guard')}"]
    if cell.get("field"):
        parts.append(f"{t('probe.field', lang)}: {cell['field']}")
    if cell.get("first_call"):
        parts.append(f"{t('probe.first_call', lang)}: {cell['first_call'][:160]}")
    if cell.get("told"):
        parts.append(f"{t('probe.told', lang)}: {cell['told'][:240]}")
    if cell.get("tool_error"):
        parts.append(f"{t('probe.tool_error', lang)}: {cell['tool_error'][:240]}")
    parts.append(f"{t('probe.statuses', lang)}: " + ", ".join(f"{k} {n}" for k, n in cell.get("statuses", {}).items()))
    return "\n".join(parts)


def table_html(report: Mapping[str, Any], lang: Lang = "en") -> str:
    """The tool × category table, every cell coloured by its verdict, details on hover."""
    tools, cats, cells = _grid(report)
    about = {x["name"]: x for x in report["tools"]}
    head = "".join(f"<th title='{html.escape(_category_text(report, c, lang))}'>{html.escape(c)}</th>" for c in cats)
    rows = []
    for tl in tools:
        info = about[tl]
        kind = t("probe.kind." + info["kind"], lang)
        lint_n = len(info.get("lint", []))
        badge = f" <span class='lint' title='{html.escape(_lint_titles(info.get('lint', [])))}'>{html.escape(t('probe.lint_badge', lang))} {lint_n}</span>" \
            if lint_n else ""
        tds = []
        not_run = _not_run(info, lang)
        for c in cats:
            cell = cells.get((tl, c)) or {"verdict": "n/a", "applies": False, "na_reason": "probe.not_run",
                                          "why": not_run.get(c)}
            v = cell["verdict"]
            fg = "#fff" if v in ("ok", "caught", "not_caught", "not_repaired", "tool_failed") else "#202124"
            tds.append(f"<td class='v-{html.escape(v.replace('/', ''))}' style='background:{VERDICT_COLORS[v]};color:{fg}' "
                       f"title='{html.escape(_tip(cell, lang))}'>{html.escape(cell_text(cell, lang))}</td>")
        rows.append(f"<tr><th class='tool'>{html.escape(tl)} <small>{html.escape(kind)}</small>{badge}</th>{''.join(tds)}</tr>")
    return (f"<table class='probe'><thead><tr><th>{t('probe.tool', lang)}</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _category_text(report: Mapping[str, Any], name: str, lang: Lang) -> str:
    for c in report["categories"]:
        if c["name"] == name:
            return c[lang] + (f" ({t('probe.meant_for', lang)}: {c['meant_for']})" if c.get("meant_for") else "")
    return name


def _lint_titles(findings: list[dict]) -> str:
    return "\n".join(f"{f['rule']} {f['location']}: {f['message']}" for f in findings)


def _findings_html(findings: list[dict]) -> str:
    if not findings:
        return ""
    items = "".join(f"<li><code>{html.escape(f['rule'])}</code> <b>{html.escape(f['location'])}</b>: "
                    f"{html.escape(f['message'])}<br><span class='fix'>→ {html.escape(f['suggestion'])}</span></li>"
                    for f in findings)
    return f"<ul class='findings'>{items}</ul>"


def _failures_html(report: Mapping[str, Any], lang: Lang) -> str:
    """Each failing cell, with what the linter says about its field and its tool right beside it."""
    lint_all = report.get("lint", [])
    rows = []
    for c in report["cells"]:
        if c["verdict"] not in _FAILING:
            continue
        where = f"{c['tool']}.{c['field']}" if c.get("field") else c["tool"]
        near = [f for f in lint_all if f["location"] in (where, c["tool"])]
        rows.append(f"<li><b>{html.escape(c['tool'])}</b> × <code>{html.escape(c['category'])}</code>: "
                    f"{html.escape(t('probe.v.' + c['verdict'], lang))} "
                    f"({html.escape(t('probe.effect.' + c.get('effect', 'ran'), lang))})"
                    + (f"; {t('probe.field', lang)} <code>{html.escape(c['field'])}</code>" if c.get("field") else "")
                    + (f"<br><small>{t('probe.told', lang)}: {html.escape((c.get('told') or '')[:200])}</small>"
                       if c.get("told") else "")
                    + (f"<br><small>{t('probe.tool_error', lang)}: {html.escape(c['tool_error'][:200])}</small>"
                       if c.get("tool_error") else "")
                    + (f"<div class='beside'>{t('probe.linter_says', lang)}{_findings_html(near)}</div>" if near
                       else f"<div class='beside quiet'>{t('probe.linter_silent', lang)}</div>") + "</li>")
    if not rows:
        return f"<p>{t('probe.no_failures', lang)}</p>"
    return f"<ol class='failures'>{''.join(rows)}</ol>"


def _worst_html(report: Mapping[str, Any], lang: Lang) -> str:
    s = report["summary"]
    if not s["worst_tools"]:
        return f"<p>{t('probe.no_failures', lang)}</p>"
    tools = "".join(f"<li><b>{html.escape(w['tool'])}</b>: {w['failing']} {t('probe.failing_cells', lang)}"
                    f"{_findings_html(w['lint'])}</li>" for w in s["worst_tools"])
    fields = "".join(f"<li><b>{html.escape(w['field'])}</b>: {w['failing']} {t('probe.failing_cells', lang)}"
                     f"{_findings_html(w['lint'])}</li>" for w in s["worst_fields"])
    return (f"<h3>{t('probe.worst_tools', lang)}</h3><ol>{tools}</ol>"
            + (f"<h3>{t('probe.worst_fields', lang)}</h3><ol>{fields}</ol>" if fields else ""))


def _not_run(info: Mapping[str, Any], lang: Lang) -> dict[str, str]:
    """Why each category the probe did not run on this tool was not run (a bound it met), by category."""
    out: dict[str, str] = {}
    for p in info.get("partial", []):
        out.update(dict.fromkeys(p.get("categories", []), p.get(lang) or p["en"]))
    if info.get("unprobed"):
        return defaultdict(lambda: info["unprobed"].get(lang) or info["unprobed"]["en"])
    return out


def _bounded(x: Mapping[str, Any]) -> bool:
    return bool(x.get("unprobed")) and x["unprobed"].get("why") in BOUNDED


def _partial_html(report: Mapping[str, Any], lang: Lang) -> str:
    """The tools the probe's bounds (time, size) cut short or left out, or that it could not handle, each with why."""
    rows = []
    for x in report["tools"]:
        reasons = ([x["unprobed"]] if _bounded(x) else []) + list(x.get("partial", []))
        for p in reasons:
            left = (f" <small>({html.escape(t('probe.categories_left', lang, categories=', '.join(p['categories'])))})"
                    f"</small>") if p.get("categories") else ""
            rows.append(f"<li><b>{html.escape(x['name'])}</b>: {html.escape(p.get(lang) or p['en'])}{left}</li>")
    if not rows:
        return ""
    return (f"<h2 id='partial'>{t('probe.h_partial', lang)}</h2>"
            f"<p>{t('probe.partial_intro', lang)}</p><ul class='partial'>{''.join(rows)}</ul>")


def _unprobed_html(report: Mapping[str, Any], lang: Lang) -> str:
    """The tools no valid call could be made for, each with why: none of their cells says anything."""
    items = [x for x in report["tools"] if x.get("unprobed") and not _bounded(x)]
    if not items:
        return ""
    rows = "".join(f"<li><b>{html.escape(x['name'])}</b>: {html.escape(x['unprobed'].get(lang) or x['unprobed']['en'])}</li>"
                   for x in items)
    return (f"<h2 id='unprobed'>{t('probe.h_unprobed', lang)} ({len(items)}/{len(report['tools'])})</h2>"
            f"<p>{t('probe.unprobed_intro', lang)}</p><ul class='unprobed'>{rows}</ul>")


def _legend(lang: Lang) -> str:
    return " ".join(f"<span class='chip' style='background:{VERDICT_COLORS[v]}'></span>{html.escape(t('probe.v.' + v, lang))}"
                    for v in _ORDER)


_CSS = """body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#202124;max-width:1400px}
table.probe{border-collapse:collapse;font-size:12px}table.probe th,table.probe td{border:1px solid #fff;padding:3px 6px}
table.probe thead th{background:#e8eaed;writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;max-height:140px}
table.probe th.tool{text-align:left;background:#f8f9fa;white-space:nowrap}table.probe td{white-space:nowrap}
small{color:#5f6368}.lint{background:#fef7e0;border-radius:3px;padding:0 4px;font-size:11px}
.chip{display:inline-block;width:12px;height:12px;margin:0 3px 0 10px;vertical-align:middle;border:1px solid #ccc}
.findings{margin:4px 0}.fix{color:#1a73e8}.beside{background:#fef7e0;padding:4px 8px;margin:4px 0;border-left:3px solid #f9ab00}
.beside.quiet{background:#f1f3f4;border-color:#9aa0a6}.plots svg{max-width:100%;height:auto}
.numbers td{padding:2px 10px}.numbers td:first-child{color:#5f6368}"""


def render_html(report: Mapping[str, Any], lang: Lang = "en") -> str:
    """The whole report as one self-contained HTML page in ``lang``."""
    s, st, meta = report["summary"], report["settings"], report.get("meta", {})
    rate = s.get("self_correction_rate")
    numbers = [(t("probe.n_tools", lang), len(report["tools"])), (t("probe.n_cells", lang), s["applicable"]),
               (t("probe.n_na", lang), s["na"]),
               (t("probe.n_not_caught", lang), s["verdicts"].get("not_caught", 0)),
               (t("probe.n_not_repaired", lang), s["verdicts"].get("not_repaired", 0)),
               (t("probe.n_tool_failed", lang), s["verdicts"].get("tool_failed", 0)),
               (t("probe.n_unprobed", lang), len(s.get("unprobed", [x for x in report["tools"] if x.get("unprobed")]))),
               (t("probe.self_correction_rate", lang), "n/a" if rate is None else f"{rate:.0%}"
                + (t("probe.scripted_ceiling", lang) if report.get("meta", {}).get("scripted") else "")),
               (t("probe.model", lang), meta.get("model", "")), (t("probe.trials", lang), st["trials"]),
               (t("probe.guards", lang), st["guards"]), (t("probe.lint_findings", lang), len(report.get("lint", [])))]
    table = "".join(f"<tr><td>{html.escape(str(k))}</td><td><b>{html.escape(str(v))}</b></td></tr>" for k, v in numbers)
    plots = (f"<figure>{_svg(plot_probe_matrix, report, lang)}<figcaption>{t('probe.plot_matrix', lang)}</figcaption></figure>"
             f"<figure>{_svg(plot_probe_categories, report, lang)}<figcaption>{t('probe.plot_categories', lang)}</figcaption></figure>")
    return f"""<!DOCTYPE html>
<html lang="{'zh-CN' if lang == 'zh' else 'en'}"><head><meta charset="utf-8">
<title>{html.escape(t('probe.title', lang, source=st.get('source') or 'tools'))}</title><style>{_CSS}</style></head><body>
<h1>{html.escape(t('probe.title', lang, source=st.get('source') or 'tools'))}</h1>
<p>{t('probe.intro', lang)}</p>
<table class="numbers">{table}</table>
{_unprobed_html(report, lang)}
{_partial_html(report, lang)}
<h2 id="table">{t('probe.h_table', lang)}</h2>
<p>{t('probe.how_to_read', lang)}</p><p>{_legend(lang)}</p>
{table_html(report, lang)}
<h2 id="plots">{t('probe.h_plots', lang)}</h2><div class="plots">{plots}</div>
<h2 id="failures">{t('probe.h_failures', lang)}</h2>{_failures_html(report, lang)}
<h2 id="worst">{t('probe.h_worst', lang)}</h2>{_worst_html(report, lang)}
<h2 id="lint">{t('probe.h_lint', lang)}</h2>{_findings_html(report.get('lint', [])) or '<p>-</p>'}
<p><small>report.json v{report['version']} · agentlab {html.escape(str(meta.get('agentlab', '')))}</small></p>
</body></html>
"""
