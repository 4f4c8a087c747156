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
# # 14 · 记账助手全流程
#
# 记账助手有十三个工具，业务规则写在代码里（金额必须大于 0、日期不能在未来、分类必须存在、修改和删除前先确认、同一笔支出在一次对话里只记一次），还有轮次上限（模型最多五轮，超出就给一句平实的回复收尾）。先看它的五个高频坏案例，再跑 55 条用例、按最终账本评判的评测集，最后做上线前的 12 条自查。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 跑通一个完整的助手：十三个工具、写在代码里的规则和轮数上限
# - 按最终账本给 55 个用例评分，并按类别看朴素助手在哪里失败
# - 运行上线前的十二项检查，其中不适用的检查标为 n/a
#
# **先修：** [10 · 证明它真的变好了](10_evaluation.ipynb)、[13 · tool_choice 与动态路由](13_tool_choice_and_routing.ipynb)。
#
# **用时：** 约 30 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

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

LANG = "zh"  # 改成 "en" 就是英文版

# %% [markdown]
# ## 五个高频坏案例
#
# 每一种都注入到“今天坐出租车花了45元，记一笔”这次记账里：JSON 被截断、编造出来的工具名、漏掉必填字段、把“45元”当数字传，以及同一个调用在一条消息里发了两次。

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
# ## 评测集：按账本评判
#
# 55 条用例，分正常流程、边界情况和对抗性用例三类：相对日期、“45元”、“一百二十块”、一句话里两笔支出、同一笔支出说两遍、未经确认的删除、未来日期、不存在的分类、需要裁剪的长对话、接口故障。“记上了，但记错了”算失败（见 [评估指标](../../docs/zh/metrics.md)）。

# %%
cases = load_cases(data_file("expense_cases.jsonl"))  # 从 notebooks/ 和 notebooks/zh/ 都能找到
results = {loop: run_suite(cases, loop=loop, lang=LANG) for loop in ("naive", "guarded")}
table_view(pd.DataFrame([{"loop": loop, **{k: v for k, v in metrics_row(rs).items() if k != "statuses"}}
                         for loop, rs in results.items()]), lang=LANG)

# %%
counts = {loop: pd.Series([r.outcome for r in rs]).value_counts().to_dict() for loop, rs in results.items()}
plot_outcomes(counts, title=t("nb14.said.expense_suite_graded_on", LANG),
              lang=LANG)
plt.show()

# %% [markdown]
# 朴素版记账助手在哪些类别的用例上出错：

# %%
naive = pd.DataFrame([{"category": r.category, "outcome": r.outcome} for r in results["naive"]])
table_view(pd.crosstab(naive["category"], naive["outcome"]), lang=LANG)

# %% [markdown]
# ## 上线前的 12 条自查
#
# 每条自查都会真正跑一遍记账助手（离线，用脚本模型），并报告它看到的东西：发给模型的是什么、埋点记下了什么、账本变了什么。对某个助手不适用的检查项会标“不适用”，绝不会标“通过”（命令行：`python -m agentlab checklist --scenario expense`）。

# %%
table_view(pd.DataFrame([{"#": r.number, "check": r.title, "result": r.status, "evidence": r.evidence}
                         for r in run_checklist(expense.SCENARIO, LANG)]), lang=LANG)

# %% [markdown]
# ## 练习
#
# 按最终账本评判，朴素版记账助手在 55 条用例里做对了几条？填一个数字。

# %%
from agentlab.workbook.builds_systems import naive_correct

my_answer = None  # 一个数字
print(naive_correct(my_answer, results, lang=LANG))

# %% [markdown]
# ## 动手：记账台需要的那条规则
#
# 账本信任调用它的人：给它什么日期就记什么日期。下面把记账台自己的日期规则拿掉，换成你写的。写出 `my_rule(args, today)`：
# `args` 是一笔记账（或一次修改）的参数，已经按 schema 检查过（修改可能不带 `date`）；`today` 是记账台的日期，ISO 格式的
# 文本，`"2026-10-15"`。没有问题时返回 `[]`，否则每个问题返回一条 `rule("date", "...")`，说明原因和下一步该怎么做：
# 模型会读到它。先预测：没有这条规则时，评测集里哪个用例会失败？一条拒绝得太多的规则又会弄坏什么？检查会在防护版记账台上
# 换上你的规则，把评测集的每个用例都跑一遍，并说出仍然失败的用例。

# %%
from agentlab.tools import rule
from agentlab.workbook.builds_systems import desk_rule_holds


def my_rule(args, today):
    """一次记账或修改违反的业务规则：一个 rule("date", "为什么，以及下一步怎么做") 的列表。"""
    return None  # 你的代码：没有问题时返回 []


print(desk_rule_holds(my_rule, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 五个坏用例注入到同一次记账里：残缺的 JSON、编造的工具、缺失的字段、“45元”、一条调用发两次。
# - “记上了，但记错了”在账本上算失败。
# - 每项上线前检查都真正运行助手，报告发给模型的内容、轨迹记录和账本的变化。
#
# **下一步：** [15 · 技能站：通过 HTTP 提供工具](15_skill_site.ipynb)。配合阅读：[指标](../../docs/zh/metrics.md)；全部学习路径：[课程与路径](../../docs/zh/course.md)。
