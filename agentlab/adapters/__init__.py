"""agentlab's guards around the tools of other agent frameworks, one wrapping call each
(docs/guards.md#guards-in-other-frameworks): pydantic-ai (:func:`~agentlab.adapters.pydanticai.guard_toolset`),
the OpenAI Agents SDK (:func:`~agentlab.adapters.openai_agents.guard_function_tools`) and LangGraph
(:func:`~agentlab.adapters.lang_graph.guard_tools`). The frameworks are optional extras (``agentlab[pydantic-ai]``,
``agentlab[openai-agents]``, ``agentlab[langgraph]``); each is imported only when its wrapper is called.
"""
from __future__ import annotations

from .core import Contract, Guard

__all__ = ["Contract", "Guard"]
