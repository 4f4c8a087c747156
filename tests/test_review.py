"""The weekly review's verify step (docs/metrics.md#the-weekly-bad-case-review): two stored runs compared class
by class on the cases both ran, and the headline numbers of stored runs in the order they were stored."""
import json
from collections import Counter
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")  # tests only; never exported to notebook kernels

import matplotlib.pyplot as plt
import pytest

from agentlab.evals import STAGES, auto_tag, compare_runs, load_cases, load_results, metrics_row, run_suite, save_results, trend
from agentlab.evals.outcome import OUTCOMES
from agentlab.guards import GuardConfig
from agentlab.workbook.plots import plot_comparison, plot_trend

N = 24  # the first N shipped after-sales cases: the naive loop fails several of them, at more than one stage


@pytest.fixture(scope="module")
def cases():
    return load_cases()[:N]


@pytest.fixture(scope="module")
def runs(cases, tmp_path_factory):
    """The naive loop (before) and the guarded loop (after), each stored, with the results as they were run."""
    folder = tmp_path_factory.mktemp("runs")
    naive = run_suite(cases, loop="naive", store=folder, label="naive")
    guarded = run_suite(cases, store=folder, label="guarded")
    by_label = {load_results(p).meta["label"]: p for p in folder.iterdir()}
    return {"naive": (by_label["naive"], naive), "guarded": (by_label["guarded"], guarded)}


def expected_rows(before, after):
    """What the table must say, counted here from auto_tag and the graded outcome of each result as it was run."""
    out = []
    for kind, names, key in (("stage", ["ok", *STAGES], auto_tag), ("outcome", list(OUTCOMES), lambda r: r.outcome)):
        cb, ca = Counter(map(key, before)), Counter(map(key, after))
        out += [(kind, n, cb[n], ca[n]) for n in names]
    return out


def test_the_comparison_counts_each_class_as_auto_tag_and_the_grader_do(runs):
    (before_path, naive), (after_path, guarded) = runs["naive"], runs["guarded"]
    failing_stages = {auto_tag(r) for r in naive} - {"ok"}
    assert len(failing_stages) >= 2, "the fixture must fail at more than one stage for this test to mean anything"
    cmp = compare_runs(before_path, after_path)
    assert (cmp.before, cmp.after, cmp.n_before, cmp.n_after) == ("naive", "guarded", N, N)
    assert [(r["kind"], r["class"], r["before"], r["after"]) for r in cmp.rows] == expected_rows(naive, guarded)
    for r in cmp.rows:
        assert r["change"] == r["after"] - r["before"]
        assert r["before_share"] == pytest.approx(r["before"] / N) and r["after_share"] == pytest.approx(r["after"] / N)
        assert r["share_change"] == pytest.approx(r["after_share"] - r["before_share"])
    for kind in ("stage", "outcome"):  # every session is in exactly one class of each kind
        assert sum(r["before"] for r in cmp.rows if r["kind"] == kind) == N
    want_b, want_a = metrics_row(naive), metrics_row(guarded)
    assert [m["metric"] for m in cmp.metrics] == ["task_success_rate", "invalid_call_rate", "avg_steps", "takeover_rate"]
    for m in cmp.metrics:
        assert m["before"] == pytest.approx(want_b[m["metric"]]) and m["after"] == pytest.approx(want_a[m["metric"]])
        assert m["change"] == pytest.approx(m["after"] - m["before"])
    failed_naive = tuple(r.case_id for r in naive if not r.passed)
    assert all(r.passed for r in guarded) and failed_naive
    assert cmp.fixed == failed_naive and cmp.broken == ()
    back = compare_runs(load_results(after_path), load_results(before_path))  # the other way round: a regression
    assert back.broken == failed_naive and back.fixed == ()
    assert cmp.only_before == cmp.only_after == ()


def test_cases_only_in_one_run_are_named_and_counted_nowhere_else(cases, runs, tmp_path):
    before_path, naive = runs["naive"]
    shifted = load_cases()[3:N + 2]  # drops the first three cases, adds two after them
    after = run_suite(shifted, store=tmp_path, label="shifted")
    cmp = compare_runs(before_path, next(tmp_path.iterdir()))
    assert cmp.only_before == tuple(c.id for c in cases[:3])
    assert cmp.only_after == tuple(c.id for c in shifted[-2:])
    assert cmp.n_before == cmp.n_after == N - 3
    common = {c.id for c in cases[3:]}
    assert [(r["kind"], r["class"], r["before"], r["after"]) for r in cmp.rows] == expected_rows(
        [r for r in naive if r.case_id in common], [r for r in after if r.case_id in common])
    assert cmp.metrics[0]["before"] == pytest.approx(metrics_row([r for r in naive if r.case_id in common])["task_success_rate"])
    as_lists = compare_runs(naive, after)  # graded results in memory compare the same way, labelled before/after
    assert (as_lists.before, as_lists.after) == ("before", "after") and as_lists.rows == cmp.rows


