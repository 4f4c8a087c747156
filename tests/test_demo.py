import pytest

from agentlab.workbook.demo import compare_loops, explain, guards_that_acted, trace_text


@pytest.mark.parametrize("fault,guard", [("camel_case", "validate"), ("lost_reply", "idempotency"),
                                         ("api_429", "retry"), ("hanging_tool", "timeout"),
                                         ("leaky_tool", "escalate"), ("duplicate_call", "idempotency")])
def test_the_guard_that_acted_is_named(fault, guard):
    assert guard in guards_that_acted(compare_loops(fault).guarded)


def test_explanations_in_both_languages():
    c = compare_loops("lost_reply")
    en, zh = explain(c, "en"), explain(c, "zh")
    assert len(en) == len(zh) and "398.0 yuan" in " ".join(en) and "398.0 元" in " ".join(zh)
    assert "step 2" in trace_text(c.naive)
