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
# # 07 · Several tool calls in one message
#
# A model may answer one request with two tool calls at once. Code that runs only `tool_calls[0]` (found in
# tau-bench's reference agent and the function-calling cookbook) silently drops the rest: part of the work
# is never done, and the user is told it was (docs/guards.md#all_calls).

# %% [markdown]
# **After this notebook you can:**
#
# - spot code that runs only `tool_calls[0]` and silently drops the rest of the work
# - say how many `tool` messages must follow an assistant message with several tool calls, each matched by `tool_call_id`
#
# **Before it:** [05 · Side effects: refund once (idempotency)](05_side_effects.ipynb), [12 · Messages and context: the date, clearing, trimming in pairs](12_messages_and_context.ipynb).
#
# **Time:** about 25 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import pandas as pd
from IPython.display import HTML, display

from agentlab.scenarios import aftersales
from agentlab.workbook.exercises import tool_replies_needed
from agentlab.runs import compare_html
from agentlab.loop import run_guarded
from agentlab.naive import run_naive
from agentlab.models import ScriptedModel, call, say, tool_calls
from agentlab.i18n import colon, joined, label, t
from agentlab.workbook.plots import plot_bars, table_view

LANG = "en"  # "zh" for 中文

TASK = t("nb07.said.refund_a_and_please", LANG)


def two_at_once():
    return ScriptedModel([
        tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}),
                   call("escalate_to_human", {"summary": t("script.call_about_a1002", LANG)})),
        say(t("nb07.said.done_a_is_refunded", LANG)),
    ], name="two-at-once")


results = {}
for name, loop in (("naive", run_naive), ("guarded", run_guarded)):
    desk, reg = aftersales.SCENARIO.setup()
    run = loop(two_at_once(), reg, TASK)
    results[name] = (run, desk.snapshot())
table_view(pd.DataFrame([{"loop": k, "status": r.status, "tool calls run": r.tool_calls, "refunds": len(s["refunds"]),
                          "hand-over tickets": len(s["tickets"]), "what the user was told": r.answer}
                         for k, (r, s) in results.items()]), lang=LANG)

# %% [markdown]
# **Name it.** Both runs end `done`, and both tell the user the hand-over is arranged. Only the guarded one
# did it. Nothing failed loudly: the naive loop's history even breaks the protocol (an assistant message
# with two `tool_calls` must be followed by two `tool` messages, or a real API answers 400).

# %%
display(HTML(compare_html(results["naive"][0], results["guarded"][0], lang=LANG)))
for k, (r, _) in results.items():
    asked = sum(len(m.get("tool_calls") or []) for m in r.messages if m["role"] == "assistant")
    answered = sum(1 for m in r.messages if m["role"] == "tool")
    print(label(k, LANG) + colon(LANG) + joined([f"{label('tool calls asked', LANG)} {asked}",
                                                f"{label('tool messages', LANG)} {answered}"], LANG, "comma"))

# %% [markdown]
# **Measure it.**

# %%
import matplotlib.pyplot as plt

plot_bars({"refund": {k: len(s["refunds"]) for k, (_, s) in results.items()},
           "hand-over": {k: len(s["tickets"]) for k, (_, s) in results.items()}},
          title="actions actually done (asked: one of each)", ylabel="count", lang=LANG)
plt.show()

# %% [markdown]
# ## Exercise
#
# An assistant message asks for the orders in `orders` at once, one `get_order` call each. How many `tool`
# messages must follow it?

# %%
orders = ["A1001", "A1002", "A1003"]
my_answer = None  # a number
print(tool_replies_needed(my_answer, calls=len(orders), lang=LANG))

# %% [markdown]
# ## Build: answer every call
#
# The naive loop runs `reply.tool_calls[0]` and drops the rest. Write `my_tool_messages`, the step a loop takes
# after an assistant message with tool calls: it gets the message (`message["tool_calls"]`, each with an `"id"` and
# a `"function"` holding `"name"` and `"arguments"`) and `run_one(tool_call)`, which runs one call and returns the
# text the model reads (an error too, never a raise), and returns the `tool` messages that must follow. The check
# runs a loop with your step on the message above (`two_at_once`), on a message of three look-ups
# (`three_lookups`), and on one with a broken call between two good ones (`bad_call_between`), and says, by these
# names, which still break the protocol or leave an action undone.

# %%
from agentlab.workbook.builds_loops import build_answer_every_call


def my_tool_messages(message, run_one):
    # your code here: return the tool messages, [{"role": "tool", "tool_call_id": ..., "content": ...}, ...]
    ...


print(build_answer_every_call(my_tool_messages, lang=LANG))

# %% [markdown]
# ## Recap
#
# - Both runs ended `done` and told the user the hand-over was arranged; only the guarded one did it.
# - The naive history broke the protocol: a real API answers it with a 400.
# - The guarded loop answered every call, in order, each with its own `tool_call_id`.
#
# **Next:** [08 · Where each failure is caught](08_where_failures_are_caught.ipynb). Read alongside: [the guards](../docs/guards.md#all_calls); every path through the workbook: [docs/course.md](../docs/course.md).
