"""The build exercises of notebooks 00-09 (agentlab/workbook/builds_guards.py): each check runs what the learner
wrote against the notebook's own faults. Unanswered it says "not yet", a wrong version is told what still breaks,
the model solution (data/trainer/solutions/, never in a notebook) is right, and code that raises gets a sentence.
No exercise cell of these notebooks holds its answer."""
from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from exercise_solutions import SOLUTIONS

from agentlab.hub import progress
from agentlab.workbook import builds_guards, builds_loops, exercises

ROOT = Path(__file__).resolve().parents[1]
DONE = [f"{i:02d}" for i in range(10)]  # the notebooks whose build exercise exists
NOT_YET = {"en": "… Not yet:", "zh": "… 还没作答："}
WRONG = {"en": "✗ Not quite:", "zh": "✗ 还不对："}
RIGHT = {"en": "✓ Right:", "zh": "✓ 答对了："}


def solution(nb: str) -> ModuleType:
    path = ROOT / "data" / "trainer" / "solutions" / f"nb{nb}.py"
    spec = importlib.util.spec_from_file_location(f"solution_nb{nb}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebook(nb: str, zh: bool = False) -> nbformat.NotebookNode:
    folder = ROOT / "notebooks" / ("zh" if zh else "")
    return nbformat.read(next(folder.glob(f"{nb}_*.ipynb")), as_version=4)


def cell_after(nbk: nbformat.NotebookNode, *headings: str) -> str | None:
    """The source of the first code cell after a markdown cell holding one of ``headings``."""
    for i, c in enumerate(nbk.cells):
        if c.cell_type == "markdown" and any(h in c.source for h in headings):
            return next((nbk.cells[j].source for j in range(i + 1, len(nbk.cells))
                         if nbk.cells[j].cell_type == "code"), None)
    return None


def build_cell(nb: str, zh: bool = False) -> str | None:
    return cell_after(notebook(nb, zh), "## Build", "## 动手改")


def stub_from_notebook(nb: str, name: str, zh: bool = False):
    """The learner's starting point, as the notebook's build cell defines it (the check's call left out)."""
    source = build_cell(nb, zh)
    assert source is not None, f"notebook {nb} has no build exercise"
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call))]
    scope: dict = {}
    exec(compile(tree, f"nb{nb}", "exec"), scope)
    return scope[name]


# --- 00 ----------------------------------------------------------------------------------------------------------

def _naive_refund(desk, order_id, amount, reason, remark=""):
    return desk.create_refund(order_id, amount, reason, remark)


