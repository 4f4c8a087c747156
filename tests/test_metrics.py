from math import comb

from agentlab.evals.metrics import failure_breakdown, layers, pass_hat_k, status_shares, summarize
from agentlab.workbook.demo import compare_loops


def test_pass_hat_k_is_taubench_estimator():
    data = [(3, 5), (5, 5), (0, 5)]
    for k in (1, 2, 3):
        assert abs(pass_hat_k(data, k) - sum(comb(c, k) / comb(5, k) for c, _ in data) / 3) < 1e-12
    assert pass_hat_k([(2, 4)], 1) == 0.5 and pass_hat_k([(4, 4)], 4) == 1.0


def test_the_four_headline_numbers():
    comparisons = [compare_loops("camel_case"), compare_loops("api_401")]
    runs = [c.guarded for c in comparisons]
    graded = {c.guarded.run_id: c.guarded_verdict.passed for c in comparisons}
    s = summarize(runs, lambda run: graded[run.run_id])
    assert s["runs"] == 2 and s["task_success_rate"] == 0.5 and s["takeover_rate"] == 0.5
    assert 0 < s["invalid_call_rate"] < 1


def test_without_a_grader_success_is_not_claimed():
    """A run's own "done" is not a success: ungraded, the rate is unknown, and only 'finished' is counted."""
    from agentlab.models import ScriptedModel
    thanks = compare_loops("api_429", model=lambda: ScriptedModel(["Thank you for the refund!"])).guarded
    s = summarize([thanks])
    assert s["task_success_rate"] != s["task_success_rate"] and s["finished_rate"] == 1.0


def test_layers_and_rule_blocked_apart():
    runs = [compare_loops(f).guarded for f in ("camel_case", "truncated_json", "api_401")]
    lay = layers(runs)
    assert lay["model"]["json_parse_rate"] < 1 and lay["task"]["completion_rate"] == 2 / 3
    runs.append(compare_loops("duplicate_call").guarded)
    fb = failure_breakdown(runs)
    assert fb["by_stage"]["structure"] >= 2 and "rule_blocked" not in fb["by_stage"]
    assert abs(sum(status_shares(runs).values()) - 1) < 1e-9


TRANSIENT_FAULTS = ("api_429", "api_timeout", "api_500", "flaky_tool", "hanging_tool")


def test_a_transient_failure_a_resend_fixed_is_still_counted_as_transient():
    """Notebook 08's "by retry class": what went wrong, fixed or not (no transient bar for 5 faults)."""
    from agentlab.evals.metrics import by_taxonomy, failure_breakdown
    for fault in TRANSIENT_FAULTS:
        run = compare_loops(fault).guarded
        assert run.status == "done" and not any(e.error_code for e in run.events), fault  # fixed by a resend
        assert by_taxonomy([run])["category"] == {"transient": 1}, fault
        assert by_taxonomy([run])["stage"] == {"execution": 1}, fault
        assert failure_breakdown([run])["by_category"] == {"transient": 1}, fault
    clean = compare_loops("camel_case").guarded
    assert by_taxonomy([clean])["category"] == {"validation": 1}  # an error code is counted by its own class


def test_the_sentence_beside_the_shares_plot_says_the_plotted_counts():
    """Notebook 08: the printed counts and the bars come from the same data, in both languages."""
    import re

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentlab.evals.metrics import by_taxonomy, went_wrong_text
    from agentlab.i18n import t
    from agentlab.models.faults import FAULTS
    from agentlab.workbook.plots import plot_shares
    tax = by_taxonomy([compare_loops(f).guarded for f in FAULTS])
    assert tax["category"]["transient"] >= len(TRANSIENT_FAULTS)
    for kind in ("category", "stage"):
        ax = plot_shares(dict(tax[kind]))
        bars = {label.get_text(): int(re.search(r"\((\d+)\)", text.get_text()).group(1))
                for label, text in zip(ax.get_yticklabels(), ax.texts, strict=True)}
        assert bars == dict(tax[kind])
        for lang in ("en", "zh"):
            line = went_wrong_text(tax[kind], lang)
            assert re.search(r"\d+", line).group() == str(sum(bars.values()))
            for name, count in bars.items():
                shown = t(f"class.{name}" if kind == "category" else f"stage.{name}", lang)
                assert f"{shown} {count}" in line, (lang, name, line)
        plt.close("all")


