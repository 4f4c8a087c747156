import json

import pytest

from agentlab.retry import RetryPolicy
from agentlab.workbook.exercises import answer_is, breaker_threshold, longest_wait, schema_contract

GOOD = {"type": "object", "properties": {
    "order_id": {"type": "string", "description": "Order number, like A1001."},
    "amount": {"type": "number", "description": "Refund amount in yuan, a positive number, e.g. 199.0."},
    "reason": {"type": "string", "enum": ["user_cancel", "out_of_stock"], "description": "user_cancel or out_of_stock."}},
    "required": ["order_id", "amount", "reason"]}
WHEN = "Refund a paid order that has not shipped. Call get_order first to learn the amount."


def test_schema_contract_accepts_a_contract_and_rejects_the_hurried_schema():
    assert schema_contract(GOOD, WHEN)[0]
    hurried = {"type": "object", "properties": {"orderId": {"type": "string", "description": "Order ID"}}, "required": ["orderId"]}
    ok, msg = schema_contract(hurried, "refund")
    assert not ok and "AL00" in msg
    free_text = {**GOOD, "properties": {**GOOD["properties"], "reason": {"type": "string", "description": "Why, e.g. changed mind."}}}
    assert not schema_contract(free_text, WHEN)[0]
    assert not schema_contract({"type": "strnig"}, WHEN)[0]


def test_plain_answers_and_numbers():
    assert answer_is(" Wrong_Type ", "wrong_type", "why")[0] and not answer_is("missing", "wrong_type", "why")[0]
    assert longest_wait(2.0, RetryPolicy(base=0.5, cap=8, jitter="none"), 2)[0]
    assert not longest_wait(1.5, RetryPolicy(base=0.5, cap=8, jitter="none"), 2)[0]
    assert longest_wait(8, RetryPolicy(base=1, cap=8), 10)[0]  # capped
    assert breaker_threshold(3)[0] and not breaker_threshold(2)[0]


def test_every_check_starts_at_not_yet_with_a_hint_in_both_languages():
    for lang in ("en", "zh"):
        for result in (answer_is(None, "x", "why", lang=lang), schema_contract(None, None, lang=lang),
                       longest_wait(None, RetryPolicy(), 1, lang=lang), breaker_threshold(None, lang=lang)):
            assert result.state == "not yet" and not result.ok and result.message.startswith("…")
    assert breaker_threshold(3).message.startswith("✓") and breaker_threshold(4).message.startswith("✗")
    assert "还不对" in breaker_threshold(4, lang="zh").message


def test_each_notebook_check_can_fail_and_pass():
    import pandas as pd
    from conftest import ROOT

    from agentlab import Registry
    from agentlab.workbook.exercises import amount_with_unit_reason, best_single_guard, double_refund_fault, guard_effect, largest_share, tool_replies_needed
    reg = Registry.from_json(ROOT / "data" / "aftersales_tools.json")
    pairs = [
        (lambda a: double_refund_fault(a), "lost_reply", "duplicate_call"),
        (lambda a: amount_with_unit_reason(a, reg), "wrong_type", "missing"),
        (lambda a: tool_replies_needed(a, calls=3), 3, 1),
        (lambda a: guard_effect(a, pd.DataFrame({"loop": ["naive", "guarded"], "success": [0.2, 0.7]})),
         "raise", "lower"),
        (lambda a: best_single_guard(a, {"only validate": 0.5, "only retry": 0.2, "all guards": 1.0}),
         "validate", "retry"),
        (lambda a: largest_share(a, {"structure": 5, "semantic": 2}), "structure", "semantic"),
    ]
    for check, right, wrong in pairs:
        assert check(None).state == "not yet"
        assert check(right).ok, check(right)
        assert check(wrong).state == "wrong", check(wrong)


# Reporting to the trainer's view (agentlab/hub/progress.py): inside the hub only, never in the learner's way.
HUB = {"AGENTLAB_PROGRESS_URL": "http://127.0.0.1:9/services/trainer/api/report", "JUPYTERHUB_API_TOKEN": "tok"}


def _capture(monkeypatch):
    from agentlab.workbook import exercises
    sent = []
    real = exercises.report

    def spy(feedback, notebook=None, **kw):
        thread = real(feedback, notebook, send=lambda url, token, body: sent.append((url, token, json.loads(body))), **kw)
        if thread is not None:
            thread.join(5)
    monkeypatch.setattr(exercises, "report", spy)
    return sent


@pytest.mark.parametrize("env", [{}, {"AGENTLAB_PROGRESS_URL": HUB["AGENTLAB_PROGRESS_URL"]},
                                 {"JUPYTERHUB_API_TOKEN": "tok"}])
def test_outside_the_hub_a_check_sends_nothing(monkeypatch, env):
    for name in (*HUB, "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    sent = _capture(monkeypatch)
    assert breaker_threshold(3).ok and answer_is("x", "x", "why").ok
    assert sent == []


def test_inside_the_hub_each_check_reports_once_with_its_notebook_and_the_servers_token(monkeypatch):
    for name, value in HUB.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    sent = _capture(monkeypatch)
    breaker_threshold(2)  # calls check_answer inside: one report, not two
    longest_wait(None, RetryPolicy(), 1)
    answer_is("x", "x", "why")  # a shared check with no notebook known: nothing to report
    assert [(url, token) for url, token, _ in sent] == [(HUB["AGENTLAB_PROGRESS_URL"], "tok")] * 2
    assert [{k: b[k] for k in ("notebook", "exercise", "state")} for _, _, b in sent] == [
        {"notebook": "06", "exercise": "breaker_threshold", "state": "wrong"},
        {"notebook": "04", "exercise": "longest_wait", "state": "not yet"}]
    assert all(isinstance(b["at"], float) for _, _, b in sent)
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/ann/agentlab/notebooks/12_messages_and_context.ipynb")
    answer_is("tool", "tool", "why")
    assert sent[-1][2]["notebook"] == "12" and sent[-1][2]["exercise"] == "first_role_after_cut"
    assert sent[-1][2]["state"] == "right"


def test_a_report_that_fails_never_breaks_the_check(monkeypatch):
    from agentlab.workbook import exercises
    for name, value in HUB.items():
        monkeypatch.setenv(name, value)

    def boom(*a, **kw):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(exercises, "report", boom)
    assert breaker_threshold(3).ok
    # the real sender against a port nobody listens on (9, discard): swallowed, logged at debug
    exercises._post("http://127.0.0.1:9/x", "tok", b"{}")
