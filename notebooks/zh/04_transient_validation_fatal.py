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
# # 04 · 瞬时、校验、致命：三类错误
#
# 处理失败的代码只需要问一个问题，就能把每一种失败归好类（见 [docs/zh/failures.md](../../docs/zh/failures.md#category)）：
# **把一模一样的东西再发一次，会有用吗？**
#
# * **瞬时**（`transient`）：429、超时、5xx、连接断开。过一会儿再发，用指数退避加随机抖动，到了上限就放弃；
# * **校验**（`validation`）：模型的调用本身写错了。原样重发不会有任何帮助；要把错误拿给模型看，让它改正调用；
# * **致命**（`fatal`）：401、403、404，或者被某个防护拦下。立刻停止，用大白话告诉用户。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 用“原样再发一次有没有用”这个问题，把失败分成瞬时、校验、致命三类
# - 读懂带指数退避和抖动的重试时间表，并算出每次等待多久
# - 借助模拟说明为什么同步重试的客户端会把服务器再次压垮
#
# **先修：** [03 · 模型读得懂的错误](03_readable_errors.ipynb)。
#
# **用时：** 约 30 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

import random

import pandas as pd

from agentlab.i18n import colon, joined, label
from agentlab.scenarios import aftersales
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import longest_wait
from agentlab.loop import run_guarded
from agentlab.naive import run_naive
from agentlab.models import ModelError, ScriptedModel, call
from agentlab.workbook.plots import herd_results, plot_herd, plot_retry_schedule, table_view
from agentlab.retry import RetryPolicy

rows = []
for f in ["api_429", "api_timeout", "api_500", "flaky_tool", "hanging_tool", "api_401"]:
    c = compare_loops(f, lang=LANG)
    rows.append({"fault": f, "naive": c.naive.status, "guarded": c.guarded.status, "resends": c.guarded.retries,
                 "user sees": c.guarded.answer})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# 朴素循环没有给模型调用包上任何保护，所以一个 429 就让整段对话结束了。防护循环会重发瞬时失败，
# 遇到 401 则立刻停下，并给用户一句友好的说明。工具侧的致命错误也一样处理：订单不存在，或者退款不符合规则。

# %%
for task_call in [call("get_order", {"order_id": "A9999"}),
                  call("create_refund", {"order_id": "A1002", "amount": 10, "reason": "user_cancel"})]:
    desk, reg = aftersales.SCENARIO.setup(LANG)
    run = run_guarded(ScriptedModel([task_call]), reg, "refund please", lang=LANG)
    e = run.tool_events[0]
    print(f"{e.error_code}{colon(LANG)}" + joined([f"{label(e.error_category, LANG)}/{label(e.error_stage, LANG)}", f"{label('status', LANG)} {label(run.status, LANG)}",
                                                  f"{label('user sees', LANG)}{colon(LANG)}{run.answer}"], LANG))
# 模型接口返回 403：立即停下，不重发，用用户的语言给一句友好的话
desk, reg = aftersales.SCENARIO.setup(LANG)
run = run_guarded(ScriptedModel([ModelError("PERMISSION_DENIED", "403: key not allowed for this model")]), reg, "hi",
                  lang=LANG)
print(f"PERMISSION_DENIED{colon(LANG)}" + joined([f"{label('resends', LANG)} {run.retries}", f"{label('status', LANG)} {label(run.status, LANG)}",
                                                 f"{label('user sees', LANG)}{colon(LANG)}{run.answer}"], LANG))

# %% [markdown]
# **量一量：重发的时间表。** 30 个客户端在同一时刻失败，它们分别在什么时候重发？有抖动和没有抖动时各是什么样？
# 没有抖动的话，每一波重发都会同时到达。

# %%
import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True)
plot_retry_schedule(RetryPolicy(max_retries=4, base=0.5, cap=8, jitter="none"), ax=axes[0], lang=LANG)
plot_retry_schedule(RetryPolicy(max_retries=4, base=0.5, cap=8, jitter="full"), ax=axes[1], lang=LANG)
plt.show()

# %% [markdown]
# **惊群效应。** 300 个客户端同时失败，而服务器每个时间片（四分之一秒）只能应答 40 个。
# 如果大家步调一致地重试，每一波都会再次压垮服务器；完全抖动（full jitter）则把它们分散开来。
# 观察窗口是整个重发时间表（1 + 2 + 4 + 8 = 15 秒）再加上最后一次重发落入的那个四分之一秒时段（共 15.25 秒），所以一个没被服务到的客户端是真的放弃了，
# 而不只是跑出了图的右边。每张图下面的文字，和图中的曲线读自同一次模拟。

# %%
herds = herd_results({"no jitter": RetryPolicy(max_retries=4, base=1, cap=8, jitter="none"),
                      "full jitter": RetryPolicy(max_retries=4, base=1, cap=8, jitter="full")}, clients=300, capacity=40)
plot_herd(herds, capacity=40, lang=LANG)
plt.show()

# %% [markdown]
# ## 练习
#
# 使用 `RetryPolicy(base=0.5, cap=8, jitter="none")` 时，循环在**第三次**重发（尝试序号 `attempt=2`，从 0 数起）之前要等多少秒？

# %%
my_answer = None  # 秒数，一个数字
print(longest_wait(my_answer, RetryPolicy(base=0.5, cap=8, jitter="none"), attempt=2, lang=LANG))

# %% [markdown]
# ## 动手改：只重发瞬时失败
#
# 朴素循环什么都不重发：一个 429 就结束了它的对话。写好 `my_wait`，也就是模型接口失败后重发包装要做的决定：
# 它拿到错误（`error.code`、`error.transient`、`error.retry_after`）、这是第几次重发（`attempt`，第一次为 0）和一个 `rng`，
# 返回再次发送前要等的秒数（最多 30 秒：没人会等更久），或者返回 `None` 表示停止。
# 检查会用它包住朴素循环的模型（等待只记录、不真的睡），
# 跑一遍本笔记本的故障：各失败两次的 `api_429`、`api_timeout` 和 `api_500`，`api_401`，以及一个一直不恢复的 `api_500`；
# 它还会拿一个 403 和一个 400 问你的函数，它们和 401 一样不是瞬时的。检查会告诉你哪些已经处理好了、还有什么不对。

# %%
from agentlab.workbook.builds_guards import build_resend


def my_wait(error, attempt, rng):
    # 在这里写你的代码：重发前要等的秒数，或者返回 None 表示停下
    ...


print(build_resend(my_wait, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 一个 429 就结束了朴素循环的对话；防护循环重发了它，遇到 401 则立即停下，并用一句平实的话告诉用户。
# - 工具端的致命错误（订单不存在、退款超出规则）也同样立即停止。
# - 没有抖动时，三十个失败的客户端成批同时重发。
# - 在惊群模拟中，完全抖动把 300 个客户端错开，服务器才接得住。
#
# **下一步：** [05 · 副作用：退款只退一次（幂等）](05_side_effects.ipynb)。配合阅读：[失败分类](../../docs/zh/failures.md#category)；全部学习路径：[课程与路径](../../docs/zh/course.md)。
