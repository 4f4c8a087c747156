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
