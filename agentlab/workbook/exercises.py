"""Checks for the workbook's exercises: each says whether an answer is right, and why not.

They live here, not in the notebooks, so the notebooks stay thin and the checks are tested.
"""
from __future__ import annotations

from typing import Any

from ..guards import GuardConfig
from ..lint import lint
from ..retry import RetryPolicy
from ..schema import SchemaError
from ..tools import Registry, Tool

__all__ = ["answer_is", "breaker_threshold", "longest_wait", "schema_contract"]


def _verdict(ok: bool, good: str, bad: str) -> tuple[bool, str]:
    return ok, ("✅ " + good) if ok else ("❌ " + bad)


def schema_contract(schema: Any, description: str) -> tuple[bool, str]:
    """01: a refund schema with no linter warning or error, an enum for the reason, snake_case names."""
    try:
        reg = Registry([Tool("create_refund", description, schema)])
    except (SchemaError, TypeError, ValueError) as exc:
        return False, f"❌ the schema does not compile: {exc}"
    bad = [f for f in lint(reg) if f.severity != "info"]
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    has_enum = any("enum" in p for p in props.values() if isinstance(p, dict))
    if bad:
        return False, "❌ still " + "; ".join(f"{f.rule} at {f.location}: {f.message}" for f in bad[:4])
    return _verdict(has_enum, "no warnings, and the reason is a closed set. This is a contract.",
                    "no warnings, but the reason should be an enum.")


def answer_is(given: Any, right: Any, why: str) -> tuple[bool, str]:
    """A plain comparison with an explanation either way."""
    ok = str(given).strip().lower() == str(right).strip().lower()
    return _verdict(ok, why, f"not quite (you said {given!r}). Look again at the table above.")


def longest_wait(given: float, policy: RetryPolicy, attempt: int) -> tuple[bool, str]:
    """04: the un-jittered wait before resend number ``attempt`` (0-based)."""
    right = policy.backoff(attempt)
    return _verdict(abs(float(given) - right) < 1e-9, f"{right:g} s: base × 2^attempt, capped at {policy.cap:g}.",
                    f"not {given}: compute base × 2^attempt and apply the cap.")


def breaker_threshold(given: int, config: GuardConfig = GuardConfig()) -> tuple[bool, str]:
    """06: on which identical call does the breaker fire?"""
    return answer_is(given, config.repeat_limit, f"the {config.repeat_limit}rd identical call is refused: "
                     "two may be a retry, three is a loop.")
