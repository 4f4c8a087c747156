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
# # 05 · 副作用：退款只退一次（幂等）
#
# 读操作重试一次不花任何代价；写操作重试一次就是一起事故。一笔退款被请求两次，有三种再平常不过的途径：
# 网络丢了回复，循环**重试**；模型**重复**了一个已经发过的调用；模型在**同一条消息里把同一个调用发了两遍**。
# 拦在中间的有三层防线（见 [docs/zh/guards.md](../../docs/zh/guards.md#idempotency)）：由循环计算的幂等键、
# 存储层自身的防护（唯一键约束），以及大额退款时的人工审批闸门。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 说出一笔退款被请求两次的三种常见方式：回复丢失、重复调用、一条消息里两个调用
# - 从工具的业务键推出幂等键，并说明为什么幂等键从不由模型来写
# - 说清 `OUTCOME_UNKNOWN`、租约和审批门各自防的是什么
#
# **先修：** [04 · 瞬时、校验、致命：三类错误](04_transient_validation_fatal.ipynb)。
#
# **用时：** 约 35 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

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

# 朴素循环通常的第一处修补：回应一条消息里的每个调用，但不带幂等键。
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
# **给它定性。** 每次运行都只要求退一笔 199 元。朴素循环在丢失回复和重复调用这两种情况下各写了两笔退款。
# 同一条消息里的两个调用它只写了一笔，但那只是因为它会悄悄丢掉第一个之后的所有调用（见笔记本 07）：
# 把这一点“修好”、逐个执行每个调用却不加幂等键，两笔退款就都发出去了。在防护循环里，重复的那次被*重放*了：
# 循环在第一笔退款执行之前就占下了这个键，所以第二次请求拿回的是记录下来的结果，并标上 `"replayed": true`。
# （丢失回复那一行，“逐个执行、不加键”一列只写了一笔退款，只是因为那个循环根本不重发：
# 它的用户被告知没人能确认这笔退款、会有同事来核实，而钱其实已经退出去了：一个人的时间花在了一笔早已办完的退款上。）这个键由循环根据工具的**业务键**（每个订单一笔退款）计算出来，
# 绝不由模型自己编：

# %%
desk, reg = aftersales.SCENARIO.setup(LANG)
args = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
print(idempotency_key(reg["create_refund"], args))
replayed = [e.model_visible for e in compare_loops("duplicate_call").guarded.tool_events if e.replayed]
print(replayed[0])

# %% [markdown]
# **量一量。**

# %%
import matplotlib.pyplot as plt

plot_bars(refunds, title="refunds written for one request (one is right)", ylabel="refunds", lang=LANG)
plt.show()

# %% [markdown]
# ## 数据库里的防线
#
# 内存里的字典只能保护一个进程。一旦有多个副本，防护就必须放在共享存储里：这里用一个 SQLite 文件，
# 它的主键保证只有一个写入者能占下某个键。八个工作线程争着给同一个订单退款，存储只放行其中一个。

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
# ## 没人知道它到底有没有发生：结果未知
#
# 只有后端认这个键，幂等键才能让*重复*变得安全。`create_refund` 认（它是 `keyed` 的：支付接口接受幂等键），
# 所以丢失回复之后，循环用同一个键重发，后端返回的就是第一笔退款。`escalate_to_human` 不认：如果它的回复丢了，
# 或者它在仍在执行时超时了，工单可能存在，也可能不存在。这时告诉模型 `TIMEOUT, retryable: true`
# 就是一句会再开一张工单的谎话。防护循环说的是实话：`OUTCOME_UNKNOWN`，不可重试，“不要再发一次”，
# 把对话转给人工，并把这个键保持在*未知*状态：在有人（或者一个去核对后端的任务）把它处理掉之前，谁都不能再执行它。

# %%
desk, reg = aftersales.SCENARIO.setup(LANG)
lossy = inject_tool_fault(reg, "escalate_to_human", "lost_reply")
model = SelfCorrectingModel([("escalate_to_human", {"summary": t("script.call_back", LANG)})], t("script.handed_over", LANG))
run = run_guarded(model, lossy, t("script.call_me", LANG), store=SQLiteStore(), sleep=lambda s: None)
print(f"{label(run.status, LANG)} | {label('tickets', LANG)}{colon(LANG)}{len(desk.tickets)} | {label('the model was told', LANG)}{colon(LANG).rstrip()}")
print(run.tool_events[0].model_visible)
print(f"{label('the user reads', LANG)}{colon(LANG)}{run.answer}")

