import matplotlib
import pytest

matplotlib.use("Agg")  # tests only; never exported to notebook kernels

from agentlab.retry import RetryPolicy
from agentlab.workbook.plots import plot_bars, plot_herd, plot_lines, plot_matrix, plot_pass_k, plot_retry_schedule, plot_shares, plot_statuses


def test_each_plot_takes_an_ax_or_makes_one_and_returns_it():
    import matplotlib.pyplot as plt
    _fig, ax = plt.subplots()
    assert plot_bars({"a": {"naive": 1, "guarded": 2}}, ax=ax) is ax and len(ax.patches) == 2
    assert len(plot_statuses({"x": {"done": 3, "escalated": 1}}).patches) == 2
    assert plot_retry_schedule(RetryPolicy(max_retries=3), clients=5).collections
    ax = plot_herd({"none": RetryPolicy(jitter="none"), "full": RetryPolicy()})
    assert "served" in ax.get_legend().get_texts()[0].get_text()
    assert plot_matrix({"f": {"naive": "failed", "guarded": "done"}}).images
    assert len(plot_shares({"structure": 3, "execution": 1}).patches) == 2
    assert plot_lines({"naive": [(1, 0.5), (2, 0.3)]}).lines and plot_pass_k({"g": [(1, 1.0)]}).get_ylim()[1] > 1
    plt.close("all")


def test_bars_name_their_groups_under_the_axis_and_in_words_when_told_what_they_are():
    """The weekly review's trend stood 2026-W10 under its bars with nothing saying it was a week."""
    from agentlab.a11y import text_equivalent
    ax = plot_bars({"2026-W10": {"schema": 1}}, xlabel="周", lang="zh", own_names=True)
    assert ax.get_xlabel() == "周" and text_equivalent(ax).header[0] == "周"
    assert plot_bars({"a": {"naive": 1}}).get_xlabel() == ""  # untold, nothing made up


def test_chinese_labels_leave_the_users_rcparams_alone():
    before = list(matplotlib.rcParams["font.family"])
    ax = plot_bars({"成功率": {"naive": 0.2, "guarded": 0.9}}, title="任务成功率")
    assert list(matplotlib.rcParams["font.family"]) == before
    assert ax.title.get_fontfamily()[0] == "DejaVu Sans" and len(ax.title.get_fontfamily()) >= 1


