"""BFCL multi-turn, raw loop against guarded loop (agentlab/evals/bfcl_multi.py).

Scripted models stand in for the local ones: one that sends the ground truth is graded right by the official checker
through both loops; one that repeats a call is stopped by the raw loop's step limit and by the guard's repeat breaker;
a call to a function that does not exist runs in the raw loop (an execution error) and is refused by the guard. The
recordings replay the same conversations. Needs the ``bfcl`` extra (skipped without it, failed in CI).
"""
import ast
import json

import pytest
from conftest import skip_or_fail

from agentlab.evals import bfcl_multi, bfcl_official
from agentlab.models import Reply, ToolCall


@pytest.fixture(scope="module", autouse=True)
def extra():
    if not bfcl_official.evaluator_installed():
        skip_or_fail(f"the bfcl extra is not installed ({bfcl_official.INSTALL})")


@pytest.fixture(scope="module")
def entries():
    return {e["id"]: e for e in bfcl_official.multi_turn_entries()}


class Script:
    """Replies in order; past the end, words (the turn ends)."""

    def __init__(self, replies):
        self.replies, self.name, self.asked = list(replies), "script", 0

    def complete(self, messages, tools):
        self.asked += 1
        return self.replies.pop(0) if self.replies else Reply("done")


def _call(s, i):
    node = ast.parse(s, mode="eval").body
    assert not node.args, s  # the entries used here name every argument
    return ToolCall(node.func.id, json.dumps({k.arg: ast.literal_eval(k.value) for k in node.keywords}), f"c{i}")


def _ground_truth_script(entry):
    out = []
    for turn in entry["ground_truth"]:
        out += [Reply(None, tuple(_call(s, i) for i, s in enumerate(turn))), Reply("done")]
    return Script(out)


def _keyword_only(entries):
    return next(e for e in entries.values() if all(not ast.parse(s, mode="eval").body.args
                                                   for turn in e["ground_truth"] for s in turn))


@pytest.mark.parametrize("mode", bfcl_multi.MODES)
def test_the_ground_truth_is_graded_right_through_either_loop(entries, mode):
    e = _keyword_only(entries)
    c = bfcl_multi.run_entry(e, mode, _ground_truth_script(e))
    assert c.correct and c.error_type is None, c
    assert [list(turn) for turn in c.steps] == [[tuple(g)] for g in e["ground_truth"]]
    assert c.model_turns == 2 * len(e["ground_truth"]) and c.refused == 0


def test_a_repeated_call_meets_the_step_limit_raw_and_the_repeat_breaker_guarded(entries):
    e = _keyword_only(entries)
    first = _call(e["ground_truth"][0][0], 0)
    raw = bfcl_multi.run_entry(e, "raw", Script([Reply(None, (first,))] * 100))
    assert raw.forced and not raw.correct and raw.error_type == "multi_turn:force_terminated"
    assert len(raw.steps) == 1 and len(raw.steps[0]) == bfcl_multi.STEP_LIMIT + 1
    guarded = bfcl_multi.run_entry(e, "guarded", Script([Reply(None, (first,))] * 100))
    assert guarded.endings[0] == "escalated" and len(guarded.steps) == len(e["ground_truth"])
    assert guarded.model_turns < raw.model_turns


def test_an_unknown_function_runs_raw_and_is_refused_guarded(entries):
    e = _keyword_only(entries)
    bad = Reply(None, (ToolCall("no_such_function", "{}", "c0"),))
    raw = bfcl_multi.run_entry(e, "raw", Script([bad]))
    assert raw.steps[0] == (("no_such_function()",),) and raw.refused == 0
    guarded = bfcl_multi.run_entry(e, "guarded", Script([bad]))
    assert guarded.refused == 1 and guarded.steps[0] == ()


def test_a_reply_that_does_not_decode_ends_the_raw_turn(entries):
    e = _keyword_only(entries)
    raw = bfcl_multi.run_entry(e, "raw", Script([Reply(None, (ToolCall("ls", "{broken", "c0"),))]))
    assert raw.steps[0] == () and raw.model_turns == len(e["ground_truth"])


def test_the_sample_is_fixed_and_a_smaller_one_is_its_prefix():
    assert bfcl_multi.sample_ids(20)[:7] == bfcl_multi.sample_ids(7)
    assert len(set(bfcl_multi.sample_ids(20))) == 20


def test_a_recorded_conversation_replays_to_the_same_verdict(entries, tmp_path):
    e = _keyword_only(entries)
    path = tmp_path / "multi.jsonl"
    live = [bfcl_multi.record_entry(e, m, _ground_truth_script(e), path) for m in bfcl_multi.MODES]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert all("messages_from" in x for x in lines) and lines[1]["messages_from"] > 0
    assert bfcl_multi.replay_conversations(path) == live


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_the_local_models_recordings_replay_whole_without_a_model(size):
    path = bfcl_multi.cassette(size)
    if not path.exists():
        pytest.skip(f"no multi-turn recording of {size}")
    from agentlab.models.cassette import labels
    both = [i for i in dict.fromkeys(x.rsplit("/", 1)[0] for x in labels(path))
            if all(f"{i}/{m}" in labels(path) for m in bfcl_multi.MODES)]
    if not both:
        pytest.skip(f"no entry of {size} recorded both ways yet")
    conversations = bfcl_multi.replay_conversations(path)
    assert [c.id for c in conversations[::2]] == both
    fig = bfcl_multi.multi_turn_figures(conversations)
    assert fig["raw"]["n"] == fig["guarded"]["n"] == len(conversations) / 2
