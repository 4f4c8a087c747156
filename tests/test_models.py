import json
from dataclasses import replace

import pytest

from agentlab import GuardConfig, Registry, run_guarded
from agentlab.models import ModelError, ScriptedModel, ScriptError, SelfCorrectingModel, Step, call, say
from agentlab.store import MemoryStore


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


class _SendsFirst:
    """Around a model: its first call goes out with ``bad`` arguments, and the model is told it sent them."""

    def __init__(self, inner, bad):
        self.inner, self.bad, self.name = inner, bad, "sends-first"

    def complete(self, messages, tools):
        reply = self.inner.complete(messages, tools)
        if self.bad is not None and reply.tool_calls:
            sent = replace(reply.tool_calls[0], arguments=json.dumps(self.bad))
            self.inner.believe(sent)
            self.bad = None
            return replace(reply, tool_calls=(sent,))
        return reply


def test_the_self_correcting_model_repairs_enums_of_any_type_and_fields_named_with_dots_or_brackets():
    """Before, an integer enum was "repaired" to a string ("2"), and a field called "a.b" or "c[0]" was
    read as a nested path and never repaired: the probe then blamed the tool for the fake's own limits."""
    schema = {"type": "object", "properties": {
        "level": {"type": "integer", "enum": [1, 2, 3]}, "ratio": {"type": "number", "enum": [0.5, 1.5]},
        "flag": {"enum": [True, None]}, "a.b": {"type": "integer", "enum": [1, 2]}, "c[0]": {"type": "string", "enum": ["x", "y"]},
        "box": {"type": "object", "properties": {"n.m": {"type": "integer", "maximum": 5}, "k": {"type": "integer"}},
                "required": ["n.m", "k"]}},
        "required": ["level", "ratio", "flag", "a.b", "c[0]", "box"]}
    reg = Registry.from_specs([{"name": "t", "parameters": schema}])
    reg = Registry([replace(reg["t"], fn=lambda **kw: kw)])
    good = {"level": 2, "ratio": 1.5, "flag": None, "a.b": 2, "c[0]": "y", "box": {"n.m": 4, "k": 1}}
    bad = {"level": 7, "ratio": 9, "flag": "no", "a.b": 9, "c[0]": "z", "box": {"n.m": 99, "k": "1"}}
    assert reg.check("t", good).ok and not reg.check("t", bad).ok
    model = SelfCorrectingModel([Step("t", good)])
    run = run_guarded(_SendsFirst(model, bad), reg, "go", config=GuardConfig(), store=MemoryStore(), sleep=lambda s: None)
    ran = [e for e in run.tool_events if e.exec_ok]
    assert run.status == "done_after_self_correction", [e.model_visible for e in run.tool_events]
    assert json.loads(ran[0].args_raw) == good  # each value with its own JSON type
    assert model.plan[0].args == good  # repaired in a copy: the plan is untouched
