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

import io
import json
import os
import tempfile
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..a11y import NEUTRALS, OKABE_ITO, TextEquivalent, attach, described, ink, symbol
from ..guards import said_guards
from ..i18n import Lang, aside, colon, joined, label, said_marks, t, t_or
from ..resources import CJK_FILES, CJK_FONTS, render_page
from .probe import BOUNDED, FAKE_MODEL, REPLAY_SUFFIX

__all__ = ["VERDICT_COLORS", "after_an_error", "cell_text", "plot_probe_categories", "plot_probe_matrix", "render_html", "table_html", "write"]

# greens: caught and fine; amber: stopped but not repaired, or the model made no call; purple: the call was
# valid and the tool failed on it; red: nothing caught it
# Okabe-Ito (agentlab.a11y): green and blues caught and fine; yellow and orange stopped but not repaired, or the
# model made no call; purple: the call was valid and the tool failed on it; vermillion: nothing caught it. Every
# cell carries its ✓/⚠/✗ too, so no verdict is told by colour alone.
VERDICT_COLORS = {"ok": OKABE_ITO["bluish_green"], "repaired": OKABE_ITO["sky_blue"], "caught": OKABE_ITO["blue"],
                  "harmless": NEUTRALS["grey"], "not_injected": NEUTRALS["light_grey"], "no_call": OKABE_ITO["yellow"],
                  "not_repaired": OKABE_ITO["orange"], "tool_failed": OKABE_ITO["reddish_purple"],
                  "not_caught": OKABE_ITO["vermillion"], "n/a": NEUTRALS["white"]}
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


def _category_names(cats: list[str], lang: Lang) -> list[str]:
    """Each category as the table above the plots names it (its short name in ``lang``; an unknown one by its id)."""
    return [t_or(f"probe.short.{c}", c, lang) for c in cats]


@described
def plot_probe_matrix(report: Mapping[str, Any], *, ax: Any = None, lang: Lang = "en") -> Any:
    """Tools down, categories across, each cell coloured by its verdict (``ax=None`` makes a figure). A tool is named
    as the file names it; a category as the table names it, in ``lang``."""
    from matplotlib.colors import ListedColormap
    tools, cats, cells = _grid(report)
    if ax is None:
        from matplotlib.figure import Figure
        ax = Figure(figsize=(max(6, 0.55 * len(cats) + 3), max(2.5, 0.32 * len(tools) + 1.6))).subplots()
    codes = [[_ORDER.index(cells[(tl, c)]["verdict"]) if (tl, c) in cells else _ORDER.index("n/a") for c in cats]
             for tl in tools]
    ax.imshow(codes, cmap=ListedColormap([VERDICT_COLORS[v] for v in _ORDER]), vmin=0, vmax=len(_ORDER) - 1,
              aspect="auto", interpolation="nearest")
    names = _category_names(cats, lang)
    ax.set_xticks(range(len(cats)), names, rotation=45, ha="right", fontsize=8, parse_math=False)
    ax.set_yticks(range(len(tools)), tools, fontsize=8, parse_math=False)  # a name from the file, never mathtext
    ax.set_xticks([x - 0.5 for x in range(1, len(cats))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(tools))], minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    for y, tl in enumerate(tools):
        for x, c in enumerate(cats):
            cell = cells.get((tl, c))
            if cell and cell["applies"] and symbol(cell["verdict"]):
                ax.text(x, y, symbol(cell["verdict"]), ha="center", va="center", color=ink(VERDICT_COLORS[cell["verdict"]]),
                        fontsize=8, fontweight="bold")
    ax.set_title(t("probe.plot_matrix_title", lang), fontsize=9)

    def said(tl: str, c: str) -> str:
        v = cells.get((tl, c), {}).get("verdict", "n/a")
        return f"{symbol(v)} {t('probe.v.' + v, lang)}".strip()
    return attach(ax, TextEquivalent(lang, f"{t('probe.plot_matrix_title', lang)} — {t('a11y.probe_matrix', lang)}",
                                     ("", *names), [(tl, *[said(tl, c) for c in cats]) for tl in tools],
                                     (t("a11y.symbols", lang),)))


