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
# # 08 · 每种失败在哪里被拦下
#
# 把练习册里的每一种故障都分别放进两个循环跑一遍，再把防护循环遇到的失败按两套分类来归类
# （见[失败分类文档](../../docs/zh/failures.md#two-classifications)）：**按重试类别**
# （瞬时 / 校验 / 致命：代码该怎么处理）和**按链路环节**（结构、语义、执行三个环节，外加规则拦截：下一步该修哪里）。
# 规则拦截是防护按设计生效的结果，要单独统计。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 把防护循环遇到的失败按重试类别（代码怎么处理）和链路阶段（下一步修什么）分类
# - 把每个错误码和故障归入五类失败
# - 读懂四个核心指标，其中“成功”指评分器对数据的判定
#
# **先修：** [04 · 瞬时、校验、致命：三类错误](04_transient_validation_fatal.ipynb)、[06 · 停不下来的循环](06_loops_that_never_end.ipynb)、[07 · 一条消息里的多个工具调用](07_parallel_tool_calls.ipynb)。
#
# **用时：** 约 25 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import pandas as pd

from agentlab.evals.metrics import by_taxonomy, went_wrong_text
from agentlab.models.faults import FAULTS
from agentlab.workbook.demo import caught_by_guards, compare_loops
from agentlab.workbook.exercises import largest_share
from agentlab.workbook.plots import plot_matrix, plot_shares, table_view
from agentlab.workbook.widgets import MetricsPanel

LANG = "zh"  # 改成 "en" 就是英文版

results = {f: compare_loops(f) for f in FAULTS}
# 每次运行都按最终数据评分，用的是练习册唯一的那套定义（agentlab.evals.outcome，docs/metrics.md）
matrix = {f: {"naive": c.naive_verdict.outcome, "guarded": c.guarded_verdict.outcome} for f, c in results.items()}
table_view(pd.DataFrame([{"fault": f, "naive": matrix[f]["naive"], "guarded": matrix[f]["guarded"],
               "guarded refunds": len(c.guarded_state["refunds"]), "caught by": caught_by_guards(c, LANG)}
              for f, c in results.items()]), lang=LANG)

# %%
import matplotlib.pyplot as plt

plot_matrix(matrix, title="outcome graded on the final data, fault × loop", lang=LANG)
plt.show()

# %% [markdown]
# **各类失败的占比。** 统计的是防护循环里每一次出错的工具调用或模型轮次，不管最后有没有被修好：
# 防护循环重发之后成功的调用，也确实遇到过一次瞬时故障（`agentlab.evals.metrics.went_wrong`），
# 这里同样计入。文字和柱状图读的是同一组计数。

# %%
tax = by_taxonomy([c.guarded for c in results.values()])
print(went_wrong_text(tax["category"], LANG))
fig, axes = plt.subplots(1, 2, figsize=(11, 2.8))
plot_shares(dict(tax["category"]), ax=axes[0], title="by retry class", lang=LANG)
plot_shares(dict(tax["stage"]), ax=axes[1], title="by stage in the chain", lang=LANG)
fig.tight_layout()
plt.show()

# %% [markdown]
# **五类失败**（见[失败文档](../../docs/zh/failures.md#five-classes-of-failure)）。退款台按团队为预防失败要改什么来分类：
# 参数不合 schema、模型选择、读不懂的错误、幂等、循环。上面矩阵里的每个错误码、每种故障都归在其中一类
# （`agentlab.evals.failure_classes`）。第二张表统计上面两种循环各有多少次运行落在每一类：既按错误码，也按运行做了
# 却没有错误码说出来的事（同一笔退款做了两次、同一个调用一再重复、参数不合 schema 的调用照样执行了）。朴素循环几乎
# 不留错误码，不这样读，它的失败根本显不出来。防护循环拦下的失败，即使这次运行最后结局正确，也算在它那一类里：被拒绝、
# 再问一次的调用留下了它的错误码（防护循环那一列的 schema 运行，最后数据全都正确）。防护循环不留错误码就越过去的失败
# （重发后成功了、第二笔退款由幂等键直接回放了）既不留错误码，也没有做错的事，所以这里哪一类都不算；上面按类别的占比统计的正是这些。
# `eval` 和对你自己日志的审查也是这样计数的。

# %%
from IPython.display import display

from agentlab.evals.failure_classes import class_name, class_table
from agentlab.workbook.demo import classes_by_loop

display(table_view(pd.DataFrame(class_table(LANG)).rename(columns={"codes": "error codes", "faults": "injected faults"}),
                   lang=LANG))  # 不是单元格的最后一行：只有调用 display 时才显示
five = classes_by_loop(results.values(), LANG)
table_view(pd.DataFrame([{"class": class_name(k, LANG), "naive runs": five["naive"][k], "guarded runs": five["guarded"][k]}
                         for k in five["naive"]]), lang=LANG)

# %% [markdown]
# **四个核心指标**（定义见[指标文档](../../docs/zh/metrics.md#the-four-headline-numbers)），
# 用的还是这些运行。注意这里“成功”的含义：评分器对数据的判定（恰好一笔 199 元的退款；本不该退款的，就一笔都没有），
# 所以正确转人工的运行算成功，而说“办好了”、数据却不对的运行不算。

# %%
data_ok = {}
for c in results.values():
    data_ok[c.naive.run_id], data_ok[c.guarded.run_id] = c.naive_verdict.passed, c.guarded_verdict.passed

panel = MetricsPanel(lang=LANG, correct=lambda run: data_ok[run.run_id])
panel.update({"naive": [c.naive for c in results.values()], "guarded": [c.guarded for c in results.values()]})
panel

# %% [markdown]
# ## 练习
#
# 在防护循环的运行里，哪个链路环节的失败占比最大？如果两个环节并列最大，说出其中一个或两个都行。

# %%
my_answer = None  # 一个链路环节：structure、semantic、execution 或 rule_blocked
print(largest_share(my_answer, tax["stage"], lang=LANG))

# %% [markdown]
# ## 动手改：指出真正起作用的防护
#
# 矩阵显示防护循环处理住了这些故障；是十二个防护里的哪一个？在 `my_guards` 里为每个故障填上一个防护名
# （`GuardConfig` 的字段，`agentlab.guards.GUARDS` 列出了全部）。检查会让每个故障在防护循环里跑两遍：所有防护都开、
# 只关掉你写的那个，然后告诉你哪些故障在关掉你的防护后结局毫无变化，也就是说拦住它的不是这个防护。

# %%
from agentlab.workbook.builds_loops import build_which_guard

my_guards = {  # 在这里写你的代码：给每个故障填一个防护名
    "camel_case": None,
    "duplicate_call": None,
    "api_429": None,
    "lost_reply": None,
    "repeat_call": None,
    "ping_pong": None,
}

print(build_which_guard(my_guards, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 本练习册的所有故障在一张矩阵里走过了两种循环。
# - 重发后成功的调用，仍算作遇到过一次瞬时失败。
# - 规则拦截的结果是防护按设计生效，单独统计。
# - 四个核心指标和上面的表格来自同一批运行。
#
# **下一步：** [09 · 接入真实模型](09_real_models.ipynb)。配合阅读：[失败分类](../../docs/zh/failures.md#two-classifications)；全部学习路径：[课程与路径](../../docs/zh/course.md)。
