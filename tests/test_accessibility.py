"""Accessibility: every plot has a text equivalent made of the numbers it draws, in both
languages; every colour is Okabe-Ito's colour-blind-safe palette; no status is told by colour alone; a trace's text
is at least 14px; and every notebook cell that draws a figure shows its text beside it."""
import re
from pathlib import Path

import matplotlib
import pytest
from typography import english_punctuation

matplotlib.use("Agg")  # tests only; never exported to notebook kernels

from agentlab import a11y
from agentlab.evals import probe_report
from agentlab.retry import RetryPolicy
from agentlab.workbook import plots

ROOT = Path(__file__).resolve().parent.parent
PROBE = {"tools": [{"name": "get_order"}, {"name": "create_refund"}], "settings": {"categories": ["bad_json", "camel_case"]},
         "cells": [{"tool": "get_order", "category": "bad_json", "verdict": "not_caught", "applies": True},
                   {"tool": "get_order", "category": "camel_case", "verdict": "caught", "applies": True},
                   {"tool": "create_refund", "category": "bad_json", "verdict": "caught", "applies": True},
                   {"tool": "create_refund", "category": "camel_case", "verdict": "ok", "applies": True}]}


def _live():
    from agentlab.evals.monitor import LiveCurves
    from agentlab.workbook.demo import compare_loops
    live = LiveCurves(window=2)
    run = compare_loops("camel_case").guarded
    for i in range(3):
        live.add(run, at=float(i), success=i != 1)
    return live


def _review():
    import tempfile

    from agentlab.evals import compare_runs, load_cases, run_suite, save_results, trend
    cases, store = load_cases()[:3], tempfile.mkdtemp()
    stored = [save_results(run_suite(cases, loop=loop), store, label=loop) for loop in ("naive", "guarded")]
    return compare_runs(*stored), trend(stored)


# each public plot function, its sample data, and numbers its text must contain (as the figure shows them)
CASES = {
    "plot_bars": (lambda lang: plots.plot_bars({"camel_case": {"naive": 3, "guarded": 1}, "bad_json": {"naive": 0.25,
                                                "guarded": 0.9}}, title="refunds", lang=lang), ["3", "1", "0.25", "0.90"]),
    "plot_outcomes": (lambda lang: plots.plot_outcomes({"naive": {"correct": 7, "crashed": 2}}, lang=lang), ["7", "2", "9"]),
    "plot_statuses": (lambda lang: plots.plot_statuses({"naive": {"done": 5, "failed": 4}}, lang=lang), ["5", "4", "9"]),
    "plot_turns_by_outcome": (lambda lang: plots.plot_turns_by_outcome(
        {"camel_case": {"naive": (6, "crashed"), "guarded": (3, "correct")}}, lang=lang), ["6", "3"]),
    "plot_retry_schedule": (lambda lang: plots.plot_retry_schedule(RetryPolicy(max_retries=2, base=0.5, jitter="none"),
                                                                   clients=4, lang=lang), ["0.50", "1.50"]),
    "plot_herd": (lambda lang: plots.plot_herd({"none": RetryPolicy(jitter="none")}, clients=50, capacity=10, lang=lang),
                  ["50", "10"]),
    "plot_matrix": (lambda lang: plots.plot_matrix({"camel_case": {"naive": "failed", "guarded": "done"}}, lang=lang),
                    ["✗", "✓"]),
    "plot_shares": (lambda lang: plots.plot_shares({"structure": 3, "execution": 1}, lang=lang), ["3", "1", "75%", "25%"]),
    "plot_lines": (lambda lang: plots.plot_lines({"naive": [(1, 0.5), (2, 0.3)]}, lang=lang), ["0.50", "0.30"]),
    "plot_pass_k": (lambda lang: plots.plot_pass_k({"guarded": [(1, 0.8), (2, 0.64)]}, lang=lang), ["0.80", "0.64"]),
    "plot_hbars": (lambda lang: plots.plot_hbars({"no guards": 0.4, "all guards": 0.95}, line=(0.5, "target"), lang=lang),
                   ["0.40", "0.95", "0.50"]),
    "plot_live": (lambda lang: plots.plot_live(_live(), lang=lang), ["2", "33%", "5%", "10%"]),
    "plot_probe_matrix": (lambda lang: probe_report.plot_probe_matrix(PROBE, lang=lang), ["get_order", "✗", "✓"]),
    "plot_probe_categories": (lambda lang: probe_report.plot_probe_categories(PROBE, lang=lang), ["bad_json", "1", "0"]),
}


def _public_plot_functions():
    names = {n for n in plots.__all__ if n.startswith("plot_") or n == "compare_plot"}
    return names | {n for n in probe_report.__all__ if n.startswith("plot_")}


