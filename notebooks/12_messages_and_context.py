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
# # 12 · Messages and context: the date, clearing, trimming in pairs
#
# The bookkeeping desk: "I took a taxi today for 45 yuan, please book it." Its failures are not in one tool
# call but in the conversation around the loop ([docs/guards.md#context](../docs/guards.md#context)): what
# the **system prompt** says today is, what **clearing the chat** keeps, and how a long history is
# **trimmed**. The desk's clock says 2026-10-15, a Thursday; the naive desk's prompt was written on 2026-09-21
# and still says so.

# %% [markdown]
# **After this notebook you can:**
#
# - name the four message roles and match each `tool` reply to its call by `tool_call_id`
# - put today's date in the system prompt and clear a chat without losing it
# - trim a long history in whole blocks, keeping the system prompt, and see the API refuse a naive cut with a 400
#
# **Before it:** [02 · Arguments the model gets wrong](02_bad_arguments.ipynb).
#
# **Time:** about 35 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import matplotlib.pyplot as plt
import pandas as pd

from agentlab.context import estimate_tokens, protocol_problems, trim_messages
from agentlab.evals import load_cases
from agentlab.evals.outcome import grade
from agentlab.i18n import label, t
from agentlab.models import DatedModel, ModelError, ScriptedModel, call, say
from agentlab.models.fakeserver import ChatServer
from agentlab.models.openai_model import OpenAIModel
from agentlab.resources import data_file  # the shipped data, found from notebooks/ and from notebooks/zh/ alike
from agentlab.scenarios import expense
from agentlab.scenarios.conversation import Conversation
from agentlab.workbook.demo import compare_expense, demo_report
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import cjk_fonts, plot_hbars, table_view

LANG = "en"  # "zh" for 中文


def booking(day: str, item: str = "taxi", amount: float = 45, category: str = "transport"):
    """One booking call; the day may be a relative placeholder ("{yesterday}") the fake writes out."""
    return call("book_expense_record", {"date": day, "item": item, "amount": amount, "category": category})


# %% [markdown]
# ## The four roles
#
# `system` (the rules and today's facts, rebuilt every turn), `user`, `assistant` (text, or `tool_calls`
# whose `arguments` are a *string* of JSON), and `tool` (one reply per call, matched by `tool_call_id`).

# %%
chat = Conversation(expense.SCENARIO, DatedModel(ScriptedModel([booking("{today}"), say(t("nb12.said.booked_taxi_yuan", LANG))])),
                    lang=LANG, sleep=lambda s: None)
run = chat.ask(expense_task := t("nb12.said.i_took_a_taxi", LANG))
table_view(pd.DataFrame([{"role": m["role"], "content": m.get("content") or "",
               "tool_calls / tool_call_id": m.get("tool_call_id") or ", ".join(
                   f"{c['function']['name']}({c['function']['arguments']})" for c in m.get("tool_calls") or [])}
              for m in run.messages]), lang=LANG)

# %% [markdown]
# ## "Today"
#
# The same model, the same sentence, both desks. The model knows the date only from the system prompt.

# %%
print(demo_report(compare_expense(lang=LANG), LANG))

# %% [markdown]
# Relative days, graded on the ledger: "yesterday" and "last Friday" through both desks.

# %%
rows = []
for words, day, meant in ((t("nb12.said.yesterday_s_lunch_yuan", LANG), "{yesterday}", "2026-10-14"),
                          (t("nb12.said.last_friday_s_hotel", LANG), "{last_friday}", "2026-10-09")):
    for loop in ("naive", "guarded"):
        c = Conversation(expense.SCENARIO, DatedModel(ScriptedModel([booking(day), say(t("nb12.said.booked", LANG))])),
                         loop=loop, lang=LANG, sleep=lambda s: None)
        run = c.ask(words)
        ledger = c.state.snapshot()
        rows.append({"asked": words, "desk": loop, "booked on": ledger["records"][0]["date"], "meant": meant,
                     "graded on the ledger": grade({"records": [{"date": meant}]}, ledger, run).outcome})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# ## Clearing the chat
#
# Clearing must keep the system prompt and clear the conversation's business state (its pending
# confirmations, its "booked once" memory). The naive clear drops everything, the system prompt too: the
# next turn has no date at all, and the model falls back to what it believes today is (its training cutoff).

# %%
rows = []
for loop in ("naive", "guarded"):
    c = Conversation(expense.SCENARIO, DatedModel(ScriptedModel([booking("{today}"), say("ok"),
                                                                 booking("{yesterday}", "lunch", 35, "food"), say("ok")])),
                     loop=loop, lang=LANG, sleep=lambda s: None)
    c.ask(t("nb12.said.taxi_today", LANG))
    c.clear()
    after = c.ask(t("nb12.said.yesterday_s_lunch", LANG))
    rows.append({"desk": loop, "roles sent after clearing": ", ".join(m["role"] for m in after.messages[:2]),
                 "lunch booked on": c.state.snapshot()["records"][-1]["date"], "should be": "2026-10-14"})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# ## Trimming in pairs
