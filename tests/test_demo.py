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


def test_caught_by_is_read_from_the_trace_for_every_fault():
    """Notebooks 00 and 08 show caught_by_guards: the guarded run's trace, never the fault table's intention."""
    from agentlab.models.faults import FAULTS
    from agentlab.workbook.demo import caught_by_guards
    seen = {}
    for fault in FAULTS:
        c = compare_loops(fault)
        seen[fault] = caught_by_guards(c)
        assert seen[fault] == (", ".join(guards_that_acted(c.guarded)) or "-")
    assert seen["api_401"] == "escalate"  # the trace: it stopped and handed over (the table says "fatal stop")
    assert seen["leaky_tool"] == "readable_errors, escalate"  # the raw exception never reached the model
    assert seen["parallel_call"] == "idempotency, all_calls"


def test_readable_errors_is_named_only_when_the_model_read_a_record():
    from agentlab.guards import GuardConfig
    bare = compare_loops("leaky_tool", config=GuardConfig(readable_errors=False, timeout=0.1)).guarded
    assert "readable_errors" not in guards_that_acted(bare)