def test_every_public_plot_function_is_covered_here():
    assert _public_plot_functions() <= {*CASES, "compare_plot", "plot_comparison", "plot_trend"}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_plot_has_a_text_equivalent_with_its_numbers(name, lang):
    import matplotlib.pyplot as plt
    draw, numbers = CASES[name]
    te = a11y.text_equivalent(draw(lang))
    assert te is not None, f"{name} gave no text equivalent"
    text, page = str(te), te._repr_html_()
    for n in numbers:
        assert n in text and n in page, (name, n, text)
    assert te.lang == lang
    if lang == "zh":
        assert re.search(r"[\u4e00-\u9fff]", text), text  # said in Chinese
        assert a11y.text_equivalent(draw("en")).summary != te.summary
        # punctuated as Chinese: the line plot's points read "1 → 0.50; 2 → 0.30" with an English semicolon
        assert "; " not in text and not english_punctuation(text), text
    plt.close("all")


def test_the_review_plots_and_compare_plot_have_their_numbers_in_both_languages():
    import matplotlib.pyplot as plt

    from agentlab.evals import load_cases, run_suite
    cmp, rows = _review()
    for lang in ("en", "zh"):
        te = a11y.text_equivalent(plots.plot_comparison(cmp, lang=lang))
        assert te is not None and any(str(r["before"]) in str(te) for r in cmp.rows)
        te = a11y.text_equivalent(plots.plot_trend(rows, lang=lang))
        assert te is not None and f"{rows[-1]['task_success_rate']:.0%}" in str(te)
        cases = load_cases()[:3]
        table, fig = plots.compare_plot({"naive": run_suite(cases, loop="naive"), "guarded": run_suite(cases)}, lang=lang)
        te = a11y.text_equivalent(fig)
        assert te is not None and a11y.fmt_number(table[0]["task_success_rate"]) in str(te)
        plt.close("all")


def test_every_colour_is_the_colour_blind_safe_palette():
    safe = {c.upper() for c in (*a11y.OKABE_ITO.values(), *a11y.NEUTRALS.values())}
    assert [c.upper() for c in a11y.PALETTE] == [c.upper() for c in a11y.PALETTE if c.upper() in safe]
    for palette in (plots.STATUS_COLORS, plots.OUTCOME_COLORS, plots.LOOP_COLORS, plots.BEFORE_AFTER_COLORS,
                    plots.TREND_COLORS, probe_report.VERDICT_COLORS):
        assert {c.upper() for c in palette.values()} <= safe, palette
    assert {c.upper() for c in matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]} <= safe


def test_no_status_is_told_by_colour_alone():
    import matplotlib.pyplot as plt
    for status in (*plots.STATUS_COLORS, *plots.OUTCOME_COLORS, *probe_report._ORDER):
        if status not in ("not_injected", "n/a"):
            assert a11y.symbol(status), status
    assert len(set(plots.OUTCOME_HATCHES.values())) == len(plots.OUTCOME_COLORS)
    assert len(set(plots.STATUS_HATCHES.values())) == len(plots.STATUS_COLORS)
    ax = plots.plot_outcomes({"naive": {"correct": 1, "crashed": 1}})
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert legend[0].startswith("✓") and legend[1].startswith("✗"), legend
    assert {p.get_hatch() or "" for p in ax.patches} == {plots.OUTCOME_HATCHES["correct"], plots.OUTCOME_HATCHES["crashed"]}
    ax = plots.plot_matrix({"f": {"naive": "failed", "guarded": "done"}})
    assert {x.get_text()[0] for x in ax.texts} == {"✗", "✓"}
    ax = plots.plot_turns_by_outcome({"f": {"naive": (2, "crashed"), "guarded": (3, "correct")}})
    assert {x.get_text() for x in ax.texts} == {"✗", "✓"}
    plt.close("all")


def test_trace_cells_carry_a_symbol_and_no_text_under_14px():
    from agentlab.trace import SYMBOLS, outcome, side_by_side_html, to_html
    from agentlab.workbook.demo import compare_loops
    c = compare_loops("camel_case")
    for page in (side_by_side_html(c.naive.events, c.guarded.events), to_html(c.naive.events, lang="zh")):
        sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", page)]
        assert sizes and min(sizes) >= 14, sizes
        cells = re.findall(r"<td style='background:[^']*'>(.*?)</td>", page, re.S)
        assert cells
        for cell in cells:
            assert re.sub(r"<[^>]+>", "", cell).lstrip()[:1] in SYMBOLS.values(), cell[:200]
    assert {outcome(e) for e in c.naive.events} <= set(SYMBOLS)
    assert "◆" in side_by_side_html(c.naive.events, c.guarded.events)  # the first divergence, not only its outline


