"""Model solution, notebook 11's build exercise: the expectation of the case the repeated-refund session becomes.

One refund of A1010 and a finished run: the naive replay refunds twice (red), the guarded replay once (green).
Never copied to participants."""

my_expect = {"refunds": [{"order_id": "A1010", "amount": 129}], "statuses": ["done", "done_after_self_correction"]}