def test_routing_hit_and_miss_rates_are_read_from_the_trace():
    """Live traffic has no labels: the trace records what each turn offered, the calls say what it needed, and
    the hit rate is routing_metrics' own definition over those turns (a JSONL round trip keeps the field)."""
    import math

    from agentlab import run_guarded
    from agentlab.evals.metrics import routing_from_trace, routing_turns
    from agentlab.models import ScriptedModel, call, say
    from agentlab.routing import routing_metrics
    from agentlab.scenarios import aftersales
    from agentlab.trace import read_jsonl, to_jsonl
    _desk, reg = aftersales.SCENARIO.setup("en")
    script = [call("get_order", {"order_id": "A1001"}), call("search_orders", {"phone": "13800138000"}), say("ok")]
    run = run_guarded(ScriptedModel(script), reg, "where is A1001?", offer=lambda _m: ["get_order"])
    models = [e for e in run.events if e.kind == "model"]
    assert [e.offered for e in models] == ["get_order"] * 3
    figures = routing_from_trace(run.events)
    assert figures["turns"] == 2 and figures["hit_rate"] == 0.5 and figures["miss_rate"] == 0.5  # search_orders missed
    assert figures["hit_rate"] == routing_metrics(routing_turns(run.events))["hit_rate"]
    every = run_guarded(ScriptedModel(script), reg, "where is A1001?")  # no router: every tool shown, every call a hit
    assert routing_from_trace(every.events)["hit_rate"] == 1.0
    assert set(every.events[0].offered.split(",")) == {t.name for t in reg}
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        assert routing_from_trace(read_jsonl(to_jsonl(run.events, f"{d}/t.jsonl"))) == figures
    assert math.isnan(routing_from_trace([])["hit_rate"])


def test_health_lines_are_starting_points_on_either_side():
    from agentlab.evals.metrics import HEALTH_LINES, crosses, summarize
    assert {"task_success_rate", "invalid_call_rate", "takeover_rate"} <= set(HEALTH_LINES)
    assert set(HEALTH_LINES) <= set(summarize([])) | {"self_correction_rate", "hit_rate"}
    assert all(line["bad"] in ("below", "above") for line in HEALTH_LINES.values())
    assert crosses("task_success_rate", 0.5) and not crosses("task_success_rate", 0.99)
    assert crosses("invalid_call_rate", 0.5) and not crosses("invalid_call_rate", 0.0)
    assert not crosses("task_success_rate", float("nan")) and not crosses("no such metric", 1.0)

def test_tally_counts_a_stream_as_summarize_does():
    """The headline numbers of a stream too long to hold (review --logs) come from the one definition:
    runs added one at a time give summarize's numbers; success only over the runs someone graded."""
    from agentlab.evals.metrics import Tally
    from agentlab.runs import Run
    runs = [Run(str(i), "guarded", "m", s, "", "", 2, (), ()) for i, s in
            enumerate(["done", "escalated", "done_after_self_correction", "budget_exhausted"])]
    tally = Tally()
    for r, verdict in zip(runs, [True, None, False, None], strict=True):
        tally.add(r, verdict)
    got, want = tally.summary(), summarize(runs)
    graded = ("task_success_rate", "checked_success_rate")
    assert {k: v for k, v in got.items() if k not in graded} == {k: v for k, v in want.items() if k not in graded} \
        | {"invalid_call_rate": got["invalid_call_rate"]}  # (runs of no call: NaN both, which == cannot say)
    assert got["invalid_call_rate"] != got["invalid_call_rate"] and want["invalid_call_rate"] != want["invalid_call_rate"]
    assert got["task_success_rate"] == got["checked_success_rate"] == 0.5  # one of the two graded runs
    assert summarize(runs, lambda r: r.status == "done")["task_success_rate"] == 0.25


