"""agentlab: make LLM tool-calling agents reliable, one failure category at a time.

The core is flat, a module per idea (errors, schema, tools, loop, store, retry, trace...);
around it a subpackage per family: ``models`` (the protocol, fakes, faults, real models),
``scenarios`` (the desks), ``evals`` (suites and metrics) and ``workbook`` (plots and
widgets). Lower layers never import higher ones (tests/test_layers.py).

Importing agentlab has no side effects and does not load matplotlib, ipywidgets,
pandas or openai; they load when a function that needs them is called.
"""
from .approval import approve, pending, reject, resolve
from .errors import Problem, ToolError, ToolFailure, UsageError, friendly, make_error, redact, render
from .guards import GUARDS, NO_GUARDS, GuardConfig
from .lint import Finding, lint
from .loop import CallContext, CallOutcome, run_guarded
from .models import Model, ModelError, Reply, ToolCall, call, say, tool_calls
from .naive import run_naive
from .retry import RetryPolicy
from .runs import STATUSES, Run, compare_html
from .schema import SchemaError, compile_schema
from .store import MemoryStore, SQLiteStore, Store
from .tools import Checked, Registry, Tool, rule
from .version import __version__ as __version__

__all__ = [
    "GUARDS", "NO_GUARDS", "STATUSES", "CallContext", "CallOutcome", "Checked", "Finding", "GuardConfig",
    "MemoryStore", "Model", "ModelError", "Problem", "Registry", "Reply", "RetryPolicy", "Run", "SQLiteStore",
    "SchemaError", "Store", "Tool", "ToolCall", "ToolError", "ToolFailure", "UsageError", "approve", "call",
    "compare_html", "compile_schema", "friendly", "lint", "make_error", "pending", "redact", "reject",
    "render", "resolve", "rule", "run_guarded", "run_naive", "say", "tool_calls",
]
