"""Plots as pure functions: data in, a matplotlib ``ax`` out (``ax=None`` makes one); and
:func:`table_view`, the way the notebooks show a table.

matplotlib is imported inside each function, so importing agentlab stays light. Two rules hold for
every plot here: an axis that counts (runs, refunds, calls, turns) has whole-number ticks only, and a
legend sits beside the axes, never on the bars or lines it explains.

And three for whoever reads them (docs: agentlab/a11y.py): every colour is Okabe-Ito's colour-blind-safe palette;
a status or outcome is never told by colour alone (a ✓/⚠/✗ and a hatch go with it); and every plot function gives
its axes a text equivalent, a sentence and a table of the numbers drawn, made from the same data in the reader's
language, which a notebook displays beside the figure (:func:`agentlab.a11y.text_equivalent` reads it back).
"""
from __future__ import annotations

import functools
import json
import math
import numbers
import random
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..a11y import NEUTRALS, OKABE_ITO, PALETTE, TextEquivalent, attach, described, fmt_number, ink, symbol, text_equivalent
from ..i18n import Lang, aside, colon, joined, keys, label, t
from ..resources import CJK_FILES, CJK_FONTS, CJK_INSTALL
from ..retry import RetryPolicy, herd

if TYPE_CHECKING:
    from ..evals.monitor import LiveCurves
    from ..evals.review import RunComparison

__all__ = ["BEFORE_AFTER_COLORS", "CJK_FILES", "CJK_FONTS", "LOOP_COLORS", "OUTCOME_COLORS", "OUTCOME_HATCHES",
           "PALETTE", "STATUS_COLORS", "STATUS_HATCHES", "TREND_COLORS", "TextEquivalent", "cjk_fonts", "compare_plot",
           "herd_results", "herd_text", "plot_bars", "plot_comparison", "plot_hbars", "plot_herd", "plot_lines",
           "plot_live",
           "plot_matrix", "plot_outcomes", "plot_pass_k", "plot_retry_schedule", "plot_shares", "plot_statuses",
           "plot_trend", "plot_turns_by_outcome", "table_view", "text_equivalent", "use_fonts"]

_O = OKABE_ITO
STATUS_COLORS = {"done": _O["bluish_green"], "done_after_self_correction": _O["sky_blue"], "escalated": _O["yellow"],
                 "budget_exhausted": _O["orange"], "failed": _O["vermillion"]}
# one colour per outcome of agentlab.evals.outcome (green and blue succeed, yellow and orange stopped safely,
# vermillion, purple and black did damage), each with its own hatch and its ✓/⚠/✗ in the legend
OUTCOME_COLORS = {"correct": _O["bluish_green"], "correct hand-over": _O["sky_blue"], "escalated": _O["yellow"],
                  "budget exhausted": _O["orange"], "done, nothing done": _O["vermillion"],
                  "done, wrong data": _O["reddish_purple"], "wrong data, stopped": _O["blue"], "leaked": _O["black"],
                  "crashed": NEUTRALS["grey"]}
OUTCOME_HATCHES = {"correct": "", "correct hand-over": "..", "escalated": "//", "budget exhausted": "\\\\",
                   "done, nothing done": "xx", "done, wrong data": "++", "wrong data, stopped": "--", "leaked": "oo",
                   "crashed": "**"}
STATUS_HATCHES = {"done": "", "done_after_self_correction": "..", "escalated": "//", "budget_exhausted": "\\\\",
                  "failed": "xx"}
LOOP_COLORS = {"naive": _O["vermillion"], "guarded": _O["bluish_green"]}
BEFORE_AFTER_COLORS = {"before": NEUTRALS["grey"], "after": _O["blue"]}
# the three curves of the weekly review's trend, each a key of agentlab.evals.metrics_row, each its own marker
TREND_COLORS = {"task_success_rate": _O["bluish_green"], "invalid_call_rate": _O["vermillion"],
                "takeover_rate": _O["orange"]}
TREND_MARKERS = {"task_success_rate": "o", "invalid_call_rate": "s", "takeover_rate": "^"}
# a series is told by its hatch or marker as well as its colour
_HATCHES = ["", "//", "..", "xx", "\\\\", "++", "--", "oo"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
_LINESTYLES = ["-", "--", ":", "-."]


def _color(name: str, i: int, colors: Mapping[str, str] = LOOP_COLORS) -> str:
    return colors.get(name) or PALETTE[i % len(PALETTE)]


def _said(title: str, key: str, lang: Lang, **fields: Any) -> str:
    """A text equivalent's sentence: the figure's title, then what kind of figure it is."""
    kind = t(key, lang, **fields)
    return f"{label(title, lang)} — {kind}" if title else kind[:1].upper() + kind[1:]


def _pct(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0%}"


_families: list[str] | None = None


def _font_families() -> list[str]:
    """DejaVu Sans for Latin text, then every Chinese font found (:data:`agentlab.resources.CJK_FONTS`, the one
    the install brings first). With none, the notice ``plot.no_cjk_font`` is given once per process, in both
    languages, with the command that installs the font: empty boxes with no word of why help nobody."""
    global _families
    if _families is None:
        import logging
        import warnings
        from pathlib import Path

        from matplotlib import font_manager
        logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)  # "weight 500 instead of normal"
        for path in CJK_FILES:
            if Path(path).exists():
                font_manager.fontManager.addfont(path)
        installed = {f.name for f in font_manager.fontManager.ttflist}
        # a list of families is what makes matplotlib fall back glyph by glyph
        _families = ["DejaVu Sans", *[f for f in CJK_FONTS if f in installed]]
        if len(_families) == 1:
            warnings.warn(" / ".join(t("plot.no_cjk_font", lang, command=CJK_INSTALL) for lang in ("en", "zh")),
                          UserWarning, stacklevel=4)
    return _families