def test_a_chinese_title_renders_without_missing_glyphs():
    import io
    import warnings

    import matplotlib.pyplot as plt
    from conftest import IN_CI

    from agentlab.workbook.plots import _font_families
    if len(_font_families()) < 2:
        if IN_CI:
            raise AssertionError("no CJK font found: .ci/run installs fonts-wqy-zenhei")
        import pytest
        pytest.skip("no CJK font on this machine (Debian: apt-get install fonts-wqy-zenhei)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph 20219 missing from font(s) DejaVu Sans" becomes a failure
        ax = plot_bars({"任务成功率": {"朴素循环": 0.2, "防护循环": 0.9}}, title="任务成功率（按最终数据评判）")
        ax.figure.savefig(io.BytesIO(), format="png")
    plt.close(ax.figure)


# --- every count axis counts in whole numbers; every legend leaves the data visible ---------------------------
def _drawn(ax):
    ax.figure.canvas.draw()
    return ax.figure.canvas.get_renderer()


def _count_ticks_whole(ax):
    _drawn(ax)
    lo, hi = ax.get_ylim()
    ticks = [v for v in ax.get_yticks() if lo <= v <= hi]
    assert ticks and all(float(v).is_integer() for v in ticks), ticks


def _legend_hides_nothing(ax):
    renderer = _drawn(ax)
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent(renderer)
    marks = [p for p in ax.patches if p.get_height() or p.get_width()] + [ln for ln in ax.lines if len(ln.get_xdata())]
    assert marks
    for mark in marks:
        assert not box.overlaps(mark.get_window_extent(renderer)), mark
    assert not box.overlaps(ax.get_window_extent(renderer))  # beside the axes, so neither on data nor on a label inside


COUNTS = {"lost reply + retry": {"naive": 2, "every call, no key": 1, "guarded": 1},
          "repeated call": {"naive": 2, "every call, no key": 2, "guarded": 1},
          "two calls in one message": {"naive": 1, "every call, no key": 2, "guarded": 1}}


def test_count_axes_have_whole_number_ticks():
    """The notebooks' "2.5 refunds" axes (01, 03, 05, 07 through plot_bars, 00 through plot_outcomes)."""
    import matplotlib.pyplot as plt

    from agentlab.workbook.plots import plot_outcomes, plot_turns_by_outcome
    _count_ticks_whole(plot_bars(COUNTS, ylabel="refunds"))
    _count_ticks_whole(plot_bars({"a": {"naive": 3, "guarded": 1}, "b": {"naive": 3, "guarded": 1}}))
    _count_ticks_whole(plot_outcomes({"naive": {"correct": 3, "crashed": 6, "leaked": 1}, "guarded": {"correct": 16}}))
    _count_ticks_whole(plot_statuses({"2": {"done": 1, "escalated": 2}}))
    _count_ticks_whole(plot_turns_by_outcome({"camel_case": {"naive": (2, "crashed"), "guarded": (3, "correct")}}))
    rates = plot_bars({"hit rate": {"routed": 0.75}, "right tool": {"routed": 0.5}})
    _drawn(rates)
    assert any(not float(v).is_integer() for v in rates.get_yticks())  # a rate keeps its fractions
    plt.close("all")


def test_legends_sit_beside_the_data_not_on_it():
    import matplotlib.pyplot as plt

    from agentlab.workbook.plots import plot_outcomes
    _legend_hides_nothing(plot_bars(COUNTS, ylabel="refunds"))
    _legend_hides_nothing(plot_bars({f: {"bare 500: invalid calls (never fixed)": 3, "structured: invalid calls (then fixed)": 1}
                                     for f in ("camel_case", "drop_required", "wrong_type", "out_of_enum")}))
    _legend_hides_nothing(plot_lines({"naive": [(1, 0.9), (2, 0.95), (3, 0.97)], "guarded": [(1, 0.2), (2, 0.9)]}))
    _legend_hides_nothing(plot_herd({"none": RetryPolicy(jitter="none"), "full": RetryPolicy()}))
    _legend_hides_nothing(plot_outcomes({"naive": {"correct": 3, "crashed": 6}, "guarded": {"correct": 16}}))
    plt.close("all")


def test_table_view_shows_whole_texts_formatted_numbers_and_no_nan():
    import pandas as pd

    from agentlab.workbook.plots import table_view
    told = "Done: A1001 is refunded and a colleague will call you about A1002."
    df = pd.DataFrame([{"model": "0.5b", "turns": 56.0, "right_tool_rate": 0.535714, "prompt_tokens": 2748.089286,
                        "error": None, "the model read": told},
                       {"model": "1.5b", "turns": 28.0, "right_tool_rate": 0.058824, "prompt_tokens": 1079.142857,
                        "error": "UNAVAILABLE", "the model read": told * 3}])
    df.loc[2] = ["x", float("nan"), float("nan"), float("nan"), float("nan"), float("nan")]
    page = table_view(df).to_html()
    assert told * 3 in page                                   # nothing cut with "..."
    for raw in ("0.535714", "2748.089286", "0.058824", "56.0", "nan", "NaN", "None"):
        assert raw not in page, raw
    for shown in ("53.6%", "5.9%", "2,748.09", ">56<", ">-<"):  # (to a tenth, as eval says a rate)
        assert shown in page, shown
    assert ">5.0%<" in table_view(pd.DataFrame({"share": [0.05]}), percent=["share"]).to_html()


# --- Chinese plots on a machine with no Chinese system font: the font the install brings draws them -------------
# The child process hides from matplotlib every font that can draw 中 (its fresh cache lists the system's fonts)
# and from agentlab.resources every system path, then draws every plot of agentlab.workbook.plots in Chinese.
FONTLESS = r'''
import json, logging, sys, tempfile, warnings
import matplotlib
matplotlib.use("Agg")
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

def draws_chinese(path):
    try:
        return 0x4E2D in FT2Font(path).get_charmap()
    except Exception:
        return False

font_manager.fontManager.ttflist = [f for f in font_manager.fontManager.ttflist if not draws_chinese(f.fname)]
font_manager.FontManager._findfont_cached.cache_clear()
from agentlab import resources
resources.CJK_FILES[:] = [p for p in resources.CJK_FILES if p not in resources.CJK_SYSTEM_FILES and sys.argv[1] == "shipped"]
logged = []
handler = logging.Handler()
handler.emit = lambda record: logged.append(record.getMessage())
logging.getLogger("matplotlib").addHandler(handler)
import matplotlib.pyplot as plt
from agentlab.evals import compare_runs, load_cases, run_suite, save_results, trend
from agentlab.retry import RetryPolicy
recording = warnings.catch_warnings(record=True)  # from the import on: the fonts are set up when plots is imported
caught = recording.__enter__()
warnings.simplefilter("always")
from agentlab.workbook import plots

cases, store = load_cases()[:4], tempfile.mkdtemp()
naive, guarded = run_suite(cases, loop="naive"), run_suite(cases)
stored = [save_results(rs, store, label=label) for label, rs in (("naive", naive), ("guarded", guarded))]
everything = {s: 1 for s in plots.STATUS_COLORS}
from agentlab.evals.monitor import LiveCurves
live = LiveCurves(window=2)
for i, r in enumerate(naive):
    live.add(r.run, at=float(i), success=r.passed)
drawn = {
    "plot_bars": lambda: plots.plot_bars({"任务成功率": {"naive": 0.2, "guarded": 0.9}}, title="任务成功率（按最终数据评判）",
                                         ylabel="比例"),
    "plot_outcomes": lambda: plots.plot_outcomes({"朴素循环": {o: 1 for o in plots.OUTCOME_COLORS}}, title="结果", lang="zh"),
    "plot_turns_by_outcome": lambda: plots.plot_turns_by_outcome({"驼峰命名": {"naive": (2, "crashed"), "guarded": (3, "correct")}},
                                                                 title="每次运行的轮数", lang="zh"),
    "plot_statuses": lambda: plots.plot_statuses({"朴素循环": everything}, title="最终状态", lang="zh"),
    "plot_retry_schedule": lambda: plots.plot_retry_schedule(RetryPolicy(max_retries=3), clients=5),
    "plot_herd": lambda: plots.plot_herd({"不加抖动": RetryPolicy(jitter="none"), "完全抖动": RetryPolicy()}, lang="zh"),
    "plot_matrix": lambda: plots.plot_matrix({"回复丢失": {"naive": "failed", "guarded": "done"}}, title="故障与循环"),
    "plot_shares": lambda: plots.plot_shares({"结构": 3, "执行": 1}, title="失败按类别"),
    "plot_lines": lambda: plots.plot_lines({"防护循环": [(1, 0.5), (2, 0.3)]}, title="趋势", xlabel="次数", ylabel="比例"),
    "plot_pass_k": lambda: plots.plot_pass_k({"防护循环": [(1, 1.0), (2, 0.9)]}),
    "compare_plot": lambda: plots.compare_plot({"防护循环": guarded, "朴素循环": naive}),
    "plot_comparison": lambda: plots.plot_comparison(compare_runs(*stored), lang="zh"),
    "plot_trend": lambda: plots.plot_trend(trend(stored), lang="zh"),
    "plot_live": lambda: plots.plot_live(live, lang="zh"),
    "plot_hbars": lambda: plots.plot_hbars({"不加防护": 0.4, "全部防护": 0.9}, title="消融", xlabel="成功率",
                                           tone={"不加防护": "bad"}, line=(0.5, "目标"), lang="zh"),
}
if True:
    for name, draw in drawn.items():
        if sys.argv[1] == "shipped" or name in ("plot_bars", "plot_herd"):
            draw()
    with plots.cjk_fonts():  # the notebooks' own figures
        plt.subplots()[1].set_title("工具调用（估计）")
    for num in plt.get_fignums():
        plt.figure(num).canvas.draw()
recording.__exit__(None, None, None)
print(json.dumps({"families": plots._font_families(), "drawn": sorted(drawn),
                  "warnings": [str(w.message) for w in caught], "logged": logged}, ensure_ascii=False))
'''


def _fontless(tmp_path, mode: str) -> dict:
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path / "mpl"), "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", FONTLESS, mode], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_chinese_plot_renders_with_no_system_font(tmp_path):
    from conftest import skip_or_fail

    from agentlab import resources
    from agentlab.workbook import plots
    if not any(p not in resources.CJK_SYSTEM_FILES for p in resources.CJK_FILES):
        skip_or_fail(f"the workbook's Chinese font is not installed: {resources.CJK_INSTALL}")
    out = _fontless(tmp_path, "shipped")
    assert set(out["drawn"]) == {n for n in plots.__all__ if n.startswith(("plot_", "compare_plot"))}, "a new plot: draw it here"
    assert out["families"][:2] == ["DejaVu Sans", "Noto Sans SC"]
    missing = [m for m in out["warnings"] + out["logged"] if "missing" in m.lower() or "glyph" in m.lower()]
    assert not missing, missing[:5]
    assert not [m for m in out["warnings"] if "pip install" in m]


