"""Notebook 18's build exercise (agentlab/workbook/builds_repair.py): the learner's decision to re-ask or stop, run on
both local models' recorded re-asks.

Each attempt below is a decision a learner writes; the check must say, in both languages, what it keeps and what
still breaks. Where the BFCL dataset is, the recordings' reading (which re-ask got a call the checks passed) is checked
against the function docs themselves."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from conftest import DATASETS, ROOT, need
from typography import english_punctuation

from agentlab.workbook import builds_repair as r

NOT_YET, RIGHT, WRONG = {"en": "Not yet", "zh": "还没作答"}, {"en": "Right", "zh": "答对了"}, {"en": "Not quite", "zh": "还不对"}


def _solution():
    spec = importlib.util.spec_from_file_location("solution_nb18", ROOT / "data" / "trainer" / "solutions" / "nb18.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.my_reask


def _stop_on_unknown_tool(refused):
    """"The model cannot fix a name": stop on an unknown function, re-ask on everything else."""
    return refused[-1]["errors"][0]["code"] != "UNKNOWN_TOOL"


def _raises(refused):
    raise KeyError("calls")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_model_solution_keeps_every_repair_and_stops_on_a_repeated_call(lang):
    said = r.reask_policy_holds(_solution(), lang=lang)
    assert said.state == "right" and said.message.startswith("✓ " + RIGHT[lang]), said.message
    by_size = {"en": "0.5b: 5, 1.5b: 33", "zh": "0.5b：5、1.5b：33"}[lang]  # a Chinese list, as Chinese writes one
    assert all(n in said.message for n in ("38", by_size, "201", "283", "82")), said.message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_re_asking_once_also_passes_and_is_told_no_second_re_ask_helped(lang):
    once = r.reask_policy_holds(lambda refused: len(refused) < 2, lang=lang)
    assert once.state == "right" and "168" in once.message and "115" in once.message, once.message
    second = {"en": "after a changed call", "zh": "改过调用却又被拒"}[lang]
    assert second not in once.message and second in r.reask_policy_holds(_solution(), lang=lang).message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_never_re_asking_loses_every_repair_and_names_one(lang):
    said = r.reask_policy_holds(lambda refused: False, lang=lang)
    assert said.state == "wrong" and said.message.startswith("✗ " + WRONG[lang]), said.message
    assert {"en": "you stop before 38 re-asks", "zh": "有 38 次重问"}[lang] in said.message
    assert {"en": "BAD_JSON 10, INVALID_ARGS 7, UNKNOWN_TOOL 21", "zh": "BAD_JSON 10、INVALID_ARGS 7、UNKNOWN_TOOL 21"}[lang] \
        in said.message
    # what already holds is said too: no re-ask is spent on a repeated call
    assert {"en": "Holds: you stop after each of the 82", "zh": "已经做到：在 82 条"}[lang] in said.message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_always_re_asking_spends_turns_on_a_model_that_did_not_read_the_error(lang):
    said = r.reask_policy_holds(lambda refused: True, lang=lang)
    assert said.state == "wrong", said.message
    assert {"en": "BAD_JSON 5, INVALID_ARGS 35, UNKNOWN_TOOL 42", "zh": "BAD_JSON 5、INVALID_ARGS 35、UNKNOWN_TOOL 42"}[lang] \
        in said.message and "simple_python_56" in said.message
    assert {"en": "Holds: all 38", "zh": "38 次重问都保住了"}[lang] in said.message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_stopping_on_a_kind_of_error_is_told_both_what_it_loses_and_what_it_wastes(lang):
    said = r.reask_policy_holds(_stop_on_unknown_tool, lang=lang)
    assert said.state == "wrong" and "UNKNOWN_TOOL 21" in said.message
    assert {"en": "BAD_JSON 5, INVALID_ARGS 35", "zh": "BAD_JSON 5、INVALID_ARGS 35"}[lang] in said.message
    assert said.message.count({"en": "Still breaks", "zh": "仍有问题"}[lang]) == 2, said.message
    # two sentences follow each other as the language writes them (…通过了检查。 已经做到… had an English space)
    assert lang == "en" or not english_punctuation(said.message), english_punctuation(said.message)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_blank_a_value_an_odd_verdict_and_code_that_raises_each_get_a_sentence(lang):
    for blank in (None, lambda refused: None):
        said = r.reask_policy_holds(blank, lang=lang)
        assert said.state == "not yet" and NOT_YET[lang] in said.message and "my_reask" in said.message
        assert "{{" not in said.message, said.message
    value = r.reask_policy_holds(True, lang=lang)
    assert value.state == "wrong" and "True" in value.message
    odd = r.reask_policy_holds(lambda refused: "yes", lang=lang)
    assert odd.state == "wrong" and "'yes'" in odd.message and "simple_python_56" in odd.message
    raised = r.reask_policy_holds(_raises, lang=lang)
    assert raised.state == "wrong" and "KeyError" in raised.message and "Traceback" not in raised.message
    assert {"en": "Whatever it is asked", "zh": "不管被问到什么"}[lang] in raised.message


def test_the_learner_gets_copies_so_a_decision_that_edits_them_changes_nothing():
    def greedy(refused):
        verdict = _solution()(refused)
        refused[-1]["calls"].clear()
        refused.clear()
        return verdict
    assert r.reask_policy_holds(greedy).state == "right"
    assert all(reply for conv in r.recorded_reasks() for reply in conv.replies[:-1])


def test_the_check_reads_only_the_shipped_recordings(monkeypatch, tmp_path):
    # (its speed is no assertion here: a loaded host slows any test; the datasets' absence is what is held)
    monkeypatch.setenv("AGENTLAB_DATASETS", str(tmp_path / "absent"))
    r.recorded_reasks.cache_clear()
    assert r.reask_policy_holds(_solution()).ok
    convs = r.recorded_reasks()
    assert {c.size for c in convs} == {"0.5b", "1.5b"} and len(convs) == 168
    assert all(len(c.errors) == len(c.replies) - 1 and all(c.errors) for c in convs)


def test_the_recordings_are_read_truly_against_the_function_docs():
    """Offline, a re-ask's result is read from the conversation's length: it ended before the budget on a call, so
    the checks passed it. With the BFCL function docs, every reply is checked as the loop checked it."""
    need(DATASETS / "bfcl" / "data", "BFCL dataset")
    from agentlab.evals import bfcl
    from agentlab.models.cassette import reply_from_dict
    questions = {q.id: q for q in bfcl.questions(root=DATASETS / "bfcl")}
    for conv in r.recorded_reasks():
        reg = bfcl._registry(bfcl.tools_for(questions[conv.question])[0])
        passed = [bool(reply) and bfcl._all_valid(reg, reply_from_dict(
                      {"content": None, "tool_calls": [{"id": f"c{i}", **c} for i, c in enumerate(reply)]}))
                  for reply in conv.replies]
        assert not any(passed[:-1]), conv.question  # every reply but the last was refused
        assert passed[-1] == conv.repaired, conv.question


def test_the_messages_exist_in_both_languages_and_the_names_collide_with_no_other_module():
    en = json.loads((ROOT / "data/i18n/en.json").read_text(encoding="utf-8"))
    zh = json.loads((ROOT / "data/i18n/zh.json").read_text(encoding="utf-8"))
    used = set(re.findall(r'"(build\.[\w.]+)"', Path(r.__file__).read_text(encoding="utf-8")))
    assert used and used <= set(en) and used <= set(zh), used - set(en)
    for key in used:
        assert sorted(re.findall(r"(?<!{){(\w+)(?::[^{}]*)?}", en[key])) == \
            sorted(re.findall(r"(?<!{){(\w+)(?::[^{}]*)?}", zh[key])), key
    from agentlab.workbook import builds_systems
    assert not set(r.__all__) & set(builds_systems.__all__)
