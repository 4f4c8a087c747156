"""tool_choice on the bookkeeping desk: the same model under four settings, and the local models' replays."""
import pytest
from conftest import skip_or_fail

from agentlab.evals.tool_choice_eval import ASKS, CHOICES, choice_cassette, replay_choices, run_choice, summary
from agentlab.models import ScriptedModel, call, say


def model():
    return ScriptedModel([say("Let me see."), call("delete_expense_record", {"record_id": "E0020", "reason": "asked"}),
                          call("search_expense_records", {"keyword": "coffee"}), say("Found it.")], then="Done.")


def test_each_setting_does_what_it_says_to_the_same_model():
    rows = {c: summary("delete-coffee", c, run_choice(model(), "delete-coffee", c)) for c in CHOICES}
    assert rows["auto"]["first call"] == "(words)" and rows["auto"]["status"] == "done"
    assert rows["none"]["first call"] == "(words)" and rows["none"]["ran"] == "-"
    assert rows["required"]["refused"] == 1  # the words were re-asked
    named = rows["search_expense_records"]
    assert named["refused"] >= 2 and "delete_expense_record" not in named["ran"]  # words and the delete refused


# only the 0.5B's tool_choice runs are recorded (notebook 13 says so); the 1.5B's would be made with
# python benchmarks/bench_tool_choice_local.py --sizes 1.5b, and added here with its file
@pytest.mark.parametrize("size", ["0.5b"])
def test_the_local_models_recordings_replay_offline(size):
    if not choice_cassette(size).exists():
        skip_or_fail(f"{choice_cassette(size).name} is missing from the checkout")
    from agentlab.models.cassette import read_cassette
    broken = [e["label"] for e in read_cassette(choice_cassette(size)) if "error" in e and not e["error"].get("unparsable")]
    assert not broken, f"the recording holds API failures, not the model's behaviour: {broken[:3]}"
    rows = replay_choices(size)
    assert {(r["ask"], r["tool_choice"]) for r in rows} == {(a, c) for a in ASKS for c in CHOICES}
    assert all(r["status"] != "failed" for r in rows)
    # "none" shows no tools: whatever the model does, nothing runs
    assert all(r["ran"] == "-" for r in rows if r["tool_choice"] == "none")