def use_fonts() -> list[str]:
    """Chinese labels render in every figure of this process, however it was made: the Chinese fonts are added after
    the families ``rcParams["font.family"]`` names (the user's own first), once. Run when this module is imported,
    because a text keeps the families that were current when it was created: a notebook cell that makes its axes
    with ``plt.subplots`` before calling a plot function here got tick labels that could not draw Chinese.
    Returns the families now in force."""
    import matplotlib
    families = _font_families()
    current = matplotlib.rcParams["font.family"]
    current = [current] if isinstance(current, str) else list(current)
    added = [f for f in families[1:] if f not in current]
    if added:
        matplotlib.rcParams["font.family"] = [*current, *added]
    from cycler import cycler
    matplotlib.rcParams["axes.prop_cycle"] = cycler(color=PALETTE)  # Okabe-Ito, not tab10, for every series
    return list(matplotlib.rcParams["font.family"])


def cjk_fonts() -> Any:
    """A style context in which Chinese labels render; the user's own ``rcParams`` stay as they were.

    Text keeps the font it was created with, so a figure drawn inside renders the same later.
    """
    import matplotlib
    return matplotlib.rc_context({"font.family": _font_families()})


def _with_fonts(fn: Any) -> Any:
    """A plot function: drawn with the Chinese fonts, its text equivalent shown beside it in a notebook."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with cjk_fonts():
            return fn(*args, **kwargs)
    return described(wrapper)


def _count_axis(ax: Any, axis: str = "y") -> None:
    """Whole-number ticks: half a run or 2.5 refunds cannot happen, so the axis must not suggest it."""
    from matplotlib.ticker import MaxNLocator
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(MaxNLocator(integer=True))


def _legend_beside(ax: Any, **kwargs: Any) -> Any:
    """The legend to the right of the axes, outside them: it can hide no bar, line or label."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, **{"fontsize": 8, **kwargs})


def _ax(ax: Any, size: tuple[float, float] = (7, 3.2)) -> Any:
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=size)
    return ax


@_with_fonts
def plot_bars(values: Mapping[str, Mapping[str, float]], *, ax: Any = None, title: str = "", ylabel: str = "",
              lang: Lang = "en", own_names: bool = False, xlabel: str = "") -> Any:
    """Grouped bars: ``{group: {series: value}}`` (e.g. ``{fault: {"naive": 12, "guarded": 4}}``); every label said
    in ``lang`` (:func:`agentlab.i18n.label`). Each series has its colour and its hatch. ``own_names``: the series
    are a team's own words (its categories), shown as typed, as the table beside the chart shows them (a category
    typed "idempotency" read 幂等 in the chart alone)."""
    ax = _ax(ax)
    name = (lambda s: s) if own_names else (lambda s: label(s, lang))
    groups = list(values)
    series = sorted({s for g in values.values() for s in g}, key=lambda s: (s != "naive", s))
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        xs = [j + i * width for j in range(len(groups))]
        # a series a group does not have (a router's hit rate beside the all-tools run) is no bar, never a bar of 0
        ax.bar(xs, [values[g].get(s, math.nan) for g in groups], width, label=name(s), color=_color(s, i),
               hatch=_HATCHES[i % len(_HATCHES)], edgecolor="white")
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(groups))])
    ax.set_xticklabels([label(g, lang) for g in groups], rotation=30, ha="right", fontsize=8)
    ax.set_title(label(title, lang))
    ax.set_ylabel(label(ylabel, lang))
    if xlabel:  # what the groups are, where their names alone do not say it (2026-W10 is a week)
        ax.set_xlabel(label(xlabel, lang))
    if all(isinstance(v, numbers.Integral) for g in values.values() for v in g.values()):
        _count_axis(ax)  # counts (refunds, findings, calls); rates keep their fractional ticks
    _legend_beside(ax)
    return attach(ax, TextEquivalent(
        lang, _said(title or ylabel, "a11y.bars", lang), (label(xlabel, lang), *[name(s) for s in series]),
        [(label(g, lang), *[fmt_number(values[g][s]) if s in values[g] else "—" for s in series]) for g in groups]))


