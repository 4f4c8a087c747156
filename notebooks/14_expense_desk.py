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
# # 14 · The bookkeeping desk end to end
#
# The bookkeeping desk with its thirteen tools, its rules in code (an amount above 0, no future dates, a known
# category, a confirmation before a change or a delete, one booking per expense per chat) and its turn limit
# (five model turns, a plain answer when cut). First its five bad cases, then its
# 55-case suite graded on the final ledger, then the twelve checks before going live.

# %% [markdown]
# **After this notebook you can:**
#
# - run a whole desk: thirteen tools, rules in code and a turn limit
# - grade a 55-case suite on the final ledger and read where the naive desk fails, by category
# - run the twelve checks before going live, where a check that cannot apply says n/a
#
# **Before it:** [10 · Prove it got better](10_evaluation.ipynb), [13 · tool_choice and routing](13_tool_choice_and_routing.ipynb).
#
# **Time:** about 30 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import matplotlib.pyplot as plt
import pandas as pd

from agentlab.evals import load_cases, metrics_row, run_suite
from agentlab.evals.checklist import run_checklist
from agentlab.i18n import t
from agentlab.resources import data_file
from agentlab.scenarios import expense
from agentlab.workbook.demo import compare_expense
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import plot_outcomes, table_view

LANG = "en"  # "zh" for 中文

# %% [markdown]
# ## The five bad cases
#
# Each injected into the booking of "今天坐出租车花了45元，记一笔": broken JSON, a made-up tool name, a missing
# required field, "45元" for a number, and one call sent twice in one message.

# %%
BAD_CASES = {"truncated_json": "1 · arguments are not valid JSON", "unknown_tool": "2 · a tool that does not exist",
             "drop_required": "3 · a required field left out", "wrong_type": "4 · a number written with its unit",
             "parallel_call": "5 · several tool_calls at once"}
rows = []
for fault, title in BAD_CASES.items():
    c = compare_expense(fault, lang=LANG)
    rows.append({"bad case": title, "naive": c.naive_verdict.outcome, "naive booked": len(c.naive_state["records"]),
                 "guarded": c.guarded_verdict.outcome, "guarded booked": len(c.guarded_state["records"]),
                 "guarded steps": c.guarded.steps})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# ## The suite, graded on the ledger
#
# 55 cases: normal, boundary and adversarial; relative dates, "45元", "一百二十块", two expenses in one
# sentence, the same expense twice, deletes without confirmation, future dates, unknown categories, long
# chats that must be trimmed, API faults. "Booked, but wrong" is a failure (docs/metrics.md).

# %%
cases = load_cases(data_file("expense_cases.jsonl"))  # found from notebooks/ and notebooks/zh/ alike
results = {loop: run_suite(cases, loop=loop, lang=LANG) for loop in ("naive", "guarded")}
table_view(pd.DataFrame([{"loop": loop, **{k: v for k, v in metrics_row(rs).items() if k != "statuses"}}
                         for loop, rs in results.items()]), lang=LANG)

# %%
counts = {loop: pd.Series([r.outcome for r in rs]).value_counts().to_dict() for loop, rs in results.items()}
plot_outcomes(counts, title=t("nb14.said.expense_suite_graded_on", LANG),
              lang=LANG)
plt.show()

# %% [markdown]
# Where the naive desk fails, by category of case:

# %%
naive = pd.DataFrame([{"category": r.category, "outcome": r.outcome} for r in results["naive"]])
table_view(pd.crosstab(naive["category"], naive["outcome"]), lang=LANG)

# %% [markdown]
# ## The twelve checks before going live
#
# Each check runs the desk (a scripted model, offline) and reports what it saw: what the model was sent, what the
# trace recorded, what changed in the ledger. A check that cannot apply to a desk says n/a, never pass
# (`python -m agentlab checklist --scenario expense`).

# %%
table_view(pd.DataFrame([{"#": r.number, "check": r.title, "result": r.status, "evidence": r.evidence}
                         for r in run_checklist(expense.SCENARIO, LANG)]), lang=LANG)

# %% [markdown]
# ## Exercise
#
# How many of the 55 cases does the naive desk get right, graded on the ledger? Give a number.

# %%
from agentlab.workbook.builds_systems import naive_correct

my_answer = None  # a number
print(naive_correct(my_answer, results, lang=LANG))

# %% [markdown]
# ## Build it: the rule the desk needs
#
# The ledger trusts its caller: it books whatever date it is given. Below, the desk's own date rule is taken out and
# yours put in its place. Write `my_rule(args, today)`: `args` are a booking's (or a change's) arguments, already
# checked against the schema (a change may hold no `date`); `today` is the desk's date as ISO text, `"2026-10-15"`.
# Return `[]` when nothing is wrong, else one `rule("date", "...")` per problem, saying why and what to do next: the
# model reads it. Predict first: which case of the suite fails without the rule, and what would a rule that refuses
# too much break? The check runs every case of the suite through the guarded desk with your rule, and names the
# cases that still fail.

# %%
from agentlab.tools import rule
from agentlab.workbook.builds_systems import desk_rule_holds


def my_rule(args, today):
    """The business-rule problems of a booking or a change: a list of rule("date", "why, and what to do next")."""
    return None  # your code: [] when there is no problem


print(desk_rule_holds(my_rule, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The five bad cases were injected into one booking: broken JSON, a made-up tool, a missing field, "45元", a call sent twice.
# - "Booked, but wrong" counted as a failure on the ledger.
# - Each pre-launch check ran the desk and reported what the model was sent, what the trace recorded and what changed.
#
# **Next:** [15 · The skill site: tools over HTTP](15_skill_site.ipynb). Read alongside: [the metrics](../docs/metrics.md); every path through the workbook: [docs/course.md](../docs/course.md).
