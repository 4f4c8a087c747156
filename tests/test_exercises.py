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
        thread = real(feedback, notebook, send=lambda url, headers, body: sent.append((url, headers["Authorization"], json.loads(body))), **kw)
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
    assert [(url, token) for url, token, _ in sent] == [(HUB["AGENTLAB_PROGRESS_URL"], "token tok")] * 2
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
    exercises._post("http://127.0.0.1:9/x", {"Authorization": "token tok"}, b"{}")


# Every right answer is right in the language the table shows (notebooks/zh/ show glossary labels: 转人工, 结构,
# 工具...), written however a person types it; an odd answer is told what was expected, never a traceback.
WHY, HINT = {"en": "why", "zh": "为什么"}, {"en": "look at the column of the table above.", "zh": "看上面表格里的那一列。"}
SHARE = {"structure": 5, "semantic": 2, "execution": 1}


def _answer(truth):
    """A shared check as a notebook calls it (03, 05, 12-17, 19): the truth computed in the cell."""
    return lambda a, lang: answer_is(a, truth, WHY, hint=HINT, lang=lang)


def _exercise_checks():
    """(notebook, check(answer, lang), right answers, wrong answers): every exercise check but 01 (a schema) and 18.
    The right answers hold the truth's Chinese label(s), where the glossary has one, and odd-but-right forms."""
    import pandas as pd
    from conftest import ROOT

    from agentlab import Registry
    from agentlab.workbook.exercises import amount_with_unit_reason, best_single_guard, double_refund_fault, guard_effect, largest_share, tool_replies_needed
    reg = Registry.from_json(ROOT / "data" / "aftersales_tools.json")
    table = pd.DataFrame({"loop": ["naive", "guarded"], "success": [0.2, 0.7]})
    ablation = {"only validate": 0.5, "only retry": 0.2, "all guards": 1.0}
    policy = RetryPolicy(base=0.5, cap=8, jitter="none")
    return [
        ("00", lambda a, lang: double_refund_fault(a, lang=lang),
         ["lost_reply", " Lost-Reply ", "lost reply", "ｌｏｓｔ＿ｒｅｐｌｙ", "“lost_reply”", "'LOST_REPLY'"],
         ["duplicate_call", "lost", "reply"]),
        ("02", lambda a, lang: amount_with_unit_reason(a, reg, lang=lang),
         ["wrong_type", "wrong type", "Wrong-Type", "＂wrong_type＂"], ["missing", "type"]),
        ("03", _answer("escalated"), ["escalated", "转人工", " 转人工 ", "“转人工”", "Escalated"], ["done", "完成", "用户"]),
        ("04", lambda a, lang: longest_wait(a, policy, attempt=2, lang=lang),
         [2, 2.0, "2", "2.0", "2 秒", "2秒", "2s", "2 s", "2 sec", "2 seconds", "２", "２ 秒", " 2.00 "],
         [1.5, "1.5 秒", 4, "4s", 0]),
        ("05", _answer("create_refund:A1004"), ["create_refund:A1004", " create_refund:a1004 ", "`create_refund:A1004`"],
         ["create_refund:A1001", "A1004"]),
        ("06", lambda a, lang: breaker_threshold(a, lang=lang),
         [3, 3.0, "3", "３", "3 次", "第 3 次", "第3次", "3rd", "the 3rd"], [2, "2 次", 4, 3.5, "3.5"]),
        ("07", lambda a, lang: tool_replies_needed(a, calls=3, lang=lang),
         [3, "3", "3 条", "3 个", "３条", "3 messages"], [1, "1 条", 2.9, 3.5, "3.5"]),
        ("08", lambda a, lang: largest_share(a, SHARE, lang=lang), ["structure", "结构", "Structure", "「结构」"],
         ["semantic", "语义", "执行", "rule_blocked"]),
        ("09", lambda a, lang: guard_effect(a, table, lang=lang), ["raise", "升高", "RAISE"], ["lower", "降低"]),
        ("10", lambda a, lang: best_single_guard(a, ablation, lang=lang),
         ["validate", "校验", "only validate", "only_validate", "只开校验", "Validate"], ["retry", "重试", "只开重试"]),
        ("11", lambda a, lang: largest_share(a, {"semantic": 4, "rule_blocked": 1}, lang=lang),
         ["semantic", "语义", "SEMANTIC"], ["structure", "结构", "规则拦截"]),
        ("12", _answer("tool"), ["tool", "工具", "Tool", "'工具'", "ｔｏｏｌ"], ["user", "用户", "assistant", "助手", "tools_"]),
        ("13", _answer(2), [2, "2", "2 个", "２", "2.0", "2 tools"], [3, "3 个", 1, 2.5]),
        ("14", _answer(12), [12, "12", "12 条", "１２", "12 cases"], [11, "13 条", 12.5]),
        ("15", _answer("Idempotent-Replayed"), ["Idempotent-Replayed", "idempotent-replayed", "idempotent_replayed",
                                                "Idempotent Replayed"], ["Idempotency-Key", "replayed"]),
        ("16", _answer("_meta"), ["_meta", " _meta ", "`_meta`", "＿ｍｅｔａ"], ["arguments", "params", "agentlab"]),
        ("17", _answer("not_caught"), ["not_caught", "not caught", "Not-Caught", "未拦截"],
         ["caught", "已拦截", "harmless", "repaired", "已拦截并修正"]),
        ("19", _answer("secret_in_error"), ["secret_in_error", "secret in error", "Secret-In-Error"],
         ["rate_limited", "unknown_tool"]),
    ]


