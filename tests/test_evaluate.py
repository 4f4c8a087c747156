import json
import subprocess
import sys

import pytest
from conftest import ROOT

from agentlab.evals import (
    Case,
    ablation,
    auto_tag,
    compare_groups,
    load_cases,
    load_results,
    pass_k_curve,
    pass_rate,
    promote,
    replay_results,
    run_case,
    run_suite,
    sample,
    save_results,
)
from agentlab.guards import GuardConfig

SUITE = ROOT / "data" / "aftersales_cases.jsonl"


@pytest.fixture(scope="module")
def cases():
    return load_cases(SUITE)


def test_the_suite_has_at_least_50_cases_of_each_kind(cases):
    kinds = {c.category for c in cases}
    assert len(cases) >= 50 and {"normal", "boundary", "adversarial"} <= kinds
    assert len({c.id for c in cases}) == len(cases)


def test_every_case_passes_guarded_and_the_naive_loop_fails_many(cases):
    guarded = run_suite(cases)
    assert [r.case_id for r in guarded if not r.passed] == []
    naive = run_suite(cases, loop="naive")
    assert pass_rate(naive) < 0.6


def test_succeeded_but_wrong_amount_is_a_failure(cases):
    case = next(c for c in cases if c.id == "normal-01")
    wrong = Case("x", "normal", "aftersales", case.task, case.expect,
                 {"plan": [["create_refund", {"order_id": "A1001", "amount": 150, "reason": "user_cancel"}]]})
    r = run_case(wrong)
    assert r.run.status == "done" and not r.passed and any("amount" in f for f in r.failures)


def test_results_come_back_in_case_order_under_concurrency(cases):
    rs = run_suite(cases, trials=2, concurrency=8)
    assert [(r.case_id, r.trial) for r in rs] == [(c.id, t) for c in cases for t in range(2)]


def test_store_reopen_and_replay_through_another_config(cases, tmp_path):
    rs = run_suite(cases[:10], loop="naive")
    path = save_results(rs, tmp_path, label="naive-fake")
    back = load_results(path)
    assert back.meta["loop"] == "naive" and back.meta["code_version"] and len(back.results) == 10
    assert [r.run.status for r in back.results] == [r.run.status for r in rs]
    assert [len(r.run.events) for r in back.results] == [len(r.run.events) for r in rs]
    again = replay_results(back.results, cases, config=GuardConfig())
    assert pass_rate(again) >= pass_rate(rs)


def test_compare_ablation_and_pass_k(cases):
    rows = compare_groups({"naive": run_suite(cases, loop="naive"), "guarded": run_suite(cases)})
    assert rows[1]["task_success_rate"] == 1.0 and rows[0]["task_success_rate"] < 1.0
    abl = ablation(cases[:20])
    assert abl["all guards"] == 1.0 and abl["no guards"] < abl["all guards"]
    curve = pass_k_curve(run_suite(cases[:5], trials=3))
    assert curve == [(1, 1.0), (2, 1.0), (3, 1.0)]


def test_auto_tag_and_promote(cases, tmp_path):
    naive = run_suite(cases, loop="naive")
    tags = {auto_tag(r) for r in naive}
    assert "ok" in tags and tags - {"ok"} <= {"structure", "semantic", "execution", "rule_blocked"}
    assert len(sample(naive, 10, seed=1)) == 10 and sample(naive, 10, seed=1) == sample(naive, 10, seed=1)
    bad = next(r for r in naive if not r.passed)
    suite = tmp_path / "regression.jsonl"
    new = promote(bad, next(c for c in cases if c.id == bad.case_id), suite)
    assert load_cases(suite)[0].id == new.id and "script" in new.fake
    assert run_case(new).run.status  # it runs


def test_eval_cli_json(tmp_path):
    p = subprocess.run([sys.executable, "-m", "agentlab", "eval", "--suite", str(SUITE), "--trials", "2",
                        "--concurrency", "4", "--json", "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["headline"]["task_success_rate"] == 1.0 and set(report["layers"]) == {"model", "tool", "task", "experience"}
    assert report["pass^k"]["2"] == 1.0 and (tmp_path / report["stored"].split("/")[-1] / "traces.jsonl").exists()


def test_eval_cli_replay_and_table(tmp_path):
    p = subprocess.run([sys.executable, "-m", "agentlab", "eval", "--suite", str(SUITE), "--model", "replay",
                        "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "task success rate" in p.stdout and "stored in" in p.stdout


def test_run_suite_stores_and_compare_plot(cases, tmp_path):
    rs = run_suite(cases[:8], trials=2, store=tmp_path, label="stored")
    stored = load_results(next(tmp_path.iterdir()))
    assert stored.meta["label"] == "stored" and stored.meta["trials"] == 2 and len(stored.results) == 16
    from agentlab.workbook.plots import compare_plot
    rows, fig = compare_plot({"guarded": rs, "naive": run_suite(cases[:8], loop="naive", trials=2)})
    assert [r["group"] for r in rows] == ["guarded", "naive"] and len(fig.axes) >= 3


def test_a_broken_suite_file_says_where(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "task": "x", "expect": {}}\n{not json\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        load_cases(bad)
    p = subprocess.run([sys.executable, "-m", "agentlab", "eval", "--suite", str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and "bad.jsonl:2" in p.stderr and "Traceback" not in p.stderr


def test_promoting_keeps_every_call_of_a_message_and_reproduces(tmp_path):
    from agentlab.evals import load_cases, promote, run_case
    from agentlab.evals.suite import Case
    from agentlab.models import ScriptedModel, call, say, tool_calls
    both = tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}),
                      call("escalate_to_human", {"summary": "and call me"}))
    case = Case("two-in-one", "normal", "aftersales", "Refund A1001 and have someone call me.",
                {"refunds": [{"order_id": "A1001", "amount": 199.0}], "tickets": 1, "statuses": ["done"]})
    session = run_case(case, model=ScriptedModel([both, say("Done.")]), loop="naive")
    assert not session.passed  # the naive loop drops the hand-over
    suite = tmp_path / "regression.jsonl"
    new = promote(session, case, suite)
    (loaded,) = load_cases(suite)
    assert loaded.fake["script"][0]["calls"][1][0] == "escalate_to_human"
    assert run_case(loaded, loop="guarded").passed  # every call of the message survived promotion
    again = run_case(new, loop="naive")
    assert not again.passed and again.failures == session.failures  # it reproduces the bad session


@pytest.mark.parametrize("suite", ["aftersales_cases.jsonl", "expense_cases.jsonl"])
def test_a_suite_runs_the_same_in_both_languages(suite):
    # the same case and the same scripted model in either language: only the words differ. A fault the model
    # injects into a call of a tool the router did not offer (the bookkeeping desk routes by the ask's words) was
    # made only where the router had offered it, so one case was repaired in Chinese and never broken in English
    # and the two notebooks printed different invalid-call rates
    shipped = load_cases(ROOT / "data" / suite)

    def shape(lang):
        return [(r.case_id, r.outcome, r.run.steps, r.run.invalid_calls, r.run.status)
                for loop in ("naive", "guarded") for r in run_suite(shipped, loop=loop, lang=lang)]

    en, zh = shape("en"), shape("zh")
    assert [a for a, b in zip(en, zh, strict=True) if a != b] == []
