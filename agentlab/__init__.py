"""agentlab: make LLM tool-calling agents reliable, one failure category at a time.

The core has no heavy imports: matplotlib, ipywidgets, pandas and openai load
only when a function that needs them is called.
"""
from .errors import Problem, ToolError, ToolFailure, friendly, make_error, redact, render
from .lint import Finding, lint
from .schema import SchemaError, compile_schema
from .tools import Checked, Registry, Tool, rule

__version__ = "0.1.0"

__all__ = [
    "Checked", "Finding", "Problem", "Registry", "SchemaError", "Tool", "ToolError", "ToolFailure",
    "compile_schema", "friendly", "lint", "make_error", "redact", "render", "rule",
]