MALFORMED = ["many", "abc", "", "  ", [], {}, set(), (), ["structure"], {"a": 1}, b"2", object(), True,
             float("nan"), float("inf"), -1, 10**30, "2-3", "1/2", "二三", "２ ３"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_exercise_accepts_the_truth_in_either_language_and_however_it_is_typed(lang):
    for notebook, check, right, _wrong in _exercise_checks():
        for answer in right:
            feedback = check(answer, lang)
            assert feedback.ok and feedback.state == "right", (notebook, answer, lang, feedback)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_wrong_answer_or_a_wrong_label_is_still_wrong_and_said_normally(lang):
    for notebook, check, _right, wrong in _exercise_checks():
        for answer in wrong:
            feedback = check(answer, lang)
            assert feedback.state == "wrong" and not feedback.ok, (notebook, answer, lang, feedback)
            assert feedback.message.startswith("✗") and ({"en": "Not quite", "zh": "还不对"}[lang] in feedback.message)
            assert str(answer) in feedback.message or repr(answer) in feedback.message, (notebook, answer, feedback)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_malformed_answer_of_any_type_gets_a_sentence_never_a_traceback(lang):
    import re
    cjk = re.compile(r"[\u3400-\u9fff]")
    for notebook, check, _right, _wrong in _exercise_checks():
        for answer in MALFORMED:
            feedback = check(answer, lang)  # never raises
            assert feedback.state == "wrong" and not feedback.ok, (notebook, answer, lang, feedback)
            text = re.split("[:：]", feedback.message, maxsplit=1)[1]
            assert len(text.strip()) > 15, (notebook, answer, feedback)
            assert bool(cjk.search(text)) == (lang == "zh") or (isinstance(answer, str) and cjk.search(answer)), \
                (notebook, answer, lang, feedback)  # said in the learner's language
            assert "Traceback" not in text and "Error" not in text, (notebook, answer, feedback)
    from agentlab.i18n import t
    for answer in MALFORMED:  # 01 (a schema): anything at all is a sentence too, never Python's own words
        for schema in (answer, {"type": "object", "properties": answer}, {"type": "object", "properties": {"a": answer}}):
            for description in (answer, WHEN):
                feedback = schema_contract(schema, description, lang=lang)
                assert feedback.state == "wrong", (schema, feedback)
                assert not re.search(r"object is not|sequence element|has no attribute|Error", feedback.message), feedback
                if lang == "zh":
                    assert cjk.search(re.split("[:：]", feedback.message, maxsplit=1)[1]), feedback
        if not isinstance(answer, dict):
            expected = t("exercise.schema_not_a_dict", lang, given="§").split("§")[1]
            assert expected in schema_contract(answer, WHEN, lang=lang).message
        if not isinstance(answer, str):
            expected = t("exercise.description_not_text", lang, given="§").split("§")[1]
            assert expected in schema_contract(GOOD, answer, lang=lang).message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_number_that_does_not_read_says_a_number_is_expected_in_the_learners_language(lang):
    from agentlab.i18n import t
    policy = RetryPolicy(base=0.5, cap=8, jitter="none")
    for answer in ("many", "abc", [], {}, "2-3"):
        for feedback in (longest_wait(answer, policy, 2, lang=lang), breaker_threshold(answer, lang=lang),
                         answer_is(answer, 12, WHY, hint=HINT, lang=lang)):
            assert feedback.state == "wrong"
            assert t("exercise.not_a_number", lang, given="§").split("§")[1][:12] in feedback.message, feedback


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_word_answer_given_as_a_list_or_a_dict_is_told_what_was_expected(lang):
    from agentlab.i18n import t
    for answer in ([], {}, ["tool"], {"tool": 1}):
        feedback = answer_is(answer, "tool", WHY, hint=HINT, lang=lang)
        assert feedback.state == "wrong"
        assert t("exercise.not_a_word", lang, given="§").split("§")[1][:12] in feedback.message, feedback


def test_a_custom_comparison_that_raises_is_a_sentence_too():
    from agentlab.workbook.exercises import check_answer

    def strict(a, b):
        raise TypeError("boom")
    feedback = check_answer("x", "x", why=WHY, hint=HINT, same=strict, lang="zh")
    assert feedback.state == "wrong" and "boom" not in feedback.message and "看上面表格里的那一列" in feedback.message


def test_every_glossary_label_is_right_for_its_own_value_and_wrong_for_another():
    """Whatever file of data/i18n/labels/ says a value, its label is that value's answer, and only that value's."""
    from agentlab.i18n import label_glossary
    from agentlab.workbook.answers import answer_key
    glossary = label_glossary()["zh"]
    said = {answer_key(zh): {answer_key(e) for e, z in glossary.items() if answer_key(z) == answer_key(zh)} for zh in glossary.values()}
    for english, chinese in glossary.items():
        for lang in ("en", "zh"):
            assert answer_is(chinese, english, WHY, lang=lang).ok, (english, chinese)
            assert answer_is(english, english, WHY, lang=lang).ok, english
        other = next(e for e in glossary if answer_key(e) not in said[answer_key(chinese)] and answer_key(glossary[e]) != answer_key(chinese))
        assert answer_is(glossary[other], english, WHY, lang="zh").state == "wrong", (english, other)


def test_with_no_failures_the_share_check_reads_none_and_any_odd_answer():
    import numpy as np

    from agentlab.workbook.exercises import largest_share
    assert largest_share(None, {}).ok and largest_share(" None ", {}).ok
    for odd in (np.array([1, 2]), [], {}, "structure"):
        assert largest_share(odd, {}).state == "wrong"


def test_numbers_read_as_numbers_whatever_surrounds_them():
    for given, truth in ((".5", 0.5), ("0.5 秒。", 0.5), ("“2”", 2), ("-1", -1), ("第１２条", 12)):
        assert answer_is(given, truth, WHY).ok, (given, truth)
    for given, truth in ((".5", 5), ("2.000001", 2), ("12", 1), ("1,2", 12), ("2 or 3", 2)):
        assert answer_is(given, truth, WHY).state == "wrong", (given, truth)


def test_reports_leave_in_the_order_the_checks_ran(monkeypatch):
    """Two checks in a row ("wrong", then "right") sent from two threads could reach the trainer's view the other way
    round, and the room then showed a participant stuck who had just got it right. Each report waits for the one
    before it."""
    import time

    from agentlab.workbook import exercises
    for name, value in HUB.items():
        monkeypatch.setenv(name, value)
    arrived = []

    def send(url, headers, body):
        state = json.loads(body)["state"]
        if state == "wrong":
            time.sleep(0.3)  # the first report is the slower one on the wire
        arrived.append(state)
    wrong = exercises.report(exercises.Feedback("wrong", "x"), "06", send=send)
    right = exercises.report(exercises.Feedback("right", "x"), "06", send=send)
    right.join(5)
    wrong.join(5)
    assert arrived == ["wrong", "right"]


def test_a_tie_names_its_classes_in_the_readers_language_and_naming_them_all_is_right():
    """08's Chinese verdict said "execution / structure" and marked "结构和执行" wrong though the two were tied."""
    from agentlab.workbook.exercises import largest_share
    counts = {"structure": 8, "execution": 8, "semantic": 1}
    for given in ("结构和执行", ["结构", "执行"], "structure and execution", "执行、结构", "结构"):
        verdict = largest_share(given, counts, lang="zh")
        assert verdict.ok, (given, verdict)
        assert "执行 / 结构" in verdict.message and "structure" not in verdict.message
    for given in ("语义和结构", ["结构", "语义"], "semantic"):
        assert largest_share(given, counts, lang="zh").state == "wrong", given


def test_02_hint_names_the_row_and_column_as_the_chinese_table_does():
    """The Chinese hint said "看第一张表里 wrong type 那一行的 problems 列", a row the Chinese table calls 类型错误."""
    from agentlab.i18n import label
    from agentlab.scenarios import aftersales
    from agentlab.workbook.exercises import amount_with_unit_reason
    _, reg = aftersales.SCENARIO.setup("zh")
    said = str(amount_with_unit_reason("nonsense", reg, lang="zh"))
    assert label("wrong type", "zh") in said and label("problems", "zh") in said and "wrong type" not in said, said


def test_a_number_written_in_chinese_reads_as_that_number():
    """A Chinese learner answers in Chinese: "三" or "三次" for 3 was refused as not a number. Chinese numerals read
    as the number they write; two digits with no unit between them ("三二") still do not."""
    for given, truth in (("三", 3), ("三次", 3), ("第三", 3), ("两", 2), ("十", 10), ("十二", 12), ("二十", 20),
                         ("一百零五", 105), ("零", 0), ("８", 8)):
        assert answer_is(given, truth, WHY).ok, (given, truth)
    for given, truth in (("三", 2), ("十二", 21), ("二十", 12)):
        assert answer_is(given, truth, WHY).state == "wrong", (given, truth)
    from agentlab.i18n import t
    for given in ("三二", "十十", "二三十"):  # not a number anyone writes: said to be no number, never a wrong one
        feedback = answer_is(given, 3, WHY, lang="zh")
        assert feedback.state == "wrong" and t("exercise.not_a_number", "zh", given="§").split("§")[1][:12] in feedback.message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_closed_set_must_be_the_reason(lang):
    """01's check wanted an enum anywhere: an enum on order_id beside a free-text reason, or a schema of other fields
    altogether, was told "the reason is a closed set"."""
    props = GOOD["properties"]
    free_reason = {**GOOD, "properties": {**props, "reason": {"type": "string", "description": "Why the customer wants the money back."},
                                          "order_id": {**props["order_id"], "enum": ["A1001", "A1002"]}}}
    assert not schema_contract(free_reason, WHEN, lang=lang).ok
    other = {"type": "object", "properties": {"x": {"type": "string", "enum": ["a", "b"], "description": "The kind of thing asked."}},
             "required": ["x"], "additionalProperties": False}
    feedback = schema_contract(other, WHEN, lang=lang)
    assert not feedback.ok and "order_id" in feedback.message and "reason" in feedback.message, feedback.message
    assert schema_contract(GOOD, WHEN, lang=lang).ok


@pytest.mark.parametrize("typed", ["lost_reply，", "（lost_reply）", "“lost_reply”。", "【lost_reply】！", " lost-reply；"])
def test_a_word_answer_is_read_through_the_punctuation_chinese_typing_adds(typed):
    """A number followed by a full-width comma was read ("2，"), a word was refused ("lost_reply，", "（wrong_type）")."""
    from agentlab.workbook.answers import answer_key
    assert answer_key(typed) == answer_key("lost_reply")


def test_a_one_value_enum_is_told_what_a_closed_set_is():
    """A reason with one allowed value was told "the reason should be an enum": it was one."""
    props = GOOD["properties"]
    one = {**GOOD, "properties": {**props, "reason": {**props["reason"], "enum": ["user_cancel"]}}}
    feedback = schema_contract(one, WHEN)
    assert not feedback.ok and "two" in feedback.message, feedback.message


_CONTRACT = {"type": "object", "properties": {
    "order_id": {"type": "string", "description": "The order to refund, like A1001.", "pattern": "^A\\d{4}$"},
    "amount": {"type": "number", "description": "Amount to refund in yuan, e.g. 45.5.", "minimum": 0.01},
    "reason": {"type": "string", "description": "Why the customer wants the money back.",
               "enum": ["user_cancel", "damaged"]}},
    "required": ["order_id", "amount", "reason"], "additionalProperties": False}
_DESCRIBED = "Refund part or all of a paid order. Use only after get_order confirms the amount paid."


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("broken, said", [
    (lambda s: s.update(required=["orderid", "amount", "reason"]), "orderid"),
    (lambda s: s.pop("required"), "order_id"),
    (lambda s: s["properties"]["amount"].update(type="string"), "45.5"),
    (lambda s: s["properties"]["amount"].update(type="integer"), "45.5"),
], ids=["misspelt-required", "no-required", "amount-as-text", "amount-in-whole-yuan"])
def test_01_a_contract_that_reads_clean_but_refuses_a_right_refund_or_takes_a_short_one_is_not_right(broken, said, lang):
    """Before, "no lint warning and an enum" was right: each of these was praised as a contract."""
    import copy
    assert schema_contract(_CONTRACT, _DESCRIBED, lang=lang).ok
    schema = copy.deepcopy(_CONTRACT)
    broken(schema)
    got = schema_contract(schema, _DESCRIBED, lang=lang)
    assert not got.ok and said in str(got) and '"ok": false' not in str(got), got


def test_10_the_best_guard_is_named_as_the_chinese_table_names_it():
    from agentlab.workbook.exercises import best_single_guard
    ablation = {"only validate": 0.65, "only retry": 0.3, "all guards": 0.9}
    zh = str(best_single_guard("校验", ablation, lang="zh"))
    assert "校验（validate）" in zh and "单独开启 validate" not in zh, zh
    assert "validate alone" in str(best_single_guard("validate", ablation, lang="en"))


@pytest.mark.parametrize("typed, right", [("提高", "raise"), ("上升", "raise"), ("已转人工", "escalated"),
                                          ("未拦住", "not_caught")])
def test_a_word_people_type_for_the_tables_label_is_read_as_it(typed, right):
    """Before, 升高 was right and 提高 or 上升 wrong; 转人工 right and the nb00 table's 已转人工 wrong."""
    from agentlab.workbook.exercises import check_answer
    assert check_answer(typed, right, why="y", hint="h", lang="zh").ok
    assert not check_answer("下降", "raise", why="y", hint="h", lang="zh").ok
    assert not check_answer("已拦截", "not_caught", why="y", hint="h", lang="zh").ok



@pytest.mark.parametrize("answer", ["third", "the third", "Third time", "three", "3rd", "第三", "三次"])
def test_a_number_in_words_reads_as_that_number(answer):
    """The breaker look-up asks "(1st, 2nd, 3rd...)": "third" was refused as no number while "3rd" was read."""
    assert breaker_threshold(answer, lang="en").ok and breaker_threshold(answer, lang="zh").ok


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_whole_tools_list_entry_is_told_to_give_its_parameters_and_no_rule_number_is_shown(lang):
    """Given the whole {"type": "function", ...} entry, a learner read "type must be one of ... got 'function'"."""
    from agentlab.workbook import builds_site
    entry = {"type": "function", "function": {"name": "create_refund", "parameters": GOOD}}
    for said in (str(schema_contract(entry, WHEN, lang=lang)), str(builds_site.contract_catches_faults(entry, lang=lang))):
        assert "parameters" in said and "got" not in said and "function" in said, said


@pytest.mark.parametrize("typed", ["升高了", "更高", "变高了", "高了", "涨了", "提高了", "变得更高了", "有所提高", "raised",
                                   "went up", "higher"])
def test_a_chinese_answer_is_read_through_its_particles_and_an_english_one_through_its_tense(typed):
    """09: 升高 was right and 升高了, 更高 or 涨了 (the same word as a learner writes it) wrong, and so was "raised"."""
    from agentlab.workbook.exercises import check_answer
    assert check_answer(typed, "raise", why="y", hint="h", lang="zh").ok, typed
    assert not check_answer(typed, "lower", why="y", hint="h", lang="zh").ok, typed


def test_an_answer_copied_from_where_the_hint_points_is_read():
    """A learner copies the answer from the column the hint names: 02's problems column writes amount：wrong_type, 00's
    and 19's tables say each fault in words. Each was wrong, and the hint sent the learner back to the same cell."""
    from agentlab import Registry
    from agentlab.adapters.compare import FAULTS
    from agentlab.i18n import t
    from agentlab.resources import data_file
    from agentlab.workbook.builds_systems import handled_without_adapter
    from agentlab.workbook.exercises import amount_with_unit_reason, double_refund_fault
    reg = Registry.from_json(data_file("aftersales_tools.json"))
    for typed in ("amount：wrong_type", "amount: wrong_type", '["amount：wrong_type"]', ["amount：wrong_type"]):
        assert amount_with_unit_reason(typed, reg, lang="zh").ok, typed
    assert not amount_with_unit_reason("order_id：wrong_type", reg, lang="zh").ok
    assert not amount_with_unit_reason("amount：missing", reg, lang="zh").ok
    for typed in (t("fault.lost_reply", "zh"), t("fault.lost_reply", "en"), "lost_reply"):
        assert double_refund_fault(typed, lang="zh").ok, typed
    assert not double_refund_fault(t("fault.camel_case", "zh"), lang="zh").ok

    class Row:
        def __init__(self, framework, fault, alone):
            self.framework, self.fault, self.passed = framework, fault, (alone, True)
    fault, other = FAULTS[0], FAULTS[1]
    rows = [Row("openai-agents", fault, True), Row("pydantic-ai", fault, False), Row("langgraph", fault, False),
            Row("openai-agents", other, False), Row("pydantic-ai", other, False), Row("langgraph", other, False)]
    for typed in (fault, t(f"adapters.fault.{fault}", "zh"), t(f"adapters.fault.{fault}", "en")):
        assert handled_without_adapter(typed, rows, FAULTS, lang="zh").ok, typed
    assert not handled_without_adapter(t(f"adapters.fault.{other}", "zh"), rows, FAULTS, lang="zh").ok


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_number_in_a_unit_of_another_quantity_is_not_that_number(lang):
    """"2元" was a right wait of 2 seconds, and "3元" a right count of tool messages, while "2000毫秒" was a wrong wait:
    a time reads in its unit, a unit of another quantity is said to be one."""
    from agentlab.workbook.exercises import tool_replies_needed
    policy = RetryPolicy(base=0.5, cap=8, jitter="none")
    for typed in ("2", "2 秒", "2s", "2000毫秒", "2000 ms", "两秒", "２"):
        assert longest_wait(typed, policy, attempt=2, lang=lang).ok, typed
    for typed in ("2元", "¥2", "2%", "2 minutes"):
        said = longest_wait(typed, policy, attempt=2, lang=lang)
        assert said.state == "wrong", typed
    assert ("not a time" if lang == "en" else "这不是时间") in str(longest_wait("2元", policy, attempt=2, lang=lang))
    for typed in ("3", "3 条", "三条", "3 calls", "第3条"):
        assert tool_replies_needed(typed, calls=3, lang=lang).ok, typed
    for typed in ("3元", "3 秒", "三元"):
        said = tool_replies_needed(typed, calls=3, lang=lang)
        assert said.state == "wrong" and ("not a count" if lang == "en" else "不是个数") in str(said), typed


def test_the_role_is_read_as_the_notebook_names_it():
    """12: the notebook calls a tool message a 工具回执; the answer 工具回执 was wrong where 工具 was right."""
    from agentlab.workbook.builds_systems import first_role_after_cut
    for typed in ("工具回执", "工具消息", "tool", "tool message"):
        assert first_role_after_cut(typed, lang="zh").ok, typed
    assert not first_role_after_cut("用户", lang="zh").ok


@pytest.mark.parametrize("typed, right", [
    ("成功率升高了", "raise"), ("更好", "raise"), ("会升高", "raise"), ("没有拦住", "not_caught"), ("tool 消息", "tool"),
    ("tool 角色", "tool"), ("执行阶段", "execution"), ("execution（执行）", "execution"), ("只开 validate", "validate"),
    ("validate（校验）", "validate"), ("_meta 字段", "_meta"), ("转给人工", "escalated"), ("wrong_type（类型不对）", "wrong_type"),
    ("响应丢失", "lost_reply"), ("lost_reply（写操作已执行但响应丢失（超时））", "lost_reply")])
def test_an_answer_with_its_subject_its_kind_or_its_meaning_around_it_is_read(typed, right):
    """A second pass of a Chinese learner found these natural right answers refused: the metric named with its
    direction, a stage or a field called so, a name with its meaning in brackets, the table's words for a fault."""
    from agentlab.workbook.answers import judge_answer
    assert judge_answer(typed, right) is True, typed
    for wrong in ("不升高", "成功率降低了", "camel_case（驼峰）", "用户"):
        assert judge_answer(wrong, right) is not True, (wrong, right)


def test_a_count_is_no_time():
    """"2次" was a right wait of 2 seconds; a count's word reads as a count."""
    from agentlab.workbook.exercises import tool_replies_needed
    policy = RetryPolicy(base=0.5, cap=8, jitter="none")
    assert longest_wait("2次", policy, attempt=2, lang="zh").state == "wrong"
    assert tool_replies_needed("3次", calls=3, lang="zh").ok


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tie_for_the_largest_share_is_said_as_a_tie_and_a_miss_lists_the_slices(lang):
    """Notebook 08's stages tied (execution 8, structure 8 of 17): either answer passed with "执行 / 结构：17 个失败里占
    8 个。先解决这一类" (one class, said of two), and "validation", a category from the plot beside it, was told only
    to look for the largest slice."""
    from agentlab.workbook.exercises import largest_share
    counts = {"structure": 8, "execution": 8, "semantic": 1}
    for given in ("structure", "execution"):
        got = largest_share(given, counts, lang=lang)
        assert got.ok and (("either is right" in str(got)) if lang == "en" else ("答哪一个都对" in str(got))), got
    missed = str(largest_share("validation", counts, lang=lang))
    assert ("structure, execution, semantic" in missed) if lang == "en" else ("结构、执行、语义" in missed), missed
    alone = str(largest_share("structure", {"structure": 5, "semantic": 2}, lang=lang))
    assert "either" not in alone and "都对" not in alone, alone


def test_a_sentence_that_ends_on_a_question_gets_no_full_stop_after_it():
    """A NameError said as a question inside a check's sentence read …（"路由"）？。改好那一行."""
    from agentlab.workbook.builds_systems import suite_case_catches  # noqa: F401 - a check module, loaded as a learner does
    from agentlab.workbook.exercises import _say
    assert "？。" not in str(_say("wrong", "是不是（“路由”）？。改好那一行", "zh"))
    assert "?." not in str(_say("wrong", "Did you mean x?. Fix it.", "en"))
    assert "3.5" in str(_say("wrong", "it is 3.5. Fix it.", "en"))


def test_a_typed_answer_is_quoted_back_in_the_readers_quotation_marks():
    """A Chinese check read 你的答案是 '第二次': Python's quotes, code inside a Chinese sentence."""
    from agentlab.workbook.exercises import check_answer
    hint = {"en": "look again", "zh": "再看看表"}
    assert "你的答案是 “第二次”" in str(check_answer("第二次", "lost_reply", why="-", hint=hint, lang="zh"))
    assert "you said 'second'" in str(check_answer("second", "lost_reply", why="-", hint=hint, lang="en"))
    assert "'a\\nb'" in str(check_answer("a\nb", "lost_reply", why="-", hint=hint, lang="zh"))  # escapes kept


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_fault_of_the_table_named_wrongly_in_notebook_00_is_told_why_it_is_not_the_one(lang):
    """"duplicate_call" (two refunds in the naive column, asked twice by the model) heard the hint repeated, not why:
    each wrong fault named is told its side and its naive refunds, from its own run."""
    from agentlab.i18n import t
    from agentlab.workbook.demo import compare_loops
    from agentlab.workbook.exercises import double_refund_fault
    for fault, side in (("duplicate_call", "model"), ("flaky_tool", "tool"), (t("fault.repeat_call", lang), "model"),
                        ("api_timeout", "api")):
        name = "repeat_call" if side == "model" and fault != "duplicate_call" else fault
        said = str(double_refund_fault(fault, lang=lang))
        n = len(compare_loops(name).naive_state["refunds"])
        assert said.startswith("✗") and t(f"exercise.said.not_it_{side}", lang, fault=name, n=n)[1:] in said, said
    plain = str(double_refund_fault("something else", lang=lang))  # not a fault of the table: the hint alone
    hint = t("exercise.said.find_the_tool_side", lang).lower()
    assert plain.lower().endswith(hint) and "side (" not in plain and "侧故障（" not in plain, plain


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_refusal_of_the_whole_call_is_said_to_a_learner_in_words_never_as_its_json_path(lang):
    """The build checks said the retail desk's "no order has that number" as "$：…", the whole call's JSON path."""
    from agentlab.errors import make_error
    from agentlab.tools import rule
    from agentlab.workbook.exercises import plain_problems
    said = plain_problems(make_error("INVALID_ARGS", problems=[rule("$", "no order has that number", "找不到这个订单"),
                                                               rule("amount", "must not exceed 199.0", "不能超过 199.0")]),
                          lang)
    assert "$" not in said and ("no order has that number" if lang == "en" else "找不到这个订单") in said, said
    assert "amount" in said, said



@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_schema_that_holds_itself_is_a_sentence_at_once(lang):
    """my_schema["properties"]["self"] = my_schema: notebook 01's check walked it for good (the stop button then
    printed the workbook's own traceback) and two build checks said "does your code loop forever?" after 20 s."""
    import time

    from agentlab.i18n import t
    from agentlab.workbook.builds_guards import build_refund_contract
    from agentlab.workbook.builds_site import skill_schema_holds
    from agentlab.workbook.exercises import schema_contract

    def holds_itself():
        schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
        schema["properties"]["self"] = schema
        return schema

    said = t("schema.contains_itself", lang, where="#").split("#")[0]
    for check in (lambda: schema_contract(holds_itself(), "Refund a paid order that has not shipped.", lang=lang),
                  lambda: build_refund_contract(holds_itself(), lang=lang),
                  lambda: skill_schema_holds(holds_itself(), lang=lang)):
        started = time.monotonic()
        feedback = check()
        assert time.monotonic() - started < 5 and not feedback.ok and said in feedback.message, feedback