def test_every_trial_is_counted_and_a_case_is_fixed_only_when_every_trial_passes(cases):
    bad = next(r for r in run_suite(cases, loop="naive") if not r.passed)
    good = next(r for r in run_suite(cases) if r.case_id == bad.case_id)
    assert good.passed
    before = [replace(bad, trial=0), replace(bad, trial=1)]
    for after in ([replace(good, trial=0), replace(bad, trial=1)], [replace(bad, trial=0), replace(good, trial=1)]):
        half = compare_runs(before, after)
        assert half.n_before == half.n_after == 2 and half.fixed == half.broken == ()
        assert next(r for r in half.rows if r["class"] == "ok")["after"] == 1
    whole = compare_runs(before, [replace(good, trial=0), replace(good, trial=1)])
    assert whole.fixed == (bad.case_id,)


def stored_at(results, folder, label, when):
    return save_results(results, folder, label=label, meta={"time": when})


def test_trend_orders_runs_by_their_stored_time_and_uses_metrics_row(cases, tmp_path):
    weeks = {"week1": run_suite(cases, loop="naive"), "week2": run_suite(cases, config=GuardConfig(validate=False)),
             "week3": run_suite(cases)}
    times = {"week1": "2025-06-02T09:00:00+08:00",
             "week2": "2025-06-09T08:00:00+08:00",  # 00:00 UTC: before week3 in time, after it as text
             "week3": "2025-06-09T07:00:00+00:00"}
    paths = {w: stored_at(rs, tmp_path, w, times[w]) for w, rs in weeks.items()}
    rows = trend([paths["week3"], load_results(paths["week1"]), str(paths["week2"])])  # any order, paths or runs
    assert [r["label"] for r in rows] == ["week1", "week2", "week3"]
    assert [r["time"] for r in rows] == [times[w] for w in ("week1", "week2", "week3")]
    for r in rows:
        want = metrics_row(weeks[r["label"]])
        assert set(r) == {"time", "label", "code_version", "task_success_rate", "invalid_call_rate", "takeover_rate", "n"}
        assert r["n"] == N and r["code_version"]
        for m in ("task_success_rate", "invalid_call_rate", "takeover_rate"):
            assert r[m] == pytest.approx(want[m]), (r["label"], m)
    assert len({r["task_success_rate"] for r in rows}) == 3, "the three weeks must differ for the order to be tested"


def test_runs_stored_one_after_another_keep_their_order_in_the_trend(cases, tmp_path):
    first = save_results(run_suite(cases[:2]), tmp_path, label="z-first")  # a label that sorts last
    second = save_results(run_suite(cases[:2]), tmp_path, label="a-second")
    assert [r["label"] for r in trend([second, first])] == ["z-first", "a-second"]


def test_a_run_with_no_time_cannot_be_placed_in_a_trend(cases, tmp_path):
    path = save_results(run_suite(cases[:1]), tmp_path, label="x")
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    (path / "meta.json").write_text(json.dumps({**meta, "time": ""}), encoding="utf-8")
    with pytest.raises(ValueError, match="no usable time"):
        trend([path])


def test_plot_comparison_draws_a_pair_of_bars_per_class_seen(runs):
    cmp = compare_runs(runs["naive"][0], runs["guarded"][0])
    seen = [r for r in cmp.rows if r["before"] or r["after"]]
    ax = plot_comparison(cmp)
    assert len(ax.patches) == 2 * len(seen)
    assert [round(p.get_height(), 6) for p in ax.patches] == [round(r[s + "_share"], 6) for s in ("before", "after")
                                                              for r in seen]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["before: naive", "after: guarded"]
    assert "passed" in [t.get_text() for t in ax.get_xticklabels()]
    stages = plot_comparison(cmp, kind="stage")
    assert len(stages.patches) == 2 * len([r for r in seen if r["kind"] == "stage"])
    zh = plot_comparison(cmp, lang="zh")
    labels = [t.get_text() for t in zh.get_xticklabels()]
    assert "通过" in labels and "正确" in labels and "passed" not in labels
    assert [t.get_text() for t in zh.get_legend().get_texts()] == ["修复前：朴素循环", "修复后：防护循环"]
    assert "修复前后" in zh.get_title() and "比例" in zh.get_ylabel()
    plt.close("all")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_comparisons_table_names_each_class_as_its_plot_does(runs, lang):
    """The table said 转人工 where the plot beside it said 已转人工，没有写错数据, for the same class and count."""
    cmp = compare_runs(runs["naive"][0], runs["guarded"][0])
    seen = [r for r in cmp.shown_rows(lang) if r["before"] or r["after"]]
    ax = plot_comparison(cmp, lang=lang)
    assert [r["class"] for r in seen] == [t.get_text() for t in ax.get_xticklabels()]
    assert any(r["kind"] == "outcome" for r in seen)
    plt.close("all")