#
# A long chat from the suite (40 earlier turns). "Keep the last 10 messages" cuts wherever that falls: here
# it starts with a tool reply whose call it dropped, and the system prompt is gone too. `trim_messages` cuts
# whole blocks only (a call stays with all of its replies), keeps the system prompt and the latest question,
# and fits a token budget (counted by the model's tokenizer when there is one, else by the labelled estimate
# `estimate_tokens`).

# %%
case = next(c for c in load_cases(data_file("expense_cases.jsonl")) if c.id == "boundary-long-chat-taxi")
system = {"role": "system", "content": expense.expense_prompt(LANG)}
history = [system, *case.history, {"role": "user", "content": case.text(LANG)}]
naive_cut = [*case.history[-10:], history[-1]]  # the naive desk: the last 10 messages, then the question
trimmed = trim_messages(history, max_tokens=expense.CONTEXT_BUDGET)
table_view(pd.DataFrame([{"history": name, "messages": len(m), "tokens (estimate)": estimate_tokens(m),
               "first role": m[0]["role"], "protocol problems": len(protocol_problems(m))}
              for name, m in (("whole", history), ("last 10 messages", naive_cut), ("trim_messages", trimmed))]), lang=LANG)

# %%
with cjk_fonts():
    plot_hbars({name: estimate_tokens(m) for name, m in (("whole", history), ("last 10 messages", naive_cut),
                                                      ("trim_messages", trimmed))},
               xlabel="tokens (estimate)", tone={"last 10 messages": "bad", "trim_messages": "good"},
               line=(expense.CONTEXT_BUDGET, f"{label('budget', LANG)} {expense.CONTEXT_BUDGET}"), lang=LANG)
    plt.show()

# %% [markdown]
# When even the system prompt and the latest turn do not fit, trimming says so instead of cutting the
# question (`CONTEXT_TOO_LONG`):

# %%
try:
    trim_messages([system, {"role": "user", "content": "receipt line " * 800}], max_tokens=expense.CONTEXT_BUDGET)
except Exception as exc:  # the ContextTooLong failure, as the model and the user would be told
    print(exc.error.text(LANG))

# %% [markdown]
# ## The 400 over the wire
#
# The same two histories sent through the real `openai` client to a local test server that enforces the
# API's rules. The naive cut is refused with a 400; the trimmed one is answered.

# %%
with ChatServer(model=DatedModel(ScriptedModel([booking("{today}"), booking("{today}")]))) as server:
    model = OpenAIModel("test", base_url=server.base_url, api_key="sk-test", sleep=lambda s: None)
    for name, messages in (("last 10 messages", naive_cut), ("trim_messages", trimmed)):
        try:
            reply = model.complete(messages, chat.registry.specs())
            print(t("nb12.said.answered", LANG, name=label(name, LANG), tool=reply.tool_calls[0].name))
        except ModelError as exc:  # the detail is what the server said, as it said it
            print(t("nb12.said.refused", LANG, name=label(name, LANG), status=exc.status, code=exc.code, detail=exc.detail))

# %% [markdown]
# ## Exercise
#
# In the naive cut above, what is the role of the first message sent (the one the API refuses)? Give the role.

# %%
from agentlab.workbook.builds_systems import first_role_after_cut

my_answer = None  # a role: "system", "user", "assistant" or "tool"
print(first_role_after_cut(my_answer, lang=LANG))

# %% [markdown]
# ## Build it: a cut that keeps each call with its replies
#
# "Keep the last 10 messages" started on a tool reply whose call it had cut off. Write `my_cut(messages, keep)`: the
# system prompt first, then the latest messages, at most `keep` of them, never starting on a tool reply (skip such
# replies, and keep as many of the rest as fit). Predict first: is 10 the only `keep` for which the naive cut goes
# wrong? The check runs your function on the long chat above for every `keep` from 1 to its length, and on the same
# chat with some calls made two at once (two tool replies in a row), checks each result with `protocol_problems`, and
# says for which values of `keep` it still breaks. Return a new list: the loop's next turn starts from the one given.

# %%
from agentlab.workbook.builds_systems import cut_keeps_pairs


def my_cut(messages, keep):
    """The system prompt, then at most `keep` of the latest messages, never starting on a tool reply."""
    return None  # your code


print(cut_keeps_pairs(my_cut, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The model knew the date only from the system prompt: the naive desk booked expenses on the day its prompt was written.
# - Clearing must keep the system prompt and drop the conversation's business state.
# - "Keep the last 10 messages" started the history with an orphaned tool reply; `trim_messages` cut whole blocks only.
# - When even the system prompt and the latest turn do not fit, trimming says `CONTEXT_TOO_LONG`.
#
# **Next:** [07 · Several tool calls in one message](07_parallel_tool_calls.ipynb). Read alongside: [the guards](../docs/guards.md#context); every path through the workbook: [docs/course.md](../docs/course.md).
