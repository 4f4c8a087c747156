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
# # 05 · Side effects: refund once (幂等 idempotency)
#
# Retrying a read costs nothing; retrying a write is an incident. A refund can be asked for twice in
# three ordinary ways: the network loses the reply and the loop **retries**; the model **repeats** a
# call it already made; the model sends the same call **twice in one message** (并发调用).
# Three layers stand in the way (docs/guards.md#idempotency): an idempotency key (幂等键) computed by the loop, a guard in
# the storage itself (a unique key, 唯一约束), and a person for large amounts (人工闸门).

# %%
import tempfile
from dataclasses import replace
import threading
from pathlib import Path

import pandas as pd

from agentlab.scenarios import aftersales
from agentlab.approval import approve, pending
from agentlab.workbook.demo import compare_loops, make_model
from agentlab.workbook.exercises import answer_is
from agentlab.guards import NO_GUARDS, GuardConfig
from agentlab.loop import idempotency_key, run_guarded
from agentlab.models import SelfCorrectingModel
from agentlab.workbook.plots import plot_bars
from agentlab.store import SQLiteStore
from agentlab.workbook.widgets import ApprovalDesk

# A loop that does run every call of a message, but has no other guard: the double refund of parallel calls.
all_calls_only = replace(NO_GUARDS, all_calls=True)
cases = {"lost reply + retry": ("lost_reply", None), "repeated call": ("duplicate_call", None),
         "two calls in one message": ("parallel_call", all_calls_only)}
rows, refunds = [], {}
for label, (fault, unguarded) in cases.items():
    c = compare_loops(fault)
    loose = compare_loops(fault, config=unguarded) if unguarded else None
    first = len((loose.guarded_state if loose else c.naive_state)["refunds"])
    refunds[label] = {"naive": first, "guarded": len(c.guarded_state["refunds"])}
    rows.append({"case": label, "refunds without guards": first, "refunds, guarded": refunds[label]["guarded"],
                 "guarded status": c.guarded.status})
pd.DataFrame(rows)

# %% [markdown]
# **Name it.** Each run asked for one refund of 199 yuan. Without guards, two were written. In the guarded
# loop the repeat was *replayed*: the loop claimed the key before the first refund ran, so the second
# request got the recorded result back, marked `"replayed": true`. The key is computed by the loop from the
# tool's **business key** (one refund per order), never invented by the model:

# %%
desk, reg = aftersales.SCENARIO.setup()
args = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
print(idempotency_key(reg["create_refund"], args))
replayed = [e.model_visible for e in compare_loops("duplicate_call").guarded.tool_events if e.replayed]
print(replayed[0])

# %% [markdown]
# **Measure it.**

# %%
import matplotlib.pyplot as plt

plot_bars(refunds, title="refunds written for one request", ylabel="refunds")
plt.show()

# %% [markdown]
# ## The guard in the database (存储层兜底)
#
# An in-memory dictionary only protects one process. With several replicas, the guard must live in shared
# storage: here a SQLite file whose primary key lets exactly one writer claim a key. Eight workers race to
# refund the same order; the store lets one through.

# %%
tmp = tempfile.TemporaryDirectory()
shared = Path(tmp.name) / "agentlab.db"
desk, reg = aftersales.SCENARIO.setup()

def worker():
    run_guarded(make_model(), reg, "refund A1001", store=SQLiteStore(shared), sleep=lambda s: None)

threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"8 racing workers, refunds written: {len(desk.refunds)}")

# %% [markdown]
# ## The approval gate (人工闸门)
#
# A refund above 1,000 yuan is not executed: it is recorded as pending, and the model is told
# `NEEDS_APPROVAL` (not retryable). Approving runs exactly the approved arguments, exactly once.

# %%
store = SQLiteStore(Path(tmp.name) / "approvals.db")
desk, reg = aftersales.SCENARIO.setup()
plan = [("get_order", {"order_id": "A1003"}),
        ("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]
run = run_guarded(SelfCorrectingModel(plan, "Refunded."), reg, "Refund A1003", store=store, sleep=lambda s: None)
print(run.status, "|", run.answer, "| refunds so far:", len(desk.refunds))
desk_widget = ApprovalDesk(store, reg)
desk_widget

# %% [markdown]
# Click **Approve** or **Reject** above. Headless, the same thing in code: approving twice runs once.

# %%
first = approve(store, reg, run.pending[0])
second = approve(store, reg, run.pending[0])
print("first approval ran:", first.ran, "| second approval ran:", second.ran, "| refunds:", len(desk.refunds))

# %% [markdown]
# ## Exercise
#
# What idempotency key does the loop use for `create_refund` on order A1004 (any amount)?

# %%
my_answer = "create_refund:A1004"
print(answer_is(my_answer, idempotency_key(reg["create_refund"], {"order_id": "A1004", "amount": 5, "reason": "user_cancel"}),
                "the business key: one refund per order, whatever the amount.")[1])