@described
def plot_probe_categories(report: Mapping[str, Any], *, ax: Any = None, lang: Lang = "en") -> Any:
    """Per category, how many tools got each verdict (stacked bars)."""
    tools, cats, cells = _grid(report)
    if ax is None:
        from matplotlib.figure import Figure
        ax = Figure(figsize=(max(6, 0.55 * len(cats) + 2), 3.2)).subplots()
    bottom = [0] * len(cats)
    table: dict[str, list[int]] = {}
    hatches = ["", "..", "//", "\\\\", "oo", "--", "++", "**", "xx", ""]
    for verdict in _ORDER:
        counts = [sum(1 for tl in tools if cells.get((tl, c), {}).get("verdict", "n/a") == verdict) for c in cats]
        if any(counts):
            table[verdict] = counts
            ax.bar(range(len(cats)), counts, bottom=bottom, color=VERDICT_COLORS[verdict],
                   label=f"{symbol(verdict)} {t('probe.v.' + verdict, lang)}".strip(),
                   hatch=hatches[_ORDER.index(verdict)], edgecolor="white", linewidth=0.5)
            bottom = [b + n for b, n in zip(bottom, counts, strict=True)]
    names = _category_names(cats, lang)
    ax.set_xticks(range(len(cats)), names, rotation=45, ha="right", fontsize=8, parse_math=False)
    ax.set_ylabel(t("probe.axis_tools", lang))
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of tools: no "2.5 tools"
    # beside the axes: below them it met the rotated category names, inside it would cover a bar
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
    return attach(ax, TextEquivalent(lang, t("a11y.probe_categories", lang).capitalize(),
                                     ("", *[f"{symbol(v)} {t('probe.v.' + v, lang)}".strip() for v in table]),
                                     [(c, *[str(table[v][i]) for v in table]) for i, c in enumerate(names)],
                                     (t("a11y.symbols", lang),)))


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
        return t("probe.na", lang)  # the legend's word for it, in the reader's language
    guard = cell.get("guard") or "none"
    head = t("probe.v." + v, lang) if v in ("not_caught", "no_call", "not_injected", "ok", "harmless", "tool_failed") \
        else (label(guard, lang) if guard != "none" else t("probe.v." + v, lang))
    rate = cell.get("self_correction_rate")
    extra = ""
    if rate is not None:
        extra = f" · {t('probe.fixed', lang)} {rate:.0%}"
        if cell.get("repair_turns") is not None:
            extra += " · " + t("probe.turns", lang, n=cell["repair_turns"])
    return head + extra


def _guard_said(guard: str | None, lang: Lang) -> str:
    # as the cell names it (校验, not validate); a fault nothing caught says so, never "None"
    return label(guard, lang) if guard and guard != "none" else t("probe.v.not_caught", lang)


def _tip(cell: Mapping[str, Any], lang: Lang) -> str:
    if not cell["applies"]:
        return t(cell["na_reason"], lang) + (f"{colon(lang)}{cell['why']}" if cell.get("why") else "")
    parts = [f"{t('probe.verdict', lang)}{colon(lang)}{t('probe.v.' + cell['verdict'], lang)}",
             f"{t('probe.guard', lang)}{colon(lang)}{_guard_said(cell.get('guard'), lang)}"]
    if cell.get("field"):
        parts.append(f"{t('probe.field', lang)}{colon(lang)}{cell['field']}")
    if cell.get("first_call"):
        parts.append(f"{t('probe.first_call', lang)}{colon(lang)}{cell['first_call'][:160]}")
    if cell.get("told"):
        parts.append(f"{t('probe.told', lang)}{colon(lang)}{cell['told'][:240]}")
    if cell.get("tool_error"):
        parts.append(f"{t('probe.tool_error', lang)}{colon(lang)}{cell['tool_error'][:240]}")
    parts.append(f"{t('probe.statuses', lang)}{colon(lang)}"
                 + joined((f"{k} {n}" for k, n in cell.get("statuses", {}).items()), lang, "list"))
    return "\n".join(parts)


def _table(report: Mapping[str, Any], lang: Lang) -> dict[str, Any]:
    """What the tool × category table shows, as plain values (the template escapes them)."""
    tools, cats, cells = _grid(report)
    about = {x["name"]: x for x in report["tools"]}
    rows = []
    for tl in tools:
        info = about[tl]
        not_run = _not_run(info, lang)
        row_cells = []
        for c in cats:
            cell = cells.get((tl, c)) or {"verdict": "n/a", "applies": False, "na_reason": "probe.not_run",
                                          "why": not_run.get(c)}
            v = cell["verdict"]
            row_cells.append({"verdict": v.replace("/", ""), "background": VERDICT_COLORS[v], "tip": _tip(cell, lang),
                              "color": ink(VERDICT_COLORS[v]),
                              "text": cell_text(cell, lang)})
        kind = t("probe.kind." + info["kind"], lang)
        rows.append({"tool": tl, "kind": kind, "lint": len(info.get("lint", [])),
                     # a kind guessed from the tool's name says so, on hover, and how to say it for sure
                     "kind_title": t("probe.kind.guessed", lang, kind=kind) if info.get("kind_from") == "name" else "",
                     "lint_titles": _lint_titles(info.get("lint", []), lang), "cells": row_cells})
    # each column named in the page's language (its id, camel_case, in the tip: the one --faults takes)
    return {"categories": [{"name": c, "short": short, "title": _category_text(report, c, lang)}
                           for c, short in zip(cats, _category_names(cats, lang), strict=True)], "rows": rows}


