import json

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
    # runs in each class: a conversation once however many calls it repeated (the same count a log review makes)
    assert "runs by failure class    schema 9, model choice 16, unreadable errors 7, idempotency 3, loops 5" in text
    assert "task success (finished and checked)      44.2%" in text and "takeover (anything not finished)         19.2%" in text


def _traces(tmp_path, loop):
    from agentlab.cli import main
    out = tmp_path / loop
    assert main(["eval", "--suite", "data/aftersales_cases.jsonl", "--loop", loop, "--out", str(out), "--json"]) == 0
    return next(out.iterdir()) / "traces.jsonl"


def test_eval_and_a_review_of_the_same_traces_count_the_same_runs_in_each_class(tmp_path, capsys):
    """Over the same traces eval said schema 40, idempotency 15 and a review schema 6, idempotency 1: one counted
    calls and extra writes, the other conversations. Both count runs now; a review differs only where eval knows what
    the case wanted (a refund it wanted none of, a second refund with other arguments)."""
    from agentlab.evals.log_review import review_logs
    for loop in ("guarded", "naive"):
        traces = _traces(tmp_path, loop)
        said = json.loads(capsys.readouterr().out)["failure_classes"]
        seen = review_logs(traces, "telemetry", tools="data/aftersales_tools.json")["failure_classes"]
        same = ("schema", "model_choice", "unreadable_errors", "idempotency", "loops") if loop == "guarded" else \
            ("schema", "unreadable_errors", "loops")
        assert {c: said[c] for c in same} == {c: seen[c] for c in same}, (loop, said, seen)
        assert all(seen[c] <= said[c] for c in said), (loop, said, seen)
        runs = sum(1 for _ in (tmp_path / loop).glob("*/results.jsonl") for _ in _.open(encoding="utf-8"))
        assert max(said.values()) <= runs == 52


def test_a_write_the_case_wanted_none_of_is_the_models_choice_not_a_write_done_twice():
    """The naive loop's single refund of a case that wanted none (a shipped order, an amount of zero) counted as
    idempotency, 'a write done twice', where the guarded loop files the same mistake as model choice."""
    from agentlab.evals.failure_classes import effect_classes
    from agentlab.evals.outcome import FailedBecause
    once = FailedBecause("grade.count", n=1, noun="refund", name="refunds", want=0)
    twice = FailedBecause("grade.count", n=2, noun="refunds", name="refunds", want=0)
    extra = FailedBecause("grade.count", n=3, noun="refunds", name="refunds", want=1)
    assert effect_classes("done", (), "done, wrong data", [once]) == {"model_choice": 1}
    assert effect_classes("done", (), "done, wrong data", [twice]) == {"model_choice": 1, "idempotency": 1}
    assert effect_classes("done", (), "done, wrong data", [extra]) == {"idempotency": 2}


def test_the_same_call_run_three_times_is_a_loop_in_a_trace_and_in_a_log_whatever_it_writes(tmp_path):
    """Eleven identical refunds that ended "done" were idempotency alone in a review (a read repeated three times was
    a loop, a write never); eval's count read no repeats at all."""
    from agentlab.evals.failure_classes import run_classes
    from agentlab.evals.log_review import review_logs
    from agentlab.runs import Run
    from agentlab.trace import Event
    args = '{"order_id": "A1001", "amount": 199, "reason": "user_cancel"}'
    events = tuple(Event(run_id="r", session_id="r", turn_id=1, round_index=i + 1, kind="tool", loop="naive",
                         tool_name="create_refund", tool_call_id=f"c{i}", args_raw=args, exec_ok=True) for i in range(11))
    run = Run("r", "naive", "m", "done", "", "Refunded.", 11, events, ())
    assert run_classes(run)["loops"] == 1
    assert run_classes(Run("r", "naive", "m", "done", "", "Refunded.", 2, events[:2], ()))["loops"] == 0
    refund = {"type": "function", "function": {"name": "create_refund", "arguments": args}}
    msgs = [{"role": "user", "content": "refund A1001"}]
    for i in range(11):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [{**refund, "id": f"x{i}"}]},
                 {"role": "tool", "tool_call_id": f"x{i}", "content": '{"ok": true}'}]
    msgs.append({"role": "assistant", "content": "Refunded."})
    log = tmp_path / "runaway.jsonl"
    log.write_text(json.dumps({"messages": msgs}) + "\n", encoding="utf-8")
    rows = tmp_path / "runaway_rows.jsonl"
    rows.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in events), encoding="utf-8")
    for path, fmt in ((log, "openai"), (rows, "telemetry")):
        classes = review_logs(path, fmt)["failure_classes"]
        assert classes["loops"] == 1 and classes["idempotency"] == 1, (fmt, classes)


