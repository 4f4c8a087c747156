"""Frozen records made quickly (agentlab/records.py): the same records as the dataclass makes, in one step."""
import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from agentlab.calls import CallOutcome
from agentlab.models.interface import Reply, ToolCall, Usage
from agentlab.records import quick
from agentlab.runs import Run
from agentlab.tools import Checked
from agentlab.trace import Event


@pytest.mark.parametrize("cls", [Event, CallOutcome, Reply, ToolCall, Usage, Run, Checked])
def test_the_records_of_every_call_are_made_in_one_step_with_the_dataclass_signature(cls):
    init = cls.__init__
    assert "__setattr__" not in init.__code__.co_names  # no object.__setattr__ per field
    params = inspect.signature(init).parameters
    assert list(params)[1:] == [f.name for f in dataclasses.fields(cls)]
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        assert (params[f.name].default is inspect.Parameter.empty) == required
        if f.default is not dataclasses.MISSING:
            assert params[f.name].default is f.default
        assert params[f.name].annotation == f.type  # help() shows the field's type


def test_a_quick_record_is_the_record_the_dataclass_makes():
    @quick
    @dataclass(frozen=True)
    class Row:
        a: int
        b: str = "x"
        c: list = field(default_factory=list)

    @dataclass(frozen=True)
    class Plain:
        a: int
        b: str = "x"
        c: list = field(default_factory=list)

    r, p = Row(1), Plain(1)
    assert (r.a, r.b, r.c) == (p.a, p.b, p.c) and repr(r).endswith("Row(a=1, b='x', c=[])")
    assert Row(1, "y", [2]) == Row(a=1, b="y", c=[2]) and Row(1) != Row(2)
    assert Row(1).c is not Row(1).c  # a factory's default is made per record
    assert hash(Row(1, "y", ())) == hash(Row(a=1, b="y", c=()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.a = 2
    with pytest.raises(TypeError):
        Row()  # a required field is still required
    with pytest.raises(TypeError):
        Row(1, d=3)  # and no unknown one is taken


def test_a_record_quick_cannot_make_exactly_keeps_the_dataclass_init():
    @dataclass(frozen=True)
    class Checked:
        a: int

        def __post_init__(self):
            if self.a < 0:
                raise ValueError("negative")

    before = Checked.__init__
    assert quick(Checked).__init__ is before
    with pytest.raises(ValueError):
        Checked(-1)

    @dataclass(frozen=True, kw_only=True)
    class Named:
        a: int
    assert quick(Named).__init__ is Named.__init__ and Named(a=1).a == 1