def test_with_no_chinese_font_at_all_the_notice_comes_once_with_the_fix(tmp_path):
    from agentlab.resources import CJK_INSTALL
    out = _fontless(tmp_path, "none")
    assert out["families"] == ["DejaVu Sans"]
    notices = [m for m in out["warnings"] if CJK_INSTALL in m]
    assert len(notices) == 1, out["warnings"]
    assert "Chinese" in notices[0] and "中文" in notices[0]  # both languages of the pair, one line


@pytest.mark.parametrize("lang, yes, no", [("en", "yes", "no"), ("zh", "是", "否")])
def test_a_table_says_a_flag_in_words_and_a_record_as_json(lang, yes, no):
    """A cell holding True or a dict was shown as Python writes it (notebook 16: True, {'scope': 'global'})."""
    import re

    import pandas as pd

    from agentlab.workbook.plots import table_view
    df = pd.DataFrame([{"tool": "a", "readOnly": True, "key from": {"fields": ["order_id"], "scope": "global"}},
                       {"tool": "b", "readOnly": False, "key from": None}])
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table_view(df, lang=lang).to_html())
    assert cells[1] == yes and cells[4] == no and "\"scope\": \"global\"" in cells[2], cells
    assert not any(c in ("True", "False") or "'" in c for c in cells), cells


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_long_group_names_under_stacked_bars_do_not_overlap(lang):
    """Notebook 09's final statuses of four groups ("17 个用例：qwen2.5-coder-0.5b"...) were drawn over each other."""
    import matplotlib
    matplotlib.use("Agg")
    from agentlab.workbook.plots import plot_statuses
    names = [f"17 cases: qwen2.5-coder-{n}" for n in ("0.5b", "1.5b")] + ["17 cases: fake model, the same cases",
                                                                          "17 cases: scripted again"]
    ax = plot_statuses({n: {"done": 10, "escalated": 7} for n in names}, lang=lang)
    fig = ax.figure
    fig.set_size_inches(5, 3.4)
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    boxes = [tl.get_window_extent(renderer) for tl in ax.get_xticklabels() if tl.get_text()]
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_a_series_a_group_lacks_is_no_bar_and_no_zero_in_the_words():
    # the routing figure: the all-tools rows have no router hit rate; it was drawn as a bar of 0 and said as "0"
    ax = plot_bars({"all tools": {"right_tool_rate": 0.5}, "routed": {"right_tool_rate": 0.5, "hit_rate": 0.96}})
    words = str(ax._agentlab_text_equivalent)
    assert "hit_rate —" in words and "hit_rate 0.96" in words and "hit_rate 0 " not in words
    heights = [p.get_height() for p in ax.patches]
    assert sum(h != h for h in heights) == 1 and 0 not in heights  # one bar left out (NaN), none drawn at 0
