"""GuardConfig (agentlab/guards.py): a setting no guard can use is said before anything runs, in either language."""
import math

import pytest

from agentlab import GuardConfig, Registry, Tool
from agentlab.guards import GUARDS, NO_GUARDS, BadSetting
from agentlab.i18n import said
from agentlab.loop import run_guarded
from agentlab.models import call, say, tool_calls
from agentlab.models.fakes import ScriptedModel


@pytest.mark.parametrize("setting", [
    {"step_budget": "10"}, {"step_budget": -1}, {"step_budget": 0}, {"step_budget": True}, {"repeat_limit": 2.5},
    {"self_correction": -1}, {"timeout": math.nan}, {"timeout": 0}, {"timeout": "5"}, {"run_deadline": math.inf},
    {"validate": 1}, {"idempotency": None}, {"retry": 3}, {"lease": None}, {"max_calls_per_turn": 0},
])
def test_a_setting_no_guard_can_use_is_said_before_the_run(setting):
    """GuardConfig(step_budget="10") ended in a TypeError deep in the loop ("can only concatenate str"), and a budget
    of -1 stopped every run before it began, as if the model had run out of turns."""
    config = GuardConfig(**setting)  # made as written: said when a loop is asked to use it
    ran = []
    reg = Registry([Tool("lookup", "Look an order up.", {"type": "object", "properties": {}}, fn=lambda: ran.append(1))])
    with pytest.raises(BadSetting) as caught:
        run_guarded(ScriptedModel([tool_calls(call("lookup", {})), say("done")]), reg, "x", config=config)
    assert not ran
    name = next(iter(setting))
    en, zh = said(caught.value, "en"), said(caught.value, "zh")
    assert f"GuardConfig({name}=...)" in en and f"GuardConfig({name}=...)" in zh and "取值应为" in zh, (en, zh)


@pytest.mark.parametrize("config", [GuardConfig(), NO_GUARDS, GuardConfig(self_correction=0, timeout=0.25, step_budget=1,
                                                                          repeat_limit=None, run_deadline=None)])
def test_every_setting_the_workbook_uses_is_one_a_guard_can_use(config):
    assert config.checked() is config


def test_switching_off_a_guard_there_is_none_of_names_the_guards():
    with pytest.raises(ValueError) as caught:  # BadSetting is a ValueError, as this was
        GuardConfig().without("seatbelt")
    assert "seatbelt" in said(caught.value, "zh") and "、".join(GUARDS) in said(caught.value, "zh")


def test_a_number_a_notebook_holds_is_a_setting_and_no_config_is_said_so():
    """numpy's int64 (a notebook's count), 8.0 and a Fraction were refused as no number once the settings were
    checked; config=None ended in "'NoneType' object has no attribute 'checked'"."""
    from fractions import Fraction

    import numpy as np

    from agentlab.calls import CallContext
    for setting in ({"step_budget": np.int64(8)}, {"step_budget": 8.0}, {"timeout": Fraction(1, 2)},
                    {"repeat_limit": np.int32(3)}, {"run_deadline": np.float64(30)}):
        GuardConfig(**setting).checked()
    with pytest.raises(BadSetting) as caught:
        CallContext(Registry([]), None)  # type: ignore[arg-type]
    assert "GuardConfig" in said(caught.value, "zh") and "NoneType" in said(caught.value, "en")


def test_a_tool_that_names_no_code_fails_as_data_and_its_author_is_told():
    """A ToolFailure with a code agentlab has not ("INTERNAL") ended the whole run (an UnknownCode); inside a tool it
    is a failed call like any other, and the trace's note names the mistake."""
    from agentlab.errors import ToolFailure

    def lookup():
        raise ToolFailure("INTERNAL", "backend down")
    reg = Registry([Tool("lookup", "Look an order up.", {"type": "object", "properties": {}}, fn=lookup)])
    run = run_guarded(ScriptedModel([tool_calls(call("lookup", {})), say("done")]), reg, "x")
    tool = [e for e in run.events if e.kind == "tool"]
    assert tool and tool[0].error_code == "TOOL_ERROR" and "is not an error code" in (tool[0].note or "")
