from agentlab.errors import CODES
from agentlab.evals.failure_classes import CODE_CLASSES, FAILURE_CLASSES, FAULT_CLASSES, by_failure_class, class_name, class_table
from agentlab.models.faults import FAULTS


def test_every_code_and_every_fault_is_in_one_of_the_five_classes():
    assert FAILURE_CLASSES == ("schema", "model_choice", "unreadable_errors", "idempotency", "loops")
    assert set(CODE_CLASSES) == set(CODES) and set(FAULT_CLASSES) == set(FAULTS)
    assert set(CODE_CLASSES.values()) == set(FAULT_CLASSES.values()) == set(FAILURE_CLASSES)  # no class empty


def test_the_runaways_are_loops_and_the_breakers_codes_too():
    assert FAULT_CLASSES["repeat_call"] == FAULT_CLASSES["ping_pong"] == "loops"
    assert CODE_CLASSES["LOOP_DETECTED"] == CODE_CLASSES["BUDGET_EXHAUSTED"] == "loops"
    from agentlab.workbook.demo import compare_loops
    assert by_failure_class(compare_loops("ping_pong").guarded.events) == {"loops": 1}  # the budget, on the end row
    assert by_failure_class(compare_loops("repeat_call").guarded.events) == {"loops": 1}  # the breaker, counted once
    assert by_failure_class(compare_loops("camel_case").guarded.events) == {"schema": 1}


def test_class_names_in_both_languages_and_the_table_in_the_docs():
    from pathlib import Path
    docs = Path(__file__).resolve().parents[1] / "docs"
    en, zh = (docs / "failures.md").read_text(encoding="utf-8"), (docs / "zh" / "failures.md").read_text(encoding="utf-8")
    for c in FAILURE_CLASSES:
        assert class_name(c, "en") != class_name(c, "zh")
    for lang, text in (("en", en), ("zh", zh)):
        assert '<a id="five-classes-of-failure"></a>' in zh
        for row in class_table(lang):  # the docs' table is the map, row for row
            assert f"| {row['class']} | {row['codes']} | {row['faults']} |" in text, (lang, row)


def test_failures_that_leave_no_code_are_counted_in_their_class():
    """Every fault that makes a naive run fail lands in its own class, counted from the outcome and the effects
    (a double refund, a runaway of refunds, a wrong amount that ran) as well as from the codes."""
    from agentlab.evals.failure_classes import run_classes
    from agentlab.scenarios import aftersales
    from agentlab.workbook.demo import compare_loops
    registry = aftersales.SCENARIO.setup("en")[1]
    failed = 0
    for fault in FAULTS:
        c = compare_loops(fault)
        if c.naive_verdict.passed:
            continue
        failed += 1
        counted = run_classes(c.naive, c.naive_verdict.outcome, c.naive_verdict.failures, registry)
        assert counted[FAULT_CLASSES[fault]] > 0, (fault, counted)
    assert failed == 17
    double = compare_loops("duplicate_call")
    assert by_failure_class(double.naive.events) == {}  # no code says it
    assert run_classes(double.naive, double.naive_verdict.outcome, double.naive_verdict.failures) == {"idempotency": 1}
    runaway = compare_loops("repeat_call")
    assert run_classes(runaway.naive, runaway.naive_verdict.outcome, runaway.naive_verdict.failures) == {"idempotency": 10, "loops": 1}
    assert run_classes(double.guarded, double.guarded_verdict.outcome, double.guarded_verdict.failures) == {}  # replayed


def test_eval_prints_the_five_classes(capsys, tmp_path):
    from agentlab.cli import main
    assert main(["eval", "--suite", "data/aftersales_cases.jsonl", "--loop", "naive", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "five failure classes     schema 40, model choice 4, unreadable errors 49, idempotency 15, loops 4" in text
    assert "task success (finished and checked)      44.2%" in text and "takeover (anything not finished)         19.2%" in text