@_with_fonts
def plot_outcomes(counts: Mapping[str, Mapping[str, int]], *, ax: Any = None, title: str = "outcomes",
                  lang: Lang = "en") -> Any:
    """Stacked bars of graded outcomes, ``{label: {outcome: count}}``, every outcome in its own colour and hatch."""
    ax = _stacked(_ax(ax), counts, OUTCOME_COLORS, OUTCOME_HATCHES, lambda o: t("outcome." + o, lang), title, lang)
    ax.set_ylabel(label("runs", lang))
    return ax


def _width(text: str) -> int:
    """How wide ``text`` is drawn, in Latin letters: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _wrapped(text: str, width: int = 12) -> str:
    """``text`` in lines of about ``width`` Latin letters (a Chinese character counts two): after a colon first
    ("17 个用例：qwen2.5-coder-0.5b"), then between words, after a hyphen, or between two Chinese characters."""
    lines: list[str] = []
    for part in re.split(r"(?<=[:：])\s*", text):
        line = ""
        for piece in re.findall(r"[\w.]+-?\s*|\S\s*", part, re.ASCII):
            if line and _width(line + piece.rstrip()) > width:
                lines.append(line.rstrip())
                line = ""
            line += piece
        if line.strip():
            lines.append(line.rstrip())
    return "\n".join(lines)


def _stacked(ax: Any, counts: Mapping[str, Mapping[str, int]], colors: Mapping[str, str], hatches: Mapping[str, str],
             name: Any, title: str, lang: Lang) -> Any:
    """Stacked bars, one per key of ``counts``, a segment per key of ``colors`` that occurs: its colour, its hatch,
    and its ✓/⚠/✗ before its name in the legend."""
    bars = list(counts)
    bottom = [0.0] * len(bars)
    shown = []
    for key, color in colors.items():
        vals = [counts[lb].get(key, 0) for lb in bars]
        if any(vals):
            shown.append(key)
            ax.bar([label(b, lang) for b in bars], vals, bottom=bottom, color=color, hatch=hatches.get(key, ""),
                   edgecolor="white", label=f"{symbol(key)} {name(key)}".strip())
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_title(label(title, lang))
    _count_axis(ax)
    _legend_beside(ax, fontsize=7)
    names = [label(b, lang) for b in bars]
    if sum(map(_width, names)) > 36:  # long names side by side overlapped (notebook 09's four groups): lines of their own
        ax.set_xticks(range(len(bars)), [_wrapped(n) for n in names], fontsize=7)
    return attach(ax, TextEquivalent(
        lang, _said(title, "a11y.stacked", lang),
        ("", *[f"{symbol(k)} {name(k)}".strip() for k in shown], t("a11y.col.total", lang)),
        [(label(b, lang), *[fmt_number(counts[b].get(k, 0)) for k in shown], fmt_number(sum(counts[b].values())))
         for b in bars], (t("a11y.symbols", lang),)))


@_with_fonts
def plot_turns_by_outcome(runs: Mapping[str, Mapping[str, tuple[int, str]]], *, ax: Any = None, title: str = "",
                          lang: Lang = "en") -> Any:
    """Grouped bars ``{group: {loop: (turns, outcome)}}``: height is turns, colour is the graded outcome,
    so a short bar that failed cannot pass for a quick success. The naive loop's bars are hatched, and each bar
    carries its outcome's ✓/⚠/✗ on top."""
    from matplotlib.patches import Patch
    ax = _ax(ax, (9, 3.4))
    groups = list(runs)
    loops = sorted({loop for g in runs.values() for loop in g}, key=lambda s: (s != "naive", s))
    width = 0.8 / max(len(loops), 1)
    seen: dict[str, str] = {}
    for j, loop in enumerate(loops):
        for i, g in enumerate(groups):
            if loop not in runs[g]:
                continue
            turns, outcome = runs[g][loop]
            x = i + (j - (len(loops) - 1) / 2) * width
            ax.bar(x, turns, width, color=OUTCOME_COLORS.get(outcome, NEUTRALS["grey"]),
                   hatch="//" if loop == "naive" else None, edgecolor="white")
            ax.text(x, turns, symbol(outcome), ha="center", va="bottom", fontsize=9)
            seen[outcome] = OUTCOME_COLORS.get(outcome, NEUTRALS["grey"])
    ax.set_xticks(range(len(groups)), [label(g, lang) for g in groups], fontsize=8)
    handles = [Patch(color=c, label=f"{symbol(o)} {t('outcome.' + o, lang)}".strip())
               for o, c in OUTCOME_COLORS.items() if o in seen]
    handles += [Patch(facecolor="#bbbbbb", hatch="//", edgecolor="white", label=t("loop.naive", lang)),
                Patch(facecolor="#bbbbbb", label=t("loop.guarded", lang))]
    _legend_beside(ax, handles=handles, fontsize=7)
    _count_axis(ax)
    ax.margins(y=0.12)  # room for the symbols on the tallest bar
    ax.set_ylabel(label("model turns", lang))
    ax.set_title(label(title, lang))

    def cell(g: str, loop: str) -> str:
        if loop not in runs[g]:
            return "-"
        turns, outcome = runs[g][loop]
        said_ = t("outcome." + outcome, lang) if f"outcome.{outcome}" in keys() else label(outcome, lang)
        return f"{turns}{aside(f'{symbol(outcome)} {said_}'.strip(), lang)}"
    return attach(ax, TextEquivalent(lang, _said(title, "a11y.turns", lang), ("", *[t("loop." + lp, lang)
                                     if f"loop.{lp}" in keys() else label(lp, lang) for lp in loops]),
                                     [(label(g, lang), *[cell(g, lp) for lp in loops]) for g in groups],
                                     (t("a11y.symbols", lang),)))


