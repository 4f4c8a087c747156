import matplotlib

matplotlib.use("Agg")  # tests only; never exported to notebook kernels

from agentlab.workbook.plots import (plot_bars, plot_herd, plot_lines, plot_matrix, plot_pass_k, plot_retry_schedule, plot_shares, plot_statuses)  # noqa: E402
from agentlab.retry import RetryPolicy  # noqa: E402


def test_each_plot_takes_an_ax_or_makes_one_and_returns_it():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    assert plot_bars({"a": {"naive": 1, "guarded": 2}}, ax=ax) is ax and len(ax.patches) == 2
    assert len(plot_statuses({"x": {"done": 3, "escalated": 1}}).patches) == 2
    assert plot_retry_schedule(RetryPolicy(max_retries=3), clients=5).collections
    ax = plot_herd({"none": RetryPolicy(jitter="none"), "full": RetryPolicy()})
    assert "served" in ax.get_legend().get_texts()[0].get_text()
    assert plot_matrix({"f": {"naive": "failed", "guarded": "done"}}).images
    assert len(plot_shares({"structure": 3, "execution": 1}).patches) == 2
    assert plot_lines({"naive": [(1, 0.5), (2, 0.3)]}).lines and plot_pass_k({"g": [(1, 1.0)]}).get_ylim()[1] > 1
    plt.close("all")


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