def test_notebook_08s_class_table_counts_both_loops_from_what_the_runs_did():
    """Notebook 08 counted the guarded runs' error codes alone: no idempotency row beside a matrix of naive runs that
    refunded twice."""
    from agentlab.models.faults import FAULTS
    from agentlab.workbook.demo import classes_by_loop, compare_loops
    five = classes_by_loop([compare_loops(f) for f in FAULTS])
    assert five["naive"]["idempotency"] >= 2 and five["naive"]["loops"] >= 2, five
    assert five["guarded"]["idempotency"] == 0 and five["naive"]["unreadable_errors"] > five["guarded"]["unreadable_errors"]


def test_calls_their_schema_refuses_that_ran_count_as_what_they_did_in_every_reading(tmp_path, capsys):
    """A naive run that sent the same refund twice, and a lookup three times, each with arguments the schema refuses
    (a remark of 300 characters, a field the tool does not have): eval counted idempotency and loops, a review of its
    traces and of its messages counted neither (the calls were tagged INVALID_ARGS and left out of the repeat count;
    the messages' tool replies, plain data, were not read as having run)."""
    from agentlab.cli import main
    from agentlab.evals.log_review import review_logs
    refund = ["create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel", "remark": "x" * 300}]
    read = ["get_order", {"order_id": "A1001", "note": "x"}]
    cases = [{"id": "refund-twice", "category": "adversarial", "scenario": "aftersales", "task": "Refund A1001",
              "fake": {"plan": [["get_order", {"order_id": "A1001"}], refund, refund], "answer": "Done."},
              "needed_tools": ["create_refund"], "expect": {"refunds": [{"order_id": "A1001", "amount": 199.0}],
                                                            "statuses": ["done", "done_after_self_correction"]}},
             {"id": "read-thrice", "category": "adversarial", "scenario": "aftersales", "task": "Refund A1001",
              "fake": {"plan": [read, read, read, ["create_refund", {"order_id": "A1001", "amount": 199.0,
                                                                      "reason": "user_cancel"}]], "answer": "Done."},
              "needed_tools": ["create_refund"], "expect": {"refunds": [{"order_id": "A1001", "amount": 199.0}],
                                                            "statuses": ["done", "done_after_self_correction"]}}]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    assert main(["eval", "--suite", str(suite), "--loop", "naive", "--json", "--out", str(tmp_path / "out")]) == 0
    said = json.loads(capsys.readouterr().out)["failure_classes"]
    assert said["idempotency"] == 1 and said["loops"] == 1 and said["schema"] == 2, said
    stored = next((tmp_path / "out").iterdir())
    for path, fmt in ((stored / "traces.jsonl", "telemetry"), (stored / "messages.jsonl", "openai")):
        seen = review_logs(path, fmt, tools="data/aftersales_tools.json")["failure_classes"]
        assert {c: seen[c] for c in ("schema", "idempotency", "loops")} == {c: said[c] for c in ("schema", "idempotency", "loops")}, (fmt, seen)


def test_a_class_with_no_run_in_it_is_zero_not_a_dash():
    """eval said a class with no run as "-", the mark its tables use for a figure not measured."""
    from agentlab.evals.failure_classes import class_counts_text
    for lang in ("en", "zh"):
        said = class_counts_text({"schema": 2}, lang)
        assert "-" not in said and said.count(" 0") == 4, said