@_with_fonts
def plot_statuses(counts: Mapping[str, Mapping[str, int]], *, ax: Any = None, title: str = "final statuses",
                  lang: Lang = "en") -> Any:
    """Stacked bars of final statuses: ``{label: {status: count}}``."""
    ax = _stacked(_ax(ax), counts, STATUS_COLORS, STATUS_HATCHES,
                  lambda s: t("status." + s, lang) if lang != "en" else s, title, lang)
    ax.tick_params(axis="x", labelsize=8)
    return ax


@_with_fonts
def plot_retry_schedule(policy: RetryPolicy, *, ax: Any = None, clients: int = 30, seed: int = 0,
                        lang: Lang = "en") -> Any:
    """When each of ``clients`` failing callers resends: dots per attempt (a colour and a marker each), with and
    without jitter."""
    ax = _ax(ax)
    rng = random.Random(seed)
    times: list[list[float]] = []
    for _ in range(clients):
        at, row = 0.0, []
        for attempt in range(policy.max_retries):
            at += policy.delay(attempt, rng)
            row.append(at)
        times.append(row)
    for c, row in enumerate(times):
        for attempt, at in enumerate(row):
            ax.scatter(at, c, s=12, color=PALETTE[attempt % len(PALETTE)], marker=_MARKERS[attempt % len(_MARKERS)])
    ax.set_xlabel(label("seconds after the first failure", lang))
    ax.set_ylabel(label("client", lang))
    ax.set_title(f"{label('resend times', lang)}, jitter={policy.jitter}")
    rows = [(t("a11y.col.resend", lang, n=a + 1),
             t("a11y.cell.seconds", lang, low=f"{min(r[a] for r in times):.2f}", high=f"{max(r[a] for r in times):.2f}"))
            for a in range(policy.max_retries)] if times else []
    return attach(ax, TextEquivalent(lang, _said("", "a11y.schedule", lang, clients=clients, jitter=policy.jitter),
                                     ("", label("seconds after the first failure", lang)), rows))


@_with_fonts
def plot_herd(policies: Mapping[str, RetryPolicy | Mapping[str, Any]], *, ax: Any = None, clients: int = 300,
              capacity: int = 40, lang: Lang = "en") -> Any:
    """Requests arriving per time slot when ``clients`` fail at once and retry under each policy.

    Each value is a policy (simulated here by :func:`~agentlab.retry.herd`, over its whole resend schedule)
    or a result of ``herd`` already run, so the sentence beside the plot (:func:`herd_text`) reads the same data.
    """
    ax = _ax(ax)
    results = herd_results(policies, clients=clients, capacity=capacity)
    for i, (name, r) in enumerate(results.items()):
        ys = [*r["arrivals"], *r["arrivals"][-1:]]  # the last slot drawn to its end too
        ax.step([k * r["bucket"] for k in range(len(ys))], ys, where="post", color=PALETTE[i % len(PALETTE)],
                linestyle=_LINESTYLES[i % len(_LINESTYLES)],
                label=t("herd.legend", lang, label=label(name, lang), served=r["served"], clients=r["clients"]))
    ax.axhline(capacity, color=NEUTRALS["grey"], linestyle="--", linewidth=1, label=t("herd.capacity", lang))
    bucket = next(iter(results.values()))["bucket"] if results else 0.25
    ax.set_xlabel(t("herd.seconds", lang))
    ax.set_ylabel(t("herd.per_slot", lang, bucket=bucket))
    ax.set_title(t("herd.title", lang))
    _count_axis(ax)
    _legend_beside(ax)
    return attach(ax, TextEquivalent(
        lang, _said(t("herd.title", lang), "a11y.herd", lang, bucket=bucket, clients=clients, capacity=capacity),
        ("", t("a11y.col.served", lang), t("a11y.col.gave_up", lang), t("a11y.col.busiest", lang)),
        [(label(name, lang), f"{r['served']}/{r['clients']}", fmt_number(r["gave_up"]),
          fmt_number(max(r["arrivals"], default=0))) for name, r in results.items()], herd_text(results, lang)))


