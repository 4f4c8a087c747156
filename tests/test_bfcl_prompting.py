"""BFCL asked the leaderboard's own way (agentlab/evals/bfcl_prompting.py), beside the leaderboard's figures.

The prompt and the decoder are the evaluator's (the ``bfcl`` extra): those tests skip without it on a user's machine and
fail in CI. Scripted text models stand in for the local model: the raw way grades the first reply, the guarded way
re-asks a call its function's schema refuses, with the readable error in the prompt.
"""
import json
import urllib.request

import pytest
from conftest import ROOT, skip_or_fail

from agentlab.evals import bfcl, bfcl_compare, bfcl_official
from agentlab.evals import bfcl_prompting as bp
from agentlab.i18n import t
from agentlab.models.interface import Reply

PARALLEL = bfcl.Question(
    "parallel_9", "parallel", ({"role": "user", "content": "Play Taylor Swift for 20 minutes and Maroon 5 for 15."},),
    ({"name": "spotify.play", "description": "Play songs of an artist.",
      "parameters": {"type": "dict", "properties": {"artist": {"type": "string"}, "duration": {"type": "integer"}},
                     "required": ["artist", "duration"]}},),
    ({"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
     {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}}))
IRRELEVANT = bfcl.Question("irrelevance_9", "irrelevance", ({"role": "user", "content": "What is love?"},),
                           PARALLEL.functions, ())
RIGHT = '[spotify.play(artist="Taylor Swift", duration=20), spotify.play(artist="Maroon 5", duration=15)]'
EXTRA_FIELD = '[spotify.play(artist="Taylor Swift", duration=20, duration2=15)]'


class Scripted:
    """A text model: its replies in order, and every prompt it was sent."""

    name = "scripted"

    def __init__(self, *texts):
        self.texts, self.seen = list(texts), []

    def complete(self, messages, tools):
        self.seen.append(messages)
        return Reply(self.texts.pop(0))


@pytest.fixture(scope="module")
def extra():
    if not bfcl_official.evaluator_installed():
        skip_or_fail(f"the bfcl extra is not installed ({bfcl_official.INSTALL})")


def test_the_prompt_is_the_leaderboards_own_and_chatml_is_qwens(extra):
    messages = bp.prompt_messages(PARALLEL)
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    assert "[func_name1(params_name1=params_value1" in system and '"spotify.play"' in system
    text = bp.chatml(messages)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert bp.chatml([{"role": "tool", "content": "refused"}]) == "<|im_start|>user\nrefused<|im_end|>\n<|im_start|>assistant\n"


