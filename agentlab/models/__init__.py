"""Models: the protocol the loops speak, fakes that run offline, faults, and real models.

    interface.py     Model, Reply, ToolCall, ModelError: all the loops know about models
    fakes.py         ScriptedModel, SelfCorrectingModel: offline, deterministic
    faults.py        FaultyModel and tool faults injected on purpose
    openai_model.py  any OpenAI-compatible endpoint through the ``openai`` client
    fakeserver.py    an OpenAI-compatible test server of our own (scripted replies, HTTP faults)
    local.py         the small local model (llama.cpp server, hash-checked weights)
    cassette.py      recording and replaying a model's turns

Importing this package loads only the protocol; the rest load when first used.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .interface import Model, ModelCall, ModelError, Reply, ToolCall, Usage, call, say, tool_calls

__all__ = ["DatedModel", "DistractedModel", "FaultyModel", "Model", "ModelCall", "ModelError", "Reply", "ScriptError", "ScriptedModel",
           "SelfCorrectingModel", "Step", "ToolCall", "Usage", "call", "say", "tool_calls"]

_LAZY = {"DatedModel": "fakes", "DistractedModel": "fakes", "ScriptError": "fakes", "ScriptedModel": "fakes", "SelfCorrectingModel": "fakes", "Step": "fakes",
         "FaultyModel": "faults"}


def __getattr__(name: str) -> Any:
    # the fakes (and the value cleaner they use) load only when asked for, so the loops'
    # import of the protocol stays as light as the protocol
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