def herd_results(policies: Mapping[str, RetryPolicy | Mapping[str, Any]], *, clients: int = 300,
                 capacity: int = 40) -> dict[str, Mapping[str, Any]]:
    """Each policy's herd (:func:`~agentlab.retry.herd`, seeded), a result given as it is."""
    return {name: (herd(p, clients=clients, capacity=capacity, rng=random.Random(0)) if isinstance(p, RetryPolicy)
                   else p) for name, p in policies.items()}


def herd_text(results: Mapping[str, Mapping[str, Any]], lang: Lang = "en") -> list[str]:
    """What the herd plot shows, one sentence per policy, from the same results: who was served, who gave up,
    over which window, and what the first slot counts (the first tries, and the resends that landed in it)."""
    out = []
    for name, r in results.items():
        said_ = label(name, lang)
        out.append(t("herd.line_cut" if r["unfinished"] else "herd.line", lang, label=said_, served=r["served"], clients=r["clients"], gave_up=r["gave_up"],
                     seconds=r["horizon"], unfinished=r["unfinished"]))
        key = "herd.first_slot_resends" if r["resends"][0] else "herd.first_slot"
        out.append(t(key, lang, label=said_, n=r["arrivals"][0], first=r["first"][0], resends=r["resends"][0],
                     bucket=r["bucket"]))
    return out


@_with_fonts
def plot_matrix(matrix: Mapping[str, Mapping[str, str]], *, ax: Any = None, title: str = "",
                lang: Lang = "en") -> Any:
    """A fault x loop grid coloured by outcome (agentlab.evals.outcome) or, failing that, by final status; every
    cell also says it, with its ✓/⚠/✗, in black or white, whichever reads on its colour."""
    import matplotlib.colors as mcolors
    rows = list(matrix)
    cols = sorted({c for r in matrix.values() for c in r}, key=lambda c: (c != "naive", c))
    palette = {**STATUS_COLORS, **OUTCOME_COLORS}
    names = list(palette)
    grid = [[names.index(matrix[r][c]) if matrix[r].get(c) in palette else 0 for c in cols] for r in rows]
    ax = _ax(ax, (6, 0.35 * len(rows) + 1.5))
    cmap = mcolors.ListedColormap(list(palette.values()))
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=len(names) - 1, aspect="auto")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([label(c, lang) for c in cols])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label(r, lang) for r in rows], fontsize=8)

    def said_(value: str) -> str:
        return f"{symbol(value)} {label(value, lang)}".strip() if value else "-"
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            value = matrix[r].get(c, "")
            ax.text(j, i, said_(value), ha="center", va="center", fontsize=7,
                    color=ink(palette.get(value, palette[names[0]])))
    ax.set_title(label(title, lang))
    return attach(ax, TextEquivalent(lang, _said(title, "a11y.grid", lang), ("", *[label(c, lang) for c in cols]),
                                     [(label(r, lang), *[said_(matrix[r].get(c, "")) for c in cols]) for r in rows],
                                     (t("a11y.symbols", lang),)))


@_with_fonts
def plot_shares(counts: Mapping[str, float], *, ax: Any = None, title: str = "", lang: Lang = "en") -> Any:
    """Horizontal bars of shares (e.g. failures by taxonomy class), largest first."""
    ax = _ax(ax, (6, 2.6))
    total = sum(counts.values()) or 1
    items = sorted(counts.items(), key=lambda kv: kv[1])
    ax.barh([label(k, lang) for k, _ in items], [v / total for _, v in items], color=_O["blue"])
    for i, (_, v) in enumerate(items):
        ax.text(v / total, i, f" {v / total:.0%}{aside(v, lang)}", va="center", fontsize=8)
    ax.set_xlim(0, 1.15)
    ax.set_title(label(title, lang))
    return attach(ax, TextEquivalent(lang, _said(title, "a11y.shares", lang, total=fmt_number(sum(counts.values()))),
                                     ("", t("a11y.col.count", lang), t("a11y.col.share", lang)),
                                     [(label(k, lang), fmt_number(v), f"{v / total:.0%}") for k, v in items[::-1]]))


