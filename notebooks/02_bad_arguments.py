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
# # 02 · Arguments the model gets wrong
#
# `arguments` is a **string** the model wrote, not a dict (docs/guards.md#validate). It can be broken JSON, name a
# tool that does not exist, miss a required field, use `orderId` for `order_id`, write an amount as
# `"45元"`, or invent a value outside an enum. The naive loop trusts it; the guarded loop checks it
# (parse → schema → business rules) and answers with an error the model can act on.

# %% [markdown]
# **After this notebook you can:**
#
# - list the ways the `arguments` string goes wrong: broken JSON, an unknown tool, a missing field, `orderId`, `"45元"`, a value outside the enum
# - follow a call through the boundary check (parse, schema, business rules) and read the code and problems it reports
# - use the injector to put one fault at one step and compare both loops' traces
#
# **Before it:** [01 · The schema is a contract](01_schema_contract.ipynb).
#
# **Time:** about 25 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

import json

import pandas as pd
from IPython.display import HTML, display

from agentlab import Registry
from agentlab.i18n import colon
from agentlab.resources import data_file
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import amount_with_unit_reason
from agentlab.workbook.plots import plot_bars
from agentlab.workbook.plots import table_view
from agentlab.workbook.widgets import FaultInjector, GuardPanel

reg = Registry.from_json(data_file("aftersales_tools.json"))  # data_file: the same file from notebooks/zh/
calls = {
    "bad JSON": ("create_refund", '{"order_id": "A1001", "amount": 45'),
    "unknown tool": ("add_refund", '{"order_id": "A1001"}'),
    "missing field": ("create_refund", '{"order_id": "A1001", "reason": "user_cancel"}'),
    "camelCase field": ("get_order", '{"orderId": "A1001"}'),
    "wrong type": ("create_refund", '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}'),
    "out of enum": ("create_refund", '{"order_id": "A1001", "amount": 45, "reason": "不想要了"}'),
}

# %% [markdown]
# **Name it.** Each call through the boundary check: the code, both taxonomy classes, and the problems.

# %%
rows = []
for label, (name, raw) in calls.items():
    err = json.loads(reg.check(name, raw, lang=LANG).render())["error"]
    rows.append({"fault": label, "code": err["code"], "category": err["category"], "stage": err["stage"],
                 "problems": [f"{p['field']}{colon(LANG)}{p['reason']}" for p in err.get("problems", [])],  # names, kept as they are
                 "hint": err["hint"]})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# Value cleaning is the other answer to `"45元"`: off by default, and when on, every change is
# reported next to the result so nobody is surprised.

# %%
print(reg.check("create_refund", calls["wrong type"][1], clean=True, lang=LANG).render())

# %% [markdown]
# **See it fail, then fix it.** The same fault, injected at the refund step, through both loops.

# %%
faults = ["truncated_json", "unknown_tool", "drop_required", "camel_case", "wrong_type", "out_of_enum"]
results = {f: compare_loops(f, lang=LANG) for f in faults}
table_view(pd.DataFrame([{"fault": f, **{f"{r['loop']} {k}": r[k] for r in c.table() for k in ("status", "invalid calls", "refunds")}}
                         for f, c in results.items()]), lang=LANG)

# %% [markdown]
# **Measure it.** Turns alone would flatter the naive loop: it "finishes" `truncated_json` and
# `unknown_tool` in two turns because it crashes there. So each bar is a run's turns *and* its colour is
# its outcome, graded on the final data: a short red bar is a quick failure, not a quick success.

# %%
import matplotlib.pyplot as plt

from agentlab.workbook.plots import plot_turns_by_outcome

plot_turns_by_outcome({f: {"naive": (c.naive.steps, c.naive_verdict.outcome),
                           "guarded": (c.guarded.steps, c.guarded_verdict.outcome)} for f, c in results.items()},
                      title="model turns per run, coloured by outcome (naive stops at its cap of 12)", lang=LANG)
plt.show()

# %% [markdown]
# ## The injector
#
# Pick a fault and the step to inject it at, run both loops, and read the traces side by side. The red
# outline marks the first step where they differ; each tool call shows its raw arguments beside what the
# model was told.

# %%
injector = FaultInjector(faults=faults, lang=LANG)
injector.update()
injector

# %% [markdown]
# Switch guards off and run the injector again: which guard was doing the work? (`validate` and
# `readable_errors` are the ones to try here.)

# %%
def use(config):
    injector.config = config
    injector.update()


GuardPanel(on_change=use, lang=LANG)

# %% [markdown]
# ## Exercise
#
# Which problem `reason` does the boundary give for `"amount": "45元"`?

# %%
my_answer = None  # a problem reason, e.g. "missing"
print(amount_with_unit_reason(my_answer, reg, lang=LANG))

# %% [markdown]
# ## Build: tighten a loose contract
#
# A hurried desk shipped the `create_refund` contract printed below, and every bad call of this notebook passes
# it. Write `my_tighten`: it gets that contract as a dict and returns it with the constraints that make the
# boundary refuse the missing field (`drop_required`), the amount `"45元"` (`wrong_type`), the invented reason
# (`out_of_enum`) and `orderId` (`camel_case`), with value cleaning off, while good refunds still pass. The check
# sends the notebook's bad calls through the boundary with your contract and says which still get through.

# %%
from agentlab.workbook.builds_guards import build_tighter_contract, loose_refund_schema

print(json.dumps(loose_refund_schema(LANG), indent=2, ensure_ascii=False))


def my_tighten(schema):
    # your code here: add constraints to schema (a dict), then return it
    ...


print(build_tighter_contract(my_tighten, lang=LANG))

# %% [markdown]
# ## Recap
#
# - `arguments` is a string the model wrote; the guarded loop parses and checks it before anything runs.
# - Each bad call got an error code, both taxonomy classes and the problems, in words the model can act on.
# - Value cleaning can turn `"45元"` into 45, off by default and always reported.
# - Turns alone flatter the naive loop: its short runs were quick failures, shown by the outcome colours.
#
# **Next:** [03 · Errors the model can read](03_readable_errors.ipynb). Read alongside: [the guards](../docs/guards.md#validate); every path through the workbook: [docs/course.md](../docs/course.md).
