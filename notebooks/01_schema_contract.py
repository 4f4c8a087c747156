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
# # 01 · The schema is a contract
#
# The model cannot see your database or your state machine. All it sees of a tool is a name, a
# description and a JSON Schema, so that schema is the contract between the model and your
# system. Write it for a new colleague: **one tool, one job**; **enums over free text**;
# descriptions that say **when to use** the tool; **one naming style** across the registry.
#
# **See it fail.** A refund `reason` written as free text lets the model invent a value; the naive loop
# passes it straight to the backend, which stores it.

# %% [markdown]
# **After this notebook you can:**
#
# - write a tool schema as a contract: one tool, one job, enums over free text, a description that says when to use it
# - run the linter on a registry and read its findings per rule
# - read a `not_in_enum` problem and the allowed values it hands the model
#
# **Before it:** [00 · Start here: the same model, two loops](00_start_here.ipynb).
#
# **Time:** about 35 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

import json

import pandas as pd
from IPython.display import HTML, display

from agentlab import Registry, lint
from agentlab.i18n import colon, label
from agentlab.resources import data_file, data_file_in
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import schema_contract
from agentlab.runs import compare_html
from agentlab.workbook.plots import plot_bars, table_view
from agentlab.workbook.widgets import SchemaPlayground

c = compare_loops("out_of_enum", lang=LANG)
print(f"{label('naive refund written', LANG)}{colon(LANG)}{c.naive_state['refunds']}")
print(f"{label('guarded refund written', LANG)}{colon(LANG)}{c.guarded_state['refunds']}")

# %% [markdown]
# **Name it.** With an enum in the contract, the invented value is a `not_in_enum` problem of an
# `INVALID_ARGS` error: category `validation` (the model must change the call), stage `structure`.
# The error lists the allowed values, so the model picks one instead of inventing a fourth.

# %%
display(HTML(compare_html(c.naive, c.guarded, lang=LANG)))

# %% [markdown]
# **Fix it.** The linter reads a registry the way a model would and flags what makes it guess.
# Here is a schema written in a hurry, next to the after-sales contract shipped in `data/`.

# %%
hurried = Registry.from_json(data_file_in("bad_tools.json", LANG), close=False)  # its descriptions in LANG
careful = Registry.from_json(data_file("aftersales_tools.json"))
findings = pd.DataFrame([f.to_dict() for f in lint(hurried, lang=LANG)])
table_view(findings[["rule", "severity", "location", "message"]], lang=LANG)  # each message whole: it is the lesson

# %% [markdown]
# **Measure it.** Findings per rule, before and after.

# %%
import matplotlib.pyplot as plt

def per_rule(reg):
    counts = {}
    for f in lint(reg):
        if f.severity != "info":
            counts[f.rule] = counts.get(f.rule, 0) + 1
    return counts

before, after = per_rule(hurried), per_rule(careful)
rules = sorted(set(before) | set(after))
plot_bars({r: {"hurried": before.get(r, 0), "contract": after.get(r, 0)} for r in rules},
          title="linter warnings and errors per rule", ylabel="findings", lang=LANG)
plt.show()

# %% [markdown]
# ## Playground
#
# Edit the schema below. The findings and the validator's answers to a set of bad calls update as you type
# (try renaming `orderId` to `order_id`, or giving `reason` an `enum`).

# %%
SchemaPlayground(description=label("Refund an order", LANG), lang=LANG)

# %% [markdown]
# ## Exercise
#
# Write a `create_refund` schema that the linter passes with no warning or error, with a closed set of
# reasons. The check also runs it: a right refund (an amount in yuan and jiao, such as 45.5) must pass, and a refund
# missing any of its three fields must not. Edit `my_schema` and `my_description`, then run the check.

# %%
my_description = None  # a sentence: what the tool does and when to use it
my_schema = None       # a JSON Schema dict, like the one in the playground above
print(schema_contract(my_schema, my_description, lang=LANG))

# %% [markdown]
# ## Build: a contract that refuses what the faults send
#
# The faults of this chapter bend a good refund call: a camelCase field name (`camel_case`), a missing field
# (`drop_required`), an amount as text (`wrong_type`), an invented reason (`out_of_enum`), a refund of 200000
# (`out_of_range`). Write the JSON Schema of `create_refund`'s arguments (`order_id`, `amount`, `reason`, an
# optional `remark`) so that the validator alone, with no cleaning, refuses each of those calls and still lets
# good refunds through. The check validates the notebook's good and bad calls against your schema and says which
# faults it refuses and which it still lets through.

# %%
from agentlab.workbook.builds_guards import build_refund_contract

my_refund_schema = None  # your code here: a JSON Schema dict, like the one in the playground above

print(build_refund_contract(my_refund_schema, lang=LANG))

# %% [markdown]
# ## Recap
#
# - A free-text `reason` let the model invent a value, and the naive loop stored it.
# - With an enum, the same call became an `INVALID_ARGS` error (category `validation`, stage `structure`) listing the allowed values.
# - The linter flagged a hurried schema rule by rule, next to the shipped after-sales contract.
# - The playground re-checked the schema and a set of bad calls as you typed.
#
# **Next:** [02 · Arguments the model gets wrong](02_bad_arguments.ipynb). Read alongside: [the guards](../docs/guards.md#validate); every path through the workbook: [docs/course.md](../docs/course.md).
