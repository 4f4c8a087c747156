# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Transient, validation, fatal
#
# One question sorts every failure for the code that handles it (docs/failures.md#category): **would sending the
# very same thing again help?**
#
# * **transient**: 429, timeouts, 5xx, a dropped connection. Resend, later, with exponential backoff
#   and jitter, and give up after a cap;
# * **validation**: the model's call was wrong. Resending it unchanged cannot help; show the
#   model the error and let it fix the call;
# * **fatal**: 401, 403, 404, a guard. Stop at once and tell the user in plain words.

# %% [markdown]
# **After this notebook you can:**
#
# - sort a failure as transient, validation or fatal by asking whether sending the very same thing again would help
# - read a retry schedule with exponential backoff and jitter, and compute its waits
# - explain from the simulation why clients retrying in lockstep overload a server again
#
# **Before it:** [03 · Errors the model can read](03_readable_errors.ipynb).
#
# **Time:** about 30 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

import random

import pandas as pd

from agentlab.i18n import colon, joined, label
from agentlab.scenarios import aftersales
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import longest_wait
from agentlab.loop import run_guarded
from agentlab.naive import run_naive
from agentlab.models import ModelError, ScriptedModel, call
from agentlab.workbook.plots import herd_results, plot_herd, plot_retry_schedule, table_view
from agentlab.retry import RetryPolicy

rows = []
for f in ["api_429", "api_timeout", "api_500", "flaky_tool", "hanging_tool", "api_401"]:
    c = compare_loops(f, lang=LANG)
    rows.append({"fault": f, "naive": c.naive.status, "guarded": c.guarded.status, "resends": c.guarded.retries,
                 "user sees": c.guarded.answer})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# The naive loop has no wrapper around the model call, so one 429 ends the conversation. The guarded loop
# resends transient failures and stops at once on a 401, with a friendly sentence for the user.
# Tool-side fatal errors behave the same: an order that does not exist, or a refund outside the rules.

# %%
for task_call in [call("get_order", {"order_id": "A9999"}),
                  call("create_refund", {"order_id": "A1002", "amount": 10, "reason": "user_cancel"})]:
    desk, reg = aftersales.SCENARIO.setup(LANG)
    run = run_guarded(ScriptedModel([task_call]), reg, "refund please", lang=LANG)
    e = run.tool_events[0]
    print(f"{e.error_code}{colon(LANG)}" + joined([f"{label(e.error_category, LANG)}/{label(e.error_stage, LANG)}", f"{label('status', LANG)} {label(run.status, LANG)}",
                                                  f"{label('user sees', LANG)}{colon(LANG)}{run.answer}"], LANG))
# 403 from the model API: stopped at once, no resend, a friendly sentence in the user's language
desk, reg = aftersales.SCENARIO.setup(LANG)
run = run_guarded(ScriptedModel([ModelError("PERMISSION_DENIED", "403: key not allowed for this model")]), reg, "hi",
                  lang=LANG)
print(f"PERMISSION_DENIED{colon(LANG)}" + joined([f"{label('resends', LANG)} {run.retries}", f"{label('status', LANG)} {label(run.status, LANG)}",
                                                 f"{label('user sees', LANG)}{colon(LANG)}{run.answer}"], LANG))

# %% [markdown]
# **Measure it: the schedule.** When do 30 clients that failed at the same moment resend, with and
# without jitter? Without it, every wave arrives together.

# %%
import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True)
plot_retry_schedule(RetryPolicy(max_retries=4, base=0.5, cap=8, jitter="none"), ax=axes[0], lang=LANG)
plot_retry_schedule(RetryPolicy(max_retries=4, base=0.5, cap=8, jitter="full"), ax=axes[1], lang=LANG)
plt.show()

# %% [markdown]
# **The thundering herd.** 300 clients fail at once against a server that can answer 40 per slot
# (a quarter of a second). Retrying in lockstep, each wave overloads the server again; full jitter spreads them
# out. The window is the whole resend schedule (1 + 2 + 4 + 8 = 15 s) and the quarter-second slot the last resend
# lands in (15.25 s in all), so a client not served has really
# given up, not merely fallen off the end of the plot. The sentences under each plot are read from the same
# simulation as the lines.

# %%
herds = herd_results({"no jitter": RetryPolicy(max_retries=4, base=1, cap=8, jitter="none"),
                      "full jitter": RetryPolicy(max_retries=4, base=1, cap=8, jitter="full")}, clients=300, capacity=40)
plot_herd(herds, capacity=40, lang=LANG)
plt.show()

# %% [markdown]
# ## Exercise
#
# With `RetryPolicy(base=0.5, cap=8, jitter="none")`, how many seconds does the loop wait before the
# **third** resend (attempt index 2)?

# %%
my_answer = None  # seconds, a number
print(longest_wait(my_answer, RetryPolicy(base=0.5, cap=8, jitter="none"), attempt=2, lang=LANG))

# %% [markdown]
# ## Build: resend what is transient
#
# The naive loop resends nothing: one 429 ended its conversation. Write `my_wait`, the decision a resend wrapper
# makes after the model API fails: it gets the error (`error.code`, `error.transient`, `error.retry_after`), the
# resend's number (`attempt`, 0 for the first) and an `rng`, and returns how many seconds to wait before sending
# again (at most 30 s: nobody waits longer), or `None` to stop. The check wraps the naive loop's model with it (the
# waits are recorded, not slept) and runs the notebook's faults: `api_429`, `api_timeout` and `api_500` failing
# twice, `api_401`, and an `api_500` that never recovers; it also asks your function about a 403 and a 400, which are
# no more transient than a 401. It says which ones your resends now handle and what still goes wrong.

# %%
from agentlab.workbook.builds_guards import build_resend


def my_wait(error, attempt, rng):
    # your code here: seconds to wait before resending, or None to stop
    ...


print(build_resend(my_wait, lang=LANG))

# %% [markdown]
# ## Recap
#
# - One 429 ended the naive loop's conversation; the guarded loop resent it and stopped at once on a 401 with a plain sentence.
# - Tool-side fatal errors, an order that does not exist or a refund outside the rules, stop the same way.
# - Without jitter, thirty failed clients resent in waves that arrived together.
# - In the thundering-herd simulation, full jitter spread 300 clients out so the server could serve them.
#
# **Next:** [05 · Side effects: refund once (idempotency)](05_side_effects.ipynb). Read alongside: [failures](../docs/failures.md#category); every path through the workbook: [docs/course.md](../docs/course.md).
