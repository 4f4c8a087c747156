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