def test_the_right_tool_rate_is_the_tool_the_case_needs_not_any_tool_that_exists():
    """A run that looks the order up and never refunds named a tool that exists (the old "right tool", 100%) and
    not the tool its case needs: the right-tool rate is 0 of 1, the known-tool rate keeps the old meaning."""
    from agentlab.evals import load_cases, run_case
    from agentlab.evals.metrics import right_tool
    from agentlab.models import ScriptedModel, call
    case = next(c for c in load_cases() if c.id == "normal-01")
    assert case.needed_tools == ("create_refund",)
    looked = run_case(case, model=ScriptedModel([call("get_order", {"order_id": "A1001"}), "Looked it up."])).run
    refunded = run_case(case).run
    undeclared = run_case(case).run  # a run of a case that declares nothing
    needs = {looked.run_id: case.needed_tools, refunded.run_id: case.needed_tools, undeclared.run_id: None}
    lay = layers([looked, refunded, undeclared], needed_tools=lambda r: needs[r.run_id])
    assert lay["model"]["known_tool_rate"] == 1.0
    assert lay["model"]["right_tool_rate"] == 0.5  # of the two runs whose case declares it; chit-chat is left out
    assert right_tool([looked, refunded, undeclared], lambda r: needs[r.run_id]) == {
        "right_tool_rate": 0.5, "declared": 2, "runs": 3}
    assert layers([looked])["model"]["right_tool_rate"] != layers([looked])["model"]["right_tool_rate"]  # NaN


def test_every_case_that_declares_its_tools_names_tools_its_desk_has():
    from agentlab.evals import load_cases
    from agentlab.resources import data_file
    from agentlab.scenarios import get
    for suite, least in (("aftersales_cases.jsonl", 52), ("expense_cases.jsonl", 54)):
        cases = load_cases(data_file(suite))
        assert sum(bool(c.needed_tools or c.avoided_tools) for c in cases) >= least, suite
        for c in cases:
            _, reg = get(c.scenario).setup()
            assert set(c.needed_tools) | set(c.avoided_tools) <= set(reg.names), (c.id, c.needed_tools)
            assert not set(c.needed_tools) & set(c.avoided_tools), c.id


def test_a_case_that_must_not_write_counts_in_the_right_tool_rate_and_asking_for_the_write_is_wrong():
    """The 18 after-sales cases whose right ending is to refuse or hand over declared nothing: a naive run that
    refunded a shipped order was left out, and the naive loop read 88.2% right beside 12 refunds it should not have
    made. Asking for the write counts as the wrong choice, refused by a guard or not."""
    from agentlab.evals import load_cases, run_case, run_suite
    from agentlab.evals.metrics import called_needed, right_tool
    from agentlab.models import ScriptedModel, call
    case = next(c for c in load_cases() if c.id == "boundary-not-refundable-1")
    assert case.avoided_tools == ("create_refund",) and not case.needed_tools
    order = case.fake["plan"][0][1]["order_id"] if case.fake.get("plan") else "A1015"
    asked = run_case(case, model=ScriptedModel([call("create_refund", {"order_id": order, "amount": 10,
                                                                      "reason": "user_cancel"}), "Done."])).run
    left = run_case(case, model=ScriptedModel(["I cannot refund that order; a colleague will help."])).run
    assert not called_needed(asked, (), case.avoided_tools) and called_needed(left, (), case.avoided_tools)
    assert right_tool([asked, left], lambda r: None, lambda r: case.avoided_tools) == {
        "right_tool_rate": 0.5, "declared": 2, "runs": 2}
    # both needed and avoided: the needed tool called and the avoided one too is wrong
    both = next(c for c in load_cases() if c.id == "normal-01")
    refunded = run_case(both).run
    assert called_needed(refunded, both.needed_tools) and not called_needed(refunded, both.needed_tools, ("create_refund",))
    cases = load_cases()
    naive = run_suite(cases, loop="naive")
    by = {c.id: c for c in cases}
    rate = right_tool([r.run for r in naive], lambda run: None, None)["right_tool_rate"]
    assert rate != rate  # NaN: nothing declared
    runs = {r.run.run_id: by[r.case_id] for r in naive}
    got = right_tool([r.run for r in naive], lambda run: runs[run.run_id].needed_tools or None,
                     lambda run: runs[run.run_id].avoided_tools or None)
    assert got["declared"] == 52 and got["right_tool_rate"] < 0.8, got


