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
# # 06 · 停不下来的循环
#
# 失控的智能体看起来很忙：每一步都“说得过去”，却没有一步是答案。有五道刹车完全不需要模型配合
# （见 [docs/zh/guards.md](../../docs/zh/guards.md)），本笔记本运行其中三道：**步数预算**；
# **重复调用熔断**，在第三次一模一样的调用时叫停；以及每个工具调用的**超时**。另外两道限制一条模型消息最多能要求多少个调用
# （`max_calls_per_turn`），以及整次运行最多能花多久（`run_deadline`）。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 用三个无需模型配合的刹车停住失控的智能体：步数预算、重复调用熔断和超时
# - 说清超时能停住什么、停不住什么（读操作、写操作、占着 GIL 的 C 代码）
# - 从一个爱走神的模型的取舍曲线上选定步数预算
#
# **先修：** [05 · 副作用：退款只退一次（幂等）](05_side_effects.ipynb)。
#
# **用时：** 约 25 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

import pandas as pd

from agentlab import run_guarded, run_naive
from agentlab.i18n import aside, joined, label
from agentlab.models import ScriptedModel, call
from agentlab.scenarios import aftersales
from agentlab.trace import note_text
from agentlab.workbook.demo import budget_sweep, compare_loops
from agentlab.workbook.exercises import breaker_threshold
from agentlab.workbook.plots import plot_statuses, table_view
from agentlab.workbook.widgets import BudgetSlider


def ping_pong():
    """在两个工具之间来回切换，参数每次都不一样：从不重复，也从不回答。"""
    script = [call("get_order", {"order_id": f"A{1001 + i}"}) if i % 2 else
              call("search_orders", {"phone": f"1380013{i:04d}"}) for i in range(40)]
    return ScriptedModel(script, name="ping-pong")


def repeater():
    """一遍又一遍地查询同一个订单。"""
    return ScriptedModel([call("get_order", {"order_id": "A1001"})] * 40, name="repeater")


rows = []
for make in (ping_pong, repeater):
    desk, reg = aftersales.SCENARIO.setup()
    naive = run_naive(make(), reg, "where is my order?")
    guarded = run_guarded(make(), reg, "where is my order?")
    rows.append({"model": make().name, "naive": label(naive.status, LANG) + aside(f"{naive.steps} {label('steps', LANG)}", LANG),
                 "guarded": label(guarded.status, LANG) + aside(f"{guarded.steps} {label('steps', LANG)}", LANG),
                 "reason": note_text(guarded.reason, LANG)})
hang = compare_loops("hanging_tool", hang_seconds=0.5, lang=LANG)
rows.append({"model": "hanging tool",
             "naive": joined([label(hang.naive.status, LANG), f"{label('waited', LANG)} "
                             f"{max(e.latency_ms for e in hang.naive.tool_events):.0f} ms"], LANG, "comma"),
             "guarded": joined([label(hang.guarded.status, LANG), label("timed out and resent", LANG)], LANG, "comma"),
             "reason": "timeout"})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# **超时能拦住什么，拦不住什么。** 只读工具会被就地打断（在调用它的线程里用 SIGALRM 设定截止时间）：
# 读到一半停下，不会留下做了一半的事。写操作则永远不会被打断；它在一个工作线程里执行，循环只是不再*等*它，
# 所以一个超时的写操作仍然可能生效：这就是 `OUTCOME_UNKNOWN`，绝不是“可重试”（见笔记本 05）。
# 两种方式都停不下持有 GIL 的 C 代码：一个灾难性回溯的正则表达式，或者 C 扩展里的一段长计算，会一直跑到结束，
# 截止时间要等它返回后才触发（实测：给这样一个正则套上 0.5 秒超时，9.5 秒后才返回）。
# 对这类代码，要先限制输入（先截断），或者放到单独的进程里去跑。

# %% [markdown]
# **给它定性。** 熔断器的拒绝是 `LOOP_DETECTED`，预算的拒绝是 `BUDGET_EXHAUSTED`：两者都属于 `rule_blocked` 阶段。
# 防护按设计出手并不是不稳定，指标会把它单独统计。
#
# **量一量。** 预算是一种取舍，而表现全都一样的运行体现不出取舍：无论预算多大，来回横跳的模型（ping-pong）和复读机（repeater）
# 都会被熔断器或预算拦下。所以这里换成一个会*走神*的模型（`DistractedModel`）：它做的是退款任务，
# 但每一步之前都有一定的（由固定的随机数起点决定的）概率去查一些没用的东西。四十次运行，四十个随机数起点，每种预算用的都是同一组起点：
# 预算太小，会把本来能完成的运行拦腰截断；预算大一些就能让它们完成（而失控的运行在被拦下之前也会多花一些轮次）。
# 拖动滑块，可以细看某一个预算。

# %%
import matplotlib.pyplot as plt

plot_statuses(budget_sweep([2, 3, 4, 6, 8]), title="final statuses of 40 wandering runs, by step budget", lang=LANG)
plt.show()

# %%
BudgetSlider(value=4, lang=LANG)

# %% [markdown]
# ## 练习
#
# 在默认配置下，熔断器会在第几次一模一样的调用时出手（第 1 次、第 2 次、第 3 次……）？给出一个数字。

# %%
my_answer = None  # 一个数字：1、2、3……
print(breaker_threshold(my_answer, lang=LANG))

# %% [markdown]
# ## 动手改：拦住失控、不拦正事的限制
#
# 上面默认的 6 步预算截停了四十个走神的运行里本来能跑完的几个。选好 `my_config`（一个 `GuardConfig`），定下你会上线的
# `step_budget` 和 `repeat_limit`：检查会用它运行防护循环，跑本笔记本的来回横跳的模型（`ping_pong`：12 轮内停下了吗？）、
# 复读机（`repeat_call`：4 轮内停下了吗？）和预算扫描里的四十个走神的运行（`healthy_runs`：都跑完了吗？），按这些名字告诉你
# 还有什么不对。

# %%
from agentlab import GuardConfig
from agentlab.workbook.builds_loops import build_loop_limits

my_config = None  # 在这里写你的代码：GuardConfig(...)

print(build_loop_limits(my_config, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 熔断器用 `LOOP_DETECTED` 拒绝了第三次相同的调用；预算用 `BUDGET_EXHAUSTED` 结束了运行。
# - 两者都属于 `rule_blocked`：是防护按设计生效，与不稳定分开统计。
# - 超时的写操作仍可能生效，所以它是 `OUTCOME_UNKNOWN`，绝不可重试。
# - 一个爱走神的模型跑了四十次，显示出预算太小和太大各要付出什么。
#
# **下一步：** [12 · 消息与上下文：日期、清空会话、成对裁剪](12_messages_and_context.ipynb)（半天路径上：[19 · 把防护带回你的框架](19_take_the_guards_home.ipynb)）。配合阅读：[防护手册](../../docs/zh/guards.md#step_budget)；全部学习路径：[课程与路径](../../docs/zh/course.md)。