# %% [markdown]
# 同样的实话也适用于写到一半就被杀掉的进程（`kill -9`）：它占下的键带有一个**租约**
# （`GuardConfig.lease`，默认 60 秒）。租约期内，第二个调用方听到的是 `IN_PROGRESS`（这是实话：它可能还在执行）；
# 过了租约，听到的就是 `OUTCOME_UNKNOWN`。这里的时钟是注入的，所以谁也不用真等一分钟。

# %%
now = [0.0]
store = MemoryStore(clock=lambda: now[0])
refund_args = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
store.claim("create_refund:A1001", canonical(refund_args), lease=60)   # 一个工作进程认领了这笔退款，然后崩溃了
desk, reg = aftersales.SCENARIO.setup(LANG)
refund = call("create_refund", refund_args)
for at in (10, 61):
    now[0] = at
    r = run_guarded(ScriptedModel([refund, say("?")]), reg, "refund A1001", store=store, sleep=lambda s: None)
    print(f"t={at:>2}s:", r.tool_events[0].error_code, f"| {label('unresolved keys', LANG)}{colon(LANG)}{store.unknown()}")
resolve(store, "create_refund:A1001", happened=False)       # 有人核实过：这笔退款从未发出
r = run_guarded(ScriptedModel([refund, say("Refunded.")]), reg, "refund A1001", store=store, sleep=lambda s: None)
print(f"{label('after resolving', LANG)}{colon(LANG)}{label(r.status, LANG)} | {label('refunds', LANG)}{colon(LANG)}{len(desk.refunds)}")

# %% [markdown]
# ## 人工审批闸门
#
# 超过 1,000 元的退款不会被执行：它被记为待审批，模型收到的是 `NEEDS_APPROVAL`（不可重试）。
# 审批通过时，执行的恰好是被批准的那组参数，而且恰好执行一次。

# %%
# 每次运行都用一个新文件夹：重跑这个单元格时，存储是空的，而不是上一次的审批结果
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
# 点击上面的 **批准** 或 **拒绝**。不用界面时，在代码里做同样的事（用一个单独挂起的请求，上面点了什么都不影响它）：
# 批准两次，只执行一次。

# %%
# 一个单独的请求，用同样的方式在它自己的存储里挂起：不管上面点了什么，这里演示的都是同一件事
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
# ## 最后一步，单独来写
#
# 退款台可选的最后一步：工作核实完之后，用户读到的回复由单独的一次调用来写，不带工具、温度更高，
# 只看已核实的结果（无错执行的那些调用；不看之前的错误和重写）。`run_guarded(..., final_model=...)` 就做这件事（默认关闭）；
# 如果这次调用失败，保留原来那一次调用的回答。这里用一个写好台词的模型代替第二个模型。
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
# ## 练习
#
# 对订单 A1004 调用 `create_refund` 时（金额任意），循环用的幂等键是什么？

# %%
my_answer = None  # 幂等键，一个字符串
print(answer_is(my_answer, idempotency_key(reg["create_refund"], {"order_id": "A1004", "amount": 5, "reason": "user_cancel"}),
                both("nb05.said.the_business_key_one"),
                hint=both("nb05.said.the_key_printed_above"), lang=LANG))

# %% [markdown]
# ## 动手改：什么让两笔退款是同一笔
#
# 循环从工具的业务键算出幂等键。写好 `my_business_key`：它拿到一笔退款的参数（字典），返回说明“这是哪一笔退款”的文本。
# 检查会用它给 `create_refund` 定键，并在只有键拦着的情况下运行防护循环（业务台拒绝已退款订单的那条规则关掉了）：
# 响应丢失（`lost_reply`）、重复调用（`duplicate_call`）、一条消息里调用两次（`parallel_call`）、只改了备注又发一遍
# （`reworded_repeat`）、换了个金额又发一遍（`second_amount`），这几种情况下订单 A1001 都只能退一次；要求给两个金额相同的订单退款时（`two_orders`），每个都要
# 退一次。检查会按这些名字告诉你你的键处理好了哪些情况、还有什么不对。

# %%
from agentlab.workbook.builds_loops import build_business_key


def my_business_key(args):
    # 在这里写你的代码：返回能唯一指明这笔退款的文本
    ...


print(build_business_key(my_business_key, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 朴素循环在回复丢失和重复调用时各写了两笔退款；防护循环则回放了记录下来的结果。
# - SQLite 的主键让八个并发 worker 中恰好一个抢到了幂等键。
# - 没人知道一次写操作是否已经发生时，循环如实说 `OUTCOME_UNKNOWN`，不可重试，并转交人工。
# - 超过 1000 元的退款要等审批，批准后只执行一次。
#
# **下一步：** [06 · 停不下来的循环](06_loops_that_never_end.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md#idempotency)；全部学习路径：[课程与路径](../../docs/zh/course.md)。
