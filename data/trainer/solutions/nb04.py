"""Notebook 04's build exercise, solved: resend only transient failures, with jittered waits that grow, never sooner
than a Retry-After, and give up after a few."""
from agentlab.retry import RetryPolicy

policy = RetryPolicy(max_retries=3, base=0.5, cap=8, jitter="full")


def my_wait(error, attempt, rng):
    if not error.transient or attempt >= policy.max_retries:
        return None  # a 401 or a 403 never gets better; and after a few resends, a person should know
    return policy.delay(attempt, rng, error.retry_after)