def test_plot_trend_draws_the_three_curves(cases, tmp_path):
    paths = [save_results(run_suite(cases, loop=loop), tmp_path, label=loop) for loop in ("naive", "guarded")]
    rows = trend(paths)
    ax = plot_trend(rows)
    assert len(ax.lines) == 3
    assert [list(line.get_ydata()) for line in ax.lines] == [[r[m] for r in rows] for m in
                                                             ("task_success_rate", "invalid_call_rate", "takeover_rate")]
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["naive", "guarded"]
    zh = plot_trend(rows, lang="zh")
    assert [t.get_text() for t in zh.get_legend().get_texts()] == ["任务成功率", "无效调用率", "人工接管率"]
    assert "从早到晚" in zh.get_xlabel()
    plt.close("all")


# --- tagging by cause: a crash is tagged by what went wrong, never as the model's doing ----------------------
def _crashing(code: str):
    """A model whose API fails with ``code`` on the first turn (a 429, a 500, a dead key...)."""
    from agentlab.models.interface import ModelError

    class Down:
        name = "down"

        def complete(self, messages, tools):
            raise ModelError(code, f"{code} on purpose")
    return Down()


def _graded(run):
    from agentlab.evals.suite import CaseResult
    return CaseResult("x", "adversarial", 0, run, False, ("failed on purpose",), {})


def _session(model, loop, *, history=None):
    from agentlab import MemoryStore, run_guarded, run_naive
    from agentlab.scenarios import aftersales
    _, reg = aftersales.SCENARIO.setup()
    if loop == "naive":
        return run_naive(model, reg, "Refund A1001.", history=history)
    return run_guarded(model, reg, "Refund A1001.", history=history, store=MemoryStore(), sleep=lambda s: None)


@pytest.mark.parametrize("loop", ["naive", "guarded"])
@pytest.mark.parametrize("code,stage", [("RATE_LIMITED", "execution"), ("UNAVAILABLE", "execution"),
                                        ("TIMEOUT", "execution"), ("UNAUTHENTICATED", "execution")])
def test_an_api_failure_is_tagged_by_its_class_not_as_semantic(loop, code, stage):
    from agentlab.errors import CODES
    from agentlab.evals import tag_cause
    assert CODES[code][1] == stage  # the one definition: the code's own record
    run = _session(_crashing(code), loop)
    assert run.status == ("failed" if loop == "naive" else "escalated")
    assert tag_cause(_graded(run)) == (stage, code)
    assert auto_tag(_graded(run)) == stage


@pytest.mark.parametrize("loop", ["naive", "guarded"])
def test_a_history_the_api_refused_is_tagged_by_its_stage(loop):
    from agentlab.evals import tag_cause
    from agentlab.models import DatedModel, ScriptedModel, say
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "{}"}]
    run = _session(DatedModel(ScriptedModel([say("ok")])), loop, history=orphan)
    assert tag_cause(_graded(run)) == ("structure", "BAD_REQUEST")


@pytest.mark.parametrize("loop", ["naive", "guarded"])
def test_a_context_overflow_is_tagged_by_its_stage(loop):
    from agentlab.evals import tag_cause
    from agentlab.models import DatedModel, ScriptedModel, say
    run = _session(DatedModel(ScriptedModel([say("ok")]), context_window=10), loop)
    assert tag_cause(_graded(run)) == ("execution", "CONTEXT_TOO_LONG")


def test_a_turn_refused_before_it_was_sent_is_tagged_by_the_error_its_end_carries():
    """Only the end of the run records it (nothing was sent): it is still the cause, not the model."""
    from agentlab.evals import tag_cause
    from agentlab.runs import Run
    from agentlab.trace import Event
    end = Event(run_id="r", session_id="s", turn_id=1, round_index=0, kind="end", loop="guarded",
                final_status="escalated", error_code="CONTEXT_TOO_LONG", error_category="fatal",
                error_stage="execution")
    run = Run("r", "guarded", "m", "escalated", "context too long", "", 0, (end,), (), "")
    assert tag_cause(_graded(run)) == ("execution", "CONTEXT_TOO_LONG")


def test_the_naive_suite_tags_its_crashes_by_their_cause():
    """The shipped cases the naive loop crashes on (a 429, a 500, a dead key): each tagged where it happened."""
    from agentlab.evals import load_cases, run_suite, tag_cause
    by_id = {c.id: c for c in load_cases()}
    results = run_suite([by_id[i] for i in ("adv-rate-limited", "adv-api-down", "adv-bad-key")], loop="naive")
    assert [r.run.status for r in results] == ["failed"] * 3
    assert [tag_cause(r) for r in results] == [("execution", "RATE_LIMITED"), ("execution", "UNAVAILABLE"),
                                               ("execution", "UNAUTHENTICATED")]
