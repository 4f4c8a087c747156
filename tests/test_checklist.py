"""Article 003's twelve checks run against a desk: both desks pass, and a broken desk fails the right ones."""
import dataclasses

import pytest

from agentlab.cli import main
from agentlab.evals.checklist import CHECKS, run_checklist
from agentlab.scenarios import get


@pytest.mark.parametrize("name", ["aftersales", "expense"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_desks_pass_every_check_with_evidence(name, lang):
    results = run_checklist(get(name), lang)
    assert [r.number for r in results] == list(range(1, 13)) == [c.number for c in CHECKS]
    assert [(r.number, r.evidence) for r in results if not r.passed] == []
    assert all(r.evidence and r.title for r in results)


def test_a_desk_without_its_safeguards_fails_the_checks_that_look_for_them():
    broken = dataclasses.replace(get("expense"), build_prompt=None, context_budget=None, step_budget=None)
    failed = {r.number for r in run_checklist(broken) if not r.passed}
    assert {1, 3, 7} <= failed


def test_the_command_prints_pass_or_fail_and_exits_by_the_result(capsys):
    assert main(["checklist", "--scenario", "expense", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert out.count("通过") >= 12 and "12 项中通过 12 项" in out


def test_demo_on_the_expense_desk_tells_the_date_lesson(capsys):
    assert main(["demo", "--scenario", "expense"]) == 0
    out = capsys.readouterr().out
    assert "2026-09-21" in out and "2026-10-15" in out and "correct" in out
