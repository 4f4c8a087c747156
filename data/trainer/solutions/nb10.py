"""Model solution, notebook 10's build exercise: a case that catches the release without the idempotency guard.

The model sends the refund twice (``duplicate_call``); with the guard the second call replays the first, without it the
breaker or the ledger shows the repeat. Never copied to participants (agentlab/hub/users.py copies notebooks only)."""

my_case = {
    "id": "adv-refund-sent-twice",
    "task": "Refund A1001 please.",
    "fake": {"plan": [["get_order", {"order_id": "A1001"}],
                      ["create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}]],
             "answer": "Done.", "fault": "duplicate_call", "at_step": 2},
    "expect": {"refunds": [{"order_id": "A1001", "amount": 199.0}], "statuses": ["done", "done_after_self_correction"]},
}
