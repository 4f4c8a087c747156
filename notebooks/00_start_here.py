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
# # 00 · Start here: the same model, two loops
#
# An agent is a loop: ask the model, run the tool it picked, show it the result, repeat.
# Most failures in front of real systems come from that loop, not from the model.
#
# This notebook runs one after-sales task ("refund order A1001") through two loops
# on **the same misbehaving model**:
#
# * the **naive loop** is written the way much real code is: it runs only the first tool call,
#   `json.loads` the arguments without a guard, shows raw exception text to the model, and has
#   nothing but a hard step cap;
# * the **guarded loop** validates every call against its contract, answers with errors the
#   model can read, retries only what is safe to retry, keys every refund so it happens once
#   (idempotency), and brakes loops that go nowhere (a circuit breaker and a step budget).
#
# Everything runs offline with scripted (fake) models, in a few seconds.

# %% [markdown]
# **After this notebook you can:**
#
# - tell the naive loop from the guarded one by what each does with a bad call, a lost reply and a repeated call
# - read two traces side by side and find the first step where the runs part
# - grade a run on the final state of the orders (`correct`, `done, wrong data`), not on what the model said
#
# **Before it:** nothing: this is where to start.
#
# **Time:** about 30 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

from IPython.display import HTML, display

from agentlab import compare_html
from agentlab.models.faults import FAULTS
from agentlab.workbook.demo import caught_by_guards, compare_loops
from agentlab.i18n import colon, joined, label
from agentlab.workbook.exercises import double_refund_fault
from agentlab.workbook.plots import table_view

# %% [markdown]
# ## 1. The opening demo
#
# The model first writes `orderId` where the contract says `order_id`. The guarded loop answers
# `INVALID_ARGS` naming both the missing `order_id` and the unknown `orderId` (with a
# "did you mean"), the model corrects itself, and answers in step 3 ([where this demo comes from](../docs/sources.md#article-000-the-refund-desk)).

# %%
demo = compare_loops(None, lang=LANG)
display(HTML(compare_html(demo.naive, demo.guarded, lang=LANG)))

# %% [markdown]
# The naive loop got lucky here: the script is fixed, so the model "corrected" itself even though
# all it was shown was `TypeError: ... unexpected keyword argument 'orderId'`.
# A model that really has to *read* the error does not get lucky. The next run uses a rule-based
# fake that repairs its call only from what a structured error tells it, as a good model does.

# %% [markdown]
# ## 2. A misconception the model keeps: `orderId` at the refund step

# %%
camel = compare_loops("camel_case", lang=LANG)
display(HTML(compare_html(camel.naive, camel.guarded, lang=LANG)))

# %% [markdown]
# The red outline marks the first step where the two runs part ways. The naive loop shows the model
# a Python `TypeError`; the model cannot act on it, repeats itself, and burns the whole step cap.
# The guarded loop names the field and the fix, and the refund happens once.
#
# ## 3. Every fault, both loops
#
# Each row injects one fault: a model fault at the refund step, a tool fault into the tool it
# targets, and checks the final state of the orders: how many refunds were actually written, not what the
# model claimed. `caught by` names the guards the guarded run's trace shows acting (the same function as in
# notebook 08), not the guard each fault was meant for.

# %%
import pandas as pd

rows = []
for name, fault in FAULTS.items():
    c = compare_loops(name)  # the table shows statuses and outcomes, said in LANG by table_view
    naive, guarded = c.table()
    rows.append({"fault": name, "what happens": fault.describe(LANG),
                 "naive": naive["status"], "naive refunds": naive["refunds"], "naive outcome": naive["outcome"],
                 "guarded": guarded["status"], "guarded refunds": guarded["refunds"],
                 "guarded outcome": guarded["outcome"], "caught by": caught_by_guards(c, LANG)})
table = pd.DataFrame(rows)
table_view(table, lang=LANG)

# %% [markdown]
# Read the `refunds` columns first: the task asks for exactly one refund of 199 yuan. Two refunds
# (`lost_reply`, `duplicate_call`) is money sent twice; under `wrong_type` the naive loop stored the text
# `"199元"` as an amount. The `outcome` columns grade each run on that final state, with the one
# definition the whole workbook uses (`agentlab.evals.outcome`, docs/metrics.md): `correct` only when the data is
# exactly what the task needed. A run that *says* done is not credited for it: `done, wrong data` (said
# done, but the data is wrong) is the worst outcome, because nobody looks again. A guarded run that handed over to a person
# (`api_401`, `leaky_tool`) wrote nothing wrong, but it did not refund either: it is not counted as correct.
#
# The last two rows are models that never answer. Under `repeat_call` the naive loop sends the same refund until
# its hard cap of 12 steps and writes eleven refunds; the guarded loop writes one, answers the second from the
# idempotency store, and the repeat breaker stops the third (`LOOP_DETECTED`) and hands over. Under `ping_pong`
# every look-up asks about a new order, so nothing ever repeats and no breaker can fire: only the step budget
# ends the run, after 6 turns instead of 12. A runaway is stopped and handed over, never counted as finished.

# %%
import matplotlib.pyplot as plt

from agentlab.workbook.plots import plot_outcomes

plot_outcomes({"naive": table["naive outcome"].value_counts().to_dict(),
               "guarded": table["guarded outcome"].value_counts().to_dict()},
              title=f"{len(table)} " + label("faults injected into the same task: outcome graded on the final data", LANG),
              lang=LANG)
plt.show()
correct = {loop: int(table[f"{loop} outcome"].eq("correct").sum()) for loop in ("naive", "guarded")}
print(label("correct final state", LANG) + colon(LANG) + joined([f"{label(loop, LANG)} {correct[loop]}/{len(table)}"
                                                             for loop in ("naive", "guarded")], LANG, "comma"))

# %% [markdown]
# ## Exercise
#
# Which fault makes the **naive** loop refund the order twice although the model asked only once?
# (Hint: the model asked once, so look at tool-side faults, and at the naive refunds column.)
# Put its name in `answer` and run the cell.

# %%
answer = None  # your answer here, a fault name such as "camel_case"

print(double_refund_fault(answer, lang=LANG))

# %% [markdown]
# ## Build: a refund tool that refunds once
#
# The table showed the naive loop refunding A1001 twice (`lost_reply`, `duplicate_call`) and eleven times
# (`repeat_call`). Leave the loop as it is and fix the tool instead: write `my_create_refund` so that the
# refund happens once, however often the loop or the model sends it again. The check runs your tool through
# the naive loop under each of those faults and says which ones it now handles and which still refund twice.
# `desk.refunds` lists the refunds made so far; `desk.create_refund(order_id, amount, reason, remark)` makes one.

# %%
from agentlab.workbook.builds_guards import build_refund_once


def my_create_refund(desk, order_id, amount, reason, remark=""):
    # your code here
    ...


print(build_refund_once(my_create_refund, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The same scripted model went through two loops: only the loop changed.
# - A structured `INVALID_ARGS` error let a model that reads errors fix `orderId`; a raw `TypeError` made it repeat until the step cap.
# - Every fault in one table: the naive loop refunded twice under `lost_reply` and `duplicate_call`, and stored `"199元"` as an amount.
# - Saying done with wrong data is the worst outcome, because nobody looks again.
#
# **Next:** [01 · The schema is a contract](01_schema_contract.ipynb). Read alongside: [the metrics](../docs/metrics.md); every path through the workbook: [docs/course.md](../docs/course.md).
