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
# # 03 · Errors the model can read (错误要能被模型读懂)
#
# When a backend answers `500 internal error`, the only thing a model can do is try again, usually with
# the same arguments. A structured error says three things instead: **which field**, **what is wrong**,
# and **what would be right**. Here the same faults meet the guarded loop twice: once with structured
# errors, once with the bare 500 (the `readable_errors` guard switched off).

# %%
import pandas as pd

from agentlab import GuardConfig
from agentlab.evals.metrics import rounds_to_recover
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import plot_bars

faults = ["camel_case", "drop_required", "wrong_type", "out_of_enum", "unknown_tool", "truncated_json"]
bare = GuardConfig(readable_errors=False)
rows = []
for f in faults:
    readable = compare_loops(f).guarded
    blind = compare_loops(f, config=bare).guarded
    rows.append({"fault": f, "structured: status": readable.status, "structured: invalid calls": readable.invalid_calls,
                 "structured: re-asks to fix": rounds_to_recover(readable),
                 "bare 500: status": blind.status, "bare 500: invalid calls": blind.invalid_calls,
                 "bare 500: re-asks to fix": rounds_to_recover(blind)})
table = pd.DataFrame(rows)
table

# %% [markdown]
# **Name it.** What each version put in front of the model for the same call:

# %%
c = compare_loops("camel_case")
blind = compare_loops("camel_case", config=bare)
print("structured:", [e.model_visible for e in c.guarded.tool_events if e.error_code][0][:400])
print("bare:      ", [e.model_visible for e in blind.guarded.tool_events if e.error_code][0])

# %% [markdown]
# **Measure it.** Both runs take the same number of model turns (4) here, so turns say nothing; what differs
# is whether the bad call ever got fixed. With the structured error the model sends one bad call and fixes
# it on the next round (`re-asks to fix` = 1). With the bare 500 it sends the same bad call until the
# self-correction budget (自纠预算) hands it over: 3 invalid calls and never fixed (`None` in the table).

# %%
import matplotlib.pyplot as plt

plot_bars({r["fault"]: {"structured: invalid calls (then fixed)": r["structured: invalid calls"],
                        "bare 500: invalid calls (never fixed)": r["bare 500: invalid calls"]} for r in rows},
          title="bad calls sent before the run ended, one injected mistake", ylabel="invalid calls")
plt.show()

# %% [markdown]
# Two rules for the text itself (docs/failures.md#what-the-model-sees): never show the model a stack trace, SQL, an internal address
# or a secret; and say whether retrying can help (`retryable`). A leaky tool, through both loops:

# %%
leak = compare_loops("leaky_tool")
print("naive showed the model:\n", leak.naive.tool_events[0].model_visible[:300])
print("\nguarded showed the model:\n", leak.guarded.tool_events[0].model_visible)

# %% [markdown]
# ## Exercise
#
# With the bare 500, how did the camelCase run end? Give its final status.

# %%
my_answer = None  # a status, e.g. "done"
print(answer_is(my_answer, table.set_index("fault").loc["camel_case", "bare 500: status"],
                "the model could not tell what to fix, repeated itself, and the re-ask budget handed it over.",
                hint="look at the `bare 500: status` column of the table."))