@_with_fonts
def plot_hbars(values: Mapping[str, float], *, ax: Any = None, title: str = "", xlabel: str = "",
               tone: Mapping[str, str] | None = None, line: tuple[float, str] | None = None, lang: Lang = "en") -> Any:
    """Horizontal bars, ``{name: value}`` top to bottom in the order given, each labelled with its value.

    ``tone`` marks a bar ``"good"`` (green) or ``"bad"`` (vermillion, hatched); the rest are blue. ``line`` is a
    reference ``(value, its label)`` drawn dashed across (a budget, a target)."""
    ax = _ax(ax, (8, 0.45 * len(values) + 1.4))
    tone = tone or {}
    names = list(values)
    colors = {"good": _O["bluish_green"], "bad": _O["vermillion"]}
    bars = ax.barh([label(n, lang) for n in names], [values[n] for n in names],
                   color=[colors.get(tone.get(n, ""), _O["blue"]) for n in names],
                   hatch=[("xx" if tone.get(n) == "bad" else "") for n in names], edgecolor="white")
    ax.bar_label(bars, labels=[fmt_number(values[n]) for n in names], fontsize=8, padding=2)
    ax.invert_yaxis()  # the first name on top, as it reads
    ax.set_xlim(0, max([*values.values(), *([line[0]] if line else []), 0]) * 1.12 or 1)
    if line is not None:
        ax.axvline(line[0], color=_O["black"], linestyle="--", linewidth=1, label=line[1])
        _legend_beside(ax)
    ax.set_xlabel(label(xlabel, lang))
    ax.set_title(label(title, lang))
    return attach(ax, TextEquivalent(lang, _said(title, "a11y.hbars", lang), ("", label(xlabel, lang)),
                                     [(label(n, lang), fmt_number(values[n])) for n in names],
                                     (f"{line[1]}{colon(lang)}{fmt_number(line[0])}",) if line else ()))


@_with_fonts
def plot_lines(series: Mapping[str, Sequence[tuple[float, float]]], *, ax: Any = None, title: str = "",
               xlabel: str = "", ylabel: str = "", lang: Lang = "en") -> Any:
    """Lines from ``{name: [(x, y), ...]}``, each with its colour and its marker."""
    ax = _ax(ax)
    for i, (name, pts) in enumerate(series.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=_MARKERS[i % len(_MARKERS)], label=label(name, lang),
                color=_color(name, i), linestyle=_LINESTYLES[i % len(_LINESTYLES)])
    ax.set_title(label(title, lang))
    ax.set_xlabel(label(xlabel, lang))
    ax.set_ylabel(label(ylabel, lang))
    _legend_beside(ax)
    head = f"{label(xlabel, lang)} → {label(ylabel, lang)}" if xlabel and ylabel else "x → y"
    return attach(ax, TextEquivalent(lang, _said(title, "a11y.lines", lang), ("", head),
                                     [(label(name, lang), joined((f"{fmt_number(x)} → {fmt_number(y)}" for x, y in pts),
                                                                 lang)) for name, pts in series.items()]))


@_with_fonts
def plot_pass_k(curves: Mapping[str, Sequence[tuple[int, float]]], *, ax: Any = None, lang: Lang = "en") -> Any:
    """pass^k against k: how fast reliability falls when every one of k tries must succeed."""
    ax = plot_lines(curves, ax=ax, title="pass^k", xlabel="k (trials that must all succeed)", ylabel="pass^k",
                    lang=lang)
    ax.set_ylim(0, 1.05)
    return ax


@_with_fonts
def compare_plot(groups: Mapping[str, Sequence[Any]], *, lang: Lang = "en") -> tuple[list[dict], Any]:
    """Compare groups in one call: the table, and one figure with grouped metric bars,
    the status breakdown, and pass^k curves (only where each case ran more than once: with one
    trial pass^k is just the success rate, a single point that says nothing more, so the figure
    has two panels and no empty third). The figure's text equivalent is its panels', one after another."""
    import matplotlib.pyplot as plt

    from ..evals import compare_groups, pass_k_curve, status_counts
    rows = compare_groups(dict(groups))
    curves = {label: pass_k_curve(rs) for label, rs in groups.items()}
    several = any(len(c) > 1 for c in curves.values())  # one trial each: pass^1 is the success rate, no panel
    fig, axes = plt.subplots(1, 3 if several else 2, figsize=(15 if several else 10.5, 3.4))
    metrics = ("task_success_rate", "invalid_call_rate", "takeover_rate")
    plot_bars({m: {r["group"]: r[m] for r in rows} for m in metrics}, ax=axes[0], title="metrics", lang=lang)
    plot_statuses({name: status_counts([r.run for r in rs]) for name, rs in groups.items()}, ax=axes[1], lang=lang)
    if several:
        plot_pass_k(curves, ax=axes[2], lang=lang)
    fig.tight_layout()
    panels = [te for a in axes if (te := text_equivalent(a)) is not None]
    attach(fig, TextEquivalent(lang, t("a11y.panels", lang, n=len(panels)),
                               notes=[line for te in panels for line in te.lines()]))
    return rows, fig


