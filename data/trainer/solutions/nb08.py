"""Notebook 08's build exercise, solved: the guard that catches each fault (switched off, the fault gets through)."""

my_guards = {
    "camel_case": "validate",  # or readable_errors: without it the model cannot tell what to fix
    "duplicate_call": "idempotency",
    "api_429": "retry",
    "lost_reply": "idempotency",  # or retry: without it the lost reply ends the run
    "repeat_call": "repeat_limit",
    "ping_pong": "step_budget",
}