def test_two_ways_to_count_success_and_takeover():
    """The workbook's success counts a correct hand-over and its takeover leaves a crash out; the stricter two count
    only what finished with the right data, and every run that did not finish as a takeover."""
    from agentlab.evals import load_cases, run_suite
    from agentlab.evals.metrics import checked_success_rate, unfinished_rate
    from agentlab.runs import Run
    hand_over, crash = (Run(s, "guarded", "", s, "", "", 1, (), ()) for s in ("escalated", "failed"))
    s = summarize([hand_over, crash], lambda r: r.status == "escalated")
    assert (s["task_success_rate"], s["takeover_rate"]) == (0.5, 0.5)
    assert (s["checked_success_rate"], s["unfinished_rate"]) == (0.0, 1.0)
    cases = load_cases("data/aftersales_cases.jsonl")
    for loop, want in (("naive", (44.2, 7.7, 44.2, 19.2)), ("guarded", (100.0, 36.5, 63.5, 36.5))):
        results = run_suite(cases, loop=loop, progress=False)
        ok = {r.run.run_id: r.passed for r in results}
        runs = [r.run for r in results]
        s = summarize(runs, lambda run, ok=ok: ok[run.run_id])
        got = tuple(round(100 * s[k], 1) for k in ("task_success_rate", "takeover_rate", "checked_success_rate", "unfinished_rate"))
        assert got == want, loop
        assert round(100 * checked_success_rate(runs, lambda run, ok=ok: ok[run.run_id]), 1) == want[2]
        assert round(100 * unfinished_rate(runs), 1) == want[3]


def test_a_rate_of_calls_over_runs_that_made_none_is_not_measured_not_zero():
    """Against a model that only answered in words, eval printed json_parse 0.0%, schema_valid 0.0%, exec_success 0.0%,
    invalid-call 0.0% and latency 0.00: rates of nothing, read as the worst (or the best) figure there is."""
    import math

    from agentlab.runs import Run
    runs = [Run("1", "guarded", "m", "done", "", "Hello.", 1, (), ())]
    lay = layers(runs)
    for layer, metric in (("model", "json_parse_rate"), ("model", "schema_valid_rate"), ("model", "known_tool_rate"),
                          ("tool", "exec_success_rate"), ("tool", "latency_p50_ms"), ("tool", "latency_p95_ms"),
                          ("tool", "retries_per_call")):
        assert math.isnan(lay[layer][metric]), (layer, metric)
    assert math.isnan(summarize(runs)["invalid_call_rate"]) and summarize(runs)["avg_steps"] == 1


def test_the_right_tool_rates_definition_is_the_one_it_counts_by():
    """Notebook 10's layer table defined the right-tool rate by the needed tools alone, beside a figure that counts
    the tools a case must leave alone too."""
    from agentlab.evals.metrics import LAYER_DEFINITIONS
    from agentlab.i18n import label
    said = LAYER_DEFINITIONS["model"]["right_tool_rate"]
    assert "leave alone" in said and "either" in said
    assert "必须避开" in label(said, "zh")