@_with_fonts
def plot_comparison(comparison: RunComparison, *, kind: str | None = None, ax: Any = None, lang: Lang = "en",
                    title: str | None = None) -> Any:
    """Before against after, class by class (:func:`agentlab.evals.compare_runs`): grouped bars of the share
    of the sessions compared in each stage (left) and each outcome (right), each bar labelled with its count.

    Classes empty on both sides are left out; ``kind`` ("stage" or "outcome") keeps only one of the two.
    """
    from ..evals.review import compared_class
    rows = [r for r in comparison.rows if (kind is None or r["kind"] == kind) and (r["before"] or r["after"])]
    ax = _ax(ax, (10, 3.6))
    xs = list(range(len(rows)))
    width = 0.4
    for side, offset in (("before", -width / 2), ("after", width / 2)):
        bars = ax.bar([x + offset for x in xs], [r[side + "_share"] for r in rows], width, edgecolor="white",
                      color=BEFORE_AFTER_COLORS[side], hatch="//" if side == "before" else "",
                      label=t("review." + side, lang, label=label(getattr(comparison, side), lang)))
        ax.bar_label(bars, labels=[str(r[side]) for r in rows], fontsize=7)
    names = [compared_class(r["kind"], r["class"], lang) for r in rows]
    ax.set_xticks(xs, names, rotation=30, ha="right", fontsize=8)
    kinds = [r["kind"] for r in rows]
    for k in ("stage", "outcome"):
        if k in kinds:
            first, last = kinds.index(k), len(kinds) - 1 - kinds[::-1].index(k)
            ax.text((first + last) / 2, 1.12, t("review.by_" + k, lang), ha="center", fontsize=8, color=_O["black"])
            if first > 0:
                ax.axvline(first - 0.5, color=NEUTRALS["grey"], linestyle=":", linewidth=1)
    ax.set_ylim(0, 1.2)
    ax.set_ylabel(t("review.share", lang))
    title = title if title is not None else t("review.compare_title", lang, n=len(comparison.fixed),
                                              broken=len(comparison.broken))
    ax.set_title(title)
    _legend_beside(ax)
    return attach(ax, TextEquivalent(
        lang, _said(title, "a11y.comparison", lang),
        ("", *[t("review." + side, lang, label=label(getattr(comparison, side), lang)) for side in ("before", "after")]),
        [(name, *[f"{r[side]}{aside(format(r[side + '_share'], '.0%'), lang)}" for side in ("before", "after")])
         for name, r in zip(names, rows, strict=True)]))


@_with_fonts
def plot_trend(rows: Sequence[Mapping[str, Any]], *, ax: Any = None, lang: Lang = "en", title: str | None = None) -> Any:
    """Task success, invalid-call rate and takeover rate across stored runs (:func:`agentlab.evals.trend`):
    one line each, the runs evenly spaced in the order given (``trend`` gives them oldest first), each
    labelled with its label and the time it was stored."""
    ax = _ax(ax, (8, 3.4))
    xs = list(range(len(rows)))
    for metric, color in TREND_COLORS.items():
        ax.plot(xs, [r[metric] for r in rows], marker=TREND_MARKERS[metric], color=color,
                label=t("eval." + metric, lang))
    ax.set_xticks(xs, [f"{label(str(r['label']), lang)}\n{str(r['time'])[:19].replace('T', ' ')}" for r in rows], fontsize=7)
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel(t("review.trend_x", lang))
    ax.set_ylabel(t("review.rate", lang))
    title = title if title is not None else t("review.trend_title", lang)
    ax.set_title(title)
    _legend_beside(ax)
    return attach(ax, TextEquivalent(
        lang, _said(title, "a11y.trend", lang),
        ("", t("a11y.col.time", lang), *[t("eval." + m, lang) for m in TREND_COLORS]),
        [(label(str(r["label"]), lang), str(r["time"])[:19].replace("T", " "), *[_pct(r[m]) for m in TREND_COLORS])
         for r in rows]))


@_with_fonts
def plot_live(curves: LiveCurves, *, ax: Any = None, lang: Lang = "en", title: str | None = None) -> Any:
    """The live curves of :class:`agentlab.evals.monitor.LiveCurves`: each curve in its trend colour, its reference
    line dashed in the same colour, and every point where an alert fired ringed in red. ``x`` is the time in
    seconds since the first point, so a window of runs and a day of buckets read the same way."""
    ax = _ax(ax, (8, 3.4))
    t0 = curves.points[0].at if curves.points else 0.0
    series = curves.series()
    for metric, pts in series.items():
        color = TREND_COLORS.get(metric)
        ax.plot([at - t0 for at, _ in pts], [v for _, v in pts], marker=TREND_MARKERS.get(metric, "."), markersize=4,
                color=color, label=t("eval." + metric, lang))
    for line in curves.lines:
        ax.axhline(line.value, linestyle="--", linewidth=1, color=TREND_COLORS.get(line.metric, NEUTRALS["grey"]),
                   label=t("live.line", lang, metric=t("eval." + line.metric, lang)))
    if curves.alerts:  # a ring, not only a colour: the shape says "an alert fired here"
        ax.scatter([a.point.at - t0 for a in curves.alerts], [a.value for a in curves.alerts], s=90, facecolors="none",
                   edgecolors=_O["black"], linewidths=2, zorder=5, label=t("live.crossing", lang))
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel(t("live.x", lang))
    ax.set_ylabel(t("review.rate", lang))
    title = title if title is not None else t("live.title", lang)
    ax.set_title(title)
    _legend_beside(ax)
    span = (curves.points[-1].at - t0) if curves.points else 0.0
    lines = {ln.metric: ln.value for ln in curves.lines}
    return attach(ax, TextEquivalent(
        lang, _said(title, "a11y.live", lang, n=len(curves.points), seconds=fmt_number(round(span, 1)),
                    alerts=len(curves.alerts)),
        ("", t("a11y.col.last", lang), t("a11y.col.lowest", lang), t("a11y.col.highest", lang),
         t("live.line", lang, metric="").lstrip(":： "), t("a11y.col.alerts", lang)),
        [(t("eval." + m, lang), _pct(pts[-1][1]), _pct(min(v for _, v in pts)), _pct(max(v for _, v in pts)),
          _pct(lines[m]) if m in lines else "-", str(sum(a.line.metric == m for a in curves.alerts)))
         for m, pts in series.items() if pts]))


