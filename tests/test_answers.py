"""A learner's typed answer read as a person types it (agentlab/workbook/answers.py)."""
import pytest

from agentlab.workbook.answers import judge_answer


@pytest.mark.parametrize("given, right, verdict", [
    ("it raises", "raises", True), ("It raises.", "raises", True), ("semantic class", "semantic", True),
    ("the semantic one", "semantic", True), ("it goes up", "up", True),
    ("it does not raise", "raises", False), ("raises or falls", "raises", False), ("it falls", "raises", False)])
def test_a_short_english_sentence_is_read_by_its_one_word_and_a_not_is_never_read_past(given, right, verdict):
    # "it raises" and "semantic class" were "Not quite" where "raises" and "semantic" were right
    assert judge_answer(given, right) is verdict


@pytest.mark.parametrize("given, right, unit, verdict", [
    ("约2秒", 2.0, "time", True), ("等待2秒", 2.0, "time", True), ("最多2秒", 2.0, "time", True),
    ("about 2 s", 2.0, "time", True), ("做对十二条。", 12, "count", True), ("对了12条", 12, "count", True),
    ("约2元", 2.0, "time", "exercise.wrong_unit_time"), ("不到2秒", 2.0, "time", "exercise.not_a_number"),
    ("约3秒", 2.0, "time", False), ("最多", 2.0, "time", "exercise.not_a_number")])
def test_a_number_with_the_words_a_person_puts_before_it_is_read_and_its_unit_still_counts(given, right, unit, verdict):
    # "约2秒", "等待2秒" and "最多2秒" read as no number where "2秒左右" was right; "不到" changes the number: no answer
    assert judge_answer(given, right, unit) == verdict


@pytest.mark.parametrize("given, right", [
    ("没有被拦截", "not_caught"), ("类型不对", "wrong_type"), ("金额类型错误", "wrong_type"), ("验证", "validate"),
    ("参数校验", "validation"), ("语义错误", "semantic"), ("语义类", "semantic")])
def test_the_chinese_words_learners_type_for_a_label_are_read_as_it(given, right):
    assert judge_answer(given, right) is True


@pytest.mark.parametrize("given, right, unit, verdict", [
    ("答案是2", 2, "count", True), ("答案：2", 2, "count", True), ("应该是2个", 2, "count", True),
    ("只有两个", 2, "count", True), ("推荐 2 个工具", 2, "count", True), ("答案是 12 条。", 12, "count", True),
    ("the answer is 12", 12, "count", True), ("不是2", 2, "count", "exercise.not_a_number"),
    ("答案是3", 2, "count", False)])
def test_a_number_after_the_answers_own_lead_in_is_read_as_a_word_answer_is(given, right, unit, verdict):
    # "答案是工具" was right where "答案是2" was "no number"
    assert judge_answer(given, right, unit) == verdict


@pytest.mark.parametrize("given, verdict", [("答案是“工具”。", True), ("角色是 tool", True), ("不是工具", False)])
def test_a_word_quoted_after_its_lead_in_is_read_by_the_word(given, verdict):
    assert judge_answer(given, "tool") is verdict


@pytest.mark.parametrize("given", ["答案是2或三", "2个或三个", "two or three", "one or two", "2秒不到", "约2秒不到",
                                   "三次以上", "2 or 3"])
def test_an_answer_that_names_two_numbers_or_a_bound_is_no_number(given):
    # "答案是2或三" read as 2 and "2秒不到" as 2 seconds: a bound or a choice is not the number asked for
    for right in (1, 2, 3):
        assert judge_answer(given, right, "count") is not True and judge_answer(given, right, "time") is not True


@pytest.mark.parametrize("given, right", [("答案是第3次", 3), ("the answer is about 2", 2), ("2秒左右", 2)])
def test_an_answer_with_its_order_or_a_second_lead_in_is_read(given, right):
    assert judge_answer(given, right) is True


@pytest.mark.parametrize("given, right", [
    ("更好了", "raise"), ("丢失回复", "lost_reply"), ("回复丢了", "lost_reply"), ("结构类", "structure"),
    ("结构错误", "structure"), ("结构问题", "structure"), ("拦不住", "not_caught"), ("不能拦截", "not_caught"),
    ("没被拦下来", "not_caught"), ("人工", "escalated"), ("转给人工客服", "escalated"), ("熔断器", "breaker"),
    ("熔断机制", "breaker"), ("the lost reply", "lost_reply"), ("it is not caught", "not_caught"),
    ("uncaught", "not_caught"), ("escalate", "escalated"), ("validation", "validate")])
def test_the_words_the_notebooks_themselves_use_and_learners_type_are_read_as_the_label(given, right):
    """An outside pass typed what the notebooks write and was refused: 熔断器 (the breaker, as notebook 06 calls it
    throughout) where 熔断 was read, 更好了 where 更好 was, "the lost reply" where "lost reply" was. A Chinese answer is
    read with its particles taken off each way (更好了 is 更好 and 好), and without the word for what kind of thing it
    is (器, 类, 问题, 错误, 机制); a short English sentence by all its words but the ones that carry them."""
    assert judge_answer(given, right) is True


@pytest.mark.parametrize("given, right", [
    ("not caught", "caught"), ("it is caught", "not_caught"), ("没拦住", "caught"), ("拦住了", "not_caught"),
    ("更差了", "raise"), ("the lost", "lost_reply"), ("it lowers", "raise"), ("执行错误", "structure")])
def test_what_is_taken_off_an_answer_never_turns_a_wrong_one_right(given, right):
    assert judge_answer(given, right) is False


@pytest.mark.parametrize("given", ["on the third identical call", "on the 3rd call", "at the third call", "第三次相同的调用"])
def test_an_order_said_with_when_it_happens_is_read_as_the_number(given):
    assert judge_answer(given, 3, "count") is True


@pytest.mark.parametrize("given, right, unit, verdict", [
    ("二点零秒", 2.0, "time", True), ("二点五秒", 2.5, "time", True), ("叁", 3, "count", True), ("叁次", 3, "count", True),
    ("贰秒", 2.0, "time", True), ("第叁次", 3, "count", True), ("二点零元", 2.0, "time", "exercise.wrong_unit_time"),
    ("叁秒", 3, "count", "exercise.wrong_unit_count")])
def test_a_chinese_decimal_and_the_numerals_of_receipts_are_read(given, right, unit, verdict):
    # "二点零秒" and "叁" were "no number" where "两秒" and "三次" were read
    assert judge_answer(given, right, unit) == verdict