def _raises(desk, order_id, amount, reason, remark=""):
    return desk.refunds[3]["refund_id"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_00_the_stub_is_not_yet_a_wrong_tool_is_told_what_still_breaks_and_the_solution_is_right(lang):
    assert str(builds_guards.build_refund_once(stub_from_notebook("00", "my_create_refund", lang == "zh"),
                                               lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_guards.build_refund_once(None, lang=lang)).startswith(NOT_YET[lang])
    wrong = str(builds_guards.build_refund_once(_naive_refund, lang=lang))
    assert wrong.startswith(WRONG[lang]) and "lost_reply" in wrong and "repeat_call" in wrong
    assert ("0 of 3 faults handled" in wrong and "refunded 2 times" in wrong) if lang == "en" else \
        ("处理好了 0 个" in wrong and "被退了 2 次" in wrong)
    right = builds_guards.build_refund_once(solution("00").my_create_refund, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_00_a_tool_that_raises_or_is_no_function_gets_a_sentence(lang):
    said = str(builds_guards.build_refund_once(_raises, lang=lang))
    assert said.startswith(WRONG[lang]) and "IndexError" in said and "Traceback" not in said
    said = str(builds_guards.build_refund_once(42, lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_create_refund" in said


def test_00_refunding_nothing_at_all_is_not_a_fix():
    def never(desk, order_id, amount, reason, remark=""):
        return {"refund_id": "R0000"}
    said = str(builds_guards.build_refund_once(never))
    assert said.startswith(WRONG["en"]) and "0 times" in said


# --- 01 ----------------------------------------------------------------------------------------------------------

_LOOSE_SCHEMA = {"type": "object", "required": ["order_id", "amount", "reason"], "properties": {
    "order_id": {"type": "string"}, "amount": {"type": "number"}, "reason": {"type": "string"},
    "remark": {"type": "string"}}}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_01_the_stub_is_not_yet_a_loose_schema_is_told_what_it_lets_through_and_the_solution_is_right(lang):
    stub = stub_from_notebook("01", "my_refund_schema", lang == "zh")
    assert str(builds_guards.build_refund_contract(stub, lang=lang)).startswith(NOT_YET[lang])
    wrong = str(builds_guards.build_refund_contract(_LOOSE_SCHEMA, lang=lang))
    assert wrong.startswith(WRONG[lang]) and "out_of_enum" in wrong and "out_of_range" in wrong, wrong
    assert "camel_case:" not in wrong and "changed_mind" in wrong
    assert ("3 of 5 faults handled" in wrong) if lang == "en" else ("处理好了 3 个" in wrong)
    right = builds_guards.build_refund_contract(solution("01").my_refund_schema, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_01_a_schema_that_refuses_good_refunds_or_does_not_compile_gets_a_sentence(lang):
    tight = {**solution("01").my_refund_schema, "required": ["order_id", "amount", "reason", "remark"]}
    said = str(builds_guards.build_refund_contract(tight, lang=lang))
    assert said.startswith(WRONG[lang]) and "A1001" in said and "remark" in said
    said = str(builds_guards.build_refund_contract({"type": "object", "properties": {"amount": {"type": "money"}}},
                                                   lang=lang))
    assert said.startswith(WRONG[lang]) and "Traceback" not in said and "money" in said
    said = str(builds_guards.build_refund_contract("order_id, amount, reason", lang=lang))
    assert said.startswith(WRONG[lang]) and "str" in said


# --- 02 ----------------------------------------------------------------------------------------------------------

def _required_only(schema):
    schema["required"] = ["order_id", "amount", "reason"]
    return schema


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_02_the_stub_is_not_yet_a_half_tightened_contract_is_told_what_gets_through_and_the_solution_is_right(lang):
    stub = stub_from_notebook("02", "my_tighten", lang == "zh")
    assert str(builds_guards.build_tighter_contract(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_guards.build_tighter_contract(None, lang=lang)).startswith(NOT_YET[lang])
    wrong = str(builds_guards.build_tighter_contract(_required_only, lang=lang))
    assert wrong.startswith(WRONG[lang]) and "wrong_type" in wrong and "45元" in wrong and "不想要了" in wrong
    assert "camel_case:" not in wrong and "drop_required:" not in wrong
    assert ("2 of 4 faults handled" in wrong) if lang == "en" else ("处理好了 2 个" in wrong)
    right = builds_guards.build_tighter_contract(solution("02").my_tighten, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right
    assert builds_guards.loose_refund_schema().get("required") is None  # the learner changed their own copy
    # the same constraints set in place and printed, nothing returned: not yet right, and told to return the contract,
    # as the task asks (it passed with a note, where every other build exercise holds a print for a return)
    def in_place(schema):
        print(solution("02").my_tighten(schema))
    said = builds_guards.build_tighter_contract(in_place, lang=lang)
    assert not said.ok and str(said).startswith(WRONG[lang]) and "return schema" in str(said), said
    assert "return schema" not in str(builds_guards.build_tighter_contract(solution("02").my_tighten, lang=lang))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_02_code_that_raises_refuses_good_refunds_or_returns_no_schema_gets_a_sentence(lang):
    said = str(builds_guards.build_tighter_contract(lambda s: s["properties"]["amount"]["maximum"] + 1, lang=lang))
    assert said.startswith(WRONG[lang]) and "KeyError" in said and "Traceback" not in said
    assert ("there is no key 'maximum'" in said) if lang == "en" else ("没有键“maximum”" in said), said
    said = str(builds_guards.build_tighter_contract(lambda s: {**s, "required": ["order_id", "remark"]}, lang=lang))
    assert said.startswith(WRONG[lang]) and "A1001" in said and "remark" in said
    said = str(builds_guards.build_tighter_contract(lambda s: json.dumps(s), lang=lang))
    assert said.startswith(WRONG[lang]) and "str" in said
    said = str(builds_guards.build_tighter_contract(42, lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_tighten" in said


# --- 03 ----------------------------------------------------------------------------------------------------------

def _vague(order_id, amount, paid):
    from agentlab.errors import ToolFailure
    return ToolFailure("INVALID_ARGS", "amount too high")


def _fatal(order_id, amount, paid):
    from agentlab.errors import ToolFailure
    return ToolFailure("RULE_VIOLATION", f"amount must be at most {paid:g}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_03_the_stub_is_not_yet_a_vague_or_fatal_failure_is_told_what_still_breaks_and_the_solution_is_right(lang):
    stub = stub_from_notebook("03", "my_amount_failure", lang == "zh")
    assert str(builds_guards.build_refund_failure(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_guards.build_refund_failure(None, lang=lang)).startswith(NOT_YET[lang])
    vague = str(builds_guards.build_refund_failure(_vague, lang=lang))
    assert vague.startswith(WRONG[lang]) and "A1001" in vague and "A1004" in vague and "amount too high" in vague
    assert ("0 of 2 cases handled" in vague) if lang == "en" else ("处理好了 0 种" in vague)
    fatal = str(builds_guards.build_refund_failure(_fatal, lang=lang))
    # the run's status as the reader's tables say it (a Chinese reader read "escalated" inside a Chinese sentence)
    assert fatal.startswith(WRONG[lang]) and "RULE_VIOLATION" in fatal and ("escalated" in fatal) == (lang == "en")
    assert lang == "en" or "转人工" in fatal
    right = builds_guards.build_refund_failure(solution("03").my_amount_failure, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


def test_03_a_failure_that_names_one_orders_amount_is_right_for_that_order_only():
    from agentlab.errors import ToolFailure
    said = str(builds_guards.build_refund_failure(lambda o, a, p: ToolFailure("INVALID_ARGS", "amount: at most 199")))
    assert said.startswith(WRONG["en"]) and "1 of 2" in said and "A1004" in said and "A1001:" not in said



@pytest.mark.parametrize("code", ["RATE_LIMITED", "TIMEOUT", "UNAVAILABLE", "IN_PROGRESS"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_03_a_transient_code_is_wrong_the_loop_resends_the_same_call_which_can_never_succeed(code, lang):
    """A learner's RATE_LIMITED with the right field and amount ended in a full refund (the loop resent the call
    itself before the model read it) and was praised; the code tells the loop the wrong thing."""
    from agentlab.errors import ToolFailure
    said = str(builds_guards.build_refund_failure(
        lambda o, a, p: ToolFailure(code, f"amount: at most {p:g}, the amount paid"), lang=lang))
    assert said.startswith(WRONG[lang]) and code in said and "INVALID_ARGS" in said, said

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_03_code_that_raises_or_returns_no_failure_gets_a_sentence(lang):
    said = str(builds_guards.build_refund_failure(lambda o, a, p: a / 0, lang=lang))
    assert said.startswith(WRONG[lang]) and "ZeroDivisionError" in said and "Traceback" not in said
    said = str(builds_guards.build_refund_failure(lambda o, a, p: "amount too high", lang=lang))
    assert said.startswith(WRONG[lang]) and "ToolFailure" in said
    said = str(builds_guards.build_refund_failure("amount too high", lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_amount_failure" in said


# --- 04 ----------------------------------------------------------------------------------------------------------

def _every_second(error, attempt, rng):
    return 1.0  # resends everything, at the same pace, forever


def _doubling(error, attempt, rng):
    return 0.5 * 2 ** attempt if error.transient else None  # no Retry-After floor, no last resend


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_04_the_stub_is_not_yet_a_wrong_wait_is_told_what_still_breaks_and_the_solution_is_right(lang):
    stub = stub_from_notebook("04", "my_wait", lang == "zh")
    assert str(builds_guards.build_resend(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_guards.build_resend(None, lang=lang)).startswith(NOT_YET[lang])
    flat = str(builds_guards.build_resend(_every_second, lang=lang))
    assert flat.startswith(WRONG[lang]) and "api_401" in flat and "api_timeout" in flat
    assert ("0 of 7 faults handled" in flat and "resent 6 times" in flat) if lang == "en" else \
        ("处理好了 0 个" in flat and "重发了 6 次" in flat)
    doubling = str(builds_guards.build_resend(_doubling, lang=lang))
    assert doubling.startswith(WRONG[lang]) and "api_429" in doubling and "api_500_never_recovers" in doubling
    assert "api_401:" not in doubling and "api_timeout:" not in doubling
    right = builds_guards.build_resend(solution("04").my_wait, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


def _stops_on_401_only(error, attempt, rng):
    if error.code == "UNAUTHENTICATED" or attempt >= 4:
        return None
    return max(error.retry_after or 0, min(30, 0.5 * 2 ** attempt))


def _shrinking(error, attempt, rng):
    if not error.transient or attempt >= 4:
        return None
    return max(error.retry_after or 0, [1, 2, 0.1, 0.1][attempt])


def _attempt_itself(error, attempt, rng):
    return max(error.retry_after or 0, attempt) if error.transient and attempt < 4 else None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_04_every_failure_that_is_not_transient_stops_and_every_wait_grows(lang):
    """Three answers a learner gave that were praised: a stop on the 401 alone (a 403 and a 400 were resent), waits
    that fell after the second (only the first two were compared), and a first resend at once (0 s)."""
    colon = ":" if lang == "en" else "："
    said = str(builds_guards.build_resend(_stops_on_401_only, lang=lang))
    assert said.startswith(WRONG[lang]) and "api_403" in said and "PERMISSION_DENIED" in said and "api_400" in said
    assert f"api_401{colon}" not in said and f"api_429{colon}" not in said, said
    said = str(builds_guards.build_resend(_shrinking, lang=lang))
    assert said.startswith(WRONG[lang]) and "api_500_never_recovers" in said and ("0.1" in said), said
    said = str(builds_guards.build_resend(_attempt_itself, lang=lang))
    assert said.startswith(WRONG[lang]) and "api_timeout" in said and f"api_500{colon}" in said, said
    assert f"api_429{colon}" not in said  # its Retry-After of 2 s is the first wait there

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_04_code_that_raises_gets_a_sentence(lang):
    said = str(builds_guards.build_resend(lambda e, a, r: e.retry_after * 2, lang=lang))  # None for a 500
    assert said.startswith(WRONG[lang]) and "TypeError" in said and "Traceback" not in said
    # Python's own English is said plainly in the learner's language (in Chinese, no "unsupported operand")
    assert ("between a value of type NoneType and one of type int" in said) if lang == "en" else \
        ("* 不能用在 NoneType 和 int 之间" in said and "unsupported" not in said), said
    said = str(builds_guards.build_resend(lambda e, a, r: 0.5 if a < 1 else "later", lang=lang))
    assert said.startswith(WRONG[lang]) and "my_wait" in said and "str 'later'" in said and "Error" not in said, said
    said = str(builds_guards.build_resend(0.5, lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_wait" in said


# --- 05 ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_05_the_stub_is_not_yet_a_wrong_key_is_told_what_still_breaks_and_the_solution_is_right(lang):
    stub = stub_from_notebook("05", "my_business_key", lang == "zh")
    assert str(builds_loops.build_business_key(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_loops.build_business_key(None, lang=lang)).startswith(NOT_YET[lang])
    every_argument = str(builds_loops.build_business_key(lambda a: json.dumps(a, sort_keys=True), lang=lang))
    assert every_argument.startswith(WRONG[lang]) and "reworded_repeat" in every_argument
    assert ("4 of 6 cases handled" in every_argument) if lang == "en" else ("处理好了 4 种" in every_argument)
    # one refund per order, whatever the amount: a key with the amount in it passed all five cases before, none of
    # which changed the amount, though the notebook's own answer is "whatever the amount"
    with_amount = str(builds_loops.build_business_key(lambda a: a["order_id"] + str(a["amount"]), lang=lang))
    assert with_amount.startswith(WRONG[lang]) and "second_amount" in with_amount, with_amount
    by_amount = str(builds_loops.build_business_key(lambda a: str(a["amount"]), lang=lang))
    assert by_amount.startswith(WRONG[lang]) and "two_orders" in by_amount and "A1008" in by_amount
    right = builds_loops.build_business_key(solution("05").my_business_key, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_05_a_key_that_raises_gets_a_sentence_though_the_loop_would_fall_back(lang):
    said = str(builds_loops.build_business_key(lambda a: a["orderId"], lang=lang))
    assert said.startswith(WRONG[lang]) and "KeyError" in said and "Traceback" not in said
    said = str(builds_loops.build_business_key("order_id", lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_business_key" in said


# --- 06 ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_06_the_stub_is_not_yet_wrong_limits_are_told_what_still_breaks_and_the_solution_is_right(lang):
    from agentlab import GuardConfig
    stub = stub_from_notebook("06", "my_config", lang == "zh")
    assert str(builds_loops.build_loop_limits(stub, lang=lang)).startswith(NOT_YET[lang])
    default = str(builds_loops.build_loop_limits(GuardConfig(), lang=lang))  # the budget of 6 cuts healthy runs
    assert default.startswith(WRONG[lang]) and "healthy_runs" in default and "ping_pong:" not in default
    # three cases, not three faults: the healthy runs are none (the Chinese check called them one of "3 个故障")
    assert ("2 of 3 cases handled" in default and "3 of 40" in default) if lang == "en" else \
        ("3 种情形里处理好了 2 种" in default and "有 3 个" in default and "故障" not in default)
    assert "budget_exhausted" not in default if lang == "zh" else "budget_exhausted" in default  # 预算用尽
    no_breaker = str(builds_loops.build_loop_limits(GuardConfig(step_budget=12, repeat_limit=None), lang=lang))
    assert no_breaker.startswith(WRONG[lang]) and "repeat_call" in no_breaker and "12" in no_breaker
    no_budget = str(builds_loops.build_loop_limits(GuardConfig(step_budget=None), lang=lang))
    assert no_budget.startswith(WRONG[lang]) and "ping_pong" in no_budget
    right = builds_loops.build_loop_limits(solution("06").my_config, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_06_a_setting_the_loop_cannot_use_or_no_config_gets_a_sentence(lang):
    from agentlab import GuardConfig
    said = str(builds_loops.build_loop_limits(GuardConfig(step_budget="ten"), lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "step_budget" in said and ("whole number" if lang == "en" else "整数") in said
    assert "Traceback" not in said and "raised" not in said and "抛出" not in said  # the setting is named, not a crash
    said = str(builds_loops.build_loop_limits({"step_budget": 10}, lang=lang))
    assert said.startswith(WRONG[lang]) and "GuardConfig" in said and "dict" in said


# --- 07 ----------------------------------------------------------------------------------------------------------

def _first_only(message, run_one):
    tool_call = message["tool_calls"][0]  # as the naive loop does
    return [{"role": "tool", "tool_call_id": tool_call["id"], "content": run_one(tool_call)}]


def _made_up_answers(message, run_one):
    return [{"role": "tool", "tool_call_id": c["id"], "content": '{"ok": true}'} for c in message["tool_calls"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_07_the_stub_is_not_yet_a_wrong_step_is_told_what_still_breaks_and_the_solution_is_right(lang):
    stub = stub_from_notebook("07", "my_tool_messages", lang == "zh")
    assert str(builds_loops.build_answer_every_call(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_loops.build_answer_every_call(None, lang=lang)).startswith(NOT_YET[lang])
    first = str(builds_loops.build_answer_every_call(_first_only, lang=lang))
    listed = {"en": "call_1, call_2, call_3", "zh": "call_1、call_2、call_3"}[lang]  # as each language lists
    assert first.startswith(WRONG[lang]) and listed in first and "400" in first
    assert ("0 of 3 cases handled" in first) if lang == "en" else ("处理好了 0 种" in first)
    made_up = str(builds_loops.build_answer_every_call(_made_up_answers, lang=lang))
    assert made_up.startswith(WRONG[lang]) and "two_at_once" in made_up and "three_lookups" in made_up
    right = builds_loops.build_answer_every_call(solution("07").my_tool_messages, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right



def _ran_but_empty(message, run_one):
    out = []
    for c in message["tool_calls"]:
        run_one(c)
        out.append({"role": "tool", "tool_call_id": c["id"], "content": ""})
    return out


def _parsed_back(message, run_one):
    return [{"role": "tool", "tool_call_id": c["id"], "content": json.loads(run_one(c))} for c in message["tool_calls"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_07_an_answer_is_the_text_run_one_returned_not_an_empty_one_nor_a_dict(lang):
    """Both were praised: every call ran and was answered by its id, but the model read "" (never the error it had
    to fix), or a dict a real API refuses with a 400."""
    empty = str(builds_loops.build_answer_every_call(_ran_but_empty, lang=lang))
    assert empty.startswith(WRONG[lang]) and "bad_call_between" in empty and "run_one" in empty, empty
    parsed = str(builds_loops.build_answer_every_call(_parsed_back, lang=lang))
    assert parsed.startswith(WRONG[lang]) and "400" in parsed and "dict" in parsed, parsed

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_07_a_step_that_raises_or_returns_no_messages_gets_a_sentence(lang):
    said = str(builds_loops.build_answer_every_call(lambda m, run_one: [run_one(m["tool_calls"][3])], lang=lang))
    assert said.startswith(WRONG[lang]) and "IndexError" in said and "Traceback" not in said
    said = str(builds_loops.build_answer_every_call(lambda m, run_one: "done", lang=lang))
    assert said.startswith(WRONG[lang]) and "'done'" in said  # what it returned, shown
    said = str(builds_loops.build_answer_every_call([], lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_tool_messages" in said


# --- 08 ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_08_the_stub_is_not_yet_a_wrong_guard_is_told_it_changes_nothing_and_the_solution_is_right(lang):
    stub = stub_from_notebook("08", "my_guards", lang == "zh")
    assert str(builds_loops.build_which_guard(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_loops.build_which_guard(None, lang=lang)).startswith(NOT_YET[lang])
    guesses = {**solution("08").my_guards, "api_429": "timeout", "repeat_call": "step_budget", "ping_pong": None}
    wrong = str(builds_loops.build_which_guard(guesses, lang=lang))
    assert wrong.startswith(WRONG[lang]) and "api_429" in wrong and "timeout" in wrong and "ping_pong" in wrong
    assert "camel_case:" not in wrong
    assert ("3 of 6 faults handled" in wrong) if lang == "en" else ("处理好了 3 个" in wrong)
    right = builds_loops.build_which_guard(solution("08").my_guards, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


def test_08_a_guard_named_as_the_chinese_tables_name_it_is_that_guard():
    """A Chinese table says 重试 and 幂等 where the fields are retry and idempotency; a learner who types what they read
    was told the guard does not exist."""
    from agentlab.i18n import label
    said = {fault: label(guard, "zh") for fault, guard in solution("08").my_guards.items()}
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in name) for name in said.values()), said
    right = builds_loops.build_which_guard(said, lang="zh")
    assert right.ok and str(right).startswith(RIGHT["zh"]), right
    wrong = str(builds_loops.build_which_guard({**said, "api_429": label("timeout", "zh")}, lang="zh"))
    assert wrong.startswith(WRONG["zh"]) and "超时（timeout）" in wrong, wrong


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_08_the_caught_by_columns_own_words_name_their_guards(lang):
    """The notebook's "caught by" column prints breaker and budget (熔断, 预算); typed as read, they were refused as no
    guard at all."""
    from agentlab.i18n import label
    words = {"repeat_call": "breaker", "ping_pong": "budget"}
    given = {**solution("08").my_guards, **{f: (w if lang == "en" else label(w, "zh")) for f, w in words.items()}}
    right = builds_loops.build_which_guard(given, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right

def test_08_the_guards_named_as_the_chinese_notebooks_write_them_are_those_guards():
    """Notebooks 00 and 06 call the breaker 熔断器 throughout; typed so, it was "no guard called 熔断器"."""
    given = {**solution("08").my_guards, "repeat_call": "熔断器", "ping_pong": "步数预算"}
    right = builds_loops.build_which_guard(given, lang="zh")
    assert right.ok and str(right).startswith(RIGHT["zh"]), right


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_08_a_name_that_is_no_guard_or_no_dict_gets_a_sentence(lang):
    said = str(builds_loops.build_which_guard({**solution("08").my_guards, "repeat_call": "firewall"}, lang=lang))
    assert said.startswith(WRONG[lang]) and "firewall" in said and "repeat_limit" in said
    said = str(builds_loops.build_which_guard(["validate", "retry"], lang=lang))
    assert said.startswith(WRONG[lang]) and "list" in said


# --- 09 ----------------------------------------------------------------------------------------------------------

def _order_field_only(tool_name, args, seen):
    return "order_id" not in args or any(args["order_id"] in text for text in seen)  # misses a summary's order


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_09_the_stub_is_not_yet_a_wrong_check_is_told_what_still_gets_through_and_the_solution_is_right(lang):
    stub = stub_from_notebook("09", "my_write_check", lang == "zh")
    assert str(builds_loops.build_write_check(stub, lang=lang)).startswith(NOT_YET[lang])
    assert str(builds_loops.build_write_check(None, lang=lang)).startswith(NOT_YET[lang])
    allow_all = str(builds_loops.build_write_check(lambda n, a, s: True, lang=lang))
    assert allow_all.startswith(WRONG[lang]) and "boundary-bad-phone" in allow_all and "A1001" in allow_all
    field_only = str(builds_loops.build_write_check(_order_field_only, lang=lang))
    assert field_only.startswith(WRONG[lang]) and "A1002" in field_only and "asked_writes" not in field_only
    stop_all = str(builds_loops.build_write_check(lambda n, a, s: False, lang=lang))
    assert stop_all.startswith(WRONG[lang]) and "asked_writes" in stop_all
    right = builds_loops.build_write_check(solution("09").my_write_check, lang=lang)
    assert right.ok and str(right).startswith(RIGHT[lang]), right


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_09_a_check_that_raises_gets_a_sentence(lang):
    said = str(builds_loops.build_write_check(lambda n, a, s: a["order_id"] in s[0], lang=lang))
    assert said.startswith(WRONG[lang]) and "KeyError" in said and "Traceback" not in said
    said = str(builds_loops.build_write_check(True, lang=lang))  # type: ignore[arg-type]
    assert said.startswith(WRONG[lang]) and "my_write_check" in said


# --- every notebook ----------------------------------------------------------------------------------------------

def _literals(code: str) -> set[str]:
    """The strings and numbers a solution assigns: what the check takes as right."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) \
                and not isinstance(node.value, bool):
            found.add(str(node.value))
    return found


@pytest.mark.parametrize("nb", [f"{i:02d}" for i in range(10)])
@pytest.mark.parametrize("zh", [False, True], ids=["en", "zh"])
def test_no_exercise_cell_holds_its_answer(nb, zh):
    nbk = notebook(nb, zh)
    stem = next((ROOT / "notebooks").glob(f"{nb}_*.py")).stem
    lookup = cell_after(nbk, "## Exercise", "## 练习")
    assert lookup is not None
    code = "\n".join(line.split("#", 1)[0] for line in lookup.splitlines())  # comments may name an example
    if nb != "01":  # 01 asks for a whole schema: its cell is checked by the build test below
        for truth in _literals(SOLUTIONS[stem]):
            assert not re.search(rf"(?<![\w.]){re.escape(truth)}(?![\w.])", code), (stem, truth)
    if nb in DONE:
        build = build_cell(nb, zh)
        assert build is not None, f"{stem} has no build exercise"
        # the model solution's body is not in the cell: every line of it that does something
        body = [line.strip() for line in (ROOT / "data" / "trainer" / "solutions" / f"nb{nb}.py").read_text(
            encoding="utf-8").splitlines() if line.startswith("    ") and line.strip()
            and not line.strip().startswith(("#", '"""', "def "))]
        for line in body:
            assert line.split("  #")[0] not in build, (stem, line)


def test_solutions_are_never_copied_to_participants():
    from agentlab.hub import users
    source = Path(users.__file__).read_text(encoding="utf-8")
    assert "solutions" not in source and "*.ipynb" in source


# --- the trainer's view ------------------------------------------------------------------------------------------

def test_the_views_list_each_build_exercise_after_its_notebooks_and_the_capstone_last():
    assert exercises.build_ids() == progress.build_ids() == {f"{nb}b": ex for nb, ex in json.loads(
        (ROOT / "data" / "trainer" / "builds.json").read_text(encoding="utf-8")).items()}
    assert set(DONE) <= {k[:2] for k in exercises.build_ids()}
    order = list(progress.known_exercises())
    assert order[-1] == "capstone"
    for key in exercises.build_ids():
        assert order.index(key) == order.index(key[:2]) + 1


def test_a_build_check_reports_as_its_notebooks_second_exercise(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTLAB_PROGRESS_URL", "http://127.0.0.1:9/services/trainer/api/report")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "tok")
    monkeypatch.delenv("AGENTLAB_ROOM", raising=False)
    sent = []
    real = exercises.report

    def spy(feedback, notebook=None, **kw):
        thread = real(feedback, notebook, send=lambda url, headers, body: sent.append(json.loads(body)), **kw)
        if thread is not None:
            thread.join(5)
    monkeypatch.setattr(exercises, "report", spy)
    builds_guards.build_refund_once(None)
    builds_guards.build_refund_once(_naive_refund)
    builds_guards.build_refund_once(solution("00").my_create_refund)
    assert [(b["notebook"], b["exercise"], b["state"], b.get("answer")) for b in sent] == [
        ("00b", "build_refund_once", "not yet", None), ("00b", "build_refund_once", "wrong", "0/3"),
        ("00b", "build_refund_once", "right", "3/3")]
    store = progress.Progress(tmp_path / "p.sqlite")
    for b in sent:  # the view keeps it beside 00's look-up exercise, in its own column
        store.record("ann", b["notebook"], b["exercise"], b["state"])
    store.record("ann", "00", "double_refund_fault", "wrong")
    board = progress._board(store.latest(), ["ann"], 0.0)
    assert board["rows"][0]["cells"]["00b"]["state"] == "right" and board["rows"][0]["cells"]["00"]["state"] == "wrong"
    assert board["counts"]["00b"] == {"not yet": 0, "wrong": 0, "right": 1}


def test_02_the_starting_contract_is_described_in_the_learners_language():
    """A Chinese learner started notebook 02's exercise from a contract described in English."""
    zh = builds_guards.loose_refund_schema("zh")
    assert all(re.search("[\u4e00-\u9fff]", p["description"]) for p in zh["properties"].values()), zh
    en = builds_guards.loose_refund_schema("en")
    assert {k: {x: y for x, y in v.items() if x != "description"} for k, v in zh["properties"].items()} == \
        {k: {x: y for x, y in v.items() if x != "description"} for k, v in en["properties"].items()}
    right = builds_guards.build_tighter_contract(solution("02").my_tighten, lang="zh")
    assert right.ok, right


def test_03_a_chinese_failure_that_names_the_amount_in_chinese_is_acted_on():
    """A Chinese learner writes the failure in Chinese ("退款金额 299 超过了实付的 199 元"); the checking model only
    repaired its call when the text held the English field name ``amount``."""
    from agentlab.errors import ToolFailure

    def chinese(order_id, amount, paid):
        return ToolFailure("INVALID_ARGS", f"订单 {order_id} 的退款金额 {amount:g} 超过了实付的 {paid:g} 元，请按 {paid:g} 元退款")
    right = builds_guards.build_refund_failure(chinese, lang="zh")
    assert right.ok, right
    vague = builds_guards.build_refund_failure(lambda o, a, p: ToolFailure("INVALID_ARGS", "退款失败"), lang="zh")
    assert not vague.ok


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_refund_tool_that_refunds_only_the_first_order_fails(lang):
    """00's check tried A1001 alone: a tool that hands back the desk's first refund for every order passed."""
    def first_only(desk, order_id, amount, reason, remark=""):
        if desk.refunds:
            return desk.refunds[0]
        return desk.create_refund(order_id, amount, reason, remark)
    feedback = builds_guards.build_refund_once(first_only, lang=lang)
    assert feedback.message.startswith(WRONG[lang]) and "A1005" in feedback.message, feedback.message
    assert builds_guards.build_refund_once(solution("00").my_create_refund, lang=lang).ok


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_failure_that_carries_a_trace_or_a_secret_fails(lang):
    """03's check passed a failure whose message held a stack trace, a path and a password: the recap says a model
    never reads those. And a code there is none of ended in a bare KeyError ('INTERNAL')."""
    from agentlab.errors import ToolFailure
    leaky = builds_guards.build_refund_failure(lambda order_id, amount, paid: ToolFailure(
        "INVALID_ARGS", f"amount should be {paid}. Traceback (most recent call last): File \"/srv/app.py\", "
        f"password=hunter2 postgres://u:p@10.0.0.1/db"), lang=lang)
    assert leaky.message.startswith(WRONG[lang]) and "[details removed]" in leaky.message, leaky.message
    assert "hunter2" not in leaky.message and "/srv/app.py" not in leaky.message
    unknown = builds_guards.build_refund_failure(lambda o, a, p: ToolFailure("INTERNAL", "server error"), lang=lang)
    assert unknown.message.startswith(WRONG[lang]) and "INVALID_ARGS" in unknown.message, unknown.message
    assert "SELF_CORRECTION_EXHAUSTED" in unknown.message  # the list whole, not cut
    assert ("is not an error code" if lang == "en" else "不是错误码") in unknown.message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_04_a_wait_nobody_sits_through_handles_nothing(lang):
    """A wait of a billion seconds (or inf) counted the 429 and the timeouts as handled."""
    for wait in (10**9, float("inf"), -1.0, float("nan")):
        said = str(builds_guards.build_resend(lambda e, a, r, w=wait: None if e.code == "UNAUTHENTICATED" else w,
                                              lang=lang))
        assert said.startswith(WRONG[lang]) and "30" in said, said
        too_long = wait > 30  # capping is the advice for a wait too long, not for none at all
        assert (("cap it" in said or "设上限" in said) == too_long), said


def test_09_an_example_is_joined_to_its_label_as_chinese_joins_them():
    said = str(builds_loops.build_write_check(lambda tool, args, seen: False, lang="zh"))
    assert "例如" in said and not re.search(r"例如[^）]*\w: ", said), said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_03_and_07_a_function_that_returns_nothing_anywhere_is_told_so(capsys, lang):
    from agentlab.i18n import t

    def failure(order_id, amount, paid):
        message = f"{order_id}: {amount} > {paid}"
        print(message, end="")

    def messages(message, run_one):
        out = [run_one(call) for call in message["tool_calls"]]
        print(len(out), end="")
    for check, name, kind, fn in ((builds_guards.build_refund_failure, "my_amount_failure", "failure", failure),
                                  (builds_loops.build_answer_every_call, "my_tool_messages", "messages", messages)):
        said = str(check(fn, lang=lang))
        assert said.startswith(WRONG[lang]), said
        assert t("build.returns_nothing", lang, name=name, kind=t(f"build.kind.{kind}", lang)) in said, said
    capsys.readouterr()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_path_that_returns_nothing_is_said_with_its_case_never_not_yet(lang):
    """Before, a None from a function that had a body read as "not answered yet" (05, 07) or as an English
    "raised TypeError (returned NoneType, not a ToolFailure)" (03); the stub alone is not yet."""
    answer = solution("03").my_amount_failure

    def half(order_id, amount, paid):
        if order_id == "A1001":
            return answer(order_id, amount, paid)
    said = str(builds_guards.build_refund_failure(half, lang=lang))
    assert said.startswith(WRONG[lang]) and "A1004" in said and "None" in said and "TypeError" not in said, said

    def no_key_for_a1008(args):
        if args["order_id"] != "A1008":
            return f"create_refund:{args['order_id']}"
    said = str(builds_loops.build_business_key(no_key_for_a1008, lang=lang))
    assert said.startswith(WRONG[lang]) and "A1008" in said and "None" in said, said

    def stub(args):
        return None  # your code
    assert str(builds_loops.build_business_key(stub, lang=lang)).startswith(NOT_YET[lang])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_05_a_key_that_raises_on_a_later_order_gets_a_sentence_not_a_traceback(lang):
    """The loop asks for the key; an exception it does not fall back on (not a KeyError) went through it and out of
    the check as a traceback."""
    said = str(builds_loops.build_business_key(lambda a: "k" if a["order_id"] == "A1001" else str(1 / 0), lang=lang))
    assert said.startswith(WRONG[lang]) and "ZeroDivisionError" in said, said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tool_failure_raised_is_the_same_answer_as_one_returned(lang):
    """A tool reports its failure by raising ToolFailure; the check told a learner who did that that raising was a
    fault of its own."""
    answer = solution("03").my_amount_failure

    def raising(order_id, amount, paid):
        raise answer(order_id, amount, paid)
    said = builds_guards.build_refund_failure(raising, lang=lang)
    assert said.ok and str(said).startswith(RIGHT[lang]), said


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("check, given, shown", [
    (lambda fn, lang: builds_guards.build_resend(fn, lang=lang), lambda e, a, r: "2", "str '2'"),
    (lambda fn, lang: builds_loops.build_business_key(fn, lang=lang), lambda args: hash(args["order_id"]), "int "),
    (lambda fn, lang: builds_loops.build_business_key(fn, lang=lang), lambda args: ("refund", args["order_id"]),
     "tuple ("),
    (lambda fn, lang: builds_loops.build_write_check(fn, lang=lang), lambda tool, args, seen: "allow", "str 'allow'"),
], ids=["04-text-seconds", "05-hash", "05-tuple", "09-word"])
def test_an_answer_of_the_wrong_kind_is_said_never_taken(check, given, shown, lang):
    """A wait of "2" was read as 2 seconds, hash() as a key (it changes from process to process), "allow" as True."""
    said = str(check(given, lang))
    assert said.startswith(WRONG[lang]) and shown in said, said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_02_a_contract_that_refuses_a_refund_in_jiao_is_not_right(lang):
    def integer_amounts(schema):
        solution("02").my_tighten(schema)
        schema["properties"]["amount"]["type"] = "integer"
        return schema
    said = str(builds_guards.build_tighter_contract(integer_amounts, lang=lang))
    assert said.startswith(WRONG[lang]) and "45.5" in said and '"ok": false' not in said, said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_07_and_08_name_the_one_thing_wrong_never_a_repr(lang):
    """A missing tool_call_id read "answered None, None"; a wrong role printed the whole list; a list of guards was
    "no guard called ['validate', 'readable_errors']"."""
    no_id = str(builds_loops.build_answer_every_call(
        lambda m, run: [{"role": "tool", "content": run(c)} for c in m["tool_calls"]], lang=lang))
    assert no_id.startswith(WRONG[lang]) and "tool_call_id" in no_id and "None" not in no_id, no_id
    role = str(builds_loops.build_answer_every_call(
        lambda m, run: [{"role": "assistant", "tool_call_id": c["id"], "content": run(c)} for c in m["tool_calls"]],
        lang=lang))
    assert role.startswith(WRONG[lang]) and "assistant" in role and "[{" not in role, role
    listed = str(builds_loops.build_which_guard({"camel_case": ["validate", "readable_errors"]}, lang=lang))
    assert listed.startswith(WRONG[lang]) and "camel_case" in listed and "list" in listed and "'validate'" not in listed


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_09_code_that_raises_is_told_which_call_it_was_asked_about(lang):
    """A KeyError on order_id with no word of the call: the learner thought of create_refund, not the hand-over."""
    said = str(builds_loops.build_write_check(lambda tool, args, seen: any(args["order_id"] in s for s in seen),
                                              lang=lang))
    assert said.startswith(WRONG[lang]) and "KeyError" in said and "escalate_to_human" in said, said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_00_the_verdict_says_what_the_learners_tool_answers_a_repeat(lang):
    """The right verdict said "the tool hands back the refund on record" of a tool that answered None or a text."""
    def says_done(desk, order_id, amount, reason, remark=""):
        if any(r["order_id"] == order_id for r in desk.refunds):
            return "already refunded"
        return desk.create_refund(order_id, amount, reason, remark)
    said = builds_guards.build_refund_once(says_done, lang=lang)
    assert said.ok and "already refunded" in str(said), said
    model = builds_guards.build_refund_once(solution("00").my_create_refund, lang=lang)
    assert model.ok and "already refunded" not in str(model)
    assert str(model).endswith(builds_guards.t("build.nb00.right", lang)), model


class _OddCode:
    """A callable whose __code__ is no code object: dis raised TypeError out of nine checks."""

    __code__ = 1

    def __call__(self, *args, **kwargs):
        return None


class _NoRepr:
    def __repr__(self):
        raise RuntimeError("repr boom")

    def __eq__(self, other):
        raise RuntimeError("eq boom")

    __hash__ = object.__hash__


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("check", [builds_guards.build_refund_once, builds_guards.build_refund_failure,
                                   builds_loops.build_business_key, builds_loops.build_answer_every_call,
                                   builds_loops.build_write_check, builds_guards.build_resend])
def test_a_hostile_callable_or_value_gets_a_sentence_never_a_traceback(check, lang):
    said = check(_OddCode(), lang=lang)
    assert str(said).startswith((WRONG[lang], NOT_YET[lang])) and "disassemble" not in str(said), said
    said = check(lambda *a, **k: _NoRepr(), lang=lang)
    assert str(said)[:1] in "✓✗…" and "boom" not in str(said), said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_09_any_id_seen_or_the_users_words_alone_are_wrong(lang):
    """Both were praised: the recordings hold no write naming two orders, nor an order found by a read tool."""
    def any_id(tool, args, seen):
        ids = re.findall(r"A\d{4}", json.dumps(args))
        return not ids or any(i in " ".join(seen) for i in ids)

    def users_words(tool, args, seen):
        return all(i in seen[0] for i in re.findall(r"A\d{4}", json.dumps(args)))
    said = str(builds_loops.build_write_check(any_id, lang=lang))
    assert said.startswith(WRONG[lang]) and "two_orders" in said and "A1007" in said, said
    said = str(builds_loops.build_write_check(users_words, lang=lang))
    assert said.startswith(WRONG[lang]) and "found_by_phone" in said, said

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_09_a_verdict_python_reads_as_true_or_false_is_one_and_a_text_is_not(lang):
    """A re.Match or None, as an if reads them, passed before and was refused as 'a path with no return'."""
    import re as re_

    def by_match(tool, args, seen):  # the Match of the last id when every id was seen, else None
        found = True
        for i in re_.findall(r"A\d{4}", json.dumps(args)):
            found = re_.search(i, " ".join(seen))
            if found is None:
                return None
        return found
    assert builds_loops.build_write_check(by_match, lang=lang).ok
    said = str(builds_loops.build_write_check(lambda tool, args, seen: "stop", lang=lang))
    assert said.startswith(WRONG[lang]) and "'stop'" in said, said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_00_a_tool_that_hides_its_earlier_refunds_is_counted_by_what_it_paid(lang):
    """A tool that wiped the desk's record of earlier refunds before paying again read as "refunded once" and was
    praised (3 of 3), having paid 2, 2 and 11 times: the check counted the list the learner's tool can rewrite."""
    def wipe(desk, order_id, amount, reason, remark=""):
        desk.refunds[:] = [r for r in desk.refunds if r["order_id"] != order_id]
        return desk.create_refund(order_id, amount, reason, remark)

    said = builds_guards.build_refund_once(wipe, lang=lang)
    assert not said.ok and "lost_reply" in said.message and "repeat_call" in said.message, said

    def keyed(desk, order_id, amount, reason, remark=""):  # the desk's own dedup: handed back, never paid again
        return desk.create_refund(order_id, amount, reason, remark, idempotency_key="refund:" + order_id)

    assert builds_guards.build_refund_once(keyed, lang=lang).ok
