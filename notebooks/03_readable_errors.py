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
# # 03 · Errors the model can read
#
# When a backend answers `500 internal error`, the only thing a model can do is try again, usually with
# the same arguments. A structured error says three things instead: **which field**, **what is wrong**,
# and **what would be right**. Here the same faults meet the guarded loop twice: once with structured
# errors, once with the bare 500 (the `readable_errors` guard switched off).

# %% [markdown]
# **After this notebook you can:**
#
# - write an error that says which field, what is wrong and what would be right
# - compare a structured error with a bare 500 by whether the bad call ever got fixed
# - choose a self-correction budget and say what it costs on a model that never repairs
#
# **Before it:** [02 · Arguments the model gets wrong](02_bad_arguments.ipynb).
#
# **Time:** about 35 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

import json

import pandas as pd

from agentlab import GuardConfig
from agentlab.evals.metrics import rounds_to_recover
from agentlab.i18n import aside, both, colon, joined, label, t
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import plot_bars, table_view

faults = ["camel_case", "drop_required", "wrong_type", "out_of_enum", "unknown_tool", "truncated_json"]
bare = GuardConfig(readable_errors=False)
rows = []
for f in faults:
    readable = compare_loops(f, lang=LANG).guarded
    blind = compare_loops(f, config=bare, lang=LANG).guarded
    rows.append({"fault": f, "structured: status": readable.status, "structured: invalid calls": readable.invalid_calls,
                 "structured: re-asks to fix": rounds_to_recover(readable),
                 "bare 500: status": blind.status, "bare 500: invalid calls": blind.invalid_calls,
                 "bare 500: re-asks to fix": rounds_to_recover(blind)})
table = pd.DataFrame(rows)
table_view(table, lang=LANG)

# %% [markdown]
# **Name it.** What each version put in front of the model for the same call:

# %%
c = compare_loops("camel_case", lang=LANG)
blind = compare_loops("camel_case", config=bare, lang=LANG)
structured = [e.model_visible for e in c.guarded.tool_events if e.error_code][0]
print(f"{label('structured', LANG)}{colon(LANG)}{json.dumps(json.loads(structured), indent=1, ensure_ascii=False)}")  # whole: the did-you-mean is the lesson
print(f"{label('bare 500', LANG)}{colon(LANG)}{[e.model_visible for e in blind.guarded.tool_events if e.error_code][0]}")

# %% [markdown]
# **Measure it.** Both runs take the same number of model turns (4) here, so turns say nothing; what differs
# is whether the bad call ever got fixed. With the structured error the model sends one bad call and fixes
# it on the next round (`re-asks to fix` = 1). With the bare 500 it sends the same bad call until the
# self-correction budget hands it over: 3 invalid calls and never fixed (`-` in the table).

# %%
import matplotlib.pyplot as plt

plot_bars({r["fault"]: {"structured: invalid calls (then fixed)": r["structured: invalid calls"],
                        "bare 500: invalid calls (never fixed)": r["bare 500: invalid calls"]} for r in rows},
          title="bad calls sent before the run ended, one injected mistake", ylabel="invalid calls", lang=LANG)
plt.show()

# %% [markdown]
# ## How many re-asks? The self-correction budget
#
# `GuardConfig(self_correction=2)`, the default, allows two invalid calls in a row; the third hands the conversation
# to a person. That is a trade-off, not a truth. Some agent frameworks keep re-asking longer, and a model that repeats
# the same mistake three times and then fixes it completes the task there, while this loop ends it with **0
# refunds**. Below, the same bad call (`orderId` for `order_id`) is sent *N* times before the right one, under budgets
# of 2, 3 and 4, through the guarded loop, live. The last column is the price: what a model that never fixes its call
# (the bare 500 above) spends before the hand-over. Each re-ask more saves one more kind of model, the kind that gets
# it right after one more mistake; each costs a model that never gets it right one more wasted turn before a person
# takes over.

# %%
from agentlab import run_guarded
from agentlab.models import ScriptedModel, call, say
from agentlab.scenarios import aftersales

BAD = call("create_refund", {"orderId": "A1001", "amount": 199.0, "reason": "user_cancel"})
GOOD = call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})


def stubborn(n):
    """The same bad call n times, then the right one (n=None: never the right one)."""
    script = [BAD] * (n if n is not None else 12) + ([GOOD, say("Refunded.")] if n is not None else [])
    return ScriptedModel(script, then="Sorry.")