def table_view(df: Any, *, percent: Collection[str] | None = None, none: str = "-", lang: Lang = "en") -> Any:
    """A DataFrame as the notebooks show it (a pandas ``Styler``): every text in full, never cut with "...",
    numbers formatted once, and an empty cell as ``none``, never ``NaN`` or ``None``.

    A column whose name says ``rate`` (or one named in ``percent``) is a share, shown as a percentage; a
    float column that holds only whole numbers (a count that went through a mean or a NaN) shows them
    whole; any other float gets two decimals. In another ``lang`` the headers, the index and every text value
    are said in that language (:func:`agentlab.i18n.label`); the numbers are the same.
    """
    shares = set(percent) if percent is not None else {c for c in df.columns if "rate" in str(c)}
    if lang != "en":
        df = _said_in(df, lang)
        shares = {label(c, lang) for c in shares}

    yes, no = label("yes", lang), label("no", lang)

    def plain(v: Any) -> str:
        # what is not a number: a flag as yes or no in the reader's words, a dict or list as JSON (Python's repr read
        # {'scope': 'global'} and True to a reader), anything else as its text
        if type(v).__name__ in ("bool", "bool_"):
            return yes if v else no
        if isinstance(v, (dict, list, tuple)):
            try:  # a numpy number as the number it is; what JSON cannot say (a tuple as a key) as Python says it
                return json.dumps(v, ensure_ascii=False, default=lambda o: o.item() if hasattr(o, "item") else str(o))
            except (TypeError, ValueError):
                return str(v)
        return str(v)

    def fmt(column: Any) -> Any:
        values = [v for v in column if isinstance(v, numbers.Real) and not _missing(v) and not isinstance(v, bool)]
        if column.name in shares:  # to a tenth of a percent, as eval and the prose say them (36.5%, not 37%)
            return lambda v: none if _missing(v) else (f"{v:.1%}" if isinstance(v, numbers.Real) and
                                                       not isinstance(v, bool) else plain(v))
        if values and all(isinstance(v, numbers.Real) and float(v).is_integer() for v in values):
            return lambda v: none if _missing(v) else (f"{v:.0f}" if isinstance(v, numbers.Real) and not
                                                       isinstance(v, bool) else plain(v))
        return lambda v: none if _missing(v) else (f"{v:,.2f}" if isinstance(v, float) else plain(v))
    styler = df.style.format({c: fmt(df[c]) for c in df.columns}, na_rep=none)
    if df.index.dtype.kind == "f":
        styler = styler.format_index(lambda v: none if _missing(v) else f"{v:g}")
    # long texts wrap inside their cell instead of widening the table past the page
    return styler.set_table_styles([{"selector": "td", "props": "text-align: left; white-space: pre-wrap; "
                                                                  "max-width: 48em; vertical-align: top"}])


#: columns whose cells are names, never words to say in another language: a case's id (adv-truncated) is the same
#: id in a Chinese table, where it was read as an English word to translate
_NAME_COLUMNS = frozenset({"case", "case_id", "id"})


def _said_in(df: Any, lang: Lang) -> Any:
    """A copy of ``df`` with headers, index and text cells said in ``lang``."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    def texts(x: Any) -> bool:  # pandas 3 keeps text as its own "str" dtype, not object
        return bool(is_object_dtype(x) or is_string_dtype(x))

    out = df.copy()
    for c in out.columns:
        if texts(out[c]) and c not in _NAME_COLUMNS:
            out[c] = out[c].map(lambda v: label(v, lang))
    out.columns = [label(c, lang) for c in out.columns]
    if texts(out.index):
        out.index = [label(i, lang) for i in out.index]
    if out.index.name:
        out.index.name = label(out.index.name, lang)
    return out


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


use_fonts()  # docs/metrics.md#chinese-labels-in-plots: every figure, the notebook's own included
