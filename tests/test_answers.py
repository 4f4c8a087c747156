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
