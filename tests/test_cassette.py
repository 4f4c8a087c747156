from agentlab.guards import GuardConfig
from agentlab.loop import run_guarded
from agentlab.models import ModelError, ScriptedModel, call, say
from agentlab.models.cassette import CassetteModel, RecordingModel, labels
from agentlab.models.faults import FaultyModel
from agentlab.naive import run_naive
from agentlab.scenarios import aftersales
from agentlab.workbook.demo import make_model


def test_record_then_replay_through_either_loop(tmp_path):
    path = tmp_path / "c.jsonl"
    desk, reg = aftersales.SCENARIO.setup()
    live = run_guarded(RecordingModel(make_model(), path, label="refund"), reg, "refund A1001", sleep=lambda s: None)
    assert labels(path) == ["refund"]
    desk2, reg2 = aftersales.SCENARIO.setup()
    replay = run_guarded(CassetteModel(path, "refund"), reg2, "refund A1001", sleep=lambda s: None)
    assert [e.args_raw for e in replay.tool_events] == [e.args_raw for e in live.tool_events]
    assert replay.status == live.status and desk2.snapshot() == desk.snapshot()
    _desk3, reg3 = aftersales.SCENARIO.setup()
    assert run_naive(CassetteModel(path, "refund"), reg3, "x").status == "done"
    _desk4, reg4 = aftersales.SCENARIO.setup()  # another guard config, same replies
    assert run_guarded(CassetteModel(path, "refund"), reg4, "x", config=GuardConfig(step_budget=1)).status == "budget_exhausted"


def test_errors_are_recorded_and_replayed(tmp_path):
    path = tmp_path / "c.jsonl"
    rec = RecordingModel(ScriptedModel([ModelError("RATE_LIMITED", retry_after=2), say("ok")]), path, label="x")
    _desk, reg = aftersales.SCENARIO.setup()
    waits = []
    assert run_guarded(rec, reg, "x", sleep=waits.append).status == "done"
    waits2 = []
    assert run_guarded(CassetteModel(path), reg, "x", sleep=waits2.append).status == "done" and waits2[0] >= 2


def test_faults_inject_into_replayed_real_replies(tmp_path):
    path = tmp_path / "c.jsonl"
    _desk, reg = aftersales.SCENARIO.setup()
    run_guarded(RecordingModel(ScriptedModel([call("get_order", {"order_id": "A1001"}), say("paid")]), path), reg, "x")
    _desk, reg = aftersales.SCENARIO.setup()
    run = run_guarded(FaultyModel(CassetteModel(path, then="ok"), "camel_case", at_step=1), reg, "x")
    assert run.tool_events[0].error_code == "INVALID_ARGS"


def test_a_conversation_read_from_a_file_read_before_is_the_same_and_new_lines_are_seen(tmp_path):
    """A file's labels are indexed once (a replay made a model per conversation, each parsing the whole file); what a
    model reads is still its own conversation, in order, as new objects, and a line appended since is read."""
    import json

    from agentlab.models import cassette
    path = tmp_path / "c.jsonl"
    rows = [{"label": "a", "reply": {"content": "1"}}, {"label": "b", "reply": {"content": "2"}},
            {"label": "a", "reply": {"content": "3"}}, {"label": ["odd"], "reply": {"content": "4"}}, {"reply": {}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n", encoding="utf-8")
    assert cassette.read_cassette(path) == rows
    assert cassette.read_cassette(path, "a") == [rows[0], rows[2]] and cassette.read_cassette(path, "c") == []
    assert labels(path) == ["a", "b"]
    first = cassette.read_cassette(path, "a")
    first[0]["reply"]["content"] = "changed by a caller"
    assert cassette.read_cassette(path, "a")[0]["reply"]["content"] == "1"  # never a shared object
    assert cassette._index(path) is cassette._index(path)  # parsed once while the file stays as it is
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"label": "b", "reply": {"content": "5"}}) + "\n")
    assert [e["reply"]["content"] for e in CassetteModel(path, "b").entries] == ["2", "5"]
