import pytest

from agentlab.models import ModelError, ScriptError, ScriptedModel, call, say


def test_scripted_model_records_and_complains():
    m = ScriptedModel([say("hi"), ModelError("RATE_LIMITED", retry_after=1)])
    assert m.complete([{"role": "user", "content": "x"}], [{"type": "function", "function": {"name": "t"}}]).content == "hi"
    assert m.calls[0].tools == ("t",) and m.calls[0].messages[0]["content"] == "x"
    with pytest.raises(ModelError):
        m.complete([], [])
    with pytest.raises(ScriptError):
        m.complete([], [])
    m2 = ScriptedModel([say("a"), say("b")])
    m2.complete([], [])
    with pytest.raises(ScriptError):
        m2.assert_used()


def test_reply_message_is_openai_shaped():
    msg = ScriptedModel([call("get_order", {"order_id": "A1"}, id="c1")]).complete([], []).message()
    assert msg == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1"}'}}]}


def test_model_error_classes():
    assert ModelError("RATE_LIMITED").transient and not ModelError("UNAUTHENTICATED").transient
    with pytest.raises(ValueError):
        ModelError("NOPE")