def test_the_leaderboards_decoder_reads_a_python_list_and_nothing_else(extra):
    assert bp.decode_prompted(RIGHT) == [("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
                                ("spotify.play", {"artist": "Maroon 5", "duration": 15})]
    assert bp.decode_prompted("I cannot help with that.") is None
    assert bp.decode_prompted("```\n[f(x=1)]\n```") == [("f", {"x": 1})]


def test_raw_grades_the_first_reply_by_both_checkers(extra):
    a = bp.ask_prompted(PARALLEL, "raw", Scripted(RIGHT))
    assert (a.ours, a.official, a.turns, len(a.calls)) == (True, True, 1, 2)
    wrong = bp.ask_prompted(PARALLEL, "raw", Scripted(EXTRA_FIELD))
    assert (wrong.ours, wrong.official) == (False, False) and wrong.official_error.endswith("wrong_count")
    words = bp.ask_prompted(IRRELEVANT, "raw", Scripted("None of the functions can answer that."))
    assert words.official and words.ours and not words.decoded
    called = bp.ask_prompted(IRRELEVANT, "raw", Scripted('[spotify.play(artist="love", duration=1)]'))
    assert not called.official and not called.ours


def test_guarded_re_asks_a_refused_call_with_the_readable_error_and_grades_the_last_reply(extra):
    model = Scripted(EXTRA_FIELD, RIGHT)
    a = bp.ask_prompted(PARALLEL, "guarded", model)
    assert (a.official, a.ours, a.turns) == (True, True, 2)
    second = model.seen[1]
    assert second[-2]["role"] == "assistant" and second[-2]["content"] == EXTRA_FIELD  # its own words, as written
    assert "INVALID_ARGS" in second[-1]["content"] and "duration2" in second[-1]["content"]
    assert not a.resent
    # a reply the checks pass ends the question at once: nothing more is asked
    once = Scripted(RIGHT)
    assert bp.ask_prompted(PARALLEL, "guarded", once).turns == 1 and len(once.seen) == 1
    # the same refused text every time: re-asked, and the error went unread
    deaf = bp.ask_prompted(PARALLEL, "guarded", Scripted(EXTRA_FIELD, EXTRA_FIELD, EXTRA_FIELD))
    assert deaf.resent and deaf.turns == 3 and not deaf.official


def test_the_text_model_sends_the_leaderboards_system_prompt_not_the_loops(extra, monkeypatch):
    sent = []

    class Response:
        def __init__(self, body):
            self.body = body

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return json.dumps({"content": RIGHT, "tokens_evaluated": 10, "tokens_predicted": 5}).encode()

    monkeypatch.setattr(urllib.request, "urlopen", lambda req, timeout: sent.append(json.loads(req.data)) or Response(req))
    model = bp.TextCompletion("http://127.0.0.1:9/v1", PARALLEL)
    reply = model.complete([{"role": "system", "content": "the loop's own words"}, {"role": "user", "content": "hi"}], [])
    assert reply.content == RIGHT and sent[0]["temperature"] == 0
    assert sent[0]["prompt"] == bp.chatml([bp.prompt_messages(PARALLEL)[0], {"role": "user", "content": "hi"}])
    assert "the loop's own words" not in sent[0]["prompt"]


def test_replay_regrades_the_recorded_words_both_ways(extra, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": "parallel_9", "turn": i, "text": x}) + "\n"
                            for i, x in enumerate((EXTRA_FIELD, RIGHT), 1)), encoding="utf-8")
    replayed = bp.replay_prompted(path, [PARALLEL, IRRELEVANT])
    assert len(replayed) == 2  # the question with no recording is left out
    got = {a.way: a for a in replayed}
    assert (got["raw"].official, got["guarded"].official, got["guarded"].turns) == (False, True, 2)
    # cut short mid re-ask: left out whole, raw reply too
    path.write_text(json.dumps({"id": "parallel_9", "turn": 1, "text": EXTRA_FIELD}) + "\n", encoding="utf-8")
    assert bp.replay_prompted(path, [PARALLEL]) == []
    # more replies recorded than the replay asks for: the code no longer asks what was recorded
    path.write_text("".join(json.dumps({"id": "parallel_9", "turn": i, "text": x}) + "\n"
                            for i, x in enumerate((RIGHT, RIGHT), 1)), encoding="utf-8")
    with pytest.raises(ValueError, match="record it again"):
        bp.replay_prompted(path, [PARALLEL])


def test_wilsons_interval_and_the_verdict():
    assert bp.wilson(68, 100) == (58.3, 76.3)
    assert bp.wilson(0, 11) == (0.0, 25.9) and bp.wilson(8, 8)[1] == 100.0
    assert bp.reproduced(0, 11, 0.0) is True  # the bound itself counts: the leaderboard's 0.0 beside 0 of 11
    assert bp.reproduced(0, 100, 53.5) is False and bp.reproduced(5, 10, None) is None
    # decided on the unrounded bounds: 44 of 100 is 34.67-53.77, shown as 34.7-53.8
    assert bp.reproduced(44, 100, 34.68) is True and bp.reproduced(44, 100, 53.78) is False


