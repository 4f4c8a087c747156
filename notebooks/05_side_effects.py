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
# # 05 · Side effects: refund once (idempotency)
#
# Retrying a read costs nothing; retrying a write is an incident. A refund can be asked for twice in
# three ordinary ways: the network loses the reply and the loop **retries**; the model **repeats** a
# call it already made; the model sends the same call **twice in one message**.
# Three layers stand in the way (docs/guards.md#idempotency): an idempotency key computed by the loop, a guard in
# the storage itself (a unique key), and a person for large amounts (an approval gate).

# %% [markdown]
# **After this notebook you can:**
#
# - name the three ordinary ways a refund is asked for twice: a lost reply, a repeated call, two calls in one message
# - derive an idempotency key from a tool's business key and say why the model never writes it
# - say what `OUTCOME_UNKNOWN`, a lease and the approval gate each protect against
#
# **Before it:** [04 · Transient, validation, fatal](04_transient_validation_fatal.ipynb).
#
# **Time:** about 35 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

import tempfile
from dataclasses import replace
import threading
from pathlib import Path

import pandas as pd

from agentlab import (NO_GUARDS, GuardConfig, MemoryStore, SQLiteStore, approve, call, pending, resolve, run_guarded,
                      say)
from agentlab.i18n import both, colon, label, t
from agentlab.jsonutil import canonical
from agentlab.loop import idempotency_key
from agentlab.models import ScriptedModel, SelfCorrectingModel
from agentlab.models.faults import inject_tool_fault
from agentlab.scenarios import aftersales
from agentlab.workbook.demo import compare_loops, make_model
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import plot_bars, table_view
from agentlab.workbook.approval_widget import ApprovalDesk

# The usual first repair of the naive loop: answer every call of a message, but with no key.
all_calls_only = replace(NO_GUARDS, all_calls=True)
cases = {"lost reply + retry": "lost_reply", "repeated call": "duplicate_call", "two calls in one message": "parallel_call"}
rows, refunds = [], {}
for name, fault in cases.items():
    c = compare_loops(fault, lang=LANG)
    refunds[name] = {"naive": len(c.naive_state["refunds"]),
                     "every call, no key": len(compare_loops(fault, config=all_calls_only, lang=LANG).guarded_state["refunds"]),
                     "guarded": len(c.guarded_state["refunds"])}
    rows.append({"situation": name, **{f"refunds: {k}": v for k, v in refunds[name].items()},
                 "naive outcome": c.naive_verdict.outcome, "guarded outcome": c.guarded_verdict.outcome})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# **Name it.** Each run asked for one refund of 199 yuan. The naive loop wrote two for the lost reply and the
# repeated call. With two calls in one message it wrote one, but only because it silently drops every call
# after the first (notebook 07): fix that by answering every call, without a key, and two refunds go out. In the guarded
# loop the repeat was *replayed*: the loop claimed the key before the first refund ran, so the second
# request got the recorded result back, marked `"replayed": true`. (The lost reply writes one refund in the
# "every call, no key" column only because that loop resends nothing at all: its user was told nobody could
# confirm the refund and a colleague would check, while it had gone through, so a person's time went on a refund
# that was done.) The key is computed by the loop from the
# tool's **business key** (one refund per order), never invented by the model:

# %%
desk, reg = aftersales.SCENARIO.setup(LANG)
args = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
print(idempotency_key(reg["create_refund"], args))
replayed = [e.model_visible for e in compare_loops("duplicate_call").guarded.tool_events if e.replayed]
print(replayed[0])

# %% [markdown]
# **Measure it.**

# %%
import matplotlib.pyplot as plt

plot_bars(refunds, title="refunds written for one request (one is right)", ylabel="refunds", lang=LANG)
plt.show()

# %% [markdown]
# ## The guard in the database
#
# An in-memory dictionary only protects one process. With several replicas, the guard must live in shared
# storage: here a SQLite file whose primary key lets exactly one writer claim a key. Eight workers race to
# refund the same order; the store lets one through.

# %%
tmp = tempfile.TemporaryDirectory()
shared = Path(tmp.name) / "agentlab.db"
desk, reg = aftersales.SCENARIO.setup(LANG)