def _say(lang: Lang) -> Callable[..., str]:
    """The catalogue in ``lang``, as a template asks it: ``t("key", field=value)``."""
    return lambda key, **fields: t(key, lang, **fields)


def table_html(report: Mapping[str, Any], lang: Lang = "en") -> str:
    """The tool × category table, every cell coloured by its verdict, details on hover."""
    return said_marks(render_page("probe_table.html", _say(lang), **_table(report, lang)), lang)


def _category_text(report: Mapping[str, Any], name: str, lang: Lang) -> str:
    for c in report["categories"]:
        if c["name"] == name:
            return c[lang] + (aside(f"{t('probe.meant_for', lang)}{colon(lang)}{c['meant_for']}", lang)
                              if c.get("meant_for") else "")
    return name


def _lint_titles(findings: list[dict], lang: Lang) -> str:
    return "\n".join(f"{f['rule']} {f['location']}{colon(lang)}{f['message']}" for f in findings)


def _failures(report: Mapping[str, Any], lang: Lang) -> list[dict[str, Any]]:
    """Each failing cell, with what the linter says about its field and its tool right beside it."""
    lint_all = report.get("lint", [])
    rows = []
    for c in report["cells"]:
        if c["verdict"] not in _FAILING:
            continue
        where = f"{c['tool']}.{c['field']}" if c.get("field") else c["tool"]
        rows.append({"tool": c["tool"], "category": c["category"], "verdict": t("probe.v." + c["verdict"], lang),
                     "effect": t("probe.effect." + c.get("effect", "ran"), lang), "field": c.get("field"),
                     "told": (c.get("told") or "")[:200], "tool_error": (c.get("tool_error") or "")[:200],
                     "near": [f for f in lint_all if f["location"] in (where, c["tool"])]})
    return rows


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


def _partial(report: Mapping[str, Any], lang: Lang) -> list[tuple[str, str, str]]:
    """The tools the probe's bounds (time, size) cut short or left out, or that it could not handle, each with why
    (and the categories left, if any)."""
    return [(x["name"], p.get(lang) or p["en"], joined(p.get("categories") or (), lang, "list"))
            for x in report["tools"] for p in ([x["unprobed"]] if _bounded(x) else []) + list(x.get("partial", []))]


def _unprobed(report: Mapping[str, Any], lang: Lang) -> list[tuple[str, str]]:
    """The tools no valid call could be made for, each with why: none of their cells says anything."""
    return [(x["name"], x["unprobed"].get(lang) or x["unprobed"]["en"])
            for x in report["tools"] if x.get("unprobed") and not _bounded(x)]


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
               (t("probe.model", lang), model_shown(str(meta.get("model", "")), lang)), (t("probe.trials", lang), st["trials"]),
               (t("probe.guards", lang), said_guards(st["guards"], lang)), (t("probe.lint_findings", lang), len(report.get("lint", [])))]
    from markupsafe import Markup  # the plots' SVG: drawn, and its text escaped, by matplotlib
    # matplotlib comes with the workbook, not the core: without it the report is whole but for its plots, and says so
    try:
        import matplotlib  # noqa: F401
        drawn = True
    except ImportError:
        drawn = False
    plots = [(Markup(_svg(plot_probe_matrix, report, lang)), t("probe.plot_matrix", lang)),
             (Markup(_svg(plot_probe_categories, report, lang)), t("probe.plot_categories", lang))] if drawn else []
    return said_marks(render_page("probe_report.html", _say(lang), lang=lang, numbers=numbers, tools=len(report["tools"]),
                  title=t("probe.title", lang, source=st.get("source") or "tools"), unprobed=_unprobed(report, lang),
                  partial=_partial(report, lang), legend=[(VERDICT_COLORS[v], t("probe.v." + v, lang)) for v in _ORDER],
                  plots=plots, no_plots="" if drawn else t("probe.no_plots", lang), failures=_failures(report, lang), worst_tools=s["worst_tools"],
                  worst_fields=s["worst_fields"], lint=report.get("lint", []), version=report["version"],
                  agentlab=meta.get("agentlab", ""), **_table(report, lang)), lang)


def model_shown(name: str, lang: Lang) -> str:
    """The model's name as the report's reader reads it: the scripted model and a replay said in their language (the
    report's JSON keeps the name as recorded)."""
    if name == FAKE_MODEL:
        return t("probe.model_fake", lang)
    if name.endswith(REPLAY_SUFFIX):
        return t("probe.model_replay", lang, name=name[:-len(REPLAY_SUFFIX)])
    return name
