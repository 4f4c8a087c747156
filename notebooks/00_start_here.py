# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Start here: the same model, two loops
#
# An agent is a loop: ask the model, run the tool it picked, show it the result, repeat.
# Most failures in front of real systems come from that loop, not from the model.
#
# This notebook runs one after-sales task (售后退款, "refund order A1001") through two loops
# on **the same misbehaving model**:
#
# * the **naive loop** is written the way much real code is: it runs only the first tool call,
#   `json.loads` the arguments without a guard, shows raw exception text to the model, and has
#   nothing but a hard step cap;
# * the **guarded loop** validates every call against its contract (契约), answers with errors the
#   model can read, retries only what is safe to retry (重试), keys every refund so it happens once
#   (幂等 idempotency), and brakes loops that go nowhere (熔断 circuit breaker, 步数预算 step budget).
#
# Everything runs offline with scripted (fake) models, in a few seconds.

# %%
from IPython.display import HTML, display

from agentlab.workbook.demo import compare_loops
from agentlab.models.faults import FAULTS
from agentlab.runs import compare_html

# %% [markdown]
# ## 1. The opening demo
#
# The model first writes `orderId` where the contract says `order_id`. The guarded loop answers
# `INVALID_ARGS` naming both the missing `order_id` and the unknown `orderId` (with a
# "did you mean"), the model corrects itself, and answers in step 3 (where this demo comes from: docs/sources.md#article-000-the-refund-desk).

# %%
seed = compare_loops(None)
display(HTML(compare_html(seed.naive, seed.guarded)))

# %% [markdown]
# The naive loop got lucky here: the script is fixed, so the model "corrected" itself even though
# all it was shown was `TypeError: ... unexpected keyword argument 'orderId'`.
# A model that really has to *read* the error does not get lucky. The next run uses a rule-based
# fake that repairs its call only from what a structured error tells it, as a good model does.

# %% [markdown]
# ## 2. A misconception the model keeps: `orderId` at the refund step

# %%
camel = compare_loops("camel_case")
display(HTML(compare_html(camel.naive, camel.guarded)))

# %% [markdown]
# The red outline marks the first step where the two runs part ways. The naive loop shows the model
# a Python `TypeError`; the model cannot act on it, repeats itself, and burns the whole step cap.
# The guarded loop names the field and the fix, and the refund happens once.
#
# ## 3. Every fault, both loops
#
# Each row injects one fault (故障注入) at the refund step and checks the final state of the orders:
# how many refunds were actually written, not what the model claimed.

# %%
import pandas as pd

rows = []
for name, fault in FAULTS.items():
    c = compare_loops(name)
    naive, guarded = c.table()
    rows.append({"fault": name, "what happens": fault.en,
                 "naive": naive["status"], "naive refunds": naive["refunds"],
                 "guarded": guarded["status"], "guarded refunds": guarded["refunds"],
                 "caught by": fault.caught_by})
table = pd.DataFrame(rows)
table

# %% [markdown]
# Read the `refunds` columns first: the task asks for exactly one refund of 199 yuan.
# Two refunds (`lost_reply`, `duplicate_call`) is money sent twice; a refund under `wrong_type`
# in the naive loop stored the text `"199元"` as an amount. The guarded loop never refunds twice.

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(9, 3.2))
ok = table.assign(naive_ok=table["naive refunds"].eq(1) & table["naive"].str.startswith("done"),
                  guarded_ok=table["guarded refunds"].le(1))
ax.bar(["naive", "guarded"], [ok.naive_ok.sum(), ok.guarded_ok.sum()], color=["#d93025", "#188038"])
ax.set_ylabel("faults with a correct final state")
ax.set_title(f"{len(table)} faults injected into the same task")
plt.show()

# %% [markdown]
# ## Exercise
#
# Which fault makes the **naive** loop refund the order twice although the model asked only once?
# (Hint: the refund happened, but the reply got lost, and the naive loop retries everything.)
# Put its name in `answer` and run the cell.

# %%
answer = "lost_reply"  # your answer here

c = compare_loops(answer) if answer in FAULTS else None
right = c is not None and len(c.naive_state["refunds"]) == 2 and FAULTS[answer].kind == "tool"
print("Correct! Only an idempotency key passed down to the backend makes that retry safe." if right
      else "Not quite: look for a fault whose naive refunds column says 2 without a repeated model call.")