def test_the_leaderboards_figures_name_their_table_and_column():
    board = bp.leaderboard()
    assert set(board["models"]) == {"0.5b", "1.5b"}
    for size, m in board["models"].items():
        assert "Instruct (Prompt)" in m["name"]
        assert set(m["categories"]) == set(m["columns"]), size
        for cat, (table, column) in m["columns"].items():
            assert table in board["sources"] and column, (size, cat)
        assert set(m["categories"]) <= {*bfcl.CATEGORIES, "multi_turn_base"}
    # two figures as published (Qwen2.5 Instruct, prompt mode): a hand-copied table is checked where it is cheap
    assert board["models"]["0.5b"]["categories"]["parallel"] == 53.5
    assert board["models"]["1.5b"]["categories"]["multiple"] == 86.0


def test_figures_put_the_leaderboard_beside_ours_per_category():
    attempts = [bp.PromptedAttempt(f"parallel_{i}", "parallel", way, (), i < k, i < k, None,
                                   1 if way == "raw" or i < 6 else 3, True, way == "guarded" and i >= 8)
                for way, k in (("raw", 5), ("guarded", 7)) for i in range(10)]
    (row,) = bp.prompting_figures(attempts, "0.5b")
    assert row == {"category": "parallel", "n": 10, "leaderboard": 53.5, "ours_raw": 50.0, "official_raw": 50.0,
                   "official_guarded": 70.0, "interval": [23.7, 76.3], "reproduced": True, "reasked": 4, "resent": 2,
                   "changed": 2}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_verdict_claims_what_the_guards_add_only_where_the_figure_is_reproduced(lang):
    rows = {"0.5b": [{"category": "multiple", "n": 100, "leaderboard": 68.0, "ours_raw": 70.0, "official_raw": 70.0,
                      "official_guarded": 74.0, "interval": [60.4, 78.1], "reproduced": True, "reasked": 9,
                      "resent": 3, "changed": 4},
                     {"category": "parallel", "n": 100, "leaderboard": 53.5, "ours_raw": 20.0, "official_raw": 20.0,
                      "official_guarded": 40.0, "interval": [13.3, 28.9], "reproduced": False, "reasked": 30,
                      "resent": 10, "changed": 20}]}
    said = bp.LeaderboardWay(False, rows, "x").verdict_said("0.5b", lang)
    assert "multiple 70.0 → 74.0" in said and "20.0 → 40.0" not in said
    assert {"en": "parallel (20.0 vs 53.5)", "zh": "parallel（官方评分器 20.0，排行榜 53.5）"}[lang] in said, said
    none = bp.LeaderboardWay(False, {"0.5b": rows["0.5b"][1:]}, "x").verdict_said("0.5b", lang)
    assert "→" not in none
    assert t("nb18.prompting_reasks", lang, n=200, reasked=39, resent=13, changed=24) in said  # summed over categories
    nothing = [dict(r, leaderboard=None, reproduced=None) for r in rows["0.5b"]]
    quiet = bp.LeaderboardWay(False, {"0.5b": nothing}, "x").verdict_said("0.5b", lang)
    assert quiet.startswith(t("nb18.prompting_nothing_published", lang, size="0.5b")) and "→" not in quiet


def test_the_multi_turn_rows_stand_beside_the_leaderboard_never_reproduce_it():
    """They were asked through the workbook's template: a figure beside the leaderboard's, not a reproduction."""
    rows = bp.multi_turn_rows({"0.5b": {"raw": {"n": 11, "accuracy": 0.0}, "guarded": {"n": 11, "accuracy": 0.0}}})
    assert rows["0.5b"]["leaderboard"] == 0.0 and rows["0.5b"]["reproduced"] is None


def test_the_shipped_file_is_a_fresh_grading_of_the_recordings(extra):
    if not bfcl.bfcl_dir().exists():
        skip_or_fail("the BFCL data is not in the datasets folder")
    shipped = bp.read_prompting()
    assert not shipped.live and shipped.rows == bp.grade_prompting().rows


@pytest.mark.parametrize("readme, lang", [("README.md", "en"), ("README.zh.md", "zh")])
def test_the_readmes_leaderboard_table_is_the_shipped_figures(readme, lang):
    table = bp.leaderboard_table(bp.read_prompting(), lang, bfcl_compare.read_official().multi)
    assert table in (ROOT / readme).read_text(encoding="utf-8")
