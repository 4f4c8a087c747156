"""agentlab.evals.monitor: the three live curves over a stream of runs, reference lines, one alert per crossing."""
import logging

import matplotlib
import pytest

matplotlib.use("Agg")  # tests only

import itertools

from agentlab.evals.metrics import summarize
from agentlab.evals.monitor import CURVES, LINES, LiveCurves, RefLine
from agentlab.runs import Run
from agentlab.trace import Event


def run(status="done", invalid=0, calls=1):
    """A run as the curves see it: its status, and tool calls of which ``invalid`` the model got wrong."""
    events = tuple(Event("r", "s", 1, 1, "tool", tool_name="t", parse_ok=True, validate_ok=i >= invalid)
                   for i in range(calls))
    return Run("r", "guarded", "m", status, "", "", 1, events, ())


def test_the_curves_are_the_one_definition_of_the_metrics():
    runs = [run(), run("escalated", invalid=1), run(invalid=1, calls=3), run("budget_exhausted")]
    ok = [True, False, True, False]
    curves = LiveCurves(window=4)
    for i, (r, s) in enumerate(zip(runs, ok, strict=True)):
        curves.add(r, at=float(i), success=s)
    want = summarize(runs, lambda r: ok[runs.index(r)])
    assert curves.points[-1].values == {m: want[m] for m in CURVES}


def test_a_crossing_fires_once_and_a_return_rearms_it(caplog):
    seen = []
    curves = LiveCurves([RefLine("takeover_rate", 0.2, "above")], window=5, on_alert=seen.append)
    stream = ["done"] * 5 + ["escalated"] * 4 + ["done"] * 8 + ["escalated"] * 3
    with caplog.at_level(logging.WARNING, logger="agentlab.monitor"):
        for i, status in enumerate(stream):
            curves.add(run(status), at=float(i))
    values = [p.values["takeover_rate"] for p in curves.points]
    crossings = sum(1 for a, b in itertools.pairwise(values) if a <= 0.2 < b)
    assert crossings == 2 and len(seen) == 2 == len(curves.alerts)  # the curve stayed above 0.2 for many runs
    assert [r.getMessage() for r in caplog.records] == [a.text() for a in seen]
    assert "human takeover rate" in caplog.records[0].getMessage() and "above" in caplog.records[0].getMessage()


def test_hysteresis_a_curve_hovering_at_its_line_alerts_once():
    line = RefLine("invalid_call_rate", 0.5, "above")
    hover = [3, 2, 3, 2, 3]  # of 5 calls: the curve swings 0.6, 0.4, 0.6, 0.4, 0.6 around its line
    plain, damped = LiveCurves([line], window=1), LiveCurves([line], window=1, margin=0.2)
    for i, bad in enumerate(hover):
        plain.add(run(invalid=bad, calls=5), at=float(i))
        damped.add(run(invalid=bad, calls=5), at=float(i))
    assert len(plain.alerts) == 3 and len(damped.alerts) == 1  # re-armed only below 0.5 - 0.2


def test_time_buckets_make_one_point_per_bucket_and_the_first_bad_bucket_alerts():
    curves = LiveCurves([RefLine("task_success_rate", 0.9, "below")], bucket_s=60, correct=lambda r: r.status == "done")
    for at, status in [(0, "done"), (10, "done"), (70, "done"), (80, "escalated"), (130, "escalated"), (190, "done")]:
        curves.add(run(status), at=float(at))
    curves.flush()
    assert [(p.at, p.runs, p.values["task_success_rate"]) for p in curves.points] == \
        [(0.0, 2, 1.0), (60.0, 2, 0.5), (120.0, 1, 0.0), (180.0, 1, 1.0)]
    assert [a.point.at for a in curves.alerts] == [60.0]


def test_without_a_grader_success_is_not_graded_and_never_alerts():
    curves = LiveCurves(window=1)
    curves.add(run("escalated"), at=0.0)
    assert [a.line.metric for a in curves.alerts] == ["takeover_rate"]


def test_default_lines_are_the_starting_points_one_per_curve():
    assert [line.metric for line in LINES] == list(CURVES)
    assert [line.bad for line in LINES] == ["below", "above", "above"]


def test_the_alert_is_said_in_chinese():
    curves = LiveCurves([RefLine("takeover_rate", 0.1, "above")], window=1, lang="zh")
    (alert,) = curves.add(run("escalated"), at=0.0)
    assert "人工接管率" in alert.text("zh") and "高于" in alert.text("zh")


@pytest.mark.parametrize("kw", [{"window": 0}, {"bucket_s": 0}, {"margin": -1}])
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        LiveCurves(**kw)


def test_the_plot_draws_dashed_reference_lines_and_rings_the_crossings():
    from agentlab.workbook.plots import plot_live
    curves = LiveCurves(window=2)
    for i, status in enumerate(["done", "done", "escalated", "escalated", "done"]):
        curves.add(run(status), at=float(i), success=status == "done")
    for lang in ("en", "zh"):
        ax = plot_live(curves, lang=lang)
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert sorted(ln.get_ydata()[0] for ln in dashed) == sorted(line.value for line in LINES)
        assert len(ax.collections) == 1 and len(ax.collections[0].get_offsets()) == len(curves.alerts) > 0
    assert "参考线" in " ".join(t.get_text() for t in ax.get_legend().get_texts())