def worker():
    run_guarded(make_model(), reg, "refund A1001", store=SQLiteStore(shared), sleep=lambda s: None)

threads = [threading.Thread(target=worker) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(f"{label('8 racing workers, refunds written', LANG)}{colon(LANG)}{len(desk.refunds)}")

# %% [markdown]
# ## When nobody knows whether it happened
#
# A key makes a *repeat* safe only if the backend honours it. `create_refund` does (it is `keyed`: the
# payment API takes the idempotency key), so after a lost reply the loop resends it with the same key and
# the backend answers with the first refund. `escalate_to_human` does not: if its reply is lost, or it times
# out while still running, the ticket may or may not exist. Telling the model `TIMEOUT, retryable: true`
# would be a lie that opens a second ticket. The guarded loop says the truth instead: `OUTCOME_UNKNOWN`,
# not retryable, "do not send it again", hands the conversation to a person, and keeps the key in an
# *unknown* state that nobody may run again until a person (or a job that checks the backend) resolves it.

# %%
desk, reg = aftersales.SCENARIO.setup(LANG)
lossy = inject_tool_fault(reg, "escalate_to_human", "lost_reply")
model = SelfCorrectingModel([("escalate_to_human", {"summary": t("script.call_back", LANG)})], t("script.handed_over", LANG))
run = run_guarded(model, lossy, t("script.call_me", LANG), store=SQLiteStore(), sleep=lambda s: None)
print(f"{label(run.status, LANG)} | {label('tickets', LANG)}{colon(LANG)}{len(desk.tickets)} | {label('the model was told', LANG)}{colon(LANG).rstrip()}")
print(run.tool_events[0].model_visible)
print(f"{label('the user reads', LANG)}{colon(LANG)}{run.answer}")

# %% [markdown]
# The same truth covers a process that dies mid-write (`kill -9`): its claim carries a **lease**
# (`GuardConfig.lease`, 60 s by default). Within the lease a second caller hears `IN_PROGRESS` (true: it
# may still be running); past it, `OUTCOME_UNKNOWN`. Here the clock is injected, so no one waits a minute.

# %%
now = [0.0]
store = MemoryStore(clock=lambda: now[0])
refund_args = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
store.claim("create_refund:A1001", canonical(refund_args), lease=60)   # a worker claimed the refund, then died
desk, reg = aftersales.SCENARIO.setup(LANG)
refund = call("create_refund", refund_args)
for at in (10, 61):
    now[0] = at
    r = run_guarded(ScriptedModel([refund, say("?")]), reg, "refund A1001", store=store, sleep=lambda s: None)
    print(f"t={at:>2}s:", r.tool_events[0].error_code, f"| {label('unresolved keys', LANG)}{colon(LANG)}{store.unknown()}")
resolve(store, "create_refund:A1001", happened=False)       # a person checked: the refund never went out
r = run_guarded(ScriptedModel([refund, say("Refunded.")]), reg, "refund A1001", store=store, sleep=lambda s: None)
print(f"{label('after resolving', LANG)}{colon(LANG)}{label(r.status, LANG)} | {label('refunds', LANG)}{colon(LANG)}{len(desk.refunds)}")

# %% [markdown]
# ## The approval gate
#
# A refund above 1,000 yuan is not executed: it is recorded as pending, and the model is told
# `NEEDS_APPROVAL` (not retryable). Approving runs exactly the approved arguments, exactly once.

# %%
# a folder of its own, new each time: run again, this cell starts from an empty store, not from its last decision
held_in = tempfile.TemporaryDirectory()
store = SQLiteStore(Path(held_in.name) / "approvals.db")
desk, reg = aftersales.SCENARIO.setup(LANG)
plan = [("get_order", {"order_id": "A1003"}),
        ("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]
run = run_guarded(SelfCorrectingModel(plan, t("nb05.said.refunded", LANG)), reg, "Refund A1003", store=store, sleep=lambda s: None)
print(f"{label(run.status, LANG)} | {run.answer} | {label('refunds so far', LANG)}{colon(LANG)}{len(desk.refunds)}")
desk_widget = ApprovalDesk(store, reg, lang=LANG)
desk_widget

# %% [markdown]
# Click **Approve** or **Reject** above. Headless, the same thing in code, on a request of its own held the same way
# (what you clicked above does not change it): approving twice runs once.

# %%
# a request of its own, held the same way in a store of its own: whatever was clicked above, this shows the same thing
in_code = tempfile.TemporaryDirectory()
desk2, reg2 = aftersales.SCENARIO.setup(LANG)
store2 = SQLiteStore(Path(in_code.name) / "approvals.db")
held = run_guarded(SelfCorrectingModel(plan, t("nb05.said.refunded", LANG)), reg2, "Refund A1003", store=store2,
                   sleep=lambda s: None)
first = approve(store2, reg2, held.pending[0])
second = approve(store2, reg2, held.pending[0])
yes_no = {True: label("yes", LANG), False: label("no", LANG)}
print(f"{label('first approval ran', LANG)}{colon(LANG)}{yes_no[first.ran]} | "
      f"{label('second approval ran', LANG)}{colon(LANG)}{yes_no[second.ran]} | "
      f"{label('refunds', LANG)}{colon(LANG)}{len(desk2.refunds)}")

# %% [markdown]
# ## The last step, written apart
#
# An optional last step of the refund desk: once the work is verified, the answer the user reads is written by a
# separate call, with no tools and a higher temperature, from the verified results only (the calls that ran without
# error; not the errors and re-asks before them). `run_guarded(..., final_model=...)` does it (off by default); if
# that call fails, the single-call answer stands. A scripted writer stands in for the second model here.
# %%
from agentlab.models import say
from agentlab.workbook.demo import TASK

writer = ScriptedModel([say(t("nb05.said.your_refund_of_yuan", LANG))])
answers = {}
for name, final in (("single call", None), ("separate final-answer call", writer)):
    _desk, reg2 = aftersales.SCENARIO.setup(LANG)
    answers[name] = run_guarded(make_model(LANG), reg2, TASK[LANG], sleep=lambda s: None, lang=LANG,
                                final_model=final).answer
table_view(pd.DataFrame([{"how": name, "what the user reads": text} for name, text in answers.items()]), lang=LANG)

# %% [markdown]
# ## Exercise
#
# What idempotency key does the loop use for `create_refund` on order A1004 (any amount)?

# %%
my_answer = None  # the key, as a string
print(answer_is(my_answer, idempotency_key(reg["create_refund"], {"order_id": "A1004", "amount": 5, "reason": "user_cancel"}),
                both("nb05.said.the_business_key_one"),
                hint=both("nb05.said.the_key_printed_above"), lang=LANG))

# %% [markdown]
# ## Build: what makes two refunds the same refund
#
# The loop computes the idempotency key from the tool's business key. Write `my_business_key`: it gets a
# refund's arguments (a dict) and returns the text that says *which* refund this is. The check keys
# `create_refund` with it and runs the guarded loop with only the key in the way (the desk's rule that refuses a
# refunded order is off): under a lost reply (`lost_reply`), a repeated call (`duplicate_call`), two calls in one
# message (`parallel_call`), the same refund sent again with a reworded remark (`reworded_repeat`) and the same
# refund sent again with another amount (`second_amount`), order A1001 must be refunded once; asked for two orders of
# the same amount (`two_orders`), each must be refunded once. It says
# which of these cases your key handles and what still breaks.

# %%
from agentlab.workbook.builds_loops import build_business_key


def my_business_key(args):
    # your code here: return the text that names this refund
    ...


print(build_business_key(my_business_key, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The naive loop wrote two refunds for a lost reply and a repeated call; the guarded loop replayed the recorded result.
# - A SQLite primary key let exactly one of eight racing workers claim the key.
# - When nobody knows whether a write happened, the loop says `OUTCOME_UNKNOWN`, not retryable, and hands over to a person.
# - A refund above 1,000 yuan waited for approval and, once approved, ran exactly once.
#
# **Next:** [06 · Loops that never end](06_loops_that_never_end.ipynb). Read alongside: [the guards](../docs/guards.md#idempotency); every path through the workbook: [docs/course.md](../docs/course.md).
