"""agentlab.evals.probe_report: the probe's table as a reader meets it."""
import pytest


@pytest.mark.parametrize("lang, legend", [("en", ("**repaired x%**", "**n/a**")),
                                          ("zh", ("**已修正 x%**", "**x 轮**", "**不适用**"))])
def test_a_cell_reads_as_the_notebooks_legend_says_it_does(lang, legend):
    """Notebook 17's legend names what a cell says; the cells say exactly that (the Chinese legend read 已修正 x%,
    轮次 and 不适用 beside cells that said 修正 100% · 1 轮 and n/a)."""
    from conftest import ROOT

    from agentlab.evals.probe_report import cell_text
    folder = ROOT / "notebooks" / ("zh" if lang == "zh" else "")
    prose = (folder / "17_probe_your_tools.py").read_text(encoding="utf-8")
    assert all(term in prose for term in legend)
    repaired = cell_text({"verdict": "repaired", "guard": "validation", "self_correction_rate": 1.0,
                          "repair_turns": 2}, lang)
    words = [term.strip("*").replace("x%", "100%").replace("x ", "2 ") for term in legend]
    assert words[0] in repaired, repaired
    assert cell_text({"verdict": "n/a"}, lang) == words[-1]
    if lang == "zh":
        assert words[1] in repaired and "validation" not in repaired, repaired


@pytest.mark.parametrize("guard", ["validate", "idempotency", None])
def test_a_cells_hover_names_the_guard_as_the_cell_does(guard):
    """The hover text named the guard as the program spells it (拦截者（取自 trace）：idempotency) under a cell that
    said 幂等, and "None" when nothing caught the fault."""
    from agentlab.evals.probe_report import _tip, cell_text
    cell = {"applies": True, "verdict": "caught" if guard else "not_caught", "guard": guard}
    tip, text = _tip(cell, "zh"), cell_text(cell, "zh")
    assert "None" not in tip and (guard is None or guard not in tip), tip
    assert text.split(" ·")[0] in tip, (text, tip)


def test_the_tables_columns_are_named_in_the_pages_language():
    """Its columns were the categories' ids (camel_case, api_429...), on the Chinese page too."""
    import json as _json
    import re as _re

    from agentlab.evals.probe import fake_source, probe
    from agentlab.evals.probe_report import table_html
    from agentlab.resources import data_file
    from agentlab.tools import load_specs
    reg = load_specs(_json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8")))
    report = probe(reg, fake_source(), lang="zh", categories=["camel_case", "api_429"])
    heads = _re.findall(r"<th style='white-space:nowrap' title='([^':：]*)[:：][^']*'>([^<]*)</th>", table_html(report, "zh"))
    assert heads == [("clean", "正常调用"), ("camel_case", "驼峰字段名"), ("api_429", "被限流（429）")], heads


@pytest.mark.parametrize("plot", ["plot_probe_matrix", "plot_probe_categories"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_plots_name_each_category_as_the_table_above_them_does(plot, lang):
    """Under the table's Chinese columns (驼峰字段名, 被限流（429）) the two plots and their text equivalents named the
    categories by their ids (camel_case, api_429), on the Chinese page too."""
    import matplotlib
    matplotlib.use("Agg")

    from agentlab import a11y
    from agentlab.evals import probe_report
    from agentlab.i18n import t
    cats = ["camel_case", "api_429"]
    report = {"tools": [{"name": "get_order"}], "settings": {"categories": cats},
              "cells": [{"tool": "get_order", "category": c, "verdict": "caught", "applies": True} for c in cats]}
    ax = getattr(probe_report, plot)(report, lang=lang)
    names = [t(f"probe.short.{c}", lang) for c in cats]
    assert [x.get_text() for x in ax.get_xticklabels()] == names
    said = str(a11y.text_equivalent(ax))
    assert all(n in said for n in names) and not any(c in said for c in cats), said
