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
# # 08 · Where each failure is caught
#
# Every fault of the workbook, through both loops. Then the failures the guarded loop met, sorted by both
# taxonomies (docs/failures.md#two-classifications): **by retry class** (transient / validation / fatal: what the code does) and
# **by stage in the chain** (structure / semantic / execution / rule-blocked: what to fix next).
# Rule-blocked outcomes are guards that fired as designed; count them apart.

# %% [markdown]
# **After this notebook you can:**
#
# - sort the guarded loop's failures by retry class (what the code does) and by stage in the chain (what to fix next)
# - file every error code and fault under the five classes of failure
# - read the four headline numbers, with success meaning the grader's verdict on the data
#
# **Before it:** [04 · Transient, validation, fatal](04_transient_validation_fatal.ipynb), [06 · Loops that never end](06_loops_that_never_end.ipynb), [07 · Several tool calls in one message](07_parallel_tool_calls.ipynb).
#
# **Time:** about 25 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import pandas as pd

from agentlab.evals.metrics import by_taxonomy, went_wrong_text
from agentlab.models.faults import FAULTS
from agentlab.workbook.demo import caught_by_guards, compare_loops
from agentlab.workbook.exercises import largest_share
from agentlab.workbook.plots import plot_matrix, plot_shares, table_view
from agentlab.workbook.widgets import MetricsPanel

LANG = "en"  # "zh" for 中文

results = {f: compare_loops(f) for f in FAULTS}
# each run graded on the final data by the workbook's one definition (agentlab.evals.outcome, docs/metrics.md)
matrix = {f: {"naive": c.naive_verdict.outcome, "guarded": c.guarded_verdict.outcome} for f, c in results.items()}
table_view(pd.DataFrame([{"fault": f, "naive": matrix[f]["naive"], "guarded": matrix[f]["guarded"],
               "guarded refunds": len(c.guarded_state["refunds"]), "caught by": caught_by_guards(c, LANG)}
              for f, c in results.items()]), lang=LANG)

# %%
import matplotlib.pyplot as plt

plot_matrix(matrix, title="outcome graded on the final data, fault × loop", lang=LANG)
plt.show()

# %% [markdown]
# **The share of failures by class.** Counted over every tool call or model turn that went wrong in the
# guarded runs, fixed or not: a call the guarded loop resent and that then worked still met a transient failure
# (`agentlab.evals.metrics.went_wrong`), and it is counted here. The sentences and the bars read the same counts.

# %%
tax = by_taxonomy([c.guarded for c in results.values()])
print(went_wrong_text(tax["category"], LANG))
fig, axes = plt.subplots(1, 2, figsize=(11, 2.8))
plot_shares(dict(tax["category"]), ax=axes[0], title="by retry class", lang=LANG)
plot_shares(dict(tax["stage"]), ax=axes[1], title="by stage in the chain", lang=LANG)
fig.tight_layout()
plt.show()

# %% [markdown]
# **The five classes of failure** (docs/failures.md#five-classes-of-failure). The refund desk sorts failures by
# what a team changes to prevent them: schema, model choice, unreadable errors, idempotency, loops. Every error
# code and every fault of this matrix is filed under one of them (`agentlab.evals.failure_classes`). The second
# table counts the runs above in each class, both loops: from their error codes, and from what a run did that no
# code says (a refund made twice, a call repeated, a call that ran on arguments the schema refuses). The naive
# loop leaves almost no codes, so without that second reading its failures would not show at all. A failure the
# guarded loop caught counts in its class even when the run then ended right: a call refused and asked again leaves
# its code (the guarded column's schema runs all ended with the right data). One it got past without a code (a
# resend that worked, a second refund answered from its key) leaves neither a code nor a wrong effect, so it is in
# no class here; the shares above count those. `eval` and a review of your own logs count the same way.

# %%
from IPython.display import display

from agentlab.evals.failure_classes import class_name, class_table
from agentlab.workbook.demo import classes_by_loop

display(table_view(pd.DataFrame(class_table(LANG)).rename(columns={"codes": "error codes", "faults": "injected faults"}),
                   lang=LANG))  # not the cell's last line: shown only when displayed
five = classes_by_loop(results.values(), LANG)
table_view(pd.DataFrame([{"class": class_name(k, LANG), "naive runs": five["naive"][k], "guarded runs": five["guarded"][k]}
                         for k in five["naive"]]), lang=LANG)

# %% [markdown]
# **The four headline numbers** (docs/metrics.md#the-four-headline-numbers), over the same runs. Note what "success" means:
# the grader's verdict on the data (exactly one refund of 199 yuan, or none where none was due), so a run that hands
# over correctly counts and a run that says "done" with the wrong data does not.

# %%
data_ok = {}
for c in results.values():
    data_ok[c.naive.run_id], data_ok[c.guarded.run_id] = c.naive_verdict.passed, c.guarded_verdict.passed

panel = MetricsPanel(lang=LANG, correct=lambda run: data_ok[run.run_id])
panel.update({"naive": [c.naive for c in results.values()], "guarded": [c.guarded for c in results.values()]})
panel

# %% [markdown]
# ## Exercise
#
# In the guarded runs, which stage of the chain holds the largest share of failures? Where two stages hold the same
# largest share, name either of them, or both.

# %%
my_answer = None  # a stage: structure, semantic, execution or rule_blocked
print(largest_share(my_answer, tax["stage"], lang=LANG))

# %% [markdown]
# ## Build: name the guard that does the work
#
# The matrix shows the guarded loop handling these faults; which of its twelve guards does it? Fill in
# `my_guards` with a guard name (a `GuardConfig` field: `agentlab.guards.GUARDS` lists them) for each fault. The
# check runs each fault through the guarded loop twice, with every guard and with yours switched off, and says
# for which faults switching your guard off changes nothing, so it is not the one catching it.

# %%
from agentlab.workbook.builds_loops import build_which_guard

my_guards = {  # your code here: a guard name for each fault
    "camel_case": None,
    "duplicate_call": None,
    "api_429": None,
    "lost_reply": None,
    "repeat_call": None,
    "ping_pong": None,
}

print(build_which_guard(my_guards, lang=LANG))

# %% [markdown]
# ## Recap
#
# - Every fault of the workbook went through both loops in one matrix.
# - A call that was resent and then worked still counts as a transient failure met.
# - Rule-blocked outcomes are guards that fired as designed and are counted apart.
# - The four headline numbers came from the same runs as the tables.
#
# **Next:** [09 · Real models](09_real_models.ipynb). Read alongside: [failures](../docs/failures.md#two-classifications); every path through the workbook: [docs/course.md](../docs/course.md).