def test_the_text_equivalent_is_displayed_beside_the_figure_in_a_notebook(monkeypatch):
    import matplotlib.pyplot as plt
    shown = []
    monkeypatch.setattr(a11y, "_in_kernel", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    plots.plot_pass_k({"guarded": [(1, 0.8)]}, lang="zh")  # it draws with plot_lines: one text, not two
    assert len(shown) == 1 and isinstance(shown[0], a11y.TextEquivalent) and shown[0].lang == "zh"
    with a11y.quiet():
        plots.plot_bars({"a": {"naive": 1}})
    assert len(shown) == 1
    plt.close("all")


# the functions whose text is shown beside the figure they draw
EMITS = {*plots.__all__, *probe_report.__all__}
DRAWS = re.compile(r"plt\.show\(\)|\.plot\(|\.plot\.\w+\(|\.barh?\(|\.scatter\(|\.imshow\(")
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.py"), *ROOT.glob("notebooks/zh/*.py")])


def _code_cells(path):
    cells = re.split(r"^# %%.*$", path.read_text(encoding="utf-8"), flags=re.M)
    return [c for c in cells[1:] if not c.lstrip().startswith("# ") or "\n" in c.strip()]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_notebook_figure_shows_its_text_beside_it(path):
    src = path.read_text(encoding="utf-8")
    cells = re.split(r"^# %%(.*)$", src, flags=re.M)
    for head, body in zip(cells[1::2], cells[2::2], strict=True):
        if "[markdown]" in head or not DRAWS.search(body):
            continue
        called = set(re.findall(r"\b(plot_\w+|compare_plot)\(", body))
        assert called & {n for n in EMITS if n.startswith(("plot_", "compare_plot"))}, \
            f"{path.name}: a cell draws a figure with no package plot function to say it in words:\n{body.strip()[:300]}"
        assert not re.search(r"\.(barh?|scatter|imshow)\(|\.plot\.\w+\(", body), \
            f"{path.name}: a cell draws its own bars, which no text equivalent describes:\n{body.strip()[:300]}"


def _widget_outputs(lang):
    """Every widget that draws a figure, drawn in ``lang``: (name, its Output's outputs)."""
    from agentlab.evals import load_cases, run_suite
    from agentlab.workbook.demo import compare_loops
    from agentlab.workbook.widgets import BadCaseReview, BudgetSlider, MetricsPanel, ProbePanel
    cs = [compare_loops(f) for f in ("camel_case", "lost_reply")]
    metrics = MetricsPanel({"naive": [c.naive for c in cs], "guarded": [c.guarded for c in cs]}, lang=lang)
    cases = load_cases()
    review = BadCaseReview(run_suite(cases[:12], loop="naive"), cases[:12], "unused.jsonl", n=6, seed=3, lang=lang)
    budget = BudgetSlider(runs=8, lang=lang)
    probe = ProbePanel(lang=lang)
    probe.update()
    return [("metrics", metrics.plot.outputs), ("review", review.shares.outputs), ("budget", budget.out.outputs),
            ("probe", probe.plots.outputs)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_widget_figure_has_its_text_under_it_and_as_its_alt_text(lang):
    """A figure a widget draws (the app, the review, the sliders, the probe) was an image alone: no words for a
    screen reader, nor for anyone who cannot tell its colours apart."""
    words = {"en": "The figure in words:", "zh": "图的文字版："}[lang]
    for name, outputs in _widget_outputs(lang):
        images = [i for i, o in enumerate(outputs) if "image/png" in o.get("data", {})]
        assert images, name
        for i in images:
            alt = outputs[i].get("metadata", {}).get("image/png", {}).get("alt", "")
            assert alt, f"{name}: an image with no alt text"
            under = outputs[i + 1]["data"].get("text/html", "") if i + 1 < len(outputs) else ""
            assert "agentlab-text-equivalent" in under and words in under, f"{name}: no text under its figure"
            assert re.search(r"\d", under), f"{name}: the text under the figure carries none of its numbers"


def test_every_trace_symbol_is_drawn_by_the_plain_font_a_fresh_machine_has():
    """The model's rows carried an emoji, which chromium on a machine without an emoji font drew as an empty box:
    the status symbol meant to stand beside the colour was gone. Each symbol is in DejaVu Sans (matplotlib ships it,
    and Debian installs it)."""
    from fontTools.ttLib import TTFont
    from matplotlib import font_manager

    from agentlab.trace import SYMBOLS
    drawn = TTFont(font_manager.findfont("DejaVu Sans")).getBestCmap()
    missing = [s for s in [*SYMBOLS.values(), "◆", "✎"] if any(ord(ch) not in drawn for ch in s)]
    assert not missing, missing
