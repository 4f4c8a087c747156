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
# # 07 · 一条消息里的多个工具调用
#
# 模型可能用一条消息同时发出两个工具调用。只执行 `tool_calls[0]` 的代码（tau-bench 的参考智能体和
# 函数调用的官方示例里都这么写）会把其余的调用悄悄丢掉：一部分事情根本没做，用户却被告知已经办好了
# （见 [docs/zh/guards.md#all_calls](../../docs/zh/guards.md#all_calls)）。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 识别只执行 `tool_calls[0]`、悄悄丢掉其余工作的代码
# - 说出带多个工具调用的 assistant 消息后面必须跟几条 `tool` 消息，以及它们如何用 `tool_call_id` 一一对应
#
# **先修：** [05 · 副作用：退款只退一次（幂等）](05_side_effects.ipynb)、[12 · 消息与上下文：日期、清空会话、成对裁剪](12_messages_and_context.ipynb)。
#
# **用时：** 约 25 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

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

LANG = "zh"  # 改成 "en" 就是英文版

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
# **点出问题。** 两次运行都以 `done` 结束，也都告诉用户转人工已经安排好了，但只有防护循环真的做了。
# 整个过程没有任何响亮的报错：朴素循环的消息历史甚至违反了协议（一条带两个 `tool_calls` 的 assistant
# 消息后面必须跟两条 `tool` 消息，否则真实的接口会直接返回 400）。

# %%
display(HTML(compare_html(results["naive"][0], results["guarded"][0], lang=LANG)))
for k, (r, _) in results.items():
    asked = sum(len(m.get("tool_calls") or []) for m in r.messages if m["role"] == "assistant")
    answered = sum(1 for m in r.messages if m["role"] == "tool")
    print(label(k, LANG) + colon(LANG) + joined([f"{label('tool calls asked', LANG)} {asked}",
                                                f"{label('tool messages', LANG)} {answered}"], LANG, "comma"))

# %% [markdown]
# **量化它。**

# %%
import matplotlib.pyplot as plt

plot_bars({"refund": {k: len(s["refunds"]) for k, (_, s) in results.items()},
           "hand-over": {k: len(s["tickets"]) for k, (_, s) in results.items()}},
          title="actions actually done (asked: one of each)", ylabel="count", lang=LANG)
plt.show()

# %% [markdown]
# ## 练习
#
# 一条 assistant 消息一次查询 `orders` 里的订单，每个订单一个 `get_order` 调用。它后面必须跟几条 `tool` 消息？

# %%
orders = ["A1001", "A1002", "A1003"]
my_answer = None  # 一个数字
print(tool_replies_needed(my_answer, calls=len(orders), lang=LANG))

# %% [markdown]
# ## 动手改：回应每一个调用
#
# 朴素循环只运行 `reply.tool_calls[0]`，其余的都丢掉了。写好 `my_tool_messages`，也就是循环收到带工具调用的助手消息后的那一步：
# 它拿到这条消息（`message["tool_calls"]`，每个都有 `"id"`，以及装着 `"name"` 和 `"arguments"` 的 `"function"`）和
# `run_one(tool_call)`（运行一个调用，返回模型要读的文本，出错也一样，从不抛异常），返回必须跟在后面的 `tool` 消息。
# 检查会用你的这一步运行一个循环：上面那条消息（`two_at_once`）、一条包含三次查询的消息（`three_lookups`）、
# 一条在两个正确调用之间夹着坏调用的消息（`bad_call_between`），按这些名字告诉你哪些还违反协议、或者落下了没办的事。

# %%
from agentlab.workbook.builds_loops import build_answer_every_call


def my_tool_messages(message, run_one):
    # 在这里写你的代码：返回工具消息，[{"role": "tool", "tool_call_id": ..., "content": ...}, ...]
    ...


print(build_answer_every_call(my_tool_messages, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 两次运行都以 `done` 结束，都告诉用户已安排转人工；真正做了的只有防护循环。
# - 朴素循环留下的历史违反了协议：真实接口会用 400 拒绝它。
# - 防护循环按顺序回复了每个调用，各带自己的 `tool_call_id`。
#
# **下一步：** [08 · 每种失败在哪里被拦下](08_where_failures_are_caught.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md#all_calls)；全部学习路径：[课程与路径](../../docs/zh/course.md)。
