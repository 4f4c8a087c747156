from math import comb

from agentlab.workbook.demo import compare_loops
from agentlab.evals.metrics import failure_breakdown, layers, pass_hat_k, status_shares, summarize


def test_pass_hat_k_is_taubench_estimator():
    data = [(3, 5), (5, 5), (0, 5)]
    for k in (1, 2, 3):
        assert abs(pass_hat_k(data, k) - sum(comb(c, k) / comb(5, k) for c, _ in data) / 3) < 1e-12
    assert pass_hat_k([(2, 4)], 1) == 0.5 and pass_hat_k([(4, 4)], 4) == 1.0


def test_seed000_metrics():
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