def attempt(budget, n):
    desk, reg = aftersales.SCENARIO.setup()
    run = run_guarded(stubborn(n), reg, "Refund order A1001, I changed my mind.",
                      config=GuardConfig(self_correction=budget), sleep=lambda s: None)
    return run, len(desk.refunds)


REFUNDED, TURNS = label("refunded", LANG), label("turns", LANG)
budget_rows = []
for budget in (2, 3, 4):
    row = {"budget": budget if budget != GuardConfig().self_correction else f"{budget}{aside(label('default', LANG), LANG)}"}
    for n in (1, 2, 3, 4):
        run, refunds = attempt(budget, n)
        row[f"needs {n} re-ask{'s' if n > 1 else ''}"] = \
            REFUNDED + aside(f"{run.steps} {TURNS}", LANG) if refunds else label("handed over, 0 refunds", LANG)
    never, _ = attempt(budget, None)
    row["never fixes: bad calls, turns before the hand-over"] = \
        joined([f"{never.invalid_calls} {label('bad calls', LANG)}", f"{never.steps} {TURNS}"], LANG, "comma")
    budget_rows.append(row)
budget_table = pd.DataFrame(budget_rows)
table_view(budget_table, lang=LANG)

# %%
three = budget_table.columns[3]
buys = {b: [c for c in budget_table.columns[1:5] if budget_table.loc[i, c].startswith(REFUNDED)]
        for i, b in enumerate((2, 3, 4))}
print(t("nb03.three_reasks", LANG, two=budget_table.loc[0, three], three=budget_table.loc[1, three]))
print(t("nb03.each_reask", LANG, more=len(buys[3]) - len(buys[2]), at2=budget_table.iloc[0, 5],
        at4=budget_table.iloc[2, 5]))

# %% [markdown]
# The step budget (notebook 06) caps this too: with a budget of 6 model turns, a model that needs 4 re-asks finishes
# on the last turn it has. Pick the number from your own models: notebook 17 measures how many turns a repair takes
# (each cell of the probe's table ends in "N turns"); if they repair in one, a larger budget buys nothing and costs a turn on every
# model that never repairs.

# %% [markdown]
# Two rules for the text itself (docs/failures.md#what-the-model-sees): never show the model a stack trace, SQL, an internal address
# or a secret; and say whether retrying can help (`retryable`). A leaky tool, through both loops:

# %%
leak = compare_loops("leaky_tool", lang=LANG)
print(label("naive showed the model", LANG) + colon(LANG).rstrip() + "\n", leak.naive.tool_events[0].model_visible)
print("\n" + label("guarded showed the model", LANG) + colon(LANG).rstrip() + "\n", leak.guarded.tool_events[0].model_visible)

# %% [markdown]
# ## Exercise
#
# With the bare 500, how did the camelCase run end? Give its final status.

# %%
my_answer = None  # a status, e.g. "done"
print(answer_is(my_answer, table.set_index("fault").loc["camel_case", "bare 500: status"],
                both("nb03.said.the_model_could_not"),
                hint=both("nb03.said.look_at_the_bare"), lang=LANG))

# %% [markdown]
# ## Build: a failure the model can act on
#
# Some mistakes only the backend can see: the contract lets `"amount": 299` through, but order A1001 cost 199.
# Write `my_amount_failure`: it gets the order, the amount asked for and the amount paid, and returns the
# `ToolFailure(code, message)` the backend raises. The check runs the guarded loop with a model that, like the
# structured run above, fixes its call only when the failure says which field is wrong and what would be right,
# and sends the same call again otherwise (like the bare 500). It says, for each order, whether the model repaired
# its call and the order was refunded once, in full.

# %%
from agentlab.errors import ToolFailure
from agentlab.workbook.builds_guards import build_refund_failure


def my_amount_failure(order_id, amount, paid):
    # your code here: return ToolFailure(code, message); the codes are in agentlab.errors.CODES
    ...


print(build_refund_failure(my_amount_failure, lang=LANG))

# %% [markdown]
# ## Recap
#
# - With a structured error the model fixed its call on the next round; with the bare 500 it repeated it until the hand-over.
# - Both runs took the same number of turns, so turns alone said nothing.
# - `GuardConfig(self_correction=2)` trades tasks a slow repairer would finish against turns spent on one that never repairs.
# - An error the model reads never carries a stack trace, SQL, an internal address or a secret, and says whether a retry can help.
#
# **Next:** [04 · Transient, validation, fatal](04_transient_validation_fatal.ipynb). Read alongside: [failures](../docs/failures.md#what-the-model-sees); every path through the workbook: [docs/course.md](../docs/course.md).
